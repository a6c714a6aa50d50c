"""dtypes: kiln uses NumPy dtype objects. `result_type` is the frontend's promotion (PyTorch's
`torch.result_type`); `promote` is NumPy 2's, the dtype rule of the primitives' kernels."""

from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np

from .errors import (
    ArgumentError,
    ArgumentTypeError,
    DTypeError,
    ScalarOverflowError,
    UsageError,
    call_error,
)

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
# Complex numbers (PyTorch's complex64/complex128): NumPy's complex dtypes, two floats an
# element. Their NumPy kind is "c": ask `is_complex`.
complex64 = np.dtype("complex64")
complex128 = np.dtype("complex128")
# Storage dtypes (PyTorch's float8 family and its shell int4/uint4/int2/uint2; ml_dtypes gives
# NumPy the arrays, unpacked: one byte an element): casts to and from them work, promotion with
# another dtype does not (PyTorch: "Promotion for Float8 Types is not supported"). They are not
# in SUPPORTED, the dtypes every op is checked on.
float8_e4m3fn = np.dtype(ml_dtypes.float8_e4m3fn)
float8_e5m2 = np.dtype(ml_dtypes.float8_e5m2)
float8_e4m3fnuz = np.dtype(ml_dtypes.float8_e4m3fnuz)
float8_e5m2fnuz = np.dtype(ml_dtypes.float8_e5m2fnuz)
float8_e8m0fnu = np.dtype(ml_dtypes.float8_e8m0fnu)
float4_e2m1fn = np.dtype(ml_dtypes.float4_e2m1fn)
int4 = np.dtype(ml_dtypes.int4)
uint4 = np.dtype(ml_dtypes.uint4)
int2 = np.dtype(ml_dtypes.int2)
uint2 = np.dtype(ml_dtypes.uint2)

# PyTorch's names for them (kiln/__init__.py also exports `float`, `int` and `bool`).
long, half, double = int64, float16, float64
cfloat, cdouble = complex64, complex128

SUPPORTED = (
    bool_, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float16, bfloat16, float32,
    float64,
)  # fmt: skip
# The complex dtypes: every op that takes them says so in its dtype rule; the others refuse
# them (not in SUPPORTED, the dtypes every op is checked on).
COMPLEX = (complex64, complex128)
STORAGE_ONLY = (
    float8_e4m3fn, float8_e5m2, float8_e4m3fnuz, float8_e5m2fnuz, float8_e8m0fnu, float4_e2m1fn,
    int4, uint4, int2, uint2,
)  # fmt: skip
_STORAGE = frozenset(STORAGE_ONLY)  # membership by hash: promotion is on every op's path
DEFAULT_FLOAT = float32
DEFAULT_INT = int64
# The type of a node with several outputs (a region op's): no bytes of its own; `get` nodes
# project its elements. Not a dtype of arrays (not in SUPPORTED).
TUPLE = np.dtype([])

_SHORT = {
    bool_: "bool", int8: "i8", int16: "i16", int32: "i32", int64: "i64", uint8: "u8",
    uint16: "u16", uint32: "u32", uint64: "u64", float16: "f16", bfloat16: "bf16", float32: "f32",
    float64: "f64", TUPLE: "tuple", complex64: "c64", complex128: "c128",
    float8_e4m3fn: "f8e4m3fn", float8_e5m2: "f8e5m2",
    float8_e4m3fnuz: "f8e4m3fnuz", float8_e5m2fnuz: "f8e5m2fnuz", float8_e8m0fnu: "f8e8m0fnu",
    float4_e2m1fn: "f4e2m1fn", int4: "i4", uint4: "u4", int2: "i2", uint2: "u2",
}  # fmt: skip
_FROM_SHORT = {v: k for k, v in _SHORT.items()}


