"""PyTorch's special functions: `lgamma`, `digamma`, `polygamma`, `erfinv`, `i0`, `xlogy`,
`igamma`, `igammac`, `mvlgamma` (kiln's ops, kiln/ops/elementwise_special.py, and the
composites on them), and `kn.special`: torch.special's functions (`i0e`, `ndtr`, `zeta`, the
Bessel functions, the orthogonal polynomials...) and its names for the functions kiln has
under other names (`gammaln`, `psi`, `expit`...).

The functions PyTorch does not differentiate (the Bessel functions, `airy_ai`, the
polynomials) give results that do not require grad, as PyTorch's; `zeta`, `gammainc` and
`gammaincc` have a derivative with respect to their second input only, and a gradient with
respect to the first raises AutogradError, as PyTorch raises NotImplementedError."""

from __future__ import annotations

import functools
import math
import numbers
import types

from ..errors import ArgumentTypeError, UsageError
from ..graph.opdef import REGISTRY
from ..ops.elementwise_special import POLYNOMIALS
from . import core
from .autodiff import stop_gradient
from .out import takes_out
from .torch_math import refuse_integers

__all__ = [
    "digamma", "erfc", "erfinv", "i0", "igamma", "igammac", "lgamma", "mvlgamma", "polygamma",
    "xlogy",
]  # fmt: skip


def _unary(name: str, doc: str):
    fn = core.unary_function(REGISTRY[name])
    fn.__name__ = fn.__qualname__ = name
    fn.__module__ = __name__
    fn.__doc__ = doc
    return fn


lgamma = _unary(
    "lgamma",
    """log |Γ(x)|, elementwise (PyTorch's `lgamma`, SciPy's `gammaln`).

    >>> import kiln as kn
    >>> kn.lgamma(kn.tensor([1.0, 5.0]))  # log 0! = 0, log 4! = log 24
    tensor([0.0000, 3.1781])
    """,
)
digamma = _unary(
    "digamma",
    """Γ'(x) / Γ(x), elementwise (PyTorch's `digamma`).

    >>> import kiln as kn
    >>> kn.digamma(kn.tensor([1.0]))  # -γ, the Euler-Mascheroni constant
    tensor([-0.5772])
    """,
)
erfinv = _unary(
    "erfinv",
    """The inverse of `erf` on (-1, 1), elementwise (±inf at ±1).

    >>> import kiln as kn
    >>> kn.erfinv(kn.erf(kn.tensor([0.5])))
    tensor([0.5000])
    """,
)
i0 = _unary(
    "i0",
    """The modified Bessel function of the first kind of order 0, elementwise.

    >>> import kiln as kn
    >>> kn.i0(kn.tensor([0.0, 1.0]))
    tensor([1.0000, 1.2661])
    """,
)
_i1 = _unary("i1", "The modified Bessel function of the first kind of order 1, elementwise.")


@takes_out
def polygamma(n: int, input):  # noqa: A002
    """The `n`-th derivative of `digamma`, elementwise (PyTorch's `polygamma(n, input)`).
    At its poles (0 and the negative integers) and at +inf it gives SciPy's values (±inf, 0),
    where PyTorch's are large finite numbers or NaN; trigamma(-inf) is NaN, as PyTorch's.

    >>> import kiln as kn
    >>> kn.polygamma(1, kn.tensor([1.0]))  # π² / 6
    tensor([1.6449])
    """
    n = int(n)
    if n < 0:  # PyTorch's RuntimeError
        raise UsageError(f"polygamma(n, x) does not support negative n, got {n}")
    if n == 0:
        return digamma(input)
    (x,) = core.promote(REGISTRY["digamma"], input)
    return core.call("polygamma", x, n=n)


def polygamma_method(self, n: int):
    """`x.polygamma(n)`: PyTorch's method takes n after the tensor."""
    return polygamma(n, self)


# -- torch.special's one-input functions -------------------------------------------------------

