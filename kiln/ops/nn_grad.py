"""Gradient primitives of convolution and pooling: the transposed maps that the vjps of
`nn.py` bind. Each has its own vjp, so gradients of gradients work.

Scattering windows back onto the input (col2im) loops over the KH*KW kernel offsets only:
within one offset the windows touch distinct pixels, so each step is one strided `+=`.
Inputs named `gy` are cotangents of a forward op's output (the primal inputs of these ops).
"""

from __future__ import annotations

import numpy as np

from .. import shapes as sh
from ..errors import ShapeError
from .core import apply, defop, in_float32
from .nn import (
    _check_4d,
    _conv2d_shape,
    _float_only,
    _into,
    _pad,
    _pool_shape,
    _windows,
    window_taps,
)
from .nn_batch import batch_per_example
from .select_kernels import BITS_SELECT_SIZE, select_bits

# -- shared helpers --------------------------------------------------------------------------


def _require_shape(name, what, got, expected):
    """`got` must be `expected`: ints now; batch and channels once feeds bind them.

    NOTE: symbolic spatial dims are not compared: conv2d's shape rule makes them fresh
    anonymous Dims, which no feed binds.
    """
    _check_4d(name, got, what)
    if tuple(got) == tuple(expected):
        return

    def why():
        return f"{name}: expected {what} of size {sh.format_shape(expected)}, got " + (
            sh.format_shape(got)
        )

    for i, (g, e) in enumerate(zip(got, expected)):
        if isinstance(g, int) and isinstance(e, int):
            if g != e:
                raise ShapeError(why())
        elif i < 2:
            sh.require_equal(g, e, why())


def _cropped(xp, out, view):
    """The crop `view` of a padded work plane as the result, C-ordered where kiln makes the
    array (`out` None): PyTorch's gradients and transposed convolutions are contiguous, and a
    view would give `x.grad` the padded plane's strides (`x.grad.view(n, -1)` then raises)."""
    return xp.ascontiguousarray(view) if out is None else _into(xp, out, view)


def _scatter_windows(xp, cols, shape, stride, dilation, padding, out):
    """Adds window values `cols` (N, C, KH, KW, OH, OW) back onto a zero plane of the padded
    input and crops the padding: the adjoint of reading windows with `_windows` (col2im).
    `shape` is the unpadded input's (N, C, H, W)."""
    n, c, h, w = shape
    _, _, kh, kw, oh, ow = cols.shape
    (sy, sx), (ey, ex), (ph, pw) = stride, dilation, padding
    plane = xp.zeros((n, c, h + 2 * ph, w + 2 * pw), cols.dtype)
    for a in range(kh):
        rows = slice(a * ey, a * ey + sy * (oh - 1) + 1, sy)
        for b in range(kw):
            cols_b = slice(b * ex, b * ex + sx * (ow - 1) + 1, sx)
            plane[:, :, rows, cols_b] += cols[:, :, a, b]
    return _cropped(xp, out, plane[:, :, ph : ph + h, pw : pw + w])


def _argmax_windows(xp, x, kernel_size, stride, padding):
    """(N, C, OH, OW): the flat offset `a * KW + b` of each window's maximum.

    PyTorch's rule (its CPU kernel's `val > maxval || isnan(val)` in row-major window order):
    the first maximum, or the last NaN where the window holds one. The element the forward
    max returned either way.
    """
    taps = window_taps(xp, _pad(xp, x, padding, -xp.inf), kernel_size, stride)
    best = taps[0].copy()
    kind = xp.int8 if len(taps) < 128 else xp.int32  # (small: the loop's passes are faster)
    pick = xp.zeros(best.shape, kind)
    for k, tap in enumerate(taps[1:], 1):
        wins = (tap > best) | xp.isnan(tap)
        xp.maximum(best, tap, out=best)  # the new maximum where tap wins; NaN stays NaN
        # k where tap wins, else the pick so far: every earlier pick is below k, so the
        # larger of the two (SIMD passes; `where` on a mask without runs branches per element)
        xp.maximum(pick, xp.multiply(wins, k, dtype=kind), out=pick)
    if padding != (0, 0):  # a window of -inf alone: its first element inside the input
        kw, (sy, sx), (ph, pw) = kernel_size[1], stride, padding
        oh, ow = best.shape[2:]
        rows = xp.maximum(ph - sy * xp.arange(oh), 0)[:, None]
        cols = xp.maximum(pw - sx * xp.arange(ow), 0)[None, :]
        xp.copyto(pick, rows * kw + cols, where=best == -xp.inf)
    return pick


