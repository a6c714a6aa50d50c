"""More univariate distributions of PyTorch's `torch.distributions`, several built on
`TransformedDistribution` as PyTorch builds them: `StudentT`, `Chi2`, `Gumbel`, `Weibull`,
`Pareto`, `Geometric`, `Binomial`, `LogitRelaxedBernoulli`, `RelaxedBernoulli` (and, from
kiln/distributions_multi.py, `OneHotCategorical`, `Multinomial`, `MixtureSameFamily`,
`LowRankMultivariateNormal`), with PyTorch's parameters, constraints and formulas.

>>> import kiln as kn
>>> d = kn.distributions
>>> d.StudentT(kn.tensor(3.0)).log_prob(kn.tensor(0.5)), d.Gumbel(0.0, 1.0).cdf(kn.tensor(0.0))
(tensor(-1.1610), tensor(0.3679))
"""

from __future__ import annotations

import math

from . import distributions_constraints as constraints
from .distributions import Distribution, Uniform, _kn, _tensor
from .distributions_more import Exponential, Gamma, _params
from .distributions_transforms import (
    AffineTransform,
    ExpTransform,
    PowerTransform,
    SigmoidTransform,
    TransformedDistribution,
)
from .eager.grad_mode import enable_grad, no_grad
from .errors import ArgumentError

__all__ = [
    "Binomial", "Chi2", "Geometric", "Gumbel", "LogitRelaxedBernoulli", "Pareto",
    "RelaxedBernoulli", "StudentT", "Weibull",
]  # fmt: skip

_EULER = 0.57721566490153286060


def _binary(dist, probs, logits, *extra):
    """Sets `dist.probs` and `dist.logits` from exactly one of them (PyTorch's binary
    `probs_to_logits`/`logits_to_probs`), broadcast with the tensors `extra`; returns those."""
    kn = _kn()
    if (probs is None) == (logits is None):
        raise ArgumentError("Either `probs` or `logits` must be specified, but not both.")
    dist._given = "probs" if probs is not None else "logits"
    # (with grad even under no_grad: PyTorch computes the other parameterization lazily, in
    # enable_grad, so a distribution made under no_grad still differentiates log_prob)
    with enable_grad():
        param, *extra = _params(probs if probs is not None else logits, *extra)
        if probs is not None:
            dist.probs = param
            eps = kn.finfo(param.dtype).eps
            clamped = kn.clamp(param, min=eps, max=1 - eps)
            dist.logits = kn.log(clamped) - kn.log1p(-clamped)
        else:
            dist.logits, dist.probs = param, kn.sigmoid(param)
    dist._param = param
    return extra


class Chi2(Gamma):
    """The chi-squared distribution of `df` degrees of freedom: Gamma(df / 2, 1 / 2).

    >>> import kiln as kn
    >>> kn.distributions.Chi2(kn.tensor(4.0)).mean
    tensor(4.)
    """

    arg_constraints = {"df": constraints.positive}

    def __init__(self, df, validate_args=None):
        (df,) = _params(df)
        super().__init__(0.5 * df, 0.5, validate_args=validate_args)

    def _checked_params(self):
        return ["df"]

    df = property(lambda self: self.concentration * 2)
    _expanded = ("concentration", "rate")


