"""The eager Tensor's autograd, memory, quantized and sparse attributes on graph values
(Symbols, in graph mode and inside a `kn.compile` trace). `register_hook` works: the hook
runs on the Symbol's whole gradient when kn.grad (or backward of a compiled function)
differentiates the graph. The others need a value, a tape or a layout a graph value does not
have, and raise kiln's error saying why; the attributes among them (`grad`, `grad_fn`, ...)
raise one that is an AttributeError too, so `getattr(x, "grad", None)` still answers."""

from __future__ import annotations

from ..errors import GraphError, LayoutError, SymbolAttributeError, UsageError, call_error
from ..graph.core import Symbol, user_site

__all__ = ["install_symbol_methods"]


def register_hook(self, hook):
    """`hook(grad)` runs on the whole gradient of this graph value when the graph is
    differentiated (`kn.grad`, or `backward()` of a `kn.compile`d function), before it goes
    on to the ops that made the value; a value it returns (same shape) replaces the gradient.
    It builds graph ops on the gradient (a Symbol), so it runs once per differentiation, not
    per run. Returns a handle whose `remove()` takes the hook off.

    >>> import kiln as kn, numpy as np
    >>> with kn.Graph().as_default():
    ...     x = kn.placeholder(kn.float32, (2,), name="x")
    ...     y = x * 3
    ...     h = y.register_hook(lambda g: g * 10)
    ...     (dx,) = kn.grad(y.sum(), [x])
    ...     f = kn.function([x], dx)
    >>> f(np.ones(2, np.float32))
    array([30., 30.], dtype=float32)
    """
    from ..nn.module_hooks import _add_hook, _HookDict  # NOTE: lazy: kiln.nn builds on this

    if not callable(hook):
        raise call_error(GraphError, f"register_hook: the hook must be callable, got "
                         f"{type(hook).__name__}", "register_hook", self)  # fmt: skip
    if self.dtype.kind not in "fc":
        why = f"'{self.name}' is {self.dtype}"
        raise call_error(GraphError, "cannot register a hook on a tensor that doesn't require "
                         f"gradient: {why}", "register_hook", self)  # fmt: skip
    hooks = self.graph.grad_hooks.setdefault(id(self), _HookDict())
    return _add_hook(hooks, hook, False)


_TAPE = (
    "a graph value has no autograd tape: its gradients are graph values too, made by "
    "kn.grad(y, [x]) in graph mode, or returned by the kn.compile'd function (or read from "
    "the .grad of its eager arguments after backward())"
)
_VALUE = "a graph value has no value or memory until the program runs"

# name -> why a Symbol cannot have it; these are attributes (properties) on a Tensor
ATTRIBUTES = {
    "grad": _TAPE, "grad_fn": _TAPE, "is_leaf": _TAPE, "requires_grad": _TAPE,
    "retains_grad": _TAPE, "output_nr": _TAPE,
}  # fmt: skip

# name -> (error class, why) for methods that raise when called
METHODS = {
    "retain_grad": (GraphError, _TAPE),
    "requires_grad_": (GraphError, _TAPE),
    "register_post_accumulate_grad_hook": (
        GraphError,
        "only a leaf tensor's .grad has post-accumulate hooks, and a graph value is no leaf; "
        "register it on the eager parameter",
    ),
    "data_ptr": (GraphError, _VALUE),
    "const_data_ptr": (GraphError, _VALUE),
    "is_set_to": (GraphError, _VALUE),
    "untyped_storage": (GraphError, _VALUE),
    "storage": (GraphError, _VALUE),
    "set_": (GraphError, _VALUE + " (it cannot be made to view other memory)"),
    "apply_": (GraphError, _VALUE + " (a Python function cannot run on its elements)"),
    "map_": (GraphError, _VALUE + " (a Python function cannot run on its elements)"),
    "map2_": (GraphError, _VALUE + " (a Python function cannot run on its elements)"),
    "as_strided_": (
        GraphError,
        _VALUE + " (it has no strides to change in place; "
        "use kn.as_strided, which returns a new value)",
    ),  # fmt: skip
    **dict.fromkeys(
        (
            "int_repr",
            "q_scale",
            "q_zero_point",
            "q_per_channel_scales",
            "q_per_channel_zero_points",
            "q_per_channel_axis",
            "qscheme",
        ),
        (
            LayoutError,
            "needs a quantized tensor (kn.quantize_per_tensor), got a graph value, "
            "which is strided: kiln's quantized tensors are eager",
        ),
    ),  # fmt: skip
    **dict.fromkeys(
        ("indices", "values", "coalesce", "is_coalesced"),
        (
            UsageError,
            "expected sparse coordinate tensor layout but got Strided (a graph value "
            "is dense: kiln's sparse tensors are eager)",
        ),
    ),  # fmt: skip
    **dict.fromkeys(
        ("crow_indices", "col_indices"),
        (
            UsageError,
            "expected sparse row compressed tensor layout but got Strided (a graph value "
            "is dense: kiln's sparse tensors are eager)",
        ),
    ),  # fmt: skip
    **dict.fromkeys(
        ("ccol_indices", "row_indices"),
        (
            UsageError,
            "expected sparse column compressed tensor layout but got Strided (a graph value "
            "is dense: kiln's sparse tensors are eager)",
        ),
    ),  # fmt: skip
    **dict.fromkeys(
        (
            "to_sparse",
            "to_sparse_coo",
            "to_sparse_csr",
            "to_sparse_csc",
            "to_sparse_bsr",
            "to_sparse_bsc",
            "sparse_mask",
        ),
        (
            GraphError,
            "kiln's sparse tensors are eager: a graph value stays dense (convert the "
            "result of the function or graph)",
        ),
    ),  # fmt: skip
}

