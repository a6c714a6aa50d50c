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

import functools
import math
import sys

import numpy as np

from . import distributions_constraints as constraints
from .array_types import Size
from .eager.grad_mode import enable_grad, no_grad
from .errors import ArgumentError

__all__ = [
    "Bernoulli", "Categorical", "Distribution", "ExponentialFamily", "Independent", "Normal",
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
    """What the distributions share: `batch_shape`, `event_shape`, the sample shapes,
    `expand`, and argument validation (PyTorch's `Distribution`): with `validate_args` (on
    unless `Distribution.set_default_validate_args(False)`), parameters outside their
    `arg_constraints` and `log_prob`/`cdf` values outside the `support` raise ValueError, as
    PyTorch's. Validation reads eager values only (a graph's symbols pass unchecked).

    >>> import kiln as kn
    >>> m = kn.distributions.Normal(kn.zeros(3), 1.0)
    >>> m.batch_shape, m.expand((2, 3)).sample().shape
    (kiln.Size([3]), kiln.Size([2, 3]))
    """

    has_rsample = False
    has_enumerate_support = False
    arg_constraints: dict = {}
    _validate_args = True

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Turns argument validation on or off for distributions created from now on."""
        if value not in (True, False):
            raise ValueError
        Distribution._validate_args = value

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for name in ("log_prob", "cdf"):
            fn = cls.__dict__.get(name)
            if fn is not None and not getattr(fn, "_validates", False):
                setattr(cls, name, _validating(fn))

    def __init__(self, batch_shape=(), event_shape=(), validate_args=None):
        self._batch_shape = Size(batch_shape)
        self._event_shape = Size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            for name in self._checked_params():
                self._check_param(name, getattr(self, name), self.arg_constraints[name])

    def _checked_params(self):
        """The parameters validation checks: those of `arg_constraints` set on the instance
        (the one given, of `probs` and `logits`)."""
        given = getattr(self, "_given", None)
        return [k for k in self.arg_constraints if k in self.__dict__
                and (given is None or k not in ("probs", "logits") or k == given)]  # fmt: skip

    def _check_param(self, name, value, constraint):
        kn = _kn()
        if not isinstance(value, kn.Tensor) or constraints.is_dependent(constraint):
            return
        valid = _check(constraint, value)
        if not isinstance(valid, kn.Symbol) and not bool(valid.all()):
            raise ArgumentError(
                f"Expected parameter {name} ({type(value).__name__} of shape "
                f"{tuple(value.shape)}) of distribution {self!r} to satisfy the constraint "
                f"{constraint!r}, but found invalid values:\n{value}"
            )

    def _validate_sample(self, value):
        """`value` after PyTorch's checks: a tensor (ValueError for a number or a list, as
        PyTorch's; `validate_args=False` lets them through), of a shape that broadcasts with
        the batch and event shapes, inside the support. A graph's symbol passes unchecked."""
        kn = _kn()
        if isinstance(value, kn.Symbol):
            return value
        if not isinstance(value, kn.Tensor):
            raise ArgumentError("The value argument to log_prob must be a Tensor")
        shape, event = Size(value.shape), self._event_shape
        if shape[len(shape) - len(event) :] != event:
            raise ArgumentError(
                f"The right-most size of value must match event_shape: {shape} vs {event}."
            )
        expected = self._batch_shape + event
        for i, j in zip(reversed(shape), reversed(expected)):
            if i != 1 and j != 1 and i != j:
                raise ArgumentError(
                    f"Value is not broadcastable with batch_shape+event_shape: {shape} vs "
                    f"{expected}."
                )
        try:
            support = self.support
        except NotImplementedError:
            return value
        valid = _check(support, value)
        if not isinstance(valid, kn.Symbol) and not bool(valid.all()):
            raise ArgumentError(
                f"Expected value argument ({type(value).__name__} of shape {tuple(shape)}) "
                f"to be within the support ({support!r}) of the distribution {self!r}, but "
                f"found invalid values:\n{value}"
            )
        return value

    @property
    def support(self):
        raise NotImplementedError

    @property
    def batch_shape(self) -> Size:
        return self._batch_shape

    @property
    def event_shape(self) -> Size:
        return self._event_shape

    def _extended_shape(self, sample_shape=()) -> Size:
        return Size((*Size(sample_shape), *self._batch_shape, *self._event_shape))

    def expand(self, batch_shape, _instance=None):
        """The same distribution over the larger `batch_shape`: its parameters (and inner
        distributions) expanded, without copies, as PyTorch's `expand`.

        >>> import kiln as kn
        >>> kn.distributions.Exponential(kn.tensor(2.0)).expand((3,)).rate
        tensor([2., 2., 2.])
        """
        kn = _kn()
        batch_shape, n = Size(batch_shape), len(self._batch_shape)
        new = self._new_for_expand(_instance)
        for name, value in self.__dict__.items():
            if isinstance(value, Distribution):
                setattr(new, name, value.expand(batch_shape + value.batch_shape[n:]))
            elif isinstance(value, (kn.Tensor, kn.Symbol)) and (
                name in self.arg_constraints or name in self._expanded
            ):
                setattr(new, name, value.expand(batch_shape + value.shape[n:]))
        if "_param" in self.__dict__:  # the parameter given, of probs and logits
            new._param = getattr(new, self._given)
        new._batch_shape = batch_shape
        return new

    _expanded = ()  # tensors of the batch shape that `expand` expands beside the parameters

    def _new_for_expand(self, _instance=None):
        """The instance `expand` fills: `_instance` where a subclass's own `expand` passes it
        (PyTorch's pattern: what it set there stays), else a copy of this one. A subclass from
        outside kiln with an `__init__` of its own needs an `expand` of its own, as PyTorch's
        (NotImplementedError)."""
        if _instance is not None:
            for name, value in self.__dict__.items():
                _instance.__dict__.setdefault(name, value)
            return _instance
        own = next(c for c in type(self).__mro__ if c.__module__.startswith("kiln."))
        new = self._get_checked_instance(own)
        new.__dict__.update(self.__dict__)
        return new

    def _get_checked_instance(self, cls, _instance=None):
        """A bare instance for a subclass's own `expand` (PyTorch's helper)."""
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(
                f"Subclass {type(self).__name__} of {cls.__name__} that defines a custom "
                "__init__ method must also define a custom .expand() method."
            )
        return object.__new__(type(self)) if _instance is None else _instance

    def sample(self, sample_shape=()):
        """A draw of shape `sample_shape + batch_shape + event_shape`, without gradient."""
        with no_grad():
            return self.rsample(sample_shape)

    def sample_n(self, n):
        return self.sample(Size((n,)))

    def rsample(self, sample_shape=()):
        raise NotImplementedError(f"{type(self).__name__} has no reparameterized sample")

    def log_prob(self, value):
        raise NotImplementedError

    def cdf(self, value):
        raise NotImplementedError

    def icdf(self, value):
        raise NotImplementedError

    def entropy(self):
        raise NotImplementedError

    @property
    def mean(self):
        raise NotImplementedError(f"{type(self)} does not implement mean")

    @property
    def mode(self):
        raise NotImplementedError(f"{type(self)} does not implement mode")

    @property
    def variance(self):
        raise NotImplementedError(f"{type(self)} does not implement variance")

    @property
    def stddev(self):
        return self.variance.sqrt()

    def enumerate_support(self, expand=True):
        raise NotImplementedError

    def perplexity(self):
        """`exp(entropy())`."""
        return self.entropy().exp()

    def __repr__(self):
        """PyTorch's: each parameter set (of probs and logits, the one given), its value if
        it has one element, else its shape."""
        kn = _kn()
        names = [k for k in self._checked_params() if k in self.__dict__]
        parts = []
        for p in names:
            v = self.__dict__[p]
            shown = v if isinstance(v, kn.Tensor) and v.numel() == 1 else getattr(v, "shape", v)
            parts.append(f"{p}: {shown}")
        return f"{type(self).__name__}({', '.join(parts)})"


class ExponentialFamily(Distribution):
    """A distribution of the form `exp(<t(x), theta> - F(theta) + k(x))` (PyTorch's
    `ExponentialFamily`): subclasses give `_natural_params` (theta), `_log_normalizer` (F) and
    `_mean_carrier_measure` (E[k(x)]); `entropy` and the KL between two of one family follow
    from F's gradient (the Bregman divergence).

    >>> import kiln as kn
    >>> m = kn.distributions.Poisson(kn.tensor(2.0))
    >>> isinstance(m, kn.distributions.ExponentialFamily), m._log_normalizer(kn.tensor(0.0))
    (True, tensor(1.))
    """

    @property
    def _natural_params(self):
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self):
        raise NotImplementedError

    def entropy(self):
        kn = _kn()
        carrier = self._mean_carrier_measure  # (NotImplementedError where it is unknown)
        params = [p.detach() for p in self._natural_params]
        if any(isinstance(p, kn.Symbol) for p in params):  # a graph's: its gradient op
            log_norm = self._log_normalizer(*params)
            grads = kn.grad(log_norm.sum(), params)
        else:
            params = [p.requires_grad_() for p in params]
            log_norm = self._log_normalizer(*params)
            grads = kn.autograd.grad(log_norm.sum(), params, create_graph=True)
        result = log_norm - carrier
        for p, g in zip(params, grads):
            result = result - (p * g).reshape(*self._batch_shape, -1).sum(-1)
        return result


