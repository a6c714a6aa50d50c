"""ONNX export rules for the gradient primitives of convolution and pooling (what a program
holding `kn.grad` of a conv net needs): ConvTranspose, Conv over swapped axes, and MaxPool's
Indices output. Rows of the one table in onnx_rules.py."""

from __future__ import annotations

import numpy as np

from . import onnx_rules as base
from .onnx_rules_scatter import raise_no_form


def _static(node, *dims):
    if not all(isinstance(d, int) for d in dims):
        raise_no_form(node, "on symbolic spatial sizes")


def _transposed(ex, node, gy, w, x_shape, kernel, groups=1):
    """ConvTranspose of `gy` by `w` back onto `x_shape`: output_padding adds the rows and
    columns the forward op's floor dropped."""
    a = node.attrs
    dilation = a.get("dilation", (1, 1))
    out_hw, in_hw = x_shape[2:], node.inputs[0].shape[2:]  # x's and gy's spatial sizes
    _static(node, *out_hw, *in_hw, *kernel)
    natural = [
        (n - 1) * s - 2 * p + d * (k - 1) + 1
        for n, s, p, d, k in zip(in_hw, a["stride"], a["padding"], dilation, kernel)
    ]
    (ph, pw) = a["padding"]
    return ex.emit(
        "ConvTranspose", [gy, w], strides=list(a["stride"]), pads=[ph, pw, ph, pw],
        dilations=list(dilation), group=groups,
        output_padding=[o - n for o, n in zip(out_hw, natural)],
    )  # fmt: skip


def conv2d_input_grad(ex, node, xs, out):
    gy, w = base.cast_all(ex, node, xs, base.out_dtype(node))
    value = _transposed(ex, node, gy, w, node.attrs["x_shape"], node.inputs[1].shape[2:])
    return ex.emit("Identity", [value], out)


def conv2d_weight_grad(ex, node, xs, out):
    """dW[o, c] is the correlation of x's channel c with gy's channel o over the batch: a Conv
    with batch and channels swapped, stride and dilation exchanged, cropped to the kernel."""
    x, gy = base.cast_all(ex, node, xs, base.out_dtype(node))
    a, (kh, kw) = node.attrs, node.attrs["w_shape"][2:]
    _static(node, kh, kw)
    (ph, pw) = a["padding"]
    swapped = [ex.emit("Transpose", [v], perm=[1, 0, 2, 3]) for v in (x, gy)]
    full = ex.emit("Conv", swapped, strides=list(a["dilation"]), dilations=list(a["stride"]),
                   pads=[ph, pw, ph, pw])  # fmt: skip
    crop = ex.emit("Slice", [full, ex.ints([0, 0]), ex.ints([kh, kw]), ex.ints([2, 3])])
    return ex.emit("Transpose", [crop], out, perm=[1, 0, 2, 3])


def avg_pool2d_grad(ex, node, xs, out):
    """Each window's share, 1 / (KH KW) of its cotangent, spread back: a per-channel
    ConvTranspose by a constant kernel."""
    x_shape, (kh, kw) = node.attrs["x_shape"], node.attrs["kernel_size"]
    channels = x_shape[1]
    _static(node, channels)
    dtype = base.out_dtype(node)
    w = ex.const(np.full((channels, 1, kh, kw), 1 / (kh * kw)), dtype)
    value = _transposed(ex, node, xs[0], w, x_shape, (kh, kw), groups=channels)
    return ex.emit("Identity", [value], out)


def _argmax(ex, node, x):
    """MaxPool's flat indices of each window's maximum (the first of equals, as kiln)."""
    (ph, pw), a = node.attrs["padding"], node.attrs
    _, index = ex.emit("MaxPool", [x], n_outputs=2, kernel_shape=list(a["kernel_size"]),
                       strides=list(a["stride"]), pads=[ph, pw, ph, pw])  # fmt: skip
    return ex.emit("Reshape", [index, ex.ints([-1])])


def max_pool2d_grad(ex, node, xs, out):
    """The cotangent added at each window's maximum (ScatterElements into flat zeros)."""
    x, gy = xs
    dtype = base.out_dtype(node)
    gy = ex.cast(gy, node.inputs[1].dtype, dtype)
    zeros = ex.emit("Expand", [base.scalar(ex, 0, dtype), ex.emit("Shape", [x])])
    flat = ex.emit("Reshape", [zeros, ex.ints([-1])])
    values = ex.emit("Reshape", [gy, ex.ints([-1])])
    index = _argmax(ex, node, ex.cast(x, node.inputs[0].dtype, dtype))
    added = ex.emit("ScatterElements", [flat, index, values], axis=0, reduction="add")
    return ex.emit("Reshape", [added, ex.emit("Shape", [x])], out)


def max_pool2d_gather(ex, node, xs, out):
    """g read at each window's maximum of x."""
    x, g = xs
    index = _argmax(ex, node, x)
    taken = ex.emit("Gather", [ex.emit("Reshape", [g, ex.ints([-1])]), index], axis=0)
    return ex.emit("Reshape", [taken, ex.shape(node.out.shape)], out)
