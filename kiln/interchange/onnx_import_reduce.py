"""ONNX import rules for reductions, ArgMax/ArgMin and Softmax/LogSoftmax: rows of the one
table in onnx_import_rules.py."""

from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from .onnx_import import Known, axes_of
from .onnx_import import norm_axis as _axis


def reduce(name, pre=None, post=None):
    """An ONNX Reduce* (axes as attr or input; empty axes reduce all unless
    `noop_with_empty_axes`), with `pre` applied to the input and `post` to the result."""

    def rule(imp, xs, attrs):
        x = imp.symbol(xs[0])
        axes = axes_of(imp, xs, attrs, ndim=x.ndim)
        if not axes:
            if attrs.get("noop_with_empty_axes", 0):
                return x
            axes = list(range(x.ndim))
        keepdims = bool(attrs.get("keepdims", 1))
        if name in _EMPTY and any(x.shape[a] == 0 for a in axes):
            return _empty_reduction(imp, x, axes, keepdims, _EMPTY[name])
        value = imp.apply(name, pre(imp, x) if pre else x, axes=tuple(axes), keepdims=keepdims)
        return same_dtype(imp, post(imp, value) if post else value, x)

    return rule


_EMPTY = {"reduce_max": "min", "reduce_min": "max"}  # over no elements: the other extreme


def _empty_reduction(imp, x, axes, keepdims, extreme):
    """ReduceMax / ReduceMin over an empty set (ONNX: the lowest / highest value of the type;
    -inf / inf for floats), where kiln's reductions refuse."""
    if x.dtype == np.bool_:
        fill = extreme == "max"
    elif dt.is_float(x.dtype):
        fill = np.inf if extreme == "max" else -np.inf
    else:
        info = np.iinfo(x.dtype)
        fill = info.max if extreme == "max" else info.min
    shape = [1 if a in axes else d for a, d in enumerate(x.shape) if keepdims or a not in axes]
    return imp.apply("broadcast_to", Known(np.asarray(fill, x.dtype)), shape=tuple(shape))


def same_dtype(imp, y, x):
    """ONNX keeps the input's type where NumPy's sums widen small integers."""
    return y if y.dtype == x.dtype else imp.apply("cast", y, dtype=x.dtype)


def square(imp, x):
    return imp.apply("mul", x, x)


def log_sum_exp(imp, xs, attrs):
    x = imp.symbol(xs[0])
    axes = axes_of(imp, xs, attrs, ndim=x.ndim) or list(range(x.ndim))
    keepdims = bool(attrs.get("keepdims", 1))
    if any(x.shape[a] == 0 for a in axes):  # log(0)
        return _empty_reduction(imp, x, axes, keepdims, "min")
    m = imp.apply("stop_gradient", imp.apply("reduce_max", x, axes=tuple(axes), keepdims=True))
    total = imp.apply("reduce_sum", imp.apply("exp", imp.apply("sub", x, m)), axes=tuple(axes),
                      keepdims=True)  # fmt: skip
    value = imp.apply("add", imp.apply("log", total), m)
    if not keepdims:
        value = imp.apply("reshape", value, shape=tuple(d for a, d in enumerate(value.shape)
                                                        if a not in axes))  # fmt: skip
    return value


def arg(name):
    def rule(imp, xs, attrs):
        x = imp.symbol(xs[0])
        axis, keepdims = _axis(attrs.get("axis", 0), x.ndim), bool(attrs.get("keepdims", 1))
        last = attrs.get("select_last_index", 0)
        if last:  # the first along the reversed axis, counted from the end
            spec = (("slice", None, None, None),) * axis + (("slice", None, None, -1),)
            x = imp.apply("index", x, spec=spec)
        index = imp.apply("cast", imp.apply(name, x, axis=axis, keepdims=keepdims),
                          dtype=np.dtype(np.int64))  # fmt: skip
        if last:
            size = x.shape[axis]
            if not isinstance(size, int):
                raise imp.error("with select_last_index=1 on a symbolic dim has no kiln form")
            index = imp.apply("sub", imp.scalar(size - 1, np.int64), index)
        return index

    return rule


def softmax(log):
    def rule(imp, xs, attrs):
        x = imp.symbol(xs[0])
        axis = _axis(attrs.get("axis", -1 if imp.opset >= 13 else 1), x.ndim)
        if imp.opset < 13:  # older opsets: softmax over the flattened trailing dims
            raise imp.error("before opset 13 (a softmax over flattened dims) has no kiln form")
        axes = (axis,)
        m = imp.apply("stop_gradient", imp.apply("reduce_max", x, axes=axes, keepdims=True))
        shifted = imp.apply("sub", x, m)
        e = imp.apply("exp", shifted)
        total = imp.apply("reduce_sum", e, axes=axes, keepdims=True)
        if log:
            return imp.apply("sub", shifted, imp.apply("log", total))
        return imp.apply("div", e, total)

    return rule
