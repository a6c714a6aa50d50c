"""CUDA through CuPy: whether it is usable and exactly why not, and the backend of one GPU.

`cuda_status()` probes once: CuPy imports, the driver answers, it reports a device.
`cuda_backend(index)` is the `Backend` of GPU `index`: CuPy as `xp`, arrays from CuPy's memory
pool, host arrays copied in through pinned staging memory, every copy counted. There is no
fallback: a device that cannot be used raises DeviceError with the reason.
"""

from __future__ import annotations

import collections
import functools
import threading

import numpy as np

from ..errors import DeviceError
from .backend import Backend, Transfers

# cudaError codes that CuPy's CUDARuntimeError carries in `status`.
_NO_DEVICE = 100  # cudaErrorNoDevice
_NO_DRIVER = (34, 35)  # cudaErrorStubLibrary, cudaErrorInsufficientDriver


@functools.cache
def cuda_status() -> tuple[bool, str, int]:
    """(usable, reason, device count): the reason says exactly what is missing.

    >>> usable, reason, count = cuda_status()
    >>> usable == (count > 0)
    True
    """
    try:
        import cupy
    except ImportError as e:
        return False, f"CuPy is not installed ({e}); install kiln[cuda] (cupy-cuda12x)", 0
    except Exception as e:  # a broken CuPy install fails in many ways
        return False, f"CuPy failed to import: {type(e).__name__}: {e}", 0
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except cupy.cuda.runtime.CUDARuntimeError as e:
        return False, runtime_error_reason(e), 0
    except Exception as e:
        return False, f"CUDA is not usable: {type(e).__name__}: {e}", 0
    if count == 0:
        return False, "no CUDA device: the driver reports none", 0
    return True, f"{count} device(s)", count


def runtime_error_reason(e) -> str:
    """Why CUDA is not usable, from the error of CuPy's first runtime call."""
    status = getattr(e, "status", None)
    if status == _NO_DEVICE:
        return f"no CUDA device: the driver finds none ({e})"
    if status in _NO_DRIVER:
        return f"no usable CUDA driver: it is missing or older than CuPy's CUDA runtime ({e})"
    return f"no usable CUDA driver or device: {e}"


def cuda_backend(index: int) -> CupyBackend:
    """The backend of `cuda:index`; DeviceError says why when it cannot be used."""
    ok, reason, count = cuda_status()
    if not ok:
        raise DeviceError(
            f"cannot use device 'cuda:{index}': {reason}; kiln does not fall back to the cpu"
        )
    if not 0 <= index < count:
        usable = ", ".join(f"cuda:{i}" for i in range(count))
        raise DeviceError(
            f"device 'cuda:{index}' is out of range: {count} CUDA device(s) ({usable})"
        )
    return _backend(index)


@functools.cache
def _backend(index: int) -> CupyBackend:
    return CupyBackend(index)


class CupyBackend(Backend):
    """One GPU through CuPy. Work runs on CuPy's current stream of this device; `scope()`
    makes the device current (Program.run enters it around a whole run)."""

    def __init__(self, index: int):
        import cupy

        self.xp = cupy
        self.index = index
        self.name = f"cuda:{index}"
        self.transfers = Transfers()
        # Pinned staging buffers with a copy in flight, and the event that ends the copy:
        # a buffer goes back to CuPy's pinned pool only once its copy is done.
        self._in_flight: collections.deque = collections.deque()
        self._lock = threading.Lock()

    def scope(self):
        return self.xp.cuda.Device(self.index)

    def activate(self):
        """Makes this GPU current for the calling thread (eager ops launch on the current
        device) and returns `xp`."""
        runtime = self.xp.cuda.runtime
        if runtime.getDevice() != self.index:
            runtime.setDevice(self.index)
        return self.xp

    def to_device(self, array):
        """A device array: this GPU's arrays as they are (made contiguous), another GPU's
        through the host, host arrays copied in through pinned memory."""
        cupy = self.xp
        if isinstance(array, cupy.ndarray):
            if array.device.id == self.index:
                if array.flags.c_contiguous:
                    return array
                with self.scope():
                    return cupy.ascontiguousarray(array)
            array = self.to_host(array)  # another GPU: no peer access needed
        host = np.asarray(array)
        if not host.flags.c_contiguous:  # NOTE: not np.ascontiguousarray: it makes 0-d 1-d
            host = np.ascontiguousarray(host)
        with self.scope():
            out = cupy.empty(host.shape, host.dtype)
            if host.nbytes:
                self._copy_in(out, host)
        self.transfers.add("host to device", host.nbytes)
        return out

    def _copy_in(self, out, host) -> None:
        """`host` into `out` asynchronously, staged through a pinned buffer from CuPy's pinned
        memory pool (a pageable source would make the copy synchronous)."""
        cupy = self.xp
        with self._lock:
            while self._in_flight and self._in_flight[0][0].done:
                self._in_flight.popleft()
        memory = cupy.cuda.alloc_pinned_memory(host.nbytes)
        staged = np.frombuffer(memory, host.dtype, host.size).reshape(host.shape)
        staged[...] = host
        stream = cupy.cuda.get_current_stream()
        out.set(staged, stream=stream)
        with self._lock:
            self._in_flight.append((stream.record(), memory))

    def to_host(self, array) -> np.ndarray:
        if isinstance(array, (np.ndarray, np.generic)):
            return np.asarray(array)
        host = array.get()  # waits for the stream: the value is final
        self.transfers.add("device to host", host.nbytes)
        return host

    def empty(self, shape, dtype):
        """An uninitialized array of this GPU, from CuPy's allocator (its memory pool)."""
        with self.scope():
            return self.xp.empty(shape, dtype)

    def synchronize(self) -> None:
        self.xp.cuda.Device(self.index).synchronize()

    def memory_stats(self) -> dict:
        """The pool's bytes in use and held, the device's free and total bytes, and the
        transfers so far ({kind: (copies, bytes)})."""
        cupy = self.xp
        with self.scope():
            pool = cupy.get_default_memory_pool()
            used, held = pool.used_bytes(), pool.total_bytes()
            free, total = cupy.cuda.Device(self.index).mem_info
        return {
            "device": self.name, "pool_used_bytes": used, "pool_held_bytes": held,
            "device_free_bytes": free, "device_total_bytes": total,
            "pinned_free_blocks": cupy.get_default_pinned_memory_pool().n_free_blocks(),
            "transfers": self.transfers.snapshot(),
        }  # fmt: skip

    def is_device_array(self, value) -> bool:
        return isinstance(value, self.xp.ndarray)
