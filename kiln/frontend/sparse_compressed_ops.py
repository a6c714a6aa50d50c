"""The ops `bind` sends to the sparse compressed layouts (`COMPRESSED_OPS`,
kiln/eager/sparse_compressed.py), as PyTorch's CSR and CSC kernels compute them: the
zero-keeping elementwise ops PyTorch runs on the values; `mul` by a scalar, a strided
tensor of the same shape or a CSR tensor; `add` of two CSR tensors (the union of their
patterns) or of a strided tensor and a compressed one; `matmul`/`addmm` of a compressed matrix
and a strided one, `matmul` of two compressed ones (a CSR result); the full `reduce_sum`;
`cast` (`to(dtype)`, `clone`); `transpose` (CSR <-> CSC). Every other op raises LayoutError,
naming the op and the layout.

Products that a gradient goes through are computed with kiln's ops on the values (a gather of
the strided operand's rows, a product and a scatter-add, NumPy kernels): the tape records
them as any ops, so the gradients of both operands need no new rule; the others (inference,
no operand that requires grad) by scipy.sparse's kernel, about 10x faster (2000 x 2000 at 1%
times 2000 x 64). As PyTorch's
`mm`, a compressed leaf that requires grad gets a strided gradient there (`StridedGrad`);
`kn.sparse.mm` gives one on its pattern.
"""

from __future__ import annotations

import functools

import numpy as np

from ..eager.sparse import StridedGrad, on_values
from ..eager.sparse_compressed import (
    COMPRESSED_OPS,
    SparseCompressedTensor,
    coordinates,
    torch_name,
    wrap,
)
from ..eager.tensor import Tensor, make, version_of
from ..errors import (
    DTypeMismatchError,
    LayoutError,
    ShapeError,
    UnsupportedDTypeError,
    UsageError,
    call_error,
)
from ..graph.core import Symbol
from ..graph.opdef import REGISTRY
from ..ops.core import bind
from .sparse_coo import _label, graph_error

_GATHER, _INDEX_PUT = REGISTRY["advanced_index"], REGISTRY["index_put"]

# The elementwise ops PyTorch 2.13 runs on a CSR or CSC tensor's values (f(0) == 0); others
# (exp, square, sigmoid, pow, clamp...) it refuses, and so does kiln
ZERO_KEEPING = (
    "neg", "abs", "relu", "sin", "sinh", "tan", "tanh", "asin", "asinh", "atan", "atanh",
    "sqrt", "floor", "ceil", "round", "trunc", "frac", "expm1", "log1p", "erf", "sign", "sgn",
    "angle", "deg2rad", "rad2deg", "isnan", "isinf", "signbit",
)  # fmt: skip


# Of those, the ones PyTorch 2.13 computes but cannot differentiate on the layout (its
# backward raises "unsupported tensor layout: SparseCsr" or a size mismatch): kiln refuses
# them on a tensor that requires grad, when they are recorded
NO_GRAD = frozenset(
    "sin sinh tan tanh asin asinh atan atanh sqrt expm1 erf sgn".split()
)  # fmt: skip


def _refuse_grad(name: str, s: SparseCompressedTensor) -> None:
    if name in NO_GRAD and _recorded(s):
        raise call_error(LayoutError, f"the derivative of {name} on the {s.layout.name} layout "
                         "is not supported (PyTorch's backward raises: unsupported tensor "
                         "layout); to_dense() first, or detach()", name, s)  # fmt: skip


def _like(s: SparseCompressedTensor, values: Tensor) -> SparseCompressedTensor:
    """`values` (just made) on `s`'s pattern."""
    return wrap(values, s._compressed, s._plain, s._shape, s._csc)


def _on_values(op):
    def impl(s, **attrs):
        _refuse_grad(op.name, s)
        with on_values():
            return _like(s, bind(op, s, **attrs))

    return impl


def _cast(s, *, dtype):
    with on_values():
        return _like(s, bind(REGISTRY["cast"], s, dtype=dtype))


