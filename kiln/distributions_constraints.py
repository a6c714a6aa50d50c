"""`kn.distributions.constraints`: the sets a distribution's parameters and values live in,
PyTorch's `torch.distributions.constraints`. `check(value)` gives a bool tensor over the
batch (an `event_dim` of 1 or more reduces that many rightmost dims), which argument
validation (`validate_args`) and the transforms' `domain`/`codomain` use.

>>> import kiln as kn
>>> c = kn.distributions.constraints
>>> c.positive.check(kn.tensor([-1.0, 2.0]))
tensor([False,  True])
>>> c.simplex.check(kn.tensor([0.25, 0.75])), c.interval(0.0, 2.0)
(tensor(True), Interval(lower_bound=0.0, upper_bound=2.0))
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "Constraint", "MixtureSameFamilyConstraint", "boolean", "cat", "corr_cholesky", "dependent",
    "dependent_property", "greater_than",
    "greater_than_eq", "half_open_interval", "independent", "integer_interval", "interval",
    "is_dependent", "less_than", "lower_cholesky", "lower_triangular", "multinomial",
    "nonnegative", "nonnegative_integer", "one_hot", "positive", "positive_definite",
    "positive_integer", "positive_semidefinite", "real", "real_vector", "simplex", "square",
    "stack", "symmetric", "unit_interval",
]  # fmt: skip


def _kn():
    import kiln  # NOTE: lazy: kiln imports this module while it is being built

    return kiln


def _b(bound, value):
    """`bound` beside `value`: an eager tensor's data when `value` is a NumPy array."""
    data = getattr(bound, "_data", None)
    return data if data is not None and isinstance(value, np.ndarray) else bound


class Constraint:
    """A set of values: `check(value)` says which are in it (PyTorch's `Constraint`).
    `host`: its check takes NumPy arrays too (operators and `all`/`sum`/`reshape` only),
    which argument validation uses on eager tensors' data, at a fraction of the ops' cost."""

    is_discrete = False
    event_dim = 0
    host = False

    def check(self, value):
        raise NotImplementedError

    def __repr__(self):
        return type(self).__name__[1:] + "()"


class _Dependent(Constraint):
    """A placeholder for a set that depends on other parameters (Uniform's `low`): not
    checked."""

    def __init__(self, *, is_discrete=NotImplemented, event_dim=NotImplemented):
        self._is_discrete, self._event_dim = is_discrete, event_dim

    @property
    def is_discrete(self):
        if self._is_discrete is NotImplemented:
            raise NotImplementedError(".is_discrete cannot be determined statically")
        return self._is_discrete

    @property
    def event_dim(self):
        if self._event_dim is NotImplemented:
            raise NotImplementedError(".event_dim cannot be determined statically")
        return self._event_dim

    def __call__(self, *, is_discrete=NotImplemented, event_dim=NotImplemented):
        is_discrete = self._is_discrete if is_discrete is NotImplemented else is_discrete
        event_dim = self._event_dim if event_dim is NotImplemented else event_dim
        return _Dependent(is_discrete=is_discrete, event_dim=event_dim)

    def check(self, x):
        raise ValueError("Cannot determine validity of dependent constraint")


def is_dependent(constraint) -> bool:
    """Whether `constraint` is a `dependent` placeholder."""
    return isinstance(constraint, _Dependent)


class _DependentProperty(property, _Dependent):
    """A property that is also a dependent constraint (a distribution's `support` computed
    from its parameters)."""

    def __init__(self, fn=None, *, is_discrete=NotImplemented, event_dim=NotImplemented):
        property.__init__(self, fn)
        _Dependent.__init__(self, is_discrete=is_discrete, event_dim=event_dim)

    def __call__(self, fn):
        return _DependentProperty(fn, is_discrete=self._is_discrete, event_dim=self._event_dim)


class _IndependentConstraint(Constraint):
    """`base_constraint` with its `reinterpreted_batch_ndims` rightmost dims read as event
    dims: a value is in it when all of them are."""

    def __init__(self, base_constraint, reinterpreted_batch_ndims):
        self.base_constraint = base_constraint
        self.reinterpreted_batch_ndims = int(reinterpreted_batch_ndims)

    @property
    def is_discrete(self):
        return self.base_constraint.is_discrete

    @property
    def event_dim(self):
        return self.base_constraint.event_dim + self.reinterpreted_batch_ndims

    host = property(lambda self: self.base_constraint.host)

    def check(self, value):
        result = self.base_constraint.check(value)
        n = self.reinterpreted_batch_ndims
        if result.ndim < n:
            raise ValueError(f"Expected value.dim() >= {self.event_dim} but got {value.ndim}")
        if n:
            result = result.reshape(*result.shape[: result.ndim - n], -1).all(-1)
        return result

    def __repr__(self):
        return (f"{type(self).__name__[1:]}({self.base_constraint!r}, "
                f"{self.reinterpreted_batch_ndims})")  # fmt: skip


