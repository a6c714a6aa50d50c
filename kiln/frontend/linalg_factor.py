"""`kn.linalg`'s factorizations and solvers, PyTorch's `torch.linalg` ones: `qr`, `eigh`,
`eigvalsh`, `svd`, `svdvals`, `lu_factor`, `lu`, `lu_solve`, `solve_triangular`, `lstsq`,
`pinv`, `matrix_exp`, `matrix_rank`, `multi_dot`, `vecdot`, `inv_ex`, `cholesky_ex`; and the
older top-level forms `svd` (with `some=`), `qr`, `pinverse`, `triangular_solve`,
`lu_unpack`, `lu_solve`. Each works eagerly (with autograd), in graph mode and under
`kn.compile`, batched over leading dims, on float32 and float64 matrices; `qr`, `eigh`,
`eigvalsh`, `svd`, `svdvals`, `pinv`, `solve_triangular`, `cholesky_ex`, `inv_ex`, `lu`,
`lu_factor`, `lu_solve`, `lu_unpack` and `matrix_exp` on complex64 and complex128 ones too,
with PyTorch's complex gradients (eigenvalues and singular values real).

`pinv`, `pinverse`, `lstsq` and `matrix_rank` live in kiln/frontend/linalg_lstsq.py
(importable from here). A factorization is one op whose results come packed in one array
(kiln/ops/linalg_factor.py): the named tuple here holds views of it, and its gradient takes
all of them at once.
"""

from __future__ import annotations

import math

import numpy as np

from .. import dtypes as dt
from ..array_types import return_types
from ..errors import DTypeMismatchError, LinAlgError, ShapeError, UsageError
from ..graph.core import Symbol
from ..ops.linalg_factor import unpack
from . import math as m
from .autocast import autocast_op
from .core import call, lift
from .linalg_layouts import column_major, column_major_all, fresh
from .out import takes_out
from .result_layouts import c_ordered
from .torch_shape import diagonal

__all__ = [
    "cholesky_ex", "eig", "eigh", "eigvals", "eigvalsh", "householder_product", "inv_ex",
    "lstsq", "lu",
    "lu_factor", "lu_solve", "matrix_exp", "matrix_rank", "multi_dot", "pinv", "qr",
    "solve_triangular", "svd", "svdvals", "vecdot",
]  # fmt: skip


def _mT(x):  # noqa: N802
    return call("transpose", x, perm=(*range(x.ndim - 2), x.ndim - 1, x.ndim - 2))


def _mH(x):  # noqa: N802
    """The conjugate transpose of each matrix (the transpose of a real one)."""
    return call("conj", _mT(x)) if x.dtype.kind == "c" else _mT(x)


def _real_part(x, A):  # noqa: N803
    """The real values (eigenvalues, singular values) a complex A's packed result holds
    as complex numbers, as their real dtype (PyTorch's)."""
    return call("real", x) if A.dtype.kind == "c" else x


def _matrices(A, name):  # noqa: N803
    (A,) = lift(A)
    if A.ndim < 2:
        raise ShapeError(f"linalg.{name}: the input must have at least 2 dims, got shape "
                         f"{list(A.shape)}")  # fmt: skip
    return A


def _zeros(shape, like):
    """Zeros of `shape` in `like`'s dtype: a constant of its graph, or an eager tensor on its
    device."""
    if isinstance(like, Symbol):
        return lift(np.zeros(shape, like.dtype), context=(like,))[0]
    from ..eager.factories import zeros

    return zeros(tuple(shape), dtype=like.dtype, device=like.device)


def _factor(op, A, **attrs):  # noqa: N803
    """The results of factorization `op` of `A` (views of its one packed result)."""
    packed = call(op, A, **attrs)
    return unpack(packed, op, A.shape[-2], A.shape[-1], **attrs)


# -- QR ----------------------------------------------------------------------------------------


