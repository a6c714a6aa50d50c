"""`kn.profiler`: torch.profiler's interface over kiln's eager calls. While a `profile` records,
the public functions (`kn.*`, `kn.nn.functional.*`, `kn.linalg.*`) and Tensor methods and
operators are swapped for timing wrappers (and swapped back after, so nothing is paid when no
profile runs), with `record_function` ranges, `kn.compile`d calls, `backward()` passes and
optimizer steps: `key_averages().table()` gives each name's count, self and total time, as
PyTorch's table does; `export_chrome_trace` writes the timeline for chrome://tracing or
Perfetto. Names are kiln's (`kiln::matmul`, where PyTorch writes `aten::matmul`)."""

from __future__ import annotations

import enum
import functools
import json
import os
import threading
import time
import types

__all__ = ["ProfilerAction", "ProfilerActivity", "profile", "record_function", "schedule",
           "tensorboard_trace_handler"]  # fmt: skip

ProfilerActivity = enum.Enum("ProfilerActivity", ["CPU", "CUDA", "XPU", "MTIA", "PrivateUse1"])
ProfilerAction = enum.Enum("ProfilerAction", ["NONE", "WARMUP", "RECORD", "RECORD_AND_SAVE"])

_ACTIVE: list = []  # the profile recording now (at most one, as PyTorch's)

# Tensor dunders that are ops (the other public methods are all taken)
_DUNDERS = {
    "__add__", "__radd__", "__iadd__", "__sub__", "__rsub__", "__isub__", "__mul__",
    "__rmul__", "__imul__", "__truediv__", "__rtruediv__", "__itruediv__", "__floordiv__",
    "__rfloordiv__", "__mod__", "__rmod__", "__pow__", "__rpow__", "__matmul__", "__rmatmul__",
    "__neg__", "__abs__", "__invert__", "__and__", "__or__", "__xor__", "__lshift__",
    "__rshift__", "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__getitem__",
    "__setitem__",
}  # fmt: skip
# Tensor methods that read metadata, not ops
_METADATA = {"size", "dim", "ndimension", "stride", "is_contiguous", "data_ptr", "element_size",
             "storage_offset", "get_device", "type", "register_hook", "nelement"}  # fmt: skip


# frontend modules whose public functions are settings and helpers, not ops
_NOT_OPS = ("settings", "autocast_state", "_data")


def _shape(value):
    shape = getattr(value, "shape", None)
    return list(shape) if shape is not None and not isinstance(value, type) else []


class FunctionEvent:
    """One recorded call: `name`, its start and end (µs from the profile's start), thread,
    the input shapes (with `record_shapes`), and the time of the calls it made."""

    def __init__(self, name, start, thread, input_shapes):
        self.name, self.key, self.start, self.end = name, name, start, start
        self.thread, self.input_shapes, self.children_time = thread, input_shapes, 0.0

    @property
    def cpu_time_total(self) -> float:
        return self.end - self.start

    @property
    def self_cpu_time_total(self) -> float:
        return self.cpu_time_total - self.children_time

    def __repr__(self) -> str:
        return f"<FunctionEvent {self.name} cpu_time_total={self.cpu_time_total:.3f}us>"


class FunctionEventAvg:
    """The calls of one name (and input shapes, if grouped by them): `count`, `cpu_time_total`,
    `self_cpu_time_total` and `cpu_time` (the mean), in µs, as PyTorch's."""

    def __init__(self, key, input_shapes):
        self.key, self.input_shapes = key, input_shapes
        self.count, self.cpu_time_total, self.self_cpu_time_total = 0, 0.0, 0.0

    def add(self, event: FunctionEvent) -> None:
        self.count += 1
        self.cpu_time_total += event.cpu_time_total
        self.self_cpu_time_total += event.self_cpu_time_total

    @property
    def cpu_time(self) -> float:
        return self.cpu_time_total / max(self.count, 1)

    def __repr__(self) -> str:
        return f"<FunctionEventAvg key={self.key} count={self.count}>"


def _format_time(us: float) -> str:
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


_SORT_KEYS = {"cpu_time_total", "self_cpu_time_total", "cpu_time", "count"}


