"""torch.special's functions in `kn.special` (and `kn.xlogy`, `kn.igamma`, `kn.mvlgamma`...)
against PyTorch: values in float32 and float64 on ordinary and edge values (0, -0, ±1, ±inf,
NaN, large), result dtypes, gradients (against torch's and finite differences), the
derivatives PyTorch refuses, and eager = graph = compiled. The op table
(tests/op_table_special.py) checks every op against SciPy in every mode.

Where kiln and PyTorch differ, kiln gives SciPy's value, which the comparisons below name:
PyTorch computes float32 in float32 (kiln in double, rounded once), its Bessel and Airy
approximations are less accurate in float64 (J0(7): torch 0.30007926972, exact
0.30007927052), its ndtr is `(1 + erf(x / sqrt 2)) / 2`, 0 below x = -8.3 (kiln's is
SciPy's, 1.8e-33 at -12), and its polynomials read an uninitialized value at NaN (kiln: NaN).
"""

import math

import numpy as np
import pytest
import scipy.special as sc

import kiln as kn
from kiln.errors import UsageError

torch = pytest.importorskip("torch")

EDGES = [0.0, -0.0, 1.0, -1.0, math.inf, -math.inf, math.nan, 30.0, -30.0, 100.0, 1e-8, -12.0,
         2.5, -2.5, 7.0, -7.5, 700.0]  # fmt: skip
PROBABILITIES = [0.0, 1.0, 0.5, 0.975, 1e-30, 1e-5, -0.5, 2.0, math.nan, 0.3]

# one-input functions that PyTorch differentiates, and those it does not
DIFFERENTIABLE = ["i0e", "i1e", "ndtr", "ndtri", "log_ndtr", "erfcx", "entr", "erfc", "i0",
                  "i1", "expit", "logit", "exp2", "sinc", "digamma", "erfinv"]  # fmt: skip
UNDIFFERENTIATED = [
    "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_i0",
    "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1",
    "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "spherical_bessel_j0", "airy_ai",
]  # fmt: skip
POLYNOMIALS = [
    "chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
    "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
    "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
    "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
    "laguerre_polynomial_l", "legendre_polynomial_p",
]  # fmt: skip
# SciPy's value where PyTorch's is off (see the module's docstring): (function, x) -> reference
LOOSER = {"bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "airy_ai"}


def _inputs(name, dtype):
    values = PROBABILITIES if name in ("ndtri", "logit", "erfinv") else EDGES
    return np.array(values, dtype)


def test_kn_special_has_every_function_of_torch_special():
    public = {n for n in dir(torch.special) if not n.startswith("_")}
    public -= {"Tensor", "torch", "common_args", "multi_dim_common"}
    assert public <= set(vars(kn.special)), sorted(public - set(vars(kn.special)))
    # torch's top-level and method forms, where torch has them
    for name in ("xlogy", "igamma", "igammac", "mvlgamma", "erfc", "sinc", "i0"):
        assert hasattr(torch, name) and callable(getattr(kn, name))
        assert hasattr(kn.Tensor, name) and hasattr(kn.Tensor, f"{name}_")
    assert kn.igamma is not None and kn.special.xlogy is kn.xlogy


@pytest.mark.parametrize("name", DIFFERENTIABLE + UNDIFFERENTIATED)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_one_input_values_match_torch(name, dtype):
    x = _inputs(name, dtype)
    with np.errstate(all="ignore"):
        ours = getattr(kn.special, name)(kn.tensor(x))
    theirs = getattr(torch.special, name)(torch.tensor(x))
    assert str(ours.dtype) == str(theirs.dtype).replace("torch.", "kiln.")
    got, want = ours.numpy(), theirs.numpy()
    if name == "ndtr":  # PyTorch's cancels in the left tail (0 below -8.3); kiln's is SciPy's
        tail = x < -5
        np.testing.assert_allclose(got[tail], sc.ndtr(x[tail].astype(np.float64)).astype(dtype))
        got, want = got[~tail], want[~tail]
    if name in LOOSER:  # PyTorch's approximations: within 1e-4 of SciPy's (kiln's) values
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6, equal_nan=True)
        return
    rtol = 2e-6 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-30, equal_nan=True)