def as_dtype(value) -> np.dtype:
    """Canonical dtype for a kiln, NumPy or string dtype; raises DTypeError if unsupported.

    >>> as_dtype("float32"), as_dtype("f32"), as_dtype(bool), as_dtype("bfloat16")
    (dtype('float32'), dtype('float32'), dtype('bool'), dtype(bfloat16))
    """
    if type(value) is DType:
        return value.dtype
    if isinstance(value, str) and value in _FROM_SHORT:
        return _FROM_SHORT[value]
    try:
        dt = np.dtype(value)
    except TypeError as e:
        raise DTypeError(f"not a dtype: {value!r}") from e
    if dt not in _SHORT:
        supported = ", ".join(d.name for d in SUPPORTED + COMPLEX + STORAGE_ONLY)
        raise DTypeError(f"dtype {dt} is not supported by kiln (supported: {supported})")
    return dt


def short_name(dtype: np.dtype) -> str:
    """The IR's short name: `f32`, `i64`, `bool`."""
    return _SHORT[dtype]


def is_float(dtype: np.dtype) -> bool:
    """Floating point, bfloat16 included (whose NumPy kind is "V")."""
    return dtype.kind == "f" or dtype == bfloat16


def is_differentiable(dtype: np.dtype) -> bool:
    """A float or complex dtype: values of it have gradients (PyTorch's rule).

    >>> is_differentiable(complex64), is_differentiable(int64)
    (True, False)
    """
    return dtype.kind in "fc" or dtype == bfloat16


def is_int(dtype: np.dtype) -> bool:
    return dtype.kind in "iu"


def is_storage_only(dtype: np.dtype) -> bool:
    """A float8, float4, int4 or int2 dtype: cast to and from, never promoted.

    >>> is_storage_only(float8_e4m3fn), is_storage_only(bfloat16)
    (True, False)
    """
    return dtype in _STORAGE


def weak_marker(value):
    """The Python type NumPy's promotion treats as weak for a scalar (NEP 50)."""
    if isinstance(value, (bool, np.bool_)):
        return bool
    if isinstance(value, int):
        return int
    if isinstance(value, float):
        return float
    if isinstance(value, complex):
        return complex
    raise DTypeError(f"not a Python scalar: {value!r}")


def promote(*dtypes_or_scalars) -> np.dtype:
    """The result dtype of combining values: the one promotion table, NumPy 2's.

    Python scalars (or the types `int`, `float`, `bool`) are weak: they do not widen a dtype.

    >>> promote(float32, 2.0), promote(int8, int16), promote(int32, 1.5)
    (dtype('float32'), dtype('int16'), dtype('float64'))
    """
    args = []
    for v in dtypes_or_scalars:
        if v is int or v is float or v is bool or v is complex:  # NOTE: `v in (int,)` is True
            args.append(v(0))  # for dtype int64
        elif isinstance(v, (bool, int, float, complex)) and not isinstance(v, np.generic):
            args.append(type(v)(0))
        else:
            args.append(as_dtype(v))
    if all(not isinstance(a, np.dtype) for a in args):
        # Only weak scalars: the widest kind wins, at kiln's default width.
        return scalar_dtype(max(args, key=lambda a: (bool, int, float, complex).index(type(a))))
    stored = [a for a in args if isinstance(a, np.dtype) and a in _STORAGE]
    if stored:  # one storage dtype, maybe with weak scalars, stays; with another dtype, raises
        other = [a for a in args if isinstance(a, np.dtype) and a != stored[0]]
        return _pair(stored[0], other[0]) if other else stored[0]
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
    """The dtype a lone Python scalar gets: bool, int64, the default float (float32), or the
    default complex dtype (complex64)."""
    marker = weak_marker(value)
    if marker is complex:
        return default_complex()
    return {bool: bool_, int: DEFAULT_INT, float: DEFAULT_FLOAT}[marker]


# the integer dtypes' (least, greatest) values: np.iinfo is slow to make
_INT_RANGES = {
    d: (int(np.iinfo(d).min), int(np.iinfo(d).max))
    for d in (int8, int16, int32, int64, uint8, uint16, uint32, uint64)
}


