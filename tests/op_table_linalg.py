"""Op-table rows for kn.linalg's factorizations and solvers (kiln/ops/linalg_factor.py).

References: NumPy's and SciPy's functions in float64 (the same LAPACK routines: geqrf, syevd,
gesdd, getrf, trtrs, gelsy, potrf), with hand-worked values for the info codes. The rows'
outputs do not depend on the sign choices of Q's columns, eigenvectors or singular vectors
(Q*Q, V*V, R*R, products of factors), so a GPU's solver with other signs gives the same values,
and the finite-difference gradient test (test_op_grads.py) differentiates smooth functions.
The matrices have distinct eigenvalues and singular values (random), where the gradients are
finite; eigh's inputs are symmetrized first (it reads one triangle and its gradient is the
symmetric one, as PyTorch's).
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla
from op_case import OpCase

import kiln as kn

CASES: list[OpCase] = []
TOL = {"rtol": 1e-4, "atol": 1e-5}  # float32 through a factorization; float64 is far closer
# Rows of the _ex forms and lstsq return their info or rank beside the factor (made first):
# the ONNX test expects the first node without an ONNX form to be the one export names.


def rows(*cases):
    CASES.extend(cases)


def normal(*shapes, scale=1.0, shift=0.0):
    """`make_args`: standard normal arrays (times `scale`, plus `shift` times the identity
    on the first when it is square)."""

    def make(rng, dtype):
        out = []
        for k, shape in enumerate(shapes):
            a = rng.standard_normal(shape) * scale
            if k == 0 and shift and shape[-1] == shape[-2]:
                a = a + shift * np.eye(shape[-1])
            out.append(np.asarray(a, dtype))
        return out

    return make


def given(*arrays):
    return lambda rng, dtype: [np.array(a, dtype) for a in arrays]


def f64(ref):
    """`ref` run in float64, its float results returned in the input's dtype."""

    def run(*arrays):
        out = ref(*(a.astype(np.float64) for a in arrays))
        cast = (lambda r: np.asarray(r).astype(arrays[0].dtype) if np.asarray(r).dtype.kind == "f"
                else np.asarray(r))  # fmt: skip
        return tuple(cast(r) for r in out) if isinstance(out, tuple) else cast(out)

    return run


def sym(a):
    return (a + np.swapaxes(a, -1, -2)) / 2


def mt(a):
    return np.swapaxes(a, -1, -2)


# -- qr: Q*Q and R*R (sign-free), Q @ R --------------------------------------------------------


def _qr_fn(mode):
    def fn(a):
        q, r = kn.linalg.qr(a, mode)
        return q * q, r * r, q @ r

    return fn


def _qr_ref(mode):
    def ref(a):
        q, r = np.linalg.qr(a, mode=mode)
        return q * q, r * r, q @ r

    return f64(ref)


rows(
    OpCase("qr", "tall", _qr_fn("reduced"), normal((5, 3)), _qr_ref("reduced"), **TOL),
    OpCase("qr", "wide-batch", _qr_fn("reduced"), normal((2, 3, 5)), _qr_ref("reduced"), **TOL),
    OpCase("qr", "square-complete", _qr_fn("complete"), normal((2, 4, 4)), _qr_ref("complete"),
           **TOL),
    OpCase("qr", "wide-complete", _qr_fn("complete"), normal((3, 4)), _qr_ref("complete"),
           **TOL),
    # R's diagonal by hand: |R00| = |column 0| = 5, Q's first column ±(3, 4) / 5
    OpCase("qr", "hand", lambda a: kn.abs(kn.linalg.qr(a).R), given([[3.0, 0.0], [4.0, 5.0]]),
           lambda a: np.array([[5.0, 4.0], [0.0, 3.0]], a.dtype)),
)  # fmt: skip


# -- eigh: the eigenvalues, V*V, V diag(λ) Vᵀ ----------------------------------------------------


def _eigh_fn(uplo):
    def fn(a):
        w, v = kn.linalg.eigh((a + a.mT) * 0.5, uplo)
        return w, v * v, (v * kn.unsqueeze(w, -2)) @ v.mT

    return fn


def _eigh_ref(a):
    w, v = np.linalg.eigh(sym(a))
    return w, v * v, (v * w[..., None, :]) @ mt(v)


