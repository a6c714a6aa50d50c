"""The ops `bind` sends to the sparse COO layout (`SPARSE_OPS`, kiln/eager/sparse.py), as
PyTorch's sparse kernels compute them: elementwise ops that keep zeros act on the values;
`mul` by a scalar, a strided tensor of the same shape or another sparse tensor; `add` and
`sub` of two sparse tensors (PyTorch's merge) or a strided tensor and a sparse one; `matmul`
of a sparse matrix and a strided or sparse one, and `addmm`; `reduce_sum`; `cast`; `transpose`.
"""

from __future__ import annotations

import functools

import numpy as np

from .. import dtypes as dt
from ..eager.sparse import (
    SPARSE_OPS,
    SparseTensor,
    StridedGrad,
    layout_error,
    on_values,
    unique_entries,
    wrap,
)
from ..eager.tensor import Tensor, make
from ..errors import DTypeMismatchError, LayoutError, ShapeError, call_error
from ..graph.core import Symbol
from ..graph.opdef import REGISTRY
from ..ops.core import bind
from .sparse_coo import _label, _segment_sum, coalesce, to_dense

_GATHER, _INDEX_PUT = REGISTRY["advanced_index"], REGISTRY["index_put"]

# The elementwise ops PyTorch runs on a sparse COO tensor's values (f(0) == 0, so the zeros
# that are not stored stay zeros).
ZERO_KEEPING = (
    "neg", "abs", "sin", "sinh", "tan", "tanh", "asin", "asinh", "atan", "atanh", "sqrt",
    "floor", "ceil", "expm1", "log1p", "relu", "erf", "square",
)  # fmt: skip


def _on_values(op):
    linear = op.name == "neg"  # others act on the sum of repeated entries: coalesce first

    def impl(s, **attrs):
        if not linear:
            s = coalesce(s)
        with on_values():
            out = bind(op, s, **attrs)
        return wrap(out, s._index, s._shape, s._coalesced)

    return impl


def _cast(s, *, dtype):
    with on_values():
        out = bind(REGISTRY["cast"], s, dtype=dtype)
    return wrap(out, s._index, s._shape, s._coalesced)


def _scalar(x) -> bool:
    return not isinstance(x, SparseTensor) and np.ndim(x) == 0


def _gathered(s: SparseTensor, dense) -> Tensor:
    """`dense` (s's shape) at s's stored positions: (nnz, *dense dims), on the tape."""
    if tuple(dense.shape) != s._shape:
        raise call_error(ShapeError, f"mul of a sparse tensor of size {list(s._shape)} and a "
                         f"strided one of size {list(dense.shape)}: the sizes must match",
                         "mul", s, dense)  # fmt: skip
    return bind(_GATHER, dense, *s._index, axes=tuple(range(s.sparse_dim())))


def _mul(a, b):
    if isinstance(a, SparseTensor) and isinstance(b, SparseTensor):
        return _mul_sparse(a, b)
    s, other = (a, b) if isinstance(a, SparseTensor) else (b, a)
    if not _scalar(other):
        other = _gathered(s, other)
    with on_values():
        out = bind(REGISTRY["mul"], s, other) if s is a else bind(REGISTRY["mul"], other, s)
    return wrap(out, s._index, s._shape, s._coalesced)


def _mul_sparse(a: SparseTensor, b: SparseTensor) -> SparseTensor:
    """The entries both hold, multiplied: coalesced, as PyTorch's for coalesced operands (for
    uncoalesced ones PyTorch keeps one operand's pattern, zeros included; the values agree)."""
    if a._shape != b._shape:
        raise call_error(ShapeError, f"mul of sparse tensors of sizes {list(a._shape)} and "
                         f"{list(b._shape)}", "mul", a, b)  # fmt: skip
    a, b = coalesce(a), coalesce(b)
    sparse_shape = a._shape[: a.sparse_dim()]
    fa = np.ravel_multi_index(tuple(a._index), sparse_shape)
    fb = np.ravel_multi_index(tuple(b._index), sparse_shape)
    _, ia, ib = np.intersect1d(fa, fb, assume_unique=True, return_indices=True)
    with on_values():
        va = bind(_GATHER, a, ia.astype(np.int64), axes=(0,))
        vb = bind(_GATHER, b, ib.astype(np.int64), axes=(0,))
    return wrap(bind(REGISTRY["mul"], va, vb), a._index[:, ia], a._shape, True)


