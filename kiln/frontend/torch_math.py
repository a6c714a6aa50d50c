"""PyTorch's math functions beyond the core set: `mm`/`bmm`, closeness tests, rounding
division, `lerp`, `logaddexp`, trigonometric and hyperbolic functions, scans (`cumsum`,
`cummax`...) and sorting (`sort`, `argsort`, `topk`), with PyTorch's signatures and dtypes."""

from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from .. import shapes as sh
from ..array_types import return_types
from ..eager import dispatch
from ..eager.autograd import name_history
from ..eager.tensor import Tensor
from ..errors import (
    ArgumentTypeError,
    DTypeError,
    DTypeMismatchError,
    ShapeError,
    UnsupportedDTypeError,
    UsageError,
    call_error,
)
from ..graph.core import Symbol
from ..graph.opdef import REGISTRY
from ..ops.elementwise_torch import trunc
from ..ops.multi import elements
from . import core
from . import math as m
from .autocast import autocast_op
from .core import call, lift
from .out import takes_out
from .reductions import require_floating
from .result_layouts import array_layout, c_ordered, iterated, keep_like, laid_out
from .torch_shape import dim_arg, static_dim

__all__ = [
    "acos",
    "acosh",
    "addcdiv",
    "addcmul",
    "addmm",
    "allclose",
    "argsort",
    "asin",
    "asinh",
    "atan",
    "atan2",
    "atanh",
    "baddbmm",
    "bmm",
    "copysign",
    "cosh",
    "cummax",
    "cummin",
    "cumprod",
    "cumsum",
    "div",
    "divide",
    "eq",
    "equal",
    "exp2",
    "fmod",
    "ge",
    "gt",
    "isclose",
    "le",
    "lerp",
    "log10",
    "log2",
    "logaddexp",
    "logcumsumexp",
    "lt",
    "mm",
    "ne",
    "remainder",
    "sinh",
    "sort",
    "tan",
    "topk",
]

# PyTorch's elementwise comparisons by their short names (`equal` is the whole-tensor test).
eq, ne, lt, le, gt, ge = m.equal, m.not_equal, m.less, m.less_equal, m.greater, m.greater_equal
remainder = m.mod


def _floating(x):
    """`x` as a float tensor: integers and bools become the default float (PyTorch's rule for
    functions that are defined on floats); complex values stay (the op takes them or refuses)."""
    (x,) = lift(x)
    return x if dt.is_differentiable(x.dtype) else call("cast", x, dtype=dt.DEFAULT_FLOAT)


def coefficient(value, dtype):
    """A Python scalar `beta`/`alpha` as PyTorch reads it for a tensor of `dtype`: truncated
    to an int for integers, made a bool for bools (so an int64 `addmm` stays int64).

    >>> import kiln as kn
    >>> coefficient(2.9, kn.int64), coefficient(3, kn.bool), coefficient(2, kn.float32)
    (2, True, 2.0)
    """
    dtype = dt.as_dtype(dtype)
    if dtype == np.bool_:
        return bool(value)
    if dt.is_complex(dtype):  # a complex tensor takes a complex coefficient as it is
        return complex(value)
    return int(value) if dt.is_int(dtype) else float(value)


# -- matrix products -------------------------------------------------------------------------


@takes_out
@autocast_op("lower")
def mm(input, mat2):  # noqa: A002 — PyTorch's argument names
    """The product of two matrices (2-D only; `matmul` batches and broadcasts).

    >>> import kiln as kn
    >>> tuple(kn.mm(kn.ones(2, 3), kn.ones(3, 4)).shape)
    (2, 4)
    """
    a, b = m.same_dtype_operands("mm", input, mat2)
    if a.ndim != 2 or b.ndim != 2:
        raise ShapeError(f"mm: both arguments must be matrices, got {a.ndim}-d and {b.ndim}-d")
    return call("matmul", a, b)


@takes_out
@autocast_op("lower")
def bmm(input, mat2):  # noqa: A002
    """Batched matrix products of two 3-D tensors with the same batch size (no broadcasting).

    >>> import kiln as kn
    >>> tuple(kn.bmm(kn.ones(5, 2, 3), kn.ones(5, 3, 4)).shape)
    (5, 2, 4)
    """
    a, b = m.same_dtype_operands("bmm", input, mat2)
    if a.ndim != 3 or b.ndim != 3:
        raise ShapeError(f"bmm: both arguments must be 3-D, got {a.ndim}-d and {b.ndim}-d")
    if isinstance(a.shape[0], int) and isinstance(b.shape[0], int) and a.shape[0] != b.shape[0]:
        raise ShapeError(f"bmm: batch sizes differ: {a.shape[0]} and {b.shape[0]}")
    sh.require_equal(a.shape[0], b.shape[0], "bmm: batch sizes differ")
    return call("matmul", a, b)