def python_int(value: int, dtype, op: str, *inputs, wraps: bool = False) -> int:
    """The Python int `value` as PyTorch takes it for `op`'s number in `dtype` (`inputs`: the
    op's tensors, for the message). One that no 64-bit integer holds raises OverflowError
    (ScalarOverflowError), in any dtype. In an integer dtype that cannot hold it: `wraps`
    (the binary ops' operand) wraps it around, as does an unsigned dtype a negative value
    down to minus its greatest (uint8's -1 is 255); any other raises RuntimeError
    (UsageError: "value cannot be converted to type int8 without overflow").

    >>> python_int(-1, uint8, "full"), python_int(300, uint8, "add", wraps=True)
    (255, 44)
    >>> python_int(300, int8, "fill_")
    Traceback (most recent call last):
    kiln.errors.UsageError: value cannot be converted to type int8 without overflow: 300 is ...
    """
    if not -(1 << 63) <= value < 1 << 64:
        text = f"int too big to convert: {short_int(value)} is outside the 64-bit integers"
        raise call_error(ScalarOverflowError, f"{text}, for {op} in {dtype}", op, *inputs)
    bounds = _INT_RANGES.get(dtype.dtype if isinstance(dtype, DType) else dtype)
    if bounds is None or bounds[0] <= value <= bounds[1]:  # (not an integer dtype, or fits)
        return value
    low, high = bounds
    if wraps or (low == 0 and -high <= value < 0):
        span = high - low + 1
        value %= span
        return value - span if value > high else value
    raise call_error(UsageError, f"value cannot be converted to type {dtype} without overflow: "
                     f"{value} is outside {low}..{high}", op, *inputs)  # fmt: skip


def int64_item(value: int, dtype, op: str, *inputs) -> int:
    """A Python int written into a tensor of `dtype` (item assignment, `tensor` data), as
    PyTorch reads it: as an int64 first (ValueError beyond), then as `python_int` takes it.

    >>> int64_item(-1, uint8, "setitem")
    255
    """
    if not -(1 << 63) <= value < 1 << 63:
        raise call_error(ArgumentError, f"Overflow when unpacking long long: {short_int(value)} "
                         f"is outside int64, for {op} in {dtype}", op, *inputs)  # fmt: skip
    return python_int(value, dtype, op, *inputs)


def number_array(value, dtype, op: str, *inputs) -> np.ndarray:
    """A Python number as a 0-d array of `dtype`, an int taken by `python_int`.

    >>> number_array(-1, uint8, "full"), number_array(2.5, float32, "full")
    (array(255, dtype=uint8), array(2.5, dtype=float32))
    """
    if type(value) is int:
        value = python_int(value, as_dtype(dtype), op, *inputs)
    elif isinstance(value, (float, complex)):
        value = python_float(value, as_dtype(dtype), op, *inputs)
    return np.asarray(value, dtype)


# the float dtypes whose range a finite Python float is checked against, with the least value
# beyond it (as PyTorch's: float16's from where it rounds to inf; bfloat16 takes any value)
_FLOAT_BEYOND = {float16: (65520.0, True), float32: (float(np.finfo(np.float32).max), False),
                 float64: (float(np.finfo(np.float64).max), False)}  # fmt: skip
_INFINITIES = (float("inf"), float("-inf"))


