"""PyTorch's counting and placing functions. Those whose result's length depends on the data
(`unique`, `unique_consecutive`, `bincount`, `argwhere`) compute eagerly on the host; in a
graph (and under kn.compile) they are built from the `nonzero` and `arange_of` ops, whose
lengths are dims the run binds (kiln/ops/dynamic.py), and ops of static shapes. Those of a
static shape (`histc`, `histogram`, `nonzero_static`, `masked_scatter`, `put`) are kiln ops,
so they trace and compile, with gradients."""

from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from .. import shapes as sh
from ..array_types import return_types
from ..errors import (
    ArgumentTypeError,
    DTypeMismatchError,
    IndexOutOfBoundsError,
    IndexOutOfRangeError,
    ShapeError,
    ShapeMismatchError,
    UnsupportedDTypeError,
    UsageError,
    call_error,
)
from ..graph.core import Symbol
from ..ops.sort import sortable
from . import math as m
from . import shape as s
from . import torch_index as ti
from . import torch_math as tm
from .core import call, lift
from .out import takes_out
from .result_layouts import c_ordered, preserved
from .torch_index import _host, _like
from .torch_shape import _arange_along

__all__ = [
    "argwhere",
    "bincount",
    "histc",
    "histogram",
    "masked_scatter",
    "nonzero_static",
    "put",
    "unique",
    "unique_consecutive",
]


def unique(
    input,  # noqa: A002 -- PyTorch's argument names
    sorted: bool = True,  # noqa: A002
    return_inverse: bool = False,
    return_counts: bool = False,
    dim=None,
):
    """The distinct elements, sorted (of the flattened input, or the distinct slices along
    `dim`), with where each element went (`return_inverse`) and how often each occurs
    (`return_counts`). In a graph the length is a dim the run binds. NaNs stay distinct.

    >>> import kiln as kn
    >>> kn.unique(kn.tensor([3, 1, 2, 3, 1]), return_inverse=True, return_counts=True)
    (tensor([1, 2, 3]), tensor([2, 0, 1, 2, 0]), tensor([2, 1, 2]))
    """
    (x,) = lift(input)
    _no_complex(x, "unique")
    _well_formed(x, dim, "unique")
    if isinstance(x, Symbol):
        return _select(_unique_graph(x, dim, sort=True), return_inverse, return_counts)
    host = sortable(_host(x))  # bfloat16 through float32, which NumPy sorts with its NaNs
    if dim is None:
        out, inverse, counts = np.unique(
            host.reshape(-1), return_inverse=True, return_counts=True, equal_nan=False
        )
        inverse = inverse.reshape(host.shape)
    else:
        dim = sh.normalize_axis(dim, max(host.ndim, 1))
        out, inverse, counts = np.unique(
            host, return_inverse=True, return_counts=True, axis=dim, equal_nan=False
        )
        inverse = inverse.reshape(-1)
    return _results(x, out, inverse, counts, return_inverse, return_counts)


def _no_complex(x, op):
    """Complex values have no order: PyTorch's `unique` kernels refuse them
    (NotImplementedError, as UnsupportedDTypeError is), and so does kiln."""
    if dt.is_complex(x.dtype):
        raise call_error(UnsupportedDTypeError, f"{op} does not support complex dtype {x.dtype}",
                         op, x)  # fmt: skip


def _well_formed(x, dim, op):
    """PyTorch's refusals of slices along `dim` of a 0-d `x` (IndexError) or of an empty one
    (RuntimeError): one dim of size 0 at most, and that one `dim` (the slices are then
    distinct: none, or all empty)."""
    if dim is not None and x.ndim == 0:
        message = f"Dimension specified as {dim} but tensor has no dimensions"
        raise call_error(IndexOutOfBoundsError, message, op, x)
    if dim is None or 0 not in tuple(x.shape):
        return
    if tuple(x.shape).count(0) > 1:
        message = "Number of zero sized dimensions is more than one, so unique cannot be applied"
        raise call_error(ShapeError, message, op, x)
    if x.shape[sh.normalize_axis(dim, x.ndim)] != 0:
        message = (
            "There are 0 sized dimensions, and they aren't selected, so unique cannot be applied"
        )
        raise call_error(ShapeError, message, op, x)


def _results(x, out, inverse, counts, return_inverse, return_counts):
    results = [_like(x, np.array(out, x.dtype, order="C"))]
    if return_inverse:
        results.append(_like(x, np.array(inverse, np.int64, order="C")))
    if return_counts:
        results.append(_like(x, np.array(counts, np.int64, order="C")))
    return results[0] if len(results) == 1 else tuple(results)