class EventList(list):
    """Events (or averages) with PyTorch's `table` and `total_average`."""

    def table(self, sort_by=None, row_limit: int = 100, max_name_column_width: int = 55,
              header=None, top_level_events_only: bool = False, **ignored) -> str:  # fmt: skip
        """PyTorch's table: Name, Self CPU %, Self CPU, CPU total %, CPU total, CPU time
        avg, # of Calls (and Input Shapes when grouped by them), sorted by `sort_by`."""
        rows = list(self)
        if sort_by is not None:
            if sort_by not in _SORT_KEYS:
                raise ValueError(f"sort_by must be one of {sorted(_SORT_KEYS)}, got {sort_by!r}")
            rows.sort(key=lambda r: getattr(r, sort_by), reverse=True)
        total = sum(r.self_cpu_time_total for r in self) or 1.0
        shapes = (
            any(getattr(r, "input_shapes", None) for r in rows)
            and isinstance(rows[0] if rows else None, FunctionEventAvg)
            and getattr(self, "_by_shape", False)
        )
        width = min(max([len(r.key) for r in rows] + [4]), max_name_column_width)
        heads = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg",
                 "# of Calls"] + (["Input Shapes"] if shapes else [])  # fmt: skip
        widths = [width] + [12] * 6 + ([24] if shapes else [])
        line = "  ".join("-" * w for w in widths) + "  "
        out = [line, "  ".join(h.rjust(w) for h, w in zip(heads, widths)) + "  ", line]
        for r in rows[:row_limit] if row_limit and row_limit > 0 else rows:
            count = getattr(r, "count", 1)
            cells = [r.key[:width], f"{100 * r.self_cpu_time_total / total:.2f}%",
                     _format_time(r.self_cpu_time_total),
                     f"{100 * r.cpu_time_total / total:.2f}%", _format_time(r.cpu_time_total),
                     _format_time(r.cpu_time_total / max(count, 1)), str(count)]  # fmt: skip
            if shapes:
                cells.append(str(list(r.input_shapes)))
            out.append("  ".join(c.rjust(w) for c, w in zip(cells, widths)) + "  ")
        out += [
            line,
            f"Self CPU time total: {_format_time(sum(r.self_cpu_time_total for r in self))}",
        ]
        return ("" if header is None else f"{header}\n") + "\n".join(out) + "\n"

    def total_average(self) -> FunctionEventAvg:
        avg = FunctionEventAvg("Total", [])
        for r in self:
            avg.count += getattr(r, "count", 1)
            avg.cpu_time_total += r.cpu_time_total
            avg.self_cpu_time_total += r.self_cpu_time_total
        return avg


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0,
             skip_first_wait: int = 0):  # fmt: skip
    """PyTorch's schedule: skip `skip_first` steps, then cycles of `wait` idle steps, `warmup`
    steps and `active` recorded ones (the last of which saves: `on_trace_ready`), `repeat`
    times (0: forever).

    >>> import kiln as kn
    >>> s = kn.profiler.schedule(wait=1, warmup=1, active=2, repeat=1)
    >>> [s(i).name for i in range(5)]
    ['NONE', 'WARMUP', 'RECORD', 'RECORD_AND_SAVE', 'NONE']
    """
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise ValueError("Invalid profiler schedule arguments")

    def action(step: int) -> ProfilerAction:
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait:
            step += wait
        cycle = wait + warmup + active
        if repeat > 0 and step // cycle >= repeat:
            return ProfilerAction.NONE
        at = step % cycle
        if at < wait:
            return ProfilerAction.NONE
        if at < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if at < cycle - 1 else ProfilerAction.RECORD_AND_SAVE

    return action


def tensorboard_trace_handler(dir_name, worker_name=None, use_gzip: bool = False):
    """An `on_trace_ready` that writes each saved cycle's chrome trace into `dir_name` as
    `{worker}.{milliseconds}.pt.trace.json` (PyTorch's file names)."""

    def handler(prof) -> None:
        os.makedirs(dir_name, exist_ok=True)
        worker = worker_name or f"{os.uname().nodename}_{os.getpid()}"
        name = f"{worker}.{time.time_ns() // 1_000_000}.pt.trace.json" + (".gz" if use_gzip
                                                                           else "")  # fmt: skip
        prof.export_chrome_trace(os.path.join(dir_name, name))

    return handler


