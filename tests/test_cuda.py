"""kiln on a GPU against kiln on the CPU: every op-table row (compiled and eager), planned
against unplanned programs with poisoned buffers, fused kernels, eager autograd, training.

Each GPU test runs twice: on a real GPU (marker `cuda`; skipped, with the reason, without a
usable one: `pytest -m cuda` on a GPU machine) and on the simulated GPU of fake_cupy.py
(CuPy's rules on NumPy, with kiln's generated kernels compiled for the host), which checks
kiln's device code paths on any machine. The generated kernels' C is also checked against
NumPy on the host, special values included, bit for bit where the ops are exact.
"""

import contextlib
import functools
import io

import fake_cupy
import host_kernels
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from op_table import CASES
from test_codegen import programs
from test_ops import as_list, build, is_eager_capable, make_inputs

import kiln as kn
from kiln.graph.opdef import REGISTRY
from kiln.ops import fused as fused_ops
from kiln.ops import fused_cuda

WHY = kn.cuda.why_unavailable()
REAL = pytest.param(
    "cuda",
    marks=[
        pytest.mark.cuda,
        pytest.mark.skipif(WHY is not None, reason=f"no usable CUDA GPU: {WHY}"),
    ],  # fmt: skip
)
# CUDA's libm is within a few ulps of the host's (transcendentals), cuBLAS and CuPy's
# reductions sum in another order: float32 within ~80 ulps, float64 within 1e-12.
TOLERANCES = {"float16": (2e-3, 2e-3), "float32": (1e-5, 1e-5), "float64": (1e-12, 1e-12),
              "complex64": (1e-5, 1e-5), "complex128": (1e-12, 1e-12)}  # fmt: skip


@pytest.fixture(params=[REAL, "simulated"])
def gpu(request, monkeypatch):
    """The CuPy module of a real GPU, or fake_cupy as the simulated one."""
    if request.param == "cuda":
        import cupy

        fake_cupy.reset_kiln()  # tests count the kernels they generate
        yield cupy
        return
    if not host_kernels.have_compiler():
        pytest.skip("no g++ to compile kiln's generated kernels for the simulated GPU")
    module = fake_cupy.install(monkeypatch)
    fake_cupy.reset_kiln()
    yield module
    fake_cupy.reset_kiln()


def assert_same(got, want, tol=None, what=""):
    got, want = np.asarray(got), np.asarray(want)
    assert type(got) is np.ndarray and got.dtype == want.dtype and got.shape == want.shape, what
    if want.dtype.kind not in "fc":
        np.testing.assert_array_equal(got, want, err_msg=what)
        return
    rtol, atol = TOLERANCES[want.dtype.name]
    rtol, atol = max(rtol, (tol or (0, 0))[0] or 0), max(atol, (tol or (0, 0))[1] or 0)
    np.testing.assert_allclose(got, want, rtol, atol, equal_nan=True, err_msg=what)


# Ops with no GPU kernel (CuPy has none): their rows check the refusal instead.
NO_GPU_KERNEL = {"airy_ai": "cupyx.scipy.special has no Airy function"}


def rows(eager=False):
    return [
        pytest.param(case, dtype, id=f"{case.id}-{dtype}")
        for case in CASES
        if (not eager or is_eager_capable(case)) and case.op not in NO_GPU_KERNEL
        for dtype in case.dtypes
    ]


@pytest.mark.parametrize("op", sorted(NO_GPU_KERNEL))
def test_ops_without_a_gpu_kernel_refuse_rather_than_compute(gpu, op):
    case = next(c for c in CASES if c.op == op)
    arrays = make_inputs(case, case.dtypes[0])
    _, inputs, outputs = build(case, arrays)
    with pytest.raises(kn.KilnError, match=f"{op} has no GPU kernel"):
        kn.function(inputs, outputs, device="cuda")(*arrays)
    with pytest.raises(kn.DeviceError, match=f"{op} has no GPU kernel"):
        case.fn(kn.tensor(arrays[0], device="cuda"))


