"""PyTorch's scatter along one axis: `scatter(x, idx, src)` is `x` with `src` written (or
reduced: summed, multiplied, averaged, maxed, mined) at `idx` along `axis`, elsewhere the
coordinates of `idx` itself, which may be smaller than `x` and `src` in every dim. And
advanced indexing with several index arrays: `advanced_index` (PyTorch's `index`) and its
transpose `index_put` (PyTorch's `index_put`, and item assignment computed out of place)."""

from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from .. import shapes as sh
from ..errors import DTypeError, DTypeMismatchError, IndexOutOfBoundsError, ShapeError
from .core import apply, batch_size, constant_like, defop, scalar, unbatched_to
from .movement import _copy_into, check_indices, index_tuple
from .movement import _index_shape as index_shape

# "add" is "sum" accumulated step by step in the input's dtype (PyTorch's index_add of a 1-D
# input), where "sum", "prod" and "mean" of float16 and bfloat16 accumulate in float32.
REDUCTIONS = ("none", "sum", "add", "prod", "mean", "amax", "amin")
_UFUNCS = {"sum": "add", "add": "add", "mean": "add", "prod": "multiply", "amax": "maximum"}
_UFUNCS["amin"] = "minimum"


def _fits(small, big, why):
    """A dim of the index against a dim it must not exceed (equal when symbolic)."""
    if isinstance(small, int) and isinstance(big, int):
        if small > big:
            raise ShapeError(why)
    elif small != big:
        sh.require_equal(small, big, why)


def check_index_shape(op, x, idx, axis, src=None):
    """PyTorch's rule: the index has x's number of dims and no dim larger than src's, nor
    than x's off `axis`."""
    if len(idx) != len(x) or (src is not None and len(src) != len(x)):
        others = "" if src is None else f", src {sh.format_shape(src)}"
        raise ShapeError(
            f"{op}: index {sh.format_shape(idx)} must have the same number of dims as the "
            f"input {sh.format_shape(x)}{others}"
        )
    if not 0 <= axis < len(x):
        raise ShapeError(f"{op}: dim {axis} is out of bounds for a tensor of dimension {len(x)}")
    for d, n in enumerate(idx):
        why = f"{op}: index {sh.format_shape(idx)} is larger than"
        if src is not None:
            _fits(n, src[d], f"{why} src {sh.format_shape(src)} in dim {d}")
        if d != axis:
            _fits(n, x[d], f"{why} the input {sh.format_shape(x)} in dim {d}")


def _scatter_shape(x, idx, src, *, axis, reduce, include_self):
    if reduce not in REDUCTIONS:
        raise ShapeError(f"scatter: reduce must be one of {REDUCTIONS}, got {reduce!r}")
    check_index_shape("scatter", x, idx, axis, src)
    return tuple(x)


def _scatter_dtype(x, idx, src, **_):
    # PyTorch raises RuntimeError for both: DTypeMismatchError is a DTypeError and one
    if not dt.is_int(idx):
        raise DTypeMismatchError(f"scatter: index must be an integer tensor, got {idx}")
    if src != x:
        raise DTypeMismatchError(f"scatter: expected the input's dtype {x} for src, got {src}")
    return x


def grid(xp, idx, axis):
    """The full index tuple of `idx` along `axis`: coordinates elsewhere."""
    shape = idx.shape
    out = []
    for d, n in enumerate(shape):
        if d == axis:
            out.append(idx)
        else:
            view = [1] * len(shape)
            view[d] = n
            out.append(xp.arange(n).reshape(view))
    return tuple(out)


def _identity(reduce, dtype):
    if reduce in ("sum", "add", "mean"):
        return 0
    if reduce == "prod":
        return 1
    if dt.is_float(dtype):
        return -np.inf if reduce == "amax" else np.inf
    info = np.iinfo(dtype) if dtype.kind in "iu" else None
    if info is None:
        return reduce == "amin"  # bool
    return info.min if reduce == "amax" else info.max


