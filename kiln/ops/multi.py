"""Ops with several results: `sort` and `topk` (values and indices), `max_dim` and `min_dim`
(PyTorch's `max(x, dim)`: values and indices), and `split` (the pieces, as views). As a region
op, each is one node of type `tuple` whose elements `get` nodes read (kiln/ops/control.py), so
one kernel computes the values and the indices together. `element_types(op, x, **attrs)` gives
the (shape, dtype) of each element; `elements(t, op, x, **attrs)` the `get` nodes of a result.

Gradients: the vjp of such an op takes one cotangent (or None) per element (autodiff collects
them from the `get` nodes); its jvp gives one tangent (or None) per element.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from ..errors import GraphError, IndexOutOfBoundsError, ShapeError
from ..graph.opdef import REGISTRY
from .core import apply, bind, defop
from .reduce import _reduced_shape
from .sort import sortable

INT64 = np.dtype(np.int64)


def _axis(x, axis, what):
    if not 0 <= axis < max(len(x), 1):
        raise ShapeError(f"{what}: dim {axis} is out of bounds for a tensor of dimension {len(x)}")


def _tuple_dtype(x, **_):
    return dt.TUPLE


def element_types(op: str, shape, dtype, **attrs) -> list:
    """(shape, dtype) of each element of the result of `op` on a value of `shape`, `dtype`.

    >>> element_types("topk", (3, 5), np.dtype(np.float32), axis=1, k=2, largest=True)
    [((3, 2), dtype('float32')), ((3, 2), dtype('int64'))]
    """
    shape = tuple(shape)
    axis = attrs.get("axis")
    if op == "sort":
        return [(shape, dtype), (shape, INT64)]
    if op == "topk":
        picked = (*shape[:axis], attrs["k"], *shape[axis + 1 :]) if shape else ()
        return [(picked, dtype), (picked, INT64)]
    if op in ("max_dim", "min_dim"):
        reduced = _reduced_shape(shape, axes=(axis,), keepdims=attrs["keepdims"]) if shape else ()
        return [(reduced, dtype), (reduced, INT64)]
    if op == "split":
        return [((*shape[:axis], n, *shape[axis + 1 :]), dtype) for n in attrs["sizes"]]
    raise KeyError(op)


def element_count(node) -> int:
    """How many elements the tuple of multi-result op `node` has."""
    x = node.inputs[0]
    return len(element_types(node.op.name, x.shape, x.dtype, **node.attrs))


def elements(t, op: str, x, **attrs) -> list:
    """The `get` nodes reading each element of `t`, the result of `op` on `x`.

    >>> import kiln as kn
    >>> with kn.Graph().as_default():
    ...     x = kn.placeholder(kn.float32, (4,), name="x")
    ...     pieces = elements(apply("split", x, axis=0, sizes=(1, 3)), "split", x, axis=0,
    ...                       sizes=(1, 3))
    >>> [p.shape for p in pieces]
    [kiln.Size([1]), kiln.Size([3])]
    """
    return [bind(REGISTRY["get"], t, index=k, shape=s, dtype=d)
            for k, (s, d) in enumerate(element_types(op, x.shape, x.dtype, **attrs))]  # fmt: skip


def _element(t, index, op, x, **attrs):
    s, d = element_types(op, x.shape, x.dtype, **attrs)[index]
    return bind(REGISTRY["get"], t, index=index, shape=s, dtype=d)


def _flat(x):
    """A 0-d value as one element (these ops take it so, as PyTorch's)."""
    return x.reshape(1) if x.ndim == 0 else x


def _argsort(xp, x, axis, descending):
    """PyTorch's order, stable in either direction (NaN the greatest): as argsort's kernel."""
    x = sortable(x)
    if descending:
        n = x.shape[axis]
        return (n - 1) - xp.flip(xp.argsort(xp.flip(x, axis), axis=axis, kind="stable"), axis)
    return xp.argsort(x, axis=axis, kind="stable")


def _scatter_back(ct, idx, x, axis):
    """The cotangent of `x` for values taken from it at `idx` along `axis` (0-d allowed)."""
    if x.ndim == 0:
        flat = apply("scatter_along_axis", apply("reshape", ct, shape=(1,)),
                     apply("reshape", idx, shape=(1,)), axis=0, shape=(1,))  # fmt: skip
        return apply("reshape", flat, shape=())
    return apply("scatter_along_axis", ct, idx, axis=axis, shape=tuple(x.shape))


def _take(t, idx, axis):
    """`t` at `idx` along `axis` (0-d allowed): the values' tangent."""
    if t.ndim == 0:
        return t
    return apply("take_along_axis", t, idx, axis=axis)


def _batched_one(name):
    """The batching rule of a one-input op along its `axis` (its tuple keeps the batch axis
    first in every element)."""

    def rule(args, batched, *, axis, **attrs):
        (x,) = args
        if x.ndim < 2:
            raise GraphError(f"vmap: {name} of 0-d examples has no batching rule (give each "
                             "example one axis)")  # fmt: skip
        return apply(name, x, axis=axis + 1, **attrs)

    return rule


# -- sort and topk ---------------------------------------------------------------------------


def _sort_shape(x, *, axis, descending):
    _axis(x, axis, "sort")
    return ()


def _sort(xp, x, *, axis, descending):
    x1 = _flat(x)
    idx = _argsort(xp, x1, axis, descending).astype(np.int64, copy=False)
    values = xp.take_along_axis(x1, idx, axis=axis)
    return values.reshape(x.shape), xp.ascontiguousarray(idx).reshape(x.shape)


def _sort_vjp(cts, t, x, *, axis, descending):
    if cts[0] is None:
        return (None,)
    idx = _element(t, 1, "sort", x, axis=axis, descending=descending)
    return (_scatter_back(cts[0], idx, x, axis),)


def _sort_jvp(tangents, t, x, *, axis, descending):
    idx = _element(t, 1, "sort", x, axis=axis, descending=descending)
    return [_take(tangents[0], idx, axis), None]


sort = defop("sort", _sort_shape, _tuple_dtype, _sort, vjp=_sort_vjp, jvp=_sort_jvp,
             batch=_batched_one("sort"), tags=("multi",))  # fmt: skip


def _topk_shape(x, *, axis, k, largest):
    _axis(x, axis, "topk")
    n = x[axis] if x else 1
    if isinstance(n, int) and not 0 <= k <= n:
        raise ShapeError(f"topk: selected index k ({k}) out of range (the dim has {n})")
    return ()


def _topk(xp, x, *, axis, k, largest):
    if x.ndim == 0:  # its value and index 0, for k 0 or 1 (as PyTorch's)
        return x.copy(), xp.zeros((), np.int64)
    x1 = _flat(x)
    idx = _argsort(xp, x1, axis, largest).astype(np.int64, copy=False)
    idx = xp.ascontiguousarray(xp.take(idx, xp.arange(k), axis=axis))
    return xp.take_along_axis(x1, idx, axis=axis), idx


def _topk_vjp(cts, t, x, *, axis, k, largest):
    if cts[0] is None:
        return (None,)
    idx = _element(t, 1, "topk", x, axis=axis, k=k, largest=largest)
    return (_scatter_back(cts[0], idx, x, axis),)


def _topk_jvp(tangents, t, x, *, axis, k, largest):
    idx = _element(t, 1, "topk", x, axis=axis, k=k, largest=largest)
    return [_take(tangents[0], idx, axis), None]


topk = defop("topk", _topk_shape, _tuple_dtype, _topk, vjp=_topk_vjp, jvp=_topk_jvp,
             batch=_batched_one("topk"), tags=("multi",))  # fmt: skip


# -- max(x, dim) and min(x, dim) -------------------------------------------------------------


def _extremum(name, arg):
    def shape_rule(x, *, axis, keepdims):
        _axis(x, axis, name)
        if x and x[axis] == 0:  # PyTorch: IndexError (a RuntimeError too)
            raise IndexOutOfBoundsError(
                f"{name.removesuffix('_dim')}(): Expected reduction dim {axis} to have non-zero "
                f"size (shape {x})"
            )
        return ()

    def impl(xp, x, *, axis, keepdims):
        x1 = _flat(x)
        idx = getattr(xp, arg)(x1, axis=axis, keepdims=True).astype(np.int64, copy=False)
        values = xp.take_along_axis(x1, idx, axis=axis)
        if x.ndim == 0:
            return values.reshape(()), idx.reshape(())
        if not keepdims:
            values, idx = xp.squeeze(values, axis), xp.squeeze(idx, axis)
        # NOTE: reshaped back: ascontiguousarray makes a 0-d result (max(x, 0) of a vector) 1-d
        return (xp.ascontiguousarray(values).reshape(values.shape),
                xp.ascontiguousarray(idx).reshape(idx.shape))  # fmt: skip

    def kept(v, x, axis, keepdims):
        """`v` (of the reduced shape) with the reduced axis back, to index along it."""
        if x.ndim == 0 or keepdims:
            return v
        return apply("reshape", v, shape=_reduced_shape(x.shape, axes=(axis,), keepdims=True))

    def vjp(cts, t, x, *, axis, keepdims):
        # NOTE: the gradient goes to the one element at the returned index even where several
        # tie (PyTorch's), not split as reduce_max's gradient is.
        if cts[0] is None:
            return (None,)
        idx = kept(_element(t, 1, name, x, axis=axis, keepdims=keepdims), x, axis, keepdims)
        return (_scatter_back(kept(cts[0], x, axis, keepdims), idx, x, axis),)

    def jvp(tangents, t, x, *, axis, keepdims):
        idx = kept(_element(t, 1, name, x, axis=axis, keepdims=keepdims), x, axis, keepdims)
        picked = _take(tangents[0], idx, axis)
        if x.ndim and not keepdims:
            s, _ = element_types(name, x.shape, x.dtype, axis=axis, keepdims=False)[0]
            picked = apply("reshape", picked, shape=s)
        return [picked, None]

    return defop(name, shape_rule, _tuple_dtype, impl, vjp=vjp, jvp=jvp,
                 batch=_batched_one(name), tags=("multi",))  # fmt: skip


max_dim = _extremum("max_dim", "argmax")
min_dim = _extremum("min_dim", "argmin")


# -- split -----------------------------------------------------------------------------------


def _split_shape(x, *, axis, sizes):
    if not 0 <= axis < len(x):
        raise ShapeError(f"split: dim {axis} is out of bounds for a tensor of dimension {len(x)}")
    if isinstance(x[axis], int) and sum(sizes) != x[axis]:
        raise ShapeError(f"split: sizes {list(sizes)} do not add up to dim {axis}'s {x[axis]}")
    return ()


def _split(xp, x, *, axis, sizes):
    bounds = np.cumsum([0, *sizes]).tolist()
    head = (slice(None),) * axis
    return tuple(x[(*head, slice(lo, hi))] for lo, hi in zip(bounds[:-1], bounds[1:]))


def _split_vjp(cts, t, x, *, axis, sizes):
    pieces = [c if c is not None else apply("broadcast_to", _zero(x), shape=s)
              for c, (s, _) in zip(cts, element_types("split", x.shape, x.dtype, axis=axis,
                                                       sizes=sizes))]  # fmt: skip
    return (apply("concat", *pieces, axis=axis),)


def _zero(x):
    from .core import scalar

    return scalar(0, x)


def _split_jvp(tangents, t, x, *, axis, sizes):
    (tx,) = tangents
    return elements(apply("split", tx, axis=axis, sizes=sizes), "split", x, axis=axis,
                    sizes=sizes)  # fmt: skip


def _split_batch(args, batched, *, axis, sizes):
    return apply("split", args[0], axis=axis + 1, sizes=sizes)


split = defop("split", _split_shape, _tuple_dtype, _split, vjp=_split_vjp, jvp=_split_jvp,
              batch=_split_batch, views=(0,), tags=("multi", "complex_linear"))  # fmt: skip
