"""`kn.testing.make_tensor`: torch.testing.make_tensor's random test inputs, drawn from kiln's
generator (so `kn.manual_seed` makes them reproducible; they are not PyTorch's values)."""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

import ml_dtypes
import numpy as np

from . import dtypes as dt
from .errors import ArgumentTypeError


def _bounds(low, high, dtype, lowest: float, highest: float, default: tuple) -> tuple:
    """`low`/`high` (None: `default`) checked and clamped to [lowest, highest); integer
    bounds ceiled (randint's high is exclusive), as PyTorch's make_tensor takes them."""
    low = default[0] if low is None else low
    high = default[1] if high is None else high
    if any(isinstance(v, float) and math.isnan(v) for v in (low, high)):
        raise ValueError(f"`low` and `high` cannot be NaN, but got low={low} and high={high}")
    if low == high and dtype.kind in "fcV":
        warnings.warn(
            "Passing `low==high` to `make_tensor` for floating or complex types is "
            "deprecated; use `kn.full(...)` instead.",
            FutureWarning,
            stacklevel=3,
        )
    elif low >= high:
        raise ValueError(f"`low` must be less than `high`, but got {low} >= {high}")
    elif high < lowest or low >= highest:
        raise ValueError(
            f"The value interval specified by `low` and `high` is [{low}, {high}), but "
            f"{dt.as_dtype(dtype)} only supports [{lowest}, {highest})"
        )
    low, high = min(max(low, lowest), highest), min(max(high, lowest), highest)
    if dtype.kind in "biu":
        return math.ceil(low), math.ceil(high)
    return low, high


def make_tensor(*shape, dtype, device, low=None, high=None, requires_grad: bool = False,
                noncontiguous: bool = False, exclude_zero: bool = False,
                memory_format=None):  # fmt: skip
    """A tensor of `shape`, `dtype` and `device` with values drawn uniformly from [low, high)
    (defaults: [-9, 9) for floats and complex parts, [-9, 10) for signed ints, [0, 10) for
    unsigned ones, {False, True} for bool; bounds outside the dtype's range are clamped), as
    `torch.testing.make_tensor`. `noncontiguous` gives a view of every other element of a
    tensor twice as long in its last dim; `exclude_zero` replaces zeros by 1 (integers) or
    the dtype's smallest normal number.

    >>> import kiln as kn
    >>> kn.manual_seed(0)
    >>> t = kn.testing.make_tensor(2, 3, dtype=kn.int64, device="cpu", low=0, high=5)
    >>> t.shape, t.dtype, bool(((t >= 0) & (t < 5)).all())
    (kiln.Size([2, 3]), kiln.int64, True)
    >>> kn.testing.make_tensor((4,), dtype=kn.float32, device="cpu", noncontiguous=True).stride()
    (2,)
    """
    import kiln as kn

    if len(shape) == 1 and isinstance(shape[0], Sequence):
        shape = shape[0]
    shape = tuple(int(s) for s in shape)
    if noncontiguous and memory_format is not None:
        raise ValueError(
            "The parameters `noncontiguous` and `memory_format` are mutually exclusive, but "
            f"got noncontiguous={noncontiguous} and memory_format={memory_format}"
        )
    try:
        np_dtype = dt.as_dtype(dtype)
    except Exception:  # noqa: BLE001 -- not a dtype: PyTorch's TypeError
        np_dtype = None
    if (
        np_dtype is None
        or np_dtype.kind not in "biufcV"
        or np_dtype in (dt.int4, dt.uint4, dt.int2, dt.uint2)
    ):
        raise ArgumentTypeError(
            f"The requested dtype '{dtype}' is not supported by kn.testing.make_tensor()."
        )
    integral = np_dtype.kind in "biu"
    if requires_grad and integral:
        raise ValueError(
            "`requires_grad=True` is not supported for boolean and integral dtypes, but got "
            f"dtype={dt.as_dtype(dtype)}"
        )
    noncontiguous = noncontiguous and math.prod(shape) > 1
    if noncontiguous:  # twice the last dim: the view takes every other element
        shape = (*shape[:-1], 2 * shape[-1])
    if np_dtype.kind == "b":
        low, high = _bounds(low, high, np_dtype, 0, 2, (0, 2))
        result = kn.randint(low, high, shape, dtype=dtype, device=device)
    elif integral:
        info = np.iinfo(np_dtype)
        top = int(info.max) + (1 if np_dtype != np.int64 else 0)  # randint's exclusive high
        low, high = _bounds(low, high, np_dtype, int(info.min), top, (-9, 10))
        result = kn.randint(low, high, shape, dtype=dtype, device=device)
    else:
        info = ml_dtypes.finfo(np_dtype)  # (float8 too, which kn.finfo refuses as PyTorch)
        low, high = _bounds(low, high, np_dtype, float(info.min), float(info.max), (-9, 9))
        real = {"c": np.dtype(np.float64 if np_dtype.itemsize == 16 else np.float32)}
        part = real.get(np_dtype.kind, np.dtype(np.float32) if np_dtype.kind == "V" else np_dtype)
        n = 2 if np_dtype.kind == "c" else 1
        scale = 2.0 if high - low >= float(info.max) else 1.0  # (the width would overflow)
        drawn = kn.empty(*shape, n, dtype=part).uniform_(low / scale, high / scale) * scale
        result = (kn.view_as_complex(drawn) if n == 2 else drawn[..., 0]).to(dtype)
        result = result.to(device).contiguous()
    if noncontiguous:
        result = result[..., 1::2]
    elif memory_format is not None:
        result = result.clone(memory_format=memory_format)
    if exclude_zero:
        result[result == 0] = 1 if integral else float(ml_dtypes.finfo(np_dtype).smallest_normal)
    if not integral:
        result.requires_grad_(requires_grad)
    return result