def _div(a, b):
    if not isinstance(a, SparseTensor) or not _scalar(b):
        raise layout_error("div (of a sparse tensor by a scalar only)", a, b)
    with on_values():
        out = bind(REGISTRY["div"], a, b)
    return wrap(out, a._index, a._shape, a._coalesced)


def _merge(a: SparseTensor, b: SparseTensor) -> tuple:
    """PyTorch's sparse addition order: a walk over both entry lists, taking the entry with
    the smaller index first and both at once where they are equal (duplicates within one list
    stay). (slots, a's slot of each entry, b's slot of each entry, is the sum coalesced)."""
    sparse_shape = a._shape[: a.sparse_dim()]
    fa = np.ravel_multi_index(tuple(a._index), sparse_shape) if a._nnz() else np.zeros(0, int)
    fb = np.ravel_multi_index(tuple(b._index), sparse_shape) if b._nnz() else np.zeros(0, int)
    if a._coalesced and b._coalesced:  # both sorted and distinct: a sorted union
        flat, inverse = np.unique(np.concatenate([fa, fb]), return_inverse=True)
        inverse = inverse.reshape(-1)
        return flat, inverse[: fa.size], inverse[fa.size :], True
    slots, sa, sb = [], np.empty(fa.size, np.int64), np.empty(fb.size, np.int64)
    i = j = 0
    while i < fa.size or j < fb.size:
        if j >= fb.size or (i < fa.size and fa[i] < fb[j]):
            sa[i] = len(slots)
            slots.append(fa[i])
            i += 1
        elif i >= fa.size or fb[j] < fa[i]:
            sb[j] = len(slots)
            slots.append(fb[j])
            j += 1
        else:
            sa[i] = sb[j] = len(slots)
            slots.append(fa[i])
            i, j = i + 1, j + 1
    return np.asarray(slots, np.int64), sa, sb, False


def _add_sparse(a: SparseTensor, b: SparseTensor) -> SparseTensor:
    if a._shape != b._shape or a.sparse_dim() != b.sparse_dim():
        raise call_error(ShapeError, f"add of sparse tensors of sizes {list(a._shape)} (sparse "
                         f"dims {a.sparse_dim()}) and {list(b._shape)} (sparse dims "
                         f"{b.sparse_dim()})", "add", a, b)  # fmt: skip
    if a.dtype != b.dtype:
        common = dt.result_type(a.dtype, b.dtype)
        a, b = _cast(a, dtype=common), _cast(b, dtype=common)
    sd = a.sparse_dim()
    if not (a._data.flags.c_contiguous and b._data.flags.c_contiguous):
        # PyTorch's rule: values not contiguous (a broadcast gradient, say) are concatenated
        with on_values():
            out = bind(REGISTRY["concat"], a, b, axis=0)
        index = np.concatenate([a._index, b._index], axis=1)
        return _label(wrap(out, index, a._shape, False), "AddBackward0")
    slots, sa, sb, coalesced = _merge(a, b)
    index = np.stack(np.unravel_index(slots, a._shape[:sd])).astype(np.int64).reshape(sd, -1)
    zeros = make(np.zeros((slots.size, *a._data.shape[1:]), a._data.dtype))
    with on_values():
        out = bind(_INDEX_PUT, zeros, a, sa, spec=(), axes=(0,), accumulate=True)
        out = bind(_INDEX_PUT, out, b, sb, spec=(), axes=(0,), accumulate=True)
    return _label(wrap(out, index, a._shape, coalesced), "AddBackward0")


