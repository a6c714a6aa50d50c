"""PyTorch's joining, splitting, repeating and triangle/diagonal functions (`cat`, `split`,
`repeat`, `flip`, `diagonal`...), as composites of kiln's movement primitives. Each also is
a Tensor and Symbol method where PyTorch has the method."""

from __future__ import annotations

import math

import numpy as np

from .. import shapes as sh
from ..eager.autograd import name_history
from ..eager.tensor import mark_pieces
from ..errors import ArgumentTypeError, ShapeError, UnsupportedDTypeError
from ..graph.core import Symbol
from ..graph.opdef import REGISTRY
from ..ops.multi import elements
from .autocast import autocast_op
from .core import call, lift, promote
from .out import takes_out
from .result_layouts import c_ordered
from .shape import _appended, varargs

__all__ = [
    "cat",
    "chunk",
    "concat",
    "concatenate",
    "diag",
    "diagonal",
    "expand",
    "expand_as",
    "flip",
    "repeat",
    "repeat_interleave",
    "roll",
    "split",
    "stack",
    "tril",
    "triu",
    "unflatten",
    "unfold",
]


def dim_arg(dim, axis, name: str):
    """`dim`, or its alias `axis` when given (PyTorch accepts both names)."""
    return dim if axis is None else axis


def static_dim(x, dim: int, name: str) -> int:
    n = x.shape[dim]
    if not isinstance(n, int):
        raise ShapeError(f"{name} along a symbolic dim ({n}) needs its size; it varies")
    return n


def _slice(x, dim: int, start, stop, step=None):
    spec = (("slice", None, None, None),) * dim + (("slice", start, stop, step),)
    return call("index", x, spec=spec)


def _sizes(sizes) -> tuple:
    """Varargs sizes (`x.expand(2, 3)`) or one sequence (`x.expand((2, 3))`)."""
    return varargs("", sizes, None, "")


def _copy(x):
    """A fresh copy (PyTorch returns copies, not views, there): under kn.compile a Symbol
    too, since a value changed in place retakes its views (kiln/frontend/functionalize.py)."""
    return call("cast", x, dtype=x.dtype)


# -- joining and splitting ---------------------------------------------------------------------


@takes_out
@autocast_op("promote")
def cat(tensors, dim: int = 0, *, axis=None):
    """Joins tensors along an existing dim, promoting their dtypes (PyTorch's `cat`).

    >>> import kiln as kn
    >>> tuple(kn.cat([kn.ones(2, 3), kn.zeros(1, 3)]).shape)
    (3, 3)
    """
    xs = promote(REGISTRY["concat"], *tensors) if tensors else ()  # PyTorch's result_type
    if not xs:
        raise ShapeError("cat expects a non-empty list of tensors")
    dim = dim_arg(dim, axis, "cat")
    # PyTorch's rule: a 1-D tensor of size 0 is left out, whatever the others' shapes
    xs = [x for x in xs if tuple(x.shape) != (0,)] or xs[:1]
    return call("concat", *xs, axis=sh.normalize_axis(dim, xs[0].ndim))


concat = concatenate = cat


@takes_out
@autocast_op("promote")
def stack(tensors, dim: int = 0, *, axis=None):
    """Joins tensors of one shape along a new dim (PyTorch's `stack`).

    >>> import kiln as kn
    >>> tuple(kn.stack([kn.ones(3), kn.zeros(3)], dim=1).shape)
    (3, 2)
    """
    xs = promote(REGISTRY["concat"], *tensors) if tensors else ()  # PyTorch's result_type
    if not xs:
        raise ShapeError("stack expects a non-empty list of tensors")
    if any(x.shape != xs[0].shape for x in xs[1:]):
        raise ShapeError(
            "stack expects each tensor to be equal size, got "
            + ", ".join(sh.format_shape(x.shape) for x in xs)
        )
    given = dim_arg(dim, axis, "stack")  # (PyTorch's node keeps it as given: -1)
    dim = sh.normalize_axis(given, xs[0].ndim + 1)
    if dim < xs[0].ndim and all(type(x.shape[dim]) is int for x in xs):
        # PyTorch's: cat along dim (its layout: channels-last where every input is so), then
        # that dim split in two, a view (a symbolic size there: the joins below, whose
        # gradient needs no static size)
        shape = (*xs[0].shape[:dim], len(xs), *xs[0].shape[dim:])
        out = call("reshape", call("concat", *xs, axis=dim), shape=shape)
        return name_history(out, "StackBackward0", *xs, saved={"_saved_dim": given})
    shape = (*xs[0].shape[:dim], 1, *xs[0].shape[dim:])
    parts = [call("reshape", x, shape=shape) for x in xs]
    if dim == xs[0].ndim:  # (PyTorch's unsqueeze(-1) of each: stride 1 there)
        for p in parts:
            _appended(p)
    out = call("concat", *parts, axis=dim)
    return name_history(out, "StackBackward0", *xs, saved={"_saved_dim": given})


