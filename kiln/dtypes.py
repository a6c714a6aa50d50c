"""dtypes: kiln uses NumPy dtype objects, with one promotion table (NumPy 2 rules, weak scalars)."""

from __future__ import annotations

import numpy as np

from .errors import DTypeError

float16 = np.dtype("float16")
float32 = np.dtype("float32")
float64 = np.dtype("float64")
int8 = np.dtype("int8")
int16 = np.dtype("int16")
int32 = np.dtype("int32")
int64 = np.dtype("int64")
uint8 = np.dtype("uint8")
uint16 = np.dtype("uint16")
uint32 = np.dtype("uint32")
uint64 = np.dtype("uint64")
bool_ = np.dtype("bool")

SUPPORTED = (
    bool_, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float16, float32, float64
)  # fmt: skip
DEFAULT_FLOAT = float32
DEFAULT_INT = int64

_SHORT = {
    bool_: "bool", int8: "i8", int16: "i16", int32: "i32", int64: "i64", uint8: "u8",
    uint16: "u16", uint32: "u32", uint64: "u64", float16: "f16", float32: "f32", float64: "f64",
}  # fmt: skip
_FROM_SHORT = {v: k for k, v in _SHORT.items()}


def as_dtype(value) -> np.dtype:
    """Canonical dtype for a kiln, NumPy or string dtype; raises DTypeError if unsupported.

    >>> as_dtype("float32"), as_dtype("f32"), as_dtype(bool)
    (dtype('float32'), dtype('float32'), dtype('bool'))
    """
    if isinstance(value, str) and value in _FROM_SHORT:
        return _FROM_SHORT[value]
    try:
        dt = np.dtype(value)
    except TypeError as e:
        raise DTypeError(f"not a dtype: {value!r}") from e
    if dt not in _SHORT:
        supported = ", ".join(d.name for d in SUPPORTED)
        raise DTypeError(f"dtype {dt} is not supported by kiln (supported: {supported})")
    return dt


def short_name(dtype: np.dtype) -> str:
    """The IR's short name: `f32`, `i64`, `bool`."""
    return _SHORT[dtype]


def is_float(dtype: np.dtype) -> bool:
    return dtype.kind == "f"


def is_int(dtype: np.dtype) -> bool:
    return dtype.kind in "iu"


def weak_marker(value):
    """The Python type NumPy's promotion treats as weak for a scalar (NEP 50)."""
    if isinstance(value, (bool, np.bool_)):
        return bool
    if isinstance(value, int):
        return int
    if isinstance(value, float):
        return float
    raise DTypeError(f"not a Python scalar: {value!r}")


def promote(*dtypes_or_scalars) -> np.dtype:
    """The result dtype of combining values: the one promotion table, NumPy 2's.

    Python scalars (or the types `int`, `float`, `bool`) are weak: they do not widen a dtype.

    >>> promote(float32, 2.0), promote(int8, int16), promote(int32, 1.5)
    (dtype('float32'), dtype('int16'), dtype('float64'))
    """
    args = []
    for v in dtypes_or_scalars:
        if v is int or v is float or v is bool:  # NOTE: `v in (int,)` is True for dtype int64
            args.append(v(0))
        elif isinstance(v, (bool, int, float)) and not isinstance(v, np.generic):
            args.append(type(v)(0))
        else:
            args.append(as_dtype(v))
    if all(not isinstance(a, np.dtype) for a in args):
        # Only weak scalars: the widest kind wins, at kiln's default width.
        return scalar_dtype(max(args, key=lambda a: (bool, int, float).index(type(a))))
    return as_dtype(np.result_type(*args))


def scalar_dtype(value) -> np.dtype:
    """The dtype a lone Python scalar gets: bool, int64, or the default float (float32)."""
    marker = weak_marker(value)
    return {bool: bool_, int: DEFAULT_INT, float: DEFAULT_FLOAT}[marker]
