"""`Parameter` and `Buffer`: a module's values, eager Tensors that also become graph Variables.

Each is a Tensor (the eager leaf that autograd fills and optimizers update in place) that
also keeps the Variables made from it, one per graph. Its current value is that of wherever
it was most recently used: a graph's Variable, or the Tensor itself. Reading the Tensor's
data after a graph used it copies the Variable's value back first.
"""

from __future__ import annotations

import copy
import weakref

import numpy as np

from .. import dtypes
from ..array_types import Size
from ..eager.dispatch import same_ops, set_traced_value
from ..eager.tensor import Tensor, make, version_of
from ..errors import ArgumentError, ArgumentTypeError, GraphError
from ..frontend.trace_locals import TracedLocal, symbol_of
from ..graph.core import Symbol, Variable, get_default_graph
from ..graph.region import outermost
from ..ops.core import apply
from ..ops.random import in_trace

__all__ = ["Buffer", "ModuleData", "ModuleValue", "Parameter", "module_data_of", "owner_of",
           "share", "shared_box", "tracing_values"]  # fmt: skip

# id(Variable) -> (weakref to the Variable, weakref to the value it was made from). Keyed by
# id, not by the Variable: Symbols compare elementwise, so they cannot be dict keys here.
_OWNERS: dict[int, tuple] = {}


def owner_of(var) -> ModuleValue | None:
    """The Parameter or Buffer that `var` was made from (by `.variable`), else None."""
    entry = _OWNERS.get(id(var))
    return entry[1]() if entry is not None and entry[0]() is var else None


# id(Variable) -> (weakref to the Variable, box): Variables of several graphs (one per
# kn.compile trace) that hold one value between runs, the value in `box` (a one-element list):
# an optimizer's slots and step count, which must go on from any trace to the next.
_SHARED: dict[int, tuple] = {}


def share(var, box: list) -> None:
    """Makes `var` one of the Variables whose value between runs is `box[0]`: a compiled
    program reads it from the box before a run and leaves its new value there after."""
    key = id(var)

    def forget(ref):
        if _SHARED.get(key, (None,))[0] is ref:
            del _SHARED[key]

    var._value = box[0]
    _SHARED[key] = (weakref.ref(var, forget), box)


def shared_box(var) -> list | None:
    """The box `var` shares its value through (`share`), else None."""
    entry = _SHARED.get(id(var))
    return entry[1] if entry is not None and entry[0]() is var else None


def _own(var, value) -> None:
    key = id(var)

    def forget(ref):
        if _OWNERS.get(key, (None,))[0] is ref:
            del _OWNERS[key]

    _OWNERS[key] = (weakref.ref(var, forget), weakref.ref(value))


def _array(data) -> np.ndarray:
    if isinstance(data, Tensor):
        data = data.detach()._data
        data = data.get() if hasattr(data, "get") else data  # NOTE: a CuPy array
    return np.array(data, copy=True)


