"""PyTorch's training step on graph values: `loss.backward()` then `opt.step()` (and
`opt.zero_grad()`) where `loss` is a Symbol, inside a function `kn.compile` traces or in
graph mode.

`loss.backward()` on a Symbol differentiates it with respect to the trainable Variables it
depends on (the module parameters that require grad) and keeps the gradients, per graph, as
the values `.grad` would hold: a second backward adds to them, `zero_grad()` clears them.
`opt.step()` then builds the optimizer's update of its parameters from them, the same train
op `opt.minimize(loss)` builds; under `kn.compile` the updates are the compiled program's,
applied after each call, all or nothing. The eager parameters' `.grad` is not set by a
compiled step (the gradients live in the program).

>>> import kiln as kn, numpy as np
>>> kn.manual_seed(0)
>>> model = kn.nn.Linear(3, 1)
>>> opt = kn.optim.SGD(model.parameters(), lr=0.1)
>>> @kn.compile
... def step(x, y):
...     opt.zero_grad()
...     loss = ((model(x) - y) ** 2).mean()
...     loss.backward()
...     opt.step()
...     return loss
>>> x, y = kn.ones(4, 3), kn.zeros(4, 1)
>>> first = step(x, y).item()
>>> step(x, y).item() < first  # the parameters changed after the first call
True
"""

from __future__ import annotations

import weakref

from ..errors import AutogradError, UsageError, call_error
from ..frontend import autodiff
from ..frontend.core import call
from ..graph.core import Symbol, get_default_graph

__all__ = ["backward", "pending_grads", "take_grads", "clear_grads"]

# graph -> {id(Variable): [Variable, gradient Symbol]}: what `.grad` holds in that graph
_PENDING: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
# graph -> {id(Variable): [new value, the node reading it]}: a parameter after `opt.step()`
_STEPPED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def record_step(train_op: Symbol) -> None:
    """After `opt.step()` on Symbols: later reads of the parameters it changed in the same
    graph see their new values, as after PyTorch's in-place step (a GAN's generator loss
    reads the discriminator just stepped). The new value is a leaf for backward: its
    gradient goes to the parameter's Variable, as `.grad` of the changed tensor."""
    found = _STEPPED.setdefault(train_op.graph, {})
    for update in train_op.node.inputs:
        var, value = update.node.inputs
        if getattr(var, "trainable", False):
            found[id(var)] = [value, None]  # the new value, and the node that reads it


def stepped(var):
    """What a read of the parameter Variable `var` gives (see `record_step`); the node that
    reads the new value is made on the first read only (a step's graph keeps none)."""
    from ..frontend.functionalize import THROUGH

    found = _STEPPED.get(var.graph)
    entry = found.get(id(var)) if found else None
    if entry is None:
        return var
    if entry[1] is None:
        entry[1] = call("custom_grad", entry[0], var, function=THROUGH)
    return entry[1]


def pending_grads(graph) -> dict:
    """The gradients `backward()` left in `graph` so far, by id of their Variable."""
    found = _PENDING.get(graph)
    if found is None:
        found = _PENDING[graph] = {}
    return found


def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
    """`loss.backward()` on a Symbol: the gradients of `loss` with respect to the trainable
    Variables it depends on (or to `inputs`), added to what the graph's earlier backward calls
    left, for `opt.step()` to apply (kiln/optim/graph_step.py)."""
    from .optimizer import _trainable_ancestors

    if gradient is None and tuple(self.shape) != ():
        raise call_error(
            AutogradError,
            f"grad can be implicitly created only for scalar outputs: '{self.name}' is "
            f"{self.type_str()}; pass gradient=",
            "backward",
            self,
        )
    if inputs is not None:
        variables = [p.variable_in(self.graph) if hasattr(p, "variable_in") else p for p in inputs]
    else:
        variables, _ = _trainable_ancestors(self)
    variables = [v for v in variables if v is not None]
    if not variables:
        raise call_error(
            AutogradError,
            f"element 0 of tensors does not require grad: '{self.name}' depends on no "
            "trainable Variable (a parameter that requires grad)",
            "backward",
            self,
        )
    grads = autodiff.grad(self, variables, None if gradient is None else [gradient],
                          disconnected="none")  # fmt: skip
    pending = pending_grads(self.graph)
    for var, g in zip(variables, grads):
        if g is None:
            continue
        entry = pending.get(id(var))
        if entry is None:
            pending[id(var)] = [var, g]
        else:
            entry[1] = entry[1] + g  # accumulates, as `.grad` does


def take_grads(variables) -> list | None:
    """[(gradient, Variable)] of `variables` that backward() left in the default graph, or
    None when it left none for any of them (then the optimizer steps eagerly)."""
    pending = _PENDING.get(get_default_graph())
    if not pending:
        return None
    found = [(pending[id(v)][1], v) for v in variables if v is not None and id(v) in pending]
    return found or None


def clear_grads(variables) -> None:
    """`zero_grad()` in a graph: the gradients backward() left for `variables` are gone."""
    pending = _PENDING.get(get_default_graph())
    if pending:
        for v in variables:
            if v is not None:
                pending.pop(id(v), None)


def refuse_closure() -> UsageError:
    return UsageError(
        "step(closure) re-evaluates the loss, which a graph cannot do: in kn.compile or graph "
        "mode call loss.backward() and then step() without a closure"
    )


def install() -> None:
    Symbol.backward = backward
