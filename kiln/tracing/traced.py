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
from .. import shapes as sh
from ..debug import log
from ..eager import autograd
from ..eager.grad_mode import state
from ..eager.saved import Unavailable
from ..eager.tensor import Tensor, make, version_of
from ..errors import AutogradError, GraphError, SavedTensorError, call_error
from ..frontend.autocast import tracing_on
from ..frontend.autodiff import auto_checkpoint, grad
from ..frontend.core import constant, placeholder
from ..frontend.functionalize import allow_argument_changes
from ..graph.core import Graph, Symbol
from ..graph.opdef import OpDef
from ..nn.module import _active as module_calls
from ..nn.parameter import owner_of, shared_box
from ..passes.remat import check_budget
from ..runtime.backend import get_backend
from ..runtime.function import Function

__all__ = ["Traced", "flatten", "signature", "describe", "name_of", "check_budget"]

_LEAF = "<array>"  # an array's slot in a structure; other values are kept in it (static)
_STATIC = "<static>"
_ARRAYS = (Tensor, np.ndarray, np.generic, Symbol)


def flatten(value, path: str, leaves: list, paths: list, statics: list):
    """`value`'s structure (hashable): arrays and Tensors go to `leaves` (their names to
    `paths`); any other value stays in the structure, static (`statics`: (path, value))."""
    if isinstance(value, _ARRAYS):
        leaves.append(value)
        paths.append(path)
        return _LEAF
    if type(value) in (list, tuple) or _is_namedtuple(value):
        items = (flatten(v, f"{path}_{i}", leaves, paths, statics) for i, v in enumerate(value))
        return (type(value), tuple(items))
    if type(value) is dict:
        items = (flatten(v, f"{path}_{k}", leaves, paths, statics) for k, v in value.items())
        return (dict, tuple(value), tuple(items))
    statics.append((path, value))
    return (_STATIC, value)


def _is_namedtuple(value) -> bool:
    """`sort(x)`'s `(values, indices)` and the like: a tuple class with named fields."""
    return isinstance(value, tuple) and hasattr(type(value), "_fields")


def _unflatten(structure, leaves):
    if structure is _LEAF:
        return next(leaves)
    if structure[0] is _STATIC:
        return structure[1]
    if structure[0] is dict:
        return dict(zip(structure[1], (_unflatten(s, leaves) for s in structure[2])))
    items = (_unflatten(s, leaves) for s in structure[1])
    return structure[0](*items) if hasattr(structure[0], "_fields") else structure[0](items)


def name_of(fn) -> str:
    return getattr(fn, "__name__", None) or type(fn).__name__


def signature(leaf) -> tuple:
    if isinstance(leaf, Tensor):
        return (leaf.shape, leaf.dtype, leaf._device, leaf._requires_grad)
    return (np.shape(leaf), np.asarray(leaf).dtype, "cpu", False)


def describe(sig) -> str:
    """`f32[2,3] on cpu, requires grad`: an input's signature in messages."""
    shape, dtype, device, requires_grad = sig
    grad = ", requires grad" if requires_grad else ""
    return f"{dt.short_name(dtype)}{sh.format_shape(shape)} on {device}{grad}"


# -- which values require grad, and the split into forward and backward programs ---------------


def _requiring_grad(nodes, sources) -> set:
    """ids of the values that require grad when `sources` do, by eager's rule: float outputs
    of ops (other than stop_gradient) with an input that requires grad."""
    marked = {id(s) for s in sources}
    for node in nodes:
        out = node.out
        differentiable = dt.is_float(out.dtype) or out.dtype == dt.TUPLE  # a region op's result
        if node.op.name == "stop_gradient" or not differentiable or id(out) in marked:
            continue
        if any(id(i) in marked for i in node.inputs):
            marked.add(id(out))
    return marked


def _reached(outputs, marked) -> set:
    """ids of the marked values that `outputs` depend on through marked values."""
    seen, stack = set(), [o for o in outputs if id(o) in marked]
    while stack:
        s = stack.pop()
        if id(s) not in seen:
            seen.add(id(s))
            stack.extend(i for i in s.node.inputs if id(i) in marked)
    return seen


def _backward_inputs(nodes, cts, grads) -> tuple[list, list]:
    """(feeds, variables) of the gradient program: the values it uses that exist before the
    cotangents do (placeholders and forward intermediates; the forward program returns the
    latter, so backward never recomputes the forward nor redraws its random values; views
    are recomputed from what they view), and the Variables it reads."""
    after = {id(c) for c in cts}
    feeds, variables, seen = [], [], set()

    def use(s):
        if id(s) in after or id(s) in seen:
            return
        seen.add(id(s))
        if s.op.name == "variable":
            variables.append(s)
        elif "view" in s.op.tags and s.node.inputs and s.op.name != "get":
            # cheap: recomputed from what it views (not an element of a tuple, which has no
            # value of its own to feed)
            for i in s.node.inputs:
                use(i)
        elif s.op.name != "constant":
            feeds.append(s)

    for node in nodes:
        if any(id(i) in after for i in node.inputs):
            after.add(id(node.out))
    stack, visited = list(grads), set()
    while stack:  # from the gradients back, through the values made after the cotangents
        s = stack.pop()
        if id(s) not in visited:
            visited.add(id(s))
            if id(s) in after:
                stack.extend(s.node.inputs)
            else:
                use(s)
    return feeds, variables


