"""PyTorch's training step on graph values: `loss.backward()` then `opt.step()` (and
`opt.zero_grad()`) where `loss` is a Symbol, inside a function `kn.compile` traces or in
graph mode.

`loss.backward()` on a Symbol differentiates it with respect to the trainable Variables it
depends on (the module parameters that require grad) and keeps the gradients, per graph, as
the values `.grad` would hold: a second backward adds to them, `zero_grad()` clears them.
`opt.step()` then builds the optimizer's update of its parameters from them, the same train
op `opt.minimize(loss)` builds; under `kn.compile` the updates are the compiled program's,
applied after each call, all or nothing.

Under `kn.compile` these gradients are the parameters' `.grad`, as in PyTorch: a call starts
from the `.grad` each parameter has then (which backward adds to, `zero_grad()` clears and
`step()` or clipping applies) and leaves the result there. So an eager `opt.step()` after a
compiled backward applies it, and backward calls over several compiled calls accumulate.
Which parameters have a `.grad` on entry keys the trace, unless `zero_grad()` comes first.

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
>>> model.bias.grad is not None  # the gradient of the last call, as PyTorch leaves it
True
"""

from __future__ import annotations

import weakref

import numpy as np

from ..eager.grad_mode import enable_grad
from ..eager.tensor import Tensor
from ..errors import AutogradError, GraphError, UsageError, call_error
from ..frontend import autodiff
from ..frontend.core import call
from ..graph.core import Symbol, get_default_graph

__all__ = [
    "autograd_grad",
    "backward",
    "clear_grads",
    "cleared_first",
    "captured_leaf",
    "captured_placeholder",
    "cleared_leaves",
    "LeafAt",
    "current",
    "enter",
    "enter_leaf",
    "grad_leaf",
    "idle",
    "leaf_grad",
    "owner_of_value",
    "note_read",
    "note_update",
    "pending_grads",
    "refuse_inputs",
    "refuse_untraced",
    "set_leaf_grad",
    "step_leaf",
    "take_grads",
    "trace_grads",
    "trace_inputs",
    "traces_grads",
    "untrace_grads",
    "variable_of",
    "zero_grads",
    "zero_leaf_grads",
]

# graph -> {id(Variable): [Variable, gradient Symbol]}: what `.grad` holds in that graph
_PENDING: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
# graph -> {id(Variable): [new value, the node reading it]}: a parameter after `opt.step()`
_STEPPED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
# graph of a kn.compile trace -> {id(Variable): (Variable, Parameter, Variable or None)}: the
# parameters whose `.grad` the traced code used, and the Variable that reads, on each call,
# the `.grad` the parameter has then (None where it was None when traced)
_ENTERED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
# graph of a kn.compile trace -> ids of the Parameters zero_grad() set to None before use
_CLEARED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


# graph of a kn.compile trace -> the placeholders of its arguments that require grad (leaf
# Tensors): backward() there also gives their gradients, which each call adds to `.grad`
_LEAVES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


# graph of a kn.compile trace -> ids of the eager tensors it takes as inputs (its arguments,
# the captured tensors that require grad): the trace reads placeholders in their place
_INPUTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def trace_inputs(graph, tensors) -> None:
    """The eager tensors a kn.compile trace takes as inputs (`refuse_inputs`)."""
    _INPUTS[graph] = {id(t) for t in tensors}


def refuse_inputs(optimizer, params, what: str) -> None:
    """Refuses `optimizer.step()` (`what`) in a kn.compile trace over a parameter that the
    trace takes as an argument: each call may give another tensor there, which the optimizer
    (holding the one traced) cannot step. (A captured plain tensor is stepped: `step_leaf`;
    `zero_grad()` of either is made by each call: `zero_leaf_grads`.)"""
    graph = get_default_graph()
    inputs = _INPUTS.get(graph) or ()
    found = next((p for p in params  # (the tensor, or the placeholder read in its place)
                  if (id(p) in inputs and captured_placeholder(p, graph) is None)
                  or (grad_leaf(p) is not None and captured_leaf(p) is None)), None)  # fmt: skip
    if found is None:
        return
    if isinstance(found, Symbol):
        found = grad_leaf(found)
    from ..eager.tensor import describe

    raise GraphError(
        f"kn.compile: {type(optimizer).__name__}.{what}() over {describe(found)}, a tensor "
        "the compiled function takes as an input (an argument): the caller's tensor, which "
        "the optimizer inside cannot step on each call. Let the function read it from its "
        "closure, a global or the optimizer instead of taking it as an argument (a "
        "hand-written update of the argument works), or call the optimizer outside the "
        "compiled function"
    )