# -- conv2d: the gradients with respect to the input and to the weights ----------------------


def _conv2d_input_grad_shape(gy, w, *, x_shape, stride, padding, dilation):
    _check_4d("conv2d_input_grad", x_shape, "x_shape")
    y_shape = _conv2d_shape(x_shape, w, stride=stride, padding=padding, dilation=dilation)
    _require_shape("conv2d_input_grad", "cotangent", gy, y_shape)
    return tuple(x_shape)


def _conv2d_input_grad(xp, gy, w, out=None, *, x_shape, stride, padding, dilation):
    n, o, oh, ow = gy.shape
    _, c, kh, kw = w.shape
    if _shifted_products_fit(xp, gy, w, stride, dilation, padding):
        return _cropped(xp, out, _full_correlation(xp, gy, w, padding))
    # (C*KH*KW, O) @ (N, O, OH*OW): every window's share of the input gradient, im2col layout.
    cols = xp.matmul(w.reshape(o, c * kh * kw).T, gy.reshape(n, o, oh * ow))
    cols = cols.reshape(n, c, kh, kw, oh, ow)
    return _scatter_windows(xp, cols, x_shape, stride, dilation, padding, out)


def _shifted_products_fit(xp, gy, w, stride, dilation, padding) -> bool:
    """Whether `_full_correlation` computes this input gradient: on the CPU, stride and
    dilation 1, a kernel wider than one pixel, padding below the kernel size (the flipped
    kernel's padding is then >= 0), and enough output channels that a product over them is
    a GEMM worth its call (with fewer, im2col's one product is faster)."""
    o, _, kh, kw = w.shape
    return (
        xp is np
        and gy.dtype in (np.float32, np.float64)
        and stride == (1, 1)
        and dilation == (1, 1)
        and kh * kw > 1
        and o >= 8
        and padding[0] < kh
        and padding[1] < kw
    )


def _full_correlation(xp, gy, w, padding):
    """conv2d's input gradient at stride 1: gy correlated with the flipped kernel, padded by
    KH-1-PH and KW-1-PW, as one product per kernel offset. Each reads a shifted window of
    the padded planes flattened: the output is computed over rows of the padded width (the
    last KW-1 columns of each row wrap around and are dropped), so every window is a plain
    strided matrix BLAS reads in place. No (N, C*KH*KW, OH*OW) buffer is made, nor scattered
    back: about half the time of that path on the CNN benchmark's second layer."""
    n, o, oh, ow = gy.shape
    _, c, kh, kw = w.shape
    py, px = kh - 1 - padding[0], kw - 1 - padding[1]
    rows, width = oh + 2 * py, ow + 2 * px  # the padded planes
    h, wd = rows - kh + 1, width - kw + 1  # the input's
    planes = xp.zeros((n, o, rows * width + kw - 1), gy.dtype)  # (the last shift reads past)
    planes[:, :, : rows * width].reshape(n, o, rows, width)[:, :, py : py + oh, px : px + ow] = gy
    taps = xp.ascontiguousarray(w[:, :, ::-1, ::-1].transpose(2, 3, 1, 0))  # (KH, KW, C, O)
    span = h * width
    total, part = xp.empty((n, c, span), gy.dtype), xp.empty((n, c, span), gy.dtype)
    for a in range(kh):
        for b in range(kw):
            window = planes[:, :, a * width + b : a * width + b + span]
            if a == b == 0:
                xp.matmul(taps[a, b], window, out=total)
            else:
                xp.matmul(taps[a, b], window, out=part)
                total += part
    return total.reshape(n, c, h, width)[:, :, :, :wd]


