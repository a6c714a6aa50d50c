"""Further families of PyTorch's `torch.distributions`: `HalfCauchy`, `InverseGamma`,
`Kumaraswamy`, `LogisticNormal`, `RelaxedOneHotCategorical` (TransformedDistributions, as
PyTorch builds them), `ExpRelaxedCategorical`, `FisherSnedecor`, `GeneralizedPareto`,
`NegativeBinomial`, `VonMises` and `ContinuousBernoulli`, with PyTorch's parameters, constraints and
formulas (ContinuousBernoulli's Taylor expansions near probs = 1/2 included).

>>> import kiln as kn
>>> d = kn.distributions
>>> d.InverseGamma(kn.tensor(3.0), kn.tensor(2.0)).mean
tensor(1.)
"""

from __future__ import annotations

import math

from . import distributions_constraints as constraints
from .distributions import (
    Categorical,
    Distribution,
    ExponentialFamily,
    Normal,
    Uniform,
    _kn,
    _tensor,
)
from .distributions_extra import _EULER, _binary
from .distributions_more import Cauchy, Gamma, _params, _tiny
from .distributions_transforms import (
    AbsTransform,
    AffineTransform,
    ExpTransform,
    PowerTransform,
    StickBreakingTransform,
    TransformedDistribution,
)
from .eager.grad_mode import enable_grad, no_grad

__all__ = [
    "ContinuousBernoulli", "ExpRelaxedCategorical", "FisherSnedecor", "GeneralizedPareto",
    "HalfCauchy", "InverseGamma", "Kumaraswamy", "LogisticNormal", "NegativeBinomial",
    "RelaxedOneHotCategorical", "VonMises",
]  # fmt: skip


class HalfCauchy(TransformedDistribution):
    """The distribution of `|x|` for `x ~ Cauchy(0, scale)`.

    >>> import kiln as kn
    >>> kn.distributions.HalfCauchy(kn.tensor(1.0)).log_prob(kn.tensor(1.0))
    tensor(-1.1447)
    """

    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, scale, validate_args=None):
        (scale,) = _params(scale)
        base = Cauchy(_kn().zeros_like(scale), scale, validate_args=False)
        super().__init__(base, AbsTransform(), validate_args=validate_args)
        if self._validate_args:
            self._check_param("scale", scale, constraints.positive)

    scale = property(lambda self: self.base_dist.scale)
    mean = property(lambda self: _kn().full_like(self.scale, math.inf))
    mode = property(lambda self: _kn().zeros_like(self.scale))
    variance = property(lambda self: self.base_dist.variance)

    def log_prob(self, value):
        value = _tensor(value, self.scale)
        log_prob = self.base_dist.log_prob(value) + math.log(2)
        return _kn().where(value >= 0, log_prob, -math.inf)

    def cdf(self, value):
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, prob):
        return self.base_dist.icdf((_tensor(prob, self.scale) + 1) / 2)

    def entropy(self):
        return self.base_dist.entropy() - math.log(2)


class InverseGamma(TransformedDistribution):
    """The distribution of `1 / x` for `x ~ Gamma(concentration, rate)`.

    >>> import kiln as kn
    >>> kn.distributions.InverseGamma(kn.tensor(2.0), kn.tensor(1.0)).mode
    tensor(0.3333)
    """

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, concentration, rate, validate_args=None):
        base = Gamma(concentration, rate, validate_args=validate_args)
        neg_one = -_kn().ones((), dtype=base.rate.dtype)
        super().__init__(base, PowerTransform(neg_one), validate_args=validate_args)

    concentration = property(lambda self: self.base_dist.concentration)
    rate = property(lambda self: self.base_dist.rate)

    @property
    def mean(self):
        c = self.concentration
        return _kn().where(c > 1, self.rate / (c - 1), math.inf)

    mode = property(lambda self: self.rate / (self.concentration + 1))

    @property
    def variance(self):
        c = self.concentration
        return _kn().where(c > 2, self.rate.square() / ((c - 1).square() * (c - 2)), math.inf)

    def entropy(self):
        kn, c = _kn(), self.concentration
        return c + self.rate.log() + kn.lgamma(c) - (1 + c) * kn.digamma(c)


def _kumaraswamy_moment(a, b, n):
    kn = _kn()
    arg1 = 1 + n / a
    return b * (kn.lgamma(arg1) + kn.lgamma(b) - kn.lgamma(arg1 + b)).exp()


