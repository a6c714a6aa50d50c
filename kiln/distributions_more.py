"""More of PyTorch's `torch.distributions`, for the priors and likelihoods of scientific
code: `Exponential`, `Laplace`, `LogNormal`, `HalfNormal`, `Cauchy`, `Gamma`, `Beta`,
`Dirichlet` and `Poisson`, with
PyTorch's parameters, properties and formulas (`kn.distributions` re-exports them). Gamma,
Beta and Dirichlet have `log_prob`, moments and `entropy`; kiln has no gamma sampler, so their
`sample` raises NotImplementedError.

>>> import kiln as kn
>>> kn.distributions.Gamma(kn.tensor(2.0), kn.tensor(3.0)).log_prob(kn.tensor(0.5))
tensor(0.0041)
"""

from __future__ import annotations

import math

from .distributions import Distribution, Normal, _kn, _tensor

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


class Exponential(Distribution):
    """The exponential distribution of `rate`, as PyTorch's; `rsample` is an exponential
    draw divided by the rate.

    >>> import kiln as kn
    >>> kn.distributions.Exponential(kn.tensor([2.0])).log_prob(kn.tensor([1.0]))
    tensor([-1.3069])
    """

    has_rsample = True

    def __init__(self, rate, validate_args=None):
        (self.rate,) = _params(rate)
        super().__init__(self.rate.shape, validate_args=validate_args)

    mean = property(lambda self: self.rate.reciprocal())
    mode = property(lambda self: self.rate * 0)
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


class Laplace(Distribution):
    """The Laplace distribution of `loc` and `scale`, as PyTorch's.

    >>> import kiln as kn
    >>> kn.distributions.Laplace(0.0, 1.0).log_prob(kn.tensor(1.0))
    tensor(-1.6931)
    """

    has_rsample = True

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


class LogNormal(Distribution):
    """The distribution of `exp(x)` for `x ~ Normal(loc, scale)`, as PyTorch's.

    >>> import kiln as kn
    >>> kn.distributions.LogNormal(0.0, 1.0).log_prob(kn.tensor(2.0))
    tensor(-1.8523)
    """

    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self.base_dist = Normal(*_params(loc, scale))
        self.loc, self.scale = self.base_dist.loc, self.base_dist.scale
        super().__init__(self.loc.shape, validate_args=validate_args)

    mean = property(lambda self: (self.loc + self.scale.pow(2) / 2).exp())
    mode = property(lambda self: (self.loc - self.scale.pow(2)).exp())
    variance = property(
        lambda self: self.scale.pow(2).expm1() * (2 * self.loc + self.scale.pow(2)).exp()
    )
    stddev = property(lambda self: self.variance.sqrt())

    def rsample(self, sample_shape=()):
        return self.base_dist.rsample(sample_shape).exp()

    def log_prob(self, value):
        log_value = _tensor(value, self.loc).log()
        return self.base_dist.log_prob(log_value) - log_value

    def cdf(self, value):
        return self.base_dist.cdf(_tensor(value, self.loc).log())

    def icdf(self, value):
        return self.base_dist.icdf(value).exp()

    def entropy(self):
        return self.base_dist.entropy() + self.loc


class HalfNormal(Distribution):
    """The distribution of `|x|` for `x ~ Normal(0, scale)`, as PyTorch's.

    >>> import kiln as kn
    >>> kn.distributions.HalfNormal(kn.tensor(1.0)).log_prob(kn.tensor(0.5))
    tensor(-0.3508)
    """

    has_rsample = True

    def __init__(self, scale, validate_args=None):
        (scale,) = _params(scale)
        self.base_dist = Normal(scale * 0, scale)
        self.scale = scale
        super().__init__(scale.shape, validate_args=validate_args)

    mean = property(lambda self: self.scale * math.sqrt(2 / math.pi))
    mode = property(lambda self: self.scale * 0)
    variance = property(lambda self: self.scale.pow(2) * (1 - 2 / math.pi))
    stddev = property(lambda self: self.variance.sqrt())

    def rsample(self, sample_shape=()):
        return self.base_dist.rsample(sample_shape).abs()

    def log_prob(self, value):
        kn = _kn()
        value = _tensor(value, self.scale)
        log_prob = self.base_dist.log_prob(value) + math.log(2)
        return kn.where(value >= 0, log_prob, -math.inf)

    def cdf(self, value):
        return 2 * self.base_dist.cdf(value) - 1

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

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = _params(loc, scale)
        super().__init__(self.loc.shape, validate_args=validate_args)

    mean = property(lambda self: self.loc * math.nan)
    mode = property(lambda self: self.loc)
    variance = property(lambda self: self.loc * 0 + math.inf)

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


def _no_sampler(dist):
    raise NotImplementedError(
        f"{type(dist).__name__}.sample: kiln has no gamma sampler (log_prob, entropy and the "
        "moments are available)"
    )


class Gamma(Distribution):
    """The gamma distribution of `concentration` and `rate`, as PyTorch's (no sampler).

    >>> import kiln as kn
    >>> kn.distributions.Gamma(kn.tensor(2.0), kn.tensor(1.0)).entropy()
    tensor(1.5772)
    """

    def __init__(self, concentration, rate, validate_args=None):
        self.concentration, self.rate = _params(concentration, rate)
        super().__init__(self.rate.shape, validate_args=validate_args)

    mean = property(lambda self: self.concentration / self.rate)
    mode = property(lambda self: ((self.concentration - 1) / self.rate).clamp(min=0))
    variance = property(lambda self: self.concentration / self.rate.pow(2))
    stddev = property(lambda self: self.variance.sqrt())

    def rsample(self, sample_shape=()):
        _no_sampler(self)

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


class Dirichlet(Distribution):
    """The Dirichlet distribution over the simplex of the last dimension of `concentration`,
    as PyTorch's (no sampler).

    >>> import kiln as kn
    >>> kn.distributions.Dirichlet(kn.ones(3)).log_prob(kn.tensor([0.2, 0.3, 0.5]))
    tensor(0.6931)
    """

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
        _no_sampler(self)

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


class Beta(Distribution):
    """The beta distribution of `concentration1` (alpha) and `concentration0` (beta), as
    PyTorch's: a Dirichlet over (x, 1 - x) (no sampler).

    >>> import kiln as kn
    >>> kn.distributions.Beta(2.0, 3.0).log_prob(kn.tensor(0.2))
    tensor(0.4292)
    """

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
        _no_sampler(self)

    def log_prob(self, value):
        kn = _kn()
        value = _tensor(value, self.concentration1)
        return self._dirichlet.log_prob(kn.stack([value, 1.0 - value], -1))

    def entropy(self):
        return self._dirichlet.entropy()


class Poisson(Distribution):
    """The Poisson distribution of `rate`, as PyTorch's; `sample` draws with `kn.poisson`.

    >>> import kiln as kn
    >>> kn.distributions.Poisson(kn.tensor(2.0)).log_prob(kn.tensor(3.0))
    tensor(-1.7123)
    """

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
    from .distributions import kl_divergence

    return kl_divergence(p.base_dist, q.base_dist)


KL_RULES = {
    (Laplace, Laplace): _kl_laplace,
    (Cauchy, Cauchy): _kl_cauchy,
    (HalfNormal, HalfNormal): _kl_base,
    (LogNormal, LogNormal): _kl_base,
    (Exponential, Exponential): _kl_exponential,
    (Gamma, Gamma): _kl_gamma,
    (Dirichlet, Dirichlet): _kl_dirichlet,
    (Beta, Beta): _kl_beta,
    (Poisson, Poisson): _kl_poisson,
}