def refuse_untraced(optimizer, tensors) -> None:
    """Refuses `optimizer.step()` in a kn.compile trace over a plain tensor with a `.grad`
    that the trace does not take as an input: stepped eagerly, it would change once, when
    traced, and never on the calls."""
    from ..eager.tensor import describe

    found = next((t for t in tensors if type(t) is Tensor and t._grad is not None), None)
    if found is not None:
        raise GraphError(
            f"kn.compile: {type(optimizer).__name__}.step() over {describe(found)}, a tensor "
            "the compiled function does not take as an input (it reaches it through no name, "
            "list or attribute kiln walks): the step would run once, when traced, and the "
            "calls would not change it. Read it in the function (or pass the optimizer's "
            "parameters there), make it an nn.Parameter, or call step() outside"
        )


# graph of a kn.compile trace -> {id(Tensor): placeholder} of those arguments (the caller's
# tensors, which an optimizer over plain tensors holds), and -> {id(placeholder): set_to_none}
# of those whose `.grad` zero_grad() cleared there: each call clears it before adding its own
_LEAF_TENSORS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_LEAF_CLEARED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def trace_leaves(graph, placeholders, tensors=(), captured=(), indices=()) -> None:
    """The arguments of a kn.compile trace whose `.grad` backward() inside it sets;
    `tensors`: the caller's tensors they stand for (those `zero_leaf_grads` knows);
    `captured`: which of them are captured tensors rather than arguments (`captured_leaf`);
    `indices`: their places among the program's inputs (`LeafAt`)."""
    _LEAVES[graph] = list(placeholders)
    _LEAF_TENSORS[graph] = {id(t): s for t, s in zip(tensors, placeholders)}
    rows = zip(placeholders, tensors, indices, captured)
    _GRAD_LEAVES[graph] = {id(s): (t, k, c) for s, t, k, c in rows}


class LeafAt:
    """The tensor at input `k` of each call of a kn.compile program (an argument, or a
    captured tensor it takes as an input) whose `.grad` the program reads or sets
    (`enter_leaf`): the call's own tensor, not the one traced."""

    __slots__ = ("k",)

    def __init__(self, k: int):
        self.k = k

    def of(self, leaves):
        return leaves[self.k]


# graph of a kn.compile trace -> {id(placeholder): (Tensor, input index, captured)}: the inputs
# that are leaf tensors requiring grad, whose `.grad` the traced code may use (`grad_leaf`);
# the captured ones (`w`, `b` of a model written without nn.Module) an optimizer inside steps
# (`captured_leaf`)
_GRAD_LEAVES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def grad_leaf(s):
    """The tensor (as traced) of an argument or captured leaf whose placeholder `s` is in the
    kn.compile trace being made, whose `.grad` the code reads or sets there, else None."""
    found = _GRAD_LEAVES.get(s.graph) if isinstance(s, Symbol) else None
    entry = found.get(id(s)) if found else None
    return None if entry is None else entry[0]


def captured_leaf(s):
    """The captured leaf tensor whose value in the kn.compile trace being made `s` is (its
    placeholder, which an in-place change there keeps standing for the new value), else
    None."""
    found = _GRAD_LEAVES.get(s.graph) if isinstance(s, Symbol) else None
    entry = found.get(id(s)) if found else None
    return entry[0] if entry is not None and entry[2] else None


def owner_of_value(var):
    """The Parameter a graph Variable was made from, or the captured plain leaf tensor a
    kn.compile trace's placeholder stands for, else None."""
    from ..graph.core import Variable
    from ..nn.parameter import owner_of

    return owner_of(var) if isinstance(var, Variable) else captured_leaf(var)


def captured_placeholder(t, graph):
    """The placeholder that captured plain leaf `t` is read through in the kn.compile trace
    `graph`, else None."""
    s = _LEAF_TENSORS.get(graph, {}).get(id(t))
    return s if s is not None and captured_leaf(s) is not None else None


