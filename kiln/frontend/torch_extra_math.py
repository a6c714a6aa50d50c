"""More of PyTorch's math, written with kiln's ops so that each works eagerly (with autograd),
in graph mode and under `kn.compile`: elementwise functions (`reciprocal`, `isinf`, `xlogy`,
`fmax`...), NaN-aware and paired reductions (`nansum`, `count_nonzero`, `aminmax`, `median`,
`kthvalue`), with PyTorch's signatures and dtypes; products are in torch_extra_linalg."""

from __future__ import annotations

import math as _math

import ml_dtypes
import numpy as np

from .. import dtypes as dt
from .. import shapes as sh
from ..array_types import return_types
from ..eager.autograd import name_history
from ..errors import (
    ArgumentTypeError,
    DTypeMismatchError,
    IndexOutOfRangeError,
    UnsupportedDTypeError,
    UsageError,
    call_error,
)
from ..graph.opdef import REGISTRY
from ..ops.state import GRAD_FORMULAS
from . import core, special
from . import math as m
from . import shape as s
from . import torch_math as tm
from .core import call, lift
from .half_formulas import rounded32
from .out import takes_out
from .reductions import require_floating
from .result_layouts import c_ordered
from .torch_extra_shape import select

__all__ = [
    "absolute", "aminmax", "arccos", "arccosh", "arcsin", "arcsinh", "arctan", "arctan2",
    "arctanh", "clamp_max", "clamp_min", "count_nonzero", "deg2rad", "erfc", "fix",
    "float_power", "fmax", "fmin", "frac", "heaviside", "hypot", "isinf", "isneginf",
    "isposinf", "kthvalue", "logaddexp2", "logit", "median", "nan_to_num", "nanmean",
    "nansum",
    "negative", "positive", "rad2deg", "reciprocal", "round", "sgn", "signbit", "sinc", "xlogy",
]  # fmt: skip

absolute, negative, fix = m.abs, m.neg, m.trunc


@takes_out
def sgn(input):  # noqa: A002
    """`sign(x)` for real values; `x / |x|` (0 at 0) for complex ones, as PyTorch's `sgn`.

    >>> import kiln as kn
    >>> kn.sgn(kn.tensor([3 + 4j, 0j]))
    tensor([0.6000+0.8000j, 0.0000+0.0000j])
    """
    (x,) = lift(input)
    if x.dtype.kind != "c":
        return m.sign(x)
    r = m.abs(x)
    zero = m.equal(r, 0)
    safe = m.where(zero, 1, r)  # each part over |x|, as PyTorch's (a complex division by an
    parts = (m.div(call(p, x), safe) for p in ("real", "imag"))  # infinite |x| gives NaN parts)
    return m.where(zero, 0, call("complex", *parts))


arccos, arccosh, arcsin, arcsinh = tm.acos, tm.acosh, tm.asin, tm.asinh
arctan, arctan2, arctanh = tm.atan, tm.atan2, tm.atanh


def _no_kernel(kernel, x, kinds="biuc", why=None):
    """PyTorch's NotImplementedError (a RuntimeError) of a kernel without a loop for x's dtype
    (of `kinds`)."""
    (x,) = lift(x)
    if x.dtype.kind in kinds:
        why = why or f"\"{kernel}\" not implemented for '{dt.scalar_name(x.dtype)}'"
        raise call_error(UnsupportedDTypeError, why, kernel.split("_")[0], x)


def _float(x):
    """x in the default float dtype when it is an integer or bool (PyTorch's float functions)."""
    (x,) = lift(x)
    return x if dt.is_differentiable(x.dtype) else m.cast(x, dt.DEFAULT_FLOAT)


# -- elementwise ------------------------------------------------------------------------------


@takes_out
def reciprocal(input):  # noqa: A002
    """`1 / x`; integers give the default float dtype.

    >>> import kiln as kn
    >>> kn.reciprocal(kn.tensor([2, 4]))
    tensor([0.5000, 0.2500])
    """
    x = _float(input)
    y = m.div(1.0, x)
    if x.dtype in (np.dtype(np.float16), dt.bfloat16):  # PyTorch's gradient: -ct * (y * y)
        y = core.with_grad(y, x, ("reciprocal",), y)
    return name_history(y, "ReciprocalBackward0", x)


def _reciprocal_grad(ct, y):
    return m.mul(m.neg(ct), m.mul(y, y))


