"""PyTorch's `combinations`, `frexp`, `renorm`, `vander` and `nextafter`, written with kiln's
ops so each works eagerly (with autograd where PyTorch has a gradient), in graph mode and under
`kn.compile`, with PyTorch's arguments, dtypes and errors."""

from __future__ import annotations

import itertools
import math as _math

import numpy as np

from .. import dtypes as dt
from .. import shapes as sh
from ..array_types import return_types
from ..errors import (
    ArgumentTypeError,
    GraphError,
    ShapeMismatchError,
    UnsupportedDTypeError,
    UsageError,
    call_error,
)
from ..graph.core import Symbol
from ..ops.state import GRAD_FORMULAS
from . import math as m
from . import shape as s
from . import torch_index as ti
from . import torch_math as tm
from . import torch_shape as ts
from .autodiff import stop_gradient
from .core import lift
from .out import takes_out
from .result_layouts import c_ordered

__all__ = ["combinations", "frexp", "nextafter", "renorm", "vander"]

_NAMES = {"bool": "Bool", "int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char",
          "uint8": "Byte"}  # fmt: skip


def _const(array, like):
    return lift(array, context=(like,))[0]


def _static_length(op: str, x) -> int:
    n = x.shape[0]
    if not isinstance(n, int):
        raise call_error(GraphError, f"{op} needs the length of its input when the graph is "
                         f"built; it is symbolic ({sh.format_shape(x.shape)})", op, x)  # fmt: skip
    return n


def combinations(input, r: int = 2, with_replacement: bool = False):  # noqa: A002
    """The length-`r` combinations of a 1-D tensor's elements, as rows (Python's
    `itertools.combinations`, or `combinations_with_replacement`), in its order.

    >>> import kiln as kn
    >>> kn.combinations(kn.tensor([1, 2, 3]))
    tensor([[1, 2],
            [1, 3],
            [2, 3]])
    """
    (x,) = lift(input)
    if x.ndim != 1:
        raise call_error(ShapeMismatchError, f"Expect a 1D vector, but got shape "
                         f"{list(x.shape)}", "combinations", x)  # fmt: skip
    if isinstance(r, bool) or not isinstance(r, (int, np.integer)):
        raise ArgumentTypeError(f"combinations(): argument 'r' must be int, not {type(r).__name__}")
    if r < 0:
        raise UsageError(f"combinations: Expect a non-negative number, but got {r}")
    if r == 0:
        return s.getitem(x, slice(0, 0))
    n = _static_length("combinations", x)
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    rows = np.array(list(pick(range(n), r)), np.int64).reshape(-1, r)
    columns = [ti.index_select(x, 0, _const(rows[:, k].copy(), x)) for k in range(r)]
    return ts.stack(columns, 1)


def _float_input(op: str, x, message: str):
    if not dt.is_float(x.dtype):
        raise call_error(UnsupportedDTypeError, message, op, x)


def _pow2(e):
    """`2 ** e` (float64 e, integral) without overflow in the factors: as two powers."""
    half = m.floor(m.div(e, 2.0))
    return tm.exp2(half), tm.exp2(m.sub(e, half))


@takes_out
def frexp(input):  # noqa: A002
    """`x = mantissa * 2 ** exponent` with `0.5 <= |mantissa| < 1` (0, inf and NaN are their
    own mantissa, with exponent 0): a `(mantissa, exponent)` named tuple, the exponent int32.
    The gradient of the mantissa is `2 ** -exponent`.

    >>> import kiln as kn
    >>> kn.frexp(kn.tensor([8.0, -0.75, 0.0]))
    kiln.return_types.frexp(
    mantissa=tensor([ 0.5000, -0.7500,  0.0000]),
    exponent=tensor([4, 0, 0], dtype=kiln.int32))
    """
    (x,) = lift(input)
    _float_input("frexp", x, "frexp() only supports floating-point dtypes")
    # in float64, where the mantissa of every narrower float is exact
    w = x if x.dtype == dt.float64 else m.cast(x, dt.float64)
    v = stop_gradient(w)
    regular = m.logical_and(m.isfinite(v), m.not_equal(v, 0))
    a = m.abs(m.where(regular, v, 1.0))
    e = m.add(m.floor(tm.log2(a)), 1.0)  # log2 may round across a power of two: corrected
    lo, hi = _pow2(m.neg(e))
    scaled = m.mul(m.mul(a, lo), hi)
    e = m.sub(m.add(e, m.cast(m.greater_equal(scaled, 1.0), dt.float64)),
              m.cast(m.less(scaled, 0.5), dt.float64))  # fmt: skip
    lo, hi = _pow2(m.neg(e))
    mantissa = m.where(regular, m.mul(m.mul(w, lo), hi), w)
    if mantissa.dtype != x.dtype:
        mantissa = m.cast(mantissa, x.dtype)
    exponent = m.cast(m.where(regular, e, 0.0), dt.int32)
    return return_types.frexp(mantissa, exponent)


