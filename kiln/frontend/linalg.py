"""`kn.linalg`: PyTorch's `torch.linalg` functions `norm`, `vector_norm`, `matrix_norm`,
`cond`, `det`, `slogdet`, `inv`, `solve`, `cholesky` and `matrix_power` (batched over leading
dims; `det`, `inv`, `solve`, `cholesky` and slogdet's two results are primitives with
gradients, the norms composites), and the factorizations and solvers of
kiln/frontend/linalg_factor.py (`qr`, `eigh`, `svd`, `lu`, `lstsq`, `pinv`, ...)."""

from __future__ import annotations

import math

from .. import shapes as sh
from ..eager.autograd import name_history
from ..errors import LinAlgError, ShapeError, UsageError
from . import math as m
from .autocast import autocast_op
from .core import call, lift
from .linalg_factor import (
    _same_dtype,
    cholesky_ex,
    eig,
    eigh,
    eigvals,
    eigvalsh,
    householder_product,
    inv_ex,
    lstsq,
    lu,
    lu_factor,
    lu_solve,
    matrix_exp,
    matrix_rank,
    multi_dot,
    pinv,
    qr,
    solve_triangular,
    svd,
    svdvals,
    vecdot,
)
from .linalg_layouts import column_major, fresh
from .linalg_more import (
    cross,
    diagonal,
    ldl_factor,
    ldl_factor_ex,
    ldl_solve,
    lu_factor_ex,
    matmul,
    solve_ex,
    tensorinv,
    tensorsolve,
    vander,
)
from .out import takes_out
from .torch_extra_linalg import matrix_power, norm_input, p_norm

__all__ = [
    "LinAlgError", "cholesky", "cholesky_ex", "cond", "cross", "det", "diagonal", "eig", "eigh",
    "eigvals", "eigvalsh", "householder_product", "inv", "inv_ex", "ldl_factor", "ldl_factor_ex",
    "ldl_solve",
    "logdet", "lstsq", "lu", "lu_factor", "lu_factor_ex", "lu_solve", "matmul", "matrix_exp",
    "matrix_norm", "matrix_power", "matrix_rank", "multi_dot", "norm", "pinv", "qr", "slogdet",
    "solve", "solve_ex", "solve_triangular", "svd", "svdvals", "tensorinv", "tensorsolve",
    "vander", "vecdot", "vector_norm",
]  # fmt: skip


def _sum(x, dims, keepdim):
    return call("reduce_sum", x, axes=dims, keepdims=bool(keepdim))


def _reduce(op, x, dims, keepdim):
    return call(op, x, axes=dims, keepdims=bool(keepdim))


@takes_out
@autocast_op(None, cuda="fp32")
def vector_norm(x, ord=2, dim=None, keepdim: bool = False, *, dtype=None):  # noqa: A002
    """The `ord`-norm of `x` over `dim` (None: all elements) as vectors: `ord` a number,
    `inf` (max |x|), `-inf` (min |x|) or 0 (the count of nonzeros).

    >>> import kiln as kn
    >>> v = kn.tensor([3.0, -4.0])
    >>> kn.linalg.vector_norm(v), kn.linalg.vector_norm(v, 1), kn.linalg.vector_norm(v, 0)
    (tensor(5.), tensor(7.), tensor(2.))
    """
    (x,) = lift(x)
    x = norm_input("linalg.vector_norm", x, dtype)
    if x.dtype.kind == "c":  # the norm of the magnitudes
        x = call("abs", x)
    dims = sh.normalize_axes(dim, x.ndim)
    if ord < 0 or ord == math.inf:  # no identity: an empty slice has no such norm
        for d in range(x.ndim) if dims is None else dims:
            if x.shape[d] == 0:
                where = "an empty tensor" if dims is None else f"the dimension {d}"
                raise UsageError(f"linalg.vector_norm cannot compute the {ord} norm on {where} "
                                 "because the operation does not have an identity")  # fmt: skip
    return name_history(p_norm(x, ord, dims, keepdim), "LinalgVectorNormBackward0", x)