GRAD_FORMULAS["reciprocal"] = _reciprocal_grad


erfc = special.erfc  # an op of its own: accurate where 1 - erf(x) cancels (x > 1)


def isinf(input):  # noqa: A002
    """Whether each element is +inf or -inf (always False for integers).

    >>> import kiln as kn, numpy as np
    >>> kn.isinf(kn.tensor([1.0, np.inf, -np.inf, np.nan]))
    tensor([False,  True,  True, False])
    """
    (x,) = lift(input)
    if x.dtype.kind == "c":  # either part infinite (the other may be NaN), as PyTorch's
        return m.logical_or(isinf(call("real", x)), isinf(call("imag", x)))
    return m.logical_not(m.logical_or(m.isfinite(x), m.isnan(x)))


@takes_out
def isposinf(input):  # noqa: A002
    """Whether each element is +inf.

    >>> import kiln as kn, numpy as np
    >>> kn.isposinf(kn.tensor([np.inf, -np.inf]))
    tensor([ True, False])
    """
    (x,) = lift(input)
    return m.logical_and(isinf(x), m.greater(x, 0))


@takes_out
def isneginf(input):  # noqa: A002
    """Whether each element is -inf.

    >>> import kiln as kn, numpy as np
    >>> kn.isneginf(kn.tensor([np.inf, -np.inf]))
    tensor([False,  True])
    """
    (x,) = lift(input)
    return m.logical_and(isinf(x), m.less(x, 0))


@takes_out
def signbit(input):  # noqa: A002
    """Whether the sign bit is set (True for -0.0, as PyTorch's).

    >>> import kiln as kn
    >>> kn.signbit(kn.tensor([-0.0, 0.0, -2.0]))
    tensor([ True, False,  True])
    """
    (x,) = lift(input)
    if not dt.is_float(x.dtype):
        return m.less(x, 0)
    return m.less(tm.copysign(1.0, x), 0)


@takes_out
def deg2rad(input):  # noqa: A002
    """Degrees to radians.

    >>> import kiln as kn
    >>> kn.deg2rad(kn.tensor([180.0]))
    tensor([3.1416])
    """
    _no_kernel("deg2rad", input, "c", "deg2rad is not supported for complex tensors.")
    return m.mul(_float(input), _math.pi / 180)


@takes_out
def rad2deg(input):  # noqa: A002
    """Radians to degrees.

    >>> import kiln as kn
    >>> kn.rad2deg(kn.tensor([3.141592653589793]))
    tensor([180.])
    """
    _no_kernel("rad2deg", input, "c", "rad2deg is not supported for complex tensors.")
    return m.mul(_float(input), 180 / _math.pi)


@takes_out
def nan_to_num(input, nan: float = 0.0, posinf=None, neginf=None):  # noqa: A002
    """NaN, +inf and -inf replaced by `nan`, `posinf` and `neginf` (by default the dtype's
    greatest and least finite values; in the real and imaginary parts of complex values);
    integers are returned as they are.

    >>> import kiln as kn, numpy as np
    >>> kn.nan_to_num(kn.tensor([np.nan, np.inf, -np.inf, 1.0]), posinf=9.0, neginf=-9.0)
    tensor([ 0.,  9., -9.,  1.])
    """
    (x,) = lift(input)
    if x.dtype.kind == "c":  # each part on its own, as PyTorch's
        parts = (call("real", x), call("imag", x))
        return call("complex", *(nan_to_num(v, nan, posinf, neginf) for v in parts))
    if not dt.is_float(x.dtype):
        return x
    info = ml_dtypes.finfo(x.dtype)  # (NumPy's finfo does not know bfloat16)
    hi = float(info.max) if posinf is None else posinf
    lo = float(info.min) if neginf is None else neginf
    out = m.where(m.isnan(x), nan, x)
    return m.where(isposinf(x), hi, m.where(isneginf(x), lo, out))


@takes_out
def frac(input):  # noqa: A002
    """The fractional part `x - trunc(x)`, with x's sign.

    >>> import kiln as kn
    >>> kn.frac(kn.tensor([1.5, -2.25]))
    tensor([ 0.5000, -0.2500])
    """
    (x,) = lift(input)
    _no_kernel("frac_cpu", x)  # integers, bools and complex values: PyTorch has no kernel
    return m.sub(x, m.trunc(x))


