"""Reductions over canonical axes (a sorted tuple of non-negative ints), with `keepdims`."""

from __future__ import annotations

import numpy as np

from .. import shapes as sh
from ..errors import IndexOutOfBoundsError, ShapeError
from .core import apply, defop, in_float32, probe_dtype, scalar


def _reduced_shape(x, *, axes, keepdims, needs_identity=False, name=""):
    for a in axes:
        if not 0 <= a < max(len(x), 1):
            raise IndexOutOfBoundsError(
                f"axis {a} is out of bounds for an array of dimension {len(x)}"
            )
        if needs_identity and len(x) and x[a] == 0:
            raise ShapeError(f"zero-size array to reduction operation {name} which has no identity")
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(x))
    return tuple(d for i, d in enumerate(x) if i not in axes)


def keep(ct, x, axes):
    """`ct` (a reduction's cotangent) with the reduced axes back as size-1 dims."""
    shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
    return ct if ct.shape == shape else apply("reshape", ct, shape=shape)


def _spread(ct, x, axes):
    return apply("broadcast_to", keep(ct, x, axes), shape=x.shape)


def _sum_vjp(ct, y, x, *, axes, keepdims):
    return (_spread(ct, x, axes),)


def _mean_vjp(ct, y, x, *, axes, keepdims):
    n = sh.dim_product(x.shape[a] for a in axes)
    if isinstance(n, int):
        return (_spread(ct / max(n, 1), x, axes),)
    ones = apply("broadcast_to", scalar(1, ct), shape=x.shape)
    return (_spread(ct, x, axes) / apply("reduce_sum", ones, axes=axes, keepdims=True),)


def _prod_vjp(ct, y, x, *, axes, keepdims):
    """d prod / d x_i is the product of the others: y / x_i where x_i != 0; where x_i == 0,
    the product of the rest of its slice if it is the slice's only zero, else 0 (finite
    everywhere, as PyTorch's)."""
    zero = apply("equal", x, scalar(0, x))
    one = scalar(1, x)
    nonzero = apply("where", zero, one, x)  # x with its zeros made ones
    rest = apply("reduce_prod", nonzero, axes=axes, keepdims=True)
    zeros = apply("reduce_sum", apply("cast", zero, dtype=x.dtype), axes=axes, keepdims=True)
    at_zero = apply("where", apply("equal", zeros, one), rest, scalar(0, x))
    others = apply("where", zero, at_zero, keep(y, x, axes) / nonzero)
    return (keep(ct, x, axes) * others,)


def _extremum_vjp(ct, y, x, *, axes, keepdims):
    """Max/min: the cotangent goes to the elements equal to the result, shared among ties."""
    hit = apply("cast", apply("equal", x, keep(y, x, axes)), dtype=ct.dtype)
    share = hit / apply("reduce_sum", hit, axes=axes, keepdims=True)
    return (share * keep(ct, x, axes),)


_ACCUMULATING = (np.sum, np.mean, np.prod)
# The ufunc whose `reduce` NumPy's function calls (np.sum is add.reduce...): called directly
# on a NumPy array, the same values, without the function's dispatch.
_UFUNCS = {np.sum: np.add, np.prod: np.multiply, np.max: np.maximum, np.min: np.minimum}
_MEAN_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _mean(x, axes, out, keepdims):
    """np.mean of a float32/float64 array, step for step as NumPy computes it (a sum in the
    array's dtype, then a division by the count as an intp), so the bits are NumPy's.

    >>> x = np.arange(6, dtype=np.float32).reshape(2, 3) / 7
    >>> bool(_mean(x, (1,), None, False).tobytes() == np.mean(x, axis=(1,)).tobytes())
    True
    """
    count = 1
    for a in axes:
        count *= x.shape[a]
    if count == 0:  # NumPy warns: let it
        return np.mean(x, axis=axes, keepdims=keepdims, out=out)
    count = np.intp(count)
    total = np.add.reduce(x, axes, None, out, keepdims)
    if isinstance(total, np.ndarray):
        return np.true_divide(total, count, out=total, casting="unsafe", subok=False)
    return total.dtype.type(total / count)