def _check(constraint, value):
    """`constraint.check(value)` for an eager tensor: on its NumPy data where the constraint
    takes arrays (a few NumPy calls instead of kiln ops: validation runs on every
    construction and log_prob)."""
    if constraint.host:
        data = value._data
        if isinstance(data, np.ndarray):
            return constraint.check(data)
    return constraint.check(value)


def _validating(fn):
    """`fn(self, value)` that validates `value` first when `self` validates."""

    @functools.wraps(fn)
    def method(self, value, *args, **kwargs):
        if self._validate_args:
            value = self._validate_sample(value)
        return fn(self, value, *args, **kwargs)

    method._validates = True
    return method


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

    arg_constraints = {
        "probs": constraints.simplex, "logits": constraints.independent(constraints.real, 1),
    }  # fmt: skip

    def __init__(self, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ArgumentError("Either `probs` or `logits` must be specified, but not both.")
        kn = _kn()
        self._given = "probs" if probs is not None else "logits"
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

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self._num_events - 1)

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


class Normal(ExponentialFamily):
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
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real

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

    def sample(self, sample_shape=()):
        """A draw without gradient, of `loc`'s dtype (PyTorch's `normal(loc, scale)`) where
        `rsample` promotes `loc` and `scale` together."""
        draw = super().sample(sample_shape)
        return draw if draw.dtype == self.loc.dtype else draw.to(self.loc.dtype)

    def log_prob(self, value):
        value = _tensor(value, self.loc)
        var = self.scale**2
        log_scale = self.scale.log()
        return -((value - self.loc) ** 2) / (2 * var) - log_scale - math.log(math.sqrt(2 * math.pi))

    def entropy(self):
        return 0.5 + 0.5 * math.log(2 * math.pi) + self.scale.log()

    _mean_carrier_measure = 0
    _natural_params = property(lambda self: (self.loc / self.scale.pow(2),
                                             -0.5 * self.scale.pow(2).reciprocal()))  # fmt: skip

    def _log_normalizer(self, x, y):
        return -0.25 * x.pow(2) / y + 0.5 * (-math.pi / y).log()

    def cdf(self, value):
        kn = _kn()
        value = _tensor(value, self.loc)
        return 0.5 * (1 + kn.erf((value - self.loc) * self.scale.reciprocal() / math.sqrt(2)))

    def icdf(self, value):
        kn = _kn()
        value = _tensor(value, self.loc)
        return self.loc + self.scale * kn.erfinv(2 * value - 1) * math.sqrt(2)