@pytest.mark.parametrize("name", ["i0e", "ndtr", "bessel_j0", "chebyshev_polynomial_t"])
def test_integers_compute_in_the_default_float(name):
    fn = getattr(kn.special, name)
    args = (kn.tensor([1, 2]), 3) if "polynomial" in name else (kn.tensor([1, 2]),)
    targs = (torch.tensor([1, 2]), 3) if "polynomial" in name else (torch.tensor([1, 2]),)
    assert fn(*args).dtype == kn.float32 == kn.get_default_dtype()
    assert str(getattr(torch.special, name)(*targs).dtype) == "torch.float32"
    np.testing.assert_allclose(fn(*args).numpy(), getattr(torch.special, name)(*targs).numpy(),
                               rtol=1e-6)  # fmt: skip


BINARY_DTYPES = [
    (2.0, np.float32), (np.float32, 2), (np.float32, 2.5), (np.int64, 2.5),
    (np.int64, np.float32), (np.float32, np.float64), (np.float16, np.float32),
]  # fmt: skip


def _operand(spec, lib, values):
    if not isinstance(spec, type):
        return spec
    array = np.asarray(values, spec)
    return kn.tensor(array) if lib is kn else torch.tensor(array)


@pytest.mark.parametrize("name", ["xlogy", "xlog1py", "zeta", "chebyshev_polynomial_t"])
@pytest.mark.parametrize("specs", BINARY_DTYPES, ids=str)
def test_two_input_dtypes_and_values_match_torch(name, specs):
    a_values, b_values = [0.0, 1.5, 2.0, 3.0], [0.5, 1.0, 3.0, 4.0]
    if name == "zeta":
        a_values = [2.0, 3.0, 1.5, 4.0]
    ours = getattr(kn.special, name)(*(_operand(s, kn, v) for s, v in
                                       zip(specs, (a_values, b_values))))  # fmt: skip
    theirs = getattr(torch.special, name)(*(_operand(s, torch, v) for s, v in
                                            zip(specs, (a_values, b_values))))  # fmt: skip
    assert str(ours.dtype) == str(theirs.dtype).replace("torch.", "kiln.")
    rtol = 1e-12 if ours.dtype == kn.float64 else 2e-3 if ours.dtype == kn.float16 else 2e-6
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=rtol)


@pytest.mark.parametrize("name", ["xlogy", "xlog1py"])
def test_xlogy_edges_match_torch(name):
    x = np.array([0.0, 0.0, 0.0, 0.0, 0.0, 2.0, -1.0, math.nan, 0.0])
    y = np.array([0.0, -1.0, math.inf, math.nan, -math.inf, -2.0, math.inf, 1.0, 2.0])
    if name == "xlog1py":
        y = y - 1
    for dtype in (np.float32, np.float64):
        with np.errstate(all="ignore"):
            ours = getattr(kn.special, name)(kn.tensor(x.astype(dtype)), kn.tensor(y.astype(dtype)))
        theirs = getattr(torch.special, name)(torch.tensor(x.astype(dtype)),
                                              torch.tensor(y.astype(dtype)))  # fmt: skip
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_zeta_and_gammainc_match_torch_on_edges():
    x = np.array([1.0, 2.0, 0.5, math.inf, 2.0, 2.0, math.nan, 4.0, 3.0, 1.5])
    q = np.array([1.0, 0.0, 1.0, 1.0, -1.5, 1e30, 1.0, -2.0, 0.5, 30.0])
    for lib_name in ("zeta", "gammainc", "gammaincc"):
        a, b = (x, q) if lib_name == "zeta" else (q, x)
        for dtype in (np.float32, np.float64):
            with np.errstate(all="ignore"):
                ours = getattr(kn.special, lib_name)(kn.tensor(a.astype(dtype)),
                                                     kn.tensor(b.astype(dtype)))  # fmt: skip
            theirs = getattr(torch.special, lib_name)(torch.tensor(a.astype(dtype)),
                                                      torch.tensor(b.astype(dtype)))  # fmt: skip
            rtol = 1e-5 if dtype == np.float32 else 1e-12  # PyTorch's float32 in float32
            np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=rtol, equal_nan=True,
                                       err_msg=f"{lib_name} {dtype.__name__}")  # fmt: skip
    # zeta(x, inf) is its limit 0 (SciPy's; PyTorch gives NaN)
    assert kn.special.zeta(kn.tensor([2.0]), math.inf).tolist() == [0.0]


