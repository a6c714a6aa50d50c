"""Elementwise primitives: unary and binary ufuncs, `where`, `cast`, and a few stable kernels."""

from __future__ import annotations

import numpy as np
import scipy.special

from .. import dtypes as dt
from .. import shapes as sh
from .core import apply, defop, probe_dtype, same_shape, scalar, ufunc_dtype


def special(xp):
    """scipy.special for NumPy, cupyx.scipy.special for CuPy."""
    if xp is np:
        return scipy.special
    import cupyx.scipy.special

    return cupyx.scipy.special


def _ufunc_kernel(ufunc_name, own_rule: bool = True):
    """The kernel calling xp's ufunc `ufunc_name`. `own_rule`: the op's dtype rule is that
    ufunc's type resolution, so eager mode may call the ufunc itself (`kernel.ufunc_name`)."""

    def kernel(xp, *arrays, out=None):
        return getattr(xp, ufunc_name)(*arrays, out=out)

    kernel.ufunc_name = ufunc_name if own_rule else None
    return kernel


def unary(name, ufunc, *, impl=None, dtype_rule=None, vjp=None, tags=()):
    """A one-input elementwise op; by default NumPy's `ufunc` is both its kernel and dtype rule."""
    rule = dtype_rule or (lambda x: ufunc_dtype(ufunc, x))
    impl = impl or _ufunc_kernel(ufunc.__name__, own_rule=dtype_rule is None)
    return defop(name, same_shape, rule, impl, vjp=vjp, tags={"elementwise", *tags})


def _broadcast2(a, b):
    return sh.broadcast_shapes(a, b)


def binary(name, ufunc, *, vjp=None, tags=()):
    """A two-input broadcasting elementwise op computed by NumPy's (or CuPy's) `ufunc`.

    Its vjp returns cotangents of the output's shape: autodiff sums them back to each input.
    """
    return defop(
        name,
        _broadcast2,
        lambda a, b: ufunc_dtype(ufunc, a, b),
        _ufunc_kernel(ufunc.__name__),
        vjp=vjp,
        tags={"elementwise", *tags},
    )


# -- unary -----------------------------------------------------------------------------------

neg = unary("neg", np.negative, vjp=lambda ct, y, x: (-ct,))
abs_ = unary("abs", np.absolute, vjp=lambda ct, y, x: (ct * apply("sign", x),))
exp = unary("exp", np.exp, vjp=lambda ct, y, x: (ct * y,))
log = unary("log", np.log, vjp=lambda ct, y, x: (ct / x,))
log1p = unary("log1p", np.log1p, vjp=lambda ct, y, x: (ct / (x + 1),))
expm1 = unary("expm1", np.expm1, vjp=lambda ct, y, x: (ct * (y + 1),))
sqrt = unary("sqrt", np.sqrt, vjp=lambda ct, y, x: (ct / (y * 2),))
square = unary("square", np.square, vjp=lambda ct, y, x: (ct * x * 2,))
sin = unary("sin", np.sin, vjp=lambda ct, y, x: (ct * apply("cos", x),))
cos = unary("cos", np.cos, vjp=lambda ct, y, x: (-ct * apply("sin", x),))
tanh = unary("tanh", np.tanh, vjp=lambda ct, y, x: (ct * (1 - y * y),))
sign = unary("sign", np.sign, tags={"nondiff"})
floor = unary("floor", np.floor, tags={"nondiff"})
ceil = unary("ceil", np.ceil, tags={"nondiff"})
logical_not = unary("logical_not", np.logical_not)
isnan = unary("isnan", np.isnan)
isfinite = unary("isfinite", np.isfinite)


def _rsqrt(xp, x, out=None):
    out = xp.asarray(xp.sqrt(x, out=out))  # 0-d: ufuncs return scalars
    return xp.reciprocal(out, out=out)


rsqrt = unary("rsqrt", np.sqrt, impl=_rsqrt, vjp=lambda ct, y, x: (ct * y * y * y * -0.5,))


