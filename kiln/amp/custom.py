"""`kn.amp.custom_fwd` and `custom_bwd`: autocast around a custom autograd Function's
forward and backward, as `torch.amp`'s decorators: the backward runs under the autocast state
its forward ran under, and `cast_inputs` runs the forward in that dtype with autocast off."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping

import numpy as np

from .. import dtypes as dt
from ..eager.tensor import Tensor
from ..errors import UsageError
from ..frontend.autocast import DEVICE_TYPES, autocast, get_autocast_dtype, is_autocast_enabled

__all__ = ["custom_bwd", "custom_fwd", "is_autocast_available"]


def is_autocast_available(device_type: str) -> bool:
    """Whether autocast works on `device_type` ("cpu" and "cuda" in kiln).

    >>> import kiln as kn
    >>> kn.amp.is_autocast_available("cpu")
    True
    """
    if not isinstance(device_type, str) or device_type.split(":")[0] not in DEVICE_TYPES:
        raise UsageError(f"Expected one of {', '.join(DEVICE_TYPES)} device type at start of "
                         f"device string: {device_type}")  # fmt: skip
    return True


def _device_type(device_type) -> str:
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    return device_type


def _cast(value, device_type: str, dtype):
    """`value` with its floating tensors on `device_type` (not float64 ones) cast to `dtype`,
    through lists, tuples and dicts."""
    if isinstance(value, Tensor):
        eligible = (value.is_floating_point() and value.device.type == device_type
                    and value.dtype != dt.float64)  # fmt: skip
        return value.to(dtype) if eligible else value
    if isinstance(value, (str, bytes, np.ndarray)):
        return value
    if isinstance(value, Mapping):
        return {
            _cast(k, device_type, dtype): _cast(v, device_type, dtype) for k, v in value.items()
        }
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(v, device_type, dtype) for v in value)
    if isinstance(value, Iterable):
        return (_cast(v, device_type, dtype) for v in value)
    return value


def custom_fwd(fwd=None, *, device_type: str, cast_inputs=None):
    """Decorates a custom Function's `forward`: it runs under the autocast state it is called
    in, which its `custom_bwd` backward then runs under too; with `cast_inputs` (a dtype)
    and autocast on, it runs with autocast off on its floating inputs cast to that dtype.

    >>> import kiln as kn
    >>> class Square(kn.autograd.Function):
    ...     @staticmethod
    ...     @kn.amp.custom_fwd(device_type="cpu", cast_inputs=kn.float32)
    ...     def forward(ctx, x):
    ...         ctx.save_for_backward(x)
    ...         return x * x
    ...     @staticmethod
    ...     @kn.amp.custom_bwd(device_type="cpu")
    ...     def backward(ctx, g):
    ...         (x,) = ctx.saved_tensors
    ...         return 2 * x * g
    >>> with kn.autocast("cpu"):
    ...     y = Square.apply(kn.ones(2, dtype=kn.bfloat16, requires_grad=True))
    >>> y.dtype
    kiln.float32
    """
    device_type = _device_type(device_type)
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        ctx = args[0]
        ctx._dtype = get_autocast_dtype(device_type)
        on = is_autocast_enabled(device_type)
        if cast_inputs is None:
            ctx._fwd_used_autocast = on
            return fwd(*args, **kwargs)
        ctx._fwd_used_autocast = False
        if not on:
            return fwd(*args, **kwargs)
        with autocast(device_type=device_type, enabled=False):
            return fwd(*_cast(args, device_type, cast_inputs),
                       **_cast(kwargs, device_type, cast_inputs))  # fmt: skip

    return decorate_fwd


def custom_bwd(bwd=None, *, device_type: str):
    """Decorates a custom Function's `backward`: it runs under the autocast state (on or
    off, and its dtype) that the `custom_fwd` forward ran under (see `custom_fwd`)."""
    device_type = _device_type(device_type)
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        ctx = args[0]
        with autocast(device_type=device_type, enabled=ctx._fwd_used_autocast, dtype=ctx._dtype):
            return bwd(*args, **kwargs)

    return decorate_bwd
