"""PyTorch's `MixtureSameFamily`: a Categorical choice among the components of one
distribution batched along its rightmost batch dim (the likelihood of a mixture density
network), with PyTorch's shapes, formulas and refusals (`kn.distributions` re-exports it).

>>> import kiln as kn
>>> D = kn.distributions
>>> mix = D.MixtureSameFamily(D.Categorical(logits=kn.zeros(2)),
...                           D.Normal(kn.tensor([-1.0, 1.0]), kn.ones(2)))
>>> mix.mean, mix.variance
(tensor(0.), tensor(2.))
"""

from __future__ import annotations

from .array_types import Size
from .distributions import Categorical, Distribution, _kn
from .eager.grad_mode import no_grad
from .errors import ArgumentError

__all__ = ["MixtureSameFamily"]


class MixtureSameFamily(Distribution):
    """The mixture of the components of `component_distribution` (its rightmost batch dim
    indexes them) with weights from `mixture_distribution`, a Categorical whose batch shape
    broadcasts with the rest of the components' batch shape.

    >>> import kiln as kn
    >>> D = kn.distributions
    >>> mix = D.MixtureSameFamily(D.Categorical(logits=kn.zeros(3, 2)),
    ...                           D.Independent(D.Normal(kn.zeros(3, 2, 4), 1.0), 1))
    >>> mix.batch_shape, mix.event_shape, mix.log_prob(kn.zeros(3, 4)).shape
    (kiln.Size([3]), kiln.Size([4]), kiln.Size([3]))
    """

    has_rsample = False

    def __init__(self, mixture_distribution, component_distribution, validate_args=None):
        if not isinstance(mixture_distribution, Categorical):
            raise ArgumentError(
                "The Mixture distribution needs to be an instance of torch.distributions."
                "Categorical"
            )
        if not isinstance(component_distribution, Distribution):
            raise ArgumentError(
                "The Component distribution need to be an instance of torch.distributions."
                "Distribution"
            )
        self.mixture_distribution = mixture_distribution
        self.component_distribution = component_distribution
        mdbs = mixture_distribution.batch_shape
        cdbs = component_distribution.batch_shape[:-1]
        for m, c in zip(reversed(mdbs), reversed(cdbs)):
            if m != 1 and c != 1 and m != c:
                raise ArgumentError(
                    f"`mixture_distribution.batch_shape` ({mdbs}) is not compatible with "
                    f"`component_distribution.batch_shape`({cdbs})"
                )
        km = mixture_distribution.logits.shape[-1]
        kc = component_distribution.batch_shape[-1]
        if km != kc:
            raise ArgumentError(
                f"`mixture_distribution component` ({km}) does not equal "
                f"`component_distribution.batch_shape[-1]` ({kc})"
            )
        self._num_component = km
        event_shape = component_distribution.event_shape
        self._event_ndims = len(event_shape)
        super().__init__(cdbs, event_shape, validate_args)

    def _pad(self, x):
        """x with a dim for the components (before the event dims)."""
        return x.unsqueeze(-1 - self._event_ndims)

    def _pad_mixture_dimensions(self, x):
        """The mixture's probabilities broadcastable against the components' values."""
        dist_batch_ndims = len(self.batch_shape)
        cat_batch_ndims = len(self.mixture_distribution.batch_shape)
        pad_ndims = 0 if cat_batch_ndims == 1 else dist_batch_ndims - cat_batch_ndims
        shape = tuple(x.shape)
        return x.reshape(shape[:-1] + (1,) * pad_ndims + shape[-1:] + (1,) * self._event_ndims)

    @property
    def mean(self):
        probs = self._pad_mixture_dimensions(self.mixture_distribution.probs)
        return (probs * self.component_distribution.mean).sum(dim=-1 - self._event_ndims)

    @property
    def variance(self):
        """The law of total variance: the mean of the components' variances plus the
        variance of their means."""
        probs = self._pad_mixture_dimensions(self.mixture_distribution.probs)
        dim = -1 - self._event_ndims
        mean_cond_var = (probs * self.component_distribution.variance).sum(dim=dim)
        spread = (self.component_distribution.mean - self._pad(self.mean)).pow(2.0)
        return mean_cond_var + (probs * spread).sum(dim=dim)

    @property
    def stddev(self):
        return self.variance.sqrt()

    def cdf(self, x):
        cdf_x = self.component_distribution.cdf(self._pad(x))
        return (cdf_x * self.mixture_distribution.probs).sum(dim=-1)

    def log_prob(self, x):
        """`logsumexp` over the components of their log-density plus the log weight."""
        kn = _kn()
        log_prob_x = self.component_distribution.log_prob(self._pad(x))  # [S, B, k]
        log_mix_prob = kn.log_softmax(self.mixture_distribution.logits, dim=-1)  # [B, k]
        return kn.logsumexp(log_prob_x + log_mix_prob, dim=-1)

    def sample(self, sample_shape=()):
        """A component drawn from the mixture, then a draw of that component."""
        kn = _kn()
        sample_shape = Size(sample_shape)
        with no_grad():
            gather_dim = len(sample_shape) + len(self.batch_shape)
            es = tuple(self.event_shape)
            mix_sample = self.mixture_distribution.sample(sample_shape)
            mix_shape = tuple(mix_sample.shape)
            comp_samples = self.component_distribution.sample(sample_shape)
            index = mix_sample.reshape(mix_shape + (1,) * (len(es) + 1))
            index = index.repeat((1,) * len(mix_shape) + (1,) + es)
            return kn.gather(comp_samples, gather_dim, index).squeeze(gather_dim)

    def __repr__(self):
        return (
            f"MixtureSameFamily(\n  {self.mixture_distribution!r},\n  "
            f"{self.component_distribution!r})"
        )
