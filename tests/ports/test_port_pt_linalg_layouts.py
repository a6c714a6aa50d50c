"""PyTorch's layouts of linalg results (test_linalg.py checks some of them, its users rely on
them through `is_contiguous()`, `view` and `stride()`): LAPACK-backed results (`inv`,
`solve`, `cholesky`, `qr`, `eigh`'s and `eig`'s vectors, `svd`'s U and Vh, `lu_factor`,
`lu_solve`, `solve_triangular`, `cholesky_solve`, `householder_product`, ...) are column-major
in their last two dims; others (eigenvalues, `lu`'s P, L and U, `pinv`, `matrix_exp`, a
solve with `left=False`) are C-ordered. Each result is a tensor of its own (storage offset 0,
not a view of another result), its `grad_fn` named as PyTorch's (also det's, slogdet's, the
vector norm's, cross's, pinv's, matrix_exp's, addmv's, addr's and trace's). Strides are
compared on torch, eager kiln and kiln under `kn.compile`.

Expected values: torch 2.13's strides (the oracle); a dim of size 1 has any stride.
"""

import numpy as np
import pytest
from pt_oracle import MODES

import kiln as kn

RNG = np.random.default_rng(3)
A = RNG.standard_normal((2, 3, 3)) + 3 * np.eye(3)
SPD = A @ np.swapaxes(A, -1, -2)
B = RNG.standard_normal((2, 3, 2))
W = RNG.standard_normal((2, 4, 3))
TAU = RNG.random((2, 3))

CASES = {
    "inv": (lambda L, a: (L.linalg.inv(a), L.inverse(a[0]), L.linalg.inv_ex(a).inverse), A),
    "solve": (
        lambda L, a, b: (
            L.linalg.solve(a, b),
            L.linalg.solve(a[0], b[0, :, 0]),
            L.linalg.solve(a, b[..., 0]),
            L.linalg.solve_ex(a, b).result,
            L.linalg.solve(a, b.mT, left=False),
        ),
        A,
        B,
    ),  # fmt: skip
    "cholesky": (
        lambda L, s: (
            L.linalg.cholesky(s),
            L.linalg.cholesky(s, upper=True),
            L.linalg.cholesky_ex(s).L,
        ),
        SPD,
    ),  # fmt: skip
    "qr": (
        lambda L, w: (*L.linalg.qr(w), *L.linalg.qr(w, mode="complete"), L.linalg.qr(w[0].T).R),
        W,
    ),  # fmt: skip
    "eigh_eig": (
        lambda L, s, a: (
            *L.linalg.eigh(s),
            L.linalg.eigvalsh(s),
            *L.linalg.eig(a),
            L.linalg.eigvals(a),
        ),
        SPD,
        A,
    ),  # fmt: skip
    "svd": (
        lambda L, w: (
            *L.linalg.svd(w),
            *L.linalg.svd(w, full_matrices=False),
            L.linalg.svdvals(w),
            *L.svd(w),
        ),
        W,
    ),  # fmt: skip
    "lu": (
        lambda L, a, b: (
            *L.linalg.lu_factor(a),
            *L.linalg.lu(a),
            L.linalg.lu_solve(*L.linalg.lu_factor(a), b),
            *L.lu_unpack(*L.linalg.lu_factor(a)),
        ),
        A,
        B,
    ),  # fmt: skip
    "triangular": (
        lambda L, a, b: (
            L.linalg.solve_triangular(a.triu(), b, upper=True),
            L.linalg.solve_triangular(a.tril(), b.mT, upper=False, left=False),
            L.cholesky_solve(b, a.tril()),
            L.cholesky_inverse(a.tril()),
        ),
        A,
        B,
    ),  # fmt: skip
    "householder": (lambda L, w, t: (L.linalg.householder_product(w, t),), W, TAU),
    # (lstsq's X of a tall A is a view of max(m, n) rows in PyTorch: wide and square A here)
    "lstsq": (
        lambda L, a, w: (
            L.linalg.lstsq(w.mT, a[..., :2]).solution,
            L.linalg.lstsq(a, w.mT).solution,
        ),
        A,
        W,
    ),  # fmt: skip
    "others": (
        lambda L, a, w: (
            L.linalg.pinv(w),
            L.linalg.matrix_exp(a),
            L.linalg.matrix_power(a, -1),
            L.linalg.matrix_power(a, 3),
            L.linalg.inv(a) * 2,
        ),
        A,
        W,
    ),  # fmt: skip
}


