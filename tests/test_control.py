"""Control flow (kn.cond, kn.while_loop, kn.fori_loop, kn.scan): region ops in the IR, their
dumps, the three modes, captures and errors. Values of every row of tests/op_table_control.py
are checked against Python loops by tests/test_ops.py; here: the rest."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from op_table_control import CASES

import kiln as kn
from kiln.debug import checks_level
from kiln.graph.serialize import from_json, to_json
from kiln.passes.program import extract
from kiln.passes.simplify import simplify


def _built(case, dtype="float64"):
    rng = np.random.default_rng(0)
    arrays = case.make_args(rng, np.dtype(dtype))
    with kn.Graph().as_default() as g:
        inputs = [kn.placeholder(a.dtype, a.shape, f"x{i}") for i, a in enumerate(arrays)]
        out = case.fn(*inputs)
        outputs = list(out) if isinstance(out, (tuple, list)) else [out]
    g.inputs, g.outputs = inputs, outputs
    return g, arrays


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_control_dumps_round_trip(case):
    g, arrays = _built(case)
    kn.verify(g)
    text = to_json(g)
    loaded = from_json(text)
    kn.verify(loaded)
    assert to_json(loaded) == text
    assert str(loaded) == str(g)
    assert "cluster_" in kn.dump(g, format="dot")
    want = kn.function(g.inputs, g.outputs)(*arrays)
    got = kn.function(loaded.inputs, loaded.outputs)(*arrays)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_control_eager_equals_compiled(case):
    """kn.compile traces the row into region ops; the eager call runs it as Python."""
    arrays = case.make_args(np.random.default_rng(1), np.dtype("float64"))
    tensors = [kn.tensor(a) for a in arrays]
    eager = case.fn(*tensors)
    compiled_fn = kn.compile(case.fn)
    compiled = compiled_fn(*tensors)
    eager = list(eager) if isinstance(eager, (tuple, list)) else [eager]
    compiled = list(compiled) if isinstance(compiled, (tuple, list)) else [compiled]
    ops = {n.op.name for n in compiled_fn.last.graph.nodes}
    assert case.op in ops
    for e, c in zip(eager, compiled):
        np.testing.assert_allclose(np.asarray(c.numpy() if hasattr(c, "numpy") else c),
                                   np.asarray(e.numpy() if hasattr(e, "numpy") else e),
                                   rtol=1e-12, atol=1e-12)  # fmt: skip


def test_scan_prints_its_body_as_a_nested_block():
    with kn.Graph().as_default() as g:
        xs = kn.placeholder(kn.float32, (4,), name="xs")
        w = kn.placeholder(kn.float32, (), name="w")
        total, _ = kn.scan(lambda c, x: (c * w + x, c), kn.constant(np.float32(0)), xs)
    g.inputs, g.outputs = [xs, w], [total]
    text = kiln_text(g)
    assert text == (
        "{ lambda xs:f32[4] w:f32[] .\n"
        "    t0:tuple = scan[length=4 num_carry=1 num_xs=1 reverse=False] 0.0:f32[] xs w\n"
        "      body={ lambda carry0:f32[] x0:f32[] w:f32[] .\n"
        "          t0:f32[] = mul carry0 w\n"
        "          t1:f32[] = add t0 x0\n"
        "        in (t1 carry0) }\n"
        "    t1:f32[] = get[index=0] t0\n"
        "    t2:f32[4] = get[index=1] t0\n"
        "  in (t1) }\n"
    )


def kiln_text(g):
    from kiln.graph.printer import format_graph

    return format_graph(g, sites=False)


def test_captures_are_explicit_operands_and_variables_train():
    """The body reads a Variable of the outer graph: it becomes an operand of the scan node."""
    with kn.Graph().as_default():
        w = kn.Variable(np.float32(0.5), name="w")
        xs = kn.placeholder(kn.float32, (3,), name="xs")
        total, _ = kn.scan(lambda c, x: (c * w + x, None), kn.constant(np.float32(0)), xs)
        node = total.node.inputs[0].node
        assert node.op.name == "scan" and any(i is w for i in node.inputs)
        region = node.attrs["body"]
        assert [s.name for s in region.inputs] == ["carry0", "x0", "w"]
        f = kn.function([xs], total, updates={w: w + 1.0})
    x = np.array([1, 2, 3], np.float32)
    assert f(x) == pytest.approx((1 * 0.5 + 2) * 0.5 + 3)
    assert f(x) == pytest.approx((1 * 1.5 + 2) * 1.5 + 3)


def test_scan_over_a_symbolic_length():
    with kn.Graph().as_default():
        xs = kn.placeholder(kn.float64, ("n", 2), name="xs")
        total, ys = kn.scan(lambda c, x: (c + x, c), kn.constant(np.zeros(2)), xs)
        assert str(ys.shape[0]) == "n"
        f = kn.function([xs], [total, ys])
    for n in (0, 1, 5):
        x = np.arange(2.0 * n).reshape(n, 2)
        got_total, got_ys = f(x)
        np.testing.assert_array_equal(got_total, x.sum(0))
        np.testing.assert_array_equal(got_ys, np.cumsum(x, 0) - x)


def test_simplify_recurses_into_bodies():
    with kn.Graph().as_default():
        xs = kn.placeholder(kn.float32, (4,), name="xs")
        total, _ = kn.scan(lambda c, x: (kn.log(1.0 + c * 1.0) + x, None),
                           kn.constant(np.float32(0)), xs)  # fmt: skip
    program = simplify(extract([total], [xs], {}))
    kn.verify(program)
    scan = next(n for n in program.nodes if n.op.name == "scan")
    body_ops = [n.op.name for n in scan.attrs["body"].graph.nodes]
    assert "log1p" in body_ops and "mul" not in body_ops


def test_bool_of_a_traced_value_points_to_the_control_flow_functions():
    def f(x):
        if x.sum() > 0:  # data-dependent Python control flow
            return x * 2
        return x

    with pytest.raises(kn.GraphError) as info:
        kn.compile(f)(kn.tensor([1.0, 2.0]))
    message = str(info.value)
    assert "test_control.py:" in message and "kn.cond" in message and "kn.while_loop" in message


def test_cond_branches_must_agree():
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (2,), name="x")
        with pytest.raises(kn.ShapeError, match="different shapes"):
            kn.cond(kn.sum(x) > 0, lambda a: a, lambda a: a.sum(), x)
        with pytest.raises(kn.DTypeError, match="different dtypes"):
            kn.cond(kn.sum(x) > 0, lambda a: a, lambda a: a.double(), x)


def test_carry_must_keep_its_type():
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (2,), name="x")
        with pytest.raises(kn.DTypeError, match="carry value 0 enters the body as f32"):
            kn.fori_loop(0, 3, lambda i, v: v * i, x)  # float32 * int64 index: f32 (fine)
            kn.while_loop(lambda v: v.sum() < 3, lambda v: v.double(), x)
        with pytest.raises(kn.ShapeError, match="carry value 0"):
            kn.scan(lambda c, x_: (c.sum(), None), x, None, length=2)


def test_loop_bodies_write_their_results_into_the_loops_buffers():
    """The body's program of a scan takes the output arrays: its last kernel writes the new
    carry there (no fresh array per step); a y that is an input is copied into its slot."""
    with kn.Graph().as_default():
        xs = kn.placeholder(kn.float32, (5, 3), name="xs")
        h, ys = kn.scan(lambda h, x: (kn.tanh(h * 0.5 + x), h),
                        kn.constant(np.zeros(3, np.float32)), xs)  # fmt: skip
        f = kn.function([xs], [h, ys])
    x = np.random.default_rng(8).standard_normal((5, 3)).astype(np.float32)
    got_h, got_ys = f(x)
    want, rows = np.zeros(3, np.float32), []
    for t in range(5):
        rows.append(want)
        want = np.tanh(want * np.float32(0.5) + x[t])
    np.testing.assert_allclose(got_h, want, rtol=1e-6)
    np.testing.assert_allclose(got_ys, np.stack(rows), rtol=1e-6)
    scan = next(n for n in f.graph.nodes if n.op.name == "scan")
    source = scan.attrs["body"].cache[("cpu", True)].last.source
    assert "out=O[0]" in source and "xp.copyto(O[1]" in source


def test_while_loop_runs_zero_times():
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (2,), name="x")
        y = kn.while_loop(lambda v: kn.sum(v) < 0, lambda v: v + 1.0, x)
        f = kn.function([x], y)
    a = np.array([1, 2], np.float32)
    out = f(a)
    np.testing.assert_array_equal(out, a)
    out[0] = 9  # a fresh array, never the feed
    assert a[0] == 1


# -- gradients ------------------------------------------------------------------------------


def _rnn_graph(unrolled: bool):
    """The loss of a tanh RNN over 6 steps and its gradients, as a scan or unrolled."""
    g = kn.Graph()
    with g.as_default():
        xs = kn.placeholder(kn.float64, (6, 3), name="xs")
        w = kn.placeholder(kn.float64, (3, 3), name="w")
        h0 = kn.placeholder(kn.float64, (3,), name="h0")

        def step(h, x):
            return kn.tanh(h @ w + x), kn.sin(h) * 2.0

        if unrolled:
            h, ys = h0, []
            for t in range(6):
                h, y = step(h, xs[t])
                ys.append(y)
            ys = kn.stack(ys)
        else:
            h, ys = kn.scan(step, h0, xs)
        loss = kn.sum(h * h) + kn.sum(ys * kn.constant(np.linspace(-1, 1, 18).reshape(6, 3)))
        grads = kn.grad(loss, [xs, w, h0])
        f = kn.function([xs, w, h0], [loss, *grads])
    return f


def _rnn_inputs():
    rng = np.random.default_rng(3)
    return rng.standard_normal((6, 3)), 0.5 * rng.standard_normal((3, 3)), rng.standard_normal(3)


def test_scan_gradients_equal_the_unrolled_graphs_bit_for_bit():
    """The same ops in the same order of accumulation: the gradients are the same floats."""
    args = _rnn_inputs()
    for got, want in zip(_rnn_graph(False)(*args), _rnn_graph(True)(*args)):
        np.testing.assert_array_equal(got, want)


def test_scan_gradient_program_runs_the_forward_scan_once():
    """The gradient's forward scan (which also returns the residuals) takes the place of the
    loss's own scan: one forward scan, one backward scan in the program."""
    f = _rnn_graph(False)
    scans = [n for n in f.graph.nodes if n.op.name == "scan"]
    assert [n.attrs["reverse"] for n in scans] == [False, True]


