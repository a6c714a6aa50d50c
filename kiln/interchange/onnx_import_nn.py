"""ONNX import rules for convolution and pooling (NCHW; 1-d as 2-d, transposed convolution of
any rank, pooling beyond kiln's 2-d pools in onnx_import_pool.py): see onnx_import_rules.py."""

from __future__ import annotations

import itertools

import numpy as np

from .. import dtypes as dt
from .onnx_import import Known
from .onnx_import_pool import window_pool


def _pads_2d(imp, attrs, x, kernel, strides, dilations):
    """ONNX's (top, left, bottom, right) pads (begins then ends, for any number of axes),
    from `pads` or `auto_pad` (SAME_* on static sizes: the output size is ceil(size /
    stride))."""
    auto = attrs.get("auto_pad", b"NOTSET")
    auto = auto.decode() if isinstance(auto, bytes) else auto
    zeros = (0,) * (2 * (x.ndim - 2))
    if auto in ("NOTSET", "VALID"):
        return tuple(attrs.get("pads", zeros)) if auto == "NOTSET" else zeros
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


_ALL = ("slice", None, None, None)


def one_d(rule):
    """A 2-d rule that also takes 1-d (N, C, L) inputs, as (N, C, 1, L) with 1 x k kernels."""

    def wrapped(imp, xs, attrs):
        x = imp.symbol(xs[0])
        if x.ndim != 3:
            return rule(imp, xs, attrs)
        attrs = dict(attrs)
        for key, one in (("kernel_shape", 1), ("strides", 1), ("dilations", 1)):
            if key in attrs:
                attrs[key] = [one, *attrs[key]]
        if "pads" in attrs:
            begin, end = attrs["pads"]
            attrs["pads"] = [0, begin, 0, end]
        if "output_padding" in attrs:
            attrs["output_padding"] = [0, *attrs["output_padding"]]
        if "output_shape" in attrs:
            attrs["output_shape"] = [1, attrs["output_shape"][-1]]
        xs = list(xs)
        xs[0] = imp.apply("reshape", x, shape=(x.shape[0], x.shape[1], 1, x.shape[2]))
        if rule in (conv, conv_transpose):
            w = imp.symbol(xs[1])
            xs[1] = imp.apply("reshape", w, shape=(w.shape[0], w.shape[1], 1, w.shape[2]))
        y = rule(imp, xs, attrs)
        return imp.apply("reshape", y, shape=(y.shape[0], y.shape[1], y.shape[3]))

    return wrapped


def conv(imp, xs, attrs):
    x, w = imp.symbol(xs[0]), imp.symbol(xs[1])
    _check_2d(imp, x, attrs)
    strides = tuple(attrs.get("strides", (1, 1)))
    dilations = tuple(attrs.get("dilations", (1, 1)))
    pads = _pads_2d(imp, attrs, x, w.shape[2:], strides, dilations)
    padding = pads[:2]
    if pads[:2] != pads[2:]:
        x, padding = _explicit_pad(imp, x, pads, 0.0), (0, 0)
    groups = attrs.get("group", 1)
    if groups != 1 and not (isinstance(x.shape[1], int) and isinstance(w.shape[0], int)):
        raise imp.error(f"with group={groups} on symbolic channels has no kiln form")
    parts = []  # groups: each slice of the channels convolved with its slice of the filters
    for g in range(groups):
        xg, wg = x, w
        if groups != 1:
            c, o = x.shape[1] // groups, w.shape[0] // groups
            xg = imp.apply("index", x, spec=(_ALL, ("slice", g * c, (g + 1) * c, None)))
            wg = imp.apply("index", w, spec=(("slice", g * o, (g + 1) * o, None),))
        parts.append(imp.apply("conv2d", xg, wg, stride=strides, padding=padding,
                               dilation=dilations))  # fmt: skip
    y = parts[0] if groups == 1 else imp.apply("concat", *parts, axis=1)
    if len(xs) > 2 and xs[2] is not None:
        bias = imp.symbol(xs[2])
        y = imp.apply("add", y, imp.apply("reshape", bias, shape=(bias.shape[0], 1, 1)))
    return y


