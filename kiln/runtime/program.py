"""The one compile path: prune, validate feeds, run nodes in order, commit updates.

`compile_program(fetches, feeds, updates, backend)` gives a `Program`; `Program.run(values)`
returns the fetched values and applies the updates all or nothing. This executor is the
first version: the planned, generated program replaces its `_execute` behind the same API.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from .. import dtypes as dt
from .. import shapes as sh
from ..errors import DTypeError, GraphError, KilnError, ShapeError, node_error
from ..graph.core import Symbol, Variable

# Ops whose result may alias an input, a feed, a variable or a constant: copied when fetched.
_NOT_FRESH = frozenset({"view", "source", "update"})


class KernelError(KilnError, RuntimeError):
    """A kernel that failed while running, re-raised with its node's context."""


def prune(fetches, feeds, updates) -> list:
    """The nodes (in graph order) that the fetches and updates need; fed values cut the graph."""
    fed = {id(s) for s in feeds}
    seen, stack = set(), [s.node for s in fetches] + [v.node for v in updates.values()]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if id(node.out) in fed:
            continue
        stack.extend(i.node for i in node.inputs)
    graph_nodes = _graph_nodes(fetches, updates)
    return [n for n in graph_nodes if id(n) in seen]


def _graph_nodes(fetches, updates):
    graphs = {id(s.graph): s.graph for s in [*fetches, *updates, *updates.values()]}
    if len(graphs) > 1:
        raise GraphError("fetches and updates come from different graphs")
    return next(iter(graphs.values())).nodes if graphs else []


@dataclass
class Step:
    node: object
    fn: object
    ins: tuple
    out: int
    attrs: dict
    frees: tuple  # slots whose last use is this step
    original: object = None  # the unspecialized step (random streams are keyed by it)


