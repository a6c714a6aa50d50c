"""`Function` and `Session`: the user's two ways to run a graph, on one compile path."""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

from ..debug import log
from ..errors import GraphError
from ..graph.core import Symbol, Variable, get_default_graph
from ..graph.opdef import REGISTRY, ArrayValue
from ..ops.core import infer
from .backend import get_backend
from .cache import cache_size as _cache_size
from .cache import evict
from .program import Program


def _check_symbols(values, what):
    for v in values:
        if not isinstance(v, Symbol):
            raise GraphError(f"{what} must be Symbols, got {type(v).__name__}: {v!r:.80}")


class Function:
    """A compiled callable: NumPy arrays in, NumPy arrays out, updates applied after each call.

    On a GPU (`device="cuda"`) it takes NumPy or device arrays and returns NumPy arrays, or
    the device's arrays with `return_device_arrays=True`. With `check_numerics=True` every
    float value is checked for NaN and Inf as it is made: the first node that makes one
    raises `kn.NumericsError`, naming it and its line, and no Variable changes. A program is
    planned per input signature (shapes); `cache_size` bounds how many are kept, each with its
    arenas (the least recently used go first; None: `kiln.runtime.cache.CACHE_SIZE`, 64).
    With `memory_budget` (bytes), a signature whose arena would exceed it recomputes values
    of the forward pass in the backward pass instead of keeping them (the fewest that fit;
    `f.plan.recomputed` names them, KILN_DEBUG=1 logs the choice). With `autocast`
    (kn.bfloat16 or kn.float16) its matrix products and convolutions, gradients' included,
    are computed in that dtype, as under `kn.autocast` (kiln/passes/autocast.py).

    >>> import kiln as kn, numpy as np
    >>> with kn.Graph().as_default():
    ...     x = kn.placeholder(kn.float32, ("n",), name="x")
    ...     w = kn.Variable(np.float32(2.0), name="w")
    ...     f = kn.function([x], x * w, updates={w: w + 1.0})
    >>> f(np.ones(3, np.float32)), w.numpy()
    (array([2., 2., 2.], dtype=float32), array(3., dtype=float32))
    """

    def __init__(
        self, inputs, outputs, updates=None, device="cpu", passes=None, plan=True,
        return_device_arrays: bool = False, check_numerics: bool = False,
        cache_size: int | None = None, memory_budget: int | None = None, autocast=None,
    ):  # fmt: skip
        _cache_size(cache_size)  # refuses a bad bound now
        self.inputs = list(inputs)
        self._single = isinstance(outputs, Symbol)
        self.outputs = [outputs] if self._single else list(outputs)
        updates = dict(updates or {})
        _check_symbols(self.inputs, "inputs")
        _check_symbols(self.outputs, "outputs")
        for var in updates:
            if not isinstance(var, Variable):
                raise GraphError(f"update keys must be Variables, got {var!r:.80}")
        updates = {var: _as_update(var, value) for var, value in updates.items()}
        self.device = device
        self.backend = get_backend(device)
        self.return_device_arrays = return_device_arrays
        self.program = Program(self.outputs, self.inputs, updates, self.backend, passes, plan,
                               check_numerics=check_numerics, memory_budget=memory_budget,
                               autocast=autocast)  # fmt: skip
        self.program.cache_size = cache_size
        self._last_args = None

    @property
    def graph(self):
        """The optimized program graph this function runs."""
        return self.program.graph

    def _last(self):
        if self.program.last is None:
            raise GraphError("this function has not run yet: call it once, then read its plan")
        return self.program.last

    @property
    def source(self) -> str:
        """The generated program of the most recent input signature, as Python text."""
        return self._last().source

    def profile(self, *args, repeat: int = 1) -> Profile:
        """Per-node time and bytes: runs the profiled program `repeat` times on `args` (by
        default the last call's inputs; updates apply as in any call) and returns the table
        of every profiled run of this signature so far."""
        if not args:
            if self._last_args is None:
                raise GraphError("profile() needs inputs: call the function once, or pass them")
            args = self._last_args
        for _ in range(repeat):
            self.program.run(args, profiled=True, host=not self.return_device_arrays)
        return Profile(self._last().profile(), self.program.transfers.snapshot())

    @property
    def plan(self):
        """The memory plan (a MemoryPlan) of the most recent input signature; `plan.bodies`
        holds the plans of the region bodies it ran (scan, while_loop, cond), each with an
        arena of its own, and `plan.total_bytes` counts them too."""
        plan = self._last().plan
        if plan is not None:
            plan.bodies = body_plans(self._last().graph)
        return plan

    def __call__(self, *args):
        if len(args) != len(self.inputs):
            names = ", ".join(s.name for s in self.inputs)
            raise GraphError(f"this function takes {len(self.inputs)} inputs ({names}), "
                             f"got {len(args)}")  # fmt: skip
        self._last_args = args
        outputs = self.program.run(args, host=not self.return_device_arrays)
        return outputs[0] if self._single else outputs


