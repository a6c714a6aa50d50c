"""`kn.compile` and `kn.trace`: an eager-style function run once on Symbols, compiled, and
cached per input signature (shapes, dtypes, device, static arguments, grad mode, the Python
values it captured and the `training` flags of the modules it uses; a bounded LRU cache),
with one log line per compile saying what differed. The tensors it captured are guarded: an
in-place change (their version), another tensor or a new shape retraces.
"""

from __future__ import annotations

import functools
import inspect
import threading
import time
import types
import warnings
from collections import OrderedDict

import numpy as np

from .. import dtypes as dt
from ..debug import log
from ..eager import dispatch, forward_ad
from ..eager.grad_mode import state
from ..eager.hooks import hook_state
from ..eager.tensor import Tensor
from ..eager.trace_notes import READ_IN_TRACE
from ..errors import ArgumentError, ArgumentTypeError, DeviceError, GraphError, UsageError
from ..frontend.autocast import autocast_key
from ..graph.core import Symbol
from ..nn.module import Module
from ..runtime.backend import parse_device
from ..runtime.cache import cache_size as _cache_size
from ..runtime.cache import evict, touch
from .guards import APPENDS, ITEMS, Captures, Guard, put, rebindable, value_changes, value_types
from .stores import Watch, stored_keys
from .structure import describe, flatten, name_of, signature
from .torch_compiler import COMPILED
from .trace_checks import (
    check_new_entries,
    check_no_host_draws,
    check_untouched,
    group_changes,
    host_random_states,
    restore_seed_stream,
    tensor_versions,
    undo,
)
from .traced import Traced, check_budget

__all__ = ["compile", "trace", "CompiledFunction", "Traced"]


