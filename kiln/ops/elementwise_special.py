"""PyTorch's special functions as elementwise ops (`lgamma`, `digamma`, `polygamma`,
`erfinv`, `i0`, `i1`, `i0e`, `ndtr`, `zeta`, `gammainc`, the Bessel functions, the orthogonal
polynomials...), computed by SciPy's `scipy.special` (CuPy's `cupyx.scipy.special` on a GPU;
a function CuPy lacks raises DeviceError there), with PyTorch's derivatives. Floats keep their
dtype (float16 through float32, rounded once, as SciPy has no float16 loop; float32 through
SciPy's float32 loops, which compute in double and round once); the frontend gives integers
the default float first. The functions PyTorch does not differentiate (the Bessel functions,
`airy_ai`, the polynomials) are "nondiff" ops, which the frontend ends with `stop_gradient`:
their results do not require grad, as PyTorch's."""

from __future__ import annotations

import numpy as np
import scipy.special

from .. import dtypes as dt
from .. import shapes as sh
from ..errors import ArgumentError, DeviceError, MissingDerivativeError, node_error
from ..graph.core import Symbol, user_site
from .core import apply, defop, in_float32, same_shape, scalar, ufunc_dtype
from .elementwise import special, unary
from .lowering import Lowering, c_cast, c_fn


def _half_order(ct, e, c):
    """`ct * e * c` (c a number): for float16 and bfloat16 in PyTorch's order, `(c * e) * ct`,
    each step rounded (c a float32 there); kiln's own `(ct * e) * c` for other dtypes."""
    if e.dtype in (np.dtype(np.float16), dt.bfloat16):
        return e * float(c) * ct  # NOTE: a Python float: kiln rounds a NumPy one to e's dtype
    return ct * e * scalar(c, e)


def _kernel(name: str, op: str | None = None):
    """The kernel of op `op` calling (cupyx.)scipy.special's `name`, float16 through float32.
    Where SciPy's value differs from PyTorch's, kiln gives PyTorch's (`_EDGES`): gammaln(-inf)
    +inf (SciPy: -inf), erfinv(-0.0) -0.0 (SciPy: 0.0), polygamma(1, -inf) NaN (SciPy:
    inf), airy_ai of a large finite x 0 (SciPy: NaN from about 1e9 on)."""

    def kernel(xp, x, out=None, **attrs):
        edge = _EDGES.get(name)
        if edge is not None and x.dtype.kind == "f":
            r = edge(xp, x, kernel_raw(xp, x, None, **attrs), **attrs)
            if out is None:
                return r
            out[...] = r
            return out
        return kernel_raw(xp, x, out, **attrs)

    def kernel_raw(xp, x, out=None, **attrs):
        fn = _function(xp, name, op)
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


def _polygamma_edge(xp, x, r, *, n):
    return xp.where(xp.isneginf(x), xp.asarray(np.nan, r.dtype), r) if n == 1 else r


_EDGES = {  # kernel name: (xp, x, SciPy's result, **attrs) -> PyTorch's result
    "gammaln": lambda xp, x, r: xp.where(xp.isneginf(x), xp.asarray(np.inf, r.dtype), r),
    "erfinv": lambda xp, x, r: xp.where(x == 0, x, r),
    "polygamma": _polygamma_edge,
    "airy_ai": lambda xp, x, r: xp.where(xp.isfinite(x) & (x > 200), xp.zeros((), r.dtype), r),
}


def _function(xp, name, op=None):
    """(cupyx.)scipy.special's `name` (`airy_ai`: the first of `airy`'s four results), for
    op `op`; DeviceError where CuPy has no such kernel, rather than a wrong value."""
    module = special(xp)
    own = "airy" if name == "airy_ai" else name
    fn = getattr(module, own, None)
    if fn is None:
        raise DeviceError(
            f"{op or name} has no GPU kernel: {module.__name__} has no {own}; compute it on "
            "the CPU (`x.cpu()`)"
        )
    return (lambda x: fn(x)[0]) if name == "airy_ai" else fn


def _float_dtype(ufunc):
    return lambda x, **_: x if dt.is_float(x) else ufunc_dtype(ufunc, x)


def _cuda(name):
    """The CUDA libm function `name` (float and double forms), for floats."""

    def rule(k, xs, dtypes, out, attrs):
        return f"{c_fn(name, out)}({c_cast(xs[0], dtypes[0], out)})" if out.kind == "f" else None

    return rule


_NO_SCALAR_FORM = "no scalar form in numba or CUDA's libm: SciPy's (CuPy's) whole-array kernel"


