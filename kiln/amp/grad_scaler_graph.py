"""GradScaler on graph values (inside `kn.compile`, or in graph mode): the same algorithm as
the eager one (kiln/amp/grad_scaler.py, PyTorch's), built as nodes.

The scale and the growth tracker are Variables that share their values with the eager
scaler and with every other trace (`kiln.nn.parameter.share`), so `get_scale()` and
`state_dict()` see what compiled steps did, and a new trace goes on from it. `scale(loss)`
multiplies by the scale Variable; `unscale_`/`step` divide the gradients `loss.backward()`
left (kiln/optim/graph_step.py) by it and note whether any was inf or NaN; the optimizer's
train op then keeps every value it would change where one was (`apply_gradients(skip=)`);
`update()` assigns the new scale and tracker (backoff, or growth after `growth_interval`
clean steps)."""

from __future__ import annotations

import numpy as np

from .. import frontend as F
from ..errors import UsageError
from ..graph.core import Variable, get_default_graph
from ..graph.opdef import REGISTRY
from ..nn.parameter import share
from ..ops.core import apply, bind_graph
from ..optim import graph_step

__all__ = ["graph_scale", "graph_step_with", "graph_unscale", "graph_update", "in_graph"]


def _variables(scaler, graph) -> tuple:
    """(scale, growth tracker) Variables of `graph`, sharing the scaler's values."""
    found = scaler._graph_vars.get(id(graph))
    if found is None or found[0].graph is not graph:
        if "scale" not in scaler._boxes:
            scaler._lazy_init("cpu")
        made = []
        for key, dtype in (("scale", np.float32), ("tracker", np.int32)):
            box = scaler._boxes[key]
            var = Variable(np.asarray(box[0], dtype), name=f"grad_scaler/{key}",
                           trainable=False, graph=graph)  # fmt: skip
            share(var, box)
            made.append(var)
        found = scaler._graph_vars[id(graph)] = tuple(made)
    return found


def _records(scaler, graph) -> dict:
    """id(optimizer) -> found-inf Symbol (a bool), for the optimizers unscaled in `graph`."""
    return scaler._graph_found.setdefault(id(graph), {})


def in_graph(scaler, optimizer=None) -> bool:
    """Whether the scaler works on graph values now: gradients of `optimizer` that
    `loss.backward()` left in the default graph, or (no optimizer) unscaled ones there."""
    graph = get_default_graph()
    if optimizer is None:
        return bool(scaler._graph_found.get(id(graph)))
    return (id(optimizer) in _records(scaler, graph)
            or graph_step.take_grads(optimizer._graph_variables()) is not None)  # fmt: skip


def graph_scale(scaler, outputs):
    scale, _ = _variables(scaler, outputs.graph)
    return outputs * scale


def graph_unscale(scaler, optimizer) -> None:
    graph = get_default_graph()
    records = _records(scaler, graph)
    if id(optimizer) in records:
        raise UsageError(
            "unscale_() has already been called on this optimizer since the last update()."
        )
    scale, _ = _variables(scaler, graph)
    inv = F.cast(1.0 / F.cast(scale, np.float64), np.float32)  # as PyTorch: via float64
    graph_step.enter(optimizer._graph_variables())  # in a trace: the `.grad`s on entry
    pending = graph_step.pending_grads(graph)
    found = None
    for var in optimizer._graph_variables():
        entry = None if var is None else pending.get(id(var))
        if entry is None:
            continue
        g = entry[1]
        bad = F.logical_not(F.all(F.isfinite(g)))  # checked before the division, as eager
        found = bad if found is None else F.logical_or(found, bad)
        entry[1] = F.cast(g * inv, g.dtype)
    if found is None:
        raise AssertionError("No inf checks were recorded for this optimizer.")
    records[id(optimizer)] = found


def graph_step_with(scaler, optimizer):
    """The optimizer's train op on the unscaled gradients, a no-op where one was inf/NaN."""
    graph = get_default_graph()
    if id(optimizer) not in _records(scaler, graph):
        graph_unscale(scaler, optimizer)
    grads = graph_step.take_grads(optimizer._graph_variables())
    return optimizer.apply_gradients(grads, skip=_records(scaler, graph)[id(optimizer)])


def graph_update(scaler):
    """Assigns the next scale and growth tracker (`update_scale`'s rule, as nodes)."""
    graph = get_default_graph()
    records = scaler._graph_found.pop(id(graph), {})
    if not records:
        raise AssertionError("No inf checks were recorded prior to update.")
    found = None
    for bad in records.values():
        found = bad if found is None else F.logical_or(found, bad)
    scale, tracker = _variables(scaler, graph)
    wide = F.cast(scale, np.float64)
    backoff = F.cast(wide * scaler._backoff_factor, np.float32)
    grown = F.cast(wide * scaler._growth_factor, np.float32)  # inf past float32's range
    grown = F.where(F.isfinite(grown), grown, scale)
    successful = tracker + np.int32(1)
    at_interval = F.equal(successful, np.int32(scaler._growth_interval))
    zero = tracker * np.int32(0)
    new_scale = F.where(found, backoff, F.where(at_interval, grown, scale))
    new_tracker = F.where(found, zero, F.where(at_interval, zero, successful))
    assigns = (apply("assign", scale, new_scale), apply("assign", tracker, new_tracker))
    return bind_graph(REGISTRY["group"], assigns, {}, name="grad_scaler_update")
