"""Complex matrices in kiln's LU factorization and matrix exponential: `kn.linalg.lu`,
`lu_factor`, `lu_solve` (every `left`/`adjoint`), `kn.lu_unpack` (and `kn.lu` with its info
codes), `kn.linalg.matrix_exp` and `kn.linalg.inv_ex`, forward and gradient, in eager mode,
graph mode (a placeholder run by a Session) and under kn.compile.

Expected values: the forward results from SciPy (LAPACK's getrf through `scipy.linalg.lu`
and `lu_factor`, `scipy.linalg.expm`) and NumPy's `solve`; gradients from kiln's complex
gradcheck (central differences in each real and imaginary part); and results and gradients
from PyTorch 2.13 (the reference) for the same inputs and the same real loss (PyTorch's
convention: the conjugate Wirtinger derivative). An LU with partial pivoting is unique, so
no phase needs fixing."""

import numpy as np
import pytest
from scipy import linalg as sla
from test_complex_linalg import check_in_every_mode

import kiln as kn

RNG = np.random.default_rng(23)


def _complex(*shape):
    return RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)


SQUARE, TALL, WIDE, BATCH = _complex(3, 3), _complex(4, 3), _complex(3, 4), _complex(2, 3, 3)
B = _complex(3, 2)  # right-hand sides
C = _complex(4, 4)  # the losses' complex weights


def _tol(dtype):
    return dict(rtol=1e-4, atol=1e-5) if dtype == np.complex64 else dict(rtol=1e-10, atol=1e-12)


# -- forward, against SciPy and NumPy (no torch needed) ----------------------------------------


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_forward_matches_scipy(dtype):
    tol = _tol(dtype)
    for a in (SQUARE, TALL, WIDE):
        a = a.astype(dtype)
        p, lower, upper = kn.linalg.lu(kn.tensor(a))
        for got, want in zip((p, lower, upper), sla.lu(a)):
            assert got.numpy().dtype == dtype
            np.testing.assert_allclose(got.numpy(), want, **tol)
    a = BATCH.astype(dtype)
    lu, piv = kn.linalg.lu_factor(kn.tensor(a))
    for i in range(2):
        want_lu, want_piv = sla.lu_factor(a[i])
        np.testing.assert_allclose(lu.numpy()[i], want_lu, **tol)
        assert piv.numpy()[i].tolist() == (want_piv + 1).tolist()  # LAPACK's 1-based pivots
    assert piv.numpy().dtype == np.int32
    p, lower, upper = kn.lu_unpack(lu, piv)
    assert p.numpy().dtype == dtype
    np.testing.assert_allclose((p @ lower @ upper).numpy(), a, **tol)
    b = np.broadcast_to(B.astype(dtype), (2, 3, 2))
    x = kn.linalg.lu_solve(lu, piv, kn.tensor(b)).numpy()
    np.testing.assert_allclose(x, np.linalg.solve(a, b), **tol)
    # adjoint: Aᴴ X = B; left=False: X A = B
    x = kn.linalg.lu_solve(lu, piv, kn.tensor(b), adjoint=True).numpy()
    np.testing.assert_allclose(x, np.linalg.solve(np.swapaxes(a, -1, -2).conj(), b), **tol)
    bt = np.ascontiguousarray(np.swapaxes(b, -1, -2))
    x = kn.linalg.lu_solve(lu, piv, kn.tensor(bt), left=False).numpy()
    np.testing.assert_allclose(x @ a, bt, **tol)
    x = kn.linalg.lu_solve(lu, piv, kn.tensor(bt), left=False, adjoint=True).numpy()
    np.testing.assert_allclose(x @ np.swapaxes(a, -1, -2).conj(), bt, **tol)
    e = kn.linalg.matrix_exp(kn.tensor(a)).numpy()
    assert e.dtype == dtype
    np.testing.assert_allclose(e, np.stack([sla.expm(m) for m in a]), **tol)