def unread_when_alpha_is_zero(alpha, *operands, complex_too: bool = True) -> tuple:
    """The product's `operands`, zeros where `alpha` is 0 (their gradient 0): PyTorch's
    addmm, addmv and addbmm of float32 and float64 (and complex, `complex_too`: not addmv's)
    call BLAS, which then reads neither (NaN or inf in them does not reach the result,
    `beta * input` does; its half-precision kernels, baddbmm and addr do read them).

    >>> import kiln as kn
    >>> unread_when_alpha_is_zero(0, kn.tensor([float("nan"), 2.0]))
    (tensor([0., 0.]),)
    """
    kind = operands[0].dtype
    blas = kind in (dt.float32, dt.float64) or (complex_too and dt.is_complex(kind))
    if alpha != 0 or not blas:
        return operands
    return tuple(m.mul(m.where(m.isfinite(v), v, 0), 0) for v in operands)


@takes_out
@autocast_op("lower")
def addmm(input, mat1, mat2, *, beta=1, alpha=1):  # noqa: A002
    """`beta * input + alpha * (mat1 @ mat2)` in one GEMM (`input` broadcasts to the product's
    shape; with `beta=0` it is ignored, NaNs included, as PyTorch does).

    >>> import kiln as kn
    >>> kn.addmm(kn.ones(2, 2), kn.ones(2, 3), kn.ones(3, 2), beta=0.5, alpha=2).tolist()
    [[6.5, 6.5], [6.5, 6.5]]
    """
    x, a, b = lift(input, mat1, mat2)
    if not (x.dtype == a.dtype == b.dtype):
        raise DTypeMismatchError(
            f"addmm: expected one dtype, got {x.dtype}, {a.dtype} and {b.dtype}"
        )
    if a.ndim != 2 or b.ndim != 2:
        raise ShapeError(f"addmm: mat1 and mat2 must be matrices, got {a.ndim}-d and {b.ndim}-d")
    if x.dtype == dt.bool_:
        m.refuse_bool("addmm_impl_cpu_", x, a, b)
    a, b = unread_when_alpha_is_zero(alpha, a, b)
    if x.dtype == dt.float16:  # as PyTorch's: accumulated in float32, rounded once
        wide = (m.cast(v, dt.float32) for v in (x, a, b))
        return m.cast(call("addmm", *wide, beta=float(beta), alpha=float(alpha)), x.dtype)
    beta, alpha = coefficient(beta, x.dtype), coefficient(alpha, x.dtype)
    if dt.is_complex(x.dtype):  # the fused op is real: the product, scaled, then added
        product = m.matmul(a, b)
        product = product if alpha == 1 else m.mul(product, alpha)
        if beta == 0:  # input is ignored (it only has to broadcast, as in PyTorch)
            sh.broadcast_shapes(x.shape, product.shape)
            return product
        return m.add(product, x if beta == 1 else m.mul(x, beta))
    return call("addmm", x, a, b, beta=beta, alpha=alpha)


@takes_out
@autocast_op("lower")
def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):  # noqa: A002
    """`beta * input + alpha * (batch1 @ batch2)` for 3-D batches (`input` broadcasts to the
    product's shape; with `beta=0` it is ignored, NaNs included), as PyTorch's `baddbmm`.

    >>> import kiln as kn
    >>> kn.baddbmm(kn.ones(1, 2, 2), kn.ones(3, 2, 4), kn.ones(3, 4, 2), alpha=0.5).shape
    kiln.Size([3, 2, 2])
    """
    x, a, b = lift(input, batch1, batch2)
    if not (x.dtype == a.dtype == b.dtype):
        raise DTypeMismatchError(
            f"baddbmm: expected one dtype, got {x.dtype}, {a.dtype} and {b.dtype}"
        )
    if x.dtype in (dt.bfloat16, dt.float16):  # as PyTorch's: in float32, rounded once
        wide = (m.cast(v, dt.float32) for v in (x, a, b))
        out = m.cast(baddbmm(*wide, beta=beta, alpha=alpha), x.dtype)
        return name_history(out, "BaddbmmBackward0", x, a, b)
    beta, alpha = coefficient(beta, x.dtype), coefficient(alpha, x.dtype)
    product = bmm(a, b)
    if alpha != 1:
        product = m.mul(product, alpha)
    if beta == 0:  # input is ignored (it only has to broadcast, as in PyTorch)
        sh.broadcast_shapes(x.shape, product.shape)
        out = product
    else:
        out = m.add(product, x if beta == 1 else m.mul(x, beta))
    return name_history(out, "BaddbmmBackward0", x, a, b)