i0e = _unary(
    "i0e",
    """The exponentially scaled modified Bessel function `exp(-|x|) i0(x)`, elementwise.

    >>> import kiln as kn
    >>> kn.special.i0e(kn.tensor([0.0, 1.0]))
    tensor([1.0000, 0.4658])
    """,
)
i1e = _unary(
    "i1e",
    """The exponentially scaled modified Bessel function `exp(-|x|) i1(x)`, elementwise.

    >>> import kiln as kn
    >>> kn.special.i1e(kn.tensor([0.0, 1.0]))
    tensor([0.0000, 0.2079])
    """,
)
ndtr = _unary(
    "ndtr",
    """The standard normal distribution function `P(Z <= x)`, elementwise.

    >>> import kiln as kn
    >>> kn.special.ndtr(kn.tensor([0.0, 1.0]))
    tensor([0.5000, 0.8413])
    """,
)
ndtri = _unary(
    "ndtri",
    """The inverse of `ndtr` on (0, 1) (±inf at 1 and 0, NaN outside [0, 1]), elementwise.

    >>> import kiln as kn
    >>> kn.special.ndtri(kn.tensor([0.5, 0.975]))
    tensor([0.0000, 1.9600])
    """,
)
log_ndtr = _unary(
    "log_ndtr",
    """`log(ndtr(x))`, accurate far into the left tail, elementwise.

    >>> import kiln as kn
    >>> kn.special.log_ndtr(kn.tensor([0.0, -10.0]))
    tensor([ -0.6931, -53.2313])
    """,
)
erfcx = _unary(
    "erfcx",
    """The scaled complementary error function `exp(x^2) erfc(x)`, elementwise.

    >>> import kiln as kn
    >>> kn.special.erfcx(kn.tensor([0.0, 10.0]))
    tensor([1.0000, 0.0561])
    """,
)
erfc = _unary(
    "erfc",
    """The complementary error function `1 - erf(x)`, accurate in the tail where that
    difference cancels, elementwise.

    >>> import kiln as kn
    >>> kn.erfc(kn.tensor([0.0, 5.0]))  # 1 - erf(5) rounds to 1.5e-12 in float32's steps
    tensor([1.0000e+00, 1.5375e-12])
    """,
)
entr = _unary(
    "entr",
    """`-x log(x)`: 0 at 0, -inf below 0, elementwise.

    >>> import kiln as kn
    >>> kn.special.entr(kn.tensor([0.0, 0.5, -1.0]))
    tensor([0.0000, 0.3466,   -inf])
    """,
)


def _undifferentiated(op: str, name: str, doc: str):
    """torch.special's `name`, computed by `op`, whose result does not require grad (PyTorch
    gives these functions no derivative)."""
    compute = core.unary_function(REGISTRY[op])

    def fn(input):  # noqa: A002
        return stop_gradient(compute(input))

    fn.__name__ = fn.__qualname__ = name
    fn.__module__ = __name__
    fn.__doc__ = doc
    return takes_out(fn)


bessel_j0 = _undifferentiated(
    "bessel_j0", "bessel_j0",
    """The Bessel function of the first kind of order 0, elementwise (no gradient).

    >>> import kiln as kn
    >>> kn.special.bessel_j0(kn.tensor([0.0, 1.0]))
    tensor([1.0000, 0.7652])
    """,
)  # fmt: skip
bessel_j1 = _undifferentiated(
    "bessel_j1", "bessel_j1",
    """The Bessel function of the first kind of order 1, elementwise (no gradient).

    >>> import kiln as kn
    >>> kn.special.bessel_j1(kn.tensor([0.0, 1.0]))
    tensor([0.0000, 0.4401])
    """,
)  # fmt: skip
bessel_y0 = _undifferentiated(
    "bessel_y0", "bessel_y0",
    """The Bessel function of the second kind of order 0, elementwise (no gradient).

    >>> import kiln as kn
    >>> kn.special.bessel_y0(kn.tensor([0.0, 1.0]))
    tensor([  -inf, 0.0883])
    """,
)  # fmt: skip
bessel_y1 = _undifferentiated(
    "bessel_y1", "bessel_y1",
    """The Bessel function of the second kind of order 1, elementwise (no gradient).

    >>> import kiln as kn
    >>> kn.special.bessel_y1(kn.tensor([1.0]))
    tensor([-0.7812])
    """,
)  # fmt: skip
modified_bessel_i0 = _undifferentiated(
    "i0", "modified_bessel_i0",
    """The modified Bessel function of the first kind of order 0 (`i0` without its gradient).

    >>> import kiln as kn
    >>> kn.special.modified_bessel_i0(kn.tensor([1.0]))
    tensor([1.2661])
    """,
)  # fmt: skip
modified_bessel_i1 = _undifferentiated(
    "i1", "modified_bessel_i1",
    """The modified Bessel function of the first kind of order 1 (`i1` without its gradient).

    >>> import kiln as kn
    >>> kn.special.modified_bessel_i1(kn.tensor([1.0]))
    tensor([0.5652])
    """,
)  # fmt: skip
modified_bessel_k0 = _undifferentiated(
    "modified_bessel_k0", "modified_bessel_k0",
    """The modified Bessel function of the second kind of order 0, elementwise (no gradient).

    >>> import kiln as kn
    >>> kn.special.modified_bessel_k0(kn.tensor([1.0]))
    tensor([0.4210])
    """,
)  # fmt: skip
modified_bessel_k1 = _undifferentiated(
    "modified_bessel_k1", "modified_bessel_k1",
    """The modified Bessel function of the second kind of order 1, elementwise (no gradient).

    >>> import kiln as kn
    >>> kn.special.modified_bessel_k1(kn.tensor([1.0]))
    tensor([0.6019])
    """,
)  # fmt: skip
scaled_modified_bessel_k0 = _undifferentiated(
    "scaled_modified_bessel_k0", "scaled_modified_bessel_k0",
    """`exp(x) k0(x)`, elementwise (no gradient).

    >>> import kiln as kn
    >>> kn.special.scaled_modified_bessel_k0(kn.tensor([1.0]))
    tensor([1.1445])
    """,
)  # fmt: skip
scaled_modified_bessel_k1 = _undifferentiated(
    "scaled_modified_bessel_k1", "scaled_modified_bessel_k1",
    """`exp(x) k1(x)`, elementwise (no gradient).

    >>> import kiln as kn
    >>> kn.special.scaled_modified_bessel_k1(kn.tensor([1.0]))
    tensor([1.6362])
    """,
)  # fmt: skip
spherical_bessel_j0 = _undifferentiated(
    "spherical_bessel_j0", "spherical_bessel_j0",
    """The spherical Bessel function of the first kind of order 0, `sin(x) / x` (1 at 0),
    elementwise (no gradient).

    >>> import kiln as kn
    >>> kn.special.spherical_bessel_j0(kn.tensor([0.0, 1.0]))
    tensor([1.0000, 0.8415])
    """,
)  # fmt: skip
airy_ai = _undifferentiated(
    "airy_ai", "airy_ai",
    """The Airy function Ai, elementwise (no gradient; on the CPU only: CuPy has no Airy
    function, and a GPU tensor raises DeviceError).

    >>> import kiln as kn
    >>> kn.special.airy_ai(kn.tensor([0.0]))
    tensor([0.3550])
    """,
)  # fmt: skip