def _op(name, scipy_name, vjp, cuda=None, tags=()):
    lowering = (Lowering(transcendental=True, cuda=cuda) if cuda is not None
                else Lowering(not_lowered=_NO_SCALAR_FORM))  # fmt: skip
    ufunc = getattr(scipy.special, scipy_name, scipy.special.j0)  # airy_ai: j0's dtype rule
    return unary(
        name, ufunc, impl=_kernel(scipy_name, name), vjp=vjp, dtype_rule=_float_dtype(ufunc),
        lowering=lowering, tags=tags,
    )  # fmt: skip


# lgamma has CUDA's libm form in fused kernels (checked by tests/test_cuda.py's host build of
# the generated kernels); the others run as CuPy's whole-array kernels.
# d lgamma = digamma; d digamma = polygamma(1); d erfinv(x) = sqrt(pi)/2 exp(erfinv(x)^2);
# d i0 = i1; d i1 = i0 - i1 / x (1/2 at 0)
lgamma = _op("lgamma", "gammaln", lambda ct, y, x: (ct * apply("digamma", x),), _cuda("lgamma"))
digamma = _op("digamma", "digamma", lambda ct, y, x: (ct * apply("polygamma", x, n=1),))
erfinv = _op(
    "erfinv", "erfinv",
    lambda ct, y, x: (_half_order(ct, apply("exp", y * y), np.sqrt(np.pi) / 2),),
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


# -- more of torch.special: exponentially scaled Bessel functions, the normal distribution -----


def _sign(x):
    return apply("sign", x)


def _nonzero(x):
    """x with its zeros replaced by 1 (a divisor where a `where` picks another value at 0)."""
    return apply("where", apply("equal", x, scalar(0, x)), scalar(1, x), x)


# d i0e = i1e(x) - sgn(x) i0e(x); d i1e = i0e(x) - i1e(x) (sgn(x) + 1/x), 1/2 at 0;
# d ndtr = exp(-x^2/2) / sqrt(2 pi); d ndtri = sqrt(2 pi) exp(ndtri(x)^2 / 2);
# d log_ndtr = exp(-x^2/2 - log_ndtr(x)) / sqrt(2 pi); d erfcx = 2 x erfcx(x) - 2 / sqrt(pi);
# d erfc = -2 / sqrt(pi) exp(-x^2);
# d entr = -(1 + log x) (PyTorch's: -inf at 0, NaN below)
i0e = _op("i0e", "i0e", lambda ct, y, x: (ct * (apply("i1e", x) - _sign(x) * y),))


def _i1e_vjp(ct, y, x):
    zero = apply("equal", x, scalar(0, x))
    slope = apply("i0e", x) - y * (_sign(x) + apply("div", scalar(1, x), _nonzero(x)))
    return (ct * apply("where", zero, scalar(0.5, x), slope),)


i1e = _op("i1e", "i1e", _i1e_vjp)
_RSQRT_2PI = 1 / np.sqrt(2 * np.pi)
ndtr = _op(
    "ndtr", "ndtr",
    lambda ct, y, x: (ct * apply("exp", x * x * scalar(-0.5, x)) * scalar(_RSQRT_2PI, x),),
)  # fmt: skip
ndtri = _op(
    "ndtri", "ndtri",
    lambda ct, y, x: (ct * apply("exp", y * y * scalar(0.5, y)) * scalar(np.sqrt(2 * np.pi), y),),
)  # fmt: skip
log_ndtr = _op(
    "log_ndtr", "log_ndtr",
    lambda ct, y, x: (
        ct * apply("exp", apply("neg", y + x * x * scalar(0.5, x))) * scalar(_RSQRT_2PI, x),
    ),
)  # fmt: skip
erfcx = _op(
    "erfcx", "erfcx",
    lambda ct, y, x: (ct * (scalar(2, x) * x * y - scalar(2 / np.sqrt(np.pi), x)),),
)  # fmt: skip
erfc = _op(
    "erfc", "erfc",
    lambda ct, y, x: (_half_order(ct, apply("exp", apply("neg", x * x)), -2 / np.sqrt(np.pi)),),
)  # fmt: skip


def _entr_kernel():
    """entr's kernel: SciPy's, but for float16 and bfloat16 PyTorch's CPU kernel's two
    roundings, `-x * log(x)` with `log(x)` rounded to the dtype first (0 at 0, -inf below,
    NaN kept)."""
    exact = in_float32(_kernel("entr"))

    def kernel(xp, x, out=None):
        dtype = x.dtype
        if dtype not in (np.dtype(np.float16), dt.bfloat16):
            return exact(xp, x, out=out)
        w = x.astype(np.float32)
        with np.errstate(all="ignore"):
            product = -w * xp.log(w).astype(dtype).astype(np.float32)
        r = xp.where(w > 0, product, xp.where(w == 0, 0.0, -np.inf).astype(np.float32))
        r = xp.where(xp.isnan(w), w, r).astype(dtype)
        if out is None:
            return r
        out[...] = r
        return out

    kernel.__name__ = "entr"
    return kernel


entr = defop(
    "entr", same_shape, _float_dtype(scipy.special.entr), _entr_kernel(),
    vjp=lambda ct, y, x: (ct * apply("neg", scalar(1, x) + apply("log", x)),),
    tags={"elementwise"}, lowering=Lowering(not_lowered=_NO_SCALAR_FORM),
)  # fmt: skip

# -- PyTorch's undifferentiated functions: the Bessel functions and airy_ai ---------------------
# (i0 and i1 as modified_bessel_i0/i1 are the ops above, ended by stop_gradient)

bessel_j0 = _op("bessel_j0", "j0", None, tags={"nondiff"})
bessel_j1 = _op("bessel_j1", "j1", None, tags={"nondiff"})
bessel_y0 = _op("bessel_y0", "y0", None, tags={"nondiff"})
bessel_y1 = _op("bessel_y1", "y1", None, tags={"nondiff"})
modified_bessel_k0 = _op("modified_bessel_k0", "k0", None, tags={"nondiff"})
modified_bessel_k1 = _op("modified_bessel_k1", "k1", None, tags={"nondiff"})
scaled_modified_bessel_k0 = _op("scaled_modified_bessel_k0", "k0e", None, tags={"nondiff"})
scaled_modified_bessel_k1 = _op("scaled_modified_bessel_k1", "k1e", None, tags={"nondiff"})
airy_ai = _op("airy_ai", "airy_ai", None, tags={"nondiff"})


def _spherical_j0(xp, x, out=None):
    """sin(x) / x: 1 at 0, 0 at ±inf (PyTorch's), in x's dtype (float16 through float32)."""
    wide = x.astype(np.float32) if x.dtype == np.float16 else x
    with np.errstate(all="ignore"):
        ratio = xp.sin(wide) / xp.where(wide == 0, 1, wide).astype(wide.dtype)
    r = xp.where(wide == 0, 1, xp.where(xp.isinf(wide), 0, ratio)).astype(x.dtype)
    if out is None:
        return r
    out[...] = r
    return out


spherical_bessel_j0 = unary(
    "spherical_bessel_j0", np.sin, impl=_spherical_j0, dtype_rule=_float_dtype(np.sin),
    lowering=Lowering(not_lowered="no scalar form yet: NumPy's (CuPy's) whole-array kernel"),
    tags={"nondiff"},
)  # fmt: skip

# -- two-input functions: zeta(x, q), gammainc(a, x), gammaincc(a, x) ------------------------


def _binary_dtype(a, b):
    return dt.to_float(dt.promote(a, b))


def _binary_kernel(name: str):
    """(cupyx.)scipy.special's two-input `name` in the operands' (equal) float dtype."""

    def kernel(xp, a, b, out=None):
        fn = _function(xp, name)
        if a.dtype == np.float16:
            r = fn(a.astype(np.float32), b.astype(np.float32)).astype(np.float16)
        else:
            r = fn(a, b).astype(_binary_dtype(a.dtype, b.dtype), copy=False)
        if out is None:
            return r
        out[...] = r
        return out

    kernel.__name__ = name
    return kernel


def _no_derivative(op: str, which: str, y):
    """PyTorch's refusal of a derivative it does not define, at backward (or kn.grad)."""
    site = y.node.site if isinstance(y, Symbol) else user_site()
    return node_error(
        MissingDerivativeError,
        f"the derivative of {op} with respect to its {which} is not implemented (PyTorch "
        "defines none): take the gradient with respect to the other input only",
        op=op, site=site,
    )  # fmt: skip


def _zeta_vjp(ct, y, x, q, *, needs):
    """d zeta(x, q) / dq = -x zeta(x + 1, q); none with respect to x (PyTorch's)."""
    if needs[0]:
        raise _no_derivative("zeta", "first input (x)", y)
    one = scalar(1, x)
    return None, apply("neg", ct * x * apply("zeta", x + one, q))


def _gammainc_vjp(sign: float, name: str):
    """d/dx of the regularized incomplete gamma functions: ±x^(a-1) e^-x / Γ(a); none with
    respect to a (PyTorch's)."""

    def vjp(ct, y, a, x, *, needs):
        if needs[0]:
            raise _no_derivative(name, "first input (a)", y)
        one = scalar(1, a)
        log_density = (a - one) * apply("log", x) - x - apply("lgamma", a)
        return None, ct * apply("exp", log_density) * scalar(sign, a)

    return vjp


def _binary_op(name, scipy_name, vjp, kernel=None):
    return defop(
        name, sh.broadcast_shapes, _binary_dtype,
        kernel or in_float32(_binary_kernel(scipy_name)),
        vjp=vjp, tags={"elementwise", "vjp_needs"},
        lowering=Lowering(not_lowered=_NO_SCALAR_FORM),
    )  # fmt: skip


def _xlogy_vjp(log_name: str, pole: float):
    """PyTorch's: dx = ct log(y) (log1p(y)), 0 where x == 0 and y <= 0 (-1), and
    dy = ct x / y (x / (y + 1))."""

    def vjp(ct, z, x, y, *, needs):
        dx = dy = None
        if needs[0]:
            zero = apply("logical_and", apply("equal", x, scalar(0, x)),
                         apply("less_equal", y, scalar(pole, y)))  # fmt: skip
            dx = apply("where", zero, scalar(0, x), apply(log_name, ct, y))
        if needs[1]:
            shifted = y if pole == 0 else y + scalar(1, y)
            dy = apply("div", ct * x, shifted)
        return dx, dy

    return vjp


def _xlog_kernel(name: str, log: str):
    """xlogy's (xlog1py's) kernel: SciPy's, but for float16 and bfloat16 PyTorch's CPU
    kernel's two roundings: `log(y)` (`log1p`) rounded to the dtype, then the product (0
    where x is 0, as SciPy's)."""
    exact = in_float32(_binary_kernel(name))

    def kernel(xp, a, b, out=None):
        dtype = a.dtype
        if dtype not in (np.dtype(np.float16), dt.bfloat16):
            return exact(xp, a, b, out=out)
        x, y = a.astype(np.float32), b.astype(np.float32)
        with np.errstate(all="ignore"):
            rounded = getattr(xp, log)(y).astype(dtype).astype(np.float32)
            r = xp.where(x == 0, _function(xp, name)(x, y), x * rounded).astype(dtype)
        if out is None:
            return r
        out[...] = r
        return out

    kernel.__name__ = name
    return kernel


xlogy = _binary_op("xlogy", "xlogy", _xlogy_vjp("xlogy", 0.0), _xlog_kernel("xlogy", "log"))
xlog1py = _binary_op(
    "xlog1py", "xlog1py", _xlogy_vjp("xlog1py", -1.0), _xlog_kernel("xlog1py", "log1p")
)
zeta = _binary_op("zeta", "zeta", _zeta_vjp)
gammainc = _binary_op("gammainc", "gammainc", _gammainc_vjp(1.0, "gammainc"))
gammaincc = _binary_op("gammaincc", "gammaincc", _gammainc_vjp(-1.0, "gammaincc"))

# -- orthogonal polynomials: P_n(x) of torch.special's families, one op with `kind` ----------

POLYNOMIALS = (
    "chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
    "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
    "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
    "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
    "laguerre_polynomial_l", "legendre_polynomial_p",
)  # fmt: skip


def _first_and_step(family: str, x):
    """P_1(x) and the recurrence P_m = step(m, P_{m-2}, P_{m-1}) of `family`."""
    if family.startswith("chebyshev"):
        first = {"t": x, "u": x + x, "v": x + x - 1, "w": x + x + 1}[family[-1]]
        return first, lambda m, p, q: (x + x) * q - p
    if family == "hermite_polynomial_h":
        return x + x, lambda m, p, q: (x + x) * q - (2 * (m - 1)) * p
    if family == "hermite_polynomial_he":
        return x, lambda m, p, q: x * q - (m - 1) * p
    if family == "laguerre_polynomial_l":
        return 1 - x, lambda m, p, q: ((2 * (m - 1) + (1 - x)) * q - (m - 1) * p) / m
    return x, lambda m, p, q: ((2 * m - 1) * x * q - (m - 1) * p) / m  # legendre_polynomial_p


def _recurrence(xp, family, x, n, need):
    """P_n(x) by the three-term recurrence where `need` (n >= 0), 1 or P_1 elsewhere."""
    first, step = _first_and_step(family, x)
    p, q = xp.ones_like(x), first
    r = xp.where(n == 0, p, first)
    todo = n[need & (n >= 2)]
    for m in range(2, int(todo.max()) + 1 if todo.size else 0):
        p, q = q, step(m, p, q)
        r = xp.where(n >= m, q, r)
    return r


def _trig_chebyshev(xp, letter, y, n, inside, sign):
    """The closed forms PyTorch uses for the Chebyshev polynomials inside (-1, 1) at large n
    (with y = x, or 2x - 1 for the shifted ones): T = cos(n t), U = sin((n+1) t) / sin t,
    V = cos((n+1/2) t) / cos(t/2), W = sin((n+1/2) t) / sin(t/2), t = acos y."""
    t = xp.arccos(xp.where(inside, y, 0))
    if letter == "t":
        return xp.cos(n * t)
    if letter == "u":
        s = xp.sin(t)
        return xp.where(s != 0, xp.sin((n + 1) * t) / s, (n + 1) * xp.cos((n + 1) * t) / y)
    if letter == "v":
        return xp.where(xp.sin(t / 2) != 1, xp.cos((n + 0.5) * t) / xp.cos(t / 2),
                        sign * (2 * n + 1))  # fmt: skip
    return xp.where(xp.cos(t / 2) != 1, xp.sin((n + 0.5) * t) / xp.sin(t / 2),
                    xp.where(y > 0, 2 * n + 1.0, sign))  # fmt: skip


# n above which PyTorch takes the closed form inside (-1, 1), by family
_TRIG_FROM = {"t": 6, "u": 8, "v": 8, "w": 8}
_SHIFTED_TRIG_FROM = {"t": 6, "u": 6, "v": 6, "w": 4}


def _polynomial_values(xp, x, n, kind):
    """P_n(x) in float64 (x, n float64 arrays of one shape), with PyTorch's rules: n is
    truncated to an integer (NaN, or beyond int64, counts as negative), P_n = 0 for n < 0;
    the Chebyshev families take their closed forms inside (-1, 1) at large n and their exact
    values at ±1 (0 and 1 for the shifted ones), Laguerre's is 1 at 0."""
    with np.errstate(all="ignore"):
        valid = xp.isfinite(n) & (xp.abs(n) < 2.0**62)
        n = xp.where(valid, xp.trunc(n), -1.0)
        sign = xp.where(xp.fmod(n, 2) != 0, -1.0, 1.0)
        shifted = kind.startswith("shifted_")
        family = kind[len("shifted_") :] if shifted else kind
        y = x + x - 1 if shifted else x
        fixed = xp.zeros(x.shape, bool)
        value = xp.zeros_like(x)
        if family.startswith("chebyshev"):
            letter = family[-1]
            inside = xp.abs(y) < 1
            big = inside & (n > (_SHIFTED_TRIG_FROM if shifted else _TRIG_FROM)[letter])
            at_one = {"t": 1.0, "u": n + 1, "v": 1.0, "w": 2 * n + 1}[letter]
            at_minus = {"t": sign, "u": sign * (n + 1), "v": sign * (2 * n + 1), "w": sign}
            value = xp.where(big, _trig_chebyshev(xp, letter, y, n, inside, sign), value)
            value = xp.where(y == 1, at_one, xp.where(y == -1, at_minus[letter], value))
            fixed = big | (y == 1) | (y == -1)
        elif family == "laguerre_polynomial_l":
            value, fixed = xp.ones_like(x), x == 0
        elif family == "legendre_polynomial_p":
            value = xp.where(y == 1, 1.0, sign)
            fixed = xp.abs(y) == 1
        need = ~fixed & (n >= 0)
        r = _recurrence(xp, family, y, n.astype(np.int64), need)
        r = xp.where(fixed, value, r)
        return xp.where(n < 0, 0.0, r)


def _polynomial(xp, x, n, out=None, *, kind):
    x, n = xp.broadcast_arrays(x, n)
    r = _polynomial_values(xp, x.astype(np.float64), n.astype(np.float64), kind)
    r = r.astype(_binary_dtype(x.dtype, n.dtype))
    if out is None:
        return r
    out[...] = r
    return out


def _polynomial_shape(x, n, *, kind=None):
    return sh.broadcast_shapes(x, n)


def _polynomial_dtype(x, n, *, kind=None):
    """The operands' float dtype (`kind` None: the rule asked without attrs, by promotion)."""
    if kind is not None and kind not in POLYNOMIALS:
        raise ArgumentError(f"unknown polynomial {kind!r}: one of {', '.join(POLYNOMIALS)}")
    return _binary_dtype(x, n)


polynomial = defop(
    "orthogonal_polynomial", _polynomial_shape, _polynomial_dtype, in_float32(_polynomial),
    tags={"elementwise", "nondiff"},
    lowering=Lowering(not_lowered="a loop of data-dependent length: whole-array kernel"),
)  # fmt: skip
