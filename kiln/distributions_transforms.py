"""PyTorch's elementwise bijections of `torch.distributions.transforms` and
`TransformedDistribution` (a squashed Gaussian policy's `TanhTransform`, a flow's
`AffineTransform`), with PyTorch's formulas and caching (`kn.distributions` re-exports them, and
`kn.distributions.transforms` is this module).

>>> import kiln as kn
>>> D = kn.distributions
>>> d = D.TransformedDistribution(D.Normal(0.0, 1.0), [D.AffineTransform(1.0, 2.0)])
>>> d.log_prob(kn.tensor(1.0))  # N(1, 2) at its mean
tensor(-1.6121)
"""

from __future__ import annotations

import math

from .array_types import Size
from .distributions import Distribution, _kn, _sum_rightmost
from .eager.grad_mode import no_grad

__all__ = [
    "AffineTransform", "ComposeTransform", "ExpTransform", "SigmoidTransform", "TanhTransform",
    "Transform", "TransformedDistribution",
]  # fmt: skip


class Transform:
    """An invertible elementwise map with the log of its Jacobian's absolute determinant.
    `cache_size=1` keeps the last pair (x, y): the inverse of the y it returned is that x
    (as PyTorch's, so `log_prob` of a fresh `rsample` is exact where the inverse saturates).

    >>> import kiln as kn
    >>> t = kn.distributions.ExpTransform()
    >>> t(kn.tensor(0.0)), t.inv(kn.tensor(1.0))
    (tensor(1.), tensor(0.))
    """

    event_dim = 0  # elementwise: the domain's and codomain's event dims
    bijective = True

    def __init__(self, cache_size=0):
        if cache_size not in (0, 1):
            raise ValueError("cache_size must be 0 or 1")
        self._cache_size = cache_size
        self._cached_x_y = None, None

    def __call__(self, x):
        if self._cache_size == 0:
            return self._call(x)
        x_old, y_old = self._cached_x_y
        if x is x_old:
            return y_old
        y = self._call(x)
        self._cached_x_y = x, y
        return y

    @property
    def inv(self):
        return _Inverse(self)

    def _inv_call(self, y):
        if self._cache_size == 0:
            return self._inverse(y)
        x_old, y_old = self._cached_x_y
        if y is y_old:
            return x_old
        x = self._inverse(y)
        self._cached_x_y = x, y
        return x

    def log_abs_det_jacobian(self, x, y):
        raise NotImplementedError

    def __repr__(self):
        return f"{type(self).__name__}()"


class _Inverse(Transform):
    """The inverse of a transform (`t.inv`)."""

    def __init__(self, transform):
        super().__init__()
        self._inv = transform

    @property
    def inv(self):
        return self._inv

    def __call__(self, y):
        return self._inv._inv_call(y)

    def log_abs_det_jacobian(self, x, y):
        return -self._inv.log_abs_det_jacobian(y, x)


class ExpTransform(Transform):
    """`y = exp(x)`."""

    def _call(self, x):
        return x.exp()

    def _inverse(self, y):
        return y.log()

    def log_abs_det_jacobian(self, x, y):
        return x


class SigmoidTransform(Transform):
    """`y = sigmoid(x)`, its inverse the logit (of y clamped into the open interval)."""

    def _call(self, x):
        kn = _kn()
        finfo = kn.finfo(x.dtype)
        return kn.clamp(kn.sigmoid(x), min=finfo.tiny, max=1.0 - finfo.eps)

    def _inverse(self, y):
        kn = _kn()
        finfo = kn.finfo(y.dtype)
        y = y.clamp(min=finfo.tiny, max=1.0 - finfo.eps)
        return y.log() - (-y).log1p()

    def log_abs_det_jacobian(self, x, y):
        F = _kn().nn.functional
        return -F.softplus(-x) - F.softplus(x)


class TanhTransform(Transform):
    """`y = tanh(x)`; `log_abs_det_jacobian` is PyTorch's stable
    `2 (log 2 - x - softplus(-2x))`."""

    def _call(self, x):
        return x.tanh()

    def _inverse(self, y):
        return 0.5 * (y.log1p() - (-y).log1p())  # atanh, as PyTorch computes it

    def log_abs_det_jacobian(self, x, y):
        F = _kn().nn.functional
        return 2.0 * (math.log(2.0) - x - F.softplus(-2.0 * x))