def split(tensor, split_size_or_sections, dim: int = 0, *, axis=None) -> tuple:
    """Pieces of `split_size_or_sections` along `dim` (an int: that size each, the last may be
    smaller; a list: those sizes), as views (PyTorch's `split`).

    >>> import kiln as kn
    >>> [tuple(p.shape) for p in kn.split(kn.zeros(5, 2), 2)]
    [(2, 2), (2, 2), (1, 2)]
    >>> [tuple(p.shape) for p in kn.zeros(5, 2).split([1, 4])]
    [(1, 2), (4, 2)]
    """
    (x,) = lift(tensor)
    if x.ndim == 0:
        raise ShapeError("split expects at least a 1-dimensional tensor")
    given = dim_arg(dim, axis, "split")  # (PyTorch's node keeps it as given: -1)
    dim = sh.normalize_axis(given, x.ndim)
    n = static_dim(x, dim, "split")
    if isinstance(split_size_or_sections, (int, np.integer)):
        size = int(split_size_or_sections)
        if size < 0 or (size == 0 and n):
            raise ShapeError(f"split expects split_size be non-negative, got {size}")
        sizes = [size] * (n // size) + ([n % size] if n % size else []) if size else [0]
    else:
        sizes = [int(s) for s in split_size_or_sections]
        if sum(sizes) != n or any(s < 0 for s in sizes):
            raise ShapeError(
                f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's "
                f"size at dimension {dim}), but got split_sizes={sizes}"
            )
    if isinstance(x, Symbol):  # one node, its pieces views of x (kiln/ops/multi.py)
        attrs = {"axis": dim, "sizes": tuple(sizes)}
        return tuple(elements(call("split", x, **attrs), "split", x, **attrs))
    bounds = np.cumsum([0, *sizes]).tolist()
    pieces = tuple(_slice(x, dim, lo, hi) for lo, hi in zip(bounds[:-1], bounds[1:]))
    saved = {"_saved_dim": given, "_saved_self_sym_sizes": tuple(x.shape)}
    if isinstance(split_size_or_sections, (int, np.integer)):
        saved["_saved_split_size"] = int(split_size_or_sections)
        return mark_pieces(pieces, "Split", saved)
    saved["_saved_split_sizes"] = tuple(sizes)
    return mark_pieces(pieces, "SplitWithSizes", saved)


def split_method(self, split_size, dim: int = 0, *, axis=None) -> tuple:
    """`Tensor.split`: `split` under the method's argument name (`x.split(split_size=2)`).

    >>> import kiln as kn
    >>> [p.tolist() for p in kn.arange(3).split(split_size=2)]
    [[0, 1], [2]]
    """
    return split(self, split_size, dim, axis=axis)


def chunk(input, chunks: int, dim: int = 0, *, axis=None) -> tuple:  # noqa: A002
    """Splits into `chunks` pieces of `ceil(size / chunks)` (fewer if they run out), as
    PyTorch's `chunk`.

    >>> import kiln as kn
    >>> [p.shape[0] for p in kn.chunk(kn.zeros(5), 3)]
    [2, 2, 1]
    """
    if chunks <= 0:
        raise ShapeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    (x,) = lift(input)
    if not x.ndim:
        raise ShapeError("chunk expects at least a 1-dimensional tensor")
    given = dim_arg(dim, axis, "chunk")
    n = static_dim(x, sh.normalize_axis(given, max(x.ndim, 1)), "chunk")
    if not n:  # PyTorch's: `chunks` empty pieces of an empty dim
        return split(x, [0] * chunks, given)
    return split(x, max(math.ceil(n / chunks), 1), given)


# -- repeating and reshaping ---------------------------------------------------------------------


def expand(input, *args, size=None):  # noqa: A002
    """`input` broadcast to `sizes` (-1 keeps a dim), a view (PyTorch's `Tensor.expand`).

    >>> import kiln as kn
    >>> tuple(kn.ones(3, 1).expand(-1, 4).shape)
    (3, 4)
    """
    (x,) = lift(input)
    sizes = varargs("expand", args, size, "size")
    new = len(sizes) - x.ndim
    if new < 0:
        raise ShapeError(
            f"expand: the number of sizes provided ({len(sizes)}) must be greater or equal to "
            f"the number of dimensions in the tensor ({x.ndim})"
        )
    shape = []
    for i, s in enumerate(sizes):
        if isinstance(s, (int, np.integer)) and s == -1:
            if i < new:
                raise ShapeError(f"expand: -1 is not allowed in a leading, non-existing dim {i}")
            s = x.shape[i - new]
        shape.append(s)
    return call("broadcast_to", x, shape=sh.as_shape(shape))


def expand_as(input, other):  # noqa: A002
    """`input` expanded to `other`'s shape.

    >>> import kiln as kn
    >>> tuple(kn.ones(3).expand_as(kn.zeros(2, 3)).shape)
    (2, 3)
    """
    return expand(input, tuple(other.shape))


def unflatten(input, dim: int, sizes):  # noqa: A002
    """Splits dim `dim` into `sizes` (one may be -1), as PyTorch's `unflatten`.

    >>> import kiln as kn
    >>> tuple(kn.zeros(2, 6).unflatten(1, (3, -1)).shape)
    (2, 3, 2)
    """
    (x,) = lift(input)
    dim = sh.normalize_axis(dim, x.ndim)
    sizes = tuple(sizes)
    if not sizes:
        raise ShapeError("unflatten: sizes must be non-empty")
    inner = sh.reshape_shape((x.shape[dim],), sizes)
    return call("reshape", x, shape=(*x.shape[:dim], *inner, *x.shape[dim + 1 :]))


def repeat(input, *args, repeats=None):  # noqa: A002
    """`input` tiled `sizes` times along each dim (PyTorch's `Tensor.repeat`; new leading dims
    when there are more sizes than dims).

    >>> import kiln as kn
    >>> kn.tensor([1, 2]).repeat(2, 2)
    tensor([[1, 2, 1, 2],
            [1, 2, 1, 2]])
    """
    (x,) = lift(input)
    sizes = tuple(int(s) for s in varargs("repeat", args, repeats, "repeats"))
    if len(sizes) < x.ndim:
        raise ShapeError(
            "Number of dimensions of repeat dims can not be smaller than number of dimensions "
            f"of tensor ({len(sizes)} < {x.ndim})"
        )
    if any(s < 0 for s in sizes):
        raise ShapeError(f"repeat: sizes must be non-negative, got {sizes}")
    return call("tile", x, reps=sizes)


def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):  # noqa: A002
    """Each element repeated `repeats` times (an int, or one count per element along `dim`),
    consecutively; `dim=None` flattens first (PyTorch's `repeat_interleave`). Counts the
    graph computes give a length the run binds. `repeat_interleave(counts)`: the indices
    0, 1, … each repeated its count times.

    >>> import kiln as kn
    >>> kn.repeat_interleave(kn.tensor([1, 2]), 2)
    tensor([1, 1, 2, 2])
    >>> kn.tensor([[1, 2], [3, 4]]).repeat_interleave(kn.tensor([1, 2]), dim=0)
    tensor([[1, 2],
            [3, 4],
            [3, 4]])
    """
    from .shape import gather as index_select  # NumPy's take along one dim, indices in range

    (x,) = lift(input)
    if repeats is None:  # the counts alone: repeat their indices
        if x.ndim != 1:
            raise ShapeError(f"repeat_interleave: repeats must be 1-d, got {x.ndim}-d")
        if np.dtype(x.dtype).kind not in "iu":  # (PyTorch's kernel takes int32 and int64)
            raise UnsupportedDTypeError(f'"repeat_interleave" not implemented for {x.dtype}')
        if not isinstance(x, Symbol):
            from .torch_index import _like

            counts = _host_counts(x)
            if (counts < 0).any():
                raise ShapeError("repeat_interleave: repeats can not be negative")
            return _like(x, np.repeat(np.arange(x.shape[0]), counts))
        x, repeats = call("cast", _arange_along(x), dtype=np.dtype(np.int64)), x
    if dim is None:
        x, dim = call("reshape", x, shape=(sh.dim_product(x.shape),)), 0
    dim = sh.normalize_axis(dim, x.ndim)
    if isinstance(repeats, Symbol):
        return _repeat_by_graph_counts(x, repeats, dim, output_size)
    counts = _host_counts(repeats)
    if counts.size == 1 and counts.ndim <= 1:  # one count for every element
        r = int(counts.reshape(-1)[0])
        if r < 0:
            raise ShapeError(f"repeat_interleave: repeats can not be negative, got {r}")
        wide = call("reshape", x, shape=(*x.shape[: dim + 1], 1, *x.shape[dim + 1 :]))
        wide = call("broadcast_to", wide, shape=(*x.shape[: dim + 1], r, *x.shape[dim + 1 :]))
        merged = sh.dim_product((x.shape[dim], r))
        out = call("reshape", wide, shape=(*x.shape[:dim], merged, *x.shape[dim + 1 :]))
    else:
        n = static_dim(x, dim, "repeat_interleave")
        if counts.shape != (n,) or (counts < 0).any():
            raise ShapeError(
                f"repeat_interleave: repeats must have the same size as input along dim "
                f"({n}) and be non-negative, got {counts.tolist()}"
            )
        out = index_select(x, np.repeat(np.arange(n), counts), dim)
    if output_size is not None and out.shape[dim] != output_size:
        raise ShapeError(f"repeat_interleave: output_size {output_size} != {out.shape[dim]}")
    return out


