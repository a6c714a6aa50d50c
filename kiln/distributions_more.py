"""More of PyTorch's `torch.distributions`, for the priors and likelihoods of scientific
code: `Exponential`, `Laplace`, `LogNormal`, `HalfNormal`, `Cauchy`, `Gamma`, `Beta`,
`Dirichlet` and `Poisson`, with
PyTorch's parameters, constraints, properties and formulas (`kn.distributions` re-exports
them). Gamma draws come from `kn._standard_gamma`, whose gradient with respect to the
concentration is PyTorch's implicit reparameterization (`_standard_gamma_grad`), so Gamma,
Beta and Dirichlet have `rsample`; Beta and Dirichlet normalize Gamma draws.

>>> import kiln as kn
>>> kn.distributions.Gamma(kn.tensor(2.0), kn.tensor(3.0)).log_prob(kn.tensor(0.5))
tensor(0.0041)
"""

from __future__ import annotations

import math

from . import distributions_constraints as constraints
from .distributions import Distribution, ExponentialFamily, Normal, _kn, _tensor
from .distributions_transforms import AbsTransform, ExpTransform, TransformedDistribution

__all__ = [
    "Beta", "Cauchy", "Dirichlet", "Exponential", "Gamma", "HalfNormal", "Laplace", "LogNormal",
    "Poisson",
]  # fmt: skip


def _params(*values):
    """The parameters as kiln tensors of one dtype (numbers in the default float, or in the
    dtype of the first tensor among them), broadcast together."""
    kn = _kn()
    like = next((v for v in values if isinstance(v, (kn.Tensor, kn.Symbol))), None)
    values = [_tensor(float(v) if isinstance(v, (int, float)) else v, like) for v in values]
    return kn.broadcast_tensors(*values) if len(values) > 1 else values


class Exponential(ExponentialFamily):
    """The exponential distribution of `rate`, as PyTorch's; `rsample` is an exponential
    draw divided by the rate.

    >>> import kiln as kn
    >>> kn.distributions.Exponential(kn.tensor([2.0])).log_prob(kn.tensor([1.0]))
    tensor([-1.3069])
    """

    has_rsample = True
    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative

    def __init__(self, rate, validate_args=None):
        (self.rate,) = _params(rate)
        super().__init__(self.rate.shape, validate_args=validate_args)

    mean = property(lambda self: self.rate.reciprocal())
    mode = property(lambda self: _kn().zeros_like(self.rate))  # (a constant, as PyTorch's)
    stddev = property(lambda self: self.rate.reciprocal())
    variance = property(lambda self: self.rate.pow(-2))

    def rsample(self, sample_shape=()):
        kn = _kn()
        shape = self._extended_shape(sample_shape)
        draw = kn.empty(shape, dtype=self.rate.dtype, device=self.rate.device).exponential_()
        return draw / self.rate

    def log_prob(self, value):
        value = _tensor(value, self.rate)
        return self.rate.log() - self.rate * value

    def cdf(self, value):
        return 1 - (-self.rate * _tensor(value, self.rate)).exp()

    def icdf(self, value):
        return -(-_tensor(value, self.rate)).log1p() / self.rate

    def entropy(self):
        return 1.0 - self.rate.log()

    _mean_carrier_measure = 0
    _natural_params = property(lambda self: (-self.rate,))

    def _log_normalizer(self, x):
        return -(-x).log()


class Laplace(Distribution):
    """The Laplace distribution of `loc` and `scale`, as PyTorch's.

    >>> import kiln as kn
    >>> kn.distributions.Laplace(0.0, 1.0).log_prob(kn.tensor(1.0))
    tensor(-1.6931)
    """

    has_rsample = True
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = _params(loc, scale)
        super().__init__(self.loc.shape, validate_args=validate_args)

    mean = property(lambda self: self.loc)
    mode = property(lambda self: self.loc)
    stddev = property(lambda self: self.scale * 2**0.5)
    variance = property(lambda self: 2 * self.scale.pow(2))

    def rsample(self, sample_shape=()):
        kn = _kn()
        shape = self._extended_shape(sample_shape)
        eps = kn.finfo(self.loc.dtype).eps
        u = kn.empty(shape, dtype=self.loc.dtype, device=self.loc.device).uniform_(eps - 1, 1)
        return self.loc - self.scale * u.sign() * (-u.abs()).log1p()

    def log_prob(self, value):
        value = _tensor(value, self.loc)
        return -(2 * self.scale).log() - (value - self.loc).abs() / self.scale

    def cdf(self, value):
        z = _tensor(value, self.loc) - self.loc
        return 0.5 - 0.5 * z.sign() * (-z.abs() / self.scale).expm1()

    def icdf(self, value):
        term = _tensor(value, self.loc) - 0.5
        return self.loc - self.scale * term.sign() * (-2 * term.abs()).log1p()

    def entropy(self):
        return 1 + (2 * self.scale).log()


