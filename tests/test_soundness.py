"""Regression tests of planned programs that once gave a silently different answer than the
unplanned program (each names the bug it pins). Expected values come from NumPy running the
same arithmetic, or from the unplanned program (`plan=False`)."""

import numpy as np
import pytest

import kiln as kn
import kiln.ops.fused as fused_kernels
from kiln.ops.core import apply
from kiln.passes import fuse_elementwise, simplify

FUSE_ALL = [("simplify", simplify), ("fuse_elementwise", fuse_elementwise)]  # the GPU's options


def _rng():
    return np.random.default_rng(0)


def test_fetched_view_of_updated_variable_shows_old_value():
    # Bug: the fetched w.T was copied at the end, after w was updated in place.
    w0 = _rng().standard_normal((3, 3)).astype(np.float32)
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (3, 3), name="x")
        w = kn.Variable(w0.copy(), name="w")
        f = kn.function([x], [kn.permute(w, (1, 0)), kn.sum(w * x)], updates={w: w - 100.0 * x})
        wt, s = f(np.ones((3, 3), np.float32))
    np.testing.assert_array_equal(wt, w0.T)
    np.testing.assert_allclose(s, w0.sum(), rtol=1e-6)
    np.testing.assert_array_equal(w.numpy(), w0 - np.float32(100.0))


def test_update_reading_another_updated_variable_sees_old_value():
    # Bug: `prev: cur` committed cur's storage after cur was updated in place.
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (3,), name="x")
        prev = kn.Variable(np.zeros(3, np.float32), name="prev")
        cur = kn.Variable(np.ones(3, np.float32), name="cur")
        f = kn.function([x], [], updates={prev: cur, cur: cur * 2.0 + x})
        f(np.ones(3, np.float32))
        np.testing.assert_array_equal(prev.numpy(), np.ones(3))
        np.testing.assert_array_equal(cur.numpy(), np.full(3, 3.0))
        f(np.ones(3, np.float32))
        np.testing.assert_array_equal(prev.numpy(), np.full(3, 3.0))
        np.testing.assert_array_equal(cur.numpy(), np.full(3, 7.0))


def test_updates_reading_each_other_compile_and_read_old_values():
    # Bug: two in-place updates that read each other's variables formed a cycle of ordering
    # edges (compiling failed or looped); creation order then ignored the edges.
    with kn.Graph().as_default():
        a = kn.Variable(np.full(4, 1.0, np.float32), name="a")
        b = kn.Variable(np.full(4, 2.0, np.float32), name="b")
        f = kn.function([], [], updates={a: b * 2.0, b: a * 3.0})
        f()
    np.testing.assert_array_equal(a.numpy(), np.full(4, 4.0))
    np.testing.assert_array_equal(b.numpy(), np.full(4, 3.0))


def test_fused_kernel_never_writes_into_a_buffer_its_other_input_views():
    # Bug: the cache-blocked fused kernel wrote in place into x while reading x.T.
    rng = _rng()
    a = (rng.standard_normal((1024, 1024)) * 0.05).astype(np.float32)
    b = (rng.standard_normal((1024, 1024)) * 0.05).astype(np.float32)
    with kn.Graph().as_default():
        pa = kn.placeholder(kn.float32, (1024, 1024), name="a")
        pb = kn.placeholder(kn.float32, (1024, 1024), name="b")
        x = pa @ pb
        y = kn.sum(kn.tanh(x * 0.5 + kn.permute(x, (1, 0)) * 0.25) + 1.0)
        got = kn.function([pa, pb], y)(a, b)
        unplanned = kn.function([pa, pb], y, plan=False)(a, b)
    xv = a @ b
    np.testing.assert_allclose(got, np.sum(np.tanh(xv * 0.5 + xv.T * 0.25) + 1.0), rtol=1e-4)
    np.testing.assert_allclose(got, unplanned, rtol=1e-5)


def test_symmetric_update_stays_symmetric():
    # Bug: `w: tanh((w + w.T) * 0.5) * 0.9 + x` was written into w while w.T was read.
    rng = _rng()
    w0 = rng.standard_normal((1024, 1024)).astype(np.float32)
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (1024, 1024), name="x")
        w = kn.Variable(w0.copy(), name="w")
        f = kn.function([x], [], updates={w: kn.tanh((w + w.T) * 0.5) * 0.9 + x})
        f(np.zeros((1024, 1024), np.float32))
    got = w.numpy()
    np.testing.assert_array_equal(got, got.T)
    np.testing.assert_allclose(got, np.tanh((w0 + w0.T) * 0.5) * 0.9, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("passes", [None, FUSE_ALL], ids=["default", "fuse-all"])
def test_run_time_dim_constraint_survives_fusion(passes):
    # Bug: constraints were matched by node name, and fusion renamed the group.
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, ("n",), name="x")
        y = kn.placeholder(kn.float32, ("m",), name="y")
        f = kn.function([x, y], kn.tanh(x * y) * 2.0, passes=passes)
        with pytest.raises(kn.ShapeError, match=r"n=1 but m=4.*mul"):
            f(np.ones(1, np.float32), np.ones(4, np.float32))
        assert f(np.ones(4, np.float32), np.ones(4, np.float32)).shape == (4,)