def python_float(value, dtype, op: str, *inputs):
    """The Python float or complex `value` as PyTorch takes it for `op`'s number in `dtype`:
    a value the dtype cannot hold (a complex number with an imaginary part in a real dtype,
    NaN, an infinity or a value out of range in an integer dtype, a finite value beyond
    float32's range in float32) raises RuntimeError (UsageError), where a cast would change
    it silently; a complex number whose imaginary part is 0 is its real part.

    >>> python_float(2.5, int64, "full"), python_float(1 + 0j, float32, "fill_")
    (2.5, 1.0)
    >>> python_float(1e39, float32, "fill_")
    Traceback (most recent call last):
    kiln.errors.UsageError: value cannot be converted to type float32 without overflow: 1e+39 ...
    """
    target = dtype.dtype if isinstance(dtype, DType) else dtype
    if type(value) is float and target.kind == "f":  # NOTE: the common case, kept short
        limit = _FLOAT_BEYOND.get(target)
        if limit is None or not abs(value) >= limit[0] or value in _INFINITIES:
            return value
    parts = (value.real, value.imag) if isinstance(value, complex) else (value,)
    fits, taken = True, value
    if target.kind != "c" and len(parts) == 2:
        fits, taken, parts = parts[1] == 0, parts[0], parts[:1]
    bounds = _INT_RANGES.get(target)
    limit, reached = _FLOAT_BEYOND.get(to_real(target), (None, False))
    for part in parts:
        if bounds is not None:
            fits = fits and bounds[0] <= part <= bounds[1]  # (NaN fits nowhere)
        elif limit is not None and abs(part) != np.inf:
            fits = fits and not (abs(part) >= limit if reached else abs(part) > limit)
    if not fits:
        raise call_error(UsageError, f"value cannot be converted to type {dtype} without "
                         f"overflow: {value} is outside its range", op, *inputs)  # fmt: skip
    return taken


def short_int(value: int) -> str:
    """An int for a message: its digits, or their first ones and its size in bits.

    >>> short_int(300), short_int(2**200)
    ('300', '160693804425... (an int of 201 bits)')
    """
    text = str(value)
    return text if len(text) <= 24 else f"{text[:12]}... (an int of {value.bit_length()} bits)"


def get_default_dtype() -> np.dtype:
    """The dtype of Python floats in tensors and of integer-to-float promotion (PyTorch's).

    >>> get_default_dtype()
    kiln.float32
    """
    return _PUBLIC[DEFAULT_FLOAT]


def set_default_dtype(dtype) -> None:
    """Sets the default float dtype (a float dtype), as PyTorch's `set_default_dtype`: the
    dtype of factories without `dtype=`, of Python floats and of `int / int`.

    >>> set_default_dtype(float64); get_default_dtype()
    kiln.float64
    >>> set_default_dtype(float32)
    """
    global DEFAULT_FLOAT
    dtype = as_dtype(dtype)
    if not is_float(dtype):
        raise ArgumentTypeError(
            f"only floating-point types are supported as the default type, got {dtype}"
        )
    DEFAULT_FLOAT = dtype


# -- PyTorch's promotion ---------------------------------------------------------------------
# torch.result_type: operands fall in three priority classes, tensors with dims, 0-d tensors
# and wrapped numbers (Python and NumPy scalars); a lower class only counts where its
# category (bool < integer < float) is higher than every operand's of the classes above.

_CATEGORY = {"b": 0, "u": 1, "i": 1, "f": 2, "V": 2, "c": 3}  # "V": bfloat16, the only such


def can_cast(from_, to) -> bool:
    """PyTorch's casting rule (`torch.can_cast`, and what in-place ops and `out=` accept):
    never to a lower category (complex > float > integer > bool), any width within one.

    >>> can_cast(int64, uint8), can_cast(float32, int64), can_cast(bfloat16, complex64)
    (True, False, True)
    """
    return _CATEGORY[np.dtype(from_).kind] <= _CATEGORY[np.dtype(to).kind]


def is_complex(dtype) -> bool:
    """complex64 or complex128.

    >>> is_complex(complex64), is_complex(float64)
    (True, False)
    """
    return np.dtype(dtype).kind == "c"


def to_complex(dtype: np.dtype) -> np.dtype:
    """The complex dtype of a float's precision (float64: complex128; float32, bfloat16:
    complex64), a complex dtype itself; float16's (PyTorch's complex32) kiln lacks."""
    if dtype.kind == "c":
        return dtype
    if dtype == float16:
        raise DTypeError("complex32 (the complex dtype of float16) is not supported by kiln")
    return complex128 if dtype == float64 else complex64


def to_real(dtype: np.dtype) -> np.dtype:
    """The float dtype of a complex dtype's parts (complex64: float32); others unchanged."""
    return {complex64: float32, complex128: float64}.get(dtype, dtype)


def default_complex() -> np.dtype:
    """The dtype of Python complex numbers: the complex dtype of the default float."""
    return to_complex(DEFAULT_FLOAT)