def test_scan_second_order_against_finite_differences():
    rng = np.random.default_rng(5)
    with kn.Graph().as_default():
        xs = kn.placeholder(kn.float64, (4, 3), name="xs")
        w = kn.placeholder(kn.float64, (3, 3), name="w")
        h, _ = kn.scan(lambda h, x: (kn.tanh(h @ w + x), None), kn.constant(np.zeros(3)), xs)
        (gw,) = kn.grad(kn.sum(h * h), [w])
        v = rng.standard_normal((3, 3))
        (hv,) = kn.grad(kn.sum(gw * kn.constant(v)), [w])
        f = kn.function([xs, w], [gw, hv])
    x0, w0 = rng.standard_normal((4, 3)), 0.5 * rng.standard_normal((3, 3))
    eps = 1e-6
    numeric = (f(x0, w0 + eps * v)[0] - f(x0, w0 - eps * v)[0]) / (2 * eps)
    np.testing.assert_allclose(f(x0, w0)[1], numeric, rtol=1e-6, atol=1e-8)


def test_fori_loop_gradient_equals_the_python_loops():
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float64, (3,), name="x")
        w = kn.placeholder(kn.float64, (3,), name="w")
        y = kn.fori_loop(0, 5, lambda i, v: kn.sin(v) * w + i, x)
        grads = kn.grad(kn.sum(y), [x, w])
        v = x
        for i in range(5):
            v = kn.sin(v) * w + i
        want = kn.grad(kn.sum(v), [x, w])
        f = kn.function([x, w], [*grads, *want])
    gx, gw, wx, ww = f(np.array([0.1, 0.2, 0.3]), np.array([1.1, -0.7, 0.4]))
    np.testing.assert_array_equal(gx, wx)
    np.testing.assert_array_equal(gw, ww)


