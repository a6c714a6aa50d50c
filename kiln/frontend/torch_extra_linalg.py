"""More of PyTorch's products and norms, written with kiln's ops so that each works eagerly
(with autograd), in graph mode and under `kn.compile`: `outer`, `inner`, `kron`, `cross`,
`mv`, `addmv`, `addr`, `matrix_power`, `dist`, `norm`."""

from __future__ import annotations

import math

import numpy as np

from .. import dtypes as dt
from .. import shapes as sh
from ..eager.autograd import name_history
from ..errors import (
    ArgumentTypeError,
    DTypeMismatchError,
    IndexOutOfRangeError,
    ShapeError,
    ShapeMismatchError,
    UnsupportedDTypeError,
    UsageError,
    call_error,
)
from ..graph.core import Symbol
from . import math as m
from . import shape as s
from . import torch_math as tm
from .core import call, lift
from .out import takes_out
from .reductions import require_floating
from .torch_extra_shape import select
from .torch_shape import diagonal

__all__ = [
    "addmv", "addr", "cdist", "corrcoef", "cov", "cross",
    "dist", "ger", "inner", "isin", "kron", "ldexp", "matrix_power", "mv", "norm", "outer",
    "searchsorted", "trapezoid",
]  # fmt: skip


@takes_out
def outer(input, vec2):  # noqa: A002
    """The outer product of two vectors.

    >>> import kiln as kn
    >>> kn.outer(kn.tensor([1, 2]), kn.tensor([3, 4]))
    tensor([[3, 4],
            [6, 8]])
    """
    a, b = lift(input, vec2)
    if a.ndim != 1 or b.ndim != 1:
        raise ShapeError(f"outer: expected 1-D inputs, got {a.ndim}-d and {b.ndim}-d")
    return m.mul(s.unsqueeze(a, 1), s.unsqueeze(b, 0))


ger = outer


@takes_out
def inner(input, other):  # noqa: A002
    """The sum over the last dims of a and b of their products (`(..a, ..b)` for n-d).

    >>> import kiln as kn
    >>> kn.inner(kn.tensor([1.0, 2.0]), kn.tensor([3.0, 4.0]))
    tensor(11.)
    """
    a, b = lift(input, other)
    if a.ndim == 0 or b.ndim == 0:
        return m.mul(a, b)
    if a.shape[-1] != b.shape[-1]:
        raise ShapeError(f"inner: last dims differ: {a.shape[-1]} and {b.shape[-1]}")
    k = a.shape[-1]
    a2 = s.reshape(a, (math.prod(a.shape[:-1]) if k == 0 else -1, k))  # (-1, 0): ambiguous
    b2 = s.reshape(b, (math.prod(b.shape[:-1]) if k == 0 else -1, k))
    flat = m.matmul(a2, s.transpose(b2, 0, 1))
    return s.reshape(flat, (*a.shape[:-1], *b.shape[:-1]))


@takes_out
def kron(input, other):  # noqa: A002
    """The Kronecker product.

    >>> import kiln as kn
    >>> kn.kron(kn.tensor([1, 2]), kn.tensor([1, 10]))
    tensor([ 1, 10,  2, 20])
    """
    a, b = lift(input, other)
    n = max(a.ndim, b.ndim)
    a = s.reshape(a, (1,) * (n - a.ndim) + tuple(a.shape))
    b = s.reshape(b, (1,) * (n - b.ndim) + tuple(b.shape))
    wide_a = s.reshape(a, tuple(d for size in a.shape for d in (size, 1)))
    wide_b = s.reshape(b, tuple(d for size in b.shape for d in (1, size)))
    return s.reshape(m.mul(wide_a, wide_b), tuple(p * q for p, q in zip(a.shape, b.shape)))


