"""`kn.linalg`'s pseudo-inverse, least squares and rank, PyTorch's `torch.linalg` ones:
`pinv` (and the older `pinverse`), `lstsq`, `matrix_rank`; eager (with autograd), graph mode
and `kn.compile`, batched, real and complex. Importable from kiln/frontend/linalg_factor.py too.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from ..array_types import return_types
from ..eager.autograd import name_history
from ..errors import ArgumentTypeError, ShapeError, UsageError
from ..graph.core import Symbol
from . import math as m
from . import shape as s
from .autocast import autocast_op
from .core import call, lift
from .linalg_factor import _matrices, _mH, _real_part, _zeros, eigh, eigvalsh, svd, svdvals
from .linalg_layouts import column_major
from .out import takes_out


def _real_number(value, what, name):
    if value is None:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)):
        raise ArgumentTypeError(
            f"linalg.{name}: {what} must be a Python number or None, got "
            f"{type(value).__name__} (kiln takes no tensor tolerances)"
        )
    return float(value)


def _tolerances(A, atol, rtol, name):  # noqa: N803
    """PyTorch's defaults: atol 0; rtol eps * max(m, n) unless atol > 0 is given (then 0)."""
    atol = _real_number(atol, "atol", name)
    rtol = _real_number(rtol, "rtol", name)
    if rtol is None and atol is not None and atol > 0:
        rtol = 0.0
    if rtol is None and isinstance(A.shape[-2], int) and isinstance(A.shape[-1], int):
        eps = float(np.finfo(A.dtype).eps) if dt.is_differentiable(A.dtype) else 0.0
        rtol = eps * max(A.shape[-2], A.shape[-1])
    return (atol or 0.0), rtol  # rtol None: the kernel's eps * max(m, n), the dims symbolic


# -- pseudo-inverse, least squares, rank -------------------------------------------------------


@takes_out
@autocast_op("fp32")
def pinv(input, rcond=None, hermitian: bool = False, *, atol=None, rtol=None):  # noqa: A002
    """The Moore-Penrose pseudo-inverse of each matrix in the last two dims, from its SVD (its
    eigendecomposition with `hermitian`): singular values at or below
    max(atol, rtol * the largest) count as zero (atol 0 and rtol eps * max(m, n) when not
    given; rtol 0 when only atol > 0 is). Its gradient is that of A⁺ where A's rank is fixed.
    Complex matrices (Hermitian ones with `hermitian`) too. PyTorch's older form
    `pinv(A, rcond, hermitian)` is `rtol=rcond` with atol 0.

    >>> import kiln as kn
    >>> kn.linalg.pinv(kn.tensor([[2.0, 0.0], [0.0, 0.0]])).tolist()
    [[0.5, 0.0], [0.0, 0.0]]
    """
    A = input  # noqa: N806 (torch's parser names it input, its docstring A)
    if rcond is not None:
        if atol is not None or rtol is not None:
            raise ArgumentTypeError("linalg.pinv() takes rcond (the older form) or atol/rtol, "
                                    "not both")  # fmt: skip
        atol, rtol = 0.0, rcond
    A = _matrices(A, "pinv")
    if _is_tensor(atol) or _is_tensor(rtol):
        return _pinv_tensor_tolerances(A, atol, rtol, bool(hermitian))
    atol, rtol = _tolerances(A, atol, rtol, "pinv")
    out = call("pinv", A, atol=atol, rtol=rtol, hermitian=bool(hermitian))
    return name_history(out, "LinalgPinvBackward0", A)


def _is_tensor(value) -> bool:
    return hasattr(value, "shape") and hasattr(value, "dtype")


def _pinv_tensor_tolerances(A, atol, rtol, hermitian: bool):  # noqa: N803
    """`pinv` with tensor tolerances (one per matrix, broadcast over A's batch), the cutoff
    computed from A's singular values (|eigenvalues| with `hermitian`) when the graph runs."""
    if 0 in (A.shape[-2], A.shape[-1]):  # nothing to cut: the empty pseudo-inverse
        return call("pinv", A, atol=0.0, rtol=0.0, hermitian=hermitian)
    if rtol is None:  # PyTorch's default, 0 beside a given atol
        rtol = 0.0 if atol is not None else float(np.finfo(A.dtype).eps) * max(A.shape[-2:])
    real = dt.to_real(A.dtype)  # (the singular values' dtype)
    bounds = [m.cast(t, real) if _is_tensor(t) else float(t or 0.0) for t in (atol, rtol)]
    atol, rtol = (s.unsqueeze(t, -1) if _is_tensor(t) else t for t in bounds)
    if hermitian:
        w, v = eigh(A)
        sigma, left, right = m.abs(w), v, _mH(v)
    else:
        left, sigma, right = svd(A, full_matrices=False)
    cutoff = m.maximum(atol, m.mul(rtol, m.amax(sigma, -1, keepdim=True)))
    keep = m.greater(sigma, cutoff)
    weights = m.where(keep, m.div(1.0, m.where(keep, w if hermitian else sigma, 1.0)), 0.0)
    return m.matmul(m.mul(_mH(right), s.unsqueeze(weights, -2)), _mH(left))


def pinverse(input, rcond: float = 1e-15):  # noqa: A002
    """`torch.pinverse(A, rcond)`: `linalg.pinv(A, rtol=rcond)`.

    >>> import kiln as kn
    >>> kn.pinverse(kn.tensor([[4.0]])).tolist()
    [[0.25]]
    """
    return pinv(input, rtol=rcond)