class Kumaraswamy(TransformedDistribution):
    """The Kumaraswamy distribution on (0, 1) of `concentration1` (a) and `concentration0`
    (b): `(1 - u ** (1 / b)) ** (1 / a)` for uniform `u`.

    >>> import kiln as kn
    >>> kn.distributions.Kumaraswamy(kn.tensor(2.0), kn.tensor(3.0)).log_prob(kn.tensor(0.5))
    tensor(0.5232)
    """

    arg_constraints = {"concentration1": constraints.positive,
                       "concentration0": constraints.positive}  # fmt: skip
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        kn = _kn()
        self.concentration1, self.concentration0 = _params(concentration1, concentration0)
        c0 = self.concentration0
        base = Uniform(kn.zeros_like(c0), kn.ones_like(c0), validate_args=validate_args)
        transforms = [PowerTransform(exponent=c0.reciprocal()), AffineTransform(1.0, -1.0),
                      PowerTransform(exponent=self.concentration1.reciprocal())]  # fmt: skip
        super().__init__(base, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = super().expand(batch_shape)
        new.concentration1 = self.concentration1.expand(new.batch_shape)
        new.concentration0 = self.concentration0.expand(new.batch_shape)
        return new

    mean = property(lambda self: _kumaraswamy_moment(self.concentration1, self.concentration0, 1))

    @property
    def mode(self):
        a, b = self.concentration1, self.concentration0
        log_mode = b.reciprocal() * (-b).log1p() - (-b * a).log1p()
        return _kn().where((b < 1) | (a < 1), math.nan, log_mode).exp()

    @property
    def variance(self):
        a, b = self.concentration1, self.concentration0
        return _kumaraswamy_moment(a, b, 2) - self.mean.pow(2)

    def entropy(self):
        a, b = self.concentration1, self.concentration0
        t1, t0 = 1 - a.reciprocal(), 1 - b.reciprocal()
        h0 = _kn().digamma(b + 1) + _EULER
        return t0 + t1 * h0 - a.log() - b.log()


class FisherSnedecor(Distribution):
    """The F distribution of `df1` and `df2`: a ratio of two scaled Gamma draws.

    >>> import kiln as kn
    >>> kn.distributions.FisherSnedecor(kn.tensor(3.0), kn.tensor(6.0)).mean
    tensor(1.5000)
    """

    arg_constraints = {"df1": constraints.positive, "df2": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, df1, df2, validate_args=None):
        self.df1, self.df2 = _params(df1, df2)
        self._gamma1 = Gamma(self.df1 * 0.5, self.df1, validate_args=False)
        self._gamma2 = Gamma(self.df2 * 0.5, self.df2, validate_args=False)
        super().__init__(self.df1.shape, validate_args=validate_args)

    @property
    def mean(self):
        # (NaN put in before the formula, as PyTorch: their gradient is 0 there, not NaN)
        df2 = _kn().where(self.df2 <= 2, math.nan, self.df2)
        return df2 / (df2 - 2)

    @property
    def mode(self):
        mode = (self.df1 - 2) / self.df1 * self.df2 / (self.df2 + 2)
        return _kn().where(self.df1 <= 2, math.nan, mode)

    @property
    def variance(self):
        df1, df2 = self.df1, _kn().where(self.df2 <= 4, math.nan, self.df2)
        return 2 * df2.pow(2) * (df1 + df2 - 2) / (df1 * (df2 - 2).pow(2) * (df2 - 4))

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        x1 = self._gamma1.rsample(sample_shape).view(shape)
        x2 = self._gamma2.rsample(sample_shape).view(shape)
        return _tiny(x1 / _tiny(x2))  # (an overflow stays inf, as PyTorch's)

    def log_prob(self, value):
        kn = _kn()
        value = _tensor(value, self.df1)
        ct1, ct2, ct3 = self.df1 * 0.5, self.df2 * 0.5, self.df1 / self.df2
        t1 = kn.lgamma(ct1 + ct2) - kn.lgamma(ct1) - kn.lgamma(ct2)
        t2 = ct1 * ct3.log() + (ct1 - 1) * value.log()
        t3 = (ct1 + ct2) * kn.log1p(ct3 * value)
        return t1 + t2 - t3


class NegativeBinomial(Distribution):
    """The number of successes before `total_count` failures of Bernoulli(`probs`) trials
    (`probs` or `logits`); `sample` draws a Poisson of a Gamma rate.

    >>> import kiln as kn
    >>> kn.distributions.NegativeBinomial(3.0, probs=kn.tensor(0.5)).log_prob(kn.tensor(2.0))
    tensor(-1.6740)
    """

    arg_constraints = {"total_count": constraints.greater_than_eq(0),
                       "probs": constraints.half_open_interval(0.0, 1.0),
                       "logits": constraints.real}  # fmt: skip
    support = constraints.nonnegative_integer
    _expanded = ("probs", "logits")

    def __init__(self, total_count, probs=None, logits=None, validate_args=None):
        kn = _kn()
        param = _tensor(probs if probs is not None else logits)
        if not isinstance(total_count, (kn.Tensor, kn.Symbol)):
            total_count = kn.tensor(float(total_count), dtype=param.dtype)
        (count,) = _binary(self, probs, logits, total_count)
        self.total_count = count.to(self._param.dtype)
        super().__init__(self._param.shape, validate_args=validate_args)

    mean = property(lambda self: self.total_count * self.logits.exp())
    variance = property(lambda self: self.mean / _kn().sigmoid(-self.logits))
    param_shape = property(lambda self: self._param.shape)

    @property
    def mode(self):
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    def sample(self, sample_shape=()):
        kn = _kn()
        with no_grad():
            gamma = Gamma(self.total_count, (-self.logits).exp(), validate_args=False)
            return kn.poisson(gamma.sample(sample_shape))

    def log_prob(self, value):
        kn = _kn()
        value, n = _tensor(value, self.logits), self.total_count
        logsigmoid = kn.nn.functional.logsigmoid
        unnormalized = n * logsigmoid(-self.logits) + value * logsigmoid(self.logits)
        normalization = -kn.lgamma(n + value) + kn.lgamma(1.0 + value) + kn.lgamma(n)
        normalization = kn.where(n + value == 0.0, 0.0, normalization)
        return unnormalized - normalization


class ContinuousBernoulli(ExponentialFamily):
    """The continuous Bernoulli distribution on [0, 1] of `probs` or `logits`, with
    Taylor expansions inside `lims` around 1/2, as PyTorch's.

    >>> import kiln as kn
    >>> kn.distributions.ContinuousBernoulli(kn.tensor(0.3)).log_prob(kn.tensor(0.2))
    tensor(0.2245)
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True
    _expanded = ("probs", "logits")

    def __init__(self, probs=None, logits=None, lims=(0.499, 0.501), validate_args=None):
        kn = _kn()
        _binary(self, probs, logits)
        if probs is not None and validate_args is not None and isinstance(self.probs, kn.Tensor):
            if not bool(constraints.unit_interval.check(self.probs).all()):
                raise ValueError("The parameter probs has invalid values")
        eps = kn.finfo(self._param.dtype).eps
        self._unclamped = self.probs
        if probs is not None:  # (PyTorch clamps the probs given eagerly)
            self.probs = self._param = self.probs.clamp(min=eps, max=1 - eps)
            self.logits = kn.log(self.probs) - kn.log1p(-self.probs)
        else:
            with enable_grad():  # (PyTorch's lazy probs: with grad even under no_grad)
                self.probs = self.probs.clamp(min=eps, max=1 - eps)
        self._lims = lims
        super().__init__(self._param.shape, validate_args=validate_args)

    def _checked_params(self):
        return ["logits"] if self._given == "logits" else []

    param_shape = property(lambda self: self._param.shape)

    def _outside(self):
        return (self.probs <= self._lims[0]) | (self.probs > self._lims[1])

    def _cut_probs(self):
        return _kn().where(self._outside(), self.probs, self._lims[0])

    def _log_norm(self):
        kn, cut = _kn(), self._cut_probs()
        below = kn.where(cut <= 0.5, cut, 0.0)
        above = kn.where(cut >= 0.5, cut, 1.0)
        log_norm = (kn.log1p(-cut) - cut.log()).abs().log() - kn.where(
            cut <= 0.5, kn.log1p(-2.0 * below), (2.0 * above - 1.0).log()
        )
        x = (self.probs - 0.5).pow(2)
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return kn.where(self._outside(), log_norm, taylor)

    @property
    def mean(self):
        kn, cut = _kn(), self._cut_probs()
        mus = cut / (2.0 * cut - 1.0) + 1.0 / (kn.log1p(-cut) - cut.log())
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * x.pow(2)) * x
        return kn.where(self._outside(), mus, taylor)

    @property
    def variance(self):
        kn, cut = _kn(), self._cut_probs()
        var = cut * (cut - 1.0) / (1.0 - 2.0 * cut).pow(2) + 1.0 / (kn.log1p(-cut) - cut.log()).pow(
            2
        )
        x = (self.probs - 0.5).pow(2)
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return kn.where(self._outside(), var, taylor)

    def rsample(self, sample_shape=()):
        kn = _kn()
        shape = self._extended_shape(sample_shape)
        return self.icdf(kn.rand(shape, dtype=self.probs.dtype, device=self.probs.device))

    def log_prob(self, value):
        kn = _kn()
        logits, value = kn.broadcast_tensors(self.logits, _tensor(value, self.logits))
        bce = kn.nn.functional.binary_cross_entropy_with_logits
        return -bce(logits, value, reduction="none") + self._log_norm()

    def cdf(self, value):
        kn, cut = _kn(), self._cut_probs()
        value = _tensor(value, self.probs)
        cdfs = (cut.pow(value) * (1.0 - cut).pow(1.0 - value) + cut - 1.0) / (2.0 * cut - 1.0)
        unbounded = kn.where(self._outside(), cdfs, value)
        return kn.where(value <= 0.0, 0.0, kn.where(value >= 1.0, 1.0, unbounded))

    def icdf(self, value):
        kn, cut = _kn(), self._cut_probs()
        value = _tensor(value, self.probs)
        inside = (kn.log1p(-cut + value * (2.0 * cut - 1.0)) - kn.log1p(-cut)) / (
            cut.log() - kn.log1p(-cut)
        )
        return kn.where(self._outside(), inside, value)

    def entropy(self):
        log0, log1 = _kn().log1p(-self.probs), self.probs.log()
        return self.mean * (log0 - log1) - self._log_norm() - log0

    _mean_carrier_measure = 0
    _natural_params = property(lambda self: (self.logits,))

    def _log_normalizer(self, x):
        kn = _kn()
        lo, hi = self._lims[0] - 0.5, self._lims[1] - 0.5
        outside = (x <= lo) | (x > hi)
        cut = kn.where(outside, x, lo)
        log_norm = kn.special.expm1(cut).abs().log() - cut.abs().log()
        taylor = 0.5 * x + x.pow(2) / 24.0 - x.pow(4) / 2880.0
        return kn.where(outside, log_norm, taylor)


def kl_continuous_bernoulli(p, q):
    """KL between two ContinuousBernoullis (PyTorch's formula)."""
    kn = _kn()
    t1 = p.mean * (p.logits - q.logits)
    t2 = p._log_norm() + kn.log1p(-p.probs)
    return t1 + t2 - q._log_norm() - kn.log1p(-q.probs)


class ExpRelaxedCategorical(Distribution):
    """The log of a RelaxedOneHotCategorical draw (Gumbel-softmax scores in log space), of
    `temperature` and `probs` or `logits`.

    >>> import kiln as kn
    >>> m = kn.distributions.ExpRelaxedCategorical(kn.tensor(1.0), kn.tensor([0.5, 0.5]))
    >>> m.log_prob(kn.tensor([0.5, 0.5]).log())
    tensor(-1.3863)
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        self._categorical = Categorical(probs, logits)
        self.temperature = temperature
        shape = self._categorical.param_shape
        super().__init__(shape[:-1], shape[-1:], validate_args=validate_args)

    param_shape = property(lambda self: self._categorical.param_shape)
    logits = property(lambda self: self._categorical.logits)
    probs = property(lambda self: self._categorical.probs)

    def rsample(self, sample_shape=()):
        kn = _kn()
        shape = self._extended_shape(sample_shape)
        eps = kn.finfo(self.logits.dtype).eps
        u = kn.rand(shape, dtype=self.logits.dtype, device=self.logits.device)
        gumbels = -(-(u.clamp(min=eps, max=1 - eps).log())).log()
        scores = (self.logits + gumbels) / self.temperature
        return scores - scores.logsumexp(dim=-1, keepdim=True)

    def log_prob(self, value):
        kn = _kn()
        k = self._categorical._num_events
        temperature = _tensor(self.temperature, self.logits)
        logits, value = kn.broadcast_tensors(self.logits, _tensor(value, self.logits))
        log_scale = kn.full_like(temperature, float(k)).lgamma() + (k - 1) * temperature.log()
        score = logits - value * temperature
        score = (score - score.logsumexp(dim=-1, keepdim=True)).sum(-1)
        return score + log_scale


class RelaxedOneHotCategorical(TransformedDistribution):
    """The Concrete (Gumbel-softmax) relaxation of OneHotCategorical(`probs` or `logits`) at
    `temperature`: points of the simplex with reparameterized draws.

    >>> import kiln as kn
    >>> m = kn.distributions.RelaxedOneHotCategorical(kn.tensor(0.5), kn.tensor([0.3, 0.7]))
    >>> m.log_prob(kn.tensor([0.2, 0.8]))
    tensor(-0.2528)
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        base = ExpRelaxedCategorical(temperature, probs, logits, validate_args=validate_args)
        super().__init__(base, ExpTransform(), validate_args=validate_args)

    temperature = property(lambda self: self.base_dist.temperature)
    logits = property(lambda self: self.base_dist.logits)
    probs = property(lambda self: self.base_dist.probs)


class LogisticNormal(TransformedDistribution):
    """The distribution on the simplex of a stick-broken Normal(`loc`, `scale`) vector.

    >>> import kiln as kn
    >>> m = kn.distributions.LogisticNormal(kn.zeros(2), kn.ones(2))
    >>> m.event_shape, m.log_prob(kn.tensor([0.2, 0.3, 0.5]))
    (kiln.Size([3]), tensor(1.2980))
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        base = Normal(*_params(loc, scale), validate_args=validate_args)
        if not base.batch_shape:
            base = base.expand([1])
        super().__init__(base, StickBreakingTransform(), validate_args=validate_args)

    loc = property(lambda self: self.base_dist.base_dist.loc)
    scale = property(lambda self: self.base_dist.base_dist.scale)


class GeneralizedPareto(Distribution):
    """The generalized Pareto distribution of `loc`, `scale` and `concentration` (the
    exponential at concentration 0); `rsample` inverts its CDF.

    >>> import kiln as kn
    >>> kn.distributions.GeneralizedPareto(0.0, 1.0, 0.5).log_prob(kn.tensor(1.0))
    tensor(-1.2164)
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive,
                       "concentration": constraints.real}  # fmt: skip
    has_rsample = True

    def __init__(self, loc, scale, concentration, validate_args=None):
        self.loc, self.scale, self.concentration = _params(loc, scale, concentration)
        super().__init__(self.loc.shape, validate_args=validate_args)

    def rsample(self, sample_shape=()):
        kn = _kn()
        shape = self._extended_shape(sample_shape)
        return self.icdf(kn.rand(shape, dtype=self.loc.dtype, device=self.loc.device))

    def _safe(self):
        kn = _kn()
        eq_zero = kn.isclose(self.concentration, kn.zeros_like(self.concentration))
        return eq_zero, kn.where(eq_zero, 1.0, self.concentration)

    def log_prob(self, value):
        kn = _kn()
        z = (_tensor(value, self.loc) - self.loc) / self.scale
        eq_zero, safe = self._safe()
        y = 1 / safe + kn.ones_like(z)
        nonzero = kn.where(y == 0, y, y * kn.log1p(safe * z))
        return -self.scale.log() - kn.where(eq_zero, z, nonzero)

    def log_survival_function(self, value):
        kn = _kn()
        z = (_tensor(value, self.loc) - self.loc) / self.scale
        eq_zero, safe = self._safe()
        return kn.where(eq_zero, -z, -kn.log1p(safe * z) / safe)

    def log_cdf(self, value):
        return _kn().log1p(-self.log_survival_function(value).exp())

    def cdf(self, value):
        return self.log_cdf(value).exp()

    def icdf(self, value):
        kn = _kn()
        eq_zero, safe = self._safe()
        logu = kn.log1p(-_tensor(value, self.loc))
        nonzero = self.loc + self.scale / safe * kn.expm1(-safe * logu)
        return kn.where(eq_zero, self.loc - self.scale * logu, nonzero)

    @property
    def mean(self):
        kn, c = _kn(), self.concentration
        safe = kn.where(c < 1, c, 0.5)
        return kn.where(c < 1, self.loc + self.scale / (1 - safe), math.nan)

    @property
    def variance(self):
        kn, c = _kn(), self.concentration
        safe = kn.where(c < 0.5, c, 0.25)
        result = self.scale**2 / ((1 - safe) ** 2 * (1 - 2 * safe))
        return kn.where(c < 0.5, result, math.nan)

    def entropy(self):
        return (self.scale.log() + self.concentration + 1).broadcast_to(self._batch_shape)

    mode = property(lambda self: self.loc)

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        kn, c = _kn(), self.concentration
        upper = kn.where(c < 0, self.loc - self.scale / c, math.inf)
        return constraints.interval(self.loc, upper)


# PyTorch's polynomial approximations of log I0 and log I1 (Abramowitz and Stegun 9.8),
# so that VonMises agrees with it to rounding
_BESSEL_SMALL = (
    (1.0, 3.5156229, 3.0899424, 1.2067492, 0.2659732, 0.360768e-1, 0.45813e-2),
    (0.5, 0.87890594, 0.51498869, 0.15084934, 0.2658733e-1, 0.301532e-2, 0.32411e-3),
)
_BESSEL_LARGE = (
    (0.39894228, 0.1328592e-1, 0.225319e-2, -0.157565e-2, 0.916281e-2, -0.2057706e-1,
     0.2635537e-1, -0.1647633e-1, 0.392377e-2),
    (0.39894228, -0.3988024e-1, -0.362018e-2, 0.163801e-2, -0.1031555e-1, 0.2282967e-1,
     -0.2895312e-1, 0.1787654e-1, -0.420059e-2),
)  # fmt: skip


def _poly(y, coef):
    result = coef[-1]
    for c in reversed(coef[:-1]):
        result = c + y * result
    return result


def _log_bessel(x, order):
    """log I_order(x) for x > 0, order 0 or 1 (PyTorch's `_log_modified_bessel_fn`)."""
    small = _poly((x / 3.75) ** 2, _BESSEL_SMALL[order])
    if order == 1:
        small = x.abs() * small
    large = x - 0.5 * x.log() + _poly(3.75 / x, _BESSEL_LARGE[order]).log()
    return _kn().where(x < 3.75, small.log(), large)


class VonMises(Distribution):
    """The von Mises (circular normal) distribution of `loc` and `concentration`; `sample`
    is Best and Fisher's rejection sampler (eager: a data-dependent loop).

    >>> import kiln as kn
    >>> kn.distributions.VonMises(kn.tensor(0.0), kn.tensor(2.0)).log_prob(kn.tensor(0.5))
    tensor(-0.9067)
    """

    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    has_rsample = False

    def __init__(self, loc, concentration, validate_args=None):
        self.loc, self.concentration = _params(loc, concentration)
        super().__init__(self.loc.shape, validate_args=validate_args)

    def log_prob(self, value):
        log_prob = self.concentration * (_tensor(value, self.loc) - self.loc).cos()
        return log_prob - math.log(2 * math.pi) - _log_bessel(self.concentration, 0)

    mean = property(lambda self: self.loc)
    mode = property(lambda self: self.loc)

    @property
    def variance(self):
        c = self.concentration
        return 1 - (_log_bessel(c, 1) - _log_bessel(c, 0)).exp()

    def sample(self, sample_shape=()):
        kn = _kn()
        shape = self._extended_shape(sample_shape)
        with no_grad():
            loc, kappa = self.loc.double(), self.concentration.double()
            tau = 1 + (1 + 4 * kappa**2).sqrt()
            rho = (tau - (2 * tau).sqrt()) / (2 * kappa)
            r = kn.where(kappa < 1e-5, 1 / kappa + kappa, (1 + rho**2) / (2 * rho))
            x = kn.zeros(shape, dtype=kn.float64)
            done = kn.zeros(shape, dtype=kn.bool)
            while not bool(done.all()):
                u1, u2, u3 = kn.rand((3, *shape), dtype=kn.float64).unbind()
                z = (math.pi * u1).cos()
                f = (1 + r * z) / (r + z)
                c = kappa * (r - f)
                accept = ((c * (2 - c) - u2) > 0) | ((c / u2).log() + 1 - c >= 0)
                accept = accept & ~done
                x = kn.where(accept, (u3 - 0.5).sign() * f.acos(), x)
                done = done | accept
            return ((x + math.pi + loc) % (2 * math.pi) - math.pi).to(self.loc.dtype)