@takes_out
def cross(input, other, dim=None):  # noqa: A002
    """The cross product of 3-vectors along `dim` (None: the first dim of size 3).

    >>> import kiln as kn
    >>> kn.cross(kn.tensor([1.0, 0.0, 0.0]), kn.tensor([0.0, 1.0, 0.0]))
    tensor([0., 0., 1.])
    """
    a, b = lift(input, other)
    if dim is None:
        dim = next((i for i, d in enumerate(a.shape) if d == 3), None)
        if dim is None:
            raise ShapeError(f"cross: no dim of size 3 in {list(a.shape)}")
    if a.shape[dim] != 3 or b.shape[dim] != 3:
        raise ShapeError(f"linalg.cross: inputs dimension {dim} must have length 3")
    x = [select(a, dim, i) for i in range(3)]
    y = [select(b, dim, i) for i in range(3)]
    parts = [m.sub(m.mul(x[(i + 1) % 3], y[(i + 2) % 3]), m.mul(x[(i + 2) % 3], y[(i + 1) % 3]))
             for i in range(3)]  # fmt: skip
    return s.stack(parts, dim % a.ndim)


def _scaled_sum(input, product, beta, alpha):  # noqa: A002
    """`beta * input + alpha * product`, input ignored (NaN included) when beta is 0."""
    kind = dt.result_type(*lift(input, product))
    beta, alpha = tm.coefficient(beta, kind), tm.coefficient(alpha, kind)
    scaled = product if alpha == 1 else m.mul(product, alpha)
    if beta == 0:
        (x,) = lift(input)
        return s.broadcast_to(scaled, sh.broadcast_shapes(tuple(x.shape), tuple(scaled.shape)))
    return m.add(input if beta == 1 else m.mul(input, beta), scaled)


@takes_out
def mv(input, vec):  # noqa: A002
    """Matrix times vector.

    >>> import kiln as kn
    >>> kn.mv(kn.tensor([[1.0, 2.0]]), kn.tensor([3.0, 4.0]))
    tensor([11.])
    """
    a, v = lift(input, vec)
    if a.ndim != 2 or v.ndim != 1:
        raise ShapeError(f"vector + matrix @ vector expected, got {a.ndim}, {v.ndim}")
    return m.matmul(a, v)


@takes_out
def addmv(input, mat, vec, *, beta=1, alpha=1):  # noqa: A002
    """`beta * input + alpha * (mat @ vec)`.

    >>> import kiln as kn
    >>> kn.addmv(kn.tensor([1.0]), kn.tensor([[1.0, 2.0]]), kn.tensor([3.0, 4.0]))
    tensor([12.])
    """
    product = mv(*tm.unread_when_alpha_is_zero(alpha, *lift(mat, vec), complex_too=False))
    return name_history(_scaled_sum(input, product, beta, alpha), "AddmvBackward0", input, mat,
                        vec)  # fmt: skip


@takes_out
def addr(input, vec1, vec2, *, beta=1, alpha=1):  # noqa: A002
    """`beta * input + alpha * outer(vec1, vec2)`.

    >>> import kiln as kn
    >>> kn.addr(kn.zeros(2, 2), kn.tensor([1.0, 2.0]), kn.tensor([1.0, 0.0]))
    tensor([[1., 0.],
            [2., 0.]])
    """
    a, b = lift(vec1, vec2)
    if a.dtype in (dt.float16, dt.bfloat16) and a.dtype == b.dtype and a.ndim == b.ndim == 1:
        # as PyTorch's kernel: beta * input + (alpha * vec1) * vec2 with beta and alpha
        # rounded to the dtype, each step rounded to the dtype
        kind = dt.result_type(*lift(input, a))
        beta, alpha = (float(np.asarray(tm.coefficient(c, kind), kind)) for c in (beta, alpha))
        scaled = m.mul(s.reshape(m.mul(a, alpha), (-1, 1)), b)
        return name_history(_scaled_sum(input, scaled, beta, 1), "AddrBackward0", input, a, b)
    out = _scaled_sum(input, outer(vec1, vec2), beta, alpha)
    return name_history(out, "AddrBackward0", input, vec1, vec2)


@takes_out
def matrix_power(input, n: int):  # noqa: A002
    """The n-th power of square matrices (batched); n = 0 gives identities, n < 0 powers of
    the inverse.

    >>> import kiln as kn
    >>> kn.matrix_power(kn.tensor([[1, 1], [0, 1]]), 3)
    tensor([[1, 3],
            [0, 1]])
    """
    (a,) = lift(input)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ShapeError(f"matrix_power: expected square matrices, got {list(a.shape)}")
    if n == 0:
        eye = np.eye(a.shape[-1], dtype=a.dtype)
        return m.add(m.mul(a, 0), eye)
    if n < 0:
        from .linalg import inverse

        a, n = inverse(a), -n
    result, power = None, a
    while n:
        if n & 1:
            result = power if result is None else m.matmul(result, power)
        n >>= 1
        if n:
            power = m.matmul(power, power)
    return result