def step_leaf(s, value) -> None:
    """An optimizer's step of the captured plain leaf whose placeholder `s` is: changed in
    place to `value` (as under no_grad), which the compiled call writes into the tensor."""
    from ..eager.grad_mode import no_grad
    from ..frontend.functionalize import assign_inplace

    with no_grad():
        assign_inplace(s, value, "step", len(s.graph.nodes))


def enter_leaf(s, cleared: bool = False) -> None:
    """`enter` for a captured leaf's placeholder `s`: the first time the traced code uses its
    `.grad` (reads or sets it), the `.grad` the tensor has when the program is called is
    where its gradient starts (unless the code cleared it first), and the program leaves the
    result in `.grad` (kiln/tracing/traced.py `_grad_state`), rather than adding its
    gradient to `.grad` after the call."""
    entered = _ENTERED.get(s.graph)
    if entered is None or id(s) in entered:
        return
    from ..eager.hooks import _hooks_of
    from ..eager.tensor import describe

    owner, k, _ = _GRAD_LEAVES[s.graph][id(s)]
    if _hooks_of(owner, 1) or _hooks_of(owner, 2) or not owner.is_leaf:
        why = ("a tensor with gradient hooks: inside kn.compile its hooks run on the gradient "
               "of each call after the call, so the .grad seen there would miss them"
               if owner.is_leaf else "not a leaf: backward() gives it no .grad")  # fmt: skip
        raise call_error(
            UsageError,
            f"kn.compile: the traced code uses the .grad of {describe(owner)}, {why}. Make it "
            "an nn.Parameter (or a leaf), or use its .grad outside the compiled function",
            "grad",
            s,
        )
    was = _LEAF_CLEARED.get(s.graph, {}).pop(id(s), None)  # an optimizer's zero_grad()
    cleared = cleared or was is not None
    pending, start = pending_grads(s.graph), None
    grad = owner._grad
    if grad is not None and not cleared:
        from ..graph.core import Variable

        start = Variable(np.array(grad.numpy()), name=f"{s.name}/grad", trainable=False,
                         graph=s.graph)  # fmt: skip
        entry = pending.get(id(s))
        if entry is None:
            pending[id(s)] = [s, start]
        else:  # backward() before: its gradient adds to the `.grad` on entry
            entry[1] = start + entry[1]
    entered[id(s)] = (s, LeafAt(k), start, cleared)


def leaf_grad(s):
    """`.grad` of the captured leaf whose placeholder `s` is, in its kn.compile trace: the
    gradient backward() gave it there, added to the `.grad` it had when called (a graph
    value), or None where it has none."""
    enter_leaf(s)
    entry = pending_grads(s.graph).get(id(s))
    return None if entry is None else entry[1]


def set_leaf_grad(s, value) -> None:
    """`w.grad = value` (None, or a tensor) of a captured leaf in its kn.compile trace."""
    from ..nn.parameter import _graph_value  # NOTE: lazy: kiln.optim imports kiln.nn

    enter_leaf(s, cleared=True)
    pending = pending_grads(s.graph)
    if value is None:
        pending.pop(id(s), None)
    else:
        pending[id(s)] = [s, _graph_value(value, s, s.graph)]


def zero_leaf_grads(tensors, set_to_none: bool) -> list:
    """`zero_grad()` in a kn.compile trace of an optimizer over plain leaf tensors that are
    arguments of the trace (an image LBFGS optimizes): the gradients backward() left for them
    in the trace are dropped, and each call clears their `.grad` (to None, or zeros) before
    it adds its own, as the eager zero_grad() the traced code calls would. Returns the tensors
    that are no such argument."""
    graph = get_default_graph()
    known = _LEAF_TENSORS.get(graph)
    if not known:
        return list(tensors)
    rest, pending = [], pending_grads(graph)
    entered = _ENTERED.get(graph, {})
    for t in tensors:
        s = t if isinstance(t, Symbol) else known.get(id(t))  # (the placeholder itself)
        if s is None:
            rest.append(t)
            continue
        if id(s) in entered:  # a captured leaf whose `.grad` the code used: as a Parameter's
            clear_grads([s], set_to_none)
            continue
        pending.pop(id(s), None)
        _LEAF_CLEARED.setdefault(graph, {})[id(s)] = set_to_none
    return rest