def _is_higher_float(a: np.dtype) -> bool:
    return a.kind == "f" or a == bfloat16


def _pair(a: np.dtype, b: np.dtype) -> np.dtype:
    """PyTorch's `promote_types` for two dtypes: across categories the higher one's dtype
    (`float16` with `int64` is `float16`), within one NumPy's (where PyTorch refuses, for
    uint16/32/64 beside signed ints, NumPy's answer stands)."""
    if a is b or a == b:
        return a
    if a in _STORAGE or b in _STORAGE:
        raise DTypeError(
            f"promotion of {a} and {b} is not supported: {a if a in _STORAGE else b}"
            " is a storage dtype (cast it first, as PyTorch's float8 types)"
        )
    ca, cb = _CATEGORY[a.kind], _CATEGORY[b.kind]
    if 3 in (ca, cb) and 2 in (ca, cb):  # PyTorch: float64 with complex64 is complex128
        c, f = (a, b) if ca == 3 else (b, a)
        return complex128 if f == float64 else c
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
    if higher.kind == "c":
        return higher
    if lower.kind == "c":  # a float keeps its precision: float64 with a 0-d complex64
        return to_complex(higher) if _is_higher_float(higher) else lower
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
    if isinstance(value, (complex, np.complexfloating)):
        return default_complex()
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
        if isinstance(v, (bool, int, float, complex)):
            d = _wrapped(v)
            wrapped = d if wrapped is None else _pair(wrapped, d)
            continue
        if isinstance(v, (np.dtype, DType)) or not hasattr(v, "dtype"):
            d, nd = as_dtype(v), 1
        else:
            d, nd = v.dtype, v.ndim
            if type(d) is DType:
                d = d.dtype
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
    return dtype if is_float(dtype) or dtype.kind == "c" else DEFAULT_FLOAT


def is_dtype(value) -> bool:
    """Whether `value` names a dtype (not a size): `view(dtype)` against `view(n)`."""
    if type(value) is DType:
        return True
    if isinstance(value, (np.dtype, type)) and not isinstance(value, (int, np.integer)):
        return value not in (int, float, bool) or isinstance(value, np.dtype)
    if isinstance(value, str):
        try:
            as_dtype(value)
        except TypeError:
            return False
        return True
    return False


_TYPE_NAMES = {
    "float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
    "int8": "Char", "uint8": "Byte", "int16": "Short", "int32": "Int", "int64": "Long",
    "bool": "Bool",
}  # fmt: skip


def scalar_name(dtype) -> str:
    """PyTorch's name of a dtype in its messages (`Long`, `Float`, `Bool`).

    >>> scalar_name(np.int64), scalar_name(bool_)
    ('Long', 'Bool')
    """
    name = np.dtype(dtype).name
    return _TYPE_NAMES.get(name) or _COMPLEX_NAMES.get(name, name)


_COMPLEX_NAMES = {"complex64": "ComplexFloat", "complex128": "ComplexDouble"}


_OTHER_NAMES = {**_COMPLEX_NAMES, "uint16": "UInt16", "uint32": "UInt32", "uint64": "UInt64"}


def type_name(dtype, cuda: bool = False) -> str:
    """PyTorch's type name of a dtype, with kiln's prefix: `kiln.FloatTensor`."""
    name = _TYPE_NAMES.get(np.dtype(dtype).name) or _OTHER_NAMES.get(np.dtype(dtype).name)
    if name is None:
        raise ArgumentTypeError(f"{dtype} has no PyTorch tensor type name")
    return f"kiln.{'cuda.' if cuda else ''}{name}Tensor"


def dtype_of_type(value):
    """The dtype of a type name (`'torch.FloatTensor'`, `'kiln.cuda.LongTensor'`) or dtype."""
    if isinstance(value, type) and isinstance(getattr(value, "dtype", None), DType):
        return value.dtype.dtype  # a legacy typed class: `kn.LongTensor`
    if isinstance(value, str) and value.endswith("Tensor"):
        kind = value.rsplit(".", 1)[-1][: -len("Tensor")]
        found = [d for d, n in {**_TYPE_NAMES, **_OTHER_NAMES}.items() if n == kind]
        if not found:
            raise ArgumentError(f"invalid type: {value!r}")
        return as_dtype(found[0])
    return as_dtype(value)


