"""Complex matrices in kiln's factorizations: `svd`, `svdvals`, `eigh`, `eigvalsh`,
`cholesky`, `qr`, `pinv` and `solve_triangular` (and the older names `kn.svd`, `kn.qr`,
`kn.pinverse`, `kn.cholesky` and their Tensor methods), forward and gradient, in eager mode,
graph mode (a placeholder run by a Session) and under kn.compile; complex `logaddexp`; and
`unique` refusing complex values.

Expected values: the forward results from NumPy (LAPACK) where torch is missing; results and
gradients from PyTorch 2.13 (the reference) for the same inputs and the same real loss
(PyTorch's convention: the conjugate Wirtinger derivative); kiln's complex gradcheck against
central differences. Singular vectors and eigenvectors are defined up to one phase each
(LAPACK's choice): they are compared after fixing each one's phase, and the losses read them
only through phase-invariant quantities (|v|², V diag(c) Vᴴ, U Vh)."""

import numpy as np
import pytest

import kiln as kn
from kiln.errors import UnsupportedDTypeError

try:
    import torch
except ImportError:  # the NumPy checks still run
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="needs torch (the reference)")

RNG = np.random.default_rng(11)


def _complex(*shape):
    return RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)


def _hermitian_pd(n, batch=()):
    b = _complex(*batch, n, n)
    return b @ np.swapaxes(b, -1, -2).conj() + n * np.eye(n)


TALL, WIDE, SQUARE = _complex(2, 4, 3), _complex(3, 4), _complex(3, 3)
HPD = _hermitian_pd(3, (2,))
HERM = SQUARE + SQUARE.conj().T  # Hermitian, indefinite
C = _complex(4, 4)  # the losses' complex weights
W = RNG.standard_normal(4)


def _fixed(u, vh=None):
    """Each column of `u` (and row of `vh`) multiplied by the phase that makes its entry of
    largest modulus (in `u`) real and positive: the same vectors, whatever LAPACK's phase."""
    idx = np.argmax(np.abs(u), axis=-2)[..., None, :]
    pick = np.take_along_axis(u, idx, axis=-2)
    phase = pick.conj() / np.abs(pick)
    return u * phase if vh is None else (u * phase, vh * np.swapaxes(phase, -1, -2).conj())


# -- the forward results, against NumPy (no torch needed) --------------------------------------


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_forward_matches_numpy_lapack(dtype):
    tol = dict(rtol=2e-4, atol=2e-5) if dtype == np.complex64 else dict(rtol=1e-10, atol=1e-12)
    real = np.float32 if dtype == np.complex64 else np.float64
    a, hpd, herm, wide = (x.astype(dtype) for x in (TALL, HPD, HERM, WIDE))
    for full in (True, False):
        u, s, vh = kn.linalg.svd(kn.tensor(a), full_matrices=full)
        nu, ns, nvh = np.linalg.svd(a, full_matrices=full)
        assert u.dtype == dtype and s.dtype == real and u.shape == nu.shape
        np.testing.assert_allclose(s.numpy(), ns, **tol)
        k = 3  # the phases of the first k vectors; the others span the complement
        got, want = (
            _fixed(u.numpy()[..., :k], vh.numpy()[..., :k, :]),
            _fixed(nu[..., :k], nvh[..., :k, :]),
        )
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, **tol)
        uhu = np.swapaxes(u.numpy(), -1, -2).conj() @ u.numpy()  # orthonormal columns
        np.testing.assert_allclose(uhu, np.broadcast_to(np.eye(u.shape[-1]), uhu.shape), **tol)
    np.testing.assert_allclose(
        kn.linalg.svdvals(kn.tensor(wide)).numpy(), np.linalg.svd(wide, compute_uv=False), **tol
    )
    for uplo in ("L", "U"):
        lam, v = kn.linalg.eigh(kn.tensor(wide[:, :3]), UPLO=uplo)  # reads one triangle only
        nlam, nv = np.linalg.eigh(wide[:, :3], UPLO=uplo)
        assert lam.dtype == real and v.dtype == dtype
        np.testing.assert_allclose(lam.numpy(), nlam, **tol)
        np.testing.assert_allclose(_fixed(v.numpy()), _fixed(nv), **tol)
        np.testing.assert_allclose(
            kn.linalg.eigvalsh(kn.tensor(wide[:, :3]), UPLO=uplo).numpy(), nlam, **tol
        )
    lower = np.linalg.cholesky(hpd)
    np.testing.assert_allclose(kn.linalg.cholesky(kn.tensor(hpd)).numpy(), lower, **tol)
    upper = kn.linalg.cholesky(kn.tensor(hpd), upper=True).numpy()
    np.testing.assert_allclose(upper, np.swapaxes(lower, -1, -2).conj(), **tol)  # Lᴴ
    for mode in ("reduced", "complete"):
        q, r = kn.linalg.qr(kn.tensor(a), mode=mode)
        nq, nr = np.linalg.qr(a, mode=mode)
        np.testing.assert_allclose(q.numpy(), nq, **tol)  # R's real diagonal fixes the phases
        np.testing.assert_allclose(r.numpy(), nr, **tol)
    assert kn.linalg.qr(kn.tensor(a), mode="r").Q.shape == (0,)
    np.testing.assert_allclose(kn.linalg.pinv(kn.tensor(a)).numpy(), np.linalg.pinv(a), **tol)
    np.testing.assert_allclose(
        kn.linalg.pinv(kn.tensor(herm), hermitian=True).numpy(),
        np.linalg.pinv(herm, hermitian=True),
        **tol,
    )


