"""A module's backward hooks, as PyTorch's `register_full_backward_hook` and
`register_full_backward_pre_hook`: a call of a module that has them passes its tensor
arguments and its tensor results through an identity `kn.autograd.Function` twice, whose
backwards see the gradients of the results (the pre-hooks run there, and may replace them)
and then those of the arguments (the hooks run there, with both, and may replace the
arguments'). In graph mode and under `kn.compile` the hooks run while the gradient graph is
built, on Symbols: what they return is compiled; their side effects happen then, once.

>>> import kiln as kn
>>> lin = kn.nn.Linear(2, 1)
>>> seen = []
>>> handle = lin.register_full_backward_hook(lambda m, gi, go: seen.append(go[0].shape))
>>> lin(kn.ones(3, 2, requires_grad=True)).sum().backward()
>>> seen
[kiln.Size([3, 1])]
"""

from __future__ import annotations

import os
import sys
import warnings
import weakref

from .. import dtypes as dt
from ..eager.autograd import Node
from ..eager.grad_mode import is_grad_enabled
from ..eager.tensor import Tensor
from ..errors import UsageError
from ..frontend.custom_function import Function
from ..graph.core import Symbol
from .module_state import save_own


def _add_hook(hooks: dict, hook, prepend: bool) -> RemovableHandle:
    handle = RemovableHandle(hooks)
    hooks[handle.id] = hook
    if prepend:
        hooks_now = dict(hooks)
        hooks.clear()
        hooks[handle.id] = hook
        hooks.update((k, v) for k, v in hooks_now.items() if k != handle.id)
    return handle


class RemovableHandle:
    """What `register_forward_hook` and `register_forward_pre_hook` return: `remove()` takes
    the hook off (also on leaving a `with` block)."""

    _next_id = 0

    def __init__(self, hooks: dict):
        self.hooks_ref = weakref.ref(hooks)
        self.id = RemovableHandle._next_id
        RemovableHandle._next_id += 1
        self.flags: list = []  # the sets marking the hook (with_kwargs, always_call)

    def remove(self) -> None:
        hooks = self.hooks_ref()
        if hooks is not None:
            hooks.pop(self.id, None)
        for flags in self.flags:
            flags.discard(self.id)

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc) -> None:
        self.remove()


class _HookDict(dict):
    """A dict that a `RemovableHandle` can refer to weakly."""


# PyTorch's global forward hooks: they run at every module call, before the module's own
GLOBAL_FORWARD_PRE_HOOKS = _HookDict()
GLOBAL_FORWARD_HOOKS = _HookDict()
GLOBAL_FORWARD_HOOKS_WITH_KWARGS: set = set()
GLOBAL_FORWARD_HOOKS_ALWAYS_CALLED: set = set()
GLOBAL_BACKWARD_HOOKS = _HookDict()
GLOBAL_BACKWARD_PRE_HOOKS = _HookDict()


def register_module_forward_pre_hook(hook) -> RemovableHandle:
    """`hook(module, args)` runs before every module's forward (before its own pre-hooks);
    a result other than None replaces the arguments. As PyTorch's
    `torch.nn.modules.module.register_module_forward_pre_hook`.

    >>> import kiln as kn
    >>> seen = []
    >>> h = kn.nn.modules.module.register_module_forward_pre_hook(
    ...     lambda m, args: seen.append(type(m).__name__))
    >>> _ = kn.nn.Sequential(kn.nn.ReLU())(kn.ones(1)); h.remove()
    >>> seen
    ['Sequential', 'ReLU']
    """
    return _add_hook(GLOBAL_FORWARD_PRE_HOOKS, hook, False)


def register_module_forward_hook(hook, *, with_kwargs: bool = False,
                                 always_call: bool = False) -> RemovableHandle:  # fmt: skip
    """`hook(module, args, output)` (with `with_kwargs`: `hook(module, args, kwargs,
    output)`) runs after every module's forward, before its own forward hooks; a result
    other than None replaces the output. As PyTorch's
    `torch.nn.modules.module.register_module_forward_hook` (with `always_call`, it also runs
    with output None when forward raises).

    >>> import kiln as kn
    >>> seen = []
    >>> h = kn.nn.modules.module.register_module_forward_hook(
    ...     lambda m, args, out: seen.append(type(m).__name__))
    >>> _ = kn.nn.Sequential(kn.nn.ReLU())(kn.ones(1)); h.remove()
    >>> seen
    ['ReLU', 'Sequential']
    """
    handle = _add_hook(GLOBAL_FORWARD_HOOKS, hook, False)
    for flags, on in ((GLOBAL_FORWARD_HOOKS_WITH_KWARGS, with_kwargs),
                      (GLOBAL_FORWARD_HOOKS_ALWAYS_CALLED, always_call)):  # fmt: skip
        if on:
            flags.add(handle.id)
            handle.flags.append(flags)
    return handle


