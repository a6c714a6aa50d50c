"""Movement: reshape, transpose, broadcast, indexing, gather, concat, pad, tile, one_hot."""

from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from .. import shapes as sh
from ..errors import (
    DTypeError,
    GraphError,
    IndexOutOfBoundsError,
    IndexOutOfRangeError,
    ShapeError,
    node_error,
)
from ..graph.core import user_site
from .core import apply, batch_size, constant_like, defop, lead, same_dtype, unbatched_to


def _copy_into(out, value):
    if out is None:
        return value
    out[...] = value
    return out


def out_of_range(op: str, message: str) -> IndexOutOfRangeError:
    """The error of a failed index check in `op`'s kernel. It names the caller's line (an
    eager op runs there); graph mode's runtime replaces that with the node's context."""
    error = node_error(IndexOutOfRangeError, message, op=op, name=None, site=user_site())
    error.reason = message
    return error


# Integer dtypes -> the unsigned dtype of their width: seen as unsigned, a negative index is
# larger than any size, so one max checks both bounds of [0, size).
_UNSIGNED = {np.dtype(f"{k}{n}"): np.dtype(f"u{n}") for k in "iu" for n in (1, 2, 4, 8)}


def _in_range(idx, size: int) -> bool:
    """Whether every index lies in [0, size): one max, no loop over the elements."""
    return idx.size == 0 or int(idx.view(_UNSIGNED[idx.dtype]).max()) < size


def check_indices(idx, size: int, *, op: str, dim: int, negative: bool = False) -> None:
    """Raises unless every index lies in [0, size), or in [-size, size) when `negative`
    indices count from the end (then a min and a max)."""
    if negative:
        ok = idx.size == 0 or (int(idx.min()) >= -size and int(idx.max()) < size)
    else:
        ok = _in_range(idx, size)
    if not ok:
        low, high = int(idx.min()), int(idx.max())
        bad = high if high >= size else low
        raise out_of_range(op, f"index {bad} is out of bounds for dimension {dim} with size {size}")


# -- views -----------------------------------------------------------------------------------


def _reshape(xp, x, out=None, *, shape):
    return _copy_into(out, xp.reshape(x, shape))


reshape = defop(
    "reshape", lambda x, shape: sh.reshape_shape(x, shape), same_dtype, _reshape,
    vjp=lambda ct, y, x, shape: (apply("reshape", ct, shape=x.shape),),
    tags={"complex_linear", "view"},
    batch=lambda args, batched, shape: apply("reshape", args[0], shape=(args[0].shape[0], *shape)),
    method=("reshape", "shape"),
)  # fmt: skip


def _transpose_shape(x, *, perm):
    if sorted(perm) != list(range(len(x))):
        raise ShapeError(f"axes {perm} don't match array of dimension {len(x)}")
    return tuple(x[p] for p in perm)


def _transpose(xp, x, out=None, *, perm):
    return _copy_into(out, xp.transpose(x, perm))


def _transpose_vjp(ct, y, x, *, perm):
    inverse = tuple(sorted(range(len(perm)), key=lambda i: perm[i]))
    return (apply("transpose", ct, perm=inverse),)


def _transpose_batch(args, batched, *, perm):
    return apply("transpose", args[0], perm=(0, *(p + 1 for p in perm)))


transpose = defop(
    "transpose", _transpose_shape, same_dtype, _transpose, vjp=_transpose_vjp,
    tags={"complex_linear", "view"},
    batch=_transpose_batch, method=("transpose", "perm"),
)  # fmt: skip