def test_pinv_tolerances_cut_small_singular_values_as_numpy():
    u, _, vh = np.linalg.svd(_complex(4, 4))
    a = (u * np.array([3.0, 1.0, 1e-3, 1e-9])) @ vh  # singular values 3, 1, 1e-3, 1e-9
    for kwargs, rcond in (
        ({}, 4 * np.finfo(np.float64).eps),
        ({"rtol": 1e-2}, 1e-2),
        ({"atol": 0.5}, 0.5 / 3),
    ):
        want = np.linalg.pinv(a, rcond=rcond)
        np.testing.assert_allclose(kn.linalg.pinv(kn.tensor(a), **kwargs).numpy(), want, atol=1e-8)
    herm = (u * np.array([3.0, -1.0, 1e-3, 0.0])) @ u.conj().T
    got = kn.linalg.pinv(kn.tensor(herm), hermitian=True, rtol=1e-2).numpy()
    np.testing.assert_allclose(got, np.linalg.pinv(herm, rcond=1e-2, hermitian=True), atol=1e-10)
    tensor_tol = kn.linalg.pinv(kn.tensor(a), atol=kn.tensor(0.5))  # the tensor-tolerance path
    np.testing.assert_allclose(tensor_tol.numpy(), np.linalg.pinv(a, rcond=0.5 / 3), atol=1e-10)


def test_solve_triangular_of_complex_matrices_matches_scipy():
    from scipy.linalg import solve_triangular

    a, b = np.triu(SQUARE) + 3 * np.eye(3), _complex(3, 2)
    got = kn.linalg.solve_triangular(kn.tensor(a), kn.tensor(b), upper=True).numpy()
    np.testing.assert_allclose(got, solve_triangular(a, b, lower=False), rtol=1e-12)


def test_complex_gradients_pass_kilns_gradcheck():
    """Central differences in each real and imaginary part (complex128, small matrices).
    eigh and cholesky read one triangle, their gradients are those of a Hermitian input
    (PyTorch's): they are checked through A + Aᴴ."""
    cases = [
        (lambda a: _svd_loss(kn, a, False), TALL[0]),
        (lambda a: _svd_loss(kn, a, True), WIDE),
        (lambda a: _eigh_loss(kn, a + a.mH, "U"), HERM),  # the gradient of a Hermitian input
        (lambda a: kn.linalg.cholesky(a + a.mH) * kn.tensor(C[:3, :3]), HPD[0]),
        (lambda a: kn.linalg.qr(a).Q, WIDE),
        (lambda a: kn.linalg.qr(a).R, TALL[0]),
        (lambda a: kn.linalg.pinv(a), TALL[0]),
        (
            lambda a: kn.linalg.solve_triangular(a, kn.tensor(C[:3, :2]), upper=True),
            np.triu(SQUARE) + 3 * np.eye(3),
        ),
    ]
    for fn, a in cases:
        assert kn.autograd.gradcheck(fn, (kn.tensor(a, requires_grad=True),), atol=1e-6)


