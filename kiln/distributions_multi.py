"""Distributions over vectors and mixtures from PyTorch's `torch.distributions`:
`MultivariateNormal`, `OneHotCategorical` (and its `StraightThrough` form), `Multinomial`,
`MixtureSameFamily` and `LowRankMultivariateNormal`, with PyTorch's parameters, constraints
and formulas.

>>> import kiln as kn
>>> d = kn.distributions
>>> d.Multinomial(4, probs=kn.tensor([0.5, 0.5])).log_prob(kn.tensor([2.0, 2.0]))
tensor(-0.9808)
"""

from __future__ import annotations

import math

from . import distributions_constraints as constraints
from .array_types import Size
from .distributions import Categorical, Distribution, _kn, _tensor
from .distributions_extra import Binomial
from .eager.grad_mode import no_grad
from .errors import ArgumentError

__all__ = [
    "LowRankMultivariateNormal", "MixtureSameFamily", "Multinomial", "MultivariateNormal",
    "OneHotCategorical", "OneHotCategoricalStraightThrough",
]  # fmt: skip


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
        self.loc = loc.expand((*batch_shape, -1))
        if validate_args is not False and (validate_args or self._validate_args):
            kind = ("scale_tril" if scale_tril is not None else "covariance_matrix"
                    if covariance_matrix is not None else "precision_matrix")  # fmt: skip
            self._check_param(kind, matrix, self.arg_constraints[kind])
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
        super().__init__(batch_shape, loc.shape[-1:], validate_args=validate_args)

    arg_constraints = {
        "loc": constraints.real_vector, "covariance_matrix": constraints.positive_definite,
        "precision_matrix": constraints.positive_definite,
        "scale_tril": constraints.lower_cholesky,
    }  # fmt: skip
    support = constraints.real_vector

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


def _mahalanobis(tril, x):
    """`|tril^-1 x|^2` over the last dim, batched: PyTorch's `_batch_mahalanobis`."""
    kn = _kn()
    shape = kn.broadcast_shapes(tril.shape[:-2], x.shape[:-1])
    tril = tril.expand((*shape, *tril.shape[-2:]))
    x = x.expand((*shape, x.shape[-1]))
    return kn.linalg.solve_triangular(tril, x.unsqueeze(-1), upper=False).squeeze(-1).pow(2).sum(-1)