def test_cond_gradient_is_the_taken_branchs():
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float64, (2,), name="x")
        w = kn.placeholder(kn.float64, (), name="w")
        y = kn.cond(kn.sum(x) > 0, lambda a: kn.exp(a) * w, lambda a: a * a, x)
        f = kn.function([x, w], kn.grad(kn.sum(y), [x, w]))
    gx, gw = f(np.array([1.0, 2.0]), np.float64(3.0))
    np.testing.assert_allclose(gx, 3 * np.exp([1.0, 2.0]))
    assert gw == pytest.approx(np.exp(1) + np.exp(2))
    gx, gw = f(np.array([-1.0, -2.0]), np.float64(3.0))
    np.testing.assert_allclose(gx, [-2.0, -4.0])
    assert gw == 0.0


def test_while_loop_has_no_reverse_mode_gradient():
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float64, (), name="x")
        y = kn.while_loop(lambda v: v < 10.0, lambda v: v * 2.0, x)
        with pytest.raises(kn.GraphError, match="does not work for while_loop.*fori_loop"):
            kn.grad(y, [x])


def test_simplify_drops_the_results_nothing_reads():
    """A scan's ys and a cond's results that no get reads leave the bodies (the carry stays)."""
    with kn.Graph().as_default():
        xs = kn.placeholder(kn.float32, (4, 2), name="xs")
        c0 = kn.constant(np.zeros(2, np.float32))
        (h, _), (_, ys) = kn.scan(lambda c, x: ((c[0] + x, c[1] * x), (kn.exp(x), x * 3.0)),
                                  (c0, c0), xs)  # fmt: skip
        _, b = kn.cond(kn.sum(h) > 0, lambda a: (kn.exp(a), a * 2.0), lambda a: (a, -a), h)
        f = kn.function([xs], [ys, b])
    scan = next(n for n in f.graph.nodes if n.op.name == "scan")
    assert len(scan.attrs["body"].outputs) == 3  # two carried values and the one y read
    cond = next(n for n in f.graph.nodes if n.op.name == "cond")
    assert len(cond.attrs["branch_true"].outputs) == 1
    assert "exp" not in {n.op.name for n in cond.attrs["branch_true"].graph.nodes}
    x = np.arange(8, dtype=np.float32).reshape(4, 2)
    got_ys, got_b = f(x)
    np.testing.assert_array_equal(got_ys, x * 3)
    np.testing.assert_array_equal(got_b, x.sum(0) * 2)