def _ufunc_at(xp, name, out, index, values):
    """`out[index] (op)= values`, accumulating repeated indices."""
    ufunc = getattr(xp, name)
    if hasattr(ufunc, "at"):
        ufunc.at(out, index, values)
        return
    import cupyx  # CuPy spells some of them cupyx.scatter_*

    fn = {"add": "scatter_add", "maximum": "scatter_max", "minimum": "scatter_min"}.get(name)
    if fn is not None:
        getattr(cupyx, fn)(out, index, values)
        return
    host = xp.asnumpy(out)  # no multiply.at on the device: on the host
    getattr(np, name).at(host, tuple(xp.asnumpy(i) for i in index), xp.asnumpy(values))
    out[...] = xp.asarray(host)


_HALF = (np.dtype(np.float16), dt.bfloat16)


def _scatter(xp, x, idx, src, out=None, *, axis, reduce, include_self):
    if x.dtype in _HALF and reduce in ("sum", "prod", "mean"):
        # PyTorch accumulates half-precision sums and products in float32 and rounds each
        # result once; a mean divides that rounded sum by the count in the input's dtype
        how = "sum" if reduce == "mean" else reduce
        wide = _scatter(xp, x.astype(np.float32), idx, src.astype(np.float32), axis=axis,
                        reduce=how, include_self=include_self)  # fmt: skip
        result = wide.astype(x.dtype)
        if reduce == "mean":
            counts = xp.zeros(x.shape, np.float32)
            _ufunc_at(xp, "add", counts, grid(xp, idx, axis), 1)
            counts = xp.where(counts > 0, counts + int(include_self), 1).astype(x.dtype)
            result = (result.astype(np.float32) / counts.astype(np.float32)).astype(x.dtype)
        if out is None:
            return result
        out[...] = result
        return out
    check_indices(idx, x.shape[axis], op="scatter", dim=axis)
    if out is None:
        out = x.copy()
    else:
        out[...] = x
    if idx.size == 0:
        return out
    index = grid(xp, idx, axis)
    values = src[tuple(slice(0, n) for n in idx.shape)]
    if reduce == "none":
        out[index] = values
        return out
    if not include_self:
        out[index] = _identity(reduce, x.dtype)
    _ufunc_at(xp, _UFUNCS[reduce], out, index, values)
    if reduce == "mean":
        counts = xp.zeros(out.shape, np.int64)
        _ufunc_at(xp, "add", counts, index, 1)
        counts = xp.where(counts > 0, counts + int(include_self), 1)
        if dt.is_float(x.dtype) or dt.is_complex(x.dtype):
            out /= counts
        else:  # PyTorch's integer mean rounds down, its count in the dtype (uint8: wraps)
            counts = counts.astype(out.dtype)
            out[...] = out // xp.where(counts == 0, 1, counts).astype(out.dtype)
    return out


def _full(value, like, shape):
    return apply("broadcast_to", scalar(value, like), shape=tuple(shape))


def _taken(v, idx, axis):
    """`v` read at idx along `axis` (within idx's extent elsewhere): PyTorch's gather."""
    return apply("take_along_axis", _corner(v, idx.shape, axis), idx, axis=axis)


def _corner(v, shape, axis=None):
    """`v` sliced to `shape` in every dim but `axis`."""
    if all(d == axis or n == m for d, (n, m) in enumerate(zip(shape, v.shape))):
        return v
    spec = tuple(("slice", None, None, None) if d == axis else ("slice", 0, n, None)
                 for d, n in enumerate(shape))  # fmt: skip
    return apply("index", v, spec=spec)


def _padded(v, shape):
    """`v` zero-padded at the end of each dim to `shape` (src's, from idx's extent)."""
    if all(n == s for n, s in zip(v.shape, shape)):
        return v
    if not all(isinstance(d, int) for d in (*v.shape, *shape)):
        raise ShapeError("the gradient of scatter needs static sizes where index and src differ")
    return apply("pad", v, pad_width=tuple((0, s - n) for n, s in zip(v.shape, shape)), value=0.0)


