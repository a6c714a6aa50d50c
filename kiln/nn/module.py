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

from .. import dtypes as dt
from ..eager import Tensor, no_grad, zeros_like
from ..errors import ArgumentError, ArgumentTypeError, GraphError, UsageError
from ..graph.core import Graph, Symbol
from ..graph.opdef import REGISTRY
from ..graph.region import outermost
from ..ops.core import apply, bind_graph
from ..ops.random import in_trace
from .module_hooks import (
    GLOBAL_BACKWARD_HOOKS,
    GLOBAL_BACKWARD_PRE_HOOKS,
    GLOBAL_FORWARD_HOOKS,
    GLOBAL_FORWARD_HOOKS_ALWAYS_CALLED,
    GLOBAL_FORWARD_HOOKS_WITH_KWARGS,
    GLOBAL_FORWARD_PRE_HOOKS,
    ModuleHooks,
    RemovableHandle,
    _add_hook,
    _HookDict,
    attach_legacy_hooks,
    call_with_backward_hooks,
    has_global_backward,
    has_legacy_hooks,
    run_always_called,
)
from .module_paths import ModulePaths
from .module_registration import BUFFER_HOOKS, MODULE_HOOKS, PARAMETER_HOOKS, registered
from .module_state import (
    apply_values,
    cast_values,
    empty_values,
    lay_out_values,
    load_state,
    parse_to,
    save_state,
)
from .parameter import Buffer, ModuleValue, Parameter, assign_buffer, update_read

__all__ = ["Buffer", "Module", "Parameter", "RemovableHandle", "updates_for"]


# The active module call of this thread: the graph its Parameters resolve in (None: NumPy;
# EAGER: Tensors).
_local = threading.local()
EAGER = "eager"


def _flag_hook(module, table: str, handle) -> None:
    """Marks hook `handle` in `module`'s set `table` (a hook registered `with_kwargs` or
    `always_call`); made on first use, so modules built before keep working."""
    flags = module.__dict__.get(table)
    if flags is None:
        flags = set()
        object.__setattr__(module, table, flags)
    flags.add(handle.id)
    handle.flags.append(flags)  # removing the hook unmarks it


def _active() -> list:
    if not hasattr(_local, "calls"):
        _local.calls = []
    return _local.calls


def _graph_of(args) -> object | None:
    """The graph of the first Symbol in `args` (nested lists and tuples too), else EAGER
    where there is a Tensor, else None."""
    found = None
    for a in args:
        if isinstance(a, Symbol):
            return a.graph
        if isinstance(a, Tensor):
            found = EAGER
        elif isinstance(a, (list, tuple)):
            inner = _graph_of(a)
            if inner is not None and inner is not EAGER:
                return inner
            found = found or inner
    return found