class OneHotCategorical(Distribution):
    """A Categorical whose values are one-hot vectors of its `K` classes.

    >>> import kiln as kn
    >>> m = kn.distributions.OneHotCategorical(probs=kn.tensor([0.25, 0.75]))
    >>> m.log_prob(kn.tensor([0.0, 1.0])), m.mode
    (tensor(-0.2877), tensor([0., 1.]))
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.one_hot
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        self._categorical = Categorical(probs, logits, validate_args=validate_args)
        shape = self._categorical.param_shape
        super().__init__(shape[:-1], shape[-1:], validate_args=validate_args)

    _param = property(lambda self: self._categorical._param)
    probs = property(lambda self: self._categorical.probs)
    logits = property(lambda self: self._categorical.logits)
    mean = property(lambda self: self._categorical.probs)
    variance = property(lambda self: self.probs * (1 - self.probs))
    param_shape = property(lambda self: self._categorical.param_shape)

    @property
    def mode(self):
        probs = self.probs
        one_hot = _kn().nn.functional.one_hot(probs.argmax(-1), probs.shape[-1])
        return one_hot.to(probs.dtype)

    def sample(self, sample_shape=()):
        kn = _kn()
        indices = self._categorical.sample(sample_shape)
        return kn.nn.functional.one_hot(indices, self._categorical._num_events).to(self.probs.dtype)

    def log_prob(self, value):
        return self._categorical.log_prob(_tensor(value).argmax(-1))

    def entropy(self):
        return self._categorical.entropy()

    def enumerate_support(self, expand=True):
        kn, n = _kn(), self._event_shape[0]
        values = kn.eye(n, dtype=self._param.dtype, device=self._param.device)
        values = values.view((n,) + (1,) * len(self._batch_shape) + (n,))
        return values.expand((n, *self._batch_shape, n)) if expand else values


class OneHotCategoricalStraightThrough(OneHotCategorical):
    """A OneHotCategorical whose `rsample` passes gradients straight through to `probs`.

    >>> import kiln as kn
    >>> p = kn.tensor([0.2, 0.8], requires_grad=True)
    >>> m = kn.distributions.OneHotCategoricalStraightThrough(p)
    >>> (m.rsample() * kn.tensor([1.0, 0.0])).sum().backward(); p.grad
    tensor([ 0.8000, -0.2000])
    """

    has_rsample = True

    def rsample(self, sample_shape=()):
        samples = self.sample(sample_shape)
        probs = self.probs
        return samples + (probs - probs.detach())


class Multinomial(Distribution):
    """The counts of `total_count` draws of a Categorical(`probs` or `logits`).

    >>> import kiln as kn
    >>> m = kn.distributions.Multinomial(10, probs=kn.tensor([0.2, 0.8]))
    >>> m.mean, m.sample().sum().item()
    (tensor([2., 8.]), 10.0)
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._categorical = Categorical(probs=probs, logits=logits, validate_args=validate_args)
        self._binomial = Binomial(total_count=total_count, probs=self.probs)
        shape = self._categorical.param_shape
        super().__init__(shape[:-1], shape[-1:], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = super().expand(batch_shape)
        new._binomial = Binomial(total_count=self.total_count, probs=new.probs)
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self):
        return constraints.multinomial(self.total_count)

    probs = property(lambda self: self._categorical.probs)
    logits = property(lambda self: self._categorical.logits)
    param_shape = property(lambda self: self._categorical.param_shape)
    mean = property(lambda self: self.probs * self.total_count)
    variance = property(lambda self: self.total_count * self.probs * (1 - self.probs))

    def sample(self, sample_shape=()):
        kn = _kn()
        sample_shape = Size(sample_shape)
        with no_grad():
            draws = self._categorical.sample(Size((self.total_count,)) + sample_shape)
            one_hot = kn.nn.functional.one_hot(draws, self._event_shape[0])
            return one_hot.sum(0).to(self.probs.dtype)

    def entropy(self):
        kn = _kn()
        n = kn.tensor(float(self.total_count), dtype=self.probs.dtype)
        term1 = n * self._categorical.entropy() - kn.lgamma(n + 1)
        support = self._binomial.enumerate_support(expand=False)[1:]
        binomial_probs = self._binomial.log_prob(support).exp()
        term2 = (binomial_probs * kn.lgamma(support + 1)).sum([0, -1])
        return term1 + term2

    def log_prob(self, value):
        kn = _kn()
        value = _tensor(value, self.logits)
        logits, value = kn.broadcast_tensors(self.logits, value)
        log_factorial_n = kn.lgamma(value.sum(-1) + 1)
        log_factorial_xs = kn.lgamma(value + 1).sum(-1)
        logits = kn.where((value == 0) & (logits == -math.inf), 0.0, logits)
        return log_factorial_n - log_factorial_xs + (logits * value).sum(-1)


