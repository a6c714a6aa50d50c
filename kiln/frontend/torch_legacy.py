"""PyTorch's legacy Tensor methods that old code still calls: `new` (the constructor of self's
dtype: `x.new(2, 3)`, `x.new(data)`, `x.new(other)`), and the deprecated out-of-place
`resize`/`resize_as` (with PyTorch's warning: a new shape of as many elements). On eager
Tensors and graph values alike."""

from __future__ import annotations

import math
import warnings

import numpy as np

from ..errors import ArgumentTypeError, ShapeError, UsageError, call_error
from ..graph.core import Symbol
from . import shape as s
from . import torch_extra_shape as xs
from . import torch_shape as ts

__all__ = ["LEGACY_METHODS"]


def _is_tensor(value) -> bool:
    return isinstance(value, Symbol) or (hasattr(value, "dtype") and hasattr(value, "detach"))


def new(self, *args, device=None):
    """PyTorch's legacy constructor of self's dtype (and device): `x.new()` is empty,
    `x.new(2, 3)` (or a `kn.Size`) uninitialized of that shape, `x.new(data)` a tensor of
    `data` in self's dtype, `x.new(other)` `other` itself (sharing its memory; of self's dtype
    only, as PyTorch's).

    >>> import kiln as kn
    >>> x = kn.zeros(2, dtype=kn.float64)
    >>> x.new(2, 3).shape, x.new([1, 2]).dtype, x.new().shape
    (kiln.Size([2, 3]), kiln.float64, kiln.Size([0]))
    """
    if not args:
        return xs._new(0)(self, 0)
    if all(isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in args):
        return xs._new(0)(self, *args)
    if len(args) > 1:
        raise ArgumentTypeError(f"new(): takes sizes (ints) or one argument, got {args!r}")
    (data,) = args
    if isinstance(data, type(self.shape)):  # a Size: a shape, where a tuple is data
        return xs._new(0)(self, *data)
    if _is_tensor(data):
        if device is not None:
            raise call_error(UsageError, "Legacy tensor new of the form tensor.new(tensor, "
                             "device=device) is not supported. Use kn.as_tensor(...) instead.",
                             "new", self, data)  # fmt: skip
        if data.dtype != self.dtype:
            raise call_error(ArgumentTypeError, f"new(): expected a tensor of dtype "
                             f"{self.dtype}, got {data.dtype}", "new", self, data)  # fmt: skip
        return data.detach()
    return xs.new_tensor(self, data)


def resize(self, *sizes):
    """Deprecated in PyTorch (it warns): self's elements in the shape `sizes`, which must
    hold as many (a view where it can be, differentiable; PyTorch's).

    >>> import kiln as kn, warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     kn.arange(4.0).resize(2, 2)
    tensor([[0., 1.],
            [2., 3.]])
    """
    warnings.warn("non-inplace resize is deprecated", stacklevel=2)
    shape = tuple(ts._sizes(sizes))
    have, want = math.prod(self.shape), math.prod(shape)
    if want != have:
        raise call_error(ShapeError, f"requested resize to {'x'.join(map(str, shape))} ({want} "
                         f"elements in total), but the given tensor has a size of "
                         f"{'x'.join(map(str, self.shape))} ({have} elements). autograd's resize "
                         "can only change the shape of a given tensor, while preserving the "
                         "number of elements.", "resize", self)  # fmt: skip
    return s.reshape(self, shape)


def resize_as(self, tensor):
    """Deprecated in PyTorch (it warns): `resize(tensor.shape)`."""
    warnings.warn("non-inplace resize_as is deprecated", stacklevel=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return resize(self, *tensor.shape)


LEGACY_METHODS = {"new": new, "resize": resize, "resize_as": resize_as}
