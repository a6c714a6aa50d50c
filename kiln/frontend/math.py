"""Elementwise functions, PyTorch's names and semantics (its argument names, defaults, return
types and promotion), NumPy's where PyTorch has no such name; the reductions
(kiln/frontend/reductions.py) and matrix products (products.py) are importable from here."""

from __future__ import annotations

import math

import numpy as np

from .. import dtypes as dt
from ..eager.autograd import name_history
from ..eager.out import write_out
from ..errors import (
    ArgumentError,
    ArgumentTypeError,
    DTypeMismatchError,
    UnsupportedDTypeError,
    UsageError,
    call_error,
)
from ..graph.opdef import REGISTRY
from ..ops import bitwise as _bitwise  # noqa: F401 -- registers the bitwise ops
from . import core
from .core import call, half_in_float32, lift, promote
from .out import takes_out

__all__ = [
    "abs",
    "absolute",
    "add",
    "all",
    "amax",
    "amin",
    "any",
    "argmax",
    "argmin",
    "bitwise_and",
    "bitwise_left_shift",
    "bitwise_not",
    "bitwise_or",
    "bitwise_right_shift",
    "bitwise_xor",
    "cast",
    "ceil",
    "clamp",
    "clip",
    "cos",
    "div",
    "divide",
    "dot",
    "equal",
    "erf",
    "exp",
    "expm1",
    "floor",
    "floor_divide",
    "floordiv",
    "gelu",
    "greater",
    "greater_equal",
    "isfinite",
    "isnan",
    "leaky_relu",
    "less",
    "less_equal",
    "log",
    "log1p",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "logsumexp",
    "matmul",
    "max",
    "maximum",
    "mean",
    "min",
    "minimum",
    "mod",
    "mul",
    "multiply",
    "neg",
    "negative",
    "not_equal",
    "pow",
    "power",
    "prod",
    "relu",
    "remainder",
    "round",
    "rsqrt",
    "sigmoid",
    "sign",
    "sin",
    "softplus",
    "sqrt",
    "square",
    "sub",
    "subtract",
    "sum",
    "tanh",
    "true_divide",
    "trunc",
    "where",
]


def _numpy_name(name):
    """The NumPy ufunc the op's kernel is, as its lowering declares (None: not one ufunc)."""
    return getattr(REGISTRY[name].lowering, "ufunc", None)


def _make_unary(name):
    fn = core.unary_function(REGISTRY[name])
    np_name = _numpy_name(name)
    like = f"PyTorch's and NumPy's `{np_name}`" if np_name else f"PyTorch's `{name}`"
    expected_dtype = f"np.{np_name}(a).dtype" if np_name else "a.dtype"
    fn.__doc__ = f"""Elementwise {name}, as {like} (integers: see `kn.result_type`).

    >>> import kiln as kn, numpy as np
    >>> a = np.array([0.25, 0.5, 2.0], np.float32)
    >>> kn.{name}(a).shape, kn.{name}(a).dtype == {expected_dtype}
    ((3,), True)
    """
    fn.__name__ = fn.__qualname__ = name
    fn.__module__ = __name__  # made in core: its docstring is tested here
    return fn


def _make_binary(name):
    fn = core.binary_function(REGISTRY[name])
    np_name = _numpy_name(name)
    fn.__doc__ = f"""Elementwise {name} with broadcasting and PyTorch's promotion (NumPy's
    `{np_name}` on operands of one dtype).

    >>> import kiln as kn, numpy as np
    >>> a, b = np.array([1.0, 2.0], np.float32), np.array([[3.0], [4.0]], np.float32)
    >>> bool((kn.{name}(a, b) == np.{np_name}(a, b)).all())
    True
    """
    fn.__name__ = fn.__qualname__ = name
    fn.__module__ = __name__  # made in core: its docstring is tested here
    return fn


neg = _make_unary("neg")
abs = _make_unary("abs")
exp = _make_unary("exp")
log = _make_unary("log")
log1p = _make_unary("log1p")
expm1 = _make_unary("expm1")
sqrt = _make_unary("sqrt")
rsqrt = _make_unary("rsqrt")
_numpy_square = core.unary_function(REGISTRY["square"])
sin = _make_unary("sin")
cos = _make_unary("cos")
tanh = _make_unary("tanh")
sigmoid = _make_unary("sigmoid")
_numpy_sign = core.unary_function(REGISTRY["sign"])
floor = _make_unary("floor")
ceil = _make_unary("ceil")
round = _make_unary("round")
bitwise_not = _make_unary("bitwise_not")
logical_not = _make_unary("logical_not")
erf = _make_unary("erf")
isnan = _make_unary("isnan")
isfinite = _make_unary("isfinite")
_add = _make_binary("add")
_sub = _make_binary("sub")


