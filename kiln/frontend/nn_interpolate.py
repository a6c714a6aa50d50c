"""PyTorch's `interpolate` (resampling of the spatial dims of N, C, ... inputs): nearest,
nearest-exact, (bi/tri)linear with or without `align_corners`, bicubic, and area.

Each mode is separable: a dim at a time, the output is a weighted sum of a few input rows
gathered along that dim, with PyTorch's source indices and weights computed here (in the
input's float type, as PyTorch's kernels compute them). Gradients are the gathers' (rows
scatter-added back).
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import ArgumentError
from .core import lift
from .math import add, cast, mul
from .nn_conv import _floats, static_sizes
from .nn_functional import _shape_error
from .nn_interpolate_uint8 import byte_taps, resample_bytes
from .nn_pool import adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d
from .result_layouts import suggested_layout
from .shape import broadcast_to, gather, reshape, unsqueeze

__all__ = ["interpolate"]

_DIMS = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3}
_MODES = ("nearest", "nearest-exact", "area", *_DIMS)
_AREA = {1: adaptive_avg_pool1d, 2: adaptive_avg_pool2d, 3: adaptive_avg_pool3d}


def _scale(ftype, size, out, align_corners, scale_factor):
    """PyTorch's `area_pixel_compute_scale`: output pixel to source pixel."""
    if align_corners:
        return ftype((size - 1) / (out - 1)) if out > 1 else ftype(0)
    if scale_factor is not None and scale_factor > 0:
        return ftype(1.0 / scale_factor)
    return ftype(size) / ftype(out)


def _nearest(ftype, size, out, scale_factor, exact):
    if not exact and out == size:
        return [(np.arange(out), None)]
    if not exact and out == 2 * size:
        return [(np.arange(out) >> 1, None)]
    scale = _scale(ftype, size, out, False, scale_factor)
    dst = np.arange(out, dtype=ftype) + (ftype(0.5) if exact else ftype(0))
    src = np.floor(dst * scale).astype(np.int64)
    return [(np.minimum(src, size - 1), None)]


def _linear(ftype, size, out, align_corners, scale_factor):
    scale = _scale(ftype, size, out, align_corners, scale_factor)
    dst = np.arange(out, dtype=ftype)
    if align_corners:
        src = scale * dst
    else:
        src = np.maximum(scale * (dst + ftype(0.5)) - ftype(0.5), ftype(0))
    i0 = np.minimum(np.floor(src).astype(np.int64), size - 1)
    w1 = np.clip(src - i0.astype(ftype), 0, 1).astype(ftype)
    i1 = np.minimum(i0 + 1, size - 1)
    return [(i0, (1 - w1).astype(ftype)), (i1, w1)]


def _cubic(ftype, size, out, align_corners, scale_factor, a=-0.75):
    scale = _scale(ftype, size, out, align_corners, scale_factor)
    dst = np.arange(out, dtype=ftype)
    src = scale * dst if align_corners else scale * (dst + ftype(0.5)) - ftype(0.5)
    base = np.floor(src)
    t = (src - base).astype(ftype)

    def near(x):  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    weights = (far(t + 1), near(t), near(1 - t), far(2 - t))
    base = base.astype(np.int64)
    return [(np.clip(base - 1 + k, 0, size - 1), w.astype(ftype)) for k, w in enumerate(weights)]