def _scatter_vjp(ct, y, x, idx, src, *, axis, reduce, include_self):
    def scatter(base, values, how):
        return apply("scatter", base, idx, values, axis=axis, reduce=how, include_self=True)

    if reduce == "prod":
        return _prod_vjp(ct, y, x, idx, src, axis, include_self, scatter)
    if reduce in ("sum", "add") and include_self:
        return ct, None, _padded(_taken(ct, idx, axis), src.shape)
    # how many src values land on each element of x (0 where none does), counted in ct's
    # real dtype (a complex count has no order to compare)
    real = dt.to_real(ct.dtype) if dt.is_complex(ct.dtype) else ct.dtype
    like = constant_like(np.zeros((), real), ct)
    hits = scatter(_full(0, like, x.shape), _full(1, like, idx.shape), "sum")
    hit = apply("greater", hits, scalar(0, hits))
    zero = scalar(0, ct)
    if reduce in ("none", "sum", "add"):
        # x's own value is gone where something was written: no gradient reaches it there
        return apply("where", hit, zero, ct), None, _padded(_taken(ct, idx, axis), src.shape)
    if reduce == "mean":
        share = ct / apply("where", hit, hits + int(include_self), scalar(1, hits))
        own = apply("where", hit, share if include_self else zero, ct)
        return own, None, _padded(_taken(share, idx, axis), src.shape)
    # amax / amin, as PyTorch: the cotangent is shared among all the values equal to the result.
    # Without include_self, x's own value is not among them where src reached it (the result
    # does not read it); PyTorch's formula counts it there, its share reaching nothing, so a
    # src value tied with it gets part of the derivative: kiln gives it the derivative.
    mine = apply("equal", x, y)
    if not include_self:
        mine = apply("logical_and", mine, apply("logical_not", hit))
    mine = apply("cast", mine, dtype=ct.dtype)
    theirs = apply("cast", apply("equal", _corner(src, idx.shape), _taken(y, idx, axis)),
                   dtype=ct.dtype)  # fmt: skip
    count = scatter(mine, theirs, "sum")
    share = ct / apply("where", apply("greater", count, zero), count, scalar(1, count))
    return share * mine, None, _padded(_taken(share, idx, axis) * theirs, src.shape)


def _prod_vjp(ct, y, x, idx, src, axis, include_self, scatter):
    """d out / d v is the product of the other values landing on its element, computed with
    the zeros taken as ones where dividing by them would lose it (as PyTorch's)."""

    def product(base, values):
        return apply("scatter", base, idx, values, axis=axis, reduce="prod",
                     include_self=include_self)  # fmt: skip

    one, zero = scalar(1, x), scalar(0, ct)
    x_zero = apply("equal", x, scalar(0, x))
    safe_x = apply("where", x_zero, one, x)
    ct_x = ct * product(safe_x, src) / safe_x
    if not include_self:
        hits = scatter(_full(0, ct, x.shape), _full(1, ct, idx.shape), "sum")
        ct_x = apply("where", apply("greater", hits, scalar(0, hits)), zero, ct_x)
    s = _corner(src, idx.shape)
    s_zero = apply("equal", s, scalar(0, s))
    zeros_at = scatter(_full(0, ct, x.shape), apply("cast", s_zero, dtype=ct.dtype), "sum")
    single = apply("logical_and", s_zero, apply("equal", _taken(zeros_at, idx, axis), one))
    without = _taken(ct * product(x, apply("where", single, one, s)), idx, axis)
    divided = _taken(ct * y, idx, axis) / apply("where", s_zero, one, s)
    return ct_x, None, _padded(apply("where", single, without, divided), src.shape)


def _scatter_batch(args, batched, *, axis, reduce, include_self):
    """vmap of scatter: input, index and src each batched (broadcast to the batch where
    not), the dim one further."""
    n = batch_size(args, batched)
    args = [a if b else unbatched_to(a, n) for a, b in zip(args, batched)]
    return apply("scatter", *args, axis=axis + 1, reduce=reduce, include_self=include_self)