def test_fetched_index_of_updated_variable_is_a_copy():
    # A fetched basic index of a variable is a view of its storage: copied before the update.
    w0 = np.arange(6, dtype=np.float32).reshape(2, 3)
    with kn.Graph().as_default():
        w = kn.Variable(w0.copy(), name="w")
        f = kn.function([], [w[0], kn.reshape(kn.reshape(w, (3, 2)), (6,))], updates={w: w + 1.0})
        row, flat = f()
    np.testing.assert_array_equal(row, w0[0])
    np.testing.assert_array_equal(flat, w0.reshape(6))
    np.testing.assert_array_equal(w.numpy(), w0 + 1)


def test_view_reader_of_variable_runs_before_its_update():
    # Bug (random programs): `v1: sin(v1)` was written before a row sum of a reshape
    # round trip of v1 read it.
    v0 = _rng().standard_normal((4, 6)).astype(np.float32)
    with kn.Graph().as_default():
        v1 = kn.Variable(v0.copy(), name="v1")
        rows = kn.sum(kn.reshape(kn.reshape(v1, (6, 4)), (4, 6)), axis=1)
        f = kn.function([], rows, updates={v1: kn.sin(v1)})
        got = f()
    np.testing.assert_allclose(got, v0.sum(axis=1), rtol=1e-6)
    np.testing.assert_allclose(v1.numpy(), np.sin(v0), rtol=1e-6)


def test_failed_kernel_after_in_place_writes_changes_no_variable():
    # Bug: an integer power with a negative exponent failed after w was updated in place. (That
    # power now gives PyTorch's 0 or ±1: an index out of range is the kernel that fails here.)
    with kn.Graph().as_default():
        k = kn.placeholder(kn.int64, (3,), name="k")
        w = kn.Variable(np.ones(3, np.float32), name="w")
        n = kn.Variable(np.full(3, 2, np.int64), name="n")
        w2 = w * 2.0
        base = n + kn.cast(kn.sum(w2), kn.int64) * 0  # the gather runs after w2 is made
        f = kn.function([k], kn.sum(kn.index_select(base, 0, k)), updates={w: w2, n: n + 1})
        assert f(np.array([0, 1, 2])) == 2 + 2 + 2
        with pytest.raises(kn.IndexOutOfRangeError, match="gather"):
            f(np.array([0, 5, 1]))
    np.testing.assert_array_equal(w.numpy(), np.full(3, 2.0))
    np.testing.assert_array_equal(n.numpy(), np.full(3, 3))


def test_seterr_raise_changes_neither_results_nor_variables():
    # Bug: Adam under np.seterr(over="raise") left 6 of 8 variables changed; kernels now run
    # with floating-point errors ignored, as PyTorch's do (exp(100) in float32 is inf there).
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (3,), name="x")
        w = kn.Variable(np.ones(3, np.float32), name="w")
        v = kn.Variable(np.ones(3, np.float32), name="v")
        f = kn.function([x], kn.exp(x), updates={w: w * kn.exp(x), v: v + 1.0})
        old = np.seterr(all="raise")
        try:
            y = f(np.array([0.0, 100.0, 1.0], np.float32))
        finally:
            np.seterr(**old)
    assert np.isinf(y[1]) and np.isinf(w.numpy()[1])
    np.testing.assert_array_equal(v.numpy(), np.full(3, 2.0))


@pytest.mark.parametrize("how", ["function", "session", "KILN_CHECKS=2"])
def test_check_numerics_names_first_bad_node_and_changes_nothing(how, monkeypatch):
    # Bug: check_numerics=True and KILN_CHECKS=2 were documented but did not exist.
    if how == "KILN_CHECKS=2":
        monkeypatch.setenv("KILN_CHECKS", "2")
    with kn.Graph().as_default() as g:
        x = kn.placeholder(kn.float32, (3,), name="x")
        w = kn.Variable(np.ones(3, np.float32), name="w")
        h = kn.log(x)  # the first node that makes a NaN (log of a negative number)
        loss = kn.sum(h * w)
        step = apply("assign", w, w - 0.1 * h)  # what optimizers' minimize() builds
        if how == "session":
            run = lambda v: kn.Session(graph=g, check_numerics=True).run([loss, step], {x: v})
        else:
            f = kn.function([x], loss, updates={w: w - 0.1 * h}, check_numerics=how == "function")
            run = f
        run(np.array([1.0, 2.0, 3.0], np.float32))
        before = w.numpy().copy()
        with pytest.raises(kn.NumericsError, match=r"1 NaN.*'log'.*test_soundness.py"):
            run(np.array([1.0, -2.0, 3.0], np.float32))
    np.testing.assert_array_equal(w.numpy(), before)