class ModuleValue(Tensor):
    """What `Parameter` and `Buffer` share: a leaf Tensor owning a NumPy copy of `data`,
    plus one graph Variable per graph it is used in (see the module docstring)."""

    def __init__(self, data=None, requires_grad: bool = False, name: str | None = None):
        value = np.zeros((0,), np.float32) if data is None else _array(data)
        self.__dict__.update(_value=value, name=name, _last=None, _synced=0)
        # graph id -> Variable (weak); `_last` is strong, so training results outlive graphs
        self._vars = weakref.WeakValueDictionary()
        self._meta = None
        self._inference = False  # even if made inside inference_mode: it trains later
        self.requires_grad_(requires_grad)

    # The Tensor's data is `_value`, first brought up to date with the graph Variable used
    # last (`_last`) unless the Tensor was changed in place since they were last in step
    # (`_synced`, its version then): then the Tensor's value is the latest.
    @property
    def _data(self) -> np.ndarray:
        d = self.__dict__
        last = d["_last"]
        if last is not None:
            if d["_synced"] == version_of(self).value:
                if not np.array_equal(last.value, d["_value"]):
                    self._set(last.value)
                    d["_synced"] = version_of(self).value
            else:
                d["_last"] = None
        return d["_value"]

    @_data.setter
    def _data(self, array) -> None:
        self.__dict__["_value"] = array

    @property
    def shape(self):
        return Size(self.__dict__["_value"].shape)

    @property
    def dtype(self) -> dtypes.DType:
        return dtypes._PUBLIC[self.__dict__["_value"].dtype]

    @property
    def ndim(self) -> int:
        return self.__dict__["_value"].ndim

    @property
    def trainable(self) -> bool:
        """Whether optimizers and `kn.grad` train it: its `requires_grad`."""
        return self.requires_grad

    @property
    def value(self) -> np.ndarray:
        """The current value (not a copy: do not modify it)."""
        last = self._last
        if last is not None and self._synced == version_of(self).value:
            return last.value
        return self._value

    def numpy(self) -> np.ndarray:
        """A copy of the current value. (PyTorch's `numpy()` raises on a tensor that requires
        grad; kiln's modules read their values this way, so here it copies instead.)"""
        return np.array(self.value, copy=True)

    @property
    def data(self) -> Tensor:
        """PyTorch's `.data`: the same data without history. Assigning a Tensor to it
        (`p.data = t`, as PyTorch's) makes this value hold t's data, shared, of any shape
        or dtype, keeping its identity, `requires_grad` and `.grad`. Inside a kn.compile
        trace it is the value in the compiled program (`ModuleData`): what an op on it reads,
        and what an in-place change of it (`p.data.add_(...)`) changes on every call.

        >>> import kiln as kn
        >>> lin = kn.nn.Linear(2, 1, bias=False)
        >>> lin.weight.data = kn.ones(1, 2)
        >>> lin(kn.ones(1, 2)).item(), type(lin.weight).__name__
        (2.0, 'Parameter')
        """
        if _trace_graph() is not None:
            return ModuleData.of(self)
        return Tensor.data.fget(self)

    def detach(self) -> Tensor:
        """The same data without history; inside a kn.compile trace its value in the compiled
        program, without gradient (as `.data`)."""
        if _trace_graph() is not None:
            return ModuleData.of(self)
        return Tensor.detach(self)

    @property
    def grad(self) -> Tensor | None:
        """The gradient backward accumulated. Inside a kn.compile trace, the gradient in the
        compiled program (a graph value, or None where there is none): the one that
        `loss.backward()` there gave, added to the `.grad` the call started with, as
        `opt.step()` and `clip_grad_norm_` there see it."""
        graph = _trace_graph()
        if graph is None:
            return self._grad
        from ..optim import graph_step  # NOTE: lazy: kiln.optim imports kiln.nn

        var = graph_step.variable_of(self, graph)
        if var is None:
            return None
        graph_step.enter([var])
        entry = graph_step.pending_grads(graph).get(id(var))
        return None if entry is None else entry[1]

    @grad.setter
    def grad(self, value) -> None:
        graph = _trace_graph()
        if graph is None:
            Tensor.grad.fset(self, value)
            return
        from ..optim import graph_step  # NOTE: lazy: kiln.optim imports kiln.nn

        if value is None:
            graph_step.zero_grads([self], set_to_none=True)
            return
        var = self.variable(graph)
        graph_step.enter([var], cleared=True)
        graph_step.pending_grads(graph)[id(var)] = [var, _graph_value(value, var, graph)]

    def _traced_value(self, graph):
        """Its value in the kn.compile trace `graph`: its Variable, as changed by the steps and
        in-place changes traced before (`graph_step.stepped`)."""
        from ..optim import graph_step  # NOTE: lazy: kiln.optim imports kiln.nn

        return graph_step.stepped(self.variable(graph), isinstance(self, Buffer))

    def traced_update(self, value, op: str):
        """`_traced_assign` in the kn.compile trace being made; returns its new value there
        (`self.buf.mul_(d)` on what `self.buf` read there)."""
        graph = _trace_graph()
        self._traced_assign(graph, value, op)
        return self._traced_value(graph)

    def _traced_assign(self, graph, value, op: str) -> None:
        """An in-place change of it traced in `graph`: the compiled program assigns `value`
        (a graph value, or a tensor computed from constants) on each call, and later reads
        in the trace see it."""
        from ..optim import graph_step  # NOTE: lazy: kiln.optim imports kiln.nn
        from ..passes.vectorize import ancestors  # NOTE: lazy: the passes import kiln.nn
        from .module import keeps_grad  # NOTE: lazy: kiln.nn.module imports this module

        var = self.variable(graph)
        value = _graph_value(value, var, graph)
        made = {id(n) for n in ancestors([value])}
        used = {id(i.node) for n in var.graph.nodes for i in n.inputs}  # (a dead read, as an
        # in-place method's look-up of `p.data` makes, reads nothing before the change)
        first = all(id(n) in made or id(n) not in used
                    for n in var.graph.nodes if any(i is var for i in n.inputs))  # fmt: skip
        assign = apply("assign", var, value)
        if first:  # nothing read it before but the change (a projection of the weights at
            # the start of a forward): later reads are the changed parameter, whose gradient
            # goes to it (as PyTorch's leaf changed under no_grad), so the outputs keep theirs
            if assign.node.op.name == "stop_gradient":  # (made under no_grad)
                assign = assign.node.inputs[0]
            keeps_grad(assign)
        graph_step.note_update(var, value)

    @data.setter
    def data(self, value) -> None:
        graph = _trace_graph()
        if graph is not None and isinstance(value, (Symbol, Tensor)):  # the program's change
            self._traced_assign(graph, _traced_operand(value), "data")
            return
        if not isinstance(value, Tensor):
            raise ArgumentTypeError(
                f"{self.describe_name()}: .data must be assigned a Tensor, got "
                f"{type(value).__name__}"
            )
        array = value.detach().to(self.device)._data
        self.__dict__.update(_value=array, _last=None)
        version_of(self).value += 1

    def requires_grad_(self, requires_grad: bool = True) -> ModuleValue:
        """Marks it trained or frozen, here and in every graph Variable made from it."""
        super().requires_grad_(requires_grad)
        for var in list(self._vars.values()):
            var.trainable = bool(requires_grad)
        return self

    def assign(self, value) -> None:
        """Sets the value here (in place, as PyTorch's `copy_`) and in every Variable made
        from it."""
        array = np.asarray(value.detach().numpy() if isinstance(value, Tensor) else value)
        if array.shape != self._value.shape:
            raise ArgumentError(f"cannot assign shape {array.shape} to {self.describe_name()}")
        if not np.can_cast(array.dtype, self._value.dtype, "same_kind"):
            raise ArgumentTypeError(f"cannot assign {array.dtype} to {self.describe_name()}")
        self._last = None
        self._set(array)
        for var in list(self._vars.values()):
            var.assign(self._value)

    def _set(self, array) -> None:
        self._value[...] = array
        version_of(self).value += 1

    def _cast(self, dtype) -> None:
        """Converts the value (and `.grad`) to `dtype`, keeping this object (PyTorch's
        `param.data = param.data.to(dtype)` in `Module.to`). Its Variables in graphs built
        before keep their dtype: calling the module in those graphs again raises (see
        `variable`), and `kn.compile` retraces on the new dtype."""
        dtype = np.dtype(dtype)
        if dtype == self.dtype:
            return
        array = self.tensor()._value.astype(dtype)
        self.__dict__.update(_value=array, _last=None)
        version_of(self).value += 1
        grad = self._grad
        if grad is not None and grad.dtype != dtype:
            self._grad = make(grad.detach()._data.astype(dtype), grad._device)

    def _lay_out(self, layout) -> None:
        """Lays the value out as the probe `layout` (`Module.to(memory_format=...)`), keeping
        this object, as `_cast`."""
        from ..frontend.result_layouts import laid_out  # NOTE: lazy (the frontend builds on nn)

        array = self.tensor()._value
        if array.strides != tuple(k * array.itemsize for k in layout.strides):
            self.__dict__.update(_value=laid_out(array, layout), _last=None)
            version_of(self).value += 1

    def variable_in(self, graph) -> Variable | None:
        """Its Variable in `graph`, or None if it has none there."""
        var = self._vars.get(id(graph))
        return var if var is not None and var.graph is graph else None

    def variable(self, graph) -> Variable:
        """Its Variable in `graph`, made (from the current value) if needed."""
        var = self.variable_in(graph)
        if var is not None and var.dtype != self.dtype:
            raise GraphError(
                f"{self.describe_name()} was cast (Module.to, half(), ...) after this graph "
                f"made its {var.dtype} Variable '{var.name}' from it: build the graph again "
                "after casting the module"
            )
        made = var is None
        if made:
            trainable = self.requires_grad
            var = Variable(self.value, name=self.name, trainable=trainable, graph=graph)
            self._vars[id(graph)] = var
            _own(var, self)
            if not self._value.flags.c_contiguous:  # (`Module.to(memory_format=...)`'s layout)
                from ..frontend.layouts import keep_layout  # NOTE: lazy (as in `_lay_out`)
                from ..frontend.result_layouts import array_layout

                keep_layout(var, array_layout(self._value))
        if self._last is not var:
            self._data  # noqa: B018 (brings `_value` up to date with the graph used last)
            if not made:
                var.assign(self._value)
            self._last = var
            self._synced = version_of(self).value
        elif self._synced != version_of(self).value:  # changed in place since: push it
            var.assign(self._value)
            self._synced = version_of(self).value
        return var

    def tensor(self) -> ModuleValue:
        """Itself, with the latest value (kept for code written before it was a Tensor)."""
        self._data  # noqa: B018 (syncs from the graph that used it last)
        return self

    def taken(self) -> ModuleValue:
        """`tensor()`, for a compiled program that reads and writes its memory now: no
        other graph's Variable (one a failed trace made, say) syncs it back after that."""
        self._data  # noqa: B018
        self.__dict__["_last"] = None
        return self

    def describe_name(self) -> str:
        return f"{type(self).__name__} {self.name or '?'} ({self.dtype}{list(self.shape)})"

    def __deepcopy__(self, memo):
        new = type(self).__new__(type(self))
        ModuleValue.__init__(new, self.value, self.requires_grad, self.name)
        new.__dict__.update(
            (k, v)
            for k, v in self.__dict__.items()
            if k not in ("_value", "_vars", "_last", "_synced")
        )
        # PyTorch's: a Parameter's copy is a new leaf without `.grad` (a Buffer's keeps it)
        keep = self._grad is not None and not isinstance(self, Parameter)
        new._grad = copy.deepcopy(self._grad, memo) if keep else None
        memo[id(self)] = new
        return new

    def __reduce_ex__(self, protocol):
        return (type(self), (self.value, self.requires_grad, self.name))

    def __repr__(self):
        return f"{type(self).__name__} containing:\n{super().__repr__()}"


