"""The structural transforms of PyTorch's `torch.distributions.transforms`
(`StickBreakingTransform`, `IndependentTransform`, `ReshapeTransform`,
`LowerCholeskyTransform`, `PositiveDefiniteTransform`, `CorrCholeskyTransform`,
`CatTransform`, `StackTransform`, `CumulativeDistributionTransform`;
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

import math
import numbers

import numpy as np

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
    "CatTransform", "ConstraintRegistry", "CorrCholeskyTransform",
    "CumulativeDistributionTransform", "IndependentTransform", "StackTransform",
    "LowerCholeskyTransform", "PositiveDefiniteTransform", "ReshapeTransform",
    "StickBreakingTransform", "biject_to", "transform_to",
]  # fmt: skip


class StickBreakingTransform(Transform):
    """Reals of length K onto the simplex of K + 1 by stick breaking (bijective).

    >>> import kiln as kn
    >>> t = kn.distributions.transforms.StickBreakingTransform()
    >>> t.inv(t(kn.tensor([0.5, -1.0])))
    tensor([ 0.5000, -1.0000])
    """

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
    dims (its log-Jacobian summed over them).

    >>> import kiln as kn
    >>> T = kn.distributions.transforms
    >>> T.IndependentTransform(T.ExpTransform(), 1).log_abs_det_jacobian(kn.ones(3), None)
    tensor(3.)
    """

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
    bijection: its log-Jacobian is 0).

    >>> import kiln as kn
    >>> kn.distributions.transforms.ReshapeTransform((4,), (2, 2))(kn.zeros(3, 4)).shape
    kiln.Size([3, 2, 2])
    """

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
    the strict lower triangle kept).

    >>> import kiln as kn
    >>> kn.distributions.transforms.LowerCholeskyTransform()(kn.zeros(2, 2))
    tensor([[1., 0.],
            [0., 1.]])
    """

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
    """Square matrices onto positive-definite ones: `L @ L.mT` of their LowerCholesky.

    >>> import kiln as kn
    >>> kn.distributions.transforms.PositiveDefiniteTransform()(kn.ones(2, 2))
    tensor([[7.3891, 2.7183],
            [2.7183, 8.3891]])
    """

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
    log-Jacobian the log density).

    >>> import kiln as kn
    >>> d = kn.distributions
    >>> d.transforms.CumulativeDistributionTransform(d.Normal(0.0, 1.0))(kn.tensor(0.0))
    tensor(0.5000)
    """

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


def _tril_selection(n, diag, like):
    """The (N, n*n) 0/1 matrix taking the row-major lower triangle (below diagonal `diag`)
    of an n x n matrix to a vector of N, as a constant of `like`'s dtype."""
    rows, cols = np.tril_indices(n, k=diag)
    select = np.zeros((len(rows), n * n))
    select[np.arange(len(rows)), rows * n + cols] = 1.0
    return _kn().tensor(select, dtype=like.dtype, device=like.device)


def _vec_to_tril(vec, diag):
    n = round((-(1 + 2 * diag) + ((1 + 2 * diag) ** 2 + 8 * vec.shape[-1]
                                  + 4 * abs(diag) * (diag + 1)) ** 0.5) / 2)  # fmt: skip
    return (vec @ _tril_selection(n, diag, vec)).reshape(*vec.shape[:-1], n, n)


def _tril_to_vec(mat, diag):
    n = mat.shape[-1]
    flat = mat.reshape(*mat.shape[:-2], n * n)
    return flat @ _tril_selection(n, diag, mat).mT