@takes_out
@autocast_op("fp32")
def qr(A, mode: str = "reduced"):  # noqa: N803
    """The QR factorization `A = Q R` of each matrix in the last two dims: Q with orthonormal
    columns, R upper triangular; `mode` "reduced" (Q m x k, R k x n, k = min(m, n)),
    "complete" (Q m x m, R m x n) or "r" (R only; Q is an empty tensor). A named tuple
    `(Q, R)`. Gradients need mode "reduced" (or "complete" with m <= n), as PyTorch's.

    >>> import kiln as kn
    >>> Q, R = kn.linalg.qr(kn.tensor([[3.0, 1.0], [4.0, 2.0]]))
    >>> (Q @ R).round(decimals=6).tolist(), round(abs(float(R[0, 0])), 6)
    ([[3.0, 1.0], [4.0, 2.0]], 5.0)
    """
    if mode not in ("reduced", "complete", "r"):
        raise UsageError(f"linalg.qr: qr received unrecognized mode '{mode}' but expected "
                         "one of 'reduced' (default), 'r', or 'complete'")  # fmt: skip
    A = _matrices(A, "qr")
    q, r = _factor("qr", A, mode="complete" if mode == "complete" else "reduced")
    if mode == "r":
        q = _zeros((0,), A)
    return return_types.linalg_qr(*column_major_all((q, r), "LinalgQrBackward0", A))


@takes_out
def qr_old(input, some: bool = True):  # noqa: A002
    """`torch.qr(A, some=True)`: `linalg.qr` with mode "reduced" (`some`) or "complete".

    >>> import kiln as kn
    >>> kn.qr(kn.eye(2)).R.tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    """
    q, r = qr(input, "reduced" if some else "complete")
    return return_types.qr(q, r)


# -- eigh --------------------------------------------------------------------------------------


def _uplo(UPLO, name):  # noqa: N803
    if UPLO not in ("L", "U"):
        raise UsageError(f"linalg.{name}: UPLO must be 'L' or 'U', got {UPLO!r}")
    return UPLO == "U"


@takes_out
@autocast_op("fp32")
def eigh(input, UPLO: str = "L"):  # noqa: A002
    """The eigenvalues (ascending) and orthonormal eigenvectors (the columns) of each
    symmetric matrix in the last two dims, reading its lower (`UPLO="L"`) or upper triangle:
    a named tuple `(eigenvalues, eigenvectors)`. Each eigenvector's sign is LAPACK's choice;
    the gradient through the eigenvectors is finite only where the eigenvalues are distinct
    (it divides by their differences), as PyTorch's, and is symmetric. A complex Hermitian
    matrix has real eigenvalues and eigenvectors each fixed up to a phase e^(iφ): a loss of
    them must not depend on those phases (|v|², V diag(c) Vᴴ do not; v[0] does), or its
    gradient raises AutogradError when it runs, as PyTorch's.

    >>> import kiln as kn
    >>> kn.linalg.eigh(kn.tensor([[2.0, 1.0], [1.0, 2.0]])).eigenvalues.tolist()
    [1.0, 3.0]
    """
    A = input  # noqa: N806 (torch's parser names it input, its docstring A)
    A = _matrices(A, "eigh")
    lam, v = _factor("eigh", A, upper=_uplo(UPLO, "eigh"))
    return return_types.linalg_eigh(
        *column_major_all((_real_part(lam, A), v), "LinalgEighBackward0", A)
    )


@takes_out
def eig(input):  # noqa: A002
    """The eigenvalues and eigenvectors (the columns, each of unit norm) of each square
    matrix in the last two dims, complex whatever A's dtype: a named tuple
    `(eigenvalues, eigenvectors)` with A V = V diag(eigenvalues), as PyTorch's
    `torch.linalg.eig` (LAPACK's geev, unsorted). Its gradient is PyTorch's, defined for
    distinct eigenvalues and losses that do not depend on each eigenvector's phase.

    >>> import kiln as kn
    >>> kn.linalg.eig(kn.tensor([[2.0, 0.0], [0.0, 3.0]])).eigenvalues
    tensor([2.+0.j, 3.+0.j])
    """
    A = input  # noqa: N806 (torch's parser names it input, its docstring A)
    A = _matrices(A, "eig")
    vectors = call("eig_vectors", A)  # (first: a program of the vectors alone starts with it)
    values = call("eig_values", A)
    return return_types.linalg_eig(*column_major_all((values, vectors), "LinalgEigBackward0", A))


@takes_out
def eigvals(input):  # noqa: A002
    """The eigenvalues of each square matrix in the last two dims (complex), as PyTorch's
    `torch.linalg.eigvals` (see `eig`).

    >>> import kiln as kn
    >>> kn.linalg.eigvals(kn.tensor([[0.0, -1.0], [1.0, 0.0]]))
    tensor([0.+1.j, 0.-1.j])
    """
    A = input  # noqa: N806 (torch's parser names it input, its docstring A)
    return fresh(call("eig_values", _matrices(A, "eigvals")), "LinalgEigBackward0", A)


