"""More of PyTorch's shape and index functions over kiln's ops (`select`, `narrow`, `movedim`,
`unbind`, `tensor_split`, `rot90`, `diff`, `take_along_dim`, `diag_embed`, `index_add`,
`index_copy`, `index_fill`), and the Tensor methods that read only a tensor's type
(`new_zeros`, `is_floating_point`, `element_size`...), shared by Symbols and eager Tensors."""

from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from .. import shapes as sh
from ..eager.tensor import mark_pieces
from ..errors import (
    AutogradError,
    DTypeMismatchError,
    GraphError,
    IndexDTypeError,
    IndexOutOfBoundsError,
    ShapeError,
    ShapeMismatchError,
    UsageError,
    call_error,
)
from ..graph.core import Symbol
from . import math as m
from . import shape as s
from . import torch_index as ti
from . import torch_shape as ts
from .core import call, constant, lift
from .out import takes_out
from .result_layouts import c_ordered

__all__ = [
    "diag_embed", "diff", "dsplit", "fliplr", "flipud", "hsplit", "index_add", "index_copy",
    "index_fill", "movedim", "moveaxis", "narrow", "ravel", "rot90", "select", "take_along_dim",
    "tensor_split", "unbind", "vsplit",
]  # fmt: skip


def _dim(x, dim: int) -> int:
    return sh.normalize_axis(int(dim), max(x.ndim, 1))


def select(input, dim: int, index: int):  # noqa: A002
    """The slice at `index` along `dim` (a view), that dim removed.

    >>> import kiln as kn
    >>> kn.select(kn.tensor([[1, 2], [3, 4]]), 1, -1)
    tensor([2, 4])
    """
    (x,) = lift(input)
    d = _dim(x, dim)
    n = x.shape[d]
    if isinstance(n, int) and not -n <= index < n:
        raise IndexOutOfBoundsError(
            f"select(): index {index} out of range for tensor of size {list(x.shape)} at "
            f"dimension {dim}"
        )
    return s.getitem(x, (slice(None),) * d + (index,))


def narrow(input, dim: int, start: int, length: int):  # noqa: A002
    """`length` elements along `dim` from `start` (a view).

    >>> import kiln as kn
    >>> kn.narrow(kn.tensor([1, 2, 3, 4]), 0, 1, 2)
    tensor([2, 3])
    """
    (x,) = lift(input)
    if not x.ndim:
        raise ShapeError("narrow() cannot be applied to a 0-dim tensor.")
    d = _dim(x, dim)
    n = ts.static_dim(x, d, "narrow")
    if hasattr(start, "dtype") and (start.ndim or not dt.is_int(dt.as_dtype(start.dtype))):
        raise UsageError("start must be an 0-dim integral Tensor.")  # (PyTorch's check)
    if isinstance(start, Symbol):  # a traced 0-d start: the elements gathered (not a view)
        if length < 0 or length > n:
            raise ShapeError(f"narrow(): length ({length}) exceeds dimension size ({n}).")
        first = m.where(m.less(start, 0), m.add(start, n), start)
        return s.gather(x, m.add(first, np.arange(length)), d)
    start = start + n if start < 0 else start
    if not 0 <= start <= n or start + length > n or length < 0:
        raise ShapeError(
            f"narrow(): start ({start}) + length ({length}) exceeds dimension size ({n})."
        )
    return s.getitem(x, (slice(None),) * d + (slice(start, start + length),))


