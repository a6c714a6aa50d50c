"""`kn.distributions.transforms` and `TransformedDistribution`, PyTorch's: invertible maps
(`ExpTransform`, `AffineTransform`, `SigmoidTransform`, `TanhTransform`, `SoftmaxTransform`,
`PowerTransform`, `AbsTransform`, `SoftplusTransform`, their `ComposeTransform` and `.inv`)
with `log_abs_det_jacobian`, and the distribution of a base distribution's draws pushed
through them, whose `log_prob` is the base's at the inverse minus the log-Jacobians. A
transform made with `cache_size=1` remembers its last (x, y), so that the `log_prob` of its
own `rsample` inverts exactly (PyTorch's caching).

>>> import kiln as kn
>>> d = kn.distributions
>>> t = d.transforms.ExpTransform()
>>> m = d.TransformedDistribution(d.Normal(0.0, 1.0), [t])
>>> m.log_prob(kn.tensor(2.0)), d.LogNormal(0.0, 1.0).log_prob(kn.tensor(2.0))
(tensor(-1.8523), tensor(-1.8523))
"""

from __future__ import annotations

import functools
import math
import numbers
import operator

from . import distributions_constraints as constraints
from .array_types import Size
from .distributions import Distribution, Independent, _kn, _sum_rightmost
from .eager.grad_mode import no_grad

__all__ = [
    "AbsTransform", "AffineTransform", "ComposeTransform", "ExpTransform", "PowerTransform",
    "SigmoidTransform", "SoftmaxTransform", "SoftplusTransform", "TanhTransform", "Transform",
    "identity_transform",
]  # fmt: skip


class Transform:
    """An invertible map with a log-Jacobian (PyTorch's `Transform`): `t(x)`, `t.inv(y)`,
    `t.log_abs_det_jacobian(x, y)`, its `domain` and `codomain` constraints, `sign` (of a
    monotone map) and `bijective`.

    >>> import kiln as kn
    >>> t = kn.distributions.transforms.ExpTransform()
    >>> t.inv(t(kn.tensor(0.5))), t.domain, t.codomain
    (tensor(0.5000), Real(), GreaterThan(lower_bound=0.0))
    """

    bijective = False
    domain = constraints.real
    codomain = constraints.real

    def __init__(self, cache_size=0):
        if cache_size not in (0, 1):
            raise ValueError("cache_size must be 0 or 1")
        self._cache_size = cache_size
        self._inv = None
        self._cached_x_y = None, None

    @property
    def event_dim(self):
        if self.domain.event_dim == self.codomain.event_dim:
            return self.domain.event_dim
        raise ValueError("Please use either .domain.event_dim or .codomain.event_dim")

    @property
    def inv(self):
        """The inverse transform (`inv.inv` is this one)."""
        if self._inv is None:
            self._inv = _InverseTransform(self)
        return self._inv

    @property
    def sign(self):
        raise NotImplementedError

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        if type(self).__init__ is Transform.__init__:
            return type(self)(cache_size=cache_size)
        raise NotImplementedError(f"{type(self)}.with_cache is not implemented")

    def __eq__(self, other):
        return self is other

    def __ne__(self, other):
        return not self.__eq__(other)

    __hash__ = object.__hash__

    def __call__(self, x):
        if self._cache_size == 0:
            return self._call(x)
        x_old, y_old = self._cached_x_y
        if x is x_old:
            return y_old
        y = self._call(x)
        self._cached_x_y = x, y
        return y

    def _inv_call(self, y):
        if self._cache_size == 0:
            return self._inverse(y)
        x_old, y_old = self._cached_x_y
        if y is y_old:
            return x_old
        x = self._inverse(y)
        self._cached_x_y = x, y
        return x

    def _call(self, x):
        raise NotImplementedError

    def _inverse(self, y):
        raise NotImplementedError

    def log_abs_det_jacobian(self, x, y):
        """log |dy/dx| at the pair (x, y = t(x))."""
        raise NotImplementedError

    def forward_shape(self, shape):
        return shape

    def inverse_shape(self, shape):
        return shape

    def __repr__(self):
        return type(self).__name__ + "()"


