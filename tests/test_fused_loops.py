"""Compiled fused loops on the CPU: small groups fused by the default pipeline, numba's libm
within `ULP_BOUND` of NumPy's (measured again here), KILN_EXACT=1 for NumPy's bits, the
prepared per-signature kernel, and the kernel cache on disk (a new process loads, not
compiles). Expected values come from NumPy running the same ops one by one.
"""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import kiln as kn
from kiln.graph.opdef import REGISTRY
from kiln.ops import fused as fused_ops
from kiln.ops import vecmath
from kiln.ops.fused_codegen import LIBM, ULP_BOUND, _expr, loop_source

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def chain(m, x, a, n_ops):
    """The chain of bench/bench_fusion.py: mul, add, tanh, mul, sub, exp, repeated."""
    steps = (
        lambda v: v * a, lambda v: v + 0.5, m.tanh, lambda v: v * 1.5, lambda v: v - a, m.exp,
    )  # fmt: skip
    for i in range(n_ops):
        x = steps[i % len(steps)](x)
    return x


def chain_function(n_ops=30, shape=(16,)):
    with kn.Graph().as_default():
        x, a = (kn.placeholder(kn.float32, shape, name=n) for n in "xa")
        return kn.function([x, a], chain(kn, x, a, n_ops))


def inputs(shape=(16,)):
    rng = np.random.default_rng(0)
    return [rng.uniform(-1, 1, shape).astype(np.float32) for _ in range(2)]


@pytest.fixture(autouse=True)
def _fast(monkeypatch):
    """These tests check the libm loops: KILN_EXACT=0 (the default, set against the caller's)."""
    monkeypatch.setenv("KILN_EXACT", "0")


def test_default_pipeline_fuses_small_static_groups_only():
    f = chain_function(shape=(16,))
    assert [n.op.name for n in f.graph.nodes].count("fused") == 1
    with kn.Graph().as_default():  # a symbolic size is not known to be small: not fused
        x, a = (kn.placeholder(kn.float32, ("n",), name=n) for n in "xa")
        g = kn.function([x, a], chain(kn, x, a, 6))
    assert "fused" not in [n.op.name for n in g.graph.nodes]


def test_small_fused_chain_is_one_loop_within_tolerance_of_numpy():
    pytest.importorskip("numba")
    f = chain_function(30)
    x, a = inputs()
    want = chain(np, x, a, 30)
    results = [f(x, a) for _ in range(4)]  # the loop is built on the second call
    for got in results:
        kn.testing.assert_close(got, want)  # float32's default tolerances
    node = next(n for n in f.graph.nodes if n.op.name == "fused")
    prog = fused_ops.compiled(node.attrs["program"], node.attrs["outputs"])
    sig = prog.signature((np.dtype(np.float32),) * prog.n_in)
    assert sig.fast not in (None, False), "tanh and exp are compiled (KILN_EXACT=0)"
    np.testing.assert_array_equal(results[2], results[3])  # the same loop: the same bits


def test_kiln_exact_keeps_numpys_bits(monkeypatch):
    monkeypatch.setenv("KILN_EXACT", "1")
    f = chain_function(30)
    x, a = inputs()
    want = chain(np, x, a, 30)
    for _ in range(3):
        np.testing.assert_array_equal(f(x, a), want)


def test_exact_and_fast_loop_text():
    """libm functions are lowered only outside exact mode; float32 sinh is computed in float64;
    float32 tanh and exp call kiln's own kernels there (kiln/ops/vecmath.py); float32 log
    (NumPy's is up to 4 ulp off, docs/debugging.md) and float64 tanh (3 ulp from NumPy's in
    numba's libm) are not lowered."""
    pytest.importorskip("numba")  # without numba there are no loops, and no kernels of kiln's
    f32, f64 = np.dtype(np.float32), np.dtype(np.float64)
    sinh = fused_ops.compiled((("sinh", (("in", 0),), ()),), (0,))
    dtypes = sinh.signature((f32,)).dtypes
    assert loop_source(sinh, dtypes, exact=True) is None
    assert "np.float32(np.sinh(np.float64(np.float32(v0))))" in loop_source(sinh, dtypes, False)
    for name in ("tanh", "exp", "log"):
        prog = fused_ops.compiled(((name, (("in", 0),), ()),), (0,))
        dtypes = prog.signature((f32,)).dtypes
        assert loop_source(prog, dtypes, exact=True) is None
        fast = loop_source(prog, dtypes, exact=False)
        if name == "log":
            assert fast is None
        else:
            assert f"vm{vecmath.VERSION}_{name}(np.float32(v0))" in fast
    tanh = fused_ops.compiled((("tanh", (("in", 0),), ()),), (0,))
    assert loop_source(tanh, tanh.signature((f64,)).dtypes, exact=False) is None