@takes_out
@autocast_op("fp32")
def eigvalsh(input, UPLO: str = "L"):  # noqa: A002
    """The eigenvalues (ascending) of each symmetric matrix in the last two dims (see `eigh`;
    their gradient, V diag(ḡ) Vᵀ, is finite at repeated eigenvalues too).

    >>> import kiln as kn
    >>> kn.linalg.eigvalsh(kn.tensor([[2.0, 0.0], [0.0, -1.0]])).tolist()
    [-1.0, 2.0]
    """
    A = input  # noqa: N806 (torch's parser names it input, its docstring A)
    A = _matrices(A, "eigvalsh")
    values = _real_part(_factor("eigh", A, upper=_uplo(UPLO, "eigvalsh"))[0], A)
    return fresh(values, "LinalgEighBackward0", A)


# -- SVD ---------------------------------------------------------------------------------------


def _driver(driver, name):
    if driver is not None:
        raise UsageError(f"linalg.{name}: driver= chooses among cuSOLVER's drivers, which "
                         f"kiln does not use (got {driver!r}); leave it None")  # fmt: skip


@takes_out
@autocast_op("fp32")
def svd(A, full_matrices: bool = True, *, driver=None):  # noqa: N803
    """The singular value decomposition `A = U diag(S) Vh` of each matrix in the last two
    dims, S descending: a named tuple `(U, S, Vh)`, U m x m and Vh n x n with
    `full_matrices` (their extra columns and rows take no gradient), else m x k and k x n.
    The gradient through U and Vh divides by differences of squared singular values (and by
    the singular values when m != n): it is finite only where they are distinct and nonzero,
    as PyTorch's; losses that do not depend on the singular vectors' signs get the same
    gradient from every sign choice. A complex A's singular values are real, and each pair
    of singular vectors (U's column, Vh's row) is fixed up to a phase e^(iφ): a loss that
    depends on it (U[0, 0] rather than |U[0, 0]| or U Vh) raises AutogradError in its
    backward, as PyTorch's raises.

    >>> import kiln as kn
    >>> kn.linalg.svd(kn.tensor([[3.0, 0.0], [0.0, -4.0]])).S.tolist()
    [4.0, 3.0]
    >>> kn.linalg.svd(kn.tensor([[3j, 0.0], [0.0, 4.0]])).S  # |3i| = 3
    tensor([4., 3.])
    """
    _driver(driver, "svd")
    A = _matrices(A, "svd")
    u, s, vh = _factor("svd", A, full_matrices=bool(full_matrices))
    return return_types.linalg_svd(
        *column_major_all((u, _real_part(s, A), vh), "LinalgSvdBackward0", A)
    )


@takes_out
@autocast_op("fp32")
def svdvals(A, *, driver=None):  # noqa: N803
    """The singular values (descending) of each matrix in the last two dims; their gradient
    U diag(ḡ) Vh is finite at repeated singular values too.

    >>> import kiln as kn
    >>> kn.linalg.svdvals(kn.tensor([[0.0, 2.0], [1.0, 0.0]])).tolist()
    [2.0, 1.0]
    """
    _driver(driver, "svdvals")
    A = _matrices(A, "svdvals")
    return fresh(_real_part(_factor("svd", A, full_matrices=False)[1], A), "LinalgSvdBackward0", A)


@takes_out
def svd_old(input, some: bool = True, compute_uv: bool = True):  # noqa: A002
    """`torch.svd`: a named tuple `(U, S, V)` with V = Vhᴴ (not Vh) and `some` the reduced form;
    without `compute_uv`, U and V are zeros (PyTorch's).

    >>> import kiln as kn
    >>> kn.svd(kn.tensor([[2.0, 0.0], [0.0, 1.0]])).S.tolist()
    [2.0, 1.0]
    """
    A = _matrices(input, "svd")
    if not compute_uv:  # U m x m and V n x n, zeros (PyTorch's)
        u = _zeros((*A.shape[:-1], A.shape[-2]), A)
        v = _zeros((*A.shape[:-2], A.shape[-1], A.shape[-1]), A)
        return return_types.svd(u, svdvals(A), v)
    u, s, vh = svd(A, full_matrices=not some)
    return return_types.svd(u, s, _mH(vh))


# -- LU ----------------------------------------------------------------------------------------


def _pivot(pivot, name):
    if not pivot:
        raise UsageError(f"linalg.{name}: LU without pivoting (pivot=False) is only "
                         "PyTorch's CUDA form; kiln factors with partial pivoting")  # fmt: skip


