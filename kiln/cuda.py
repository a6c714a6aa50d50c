"""`kn.cuda`: whether CUDA is usable and, if it is, device names and memory statistics.

Without a usable GPU, `is_available()` is False, `device_count()` is 0, the memory figures are
0, `memory_stats()` is empty and `empty_cache()` and the `reset_*` functions do nothing (as
PyTorch's), and the rest raise DeviceError saying
exactly why (no CuPy, no driver, no device). Memory figures come from
CuPy's memory pool, per device: kiln's arenas and every array CuPy allocates live there.
"""

from __future__ import annotations

import collections

from .errors import DeviceError
from .runtime import cuda as _cuda  # NOTE: looked up per call, so tests can replace it


def is_available() -> bool:
    """True when CuPy imports and sees at least one CUDA device.

    >>> import kiln as kn
    >>> isinstance(kn.cuda.is_available(), bool)
    True
    """
    return _cuda.cuda_status()[0]


def device_count() -> int:
    """How many CUDA devices kiln can use (0 without a usable GPU)."""
    return _cuda.cuda_status()[2]


def why_unavailable() -> str | None:
    """The reason CUDA is not usable, or None when it is.

    >>> import kiln as kn
    >>> (kn.cuda.why_unavailable() is None) == kn.cuda.is_available()
    True
    """
    ok, reason, _ = _cuda.cuda_status()
    return None if ok else reason


def _backend(device):
    """The backend of `device` (an int, "cuda:N" or None for cuda:0), or DeviceError."""
    if device is None:
        index = 0
    elif isinstance(device, int):
        index = device
    else:
        from .runtime.backend import parse_device

        kind, index = parse_device(device)
        if kind != "cuda":
            raise DeviceError(f"{device!r} is not a CUDA device")
    return _cuda.cuda_backend(index)


def get_device_name(i: int = 0) -> str:
    """The GPU's name as the driver reports it (`"NVIDIA H100 80GB HBM3"`)."""
    backend = _backend(i)
    name = backend.xp.cuda.runtime.getDeviceProperties(backend.index)["name"]
    return name.decode() if isinstance(name, bytes) else str(name)


def _unused(device) -> bool:
    """True when CUDA is not usable (a `device` that names no CUDA device still raises)."""
    if is_available():
        return False
    if device is not None and not isinstance(device, int):
        from .runtime.backend import parse_device

        if parse_device(device)[0] != "cuda":
            raise DeviceError(f"{device!r} is not a CUDA device")
    return True


def memory_allocated(device=None) -> int:
    """Bytes held by live arrays in CuPy's memory pool on `device` (default cuda:0); 0
    without CUDA.

    >>> import kiln as kn
    >>> kn.cuda.memory_allocated() if not kn.cuda.is_available() else 0
    0
    """
    if _unused(device):
        return 0
    return _backend(device).memory_stats()["pool_used_bytes"]


def memory_reserved(device=None) -> int:
    """Bytes CuPy's memory pool holds from `device`: live arrays plus freed blocks it keeps;
    0 without CUDA."""
    if _unused(device):
        return 0
    return _backend(device).memory_stats()["pool_held_bytes"]


def max_memory_allocated(device=None) -> int:
    """An upper bound of the peak of `memory_allocated`: the bytes the pool holds. CuPy keeps
    freed blocks instead of returning them, so this is the pool's high-water mark unless
    `empty_cache()` returned blocks since (CuPy tracks no exact peak)."""
    return memory_reserved(device)


def max_memory_reserved(device=None) -> int:
    """An upper bound of the peak of `memory_reserved`: the bytes the pool holds now (as
    `max_memory_allocated`; CuPy tracks no peak). 0 without CUDA."""
    return memory_reserved(device)


