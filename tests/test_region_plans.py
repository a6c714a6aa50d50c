"""`f.plan` covers region bodies: each body that ran has its own plan (`plan.bodies`), the
summary shows its arena, and `plan.total_bytes` counts the bodies' arenas with the program's."""

import numpy as np

import kiln as kn


def test_scan_body_plan_is_in_the_summary_and_the_total():
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (10, 8, 64), name="x")
        w = kn.Variable(np.full((64, 64), 0.01, np.float32), name="w")

        def body(c, xi):
            h = kn.tanh(c @ w + xi)  # c @ w: an 8x64 float32 value in the body's arena
            return h, (h @ w).sum()

        c, ys = kn.scan(body, kn.zeros((8, 64)), x)
        f = kn.function([x], [c, ys])
    f(np.ones((10, 8, 64), np.float32))
    plan = f.plan
    [(label, body)] = plan.bodies
    assert label == "body of scan 'scan' (cpu)"
    assert body.arena_bytes >= 8 * 64 * 4  # at least one 8x64 float32 intermediate
    assert plan.total_bytes == plan.arena_bytes + body.arena_bytes
    text = plan.summary()
    assert f"body of scan 'scan' (cpu): {len(body.sizes)} buffers, arena" in text, text
    assert text.splitlines()[-1].startswith("with region bodies: "), text


def test_nested_bodies_and_programs_without_regions():
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (4, 3, 16), name="x")

        def outer(c, xs):
            def inner(d, xi):
                e = kn.sort(d * xi, dim=-1).values  # not fusable: a buffer of the inner body
                return e, e.sum()

            d, s = kn.scan(inner, c, xs)
            return d, s.sum()

        c, _ = kn.scan(outer, kn.ones((16,)), x)
        f = kn.function([x], c)
        g = kn.function([x], x * 2.0)
    f(np.ones((4, 3, 16), np.float32))
    g(np.ones((4, 3, 16), np.float32))
    [(_, body)] = f.plan.bodies
    assert len(body.bodies) == 1  # the inner scan's body, under the outer one's
    assert f.plan.total_bytes == f.plan.arena_bytes + body.total_bytes
    assert g.plan.bodies == [] and "with region bodies" not in g.plan.summary()
