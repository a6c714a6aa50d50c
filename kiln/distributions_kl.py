"""The KL rules of `kn.distributions`: `kl_divergence(p, q)` looks one up by the types of p
and q (or of their base classes), `register_kl` adds one; the formulas are PyTorch's.

>>> import kiln as kn
>>> d = kn.distributions
>>> d.kl_divergence(d.Exponential(kn.tensor(1.0)), d.Exponential(kn.tensor(2.0)))
tensor(0.3069)
"""

from __future__ import annotations

import math
import warnings

from .distributions import (
    Bernoulli,
    Categorical,
    ExponentialFamily,
    Independent,
    Normal,
    Uniform,
    _kn,
    _sum_rightmost,
)  # fmt: skip
from .distributions_extra import _EULER, Binomial, Geometric, Gumbel, Pareto
from .distributions_families import ContinuousBernoulli, kl_continuous_bernoulli
from .distributions_kl_cross import CROSS_RULES
from .distributions_more import (
    Beta,
    Cauchy,
    Dirichlet,
    Exponential,
    Gamma,
    HalfNormal,
    Laplace,
    LogNormal,
    Poisson,
)  # fmt: skip
from .distributions_multi import (
    LowRankMultivariateNormal,
    MultivariateNormal,
    OneHotCategorical,
    _mahalanobis,
    kl_lowrank,
)
from .distributions_transforms import TransformedDistribution
from .errors import ArgumentError

__all__ = ["kl_divergence", "register_kl"]


def _kl_exponential(p, q):
    ratio = q.rate / p.rate
    return ratio - 1 - ratio.log()


def _kl_gamma(p, q):
    kn = _kn()
    c1, c2, r1, r2 = p.concentration, q.concentration, p.rate, q.rate
    t1 = c2 * (r1 / r2).log()
    t2 = kn.lgamma(c2) - kn.lgamma(c1)
    t3 = (c1 - c2) * kn.digamma(c1)
    return t1 + t2 + t3 + (r2 - r1) * (c1 / r1)


def _kl_dirichlet(p, q):
    kn = _kn()
    sum_p = p.concentration.sum(-1)
    t1 = kn.lgamma(sum_p) - kn.lgamma(q.concentration.sum(-1))
    t2 = (kn.lgamma(p.concentration) - kn.lgamma(q.concentration)).sum(-1)
    t3 = p.concentration - q.concentration
    t4 = kn.digamma(p.concentration) - kn.digamma(sum_p).unsqueeze(-1)
    return t1 - t2 + (t3 * t4).sum(-1)


def _kl_beta(p, q):
    return _kl_dirichlet(p._dirichlet, q._dirichlet)


def _kl_poisson(p, q):
    return p.rate * (p.rate.log() - q.rate.log()) - (p.rate - q.rate)


def _kl_laplace(p, q):
    ratio = p.scale / q.scale
    apart = (p.loc - q.loc).abs()
    return -ratio.log() + apart / q.scale + ratio * (-apart / p.scale).exp() - 1


def _kl_cauchy(p, q):
    t1 = ((p.scale + q.scale).pow(2) + (p.loc - q.loc).pow(2)).log()
    return t1 - (4 * p.scale * q.scale).log()


def _kl_base(p, q):  # HalfNormal, LogNormal: the KL of their normal distributions
    return kl_divergence(p.base_dist, q.base_dist)


def _kl_normal(p, q):
    var_ratio = (p.scale / q.scale).pow(2)
    t1 = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


def _kl_categorical(p, q):
    kn = _kn()
    t = p.probs * (p.logits - q.logits)
    t = kn.where((q.probs == 0).expand_as(t), math.inf, t)
    return kn.where((p.probs == 0).expand_as(t), 0.0, t).sum(-1)


def _kl_bernoulli(p, q):
    kn = _kn()
    softplus = kn.nn.functional.softplus
    t1 = p.probs * (softplus(-q.logits) - softplus(-p.logits))
    t1 = kn.where(p.probs == 0, 0.0, kn.where(q.probs == 0, math.inf, t1))
    t2 = (1 - p.probs) * (softplus(q.logits) - softplus(p.logits))
    t2 = kn.where(p.probs == 1, 0.0, kn.where(q.probs == 1, math.inf, t2))
    return t1 + t2


def _kl_uniform(p, q):
    kn = _kn()
    result = ((q.high - q.low) / (p.high - p.low)).log()
    return kn.where((q.low > p.low) | (q.high < p.high), math.inf, result)


def _kl_independent(p, q):
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError("kl_divergence of Independent distributions of other ndims")
    return _sum_rightmost(kl_divergence(p.base_dist, q.base_dist), p.reinterpreted_batch_ndims)