# -- against PyTorch: results and gradients, every mode ----------------------------------------


def _svd_loss(lib, a, full):
    """Singular values, and the vectors through |U|², |Vh|² and U Vh (phase-invariant)."""
    u, s, vh = lib.linalg.svd(a, full_matrices=full)
    k = s.shape[-1]
    u, vh = u[..., :k], vh[..., :k, :]
    c = _const(lib, a, C[: a.shape[-2], : a.shape[-1]])
    return (
        (s * _const(lib, a, W[:k])).sum()
        + ((u.abs() ** 2) * _const(lib, a, C[: a.shape[-2], :k].real)).sum()
        + (vh.abs() ** 2).sum(-2).mul(_const(lib, a, W[: a.shape[-1]])).sum()
        + ((u @ vh) * c).real.sum()
    )


def _eigh_loss(lib, a, uplo):
    lam, v = lib.linalg.eigh(a, UPLO=uplo)
    n = a.shape[-1]
    c = _const(lib, a, C[:n, :n])
    vcv = (v * _const(lib, a, W[:n] + 2.0)) @ v.mH
    return (
        (lam * _const(lib, a, W[:n])).sum() + ((v.abs() ** 2) * c.real).sum() + (vcv * c).real.sum()
    )


def _const(lib, like, value):
    if lib is torch:
        return torch.tensor(value)
    return kn.constant(value) if isinstance(like, kn.Symbol) else kn.tensor(value)


def _product_loss(get):
    """A loss reading every entry of the (phase-free) results `get` returns."""

    def loss(lib, a):
        total = 0
        for x in get(lib, a):
            weight = _const(
                lib, a, C[: x.shape[-2], : x.shape[-1]] if x.ndim > 1 else W[: x.shape[-1]]
            )
            total = total + (x * weight).real.sum()
        return total

    return loss


# name -> (input, the loss of lib (torch or kiln) and the input)
GRAD_CASES = {
    "svd-full-tall": (TALL, lambda lib, a: _svd_loss(lib, a, True)),
    "svd-reduced-wide": (WIDE, lambda lib, a: _svd_loss(lib, a, False)),
    "svdvals": (WIDE, _product_loss(lambda lib, a: [lib.linalg.svdvals(a)])),
    "eigh-L": (HPD, lambda lib, a: _eigh_loss(lib, a, "L")),
    "eigh-U": (HERM, lambda lib, a: _eigh_loss(lib, a, "U")),
    "eigvalsh": (HERM, _product_loss(lambda lib, a: [lib.linalg.eigvalsh(a, UPLO="U")])),
    "cholesky": (HPD, _product_loss(lambda lib, a: [lib.linalg.cholesky(a)])),
    "cholesky-upper": (HPD, _product_loss(lambda lib, a: [lib.linalg.cholesky(a, upper=True)])),
    "qr-reduced-tall": (TALL, _product_loss(lambda lib, a: list(lib.linalg.qr(a)))),
    "qr-complete-wide": (
        WIDE,
        _product_loss(lambda lib, a: list(lib.linalg.qr(a, mode="complete"))),
    ),
    "pinv-tall": (TALL, _product_loss(lambda lib, a: [lib.linalg.pinv(a)])),
    "pinv-hermitian": (HERM, _product_loss(lambda lib, a: [lib.linalg.pinv(a, hermitian=True)])),
    "pinv-rtol": (WIDE, _product_loss(lambda lib, a: [lib.linalg.pinv(a, rtol=1e-3)])),
}


