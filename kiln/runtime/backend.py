"""Backends: the array module and device services a compiled program runs on."""

from __future__ import annotations

import collections
import contextlib
import re
import threading
import warnings

import numpy as np

from ..errors import DeviceError, DeviceNotBuiltError

# Kernels run with floating-point errors ignored, as PyTorch's and XLA's do: `np.seterr`
# never changes a result, warns, or makes a step fail half-way. NumPy keeps its error state
# in a context variable; setting it directly costs a fraction of `np.errstate`'s entry.
try:
    from numpy._core.umath import _extobj_contextvar, _make_extobj

    _IGNORE = _make_extobj(all="ignore")

    def ignore_fp_errors():
        """Ignores NumPy's floating-point errors in this context; returns a token."""
        return _extobj_contextvar.set(_IGNORE)

    def restore_fp_errors(token) -> None:
        _extobj_contextvar.reset(token)

except ImportError:  # another NumPy layout: the public, slower context manager

    def ignore_fp_errors():
        """Ignores NumPy's floating-point errors in this context; returns a token."""
        state = np.errstate(all="ignore")
        state.__enter__()
        return state

    def restore_fp_errors(token) -> None:
        token.__exit__(None, None, None)


# Eager kernels that are one ufunc run in the caller's NumPy error state (setting it on every
# op would cost a fifth of the op), so NumPy's floating-point warnings raised inside kiln's
# modules are silenced by this filter, which matches only their messages; where the user's
# filters turn them into errors (`-W error`), the eager dispatch runs the kernel again with
# errors ignored. A `warnings.catch_warnings()` block restores, when it ends, the filters it
# saved when it began: kiln imported inside one (as pytest's collection imports it) would
# lose the filter there, so `warnings`' hook run after every change of the filters
# (`_filters_mutated`: the block's entry and exit, `filterwarnings`, `resetwarnings`) is
# wrapped to put the filter back wherever it is missing. That costs the ops nothing.
warnings.filterwarnings(
    "ignore",
    message=r"(divide by zero|invalid value|overflow|underflow) encountered",
    category=RuntimeWarning,
    module=r"kiln\.",
)
_FILTER = warnings.filters[0]


def _keeping_the_filter(mutated):
    def filters_mutated(*args, **kwargs):
        done = mutated(*args, **kwargs)
        if _FILTER not in warnings.filters:
            warnings.filters.insert(0, _FILTER)
            mutated(*args, **kwargs)
        return done

    filters_mutated.kiln_filter = _FILTER
    return filters_mutated


for _name in ("_filters_mutated", "_filters_mutated_lock_held"):  # (Python 3.13 has both)
    _hook = getattr(warnings, _name, None)
    if _hook is not None and not hasattr(_hook, "kiln_filter"):  # once, on a reload too
        setattr(warnings, _name, _keeping_the_filter(_hook))


class Backend:
    """What the runtime needs from a device: `xp`, transfers, sync, memory statistics."""

    pass_options: dict = {}  # pass name -> keyword arguments for this device (what pays here)

    name: str = "?"
    xp = None

    def to_device(self, array):
        raise NotImplementedError

    def to_host(self, array) -> np.ndarray:
        raise NotImplementedError

    def empty(self, shape, dtype):
        return self.xp.empty(shape, dtype)

    def synchronize(self) -> None:
        pass

    def memory_stats(self) -> dict:
        return {}

    def is_device_array(self, value) -> bool:
        return isinstance(value, self.xp.ndarray)

    def scope(self):
        """A context in which this device is current (CUDA: CuPy's current device)."""
        return _NO_SCOPE

    def activate(self):
        """Makes this device current for the calling thread (eager ops); returns `xp`."""
        return self.xp


class NumpyBackend(Backend):
    """The CPU: NumPy arrays in host memory."""

    name = "cpu"
    xp = np
    # NOTE: measured on the CPU (bench/bench_fusion.py, bench/bench_training.py): fusing an
    # 8-op chain on 4096x4096 arrays takes 30 ms to 20 ms, but on activations of an MLP step
    # (tens to hundreds of KiB) the fused kernel's bookkeeping costs 5-25% of the step. So
    # the CPU fuses groups of at least 4 ops whose result is known (static shape) to be at
    # least 1 MiB; a two-op weight update in place measured slower fused than as two ufuncs.
    # Groups of any size whose result is at most 16 KiB are fused too: they run as one
    # compiled loop (numba) or one kernel calling bare ufuncs, where unfused each op is a
    # kernel call (a 100-op chain on f32[16]: 53 us unfused, a few us as one loop). With
    # numba, groups up to 1 MiB (kiln/runtime/program.py's `_options`): vectorized loops
    # beat NumPy's calls there, weight updates in place included.
    pass_options = {
        "fuse_elementwise": {"min_bytes": 1 << 20, "min_ops": 4, "small_bytes": 16 << 10}
    }

    def to_device(self, array):
        if type(array) is not np.ndarray and hasattr(array, "__cuda_array_interface__"):
            raise DeviceError(
                f"a CUDA array ({type(array).__name__}) was given to a program on the cpu: "
                "copy it to the host first (CuPy: .get()); kiln moves nothing silently"
            )
        return np.asarray(array)

    def to_host(self, array) -> np.ndarray:
        return np.asarray(array)


class Transfers:
    """Copies between host and device: how many, and how many bytes, per kind (thread-safe)."""

    def __init__(self):
        self.count: collections.Counter = collections.Counter()
        self.bytes: collections.Counter = collections.Counter()
        self._lock = threading.Lock()

    def add(self, kind: str, nbytes: int) -> None:
        with self._lock:
            self.count[kind] += 1
            self.bytes[kind] += int(nbytes)

    def snapshot(self) -> dict:
        """{kind: (copies, bytes)}.

        >>> t = Transfers(); t.add("host to device", 8); t.snapshot()
        {'host to device': (1, 8)}
        """
        with self._lock:
            return {kind: (self.count[kind], self.bytes[kind]) for kind in self.count}


_NO_SCOPE = contextlib.nullcontext()
_CPU = NumpyBackend()
_DEVICE = re.compile(r"^(cpu|cuda)(?::(\d+))?$")
_NOT_BUILT = ("xpu", "mtia")  # PyTorch's device types whose absence is an AssertionError


def parse_device(device) -> tuple[str, int]:
    """`"cpu"`, `"cuda"`, `"cuda:1"` as (kind, index).

    >>> parse_device("cuda:1"), parse_device(None)
    (('cuda', 1), ('cpu', 0))
    """
    if device is None:
        return "cpu", 0
    match = _DEVICE.match(str(device))
    if not match and str(device).split(":")[0] in _NOT_BUILT:
        raise DeviceNotBuiltError(f"device {device!r}: kiln has no {str(device).split(':')[0]} "
                                  "backend; use 'cpu', 'cuda' or 'cuda:N'")  # fmt: skip
    if not match or (match.group(1) == "cpu" and match.group(2) not in (None, "0")):
        raise DeviceError(f"unknown device {device!r}: use 'cpu', 'cuda' or 'cuda:N'")
    return match.group(1), int(match.group(2) or 0)


def get_backend(device=None) -> Backend:
    """The backend for a device string; CUDA raises DeviceError with the exact reason."""
    kind, index = parse_device(device)
    if kind == "cpu":
        return _CPU
    from .cuda import cuda_backend

    return cuda_backend(index)
