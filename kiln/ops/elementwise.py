"""Elementwise primitives: unary and binary ufuncs, `where`, `cast`, and a few stable kernels."""

from __future__ import annotations

import numpy as np
import scipy.special

from .. import dtypes as dt
from .. import shapes as sh
from .core import defop, probe_dtype, same_shape, ufunc_dtype


def special(xp):
    """scipy.special for NumPy, cupyx.scipy.special for CuPy."""
    if xp is np:
        return scipy.special
    import cupyx.scipy.special

    return cupyx.scipy.special


def _ufunc_kernel(ufunc_name):
    def kernel(xp, *arrays, out=None):
        return getattr(xp, ufunc_name)(*arrays, out=out)

    return kernel


def unary(name, ufunc, *, impl=None, dtype_rule=None, tags=()):
    """A one-input elementwise op; by default NumPy's `ufunc` is both its kernel and dtype rule."""
    rule = dtype_rule or (lambda x: ufunc_dtype(ufunc, x))
    impl = impl or _ufunc_kernel(ufunc.__name__)
    return defop(name, same_shape, rule, impl, tags={"elementwise", *tags})


def _broadcast2(a, b):
    return sh.broadcast_shapes(a, b)


def binary(name, ufunc, *, tags=()):
    """A two-input broadcasting elementwise op computed by NumPy's (or CuPy's) `ufunc`."""
    return defop(
        name,
        _broadcast2,
        lambda a, b: ufunc_dtype(ufunc, a, b),
        _ufunc_kernel(ufunc.__name__),
        tags={"elementwise", *tags},
    )


# -- unary -----------------------------------------------------------------------------------

neg = unary("neg", np.negative)
abs_ = unary("abs", np.absolute)
exp = unary("exp", np.exp)
log = unary("log", np.log)
log1p = unary("log1p", np.log1p)
expm1 = unary("expm1", np.expm1)
sqrt = unary("sqrt", np.sqrt)
square = unary("square", np.square)
sin = unary("sin", np.sin)
cos = unary("cos", np.cos)
tanh = unary("tanh", np.tanh)
sign = unary("sign", np.sign)
floor = unary("floor", np.floor)
ceil = unary("ceil", np.ceil)
logical_not = unary("logical_not", np.logical_not)
isnan = unary("isnan", np.isnan)
isfinite = unary("isfinite", np.isfinite)


def _rsqrt(xp, x, out=None):
    out = xp.sqrt(x, out=out)
    return xp.reciprocal(out, out=out)


rsqrt = unary("rsqrt", np.sqrt, impl=_rsqrt)


def _as_float(xp, x):
    return x if x.dtype.kind == "f" else x.astype(ufunc_dtype(np.sqrt, x.dtype))


def _sigmoid(xp, x, out=None):
    # exp(-log(1 + exp(-x))): no overflow for large |x| of either sign.
    out = xp.negative(_as_float(xp, x), out=out)
    xp.logaddexp(0, out, out=out)
    xp.negative(out, out=out)
    return xp.exp(out, out=out)


sigmoid = unary("sigmoid", np.sqrt, impl=_sigmoid)


def _softplus(xp, x, out=None, *, beta):
    # log(1 + exp(beta x)) / beta through logaddexp: stable without a threshold.
    out = xp.multiply(_as_float(xp, x), beta, out=out)
    xp.logaddexp(0, out, out=out)
    return xp.divide(out, beta, out=out)


softplus = defop(
    "softplus", same_shape, lambda x, beta: ufunc_dtype(np.sqrt, x), _softplus,
    tags={"elementwise"},
)  # fmt: skip


def _erf(xp, x, out=None):
    return special(xp).erf(x, out=out)


erf = unary("erf", scipy.special.erf, impl=_erf)


def _round(xp, x, out=None):
    return xp.round(x, out=out)


round_ = unary("round", np.round, impl=_round, dtype_rule=lambda x: probe_dtype(np.round, x))


def _cast(xp, x, out=None, *, dtype):
    if out is None:
        return x.astype(dtype)
    xp.copyto(out, x, casting="unsafe")
    return out


cast = defop("cast", same_shape, lambda x, dtype: dt.as_dtype(dtype), _cast, tags={"elementwise"})

# -- binary ----------------------------------------------------------------------------------

add = binary("add", np.add, tags={"commutative"})
sub = binary("sub", np.subtract)
mul = binary("mul", np.multiply, tags={"commutative"})
div = binary("div", np.true_divide)
pow_ = binary("pow", np.power)
floordiv = binary("floordiv", np.floor_divide)
mod = binary("mod", np.remainder)
maximum = binary("maximum", np.maximum, tags={"commutative"})
minimum = binary("minimum", np.minimum, tags={"commutative"})
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
    xp.copyto(out, a, where=cond)
    return out


where = defop(
    "where",
    lambda c, a, b: sh.broadcast_shapes(c, a, b),
    lambda c, a, b: dt.promote(a, b),
    _where,
    tags={"elementwise"},
)
