"""`kn.distributions`: PyTorch's `torch.distributions` names for the distributions policy
gradients and VAEs use, `Categorical`, `Normal`, `Bernoulli`, `MultivariateNormal`, `Uniform`
and `Independent` (and, from kiln/distributions_more.py, `Exponential`, `Laplace`,
`LogNormal`, `HalfNormal`, `Cauchy`, `Gamma`, `Beta`, `Dirichlet`, `Poisson`), `kl_divergence`
between them and `register_kl` for one's own, with PyTorch's parameters, properties and
formulas. Their methods are kiln ops on their parameters, so they work eagerly (gradients reach
the parameters through `log_prob`, `entropy` and `rsample`), in graph mode and under
`kn.compile`; `sample()` draws from kiln's generator (`kn.manual_seed`), not PyTorch's.

>>> import kiln as kn
>>> m = kn.distributions.Categorical(probs=kn.tensor([0.25, 0.75]))
>>> m.log_prob(kn.tensor(1)), m.entropy()
(tensor(-0.2877), tensor(0.5623))
"""

from __future__ import annotations

import math

from .array_types import Size
from .eager.grad_mode import no_grad
from .errors import ArgumentError

__all__ = [
    "Bernoulli", "Categorical", "Distribution", "Independent", "MultivariateNormal", "Normal",
    "Uniform", "kl_divergence", "register_kl",
]  # fmt: skip


def _kn():
    import kiln  # NOTE: lazy: kiln imports this module while it is being built

    return kiln


def _tensor(value, like=None):
    """`value` as a kiln value: Tensors and Symbols stay, numbers become tensors (of `like`'s
    dtype where given)."""
    kn = _kn()
    if isinstance(value, (kn.Tensor, kn.Symbol)):
        return value
    return kn.tensor(value, dtype=None if like is None else like.dtype)


class Distribution:
    """What the distributions share: `batch_shape`, `event_shape` and the sample shapes
    (PyTorch's `Distribution`)."""

    has_rsample = False
    has_enumerate_support = False

    def __init__(self, batch_shape=(), event_shape=(), validate_args=None):
        self._batch_shape = Size(batch_shape)
        self._event_shape = Size(event_shape)

    @property
    def batch_shape(self) -> Size:
        return self._batch_shape

    @property
    def event_shape(self) -> Size:
        return self._event_shape

    def _extended_shape(self, sample_shape=()) -> Size:
        return Size((*Size(sample_shape), *self._batch_shape, *self._event_shape))

    def sample(self, sample_shape=()):
        """A draw of shape `sample_shape + batch_shape + event_shape`, without gradient."""
        with no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=()):
        raise NotImplementedError(f"{type(self).__name__} has no reparameterized sample")

    def perplexity(self):
        """`exp(entropy())`."""
        return self.entropy().exp()

    def __repr__(self):
        return f"{type(self).__name__}()"


