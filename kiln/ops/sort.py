"""Sorting: `argsort` along one axis, PyTorch's order (NaN counts as the greatest value; a
stable sort keeps equal elements in their order, in either direction); `topk_indices` and
`kth_index`, the indices of PyTorch's top-k and k-th smallest, equal elements in the order
its CPU kernels leave them (kiln/ops/sort_ties.py). Sorted values and top-k are
`take_along_axis` of these indices, which carries their gradient."""

from __future__ import annotations

import numpy as np

from ..errors import ShapeError
from .core import batch_along_axis, defop
from .sort_ties import kth_indices, topk_indices


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


def _on_host(xp, fn, x, order, *args):
    """fn of NumPy arrays with the axis last, on `x` and its `order` along `axis` (args[0])."""
    axis, rest = args[0], args[1:]
    host = isinstance(x, np.ndarray)  # else a device array (CuPy's): its values copied here
    xh = sortable(x if host else x.get())
    oh = order if host else order.get()
    if axis == x.ndim - 1:
        out = fn(xh, oh, *rest)
    else:
        out = np.moveaxis(fn(np.moveaxis(xh, axis, -1), np.moveaxis(oh, axis, -1), *rest), -1, axis)
    return np.ascontiguousarray(out) if host else xp.asarray(out)


def top_indices(xp, x, *, axis, k, largest):
    """The indices of PyTorch's sorted top `k` along `axis` of an array of 1 or more dims."""
    order = _argsort(xp, x, axis=axis, descending=largest)
    return _on_host(xp, topk_indices, x, order, axis, k, largest)


def _picked_shape(x, *, axis, k, largest=None):
    _argsort_shape(x, axis=axis, descending=False)
    n = x[axis] if x else 1
    if isinstance(n, int) and not 0 <= k <= n:
        raise ShapeError(f"selected index k ({k}) out of range (the dim has {n})")
    return (*x[:axis], k, *x[axis + 1 :]) if x else ()


def _topk_indices(xp, x, out=None, *, axis, k, largest):
    if x.ndim == 0:
        r = xp.zeros((), np.int64)
    else:
        r = top_indices(xp, x, axis=axis, k=k, largest=largest)
    if out is None:
        return r
    out[...] = r
    return out


# The indices of `topk` (its values are `take_along_axis` of them, which carries the gradient).
topk_indices_op = defop(
    "topk_indices", _picked_shape, lambda x, **_: np.dtype(np.int64), _topk_indices,
    batch=batch_along_axis("topk_indices"),
)  # fmt: skip


def _kth_index(xp, x, out=None, *, axis, k):
    """The index of the k-th (0-based) smallest along `axis`, that axis kept (size 1)."""
    if x.ndim == 0:
        r = xp.zeros((), np.int64)
    else:
        order = _argsort(xp, x, axis=axis, descending=False)
        r = _on_host(xp, kth_indices, x, order, axis, k)
    if out is None:
        return r
    out[...] = r
    return out


# `kthvalue`'s index; the value is `take_along_axis` of it
kth_index = defop(
    "kth_index", lambda x, *, axis, k: _picked_shape(x, axis=axis, k=1) if x else (),
    lambda x, **_: np.dtype(np.int64), _kth_index, batch=batch_along_axis("kth_index"),
)  # fmt: skip