class Bernoulli(ExponentialFamily):
    """A distribution over {0, 1} given by `probs` or `logits` (exactly one), as PyTorch's;
    `log_prob` is minus `binary_cross_entropy_with_logits`.

    >>> import kiln as kn
    >>> m = kn.distributions.Bernoulli(probs=kn.tensor([0.25, 0.5]))
    >>> m.log_prob(kn.tensor([1.0, 0.0])), m.entropy()
    (tensor([-1.3863, -0.6931]), tensor([0.5623, 0.6931]))
    """

    has_enumerate_support = True
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean

    def __init__(self, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ArgumentError("Either `probs` or `logits` must be specified, but not both.")
        kn = _kn()
        self._given = "probs" if probs is not None else "logits"
        if probs is not None:
            self.probs = _tensor(float(probs) if isinstance(probs, (int, float)) else probs)
            with enable_grad():  # (PyTorch's lazy logits: with grad even under no_grad)
                eps = kn.finfo(self.probs.dtype).eps  # PyTorch's probs_to_logits (is_binary)
                clamped = kn.clamp(self.probs, min=eps, max=1 - eps)
                self.logits = kn.log(clamped) - kn.log1p(-clamped)
        else:
            self.logits = _tensor(float(logits) if isinstance(logits, (int, float)) else logits)
            with enable_grad():
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

    _mean_carrier_measure = 0
    _natural_params = property(lambda self: (self.logits,))

    def _log_normalizer(self, x):
        return _kn().log1p(x.exp())

    def enumerate_support(self, expand=True):
        """0. and 1. along a new first dim (expanded over batch_shape)."""
        kn = _kn()
        values = kn.arange(2, dtype=self._param.dtype).view((-1,) + (1,) * len(self.batch_shape))
        return values.expand((-1, *self.batch_shape)) if expand else values


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
    def arg_constraints(self):
        """Each bound against the other (PyTorch's): validation refuses `low >= high`."""
        return {
            "low": constraints.less_than(self.high),
            "high": constraints.greater_than(self.low),
        }

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        return constraints.interval(self.low, self.high)

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
        super().__init__(shape[:cut], shape[cut:] + base_distribution.event_shape,
                         validate_args=validate_args)  # fmt: skip

    arg_constraints: dict = {}

    @constraints.dependent_property
    def support(self):
        support = self.base_dist.support
        if self.reinterpreted_batch_ndims:
            support = constraints.independent(support, self.reinterpreted_batch_ndims)
        return support

    @property
    def has_enumerate_support(self):
        return self.reinterpreted_batch_ndims == 0 and self.base_dist.has_enumerate_support

    def expand(self, batch_shape, _instance=None):
        """The same distribution over the larger `batch_shape`."""
        new = self._new_for_expand(_instance)
        batch_shape = Size(batch_shape)
        new.base_dist = self.base_dist.expand(
            batch_shape + self._event_shape[: self.reinterpreted_batch_ndims]
        )
        new._batch_shape = batch_shape
        return new

    def cdf(self, value):
        raise NotImplementedError

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


# The priors and likelihoods of scientific code, the transforms and the KL rules live in their
# own modules (which import this one); `import kiln.distributions.transforms` finds them too.
# isort: off
from . import distributions_transforms as transforms  # noqa: E402  (first: it ends importing
from . import distributions_bijections as constraint_registry  # noqa: E402  this one)

# isort: on
from .distributions_bijections import biject_to, transform_to  # noqa: E402
from .distributions_extra import *  # noqa: E402, F403
from .distributions_extra import __all__ as _extra_all  # noqa: E402
from .distributions_families import *  # noqa: E402, F403
from .distributions_families import __all__ as _families_all  # noqa: E402
from .distributions_kl import kl_divergence, register_kl  # noqa: E402
from .distributions_matrix import *  # noqa: E402, F403
from .distributions_matrix import __all__ as _matrix_all  # noqa: E402
from .distributions_more import *  # noqa: E402, F403
from .distributions_more import __all__ as _more_all  # noqa: E402
from .distributions_multi import *  # noqa: E402, F403
from .distributions_multi import __all__ as _multi_all  # noqa: E402
from .distributions_transforms import *  # noqa: E402, F403
from .distributions_transforms import TransformedDistribution  # noqa: E402
from .distributions_transforms import __all__ as _transforms_all  # noqa: E402
from .distributions_utils import install_submodules as _install_submodules  # noqa: E402

for _name, _module in (("constraints", constraints), ("transforms", transforms),
                      ("constraint_registry", constraint_registry)):  # fmt: skip
    sys.modules[f"{__name__}.{_name}"] = _module
_install_submodules(sys.modules[__name__])  # kn.distributions.normal, .kl, .utils...
__all__ += ["TransformedDistribution", "biject_to", "constraint_registry", "constraints",
            "transform_to", "transforms", *_more_all, *_extra_all,
            *_multi_all, *_families_all, *_transforms_all, *_matrix_all]  # fmt: skip