def _conv2d_input_grad_vjp(ct, gx, gy, w, *, x_shape, **attrs):
    # gx = A(gy, w) is bilinear, and
    # <ct, A(gy, w)> = <conv2d(ct, w), gy> = <conv2d_weight_grad(ct, gy), w>.
    return (
        apply("conv2d", ct, w, **attrs),
        apply("conv2d_weight_grad", ct, gy, w_shape=tuple(w.shape), **attrs),
    )


conv2d_input_grad = defop(
    "conv2d_input_grad",
    _conv2d_input_grad_shape,
    lambda gy, w, **_: _float_only("conv2d_input_grad", gy, w),
    in_float32(_conv2d_input_grad),
    vjp=_conv2d_input_grad_vjp,
    batch=batch_per_example("conv2d_input_grad"),
    tags=("autocast_lower",),
)


def _conv2d_weight_grad_shape(x, gy, *, w_shape, stride, padding, dilation):
    _check_4d("conv2d_weight_grad", w_shape, "w_shape")
    y_shape = _conv2d_shape(x, w_shape, stride=stride, padding=padding, dilation=dilation)
    _require_shape("conv2d_weight_grad", "cotangent", gy, y_shape)
    return tuple(w_shape)


def _conv2d_weight_grad(xp, x, gy, out=None, *, w_shape, stride, padding, dilation):
    o, c, kh, kw = w_shape
    cols = _windows(xp, _pad(xp, x, padding, 0), (kh, kw), stride, dilation, "kernel_first")
    n, _, _, _, oh, ow = cols.shape
    cols = cols.reshape(n, c * kh * kw, oh * ow)  # im2col, as in the forward kernel
    gy = gy.reshape(n, o, oh * ow)
    if xp is not np or n < 2:
        grad = xp.tensordot(gy, cols, axes=((0, 2), (0, 2)))
        return _into(xp, out, grad.reshape(o, c, kh, kw))
    # one product per example, added up: tensordot's one product would first copy the whole
    # im2col again, transposed to (N*OH*OW, C*KH*KW), and OpenBLAS runs that long, thin
    # product slower (conv 32 -> 64 channels on 14x14, batch 64: 17.7 ms against 10.4)
    grad, part = xp.matmul(gy[0], cols[0].T), None
    for k in range(1, n):
        part = xp.matmul(gy[k], cols[k].T, out=part)
        grad += part
    return _into(xp, out, grad.reshape(o, c, kh, kw))


def _conv2d_weight_grad_vjp(ct, gw, x, gy, *, w_shape, **attrs):
    # gw = B(x, gy) is bilinear, and
    # <ct, B(x, gy)> = <conv2d(x, ct), gy> = <conv2d_input_grad(gy, ct), x>.
    return (
        apply("conv2d_input_grad", gy, ct, x_shape=tuple(x.shape), **attrs),
        apply("conv2d", x, ct, **attrs),
    )


conv2d_weight_grad = defop(
    "conv2d_weight_grad",
    _conv2d_weight_grad_shape,
    lambda x, gy, **_: _float_only("conv2d_weight_grad", x, gy),
    in_float32(_conv2d_weight_grad),
    vjp=_conv2d_weight_grad_vjp,
    batch=batch_per_example("conv2d_weight_grad", (0, 1), per_example_result=False),
    tags=("autocast_lower",),
)


# -- pooling ---------------------------------------------------------------------------------


def _max_pool2d_grad_shape(x, gy, **attrs):
    _require_shape("max_pool2d_grad", "cotangent", gy, _pool_shape("max_pool2d_grad", x, **attrs))
    return tuple(x)