class StudentT(Distribution):
    """Student's t distribution of `df` degrees of freedom, `loc` and `scale`; `rsample`
    divides a normal draw by a Chi2 one.

    >>> import kiln as kn
    >>> kn.distributions.StudentT(kn.tensor(3.0), 1.0, 2.0).variance
    tensor(12.)
    """

    has_rsample = True
    arg_constraints = {"df": constraints.positive, "loc": constraints.real,
                       "scale": constraints.positive}  # fmt: skip
    support = constraints.real

    def __init__(self, df, loc=0.0, scale=1.0, validate_args=None):
        self.df, self.loc, self.scale = _params(df, loc, scale)
        self._chi2 = Chi2(self.df)
        super().__init__(self.df.shape, validate_args=validate_args)

    @property
    def mean(self):
        return _kn().where(self.df <= 1, math.nan, self.loc)

    mode = property(lambda self: self.loc)

    @property
    def variance(self):
        kn, df = _kn(), self.df
        finite = self.scale.pow(2) * df / kn.where(df > 2, df - 2, 1.0)
        return kn.where(df > 2, finite, kn.where(df > 1, math.inf, math.nan))

    def rsample(self, sample_shape=()):
        kn = _kn()
        shape = self._extended_shape(sample_shape)
        x = kn.randn(shape, dtype=self.df.dtype, device=self.df.device)
        z = self._chi2.rsample(sample_shape)
        return self.loc + self.scale * x * kn.rsqrt(z / self.df)

    def log_prob(self, value):
        kn = _kn()
        y = (_tensor(value, self.loc) - self.loc) / self.scale
        z = (self.scale.log() + 0.5 * self.df.log() + 0.5 * math.log(math.pi)
             + kn.lgamma(0.5 * self.df) - kn.lgamma(0.5 * (self.df + 1.0)))  # fmt: skip
        return -0.5 * (self.df + 1.0) * kn.log1p(y**2.0 / self.df) - z

    def entropy(self):
        kn, df = _kn(), self.df
        lbeta = kn.lgamma(0.5 * df) + math.lgamma(0.5) - kn.lgamma(0.5 * (df + 1))
        return (self.scale.log()
                + 0.5 * (df + 1) * (kn.digamma(0.5 * (df + 1)) - kn.digamma(0.5 * df))
                + 0.5 * df.log() + lbeta)  # fmt: skip


class _ParamsTransformed(TransformedDistribution):
    """A TransformedDistribution whose own parameters `expand` expands too."""

    def expand(self, batch_shape, _instance=None):
        new = super().expand(batch_shape)
        n = len(self._batch_shape)
        for name in self.arg_constraints:
            value = self.__dict__.get(name)
            if value is not None:
                setattr(new, name, value.expand(new._batch_shape + value.shape[n:]))
        return new


