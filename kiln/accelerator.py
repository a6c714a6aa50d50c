"""`kn.accelerator`: PyTorch's device-agnostic accelerator API, over kiln's one accelerator
kind (CUDA). PyTorch's tutorials start with
`device = torch.accelerator.current_accelerator().type if torch.accelerator.is_available()
else "cpu"`, so code renamed to kiln needs these names. As PyTorch's: `current_accelerator()`
is None without one, and the index, synchronization and memory functions raise RuntimeError
"Cannot access accelerator device when none is available." (torch 2.13's message).

>>> import kiln as kn
>>> kn.accelerator.is_available() == kn.cuda.is_available()
True
"""

from __future__ import annotations

from . import cuda
from .array_types import device as _device

_NONE = "Cannot access accelerator device when none is available."


def is_available() -> bool:
    """True when an accelerator (a usable CUDA device) is there."""
    return cuda.is_available()


def current_accelerator(check_available: bool = False) -> _device | None:
    """`kn.device("cuda")` when CUDA is usable, else None (as PyTorch's on a CPU-only
    machine); `check_available` is accepted for PyTorch's signature: kiln only ever reports
    an accelerator that is available."""
    return _device("cuda") if cuda.is_available() else None


def device_count() -> int:
    """How many accelerator devices there are (0 without one)."""
    return cuda.device_count()


def _require() -> None:
    if not cuda.is_available():
        raise RuntimeError(f"{_NONE} ({cuda.why_unavailable()})")


def current_device_index() -> int:
    """The index of the device kiln uses by default: 0 (kiln runs where tensors are)."""
    _require()
    return 0


def synchronize(device=None, /) -> None:
    """Waits until all work queued on `device` (default: the current one) is done."""
    _require()
    cuda.synchronize(device)


def memory_allocated(device=None, /) -> int:
    """Bytes held by live arrays on `device` (see `kn.cuda.memory_allocated`)."""
    _require()
    return cuda.memory_allocated(device)


def max_memory_allocated(device=None, /) -> int:
    """The peak of `memory_allocated` on `device` (see `kn.cuda.max_memory_allocated`)."""
    _require()
    return cuda.max_memory_allocated(device)


def empty_cache() -> None:
    """Returns the memory pool's free blocks to the driver."""
    _require()
    cuda.empty_cache()