def register_module_full_backward_hook(hook) -> RemovableHandle:
    """`hook(module, grad_input, grad_output)` runs at every module's backward, before its own
    full backward hooks; a tuple it returns replaces `grad_input`. As PyTorch's
    `torch.nn.modules.module.register_module_full_backward_hook`.

    >>> import kiln as kn
    >>> seen = []
    >>> h = kn.nn.modules.module.register_module_full_backward_hook(
    ...     lambda m, gi, go: seen.append(type(m).__name__))
    >>> kn.nn.Tanh()(kn.ones(2, requires_grad=True)).sum().backward(); h.remove()
    >>> seen
    ['Tanh']
    """
    return _add_hook(GLOBAL_BACKWARD_HOOKS, hook, False)


def register_module_full_backward_pre_hook(hook) -> RemovableHandle:
    """`hook(module, grad_output)` runs at every module's backward, before its own backward
    pre-hooks; a tuple it returns replaces `grad_output`. As PyTorch's
    `torch.nn.modules.module.register_module_full_backward_pre_hook`.

    >>> import kiln as kn
    >>> h = kn.nn.modules.module.register_module_full_backward_pre_hook(
    ...     lambda m, go: (go[0] * 2,))
    >>> x = kn.ones(2, requires_grad=True)
    >>> kn.nn.Identity()(x * 1).sum().backward(); h.remove()
    >>> x.grad
    tensor([2., 2.])
    """
    return _add_hook(GLOBAL_BACKWARD_PRE_HOOKS, hook, False)


def has_global_backward() -> bool:
    """Whether a global backward hook or backward pre-hook is registered."""
    return bool(GLOBAL_BACKWARD_HOOKS or GLOBAL_BACKWARD_PRE_HOOKS)


def run_always_called(module, args: tuple, kwargs: dict, always, called: set) -> None:
    """After forward raised: as PyTorch's, the `always_call` forward hooks (global, then the
    module's `always`) not run yet run with output None; what they raise in turn is only
    warned about, and forward's error goes on."""
    hooks = [*GLOBAL_FORWARD_HOOKS.items(), *module._forward_hooks.items()]
    for key, hook in hooks:
        if (key in always or key in GLOBAL_FORWARD_HOOKS_ALWAYS_CALLED) and key not in called:
            try:
                if key in GLOBAL_FORWARD_HOOKS_WITH_KWARGS or key in module.__dict__.get(
                    "_forward_hooks_with_kwargs", ()
                ):
                    hook(module, args, kwargs, None)
                else:
                    hook(module, args, None)
            except Exception as error:  # noqa: BLE001 (forward's error wins)
                warnings.warn(
                    "module forward hook with ``always_call=True`` raised an exception that "
                    f"was silenced as another error was raised in forward: {error}",
                    stacklevel=4,
                )


