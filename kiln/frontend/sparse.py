"""`kn.sparse`: PyTorch's `torch.sparse` functions on sparse COO tensors (`sum`, `mm`, `addmm`,
`softmax`, `log_softmax`), the sparse-gradient embedding lookup, and `install`, which puts
the layout's methods on the tensors."""

from __future__ import annotations

import functools

import numpy as np

from .. import dtypes as dt
from .. import shapes as sh
from ..eager.sparse import SparseTensor, on_values, unique_entries, wrap
from ..eager.sparse_compressed import SparseCompressedTensor
from ..eager.tensor import Tensor, make, version_of
from ..errors import ArgumentError, UsageError
from ..graph.core import Symbol
from ..graph.opdef import REGISTRY
from ..ops.core import bind
from . import sparse_coo as coo
from . import sparse_ops
from .out import takes_out

__all__ = ["addmm", "log_softmax", "mm", "softmax", "sum"]


def sum(input, dim=None, dtype=None):  # noqa: A001, A002 — PyTorch's names
    """The sum of a sparse tensor's entries: all of them (a 0-d strided tensor), or along
    `dim` (an int or a tuple): a sparse tensor of the other dims, strided once every sparse
    dim is summed.

    >>> import kiln as kn
    >>> s = kn.sparse_coo_tensor([[0, 1, 1], [2, 0, 2]], [3.0, 4.0, 5.0], (2, 3))
    >>> kn.sparse.sum(s), kn.sparse.sum(s, 0).to_dense()
    (tensor(12.), tensor([4., 0., 8.]))
    """
    coo._require_sparse("sparse.sum", input)
    s = input if dtype is None else sparse_ops._cast(input, dtype=dt.as_dtype(dtype))
    if dim is None:
        with on_values():
            out = bind(REGISTRY["reduce_sum"], s, axes=tuple(range(s._data.ndim)),
                       keepdims=False)  # fmt: skip
        return coo._label(out, "SumBackward0")
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    dims = sorted({sh.normalize_axis(d, s.ndim) for d in dims})
    sd = s.sparse_dim()
    value_axes = tuple(d - sd + 1 for d in dims if d >= sd)
    keep = [d for d in range(sd) if d not in dims]
    if not keep:  # every sparse dim summed: strided
        with on_values():
            out = bind(REGISTRY["reduce_sum"], s, axes=(0, *value_axes), keepdims=False)
        return coo._label(out, "SparseSumBackward0")
    shape = tuple(n for d, n in enumerate(s._shape) if d not in dims)
    index, _, inverse = unique_entries(s._index[keep], tuple(s._shape[d] for d in keep))
    out = coo._segment_sum(s, inverse, index.shape[1])
    if value_axes:
        out = bind(REGISTRY["reduce_sum"], out, axes=value_axes, keepdims=False)
    return coo._label(wrap(out, index, shape, True), "SparseSumBackward0")


def mm(mat1, mat2, reduce=None):
    """The product of a sparse matrix and a strided one (a strided result) or two sparse ones
    (a sparse result); the gradient of the sparse operand is sparse, on its pattern. With a
    CSR `mat1`, `reduce="sum"` or `"mean"` reduces each row's products so (PyTorch's).

    >>> import kiln as kn
    >>> s = kn.sparse_coo_tensor([[0, 1], [1, 0]], [2.0, 3.0], (2, 2))
    >>> kn.sparse.mm(s, kn.ones(2, 1))
    tensor([[2.],
            [3.]])
    """
    if reduce is not None or type(mat1) is SparseCompressedTensor:  # CSR, CSC
        from .sparse_compressed_ops import sparse_mm

        return sparse_mm(mat1, mat2, reduce)
    if not isinstance(mat1, SparseTensor):
        from .torch_math import mm as dense_mm

        return dense_mm(mat1, mat2)
    if mat1.ndim != 2 or mat2.ndim != 2:
        raise ArgumentError(
            f"sparse.mm: both arguments must be matrices, got {mat1.ndim}-d and {mat2.ndim}-d"
        )
    return sparse_ops._matmul(mat1, mat2)


@takes_out
def spmm(input, mat2):  # noqa: A002 — PyTorch's names
    """`torch.spmm`: `sparse.mm` under PyTorch's top-level name (`kn.spmm`), as pygcn's
    graph convolution calls it, with PyTorch's `out=`.

    >>> import kiln as kn
    >>> kn.spmm(kn.sparse_coo_tensor([[0, 1], [1, 0]], [2.0, 3.0], (2, 2)), kn.ones(2, 1))
    tensor([[2.],
            [3.]])
    """
    return mm(input, mat2)


