"""`kn.cuda`: whether CUDA is usable and, if it is, device names and memory statistics.

Without a usable GPU, `is_available()` is False, `device_count()` is 0, and the rest raise
DeviceError saying exactly why (no CuPy, no driver, no device).
"""

from __future__ import annotations

from .errors import DeviceError
from .runtime.cuda import cuda_status


def is_available() -> bool:
    """True when CuPy imports and sees at least one CUDA device.

    >>> import kiln as kn
    >>> isinstance(kn.cuda.is_available(), bool)
    True
    """
    return cuda_status()[0]


def device_count() -> int:
    return cuda_status()[2]


def why_unavailable() -> str | None:
    """The reason CUDA is not usable, or None when it is."""
    ok, reason, _ = cuda_status()
    return None if ok else reason


def _cupy():
    ok, reason, _ = cuda_status()
    if not ok:
        raise DeviceError(f"CUDA is not available: {reason}")
    import cupy

    return cupy


def get_device_name(i: int = 0) -> str:
    cupy = _cupy()
    if not 0 <= i < device_count():
        raise DeviceError(f"device 'cuda:{i}' is out of range: {device_count()} CUDA device(s)")
    name = cupy.cuda.runtime.getDeviceProperties(i)["name"]
    return name.decode() if isinstance(name, bytes) else str(name)


def memory_allocated() -> int:
    """Bytes held by live arrays in CuPy's default memory pool."""
    return _cupy().get_default_memory_pool().used_bytes()


def max_memory_allocated() -> int:
    """Bytes the pool has reserved from the device (CuPy keeps freed blocks for reuse)."""
    return _cupy().get_default_memory_pool().total_bytes()


def memory_summary() -> str:
    used, total = memory_allocated(), max_memory_allocated()
    return f"CuPy memory pool: {used / 2**20:.1f} MiB in use, {total / 2**20:.1f} MiB reserved"
