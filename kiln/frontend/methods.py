"""Python operators and NumPy-style methods on Symbol (installed when kiln is imported)."""

from __future__ import annotations

from ..graph.core import Symbol
from . import math as m
from . import shape as s


def _swap(fn):
    return lambda self, other: fn(other, self)


OPERATORS = {
    "__add__": m.add, "__radd__": _swap(m.add), "__sub__": m.sub, "__rsub__": _swap(m.sub),
    "__mul__": m.mul, "__rmul__": _swap(m.mul), "__truediv__": m.div,
    "__rtruediv__": _swap(m.div), "__floordiv__": m.floordiv,
    "__rfloordiv__": _swap(m.floordiv), "__mod__": m.mod, "__rmod__": _swap(m.mod),
    "__pow__": m.pow, "__rpow__": _swap(m.pow), "__matmul__": m.matmul,
    "__rmatmul__": _swap(m.matmul), "__neg__": m.neg, "__pos__": lambda x: x,
    "__abs__": m.abs, "__lt__": m.less, "__le__": m.less_equal, "__gt__": m.greater,
    "__ge__": m.greater_equal, "__eq__": m.equal, "__ne__": m.not_equal,
    "__and__": m.logical_and, "__or__": m.logical_or, "__invert__": m.logical_not,
    "__getitem__": s.getitem,
}  # fmt: skip

METHODS = {
    "sum": m.sum, "mean": m.mean, "max": m.max, "min": m.min, "prod": m.prod,
    "argmax": m.argmax, "argmin": m.argmin, "var": m.var, "std": m.std,
    "logsumexp": m.logsumexp, "exp": m.exp, "log": m.log, "sqrt": m.sqrt, "abs": m.abs,
    "tanh": m.tanh, "sigmoid": m.sigmoid, "relu": m.relu, "clip": m.clip, "round": m.round,
    "astype": m.cast, "matmul": m.matmul, "dot": m.dot, "reshape": None,
    "transpose": None, "permute": s.permute, "flatten": s.flatten, "squeeze": s.squeeze,
    "unsqueeze": s.unsqueeze, "broadcast_to": s.broadcast_to, "take": s.gather,
}  # fmt: skip


def _reshape_method(self, *shape):
    return s.reshape(self, shape[0] if len(shape) == 1 and not isinstance(shape[0], int) else shape)


def _transpose_method(self, *axes):
    if len(axes) == 1 and not isinstance(axes[0], int):
        axes = axes[0]
    return s.transpose(self, axes or None)


def install(cls=Symbol) -> None:
    """Puts the operators and methods on `cls` (Symbol now, eager Tensor later)."""
    for name, fn in OPERATORS.items():
        setattr(cls, name, fn)
    for name, fn in METHODS.items():
        setattr(cls, name, fn)
    cls.reshape = _reshape_method
    cls.transpose = _transpose_method
    cls.T = property(lambda self: s.transpose(self))
    cls.__hash__ = object.__hash__  # == is elementwise; Symbols hash by identity
    cls.__array_ufunc__ = None  # NumPy defers to the reflected operator