class ModuleHooks:
    """The hooks of `Module` beside the forward ones: backward hooks (this module) and
    state-dict hooks (kiln/nn/module_state.py runs them), with PyTorch's names and calls."""

    def register_full_backward_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """`hook(module, grad_input, grad_output)` runs when the gradients with respect to the
        module's positional arguments are computed (`grad_input`: one per argument, None
        for those that are not tensors; `grad_output`: one per tensor result); a tuple it
        returns replaces `grad_input`. As PyTorch's (kiln/nn/module_hooks.py).

        >>> import kiln as kn
        >>> lin = kn.nn.Linear(2, 1)
        >>> handle = lin.register_full_backward_hook(lambda m, gi, go: (kn.zeros_like(gi[0]),))
        >>> x = kn.ones(1, 2, requires_grad=True)
        >>> lin(x).sum().backward()
        >>> x.grad
        tensor([[0., 0.]])
        """
        if self.__dict__.get("_is_full_backward_hook") is False:
            raise UsageError(_BOTH_KINDS)
        object.__setattr__(self, "_is_full_backward_hook", True)
        return _add_hook(self._backward_hooks, hook, prepend)

    def register_backward_hook(self, hook) -> RemovableHandle:
        """PyTorch's deprecated backward hook: `hook(module, grad_input, grad_output)` runs
        with the gradients of the inputs and of the output of the *last op* of each call
        (its first tensor result's `grad_fn`), which are the module's own only for a module
        of one op (ReLU, Sigmoid); a tuple it returns replaces that op's input gradients.
        As in PyTorch, a call warns (FutureWarning) where they cannot be the module's, and a
        module takes these or `register_full_backward_hook`'s, not both. The hooks attach to
        the eager tape: in graph mode and under `kn.compile` they do not run (a warning says
        so); the full hooks do.

        >>> import kiln as kn
        >>> relu, seen = kn.nn.ReLU(), []
        >>> h = relu.register_backward_hook(lambda m, gi, go: seen.append((gi, go)))
        >>> relu(kn.tensor([-1.0, 2.0], requires_grad=True) * 1).sum().backward()
        >>> seen
        [((tensor([0., 1.]),), (tensor([1., 1.]),))]
        """
        if self.__dict__.get("_is_full_backward_hook") is True:
            raise UsageError(_BOTH_KINDS)
        object.__setattr__(self, "_is_full_backward_hook", False)
        return _add_hook(self._backward_hooks, hook, False)

    def register_full_backward_pre_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """`hook(module, grad_output)` runs when the gradients with respect to the module's
        results are computed; a tuple it returns replaces `grad_output`. As PyTorch's.

        >>> import kiln as kn
        >>> lin = kn.nn.Linear(2, 1)
        >>> handle = lin.register_full_backward_pre_hook(lambda m, go: (go[0] * 2,))
        >>> x = kn.ones(1, 2, requires_grad=True)
        >>> lin(x).sum().backward()
        >>> x.grad.shape
        kiln.Size([1, 2])
        """
        return _add_hook(self._backward_pre_hooks, hook, prepend)

    def register_state_dict_pre_hook(self, hook) -> RemovableHandle:
        """`hook(module, prefix, keep_vars)` runs before `state_dict` adds this module's
        entries. As PyTorch's."""
        return _add_hook(self._state_dict_pre_hooks, hook, False)

    def register_state_dict_post_hook(self, hook) -> RemovableHandle:
        """`hook(module, state_dict, prefix, local_metadata)` runs after `state_dict` added
        this module's entries and its children's; it may change `state_dict` in place.

        >>> import kiln as kn
        >>> m = kn.nn.Linear(2, 1)
        >>> def drop_bias(mod, sd, prefix, meta):  # returns None (else a RuntimeError)
        ...     del sd[prefix + "bias"]
        >>> h = m.register_state_dict_post_hook(drop_bias)
        >>> list(m.state_dict())
        ['weight']
        """
        handle = _add_hook(self._state_dict_hooks, hook, False)
        public = self.__dict__.get("_state_dict_post_hooks_public")
        if public is None:
            public = set()
            object.__setattr__(self, "_state_dict_post_hooks_public", public)
        public.add(handle.id)  # its result must be None (a RuntimeError otherwise)
        return handle

    def _register_state_dict_hook(self, hook) -> RemovableHandle:
        """PyTorch's private form of `register_state_dict_post_hook`: a dict the hook returns
        replaces the state dict of the module `state_dict` was called on."""
        return _add_hook(self._state_dict_hooks, hook, False)

    def _register_load_state_dict_pre_hook(self, hook, with_module: bool = False):
        """PyTorch's private form of `register_load_state_dict_pre_hook`: without
        `with_module`, `hook(state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs)`."""
        if not with_module:
            return self.register_load_state_dict_pre_hook(lambda module, *a: hook(*a))
        return self.register_load_state_dict_pre_hook(hook)

    def register_load_state_dict_pre_hook(self, hook) -> RemovableHandle:
        """`hook(module, state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs)` runs before `load_state_dict` checks the keys; it may
        change `state_dict` (a copy of the one given), and errors it appends to
        `error_msgs` fail the load. As PyTorch's.

        >>> import kiln as kn
        >>> m = kn.nn.Linear(2, 1)
        >>> def rename(mod, sd, prefix, *rest):
        ...     if "b" in sd:
        ...         sd["bias"] = sd.pop("b")
        >>> h = m.register_load_state_dict_pre_hook(rename)
        >>> m.load_state_dict({"weight": kn.zeros(1, 2), "b": kn.ones(1)})
        <All keys matched successfully>
        """
        return _add_hook(self._load_state_dict_pre_hooks, hook, False)

    def register_load_state_dict_post_hook(self, hook) -> RemovableHandle:
        """`hook(module, incompatible_keys)` runs after `load_state_dict` loaded the values,
        before a strict one refuses missing or unexpected keys; emptying its lists in place
        accepts them. As PyTorch's."""
        return _add_hook(self._load_state_dict_post_hooks, hook, False)

    def _save_to_state_dict(self, destination, prefix: str, keep_vars: bool) -> None:
        """Puts this module's own entries (parameters, persistent buffers, extra state) into
        `destination` under `prefix`, as PyTorch's; a subclass may override it (calling
        super() for the usual entries) to save more or other entries."""
        save_own(self, destination, prefix, keep_vars)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs) -> None:  # fmt: skip
        """Runs this module's load pre-hooks on `state_dict` (the entries under `prefix`).
        A subclass may override it, as in PyTorch, to rename or drop its entries in
        `state_dict` before calling super(); `load_state_dict` then checks and copies every
        module's values at once (so nothing changes on an error)."""
        for hook in list(self._load_state_dict_pre_hooks.values()):
            hook(self, state_dict, prefix, local_metadata, strict, missing_keys,
                 unexpected_keys, error_msgs)  # fmt: skip

    def get_extra_state(self):
        """The module's state beyond its parameters and buffers, saved in `state_dict` under
        `_extra_state` when a subclass defines this method (PyTorch's protocol), and given
        back to `set_extra_state` by `load_state_dict`."""
        raise RuntimeError(
            "Reached a code path in Module.get_extra_state() that should never be called."
        )

    def set_extra_state(self, state) -> None:
        """Restores what `get_extra_state` returned (see there)."""
        raise RuntimeError(
            "Reached a code path in Module.set_extra_state() that should never be called."
        )


