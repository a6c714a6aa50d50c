"""Indexing with PyTorch's rules: `x[index]` (ints, slices, None, Ellipsis, integer arrays and
tensors, several of them, boolean masks) and `index_put` (`x[index] = values` out of place).

An index is applied in three steps, each an op: the basic items (ints, slices, None) by
`index` (a view); then 0-d integer Symbols, which PyTorch reads as ints, one `gather` each;
then the integer arrays (masks become the arrays of their true elements), one `gather` for one
array, else one `advanced_index`. PyTorch's placement rule follows: ints drop their dim first,
and the arrays' broadcast shape replaces their dims where no slice or None separates them,
else it goes first (`x[0, :, [1, 2]]` has shape (4, 2) for x of shape (3, 4, 5), where NumPy,
which counts the int among the arrays, gives (2, 4)).
"""

from __future__ import annotations

import warnings

import numpy as np

from .. import dtypes as dt
from .. import shapes as sh
from ..eager.tensor import Tensor
from ..errors import (
    ArgumentError,
    ArgumentTypeError,
    DTypeMismatchError,
    IndexOutOfBoundsError,
    IndexOutOfRangeError,
    ShapeMismatchError,
)
from ..graph.core import Symbol, TracedSymbol, user_site
from .core import call, lift
from .result_layouts import indexed, preserved

__all__ = ["getitem", "index_put"]

_FULL = ("slice", None, None, None)
_BASIC = (int, slice, type(None), type(Ellipsis), np.integer)


def getitem(x, index):
    """`x[index]` with PyTorch's rules: ints, slices, None, Ellipsis, integer arrays or
    tensors (several: their broadcast shape goes where they are when adjacent, else first)
    and boolean masks (a mask the graph computes selects as many elements as it holds: a
    dim the run binds, kiln/ops/dynamic.py).

    >>> import kiln as kn, numpy as np
    >>> kn.getitem(np.arange(12).reshape(3, 4), (slice(None), np.array([3, 0])))
    array([[ 3,  0],
           [ 7,  4],
           [11,  8]])
    >>> kn.getitem(np.arange(12).reshape(3, 4), ([0, 2], [1, 3]))
    array([ 1, 11])
    """
    (x,) = lift(x)
    items = items_of(index)
    if all(isinstance(i, _BASIC) and not isinstance(i, (bool, np.bool_)) for i in items):
        return _basic(x, _spec(_expand_ellipsis(items, x.ndim, len(items))), view=True)
    spec, selects, arrays, axes = parse(x, items)
    if type(x) not in (Symbol, TracedSymbol):  # an eager tensor indexed by graph values (a
        # tensor that kn.compile's function captured, indexed by one it computes): a
        # constant of theirs
        traced = next((i for i in arrays if isinstance(i, Symbol)), None) if arrays else None
        if traced is None and selects:
            traced = next((i for _, i in selects if isinstance(i, Symbol)), None)
        if traced is not None:
            (x,) = lift(x, context=(traced,))
    x = _basic(x, spec)
    for axis, i in reversed(selects):  # highest first: the lower axes stay where they are
        (i,) = lift(i, context=(x,))
        x = call("gather", x, i, axis=axis, wrap_negative=True)
        if isinstance(x, Symbol):  # a view, as PyTorch's x[i] (kiln/frontend/functionalize.py)
            from .functionalize import record_select  # NOTE: lazy: functionalize reads indexing

            record_select(x)
    axes = [a - sum(1 for s, _ in selects if s < a) for a in axes]
    arrays = lift(*arrays, context=(x,))
    if not arrays:
        return x
    if len(arrays) == 1:  # (x[-1]: the last)
        out = call("gather", x, arrays[0], axis=axes[0], wrap_negative=True)
    else:
        out = call("advanced_index", x, *arrays, axes=tuple(axes))
    return indexed(out, x, arrays, axes)  # laid out as PyTorch's index lays it out


def items_of(index) -> tuple:
    """The items of an index: a tuple's, and, as PyTorch reads it, those of a list shorter
    than 32 that holds a sequence, a tensor, a slice, None or Ellipsis (`x[[[0, 1], [2, 2]]]`
    is `x[[0, 1], [2, 2]]`); else the index alone.

    >>> items_of([[0, 1], [2, 2]]), items_of([0, 2])
    (([0, 1], [2, 2]), ([0, 2],))
    """
    if isinstance(index, tuple):
        return index
    sequence = (list, tuple, slice, Tensor, Symbol, np.ndarray, range)
    if (
        isinstance(index, list)
        and len(index) < 32
        and any(isinstance(i, sequence) or i is None or i is Ellipsis for i in index)
    ):
        return tuple(index)
    return (index,)