class CorrCholeskyTransform(Transform):
    """Unconstrained vectors of D (D - 1) / 2 onto Cholesky factors of D x D correlation
    matrices (tanh, then stick breaking along each row), as PyTorch's.

    >>> import kiln as kn
    >>> kn.distributions.transforms.CorrCholeskyTransform()(kn.tensor([0.0]))
    tensor([[1., 0.],
            [0., 1.]])
    """

    domain, codomain, bijective = constraints.real_vector, constraints.corr_cholesky, True
    # (no __eq__: equal only to itself, as PyTorch's)

    def _call(self, x):
        kn = _kn()
        eps = kn.finfo(x.dtype).eps
        r = _vec_to_tril(x.tanh().clamp(min=-1 + eps, max=1 - eps), -1)
        z1m_cumprod_sqrt = (1 - r**2).sqrt().cumprod(-1)
        r = r + kn.eye(r.shape[-1], dtype=r.dtype, device=r.device)
        return r * kn.nn.functional.pad(z1m_cumprod_sqrt[..., :-1], [1, 0], value=1)

    def _inverse(self, y):
        kn = _kn()
        y_cumsum = 1 - (y * y).cumsum(-1)
        shifted = kn.nn.functional.pad(y_cumsum[..., :-1], [1, 0], value=1)
        t = _tril_to_vec(y, -1) / _tril_to_vec(shifted, -1).sqrt()
        return (t.log1p() - (-t).log1p()) / 2

    def log_abs_det_jacobian(self, x, y, intermediates=None):
        softplus = _kn().nn.functional.softplus
        y1m_cumsum = 1 - (y * y).cumsum(-1)
        stick = 0.5 * _tril_to_vec(y1m_cumsum, -2).log().sum(-1)
        tanh = -2 * (x + softplus(-2 * x) - math.log(2.0)).sum(-1)
        return stick + tanh

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        n = shape[-1]
        d = round((0.25 + 2 * n) ** 0.5 + 0.5)
        if d * (d - 1) // 2 != n:
            raise ValueError("Input is not a flattened lower-diagonal number")
        return Size((*shape[:-1], d, d))

    def inverse_shape(self, shape):
        if len(shape) < 2:
            raise ValueError("Too few dimensions on input")
        if shape[-2] != shape[-1]:
            raise ValueError("Input is not square")
        d = shape[-1]
        return Size((*shape[:-2], d * (d - 1) // 2))


def _check_parts(tseq):
    if not all(isinstance(t, Transform) for t in tseq):
        raise AssertionError("All elements of tseq must be Transform instances")
    return list(tseq)


def _check_along(z, dim, size, name):
    """PyTorch's checks of Cat/StackTransform's input: `dim` is one of `z`'s, of `size`."""
    if not -z.dim() <= dim < z.dim():
        raise AssertionError(f"{name}: dim {dim} is out of range for a {z.dim()}-d input")
    if z.shape[dim] != size:
        raise AssertionError(
            f"{name}: the input has size {z.shape[dim]} along dim {dim}, the transforms take {size}"
        )
    return z


class CatTransform(Transform):
    """`tseq[i]` applied to the `lengths[i]` slice of dim `dim` of its input, concatenated.

    >>> import kiln as kn
    >>> T = kn.distributions.transforms
    >>> T.CatTransform([T.ExpTransform(), T.AbsTransform()], 0, [1, 2])(kn.tensor([0.0, -1, 2]))
    tensor([1., 1., 2.])
    """

    def __init__(self, tseq, dim=0, lengths=None, cache_size=0):
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size=cache_size)
        self.transforms = _check_parts(tseq)
        self.lengths = [1] * len(self.transforms) if lengths is None else list(lengths)
        if len(self.lengths) != len(self.transforms):
            raise AssertionError(f"lengths ({len(self.lengths)}) must match transforms "
                                 f"({len(self.transforms)})")  # fmt: skip
        self.dim = dim

    event_dim = property(lambda self: max(t.event_dim for t in self.transforms))
    length = property(lambda self: sum(self.lengths))
    bijective = property(lambda self: all(t.bijective for t in self.transforms))

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return CatTransform(self.transforms, self.dim, self.lengths, cache_size)

    def _map(self, x, fn):
        _check_along(x, self.dim, self.length, "CatTransform")
        kn, start, parts = _kn(), 0, []
        for t, length in zip(self.transforms, self.lengths):
            parts.append(fn(t, x.narrow(self.dim, start, length)))
            start += length
        return kn.cat(parts, self.dim)

    def _call(self, x):
        return self._map(x, lambda t, v: t(v))

    def _inverse(self, y):
        return self._map(y, lambda t, v: t.inv(v))

    def log_abs_det_jacobian(self, x, y):
        _check_along(x, self.dim, self.length, "CatTransform")
        _check_along(y, self.dim, self.length, "CatTransform")
        kn, start, parts = _kn(), 0, []
        for t, length in zip(self.transforms, self.lengths):
            ladj = t.log_abs_det_jacobian(x.narrow(self.dim, start, length),
                                          y.narrow(self.dim, start, length))  # fmt: skip
            if t.event_dim < self.event_dim:
                ladj = _sum_rightmost(ladj, self.event_dim - t.event_dim)
            parts.append(ladj)
            start += length
        dim = (self.dim - x.dim() if self.dim >= 0 else self.dim) + self.event_dim
        return kn.cat(parts, dim) if dim < 0 else sum(parts)

    @constraints.dependent_property
    def domain(self):
        return constraints.cat([t.domain for t in self.transforms], self.dim, self.lengths)

    @constraints.dependent_property
    def codomain(self):
        return constraints.cat([t.codomain for t in self.transforms], self.dim, self.lengths)


class StackTransform(Transform):
    """`tseq[i]` applied to index i of dim `dim` of its input, stacked.

    >>> import kiln as kn
    >>> T = kn.distributions.transforms
    >>> T.StackTransform([T.ExpTransform(), T.AbsTransform()], 0)(kn.tensor([0.0, -3.0]))
    tensor([1., 3.])
    """

    def __init__(self, tseq, dim=0, cache_size=0):
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size=cache_size)
        self.transforms, self.dim = _check_parts(tseq), dim

    bijective = property(lambda self: all(t.bijective for t in self.transforms))

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return StackTransform(self.transforms, self.dim, cache_size)

    def _slices(self, z):
        _check_along(z, self.dim, len(self.transforms), "StackTransform")
        return [z.select(self.dim, i) for i in range(z.shape[self.dim])]

    def _call(self, x):
        return _kn().stack([t(v) for v, t in zip(self._slices(x), self.transforms)], self.dim)

    def _inverse(self, y):
        parts = [t.inv(v) for v, t in zip(self._slices(y), self.transforms)]
        return _kn().stack(parts, self.dim)

    def log_abs_det_jacobian(self, x, y):
        parts = [t.log_abs_det_jacobian(a, b)
                 for a, b, t in zip(self._slices(x), self._slices(y), self.transforms)]  # fmt: skip
        return _kn().stack(parts, self.dim)

    @constraints.dependent_property
    def domain(self):
        return constraints.stack([t.domain for t in self.transforms], self.dim)

    @constraints.dependent_property
    def codomain(self):
        return constraints.stack([t.codomain for t in self.transforms], self.dim)


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


@_both(constraints.corr_cholesky)
def _to_corr_cholesky(constraint):
    return CorrCholeskyTransform()


@biject_to.register(constraints.cat)
def _biject_cat(constraint):
    return CatTransform([biject_to(c) for c in constraint.cseq], constraint.dim,
                        constraint.lengths)  # fmt: skip


@transform_to.register(constraints.cat)
def _transform_cat(constraint):
    return CatTransform([transform_to(c) for c in constraint.cseq], constraint.dim,
                        constraint.lengths)  # fmt: skip


@biject_to.register(constraints.stack)
def _biject_stack(constraint):
    return StackTransform([biject_to(c) for c in constraint.cseq], constraint.dim)


@transform_to.register(constraints.stack)
def _transform_stack(constraint):
    return StackTransform([transform_to(c) for c in constraint.cseq], constraint.dim)
