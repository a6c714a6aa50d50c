"""PyTorch's order statistics beyond `median`: `mode`, `nanmedian`, `quantile` and
`nanquantile`, each built on one stable sort, so they trace, compile and differentiate (the
gradient goes to the element each value was read from)."""

from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from .. import shapes as sh
from ..array_types import return_types
from ..errors import (
    ArgumentTypeError,
    ShapeMismatchError,
    UnknownModeError,
    UnsupportedDTypeError,
    call_error,
)
from ..graph.core import Symbol
from . import core
from . import math as m
from . import shape as s
from . import torch_math as tm
from . import torch_shape as ts
from .core import lift
from .out import takes_out
from .torch_extra_math import median_of_nothing
from .torch_extra_shape import movedim

__all__ = ["mode", "nanmedian", "nanquantile", "quantile"]


def _int_dim(op: str, dim, ndim: int) -> int:
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)):
        raise ArgumentTypeError(f"{op}(): argument 'dim' must be int, not {type(dim).__name__}")
    return sh.normalize_axis(int(dim), max(ndim, 1))


def _const(array, like):
    return lift(array, context=(like,))[0]


def _zero_index(x):
    """An int64 zero of x's shape (the index of a 0-d input's only element)."""
    return m.cast(m.mul(m.cast(x, dt.int8), 0), dt.int64)


@takes_out
def mode(input, dim: int = -1, keepdim: bool = False):  # noqa: A002
    """The most frequent value along `dim` (the least of those tied) and the index of its last
    occurrence, a `(values, indices)` named tuple, as PyTorch's.

    >>> import kiln as kn
    >>> kn.mode(kn.tensor([[1, 2, 2, 3, 3, 1], [5, 5, 4, 4, 4, 5]]), 1)
    kiln.return_types.mode(
    values=tensor([1, 4]),
    indices=tensor([5, 4]))
    """
    (x,) = lift(input)
    d = _int_dim("mode", dim, x.ndim)
    if x.ndim == 0:
        return return_types.mode(x, _zero_index(x))
    last = movedim(x, d, -1)
    n = last.shape[-1]
    values, order = tm.sort(last, -1, stable=True)  # equal values: original order kept
    # runs of equal values in sorted order (NaN != NaN: each NaN a run of its own)
    pos = _const(np.arange(n, dtype=np.int64), x)
    differs = m.not_equal(
        s.getitem(values, (..., slice(1, None))), s.getitem(values, (..., slice(0, n - 1)))
    )
    edge = m.greater_equal(s.getitem(order, (..., slice(0, 1))), 0)  # all true
    starts = s.concat([edge, differs], -1)
    ends = s.concat([differs, edge], -1)
    start = tm.cummax(m.where(starts, pos, 0), -1).values
    end = ts.flip(tm.cummin(ts.flip(m.where(ends, pos, n - 1), -1), -1).values, -1)
    # the first longest run is the least value's; its last element is the last occurrence
    best = m.argmax(m.sub(end, start), -1, True)
    at = s.take_along_axis(end, best, -1)
    v = s.take_along_axis(values, at, -1)
    i = s.take_along_axis(order, at, -1)
    if not keepdim:
        v, i = s.squeeze(v, -1), s.squeeze(i, -1)
    else:
        v, i = movedim(v, -1, d), movedim(i, -1, d)
    return return_types.mode(v, i)


def _non_nan(values):
    """How many of `values` (sorted along the last dim, NaNs last) are not NaN, keeping it."""
    if not dt.is_float(values.dtype):
        return None
    return m.sum(m.cast(m.logical_not(m.isnan(values)), dt.int64), -1, True)


@takes_out
def nanmedian(input, dim=None, keepdim: bool = False):  # noqa: A002
    """The lower median of the values that are not NaN (NaN where all are): of all elements
    (0-d), or a `(values, indices)` named tuple along `dim`.

    >>> import kiln as kn
    >>> kn.nanmedian(kn.tensor([1.0, float("nan"), 3.0, 2.0]))
    tensor(2.)
    """
    (x,) = lift(input)
    if x.dtype == np.bool_:
        raise call_error(
            UnsupportedDTypeError, "\"nanmedian_cpu\" not implemented for 'Bool'", "nanmedian", x
        )
    if dim is None and 0 in list(x.shape):
        return median_of_nothing(x)
    if dim is None:
        values = tm.sort(s.reshape(x, (-1,)), -1).values
        k = _kth(values)
        value = s.reshape(s.take_along_axis(values, k, -1), ())
        if not dt.is_float(x.dtype):
            return value
        # the gradient goes evenly to the elements equal to it, as PyTorch's
        return core.call("share_ties", x, core.call("stop_gradient", value),
                         axes=tuple(range(x.ndim)))  # fmt: skip
    d = _int_dim("nanmedian", dim, x.ndim)
    if x.ndim == 0:
        return return_types.nanmedian(x, _zero_index(x))
    values, order = tm.sort(movedim(x, d, -1), -1, stable=True)
    k = _kth(values)
    v, i = s.take_along_axis(values, k, -1), s.take_along_axis(order, k, -1)
    v, i = (
        (movedim(v, -1, d), movedim(i, -1, d)) if keepdim else (s.squeeze(v, -1), s.squeeze(i, -1))
    )
    return return_types.nanmedian(v, i)


