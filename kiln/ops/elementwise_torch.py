"""Elementwise primitives beyond the core set: trigonometric and hyperbolic functions, base-2
and base-10 exp/log, `atan2`, `hypot`, the integer-capable divisions `floordiv`, `mod` and
`fmod` (which refuse an integer division by zero on the CPU, as PyTorch), and `copysign`,
each NumPy's ufunc (kernel and dtype rule) with its derivative written with kiln ops, lowered
to the libm function of the same name in fused kernels (float loops)."""

from __future__ import annotations

import math

import numpy as np

from .. import dtypes as dt
from ..errors import IntegerDivisionByZeroError, node_error
from ..graph.core import user_site
from .core import apply, defop, same_shape, scalar, ufunc_dtype
from .elementwise import binary, unary
from .lowering import Lowering, c_fn, c_libm


def _rsqrt(v):
    return apply("rsqrt", v)


def _libm(name):
    """The C form: libm's `name` (CUDA's libm is within a few ulps of the host's)."""
    return Lowering(transcendental=True, cuda=c_libm(name))


tan = unary(
    "tan", np.tan, vjp=lambda ct, y, x: (ct * (y * y + 1),), lowering=_libm("tan"), tags={"complex"}
)
asin = unary(
    "asin",
    np.arcsin,
    vjp=lambda ct, y, x: (ct * _rsqrt(1 - x * x),),
    lowering=_libm("asin"),
    tags={"complex"},
)
acos = unary(
    "acos",
    np.arccos,
    vjp=lambda ct, y, x: (-ct * _rsqrt(1 - x * x),),
    lowering=_libm("acos"),
    tags={"complex"},
)
atan = unary(
    "atan",
    np.arctan,
    vjp=lambda ct, y, x: (ct / (x * x + 1),),
    lowering=_libm("atan"),
    tags={"complex"},
)
sinh = unary(
    "sinh",
    np.sinh,
    vjp=lambda ct, y, x: (ct * apply("cosh", x),),
    lowering=_libm("sinh"),
    tags={"complex"},
)
cosh = unary(
    "cosh",
    np.cosh,
    vjp=lambda ct, y, x: (ct * apply("sinh", x),),
    lowering=_libm("cosh"),
    tags={"complex"},
)
asinh = unary(
    "asinh",
    np.arcsinh,
    vjp=lambda ct, y, x: (ct * _rsqrt(x * x + 1),),
    lowering=_libm("asinh"),
    tags={"complex"},
)


def _acosh_vjp(ct, y, x):
    # 1 / sqrt(x**2 - 1) for real x (PyTorch's: finite below -1 too); for complex x the
    # derivative's branch, 1 / (sqrt(x - 1) sqrt(x + 1)) (1 / sqrt(x**2 - 1) has the other
    # sign where Re x < 0)
    if x.dtype.kind == "c":
        return (ct * _rsqrt(x - 1) * _rsqrt(x + 1),)
    return (ct * _rsqrt(x * x - 1),)


acosh = unary(
    "acosh",
    np.arccosh,
    vjp=_acosh_vjp,
    lowering=_libm("acosh"),
    tags={"complex"},
)
atanh = unary(
    "atanh",
    np.arctanh,
    vjp=lambda ct, y, x: (ct / (1 - x * x),),
    lowering=_libm("atanh"),
    tags={"complex"},
)
exp2 = unary(
    "exp2",
    np.exp2,
    vjp=lambda ct, y, x: (ct * y * math.log(2),),
    lowering=_libm("exp2"),
    tags={"complex"},
)
log2 = unary(
    "log2",
    np.log2,
    vjp=lambda ct, y, x: (ct / (x * math.log(2)),),
    lowering=_libm("log2"),
    tags={"complex"},
)
log10 = unary(
    "log10",
    np.log10,
    vjp=lambda ct, y, x: (ct / (x * math.log(10)),),
    lowering=_libm("log10"),
    tags={"complex"},
)