def _as_float(xp, x):
    return x if x.dtype.kind == "f" else x.astype(ufunc_dtype(np.sqrt, x.dtype))


def _sigmoid(xp, x, out=None):
    # exp(-log(1 + exp(-x))): no overflow for large |x| of either sign.
    out = xp.asarray(xp.negative(_as_float(xp, x), out=out))  # 0-d: ufuncs return scalars
    xp.logaddexp(0, out, out=out)
    xp.negative(out, out=out)
    return xp.exp(out, out=out)


sigmoid = unary("sigmoid", np.sqrt, impl=_sigmoid, vjp=lambda ct, y, x: (ct * y * (1 - y),))


def _relu_dtype(x):
    return ufunc_dtype(np.maximum, x, int)  # 0 as NumPy 2's weak scalar: bools become int64


def _relu(xp, x, out=None):
    # NumPy's maximum(x, 0), NaN included, whatever xp's rules for scalars (CuPy 13: NumPy 1's)
    dtype = _relu_dtype(x.dtype)
    return xp.maximum(x if x.dtype == dtype else x.astype(dtype), dtype.type(0), out=out)


def _masked(ct, mask):
    """`ct` where `mask` holds, else 0, as a product: NumPy's `where` on a mask without long
    runs (a ReLU's) takes ~20x the time of the comparison, cast and product (f32[128,512])."""
    return ct * apply("cast", mask, dtype=ct.dtype)


def _relu_vjp(ct, y, x):
    # As PyTorch: the cotangent passes only where x > 0 (not at 0, not at NaN), which is where
    # y > 0: reading y, not x, lets x die in the forward pass.
    return (_masked(ct, y > 0),)


relu = unary("relu", np.maximum, impl=_relu, dtype_rule=_relu_dtype, vjp=_relu_vjp)


def _softplus(xp, x, out=None, *, beta):
    # log(1 + exp(beta x)) / beta through logaddexp: stable without a threshold.
    out = xp.asarray(xp.multiply(_as_float(xp, x), beta, out=out))  # 0-d: ufuncs return scalars
    xp.logaddexp(0, out, out=out)
    return xp.divide(out, beta, out=out)


softplus = defop(
    "softplus", same_shape, lambda x, beta: ufunc_dtype(np.sqrt, x), _softplus,
    vjp=lambda ct, y, x, beta: (ct * apply("sigmoid", x * beta),), tags={"elementwise"},
)  # fmt: skip


def _erf(xp, x, out=None):
    return special(xp).erf(x, out=out)


def _erf_vjp(ct, y, x):
    return (ct * apply("exp", -(x * x)) * (2 / np.sqrt(np.pi)),)


erf = unary("erf", scipy.special.erf, impl=_erf, vjp=_erf_vjp)


def _round(xp, x, out=None):
    return xp.round(x, out=out)


round_ = unary(
    "round", np.round, impl=_round, dtype_rule=lambda x: probe_dtype(np.round, x),
    tags={"nondiff"},
)  # fmt: skip


def _cast(xp, x, out=None, *, dtype):
    if out is None:
        return x.astype(dtype)
    xp.copyto(out, x, casting="unsafe")
    return out


def _cast_vjp(ct, y, x, *, dtype):
    # Only float-to-float casts carry a gradient; autodiff skips integer and bool values.
    return (apply("cast", ct, dtype=x.dtype) if dt.is_float(x.dtype) else None,)


cast = defop(
    "cast", same_shape, lambda x, dtype: dt.as_dtype(dtype), _cast, vjp=_cast_vjp,
    tags={"elementwise"},
)  # fmt: skip

# -- binary ----------------------------------------------------------------------------------