class profile:  # noqa: N801 -- PyTorch's name
    """Records kiln's eager calls, Module calls, `record_function` ranges, compiled calls,
    backward passes and optimizer steps made while it runs (`with kn.profiler.profile() as prof:` or
    `start()`/`stop()`), as `torch.profiler.profile`.

    >>> import kiln as kn
    >>> x = kn.ones(8, 8)
    >>> with kn.profiler.profile(record_shapes=True) as prof:
    ...     with kn.profiler.record_function("block"):
    ...         y = (x @ x).relu().sum()
    >>> sorted({e.key for e in prof.key_averages()})
    ['block', 'kiln::__matmul__', 'kiln::relu', 'kiln::sum']
    >>> print(prof.key_averages().table(sort_by="cpu_time_total").splitlines()[1].strip())
    Name    Self CPU %      Self CPU   CPU total %     CPU total  CPU time avg    # of Calls
    """

    def __init__(self, activities=None, *, schedule=None, on_trace_ready=None,
                 record_shapes: bool = False, profile_memory: bool = False,
                 with_stack: bool = False, with_flops: bool = False, with_modules: bool = False,
                 experimental_config=None, execution_trace_observer=None,
                 acc_events: bool = False, **ignored):  # fmt: skip
        self.activities = set(activities or [ProfilerActivity.CPU])
        self.schedule, self.on_trace_ready = schedule, on_trace_ready
        self.record_shapes = record_shapes
        self.step_num = 0
        self._events: list = []
        self._stacks = threading.local()
        self._recording = False
        self._t0 = time.perf_counter_ns()
        self._swapped: list = []

    # -- recording --------------------------------------------------------------------------

    def _begin(self, name: str, args) -> FunctionEvent:
        stack = getattr(self._stacks, "open", None)
        if stack is None:
            stack = self._stacks.open = []
        shapes = [_shape(a) for a in args] if self.record_shapes and args is not None else []
        now = (time.perf_counter_ns() - self._t0) / 1e3
        event = FunctionEvent(name, now, threading.get_ident(), shapes)
        stack.append(event)
        return event

    def _end(self, event: FunctionEvent) -> None:
        event.end = (time.perf_counter_ns() - self._t0) / 1e3
        stack = self._stacks.open
        stack.pop()
        if stack:
            stack[-1].children_time += event.cpu_time_total
        if self._recording:
            self._events.append(event)

    def _action(self) -> ProfilerAction:
        return ProfilerAction.RECORD if self.schedule is None else self.schedule(self.step_num)

    def start(self) -> None:
        if _ACTIVE:
            raise RuntimeError("Can't profile: a kn.profiler.profile is already recording")
        _ACTIVE.append(self)
        self._swap_in()
        self._recording = self._action() in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)

    def stop(self) -> None:
        if self not in _ACTIVE:
            return
        self._swap_out()
        _ACTIVE.remove(self)
        if self.schedule is not None and self._events and self.on_trace_ready is not None:
            self.on_trace_ready(self)
        elif self.schedule is None and self.on_trace_ready is not None:
            self.on_trace_ready(self)
        self._recording = False

    def step(self) -> None:
        """Ends a step of the schedule: a cycle's last active step hands its events to
        `on_trace_ready`, and the next cycle starts afresh."""
        before = self._action()
        self.step_num += 1
        if before is ProfilerAction.RECORD_AND_SAVE:
            if self.on_trace_ready is not None:
                self.on_trace_ready(self)
            self._events = []
        self._recording = self._action() in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    # -- results ----------------------------------------------------------------------------

    def events(self) -> EventList:
        return EventList(sorted(self._events, key=lambda e: e.start))

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     **ignored) -> EventList:  # fmt: skip
        groups: dict = {}
        for event in self.events():
            shapes = tuple(map(tuple, event.input_shapes)) if group_by_input_shape else ()
            avg = groups.get((event.name, shapes))
            if avg is None:
                avg = groups[event.name, shapes] = FunctionEventAvg(event.name, event.input_shapes
                                                                   if group_by_input_shape
                                                                   else [])  # fmt: skip
            avg.add(event)
        out = EventList(groups.values())
        out._by_shape = group_by_input_shape
        return out

    def export_chrome_trace(self, path) -> None:
        """The events as a Chrome trace (JSON, `traceEvents` of complete events in µs),
        written atomically."""
        from .checkpoint import write_atomic

        trace = {"traceEvents": [
            {"name": e.name, "ph": "X", "cat": "cpu_op", "ts": e.start,
             "dur": e.cpu_time_total, "pid": os.getpid(), "tid": e.thread,
             "args": {"Input Dims": e.input_shapes} if e.input_shapes else {}}
            for e in self.events()
        ], "displayTimeUnit": "ms"}  # fmt: skip
        data = json.dumps(trace)
        if str(path).endswith(".gz"):
            import gzip

            write_atomic(path, gzip.compress(data.encode()))
        else:
            write_atomic(path, data)

    # -- the swap -----------------------------------------------------------------------------

    def _swap_in(self) -> None:
        import kiln as kn

        from .eager import autograd
        from .tracing.trace import CompiledFunction

        targets = []
        for space in (kn, kn.nn.functional, kn.linalg):
            for name, fn in list(vars(space).items()):
                module = getattr(fn, "__module__", "") or ""
                if (isinstance(fn, types.FunctionType) and not name.startswith("_")
                        and module.startswith(("kiln.frontend", "kiln.eager.factories",
                                               "kiln.nn.functional"))
                        and not module.endswith(_NOT_OPS)):  # fmt: skip
                    targets.append((space, name, fn, f"kiln::{name}"))
        for name, fn in list(vars(kn.Tensor).items()):
            if isinstance(fn, types.FunctionType) and name not in _METADATA and (
                    not name.startswith("_") or name in _DUNDERS):  # fmt: skip
                targets.append((kn.Tensor, name, fn, f"kiln::{name}"))
        targets.append((autograd, "_run", autograd._run, "autograd::engine::backward"))
        targets.append(
            (
                CompiledFunction,
                "__call__",
                CompiledFunction.__call__,
                lambda f: f"kn.compile: {getattr(f, '__name__', 'fn')}",
            )
        )
        targets.append(
            (
                kn.nn.Module,
                "__call__",
                kn.nn.Module.__call__,
                lambda m: f"nn.Module: {type(m).__name__}",
            )
        )
        for owner, name, fn, label in targets:
            setattr(owner, name, _recorded(fn, label))
            self._swapped.append((owner, name, fn))

    def _swap_out(self) -> None:
        for owner, name, fn in reversed(self._swapped):
            setattr(owner, name, fn)
        self._swapped = []


