"""Pooling over any number of spatial dims, as PyTorch's `max_pool1d/2d/3d`,
`avg_pool1d/2d/3d` (ceil_mode, count_include_pad, divisor_override, dilation, return_indices)
and the adaptive pools.

Plain 1-d and 2-d pools bind the `max_pool2d`/`avg_pool2d` primitives (1-d as height 1); the
other cases take the windows of the padded input (`nn_conv.strided_windows`; the adaptive max
pool's uneven ones by `nn_conv.gather_windows`) and reduce them: the maximum is read at the
tap PyTorch's kernels pick (`_pick`: the first maximum, the last NaN, never padding), so its
gradient reaches that element only.
Adaptive average pooling is one matmul per spatial dim.
"""

from __future__ import annotations

import math

import numpy as np

from .. import dtypes as dt
from .. import shapes as sh
from ..eager.autograd import name_history
from ..eager.tensor import Tensor
from ..errors import ArgumentTypeError, UsageError
from . import torch_math as tm
from .autocast import autocast_op
from .core import call, lift
from .math import argmax, cast, div, equal, isfinite, isnan, matmul, sub, where
from .math import sum as reduce_sum
from .nn_conv import (
    _batched,
    _floats,
    gather_windows,
    ntuple,
    static_sizes,
    strided_windows,
    torch_pad,
)
from .nn_functional import _shape_error, pad
from .reductions import mean
from .result_layouts import suggested_layout
from .shape import gather, permute, reshape, squeeze, take_along_axis, transpose, unsqueeze

__all__ = [
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "adaptive_avg_pool3d",  # adaptive_max_pool1d: F's (kn's returns indices too, as torch's)
    "adaptive_max_pool2d",
    "adaptive_max_pool3d",
    "avg_pool1d",
    "avg_pool2d",
    "avg_pool3d",
    "max_pool1d",
    "max_pool2d",
    "max_pool3d",
]