@takes_out
def addcmul(input, tensor1, tensor2, *, value=1):  # noqa: A002
    """`input + value * tensor1 * tensor2`, as PyTorch's `addcmul` (which optimizers use).

    >>> import kiln as kn
    >>> kn.addcmul(kn.ones(2), kn.tensor([1.0, 2.0]), kn.tensor([3.0, 4.0]), value=0.5)
    tensor([2.5000, 5.0000])
    """
    t1, t2 = lift(tensor1, tensor2)
    if _half_triple(input, t1, t2):  # PyTorch's kernel: in float32, rounded once
        from .half_formulas import fma32  # (its compiler fuses the last product into the sum)

        x, a, b = (m.cast(v, dt.float32) for v in lift(input, t1, t2))
        return m.cast(fma32(m.mul(a, float(np.float32(value))), b, x), t1.dtype)
    if isinstance(value, float) and not any(
        dt.is_float(t.dtype) or dt.is_complex(t.dtype) for t in (t1, t2)
    ):
        value = int(value)  # PyTorch's: value is a scalar of the integer dtype
    # (value * t1) * t2, rounded in PyTorch's order
    return m.add(input, m.mul(t1 if value == 1 else m.mul(t1, value), t2))


@takes_out
def addcdiv(input, tensor1, tensor2, *, value=1):  # noqa: A002
    """`input + value * tensor1 / tensor2`, as PyTorch's `addcdiv` (which optimizers use).

    >>> import kiln as kn
    >>> kn.addcdiv(kn.ones(2), kn.tensor([1.0, 2.0]), kn.tensor([4.0, 4.0]), value=-2)
    tensor([0.5000, 0.0000])
    """
    if all(_integral(t) for t in (tensor1, tensor2)):  # (bool included)
        raise call_error(UsageError, "Integer division with addcdiv is no longer supported, "
                         "and in a future release addcdiv will perform a true division of "
                         "tensor1 and tensor2; use (input + value * tensor1 / tensor2)",
                         "addcdiv", tensor1, tensor2)  # fmt: skip
    if _half_triple(input, tensor1, tensor2):  # PyTorch's kernel: in float32, rounded once
        x, a, b = lift(input, tensor1, tensor2)
        half = a.dtype
        x, a, b = (m.cast(v, dt.float32) for v in (x, a, b))
        return m.cast(m.add(x, div(m.mul(a, float(value)), b)), half)
    quotient = div(tensor1 if value == 1 else m.mul(tensor1, value), tensor2)
    return m.add(input, quotient)


def _integral(t) -> bool:
    """Whether `t` is an integer or bool tensor (a Python number: by its type)."""
    dtype = getattr(t, "dtype", None)
    if dtype is None:
        return isinstance(t, int)
    return not (dt.is_float(dtype) or dt.is_complex(dtype))


def _half_triple(*args) -> bool:
    """Whether addcmul's/addcdiv's operands are all tensors of one half-precision dtype."""
    dtypes = {getattr(a, "dtype", None) for a in args}
    return len(dtypes) == 1 and dtypes <= {dt.float16, dt.bfloat16}


# -- closeness ---------------------------------------------------------------------------------


def isclose(input, other, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False):  # noqa: A002
    """Elementwise `|input - other| <= atol + rtol * |other|`, equal infinities close, NaN
    close to NaN only with `equal_nan` (PyTorch's `isclose`; the dtypes must agree).

    >>> import kiln as kn
    >>> kn.isclose(kn.tensor([1.0, 2.0]), kn.tensor([1.0 + 1e-7, 2.1]))
    tensor([ True, False])
    """
    a, b = lift(input, other)
    if a.dtype != b.dtype:
        raise DTypeError(f"isclose: {a.dtype} did not match {b.dtype}")
    close = m.equal(a, b)
    if a.dtype == np.bool_:
        return close
    inexact = dt.is_float(a.dtype) or dt.is_complex(a.dtype)  # complex: |a - b| is real
    if equal_nan and inexact:
        close = m.logical_or(close, m.logical_and(m.isnan(a), m.isnan(b)))
    if not inexact:  # integers: the tolerance in floating point
        a, b = (call("cast", v, dtype=dt.DEFAULT_FLOAT) for v in (a, b))
    error = m.abs(m.sub(a, b))
    within = m.less_equal(error, m.add(m.abs(m.mul(b, float(rtol))), float(atol)))
    return m.logical_or(close, m.logical_and(m.isfinite(error), within))