@pytest.mark.parametrize("case, dtype", rows())
def test_op_table_compiled_on_the_gpu_matches_the_cpu(gpu, case, dtype):
    arrays = make_inputs(case, dtype)
    _, inputs, outputs = build(case, arrays)
    with np.errstate(all="ignore"):
        cpu = as_list(kn.function(inputs, outputs)(*arrays))
        dev = as_list(kn.function(inputs, outputs, device="cuda")(*arrays))
    random = "random" in REGISTRY[case.op].tags  # another generator: the same law only
    for k, (got, want) in enumerate(zip(dev, cpu)):
        if random:
            assert got.shape == want.shape and got.dtype == want.dtype
            assert np.isfinite(got).all()
        else:
            assert_same(got, want, (case.rtol, case.atol), f"output {k}")


@pytest.mark.parametrize("case, dtype", rows(eager=True))
def test_op_table_eager_on_the_gpu_matches_the_cpu(gpu, case, dtype):
    arrays = make_inputs(case, dtype)
    if not isinstance(arrays[0], np.ndarray):
        pytest.skip("no array operand to put on the device")
    # The data operand is a Tensor; the others (indices, conditions) stay as given.
    with np.errstate(all="ignore"):
        cpu = as_list(case.fn(kn.tensor(arrays[0]), *arrays[1:]))
        dev = as_list(case.fn(kn.tensor(arrays[0], device="cuda"), *arrays[1:]))
    for k, (got, want) in enumerate(zip(dev, cpu)):
        assert got.device == "cuda:0"
        assert_same(got.cpu().numpy(), want.numpy(), (case.rtol, case.atol), f"output {k}")


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=25)
@given(programs())
def test_planned_program_matches_the_unplanned_one_on_the_gpu(gpu, build):
    rng = np.random.default_rng(0)
    xv, vv = rng.normal(size=(4, 4)).astype(np.float32), rng.normal(size=(4,)).astype(np.float32)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KILN_CHECKS", "1")  # verify each pass, poison freed buffers with NaN
        with kn.Graph().as_default():
            x = kn.placeholder(kn.float32, (4, 4), name="x")
            v = kn.placeholder(kn.float32, (4,), name="v")
            outs = build(x, v)
            planned = kn.function([x, v], outs, device="cuda")
            plain = kn.function([x, v], outs, device="cuda", passes=[], plan=False)
            cpu = kn.function([x, v], outs)
        for _ in range(2):  # the second call reuses the arena
            for got, want, host in zip(planned(xv, vv), plain(xv, vv), cpu(xv, vv)):
                np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, equal_nan=True)
                np.testing.assert_allclose(got, host, rtol=1e-5, atol=1e-6, equal_nan=True)


def test_a_fused_group_is_one_generated_kernel_made_once(gpu):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, 64, 33), np.float32)
    with kn.Graph().as_default():
        pa, pb = kn.placeholder(kn.float32, (64, 33)), kn.placeholder(kn.float32, (33,))
        y = kn.square(kn.maximum(kn.tanh((pa * pb + pa) * 0.5) - pb, 0.0)) + 1.0
        f = kn.function([pa, pb], y, device="cuda")
        g = kn.function([pa, pb], y, device="cuda")  # the same program text
    assert [n.op.name for n in f.graph.nodes].count("fused") == 1
    assert_same(f(a, b[0]), kn.function([pa, pb], y)(a, b[0]))
    assert len(fused_cuda._BY_TEXT) == 1
    g(a, b[0])
    assert len(fused_cuda._BY_TEXT) == 1, "an equal program reuses the kernel"


def test_region_ops_gradients_and_tangents_on_the_gpu_match_the_cpu(gpu):
    """scan's and cond's reverse mode, while_loop's forward mode, and sort/max(dim) (tuple
    nodes), in one program on the device: each body runs as its own device program."""
    rng = np.random.default_rng(2)
    h0, xs, w = (rng.standard_normal(s) * 0.5 for s in ((3,), (6, 3), (3, 3)))
    with kn.Graph().as_default():
        h, x, m = (kn.placeholder(kn.float64, a.shape, n) for a, n in ((h0, "h"), (xs, "xs"),
                                                                      (w, "w")))  # fmt: skip
        last, ys = kn.scan(lambda c, v: (kn.tanh(c @ m + v), c * 2.0), h, x)
        picked = kn.cond(kn.sum(last) > 0, lambda a: kn.exp(a), lambda a: a * a, last)
        top = kn.sort(ys, 0).values[-1] + kn.max(ys, 1).values.sum()
        loss = kn.sum(picked) + kn.sum(top)
        grads = kn.grad(loss, [h, x, m])
        grow = lambda v: kn.while_loop(lambda c: kn.sum(c) < 20.0,  # noqa: E731
                                       lambda c: c * 1.5 + kn.sin(c), v)  # fmt: skip
        _, tangent = kn.jvp(grow, (kn.abs(h) + 0.5,), (kn.ones_like(h),))
        outputs = [loss, *grads, tangent]
        cpu = kn.function([h, x, m], outputs)(h0, xs, w)
        dev = kn.function([h, x, m], outputs, device="cuda")(h0, xs, w)
    for k, (got, want) in enumerate(zip(dev, cpu)):
        assert_same(got, want, what=f"output {k}")