def _scan_peak(steps, size=16384):
    """Peak bytes allocated while a compiled forward scan of `steps` steps runs (carry only)."""
    with kn.Graph().as_default():
        h0 = kn.placeholder(kn.float32, (size,), name="h0")
        h, _ = kn.scan(lambda h, _: (kn.tanh(h * 0.5 + 0.25), None), h0, None, length=steps)
        f = kn.function([h0], h)
    x = np.zeros(size, np.float32)
    f(x)  # compiles the outer program and the body's
    tracemalloc.start()
    try:
        out = f(x)
        return tracemalloc.get_traced_memory()[1], out
    finally:
        tracemalloc.stop()


def test_forward_scan_memory_is_flat_in_the_trip_count():
    """Each step writes its carry into one of two buffers (the other holds the carry it reads)
    and the body reuses its own arena: the peak is two carries, whatever the trip count (64 KiB
    carry; 3,000 steps would be 190 MiB if steps were kept)."""
    carry = 16384 * 4
    short, _ = _scan_peak(50)
    long, out = _scan_peak(3000)
    assert long <= short + carry // 4, (short, long)
    if checks_level() == 0:  # KILN_CHECKS runs check copies of in-place kernels
        assert long < 3 * carry, long
    want = np.zeros(16384, np.float32)
    for _ in range(3000):
        want = np.tanh(want * np.float32(0.5) + np.float32(0.25))
    np.testing.assert_allclose(out, want, rtol=1e-6)


def test_a_loaded_scan_counts_its_steps_against_max_work():
    """A file can declare a scan of 2**40 steps over a small body: its reader refuses it."""
    with kn.Graph().as_default() as g:
        h0 = kn.placeholder(kn.float32, (1000,), name="h0")
        h, _ = kn.scan(lambda h, _: (h * 0.5, None), h0, None, length=10)
    g.inputs, g.outputs = [h0], [h]
    text = to_json(g)
    assert from_json(text, max_work=100_000).outputs[0].shape == (1000,)
    hostile = text.replace('"length": 10', '"length": 1099511627776')
    with pytest.raises(kn.GraphFormatError, match="a scan of 1099511627776 steps"):
        from_json(hostile)
    with pytest.raises(kn.GraphFormatError, match="non-negative"):
        from_json(text.replace('"length": 10', '"length": -3'))


def test_verify_checks_bodies():
    with kn.Graph().as_default() as g:
        xs = kn.placeholder(kn.float32, (3,), name="xs")
        kn.scan(lambda c, x: (c + x, None), kn.constant(np.float32(0)), xs)
        outside = kn.sum(xs)
    kn.verify(g)
    body = next(n for n in g.nodes if n.op.name == "scan").attrs["body"].graph
    body.outputs = [outside]  # a value of the outer graph, not of the body
    with pytest.raises(kn.GraphError, match="body.*is not a value of the body"):
        kn.verify(g)


