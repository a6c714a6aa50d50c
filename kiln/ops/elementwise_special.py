"""PyTorch's special functions as elementwise ops (`lgamma`, `digamma`, `polygamma`,
`erfinv`, `i0`, `i1`), computed by SciPy's `scipy.special` (CuPy's `cupyx.scipy.special` on a
GPU), with PyTorch's derivatives. Floats keep their dtype (float16 through float32, rounded
once, as SciPy has no float16 loop); the frontend gives integers the default float first."""

from __future__ import annotations

import numpy as np
import scipy.special

from .. import dtypes as dt
from .core import apply, defop, in_float32, same_shape, scalar, ufunc_dtype
from .elementwise import special, unary
from .lowering import Lowering, c_cast, c_fn


def _kernel(name: str):
    """The kernel calling (cupyx.)scipy.special's `name`, float16 through float32. SciPy's
    gammaln(-inf) is -inf; C's lgamma and PyTorch's give +inf (a pole): kiln gives +inf."""

    def kernel(xp, x, out=None, **attrs):
        if name == "gammaln" and x.dtype.kind == "f":
            r = kernel_raw(xp, x, None, **attrs)
            r = xp.where(xp.isneginf(x), xp.asarray(np.inf, r.dtype), r)
            if out is None:
                return r
            out[...] = r
            return out
        return kernel_raw(xp, x, out, **attrs)

    def kernel_raw(xp, x, out=None, **attrs):
        fn = getattr(special(xp), name)
        args = (attrs["n"], x) if "n" in attrs else (x,)
        if x.dtype == np.float16:
            r = fn(*args[:-1], x.astype(np.float32)).astype(np.float16)
        else:
            r = fn(*args)
            if x.dtype.kind == "f":  # x's dtype: SciPy's polygamma gives float32 as float64
                r = r.astype(x.dtype, copy=False)
        if out is None:
            return r
        out[...] = r
        return out

    kernel.__name__ = kernel_raw.__name__ = name
    return kernel


def _float_dtype(ufunc):
    return lambda x, **_: x if dt.is_float(x) else ufunc_dtype(ufunc, x)


def _cuda(name):
    """The CUDA libm function `name` (float and double forms), for floats."""

    def rule(k, xs, dtypes, out, attrs):
        return f"{c_fn(name, out)}({c_cast(xs[0], dtypes[0], out)})" if out.kind == "f" else None

    return rule


_NO_SCALAR_FORM = "no scalar form in numba or CUDA's libm: SciPy's (CuPy's) whole-array kernel"


def _op(name, scipy_name, vjp, cuda=None):
    lowering = (Lowering(transcendental=True, cuda=cuda) if cuda is not None
                else Lowering(not_lowered=_NO_SCALAR_FORM))  # fmt: skip
    return unary(
        name, getattr(scipy.special, scipy_name), impl=_kernel(scipy_name), vjp=vjp,
        dtype_rule=_float_dtype(getattr(scipy.special, scipy_name)), lowering=lowering,
    )  # fmt: skip


# lgamma has CUDA's libm form in fused kernels (checked by tests/test_cuda.py's host build of
# the generated kernels); the others run as CuPy's whole-array kernels.
# d lgamma = digamma; d digamma = polygamma(1); d erfinv(x) = sqrt(pi)/2 exp(erfinv(x)^2);
# d i0 = i1; d i1 = i0 - i1 / x (1/2 at 0)
lgamma = _op("lgamma", "gammaln", lambda ct, y, x: (ct * apply("digamma", x),), _cuda("lgamma"))
digamma = _op("digamma", "digamma", lambda ct, y, x: (ct * apply("polygamma", x, n=1),))
erfinv = _op(
    "erfinv", "erfinv",
    lambda ct, y, x: (ct * apply("exp", y * y) * scalar(np.sqrt(np.pi) / 2, y),),
)  # fmt: skip
i0 = _op("i0", "i0", lambda ct, y, x: (ct * apply("i1", x),))


def _i1_vjp(ct, y, x):
    zero = apply("equal", x, scalar(0, x))
    ratio = apply("div", y, apply("where", zero, scalar(1, x), x))
    slope = apply("where", zero, scalar(0.5, x), apply("i0", x) - ratio)
    return (ct * slope,)


i1 = _op("i1", "i1", _i1_vjp)


def _polygamma_shape(x, *, n):
    return same_shape(x)


polygamma = defop(
    "polygamma", _polygamma_shape, _float_dtype(scipy.special.digamma),
    in_float32(_kernel("polygamma")),
    vjp=lambda ct, y, x, *, n: (ct * apply("polygamma", x, n=n + 1),),
    tags={"elementwise"}, lowering=Lowering(not_lowered=_NO_SCALAR_FORM),
)  # fmt: skip
