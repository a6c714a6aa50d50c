"""Backends: the array module and device services a compiled program runs on."""

from __future__ import annotations

import re

import numpy as np

from ..errors import DeviceError


class Backend:
    """What the runtime needs from a device: `xp`, transfers, sync, memory statistics."""

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


class NumpyBackend(Backend):
    """The CPU: NumPy arrays in host memory."""

    name = "cpu"
    xp = np

    def to_device(self, array):
        return np.asarray(array)

    def to_host(self, array) -> np.ndarray:
        return np.asarray(array)


_CPU = NumpyBackend()
_DEVICE = re.compile(r"^(cpu|cuda)(?::(\d+))?$")


def parse_device(device) -> tuple[str, int]:
    """`"cpu"`, `"cuda"`, `"cuda:1"` as (kind, index).

    >>> parse_device("cuda:1"), parse_device(None)
    (('cuda', 1), ('cpu', 0))
    """
    if device is None:
        return "cpu", 0
    match = _DEVICE.match(str(device))
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