def _graph_value(value, var, graph):
    """`value` (a graph value, or a tensor computed from constants) as `var`'s new value in
    `graph`: of its dtype and shape."""
    if not isinstance(value, Symbol):
        from ..frontend.core import constant  # NOTE: lazy: the frontend imports kiln.nn

        return constant(
            np.broadcast_to(np.asarray(_array(value), var.dtype), var.shape), graph=graph
        )
    if value.dtype != var.dtype:
        value = apply("cast", value, dtype=var.dtype)
    if tuple(value.shape) != tuple(var.shape):
        value = apply("broadcast_to", value, shape=tuple(var.shape))
    return value


def _trace_graph():
    """The graph of the kn.compile trace being made in this thread (where a module's values
    are its Variables), else None."""
    if not in_trace():
        return None
    from ..optim import graph_step  # NOTE: lazy: kiln.optim imports kiln.nn

    graph = outermost(get_default_graph())
    return graph if graph_step.traces_grads(graph) else None


class ModuleData(Tensor):
    """`p.data` of a Parameter or Buffer `p` inside a kn.compile trace: a Tensor holding p's
    data whose value in the compiled program is p's, without gradient; an in-place change
    of it changes p on every call (PyTorch's hand-written update `p.data.add_(g, alpha=-lr)`,
    or `p.data.clamp_(-c, c)`)."""

    __slots__ = ("owner",)

    @classmethod
    def of(cls, owner: ModuleValue) -> ModuleData:
        t = object.__new__(cls)
        base = Tensor.data.fget(owner)
        t._data, t._meta, t.owner = base._data, base._meta, owner
        return t

    def _traced_value(self, graph):
        return apply("stop_gradient", self.owner._traced_value(graph))

    def _traced_assign(self, graph, value, op: str) -> None:
        self.owner._traced_assign(graph, value, op)


