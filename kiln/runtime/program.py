"""The one compile path: extract the program graph, optimize it, and per input signature
plan and generate a program (kiln/runtime/codegen.py); run it, commit updates all or nothing.

`Program(fetches, feeds, updates, backend)`; `Program.run(values)` returns the fetched values.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import threading
import time
from collections import OrderedDict

import numpy as np

from .. import dtypes as dt
from ..debug import checks_level, debug_level, log
from ..errors import (
    DTypeError,
    GraphError,
    IndexOutOfRangeError,
    IntegerDivisionByZeroError,
    KilnError,
    ShapeError,
    node_error,
)
from ..graph.core import Symbol
from ..ops import fused
from ..passes import PIPELINE, optimize
from ..passes.autocast import autocast_pass
from ..passes.program import extract
from ..passes.remat import check_budget, choices, long_lived, recompute
from ..passes.remat_scan import SCAN_CHOICE, recompute_scans, stacked_bytes
from .backend import Transfers, get_backend, ignore_fp_errors, restore_fp_errors
from .cache import evict, feed_shapes, touch
from .codegen import Specialized
from .rebind import shape_class


class KernelError(KilnError, RuntimeError):
    """A kernel that failed while running, re-raised with its node's context."""


# Without numba, the fewest nodes a small group fuses (measured in thread time on the digits
# demo's training step: 381 us with groups of 2 or more fused, 306 with none, 289 with groups
# of 6 or more; the 100-op chain on f32[16]: 54 us unfused, 31 fused)
NUMPY_SMALL_MIN_OPS = 6


