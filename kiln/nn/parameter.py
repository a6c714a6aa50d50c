"""`Parameter`: a module's value, as one graph Variable per graph and one eager leaf Tensor."""

from __future__ import annotations

import weakref

import numpy as np

from ..eager.tensor import Tensor, make, version_of
from ..graph.core import Variable

__all__ = ["Parameter", "owner_of"]

# id(Variable) -> (weakref to the Variable, weakref to the Parameter it was made from). Keyed
# by id, not by the Variable: Symbols compare elementwise, so they cannot be dict keys here.
_OWNERS: dict[int, tuple] = {}


def owner_of(var) -> Parameter | None:
    """The Parameter that `var` was made from (by `Parameter.variable`), else None."""
    entry = _OWNERS.get(id(var))
    return entry[1]() if entry is not None and entry[0]() is var else None


def _own(var, param) -> None:
    key = id(var)

    def forget(ref):
        if _OWNERS.get(key, (None,))[0] is ref:
            del _OWNERS[key]

    _OWNERS[key] = (weakref.ref(var, forget), weakref.ref(param))


class Parameter:
    """A module's value: trainable (a parameter) or not (a buffer such as a running mean).

    It keeps a NumPy value, the Variables made from it (one per graph), and, once a module
    runs on Tensors, one eager leaf Tensor that shares the NumPy value's memory (requiring
    grad when trainable). Its current value is that of wherever it was most recently used:
    a graph's Variable, or the eager Tensor.

    >>> import kiln as kn, numpy as np
    >>> p = kn.nn.Parameter(np.zeros((2, 3), np.float32))
    >>> p.shape, p.dtype, p.trainable
    ((2, 3), dtype('float32'), True)
    >>> p.tensor().requires_grad, p.tensor().is_leaf
    (True, True)
    """

    def __init__(self, value, trainable: bool = True, name: str | None = None):
        self._value = np.array(value, copy=True)
        self.trainable = trainable
        self.name = name
        self._vars: weakref.WeakValueDictionary = weakref.WeakValueDictionary()  # id(graph)
        self._last: Variable | None = None  # NOTE: strong, so training results outlive graphs
        self._tensor: Tensor | None = None

    @property
    def shape(self) -> tuple:
        return self._value.shape

    @property
    def dtype(self):
        return self._value.dtype

    @property
    def ndim(self) -> int:
        return self._value.ndim

    @property
    def size(self) -> int:
        return self._value.size

    @property
    def value(self) -> np.ndarray:
        """The current value (not a copy: do not modify it)."""
        return self._last.value if self._last is not None else self._value

    @property
    def grad(self) -> Tensor | None:
        """The eager Tensor's accumulated gradient (None before any eager backward)."""
        return None if self._tensor is None else self._tensor.grad

    def numpy(self) -> np.ndarray:
        """A copy of the current value."""
        return np.array(self.value, copy=True)

    def assign(self, value) -> None:
        """Sets the value here (in place: the eager Tensor sees it, as after PyTorch's
        `copy_`) and in every Variable made from this Parameter."""
        array = np.asarray(value.detach().numpy() if isinstance(value, Tensor) else value)
        if array.shape != self.shape:
            raise ValueError(f"cannot assign shape {array.shape} to {self!r}")
        if not np.can_cast(array.dtype, self.dtype, "same_kind"):
            raise TypeError(f"cannot assign {array.dtype} to {self!r}")
        self._set(array)
        for var in list(self._vars.values()):
            var.assign(self._value)

    def _set(self, array) -> None:
        self._value[...] = array
        if self._tensor is not None:
            version_of(self._tensor).value += 1

    def variable_in(self, graph) -> Variable | None:
        """This Parameter's Variable in `graph`, or None if it has none there."""
        var = self._vars.get(id(graph))
        return var if var is not None and var.graph is graph else None

    def variable(self, graph) -> Variable:
        """This Parameter's Variable in `graph`, made (from the current value) if needed."""
        var = self.variable_in(graph)
        made = var is None
        if made:
            var = Variable(self.value, name=self.name, trainable=self.trainable, graph=graph)
            self._vars[id(graph)] = var
            _own(var, self)
        if self._last is not var:
            if self._last is not None:  # switching graphs: keep the latest value here too
                self._set(self._last.value)
            elif not made:  # the eager Tensor was used last: it has the latest value
                var.assign(self._value)
            self._last = var
        return var

    def tensor(self) -> Tensor:
        """This Parameter as an eager leaf Tensor, made on first use and then always the same
        (so `.grad` accumulates on it and optimizers update it in place)."""
        if self._tensor is None:
            t = make(self._value)
            t._inference = False  # even if first used inside inference_mode: it trains later
            self._tensor = t.requires_grad_(self.trainable and self._value.dtype.kind == "f")
        if self._last is not None:  # a graph used it last: its Variable has the latest value
            self._set(self._last.value)
            self._last = None
        return self._tensor

    def __repr__(self):
        kind = "Parameter" if self.trainable else "Buffer"
        return f"<{kind} {self.name or '?'}: {self.dtype}{list(self.shape)}>"