def _out_size(op, x, size, k, s, p, d, ceil_mode) -> int:
    """PyTorch's pooling output size; with `ceil_mode` the last window must start inside the
    input or its left padding."""
    span = size + 2 * p - d * (k - 1) - 1
    out = (span + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    if out < 1:
        raise _shape_error(
            op, f"Given input size per channel {size}, calculated output size {out}: output "
            "size is too small", x,
        )  # fmt: skip
    return out


def _params(op, x, n, kernel_size, stride, padding, dilation, ceil_mode):
    if any(s == 0 for s in x.shape[1:]):  # only the batch may be empty (PyTorch's check)
        raise _shape_error(
            op, f"expected {n + 1}-d or {n + 2}-d (batch mode) input with an optional 0-size "
            f"batch dim and no other, but got input of size {sh.format_shape(x.shape)}", x,
        )  # fmt: skip
    kernel = ntuple(kernel_size, n, "kernel_size", op)
    empty = isinstance(stride, (list, tuple)) and not stride  # PyTorch's default: `()`
    stride = kernel if stride is None or empty else ntuple(stride, n, "stride", op)
    pads = ntuple(padding, n, "padding", op)
    dilation = ntuple(dilation, n, "dilation", op)
    if min(kernel + stride + dilation) <= 0:
        raise _shape_error(op, f"kernel_size {kernel}, stride {stride} and dilation {dilation} "
                           "must be positive", x)  # fmt: skip
    for p, k in zip(pads, kernel):
        # half the kernel, not of its dilated reach (PyTorch's kernels check `k / 2 >= p`)
        if p < 0 or 2 * p > k:
            raise _shape_error(
                op, f"pad should be at most half of kernel size, but got pad={pads}, "
                f"kernel_size={kernel} and dilation={dilation}", x,
            )  # fmt: skip
    sizes = tuple(x.shape[2:])
    if all(isinstance(v, int) for v in sizes):
        outs = tuple(_out_size(op, x, *args, ceil_mode) for args in zip(sizes, kernel, stride, pads,
                                                                     dilation))  # fmt: skip
    else:
        outs = None
    return kernel, stride, pads, dilation, outs


def _plain(kernel, stride, pads, sizes, outs, ceil_mode) -> bool:
    """Whether floor mode gives `outs` (so ceil_mode adds no window); with symbolic sizes,
    whether ceil_mode is off (with it on, the composite asks for static sizes)."""
    if outs is None:
        return not ceil_mode
    return all((n + 2 * p - k) // s + 1 == o
               for n, k, s, p, o in zip(sizes, kernel, stride, pads, outs))  # fmt: skip


def _primitive(op_name, x, n, kernel, stride, pads):
    """The 2-d primitive (1-d as a 2-d pool of height 1)."""
    if n == 1:
        y = call(op_name, unsqueeze(x, 2), kernel_size=(1, *kernel), stride=(1, *stride),
                 padding=(0, *pads))  # fmt: skip
        return squeeze(y, 2)
    return call(op_name, x, kernel_size=kernel, stride=stride, padding=pads)


def _padded_windows(op, x, kernel, stride, pads, dilation, outs, fill):
    """(windows (N, C, K1*..*Kn, O1..On) of x padded with `fill`, position tables per dim)."""
    sizes = static_sizes(x, range(2, x.ndim), op)
    pairs, tables = [], []
    for n, k, s, p, d, o in zip(sizes, kernel, stride, pads, dilation, outs):
        table = (np.arange(o) * s)[:, None] + np.arange(k) * d
        pairs.append((p, max(0, int(table.max()) + 1 - (n + p))))  # ceil_mode's extra taps
        tables.append(table)
    if any(b or a for b, a in pairs):
        x = pad(x, torch_pad(pairs), value=fill)
    return strided_windows(x, kernel, stride, dilation, outs), tables


def _first_inside(x, tables, pads):
    """(1, 1, 1, O1..On) int64: each window's first tap (row-major) inside the input, or None
    where every tap of every window is."""
    firsts, inside_all = [], True
    for t, p, size in zip(tables, pads, x.shape[2:]):
        inside = (t >= p) & (t < p + size)  # (O_d, K_d)
        inside_all &= bool(inside.all())
        firsts.append(np.argmax(inside, 1))
    if inside_all:
        return None
    n, flat = len(tables), np.zeros([t.shape[0] for t in tables], np.int64)
    for d, first in enumerate(firsts):
        shape = [1] * n
        shape[d] = first.shape[0]
        flat = flat + first.reshape(shape) * math.prod(t.shape[1] for t in tables[d + 1 :])
    return flat.reshape((1, 1, 1, *flat.shape))


def window_argmax(win, dim: int):
    """(keeping `dim`) The tap along `dim` of each window of `win` that PyTorch's max-pool
    kernels pick (`val > maxval || isnan(val)` in window order): the first maximum, or the
    last NaN where the window holds one.

    >>> import kiln as kn
    >>> nan = float("nan")
    >>> window_argmax(kn.tensor([[1.0, 3.0, 3.0], [nan, 2.0, nan]]), 1).tolist()
    [[1], [2]]
    """
    pick = argmax(win, dim, keepdim=True)
    if not dt.is_float(win.dtype):
        return pick
    dim = dim % win.ndim
    # argmax takes a NaN for the maximum: its first pick is a NaN where the window holds one;
    # the last NaN is the first of the taps reversed (a view)
    has_nan = isnan(take_along_axis(win, pick, dim))
    if isinstance(has_nan, Tensor) and not bool(has_nan.any()):  # eager, no NaN: done
        return pick
    reverse = (("slice", None, None, None),) * dim + (("slice", None, None, -1),)
    first_of_reversed = argmax(call("index", isnan(win), spec=reverse), dim, keepdim=True)
    last_nan = sub(_like(np.int64(win.shape[dim] - 1), pick), first_of_reversed)
    return where(has_nan, last_nan, pick)


def _pick(x, win, tables, pads, fill):
    """(N, C, 1, O1..On): the tap of each window of `win` (N, C, K, O1..On) that PyTorch's
    kernels pick (their `val > maxval || isnan(val)` in window order, from the window's first
    tap inside the input): the first maximum, the last NaN where the window holds one, and
    where the window holds only `fill` (padding and -inf), its first tap inside the input."""
    pick = window_argmax(win, 2)
    first = _first_inside(x, tables, pads)
    if first is not None:
        at_fill = equal(take_along_axis(win, pick, 2), _like(np.asarray(fill, win.dtype), win))
        pick = where(at_fill, _like(first, pick), pick)
    return pick


def _max_windows(x, win, tables, pads, return_indices, fill=-math.inf):
    """The maximum of each window of `win` (N, C, K, O1..On) (read at the tap PyTorch picks,
    `_pick`, so the gradient reaches that element only) and, if asked, its flat index into
    the spatial dims of the input, as PyTorch's `return_indices`."""
    pick = _pick(x, win, tables, pads, fill)
    values = squeeze(take_along_axis(win, pick, 2), 2)
    if not return_indices:
        return values
    sizes, n = x.shape[2:], len(tables)
    outs = tuple(t.shape[0] for t in tables)
    flat = np.zeros([t.shape[1] for t in tables] + list(outs), np.int64)  # (K1..Kn, O1..On)
    for d, (t, p) in enumerate(zip(tables, pads)):
        shape = [1] * 2 * n
        shape[n + d], shape[d] = t.shape
        flat = flat + (t - p).T.reshape(shape) * math.prod(sizes[d + 1 :])
    positions = math.prod(outs)
    table = _like(flat.reshape(-1), pick)  # tap-major: entry k * P + position
    where = call("add", call("mul", squeeze(pick, 2), _like(np.int64(positions), pick)),
                 _like(np.arange(positions).reshape(outs), pick))  # fmt: skip
    return values, gather(table, where, 0)


def _like(array, context):
    (value,) = lift(array, context=(context,))
    return value


def _max_pool(op, n, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices):  # noqa: A002
    (x,) = lift(input)
    x, added = _batched(x, n, op)
    # PyTorch pools int64 too, and max_pool2d/3d every integer dtype (by the composite here)
    integer = x.dtype == dt.int64 or (n >= 2 and dt.is_int(x.dtype))
    (x,) = (x,) if integer else _floats(op, x)
    kernel, stride, pads, dilation, outs = _params(op, x, n, kernel_size, stride, padding,
                                                   dilation, ceil_mode)  # fmt: skip
    fast = n <= 2 and not return_indices and all(d == 1 for d in dilation) and not integer
    if fast and _plain(kernel, stride, pads, x.shape[2:], outs, ceil_mode):
        result = _primitive("max_pool2d", x, n, kernel, stride, pads)
    else:
        least = int(np.iinfo(x.dtype).min) if integer else -math.inf
        win, tables = _padded_windows(op, x, kernel, stride, pads, dilation, outs, least)
        result = _max_windows(x, win, tables, pads, return_indices, least)
    if n >= 2 or return_indices:  # (PyTorch's max_pool2d and 3d keep a channels-last layout,
        result = suggested_layout(result, x, as_2d=True)  # max_pool1d with indices is 2d's)
    if not added:
        return result
    if return_indices:
        return tuple(squeeze(r, 0) for r in result)
    return squeeze(result, 0)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,  # noqa: A002
               return_indices=False):  # fmt: skip
    """Maximum over `kernel_size` windows of `input` (N, C, L) or (C, L); `stride` defaults
    to the kernel size; padding (at most half a kernel) never wins. With `return_indices`,
    also each maximum's index along L.

    >>> import kiln as kn
    >>> kn.nn.functional.max_pool1d(kn.tensor([[[1.0, 3.0, 2.0, 5.0, 4.0]]]), 2,
    ...                             ceil_mode=True, return_indices=True)
    (tensor([[[3., 5., 4.]]]), tensor([[[1, 3, 4]]]))
    """
    return _max_pool("max_pool1d", 1, input, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices)  # fmt: skip


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,  # noqa: A002
               return_indices=False):  # fmt: skip
    """Maximum over `kernel_size` windows of `input` (N, C, H, W) or (C, H, W); `stride`
    defaults to the kernel size; padding (at most half a kernel) never wins, as if it were
    -inf. With `return_indices`, also each maximum's flat index into H * W.

    >>> import kiln as kn, numpy as np
    >>> kn.max_pool2d(np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4), 2)
    array([[[[ 5.,  7.],
             [13., 15.]]]], dtype=float32)
    """
    return _max_pool("max_pool2d", 2, input, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices)  # fmt: skip