rows(
    OpCase("eigh", "basic", _eigh_fn("L"), normal((4, 4)), f64(_eigh_ref), **TOL),
    OpCase("eigh", "batch-upper", _eigh_fn("U"), normal((2, 3, 3)), f64(_eigh_ref), **TOL),
    OpCase("eigh", "eigvalsh", lambda a: kn.linalg.eigvalsh((a + a.mT) * 0.5), normal((3, 3)),
           f64(lambda a: np.linalg.eigvalsh(sym(a))), **TOL),
    OpCase("eigh", "hand", lambda a: kn.linalg.eigvalsh((a + a.mT) * 0.5),
           given([[2.0, 1.0], [1.0, 2.0]]),
           lambda a: np.array([1.0, 3.0], a.dtype)),  # 2 ± 1
)  # fmt: skip


# -- svd: S, U*U, Vh*Vh, the rank-2 part -------------------------------------------------------


def _svd_fn(full):
    def fn(a):
        u, s, vh = kn.linalg.svd(a, full_matrices=full)
        k = s.shape[-1]
        u, vh = u[..., :, :k], vh[..., :k, :]
        return s, u * u, vh * vh, u[..., :, :2] @ vh[..., :2, :]

    return fn


def _svd_ref(a):
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    return s, u * u, vh * vh, u[..., :, :2] @ vh[..., :2, :]


rows(
    OpCase("svd", "tall", _svd_fn(False), normal((5, 3)), f64(_svd_ref), **TOL),
    OpCase("svd", "wide-batch-full", _svd_fn(True), normal((2, 3, 4)), f64(_svd_ref), **TOL),
    OpCase("svd", "square", _svd_fn(False), normal((3, 3)), f64(_svd_ref), **TOL),
    OpCase("svd", "svdvals", kn.linalg.svdvals, normal((2, 4, 3)),
           f64(lambda a: np.linalg.svd(a, compute_uv=False)), **TOL),
    OpCase("svd", "hand", kn.linalg.svdvals, given([[0.0, 2.0], [-3.0, 0.0]]),
           lambda a: np.array([3.0, 2.0], a.dtype)),
)  # fmt: skip


# -- lu ------------------------------------------------------------------------------------------


def _lu_ref(a):
    p, lower, upper = sla.lu(a)
    return p, lower, upper


rows(
    OpCase("lu", "square", lambda a: tuple(kn.linalg.lu(a)), normal((4, 4)), f64(_lu_ref),
           **TOL),
    OpCase("lu", "tall-batch", lambda a: tuple(kn.linalg.lu(a)), normal((2, 5, 3)),
           f64(_lu_ref), **TOL),
    OpCase("lu", "wide", lambda a: tuple(kn.linalg.lu(a)), normal((3, 5)), f64(_lu_ref), **TOL),
    OpCase("lu", "factor", lambda a: kn.linalg.lu_factor(a).LU, normal((2, 4, 4)),
           f64(lambda a: sla.lu_factor(a)[0]), **TOL),
    # rows swapped (|3| > |1|), then l = 1/3 and u = 2 - 4/3
    OpCase("lu", "hand", lambda a: kn.linalg.lu_factor(a).LU, given([[1.0, 2.0], [3.0, 4.0]]),
           lambda a: np.array([[3.0, 4.0], [1 / 3, 2 - 4 / 3]], a.dtype)),
    OpCase("lu_pivots", "batch", lambda a: kn.linalg.lu_factor(a).pivots, normal((2, 4, 3)),
           lambda a: (sla.lu_factor(a.astype(np.float64))[1] + 1).astype(np.int32)),
    OpCase("lu_pivots", "hand", lambda a: kn.linalg.lu_factor(a).pivots,
           given([[1.0, 2.0], [3.0, 4.0]]), lambda a: np.array([2, 2], np.int32)),
    OpCase("pivots_matrix", "lu_unpack", lambda a: kn.lu_unpack(*kn.linalg.lu_factor(a)).P,
           normal((2, 4, 4)), f64(lambda a: sla.lu(a)[0])),
)  # fmt: skip


# -- triangular solves ---------------------------------------------------------------------------


def _tri_ref(upper, unit):
    def ref(a, b):
        return sla.solve_triangular(a, b, lower=not upper, unit_diagonal=unit)

    return f64(ref)