def check_fits(value, dtype, op, *inputs):
    """Refuses a Python int `value` that `dtype` does not take, as PyTorch refuses a Scalar
    argument (alpha, fill_'s value) there: one an integer dtype cannot hold (RuntimeError; an
    unsigned dtype takes a negative down to minus its greatest, wrapped), one beyond 64 bits
    in any dtype (OverflowError). Its binary ops wrap their operand instead (`dt.python_int`).

    >>> import kiln as kn
    >>> check_fits(300, kn.int8, "fill_")
    Traceback (most recent call last):
    kiln.errors.UsageError: value cannot be converted to type int8 without overflow: 300 is ...
    """
    if type(value) is int:
        dt.python_int(value, dt.as_dtype(dtype), op, *inputs)


def _is_bool(value) -> bool:
    """Whether value is a bool: a Python or NumPy bool, or a tensor, Symbol or array of them."""
    if type(value) in (bool, np.bool_):
        return True
    return getattr(getattr(value, "dtype", None), "kind", None) == "b"


# float dtypes whose `a ± alpha * b` is computed wider and rounded once, as PyTorch's fused
# multiply-add: float32 in float64 (alpha as a float32; the product is exact there, the sum
# rounded twice, which agrees with one rounding but at rare ties), float16 and bfloat16 in
# float32 (alpha rounded to their dtype; exact product, the sum rounded to float32 and then to
# the dtype, as PyTorch's kernel). float64 rounds alpha * b first (no wider dtype).
_FUSED_ALPHA = {np.dtype(np.float32): np.float64, np.dtype(np.float16): np.float32,
                dt.bfloat16: np.float32}  # fmt: skip


def _fused_alpha(binary, a, b, alpha):
    """`binary(a, alpha * b)` of float32/float16/bfloat16 `a`, `b` rounded once (its grad_fn
    is `binary`'s, PyTorch's AddBackward0 or SubBackward0)."""
    wide = _FUSED_ALPHA[a.dtype]
    scale = float(np.asarray(alpha, np.float32 if wide is np.float64 else a.dtype))
    exact = binary(cast(a, wide), binary_mul(cast(b, wide), scale))
    name = "AddBackward0" if binary is _add else "SubBackward0"
    return name_history(cast(exact, a.dtype), name, a, b, saved={"_saved_alpha": alpha})


def _with_alpha(binary):
    """PyTorch's `add`/`sub`: `input ± alpha * other`, `alpha` a Python number that takes the
    operands' dtype (integral and bool results refuse a float alpha)."""

    def fn(input, other, *, alpha=1, out=None):  # noqa: A002
        if binary is _sub and (_is_bool(input) or _is_bool(other)):
            # (torch 2.13's messages)
            if _is_bool(input) and _is_bool(other):
                what = "two bool tensors is not supported. Use the `^` or `logical_xor()`"
            else:
                what = ("a bool tensor is not supported. If you are trying to invert a mask, "
                        "use the `~` or `logical_not()`")  # fmt: skip
            raise call_error(UnsupportedDTypeError, f"Subtraction, the `-` operator, with {what}"
                             " operator instead.", "sub", input, other)  # fmt: skip
        if type(alpha) is int and alpha == 1:
            return binary(input, other, out=out)
        op = binary.__name__
        a, b = promote(REGISTRY[op], input, other)
        if a.dtype.kind in "biu" and isinstance(alpha, (float, complex)):
            raise call_error(UsageError, "For integral input tensors, argument alpha must not "
                             "be a floating point number.", op, a, b)  # fmt: skip
        if type(alpha) in (bool, np.bool_) and a.dtype != np.bool_:
            raise call_error(UsageError, "Boolean alpha only supported for Boolean results.",
                             op, a, b)  # fmt: skip
        if isinstance(alpha, complex) and a.dtype.kind != "c":
            raise call_error(UsageError, "For non-complex input tensors, argument alpha must "
                             "not be a complex number.", op, a, b)  # fmt: skip
        if a.dtype == np.bool_:  # bools: alpha counts as true or false
            return binary(a, b if alpha else logical_and(b, False), out=out)
        check_fits(alpha, a.dtype, op, a, b)
        if a.dtype in _FUSED_ALPHA:
            if out is not None:
                return write_out(op, out, lambda: _fused_alpha(binary, a, b, alpha), (a, b))
            return _fused_alpha(binary, a, b, alpha)
        return binary(a, binary_mul(b, alpha), out=out)

    fn.__name__ = fn.__qualname__ = binary.__name__
    fn.__module__ = __name__
    sign, want = ("+", [7, 10]) if binary.__name__ == "add" else ("-", [-5, -6])
    fn.__doc__ = f"""`input {sign} alpha * other`, elementwise, with broadcasting and PyTorch's
    promotion: PyTorch's `{binary.__name__}(input, other, *, alpha=1, out=None)`.

    >>> import kiln as kn
    >>> kn.{binary.__name__}(kn.tensor([1, 2]), kn.tensor([3, 4]), alpha=2).tolist()
    {want}
    """
    return fn