def _atan2_vjp(ct, z, a, b):
    # As PyTorch: times 1 / (a² + b²), taken as 0 where a² + b² is 0 (the gradient at the
    # origin is 0, not NaN)
    r2 = a * a + b * b
    zero = apply("equal", r2, scalar(0, r2))
    recip = apply("where", zero, scalar(0, r2), 1 / apply("where", zero, scalar(1, r2), r2))
    return ct * b * recip, ct * -a * recip


def trunc(v):
    """`v` rounded toward zero, with kiln ops (floor above zero, ceil below)."""
    return apply("where", apply("less", v, scalar(0, v)), apply("ceil", v), apply("floor", v))


def _copysign_vjp(ct, z, a, b):
    # As PyTorch: d/da is z / a (the sign flip, +-1), and 0 where a == 0; b's is 0.
    zero = apply("equal", a, scalar(0, a))
    ratio = apply("where", zero, scalar(0, z), z / apply("where", zero, scalar(1, a), a))
    return ct * ratio, apply("broadcast_to", scalar(0, ct), shape=ct.shape)


def _c_copysign(t, x, y):
    return f"{c_fn('copysign', t)}({x}, {y})" if t.kind == "f" else None


atan2 = binary("atan2", np.arctan2, vjp=_atan2_vjp, lowering=_libm("atan2"))
# hypot: libm's, which neither overflows nor underflows where a² + b² would
hypot = binary(
    "hypot", np.hypot, vjp=lambda ct, z, a, b: (ct * a / z, ct * b / z), lowering=_libm("hypot")
)


_HALF = (np.dtype(np.float16), dt.bfloat16)


def _half_floor_divide(xp, a, b, out=None):
    """PyTorch's floor division of float16/bfloat16 tensors by a divisor of several elements
    (one element is its float32 loop's, rounded once, as NumPy's): its float algorithm with
    each step rounded to the dtype: `(a - fmod(a, b)) / b`, minus 1
    where the remainder's sign is not b's, floored and raised by 1 where that leaves more than
    1/2; `a / b` where b is 0, and a zero quotient takes the sign of `a / b`."""
    dtype = np.asarray(a).dtype

    def rounded(v):
        return v.astype(dtype).astype(np.float32)

    x, y = xp.asarray(a).astype(np.float32), xp.asarray(b).astype(np.float32)
    with np.errstate(all="ignore"):
        mod = xp.fmod(x, y)
        div = rounded(rounded(x - mod) / y)
        div = xp.where((mod != 0) & ((y < 0) != (mod < 0)), rounded(div - 1), div)
        floor = xp.floor(div)
        floor = xp.where(rounded(div - floor) > 0.5, rounded(floor + 1), floor)
        quotient = rounded(x / y)
        floor = xp.where(div == 0, xp.copysign(xp.zeros_like(div), quotient), floor)
        r = xp.where(y == 0, quotient, floor).astype(dtype)
    if out is None:
        return r
    out[...] = r
    return out


def _integer_division_kernel(op_name, ufunc_name):
    """The kernel of the integer-capable division `op_name` (`floordiv`, `mod`, `fmod`): xp's
    ufunc, which on the CPU first refuses an integer division by zero as PyTorch does (NumPy
    warns and gives 0; on a GPU neither checks, as PyTorch's CUDA kernels do not). The error
    names the caller's line (an eager op runs there); graph mode's runtime replaces that with
    the node's context."""

    def kernel(xp, a, b, out=None):
        if xp is np:
            b = np.asarray(b)
            if b.dtype.kind in "iu" and np.asarray(a).dtype.kind in "iub" and not b.all():
                message = (f"ZeroDivisionError: integer division by zero; got "
                           f"{np.result_type(a, b)} operands of shapes {list(np.shape(a))} "
                           f"and {list(b.shape)}")  # fmt: skip
                error = node_error(IntegerDivisionByZeroError, message, op=op_name, name=None,
                                   site=user_site())  # fmt: skip
                error.reason = message
                raise error
        if xp is np and op_name == "floordiv" and np.asarray(a).dtype in _HALF and b.size != 1:
            return _half_floor_divide(xp, a, b, out)  # (PyTorch's CUDA kernel: in float32)
        return getattr(xp, ufunc_name)(a, b, out=out)

    kernel.ufunc_name = None  # eager mode calls the kernel, with its check
    return kernel


