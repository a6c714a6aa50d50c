"""PyTorch's indexing functions: `gather`, `scatter` (and `scatter_add`, `scatter_reduce`),
`index_select`, `masked_fill`, and those whose result's shape depends on the data
(`masked_select`, `nonzero`): eagerly computed on the host, in a graph built on the `nonzero`
op, whose length is a dim the run binds (kiln/ops/dynamic.py). NumPy's `take` stays as
`kn.take`."""

from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from .. import shapes as sh
from ..eager.autograd import name_history
from ..eager.factories import tensor
from ..eager.tensor import Tensor
from ..errors import (
    ArgumentTypeError,
    DTypeError,
    DTypeMismatchError,
    IndexOutOfBoundsError,
    ShapeError,
    UnsupportedDTypeError,
    UsageError,
    call_error,
)
from ..graph.core import Symbol
from ..ops.index import check_index_shape
from . import math as m
from . import shape as s
from .core import call, lift
from .out import takes_out
from .result_layouts import c_ordered
from .torch_shape import dim_arg

__all__ = [
    "gather",
    "index_select",
    "masked_fill",
    "masked_select",
    "nonzero",
    "scatter",
    "scatter_add",
    "scatter_reduce",
    "take",
]


def _corner(x, shape, dim):
    """`x` cut to `shape` in every dim but `dim` (where an index is smaller than the input)."""
    if all(d == dim or a == b for d, (a, b) in enumerate(zip(shape, x.shape))):
        return x
    spec = tuple(("slice", None, None, None) if d == dim else ("slice", 0, n, None)
                 for d, n in enumerate(shape))  # fmt: skip
    return call("index", x, spec=spec)


def _one_d(*xs):
    """0-d operands as 1-d ones (PyTorch's index functions take 0-d tensors as 1-d)."""
    return [call("reshape", x, shape=(1,)) if x.ndim == 0 else x for x in xs]


def _operand(input, *others):  # noqa: A002
    """`input` lifted as an op's first operand: a graph constant where another argument is a
    Symbol (`kn.zeros(n).scatter_add(0, idx, src)` in a function kn.compile traces)."""
    (x,) = lift(input, context=tuple(o for o in others if isinstance(o, Symbol)))
    return x


@takes_out
def gather(input, dim: int, index, *, sparse_grad: bool = False, axis=None):  # noqa: A002
    """`out[i][j] = input[index[i][j]][j]` for `dim=0` (PyTorch's `gather`): values along `dim`
    at `index`, which has input's number of dims and may be smaller in the others.

    >>> import kiln as kn
    >>> kn.gather(kn.tensor([[1, 2], [3, 4]]), 1, kn.tensor([[0, 0], [1, 0]]))
    tensor([[1, 1],
            [4, 3]])
    """
    x = _operand(input, index)
    (idx,) = lift(index, context=(x,))
    # PyTorch's order: the dim first (IndexError), then the index's dtype and shape
    dim = sh.normalize_axis(dim_arg(dim, axis, "gather"), max(x.ndim, 1))
    if 0 not in tuple(idx.shape):  # (PyTorch's: an empty index of any integer dtype)
        check_int_index("gather(): Expected dtype int32/int64 for index", x, idx, "gather")
    if 0 in tuple(idx.shape):  # PyTorch's: an empty index gives an empty result, any shape
        # (none of x's elements, x's tensor: on its tape, a gradient of zeros)
        none = call("reshape", x, shape=(-1,))[:0]
        return call("reshape", none, shape=tuple(idx.shape))
    zero_d = idx.ndim == 0  # the result has index's shape (input 0-d: a 1-d of one element)
    x, idx = _one_d(x, idx)
    check_index_shape("gather", x.shape, idx.shape, dim)
    out = call("take_along_axis", _corner(x, idx.shape, dim), idx, axis=dim)
    return call("reshape", out, shape=()) if zero_d else out


def int_index(dtype) -> bool:
    """Whether `dtype` (NumPy's or kiln's) is int32 or int64, PyTorch's index dtypes."""
    return dtype.kind == "i" and dtype.itemsize >= 4


def long_index(dtype) -> bool:
    """Whether `dtype` (NumPy's or kiln's) is int64."""
    return dtype.kind == "i" and dtype.itemsize == 8


def check_int_index(message: str, x, idx, op: str) -> None:
    """PyTorch's refusal of an index tensor that is not int32 or int64 (`gather`, `scatter`,
    `index_select`, `index_add`, `embedding`), with its `message` (RuntimeError).

    >>> import kiln as kn
    >>> check_int_index("gather(): ...", kn.zeros(3), kn.tensor([0], dtype=kn.int16), "gather")
    Traceback (most recent call last):
    kiln.errors.DTypeMismatchError: gather(): ... (op gather, ...
    """
    if not int_index(idx.dtype):
        raise call_error(DTypeMismatchError, message, op, x, idx)