@needs_torch
@pytest.mark.parametrize("name", GRAD_CASES)
def test_loss_and_gradient_match_pytorch_in_every_mode(name):
    check_in_every_mode(*GRAD_CASES[name])


def check_in_every_mode(a, loss):
    """`loss(lib, a)` (a real loss of a complex128 matrix) and its gradient as PyTorch's,
    eagerly, under kn.compile and in a Session (tests/test_complex_linalg_more.py too)."""
    import torch

    at = torch.tensor(a, requires_grad=True)
    want = loss(torch, at)
    want.backward()
    want, want_grad = want.item(), at.grad.numpy()

    def check(value, grad):
        np.testing.assert_allclose(value, want, rtol=1e-10)
        assert grad.dtype == np.complex128
        np.testing.assert_allclose(grad, want_grad, rtol=1e-8, atol=1e-10)

    for run in (lambda x: loss(kn, x), kn.compile(lambda x: loss(kn, x))):
        x = kn.tensor(a, requires_grad=True)
        total = run(x)
        total.backward()
        check(total.item(), x.grad.numpy())
    with kn.Graph().as_default() as g:
        p = kn.placeholder(kn.complex128, a.shape)
        total = loss(kn, p)
        (grad,) = kn.grad(total, [p])
    with kn.Session(graph=g) as sess:
        check(*sess.run([total, grad], {p: a}))


@needs_torch
def test_complex64_results_match_pytorch_and_keep_their_dtypes():
    a, hpd = TALL.astype(np.complex64), HPD.astype(np.complex64)
    tol = dict(rtol=1e-4, atol=1e-5)
    for fn in (
        lambda lib, x: lib.linalg.svdvals(x),
        lambda lib, x: lib.linalg.pinv(x),
        lambda lib, x: lib.linalg.qr(x).R,
        lambda lib, x: lib.linalg.eigvalsh(x @ x.mH),
    ):
        got, want = fn(kn, kn.tensor(a)), fn(torch, torch.tensor(a))
        assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
        np.testing.assert_allclose(got.numpy(), want.numpy(), **tol)
    got = kn.linalg.cholesky(kn.tensor(hpd), upper=True)
    np.testing.assert_allclose(
        got.numpy(), torch.linalg.cholesky(torch.tensor(hpd), upper=True).numpy(), **tol
    )
    x = kn.tensor(a, requires_grad=True)  # a complex64 gradient stays complex64
    kn.linalg.svdvals(x).sum().backward()
    assert x.grad.dtype == kn.complex64
    with kn.Graph().as_default() as g:  # graph mode: the same dtypes and values
        p = kn.placeholder(kn.complex64, a.shape)
        u, s, vh = kn.linalg.svd(p, full_matrices=False)
        lam = kn.linalg.eigvalsh(p[0] @ p[0].mH, UPLO="U")
        assert (u.dtype, s.dtype, lam.dtype) == (kn.complex64, kn.float32, kn.float32)
    with kn.Session(graph=g) as sess:
        got_s, got_lam = sess.run([s, lam], {p: a})
    np.testing.assert_allclose(got_s, torch.linalg.svdvals(torch.tensor(a)).numpy(), **tol)
    want_lam = torch.linalg.eigvalsh(torch.tensor(a[0] @ a[0].conj().T), UPLO="U").numpy()
    np.testing.assert_allclose(got_lam, want_lam, **tol)