@pytest.mark.parametrize("name", POLYNOMIALS)
def test_polynomials_match_torch(name):
    # float64: PyTorch's recurrences and closed forms, value for value (n truncated, negative,
    # NaN or beyond int64: 0); float32: kiln's are the float64 values at the float32 inputs,
    # rounded once, and PyTorch's (computed in float32) are within 3e-3 of them
    x = np.concatenate([np.linspace(-1.5, 1.5, 31), [-1, 1, 0, 0.5, 1e-3, math.inf, -math.inf,
                                                      3.0, -7.0, 0.999999, -0.999999]])  # fmt: skip
    n = np.concatenate([np.arange(-2, 26), [2.7, -0.5, math.nan, math.inf, -math.inf, 1e30]])
    xx, nn = np.meshgrid(x, n)
    fn = getattr(kn.special, name)
    for dtype, rtol, atol in ((np.float64, 1e-12, 1e-13), (np.float32, 3e-3, 1e-4)):
        with np.errstate(all="ignore"):
            ours = fn(kn.tensor(xx.astype(dtype)), kn.tensor(nn.astype(dtype))).numpy()
            wide = fn(kn.tensor(xx.astype(dtype).astype(np.float64)), kn.tensor(nn)).numpy()
        theirs = getattr(torch.special, name)(torch.tensor(xx.astype(dtype)),
                                              torch.tensor(nn.astype(dtype))).numpy()  # fmt: skip
        assert ours.dtype == dtype
        np.testing.assert_array_equal(ours, wide.astype(dtype))
        np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=atol, equal_nan=True)
    # NaN x: NaN for n >= 1 (PyTorch reads an uninitialized value for some), 1 for n = 0
    got = fn(kn.tensor([math.nan] * 3, dtype=kn.float64), kn.tensor([0.0, 1.0, 2.0]))
    assert got.tolist()[0] == 1.0 and all(math.isnan(v) for v in got.tolist()[1:])
    # a Python degree, a Python x, an integer tensor of degrees
    x32 = np.float32(0.25)
    want = getattr(torch.special, name)(torch.tensor([x32]), 5).numpy()
    np.testing.assert_allclose(fn(kn.tensor([x32]), 5).numpy(), want, rtol=1e-6)
    np.testing.assert_allclose(fn(0.25, kn.tensor([5])).numpy(), want, rtol=1e-6)


def _grad_pairs():
    """(function, kiln args, torch args, index of the differentiated argument)."""
    x = [0.3, 1.7, -2.2, 4.0]
    pos = [0.3, 1.7, 2.2, 4.0]
    out = [(n, [x], 0) for n in ("i0e", "i1e", "ndtr", "log_ndtr", "erfcx", "erfc")]
    out += [("ndtri", [[0.1, 0.5, 0.9, 0.3]], 0), ("entr", [pos], 0)]
    out += [("xlogy", [[0.0, 1.5, -2.0, 0.0], [2.0, 0.5, 3.0, 0.0]], k) for k in (0, 1)]
    out += [("xlog1py", [[0.0, 1.5, -2.0, 0.0], [2.0, 0.5, 3.0, -1.0]], k) for k in (0, 1)]
    out += [("zeta", [[2.0, 3.5, 1.5, 4.0], pos], 1)]
    out += [("gammainc", [pos, [0.5, 2.0, 1.0, 3.0]], 1)]
    out += [("gammaincc", [pos, [0.5, 2.0, 1.0, 3.0]], 1)]
    return out


@pytest.mark.parametrize("name, values, k", _grad_pairs(), ids=lambda v: str(v)[:12])
def test_gradients_match_torch_in_every_mode(name, values, k):
    arrays = [np.array(v, np.float64) for v in values]

    def loss(lib, *args):
        return getattr(lib.special, name)(*args).sum()

    t_args = [torch.tensor(a, requires_grad=(i == k)) for i, a in enumerate(arrays)]
    loss(torch, *t_args).backward()
    want = t_args[k].grad.numpy()
    # eager
    e_args = [kn.tensor(a, requires_grad=(i == k)) for i, a in enumerate(arrays)]
    loss(kn, *e_args).backward()
    np.testing.assert_allclose(e_args[k].grad.numpy(), want, rtol=1e-10, atol=1e-14)
    # compiled
    c_args = [kn.tensor(a, requires_grad=(i == k)) for i, a in enumerate(arrays)]
    kn.compile(lambda *a: loss(kn, *a))(*c_args).backward()
    np.testing.assert_allclose(c_args[k].grad.numpy(), want, rtol=1e-10, atol=1e-14)
    # graph mode
    with kn.Graph().as_default():
        ps = [kn.placeholder(kn.float64, a.shape, f"a{i}") for i, a in enumerate(arrays)]
        (g,) = kn.grad(loss(kn, *ps), [ps[k]])
        np.testing.assert_allclose(kn.function(ps, g)(*arrays), want, rtol=1e-10, atol=1e-14)
    # finite differences where the function is smooth (x = 0 of xlogy is PyTorch's convention)
    smooth = arrays[0] != 0 if name.startswith("xlog") else np.ones(4, bool)
    step = np.zeros(4)
    for i in np.flatnonzero(smooth):
        step[:] = 0
        step[i] = 1e-6
        plus = [a + step if j == k else a for j, a in enumerate(arrays)]
        minus = [a - step if j == k else a for j, a in enumerate(arrays)]
        numeric = (loss(kn, *map(kn.tensor, plus)).item()
                   - loss(kn, *map(kn.tensor, minus)).item()) / 2e-6  # fmt: skip
        assert math.isclose(want[i], numeric, rel_tol=1e-5, abs_tol=1e-7), (i, want, numeric)


