"""One traced signature of a function (`Traced`): its graph, compiled forward program and
gradient program, and the tape entry of a call on tensors that require grad.

Module parameters are the graph's Variables, sharing the Parameters' memory. The gradient
graph is built when tracing and split: the forward program also returns the values the
gradient program needs, so backward never recomputes the forward (nor redraws its randoms).
"""

from __future__ import annotations

import math
import re

import numpy as np

from .. import dtypes as dt
from ..debug import log
from ..eager import autograd
from ..eager.grad_mode import state
from ..eager.hooks import _apply_hooks, _hooks_of, hook_state
from ..eager.saved import Unavailable
from ..eager.tensor import Tensor, make, version_of
from ..errors import AutogradError, GraphError, SavedTensorError, call_error
from ..frontend.autocast import tracing_on
from ..frontend.autodiff import auto_checkpoint, grad, stop_gradient
from ..frontend.core import constant, placeholder
from ..frontend.functionalize import allow_argument_changes, layout_read
from ..frontend.trace_locals import end_trace
from ..graph.core import Graph, Symbol, TracedSymbol
from ..graph.opdef import OpDef
from ..nn.module import _active as module_calls
from ..nn.module import keeps_gradient
from ..nn.parameter import owner_of, shared_box, tracing_values
from ..ops.random import draw_steps, random_nodes
from ..optim import graph_step
from ..passes.remat import check_budget
from ..passes.vectorize import ancestors
from ..runtime.backend import get_backend
from ..runtime.function import Function
from ..runtime.program import Program
from .arg_stores import argument_containers, changed_containers
from .arguments import (
    add_select_indices,
    add_view_bases,
    argument_views,
    check_arguments_apart,
    check_own_layout,
    clear_grad,
    hand_back_views,
    laid_out,
    module_outputs,
    output_orders,
    output_views,
    write_argument,
)
from .backward_inputs import backward_inputs as _backward_inputs
from .backward_inputs import zero_in_eager as _zero_in_eager
from .grad_marks import reached as _reached
from .grad_marks import requiring_grad as _requiring_grad
from .guards import rebound
from .prints import printed_symbols, recording, replay
from .scalars import TracedScalar
from .stores import make_stores, store_outputs
from .structure import _unflatten, flatten, flatten_outputs, name_of
from .trace_checks import check_changed_grads, check_grad_leaf
from .trace_checks import grad_owner as _now
from .user_class import eager_classes

__all__ = ["Traced", "check_budget"]  # (structure.py)

# Residuals go straight into the backward arena (`Traced.placement`) from this many bytes: a
# memory saving, which costs each call its arena's pieces and views (the digits demo's
# compiled step, about 60 KiB of residuals: 54.3 ms an epoch placed, 47.1 not, in thread time)
PLACED_MIN_BYTES = 1 << 20


# -- which values require grad, and the split into forward and backward programs ---------------


# -- one traced signature ------------------------------------------------------------------------


def _no_kernel(*args, **kwargs):
    raise RuntimeError("a compiled call is a tape entry only: it has no kernel")


def _call_vjp(ct, out, *saved, traced, residuals, placed=False, shapes=None):
    return traced._backward(ct, saved, residuals, placed, shapes)


def _output_vjp(ct, out, packed, *, offset):
    """A packed cotangent of every output of a call, zero but for this output's slot."""
    xp = get_backend(ct._device).xp
    full = xp.zeros(packed.shape, packed.dtype)
    full[offset : offset + ct._data.size] = ct._data.reshape(-1)
    return (make(full, ct._device),)


# The tape entry of a compiled call (its grad_fn prints as CompiledBackward0); with several
# outputs that require grad, each output's own entry routes its cotangent into a packed one.
CALL = OpDef("compiled", None, None, _no_kernel, _call_vjp)
OUTPUT = OpDef("compiled_output", None, None, _no_kernel, _output_vjp)