def _traced_operand(value):
    """`value` (a Tensor, a module's value or a Symbol) as what the trace reads for it."""
    found = traced_value(value) if isinstance(value, Tensor) else None
    return value if found is None else found


def module_data_of(symbol) -> ModuleData | None:
    """`.data` of a graph value that is a module's Variable in the kn.compile trace being made
    (as `self.weight` reads inside it, after a step too): that Parameter's `.data` there;
    else None."""
    graph = _trace_graph()
    if graph is None:
        return None
    var, node = symbol, symbol.node
    if node.op.name == "custom_grad" and len(node.inputs) == 2:  # read after a step
        var = node.inputs[1]
    owner = owner_of(var) if isinstance(var, Variable) else None
    if owner is None or owner.variable_in(graph) is not var:
        return None
    return ModuleData.of(owner)


def module_value_of(symbol) -> ModuleValue | None:
    """The Parameter or Buffer whose value now in the kn.compile trace being made `symbol`
    is (what `self.buf` reads there, after the changes traced before), else None."""
    from ..optim import graph_step  # NOTE: lazy: kiln.optim imports kiln.nn

    graph = _trace_graph()
    var = None if graph is None else graph_step.assigned_to(symbol, graph)
    if var is not None:  # a value it was given in the trace (`self.ema.mul_(a).add_(b)`)
        owner = owner_of(var)
        return owner if owner is not None and owner.variable_in(graph) is var else None
    data = module_data_of(symbol)
    if data is None or not graph_step.same_value(data.owner._traced_value(graph), symbol):
        return None
    return data.owner