@takes_out
@autocast_op("fp32")
def lstsq(input, b, rcond=None, *, driver=None):  # noqa: A002
    """The least-squares solutions of `A X = B` (minimum norm where A is rank-deficient), as
    PyTorch's CPU default driver "gelsy" gives them: a named tuple `(solution, residuals,
    rank, singular_values)` with `rank` LAPACK's gelsy rank (int64), `residuals` and
    `singular_values` empty (gelsy computes neither; the other drivers' as PyTorch's).
    Singular values of A at or below `rcond` (default eps * max(m, n)) times the largest
    count as zero. The solution is A⁺ B, with A⁺'s gradient.

    >>> import kiln as kn
    >>> A = kn.tensor([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]])
    >>> out = kn.linalg.lstsq(A, kn.tensor([[1.0], [2.0], [3.0]]))
    >>> out.solution.tolist(), int(out.rank)
    ([[1.0], [2.0]], 2)
    """
    A, B = input, b  # noqa: N806 (torch's parser names them input, b; its docstring A, B)
    if driver not in (None, "gelsy", "gels", "gelsd", "gelss"):
        raise UsageError(f"linalg.lstsq: parameter `driver` should be one of (gels, gelsy, "
                         f"gelsd, gelss), got {driver!r}")  # fmt: skip
    A, B = lift(A, B)
    A = _matrices(A, "lstsq")
    if B.ndim < 1:
        raise ShapeError("linalg.lstsq: B must have at least 1 dim")
    vector = B.ndim == A.ndim - 1
    if B.shape[-2 if not vector else -1] != A.shape[-2]:
        raise ShapeError(f"linalg.lstsq: A {list(A.shape)} and B {list(B.shape)} have "
                         "different numbers of rows")  # fmt: skip
    rcond = _real_number(rcond, "rcond", "lstsq")  # None: eps * max(m, n), in the kernels
    if driver in (None, "gelsy"):
        rank = call("lstsq_rank", A, rcond=rcond)  # first: a graph's first node without ONNX
    x = m.matmul(call("pinv", A, atol=0.0, rtol=rcond, hermitian=False), B)
    # column-major, as PyTorch's (whose X is a view of a buffer of max(m, n) rows: strides
    # (..., 1, max(m, n)); kiln's are (..., 1, n))
    x = column_major(x, "LinalgLstsqBackward0", A, B, matrices=not vector)
    empty = _zeros((0,), _real_part(A, A))  # residuals and singular values: real
    if driver in (None, "gelsy"):
        return return_types.linalg_lstsq(x, empty, rank, empty)
    return _lstsq_other_drivers(A, B, x, rcond, driver, vector, empty)


def _lstsq_other_drivers(A, B, x, rcond, driver, vector, empty):  # noqa: N803
    """`lstsq`'s other results as PyTorch's drivers give them: "gels" no rank, "gelsd" and
    "gelss" the SVD rank (singular values above rcond times the largest) and the singular
    values; every driver but gelsy the squared residuals of tall full-rank problems (under
    kn.compile or in graph mode the rank is not known: tall problems get them)."""
    rows, cols = A.shape[-2], A.shape[-1]
    rank, values = _zeros((0,), m.cast(_real_part(A, A), dt.int64)), empty
    if driver != "gels":
        values = svdvals(A)
        cut = float(np.finfo(A.dtype).eps) * max(rows, cols) if rcond is None else rcond
        above = m.greater(values, m.mul(m.amax(values, -1, keepdim=True), cut))
        rank = m.sum(m.cast(above, dt.int64), -1)
    full = driver == "gels" or isinstance(rank, Symbol) or bool(m.all(m.equal(rank, cols)))
    if rows > cols and full:
        r = m.sub(m.matmul(A, x), B)
        r2 = call("real", m.mul(r, call("conj", r))) if A.dtype.kind == "c" else m.square(r)
        empty = m.sum(r2, -1, keepdim=True) if vector else m.sum(r2, -2)
    return return_types.linalg_lstsq(x, empty, rank, values)


@takes_out
@autocast_op("fp32")
def matrix_rank(input, tol=None, hermitian: bool = False, *, atol=None, rtol=None):  # noqa: A002
    """The number of singular values (|eigenvalues| with `hermitian`) of each matrix above
    max(atol, rtol * the largest), int64; tolerances as `pinv`'s (`tol`, PyTorch's other form,
    which takes it and `hermitian` by position: the atol, with rtol 0).

    >>> import kiln as kn
    >>> int(kn.linalg.matrix_rank(kn.tensor([[1.0, 2.0], [2.0, 4.0]])))
    1
    """
    A = input  # noqa: N806 (torch's parser names it input, its docstring A)
    A = _matrices(A, "matrix_rank")
    if tol is not None:
        atol, rtol = tol, 0.0
    atol, rtol = _tolerances(A, atol, rtol, "matrix_rank")
    if A.shape[-2] == 0 or A.shape[-1] == 0:
        return m.cast(m.mul(m.sum(A, dim=(-2, -1)), 0), dt.int64)
    s = m.abs(eigvalsh(A)) if hermitian else svdvals(A)
    s = call("stop_gradient", s)
    cutoff = m.maximum(m.mul(m.amax(s, dim=-1, keepdim=True), rtol), atol)
    return m.sum(m.cast(m.greater(s, cutoff), dt.int64), dim=-1)