def _add(a, b):
    if isinstance(a, SparseTensor) and isinstance(b, SparseTensor):
        return _add_sparse(a, b)
    if isinstance(a, SparseTensor):  # PyTorch's message and rule
        raise call_error(LayoutError, "add(sparse, dense) is not supported. Use add(dense, "
                         "sparse) instead.", "add", a, b)  # fmt: skip
    return bind(REGISTRY["add"], a, to_dense(b))


def _sub(a, b):
    if isinstance(b, SparseTensor):
        b = _on_values(REGISTRY["neg"])(b)
    return _add(a, b)


def _transpose(s, *, perm):
    sd = s.sparse_dim()
    if sorted(perm[:sd]) != list(range(sd)):
        raise layout_error("transpose (of a sparse dim with a dense one)", s)
    with on_values():
        dense_perm = (0, *(p - sd + 1 for p in perm[sd:]))
        out = bind(REGISTRY["transpose"], s, perm=dense_perm)
    shape = tuple(s._shape[p] for p in perm)
    return _label(wrap(out, s._index[list(perm[:sd])], shape, s._nnz() == 0), "TransposeBackward0")


def _reduce_sum(s, *, axes, keepdims, **attrs):
    from .sparse import sum as sparse_sum

    if keepdims:
        raise layout_error("sum (keepdim=True)", s)
    return sparse_sum(s, None if len(axes) == s.ndim else axes)


def _matmul_op(a, b):
    """`kn.mm`, `kn.matmul` and `@` with a sparse operand. As PyTorch's, a sparse leaf that
    requires grad gets a strided gradient here (`kn.sparse.mm` gives a sparse one); a sparse
    operand made from values (`sparse_coo_tensor(indices, values)`, then sparse ops) passes
    its gradient on to those values, as PyTorch's does (its own retained `.grad` is on its
    pattern, where PyTorch's is strided); one made from a sparse or strided leaf is refused
    (PyTorch gives that leaf a strided gradient, which kiln carries to sparse leaves only)."""
    from ..eager.grad_mode import is_grad_enabled

    if not isinstance(a, SparseTensor) and isinstance(b, SparseTensor):
        return _strided_sparse(a, b, b.requires_grad and is_grad_enabled())
    if not (isinstance(a, SparseTensor) and a.requires_grad and is_grad_enabled()):
        return _matmul(a, b)
    if a.grad_fn is not None:
        if not _made_from_values(a.grad_fn):
            raise call_error(LayoutError, "mm/matmul of a sparse tensor that requires grad, made "
                             "from a sparse or strided leaf: PyTorch gives that leaf a strided "
                             "gradient, which kiln carries to sparse leaves only; use "
                             "kn.sparse.mm (a sparse gradient, on its pattern) or to_dense() "
                             "first", "matmul", a, b)  # fmt: skip
        # made from values (sparse_coo_tensor(indices, values)): their gradient, through the
        # product's ops on them, is PyTorch's
        return _label(_matmul(a, b), "MmBackward0" if b.ndim == 2 else "MvBackward0")
    with on_values():  # the tape entry's input is a's values: its edge is a itself
        out = _mm_function().apply(a, b)
    return _label(out, "MmBackward0" if b.ndim == 2 else "MvBackward0")


def _strided_sparse(a, b: SparseTensor, leaf_grad: bool):
    """strided (1-D or 2-D) @ a sparse matrix, as `(b.T @ a.T).T`. A sparse leaf that requires
    grad gets a strided gradient, as PyTorch's `mm`; a sparse tensor made by other ops gets
    its values' gradient through the product's ops on them."""
    if a.ndim not in (1, 2) or b.ndim != 2 or b.sparse_dim() != 2:
        raise layout_error("matmul (of a strided tensor and a sparse one, other than matrices)",
                           a, b)  # fmt: skip
    if a.ndim == 1:
        row = bind(REGISTRY["reshape"], a, shape=(1, a.shape[0]))
        out = _strided_sparse(row, b, leaf_grad)
        return _label(bind(REGISTRY["reshape"], out, shape=(b._shape[1],)), "SqueezeBackward4")
    if leaf_grad and b.grad_fn is None:
        with on_values():  # the tape entry's input is b's values: its edge is b itself
            out = _right_mm_function().apply(a, b)
        return _label(out, "MmBackward0")
    return _label(_right_product(a, b), "MmBackward0")