def cleared_leaves(graph) -> dict:
    """{id(placeholder): set_to_none} of the arguments whose `.grad` zero_grad() cleared in the
    kn.compile trace of `graph` (`zero_leaf_grads`)."""
    return _LEAF_CLEARED.get(graph, {})


def trace_grads(graph) -> dict:
    """Makes the gradients in `graph` (a kn.compile trace) the parameters' `.grad`: each
    starts from the `.grad` the parameter has when the program is called (what backward adds
    to, zero_grad clears and step applies). Returns what `enter` records, which the trace
    makes into the program's inputs and outputs (kiln/tracing/traced.py)."""
    return _ENTERED.setdefault(graph, {})


def idle(graph) -> bool:
    """Whether `graph` is no kn.compile trace being made and holds no gradients backward()
    left there: then zero_grad() and step() have nothing to do in it (eager training's case)."""
    return graph not in _ENTERED and not _PENDING.get(graph)


def zero_grads(parameters, set_to_none: bool) -> bool:
    """`zero_grad()` of these Parameters in the default graph: the gradients backward() left
    there are gone (or zeros); in a kn.compile trace, also the `.grad` each call starts
    with. Returns whether the graph is such a trace (then the eager `.grad`s are the
    program's to change, not the tracing's)."""
    graph = get_default_graph()
    clear_grads([variable_of(p, graph) for p in parameters], set_to_none)
    if graph not in _ENTERED:
        return False
    if set_to_none:
        cleared_first(graph, parameters)
    return True


def cleared_first(graph, parameters) -> None:
    """`zero_grad()` in a trace before the code used these parameters' gradients: their
    `.grad` on entry does not matter (`enter`), so one trace serves every call."""
    _CLEARED.setdefault(graph, set()).update(id(p) for p in parameters)


def variable_of(p, graph):
    """The Variable of Parameter `p` in `graph`, or None if it has none there; in a
    kn.compile trace one is made where `p` has a `.grad`, which the program then reads,
    changes or applies on every call (a step or clip the code calls: torch's semantics)."""
    var = p.variable_in(graph)
    if var is None and graph in _ENTERED and p._grad is not None:
        var = p.variable(graph)
    return var


def traces_grads(graph) -> bool:
    """Whether `graph` is a kn.compile trace being made (`trace_grads`)."""
    return graph in _ENTERED


def untrace_grads(graph) -> None:
    """The trace of `graph` ended: later graph-mode use of it starts from no gradients."""
    _ENTERED.pop(graph, None)
    _CLEARED.pop(graph, None)
    _LEAF_TENSORS.pop(graph, None)
    _INPUTS.pop(graph, None)
    _GRAD_LEAVES.pop(graph, None)


def enter(variables, cleared: bool = False) -> None:
    """In a trace (`trace_grads`): the first time the traced code uses the gradient of a
    parameter's Variable, its `.grad` at the call (a Variable the program reads) is where
    the gradient starts, where it is not None; unless that first use sets it to None
    (`cleared`: `zero_grad()`), after which the `.grad` on entry does not matter."""
    from ..graph.core import Variable
    from ..nn.parameter import owner_of

    for var in variables:
        entered = _ENTERED.get(var.graph) if isinstance(var, Variable) else None
        if entered is None or id(var) in entered:
            continue
        owner = owner_of(var)
        if owner is None:  # a Variable of no Parameter: no `.grad` to start from
            continue
        cleared = cleared or id(owner) in _CLEARED.get(var.graph, ())
        grad, start = owner._grad, None  # (`.grad` in the trace would be the graph's)
        if grad is not None and not cleared:
            start = Variable(np.array(grad.numpy()), name=f"{var.name}/grad", trainable=False,
                             graph=var.graph)  # fmt: skip
            pending_grads(var.graph)[id(var)] = [var, start]
        entered[id(var)] = (var, owner, start, cleared)


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


def note_update(var, value) -> None:
    """A buffer's new value assigned in a kn.compile trace: later reads of `var` in the same
    trace give `value` (`stepped`), as the eager module's next call reads its buffer after
    the first call's in-place update (a BatchNorm called twice)."""
    _STEPPED.setdefault(var.graph, {})[id(var)] = [value, None, var]


