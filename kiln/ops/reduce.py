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
        if needs_identity and len(x) and x[a] == 0:  # PyTorch: IndexError (a RuntimeError too)
            raise IndexOutOfBoundsError(
                f"{name.removeprefix('reduce_')}(): Expected reduction dim {a} to have non-zero "
                f"size (a zero-size array to reduction operation {name} which has no identity)"
            )
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


_ALL = ("slice", None, None, None)


def _exclusive_cumprod(x, axis):
    """prod_{j < i} x_j along `axis` (1 at the first), in the order the cumprod takes them."""
    width = tuple((1, 0) if a == axis else (0, 0) for a in range(len(x.shape)))
    padded = apply("pad", x, pad_width=width, value=1)
    spec = (_ALL,) * axis + (("slice", None, -1, None),)
    return apply("index", apply("cumprod", padded, axis=axis), spec=spec)


def _product_of_others(x, axes):
    """prod_{j != i} x_j over the slice along `axes`, as the product of the elements before
    i and of those after it (so that a zero gives 0 or, beside an inf or NaN, NaN, by where
    it stands, as PyTorch's)."""
    rank = len(x.shape)
    kept = tuple(a for a in range(rank) if a not in axes)
    perm = kept + tuple(axes)
    moved = x if perm == tuple(range(rank)) else apply("transpose", x, perm=perm)
    if len(axes) > 1:
        n = sh.dim_product(x.shape[a] for a in axes)
        moved_shape = moved.shape
        moved = apply("reshape", moved, shape=(*moved_shape[: len(kept)], n))
    last = len(moved.shape) - 1
    flip = (_ALL,) * last + (("slice", None, None, -1),)
    after = apply("index", _exclusive_cumprod(apply("index", moved, spec=flip), last), spec=flip)
    others = _exclusive_cumprod(moved, last) * after
    if len(axes) > 1:
        others = apply("reshape", others, shape=moved_shape)
    if perm == tuple(range(rank)):
        return others
    return apply("transpose", others, perm=tuple(int(i) for i in np.argsort(perm)))


def _prod_vjp(ct, y, x, *, axes, keepdims):
    """d prod / d x_i is the product of the others, as PyTorch's: y / x_i where x has no
    zero; where it has one, the products of the elements before and after x_i (along one
    axis: everywhere, each slice; of everything: 0 where x has two zeros or more)."""
    if not axes:
        return (ct,)
    zeros = apply("reduce_sum", apply("cast", apply("equal", x, scalar(0, x)), dtype=np.int64),
                  axes=tuple(range(len(x.shape))), keepdims=False)  # fmt: skip
    plain = keep(y, x, axes) / x
    others = apply("where", apply("equal", zeros, scalar(0, zeros)), plain,
                   _product_of_others(x, axes))  # fmt: skip
    if len(axes) == len(x.shape):
        others = apply("where", apply("greater", zeros, scalar(1, zeros)), scalar(0, x), others)
    return (keep(ct, x, axes) * others,)


def _extremum_vjp(ct, y, x, *, axes, keepdims, nan_ties=False):
    """Max/min: the cotangent goes to the elements equal to the result, shared among ties
    (a NaN result: NaN throughout, as PyTorch's amax). `nan_ties` (PyTorch's max() and min()
    of everything): a NaN result ties with the NaN elements, which share the cotangent."""
    y = keep(y, x, axes)
    hit = apply("equal", x, y)
    if nan_ties:
        hit = apply("logical_or", hit, apply("logical_and", apply("isnan", x), apply("isnan", y)))
    hit = apply("cast", hit, dtype=ct.dtype)
    share = hit / apply("reduce_sum", hit, axes=axes, keepdims=True)
    return (share * keep(ct, x, axes),)


# Sums PyTorch accumulates in float32 for float16 and bfloat16 (a product it multiplies step
# by step in the dtype, as NumPy's multiply.reduce does).
_ACCUMULATING = (np.sum, np.mean)
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