class MixtureSameFamily(Distribution):
    """A mixture of the `component_distribution`'s last batch dim (its `k` components)
    weighted by the Categorical `mixture_distribution`.

    >>> import kiln as kn
    >>> d = kn.distributions
    >>> mix = d.Categorical(probs=kn.tensor([0.5, 0.5]))
    >>> m = d.MixtureSameFamily(mix, d.Normal(kn.tensor([-1.0, 1.0]), kn.tensor([1.0, 1.0])))
    >>> m.mean, m.variance
    (tensor(0.), tensor(2.))
    """

    arg_constraints: dict = {}
    has_rsample = False

    def __init__(self, mixture_distribution, component_distribution, validate_args=None):
        if not isinstance(mixture_distribution, Categorical):
            raise ArgumentError(" The Mixture distribution needs to be an  instance of "
                                "kiln.distributions.Categorical")  # fmt: skip
        if not isinstance(component_distribution, Distribution):
            raise ArgumentError("The Component distribution needs to be an instance of "
                                "kiln.distributions.Distribution")  # fmt: skip
        self._mixture_distribution = mixture_distribution
        self._component_distribution = component_distribution
        mdbs, cdbs = mixture_distribution.batch_shape, component_distribution.batch_shape[:-1]
        for a, b in zip(reversed(mdbs), reversed(cdbs)):
            if a != 1 and b != 1 and a != b:
                raise ArgumentError(f"`mixture_distribution.batch_shape` ({mdbs}) is not "
                                    f"compatible with `component_distribution.batch_shape`"
                                    f"({cdbs})")  # fmt: skip
        km = mixture_distribution.logits.shape[-1]
        kc = component_distribution.batch_shape[-1]
        if km != kc:
            raise ArgumentError(f"`mixture_distribution component` ({km}) does not equal "
                                f"`component_distribution.batch_shape[-1]` ({kc})")  # fmt: skip
        self._num_component = km
        event_shape = component_distribution.event_shape
        self._event_ndims = len(event_shape)
        super().__init__(cdbs, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        batch_shape = Size(batch_shape)
        new = self._new_for_expand(_instance)
        new._component_distribution = self._component_distribution.expand(
            batch_shape + (self._num_component,)
        )
        new._mixture_distribution = self._mixture_distribution.expand(batch_shape)
        new._batch_shape = batch_shape
        return new

    @constraints.dependent_property
    def support(self):
        return constraints.MixtureSameFamilyConstraint(self._component_distribution.support)

    mixture_distribution = property(lambda self: self._mixture_distribution)
    component_distribution = property(lambda self: self._component_distribution)

    @property
    def mean(self):
        probs = self._pad_mixture_dimensions(self.mixture_distribution.probs)
        return (probs * self.component_distribution.mean).sum(-1 - self._event_ndims)

    @property
    def variance(self):
        probs = self._pad_mixture_dimensions(self.mixture_distribution.probs)
        comp = self.component_distribution
        mean_cond_var = (probs * comp.variance).sum(-1 - self._event_ndims)
        spread = (comp.mean - self._pad(self.mean)).pow(2.0)
        return mean_cond_var + (probs * spread).sum(-1 - self._event_ndims)

    def cdf(self, x):
        cdf_x = self.component_distribution.cdf(self._pad(x))
        return (cdf_x * self.mixture_distribution.probs).sum(-1)

    def log_prob(self, x):
        kn = _kn()
        log_prob_x = self.component_distribution.log_prob(self._pad(_tensor(x)))
        log_mix_prob = kn.log_softmax(self.mixture_distribution.logits, dim=-1)
        return kn.logsumexp(log_prob_x + log_mix_prob, dim=-1)

    def sample(self, sample_shape=()):
        kn = _kn()
        sample_shape = Size(sample_shape)
        with no_grad():
            gather_dim = len(sample_shape) + len(self.batch_shape)
            es = self.event_shape
            mixture = self.mixture_distribution
            if mixture.batch_shape != self.batch_shape:  # a scalar mixture over a batch
                mixture = mixture.expand(self.batch_shape)
            mix_sample = mixture.sample(sample_shape)
            comp_samples = self.component_distribution.sample(sample_shape)
            index = mix_sample.reshape(*mix_sample.shape, *([1] * (len(es) + 1)))
            index = index.expand(*mix_sample.shape, 1, *es)
            return kn.gather(comp_samples, gather_dim, index).squeeze(gather_dim)

    def _pad(self, x):
        return x.unsqueeze(-1 - self._event_ndims)

    def _pad_mixture_dimensions(self, x):
        dist_ndims = len(self.batch_shape)
        cat_ndims = len(self.mixture_distribution.batch_shape)
        pad = 0 if cat_ndims == 1 else dist_ndims - cat_ndims
        xs = x.shape
        return x.reshape(*xs[:-1], *([1] * pad), xs[-1], *([1] * self._event_ndims))

    def __repr__(self):
        return (f"MixtureSameFamily(\n  {self.mixture_distribution},\n  "
                f"{self.component_distribution})")  # fmt: skip


def _capacitance_tril(w, d):
    """The Cholesky factor of `I + W^T D^-1 W`."""
    kn = _kn()
    k = (w.mT / d.unsqueeze(-2)) @ w
    return kn.linalg.cholesky(k + kn.eye(w.shape[-1], dtype=w.dtype, device=w.device))


def _lowrank_logdet(w, d, capacitance_tril):
    return 2 * capacitance_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1) + d.log().sum(-1)


def _lowrank_mahalanobis(w, d, x, capacitance_tril):
    wt_dinv_x = ((w.mT / d.unsqueeze(-2)) @ x.unsqueeze(-1)).squeeze(-1)
    return (x.pow(2) / d).sum(-1) - _mahalanobis(capacitance_tril, wt_dinv_x)