def _pad(x, rows, cols):
    return call("pad", x, pad_width=((0, 0),) * (x.ndim - 2) + ((0, rows), (0, cols)),
                value=0.0)  # fmt: skip


@takes_out
@autocast_op("fp32")
def lu(A, *, pivot: bool = True):  # noqa: N803
    """The LU factorization with partial pivoting `A = P L U` of each matrix in the last two
    dims: P a permutation matrix, L unit lower triangular (m x k), U upper triangular
    (k x n), k = min(m, n); a named tuple `(P, L, U)`. Singular matrices factor (U has a
    zero on its diagonal).

    >>> import kiln as kn
    >>> P, L, U = kn.linalg.lu(kn.tensor([[1.0, 2.0], [3.0, 4.0]]))
    >>> P.tolist(), L.tolist()
    ([[0.0, 1.0], [1.0, 0.0]], [[1.0, 0.0], [0.3333333432674408, 1.0]])
    """
    _pivot(pivot, "lu")
    A = _matrices(A, "lu")
    p, lower, upper = _factor("lu", A)
    return return_types.linalg_lu(*(fresh(x, "LinalgLuBackward0", A) for x in (p, lower, upper)))


@takes_out
@autocast_op("fp32")
def lu_factor(A, *, pivot: bool = True):  # noqa: N803
    """The compact LU factorization: a named tuple `(LU, pivots)`, L's strict lower part and
    U in one m x n matrix, and LAPACK's 1-based row interchanges (int32), as `lu_solve` and
    `lu_unpack` take them. A zero on U's diagonal raises `LinAlgError` eagerly, as PyTorch's
    (`lu_factor_ex` gives info codes instead; a graph does not check).

    >>> import kiln as kn
    >>> LU, pivots = kn.linalg.lu_factor(kn.tensor([[1.0, 2.0], [3.0, 4.0]]))
    >>> pivots.tolist()
    [2, 2]
    """
    packed, pivots = lu_factor_unchecked(A, pivot=pivot)
    if isinstance(packed, Symbol) or 0 in packed.shape[-2:]:  # nothing to check
        return return_types.linalg_lu_factor(packed, pivots)
    _raise_on_info(_first_zero_pivot(packed), "lu_factor", lambda k: (
        f"U[{k},{k}] is zero and using it on lu_solve would result in a division by zero. If "
        "you still want to perform the factorization, consider calling linalg.lu(A, pivot) or "
        "linalg.lu_factor_ex(A, pivot)"))  # fmt: skip
    return return_types.linalg_lu_factor(packed, pivots)


def lu_factor_unchecked(A, *, pivot: bool = True):  # noqa: N803
    """`lu_factor`'s results without its check for a zero pivot (`lu_factor_ex`, `torch.lu`
    give info codes instead)."""
    _pivot(pivot, "lu_factor")
    A = _matrices(A, "lu_factor")
    _, lower, upper = _factor("lu", A)
    rows, cols = A.shape[-2], A.shape[-1]
    k = min(rows, cols)
    strict = m.sub(lower, lift(np.eye(rows, k, dtype=A.dtype), context=(A,))[0])
    packed = m.add(_pad(strict, 0, cols - k), _pad(upper, rows - k, 0))
    packed = column_major(packed, "LinalgLuFactorExBackward0", A)
    return return_types.linalg_lu_factor(packed, call("lu_pivots", A))


@takes_out
def lu_old(A, pivot: bool = True, get_infos: bool = False):  # noqa: N803
    """`torch.lu(A)`: `(LU, pivots)` as `linalg.lu_factor` gives them, and with `get_infos`
    the info codes of square matrices (0, or the 1-based index of U's first zero pivot).

    >>> import kiln as kn
    >>> LU, pivots, infos = kn.lu(kn.tensor([[1.0, 2.0], [2.0, 4.0]]), get_infos=True)
    >>> pivots.tolist(), int(infos)
    ([2, 2], 2)
    """
    packed, piv = lu_factor_unchecked(A, pivot=pivot)
    if not get_infos:
        return packed, piv
    (A,) = lift(A)
    if A.shape[-1] == A.shape[-2]:
        return packed, piv, call("inv_info", A)
    return packed, piv, _first_zero_pivot(packed)


def _first_zero_pivot(packed):
    """LAPACK's info of an m x n LU: the 1-based index of U's first zero diagonal entry, or
    0 (int32, one per matrix)."""
    zero = m.equal(diagonal(packed, 0, -2, -1), 0)
    first = m.add(m.argmax(m.cast(zero, dt.int32), -1), 1)
    return m.cast(m.where(m.any(zero, -1), first, 0), dt.int32)