def softmax(input, dim: int, dtype=None):  # noqa: A002 — PyTorch's name
    """Softmax along `dim` over the stored entries only (the others count as -inf, so they
    stay unstored zeros): a sparse tensor on `input`'s coalesced pattern.

    >>> import kiln as kn
    >>> s = kn.sparse_coo_tensor([[0, 0, 1], [0, 2, 1]], [1.0, 1.0, 5.0], (2, 3))
    >>> kn.sparse.softmax(s, 1).to_dense()
    tensor([[0.5000, 0.0000, 0.5000],
            [0.0000, 1.0000, 0.0000]])
    """
    return _softmax("softmax", input, dim, dtype, log=False)


def log_softmax(input, dim: int, dtype=None):  # noqa: A002 — PyTorch's name
    """The logarithm of `softmax(input, dim)`, computed stably, on the stored entries.

    >>> import kiln as kn
    >>> s = kn.sparse_coo_tensor([[0, 1]], [0.0, 0.0], (3,))
    >>> kn.sparse.log_softmax(s, 0).values()
    tensor([-0.6931, -0.6931])
    """
    return _softmax("log_softmax", input, dim, dtype, log=True)


def _softmax(name: str, input, dim, dtype, log: bool):  # noqa: A002
    coo._require_sparse(f"sparse.{name}", input)
    s = input if dtype is None else sparse_ops._cast(input, dtype=dt.as_dtype(dtype))
    s = coo.coalesce(s)
    dim = sh.normalize_axis(dim, s.ndim)
    sd = s.sparse_dim()
    if dim >= sd:  # a dense dim: along each value's own axis
        with on_values():
            values = _softmax_values(s, None, dim - sd + 1, log)
    else:  # along a sparse dim: over the entries that agree on every other sparse dim
        others = [d for d in range(sd) if d != dim]
        shape = tuple(s._shape[d] for d in others)
        _, _, group = unique_entries(s._index[others], shape)
        if not others:
            group = np.zeros(s._nnz(), np.int64)
        with on_values():
            values = _softmax_values(s, group, 0, log)
    label = "SparseLogSoftmaxBackward0" if log else "SparseSoftmaxBackward0"
    return coo._label(wrap(values, s._index, s._shape, True), label)


def _softmax_values(s, group, axis: int, log: bool):
    """(log-)softmax of `s`'s values along `axis`, or over the entries of each `group`."""
    data = s._data
    if group is None:
        shift = data.max(axis=axis, keepdims=True) if data.size else data
        e = bind(REGISTRY["exp"], bind(REGISTRY["sub"], s, shift))
        total = bind(REGISTRY["reduce_sum"], e, axes=(axis,), keepdims=True)
        shifted = bind(REGISTRY["sub"], s, shift)
    else:
        n = int(group.max()) + 1 if group.size else 0
        top = np.full((n, *data.shape[1:]), -np.inf, data.dtype)
        np.maximum.at(top, group, data)  # a constant shift: no gradient flows through it
        shifted = bind(REGISTRY["sub"], s, top[group])
        e = bind(REGISTRY["exp"], shifted)
        zeros = make(np.zeros((n, *data.shape[1:]), data.dtype))
        sums = bind(REGISTRY["index_put"], zeros, e, group, spec=(), axes=(0,), accumulate=True)
        total = bind(REGISTRY["advanced_index"], sums, group, axes=(0,))
    if log:
        return bind(REGISTRY["sub"], shifted, bind(REGISTRY["log"], total))
    return bind(REGISTRY["div"], e, total)


def _embedding(ids, weight, padding_idx=None, max_norm=None, scale_grad_by_freq=False):
    """`nn.functional.embedding(..., sparse=True)`: the rows of `weight` that `ids` picks,
    whose gradient for `weight` is sparse as PyTorch's: uncoalesced, one entry per id (in
    order; none for `padding_idx`), the output's gradient row its value. An optimizer reads
    it with `grad.coalesce()`, `grad._indices()`, `grad._values()` (what `SparseAdam` needs).
    """
    if isinstance(weight, Symbol) or isinstance(ids, Symbol):
        raise UsageError(
            "embedding(sparse=True) in a graph (kn.compile, graph "
            "mode): kiln's graph gradients are strided; use sparse=False there"
        )
    if max_norm is not None or scale_grad_by_freq:
        raise UsageError(
            "embedding(sparse=True) with max_norm or "
            "scale_grad_by_freq: kiln's sparse gradient has neither"
        )
    n = weight.shape[0]
    if padding_idx is not None:
        if not -n <= padding_idx < n:
            raise AssertionError("Padding_idx must be within num_embeddings")
        padding_idx %= n
    return _rows_function().apply(weight, ids, padding_idx)