def _all(mask):
    """Whether every element of a bool tensor holds: a 0-d bool (a Symbol in graph mode)."""
    misses = call("cast", m.logical_not(mask), dtype=np.dtype(np.int64))
    axes = tuple(range(misses.ndim))
    return m.equal(call("reduce_sum", misses, axes=axes, keepdims=False), 0)


def _python_bool(value):
    return value if isinstance(value, Symbol) else bool(value)


def allclose(input, other, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False):  # noqa: A002
    """Whether every element is `isclose`: a Python bool (in graph mode, a 0-d bool Symbol).

    >>> import kiln as kn
    >>> kn.allclose(kn.tensor([1.0, 2.0]), kn.tensor([1.0, 2.0 + 1e-6]))
    True
    """
    return _python_bool(_all(isclose(input, other, rtol, atol, equal_nan)))


def equal(input, other):  # noqa: A002
    """Whether the tensors have the same shape and elements: a Python bool (in graph mode, a
    0-d bool Symbol when the shapes may agree). Elementwise equality is `eq`.

    >>> import kiln as kn
    >>> kn.equal(kn.tensor([1, 2]), kn.tensor([1, 2])), kn.equal(kn.ones(2), kn.ones(3))
    (True, False)
    """
    a, b = lift(input, other)
    if len(a.shape) != len(b.shape) or any(
        isinstance(p, int) and isinstance(q, int) and p != q for p, q in zip(a.shape, b.shape)
    ):
        return False
    if tuple(a.shape) != tuple(b.shape):
        raise ShapeError(
            f"equal: shapes {sh.format_shape(a.shape)} and {sh.format_shape(b.shape)} may "
            "differ when it runs; compare tensors whose shapes agree when the graph is built"
        )
    return _python_bool(_all(m.equal(a, b)))


# -- elementwise ---------------------------------------------------------------------------------


@takes_out
def div(input, other, *, rounding_mode=None):  # noqa: A002
    """`input / other`: true division (`rounding_mode=None`), rounded toward zero (`"trunc"`,
    C's integer division) or down (`"floor"`, Python's `//`), as PyTorch's `div`.

    >>> import kiln as kn
    >>> x = kn.tensor([-7, 7])
    >>> kn.div(x, 2, rounding_mode="trunc"), x.div(2, rounding_mode="floor")
    (tensor([-3,  3]), tensor([-4,  3]))
    >>> kn.div(kn.tensor([-7.0, 7.0]), 2).tolist()
    [-3.5, 3.5]
    """
    if rounding_mode is None:
        return m.div(input, other)
    if rounding_mode == "floor":
        return m.floordiv(input, other)
    if rounding_mode != "trunc":
        raise UsageError(  # PyTorch's RuntimeError
            f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
            f"{rounding_mode!r}"
        )
    found = dispatch.opmath_operands(REGISTRY["floordiv"], (input, other))
    if found is not None:  # PyTorch's: float16/bfloat16 `t` by a float in float32, rounded once
        t, s, _ = found
        return m.cast(div(m.cast(t, np.float32), s, rounding_mode="trunc"), t.dtype)
    a, b = lift(input, other, op=REGISTRY["floordiv"])
    q = m.floordiv(a, b)
    if dt.is_float(q.dtype):
        if not any(isinstance(v, Tensor) and v.requires_grad for v in (a, b)):
            return trunc(m.div(a, b))
        # PyTorch's gradient: zero for both (trunc's zero through div's 1/b would be NaN
        # where b is 0): the quotient of detached operands, joined to them by a `where` that
        # never picks them
        a_, b_ = (v.detach() if isinstance(v, Tensor) else v for v in (a, b))
        value = trunc(m.div(a_, b_))
        return m.where(np.False_, m.add(a, b), value)
    # floor division rounds the other way where the signs differ and it is not exact (the
    # signs of the operands in the result dtype: a negative int8 divisor of uint8 wraps)
    a, b = (v if v.dtype == q.dtype else call("cast", v, dtype=q.dtype) for v in (a, b))
    inexact = m.not_equal(m.mod(a, b), 0)
    signs_differ = m.not_equal(m.less(a, 0), m.less(b, 0))
    return m.add(q, call("cast", m.logical_and(inexact, signs_differ), dtype=q.dtype))