@takes_out
def lu_unpack(LU_data, LU_pivots, unpack_data: bool = True, unpack_pivots: bool = True):  # noqa: N803
    """`(P, L, U)` of a compact LU factorization (`lu_factor`'s).

    >>> import kiln as kn
    >>> P, L, U = kn.lu_unpack(*kn.linalg.lu_factor(kn.tensor([[1.0, 2.0], [3.0, 4.0]])))
    >>> (P @ L @ U).tolist()
    [[1.0, 2.0], [3.0, 4.0]]
    """
    LU, piv = lift(LU_data, LU_pivots)
    rows, cols = LU.shape[-2], LU.shape[-1]
    k = min(rows, cols)
    lower = upper = perm = None
    if unpack_data:
        strict = call("index", LU, spec=((("slice", None, None, None),) * (LU.ndim - 1)
                                         + (("slice", 0, k, None),)))  # fmt: skip
        lower = m.add(_tri(strict, False, -1), lift(np.eye(rows, k, dtype=LU.dtype),
                                                    context=(LU,))[0])  # fmt: skip
        top = call("index", LU, spec=((("slice", None, None, None),) * (LU.ndim - 2)
                                      + (("slice", 0, k, None),)))  # fmt: skip
        upper = c_ordered(_tri(top, True, 0))  # (C order, as PyTorch's: not LU's)
        lower = c_ordered(lower)
    if unpack_pivots:
        perm = call("pivots_matrix", piv, m=rows, dtype=LU.dtype)
    return return_types.lu_unpack(perm, lower, upper)


def _tri(x, upper, k):
    mask = np.ones(x.shape[-2:], x.dtype)
    mask = np.triu(mask, k) if upper else np.tril(mask, k)
    return m.mul(x, lift(mask, context=(x,))[0])


@takes_out
@autocast_op("fp32")
def lu_solve(LU, pivots, B, *, left: bool = True, adjoint: bool = False):  # noqa: N803
    """X with `A X = B` (`left`; else `X A = B`), or with Aᴴ for `adjoint`, from A's compact
    LU factorization `(LU, pivots)` (`lu_factor`'s); gradients reach LU and B.

    >>> import kiln as kn
    >>> A = kn.tensor([[1.0, 2.0], [3.0, 4.0]])
    >>> kn.linalg.lu_solve(*kn.linalg.lu_factor(A), kn.tensor([[5.0], [11.0]])).tolist()
    [[1.0], [2.0]]
    """
    LU, pivots, B = lift(LU, pivots, B)
    if LU.ndim < 2 or LU.shape[-1] != LU.shape[-2]:
        raise ShapeError(f"linalg.lu_solve: LU must be a batch of square matrices, got "
                         f"{list(LU.shape)}")  # fmt: skip
    if B.ndim < 2:
        raise ShapeError(f"linalg.lu_solve: B must have at least 2 dims, got {list(B.shape)}")
    p, lower, upper = lu_unpack(LU, pivots)
    if not left:  # X A = B <=> Aᴴ Xᴴ = Bᴴ (ᴴ is ᵀ for real ones)
        return _mH(lu_solve(LU, pivots, _mH(B), left=True, adjoint=not adjoint))
    if not adjoint:  # X = U⁻¹ L⁻¹ Pᵀ B
        y = call("solve_triangular", lower, m.matmul(_mT(p), B), upper=False, unitriangular=True)
        x = call("solve_triangular", upper, y, upper=True, unitriangular=False)
    else:  # Aᴴ = Uᴴ Lᴴ Pᵀ: X = P L⁻ᴴ U⁻ᴴ B
        y = call("solve_triangular", _mH(upper), B, upper=False, unitriangular=False)
        x = m.matmul(p, call("solve_triangular", _mH(lower), y, upper=True, unitriangular=True))
    return column_major(x, "LinalgLuSolveBackward0", LU, B)


@takes_out
def lu_solve_old(b, LU_data, LU_pivots):  # noqa: N803
    """`torch.lu_solve(b, LU_data, LU_pivots)`: `linalg.lu_solve` with b first.

    >>> import kiln as kn
    >>> A = kn.tensor([[2.0, 0.0], [0.0, 4.0]])
    >>> kn.lu_solve(kn.tensor([[2.0], [2.0]]), *kn.linalg.lu_factor(A)).tolist()
    [[1.0], [0.5]]
    """
    return lu_solve(LU_data, LU_pivots, b)