class Categorical(Distribution):
    """A distribution over `0 .. K-1` given by `probs` (normalized along the last dim) or
    `logits` (unnormalized log-probabilities), exactly one of them, as PyTorch's.

    >>> import kiln as kn
    >>> m = kn.distributions.Categorical(logits=kn.tensor([[1.0, 1.0], [1.0, 3.0]]).log())
    >>> m.probs
    tensor([[0.5000, 0.5000],
            [0.2500, 0.7500]])
    >>> m.batch_shape, m.sample((3,)).shape
    (kiln.Size([2]), kiln.Size([3, 2]))
    """

    def __init__(self, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ArgumentError("Either `probs` or `logits` must be specified, but not both.")
        kn = _kn()
        if probs is not None:
            probs = _tensor(probs)
            if probs.dim() < 1:
                raise ArgumentError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
            # PyTorch's probs_to_logits: the log of the probabilities clamped into (0, 1)
            eps = kn.finfo(self.probs.dtype).eps
            self.logits = kn.log(kn.clamp(self.probs, min=eps, max=1 - eps))
        else:
            logits = _tensor(logits)
            if logits.dim() < 1:
                raise ArgumentError("`logits` parameter must be at least one-dimensional.")
            self.logits = logits - logits.logsumexp(dim=-1, keepdim=True)
            self.probs = kn.softmax(self.logits, dim=-1)
        self._param = self.probs if probs is not None else self.logits
        self._num_events = self._param.shape[-1]
        super().__init__(self._param.shape[:-1], validate_args=validate_args)

    @property
    def param_shape(self) -> Size:
        return Size(self._param.shape)

    has_enumerate_support = True

    @property
    def mode(self):
        return self.probs.argmax(dim=-1)

    @property
    def mean(self):  # undefined for classes: NaN, as PyTorch's
        return _kn().full(self._extended_shape(), math.nan, dtype=self.probs.dtype)

    variance = stddev = mean

    def enumerate_support(self, expand=True):
        """The class indices `0 .. K-1` along a new first dim (expanded over batch_shape)."""
        kn = _kn()
        values = kn.arange(self._num_events).view((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1, *self._batch_shape)) if expand else values

    def expand(self, batch_shape):
        """The same distribution over the larger `batch_shape` (its parameters expanded)."""
        shape = (*Size(batch_shape), self._num_events)
        if self._param is self.probs:
            return Categorical(probs=self.probs.expand(shape))
        return Categorical(logits=self.logits.expand(shape))

    def sample(self, sample_shape=()):
        """Class indices (int64) of shape `sample_shape + batch_shape`."""
        kn = _kn()
        sample_shape = Size(sample_shape)
        with no_grad():
            probs_2d = self.probs.reshape(-1, self._num_events)
            draws = kn.multinomial(probs_2d, max(sample_shape.numel(), 1), True).T
        return draws.reshape(self._extended_shape(sample_shape))

    def log_prob(self, value):
        """The log-probability of each class index in `value` (broadcast with batch_shape)."""
        kn = _kn()
        value = _tensor(value).long().unsqueeze(-1)
        value, log_pmf = kn.broadcast_tensors(value, self.logits)
        value = value[..., :1]
        return log_pmf.gather(-1, value).squeeze(-1)

    def entropy(self):
        """`-sum(p log p)` over the classes (a zero probability adds 0)."""
        kn = _kn()
        logits = kn.clamp(self.logits, min=kn.finfo(self.logits.dtype).min)
        p_log_p = logits * self.probs
        return -p_log_p.sum(-1)

    def __repr__(self):
        kind = "probs" if self._param is self.probs else "logits"
        return f"Categorical({kind}: {self._param.shape})"


class Normal(Distribution):
    """The normal distribution of mean `loc` and standard deviation `scale` (broadcast
    together), as PyTorch's; `rsample` is `loc + eps * scale` (the reparameterization).

    >>> import kiln as kn
    >>> m = kn.distributions.Normal(kn.tensor([0.0, 1.0]), kn.tensor([1.0, 2.0]))
    >>> m.log_prob(kn.tensor([0.0, 1.0]))
    tensor([-0.9189, -1.6121])
    >>> m.entropy()
    tensor([1.4189, 2.1121])
    """

    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        kn = _kn()
        if isinstance(loc, (kn.Tensor, kn.Symbol)):
            scale = _tensor(scale, loc)
        else:  # a number: of scale's dtype, or both in the default float
            scale = _tensor(float(scale) if isinstance(scale, (int, float)) else scale)
            loc = _tensor(float(loc), scale)
        self.loc, self.scale = kn.broadcast_tensors(loc, scale)
        super().__init__(self.loc.shape, validate_args=validate_args)

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def stddev(self):
        return self.scale

    @property
    def variance(self):
        return self.scale.pow(2)

    def rsample(self, sample_shape=()):
        kn = _kn()
        shape = self._extended_shape(sample_shape)
        eps = kn.randn(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + eps * self.scale

    def log_prob(self, value):
        value = _tensor(value, self.loc)
        var = self.scale**2
        log_scale = self.scale.log()
        return -((value - self.loc) ** 2) / (2 * var) - log_scale - math.log(math.sqrt(2 * math.pi))

    def entropy(self):
        return 0.5 + 0.5 * math.log(2 * math.pi) + self.scale.log()

    def cdf(self, value):
        kn = _kn()
        value = _tensor(value, self.loc)
        return 0.5 * (1 + kn.erf((value - self.loc) * self.scale.reciprocal() / math.sqrt(2)))

    def icdf(self, value):
        kn = _kn()
        value = _tensor(value, self.loc)
        return self.loc + self.scale * kn.erfinv(2 * value - 1) * math.sqrt(2)

    def expand(self, batch_shape):
        """The same distribution over the larger `batch_shape` (its parameters expanded)."""
        batch_shape = Size(batch_shape)
        return Normal(self.loc.expand(batch_shape), self.scale.expand(batch_shape))

    def __repr__(self):
        return f"Normal(loc: {self.loc.shape}, scale: {self.scale.shape})"


class Bernoulli(Distribution):
    """A distribution over {0, 1} given by `probs` or `logits` (exactly one), as PyTorch's;
    `log_prob` is minus `binary_cross_entropy_with_logits`.

    >>> import kiln as kn
    >>> m = kn.distributions.Bernoulli(probs=kn.tensor([0.25, 0.5]))
    >>> m.log_prob(kn.tensor([1.0, 0.0])), m.entropy()
    (tensor([-1.3863, -0.6931]), tensor([0.5623, 0.6931]))
    """

    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ArgumentError("Either `probs` or `logits` must be specified, but not both.")
        kn = _kn()
        if probs is not None:
            self.probs = _tensor(float(probs) if isinstance(probs, (int, float)) else probs)
            eps = kn.finfo(self.probs.dtype).eps  # PyTorch's probs_to_logits (is_binary)
            clamped = kn.clamp(self.probs, min=eps, max=1 - eps)
            self.logits = kn.log(clamped) - kn.log1p(-clamped)
        else:
            self.logits = _tensor(float(logits) if isinstance(logits, (int, float)) else logits)
            self.probs = kn.sigmoid(self.logits)
        self._param = self.probs if probs is not None else self.logits
        super().__init__(self._param.shape, validate_args=validate_args)

    @property
    def param_shape(self) -> Size:
        return Size(self._param.shape)

    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        kn = _kn()
        mode = (self.probs >= 0.5).to(self.probs.dtype)
        return kn.where(self.probs == 0.5, math.nan, mode)

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    @property
    def stddev(self):
        return self.variance.sqrt()

    def sample(self, sample_shape=()):
        kn = _kn()
        with no_grad():
            return kn.bernoulli(self.probs.expand(self._extended_shape(sample_shape)))

    def log_prob(self, value):
        kn = _kn()
        logits, value = kn.broadcast_tensors(self.logits, _tensor(value, self.logits))
        return -kn.nn.functional.binary_cross_entropy_with_logits(logits, value, reduction="none")

    def entropy(self):
        kn = _kn()
        return kn.nn.functional.binary_cross_entropy_with_logits(
            self.logits, self.probs, reduction="none"
        )

    def enumerate_support(self, expand=True):
        """0. and 1. along a new first dim (expanded over batch_shape)."""
        kn = _kn()
        values = kn.arange(2, dtype=self._param.dtype).view((-1,) + (1,) * len(self.batch_shape))
        return values.expand((-1, *self.batch_shape)) if expand else values

    def __repr__(self):
        kind = "probs" if self._param is self.probs else "logits"
        return f"Bernoulli({kind}: {self._param.shape})"


class Uniform(Distribution):
    """The uniform distribution on `[low, high)` (broadcast together), as PyTorch's; `rsample`
    is `low + u * (high - low)` with `u` uniform on [0, 1).

    >>> import kiln as kn
    >>> m = kn.distributions.Uniform(kn.tensor([0.0]), kn.tensor([4.0]))
    >>> m.log_prob(kn.tensor([1.0])), m.entropy(), m.cdf(kn.tensor([1.0]))
    (tensor([-1.3863]), tensor([1.3863]), tensor([0.2500]))
    """

    has_rsample = True

    def __init__(self, low, high, validate_args=None):
        kn = _kn()
        if isinstance(low, (kn.Tensor, kn.Symbol)):
            high = _tensor(high, low)
        else:
            high = _tensor(float(high) if isinstance(high, (int, float)) else high)
            low = _tensor(float(low), high)
        self.low, self.high = kn.broadcast_tensors(low, high)
        super().__init__(self.low.shape, validate_args=validate_args)

    @property
    def mean(self):
        return (self.high + self.low) / 2

    @property
    def mode(self):
        return self.high * math.nan

    @property
    def stddev(self):
        return (self.high - self.low) / 12**0.5

    @property
    def variance(self):
        return (self.high - self.low).pow(2) / 12

    def rsample(self, sample_shape=()):
        kn = _kn()
        shape = self._extended_shape(sample_shape)
        u = kn.rand(shape, dtype=self.low.dtype, device=self.low.device)
        return self.low + u * (self.high - self.low)

    def log_prob(self, value):
        value = _tensor(value, self.low)
        lb = (self.low <= value).to(self.low.dtype)
        ub = (self.high > value).to(self.low.dtype)
        return (lb * ub).log() - (self.high - self.low).log()

    def cdf(self, value):
        value = _tensor(value, self.low)
        return ((value - self.low) / (self.high - self.low)).clamp(min=0, max=1)

    def icdf(self, value):
        return _tensor(value, self.low) * (self.high - self.low) + self.low

    def entropy(self):
        return (self.high - self.low).log()

    def __repr__(self):
        return f"Uniform(low: {self.low.shape}, high: {self.high.shape})"


def _sum_rightmost(value, dim):
    return value.reshape(*value.shape[: value.dim() - dim], -1).sum(-1) if dim > 0 else value


class Independent(Distribution):
    """`base_distribution` with its last `reinterpreted_batch_ndims` batch dims read as event
    dims: `log_prob` and `entropy` sum over them, as PyTorch's.

    >>> import kiln as kn
    >>> d = kn.distributions
    >>> m = d.Independent(d.Normal(kn.zeros(3, 2), kn.ones(3, 2)), 1)
    >>> m.batch_shape, m.event_shape, m.log_prob(kn.zeros(3, 2)).shape
    (kiln.Size([3]), kiln.Size([2]), kiln.Size([3]))
    """

    def __init__(self, base_distribution, reinterpreted_batch_ndims, validate_args=None):
        n, shape = int(reinterpreted_batch_ndims), base_distribution.batch_shape
        if n > len(shape):
            raise ArgumentError(
                f"Expected reinterpreted_batch_ndims <= len(base_distribution.batch_shape), "
                f"actual {n} vs {len(shape)}"
            )
        self.base_dist = base_distribution
        self.reinterpreted_batch_ndims = n
        cut = len(shape) - n
        super().__init__(shape[:cut], shape[cut:] + base_distribution.event_shape)

    @property
    def has_rsample(self):
        return self.base_dist.has_rsample

    @property
    def mean(self):
        return self.base_dist.mean

    @property
    def mode(self):
        return self.base_dist.mode

    @property
    def variance(self):
        return self.base_dist.variance

    @property
    def stddev(self):
        return self.base_dist.stddev

    def sample(self, sample_shape=()):
        return self.base_dist.sample(sample_shape)

    def rsample(self, sample_shape=()):
        return self.base_dist.rsample(sample_shape)

    def log_prob(self, value):
        return _sum_rightmost(self.base_dist.log_prob(value), self.reinterpreted_batch_ndims)

    def entropy(self):
        return _sum_rightmost(self.base_dist.entropy(), self.reinterpreted_batch_ndims)

    def __repr__(self):
        return f"Independent({self.base_dist!r}, {self.reinterpreted_batch_ndims})"


class MultivariateNormal(Distribution):
    """The normal distribution over vectors of mean `loc`, given by exactly one of
    `covariance_matrix`, `precision_matrix` or `scale_tril` (its lower Cholesky factor),
    batched, as PyTorch's.

    >>> import kiln as kn
    >>> m = kn.distributions.MultivariateNormal(kn.zeros(2), kn.eye(2))
    >>> m.log_prob(kn.zeros(2)), m.entropy()
    (tensor(-1.8379), tensor(2.8379))
    """

    has_rsample = True

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args=None):  # fmt: skip
        kn = _kn()
        given = [m for m in (covariance_matrix, precision_matrix, scale_tril) if m is not None]
        if len(given) != 1:
            raise ArgumentError(
                "Exactly one of covariance_matrix or precision_matrix or scale_tril may be "
                "specified."
            )
        loc, matrix = _tensor(loc), _tensor(given[0])
        if loc.dim() < 1 or matrix.dim() < 2:
            raise ArgumentError(
                "loc must be at least one-dimensional and the matrix at least two-dimensional"
            )
        batch_shape = kn.broadcast_shapes(matrix.shape[:-2], loc.shape[:-1])
        if scale_tril is not None:
            tril = matrix
        elif covariance_matrix is not None:
            tril = kn.linalg.cholesky(matrix)
        else:  # PyTorch's _precision_to_scale_tril
            flipped = kn.linalg.cholesky(kn.flip(matrix, (-2, -1)))
            inverse = kn.flip(flipped, (-2, -1)).transpose(-2, -1)
            eye = kn.eye(matrix.shape[-1], dtype=matrix.dtype, device=matrix.device)
            tril = kn.linalg.solve_triangular(inverse, eye, upper=False)
        self._unbroadcasted_scale_tril = tril
        self.loc = loc.expand((*batch_shape, -1))
        super().__init__(batch_shape, loc.shape[-1:], validate_args=validate_args)

    @property
    def scale_tril(self):
        return self._unbroadcasted_scale_tril.expand(self._batch_shape + self._event_shape * 2)

    @property
    def covariance_matrix(self):
        tril = self._unbroadcasted_scale_tril
        return (tril @ tril.mT).expand(self._batch_shape + self._event_shape * 2)

    @property
    def precision_matrix(self):
        return (
            _kn()
            .cholesky_inverse(self._unbroadcasted_scale_tril)
            .expand(self._batch_shape + self._event_shape * 2)
        )

    @property
    def mean(self):
        return self.loc

    mode = mean

    @property
    def variance(self):
        shape = self._batch_shape + self._event_shape
        return self._unbroadcasted_scale_tril.pow(2).sum(-1).expand(shape)

    @property
    def stddev(self):
        return self.variance.sqrt()

    def rsample(self, sample_shape=()):
        kn = _kn()
        shape = self._extended_shape(sample_shape)
        eps = kn.randn(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + (self._unbroadcasted_scale_tril @ eps.unsqueeze(-1)).squeeze(-1)

    def _half_log_det(self):
        return self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)

    def log_prob(self, value):
        diff = _tensor(value, self.loc) - self.loc
        m = _mahalanobis(self._unbroadcasted_scale_tril, diff)
        n = self._event_shape[0]
        return -0.5 * (n * math.log(2 * math.pi) + m) - self._half_log_det()

    def entropy(self):
        n = self._event_shape[0]
        h = 0.5 * n * (1.0 + math.log(2 * math.pi)) + self._half_log_det()
        return h if not self._batch_shape else h.expand(self._batch_shape)

    def __repr__(self):
        return f"MultivariateNormal(loc: {self.loc.shape})"


def _mahalanobis(tril, x):
    """`|tril^-1 x|^2` over the last dim, batched: PyTorch's `_batch_mahalanobis`."""
    kn = _kn()
    shape = kn.broadcast_shapes(tril.shape[:-2], x.shape[:-1])
    tril = tril.expand((*shape, *tril.shape[-2:]))
    x = x.expand((*shape, x.shape[-1]))
    return kn.linalg.solve_triangular(tril, x.unsqueeze(-1), upper=False).squeeze(-1).pow(2).sum(-1)


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


_KL = {
    (Normal, Normal): _kl_normal,
    (Categorical, Categorical): _kl_categorical,
    (Bernoulli, Bernoulli): _kl_bernoulli,
    (Independent, Independent): _kl_independent,
    (MultivariateNormal, MultivariateNormal): _kl_mvn,
    (Uniform, Uniform): _kl_uniform,
}


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
        pairs = ((a, b) for a in type(p).__mro__ for b in type(q).__mro__)
        rule = next((_KL[pair] for pair in pairs if pair in _KL), None)
    if rule is None:
        raise NotImplementedError(
            f"No KL(p || q) is implemented for p = {type(p).__name__}, q = {type(q).__name__}"
        )
    return rule(p, q)


# The priors and likelihoods of scientific code live in their own module (it imports this one).
from .distributions_more import *  # noqa: E402, F403
from .distributions_more import KL_RULES as _MORE_KL  # noqa: E402
from .distributions_more import __all__ as _more_all  # noqa: E402

_KL.update(_MORE_KL)
__all__ += _more_all