class CompiledFunction:
    """`fn` compiled per input signature: see `compile`. `.cache` maps signatures to their
    `Traced` (least recently used first; at most `cache_size`); `.last` is the one the latest
    call ran; `.trace_count` is how many times `fn` was traced (each new signature, each
    change of what it captured).

    >>> import kiln as kn
    >>> f = kn.compile(lambda x: x * 2)
    >>> _ = f(kn.ones(2)), f(kn.ones(2)), f(kn.ones(3))
    >>> f.trace_count
    2
    """

    def __init__(self, fn, device=None, cache_size=None, memory_budget=None, retrace_limit=None):
        functools.update_wrapper(self, fn)
        self.fn, self.device = fn, device
        _cache_size(cache_size)  # refuses a bad bound now rather than at the first trace
        self.memory_budget = check_budget(memory_budget)
        self.cache_size = cache_size
        self.cache: OrderedDict = OrderedDict()
        self.last: Traced | None = None
        self.trace_count = 0
        COMPILED.add(self)  # (kn.compiler.reset)
        self._lock = threading.Lock()
        self._captures: Captures | None = None  # what fn reads: found on first call
        self._by_grads: dict = {}  # key -> its Traced for each `.grad` state (`_file_by_grads`)
        self._stored: set = set()  # what its traces store in Python state: not guarded
        self._lift: set = set()  # labels of captured tensors fn writes into: inputs too
        self._value_retraces = 0  # traces that changed a Python value fn reads (a counter)
        self.retrace_limit = RETRACE_LIMIT if retrace_limit is None else int(retrace_limit)
        self._warned = False
        self._host_random = False  # a trace drew from a host generator: calls run eagerly
        try:
            params = list(inspect.signature(fn).parameters.values())
        except (TypeError, ValueError):
            params = []
        self._names = [p.name for p in params if p.kind <= p.POSITIONAL_OR_KEYWORD]
        # defaults that are arrays go in as arguments: each call reads their values then, as
        # eager calls do (a trace would hold the values it saw)
        self._array_defaults = [
            (i, p.name, p.kind == p.KEYWORD_ONLY, p.default)
            for i, p in enumerate(params)
            if isinstance(p.default, _ARRAYS) and p.kind != p.POSITIONAL_ONLY
        ]

    def reset(self) -> None:
        """Drops every trace (the next call traces again) and the recompile count."""
        with self._lock:
            self.cache.clear()
            self._by_grads.clear()
            self.last, self._captures = None, None
            self._value_retraces, self._warned, self._host_random = 0, False, False

    def __get__(self, obj, objtype=None):
        return self if obj is None else types.MethodType(self, obj)

    def __getstate__(self):
        """A copy (`copy.deepcopy`, pickle) compiles its copy of fn afresh: traces, their
        programs and the lock are not copied (as torch.compile's OptimizedModule)."""
        names = ("fn", "device", "cache_size", "memory_budget", "retrace_limit")
        return {name: getattr(self, name) for name in names}

    def __setstate__(self, state):
        self.__init__(**state)

    def flatten_args(self, args, kwargs):
        """(leaves, their paths, static (path, value) pairs, structure) of a call's arguments;
        `trace_for` takes them."""
        leaves, paths, statics = [], [], []
        for i, name, keyword_only, default in self._array_defaults:
            if name not in kwargs and (keyword_only or len(args) <= i):
                kwargs = {**kwargs, name: default}
        names = [self._names[i] if i < len(self._names) else f"arg{i}" for i in range(len(args))]
        positional = tuple(flatten(a, n, leaves, paths, statics) for a, n in zip(args, names))
        named = tuple(flatten(v, k, leaves, paths, statics) for k, v in kwargs.items())
        structure = (tuple, ((tuple, positional), (dict, tuple(kwargs), named)))
        return leaves, paths, statics, structure

    def _key(self, leaves, statics, structure):
        devices = {x._device for x in leaves if isinstance(x, Tensor)}
        if len(devices) > 1:
            raise DeviceError(
                f"Expected all tensors to be on the same device, but {name_of(self.fn)} got "
                f"tensors on {sorted(devices)}"
            )
        if self.device is not None and devices - {self.device, _canonical(self.device)}:
            raise DeviceError(
                f"Expected all tensors to be on the same device: {name_of(self.fn)} is compiled "
                f"for {self.device}, but got tensors on {sorted(devices)}"
            )
        device = self.device or (devices.pop() if devices else "cpu")
        captured = self._captured()
        modules = self._captures.modules + [s for m in statics if isinstance(m[1], Module)
                                            for s in m[1].modules()]  # fmt: skip
        wants_grad = state.grad and any(isinstance(x, Tensor) for x in leaves)
        # the default dtype sets promotion (`int / int`, `int + 0.5`) and factories' dtypes
        key = (structure, tuple(map(signature, leaves)), device, wants_grad,
               tuple(m.training for m in modules), captured, autocast_key(device),
               dt.DEFAULT_FLOAT)  # fmt: skip
        try:
            hash(key)
        except TypeError:
            path, value = next(((p, v) for p, v in statics if not _hashable(v)), (None, None))
            if path is None:  # a captured value is no longer hashable: look again
                self._captures = None
                return self._key(leaves, statics, structure)
            raise ArgumentTypeError(
                f"kn.compile: argument '{path}' of {name_of(self.fn)} is a "
                f"{type(value).__name__}, neither an array nor hashable; pass arrays or Tensors "
                "for values that change, hashable Python values for static ones"
            ) from None
        return key, modules

    def _captured(self) -> tuple:
        """The Python values fn captured, now (walking fn's code first if needed)."""
        if self._captures is not None:
            try:
                return self._captures.values()
            except (KeyError, IndexError, ValueError):  # a global deleted, a cell emptied
                pass
        self._captures = Captures(self.fn, exclude=self._stored)
        return self._captures.values()

    def __call__(self, *args, **kwargs):
        leaves, paths, statics, structure = self.flatten_args(args, kwargs)
        if any(isinstance(x, Symbol) for x in leaves):  # inside another trace: inline
            return self.fn(*args, **kwargs)
        if dispatch.dual and forward_ad.any_dual(leaves):  # forward AD: eagerly (its tangents)
            return self.fn(*args, **kwargs)
        traced = self.trace_for(leaves, paths, statics, structure)
        if traced is None:  # past the retrace limit: eagerly, as torch.compile falls back
            return self.fn(*args, **kwargs)
        if traced.lifted:
            leaves = leaves + [get() for _, get in traced.lifted]
        out = traced.run(leaves, (args, kwargs))
        for place, value in traced.replays:  # the Python values its code stores (a counter)
            put(place, value)
        return out

    def trace_for(self, leaves, paths, statics, structure) -> Traced:
        """The Traced of this signature, traced and compiled on first use or when what it
        captured changed (logged)."""
        key, modules = self._key(leaves, statics, structure)
        if self._host_random:  # it draws from a host generator: eagerly (see below)
            return None
        traced = self.cache.get(key)
        stale, by_grads = None, False
        if traced is not None and traced.grad_inputs:  # this key's trace for the `.grad`s now
            found = next((t for t in self._by_grads.get(key, ())
                          if t.grad_now(_inputs(t, leaves)) in t.grad_keys), None)  # fmt: skip
            if found is None:
                now = traced.grad_now(_inputs(traced, leaves))
                stale, by_grads = (f"which parameters have a .grad changed ({now})", False), True
            else:
                traced = self.cache[key] = found
        if traced is not None and stale is None:
            stale = traced.captured.check(key[5])
            if stale is None and traced.param_dtypes != tuple(
                    (p._value.dtype, p._value.shape) for p in traced.params):  # fmt: skip
                stale = ("a parameter's dtype or shape changed (Module.to, half(), .data = "
                         "...)", False)  # fmt: skip
            if (stale is None and traced.grad_writes  # (a backward() inside: it ran them)
                    and traced.param_hooks != hook_state(traced.params)):  # fmt: skip
                stale = ("a parameter's gradient hooks changed", False)
            if stale is None and traced.plans_grad:
                if traced.guard != tuple(p.tensor()._requires_grad for p in traced.params):
                    stale = ("a parameter's requires_grad changed", False)
            if stale is None:
                if traced is not self.last:
                    touch(self.cache, key)
                self.last = traced
                return traced
        with self._lock:
            if stale is not None and stale[1]:  # an object fn reaches was replaced
                self._captures = None
                key, modules = self._key(leaves, statics, structure)
            reason = f"retrace: {stale[0]}" if stale else self._reason(key, modules, statics, paths)
            if self._value_retraces >= self.retrace_limit:
                if not self._warned:
                    self._warned = True
                    warnings.warn(
                        f"kn.compile: {name_of(self.fn)} changed a Python value it reads on "
                        f"{self._value_retraces} calls, each traced again; calls that need "
                        f"another trace now run eagerly (as torch.compile's recompile limit): "
                        f"{reason}. Keep such state in a tensor, or outside the function",
                        stacklevel=3,
                    )
                return None
            start = time.perf_counter()
            had = {id(p): p.grad is not None for m in modules for p in m._parameters.values()
                   if p is not None}  # fmt: skip
            found = None
            while found is None:  # (again, after a trace wrote into a captured tensor)
                found = self._trace(key, modules, leaves, paths, structure, statics)
            (traced, read, seen, roots, host_before, values_before, restore, shapes, groups,
             tensors, aliased) = found  # fmt: skip
            try:
                check_no_host_draws(traced.name, host_before)
            except GraphError as e:  # its draws would be constants: it runs eagerly, as
                undo(seen, values_before, restore, shapes)  # torch.compile's graph breaks
                for _, place, old, _ in group_changes(groups):
                    put(place, old)
                self._host_random = True
                warnings.warn(f"{e} It runs eagerly now, on this and every call.",
                              stacklevel=3)  # fmt: skip
                return None
            # A place this trace found it stores in, whose tensor before the trace it read (a
            # constant: `self.buf = self.buf * 0.5 + x`): its program serves this call only;
            # the next traces read the place as an input (`_lifted`), as each call stores anew.
            once = False
            if traced.stores:  # stored each call: not guarded (what fn reaches, again)
                found = stored_keys(traced.stores)
                once = not found <= self._stored and any(
                    isinstance(store.old, Tensor) and id(store.old) in read
                    for store in traced.stores
                )
                self._stored |= found
                self._captures = None
            try:  # a container it reads grew or shrank (`self.state[p]["step"] = 0` made new
                seen.values()  # entries): its Python changes cannot be replayed, so this
            except (KeyError, IndexError, ValueError):  # trace serves this call only, and the
                once, self._captures = True, None  # next traces from what it left
                self._value_retraces += 1
                label = check_new_entries(seen, Captures(self.fn, roots, self._stored),
                                          values_before, restore, shapes)  # fmt: skip
                if label is not None:  # (its trace undone): this call runs eagerly
                    log(1, f"kn.compile: {traced.name} keeps a tensor it made and changed in "
                           f"place in a new entry of its Python state ('{label}'): this call "
                           "runs eagerly")  # fmt: skip
                    return None
            # The Python values the trace changed (`self.count += 1`) are stored again by each
            # call of it, and it is keyed and guarded by the values before: the next call
            # finds them changed and traces again, as torch.compile recompiles (and as eager
            # code, each call counts). Tensors it stores are left to `stores`.
            changed = seen.changes(values_before)
            # A list of Python values that the trace only appended to (`log.append(1)`) and
            # that fn does not read is no longer keyed: each call appends the same items, as
            # eager code and torch.compile do (the trace's own appends are undone: this
            # call's replay makes them). One it reads, or changed otherwise, stays keyed by
            # its items: the next call traces again, as for the values above.
            appends = []
            for label, place, old, new in [c for c in changed if c[1][1] is ITEMS]:
                if new[: len(old)] == old and seen.only_appended(label):
                    changed.remove((label, place, old, new))
                    appends.append(((place[0], APPENDS), new[len(old) :]))
                    put(place, old)
                    self._stored.add((id(place[0]), None))
                    self._captures = None
            traced.replays = tuple([(place, new) for _, place, _, new in changed] + appends)
            self._value_retraces += bool(changed)
            for _, place, old, _ in changed:
                put(place, old)
            # an optimizer's options the trace changed (a scheduler stepped inside): as they
            # were while this call runs (its program reads them then), then set as each call
            # of it sets them
            for _, place, old, new in group_changes(groups):
                put(place, old)
                traced.replays += ((place, new),)
            # (the values stay as before the trace until the call has run: its program may
            # read them, a learning rate the scheduler it steps sets for the next call)
            key, modules = self._key(leaves, statics, structure)
            traced.key, traced.statics = key, statics
            inputs = {id(t) for t in tensors} | {id(get()) for get, _ in aliased}
            traced.captured = self._guard(statics, inputs)
            variants = self._by_grads.get(key, []) if by_grads else []  # others: stale
            self._by_grads[key] = variants
            _file_by_grads(traced, had, variants)
            if not once:
                self.cache[key] = traced
                self.cache.move_to_end(key)
            self.trace_count += 1
            log(1, f"kn.compile: traced {traced.name} ({reason}): "
                   f"{len(traced.graph.nodes)} nodes, "
                   f"{(time.perf_counter() - start) * 1e3:.1f} ms")  # fmt: skip
            for old, dropped in evict(self.cache, self.cache_size):
                self._by_grads.pop(old, None)
                log(1, f"kn.compile: {dropped.name}: cache full ({len(self.cache)} traces): "
                       f"dropped the least recently used, for {_signature_text(old)}")  # fmt: skip
        self.last = traced
        return traced

    def _trace(self, key, modules, leaves, paths, structure, statics) -> tuple | None:
        """One trace of fn for `trace_for`, with what `trace_for` checks after it; None
        (what it changed put back) where it wrote into a captured tensor that the next trace
        takes as an input (`_lift_written`)."""
        before = tensor_versions(self._captures)
        roots = _roots(statics)  # the objects passed as arguments: what they reach too
        seen = Captures(self.fn, roots, self._stored)  # (afresh: what the calls stored since)
        # NOTE: gradients are planned under no_grad too: an enable_grad block inside gives
        # outputs that require grad, as in eager code (the others end in stop_gradient)
        lifted, aliased = self._lifted(seen), []
        for label, get in list(lifted):  # an argument too: its placeholder, one input
            k = next((k for k, x in enumerate(leaves) if x is get()), None)
            if k is not None:
                lifted.remove((label, get))
                aliased.append((get, k))
        firsts = {}  # one tensor reached by two names (`w`, and `params[0]` written): one input
        for label, get in list(lifted):
            first = firsts.setdefault(id(get()), get)
            if first is not get:
                lifted.remove((label, get))
                aliased.append((get, first))
        order = {id(get): k for k, (_, get) in enumerate(lifted)}
        aliased = [(get, len(leaves) + order[id(k)] if callable(k) else k) for get, k in aliased]
        tensors = [get() for _, get in lifted]
        plans = any(isinstance(x, Tensor) for x in leaves) or bool(lifted)
        traced_key = (key[0], key[1] + tuple(map(signature, tensors)), *key[2:])
        host_before = host_random_states(seen)
        values_before = seen.values()
        restore = tensor_versions(seen, stored=True)
        shapes = seen.container_keys()
        groups = seen.group_options()
        watch = Watch(seen, modules)
        READ_IN_TRACE.append(set())
        try:
            traced = Traced(self.fn, traced_key, leaves + tensors,
                            paths + [label for label, _ in lifted], structure, key[2], plans,
                            self.memory_budget, lifted=lifted, aliased=aliased,
                            watch=watch)  # fmt: skip
            check_untouched(traced.name, before)
            traced.same_outputs += captured_outputs(traced.returned_tensors, seen)
            traced.returned_tensors = None
        except BaseException as e:  # a failed call changes nothing it captured
            undo(seen, values_before, restore, shapes)
            for _, place, old, _ in group_changes(groups):
                put(place, old)
            if isinstance(e, GraphError) and self._lift_written(e, seen):
                restore_seed_stream(host_before)  # (as the next trace finds it)
                return None  # (trace again, taking that tensor as an input)
            raise
        finally:
            read = READ_IN_TRACE.pop()
        return (traced, read, seen, roots, host_before, values_before, restore, shapes, groups,
                tensors, aliased)  # fmt: skip

    def _lift_written(self, error: GraphError, seen: Captures) -> bool:
        """Whether a failed trace wrote (in place) into a captured tensor that the next
        trace can take as an input and write back after each call, as eager code changes
        it (a hand-written optimizer's `self.state[p]["buf"].mul_(0.9)`), or read a captured
        leaf that requires grad, or its `.grad`, through a list or dict (`params[0]`): then
        that tensor's label joins `_lift`, and `trace_for` traces again."""
        t = getattr(error, "written", None)
        if t is None:
            return False
        for label, get in seen.tensors:  # (`seen`: what fn and its arguments reach)
            if get() is t and label not in self._lift and self._liftable(t, get):
                self._lift.add(label)
                return True
        return False

    def _guard(self, statics, lifted: set) -> Guard:
        """The guard of a trace just made: what fn captured, and what its static arguments
        that are objects (a method's `self`, a module) hold, compared by value. `lifted`:
        the ids of the captured tensors it takes as inputs (their values may change)."""
        roots = _roots(statics)
        if not roots:
            return Guard(self._captures, lifted=lifted)
        return Guard(Captures(self.fn, roots, self._stored), by_value=True, lifted=lifted)

    def _lifted(self, seen: Captures) -> list:
        """(label, getter) of each captured tensor that a trace takes as an input rather
        than as a constant: the leaves that require grad (`w = kn.randn(3,
        requires_grad=True)` read by fn), so that gradients reach them and their values may
        change between calls, as eager code would see them (read by name or attribute, or
        as an optimizer's parameter; one in a list or dict once the trace reads it:
        `_lift_written`); other tensors are constants (guarded), and one passed as an
        argument too is that argument's placeholder. (A Parameter or Buffer is a Variable of
        the trace instead: kiln/nn/parameter.py.)"""
        found = []
        for label, get in self._captures.tensors:
            t = get()
            # (through a list or dict: a constant, unless an optimizer's parameter, which a
            # compiled step changes, or one the trace found it reads (`_lift_written`))
            if label in self._lift or ("[" in label and ".param_groups[" not in label):
                continue
            if t.grad_fn is None and t._requires_grad and self._liftable(t, get):
                found.append((label, get))
        for label, get in seen.tensors:  # one fn writes into (`_lift_written`)
            if label in self._lift and self._liftable(get(), get):
                found.append((label, get))
        for label, get in self._captures.stored:  # each call stores another: read as input
            t = get()
            if isinstance(t, Tensor) and not (t.is_sparse or t.is_quantized) and rebindable(get):
                found.append((label, get))
        return found

    @staticmethod
    def _liftable(t, get) -> bool:
        """Whether a trace can take the captured tensor `t` (read by `get`) as an input."""
        return (type(t) is Tensor and not (t.is_sparse or t.is_quantized)
                and rebindable(get))  # fmt: skip

    def _reason(self, key, modules, statics, paths) -> str:
        """What differs from the signature that ran last."""
        last = self.last
        if last is None:
            return "first call"
        old, before = last.key, dict(last.statics)
        found = [f"static argument '{p}' is {v!r} (was {before[p]!r})"
                 for p, v in statics if p in before and before[p] != v]  # fmt: skip
        if len(key[1]) != len(old[1]) or (old[0] != key[0] and not found):
            found.append("new argument structure")
        elif old[1] != key[1]:
            found += [f"'{p}' is {describe(new)} (was {describe(was)})"
                      for p, new, was in zip(paths, key[1], old[1]) if new != was]  # fmt: skip
        if old[2] != key[2]:
            found.append(f"device {key[2]} (was {old[2]})")
        if old[3] != key[3]:
            found.append("gradients needed" if key[3] else "no gradients (no_grad or NumPy in)")
        if old[6] != key[6]:
            found.append(f"autocast to {key[6]} (was {old[6]})")
        if old[7] != key[7]:
            found.append(f"default dtype {key[7]} (was {old[7]})")
        flipped = [(m, new) for m, new, was in zip(modules, key[4], old[4]) if new != was]
        if flipped:
            more = f" (and {len(flipped) - 1} more modules)" if len(flipped) > 1 else ""
            found.append(f"{type(flipped[0][0]).__name__}.training is {flipped[0][1]}{more}")
        labels = self._captures.labels
        if old[5] != key[5] or value_types(old[5]) != value_types(key[5]):
            if last.captured.captures.labels == labels:
                found.append(value_changes(labels, key[5], old[5]))
            else:
                found.append("what the function captures changed")
        return "; ".join(found) or "a parameter's requires_grad changed"