def _stepwise_prod(xp, x, out, axes, keepdims):
    """The float16 product over `axes` rounded at each step, in index order (PyTorch's):
    NumPy multiplies a contiguous last axis in float32, the leading axis of a 2-d array row
    by row in float16."""
    rest = tuple(a for a in range(x.ndim) if a not in axes)
    rows = xp.transpose(x, (*axes, *rest)).reshape(-1, *(x.shape[a] for a in rest), 1)
    # rows outermost, each at least 2 wide (NumPy multiplies a 1-wide column, as a 1-d
    # product, in float32): NumPy multiplies them in float16
    rows = xp.concatenate([rows, xp.ones_like(rows)], axis=-1)
    result = np.multiply.reduce(rows, axis=0) if xp is np else xp.prod(rows, axis=0)
    result = result[..., 0]
    shape = tuple(1 if a in axes else n for a, n in enumerate(x.shape)) if keepdims else None
    result = xp.asarray(result).reshape(shape if keepdims else result.shape)
    if out is None:
        return result
    out[...] = result
    return out


def reduction(name, fn, *, vjp, needs_identity=False, tags=(), nan_ties=False):
    """A reduction computed by NumPy's (or CuPy's) function of the same name as `fn`.
    `nan_ties`: the op takes a `nan_ties` attr (read by its gradient alone)."""

    ufunc = _UFUNCS.get(fn)

    def impl(xp, x, out=None, *, axes, keepdims):
        if fn is np.prod and x.dtype == np.float16 and axes:
            return _stepwise_prod(xp, x, out, axes, keepdims)
        if type(x) is np.ndarray:  # NOTE: NumPy's function less its Python layers (~2 us)
            if ufunc is not None:
                return ufunc.reduce(x, axes, None, out, keepdims)
            if fn is np.mean and x.dtype in _MEAN_DTYPES:
                return _mean(x, axes, out, keepdims)
        return getattr(xp, fn.__name__)(x, axis=axes, keepdims=keepdims, out=out)

    if fn in _ACCUMULATING:  # float16 and bfloat16 sums in float32, rounded once (PyTorch's)
        impl = in_float32(impl, half=True)

    def prepare(backend, in_shapes, in_dtypes, out_shape, *, axes, keepdims, nan_ties=False):
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
            fn in (*_ACCUMULATING, np.prod) and dtype.kind == "f" and dtype not in _MEAN_DTYPES
        ):
            return None  # (float16 and narrower floats: `impl`, as eager mode)
        reduce = ufunc.reduce

        def kernel(xp, x, out=None):
            if type(x) is not np.ndarray:
                return impl(xp, x, out=out, axes=axes, keepdims=keepdims)
            return reduce(x, axes, None, out, keepdims)

        return kernel

    def shape_rule(x, *, axes, keepdims, nan_ties=False):
        return _reduced_shape(x, axes=axes, keepdims=keepdims, needs_identity=needs_identity,
                              name=fn.__name__)  # fmt: skip

    def dtype_rule(x, *, axes, keepdims, nan_ties=False):
        return probe_dtype(fn, x)

    def batch(args, batched, *, axes, keepdims, **flags):
        return apply(name, args[0], axes=tuple(a + 1 for a in axes), keepdims=keepdims, **flags)

    if nan_ties:
        plain = impl

        def impl(xp, x, out=None, *, axes, keepdims, nan_ties=False):
            return plain(xp, x, out, axes=axes, keepdims=keepdims)

    return defop(name, shape_rule, dtype_rule, impl, vjp=vjp, tags={"reduction", *tags},
                 batch=batch, prepare=prepare)  # fmt: skip


reduce_sum = reduction("reduce_sum", np.sum, vjp=_sum_vjp, tags=("vjp_arrays", "complex_linear"))
reduce_mean = reduction(
    "reduce_mean", np.mean, vjp=_mean_vjp, tags=("vjp_arrays", "complex_linear")
)
reduce_prod = reduction("reduce_prod", np.prod, vjp=_prod_vjp, tags=("autocast_fp32", "complex"))
reduce_max = reduction("reduce_max", np.max, vjp=_extremum_vjp, needs_identity=True, nan_ties=True)
reduce_min = reduction("reduce_min", np.min, vjp=_extremum_vjp, needs_identity=True, nan_ties=True)


