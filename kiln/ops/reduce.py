"""Reductions over canonical axes (a sorted tuple of non-negative ints), with `keepdims`."""

from __future__ import annotations

import numpy as np

from .. import shapes as sh
from ..errors import ShapeError
from .core import defop, probe_dtype


def _reduced_shape(x, *, axes, keepdims, needs_identity=False, name=""):
    for a in axes:
        if not 0 <= a < max(len(x), 1):
            raise ShapeError(f"axis {a} is out of bounds for an array of dimension {len(x)}")
        if needs_identity and len(x) and x[a] == 0:
            raise ShapeError(f"zero-size array to reduction operation {name} which has no identity")
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(x))
    return tuple(d for i, d in enumerate(x) if i not in axes)


def reduction(name, fn, *, needs_identity=False):
    """A reduction computed by NumPy's (or CuPy's) function of the same name as `fn`."""

    def impl(xp, x, out=None, *, axes, keepdims):
        return getattr(xp, fn.__name__)(x, axis=axes, keepdims=keepdims, out=out)

    def shape_rule(x, *, axes, keepdims):
        return _reduced_shape(x, axes=axes, keepdims=keepdims, needs_identity=needs_identity,
                              name=fn.__name__)  # fmt: skip

    def dtype_rule(x, *, axes, keepdims):
        return probe_dtype(fn, x)

    return defop(name, shape_rule, dtype_rule, impl, tags={"reduction"})


reduce_sum = reduction("reduce_sum", np.sum)
reduce_mean = reduction("reduce_mean", np.mean)
reduce_prod = reduction("reduce_prod", np.prod)
reduce_max = reduction("reduce_max", np.max, needs_identity=True)
reduce_min = reduction("reduce_min", np.min, needs_identity=True)


def arg_reduction(name, fn):
    """argmax/argmin along one axis (`axis=None`: over the flattened array)."""

    def impl(xp, x, out=None, *, axis, keepdims):
        if axis is None:
            r = getattr(xp, fn.__name__)(x.reshape(-1))
            r = r.reshape((1,) * x.ndim) if keepdims else r
            if out is None:
                return xp.asarray(r)
            out[...] = r
            return out
        return getattr(xp, fn.__name__)(x, axis=axis, keepdims=keepdims, out=out)

    def shape_rule(x, *, axis, keepdims):
        if sh.size(x) == 0 and (axis is None or x[axis] == 0):
            raise ShapeError(f"attempt to get {fn.__name__} of an empty sequence")
        axes = tuple(range(len(x))) if axis is None else (axis,)
        return _reduced_shape(x, axes=axes, keepdims=keepdims)

    return defop(name, shape_rule, lambda x, **_: np.dtype(np.int64), impl, tags={"reduction"})


argmax = arg_reduction("argmax", np.argmax)
argmin = arg_reduction("argmin", np.argmin)