def test_eager_autograd_on_the_gpu_matches_the_cpu(gpu):
    rng = np.random.default_rng(0)
    x0, w0 = rng.standard_normal((5, 4), np.float32), rng.standard_normal((4, 3), np.float32)
    labels = rng.integers(0, 3, 5)

    def step(device):
        x = kn.tensor(x0, device=device, requires_grad=True)
        w = kn.tensor(w0, device=device, requires_grad=True)
        h = kn.tanh(x @ w) * 2.0
        loss = kn.cross_entropy(h, kn.tensor(labels, device=device)) + (h * h).mean()
        loss.backward()
        with kn.no_grad():
            w.sub_(0.1 * w.grad)
        return loss, x.grad, w.grad, w.detach()

    for got, want in zip(step("cuda"), step("cpu")):
        assert got.device == "cuda:0" and want.device == "cpu"
        assert_same(got.detach().cpu().numpy(), want.detach().numpy())


def test_adam_on_a_complex_parameter_on_the_gpu_matches_the_cpu(gpu):
    # PyTorch's optimizers update a complex parameter as its pairs of reals, on every device
    z = np.array([1 + 2j, -0.5 + 1j, 0.25 - 3j])

    def run(device):
        p = kn.tensor(z, device=device, requires_grad=True)
        opt = kn.optim.Adam([p], lr=0.1)
        for _ in range(3):
            opt.zero_grad()
            ((p * p).abs().sum() + p.real.sum()).backward()
            opt.step()
        return p.detach().cpu().numpy()

    assert_same(run("cuda"), run("cpu"))


