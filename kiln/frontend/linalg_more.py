"""`kn.linalg`'s forms of other kiln functions, PyTorch's `torch.linalg` ones: `cross`,
`matmul`, `diagonal`, `vander`, `tensorinv`, `tensorsolve`, and the `_ex` forms `solve_ex` and
`lu_factor_ex` (an info code per matrix instead of an error). Compositions of kiln's ops, so
they work eagerly (with autograd), in graph mode and under `kn.compile`."""

from __future__ import annotations

import math

from .. import dtypes as dt
from ..array_types import return_types
from ..eager.autograd import name_history
from ..errors import ShapeError, UsageError
from ..graph.core import Symbol
from ..ops.linalg import vector_rhs
from . import math as m
from . import shape as s
from .core import call, lift
from .linalg_factor import (
    _first_zero_pivot,
    _matrices,
    _raise_on_info,
    _same_dtype,
    _zeros,
    householder_product,
    inv_ex,
    lu_factor_unchecked,
)
from .linalg_layouts import column_major
from .out import takes_out
from .products import matmul as _matmul
from .torch_extra_linalg import cross as _cross
from .torch_shape import diagonal as _diagonal

__all__ = [
    "cross", "diagonal", "geqrf", "ldl_factor", "ldl_factor_ex", "ldl_solve", "lu_factor_ex",
    "matmul", "ormqr", "solve_ex", "tensorinv", "tensorsolve", "vander",
]  # fmt: skip


@takes_out
def cross(input, other, *, dim: int = -1):  # noqa: A002
    """The cross product of 3-vectors along `dim` (default the last), the other dims
    broadcast; both inputs need the same number of dims (PyTorch's `linalg.cross`).

    >>> import kiln as kn
    >>> kn.linalg.cross(kn.tensor([[1.0, 0.0, 0.0]]), kn.tensor([[0.0, 1.0, 0.0]]))
    tensor([[0., 0., 1.]])
    """
    a, b = lift(input, other)
    if a.ndim != b.ndim:
        raise ShapeError(
            f"linalg.cross: inputs must have the same number of dimensions, got shapes "
            f"{list(a.shape)} and {list(b.shape)}"
        )
    return name_history(_cross(a, b, dim), "LinalgCrossBackward0", a, b)


@takes_out
def matmul(input, other):  # noqa: A002
    """`kn.matmul` under `torch.linalg`'s name.

    >>> import kiln as kn
    >>> kn.linalg.matmul(kn.tensor([[1.0, 2.0]]), kn.tensor([[3.0], [4.0]]))
    tensor([[11.]])
    """
    return _matmul(input, other)


def diagonal(A, *, offset: int = 0, dim1: int = -2, dim2: int = -1):  # noqa: N803
    """The `offset` diagonal of each matrix in dims `dim1`, `dim2` (default the last two), a
    view as `kn.diagonal`'s.

    >>> import kiln as kn
    >>> kn.linalg.diagonal(kn.tensor([[1.0, 2.0], [3.0, 4.0]]), offset=1)
    tensor([2.])
    """
    return _diagonal(A, offset, dim1, dim2)


def vander(x, *, N=None):  # noqa: N803
    """The Vandermonde matrices of the vectors in `x`'s last dim: column j holds x**j for
    j < N (default x's length), increasing powers (PyTorch's `linalg.vander`).

    >>> import kiln as kn
    >>> kn.linalg.vander(kn.tensor([1.0, 2.0, 3.0]), N=3)
    tensor([[1., 1., 1.],
            [1., 2., 4.],
            [1., 3., 9.]])
    """
    (x,) = lift(x)
    if x.ndim == 0:  # one value: a vector of one (PyTorch's)
        x = s.reshape(x, (1,))
    n = x.shape[-1] if N is None else N
    if not isinstance(n, int) or n <= 1:
        raise UsageError(f"linalg.vander: N must be greater than 1, got {N!r}")
    if x.dtype.kind == "b" or x.dtype in (dt.float16, dt.bfloat16):  # (PyTorch's kernels')
        raise UsageError("linalg.vander supports floating point, complex, and integer tensors, "
                         f"but got {dt.scalar_name(x.dtype)}")  # fmt: skip
    if x.dtype.kind in "iu":  # integers: int64, as PyTorch's
        x = m.cast(x, dt.int64)
    ones = m.add(m.mul(s.unsqueeze(x, -1), 0), 1)  # (..., n, 1) of x's dtype
    powers = s.unsqueeze(x, -1)
    columns = [ones]
    for _ in range(n - 1):  # running products: exact for integers, x**j's gradient by chain
        columns.append(m.mul(columns[-1], powers))
    return s.concat(columns, -1)