divide = div


@takes_out
def fmod(input, other):  # noqa: A002
    """The remainder of division rounded toward zero (the sign of `input`), as C's `fmod`;
    `remainder` has the sign of `other`.

    >>> import kiln as kn
    >>> kn.fmod(kn.tensor([-3, 3]), 2), kn.remainder(kn.tensor([-3, 3]), 2)
    (tensor([-1,  1]), tensor([1, 1]))
    """
    return core.lift_and_bind(REGISTRY["fmod"], input, other)


@takes_out
def copysign(input, other):  # noqa: A002
    """`|input|` with the sign of `other` (-0.0 counts as negative); integers give floats.

    >>> import kiln as kn
    >>> kn.copysign(kn.tensor([1.0, -2.0]), -0.0)
    tensor([-1., -2.])
    """
    # NOTE: promote computes integers and bools in the default float, after PyTorch's
    # promotion of both (a uint8 x with float16 signs gives float16)
    return core.lift_and_bind(REGISTRY["copysign"], input, other)


@takes_out
def atan2(input, other):  # noqa: A002
    """The angle of the point (`other`, `input`): `atan(input / other)` in the right quadrant.

    >>> import kiln as kn
    >>> round(kn.atan2(kn.tensor([1.0]), kn.tensor([-1.0])).item(), 4)
    2.3562
    """
    a, b = lift(input, other)
    if not (dt.is_float(a.dtype) or dt.is_float(b.dtype)):
        a, b = _floating(a), _floating(b)
    return core.lift_and_bind(REGISTRY["atan2"], a, b)


@takes_out
def lerp(input, end, weight):  # noqa: A002
    """`input + weight * (end - input)`, computed as PyTorch does (from `end` when
    `|weight| >= 0.5`, so `weight=1` gives `end` exactly).

    >>> import kiln as kn
    >>> kn.lerp(kn.tensor([0.0, 10.0]), kn.tensor([10.0, 20.0]), 0.5).tolist()
    [5.0, 15.0]
    """
    a, b = lift(input, end)
    _same_dtype(a, b, "end")
    if isinstance(weight, (Symbol, Tensor)) and weight.ndim:  # (a 0-d one is taken as is)
        _same_dtype(a, weight, "weight")
    require_floating("lerp", a, "\"lerp_kernel_scalar\" not implemented for '{dtype}'",
                     UnsupportedDTypeError)  # fmt: skip
    if isinstance(weight, complex) and a.dtype.kind != "c":  # (PyTorch's Scalar check)
        if weight.imag:
            raise call_error(UsageError, f"value cannot be converted to type {a.dtype} "
                             "without overflow", "lerp", a, b)  # fmt: skip
        weight = weight.real
    if a.dtype in (dt.float16, dt.bfloat16) and a.dtype == b.dtype:
        return _lerp_half(a, b, weight)
    diff = m.sub(b, a)
    if isinstance(weight, (int, float)):
        if abs(weight) < 0.5:
            out = m.add(a, m.mul(diff, weight))
        else:  # (laid out as PyTorch's lerp, from a and b: not b's)
            out = iterated(m.sub(b, m.mul(diff, 1 - weight)), a, b)
        saved = {"_saved_weight": weight}
        return name_history(out, "LerpBackward0", a, b, saved=saved)  # PyTorch's node
    (w,) = lift(weight, context=(a,))
    low = m.less(m.abs(w), 0.5)
    out = m.where(low, m.add(a, m.mul(w, diff)), m.sub(b, m.mul(diff, m.sub(1, w))))
    return name_history(iterated(out, a, b, w), "LerpBackward1", a, b, w)


# PyTorch's C++ names of dtypes, as its "expected dtype" messages write them
_CPP_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half",
              "bfloat16": "c10::BFloat16", "complex64": "c10::complex<float>",
              "complex128": "c10::complex<double>", "int64": "long int", "int32": "int",
              "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
              "bool": "bool"}  # fmt: skip