_HALF = (dt.bfloat16, np.dtype(np.float16))


def nonzero_count(a, dims, keepdim: bool):
    """The number of nonzero entries of `a` (magnitudes, a NaN counted) over `dims`: the
    0-"norm", in a's dtype. As PyTorch's, it requires grad where `a` does, with gradient 0
    (each entry is the sign of a magnitude, whose derivative is 0).

    >>> import kiln as kn
    >>> x = kn.tensor([0.0, -2.0, 3.0], requires_grad=True)
    >>> n = nonzero_count(x.abs(), None, False)
    >>> n.backward()
    >>> n, bool((x.grad == 0).all())
    (tensor(2., grad_fn=<SumBackward0>), True)
    """
    ones = m.where(m.isnan(a), 1.0, m.sign(a))
    return m.sum(ones, dims, keepdim)


def p_norm(x, p, dims, keepdim: bool):
    """The `p`-norm of x over `dims` (as `sum` takes them; `p` a number, `inf`, `-inf`, or 0:
    the count of nonzeros), with PyTorch's gradient: 0 where the norm is 0 (not the NaN of
    the root's derivative at 0 times 0), and for 0 < p < 1 also at the zero elements. The one
    p-norm of `norm`, `dist` and `linalg.vector_norm`.

    >>> import kiln as kn
    >>> p_norm(kn.tensor([[3.0, -4.0], [0.0, 0.0]]), 2, (1,), False)
    tensor([5., 0.])
    >>> p_norm(kn.tensor([3j, 4.0]), 2, None, False)
    tensor(5.)
    """
    if x.dtype in _HALF:  # as PyTorch's: summed in float32, rounded once (float16's sum of
        # squares overflows past 65504: a norm of 269 was inf)
        return m.cast(p_norm(m.cast(x, dt.float32), p, dims, keepdim), x.dtype)
    if x.dtype.kind == "c":  # the norm of complex values is that of their magnitudes
        x = m.abs(x)
    a = m.abs(x)
    if p in (math.inf, -math.inf):
        return _extreme_norm(a, p > 0, dims, keepdim)
    if p == 0:
        return nonzero_count(a, dims, keepdim)
    if p == 1:
        return m.sum(a, dims, keepdim)
    if p < 0:
        return m.pow(m.sum(m.pow(a, float(p)), dims, keepdim), 1.0 / p)
    if p == 2:
        total = m.sum(m.mul(x, x), dims, keepdim)
    else:
        zero = m.equal(a, 0)
        total = m.sum(m.where(zero, 0.0, m.pow(m.where(zero, 1.0, a), float(p))), dims, keepdim)
    zero = m.equal(total, 0)
    safe = m.where(zero, 1.0, total)
    return m.where(zero, 0.0, m.sqrt(safe) if p == 2 else m.pow(safe, 1.0 / p))


def _extreme_norm(a, largest: bool, dims, keepdim: bool):
    """The largest (smallest) of the magnitudes `a`, NaN where one is, with PyTorch's
    gradient: shared by the elements at the norm, and 0 in a slice whose norm is NaN (the
    reduction's own gradient there, ct / 0 at no element, would be NaN everywhere)."""
    pick = m.amax if largest else m.amin
    value = pick(a, dims, keepdim)
    if not dt.is_float(a.dtype):
        return value
    clean = pick(m.where(m.isnan(a), 0.0 if largest else math.inf, a), dims, keepdim)
    return m.where(m.isnan(value), call("stop_gradient", value), clean)


def dist(input, other, p: float = 2):  # noqa: A002
    """The p-norm of `input - other` (broadcast), over all elements.

    >>> import kiln as kn
    >>> kn.dist(kn.tensor([0.0, 0.0]), kn.tensor([3.0, 4.0]))
    tensor(5.)
    """
    diff = m.sub(*lift(input, other))  # promoted first: an integer and a float are a float
    require_floating("dist", diff, "norm(): input dtype should be either floating point or "
                     "complex. Got {dtype} instead.")  # fmt: skip
    return p_norm(diff, p, None, False)