class Program:
    """A program graph ready to run on one backend, with one planned program per signature.

    Thread-safe: each thread runs its own arena; runs that read or write Variables hold the
    graph's lock, so an in-place update is never seen half done.
    """

    def __init__(
        self, fetches, feeds, updates, backend, passes=None, plan=True, check_numerics=False,
        memory_budget: int | None = None, into=False, autocast=None, placed=(),
    ):  # fmt: skip
        self.memory_budget = check_budget(memory_budget)
        self.backend = backend
        self.into = into  # runs write the fetched values into the caller's arrays (`outs`)
        # positions of feeds the caller writes into a run's arena (`run(arena=...)`); the
        # plan reuses their bytes after their last read (kiln/runtime/codegen.py)
        self.placed = tuple(placed)
        self.check_numerics = check_numerics
        self.device = backend.name
        self.transfers = Transfers()  # copies this program made: feeds, variables, outputs
        self.plan_memory = plan
        with _gc_paused():
            graph = extract(list(fetches), list(feeds), dict(updates))
            if passes is None:
                passes = [(n, _with_options(fn, self._options(n))) for n, fn in PIPELINE]
            if autocast is not None:  # first: the passes after it see the casts
                passes = [autocast_pass(autocast), *passes]
            self.graph = optimize(graph, passes)
        self.source_graph = graph.source
        self.feeds = self.graph.inputs
        self.constraints = self.graph.constraints
        self.touches_variables = any(n.op.name == "variable" for n in self.graph.nodes)
        # On the CPU with every feed of a static shape (and no run-time constraint): feeds
        # that are C-contiguous NumPy arrays of exactly those dtypes and shapes need no check.
        static = all(all(type(d) is int for d in s.shape) for s in self.feeds)
        self._exact_feeds = None
        if backend.name == "cpu" and static and not self.constraints:
            self._exact_feeds = [(dt.as_dtype(s.dtype), tuple(s.shape)) for s in self.feeds]
        self._specialized: OrderedDict = OrderedDict()  # least recently used first
        self.cache_size = None  # its bound; None: kiln.runtime.cache.CACHE_SIZE
        self._lock = threading.Lock()
        self.last = None  # the most recent Specialized, for f.source / f.plan

    def _options(self, name) -> dict | None:
        """The backend's options for pass `name`. Checking numerics, small groups are not
        fused, so a NaN is reported at the op that made it. On the CPU without compiled loops
        (no numba) a small group runs the same ufuncs as its unfused nodes, in one call of
        straight-line code: that pays for long groups only (`NUMPY_SMALL_MIN_OPS`). With
        them, every group up to `fused.UNBLOCKED_BYTES` (1 MiB) is fused: one vectorized loop
        takes 0.2-0.7x the time of NumPy's calls at every such size (kiln/ops/fused.py's
        CHEAP_NS)."""
        options = self.backend.pass_options.get(name)
        if options and "small_bytes" in options:
            if self.check_numerics or checks_level() >= 2:
                options = {k: v for k, v in options.items() if k != "small_bytes"}
            elif self.backend.xp is np and not fused.has_compiled_loops():
                options = {**options, "small_min_ops": NUMPY_SMALL_MIN_OPS}
            elif self.backend.xp is np:
                options = {**options, "small_bytes": fused.UNBLOCKED_BYTES}
        return options

    # -- feeds -----------------------------------------------------------------------------

    def bind_feeds(self, values) -> tuple[list, dict]:
        """Checks each feed against its placeholder; returns device arrays and dim bindings."""
        if len(values) != len(self.feeds):
            raise GraphError(f"expected {len(self.feeds)} feeds, got {len(values)}")
        exact = self._exact_feeds
        if exact is not None:  # the per-call fast path: NumPy arrays of the static types
            for value, (dtype, shape) in zip(values, exact):
                if type(value) is not np.ndarray or value.dtype != dtype or value.shape != shape:
                    break
                if not value.flags.c_contiguous:
                    break
            else:
                return list(values), _STATIC
        bindings, arrays = {}, []
        on_host = self.device == "cpu"
        for sym, value in zip(self.feeds, values):
            array = check_feed(sym, value, bindings)
            is_host = isinstance(array, (np.ndarray, np.generic))
            if sym.shape and is_host and not array.flags.c_contiguous:
                array = np.ascontiguousarray(array)
            if on_host and is_host:  # NOTE: the per-call fast path: NumPy used as it is
                arrays.append(array)
                continue
            arrays.append(self.backend.to_device(array))
            if is_host:
                self.transfers.add("feeds in", array.nbytes)
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

    # -- compiling ---------------------------------------------------------------------------

    def specialize(self, arrays, bindings) -> Specialized:
        """The planned program for these feeds' shapes, compiled on first use (and logged)."""
        if bindings is _STATIC and self.last is not None:
            return self.last  # static feeds of the exact types: there is one signature
        key = tuple([a.shape for a in arrays])
        spec = self._specialized.get(key)
        if spec is None:
            with self._lock:
                spec = self._specialized.get(key)
                if spec is None:
                    spec = self._compile(key, arrays, bindings)
                    self._specialized[key] = spec
                    for old, _ in evict(self._specialized, self.cache_size):
                        log(1, f"compile cache full ({len(self._specialized)} signatures): "
                               f"dropped the least recently used, "
                               f"{feed_shapes(self.feeds, old)}")  # fmt: skip
        elif spec is not self.last:
            touch(self._specialized, key)
        self.last = spec
        return spec

    def _compile(self, key, arrays, bindings) -> Specialized:
        start = time.perf_counter()
        reason = self._reason(key)
        with _gc_paused():
            spec = self._specialized_for(self.graph, key, bindings, template=self._template(key))
            if self.memory_budget is not None and self.plan_memory:
                spec = self._within_budget(spec, key, bindings)
        plan = spec.plan
        log(1, f"compile ({reason}): {len(spec.graph.nodes)} nodes, arena "
               f"{plan.arena_bytes} B (lower bound {plan.lower_bound_bytes} B, naive "
               f"{plan.naive_bytes} B), {(time.perf_counter() - start) * 1e3:.1f} ms")  # fmt: skip
        if debug_level() >= 2:
            log(2, f"memory plan:\n{plan.summary()}\nprogram:\n{spec.source}")
        return spec

    def _specialized_for(self, graph, key, bindings, generate=True, template=None, into=None):
        into = self.into if into is None else into
        return Specialized(graph, key, bindings, self.backend, checks=checks_level(),
                           plan=self.plan_memory, generate=generate, into=into,
                           numerics=self.check_numerics or checks_level() >= 2,
                           template=template, placed=self.placed)  # fmt: skip

    def specialize_shapes(self, shapes) -> Specialized:
        """The planned program for feeds of these shapes (every feed of a static shape),
        compiled before any run: where a caller places feeds (`placed`) is read from it."""
        arrays = [_Shaped(tuple(s)) for s in shapes]
        return self.specialize(arrays, {})

    def specialized_into(self, spec, key, bindings) -> Specialized:
        """`spec`'s graph (its recomputation included) as a program that writes its fetched
        values into the caller's arrays (`run(outs=...)` of a program made without `into`)."""
        variant = getattr(spec, "into_variant", None)
        if variant is None:
            with _gc_paused():
                variant = self._specialized_for(spec.graph, key, bindings, into=True)
            spec.into_variant = variant
        return variant

    def _template(self, key):
        """The most recently used program of this graph whose signature has `key`'s shape
        class (kiln/runtime/rebind.py): a new batch size reuses its schedule and code."""
        if self.memory_budget is not None or self.placed:
            return None  # NOTE: each signature chooses its own recomputation (and placement)
        cls = shape_class(key)
        for old in reversed(self._specialized):
            spec = self._specialized[old]
            if spec.graph is self.graph and shape_class(old) == cls:
                return spec
        return None

    def _within_budget(self, spec, key, bindings) -> Specialized:
        """`spec`, or when its arena is over the memory budget the program that recomputes
        the fewest long-lived values and fits (kiln/passes/remat.py), else the smallest
        arena tried; the choice is logged and kept as `plan.recomputed`."""
        budget, best = self.memory_budget, spec
        stacked = stacked_bytes(self.graph)  # scans' stacked results: outside the arena
        if spec.plan.arena_bytes + stacked <= budget:
            return spec
        found = long_lived(self.graph)
        options = [
            (label, dropped, lambda d=dropped: recompute(self.graph, d))
            for label, dropped in sorted(choices(self.graph), key=lambda c: len(c[1]))
        ]
        scans = recompute_scans(self.graph)
        if scans is not None:  # tried first: it keeps every value outside the loops
            options.insert(0, (SCAN_CHOICE, (), lambda: scans))
        held = {id(spec): spec.plan.arena_bytes + stacked}
        for label, dropped, make in options:
            graph = make()
            graph.source, graph.constraints = self.graph.source, self.graph.constraints
            graph.optimized = (*self.graph.optimized, "recompute")
            candidate = self._specialized_for(graph, key, bindings, generate=False)
            arena = candidate.plan.arena_bytes + stacked_bytes(graph)
            log(2, f"memory budget {budget} B: {label}: arena and stacked loop values {arena} B")
            if arena < held[id(best)]:
                best, choice = candidate, (graph, label, dropped)
                held[id(best)] = arena
            if arena <= budget:
                break
        before = spec.plan.arena_bytes
        if best is not spec:
            graph, label, dropped = choice
            best = self._specialized_for(graph, key, bindings)
            best.plan.recomputed = sorted(found[i][0].name for i in dropped) if dropped else [
                n.name for n in graph.nodes if n.op.name == "scan"]  # fmt: skip
            best.plan.recompute_choice = label
        plan = best.plan
        if best is spec:
            log(1, f"memory budget {budget} B: no recomputation lowers the arena "
                   f"({before} B)")  # fmt: skip
        else:
            fits = "fits" if plan.arena_bytes <= budget else "is still over the budget"
            log(1, f"memory budget {budget} B: recomputing {len(plan.recomputed)} values "
                   f"({plan.recompute_choice}); arena {before} -> {plan.arena_bytes} B, which "
                   f"{fits}: {', '.join(plan.recomputed)}")  # fmt: skip
        return best

    def _reason(self, key) -> str:
        if not self._specialized:
            return "first call"
        old = next(reversed(self._specialized))  # the most recently used
        for sym, new_shape, old_shape in zip(self.feeds, key, old):
            if new_shape != old_shape:
                return f"new shape for '{sym.name}': {new_shape} (was {old_shape})"
        return "new signature"

    # -- running -----------------------------------------------------------------------------

    def output_shapes(self, values) -> list:
        """The shapes of the fetched values for these feeds (compiling their signature)."""
        arrays, bindings = self.bind_feeds(values)
        spec = self.specialize(arrays, bindings)
        return [spec.shapes[id(s)] for s in self.graph.outputs]

    def run(self, values, profiled: bool = False, host: bool = True, outs=None,
            donate: bool = False, arena=None) -> list:  # fmt: skip
        """Runs once: returns the fetched values (fresh arrays; NumPy arrays unless `host` is
        False, then the device's) and commits the updates. The device is current throughout.
        A program made with `into=True`, or given `outs` when it has no updates, writes them
        into `outs` (arrays of the device, of `output_shapes`) instead, and returns `outs`.
        With `donate` the list `values` is emptied: the program holds each feed only until
        its last read, so a feed no one else holds is freed there (how a compiled call's
        backward frees its residuals). `arena`: this run's own arena, in its plan's pieces
        (`Specialized.function_on`), where the caller wrote the placed feeds (`placed`)."""
        with self.backend.scope():
            arrays, bindings = self.bind_feeds(values)
            if donate:
                values.clear()
            spec = self.specialize(arrays, bindings)
            into = self.into or outs is not None
            if into and not self.into:
                if self.graph.updates:
                    raise GraphError("run(outs=...) of a program with updates")
                spec = self.specialized_into(spec, tuple([a.shape for a in arrays]), bindings)
            if arena is not None:
                fn = spec.function_on(arena)
            else:
                fn = spec.function(profiled)
            graph = self.source_graph
            lock = graph._lock if graph is not None and self.touches_variables else _NO_LOCK
            with lock:
                variables = [self._place(v) for v in spec.variables]
                keys = self._random_keys(spec, graph)
                token = ignore_fp_errors()
                outer = getattr(BODY_NUMERICS, "on", False)
                BODY_NUMERICS.on = outer or self.check_numerics  # region bodies check too
                try:
                    if into:
                        outputs, updates = fn(arrays, variables, keys, outs)
                    else:
                        outputs, updates = fn(arrays, variables, keys)
                except (IndexOutOfRangeError, IntegerDivisionByZeroError) as e:  # data checks
                    node = spec.failing_node(e.__traceback__)
                    if node is None:
                        raise
                    raise kernel_error(node, spec, e) from None
                except KilnError:
                    raise
                except Exception as e:
                    node = spec.failing_node(e.__traceback__)
                    if node is None:
                        raise
                    raise kernel_error(node, spec, e) from e
                finally:
                    BODY_NUMERICS.on = outer
                    restore_fp_errors(token)
                del fn  # a run's own arena is freed with it
                if updates:
                    self._commit(spec, updates)
            if into:
                return outputs
            if self.device == "cpu":  # NumPy gives a 0-d result as a scalar: make it an array
                return [o if type(o) is np.ndarray else np.asarray(o) for o in outputs]
            if not host:
                return outputs
            for o in outputs:
                self.transfers.add("outputs out", o.nbytes)
            return [self.backend.to_host(o) for o in outputs]

    def _place(self, var):
        """The Variable's value on this program's device: moved there once, logged and
        counted; it stays there until a program on another device runs it."""
        if var.device != self.device:
            old = var.device
            value = var._value if old == "cpu" else get_backend(old).to_host(var._value)
            var._value = self.backend.to_device(value)
            var.device = self.device
            self.transfers.add("variables moved", value.nbytes)
            log(1, f"variable '{var.name}' ({value.nbytes} B) moved from {old} to {self.device}")
        return var._value

    def _random_keys(self, spec, graph) -> list:
        if not spec.random_nodes:
            return []
        with graph._lock:
            keys = []
            for node in spec.random_nodes:
                n = graph.rng_steps.get(node.name, 0)
                graph.rng_steps[node.name] = n + 1
                keys.append((node.attrs["seed"], n))
        return keys

    def _commit(self, spec, values):
        """Swaps in the new values of the updates not done in place (they cannot fail now)."""
        xp = self.backend.xp
        for var, value in zip(spec.update_vars, values):
            var._value = xp.asarray(value, dtype=var.dtype)
            var.device = self.device