# -- triangular solves -------------------------------------------------------------------------


@takes_out
@autocast_op("fp32")
def solve_triangular(input, B, *, upper: bool, left: bool = True, unitriangular: bool = False):  # noqa: A002
    """X with `A X = B` (`left`; else `X A = B`) for triangular A, reading only its upper
    (`upper`) or lower triangle, and taking its diagonal as ones with `unitriangular`;
    batched and broadcast over leading dims. A's gradient lies on the triangle it read.

    >>> import kiln as kn
    >>> A = kn.tensor([[2.0, 1.0], [0.0, 4.0]])
    >>> kn.linalg.solve_triangular(A, kn.tensor([[4.0], [8.0]]), upper=True).tolist()
    [[1.0], [2.0]]
    """
    A = input  # noqa: N806 (torch's parser names it input, its docstring A)
    A, B = lift(A, B)
    if left:
        x = call("solve_triangular", A, B, upper=bool(upper), unitriangular=bool(unitriangular))
        return column_major(x, "LinalgSolveTriangularBackward0", A, B)
    if A.ndim < 2 or B.ndim < 2:
        raise ShapeError(f"linalg.solve_triangular: A {list(A.shape)} and B {list(B.shape)} "
                         "must have at least 2 dims")  # fmt: skip
    xt = call("solve_triangular", _mT(A), _mT(B), upper=not upper,
              unitriangular=bool(unitriangular))  # fmt: skip
    return column_major(_mT(xt), "LinalgSolveTriangularBackward0", A, B)


def _same_dtype(why: str, a, b) -> None:
    """PyTorch's refusal of a solve's operands of two dtypes (no silent promotion): `why`
    names them ("linalg.solve: Expected A and B")."""
    if a.dtype != b.dtype:
        raise DTypeMismatchError(f"{why} to have the same dtype, but found {a.dtype} and "
                                 f"{b.dtype} instead")  # fmt: skip


@takes_out
def triangular_solve(b, A, upper: bool = True, transpose: bool = False,  # noqa: N803
                     unitriangular: bool = False):  # fmt: skip
    """`torch.triangular_solve(b, A)`: a named tuple `(solution, cloned_coefficient)`, the
    solution of `A X = b` (`Aᵀ X = b` with `transpose`) and a copy of A.

    >>> import kiln as kn
    >>> A = kn.tensor([[2.0, 0.0], [1.0, 1.0]])
    >>> kn.triangular_solve(kn.tensor([[2.0], [3.0]]), A, upper=False).solution.tolist()
    [[1.0], [2.0]]
    """
    b, A = lift(b, A)
    _same_dtype("triangular_solve: Expected b and A", b, A)
    if transpose:
        x = solve_triangular(_mT(A), b, upper=not upper, unitriangular=unitriangular)
    else:
        x = solve_triangular(A, b, upper=upper, unitriangular=unitriangular)
    copy = A if isinstance(A, Symbol) else A.clone()
    return return_types.triangular_solve(x, copy)


# -- matrix exponential ------------------------------------------------------------------------


@autocast_op("fp32")
def matrix_exp(input):  # noqa: A002
    """The matrix exponential of each square matrix in the last two dims (SciPy's Padé
    approximation with scaling and squaring); its gradient is exp's Fréchet derivative.

    >>> import kiln as kn
    >>> kn.linalg.matrix_exp(kn.tensor([[0.0, 1.0], [0.0, 0.0]])).tolist()  # I + N, N² = 0
    [[1.0, 1.0], [0.0, 1.0]]
    """
    A = input  # noqa: N806 (torch's parser names it input, its docstring A)
    A = _matrices(A, "matrix_exp")
    return fresh(call("matrix_exp", A), "LinalgMatrixExpBackward0", A)


# -- products ----------------------------------------------------------------------------------