def norm_input(name: str, x, dtype):
    """`x` cast to `dtype` (None: as it is) after PyTorch's checks of the norms' dtypes: a
    floating or complex input, and a `dtype` of its kind that does not narrow it.

    >>> import kiln as kn
    >>> norm_input("linalg.vector_norm", kn.ones(2), kn.float64).dtype
    kiln.float64
    """
    if not (dt.is_float(x.dtype) or dt.is_complex(x.dtype)):
        raise UsageError(f"{name}: Expected a floating point or complex tensor as input. "
                         f"Got {dt.scalar_name(x.dtype)}")  # fmt: skip
    if dtype is None:
        return x
    dtype = dt.as_dtype(dtype)
    if not (dt.is_float(dtype) or dt.is_complex(dtype)):
        raise UsageError(f"{name}: dtype should be floating point or complex, got {dtype}")
    if dt.is_complex(x.dtype) != dt.is_complex(dtype):
        kind = "complex" if dt.is_complex(x.dtype) else "real"
        raise UsageError(f"{name}: dtype should be {kind} for {kind} inputs, but got {dtype}")
    if dt.promote(x.dtype, dtype) != dtype:
        raise UsageError(f"{name}: the dtype of the input ({x.dtype}) should be convertible "
                         f"without narrowing to the specified dtype ({dtype})")  # fmt: skip
    return call("cast", x, dtype=dtype)


@takes_out
def norm(input, p="fro", dim=None, keepdim: bool = False, dtype=None):  # noqa: A002
    """PyTorch's `norm`: the p-norm of all elements, or along `dim` (an int or a tuple);
    "fro" is the 2-norm, "nuc" the nuclear norm of matrices. Floats only, as PyTorch's; the
    gradient at zero is zero.

    >>> import kiln as kn
    >>> kn.norm(kn.tensor([[3.0, 4.0]]), dim=1)
    tensor([5.])
    """
    (x,) = lift(input)
    if dtype is not None:  # (its checks, the linalg norms')
        x = norm_input("linalg.matrix_norm" if p == "nuc" else "linalg.vector_norm", x, dtype)
    if x.dtype.kind == "c" and p != "nuc":  # the norm of the magnitudes
        x = m.abs(x)
    if not (dt.is_float(x.dtype) or dt.is_complex(x.dtype)):  # complex: "nuc" only here
        raise UsageError(
            f"norm(): input dtype should be either floating point or complex. Got {x.dtype} "
            "instead."
        )
    if p == "nuc":  # the sum of the singular values of the matrices in dims `dim`
        from .linalg import matrix_norm  # NOTE: linalg imports this module

        return matrix_norm(x, "nuc", (-2, -1) if dim is None else tuple(dim), keepdim)
    if isinstance(p, str) and p != "fro":
        raise UsageError(f"linalg.matrix_norm: Order {p} not supported.")
    out = p_norm(x, 2 if p == "fro" else p, dim, keepdim)
    dims = None if dim is None else tuple(dim) if isinstance(dim, (tuple, list)) else (dim,)
    saved = {"_saved_self": input, "_saved_ord": 2 if p == "fro" else p, "_saved_dim": dims,
             "_saved_keepdim": keepdim}  # fmt: skip
    return name_history(out, "LinalgVectorNormBackward0", input, saved=saved)  # PyTorch's


# -- statistics and searching -------------------------------------------------------------------