@autocast_op("fp32")
def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,  # noqa: A002
               return_indices=False):  # fmt: skip
    """Maximum over `kernel_size` windows of `input` (N, C, D, H, W) or (C, D, H, W); with
    `return_indices`, also each maximum's flat index into D * H * W.

    >>> import kiln as kn
    >>> kn.nn.functional.max_pool3d(kn.arange(8.0).reshape(1, 1, 2, 2, 2), 2)
    tensor([[[[[7.]]]]])
    """
    return _max_pool("max_pool3d", 3, input, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices)  # fmt: skip


def _divisor(sizes, kernel, stride, pads, outs, count_include_pad) -> np.ndarray:
    """PyTorch's divisor of each window: its size within the padded input (clipped to the
    input without `count_include_pad`), a product over the dims."""
    divisor = np.ones(outs)
    for d, (n, k, s, p, o) in enumerate(zip(sizes, kernel, stride, pads, outs)):
        start = np.arange(o) * s - p
        end = np.minimum(start + k, n + p)
        count = end - start
        if not count_include_pad:
            count = np.minimum(end, n) - np.maximum(start, 0)
        shape = [1] * len(outs)
        shape[d] = o
        divisor = divisor * count.reshape(shape)
    return divisor


def _avg_pool(op, n, input, kernel_size, stride, padding, ceil_mode, count_include_pad,  # noqa: A002
              divisor_override):  # fmt: skip
    (x,) = lift(input)
    x, added = _batched(x, n, op)
    integer = x.dtype == dt.int64  # PyTorch's: the int64 sum divided, rounded toward zero
    (x,) = (x,) if integer else _floats(op, x)
    half = x.dtype if x.dtype in (dt.float16, dt.bfloat16) else None
    if half is not None:  # summed in float32 and rounded once, as PyTorch's (no overflow)
        x = cast(x, dt.float32)
    divide = (lambda a, b: cast(tm.div(a, b, rounding_mode="trunc"), x.dtype)) if integer else div
    kernel, stride, pads, dilation, outs = _params(op, x, n, kernel_size, stride, padding, 1,
                                                   ceil_mode)  # fmt: skip
    if divisor_override is not None and divisor_override == 0:  # negative ones divide too
        raise UsageError(f"{op}: divisor must be not zero, got {divisor_override}")
    sizes = tuple(x.shape[2:])
    if n == 3 and any(isinstance(v, int) and v < k for v, k in zip(sizes, kernel)):
        # PyTorch's avg_pool3d (not 1d/2d, nor the max pools) wants the kernel inside the
        # unpadded input
        raise _shape_error(
            op, f"input image (T: {sizes[0]} H: {sizes[1]} W: {sizes[2]}) smaller than kernel "
            f"size (kT: {kernel[0]} kH: {kernel[1]} kW: {kernel[2]})", x,
        )  # fmt: skip
    plain = _plain(kernel, stride, pads, x.shape[2:], outs, ceil_mode) and not integer
    if n <= 2 and plain and divisor_override is None and (count_include_pad or not any(pads)):
        y = _primitive("avg_pool2d", x, n, kernel, stride, pads)
    else:
        win, _ = _padded_windows(op, x, kernel, stride, pads, dilation, outs, 0)
        total = reduce_sum(win, 2)
        if divisor_override is not None:
            y = divide(total, divisor_override if integer else float(divisor_override))
        else:
            sizes = static_sizes(x, range(2, x.ndim), op)
            divisor = _divisor(sizes, kernel, stride, pads, outs, count_include_pad)
            y = divide(total, _like(divisor.astype(x.dtype), total))
    y = y if half is None else cast(y, half)
    if n <= 2:  # (PyTorch's avg_pool2d keeps a channels-last input's layout, 3d not; 1d is 2d's)
        y = suggested_layout(y, x, as_2d=True)
    return squeeze(y, 0) if added else y


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False,  # noqa: A002
               count_include_pad=True):  # fmt: skip
    """Mean over `kernel_size` windows of `input` (N, C, L) or (C, L); zero padding counts in
    the mean unless `count_include_pad=False`.

    >>> import kiln as kn
    >>> kn.nn.functional.avg_pool1d(kn.tensor([[[1.0, 3.0, 2.0]]]), 2, padding=1,
    ...                             count_include_pad=False)
    tensor([[[1.0000, 2.5000]]])
    """
    return _avg_pool("avg_pool1d", 1, input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, None)  # fmt: skip


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,  # noqa: A002
               count_include_pad=True, divisor_override=None):  # fmt: skip
    """Mean over `kernel_size` windows of `input` (N, C, H, W) or (C, H, W); `stride` defaults
    to the kernel size; zero padding counts in the mean unless `count_include_pad=False`;
    `divisor_override` replaces the window size.

    >>> import kiln as kn, numpy as np
    >>> kn.avg_pool2d(np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4), 2)
    array([[[[ 2.5,  4.5],
             [10.5, 12.5]]]], dtype=float32)
    """
    return _avg_pool("avg_pool2d", 2, input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, divisor_override)  # fmt: skip


