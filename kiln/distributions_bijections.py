"""The structural transforms of PyTorch's `torch.distributions.transforms`
(`StickBreakingTransform`, `IndependentTransform`, `ReshapeTransform`,
`LowerCholeskyTransform`, `PositiveDefiniteTransform`, `CumulativeDistributionTransform`;
`kn.distributions.transforms` re-exports them) and its constraint registries `biject_to` and
`transform_to` (`kn.distributions.constraint_registry`): the transform from unconstrained
reals onto a constraint's set, looked up by the constraint's class, with PyTorch's table.

>>> import kiln as kn
>>> d = kn.distributions
>>> t = d.biject_to(d.constraints.simplex)
>>> t, t(kn.zeros(2))
(StickBreakingTransform(), tensor([0.3333, 0.3333, 0.3333]))
>>> d.transform_to(d.constraints.greater_than(1.0))(kn.tensor(0.0))
tensor(2.)
"""

from __future__ import annotations

import numbers

from . import distributions_constraints as constraints
from .array_types import Size
from .distributions import _kn, _sum_rightmost
from .distributions_transforms import (
    AffineTransform,
    ComposeTransform,
    ExpTransform,
    SigmoidTransform,
    SoftmaxTransform,
    Transform,
    _clipped_sigmoid,
    identity_transform,
)

__all__ = [
    "ConstraintRegistry", "CumulativeDistributionTransform", "IndependentTransform",
    "LowerCholeskyTransform", "PositiveDefiniteTransform", "ReshapeTransform",
    "StickBreakingTransform", "biject_to", "transform_to",
]  # fmt: skip


class StickBreakingTransform(Transform):
    """Reals of length K onto the simplex of K + 1 by stick breaking (bijective)."""

    domain, codomain, bijective = constraints.real_vector, constraints.simplex, True

    def __eq__(self, other):
        return isinstance(other, StickBreakingTransform)

    __hash__ = object.__hash__

    def _offset(self, n, like):
        kn = _kn()
        return n - kn.ones(like.shape[-1], dtype=like.dtype, device=like.device).cumsum(-1)

    def _call(self, x):
        kn = _kn()
        z = _clipped_sigmoid(x - self._offset(x.shape[-1] + 1, x).log())
        z_cumprod = (1 - z).cumprod(-1)
        pad = kn.nn.functional.pad
        return pad(z, [0, 1], value=1) * pad(z_cumprod, [1, 0], value=1)

    def _inverse(self, y):
        kn = _kn()
        y_crop = y[..., :-1]
        offset = self._offset(y.shape[-1], y_crop)
        sf = (1 - y_crop.cumsum(-1)).clamp(min=kn.finfo(y.dtype).tiny)
        return y_crop.log() - sf.log() + offset.log()

    def log_abs_det_jacobian(self, x, y):
        x = x - self._offset(x.shape[-1] + 1, x).log()
        return (-x + _kn().nn.functional.logsigmoid(x) + y[..., :-1].log()).sum(-1)

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return Size((*shape[:-1], shape[-1] + 1))

    def inverse_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return Size((*shape[:-1], shape[-1] - 1))


