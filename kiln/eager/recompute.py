"""`kn.checkpoint(fn, *args)`: activation checkpointing with torch.utils.checkpoint's meaning.
Eagerly, `fn` runs without recording; the backward pass runs it again with grad and back-
propagates through that run. On Symbols (graph mode, `kn.compile`), the region it builds is
recomputed by `kn.grad` in the backward pass (kiln/frontend/autodiff.py)."""

from __future__ import annotations

from ..graph.core import Symbol
from ..graph.opdef import OpDef
from . import autograd
from .grad_mode import enable_grad, no_grad, state
from .tensor import Tensor


def checkpoint(fn, *args, use_reentrant=None, **kwargs):
    """`fn(*args, **kwargs)`, keeping only `args` for the backward pass, which runs `fn`
    again: memory for time, as `torch.utils.checkpoint.checkpoint(fn, *args)`.

    Gradients reach `args` that require grad and the tensors `fn` uses (a layer's
    parameters), as PyTorch's non-reentrant checkpoint gives them. `fn` returns a tensor, or
    a tuple, list or dict holding tensors (a transformer layer's outputs).
    Differs from PyTorch: the result requires grad whenever grad mode is on (PyTorch: when
    something `fn` used requires grad), and random ops in `fn` draw again when recomputed
    eagerly (PyTorch restores the random state); in graph mode their draws are kept.

    >>> import kiln as kn, numpy as np
    >>> w = kn.tensor([2.0, 3.0], requires_grad=True)
    >>> x = kn.tensor([1.0, 4.0], requires_grad=True)
    >>> y = kn.checkpoint(lambda v: (kn.tanh(v * w) * v).sum(), x)
    >>> y.backward()
    >>> bool(np.allclose(w.grad.numpy(), [1 - np.tanh(2.0) ** 2, 16 * (1 - np.tanh(12.0) ** 2)]))
    True
    """
    del use_reentrant  # PyTorch's switch between two implementations; kiln has one
    if any(isinstance(a, Symbol) for a in args):
        from ..frontend.autodiff import checkpoint_graph

        return checkpoint_graph(fn, *args, **kwargs)
    if not state.grad:
        return fn(*args, **kwargs)
    with no_grad():
        out = fn(*args, **kwargs)
    leaves = _tensors(out)  # (none: nothing to differentiate, as PyTorch's)
    # one tape entry per result tensor, whose backward runs `fn` again (a result's gradient
    # through that run's same result)
    seen = set()
    for i, leaf in enumerate(leaves):
        if id(leaf) not in seen:
            seen.add(id(leaf))
            op = OpDef("checkpoint", None, None, None, vjp=_recompute(fn, kwargs, i))
            autograd.record(op, args, {}, leaf)
    return out


def _tensors(out) -> list:
    """The tensors of a result (a Tensor, or tuples, lists and dicts of them), in order."""
    if isinstance(out, Tensor):
        return [out]
    if isinstance(out, dict):
        out = list(out.values())
    if isinstance(out, (tuple, list)):
        return [t for item in out for t in _tensors(item)]
    return []


def _recompute(fn, kwargs, index: int):
    def vjp(ct, y, *inputs):
        copies = [a.detach().requires_grad_(a.requires_grad) if isinstance(a, Tensor) else a
                  for a in inputs]  # fmt: skip
        with enable_grad():
            again = _tensors(fn(*copies, **kwargs))[index]
            if again.requires_grad:
                autograd.backward([again], [ct])
        return tuple(c.grad if isinstance(c, Tensor) and c.requires_grad else None
                     for c in copies)  # fmt: skip

    return vjp