def captured_outputs(returned, seen) -> list:
    """(k, tensor, view) of each tensor a trace returned (`returned`: (k, tensor)) that is a
    tensor the function captured (`seen`: a `Captures`), or a view of one (`view`: its
    size, stride and storage offset; else None): each call returns that tensor, or a view
    of it (as eager code returns those, not copies); the others the function made.

    >>> import types, kiln as kn
    >>> g = kn.arange(4.0)
    >>> seen = types.SimpleNamespace(tensors=[("g", lambda: g)])
    >>> [(k, t is g, view) for k, t, view in captured_outputs([(1, g), (2, g[1:])], seen)]
    [(1, True, None), (2, True, (kiln.Size([3]), (1,), 1))]
    """
    tensors, roots = {}, {}
    for _, get in seen.tensors:
        t = get()
        tensors[id(t)] = t
        roots.setdefault(id(t if t._base is None else t._base), t)
    found = []
    for k, t in returned:
        if id(t) in tensors:
            found.append((k, t, None))
        elif t._base is not None and id(t._base) in roots:
            found.append((k, roots[id(t._base)], (t.size(), t.stride(), t.storage_offset())))
    return found


def _inputs(traced, leaves) -> list:
    """The tensors a call of `traced` takes: its arguments', then the captured ones'."""
    return leaves + [get() for _, get in traced.lifted] if traced.lifted else leaves


