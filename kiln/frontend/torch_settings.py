"""PyTorch's global settings functions: intra-op threads (kiln's are the BLAS library's and
numba's), the determinism switches, the default device, float32 matmul precision, denormal
flushing, warn-always and anomaly detection. Each reads back what it set, as PyTorch's do.

>>> import kiln as kn
>>> kn.use_deterministic_algorithms(True); kn.are_deterministic_algorithms_enabled()
True
>>> kn.use_deterministic_algorithms(False)
"""

from __future__ import annotations

import ctypes
import os
import sys

from ..errors import ArgumentError, ArgumentTypeError, UsageError

__all__ = [
    "are_deterministic_algorithms_enabled", "get_default_device", "get_deterministic_debug_mode",
    "get_float32_matmul_precision", "get_num_interop_threads", "get_num_threads",
    "is_anomaly_check_nan_enabled", "is_anomaly_enabled",
    "is_deterministic_algorithms_warn_only_enabled", "is_warn_always_enabled",
    "set_anomaly_enabled", "set_default_device", "set_default_tensor_type",
    "set_deterministic_debug_mode",
    "set_float32_matmul_precision", "set_flush_denormal", "set_num_interop_threads",
    "set_num_threads", "set_warn_always", "use_deterministic_algorithms",
]  # fmt: skip

_settings = {
    "threads": None,  # None: the BLAS library's own count
    "interop": None,
    "deterministic": False,
    "warn_only": False,
    "precision": "highest",
    "warn_always": False,
    "check_nan": True,
    "device": None,
}