class LogNormal(TransformedDistribution):
    """The distribution of `exp(x)` for `x ~ Normal(loc, scale)`, as PyTorch's: a
    TransformedDistribution of that Normal by `ExpTransform`.

    >>> import kiln as kn
    >>> kn.distributions.LogNormal(0.0, 1.0).log_prob(kn.tensor(2.0))
    tensor(-1.8523)
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.positive

    def __init__(self, loc, scale, validate_args=None):
        base = Normal(*_params(loc, scale), validate_args=validate_args)
        super().__init__(base, ExpTransform(), validate_args=validate_args)

    loc = property(lambda self: self.base_dist.loc)
    scale = property(lambda self: self.base_dist.scale)
    mean = property(lambda self: (self.loc + self.scale.pow(2) / 2).exp())
    mode = property(lambda self: (self.loc - self.scale.pow(2)).exp())
    variance = property(
        lambda self: self.scale.pow(2).expm1() * (2 * self.loc + self.scale.pow(2)).exp()
    )

    def entropy(self):
        return self.base_dist.entropy() + self.loc


class HalfNormal(TransformedDistribution):
    """The distribution of `|x|` for `x ~ Normal(0, scale)`, as PyTorch's: a
    TransformedDistribution of that Normal by `AbsTransform`.

    >>> import kiln as kn
    >>> kn.distributions.HalfNormal(kn.tensor(1.0)).log_prob(kn.tensor(0.5))
    tensor(-0.3508)
    """

    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative

    def __init__(self, scale, validate_args=None):
        (scale,) = _params(scale)
        base = Normal(_kn().zeros_like(scale), scale, validate_args=validate_args)
        super().__init__(base, AbsTransform(), validate_args=validate_args)

    scale = property(lambda self: self.base_dist.scale)
    mean = property(lambda self: self.scale * math.sqrt(2 / math.pi))
    mode = property(lambda self: _kn().zeros_like(self.scale))  # (a constant, as PyTorch's)
    variance = property(lambda self: self.scale.pow(2) * (1 - 2 / math.pi))

    def log_prob(self, value):
        kn = _kn()
        value = _tensor(value, self.scale)
        log_prob = self.base_dist.log_prob(value) + math.log(2)
        return kn.where(value >= 0, log_prob, -math.inf)

    def cdf(self, value):
        return 2 * self.base_dist.cdf(value) - 1

    cdf._validates = True  # the base distribution's cdf validates

    def icdf(self, prob):
        return self.base_dist.icdf((_tensor(prob, self.scale) + 1) / 2)

    def entropy(self):
        return self.base_dist.entropy() - math.log(2)


class Cauchy(Distribution):
    """The Cauchy distribution of `loc` (its median) and `scale`, as PyTorch's (its mean is
    NaN and its variance inf).

    >>> import kiln as kn
    >>> kn.distributions.Cauchy(0.0, 1.0).log_prob(kn.tensor(0.0))
    tensor(-1.1447)
    """

    has_rsample = True
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = _params(loc, scale)
        super().__init__(self.loc.shape, validate_args=validate_args)

    mean = property(lambda self: _kn().full_like(self.loc, math.nan))  # (constants, as PyTorch's)
    mode = property(lambda self: self.loc)
    variance = property(lambda self: _kn().full_like(self.loc, math.inf))

    def rsample(self, sample_shape=()):
        kn = _kn()
        shape = self._extended_shape(sample_shape)
        u = kn.rand(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + self.scale * kn.tan(math.pi * (u - 0.5))

    def log_prob(self, value):
        z = (_tensor(value, self.loc) - self.loc) / self.scale
        return -math.log(math.pi) - self.scale.log() - z.pow(2).log1p()

    def cdf(self, value):
        return ((_tensor(value, self.loc) - self.loc) / self.scale).atan() / math.pi + 0.5

    def icdf(self, value):
        return (math.pi * (_tensor(value, self.loc) - 0.5)).tan() * self.scale + self.loc

    def entropy(self):
        return math.log(4 * math.pi) + self.scale.log()


def _tiny(value, high=None):
    """`value` at least the dtype's smallest normal number (at most `high` if given), its
    gradient kept (PyTorch clamps the draw in place, outside autograd). A select, not
    `value + (clamped - value).detach()`: that made an infinite draw NaN (inf - inf)."""
    kn = _kn()
    tiny = kn.finfo(value.dtype).tiny
    ahead = value - value.detach()  # 0, with value's gradient
    value = kn.where(value < tiny, ahead + tiny, value)
    return value if high is None else kn.where(value > high, ahead + high, value)


class Gamma(ExponentialFamily):
    """The gamma distribution of `concentration` and `rate`, as PyTorch's; `rsample`
    differentiates with respect to both (the implicit reparameterization for the
    concentration).

    >>> import kiln as kn
    >>> kn.distributions.Gamma(kn.tensor(2.0), kn.tensor(1.0)).entropy()
    tensor(1.5772)
    >>> kn.manual_seed(0); kn.distributions.Gamma(2.0, 1.0).rsample((2,)).shape
    kiln.Size([2])
    """

    has_rsample = True
    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative

    def __init__(self, concentration, rate, validate_args=None):
        self.concentration, self.rate = _params(concentration, rate)
        super().__init__(self.rate.shape, validate_args=validate_args)

    mean = property(lambda self: self.concentration / self.rate)
    mode = property(lambda self: ((self.concentration - 1) / self.rate).clamp(min=0))
    variance = property(lambda self: self.concentration / self.rate.pow(2))
    stddev = property(lambda self: self.variance.sqrt())

    def rsample(self, sample_shape=()):
        kn = _kn()
        shape = self._extended_shape(sample_shape)
        return _tiny(kn._standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape))

    def log_prob(self, value):
        kn = _kn()
        value = _tensor(value, self.rate)
        c, r = self.concentration, self.rate
        return kn.xlogy(c, r) + kn.xlogy(c - 1, value) - r * value - kn.lgamma(c)

    def cdf(self, value):
        return _kn().special.gammainc(self.concentration, self.rate * _tensor(value, self.rate))

    def entropy(self):
        kn = _kn()
        c = self.concentration
        return c - self.rate.log() + kn.lgamma(c) + (1.0 - c) * kn.digamma(c)

    _mean_carrier_measure = 0
    _natural_params = property(lambda self: (self.concentration - 1, -self.rate))

    def _log_normalizer(self, x, y):
        return _kn().lgamma(x + 1) + (x + 1) * (-y.reciprocal()).log()


class Dirichlet(ExponentialFamily):
    """The Dirichlet distribution over the simplex of the last dimension of `concentration`,
    as PyTorch's; `rsample` normalizes Gamma draws (differentiable in the concentration).

    >>> import kiln as kn
    >>> kn.distributions.Dirichlet(kn.ones(3)).log_prob(kn.tensor([0.2, 0.3, 0.5]))
    tensor(0.6931)
    """

    has_rsample = True
    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex

    def __init__(self, concentration, validate_args=None):
        (self.concentration,) = _params(concentration)
        if self.concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        shape = self.concentration.shape
        super().__init__(shape[:-1], shape[-1:], validate_args=validate_args)

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, True)

    @property
    def mode(self):
        """(c - 1) / sum(c - 1) with c - 1 clamped at 0; where every c < 1, PyTorch's one-hot
        of the argmax of those NaNs: the first category."""
        kn = _kn()
        c = (self.concentration - 1).clamp(min=0.0)
        every = (self.concentration < 1).all(-1, keepdim=True)
        mode = c / kn.where(every, 1.0, c.sum(-1, True))  # no 0/0 there: zero gradients
        first = (kn.arange(c.shape[-1], device=c.device) == 0).to(c.dtype)
        return kn.where(every, first, mode)

    @property
    def variance(self):
        c = self.concentration
        total = c.sum(-1, True)
        return c * (total - c) / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape=()):
        # as PyTorch's: the Gamma draws in float64, each at least its smallest normal number
        # (tiny concentrations draw zeros: 0 / 0 gave NaN), normalized there, and the result
        # kept inside [tiny, 1 - ulp] of its dtype
        c = self.concentration.expand(self._extended_shape(sample_shape))
        draws = _tiny(_kn()._standard_gamma(c.double()))
        x = (draws / draws.sum(-1, True)).to(c.dtype)
        return _tiny(x, high=1 - _kn().finfo(x.dtype).eps / 2)

    def log_prob(self, value):
        kn = _kn()
        c = self.concentration
        value = _tensor(value, c)
        return (kn.xlogy(c - 1.0, value).sum(-1) + kn.lgamma(c.sum(-1))
                - kn.lgamma(c).sum(-1))  # fmt: skip

    def entropy(self):
        kn = _kn()
        c = self.concentration
        k, total = c.shape[-1], c.sum(-1)
        return (kn.lgamma(c).sum(-1) - kn.lgamma(total) - (k - total) * kn.digamma(total)
                - ((c - 1.0) * kn.digamma(c)).sum(-1))  # fmt: skip

    _natural_params = property(lambda self: (self.concentration,))

    def _log_normalizer(self, x):
        kn = _kn()
        return kn.lgamma(x).sum(-1) - kn.lgamma(x.sum(-1))


class Beta(ExponentialFamily):
    """The beta distribution of `concentration1` (alpha) and `concentration0` (beta), as
    PyTorch's: a Dirichlet over (x, 1 - x), whose `rsample` it takes.

    >>> import kiln as kn
    >>> kn.distributions.Beta(2.0, 3.0).log_prob(kn.tensor(0.2))
    tensor(0.4292)
    """

    has_rsample = True
    arg_constraints = {"concentration1": constraints.positive,
                       "concentration0": constraints.positive}  # fmt: skip
    support = constraints.unit_interval

    def __init__(self, concentration1, concentration0, validate_args=None):
        kn = _kn()
        self.concentration1, self.concentration0 = _params(concentration1, concentration0)
        pair = kn.stack([self.concentration1, self.concentration0], -1)
        self._dirichlet = Dirichlet(pair, validate_args=validate_args)
        super().__init__(self._dirichlet.batch_shape, validate_args=validate_args)

    @property
    def mean(self):
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self):
        return self._dirichlet.mode[..., 0]

    @property
    def variance(self):
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape=()):
        return self._dirichlet.rsample(sample_shape).select(-1, 0)

    def log_prob(self, value):
        kn = _kn()
        value = _tensor(value, self.concentration1)
        return self._dirichlet.log_prob(kn.stack([value, 1.0 - value], -1))

    def entropy(self):
        return self._dirichlet.entropy()

    _natural_params = property(lambda self: (self.concentration1, self.concentration0))

    def _log_normalizer(self, x, y):
        kn = _kn()
        return kn.lgamma(x) + kn.lgamma(y) - kn.lgamma(x + y)


class Poisson(ExponentialFamily):
    """The Poisson distribution of `rate`, as PyTorch's; `sample` draws with `kn.poisson`.

    >>> import kiln as kn
    >>> kn.distributions.Poisson(kn.tensor(2.0)).log_prob(kn.tensor(3.0))
    tensor(-1.7123)
    """

    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    def __init__(self, rate, validate_args=None):
        (self.rate,) = _params(rate)
        super().__init__(self.rate.shape, validate_args=validate_args)

    mean = property(lambda self: self.rate)
    mode = property(lambda self: self.rate.floor())
    variance = property(lambda self: self.rate)

    def sample(self, sample_shape=()):
        kn = _kn()
        with kn.no_grad():
            return kn.poisson(self.rate.expand(self._extended_shape(sample_shape)))

    def log_prob(self, value):
        kn = _kn()
        value = _tensor(value, self.rate)
        return kn.xlogy(value, self.rate) - self.rate - kn.lgamma(value + 1)

    _natural_params = property(lambda self: (self.rate.log(),))

    def _log_normalizer(self, x):
        return x.exp()