def positive(input):  # noqa: A002
    """`x` itself (PyTorch's unary plus); refused for bool (RuntimeError), as PyTorch's.

    >>> import kiln as kn
    >>> kn.positive(kn.tensor([-1, 2]))
    tensor([-1,  2])
    """
    (x,) = lift(input)
    if x.dtype == np.bool_:
        raise UsageError("The `+` operator, on a bool tensor is not supported.")
    return x


@takes_out
def logit(input, eps=None):  # noqa: A002
    """`log(p / (1 - p))`, p clamped to `[eps, 1 - eps]` when eps is given.

    >>> import kiln as kn
    >>> kn.logit(kn.tensor([0.5, 0.0]), eps=0.25)
    tensor([ 0.0000, -1.0986])
    """
    x = _float(input)
    # one op: its gradient is PyTorch's (NaN outside [0, 1], inf at 0 and 1, 0 outside
    # [eps, 1 - eps]), which the composition log(p / (1 - p)) does not give
    return call("logit", x, eps=-1.0 if eps is None else float(eps))


xlogy = special.xlogy  # an op of its own: SciPy's values, PyTorch's gradients


@takes_out
def hypot(input, other):  # noqa: A002
    """`sqrt(a**2 + b**2)`, without the overflow or underflow of the squares.

    >>> import kiln as kn
    >>> kn.hypot(kn.tensor([3.0, 3e30]), kn.tensor([4.0, 4e30]))
    tensor([5.0000e+00, 5.0000e+30])
    """
    a, b = lift(input, other)
    tm.refuse_integers("hypot", a, b)
    return core.lift_and_bind(REGISTRY["hypot"], a, b)


@takes_out
def fmax(input, other):  # noqa: A002
    """Elementwise maximum that ignores NaN (NaN only where both are).

    >>> import kiln as kn, numpy as np
    >>> kn.fmax(kn.tensor([np.nan, 1.0]), kn.tensor([2.0, np.nan]))
    tensor([2., 1.])
    """
    a, b = lift(input, other)
    # PyTorch's: a tie is the first argument's, value and gradient
    return m.where(m.logical_or(m.greater_equal(a, b), m.isnan(b)), a, b)


@takes_out
def fmin(input, other):  # noqa: A002
    """Elementwise minimum that ignores NaN (NaN only where both are).

    >>> import kiln as kn, numpy as np
    >>> kn.fmin(kn.tensor([np.nan, 1.0]), kn.tensor([2.0, np.nan]))
    tensor([2., 1.])
    """
    a, b = lift(input, other)
    # PyTorch's: a tie is the first argument's, value and gradient
    return m.where(m.logical_or(m.less_equal(a, b), m.isnan(b)), a, b)


@takes_out
def logaddexp2(input, other):  # noqa: A002
    """`log2(2**a + 2**b)`, without overflow.

    >>> import kiln as kn
    >>> kn.logaddexp2(kn.tensor([1.0]), kn.tensor([1.0]))
    tensor([2.])
    """
    tm.refuse_integers("logaddexp2", *lift(input, other))
    a, b = core.promote(REGISTRY["logaddexp"], input, other)
    dtype = a.dtype
    if dtype in (np.dtype(np.float16), dt.bfloat16):  # PyTorch's: in float32, rounded once
        a, b = m.cast(a, np.float32), m.cast(b, np.float32)
    ln2 = _math.log(2)
    out = m.div(tm.logaddexp(m.mul(a, ln2), m.mul(b, ln2)), ln2)
    return out if out.dtype == dtype else m.cast(out, dtype)


@takes_out
def sinc(input):  # noqa: A002
    """The normalized sinc `sin(pi x) / (pi x)`, 1 at 0.

    >>> import kiln as kn
    >>> kn.sinc(kn.tensor([0.0, 0.5]))
    tensor([1.0000, 0.6366])
    """
    x = _float(input)
    if x.dtype in (np.dtype(np.float16), dt.bfloat16):
        # PyTorch's: sin(pi x) / (pi x) in float32 rounded once, its gradient in x's dtype
        return core.with_grad(core.half_in_float32(_sinc32)(x), x, ("sinc",), x)
    zero = m.equal(x, 0)
    px = m.mul(m.where(zero, 1.0, x), _math.pi)
    return m.where(zero, 1.0, m.div(m.sin(px), px))


def _sinc32(x):
    zero = m.equal(x, 0)
    px = m.mul(m.where(zero, 1.0, x), _math.pi)
    return m.where(zero, 1.0, m.div(rounded32(m.sin, px), px))