def test_complex_gradients_pass_kilns_gradcheck():
    """Central differences in each real and imaginary part (complex128)."""
    w = kn.tensor(C[:3, :3])
    cases = [
        (lambda a: kn.linalg.lu(a).L * w, SQUARE),
        (lambda a: kn.linalg.lu(a).U * w, SQUARE),
        (lambda a: kn.linalg.lu(a).L, TALL),
        (lambda a: kn.linalg.lu(a).U, WIDE),
        (lambda a: kn.linalg.lu_factor(a).LU, SQUARE),
        (
            lambda a: kn.linalg.lu_solve(*kn.linalg.lu_factor(a), kn.tensor(B), adjoint=True),
            SQUARE,
        ),  # fmt: skip
        (lambda a: kn.linalg.matrix_exp(a) * w, SQUARE),
        (lambda a: kn.linalg.inv_ex(a).inverse, SQUARE),
    ]
    for fn, a in cases:
        assert kn.autograd.gradcheck(fn, (kn.tensor(a, requires_grad=True),), atol=1e-6)


# -- against PyTorch: results and gradients, every mode ----------------------------------------


def _const(lib, like, value):
    if lib is kn:
        return kn.tensor(value) if not isinstance(like, kn.Symbol) else kn.constant(value)
    return lib.tensor(value)


def _product_loss(get):
    """A real loss reading every entry of the results `get` returns."""

    def loss(lib, a):
        total = 0
        for x in get(lib, a):
            total = total + (x * _const(lib, a, C[: x.shape[-2], : x.shape[-1]])).real.sum()
        return total

    return loss


def _lu_solve(left, adjoint):
    def get(lib, a):
        lu, piv = lib.linalg.lu_factor(a)
        b = B if left else np.ascontiguousarray(B.T)
        return [lib.linalg.lu_solve(lu, piv, _const(lib, a, b), left=left, adjoint=adjoint)]

    return get


GRAD_CASES = {
    "lu-square": (SQUARE, _product_loss(lambda lib, a: list(lib.linalg.lu(a))[1:])),
    "lu-tall": (TALL, _product_loss(lambda lib, a: list(lib.linalg.lu(a))[1:])),
    "lu-wide": (WIDE, _product_loss(lambda lib, a: list(lib.linalg.lu(a))[1:])),
    "lu_factor": (SQUARE, _product_loss(lambda lib, a: [lib.linalg.lu_factor(a).LU])),
    "lu_unpack": (
        WIDE,
        _product_loss(lambda lib, a: list(lib.lu_unpack(*lib.linalg.lu_factor(a)))[1:]),
    ),
    "matrix_exp": (SQUARE, _product_loss(lambda lib, a: [lib.linalg.matrix_exp(a)])),
    "matrix_exp-abs": (SQUARE, lambda lib, a: lib.linalg.matrix_exp(a).abs().sum()),
    "inv_ex": (SQUARE, _product_loss(lambda lib, a: [lib.linalg.inv_ex(a).inverse])),
}
GRAD_CASES |= {
    f"lu_solve-left={left}-adjoint={adjoint}": (SQUARE, _product_loss(_lu_solve(left, adjoint)))
    for left in (True, False)
    for adjoint in (False, True)
}


@pytest.mark.parametrize("name", GRAD_CASES)
def test_loss_and_gradient_match_pytorch_in_every_mode(name):
    pytest.importorskip("torch")
    check_in_every_mode(*GRAD_CASES[name])


def test_complex64_results_match_pytorch_and_keep_their_dtypes():
    torch = pytest.importorskip("torch")
    a = BATCH.astype(np.complex64)
    for fn in (
        lambda lib, x: lib.linalg.lu(x).U,
        lambda lib, x: lib.linalg.lu(x).P,
        lambda lib, x: lib.linalg.lu_factor(x).LU,
        lambda lib, x: lib.linalg.lu_factor(x).pivots,
        lambda lib, x: lib.linalg.matrix_exp(x),
    ):
        got, want = fn(kn, kn.tensor(a)), fn(torch, torch.tensor(a))
        assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=1e-5)


def test_singular_matrices_report_their_first_zero_pivot():
    """A complex singular matrix (second row 2 x the first): by hand, partial pivoting takes
    row 2 first and U's second pivot is 2 - (1 + i) / (2 + 2i) * 4 = 0, so getrf's info is 2;
    inv_ex's inverse is NaN in both parts (PyTorch's)."""
    a = np.array([[1 + 1j, 2], [2 + 2j, 4]])
    for dtype in (np.complex64, np.complex128):
        x = kn.tensor(a.astype(dtype))
        assert int(kn.lu(x, get_infos=True)[2]) == 2
        inverse, info = kn.linalg.inv_ex(x)
        assert int(info) == 2 and inverse.numpy().dtype == dtype
        assert np.isnan(inverse.numpy().real).all() and np.isnan(inverse.numpy().imag).all()