class Profile:
    """Per-node time and output bytes of a Function's profiled runs, and the copies between
    host and device of all its runs (`transfers`: {kind: (copies, bytes)}); `str()` is a
    table. On a GPU each node's time includes waiting for its kernels."""

    def __init__(self, rows, transfers=None):
        self.rows = [{"name": n.name, "op": n.op.name, "seconds": t, "bytes": b}
                     for n, t, b in rows]  # fmt: skip
        self.transfers = dict(transfers or {})

    @property
    def total_seconds(self) -> float:
        return sum(r["seconds"] for r in self.rows)

    def __str__(self):
        total = self.total_seconds or 1.0
        lines = [f"{'node':<32} {'op':<18} {'ms':>9} {'%':>6} {'bytes':>12}"]
        for r in sorted(self.rows, key=lambda r: -r["seconds"]):
            lines.append(f"{r['name'][:32]:<32} {r['op'][:18]:<18} {r['seconds'] * 1e3:9.3f} "
                         f"{100 * r['seconds'] / total:6.1f} {r['bytes']:>12}")  # fmt: skip
        lines.append(f"total {self.total_seconds * 1e3:.3f} ms over {len(self.rows)} nodes")
        for kind, (copies, nbytes) in sorted(self.transfers.items()):
            lines.append(f"transfers, {kind}: {copies} copies, {nbytes} bytes")
        return "\n".join(lines)


def _as_update(var, value):
    """The update's value as a Symbol of `var`'s graph, checked by the `assign` rules."""
    if not isinstance(value, Symbol):
        array = np.asarray(value, dtype=var.dtype)
        value = var.graph.add_node(
            REGISTRY["constant"], (), {"value": ArrayValue(array)}, f"{var.name}_update",
            shape=array.shape, dtype=array.dtype,
        ).out  # fmt: skip
    infer(REGISTRY["assign"], (var, value), {}, value.site)
    return value


function = Function