def _kth(values):
    """The position of the lower median of the non-NaN values, per slice (kept dim): (k-1)//2
    of k values, 0 where all are NaN."""
    n = values.shape[-1]
    count = _non_nan(values)
    if count is None:
        at = np.asarray([max(n - 1, 0) // 2], np.int64)
        return s.broadcast_to(_const(at, values), tuple(values.shape[:-1]) + (1,))
    return m.floordiv(m.maximum(m.sub(count, 1), 0), 2)


INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


@takes_out
def quantile(input, q, dim=None, keepdim: bool = False, *, interpolation: str = "linear"):  # noqa: A002
    """The `q`-th quantiles (q a number or a 1-D tensor in [0, 1]) of all elements or along
    `dim`, between the two nearest ranks by `interpolation` ("linear", "lower", "higher",
    "midpoint", "nearest"); NaN where a slice holds a NaN. A 1-D q adds a first dim.

    >>> import kiln as kn
    >>> kn.quantile(kn.tensor([1.0, 2.0, 3.0, 4.0]), kn.tensor([0.25, 0.5]))
    tensor([1.7500, 2.5000])
    """
    return _quantile("quantile", input, q, dim, keepdim, interpolation, ignore_nan=False)


@takes_out
def nanquantile(input, q, dim=None, keepdim: bool = False, *, interpolation: str = "linear"):  # noqa: A002
    """`quantile` of the values that are not NaN (NaN where all are).

    >>> import kiln as kn
    >>> kn.nanquantile(kn.tensor([1.0, float("nan"), 3.0]), 0.5)
    tensor(2.)
    """
    return _quantile("nanquantile", input, q, dim, keepdim, interpolation, ignore_nan=True)


def _q_values(op: str, q, x):
    """q as a 1-D operand of x's dtype, and whether it was a number or 0-d (no extra dim)."""
    if isinstance(q, (int, float, np.number)) and not isinstance(q, bool):
        if not 0 <= q <= 1:
            raise call_error(
                ShapeMismatchError, f"{op}() q must be in the range [0, 1] but got {q}", op, x
            )
        return _const(np.asarray([q], x.dtype), x), True
    (qt,) = lift(q, context=(x,))
    if qt.ndim > 1:
        raise call_error(ShapeMismatchError, f"{op}() q must be a scalar or 1D tensor", op, x, qt)
    if qt.dtype != x.dtype:
        raise call_error(
            ShapeMismatchError, f"{op}() q tensor must be same dtype as the input tensor", op, x, qt
        )
    if not isinstance(qt, Symbol):
        host = np.asarray(qt.numpy() if hasattr(qt, "numpy") else qt)
        if host.size and not ((host >= 0) & (host <= 1)).all():
            raise call_error(
                ShapeMismatchError, f"{op}() q values must be in the range [0, 1]", op, x, qt
            )
    return (s.reshape(qt, (1,)), True) if qt.ndim == 0 else (qt, False)


def _quantile(op, input, q, dim, keepdim, interpolation, ignore_nan):  # noqa: A002
    (x,) = lift(input, context=(q,) if isinstance(q, Symbol) else ())  # (q traced: x in its graph)
    if interpolation not in INTERPOLATIONS:  # (PyTorch's RuntimeError; a ValueError too)
        raise UnknownModeError(
            f"{op}() interpolation must be one of {', '.join(INTERPOLATIONS)}. Got {interpolation}"
        )
    if not dt.is_float(x.dtype) or x.dtype not in (np.float32, np.float64):
        raise call_error(
            ShapeMismatchError, f"{op}() input tensor must be either float or double dtype", op, x
        )
    qs, scalar_q = _q_values(op, q, x)
    if dim is None:
        last, kept = s.reshape(x, (-1,)), (1,) * x.ndim
    else:
        d = _int_dim(op, dim, x.ndim)
        last = movedim(x, d, -1) if x.ndim else s.reshape(x, (1,))
        kept = tuple(1 if a == d else n for a, n in enumerate(x.shape))
    n = last.shape[-1]
    if 0 in tuple(x.shape):  # (any empty input, whichever dim: PyTorch's)
        raise call_error(ShapeMismatchError, f"{op}() input tensor must be non-empty", op, x)
    values = tm.sort(last, -1).values  # (..., n), NaNs last
    if ignore_nan:
        count = m.cast(_non_nan(values), x.dtype)
        ranks = m.mul(qs, m.maximum(m.sub(count, 1), 0))  # (..., k)
    else:
        ranks = m.mul(qs, np.asarray(n - 1, x.dtype))
        has_nan = m.any(m.isnan(values), -1, True)
        ranks = m.where(has_nan, np.asarray(n - 1, x.dtype), ranks)  # reads the NaN
    out = _interpolate(values, ranks, interpolation)  # (..., k)
    out = movedim(out, -1, 0)  # (k, ...)
    if keepdim:
        out = s.reshape(out, (out.shape[0], *kept))
    return s.squeeze(out, 0) if scalar_q else out


def _interpolate(values, ranks, interpolation):
    ranks = s.broadcast_to(ranks, tuple(values.shape[:-1]) + (ranks.shape[-1],))
    below = m.cast(m.floor(ranks), dt.int64)
    if interpolation in ("lower", "higher", "nearest"):
        pick = {"lower": m.floor, "higher": m.ceil, "nearest": m.round}[interpolation]
        return s.take_along_axis(values, m.cast(pick(ranks), dt.int64), -1)
    above = m.cast(m.ceil(ranks), dt.int64)
    lo, hi = s.take_along_axis(values, below, -1), s.take_along_axis(values, above, -1)
    if interpolation == "midpoint":
        return tm.lerp(lo, hi, np.asarray(0.5, values.dtype))
    return tm.lerp(lo, hi, m.sub(ranks, m.cast(below, values.dtype)))
