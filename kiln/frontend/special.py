"""PyTorch's special functions: `lgamma`, `digamma`, `polygamma`, `erfinv`, `i0` (kiln's
ops, kiln/ops/elementwise_special.py), and `kn.special`, PyTorch's `torch.special` names for
them and for the functions kiln has under other names (`gammaln`, `psi`, `expit`...)."""

from __future__ import annotations

import types

from ..graph.opdef import REGISTRY
from . import core

__all__ = ["digamma", "erfinv", "i0", "lgamma", "polygamma"]


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


def polygamma(n: int, input):  # noqa: A002
    """The `n`-th derivative of `digamma`, elementwise (PyTorch's `polygamma(n, input)`).
    At its poles (0 and the negative integers) and at ±inf it gives SciPy's values (±inf, 0),
    where PyTorch's are NaN or large finite numbers.

    >>> import kiln as kn
    >>> kn.polygamma(1, kn.tensor([1.0]))  # π² / 6
    tensor([1.6449])
    """
    n = int(n)
    if n < 0:
        from ..errors import ArgumentError

        raise ArgumentError(f"polygamma(n, x) does not support negative n, got {n}")
    if n == 0:
        return digamma(input)
    (x,) = core.promote(REGISTRY["digamma"], input)
    return core.call("polygamma", x, n=n)


def polygamma_method(self, n: int):
    """`x.polygamma(n)`: PyTorch's method takes n after the tensor."""
    return polygamma(n, self)


def namespace(frontend) -> types.SimpleNamespace:
    """`kn.special`: torch.special's names for kiln's functions."""
    f = frontend
    names = {
        "digamma": digamma, "psi": digamma, "gammaln": lgamma, "polygamma": polygamma,
        "erfinv": erfinv, "i0": i0, "i1": _i1, "erf": f.erf, "expm1": f.expm1,
        "log1p": f.log1p, "expit": f.sigmoid, "logsumexp": f.logsumexp, "round": f.round,
    }  # fmt: skip
    for name in ("erfc", "exp2", "logit", "xlogy", "sinc", "softmax", "log_softmax"):
        if hasattr(f, name):
            names[name] = getattr(f, name)
    return types.SimpleNamespace(**names)