def check_long_index(op: str, x, idx) -> None:
    """PyTorch's refusal of an index tensor that is not int64 (`take`, `put_`).

    >>> import kiln as kn
    >>> check_long_index("take", kn.zeros(3), kn.tensor([0], dtype=kn.int32))
    Traceback (most recent call last):
    kiln.errors.DTypeMismatchError: take(): Expected a long tensor for index, but got Int ...
    """
    if idx.dtype != np.int64:  # (torch 2.13's message)
        message = f"{op}(): Expected a long tensor for index, but got {dt.scalar_name(idx.dtype)}"
        raise call_error(DTypeMismatchError, message, op, x, idx)


@takes_out
def take(input, index, axis=None):  # noqa: A002
    """NumPy's `take`: elements at `index` along `axis` (None: of the flattened input, which
    is PyTorch's `take`: an index tensor must be int64, as PyTorch's); negative indices count
    from the end.

    >>> import kiln as kn, numpy as np
    >>> kn.take(np.arange(6).reshape(2, 3), np.array([2, 0]), axis=1)
    array([[2, 0],
           [5, 3]])
    """
    x = _operand(input, index)
    (idx,) = lift(index, context=(x,))
    if axis is None:
        if type(idx) is not np.ndarray:  # (a NumPy array: NumPy's take, any int index)
            check_long_index("take", x, idx)
        x, axis = call("reshape", x, shape=(sh.dim_product(x.shape),)), 0
    return call("gather", x, idx, axis=sh.normalize_axis(axis, x.ndim), wrap_negative=True)


@takes_out
def index_select(input, dim: int, index, *, axis=None):  # noqa: A002
    """The slices of `input` along `dim` at the 1-D `index` (in [0, size)).

    >>> import kiln as kn
    >>> kn.index_select(kn.tensor([[1, 2], [3, 4]]), 0, kn.tensor([1, 1]))
    tensor([[3, 4],
            [3, 4]])
    """
    x = _operand(input, index)
    (idx,) = lift(index, context=(x,))
    # PyTorch's order: the dim first (IndexError), then the index's dtype
    sh.normalize_axis(dim_arg(dim, axis, "index_select"), max(x.ndim, 1))
    check_int_index("index_select(): Expected dtype int32 or int64 for index", x, idx,
                    "index_select")  # fmt: skip
    if idx.ndim > 1:
        raise call_error(IndexOutOfBoundsError,  # (PyTorch's class)
                         f"index_select(): Index is supposed to be a vector, got {idx.ndim}-d",
                         "index_select", idx)  # fmt: skip
    zero_d = x.ndim == 0
    x, idx = _one_d(x, idx)
    out = s.gather(x, idx, sh.normalize_axis(dim_arg(dim, axis, "index_select"), x.ndim))
    out = call("reshape", out, shape=()) if zero_d else out
    return name_history(out, "IndexSelectBackward0", input)  # PyTorch's node


# -- scatter -------------------------------------------------------------------------------------


def _scatter(input, dim, index, src, reduce, include_self, name, axis):  # noqa: A002
    x = _operand(input, index, src)
    (idx,) = lift(index, context=(x,))
    # PyTorch's order: the dim first (IndexError), then the index's dtype and shape
    dim = sh.normalize_axis(dim_arg(dim, axis, name), max(x.ndim, 1))
    empty = 0 in tuple(idx.shape)
    if name != "index_add" and not empty:  # (index_add: its own message)
        check_int_index("scatter(): Expected dtype int32/int64 for index", x, idx, name)
    if isinstance(src, (bool, int, float, complex)):  # a value: src of index's shape
        (v,) = lift(np.asarray(src, x.dtype), context=(x,))
        src = call("broadcast_to", v, shape=tuple(idx.shape))
    else:
        (src,) = lift(src, context=(x,))
    if empty and name != "index_add":
        # PyTorch's: an empty index, of any dtype and shape, scatters nothing into x (src
        # stays on the tape, its gradient zeros): an empty int64 index of x's rank
        rank = max(x.ndim, 1)
        (idx,) = lift(np.zeros((0,) * rank, np.int64), context=(x,))
        src = call("reshape", call("reshape", src, shape=(-1,))[:0], shape=(0,) * rank)
    zero_d = x.ndim == 0
    x, idx, src = _one_d(x, idx, src)
    out = call("scatter", x, idx, src, axis=dim, reduce=reduce, include_self=bool(include_self))
    return call("reshape", out, shape=()) if zero_d else out


