"""Hooks for saved tensors (PyTorch's `torch.autograd.graph.saved_tensors_hooks` and
`save_on_cpu`): while one is active, every value an op on the tape keeps for its backward is
handed to `pack_hook` as it is saved, the tape keeps what that returns instead of the value,
and backward asks `unpack_hook` for the value back before it runs the op's vjp.

kiln's tape keeps each op's inputs and output (PyTorch's keeps only those its formula
reads), so the hooks see those values: the same gradients, possibly more pack calls than
PyTorch makes. Values an op kept as constants (a lifted Python number) are not packed. A
backward with `retain_graph=True` unpacks once and keeps the values for the next one."""

from __future__ import annotations

import abc
import weakref

import numpy as np

from .tensor import make

__all__ = [
    "Node",
    "SavedTensor",
    "disable_saved_tensors_hooks",
    "increment_version",
    "saved_tensors_hooks",
    "save_on_cpu",
]


class Node(abc.ABC):  # noqa: B024 — an abstract base without abstract methods, as PyTorch's
    """`kn.autograd.graph.Node`: what every `grad_fn` (and `AccumulateGrad`) is an instance
    of, as `torch.autograd.graph.Node` (the tape's nodes register with it).

    >>> import kiln as kn
    >>> isinstance((kn.ones(2, requires_grad=True) * 2).grad_fn, kn.autograd.graph.Node)
    True
    """


STACK: list = []  # (pack_hook, unpack_hook), innermost last; `record` packs when non-empty
PACKED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # node -> what to unpack


class saved_tensors_hooks:  # noqa: N801 — PyTorch's name
    """`with kn.autograd.graph.saved_tensors_hooks(pack_hook, unpack_hook):` — ops recorded
    inside keep `pack_hook(t)` for each value they save; backward calls `unpack_hook` on it,
    which must return a tensor of the saved value's shape and dtype.

    >>> import kiln as kn
    >>> packed = []
    >>> a = kn.ones(3, requires_grad=True)
    >>> with kn.autograd.graph.saved_tensors_hooks(lambda t: packed.append(t) or len(packed) - 1,
    ...                                            lambda i: packed[i]):
    ...     y = (a * a).sum()
    >>> y.backward(); a.grad
    tensor([2., 2., 2.])
    """

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook, self.unpack_hook = pack_hook, unpack_hook

    def __enter__(self):
        if DISABLED:
            raise RuntimeError(DISABLED[-1])
        STACK.append((self.pack_hook, self.unpack_hook))
        return self

    def __exit__(self, *exc):
        STACK.pop()
        return False


class save_on_cpu(saved_tensors_hooks):  # noqa: N801 — PyTorch's name
    """Saved values are copied to host memory as they are saved and moved back to their
    device for backward (PyTorch's `save_on_cpu`; `pin_memory` is accepted, and kiln's
    transfers stage through pinned memory already)."""

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda"):
        def pack(t):
            return t.device, t.detach().cpu().clone()

        def unpack(packed):
            device, t = packed
            return t.to(device)

        super().__init__(pack, unpack)


DISABLED: list = []  # the messages of the active disable_saved_tensors_hooks, innermost last


class disable_saved_tensors_hooks:  # noqa: N801 — PyTorch's name
    """`with kn.autograd.graph.disable_saved_tensors_hooks(message):` — a
    `saved_tensors_hooks` (or `save_on_cpu`) entered inside raises RuntimeError(message), as
    PyTorch's.

    >>> import kiln as kn
    >>> with kn.autograd.graph.disable_saved_tensors_hooks("not here"):
    ...     kn.autograd.graph.save_on_cpu().__enter__()
    Traceback (most recent call last):
    RuntimeError: not here
    """

    def __init__(self, error_message: str):
        self.error_message = error_message

    def __enter__(self):
        DISABLED.append(self.error_message)
        return self

    def __exit__(self, *exc):
        DISABLED.pop()
        return False


def increment_version(tensor) -> None:
    """Counts one in-place change of `tensor` (or of each of a list of them) that autograd
    did not see, as PyTorch's: a backward that saved it then refuses its changed value.

    >>> import kiln as kn
    >>> t = kn.ones(2)
    >>> kn.autograd.graph.increment_version(t); t._version
    1
    """
    from .tensor import version_of

    for t in tensor if isinstance(tensor, (list, tuple)) else (tensor,):
        version_of(t).value += 1


