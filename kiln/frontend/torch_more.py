"""More of PyTorch's functions that are also Tensor methods: `gcd`, `lcm`, `addbmm`,
`cholesky_solve`, `cholesky_inverse`, `index_reduce`, the `unsafe_*` splits, `as_strided` and
`as_strided_scatter`, and `fill_diagonal_`'s new value. Each works on eager Tensors (with
autograd), on Symbols in graph mode and under `kn.compile`, with PyTorch's argument names.

>>> import kiln as kn
>>> kn.gcd(kn.tensor([4, -6, 0]), kn.tensor([6, 4, 0])).tolist()
[2, 2, 0]
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from ..eager.autograd import name_history
from ..errors import (
    DTypeMismatchError,
    ShapeError,
    UnsupportedDTypeError,
    UsageError,
    call_error,
)
from ..graph.core import Symbol
from ..graph.opdef import REGISTRY
from . import core
from . import linalg_factor as lf
from . import math as m
from . import shape as s
from . import torch_extra_shape as xs
from . import torch_index as ti
from . import torch_math as tm
from . import torch_shape as ts
from .core import constant, lift
from .functionalize import (
    detached_from,
    storage_layout,
    storage_root,
    strided_positions,
    strided_probe,
)
from .layouts import refuse_computed_offset
from .linalg_layouts import column_major
from .out import takes_out

__all__ = [
    "addbmm", "as_strided", "as_strided_scatter", "cholesky_inverse", "cholesky_solve", "gcd",
    "index_reduce", "lcm", "unsafe_chunk", "unsafe_split", "unsafe_split_with_sizes",
]  # fmt: skip


def _integer_function(name: str, doc: str):
    fn = core.binary_function(REGISTRY[name])
    fn.__name__ = fn.__qualname__ = name
    fn.__module__ = __name__  # made in core: its docstring is tested here
    fn.__doc__ = doc
    return fn


gcd = _integer_function(
    "gcd",
    """The greatest common divisor of integers, elementwise (non-negative; `gcd(0, 0)` is 0),
    as PyTorch's `gcd`; floats and bools raise.

    >>> import kiln as kn
    >>> kn.gcd(kn.tensor([12, -18, 7]), kn.tensor([18, 12, 0])).tolist()
    [6, 6, 7]
    """,
)
lcm = _integer_function(
    "lcm",
    """The least common multiple of integers, elementwise (non-negative; 0 where either is 0),
    as PyTorch's `lcm`; floats and bools raise.

    >>> import kiln as kn
    >>> kn.lcm(kn.tensor([4, -6, 5]), kn.tensor([6, 4, 0])).tolist()
    [12, 12, 0]
    """,
)


@takes_out
def addbmm(input, batch1, batch2, *, beta=1, alpha=1):  # noqa: A002
    """`beta * input + alpha * sum_b batch1[b] @ batch2[b]`: the batched products of two 3-D
    tensors summed over the batch (`input` broadcasts to the (n, p) result; with `beta=0` it
    is ignored, NaNs included), as PyTorch's `addbmm`.

    >>> import kiln as kn
    >>> kn.addbmm(kn.ones(2, 2), kn.ones(3, 2, 4), kn.ones(3, 4, 2), beta=0.5).tolist()
    [[12.5, 12.5], [12.5, 12.5]]
    """
    x, a, b = lift(input, batch1, batch2)
    if a.dtype in (dt.float16, dt.bfloat16) and x.dtype == a.dtype and a.shape[0] > 0:
        # as PyTorch's: one addmm a batch (each in float32, rounded once to the dtype)
        out = x
        for i in range(a.shape[0]):
            out = tm.addmm(out, a[i], b[i], beta=beta if i == 0 else 1, alpha=alpha)
        return name_history(out, "AddbmmBackward0", x, a, b)
    # the sum in the batch's dtype: integers wrap as PyTorch's (not summed to int64)
    product = m.sum(tm.bmm(*tm.unread_when_alpha_is_zero(alpha, a, b)), 0, dtype=a.dtype)
    kind = dt.result_type(x, product)  # integer coefficients are truncated, as PyTorch's
    beta, alpha = tm.coefficient(beta, kind), tm.coefficient(alpha, kind)
    if alpha != 1:
        product = m.mul(product, alpha)
    if beta == 0:  # input is ignored (it only has to broadcast, as in PyTorch)
        np.broadcast_shapes(tuple(x.shape), tuple(product.shape))
        return name_history(product, "AddbmmBackward0", x, a, b)
    return name_history(m.add(product, x if beta == 1 else m.mul(x, beta)), "AddbmmBackward0",
                        x, a, b)  # fmt: skip


def _factor(name: str, f, upper: bool):
    (f,) = lift(f)
    if f.ndim < 2 or f.shape[-1] != f.shape[-2]:
        raise call_error(ShapeError, f"{name}: the factor must be a batch of square matrices, "
                         f"got shape {list(f.shape)}", name, f)  # fmt: skip
    return f


@takes_out
def cholesky_solve(input, input2, upper: bool = False):  # noqa: A002
    """X with `A X = input`, where `A = L Lᵀ` is given by its Cholesky factor `input2` (lower
    triangular L, or upper U with `A = Uᵀ U` when `upper`; Lᴴ and Uᴴ for complex ones);
    batched, as PyTorch's `cholesky_solve(B, L)`. Only the factor's triangle is read.

    >>> import kiln as kn
    >>> L = kn.tensor([[2.0, 0.0], [1.0, 1.0]])  # A = [[4, 2], [2, 2]]
    >>> kn.cholesky_solve(kn.tensor([[6.0], [4.0]]), L).tolist()
    [[1.0], [1.0]]
    """
    (b,) = lift(input)
    f = _factor("cholesky_solve", input2, upper)
    lf._same_dtype("cholesky_solve: Expected b and A", b, f)
    if b.ndim < 2:
        raise call_error(ShapeError, "cholesky_solve: b should have at least 2 dimensions, "
                         f"got shape {list(b.shape)}", "cholesky_solve", b)  # fmt: skip
    ft = s.matrix_transpose(f)
    ft = core.call("conj", ft) if dt.is_complex(f.dtype) else ft  # A = L Lᴴ when complex
    first, second = (ft, f) if upper else (f, ft)
    y = lf.solve_triangular(first, b, upper=False)
    return column_major(lf.solve_triangular(second, y, upper=True), "CholeskySolveBackward0",
                        b, input2)  # fmt: skip


@takes_out
def cholesky_inverse(input, upper: bool = False):  # noqa: A002
    """The inverse of `A = L Lᵀ` (or `Uᵀ U` when `upper`) from its Cholesky factor `input`,
    batched, as PyTorch's `cholesky_inverse`.

    >>> import kiln as kn
    >>> kn.cholesky_inverse(kn.tensor([[2.0, 0.0], [1.0, 1.0]])).tolist()
    [[0.5, -0.5], [-0.5, 1.0]]
    """
    f = _factor("cholesky_inverse", input, upper)
    n = f.shape[-1]
    eye = np.eye(n, dtype=f.dtype)
    eye = constant(eye, graph=f.graph) if isinstance(f, Symbol) else eye
    eye = s.broadcast_to(eye, tuple(f.shape))
    return column_major(cholesky_solve.without_out(eye, f, upper), "CholeskyInverseBackward0",
                        input)  # fmt: skip


@takes_out
def index_reduce(input, dim: int, index, source, reduce: str, *, include_self: bool = True):  # noqa: A002
    """`input` with `source`'s slices along `dim` reduced into the slices at `index` (1-D)
    with `reduce` ("prod", "mean", "amax" or "amin"; input's own values counted unless
    `include_self=False`), as PyTorch's `index_reduce`.

    >>> import kiln as kn
    >>> x = kn.tensor([1.0, 1.0, 1.0])
    >>> x.index_reduce(0, kn.tensor([0, 0, 2]), kn.tensor([2.0, 3.0, 4.0]), "prod").tolist()
    [6.0, 1.0, 4.0]
    """
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise UsageError(  # (torch 2.13's class and message)
            f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got "
            f"{reduce}."
        )
    x, idx, src = lift(input, index, source)
    d = xs._dim(x, dim)  # (PyTorch's order: a dim out of range first, IndexError)
    if not ti.int_index(idx.dtype):  # (an empty index too; torch 2.13's words)
        why = ("index_reduce_(): Expected dtype int32/int64 for index but got: "
               f"{dt.scalar_name(idx.dtype)}")  # fmt: skip
        raise call_error(DTypeMismatchError, why, "index_reduce", x, idx)
    # torch 2.13's kernels: a 1-D (or 0-d) input of bools or complex numbers has none; wider
    # ones none without include_self, no mean of bools and no order of complex numbers
    kernel = None
    if x.dtype == np.bool_ or dt.is_complex(x.dtype):
        if x.ndim <= 1:
            kernel = "index_func_"
        elif not include_self:
            kernel = "index_reduce_func_exclude_input_init"
        elif x.dtype == np.bool_ and reduce == "mean":
            kernel = "div_floor_cpu"
        elif reduce in ("amax", "amin") and x.dtype != np.bool_:
            kernel = "maximum_cpu" if reduce == "amax" else "minimum_cpu"
    if kernel is not None:
        why = f"\"{kernel}\" not implemented for '{dt.scalar_name(x.dtype)}'"
        raise call_error(UnsupportedDTypeError, why, "index_reduce", x)
    xs._check_source("index_reduce", x, d, idx, src)  # (index_add's rules: no broadcasting)
    if src.ndim == 0:
        src = s.reshape(src, (1,))
    return ti.scatter_reduce(x, d, xs._along(idx, d, src.shape), src, reduce,
                             include_self=include_self)  # fmt: skip


def unsafe_split(tensor, split_size, dim: int = 0) -> tuple:
    """`split` (PyTorch's `unsafe_split`: the same pieces; kiln checks their in-place changes
    as it does split's).

    >>> import kiln as kn
    >>> [p.tolist() for p in kn.unsafe_split(kn.arange(5), 2)]
    [[0, 1], [2, 3], [4]]
    """
    return ts.split(tensor, split_size, dim)


def unsafe_split_with_sizes(input, split_sizes, dim: int = 0) -> tuple:  # noqa: A002
    """`split_with_sizes` (PyTorch's `unsafe_split_with_sizes`).

    >>> import kiln as kn
    >>> [p.tolist() for p in kn.unsafe_split_with_sizes(kn.arange(5), [1, 4])]
    [[0], [1, 2, 3, 4]]
    """
    return ts.split(input, list(split_sizes), dim)


def unsafe_chunk(input, chunks: int, dim: int = 0) -> tuple:  # noqa: A002
    """`chunk` (PyTorch's `unsafe_chunk`).

    >>> import kiln as kn
    >>> [p.tolist() for p in kn.unsafe_chunk(kn.arange(5), 2)]
    [[0, 1, 2], [3, 4]]
    """
    return ts.chunk(input, chunks, dim)


# -- strided views ---------------------------------------------------------------------------


def _sizes(name, size, stride, storage_offset, x):
    size = tuple(int(d) for d in size)
    stride = tuple(int(d) for d in stride)
    if len(size) != len(stride):
        raise call_error(UsageError, f"{name}: mismatch in length of strides and shape "
                         f"({len(size)} sizes, {len(stride)} strides)", name, x)  # fmt: skip
    if any(d < 0 for d in size) or any(d < 0 for d in stride):
        raise call_error(UsageError, f"{name}: negative sizes or strides are not allowed "
                         f"(size {list(size)}, stride {list(stride)})", name, x)  # fmt: skip
    if storage_offset is not None and storage_offset < 0:
        raise call_error(UsageError, f"{name}: negative storage offset {storage_offset}",
                         name, x)  # fmt: skip
    return size, stride


def gather_positions(name: str, x, own: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """The flat indices into x (whose elements lie at the storage positions `own`) of the
    storage positions `wanted`; an error naming `name` where one is not an element of x."""
    flat = own.reshape(-1)
    order = np.argsort(flat, kind="stable")
    found = np.searchsorted(flat[order], wanted.reshape(-1)).clip(0, max(flat.size - 1, 0))
    hit = flat.size > 0 and np.array_equal(flat[order][found], wanted.reshape(-1))
    if wanted.size and not hit:
        raise call_error(
            UsageError,
            f"{name}: the view reads storage positions that are not elements of the tensor "
            f"(it has them at {int(flat.min()) if flat.size else 0}..."
            f"{int(flat.max()) if flat.size else -1}, the view asks for "
            f"{int(wanted.min())}...{int(wanted.max())}): kiln computes a view of a graph "
            "value, or one autograd records, from the tensor's own elements",
            name,
            x,
        )
    return order[found].reshape(wanted.shape)


def as_strided(input, size, stride, storage_offset=None):  # noqa: A002
    """The view of `input`'s storage with sizes `size`, strides `stride` (in elements) and
    first element at `storage_offset` (input's own by default), as PyTorch's `as_strided`.
    Eager tensors give a view of their memory; a graph value (which has no memory) gathers
    the elements its layout puts at those positions.

    >>> import kiln as kn
    >>> kn.arange(6.0).as_strided((2, 2), (1, 2), 1).tolist()
    [[1.0, 3.0], [2.0, 4.0]]
    """
    if not isinstance(input, Symbol):
        from ..eager.storage import as_strided_view

        return as_strided_view(input, size, stride, storage_offset)
    x = input
    size, stride = _sizes("as_strided", size, stride, storage_offset, x)
    if storage_offset is not None:  # counted from the start of the indexed tensor's storage
        refuse_computed_offset(x, "as_strided")
    _, offset = storage_layout(x, "as_strided", absolute=storage_offset is not None)
    offset = offset if storage_offset is None else int(storage_offset)
    # the elements are gathered from the storage x lies in (a view's base), as PyTorch reads
    # its storage: an as_strided of a view may reach past the view's own elements
    root = storage_root(x)
    own, _ = storage_layout(root, "as_strided")
    wanted = strided_positions(size, stride, offset)
    index = gather_positions("as_strided", x, own, wanted)
    from .functionalize import record_strided_view

    view = ti.take(root, constant(index, graph=root.graph))
    if detached_from(x, root):  # x.detach().as_strided(...): no gradient path to root
        view = core.call("stop_gradient", view)
    return record_strided_view(view, root, index, strided_probe(size, stride, offset))


def as_strided_scatter(input, src, size, stride, storage_offset=None):  # noqa: A002
    """A copy of `input` with `src` written over the elements that `input.as_strided(size,
    stride, storage_offset)` views, as PyTorch's `as_strided_scatter` (input's positions are
    those of a contiguous copy).

    >>> import kiln as kn
    >>> kn.as_strided_scatter(kn.zeros(4), kn.tensor([1.0, 2.0]), (2,), (2,)).tolist()
    [1.0, 0.0, 2.0, 0.0]
    """
    x, v = lift(input, src)
    size, stride = _sizes("as_strided_scatter", size, stride, storage_offset, x)
    if tuple(v.shape) != size:
        raise call_error(ShapeError, f"as_strided_scatter: expected src to have a size equal "
                         f"to the slice of self. src size = {list(v.shape)}, slice size = "
                         f"{list(size)}", "as_strided_scatter", x, v)  # fmt: skip
    n = int(np.prod(_static_shape("as_strided_scatter", x), dtype=np.int64))
    wanted = strided_positions(size, stride, int(storage_offset or 0))
    index = gather_positions("as_strided_scatter", x, np.arange(n), wanted).reshape(-1)
    index = constant(index, graph=x.graph) if isinstance(x, Symbol) else index
    v = v if v.dtype == x.dtype else m.cast(v, x.dtype)
    flat = s.reshape(x, (-1,))
    from .indexing import index_put

    return s.reshape(index_put(flat, (index,), s.reshape(v, (-1,)), False), tuple(x.shape))


def _static_shape(name: str, x) -> tuple:
    if not all(isinstance(d, int) for d in x.shape):
        raise call_error(ShapeError, f"{name} needs a static shape, got {tuple(x.shape)}", name,
                         x)  # fmt: skip
    return tuple(x.shape)


def fill_diagonal(input, fill_value, wrap: bool = False):  # noqa: A002
    """The value `input.fill_diagonal_(fill_value, wrap)` gives it: `fill_value` on the main
    diagonal (all dims equal beyond 2-D; a tall matrix's diagonal starts again below with
    `wrap`)."""
    (x,) = lift(input)
    if x.ndim < 2:
        raise call_error(ShapeError, "fill_diagonal_: dimensions must larger than 1",
                         "fill_diagonal_", x)  # fmt: skip
    shape = _static_shape("fill_diagonal_", x)
    if x.ndim > 2 and len(set(shape)) != 1:
        raise call_error(ShapeError, "fill_diagonal_: all dimensions of input must be of equal "
                         "length", "fill_diagonal_", x)  # fmt: skip
    mask = np.zeros(shape, np.bool_)
    np.fill_diagonal(mask, True, wrap=wrap)
    mask = constant(mask, graph=x.graph) if isinstance(x, Symbol) else mask
    value = np.asarray(fill_value, x.dtype) if not isinstance(fill_value, (Symbol,)) else (
        m.cast(fill_value, x.dtype))  # fmt: skip
    return m.where(mask, value, x)


def _outer_than(steps, shape, a: int, b: int) -> int:
    """Whether dim a lies outside dim b in memory (1), inside it (-1), or either (0): a
    greater stride is outer; an expanded dim (stride 0) is left where it is; of equal strides
    the longer dim is outer."""
    if steps[a] == 0 or steps[b] == 0:
        return 0
    if steps[a] == steps[b]:
        return 0 if shape[b] >= shape[a] else 1
    return 1 if steps[a] > steps[b] else -1


def _dense_in(order, steps, shape) -> bool:
    """Whether the elements fill memory densely with the dims nested in `order` (outermost
    first); dims of size 1 have any stride (PyTorch's contiguity)."""
    if 0 in shape:
        return True
    expected = 1
    for d in reversed(tuple(order)):
        if shape[d] != 1:
            if steps[d] != expected:
                return False
            expected *= shape[d]
    return True


def dim_order(self, *, ambiguity_check: bool = False) -> tuple:
    """The dims from the outermost in memory to the innermost, as PyTorch's `dim_order`: an
    insertion sort from the last dim, which leaves expanded (stride 0) dims and dims it cannot
    tell apart in their order; `ambiguity_check` raises where that order is not unique.

    >>> import kiln as kn
    >>> kn.zeros(2, 3, 4).permute(2, 0, 1).dim_order()
    (1, 2, 0)
    """
    steps, shape = self.stride(), tuple(self.shape)
    plain = _dense_in(range(len(shape)), steps, shape)
    last = len(shape) == 4 and _dense_in((0, 2, 3, 1), steps, shape)  # channels last
    if plain != last:  # a layout of one name: its order
        return (0, 2, 3, 1) if last else tuple(range(len(shape)))
    order = list(reversed(range(len(steps))))  # the innermost first while sorting
    for i in range(1, len(order)):
        moving = i
        for j in reversed(range(i)):
            step = _outer_than(steps, shape, order[j], order[moving])
            if step > 0:
                order[j], order[moving] = order[moving], order[j]
                moving = j
            elif step < 0:
                break
    if ambiguity_check and any(_outer_than(steps, shape, order[k], order[k + 1]) != -1
                               for k in range(len(order) - 1)):  # fmt: skip
        raise call_error(UsageError, "The tensor does not have unique dim order.",
                         "dim_order", self)  # fmt: skip
    return tuple(reversed(order))


# Flags that are False for every kiln tensor: kiln's tensors are dense and strided, in one
# process's own memory, on the CPU or a CUDA device
FALSE_FLAGS = (
    "is_sparse is_sparse_csr is_quantized is_meta is_nested is_mkldnn is_xla is_xpu is_mps "
    "is_ipu is_vulkan is_maia is_mtia"
).split()