add = _with_alpha(_add)
sub = _with_alpha(_sub)
mul = _make_binary("mul")
binary_mul = mul
div = _make_binary("div")
_numpy_pow = _make_binary("pow")
floordiv = _make_binary("floordiv")
mod = _make_binary("mod")
maximum = _make_binary("maximum")
minimum = _make_binary("minimum")
equal = _make_binary("equal")
not_equal = _make_binary("not_equal")
less = _make_binary("less")
less_equal = _make_binary("less_equal")
greater = _make_binary("greater")
greater_equal = _make_binary("greater_equal")
logical_and = _make_binary("logical_and")
logical_or = _make_binary("logical_or")
bitwise_and = _make_binary("bitwise_and")
bitwise_or = _make_binary("bitwise_or")
bitwise_xor = _make_binary("bitwise_xor")
bitwise_left_shift = _make_binary("bitwise_left_shift")
bitwise_right_shift = _make_binary("bitwise_right_shift")
for _fn, _sign in ((bitwise_and, "&"), (bitwise_or, "|"), (bitwise_xor, "^"),
                   (bitwise_left_shift, "<<"), (bitwise_right_shift, ">>")):  # fmt: skip
    _fn.__doc__ = f"""`a {_sign} b` elementwise on integers and bools (floats are refused), with
    broadcasting and PyTorch's promotion, as PyTorch's `{_fn.__name__}`.

    >>> import kiln as kn, numpy as np
    >>> a, b = np.array([12, 10], np.int32), np.array([[6], [1]], np.int32)
    >>> bool((kn.{_fn.__name__}(a, b) == (a {_sign} b)).all())
    True
    """
bitwise_not.__doc__ = """`~x` elementwise: the bits inverted on integers, logical not on bools
    (PyTorch's `bitwise_not`; floats are refused).

    >>> import kiln as kn, numpy as np
    >>> kn.bitwise_not(np.array([0, 5], np.int8)), kn.bitwise_not(np.array([True, False]))
    (array([-1, -6], dtype=int8), array([False,  True]))
    """


def square(input, out=None):
    """`input * input` elementwise; bools give int64, as PyTorch's `square` (NumPy's int8).

    >>> import kiln as kn
    >>> kn.square(kn.tensor([-3, 2])), kn.square(kn.tensor([True, False]))
    (tensor([9, 4]), tensor([1, 0]))
    """
    if getattr(input, "dtype", None) == np.bool_:
        input = cast(input, dt.int64)
    return _numpy_square(input, out)


def pow(input, exponent, out=None):  # noqa: A002
    """`input ** exponent` elementwise, with broadcasting and PyTorch's promotion. Integers:
    a negative integer exponent tensor gives 1 for a base of 1, -1 or 1 for -1 (by its
    parity), else 0; a negative Python int exponent of an integer tensor is refused
    (RuntimeError), as PyTorch's.

    >>> import kiln as kn
    >>> kn.pow(kn.tensor([2.0, 3.0]), 2), kn.pow(kn.tensor([1, -1, 2]), kn.tensor([-1, -3, -2]))
    (tensor([4., 9.]), tensor([ 1, -1,  0]))
    """
    if type(exponent) is int and exponent < 0 and getattr(input, "dtype", dt.float32).kind in "biu":
        raise UsageError(f"pow: Integers to negative integer powers are not allowed (a tensor "
                         f"of {input.dtype} to the power {exponent})")  # fmt: skip
    if type(exponent) is bool or getattr(exponent, "dtype", _FLOAT16) == _BOOL:
        if type(input) is bool or getattr(input, "dtype", _FLOAT16) == _BOOL:
            return _bool_pow(input, exponent, out=out)
    if type(exponent) is float and (exponent == 0.5 or exponent == -0.5):
        # NOTE: NumPy's power (the short path's) takes 1/2 as sqrt itself in float32 and
        # float64, and -1/2 as C's pow, as PyTorch takes both in float16; others are bound,
        # for `_power`'s sqrt and rsqrt. (A Tensor's array: its dtype compares fastest.)
        data = getattr(input, "_data", None)
        if (
            data is None
            or (exponent == -0.5 or data.dtype not in _SQRT_POWER)
            and (data.dtype != _FLOAT16)
        ):
            return _root_pow(input, exponent, out=out)
    return _numpy_pow(input, exponent, out)


