"""kiln's own float32 exp and tanh (kiln/ops/vecmath.py): their error in ulps on sampled and
edge inputs, against float64 references rounded once to float32 (NumPy's float64 functions)
and against NumPy's float32 kernels (within `ULPS`, measured over every float32 input by
bench/vecmath_ulps.py); IEEE special values as NumPy gives them; the bit-identity rule: a
program gives the same bits fused (small loops, blocks, segments) and unfused, in each mode
(`KILN_EXACT`): NumPy's in exact mode, kiln's kernels' in the default mode; and eager and
compiled results agreeing within `kn.testing`'s default tolerances in the default mode."""

import platform
import re

import numpy as np
import pytest

import kiln as kn
from kiln.ops import fused as fused_ops
from kiln.ops import vecmath
from kiln.ops.elementwise import _sigmoid
from kiln.ops.fused_codegen import loop_source
from kiln.passes.fuse import fuse_elementwise
from kiln.passes.program import extract

numba = pytest.importorskip("numba")

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
        return getattr(np, name)(d).astype(F32)


def numpy_f32(name, x):
    """What exact mode runs: NumPy's float32 kernel."""
    with np.errstate(all="ignore"):
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
    """2**18 float32 bit patterns drawn uniformly (every exponent, both signs, NaNs), 2**17
    more within 20 of 0 (where tanh and exp are neither 0, 1 nor inf), every float32 around
    tanh's switch of formula (0.55) and exp's overflow and underflow thresholds, and the
    edges."""
    rng = np.random.default_rng(0)
    bits = rng.integers(0, 2**32, 2**18, dtype=np.uint64).astype(np.uint32).view(F32)
    near = rng.uniform(-20, 20, 2**17).astype(F32)
    around = [np.arange(-2048, 2048, dtype=np.int32) + np.array(c, F32).view(np.int32)
              for c in (0.55, -0.55, 88.72283, -87.33654, -103.97208)]  # fmt: skip
    return np.concatenate([bits, near, np.concatenate(around).view(F32), EDGES])


@pytest.mark.parametrize("name", sorted(vecmath.ULPS))
def test_ulps_against_reference_and_numpy(name):
    x = samples()
    got = vecmath.run(name, x)
    assert ulps(got, reference(name, x)).max() <= vecmath.ULP_BOUND == 1
    assert ulps(got, numpy_f32(name, x)).max() <= vecmath.NUMPY_ULP_BOUND == 2
    assert vecmath.ULPS[name][0] <= vecmath.ULP_BOUND


def test_exps_three_inputs():
    """The three float32 inputs where NumPy's AVX-512 exp is 3 ulp below the correctly rounded
    value (bench/vecmath_ulps.py over every input; mpmath agrees): kiln's is the correctly
    rounded one (the float64 exp rounded once), so 3 from NumPy's there (the exception to
    `NUMPY_ULP_BOUND` that `ULPS` and docs/debugging.md record), at most that elsewhere."""
    x = np.array([25.994385, -38.466045, -62.029507], F32)
    got = vecmath.run("exp", x)
    np.testing.assert_array_equal(got, reference("exp", x))
    assert ulps(got, numpy_f32("exp", x)).max() <= vecmath.ULPS["exp"][1] == 3


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
    """Cheap ops around each of kiln's kernels, and log and sigmoid, which run NumPy's kernels
    in both modes (log of a positive value)."""
    t = m.tanh(x * a + 0.25)
    e = m.exp(t * 1.5 - a)
    s = kn.sigmoid(e - x) if m is kn else _sigmoid(np, e - x)
    return m.log(s * e + 2.0) - t  # (+ 1.0 would be simplified to log1p)


def _own_program(x, a):
    """program's ops one by one, through kiln's kernels where the default mode runs them."""
    t = vecmath.run("tanh", x * a + F32(0.25))
    e = vecmath.run("exp", t * F32(1.5) - a)
    s = _sigmoid(np, e - x)
    return np.log(s * e + F32(2.0)) - t


@pytest.mark.parametrize("exact", [True, False])
@pytest.mark.parametrize("shape", [(16,), (40, 64), (600, 512)])
def test_fused_and_unfused_give_the_same_bits(monkeypatch, exact, shape):
    """Small (numba loop), middle (one block) and large (blocked segments) outputs: fused,
    fused with tiny blocks, unplanned and unfused give the bits of the ops run one by one:
    NumPy's in exact mode, kiln's kernels' in the default one."""
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