class Gumbel(_ParamsTransformed):
    """The Gumbel distribution of `loc` and `scale`: `loc - scale log(-log u)`.

    >>> import kiln as kn
    >>> kn.distributions.Gumbel(0.0, 2.0).entropy()
    tensor(2.2704)
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real

    def __init__(self, loc, scale, validate_args=None):
        kn = _kn()
        self.loc, self.scale = _params(loc, scale)
        finfo = kn.finfo(self.loc.dtype)
        base = Uniform(kn.full_like(self.loc, finfo.tiny), kn.full_like(self.loc, 1 - finfo.eps),
                       validate_args=validate_args)  # fmt: skip
        transforms = [ExpTransform().inv, AffineTransform(0, -kn.ones_like(self.scale)),
                      ExpTransform().inv, AffineTransform(self.loc, -self.scale)]  # fmt: skip
        super().__init__(base, transforms, validate_args=validate_args)

    def log_prob(self, value):
        y = (self.loc - _tensor(value, self.loc)) / self.scale
        return (y - y.exp()) - self.scale.log()

    mean = property(lambda self: self.loc + self.scale * _EULER)
    mode = property(lambda self: self.loc)
    stddev = property(lambda self: (math.pi / math.sqrt(6)) * self.scale)
    variance = property(lambda self: self.stddev.pow(2))

    def entropy(self):
        return self.scale.log() + (1 + _EULER)


class Weibull(_ParamsTransformed):
    """The Weibull distribution of `scale` and `concentration`: `scale * e ** (1 / k)` for
    `e ~ Exponential(1)`.

    >>> import kiln as kn
    >>> kn.distributions.Weibull(kn.tensor(1.0), kn.tensor(2.0)).log_prob(kn.tensor(1.0))
    tensor(-0.3069)
    """

    arg_constraints = {"scale": constraints.positive, "concentration": constraints.positive}
    support = constraints.positive

    def __init__(self, scale, concentration, validate_args=None):
        kn = _kn()
        self.scale, self.concentration = _params(scale, concentration)
        self.concentration_reciprocal = self.concentration.reciprocal()
        base = Exponential(kn.ones_like(self.scale), validate_args=validate_args)
        transforms = [PowerTransform(exponent=self.concentration_reciprocal),
                      AffineTransform(loc=0, scale=self.scale)]  # fmt: skip
        super().__init__(base, transforms, validate_args=validate_args)

    _expanded = ("concentration_reciprocal",)

    @property
    def mean(self):
        return self.scale * _kn().lgamma(1 + self.concentration_reciprocal).exp()

    @property
    def mode(self):
        k = self.concentration
        return self.scale * ((k - 1) / k) ** k.reciprocal()

    @property
    def variance(self):
        kn, r = _kn(), self.concentration_reciprocal
        return self.scale.pow(2) * (kn.lgamma(1 + 2 * r).exp() - (2 * kn.lgamma(1 + r)).exp())

    def entropy(self):
        r = self.concentration_reciprocal
        return _EULER * (1 - r) + (self.scale * r).log() + 1


class Pareto(_ParamsTransformed):
    """The Pareto (type I) distribution of `scale` and `alpha`: `scale * exp(e)` for
    `e ~ Exponential(alpha)`.

    >>> import kiln as kn
    >>> kn.distributions.Pareto(kn.tensor(1.0), kn.tensor(3.0)).mean
    tensor(1.5000)
    """

    arg_constraints = {"alpha": constraints.positive, "scale": constraints.positive}

    def __init__(self, scale, alpha, validate_args=None):
        self.scale, self.alpha = _params(scale, alpha)
        base = Exponential(self.alpha, validate_args=validate_args)
        transforms = [ExpTransform(), AffineTransform(loc=0, scale=self.scale)]
        super().__init__(base, transforms, validate_args=validate_args)

    @property
    def mean(self):
        a = self.alpha.clamp(min=1)
        return a * self.scale / (a - 1)

    mode = property(lambda self: self.scale)

    @property
    def variance(self):
        a = self.alpha.clamp(min=2)
        return self.scale.pow(2) * a / ((a - 1).pow(2) * (a - 2))

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        return constraints.greater_than_eq(self.scale)

    def entropy(self):
        return (self.scale / self.alpha).log() + (1 + self.alpha.reciprocal())


class Geometric(Distribution):
    """The number of failures before the first success of Bernoulli(`probs`) trials
    (`probs` or `logits`).

    >>> import kiln as kn
    >>> kn.distributions.Geometric(kn.tensor(0.25)).log_prob(kn.tensor(2.0))
    tensor(-1.9617)
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer
    _expanded = ("probs", "logits")

    def __init__(self, probs=None, logits=None, validate_args=None):
        kn = _kn()
        _binary(self, probs, logits)
        super().__init__(self._param.shape, validate_args=validate_args)
        if self._validate_args and probs is not None and isinstance(self.probs, kn.Tensor):
            if not bool((self.probs > 0).all()):
                raise ArgumentError(
                    f"Expected parameter probs ({type(self.probs).__name__} of shape "
                    f"{tuple(self.probs.shape)}) of distribution {self!r} to be positive but "
                    f"found invalid values:\n{self.probs}"
                )

    mean = property(lambda self: 1.0 / self.probs - 1.0)
    mode = property(lambda self: _kn().zeros_like(self.probs))
    variance = property(lambda self: (1.0 / self.probs - 1.0) / self.probs)

    def sample(self, sample_shape=()):
        kn = _kn()
        shape = self._extended_shape(sample_shape)
        tiny = kn.finfo(self.probs.dtype).tiny
        with no_grad():
            u = kn.rand(shape, dtype=self.probs.dtype, device=self.probs.device).clamp(min=tiny)
            return (u.log() / (-self.probs).log1p()).floor()

    def log_prob(self, value):
        kn = _kn()
        value = _tensor(value, self.probs)
        probs = kn.where((self.probs == 1) & (value == 0), 0.0, self.probs)
        return value * (-probs).log1p() + self.probs.log()

    def entropy(self):
        bce = _kn().nn.functional.binary_cross_entropy_with_logits
        return bce(self.logits, self.probs, reduction="none") / self.probs


