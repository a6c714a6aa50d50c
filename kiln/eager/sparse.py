"""Sparse COO tensors (PyTorch's `torch.sparse_coo` layout) in eager mode: the tensor class,
its layout's dispatch table, and how autograd sees it.

A `SparseTensor` is an eager `Tensor` whose data (`_data`, what the tape records and
cotangents have the shape of) is its values, `(nnz, *dense dims)`; its indices
`(sparse_dim, nnz)` (int64) and full shape are fixed, not differentiable. So every op on its
values is an ordinary op on the tape, and the cotangent of a sparse tensor is the one of its
values: d out / d values[k] for each stored entry. The layout's ops live in
`kiln.frontend.sparse_coo`, which fills `SPARSE_OPS`: `bind` on a sparse tensor goes there
(`dispatch`), and an op that has no entry raises `LayoutError`, naming the op and the layout.
"""

from __future__ import annotations

import threading

import numpy as np

from .. import dtypes as dt
from ..array_types import Size, layout, size_attribute
from ..errors import LayoutError, node_error
from ..graph.core import user_site
from . import printing
from .tensor import Tensor, make

__all__ = ["LAYOUTS", "SPARSE_OPS", "SparseTensor", "StridedGrad", "sparse_coo"]

sparse_coo = layout("sparse_coo")

# op name -> `impl(*args, **attrs)`: what `bind(op, ...)` does when an argument is sparse
SPARSE_OPS: dict = {}
# Tensor subclass of another layout (sparse, quantized) -> `dispatch(op, args, attrs)`: what
# `bind` does with an argument of it (kiln/eager/dispatch.py)
LAYOUTS: dict = {}

_local = threading.local()
_new = object.__new__


class on_values:  # noqa: N801 — used as a context manager, like no_grad
    """Inside it, `bind` on a sparse tensor runs the op on its values (what the layout's own
    ops do); outside it, sparse arguments go to `SPARSE_OPS`."""

    def __enter__(self):
        _local.depth = getattr(_local, "depth", 0) + 1

    def __exit__(self, *exc):
        _local.depth -= 1


def values_mode() -> bool:
    """Whether `bind` now runs ops on sparse tensors' values (see `on_values`)."""
    return getattr(_local, "depth", 0) > 0


def layout_dispatch(table: dict, name: str):
    """The `dispatch` of a layout whose ops are in `table` (op name -> impl): what `LAYOUTS`
    holds for the layout's tensor class."""

    def dispatch(op, args, attrs):
        """`bind(op, *args)` where an argument is of the layout: its op, or a LayoutError."""
        impl = table.get(op.name)
        if impl is None:
            raise layout_error(op.name, *args, layout=name)
        return impl(*args, **attrs)

    return dispatch


def layout_error(name: str, *args, layout: str = "sparse_coo") -> LayoutError:
    """The error for op `name` given sparse arguments it has no form for in `layout`."""
    from .tensor import describe

    def label(a):
        kind = getattr(a.layout, "name", "strided")
        return "" if kind == "strided" else kind + " "

    inputs = [label(a) + describe(a) for a in args if isinstance(a, Tensor)]
    return node_error(
        LayoutError,
        f"{name} does not support the {layout} layout (kiln.{layout}): call to_dense() "
        "first, or use a kiln.sparse function",
        op=name,
        site=user_site(),
        called=True,
        inputs=inputs,
    )


def wrap(values: Tensor, indices: np.ndarray, shape, coalesced: bool) -> SparseTensor:
    """The sparse tensor of `values` (its autograd state taken over: `values` was just made
    by an op and is not seen elsewhere) at `indices` in a tensor of `shape`."""
    s = _new(SparseTensor)
    s._data = values._data
    s._meta = values._meta
    s._index = indices
    s._shape = tuple(int(d) for d in shape)
    s._coalesced = bool(coalesced)
    return s


def unique_entries(indices: np.ndarray, shape) -> tuple:
    """(unique_indices, first, inverse): the distinct index columns in row-major order, the
    position of each one's first occurrence, and each column's place among them."""
    sparse_shape = shape[: indices.shape[0]]
    if indices.shape[1] == 0:
        empty = np.zeros(0, np.int64)
        return indices, empty, empty
    flat = np.ravel_multi_index(tuple(indices), sparse_shape) if sparse_shape else None
    if flat is None:  # no sparse dims: every entry is the one position
        return indices[:, :1], np.zeros(1, np.int64), np.zeros(indices.shape[1], np.int64)
    _, first, inverse = np.unique(flat, return_index=True, return_inverse=True)
    return indices[:, first], first.astype(np.int64), inverse.reshape(-1).astype(np.int64)


