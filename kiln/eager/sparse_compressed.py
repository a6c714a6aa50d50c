"""Sparse compressed tensors (PyTorch's `torch.sparse_csr` and `torch.sparse_csc` layouts) in
eager mode: the tensor class and its layout's dispatch table.

As a sparse COO tensor (kiln/eager/sparse.py), a `SparseCompressedTensor` is an eager `Tensor`
whose data (`_data`, what the tape records) is its values, `(nnz,)`, stored in the order of
its compressed dim (rows for CSR, columns for CSC); its compressed indices (`crow_indices`
or `ccol_indices`, `size + 1` long) and plain indices (`col_indices` or `row_indices`),
int64 or int32, and its shape are fixed. The cotangent of such a tensor is its values':
`.grad` of a leaf shows it on the leaf's pattern (a compressed tensor), or as a strided
tensor where an op gave the leaf a strided gradient (`mm`, as PyTorch's). The layout's ops
live in `kiln.frontend.sparse_compressed_ops`, which fills `COMPRESSED_OPS`; `bind` reaches
them through `LAYOUTS`, the one layout dispatch, and an op with no entry raises LayoutError.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from ..array_types import layout
from ..errors import LayoutError, node_error
from ..graph.core import user_site
from .sparse import LAYOUTS, ValuesLayout, _add_suffixes, _indent, _inner, layout_dispatch
from .tensor import Tensor, make

__all__ = [
    "COMPRESSED_OPS", "SparseCompressedTensor", "sparse_bsc", "sparse_bsr", "sparse_csc",
    "sparse_csr",
]  # fmt: skip

sparse_csr = layout("sparse_csr")
sparse_csc = layout("sparse_csc")
sparse_bsr = layout("sparse_bsr")
sparse_bsc = layout("sparse_bsc")
COMPRESSED = (sparse_csr, sparse_csc, sparse_bsr, sparse_bsc)

# op name -> `impl(*args, **attrs)`: what `bind(op, ...)` does with a compressed argument
COMPRESSED_OPS: dict = {}

_new = object.__new__
# PyTorch's names of the layouts in its messages ("... but got SparseCsr")
TORCH_NAMES = {
    "strided": "Strided", "sparse_coo": "Sparse", "sparse_csr": "SparseCsr",
    "sparse_csc": "SparseCsc", "sparse_bsr": "SparseBsr", "sparse_bsc": "SparseBsc",
}  # fmt: skip


def wrap(values: Tensor, compressed, plain, shape, csc: bool) -> SparseCompressedTensor:
    """The compressed tensor of `values` (its autograd state taken over: `values` was just
    made by an op and is not seen elsewhere) with these indices, of `shape`."""
    s = _new(SparseCompressedTensor)
    s._data = values._data
    s._meta = values._meta
    s._compressed = compressed
    s._plain = plain
    s._shape = tuple(int(d) for d in shape)
    s._csc = bool(csc)
    return s


def coordinates(s: SparseCompressedTensor) -> tuple:
    """(rows, cols) of each stored entry, in storage order (int64).

    >>> import kiln as kn
    >>> [a.tolist() for a in coordinates(kn.tensor([[0.0, 2.0], [3.0, 4.0]]).to_sparse_csc())]
    [[1, 0, 1], [0, 1, 1]]
    """
    counts = np.diff(s._compressed.astype(np.int64))
    outer = np.repeat(np.arange(counts.size, dtype=np.int64), counts)
    inner = s._plain.astype(np.int64)
    return (inner, outer) if s._csc else (outer, inner)


def grad_of(leaf: SparseCompressedTensor, g):
    """The gradient of a compressed leaf as `.grad` and `kn.autograd.grad` show it: its
    values' cotangent on its pattern (a compressed tensor), or a strided one as it is."""
    if type(g) is not Tensor or g.ndim == leaf.ndim:
        return g
    if leaf._csc:  # PyTorch's backward fails there (only strided ones reach CSC leaves)
        raise node_error(
            LayoutError,
            "Sparse CSC tensors do not have is_contiguous (PyTorch cannot accumulate a "
            "gradient on a CSC leaf's pattern; mm and sum give it a strided one; or make "
            "the leaf CSR or strided)",
            op="grad", site=user_site(), called=True,
        )  # fmt: skip
    with_grad = g._requires_grad or g.grad_fn is not None
    return wrap(g if with_grad else make(g._data), leaf._compressed, leaf._plain, leaf._shape,
                leaf._csc)  # fmt: skip


