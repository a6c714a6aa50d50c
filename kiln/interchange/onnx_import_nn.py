"""ONNX import rules for convolution and pooling (2-d, NCHW): see onnx_import_rules.py."""

from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from .onnx_import import Known


def _pads_2d(imp, attrs, x, kernel, strides, dilations):
    """ONNX's (top, left, bottom, right) pads, from `pads` or `auto_pad` (SAME_* on static
    sizes: the output size is ceil(size / stride))."""
    auto = attrs.get("auto_pad", b"NOTSET")
    auto = auto.decode() if isinstance(auto, bytes) else auto
    if auto in ("NOTSET", "VALID"):
        return tuple(attrs.get("pads", [0, 0, 0, 0])) if auto == "NOTSET" else (0, 0, 0, 0)
    begin, end = [], []
    for size, k, s, d in zip(x.shape[2:], kernel, strides, dilations):
        if not isinstance(size, int):
            raise imp.error(f"with auto_pad={auto} on a symbolic size has no kiln form")
        total = max((-(-size // s) - 1) * s + (k - 1) * d + 1 - size, 0)
        small = total // 2
        begin.append(small if auto == "SAME_UPPER" else total - small)
        end.append(total - begin[-1])
    return (*begin, *end)


def _explicit_pad(imp, x, pads, value):
    """`x` padded by ONNX's (top, left, bottom, right) pads with `value`."""
    if not any(pads):
        return x
    t, l_, b, r = pads
    return imp.apply("pad", x, pad_width=((0, 0), (0, 0), (t, b), (l_, r)), value=value)


def _check_2d(imp, x, attrs, key="kernel_shape"):
    if x.ndim != 4 or (key in attrs and len(attrs[key]) != 2):
        raise imp.error(f"on a {x.ndim}-d input has no kiln form (2-d NCHW only)")


def conv(imp, xs, attrs):
    x, w = imp.symbol(xs[0]), imp.symbol(xs[1])
    _check_2d(imp, x, attrs)
    if attrs.get("group", 1) != 1:
        raise imp.error(f"with group={attrs['group']} has no kiln form (groups=1 only)")
    strides = tuple(attrs.get("strides", (1, 1)))
    dilations = tuple(attrs.get("dilations", (1, 1)))
    pads = _pads_2d(imp, attrs, x, w.shape[2:], strides, dilations)
    padding = pads[:2]
    if pads[:2] != pads[2:]:
        x, padding = _explicit_pad(imp, x, pads, 0.0), (0, 0)
    y = imp.apply("conv2d", x, w, stride=strides, padding=padding, dilation=dilations)
    if len(xs) > 2 and xs[2] is not None:
        bias = imp.symbol(xs[2])
        y = imp.apply("add", y, imp.apply("reshape", bias, shape=(bias.shape[0], 1, 1)))
    return y


def pool(name):
    """MaxPool / AveragePool: pads kiln's pool does not take (asymmetric, over half a kernel)
    are applied first (-inf for max, zeros for the mean); `count_include_pad=0` divides by the
    pooled count of real elements."""

    def rule(imp, xs, attrs):
        x = imp.symbol(xs[0])
        _check_2d(imp, x, attrs)
        if attrs.get("ceil_mode", 0) or any(d != 1 for d in attrs.get("dilations", (1, 1))):
            raise imp.error("with ceil_mode or dilations has no kiln form")
        kernel, strides = tuple(attrs["kernel_shape"]), tuple(attrs.get("strides", (1, 1)))
        pads = _pads_2d(imp, attrs, x, kernel, strides, (1, 1))
        is_max = name == "max_pool2d"
        fits = pads[:2] == pads[2:] and all(2 * p <= k for p, k in zip(pads, kernel))
        if fits and (is_max or attrs.get("count_include_pad", 0) or not any(pads)):
            return imp.apply(name, x, kernel_size=kernel, stride=strides, padding=pads[:2])
        if not dt.is_float(x.dtype):
            raise imp.error(f"on {x.dtype} has no kiln form (floats only)")
        fill = -np.inf if is_max else 0.0
        y = imp.apply(name, _explicit_pad(imp, x, pads, fill), kernel_size=kernel,
                      stride=strides, padding=(0, 0))  # fmt: skip
        if is_max or attrs.get("count_include_pad", 0):
            return y
        ones = imp.apply("broadcast_to", Known(np.ones((), x.dtype)), shape=x.shape)
        count = imp.apply(name, _explicit_pad(imp, ones, pads, 0.0), kernel_size=kernel,
                          stride=strides, padding=(0, 0))  # fmt: skip
        return imp.apply("div", y, count)

    return rule


def global_pool(name):
    def rule(imp, xs, attrs):
        x = imp.symbol(xs[0])
        return imp.apply(name, x, axes=tuple(range(2, x.ndim)), keepdims=True)

    return rule


def max_pool(imp, xs, attrs):
    return pool("max_pool2d")(imp, xs, attrs)