def test_checks_level_1_reruns_in_place_kernels_out_of_place(monkeypatch):
    # KILN_CHECKS=1 runs each kernel that writes into an input's storage once more into fresh
    # memory and compares; a kernel that breaks under overlap is named. Here the planner is
    # made to share storage it must not (a view treated as fresh), and the check catches it.
    monkeypatch.setenv("KILN_CHECKS", "1")
    w0 = np.arange(9, dtype=np.float64).reshape(3, 3)
    with kn.Graph().as_default():
        w = kn.Variable(w0.copy(), name="w")
        f = kn.function([], [], updates={w: w * 2.0 + 1.0})
        f()  # a correct in-place update passes the check
    np.testing.assert_array_equal(w.numpy(), w0 * 2 + 1)
    from kiln.runtime import codegen

    monkeypatch.setattr(codegen.Aliases, "may_write_into", lambda *a: True)  # a planner bug
    monkeypatch.setattr(fused_kernels, "UNBLOCKED_BYTES", 0)  # blocks of one row: the fused
    monkeypatch.setattr(fused_kernels, "BLOCK_BYTES", 24)  # kernel breaks under overlap
    with kn.Graph().as_default():
        w = kn.Variable(w0.copy(), name="w")
        f = kn.function([], [], updates={w: kn.tanh(w + w.T) * 0.5}, passes=FUSE_ALL)
        with pytest.raises(kn.GraphError, match="in place gave other values.*'mul'"):
            f()


def test_program_graph_from_a_dump_refuses_grad():
    # Bug: simplify drops stop_gradient on program graphs; a graph loaded from a Function's
    # dump then gave d/dx sum(x * stop_gradient(x)) = 2x instead of x.
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float64, (3,), name="x")
        y = kn.sum(x * kn.stop_gradient(x))
        (dx,) = kn.grad(y, [x])
        xv = np.array([1.0, 2.0, 3.0])
        np.testing.assert_array_equal(kn.function([x], dx)(xv), xv)  # PyTorch: x.detach()
        f = kn.function([x], y)
    text = kn.dump(f, "json")
    g = kn.load_graph(text)
    assert g.optimized[0] == "simplify"
    assert kn.dump(g, "json") == text  # the mark survives a round trip
    with pytest.raises(kn.GraphError, match="cannot differentiate a program graph.*simplify"):
        kn.grad(g.outputs[0], g.inputs)
    np.testing.assert_array_equal(kn.function(g.inputs, g.outputs)(xv)[0], 14.0)  # still runs


def test_one_value_updating_two_variables_updates_both_with_separate_storage():
    # Found by tests/test_differential.py: the second update of a shared value was dropped
    # when the first ran in place; committed arrays must not alias each other or an output.
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (3,), name="x")
        a = kn.Variable(np.zeros(3, np.float32), name="a")
        b = kn.Variable(np.zeros(3, np.float32), name="b")
        c = kn.Variable(np.zeros(3, np.float32), name="c")
        y = kn.tanh(x) + a
        f = kn.function([x], y, updates={a: a + x, b: a + x, c: y})
        out = f(np.ones(3, np.float32))
        np.testing.assert_array_equal(a.numpy(), np.ones(3))
        np.testing.assert_array_equal(b.numpy(), np.ones(3))
        out[...] = 42.0  # the caller owns its output: no Variable changes with it
        np.testing.assert_allclose(c.numpy(), np.tanh(1.0), rtol=1e-6)
        f(np.ones(3, np.float32))
    np.testing.assert_array_equal(a.numpy(), np.full(3, 2.0))
    np.testing.assert_array_equal(b.numpy(), np.full(3, 2.0))
    np.testing.assert_allclose(c.numpy(), np.tanh(1.0) + 1.0, rtol=1e-6)


def test_eager_ops_ignore_seterr_raise_as_pytorch():
    # np.seterr(all="raise") made eager kernels raise FloatingPointError; PyTorch gives inf
    # and nan (torch.tensor([100.]).exp() is inf; 1/0 is inf; 0/0 is nan).
    old = np.seterr(all="raise")
    try:
        x = kn.tensor(np.array([100.0, 0.0], np.float32))
        np.testing.assert_array_equal(kn.exp(x).numpy(), [np.inf, 1.0])
        np.testing.assert_array_equal((kn.tensor([1.0, 0.0]) / 0.0).numpy(), [np.inf, np.nan])
        y = kn.tensor(np.array([100.0], np.float32), requires_grad=True)
        kn.exp(y).sum().backward()
        assert np.isinf(y.grad.numpy()[0])
    finally:
        np.seterr(**old)
