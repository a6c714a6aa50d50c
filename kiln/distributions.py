"""`kn.distributions`: PyTorch's `torch.distributions` names for the distributions policy
gradients and VAEs use, `Categorical` and `Normal`, with PyTorch's parameters, properties and
formulas. Their methods are kiln ops on their parameters, so they work eagerly (gradients
reach the parameters through `log_prob`, `entropy` and `rsample`), in graph mode and under
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

__all__ = ["Categorical", "Distribution", "Normal"]


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

    @property
    def mode(self):
        return self.probs.argmax(dim=-1)

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

    def __repr__(self):
        return f"Normal(loc: {self.loc.shape}, scale: {self.scale.shape})"