def conv_transpose(imp, xs, attrs):
    """ConvTranspose per group: 2-d as kiln's conv2d_input_grad (the transpose of conv2d onto a
    given input size), other ranks as a sum over kernel offsets of the input times that
    offset's weights placed at strided positions (`_offsets_transposed`); the size from
    output_padding. Pads from auto_pad or output_shape (as ONNX's reference computes them), and
    asymmetric pads, crop the unpadded result."""
    x, w = imp.symbol(xs[0]), imp.symbol(xs[1])
    n = x.ndim - 2
    strides = tuple(attrs.get("strides", (1,) * n))
    dilations = tuple(attrs.get("dilations", (1,) * n))
    extra = tuple(attrs.get("output_padding", (0,) * n))
    if not all(isinstance(d, int) for d in (*x.shape[2:], *w.shape[2:])):
        raise imp.error("on symbolic spatial sizes has no kiln form")
    sizes = zip(x.shape[2:], strides, dilations, w.shape[2:], extra)
    full = [(m - 1) * s + d * (k - 1) + 1 + e for m, s, d, k, e in sizes]
    pads = list(attrs.get("pads", [0] * (2 * n)))
    auto = attrs.get("auto_pad", b"NOTSET")
    auto = auto.decode() if isinstance(auto, bytes) else auto
    target = attrs.get("output_shape")
    if target is None and auto in ("SAME_UPPER", "SAME_LOWER"):
        target = [m * s for m, s in zip(x.shape[2:], strides)]
    if target is not None:
        target = list(target)[-n:]
        total = [f - t for f, t in zip(full, target)]  # negative: zeros past the end
        small = [t // 2 for t in total]
        begin = small if auto == "SAME_UPPER" else [t - h for t, h in zip(total, small)]
        pads = [*begin, *(t - b for t, b in zip(total, begin))]
    symmetric = n == 2 and pads[:n] == pads[n:] and min(pads) >= 0
    padding = tuple(pads[:n]) if symmetric else (0,) * n
    size = [f - 2 * p for f, p in zip(full, padding)]
    groups, c = attrs.get("group", 1), w.shape[1]
    parts = []
    for g in range(groups):
        xg, wg = x, w
        if groups != 1:
            o = x.shape[1] // groups
            xg = imp.apply("index", x, spec=(_ALL, ("slice", g * o, (g + 1) * o, None)))
            wg = imp.apply("index", w, spec=(("slice", g * o, (g + 1) * o, None),))
        shape = (x.shape[0], c, *size)
        if n != 2:
            parts.append(_offsets_transposed(imp, xg, wg, shape, strides, dilations))
            continue
        parts.append(imp.apply("conv2d_input_grad", xg, wg, x_shape=shape, stride=strides,
                               padding=padding, dilation=dilations))  # fmt: skip
    y = parts[0] if groups == 1 else imp.apply("concat", *parts, axis=1)
    if not symmetric:  # crop the pads from the full result; negative pads add zeros
        crop = [(max(b, 0), f - max(e, 0)) for b, e, f in zip(pads[:n], pads[n:], full)]
        y = imp.apply("index", y, spec=(_ALL, _ALL, *(("slice", b, e, None) for b, e in crop)))
        widths = [(max(-b, 0), max(-e, 0)) for b, e in zip(pads[:n], pads[n:])]
        if any(b or e for b, e in widths):
            y = imp.apply("pad", y, pad_width=((0, 0), (0, 0), *widths), value=0.0)
    if len(xs) > 2 and xs[2] is not None:
        bias = imp.symbol(xs[2])
        y = imp.apply("add", y, imp.apply("reshape", bias, shape=(bias.shape[0], *(1,) * n)))
    return y


def _offsets_transposed(imp, x, w, shape, strides, dilations):
    """A transposed convolution of any rank: for each kernel offset, the input's channels times
    that offset's (in, out) weights, placed at the strided positions the offset reaches."""
    if not isinstance(shape[0], int):
        raise imp.error(f"on {x.ndim}-d inputs with a symbolic batch has no kiln form")
    n = x.ndim - 2
    last = imp.apply("transpose", x, perm=(0, *range(2, n + 2), 1))  # channels last
    total = None
    for offsets in itertools.product(*(range(k) for k in w.shape[2:])):
        wo = imp.apply("index", w, spec=(_ALL, _ALL, *(("int", o) for o in offsets)))
        y = imp.apply("matmul", last, wo)
        y = imp.apply("transpose", y, perm=(0, n + 1, *range(1, n + 1)))
        reach = zip(offsets, dilations, x.shape[2:], strides)
        spec = (_ALL, _ALL, *(("slice", o * d, o * d + (m - 1) * s + 1, s) for o, d, m, s in reach))
        y = imp.apply("index_scatter", y, spec=spec, shape=tuple(shape))
        total = y if total is None else imp.apply("add", total, y)
    return total


def pool(name):
    """MaxPool / AveragePool: 1-d and 2-d float pools as kiln's 2-d pool, pads it does not
    take (asymmetric, over half a kernel) applied first (-inf for max, zeros for the mean;
    `count_include_pad=0` divides by the pooled count of real elements); other ranks,
    ceil_mode, dilations, integer inputs and MaxPool's Indices output as `window_pool`."""

    def rule(imp, xs, attrs):
        x = imp.symbol(xs[0])
        is_max = name == "max_pool2d"
        indices = is_max and len(imp.node.output) > 1 and imp.node.output[1]
        general = attrs.get("ceil_mode", 0) or any(d != 1 for d in attrs.get("dilations", ()))
        if indices or general or x.ndim not in (3, 4) or not dt.is_float(x.dtype):
            n = x.ndim - 2
            strides = tuple(attrs.get("strides", (1,) * n))
            dilations = tuple(attrs.get("dilations", (1,) * n))
            pads = _pads_2d(imp, attrs, x, attrs["kernel_shape"], strides, dilations)
            return window_pool(imp, x, attrs, pads, is_max, with_indices=bool(indices))
        return pool2d(imp, xs, attrs)

    @one_d
    def pool2d(imp, xs, attrs):
        x = imp.symbol(xs[0])
        _check_2d(imp, x, attrs)
        kernel, strides = tuple(attrs["kernel_shape"]), tuple(attrs.get("strides", (1, 1)))
        pads = _pads_2d(imp, attrs, x, kernel, strides, (1, 1))
        is_max = name == "max_pool2d"
        fits = pads[:2] == pads[2:] and all(2 * p <= k for p, k in zip(pads, kernel))
        if fits and (is_max or attrs.get("count_include_pad", 0) or not any(pads)):
            return imp.apply(name, x, kernel_size=kernel, stride=strides, padding=pads[:2])
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