class StridedGrad(Tensor):
    """A strided gradient of a sparse leaf (its full shape, not its values'): what PyTorch's
    `mm(sparse, strided)` gives the sparse operand. The tape carries it as is to the leaf,
    where it becomes a strided `.grad` (`grad_of`, `add_grads`)."""

    __slots__ = ()

    @staticmethod
    def of(t: Tensor) -> StridedGrad:
        g = _new(StridedGrad)
        g._data, g._meta = t._data, t._meta
        return g


def add_grads(a, b, leaf=None):
    """The sum of two gradients of one tensor where a sparse or strided-of-sparse one is among
    them (values' cotangents of the sparse `leaf` become its sparse gradient first): strided
    plus sparse is strided (PyTorch refuses sparse + strided in that order, so the strided
    one goes first); a strided gradient of a sparse leaf stays one."""
    if leaf is not None:
        a, b = grad_of(leaf, a), grad_of(leaf, b)
    strided = type(a) is StridedGrad or type(b) is StridedGrad
    a = make(a._data) if type(a) is StridedGrad else a
    b = make(b._data) if type(b) is StridedGrad else b
    if a.ndim != b.ndim:  # a compressed leaf's: strided, and its values' (on its pattern)
        raise node_error(
            LayoutError,
            "a sparse compressed tensor got both a strided gradient (from mm or sum) and one "
            "on its pattern (from its other ops) in one backward: kiln cannot add them; "
            "to_dense() it first",
            op="backward", site=user_site(), called=True,
        )  # fmt: skip
    total = b + a if type(a) is SparseTensor and type(b) is not SparseTensor else a + b
    return StridedGrad.of(total) if strided else total


def grad_of(leaf: SparseTensor, ct) -> SparseTensor:
    """The `.grad` of a sparse leaf from the cotangent of its values: sparse, on the leaf's
    coalesced pattern, as PyTorch's. Every op reads a sparse tensor through its dense value,
    so the entries at one position have one cotangent: the first one's stands for it."""
    if isinstance(ct, (SparseTensor, StridedGrad)):
        return ct
    if isinstance(ct, Tensor) and ct._requires_grad:  # create_graph: keep its history
        from ..graph.opdef import REGISTRY
        from ..ops.core import bind

        indices, first, _ = unique_entries(leaf._index, leaf._shape)
        values = bind(REGISTRY["advanced_index"], ct, first, axes=(0,))  # a fresh node
        return wrap(values, indices, leaf._shape, True)
    data = ct._data if isinstance(ct, Tensor) else ct
    if leaf._coalesced:
        indices = leaf._index
    else:
        indices, first, _ = unique_entries(leaf._index, leaf._shape)
        data = data[first]
    # (PyTorch's flag here depends on the op that made the gradient; kiln's is the truth)
    return wrap(make(data), indices, leaf._shape, True)


def zeros_like(s: SparseTensor, dtype=None, requires_grad: bool = False) -> SparseTensor:
    """A sparse tensor of `s`'s shape and dims with no entries (PyTorch's `zeros_like` and
    `empty_like` of a sparse tensor)."""
    dtype = s._data.dtype if dtype is None else dt.as_dtype(dtype)
    sd = s._index.shape[0]
    values = make(np.zeros((0, *s._shape[sd:]), dtype))
    out = wrap(values, np.zeros((sd, 0), np.int64), s._shape, True)
    return out.requires_grad_(True) if requires_grad else out


def replace(t: SparseTensor, result: SparseTensor) -> None:
    """Makes `t` hold `result`'s entries (an in-place op's commit: its nnz may change)."""
    t._data = result._data
    for name in ("_shape", *type(t).__slots__):  # the layout's shape and indices
        setattr(t, name, getattr(result, name))


class ValuesLayout(Tensor):
    """A tensor of a layout whose data (`_data`) is its stored values, not the whole tensor:
    its shape is `_shape` (the sparse layouts' base)."""

    __slots__ = ("_shape",)

    @property
    def shape(self) -> Size:
        return Size(self._shape)

    @property
    def ndim(self) -> int:
        return len(self._shape)

    def dim(self) -> int:
        return len(self._shape)

    @property
    def size(self):
        return size_attribute(self._shape)

    def numel(self) -> int:
        return int(np.prod(self._shape, dtype=np.int64))

    # -- what its layout has no form for -----------------------------------------------------

    def storage_offset(self):
        raise layout_error("storage_offset", self, layout=self.layout.name)

    def view(self, *shape, size=None, dtype=None):
        raise layout_error("view", self, layout=self.layout.name)

    def contiguous(self, memory_format=None):
        raise layout_error("contiguous", self, layout=self.layout.name)

    def resize_(self, *sizes, size=None):
        raise layout_error("resize_", self, layout=self.layout.name)

    def __getitem__(self, index):
        raise layout_error("indexing", self, layout=self.layout.name)

    def __setitem__(self, index, value):
        raise layout_error("index assignment", self, layout=self.layout.name)


