"""PyTorch's KL rules between distributions of different families (kiln/distributions_kl.py
merges them into `kl_divergence`'s table): closed forms, and infinity where q's support
misses part of p's, with PyTorch's formulas.

>>> import kiln as kn
>>> d = kn.distributions
>>> d.kl_divergence(d.Normal(0.0, 1.0), d.Laplace(0.0, 1.0))
tensor(0.0721)
>>> d.kl_divergence(d.Normal(0.0, 1.0), d.Exponential(1.0))
tensor(inf)
"""

from __future__ import annotations

import math

from .distributions import Bernoulli, Normal, Uniform, _kn
from .distributions_extra import _EULER, Binomial, Gumbel, Pareto
from .distributions_families import ContinuousBernoulli
from .distributions_more import Beta, Exponential, Gamma, Laplace, Poisson
from .distributions_multi import (
    LowRankMultivariateNormal,
    MultivariateNormal,
    _lowrank_mahalanobis,
    _mahalanobis,
)

__all__ = ["CROSS_RULES"]


def _infinite(attr):
    return lambda p, q: _kn().full_like(getattr(p, attr), math.inf)


def _xlogx(x):
    return _kn().xlogy(x, x)


def _inf_where(mask, result):
    return _kn().where(mask, math.inf, result)


def _bernoulli_poisson(p, q):
    return -p.entropy() - (p.probs * q.rate.log() - q.rate)


def _beta_cb(p, q):
    return -p.entropy() - p.mean * q.logits - _kn().log1p(-q.probs) - q._log_norm()


def _beta_exponential(p, q):
    mean = p.concentration1 / (p.concentration1 + p.concentration0)
    return -p.entropy() - q.rate.log() + q.rate * mean


def _beta_gamma(p, q):
    kn, a, b = _kn(), p.concentration1, p.concentration0
    t2 = kn.lgamma(q.concentration) - q.concentration * q.rate.log()
    t3 = (q.concentration - 1) * (kn.digamma(a) - kn.digamma(a + b))
    return -p.entropy() + t2 - t3 + q.rate * a / (a + b)


def _beta_normal(p, q):
    a, b = p.concentration1, p.concentration0
    mean, var = a / (a + b), q.scale.pow(2)
    t2 = 0.5 * (var * 2 * math.pi).log()
    t3 = (mean * (1 - mean) / (a + b + 1) + mean.pow(2)) * 0.5
    return -p.entropy() + t2 + (t3 - q.loc * mean + q.loc.pow(2) * 0.5) / var


def _cb_exponential(p, q):
    return -p.entropy() - q.rate.log() + q.rate * p.mean


def _cb_normal(p, q):
    t2 = 0.5 * (math.log(2.0 * math.pi) + (q.loc / q.scale).square()) + q.scale.log()
    t3 = (p.variance + p.mean.square() - 2.0 * q.loc * p.mean) / (2.0 * q.scale.square())
    return -p.entropy() + t2 + t3


def _cb_uniform(p, q):
    result = -p.entropy() + (q.high - q.low).log()
    return _inf_where((q.low >= 0) | (q.high <= 1), result)


def _exponential_gumbel(p, q):
    prod, ratio = p.rate * q.scale, q.loc / q.scale
    t2 = ratio.exp() * prod / (prod + 1)
    return prod.log() - 1 - ratio + t2 + prod.reciprocal()


def _gamma_gumbel(p, q):
    kn, c = _kn(), p.concentration
    prod, ratio = p.rate * q.scale, q.loc / q.scale
    t1 = (c - 1) * kn.digamma(c) - kn.lgamma(c) - c
    t2 = prod.log() + c / prod
    t3 = ratio.exp() * (1 + prod.reciprocal()).pow(-c) - ratio
    return t1 + t2 + t3


def _gamma_normal(p, q):
    kn, c = _kn(), p.concentration
    var, beta_sqr = q.scale.pow(2), p.rate.pow(2)
    t1 = 0.5 * (beta_sqr * var * 2 * math.pi).log() - c - kn.lgamma(c)
    t2 = 0.5 * (c.pow(2) + c) / beta_sqr
    return t1 + (c - 1) * kn.digamma(c) + (t2 - q.loc * c / p.rate + 0.5 * q.loc.pow(2)) / var