def register_multi_grad_hook(tensors, fn, *, mode: str = "all"):
    """`fn` called once per backward pass that reaches some of `tensors`: with mode "all",
    `fn(grads)` (one per tensor, None for one the pass does not reach) once those it reaches
    have their gradients; with "any", `fn(grad)` with the first one computed. Returns a
    handle whose `remove()` takes it off (PyTorch's).

    >>> import kiln as kn
    >>> a, b = kn.ones(2, requires_grad=True), kn.ones(2, requires_grad=True)
    >>> h = kn.autograd.graph.register_multi_grad_hook((a, b), lambda gs: print(gs[1]))
    >>> (a * 3).sum().backward()
    None
    """
    from . import autograd

    if mode not in ("all", "any"):
        raise ValueError(f"Expects mode to be one of ('all', 'any') but got {mode}")
    tensors = tuple(tensors)
    state: dict = {"pass": None}

    def hook_of(i):
        def hook(grad):
            current = autograd.current_pass()
            if state["pass"] is not current:  # the first of this pass's hooks
                state.update({"pass": current, "grads": [None] * len(tensors), "fired": False,
                              "owed": {k for k, r in enumerate(autograd.reached(current, tensors))
                                       if r}})  # fmt: skip
            if mode == "any":
                if not state["fired"]:
                    state["fired"] = True
                    fn(grad)
                return None
            state["grads"][i] = grad
            state["owed"].discard(i)
            if not state["owed"]:
                fn(list(state["grads"]))
            return None

        return hook

    handles = [t.register_hook(hook_of(i)) for i, t in enumerate(tensors) if t.requires_grad]
    return _Handles(handles)


class _Handles:
    """The handle of a multi-grad hook: `remove()` takes off its hook on every tensor."""

    def __init__(self, handles):
        self.handles = handles

    def remove(self) -> None:
        for h in self.handles:
            h.remove()


def pack(node, out) -> None:
    """Hands `node`'s saved values to the innermost pack hook; keeps what it returns."""
    pack_hook, unpack_hook = STACK[-1]
    active = STACK[:]
    STACK.clear()  # the hook's own ops are recorded plainly, not packed again
    try:
        inputs = tuple(
            (None, a, None) if version is None else (unpack_hook, pack_hook(a), None)
            for a, version in zip(node.saved, node.versions)
        )
        output = (unpack_hook, pack_hook(make(out._data, node.device)))
    finally:
        STACK[:] = active
    PACKED[node] = (inputs, output)
    node.saved = tuple(a if hook is None else None for hook, a, _ in inputs)
    node.out = None


def unpack(node) -> None:
    """Puts back `node`'s saved values from their unpack hooks, before backward reads them
    (the values without a hook as they were)."""
    inputs, (out_hook, output) = PACKED.pop(node)
    saved, versions = [], []
    for hook, value, version in inputs:
        if hook is None:
            saved.append(value)
            versions.append(version)
            continue
        t = _checked(hook(value), node)
        saved.append(t)
        meta = t._meta
        versions.append(0 if meta is None or meta.vc is None else meta.vc.value)
    node.saved, node.versions = tuple(saved), tuple(versions)
    if out_hook is not None:
        out = _checked(out_hook(output), node)
        node.out, node.out_vc, node.out_version = out._data, None, 0


def unpacked(node, i):
    """Saved input `i` (the output for None) of a node whose values are packed, unpacked."""
    inputs, (out_hook, output) = PACKED[node]
    if i is None:
        return out_hook(output) if out_hook is not None else make(node.out, node.device)
    hook, value, _ = inputs[i]
    return hook(value) if hook is not None else value


class SavedTensor:
    """`grad_fn._raw_saved_self` (`_other`, `_result`): one value a node saved for backward,
    as PyTorch's `torch._C._autograd.SavedTensor`, whose `register_hooks(pack_hook,
    unpack_hook)` packs it now and has backward unpack it (as `saved_tensors_hooks` does for
    every value saved in its block).

    >>> import kiln as kn
    >>> x = kn.tensor([1.0, 2.0], requires_grad=True)
    >>> y = x.pow(2)
    >>> y.grad_fn._raw_saved_self.register_hooks(lambda t: t, lambda t: t * 10)
    >>> y.sum().backward(); x.grad
    tensor([20., 40.])
    """

    __slots__ = ("node", "index")

    def __init__(self, node, index):
        self.node, self.index = node, index

    def register_hooks(self, pack_hook, unpack_hook) -> None:
        if not (callable(pack_hook) and callable(unpack_hook)):
            raise TypeError("Expected pack_hook and unpack_hook to be callable")
        node, i = self.node, self.index
        if node.saved is None:
            raise RuntimeError("Trying to use a saved tensor that has been detached (its "
                               "node's saved values were freed by a backward)")  # fmt: skip
        entry = PACKED.get(node)
        if entry is None:
            inputs = tuple((None, a, v) for a, v in zip(node.saved, node.versions))
            entry = (inputs, (None, None))
        inputs, output = entry
        hook = output[0] if i is None else inputs[i][0]
        if hook is not None:
            raise RuntimeError("Calling register_hooks on a saved tensor whose hooks have "
                               "already been set. Hint: only one pair of hooks is allowed at "
                               "a time.")  # fmt: skip
        if i is None:
            output = (unpack_hook, pack_hook(make(node.out, node.device)))
            node.out = None
        else:
            value = node.saved[i]
            value = value if not isinstance(value, np.ndarray) else make(value, node.device)
            inputs = (*inputs[:i], (unpack_hook, pack_hook(value), None), *inputs[i + 1 :])
            node.saved = (*node.saved[:i], None, *node.saved[i + 1 :])
        PACKED[node] = (inputs, output)


def _checked(t, node):
    from .tensor import Tensor

    if not isinstance(t, Tensor):
        raise TypeError(
            f"Output of saved tensor unpack_hook expected to be a Tensor but got result of "
            f"type {type(t).__name__} (unpacking a value saved by {node.name()})"
        )
    return t
