"""dtypes: kiln uses NumPy dtype objects. `result_type` is the frontend's promotion (PyTorch's
`torch.result_type`); `promote` is NumPy 2's, the dtype rule of the primitives' kernels."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from .errors import DTypeError

float16 = np.dtype("float16")
# bfloat16 through ml_dtypes: NumPy's ufuncs on it compute each element in float32 and round
# the result to bfloat16, as PyTorch's CPU kernels do. Its NumPy kind is "V", not "f": ask
# `is_float`, never `dtype.kind == "f"`.
bfloat16 = np.dtype(ml_dtypes.bfloat16)
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

# PyTorch's names for them (kiln/__init__.py also exports `float`, `int` and `bool`).
long, half, double = int64, float16, float64

SUPPORTED = (
    bool_, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float16, bfloat16, float32,
    float64,
)  # fmt: skip
DEFAULT_FLOAT = float32
DEFAULT_INT = int64
# The type of a node with several outputs (a region op's): no bytes of its own; `get` nodes
# project its elements. Not a dtype of arrays (not in SUPPORTED).
TUPLE = np.dtype([])

_SHORT = {
    bool_: "bool", int8: "i8", int16: "i16", int32: "i32", int64: "i64", uint8: "u8",
    uint16: "u16", uint32: "u32", uint64: "u64", float16: "f16", bfloat16: "bf16", float32: "f32",
    float64: "f64", TUPLE: "tuple",
}  # fmt: skip
_FROM_SHORT = {v: k for k, v in _SHORT.items()}


def as_dtype(value) -> np.dtype:
    """Canonical dtype for a kiln, NumPy or string dtype; raises DTypeError if unsupported.

    >>> as_dtype("float32"), as_dtype("f32"), as_dtype(bool), as_dtype("bfloat16")
    (dtype('float32'), dtype('float32'), dtype('bool'), dtype(bfloat16))
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
    """Floating point, bfloat16 included (whose NumPy kind is "V")."""
    return dtype.kind == "f" or dtype == bfloat16


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
    if any(isinstance(a, np.dtype) and a == bfloat16 for a in args):
        return _promote_bfloat16(args)
    return as_dtype(np.result_type(*args))


def _promote_bfloat16(args) -> np.dtype:
    """NumPy has no common dtype of bfloat16 and float16 or the integers: PyTorch's is used
    (float32, and bfloat16); weak scalars do not widen it."""
    out = None
    for a in args:
        if isinstance(a, np.dtype):
            out = a if out is None else _pair(out, a)
    return out


def scalar_dtype(value) -> np.dtype:
    """The dtype a lone Python scalar gets: bool, int64, or the default float (float32)."""
    marker = weak_marker(value)
    return {bool: bool_, int: DEFAULT_INT, float: DEFAULT_FLOAT}[marker]


def get_default_dtype() -> np.dtype:
    """The dtype of Python floats in tensors and of integer-to-float promotion (PyTorch's).

    >>> get_default_dtype()
    dtype('float32')
    """
    return DEFAULT_FLOAT


def set_default_dtype(dtype) -> None:
    """Sets the default float dtype (a float dtype), as PyTorch's `set_default_dtype`: the
    dtype of factories without `dtype=`, of Python floats and of `int / int`.

    >>> set_default_dtype(float64); get_default_dtype()
    dtype('float64')
    >>> set_default_dtype(float32)
    """
    global DEFAULT_FLOAT
    dtype = as_dtype(dtype)
    if not is_float(dtype):
        raise TypeError(f"only floating-point types are supported as the default type, got {dtype}")
    DEFAULT_FLOAT = dtype


# -- PyTorch's promotion ---------------------------------------------------------------------
# torch.result_type: operands fall in three priority classes, tensors with dims, 0-d tensors
# and wrapped numbers (Python and NumPy scalars); a lower class only counts where its
# category (bool < integer < float) is higher than every operand's of the classes above.

_CATEGORY = {"b": 0, "u": 1, "i": 1, "f": 2, "V": 2}  # "V": bfloat16, the only such dtype


def _is_higher_float(a: np.dtype) -> bool:
    return a.kind == "f" or a == bfloat16


def _pair(a: np.dtype, b: np.dtype) -> np.dtype:
    """PyTorch's `promote_types` for two dtypes: across categories the higher one's dtype
    (`float16` with `int64` is `float16`), within one NumPy's (where PyTorch refuses, for
    uint16/32/64 beside signed ints, NumPy's answer stands)."""
    if a is b or a == b:
        return a
    ca, cb = _CATEGORY[a.kind], _CATEGORY[b.kind]
    if ca != cb:
        return a if ca > cb else b
    if bfloat16 in (a, b):  # PyTorch: bfloat16 with float16 is float32; wider floats win
        other = b if a == bfloat16 else a
        return float32 if other == float16 else other
    return as_dtype(np.promote_types(a, b))


def _combine(higher, lower):
    if higher is None:
        return lower
    if lower is None:
        return higher
    if _is_higher_float(higher):
        return higher
    if higher.kind == "b" or _is_higher_float(lower):
        return _pair(higher, lower)
    return higher


def _wrapped(value) -> np.dtype:
    """The dtype a Python or NumPy scalar takes part as: bool, int64, or the default float."""
    if isinstance(value, (bool, np.bool_)):
        return bool_
    if isinstance(value, (int, np.integer)):
        return DEFAULT_INT
    return DEFAULT_FLOAT


def result_type(*operands) -> np.dtype:
    """PyTorch's `torch.result_type`: the dtype an elementwise op computes and returns in.

    Operands: anything with `dtype` and `ndim` (Tensors, Symbols, arrays), dtypes (taken as
    tensors with dims), and Python scalars (wrapped numbers: weak). NumPy scalars are wrapped
    numbers beside a tensor, as PyTorch takes them, and keep their dtype without one.

    >>> import numpy as np
    >>> result_type(np.ones(3, np.int32), 0.5), result_type(np.ones(3, np.float16), np.ones(3))
    (dtype('float32'), dtype('float64'))
    >>> result_type(np.ones(3, np.float32), np.array(1.0)), result_type(int8, 3)
    (dtype('float32'), dtype('int8'))
    """
    dims = zeros = wrapped = None
    numpy_scalars = []
    for v in operands:
        if isinstance(v, np.generic):
            numpy_scalars.append(v)
            continue
        if isinstance(v, (bool, int, float)):
            d = _wrapped(v)
            wrapped = d if wrapped is None else _pair(wrapped, d)
            continue
        if isinstance(v, np.dtype) or not hasattr(v, "dtype"):
            d, nd = as_dtype(v), 1
        else:
            d, nd = v.dtype, v.ndim
        if nd:
            dims = d if dims is None else _pair(dims, d)
        else:
            zeros = d if zeros is None else _pair(zeros, d)
    for v in numpy_scalars:  # wrapped numbers beside tensors, else 0-d values of their dtype
        if dims is None and zeros is None:
            d = as_dtype(v.dtype)
            wrapped = d if wrapped is None else _pair(wrapped, d)
        else:
            d = _wrapped(v)
            wrapped = d if wrapped is None else _pair(wrapped, d)
    out = _combine(dims, _combine(zeros, wrapped))
    if out is None:
        raise DTypeError("result_type needs at least one operand")
    return out


def to_float(dtype: np.dtype) -> np.dtype:
    """`dtype` if it is a float, else the default float: what PyTorch's float functions
    (exp, sqrt, true division…) compute integers and bools in."""
    return dtype if is_float(dtype) else DEFAULT_FLOAT
