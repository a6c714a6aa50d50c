"""`Module`: PyTorch's module model, with parameters that become graph Variables.

A `Parameter` holds its value as a NumPy array from construction. Called on Symbols, a module
resolves each of its Parameters to ONE Variable per graph (named by the module path, e.g.
`fc1/weight`), so calling a module twice in a graph shares its Variables. Called on eager
Tensors, each Parameter is its one leaf Tensor (autograd fills its `.grad`). Called on NumPy
arrays, it computes at once with the current values (no graph).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterator

import numpy as np

from ..eager import Tensor, no_grad, zeros_like
from ..errors import GraphError
from ..graph.core import Symbol
from ..graph.opdef import REGISTRY
from ..ops.core import apply, bind_graph
from ..runtime.backend import get_backend
from .parameter import Parameter

__all__ = ["Module", "Parameter", "updates_for"]


# The active module call of this thread: the graph its Parameters resolve in (None: NumPy;
# EAGER: Tensors).
_local = threading.local()
EAGER = "eager"


def _active() -> list:
    if not hasattr(_local, "calls"):
        _local.calls = []
    return _local.calls


def _graph_of(args) -> object | None:
    for a in args:
        if isinstance(a, Symbol):
            return a.graph
        if isinstance(a, Tensor):
            return EAGER
        if isinstance(a, (list, tuple)):
            found = _graph_of(a)
            if found is not None:
                return found
    return None


class Module:
    """Base class of layers and models, as PyTorch's `nn.Module`.

    Assigning a `Parameter` or a `Module` to an attribute registers it. Inside `forward`,
    `self.weight` is the Parameter's Variable in the graph of the call's Symbols (its leaf
    Tensor on Tensors, its NumPy value on NumPy inputs). The graph built depends on `training`
    at call time: call `eval()` before building the evaluation graph (in the same `kn.Graph`,
    to share the Variables).

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
            if graph is not None and graph is not EAGER and self._name is not None:
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
            if calls[-1] is EAGER:
                return param.tensor()
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

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clears the eager `.grad` of every parameter (PyTorch's default: to None)."""
        for p in self.parameters():
            if p._tensor is not None and p._tensor.grad is not None:
                p._tensor.grad = None if set_to_none else zeros_like(p._tensor.grad)

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
        tied to `output` (see `updates_for`); on NumPy values and Tensors, applied now."""
        graph = _active()[-1] if _active() else None
        if graph is None or graph is EAGER:
            with no_grad():
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