@autocast_op("fp32")
def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False,  # noqa: A002
               count_include_pad=True, divisor_override=None):  # fmt: skip
    """Mean over `kernel_size` windows of `input` (N, C, D, H, W) or (C, D, H, W).

    >>> import kiln as kn
    >>> kn.nn.functional.avg_pool3d(kn.arange(8.0).reshape(1, 1, 2, 2, 2), 2)
    tensor([[[[[3.5000]]]]])
    """
    return _avg_pool("avg_pool3d", 3, input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, divisor_override)  # fmt: skip


# -- adaptive pools ---------------------------------------------------------------------------


def _adaptive_sizes(op, x, n, output_size) -> tuple:
    if n == 1 and (output_size is None or (isinstance(output_size, (tuple, list))
                                          and None in output_size)):  # fmt: skip
        # (None keeps a dim of the 2-d and 3-d pools only; PyTorch's argument parser)
        raise ArgumentTypeError(
            f"{op}(): argument 'output_size' (position 2) must be tuple of ints, not "
            f"{output_size!r}"
        )
    if isinstance(output_size, (int, np.integer)) or output_size is None:
        output_size = (output_size,) * n
    output_size = tuple(output_size)
    if len(output_size) != n:
        raise _shape_error(op, f"output_size must be an int or {n} ints, got {output_size!r}", x)
    sizes = static_sizes(x, range(2, x.ndim), op)
    outs = tuple(s if o is None else int(o) for s, o in zip(sizes, output_size))
    if any(o < 0 for o in outs) or any(s == 0 for s in sizes):
        raise _shape_error(
            op, f"output size {outs} must be non-negative and input sizes {sizes} positive", x
        )
    return sizes, outs