def _file_by_grads(traced, had: dict, variants: list) -> None:
    """Files `traced` among the traces of its key (`variants`) by which parameters have a
    `.grad` (`grad_keys`): as it saw them (`grad_guard`) and as they were when the call came
    (`had`), where the traced code changed them (`p.grad = None` in it) and the trace reads
    no `.grad` that was None."""
    inputs = traced.grad_inputs
    came = tuple(had.get(id(o), seen) for (o, _), seen in zip(inputs, traced.grad_guard))
    traced.grad_keys = {traced.grad_guard}
    if all(was or start is None for was, (_, start) in zip(came, inputs)):
        traced.grad_keys.add(came)
    if inputs:
        variants.append(traced)


def _roots(statics) -> list:
    """The static arguments that are objects (a method's `self`, a module): (path, value)."""
    return [(p, v) for p, v in statics if not _hashable(v) or hasattr(v, "__dict__")]


def _canonical(device: str) -> str:
    kind, index = parse_device(device)
    return kind if kind == "cpu" else f"{kind}:{index}"


def _signature_text(key) -> str:
    """The arguments of a cache key, as log lines describe them."""
    return ", ".join(map(describe, key[1])) or "no array arguments"


_ARRAYS = (Tensor, np.ndarray)
# traces that change a Python value the function reads, after which a call needing another
# trace runs eagerly: torch.compile's default recompile_limit
RETRACE_LIMIT = 8