def note_read(var, value) -> None:
    """What later reads of the parameter Variable `var` give in its kn.compile trace: `value`,
    the Symbol an in-place change through the module's attribute left its new value in (so
    that code holding it and code reading the attribute again see one value)."""
    _STEPPED[var.graph][id(var)][1] = value


def current(var):
    """The value of Variable `var` after the steps and in-place changes traced before in its
    graph (`record_step`, `note_update`), without the read `stepped` makes: what the next
    update of it starts from."""
    found = _STEPPED.get(var.graph)
    entry = found.get(id(var)) if found else None
    return var if entry is None else entry[0]


def assigned_to(value, graph):
    """The Variable whose latest value in the kn.compile trace `graph` is `value`
    (`note_update`; or what that value, a `stop_gradient` made under no_grad, reads), else
    None."""
    for entry in _STEPPED.get(graph, {}).values():
        if len(entry) > 2 and same_value(entry[0], value):
            return entry[2]
    return None


def same_value(now, value) -> bool:
    """Whether `now` is `value`, or its `stop_gradient` (a value made under no_grad in a
    trace), whose writes go to `value`."""
    return now is value or (now is not None and now.node.op.name == "stop_gradient"
                            and now.node.inputs[0] is value)  # fmt: skip


def stepped(var, node: bool = False):
    """What a read of the parameter Variable `var` gives (see `record_step`); the node that
    reads the new value is made on the first read only (a step's graph keeps none). With
    `node` (a buffer read in a kn.compile trace), a node of its own before any change too:
    an in-place change through what the read gave (`n = self.n; n.add_(1)`) makes that
    value stand for the new one, as the eager buffer it aliases."""
    from ..frontend.functionalize import THROUGH

    found = _STEPPED.get(var.graph)
    entry = found.get(id(var)) if found else None
    if entry is None:
        if not node or var.graph not in _ENTERED:
            return var
        entry = _STEPPED.setdefault(var.graph, {})[id(var)] = [var, None]
    if entry[1] is None:  # (the parameter whatever the grad mode of this first read: ops
        # made under no_grad detach their operands, not the parameter for later reads)
        with enable_grad():
            entry[1] = call("custom_grad", entry[0], var, function=THROUGH)
    return entry[1]


def read_of(var):
    """The node a read of `var` gave in this trace (`stepped`), if made, else None."""
    found = _STEPPED.get(var.graph)
    entry = found.get(id(var)) if found else None
    return None if entry is None else entry[1]


def updated_to(var):
    """The value `var` was last given in this trace (`note_update`, a step), else None."""
    found = _STEPPED.get(var.graph)
    entry = found.get(id(var)) if found else None
    return None if entry is None else entry[0]


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
    enter(variables)
    if inputs is None:  # the compiled function's arguments that require grad, as PyTorch's
        variables += [s for s in _LEAVES.get(self.graph, ()) if s is not self]
    if not variables:
        raise call_error(
            AutogradError,
            f"element 0 of tensors does not require grad: '{self.name}' depends on no "
            "trainable Variable (a parameter that requires grad)",
            "backward",
            self,
        )
    # "tape": zeros for a value reached only through ops without a gradient (floor), as
    # eager backward leaves in `.grad`; None (no `.grad`) for one not reached at all
    grads = autodiff.grad(self, variables, None if gradient is None else [gradient],
                          disconnected="tape")  # fmt: skip
    pending = pending_grads(self.graph)
    for var, g in zip(variables, grads):
        if g is None:
            continue
        g = _parameter_hooks(var, g)
        entry = pending.get(id(var))
        if entry is None:
            pending[id(var)] = [var, g]
        else:
            entry[1] = entry[1] + g  # accumulates, as `.grad` does


def _parameter_hooks(var, g):
    """`g`, the gradient of a parameter's Variable, through the hooks registered on the
    Parameter (`p.register_hook(lambda g: g.clamp(-1, 1))`), traced as eager backward runs
    them; a post-accumulate hook, which needs the `.grad` of a call, is refused."""
    from ..eager.hooks import _hooks_of
    from ..nn.parameter import owner_of

    owner = owner_of(var)
    if owner is None:
        return g
    if _hooks_of(owner, 2):
        raise call_error(
            UsageError,
            f"{owner.describe_name()} has a post-accumulate-grad hook, which runs on the "
            "parameter's .grad after each backward(): under kn.compile a backward() inside "
            "the compiled function has no such .grad to show it. Call backward() outside "
            "the compiled function (the hook then runs), or remove the hook",
            "backward",
            g,
        )
    for hook in _hooks_of(owner, 1):
        result = hook(g)
        if result is not None:
            if not isinstance(result, Symbol) or tuple(result.shape) != tuple(g.shape):
                raise call_error(
                    AutogradError,
                    f"hook {getattr(hook, '__name__', hook)!r} of {owner.describe_name()} "
                    f"returned {type(result).__name__} "
                    f"{getattr(result, 'shape', '')}: it must return None or a tensor of the "
                    f"gradient's shape {tuple(g.shape)}",
                    "backward",
                    g,
                )
            g = result
    return g