_PYTHON_SCALARS = frozenset((bool, int, float, complex))


def _listed_dtype(data) -> np.dtype | None:
    """PyTorch's `tensor` dtype of nested lists `data` whose values are not all Python
    scalars (NumPy scalars, 0-d arrays or tensors among them): each value's dtype (a Python
    float's is the default float, an int's int64) promoted by PyTorch's table, so
    `[1.0, np.float64(2)]` is float64 and `[1, np.float16(2)]` float16. None for Python
    scalars alone (and ragged data, which NumPy refuses). A rectangular nesting is walked a
    level at a time (`set(map(type, ...))`), a few percent of making the tensor.

    >>> _listed_dtype([[1.0, 2.0], [np.float64(3), 4.0]]), _listed_dtype([1.0, 2.0])
    (dtype('float64'), None)
    """
    depth = 0
    while True:
        level = data
        for _ in range(depth):
            level = itertools.chain.from_iterable(level)
        kinds = set(map(type, level))
        if kinds <= _PYTHON_SCALARS:
            return None
        if not kinds - {list, tuple}:
            depth += 1
            continue
        if list in kinds or tuple in kinds:
            return None
        break
    level = data
    for _ in range(depth):
        level = itertools.chain.from_iterable(level)
    out = None
    for v in level:
        d = scalar_dtype(v) if type(v) in _PYTHON_SCALARS else getattr(v, "dtype", None)
        if d is None:
            return None
        d = as_dtype(d)
        out = d if out is None else _pair(out, d)
    return out


def as_array(value, dtype=None) -> np.ndarray:
    """`value` (Python data, NumPy) as an array of a kiln dtype: Python floats in kiln's
    default float, Python scalars by PyTorch's rules (`scalar_dtype`).

    >>> as_array([1.0, 2.0]).dtype, as_array(3).dtype
    (dtype('float32'), dtype('int64'))
    """
    if dtype is not None:
        dtype = as_dtype(dtype)
        if dtype == np.float16:  # PyTorch's Half is made from a float: float64 rounds twice
            array = np.asarray(value)
            if array.dtype == np.float64:
                return array.astype(np.float32).astype(np.float16)
        return np.asarray(value, dtype=dtype)
    if isinstance(value, (bool, int, float, complex)) and not isinstance(value, np.generic):
        return np.asarray(value, dtype=scalar_dtype(value))
    array = np.asarray(value)
    wide = array.dtype == np.float64 or array.dtype == np.complex128
    if wide and not isinstance(value, (np.ndarray, np.generic)):
        listed = (_listed_dtype(value) if isinstance(value, (list, tuple))
                  else getattr(value, "dtype", None))  # fmt: skip
        if listed is None:  # nested Python floats (complex numbers): the default float
            array = array.astype(DEFAULT_FLOAT if array.dtype == np.float64 else default_complex())
        elif listed != array.dtype:  # NumPy's promotion differs from PyTorch's
            array = np.asarray(value, dtype=listed)
    if array.dtype.kind in "OUSV" and array.dtype != bfloat16 and array.dtype not in _STORAGE:
        raise DTypeError(f"cannot make a kiln value from {type(value).__name__} {value!r:.60}")
    as_dtype(array.dtype)
    return array


# -- kiln's dtype objects ------------------------------------------------------------------
# The public constants (`kn.float32`…) and `Tensor.dtype`/`Symbol.dtype` are `kn.dtype`
# objects, PyTorch's dtype attributes on one NumPy dtype each. Inside, kiln keeps the NumPy
# dtype (`as_dtype` unwraps): NumPy takes a `kn.dtype` anywhere it takes a dtype, through its
# `.dtype` attribute, and it compares and hashes as its NumPy dtype, so dicts keyed by either
# find both.