_FLOAT16 = np.dtype(np.float16)
_BOOL = np.dtype(np.bool_)


@takes_out
def _bool_pow(input, exponent):  # noqa: A002
    """bool ** bool, as PyTorch's: a bool tensor to a Python bool power is a bool tensor
    (True: itself; False: all True), and the other pairs have no kernel."""
    if type(exponent) in (bool, np.bool_) and type(input) is not bool:  # a tensor of bools
        return cast(_numpy_pow(input, int(exponent), None), _BOOL)  # (0 or 1: bools)
    raise call_error(UnsupportedDTypeError, '"pow" not implemented for \'Bool\'', "pow",
                     input, exponent)  # fmt: skip


_SQRT_POWER = (np.dtype(np.float32), np.dtype(np.float64))


@takes_out
def _root_pow(input, exponent):  # noqa: A002
    return core.lift_and_bind(REGISTRY["pow"], input, exponent)


negative, absolute, subtract, multiply, divide, power = neg, abs, sub, mul, div, pow
true_divide, floor_divide, remainder = div, floordiv, mod


def _no_bool_kernel(name, x):
    """PyTorch's rounding functions have no bool kernel (NotImplementedError)."""
    if x.dtype.kind == "b":
        why = f"\"{name}_vml_cpu\" not implemented for 'Bool'"
        raise call_error(UnsupportedDTypeError, why, name, x)


def _keeping_integers(rounding):
    """floor and ceil leave integers as they are (a copy) and refuse bools, as PyTorch's."""

    def fn(input):
        if getattr(input, "dtype", np.float64).kind in "biu":
            (input,) = lift(input)
            _no_bool_kernel(rounding.__name__, input)
            return cast(input, input.dtype)
        return rounding(input)

    fn.__name__ = fn.__qualname__ = rounding.__name__
    fn.__doc__ = rounding.__doc__
    return fn


floor = takes_out(_keeping_integers(floor))  # NumPy's round keeps integers
ceil = takes_out(_keeping_integers(ceil))


@takes_out
def trunc(input):
    """`x` rounded toward zero (integers as they are), as PyTorch's `trunc`.

    >>> import kiln as kn, numpy as np
    >>> kn.trunc(np.array([-1.5, 1.5], np.float32))
    array([-1.,  1.], dtype=float32)
    """
    (input,) = lift(input)
    if not dt.is_float(input.dtype):
        _no_bool_kernel("trunc", input)
        if input.dtype.kind == "c":
            why = "trunc is not supported for complex inputs"
            raise call_error(UnsupportedDTypeError, why, "trunc", input)
        return cast(input, input.dtype)
    return where(less(input, 0), ceil(input), floor(input))


@takes_out
def logical_xor(input, other):
    """Elementwise exclusive or of the truth values, as bools.

    >>> import kiln as kn, numpy as np
    >>> kn.logical_xor(np.array([0, 1, 2]), np.array([1, 1, 0]))
    array([ True, False,  True])
    """
    return not_equal(cast(input, dt.bool_), cast(other, dt.bool_))


@takes_out
def sign(input):
    """Elementwise sign: -1, 0 or 1 (0 for -0.0 and 0.0), as PyTorch's `sign`, where NaN gives
    0. (The `sign` op is NumPy's, which gives NaN there; graphs kiln builds use it as it is.)

    >>> import kiln as kn, numpy as np
    >>> kn.sign(np.array([-2.0, 0.0, 3.0, np.nan], np.float32))
    array([-1.,  0.,  1.,  0.], dtype=float32)
    """
    (input,) = lift(input)
    if input.dtype == np.bool_:  # PyTorch's: a bool is its own sign
        return core.call("cast", input, dtype=input.dtype)
    s = _numpy_sign(input)
    return where(isnan(input), 0, s) if dt.is_float(input.dtype) else s