# `may_fail`: an integer division by zero raises (PyTorch's error) on the CPU; never fused,
# and ordered before in-place updates so that a failed step changes nothing. Two bools are
# refused (PyTorch has no bool kernel of them).
floordiv = binary(
    "floordiv", np.floor_divide, tags={"nondiff"}, lowering=Lowering(), may_fail=True,
    kernel=_integer_division_kernel("floordiv", "floor_divide"), bools=False,
)  # fmt: skip
mod = binary(
    "mod", np.remainder, vjp=lambda ct, z, a, b: (ct, -ct * apply("floordiv", a, b)),
    lowering=Lowering(), may_fail=True, kernel=_integer_division_kernel("mod", "remainder"),
    bools=False,
)  # fmt: skip
# fmod: C's fmod on float loops (exact, as NumPy's); integer loops run kernel by kernel, and
# a zero integer divisor raises on the CPU as PyTorch's (NumPy warns; C's % is undefined)
fmod = binary(
    "fmod", np.fmod, vjp=lambda ct, z, a, b: (ct, -ct * trunc(a / b)),
    lowering=Lowering(cuda=c_libm("fmod")), may_fail=True,
    kernel=_integer_division_kernel("fmod", "fmod"), bools=False,
)  # fmt: skip
copysign = binary(
    "copysign", np.copysign, vjp=_copysign_vjp, lowering=Lowering(exact=True, cuda=_c_copysign)
)
# logaddexp: NumPy's (max + log1p(exp(-|a - b|)); equal infinities give that infinity). The
# gradient is PyTorch's, ct / (1 + exp(b - a)) step by step (each rounded to the dtype, as its
# half-precision gradients are): NaN where a - b is (a NaN, equal infinities)
logaddexp = binary(
    "logaddexp", np.logaddexp, lowering=Lowering(),
    vjp=lambda ct, z, a, b: (ct / (1 + apply("exp", b - a)), ct / (1 + apply("exp", a - b))),
)  # fmt: skip


def _logit(xp, x, out=None, *, eps):
    """log(p / (1 - p)), p clamped to [eps, 1 - eps] where eps >= 0 (NaN stays NaN)."""
    if eps >= 0 and x.dtype in (np.dtype(np.float16), dt.bfloat16):
        # bounds in x's dtype, as PyTorch's: eps and 1 - eps rounded there (clip would
        # give bfloat16 float32 bounds and result)
        lo = xp.asarray(eps, x.dtype)
        hi = xp.subtract(xp.asarray(1, x.dtype), lo)
        x = xp.where(x < lo, lo, xp.where(x > hi, hi, x)).astype(x.dtype, copy=False)
    elif eps >= 0:
        x = xp.clip(x, eps, 1 - eps)
    return xp.log(xp.divide(x, xp.subtract(1, x, dtype=x.dtype)), out=out)


def _logit_vjp(ct, y, x, *, eps):
    # PyTorch's: ct / (p (1 - p)) (±inf at 0 and 1); outside [eps, 1 - eps] 0 (the clamp's),
    # and without eps NaN outside [0, 1]
    width = x * (1 - x)
    zero = apply("equal", width, scalar(0, width))
    slope = apply("where", zero, ct * np.inf, ct / apply("where", zero, scalar(1, width), width))
    if eps >= 0:
        outside = apply("logical_or", x < eps, x > 1 - eps)
        return (apply("where", outside, scalar(0, slope), slope),)
    outside = apply("logical_or", x < 0, x > 1)
    return (apply("where", outside, scalar(np.nan, slope), slope),)


# logit(p, eps): eps < 0 is PyTorch's eps=None (no clamp). Half precision step by step, each
# ufunc rounding, as PyTorch's vectorized kernel of these dtypes computes it.
logit = defop(
    "logit", same_shape, lambda x, eps: ufunc_dtype(np.log, x), _logit,
    vjp=_logit_vjp, tags={"elementwise"},
    lowering=Lowering(not_lowered="three ufuncs and a clamp by an attr: runs kernel by kernel"),
)  # fmt: skip