# -- two inputs -------------------------------------------------------------------------------


def _binary(name: str, doc: str, public: str | None = None):
    fn = core.binary_function(REGISTRY[name])
    fn.__name__ = fn.__qualname__ = public or name
    fn.__module__ = __name__
    fn.__doc__ = doc
    return fn


xlogy = _binary(
    "xlogy",
    """`x * log(y)`, 0 where x is 0 (unless y is NaN), with PyTorch's gradients.

    >>> import kiln as kn
    >>> kn.xlogy(kn.tensor([0.0, 2.0]), kn.tensor([0.0, 1.0]))
    tensor([0., 0.])
    """,
)
xlog1py = _binary(
    "xlog1py",
    """`x * log1p(y)`, 0 where x is 0 (unless y is NaN), with PyTorch's gradients.

    >>> import kiln as kn
    >>> kn.special.xlog1py(kn.tensor([0.0, 2.0]), kn.tensor([-1.0, 0.0]))
    tensor([0., 0.])
    """,
)
zeta = _binary(
    "zeta",
    """The Hurwitz zeta function `sum_k (k + q)^-x` of `input` x and `other` q, elementwise;
    differentiable in q only (PyTorch's).

    >>> import kiln as kn
    >>> kn.special.zeta(kn.tensor([2.0]), kn.tensor([1.0]))  # pi^2 / 6
    tensor([1.6449])
    """,
)
gammainc = _binary(
    "gammainc",
    """The regularized lower incomplete gamma function P(a, x) of `input` a and `other` x,
    elementwise; differentiable in x only (PyTorch's).

    >>> import kiln as kn
    >>> kn.special.gammainc(kn.tensor([1.0]), kn.tensor([1.0]))  # 1 - exp(-1)
    tensor([0.6321])
    """,
)
gammaincc = _binary(
    "gammaincc",
    """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x), elementwise;
    differentiable in x only (PyTorch's).

    >>> import kiln as kn
    >>> kn.special.gammaincc(kn.tensor([1.0]), kn.tensor([1.0]))  # exp(-1)
    tensor([0.3679])
    """,
)
igamma = _binary("gammainc", gammainc.__doc__.replace("special.gammainc", "igamma"), "igamma")
igammac = _binary("gammaincc", gammaincc.__doc__.replace("special.gammaincc", "igammac"),
                  "igammac")  # fmt: skip