def _pow_vjp(ct, z, a, b):
    # As PyTorch: d/da is 0 where b == 0 (not 0 * inf), d/db is 0 where a == 0 and b >= 0.
    zero = scalar(0, z)
    da = apply("where", apply("equal", b, zero), zero, b * a ** (b - 1))
    db_mask = apply("logical_and", apply("equal", a, zero), apply("greater_equal", b, zero))
    db = apply("where", db_mask, zero, z * apply("log", a))
    return ct * da, ct * db


def _select_vjp(wins):
    """maximum/minimum: the winner takes the cotangent; ties share it equally (as PyTorch)."""

    def vjp(ct, z, a, b):
        share = apply("cast", apply(wins, a, b), dtype=ct.dtype)
        share = share + apply("cast", apply("equal", a, b), dtype=ct.dtype) * 0.5
        return ct * share, ct * (1 - share)

    return vjp


add = binary("add", np.add, vjp=lambda ct, z, a, b: (ct, ct), tags={"commutative"})
sub = binary("sub", np.subtract, vjp=lambda ct, z, a, b: (ct, -ct))
mul = binary("mul", np.multiply, vjp=lambda ct, z, a, b: (ct * b, ct * a), tags={"commutative"})
div = binary("div", np.true_divide, vjp=lambda ct, z, a, b: (ct / b, -ct * z / b))
pow_ = binary("pow", np.power, vjp=_pow_vjp)
floordiv = binary("floordiv", np.floor_divide, tags={"nondiff"})
mod = binary("mod", np.remainder, vjp=lambda ct, z, a, b: (ct, -ct * apply("floordiv", a, b)))
maximum = binary("maximum", np.maximum, vjp=_select_vjp("greater"), tags={"commutative"})
minimum = binary("minimum", np.minimum, vjp=_select_vjp("less"), tags={"commutative"})
equal = binary("equal", np.equal, tags={"commutative"})
not_equal = binary("not_equal", np.not_equal, tags={"commutative"})
less = binary("less", np.less)
less_equal = binary("less_equal", np.less_equal)
greater = binary("greater", np.greater)
greater_equal = binary("greater_equal", np.greater_equal)
logical_and = binary("logical_and", np.logical_and, tags={"commutative"})
logical_or = binary("logical_or", np.logical_or, tags={"commutative"})

# -- ternary ---------------------------------------------------------------------------------


def _where(xp, cond, a, b, out=None):
    if out is None:
        return xp.where(cond, a, b)
    xp.copyto(out, b)
    xp.copyto(out, a, where=cond if cond.dtype == bool else cond.astype(bool))
    return out


def _where_vjp(ct, z, cond, a, b):
    zero = scalar(0, ct)
    return None, apply("where", cond, ct, zero), apply("where", cond, zero, ct)


where = defop(
    "where",
    lambda c, a, b: sh.broadcast_shapes(c, a, b),
    lambda c, a, b: dt.promote(a, b),
    _where,
    vjp=_where_vjp,
    tags={"elementwise", "no_inplace"},  # its kernel writes `out` before reading `a`
)


def _clip(xp, x, lo, hi, out=None):
    return xp.clip(x, lo, hi, out=out)


def _clip_vjp(ct, y, x, lo, hi, *, needs):
    # As PyTorch's clamp: x takes the cotangent where lo <= x <= hi (bounds included, never at
    # NaN), lo where x < lo < hi, hi where x > hi or hi < lo (then y is hi throughout).
    x_mask = apply("logical_and", x >= lo, x <= hi) if needs[0] else None
    lo_mask = apply("logical_and", x < lo, lo < hi) if needs[1] else None
    hi_mask = apply("logical_or", x > hi, hi < lo) if needs[2] else None
    return tuple(None if m is None else _masked(ct, m) for m in (x_mask, lo_mask, hi_mask))


clip = defop(
    "clip",
    lambda x, lo, hi: sh.broadcast_shapes(x, lo, hi),
    lambda x, lo, hi: probe_dtype(np.clip, x, lo, hi),
    _clip,
    vjp=_clip_vjp,
    tags={"elementwise", "vjp_needs"},
)
