"""ONNX import rules for normalization layers and the activations ONNX has as ops (kiln builds
them from primitives): rows of the one table in onnx_import_rules.py."""

from __future__ import annotations

import math

import numpy as np

from .onnx_import import Known


def _scalar(imp, value, like):
    return imp.scalar(value, like.dtype)


def _normalize(imp, xs, attrs, rms):
    """LayerNormalization / RMSNormalization over the axes from `axis` on, computed in float32
    for float16 inputs (ONNX's default stash_type); outputs Y and, for layer norm, the mean and
    1 / std."""
    x = imp.symbol(xs[0])
    axis = attrs.get("axis", -1)
    axes = tuple(range(axis + x.ndim if axis < 0 else axis, x.ndim))
    eps = attrs.get("epsilon", 1e-5)
    wide = x.dtype == np.float16 and attrs.get("stash_type", 1) == 1
    v = imp.apply("cast", x, dtype=np.dtype(np.float32)) if wide else x
    if not rms:
        mean = imp.apply("reduce_mean", v, axes=axes, keepdims=True)
        v = imp.apply("sub", v, mean)
    square = imp.apply("reduce_mean", imp.apply("mul", v, v), axes=axes, keepdims=True)
    inv = imp.apply("rsqrt", imp.apply("add", square, _scalar(imp, eps, square)))
    y = imp.apply("mul", v, inv)
    if wide:
        y = imp.apply("cast", y, dtype=x.dtype)
    y = imp.apply("mul", y, xs[1])
    if len(xs) > 2 and xs[2] is not None:
        y = imp.apply("add", y, xs[2])
    return [y] if rms else [y, mean, inv]


def layer_norm(imp, xs, attrs):
    return _normalize(imp, xs, attrs, rms=False)


def rms_norm(imp, xs, attrs):
    return _normalize(imp, xs, attrs, rms=True)


def batch_norm(imp, xs, attrs):
    """BatchNormalization per channel (axis 1): at inference with the running mean and
    variance; in training mode with the batch's (biased variance), giving also the running mean
    and variance updated with `momentum`."""
    x = imp.symbol(xs[0])
    scale, bias, mean, var = (imp.symbol(v) for v in xs[1:5])
    shape = (x.shape[1], *(1 for _ in x.shape[2:]))
    scale, bias, mean, var = (
        imp.apply("reshape", v, shape=shape) for v in (scale, bias, mean, var)
    )
    running = None
    if attrs.get("training_mode", 0):
        axes = (0, *range(2, x.ndim))
        batch_mean = imp.apply("reduce_mean", x, axes=axes, keepdims=True)
        centered = imp.apply("sub", x, batch_mean)
        batch_var = imp.apply("reduce_mean", imp.apply("mul", centered, centered), axes=axes,
                              keepdims=True)  # fmt: skip
        m = attrs.get("momentum", 0.9)
        running = [
            imp.apply("reshape", imp.apply("add", imp.apply("mul", old, _scalar(imp, m, old)),
                                           imp.apply("mul", new, _scalar(imp, 1 - m, new))),
                      shape=(x.shape[1],))
            for old, new in ((mean, batch_mean), (var, batch_var))
        ]  # fmt: skip
        mean, var = batch_mean, batch_var
    eps = _scalar(imp, attrs.get("epsilon", 1e-5), var)
    inv = imp.apply("rsqrt", imp.apply("add", var, eps))
    y = imp.apply("add", imp.apply("mul", imp.apply("mul", imp.apply("sub", x, mean), inv),
                                   scale), bias)  # fmt: skip
    return y if running is None else [y, *running]


def dropout(imp, xs, attrs):
    """Dropout at inference: the input, and an all-true mask."""
    training = xs[2] if len(xs) > 2 else None
    if training is not None and bool(imp.known(training, "training_mode").reshape(-1)[0]):
        raise imp.error("in training mode has no kiln form (its random stream is ONNX's)")
    x = imp.symbol(xs[0])
    mask = imp.apply("equal", x, x)
    mask = imp.apply("logical_or", mask, imp.apply("logical_not", mask))
    return [x, mask]


