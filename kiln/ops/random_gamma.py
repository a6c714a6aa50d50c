"""Gamma draws with reparameterized gradients: `random_gamma` (standard gamma samples of the
concentrations, fresh on every run, as `random_poisson`) and `standard_gamma_grad`, the
implicit-reparameterization derivative d sample / d concentration at a sample, which is
`random_gamma`'s vjp. Its formula is PyTorch's `_standard_gamma_grad`: a series in x for
x < 0.8, Rice's saddle-point expansion for concentrations over 8 and a bivariate rational
approximation between (Jankowiak and Obermeyer, "Pathwise Derivatives Beyond the
Reparameterization Trick", 2018)."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from .. import shapes as sh
from .core import apply, defop
from .elementwise import special
from .random import _same_float, generator


def _gamma(xp, alpha, out=None, *, key, seed):
    # drawn in float64; in the result dtype at least its smallest normal number, as PyTorch's
    # (a tiny concentration's draws underflow to 0, whose normalization gave 0 / 0)
    draws = xp.asarray(generator(xp, key).standard_gamma(xp.asarray(alpha, dtype=np.float64)))
    dtype = alpha.dtype if out is None else out.dtype
    draws = xp.maximum(draws.astype(dtype), ml_dtypes.finfo(dtype).tiny)
    if out is None:
        return draws
    out[...] = draws
    return out


# PyTorch's coefficients of the rational approximation (rows: 1, u, u^2; columns: p0..p3,
# q0..q3 as polynomials in v = log(alpha), u = log(x / alpha)).
_COEF_UV = np.array([
    [0.16009398, -0.094634809, 0.025146376, -0.0030648343,
     1, 0.32668115, 0.10406089, 0.0014179084],
    [0.53487893, 0.1298071, 0.065735949, -0.0015649758,
     0.16639465, 0.020070113, -0.0035938915, -0.00058392623],
    [0.040121004, -0.0065914022, -0.0026286047, -0.0013441777,
     0.017050642, -0.0021309326, 0.00085092367, -1.5247877e-07],
])  # fmt: skip


def gamma_grad_values(xp, alpha, x):
    """d x / d alpha for x ~ Gamma(alpha, 1), elementwise in float64 (PyTorch's
    `standard_gamma_grad_one`, with its three regimes)."""
    alpha, x = xp.broadcast_arrays(xp.asarray(alpha, np.float64), xp.asarray(x, np.float64))
    with np.errstate(all="ignore"):
        # the series for small x
        numer, denom = xp.ones_like(x), alpha.copy()
        series1, series2 = numer / denom, numer / (denom * denom)
        for i in range(1, 6):
            numer = numer * (-x / i)
            denom = denom + 1
            series1 = series1 + numer / denom
            series2 = series2 + numer / (denom * denom)
        pow_x_alpha = x**alpha
        pdf = x ** (alpha - 1) * xp.exp(-x)
        cdf = pow_x_alpha * series1
        cdf_alpha = (xp.log(x) - special(xp).digamma(alpha)) * cdf - pow_x_alpha * series2
        small = -cdf_alpha / pdf
        small = xp.where(xp.isnan(small), 0.0, small)
        # Rice's saddle point for large alpha
        near = (
            (1 + 24 * alpha * (1 + 12 * alpha))
            * (1440 * alpha * alpha + 6 * x * (53 - 120 * x) - 65 * x * x / alpha
               + alpha * (107 + 3600 * x))
            / (1244160 * alpha**4)
        )  # fmt: skip
        root = xp.sqrt(8 * alpha)
        term2 = root / (alpha - x)
        term3 = (x - alpha - alpha * xp.log(x / alpha)) ** -1.5
        term23 = xp.where(x < alpha, term2 - term3, term2 + term3)
        term1 = xp.log(x / alpha) * term23 - xp.sqrt(2 / alpha) * (alpha + x) / (alpha - x) ** 2
        stirling = 1 + 1 / (12 * alpha) * (1 + 1 / (24 * alpha))
        far = -stirling * x * term1 / root
        large = xp.where((0.9 * alpha <= x) & (x <= 1.1 * alpha), near, far)
        # the rational approximation between
        u, v = xp.log(x / alpha), xp.log(alpha)
        c = [xp.asarray(_COEF_UV[0, i]) + u * (_COEF_UV[1, i] + u * _COEF_UV[2, i])
             for i in range(8)]  # fmt: skip
        p = c[0] + v * (c[1] + v * (c[2] + v * c[3]))
        q = c[4] + v * (c[5] + v * (c[6] + v * c[7]))
        middle = xp.exp(p / q)
        return xp.where(x < 0.8, small, xp.where(alpha > 8.0, large, middle))


def _gamma_grad(xp, alpha, x, out=None):
    r = gamma_grad_values(xp, alpha, x).astype(np.result_type(alpha.dtype, x.dtype))
    if out is None:
        return r
    out[...] = r
    return out


def _gamma_vjp(ct, y, alpha, **attrs):
    return (ct * apply("standard_gamma_grad", alpha, y),)


random_gamma = defop(
    "random_gamma", lambda s, **a: s, _same_float, _gamma, vjp=_gamma_vjp, tags={"random"},
)  # fmt: skip
# Not differentiable (PyTorch has no derivative of `_standard_gamma_grad` either).
standard_gamma_grad = defop(
    "standard_gamma_grad", lambda a, b, **k: sh.broadcast_shapes(a, b), _same_float,
    _gamma_grad,
)  # fmt: skip