_NOT_GIVEN = object()


@takes_out
def where(condition, input=_NOT_GIVEN, other=_NOT_GIVEN):  # noqa: A002
    """`a` where `cond` is true, else `b` (broadcasting), as PyTorch's `where` (a and b
    promoted as by `kn.result_type`). With the condition alone, `nonzero(condition,
    as_tuple=True)`, as PyTorch's.

    >>> import kiln as kn, numpy as np
    >>> kn.where(np.array([True, False]), 1.0, np.float32(-1.0))
    array([ 1., -1.], dtype=float32)
    >>> kn.where(kn.tensor([[0, 3], [5, 0]]))
    (tensor([0, 1]), tensor([1, 0]))
    """
    if input is _NOT_GIVEN and other is _NOT_GIVEN:
        from .torch_index import nonzero  # NOTE: torch_index builds on this module

        return nonzero(condition, as_tuple=True)
    if input is _NOT_GIVEN or other is _NOT_GIVEN:
        raise ArgumentTypeError(
            "where() takes the condition alone, or the condition, input and other"
        )
    (condition,) = lift(condition, context=(input, other))
    if condition.dtype != dt.bool_:  # PyTorch's rule (NumPy would take any truth value)
        raise call_error(
            DTypeMismatchError,
            "where expected condition to be a boolean tensor, but got a tensor with dtype "
            f"{dt._TYPE_NAMES.get(np.dtype(condition.dtype).name, condition.dtype)}",
            "where",
            condition,
        )
    input, other = promote(REGISTRY["where"], input, other, context=(condition,))
    return call("where", condition, input, other)


def cast(x, dtype):
    """`x` converted to `dtype` (NumPy's `astype`, PyTorch's `to(dtype)`).

    >>> import kiln as kn, numpy as np
    >>> kn.cast(np.array([1.7, -1.7]), kn.int32)
    array([ 1, -1], dtype=int32)
    """
    (x,) = lift(x)
    return call("cast", x, dtype=dt.as_dtype(dtype))


relu = _make_unary("relu")
relu.__doc__ = """`maximum(x, 0)`; its gradient is 1 where x > 0, else 0 (at 0 too, as PyTorch's).

    >>> import kiln as kn, numpy as np
    >>> kn.relu(np.array([-1.0, 2.0], np.float32))
    array([0., 2.], dtype=float32)
    """


def leaky_relu(x, negative_slope: float = 0.01):
    """`x` where positive, else `negative_slope * x` (PyTorch's default slope).

    >>> import kiln as kn, numpy as np
    >>> kn.leaky_relu(np.array([-1.0, 2.0], np.float32), 0.1)
    array([-0.1,  2. ], dtype=float32)
    """
    (x,) = lift(x)
    out = where(greater(x, 0), x, mul(x, negative_slope))
    saved = {"_saved_self": x, "_saved_negative_slope": negative_slope}
    return name_history(out, "LeakyReluBackward0", x, saved=saved)  # PyTorch's node


def softplus(x, beta: float = 1.0):
    """`log(1 + exp(beta x)) / beta`, computed without overflow.

    >>> import kiln as kn, numpy as np
    >>> kn.softplus(np.array([0.0, 100.0], np.float32))
    array([  0.6931472, 100.       ], dtype=float32)
    """
    (x,) = lift(x)
    return call("softplus", x, beta=float(beta))


def gelu(input, approximate: str = "none"):
    """GELU: `x * Φ(x)`, exactly through erf, or PyTorch's tanh approximation. Half inputs
    are computed in float32 and rounded once; float16's (and bfloat16's tanh approximation)
    by the float32 formulas of PyTorch's CPU kernels, their gradients too (`with_grad`).

    >>> import kiln as kn, numpy as np
    >>> kn.gelu(np.array([0.0, 1.0], np.float32))
    array([0.       , 0.8413447], dtype=float32)
    """
    (input,) = lift(input)
    if approximate not in ("none", "tanh"):
        raise ArgumentError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    if not (dt.is_float(input.dtype) or input.dtype.kind == "c"):  # PyTorch's kernel refuses
        message = f"\"GeluKernelImpl\" not implemented for '{dt.scalar_name(input.dtype)}'"
        raise call_error(UnsupportedDTypeError, message, "gelu", input)
    if input.dtype == np.float16 or (approximate == "tanh" and input.dtype == dt.bfloat16):
        from .half_formulas import gelu32  # NOTE: here: that module is written with these ops

        return half_in_float32(lambda x: gelu32(x, approximate))(input)
    out = half_in_float32(_gelu)(input, approximate)
    saved = {"_saved_self": input, "_saved_approximate": approximate}
    return name_history(out, "GeluBackward0", input, saved=saved)