def unique_consecutive(
    input,  # noqa: A002
    return_inverse: bool = False,
    return_counts: bool = False,
    dim=None,
):
    """Each run of equal consecutive elements (or slices along `dim`) kept once (in a graph,
    as many as the run finds: a dim it binds).

    >>> import kiln as kn
    >>> kn.unique_consecutive(kn.tensor([1, 1, 2, 2, 3, 1, 1]), return_counts=True)
    (tensor([1, 2, 3, 1]), tensor([2, 2, 1, 2]))
    """
    (x,) = lift(input)
    _no_complex(x, "unique_consecutive")
    _well_formed(x, dim, "unique_consecutive")
    if isinstance(x, Symbol):
        return _select(_unique_graph(x, dim, sort=False), return_inverse, return_counts)
    host = _host(x)
    flat = dim is None
    if flat:
        host, dim = host.reshape(-1), 0
    dim = sh.normalize_axis(dim, host.ndim)
    moved = np.moveaxis(host, dim, 0)
    moved = moved.reshape(moved.shape[0], moved[:1].size)  # (-1 cannot size an empty one)
    starts = np.ones(moved.shape[0], bool)
    starts[1:] = np.any(moved[1:] != moved[:-1], axis=1)
    first = np.flatnonzero(starts)
    out = np.take(host, first, axis=dim)
    inverse = np.cumsum(starts) - 1
    counts = np.diff(np.append(first, moved.shape[0]))
    if flat:  # PyTorch: the inverse has the input's shape when no dim is given
        inverse = inverse.reshape(np.shape(_host(x)))
    return _results(x, out, inverse, counts, return_inverse, return_counts)


def bincount(input, weights=None, minlength: int = 0):  # noqa: A002
    """How often each value 0, 1, … occurs in the 1-D non-negative integer `input` (with
    `weights`: their sums), at least `minlength` long (in a graph: a dim the run binds).

    >>> import kiln as kn
    >>> kn.bincount(kn.tensor([0, 1, 1, 3])), kn.bincount(kn.tensor([1]), minlength=3)
    (tensor([1, 2, 0, 1]), tensor([0, 1, 0]))
    """
    (x,) = lift(input)
    w = None if weights is None else lift(weights, context=(x,))[0]
    if not dt.is_int(x.dtype) or x.dtype == np.bool_:
        raise call_error(
            UnsupportedDTypeError,
            f'"bincount_cpu" not implemented for {dt.type_name(x.dtype)}',
            "bincount",
            x,
        )
    if x.ndim != 1 or not isinstance(x, Symbol) and (_host(x).size and _host(x).min() < 0):
        raise call_error(
            ShapeMismatchError,
            "bincount only supports 1-d non-negative integral inputs.",
            "bincount",
            x,
        )
    if minlength < 0:
        raise call_error(ShapeMismatchError, "minlength should be >= 0", "bincount", x)
    if isinstance(x, Symbol) or isinstance(w, Symbol):
        return _bincount_graph(x, w, minlength)
    host = _host(x)
    if w is None:
        return _like(x, np.bincount(host, minlength=minlength).astype(np.int64))
    wh = _host(w)
    if wh.shape != host.shape:
        raise call_error(
            ShapeMismatchError,
            "weights should be 1-d and have the same length as input",
            "bincount",
            x,
            w,
        )
    dtype = np.float32 if wh.dtype == np.float32 else np.float64
    return _like(x, np.bincount(host, wh.astype(np.float64), minlength).astype(dtype))


def argwhere(input):  # noqa: A002
    """The indices of the nonzero elements, one row each (`nonzero(input)`).

    >>> import kiln as kn
    >>> kn.argwhere(kn.tensor([[0, 1], [2, 0]]))
    tensor([[0, 1],
            [1, 0]])
    """
    (x,) = lift(input)
    return ti.nonzero(x)


def _select(results, return_inverse, return_counts):
    values, inverse, counts = results
    picked = [values, *([inverse] if return_inverse else []), *([counts] if return_counts else [])]
    return picked[0] if len(picked) == 1 else tuple(picked)