def trilu(imp, xs, attrs):
    """The upper (j - i >= k) or lower (j - i <= k) triangle of the last two dims."""
    x = imp.symbol(xs[0])
    k = int(imp.known(xs[1], "k").reshape(-1)[0]) if len(xs) > 1 and xs[1] is not None else 0
    rows, cols = x.shape[-2:]
    if not (isinstance(rows, int) and isinstance(cols, int)):
        raise imp.error("on symbolic matrix sizes has no kiln form")
    offset = np.arange(cols)[None, :] - np.arange(rows)[:, None]
    mask = offset >= k if attrs.get("upper", 1) else offset <= k
    zero = _scalar(imp, 0, x)
    return imp.apply("where", Known(mask), x, zero)


def _where_negative(imp, x, negative):
    return imp.apply("where", imp.apply("less", x, _scalar(imp, 0, x)), negative, x)


def prelu(imp, xs, attrs):
    x = imp.symbol(xs[0])
    return _where_negative(imp, x, imp.apply("mul", x, xs[1]))


def selu(imp, xs, attrs):
    x = imp.symbol(xs[0])
    alpha = attrs.get("alpha", 1.67326319217681884765625)
    gamma = attrs.get("gamma", 1.05070102214813232421875)
    negative = imp.apply("mul", _scalar(imp, alpha, x), imp.apply("expm1", x))
    y = imp.apply("where", imp.apply("greater", x, _scalar(imp, 0, x)), x, negative)
    return imp.apply("mul", y, _scalar(imp, gamma, x))


def celu(imp, xs, attrs):
    x = imp.symbol(xs[0])
    alpha = _scalar(imp, attrs.get("alpha", 1.0), x)
    curve = imp.apply("mul", alpha, imp.apply("expm1", imp.apply("div", x, alpha)))
    zero = _scalar(imp, 0, x)
    return imp.apply("add", imp.apply("maximum", x, zero), imp.apply("minimum", curve, zero))


def thresholded_relu(imp, xs, attrs):
    x = imp.symbol(xs[0])
    above = imp.apply("greater", x, _scalar(imp, attrs.get("alpha", 1.0), x))
    return imp.apply("where", above, x, _scalar(imp, 0, x))


def hard_swish(imp, xs, attrs):
    x = imp.symbol(xs[0])
    line = imp.apply("add", imp.apply("div", x, _scalar(imp, 6, x)), _scalar(imp, 0.5, x))
    gate = imp.apply("clip", line, _scalar(imp, 0, x), _scalar(imp, 1, x))
    return imp.apply("mul", x, gate)


def mish(imp, xs, attrs):
    x = imp.symbol(xs[0])
    return imp.apply("mul", x, imp.apply("tanh", imp.apply("softplus", x, beta=1.0)))


def gelu(imp, xs, attrs):
    x = imp.symbol(xs[0])
    approximate = attrs.get("approximate", "none")
    approximate = approximate.decode() if isinstance(approximate, bytes) else approximate
    half = _scalar(imp, 0.5, x)
    if approximate == "tanh":
        cube = imp.apply("mul", imp.apply("mul", x, x), x)
        inner = imp.apply("add", x, imp.apply("mul", cube, _scalar(imp, 0.044715, x)))
        inner = imp.apply("mul", inner, _scalar(imp, math.sqrt(2 / math.pi), x))
        gate = imp.apply("tanh", inner)
    else:
        gate = imp.apply("erf", imp.apply("mul", x, _scalar(imp, 1 / math.sqrt(2), x)))
    one = _scalar(imp, 1, x)
    return imp.apply("mul", imp.apply("mul", x, half), imp.apply("add", gate, one))


RULES = {
    "LayerNormalization": layer_norm,
    "RMSNormalization": rms_norm,
    "BatchNormalization": batch_norm,
    "Dropout": dropout,
    "Trilu": trilu,
    "PRelu": prelu,
    "Selu": selu,
    "Celu": celu,
    "ThresholdedRelu": thresholded_relu,
    "HardSwish": hard_swish,
    "Mish": mish,
    "Gelu": gelu,
}