def autograd_grad(outputs, inputs, grad_outputs=None, allow_unused: bool = False,
                  create_graph: bool = False) -> tuple:  # fmt: skip
    """`kn.autograd.grad` of Symbols (under kn.compile, in graph mode): the gradients of
    `outputs` with respect to each of `inputs` (Symbols, or Parameters: their Variables in the
    graph), as graph values, without touching `.grad`; an input they do not depend on is
    None with `allow_unused`, else PyTorch's error (one they depend on only through ops with
    no gradient, as floor, has zeros, as eagerly). Without `create_graph` no gradient flows
    back through them (their results do not require grad, as PyTorch's)."""
    outputs = [outputs] if isinstance(outputs, Symbol) else list(outputs)
    inputs = [inputs] if not isinstance(inputs, (list, tuple)) else list(inputs)
    graph = next(o.graph for o in outputs if isinstance(o, Symbol))
    xs = [p.variable_in(graph) if hasattr(p, "variable_in") else p for p in inputs]
    if grad_outputs is not None and not isinstance(grad_outputs, (list, tuple)):
        grad_outputs = [grad_outputs]
    for o, g in zip(outputs, grad_outputs or [None] * len(outputs)):
        if g is None and tuple(o.shape) != ():
            raise call_error(AutogradError, "grad can be implicitly created only for scalar "
                             "outputs", "autograd.grad", o)  # fmt: skip
    wrt = [x for x in xs if isinstance(x, Symbol)]
    found = autodiff.grad(outputs, wrt, grad_outputs, disconnected="tape") if wrt else []
    by_id = {id(x): g for x, g in zip(wrt, found)}
    results = []
    for i, x in enumerate(xs):
        g = by_id.get(id(x))
        if g is None and not allow_unused:
            raise call_error(
                AutogradError,
                "One of the differentiated Tensors appears to not have been used in the graph. "
                f"Set allow_unused=True if this is the desired behavior (input {i})",
                "autograd.grad",
                *outputs,
            )
        results.append(g if g is None or create_graph else call("stop_gradient", g))
    return tuple(results)


def take_grads(variables) -> list | None:
    """[(gradient, Variable)] of `variables` that backward() left in the default graph, or
    None when it left none for any of them (then the optimizer steps eagerly)."""
    enter(variables)
    for s in variables:  # captured plain leaves: the step reads their `.grad` as it is then
        if s is not None and captured_leaf(s) is not None:
            enter_leaf(s)
    pending = _PENDING.get(get_default_graph())
    if not pending:
        return None
    found = [(pending[id(v)][1], v) for v in variables if v is not None and id(v) in pending]
    return found or None


def clear_grads(variables, set_to_none: bool = True) -> None:
    """`zero_grad()` in a graph: the gradients backward() left for `variables` are gone, or
    (`set_to_none=False`) zeros, which the next step applies as PyTorch's does."""
    variables = [v for v in variables if v is not None]
    enter(variables, cleared=set_to_none)
    pending = _PENDING.get(get_default_graph())
    if pending:
        for v in variables:
            if set_to_none:
                pending.pop(id(v), None)
            elif id(v) in pending:
                from ..eager.factories import zeros_like

                pending[id(v)][1] = zeros_like(pending[id(v)][1])


def refuse_closure() -> UsageError:
    return UsageError(
        "step(closure) re-evaluates the loss, which a graph cannot do: in kn.compile or graph "
        "mode call loss.backward() and then step() without a closure"
    )


def install() -> None:
    from ..eager import autograd_api

    Symbol.backward = backward
    autograd_api.SYMBOLIC_GRAD = autograd_grad