def _refusing_integers(fn, kernel: str):
    """`fn`, refusing operands that promote to an integer or bool dtype as PyTorch's
    `kernel` does (NotImplementedError; kiln's op would compute them in float)."""

    @functools.wraps(fn)
    def checked(input, other, *args, **kwargs):  # noqa: A002
        refuse_integers(kernel, input, other)
        return fn(input, other, *args, **kwargs)

    return checked


gammainc, igamma = (_refusing_integers(f, "igamma") for f in (gammainc, igamma))
gammaincc, igammac = (_refusing_integers(f, "igammac") for f in (gammaincc, igammac))


@takes_out
def multigammaln(input, p: int):  # noqa: A002
    """The log of the multivariate gamma function of dimension `p`,
    `p (p - 1) / 4 log(pi) + sum_j lgamma(x - j / 2)` for j in 0..p-1, elementwise.

    >>> import kiln as kn
    >>> kn.special.multigammaln(kn.tensor([2.5]), 3)
    tensor([1.8810])
    """
    if isinstance(p, bool) or not isinstance(p, numbers.Integral):
        raise ArgumentTypeError(f"multigammaln(): argument 'p' must be int, not {type(p).__name__}")
    if p < 1:
        raise UsageError("p has to be greater than or equal to 1")
    (x,) = core.promote(REGISTRY["lgamma"], input)
    total = None
    for j in range(int(p) - 1, -1, -1):  # PyTorch's order: x - (p-1)/2 first
        term = lgamma(x - j / 2 if j else x)
        total = term if total is None else total + term
    return total + int(p) * (int(p) - 1) / 4 * math.log(math.pi)


@takes_out
def mvlgamma(input, p: int):  # noqa: A002
    """PyTorch's name of `kn.special.multigammaln` (also the method `x.mvlgamma(p)`).

    >>> import kiln as kn
    >>> kn.mvlgamma(kn.tensor([2.5]), 3)
    tensor([1.8810])
    """
    return multigammaln.without_out(input, p)


def _polynomial(kind: str):
    op = REGISTRY["orthogonal_polynomial"]

    def fn(input, n):  # noqa: A002
        x, k = core.promote(op, input, n)
        return stop_gradient(core.call("orthogonal_polynomial", x, k, kind=kind))

    fn.__name__ = fn.__qualname__ = kind
    fn.__module__ = __name__
    fn.__doc__ = f"""torch.special's `{kind}(input, n)`: P_n(x), elementwise, for integer
    degrees n (a float n is truncated; P_n = 0 for n < 0). No gradient (PyTorch's).

    >>> import kiln as kn
    >>> kn.special.{kind}(kn.tensor([0.5]), 0)
    tensor([1.])
    """
    return takes_out(fn)


_POLYNOMIAL_FUNCTIONS = {kind: _polynomial(kind) for kind in POLYNOMIALS}


def namespace(frontend) -> types.SimpleNamespace:
    """`kn.special`: torch.special's functions and its names for kiln's."""
    f = frontend
    names = {
        "digamma": digamma, "psi": digamma, "gammaln": lgamma, "polygamma": polygamma,
        "erfinv": erfinv, "i0": i0, "i1": _i1, "erf": f.erf, "expm1": f.expm1,
        "log1p": f.log1p, "expit": f.sigmoid, "logsumexp": f.logsumexp,
        "round": functools.partial(f.round, decimals=0),  # PyTorch's: no integer kernel
        "i0e": i0e, "i1e": i1e, "ndtr": ndtr, "ndtri": ndtri, "log_ndtr": log_ndtr,
        "erfcx": erfcx, "entr": entr, "xlogy": xlogy, "xlog1py": xlog1py, "zeta": zeta,
        "gammainc": gammainc, "gammaincc": gammaincc, "multigammaln": multigammaln,
        "bessel_j0": bessel_j0, "bessel_j1": bessel_j1, "bessel_y0": bessel_y0,
        "bessel_y1": bessel_y1, "modified_bessel_i0": modified_bessel_i0,
        "modified_bessel_i1": modified_bessel_i1, "modified_bessel_k0": modified_bessel_k0,
        "modified_bessel_k1": modified_bessel_k1,
        "scaled_modified_bessel_k0": scaled_modified_bessel_k0,
        "scaled_modified_bessel_k1": scaled_modified_bessel_k1,
        "spherical_bessel_j0": spherical_bessel_j0, "airy_ai": airy_ai,
        **_POLYNOMIAL_FUNCTIONS,
    }  # fmt: skip
    for name in ("erfc", "exp2", "logit", "sinc", "softmax", "log_softmax"):
        names[name] = getattr(f, name)
    return types.SimpleNamespace(**names)
