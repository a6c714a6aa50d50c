"""Neural-network primitives: convolution and pooling (NCHW activations, OIHW weights).

Kernels build a strided window view of the (padded) input with `as_strided`, then reduce it
with one `matmul` (im2col) or one `max`/`mean`: no Python loops over pixels, and the same code
runs on NumPy and CuPy. Their vjps bind the gradient primitives of `nn_grad.py`.
"""

from __future__ import annotations

from .. import dtypes as dt
from .. import shapes as sh
from ..errors import DTypeError, ShapeError
from .core import apply, defop, in_float32
from .nn_batch import batch_per_example

# -- shared shape helpers --------------------------------------------------------------------


def _pairs(name, **attrs):
    """Checks that each attr is a pair of ints (attrs are canonical: the frontend makes them)."""
    for key, value in attrs.items():
        ok = isinstance(value, tuple) and len(value) == 2
        if not ok or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            raise ShapeError(f"{name}: {key} must be a pair of ints, got {value!r}")


def _check_4d(name, x, what="input"):
    if len(x) != 4:
        raise ShapeError(
            f"{name}: expected a 4-d (N, C, H, W) {what}, got {what} of size {sh.format_shape(x)}"
        )


def _out_dim(name, size, kernel, *, stride, pad, dilation, axis):
    """Output length along one spatial axis: `(size + 2 pad - dilation (kernel - 1) - 1)
    // stride + 1`, as PyTorch computes it; an anonymous Dim when a size is symbolic."""
    if not (isinstance(size, int) and isinstance(kernel, int)):
        return sh.Dim()
    padded, reach = size + 2 * pad, dilation * (kernel - 1) + 1
    if reach > padded:
        raise ShapeError(
            f"{name}: calculated padded input size per channel along {axis} is {padded}; "
            f"the (dilated) kernel size is {reach}. Kernel size can't be greater than "
            "actual input size"
        )
    return (padded - reach) // stride + 1


def _check_positive(name, **attrs):
    for key, value in attrs.items():
        if any(v <= 0 for v in value):
            raise ShapeError(f"{name}: non-positive {key} {value} is not supported")


def _float_only(name, *dtypes):
    for d in dtypes:
        if not dt.is_float(d):
            names = ", ".join(str(x) for x in dtypes)
            raise DTypeError(f"{name}: expected floating-point inputs, got {names}")
    return dt.promote(*dtypes)


def _windows(xp, x, kernel, stride, dilation, order):
    """A view of `x` (N, C, H, W) as windows of `kernel` taken every `stride`.

    `order="kernel_first"` gives (N, C, KH, KW, OH, OW), the im2col layout that a matmul
    against (O, C*KH*KW) weights turns straight into NCHW; otherwise (N, C, OH, OW, KH, KW).
    """
    n, c, h, w = x.shape
    (kh, kw), (sy, sx), (dy, dx) = kernel, stride, dilation
    oh, ow = (h - dy * (kh - 1) - 1) // sy + 1, (w - dx * (kw - 1) - 1) // sx + 1
    s0, s1, s2, s3 = x.strides
    tap = ((kh, kw), (s2 * dy, s3 * dx))
    pos = ((oh, ow), (s2 * sy, s3 * sx))
    first, second = (tap, pos) if order == "kernel_first" else (pos, tap)
    shape = (n, c, *first[0], *second[0])
    strides = (s0, s1, *first[1], *second[1])
    # NOTE: the windows overlap, so the view is only ever read (CuPy's as_strided has no
    # `writeable=False` to enforce that).
    return xp.lib.stride_tricks.as_strided(x, shape=shape, strides=strides)


def _pad(xp, x, padding, value):
    ph, pw = padding
    if ph == 0 and pw == 0:
        return x
    return xp.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)), constant_values=value)


def _into(xp, out, value):
    if out is None:
        return value
    out[...] = value
    return out