@takes_out
@autocast_op("fp32")
def householder_product(input, tau):  # noqa: A002
    """The first n columns of the product H₁ ⋯ H_k of Householder reflections
    H_i = I - tau_i v_i v_iᴴ (v_iᵀ for real ones), v_i the i-th column of A below its
    diagonal with a 1 on it (LAPACK's orgqr; A m x n with m >= n >= k, tau of k), batched; a
    composite of matrix products, differentiable in A and tau.

    >>> import kiln as kn
    >>> kn.linalg.householder_product(kn.tensor([[1.0], [1.0]]), kn.tensor([1.0])).tolist()
    [[0.0], [-1.0]]
    """
    A = input  # noqa: N806 (torch's parser names it input, its docstring A)
    A, tau = lift(A, tau)
    A = _matrices(A, "householder_product")
    if tau.dtype != A.dtype:  # PyTorch's refusal: no silent promotion of either
        raise DTypeMismatchError(
            f"linalg.householder_product: tau dtype {np.dtype(tau.dtype).name} does not match "
            f"input dtype {np.dtype(A.dtype).name}"
        )
    rows, cols = A.shape[-2], A.shape[-1]
    k = tau.shape[-1] if tau.ndim else -1
    if not (rows >= cols >= k >= 0) or tau.ndim != A.ndim - 1:
        raise ShapeError(
            f"linalg.householder_product: A {list(A.shape)} must have rows >= columns >= "
            f"tau's last dim, tau {list(tau.shape)} one dim fewer"
        )
    (eye,) = lift(np.eye(rows, cols, dtype=A.dtype), context=(A,))
    if k == 0:  # no reflection: the identity's columns, requiring grad with gradient 0 as
        # PyTorch's (sign(|A|) * 0 is 0 for every A, its derivative 0)
        q = m.add(m.mul(m.sign(m.abs(A)), 0), eye)
        return column_major(q, "LinalgHouseholderProductBackward0", A, tau)
    vectors = m.add(_tri(A, False, -1), eye)
    q = m.add(_zeros(tuple(A.shape), A), eye)
    for i in reversed(range(k)):  # H_i (H_{i+1} ⋯ H_k E), E the first n columns of I
        v = vectors[..., :, i : i + 1]
        t = tau[..., i : i + 1][..., None]
        q = m.sub(q, m.mul(t, m.matmul(v, m.matmul(_mH(v), q))))
    return column_major(q, "LinalgHouseholderProductBackward0", A, tau)


@takes_out
def orgqr(input, input2):  # noqa: A002
    """PyTorch's `torch.orgqr(input, input2)` (and `Tensor.orgqr`): `householder_product`
    with tau named as torch.orgqr's parser names it.

    >>> import kiln as kn
    >>> kn.orgqr(kn.tensor([[1.0], [0.0]]), kn.tensor([0.0])).tolist()
    [[1.0], [0.0]]
    """
    return householder_product(input, input2)


@takes_out
def multi_dot(tensors):
    """The product of the matrices in `tensors`, in the order that costs the fewest
    multiplications (the first may be a vector, as a row; the last a vector, as a column).

    >>> import kiln as kn
    >>> kn.linalg.multi_dot([kn.tensor([1.0, 2.0]), kn.eye(2), kn.tensor([3.0, 4.0])])
    tensor(11.)
    """
    xs = list(lift(*tensors))
    if len(xs) < 2:
        raise UsageError(f"multi_dot(): expected at least 2 tensors but got {len(xs)}")
    first_vector, last_vector = xs[0].ndim == 1, xs[-1].ndim == 1
    if first_vector:
        xs[0] = call("reshape", xs[0], shape=(1, xs[0].shape[0]))
    if last_vector:
        xs[-1] = call("reshape", xs[-1], shape=(xs[-1].shape[0], 1))
    for i, x in enumerate(xs):
        if x.ndim != 2:
            raise ShapeError(f"multi_dot(): tensor {i} must be 2D but got {x.ndim}D")
    for i in range(len(xs) - 1):
        if xs[i].shape[1] != xs[i + 1].shape[0]:
            raise ShapeError(f"multi_dot(): tensors {i} and {i + 1} with shapes "
                             f"{list(xs[i].shape)} and {list(xs[i + 1].shape)} cannot be "
                             "multiplied")  # fmt: skip
    dims = [xs[0].shape[0], *(x.shape[1] for x in xs)]
    n = len(xs)
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = math.inf
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k

    def product(i, j):
        if i == j:
            return xs[i]
        k = split[i][j]
        return m.matmul(product(i, k), product(k + 1, j))

    out = product(0, n - 1)
    if first_vector and last_vector:
        return call("reshape", out, shape=())
    if first_vector:
        return call("reshape", out, shape=(out.shape[1],))
    if last_vector:
        return call("reshape", out, shape=(out.shape[0],))
    return out