def cov(input, *, correction: int = 1, fweights=None, aweights=None):  # noqa: A002
    """The covariance matrix of the variables in the rows of `input` (observations in the
    columns), divided by `n - correction`; observations weighted by integer `fweights`
    and/or float `aweights` (as PyTorch's).

    >>> import kiln as kn
    >>> kn.cov(kn.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 7.0]]))
    tensor([[1.0000, 1.5000],
            [1.5000, 2.3333]])
    """
    (x,) = lift(input)
    if x.dtype == dt.bool_:
        raise call_error(DTypeMismatchError, "cov(): bool dtype is not supported for input",
                         "cov", x)  # fmt: skip
    if x.ndim > 2:  # (PyTorch's RuntimeError)
        raise call_error(ShapeMismatchError, "cov(): expected input to have two or fewer "
                         f"dimensions but got {x.ndim}", "cov", x)  # fmt: skip
    for name, w, ok in (("fweights", fweights, "iu"), ("aweights", aweights, "f")):
        kind = None if w is None else np.dtype(lift(w)[0].dtype).kind
        if kind is not None and kind not in ok and lift(w)[0].dtype != dt.bfloat16:
            what = "integral" if name == "fweights" else "floating point"
            raise call_error(DTypeMismatchError, f"cov(): expected {name} to have {what} dtype "
                             f"but got {name} with {lift(w)[0].dtype} dtype", "cov", x)  # fmt: skip
    x = s.reshape(x, (1, -1)) if x.ndim < 2 else x
    if not (dt.is_float(x.dtype) or dt.is_complex(x.dtype)):
        x = m.cast(x, dt.DEFAULT_FLOAT)
    if aweights is not None:  # PyTorch's: x * aweights, promoted (float64 weights, say)
        x = m.cast(x, dt.result_type(*lift(x, aweights)))
    if fweights is not None or aweights is not None:
        out = _weighted_cov(x, correction, fweights, aweights)
    else:
        centred = m.sub(x, m.mean(x, 1, keepdim=True))
        product = m.matmul(centred, _adjoint(centred))
        out = m.div(product, max(x.shape[1] - correction, 0))
    return s.reshape(out, ()) if x.shape[0] == 1 else out  # one variable: its variance


def _weighted_cov(x, correction, fweights, aweights):
    """`cov` of observations weighted by `fweights * aweights` (either may be None): the
    weighted mean, divided by `sum(w) - correction * sum(w * aweights) / sum(w)` (by
    `sum(w) - correction` without aweights), as PyTorch's and NumPy's `cov`."""
    real = dt.to_real(x.dtype) if dt.is_complex(x.dtype) else x.dtype  # real weights
    given = [m.cast(w, real) for w in lift(*(v for v in (fweights, aweights) if v is not None))]
    w = given[0] if len(given) == 1 else m.mul(*given)
    total = m.sum(w)
    centred = m.sub(x, m.div(m.sum(m.mul(x, w), 1, keepdim=True), total))
    if correction == 0:
        norm = total
    elif aweights is None:
        norm = m.sub(total, correction)
    else:
        norm = m.sub(total, m.div(m.mul(m.sum(m.mul(w, given[-1])), correction), total))
    product = m.matmul(m.mul(centred, w), _adjoint(centred))
    return m.div(product, m.maximum(norm, 0))


def _adjoint(x):
    """The transpose of a matrix, conjugated where it is complex."""
    from .complex_numbers import conj

    return s.transpose(conj(x), 0, 1)


def corrcoef(input):  # noqa: A002
    """Pearson's correlation coefficients of the rows of `input`, clipped to [-1, 1].

    >>> import kiln as kn
    >>> kn.corrcoef(kn.tensor([[1.0, 2.0, 3.0], [3.0, 2.0, 1.0]]))
    tensor([[ 1., -1.],
            [-1.,  1.]])
    """
    from .complex_numbers import complex as complex_
    from .complex_numbers import imag, real

    c = cov(input)
    if c.ndim == 0:
        return m.div(c, c)
    d = diagonal(c)
    d = m.sqrt(real(d) if dt.is_complex(d.dtype) else d)  # variances are real
    r = m.div(m.div(c, s.reshape(d, (-1, 1))), s.reshape(d, (1, -1)))
    if dt.is_complex(r.dtype):  # each part clipped, as PyTorch's
        return complex_(m.clip(real(r), -1, 1), m.clip(imag(r), -1, 1))
    return m.clip(r, -1, 1)