@takes_out
def tensorinv(input, ind: int = 2):  # noqa: A002
    """The inverse of `A` seen as a matrix with `prod(A.shape[:ind])` rows: a tensor of shape
    `A.shape[ind:] + A.shape[:ind]` whose `tensordot` with A over `ind` dims is the identity.

    >>> import kiln as kn
    >>> kn.linalg.tensorinv(kn.tensor([[2.0, 0.0], [0.0, 4.0]]), ind=1)
    tensor([[0.5000, 0.0000],
            [0.0000, 0.2500]])
    """
    A = input  # noqa: N806 (torch's parser names it input, its docstring A)
    (A,) = lift(A)
    if not isinstance(ind, int) or ind <= 0:
        raise UsageError(f"linalg.tensorinv: Expected a strictly positive integer for 'ind', "
                         f"but got {ind!r}")  # fmt: skip
    rows, cols = math.prod(A.shape[:ind]), math.prod(A.shape[ind:])
    if rows != cols:
        raise ShapeError(
            f"linalg.tensorinv: Expected self to satisfy the requirement "
            f"prod(self.shape[ind:]) == prod(self.shape[:ind]), but got {cols} != {rows} "
            f"(shape {list(A.shape)}, ind {ind})"
        )
    from .linalg import inv

    square = call("reshape", A, shape=(rows, cols))
    return call("reshape", inv(square), shape=(*A.shape[ind:], *A.shape[:ind]))


@takes_out
def tensorsolve(input, other, dims=None):  # noqa: A002
    """X with `tensordot(A, X, X.ndim) == B`: A's dims in `dims` move to the end first; then
    A's leading dims (as many as B has) and trailing dims (X's shape) must hold as many
    elements as B.

    >>> import kiln as kn
    >>> kn.linalg.tensorsolve(kn.tensor([[2.0, 0.0], [0.0, 4.0]]), kn.tensor([2.0, 2.0]))
    tensor([1.0000, 0.5000])
    """
    A, B = lift(input, other)  # noqa: N806 (torch's parser names them input, other)
    if dims is not None:
        moved = [d % A.ndim for d in dims]
        rest = [d for d in range(A.ndim) if d not in moved]
        A = call("transpose", A, perm=(*rest, *moved))
    rows = math.prod(B.shape)
    result_shape = tuple(A.shape[B.ndim :])
    cols = math.prod(result_shape)
    if cols != rows or math.prod(A.shape[: B.ndim]) != rows:
        raise ShapeError(
            f"linalg.tensorsolve: Expected self to satisfy the requirement "
            f"prod(self.shape[other.ndim:]) == prod(self.shape[:other.ndim]), but got {cols} "
            f"!= {rows} (A {list(A.shape)}, B {list(B.shape)})"
        )
    from .linalg import solve

    x = solve(call("reshape", A, shape=(rows, cols)), call("reshape", B, shape=(rows,)))
    return call("reshape", x, shape=result_shape)


def _singular(k) -> str:
    return (f"The solver failed because the input matrix is singular (U[{k},{k}] is zero in "
            "its LU factorization)")  # fmt: skip