def _reduce_windows(xp, reduce, win, out):
    """`reduce` over the kernel axes (4, 5) of `win`, always into a C-order array.

    NOTE: NumPy orders a reduction's loops by the strides of its input *and* output, so a
    float sum into a caller's differently laid out `out` could round differently; a fixed
    output layout keeps results with and without `out=` bit-identical.
    """
    if out is not None and out.flags.c_contiguous:
        return reduce(win, axis=(4, 5), out=out)
    result = reduce(win, axis=(4, 5), out=xp.empty(win.shape[:4], win.dtype))
    return _into(xp, out, result)


# -- conv2d ----------------------------------------------------------------------------------


def _conv2d_shape(x, w, *, stride, padding, dilation):
    _pairs("conv2d", stride=stride, padding=padding, dilation=dilation)
    _check_positive("conv2d", stride=stride, dilation=dilation)
    if any(p < 0 for p in padding):
        raise ShapeError(f"conv2d: negative padding {padding} is not supported")
    _check_4d("conv2d", x)
    if len(w) != 4:
        raise ShapeError(f"conv2d: expected a 4-d (O, C, KH, KW) weight, got {sh.format_shape(w)}")
    if any(isinstance(k, int) and k <= 0 for k in w[2:]):
        raise ShapeError(f"conv2d: weight of size {sh.format_shape(w)} has an empty kernel")
    why = (
        f"conv2d: given groups=1, weight of size {sh.format_shape(w)}, expected "
        f"input{sh.format_shape(x)} to have {w[1]} channels, but got {x[1]} channels instead"
    )
    if isinstance(x[1], int) and isinstance(w[1], int) and x[1] != w[1]:
        raise ShapeError(why)
    sh.require_equal(x[1], w[1], why)
    spatial = [
        _out_dim("conv2d", x[i], w[i], stride=stride[i - 2], pad=padding[i - 2],
                 dilation=dilation[i - 2], axis="HW"[i - 2])
        for i in (2, 3)
    ]  # fmt: skip
    return (x[0], w[0], *spatial)


def _conv2d(xp, x, w, out=None, *, stride, padding, dilation):
    o, c, kh, kw = w.shape
    cols = _windows(xp, _pad(xp, x, padding, 0), (kh, kw), stride, dilation, "kernel_first")
    n, _, _, _, oh, ow = cols.shape
    # NOTE: this reshape copies the strided windows into one contiguous (N, C*KH*KW, OH*OW)
    # buffer (im2col); the matmul then yields (N, O, OH*OW), already in NCHW order.
    cols = cols.reshape(n, c * kh * kw, oh * ow)
    weights = w.reshape(o, c * kh * kw)
    if out is not None and out.flags.c_contiguous:
        xp.matmul(weights, cols, out=out.reshape(n, o, oh * ow))
        return out
    return _into(xp, out, xp.matmul(weights, cols).reshape(n, o, oh, ow))


def _conv2d_vjp(ct, y, x, w, needs=(True, True), **attrs):
    return (
        apply("conv2d_input_grad", ct, w, x_shape=tuple(x.shape), **attrs) if needs[0] else None,
        apply("conv2d_weight_grad", x, ct, w_shape=tuple(w.shape), **attrs) if needs[1] else None,
    )


conv2d = defop(
    "conv2d",
    _conv2d_shape,
    lambda x, w, **_: _float_only("conv2d", x, w),
    in_float32(_conv2d),
    vjp=_conv2d_vjp,
    batch=batch_per_example("conv2d"),
    tags=("vjp_needs", "autocast_lower"),
)


# -- pooling ---------------------------------------------------------------------------------


def _pool_shape(name, x, kernel_size, stride, padding):
    _pairs(name, kernel_size=kernel_size, stride=stride, padding=padding)
    _check_positive(name, kernel_size=kernel_size, stride=stride)
    if any(p < 0 or 2 * p > k for p, k in zip(padding, kernel_size)):
        raise ShapeError(
            f"{name}: pad should be non-negative and at most half of kernel size, but got "
            f"pad={padding} and kernel_size={kernel_size}"
        )
    _check_4d(name, x)
    spatial = [
        _out_dim(name, x[i], kernel_size[i - 2], stride=stride[i - 2], pad=padding[i - 2],
                 dilation=1, axis="HW"[i - 2])
        for i in (2, 3)
    ]  # fmt: skip
    return (x[0], x[1], *spatial)