def movedim(input, source, destination):  # noqa: A002
    """`input` with the dims `source` moved to `destination` (ints or sequences).

    >>> import kiln as kn
    >>> kn.movedim(kn.zeros(2, 3, 4), 0, -1).shape
    kiln.Size([3, 4, 2])
    """
    (x,) = lift(input)
    src = [source] if isinstance(source, (int, np.integer)) else list(source)
    dst = [destination] if isinstance(destination, (int, np.integer)) else list(destination)
    if len(src) != len(dst):
        raise ShapeError(
            f"movedim: Invalid source or destination dims: source ({src} dims) should contain "
            f"the same number of dims as destination ({dst} dims)"
        )
    given = (src, dst)
    src = [_dim(x, d) for d in src]
    dst = [_dim(x, d) for d in dst]
    for name, dims, raw in (("source", src, given[0]), ("destination", dst, given[1])):
        if len(set(dims)) != len(dims):
            raise ShapeError(f"movedim: repeated dim in `{name}` ({raw})")
    if not x.ndim:  # dims 0 and -1 of a 0-d tensor: itself, as PyTorch's
        return x
    rest = [d for d in range(x.ndim) if d not in src]
    order = [None] * x.ndim
    for a, b in zip(src, dst):
        order[b] = a
    it = iter(rest)
    order = [next(it) if o is None else o for o in order]
    return s.permute(x, tuple(order)) if x.ndim else x


moveaxis = movedim


def ravel(input):  # noqa: A002
    """The elements as one dim.

    >>> import kiln as kn
    >>> kn.ravel(kn.tensor([[1, 2], [3, 4]]))
    tensor([1, 2, 3, 4])
    """
    (x,) = lift(input)
    if not ts._contiguous(x):  # PyTorch's ravel: a C-ordered copy, never a strided view
        x = x.contiguous()
    return s.reshape(x, (-1,))


def unbind(input, dim: int = 0) -> tuple:  # noqa: A002
    """The slices along `dim`, as a tuple.

    >>> import kiln as kn
    >>> kn.unbind(kn.tensor([[1, 2], [3, 4]]), 1)
    (tensor([1, 3]), tensor([2, 4]))
    """
    (x,) = lift(input)
    d = _dim(x, dim)
    return mark_pieces(tuple(select(x, d, i) for i in range(ts.static_dim(x, d, "unbind"))),
                       "Unbind", {"_saved_dim": int(dim)})  # fmt: skip