scatter = defop(
    "scatter", _scatter_shape, _scatter_dtype, _scatter, vjp=_scatter_vjp, may_fail=True,
    tags={"complex_linear"}, batch=_scatter_batch,
)  # fmt: skip


# -- advanced indexing: several integer arrays at once (PyTorch's `index` and `index_put`) --------
# `axes` are the dims of x that the index arrays take, in order (one array each). Their
# broadcast shape replaces those dims where the dims are adjacent, else it goes first: the
# placement rule of NumPy and PyTorch (an index like x[idx, :, idx] puts it first).


def advanced_shape(x, idxs, axes, op="advanced_index"):
    """The shape of `x[...]` with `idxs` at `axes` (full slices elsewhere)."""
    if len(idxs) != len(axes) or not axes:
        raise ShapeError(f"{op}: one index array per axis, got {len(idxs)} for axes {axes}")
    if list(axes) != sorted(set(axes)) or not 0 <= axes[0] <= axes[-1] < len(x):
        raise ShapeError(f"{op}: axes {axes} must be increasing dims of {sh.format_shape(x)}")
    why = "shape mismatch: indexing tensors could not be broadcast together"
    try:
        taken = sh.broadcast_shapes(*idxs, why=why)
    except ShapeError as e:  # PyTorch raises IndexError there
        raise IndexOutOfBoundsError(str(e)) from None
    rest = [d for a, d in enumerate(x) if a not in axes]
    if tuple(axes) == tuple(range(axes[0], axes[0] + len(axes))):  # adjacent: in place
        return (*rest[: axes[0]], *taken, *rest[axes[0] :])
    return (*taken, *rest)


def _advanced_dtype(x, *idxs, axes):
    for i in idxs:
        _index_dtype(i)
    return x


def _index_dtype(i):
    if not dt.is_int(i):
        raise DTypeError(
            f"tensors used as indices must be long, int, byte or bool tensors, got {i}"
        )


def advanced_tuple(xp, shape, idxs, axes, op):
    """The NumPy index of `idxs` at `axes` (checked against `shape`: negative indices count
    from the end, as in `x[idx]`)."""
    index = [slice(None)] * len(shape)
    for i, a in zip(idxs, axes):
        check_indices(i, shape[a], op=op, dim=a, negative=True)
        index[a] = i
    return tuple(index)


def _advanced(xp, x, *idxs, out=None, axes):
    return _copy_into(out, x[advanced_tuple(xp, x.shape, idxs, axes, "advanced_index")])


def _advanced_vjp(ct, y, x, *idxs, axes):
    zeros = _full(0, ct, x.shape)
    put = apply("index_put", zeros, ct, *idxs, spec=(), axes=axes, accumulate=True)
    return (put, *(None for _ in idxs))


advanced_index = defop(
    "advanced_index", lambda x, *idxs, axes: advanced_shape(x, idxs, axes), _advanced_dtype,
    _advanced, vjp=_advanced_vjp, may_fail=True,  # indices out of range
    tags={"complex_linear"},
)  # fmt: skip


def put_target(x, idxs, spec, axes, op="index_put"):
    """The shape `x[index]` has, where `x[index] = values` writes (index: `spec` then
    `idxs` at `axes` of what `spec` gives)."""
    target = index_shape(x, spec=spec)
    return advanced_shape(target, idxs, axes, op) if idxs else target


def _put_shape(x, values, *idxs, spec, axes, accumulate):
    target = put_target(x, idxs, spec, axes)
    why = (
        f"shape mismatch: value tensor of shape {list(values)} cannot be broadcast to "
        f"indexing result of shape {list(target)}"
    )
    extra = len(values) - len(target)
    if extra > 0 and any(d != 1 for d in values[:extra]):  # leading 1s, as PyTorch allows
        raise ShapeError(why)
    for v, t in zip(reversed(values), reversed(target)):
        if v == 1 or v == t:
            continue
        if isinstance(v, int) and isinstance(t, int):
            raise ShapeError(why)
        sh.require_stretch(v, t, why)  # checked when the feeds bind the dims
    return tuple(x)