@needs_torch
@pytest.mark.filterwarnings("ignore:torch.cholesky is deprecated")
def test_older_names_and_methods_match_pytorch():
    a, hpd = torch.tensor(TALL[0]), torch.tensor(HPD[0])
    ka, khpd = kn.tensor(TALL[0]), kn.tensor(HPD[0])
    tol = dict(rtol=1e-10, atol=1e-12)
    for some in (True, False):  # torch.svd gives V (A = U diag(S) Vᴴ)
        u, s, v = kn.svd(ka, some=some)
        tu, ts, tv = (t.resolve_conj() for t in torch.svd(a, some=some))
        np.testing.assert_allclose(s.numpy(), ts.numpy(), **tol)
        got = _fixed(u.numpy()[:, :3], v.numpy()[:, :3].conj().T)
        want = _fixed(tu.numpy()[:, :3], tv.numpy()[:, :3].conj().T)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, **tol)
    for got, want in (
        (ka.svd().S, a.svd().S),
        (kn.qr(ka).R, torch.qr(a).R),
        (ka.qr(some=False).Q, a.qr(some=False).Q),
        (kn.pinverse(ka), torch.pinverse(a)),
        (ka.pinverse(), a.pinverse()),
        (kn.cholesky(khpd, True), torch.cholesky(hpd, True)),
        (khpd.cholesky(), hpd.cholesky()),
        (kn.linalg.cholesky_ex(khpd, upper=True).L, torch.linalg.cholesky_ex(hpd, upper=True).L),
    ):
        np.testing.assert_allclose(got.numpy(), want.numpy(), **tol)


@needs_torch
@pytest.mark.parametrize("op", ["svd", "eigh", "eig"])
def test_a_loss_of_the_vectors_phases_raises_as_pytorch(op):
    """The sum of a vector's entries (not their moduli) depends on LAPACK's phase: PyTorch
    refuses its gradient (RuntimeError), and so does kiln (AutogradError, a RuntimeError), in
    every mode; the moduli get PyTorch's gradient."""
    a = {"svd": TALL[0], "eigh": HERM, "eig": SQUARE}[op]

    def vector(lib, x):
        vectors = {"svd": lambda: lib.linalg.svd(x)[0], "eigh": lambda: lib.linalg.eigh(x)[1],
                   "eig": lambda: lib.linalg.eig(x)[1]}[op]()  # fmt: skip
        return vectors[:, 1]  # the second vector

    with pytest.raises(RuntimeError, match="e\\^{i phi}"):
        vector(torch, torch.tensor(a, requires_grad=True)).sum().real.backward()
    for run in (lambda x: vector(kn, x).sum().real, kn.compile(lambda x: vector(kn, x).sum().real)):
        with pytest.raises(kn.AutogradError, match=f"linalg.{op}: the .* phase"):
            run(kn.tensor(a, requires_grad=True)).backward()
    with kn.Graph().as_default() as g:
        p = kn.placeholder(kn.complex128, a.shape)
        (grad,) = kn.grad(vector(kn, p).sum().real, [p])
    with kn.Session(graph=g) as sess, pytest.raises(kn.AutogradError, match="phase"):
        sess.run(grad, {p: a})
    at, x = torch.tensor(a, requires_grad=True), kn.tensor(a, requires_grad=True)
    vector(torch, at).abs().sum().backward()
    vector(kn, x).abs().sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), at.grad.numpy(), rtol=1e-8, atol=1e-12)


@needs_torch
@pytest.mark.filterwarnings("ignore:torch.triangular_solve is deprecated")
def test_functions_built_on_the_factorizations_take_complex_matrices_as_pytorch():
    """cholesky_solve, cholesky_inverse and householder_product (conjugate transposes),
    lstsq (its residuals |r|², real), matrix_rank, the 2- and nuclear norms and cond."""
    a, b, hpd = TALL[0], _complex(4, 2), HPD[0]
    lower = np.linalg.cholesky(hpd)
    cases = {
        "cholesky_solve": lambda lib, t: lib.cholesky_solve(t(b[:3]), t(lower)),
        "cholesky_solve-upper": lambda lib, t: lib.cholesky_solve(
            t(b[:3]), t(lower.conj().T), upper=True
        ),
        "cholesky_inverse": lambda lib, t: lib.cholesky_inverse(t(lower)),
        "triangular_solve": lambda lib, t: (
            lib.triangular_solve(t(b[:3]), t(np.triu(hpd)), transpose=True).solution
        ),
        "lstsq": lambda lib, t: lib.linalg.lstsq(t(a), t(b)).solution,
        "lstsq-gelsd": lambda lib, t: lib.linalg.lstsq(t(a), t(b), driver="gelsd").residuals,
        "householder_product": lambda lib, t: lib.linalg.householder_product(t(a), t(a[0])),
        "matrix_rank": lambda lib, t: lib.linalg.matrix_rank(t(hpd), hermitian=True),
        "norm-2": lambda lib, t: lib.linalg.matrix_norm(t(a), ord=2),
        "norm-nuc": lambda lib, t: lib.linalg.matrix_norm(t(a), ord="nuc"),
        "cond": lambda lib, t: lib.linalg.cond(t(a)),
    }
    for name, fn in cases.items():
        got, want = fn(kn, kn.tensor).numpy(), fn(torch, torch.tensor).numpy()
        assert got.dtype == want.dtype, name
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12, err_msg=name)


