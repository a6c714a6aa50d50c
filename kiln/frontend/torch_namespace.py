"""PyTorch's top-level functions that kiln had only as Tensor methods or in
`kn.nn.functional` (`torch.abs_`, `torch.clone`, `torch.celu`, ...), and the ones it lacked:
`tensordot`, `unravel_index`, `bucketize`, `cumulative_trapezoid`, `trapz`, `row_stack`,
`chain_matmul`, `pdist`, `diagflat`, the `*_scatter` functions, `fill`, `rsub`, `normal`,
`scalar_tensor`, the window functions and the random-state functions. Each works on eager
Tensors, on Symbols in graph mode and under `kn.compile`.

>>> import kiln as kn
>>> x = kn.tensor([-1.0, 2.0])
>>> kn.abs_(x) is x, x.tolist(), kn.clone(x).tolist()
(True, [1.0, 2.0], [1.0, 2.0])
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from .. import dtypes as dt
from .. import shapes as sh
from ..eager.tensor import Tensor
from ..errors import (
    ArgumentError,
    ArgumentTypeError,
    ShapeMismatchError,
    UnsupportedDTypeError,
    UsageError,
    call_error,
)
from ..graph.core import Symbol
from . import math as m
from . import shape as s
from . import torch_extra_linalg as xl
from . import torch_extra_shape as xs
from . import torch_index as ti
from . import torch_math as tm
from . import torch_more as tmore
from . import torch_shape as ts
from .core import lift
from .out import takes_out

# Tensor methods PyTorch also has as `torch.X(input, ...)`
METHOD_FORMS = (
    "abs_ acos_ acosh_ addmv_ adjoint arccos_ arccosh_ arcsin_ arcsinh_ arctan_ arctanh_ asin_ "
    "asinh_ atan_ atanh_ ceil_ clamp_ clamp_max_ clamp_min_ clip_ clone cos_ "
    "cosh_ deg2rad_ detach erf_ erfc_ exp2_ exp_ expm1_ fix_ floor_ frac_ get_device "
    "index_put_ is_complex is_conj is_inference is_neg is_nonzero is_same_size is_signed isreal "
    "log10_ log1p_ log2_ log_ logit_ nan_to_num_ neg_ negative_ rad2deg_ reciprocal_ relu_ "
    "resolve_conj resolve_neg round_ rsqrt_ sigmoid_ sin_ sinc_ sinh_ split_with_sizes sqrt_ "
    "square_ tan_ tanh_ trunc_ vdot xlogy_ zero_ detach_ gcd_ lcm_ ldexp_ resize_as_ "
    "as_strided_ fill_ i0_"
).split()

# nn.functional functions PyTorch also has as `torch.X`, with the same arguments
FUNCTIONAL_FORMS = (
    "celu celu_ selu selu_ threshold threshold_ prelu rrelu rrelu_ pixel_shuffle "
    "pixel_unshuffle channel_shuffle cosine_similarity pairwise_distance hardshrink rms_norm"
).split()

__all__ = [
    *METHOD_FORMS, *FUNCTIONAL_FORMS, "as_strided_copy", "bartlett_window", "blackman_window",
    "bucketize",
    "chain_matmul", "cumulative_trapezoid", "diagflat", "diagonal_scatter", "fill",
    "get_rng_state", "hamming_window", "hann_window", "initial_seed", "kaiser_window", "normal",
    "pdist", "row_stack", "rsub", "scalar_tensor", "seed", "select_scatter", "set_rng_state",
    "slice_scatter", "tensordot", "trapz", "unravel_index",
]  # fmt: skip


def _method_form(name: str):
    def fn(input, *args, **kwargs):  # noqa: A002
        if not isinstance(input, (Tensor, Symbol)):
            raise ArgumentTypeError(
                f"{name}(): argument 'input' (position 1) must be Tensor, not "
                f"{type(input).__name__}"
            )
        return getattr(input, name)(*args, **kwargs)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"`kn.{name}(input, ...)`: `input.{name}(...)`, PyTorch's function form."
    return fn


def _functional_form(name: str):
    from ..nn import functional as F

    fn = getattr(F, name)

    def forward(*args, **kwargs):
        return fn(*args, **kwargs)

    forward.__name__ = forward.__qualname__ = name
    forward.__doc__ = f"`kn.{name}`: `kn.nn.functional.{name}`, as `torch.{name}` is."
    return forward


# the forms whose torch.X takes out= (`torch.vdot(a, b, out=o)`)
_OUT_FORMS = {"vdot", "hardshrink", "threshold"}

for _name in METHOD_FORMS:
    globals()[_name] = _method_form(_name)
    if _name in _OUT_FORMS:
        globals()[_name] = takes_out(globals()[_name])


def __getattr__(name):  # nn.functional imports the frontend: its forms are made on first use
    if name in FUNCTIONAL_FORMS:
        form = _functional_form(name)
        globals()[name] = takes_out(form) if name in _OUT_FORMS else form
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# -- linear algebra and calculus ------------------------------------------------------------


@takes_out
def tensordot(a, b, dims=2):
    """Sums the products of `a`'s last `dims` dims with `b`'s first `dims` (an int), or of
    the dims listed in `dims = (dims_a, dims_b)`; the free dims of a, then of b.

    >>> import kiln as kn
    >>> a, b = kn.arange(24.0).reshape(2, 3, 4), kn.arange(12.0).reshape(4, 3)
    >>> kn.tensordot(a, b, dims=([1, 2], [1, 0])).tolist()
    [440.0, 1232.0]
    """
    x, y = lift(a, b)
    if isinstance(dims, (int, np.integer)):
        if dims < 0:
            raise call_error(UsageError, f"tensordot expects dims >= 0, but got dims={dims}",
                             "tensordot", x, y)  # fmt: skip
        da = list(range(x.ndim - int(dims), x.ndim))
        db = list(range(int(dims)))
    else:
        da, db = ([d] if isinstance(d, int) else list(d) for d in dims)
    da = [sh.normalize_axis(int(d), x.ndim) for d in da]
    db = [sh.normalize_axis(int(d), y.ndim) for d in db]
    if len(da) != len(db):
        raise call_error(UsageError, "both dimension lists should have same length",
                         "tensordot", x, y)  # fmt: skip
    for i, j in zip(da, db):
        if x.shape[i] != y.shape[j] and 1 in (x.shape[i], y.shape[j]):  # PyTorch broadcasts:
            # a size-1 dim meets the other's sum over that dim (in its dtype: integers wrap)
            if x.shape[i] == 1:
                y = m.sum(y, j, keepdim=True, dtype=y.dtype)
            else:
                x = m.sum(x, i, keepdim=True, dtype=x.dtype)
        if x.shape[i] != y.shape[j]:
            raise call_error(ShapeMismatchError, f"contracted dimensions need to match, but "
                             f"first has size {x.shape[i]} in dim {i} and second has size "
                             f"{y.shape[j]} in dim {j}", "tensordot", x, y)  # fmt: skip
    free_a = [d for d in range(x.ndim) if d not in da]
    free_b = [d for d in range(y.ndim) if d not in db]
    k = math.prod(x.shape[d] for d in da)
    left = s.reshape(s.permute(x, *free_a, *da), (-1, k))
    right = s.reshape(s.permute(y, *db, *free_b), (k, -1))
    shape = tuple(x.shape[d] for d in free_a) + tuple(y.shape[d] for d in free_b)
    result = s.reshape(m.matmul(left, right), shape)
    return result


@takes_out
def chain_matmul(*matrices):
    """The product of 2-D matrices, left to right (PyTorch's deprecated `chain_matmul`;
    `kn.linalg.multi_dot` chooses the order).

    >>> import kiln as kn
    >>> kn.chain_matmul(kn.eye(2), kn.ones(2, 3), kn.ones(3, 1)).tolist()
    [[3.0], [3.0]]
    """
    if not matrices:
        raise ArgumentError("chain_matmul(): Expected one or more matrices")
    xs_ = lift(*matrices)
    for x in xs_:
        if x.ndim != 2:
            raise call_error(ShapeMismatchError, f"chain_matmul(): Tensor dimension is "
                             f"{x.ndim}, expected 2 instead.", "chain_matmul", x)  # fmt: skip
    result = xs_[0]
    for x in xs_[1:]:
        result = m.matmul(result, x)
    return result


def cumulative_trapezoid(y, x=None, *, dx=None, dim: int = -1):
    """The trapezoidal rule's running sums along `dim` (one fewer element than `y`), with
    sample points `x` or spacing `dx` (1).

    >>> import kiln as kn
    >>> kn.cumulative_trapezoid(kn.tensor([1.0, 2.0, 4.0])).tolist()
    [1.5, 4.5]
    """
    (v,) = lift(y)
    t = xl.sample_points(v, x, dx, dim, "cumulative_trapezoid")
    n = v.shape[dim]
    # PyTorch's formulas: (dx * (y[:-1] + y[1:])) / 2 with sample points, (dx / 2) * (y[:-1] +
    # y[1:]) with a spacing, the integer steps in y's dtype (wrapping as PyTorch's)
    pairs = m.add(xl.select_range(v, dim, 0, n - 1), xl.select_range(v, dim, 1, n))
    if t is not None:
        axis = -1 if t.ndim == 1 else dim
        steps = m.sub(xl.select_range(t, axis, 1, n), xl.select_range(t, axis, 0, n - 1))
        if t.ndim == 1 and v.ndim > 1:
            shape = [1] * v.ndim
            shape[dim] = n - 1
            steps = s.reshape(steps, tuple(shape))
        mid = m.div(m.mul(steps, pairs), 2.0)
    else:
        mid = m.mul(pairs, (1.0 if dx is None else dx) / 2.0)
    return tm.cumsum(mid, dim)


def trapz(y, x=None, *, dx=None, dim: int = -1):
    """PyTorch's older name of `trapezoid`.

    >>> import kiln as kn
    >>> kn.trapz(kn.tensor([1.0, 2.0, 4.0]), dx=2.0).item()
    9.0
    """
    return xl.trapezoid(y, x, dx=dx, dim=dim)


@takes_out
def row_stack(tensors):
    """PyTorch's alias of `vstack`.

    >>> import kiln as kn
    >>> kn.row_stack([kn.tensor([1, 2]), kn.tensor([3, 4])]).tolist()
    [[1, 2], [3, 4]]
    """
    from . import torch_extra_stack

    result = torch_extra_stack.vstack(tensors)
    return result


def pdist(input, p: float = 2.0):  # noqa: A002
    """The p-norm distance between each pair of rows of the (N, M) `input`: N(N-1)/2
    values, row i against rows i+1, ..., N-1, in that order.

    >>> import kiln as kn
    >>> kn.pdist(kn.tensor([[0.0, 0.0], [3.0, 4.0], [6.0, 8.0]])).tolist()
    [5.0, 10.0, 5.0]
    """
    (x,) = lift(input)
    if x.ndim != 2:
        raise call_error(ShapeMismatchError, f"pdist only supports 2D tensors, got: {x.ndim}D",
                         "pdist", x)  # fmt: skip
    if not isinstance(x.shape[0], int):
        raise call_error(ShapeMismatchError, "pdist needs a static number of rows", "pdist", x)
    rows, cols = np.triu_indices(x.shape[0], 1)
    first = ti.index_select(x, 0, lift(rows.astype(np.int64), context=(x,))[0])
    second = ti.index_select(x, 0, lift(cols.astype(np.int64), context=(x,))[0])
    from . import linalg

    return linalg.vector_norm(m.sub(first, second), p, dim=-1)


def diagflat(input, offset: int = 0):  # noqa: A002
    """The square matrix with the flattened `input` on its `offset`-th diagonal.

    >>> import kiln as kn
    >>> kn.diagflat(kn.tensor([[1, 2]])).tolist()
    [[1, 0], [0, 2]]
    """
    (x,) = lift(input)
    return ts.diag(s.reshape(x, (-1,)), offset)


@takes_out
def bucketize(input, boundaries, *, out_int32: bool = False, right: bool = False):  # noqa: A002
    """The index of the bucket of `boundaries` (1-D, ascending) each value falls in:
    `boundaries[i-1] < v <= boundaries[i]` (with `right`: `boundaries[i-1] <= v <
    boundaries[i]`).

    >>> import kiln as kn
    >>> kn.bucketize(kn.tensor([1, 5, 9]), kn.tensor([1, 3, 5, 7])).tolist()
    [0, 2, 4]
    """
    (b,) = lift(boundaries)
    if b.ndim != 1:
        raise call_error(ShapeMismatchError, f"boundaries tensor must be 1 dimension, but got "
                         f"dim({b.ndim})", "bucketize", b)  # fmt: skip
    result = xl.searchsorted(b, input, out_int32=out_int32, right=right)
    return result


def unravel_index(indices, shape):
    """The coordinates, one tensor per dim of `shape`, of flat (C-order) `indices`.

    >>> import kiln as kn
    >>> [c.tolist() for c in kn.unravel_index(kn.tensor([4, 1]), (2, 3))]
    [[1, 0], [1, 1]]
    """
    (i,) = lift(indices)
    if i.dtype.kind not in "iu":
        raise call_error(ArgumentTypeError, f"expected 'indices' to be integer dtype, but got "
                         f"{i.dtype}", "unravel_index", i)  # fmt: skip
    shape = _unravel_shape(shape)
    if any(d < 0 for d in shape):
        raise ArgumentError("'shape' cannot have negative values, but got " + str(shape))
    # NOTE: as PyTorch 2.13, indices outside [-numel, numel) are not refused: each coordinate
    # is the floor remainder, so they wrap around
    i = m.cast(i, dt.int64)
    coords = []
    for d in reversed(shape):
        coords.append(m.remainder(i, d) if d else i)
        i = m.floor_divide(i, d) if d else i
    return tuple(reversed(coords))


def _unravel_shape(shape) -> tuple:
    """unravel_index's `shape`: an int or a sequence of ints (PyTorch's TypeErrors else)."""
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    if isinstance(shape, (Tensor, Symbol)) or not isinstance(shape, Sequence):
        raise ArgumentTypeError(
            f"expected 'shape' to be int or sequence of ints, but got {type(shape)}"
        )
    for d in shape:
        if not isinstance(d, (int, np.integer)):
            raise ArgumentTypeError(
                f"expected 'shape' sequence to only contain ints, but got {type(d)}"
            )
    return tuple(int(d) for d in shape)


# -- out-of-place writes ------------------------------------------------------------------


def _written(input, index, src):  # noqa: A002
    """A copy of `input` with `src` written at `index` (functionalized on Symbols)."""
    (x,) = lift(input)
    y = x.clone()
    y[index] = src
    return y


def select_scatter(input, src, dim: int, index: int):  # noqa: A002
    """A copy of `input` with `src` written at `index` of `dim` (`input.select(dim, index)`
    has src's shape).

    >>> import kiln as kn
    >>> kn.select_scatter(kn.zeros(2, 2), kn.ones(2), 0, 1).tolist()
    [[0.0, 0.0], [1.0, 1.0]]
    """
    (x,) = lift(input)
    d = dim % x.ndim
    return _written(x, (slice(None),) * d + (index,), src)


@takes_out
def slice_scatter(input, src, dim: int = 0, start=None, end=None, step: int = 1):  # noqa: A002
    """A copy of `input` with `src` written at `start:end:step` of `dim`.

    >>> import kiln as kn
    >>> kn.slice_scatter(kn.zeros(4), kn.ones(2), start=1, end=3).tolist()
    [0.0, 1.0, 1.0, 0.0]
    """
    (x,) = lift(input)
    d = dim % x.ndim
    return _written(x, (slice(None),) * d + (slice(start, end, step),), src)


def diagonal_scatter(input, src, offset: int = 0, dim1: int = 0, dim2: int = 1):  # noqa: A002
    """A copy of `input` with `src` written on the diagonal `input.diagonal(offset, dim1,
    dim2)` (src has that diagonal's shape: the other dims, then the diagonal's length).

    >>> import kiln as kn
    >>> kn.diagonal_scatter(kn.zeros(2, 3), kn.ones(2), 1).tolist()
    [[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    """
    (x,) = lift(input)
    d1, d2 = dim1 % x.ndim, dim2 % x.ndim
    n1, n2 = x.shape[d1], x.shape[d2]
    length = max(0, min(n1, n2 - offset) if offset >= 0 else min(n1 + offset, n2))
    start1, start2 = (0, offset) if offset >= 0 else (-offset, 0)
    rows = lift(np.arange(start1, start1 + length, dtype=np.int64), context=(x,))[0]
    cols = lift(np.arange(start2, start2 + length, dtype=np.int64), context=(x,))[0]
    # the diagonal's positions as one advanced index over dim1 and dim2, moved to the front
    # (with the rest of the dims after it, in order), as `src`'s last dim is the diagonal's
    order = [d1, d2] + [d for d in range(x.ndim) if d not in (d1, d2)]
    moved = s.permute(x, *order)
    (v,) = lift(src, context=(x,))
    v = xs.movedim(v, -1, 0) if v.ndim else v
    written = _written(moved, (rows, cols), v)
    return s.permute(written, *np.argsort(order).tolist())


def fill(input, value):  # noqa: A002
    """A tensor of `input`'s shape and dtype filled with `value` (a number or a 0-d tensor,
    whose gradient it passes on), as PyTorch's out-of-place `fill`.

    >>> import kiln as kn
    >>> kn.fill(kn.zeros(2, dtype=kn.int32), 7).tolist()
    [7, 7]
    """
    (x,) = lift(input)
    if isinstance(value, (Tensor, Symbol)) and value.ndim:
        raise call_error(UsageError, "fill only supports 0-dimension value tensor but got "
                         f"tensor with {value.ndim} dimensions.", "fill", x, value)  # fmt: skip
    (v,) = lift(value, context=(x,))
    v = m.cast(v, x.dtype) if v.dtype != x.dtype else v
    # a select, so input's gradient is zeros (PyTorch's), not absent
    return m.where(lift(np.True_, context=(x,))[0], v, x)


@takes_out
def as_strided_copy(input, size, stride, storage_offset=None):  # noqa: A002
    """`as_strided(input, size, stride, storage_offset)` as a tensor of its own (a copy, not
    a view), as PyTorch's.

    >>> import kiln as kn
    >>> kn.as_strided_copy(kn.arange(6.0), (2, 2), (1, 2), 1).tolist()
    [[1.0, 3.0], [2.0, 4.0]]
    """
    return tmore.as_strided(input, size, stride, storage_offset).clone()


def rsub(input, other, *, alpha=1):  # noqa: A002
    """`other - alpha * input` (PyTorch's reversed subtraction).

    >>> import kiln as kn
    >>> kn.rsub(kn.tensor([1, 2]), 10, alpha=2).tolist()
    [8, 6]
    """
    return m.sub(other, input, alpha=alpha)


# -- factories ------------------------------------------------------------------------------


def scalar_tensor(s_, *, dtype=None, device="cpu", requires_grad: bool = False):
    """A 0-d tensor holding the number `s_`, of the default float dtype unless `dtype`.

    >>> import kiln as kn
    >>> kn.scalar_tensor(3)
    tensor(3.)
    """
    from ..eager.factories import tensor

    return tensor(float(s_) if dtype is None else s_, dtype=dtype or dt.DEFAULT_FLOAT,
                  device=device, requires_grad=requires_grad)  # fmt: skip


@takes_out
def normal(
    mean,
    std=1.0,
    size=None,
    *,
    generator=None,
    dtype=None,
    device=None,
    requires_grad: bool = False,
    layout=None,
):  # fmt: skip  (layout: strided, kiln's)
    """Samples of N(mean, std²): elementwise for tensor `mean` and/or `std` (broadcast), or
    of `size` for numbers. The result is `mean + std * z` with z ~ N(0, 1), of mean's dtype
    (else std's); mean and std get zero gradients, as PyTorch's (its normal is not
    reparameterized: `Normal.rsample` is).

    >>> import kiln as kn
    >>> tuple(kn.normal(0.0, 1.0, (2, 3)).shape), tuple(kn.normal(kn.zeros(4), 2.0).shape)
    ((2, 3), (4,))
    """
    from ..eager.factories import randn

    if size is not None:  # (0-d tensors are numbers there, as PyTorch's parser takes them)
        mean, std = (v.item() if isinstance(v, Tensor) and v.ndim == 0 else v for v in (mean, std))
    tensors = [v for v in (mean, std) if isinstance(v, (Tensor, Symbol))]
    if not tensors:
        if size is None:
            raise ArgumentTypeError("normal() missing the 'size' argument for number mean and std")
        if std < 0:
            raise UsageError(f"normal expects std >= 0.0, but found std {std}")
        z = randn(tuple((size,) if isinstance(size, int) else size), generator=generator,
                  dtype=dtype, device=device or "cpu")  # fmt: skip
        result = m.add(m.mul(z, std), mean)
        if requires_grad:
            result.requires_grad_(True)
    else:
        if size is not None:
            raise ArgumentTypeError("normal(): size is for number mean and std only")
        mu, sigma = lift(mean, std, context=tuple(tensors))
        try:
            shape = np.broadcast_shapes(tuple(mu.shape), tuple(sigma.shape))
        except ValueError:
            raise call_error(ShapeMismatchError, "normal: mean and std do not broadcast",
                             "normal", mu, sigma) from None  # fmt: skip
        # the result's dtype: mean's where it is a tensor, else std's (PyTorch's)
        dtype = dt.as_dtype((mean if isinstance(mean, (Tensor, Symbol)) else std).dtype)
        check_normal(dtype, std)
        z = randn(tuple(shape), generator=generator, dtype=dt.to_real(dtype))
        mu_, sigma_ = (v.detach() if isinstance(v, (Tensor, Symbol)) else v for v in (mu, sigma))
        result = m.add(mu_, m.mul(sigma_, z))
        # PyTorch's normal gives mean and std zero gradients (not the reparameterized 1 and
        # z): the draw joins them through a `where` that never picks them
        result = m.where(np.False_, m.add(mu, sigma), result)
        if result.dtype != dtype:
            result = m.cast(result, dtype)
    return result


def check_normal(dtype, std) -> None:
    """PyTorch's refusals of `normal` (and of `Tensor.normal_`, `nn.init.normal_`): a result
    dtype that is not floating or complex, a complex std, a negative std."""
    if not (dt.is_float(dtype) or dtype.kind == "c"):
        raise UnsupportedDTypeError(f'"normal_kernel_cpu" not implemented for {dtype}')
    if isinstance(std, (Tensor, Symbol)) and dt.as_dtype(std.dtype).kind == "c":
        raise UsageError("normal expects standard deviation to be non-complex")
    if isinstance(std, Tensor):
        if bool(np.any(std.detach()._host() < 0)):
            raise UsageError("normal expects all elements of std >= 0.0")
    elif not isinstance(std, Symbol) and std < 0:
        raise UsageError(f"normal expects std >= 0.0, but found std {std}")


def _window(name: str, values, length: int, periodic: bool, dtype, device, requires_grad,
            pin_memory: bool = False, layout=None):  # fmt: skip
    from ..eager.factories import tensor

    dtype = dt.DEFAULT_FLOAT if dtype is None else dt.as_dtype(dtype)
    if not dt.is_float(dtype):  # (RuntimeError, as PyTorch's)
        raise UsageError(f"{name} expects floating point dtypes, got: {dtype}")
    if layout is not None and getattr(layout, "name", "strided") != "strided":
        raise UsageError(f"{name} is not implemented for sparse types, got: {layout}")
    if length < 0:
        raise UsageError(f"{name} requires non-negative window_length, got window_length="
                         f"{length}")  # fmt: skip
    if length == 0:
        data = np.zeros(0)
    elif length == 1:
        data = np.ones(1)
    else:
        n = length + 1 if periodic else length
        data = values(np.arange(n, dtype=np.float64), n)[:length]
    return tensor(data.astype(dtype), device=device, requires_grad=requires_grad,
                  pin_memory=pin_memory)  # fmt: skip


def hann_window(window_length: int, periodic: bool = True, *, dtype=None, device="cpu",
                requires_grad: bool = False, layout=None, pin_memory: bool = False):  # fmt: skip
    """The Hann window `0.5 - 0.5 cos(2πk / (N - 1))` (N = length + 1 when `periodic`).

    >>> import kiln as kn
    >>> kn.hann_window(4).tolist()
    [0.0, 0.5, 1.0, 0.5]
    """
    return _window("hann_window", lambda k, n: 0.5 - 0.5 * np.cos(2 * np.pi * k / (n - 1)),
                   window_length, periodic, dtype, device, requires_grad, pin_memory,
                   layout)  # fmt: skip


def hamming_window(window_length: int, periodic: bool = True, alpha: float = 0.54,
                   beta: float = 0.46, *, dtype=None, device="cpu", requires_grad: bool = False,
                   layout=None, pin_memory: bool = False):  # fmt: skip
    """The generalized Hamming window `alpha - beta cos(2πk / (N - 1))`.

    >>> import kiln as kn
    >>> [round(v, 4) for v in kn.hamming_window(3, periodic=False).tolist()]
    [0.08, 1.0, 0.08]
    """
    return _window("hamming_window",
                   lambda k, n: alpha - beta * np.cos(2 * np.pi * k / (n - 1)),
                   window_length, periodic, dtype, device, requires_grad, pin_memory,
                   layout)  # fmt: skip


def blackman_window(window_length: int, periodic: bool = True, *, dtype=None, device="cpu",
                    requires_grad: bool = False, layout=None,
                    pin_memory: bool = False):  # fmt: skip
    """The Blackman window `0.42 - 0.5 cos(2πk/(N-1)) + 0.08 cos(4πk/(N-1))`.

    >>> import kiln as kn
    >>> [round(v, 4) for v in kn.blackman_window(3, periodic=False).tolist()]
    [-0.0, 1.0, -0.0]
    """
    return _window("blackman_window", lambda k, n: 0.42 - 0.5 * np.cos(2 * np.pi * k / (n - 1))
                   + 0.08 * np.cos(4 * np.pi * k / (n - 1)), window_length, periodic, dtype,
                   device, requires_grad, pin_memory, layout)  # fmt: skip


def bartlett_window(window_length: int, periodic: bool = True, *, dtype=None, device="cpu",
                    requires_grad: bool = False, layout=None,
                    pin_memory: bool = False):  # fmt: skip
    """The triangular Bartlett window `1 - |2k/(N-1) - 1|`.

    >>> import kiln as kn
    >>> kn.bartlett_window(4).tolist()
    [0.0, 0.5, 1.0, 0.5]
    """
    return _window("bartlett_window", lambda k, n: 1 - np.abs(2 * k / (n - 1) - 1),
                   window_length, periodic, dtype, device, requires_grad, pin_memory,
                   layout)  # fmt: skip


def kaiser_window(window_length: int, periodic: bool = True, beta: float = 12.0, *, dtype=None,
                  device="cpu", requires_grad: bool = False, layout=None,
                  pin_memory: bool = False):  # fmt: skip
    """The Kaiser window `I0(beta sqrt(1 - (2k/(N-1) - 1)²)) / I0(beta)`.

    >>> import kiln as kn
    >>> [round(v, 4) for v in kn.kaiser_window(3, periodic=False, beta=1.0).tolist()]
    [0.7898, 1.0, 0.7898]
    """
    return _window("kaiser_window", lambda k, n: np.i0(beta * np.sqrt(np.clip(
        1 - (2 * k / (n - 1) - 1) ** 2, 0, None))) / np.i0(beta), window_length, periodic,
        dtype, device, requires_grad, pin_memory, layout)  # fmt: skip


# -- the random state -----------------------------------------------------------------------


def get_rng_state():
    """The state of the random streams `kn.manual_seed` seeds (the eager factories' stream
    and the seeds of new random nodes), as a uint8 Tensor for `set_rng_state`.

    >>> import kiln as kn
    >>> state = kn.get_rng_state()
    >>> a = kn.randn(3); _ = kn.set_rng_state(state)
    >>> bool((kn.randn(3) == a).all())
    True
    """
    from ..eager.tensor import make
    from ..generator import default_generator
    from ..ops import random as r

    with r._lock:
        counters = np.array([r._state["base"], r._state["count"]], np.int64)
    data = np.concatenate([counters.view(np.uint8), default_generator.get_state().numpy()])
    return make(data)


def set_rng_state(new_state) -> None:
    """Restores a state from `get_rng_state()`."""
    from ..checkpoint import as_numpy
    from ..generator import default_generator
    from ..ops import random as r

    data = as_numpy(new_state)
    if data.dtype != np.uint8 or data.ndim != 1 or data.size < 16:
        raise call_error(ArgumentTypeError, "set_rng_state: expected the uint8 tensor of "
                         f"get_rng_state(), got {data.dtype} of shape {data.shape}",
                         "set_rng_state")  # fmt: skip
    base, count = np.frombuffer(data[:16].tobytes(), np.int64)
    default_generator.set_state(data[16:].copy())
    with r._lock:
        r._state["base"], r._state["count"] = int(base), int(count)


def initial_seed() -> int:
    """The seed of the last `kn.manual_seed` (or `kn.seed`).

    >>> import kiln as kn
    >>> kn.manual_seed(5); kn.initial_seed()
    5
    """
    from ..generator import default_generator

    return default_generator.initial_seed()


def seed() -> int:
    """Seeds the random streams from the operating system's entropy; returns the seed."""
    from ..generator import default_generator
    from ..ops.random import manual_seed

    value = default_generator.seed()
    manual_seed(value)
    return value