class _InverseTransform(Transform):
    """The inverse of a transform (`transform.inv`)."""

    def __init__(self, transform):
        super().__init__(cache_size=transform._cache_size)
        self._inv = transform

    domain = property(lambda self: self._inv.codomain)
    codomain = property(lambda self: self._inv.domain)
    bijective = property(lambda self: self._inv.bijective)
    sign = property(lambda self: self._inv.sign)

    @property
    def inv(self):
        return self._inv

    def with_cache(self, cache_size=1):
        return self.inv.with_cache(cache_size).inv

    def __eq__(self, other):
        return isinstance(other, _InverseTransform) and self._inv == other._inv

    __hash__ = object.__hash__

    def __repr__(self):
        return f"{type(self).__name__}({self._inv!r})"

    def __call__(self, x):
        return self._inv._inv_call(x)

    def log_abs_det_jacobian(self, x, y):
        return -self._inv.log_abs_det_jacobian(y, x)

    def forward_shape(self, shape):
        return self._inv.inverse_shape(shape)

    def inverse_shape(self, shape):
        return self._inv.forward_shape(shape)


class ComposeTransform(Transform):
    """`parts` applied in order (the identity when empty).

    >>> import kiln as kn
    >>> T = kn.distributions.transforms
    >>> t = T.ComposeTransform([T.ExpTransform(), T.AffineTransform(1.0, 2.0)])
    >>> t(kn.tensor(0.0)), t.log_abs_det_jacobian(kn.tensor(0.0), kn.tensor(3.0))
    (tensor(3.), tensor(0.6931))
    """

    def __init__(self, parts, cache_size=0):
        if cache_size:
            parts = [part.with_cache(cache_size) for part in parts]
        super().__init__(cache_size=cache_size)
        self.parts = list(parts)

    def __eq__(self, other):
        return isinstance(other, ComposeTransform) and self.parts == other.parts

    __hash__ = object.__hash__

    @property
    def domain(self):
        if not self.parts:
            return constraints.real
        domain = self.parts[0].domain
        event_dim = self.parts[-1].codomain.event_dim
        for part in reversed(self.parts):
            event_dim += part.domain.event_dim - part.codomain.event_dim
            event_dim = max(event_dim, part.domain.event_dim)
        if event_dim > domain.event_dim:
            domain = constraints.independent(domain, event_dim - domain.event_dim)
        return domain

    @property
    def codomain(self):
        if not self.parts:
            return constraints.real
        codomain = self.parts[-1].codomain
        event_dim = self.parts[0].domain.event_dim
        for part in self.parts:
            event_dim += part.codomain.event_dim - part.domain.event_dim
            event_dim = max(event_dim, part.codomain.event_dim)
        if event_dim > codomain.event_dim:
            codomain = constraints.independent(codomain, event_dim - codomain.event_dim)
        return codomain

    @property
    def bijective(self):
        return all(p.bijective for p in self.parts)

    @property
    def sign(self):
        sign = 1
        for p in self.parts:
            sign = sign * p.sign
        return sign

    @property
    def inv(self):
        if self._inv is None:
            self._inv = ComposeTransform([p.inv for p in reversed(self.parts)])
            self._inv._inv = self
        return self._inv

    def with_cache(self, cache_size=1):
        return self if self._cache_size == cache_size else ComposeTransform(self.parts, cache_size)

    def __call__(self, x):
        for part in self.parts:
            x = part(x)
        return x

    def log_abs_det_jacobian(self, x, y):
        if not self.parts:
            return _kn().zeros_like(x)
        xs = [x]
        for part in self.parts[:-1]:
            xs.append(part(xs[-1]))
        xs.append(y)
        terms, event_dim = [], self.domain.event_dim
        for part, a, b in zip(self.parts, xs[:-1], xs[1:]):
            terms.append(_sum_rightmost(part.log_abs_det_jacobian(a, b),
                                        event_dim - part.domain.event_dim))  # fmt: skip
            event_dim += part.codomain.event_dim - part.domain.event_dim
        return functools.reduce(operator.add, terms)

    def forward_shape(self, shape):
        for part in self.parts:
            shape = part.forward_shape(shape)
        return shape

    def inverse_shape(self, shape):
        for part in reversed(self.parts):
            shape = part.inverse_shape(shape)
        return shape

    def __repr__(self):
        inner = ",\n    ".join(repr(p) for p in self.parts)
        return f"{type(self).__name__}(\n    {inner}\n)"


identity_transform = ComposeTransform([])