def empty_pool_result(x, outs):
    """The (N, C, *outs) result of a pool to a 0 size: no window, no element.

    >>> import kiln as kn
    >>> list(empty_pool_result(kn.ones(2, 3, 4, 4), (0, 2)).shape)
    [2, 3, 0, 2]
    """
    return reshape(call("index", reshape(x, (-1,)), spec=(("slice", 0, 0, None),)),
                   (*x.shape[:2], *outs))  # fmt: skip


def _bounds(size: int, out: int):
    """PyTorch's adaptive windows: [floor(i * size / out), ceil((i + 1) * size / out))."""
    i = np.arange(out)
    return (i * size) // out, -((-(i + 1) * size) // out)


def _adaptive_weighted(x, axis: int, size: int, out: int):
    """The means of `x` over `out` adaptive windows along `axis`, as one product by the
    (size, out) matrix of the windows' weights (0 outside a window: a NaN or an infinity
    would reach every window, 0 * nan being nan)."""
    start, end = _bounds(size, out)
    cols = np.arange(size)
    inside = (cols >= start[:, None]) & (cols < end[:, None])
    weights = (inside / (end - start)[:, None]).T.astype(x.dtype)  # (size, out)
    # the last two dims by a product on the right or the left: no transposes, so the input
    # gradient is C-ordered, as PyTorch's
    if axis == x.ndim - 1:
        return matmul(x, _like(weights, x))
    if axis == x.ndim - 2:
        return matmul(_like(np.ascontiguousarray(weights.T), x), x)
    moved = transpose(x, axis, -1)
    return transpose(matmul(moved, _like(weights, moved)), axis, -1)