def _scalar(x) -> bool:
    return not isinstance(x, SparseCompressedTensor) and np.ndim(x) == 0


def _mul(a, b):
    s, other = (a, b) if type(a) is SparseCompressedTensor else (b, a)
    if not _scalar(other):
        if s._csc:  # PyTorch's: a CSC tensor is multiplied by scalars only
            raise call_error(UsageError, "Expected result Tensor to be of format CSR", "mul",
                             a, b)  # fmt: skip
        if type(other) is SparseCompressedTensor:  # CSR * CSR: where both have entries
            return _label(_by_coo(lambda x, y: x * y, a, b, "mul"), "MulBackward0")
        if isinstance(other, Tensor) and type(other) is not Tensor:
            raise call_error(LayoutError, "mul of a compressed tensor and a "
                             f"{other.layout.name} one", "mul", a, b)  # fmt: skip
        if tuple(other.shape) != s._shape:
            raise call_error(ShapeError, f"sparse_mask(): operands have incompatible sizes; "
                             f"self has size {list(other.shape)} but mask has size "
                             f"{list(s._shape)}", "mul", a, b)  # fmt: skip
        rows, cols = coordinates(s)
        other = bind(_GATHER, other, rows, cols, axes=(0, 1))
    with on_values():
        out = bind(REGISTRY["mul"], s, other) if s is a else bind(REGISTRY["mul"], other, s)
    return _like(s, out)


