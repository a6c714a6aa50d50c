"""ONNX pooling that kiln's 2-d pools do not take, built from strided slices: any number of
spatial axes (3-d), `ceil_mode`, dilations, integer inputs, and MaxPool's Indices output.

A window pool of kernel k is a reduction over the k offsets: for each offset, the strided slice
of the padded input that holds the element at that offset of every window; the max (or sum) of
those slices is the pooled value. The divisor of an average and the flat input index of each
window element are known at import (static sizes), so they are constants.
"""

from __future__ import annotations

import itertools

import numpy as np

from .. import dtypes as dt
from .. import shapes as sh
from .onnx_import import Known

_ALL = ("slice", None, None, None)


def _geometry(imp, x, attrs, pads):
    """Per spatial axis: (size, kernel, stride, dilation, pad_begin, pad_end, out)."""
    n = x.ndim - 2
    kernel = tuple(attrs["kernel_shape"])
    strides = tuple(attrs.get("strides", (1,) * n))
    dilations = tuple(attrs.get("dilations", (1,) * n))
    ceil = bool(attrs.get("ceil_mode", 0))
    axes = []
    for a in range(n):
        size = x.shape[2 + a]
        if not isinstance(size, int):
            raise imp.error("with ceil_mode, dilations or over 2 spatial axes on a symbolic size "
                            "has no kiln form")  # fmt: skip
        k, s, d, b, e = kernel[a], strides[a], dilations[a], pads[a], pads[a + n]
        span = (k - 1) * d + 1
        free = size + b + e - span
        out = (-(-free // s) if ceil else free // s) + 1
        if ceil and (out - 1) * s >= size + b:  # a last window that starts in the end pad
            out -= 1
        axes.append((size, k, s, d, b, e, out))
    return axes


def _fill(dtype, is_max):
    if not is_max:
        return 0 if dt.is_int(dtype) else 0.0
    if np.dtype(dtype).kind in "iu":
        return int(np.iinfo(dtype).min)
    return -np.inf


def window_pool(imp, x, attrs, pads, is_max, with_indices=False):
    """MaxPool / AveragePool of `x` (N, C, *spatial) with ONNX's attrs and its
    (begins..., ends...) `pads`; with `with_indices`, also MaxPool's Indices (int64 flat
    indices into `x`, row-major unless `storage_order` is 1)."""
    geometry = _geometry(imp, x, attrs, pads)
    widths = [(0, 0), (0, 0)]
    for size, _k, s, d, b, _e, out in geometry:
        widths.append((b, max((out - 1) * s + (_k - 1) * d + 1 - b - size, 0)))
    padded = x
    if any(w != (0, 0) for w in widths):
        padded = imp.apply("pad", x, pad_width=tuple(widths), value=_fill(x.dtype, is_max))
    best = index = None
    for offsets in itertools.product(*(range(g[1]) for g in geometry)):
        spec = [_ALL, _ALL]
        for o, (_, _, s, d, _, _, out) in zip(offsets, geometry):
            spec.append(("slice", o * d, o * d + (out - 1) * s + 1, s))
        part = imp.apply("index", padded, spec=tuple(spec))
        if best is None:
            best = part
            if with_indices:
                index = imp.symbol(Known(_flat_index(geometry, offsets, attrs)))
        elif not is_max:
            best = imp.apply("add", best, part)
        elif with_indices:  # the first maximum in window order wins, as ONNX's reference
            better = imp.apply("greater", part, best)
            best = imp.apply("where", better, part, best)
            here = imp.symbol(Known(_flat_index(geometry, offsets, attrs)))
            index = imp.apply("where", better, here, index)
        else:
            best = imp.apply("maximum", best, part)
    if with_indices:  # plus each image's and channel's offset, (n * C + c) * spatial size
        size = int(np.prod([g[0] for g in geometry]))
        ones = imp.apply("broadcast_to", Known(np.ones((), np.int64)),
                         shape=(*x.shape[:2], *(1 for _ in geometry)))  # fmt: skip
        flat = imp.apply("reshape", ones, shape=(sh.dim_product(x.shape[:2]),))
        first = imp.apply(
            "sub", imp.apply("cumsum", flat, axis=0, reverse=False), Known(np.ones((), np.int64))
        )
        first = imp.apply("reshape", first, shape=ones.shape)
        index = imp.apply("add", index, imp.apply("mul", first, Known(np.int64(size))))
    if not is_max:
        count = _count(geometry, bool(attrs.get("count_include_pad", 0)))
        best = imp.apply("div", best, imp.symbol(Known(count.astype(x.dtype))))
    return [best, index] if with_indices else best


def _count(geometry, include_pad) -> np.ndarray:
    """The divisor of each window: the elements it covers inside the input, or inside the input
    and its explicit pads (`count_include_pad`), never the extension `ceil_mode` adds."""
    counts = []
    for size, k, s, d, b, e, out in geometry:
        lo, hi = (0, size + b + e) if include_pad else (b, b + size)
        starts = np.arange(out)[:, None] * s + np.arange(k)[None, :] * d
        counts.append(((starts >= lo) & (starts < hi)).sum(axis=1))
    total = counts[0]
    for c in counts[1:]:
        total = np.multiply.outer(total, c)
    return total.reshape(1, 1, *total.shape)


def _flat_index(geometry, offsets, attrs) -> np.ndarray:
    """The flat index, within its image and channel, of the element at `offsets` of every
    window (1, 1, *out): row-major, or column-major with `storage_order` 1."""
    sizes = [g[0] for g in geometry]
    coords = [np.arange(out) * s + o * d - b for o, (_, _, s, d, b, _, out)
              in zip(offsets, geometry)]  # fmt: skip
    grids = np.meshgrid(*coords, indexing="ij")
    axes = list(range(len(sizes)))
    flat, stride = np.zeros(grids[0].shape, np.int64), 1
    for a in axes if attrs.get("storage_order", 0) else reversed(axes):
        flat += np.clip(grids[a], 0, sizes[a] - 1) * stride
        stride *= sizes[a]
    return flat.reshape(1, 1, *flat.shape)