def trapezoid(y, x=None, *, dx=None, dim: int = -1):
    """The trapezoidal rule along `dim`, with sample points `x` or spacing `dx` (1).

    >>> import kiln as kn
    >>> kn.trapezoid(kn.tensor([1.0, 2.0, 4.0]))
    tensor(4.5000)
    """
    # PyTorch's formulas step by step, in the input's dtype where it takes them there (an
    # integer y's pair sums wrap as PyTorch's)
    (v,) = lift(y)
    if v.dtype == np.bool_:
        raise call_error(DTypeMismatchError, "trapezoid: received a bool input for `y`, but bool "
                         "is not supported", "trapezoid", v)  # fmt: skip
    t = sample_points(v, x, dx, dim, "trapezoid")
    n = v.shape[dim]
    hi = select_range(v, dim, 1, n)
    lo = select_range(v, dim, 0, n - 1)
    if x is None:
        if n == 0:
            return m.mul(m.sum(m.div(m.add(hi, lo), 2.0), dim), 1.0 if dx is None else dx)
        d = dim % v.ndim
        ends = m.add(s.getitem(v, (slice(None),) * d + (0,)),
                     s.getitem(v, (slice(None),) * d + (n - 1,)))  # fmt: skip
        return m.mul(m.sub(m.sum(v, dim), m.mul(ends, 0.5)), 1.0 if dx is None else dx)
    steps = m.sub(select_range(t, -1 if t.ndim == 1 else dim, 1, n),
                  select_range(t, -1 if t.ndim == 1 else dim, 0, n - 1))  # fmt: skip
    if t.ndim == 1 and v.ndim > 1:
        shape = [1] * v.ndim
        shape[dim] = n - 1
        steps = s.reshape(steps, tuple(shape))
    return m.div(m.sum(m.mul(steps, m.add(hi, lo)), dim), 2.0)


def sample_points(v, x, dx, dim: int, name: str):
    """`x` lifted beside `y` (None if not given), checked as PyTorch checks it: not with `dx`
    (TypeError), one point per sample of y along `dim` for a 1-D x (RuntimeError)."""
    if x is None:
        return None
    if dx is not None:
        raise ArgumentTypeError(f"{name}() received an invalid combination of arguments: "
                                "sample points x and a spacing dx, give one")  # fmt: skip
    (t,) = lift(x, context=(v,))
    along = t.shape[0] if t.ndim == 1 else None  # (PyTorch broadcasts one of more dims)
    if along != v.shape[dim] and isinstance(along, int) and isinstance(v.shape[dim], int):
        raise call_error(ShapeMismatchError, f"{name}: There must be one `x` value for each "
                         f"sample point", name, v, t)  # fmt: skip
    return t


def select_range(x, dim: int, start: int, stop: int):
    d = dim % x.ndim
    return s.getitem(x, (slice(None),) * d + (slice(start, stop),))


@takes_out
def searchsorted(sorted_sequence, input, *, out_int32: bool = False, right: bool = False,  # noqa: A002
                 side=None, sorter=None):  # fmt: skip
    """Where each value of `input` would go in the last dim of `sorted_sequence` to keep it
    sorted: the number of elements below it (`right`: at most it); with `sorter`, the
    sequence is `sorted_sequence` in the order `sorter` gives. PyTorch's binary search, step
    for step, so a sequence with NaNs (or one not sorted) gives PyTorch's answer too.

    >>> import kiln as kn
    >>> kn.searchsorted(kn.tensor([1, 3, 5, 7]), kn.tensor([3, 6]), right=True)
    tensor([2, 3])
    """
    if side not in (None, "left", "right"):
        raise UsageError(f"torch.searchsorted(): side can only be 'left' or 'right' but got "
                         f"{side}")  # fmt: skip
    if side == "left" and right:
        raise UsageError("torch.searchsorted(): side and right can't be set to opposites, got "
                         "side of left while right was True")  # fmt: skip
    right = right or side == "right"
    seq, v = lift(sorted_sequence, input)
    if seq.ndim == 0:
        message = "boundaries tensor should have positive dimension, but got 0 dimension"
        raise call_error(ShapeError, f"torch.searchsorted(): {message}", "searchsorted", seq)
    scalar = not hasattr(v, "ndim") or v.ndim == 0
    if scalar and seq.ndim != 1:
        raise call_error(ShapeError, "torch.searchsorted(): input value can be a scalar only "
                         "when boundaries tensor dimension is 1", "searchsorted", seq)  # fmt: skip
    if seq.ndim != 1 and tuple(seq.shape[:-1]) != tuple(v.shape[:-1]):
        raise call_error(ShapeMismatchError, "torch.searchsorted(): boundaries tensor should "
                         "be 1 dimension or the first N-1 dimensions of boundaries tensor and "
                         "input value tensor must match", "searchsorted", seq, v)  # fmt: skip
    if sorter is not None:
        (order,) = lift(sorter, context=(seq,))
        if order.dtype != dt.int64:
            raise call_error(DTypeMismatchError, f"torch.searchsorted(): sorter must be a "
                             f"tensor of long dtype but got dtype {dt.scalar_name(order.dtype)}",
                             "searchsorted", seq, order)  # fmt: skip
        if tuple(order.shape) != tuple(seq.shape):
            raise call_error(ShapeMismatchError, "torch.searchsorted(): boundary and sorter "
                             "must have the same size", "searchsorted", seq, order)  # fmt: skip
        _check_sorter(seq, order)
    if scalar:
        v = s.reshape(v, (1,))
    start = _binary_search(seq, v, right, None if sorter is None else order)
    out = m.cast(start, dt.int32 if out_int32 else dt.int64)
    return s.reshape(out, ()) if scalar else out