_REDUCE = {None: "none", "add": "sum", "multiply": "prod"}


@takes_out
def scatter(input, dim: int, index, src=None, *, value=None, reduce=None, axis=None):  # noqa: A002
    """`input` with `src` (a tensor, or a number `value`) written at `index` along `dim`:
    `out[index[i][j]][j] = src[i][j]` for `dim=0` (PyTorch's `scatter`; `reduce="add"` or
    `"multiply"` combines instead; repeated indices keep the last value written).

    >>> import kiln as kn
    >>> kn.zeros(2, 3).scatter(0, kn.tensor([[1, 0, 1]]), kn.ones(1, 3))
    tensor([[0., 1., 0.],
            [1., 0., 1.]])
    """
    if (src is None) == (value is None):
        raise ArgumentTypeError("scatter() takes a src tensor or a value, one of them")
    if reduce not in _REDUCE:  # (torch 2.13's class and message)
        raise UsageError(f"scatter: reduce argument must be either add or multiply, got {reduce!r}")
    return _scatter(input, dim, index, value if src is None else src, _REDUCE[reduce], True,
                    "scatter", axis)  # fmt: skip


@takes_out
def scatter_add(input, dim: int, index, src, *, axis=None):  # noqa: A002
    """`input` with `src` added at `index` along `dim`, repeated indices accumulating.

    >>> import kiln as kn
    >>> kn.zeros(3).scatter_add(0, kn.tensor([0, 2, 0]), kn.tensor([1.0, 2.0, 3.0]))
    tensor([4., 0., 2.])
    """
    return _scatter(input, dim, index, src, "sum", True, "scatter_add", axis)


# PyTorch's scatter_reduce takes "max" and "min" too (amax and amin by older names)
_REDUCE_ALIASES = {"max": "amax", "min": "amin"}


@takes_out
def scatter_reduce(
    input,  # noqa: A002 — PyTorch's argument names
    dim: int,
    index,
    src,
    reduce: str,
    *,
    include_self: bool = True,
    axis=None,
):
    """`src` reduced into `input` at `index` along `dim` with `reduce` ("sum", "prod",
    "mean", "amax", "amin"), counting input's own value unless `include_self=False`.

    >>> import kiln as kn
    >>> x = kn.tensor([5.0, 5.0])
    >>> x.scatter_reduce(0, kn.tensor([0, 0, 1]), kn.tensor([1.0, 9.0, 2.0]), "amax")
    tensor([9., 5.])
    """
    reduce = _REDUCE_ALIASES.get(reduce, reduce)
    if reduce not in ("sum", "prod", "mean", "amax", "amin"):
        raise UsageError(  # PyTorch's RuntimeError
            f"scatter_reduce: reduce must be sum, prod, mean, amax or amin, got {reduce!r}"
        )
    dtype = getattr(input, "dtype", None)
    # (torch 2.13's kernels: no mean of bools, no order of complex numbers)
    if (reduce == "mean" and dtype == np.bool_) or (
        reduce in ("amax", "amin") and dtype is not None and dt.is_complex(dtype)
    ):
        why = f'"scatter_gather_tensor_cpu_reduce_{reduce}" not implemented for ' + (
            f"'{dt.scalar_name(dtype)}'"
        )
        raise call_error(UnsupportedDTypeError, why, "scatter_reduce", input)
    return _scatter(input, dim, index, src, reduce, include_self, "scatter_reduce", axis)


# -- masks ---------------------------------------------------------------------------------------


def masked_fill(input, mask, value):  # noqa: A002
    """`input` with `value` (a number or a 0-d tensor, cast to input's dtype) where the bool
    `mask` holds (the two broadcast together, as in PyTorch).

    >>> import kiln as kn
    >>> kn.tensor([1, 2, 3]).masked_fill(kn.tensor([True, False, True]), 0)
    tensor([0, 2, 0])
    """
    x = _operand(input, mask, value)
    (mask,) = lift(mask, context=(x,))
    if mask.dtype != np.bool_:
        raise DTypeError(f"masked_fill only supports boolean masks, but got mask with dtype "
                         f"{mask.dtype}")  # fmt: skip
    if isinstance(value, (bool, int, float, complex)):
        value = dt.number_array(value, x.dtype, "masked_fill", x)
    (v,) = lift(value, context=(x,))
    if v.ndim != 0:
        raise ShapeError(f"masked_fill only supports a 0-dimensional value tensor, but got "
                         f"{v.ndim} dimension(s)")  # fmt: skip
    if v.dtype != x.dtype:
        v = call("cast", v, dtype=x.dtype)
    out = m.where(mask, v, x)  # of the broadcast shape (the in-place form checks it)
    # PyTorch's is C-ordered (a C-ordered clone, filled; where keeps a transposed input's layout)
    out = c_ordered(out)
    # PyTorch's node: of a number, or of a 0-d tensor too (MaskedFillBackward1)
    if isinstance(value, Tensor):
        return name_history(out, "MaskedFillBackward1", input, value)
    return name_history(out, "MaskedFillBackward0", input)