def tensor_split(input, indices_or_sections=None, dim: int = 0, *, sections=None,  # noqa: A002
                 indices=None) -> tuple:  # fmt: skip
    """Splits into `n` parts as equal as possible (the first `size % n` one longer), or at
    the given indices.

    >>> import kiln as kn
    >>> [t.tolist() for t in kn.tensor_split(kn.arange(5), 3)]
    [[0, 1], [2, 3], [4]]
    """
    given = (indices_or_sections, sections, indices)
    indices_or_sections = next((v for v in given if v is not None), None)  # PyTorch's names
    if isinstance(indices_or_sections, Symbol):
        (x,) = lift(input, context=(indices_or_sections,))
        return _split_at_graph_points(x, indices_or_sections, _dim(x, dim))
    (x,) = lift(input)
    if not x.ndim:
        raise UsageError(
            "tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims"
        )
    if hasattr(indices_or_sections, "ndim"):  # an eager tensor: 0-d sections, or 1-d indices
        _check_split_points(indices_or_sections)
        held = np.asarray(indices_or_sections.tolist())
        indices_or_sections = int(held) if held.ndim == 0 else held.tolist()
    d = _dim(x, dim)
    n = ts.static_dim(x, d, "tensor_split")
    if isinstance(indices_or_sections, (int, np.integer)):
        k = int(indices_or_sections)
        if k <= 0:
            raise UsageError(f"number of sections must be larger than 0, got {k}")
        sizes = [n // k + (1 if i < n % k else 0) for i in range(k)]
        cuts = [int(c) for c in np.cumsum([0, *sizes])]
    else:  # each piece is Python's slice [a:b] (negative points count from the end)
        cuts = [0, *(int(i) for i in indices_or_sections), n]
    return tuple(s.getitem(x, (slice(None),) * d + (slice(a, b),))
                 for a, b in zip(cuts[:-1], cuts[1:]))  # fmt: skip


def _check_split_points(points) -> None:
    """PyTorch's checks of a tensor of sections or split points: int64, 0-d or 1-d."""
    kind = dt.as_dtype(points.dtype)
    if kind != dt.int64:
        raise UsageError(
            f"tensor_split expected tensor_indices_or_sections to have dtype of long, but got "
            f"{kind}"
        )
    if points.ndim > 1:
        raise UsageError(
            "tensor_split expected tensor_indices_or_sections to be a zero-dimensional or "
            f"one-dimensional tensor, but got a tensor with {points.ndim} dims"
        )


def _split_at_graph_points(x, points, d: int) -> tuple:
    """`tensor_split` of `x` at split points the graph computes (a 1-d integer tensor): the
    pieces are Python's slices [a:b] along `d` between consecutive points, gathered, each of
    a length (a dim the run binds: `arange_of`) that the points' values give."""
    if not dt.is_int(points.dtype) or points.ndim > 1:
        raise UsageError(
            "tensor_split expected tensor_indices_or_sections to be a zero-dimensional or "
            f"one-dimensional integer tensor, but got a tensor with {points.ndim} dims of "
            f"{points.dtype}"
        )
    if points.ndim == 0:
        raise GraphError(
            "tensor_split: the number of sections is a traced 0-d tensor, whose value sets how "
            "many pieces there are (a graph has a fixed number of results); pass an int"
        )
    n = ts.static_dim(x, d, "tensor_split")
    k = ts.static_dim(points, 0, "tensor_split")
    points = m.cast(points, dt.int64)
    bounds = []
    for j in range(k):  # as a slice reads them: from the end where negative, then clipped
        p = select(points, 0, j)
        bounds.append(m.minimum(m.maximum(m.where(m.less(p, 0), m.add(p, n), p), 0), n))
    if not bounds:
        return (s.getitem(x, (slice(None),) * (d + 1)),)
    cuts = [0, *bounds, n]
    pieces = []
    for a, b in zip(cuts[:-1], cuts[1:]):
        length = m.maximum(m.sub(b, a), np.int64(0))
        positions = call("arange_of", length, count=sh.Dim())
        pieces.append(s.gather(x, m.add(positions, a), d))
    return tuple(pieces)


def _split_dim(name, x, sections, dim):
    if isinstance(sections, (int, np.integer)):
        n = ts.static_dim(x, dim, name)
        if sections == 0 or n % sections:
            raise UsageError(
                f"torch.{name} attempted to split along dimension {dim}, but the size of the "
                f"dimension {n} is not divisible by the split_size {sections}!"
            )
    return tensor_split(x, sections, dim)


def hsplit(input, sections):  # noqa: A002
    """`tensor_split` along dim 1 (dim 0 of a vector); an int must divide the size.

    >>> import kiln as kn
    >>> len(kn.hsplit(kn.zeros(2, 4), 2))
    2
    """
    (x,) = lift(input)
    if x.ndim < 1:
        raise UsageError("torch.hsplit requires a tensor with at least 1 dimension, but got a "
                         "tensor with 0 dimensions!")  # fmt: skip
    return _split_dim("hsplit", x, sections, 1 if x.ndim > 1 else 0)


def vsplit(input, sections):  # noqa: A002
    """`tensor_split` along dim 0 of a tensor of 2 or more dims.

    >>> import kiln as kn
    >>> len(kn.vsplit(kn.zeros(4, 2), [1]))
    2
    """
    (x,) = lift(input)
    if x.ndim < 2:
        raise UsageError(f"torch.vsplit requires a tensor with at least 2 dimension, got {x.ndim}")
    return _split_dim("vsplit", x, sections, 0)


def dsplit(input, sections):  # noqa: A002
    """`tensor_split` along dim 2 of a tensor of 3 or more dims.

    >>> import kiln as kn
    >>> len(kn.dsplit(kn.zeros(1, 1, 4), 4))
    4
    """
    (x,) = lift(input)
    if x.ndim < 3:
        raise UsageError(f"torch.dsplit requires a tensor with at least 3 dimension, got {x.ndim}")
    return _split_dim("dsplit", x, sections, 2)


def fliplr(input):  # noqa: A002
    """Reverses dim 1.

    >>> import kiln as kn
    >>> kn.fliplr(kn.tensor([[1, 2]]))
    tensor([[2, 1]])
    """
    (x,) = lift(input)
    if x.ndim < 2:
        raise ShapeError("fliplr: Input must be >= 2-d.")
    return ts.flip(x, [1])


def flipud(input):  # noqa: A002
    """Reverses dim 0.

    >>> import kiln as kn
    >>> kn.flipud(kn.tensor([1, 2]))
    tensor([2, 1])
    """
    (x,) = lift(input)
    if x.ndim < 1:
        raise ShapeError("flipud: Input must be >= 1-d.")
    return ts.flip(x, [0])


def rot90(input, k: int = 1, dims=(0, 1)):  # noqa: A002
    """Rotates by 90 degrees `k` times, from the first of `dims` towards the second.

    >>> import kiln as kn
    >>> kn.rot90(kn.tensor([[1, 2], [3, 4]]))
    tensor([[2, 4],
            [1, 3]])
    """
    (x,) = lift(input)
    if len(dims) != 2:
        raise ShapeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if x.ndim < 2:
        raise ShapeError(f"expected total dims >= 2, but got total dims = {x.ndim}")
    a, b = (_dim(x, d) for d in dims)
    if a == b:
        raise ShapeError(
            f"expected rotation dims to be different, but got dim0 = {dims[0]} and dim1 = {dims[1]}"
        )
    k %= 4
    if k == 0:
        return ts.flip(x, [])
    if k == 2:
        return ts.flip(x, [a, b])
    flipped = ts.flip(x, [b] if k == 1 else [a])
    return s.transpose(flipped, a, b)


@takes_out
def diff(input, n: int = 1, dim: int = -1, prepend=None, append=None):  # noqa: A002
    """The n-th forward difference along `dim` (`!=` for bools), after joining `prepend` and
    `append`.

    >>> import kiln as kn
    >>> kn.diff(kn.tensor([1, 4, 9, 16]))
    tensor([3, 5, 7])
    """
    (x,) = lift(input)
    if not x.ndim:
        raise ShapeError("diff expects input to be at least one-dimensional")
    d = _dim(x, dim)
    parts = [p for p in (prepend, x, append) if p is not None]
    if len(parts) > 1:
        x = ts.cat(list(lift(*parts)), d)
    for _ in range(n):
        size = ts.static_dim(x, d, "diff")
        if size == 0:  # nothing left to difference: empty, as PyTorch's (n past the size)
            break
        hi = narrow(x, d, 1, size - 1)
        lo = narrow(x, d, 0, size - 1)
        x = m.not_equal(hi, lo) if x.dtype == np.bool_ else m.sub(hi, lo)
    return x


@takes_out
def take_along_dim(input, indices, dim=None):  # noqa: A002
    """Values at `indices` along `dim` (broadcast elsewhere; negative ones count from the end);
    of the flattened tensor when dim is None.

    >>> import kiln as kn
    >>> kn.take_along_dim(kn.tensor([[10, 30, 20]]), kn.tensor([[1, 2]]), 1)
    tensor([[30, 20]])
    """
    x, idx = lift(input, indices)
    if not ti.long_index(idx.dtype):
        message = (f"kiln.take_along_dim(): dtype of indices should be Long but got "
                   f"{dt.scalar_name(idx.dtype)}")  # fmt: skip
        raise call_error(DTypeMismatchError, message, "take_along_dim", x, idx)
    if dim is None:
        x, idx, dim = s.reshape(x, (-1,)), s.reshape(idx, (-1,)), 0
    elif x.ndim != idx.ndim:
        message = (f"take_along_dim(): input and indices should have the same number of "
                   f"dimensions, but got {x.ndim} dimensions for input, and {idx.ndim} "
                   "dimensions for indices")  # fmt: skip
        raise call_error(ShapeError, message, "take_along_dim", x, idx)
    d = _dim(x, dim)
    n = x.shape[d] if x.ndim else 1
    idx = m.where(m.less(idx, 0), m.add(idx, n), idx)  # PyTorch's: negative ones from the end
    rest_x = tuple(x.shape[:d]) + tuple(x.shape[d + 1 :])
    rest_i = tuple(idx.shape[:d]) + tuple(idx.shape[d + 1 :])
    rest = sh.broadcast_shapes(rest_x, rest_i)
    x = s.broadcast_to(x, (*rest[:d], x.shape[d], *rest[d:]))
    idx = s.broadcast_to(idx, (*rest[:d], idx.shape[d], *rest[d:]))
    return s.take_along_axis(x, idx, d)


def diag_embed(input, offset: int = 0, dim1: int = -2, dim2: int = -1):  # noqa: A002
    """Matrices whose `offset` diagonal (in dims dim1, dim2 of the result) is the last dim.

    >>> import kiln as kn
    >>> kn.diag_embed(kn.tensor([1, 2]))
    tensor([[1, 0],
            [0, 2]])
    """
    (x,) = lift(input)
    ndim = x.ndim + 1
    a, b = sh.normalize_axis(dim1, ndim), sh.normalize_axis(dim2, ndim)
    if a == b:  # (a 0-d input, whose result would have 1 dim, fails here or above)
        raise ShapeError(f"diag_embed: diagonal dimensions cannot be identical {dim1}, {dim2}")
    n = ts.static_dim(x, -1, "diag_embed")
    size = n + abs(offset)
    # x padded to `size` is read along the rows (offset >= 0: element (r, r + offset) is x[r])
    # or the columns (offset < 0: element (c - offset, c) is x[c]); a select, not a product,
    # so an inf or nan stays on the diagonal
    line = s.pad(x, [(0, 0)] * (x.ndim - 1) + [(0, abs(offset))])
    line = s.reshape(line, (*line.shape, 1) if offset >= 0 else (*line.shape[:-1], 1, size))
    (mask,) = lift(np.eye(size, k=offset, dtype=bool), context=(x,))
    (zero,) = lift(np.zeros((), dt.as_dtype(x.dtype)), context=(x,))
    out = call("where", mask, line, zero)
    if (a, b) != (ndim - 2, ndim - 1):
        out = movedim(out, (ndim - 2, ndim - 1), (a, b))
    return c_ordered(out)  # (PyTorch's diag_embed: a new tensor in C order)


def _along(index, dim: int, like_shape):
    """A 1-D index laid along `dim` and broadcast to `like_shape` (for scatter)."""
    view = [1] * len(like_shape)
    view[dim] = -1
    return s.broadcast_to(s.reshape(index, tuple(view)), tuple(like_shape))


def _scalar_as_vector(fn, x, dim, idx, *rest, **kw):
    """fn applied to a 0-d `x` seen as 1-element vector (as PyTorch does), back to 0-d."""
    rest = tuple(s.reshape(r, (-1,)) if getattr(r, "ndim", 1) == 0 else r for r in rest)
    return s.reshape(fn(s.reshape(x, (1,)), dim, idx, *rest, **kw), ())


@takes_out
def index_add(input, dim: int, index, source, *, alpha=1):  # noqa: A002
    """`input` with `alpha * source`'s slices along `dim` added at `index` (repeats add up).

    >>> import kiln as kn
    >>> kn.index_add(kn.zeros(3), 0, kn.tensor([0, 0, 2]), kn.tensor([1.0, 2.0, 3.0]))
    tensor([3., 0., 3.])
    """
    x, idx, src = lift(input, index, source)
    _dim(x, dim)  # (PyTorch's order: a dim out of range first, IndexError)
    if not ti.int_index(idx.dtype):
        name = dt.scalar_name(idx.dtype)
        message = f"index_add_(): Expected dtype int32/int64 for index but got: {name}"
        raise call_error(DTypeMismatchError, message, "index_add", x, idx)
    _check_source("index_add", x, _dim(x, dim), idx, src)
    if x.ndim == 0:
        return _scalar_as_vector(index_add, x, dim, idx, src, alpha=alpha)
    d = _dim(x, dim)
    idx = s.reshape(idx, (1,)) if idx.ndim == 0 else idx
    if isinstance(alpha, float) and (dt.is_int(x.dtype) or x.dtype == np.bool_):
        alpha = int(alpha)  # PyTorch's: an integer input takes alpha as an integer (truncated)
    src = src if alpha == 1 else m.mul(src, alpha)
    src = src if src.dtype == x.dtype else m.cast(src, x.dtype)
    # PyTorch's index_add of a 1-D input adds step by step in its dtype; of a wider one, as
    # scatter_add (float16 and bfloat16 summed in float32, rounded once)
    reduce = "add" if x.ndim == 1 else "sum"
    return ti._scatter(x, d, _along(idx, d, src.shape), src, reduce, True, "index_add", None)


@takes_out
def index_copy(input, dim: int, index, source):  # noqa: A002
    """`input` with `source`'s slices along `dim` written at `index`.

    >>> import kiln as kn
    >>> kn.index_copy(kn.zeros(3), 0, kn.tensor([2, 0]), kn.tensor([1.0, 2.0]))
    tensor([2., 0., 1.])
    """
    x, idx, src = lift(input, index, source)
    _dim(x, dim)  # (PyTorch's order: a dim out of range first, IndexError)
    if idx.dtype != np.int64:  # (torch 2.13's message)
        raise call_error(DTypeMismatchError, "index_copy_(): Expected a long tensor for index, "
                         f"but got {dt.scalar_name(idx.dtype)}", "index_copy", x, idx)  # fmt: skip
    _check_source("index_copy", x, _dim(x, dim), idx, src)
    if x.ndim == 0:
        return _scalar_as_vector(index_copy, x, dim, idx, src)
    d = _dim(x, dim)
    idx = s.reshape(idx, (1,)) if idx.ndim == 0 else idx
    src = s.reshape(src, (1,)) if src.ndim == 0 else src  # (then x is 1-D: _check_source)
    return ti.scatter(x, d, _along(idx, d, src.shape), src)


def _check_source(op: str, x, d: int, idx, src) -> None:
    """PyTorch's refusals of an index or source that does not fit `x` (which scatter would
    broadcast instead): a 0-d index or source counts as one element."""
    adds = op in ("index_add", "index_reduce")  # (index_reduce: index_add's rules and words)
    if idx.ndim > 1:
        why = (f"Index is supposed to be a vector, but got dim: {idx.ndim}" if adds
               else f"Index should have dimension 1 or 0 (got {idx.ndim})")  # fmt: skip
        raise call_error(IndexOutOfBoundsError, f"{op}_(): {why}", op, x, idx)
    if src.dtype != x.dtype:
        a, b = dt.scalar_name(x.dtype), dt.scalar_name(src.dtype)
        why = (f"self ({a}) and source ({b}) must have the same scalar type" if adds
               else f"self and source expected to have the same dtype, but got (self) {a} and "
               f"(source) {b}")  # fmt: skip
        raise call_error(DTypeMismatchError, f"{op}_(): {why}", op, x, src)
    count = src.shape[d] if src.ndim else 1
    n = idx.shape[0] if idx.ndim else 1
    x_rest = tuple(x.shape[:d]) + tuple(x.shape[d + 1 :])
    src_rest = tuple(src.shape[:d]) + tuple(src.shape[d + 1 :])
    if adds and src.ndim == 0 and _differ((n,), (1,)):  # (PyTorch's size(dim))
        why = f"Dimension specified as {d} but tensor has no dimensions"
        raise call_error(IndexOutOfBoundsError, why, op, idx, src)
    if adds and (src.ndim != x.ndim or _differ(x_rest, src_rest)):
        why = ("source tensor shape must match self tensor shape, excluding the specified "
               f"dimension. Got self.shape = {list(x.shape)} "
               f"source.shape = {list(src.shape)}")  # fmt: skip
        raise call_error(ShapeMismatchError, why, op, x, src)
    if op == "index_copy" and x.ndim and src.ndim and x.ndim != src.ndim:
        why = (f"index_copy_(): When source and destination are not scalars, their "
               f"dimensionality must match. Source dimensionality ({src.ndim}), destination "
               f"dimensionality ({x.ndim})")  # fmt: skip
        raise call_error(IndexOutOfBoundsError, why, op, x, src)
    if _differ((n,), (count,)):
        why = f"{op}_(): Number of indices ({n}) should be equal to source.size(dim) ({count})"
        cls = ShapeMismatchError if adds else IndexOutOfBoundsError
        raise call_error(cls, why, op, idx, src)
    if _differ(x_rest, src_rest):
        why = (f"index_copy_(): Source/destination tensor must have same slice shapes "
               f"(destination {list(x.shape)}, source {list(src.shape)}, dim {d})")  # fmt: skip
        raise call_error(ShapeMismatchError, why, op, x, src)


def _differ(a: tuple, b: tuple) -> bool:
    """Two shapes proven different (symbolic dims are checked when a run binds them)."""
    if len(a) != len(b):
        return True
    return any(isinstance(p, int) and isinstance(q, int) and p != q for p, q in zip(a, b))


def index_fill(input, dim: int, index, value):  # noqa: A002
    """`input` with the slices at `index` along `dim` set to `value`.

    >>> import kiln as kn
    >>> kn.index_fill(kn.tensor([[1, 2], [3, 4]]), 1, kn.tensor([0]), -1)
    tensor([[-1,  2],
            [-1,  4]])
    """
    x, idx = lift(input, index)
    if idx.dtype != np.int64:  # (torch 2.13's message and class)
        raise call_error(IndexDTypeError, "index_fill_(): Expected dtype int64 for index.",
                         "index_fill", x, idx)  # fmt: skip
    if idx.ndim > 1:  # (torch 2.13's messages and classes)
        raise call_error(ShapeMismatchError, "Index has to be a vector/scalar", "index_fill", idx)
    if getattr(value, "ndim", 0):
        why = ("index_fill_ only supports a 0-dimensional value tensor, but got tensor with "
               f"{value.ndim} dimension(s).")  # fmt: skip
        raise call_error(ShapeMismatchError, why, "index_fill", x, value)
    if x.ndim == 0:  # as a 1-element vector (the value stays 0-d)
        return s.reshape(index_fill(s.reshape(x, (1,)), dim, idx, value), ())
    d = _dim(x, dim)
    n = ts.static_dim(x, d, "index_fill")
    # NOTE: a negative index counts from the end, as PyTorch's (index_add and index_copy refuse
    # one); scatter refuses what is out of range either way
    flat = s.reshape(idx, (-1,))
    wrapped = m.where(m.less(flat, 0), m.add(flat, n), flat)
    none = np.zeros(n, bool)
    hit = ti.scatter(constant(none, graph=x.graph) if isinstance(x, Symbol) else none, 0,
                     wrapped, value=True)  # fmt: skip
    shape = [1] * x.ndim
    shape[d] = n
    fill = (
        dt.number_array(value, x.dtype, "index_fill", x)
        if isinstance(value, (int, float, bool, complex))
        else m.cast(value, x.dtype)
    )
    return m.where(s.reshape(hit, tuple(shape)), fill, x)


# -- methods that read only the type: the same on Symbols and eager Tensors ------------------


def _new(fill):
    def method(self, *size, dtype=None, device=None, requires_grad=False, **_):
        shape = ts._sizes(size) if size else ()
        value = np.full(shape, fill, dt.as_dtype(dtype or self.dtype))
        return _constant_like(self, value, requires_grad)

    return method


def _constant_like(self, value: np.ndarray, requires_grad=False):
    if isinstance(self, Symbol):
        if requires_grad and not dt.is_differentiable(value.dtype):  # (as eager refuses)
            raise AutogradError("only Tensors of floating point and complex dtype can require "
                                f"gradients (a new {value.dtype} tensor)")  # fmt: skip
        return constant(value, graph=self.graph)
    from ..eager.factories import tensor

    return tensor(value, device=self.device, requires_grad=requires_grad)


def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False, **_):
    """`full(size, fill_value)` of self's dtype and device."""
    dtype = dt.as_dtype(dtype or self.dtype)
    value = np.full(ts._sizes((size,)), dt.number_array(fill_value, dtype, "new_full", self), dtype)
    return _constant_like(self, value, requires_grad)