def _host_counts(repeats) -> np.ndarray:
    return np.asarray(repeats.detach().cpu().numpy() if hasattr(repeats, "detach") else repeats)


def _arange_along(v):
    """0, 1, … along axis 0 of graph value `v` (a cumsum of ones: its length may be a dim a
    feed or the run binds)."""
    from . import math as m
    from .torch_math import cumsum

    zeros = m.mul(call("cast", m.equal(v, v), dtype=np.dtype(np.int64)), 0)
    if v.ndim > 1:
        zeros = call("reduce_sum", zeros, axes=tuple(range(1, v.ndim)), keepdims=False)
    return m.sub(cumsum(m.add(zeros, 1), 0), 1)


def _repeat_by_graph_counts(x, repeats, dim: int, output_size):
    """`repeat_interleave` by counts the graph computes: output position p takes the element
    whose run holds p, found by marking where each element's run starts inside the output (a
    scatter-add of ones into zeros of the output's length, a dim the run binds unless
    `output_size` gives it) and counting the marks up to p."""
    from . import math as m
    from .shape import gather as index_gather
    from .torch_index import masked_select, scatter_add
    from .torch_math import cumsum

    (counts,) = lift(repeats, context=(x,))
    (x,) = lift(x, context=(counts,))  # an eager input beside graph counts: a constant
    if counts.dtype.kind not in "iu":
        raise ShapeError(f"repeat_interleave: repeats must be integers, got {counts.dtype}")
    n = x.shape[dim]
    if counts.ndim == 0 or counts.shape == (1,):  # one count for every element
        counts = call("broadcast_to", call("reshape", counts, shape=()), shape=(n,))
    if counts.ndim != 1:
        raise ShapeError(f"repeat_interleave: repeats must be 0-d or 1-d, got {counts.ndim}-d")
    sh.require_equal(counts.shape[0], n, "repeat_interleave: repeats and the input's dim")
    counts = call("cast", counts, dtype=np.dtype(np.int64))
    ends = cumsum(counts, 0)
    total = call("reduce_sum", counts, axes=(0,), keepdims=False)
    if output_size is None:
        positions = call("arange_of", total, count=sh.Dim())
    else:
        positions = lift(np.arange(int(output_size), dtype=np.int64), context=(x,))[0]
    zeros = m.mul(positions, 0)
    if isinstance(n, int) and n <= 1:
        return index_gather(x, zeros, dim)
    starts = call("index", ends, spec=(("slice", 0, -1, None),))  # where element k + 1 starts
    starts = masked_select(starts, m.less(starts, total))  # those inside the output
    marks = scatter_add(zeros, 0, starts, m.add(m.mul(starts, 0), 1))
    return index_gather(x, cumsum(marks, 0), dim)