def _same_dtype(a, b, what: str) -> None:
    """Refuses lerp's `end` or `weight` b of another dtype than its input a, as PyTorch's
    lerp (no promotion there)."""
    if b.dtype != a.dtype:
        want, got = (_CPP_NAMES.get(str(dt.as_dtype(x.dtype)), f"{x.dtype}") for x in (a, b))
        message = f"expected dtype {want} for `{what}` but got dtype {got}"
        raise call_error(DTypeMismatchError, message, "lerp", a, b)


def _lerp_half(a, b, weight):
    """float16/bfloat16 lerp as PyTorch's vectorized kernel: in float32, `base + coeff * (b -
    a)` in one fused multiply-add (coeff the weight, or weight - 1 from `b` when |weight| >=
    0.5), rounded to the dtype once."""
    from .half_formulas import fma32

    half = a.dtype
    a32, b32 = m.cast(a, dt.float32), m.cast(b, dt.float32)
    diff = m.sub(b32, a32)
    if isinstance(weight, (int, float)):
        w = float(np.float32(weight))
        small = abs(w) < 0.5
        coeff = w if small else float(np.float32(w) - np.float32(1))
        return m.cast(fma32(coeff, diff, a32 if small else b32), half)
    (w,) = lift(weight, context=(a,))
    w = m.cast(w, dt.float32)
    small = m.less(m.abs(w), 0.5)
    coeff, base = m.where(small, w, m.sub(w, 1.0)), m.where(small, a32, b32)
    return m.cast(fma32(coeff, diff, base), half)


@takes_out
def logaddexp(input, other):  # noqa: A002
    """`log(exp(input) + exp(other))` without overflow or underflow; of complex values too
    (the log's imaginary part that of the larger real part plus log1p's, PyTorch's).

    >>> import kiln as kn
    >>> kn.logaddexp(kn.tensor([1000.0, -1000.0]), kn.tensor([-1000.0, 1000.0])).tolist()
    [1000.0, 1000.0]
    >>> kn.logaddexp(kn.tensor([1e3 + 1j]), kn.tensor([0j]))
    tensor([1000.+1.j])
    """
    a, b = lift(input, other)
    refuse_integers("logaddexp", a, b)
    target = dt.to_float(dt.result_type(a, b))  # promoted first: float16 with int64 is float16
    a, b = (v if v.dtype == target else m.cast(v, target) for v in (a, b))
    if dt.is_complex(target):
        return _complex_logaddexp(a, b)
    return call("logaddexp", a, b)


def refuse_integers(name: str, a, b) -> None:
    """PyTorch's refusal of a float-only binary op (hypot, logaddexp...) whose operands
    promote to an integer or bool dtype (NotImplementedError, as its CPU kernel's)."""
    dtype = dt.result_type(a, b)
    if dtype.kind in "biu":
        raise call_error(UnsupportedDTypeError, f"\"{name}_cpu\" not implemented for "
                         f"'{dt.scalar_name(dtype)}'", name, a, b)  # fmt: skip


def _complex_logaddexp(a, b):
    """logaddexp of complex values, PyTorch's rule: with `hi` the one of the larger real
    part, `hi + log1p(exp(lo - hi))`; where both real parts are the same infinity, `lo` (-inf)
    or `log(exp(lo) + exp(hi))` (+inf). Its gradient, that of the composite, is
    conj(1 / (1 + exp(b - a))) times the cotangent for `a`, as PyTorch's."""
    a_re, b_re = call("real", a), call("real", b)
    b_higher = m.greater(b_re, a_re)
    hi, lo = m.where(b_higher, b, a), m.where(b_higher, a, b)
    hi_re, lo_re = m.where(b_higher, b_re, a_re), m.where(b_higher, a_re, b_re)
    general = m.add(m.log1p(m.exp(m.sub(lo, hi))), hi)
    same_infinity = m.logical_and(m.logical_not(m.isfinite(lo_re)), m.equal(lo_re, hi_re))
    infinite = m.where(m.less(lo_re, 0), lo, m.log(m.add(m.exp(lo), m.exp(hi))))
    return m.where(same_infinity, infinite, general)


def _float_unary(name, example, expected):
    fn = core.unary_function(REGISTRY[name])

    def function(input):  # noqa: A002
        return fn(_floating(input))

    function.__name__ = function.__qualname__ = name
    function.__module__ = __name__  # made here, from a template: its docstring is tested here
    function.__doc__ = f"""Elementwise {name}; integers and bools give the default float dtype.

    >>> import kiln as kn
    >>> round(kn.{name}(kn.tensor([{example}])).item(), 4)
    {expected}
    """
    return takes_out(function)


