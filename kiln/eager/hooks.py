"""Backward hooks with PyTorch's API: `register_hook` (a tensor's gradient, before it goes
on) and `register_post_accumulate_grad_hook` (a leaf's, after it reaches `.grad`). The
engine (`autograd._run`) reads `_HOOKS` and calls `_apply_hooks` / `_hooks_of`."""

from __future__ import annotations

import functools
import itertools
import weakref

from ..errors import ArgumentTypeError, AutogradError, node_error
from ..graph.core import user_site
from .tensor import Tensor, describe

__all__ = ["RemovableHandle", "register_hook", "register_post_accumulate_grad_hook"]

# id(leaf tensor or Node) -> [weakref to it, {handle id: gradient hook}, {handle id: post
# accumulate hook}, {handle id: a Node's hook on its inputs' gradients (`Node.register_hook`)}]
_HOOKS: dict[int, list] = {}
_handles = itertools.count()


class RemovableHandle:
    """What `register_hook` returns: `remove()` takes the hook off."""

    def __init__(self, key: int, kind: int, number: int):
        self._key, self._kind, self.id = key, kind, number

    def remove(self) -> None:
        entry = _HOOKS.get(self._key)
        if entry is not None:
            entry[self._kind].pop(self.id, None)
            if not entry[1] and not entry[2] and not entry[3]:
                del _HOOKS[self._key]


def _forget(table: dict, key: int, _ref) -> None:
    table.pop(key, None)


def _add_hook(owner, kind: int, hook) -> RemovableHandle:
    key = id(owner)
    entry = _HOOKS.get(key)
    if entry is None or entry[0]() is not owner:
        # (the callback holds the table itself: at interpreter exit the module's globals may
        # be None before the last owners die)
        gone = functools.partial(_forget, _HOOKS, key)
        entry = _HOOKS[key] = [weakref.ref(owner, gone), {}, {}, {}]
    number = next(_handles)
    entry[kind][number] = hook
    return RemovableHandle(key, kind, number)


def _hooks_of(owner, kind: int):
    entry = _HOOKS.get(id(owner))
    return () if entry is None or entry[0]() is not owner else tuple(entry[kind].values())


def register_hook(tensor: Tensor, hook) -> RemovableHandle:
    """`tensor.register_hook(hook)` (PyTorch's): `hook(grad)` runs when backward has the
    whole gradient of `tensor`, before it goes on (a leaf: before it is added to `.grad`);
    a Tensor it returns replaces the gradient.

    >>> import kiln as kn
    >>> x = kn.tensor([1.0, 2.0], requires_grad=True)
    >>> h = kn.autograd.register_hook(x, lambda g: g * 10)
    >>> (x * x).sum().backward(); x.grad
    tensor([20., 40.])
    """
    if not tensor._requires_grad:
        raise _hook_error(tensor, "register_hook")
    return _add_hook(tensor.grad_fn or tensor, 1, hook)


def register_post_accumulate_grad_hook(tensor: Tensor, hook) -> RemovableHandle:
    """`hook(tensor)` runs right after backward has added this leaf's gradient to its
    `.grad`, while the rest of backward may still be running (PyTorch's hook of that name:
    distributed training starts a gradient's all-reduce there).

    >>> import kiln as kn
    >>> w = kn.tensor(3.0, requires_grad=True)
    >>> h = kn.autograd.register_post_accumulate_grad_hook(w, lambda t: print(t.grad))
    >>> (w * w).backward()
    tensor(6.)
    """
    if tensor.grad_fn is not None:
        raise node_error(
            AutogradError,
            "post accumulate grad hooks cannot be registered on non-leaf tensors",
            op="register_post_accumulate_grad_hook",
            site=user_site(),
            called=True,
            inputs=[describe(tensor)],
        )
    if not tensor._requires_grad:
        raise _hook_error(tensor, "register_post_accumulate_grad_hook")
    return _add_hook(tensor, 2, hook)