def _sinc_grad(ct, x):
    # PyTorch's sinc_backward, each step rounded to x's dtype:
    # ct * ((pi x cos(pi x) - sin(pi x)) / (x x pi)), 0 where x x pi is 0
    px, pxx = m.mul(x, _math.pi), m.mul(m.mul(x, x), _math.pi)
    out = m.mul(ct, m.div(m.sub(m.mul(px, m.cos(px)), m.sin(px)), pxx))
    return m.where(m.equal(pxx, 0.0), 0.0, out)


GRAD_FORMULAS["sinc"] = _sinc_grad


@takes_out
def heaviside(input, values):  # noqa: A002
    """0 where x < 0, 1 where x > 0, `values` where x == 0.

    >>> import kiln as kn
    >>> kn.heaviside(kn.tensor([-1.0, 0.0, 2.0]), kn.tensor([0.5]))
    tensor([0.0000, 0.5000, 1.0000])
    """
    x, v = lift(input, values)
    if dt.is_complex(x.dtype) or dt.is_complex(v.dtype):
        raise call_error(DTypeMismatchError, "heaviside is not yet implemented for complex "
                         "tensors.", "heaviside", x, v)  # fmt: skip
    if hasattr(values, "dtype") and x.dtype != v.dtype:  # PyTorch's: no promotion (a number
        # is kiln's extension, taking x's dtype)
        raise call_error(DTypeMismatchError, "heaviside is not yet implemented for tensors "
                         "with different dtypes.", "heaviside", x, v)  # fmt: skip
    out = m.where(m.equal(x, 0), v, m.cast(m.greater(x, 0), x.dtype))
    return out


@takes_out
def float_power(input, exponent):  # noqa: A002
    """`x ** e` computed in float64 (complex128 when either is complex), as PyTorch's.

    >>> import kiln as kn
    >>> kn.float_power(kn.tensor([2]), 3)
    tensor([8.], dtype=kiln.float64)
    >>> kn.float_power(kn.tensor([1j]), 2)
    tensor([-1.+0.j], dtype=kiln.complex128)
    """
    base_number = isinstance(input, (int, float, complex))  # (a number base: `0.1 ** t`)
    number = isinstance(exponent, (int, float, complex))
    either = (type(input) if base_number else lift(input)[0].dtype,
              type(exponent) if number else lift(exponent)[0].dtype)  # fmt: skip
    wide = dt.complex128 if any(dt.is_complex(d) for d in either) else dt.float64
    # a number base in the wide dtype itself, not rounded to the default dtype first
    (x,) = lift(np.asarray(input, wide) if base_number else input)
    e = exponent if number else m.cast(exponent, wide)
    return m.pow(m.cast(x, wide), float(e) if isinstance(e, int) else e)


@takes_out
def clamp_min(input, min):  # noqa: A002
    """`max(x, min)`.

    >>> import kiln as kn
    >>> kn.clamp_min(kn.tensor([-1.0, 2.0]), 0.0)
    tensor([0., 2.])
    """
    return m.clip(input, min, None)


@takes_out
def clamp_max(input, max):  # noqa: A002
    """`min(x, max)`.

    >>> import kiln as kn
    >>> kn.clamp_max(kn.tensor([-1.0, 2.0]), 0.0)
    tensor([-1.,  0.])
    """
    return m.clip(input, None, max)


# -- reductions -------------------------------------------------------------------------------


@takes_out
def nansum(input, dim=None, keepdim: bool = False, *, dtype=None):  # noqa: A002
    """The sum with NaN counted as zero.

    >>> import kiln as kn, numpy as np
    >>> kn.nansum(kn.tensor([1.0, np.nan, 2.0]))
    tensor(3.)
    """
    (x,) = lift(input)
    if dt.is_float(x.dtype):
        x = _nan_as_zero(x, m.logical_not(m.isnan(x)))
    return m.sum(x, dim, keepdim, dtype=dtype)


def _nan_as_zero(x, ok):
    """`x` with NaN made 0, and the gradient PyTorch's nansum has, `ct * ok`: at a NaN that is
    `ct * 0`, NaN where ct is inf (nanmean of a slice of NaNs divides by a count of 0)."""
    # NOTE: x ** 0 - 1 is 0 at NaN too, and its gradient is ct * 0 (pow's, where b == 0)
    return m.where(ok, x, m.sub(m.pow(x, 0), 1))