def _differentiable(x) -> bool:
    if isinstance(x, Symbol):
        return dt.is_float(x.dtype) and _traced_needs_grad(x)
    return isinstance(x, Tensor) and x.requires_grad


def _traced_needs_grad(x: Symbol) -> bool:
    """Whether a gradient can reach the graph value x: in a kn.compile trace, whether it
    depends (not through a stop_gradient) on a trainable Variable or an argument that
    requires grad, as an eager tensor requires grad; in graph mode, always (any value may be
    differentiated there)."""
    from ..optim import graph_step  # NOTE: lazy: kiln.optim imports kiln.nn

    graph = x.graph
    if not graph_step.traces_grads(graph):
        return True
    leaves = {id(s) for s in graph_step._LEAVES.get(graph, ())}
    seen, stack = set(), [x]
    while stack:
        s = stack.pop()
        if id(s) in seen:
            continue
        seen.add(id(s))
        if id(s) in leaves or getattr(s, "trainable", False):
            return True
        if s.node.op.name != "stop_gradient":
            stack.extend(s.node.inputs)
    return False


_KILN_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _user_stacklevel() -> int:
    """The `stacklevel` of the caller's caller outside kiln (the user's `backward()` line),
    for a warning raised by the caller."""
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(_KILN_DIR):
        frame, level = frame.f_back, level + 1
    return level