class _Shaped:
    """A feed's shape, where `specialize` needs no value."""

    __slots__ = ("shape",)

    def __init__(self, shape):
        self.shape = shape


_NO_LOCK = contextlib.nullcontext()
# While a program that checks numerics runs (`check_numerics=True`), the region bodies it runs
# check theirs too (kiln/runtime/regions.py reads this; KILN_CHECKS=2 reaches them anyway).
BODY_NUMERICS = threading.local()
_STATIC: dict = {}  # bind_feeds' bindings for static feeds taken as they are (none to bind)


def _with_options(fn, options):
    return fn if not options else functools.partial(fn, **options)


@contextlib.contextmanager
def _gc_paused():
    """Compiling makes many small objects and no cycles: the cyclic collector only slows it
    (about 1.5x on a 20,000-op graph)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def check_feed(sym: Symbol, value, bindings: dict):
    """The feed as an array of `sym`'s dtype; binds `sym`'s symbolic dims in `bindings`."""
    weak = not isinstance(value, (np.ndarray, np.generic)) and not hasattr(
        value, "__cuda_array_interface__"
    )
    array = np.asarray(value) if weak else value
    if weak:
        bad = array.dtype.kind in "OUSV" and array.dtype != dt.bfloat16
        if bad or not np.can_cast(array.dtype, sym.dtype, "same_kind"):
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


def kernel_error(node, spec, e) -> KilnError:
    if isinstance(e, (IndexOutOfRangeError, IntegerDivisionByZeroError)):  # data-dependent
        return node_error(type(e), e.reason or str(e), op=node.op.name,
                          name=node.name, site=node.site, inputs=node.inputs)  # fmt: skip
    got = ", ".join(f"{dt.short_name(i.dtype)}{list(spec.shapes[id(i)])}" for i in node.inputs)
    return node_error(
        KernelError, f"kernel failed: {type(e).__name__}: {e}; got {got or 'no inputs'}",
        op=node.op.name, name=node.name, site=node.site, inputs=node.inputs,
    )  # fmt: skip