def _add(a, b):
    if type(a) is not SparseCompressedTensor:  # strided + compressed: strided
        return bind(REGISTRY["add"], a, b.to_dense())
    if type(b) is not SparseCompressedTensor:
        if isinstance(b, Tensor) and type(b) is not Tensor:
            raise call_error(LayoutError, f"add of a compressed tensor and a {b.layout.name} "
                             "one", "add", a, b)  # fmt: skip
        return bind(REGISTRY["add"], a.to_dense(), b)
    if a is b:  # PyTorch's `s + s`, of any compressed layout: on its own pattern
        with on_values():
            return _label(_like(a, bind(REGISTRY["add"], a, a)), "AddBackward0")
    for t in (a, b):  # PyTorch adds CSR tensors only (and a tensor to itself)
        if t._csc:
            raise call_error(UsageError, "crow_indices expected sparse row compressed tensor "
                             f"layout but got {torch_name(t)}", "add", a, b)  # fmt: skip
    if a._shape != b._shape:
        raise call_error(ShapeError, "torch.add: Expected input tensors to have the same shape, "
                         f"but got tensor `self` with shape {list(a._shape)} and tensor "
                         f"`other` with shape {list(b._shape)}", "add", a, b)  # fmt: skip
    if a.dtype != b.dtype:
        raise call_error(DTypeMismatchError, f"expected scalar type {_torch_dtype(a.dtype)} "
                         f"but found {_torch_dtype(b.dtype)}", "add", a, b)  # fmt: skip
    from .sparse_compressed import compress

    (ra, ca), (rb, cb) = coordinates(a), coordinates(b)
    n = a._shape[1]
    flat, inverse = np.unique(np.concatenate([ra * n + ca, rb * n + cb]), return_inverse=True)
    inverse = inverse.reshape(-1).astype(np.int64)
    zeros = make(np.zeros(flat.size, a._data.dtype))
    with on_values():
        out = bind(_INDEX_PUT, zeros, a, inverse[: ra.size], spec=(), axes=(0,), accumulate=True)
        out = bind(_INDEX_PUT, out, b, inverse[ra.size :], spec=(), axes=(0,), accumulate=True)
    index_dtype = np.promote_types(a._plain.dtype, b._plain.dtype)
    result = compress(out, flat // n, flat % n, a._shape, False, index_dtype)
    return _label(result, "AddBackward0")


def _torch_dtype(dtype) -> str:
    """PyTorch's C++ name of a dtype in its messages (`Float`, `Long`)."""
    names = {
        "float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
        "int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
        "bool": "Bool", "complex64": "ComplexFloat", "complex128": "ComplexDouble",
    }  # fmt: skip
    return names.get(dtype.name, dtype.name)


def _transpose(s, *, perm):
    if tuple(perm) == (0, 1):
        with on_values():
            return _like(s, bind(REGISTRY["reshape"], s, shape=tuple(s._data.shape)))
    with on_values():
        values = bind(REGISTRY["reshape"], s, shape=tuple(s._data.shape))
    out = wrap(values, s._compressed, s._plain, s._shape[::-1], not s._csc)
    return _label(out, "TransposeBackward0")


def _reduce_sum(s, *, axes, keepdims, **attrs):
    if len(axes) != s.ndim or keepdims:
        if not keepdims:
            raise call_error(UsageError, "reduction operations on CSR tensors with "
                             "keepdim=False is unsupported", "sum", s)  # fmt: skip
        raise call_error(LayoutError, "sum along a dim (keepdim=True) of a compressed tensor "
                         "is not supported in kiln", "sum", s)  # fmt: skip
    return _label(_with_strided_grad(_sum_function, "sum", s), "SumBackward0")


def _product(a: SparseCompressedTensor, b) -> Tensor:
    """a @ b for a compressed matrix `a` and a strided matrix or vector `b`, on the tape:
    out[rows[k]] += values[k] * b[cols[k]]."""
    if isinstance(b, Symbol):
        raise graph_error("matmul of a compressed sparse tensor", a)
    if type(b) is not Tensor:
        raise call_error(LayoutError, f"matmul of a compressed tensor and a {b.layout.name} "
                         "one is not supported in kiln: to_dense() one of them",
                         "matmul", a, b)  # fmt: skip
    if b.ndim not in (1, 2):
        raise call_error(ShapeError, "matmul of a compressed tensor: kiln multiplies it by a "
                         f"1-D or 2-D tensor, got {list(b.shape)}", "matmul", a, b)  # fmt: skip
    if a._shape[1] != b.shape[0]:
        raise call_error(ShapeError, f"mat1 and mat2 shapes cannot be multiplied "
                         f"({a._shape[0]}x{a._shape[1]} and {'x'.join(map(str, b.shape))})",
                         "matmul", a, b)  # fmt: skip
    if a.dtype != b.dtype:
        raise call_error(DTypeMismatchError, f"expected scalar type {_torch_dtype(a.dtype)} "
                         f"but found {_torch_dtype(b.dtype)}", "matmul", a, b)  # fmt: skip
    _check_product_dtype(a, b, "addmv_out_sparse_csr_impl_mkl" if b.ndim == 1 else
                         "addmm_out_sparse_csr_impl_mkl")  # fmt: skip
    if a._data.dtype.kind in "fc" and a._data.dtype.itemsize >= 4 and not _recorded(a, b):
        return make(_scipy_product(a, b._data))  # no tape entry: scipy's kernel, ~10x faster
    rows, cols = coordinates(a)
    taken = bind(_GATHER, b, cols, axes=(0,))  # (nnz, n) or (nnz,)
    with on_values():
        v = bind(REGISTRY["reshape"], a, shape=(a._nnz(), *(1,) * (b.ndim - 1)))
    zeros = make(np.zeros((a._shape[0], *b.shape[1:]), b._data.dtype))
    return bind(_INDEX_PUT, zeros, bind(REGISTRY["mul"], v, taken), rows, spec=(), axes=(0,),
                accumulate=True)  # fmt: skip


# the dtypes PyTorch's CPU kernels (MKL) multiply compressed matrices in
_PRODUCT_DTYPES = ("float32", "float64", "complex64", "complex128")


def _check_product_dtype(a, b, kernel: str) -> None:
    """PyTorch's refusal of a compressed product in another dtype (float16, integers...)."""
    if a.dtype.name not in _PRODUCT_DTYPES:
        raise call_error(UnsupportedDTypeError, f'"{kernel}" not implemented for '
                         f"'{_torch_dtype(a.dtype)}'", "matmul", a, b)  # fmt: skip


def _recorded(*tensors) -> bool:
    """Whether an op of these tensors goes on the tape now."""
    from ..eager.grad_mode import is_grad_enabled

    return is_grad_enabled() and any(t.requires_grad for t in tensors)


def _scipy_product(a: SparseCompressedTensor, b: np.ndarray) -> np.ndarray:
    """a @ b by scipy.sparse (for products no gradient goes through)."""
    import scipy.sparse as sps

    kind = sps.csc_matrix if a._csc else sps.csr_matrix
    matrix = kind((a._data, a._plain, a._compressed), shape=a._shape)
    return np.asarray(matrix @ b, dtype=b.dtype)


def _matmul(a, b):
    """`mm`, `mv`, `matmul` and `@` with a compressed operand: a strided result. As PyTorch's,
    a compressed leaf that requires grad gets a strided gradient (its full shape)."""
    if type(a) is not SparseCompressedTensor:  # strided @ compressed: (b^T a^T)^T
        if b.requires_grad:
            raise call_error(LayoutError, "matmul of a strided matrix and a compressed one "
                             "that requires grad is not supported in kiln: to_dense() it "
                             "first", "matmul", a, b)  # fmt: skip
        if not isinstance(a, Tensor) or a.ndim != 2:
            raise call_error(LayoutError, "matmul of a strided tensor and a compressed one: "
                             "kiln takes a 2-D strided matrix there", "matmul", a, b)  # fmt: skip
        bt = _transpose(b, perm=(1, 0))
        at = bind(REGISTRY["transpose"], a, perm=(1, 0))
        return bind(REGISTRY["transpose"], _product(bt, at), perm=(1, 0))
    if type(b) is SparseCompressedTensor:  # CSR/CSC @ CSR/CSC: a CSR product
        if a._shape[1] != b._shape[0]:
            raise call_error(ShapeError, f"mat1 and mat2 shapes cannot be multiplied "
                             f"({a._shape[0]}x{a._shape[1]} and {b._shape[0]}x{b._shape[1]})",
                             "matmul", a, b)  # fmt: skip
        from .sparse_ops import _matmul as coo_product  # its values on the tape

        return _label(_by_coo(coo_product, a, b, "matmul"), "MmBackward0")
    name = "MmBackward0" if getattr(b, "ndim", 2) == 2 else "MvBackward0"
    return _label(_with_strided_grad(_mm_function, "matmul", a, b), name)


def _by_coo(fn, a, b, name: str) -> SparseCompressedTensor:
    """`fn` of two compressed tensors computed on their COO forms (kiln's sparse merge and
    product), as a CSR tensor: the values stay on the tape, so each operand's gradient is on
    its pattern (PyTorch's for `*` and `@` of two compressed tensors)."""
    if a.dtype != b.dtype:
        raise call_error(DTypeMismatchError, f"expected scalar type {_torch_dtype(a.dtype)} "
                         f"but found {_torch_dtype(b.dtype)}", name, a, b)  # fmt: skip
    if name == "matmul":
        _check_product_dtype(a, b, "addmm_out_sparse_csr_impl_mkl_sparse")
    out = fn(a.to_sparse_coo(), b.to_sparse_coo()).to_sparse_csr()
    if a._plain.dtype == b._plain.dtype == np.int32:  # PyTorch keeps int32 indices
        out._compressed, out._plain = out._compressed.astype(np.int32), out._plain.astype(np.int32)
    return out


def _with_strided_grad(function, name: str, a, *rest):
    """`function().apply(a, *rest)` where `a` is a compressed leaf that requires grad (its
    gradient is then strided, as PyTorch's), else its forward on the tape (a compressed
    operand made by other ops is refused there: kiln carries a strided gradient only to a
    leaf)."""
    from ..eager.grad_mode import is_grad_enabled

    if not (a.requires_grad and is_grad_enabled()):
        return function().forward(None, a, *rest)
    if a.grad_fn is not None:
        raise call_error(LayoutError, f"{name} of a compressed tensor that requires grad and is "
                         "not a leaf: PyTorch gives it a strided gradient, which kiln carries "
                         "to sparse leaves only; use kn.sparse.mm (a gradient on its pattern) "
                         "or to_dense() first", name, a, *rest)  # fmt: skip
    with on_values():  # the tape entry's input is a's values: its edge is a itself
        return function().apply(a, *rest)


def _tape_free(a: SparseCompressedTensor) -> SparseCompressedTensor:
    return wrap(make(a._data), a._compressed, a._plain, a._shape, a._csc)


@functools.cache
def _mm_function():
    """compressed @ strided as a `kn.autograd.Function` whose gradient of the compressed
    operand is strided (`StridedGrad`), as PyTorch's `mm`."""
    from .custom_function import Function

    class SparseCompressedMm(Function):
        @staticmethod
        def forward(ctx, a, b):
            if ctx is not None:
                ctx.save_for_backward(b)
                ctx.a = _tape_free(a)
            return _product(a, b)

        @staticmethod
        def backward(ctx, ct):
            (b,) = ctx.saved_tensors
            if b.ndim == 1:
                grad_a = bind(REGISTRY["mul"], bind(REGISTRY["reshape"], ct, shape=(-1, 1)),
                              bind(REGISTRY["reshape"], b, shape=(1, -1)))  # fmt: skip
            else:
                grad_a = bind(REGISTRY["matmul"], ct, bind(REGISTRY["transpose"], b, perm=(1, 0)))
            grad_b = _product(_transpose(ctx.a, perm=(1, 0)), ct) if b.requires_grad else None
            return StridedGrad.of(grad_a), grad_b

    return SparseCompressedMm


@functools.cache
def _sum_function():
    """The sum of a compressed tensor's entries, whose gradient is strided (ones of its full
    shape), as PyTorch's."""
    from .custom_function import Function

    class SparseCompressedSum(Function):
        @staticmethod
        def forward(ctx, a):
            if ctx is not None:
                ctx.shape = a._shape
            with on_values():
                return bind(REGISTRY["reduce_sum"], a, axes=(0,), keepdims=False)

        @staticmethod
        def backward(ctx, ct):
            ones = make(np.ones(ctx.shape, ct._data.dtype))
            return (StridedGrad.of(bind(REGISTRY["mul"], ones, ct)),)

    return SparseCompressedSum


def _addmm(x, a, b, *, beta=1.0, alpha=1.0):
    if type(a) is not SparseCompressedTensor or type(x) is not Tensor:
        raise call_error(LayoutError, "addmm takes a strided input and a compressed mat1 in "
                         "kiln", "addmm", x, a, b)  # fmt: skip
    product = _matmul(a, b)
    out = product if alpha == 1 else product * alpha
    out = out if beta == 0 else (x if beta == 1 else x * beta) + out
    return _label(out, "AddmmBackward0")


def sparse_mm(a: SparseCompressedTensor, b, reduce=None):
    """`kn.sparse.mm` of a compressed matrix: its gradient is on its pattern (a compressed
    tensor), as PyTorch's `torch.sparse.mm`; `reduce` ("sum", "mean") of a CSR matrix."""
    if reduce is not None:
        return _mm_reduce(a, b, reduce)
    if type(b) is SparseCompressedTensor:  # a CSR product, gradients on the patterns
        return _matmul(a, b)
    if getattr(b, "ndim", 2) != 2:
        raise call_error(ShapeError, f"sparse.mm: both arguments must be matrices, got 2-d and "
                         f"{b.ndim}-d", "sparse.mm", a, b)  # fmt: skip
    from ..eager.grad_mode import is_grad_enabled

    if a._csc and a.requires_grad and is_grad_enabled():  # PyTorch's backward refuses it
        raise call_error(UsageError, "sparse_addmm_sparse_backward: unsupported combination of "
                         "layouts, grad: Strided, mat1: SparseCsc, mat2: Strided",
                         "sparse.mm", a, b)  # fmt: skip
    return _label(_product(a, b), "SparseAddmmBackward0")


def _mm_reduce(a, b, reduce: str):
    """PyTorch's `sparse.mm(a, b, reduce)`: each row's products summed, or averaged over the
    row's entries (rows without entries give zeros); amax and amin are not in kiln."""
    if type(a) is not SparseCompressedTensor:
        what = "Strided" if type(a) is Tensor else getattr(a.layout, "name", "?")
        raise call_error(LayoutError, f"sparse.mm(reduce=) takes a CSR mat1, got {what}",
                         "sparse.mm", a, b)  # fmt: skip
    if a._csc:
        raise call_error(UsageError, "sparse_mm_reduce: expect self to be SparseCsr, got "
                         "SparseCsc", "sparse.mm", a, b)  # fmt: skip
    if reduce not in ("sum", "mean", "amax", "amin"):
        raise call_error(UsageError, f"sparse_mm_reduce: reduce type of {reduce} has not been "
                         "enabled.", "sparse.mm", a, b)  # fmt: skip
    if reduce in ("amax", "amin"):
        raise call_error(LayoutError, f"sparse.mm(reduce={reduce!r}) is not supported in kiln "
                         "(sum and mean are)", "sparse.mm", a, b)  # fmt: skip
    out = sparse_mm(a, b)
    if reduce == "mean":
        counts = np.maximum(np.diff(a._compressed.astype(np.int64)), 1).astype(out._data.dtype)
        out = bind(REGISTRY["div"], out, counts.reshape(-1, *(1,) * (out.ndim - 1)))
    return _label(out, "SparseMmReduceImplBackward0")


# -- the methods ------------------------------------------------------------------------------

# Zero-keeping elementwise functions kiln composes of several ops (so `bind` never sees them
# whole): as methods, they run on the values (`trunc` as `kn.trunc(c)` stays refused)
COMPOSITE_METHODS = ("trunc", "frac", "sign", "sgn", "isinf", "signbit")


def _composite(name: str):
    def method(self, *args, **kwargs):
        _refuse_grad(name, self)
        with on_values():
            values = bind(REGISTRY["reshape"], self, shape=tuple(self._data.shape))
        return _like(self, getattr(Tensor, name)(values, *args, **kwargs))

    method.__name__ = name
    method.__doc__ = f"`{name}` of each stored value, on the same pattern (PyTorch's)."
    return method


def _detach(self):
    out = _tape_free(self)
    out._vc = version_of(self)
    return out


def _data(self):
    return _tape_free(self)


def _deepcopy(self, memo):
    out = wrap(make(self._data.copy()), self._compressed.copy(), self._plain.copy(),
               self._shape, self._csc)  # fmt: skip
    out._requires_grad = self._requires_grad
    memo[id(self)] = out
    return out


def install() -> None:
    """Fills the layouts' table (kiln/eager/sparse_compressed.py `COMPRESSED_OPS`)."""
    for name in ZERO_KEEPING:
        if name in REGISTRY:
            COMPRESSED_OPS[name] = _on_values(REGISTRY[name])
    COMPRESSED_OPS.update(cast=_cast, mul=_mul, add=_add, matmul=_matmul, addmm=_addmm,
                          transpose=_transpose, reduce_sum=_reduce_sum)  # fmt: skip


def install_methods() -> None:
    SparseCompressedTensor.detach, SparseCompressedTensor.__deepcopy__ = _detach, _deepcopy
    SparseCompressedTensor.data = property(_data)
    for name in COMPOSITE_METHODS:
        setattr(SparseCompressedTensor, name, _composite(name))