def _antialiased(ftype, size, out, align_corners, scale_factor, cubic: bool):
    """Taps of antialiased (bi)linear or bicubic resampling, as PyTorch's `antialias=True`:
    when downsampling by `scale` the filter (a triangle, or the cubic with a = -0.5) is
    stretched by `scale`, so each output averages every input row under it; the weights of
    a row's window (cut at the borders) are normalized to sum to 1."""
    scale = float(_scale(ftype, size, out, align_corners, scale_factor))
    half = 2.0 if cubic else 1.0  # the filter's half-width
    support = half * scale if scale >= 1.0 else half
    stretch = 1.0 / scale if scale >= 1.0 else 1.0

    def kernel(x):
        x = np.abs(x)
        if not cubic:
            return np.maximum(1.0 - x, 0.0)
        a = -0.5
        near = ((a + 2) * x - (a + 3)) * x * x + 1
        far = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
        return np.where(x < 1.0, near, np.where(x < 2.0, far, 0.0))

    centers = scale * (np.arange(out) + 0.5)
    starts = np.maximum((centers - support + 0.5).astype(np.int64), 0)  # C's truncation
    stops = np.minimum((centers + support + 0.5).astype(np.int64), size)
    width = int(max((stops - starts).max(), 1))
    rows = starts[:, None] + np.arange(width)[None, :]
    weights = kernel((rows - centers[:, None] + 0.5) * stretch)
    weights = np.where(rows < stops[:, None], weights, 0.0)
    totals = weights.sum(1, keepdims=True)
    weights = np.where(totals != 0, weights / np.where(totals != 0, totals, 1.0), 0.0)
    idx = np.minimum(rows, size - 1)
    return [(idx[:, k], weights[:, k].astype(ftype)) for k in range(width)]