def test_loop_invariant_values_are_computed_once_before_the_scan():
    """`w.T * 2` reads only a capture: simplify computes it before the loop and passes it in;
    the body keeps only what varies (and drops the capture it no longer reads)."""
    with kn.Graph().as_default():
        xs = kn.placeholder(kn.float64, (4, 3), name="xs")
        w = kn.placeholder(kn.float64, (3, 3), name="w")
        h, _ = kn.scan(lambda h, x: (kn.tanh(h @ (kn.t(w) * 2.0) + x), None),
                       kn.constant(np.zeros(3)), xs)  # fmt: skip
        f = kn.function([xs, w], h)
    scan = next(n for n in f.graph.nodes if n.op.name == "scan")
    body_ops = [n.op.name for n in scan.attrs["body"].graph.nodes]
    assert "transpose" not in body_ops and "mul" not in body_ops
    assert not any(i.name == "w" for i in scan.inputs)  # only the hoisted value enters
    assert {"transpose", "mul"} <= {n.op.name for n in f.graph.nodes}
    rng = np.random.default_rng(4)
    x, w0 = rng.standard_normal((4, 3)), rng.standard_normal((3, 3))
    want = np.zeros(3)
    for t in range(4):
        want = np.tanh(want @ (w0.T * 2) + x[t])
    np.testing.assert_allclose(f(x, w0), want, rtol=1e-12)


def test_cond_gradients_equal_the_taken_branchs_graph_bit_for_bit():
    def true_fn(a, b):
        return kn.tanh(a @ b) * a.sum(), kn.exp(b)

    def false_fn(a, b):
        return a @ b, b * 3.0

    with kn.Graph().as_default():
        a = kn.placeholder(kn.float64, (2, 3), name="a")
        b = kn.placeholder(kn.float64, (3, 3), name="b")
        u, v = kn.cond(kn.sum(a) > 0, true_fn, false_fn, a, b)
        via_cond = kn.grad(kn.sum(u * u) + kn.sum(v), [a, b])
        outputs = {}
        for name, fn in (("true", true_fn), ("false", false_fn)):
            u2, v2 = fn(a, b)
            outputs[name] = kn.grad(kn.sum(u2 * u2) + kn.sum(v2), [a, b])
        f = kn.function([a, b], [*via_cond, *outputs["true"], *outputs["false"]])
    rng = np.random.default_rng(6)
    b0 = rng.standard_normal((3, 3))
    for a0, taken in ((np.abs(rng.standard_normal((2, 3))), slice(2, 4)),
                      (-np.abs(rng.standard_normal((2, 3))), slice(4, 6))):  # fmt: skip
        got = f(a0, b0)
        for g, want in zip(got[:2], got[taken]):
            np.testing.assert_array_equal(g, want)


def test_cond_and_while_loop_print_each_body_as_a_block():
    with kn.Graph().as_default() as g:
        x = kn.placeholder(kn.float32, (2,), name="x")
        y = kn.cond(kn.sum(x) > 0, lambda a: a * 2.0, lambda a: -a, x)
        z = kn.while_loop(lambda v: kn.sum(v) < 10.0, lambda v: v * 2.0, y)
    g.inputs, g.outputs = [x], [z]
    assert kiln_text(g) == (
        "{ lambda x:f32[2] .\n"
        "    t0:f32[] = reduce_sum[axes=(0,) keepdims=False] x\n"
        "    t1:bool[] = greater t0 0.0:f32[]\n"
        "    t2:tuple = cond[num_operands=1] t1 x\n"
        "      branch_false={ lambda operand0:f32[2] .\n"
        "          t0:f32[2] = neg operand0\n"
        "        in (t0) }\n"
        "      branch_true={ lambda operand0:f32[2] .\n"
        "          t0:f32[2] = mul operand0 2.0:f32[]\n"
        "        in (t0) }\n"
        "    t3:f32[2] = get[index=0] t2\n"
        "    t4:tuple = while_loop[num_carry=1] t3\n"
        "      body={ lambda carry0:f32[2] .\n"
        "          t0:f32[2] = mul carry0 2.0:f32[]\n"
        "        in (t0) }\n"
        "      cond={ lambda carry0:f32[2] .\n"
        "          t0:f32[] = reduce_sum[axes=(0,) keepdims=False] carry0\n"
        "          t1:bool[] = less t0 10.0:f32[]\n"
        "        in (t1) }\n"
        "    t5:f32[2] = get[index=0] t4\n"
        "  in (t5) }\n"
    )