# -- a selected value whose cotangent goes evenly to its ties -----------------------------------


def _tie_hits(x, y, axes):
    """Where x's elements equal `y` (kept over `axes`), NaN matching NaN."""
    yk = keep(y, x, axes)
    both_nan = apply("logical_and", apply("isnan", x), apply("isnan", yk))
    return apply("logical_or", apply("equal", x, yk), both_nan)


def _share_ties_vjp(ct, out, x, y, *, axes):
    hit = apply("cast", _tie_hits(x, y, axes), dtype=ct.dtype)
    share = hit / apply("reduce_sum", hit, axes=axes, keepdims=True)
    return (share * keep(ct, x, axes), None)


def _share_ties_shape(x, y, *, axes):
    if tuple(y) != _reduced_shape(x, axes=axes, keepdims=False):
        raise ShapeError(f"share_ties: value of shape {y} is not {x} reduced over {axes}")
    return tuple(y)


def _share_ties_impl(xp, x, y, out=None, *, axes):
    if out is None:
        return xp.array(y, copy=True)
    out[...] = y
    return out


def _share_ties_batch(args, batched, *, axes):
    if not all(batched):
        return None
    return apply("share_ties", *args, axes=tuple(a + 1 for a in axes))


# `share_ties(x, y)` is y, a value chosen among x's elements over `axes` (by a sort: the
# median); its cotangent goes to the elements of x equal to it, shared evenly among them (NaN
# to the NaNs), as PyTorch's gradient of `median()`/`nanmedian()` of all elements (its
# evenly_distribute_backward). y itself gets none: pass it through stop_gradient.
share_ties = defop(
    "share_ties", _share_ties_shape, lambda x, y, *, axes: y, _share_ties_impl,
    vjp=_share_ties_vjp, batch=_share_ties_batch,
)  # fmt: skip


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
        if sh.size(x) == 0 and (axis is None or x[axis] == 0):  # PyTorch: IndexError
            raise IndexOutOfBoundsError(
                f"{fn.__name__}(): Expected reduction dim to be specified for input.numel() == 0"
                if axis is None
                else f"{fn.__name__}(): Expected reduction dim {axis} to have non-zero size"
            )
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


# -- the sum back to an operand's shape of sizes only a run knows ----------------------------


def _sum_to_shape(x, *, shape):
    lead = len(x) - len(shape)
    if lead < 0:
        raise ShapeError(
            f"sum_to: {sh.format_shape(x)} has fewer dims than {sh.format_shape(shape)}"
        )
    for d, t in zip(x[lead:], shape):
        if t != 1 and d != t and isinstance(d, int) and isinstance(t, int):
            raise ShapeError(f"sum_to: {sh.format_shape(x)} does not broadcast from "
                             f"{sh.format_shape(shape)}")  # fmt: skip
    return tuple(shape)


def _sum_to(xp, x, out=None, *, shape):
    lead = x.ndim - len(shape)
    stretched = (lead + i for i, t in enumerate(shape) if t == 1 and x.shape[lead + i] != 1)
    axes = (*range(lead), *stretched)
    total = xp.sum(x, axis=axes, keepdims=True, dtype=x.dtype) if axes else x.copy()
    if out is None:
        return total.reshape(shape)
    out[...] = total.reshape(shape)
    return out


# Autodiff's sum of a cotangent back to an operand's shape where a dim of either is a length
# the run binds (kiln/passes/differentiate.py `sum_to_shape`): whether the operand was
# broadcast there (its size 1) is known only then, so the kernel sums the leading dims and
# those where `shape` (its attr, evaluated by the run) is 1 and `x` is not.
def _sum_to_jvp(tangents, y, x, *, shape):
    (t,) = tangents
    return None if t is None else apply("sum_to", t, shape=shape)


sum_to = defop(
    "sum_to", _sum_to_shape, lambda x, **_: x, in_float32(_sum_to, half=True),
    vjp=lambda ct, y, x, *, shape: (apply("broadcast_to", ct, shape=x.shape),),
    jvp=_sum_to_jvp, tags={"complex_linear"},
)  # fmt: skip