@takes_out
def nanmean(input, dim=None, keepdim: bool = False, *, dtype=None):  # noqa: A002
    """The mean of the elements that are not NaN.

    >>> import kiln as kn, numpy as np
    >>> kn.nanmean(kn.tensor([1.0, np.nan, 2.0]))
    tensor(1.5000)
    """
    (x,) = lift(input)
    if dtype is not None:
        x = m.cast(x, dtype)
    require_floating("nanmean", x, "nanmean(): expected input to have floating point or complex "
                     "dtype but got {dtype}")  # fmt: skip
    ok = m.logical_not(m.isnan(x))
    total = m.sum(_nan_as_zero(x, ok), dim, keepdim)
    return m.div(total, m.sum(m.cast(ok, x.dtype), dim, keepdim))


def count_nonzero(input, dim=None):  # noqa: A002
    """The number of nonzero elements (along `dim`: an int or a tuple), as int64.

    >>> import kiln as kn
    >>> kn.count_nonzero(kn.tensor([[0, 1], [2, 3]]), dim=0)
    tensor([1, 2])
    """
    (x,) = lift(input)
    return m.sum(m.cast(m.not_equal(x, 0), dt.int64), dim)


@takes_out
def aminmax(input, *, dim=None, keepdim: bool = False):  # noqa: A002
    """The least and greatest values (`min`, `max`, a named tuple), of all or along `dim`.

    >>> import kiln as kn
    >>> kn.aminmax(kn.tensor([3, 1, 2]))
    aminmax(min=tensor(1), max=tensor(3))
    """
    (x,) = lift(input)
    if dim is not None and not isinstance(dim, (int, np.integer)):
        raise ArgumentTypeError(f"aminmax(): argument 'dim' must be int, not {type(dim).__name__}")
    return return_types.aminmax(m.amin(x, dim, keepdim), m.amax(x, dim, keepdim))


def _kth(x, k: int, dim, keepdim, name):
    """The k-th smallest (0-based) along dim and its index, from a stable sort (in C order)."""
    values, indices = tm.sort(x, dim, stable=True)
    v = c_ordered(call("cast", select(values, dim, k), dtype=values.dtype))
    i = c_ordered(call("cast", select(indices, dim, k), dtype=indices.dtype))
    if keepdim:
        v, i = s.unsqueeze(v, dim), s.unsqueeze(i, dim)
    return getattr(return_types, name)(v, i)