def _kl_mvn(p, q):
    kn = _kn()
    if p.event_shape != q.event_shape:
        raise ArgumentError("KL-divergence between two Multivariate Normals with different "
                            "event shapes cannot be computed")  # fmt: skip
    half_term1 = q._half_log_det() - p._half_log_det()
    p_tril, q_tril = p._unbroadcasted_scale_tril, q._unbroadcasted_scale_tril
    shape = (*kn.broadcast_shapes(q_tril.shape[:-2], p_tril.shape[:-2]), *p_tril.shape[-2:])
    solved = kn.linalg.solve_triangular(q_tril.expand(shape), p_tril.expand(shape), upper=False)
    term2 = solved.pow(2).sum((-2, -1))
    term3 = _mahalanobis(q_tril, q.loc - p.loc)
    return half_term1 + 0.5 * (term2 + term3 - p.event_shape[0])


def _kl_binomial(p, q):
    kn = _kn()
    if bool((p.total_count < q.total_count).any()):
        raise NotImplementedError(
            "KL between Binomials where q.total_count > p.total_count is not implemented"
        )
    kl = p.total_count * (p.probs * (p.logits - q.logits) + (-p.probs).log1p()
                          - (-q.probs).log1p())  # fmt: skip
    return kn.where(p.total_count > q.total_count, math.inf, kl)


def _kl_geometric(p, q):
    return -p.entropy() - (-q.probs).log1p() / p.probs - q.logits


def _kl_gumbel(p, q):
    ct1, ct2, ct3 = p.scale / q.scale, q.loc / q.scale, p.loc / q.scale
    t1 = -ct1.log() - ct2 + ct3
    t3 = (ct2 + _kn().lgamma(1 + ct1) - ct3).exp()
    return t1 + ct1 * _EULER + t3 - (1 + _EULER)


def _kl_onehot(p, q):
    return _kl_categorical(p._categorical, q._categorical)


def _kl_pareto(p, q):
    scale_ratio, alpha_ratio = p.scale / q.scale, q.alpha / p.alpha
    result = q.alpha * scale_ratio.log() - alpha_ratio.log() + alpha_ratio - 1
    return _kn().where(p.scale < q.scale, math.inf, result)


def _kl_transformed(p, q):
    if p.transforms != q.transforms or p.event_shape != q.event_shape:
        raise NotImplementedError
    return kl_divergence(p.base_dist, q.base_dist)


def _kl_exponential_gamma(p, q):
    ratio = q.rate / p.rate
    t1 = -q.concentration * ratio.log()
    return t1 + ratio + _kn().lgamma(q.concentration) + q.concentration * _EULER - (1 + _EULER)


def _kl_gamma_exponential(p, q):
    return -p.entropy() - q.rate.log() + q.rate * p.concentration / p.rate


def _kl_normal_gumbel(p, q):
    mean_ratio, var_ratio = p.loc / q.scale, (p.scale / q.scale).pow(2)
    loc_ratio = q.loc / q.scale
    t3 = (-mean_ratio + 0.5 * var_ratio + loc_ratio).exp()
    return -0.5 * var_ratio.log() + mean_ratio - loc_ratio + t3 - 0.5 * (1 + math.log(2 * math.pi))


def _kl_uniform_normal(p, q):
    width = p.high - p.low
    t1 = (math.sqrt(math.pi * 2) * q.scale / width).log()
    t3 = ((p.high + p.low - 2 * q.loc) / 2).pow(2)
    return t1 + 0.5 * (width.pow(2) / 12 + t3) / q.scale.pow(2)


def _kl_laplace_normal(p, q):
    var = q.scale.pow(2)
    ratio = p.scale.pow(2) / var
    t1 = 0.5 * (2 * ratio / math.pi).log()
    return -t1 + ratio + (0.5 * p.loc.pow(2) - p.loc * q.loc + 0.5 * q.loc.pow(2)) / var - 1


def _kl_exponential_normal(p, q):
    var, rate_sqr = q.scale.pow(2), p.rate.pow(2)
    t1 = 0.5 * (rate_sqr * var * 2 * math.pi).log()
    return t1 - 1 + (rate_sqr.reciprocal() - q.loc / p.rate + q.loc.pow(2) * 0.5) / var


def _kl_beta_uniform(p, q):
    result = -p.entropy() + (q.high - q.low).log()
    return _kn().where((q.low > 0) | (q.high < 1), math.inf, result)