class ExpTransform(Transform):
    """`y = exp(x)`.

    >>> import kiln as kn
    >>> kn.distributions.transforms.ExpTransform().inv(kn.tensor(1.0))
    tensor(0.)
    """

    domain, codomain, bijective, sign = constraints.real, constraints.positive, True, +1

    def __eq__(self, other):
        return isinstance(other, ExpTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        return x.exp()

    def _inverse(self, y):
        return y.log()

    def log_abs_det_jacobian(self, x, y):
        return x


class PowerTransform(Transform):
    """`y = x ** exponent` on the positive reals.

    >>> import kiln as kn
    >>> kn.distributions.transforms.PowerTransform(kn.tensor(2.0))(kn.tensor(3.0))
    tensor(9.)
    """

    domain, codomain, bijective = constraints.positive, constraints.positive, True

    def __init__(self, exponent, cache_size=0):
        super().__init__(cache_size=cache_size)
        (self.exponent,) = _as_tensors(exponent)

    def with_cache(self, cache_size=1):
        return self if self._cache_size == cache_size else PowerTransform(self.exponent, cache_size)

    def __eq__(self, other):
        if not isinstance(other, PowerTransform):
            return False
        return bool(self.exponent.eq(other.exponent).all())

    __hash__ = object.__hash__

    @property
    def sign(self):
        return self.exponent.sign()

    def _call(self, x):
        return x.pow(self.exponent)

    def _inverse(self, y):
        return y.pow(1 / self.exponent)

    def log_abs_det_jacobian(self, x, y):
        return (self.exponent * y / x).abs().log()

    def forward_shape(self, shape):
        return Size(_kn().broadcast_shapes(shape, self.exponent.shape))

    inverse_shape = forward_shape


def _clipped_sigmoid(x):
    kn = _kn()
    finfo = kn.finfo(x.dtype)
    return kn.clamp(kn.sigmoid(x), min=finfo.tiny, max=1.0 - finfo.eps)


class SigmoidTransform(Transform):
    """`y = sigmoid(x)`, clamped into the open unit interval.

    >>> import kiln as kn
    >>> kn.distributions.transforms.SigmoidTransform()(kn.tensor(0.0))
    tensor(0.5000)
    """

    domain, codomain, bijective, sign = constraints.real, constraints.unit_interval, True, +1

    def __eq__(self, other):
        return isinstance(other, SigmoidTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        return _clipped_sigmoid(x)

    def _inverse(self, y):
        kn = _kn()
        finfo = kn.finfo(y.dtype)
        y = y.clamp(min=finfo.tiny, max=1.0 - finfo.eps)
        return y.log() - (-y).log1p()

    def log_abs_det_jacobian(self, x, y):
        softplus = _kn().nn.functional.softplus
        return -softplus(-x) - softplus(x)


class SoftplusTransform(Transform):
    """`y = log(1 + exp(x))`.

    >>> import kiln as kn
    >>> kn.distributions.transforms.SoftplusTransform()(kn.tensor(0.0))
    tensor(0.6931)
    """

    domain, codomain, bijective, sign = constraints.real, constraints.positive, True, +1

    def __eq__(self, other):
        return isinstance(other, SoftplusTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        return _kn().nn.functional.softplus(x)

    def _inverse(self, y):
        return (-y).expm1().neg().log() + y

    def log_abs_det_jacobian(self, x, y):
        return -_kn().nn.functional.softplus(-x)


class TanhTransform(Transform):
    """`y = tanh(x)`; its log-Jacobian in the stable form `2 (log 2 - x - softplus(-2x))`.

    >>> import kiln as kn
    >>> kn.distributions.transforms.TanhTransform().log_abs_det_jacobian(kn.tensor(0.0), None)
    tensor(0.)
    """

    domain, codomain = constraints.real, constraints.interval(-1.0, 1.0)
    bijective, sign = True, +1

    def __eq__(self, other):
        return isinstance(other, TanhTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        return x.tanh()

    def _inverse(self, y):
        return y.atanh()

    def log_abs_det_jacobian(self, x, y):
        return 2.0 * (math.log(2.0) - x - _kn().nn.functional.softplus(-2.0 * x))


class AbsTransform(Transform):
    """`y = |x|` (its inverse gives the positive root).

    >>> import kiln as kn
    >>> kn.distributions.transforms.AbsTransform()(kn.tensor(-2.0))
    tensor(2.)
    """

    domain, codomain = constraints.real, constraints.positive

    def __eq__(self, other):
        return isinstance(other, AbsTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        return x.abs()

    def _inverse(self, y):
        return y


class AffineTransform(Transform):
    """`y = loc + scale * x`, over `event_dim` rightmost dims.

    >>> import kiln as kn
    >>> t = kn.distributions.transforms.AffineTransform(1.0, kn.tensor([2.0, 4.0]), event_dim=1)
    >>> t(kn.zeros(2)), t.log_abs_det_jacobian(kn.zeros(2), None)
    (tensor([1., 1.]), tensor(2.0794))
    """

    bijective = True

    def __init__(self, loc, scale, event_dim=0, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.loc, self.scale, self._event_dim = loc, scale, event_dim

    @property
    def event_dim(self):
        return self._event_dim

    @property
    def domain(self):
        if self._event_dim == 0:
            return constraints.real
        return constraints.independent(constraints.real, self._event_dim)

    codomain = domain

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return AffineTransform(self.loc, self.scale, self._event_dim, cache_size=cache_size)

    def __eq__(self, other):
        if not isinstance(other, AffineTransform):
            return False
        for a, b in ((self.loc, other.loc), (self.scale, other.scale)):
            if isinstance(a, numbers.Number) and isinstance(b, numbers.Number):
                if a != b:
                    return False
            elif not bool((_kn().as_tensor(a) == _kn().as_tensor(b)).all()):
                return False
        return True

    __hash__ = object.__hash__

    @property
    def sign(self):
        if isinstance(self.scale, numbers.Real):
            return 1 if float(self.scale) > 0 else -1 if float(self.scale) < 0 else 0
        return self.scale.sign()

    def _call(self, x):
        return self.loc + self.scale * x

    def _inverse(self, y):
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x, y):
        kn = _kn()
        shape = x.shape
        if isinstance(self.scale, numbers.Real):
            result = kn.full_like(x, math.log(abs(self.scale)))
        else:
            result = self.scale.abs().log()
        if self._event_dim:
            result = result.reshape(*result.shape[: result.dim() - self._event_dim], -1).sum(-1)
            shape = shape[: len(shape) - self._event_dim]
        return result.expand(shape)

    def forward_shape(self, shape):
        return Size(_kn().broadcast_shapes(shape, getattr(self.loc, "shape", ()),
                                           getattr(self.scale, "shape", ())))  # fmt: skip

    inverse_shape = forward_shape


class SoftmaxTransform(Transform):
    """`y = softmax(x)` over the last dim (not bijective: `inv` gives `log y`).

    >>> import kiln as kn
    >>> kn.distributions.transforms.SoftmaxTransform()(kn.zeros(2))
    tensor([0.5000, 0.5000])
    """

    domain, codomain = constraints.real_vector, constraints.simplex

    def __eq__(self, other):
        return isinstance(other, SoftmaxTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        probs = (x - x.amax(-1, keepdim=True)).exp()
        return probs / probs.sum(-1, keepdim=True)

    def _inverse(self, y):
        return y.log()

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return shape

    inverse_shape = forward_shape


def _as_tensors(*values):
    kn = _kn()
    return [v if isinstance(v, (kn.Tensor, kn.Symbol)) else kn.tensor(float(v)) for v in values]


class TransformedDistribution(Distribution):
    """The distribution of `t_n(...t_1(x))` for `x ~ base_distribution`, given the
    `transforms` `[t_1, ..., t_n]` (or one transform), as PyTorch's.

    >>> import kiln as kn
    >>> d = kn.distributions
    >>> m = d.TransformedDistribution(d.Uniform(0.0, 1.0), [d.transforms.SigmoidTransform().inv])
    >>> m.log_prob(kn.tensor(0.0))  # the logistic distribution
    tensor(-1.3863)
    """

    arg_constraints: dict = {}

    def __init__(self, base_distribution, transforms, validate_args=None):
        if isinstance(transforms, Transform):
            self.transforms = [transforms]
        elif isinstance(transforms, list):
            if not all(isinstance(t, Transform) for t in transforms):
                raise ValueError("transforms must be a Transform or a list of Transforms")
            self.transforms = transforms
        else:
            raise ValueError(f"transforms must be a Transform or list, but was {transforms}")
        base_shape = base_distribution.batch_shape + base_distribution.event_shape
        base_event_dim = len(base_distribution.event_shape)
        transform = ComposeTransform(self.transforms)
        if len(base_shape) < transform.domain.event_dim:
            raise ValueError(
                f"base_distribution needs to have shape with size at least "
                f"{transform.domain.event_dim}, but got {base_shape}."
            )
        forward_shape = Size(transform.forward_shape(base_shape))
        expanded_base_shape = Size(transform.inverse_shape(forward_shape))
        if base_shape != expanded_base_shape:
            base_batch_shape = expanded_base_shape[: len(expanded_base_shape) - base_event_dim]
            base_distribution = base_distribution.expand(base_batch_shape)
        reinterpreted = transform.domain.event_dim - base_event_dim
        if reinterpreted > 0:
            base_distribution = Independent(base_distribution, reinterpreted)
        self.base_dist = base_distribution
        change = transform.codomain.event_dim - transform.domain.event_dim
        event_dim = max(transform.codomain.event_dim, base_event_dim + change)
        cut = len(forward_shape) - event_dim
        super().__init__(forward_shape[:cut], forward_shape[cut:], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """The same distribution over the larger `batch_shape` (its base expanded)."""
        batch_shape = Size(batch_shape)
        shape = batch_shape + self._event_shape
        for t in reversed(self.transforms):
            shape = t.inverse_shape(shape)
        new = self._new_for_expand(_instance)
        n = len(self.base_dist.event_shape)
        new.base_dist = self.base_dist.expand(Size(shape)[: len(shape) - n])
        new._batch_shape = batch_shape
        return new

    @constraints.dependent_property(is_discrete=False)
    def support(self):
        if not self.transforms:
            return self.base_dist.support
        support = self.transforms[-1].codomain
        if len(self.event_shape) > support.event_dim:
            support = constraints.independent(support, len(self.event_shape) - support.event_dim)
        return support

    @property
    def has_rsample(self):
        return self.base_dist.has_rsample

    def sample(self, sample_shape=()):
        with no_grad():
            x = self.base_dist.sample(sample_shape)
            for t in self.transforms:
                x = t(x)
            return x

    def rsample(self, sample_shape=()):
        x = self.base_dist.rsample(sample_shape)
        for t in self.transforms:
            x = t(x)
        return x

    def log_prob(self, value):
        event_dim = len(self.event_shape)
        log_prob, y = 0.0, value
        for t in reversed(self.transforms):
            x = t.inv(y)
            event_dim += t.domain.event_dim - t.codomain.event_dim
            log_prob = log_prob - _sum_rightmost(t.log_abs_det_jacobian(x, y),
                                                 event_dim - t.domain.event_dim)  # fmt: skip
            y = x
        base = self.base_dist.log_prob(y)
        return log_prob + _sum_rightmost(base, event_dim - len(self.base_dist.event_shape))

    def _monotonize_cdf(self, value):
        sign = 1
        for t in self.transforms:
            sign = sign * t.sign
        if isinstance(sign, int) and sign == 1:
            return value
        return sign * (value - 0.5) + 0.5

    def cdf(self, value):
        for t in reversed(self.transforms):
            value = t.inv(value)
        if self._validate_args:
            self.base_dist._validate_sample(value)
        return self._monotonize_cdf(self.base_dist.cdf(value))

    cdf._validates = True

    def icdf(self, value):
        value = self.base_dist.icdf(self._monotonize_cdf(value))
        for t in self.transforms:
            value = t(value)
        return value


# The structural transforms live beside the constraint registries (they import this module).
from .distributions_bijections import (  # noqa: E402
    CatTransform,
    CorrCholeskyTransform,
    CumulativeDistributionTransform,
    IndependentTransform,
    LowerCholeskyTransform,
    PositiveDefiniteTransform,
    ReshapeTransform,
    StackTransform,
    StickBreakingTransform,
)

__all__ += [
    "CatTransform", "CorrCholeskyTransform", "CumulativeDistributionTransform",
    "IndependentTransform", "LowerCholeskyTransform", "PositiveDefiniteTransform",
    "ReshapeTransform", "StackTransform", "StickBreakingTransform",
]  # fmt: skip