@takes_out
def vecdot(x, y, *, dim: int = -1):
    """The dot products of the vectors of `x` and `y` along `dim` (broadcast), x conjugated
    where complex (`sum(conj(x) * y)`, as PyTorch's).

    >>> import kiln as kn
    >>> kn.linalg.vecdot(kn.tensor([[1.0, 2.0], [3.0, 4.0]]), kn.tensor([1.0, 1.0]))
    tensor([3., 7.])
    >>> kn.linalg.vecdot(kn.tensor([1j]), kn.tensor([1j]))
    tensor(1.+0.j)
    """
    x, y = lift(x, y)
    if x.ndim == 0 or y.ndim == 0:
        raise ShapeError("linalg.vecdot: the inputs must have at least 1 dim")
    if not (dt.is_float(x.dtype) or dt.is_complex(x.dtype)):
        raise UsageError("linalg.vecdot: Expected a floating point or complex tensor as input. "
                         f"Got {dt.scalar_name(x.dtype)}")  # fmt: skip
    _same_dtype("linalg.vecdot: Expected x and y", x, y)
    if x.dtype.kind == "c":
        x = call("conj", x)
    return m.sum(m.mul(x, y), dim=dim)


# -- the _ex forms: an info code instead of an error -------------------------------------------


def _raise_on_info(info, name, what):
    if isinstance(info, Symbol):
        return
    codes = np.asarray(info.cpu().numpy() if hasattr(info, "cpu") else info)
    bad = np.flatnonzero(codes.reshape(-1))
    if bad.size:
        where = f" (batch element {int(bad[0])})" if codes.ndim else ""
        raise LinAlgError(f"linalg.{name}{where}: {what(int(codes.reshape(-1)[bad[0]]))}")


@takes_out
@autocast_op("fp32")
def inv_ex(A, *, check_errors: bool = False):  # noqa: N803
    """A named tuple `(inverse, info)`: the inverses, and per matrix 0 or (singular) the
    1-based index of the first zero pivot of its LU factorization (int32). A singular
    matrix's inverse is NaN; with `check_errors` it raises `LinAlgError` (in graph mode, when
    the function runs).

    >>> import kiln as kn
    >>> kn.linalg.inv_ex(kn.tensor([[1.0, 2.0], [2.0, 4.0]])).info
    tensor(2, dtype=kiln.int32)
    """
    A = _matrices(A, "inv_ex")
    info = call("inv_info", A)  # first: a graph's first node without ONNX form
    if check_errors and isinstance(A, Symbol):
        return return_types.linalg_inv_ex(_inverse(call("inv", A), A), info)
    if check_errors:
        _raise_on_info(
            info,
            "inv_ex",
            lambda k: (
                f"The diagonal element {k} is zero, the "
                "inversion could not be completed because the input matrix is singular."
            ),
        )
    return return_types.linalg_inv_ex(_inverse(call("inv_ex", A), A), info)


def _inverse(x, A):  # noqa: N803
    """An inverse of A as PyTorch's (`column_major`, `LinalgInvExBackward0`)."""
    return column_major(x, "LinalgInvExBackward0", A)


@takes_out
@autocast_op("fp32")
def cholesky_ex(input, *, upper: bool = False, check_errors: bool = False):  # noqa: A002
    """A named tuple `(L, info)`: the Cholesky factors (lower, or upper with `upper`), and per
    matrix 0 or the order of its first leading minor that is not positive-definite (int32;
    L then holds what LAPACK left). With `check_errors` a failure raises `LinAlgError`.

    >>> import kiln as kn
    >>> kn.linalg.cholesky_ex(kn.tensor([[4.0, 0.0], [0.0, -1.0]])).info
    tensor(2, dtype=kiln.int32)
    """
    A = input  # noqa: N806 (torch's parser names it input, its docstring A)
    A = _matrices(A, "cholesky_ex")
    info = call("cholesky_info", A)  # first: a graph's first node without ONNX form
    if check_errors and isinstance(A, Symbol):
        lower = call("cholesky", A)
    else:
        lower = call("cholesky_ex", A)
        if check_errors:
            _raise_on_info(info, "cholesky_ex", lambda k: f"The factorization could not be "
                           f"completed because the input is not positive-definite (the leading "
                           f"minor of order {k} is not positive-definite).")  # fmt: skip
    factor = column_major(_mH(lower) if upper else lower, "LinalgCholeskyExBackward0", A)
    return return_types.linalg_cholesky_ex(factor, info)


# The pseudo-inverse, least squares and rank (kiln/frontend/linalg_lstsq.py), importable here.
from .linalg_lstsq import lstsq, matrix_rank, pinv, pinverse  # noqa: E402, F401