class MixtureSameFamilyConstraint(Constraint):
    """`base_constraint` of a mixture's components, checked with the component dim added
    back: a value is in it when it is for every component."""

    def __init__(self, base_constraint):
        self.base_constraint = base_constraint

    is_discrete = property(lambda self: self.base_constraint.is_discrete)
    event_dim = property(lambda self: self.base_constraint.event_dim)

    def check(self, value):
        if value.dim() < self.event_dim:
            raise ValueError(f"Expected value.dim() >= {self.event_dim} but got {value.dim()}")
        result = self.base_constraint.check(value.unsqueeze(-1 - self.event_dim))
        keep = value.dim() - self.event_dim
        return result.reshape(*result.shape[:keep], -1).all(-1)

    def __repr__(self):
        return f"{type(self).__name__}({self.base_constraint!r})"


class _Boolean(Constraint):
    is_discrete = True
    host = True

    def check(self, value):
        return (value == 0) | (value == 1)


class _OneHot(Constraint):
    is_discrete = True
    host = True
    event_dim = 1

    def check(self, value):
        is_boolean = (value == 0) | (value == 1)
        return is_boolean.all(-1) & (value.sum(-1) == 1)


class _Bounded(Constraint):
    host = True

    def _fields(self):
        return ", ".join(f"{k}={v}" for k, v in self.__dict__.items())

    def __repr__(self):
        return f"{type(self).__name__[1:]}({self._fields()})"


class _IntegerInterval(_Bounded):
    is_discrete = True

    def __init__(self, lower_bound, upper_bound):
        self.lower_bound, self.upper_bound = lower_bound, upper_bound

    def check(self, value):
        lower, upper = _b(self.lower_bound, value), _b(self.upper_bound, value)
        return (value % 1 == 0) & (lower <= value) & (value <= upper)


class _IntegerLessThan(_Bounded):
    is_discrete = True

    def __init__(self, upper_bound):
        self.upper_bound = upper_bound

    def check(self, value):
        return (value % 1 == 0) & (value <= _b(self.upper_bound, value))


class _IntegerGreaterThan(_Bounded):
    is_discrete = True

    def __init__(self, lower_bound):
        self.lower_bound = lower_bound

    def check(self, value):
        return (value % 1 == 0) & (value >= _b(self.lower_bound, value))


class _Real(Constraint):
    host = True

    def check(self, value):
        return value == value  # noqa: PLR0124  (False at NaN)


class _GreaterThan(_Bounded):
    def __init__(self, lower_bound):
        self.lower_bound = lower_bound

    def check(self, value):
        return _b(self.lower_bound, value) < value


class _GreaterThanEq(_GreaterThan):
    def check(self, value):
        return _b(self.lower_bound, value) <= value


class _LessThan(_Bounded):
    def __init__(self, upper_bound):
        self.upper_bound = upper_bound

    def check(self, value):
        return value < _b(self.upper_bound, value)


class _Interval(_Bounded):
    def __init__(self, lower_bound, upper_bound):
        self.lower_bound, self.upper_bound = lower_bound, upper_bound

    def check(self, value):
        return (_b(self.lower_bound, value) <= value) & (value <= _b(self.upper_bound, value))


class _HalfOpenInterval(_Interval):
    def check(self, value):
        return (_b(self.lower_bound, value) <= value) & (value < _b(self.upper_bound, value))


class _Simplex(Constraint):
    event_dim = 1
    host = True

    def check(self, value):
        return (value >= 0).all(-1) & (abs(value.sum(-1) - 1) < 1e-6)


class _Multinomial(Constraint):
    is_discrete = True
    event_dim = 1
    host = True

    def __init__(self, upper_bound):
        self.upper_bound = upper_bound

    def check(self, x):
        return (x >= 0).all(-1) & (x.sum(-1) <= _b(self.upper_bound, x))