def assign_buffer(module, name: str, value) -> None:
    """`module.name = value` for its buffer `name`: PyTorch's replacement of the buffer by
    the tensor `value`. Inside a kn.compile trace, a graph value (`self.n = self.n + 1`)
    is assigned to the buffer by the program on each call instead, as each eager call
    replaces it; it must keep the buffer's shape and dtype there."""
    old = module._buffers[name]
    if not isinstance(value, Symbol):
        gone = module.__dict__.get("_non_persistent_buffers_set", ())
        module.register_buffer(name, value, name not in gone if old is None else old.persistent)
        return
    graph = _trace_graph()
    if graph is None or old is None:
        raise ArgumentTypeError(
            f"cannot assign 'Symbol' as buffer '{name}' of {type(module).__name__} "
            "(kn.nn.Parameter, kn.nn.Buffer, a Module or None expected)"
        )
    from ..optim import graph_step  # NOTE: lazy: kiln.optim imports kiln.nn

    var = old.variable(graph)
    if value is graph_step.updated_to(var) or value is old._traced_value(graph):
        return  # `self.n += 1`: changed in place already
    if tuple(value.shape) != tuple(old.shape) or value.dtype != old.dtype:
        raise GraphError(
            f"kn.compile: {type(module).__name__}.{name} = a value of "
            f"{dtypes.short_name(value.dtype)}{list(value.shape)}: inside kn.compile a buffer "
            f"keeps its shape and dtype ({dtypes.short_name(old.dtype)}{list(old.shape)}); "
            f"assign `self.{name} = value.to(self.{name}.dtype)` of its shape, or register "
            "the new buffer outside the compiled function"
        )
    old._traced_assign(graph, value, "setattr")