def flip(input, *args, dims=None):  # noqa: A002
    """`input` with the order of elements along `dims` reversed (a copy, as PyTorch's `flip`).

    >>> import kiln as kn
    >>> kn.flip(kn.tensor([[1, 2], [3, 4]]), [1])
    tensor([[2, 1],
            [4, 3]])
    """
    (x,) = lift(input)
    if not args and dims is None:  # (flip(()) flips nothing; flip() is refused, as PyTorch's)
        raise ArgumentTypeError('flip() missing 1 required positional arguments: "dims"')
    dims = varargs("flip", args, dims, "dims")
    axes = sh.normalize_axes(dims, x.ndim)
    if not axes:
        return _copy(x)
    spec = tuple(("slice", None, None, -1 if d in axes else None) for d in range(x.ndim))
    return _copy(call("index", x, spec=spec))


def roll(input, shifts, dims=None):  # noqa: A002
    """Elements shifted by `shifts` along `dims`, wrapping around (`dims=None`: the
    flattened tensor, then its shape back), as PyTorch's `roll`.

    >>> import kiln as kn
    >>> kn.roll(kn.tensor([1, 2, 3, 4]), 1)
    tensor([4, 1, 2, 3])
    """
    (x,) = lift(input)
    if dims is None:
        if not isinstance(shifts, (int, np.integer)):
            if len(shifts) != 1:
                raise ShapeError(
                    f"roll: shifts and dimensions must align. shifts: {len(shifts)}, dims:0 "
                    f"(shifts {tuple(shifts)}, no dims)"
                )
            (shifts,) = shifts
        flat = call("reshape", x, shape=(sh.dim_product(x.shape),))
        return call("reshape", roll(flat, shifts, 0), shape=x.shape)
    shifts = (shifts,) if isinstance(shifts, (int, np.integer)) else tuple(shifts)
    dims = (dims,) if isinstance(dims, (int, np.integer)) else tuple(dims)
    if not shifts:
        raise ShapeError("roll: `shifts` required")
    if len(shifts) != len(dims):
        raise ShapeError(f"roll: shifts {shifts} and dims {dims} must have the same length")
    if sh.dim_product(x.shape) == 0:  # PyTorch's: an empty tensor's copy, its dims unchecked
        return _copy(x)
    for shift, dim in zip(shifts, dims):
        dim = sh.normalize_axis(dim, x.ndim)
        n = static_dim(x, dim, "roll")
        s = int(shift) % n if n else 0
        if n:  # PyTorch's roll is a cat of two slices (one empty for a shift of 0), so its
            # result is laid out as cat's: C order unless every piece is channels-last
            x = call("concat", _slice(x, dim, n - s, None), _slice(x, dim, 0, n - s), axis=dim)
    return _copy(x)