class Module(ModulePaths, ModuleHooks):
    """Base class of layers and models, as PyTorch's `nn.Module`.

    Assigning a `Parameter`, `Buffer` or `Module` to an attribute registers it. Inside
    `forward`, `self.weight` is the Parameter's Variable in the graph of the call's Symbols
    (the Parameter itself, a leaf Tensor, on Tensors; its NumPy value on NumPy inputs). The
    graph built depends on `training` at call time: call `eval()` before building the
    evaluation graph (in the same `kn.Graph`, to share the Variables).

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
        for name in ("_parameters", "_buffers", "_modules"):
            object.__setattr__(self, name, {})
        object.__setattr__(self, "_forward_hooks", _HookDict())
        object.__setattr__(self, "_forward_pre_hooks", _HookDict())
        for name in ("_backward_hooks", "_backward_pre_hooks", "_state_dict_pre_hooks",
                     "_state_dict_hooks", "_load_state_dict_pre_hooks",
                     "_load_state_dict_post_hooks"):  # fmt: skip
            object.__setattr__(self, name, _HookDict())
        # PyTorch's: the names of the buffers left out of state_dict (kept while one is None)
        object.__setattr__(self, "_non_persistent_buffers_set", set())
        object.__setattr__(self, "_compiled_call", None)
        object.__setattr__(self, "_name", None)
        object.__setattr__(self, "training", True)

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} does not define forward()")

    def __call__(self, *args, _compiled=True, **kwargs):
        compiled = self.__dict__.get("_compiled_call")
        if compiled is not None and _compiled:
            return compiled(*args, **kwargs)
        calls = _active()
        graph = _graph_of((*args, *kwargs.values()))
        if calls and (graph is None or (graph is EAGER and isinstance(calls[-1], Graph))):
            # no Symbol in the arguments: the graph being built or traced around the call
            # (kn.compile of a step reading its batch from a closure), else as around it
            graph = calls[-1]
        calls.append(graph)
        try:
            if graph is not None and graph is not EAGER and self._name is not None:
                with graph.name_scope(self._name):
                    return self._call_with_hooks(args, kwargs)
            return self._call_with_hooks(args, kwargs)
        finally:
            calls.pop()

    def _call_with_hooks(self, args, kwargs):
        d = self.__dict__
        if not (  # NOTE: no hooks (the common case): forward alone
            d.get("_forward_pre_hooks")
            or d.get("_forward_hooks")
            or d.get("_backward_hooks")
            or d.get("_backward_pre_hooks")
            or GLOBAL_FORWARD_PRE_HOOKS
            or GLOBAL_FORWARD_HOOKS
            or GLOBAL_BACKWARD_HOOKS
            or GLOBAL_BACKWARD_PRE_HOOKS
        ):
            return self.forward(*args, **kwargs)
        always = d.get("_forward_hooks_always_called")
        if not (always or GLOBAL_FORWARD_HOOKS_ALWAYS_CALLED):
            return self._hooked_call(args, kwargs, None)
        called: set = set()
        try:
            return self._hooked_call(args, kwargs, called)
        except Exception:
            run_always_called(self, args, kwargs, always or (), called)
            raise

    def _hooked_call(self, args, kwargs, called):
        with_kwargs = self.__dict__.get("_forward_pre_hooks_with_kwargs", ())
        for key, hook in [*GLOBAL_FORWARD_PRE_HOOKS.items(), *self._forward_pre_hooks.items()]:
            if key in with_kwargs:
                result = hook(self, args, kwargs)
                if result is not None:
                    if not (isinstance(result, tuple) and len(result) == 2):
                        raise UsageError(
                            "forward pre-hook must return None or a tuple of (new_args, "
                            f"new_kwargs), but got {result}."
                        )
                    args, kwargs = result
                continue
            result = hook(self, args)
            if result is not None:
                args = result if isinstance(result, tuple) else (result,)
        d = self.__dict__
        if d.get("_backward_hooks") or d.get("_backward_pre_hooks") or has_global_backward():
            if not has_legacy_hooks(self):
                return call_with_backward_hooks(
                    self, args, lambda a: self._forward(a, kwargs, called)
                )
            # register_backward_hook's (deprecated): on the last op's grad_fn, as PyTorch's
            if self._backward_pre_hooks:
                output = call_with_backward_hooks(
                    self, args, lambda a: self._forward(a, kwargs, called)
                )
            else:
                output = self._forward(args, kwargs, called)
            attach_legacy_hooks(self, args, output)
            return output
        return self._forward(args, kwargs, called)

    def _forward(self, args, kwargs, called=None):
        """forward, then the forward hooks (noting in `called` the `always_call` ones run)."""
        output = self.forward(*args, **kwargs)
        with_kwargs = self.__dict__.get("_forward_hooks_with_kwargs", ())
        for key, hook in [*GLOBAL_FORWARD_HOOKS.items(), *self._forward_hooks.items()]:
            if called is not None:
                called.add(key)
            if key in with_kwargs or key in GLOBAL_FORWARD_HOOKS_WITH_KWARGS:
                result = hook(self, args, kwargs, output)
            else:
                result = hook(self, args, output)
            if result is not None:
                output = result
        return output

    # -- registration ------------------------------------------------------------------------

    def __setattr__(self, name, value):
        # PyTorch's order: a Parameter, a name of a parameter (None only), a Module, a name of
        # a child (None only), a Buffer made as kn.nn.Buffer or a name of a buffer, else a
        # plain attribute
        if "_parameters" not in self.__dict__:
            raise AttributeError(f"cannot assign {name!r} before Module.__init__() call")
        if isinstance(value, Parameter):
            for table in (self.__dict__, self._buffers, self._modules):
                table.pop(name, None)
            self.register_parameter(name, value)
        elif name in self._parameters:
            self._not_none(name, value, "parameter", "kn.nn.Parameter or None")
            self._parameters[name] = None
        elif isinstance(value, Module):
            for table in (self.__dict__, self._buffers):
                table.pop(name, None)
            self.add_module(name, value)
        elif name in self._modules:
            self._not_none(name, value, "child module", "a Module or None")
            self._modules[name] = None
        elif name in self._buffers or getattr(value, "_is_buffer", False):
            if value is None:
                self._buffers[name] = None
            elif isinstance(value, Buffer):
                self.register_buffer(name, value, value.persistent)
            elif isinstance(value, (Tensor, np.ndarray, Symbol)):
                assign_buffer(self, name, value)  # PyTorch: a tensor replaces the buffer
            else:
                self._not_none(name, value, "buffer", "kn.nn.Buffer, a Tensor or None")
        else:
            object.__setattr__(self, name, value)

    def _not_none(self, name: str, value, kind: str, expected: str) -> None:
        if value is not None:
            raise ArgumentTypeError(
                f"cannot assign '{type(value).__name__}' as {kind} '{name}' of "
                f"{type(self).__name__} ({expected} expected)"
            )

    def _resolve(self, value):
        """A Parameter or Buffer as the active call sees it (see the class docstring)."""
        calls = _active()
        if value is None or not calls or not isinstance(value, ModuleValue):
            return value  # (a plain tensor: one that kn.func.functional_call put in)
        if calls[-1] is EAGER:
            return value.tensor()
        if calls[-1] is None:
            return value.value
        from ..optim.graph_step import stepped  # (optim imports nn)

        # a body captures its module's Variables; after opt.step(), their new values
        return stepped(value.variable(outermost(calls[-1])), isinstance(value, Buffer))

    def __getattr__(self, name):
        for table in ("_parameters", "_buffers"):
            values = self.__dict__.get(table, {})
            if name in values:
                return self._resolve(values[name])
        modules = self.__dict__.get("_modules", {})
        if name in modules:
            return modules[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __dir__(self):
        # PyTorch's: the class's names, the instance's, and the members (names that start
        # with a digit, a container's "0", "1", ..., left out)
        keys = [*dir(type(self)), *self.__dict__, *self._parameters, *self._modules,
                *self._buffers]  # fmt: skip
        return sorted({k for k in keys if not k[:1].isdigit()})

    def __delattr__(self, name):
        for table in (self._parameters, self._buffers, self._modules):
            if name in table:
                del table[name]
                self.__dict__.get("_non_persistent_buffers_set", set()).discard(name)
                return
        object.__delattr__(self, name)

    def _check_name(self, name, kind: str, table: dict) -> None:
        """PyTorch's rules for a new member's name: a string, without ".", not empty, and
        no attribute of another kind (another table's member, a method, a plain
        attribute)."""
        if not isinstance(name, str):
            raise ArgumentTypeError(f"{kind} name should be a string. Got {type(name).__name__}")
        if "." in name:
            raise KeyError(f'{kind} name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError(f'{kind} name can\'t be empty string ""')
        if name not in table and hasattr(self, name):
            raise KeyError(f"attribute '{name}' already exists")

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Adds `param` (a `Parameter`, or None for an absent one) as `name`.

        >>> import kiln as kn
        >>> m = kn.nn.Module()
        >>> m.register_parameter("w", kn.nn.Parameter(kn.ones(2)))
        >>> [n for n, _ in m.named_parameters()]
        ['w']
        """
        self._check_name(name, "parameter", self._parameters)
        if param is not None and not isinstance(param, Parameter):
            raise ArgumentTypeError(
                f"cannot assign '{type(param).__name__}' object to parameter '{name}' "
                "(kn.nn.Parameter or None required)"
            )
        param = param if param is None else registered(PARAMETER_HOOKS, self, name, param)
        self._buffers.pop(name, None)
        self.__dict__.get("_non_persistent_buffers_set", set()).discard(name)
        self._modules.pop(name, None)
        if param is not None:
            param.name = param.name or name
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor, persistent: bool = True) -> None:
        """Adds a value that is not trained (a running statistic) as `name`: in `state_dict`
        (unless `persistent=False`), not in `parameters()`. `tensor`: a Tensor, an array, or
        None.

        >>> import kiln as kn
        >>> m = kn.nn.Module()
        >>> m.register_buffer("count", kn.zeros(1))
        >>> list(m.state_dict()), list(m.parameters())
        (['count'], [])
        """
        self._check_name(name, "buffer", self._buffers)
        if tensor is not None and not isinstance(tensor, (Tensor, np.ndarray, np.generic, Symbol)):
            raise ArgumentTypeError(
                f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' "
                "(a Tensor, an array or None required)"
            )
        tensor = registered(BUFFER_HOOKS, self, name, tensor)
        if tensor is not None and not isinstance(tensor, Buffer):
            tensor = Buffer(tensor, persistent, name)
            tensor._is_buffer = False
        if tensor is not None:
            tensor.name = tensor.name or name
            tensor.persistent = persistent
        non_persistent = self.__dict__.setdefault("_non_persistent_buffers_set", set())
        (non_persistent.discard if persistent else non_persistent.add)(name)
        self._parameters.pop(name, None)
        self._modules.pop(name, None)
        self._buffers[name] = tensor

    def add_module(self, name: str, module: Module | None) -> None:
        """Adds the child `module` as `name` (as assigning it to an attribute does)."""
        self._check_name(name, "module", self._modules)
        if module is not None and not isinstance(module, Module):
            raise ArgumentTypeError(f"{type(module).__name__} is not a Module subclass")
        module = registered(MODULE_HOOKS, self, name, module)
        self._parameters.pop(name, None)
        self._buffers.pop(name, None)
        self.__dict__.get("_non_persistent_buffers_set", set()).discard(name)
        if module is not None and module._name is None:
            object.__setattr__(module, "_name", name)
        self._modules[name] = module

    register_module = add_module

    def to_empty(self, *, device=None, recurse: bool = True) -> Module:
        """Gives every parameter and buffer fresh, uninitialised memory of its shape and
        dtype on `device` (PyTorch's, for modules built on the meta device): initialise
        them afterwards (`reset_parameters()`, `load_state_dict`)."""
        return empty_values(self, device, recurse)

    def compile(self, *args, **kwargs) -> None:  # noqa: A003 (PyTorch's name)
        """Compiles this module's calls in place, as PyTorch's `Module.compile`: later calls
        run `kn.compile(module, *args, **kwargs)`."""
        from ..tracing.trace import compile as compile_

        object.__setattr__(self, "_compiled_call", compile_(self._uncompiled, *args, **kwargs))

    def _uncompiled(self, *args, **kwargs):
        return Module.__call__(self, *args, _compiled=False, **kwargs)

    # -- hooks -------------------------------------------------------------------------------

    def register_forward_pre_hook(self, hook, *, prepend: bool = False,
                                  with_kwargs: bool = False) -> RemovableHandle:  # fmt: skip
        """`hook(module, args)` runs before `forward`; a result other than None replaces the
        positional arguments (a tuple, or one value). With `with_kwargs=True`,
        `hook(module, args, kwargs)` instead, whose result is None or `(args, kwargs)`.

        >>> import kiln as kn
        >>> m = kn.nn.Identity()
        >>> handle = m.register_forward_pre_hook(lambda mod, args: args[0] * 2)
        >>> m(kn.ones(2))
        tensor([2., 2.])
        >>> handle.remove(); m(kn.ones(2))
        tensor([1., 1.])
        """
        handle = _add_hook(self._forward_pre_hooks, hook, prepend)
        if with_kwargs:
            _flag_hook(self, "_forward_pre_hooks_with_kwargs", handle)
        return handle

    def register_forward_hook(self, hook, *, prepend: bool = False, with_kwargs: bool = False,
                              always_call: bool = False) -> RemovableHandle:  # fmt: skip
        """`hook(module, args, output)` runs after `forward`; a result other than None
        replaces the output. With `with_kwargs=True`, `hook(module, args, kwargs, output)`;
        with `always_call=True` it also runs (with output None) when forward raises.

        >>> import kiln as kn
        >>> seen = []
        >>> m = kn.nn.ReLU()
        >>> handle = m.register_forward_hook(lambda mod, args, out: seen.append(out.shape))
        >>> _ = m(kn.ones(2, 3)); handle.remove(); _ = m(kn.ones(1))
        >>> seen
        [kiln.Size([2, 3])]
        """
        handle = _add_hook(self._forward_hooks, hook, prepend)
        if with_kwargs:
            _flag_hook(self, "_forward_hooks_with_kwargs", handle)
        if always_call:
            _flag_hook(self, "_forward_hooks_always_called", handle)
        return handle

    # -- traversal ---------------------------------------------------------------------------

    def named_modules(self, memo: set | None = None, prefix: str = "", remove_duplicate=True):
        """(path, module) for this module and every descendant, depth first in registration
        order (PyTorch's), each once unless `remove_duplicate=False`."""
        if memo is None:
            memo = set()
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, child in self._modules.items():
            if child is not None:
                path = f"{prefix}.{name}" if prefix else name
                yield from child.named_modules(memo, path, remove_duplicate)

    def modules(self) -> Iterator[Module]:
        """This module and every descendant (see `named_modules`)."""
        return (m for _, m in self.named_modules())

    def named_children(self) -> Iterator[tuple[str, Module]]:
        """(name, child) for each direct child, each once."""
        seen: set[int] = set()
        for name, child in self._modules.items():
            if child is not None and id(child) not in seen:
                seen.add(id(child))
                yield name, child

    def children(self) -> Iterator[Module]:
        return (m for _, m in self.named_children())

    def _named_members(self, table: str, prefix: str, recurse: bool, remove_duplicate: bool):
        seen: set[int] = set()
        modules = (
            self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
            if recurse
            else [(prefix, self)]
        )
        for path, module in modules:
            for name, value in getattr(module, table).items():
                if value is None or remove_duplicate and id(value) in seen:
                    continue
                seen.add(id(value))
                yield (f"{path}.{name}" if path else name), value

    def named_parameters(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Parameter]]:
        """(dotted path, Parameter) for every Parameter, frozen ones included, in PyTorch's
        order: a module's own, then its children's, depth first in registration order."""
        return self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        """Every Parameter (give them to an optimizer: it skips frozen ones)."""
        return (p for _, p in self.named_parameters(recurse=recurse))

    def named_buffers(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Buffer]]:
        return self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Buffer]:
        return (b for _, b in self.named_buffers(recurse=recurse))

    def _apply(self, fn, recurse: bool = True) -> Module:
        """`fn` of every parameter and buffer (and gradient) becomes its data (PyTorch's)."""
        return apply_values(self, fn, recurse)

    def apply(self, fn) -> Module:
        """Calls `fn(module)` on every child (recursively) and then on this module, as
        PyTorch's `apply` (to initialize weights); returns this module.

        >>> import kiln as kn
        >>> model = kn.nn.Sequential(kn.nn.Linear(2, 2), kn.nn.ReLU())
        >>> order = []
        >>> _ = model.apply(lambda m: order.append(type(m).__name__))
        >>> order
        ['Linear', 'ReLU', 'Sequential']
        """
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    # -- mode, state, device -----------------------------------------------------------------

    def train(self, mode: bool = True) -> Module:
        """Sets `training` here and, through their `train`, on every child; graphs built
        later use it."""
        if not isinstance(mode, bool):
            raise ArgumentError("training mode is expected to be boolean")
        object.__setattr__(self, "training", mode)
        for child in self.children():
            child.train(mode)
        return self

    def eval(self) -> Module:
        """`train(False)`: dropout off, batch norm on running statistics."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        """Freezes (False) or unfreezes every Parameter; returns this module."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def share_memory(self) -> Module:
        """`share_memory_()` of every parameter, buffer and parameter `.grad`: processes
        forked afterwards train the same weights (Hogwild), as PyTorch's; see
        `Tensor.share_memory_` for what kiln shares. Returns this module.

        >>> import kiln as kn
        >>> lin = kn.nn.Linear(2, 1).share_memory()
        >>> all(p.is_shared() for p in lin.parameters())
        True
        """
        for value in (*self.parameters(), *self.buffers()):
            value.share_memory_()
            if value.grad is not None:
                value.grad.share_memory_()
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clears the `.grad` of every parameter (PyTorch's default: to None); in a graph
        (kn.compile, graph mode), also the gradients `loss.backward()` left there."""
        from ..optim.graph_step import zero_grads  # NOTE: lazy, optim imports nn

        if zero_grads(list(self.parameters()), set_to_none):
            return  # kn.compile: each call clears the `.grad`s (kiln/tracing/traced.py)
        for p in self.parameters():
            grad = p.grad
            if grad is None:
                continue
            if set_to_none or grad.requires_grad:
                p.grad = None if set_to_none else zeros_like(grad)
            else:
                with no_grad():
                    grad.zero_()  # in place, as PyTorch: references to it see the zeros

    def _state_items(self) -> list[tuple[str, ModuleValue]]:
        """(key, value) of `state_dict`, in PyTorch's order: per module (depth first), its
        parameters, then its persistent buffers; a shared module is there under each path."""
        items = []
        for path, module in self.named_modules(remove_duplicate=False):
            own = [*module._parameters.items()]
            own += [(k, b) for k, b in module._buffers.items() if b is None or b.persistent]
            prefix = f"{path}." if path else ""
            items += [(prefix + name, value) for name, value in own if value is not None]
        return items

    def state_dict(self, *args, destination=None, prefix: str = "", keep_vars: bool = False):
        """Every parameter and persistent buffer by dotted path (PyTorch's order, see
        `_state_items`), as PyTorch's: detached Tensors sharing memory with them (a training
        step changes them too: `copy.deepcopy` or `clone()` to keep a snapshot), the
        Parameters and Buffers themselves with `keep_vars=True`. Keys start with `prefix`;
        they are added to `destination` if given (returned), else to a new OrderedDict.

        >>> import kiln as kn
        >>> m = kn.nn.Linear(2, 1)
        >>> state = m.state_dict()
        >>> list(state), type(state["weight"]).__name__, state["weight"].requires_grad
        (['weight', 'bias'], 'Tensor', False)
        >>> list(m.state_dict(prefix="fc.", keep_vars=True).values())[0] is m.weight
        True
        """
        return save_state(self, destination, prefix, keep_vars, args)

    def load_state_dict(self, state_dict: dict, strict: bool = True, assign: bool = False):
        """Copies values from `state_dict` (Tensors or arrays, cast to each value's dtype)
        here and into every Variable made from them. Errors list every missing or unexpected
        key and every shape mismatch; nothing changes on error. Returns (missing_keys,
        unexpected_keys), which `strict=False` tolerates. With `assign=True` the state's
        values replace the Parameters and Buffers (new ones, of the state's dtype, keeping
        requires_grad), as PyTorch's; build an optimizer after that."""
        return load_state(self, dict(self._state_items()), state_dict, strict, assign)

    def to(self, *args, **kwargs) -> Module:
        """Casts the floating-point parameters and buffers (integer ones, as BatchNorm's
        `num_batches_tracked`, keep theirs) and checks the device, as PyTorch's
        `to(device=None, dtype=None, non_blocking=False)`, `to(dtype)`, `to(tensor)`; returns
        self. The Parameters stay the same objects (build an optimizer after casting). NOTE:
        kiln keeps module values in host memory: the Function, Session or `kn.compile`
        program that runs them copies them to its device, so the device is only checked.

        >>> import kiln as kn
        >>> bn = kn.nn.BatchNorm1d(2).to("cpu", kn.float16)
        >>> bn.weight.dtype, bn.num_batches_tracked.dtype
        (kiln.float16, kiln.int64)
        """
        _, dtype, _ = parse_to(*args, **kwargs)
        if dtype is not None:
            if not (dt.is_float(dtype) or dtype.kind == "c"):
                raise ArgumentTypeError(
                    "nn.Module.to only accepts floating point or complex dtypes, but got "
                    f"desired dtype={dtype}"
                )
            cast_values(self, dtype)
        return lay_out_values(self, kwargs.get("memory_format"))  # (channels_last: 4-D ones)

    def cpu(self) -> Module:
        """`to("cpu")`."""
        return self.to("cpu")

    def cuda(self, device=None) -> Module:
        """`to("cuda")` (or `"cuda:N"` for `device=N`): checks the GPU is usable."""
        return self.to("cuda" if device is None else device)

    def half(self) -> Module:
        """`to(kn.float16)`: floating-point parameters and buffers only."""
        return self.to(dt.float16)

    def float(self) -> Module:  # noqa: A003 (PyTorch's name)
        return self.to(dt.float32)

    def double(self) -> Module:
        return self.to(dt.float64)

    def bfloat16(self) -> Module:
        return self.to(dt.bfloat16)

    def type(self, dst_type) -> Module:
        """Casts EVERY parameter and buffer to `dst_type` (integer ones too, as PyTorch's);
        returns self."""
        cast_values(self, dst_type, only_floating=False)
        return self

    def _value_named(self, name: str) -> ModuleValue:
        return self._parameters[name] if name in self._parameters else self._buffers[name]

    def _record_updates(self, output, new_values: dict) -> None:
        """Buffer updates of this call (`{name: new value}`): in graph mode `assign` nodes
        tied to `output` (see `updates_for`); on NumPy values and Tensors, applied now."""
        graph = _active()[-1] if _active() else None
        if graph is None or graph is EAGER:
            with no_grad():
                for name, value in new_values.items():
                    self._value_named(name).assign(value)
            return
        assigns = []
        for name, value in new_values.items():
            if in_trace() and update_read(self._value_named(name), outermost(graph), value):
                continue  # (the read before stands for the new value: `update_read`)
            var = self._value_named(name).variable(graph)
            assigns.append(apply("assign", var, value))
            if in_trace():  # a later read in this call sees it (BatchNorm used twice)
                from ..optim.graph_step import note_update  # (optim imports nn)

                note_update(var, value)
        record_assigns(output, assigns)

    # -- printing ----------------------------------------------------------------------------

    def extra_repr(self) -> str:
        return ""

    def __repr__(self):
        # PyTorch's layout: a one-line extra_repr alone stays on the first line; otherwise
        # every extra_repr line and child goes on its own line, indented by 2
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        children = [
            f"({name}): " + repr(m).replace("\n", "\n  ") for name, m in self._modules.items()
        ]
        head = f"{type(self).__name__}("
        if len(extra_lines) == 1 and not children:
            return head + extra_lines[0] + ")"
        lines = extra_lines + children
        return head + ("\n  " + "\n  ".join(lines) + "\n)" if lines else ")")


# graph -> [(weakref to a module's output, [weakrefs to its assign nodes])]. Weak throughout,
# so this registry never keeps a graph alive.
_UPDATES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


_KEEPS_GRAD: dict = {}  # id -> weakref of each assign that leaves the gradient as it is


def keeps_grad(assign) -> None:
    """Marks an `assign` as an in-place change made before the value is read (embedding's
    `max_norm` renorm): kn.compile's gradients flow on through it (an optimizer's do not)."""
    key = id(assign)
    _KEEPS_GRAD[key] = weakref.ref(assign, lambda _, k=key: _KEEPS_GRAD.pop(k, None))


def keeps_gradient(assign) -> bool:
    ref = _KEEPS_GRAD.get(id(assign))
    return ref is not None and ref() is assign


def record_assigns(output: Symbol, assigns: list) -> None:
    """Ties the `assign` Symbols `assigns` to `output`: they apply with its updates
    (`updates_for`, `opt.minimize`), as a module's buffer updates do."""
    _UPDATES.setdefault(output.graph, []).append(
        (weakref.ref(output), list(map(weakref.ref, assigns)))
    )


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