@takes_out
def solve_ex(A, B, *, left: bool = True, check_errors: bool = False):  # noqa: N803
    """A named tuple `(result, info)`: `linalg.solve(A, B, left=left)`, and per matrix 0 or
    (singular) the 1-based index of the first zero pivot of A's LU factorization (int32). A
    singular system's result is not finite; with `check_errors` it raises `LinAlgError` (in
    graph mode, when the function runs).

    >>> import kiln as kn
    >>> kn.linalg.solve_ex(kn.tensor([[2.0, 0.0], [0.0, 4.0]]), kn.tensor([2.0, 2.0])).result
    tensor([1.0000, 0.5000])
    """
    from .linalg import solve

    A, B = lift(A, B)
    _same_dtype("linalg.solve_ex: Expected A and B", A, B)
    A = _matrices(A, "solve_ex")
    info = call("inv_info", A)
    if check_errors:
        _raise_on_info(info, "solve_ex", _singular)
        return return_types.linalg_solve_ex(solve(A, B, left=left), info)
    if not isinstance(info, Symbol) and not bool(m.any(info)):
        return return_types.linalg_solve_ex(solve(A, B, left=left), info)
    inverse = inv_ex(A).inverse  # a singular matrix's: NaN, as its solutions
    vector = vector_rhs(A.shape, B.shape)
    if vector:
        x = s.squeeze(_matmul(inverse, s.unsqueeze(B, -1)), -1)
    else:
        x = _matmul(inverse, B) if left else _matmul(B, inverse)
    if left:  # (X A = B's X: row-major, as solve's)
        x = column_major(x, "LinalgSolveExBackward0", A, B)
    return return_types.linalg_solve_ex(x, info)


@takes_out
def lu_factor_ex(A, *, pivot: bool = True, check_errors: bool = False):  # noqa: N803
    """A named tuple `(LU, pivots, info)`: `linalg.lu_factor`'s results, and per matrix 0 or
    the 1-based index of U's first zero diagonal entry (int32); with `check_errors` a
    nonzero info raises `LinAlgError` (in graph mode, when the function runs).

    >>> import kiln as kn
    >>> kn.linalg.lu_factor_ex(kn.tensor([[1.0, 2.0], [2.0, 4.0]])).info
    tensor(2, dtype=kiln.int32)
    """
    packed, pivots = lu_factor_unchecked(A, pivot=pivot)
    info = _first_zero_pivot(packed)
    if check_errors:
        _raise_on_info(info, "lu_factor_ex", lambda k: f"U[{k},{k}] is zero")
    return return_types.linalg_lu_factor_ex(packed, pivots, info)


@takes_out
def ldl_factor_ex(input, *, hermitian: bool = False, check_errors: bool = False):  # noqa: A002
    """A named tuple `(LD, pivots, info)`: LAPACK's Bunch-Kaufman factorization of each
    symmetric (Hermitian, with `hermitian`) matrix from its lower triangle, as
    `ldl_factor`'s, and LAPACK's info code (int32; nonzero: D is singular); with
    `check_errors` a nonzero info raises `LinAlgError` (eagerly). No gradient (PyTorch has
    none).

    >>> import kiln as kn
    >>> kn.linalg.ldl_factor_ex(kn.tensor([[4.0, 2.0], [2.0, 3.0]])).info
    tensor(0, dtype=kiln.int32)
    """
    A = _matrices(input, "ldl_factor_ex")  # noqa: N806 (torch's parser names it input)
    attrs = {"hermitian": bool(hermitian)}
    info = call("ldl_info", A, **attrs)
    if check_errors:
        _raise_on_info(info, "ldl_factor_ex", lambda k: f"D[{k},{k}] is zero")
    return return_types.linalg_ldl_factor_ex(
        column_major(call("ldl_factor", A, **attrs)), call("ldl_pivots", A, **attrs), info
    )


@takes_out
def ldl_factor(input, *, hermitian: bool = False):  # noqa: A002
    """A named tuple `(LD, pivots)`: the compact LDLᵀ (LDLᴴ with `hermitian`) factorization
    of each symmetric matrix, read from its lower triangle, as LAPACK's sytrf/hetrf leaves it
    (L below the diagonal, the 1 x 1 and 2 x 2 blocks of D on it, LD's upper part zero) and
    its 1-based pivots (negative for a 2 x 2 block), as `ldl_solve` takes them. No gradient.

    >>> import kiln as kn
    >>> LD, pivots = kn.linalg.ldl_factor(kn.tensor([[4.0, 2.0], [2.0, 3.0]]))
    >>> LD.tolist(), pivots.tolist()
    ([[4.0, 0.0], [0.5, 2.0]], [1, 2])
    """
    A = _matrices(input, "ldl_factor")  # noqa: N806 (torch's parser names it input)
    attrs = {"hermitian": bool(hermitian)}
    return return_types.linalg_ldl_factor(
        column_major(call("ldl_factor", A, **attrs)), call("ldl_pivots", A, **attrs)
    )