class IndependentTransform(Transform):
    """`base_transform` with its `reinterpreted_batch_ndims` rightmost dims read as event
    dims (its log-Jacobian summed over them)."""

    def __init__(self, base_transform, reinterpreted_batch_ndims, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.base_transform = base_transform.with_cache(cache_size)
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return IndependentTransform(self.base_transform, self.reinterpreted_batch_ndims,
                                    cache_size=cache_size)  # fmt: skip

    @property
    def domain(self):
        return constraints.independent(self.base_transform.domain,
                                       self.reinterpreted_batch_ndims)  # fmt: skip

    @property
    def codomain(self):
        return constraints.independent(self.base_transform.codomain,
                                       self.reinterpreted_batch_ndims)  # fmt: skip

    bijective = property(lambda self: self.base_transform.bijective)
    sign = property(lambda self: self.base_transform.sign)

    def _call(self, x):
        if x.dim() < self.domain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform(x)

    def _inverse(self, y):
        if y.dim() < self.codomain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform.inv(y)

    def log_abs_det_jacobian(self, x, y):
        result = self.base_transform.log_abs_det_jacobian(x, y)
        return _sum_rightmost(result, self.reinterpreted_batch_ndims)

    def __repr__(self):
        return f"{type(self).__name__}({self.base_transform!r}, {self.reinterpreted_batch_ndims})"

    def forward_shape(self, shape):
        return self.base_transform.forward_shape(shape)

    def inverse_shape(self, shape):
        return self.base_transform.inverse_shape(shape)


class ReshapeTransform(Transform):
    """The rightmost dims of shape `in_shape` reshaped to `out_shape` (a volume-preserving
    bijection: its log-Jacobian is 0)."""

    bijective = True

    def __init__(self, in_shape, out_shape, cache_size=0):
        self.in_shape, self.out_shape = Size(in_shape), Size(out_shape)
        if self.in_shape.numel() != self.out_shape.numel():
            raise ValueError("in_shape, out_shape have different numbers of elements")
        super().__init__(cache_size=cache_size)

    domain = property(lambda self: constraints.independent(constraints.real,
                                                           len(self.in_shape)))  # fmt: skip
    codomain = property(lambda self: constraints.independent(constraints.real,
                                                             len(self.out_shape)))  # fmt: skip

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return ReshapeTransform(self.in_shape, self.out_shape, cache_size=cache_size)

    def _call(self, x):
        batch = x.shape[: x.dim() - len(self.in_shape)]
        return x.reshape(*batch, *self.out_shape)

    def _inverse(self, y):
        batch = y.shape[: y.dim() - len(self.out_shape)]
        return y.reshape(*batch, *self.in_shape)

    def log_abs_det_jacobian(self, x, y):
        batch = x.shape[: x.dim() - len(self.in_shape)]
        return _kn().zeros(batch, dtype=x.dtype, device=x.device)

    def forward_shape(self, shape):
        cut = len(shape) - len(self.in_shape)
        if cut < 0 or Size(shape[cut:]) != self.in_shape:
            raise ValueError(f"Shape mismatch: expected {shape[cut:]} but got {self.in_shape}")
        return Size((*shape[:cut], *self.out_shape))

    def inverse_shape(self, shape):
        cut = len(shape) - len(self.out_shape)
        if cut < 0 or Size(shape[cut:]) != self.out_shape:
            raise ValueError(f"Shape mismatch: expected {shape[cut:]} but got {self.out_shape}")
        return Size((*shape[:cut], *self.in_shape))


class LowerCholeskyTransform(Transform):
    """Square matrices onto lower-triangular ones of positive diagonal (exp of the diagonal,
    the strict lower triangle kept)."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.lower_cholesky

    def __eq__(self, other):
        return isinstance(other, LowerCholeskyTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        return x.tril(-1) + _kn().diag_embed(x.diagonal(dim1=-2, dim2=-1).exp())

    def _inverse(self, y):
        return y.tril(-1) + _kn().diag_embed(y.diagonal(dim1=-2, dim2=-1).log())


class PositiveDefiniteTransform(Transform):
    """Square matrices onto positive-definite ones: `L @ L.mT` of their LowerCholesky."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.positive_definite

    def __eq__(self, other):
        return isinstance(other, PositiveDefiniteTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        x = LowerCholeskyTransform()(x)
        return x @ x.mT

    def _inverse(self, y):
        return LowerCholeskyTransform().inv(_kn().linalg.cholesky(y))


class CumulativeDistributionTransform(Transform):
    """`distribution.cdf` as a transform onto the unit interval (its inverse the icdf, its
    log-Jacobian the log density)."""

    bijective, codomain, sign = True, constraints.unit_interval, +1

    def __init__(self, distribution, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.distribution = distribution

    @property
    def domain(self):
        return self.distribution.support

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return type(self)(self.distribution, cache_size=cache_size)

    def _call(self, x):
        return self.distribution.cdf(x)

    def _inverse(self, y):
        return self.distribution.icdf(y)

    def log_abs_det_jacobian(self, x, y):
        return self.distribution.log_prob(x)


class ConstraintRegistry:
    """A table from constraint classes to factories of transforms (PyTorch's)."""

    def __init__(self):
        self._registry = {}

    def register(self, constraint, factory=None):
        """`factory(constraint) -> Transform` for constraints of this class (or of the class
        of this instance); a decorator without `factory`."""
        if factory is None:
            return lambda factory: self.register(constraint, factory)
        if isinstance(constraint, constraints.Constraint):
            constraint = type(constraint)
        if not isinstance(constraint, type) or not issubclass(constraint, constraints.Constraint):
            raise TypeError("Expected constraint to be either a Constraint subclass or "
                            f"instance, but got {constraint}")  # fmt: skip
        self._registry[constraint] = factory
        return factory

    def __call__(self, constraint):
        factory = self._registry.get(type(constraint))
        if factory is None:
            raise NotImplementedError(f"Cannot transform {type(constraint).__name__} constraints")
        return factory(constraint)


biject_to = ConstraintRegistry()
transform_to = ConstraintRegistry()


def _both(*cs):
    def decorator(fn):
        for c in cs:
            biject_to.register(c, fn)
            transform_to.register(c, fn)
        return fn

    return decorator


@_both(constraints.real)
def _to_real(constraint):
    return identity_transform


@biject_to.register(constraints.independent)
def _biject_independent(constraint):
    return IndependentTransform(biject_to(constraint.base_constraint),
                                constraint.reinterpreted_batch_ndims)  # fmt: skip


@transform_to.register(constraints.independent)
def _transform_independent(constraint):
    return IndependentTransform(transform_to(constraint.base_constraint),
                                constraint.reinterpreted_batch_ndims)  # fmt: skip


@_both(constraints.greater_than, constraints.greater_than_eq)
def _to_greater_than(constraint):
    return ComposeTransform([ExpTransform(), AffineTransform(constraint.lower_bound, 1)])


@_both(constraints.less_than)
def _to_less_than(constraint):
    return ComposeTransform([ExpTransform(), AffineTransform(constraint.upper_bound, -1)])


@_both(constraints.interval, constraints.half_open_interval)
def _to_interval(constraint):
    lower, upper = constraint.lower_bound, constraint.upper_bound
    if isinstance(lower, numbers.Number) and isinstance(upper, numbers.Number):
        if lower == 0 and upper == 1:
            return SigmoidTransform()
    return ComposeTransform([SigmoidTransform(), AffineTransform(lower, upper - lower)])


biject_to.register(constraints.simplex, lambda c: StickBreakingTransform())
transform_to.register(constraints.simplex, lambda c: SoftmaxTransform())
transform_to.register(constraints.lower_cholesky, lambda c: LowerCholeskyTransform())
transform_to.register(constraints.positive_definite, lambda c: PositiveDefiniteTransform())
transform_to.register(constraints.positive_semidefinite, lambda c: PositiveDefiniteTransform())
