"""`Module` and `Parameter`: PyTorch's module model, with parameters that become graph Variables.

A `Parameter` holds its value as a NumPy array from construction. Called on Symbols, a module
resolves each of its Parameters to ONE Variable per graph (named by the module path, e.g.
`fc1/weight`), so calling a module twice in a graph shares its Variables. Called on NumPy
arrays, it computes at once with the current values (no graph).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterator

import numpy as np

from ..errors import GraphError
from ..graph.core import Symbol, Variable
from ..graph.opdef import REGISTRY
from ..ops.core import apply, bind_graph
from ..runtime.backend import get_backend

__all__ = ["Module", "Parameter", "updates_for"]


class Parameter:
    """A module's value: trainable (a parameter) or not (a buffer such as a running mean).

    It keeps a NumPy value and the Variables made from it, one per graph. Its current value
    is that of the Variable of the graph it was most recently used in.

    >>> import kiln as kn, numpy as np
    >>> p = kn.nn.Parameter(np.zeros((2, 3), np.float32))
    >>> p.shape, p.dtype, p.trainable
    ((2, 3), dtype('float32'), True)
    """

    def __init__(self, value, trainable: bool = True, name: str | None = None):
        self._value = np.array(value, copy=True)
        self.trainable = trainable
        self.name = name
        self._vars: weakref.WeakValueDictionary = weakref.WeakValueDictionary()  # id(graph)
        self._last: Variable | None = None  # NOTE: strong, so training results outlive graphs

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

    def numpy(self) -> np.ndarray:
        """A copy of the current value."""
        return np.array(self.value, copy=True)

    def assign(self, value) -> None:
        """Sets the value here and in every Variable made from this Parameter."""
        array = np.asarray(value)
        if array.shape != self.shape:
            raise ValueError(f"cannot assign shape {array.shape} to {self!r}")
        if not np.can_cast(array.dtype, self.dtype, "same_kind"):
            raise TypeError(f"cannot assign {array.dtype} to {self!r}")
        self._value = np.array(array, dtype=self.dtype, copy=True)
        for var in list(self._vars.values()):
            var.assign(self._value)

    def variable_in(self, graph) -> Variable | None:
        """This Parameter's Variable in `graph`, or None if it has none there."""
        var = self._vars.get(id(graph))
        return var if var is not None and var.graph is graph else None

    def variable(self, graph) -> Variable:
        """This Parameter's Variable in `graph`, made (from the current value) if needed."""
        var = self.variable_in(graph)
        if var is None:
            var = Variable(self.value, name=self.name, trainable=self.trainable, graph=graph)
            self._vars[id(graph)] = var
        if self._last is not var:
            if self._last is not None:  # switching graphs: keep the latest value here too
                self._value = self._last.numpy()
            self._last = var
        return var

    def __repr__(self):
        kind = "Parameter" if self.trainable else "Buffer"
        return f"<{kind} {self.name or '?'}: {self.dtype}{list(self.shape)}>"


# The active module call of this thread: the graph its Parameters resolve in (None: NumPy).
_local = threading.local()


def _active() -> list:
    if not hasattr(_local, "calls"):
        _local.calls = []
    return _local.calls


def _graph_of(args) -> object | None:
    for a in args:
        if isinstance(a, Symbol):
            return a.graph
        if isinstance(a, (list, tuple)):
            found = _graph_of(a)
            if found is not None:
                return found
    return None