def _lower_middle(order, d: int):
    """The entry at (n - 1) // 2 along dim `d` of the int64 `order` (n its length there,
    known or bound at run time), kept as a size-1 dim."""
    n = order.shape[d]
    if isinstance(n, int):
        return s.unsqueeze(select(order, d, (n - 1) // 2), d)
    line = s.getitem(order, tuple(slice(None) if k == d else 0 for k in range(order.ndim)))
    count = m.sum(m.add(m.mul(line, 0), 1))  # n, as a value of the run
    at = m.floordiv(m.sub(count, 1), 2)
    shape = tuple(1 if k == d else size for k, size in enumerate(order.shape))
    return s.take_along_axis(order, s.broadcast_to(s.reshape(at, (1,) * order.ndim), shape), d)


@takes_out
def median(input, dim=None, keepdim: bool = False):  # noqa: A002
    """The lower median: of all elements (0-d), or `(values, indices)` along `dim`.

    >>> import kiln as kn
    >>> kn.median(kn.tensor([4.0, 1.0, 3.0, 2.0]))
    tensor(2.)
    """
    (x,) = lift(input)
    if x.dtype == dt.bool_:  # as PyTorch's
        raise call_error(UnsupportedDTypeError, "\"median_cpu\" not implemented for 'Bool'",
                         "median", x)  # fmt: skip
    if dim is None and 0 in list(x.shape):
        return median_of_nothing(x)
    if dim is None:
        flat = s.reshape(x, (-1,))
        at = _lower_middle(tm.sort(flat, 0, stable=True).indices, 0)
        value = s.reshape(s.take_along_axis(flat, at, 0), ())
        if not dt.is_float(x.dtype):
            return value
        value = m.where(m.any(m.isnan(flat)), float("nan"), value)  # PyTorch: NaN if any is
        # the gradient goes evenly to the elements equal to it, as PyTorch's
        return core.call("share_ties", x, core.call("stop_gradient", value),
                         axes=tuple(range(x.ndim)))  # fmt: skip
    if x.ndim == 0:
        sh.normalize_axis(dim, 1)  # dims 0 and -1 only, as PyTorch's (IndexError)
        zero = m.cast(m.mul(m.cast(x, dt.int8), 0), dt.int64)  # (x * 0 is NaN for a NaN)
        return return_types.median(x, zero)
    d = sh.normalize_axis(dim, x.ndim)
    index = s.squeeze(_lower_middle(tm.sort(x, d, stable=True).indices, d), d)
    if not dt.is_float(x.dtype):
        value = s.squeeze(s.take_along_axis(x, s.unsqueeze(index, d), d), d)
        if keepdim:
            value, index = s.unsqueeze(value, d), s.unsqueeze(index, d)
        return return_types.median(value, index)
    # PyTorch: a slice with a NaN has the median NaN at its first NaN; the value is taken
    # at the index, so the gradient goes there
    nans = m.isnan(x)
    index = m.where(m.any(nans, d), m.argmax(m.cast(nans, dt.int8), d), index)
    value = s.squeeze(s.take_along_axis(x, s.unsqueeze(index, d), d), d)
    if keepdim:
        value, index = s.unsqueeze(value, d), s.unsqueeze(index, d)
    return return_types.median(value, index)


def median_of_nothing(x):
    """The median of an empty `x`, as PyTorch's: NaN, or the integer dtype's least value.

    >>> import kiln as kn
    >>> median_of_nothing(kn.zeros(0)), median_of_nothing(kn.zeros(2, 0, dtype=kn.int8))
    (tensor(nan), tensor(-128, dtype=kiln.int8))
    """
    if dt.is_float(x.dtype):
        fill = float("nan")
    else:
        fill = 0 if x.dtype == np.bool_ else int(np.iinfo(x.dtype).min)
    return m.cast(m.add(m.mul(m.sum(x), 0), fill), x.dtype)  # (0-d, of x's kind and place)


@takes_out
def kthvalue(input, k: int, dim: int = -1, keepdim: bool = False):  # noqa: A002
    """The k-th smallest element (k from 1) along `dim`, and its index.

    >>> import kiln as kn
    >>> kn.kthvalue(kn.tensor([4.0, 1.0, 3.0]), 2).values
    tensor(3.)
    """
    (x,) = lift(input)
    if x.dtype == np.bool_:
        raise call_error(UnsupportedDTypeError, "\"kthvalue_cpu\" not implemented for 'Bool'",
                         "kthvalue", x)  # fmt: skip
    n = x.shape[sh.normalize_axis(int(dim), x.ndim)] if x.ndim else 1
    if not 1 <= k <= n:
        raise IndexOutOfRangeError(
            f"kthvalue(): selected number k out of range for dimension {dim}"
        )
    if x.ndim == 0:
        return return_types.kthvalue(x, m.cast(m.mul(x, 0), dt.int64))
    return _kth(x, k - 1, dim, keepdim, "kthvalue")


@takes_out
def round(input, *, decimals: int | None = None):  # noqa: A001, A002
    """Rounds half to even, to `decimals` decimal places, as PyTorch's: `round(x * 10**d) /
    10**d`, or `round(x / 10**-d) * 10**-d` for d < 0, float16 and bfloat16 in float32 and
    10**|d| in that dtype. Integers are returned as they are, refused where `decimals` is given.

    >>> import kiln as kn
    >>> kn.round(kn.tensor([1.25, 2.5, 12.0]), decimals=1), kn.round(kn.tensor([2.5]))
    (tensor([ 1.2000,  2.5000, 12.0000]), tensor([2.]))
    """
    (x,) = lift(input)
    if decimals is not None:  # PyTorch's round.decimals has no integer kernels
        _no_kernel("round_cpu" if x.dtype.kind == "b" else "round_vml_cpu", x, "biu")
    if not decimals or not dt.is_float(x.dtype):
        return m.round(x)
    v = m.cast(x, dt.float32) if x.dtype in (np.float16, dt.bfloat16) else x
    with np.errstate(over="ignore"):  # 10**40 in float32, 10**400: inf, as PyTorch's
        ten = np.asarray(_math.inf if abs(decimals) > 308 else 10.0 ** abs(decimals), v.dtype)
    if decimals < 0:
        return m.cast(m.mul(m.round(m.div(v, ten)), ten), x.dtype)
    return m.cast(m.div(m.round(m.mul(v, ten)), ten), x.dtype)