# name -> what it returns: nothing to do for a graph value
IDENTITY = ("pin_memory", "share_memory_")


def _module_value(symbol):
    """The Parameter or Buffer whose value in a kn.compile trace `symbol` is (`self.weight`
    read there, under no_grad too), else None: its autograd attributes are that tensor's."""
    from ..nn.parameter import module_data_of  # NOTE: lazy: kiln.nn builds on this

    if symbol.node.op.name == "stop_gradient" and symbol.node.inputs:
        symbol = symbol.node.inputs[0]
    found = module_data_of(symbol)
    return None if found is None else found.owner


def _attribute(name: str, why: str):
    def get(self):
        owner = _module_value(self) if name in _OF_MODULE_VALUES else None
        if owner is not None:  # `model.fc.weight.grad` in a compiled step: the parameter's
            return getattr(owner, name)
        if name in _KNOWN_IN_TRACE:  # in a kn.compile trace, as eager code's tensor
            # (lazy: as the module values above)
            from .functionalize import in_compiled_trace, is_compiled_argument, traced_requires_grad

            if in_compiled_trace(self):
                needs = traced_requires_grad(self)  # made from one that requires grad
                if name == "requires_grad":
                    return needs
                if not needs:  # a leaf, without a grad_fn
                    return None if name == "grad_fn" else True
                if name == "is_leaf" and not is_compiled_argument(self):
                    return False  # (computed inside; an argument may be either: refused)
        raise SymbolAttributeError(
            f"'{name}' of Symbol '{self.name}' ({self.op.name}, created at {self.site}), "
            f"asked at {user_site()}: {why}"
        )

    def set_(self, value):
        owner = _module_value(self) if name == "grad" else None
        if owner is None:
            raise SymbolAttributeError(f"cannot set '{name}' of Symbol '{self.name}': {why}")
        owner.grad = value  # (`model.fc.weight.grad = None` in a compiled step)

    return property(get, set_)


_OF_MODULE_VALUES = ("grad", "requires_grad", "is_leaf")
_KNOWN_IN_TRACE = ("requires_grad", "is_leaf", "grad_fn")


def _refusing(name: str, cls, why: str):
    def method(self, *args, **kwargs):
        raise call_error(cls, f"{name}: {why}", name, self)

    method.__name__ = name
    method.__doc__ = f"Raises {cls.__name__} on a graph value: {why}."
    return method


def _identity(name: str):
    def method(self, *args, **kwargs):
        return self

    method.__name__ = name
    method.__doc__ = "The graph value itself: it has no memory to pin or share."
    return method


def _grad(self):
    """`.grad` of a module's parameter read inside a kn.compile trace (`model.fc.weight.grad`,
    before or after a step there): that Parameter's gradient in the trace; else refused, as
    a graph value has no tape."""
    from ..nn.parameter import module_data_of  # NOTE: lazy: kiln.nn builds on the frontend

    found = module_data_of(self)
    if found is None:
        from ..optim import graph_step  # NOTE: lazy: kiln.optim builds on the frontend

        if graph_step.grad_leaf(self) is not None:  # `w.grad` of an input leaf tensor
            return graph_step.leaf_grad(self)
        raise SymbolAttributeError(
            f"'grad' of Symbol '{self.name}' ({self.op.name}, created at {self.site}), "
            f"asked at {user_site()}: {_TAPE}"
        )
    return found.owner.grad


def _set_grad(self, value) -> None:
    """`.grad = value` of a module's parameter or an input leaf tensor (an argument, or a
    captured tensor) read inside a kn.compile trace (`w.grad = None` after a hand-written
    update); else refused."""
    from ..optim import graph_step  # NOTE: lazy: kiln.optim builds on the frontend

    owner = _module_value(self)
    if owner is not None:
        owner.grad = value
    elif graph_step.grad_leaf(self) is not None:
        graph_step.set_leaf_grad(self, value)
    else:
        raise SymbolAttributeError(f"cannot set 'grad' of Symbol '{self.name}': {_TAPE}")


def install_symbol_methods(cls=Symbol) -> None:
    """Puts the attributes above on `cls` (Symbol), leaving any it has already."""
    cls.register_hook = register_hook
    if "grad" not in cls.__dict__:
        cls.grad = property(_grad, _set_grad)
    for name, why in ATTRIBUTES.items():
        if name not in cls.__dict__:
            setattr(cls, name, _attribute(name, why))
    for name, (error, why) in METHODS.items():
        if name not in cls.__dict__:
            setattr(cls, name, _refusing(name, error, why))
    for name in IDENTITY:
        if name not in cls.__dict__:
            setattr(cls, name, _identity(name))