def _pool_dtype(name):
    return lambda x, **_: _float_only(name, x)


def window_taps(xp, x, kernel, stride):
    """(N, C, OH, OW) strided views of `x` (N, C, H, W), one per kernel offset (a, b) in
    row-major order: the (a, b) element of every window of `kernel` taken every `stride`.
    Each is a plain strided slice, so a loop over the offsets runs NumPy's fast elementwise
    loops over whole planes (a reduction over the window axes of `_windows` runs a short
    inner loop per window: about 8x slower for 2x2 pools)."""
    (kh, kw), (sy, sx) = kernel, stride
    oh, ow = (x.shape[2] - kh) // sy + 1, (x.shape[3] - kw) // sx + 1
    return [x[:, :, a : a + sy * (oh - 1) + 1 : sy, b : b + sx * (ow - 1) + 1 : sx]
            for a in range(kh) for b in range(kw)]  # fmt: skip


# kernels of up to this many offsets run as a loop over `window_taps`; larger ones (a global
# pool) as one reduction over the windows, whose per-window loop is long enough there
TAP_LOOP_MAX = 64


def _max_pool2d(xp, x, out=None, *, kernel_size, stride, padding):
    # -inf padding never wins a max (PyTorch's semantics); pads are at most half a kernel, so
    # every window holds at least one real element. A NaN in a window gives NaN (as np.max
    # and np.maximum do, and PyTorch's kernel).
    padded = _pad(xp, x, padding, -xp.inf)
    if kernel_size[0] * kernel_size[1] > TAP_LOOP_MAX:
        win = _windows(xp, padded, kernel_size, stride, (1, 1), "pos_first")
        return _reduce_windows(xp, xp.max, win, out)
    taps = window_taps(xp, padded, kernel_size, stride)
    if out is None or not out.flags.c_contiguous:
        result = xp.empty(taps[0].shape, x.dtype)
    else:
        result = out
    result[...] = taps[0]
    for tap in taps[1:]:
        xp.maximum(result, tap, out=result)
    return result if out is None or result is out else _into(xp, out, result)


def _avg_pool2d(xp, x, out=None, *, kernel_size, stride, padding):
    # Zero padding counted in the mean: PyTorch's default count_include_pad=True. The window's
    # elements are added in row-major order and the sum divided once, as PyTorch's kernel does.
    padded = _pad(xp, x, padding, 0)
    if kernel_size[0] * kernel_size[1] > TAP_LOOP_MAX:
        win = _windows(xp, padded, kernel_size, stride, (1, 1), "pos_first")
        return _reduce_windows(xp, xp.mean, win, out)
    taps = window_taps(xp, padded, kernel_size, stride)
    result = taps[0].copy()
    for tap in taps[1:]:
        result += tap
    result /= result.dtype.type(kernel_size[0] * kernel_size[1])
    return _into(xp, out, result)


max_pool2d = defop(
    "max_pool2d",
    lambda x, **attrs: _pool_shape("max_pool2d", x, **attrs),
    _pool_dtype("max_pool2d"),
    _max_pool2d,
    vjp=lambda ct, y, x, **attrs: (apply("max_pool2d_grad", x, ct, **attrs),),
    batch=batch_per_example("max_pool2d"),
)
avg_pool2d = defop(
    "avg_pool2d",
    lambda x, **attrs: _pool_shape("avg_pool2d", x, **attrs),
    _pool_dtype("avg_pool2d"),
    in_float32(_avg_pool2d),
    vjp=lambda ct, y, x, **attrs: (apply("avg_pool2d_grad", ct, x_shape=tuple(x.shape), **attrs),),
    batch=batch_per_example("avg_pool2d"),
)