def update_read(owner: ModuleValue, graph, value) -> bool:
    """A module's update of its buffer `owner` in the kn.compile trace `graph` (BatchNorm's
    running statistics), where the trace read the buffer (`rm = bn.running_mean` ahead of
    `bn(x)`): that read then stands for the new value, as the eager buffer it aliases, and
    the program assigns it (`functionalize.assign_inplace`). False where it has no read."""
    from ..frontend.functionalize import assign_inplace  # NOTE: lazy (as above)
    from ..optim import graph_step  # NOTE: lazy: kiln.optim imports kiln.nn

    var = owner.variable(graph) if graph_step.traces_grads(graph) else None
    read = None if var is None else graph_step.read_of(var)
    if read is None or isinstance(read, Variable):
        return False
    assign_inplace(read, _graph_value(value, var, graph), "update", len(graph.nodes))
    return True


def traced_value(t):
    """The graph value of a module's value `t` (or of its `.data`) in the kn.compile trace
    being made, else None: `kiln.eager.dispatch.traced_value` while a trace runs."""
    if type(t) is TracedLocal:  # a tensor the traced function made and wrote into
        return symbol_of(t)
    if not isinstance(t, (ModuleValue, ModuleData)):
        return None
    graph = _trace_graph()
    return None if graph is None else t._traced_value(graph)


class tracing_values:  # noqa: N801
    """While a kn.compile trace runs: ops on module values read their Variables there."""

    def __enter__(self):
        self.before = set_traced_value(traced_value)

    def __exit__(self, *exc):
        set_traced_value(self.before)
        return False


@same_ops
class Parameter(ModuleValue):
    """A trainable module value, as PyTorch's `nn.Parameter`: a Tensor that requires grad
    (unless `requires_grad=False`), registered by assigning it to a Module attribute.

    >>> import kiln as kn, numpy as np
    >>> p = kn.nn.Parameter(np.zeros((2, 3), np.float32))
    >>> isinstance(p, kn.Tensor), p.shape, p.numel(), p.requires_grad, p.is_leaf, p.device
    (True, kiln.Size([2, 3]), 6, True, True, device(type='cpu'))
    >>> p.requires_grad_(False).requires_grad
    False
    """

    def __init__(self, data=None, requires_grad: bool = True, name: str | None = None):
        super().__init__(data, requires_grad, name)


@same_ops
class Buffer(ModuleValue):
    """A module value that is not trained (a running mean), as PyTorch's `nn.Buffer`: in
    `state_dict`, not in `parameters()`. `Module.register_buffer` makes one.

    >>> import kiln as kn, numpy as np
    >>> b = kn.nn.Buffer(np.zeros(3, np.float32))
    >>> b.requires_grad, b.shape
    (False, kiln.Size([3]))
    """

    def __init__(self, data=None, persistent: bool = True, name: str | None = None):
        super().__init__(data, False, name)
        self.persistent = persistent
        # made as `kn.nn.Buffer(t)` (True), or by `register_buffer(name, t)` around a plain
        # tensor (False): only the first kind is registered where it is assigned to a module
        # attribute (`self.b = self.a` keeps a plain attribute, as PyTorch's)
        self._is_buffer = True

    def __reduce_ex__(self, protocol):
        return (type(self), (self.value, self.persistent, self.name))


def __getattr__(name: str):
    """PyTorch's lazy names of `torch.nn.parameter` (defined in kiln/nn/layers_lazy.py)."""
    if name in ("UninitializedParameter", "UninitializedBuffer", "is_lazy"):
        from . import layers_lazy  # NOTE: lazy: layers_lazy builds on this module

        return getattr(layers_lazy, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
