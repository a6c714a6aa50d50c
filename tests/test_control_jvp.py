"""Forward mode (kn.jvp) through the region ops (kiln/passes/region_jvp.py): every row of
tests/op_table_control.py against central finite differences, eager (the tape's
double-backward trick over Python loops) = graph, dumps round trip; while_loop against
fori_loop and against a hand-derived tangent; its reverse mode still refused."""

from __future__ import annotations

import numpy as np
import pytest
from op_table_control import CASES

import kiln as kn
from kiln.graph.serialize import from_json, to_json


def _float(a) -> bool:
    return np.asarray(a).dtype.kind == "f"


def _tangents(arrays, rng):
    return [rng.standard_normal(np.shape(a)).astype(a.dtype) if _float(a) else np.zeros_like(a)
            for a in arrays]  # fmt: skip


def _leaves(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _jvp_graph(case, arrays, tangents):
    with kn.Graph().as_default() as g:
        xs = [kn.placeholder(a.dtype, a.shape, f"x{i}") for i, a in enumerate(arrays)]
        ts = [kn.placeholder(t.dtype, t.shape, f"t{i}") for i, t in enumerate(tangents)]
        out, tan = kn.jvp(case.fn, tuple(xs), tuple(ts))
    g.inputs, g.outputs = [*xs, *ts], [*_leaves(out), *_leaves(tan)]
    return g


def _run(g, *arrays):
    return kn.function(g.inputs, g.outputs)(*arrays)


def _reference(case, arrays):
    return [np.asarray(r) for r in _leaves(case.reference(*arrays))]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_jvp_through_control_flow_matches_finite_differences(case):
    """Central differences of the row's Python-loop reference, step 1e-6 in float64."""
    rng = np.random.default_rng(3)
    arrays = case.make_args(rng, np.dtype("float64"))
    tangents = _tangents(arrays, rng)
    g = _jvp_graph(case, arrays, tangents)
    results = _run(g, *arrays, *tangents)
    values, tan = results[: len(results) // 2], results[len(results) // 2 :]
    eps = 1e-6
    plus = _reference(case, [a + eps * t if _float(a) else a for a, t in zip(arrays, tangents)])
    minus = _reference(case, [a - eps * t if _float(a) else a for a, t in zip(arrays, tangents)])
    for v, want in zip(values, _reference(case, arrays)):
        np.testing.assert_allclose(v, want, rtol=1e-12, atol=1e-12)
    for got, p, m in zip(tan, plus, minus):
        if _float(p):
            np.testing.assert_allclose(got, (p - m) / (2 * eps), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_jvp_through_control_flow_eager_equals_graph(case):
    """Eagerly the loops run as Python and kn.jvp uses the tape; the graph has region ops."""
    rng = np.random.default_rng(4)
    arrays = case.make_args(rng, np.dtype("float64"))
    tangents = _tangents(arrays, rng)
    graph_out = _run(_jvp_graph(case, arrays, tangents), *arrays, *tangents)
    ys, ts = kn.jvp(case.fn, tuple(kn.tensor(a) for a in arrays),
                    tuple(kn.tensor(t) for t in tangents))  # fmt: skip
    eager = [*_leaves(ys), *_leaves(ts)]
    for e, c in zip(eager, graph_out):
        np.testing.assert_allclose(c, e.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_jvp_graphs_dumps_round_trip(case):
    rng = np.random.default_rng(5)
    arrays = case.make_args(rng, np.dtype("float64"))
    tangents = _tangents(arrays, rng)
    g = _jvp_graph(case, arrays, tangents)
    kn.verify(g)
    text = to_json(g)
    loaded = from_json(text)
    kn.verify(loaded)
    assert to_json(loaded) == text and str(loaded) == str(g)
    for a, b in zip(_run(loaded, *arrays, *tangents), _run(g, *arrays, *tangents)):
        np.testing.assert_array_equal(a, b)


def _grow(v, w):
    """v <- v * w + sin(v) until its sum passes 20 (w captured): a data-dependent trip count
    (it ends for w >= 1.3 and v > 0; at w = 1.2 v settles near 4.1)."""
    return kn.while_loop(lambda c: kn.sum(c) < 20.0, lambda c: c * w + kn.sin(c), v)


def test_while_loop_jvp_equals_fori_loops_with_the_same_trip_count():
    """The trip count a while_loop takes, given to fori_loop (a scan) as static bounds: the
    tangents must agree bit for bit (the same ops, step by step)."""
    v0, w0 = np.array([0.5, 1.0, 1.5]), np.float64(1.3)
    tv, tw = np.array([1.0, -2.0, 0.5]), np.float64(0.7)
    steps, c = 0, v0
    while c.sum() < 20.0:
        c, steps = c * w0 + np.sin(c), steps + 1
    assert steps > 2
    with kn.Graph().as_default():
        v, w, t, s = (kn.placeholder(kn.float64, np.shape(a), n)
                      for a, n in ((v0, "v"), (w0, "w"), (tv, "t"), (tw, "s")))  # fmt: skip
        y1, d1 = kn.jvp(_grow, (v, w), (t, s))
        fori = lambda v, w: kn.fori_loop(0, steps, lambda i, c: c * w + kn.sin(c), v)  # noqa: E731
        y2, d2 = kn.jvp(fori, (v, w), (t, s))
        dyn = lambda v, w, n: kn.fori_loop(0, n, lambda i, c: c * w + kn.sin(c), v)  # noqa: E731
        n = kn.placeholder(kn.int64, (), "n")
        y3, d3 = kn.jvp(dyn, (v, w, n), (t, s, kn.constant(np.int64(0))))
        f = kn.function([v, w, t, s, n], [y1, d1, y2, d2, y3, d3])
    r = f(v0, w0, tv, tw, np.int64(steps))
    np.testing.assert_array_equal(r[0], c)
    np.testing.assert_array_equal(r[1], r[3])
    np.testing.assert_array_equal(r[5], r[3])  # fori_loop with Symbol bounds is a while_loop
    # by hand: dc' = dc * (w + cos c) + c * dw, step by step
    dc, c = tv, v0
    for _ in range(steps):
        dc, c = dc * (w0 + np.cos(c)) + c * tw, c * w0 + np.sin(c)
    np.testing.assert_allclose(r[1], dc, rtol=1e-13)


def test_while_loop_jvp_of_a_captured_value_and_second_order():
    """d/dw only (v's tangent zero), and jvp of jvp: the second derivative along w, against
    central differences of the first (float64)."""
    v0 = np.array([0.5, 1.0])

    def first(w):
        return kn.jvp(lambda u: _grow(kn.constant(v0), u), (w,), (kn.ones_like(w),))[1]

    with kn.Graph().as_default():
        w = kn.placeholder(kn.float64, (), "w")
        d1 = first(w)
        _, d2 = kn.jvp(first, (w,), (kn.ones_like(w),))
        f = kn.function([w], [d1, d2])
    w0, eps = 1.4, 1e-6
    got1, got2 = f(np.float64(w0))
    up, down = f(np.float64(w0 + eps))[0], f(np.float64(w0 - eps))[0]
    np.testing.assert_allclose(got2, (up - down) / (2 * eps), rtol=1e-6)
    c = v0
    while c.sum() < 20.0:
        c = c * w0 + np.sin(c)
    cp = v0
    while cp.sum() < 20.0:
        cp = cp * (w0 + eps) + np.sin(cp)
    cm = v0
    while cm.sum() < 20.0:
        cm = cm * (w0 - eps) + np.sin(cm)
    np.testing.assert_allclose(got1, (cp - cm) / (2 * eps), rtol=1e-6)


def test_while_loop_jvp_under_compile_equals_eager():
    v0, w0 = kn.tensor([0.5, 1.0]), kn.tensor(1.5, dtype=kn.float64)
    tv, tw = kn.tensor([1.0, 0.0]), kn.tensor(0.5, dtype=kn.float64)
    step = kn.compile(lambda v, w, a, b: kn.jvp(_grow, (v, w), (a, b))[1])
    got = step(v0.double(), w0, tv.double(), tw)
    assert "while_loop" in {n.op.name for n in step.last.graph.nodes}
    _, want = kn.jvp(_grow, (v0.double(), w0), (tv.double(), tw))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)


def test_while_loop_still_refuses_reverse_mode_after_a_jvp():
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float64, (), name="x")
        _, dy = kn.jvp(lambda v: kn.while_loop(lambda c: c < 10.0, lambda c: c * 2.0, v),
                       (x,), (kn.ones_like(x),))  # fmt: skip
        with pytest.raises(kn.GraphError, match="does not work for while_loop.*fori_loop"):
            kn.grad(dy, [x])


@pytest.mark.parametrize("loop", ["while_loop", "scan"])
def test_jvp_returns_the_loops_value_from_the_loop_that_gives_its_tangent(loop):
    """kn.jvp's primal output is read from the new loop (primal and tangent together): the
    compiled program runs one loop, not the original beside it."""
    with kn.Graph().as_default():
        v = kn.placeholder(kn.float64, (2,), "v")
        w = kn.placeholder(kn.float64, (), "w")
        if loop == "while_loop":
            fn = _grow
        else:
            fn = lambda a, b: kn.fori_loop(0, 5, lambda i, c: c * b + kn.sin(c), a)  # noqa: E731
        y, dy = kn.jvp(fn, (v, w), (kn.ones_like(v), kn.zeros_like(w)))
        f = kn.function([v, w], [y, dy])
    assert [n.op.name for n in f.graph.nodes].count(loop) == 1
    with kn.Graph().as_default():
        v2 = kn.placeholder(kn.float64, (2,), "v")
        w2 = kn.placeholder(kn.float64, (), "w")
        plain = kn.function([v2, w2], fn(v2, w2))
    args = (np.array([0.5, 1.0]), np.float64(1.5))
    np.testing.assert_array_equal(f(*args)[0], plain(*args))