@takes_out
def renorm(input, p, dim: int, maxnorm):  # noqa: A002
    """Each slice along `dim` whose `p`-norm exceeds `maxnorm`, scaled to norm `maxnorm`
    (times `maxnorm / (norm + 1e-7)`); the others unchanged.

    >>> import kiln as kn
    >>> kn.renorm(kn.tensor([[3.0, 4.0], [0.3, 0.4]]), 2, 0, 1.0)
    tensor([[0.6000, 0.8000],
            [0.3000, 0.4000]])
    """
    (x,) = lift(input)
    if x.ndim < 2:
        raise call_error(ShapeMismatchError, "renorm: input needs at least 2 dimensions, got "
                         f"{x.ndim} dimensions", "renorm", x)  # fmt: skip
    d = sh.normalize_axis(dim, x.ndim)
    if not (dt.is_float(x.dtype) or dt.is_complex(x.dtype)):  # complex: norms of |x|
        name = _NAMES.get(x.dtype.name, x.dtype.name)
        raise call_error(UnsupportedDTypeError, "linalg.vector_norm: Expected a floating point "
                         f"or complex tensor as input. Got {name}", "renorm", x)  # fmt: skip
    p, maxnorm = float(p), float(maxnorm)
    if p <= 0:
        raise UsageError(f"renorm: non-positive-norm not supported (p={p:g})")
    if maxnorm < 0:
        raise UsageError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm:g}")
    axes = tuple(i for i in range(x.ndim) if i != d)
    wide = m.cast(x, dt.float32) if x.dtype in (dt.float16, dt.bfloat16) else x
    size = m.abs(wide)
    if _math.isinf(p):
        norm = m.amax(size, axes, True)
    else:
        total = m.sum(size if p == 1 else m.pow(size, p), axes, True)
        positive = m.greater(total, 0)  # no 0 ** (1/p) in the gradient of an all-zero slice
        rooted = total if p == 1 else m.pow(m.where(positive, total, 1.0), 1.0 / p)
        norm = m.where(positive, rooted, 0.0)
    factor = m.where(m.greater(norm, maxnorm), m.div(maxnorm, m.add(norm, 1e-7)), 1.0)
    out = m.mul(x, factor if factor.dtype == x.dtype else m.cast(factor, x.dtype))
    return c_ordered(out)  # (PyTorch's renorm: C order)


def vander(x, N=None, increasing: bool = False):  # noqa: N803 -- PyTorch's argument name
    """The Vandermonde matrix of a 1-D tensor: columns `x ** (N - 1), …, x, 1` (`N` defaults to
    its length; `increasing` reverses them). Integers and bools give int64.

    >>> import kiln as kn
    >>> kn.vander(kn.tensor([1, 2, 3]))
    tensor([[1, 1, 1],
            [4, 2, 1],
            [9, 3, 1]])
    """
    (v,) = lift(x)
    if v.ndim != 1:
        raise call_error(ShapeMismatchError, "x must be a one-dimensional tensor.", "vander", v)
    n = _static_length("vander", v) if N is None else N
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise ArgumentTypeError(f"vander(): argument 'N' must be int, not {type(n).__name__}")
    if n < 0:
        raise UsageError(f"vander: N must be non-negative, got {n}")
    if not dt.is_float(v.dtype) and v.dtype.kind != "c":  # bools and integers: int64
        v = m.cast(v, dt.int64)
    powers = np.arange(int(n), dtype=v.dtype)
    if not increasing:
        powers = powers[::-1].copy()
    return m.pow(s.reshape(v, (-1, 1)), _const(powers, v))


_BITS = {2: dt.int16, 4: dt.int32, 8: dt.int64}


@takes_out
def nextafter(input, other):  # noqa: A002
    """The next float after `input` towards `other`, elementwise, in their promoted float
    dtype (`other` itself where they are equal; NaN where either is NaN).

    >>> import kiln as kn
    >>> kn.nextafter(kn.tensor([1.0, 0.0]), kn.tensor([2.0, -1.0])).tolist()
    [1.0000001192092896, -1.401298464324817e-45]
    """
    if not isinstance(other, (Symbol, np.ndarray)) and not hasattr(other, "dtype"):
        raise ArgumentTypeError("nextafter(): argument 'other' (position 2) must be Tensor, "
                                f"not {type(other).__name__}")  # fmt: skip
    a, b = lift(input, other)
    dtype = dt.result_type(a, b)
    if not dt.is_float(dtype):
        name = _NAMES.get(dtype.name, dtype.name)
        raise call_error(UnsupportedDTypeError, f"\"nextafter_cpu\" not implemented for "
                         f"'{name}'", "nextafter", a, b)  # fmt: skip
    a, b = (t if t.dtype == dtype else m.cast(t, dtype) for t in (a, b))
    bits = _BITS[dtype.itemsize]
    a_bits = m.core.call("bitcast", a, dtype=bits, source=dtype)
    # sign and magnitude: one step of the bits moves away from 0 where the target is beyond a
    away = m.equal(m.greater(b, a), m.greater(a, 0))
    stepped = m.add(a_bits, m.sub(m.mul(m.cast(away, bits), 2), 1))
    tiny = m.core.call("bitcast", _const(np.ones((), bits), a), dtype=dtype, source=bits)
    from_zero = m.where(m.greater(b, 0), tiny, m.neg(tiny))  # the least subnormal towards b
    out = m.core.call("bitcast", stepped, dtype=dtype, source=bits)
    out = m.where(m.equal(a, 0), from_zero, out)
    out = m.where(m.equal(a, b), b, out)
    out = m.where(m.logical_or(m.isnan(a), m.isnan(b)), float("nan"), out)
    # PyTorch's gradient: the cotangent for input where it differs from other (NaN and the
    # infinities included), 0 at ties and for other; the values above carry none
    out = stop_gradient(out)
    full = a if tuple(a.shape) == tuple(out.shape) else s.broadcast_to(a, tuple(out.shape))
    out = m.core.with_grad(out, full, ("nextafter",), stop_gradient(m.not_equal(a, b)))
    if getattr(b, "requires_grad", True):  # other's zero, by a `where` that never picks it
        out = m.where(np.False_, b, out)
    return out


def _nextafter_grad(ct, differs):
    return m.where(differs, ct, 0.0)


GRAD_FORMULAS["nextafter"] = _nextafter_grad