def _basic(x, spec, view: bool = False):
    if len(spec) > x.ndim or any(s != _FULL for s in spec):
        return call("index", x, spec=trim(spec, x.ndim))
    if view and isinstance(x, (Tensor, Symbol)):  # x[:], x[...]: a new view, as PyTorch's
        return call("index", x, spec=())
    return x


def trim(spec, ndim: int) -> tuple:
    """The spec without trailing full slices (its canonical form), unless it has more items
    than dims (then the `index` op's rule raises)."""
    spec = list(spec)
    if sum(s[0] != "newaxis" for s in spec) > ndim:
        return tuple(spec)
    while spec and spec[-1] == _FULL:
        spec.pop()
    return tuple(spec)


def index_put(input, indices, values, accumulate: bool = False):  # noqa: A002
    """`input` with `values` written at `input[indices]`, or added there (repeated indices
    summing) when `accumulate`: PyTorch's `index_put`. `indices` is a tuple of integer or
    boolean tensors, one per leading dim; values has input's dtype and broadcasts to the
    indexed shape. Gradients reach input (where not overwritten) and values.

    >>> import kiln as kn
    >>> x = kn.zeros(2, 3)
    >>> x.index_put((kn.tensor([0, 1]), kn.tensor([2, 0])), kn.tensor(5.0))
    tensor([[0., 0., 5.],
            [5., 0., 0.]])
    >>> kn.index_put(kn.zeros(3), (kn.tensor([1, 1]),), kn.tensor([1.0, 2.0]), accumulate=True)
    tensor([0., 3., 0.])
    """
    if not isinstance(indices, (tuple, list)):
        raise ArgumentTypeError(
            f"index_put(): indices must be a tuple of tensors, got {type(indices)}"
        )
    # (an eager input with values or indices of a trace: a constant of its graph)
    (x,) = lift(input, context=[a for a in (values, *indices) if isinstance(a, Symbol)])
    if not indices:  # (PyTorch's class: RuntimeError)
        raise ShapeMismatchError(f"index_put(): at least one index must be provided (on "
                                 f"{list(x.shape)}, at {user_site()})")  # fmt: skip
    if isinstance(values, (bool, int, float, complex)):
        values = np.asarray(values, x.dtype)
    (v,) = lift(values, context=(x,))
    # (laid out as x, as PyTorch's clone of it is)
    return preserved(put(x, tuple(indices), v, bool(accumulate), as_ints=False), x)


def check_put_dtype(x, index, value) -> None:
    """PyTorch's refusal of `x[index] = value` with a tensor `value` of another dtype than x's
    where the index holds index tensors (its index_put_ takes no cast), save one mask with a
    value of one element (its masked_fill_ casts); basic indices copy with a cast."""
    found = []  # per index tensor: whether it is a mask (a 0-d bool one is not, to PyTorch)
    for item in items_of(index):
        if isinstance(item, (list, tuple, range)):
            item = np.asarray(item)  # a sequence: an index array (of bools: a mask)
        if isinstance(item, (Tensor, Symbol, np.ndarray)) and (item.ndim or item.dtype == bool):
            found.append(item.ndim > 0 and item.dtype in (np.bool_, np.uint8))
    numel = sh.dim_product(tuple(value.shape))
    if not found or (found == [True] and numel == 1):
        return
    raise DTypeMismatchError(
        f"Index put requires the source and destination dtypes match, got {x.dtype} for the "
        f"destination and {value.dtype} for the source. (setitem at {user_site()})"
    )


def put(x, index, values, accumulate: bool, as_ints: bool = True):
    """`x` with `values` (lifted, of x's dtype) written at `x[index]`: the one `index_put` node
    of item assignment and of `index_put`. `as_ints`: 0-d integer tensors count as ints (item
    assignment; `index_put` takes them as 0-d index arrays)."""
    items = items_of(index)
    spec, selects, arrays, axes = parse(x, items, as_ints=as_ints, selects=False)
    (values,) = lift(values, context=(x,))
    arrays = lift(*arrays, context=(x,))
    return call("index_put", x, values, *arrays, spec=trim(spec, x.ndim), axes=tuple(axes),
                accumulate=accumulate)  # fmt: skip


# -- parsing -------------------------------------------------------------------------------------