class Traced:
    """One traced signature of a function: `.graph` (the traced graph), `.function` (the
    compiled forward `kn.Function`), `.grad_function` (the gradient program, compiled on first
    use), `.dump(format)`; calling it runs the compiled program.

    >>> import kiln as kn, numpy as np
    >>> tf = kn.trace(lambda x: kn.maximum(x, 0.0), np.zeros(3, np.float32))
    >>> print(tf.dump("text"), end="")  # doctest: +ELLIPSIS
    { lambda x:f32[3] .
        t0:f32[3] = maximum x 0.0:f32[]  # ...
      in (t0) }
    >>> tf(np.array([-1.0, 0.5, 2.0], np.float32))
    array([0. , 0.5, 2. ], dtype=float32)
    """

    replays: tuple = ()  # (place, value): Python values each call stores (kiln/tracing/trace.py)

    def __init__(
        self, fn, key, leaves, paths, structure, device, wants_grad, memory_budget=None, lifted=(),
        aliased=(), watch=None,
    ):  # fmt: skip
        self.key, self.device, self.name = key, device, name_of(fn)
        given = leaves  # the caller's tensors (or arrays), of the arguments then the lifted
        self.lifted = list(lifted)  # (label, getter) of the captured tensors taken as inputs
        self.memory_budget, self.checkpointing = memory_budget, None
        self._probe = None  # (gradients, placed backward program) planned to meet the budget
        self.graph = Graph()
        self.graph.symbol_class = TracedSymbol  # (seen as eager classes: user_class.py)
        with self.graph.as_default():
            names = [re.sub(r"\W+", "_", p).strip("_") or "input" for p in paths]
            self.inputs = [placeholder(s[1], s[0], n) for s, n in zip(key[1], names)]
            changes = allow_argument_changes(self.graph, self.inputs, [k[3] for k in key[1]])
            # captured tensors taken as inputs (the last ones): fn reads their placeholders
            lifted_inputs = self.inputs[len(self.inputs) - len(lifted) :]
            args, kwargs = _unflatten(structure, iter(self.inputs))
            given_containers = argument_containers(args, kwargs)
            calls = module_calls()  # NOTE: module attributes read in fn resolve in this graph
            calls.append(self.graph)
            entered = graph_step.trace_grads(self.graph)  # the parameters' `.grad`s
            graph_step.trace_inputs(self.graph, leaves)  # (an optimizer inside refuses them)
            leaves = [(k, s) for k, (s, sig) in enumerate(zip(self.inputs, key[1]))
                      if sig[3] and dt.is_differentiable(s.dtype)]  # fmt: skip
            first_lifted = len(self.inputs) - len(lifted)
            graph_step.trace_leaves(self.graph, [s for _, s in leaves],
                                    [given[k] for k, _ in leaves],
                                    [k >= first_lifted for k, _ in leaves],
                                    [k for k, _ in leaves])  # fmt: skip
            try:
                with (
                    tracing_on(device),
                    tracing_values(),
                    recording(self.graph) as self.prints,
                    eager_classes(),
                ):
                    getters = [get for _, get in lifted] + [get for get, _ in aliased]
                    values = lifted_inputs + [self.inputs[k] for _, k in aliased]
                    with rebound(getters, values):  # (captured arguments: theirs)
                        result = fn(*args, **kwargs)
                    modules_out = module_outputs(result)  # (asked while the trace is made)
            finally:
                calls.pop()
                graph_step.untrace_grads(self.graph)
                # traced values stored in Python state: undone, made by each call instead
                self.stores = watch.collect(self.graph) if watch is not None else []
                self.arg_stores = changed_containers(given_containers, self.inputs)
                # tensors fn made and wrote traced values into: plain ones again
                promoted = end_trace(self.graph)
        # arguments changed in place: the program reads the placeholder and returns the new
        # value, which each call writes into the caller's tensor
        self.changed, self.paths = [], paths
        self.random_names, self.generator_draws = random_nodes(self.graph)
        for k, s in enumerate(self.inputs):
            record = changes[id(s)]
            if record[2] is not None:
                self.inputs[k] = record[2]
                self.changed.append((k, s))
        # arguments whose layout the trace read, checked each call: their placeholders (an
        # argument changed in place stands for its new value now, self.inputs for its old)
        read = layout_read(self.graph)
        self.layout_args = [(k, p, read[id(s.node)])
                            for k, (s, p) in enumerate(zip(self.inputs, paths))
                            if id(s.node) in read]  # fmt: skip
        outputs, out_paths = [], []
        self.out_structure = flatten_outputs(result, outputs, out_paths, self.name)
        # (k, tensor, None) of each output that is a tensor fn did not make: a module's
        # Parameter or Buffer, or (kiln/tracing/trace.py picks them from `returned_tensors`)
        # a captured tensor or a view of one: eager code (and torch.compile) return those
        self.same_outputs, self.returned_tensors = [], []
        for k, (leaf, path) in enumerate(zip(outputs, out_paths)):
            if id(leaf) in modules_out:
                self.same_outputs.append((k, modules_out[id(leaf)], None))
            if id(leaf) in promoted:  # a buffer fn made: its graph value
                leaf = outputs[k] = promoted[id(leaf)]
            if type(leaf) is Tensor:  # (one fn made, or a captured one)
                self.returned_tensors.append((k, leaf))
            if isinstance(leaf, TracedScalar):  # `return loss.item()`: a number, no gradient
                with self.graph.as_default():
                    leaf = outputs[k] = stop_gradient(leaf.symbol)
            if type(leaf) is Tensor and not leaf._requires_grad:
                # a value computed from constants alone: the program makes a fresh copy each
                # call (as torch.compile returns a new tensor), never the one traced
                with self.graph.as_default():
                    leaf = outputs[k] = constant(leaf.numpy())
            if not isinstance(leaf, Symbol) or leaf.graph is not self.graph:
                raise GraphError(
                    f"kn.compile: {self.name} returned {type(leaf).__name__} as {path}; a "
                    "compiled function returns values computed from its inputs (Tensors, or "
                    "nested tuples, lists and dicts of them)"
                )
        with self.graph.as_default():  # the stores' values: outputs too (`stores`)
            self.store_index = store_outputs(self.stores + self.arg_stores, self.graph, outputs)
        self.outputs, self.grad_outputs, self.grad_error = outputs, [], None
        arguments = {id(s): k for k, s in enumerate(self.inputs)}  # an unchanged argument,
        arguments.update((id(s), k) for k, s in self.changed)  # a changed one's new value
        for k, _ in self.changed:
            arguments.pop(id(self.inputs[k]))  # (its value before the change)
        # views of a value not returned: that value too (`no_grad`: those of detached views)
        self.no_grad_outputs = add_view_bases(outputs, arguments)
        self.select_places = add_select_indices(outputs)  # the indices of views x[i] too
        self.argument_views = argument_views(outputs, arguments)  # returned as in eager code
        self.output_views = output_views(outputs, arguments)  # outputs viewing outputs: too
        self.output_orders = output_orders(outputs)  # laid out as eager code lays them out
        self.run_shaped = False  # see _plan_grad
        self._collect_state()
        self.guard = tuple(p.tensor()._requires_grad for p in self.params)
        self.param_dtypes = tuple((p._value.dtype, p._value.shape) for p in self.params)
        self.param_hooks = hook_state(self.params)  # a backward() inside applied them
        leaf_grad = [s for s, k in zip(self.inputs, key[1])
                     if k[3] and dt.is_differentiable(s.dtype)]  # fmt: skip
        trained = [v for p, v in zip(self.params, self.variables)
                   if p.tensor()._requires_grad and v not in self.grad_blocked]  # fmt: skip
        self.plans_grad = wants_grad
        extras = self._plan_grad(leaf_grad + trained) if wants_grad else []
        late = watch.collect(self.graph) if watch is not None and wants_grad else []
        if late and self.grad_error is None:  # a gradient hook's store, made while the
            # gradients were built (undone): a backward() of the outputs would not make it
            self.grad_error = GraphError(
                f"a gradient hook stored a traced gradient ({late[0].describe()}) when kiln "
                "built the gradient program; a backward() after the compiled call runs that "
                "program, not the hook's Python code, so the store would not happen. Call "
                "backward() inside the compiled function (its hooks' stores are then made by "
                "each call), or return what the hook needs"
            )
        # NOTE: a budget also bounds each program's own arena: a whole training step (the
        # gradient and the updates traced inside) recomputes under it as kn.function does.
        self.n_extras = len(extras)
        changed = [s for _, s in self.changed]
        self.printed = printed_symbols(self.prints, self.graph)  # returned for `print` calls
        grads = self._grad_state(entered)
        # the arguments' gradients from backward() inside: added to their `.grad` each call
        # (not those captured leaves whose `.grad` the code used: `_grad_state` has them)
        pending = graph_step.pending_grads(self.graph)
        leaves = [(k, s) for k, s in leaves if id(s) not in entered]
        self.leaf_grads = [k for k, s in leaves if id(s) in pending]
        # those whose `.grad` an optimizer's zero_grad() cleared: each call clears it first
        cleared = graph_step.cleared_leaves(self.graph)
        self.leaf_cleared = [(k, cleared[id(s)]) for k, s in leaves if id(s) in cleared]
        grads += [pending[id(s)][1] for k, s in leaves if id(s) in pending]
        self.function = Function(self.inputs, outputs + extras + changed + self.printed + grads,
                                 self.updates, device, memory_budget=memory_budget)  # fmt: skip
        self._grad_function, self._synced = None, {}  # id(Variable) -> Parameter version
        self._placed = None  # the backward program whose arena holds the residuals
        self._placed_spec = self._out_shapes = None

    def _grad_state(self, entered: dict) -> list:
        """The `.grad` of each parameter the traced code used the gradient of: what a call
        starts from (`grad_inputs`: the Variables reading `.grad`, None where it was None
        when traced, the guard `grad_guard`) and what it leaves (`grad_writes`: each a
        parameter and what to write: "none", "new" or "out" (a new `.grad`, or into the
        one there), the outputs returned for these, or "keep"). As PyTorch's `.grad` across
        calls: an eager step after a compiled backward applies it, a second backward adds
        to it."""
        pending = graph_step.pending_grads(self.graph)
        self.grad_inputs, self.grad_writes, outs = [], [], []
        for var, owner, start, cleared in entered.values():
            if not cleared:  # zero_grad() first: the `.grad` on entry does not matter
                self.grad_inputs.append((owner, start))
            entry = pending.get(id(var))
            if entry is None:
                cleared = cleared or start is not None
                self.grad_writes.append((owner, "none" if cleared else "keep"))
            elif entry[1] is start:
                self.grad_writes.append((owner, "keep"))
            else:  # added to the `.grad` the call started with, else a new one
                self.grad_writes.append((owner, "new" if start is None else "out"))
                outs.append(entry[1])
        self.grad_guard = tuple(start is not None for _, start in self.grad_inputs)
        self.grad_keys = {self.grad_guard}  # the `.grad` states it serves (trace.py)
        return outs

    def grad_now(self, leaves) -> tuple:
        """Which of the parameters (and input leaves) in `grad_inputs` have a `.grad` now, in
        a call on `leaves` (its arguments' and captured inputs' tensors; as `grad_guard`)."""
        return tuple(getattr(_now(owner, leaves), "_grad", None) is not None
                     for owner, _ in self.grad_inputs)  # fmt: skip

    def _collect_state(self):
        """Module parameters become the graph's Variables, sharing the Parameters' memory (so
        every call reads their current values); `assign`s made while tracing (buffer updates,
        an optimizer's `minimize`) become the program's updates."""
        self.params, self.variables = [], []
        for var in self.graph.variables:
            param = owner_of(var)
            if param is not None:
                param.tensor()  # syncs the Parameter with any graph that used it last
                var._value = param._value
                param._last = None
                self.params.append(param)
                self.variables.append(var)
        self.updates, blocking = {}, set()  # (those after which no gradient flows on)
        for node in self.graph.nodes:
            if node.op.name == "assign":
                var, value = node.inputs
                if not keeps_gradient(node.out):
                    blocking.add(var)
                earlier = self.updates.get(var)  # a later one made from it (chained) wins
                if earlier is not None and earlier.node not in ancestors([value]):
                    raise GraphError(f"kn.compile: {self.name} assigns '{var.name}' twice")
                self.updates[var] = value
        self.updated = [(p, v) for p, v in zip(self.params, self.variables) if v in self.updates]
        self.grad_blocked = blocking
        # Variables shared with other traces (an optimizer's slots): read from and left in
        # their box, so state goes on across traces (another batch size, a retrace)
        self.shared = [(v, box) for v in self.graph.variables
                       if (box := shared_box(v)) is not None]  # fmt: skip

    def _plan_grad(self, sources) -> list:
        """Builds the gradient graph of the outputs that require grad and splits it: returns
        the intermediates the forward program must also return for the backward."""
        marked = _requiring_grad(self.graph.nodes, sources)  # (a module's buffer too:)
        changed = [(self.paths[k], v, self.inputs[k]) for k, v in self.changed] + [
            (var.name, v, None) for var, v in self.updates.items()
            if not var.trainable and owner_of(var) is not None]  # fmt: skip
        check_changed_grads(self.name, changed, marked)
        self.grad_outputs = [k for k, o in enumerate(self.outputs)
                             if id(o) in marked and k not in self.no_grad_outputs]  # fmt: skip
        # outputs of a length each run binds (kiln/ops/dynamic.py): a call records its shapes
        self.run_shaped = any(type(d) is not int for k in self.grad_outputs
                              for d in self.outputs[k].shape)  # fmt: skip
        reached = _reached([self.outputs[k] for k in self.grad_outputs], marked)
        wrt = [s for s in sources if id(s) in reached]
        if not wrt:
            self.grad_outputs = []
            return []
        ys = [self.outputs[k] for k in self.grad_outputs]
        with self.graph.as_default():
            self.cts = [placeholder(y.dtype, y.shape, f"ct{k}") for k, y in enumerate(ys)]
        found = self._grad(ys, wrt)
        budget = self.memory_budget
        if budget is not None and not self.graph.checkpoints and self.grad_error is None:
            found = self._fit_budget(ys, wrt, found, marked, budget)
        n_leaves, n_params = len(self.inputs), len(self.params)
        slot = {id(s): i for i, s in enumerate([*self.inputs, *self.variables])}
        self.grads = [g for g in found if g is not None]
        self.wrt_slots = [slot[id(s)] for s, g in zip(wrt, found) if g is not None]
        nodes = self.graph.nodes
        self.zero_slots = [slot[id(s)] for s, g in zip(wrt, found)
                           if g is None and _zero_in_eager(s, nodes, reached)]  # fmt: skip
        feeds, variables = _backward_inputs(self.graph.nodes, self.cts, self.grads)
        self.checked_slots = [slot[id(v)] for v in variables if id(v) in slot]
        self.feeds, self.feed_slots, extras = feeds, [], []
        returned = {id(o): k for k, o in enumerate(self.outputs)}
        for s in feeds:
            if id(s) in slot:
                self.feed_slots.append(slot[id(s)])
                continue
            if id(s) not in returned:
                returned[id(s)] = len(self.outputs) + len(extras)
                extras.append(s)
            self.feed_slots.append(n_leaves + n_params + returned[id(s)])
        return extras

    def _fit_budget(self, ys, wrt, found, marked, budget) -> list:
        """The gradients to run under `budget`: these, or when what their backward costs is
        over it, those of kn.checkpoint regions (recomputed in the backward) if they cost
        less. The cost is the residuals and the backward program's arena: one arena where
        the residuals are placed in it (`placement`), else the two added."""
        kept = self._residual_bytes(found)
        bound = kept > budget  # over it already: the residuals alone, a bound of the cost
        cost = kept if bound else self._backward_cost(found)[0]
        if cost <= budget:
            return found
        self.checkpointing = auto_checkpoint(self.graph, marked)
        if self.checkpointing is None:
            return found
        regions = self._grad(ys, wrt)  # NOTE: the first gradient's nodes stay unused
        if self.grad_error is not None:
            return regions
        split, _ = self._backward_cost(regions)
        if split >= cost and bound:
            cost = self._backward_cost(found)[0]  # then what it costs in full
        if split >= cost:  # no better: the regions are dropped
            log(1, f"kn.compile {self.name}: memory budget {budget} B: {self.checkpointing} "
                   f"would cost {split} B, not less than {cost} B without them")  # fmt: skip
            self.graph.checkpoints.clear()
            self.checkpointing = None  # (a probe of other gradients is not taken: ids differ)
            return found
        self.checkpointing += (f"; residuals kept {self._residual_bytes(regions)} B "
                               f"(without regions {kept} B); residuals and backward arena "
                               f"{split} B (without regions {cost} B)")  # fmt: skip
        log(1, f"kn.compile {self.name}: memory budget {budget} B: {self.checkpointing}")
        return regions

    def _backward_cost(self, found) -> tuple[int, object]:
        """(bytes, program): what the backward of `found` holds at its peak, the residuals
        included, from the plan of its program (compiled here without a budget, and kept
        for `placement` when the gradients are these)."""
        grads = [g for g in found if g is not None]
        if not grads:
            return 0, None
        feeds, _ = _backward_inputs(self.graph.nodes, self.cts, grads)
        given = {id(s) for s in [*self.inputs, *self.variables, *self.outputs, *self.cts]}
        positions = [p for p, s in enumerate(feeds) if id(s) not in given]
        feeds = [*feeds, *self.cts]
        static = all(type(d) is int for s in feeds for d in s.shape)
        placed = positions if static and not self.updates else ()
        program = Program(grads, feeds, {}, get_backend(self.device), placed=placed)
        spec = program.specialize_shapes([s.shape for s in feeds]) if static else None
        if spec is None:
            return self._residual_bytes(found), None
        if placed:
            self._probe = (tuple(id(g) for g in grads), program)
            return spec.plan.arena_bytes, program
        return self._residual_bytes(found) + spec.plan.arena_bytes, program

    def _grad(self, ys, wrt) -> list:
        with self.graph.as_default(), eager_classes():  # (its hooks see eager classes too)
            try:
                return grad(ys, wrt, grad_ys=self.cts, disconnected="none")
            except GraphError as e:  # as in eager: an error when backward needs it
                self.grad_error = e
                return [None] * len(wrt)

    def _residual_bytes(self, found) -> int:
        """The bytes of the values the backward program would read from the forward one."""
        grads = [g for g in found if g is not None]
        feeds, _ = _backward_inputs(self.graph.nodes, self.cts, grads)
        given = {id(s) for s in [*self.inputs, *self.variables, *self.cts]}
        return sum(math.prod(s.shape) * s.dtype.itemsize for s in feeds if id(s) not in given)

    @property
    def grad_function(self) -> Function | None:
        """The compiled gradient program (feeds, cotangents -> gradients), made on first use."""
        if self._grad_function is None and self.grad_outputs:
            if self.grad_error is not None:
                raise call_error(
                    AutogradError,
                    f"cannot differentiate the compiled call of {self.name}: {self.grad_error}",
                    "backward",
                )
            self._grad_function = Function(self.feeds + self.cts, self.grads, device=self.device,
                                           memory_budget=self.memory_budget)  # fmt: skip
        return self._grad_function

    def dump(self, format: str = "text") -> str:  # noqa: A002 (kn.dump's name)
        """The compiled forward program as "text", "json" or "dot" (`kn.dump(self, format)`)."""
        from ..frontend.dump import dump

        return dump(self, format)

    def __call__(self, *args, **kwargs):
        flatten((args, kwargs), "", leaves := [], [], [])
        return self.run(leaves + [get() for _, get in self.lifted], (args, kwargs))

    # -- running -------------------------------------------------------------------------------

    def run(self, leaves, call=None):
        """Runs on arrays or Tensors (of this signature); records the tape entry if needed."""
        # Tensors in (or no arguments at all), Tensors out; NumPy arrays in, arrays out
        tensors = not leaves or any(isinstance(x, Tensor) for x in leaves)
        for k, path, offset in self.layout_args:
            check_own_layout(self.name, path, leaves[k], offset)
        params = [p.taken() for p in self.params]  # NOTE: syncs values from other graphs
        for p, var, t in zip(self.params, self.variables, params):
            self._share(p, var, t)
        if self.changed:
            xp = get_backend(self.device).xp
            guard = getattr(self, "captured", None)
            reads = [(v.name, t) for v, t in zip(self.variables, params)]
            # (tensors named in fn's code; those in a container may be arguments' structure)
            # (one the program takes as an input is among `leaves`)
            reads += [(label, t) for label, _, t, *_, is_input in getattr(guard, "tensors", ())
                      if "[" not in label and not is_input]  # fmt: skip
            changed = [k for k, _ in self.changed]
            check_arguments_apart(self.name, changed, leaves, self.paths, xp, reads)
        arrays = [x._data if isinstance(x, Tensor) else x for x in leaves]
        for var, box in self.shared:
            var._value = box[0]
        for owner, start in self.grad_inputs:
            if start is not None:  # the `.grad` this call starts from (the guard: not None)
                self._read_grad(_now(owner, leaves), start)
        for owner, _ in self.grad_writes:  # an input whose `.grad` the program sets
            if isinstance(owner, graph_step.LeafAt):
                check_grad_leaf(self.name, self.paths[owner.k], owner.of(leaves))
        # (a trace made under no_grad: its outputs from enable_grad blocks record, as eager)
        record = tensors and bool(self.grad_outputs) and (state.grad or not self.key[3])
        placed = self.placement() if record else None
        outs = arena = None
        if placed is not None:  # the residuals are written into this call's backward arena
            outs, arena = self._call_arena(arrays, placed)
        if self.random_names or self.generator_draws:  # reproducible after a manual_seed
            draw_steps(self.graph, self.random_names, self.generator_draws)  # as eager draws
        results = self.function.program.run(arrays, host=not tensors, outs=outs)
        for var, box in self.shared:
            box[0] = var._value
        for p, var in self.updated:
            self._copy_back(p, var)
        n = len(self.outputs)
        for (k, _), value in zip(self.changed, results[n + self.n_extras :]):
            write_argument(leaves[k], value)
        shown = results[n + self.n_extras + len(self.changed) :]
        if self.prints:
            replay(self.prints, self.printed, [make(r, self.device) for r in shown])
        written = shown[len(self.printed) :]
        self._write_grads(written[: len(written) - len(self.leaf_grads)], leaves)
        for k, to_none in self.leaf_cleared:
            clear_grad(leaves[k], to_none)
        if self.leaf_grads:
            self._write_leaf_grads(leaves, written[len(written) - len(self.leaf_grads) :])
        results = results[: n + self.n_extras]
        if not tensors:
            make_stores(self.stores, self.store_index, results, self.arg_stores, leaves, call)
            return _unflatten(self.out_structure, iter(results[:n]))
        outs = [make(laid_out(r, o), self.device) for r, o in zip(results, self.output_orders)]
        if record:
            leaf_tensors = [x if isinstance(x, Tensor) else make(np.asarray(x)) for x in leaves]
            # the residuals stay out of the tape's saved values: a backward without
            # retain_graph hands them to the backward program, which frees each after its
            # last read, or (placed in its arena) reuses their bytes (`_backward`)
            residuals = results[n:] if arena is None else [*results[n:], *arena]
            self._record([*leaf_tensors, *params, *outs], outs, residuals, arena is not None)
        views = (self.argument_views, self.output_views, self.select_places)
        hand_back_views(outs, leaves, views, results)
        for k, t, view in self.same_outputs:
            outs[k] = t if view is None else t.as_strided(*view)
        for p, var in self.updated:  # changed by the program, after it was saved
            version_of(p.tensor()).value += 1
            self._synced[id(var)] = version_of(p.tensor()).value
        make_stores(self.stores, self.store_index, outs, self.arg_stores, leaves, call)
        return _unflatten(self.out_structure, iter(outs))

    def _read_grad(self, owner, var) -> None:
        """The Variable reads the parameter's `.grad`: its memory on the cpu, else a copy."""
        grad = owner.grad
        if self.device == "cpu":
            var._value, var.device = grad._data, "cpu"
        else:
            var.assign(grad._data)

    def _write_grads(self, values, leaves) -> None:
        """Each parameter's (and input leaf's) `.grad` after the call: None, the value the
        program returned (into the `.grad` tensor itself where there is one, as backward
        accumulates), or as it was."""
        values = iter(values)
        for owner, write in self.grad_writes:
            owner = _now(owner, leaves)
            if write == "none":
                owner.grad = None
            elif write != "keep":
                value, grad = next(values), owner.grad
                if isinstance(value, np.ndarray) and not value.flags.writeable:
                    value = value.copy()  # a broadcast constant (zeros): a `.grad` of its own
                if write == "new" or grad is None or grad.device != self.device:
                    owner.grad = make(value, self.device)
                else:  # in place, as backward adds to a `.grad`
                    grad._data[...] = value
                    version_of(grad).value += 1

    def _write_leaf_grads(self, leaves, values) -> None:
        """The gradients backward() inside the call gave its arguments, added to their `.grad`
        (a new one where it is None), as backward does to leaf Tensors; from an argument that
        is not a leaf, backward goes on through the history it came with, as PyTorch's."""
        for k, value in zip(self.leaf_grads, values):
            leaf = leaves[k]
            if not isinstance(leaf, Tensor):
                continue
            if not leaf.is_leaf:
                leaf.backward(make(np.array(value, copy=True), self.device))
                continue
            if _hooks_of(leaf, 1):  # its hooks, on this call's gradient (as eager backward)
                value = _apply_hooks(leaf, make(np.array(value, copy=True), self.device))._data
            if leaf.grad is None:
                leaf.grad = make(np.array(value, copy=True), self.device)
            else:
                leaf.grad._data[...] += value
                version_of(leaf.grad).value += 1
            for hook in _hooks_of(leaf, 2):
                hook(leaf)

    def _share(self, param, var, t) -> None:
        """The Variable reads the Parameter's current value: on the cpu it is the Parameter's
        memory itself; on a GPU a copy, made again when the Parameter changed (its version)."""
        if self.device == "cpu":
            if var._value is not param._value:
                var._value, var.device = param._value, "cpu"
        elif self._synced.get(id(var)) != version_of(t).value:
            var.assign(param._value)
            self._synced[id(var)] = version_of(t).value

    def _copy_back(self, param, var) -> None:
        """After the program updated `var` (an optimizer step, running statistics)."""
        if self.device != "cpu":
            param._value[...] = var.value
        elif var._value is not param._value:  # an update not done in place
            param._value[...] = var._value
            var._value = param._value

    def placement(self):
        """The plan of a call whose residuals go straight into its backward arena: (the
        backward program that reads them there, {extra index: arena offset}, arena bytes),
        made on the first call that records a tape entry; None where they stay arrays of
        their own (no gradient, updates, a dim not static, under `PLACED_MIN_BYTES` of them).

        The backward program's memory plan counts the residuals as buffers live from its
        start, so once a residual's last reader ran its bytes take later buffers: the
        residuals and the backward's own values share one arena. It is made in pieces (cut
        where no buffer straddles): the forward call makes those that hold residuals, the
        backward program the others when it first needs them, and it lets go of each after
        its last read, so a long backward does not hold the whole arena to its end. A
        backward with retain_graph=True runs `grad_function` instead, which reads the
        residuals there and writes nowhere in them.

        >>> import kiln as kn, numpy as np
        >>> f = kn.compile(lambda x: kn.tanh(x).sum())
        >>> y = f(kn.tensor(np.ones(1 << 18, np.float32), requires_grad=True))
        >>> program, offsets, nbytes = f.last.placement()
        >>> offsets, nbytes  # tanh's output, the one residual (1 MiB), at offset 0
        ({0: 0}, 1048576)
        """
        if self._placed is None:
            self._placed = False
            if self.grads and self.grad_error is None and not self.updates:
                self._placed = self._plan_placement() or False
        return self._placed or None

    def _plan_placement(self):
        feeds = [*self.feeds, *self.cts]
        if not all(type(d) is int for s in feeds for d in s.shape):
            return None
        base = len(self.inputs) + len(self.params) + len(self.outputs)
        positions = [p for p, i in enumerate(self.feed_slots) if i >= base]
        residual_bytes = sum(math.prod(feeds[p].shape) * feeds[p].dtype.itemsize for p in positions)
        if not positions or residual_bytes < PLACED_MIN_BYTES:
            return None
        probe, self._probe, spec = self._probe, None, None
        if probe is not None and probe[0] == tuple(id(g) for g in self.grads):
            program = probe[1]  # planned without a budget, and within it
            spec = program.specialize_shapes([s.shape for s in feeds])
            if spec.plan.arena_bytes > self.memory_budget:
                spec = None  # NOTE: then the budget also chooses what the backward recomputes
        if spec is None:
            program = Program(self.grads, feeds, {}, get_backend(self.device),
                              memory_budget=self.memory_budget, placed=positions)  # fmt: skip
            spec = program.specialize_shapes([s.shape for s in feeds])
        offsets = {self.feed_slots[p] - base: spec.placement(p) for p in positions}
        self._placed_spec = spec
        return program, offsets, spec.plan.arena_bytes

    def _call_arena(self, arrays, placed) -> tuple[list, list]:
        """The forward program's output arrays for one call: a fresh array for each output,
        and for each residual its place in this call's backward arena, made in pieces (the
        pieces that hold residuals now, the others by the backward program when it needs
        them: `Specialized.function_on`)."""
        (_, offsets, _), spec, backend = placed, self._placed_spec, get_backend(self.device)
        pieces = [None] * len(spec.pieces)
        shapes = self._out_shapes
        if shapes is None:
            shapes = self._out_shapes = self.function.program.output_shapes(arrays)
        outs, n = [], len(self.outputs)
        for j, (sym, shape) in enumerate(zip(self.function.outputs, shapes)):
            offset = offsets.get(j - n) if n <= j < n + self.n_extras else None
            if offset is None:
                outs.append(backend.empty(shape, sym.dtype))
                continue
            p = spec.piece_of(offset)
            piece = spec.pieces[p]
            if pieces[p] is None:
                pieces[p] = backend.empty((piece.hi - piece.lo,), np.uint8)
            start = offset - piece.lo
            size = math.prod(shape) * sym.dtype.itemsize
            outs.append(pieces[p][start : start + size].view(sym.dtype).reshape(shape))
        return outs, pieces

    def _record(self, saved, outs, residuals, placed=False) -> None:
        """One tape entry for the call; with several outputs that require grad, each gets a
        small entry that routes its cotangent into the call's packed one."""
        ys = [outs[k] for k in self.grad_outputs]
        attrs = {"traced": self, "residuals": list(residuals), "placed": placed}
        if self.run_shaped:
            attrs["shapes"] = [tuple(y.shape) for y in ys]  # lengths this run bound
        if len(ys) == 1:
            autograd.record(CALL, saved, attrs, ys[0])
            return
        dtype = np.result_type(*(y.dtype for y in ys))
        xp = get_backend(self.device).xp
        total = sum(y._data.size for y in ys)
        packed = make(xp.broadcast_to(xp.zeros((), dtype), (total,)), self.device)
        autograd.record(CALL, saved, attrs, packed)
        offset = 0
        for y in ys:
            autograd.record(OUTPUT, [packed], {"offset": offset}, y)
            offset += y._data.size

    def _backward(self, ct, saved, residuals, placed=False, shapes=None) -> tuple:
        if state.grad:
            raise call_error(
                AutogradError,
                f"create_graph=True (higher-order gradients) does not go through the compiled "
                f"call of {self.name}: differentiate it eagerly, or use kn.grad in graph mode",
                "backward",
            )
        if self.grad_error is not None:
            self.grad_function  # noqa: B018 — raises the call's AutogradError
        ys = [self.outputs[k] for k in self.grad_outputs]
        cts, offset = [], 0
        for y, shape in zip(ys, shapes or [y.shape for y in ys]):
            size = int(np.prod(shape, dtype=np.int64))
            data = ct._data if len(ys) == 1 else ct._data[offset : offset + size]
            if data.dtype.kind == "c" and y.dtype.kind != "c":  # packed beside complex outputs
                data = data.real
            cts.append(data.reshape(shape).astype(y.dtype, copy=False))
            offset += size
        for i in self.checked_slots:
            saved[i]._data  # noqa: B018 — a Variable changed since the call raises here
        n_saved = len(saved)
        if not residuals and any(i >= n_saved for i in self.feed_slots):
            # handed to an earlier backward: PyTorch's "second time" error (the tape's)
            for s in saved:
                if isinstance(s, Unavailable):
                    s._data  # noqa: B018
            message = (
                f"Trying to backward through the graph a second time: the residuals "
                f"of the compiled call of {self.name} were freed by an earlier backward "
                "that failed; specify retain_graph=True to backward more than once"
            )
            raise call_error(SavedTensorError, message, "backward")
        arena = residuals[self.n_extras :] if placed and residuals else None
        feeds = [saved[i]._data if i < n_saved else residuals[i - n_saved]
                 for i in self.feed_slots]  # fmt: skip
        donate = not autograd.retaining()
        if donate:  # the tape lets go: each residual is freed after its last read
            residuals.clear()
        values = [*feeds, *cts]
        del feeds, cts
        if not self.grads:
            grads = []
        elif donate and arena is not None:  # the residuals' bytes are reused in their arena
            program = self._placed[0]
            grads = program.run(values, host=False, donate=True, arena=arena)
        else:  # retain_graph=True: the residuals stay as they are
            grads = self.grad_function.program.run(values, host=False, donate=donate)
        del arena
        result = [None] * len(saved)
        for i, g in zip(self.wrt_slots, grads):
            result[i] = make(g, self.device)
        xp = get_backend(self.device).xp
        for i in self.zero_slots:
            result[i] = make(xp.zeros(saved[i].shape, saved[i].dtype), self.device)
        return tuple(result)