@takes_out
def ldl_solve(LD, pivots, B, *, hermitian: bool = False):  # noqa: N803
    """X with `A X = B` from `ldl_factor`'s `(LD, pivots)` of A (LAPACK's sytrs/hetrs),
    batched and broadcast over leading dims; B has at least 2 dims. No gradient.

    >>> import kiln as kn
    >>> A = kn.tensor([[4.0, 2.0], [2.0, 3.0]])
    >>> kn.linalg.ldl_solve(*kn.linalg.ldl_factor(A), kn.tensor([[6.0], [5.0]])).tolist()
    [[1.0], [1.0]]
    """
    LD, pivots, B = lift(LD, pivots, B)  # noqa: N806
    return call("ldl_solve", LD, pivots, B, hermitian=bool(hermitian))


@takes_out
def geqrf(input):  # noqa: A002
    """A named tuple `(a, tau)`: LAPACK's compact QR of each matrix, R on and above the
    diagonal and the Householder vectors below it, and the reflectors' scales (as
    `householder_product` and `ormqr` take them). No gradient (PyTorch has none).

    >>> import kiln as kn
    >>> a, tau = kn.geqrf(kn.tensor([[3.0], [4.0]], dtype=kn.float64))
    >>> a.tolist(), tau.tolist()  # R = -5, v = (1, 0.5), tau = 1 + 3/5
    ([[-5.0], [0.5]], [1.6])
    """
    (A,) = lift(input)  # noqa: N806
    if A.ndim < 2:
        raise ShapeError(f"geqrf: input must have at least 2 dimensions, got {list(A.shape)}")
    return return_types.geqrf(column_major(call("geqrf", A)), call("geqrf_tau", A))


@takes_out
def ormqr(input, input2, input3, left: bool = True, transpose: bool = False):  # noqa: A002
    """Q @ C (C @ Q with `left=False`; Qᴴ with `transpose`) for the full m x m Q that
    `geqrf`'s `(input, input2)` = `(a, tau)` hold, C = `input3`, as PyTorch's `ormqr`: Q is
    `householder_product` of a's first m columns and `tau`, both widened with zeros to m
    (reflections scaled by 0 are the identity), so gradients reach all three.

    >>> import kiln as kn
    >>> a, tau = kn.geqrf(kn.tensor([[3.0], [4.0]], dtype=kn.float64))
    >>> q1 = kn.ormqr(a, tau, kn.tensor([[1.0], [0.0]], dtype=kn.float64))  # -(3, 4)/5
    >>> [round(v, 12) for v in q1.flatten().tolist()]
    [-0.6, -0.8]
    """
    a, tau, other = lift(input, input2, input3)
    if a.ndim < 2 or other.ndim < 2:
        raise ShapeError(f"ormqr: input and input3 must have at least 2 dimensions, got "
                         f"{list(a.shape)} and {list(other.shape)}")  # fmt: skip
    m, n = a.shape[-2], a.shape[-1]
    rows = other.shape[-2] if left else other.shape[-1]
    if rows != m:
        side = "input3.shape[-2]" if left else "input3.shape[-1]"
        raise ShapeError(f"ormqr: {side} must equal input.shape[-2] ({m}), got {rows}")
    # the m x m Q: a's first m columns (zeros added), tau's first m scales (zeros added)
    square = s.concat([a, _zeros_beside(a, (*a.shape[:-1], m - n))], -1) if m > n else a[..., :m]
    k = tau.shape[-1]
    taus = s.concat([tau, _zeros_beside(tau, (*tau.shape[:-1], m - k))], -1) if m > k else tau
    q = householder_product(square, taus)
    if transpose:
        q = call("transpose", q, perm=(*range(q.ndim - 2), q.ndim - 1, q.ndim - 2))
        q = call("conj", q) if q.dtype.kind == "c" else q
    return _matmul(q, other) if left else _matmul(other, q)


def _zeros_beside(like, shape):
    """Zeros of `shape` beside `like` (its dtype, graph or device)."""
    return _zeros(tuple(shape), like)