def _zero_in_eager(x, nodes, reached) -> bool:
    """Whether eager backward gives `x` zeros where the gradient graph has no path: `x` reaches
    the outputs through an op without a gradient rule ("nondiff": floor, round…), which eager
    mode (as PyTorch) treats as having zero cotangents."""
    seen = {id(x)}
    for node in nodes:
        if id(node.out) in reached and any(id(i) in seen for i in node.inputs):
            if "nondiff" in node.op.tags:
                return True
            seen.add(id(node.out))
    return False


# -- one traced signature ------------------------------------------------------------------------


def _no_kernel(*args, **kwargs):
    raise RuntimeError("a compiled call is a tape entry only: it has no kernel")


def _call_vjp(ct, out, *saved, traced, residuals):
    return traced._backward(ct, saved, residuals)


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
    >>> tf = kn.trace(lambda x: kn.relu(x) * 2.0, np.zeros(3, np.float32))
    >>> print(tf.dump("text"), end="")  # doctest: +ELLIPSIS
    { lambda x:f32[3] .
        t0:f32[3] = fused[...] x 2.0:f32[]  # ...
      in (t0) }
    >>> tf(np.array([-1.0, 0.5, 2.0], np.float32))
    array([0., 1., 4.], dtype=float32)
    """

    def __init__(self, fn, key, leaves, paths, structure, device, wants_grad, memory_budget=None):
        self.key, self.device, self.name = key, device, name_of(fn)
        self.memory_budget, self.checkpointing = memory_budget, None
        self.graph = Graph()
        with self.graph.as_default():
            names = [re.sub(r"\W+", "_", p).strip("_") or "input" for p in paths]
            self.inputs = [placeholder(s[1], s[0], n) for s, n in zip(key[1], names)]
            changes = allow_argument_changes(self.graph, self.inputs, [k[3] for k in key[1]])
            args, kwargs = _unflatten(structure, iter(self.inputs))
            calls = module_calls()  # NOTE: module attributes read in fn resolve in this graph
            calls.append(self.graph)
            try:
                with tracing_on(device):
                    result = fn(*args, **kwargs)
            finally:
                calls.pop()
        # arguments changed in place: the program reads the placeholder and returns the new
        # value, which each call writes into the caller's tensor
        self.changed = []
        for k, s in enumerate(self.inputs):
            record = changes[id(s)]
            if record[2] is not None:
                self.inputs[k] = record[2]
                self.changed.append((k, s))
        outputs, out_paths, statics = [], [], []
        self.out_structure = flatten(result, "output", outputs, out_paths, statics)
        for k, (leaf, path) in enumerate(zip(outputs, out_paths)):
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
        self.outputs, self.grad_outputs, self.grad_error = outputs, [], None
        self._collect_state()
        self.guard = tuple(p.tensor()._requires_grad for p in self.params)
        self.param_dtypes = tuple(p.dtype for p in self.params)  # Module.to retraces
        leaf_grad = [s for s, k in zip(self.inputs, key[1]) if k[3] and dt.is_float(s.dtype)]
        trained = [v for p, v in zip(self.params, self.variables)
                   if p.tensor()._requires_grad and v not in self.updates]  # fmt: skip
        extras = self._plan_grad(leaf_grad + trained) if wants_grad else []
        # NOTE: a budget also bounds each program's own arena: a whole training step (the
        # gradient and the updates traced inside) recomputes under it as kn.function does.
        self.n_extras = len(extras)
        changed = [s for _, s in self.changed]
        self.function = Function(self.inputs, outputs + extras + changed, self.updates, device,
                                 memory_budget=memory_budget)  # fmt: skip
        self._grad_function, self._synced = None, {}  # id(Variable) -> Parameter version

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
        self.updates = {}
        for node in self.graph.nodes:
            if node.op.name == "assign":
                var, value = node.inputs
                if var in self.updates:
                    raise GraphError(f"kn.compile: {self.name} assigns '{var.name}' twice")
                self.updates[var] = value
        self.updated = [(p, v) for p, v in zip(self.params, self.variables) if v in self.updates]
        # Variables shared with other traces (an optimizer's slots): read from and left in
        # their box, so state goes on across traces (another batch size, a retrace)
        self.shared = [(v, box) for v in self.graph.variables
                       if (box := shared_box(v)) is not None]  # fmt: skip

    def _plan_grad(self, sources) -> list:
        """Builds the gradient graph of the outputs that require grad and splits it: returns
        the intermediates the forward program must also return for the backward."""
        marked = _requiring_grad(self.graph.nodes, sources)
        self.grad_outputs = [k for k, o in enumerate(self.outputs) if id(o) in marked]
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
            kept = self._residual_bytes(found)
            if kept > budget:  # recompute regions of the forward pass in the backward
                self.checkpointing = auto_checkpoint(self.graph, marked)
            if self.checkpointing is not None:
                found = self._grad(ys, wrt)  # NOTE: the first gradient's nodes stay unused
                self.checkpointing += (f"; residuals kept {self._residual_bytes(found)} B "
                                       f"(without regions {kept} B)")  # fmt: skip
                log(1, f"kn.compile {self.name}: memory budget {budget} B: "
                       f"{self.checkpointing}")  # fmt: skip
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

    def _grad(self, ys, wrt) -> list:
        with self.graph.as_default():
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
        leaves, paths, statics = [], [], []
        flatten((args, kwargs), "", leaves, paths, statics)
        return self.run(leaves)

    # -- running -------------------------------------------------------------------------------

    def run(self, leaves):
        """Runs on arrays or Tensors (of this signature); records the tape entry if needed."""
        # Tensors in (or no arguments at all), Tensors out; NumPy arrays in, arrays out
        tensors = not leaves or any(isinstance(x, Tensor) for x in leaves)
        params = [p.tensor() for p in self.params]  # NOTE: syncs values from other graphs
        for p, var, t in zip(self.params, self.variables, params):
            self._share(p, var, t)
        arrays = [x._data if isinstance(x, Tensor) else x for x in leaves]
        for var, box in self.shared:
            var._value = box[0]
        results = self.function.program.run(arrays, host=not tensors)
        for var, box in self.shared:
            box[0] = var._value
        for p, var in self.updated:
            self._copy_back(p, var)
        n = len(self.outputs)
        for (k, _), value in zip(self.changed, results[n + self.n_extras :]):
            _write_argument(leaves[k], value)
        results = results[: n + self.n_extras]
        if not tensors:
            return _unflatten(self.out_structure, iter(results[:n]))
        outs = [make(r, self.device) for r in results[:n]]
        if state.grad and self.grad_outputs:
            leaf_tensors = [x if isinstance(x, Tensor) else make(np.asarray(x)) for x in leaves]
            # the residuals stay out of the tape's saved values: a backward without
            # retain_graph hands them to the backward program, which frees each after its
            # last read (`_backward`)
            self._record([*leaf_tensors, *params, *outs], outs, results[n:])
        for p, var in self.updated:  # changed by the program, after it was saved
            version_of(p.tensor()).value += 1
            self._synced[id(var)] = version_of(p.tensor()).value
        return _unflatten(self.out_structure, iter(outs))

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

    def _record(self, saved, outs, residuals) -> None:
        """One tape entry for the call; with several outputs that require grad, each gets a
        small entry that routes its cotangent into the call's packed one."""
        ys = [outs[k] for k in self.grad_outputs]
        attrs = {"traced": self, "residuals": list(residuals)}
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

    def _backward(self, ct, saved, residuals) -> tuple:
        if state.grad:
            raise call_error(
                AutogradError,
                f"create_graph=True (higher-order gradients) does not go through the compiled "
                f"call of {self.name}: differentiate it eagerly, or use kn.grad in graph mode",
                "backward",
            )
        program = self.grad_function
        ys = [self.outputs[k] for k in self.grad_outputs]
        cts, offset = [], 0
        for y in ys:
            size = int(np.prod(y.shape, dtype=np.int64))
            data = ct._data if len(ys) == 1 else ct._data[offset : offset + size]
            cts.append(data.reshape(y.shape).astype(y.dtype, copy=False))
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
        feeds = [saved[i]._data if i < n_saved else residuals[i - n_saved]
                 for i in self.feed_slots]  # fmt: skip
        donate = not autograd.retaining()
        if donate:  # the tape lets go: each residual is freed after its last read
            residuals.clear()
        values = [*feeds, *cts]
        del feeds, cts
        grads = program.program.run(values, host=False, donate=donate) if self.grads else []
        result = [None] * len(saved)
        for i, g in zip(self.wrt_slots, grads):
            result[i] = make(g, self.device)
        xp = get_backend(self.device).xp
        for i in self.zero_slots:
            result[i] = make(xp.zeros(saved[i].shape, saved[i].dtype), self.device)
        return tuple(result)


def _write_argument(target, value) -> None:
    """The new value of an argument the compiled function changed in place, written into
    the caller's tensor (or array), whose version counter then counts the change."""
    if isinstance(target, Tensor):
        xp = get_backend(target._device).xp
        xp.copyto(target._data, value, casting="unsafe")
        version_of(target).value += 1
    else:
        np.copyto(target, value, casting="unsafe")