def test_training_on_the_gpu_matches_the_cpu_and_variables_stay_there(gpu):
    rng = np.random.default_rng(0)
    xb, yb = rng.standard_normal((32, 20), np.float32), rng.integers(0, 5, 32)
    w1_0, w2_0 = rng.standard_normal((20, 16), np.float32), rng.standard_normal((16, 5), np.float32)
    runs = []
    for device in ("cpu", "cuda"):
        with kn.Graph().as_default():
            x = kn.placeholder(kn.float32, ("batch", 20), name="x")
            labels = kn.placeholder(kn.int64, ("batch",), name="labels")
            w1, w2 = kn.Variable(w1_0, name="w1"), kn.Variable(w2_0, name="w2")
            loss = kn.cross_entropy(kn.relu(x @ w1) @ w2, labels)
            g1, g2 = kn.grad(loss, [w1, w2])
            f = kn.function([x, labels], loss, updates={w1: w1 - 0.1 * g1, w2: w2 - 0.1 * g2},
                            device=device)  # fmt: skip
        losses = [float(f(xb, yb)) for _ in range(4)]
        assert w1.device == ("cpu" if device == "cpu" else "cuda:0")
        runs.append((losses, w1.numpy(), w2.numpy()))
    np.testing.assert_allclose(runs[1][0], runs[0][0], rtol=1e-5)
    np.testing.assert_allclose(runs[1][1], runs[0][1], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(runs[1][2], runs[0][2], rtol=1e-5, atol=1e-6)


def test_random_ops_on_the_gpu_follow_their_law_and_the_seed(gpu):
    def draws():
        with kn.Graph().as_default():
            kn.manual_seed(7)
            normal = kn.random.normal((200, 100), 1.0, 2.0)
            uniform = kn.random.uniform((200, 100), -1.0, 3.0)
            f = kn.function([], [normal, uniform], device="cuda")
            return f(), f()

    first, second = draws()
    (n1, u1), (n2, _) = first, second
    assert abs(n1.mean() - 1.0) < 0.06 and abs(n1.std() - 2.0) < 0.05
    assert u1.min() >= -1.0 and u1.max() < 3.0 and abs(u1.mean() - 1.0) < 0.04
    assert not np.array_equal(n1, n2), "every run draws fresh values"
    for a, b in zip(first, draws()[0]):
        np.testing.assert_array_equal(a, b)


# -- the generated kernels' C, compiled for the host, against NumPy (no GPU needed) --------------

SPECIAL = [np.nan, np.inf, -np.inf, -0.0, 0.0, 1.0, -1.0, 0.5, 2.5, -2.5, 3.0, 1e30, -1e-30, 88.0]


def _special(dtype, k):
    """Every pair of special values across inputs 0 and 1 (input 2 is another mix)."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        with np.errstate(over="ignore"):  # 1e30 is inf in float16
            base = np.array(SPECIAL, dtype)
    elif dtype.kind == "b":
        base = np.array([True, False] * 7)
    else:
        info = np.iinfo(dtype)
        base = np.array([0, 1, 2, 3, 7, 9, 100, info.max, info.min, info.max - 1, 5, 4, 6, 8],
                        dtype)  # fmt: skip
    m, idx = len(base), np.arange(len(base) ** 2)
    return base[[idx // m, idx % m, (idx * 7 + 3) % m][k % 3]]


@functools.cache
def _programs():
    """(program, input values) of every elementwise node of the op table's graphs, once (read
    by test_fuse.py's numba checks too)."""
    seen = {}
    for case in CASES:
        for dtype in case.dtypes:
            arrays = make_inputs(case, dtype)
            graph, inputs, _ = build(case, arrays)
            for node in graph.nodes:
                if "elementwise" not in node.op.tags or not node.inputs:
                    continue
                if node.op.name == "fused":
                    program, outputs = node.attrs["program"], node.attrs["outputs"]
                else:
                    refs = tuple(("in", k) for k in range(len(node.inputs)))
                    program = ((node.op.name, refs, tuple(sorted(node.attrs.items()))),)
                    outputs = (0,)
                with np.errstate(all="ignore"):
                    values = as_list(kn.function(inputs, list(node.inputs), passes=[])(*arrays))
                key = (program, outputs, tuple(v.dtype for v in values))
                seen.setdefault(key, (case.id, [np.asarray(v) for v in values]))
    return seen


def _units():
    """(what, inputs, exact, expected, kernel source) of each lowered program, on the op
    table's values and on special values."""
    units = []
    for (program, outputs, dtypes), (case_id, values) in _programs().items():
        prog = fused_ops.compiled(program, outputs)
        source = fused_cuda.kernel_source(prog, dtypes)
        if source is None:
            continue
        casts = any(eq[0] == "cast" for eq in program)  # float -> int of nan/inf: undefined
        exact = all(getattr(REGISTRY[eq[0]].lowering, "exact", False) for eq in program)
        what = f"{case_id}: {[eq[0] for eq in program]} on {[d.name for d in dtypes]}"
        specials = [_special(d, k) for k, d in enumerate(dtypes)]
        for inputs in [values] if casts else [values, specials]:
            with np.errstate(all="ignore"):
                expected = prog.code(np)[0](*[None] * len(outputs), *inputs)
            expected = [np.asarray(e) for e in (expected if prog.multi else [expected])]
            units.append((what, inputs, exact, expected, source))
    return units


@pytest.mark.skipif(not host_kernels.have_compiler(), reason="no g++ to compile the kernels")
def test_generated_kernels_compute_what_numpy_does():
    units = _units()
    functions = []
    for _, inputs, _, expected, source in units:
        ins = [(v.dtype.name, f"a{k}") for k, v in enumerate(inputs)]
        ins += [("float64", f"c{k}") for k in range(len(source.consts))]
        names = ["out"] if len(expected) == 1 else [f"out{k}" for k in range(len(expected))]
        out = [(e.dtype.name, name) for e, name in zip(expected, names)]
        functions.append(host_kernels.host_source(ins, out, source.operation))
    runs = host_kernels.load(functions, [unit[4].preamble for unit in units])
    for (what, inputs, exact, wants, source), run in zip(units, runs):
        shape = wants[0].shape
        arrays = [np.ascontiguousarray(np.broadcast_to(v, shape)) for v in inputs]
        gots = [np.empty_like(want) for want in wants]
        run(gots[0].size, arrays + [np.full(shape, c) for c in source.consts], gots)
        for got, want in zip(gots, wants):
            if exact or want.dtype.kind != "f":
                np.testing.assert_array_equal(got, want, err_msg=what)  # bit for bit
            else:
                assert_same(got, want, None, what)
    assert len(units) > 300, "most elementwise programs become one kernel"


def test_programs_not_lowered_fall_back_and_attrs_are_arguments():
    half = fused_ops.compiled((("exp", (("in", 0),), ()),), (0,))
    assert fused_cuda.kernel_source(half, (np.dtype("float16"),)) is None
    floordiv = fused_ops.compiled((("floordiv", (("in", 0), ("in", 1)), ()),), (0,))
    assert fused_cuda.kernel_source(floordiv, (np.dtype("float32"),) * 2) is None
    soft = fused_ops.compiled((("softplus", (("in", 0),), (("beta", 2.5),)),), (0,))
    source = fused_cuda.kernel_source(soft, (np.dtype("float32"),))
    assert source.consts == (2.5,) and "2.5" not in source.text and "float64 c0" in source.text
    assert source.name.startswith("kiln_fused_") and source.name.isidentifier()


def test_cuda_tests_skip_with_the_reason_when_no_gpu_is_usable():
    if WHY is None:
        pytest.skip("a usable GPU: the cuda tests run")
    marks = {m.name: m for m in REAL.marks}
    assert "cuda" in marks
    assert marks["skipif"].kwargs["reason"] == f"no usable CUDA GPU: {WHY}"


def test_tutorial_9_takes_its_gpu_branches_on_the_simulated_gpu(monkeypatch):
    """docs/tutorials/09-cuda.md runs in test_docs on the CPU branch of each block (no GPU
    there); here the same blocks take their `device == "cuda"` branches on the simulated GPU
    and print what the page shows, so the page's claims about kn.cuda, `.to`, mixing devices,
    `kn.compile` and `kn.function(device=)` hold for kiln's CuPy code paths."""
    if not host_kernels.have_compiler():
        pytest.skip("no g++ to compile kiln's generated kernels for the simulated GPU")
    from test_docs import DOCS, code_blocks, matches

    fake_cupy.install(monkeypatch)
    fake_cupy.reset_kiln()
    try:
        page = DOCS / "tutorials" / "09-cuda.md"
        namespace: dict = {"__name__": "__docs__"}
        for source, expected, line in code_blocks(page.read_text(encoding="utf-8")):
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                exec(compile("\n" * line + source, str(page), "exec"), namespace)
            assert namespace["device"] == "cuda", kn.cuda.why_unavailable()
            if expected is not None:
                assert matches(expected, out.getvalue()), (line, out.getvalue())
        assert namespace["x"].device == "cuda:0" and namespace["name"]
    finally:
        fake_cupy.reset_kiln()


def test_seeding_and_current_device_as_torch_without_cuda(monkeypatch):
    # torch 2.13's CPU build: manual_seed/manual_seed_all/seed/seed_all do nothing (they
    # return None), is_initialized() is False, current_device() and mem_get_info() raise
    assert kn.cuda.manual_seed(1) is None and kn.cuda.manual_seed_all(1) is None
    assert kn.cuda.seed() is None and kn.cuda.seed_all() is None
    if kn.cuda.is_available():
        assert kn.cuda.is_initialized() and kn.cuda.current_device() == 0
        free, total = kn.cuda.mem_get_info()
        assert 0 < free <= total
        return
    assert kn.cuda.is_initialized() is False
    for fn in (kn.cuda.current_device, kn.cuda.mem_get_info):
        with pytest.raises(RuntimeError):
            fn()
    # seeding the GPU leaves the CPU stream alone, as torch's does
    kn.manual_seed(0)
    first = kn.rand(3)
    kn.manual_seed(0)
    kn.cuda.manual_seed_all(5)
    assert kn.equal(kn.rand(3), first)