class SparseTensor(ValuesLayout):
    """A sparse COO tensor: `kn.sparse_coo_tensor(indices, values, size)` or
    `dense.to_sparse()`; `to_dense()` gives the strided tensor back.

    >>> import kiln as kn
    >>> s = kn.sparse_coo_tensor([[0, 1, 1], [2, 0, 2]], [3.0, 4.0, 5.0], (2, 3))
    >>> s.layout, s.is_sparse, s.sparse_dim(), s.dense_dim(), s._nnz()
    (kiln.sparse_coo, True, 2, 0, 3)
    >>> s.to_dense()
    tensor([[0., 0., 3.],
            [4., 0., 5.]])
    """

    __slots__ = ("_index", "_coalesced")

    def __init__(self, *args, **kwargs):
        raise LayoutError(
            "SparseTensor is made by kiln.sparse_coo_tensor(indices, values, size) or "
            "Tensor.to_sparse()"
        )

    # -- what it is --------------------------------------------------------------------------

    layout = property(lambda self: sparse_coo)
    is_sparse = property(lambda self: True)

    def __len__(self):
        if not self._shape:
            raise layout_error("len", self)
        return self._shape[0]

    def _nnz(self) -> int:
        """The number of stored entries (duplicates count until `coalesce()`)."""
        return self._index.shape[1]

    def is_coalesced(self) -> bool:
        """Whether the indices are sorted and distinct (what `coalesce()` gives)."""
        return self._coalesced

    def _coalesced_(self, coalesced: bool) -> SparseTensor:
        """Marks the tensor coalesced or not (PyTorch's; the caller vouches for it)."""
        self._coalesced = bool(coalesced)
        return self

    def is_contiguous(self, memory_format=None) -> bool:
        return False

    # -- what PyTorch refuses for the layout ----------------------------------------------------

    def numpy(self):
        raise node_error(
            LayoutError,
            "can't convert Sparse layout tensor to numpy. Use Tensor.to_dense() first.",
            op="numpy", site=user_site(), called=True,
        )  # fmt: skip

    def __array__(self, dtype=None, copy=None):
        return self.numpy()

    def item(self):
        if self.numel() != 1:
            raise layout_error("item", self)
        return self.to_dense().item()

    def tolist(self):
        raise layout_error("tolist", self)

    def _host(self):
        raise layout_error("data access", self)

    def __iter__(self):
        raise layout_error("iteration", self)

    def stride(self, dim=None):
        raise layout_error("stride", self)

    # -- printing ----------------------------------------------------------------------------

    def __repr__(self):
        indices, values = _inner(self._index), _inner(self._data)
        extra = [f"size={tuple(self._shape)}", f"nnz={self._nnz()}"]
        if self.dtype not in (dt.DEFAULT_FLOAT, dt.int64, dt.bool_, dt.default_complex()):
            extra.append(f"dtype=kiln.{self.dtype.name}")
        extra.append("layout=kiln.sparse_coo")
        if self._device != "cpu":
            extra.append(f"device='{self._device}'")
        if self.grad_fn is not None:
            extra.append(f"grad_fn=<{self.grad_fn.name()}>")
        elif self._requires_grad:
            extra.append("requires_grad=True")
        body = "indices=" + _indent(indices, 15) + ",\n       values=" + _indent(values, 14)
        return "tensor(" + _add_suffixes(body, extra)


def _add_suffixes(body: str, suffixes: list, first_apart: bool = True) -> str:
    """`body` then the suffixes (`size=...`, `nnz=...`), the first on a line of its own (unless
    not `first_apart`: compressed layouts) and each next one on the same line while it fits
    the print options' line width."""
    width = int(printing.OPTIONS["linewidth"])
    parts, line = [body], len("tensor(" + body) - ("tensor(" + body).rfind("\n") + 1
    for i, suffix in enumerate(suffixes):
        if (i == 0 and first_apart) or line + len(suffix) + 2 > width:
            parts.append(",\n       " + suffix)
            line = 7 + len(suffix)
        else:
            parts.append(", " + suffix)
            line += len(suffix) + 2
    return "".join(parts) + ")"


def _inner(array: np.ndarray) -> str:
    """`tensor(...)` of an array as a sparse tensor shows its parts: no dtype, and the size
    of an empty one."""
    text = repr(make(array))
    body = text[len("tensor(") : -1]
    body = body.replace(f", dtype=kiln.{dt._PUBLIC[array.dtype].name}", "")
    body = body.split(", size=")[0]
    if array.size == 0:
        body += f", size={tuple(array.shape)}"
    return f"tensor({body})"


def _indent(text: str, width: int) -> str:
    return text.replace("\n", "\n" + " " * width)


dispatch = layout_dispatch(SPARSE_OPS, "sparse_coo")
LAYOUTS[SparseTensor] = dispatch