def _recorded(fn, label):
    """`fn` timed into the active profile as `label`: a name, or (a method's) a function of
    its object giving the name, whose shapes are then those of the other arguments."""

    @functools.wraps(fn)
    def recorded(*args, **kwargs):
        prof = _ACTIVE[0] if _ACTIVE else None
        if prof is None:
            return fn(*args, **kwargs)
        named = isinstance(label, str)
        event = prof._begin(label if named else label(args[0]), args if named else args[1:])
        try:
            return fn(*args, **kwargs)
        finally:
            prof._end(event)

    return recorded


class record_function:  # noqa: N801 -- PyTorch's name
    """A named range in the active profile (a context manager or a decorator), as PyTorch's
    `record_function`; nothing when no profile records."""

    def __init__(self, name: str, args: str | None = None):
        self.name, self.args, self._event = name, args, None

    def __enter__(self):
        if _ACTIVE:
            self._event = _ACTIVE[0]._begin(self.name, None)
        return self

    def __exit__(self, *exc):
        if self._event is not None and _ACTIVE:
            _ACTIVE[0]._end(self._event)
        self._event = None
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def ranged(*args, **kwargs):
            with record_function(self.name, self.args):
                return fn(*args, **kwargs)

        return ranged


def step_range(optimizer):
    """The `record_function` of `optimizer`'s step when a profile records, else None."""
    if not _ACTIVE:
        return None
    return record_function(f"Optimizer.step#{type(optimizer).__name__}.step")


def legacy_profile(enabled: bool = True, use_cuda: bool = False, record_shapes: bool = False,
                   **options) -> profile:  # fmt: skip
    """torch.autograd.profiler.profile: the same recorder (`enabled=False`: records nothing)."""
    prof = profile(record_shapes=record_shapes)
    if not enabled:
        prof.start = prof.stop = lambda: None
    return prof