def _hook_error(tensor: Tensor, op: str) -> AutogradError:
    return node_error(
        AutogradError,
        "cannot register a hook on a tensor that doesn't require gradient",
        op=op,
        site=user_site(),
        called=True,
        inputs=[describe(tensor)],
    )


def register_node_hook(node, hook) -> RemovableHandle:
    """`node.register_hook(hook)` (PyTorch's hook on a `grad_fn`): `hook(grad_inputs,
    grad_outputs)` runs when backward has computed the gradients of the node's inputs
    (`grad_inputs`, one per input, None where none flows; `grad_outputs`, those of its
    output); a tuple it returns replaces `grad_inputs`."""
    return _add_hook(node, 3, hook)


def register_node_prehook(node, hook) -> RemovableHandle:
    """`node.register_prehook(hook)` (PyTorch's): `hook(grad_outputs)` runs before backward
    computes the gradients of the node's inputs; a tuple it returns replaces `grad_outputs`.
    It runs with the hooks of the node's output tensor (`register_hook`), after them."""

    def prehook(grad):
        result = hook((grad,))
        if result is None:
            return None
        return result[0] if isinstance(result, (tuple, list)) else result

    prehook.node_prehook = True  # (`_apply_hooks` runs it after the tensor's hooks)
    return _add_hook(node, 1, prehook)


def apply_node_hooks(node, hooks, grad_inputs: tuple, grad_outputs: tuple) -> tuple:
    for hook in hooks:
        result = hook(grad_inputs, grad_outputs)
        if result is None:
            continue
        result = tuple(result) if isinstance(result, (tuple, list)) else (result,)
        if len(result) != len(grad_inputs):
            raise node_error(
                AutogradError,
                f"hook '{getattr(hook, '__name__', hook)}' has returned an incorrect number "
                f"of values (got {len(result)}, but expected {len(grad_inputs)})",
                op=node.op.name,
                site=node.site,
            )
        grad_inputs = result
    return grad_inputs


def hook_state(owners) -> tuple:
    """The handles of the gradient and post-accumulate hooks on each of `owners` (a compiled
    step that applies them is stale when they change); () when no tensor has hooks."""
    if not _HOOKS:
        return ()
    found = tuple(
        (tuple(e[1]), tuple(e[2])) if (e := _HOOKS.get(id(o))) and e[0]() is o else None
        for o in owners
    )
    return found if any(found) else ()


def _apply_hooks(owner, ct, part: str = "all"):
    """`ct` through the hooks of `owner` (a tensor's `register_hook`s, kept on its node, and
    the node's prehooks): the tensor's first, then the node's, as PyTorch runs them whatever
    order they were registered in; `part` "tensor" or "node" runs those alone (the engine
    captures `retain_grad`'s gradient between them)."""
    hooks = _hooks_of(owner, 1)
    tensor_hooks = [h for h in hooks if not getattr(h, "node_prehook", False)]
    node_hooks = [h for h in hooks if getattr(h, "node_prehook", False)]
    for hook in (tensor_hooks if part != "node" else []) + (node_hooks if part != "tensor"
                                                             else []):  # fmt: skip
        result = hook(ct)
        if result is not None:
            if not isinstance(result, Tensor):
                raise ArgumentTypeError(
                    f"expected Variable, but hook returned '{type(result).__name__}'"
                )
            if isinstance(ct, Tensor):
                _check_result(hook, ct, result)
            ct = result
    return ct


def _check_result(hook, ct: Tensor, result: Tensor) -> None:
    """PyTorch's refusal of a hook's gradient of another size or type than it was given."""
    if result.shape == ct.shape and result.dtype == ct.dtype:
        return
    name = getattr(hook, "__name__", type(hook).__name__)
    what = ("size" if result.shape != ct.shape
            else f"type (was {ct.dtype.name} got {result.dtype.name})")  # fmt: skip
    raise node_error(AutogradError, f"hook '{name}' has changed the {what} of value",
                     op="register_hook", site=user_site(), called=True,
                     inputs=[describe(ct), f"result {describe(result)}"])  # fmt: skip