class Program:
    """A pruned graph ready to run on one backend; thread-safe (state lives in each call)."""

    def __init__(self, fetches, feeds, updates, backend):
        self.fetches = list(fetches)
        self.feeds = list(feeds)
        self.backend = backend
        self.nodes = prune(self.fetches, self.feeds, updates)
        explicit = dict(updates)
        for n in self.nodes:  # assign nodes reached by the fetches are updates too
            if "update" in n.op.tags:
                var = n.inputs[0]
                if not isinstance(var, Variable):
                    raise node_error(GraphError, "assign target is not a Variable", op="assign",
                                     name=n.name, site=n.site)  # fmt: skip
                if var in explicit and explicit[var] is not n.out:
                    raise node_error(
                        GraphError, f"Variable '{var.name}' has two updates in one run (this "
                        f"assign and '{explicit[var].name}', created at {explicit[var].site}); "
                        "combine them into one value", op="assign", name=n.name, site=n.site,
                    )  # fmt: skip
                explicit[var] = n.out
        self.updates = explicit
        fed = {id(s): k for k, s in enumerate(self.feeds)}
        self._slot = {}
        self._sources = []  # (slot, kind, payload)
        self._steps = []
        for node in self.nodes:
            slot = len(self._slot)
            self._slot[id(node.out)] = slot
            if id(node.out) in fed:
                self._sources.append((slot, "feed", fed[id(node.out)]))
            elif node.op.name == "variable":
                self._sources.append((slot, "var", node.out))
            elif node.op.name == "placeholder":
                raise node_error(
                    GraphError, f"placeholder '{node.name}' must be fed", op="placeholder",
                    name=node.name, site=node.site,
                )  # fmt: skip
            elif node.op.name == "constant":
                self._sources.append((slot, "const", backend.to_device(node.attrs["value"].array)))
            else:
                ins = tuple(self._slot[id(i)] for i in node.inputs)
                self._steps.append(Step(node, node.op.impl, ins, slot, dict(node.attrs), ()))
        self._out_slots = [self._slot[id(s)] for s in self.fetches]
        self._upd_slots = [(v, self._slot[id(s)]) for v, s in self.updates.items()]
        self._plan_frees()
        node_ids = {id(n) for n in self.nodes}
        graph = self.nodes[0].graph if self.nodes else None
        self.constraints = [c for c in (graph.constraints if graph else []) if id(c[3]) in node_ids]
        self._random = [s for s in self._steps if "random" in s.node.op.tags]
        self._fresh = {s.out for s in self._steps if not s.node.op.tags & _NOT_FRESH}
        self._specialized: dict = {}
        self._lock = threading.Lock()

    def _plan_frees(self):
        keep = set(self._out_slots) | {s for _, s in self._upd_slots}
        last = {}
        for k, step in enumerate(self._steps):
            for i in step.ins:
                last[i] = k
        frees = {}
        for slot, k in last.items():
            if slot not in keep:
                frees.setdefault(k, []).append(slot)
        for k, step in enumerate(self._steps):
            step.frees = tuple(frees.get(k, ()))

    # -- feeds -----------------------------------------------------------------------------

    def bind_feeds(self, values) -> tuple[list, dict]:
        """Checks each feed against its Symbol; returns device arrays and the dim bindings."""
        if len(values) != len(self.feeds):
            raise GraphError(f"expected {len(self.feeds)} feeds, got {len(values)}")
        bindings, arrays = {}, []
        for sym, value in zip(self.feeds, values):
            arrays.append(self.backend.to_device(check_feed(sym, value, bindings)))
        self._check_constraints(bindings)
        return arrays, bindings

    def _check_constraints(self, bindings):
        for a, b, why, node in self.constraints:
            try:
                va = a if isinstance(a, int) else a.evaluate(bindings)
                vb = b if isinstance(b, int) else b.evaluate(bindings)
            except KeyError:
                continue  # a dim no feed binds: the kernel itself checks it
            if va != vb:
                raise node_error(
                    ShapeError, f"{why}: at run time {a}={va} but {b}={vb}", op=node.op.name,
                    name=node.name, site=node.site, inputs=node.inputs,
                )  # fmt: skip

    # -- running -----------------------------------------------------------------------------

    def run(self, values) -> list:
        """Runs once: returns the fetched values (fresh arrays) and commits the updates."""
        arrays, bindings = self.bind_feeds(values)
        steps = self._specialize(bindings)
        graph = self.nodes[0].graph if self.nodes else None
        with graph._lock if graph else threading.Lock():
            var_values = {id(v): v._value for v in graph.variables} if graph else {}
            keys = []
            for step in self._random:
                n = graph.rng_steps.get(step.node.name, 0)
                graph.rng_steps[step.node.name] = n + 1
                keys.append((step.node.attrs["seed"], n))
        env = self._execute(steps, arrays, var_values, dict(zip(map(id, self._random), keys)))
        outputs = self._collect_outputs(env)
        self._commit(env, graph)
        return outputs

    def _specialize(self, bindings):
        key = tuple(sorted((str(k), v) for k, v in bindings.items()))
        steps = self._specialized.get(key)
        if steps is None:
            steps = [_specialize_step(s, bindings) for s in self._steps]
            with self._lock:
                self._specialized[key] = steps
        return steps

    def _execute(self, steps, arrays, var_values, keys):
        env = [None] * len(self._slot)
        for slot, kind, payload in self._sources:
            if kind == "feed":
                env[slot] = arrays[payload]
            elif kind == "var":
                env[slot] = self.backend.to_device(var_values[id(payload)])
            else:
                env[slot] = payload
        xp = self.backend.xp
        for step in steps:
            args = [env[i] for i in step.ins]
            try:
                if "random" in step.node.op.tags:
                    result = step.fn(xp, *args, key=keys[id(step.original)], **step.attrs)
                else:
                    result = step.fn(xp, *args, **step.attrs)
            except KilnError:
                raise
            except Exception as e:
                raise kernel_error(step.node, args, e) from e
            env[step.out] = result
            for i in step.frees:
                env[i] = None
        return env

    def _collect_outputs(self, env) -> list:
        out, seen = [], set()
        for slot in self._out_slots:
            value = env[slot]
            if slot not in self._fresh or slot in seen or getattr(value, "base", None) is not None:
                value = value.copy()
            seen.add(slot)
            out.append(self.backend.to_host(value))
        return out

    def _commit(self, env, graph):
        """Applies every update, or none: all are checked before any is written."""
        if not self._upd_slots:
            return
        new = []
        for var, slot in self._upd_slots:
            value = self.backend.to_host(env[slot])
            if value.shape != var.shape:
                raise node_error(
                    ShapeError, f"update of Variable '{var.name}' has shape {value.shape}, "
                    f"not {var.shape}", op="assign", name=var.name, site=var.site,
                )  # fmt: skip
            new.append((var, np.array(value, dtype=var.dtype, copy=True)))
        with graph._lock:
            for var, value in new:
                var._value = value