def parse(x, items, as_ints: bool = True, selects: bool = True):
    """(spec of the basic items, [(axis, 0-d Symbol)], index arrays, their axes) of `x[items]`,
    the axes counted in what `spec` gives. `selects=False`: 0-d Symbols are index arrays."""
    kinds = [_classify(i, as_ints) for i in items]
    if not selects:
        kinds = [("array", v) if k == "select" else (k, v) for k, v in kinds]
    counted = ("int", "slice", "array", "select")
    used = sum(np.ndim(v) if k in ("mask", "graph_mask") else k in counted for k, v in kinds)
    if sum(k == "ellipsis" for k, _ in kinds) > 1:
        wide = sum(np.ndim(v) - 1 for k, v in kinds if k in ("mask", "graph_mask"))
        kinds = _ellipses(kinds, ("ellipsis", None), ("slice", slice(None)), x.ndim - used, wide)
        used = sum(np.ndim(v) if k in ("mask", "graph_mask") else k in counted for k, v in kinds)
    if used > x.ndim:
        raise IndexOutOfBoundsError(f"too many indices for tensor of dimension {x.ndim} "
                                    f"(at {user_site()})")  # fmt: skip
    spec, chosen, arrays, axes = [], [], [], []
    axis = dim = 0  # the axis of the basic result, the dim of x
    for kind, v in kinds:
        if kind == "ellipsis":
            n = x.ndim - used
            spec += [_FULL] * n
            axis, dim = axis + n, dim + n
        elif kind in ("none", "bool", "graph_bool"):
            spec.append(("newaxis",))
            if kind == "bool":  # a 0-d mask: a new dim of size 1 (True) or 0 (False)
                arrays.append(np.zeros(int(v), np.int64))
                axes.append(axis)
            elif kind == "graph_bool":  # one the graph computes: its length the run binds
                arrays.append(_graph_mask(v)[0])
                axes.append(axis)
            axis += 1
        elif kind == "int":
            spec.append(("int", v))
            dim += 1
        elif kind == "slice":
            spec.append(_slice_spec(v))
            axis, dim = axis + 1, dim + 1
        elif kind in ("mask", "graph_mask"):
            _check_mask(x, v, dim)
            found = np.nonzero(v) if kind == "mask" else _graph_mask(v)
            for k, i in enumerate(found):
                spec.append(_FULL)
                arrays.append(i.astype(np.int64) if kind == "mask" else i)
                axes.append(axis + k)
            axis, dim = axis + v.ndim, dim + v.ndim
        elif kind == "select":
            spec.append(_FULL)
            chosen.append((axis, v))
            axis, dim = axis + 1, dim + 1
        else:
            spec.append(_FULL)
            arrays.append(v)
            axes.append(axis)
            axis, dim = axis + 1, dim + 1
    return spec, chosen, arrays, axes


def _spec(items) -> tuple:
    """The spec of basic items (ints, slices, None)."""
    return tuple(("newaxis",) if i is None else _slice_spec(i) if isinstance(i, slice)
                 else ("int", int(i)) for i in items)  # fmt: skip


def _expand_ellipsis(items, ndim, n):
    if Ellipsis not in items:
        return items
    used = sum(1 for i in items if i is not None and i is not Ellipsis)
    if items.count(Ellipsis) > 1:
        return tuple(_ellipses(list(items), Ellipsis, slice(None), ndim - used))
    k = items.index(Ellipsis)
    return items[:k] + (slice(None),) * max(ndim - used, 0) + items[k + 1 :]


def _ellipses(items: list, ellipsis, full, n: int, wide: int = 0) -> list:
    """PyTorch's reading of several Ellipsis (NumPy refuses them): each stands for the `n`
    dims no other item takes, and full slices past the last dim are dropped (`x[..., 0, ...]`
    is `x[..., 0]`). `wide`: the dims that items take beyond one each (masks)."""
    out = []
    for i in items:
        out += [full] * max(n, 0) if i == ellipsis else [i]
    room = len(items) - items.count(ellipsis) + n - wide  # the items that fit the dims
    while len(out) > room and out[-1] == full:
        out.pop()
    return out


def _slice_spec(item: slice):
    parts = [item.start, item.stop, item.step]
    for p in parts:
        if p is not None and not isinstance(p, (int, np.integer)):
            if _is_tensor(p) or isinstance(p, np.ndarray) and p.ndim == 0:
                continue
            raise ArgumentTypeError(  # (PyTorch's message and class)
                f"slice indices must be integers or None or have an __index__ method, got {p!r}"
            )
    spec = ("slice", *(None if p is None else int(p) for p in parts))
    if spec[3] is not None and spec[3] < 0:  # PyTorch's indexing has no negative steps
        raise ArgumentError(
            f"step must be greater than zero (got the slice {item}; flip() reverses a dim)"
        )
    return spec


def _is_tensor(v) -> bool:
    return isinstance(v, Tensor)