def _unfold_shape(x, *, dim, size, step):
    n = x[dim]
    if not isinstance(n, int):
        raise ShapeError(f"unfold: dimension {dim} must be static, got {n}")
    if size < 0 or size > n or step <= 0:
        raise ShapeError(
            f"unfold: size {size} must be in [0, {n}] (the size of dimension {dim}) and step "
            f"{step} > 0"
        )
    return (*x[:dim], (n - size) // step + 1, *x[dim + 1 :], size)


def _unfold(xp, x, out=None, *, dim, size, step):
    # a view of x's memory: the windows' strides over it (overlapping where size > step)
    strides = list(x.strides)
    strides[dim] *= step
    shape = _unfold_shape(x.shape, dim=dim, size=size, step=step)
    return _copy_into(out, _strided_view(xp, x, shape, (*strides, x.strides[dim])))


def _strided_view(xp, x, shape, strides):
    """A view of x's memory with `shape` and `strides` (bytes) whose `base` is x's (NumPy's
    as_strided gives another base, which eager mode would not see as x's view)."""
    root = x.base if isinstance(x.base, np.ndarray) else x
    if xp is np and root.flags.c_contiguous:
        offset = x.__array_interface__["data"][0] - root.__array_interface__["data"][0]
        if x.dtype.kind == "V":  # ml_dtypes' (bfloat16...): no buffer export; through uints
            bits = np.dtype(f"u{x.dtype.itemsize}")
            view = np.ndarray(shape, bits, buffer=root.view(bits), offset=offset, strides=strides)
            view = view.view(x.dtype)
        else:
            view = np.ndarray(shape, x.dtype, buffer=root, offset=offset, strides=strides)
        view.flags.writeable = bool(x.flags.writeable)
        return view
    return xp.lib.stride_tricks.as_strided(x, shape, strides, writeable=bool(x.flags.writeable))


def window_positions(n: int, size: int, step: int) -> np.ndarray:
    """[count, size]: the positions along the unfolded dim of each window's elements."""
    return np.arange((n - size) // step + 1)[:, None] * step + np.arange(size)


def _unfold_vjp(ct, y, x, *, dim, size, step):
    # the windows' cotangents summed back at their positions (windows overlap where size > step)
    last = x.ndim  # ct's window dim
    windows = apply("transpose", ct, perm=(*range(dim + 1), last, *range(dim + 1, last)))
    positions = constant_like(window_positions(x.shape[dim], size, step), ct)
    return (apply("scatter_add", windows, positions, axis=dim, shape=tuple(x.shape),
                  wrap_negative=False),)  # fmt: skip


# `unfold(x, dim, size, step)`: PyTorch's `Tensor.unfold`, every window of `size` along `dim`
# starting at a multiple of `step`, as a new last dim: a view of x (its windows may overlap)
unfold = defop(
    "unfold", _unfold_shape, same_dtype, _unfold, vjp=_unfold_vjp, tags={"view", "complex_linear"},
    batch=lambda args, batched, *, dim, size, step: apply(
        "unfold", args[0], dim=dim + 1, size=size, step=step),
)  # fmt: skip


def _broadcast_to_shape(x, *, shape):
    if len(shape) < len(x):
        raise ShapeError(
            f"cannot broadcast {sh.format_shape(x)} to {sh.format_shape(shape)}: fewer dims"
        )
    for d, t in zip(x[::-1], shape[::-1]):
        if d != 1 and d != t:
            if isinstance(d, int) and isinstance(t, int):
                raise ShapeError(
                    f"cannot broadcast {sh.format_shape(x)} to {sh.format_shape(shape)}"
                )
            sh.require_stretch(d, t, "broadcast_to")
    return tuple(shape)


def _broadcast_to(xp, x, out=None, *, shape):
    if out is None and xp is np and type(x) is np.ndarray and not x.ndim and x.dtype.isbuiltin:
        # a 0-d x (a loss's seed gradient): the view made directly, 0.7 us where NumPy's
        # broadcast_to takes 2.3
        view = np.ndarray(shape, x.dtype, x, 0, (0,) * len(shape))
        view.flags.writeable = False
        return view
    view = xp.broadcast_to(x, shape)
    if out is None and xp is np and x.ndim and 1 in shape:  # a 0-d x: all 0, as PyTorch's
        view = _expand_strides(x, view)
    if out is None and xp is np and x.flags.writeable and not view.flags.writeable:
        # writable where x is, as PyTorch's expand: a part of it with no element twice (a
        # row of x.expand(4, 3)) may change in place; the whole is refused by the in-place
        # methods' check of shared elements, before anything is written
        view = _strided_view(xp, x, view.shape, view.strides)
    return _copy_into(out, view)


def _expand_strides(x, view):
    """`view` (NumPy's broadcast of `x`) with PyTorch's strides for `expand`: a dim of size 1
    that stays 1 keeps its stride (NumPy's is 0), a new leading dim of size 1 takes the next
    dim's extent. Strides of size-1 dims address nothing: the same elements, read-only.

    >>> x = np.zeros((3, 1))
    >>> _expand_strides(x, np.broadcast_to(x, (1, 3, 1))).strides
    (24, 8, 8)
    """
    strides, lead = list(view.strides), view.ndim - x.ndim
    for i in range(view.ndim - 1, -1, -1):
        if view.shape[i] != 1:
            continue
        if i >= lead:
            strides[i] = x.strides[i - lead]
        else:
            strides[i] = view.shape[i + 1] * strides[i + 1]
    if tuple(strides) == view.strides:
        return view
    return np.lib.stride_tricks.as_strided(x, view.shape, strides, writeable=False)


# Its vjp passes the cotangent through: autodiff sums it back to the input's shape.
broadcast_to = defop(
    "broadcast_to", _broadcast_to_shape, same_dtype, _broadcast_to,
    vjp=lambda ct, y, x, shape: (ct,), tags={"complex_linear", "view"},
    batch=lambda args, batched, shape: apply(
        "broadcast_to", lead(args[0], len(shape)), shape=(args[0].shape[0], *shape)
    ),
)  # fmt: skip


# -- basic indexing: spec items are ("int", i), ("slice", start, stop, step), ("newaxis",) ----


_SPEC_ITEMS = {"int": 1, "slice": 3, "newaxis": 0}  # kind -> number of values


def _check_spec(spec):
    for item in spec:
        if not isinstance(item, tuple) or not item or _SPEC_ITEMS.get(item[0]) != len(item) - 1:
            raise ShapeError(f"malformed index item {item!r}")
        for v in item[1:]:
            if not (v is None and item[0] == "slice") and not isinstance(v, int):
                raise ShapeError(f"malformed index item {item!r}: values must be ints")


def _index_shape(x, *, spec):
    _check_spec(spec)
    consumed = sum(1 for item in spec if item[0] != "newaxis")
    if consumed > len(x):
        raise IndexOutOfBoundsError(
            f"too many indices for array: array is {len(x)}-dimensional, "
            f"but {consumed} were indexed"
        )
    out, axis = [], 0
    for item in spec:
        if item[0] == "newaxis":
            out.append(1)
            continue
        d = x[axis]
        if item[0] == "int":
            if isinstance(d, int) and not -d <= item[1] < d:
                raise IndexOutOfBoundsError(
                    f"index {item[1]} is out of bounds for dimension {axis} with size {d}"
                )
        else:
            s = slice(*item[1:])
            if s.step == 0:
                raise ShapeError("slice step cannot be zero")
            if isinstance(d, int):
                out.append(len(range(*s.indices(d))))
            elif s.start in (None, 0) and s.stop is None and s.step in (None, 1):
                out.append(d)
            else:
                out.append(sh.Dim())  # a slice of a symbolic dim: known when it runs
        axis += 1
    return (*out, *x[axis:])


def index_tuple(spec) -> tuple:
    """The Python index a spec stands for."""
    table = {"int": lambda i: i, "slice": lambda *a: slice(*a), "newaxis": lambda: None}
    return tuple(table[item[0]](*item[1:]) for item in spec)


def _index(xp, x, out=None, *, spec):
    # NOTE: the trailing Ellipsis keeps an all-int index a 0-d view (NumPy gives a scalar copy)
    view = x[(*index_tuple(spec), Ellipsis)]
    if out is None and xp is np and 0 in view.strides:  # (NumPy's new dims: stride 0)
        steps = newaxis_strides(x.shape, x.strides, x.itemsize, spec, view.strides)
        if steps != view.strides and view.size:
            view = _restrided(x, spec, view, steps)
    return _copy_into(out, view)


def newaxis_strides(shape, strides, itemsize: int, spec, result: tuple) -> tuple:
    """The strides of x (of `shape`, `strides`) indexed by `spec` as PyTorch's indexing gives
    them: `result` (NumPy's) but for each new dim (None), which has unsqueeze's stride where
    it is inserted, the size times the stride of the dim it lands before (`itemsize` at the
    end), where NumPy's is 0.

    >>> newaxis_strides((3, 4), (16, 4), 4, (("slice", None, None, None), ("newaxis",)), (16, 0, 4))
    (16, 16, 4)
    """
    shape, strides, new = list(shape), list(strides), [False] * len(shape)
    dim = 0
    for item in spec:
        if item[0] == "newaxis":
            step = shape[dim] * strides[dim] if dim < len(shape) else itemsize
            shape.insert(dim, 1), strides.insert(dim, step), new.insert(dim, True)
            dim += 1
        elif item[0] == "int":
            del shape[dim], strides[dim], new[dim]
        else:
            s = slice(*item[1:])
            shape[dim] = len(range(*s.indices(shape[dim])))
            strides[dim] *= s.step or 1
            dim += 1
    if len(new) != len(result):
        return tuple(result)
    return tuple(k if fresh else r for k, fresh, r in zip(strides, new, result))


def _restrided(x: np.ndarray, spec, view: np.ndarray, strides) -> np.ndarray:
    """`view` (x indexed by `spec`, not empty) with (size-1 dims') strides `strides`: a view
    of the array owning the memory (so eager kiln links it to x's base), else `view`."""
    start, dim = 0, 0  # view's first element, in bytes from x's
    for item in spec:
        if item[0] == "int":
            start += item[1] % x.shape[dim] * x.strides[dim]
            dim += 1
        elif item[0] == "slice":
            start += slice(*item[1:]).indices(x.shape[dim])[0] * x.strides[dim]
            dim += 1
    root = x.base if isinstance(x.base, np.ndarray) else x
    try:
        if root is not x:
            start += x.__array_interface__["data"][0] - root.__array_interface__["data"][0]
        out = np.ndarray(view.shape, view.dtype, buffer=root, offset=start, strides=strides)
    except (TypeError, ValueError):  # (memory that is no buffer of its own)
        return view
    if not view.flags.writeable:
        out.flags.writeable = False
    return out


_ALL = ("slice", None, None, None)

index = defop(
    "index", _index_shape, same_dtype, _index,
    vjp=lambda ct, y, x, spec: (apply("index_scatter", ct, spec=spec, shape=x.shape),),
    tags={"complex_linear", "view"},
    may_fail=True,  # an int index into a symbolic dim is checked when it runs
    batch=lambda args, batched, spec: apply("index", args[0], spec=(_ALL, *spec)),
)  # fmt: skip


def _index_scatter(xp, ct, out=None, *, spec, shape):
    out = xp.zeros(shape, ct.dtype) if out is None else out
    out.fill(0)
    out[index_tuple(spec)] = ct
    return out


# The transpose of `index`: zeros of the indexed array's shape, with `ct` where it was read.
index_scatter = defop(
    "index_scatter", lambda ct, spec, shape: tuple(shape), same_dtype, _index_scatter,
    vjp=lambda ct, y, c, spec, shape: (apply("index", ct, spec=spec),),
    batch=lambda args, batched, spec, shape: apply(
        "index_scatter", args[0], spec=(_ALL, *spec), shape=(args[0].shape[0], *shape)
    ),
    tags={"complex_linear"},
)  # fmt: skip


def _int_indices(idx):
    if not dt.is_int(idx):
        raise DTypeError(f"indices must be integers, got {idx}")


def _gather_shape(x, idx, *, axis, wrap_negative):
    if not x:
        raise ShapeError("cannot gather from a 0-d array")
    if not 0 <= axis < len(x):
        raise IndexOutOfBoundsError(
            f"axis {axis} is out of bounds for an array of dimension {len(x)}"
        )
    if x[axis] == 0 and isinstance(sh.size(idx), int) and sh.size(idx) != 0:
        raise IndexOutOfBoundsError(  # (PyTorch's message and class)
            f"index is out of bounds for dimension with size 0 (gather from axis {axis})"
        )
    return (*x[:axis], *idx, *x[axis + 1 :])


def _gather_dtype(x, idx, **_):
    _int_indices(idx)
    return x


def _gather(xp, x, idx, out=None, *, axis, wrap_negative):
    check_indices(idx, x.shape[axis], op="gather", dim=axis, negative=wrap_negative)
    return xp.take(x, idx, axis=axis, out=out)


def _unsupported(op: str, what: str):
    return GraphError(f"vmap: no batching rule for {op} with {what} batched")


def _gather_batch(args, batched, *, axis, wrap_negative):
    (x, idx), (bx, bidx) = args, batched
    if bx and bidx:
        raise _unsupported("gather", "both the array and the indices")
    if bx:
        return apply("gather", x, idx, axis=axis + 1, wrap_negative=wrap_negative)
    out = apply("gather", x, idx, axis=axis, wrap_negative=wrap_negative)  # batch at `axis`
    perm = (axis, *(a for a in range(out.ndim) if a != axis))
    return apply("transpose", out, perm=perm)


def _scatter_add_batch(args, batched, *, axis, shape, wrap_negative):
    (ct, idx), (_, bidx) = args, batched
    if bidx:
        raise _unsupported("scatter_add", "the indices")
    return apply("scatter_add", ct, idx, axis=axis + 1, shape=(ct.shape[0], *shape),
                 wrap_negative=wrap_negative)  # fmt: skip


def _both_batched(args, batched):
    """Operands of equal rank: an unbatched one gets a size-1 batch axis (they broadcast)."""
    return [a if b else apply("reshape", a, shape=(1, *a.shape)) for a, b in zip(args, batched)]


def _take_along_batch(args, batched, *, axis):
    return apply("take_along_axis", *_both_batched(args, batched), axis=axis + 1)


def _scatter_along_batch(args, batched, *, axis, shape):
    n = batch_size(args, batched)
    ct, idx = args
    ct = ct if batched[0] else unbatched_to(ct, n)
    idx = idx if batched[1] else apply("reshape", idx, shape=(1, *idx.shape))
    return apply("scatter_along_axis", ct, idx, axis=axis + 1, shape=(n, *shape))


# `wrap_negative`: negative indices count from the end, as in `x[idx]` (NumPy's and PyTorch's
# indexing); without it they are out of range, as in PyTorch's index_select and embedding.
gather = defop(
    "gather", _gather_shape, _gather_dtype, _gather,
    vjp=lambda ct, y, x, idx, axis, wrap_negative: (
        apply("scatter_add", ct, idx, axis=axis, shape=x.shape, wrap_negative=wrap_negative),
        None,
    ),
    may_fail=True,  # indices out of range
    batch=_gather_batch,
    tags={"complex_linear"},
)  # fmt: skip


def _scatter_add(xp, ct, idx, out=None, *, axis, shape, wrap_negative):
    check_indices(idx, shape[axis], op="scatter_add", dim=axis, negative=wrap_negative)
    out = xp.zeros(shape, ct.dtype) if out is None else out
    out.fill(0)
    _add_at(xp, out, (slice(None),) * axis + (idx,), ct)
    return out


def _add_at(xp, out, index, values):
    """`out[index] += values`, accumulating repeated indices."""
    if hasattr(xp.add, "at"):
        xp.add.at(out, index, values)
    else:  # CuPy spells it cupyx.scatter_add
        import cupyx

        cupyx.scatter_add(out, index, values)


def _scatter_add_shape(ct, idx, *, axis, shape, wrap_negative):
    taken = (*shape[:axis], *idx, *shape[axis + 1 :])
    if len(ct) != len(taken):
        raise ShapeError(f"scatter_add: values {sh.format_shape(ct)} do not fit the indices")
    return tuple(shape)


# The transpose of `gather`: zeros of the source's shape, `ct` added where it was taken.
scatter_add = defop(
    "scatter_add", _scatter_add_shape, lambda ct, idx, **_: ct, _scatter_add,
    vjp=lambda ct, y, c, idx, axis, shape, wrap_negative: (
        apply("gather", ct, idx, axis=axis, wrap_negative=wrap_negative),
        None,
    ),
    may_fail=True,  # indices out of range
    batch=_scatter_add_batch,
    tags={"complex_linear"},
)  # fmt: skip


def _take_along_shape(x, idx, *, axis):
    if len(x) != len(idx):
        raise ShapeError(
            f"take_along_axis: indices {sh.format_shape(idx)} and array {sh.format_shape(x)} "
            "must have the same number of dims"
        )
    if not 0 <= axis < len(x):
        raise IndexOutOfBoundsError(
            f"axis {axis} is out of bounds for an array of dimension {len(x)}"
        )
    rest = sh.broadcast_shapes(
        x[:axis] + x[axis + 1 :], idx[:axis] + idx[axis + 1 :], why="take_along_axis"
    )
    return (*rest[:axis], idx[axis], *rest[axis:])


def _take_along(xp, x, idx, out=None, *, axis):
    check_indices(idx, x.shape[axis], op="take_along_axis", dim=axis)
    flat = _flat_along(xp, x.shape, idx, axis)
    if flat is not None and x.flags.c_contiguous:  # the elements by their flat offsets
        if out is not None and out.flags.c_contiguous:  # in range: "clip" is not buffered
            xp.take(x.reshape(-1), flat, out=out.reshape(-1), mode="clip")
            return out
        return _copy_into(out, x.reshape(-1).take(flat).reshape(idx.shape))
    taken = xp.take_along_axis(x, idx, axis=axis)
    if out is None and not taken.flags.c_contiguous:  # (NumPy's takes the index's layout;
        taken = xp.ascontiguousarray(taken)  # PyTorch's gather is C-ordered)
    return _copy_into(out, taken)


def _flat_along(xp, shape, idx, axis):
    """For NumPy indices along the last axis of a C-ordered array of `shape`, with the other
    dims of `idx` those of `shape` (no broadcasting): the flat offset of each element they
    name, in range once `check_indices` passed; else None (NumPy's own along-axis path,
    whose index grids cost a few microseconds more)."""
    if xp is not np or axis != len(shape) - 1 or not shape[-1] or idx.ndim != len(shape):
        return None
    if idx.shape[:-1] != tuple(shape[:-1]) or not np.can_cast(idx.dtype, np.intp):
        return None
    k = idx.shape[-1]
    rows = idx.size // k if k else 0
    starts = np.arange(0, rows * shape[-1], shape[-1], dtype=np.intp)
    if k == 1:
        starts += idx.reshape(-1)  # NOTE: in place: one temporary of 8 B a row
        return starts
    return (idx.reshape(rows, k) + starts[:, None]).reshape(-1)


take_along_axis = defop(
    "take_along_axis", _take_along_shape, _gather_dtype, _take_along,
    vjp=lambda ct, y, x, idx, axis: (
        apply("scatter_along_axis", ct, idx, axis=axis, shape=_scatter_target(ct, x, axis)),
        None,
    ),
    may_fail=True,  # indices out of range
    batch=_take_along_batch,
    tags={"complex_linear"},
)  # fmt: skip


def _scatter_target(ct, x, axis):
    """x's shape where the values came from, the broadcast (ct's) shape elsewhere: autodiff
    then sums the cotangent back over the dims where x was broadcast."""
    return tuple(x.shape[a] if a == axis else d for a, d in enumerate(ct.shape))


def _scatter_along(xp, ct, idx, out=None, *, axis, shape):
    if ct.dtype in _HALF:  # summed in float32, rounded once: PyTorch's gather backward
        wide = _scatter_along(xp, ct.astype(np.float32), idx, axis=axis, shape=shape)
        if out is None:
            return wide.astype(ct.dtype)
        out[...] = wide
        return out
    check_indices(idx, shape[axis], op="scatter_along_axis", dim=axis)
    out = xp.zeros(shape, ct.dtype) if out is None else out
    out.fill(0)
    flat = _flat_along(xp, shape, idx, axis) if idx.shape == ct.shape else None
    if flat is not None and out.flags.c_contiguous and ct.flags.c_contiguous:
        np.add.at(out.reshape(-1), flat, ct.reshape(-1))
        return out
    grids = xp.ix_(*(xp.arange(n) for n in ct.shape))
    index = tuple(xp.broadcast_to(idx, ct.shape) if a == axis else g for a, g in enumerate(grids))
    _add_at(xp, out, index, ct)
    return out


_HALF = (np.dtype(np.float16), dt.bfloat16)


# The transpose of `take_along_axis`: `ct` added into zeros where values were taken.
def _scatter_along_shape(ct, idx, *, axis, shape):
    if len(ct) != len(shape) or len(idx) != len(shape):
        raise ShapeError(f"scatter_along_axis: {sh.format_shape(ct)} does not fit {shape}")
    for a, (c, d) in enumerate(zip(ct, shape)):
        if a != axis:
            sh.require_equal(c, d, "scatter_along_axis: values and target differ off the axis")
    return tuple(shape)


scatter_along_axis = defop(
    "scatter_along_axis", _scatter_along_shape, lambda ct, idx, **_: ct,
    _scatter_along,
    vjp=lambda ct, y, c, idx, axis, shape: (apply("take_along_axis", ct, idx, axis=axis), None),
    may_fail=True,  # indices out of range
    batch=_scatter_along_batch,
    tags={"complex_linear"},
)  # fmt: skip

# -- building arrays ---------------------------------------------------------------------------


def _concat_shape(*xs, axis):
    if not xs:
        raise ShapeError("need at least one array to concatenate")
    ndim = len(xs[0])
    if ndim == 0:
        raise ShapeError("zero-dimensional arrays cannot be concatenated")
    if any(len(x) != ndim for x in xs):
        raise ShapeError(
            "all the input arrays must have the same number of dimensions: "
            + ", ".join(sh.format_shape(x) for x in xs)
        )
    if not 0 <= axis < ndim:
        raise IndexOutOfBoundsError(
            f"axis {axis} is out of bounds for an array of dimension {ndim}"
        )
    out = list(xs[0])
    for x in xs[1:]:
        for i, d in enumerate(x):
            if i == axis:
                continue
            if isinstance(out[i], int) and isinstance(d, int) and out[i] != d:
                raise ShapeError(
                    f"all the input array dimensions except for the concatenation axis must "
                    f"match exactly, but along dimension {i} they differ: "
                    + ", ".join(sh.format_shape(x) for x in xs)
                )
            sh.require_equal(out[i], d, "concat")
    dims = [x[axis] for x in xs]
    out[axis] = sum(dims) if all(isinstance(d, int) for d in dims) else sh.Dim()
    return tuple(out)


def _concat(xp, *xs, out=None, axis):
    result = xp.concatenate(xs, axis=axis, out=out)
    if out is None and not result.flags.c_contiguous:  # (NumPy keeps inputs' Fortran order)
        return xp.ascontiguousarray(result)  # a program's values are C-ordered
    return result


def _concat_vjp(ct, y, *xs, axis):
    sizes = [x.shape[axis] for x in xs]
    if not all(isinstance(n, int) for n in sizes):
        raise ShapeError("the gradient of concat needs static sizes along the joined axis")
    out, start = [], 0
    for n in sizes:
        spec = (("slice", None, None, None),) * axis + (("slice", start, start + n, None),)
        out.append(apply("index", ct, spec=spec))
        start += n
    return tuple(out)


def _concat_batch(args, batched, *, axis):
    n = batch_size(args, batched)
    args = [a if b else unbatched_to(a, n) for a, b in zip(args, batched)]
    return apply("concat", *args, axis=axis + 1)


concat = defop(
    "concat", _concat_shape, lambda *ds, axis: dt.promote(*ds), _concat, vjp=_concat_vjp,
    batch=_concat_batch,
    tags={"complex_linear"},
)  # fmt: skip


def _pad_shape(x, *, pad_width, value):
    if len(pad_width) != len(x) or any(b < 0 or a < 0 for b, a in pad_width):
        raise ShapeError(
            f"pad_width {pad_width} needs one non-negative (before, after) pair per dim "
            f"of {sh.format_shape(x)}"
        )
    return tuple(
        d + b + a if isinstance(d, int) else (d if b == a == 0 else sh.Dim())
        for d, (b, a) in zip(x, pad_width)
    )


def _pad(xp, x, out=None, *, pad_width, value):
    if out is None:
        return xp.pad(x, pad_width, constant_values=value)
    out.fill(value)
    out[tuple(slice(b, b + d) for (b, _), d in zip(pad_width, x.shape))] = x
    return out


def _pad_vjp(ct, y, x, *, pad_width, value):
    spec = tuple(("slice", b, -a if a else None, None) for b, a in pad_width)
    if all(b == 0 and a == 0 for b, a in pad_width):
        return (ct,)
    crop = apply("reshape", apply("index", ct, spec=spec), shape=x.shape)
    # a copy of the crop, as PyTorch's gradient: a view of `ct` would give `x.grad` the padded
    # strides (`x.grad.view(n, -1)` then raises)
    return (apply("cast", crop, dtype=crop.dtype),)


pad = defop(
    "pad", _pad_shape, same_dtype, _pad, vjp=_pad_vjp,
    batch=lambda args, batched, pad_width, value: apply(
        "pad", args[0], pad_width=((0, 0), *pad_width), value=value
    ),
    tags={"complex_linear"},
)  # fmt: skip


def _tile_shape(x, *, reps):
    if any(r < 0 for r in reps):
        raise ShapeError(f"negative reps {reps}")
    n = max(len(x), len(reps))
    x = (1,) * (n - len(x)) + tuple(x)
    reps = (1,) * (n - len(reps)) + tuple(reps)
    return tuple(d * r for d, r in zip(x, reps))


def _tile(xp, x, out=None, *, reps):
    return _copy_into(out, xp.tile(x, reps))


def _tile_vjp(ct, y, x, *, reps):
    n = max(x.ndim, len(reps))
    dims = (1,) * (n - x.ndim) + tuple(x.shape)
    reps = (1,) * (n - len(reps)) + tuple(reps)
    split = tuple(v for r, d in zip(reps, dims) for v in (r, d))
    summed = apply("reduce_sum", apply("reshape", ct, shape=split),
                   axes=tuple(range(0, 2 * n, 2)), keepdims=False)  # fmt: skip
    return (apply("reshape", summed, shape=x.shape),)


def _tile_batch(args, batched, *, reps):
    """vmap of tile: the example's rank raised to the reps' (tile's leading 1s) after the
    batch axis, which tiles once."""
    x = args[0]
    rank = max(x.ndim - 1, len(reps))
    if x.ndim - 1 < rank:
        x = apply("reshape", x, shape=(x.shape[0], *(1,) * (rank - x.ndim + 1), *x.shape[1:]))
    return apply("tile", x, reps=(1, *(1,) * (rank - len(reps)), *reps))


tile = defop(
    "tile", _tile_shape, same_dtype, _tile, vjp=_tile_vjp, tags={"complex_linear"},
    batch=_tile_batch,
)  # fmt: skip


def _one_hot_dtype(ids, *, depth, dtype):
    _int_indices(ids)
    return dt.as_dtype(dtype)


def _one_hot_shape(ids, *, depth, dtype):
    if isinstance(depth, int) and depth < 0:  # else a dim the run binds (>= 0)
        raise ShapeError(f"one_hot depth must be >= 0, got {depth}")
    return (*ids, depth)


def _check_classes(ids, depth):
    """PyTorch's one_hot checks: every id is a class in [0, depth)."""
    if _in_range(ids, depth):
        return
    low, high = int(ids.min()), int(ids.max())
    if low < 0:
        raise out_of_range("one_hot", f"Class values must be non-negative, got {low}")
    if high >= depth:
        raise out_of_range(
            "one_hot", f"Class values must be smaller than num_classes ({depth}), got {high}"
        )


def _one_hot(xp, ids, out=None, *, depth, dtype):
    _check_classes(ids, depth)
    hot = xp.expand_dims(ids, -1) == xp.arange(depth)
    if out is None:
        return hot.astype(dtype)
    xp.copyto(out, hot, casting="unsafe")
    return out


one_hot = defop(
    "one_hot", _one_hot_shape, _one_hot_dtype, _one_hot,
    may_fail=True,  # ids out of range
    # (per id: a batch of ids gives the batch of their rows)
    batch=lambda args, batched, depth, dtype: apply("one_hot", args[0], depth=depth, dtype=dtype),
)  # fmt: skip
