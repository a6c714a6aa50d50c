"""kiln's own float32 kernels (kiln/ops/vecmath.py): their error in ulps on sampled and edge
inputs, against float64 references rounded once to float32 (NumPy's float64 functions) and
against NumPy's float32 kernels (within `ULPS`, measured over every float32 input by
bench/vecmath_ulps.py); IEEE special values as NumPy gives them; and the bit-identity rule:
a program gives the same bits fused (small loops, blocks, segments) and unfused, in each
mode (`KILN_EXACT`): NumPy's in exact mode, kiln's kernels' outside it."""

import numpy as np
import pytest

import kiln as kn
from kiln.ops import fused as fused_ops
from kiln.ops import vecmath
from kiln.ops.elementwise import _sigmoid
from kiln.passes.fuse import fuse_elementwise
from kiln.passes.program import extract

pytest.importorskip("numba")

F32 = np.float32
TINY, SUB_MAX = np.float32(1e-45), np.nextafter(np.finfo(F32).tiny, F32(0))
EDGES = np.array(
    [0.0, -0.0, TINY, -TINY, SUB_MAX, -SUB_MAX, np.finfo(F32).tiny, -np.finfo(F32).tiny,
     np.inf, -np.inf, np.nan, np.finfo(F32).max, -np.finfo(F32).max, 1.0, -1.0, 0.5,
     88.72283, 88.72284, -87.33654, -87.33655, -103.27893, -103.97208, -103.9721, -104.0,
     0.625, np.nextafter(F32(0.625), F32(0)), 2.0**-12, -(2.0**-12), 9.0, 9.1, 10.0, -10.0,
     20.0, 2.0**-126, 110.0, -110.0, 1e30, -1e30],
    F32,
)  # fmt: skip


def reference(name, x):
    """The float64 function rounded once to float32 (NumPy's float64 kernels)."""
    with np.errstate(all="ignore"):
        d = x.astype(np.float64)
        r = {"exp": np.exp, "log": np.log, "tanh": np.tanh,
             "sigmoid": lambda v: 1.0 / (1.0 + np.exp(-v))}[name](d)  # fmt: skip
        return r.astype(F32)


def numpy_f32(name, x):
    """What exact mode runs: NumPy's float32 kernel (sigmoid: kiln's NumPy kernel)."""
    with np.errstate(all="ignore"):
        if name == "sigmoid":
            return _sigmoid(np, x)
        return getattr(np, name)(x)


def ulps(a, b):
    """|a - b| in float32 ulps (-0.0 and 0.0 one apart; two NaNs agree, NaN vs a number: 2**32)."""
    ia, ib = (v.view(np.int32).astype(np.int64) for v in (a, b))
    ia = np.where(ia < 0, -(2**31) - ia, ia)
    ib = np.where(ib < 0, -(2**31) - ib, ib)
    d = np.abs(ia - ib)
    d = np.where(np.isnan(a) != np.isnan(b), 2**32, d)
    return np.where(np.isnan(a) & np.isnan(b), 0, d)


def samples():
    """2**18 float32 bit patterns drawn uniformly (every exponent, both signs, NaNs), with
    2**16 more around 0 to 20 in magnitude, and the edges."""
    rng = np.random.default_rng(0)
    bits = rng.integers(0, 2**32, 2**18, dtype=np.uint64).astype(np.uint32).view(F32)
    near = rng.uniform(-20, 20, 2**16).astype(F32)
    return np.concatenate([bits, near, EDGES])


@pytest.mark.parametrize("name", sorted(vecmath.ULPS))
def test_ulps_against_reference_and_numpy(name):
    x = samples()
    got = vecmath.run(name, x)
    to_ref, to_numpy = vecmath.ULPS[name]
    assert ulps(got, reference(name, x)).max() <= to_ref
    assert ulps(got, numpy_f32(name, x)).max() <= to_numpy
    assert to_ref <= 1  # the documented bound: within 1 ulp of the correctly rounded value


@pytest.mark.parametrize("name", sorted(vecmath.ULPS))
def test_edges_as_numpy(name):
    """0, -0, subnormals, infinities, NaN and the overflow and underflow thresholds: NaN where
    NumPy gives NaN, the same infinities and signed zeros, and within 1 ulp elsewhere."""
    got, want = vecmath.run(name, EDGES), reference(name, EDGES)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    exact = np.isinf(want) | (want == 0)  # (a NaN's sign bit is not specified)
    np.testing.assert_array_equal(got[exact], want[exact])
    np.testing.assert_array_equal(np.signbit(got[exact]), np.signbit(want[exact]))
    assert ulps(got, want).max() <= 1


def test_run_writes_out_and_keeps_shape():
    x = np.linspace(-3, 3, 24, dtype=F32).reshape(2, 3, 4)
    out = np.empty((4, 3, 2), F32).transpose()  # not contiguous
    assert vecmath.run("tanh", x, out) is out
    np.testing.assert_array_equal(out, vecmath.run("tanh", x))
    assert vecmath.run("exp", x[:, ::2]).shape == (2, 2, 4)
    assert vecmath.covers("tanh", "float32") and not vecmath.covers("tanh", "float64")
    scalar = vecmath.run("tanh", np.array(0.5, F32))  # 0-d stays 0-d
    assert scalar.shape == () and scalar == reference("tanh", np.array([0.5], F32))[0]