class DType:
    """A kiln dtype (`kn.float32`, `kn.int64`…): PyTorch's dtype attributes over one NumPy
    dtype, which NumPy accepts wherever it takes a dtype.

    >>> import kiln as kn
    >>> kn.float32, kn.float32.is_floating_point, kn.int8.is_signed, kn.float16.itemsize
    (kiln.float32, True, True, 2)
    >>> kn.zeros(2).dtype is kn.float32, kn.float32 == np.float32, np.zeros(1, kn.int8).dtype
    (True, True, dtype('int8'))
    """

    # NumPy's `kind`, `name`, `char` and `type` are kept here too: kiln's code asks them on
    # every op (the rest of NumPy's dtype attributes go through `__getattr__`).
    __slots__ = (
        "dtype", "_hash", "is_floating_point", "is_complex", "is_signed", "itemsize", "kind",
        "name", "char", "type",
    )  # fmt: skip

    def __init__(self, np_dtype):
        np_dtype = np.dtype(np_dtype)
        object.__setattr__(self, "dtype", np_dtype)
        object.__setattr__(self, "_hash", hash(np_dtype))
        floating = np_dtype.kind in "fV" and np_dtype not in (int4, uint4, int2, uint2)
        object.__setattr__(self, "is_floating_point", bool(floating))
        object.__setattr__(self, "is_complex", np_dtype.kind == "c")
        # float8_e8m0fnu is an exponent alone: no sign bit (PyTorch: not signed)
        signed = (floating and np_dtype != float8_e8m0fnu) or np_dtype.kind in "ic"
        signed = signed or np_dtype in (int4, int2)
        object.__setattr__(self, "is_signed", bool(signed))
        object.__setattr__(self, "itemsize", np_dtype.itemsize)
        for name in ("kind", "name", "char", "type"):
            object.__setattr__(self, name, getattr(np_dtype, name))

    def __setattr__(self, name, value):
        raise AttributeError(f"kiln dtypes are immutable (cannot set {name!r})")

    def __getattr__(self, name):  # NumPy's dtype attributes: kind, name, char, type…
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(object.__getattribute__(self, "dtype"), name)

    def __eq__(self, other):
        if other is self:
            return True
        if type(other) is DType:
            return False
        try:
            return self.dtype == other
        except TypeError:
            return NotImplemented

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self):
        return self._hash

    def __repr__(self):
        return f"kiln.{self.dtype.name}"

    def __str__(self):  # PyTorch's: str and repr alike ('torch.float32')
        return f"kiln.{self.dtype.name}"

    def __format__(self, spec: str) -> str:  # the bare name, as kiln's messages print dtypes
        return format(self.dtype.name, spec)

    def __reduce__(self):
        return (_dtype_named, (self.dtype.name,))

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def to_real(self):
        """The real dtype of the same width: itself for a real dtype (PyTorch's `to_real`).

        >>> import kiln as kn
        >>> kn.float64.to_real()
        kiln.float64
        """
        if self.is_complex:
            return public(np.dtype(np.float32 if self.itemsize == 8 else np.float64))
        return self

    def to_complex(self):
        """The complex dtype of twice the width: itself for a complex dtype (PyTorch's
        `to_complex`; float16 has none in kiln).

        >>> import kiln as kn
        >>> kn.float32.to_complex()
        kiln.complex64
        """
        if self.is_complex:
            return self
        return public(to_complex(self.dtype))


def _dtype_named(name: str) -> DType:
    """The kiln dtype of a NumPy name (unpickling)."""
    return public(as_dtype(name))


def public(np_dtype) -> DType:
    """The `kn.dtype` object of a NumPy dtype (or of a kiln dtype: itself)."""
    try:
        return _PUBLIC[np_dtype]
    except KeyError:
        return _PUBLIC[as_dtype(np_dtype)]


_PUBLIC = {d: DType(d) for d in _SHORT if d is not TUPLE}
_PUBLIC[TUPLE] = TUPLE  # a region node's type: internal, not a dtype of arrays
