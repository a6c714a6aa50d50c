"""CUDA through CuPy: why it is or is not usable, and the backend when it is."""

from __future__ import annotations

import functools

from ..errors import DeviceError


@functools.cache
def cuda_status() -> tuple[bool, str, int]:
    """(usable, reason, device count): the reason says exactly what is missing."""
    try:
        import cupy
    except ImportError as e:
        return False, f"CuPy is not installed ({e}); install kiln[cuda]", 0
    except Exception as e:  # a broken CuPy install fails in many ways
        return False, f"CuPy failed to import: {type(e).__name__}: {e}", 0
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except cupy.cuda.runtime.CUDARuntimeError as e:
        return False, f"no usable CUDA driver or device: {e}", 0
    except Exception as e:
        return False, f"CUDA is not usable: {type(e).__name__}: {e}", 0
    if count == 0:
        return False, "the CUDA driver reports no device", 0
    return True, f"{count} device(s)", count


def cuda_backend(index: int):
    ok, reason, count = cuda_status()
    if not ok:
        raise DeviceError(f"cannot use device 'cuda:{index}': {reason}")
    if index >= count:
        raise DeviceError(f"device 'cuda:{index}' is out of range: {count} CUDA device(s)")
    raise DeviceError(
        f"device 'cuda:{index}' is usable but kiln's CuPy backend is not built yet "
        "(it comes with the CUDA issue); no silent fallback to the CPU"
    )