def test_a_scalar_program(monkeypatch):
    """A 0-d value through the unfused op's kernel (prepare) keeps its shape."""
    monkeypatch.setenv("KILN_EXACT", "0")
    with kn.Graph().as_default():
        p = kn.placeholder(kn.float32, (), name="p")
        f = kn.function([p], kn.tanh(p) * 2.0, plan=False, passes=[])
    got = f(np.array(0.5, F32))
    assert got.shape == ()
    assert got == vecmath.run("tanh", np.array(0.5, F32)) * F32(2.0)


def program(m, x, a):
    """Cheap ops around each of kiln's kernels (log of a positive value)."""
    t = m.tanh(x * a + 0.25)
    e = m.exp(t * 1.5 - a)
    s = kn.sigmoid(e - x) if m is kn else _sigmoid(np, e - x)
    return m.log(s * e + 2.0) - t  # (+ 1.0 would be simplified to log1p)


class _Own:
    """program's ops one by one, through kiln's kernels (outside exact mode)."""

    @staticmethod
    def tanh(v):
        return vecmath.run("tanh", v)

    @staticmethod
    def exp(v):
        return vecmath.run("exp", v)

    @staticmethod
    def log(v):
        return vecmath.run("log", v)


def _own_program(x, a):
    t = _Own.tanh(x * a + F32(0.25))
    e = _Own.exp(t * F32(1.5) - a)
    s = vecmath.run("sigmoid", e - x)
    return _Own.log(s * e + F32(2.0)) - t


@pytest.mark.parametrize("exact", [True, False])
@pytest.mark.parametrize("shape", [(16,), (40, 64), (600, 512)])
def test_fused_and_unfused_give_the_same_bits(monkeypatch, exact, shape):
    """Small (numba loop), middle (one block) and large (blocked segments) outputs: fused,
    fused with tiny blocks, unplanned and unfused give the bits of the ops run one by one:
    NumPy's in exact mode, kiln's kernels' outside it."""
    monkeypatch.setenv("KILN_EXACT", "1" if exact else "0")
    rng = np.random.default_rng(1)
    x, a = (rng.uniform(-2, 2, shape).astype(F32) for _ in range(2))
    with np.errstate(all="ignore"):
        want = program(np, x, a) if exact else _own_program(x, a)
    with kn.Graph().as_default():
        xs, as_ = (kn.placeholder(kn.float32, shape, name=n) for n in "xa")
        y = program(kn, xs, as_)
        fused_graph = fuse_elementwise(extract([y], [xs, as_], {}))
        assert [n.op.name for n in fused_graph.nodes].count("fused") == 1
        fused = kn.function(fused_graph.inputs, fused_graph.outputs[0])
        unplanned = kn.function([xs, as_], y, plan=False, passes=[])
        planned = kn.function([xs, as_], y)
    for _ in range(3):  # numba loops are built on the second call
        np.testing.assert_array_equal(fused(x, a), want)
    np.testing.assert_array_equal(unplanned(x, a), want)
    np.testing.assert_array_equal(planned(x, a), want)
    monkeypatch.setattr(fused_ops, "UNBLOCKED_BYTES", 0)
    monkeypatch.setattr(fused_ops, "BLOCK_BYTES", 4 * 64)
    monkeypatch.setattr(fused_ops, "SMALL_BYTES", 0)
    with kn.Graph().as_default():
        xs, as_ = (kn.placeholder(kn.float32, shape, name=n) for n in "xa")
        graph = fuse_elementwise(extract([program(kn, xs, as_)], [xs, as_], {}))
        tiny = kn.function(graph.inputs, graph.outputs[0])
    if shape != (600, 512):  # tiny blocks of the large one: slow, and covered by the rest
        np.testing.assert_array_equal(tiny(x, a), want)


def test_exact_mode_never_runs_them(monkeypatch):
    monkeypatch.setenv("KILN_EXACT", "1")
    prog = fused_ops.compiled((("tanh", (("in", 0),), ()),), (0,))
    sig = prog.signature((np.dtype(F32),))
    assert prog.limit(sig, True) == prog.numba_limit
    assert prog.limit(sig, False) > prog.numba_limit  # vectorized: loops pay for longer
    assert not vecmath.active("tanh", "float32", exact=True)
    assert vecmath.active("tanh", "float32", exact=False)


@pytest.mark.parametrize("exact", [True, False])
def test_constant_folding_runs_the_same_kernel(monkeypatch, exact):
    """simplify folds tanh of a constant with the kernel the program would run (prepare):
    planned (folded) and unplanned agree bit for bit in each mode."""
    monkeypatch.setenv("KILN_EXACT", "1" if exact else "0")
    c = np.linspace(-3, 3, 64, dtype=F32)
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (64,), name="x")
        y = x + kn.tanh(kn.constant(c))
        planned = kn.function([x], y)
        unplanned = kn.function([x], y, plan=False, passes=[])
    assert "tanh" not in [n.op.name for n in planned.graph.nodes]  # folded
    z = np.zeros(64, F32)
    want = np.tanh(c) if exact else vecmath.run("tanh", c)
    np.testing.assert_array_equal(planned(z), want)
    np.testing.assert_array_equal(unplanned(z), want)
    assert exact or not np.array_equal(want, np.tanh(c))  # the modes differ here