class _Call:
    """One call of a hooked module: which arguments were passed through, and the results'
    gradients once the backward reached them."""

    def __init__(self, module, args):
        self.module = module
        self.n_args = len(args)
        self.positions = [k for k, a in enumerate(args) if _differentiable(a)]
        self.zeros = {
            k: a for k, a in enumerate(args)
            if isinstance(a, Tensor) and not a.requires_grad and dt.is_float(a.dtype)
        }  # fmt: skip
        self.grad_output = None
        self.n_out, self.out_positions = 0, []  # tensor results; those taking a gradient

    def outputs_done(self, grads: tuple) -> tuple:
        full = [None] * self.n_out  # one per tensor result, None where none flows (PyTorch's)
        for k, g in zip(self.out_positions, grads):
            full[k] = g
        grads = tuple(full)
        hooks = [*GLOBAL_BACKWARD_PRE_HOOKS.values(), *self.module._backward_pre_hooks.values()]
        for hook in hooks:
            result = hook(self.module, grads)
            if result is not None:
                result = tuple(result) if isinstance(result, (tuple, list)) else (result,)
                if len(result) != len(grads):
                    raise RuntimeError(
                        f"Backward pre hook returned an invalid number of grad_output, got "
                        f"{len(result)}, but expected {len(grads)}"
                    )
                grads = result
        self.grad_output = grads
        grads = tuple(grads[k] for k in self.out_positions)
        if not self.positions:  # no argument takes a gradient: PyTorch runs the hooks here
            full = self.module.__dict__.get("_is_full_backward_hook") is not False
            if full and (self.module._backward_hooks or GLOBAL_BACKWARD_HOOKS):
                warnings.warn(
                    "Full backward hook is firing when gradients are computed with respect to "
                    "module outputs since no inputs require gradients. See "
                    "https://docs.pytorch.org/docs/main/generated/torch.nn.Module.html"
                    "#torch.nn.Module.register_full_backward_hook for more details.",
                    UserWarning,
                    stacklevel=_user_stacklevel(),
                )
            result = self._run_hooks((None,) * self.n_args)
            if any(g is not None for g in result):
                raise RuntimeError(
                    "Backward hook for Modules where no input requires gradient should always "
                    "return None or None for all gradients."
                )
        return grads

    def inputs_done(self, grads: tuple) -> tuple:
        if self.grad_output is None:  # the gradient did not come through the module's
            return grads  # results (not a Tensor or a tuple): PyTorch runs no hook then
        grad_input = [None] * self.n_args
        for k, a in self.zeros.items():
            grad_input[k] = a.new_zeros(a.shape)  # as PyTorch gives them
        for k, g in zip(self.positions, grads):
            grad_input[k] = g
        grad_input = self._run_hooks(tuple(grad_input))
        return tuple(grad_input[k] for k in self.positions)

    def _run_hooks(self, grad_input: tuple) -> tuple:
        if self.module.__dict__.get("_is_full_backward_hook") is False:
            return grad_input  # the deprecated kind's: `attach_legacy_hooks`
        for hook in [*GLOBAL_BACKWARD_HOOKS.values(), *self.module._backward_hooks.values()]:
            result = hook(self.module, grad_input, self.grad_output)
            if result is not None:
                result = tuple(result) if isinstance(result, (tuple, list)) else (result,)
                if len(result) != len(grad_input):
                    raise RuntimeError(
                        f"Backward hook returned an invalid number of grad_input, got "
                        f"{len(result)}, but expected {len(grad_input)}"
                    )
                grad_input = result
        return grad_input


class BackwardHookFunction(Function):
    """The identity on a hooked call's tensors, whose backward hands their gradients to
    `done` (a `_Call`'s `outputs_done` or `inputs_done`) and passes on what it returns."""

    @staticmethod
    def forward(ctx, done, *xs):
        ctx.done = done
        ctx.set_materialize_grads(False)  # an unreached result's gradient is None
        out = tuple(x.view_as(x) for x in xs)
        return out if len(out) != 1 else out[0]

    @staticmethod
    def backward(ctx, *grads):
        return (None, *ctx.done(grads))


def call_with_backward_hooks(module, args, run):
    """`run(args)` (the module's forward hooks and forward) with the module's backward hooks
    attached to this call's gradient, where one may flow (grad mode, or Symbols)."""
    symbolic = any(isinstance(a, Symbol) for a in args)
    if not (symbolic or is_grad_enabled()):
        return run(args)
    call = _Call(module, args)
    if call.positions:
        passed = BackwardHookFunction.apply(call.inputs_done, *(args[k] for k in call.positions))
        passed = passed if isinstance(passed, tuple) else (passed,)
        args = list(args)
        for k, x in zip(call.positions, passed):
            args[k] = x
        args = tuple(args)
    output = run(args)
    single = not isinstance(output, tuple)  # as PyTorch's: a Tensor or a tuple, not a list
    if single and not isinstance(output, (Tensor, Symbol)):
        return output
    outputs = [output] if single else list(output)
    where = [k for k, y in enumerate(outputs) if _differentiable(y)]
    if not where:
        return output
    tensors = [k for k, y in enumerate(outputs) if isinstance(y, (Tensor, Symbol))]
    call.n_out, call.out_positions = len(tensors), [tensors.index(k) for k in where]
    passed = BackwardHookFunction.apply(call.outputs_done, *(outputs[k] for k in where))
    passed = passed if isinstance(passed, tuple) else (passed,)
    for k, y in zip(where, passed):
        outputs[k] = y
    if single:
        return outputs[0]
    return type(output)(*outputs) if hasattr(output, "_fields") else type(output)(outputs)