_KL = {
    (Normal, Normal): _kl_normal,
    (Categorical, Categorical): _kl_categorical,
    (Bernoulli, Bernoulli): _kl_bernoulli,
    (Independent, Independent): _kl_independent,
    (MultivariateNormal, MultivariateNormal): _kl_mvn,
    (Uniform, Uniform): _kl_uniform,
    (Laplace, Laplace): _kl_laplace,
    (Cauchy, Cauchy): _kl_cauchy,
    (HalfNormal, HalfNormal): _kl_base,
    (LogNormal, LogNormal): _kl_base,
    (Exponential, Exponential): _kl_exponential,
    (Gamma, Gamma): _kl_gamma,
    (Dirichlet, Dirichlet): _kl_dirichlet,
    (Beta, Beta): _kl_beta,
    (Poisson, Poisson): _kl_poisson,
    (Binomial, Binomial): _kl_binomial,
    (Geometric, Geometric): _kl_geometric,
    (Gumbel, Gumbel): _kl_gumbel,
    (OneHotCategorical, OneHotCategorical): _kl_onehot,
    (Pareto, Pareto): _kl_pareto,
    (TransformedDistribution, TransformedDistribution): _kl_transformed,
    (LowRankMultivariateNormal, LowRankMultivariateNormal): kl_lowrank,
    (Exponential, Gamma): _kl_exponential_gamma,
    (Gamma, Exponential): _kl_gamma_exponential,
    (Normal, Gumbel): _kl_normal_gumbel,
    (Uniform, Normal): _kl_uniform_normal,
    (Laplace, Normal): _kl_laplace_normal,
    (Exponential, Normal): _kl_exponential_normal,
    (Beta, Uniform): _kl_beta_uniform,
    (ContinuousBernoulli, ContinuousBernoulli): kl_continuous_bernoulli,
    **CROSS_RULES,
}


def _kl_exponential_family(p, q):
    """The Bregman divergence of the log-normalizer, for two of one exponential family."""
    kn = _kn()
    if type(p) is not type(q):
        raise NotImplementedError(
            "The cross KL-divergence between different exponential families cannot be "
            "computed using Bregman divergences"
        )
    p_params = [t.detach().requires_grad_() for t in p._natural_params]
    q_params = q._natural_params
    log_norm = p._log_normalizer(*p_params)
    grads = kn.autograd.grad(log_norm.sum(), p_params, create_graph=True)
    result = q._log_normalizer(*q_params) - log_norm
    for pp, qp, g in zip(p_params, q_params, grads):
        result = result - _sum_rightmost((qp - pp) * g, len(q.event_shape))
    return result


_KL[(ExponentialFamily, ExponentialFamily)] = _kl_exponential_family


def register_kl(type_p, type_q):
    """A decorator that makes `fn(p, q)` the `kl_divergence` of distributions of these types
    (or subclasses of them), as PyTorch's.

    >>> import kiln as kn
    >>> class Point(kn.distributions.Normal):
    ...     pass
    >>> @kn.distributions.register_kl(Point, Point)
    ... def _kl_point(p, q):
    ...     return (p.loc - q.loc).abs()
    >>> kn.distributions.kl_divergence(Point(1.0, 1.0), Point(3.0, 1.0))
    tensor(2.)
    """

    def decorator(fn):
        _KL[(type_p, type_q)] = fn
        return fn

    return decorator


def _most_specific_rule(type_p, type_q):
    """The rule of the most specific pair of base classes, p's first (PyTorch's order);
    RuntimeWarning where q's first would choose another rule, as PyTorch's."""
    mro_p, mro_q = type_p.__mro__, type_q.__mro__
    left = next((pair for pair in ((a, b) for a in mro_p for b in mro_q) if pair in _KL), None)
    if left is None:
        return None
    right = next(pair for pair in ((a, b) for b in mro_q for a in mro_p) if pair in _KL)
    if _KL[left] is not _KL[right]:
        warnings.warn(
            f"Ambiguous kl_divergence({type_p.__name__}, {type_q.__name__}). "
            f"Please register_kl({left[0].__name__}, {right[1].__name__})",
            RuntimeWarning,
            stacklevel=3,
        )
    return _KL[left]


def kl_divergence(p, q):
    """`KL(p || q)` over the batch, for two distributions of one kind (Normal, Categorical,
    Bernoulli, MultivariateNormal, Uniform, Exponential, Laplace, LogNormal, HalfNormal,
    Cauchy, Gamma, Beta, Dirichlet, Poisson, Independent of those), as PyTorch's formulas.

    >>> import kiln as kn
    >>> d = kn.distributions
    >>> d.kl_divergence(d.Normal(kn.tensor([1.0]), kn.tensor([1.0])), d.Normal(0.0, 1.0))
    tensor([0.5000])
    """
    rule = _KL.get((type(p), type(q)))
    if rule is None:  # a rule for base classes (subclasses, `register_kl`'s own classes)
        rule = _most_specific_rule(type(p), type(q))
    if rule is None:
        raise NotImplementedError(
            f"No KL(p || q) is implemented for p = {type(p).__name__}, q = {type(q).__name__}"
        )
    return rule(p, q)