def _hashable(value) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


_MODES = ("default", "lite", "reduce-overhead", "max-autotune-no-cudagraphs", "max-autotune")
_BACKENDS = ("inductor", "cudagraphs", "eager", "aot_eager")


def compile(  # noqa: A001
    fn=None, *, device=None, cache_size=None, memory_budget=None, fullgraph=False,
    dynamic=None, backend=None, mode=None, options=None, name=None, disable=False,
    recompile_limit=None, isolate_recompiles=False, shapes_spec=None,
):  # fmt: skip
    """Compiles `fn` per input signature: on the first call with new shapes, dtypes, device,
    static arguments or module `training` flags, `fn` runs once on Symbols in place of its
    Tensors (Python control flow runs then; branching on a traced value raises), and the
    graph is compiled; later calls run the compiled program. `print` calls in `fn` are
    recorded, not made, while tracing, and every call makes them with its values (as
    PyTorch's compiled functions print on every call). A traced value stored in Python state
    it reaches (`self.last = y`, a forward hook's `acts[name] = out`, `log.append(loss)`) is
    stored by every call with that call's value (kiln/tracing/stores.py). So is a Python
    value it changes where it reads it (an attribute, a global, a closure cell or a dict
    item: `self.count += 1`): a trace is keyed by the value before it, so a call that finds
    another value traces again, as torch.compile recompiles, and after `recompile_limit` (8)
    such traces the calls that need another run `fn` eagerly, with a warning. A list of
    Python values it reads is keyed by its items; one it only appends to (`log.append(1)`)
    is appended to by every call, as torch.compile replays appends. `.item()` and
    `.tolist()` of a traced value give a stand-in that the compiled function returns (and
    `print` shows) as each call's Python value; any other use of a traced value's Python
    value (`float()`, `if`, arithmetic on the stand-in) raises a GraphError that names it.
    Module parameters become graph Variables that share the parameters' memory. A captured
    leaf tensor that requires grad (`w = kn.randn(3, requires_grad=True)` read from fn's
    globals, closure or an object's attributes) is an input of the program: each call reads
    its value then, and gradients reach its `.grad`, as in eager code (while fn is traced,
    the name holds its placeholder). Tensors in give Tensors out (a call on tensors that
    require grad is one tape entry); NumPy in gives NumPy out.

    What `fn` captures is checked on every call, as a guard: a Python value it reads from its
    closure, its globals or an attribute of an object or module it uses (numbers, strings,
    tuples of them) is part of the signature, and a captured tensor that is a constant of
    the program (it requires no grad) changed in place (its version), replaced, reshaped or
    made to require grad retraces (logged at KILN_DEBUG>=1); one taken as an input retraces
    when replaced, reshaped or no longer requiring grad. A captured tensor that fn itself
    changes in place (a counter, `outside[0] = x`, a hand-written optimizer's
    `self.state[p]["buf"].mul_(0.9)`, reached by a name, a dict or list item or an
    attribute) is an input too, written back after each call as eager code changes it; a
    call whose trace makes such a buffer in a new entry of Python state runs eagerly, and a
    tensor changed in place with a value that requires grad is refused (eager code would
    give it that value's history).
    The walk that finds them follows the names in fn's code (and in the functions and
    methods it reaches); a tensor or value reached only through a container (a list, a
    dict) is not guarded, nor a change made through `.numpy()` or `.data`, which no version
    counter sees. A captured NumPy array is guarded by identity only (NumPy counts no
    versions): pass an array that changes in place as an argument. `cache_size` bounds the
    traces kept (least recently used go first; None: `kiln.runtime.cache.CACHE_SIZE`, 64).
    With `memory_budget` (bytes), a trace whose backward would exceed it (the residuals
    the forward call keeps for it and the backward program's arena, planned) splits its
    forward pass into kn.checkpoint regions, recomputed by the backward program (the split
    whose estimated peak, saved values plus one region's, is lowest; kept when its planned
    cost is lower; logged at KILN_DEBUG=1 and kept as `.checkpointing` on the trace). A call
    that records a tape entry writes its residuals straight into its backward's arena, which
    reuses their bytes once read (a backward with retain_graph=True leaves them intact).

    >>> import kiln as kn, numpy as np
    >>> @kn.compile
    ... def f(x, power):
    ...     return kn.sum(x**power)
    >>> x = kn.tensor([1.0, 2.0], requires_grad=True)
    >>> y = f(x, 2)
    >>> y.backward()
    >>> y, x.grad
    (tensor(5., grad_fn=<CompiledBackward0>), tensor([2., 4.]))
    >>> f(np.array([1.0, 2.0], np.float32), 3)
    array(9., dtype=float32)

    PyTorch's `torch.compile` arguments are taken, so that ported code runs: `disable=True`
    returns `fn` itself and `backend="eager"` (or "aot_eager") a function that runs `fn`
    eagerly, as PyTorch's do; `mode` is checked against PyTorch's modes (and not given with
    `options`). The others change nothing in kiln: it always compiles the whole function
    (`fullgraph`; where PyTorch would break the graph, kiln raises a GraphError that says
    why), traces once per signature (`dynamic`; `cache_size` bounds the traces kept), and
    has no tuning options (`mode`, `options`, `name`,
    `isolate_recompiles`, `shapes_spec`).

    >>> kn.compile(abs, disable=True) is abs
    True
    """
    if mode is not None and mode not in _MODES:
        raise UsageError(f"Unrecognized mode={mode}, should be one of: {', '.join(_MODES)}")
    if mode is not None and options is not None:
        raise UsageError(
            "Either mode or options can be specified, but both can't be specified at the same time."
        )
    if backend is not None and backend not in _BACKENDS:
        raise ArgumentError(
            f"kn.compile: backend={backend!r}: kiln compiles with its own compiler; the "
            f"backends it takes are {', '.join(map(repr, _BACKENDS))} (eager ones run fn as it is)"
        )
    eager = backend in ("eager", "aot_eager")

    def wrap(f):
        if disable or getattr(f, "_kiln_compile_disabled", False):  # (kn.compiler.disable)
            return f
        if eager:
            compiled = functools.wraps(f)(lambda *args, **kwargs: f(*args, **kwargs))
        else:
            compiled = CompiledFunction(f, device, cache_size, memory_budget, recompile_limit)
        return OptimizedModule(f, compiled) if isinstance(f, Module) else compiled

    return wrap if fn is None else wrap(fn)