def unfold(input, dimension: int, size: int, step: int):  # noqa: A002
    """Every slice of `size` along `dimension` that starts at a multiple of `step`, as a new
    last dim (PyTorch's `Tensor.unfold`).

    >>> import kiln as kn
    >>> kn.arange(5).unfold(0, 2, 2)
    tensor([[0, 1],
            [2, 3]])
    """
    (x,) = lift(input)
    if x.ndim == 0:  # PyTorch's: the windows of a 1-element vector, flat
        sh.normalize_axis(dimension, 1)  # (its dims: 0 or -1, else IndexError)
        return call("reshape", unfold(call("reshape", x, shape=(1,)), 0, size, step), shape=(-1,))
    dim = sh.normalize_axis(dimension, x.ndim)
    n = static_dim(x, dim, "unfold")
    if size < 0 or size > n or step <= 0:
        raise ShapeError(
            f"unfold: size {size} must be in [0, {n}] (the size of dimension {dim}) and step "
            f"{step} > 0"
        )
    # one view op (kiln/ops/movement.py): eagerly a view of x's memory, in graphs a view that
    # functionalization writes through and takes again (PyTorch's unfold is a view)
    return call("unfold", x, dim=dim, size=size, step=step)


# -- triangles and diagonals ---------------------------------------------------------------------


def _triangle(x, diagonal, keep, name):
    (x,) = lift(x)
    if x.ndim < 2:
        raise ShapeError(f"{name}: input tensor must have at least 2 dimensions")
    n, m = static_dim(x, -2, name), static_dim(x, -1, name)
    (mask,) = lift(keep(np.ones((n, m), bool), int(diagonal)), context=(x,))
    (zero,) = lift(np.zeros((), x.dtype), context=(x,))
    return c_ordered(call("where", mask, x, zero))  # (PyTorch's tril and triu: C order)


