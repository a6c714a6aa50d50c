"""uint8 images in `interpolate`'s bilinear and bicubic modes (antialiased or not), rounded as
PyTorch's CPU kernels round them: a dim at a time (the last dim first, a dim whose size does
not change skipped), each output a sum of int16 fixed-point weights times uint8 pixels, plus
half a unit, shifted down and clamped to 0..255, so the pass between the dims is uint8 too.

The weights are computed in float64 as PyTorch computes them (Pillow's support and centering
when antialiased, the usual source index and clamped border taps otherwise, the cubic's
a = -0.5 and -0.75 respectively), then scaled by 2**p, p the largest precision under which
twice the largest weight still fits in int16, and rounded half away from zero.
"""

from __future__ import annotations

import math

import numpy as np

from .core import lift
from .math import add, bitwise_right_shift, cast, clip, mul
from .shape import gather

__all__ = ["byte_taps", "resample_bytes"]


def _scale(size: int, out: int, align_corners: bool, scale_factor) -> float:
    """PyTorch's `area_pixel_compute_scale` in float64."""
    if align_corners:
        return (size - 1) / (out - 1) if out > 1 else 0.0
    if scale_factor is not None and scale_factor > 0:
        return 1.0 / scale_factor
    return size / out


def _filter(x, cubic: bool, a: float):
    x = np.abs(x)
    if not cubic:
        return np.where(x < 1.0, 1.0 - x, 0.0)
    near = ((a + 2) * x - (a + 3)) * x * x + 1
    far = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return np.where(x < 1.0, near, np.where(x < 2.0, far, 0.0))


def _antialiased(size, out, scale, cubic):
    """(first index, tap count, float64 weights [out, taps], largest weight)."""
    support = (2.0 if cubic else 1.0) * (scale if scale >= 1.0 else 1.0)
    taps = int(math.ceil(support)) * 2 + 1
    invscale = 1.0 / scale if scale >= 1.0 else 1.0
    center = scale * (np.arange(out) + 0.5)
    first = np.maximum(np.trunc(center - support + 0.5).astype(np.int64), 0)
    count = np.minimum(np.trunc(center + support + 0.5).astype(np.int64), size) - first
    count = np.clip(count, 0, taps)
    j = np.arange(taps)
    weights = _filter(((first[:, None] + j) - center[:, None] + 0.5) * invscale, cubic, -0.5)
    weights = np.where(j < count[:, None], weights, 0.0)
    total = np.zeros(out)
    for k in range(taps):  # summed in order, as the C loop
        total = total + weights[:, k]
    weights = np.where(total[:, None] != 0, weights / np.where(total != 0, total, 1.0)[:, None], 0)
    return first, count, weights, float(weights.max(initial=0.0))


def _interpolating(size, out, scale, cubic, align_corners):
    """As `_antialiased`, without antialiasing: 2 or 4 taps around the source index, the
    weights of taps past a border added to the border's tap."""
    taps = 4 if cubic else 2
    support = taps // 2
    dst = np.arange(out, dtype=np.float64)
    real = scale * dst if align_corners else scale * (dst + 0.5) - 0.5
    if not align_corners and not cubic:
        real = np.where(real < 0, 0.0, real)
    index = np.minimum(np.floor(real.astype(np.float32)).astype(np.int64), size - 1)
    lam = np.clip(real - index, 0.0, 1.0)
    unbound = index - support + 1
    first = np.maximum(unbound, 0)
    count = np.clip(np.minimum(index + support + 1, size) - first, 0, taps)
    weights, rows = np.zeros((out, taps)), np.arange(out)
    slot, largest = np.zeros(out, np.int64), 0.0
    for j in range(taps):
        w = _filter((j + 1 - support) - lam, cubic, -0.75)
        position = unbound + j
        slot = np.where(position <= 0, 0, np.where(position >= size - 1, count - 1, slot))
        weights[rows, slot] += w
        largest = max(largest, float(weights[rows, slot].max(initial=0.0)))
        slot = slot + 1
    return first, count, weights, largest


def byte_taps(size, out, align_corners, scale_factor, cubic: bool, antialias: bool):
    """([(input index, int32 weight) per tap], precision p) of one dim: each output of a
    size-`size` dim resampled to `out` is `sum_k weight_k * input[index_k] / 2**p`.

    >>> taps, p = byte_taps(4, 2, False, None, cubic=False, antialias=False)
    >>> [(i.tolist(), w.tolist()) for i, w in taps], p  # halfway between two pixels
    ([([0, 2], [16384, 16384]), ([1, 3], [16384, 16384])], 15)
    """
    scale = _scale(size, out, align_corners, scale_factor)
    if antialias:
        first, count, weights, largest = _antialiased(size, out, scale, cubic)
    else:
        first, count, weights, largest = _interpolating(size, out, scale, cubic, align_corners)
    precision = 0
    while precision < 22 and int(0.5 + largest * (1 << (precision + 1))) < (1 << 15):
        precision += 1
    scaled = weights * (1 << precision)
    fixed = np.trunc(np.where(scaled < 0, scaled - 0.5, scaled + 0.5)).astype(np.int16)
    taps = []
    for k in range(weights.shape[1]):
        used = k < count
        index = np.where(used, np.minimum(first + k, size - 1), 0)
        taps.append((index, np.where(used, fixed[:, k], 0).astype(np.int32)))
    return taps, precision


def resample_bytes(x, axis: int, taps, precision: int):
    """uint8 `x` resampled along `axis`: `clamp((sum_k w_k * x[idx_k] + 2**(p-1)) >> p)`.

    >>> import kiln as kn, numpy as np
    >>> taps, p = byte_taps(4, 2, False, None, cubic=False, antialias=False)
    >>> resample_bytes(kn.tensor(np.array([[[[10, 20, 31, 40]]]], np.uint8)), 3, taps, p)
    tensor([[[[15, 36]]]], dtype=kiln.uint8)
    """
    total = None
    for idx, w in taps:
        if not w.any():
            continue
        shape = [1] * x.ndim
        shape[axis] = w.shape[0]
        term = cast(gather(x, idx, axis=axis), np.int32)
        (weight,) = lift(w.reshape(shape), context=(term,))
        term = mul(term, weight)
        total = term if total is None else add(total, term)
    (half,) = lift(np.int32(1 << (precision - 1)), context=(total,))
    total = bitwise_right_shift(add(total, half), precision)
    return cast(clip(total, 0, 255), np.uint8)