@functools.cache
def _rows_function():
    """The lookup as a `kn.autograd.Function` whose backward gives the sparse gradient (made on
    first use: custom_function imports this package's modules)."""
    from . import shape as s
    from .custom_function import Function
    from .nn_functional import embedding as lookup

    class EmbeddingBackward(Function):
        @staticmethod
        def forward(ctx, weight, ids, padding_idx):
            ctx.ids, ctx.shape, ctx.padding_idx = ids, tuple(weight.shape), padding_idx
            return lookup(weight, ids)

        @staticmethod
        def backward(ctx, grad):
            flat = np.asarray(ctx.ids.detach().numpy() if isinstance(ctx.ids, Tensor)
                              else ctx.ids).reshape(-1).astype(np.int64)  # fmt: skip
            rows = s.reshape(grad, (flat.size, *ctx.shape[1:]))
            if ctx.padding_idx is not None:
                keep = np.nonzero(flat != ctx.padding_idx)[0]
                flat = flat[keep]
                rows = bind(REGISTRY["advanced_index"], rows, keep, axes=(0,))
            index = flat.reshape(1, -1)
            return wrap(rows, index, ctx.shape, False), None, None

    return EmbeddingBackward


def addmm(mat, mat1, mat2, *, beta=1.0, alpha=1.0):
    """`beta * mat + alpha * (mat1 @ mat2)` with a sparse `mat1` (sparse_dim 2), whose
    gradient is sparse on its pattern, as `mm`.

    >>> import kiln as kn
    >>> s = kn.sparse_coo_tensor([[0, 1], [1, 0]], [2.0, 3.0], (2, 2))
    >>> kn.sparse.addmm(kn.ones(2, 2), s, kn.ones(2, 2), beta=0.5, alpha=2.0)
    tensor([[4.5000, 4.5000],
            [6.5000, 6.5000]])
    """
    product = mm(mat1, mat2)
    out = product if alpha == 1 else product * alpha
    out = mat + out if beta == 1 else mat * beta + out
    return coo._label(out, "SparseAddmmBackward0")


# -- the methods ------------------------------------------------------------------------------


def _detach(self):
    out = wrap(make(self._data), self._index, self._shape, self._coalesced)
    out._vc = version_of(self)
    return out


def _data(self):
    return wrap(make(self._data), self._index, self._shape, self._coalesced)


def _deepcopy(self, memo):
    out = wrap(make(self._data.copy()), self._index.copy(), self._shape, self._coalesced)
    out._requires_grad = self._requires_grad
    memo[id(self)] = out
    return out


def install() -> None:
    """The layout's ops in `bind`'s table, and its methods on the tensors: `to_dense` and
    `to_sparse` on every tensor, the rest on sparse ones."""
    sparse_ops.install()
    for cls in (Tensor, Symbol):  # a strided value is its own dense form
        cls.to_dense, cls.sparse_dim, cls.dense_dim = coo.to_dense, coo.sparse_dim, coo.dense_dim
    Tensor.to_sparse = Tensor.to_sparse_coo = coo.to_sparse
    Tensor.sparse_mask = coo.sparse_mask
    # on a strided tensor these raise PyTorch's error (`_require_sparse`)
    for name, fn in {
        "coalesce": coo.coalesce, "indices": coo.indices, "values": coo.values,
        "_indices": coo._indices_, "_values": coo._values_, "is_coalesced": _is_coalesced,
        "_nnz": _nnz,
    }.items():  # fmt: skip
        setattr(Tensor, name, fn)
    SparseTensor.detach, SparseTensor.__deepcopy__ = _detach, _deepcopy
    SparseTensor.data = property(_data)


def _is_coalesced(self) -> bool:
    coo._require_sparse("is_coalesced", self)
    return self._coalesced


def _nnz(self) -> int:
    coo._require_sparse("_nnz", self)
    return self._index.shape[1]
