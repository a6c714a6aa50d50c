"""Movement: reshape, transpose, broadcast, indexing, gather, concat, pad, tile, one_hot."""

from __future__ import annotations

from .. import dtypes as dt
from .. import shapes as sh
from ..errors import DTypeError, ShapeError
from .core import defop, same_dtype


def _copy_into(out, value):
    if out is None:
        return value
    out[...] = value
    return out


# -- views -----------------------------------------------------------------------------------


def _reshape(xp, x, out=None, *, shape):
    return _copy_into(out, xp.reshape(x, shape))


reshape = defop(
    "reshape", lambda x, shape: sh.reshape_shape(x, shape), same_dtype, _reshape, tags={"view"}
)


def _transpose_shape(x, *, perm):
    if sorted(perm) != list(range(len(x))):
        raise ShapeError(f"axes {perm} don't match array of dimension {len(x)}")
    return tuple(x[p] for p in perm)


def _transpose(xp, x, out=None, *, perm):
    return _copy_into(out, xp.transpose(x, perm))


transpose = defop("transpose", _transpose_shape, same_dtype, _transpose, tags={"view"})


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
            sh.require_equal(d, t, "broadcast_to")
    return tuple(shape)


def _broadcast_to(xp, x, out=None, *, shape):
    return _copy_into(out, xp.broadcast_to(x, shape))


broadcast_to = defop("broadcast_to", _broadcast_to_shape, same_dtype, _broadcast_to, tags={"view"})


# -- basic indexing: spec items are ("int", i), ("slice", start, stop, step), ("newaxis",) ----


def _index_shape(x, *, spec):
    consumed = sum(1 for item in spec if item[0] != "newaxis")
    if consumed > len(x):
        raise ShapeError(
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
                raise ShapeError(f"index {item[1]} is out of bounds for axis {axis} with size {d}")
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
    return _copy_into(out, x[index_tuple(spec)])


index = defop("index", _index_shape, same_dtype, _index, tags={"view"})


def _int_indices(idx):
    if not dt.is_int(idx):
        raise DTypeError(f"indices must be integers, got {idx}")


def _gather_shape(x, idx, *, axis):
    if not x:
        raise ShapeError("cannot gather from a 0-d array")
    if not 0 <= axis < len(x):
        raise ShapeError(f"axis {axis} is out of bounds for an array of dimension {len(x)}")
    if x[axis] == 0 and sh.size(idx) != 0:
        raise ShapeError(f"cannot gather from axis {axis} of size 0")
    return (*x[:axis], *idx, *x[axis + 1 :])


def _gather_dtype(x, idx, *, axis):
    _int_indices(idx)
    return x


def _gather(xp, x, idx, out=None, *, axis):
    return xp.take(x, idx, axis=axis, out=out)


gather = defop("gather", _gather_shape, _gather_dtype, _gather)


def _take_along_shape(x, idx, *, axis):
    if len(x) != len(idx):
        raise ShapeError(
            f"take_along_axis: indices {sh.format_shape(idx)} and array {sh.format_shape(x)} "
            "must have the same number of dims"
        )
    if not 0 <= axis < len(x):
        raise ShapeError(f"axis {axis} is out of bounds for an array of dimension {len(x)}")
    rest = sh.broadcast_shapes(
        x[:axis] + x[axis + 1 :], idx[:axis] + idx[axis + 1 :], why="take_along_axis"
    )
    return (*rest[:axis], idx[axis], *rest[axis:])


def _take_along(xp, x, idx, out=None, *, axis):
    return _copy_into(out, xp.take_along_axis(x, idx, axis=axis))


take_along_axis = defop("take_along_axis", _take_along_shape, _gather_dtype, _take_along)

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
        raise ShapeError(f"axis {axis} is out of bounds for an array of dimension {ndim}")
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
    return xp.concatenate(xs, axis=axis, out=out)


concat = defop("concat", _concat_shape, lambda *ds, axis: dt.promote(*ds), _concat)


def _pad_shape(x, *, pad_width, value):
    if len(pad_width) != len(x) or any(b < 0 or a < 0 for b, a in pad_width):
        raise ShapeError(
            f"pad_width {pad_width} needs one non-negative (before, after) pair per dim "
            f"of {sh.format_shape(x)}"
        )
    return tuple(d + b + a for d, (b, a) in zip(x, pad_width))


def _pad(xp, x, out=None, *, pad_width, value):
    if out is None:
        return xp.pad(x, pad_width, constant_values=value)
    out.fill(value)
    out[tuple(slice(b, b + d) for (b, _), d in zip(pad_width, x.shape))] = x
    return out


pad = defop("pad", _pad_shape, same_dtype, _pad)


def _tile_shape(x, *, reps):
    if any(r < 0 for r in reps):
        raise ShapeError(f"negative reps {reps}")
    n = max(len(x), len(reps))
    x = (1,) * (n - len(x)) + tuple(x)
    reps = (1,) * (n - len(reps)) + tuple(reps)
    return tuple(d * r for d, r in zip(x, reps))


def _tile(xp, x, out=None, *, reps):
    return _copy_into(out, xp.tile(x, reps))


tile = defop("tile", _tile_shape, same_dtype, _tile)


def _one_hot_dtype(ids, *, depth, dtype):
    _int_indices(ids)
    return dt.as_dtype(dtype)


def _one_hot_shape(ids, *, depth, dtype):
    if depth < 0:
        raise ShapeError(f"one_hot depth must be >= 0, got {depth}")
    return (*ids, depth)


def _one_hot(xp, ids, out=None, *, depth, dtype):
    hot = xp.expand_dims(ids, -1) == xp.arange(depth)
    if out is None:
        return hot.astype(dtype)
    xp.copyto(out, hot, casting="unsafe")
    return out


one_hot = defop("one_hot", _one_hot_shape, _one_hot_dtype, _one_hot)