def _adaptive_windowed(x, axis: int, size: int, out: int):
    """`_adaptive_weighted`'s means, each window summing its own elements only, so that a NaN
    or an infinity stays in the windows that hold it."""
    lead, tail = tuple(x.shape[:axis]), tuple(x.shape[axis + 1 :])
    if size % out == 0:  # windows of size / out apart
        return mean(reshape(x, (*lead, out, size // out, *tail)), axis + 1)
    start, end = _bounds(size, out)
    width = int((end - start).max())
    taps = start[:, None] + np.arange(width)  # (out, width); past a window's end: masked
    picked = gather(x, _like(np.minimum(taps, size - 1).reshape(-1), x), axis)
    picked = reshape(picked, (*lead, out, width, *tail))
    inside = (taps < end[:, None]).reshape((out, width) + (1,) * len(tail))
    total = reduce_sum(where(_like(inside, x), picked, _like(np.zeros((), x.dtype), x)), axis + 1)
    counts = (end - start).astype(x.dtype).reshape((out,) + (1,) * len(tail))
    return div(total, _like(counts, x))


def _adaptive_avg(op, n, input, output_size):  # noqa: A002
    (x,) = lift(input)
    x, added = _batched(x, n, op)
    (x,) = _floats(op, x)
    sizes, outs = _adaptive_sizes(op, x, n, output_size)
    if 0 in outs:
        x = empty_pool_result(x, outs)
        return squeeze(x, 0) if added else x
    source = x
    half = x.dtype in (dt.bfloat16, np.float16)
    if half:  # as PyTorch's: each window's exact mean, rounded once
        x = cast(x, np.float64)
    # the products (fast) where no window can take another's NaN or infinity: one window
    # per dim, or eagerly an input all finite; else each window's own sum (separable: the
    # mean over a box of windows is the mean of the per-dim means)
    several = any(out not in (1, size) for size, out in zip(sizes, outs))
    finite = not several or (isinstance(x, Tensor) and bool(isfinite(x).all()))
    for d, (size, out) in enumerate(zip(sizes, outs)):
        if out == size:
            continue
        pool = _adaptive_weighted if finite or out == 1 else _adaptive_windowed
        x = pool(x, 2 + d, size, out)
    # a value of its own, as PyTorch's: channels-last where the input is, in 2-D, or in 3-D
    # where every output size is 1 (PyTorch's mean, restrided)
    x = cast(x, source.dtype) if half else x
    x = suggested_layout(x, *[source] * (n <= 2 or all(o == 1 for o in outs)), as_2d=True)
    return squeeze(x, 0) if added else x


def adaptive_avg_pool1d(input, output_size):  # noqa: A002
    """Mean over `output_size` windows of `input` (N, C, L) or (C, L) that cover it as evenly
    as integer bounds allow (PyTorch's adaptive windows).

    >>> import kiln as kn
    >>> kn.nn.functional.adaptive_avg_pool1d(kn.tensor([[[1.0, 2.0, 3.0, 5.0]]]), 2)
    tensor([[[1.5000, 4.0000]]])
    """
    return _adaptive_avg("adaptive_avg_pool1d", 1, input, output_size)


def adaptive_avg_pool2d(input, output_size):  # noqa: A002
    """Mean over an `output_size` grid of windows of `input` (N, C, H, W) or (C, H, W); a
    None size keeps that dim.

    >>> import kiln as kn
    >>> list(kn.nn.functional.adaptive_avg_pool2d(kn.ones(1, 2, 5, 7), 1).shape)
    [1, 2, 1, 1]
    """
    out = _adaptive_avg("adaptive_avg_pool2d", 2, input, output_size)
    sizes = tuple(output_size) if isinstance(output_size, (tuple, list)) else (output_size,) * 2
    # PyTorch's names: a mean for a 1 x 1 output (AdaptiveAvgPool2d(1), ResNet's head)
    name = "MeanBackward1" if sizes == (1, 1) else "AdaptiveAvgPool2DBackward0"
    return name_history(out, name, input)


@autocast_op("fp32")
def adaptive_avg_pool3d(input, output_size):  # noqa: A002
    """Mean over an `output_size` grid of windows of `input` (N, C, D, H, W) or (C, D, H, W).

    >>> import kiln as kn
    >>> list(kn.nn.functional.adaptive_avg_pool3d(kn.ones(1, 1, 4, 4, 4), (2, None, 1)).shape)
    [1, 1, 2, 4, 1]
    """
    return _adaptive_avg("adaptive_avg_pool3d", 3, input, output_size)


def _adaptive_max_windows(x, n, sizes, outs, return_indices):
    tables = []
    for size, out in zip(sizes, outs):
        start, end = _bounds(size, out)
        # Windows differ in length; a short one repeats its last element, which changes
        # neither its maximum nor which element PyTorch picks (`_pick`).
        taps = start[:, None] + np.arange(int((end - start).max()))
        tables.append(np.minimum(taps, (end - 1)[:, None]))
    win = gather_windows(x, tables, channels_last=True)  # (N, O1..On, C, K1..Kn)
    win = reshape(win, (*win.shape[: 2 + n], math.prod(t.shape[1] for t in tables)))
    win = permute(win, (0, n + 1, n + 2, *range(1, n + 1)))  # (N, C, K, O1..On)
    return _max_windows(x, win, tables, (0,) * n, return_indices)


def _adaptive_max(op, n, input, output_size, return_indices):  # noqa: A002
    (x,) = lift(input)
    x, added = _batched(x, n, op)
    (x,) = _floats(op, x)
    if x.shape[1] == 0:  # an empty batch only (PyTorch's adaptive_max_pool's check)
        raise _shape_error(
            op, f"expected input to have non-zero size for non-batch dimensions, but got input "
            f"of size {sh.format_shape(x.shape)}", x,
        )  # fmt: skip
    sizes, outs = _adaptive_sizes(op, x, n, output_size)
    if 0 in outs:
        empty = empty_pool_result(x, outs)
        result = (empty, cast(empty, np.int64)) if return_indices else empty
    else:
        result = _adaptive_max_windows(x, n, sizes, outs, return_indices)
    if n <= 2:  # (PyTorch's adaptive_max_pool2d keeps a channels-last layout, 3d not; 1d is 2d's)
        result = suggested_layout(result, x, as_2d=True)
    if not added:
        return result
    if return_indices:
        return tuple(squeeze(r, 0) for r in result)
    return squeeze(result, 0)


def adaptive_max_pool1d(input, output_size, return_indices=False):  # noqa: A002
    """Maximum over `output_size` adaptive windows of `input` (N, C, L) or (C, L).

    >>> import kiln as kn
    >>> kn.nn.functional.adaptive_max_pool1d(kn.tensor([[[1.0, 4.0, 3.0, 2.0, 5.0]]]), 2)
    tensor([[[4., 5.]]])
    """
    return _adaptive_max("adaptive_max_pool1d", 1, input, output_size, return_indices)


def adaptive_max_pool2d(input, output_size, return_indices=False):  # noqa: A002
    """Maximum over an `output_size` grid of adaptive windows of `input` (N, C, H, W) or
    (C, H, W); with `return_indices`, also each maximum's flat index into H * W.

    >>> import kiln as kn
    >>> kn.nn.functional.adaptive_max_pool2d(kn.arange(16.0).reshape(1, 1, 4, 4), 1)
    tensor([[[[15.]]]])
    """
    return _adaptive_max("adaptive_max_pool2d", 2, input, output_size, return_indices)


def adaptive_max_pool3d(input, output_size, return_indices=False):  # noqa: A002
    """Maximum over an `output_size` grid of adaptive windows of `input` (N, C, D, H, W) or
    (C, D, H, W).

    >>> import kiln as kn
    >>> kn.nn.functional.adaptive_max_pool3d(kn.arange(8.0).reshape(1, 1, 2, 2, 2), 1)
    tensor([[[[[7.]]]]])
    """
    return _adaptive_max("adaptive_max_pool3d", 3, input, output_size, return_indices)