def _max_pool2d_grad(xp, x, gy, out=None, *, kernel_size, stride, padding):
    """Routes each window's cotangent to the window's maximum (`_argmax_windows`); overlaps
    add up, in kernel-offset order."""
    pick = _argmax_windows(xp, x, kernel_size, stride, padding)
    gy = gy.astype(xp.result_type(x, gy), copy=False)
    (ph, pw), (n, c, h, w) = padding, x.shape
    plane = xp.zeros((n, c, h + 2 * ph, w + 2 * pw), gy.dtype)
    zero = gy.dtype.type(0)
    # windows apart (stride >= kernel): each input element is in one window, so its tap is
    # written once, as a bit select of gy (kiln/ops/elementwise.py `select_bits`)
    apart = all(s >= k for s, k in zip(stride, kernel_size))
    bits = xp is np and gy.dtype.kind == "f" and gy.size >= BITS_SELECT_SIZE
    for k, tap in enumerate(window_taps(xp, plane, kernel_size, stride)):
        if bits and apart:
            select_bits(gy, pick == k, tap)
        elif bits:
            tap += select_bits(gy, pick == k, xp.empty_like(gy))
        else:
            tap += xp.where(pick == k, gy, zero)
    return _cropped(xp, out, plane[:, :, ph : ph + h, pw : pw + w])


max_pool2d_grad = defop(
    "max_pool2d_grad",
    _max_pool2d_grad_shape,
    lambda x, gy, **_: _float_only("max_pool2d_grad", x, gy),
    _max_pool2d_grad,
    # Piecewise constant in x: the routing changes only where a maximum changes.
    vjp=lambda ct, gx, x, gy, **attrs: (None, apply("max_pool2d_gather", x, ct, **attrs)),
    batch=batch_per_example("max_pool2d_grad", (0, 1)),
)


def _max_pool2d_gather_shape(x, g, **attrs):
    _require_shape("max_pool2d_gather", "input", g, x)
    return _pool_shape("max_pool2d_gather", x, **attrs)


def _max_pool2d_gather(xp, x, g, out=None, *, kernel_size, stride, padding):
    """Picks, in each window of `g`, the element where `x`'s window has its maximum."""
    pick = _argmax_windows(xp, x, kernel_size, stride, padding)
    taps = window_taps(xp, _pad(xp, g, padding, 0), kernel_size, stride)
    picked = taps[0].copy()
    for k, tap in enumerate(taps[1:], 1):
        xp.copyto(picked, tap, where=pick == k)
    return _into(xp, out, picked)


max_pool2d_gather = defop(
    "max_pool2d_gather",
    _max_pool2d_gather_shape,
    lambda x, g, **_: _float_only("max_pool2d_gather", x, g),
    _max_pool2d_gather,
    vjp=lambda ct, y, x, g, **attrs: (None, apply("max_pool2d_grad", x, ct, **attrs)),
)


def _avg_pool2d_grad_shape(gy, *, x_shape, **attrs):
    y_shape = _pool_shape("avg_pool2d_grad", x_shape, **attrs)
    _require_shape("avg_pool2d_grad", "cotangent", gy, y_shape)
    return tuple(x_shape)


def _avg_pool2d_grad(xp, gy, out=None, *, x_shape, kernel_size, stride, padding):
    """Spreads each window's cotangent evenly over the window (padding included, as the
    forward counts it); overlaps add up."""
    (kh, kw), (n, c, oh, ow) = kernel_size, gy.shape
    share = gy / (kh * kw)
    cols = xp.broadcast_to(share[:, :, None, None], (n, c, kh, kw, oh, ow))
    return _scatter_windows(xp, cols, x_shape, stride, (1, 1), padding, out)


avg_pool2d_grad = defop(
    "avg_pool2d_grad",
    _avg_pool2d_grad_shape,
    lambda gy, **_: _float_only("avg_pool2d_grad", gy),
    in_float32(_avg_pool2d_grad),
    vjp=lambda ct, gx, gy, *, x_shape, **attrs: (apply("avg_pool2d", ct, **attrs),),
    batch=batch_per_example("avg_pool2d_grad"),
)