def _unique_graph(x, dim, sort: bool):
    """(values, inverse, counts) of `unique` (`sort`) or `unique_consecutive` of graph value
    `x`: the runs of equal elements (or slices along `dim`) of x, sorted first when `sort`
    (slices lexicographically: a stable sort by each column, the last first), found by
    `nonzero` of where each run starts; their count is a dim the run binds."""
    flat = dim is None
    if flat:
        dim, rows = 0, s.reshape(x, (-1,))
    else:
        dim = sh.normalize_axis(dim, max(x.ndim, 1))
        perm = (dim, *(d for d in range(x.ndim) if d != dim))
        moved = call("transpose", x, perm=perm) if x.ndim else s.reshape(x, (1,))
        rows = s.reshape(moved, (moved.shape[0], sh.dim_product(moved.shape[1:])))
    n = rows.shape[0]
    if isinstance(n, int) and n == 0:  # nothing to find: empty results of static shapes
        none = _const(np.zeros(0, np.int64), x)
        if flat:
            return s.reshape(x, (0,)), m.cast(x, dt.int64), none
        return s.reshape(x, tuple(x.shape)), none, none
    order = None
    if sort:
        keys = s.reshape(rows, (n, 1)) if rows.ndim == 1 else rows
        width = keys.shape[1]
        if not isinstance(width, int):
            why = (
                f"unique along a dim of slices of a symbolic size ({width}): give them static sizes"
            )
            raise call_error(ShapeMismatchError, why, "unique", x)
        order = _const(np.arange(n, dtype=np.int64), x) if isinstance(n, int) else None
        for c in reversed(range(width)):  # a stable sort by each column: lexicographic
            column = s.getitem(keys, (slice(None), c))
            if order is not None:
                column = s.gather(column, order, 0)
            step = tm.argsort(column, 0, stable=True)
            order = step if order is None else s.gather(order, step, 0)
        rows = s.gather(rows, order, 0)
    # where a run starts: the first row, and each row unlike the one before
    position = _arange_along(rows)
    before = s.gather(rows, m.maximum(m.sub(position, 1), 0), 0)
    differ = m.not_equal(rows, before)
    if rows.ndim > 1:
        differ = m.any(differ, 1)
    starts = m.logical_or(differ, m.equal(position, 0))
    first = ti.nonzero_columns(starts)[0]
    group = m.sub(tm.cumsum(m.cast(starts, dt.int64), 0), 1)  # each row's run
    if order is not None:  # back to the input's order
        group = s.gather(group, tm.argsort(order, 0, stable=True), 0)
    counts = ti.scatter_add(m.mul(first, 0), 0, group, m.cast(m.greater_equal(group, 0), dt.int64))
    if flat:
        values = s.gather(rows, first, 0)
        group = s.reshape(group, tuple(x.shape))
    else:
        picked = first if order is None else s.gather(order, first, 0)
        values = s.gather(x, picked, dim) if x.ndim else s.reshape(x, (1,))
    return values, group, counts


def _bincount_graph(x, w, minlength: int):
    """`bincount` of graph value `x`: its length, max(x) + 1 or `minlength`, is a dim the run
    binds (`arange_of`); the counts (sums of `w`) are a scatter-add into zeros of it."""
    # -1 where x is empty (in int64: a uint8 x has no -1)
    wide = m.cast(x, dt.int64)
    top = m.amax(s.concat([wide, _const(np.array([-1], np.int64), x)], 0))
    length = m.maximum(m.add(top, 1), np.int64(minlength))
    bins = call("arange_of", length, count=sh.Dim())
    idx = m.cast(x, dt.int64)
    if w is None:
        return ti.scatter_add(m.mul(bins, 0), 0, idx, m.cast(m.greater_equal(idx, 0), dt.int64))
    if w.ndim != 1 or sh.broadcast_shapes(tuple(w.shape), tuple(x.shape)) != tuple(x.shape):
        why = "weights should be 1-d and have the same length as input"
        raise call_error(ShapeMismatchError, why, "bincount", x, w)
    dtype = np.dtype(np.float32) if w.dtype == np.float32 else np.dtype(np.float64)
    zeros = m.cast(m.mul(bins, 0), dtype)
    return ti.scatter_add(zeros, 0, idx, m.cast(w, dtype))