def _gumbel_normal(p, q):
    ratio = p.scale / q.scale
    t1 = (ratio / math.sqrt(2 * math.pi)).log()
    t2 = (math.pi * ratio * 0.5).pow(2) / 3
    t3 = ((p.loc + p.scale * _EULER - q.loc) / q.scale).pow(2) * 0.5
    return -t1 + t2 + t3 - (_EULER + 1)


def _normal_laplace(p, q):
    diff, ratio = p.loc - q.loc, p.scale / q.scale
    diff_ratio = diff / p.scale
    t2 = math.sqrt(2 / math.pi) * p.scale * (-0.5 * diff_ratio.pow(2)).exp()
    t3 = diff * _kn().erf(math.sqrt(0.5) * diff_ratio)
    return -ratio.log() + (t2 + t3) / q.scale - (0.5 * (1 + math.log(0.5 * math.pi)))


def _pareto_exponential(p, q):
    prod = p.scale * q.rate
    result = (p.alpha / prod).log() - p.alpha.reciprocal() + p.alpha * prod / (p.alpha - 1) - 1
    return _inf_where(p.alpha <= 1, result)


def _pareto_gamma(p, q):
    kn = _kn()
    common = p.scale.log() + p.alpha.reciprocal()
    t2 = kn.lgamma(q.concentration) - q.concentration * q.rate.log()
    t4 = q.rate * p.alpha * p.scale / (p.alpha - 1)
    result = p.alpha.log() - common + t2 + (1 - q.concentration) * common + t4 - 1
    return _inf_where(p.alpha <= 1, result)


def _pareto_normal(p, q):
    var, common = 2 * q.scale.pow(2), p.scale / (p.alpha - 1)
    t1 = (math.sqrt(2 * math.pi) * q.scale * p.alpha / p.scale).log()
    t3 = p.alpha * common.pow(2) / (p.alpha - 2)
    t4 = (p.alpha * common - q.loc).pow(2)
    return _inf_where(p.alpha <= 2, t1 - p.alpha.reciprocal() + (t3 + t4) / var - 1)


def _uniform_beta(p, q):
    kn, width = _kn(), p.high - p.low
    a, b = q.concentration1, q.concentration0
    t2 = (a - 1) * (_xlogx(p.high) - _xlogx(p.low) - width) / width
    t3 = (b - 1) * (_xlogx(1 - p.high) - _xlogx(1 - p.low) + width) / width
    t4 = kn.lgamma(a) + kn.lgamma(b) - kn.lgamma(a + b)
    return _inf_where((p.high > 1) | (p.low < 0), t3 + t4 - width.log() - t2)


def _uniform_cb(p, q):
    result = -p.entropy() - p.mean * q.logits - _kn().log1p(-q.probs) - q._log_norm()
    return _inf_where((p.high >= 1) | (p.low <= 0), result)


def _uniform_exponential(p, q):
    result = q.rate * (p.high + p.low) / 2 - ((p.high - p.low) * q.rate).log()
    return _inf_where(p.low < 0, result)


def _uniform_gamma(p, q):
    width = p.high - p.low
    t2 = _kn().lgamma(q.concentration) - q.concentration * q.rate.log()
    t3 = (1 - q.concentration) * (_xlogx(p.high) - _xlogx(p.low) - width) / width
    result = -width.log() + t2 + t3 + q.rate * (p.high + p.low) / 2
    return _inf_where(p.low < 0, result)


def _uniform_gumbel(p, q):
    common = q.scale / (p.high - p.low)
    high, low = (p.high - q.loc) / q.scale, (p.low - q.loc) / q.scale
    return common.log() + 0.5 * (high + low) - common * ((-high).exp() - (-low).exp())


def _uniform_pareto(p, q):
    width = p.high - p.low
    t1 = (q.alpha * q.scale.pow(q.alpha) * width).log()
    t2 = (_xlogx(p.high) - _xlogx(p.low) - width) / width
    return _inf_where(p.low < q.scale, t2 * (q.alpha + 1) - t1)


def _trace_xxt(x):
    return x.pow(2).sum((-2, -1))