_BOTH_KINDS = (
    "Cannot use both regular backward hooks and full backward hooks on a single Module. "
    "Please use only one of them."
)
_DEPRECATED = "is deprecated and will be removed in future versions."
_USE_FULL = "Please use register_full_backward_hook to get the documented behavior."


def has_legacy_hooks(module) -> bool:
    """Whether `module` has hooks of the deprecated `register_backward_hook`."""
    return bool(module._backward_hooks) and module.__dict__.get("_is_full_backward_hook") is False


def attach_legacy_hooks(module, args: tuple, result) -> None:
    """`register_backward_hook`'s hooks on the `grad_fn` of the first tensor in `result`
    (PyTorch's rule), with PyTorch's warnings where they cannot see the module's gradients."""
    var = result
    while not isinstance(var, (Tensor, Symbol)):
        if isinstance(var, dict):
            var = next(v for v in var.values() if isinstance(v, (Tensor, Symbol)))
        else:
            var = var[0]
    if isinstance(var, Symbol):
        warnings.warn(
            f"{type(module).__name__}: hooks of register_backward_hook attach to the eager "
            "tape and do not run in graph mode or under kn.compile; "
            "register_full_backward_hook's do",
            UserWarning,
            stacklevel=4,
        )
        return
    grad_fn = var.grad_fn
    if grad_fn is None:
        return
    owner = weakref.ref(module)
    for hook in list(module._backward_hooks.values()):
        grad_fn.register_hook(
            lambda gi, go, hook=hook: hook(owner(), gi, go) if owner() is not None else None
        )
    _warn_legacy(args, result, grad_fn)


def _warn_legacy(inputs: tuple, result, grad_fn) -> None:
    """PyTorch's FutureWarnings of a deprecated module backward hook, in its order."""

    def warn(what: str) -> None:
        warnings.warn(f"Using a non-full backward hook {what}", FutureWarning, stacklevel=6)

    if isinstance(result, Tensor):
        result = (result,)
    elif not (isinstance(result, tuple) and all(isinstance(r, Tensor) for r in result)):
        warnings.warn(
            f"Using non-full backward hooks on a Module that does not return a single Tensor "
            f"or a tuple of Tensors {_DEPRECATED} This hook will be missing some of the "
            f"grad_output. {_USE_FULL}",
            FutureWarning,
            stacklevel=5,
        )
        return
    if not all(isinstance(i, Tensor) for i in inputs):
        warnings.warn(
            f"Using non-full backward hooks on a Module that does not take as input a single "
            f"Tensor or a tuple of Tensors {_DEPRECATED} This hook will be missing some of "
            f"the grad_input. {_USE_FULL}",
            FutureWarning,
            stacklevel=5,
        )
        return
    out_fns = {id(r.grad_fn) for r in result if r.grad_fn is not None}
    if not out_fns or (len(out_fns) == 1 and id(grad_fn) not in out_fns):
        warn(f"when outputs are nested in python data structure {_DEPRECATED} This hook will "
             "be missing some grad_output.")  # fmt: skip
    elif len(out_fns) > 1:
        warn(f"when outputs are generated by different autograd Nodes {_DEPRECATED} This "
             f"hook will be missing some grad_output. {_USE_FULL}")  # fmt: skip
    else:
        inputs_fns = {id(i.grad_fn) for i in inputs if i.grad_fn is not None}
        next_fns = {id(f) if isinstance(f, Node) else f for f, _ in grad_fn.next_functions}
        if inputs_fns != next_fns:
            warn(f"when the forward contains multiple autograd Nodes {_DEPRECATED} This hook "
                 f"will be missing some grad_input. {_USE_FULL}")  # fmt: skip