def _check_sorter(seq, order) -> None:
    """PyTorch's check of every index of an eager `sorter` (the search reads only those it
    probes): in [0, n) along the last dim (a graph's are not known until it runs)."""
    if isinstance(order, Symbol):
        return
    values = np.asarray(order.numpy() if hasattr(order, "numpy") else order)
    if values.size and (values.min() < 0 or values.max() >= seq.shape[-1]):
        raise call_error(IndexOutOfRangeError, "torch.searchsorted(): sorter index out of range",
                         "searchsorted", seq, order)  # fmt: skip


def _binary_search(seq, v, right: bool, order):
    """PyTorch's lower (`right`: upper) bound of each value of `v` in the last dim of `seq`
    (through `order`): while start < end, probe mid = (start + end) // 2 and move right past
    it unless its element is at or above the value (above it, for `right`); int64 starts."""
    n = seq.shape[-1]
    start = m.cast(m.where(m.equal(v, v), 0, 0), dt.int64)  # zeros of v's shape
    end = m.add(start, n)
    if not isinstance(n, int) or n == 0:
        return end if n == 0 else _counted(seq, v, right)
    one_d = seq.ndim == 1
    for _ in range(n.bit_length()):  # each probe halves the interval: log2(n) + 1 of them
        mid = m.floor_divide(m.add(start, end), 2)
        at = m.minimum(mid, n - 1)  # (a finished value's probe: clipped, then ignored)
        if order is not None:
            at = _probe(order, at, one_d)
        probed = _probe(seq, at, one_d)
        reached = m.greater(probed, v) if right else m.greater_equal(probed, v)
        searching = m.less(start, end)
        start = m.where(m.logical_and(searching, m.logical_not(reached)), m.add(mid, 1), start)
        end = m.where(m.logical_and(searching, reached), mid, end)
    return start


def _probe(seq, at, one_d: bool):
    """The elements of `seq` at `at` along its last dim."""
    if one_d:
        return call("gather", seq, at, axis=0, wrap_negative=False)
    return call("take_along_axis", seq, at, axis=seq.ndim - 1)


def _counted(seq, v, right: bool):
    """The count of the elements below each value (at most it, for `right`): the binary
    search's answer on a sorted sequence, for a last dim of unknown length."""
    spread = s.unsqueeze(seq, -2)  # (..., 1, M)
    values = s.unsqueeze(v, -1)  # (..., N, 1)
    below = m.less_equal(spread, values) if right else m.less(spread, values)
    return m.sum(m.cast(below, dt.int64), -1)


