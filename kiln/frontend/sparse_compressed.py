"""Sparse compressed tensors (CSR and CSC), as PyTorch's: making them (`sparse_csr_tensor`,
`sparse_csc_tensor`, `sparse_compressed_tensor`, `to_sparse_csr`, `to_sparse_csc`,
`to_sparse(layout=...)`) and reading them (`to_dense`, `to_sparse_coo`, `crow_indices`,
`col_indices`, `ccol_indices`, `row_indices`, `values`). The ops `bind` sends to the layout
are in `sparse_compressed_ops`.

kiln's compressed tensors are 2-D (no batch dims, no dense dims) CSR or CSC matrices; the
block layouts (`kn.sparse_bsr`, `kn.sparse_bsc`) are named but not made. Each function
computes its result's values with kiln's ops on the input's values (inside `on_values`), so
the tape records them and gradients flow to the values (kiln/eager/sparse_compressed.py).
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from ..eager.sparse import SparseTensor, on_values
from ..eager.sparse import wrap as wrap_coo
from ..eager.sparse_compressed import (
    COMPRESSED,
    SparseCompressedTensor,
    coordinates,
    sparse_csc,
    sparse_csr,
    torch_name,
    wrap,
)
from ..eager.tensor import Tensor, make
from ..errors import ArgumentError, LayoutError, ShapeError, UsageError, call_error
from ..graph.core import Symbol
from ..graph.opdef import REGISTRY
from ..ops.core import bind
from . import sparse_coo as coo

__all__ = ["sparse_compressed_tensor", "sparse_csc_tensor", "sparse_csr_tensor"]

_GATHER, _INDEX_PUT = REGISTRY["advanced_index"], REGISTRY["index_put"]
_NAMES = {False: ("crow_indices", "col_indices", "rows", "ncols", "nrows"),
          True: ("ccol_indices", "row_indices", "columns", "nrows", "ncols")}  # fmt: skip


def _is_compressed_layout(layout) -> bool:
    return any(layout is c or str(layout) == repr(c) for c in COMPRESSED)


def _csc_of(layout, name: str) -> bool:
    """Whether `layout` is CSC (False: CSR); the block layouts are refused."""
    text = str(layout)
    if text in ("kiln.sparse_bsr", "kiln.sparse_bsc"):
        raise call_error(LayoutError, f"{name}: the block layout {text} is not supported in "
                         "kiln (CSR and CSC are)", name)  # fmt: skip
    if text not in ("kiln.sparse_csr", "kiln.sparse_csc"):
        got = "none" if layout is None else text
        raise call_error(UsageError, f"{name} expected sparse compressed tensor layout but got "
                         f"{got}", name)  # fmt: skip
    return text == "kiln.sparse_csc"


def _as_index(indices, name: str, op: str) -> np.ndarray:
    """The indices as an int64 array, or int32 where they are int32 (PyTorch keeps both)."""
    if isinstance(indices, Tensor) and type(indices) is not Tensor:
        raise call_error(LayoutError, f"{op}: {name} must be a strided tensor", op, indices)
    if isinstance(indices, Tensor):
        indices = indices.detach().numpy()
    array = np.asarray(indices)
    if array.size == 0 and array.dtype.kind == "f":
        array = array.astype(np.int64)
    if array.dtype.kind not in "iu":
        raise call_error(ArgumentError, f"{op}: {name} must be an int32 or int64 tensor, got "
                         f"{dt.as_dtype(array.dtype)}", op)  # fmt: skip
    if array.ndim != 1:
        raise call_error(LayoutError, f"{op}: {name} of {array.ndim} dims: kiln's compressed "
                         "tensors have no batch dims (1-D indices)", op)  # fmt: skip
    return array if array.dtype == np.int32 else array.astype(np.int64)


def sparse_compressed_tensor(compressed_indices, plain_indices, values, size=None, *,
                             dtype=None, layout=None, device=None, pin_memory: bool = False,
                             requires_grad: bool = False,
                             check_invariants=None) -> SparseCompressedTensor:  # fmt: skip
    """A CSR (`layout=kn.sparse_csr`) or CSC (`kn.sparse_csc`) matrix of `values` (nnz): for
    CSR, row i's entries are `values[crow[i]:crow[i + 1]]` at the columns
    `col_indices[crow[i]:crow[i + 1]]` (CSC: the same with rows and columns swapped). `size`
    defaults to the smallest that holds the indices. kiln always checks the invariants
    (PyTorch's `check_invariants=True`).

    >>> import kiln as kn
    >>> kn.sparse_compressed_tensor([0, 1, 3], [1, 0, 2], [2.0, 3.0, 4.0], (2, 3),
    ...                             layout=kn.sparse_csr).to_dense()
    tensor([[0., 2., 0.],
            [3., 0., 4.]])
    """
    op = "sparse_compressed_tensor"
    csc = _csc_of(layout, op)
    if device is not None and str(device) != "cpu":
        raise UsageError(f"sparse tensors are CPU-only in kiln (device={device})")
    comp_name, plain_name, outer_name, inner_dim, outer_dim = _NAMES[csc]
    compressed = _as_index(compressed_indices, comp_name, op)
    plain = _as_index(plain_indices, plain_name, op)
    if isinstance(values, (SparseTensor, SparseCompressedTensor)):
        raise call_error(LayoutError, f"{op}: values must be a strided tensor", op, values)
    if not isinstance(values, Tensor):
        from ..eager.factories import tensor

        values = tensor(values)
    if values.ndim != 1:
        raise call_error(LayoutError, f"{op}: values of {values.ndim} dims: kiln's "
                         "compressed tensors have no batch or dense dims (1-D values)",
                         op, values)  # fmt: skip
    nnz = values.shape[0]
    if size is None:
        outer = compressed.shape[0] - 1
        inner = int(plain.max()) + 1 if plain.size else 0
        size = (inner, outer) if csc else (outer, inner)
    size = tuple(int(d) for d in size)
    if len(size) != 2:
        raise call_error(ShapeError, "tensor dimensionality must be sum of batch, base, and "
                         f"dense dimensionalities (=0 + 2 + 0) but got {len(size)}",
                         op)  # fmt: skip
    n_outer, n_inner = (size[1], size[0]) if csc else size
    _check(compressed, plain, nnz, n_outer, n_inner, csc)
    target = dt.as_dtype(dtype) if dtype is not None else values.dtype
    copied = bind(REGISTRY["cast"], values, dtype=target)  # a copy, on the tape if values is
    coo._label(copied, "SparseCompressedTensorBackward0")
    out = wrap(copied, compressed.copy(), plain.copy(), size, csc)
    if requires_grad:
        out.requires_grad_(True)
    return out


def _check(compressed, plain, nnz: int, n_outer: int, n_inner: int, csc: bool) -> None:
    """PyTorch's invariants of compressed indices, with its messages."""
    op = "sparse_compressed_tensor"
    comp, pl, outer_name, inner_dim, outer_dim = _NAMES[csc]
    if compressed.shape[0] != n_outer + 1:
        raise call_error(ShapeError, f"{comp}.shape[-1] must be equal to the number of "
                         f"{outer_name} + 1 (={n_outer + 1}), but got {compressed.shape[0]}",
                         op)  # fmt: skip
    if plain.shape[0] != nnz:
        raise call_error(ShapeError, f"{pl}.shape[-1] must be equal to nnz (={nnz}) as defined "
                         f"by values.shape[0], but got {plain.shape[0]}", op)  # fmt: skip
    c = compressed.astype(np.int64)
    if c[0] != 0:
        raise call_error(UsageError, f"`{comp}[..., 0] == 0` is not satisfied.", op)
    if c[-1] != nnz:
        raise call_error(UsageError, f"`{comp}[..., -1] == nnz` is not satisfied.", op)
    steps = np.diff(c)
    if (steps < 0).any() or (steps > n_inner).any():
        raise call_error(UsageError, f"`0 <= {comp}[..., 1:] - {comp}[..., :-1] <= "
                         f"{inner_dim}` is not satisfied.", op)  # fmt: skip
    p = plain.astype(np.int64)
    if p.size and (p.min() < 0 or p.max() >= n_inner):
        raise call_error(UsageError, f"`0 <= {pl} < {inner_dim}` is not satisfied.", op)
    starts = np.zeros(p.size, bool)
    starts[c[:-1][steps > 0]] = True  # the first entry of each row (CSR) or column (CSC)
    if p.size > 1 and ((np.diff(p) <= 0) & ~starts[1:]).any():
        raise call_error(UsageError, f"`{pl}[..., {comp}[..., i - 1]:{comp}[..., i]] for "
                         f"all i = 1, ..., {outer_dim} are sorted and distinct along the last "
                         "dimension values` is not satisfied.", op)  # fmt: skip


def sparse_csr_tensor(crow_indices, col_indices, values, size=None, *, dtype=None, device=None,
                      pin_memory: bool = False, requires_grad: bool = False,
                      check_invariants=None) -> SparseCompressedTensor:  # fmt: skip
    """A CSR matrix: row i's entries are `values[crow_indices[i]:crow_indices[i + 1]]`, at
    the columns `col_indices[crow_indices[i]:crow_indices[i + 1]]` (sorted, distinct).

    >>> import kiln as kn
    >>> kn.sparse_csr_tensor([0, 1, 3], [1, 0, 2], [2.0, 3.0, 4.0], (2, 3))
    tensor(crow_indices=tensor([0, 1, 3]),
           col_indices=tensor([1, 0, 2]),
           values=tensor([2., 3., 4.]), size=(2, 3), nnz=3, layout=kiln.sparse_csr)
    """
    return sparse_compressed_tensor(crow_indices, col_indices, values, size, dtype=dtype,
                                    layout=sparse_csr, device=device,
                                    requires_grad=requires_grad)  # fmt: skip


def sparse_csc_tensor(ccol_indices, row_indices, values, size=None, *, dtype=None, device=None,
                      pin_memory: bool = False, requires_grad: bool = False,
                      check_invariants=None) -> SparseCompressedTensor:  # fmt: skip
    """A CSC matrix: column j's entries are `values[ccol_indices[j]:ccol_indices[j + 1]]`, at
    the rows `row_indices[ccol_indices[j]:ccol_indices[j + 1]]` (sorted, distinct).

    >>> import kiln as kn
    >>> kn.sparse_csc_tensor([0, 1, 2, 3], [1, 0, 1], [3.0, 2.0, 4.0], (2, 3)).to_dense()
    tensor([[0., 2., 0.],
            [3., 0., 4.]])
    """
    return sparse_compressed_tensor(ccol_indices, row_indices, values, size, dtype=dtype,
                                    layout=sparse_csc, device=device,
                                    requires_grad=requires_grad)  # fmt: skip


# -- conversions -------------------------------------------------------------------------------


def compress(values: Tensor, rows: np.ndarray, cols: np.ndarray, shape, csc: bool,
             index_dtype=np.int64) -> SparseCompressedTensor:  # fmt: skip
    """The compressed tensor of entries `values[k]` at (rows[k], cols[k]), given (distinct) in
    the layout's order: row-major for CSR, column-major for CSC."""
    outer, inner, n_outer = (cols, rows, shape[1]) if csc else (rows, cols, shape[0])
    compressed = np.zeros(n_outer + 1, np.int64)
    np.cumsum(np.bincount(outer, minlength=n_outer), out=compressed[1:])
    return wrap(values, compressed.astype(index_dtype), inner.astype(index_dtype), shape, csc)


def _order(rows: np.ndarray, cols: np.ndarray, shape, csc: bool) -> np.ndarray:
    """The permutation that puts entries in the layout's order."""
    return np.lexsort((rows, cols)) if csc else np.lexsort((cols, rows))


def _convert(self, csc: bool, name: str) -> SparseCompressedTensor:
    """`self` (strided, COO or compressed) as a CSR (`csc` False) or CSC matrix."""
    label = "ToSparseCscBackward0" if csc else "ToSparseCsrBackward0"
    if isinstance(self, Symbol):
        raise coo.graph_error(name, self)
    if type(self) is SparseCompressedTensor:
        if self._csc == csc:
            return self
        rows, cols = coordinates(self)
        order = _order(rows, cols, self._shape, csc)
        with on_values():
            values = bind(_GATHER, self, order.astype(np.int64), axes=(0,))
        out = compress(values, rows[order], cols[order], self._shape, csc, self._plain.dtype)
        return coo._label(out, label)
    if self.ndim != 2:
        raise call_error(LayoutError, f"{name}: kiln's compressed tensors are 2-D matrices, "
                         f"got {self.ndim}-d", name, self)  # fmt: skip
    if type(self) is SparseTensor:
        if self.sparse_dim() != 2:
            raise call_error(LayoutError, f"{name}: a hybrid COO tensor (dense dims) has no "
                             "compressed form in kiln", name, self)  # fmt: skip
        s = coo.coalesce(self)  # row-major, distinct
        rows, cols = s._index
        order = _order(rows, cols, s._shape, csc)
        with on_values():
            values = bind(_GATHER, s, order.astype(np.int64), axes=(0,))
        return coo._label(compress(values, rows[order], cols[order], s._shape, csc), label)
    data = self.detach()._host()
    mask = data != 0
    rows, cols = np.nonzero(mask.T)[::-1] if csc else np.nonzero(mask)
    rows, cols = rows.astype(np.int64), cols.astype(np.int64)
    values = bind(_GATHER, self, rows, cols, axes=(0, 1))
    return coo._label(compress(values, rows, cols, tuple(self.shape), csc), label)


def to_sparse_csr(self, dense_dim=None) -> SparseCompressedTensor:
    """This tensor (strided, COO or CSC) as a CSR matrix: its nonzero entries row by row.

    >>> import kiln as kn
    >>> kn.tensor([[0.0, 2.0], [3.0, 0.0]]).to_sparse_csr().crow_indices()
    tensor([0, 1, 2])
    """
    _no_dense_dims(dense_dim, "to_sparse_csr")
    return _convert(self, False, "to_sparse_csr")


def to_sparse_csc(self, dense_dim=None) -> SparseCompressedTensor:
    """This tensor (strided, COO or CSR) as a CSC matrix: its nonzero entries column by column.

    >>> import kiln as kn
    >>> kn.tensor([[0.0, 2.0], [3.0, 0.0]]).to_sparse_csc().row_indices()
    tensor([1, 0])
    """
    _no_dense_dims(dense_dim, "to_sparse_csc")
    return _convert(self, True, "to_sparse_csc")


def _no_dense_dims(dense_dim, name: str) -> None:
    if dense_dim not in (None, 0):
        raise call_error(LayoutError, f"{name}: kiln's compressed tensors have no dense dims "
                         f"(dense_dim={dense_dim})", name)  # fmt: skip


def _refuse_blocks(name: str):
    def refuse(self, *args, **kwargs):
        raise call_error(LayoutError, f"{name}: the block layouts (sparse_bsr, sparse_bsc) are "
                         "not supported in kiln (CSR and CSC are)", name, self)  # fmt: skip

    refuse.__name__ = name
    return refuse


def to_sparse(self, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None):
    """This tensor in a sparse layout: COO (the default; `sparse_dim` sparse dims) or, with
    `layout=kn.sparse_csr` / `kn.sparse_csc`, compressed.

    >>> import kiln as kn
    >>> kn.eye(2).to_sparse(layout=kn.sparse_csc).layout
    kiln.sparse_csc
    """
    if layout is not None and _is_compressed_layout(layout):
        if sparse_dim is not None:
            raise call_error(ArgumentError, "to_sparse: sparse_dim and layout are not both "
                             "accepted", "to_sparse", self)  # fmt: skip
        csc = _csc_of(layout, "to_sparse")
        if blocksize is not None:
            raise _refuse_blocks("to_sparse")(self)
        _no_dense_dims(dense_dim, "to_sparse")
        return _convert(self, csc, "to_sparse")
    if type(self) is SparseCompressedTensor:
        if sparse_dim not in (None, 2):
            raise call_error(UsageError, f"sparse_compressed_to_sparse: conversion from "
                             f"{torch_name(self)} to Sparse with sparse_dim argument !=2 is not "
                             "supported", "to_sparse", self)  # fmt: skip
        return to_sparse_coo(self)
    return coo.to_sparse(self, sparse_dim, layout=layout, blocksize=blocksize,
                         dense_dim=dense_dim)  # fmt: skip


def to_sparse_coo(self):
    """This tensor as a sparse COO tensor (a compressed one's entries in its order: coalesced
    from CSR, not from CSC, as PyTorch's).

    >>> import kiln as kn
    >>> kn.tensor([[0.0, 2.0], [3.0, 0.0]]).to_sparse_csr().to_sparse_coo().indices()
    tensor([[0, 1],
            [1, 0]])
    """
    if type(self) is not SparseCompressedTensor:
        return coo.to_sparse(self)
    rows, cols = coordinates(self)
    with on_values():
        values = bind(REGISTRY["reshape"], self, shape=tuple(self._data.shape))
    index = np.stack([rows, cols]).astype(np.int64).reshape(2, -1)
    # in storage order, as PyTorch's: row-major (coalesced) from CSR, by column from CSC
    # (flagged coalesced, as PyTorch's, only with one entry or no elements at all)
    coalesced = not self._csc or self._nnz() == 1 or self.numel() == 0
    out = wrap_coo(values, index, self._shape, coalesced)
    return coo._label(out, "ToSparseBackward1")


def to_dense(self, dtype=None, *, masked_grad=None) -> Tensor:
    """The strided matrix: each stored entry at its place, zeros elsewhere.

    >>> import kiln as kn
    >>> kn.sparse_csr_tensor([0, 1, 2], [1, 0], [5.0, 6.0], (2, 2)).to_dense()
    tensor([[0., 5.],
            [6., 0.]])
    """
    if type(self) is not SparseCompressedTensor:
        return coo.to_dense(self, dtype, masked_grad=masked_grad)
    s = self if dtype is None else self.to(dtype)
    rows, cols = coordinates(s)
    zeros = make(np.zeros(s._shape, s._data.dtype))
    with on_values():
        out = bind(_INDEX_PUT, zeros, s, rows, cols, spec=(), axes=(0, 1), accumulate=False)
    return coo._label(out, "SparseCompressedToDenseBackward0")


# -- reading ------------------------------------------------------------------------------------


def _reader(name: str, csc: bool, kind: str, attr: str):
    def read(self) -> Tensor:
        if type(self) is not SparseCompressedTensor or self._csc != csc:
            what = "row" if not csc else "column"
            raise call_error(UsageError, f"{name} expected sparse {what} compressed tensor "
                             f"layout but got {torch_name(self)}", name, self)  # fmt: skip
        return make(getattr(self, attr).copy())

    to = "to_sparse_csc" if csc else "to_sparse_csr"
    want = {"crow_indices": "[0, 1, 3]", "col_indices": "[1, 0, 2]",
            "ccol_indices": "[0, 1, 2, 3]", "row_indices": "[1, 0, 1]"}[name]  # fmt: skip
    read.__name__ = name
    read.__doc__ = (
        f"The {kind} indices of a {'CSC' if csc else 'CSR'} matrix (int64, or int32 where it "
        "was made with int32 indices).\n\n    >>> import kiln as kn\n"
        f"    >>> kn.tensor([[0.0, 2.0, 0.0], [3.0, 0.0, 4.0]]).{to}().{name}()\n"
        f"    tensor({want})\n"
    )
    return read


crow_indices = _reader("crow_indices", False, "compressed row", "_compressed")
col_indices = _reader("col_indices", False, "column", "_plain")
ccol_indices = _reader("ccol_indices", True, "compressed column", "_compressed")
row_indices = _reader("row_indices", True, "row", "_plain")


def values(self) -> Tensor:
    """The stored values (COO: of a coalesced tensor); gradients flow through them.

    >>> import kiln as kn
    >>> kn.tensor([[0.0, 2.0], [3.0, 0.0]]).to_sparse_csc().values()
    tensor([3., 2.])
    """
    if type(self) is not SparseCompressedTensor:
        return coo.values(self)
    with on_values():
        out = bind(REGISTRY["reshape"], self, shape=tuple(self._data.shape))
    return coo._label(out, "ValuesBackward0")


def _coo_only(name: str, fallback):
    """`fallback` (a COO method) that raises PyTorch's error on a compressed tensor."""

    def method(self, *args, **kwargs):
        if type(self) is SparseCompressedTensor:
            raise call_error(UsageError, f"{name} expected sparse coordinate tensor layout but "
                             f"got {torch_name(self)}", name, self)  # fmt: skip
        return fallback(self, *args, **kwargs)

    method.__name__, method.__doc__ = name, fallback.__doc__
    return method


def install() -> None:
    """The layout's ops in `bind`'s table and its methods on the tensors (after the COO
    layout's `install`: the methods both layouts have branch here)."""
    from . import sparse_compressed_ops

    sparse_compressed_ops.install()
    for name, fn in {
        "to_sparse_csr": to_sparse_csr, "to_sparse_csc": to_sparse_csc, "to_sparse": to_sparse,
        "to_sparse_coo": to_sparse_coo, "to_dense": to_dense, "crow_indices": crow_indices,
        "col_indices": col_indices, "ccol_indices": ccol_indices, "row_indices": row_indices,
        "values": values, "to_sparse_bsr": _refuse_blocks("to_sparse_bsr"),
        "to_sparse_bsc": _refuse_blocks("to_sparse_bsc"),
    }.items():  # fmt: skip
        setattr(Tensor, name, fn)
    for name in ("indices", "_indices", "_values", "coalesce", "is_coalesced"):
        setattr(Tensor, name, _coo_only(name, getattr(Tensor, name)))
    sparse_compressed_ops.install_methods()