def _mvn_lowrank(p, q):
    kn = _kn()
    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two (Low Rank) Multivariate Normals with "
                         "different event shapes cannot be computed")  # fmt: skip
    qw, qd = q._unbroadcasted_cov_factor, q._unbroadcasted_cov_diag
    p_tril = p._unbroadcasted_scale_tril
    term1 = q._log_det() - 2 * p_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
    term3 = _lowrank_mahalanobis(qw, qd, q.loc - p.loc, q._capacitance_tril)
    a = kn.linalg.solve_triangular(q._capacitance_tril, qw.mT / qd.unsqueeze(-2), upper=False)
    term2 = _trace_xxt(p_tril * qd.rsqrt().unsqueeze(-1)) - _trace_xxt(a @ p_tril)
    return 0.5 * (term1 + term2 + term3 - p.event_shape[0])


def _lowrank_mvn(p, q):
    kn = _kn()
    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two (Low Rank) Multivariate Normals with "
                         "different event shapes cannot be computed")  # fmt: skip
    q_tril = q._unbroadcasted_scale_tril
    term1 = 2 * q_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1) - p._log_det()
    term3 = _mahalanobis(q_tril, q.loc - p.loc)
    batch = kn.broadcast_shapes(q_tril.shape[:-2], p._unbroadcasted_cov_factor.shape[:-2])
    n, rank = p.event_shape[0], p.cov_factor.shape[-1]
    q_tril = q_tril.expand((*batch, n, n))
    p_w = p._unbroadcasted_cov_factor.expand((*batch, n, rank))
    p_d = kn.diag_embed(p._unbroadcasted_cov_diag.sqrt()).expand((*batch, n, n))
    solve = kn.linalg.solve_triangular
    term2 = _trace_xxt(solve(q_tril, p_w, upper=False)) + _trace_xxt(
        solve(q_tril, p_d, upper=False)
    )
    return 0.5 * (term1 + term2 + term3 - p.event_shape[0])


CROSS_RULES = {
    (Bernoulli, Poisson): _bernoulli_poisson,
    (Beta, ContinuousBernoulli): _beta_cb,
    (Beta, Pareto): _infinite("concentration1"),
    (Beta, Exponential): _beta_exponential,
    (Beta, Gamma): _beta_gamma,
    (Beta, Normal): _beta_normal,
    (ContinuousBernoulli, Pareto): _infinite("probs"),
    (ContinuousBernoulli, Exponential): _cb_exponential,
    (ContinuousBernoulli, Normal): _cb_normal,
    (ContinuousBernoulli, Uniform): _cb_uniform,
    (Exponential, Gumbel): _exponential_gumbel,
    (Gamma, Gumbel): _gamma_gumbel,
    (Gamma, Normal): _gamma_normal,
    (Gumbel, Normal): _gumbel_normal,
    (Normal, Laplace): _normal_laplace,
    (Pareto, Exponential): _pareto_exponential,
    (Pareto, Gamma): _pareto_gamma,
    (Pareto, Normal): _pareto_normal,
    (Uniform, Beta): _uniform_beta,
    (Uniform, ContinuousBernoulli): _uniform_cb,
    (Uniform, Exponential): _uniform_exponential,
    (Uniform, Gamma): _uniform_gamma,
    (Uniform, Gumbel): _uniform_gumbel,
    (Uniform, Pareto): _uniform_pareto,
    (MultivariateNormal, LowRankMultivariateNormal): _mvn_lowrank,
    (LowRankMultivariateNormal, MultivariateNormal): _lowrank_mvn,
}
for _q in (Beta, ContinuousBernoulli, Pareto, Uniform):
    CROSS_RULES[(Exponential, _q)] = _infinite("rate")
for _q in (Beta, ContinuousBernoulli, Pareto, Uniform):
    CROSS_RULES[(Gamma, _q)] = _infinite("concentration")
for _p, _attr in ((Gumbel, "loc"), (Laplace, "loc"), (Normal, "loc")):
    for _q in (Beta, ContinuousBernoulli, Exponential, Gamma, Pareto, Uniform):
        CROSS_RULES[(_p, _q)] = _infinite(_attr)
for _q in (Beta, ContinuousBernoulli, Uniform):
    CROSS_RULES[(Pareto, _q)] = _infinite("scale")
for _q in (Bernoulli, Binomial):
    CROSS_RULES[(Poisson, _q)] = _infinite("rate")