def _specialize_step(step, bindings):
    try:
        attrs = {k: _evaluate(v, bindings) for k, v in step.attrs.items()}
    except ShapeError as e:
        node = step.node
        raise node_error(ShapeError, str(e), op=node.op.name, name=node.name, site=node.site,
                         inputs=node.inputs) from None  # fmt: skip
    return Step(step.node, step.fn, step.ins, step.out, attrs, step.frees, step)


def _evaluate(value, bindings):
    if isinstance(value, sh.Dim):
        try:
            return value.evaluate(bindings)
        except KeyError:
            raise ShapeError(f"dim {value} is not bound by any feed") from None
    if isinstance(value, tuple):
        return tuple(_evaluate(v, bindings) for v in value)
    return value


def check_feed(sym: Symbol, value, bindings: dict):
    """The feed as an array of `sym`'s dtype; binds `sym`'s symbolic dims in `bindings`."""
    weak = not isinstance(value, (np.ndarray, np.generic)) and not hasattr(
        value, "__cuda_array_interface__"
    )
    array = np.asarray(value) if weak else value
    if weak:
        if array.dtype.kind in "OUSV" or not np.can_cast(array.dtype, sym.dtype, "same_kind"):
            raise _feed_error(DTypeError, sym, f"cannot feed {array.dtype} data")
        array = array.astype(sym.dtype)
    elif array.dtype != sym.dtype:
        if not np.can_cast(array.dtype, sym.dtype, "safe"):
            raise _feed_error(
                DTypeError, sym, f"cannot safely cast a {array.dtype} feed to {sym.dtype}; "
                f"convert it first (e.g. .astype(np.{sym.dtype.name}))",
            )  # fmt: skip
        array = array.astype(sym.dtype)
    if array.ndim != len(sym.shape):
        raise _feed_error(
            ShapeError, sym, f"fed shape {array.shape} has {array.ndim} dims, not {len(sym.shape)}"
        )
    for axis, (want, got) in enumerate(zip(sym.shape, array.shape)):
        if isinstance(want, int):
            if want != got:
                raise _feed_error(
                    ShapeError, sym, f"fed shape {array.shape} differs at axis {axis}"
                )
        elif want.is_atom:
            atom = want.atoms[0]
            if bindings.setdefault(atom, got) != got:
                raise _feed_error(
                    ShapeError, sym, f"fed shape {array.shape} gives {want}={got}, but another "
                    f"feed gave {want}={bindings[atom]}",
                )  # fmt: skip
    return array


def _feed_error(cls, sym, message):
    return cls(
        f"feed for placeholder '{sym.name}' ({sym.type_str()}, created at {sym.site}): {message}"
    )


def kernel_error(node, args, e) -> KernelError:
    got = ", ".join(
        f"{dt.short_name(a.dtype) if a.dtype in dt.SUPPORTED else a.dtype}{list(a.shape)}"
        for a in args
    )
    return node_error(
        KernelError, f"kernel failed: {type(e).__name__}: {e}; got {got or 'no inputs'}",
        op=node.op.name, name=node.name, site=node.site, inputs=node.inputs,
    )  # fmt: skip