def nonzero_static(input, *, size: int, fill_value: int = -1):  # noqa: A002
    """`nonzero(input)` cut or padded with `fill_value` to `size` rows: a static shape, so it
    traces and compiles.

    >>> import kiln as kn
    >>> kn.nonzero_static(kn.tensor([[0, 1], [2, 0]]), size=3)
    tensor([[ 0,  1],
            [ 1,  0],
            [-1, -1]])
    """
    (x,) = lift(input)
    shape = tuple(x.shape)
    flat = s.reshape(m.not_equal(x, 0), (-1,))
    n = sh.dim_product(shape) if shape else 1
    # a stable sort puts the nonzero positions first, in order
    order = tm.argsort(m.cast(m.logical_not(flat), dt.int8), 0, stable=True)
    kept = min(size, n)
    first = s.getitem(order, slice(0, kept))
    if size > kept:
        first = s.concat([first, _const(np.zeros(size - kept, np.int64), x)], 0)
    coords = [
        m.mod(m.floordiv(first, int(np.prod(shape[d + 1 :], dtype=np.int64))), shape[d])
        for d in range(len(shape))
    ]
    cols = s.stack(coords, 1) if coords else _const(np.zeros((size, 0), np.int64), x)
    count = m.sum(m.cast(flat, dt.int64))
    rows = _const(np.arange(size, dtype=np.int64).reshape(size, 1), x)
    return m.where(m.less(rows, count), cols, np.int64(fill_value))


def _const(array: np.ndarray, like):
    """`array` as an operand beside `like` (a constant of its graph, or an array)."""
    return lift(array, context=(like,))[0]


def _float_only(op: str, x):
    if not dt.is_float(x.dtype):
        why = f"\"histogram_cpu\" not implemented for '{dt.scalar_name(x.dtype)}'"
        raise call_error(UnsupportedDTypeError, why, op, x)


def _data_range(flat, lo: float, hi: float, widen: float, why: str, given: bool = True):
    """The histogram's range: `(lo, hi)`, or the data's least and greatest values where both
    are equal (PyTorch's default 0, 0), widened by `widen` each way where those are equal;
    of no data, (0, 1) where no range was `given`. A range that is not finite raises
    RuntimeError (`why` begins the message), as PyTorch's: given, or of eager data (a
    trace cannot refuse its data's)."""
    if lo != hi:
        _check_finite(lo, hi, why, flat)
        return lo, hi
    if flat.shape[0] == 0:
        return (lo - widen, hi + widen) if given else (0.0, 1.0)
    _check_finite(lo, hi, why, flat)
    lo, hi = m.amin(flat), m.amax(flat)
    if not isinstance(lo, Symbol):  # eager data: its range is known now
        _check_finite(lo.item(), hi.item(), why, flat)
    same = m.equal(lo, hi)
    return m.where(same, m.sub(lo, widen), lo), m.where(same, m.add(hi, widen), hi)


def _same_dtype(x, other, what: str) -> None:
    """PyTorch's refusal (RuntimeError) of histogram's bins or weight of another dtype."""
    if other.dtype != x.dtype:
        raise call_error(DTypeMismatchError, f"torch.histogramdd: input tensor and {what} "
                         "should have the same dtype", "histogram", x, other)  # fmt: skip


def _bounds(range, k: int, x) -> tuple:  # noqa: A002
    """The (min, max) of dim `k` in a histogram's flat `range`, which PyTorch refuses with
    min above max (RuntimeError)."""
    lo, hi = float(range[2 * k]), float(range[2 * k + 1])
    if lo > hi:
        raise call_error(UsageError, f"torch.histogramdd: min should not exceed max, but got min "
                         f"{lo:g} max {hi:g} for dimension {k}", "histogram", x)  # fmt: skip
    return lo, hi


def _check_finite(lo: float, hi: float, why: str, x) -> None:
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise call_error(UsageError, f"{why} [{lo:g}, {hi:g}] is not finite", "histogram", x)


def _count(pos, weight, bins: int, x):
    """The sums of `weight` (ones where None) at the positions `pos` in 0..bins (bins: the
    elements left out), without the last."""
    ones = m.cast(m.greater_equal(pos, 0), x.dtype) if weight is None else weight
    total = ti.scatter_add(_const(np.zeros(bins + 1, x.dtype), x), 0, pos, ones)
    return s.getitem(total, slice(0, bins))