def memory_stats(device=None) -> dict:
    """PyTorch's keys for the figures kiln has (`allocated_bytes.all.current`,
    `reserved_bytes.all.current` and their `.peak` bounds); an empty OrderedDict without CUDA,
    as torch.cuda.memory_stats() on a machine without CUDA."""
    if _unused(device):
        return collections.OrderedDict()
    used, held = memory_allocated(device), memory_reserved(device)
    return collections.OrderedDict(
        [
            ("allocated_bytes.all.current", used),
            ("allocated_bytes.all.peak", max_memory_allocated(device)),
            ("reserved_bytes.all.current", held),
            ("reserved_bytes.all.peak", max_memory_reserved(device)),
        ]
    )


def reset_peak_memory_stats(device=None) -> None:
    """Nothing to reset: kiln's peaks are the bytes CuPy's pool holds, which only
    `empty_cache()` lowers. Checks `device`; does nothing without CUDA (as PyTorch's)."""
    if not _unused(device):
        _backend(device)


reset_max_memory_allocated = reset_peak_memory_stats
reset_accumulated_memory_stats = reset_peak_memory_stats


def empty_cache(device=None) -> None:
    """Returns the pool's free blocks on `device` to the driver (nothing without CUDA)."""
    if _unused(device):
        return
    backend = _backend(device)
    with backend.scope():
        backend.xp.get_default_memory_pool().free_all_blocks()


def synchronize(device=None) -> None:
    """Waits until all work queued on `device` is done."""
    _backend(device).synchronize()


def memory_summary(device=None) -> str:
    """A few lines on `device`'s memory: CuPy's pool, the device, and kiln's copies."""
    backend = _backend(device)
    stats = backend.memory_stats()
    mib = 2.0**20
    lines = [
        f"{backend.name} ({get_device_name(backend.index)})",
        f"  CuPy memory pool: {stats['pool_used_bytes'] / mib:.1f} MiB in use, "
        f"{stats['pool_held_bytes'] / mib:.1f} MiB held",
        f"  device memory: {stats['device_free_bytes'] / mib:.1f} MiB free of "
        f"{stats['device_total_bytes'] / mib:.1f} MiB",
        f"  pinned staging blocks free: {stats['pinned_free_blocks']}",
    ]
    for kind, (copies, nbytes) in sorted(stats["transfers"].items()):
        lines.append(f"  {kind}: {copies} copies, {nbytes / mib:.1f} MiB")
    return "\n".join(lines)


# -- seeding and the current device ------------------------------------------------------------
# kiln draws the random numbers of every device from the CPU generator (`kn.manual_seed`,
# `kn.Generator`): a GPU has no stream of its own to seed.


def manual_seed(seed: int) -> None:
    """PyTorch's seed of the current GPU's generator: nothing to do in kiln, whose random
    numbers on every device come from the CPU generator that `kn.manual_seed` seeds (without
    CUDA PyTorch's does nothing too). Scripts that seed both stay reproducible.

    >>> import kiln as kn
    >>> kn.cuda.manual_seed(0), kn.cuda.manual_seed_all(0)
    (None, None)
    """
    int(seed)  # PyTorch's check: an int (or one that converts)


def manual_seed_all(seed: int) -> None:
    """`manual_seed` for every GPU: nothing to do (see `manual_seed`)."""
    int(seed)


def seed() -> None:
    """PyTorch's random seed of the current GPU's generator: nothing to do (see
    `manual_seed`)."""


def seed_all() -> None:
    """`seed` for every GPU: nothing to do (see `manual_seed`)."""


def is_initialized() -> bool:
    """Whether CUDA is set up for use: in kiln, whether it is usable (`is_available()`)."""
    return is_available()


def current_device() -> int:
    """The index of the GPU that `"cuda"` means: kiln's is 0. DeviceError without CUDA (PyTorch
    raises there too), saying why."""
    _backend(0)
    return 0


def mem_get_info(device=None) -> tuple:
    """(free, total) bytes of `device`'s memory, from the driver; DeviceError without CUDA."""
    backend = _backend(device)
    with backend.scope():
        return tuple(int(v) for v in backend.xp.cuda.runtime.memGetInfo())