def _gelu(x, approximate):
    if approximate == "none":
        return mul(mul(x, 0.5), add(erf(mul(x, 1 / math.sqrt(2))), 1.0))
    inner = mul(add(x, mul(pow(x, 3), 0.044715)), math.sqrt(2 / math.pi))
    return mul(mul(x, 0.5), add(tanh(inner), 1.0))


@takes_out
def clip(input, min=None, max=None):  # noqa: A002 — NumPy's and PyTorch's argument names
    """`x` limited to `[min, max]` (either may be None, not both), as PyTorch's `clamp` (NaN
    stays NaN).

    Gradients as PyTorch's `clamp`: x's is 1 where min <= x <= max (bounds included), a
    tensor bound's is 1 where it is the value (x below min, x above max).

    >>> import kiln as kn, numpy as np
    >>> kn.clip(np.array([-2.0, 0.5, 2.0], np.float32), -1, 1)
    array([-1. ,  0.5,  1. ], dtype=float32)
    """
    (input,) = lift(input)
    if min is None and max is None:  # PyTorch's RuntimeError (NumPy's clip returned x)
        raise call_error(UsageError, "torch.clamp: At least one of 'min' or 'max' must not be "
                         "None", "clamp", input)  # fmt: skip
    if min is not None and max is not None and {_kind(min), _kind(max)} == {"tensor", "number"}:
        _refuse_mixed_bounds(input, min, max)
    # NOTE: a missing bound is the result dtype's own extreme (an array, not a weak scalar),
    # which changes neither the values, the result dtype, nor where x takes the gradient; the
    # result dtype is x's and the given bounds' (a bool x with min=3 gives 3, not True)
    given = [b for b in (min, max) if b is not None]
    input, *given = promote(REGISTRY["clip"], input, *given)
    lo = _extreme(input.dtype, "min") if min is None else given[0]
    hi = _extreme(input.dtype, "max") if max is None else given[-1]
    return call("clip", *promote(REGISTRY["clip"], input, lo, hi))


clamp = clip


def _kind(bound) -> str:
    """ "tensor" for a PyTorch-style tensor of 1 or more dims (eager, or a value of a function
    kn.compile traces), "number" for a Python or NumPy number, else "other": a 0-d tensor
    (PyTorch reads it as a number beside one, as a tensor beside a tensor), an array, or a
    graph-mode Symbol (kiln's graphs clip as NumPy does, by any mix of bounds)."""
    if isinstance(bound, (bool, int, float, np.generic)):
        return "number"
    if isinstance(bound, core.Symbol):
        from .functionalize import in_compiled_trace  # NOTE: lazy: it builds on this module

        return "tensor" if bound.ndim > 0 and in_compiled_trace(bound) else "other"
    if isinstance(bound, core.Tensor) or type(bound) in core.dispatch.tensor_types:
        return "tensor" if bound.ndim > 0 else "other"
    return "other"


def _refuse_mixed_bounds(x, lo, hi) -> None:
    """PyTorch's TypeError for a tensor bound beside a number (its clamp's signatures take
    two numbers or two tensors)."""
    kinds = ", ".join("Tensor" if _kind(b) != "number" else type(b).__name__ for b in (x, lo, hi))
    raise ArgumentTypeError(
        f"clamp() received an invalid combination of arguments - got ({kinds}): min and max "
        "are two numbers or two tensors (or None)"
    )


def _extreme(dtype, side: str) -> np.ndarray:
    """The least (`side` "min") or greatest value of `dtype`: -inf or inf for floats."""
    if dt.is_float(dtype):
        value = -np.inf if side == "min" else np.inf
    elif dtype.kind == "b":
        value = side == "max"
    else:
        value = getattr(np.iinfo(dtype), side)
    return np.asarray(value, dtype)


# The reductions (kiln/frontend/reductions.py) and matrix products (kiln/frontend/products.py),
# still importable from here.
from .products import dot, matmul, refuse_bool, same_dtype_operands  # noqa: E402, F401
from .reductions import (  # noqa: E402, F401
    _axes,
    _dim,
    _floating,
    _reduce,
    all,
    amax,
    amin,
    any,
    argmax,
    argmin,
    logsumexp,
    max,
    mean,
    min,
    prod,
    sum,
)