def _int_arg(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ArgumentTypeError(f"{name}(): argument must be int, not {type(value).__name__}")
    if value <= 0:
        raise UsageError(f"{name}: number of threads must be positive, got {value}")
    return value


def _openblas_calls(name: str) -> list:
    from ..sysinfo import loaded_blas_libraries, openblas_symbol

    calls = []
    try:
        paths = loaded_blas_libraries()
    except Exception:  # a platform whose loaded libraries cannot be listed: no BLAS control
        return calls
    for path in paths:
        fn = openblas_symbol(ctypes.CDLL(path), name)
        if fn is not None:
            calls.append(fn)
    return calls


def get_num_threads() -> int:
    """The threads kiln's kernels use within one op: the last `set_num_threads`, else the
    BLAS library's count (else the CPU count).

    >>> import kiln as kn
    >>> kn.get_num_threads() >= 1
    True
    """
    if _settings["threads"] is not None:
        return _settings["threads"]
    for fn in _openblas_calls("openblas_get_num_threads"):
        fn.restype, fn.argtypes = ctypes.c_int, []
        return max(1, int(fn()))
    return os.cpu_count() or 1


def set_num_threads(int: int) -> None:  # noqa: A002 -- PyTorch's parameter name
    """Sets the threads used within one op: OpenBLAS's (matmul, solves) and numba's (kiln's
    compiled loops) where they are loaded.

    >>> import kiln as kn
    >>> n = kn.get_num_threads(); kn.set_num_threads(1); kn.get_num_threads()
    1
    >>> kn.set_num_threads(n)
    """
    n = _int_arg("set_num_threads", int)
    for fn in _openblas_calls("openblas_set_num_threads"):
        fn.restype, fn.argtypes = None, [ctypes.c_int]
        fn(n)
    numba = sys.modules.get("numba")
    if numba is not None:
        numba.set_num_threads(min(n, numba.config.NUMBA_NUM_THREADS))
    _settings["threads"] = n


def get_num_interop_threads() -> int:
    """The threads for running independent ops at once: kiln runs a program's ops in order,
    so this is the value set (the CPU count by default), kept for code that reads it back.

    >>> import kiln as kn
    >>> kn.get_num_interop_threads() >= 1
    True
    """
    return _settings["interop"] or os.cpu_count() or 1


def set_num_interop_threads(int: int) -> None:  # noqa: A002 -- PyTorch's parameter name
    """Sets the inter-op thread count; as in PyTorch, only once.

    >>> import kiln as kn
    >>> kn.set_num_interop_threads(2)  # doctest: +SKIP
    """
    n = _int_arg("set_num_interop_threads", int)
    if _settings["interop"] is not None:
        raise UsageError("set_num_interop_threads: the number of interop threads can be set "
                         "only once")  # fmt: skip
    _settings["interop"] = n


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Asks for deterministic algorithms. kiln's CPU kernels are deterministic (the same
    inputs give the same bits every run), so this records the switch for code that reads it.

    >>> import kiln as kn
    >>> kn.use_deterministic_algorithms(True, warn_only=True)
    >>> kn.is_deterministic_algorithms_warn_only_enabled()
    True
    >>> kn.use_deterministic_algorithms(False)
    """
    if not isinstance(mode, bool):
        raise ArgumentTypeError(f"use_deterministic_algorithms expects a bool, but got "
                                f"{type(mode).__name__}")  # fmt: skip
    _settings["deterministic"], _settings["warn_only"] = mode, bool(warn_only)


def are_deterministic_algorithms_enabled() -> bool:
    """Whether `use_deterministic_algorithms(True)` is in force.

    >>> import kiln as kn
    >>> kn.are_deterministic_algorithms_enabled()
    False
    """
    return _settings["deterministic"]


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    """Whether the deterministic switch was set with `warn_only=True`.

    >>> import kiln as kn
    >>> kn.is_deterministic_algorithms_warn_only_enabled()
    False
    """
    return _settings["warn_only"]


_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}


def set_deterministic_debug_mode(debug_mode) -> None:
    """The determinism switch as a level: 0 or "default" (off), 1 or "warn" (warn only),
    2 or "error" (on).

    >>> import kiln as kn
    >>> kn.set_deterministic_debug_mode("warn"); kn.get_deterministic_debug_mode()
    1
    >>> kn.set_deterministic_debug_mode(0)
    """
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise ArgumentError(f"invalid value of debug_mode, expected one of `default`, "
                                f"`warn`, `error`, but got {debug_mode}")  # fmt: skip
        debug_mode = _DEBUG_MODES[debug_mode]
    if isinstance(debug_mode, bool) or not isinstance(debug_mode, int):
        raise ArgumentTypeError(f"debug_mode must be str or int, but got "
                                f"{type(debug_mode).__name__}")  # fmt: skip
    if debug_mode not in (0, 1, 2):
        raise ArgumentError(f"invalid value of debug_mode, expected 0, 1, or 2, but got "
                            f"{debug_mode}")  # fmt: skip
    use_deterministic_algorithms(debug_mode > 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode() -> int:
    """The determinism switch as a level: 0 off, 1 warn only, 2 on.

    >>> import kiln as kn
    >>> kn.get_deterministic_debug_mode()
    0
    """
    if not _settings["deterministic"]:
        return 0
    return 1 if _settings["warn_only"] else 2


def get_default_device():
    """The device factories create tensors on when given none: kiln's is the cpu.

    >>> import kiln as kn
    >>> kn.get_default_device()
    device(type='cpu')
    """
    from ..array_types import device

    return device(_settings["device"] or "cpu")


def set_default_device(device) -> None:
    """Sets the default device. kiln's factories create on the cpu unless given `device=`,
    so only "cpu" (or None, the same) is taken; another device is refused rather than
    ignored.

    >>> import kiln as kn
    >>> kn.set_default_device("cpu"); kn.get_default_device()
    device(type='cpu')
    """
    name = None if device is None else str(device)
    if name not in (None, "cpu"):
        raise UsageError(f"set_default_device: kiln creates tensors on the cpu unless a "
                         f"factory is given device=; pass device={name!r} there")  # fmt: skip
    _settings["device"] = name


def set_default_tensor_type(t) -> None:
    """Sets the default float dtype from a tensor type name ("kiln.DoubleTensor"; PyTorch's
    "torch.DoubleTensor" is read the same), as PyTorch's deprecated `set_default_tensor_type`
    (which warns so): a floating type only (TypeError otherwise); a CUDA type also asks for
    the default device, which kiln keeps on the cpu (`set_default_device`).

    >>> import kiln as kn, warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     kn.set_default_tensor_type("kiln.DoubleTensor")
    >>> kn.ones(1).dtype
    kiln.float64
    >>> kn.set_default_dtype(kn.float32)
    """
    import warnings

    from .. import dtypes as dt

    warnings.warn(
        "kn.set_default_tensor_type() is deprecated (as of PyTorch 2.1), please use "
        "kn.set_default_dtype() and kn.set_default_device() as alternatives.",
        UserWarning,
        stacklevel=2,
    )
    if not isinstance(t, str):
        raise ArgumentTypeError(
            f"invalid type object {t!r}: set_default_tensor_type takes a type name such as "
            "'kiln.DoubleTensor'"
        )
    if ".cuda." in t:
        set_default_device("cuda")
    dtype = dt.dtype_of_type(t)
    if not dt.is_float(dtype):
        raise ArgumentTypeError("only floating-point types are supported as the default type")
    dt.set_default_dtype(dtype)


_PRECISIONS = ("highest", "high", "medium")


def get_float32_matmul_precision() -> str:
    """The float32 matmul precision set: "highest" (the default), "high" or "medium".

    >>> import kiln as kn
    >>> kn.get_float32_matmul_precision()
    'highest'
    """
    return _settings["precision"]


def set_float32_matmul_precision(precision: str) -> None:
    """Sets the float32 matmul precision. kiln's matmuls run in full float32 whatever the
    setting ("high" and "medium" permit, never require, faster lower-precision math).

    >>> import kiln as kn
    >>> kn.set_float32_matmul_precision("high"); kn.get_float32_matmul_precision()
    'high'
    >>> kn.set_float32_matmul_precision("highest")
    """
    if precision not in _PRECISIONS:
        raise ArgumentError(f"set_float32_matmul_precision: invalid precision {precision!r}, "
                            f"expected one of {_PRECISIONS}")  # fmt: skip
    _settings["precision"] = precision


def set_flush_denormal(mode: bool) -> bool:
    """Whether denormal floats could be flushed to zero: False, as on a CPU without the
    control (kiln leaves the floating-point environment as NumPy has it).

    >>> import kiln as kn
    >>> kn.set_flush_denormal(True)
    False
    """
    return False


def set_warn_always(b: bool) -> None:
    """Makes kiln's warnings that show once per process show every time.

    >>> import kiln as kn
    >>> kn.set_warn_always(True); kn.is_warn_always_enabled()
    True
    >>> kn.set_warn_always(False)
    """
    _settings["warn_always"] = bool(b)


def is_warn_always_enabled() -> bool:
    """Whether `set_warn_always(True)` is in force.

    >>> import kiln as kn
    >>> kn.is_warn_always_enabled()
    False
    """
    return _settings["warn_always"]


def set_anomaly_enabled(enabled: bool, check_nan: bool = True) -> None:
    """Anomaly detection on or off (`kn.autograd.set_detect_anomaly`): each backward step is
    checked for NaN and an error names the forward op and its line.

    >>> import kiln as kn
    >>> kn.set_anomaly_enabled(True); kn.is_anomaly_enabled()
    True
    >>> kn.set_anomaly_enabled(False)
    """
    from ..eager.grad_mode import set_detect_anomaly

    set_detect_anomaly(enabled)
    _settings["check_nan"] = bool(check_nan)


def is_anomaly_enabled() -> bool:
    """Whether anomaly detection is on.

    >>> import kiln as kn
    >>> kn.is_anomaly_enabled()
    False
    """
    from ..eager.grad_mode import is_anomaly_enabled as enabled

    return enabled()


def is_anomaly_check_nan_enabled() -> bool:
    """Whether anomaly detection checks for NaN (`set_anomaly_enabled(..., check_nan)`).

    >>> import kiln as kn
    >>> kn.is_anomaly_check_nan_enabled()
    True
    """
    return _settings["check_nan"]


class set_detect_anomaly:  # noqa: N801 — torch.autograd's name; a function and a context
    """`kn.autograd.set_detect_anomaly(mode, check_nan=True)`: anomaly detection on or off,
    called as a function or used as a context manager that restores the previous setting
    on exit (torch.autograd.set_detect_anomaly).

    >>> import kiln as kn
    >>> with kn.autograd.set_detect_anomaly(True):
    ...     kn.is_anomaly_enabled()
    True
    >>> kn.is_anomaly_enabled()
    False
    """

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self.prev = (is_anomaly_enabled(), is_anomaly_check_nan_enabled())
        set_anomaly_enabled(mode, check_nan)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc) -> None:
        set_anomaly_enabled(*self.prev)


class detect_anomaly:  # noqa: N801 — torch.autograd's name
    """`with kn.autograd.detect_anomaly():` (or `@kn.autograd.detect_anomaly()`): anomaly
    detection on inside, the previous setting restored after (torch.autograd.detect_anomaly):
    a backward step that returns NaN raises, naming the forward op and its line."""

    def __init__(self, check_nan: bool = True) -> None:
        self.check_nan = check_nan
        self._prev: list = []

    def __enter__(self) -> None:
        self._prev.append((is_anomaly_enabled(), is_anomaly_check_nan_enabled()))
        set_anomaly_enabled(True, self.check_nan)

    def __exit__(self, *exc) -> None:
        set_anomaly_enabled(*self._prev.pop())

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with detect_anomaly(self.check_nan):
                return fn(*args, **kwargs)

        return wrapper