def new_tensor(self, data, *, dtype=None, device=None, requires_grad=False, **_):
    """`tensor(data)` of self's dtype (unless `dtype` is given) and device."""
    if isinstance(data, Symbol):
        return m.cast(data, dtype or self.dtype)
    if not isinstance(self, Symbol):  # `tensor`'s conversions and checks (300 into uint8...)
        from ..eager.factories import tensor

        where = self.device if device is None else device
        return tensor(data, dtype=dtype or self.dtype, device=where, requires_grad=requires_grad)
    if hasattr(data, "detach"):
        data = data.detach().numpy()
    return _constant_like(self, np.asarray(data, dt.as_dtype(dtype or self.dtype)), requires_grad)


TYPE_METHODS = {
    "new_zeros": _new(0), "new_ones": _new(1), "new_empty": _new(0), "new_full": new_full,
    "new_tensor": new_tensor,
    "is_floating_point": lambda self: dt.is_float(self.dtype),
    "is_complex": lambda self: dt.as_dtype(self.dtype).kind == "c",
    "is_signed": lambda self: dt.as_dtype(self.dtype).kind in "if",
    "element_size": lambda self: dt.as_dtype(self.dtype).itemsize,
    "ndimension": lambda self: len(self.shape), "nelement": lambda self: self.numel(),
    "type_as": lambda self, other: self.to(other.dtype),
    "view_as": lambda self, other: self.view(tuple(other.shape)),
    "reshape_as": lambda self, other: s.reshape(self, tuple(other.shape)),
    "short": lambda self, memory_format=None: self.to(dt.as_dtype("int16")),
    "char": lambda self, memory_format=None: self.to(dt.as_dtype("int8")),
    "byte": lambda self, memory_format=None: self.to(dt.as_dtype("uint8")),
    "get_device": lambda self: -1 if self.device.type == "cpu" else (self.device.index or 0),
}  # fmt: skip


