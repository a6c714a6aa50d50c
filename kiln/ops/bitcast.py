"""`bitcast`: the same bytes read as another dtype (PyTorch's `view(dtype)`)."""

from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from ..errors import DTypeError, ShapeError
from .core import apply, defop
from .movement import _copy_into

# -- reinterpreting the bytes ------------------------------------------------------------------
# `source` (x's dtype) is an attr too: the shape rule sees shapes only, and the new last dim
# depends on the ratio of the element sizes.


def _bitcast_shape(x, *, dtype, source):
    src, dst = np.dtype(source).itemsize, np.dtype(dtype).itemsize
    if src == dst:
        return tuple(x)
    why = f"to view {np.dtype(source)} as {np.dtype(dtype)} (different element sizes)"
    if not x:
        raise ShapeError(f"self.dim() cannot be 0 {why}")
    last = x[-1]
    if not isinstance(last, int):
        raise ShapeError(f"the last dim must be static {why}, got {last}")
    if dst > src and last % (dst // src):
        raise ShapeError(f"self.size(-1) must be divisible by {dst // src} {why}, but got {last}")
    return (*x[:-1], last * src // dst)


def _bitcast_dtype(x, *, dtype, source):
    if x != np.dtype(source):
        raise DTypeError(f"bitcast: the input is {x}, the attr source says {source}")
    return dt.as_dtype(dtype)


def _bitcast(xp, x, out=None, *, dtype, source):
    if x.itemsize != np.dtype(dtype).itemsize and x.ndim and x.strides[-1] != x.itemsize:
        x = xp.ascontiguousarray(x)  # NumPy reinterprets a contiguous last axis only
    return _copy_into(out, x.view(dtype))


def _bitcast_batch(args, batched, *, dtype, source):
    """vmap's rule: the batched value's bytes read so too (the leading batch axis is kept; only
    the last dim scales)."""
    (x,) = args
    return apply("bitcast", x, dtype=dtype, source=source)


# The same bytes read as another dtype (PyTorch's `view(dtype)`): the last dim scales by the
# ratio of the element sizes. Not differentiable (PyTorch's is not either).
bitcast = defop("bitcast", _bitcast_shape, _bitcast_dtype, _bitcast, tags={"view", "nondiff"},
                batch=_bitcast_batch)  # fmt: skip