class Module:
    """Base class of layers and models, as PyTorch's `nn.Module`.

    Assigning a `Parameter` or a `Module` to an attribute registers it. Inside `forward`,
    `self.weight` is the Parameter's Variable in the graph of the call's Symbols (or its
    NumPy value on NumPy inputs). The graph built depends on `training` at call time: call
    `eval()` before building the evaluation graph (in the same `kn.Graph`, to share the
    Variables).

    >>> import kiln as kn, numpy as np
    >>> class Affine(kn.nn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.scale = kn.nn.Parameter(np.float32(2.0))
    ...     def forward(self, x):
    ...         return x * self.scale
    >>> with kn.Graph().as_default():
    ...     m = Affine()
    ...     y = m(kn.placeholder(kn.float32, (2,), name="x"))
    >>> [name for name, _ in m.named_parameters()], m.scale.variable_in(y.graph).name
    (['scale'], 'scale')
    """

    def __init__(self):
        object.__setattr__(self, "_parameters", {})
        object.__setattr__(self, "_modules", {})
        object.__setattr__(self, "_name", None)
        object.__setattr__(self, "training", True)

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} does not define forward()")

    def __call__(self, *args, **kwargs):
        calls = _active()
        graph = _graph_of((*args, *kwargs.values()))
        if graph is None and calls:
            graph = calls[-1]
        calls.append(graph)
        try:
            if graph is not None and self._name is not None:
                with graph.name_scope(self._name):
                    return self.forward(*args, **kwargs)
            return self.forward(*args, **kwargs)
        finally:
            calls.pop()

    # -- registration ------------------------------------------------------------------------

    def __setattr__(self, name, value):
        if "_parameters" not in self.__dict__:
            raise AttributeError(f"call Module.__init__() before assigning {name!r}")
        self._parameters.pop(name, None)
        self._modules.pop(name, None)
        if isinstance(value, (Parameter, Module)):
            self.__dict__.pop(name, None)
        if isinstance(value, Parameter):
            value.name = value.name or name
            self._parameters[name] = value
        elif isinstance(value, Module):
            if value._name is None:
                object.__setattr__(value, "_name", name)
            self._modules[name] = value
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name):
        params = self.__dict__.get("_parameters", {})
        if name in params:
            param = params[name]
            calls = _active()
            if not calls:
                return param
            return param.value if calls[-1] is None else param.variable(calls[-1])
        modules = self.__dict__.get("_modules", {})
        if name in modules:
            return modules[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._modules:
            del self._modules[name]
        else:
            object.__delattr__(self, name)

    def register_buffer(self, name: str, value) -> None:
        """Adds a non-trainable value (a running statistic): in `state_dict`, not trained."""
        setattr(self, name, Parameter(value, trainable=False, name=name))

    # -- traversal ---------------------------------------------------------------------------

    def named_modules(self, prefix: str = "") -> Iterator[tuple[str, Module]]:
        """(path, module) for this module and every descendant, each once."""
        seen: set[int] = set()
        stack = [(prefix, self)]
        while stack:
            path, module = stack.pop(0)
            if id(module) in seen:
                continue
            seen.add(id(module))
            yield path, module
            for name, child in module._modules.items():
                stack.append((f"{path}.{name}" if path else name, child))

    def modules(self) -> Iterator[Module]:
        return (m for _, m in self.named_modules())

    def named_children(self) -> Iterator[tuple[str, Module]]:
        return iter(self._modules.items())

    def children(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def _named_values(self, trainable: bool | None) -> Iterator[tuple[str, Parameter]]:
        seen: set[int] = set()
        for path, module in self.named_modules():
            for name, p in module._parameters.items():
                if id(p) in seen or (trainable is not None and p.trainable != trainable):
                    continue
                seen.add(id(p))
                yield (f"{path}.{name}" if path else name), p

    def named_parameters(self) -> Iterator[tuple[str, Parameter]]:
        """(path, Parameter) for every trainable Parameter, PyTorch's dotted paths."""
        return self._named_values(trainable=True)

    def parameters(self) -> Iterator[Parameter]:
        """Every trainable Parameter (give them to an optimizer)."""
        return (p for _, p in self.named_parameters())

    def named_buffers(self) -> Iterator[tuple[str, Parameter]]:
        return self._named_values(trainable=False)

    def buffers(self) -> Iterator[Parameter]:
        return (p for _, p in self.named_buffers())

    # -- mode, state, device -----------------------------------------------------------------

    def train(self, mode: bool = True) -> Module:
        """Sets `training` on this module and every descendant; graphs built later use it."""
        for m in self.modules():
            object.__setattr__(m, "training", bool(mode))
        return self

    def eval(self) -> Module:
        """`train(False)`: dropout off, batch norm on running statistics."""
        return self.train(False)

    def state_dict(self) -> dict[str, np.ndarray]:
        """Copies of every parameter's and buffer's current value, by dotted path."""
        return {name: p.numpy() for name, p in self._named_values(trainable=None)}

    def load_state_dict(self, state: dict, strict: bool = True) -> tuple[list, list]:
        """Sets values from `state` (and every Variable made from them). Errors list every
        missing or unexpected key and every shape mismatch; nothing changes on error.

        Returns (missing_keys, unexpected_keys), which `strict=False` tolerates.
        """
        own = dict(self._named_values(trainable=None))
        missing = [k for k in own if k not in state]
        unexpected = [k for k in state if k not in own]
        errors = [
            f"size mismatch for {k}: copying a param with shape {np.shape(state[k])} from "
            f"checkpoint, the shape in current model is {own[k].shape}"
            for k in own
            if k in state and np.shape(state[k]) != own[k].shape
        ]
        if strict and missing:
            errors.insert(0, f"Missing key(s) in state_dict: {', '.join(missing)}")
        if strict and unexpected:
            errors.insert(0, f"Unexpected key(s) in state_dict: {', '.join(unexpected)}")
        if errors:
            raise RuntimeError(
                f"Error(s) in loading state_dict for {type(self).__name__}:\n\t"
                + "\n\t".join(errors)
            )
        for key, p in own.items():
            if key in state:
                p.assign(state[key])
        return missing, unexpected

    def to(self, device) -> Module:
        """Checks that `device` is usable and returns self: in graph mode a Variable's value
        moves to the device of whatever Function or Session runs it."""
        get_backend(device)
        return self

    def _record_updates(self, output, new_values: dict) -> None:
        """Buffer updates of this call (`{name: new value}`): in graph mode `assign` nodes
        tied to `output` (see `updates_for`); on NumPy values, applied now."""
        graph = _active()[-1] if _active() else None
        if graph is None:
            for name, value in new_values.items():
                self._parameters[name].assign(value)
            return
        assigns = [
            apply("assign", self._parameters[name].variable(graph), value)
            for name, value in new_values.items()
        ]
        _UPDATES.setdefault(graph, []).append(
            (weakref.ref(output), list(map(weakref.ref, assigns)))
        )

    # -- printing ----------------------------------------------------------------------------

    def extra_repr(self) -> str:
        return ""

    def __repr__(self):
        lines = [
            f"  ({name}): " + repr(m).replace("\n", "\n  ") for name, m in self._modules.items()
        ]
        head = f"{type(self).__name__}({self.extra_repr()}"
        return head + ("\n" + "\n".join(lines) + "\n)" if lines else ")")


# graph -> [(weakref to a module's output, [weakrefs to its assign nodes])]. Weak throughout,
# so this registry never keeps a graph alive.
_UPDATES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def pending_updates(*outputs) -> list:
    """The `assign` Symbols recorded by module calls (BatchNorm's running statistics) whose
    outputs the given Symbols depend on, in creation order."""
    if not outputs:
        return []
    graph = outputs[0].graph
    records = _UPDATES.get(graph, [])
    if not records:
        return []
    seen, stack = set(), [s.node for s in outputs]
    while stack:
        node = stack.pop()
        if id(node) not in seen:
            seen.add(id(node))
            stack.extend(i.node for i in node.inputs)
    found = []
    for out_ref, assign_refs in records:
        out = out_ref()
        if out is not None and id(out.node) in seen:
            found.extend(a() for a in assign_refs if a() is not None)
    return found


def updates_for(*outputs) -> Symbol:
    """A train op that applies the buffer updates (BatchNorm running statistics) of the
    module calls that `outputs` depend on. `opt.minimize(loss)` includes them already; fetch
    this beside an output to update the statistics without training. Fetching returns None.

    >>> import kiln as kn, numpy as np
    >>> with kn.Graph().as_default():
    ...     bn = kn.nn.BatchNorm1d(2)
    ...     x = kn.placeholder(kn.float32, ("batch", 2), name="x")
    ...     y = bn(x)
    ...     sess = kn.Session()
    >>> data = np.array([[0.0, 2.0], [2.0, 6.0]], np.float32)
    >>> _ = sess.run(y, {x: data})                   # the output alone: no update
    >>> bn.running_mean.numpy()
    array([0., 0.], dtype=float32)
    >>> sess.run([y, kn.nn.updates_for(y)], {x: data})[1] is None
    True
    >>> bn.running_mean.numpy()
    array([0.1, 0.4], dtype=float32)
    """
    if not outputs or not all(isinstance(s, Symbol) for s in outputs):
        raise GraphError("updates_for takes one or more Symbols (module outputs)")
    return bind_graph(
        REGISTRY["group"], tuple(pending_updates(*outputs)), {}, graph=outputs[0].graph
    )
