"""Sorting: `argsort` along one axis, PyTorch's order (NaN counts as the greatest value; a
stable sort keeps equal elements in their order, in either direction). Sorted values and
top-k are `take_along_axis` of these indices, which carries their gradient."""

from __future__ import annotations

import numpy as np

from ..errors import ShapeError
from .core import batch_along_axis, defop


def _argsort_shape(x, *, axis, descending):
    if not 0 <= axis < max(len(x), 1):
        raise ShapeError(f"dim {axis} is out of bounds for a tensor of dimension {len(x)}")
    return tuple(x)


def sortable(x):
    """x as NumPy sorts it in PyTorch's order: bfloat16 and the float8 types (ml_dtypes' kind
    "V", whose NumPy sort leaves NaN and the values after it in place) as their float32 values,
    exactly."""
    return x.astype(np.float32) if x.dtype.kind == "V" else x


def _argsort(xp, x, out=None, *, axis, descending):
    x1 = sortable(x.reshape(1) if x.ndim == 0 else x)
    if descending:
        # A stable ascending sort of the reversed slice, read backwards: descending order with
        # equal elements in their original order, and NaN (last ascending) first.
        n = x1.shape[axis]
        r = xp.flip(xp.argsort(xp.flip(x1, axis), axis=axis, kind="stable"), axis)
        r = (n - 1) - r
    else:
        r = xp.argsort(x1, axis=axis, kind="stable")
    r = r.reshape(x.shape).astype(np.int64, copy=False)
    if out is None:
        return r if r.flags.c_contiguous else r.copy()  # (ascontiguousarray makes 0-d 1-d)
    out[...] = r
    return out


argsort = defop(
    "argsort", _argsort_shape, lambda x, **_: np.dtype(np.int64), _argsort,
    batch=batch_along_axis("argsort"),
)  # fmt: skip