rows(
    OpCase("solve_triangular", "upper",
           lambda a, b: kn.linalg.solve_triangular(a, b, upper=True), normal((3, 3), (3, 2),
                                                                            shift=3.0),
           _tri_ref(True, False), **TOL),
    OpCase("solve_triangular", "lower-unit-batch",
           lambda a, b: kn.linalg.solve_triangular(a, b, upper=False, unitriangular=True),
           normal((2, 4, 4), (2, 4, 3), scale=0.3), _tri_ref(False, True), **TOL),
    OpCase("solve_triangular", "broadcast", lambda a, b: kn.linalg.solve_triangular(
        a, b, upper=False), normal((3, 3), (2, 3, 2), shift=3.0),
           f64(lambda a, b: sla.solve_triangular(np.broadcast_to(a, (2, 3, 3)), b, lower=True)),
           **TOL),
    OpCase("solve_triangular", "right", lambda a, b: kn.linalg.solve_triangular(
        a, b, upper=True, left=False), normal((3, 3), (2, 3), shift=3.0),
           f64(lambda a, b: mt(sla.solve_triangular(mt(a), mt(b), lower=True))), **TOL),
    OpCase("solve_triangular", "lu_solve", lambda a, b: kn.linalg.lu_solve(
        *kn.linalg.lu_factor(a), b), normal((3, 3), (3, 2), shift=3.0),
           f64(lambda a, b: np.linalg.solve(a, b)), **TOL),
)  # fmt: skip


# -- matrix_exp, pinv, lstsq ---------------------------------------------------------------------


rows(
    OpCase("matrix_exp", "basic", kn.linalg.matrix_exp, normal((3, 3), scale=0.5),
           f64(sla.expm), **TOL),
    OpCase("matrix_exp", "batch", kn.matrix_exp, normal((2, 4, 4), scale=0.5), f64(sla.expm),
           **TOL),
    # exp of a nilpotent [[0, 1], [0, 0]] is I + N
    OpCase("matrix_exp", "hand", kn.linalg.matrix_exp, given([[0.0, 1.0], [0.0, 0.0]]),
           lambda a: np.array([[1.0, 1.0], [0.0, 1.0]], a.dtype)),
    OpCase("pinv", "tall", kn.linalg.pinv, normal((5, 3)), f64(np.linalg.pinv), **TOL),
    OpCase("pinv", "wide-batch", kn.linalg.pinv, normal((2, 3, 4)), f64(np.linalg.pinv), **TOL),
    OpCase("pinv", "hermitian", lambda a: kn.linalg.pinv((a + a.mT) * 0.5, hermitian=True),
           normal((4, 4)), f64(lambda a: np.linalg.pinv(sym(a))), **TOL),
    OpCase("pinv", "lstsq", lambda a, b: kn.linalg.lstsq(a, b)[::2], normal((5, 3), (5, 2)),
           f64(lambda a, b: (np.linalg.lstsq(a, b)[0], np.array(3))), **TOL),
    # orthonormal columns: A⁺ = Aᵀ
    OpCase("pinv", "hand", kn.linalg.pinv, given([[0.6, 0.0], [0.8, 0.0], [0.0, 1.0]]),
           lambda a: np.array([[0.6, 0.8, 0.0], [0.0, 0.0, 1.0]], a.dtype)),
    OpCase("lstsq_rank", "batch", lambda a, b: kn.linalg.lstsq(a, b).rank,
           normal((2, 5, 3), (2, 5, 1)), lambda a, b: np.array([3, 3], np.int64)),
    OpCase("lstsq_rank", "hand", lambda a, b: kn.linalg.lstsq(a, b).rank,
           given([[1.0, 2.0], [2.0, 4.0], [0.0, 0.0]], [[1.0], [2.0], [3.0]]),
           lambda a, b: np.array(1, np.int64)),  # the second column is twice the first
)  # fmt: skip


# -- the _ex forms -------------------------------------------------------------------------------