@takes_out
@autocast_op(None, cuda="fp32")
def matrix_norm(input, ord="fro", dim=(-2, -1), keepdim: bool = False, *, dtype=None):  # noqa: A002
    """The `ord`-norm of the matrices in dims `dim`: "fro", 1 or -1 (max or min column sum
    of |A|), inf or -inf (max or min row sum), "nuc" (the sum of the singular values), 2 or
    -2 (the largest or smallest singular value).

    >>> import kiln as kn
    >>> kn.linalg.matrix_norm(kn.tensor([[1.0, -2.0], [3.0, 4.0]]), 1)
    tensor(6.)
    """
    A = input  # noqa: N806 (torch's parser names it input, its docstring A)
    (A,) = lift(A)
    A = norm_input("linalg.matrix_norm", A, dtype)  # noqa: N806
    if A.ndim < 2:
        raise ShapeError(f"linalg.matrix_norm: the input must have 2 dims or more, got {A.ndim}")
    rows, cols = (sh.normalize_axis(d, A.ndim) for d in dim)
    if rows == cols:
        raise ShapeError(f"linalg.matrix_norm: dims must be different, got {tuple(dim)}")
    if ord not in ("fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf):
        raise UsageError(f"linalg.matrix_norm: Order {ord} not supported.")
    if ord == "fro":
        return vector_norm(A, 2, (rows, cols), keepdim)
    if ord in ("nuc", 2, -2):
        moved = call("transpose", A, perm=(*(i for i in range(A.ndim) if i not in (rows, cols)),
                                           rows, cols))  # fmt: skip
        s = svdvals(moved)
        if ord == "nuc" or (ord == 2 and s.shape[-1] == 0):  # an empty max is 0, as PyTorch's
            out = m.sum(s, dim=-1)
        else:
            out = _reduce("reduce_max" if ord == 2 else "reduce_min", s, (s.ndim - 1,), False)
        if not keepdim:
            return out
        for d in sorted((rows, cols)):
            out = call("reshape", out, shape=(*out.shape[:d], 1, *out.shape[d:]))
        return out
    summed, over = (rows, cols) if ord in (1, -1) else (cols, rows)
    sums = _sum(m.abs(A), (summed,), True)
    if ord > 0 and A.shape[over] == 0:  # the max of no sums is 0, as PyTorch's
        out = _sum(sums, (over,), True)
    else:
        out = _reduce("reduce_max" if ord > 0 else "reduce_min", sums, (over,), True)
    if keepdim:
        return out
    return call("reshape", out, shape=tuple(d for i, d in enumerate(out.shape)
                                              if i not in (rows, cols)))  # fmt: skip


@takes_out
@autocast_op(None, cuda="fp32")
def norm(input, ord=None, dim=None, keepdim: bool = False, *, dtype=None):  # noqa: A002
    """PyTorch's `linalg.norm`: with `ord=None`, the 2-norm of the flattened input (or over
    `dim`); otherwise a vector norm (`dim` an int, or a 1-D input) or a matrix norm (`dim` a
    pair, or a 2-D input).

    >>> import kiln as kn
    >>> kn.linalg.norm(kn.tensor([[1.0, 2.0], [2.0, 4.0]]))
    tensor(5.)
    """
    (A,) = lift(input)  # (torch.linalg.norm names it input, its other functions A)
    if isinstance(dim, int):
        dim = (dim,)
    if ord is None:
        if dim is not None and len(dim) == 2:
            return matrix_norm(A, "fro", dim, keepdim, dtype=dtype)
        return vector_norm(A, 2, dim, keepdim, dtype=dtype)
    if isinstance(ord, str):  # "fro" and "nuc" are matrix norms, of a 1-D input too
        return matrix_norm(A, ord, (-2, -1) if dim is None else dim, keepdim, dtype=dtype)
    if dim is None:
        if A.ndim not in (1, 2):
            raise ShapeError(f"linalg.norm: with ord given, the input must be 1-D or 2-D, "
                             f"got {A.ndim}-D")  # fmt: skip
        dim = tuple(range(A.ndim))
    if len(dim) == 1:
        return vector_norm(A, ord, dim, keepdim, dtype=dtype)
    return matrix_norm(A, ord, dim, keepdim, dtype=dtype)


@takes_out
def det(A):  # noqa: N803
    """The determinants of the square matrices in the last two dims.

    >>> import kiln as kn
    >>> kn.linalg.det(kn.tensor([[2.0, 1.0], [1.0, 3.0]]))
    tensor(5.)
    """
    (A,) = lift(A)
    return name_history(call("det", A), "LinalgDetBackward0", A)


@takes_out
@autocast_op("fp32")
def inv(A):  # noqa: N803
    """The inverses of the square matrices in the last two dims (singular ones raise).

    >>> import kiln as kn
    >>> kn.linalg.inv(kn.tensor([[2.0, 0.0], [0.0, 4.0]])).tolist()
    [[0.5, 0.0], [0.0, 0.25]]
    """
    (A,) = lift(A)
    return column_major(call("inv", A), "LinalgInvExBackward0", A)


@takes_out
@autocast_op("fp32")
def solve(A, B, *, left: bool = True):  # noqa: N803
    """X with `A @ X = B` (B a batch of vectors when it has one dim fewer than A); with
    `left=False`, X with `X @ A = B`.

    >>> import kiln as kn
    >>> kn.linalg.solve(kn.tensor([[2.0, 0.0], [0.0, 4.0]]), kn.tensor([2.0, 2.0])).tolist()
    [1.0, 0.5]
    """
    A, B = lift(A, B)
    _same_dtype("linalg.solve: Expected A and B", A, B)
    if left:
        return column_major(call("solve", A, B), "LinalgSolveExBackward0", A, B)
    # X A = B  <=>  A^T X^T = B^T (X^T column-major: X row-major, as PyTorch's)
    swap_a = (*range(A.ndim - 2), A.ndim - 1, A.ndim - 2)
    swap_b = (*range(B.ndim - 2), B.ndim - 1, B.ndim - 2)
    xt = call("solve", call("transpose", A, perm=swap_a), call("transpose", B, perm=swap_b))
    xt = column_major(xt, "LinalgSolveExBackward0", A, B)
    return fresh(call("transpose", xt, perm=swap_b), "LinalgSolveExBackward0", A, B)


@takes_out
@autocast_op("fp32")
def cond(input, p=None):  # noqa: A002
    """The condition number of each matrix in the last two dims in the `p`-norm: with `p`
    None, 2 or -2 the ratio of its largest and smallest singular values (or its inverse, -2),
    any matrix; with "fro", "nuc", inf, -inf, 1 or -1, `matrix_norm(A, p) *
    matrix_norm(inv(A), p)`, square matrices (a singular one gives inf, as PyTorch's).

    >>> import kiln as kn
    >>> kn.linalg.cond(kn.tensor([[2.0, 0.0], [0.0, 0.5]]))
    tensor(4.)
    """
    A = input  # noqa: N806 (torch's parser names it input, its docstring A)
    (A,) = lift(A)
    if A.ndim < 2:
        raise ShapeError(f"linalg.cond: the input must have at least 2 dims, got {A.ndim}")
    if p in (None, 2, -2):
        s = svdvals(A)
        big = _reduce("reduce_max", s, (s.ndim - 1,), False)
        small = _reduce("reduce_min", s, (s.ndim - 1,), False)
        return m.div(small, big) if p == -2 else m.div(big, small)
    if p not in ("fro", "nuc", math.inf, -math.inf, 1, -1):
        raise UsageError(f"linalg.cond: got an invalid norm type {p!r}")
    if A.shape[-1] != A.shape[-2]:
        raise ShapeError(f"linalg.cond: with p={p!r} the matrices must be square, got "
                         f"{list(A.shape)}")  # fmt: skip
    inverse, info = inv_ex(A)
    singular = m.greater(info, 0)  # inf there, as PyTorch's (the inverse's norm is not read)
    wide = call("reshape", singular, shape=(*singular.shape, 1, 1))
    inverse = m.where(wide, 0.0, inverse)
    return m.where(singular, math.inf, m.mul(matrix_norm(A, p), matrix_norm(inverse, p)))


class SlogdetResult(tuple):
    """`(sign, logabsdet)`, also by name, as PyTorch's named tuple."""

    __slots__ = ()
    _fields = ("sign", "logabsdet")  # a named tuple to kn.compile, which rebuilds its outputs

    def __new__(cls, sign, logabsdet):
        return super().__new__(cls, (sign, logabsdet))

    sign = property(lambda self: self[0])
    logabsdet = property(lambda self: self[1])


@takes_out
@autocast_op("fp32")
def slogdet(A):  # noqa: N803
    """`(sign, logabsdet)` of the determinants of the square matrices in the last two dims:
    the log of |det| stays finite where `det` itself under- or overflows.

    >>> import kiln as kn
    >>> kn.linalg.slogdet(kn.tensor([[2.0, 1.0], [1.0, -3.0]]))  # det -7
    (tensor(-1.), tensor(1.9459))
    """
    (A,) = lift(A)
    sign, logabsdet = (name_history(call(op, A), "LinalgSlogdetBackward0", A)
                       for op in ("slogdet_sign", "logabsdet"))  # fmt: skip
    return SlogdetResult(sign, logabsdet)


@autocast_op("fp32")
def logdet(A):  # noqa: N803
    """log(det A): NaN where the determinant is negative, -inf where it is 0 (PyTorch's); of a
    complex A the complex log, log|det| + i arg(det).

    >>> import kiln as kn
    >>> kn.logdet(kn.tensor([[2.0, 0.0], [0.0, 3.0]]))
    tensor(1.7918)
    """
    sign, log_abs = slogdet(A)
    if sign.dtype.kind == "c":  # log(sign) + log|det|: the phase as the imaginary part
        return m.add(m.log(sign), m.cast(log_abs, sign.dtype))
    nan = m.where(sign < 0, float("nan"), log_abs)
    return m.where(sign == 0, float("-inf"), nan)


@takes_out
@autocast_op("fp32")
def cholesky(input, *, upper: bool = False):  # noqa: A002
    """The lower (or, with `upper`, upper) Cholesky factor of each symmetric positive-definite
    matrix in the last two dims (only its lower triangle is read); a matrix that is not
    positive-definite raises `kn.linalg.LinAlgError` (a RuntimeError), as PyTorch's. A
    complex Hermitian A = L Lᴴ gives L (the upper factor Lᴴ), with PyTorch's gradient.

    >>> import kiln as kn
    >>> kn.linalg.cholesky(kn.tensor([[4.0, 2.0], [2.0, 5.0]]))
    tensor([[2., 0.],
            [1., 2.]])
    """
    A = input  # noqa: N806 (torch's parser names it input, its docstring A)
    (A,) = lift(A)
    lower = call("cholesky", A)
    if upper:
        lower = call("transpose", lower, perm=(*range(A.ndim - 2), A.ndim - 1, A.ndim - 2))
        lower = call("conj", lower) if A.dtype.kind == "c" else lower  # Lᴴ
    return column_major(lower, "LinalgCholeskyExBackward0", A)


@takes_out
def cholesky_method(input, upper: bool = False):  # noqa: A002
    """`torch.cholesky(input, upper=False)` (the older name; `upper` positional)."""
    return column_major(cholesky(input, upper=upper), "CholeskyBackward0", input)


# Shorter names PyTorch keeps at the top level.
inverse = inv