def _ulps(a, b):
    """|a - b| in units in the last place (0 where both are NaN, or equal infinities)."""
    bits = {4: np.int32, 8: np.int64}[a.dtype.itemsize]
    ia, ib = a.view(bits).astype(np.int64), b.view(bits).astype(np.int64)
    ia = np.where(ia < 0, np.iinfo(bits).min - ia, ia)  # ordered: -0.0 next to +0.0
    ib = np.where(ib < 0, np.iinfo(bits).min - ib, ib)
    d = np.abs(ia - ib)
    return np.where(np.isnan(a) & np.isnan(b), 0, d)


DOMAINS = {"arccos": (-1, 1), "arccosh": (1, 1e3), "arctanh": (-1, 1), "log": (0, 1e4),
           "log2": (0, 1e4), "log10": (0, 1e4), "log1p": (-1, 1e4), "sinh": (-80, 80),
           "cosh": (-80, 80), "exp": (-100, 88), "exp2": (-140, 127), "expm1": (-50, 80),
           "power": (0, 10), "arcsin": (-1, 1), "tan": (-10, 10)}  # fmt: skip


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_compiled_libm_is_within_the_documented_ulps_of_numpy(dtype):
    """Each LIBM entry as the loops emit it (`_expr`), compiled by numba in one kernel, on
    2**17 inputs across the function's domain (a quarter scaled down by 1e3 and a few tiny
    ones): at most ULP_BOUND ulps from NumPy's ufunc."""
    numba = pytest.importorskip("numba")
    dtype = np.dtype(dtype)
    names = sorted(name for name, d in LIBM if d == dtype)
    n = 1 << 17
    rng = np.random.default_rng(0)
    args, lines = [], []
    for j, name in enumerate(names):
        lo, hi = DOMAINS.get(name, (-100, 100))
        ufunc = getattr(np, name)
        xs = [rng.uniform(lo, hi, n).astype(dtype) for _ in range(ufunc.nin)]
        xs[0][: n // 4] *= dtype.type(1e-3)
        xs[0][n // 4 : n // 4 + 300] = np.geomspace(1e-30, 1e-3, 300).astype(dtype)
        if name == "power":
            xs[1] = rng.uniform(-20, 20, n).astype(dtype)
        refs = [f"x{len(args) + k}[i]" for k in range(ufunc.nin)]
        expr = _expr(REGISTRY[_op_name(name)].lowering, refs, [dtype] * ufunc.nin, dtype, {},
                     exact=False)  # fmt: skip
        assert expr is not None, name
        lines.append(f"        out[{j}, i] = {expr}")
        args += xs
    params = ", ".join(f"x{k}" for k in range(len(args)))
    text = f"def kernel(out, {params}):\n    for i in range(out.shape[1]):\n" + "\n".join(lines)
    namespace = {"np": np}
    exec(text, namespace)
    out = np.empty((len(names), n), dtype)
    numba.njit(error_model="numpy")(namespace["kernel"])(out, *args)
    k = 0
    worst = {}
    for j, name in enumerate(names):
        ufunc = getattr(np, name)
        with np.errstate(all="ignore"):
            want = ufunc(*args[k : k + ufunc.nin])
        k += ufunc.nin
        worst[name] = int(_ulps(out[j], want).max())
    assert max(worst.values()) <= ULP_BOUND, worst


def _op_name(ufunc_name):
    return next(op.name for op in REGISTRY.values()
                if op.lowering is not None and op.lowering.ufunc == ufunc_name)  # fmt: skip


def test_prepared_kernel_takes_strided_and_new_array_types():
    """The prepared kernel's direct loop call falls back when numba was not compiled for the
    arrays (a strided view), and still gives the values (NumPy's: within tolerance)."""
    pytest.importorskip("numba")
    f = chain_function(12, shape=(8,))
    x, a = inputs((8,))
    want = chain(np, x, a, 12)
    for _ in range(3):
        kn.testing.assert_close(f(x, a), want)
    wide = np.repeat(x, 2)[::2]  # the feed is made contiguous; the kernel sees a new buffer
    kn.testing.assert_close(f(wide, a), want)
    node = next(n for n in f.graph.nodes if n.op.name == "fused")
    kernel = fused_ops._prepare(kn.runtime.backend.get_backend("cpu"), [(8,), (8,), (), ()],
                                [np.dtype(np.float32)] * 4, (8,), **node.attrs)  # fmt: skip
    consts = [np.float32(1.5), np.float32(0.5)]
    order = [x, a] if node.inputs[0].name == "x" else [a, x]
    args = [*order, *(np.asarray(c) for c in consts)][: len(node.inputs)]
    for _ in range(3):
        kernel(np, *args)
    strided = [np.repeat(v, 2)[::2] if v.ndim else v for v in args]
    kn.testing.assert_close(kernel(np, *strided), kernel(np, *args))  # NumPy's path: close


def test_kernel_cache_on_disk_is_loaded_by_a_new_process(tmp_path):
    """The first process compiles the loop and writes it under KILN_CACHE_DIR; a second one
    loads numba's machine code from there (a cache hit, no compile)."""
    pytest.importorskip("numba")
    script = textwrap.dedent("""
        import numpy as np, kiln as kn
        from kiln.ops import fused_codegen
        with kn.Graph().as_default():
            x = kn.placeholder(kn.float32, (16,), name="x")
            f = kn.function([x], kn.exp(kn.tanh(x * 2.0) + x) * 0.5)
        v = np.linspace(-1, 1, 16, dtype=np.float32)
        for _ in range(3):
            got = f(v)
        np.testing.assert_allclose(got, np.exp(np.tanh(v * 2) + v) * 0.5, rtol=1e-6)
        (loop,) = fused_codegen._LOOPS.values()
        print(sum(loop.stats.cache_hits.values()), sum(loop.stats.cache_misses.values()))
    """)
    env = {**os.environ, "KILN_CACHE_DIR": str(tmp_path), "PYTHONPATH": ROOT}
    runs = [
        subprocess.run(
            [sys.executable, "-c", script],
            env=env,
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
        ).stdout.split()  # fmt: skip
        for _ in range(2)
    ]
    assert runs[0] == ["0", "1"], "the first process compiles"
    assert runs[1] == ["1", "0"], "the second loads from the cache"
    files = sorted(os.listdir(tmp_path / "loop"))
    assert len([f for f in files if f.endswith(".py")]) == 1 and "__pycache__" in files


def test_kernel_cache_falls_back_to_memory_where_it_cannot_write(tmp_path, monkeypatch):
    from kiln import disk_cache

    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("KILN_CACHE_DIR", str(blocker))
    assert disk_cache.load_module("loop", "x = 1\n", {}) is None
    monkeypatch.setenv("KILN_CACHE_DIR", str(tmp_path / "ok"))
    assert disk_cache.load_module("loop", "x = 2\n", {})["x"] == 2
    assert os.listdir(tmp_path / "ok" / "loop")[0].endswith(".py")


def test_static_feeds_fast_path_still_checks_every_feed():
    """Static feeds of the exact dtype and shape skip the checks; anything else still goes
    through them (converted, made contiguous, or refused with the placeholder's name)."""
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (2, 3), name="x")
        f = kn.function([x], x * 2.0)
    v = np.arange(6, dtype=np.float32).reshape(2, 3)
    for _ in range(2):
        np.testing.assert_array_equal(f(v), v * 2)  # 2.0 * v: exact, a hand computation
    np.testing.assert_array_equal(f(np.asfortranarray(v)), v * 2)
    np.testing.assert_array_equal(f(v.tolist()), v * 2)
    with pytest.raises(kn.ShapeError, match="placeholder 'x'"):
        f(np.zeros((3, 2), np.float32))
    with pytest.raises(kn.DTypeError, match="placeholder 'x'"):
        f(v.astype(np.float64))


def test_check_numerics_names_the_op_inside_a_small_group():
    """Checking numerics, small groups stay unfused: the error names `log`, not `fused`."""
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (3,), name="x")
        f = kn.function([x], kn.log(x) * 2.0, check_numerics=True)
    with pytest.raises(kn.NumericsError, match="op log"):
        f(np.array([-1.0, 0.0, 1.0], np.float32))  # log(-1) = NaN, log(0) = -Inf


def test_a_program_past_the_loop_bound_runs_on_numpy(monkeypatch):
    """A program of more equations than MAX_LOOP_EQUATIONS gets no numba loop (its compile
    time grows faster than its length) and gives NumPy's chain's values all the same."""
    monkeypatch.setattr("kiln.ops.fused_codegen.MAX_LOOP_EQUATIONS", 20)
    f = chain_function(n_ops=30)
    node = next(n for n in f.graph.nodes if n.op.name == "fused")
    prog = fused_ops.compiled(node.attrs["program"], node.attrs["outputs"])
    dtypes = prog.signature((np.dtype(np.float32),) * prog.n_in).dtypes
    assert loop_source(prog, dtypes, exact=False) is None
    x, a = inputs()
    for _ in range(3):  # past the call that builds a loop
        got = f(x, a)
    kn.testing.assert_close(got, chain(np, x, a, 30))