rows(
    OpCase("cholesky_ex", "basic", lambda a: tuple(kn.linalg.cholesky_ex((a + a.mT) * 0.5)),
           normal((2, 3, 3), scale=0.3, shift=2.0),
           f64(lambda a: (np.linalg.cholesky(sym(a)), np.zeros(2, np.int32))), **TOL),
    # the leading 1 x 1 minor is 1 > 0, the 2 x 2 one is 1 - 4 < 0: info 2
    OpCase("cholesky_info", "hand", lambda a: kn.linalg.cholesky_ex(a).info,
           given([[1.0, 2.0], [2.0, 1.0]]), lambda a: np.array(2, np.int32)),
    OpCase("cholesky_info", "batch", lambda a: kn.linalg.cholesky_ex(a).info,
           given([[[4.0, 0.0], [0.0, 1.0]], [[-1.0, 0.0], [0.0, 1.0]]]),
           lambda a: np.array([0, 1], np.int32)),
    OpCase("inv_ex", "basic", lambda a: tuple(kn.linalg.inv_ex(a)),
           normal((2, 3, 3), scale=0.3, shift=2.0),
           f64(lambda a: (np.linalg.inv(a), np.zeros(2, np.int32))), **TOL),
    # second row - 1/2 first row (after the swap) is zero: U[1, 1] = 0, info 2
    OpCase("inv_info", "hand", lambda a: kn.linalg.inv_ex(a).info,
           given([[1.0, 2.0], [2.0, 4.0]]), lambda a: np.array(2, np.int32)),
)  # fmt: skip


# -- LDLᵀ (kiln/ops/linalg_ldl.py): Bunch-Kaufman by hand -----------------------------------------
# [[4, 2], [2, 3]]: |a11| = 4 is the column's largest: no interchange, D = (4, 3 - 0.5 * 2),
# L21 = 2 / 4. [[1, 2], [2, 4]]: |a11| = 1 < 0.64 * 2 and |a22| = 4 >= 0.64 * 2: rows 1 and 2
# swap (pivot 2), then D = (4, 1 - 0.5 * 2 = 0): info 2. [[0, 1], [1, 0]]: a11 = 0, a22 = 0: one
# 2 x 2 block (pivots -2, -2), D the matrix itself, L the identity.
rows(
    OpCase("ldl_factor", "hand", lambda a: kn.linalg.ldl_factor(a).LD,
           given([[4.0, 2.0], [2.0, 3.0]]), lambda a: np.array([[4.0, 0.0], [0.5, 2.0]], a.dtype)),
    OpCase("ldl_factor", "block", lambda a: kn.linalg.ldl_factor(a).LD,
           given([[0.0, 1.0], [1.0, 0.0]]), lambda a: np.array([[0.0, 0.0], [1.0, 0.0]], a.dtype)),
    OpCase("ldl_pivots", "hand", lambda a: tuple(kn.linalg.ldl_factor(a)),
           given([[[1.0, 2.0], [2.0, 4.0]], [[0.0, 1.0], [1.0, 0.0]]]),
           lambda a: (np.array([[[4.0, 0.0], [0.5, 0.0]], [[0.0, 0.0], [1.0, 0.0]]], a.dtype),
                      np.array([[2, 2], [-2, -2]], np.int32))),
    OpCase("ldl_info", "hand", lambda a: kn.linalg.ldl_factor_ex(a).info,
           given([[[1.0, 2.0], [2.0, 4.0]], [[4.0, 2.0], [2.0, 3.0]]]),
           lambda a: np.array([2, 0], np.int32)),
    # 4 + 2 = 6 and 2 + 3 = 5: X = 1
    OpCase("ldl_solve", "hand", lambda a, b: kn.linalg.ldl_solve(*kn.linalg.ldl_factor(a), b),
           given([[4.0, 2.0], [2.0, 3.0]], [[6.0], [5.0]]),
           lambda a, b: np.ones((2, 1), a.dtype), rtol=1e-6, atol=1e-6),
)  # fmt: skip


# -- geqrf (kiln/ops/linalg_geqrf.py): the column (3, 4) by hand (a batch of one) --------------
# the reflection maps (3, 4) to -5 e1: v = (1, 4 / (3 + 5)) = (1, 0.5), tau = 1 + 3 / 5
rows(
    OpCase("geqrf", "hand", lambda a: kn.geqrf(a).a, given([[[3.0], [4.0]]]),
           lambda a: np.array([[[-5.0], [0.5]]], a.dtype), rtol=1e-6),
    OpCase("geqrf_tau", "hand", lambda a: tuple(kn.geqrf(a)), given([[[3.0], [4.0]]]),
           lambda a: (np.array([[[-5.0], [0.5]]], a.dtype), np.array([[1.6]], a.dtype)),
           rtol=1e-6),
)  # fmt: skip