@takes_out
def tril(input, diagonal: int = 0):  # noqa: A002
    """The lower triangle of the last two dims (on and below `diagonal`), zeros above.

    >>> import kiln as kn
    >>> kn.tril(kn.ones(2, 3, dtype=kn.int64))
    tensor([[1, 0, 0],
            [1, 1, 0]])
    """
    return _triangle(input, diagonal, np.tril, "tril")


@takes_out
def triu(input, diagonal: int = 0):  # noqa: A002
    """The upper triangle of the last two dims (on and above `diagonal`), zeros below.

    >>> import kiln as kn
    >>> kn.triu(kn.ones(2, 3, dtype=kn.int64), 1)
    tensor([[0, 1, 1],
            [0, 0, 1]])
    """
    return _triangle(input, diagonal, np.triu, "triu")


def diagonal(input, offset: int = 0, dim1: int = 0, dim2: int = 1):  # noqa: A002
    """The diagonal of dims `dim1` and `dim2` (above it for `offset` > 0), as a last dim.

    >>> import kiln as kn
    >>> kn.arange(6).reshape(2, 3).diagonal(1)
    tensor([1, 5])
    """
    (x,) = lift(input)
    d1, d2 = sh.normalize_axis(dim1, x.ndim), sh.normalize_axis(dim2, x.ndim)  # (IndexError)
    if x.ndim < 2:
        raise ShapeError("diagonal: the input must have at least 2 dimensions")
    if d1 == d2:
        raise ShapeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    n, m = static_dim(x, d1, "diagonal"), static_dim(x, d2, "diagonal")
    rest = [d for d in range(x.ndim) if d not in (d1, d2)]
    length = max(0, min(n, m - offset) if offset >= 0 else min(n + offset, m))
    # a view of x's memory, as PyTorch's: the reshape below copies unless x is contiguous and
    # the two dims are its last two, in order (a NumPy array, or symbolic dims: a copy)
    static = hasattr(x, "stride") and all(isinstance(d, int) for d in x.shape)
    if not _contiguous(x) or (static and (d1, d2) != (x.ndim - 2, x.ndim - 1)):
        from .torch_more import as_strided

        steps, at = x.stride(), x.storage_offset()
        start = at + (offset * steps[d2] if offset >= 0 else -offset * steps[d1])
        shape = [x.shape[d] for d in rest] + [length]
        start = at if 0 in shape else start  # an empty view (past the end): no element addressed
        return as_strided(x, shape, [steps[d] for d in rest] + [steps[d1] + steps[d2]], start)
    x = call("transpose", x, perm=(*rest, d1, d2))
    x = call("reshape", x, shape=(*x.shape[:-2], n * m))
    start = offset if offset >= 0 else -offset * m
    stop = start + (length - 1) * (m + 1) + 1 if length else start
    return _slice(x, x.ndim - 1, start, stop, m + 1)


def _contiguous(x) -> bool:
    """Whether x's elements lie in C order in its memory (a Symbol: as PyTorch's tensor of
    the same history would; one whose layout kiln does not follow counts as contiguous)."""
    if isinstance(x, Symbol) and not all(isinstance(d, int) for d in x.shape):
        return True
    # a Tensor's or a Symbol's own is_contiguous (a NumPy array in: the reshape below serves)
    return x.is_contiguous() if hasattr(x, "is_contiguous") else True


_diagonal = diagonal  # as `diag`'s argument `diagonal` hides it


@takes_out
def diag(input, diagonal: int = 0):  # noqa: A002
    """A 1-D input: the square matrix with it on the `diagonal`-th diagonal; a 2-D input: its
    `diagonal`-th diagonal (PyTorch's `diag`).

    >>> import kiln as kn
    >>> kn.diag(kn.tensor([1, 2]))
    tensor([[1, 0],
            [0, 2]])
    """
    (x,) = lift(input)
    if x.ndim == 2:
        return _copy(_diagonal(x, diagonal))
    if x.ndim != 1:
        raise ShapeError(f"diag: matrix or a vector expected, got a {x.ndim}-d input")
    n = static_dim(x, 0, "diag")
    size = n + abs(diagonal)
    start = diagonal if diagonal >= 0 else -diagonal * size
    stop = start + (n - 1) * (size + 1) + 1 if n else start
    spec = (("slice", start, stop, size + 1),)
    flat = call("index_scatter", x, spec=spec, shape=(size * size,))
    return call("reshape", flat, shape=(size, size))