class _LowerTriangular(Constraint):
    event_dim = 2

    def check(self, value):
        return (value.tril() == value).reshape(*value.shape[:-2], -1).all(-1)


class _LowerCholesky(Constraint):
    event_dim = 2

    def check(self, value):
        lower = (value.tril() == value).reshape(*value.shape[:-2], -1).all(-1)
        return lower & (value.diagonal(dim1=-2, dim2=-1) > 0).all(-1)


class _CorrCholesky(Constraint):
    """Lower-Cholesky factors of correlation matrices: positive diagonal, unit rows."""

    event_dim = 2

    def check(self, value):
        kn = _kn()
        tol = kn.finfo(value.dtype).eps * value.shape[-1] * 10
        row_norm = kn.linalg.norm(value.detach(), dim=-1)
        unit = ((row_norm - 1.0).abs() <= tol).all(-1)
        return _LowerCholesky().check(value) & unit


class _Square(Constraint):
    event_dim = 2

    def check(self, value):
        kn = _kn()
        return kn.full(value.shape[:-2], value.shape[-2] == value.shape[-1], dtype=kn.bool)


class _Symmetric(_Square):
    def check(self, value):
        if value.shape[-2] != value.shape[-1]:
            return super().check(value)
        return _kn().isclose(value, value.mT, atol=1e-6).all(-2).all(-1)


def _and_where_symmetric(sym, value, test):
    """`test(value)` where every matrix is symmetric, else `sym` (PyTorch's: the test is
    skipped); a graph's values are not known while it is built: both, chosen by `where`."""
    kn = _kn()
    if value.shape[-2] != value.shape[-1]:
        return sym
    if isinstance(sym, kn.Symbol):
        return kn.where(sym.all(), test(value), sym)
    return test(value) if bool(sym.all()) else sym


class _PositiveSemidefinite(_Symmetric):
    def check(self, value):
        test = lambda v: (_kn().linalg.eigvalsh(v) >= 0).all(-1)  # noqa: E731
        return _and_where_symmetric(super().check(value), value, test)


class _PositiveDefinite(_Symmetric):
    def check(self, value):
        test = lambda v: _kn().linalg.cholesky_ex(v).info == 0  # noqa: E731
        return _and_where_symmetric(super().check(value), value, test)


class _Cat(Constraint):
    """Each of `cseq` on its `lengths[i]` slice of dim `dim`."""

    def __init__(self, cseq, dim=0, lengths=None):
        self.cseq = list(cseq)
        self.lengths = [1] * len(self.cseq) if lengths is None else list(lengths)
        self.dim = dim

    @property
    def event_dim(self):
        return max(c.event_dim for c in self.cseq)

    def check(self, value):
        kn, start, checks = _kn(), 0, []
        for constr, length in zip(self.cseq, self.lengths):
            checks.append(constr.check(value.narrow(self.dim, start, length)))
            start += length
        return kn.cat(checks, self.dim)


class _Stack(Constraint):
    """Each of `cseq` on its index of dim `dim`."""

    def __init__(self, cseq, dim=0):
        self.cseq, self.dim = list(cseq), dim

    @property
    def event_dim(self):
        return max(c.event_dim for c in self.cseq)

    def check(self, value):
        kn = _kn()
        parts = [value.select(self.dim, i) for i in range(value.shape[self.dim])]
        return kn.stack([c.check(v) for v, c in zip(parts, self.cseq)], self.dim)


dependent = _Dependent()
dependent_property = _DependentProperty
independent = _IndependentConstraint
boolean = _Boolean()
one_hot = _OneHot()
nonnegative_integer = _IntegerGreaterThan(0)
positive_integer = _IntegerGreaterThan(1)
integer_interval = _IntegerInterval
real = _Real()
real_vector = independent(real, 1)
positive = _GreaterThan(0.0)
nonnegative = _GreaterThanEq(0.0)
greater_than = _GreaterThan
greater_than_eq = _GreaterThanEq
less_than = _LessThan
multinomial = _Multinomial
unit_interval = _Interval(0.0, 1.0)
interval = _Interval
half_open_interval = _HalfOpenInterval
simplex = _Simplex()
lower_triangular = _LowerTriangular()
lower_cholesky = _LowerCholesky()
corr_cholesky = _CorrCholesky()
square = _Square()
symmetric = _Symmetric()
positive_semidefinite = _PositiveSemidefinite()
positive_definite = _PositiveDefinite()
cat = _Cat
stack = _Stack
