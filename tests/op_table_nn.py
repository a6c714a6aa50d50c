"""Op-table rows for the nn primitives (conv2d, max_pool2d, avg_pool2d) and their references.

The references gather every window with integer index arrays (no `as_strided`, no im2col), so
they share no code with the kernels.
"""

from __future__ import annotations

import numpy as np
from op_case import OpCase

import kiln as kn

# -- references ---------------------------------------------------------------------------------


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def ref_windows(x, kernel, stride=1, padding=0, dilation=1, fill=0.0):
    """Windows of `x` (N, C, H, W) as (N, C, OH, OW, KH, KW), by explicit index arrays."""
    (kh, kw), (sy, sx), (py, px), (dy, dx) = map(_pair, (kernel, stride, padding, dilation))
    xp = np.pad(x, ((0, 0), (0, 0), (py, py), (px, px)), constant_values=fill)
    oh = (xp.shape[2] - dy * (kh - 1) - 1) // sy + 1
    ow = (xp.shape[3] - dx * (kw - 1) - 1) // sx + 1
    rows = np.arange(oh)[:, None] * sy + np.arange(kh)[None, :] * dy  # (OH, KH)
    cols = np.arange(ow)[:, None] * sx + np.arange(kw)[None, :] * dx  # (OW, KW)
    return xp[:, :, rows[:, None, :, None], cols[None, :, None, :]]


def ref_conv2d(x, w, stride=1, padding=0, dilation=1):
    win = ref_windows(x, w.shape[2:], stride, padding, dilation)
    return np.einsum("nchwij,ocij->nohw", win, w)


def ref_max_pool2d(x, kernel, stride=None, padding=0):
    win = ref_windows(x, kernel, kernel if stride is None else stride, padding, fill=-np.inf)
    return win.max(axis=(4, 5))


def ref_avg_pool2d(x, kernel, stride=None, padding=0):
    win = ref_windows(x, kernel, kernel if stride is None else stride, padding, fill=0.0)
    return win.mean(axis=(4, 5))


# -- rows ---------------------------------------------------------------------------------------


def _normal(*shapes, transpose_hw=False):
    def make(rng, dtype):
        arrays = [rng.standard_normal(s).astype(dtype) for s in shapes]
        if transpose_hw:  # a non-contiguous input: H and W swapped in memory
            arrays[0] = np.ascontiguousarray(arrays[0].transpose(0, 1, 3, 2)).transpose(0, 1, 3, 2)
        return arrays

    return make


def _conv(label, x_shape, w_shape, transpose_hw=False, **attrs):
    return OpCase(
        "conv2d",
        label,
        lambda x, w: kn.conv2d(x, w, **attrs),
        _normal(x_shape, w_shape, transpose_hw=transpose_hw),
        lambda x, w: ref_conv2d(x, w, **attrs),
        rtol=1e-5,
        atol=1e-5,
    )


def _pool(op, label, x_shape, kernel, transpose_hw=False, **attrs):
    fn = {"max_pool2d": kn.max_pool2d, "avg_pool2d": kn.avg_pool2d}[op]
    ref = {"max_pool2d": ref_max_pool2d, "avg_pool2d": ref_avg_pool2d}[op]
    return OpCase(
        op,
        label,
        lambda x: fn(x, kernel, **attrs),
        _normal(x_shape, transpose_hw=transpose_hw),
        lambda x: ref(x, kernel, **attrs),
    )


CONV_CASES = [
    _conv("basic", (2, 3, 5, 5), (4, 3, 3, 3)),
    _conv("batch1", (1, 2, 5, 7), (3, 2, 2, 3)),
    _conv("stride2", (2, 3, 7, 5), (2, 3, 3, 3), stride=2),
    _conv("stride_pair", (2, 2, 7, 6), (3, 2, 3, 2), stride=(2, 3)),
    _conv("pad1", (2, 3, 5, 5), (4, 3, 3, 3), padding=1),
    _conv("pad_pair", (1, 2, 3, 5), (3, 2, 3, 3), padding=(2, 1)),
    _conv("dilation2", (2, 3, 7, 7), (2, 3, 3, 3), dilation=2),
    _conv("all_attrs", (2, 3, 9, 8), (5, 3, 3, 2), stride=(2, 1), padding=(1, 2), dilation=(2, 3)),
    _conv("1x1", (2, 5, 3, 2), (3, 5, 1, 1)),
    _conv("kernel_eq_input", (3, 2, 3, 5), (4, 2, 3, 5)),
    _conv("noncontig", (2, 3, 5, 6), (2, 3, 2, 3), transpose_hw=True, padding=1),
    _conv("size0", (0, 3, 5, 5), (2, 3, 3, 3)),
]

POOL_CASES = [
    case
    for op in ("max_pool2d", "avg_pool2d")
    for case in (
        _pool(op, "basic", (2, 3, 4, 6), 2),
        _pool(op, "batch1", (1, 2, 5, 7), 3),
        _pool(op, "stride1", (2, 3, 5, 5), 3, stride=1),
        _pool(op, "non_square", (2, 3, 7, 5), (3, 2), stride=(2, 1)),
        _pool(op, "pad1", (2, 3, 5, 5), 3, stride=2, padding=1),
        _pool(op, "pad_pair", (1, 2, 5, 3), (2, 3), stride=(1, 2), padding=(1, 1)),
        _pool(op, "noncontig", (2, 3, 6, 5), 2, transpose_hw=True),
        _pool(op, "size0", (0, 3, 4, 4), 2),
    )
]

CASES = [*CONV_CASES, *POOL_CASES]