def accumulate(leaf: SparseCompressedTensor, old, new, create_graph: bool):
    """`leaf.grad + new`, where `old` (the gradient so far, or None) and `new` are each its
    values' cotangent (on its pattern; or `grad_of`'s compressed tensor of it) or a strided
    gradient: two of a kind add as they are, a strided one and one on the pattern give a
    strided sum, as PyTorch's (which raises where the strided one comes second)."""
    if old is None:
        return new if create_graph and new._requires_grad else make(new._data.copy(), new._device)
    on_pattern = [type(g) is SparseCompressedTensor or g.ndim != leaf.ndim for g in (old, new)]
    if on_pattern[0] == on_pattern[1]:
        if create_graph or old._requires_grad or new._requires_grad:
            return Tensor.__add__(old, new) if not on_pattern[0] else _values_sum(old, new)
        old._data += new._data
        return old
    dense = [_scattered(leaf, g) if p else g for g, p in zip((old, new), on_pattern)]
    return dense[0] + dense[1]


def _scattered(leaf: SparseCompressedTensor, g) -> Tensor:
    """The strided tensor of `leaf`'s shape holding the values cotangent `g` on its pattern."""
    rows, cols = coordinates(leaf)
    out = np.zeros(leaf._shape, dtype=g._data.dtype)
    np.add.at(out, (rows, cols), np.asarray(g._data))
    return make(out, g._device)


def _values_sum(old, new):
    """The recorded sum of two values cotangents of a leaf, on its pattern."""
    values = [make(g._data) if type(g) is SparseCompressedTensor else g for g in (old, new)]
    return Tensor.__add__(values[0], values[1])


def like(s: SparseCompressedTensor, fill, dtype=None, requires_grad: bool = False):
    """`s`'s pattern with every value `fill` (`ones_like`, `full_like`, `empty_like`), or
    with no entries for `fill=None` (`zeros_like`), as PyTorch's.

    >>> import kiln as kn
    >>> s = kn.tensor([[0.0, 2.0], [3.0, 0.0]]).to_sparse_csr()
    >>> like(s, 7.0).values(), like(s, None)._nnz()
    (tensor([7., 7.]), 0)
    """
    dtype = s._data.dtype if dtype is None else dt.as_dtype(dtype)
    if fill is None:
        n_outer = s._shape[1] if s._csc else s._shape[0]
        index = s._plain.dtype
        values, compressed, plain = (
            np.zeros(0, dtype),
            np.zeros(n_outer + 1, index),
            np.zeros(0, index),
        )
    else:
        values, compressed, plain = np.full(s._nnz(), fill, dtype), s._compressed, s._plain
    out = wrap(make(values), compressed, plain, s._shape, s._csc)
    return out.requires_grad_(True) if requires_grad else out


def torch_name(t) -> str:
    """PyTorch's name of t's layout in its messages (`SparseCsr`)."""
    return TORCH_NAMES[getattr(t.layout, "name", "strided")]