@takes_out
def histc(input, bins: int = 100, min=0, max=0):  # noqa: A002
    """The counts of the elements in `bins` equal bins from `min` to `max` (from the least to
    the greatest element where both are 0); elements outside are left out, `max` goes to the
    last bin. A static shape: it traces and compiles.

    >>> import kiln as kn
    >>> kn.histc(kn.tensor([1.0, 2.0, 1.0]), bins=4, min=0, max=3)
    tensor([0., 2., 1., 0.])
    """
    (x,) = lift(input)
    _float_only("histc", x)
    if bins <= 0:
        raise call_error(ShapeMismatchError, "torch.histc: bins must be > 0", "histc", x)
    lo, hi = float(min), float(max)
    if lo > hi:
        raise call_error(ShapeMismatchError, "torch.histc: max must be larger than min", "histc", x)
    flat = s.reshape(x, (-1,))
    lo, hi = _data_range(flat, lo, hi, 1.0, "torch.histc: range of")
    inside = m.logical_and(m.greater_equal(flat, lo), m.less_equal(flat, hi))  # NaN: outside
    # PyTorch's bin: trunc((x - lo) * bins / (hi - lo)) in x's dtype, max in the last bin
    safe = m.where(inside, flat, lo)
    at = m.div(m.mul(m.sub(safe, lo), bins), m.sub(hi, lo))
    # a range that widening by 1 leaves empty (values so large that v +- 1 rounds to v): no
    # bin is computed (0 / 0); the middle one, where the widened range puts the value
    at = m.where(m.isfinite(at), at, bins // 2)
    pos = m.where(inside, m.minimum(m.cast(at, dt.int64), bins - 1), bins)
    return _count(pos, None, bins, x)


@takes_out
def histogram(input, bins=100, *, range=None, weight=None, density: bool = False):  # noqa: A002
    """The histogram of `input`: `bins` equal bins over `range` (default: the data's), or the
    bin edges `bins` (a 1-D increasing tensor); with `weight`, the sums of the weights; with
    `density`, normalized to integrate to 1. Returns `(hist, bin_edges)`. Static shapes.

    >>> import kiln as kn
    >>> kn.histogram(kn.tensor([1.0, 2.0, 1.0]), bins=4, range=(0.0, 3.0)).hist
    tensor([0., 2., 1., 0.])
    """
    (x,) = lift(input)
    _float_only("histogram", x)
    flat = s.reshape(x, (-1,))
    w = None if weight is None else s.reshape(lift(weight, context=(x,))[0], (-1,))
    if isinstance(bins, (int, np.integer)):
        n = int(bins)
        lo, hi = (0.0, 0.0) if range is None else _bounds(range, 0, x)
        lo, hi = _data_range(flat, lo, hi, 0.5, "torch.histogramdd: dimension 0's range",
                             given=range is not None)  # fmt: skip
        from .torch_numeric import _linspace  # NOTE: lazy (it imports this module)

        edges = _linspace(lo, hi, n, x)  # as PyTorch's linspace makes them, as histogramdd's
        if isinstance(edges, np.ndarray):  # a given range: computed from constants alone
            edges = _like(x, edges)
    else:
        if range is not None:  # (PyTorch's overload with bin edges takes no range)
            raise ArgumentTypeError("histogram() received an invalid combination of arguments: "
                                    "bin edges (a tensor) and range=")  # fmt: skip
        (edges,) = lift(bins, context=(x,))
        _same_dtype(x, edges, "bins tensors")
        if edges.ndim != 1 or edges.shape[0] == 0:
            why = "bins tensor should have one dimension" if edges.ndim != 1 else (
                "bins tensor should have at least 1 element")  # fmt: skip
            raise call_error(ShapeMismatchError, f"torch.histogram(): {why}", "histogram", x)
        n = edges.shape[0] - 1
    if w is not None:
        _same_dtype(x, w, "weight tensor")
    first, last = s.getitem(edges, 0), s.getitem(edges, -1)
    inside = m.logical_and(m.greater_equal(flat, first), m.less_equal(flat, last))
    # the bin whose edges hold x: the number of inner edges at most x
    inner = s.getitem(edges, slice(1, n))
    pos = m.sum(m.cast(m.less_equal(s.unsqueeze(inner, 0), s.unsqueeze(flat, 1)), dt.int64), 1)
    pos = m.where(inside, pos, n)
    hist = _count(pos, w, n, x if w is None else w)
    if density:
        widths = m.sub(s.getitem(edges, slice(1, None)), s.getitem(edges, slice(0, n)))
        hist = m.div(hist, m.mul(m.sum(hist), widths))
    return return_types.histogram(hist, edges)


def masked_scatter(input, mask, source):  # noqa: A002
    """`input` with the elements where `mask` holds (the two broadcast together) replaced by
    the first elements of `source`, in order. Gradients reach input and source.

    >>> import kiln as kn
    >>> kn.masked_scatter(kn.tensor([1, 2, 3, 4]), kn.tensor([True, False, True, False]),
    ...                   kn.tensor([10, 20, 30]))
    tensor([10,  2, 20,  4])
    """
    x, mask, src = lift(input, mask, source)
    if mask.dtype != np.bool_:
        why = f"masked_scatter_ only supports boolean masks, but got mask with dtype {mask.dtype}"
        raise call_error(ShapeMismatchError, why, "masked_scatter", x, mask)
    if src.dtype != x.dtype:  # (torch 2.13's message, its missing space kept)
        a, b = dt.scalar_name(x.dtype), dt.scalar_name(src.dtype)
        why = f"masked_scatter: expected self and source to have same dtypes but got{a} and {b}"
        raise call_error(DTypeMismatchError, why, "masked_scatter", x, src)
    why = (
        f"masked_scatter: the mask {sh.format_shape(mask.shape)} and the input "
        f"{sh.format_shape(x.shape)} do not broadcast together"
    )
    try:  # PyTorch's: the two broadcast (the in-place form checks the result's shape)
        shape = sh.broadcast_shapes(tuple(mask.shape), tuple(x.shape))
    except ShapeError:
        raise call_error(ShapeMismatchError, why, "masked_scatter", x, mask) from None
    x, mask = s.broadcast_to(x, shape), s.broadcast_to(mask, shape)
    n_src = sh.dim_product(tuple(src.shape)) if src.ndim else 1
    if not isinstance(mask, Symbol) and not isinstance(src, Symbol):
        if int(np.count_nonzero(_host(mask))) > n_src:
            raise call_error(
                ShapeMismatchError,
                "Number of elements of source < number of ones in mask",
                "masked_scatter",
                x,
                mask,
                src,
            )
    flat_mask = s.reshape(mask, (-1,))
    taken = m.sub(tm.cumsum(m.cast(flat_mask, dt.int64), 0), 1)  # the source element of each
    # (no upper clamp: a compiled call whose mask holds more elements than source has fails
    # in the gather, as eager calls fail above)
    taken = m.maximum(taken, 0)
    flat_src = s.reshape(src, (-1,))
    if isinstance(n_src, int) and n_src == 0:  # an empty source: nothing is taken from it
        (flat_src,) = lift(np.zeros(1, dt.as_dtype(x.dtype)), context=(x,))
    values = s.gather(flat_src, taken, 0)
    return c_ordered(m.where(mask, s.reshape(values, shape), x))  # (PyTorch's: C order)


def put(input, index, source, accumulate: bool = False):  # noqa: A002
    """`input`, seen flat, with `source` written (or, with `accumulate`, added) at `index`;
    negative indices count from the end. Gradients reach input and source.

    >>> import kiln as kn
    >>> kn.tensor([[1, 2], [3, 4]]).put(kn.tensor([0, 3]), kn.tensor([9, 8]))
    tensor([[9, 2],
            [3, 8]])
    """
    x, idx, src = lift(input, index, source)
    ti.check_long_index("put_", x, idx)
    if src.dtype != x.dtype:  # (torch 2.13's messages and classes)
        a, b = dt.scalar_name(x.dtype), dt.scalar_name(src.dtype)
        why = ("put_(): self and source expected to have the same dtype, but got "
               f"self.dtype = {a} and source.dtype = {b}")  # fmt: skip
        raise call_error(DTypeMismatchError, why, "put", x, src)
    counts = (sh.dim_product(tuple(src.shape)), sh.dim_product(tuple(idx.shape)))
    if all(isinstance(c, int) for c in counts) and counts[0] != counts[1]:
        why = ("put_(): Expected source and index to have the same number of elements, but got "
               f"source.numel() = {counts[0]}, index.numel() = {counts[1]}")  # fmt: skip
        raise call_error(IndexOutOfBoundsError, why, "put", idx, src)
    n = sh.dim_product(tuple(x.shape)) if x.ndim else 1
    if not isinstance(idx, Symbol):
        host = _host(idx)
        if host.size and (host.max() >= n or host.min() < -n):
            bad = host[(host >= n) | (host < -n)][0]
            raise call_error(
                IndexOutOfRangeError,
                f"out of range: tried to access index {bad} on a tensor of {n} elements.",
                "put",
                x,
                idx,
            )
    # (negative indices count from the end in index_put, which refuses those before -n: a
    # compiled call's indices are checked there)
    flat_idx = s.reshape(idx, (-1,))
    flat = s.reshape(x, (n,))
    values = s.reshape(m.cast(src, x.dtype), (-1,))
    from .indexing import index_put

    out = s.reshape(index_put(flat, (flat_idx,), values, accumulate), tuple(x.shape))
    return preserved(out, x)  # (PyTorch's put: a clone of x, laid out as x)