def _mean_kernel(impl, axes, keepdims, scalar):
    """`_mean` with the axes bound: a float32/float64 mean as NumPy computes it (a sum in the
    dtype, then the division by the count: of a 0-d sum in float64, rounded once)."""

    def kernel(xp, x, out=None):
        count = 1
        if type(x) is np.ndarray:
            for a in axes:
                count *= x.shape[a]
        if count == 0 or type(x) is not np.ndarray:
            return impl(xp, x, out=out, axes=axes, keepdims=keepdims)
        total = np.add.reduce(x, axes, None, out, keepdims)
        if type(total) is np.ndarray:
            return np.true_divide(total, np.intp(count), out=total, casting="unsafe", subok=False)
        return scalar(float(total) / count)  # NumPy's float64 quotient (count < 2**53)

    return kernel


def reduction(name, fn, *, vjp, needs_identity=False, tags=()):
    """A reduction computed by NumPy's (or CuPy's) function of the same name as `fn`."""

    ufunc = _UFUNCS.get(fn)

    def impl(xp, x, out=None, *, axes, keepdims):
        if type(x) is np.ndarray:  # NOTE: NumPy's function less its Python layers (~2 us)
            if ufunc is not None:
                return ufunc.reduce(x, axes, None, out, keepdims)
            if fn is np.mean and x.dtype in _MEAN_DTYPES:
                return _mean(x, axes, out, keepdims)
        return getattr(xp, fn.__name__)(x, axis=axes, keepdims=keepdims, out=out)

    if fn in _ACCUMULATING:  # bfloat16 sums in float32, rounded once (as PyTorch)
        impl = in_float32(impl)

    def prepare(backend, in_shapes, in_dtypes, out_shape, *, axes, keepdims):
        """On NumPy, the ufunc's reduce called directly, without `impl`'s tests of the dtype
        (a planned signature's dtypes are fixed; its dims may not be: a program planned at
        other dims reuses its kernels, so the count is taken from the array); else None."""
        dtype = in_dtypes[0]
        if backend.xp is not np or dtype.kind not in "fiub" or dtype.itemsize < 2:
            return None
        if fn is np.mean:
            if dtype not in _MEAN_DTYPES:
                return None
            return _mean_kernel(impl, axes, keepdims, dtype.type)
        if ufunc is None or (
            fn in _ACCUMULATING and dtype.kind == "f" and dtype not in _MEAN_DTYPES
        ):
            return None  # (float16 and narrower floats: `impl`, as eager mode)
        reduce = ufunc.reduce

        def kernel(xp, x, out=None):
            if type(x) is not np.ndarray:
                return impl(xp, x, out=out, axes=axes, keepdims=keepdims)
            return reduce(x, axes, None, out, keepdims)

        return kernel

    def shape_rule(x, *, axes, keepdims):
        return _reduced_shape(x, axes=axes, keepdims=keepdims, needs_identity=needs_identity,
                              name=fn.__name__)  # fmt: skip

    def dtype_rule(x, *, axes, keepdims):
        return probe_dtype(fn, x)

    def batch(args, batched, *, axes, keepdims):
        return apply(name, args[0], axes=tuple(a + 1 for a in axes), keepdims=keepdims)

    return defop(name, shape_rule, dtype_rule, impl, vjp=vjp, tags={"reduction", *tags},
                 batch=batch, prepare=prepare)  # fmt: skip


reduce_sum = reduction("reduce_sum", np.sum, vjp=_sum_vjp, tags=("vjp_arrays",))
reduce_mean = reduction("reduce_mean", np.mean, vjp=_mean_vjp, tags=("vjp_arrays",))
reduce_prod = reduction("reduce_prod", np.prod, vjp=_prod_vjp, tags=("autocast_fp32",))
reduce_max = reduction("reduce_max", np.max, vjp=_extremum_vjp, needs_identity=True)
reduce_min = reduction("reduce_min", np.min, vjp=_extremum_vjp, needs_identity=True)


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

    def batch(args, batched, *, axis, keepdims):
        (x,) = args
        if axis is not None:
            return apply(name, x, axis=axis + 1, keepdims=keepdims)
        flat = apply("reshape", x, shape=(x.shape[0], sh.size(x.shape[1:])))
        found = apply(name, flat, axis=1, keepdims=False)
        shape = (x.shape[0], *(1,) * (x.ndim - 1)) if keepdims else (x.shape[0],)
        return apply("reshape", found, shape=shape)

    return defop(name, shape_rule, lambda x, **_: np.dtype(np.int64), impl, tags={"reduction"},
                 batch=batch)  # fmt: skip


argmax = arg_reduction("argmax", np.argmax)
argmin = arg_reduction("argmin", np.argmin)