class Session:
    """Runs fetches of a graph, TF1-style, on one device. A program is compiled per set of
    fetches and feeds, and planned per input signature; `cache_size` bounds both how many
    programs are kept and how many signatures each keeps (the least recently used go first;
    None: `kiln.runtime.cache.CACHE_SIZE`, 64).

    >>> import kiln as kn, numpy as np
    >>> with kn.Graph().as_default() as g:
    ...     x = kn.placeholder(kn.float32, (2,), name="x")
    ...     y = x * 2.0
    >>> with kn.Session(graph=g) as sess:
    ...     sess.run({"y": y}, feed_dict={x: np.ones(2, np.float32)})
    {'y': array([2., 2.], dtype=float32)}
    """

    def __init__(
        self, graph=None, device="cpu", return_device_arrays: bool = False,
        check_numerics: bool = False, cache_size: int | None = None,
    ):  # fmt: skip
        _cache_size(cache_size)  # refuses a bad bound now
        self.cache_size = cache_size  # of the programs kept, and of each one's signatures
        self.graph = graph or get_default_graph()
        self.check_numerics = check_numerics
        self.device = device
        self.backend = get_backend(device)
        self.return_device_arrays = return_device_arrays
        self._programs: OrderedDict = OrderedDict()  # least recently used first
        self._lock = threading.Lock()
        self._closed = False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        self._closed = True
        self._programs.clear()

    def run(self, fetches, feed_dict=None):
        """Values of `fetches` (a Symbol, or a list, tuple or dict of them, nested)."""
        if self._closed:
            raise GraphError("this Session is closed")
        feed_dict = dict(feed_dict or {})
        flat = []
        structure = _flatten(fetches, flat)
        feeds = list(feed_dict)
        _check_symbols(flat, "fetches")
        _check_symbols(feeds, "feed_dict keys")
        key = (tuple(map(id, flat)), tuple(map(id, feeds)))
        with self._lock:
            program = self._programs.get(key)
            if program is None:
                program = Program(flat, feeds, {}, self.backend,
                                  check_numerics=self.check_numerics)  # fmt: skip
                program.cache_size = self.cache_size
                self._programs[key] = program
                for _, old in evict(self._programs, self.cache_size):
                    fetched = ", ".join(s.name for s in old.graph.outputs)
                    log(1, f"Session: cache full ({len(self._programs)} programs): dropped the "
                           f"least recently used, fetching {fetched}")  # fmt: skip
            else:
                self._programs.move_to_end(key)
        values = program.run([feed_dict[s] for s in feeds], host=not self.return_device_arrays)
        values = [None if "group" in s.op.tags else v for s, v in zip(flat, values)]
        return _unflatten(structure, iter(values))

    def set_value(self, variable, value) -> None:
        """Sets a Variable's value (shared by every Session and Function using it)."""
        variable.assign(value)

    def reset(self) -> None:
        """Every Variable of this Session's graph back to its initial value."""
        with self.graph._lock:
            for v in self.graph.variables:
                v.reset()

    def save(self, path) -> None:
        """Writes every Variable of this Session's graph, by name, to a safetensors file.

        >>> import kiln as kn, numpy as np, os, tempfile
        >>> with kn.Graph().as_default() as g:
        ...     w = kn.Variable(np.ones(2, np.float32), name="w")
        >>> path = os.path.join(tempfile.mkdtemp(), "ckpt.safetensors")
        >>> with kn.Session(graph=g) as sess:
        ...     sess.save(path)
        ...     w.assign(np.zeros(2, np.float32))
        ...     sess.restore(path)
        >>> w.numpy()
        array([1., 1.], dtype=float32)
        """
        from ..checkpoint import save_variables  # NOTE: lazy, checkpoint sits above runtime

        save_variables(self.graph.variables, path, lock=self.graph._lock)

    def restore(self, path) -> None:
        """Sets every Variable of this Session's graph from a file written by `save`.

        The file must hold exactly the graph's Variable names with their shapes and dtypes;
        otherwise `CheckpointError` lists every problem and no Variable changes.
        """
        from ..checkpoint import restore_variables

        restore_variables(self.graph.variables, path, lock=self.graph._lock)


def _flatten(fetches, flat):
    if isinstance(fetches, Symbol):
        flat.append(fetches)
        return None
    if isinstance(fetches, dict):
        return (dict, {k: _flatten(v, flat) for k, v in fetches.items()})
    if isinstance(fetches, (list, tuple)):
        return (type(fetches), [_flatten(v, flat) for v in fetches])
    raise GraphError(f"cannot fetch {type(fetches).__name__}: {fetches!r:.80}")


def _unflatten(structure, values):
    if structure is None:
        return next(values)
    kind, items = structure
    if kind is dict:
        return {k: _unflatten(v, values) for k, v in items.items()}
    return kind(_unflatten(v, values) for v in items)


def body_plans(graph) -> list:
    """(label, MemoryPlan) for each region body of `graph`'s region ops that has run: the
    plan of its program's most recent signature, with its own bodies' plans."""
    found = []
    for node in graph.nodes:
        if "region" not in node.op.tags:
            continue
        for attr, region in sorted(node.attrs.items()):
            cache = getattr(region, "cache", None)
            if not isinstance(cache, dict):
                continue
            for key, program in cache.items():
                last = getattr(program, "last", None)
                plan = None if last is None else last.plan
                if plan is None:
                    continue
                plan.bodies = body_plans(last.graph)
                mode = ", checking numerics" if "numerics" in key else ""
                found.append((f"{attr} of {node.op.name} '{node.name}' ({key[0]}{mode})", plan))
    return found