@pytest.mark.parametrize("name", ["zeta", "gammainc", "gammaincc"])
def test_no_derivative_in_the_first_input_as_torch(name):
    a, b = np.array([2.0, 3.0]), np.array([1.0, 2.0])
    t = torch.tensor(a, requires_grad=True)
    with pytest.raises(NotImplementedError):
        getattr(torch.special, name)(t, torch.tensor(b)).sum().backward()
    x = kn.tensor(a, requires_grad=True)
    y = getattr(kn.special, name)(x, kn.tensor(b)).sum()
    with pytest.raises(kn.AutogradError, match=f"derivative of {name} with respect to its first"):
        y.backward()
    with kn.Graph().as_default():
        p = kn.placeholder(kn.float64, (2,), "p")
        with pytest.raises(kn.AutogradError, match=f"op {name}, created at test_special_more"):
            kn.grad(getattr(kn.special, name)(p, b).sum(), [p])


@pytest.mark.parametrize("name", UNDIFFERENTIATED + POLYNOMIALS)
def test_undifferentiated_results_do_not_require_grad_as_torch(name):
    a = np.array([0.5, 1.5])
    args = (lambda lib, x: (x, 3)) if "polynomial" in name else (lambda lib, x: (x,))
    t = torch.tensor(a, requires_grad=True)
    assert not getattr(torch.special, name)(*args(torch, t)).requires_grad
    x = kn.tensor(a, requires_grad=True)
    y = getattr(kn.special, name)(*args(kn, x))
    assert not y.requires_grad and y.grad_fn is None
    with pytest.raises(kn.AutogradError):
        y.sum().backward()
    # beside a differentiable term: no contribution, as PyTorch's
    (x * 2 + y).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]
    with kn.Graph().as_default():  # graph mode: no path, so the disconnected rule applies
        p = kn.placeholder(kn.float64, (2,), "p")
        (g,) = kn.grad((getattr(kn.special, name)(*args(kn, p)) + p).sum(), [p])
        assert kn.function([p], g)(a).tolist() == [1.0, 1.0]


def test_eager_graph_and_compiled_agree():
    x = np.array([0.25, 0.75, 1.5, 3.0])

    def f(v):
        s = kn.special
        return (s.i0e(v) + s.ndtr(v) * s.log_ndtr(-v) + s.bessel_j1(v) + s.zeta(v + 1.5, 2.0)
                + s.gammaincc(v, 1.0) + s.chebyshev_polynomial_u(v / 4, 6) + s.entr(v)
                + s.multigammaln(v + 2, 3) + s.xlog1py(v, v) + s.airy_ai(-v))  # fmt: skip

    eager = f(kn.tensor(x)).numpy()
    compiled = kn.compile(f)(kn.tensor(x)).numpy()
    with kn.Graph().as_default():
        p = kn.placeholder(kn.float64, (4,), "x")
        graph = kn.function([p], f(p))(x)
    np.testing.assert_array_equal(eager, compiled)
    np.testing.assert_array_equal(eager, graph)
    t = torch.tensor(x)
    s = torch.special
    want = (s.i0e(t) + s.ndtr(t) * s.log_ndtr(-t) + s.bessel_j1(t) + s.zeta(t + 1.5, 2.0)
            + s.gammaincc(t, torch.tensor(1.0, dtype=torch.float64))
            + s.chebyshev_polynomial_u(t / 4, 6) + s.entr(t) + s.multigammaln(t + 2, 3)
            + s.xlog1py(t, t) + s.airy_ai(-t))  # fmt: skip
    np.testing.assert_allclose(eager, want.numpy(), rtol=1e-6)