def _put_dtype(x, values, *idxs, spec, axes, accumulate):
    for i in idxs:
        _index_dtype(i)
    if values != x:
        raise DTypeMismatchError(
            f"Index put requires the source and destination dtypes match, got {x} for the "
            f"destination and {values} for the source."
        )
    return x


def _put(xp, x, values, *idxs, out=None, spec, axes, accumulate):
    if out is None:
        out = x.copy()
    else:
        out[...] = x
    return write_index(xp, out, values, *idxs, spec=spec, axes=axes, accumulate=accumulate)


def write_index(xp, out, values, *idxs, spec, axes, accumulate):
    """`out[index] = values` (or `+=`, repeated indices summing) in place: index_put's kernel
    after its copy, and eager item assignment that autograd does not record."""
    view = out[(*index_tuple(spec), Ellipsis)]  # a view: writing it writes out
    if idxs:
        index = advanced_tuple(xp, view.shape, idxs, axes, "index_put")
        target = advanced_shape(view.shape, [i.shape for i in idxs], axes)
    else:
        index, target = Ellipsis, view.shape
    if values.ndim > len(target):  # leading 1s (the shape rule checked them)
        values = values.reshape(values.shape[values.ndim - len(target) :])
    if not accumulate:
        view[index] = values
    elif idxs:
        _ufunc_at(xp, "add", view, index, xp.broadcast_to(values, target))
    else:
        view += values
    return out


def _put_vjp(ct, y, x, values, *idxs, spec, axes, accumulate):
    if accumulate:
        ct_x = ct
    else:  # x's values there were overwritten: no gradient reaches them
        ct_x = apply("index_put", ct, scalar(0, ct), *idxs, spec=spec, axes=axes,
                     accumulate=False)  # fmt: skip
    taken = apply("index", ct, spec=spec) if spec else ct
    if idxs:
        taken = apply("advanced_index", taken, *idxs, axes=axes)
    extra = values.ndim - taken.ndim
    if extra > 0:
        taken = apply("reshape", taken, shape=(1,) * extra + tuple(taken.shape))
    return (ct_x, taken, *(None for _ in idxs))


def _put_batch(args, batched, *, spec, axes, accumulate):
    """vmap of `x[index] = values`: the batch axis a full slice in front of the index (x
    broadcast to the batch where it is not batched, batched values given the target's rank
    after their batch axis). Index arrays that are batched, or not next to each other (their
    dims go first), are refused."""
    from ..errors import GraphError  # (errors is imported by every layer)

    x, values, *idxs = args
    if any(batched[2:]) or (axes and tuple(axes) != tuple(range(axes[0], axes[0] + len(axes)))):
        raise GraphError("vmap: no batching rule for index_put with batched or non-adjacent "
                         "index tensors")  # fmt: skip
    n = x.shape[0] if batched[0] else values.shape[0]
    if not batched[0]:
        x = unbatched_to(x, n)
    if batched[1]:
        target = put_target(tuple(x.shape[1:]), [i.shape for i in idxs], spec, axes)
        rest = tuple(values.shape[1:])
        rest = rest[len(rest) - len(target) :] if len(rest) > len(target) else rest
        values = apply("reshape", values, shape=(n, *(1,) * (len(target) - len(rest)), *rest))
    spec = (("slice", None, None, None), *spec)
    return apply("index_put", x, values, *idxs, spec=spec, axes=tuple(a + 1 for a in axes),
                 accumulate=accumulate)  # fmt: skip


# `x` with `values` written at `x[index]` (added when `accumulate`, repeated indices summing):
# PyTorch's `index_put`, and item assignment `x[index] = values` computed out of place.
index_put = defop(
    "index_put", _put_shape, _put_dtype, _put, vjp=_put_vjp, may_fail=True,
    tags={"complex_linear"}, batch=_put_batch,
)  # fmt: skip