def strides(t):
    """(shape, strides of the dims of size > 1, storage offset) of each result."""
    return [(tuple(x.shape), tuple(s for s, d in zip(x.stride(), x.shape) if d > 1),
             x.storage_offset()) for x in t]  # fmt: skip


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_layouts_as_torch(torch, name, mode):
    fn, *inputs = CASES[name]
    want = strides(fn(torch, *(torch.tensor(x) for x in inputs)))
    run = (lambda *a: fn(kn, *a)) if mode == "eager" else kn.compile(lambda *a: fn(kn, *a))
    assert strides(run(*(kn.tensor(x) for x in inputs))) == want


GRAD_FN_CASES = {
    "LinalgInvExBackward0": lambda L, a, b, s, w: L.linalg.inv(a),
    "LinalgSolveExBackward0": lambda L, a, b, s, w: L.linalg.solve(a, b),
    "LinalgCholeskyExBackward0": lambda L, a, b, s, w: L.linalg.cholesky(s, upper=True),
    "LinalgQrBackward0": lambda L, a, b, s, w: L.linalg.qr(w).R,
    "LinalgEighBackward0": lambda L, a, b, s, w: L.linalg.eigh(s).eigenvalues,
    "LinalgSvdBackward0": lambda L, a, b, s, w: L.linalg.svd(w).Vh,
    "LinalgEigBackward0": lambda L, a, b, s, w: L.linalg.eig(a).eigenvectors,
    "LinalgLuFactorExBackward0": lambda L, a, b, s, w: L.linalg.lu_factor(a).LU,
    "LinalgLuBackward0": lambda L, a, b, s, w: L.linalg.lu(a).L,
    "LinalgLuSolveBackward0": lambda L, a, b, s, w: L.linalg.lu_solve(*L.linalg.lu_factor(a), b),
    "LinalgSolveTriangularBackward0": lambda L, a, b, s, w: L.linalg.solve_triangular(
        a, b, upper=True
    ),
    "CholeskySolveBackward0": lambda L, a, b, s, w: L.cholesky_solve(b, s),
    "CholeskyInverseBackward0": lambda L, a, b, s, w: L.cholesky_inverse(s),
    "LinalgDetBackward0": lambda L, a, b, s, w: L.linalg.det(a),
    "LinalgSlogdetBackward0": lambda L, a, b, s, w: L.linalg.slogdet(a).logabsdet,
    "LinalgVectorNormBackward0": lambda L, a, b, s, w: L.linalg.matrix_norm(a),
    "LinalgCrossBackward0": lambda L, a, b, s, w: L.linalg.cross(a, s),
    "LinalgPinvBackward0": lambda L, a, b, s, w: L.linalg.pinv(w),
    "LinalgMatrixExpBackward0": lambda L, a, b, s, w: L.linalg.matrix_exp(a),
    "AddmvBackward0": lambda L, a, b, s, w: L.addmv(b[0, :, 0], a[0], a[1, 0]),
    "AddrBackward0": lambda L, a, b, s, w: L.addr(a[0], b[0, :, 0], b[1, :, 1]),
    "TraceBackward0": lambda L, a, b, s, w: L.trace(a[0]),
    "LinalgLstsqBackward0": lambda L, a, b, s, w: L.linalg.lstsq(w, w[..., :1]).solution,
    "BaddbmmBackward0": lambda L, a, b, s, w: L.baddbmm(b, a, b, beta=0, alpha=2),
    "AddbmmBackward0": lambda L, a, b, s, w: L.addbmm(b[0], a, b),
    "VdotBackward0": lambda L, a, b, s, w: L.vdot(a[0, 0], a[1, 0]),
}


@pytest.mark.parametrize("name", sorted(GRAD_FN_CASES))
def test_grad_fn_names_as_torch(torch, name):
    # eager only: a compiled function's results share one node (CompiledBackward0)
    for lib in (torch, kn):
        leaves = [lib.tensor(x, requires_grad=True) for x in (A, B, SPD, W)]
        out = GRAD_FN_CASES[name](lib, *leaves)
        assert out.grad_fn.name() == name, (lib.__name__, out.grad_fn.name())
        assert getattr(out, "_base", None) is None


def test_column_major_consequences_as_torch(torch):
    # what users meet: not contiguous (its transpose is), view refused, reshape copies, clone
    # and elementwise results keep the layout, numpy() is Fortran-ordered
    for lib in (torch, kn):
        x = lib.linalg.inv(lib.tensor(A[0]))
        assert not x.is_contiguous() and x.T.is_contiguous(), lib.__name__
        with pytest.raises(RuntimeError):
            x.view(-1)
        assert tuple(x.reshape(-1).shape) == (9,)
        assert x.clone().stride() == (x + 1).stride() == (1, 3), lib.__name__
        assert x.numpy().flags["F_CONTIGUOUS"], lib.__name__