class AffineTransform(Transform):
    """`y = loc + scale * x`, over `event_dim` rightmost dims."""

    def __init__(self, loc, scale, event_dim=0, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.loc, self.scale, self.event_dim = loc, scale, event_dim

    def _call(self, x):
        return self.loc + self.scale * x

    def _inverse(self, y):
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x, y):
        kn = _kn()
        scale = self.scale
        if isinstance(scale, (int, float)):
            result = kn.full_like(x, math.log(abs(scale)))
        else:
            result = kn.abs(scale).log()
        if self.event_dim:
            shape = tuple(result.shape[: result.dim() - self.event_dim]) + (-1,)
            result = result.reshape(shape).sum(-1)
            shape = tuple(shape[:-1])
            return result.expand(tuple(x.shape[: x.dim() - self.event_dim])) if shape else result
        return result.expand(tuple(x.shape))


class ComposeTransform(Transform):
    """The transforms applied in order (elementwise ones)."""

    def __init__(self, parts, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.parts = list(parts)
        self.event_dim = max((p.event_dim for p in self.parts), default=0)

    def _call(self, x):
        for part in self.parts:
            x = part(x)
        return x

    def _inverse(self, y):
        for part in reversed(self.parts):
            y = part.inv(y)
        return y

    def log_abs_det_jacobian(self, x, y):
        total = 0.0
        for part in self.parts:
            y = part(x)
            total = total + _sum_rightmost(part.log_abs_det_jacobian(x, y),
                                           self.event_dim - part.event_dim)  # fmt: skip
            x = y
        return total


class TransformedDistribution(Distribution):
    """`base_distribution` pushed through `transforms` (elementwise): `rsample` applies them to
    the base's draw, `log_prob` is the base's log-density of the inverse minus the log
    Jacobians (PyTorch's change of variables).

    >>> import kiln as kn
    >>> D = kn.distributions
    >>> d = D.TransformedDistribution(D.Normal(kn.zeros(2), 1.0), [D.TanhTransform()])
    >>> d.batch_shape, d.log_prob(kn.tensor([0.0, 0.5])).shape
    (kiln.Size([2]), kiln.Size([2]))
    """

    def __init__(self, base_distribution, transforms, validate_args=None):
        if isinstance(transforms, Transform):
            transforms = [transforms]
        if not all(isinstance(t, Transform) for t in transforms):
            raise ValueError(
                f"transforms must be a Transform or a list of Transforms, but was {transforms}"
            )
        self.base_dist, self.transforms = base_distribution, list(transforms)
        event_dim = max([len(base_distribution.event_shape)]
                        + [t.event_dim for t in self.transforms])  # fmt: skip
        shape = tuple(base_distribution.batch_shape) + tuple(base_distribution.event_shape)
        cut = len(shape) - event_dim
        super().__init__(shape[:cut], shape[cut:], validate_args)

    @property
    def has_rsample(self):
        return self.base_dist.has_rsample

    def rsample(self, sample_shape=()):
        x = self.base_dist.rsample(Size(sample_shape))
        for transform in self.transforms:
            x = transform(x)
        return x

    def sample(self, sample_shape=()):
        with no_grad():
            x = self.base_dist.sample(Size(sample_shape))
            for transform in self.transforms:
                x = transform(x)
            return x

    def log_prob(self, value):
        event_dim = len(self.event_shape)
        log_prob, y = 0.0, value
        for transform in reversed(self.transforms):
            x = transform.inv(y)
            log_prob = log_prob - _sum_rightmost(
                transform.log_abs_det_jacobian(x, y), event_dim - transform.event_dim
            )
            y = x
        base = self.base_dist.log_prob(y)
        return log_prob + _sum_rightmost(base, event_dim - len(self.base_dist.event_shape))

    def __repr__(self):
        return f"TransformedDistribution({self.base_dist!r}, {self.transforms})"