def _sum_to_size(self, *size):
    """Sums the dims that `size` (broadcastable to self's shape) has as 1 or lacks."""
    size = tuple(ts._sizes(size))
    if not size:  # PyTorch's: the sum of every element, even of a 0-d tensor (bools to int64)
        return m.sum(self)
    lead = len(self.shape) - len(size)
    dims = tuple(range(lead)) + tuple(
        lead + i for i, d in enumerate(size) if d == 1 and self.shape[lead + i] != 1
    )
    out = m.sum(self, dims, keepdim=True) if dims else self
    return s.reshape(out, size) if tuple(out.shape) != size else out


# PyTorch's methods for real tensors: conjugation is the identity, and the like
REAL_METHODS = {
    "conj": lambda self: self, "conj_physical": lambda self: self,
    "resolve_conj": lambda self: self, "resolve_neg": lambda self: self,
    "is_conj": lambda self: False, "is_neg": lambda self: False,
    "isreal": lambda self: m.logical_or(m.isnan(self), m.logical_not(m.isnan(self))),
    "adjoint": lambda self: s.matrix_transpose(self),
    "narrow_copy": lambda self, *a: narrow(self, *a),
    "split_with_sizes": lambda self, split_sizes, dim=0: ts.split(self, list(split_sizes), dim),
    "sum_to_size": _sum_to_size,
    "is_same_size": lambda self, other: tuple(self.shape) == tuple(other.shape),
    "is_nonzero": lambda self: bool(self),
}  # fmt: skip
TYPE_PROPERTIES = {
    "itemsize": lambda self: dt.as_dtype(self.dtype).itemsize,
    "nbytes": lambda self: dt.as_dtype(self.dtype).itemsize * self.numel(),
    "is_cpu": lambda self: self.device.type == "cpu",
}