def _repeated(x, axis, idx):
    """`x[idx]` along `axis` when idx repeats each index r times in order (nearest
    upsampling by an integer factor), as a broadcast, whose gradient is a sum: or None."""
    size = x.shape[axis]
    if idx.size % size or not np.array_equal(idx, np.arange(idx.size) // (idx.size // size)):
        return None
    r = idx.size // size
    wide = list(x.shape[: axis + 1]) + [r] + list(x.shape[axis + 1 :])
    y = broadcast_to(unsqueeze(x, axis + 1), tuple(wide))
    return reshape(y, (*x.shape[:axis], idx.size, *x.shape[axis + 1 :]))


def _resample(x, axis, taps):
    """`sum_k w_k * x[idx_k]` along `axis`, with `w_k` broadcast along it."""
    if len(taps) == 1 and taps[0][1] is None:
        repeated = _repeated(x, axis, taps[0][0])
        if repeated is not None:
            return repeated
    total = None
    for idx, w in taps:
        term = gather(x, idx, axis=axis)
        if w is not None:
            shape = [1] * x.ndim
            shape[axis] = w.shape[0]
            (weight,) = lift(w.reshape(shape), context=(term,))
            term = mul(term, weight)
        total = term if total is None else add(total, term)
    return total


def _sizes(x, n, size, scale_factor, recompute):
    """(output sizes, the scale factors PyTorch's kernels receive)."""
    if (size is None) == (scale_factor is None):
        raise ArgumentError("interpolate: exactly one of size or scale_factor should be defined")
    sizes = static_sizes(x, range(2, x.ndim), "interpolate")
    if size is not None:
        outs = (int(size),) * n if isinstance(size, (int, np.integer)) else tuple(size)
        if len(outs) != n:
            raise ArgumentError(
                f"interpolate: input with spatial dims {sizes} expects a size of {n} values, "
                f"got {size!r}"
            )
        return tuple(int(o) for o in outs), (None,) * n
    factors = (scale_factor,) * n if np.isscalar(scale_factor) else tuple(scale_factor)
    if len(factors) != n:
        raise ArgumentError(
            f"interpolate: input with spatial dims {sizes} expects a scale_factor of {n} values, "
            f"got {scale_factor!r}"
        )
    outs = tuple(math.floor(float(s) * float(f)) for s, f in zip(sizes, factors))
    return outs, (None,) * n if recompute else tuple(float(f) for f in factors)


def interpolate(
    input,  # noqa: A002
    size=None,
    scale_factor=None,
    mode: str = "nearest",
    align_corners=None,
    recompute_scale_factor=None,
    antialias: bool = False,
):
    """Resamples the spatial dims of `input` (N, C, ...) to `size`, or scaled by
    `scale_factor`, as PyTorch's `interpolate`: `mode` "nearest", "nearest-exact", "linear"
    (3-d input), "bilinear"/"bicubic" (4-d), "trilinear" (5-d) or "area"; `align_corners`
    for the linear and cubic modes (False when None). Floating-point inputs, and uint8 in
    the nearest, bilinear and bicubic modes (antialiased too), rounded as PyTorch's CPU
    kernels round them.

    >>> import kiln as kn
    >>> x = kn.tensor([[[1.0, 3.0]]])
    >>> kn.nn.functional.interpolate(x, scale_factor=2)
    tensor([[[1., 1., 3., 3.]]])
    >>> kn.nn.functional.interpolate(x, size=3, mode="linear", align_corners=True)
    tensor([[[1., 2., 3.]]])
    """
    if mode not in _MODES:
        raise NotImplementedError(f"interpolate: mode {mode!r} is none of {_MODES}")
    (x,) = lift(input)
    out = _interpolate(x, size, scale_factor, mode, align_corners, recompute_scale_factor,
                       antialias)  # fmt: skip
    # PyTorch's keep a channels-last input's layout ("area": as its adaptive_avg_pool's)
    return out if mode == "area" else suggested_layout(out, x)


def _interpolate(x, size, scale_factor, mode, align_corners, recompute_scale_factor, antialias):
    if antialias and (mode not in ("bilinear", "bicubic") or x.ndim != 4):
        raise ArgumentError(
            "Anti-alias option is restricted to bilinear and bicubic modes (kiln has no "
            "lanczos) and requires a 4-D tensor as input"
        )
    n = x.ndim - 2
    if n < 1:
        raise _shape_error("interpolate", f"expected an (N, C, ...) input of 3 to 5 dims, got "
                           f"{x.ndim} dims", x)  # fmt: skip
    if mode in _DIMS and _DIMS[mode] != n:
        raise NotImplementedError(
            f"Got {x.ndim}D input, but {mode} mode needs {_DIMS[mode] + 2}D input"
        )
    if align_corners is not None and mode not in _DIMS:
        raise ArgumentError(
            "align_corners option can only be set with the interpolating modes: "
            "linear | bilinear | bicubic | trilinear"
        )
    # nearest modes only gather, so they take uint8 images as PyTorch does; bilinear and
    # bicubic ones too, in PyTorch's fixed-point arithmetic (kiln/frontend/nn_interpolate_uint8.py)
    byte = x.dtype == np.uint8 and mode in ("nearest", "nearest-exact", "bilinear", "bicubic")
    if not byte:
        (x,) = _floats("interpolate", x)
    outs, factors = _sizes(x, n, size, scale_factor, recompute_scale_factor)
    if byte and mode in ("bilinear", "bicubic"):
        return _bytes(x, outs, factors, mode == "bicubic", bool(align_corners), antialias)
    if mode == "area":
        return _AREA[n](x, outs) if n in _AREA else _area_error(n)
    # as PyTorch: source positions and weights in float32 (float64 for a float64 input), and
    # a half-precision input interpolated in float32, rounded once
    ftype = np.float64 if x.dtype == np.float64 else np.float32
    narrow = None
    if mode not in ("nearest", "nearest-exact") and x.dtype not in (np.float32, np.float64):
        narrow, x = x.dtype, cast(x, np.float32)
    sizes = x.shape[2:]
    for d, (s, o, f) in enumerate(zip(sizes, outs, factors)):
        if antialias:
            taps = _antialiased(ftype, s, o, bool(align_corners), f, cubic=mode == "bicubic")
        elif mode in ("nearest", "nearest-exact"):
            taps = _nearest(ftype, s, o, f, exact=mode == "nearest-exact")
        elif mode == "bicubic":
            taps = _cubic(ftype, s, o, bool(align_corners), f)
        else:
            taps = _linear(ftype, s, o, bool(align_corners), f)
        x = _resample(x, 2 + d, taps)
    return x if narrow is None else cast(x, narrow)


def _bytes(x, outs, factors, cubic: bool, align_corners: bool, antialias: bool):
    """A uint8 image resampled as PyTorch's CPU kernels do: the width first, then the height,
    each a fixed-point pass rounded to uint8; a dim whose size stays is not resampled."""
    for axis in (3, 2):
        size, out = x.shape[axis], outs[axis - 2]
        if size != out:
            taps, precision = byte_taps(size, out, align_corners, factors[axis - 2], cubic,
                                        antialias)  # fmt: skip
            x = resample_bytes(x, axis, taps, precision)
    return x


def _area_error(n):
    raise NotImplementedError(f"interpolate: mode 'area' takes 3-d to 5-d inputs, got {n + 2}-d")
