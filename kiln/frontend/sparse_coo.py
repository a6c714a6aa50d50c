"""Sparse COO tensors, as PyTorch's: making them (`sparse_coo_tensor`, `to_sparse`) and
reading them (`to_dense`, `indices`, `values`, `coalesce`, `sparse_mask`); the ops that
`bind` sends to the layout are in `sparse_ops`, `kn.sparse` in `sparse`.

Each one computes its result's values with kiln's ops on the input's values (inside
`on_values`, where `bind` reads a sparse tensor as its values), so the tape records them as
any other ops and gradients flow to the values (kiln/eager/sparse.py).
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from ..eager.sparse import (
    SparseTensor,
    layout_error,
    on_values,
    unique_entries,
    wrap,
)
from ..eager.tensor import Tensor, describe, make
from ..errors import ArgumentError, DTypeError, ShapeError, UsageError, call_error
from ..graph.core import Symbol
from ..graph.opdef import REGISTRY
from ..ops.core import bind

__all__ = ["sparse_coo_tensor"]

_INDEX_PUT, _GATHER = REGISTRY["index_put"], REGISTRY["advanced_index"]


def _label(t, name: str):
    """Names `t`'s tape entry as PyTorch's (`grad_fn=<ToDenseBackward0>`)."""
    if t.grad_fn is not None:
        t.grad_fn.label = name
    return t


def _as_indices(indices) -> np.ndarray:
    if isinstance(indices, SparseTensor):
        raise layout_error("sparse_coo_tensor (indices)", indices)
    if isinstance(indices, Tensor):
        indices = indices.detach().numpy()
    array = np.asarray(indices)
    if array.size == 0 and array.dtype.kind == "f":
        array = array.astype(np.int64)
    if array.dtype.kind not in "iu":
        raise call_error(DTypeError, f"indices must be an int64 tensor, got {array.dtype}",
                         "sparse_coo_tensor")  # fmt: skip
    return array.astype(np.int64)


def sparse_coo_tensor(indices, values, size=None, *, dtype=None, device=None,
                      pin_memory: bool = False, requires_grad: bool = False,
                      check_invariants=None, is_coalesced=None) -> SparseTensor:  # fmt: skip
    """A sparse COO tensor: `values[k]` at position `indices[:, k]` (int64, sparse_dim x nnz);
    `size` defaults to the smallest that holds the indices (and values' trailing dims, a
    hybrid tensor's dense dims). Repeated indices add up (`coalesce()` sums them). kiln
    always checks the indices (PyTorch's `check_invariants=True`).

    >>> import kiln as kn
    >>> kn.sparse_coo_tensor([[0, 1, 1, 0], [2, 0, 2, 2]], [3.0, 4.0, 5.0, 6.0], (2, 3))
    tensor(indices=tensor([[0, 1, 1, 0],
                           [2, 0, 2, 2]]),
           values=tensor([3., 4., 5., 6.]),
           size=(2, 3), nnz=4, layout=kiln.sparse_coo)
    """
    if device is not None and str(device) != "cpu":
        raise UsageError(f"sparse tensors are CPU-only in kiln (device={device})")
    index = _as_indices(indices)
    if isinstance(values, SparseTensor):
        raise layout_error("sparse_coo_tensor (values)", values)
    if not isinstance(values, Tensor):
        from ..eager.factories import tensor

        values = tensor(values)
    if index.ndim != 2:
        raise call_error(ShapeError, "indices must be sparse_dim x nnz, but got: "
                         f"{list(index.shape)}", "sparse_coo_tensor")  # fmt: skip
    sparse_dim, nnz = index.shape
    if values.ndim == 0 or values.shape[0] != nnz:
        got = values.shape[0] if values.ndim else "none (values is 0-d)"
        raise call_error(ShapeError, "indices and values must have same nnz, but got nnz "
                         f"from indices: {nnz}, nnz from values: {got}",
                         "sparse_coo_tensor")  # fmt: skip
    dense = tuple(values.shape[1:])
    if size is None:
        top = index.max(axis=1) + 1 if nnz else np.zeros(sparse_dim, np.int64)
        size = (*(int(d) for d in top), *dense)
    size = tuple(int(d) for d in size)
    if len(size) != sparse_dim + len(dense):
        raise call_error(ShapeError, "'len(size) == sparse_dim + dense_dim' is not satisfied: "
                         f"len(size) = {len(size)}, sparse_dim = {sparse_dim}, dense_dim = "
                         f"{len(dense)}", "sparse_coo_tensor")  # fmt: skip
    if size[sparse_dim:] != dense:
        raise call_error(ShapeError, f"values has dense dims {list(dense)} but size is "
                         f"{list(size)}", "sparse_coo_tensor")  # fmt: skip
    _check_bounds(index, size)
    target = dt.as_dtype(dtype) if dtype is not None else values.dtype
    copied = bind(REGISTRY["cast"], values, dtype=target)  # a copy, on the tape if values is
    _label(copied, "SparseCooTensorWithDimsAndTensorsBackward0")
    coalesced = nnz < 2 if is_coalesced is None else bool(is_coalesced)
    out = wrap(copied, index.copy(), size, coalesced)
    if requires_grad:
        out.requires_grad_(True)
    return out


def _check_bounds(index: np.ndarray, size) -> None:
    for d in range(index.shape[0]):
        row = index[d]
        if row.size and row.min() < 0:
            raise ArgumentError(f"found negative index {int(row.min())} for dim {d}")  # fmt: skip
        if row.size and row.max() >= size[d]:
            raise ArgumentError(f"size is inconsistent with indices: for dim {d}, "
                             f"size is {size[d]} but found index {int(row.max())}")  # fmt: skip


# -- conversions -------------------------------------------------------------------------------


def _rows(s: SparseTensor) -> list:
    return list(s._index)


def to_dense(self, dtype=None, *, masked_grad=None) -> Tensor:
    """The strided tensor: `self` itself when it is one; a sparse tensor's entries summed at
    their positions, zeros elsewhere.

    >>> import kiln as kn
    >>> kn.tensor([[0.0, 2.0]]).to_sparse().to_dense()
    tensor([[0., 2.]])
    """
    if not isinstance(self, SparseTensor):
        return self if dtype is None or dt.as_dtype(dtype) == self.dtype else self.to(dtype)
    s = self if dtype is None else self.to(dtype)
    zeros = make(np.zeros(s._shape, s._data.dtype))
    sd = s.sparse_dim()
    with on_values():
        if sd == 0:  # every entry at the one position
            out = bind(REGISTRY["add"], zeros, bind(REGISTRY["reduce_sum"], s, axes=(0,),
                                                    keepdims=False))  # fmt: skip
        else:
            out = bind(_INDEX_PUT, zeros, s, *_rows(s), spec=(), axes=tuple(range(sd)),
                       accumulate=True)  # fmt: skip
    return _label(out, "ToDenseBackward0")


def to_sparse(self, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None):
    """The sparse COO tensor of this strided one (coalesced), its first `sparse_dim` dims
    (default: all) indexed, the rest dense: an entry for each position where some value is
    not zero.

    >>> import kiln as kn
    >>> kn.tensor([[0.0, 1.0], [2.0, 0.0]]).to_sparse()
    tensor(indices=tensor([[0, 1],
                           [1, 0]]),
           values=tensor([1., 2.]),
           size=(2, 2), nnz=2, layout=kiln.sparse_coo)
    """
    if layout is not None and str(layout) != "kiln.sparse_coo":
        raise ArgumentError(
            f"to_sparse: layout {layout} is not supported (kiln has sparse_coo only)"
        )
    if isinstance(self, SparseTensor):
        if sparse_dim is not None and sparse_dim != self.sparse_dim():
            raise UsageError(
                "to_sparse: conversion from sparse_coo with sparse_dim "
                f"{self.sparse_dim()} to sparse_dim {sparse_dim} is not supported"
            )
        return self
    if isinstance(self, Symbol):
        raise graph_error("to_sparse", self)
    ndim = self.ndim
    sd = ndim if sparse_dim is None else int(sparse_dim)
    if not 0 <= sd <= ndim:
        raise ArgumentError(f"sparse_dim argument must be in [0, {ndim}] range, but {sd} is given")
    data = self.detach()._host()
    mask = data != 0
    if ndim > sd:
        mask = mask.any(axis=tuple(range(sd, ndim)))
    index = np.stack(np.nonzero(mask)).astype(np.int64).reshape(sd, -1)
    if sd == 0:
        values = bind(REGISTRY["reshape"], self, shape=(1, *self.shape))
    else:
        values = bind(_GATHER, self, *index, axes=tuple(range(sd)))
    name = "ToSparseBackward1" if sparse_dim is None else "ToSparseBackward0"
    return _label(wrap(values, index, self.shape, True), name)


def sparse_mask(self, mask) -> SparseTensor:
    """This strided tensor's values at the positions `mask` (sparse) stores, in a sparse
    tensor of mask's indices (PyTorch's `sparse_mask`); gradients flow to `self` there.

    >>> import kiln as kn
    >>> mask = kn.sparse_coo_tensor([[1]], [9.0], (3,))
    >>> kn.tensor([1.0, 2.0, 3.0]).sparse_mask(mask)._values()
    tensor([2.])
    """
    _require_sparse("sparse_mask (mask)", mask)
    if isinstance(self, SparseTensor):
        self = self.to_dense()  # noqa: PLW0642 — PyTorch's: a sparse self is read densely
    if tuple(self.shape) != mask._shape:
        raise call_error(ShapeError, f"sparse_mask(): operands have incompatible sizes; self "
                         f"has size {list(self.shape)} but mask has size {list(mask._shape)}",
                         "sparse_mask", self, mask)  # fmt: skip
    values = bind(_GATHER, self, *mask._index, axes=tuple(range(mask.sparse_dim())))
    return _label(wrap(values, mask._index, mask._shape, mask._coalesced), "SparseMaskBackward0")


def coalesce(self) -> SparseTensor:
    """The tensor with its indices sorted and distinct, repeated entries summed (itself when
    it is coalesced already).

    >>> import kiln as kn
    >>> kn.sparse_coo_tensor([[1, 0, 1]], [1.0, 2.0, 3.0], (2,)).coalesce()
    tensor(indices=tensor([[0, 1]]),
           values=tensor([2., 4.]),
           size=(2,), nnz=2, layout=kiln.sparse_coo)
    """
    _require_sparse("coalesce", self)
    if self._coalesced:
        return self
    index, _, inverse = unique_entries(self._index, self._shape)
    values = _segment_sum(self, inverse, index.shape[1])
    return _label(wrap(values, index, self._shape, True), "CoalesceBackward0")


def _segment_sum(s: SparseTensor, segment: np.ndarray, n: int) -> Tensor:
    """The values of `s` added up by `segment` (each entry's place among `n`), on the tape."""
    zeros = make(np.zeros((n, *s._data.shape[1:]), s._data.dtype))
    with on_values():
        return bind(_INDEX_PUT, zeros, s, segment, spec=(), axes=(0,), accumulate=True)


def _require_sparse(name: str, t) -> None:
    if not isinstance(t, SparseTensor):
        what = describe(t) if isinstance(t, Tensor) else type(t).__name__
        got = {"sparse_csr": "SparseCsr", "sparse_csc": "SparseCsc"}.get(
            getattr(getattr(t, "layout", None), "name", None), "Strided"
        )
        raise UsageError(f"{name} expected sparse coordinate tensor layout but got {got} "
                         f"({what})")  # fmt: skip


def _require_coalesced(name: str, s) -> None:
    _require_sparse(name, s)
    if not s._coalesced:
        raise UsageError(
            f"Cannot get {name} on an uncoalesced tensor, please call .coalesce() first"
        )


def indices(self) -> Tensor:
    """The indices (sparse_dim x nnz, int64) of a coalesced tensor.

    >>> import kiln as kn
    >>> kn.tensor([[0.0, 2.0], [3.0, 0.0]]).to_sparse().indices()
    tensor([[0, 1],
            [1, 0]])
    """
    _require_coalesced("indices", self)
    return make(self._index)


def values(self) -> Tensor:
    """The values (nnz x dense dims) of a coalesced tensor; gradients flow through them.

    >>> import kiln as kn
    >>> kn.tensor([[0.0, 2.0], [3.0, 0.0]]).to_sparse().values()
    tensor([2., 3.])
    """
    _require_coalesced("values", self)
    with on_values():
        out = bind(REGISTRY["reshape"], self, shape=tuple(self._data.shape))
    return _label(out, "ValuesBackward0")


def _indices_(self) -> Tensor:
    """The indices as stored (coalesced or not)."""
    _require_sparse("_indices", self)
    return make(self._index)


def _values_(self) -> Tensor:
    """The values as stored, outside autograd (PyTorch's `_values`)."""
    _require_sparse("_values", self)
    return make(self._data)


def sparse_dim(self) -> int:
    """The number of sparse dims: 0 for a strided tensor (PyTorch's).

    >>> import kiln as kn
    >>> kn.ones(2, 3).sparse_dim(), kn.ones(2, 3).to_sparse(1).sparse_dim()
    (0, 1)
    """
    return self._index.shape[0] if isinstance(self, SparseTensor) else 0


def dense_dim(self) -> int:
    """The number of dense dims: all of a strided tensor's (PyTorch's)."""
    return self.ndim - sparse_dim(self)


def graph_error(name: str, value) -> UsageError:
    """The error for a sparse or quantized tensor where a graph (placeholder, constant,
    kn.compile) needs a strided value of a plain dtype."""
    kind = value.layout.name  # sparse_coo, sparse_csr, sparse_csc; quantized ones are strided
    what = "dequantize() on the quantized" if value.is_quantized else f"to_dense() on the {kind}"
    also = " (kn.sparse.mm(s, x) takes a sparse s that does not require grad)" * value.is_sparse
    return UsageError(
        f"{name}: kiln's graphs (kn.compile, placeholders, constants) hold strided tensors "
        f"only; call {what} tensor before it enters the graph{also}"
    )
