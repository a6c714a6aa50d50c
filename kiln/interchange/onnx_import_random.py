"""ONNX import of the random ops: RandomNormal, RandomUniform, their `Like` forms and
Bernoulli, as kiln's random ops. ONNX fixes no generator, so the values are kiln's stream: a
node with a `seed` draws from kiln's stream for that seed, one without from the next seed of
`kn.manual_seed`'s sequence; every run draws fresh values, as ONNX's runtimes do without a
seed."""

from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from ..ops.random import next_seed


def _seed(attrs) -> int:
    return int(attrs["seed"]) & (2**63 - 1) if "seed" in attrs else next_seed()


def _np_dtype(code, default):
    if code is None:
        return np.dtype(default)
    return np.dtype(__import__("onnx").helper.tensor_dtype_to_np_dtype(code))


def _shape_of(value):
    return tuple(value.shape) if not hasattr(value, "array") else tuple(value.array.shape)


def _dtype_of(value):
    return value.dtype if not hasattr(value, "array") else value.array.dtype


def _draw(kind, like):
    """RandomNormal/RandomUniform (`like`: their `Like` form, shape and default dtype from the
    input)."""

    def rule(imp, xs, attrs):
        if like:
            shape, dtype = _shape_of(xs[0]), _np_dtype(attrs.get("dtype"), _dtype_of(xs[0]))
        else:
            shape = tuple(int(d) for d in attrs["shape"])
            dtype = _np_dtype(attrs.get("dtype"), np.float32)
        if not dt.is_float(dtype):
            raise imp.error(f"of {dtype} has no kiln form (kiln draws floats)")
        if kind == "normal":
            params = {"mean": float(attrs.get("mean", 0.0)), "std": float(attrs.get("scale", 1.0))}
        else:
            params = {"low": float(attrs.get("low", 0.0)), "high": float(attrs.get("high", 1.0))}
        return imp.apply(f"random_{kind}", shape=shape, dtype=dtype, seed=_seed(attrs), **params)

    return rule


def _bernoulli(imp, xs, attrs):
    """Ones where a uniform draw in float64 lies below the input's probability."""
    p = imp.symbol(xs[0])
    dtype = _np_dtype(attrs.get("dtype"), p.dtype)
    u = imp.apply("random_uniform", shape=tuple(p.shape), dtype=dt.float64, seed=_seed(attrs),
                  low=0.0, high=1.0)  # fmt: skip
    below = imp.apply("less", u, imp.apply("cast", p, dtype=dt.float64))
    return imp.apply("cast", below, dtype=dtype)


RULES = {
    "RandomNormal": _draw("normal", like=False),
    "RandomUniform": _draw("uniform", like=False),
    "RandomNormalLike": _draw("normal", like=True),
    "RandomUniformLike": _draw("uniform", like=True),
    "Bernoulli": _bernoulli,
}