def _classify(item, as_ints: bool):
    """(kind, value): "none", "ellipsis", "slice", "int", "bool" (a Python or 0-d bool),
    "mask" (a NumPy bool array), "select" (a 0-d integer Symbol) or "array" (an integer
    array, Tensor or Symbol)."""
    if item is None:
        return "none", None
    if item is Ellipsis:
        return "ellipsis", None
    if isinstance(item, slice):
        return "slice", item
    if isinstance(item, (bool, np.bool_)):
        return "bool", bool(item)
    if isinstance(item, (int, np.integer)):
        return "int", int(item)
    if isinstance(item, Symbol):
        if item.dtype in (np.bool_, np.uint8):
            if item.dtype == np.uint8:
                _as_mask(np.zeros(0, np.uint8))  # PyTorch's deprecation warning
            return ("graph_bool" if item.ndim == 0 else "graph_mask"), item
        _check_dtype(item.dtype, item.ndim == 0 and as_ints)
        return ("select" if item.ndim == 0 and as_ints else "array"), item
    if _is_tensor(item):
        _check_dtype(item.dtype, item.ndim == 0 and as_ints)
        if item.dtype in (np.bool_, np.uint8):
            return _host_kind(_as_mask(item.detach()._host()))
        if item.ndim == 0 and as_ints:
            return "int", int(item.item())
        return "array", item.detach()
    if isinstance(item, (list, tuple, np.ndarray, range)):  # a tuple inside: a sequence
        array = np.asarray(item, np.int64) if isinstance(item, range) else np.asarray(item)
        if array.size == 0 and array.dtype.kind == "f":  # x[[]]: no index
            array = array.astype(np.int64)
        _check_dtype(array.dtype)
        return _host_kind(_as_mask(array), as_ints)
    traced = getattr(item, "symbol", None)  # `i = x.argmax().item()` in a kn.compile trace
    if isinstance(traced, Symbol) and getattr(item, "kind", None) == "item":  # (TracedScalar)
        return _classify(traced.reshape(()), as_ints)  # indexes as its 0-d value does
    raise IndexOutOfRangeError(
        f"only integers, slices (`:`), ellipsis (`...`), None and long or bool tensors are "
        f"valid indices, got {type(item).__name__} (at {user_site()})"
    )


def _as_mask(array: np.ndarray) -> np.ndarray:
    """A uint8 index is a boolean mask, as in PyTorch (which warns that this is deprecated)."""
    if array.dtype != np.uint8:
        return array
    warnings.warn(
        "indexing with dtype uint8 is deprecated (as in PyTorch), please use a dtype bool instead",
        UserWarning,
        stacklevel=4,
    )
    return array.astype(np.bool_)


def _host_kind(array: np.ndarray, as_ints: bool = True):
    if array.dtype == np.bool_:
        return ("bool", bool(array)) if array.ndim == 0 else ("mask", array)
    if array.ndim == 0 and as_ints:
        return "int", int(array)
    return "array", array


_TENSOR_INDEX_DTYPES = tuple(map(dt.public, (dt.int64, dt.int32, dt.uint8, dt.bool_)))


def _check_dtype(dtype, as_int: bool = True) -> None:
    """An index's dtype: an integer or bool array; a tensor that is not one int (`as_int`)
    of int64, int32, uint8 or bool only, as PyTorch (NumPy arrays and lists of any ints)."""
    if not as_int and dtype not in _TENSOR_INDEX_DTYPES:
        raise IndexOutOfRangeError(
            f"tensors used as indices must be long, int, byte or bool tensors, got {dtype} "
            f"(at {user_site()})"
        )
    if dtype != np.bool_ and not dt.is_int(dtype):
        raise IndexOutOfRangeError(
            f"tensors used as indices must be long, int, byte or bool tensors, got {dtype} "
            f"(at {user_site()})"
        )


def _graph_mask(mask) -> list:
    """The coordinates of a mask the graph computes, one 1-D index value per dim."""
    from .torch_index import nonzero_columns

    return nonzero_columns(mask)


def _check_mask(x, mask, dim: int) -> None:
    shape = tuple(x.shape[dim : dim + mask.ndim])
    for have, want in zip(shape, tuple(mask.shape)):
        if isinstance(have, int) and isinstance(want, int) and have != want:
            raise IndexOutOfRangeError(
                f"The shape of the mask {list(mask.shape)} at index {dim} does not match the "
                f"shape of the indexed tensor {list(x.shape)} at index {dim} (at {user_site()})"
            )
        if not isinstance(have, int) or not isinstance(want, int):
            sh.require_equal(have, want, f"the mask {list(mask.shape)} at index {dim}")