def cdist(x1, x2, p: float = 2.0, compute_mode=None):
    """The p-norm distances between the rows of x1 (..., P, M) and of x2 (..., R, M).

    >>> import kiln as kn
    >>> kn.cdist(kn.tensor([[0.0, 0.0]]), kn.tensor([[3.0, 4.0], [1.0, 0.0]]))
    tensor([[5., 1.]])
    """
    a, b = lift(x1, x2)
    for name, v in (("X1", a), ("X2", b)):  # PyTorch refuses integers, bools and complex
        if v.dtype.kind == "c" or not dt.is_float(v.dtype):
            raise call_error(UsageError, f"cdist only supports floating-point dtypes, {name} "
                             f"got: {dt.scalar_name(v.dtype)}", "cdist", v)  # fmt: skip
    if a.dtype != b.dtype:  # (no promotion)
        raise call_error(DTypeMismatchError, f"expected scalar type {dt.scalar_name(a.dtype)} "
                         f"but found {dt.scalar_name(b.dtype)}", "cdist", a, b)  # fmt: skip
    if a.dtype in _HALF:  # (no kernel of PyTorch's)
        raise call_error(UnsupportedDTypeError, f'"cdist" not implemented for '
                         f"'{dt.scalar_name(a.dtype)}'", "cdist", a)  # fmt: skip
    diff = m.abs(m.sub(s.unsqueeze(a, -2), s.unsqueeze(b, -3)))  # (..., P, R, M)
    if p == 0:
        return nonzero_count(diff, -1, False)
    if p == float("inf"):
        return m.amax(diff, -1)
    if p == 2:
        total = m.sum(m.square(diff), -1)
        nonzero = m.not_equal(total, 0)  # NaN too: a NaN distance, as PyTorch's
        return m.where(nonzero, m.sqrt(m.where(nonzero, total, 1.0)), 0.0)
    # zero differences and zero distances contribute zero gradients, as PyTorch's backward
    # (not the inf * 0 of differentiating the powers there)
    moved = m.not_equal(diff, 0)
    total = m.sum(m.where(moved, m.pow(m.where(moved, diff, 1.0), p), 0.0), -1)
    nonzero = m.not_equal(total, 0)
    return m.where(nonzero, m.pow(m.where(nonzero, total, 1.0), 1.0 / p), 0.0)


@takes_out
def isin(elements, test_elements, *, assume_unique: bool = False, invert: bool = False):
    """Whether each element is among `test_elements`.

    >>> import kiln as kn
    >>> kn.isin(kn.tensor([1, 2, 3]), kn.tensor([2, 5]))
    tensor([False,  True, False])
    """
    e, t = lift(elements, test_elements)
    hit = m.any(m.equal(s.unsqueeze(e, -1), s.reshape(t, (-1,))), -1)
    return m.logical_not(hit) if invert else hit


@takes_out
def ldexp(input, other):  # noqa: A002
    """`input * 2**other`: a float input with an integer exponent keeps its dtype (the exact
    product rounded once; a bool exponent is refused), other operands promote as PyTorch's
    `input * 2.0**other` (integers give the default float, a complex input stays complex).

    >>> import kiln as kn
    >>> kn.ldexp(kn.tensor([1.0, 2.0]), kn.tensor([2, 3]))
    tensor([ 4., 16.])
    """
    x, e = lift(input, other)
    if not (dt.is_float(x.dtype) and e.dtype.kind in "biu"):
        return m.mul(x, tm.exp2(e))  # PyTorch's x * 2.0**e, promoted as its mul and pow
    if e.dtype == np.bool_:
        raise call_error(UnsupportedDTypeError, "\"ldexp_cpu_exp\" not implemented for 'Bool'",
                         "ldexp", x, e)  # fmt: skip
    # a float input with an integer exponent keeps its dtype, and the result is the exact
    # x * 2**e rounded once: in float64, whose products of float32 (and narrower) values with
    # 2**e, e clamped to +-400, are exact; float64 inputs take 2**e as two factors of at most
    # 2**1023 each
    dtype = x.dtype
    wide, e = m.cast(x, np.float64), m.cast(e, np.int64)
    if dtype != np.float64:
        return m.cast(m.mul(wide, tm.exp2(m.cast(m.clip(e, -400, 400), np.float64))), dtype)
    k = m.clip(e, -2098, 2046)
    half = m.floordiv(k, 2)
    return m.mul(m.mul(wide, tm.exp2(m.cast(half, np.float64))),
                 tm.exp2(m.cast(m.sub(k, half), np.float64)))  # fmt: skip