class SparseCompressedTensor(ValuesLayout):
    """A sparse CSR or CSC matrix: `kn.sparse_csr_tensor(crow_indices, col_indices, values)`,
    `kn.sparse_csc_tensor(...)` or `dense.to_sparse_csr()` / `to_sparse_csc()`; `to_dense()`
    gives the strided tensor back.

    >>> import kiln as kn
    >>> s = kn.tensor([[0.0, 2.0, 0.0], [3.0, 0.0, 4.0]]).to_sparse_csr()
    >>> s.layout, s.is_sparse_csr, s.crow_indices(), s.col_indices(), s.values()
    (kiln.sparse_csr, True, tensor([0, 1, 3]), tensor([1, 0, 2]), tensor([2., 3., 4.]))
    """

    __slots__ = ("_compressed", "_plain", "_csc")

    def __init__(self, *args, **kwargs):
        raise LayoutError(
            "SparseCompressedTensor is made by kiln.sparse_csr_tensor, kiln.sparse_csc_tensor "
            "or Tensor.to_sparse_csr() / to_sparse_csc()"
        )

    # -- what it is --------------------------------------------------------------------------

    layout = property(lambda self: sparse_csc if self._csc else sparse_csr)
    is_sparse = property(lambda self: False)  # PyTorch's: True for sparse_coo only
    is_sparse_csr = property(lambda self: not self._csc)

    def __len__(self):
        return self._shape[0]

    def _nnz(self) -> int:
        """The number of stored entries."""
        return int(self._plain.shape[0])

    def sparse_dim(self) -> int:
        return 2

    def dense_dim(self) -> int:
        return len(self._shape) - 2

    # -- the gradient ------------------------------------------------------------------------

    def _get_grad(self):
        g = Tensor.grad.fget(self)
        out = grad_of(self, g)
        if out is not g:
            self._grad = out  # accumulates in place into the same values from now on
        return out

    grad = property(_get_grad, Tensor.grad.fset)

    # -- what PyTorch refuses for the layout ----------------------------------------------------

    def _kind(self) -> str:
        return "CSC" if self._csc else "CSR"

    def numpy(self, *, force: bool = False):
        raise node_error(
            LayoutError,
            f"can't convert {torch_name(self)} layout tensor to numpy. Use Tensor.to_dense() "
            "first.",
            op="numpy", site=user_site(), called=True,
        )  # fmt: skip

    def __array__(self, dtype=None, copy=None):
        return self.numpy()

    def item(self):
        if self.numel() != 1:
            raise node_error(LayoutError, f"a Tensor with {self.numel()} elements cannot be "
                             "converted to Scalar", op="item", site=user_site(),
                             called=True)  # fmt: skip
        return self.to_dense().item()

    def tolist(self):
        raise _error("tolist", self)

    def _host(self):
        raise _error("data access", self)

    def __iter__(self):
        raise _error("iteration", self)

    def stride(self, dim=None):
        raise _error("stride", self, f"Sparse {self._kind()} tensors do not have strides")

    def is_contiguous(self, memory_format=None):
        raise _error(
            "is_contiguous", self, f"Sparse {self._kind()} tensors do not have is_contiguous"
        )

    def reshape(self, *shape):
        raise _error("reshape", self, f"Sparse {self._kind()} tensors do not have is_contiguous")

    # -- printing ----------------------------------------------------------------------------

    def __repr__(self):
        outer, inner = ("col", "row") if self._csc else ("row", "col")
        c, p = _inner(self._compressed), _inner(self._plain)
        v = _inner(self._data)
        extra = [f"size={tuple(self._shape)}", f"nnz={self._nnz()}"]
        if self.dtype not in (dt.DEFAULT_FLOAT, dt.int64, dt.bool_, dt.default_complex()):
            extra.append(f"dtype=kiln.{self.dtype.name}")
        extra.append(f"layout={self.layout!r}")
        if self._device != "cpu":
            extra.append(f"device='{self._device}'")
        if self.grad_fn is not None:
            extra.append(f"grad_fn=<{self.grad_fn.name()}>")
        elif self._requires_grad:
            extra.append("requires_grad=True")
        first, second = f"c{outer}_indices=", f"{inner}_indices="
        body = (first + _indent(c, 7 + len(first)) + ",\n       " + second
                + _indent(p, 7 + len(second)) + ",\n       values=" + _indent(v, 14))  # fmt: skip
        return "tensor(" + _add_suffixes(body, extra, first_apart=False)


def _error(name: str, t, message: str | None = None) -> LayoutError:
    """LayoutError for op `name` on compressed `t` (PyTorch's `message` where it has one)."""
    from .sparse import layout_error

    if message is None:
        return layout_error(name, t, layout=t.layout.name)
    return node_error(LayoutError, message, op=name, site=user_site(), called=True)


def dispatch(op, args, attrs):
    """`bind(op, *args)` with a compressed argument: the layout's op, or a LayoutError that
    names the op and the layout of the first compressed argument."""
    for a in args:
        if type(a) is SparseCompressedTensor:
            return _BY_LAYOUT[a._csc](op, args, attrs)
    raise AssertionError("dispatch without a compressed argument")


_BY_LAYOUT = {False: layout_dispatch(COMPRESSED_OPS, "sparse_csr"),
              True: layout_dispatch(COMPRESSED_OPS, "sparse_csc")}  # fmt: skip
LAYOUTS[SparseCompressedTensor] = dispatch