def test_the_default_mode_runs_them(monkeypatch):
    """KILN_EXACT unset (or empty, or 0): kiln's kernels; 1: NumPy's bits."""
    from kiln.debug import exact_mode

    for value, exact in ((None, False), ("", False), ("0", False), ("1", True)):
        if value is None:
            monkeypatch.delenv("KILN_EXACT", raising=False)
        else:
            monkeypatch.setenv("KILN_EXACT", value)
        assert exact_mode() is exact
        assert vecmath.active("exp", "float32", exact_mode()) is not exact


def test_eager_and_compiled_agree_within_the_default_tolerances(monkeypatch):
    """The default mode: a chain of tanh and exp (the issue-17 chain's ops, 30 of them) on
    values across both kernels' ranges, compiled (one fused loop of kiln's kernels) and eager
    (NumPy's kernels), outputs and gradients, within `kn.testing.assert_close`'s float32
    tolerances; and each kernel on its own, at most `NUMPY_ULP_BOUND` ulps from eager mode
    on these inputs."""
    monkeypatch.delenv("KILN_EXACT", raising=False)
    steps = (lambda v, a: v * a, lambda v, a: v + 0.5, lambda v, a: kn.tanh(v),
             lambda v, a: v * 1.5, lambda v, a: v - a, lambda v, a: kn.exp(v))  # fmt: skip

    def chain(x, a):
        for i in range(30):
            x = steps[i % len(steps)](x, a)
        return x

    rng = np.random.default_rng(3)
    x, a = (rng.uniform(-1, 1, (4, 16)).astype(F32) for _ in range(2))
    assert kn.testing.check_eager_vs_compiled(chain, x, a)
    wide = rng.uniform(-12, 12, 4096).astype(F32)
    for op in (kn.tanh, kn.exp):
        compiled = kn.compile(lambda v, op=op: op(v * 1.0))
        got = compiled(kn.tensor(wide)).numpy()
        eager = op(kn.tensor(wide)).numpy()
        np.testing.assert_array_equal(got, vecmath.run(op.__name__, wide))  # kiln's kernel
        assert ulps(got, eager).max() <= vecmath.NUMPY_ULP_BOUND
        kn.testing.assert_close(got, eager)


@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"), reason="x86 asm")
def _chain_loop_text(n_ops):
    """The numba loop's text of an n-op chain of tanh, exp and arithmetic on f32[16] (issue
    17's chain: a kernel every third op)."""
    steps = (lambda v, a: v * a, lambda v, a: v + 0.5, lambda v, a: kn.tanh(v),
             lambda v, a: v * 1.5, lambda v, a: v - a, lambda v, a: kn.exp(v))  # fmt: skip
    with kn.Graph().as_default():
        x, a = (kn.placeholder(kn.float32, (16,), name=n) for n in "xa")
        y = x
        for i in range(n_ops):
            y = steps[i % len(steps)](y, a)
        f = kn.function([x, a], y)
    node = next(n for n in f.graph.nodes if n.op.name == "fused")
    prog = fused_ops.compiled(node.attrs["program"], node.attrs["outputs"])
    return loop_source(prog, prog.signature((np.dtype(F32),) * prog.n_in).dtypes, exact=False)


@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"), reason="x86 asm")
def test_a_loop_of_kernels_vectorizes(monkeypatch):
    """The compiled loop of issue 17's 100-op chain of tanh, exp and arithmetic on f32[16]
    (34 kernels, each written into the loop as LLVM IR) runs packed float32 instructions:
    called kernels kept such a loop scalar, 9x slower, and one construct a kernel must avoid
    (a float `min` in tanh) did too (checked: this test fails with either)."""
    monkeypatch.delenv("KILN_EXACT", raising=False)
    text = _chain_loop_text(100)
    assert text.count(f"vm{vecmath.VERSION}_tanh(") == 17
    namespace = {"np": np, **vecmath.namespace()}
    exec(compile(text, "<loop>", "exec"), namespace)  # compiled here: a cached one has no asm
    loop = numba.njit(error_model="numpy", nogil=True)(namespace["kernel"])
    v = np.linspace(-1, 1, 16, dtype=F32)
    loop(np.empty(16, F32), v, v, np.array(F32(0.5)), np.array(F32(1.5)))
    asm = "".join(loop.inspect_asm().values())
    packed = re.findall(r"\bv?(?:mul|add|fmadd\d+)ps\b", asm)
    assert len(packed) > 100, f"the loop is scalar ({len(packed)} packed float32)"