def test_multigammaln_and_mvlgamma():
    x = np.array([2.2, 3.5, 7.0])
    for dtype in (np.float32, np.float64):
        for p in (1, 2, 5):
            ours = kn.special.multigammaln(kn.tensor(x.astype(dtype)), p)
            theirs = torch.special.multigammaln(torch.tensor(x.astype(dtype)), p)
            assert str(ours.dtype) == str(theirs.dtype).replace("torch.", "kiln.")
            rtol = 2e-6 if dtype == np.float32 else 1e-12
            np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=rtol)
            np.testing.assert_allclose(ours.numpy(), sc.multigammaln(x, p) if p == 1 else
                                       [sc.multigammaln(v, p) for v in x], rtol=rtol)  # fmt: skip
    np.testing.assert_array_equal(kn.mvlgamma(kn.tensor(x), 3).numpy(),
                                  kn.tensor(x).mvlgamma(3).numpy())  # fmt: skip
    t = kn.tensor(x.copy())
    t.mvlgamma_(2)
    np.testing.assert_allclose(t.numpy(), torch.tensor(x).mvlgamma(2).numpy(), rtol=1e-12)
    with pytest.raises(UsageError, match="p has to be greater than or equal to 1"):
        kn.special.multigammaln(kn.tensor(x), 0)
    a = kn.tensor(x, requires_grad=True)
    b = torch.tensor(x, requires_grad=True)
    kn.special.multigammaln(a, 3).sum().backward()
    torch.special.multigammaln(b, 3).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-12)


def test_methods_and_in_place_forms_match_torch():
    a, b = np.array([0.5, 2.0, 3.5]), np.array([1.0, 0.25, 4.0])
    for name in ("igamma", "igammac", "xlogy"):
        want = getattr(torch.tensor(a), name)(torch.tensor(b)).numpy()
        np.testing.assert_allclose(getattr(kn.tensor(a), name)(kn.tensor(b)).numpy(), want,
                                   rtol=1e-12)  # fmt: skip
        np.testing.assert_allclose(getattr(kn, name)(kn.tensor(a), kn.tensor(b)).numpy(), want,
                                   rtol=1e-12)  # fmt: skip
        t = kn.tensor(a.copy())
        getattr(t, f"{name}_")(kn.tensor(b))
        np.testing.assert_allclose(t.numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(kn.special.i1e(kn.tensor(a), out=kn.empty(3, dtype=kn.float64))
                               .numpy(), torch.special.i1e(torch.tensor(a)).numpy(),
                               rtol=1e-12)  # fmt: skip
    out = kn.empty(3, dtype=kn.float64)
    kn.special.bessel_j0(kn.tensor(a), out=out)
    np.testing.assert_allclose(out.numpy(), sc.j0(a), rtol=1e-15)


def test_erfc_is_accurate_in_the_tail_as_torch():
    x = np.array([0.0, 2.5, 5.0, 7.0, 10.0, 26.0, -3.0])
    for dtype in (np.float32, np.float64):
        ours = kn.erfc(kn.tensor(x.astype(dtype))).numpy()
        theirs = torch.erfc(torch.tensor(x.astype(dtype))).numpy()
        np.testing.assert_allclose(ours, theirs, rtol=2e-6 if dtype == np.float32 else 1e-13)
    assert kn.erfc(kn.tensor(7.0, dtype=kn.float64)).item() == pytest.approx(4.1838256e-23)


def test_airy_ai_refuses_the_simulated_gpu_with_a_clear_error(monkeypatch):
    fake_cupy = pytest.importorskip("fake_cupy")
    fake_cupy.install(monkeypatch)
    fake_cupy.reset_kiln()
    try:
        x = kn.tensor([0.5, 1.0], device="cuda")
        with pytest.raises(kn.DeviceError, match="airy_ai has no GPU kernel"):
            kn.special.airy_ai(x)
        got = kn.special.bessel_j0(x)  # CuPy has j0: computed there
        assert got.device == "cuda:0"
        np.testing.assert_allclose(got.cpu().numpy(), sc.j0([0.5, 1.0]).astype(np.float32))
    finally:
        fake_cupy.reset_kiln()