class OptimizedModule(Module):
    """What `kn.compile(module)` returns, as `torch.compile(module)` does: a Module that holds
    the original as `_orig_mod` (so its parameters, `train()`/`eval()` and `state_dict()`,
    whose keys start with `_orig_mod.`, are the original's) and runs it compiled when called;
    other attributes are the original's.

    >>> import kiln as kn
    >>> model = kn.compile(kn.nn.Linear(3, 2))
    >>> type(model).__name__, len(list(model.parameters())), model.out_features
    ('OptimizedModule', 2, 2)
    >>> list(model.state_dict())
    ['_orig_mod.weight', '_orig_mod.bias']
    >>> model(kn.ones(4, 3)).shape
    kiln.Size([4, 2])
    """

    def __init__(self, mod: Module, compiled):
        super().__init__()
        self._orig_mod = mod
        object.__setattr__(self, "_compiled_forward", compiled)

    def forward(self, *args, **kwargs):
        return self.__dict__["_compiled_forward"](*args, **kwargs)

    @property
    def trace_count(self) -> int:
        """How many times the module was traced (`CompiledFunction.trace_count`)."""
        return self.__dict__["_compiled_forward"].trace_count

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            orig = self.__dict__.get("_modules", {}).get("_orig_mod")
            if orig is None:  # (a copy being made: not filled yet)
                raise
            return getattr(orig, name)


def trace(fn, *example_args, device=None, **example_kwargs) -> Traced:
    """`fn` traced and compiled for the signature of the example arguments (see `compile`).
    `kn.trace(matrix)` alone is PyTorch's `torch.trace`: the sum of its diagonal.

    >>> import kiln as kn, numpy as np
    >>> tf = kn.trace(lambda x: x * 2.0, np.ones(2, np.float32))
    >>> tf.inputs[0].name, len(tf.graph.nodes)
    ('x', 3)
    >>> kn.trace(kn.tensor([[1, 2], [3, 4]]))
    tensor(5)
    """
    if not callable(fn) and not example_args and not example_kwargs and device is None:
        return fn.trace()  # torch.trace(input): the Tensor's (or Symbol's) method
    compiled = CompiledFunction(fn, device)
    leaves, paths, statics, structure = compiled.flatten_args(example_args, example_kwargs)
    return compiled.trace_for(leaves, paths, statics, structure)