def _right_product(a, b: SparseTensor):
    at = bind(REGISTRY["transpose"], a, perm=(1, 0))
    return bind(REGISTRY["transpose"], _matmul(_transpose(b, perm=(1, 0)), at), perm=(1, 0))


def _made_from_values(node) -> bool:
    """Whether the sparse tensor of autograd `node` is made, through sparse ops, from values
    (`sparse_coo_tensor(indices, values)`) alone: no sparse leaf and no `to_sparse` of a
    strided tensor, whose PyTorch gradient through `mm` is strided, off the pattern too."""
    stack, seen = [node], set()
    while stack:
        n = stack.pop()
        if n is None or id(n) in seen:
            continue
        seen.add(id(n))
        name = n.name()
        if name == "SparseCooTensorWithDimsAndTensorsBackward0":
            continue
        if name.startswith("ToSparseBackward") or isinstance(getattr(n, "variable", None),
                                                             SparseTensor):  # fmt: skip
            return False
        stack.extend(f for f, _ in n.next_functions)
    return True


@functools.cache
def _right_mm_function():
    """strided @ sparse leaf as a `kn.autograd.Function` whose gradient of the sparse operand
    is strided (`StridedGrad`), as PyTorch's `mm`."""
    from .custom_function import Function

    class StridedSparseMm(Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return _right_product(a, b)

        @staticmethod
        def backward(ctx, ct):
            a, b = ctx.saved_tensors
            grad_a = _right_product(ct, _transpose(b, perm=(1, 0)))
            grad_b = bind(REGISTRY["matmul"], bind(REGISTRY["transpose"], a, perm=(1, 0)), ct)
            return grad_a, StridedGrad.of(grad_b)

    return StridedSparseMm


@functools.cache
def _mm_function():
    """sparse @ strided as a `kn.autograd.Function` whose gradient of the sparse operand is
    strided (`StridedGrad`), as PyTorch's `mm`."""
    from .custom_function import Function

    class SparseMm(Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return _matmul(a, b)

        @staticmethod
        def backward(ctx, ct):
            a, b = ctx.saved_tensors
            if b.ndim == 1:
                grad_a = bind(REGISTRY["mul"], bind(REGISTRY["reshape"], ct, shape=(-1, 1)),
                              bind(REGISTRY["reshape"], b, shape=(1, -1)))  # fmt: skip
            else:
                grad_a = bind(REGISTRY["matmul"], ct, bind(REGISTRY["transpose"], b, perm=(1, 0)))
            grad_b = _matmul(_transpose(a, perm=(1, 0)), ct)
            return StridedGrad.of(grad_a), grad_b

    return SparseMm


def _matmul(a, b):
    if not isinstance(a, SparseTensor):
        raise layout_error("matmul (of a strided matrix and a sparse one)", a, b)
    if a.ndim != 2 or a.sparse_dim() != 2 or b.ndim not in (1, 2):
        raise call_error(ShapeError, "matmul of a sparse tensor: kiln multiplies a 2-D sparse "
                         f"matrix (sparse_dim 2) by a 1-D or 2-D tensor, got {list(a._shape)} "
                         f"(sparse_dim {a.sparse_dim()}) and {list(b.shape)}",
                         "matmul", a, b)  # fmt: skip
    if isinstance(b.shape[0], int) and a._shape[1] != b.shape[0]:
        raise call_error(ShapeError, f"mat1 and mat2 shapes cannot be multiplied "
                         f"({a._shape[0]}x{a._shape[1]} and {'x'.join(map(str, b.shape))})",
                         "matmul", a, b)  # fmt: skip
    if a.dtype != b.dtype:
        raise call_error(DTypeMismatchError, f"expected m1 and m2 to have the same dtype, but "
                         f"got: {a.dtype} != {b.dtype}", "matmul", a, b)  # fmt: skip
    if isinstance(b, SparseTensor):
        return _sparse_product(a, b)
    if isinstance(b, Symbol):
        return _graph_product(a, b)
    rows, cols = a._index
    taken = bind(_GATHER, b, cols, axes=(0,))  # (nnz, n) or (nnz,)
    with on_values():
        v = bind(REGISTRY["reshape"], a, shape=(a._nnz(), *(1,) * (b.ndim - 1)))
    zeros = make(np.zeros((a._shape[0], *b.shape[1:]), b._data.dtype))
    out = bind(_INDEX_PUT, zeros, bind(REGISTRY["mul"], v, taken), rows, spec=(), axes=(0,),
               accumulate=True)  # fmt: skip
    return _label(out, "SparseAddmmBackward0")


def _addmm(x, a, b, *, beta=1.0, alpha=1.0):
    """`kn.addmm(input, sparse, strided)`: the product as `mm` gives it, scaled, plus the
    scaled input; where beta is 0 the input is ignored, NaNs included, and its gradient is
    zeros, as PyTorch's."""
    from .math import where

    if not isinstance(a, SparseTensor) or isinstance(x, SparseTensor):
        raise layout_error("addmm (other than of a strided input and a sparse mat1)", x, a, b)
    product = _matmul_op(a, b)
    out = product if alpha == 1 else product * alpha
    if beta == 0:
        scaled = where(make(np.zeros((), bool)), x, 0)
    else:
        scaled = x if beta == 1 else x * beta
    return _label(out + scaled, "AddmmBackward0")


def _graph_product(a: SparseTensor, b: Symbol) -> Symbol:
    """sparse @ a graph value (`kn.sparse.mm` under `kn.compile`): the sparse tensor's entries
    are constants of the graph, so it may not require grad."""
    from .core import lift
    from .shape import broadcast_to
    from .sparse_coo import graph_error

    if a.requires_grad:
        raise graph_error("sparse.mm of a sparse tensor that requires grad", a)
    rows, cols = a._index
    values = a._data.reshape(a._nnz(), *(1,) * (b.ndim - 1))
    rows, cols, values, zero = lift(rows, cols, values, np.zeros((), values.dtype),
                                    context=(b,))  # fmt: skip
    taken = bind(_GATHER, b, cols, axes=(0,))
    zeros = broadcast_to(zero, (a._shape[0], *b.shape[1:]))
    return bind(_INDEX_PUT, zeros, bind(REGISTRY["mul"], values, taken), rows, spec=(),
                axes=(0,), accumulate=True)  # fmt: skip


def _sparse_product(a: SparseTensor, b: SparseTensor) -> SparseTensor:
    """sparse (m, k) @ sparse (k, n): every pair a[i, j] b[j, l], summed by (i, l)."""
    if b.sparse_dim() != 2:
        raise layout_error("matmul (of a hybrid sparse tensor)", a, b)
    ar, ac = a._index
    br, bc = b._index
    pa, pb = np.nonzero(ac[:, None] == br[None, :])  # the pairs that meet
    with on_values():
        va = bind(_GATHER, a, pa.astype(np.int64), axes=(0,))
        vb = bind(_GATHER, b, pb.astype(np.int64), axes=(0,))
    products = wrap(bind(REGISTRY["mul"], va, vb), np.stack([ar[pa], bc[pb]]).astype(np.int64),
                    (a._shape[0], b._shape[1]), False)  # fmt: skip
    index, _, inverse = unique_entries(products._index, products._shape)
    out = _segment_sum(products, inverse, index.shape[1])
    return _label(wrap(out, index, products._shape, True), "SparseAddmmBackward0")


def install() -> None:
    """Fills the layout's table (kiln/eager/sparse.py `SPARSE_OPS`)."""
    for name in ZERO_KEEPING:
        SPARSE_OPS[name] = _on_values(REGISTRY[name])
    SPARSE_OPS.update(addmm=_addmm, cast=_cast, mul=_mul, div=_div, add=_add, sub=_sub,
                      matmul=_matmul_op, transpose=_transpose, reduce_sum=_reduce_sum)  # fmt: skip
