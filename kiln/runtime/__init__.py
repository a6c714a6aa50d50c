"""Backends, the compile path (`Program`), and the user's `Function` and `Session`."""

from .backend import Backend, NumpyBackend, get_backend, parse_device
from .function import Function, Session, function
from .program import KernelError, Program
from .regions import run_body  # noqa: F401 -- installs how region ops run their bodies

__all__ = [
    "Backend", "NumpyBackend", "get_backend", "parse_device", "Function", "Session",
    "function", "KernelError", "Program",
]  # fmt: skip