# The examples' values: NumPy's float32 results, rounded to 4 places.
tan = _float_unary("tan", 0.5, "0.5463")
asin = _float_unary("asin", 0.5, "0.5236")
acos = _float_unary("acos", 0.5, "1.0472")
atan = _float_unary("atan", 0.5, "0.4636")
sinh = _float_unary("sinh", 0.5, "0.5211")
cosh = _float_unary("cosh", 0.5, "1.1276")
asinh = _float_unary("asinh", 0.5, "0.4812")
acosh = _float_unary("acosh", 2.0, "1.317")
atanh = _float_unary("atanh", 0.5, "0.5493")
exp2 = _float_unary("exp2", 3, "8.0")
log2 = _float_unary("log2", 8, "3.0")
log10 = _float_unary("log10", 100, "2.0")  # float32 log10(100) is 2.0000002


# -- scans ---------------------------------------------------------------------------------------


def _scan_input(x, dim, axis, name, dtype=None):
    (x,) = lift(x)
    if dtype is not None:
        x = call("cast", x, dtype=dt.as_dtype(dtype))
    dim = dim_arg(dim, axis, name)
    if dim is None:
        raise ArgumentTypeError(f"{name}() missing required argument 'dim'")
    return x, sh.normalize_axis(dim, max(x.ndim, 1))


def _scan_result(y, dtype):
    """A running sum or product in the `dtype` asked for: the scan ops accumulate integers in
    int64, whose low bits are the narrower dtype's wrapped result."""
    if dtype is None or y.dtype == dt.as_dtype(dtype):
        return y
    return call("cast", y, dtype=dt.as_dtype(dtype))


@takes_out
@autocast_op(None, cuda="fp32")
def cumsum(input, dim=None, *, dtype=None, axis=None):  # noqa: A002
    """Running sums along `dim`; integers and bools sum in int64 unless `dtype` is given.

    >>> import kiln as kn
    >>> kn.cumsum(kn.tensor([1, 2, 3]), dim=0)
    tensor([1, 3, 6])
    """
    x, dim = _scan_input(input, dim, axis, "cumsum", dtype)
    return _scan_result(call("cumsum", x, axis=dim, reverse=False), dtype)


@takes_out
@autocast_op(None, cuda="fp32")
def cumprod(input, dim=None, *, dtype=None, axis=None):  # noqa: A002
    """Running products along `dim` (integers and bools in int64), with PyTorch's gradient
    where the input has zeros.

    >>> import kiln as kn
    >>> kn.tensor([1.0, 2.0, 3.0]).cumprod(0)
    tensor([1., 2., 6.])
    """
    x, dim = _scan_input(input, dim, axis, "cumprod", dtype)
    return _scan_result(call("cumprod", x, axis=dim), dtype)


@takes_out
def logcumsumexp(input, dim=None, *, axis=None):  # noqa: A002
    """Running `log(sum(exp(x)))` along `dim`, without overflow.

    >>> import kiln as kn
    >>> [round(v, 4) for v in kn.logcumsumexp(kn.tensor([0.0, 0.0, 100.0]), 0).tolist()]
    [0.0, 0.6931, 100.0]
    """
    x, dim = _scan_input(input, dim, axis, "logcumsumexp")
    return call("logcumsumexp", x, axis=dim, reverse=False)


def _pick(x, idx, dim):
    """`x` taken at `idx` along `dim` (values of a sort, scan or top-k), 0-d allowed."""
    if x.ndim == 0:
        one = call("take_along_axis", call("reshape", x, shape=(1,)),
                   call("reshape", idx, shape=(1,)), axis=0)  # fmt: skip
        return call("reshape", one, shape=())
    return call("take_along_axis", x, idx, axis=dim)


def _running(name, input, dim, axis):  # noqa: A002
    x, dim = _scan_input(input, dim, axis, name)
    idx = c_ordered(call(f"{name}_index", x, axis=dim))  # (PyTorch's: C order)
    return getattr(return_types, name)(_pick(x, idx, dim), idx)


@takes_out
def cummax(input, dim=None, *, axis=None):  # noqa: A002
    """Running maxima along `dim` and their indices (the latest among ties; NaN propagates), a
    `(values, indices)` named tuple.

    >>> import kiln as kn
    >>> values, indices = kn.cummax(kn.tensor([1, 3, 2, 3]), 0)
    >>> values.tolist(), indices.tolist()
    ([1, 3, 3, 3], [0, 1, 1, 3])
    """
    return _running("cummax", input, dim, axis)