@takes_out
def masked_select(input, mask):  # noqa: A002
    """The elements of `input` where `mask` holds (both broadcast), as a 1-D tensor (in a
    graph, of a length the run binds). Gradients reach `input`.

    >>> import kiln as kn
    >>> kn.masked_select(kn.tensor([[1, 2], [3, 4]]), kn.tensor([True, False]))
    tensor([1, 3])
    """
    x, mask = lift(input, mask)
    if mask.dtype != np.bool_:
        raise DTypeError(f"masked_select: expected a boolean mask, got {mask.dtype}")
    shape = sh.broadcast_shapes(tuple(x.shape), tuple(mask.shape))
    size = sh.dim_product(shape)
    flat = call("reshape", _broadcast(x, shape), shape=(size,))
    if isinstance(x, Symbol) or isinstance(mask, Symbol):
        flat_mask = call("reshape", _broadcast(mask, shape), shape=(size,))
        return s.gather(flat, nonzero_columns(flat_mask)[0], 0)
    keep = np.flatnonzero(np.broadcast_to(_host(mask), shape))
    return s.gather(flat, keep, 0)


def _broadcast(x, shape):
    return x if tuple(x.shape) == tuple(shape) else call("broadcast_to", x, shape=shape)


def nonzero_columns(x) -> list:
    """The coordinates of graph value `x`'s nonzero elements, one 1-D int64 value per dim
    (one for a 0-d `x`), all of one length: a dim the run binds (the `nonzero` op)."""
    if x.ndim == 0:  # one column of zeros, as long as the count (0 or 1)
        found = call("nonzero", call("reshape", x, shape=(1,)), count=sh.Dim())
        return [m.mul(_column(found, 0), 0)]
    found = call("nonzero", x, count=sh.Dim())
    return [_column(found, k) for k in range(x.ndim)]


def _column(found, k: int):
    return call("index", found, spec=(("slice", None, None, None), ("int", k)))


def _host(t) -> np.ndarray:
    return t.detach().cpu().numpy() if hasattr(t, "detach") else np.asarray(t)


def nonzero(input, *, out=None, as_tuple: bool = False):  # noqa: A002
    """The indices of the nonzero elements: an (n, ndim) int64 tensor, or with `as_tuple` one
    1-D tensor per dim (then no `out=`, as PyTorch's). In a graph the count is a dim the run
    binds.

    >>> import kiln as kn
    >>> kn.nonzero(kn.tensor([[0, 1], [2, 0]]))
    tensor([[0, 1],
            [1, 0]])
    """
    if as_tuple and out is not None:
        raise UsageError("nonzero does not support the out kwarg when as_tuple is True")
    return _nonzero(input, out=out, as_tuple=as_tuple)


@takes_out
def _nonzero(input, *, as_tuple: bool = False):  # noqa: A002
    (x,) = lift(input)
    if isinstance(x, Symbol):
        if as_tuple:
            return tuple(nonzero_columns(x))
        return call("nonzero", x, count=sh.Dim())
    host = _host(x)
    found = np.argwhere(host).astype(np.int64)
    if as_tuple:
        columns = [found[:, k] for k in range(host.ndim)]
        if not host.ndim:  # a 0-d input: one column of zeros, as long as the count (0 or 1)
            columns = [np.zeros(len(found), np.int64)]
        return tuple(_like(x, np.ascontiguousarray(c)) for c in columns)
    return _like(x, found)


_nonzero.without_out.__name__ = "nonzero"  # (out='s checks name it)
nonzero.without_out = _nonzero.without_out  # (the Tensor method)


def _like(x, array):
    """`array` as the kind of value `x` is: a Tensor on x's device, or a NumPy array."""
    if isinstance(x, Tensor):
        return tensor(array, device=x.device)
    return array


def where_method(self, condition, other):
    """`x.where(condition, y)`: PyTorch's method form of `where(condition, x, y)`."""
    return m.where(condition, self, other)