# -- logaddexp and unique ----------------------------------------------------------------------


@needs_torch
def test_complex_logaddexp_matches_pytorch_values_and_gradients():
    inf, nan = np.inf, np.nan
    a = np.array(
        [
            1 + 2j,
            3 - 1j,
            1 + 2j,
            2 + 3j,
            -inf + 1j,
            inf + 1j,
            -inf + 1j,
            1e3 + 1j,
            complex(nan, 1),
            inf,
        ]
    )
    b = np.array(
        [
            0.5 + 1j,
            -2 + 0.3j,
            1 - 2.5j,
            2 - 3j,
            -inf - 2j,
            inf - 2j,
            2 + 1j,
            -1e3 - 2j,
            1 + 1j,
            -inf,
        ]
    )
    want = torch.logaddexp(torch.tensor(a), torch.tensor(b)).numpy()
    for run in (kn.logaddexp, kn.compile(kn.logaddexp)):
        np.testing.assert_allclose(run(kn.tensor(a), kn.tensor(b)).numpy(), want, rtol=1e-14)
    got64 = kn.logaddexp(kn.tensor(a[:4].astype(np.complex64)), kn.tensor(2.0))
    assert got64.dtype == kn.complex64
    want64 = torch.logaddexp(torch.tensor(a[:4].astype(np.complex64)), torch.tensor(2.0))
    np.testing.assert_allclose(got64.numpy(), want64.numpy(), rtol=1e-6)
    x, y = _complex(4) * 3, _complex(4) * 3  # finite, real parts apart: differentiable
    c = C[0]
    tx, ty = torch.tensor(x, requires_grad=True), torch.tensor(y, requires_grad=True)
    (torch.logaddexp(tx, ty) * torch.tensor(c)).real.sum().backward()
    kx, ky = kn.tensor(x, requires_grad=True), kn.tensor(y, requires_grad=True)
    (kn.logaddexp(kx, ky) * kn.tensor(c)).real.sum().backward()
    np.testing.assert_allclose(kx.grad.numpy(), tx.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(ky.grad.numpy(), ty.grad.numpy(), rtol=1e-12)
    assert kn.autograd.gradcheck(
        kn.logaddexp, (kn.tensor(x, requires_grad=True), kn.tensor(y, requires_grad=True))
    )
    with kn.Graph().as_default() as g:
        p, q = kn.placeholder(kn.complex128, (4,)), kn.placeholder(kn.complex128, (4,))
        out = kn.logaddexp(p, q)
    with kn.Session(graph=g) as sess:
        np.testing.assert_allclose(
            sess.run(out, {p: x, q: y}), torch.logaddexp(tx, ty).detach().numpy(), rtol=1e-14
        )


@needs_torch
def test_unique_refuses_complex_values_as_pytorch():
    z = np.array([1 + 1j, 1 + 1j, 2j])
    for call in (
        lambda lib, x: lib.unique(x),
        lambda lib, x: x.unique(dim=0),
        lambda lib, x: lib.unique_consecutive(x),
    ):
        with pytest.raises(NotImplementedError):
            call(torch, torch.tensor(z))
        with pytest.raises(UnsupportedDTypeError, match="unique.* complex dtype complex128"):
            call(kn, kn.tensor(z))
    with kn.Graph().as_default():
        with pytest.raises(UnsupportedDTypeError, match="complex dtype complex64"):
            kn.unique(kn.placeholder(kn.complex64, (3,)))