class Binomial(Distribution):
    """The number of successes in `total_count` Bernoulli(`probs`) trials (`probs` or
    `logits`).

    >>> import kiln as kn
    >>> kn.distributions.Binomial(10, probs=kn.tensor(0.5)).log_prob(kn.tensor(5.0))
    tensor(-1.4020)
    """

    arg_constraints = {"total_count": constraints.nonnegative_integer,
                       "probs": constraints.unit_interval, "logits": constraints.real}  # fmt: skip
    has_enumerate_support = True
    _expanded = ("probs", "logits")

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        kn = _kn()
        if (probs is None) == (logits is None):
            raise ArgumentError("Either `probs` or `logits` must be specified, but not both.")
        param = _tensor(probs if probs is not None else logits)
        if not isinstance(total_count, (kn.Tensor, kn.Symbol)):
            total_count = kn.tensor(float(total_count), dtype=param.dtype)
        (count,) = _binary(self, probs, logits, total_count)
        self.total_count = count.to(self._param.dtype)
        super().__init__(self._param.shape, validate_args=validate_args)

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self.total_count)

    mean = property(lambda self: self.total_count * self.probs)
    variance = property(lambda self: self.total_count * self.probs * (1 - self.probs))
    param_shape = property(lambda self: self._param.shape)

    @property
    def mode(self):
        n = self.total_count
        return ((n + 1) * self.probs).floor().clamp(max=n)

    def sample(self, sample_shape=()):
        kn = _kn()
        shape = self._extended_shape(sample_shape)
        with no_grad():
            return kn.binomial(self.total_count.expand(shape), self.probs.expand(shape))

    def log_prob(self, value):
        kn = _kn()
        value, n, logits = _tensor(value, self.logits), self.total_count, self.logits
        clamp_by_zero = (logits.clamp(min=0) + logits - logits.clamp(max=0)) / 2
        normalize = (n * clamp_by_zero + n * kn.log1p((-logits.abs()).exp())
                     - kn.lgamma(n + 1))  # fmt: skip
        return value * logits - kn.lgamma(value + 1) - kn.lgamma(n - value + 1) - normalize

    def _homogeneous_count(self, what):
        count = int(self.total_count.max())
        if int(self.total_count.min()) != count:
            raise NotImplementedError(f"Inhomogeneous total count not supported by `{what}`.")
        return count

    def entropy(self):
        self._homogeneous_count("entropy")
        log_prob = self.log_prob(self.enumerate_support(False))
        return -(log_prob.exp() * log_prob).sum(0)

    def enumerate_support(self, expand=True):
        kn = _kn()
        count = self._homogeneous_count("enumerate_support")
        values = kn.arange(1 + count, dtype=self._param.dtype, device=self._param.device)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1, *self._batch_shape)) if expand else values


class LogitRelaxedBernoulli(Distribution):
    """The logit of a RelaxedBernoulli draw, of `temperature` and `probs` or `logits`.

    >>> import kiln as kn
    >>> m = kn.distributions.LogitRelaxedBernoulli(kn.tensor(0.5), logits=kn.tensor(0.0))
    >>> m.log_prob(kn.tensor(0.0))
    tensor(-2.0794)
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.real
    has_rsample = False  # (PyTorch's flag, though its rsample is reparameterized)
    _expanded = ("probs", "logits")

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        self.temperature = temperature
        _binary(self, probs, logits)
        super().__init__(self._param.shape, validate_args=validate_args)

    param_shape = property(lambda self: self._param.shape)

    def rsample(self, sample_shape=()):
        kn = _kn()
        shape = self._extended_shape(sample_shape)
        eps = kn.finfo(self.probs.dtype).eps
        probs = self.probs.expand(shape).clamp(min=eps, max=1 - eps)
        u = kn.rand(shape, dtype=probs.dtype, device=probs.device).clamp(min=eps, max=1 - eps)
        return (u.log() - (-u).log1p() + probs.log() - (-probs).log1p()) / self.temperature

    def log_prob(self, value):
        diff = self.logits - _tensor(value, self.logits) * self.temperature
        return _tensor(self.temperature, self.logits).log() + diff - 2 * diff.exp().log1p()


class RelaxedBernoulli(TransformedDistribution):
    """The Concrete (Gumbel-softmax) relaxation of Bernoulli(`probs` or `logits`) at
    `temperature`: values in (0, 1) with reparameterized draws.

    >>> import kiln as kn
    >>> m = kn.distributions.RelaxedBernoulli(kn.tensor(0.5), probs=kn.tensor(0.3))
    >>> m.log_prob(kn.tensor(0.2))
    tensor(-0.2528)
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        base = LogitRelaxedBernoulli(temperature, probs, logits)
        super().__init__(base, SigmoidTransform(), validate_args=validate_args)

    temperature = property(lambda self: self.base_dist.temperature)
    logits = property(lambda self: self.base_dist.logits)
    probs = property(lambda self: self.base_dist.probs)
