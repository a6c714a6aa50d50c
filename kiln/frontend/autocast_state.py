"""PyTorch's functions that read and set autocast's state outside a `kn.autocast` block
(`set_autocast_enabled`, `set_autocast_dtype`, their older per-device spellings, the cast
cache and nesting), on kiln/frontend/autocast.py's state: what they set is what `kn.autocast`
and the autocast ops read, and a `kn.autocast` block restores it on exit, as PyTorch's. The
older spellings warn (DeprecationWarning) as PyTorch 2.13's do."""

from __future__ import annotations

import warnings

from .. import dtypes as dt
from ..errors import UsageError
from .autocast import DEVICE_TYPES, _state, get_autocast_dtype, is_autocast_enabled

__all__ = [
    "autocast_decrement_nesting", "autocast_increment_nesting", "clear_autocast_cache",
    "get_autocast_cpu_dtype", "get_autocast_gpu_dtype", "is_autocast_cache_enabled",
    "is_autocast_cpu_enabled", "set_autocast_cache_enabled", "set_autocast_cpu_dtype",
    "set_autocast_cpu_enabled", "set_autocast_dtype", "set_autocast_enabled",
    "set_autocast_gpu_dtype",
]  # fmt: skip


def _deprecated(old: str, new: str) -> None:
    warnings.warn(f"kn.{old} is deprecated. Please use kn.{new} instead.", DeprecationWarning,
                  stacklevel=3)  # fmt: skip


def _device(device_type) -> str:
    if device_type not in DEVICE_TYPES:
        raise UsageError(f"autocast: expected one of {', '.join(DEVICE_TYPES)} device type, "
                         f"got {device_type!r}")  # fmt: skip
    return device_type


def set_autocast_enabled(device_type, enabled=None) -> None:
    """Turns autocast on or off for device_type ("cpu" or "cuda"), as PyTorch's
    `torch.set_autocast_enabled(device_type, enabled)` (`set_autocast_enabled(enabled)`: for
    "cuda"). A `kn.autocast` block restores the state on exit.

    >>> import kiln as kn
    >>> kn.set_autocast_enabled("cpu", True)
    >>> kn.is_autocast_enabled("cpu"), (kn.ones(2, 2) @ kn.ones(2, 2)).dtype
    (True, kiln.bfloat16)
    >>> kn.set_autocast_enabled("cpu", False)
    """
    if enabled is None:  # the older one-argument form: CUDA's
        device_type, enabled = "cuda", device_type
    device = _device(device_type)
    if enabled:
        _state.enabled[device] = _state.dtypes[device]
    else:
        _state.enabled.pop(device, None)


def set_autocast_dtype(device_type, dtype) -> None:
    """Sets the dtype autocast casts to on device_type (also while autocast is off), as
    PyTorch's `torch.set_autocast_dtype`.

    >>> import kiln as kn
    >>> kn.set_autocast_dtype("cpu", kn.float16); kn.get_autocast_dtype("cpu")
    kiln.float16
    >>> kn.set_autocast_dtype("cpu", kn.bfloat16)
    """
    device = _device(device_type)
    _state.dtypes[device] = dt.as_dtype(dtype)
    if device in _state.enabled:
        _state.enabled[device] = _state.dtypes[device]


def is_autocast_cpu_enabled() -> bool:
    """`kn.is_autocast_enabled("cpu")` (PyTorch's older spelling; deprecated there).

    >>> import kiln as kn
    >>> kn.is_autocast_cpu_enabled()
    False
    """
    _deprecated("is_autocast_cpu_enabled()", "is_autocast_enabled('cpu')")
    return is_autocast_enabled("cpu")


def set_autocast_cpu_enabled(enabled) -> None:
    """`kn.set_autocast_enabled("cpu", enabled)` (PyTorch's older spelling).

    >>> import kiln as kn
    >>> kn.set_autocast_cpu_enabled(False)
    """
    _deprecated("set_autocast_cpu_enabled(enabled)", "set_autocast_enabled('cpu', enabled)")
    set_autocast_enabled("cpu", enabled)


def get_autocast_cpu_dtype():
    """`kn.get_autocast_dtype("cpu")` (PyTorch's older spelling).

    >>> import kiln as kn
    >>> kn.get_autocast_cpu_dtype()
    kiln.bfloat16
    """
    _deprecated("get_autocast_cpu_dtype()", "get_autocast_dtype('cpu')")
    return get_autocast_dtype("cpu")


def get_autocast_gpu_dtype():
    """`kn.get_autocast_dtype("cuda")` (PyTorch's older spelling).

    >>> import kiln as kn
    >>> kn.get_autocast_gpu_dtype()
    kiln.float16
    """
    _deprecated("get_autocast_gpu_dtype()", "get_autocast_dtype('cuda')")
    return get_autocast_dtype("cuda")


def set_autocast_cpu_dtype(dtype) -> None:
    """`kn.set_autocast_dtype("cpu", dtype)` (PyTorch's older spelling).

    >>> import kiln as kn
    >>> kn.set_autocast_cpu_dtype(kn.bfloat16)
    """
    _deprecated("set_autocast_cpu_dtype(dtype)", "set_autocast_dtype('cpu', dtype)")
    set_autocast_dtype("cpu", dtype)


def set_autocast_gpu_dtype(dtype) -> None:
    """`kn.set_autocast_dtype("cuda", dtype)` (PyTorch's older spelling).

    >>> import kiln as kn
    >>> kn.set_autocast_gpu_dtype(kn.float16)
    """
    _deprecated("set_autocast_gpu_dtype(dtype)", "set_autocast_dtype('cuda', dtype)")
    set_autocast_dtype("cuda", dtype)


def clear_autocast_cache() -> None:
    """Drops autocast's casts of weights (leaf tensors that require grad), which a
    `kn.autocast` block keeps until its outermost block ends.

    >>> import kiln as kn
    >>> kn.clear_autocast_cache()
    """
    _state.cache.clear()


def is_autocast_cache_enabled() -> bool:
    """Whether autocast keeps its casts of weights (the default of `cache_enabled=`).

    >>> import kiln as kn
    >>> kn.is_autocast_cache_enabled()
    True
    """
    return bool(_state.cache_enabled)


def set_autocast_cache_enabled(enabled: bool) -> None:
    """Sets whether autocast keeps its casts of weights (`kn.autocast`'s default of
    `cache_enabled=`).

    >>> import kiln as kn
    >>> kn.set_autocast_cache_enabled(True)
    """
    _state.cache_enabled = bool(enabled)


def autocast_increment_nesting() -> int:
    """One more level of autocast nesting (what entering `kn.autocast` counts); the new level.

    >>> import kiln as kn
    >>> kn.autocast_increment_nesting(), kn.autocast_decrement_nesting()
    (1, 0)
    """
    _state.nesting += 1
    return _state.nesting


def autocast_decrement_nesting() -> int:
    """One level of autocast nesting less; the new level (at 0 PyTorch's autocast exit clears
    the cache, as kiln's `kn.autocast` does).

    >>> import kiln as kn
    >>> kn.autocast_increment_nesting(), kn.autocast_decrement_nesting()
    (1, 0)
    """
    _state.nesting = max(_state.nesting - 1, 0)
    return _state.nesting