class LowRankMultivariateNormal(Distribution):
    """The normal distribution over vectors of mean `loc` and covariance
    `cov_factor @ cov_factor.mT + diag(cov_diag)`, through the Woodbury identity.

    >>> import kiln as kn
    >>> m = kn.distributions.LowRankMultivariateNormal(kn.zeros(2), kn.ones(2, 1), kn.ones(2))
    >>> m.covariance_matrix
    tensor([[2., 1.],
            [1., 2.]])
    """

    arg_constraints = {
        "loc": constraints.real_vector,
        "cov_factor": constraints.independent(constraints.real, 2),
        "cov_diag": constraints.independent(constraints.positive, 1),
    }
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, cov_factor, cov_diag, validate_args=None):
        kn = _kn()
        loc, cov_factor, cov_diag = _tensor(loc), _tensor(cov_factor), _tensor(cov_diag)
        if loc.dim() < 1:
            raise ArgumentError("loc must be at least one-dimensional.")
        event_shape = loc.shape[-1:]
        if cov_factor.dim() < 2:
            raise ArgumentError("cov_factor must be at least two-dimensional, with optional "
                                "leading batch dimensions")  # fmt: skip
        if cov_factor.shape[-2:-1] != event_shape:
            raise ArgumentError(
                f"cov_factor must be a batch of matrices with shape {event_shape[0]} x m"
            )
        if cov_diag.shape[-1:] != event_shape:
            raise ArgumentError(f"cov_diag must be a batch of vectors with shape {event_shape}")
        loc_, self.cov_factor, cov_diag_ = kn.broadcast_tensors(
            loc.unsqueeze(-1), cov_factor, cov_diag.unsqueeze(-1)
        )
        self.loc, self.cov_diag = loc_[..., 0], cov_diag_[..., 0]
        self._unbroadcasted_cov_factor = cov_factor
        self._unbroadcasted_cov_diag = cov_diag
        self._capacitance_tril = _capacitance_tril(cov_factor, cov_diag)
        super().__init__(self.loc.shape[:-1], event_shape, validate_args=validate_args)

    mean = property(lambda self: self.loc)
    mode = property(lambda self: self.loc)

    def _full(self, value):
        return value.expand(self._batch_shape + self._event_shape * 2)

    @property
    def variance(self):
        w, d = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        return (w.pow(2).sum(-1) + d).expand(self._batch_shape + self._event_shape)

    @property
    def scale_tril(self):
        kn, n = _kn(), self._event_shape[0]
        d_sqrt = self._unbroadcasted_cov_diag.sqrt().unsqueeze(-1)
        dw = self._unbroadcasted_cov_factor / d_sqrt
        k = dw @ dw.mT + kn.eye(n, dtype=dw.dtype, device=dw.device)
        return self._full(d_sqrt * kn.linalg.cholesky(k))

    @property
    def covariance_matrix(self):
        kn, w = _kn(), self._unbroadcasted_cov_factor
        return self._full(w @ w.mT + kn.diag_embed(self._unbroadcasted_cov_diag))

    @property
    def precision_matrix(self):
        kn = _kn()
        w, d = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        a = kn.linalg.solve_triangular(self._capacitance_tril, w.mT / d.unsqueeze(-2),
                                       upper=False)  # fmt: skip
        return self._full(kn.diag_embed(d.reciprocal()) - a.mT @ a)

    def rsample(self, sample_shape=()):
        kn = _kn()
        shape = self._extended_shape(sample_shape)
        w_shape = shape[:-1] + self.cov_factor.shape[-1:]
        eps_w = kn.randn(w_shape, dtype=self.loc.dtype, device=self.loc.device)
        eps_d = kn.randn(shape, dtype=self.loc.dtype, device=self.loc.device)
        w = self._unbroadcasted_cov_factor
        return (self.loc + (w @ eps_w.unsqueeze(-1)).squeeze(-1)
                + self._unbroadcasted_cov_diag.sqrt() * eps_d)  # fmt: skip

    def _log_det(self):
        w, d = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        return _lowrank_logdet(w, d, self._capacitance_tril)

    def log_prob(self, value):
        diff = _tensor(value, self.loc) - self.loc
        w, d = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        m = _lowrank_mahalanobis(w, d, diff, self._capacitance_tril)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + self._log_det() + m)

    def entropy(self):
        h = 0.5 * (self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + self._log_det())
        return h if not self._batch_shape else h.expand(self._batch_shape)


def kl_lowrank(p, q):
    """KL between two LowRankMultivariateNormals (PyTorch's formula)."""
    kn = _kn()
    if p.event_shape != q.event_shape:
        raise ArgumentError("KL-divergence between two Low Rank Multivariate Normals with "
                            "different event shapes cannot be computed")  # fmt: skip
    qw, qd = q._unbroadcasted_cov_factor, q._unbroadcasted_cov_diag
    pw, pd = p._unbroadcasted_cov_factor, p._unbroadcasted_cov_diag
    term1 = q._log_det() - p._log_det()
    term3 = _lowrank_mahalanobis(qw, qd, q.loc - p.loc, q._capacitance_tril)
    a = kn.linalg.solve_triangular(q._capacitance_tril, qw.mT / qd.unsqueeze(-2), upper=False)

    def trace_xxt(x):
        return x.pow(2).sum((-2, -1))

    term2 = ((pd / qd).sum(-1) + trace_xxt(pw * qd.rsqrt().unsqueeze(-1))
             - trace_xxt(a * pd.sqrt().unsqueeze(-2)) - trace_xxt(a @ pw))  # fmt: skip
    return 0.5 * (term1 + term2 + term3 - p.event_shape[0])