@takes_out
def cummin(input, dim=None, *, axis=None):  # noqa: A002
    """Running minima along `dim` and their indices, a `(values, indices)` named tuple.

    >>> import kiln as kn
    >>> kn.tensor([3, 1, 2]).cummin(0).values
    tensor([3, 1, 1])
    """
    return _running("cummin", input, dim, axis)


# -- sorting -------------------------------------------------------------------------------------


@takes_out
def argsort(input, dim: int = -1, descending: bool = False, stable: bool = False, *, axis=None):  # noqa: A002
    """The indices that sort `input` along `dim` (NaN counts as the greatest value). The sort
    is always stable, which is one of the orders `stable=False` allows.

    >>> import kiln as kn
    >>> kn.argsort(kn.tensor([3.0, 1.0, 2.0]), descending=True)
    tensor([0, 2, 1])
    """
    (x,) = lift(input)
    dim = sh.normalize_axis(dim_arg(dim, axis, "argsort"), max(x.ndim, 1))
    out = call("argsort", x, axis=dim, descending=bool(descending))
    return keep_like(out, x) if isinstance(out, Symbol) else out  # (laid out as x, as sort's)


@takes_out
def sort(input, dim: int = -1, descending: bool = False, stable: bool = False, *, axis=None):  # noqa: A002
    """`input` sorted along `dim` and the indices it came from, a `(values, indices)` named
    tuple (PyTorch's `sort`; gradients flow to the values' positions).

    >>> import kiln as kn
    >>> out = kn.sort(kn.tensor([3.0, 1.0, 2.0]))
    >>> out.values.tolist(), out.indices.tolist()
    ([1.0, 2.0, 3.0], [1, 2, 0])
    """
    (x,) = lift(input)
    dim = sh.normalize_axis(dim_arg(dim, axis, "sort"), max(x.ndim, 1))
    if isinstance(x, Symbol):  # one node computes both (kiln/ops/multi.py)
        attrs = {"axis": dim, "descending": bool(descending)}
        parts = elements(call("sort", x, **attrs), "sort", x, **attrs)
        return return_types.sort(*[keep_like(p, x) for p in parts])  # (laid out as x)
    idx = call("argsort", x, axis=dim, descending=bool(descending))
    values = _pick(x, idx, dim)  # (laid out as idx, as PyTorch's sort lays out both)
    if type(getattr(idx, "_data", None)) is np.ndarray and not idx._data.flags.c_contiguous:
        values._data = laid_out(values._data, array_layout(idx._data))
    return return_types.sort(values, idx)


@takes_out
def topk(input, k: int, dim: int = -1, largest: bool = True, sorted: bool = True, *, axis=None):  # noqa: A002
    """The `k` largest (or smallest) elements along `dim` and their indices, a
    `(values, indices)` named tuple, in sorted order.

    >>> import kiln as kn
    >>> out = kn.topk(kn.tensor([1.0, 5.0, 3.0, 4.0]), 2)
    >>> out.values.tolist(), out.indices.tolist()
    ([5.0, 4.0], [1, 3])
    """
    (x,) = lift(input)
    dim = sh.normalize_axis(dim_arg(dim, axis, "topk"), max(x.ndim, 1))
    n = static_dim(x, dim, "topk") if x.ndim else 1
    if not 0 <= k <= n:
        raise ShapeError(f"topk: selected index k ({k}) out of range (the dim has {n})")
    if isinstance(x, Symbol):  # one node computes both (kiln/ops/multi.py)
        attrs = {"axis": dim, "k": int(k), "largest": bool(largest)}
        return return_types.topk(*elements(call("topk", x, **attrs), "topk", x, **attrs))
    idx = call("argsort", x, axis=dim, descending=bool(largest))
    if x.ndim:
        spec = (("slice", None, None, None),) * dim + (("slice", 0, int(k), None),)
        # a copy (an identity cast): a tensor of its own, not a view of the whole argsort
        # (as PyTorch's: as_strided of it reads its k elements a row)
        idx = call("cast", call("index", idx, spec=spec), dtype=idx.dtype)
    idx = c_ordered(idx)  # (PyTorch's topk allocates both in C order)
    return return_types.topk(_pick(x, idx, dim), idx)
