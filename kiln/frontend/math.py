"""Elementwise, reduction and linear-algebra functions (NumPy's names and semantics)."""

from __future__ import annotations

import math

import numpy as np

from .. import dtypes as dt
from .. import shapes as sh
from ..errors import ShapeError
from ..graph.opdef import REGISTRY
from . import core
from .core import call, lift

__all__ = [
    "abs",
    "absolute",
    "add",
    "argmax",
    "argmin",
    "cast",
    "ceil",
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
    "round",
    "rsqrt",
    "sigmoid",
    "sign",
    "sin",
    "softplus",
    "sqrt",
    "square",
    "std",
    "sub",
    "subtract",
    "sum",
    "tanh",
    "var",
    "where",
]


def _make_unary(name, np_name):
    fn = core.unary_function(REGISTRY[name])
    like = f"NumPy's `{np_name}`" if np_name else f"`{name}`"
    expected_dtype = f"np.{np_name}(a).dtype" if np_name else "a.dtype"
    fn.__doc__ = f"""Elementwise {name}, as {like}.

    >>> import kiln as kn, numpy as np
    >>> a = np.array([0.25, 0.5, 2.0], np.float32)
    >>> kn.{name}(a).shape, kn.{name}(a).dtype == {expected_dtype}
    ((3,), True)
    """
    fn.__name__ = fn.__qualname__ = name
    fn.__module__ = __name__  # made in core: its docstring is tested here
    return fn


def _make_binary(name, np_name):
    fn = core.binary_function(REGISTRY[name])
    fn.__doc__ = f"""Elementwise {name} with broadcasting, as NumPy's `{np_name}`.

    >>> import kiln as kn, numpy as np
    >>> a, b = np.array([1.0, 2.0], np.float32), np.array([[3.0], [4.0]], np.float32)
    >>> bool((kn.{name}(a, b) == np.{np_name}(a, b)).all())
    True
    """
    fn.__name__ = fn.__qualname__ = name
    fn.__module__ = __name__  # made in core: its docstring is tested here
    return fn


neg = _make_unary("neg", "negative")
abs = _make_unary("abs", "absolute")
exp = _make_unary("exp", "exp")
log = _make_unary("log", "log")
log1p = _make_unary("log1p", "log1p")
expm1 = _make_unary("expm1", "expm1")
sqrt = _make_unary("sqrt", "sqrt")
rsqrt = _make_unary("rsqrt", None)
square = _make_unary("square", "square")
sin = _make_unary("sin", "sin")
cos = _make_unary("cos", "cos")
tanh = _make_unary("tanh", "tanh")
sigmoid = _make_unary("sigmoid", None)
sign = _make_unary("sign", "sign")
floor = _make_unary("floor", "floor")
ceil = _make_unary("ceil", "ceil")
round = _make_unary("round", "round")
logical_not = _make_unary("logical_not", "logical_not")
erf = _make_unary("erf", None)
isnan = _make_unary("isnan", "isnan")
isfinite = _make_unary("isfinite", "isfinite")
add = _make_binary("add", "add")
sub = _make_binary("sub", "subtract")
mul = _make_binary("mul", "multiply")
div = _make_binary("div", "true_divide")
pow = _make_binary("pow", "power")
floordiv = _make_binary("floordiv", "floor_divide")
mod = _make_binary("mod", "remainder")
maximum = _make_binary("maximum", "maximum")
minimum = _make_binary("minimum", "minimum")
equal = _make_binary("equal", "equal")
not_equal = _make_binary("not_equal", "not_equal")
less = _make_binary("less", "less")
less_equal = _make_binary("less_equal", "less_equal")
greater = _make_binary("greater", "greater")
greater_equal = _make_binary("greater_equal", "greater_equal")
logical_and = _make_binary("logical_and", "logical_and")
logical_or = _make_binary("logical_or", "logical_or")
negative, absolute, subtract, multiply, divide, power = neg, abs, sub, mul, div, pow


def where(cond, a, b):
    """`a` where `cond` is true, else `b` (broadcasting), as NumPy's `where`.

    >>> import kiln as kn, numpy as np
    >>> kn.where(np.array([True, False]), 1.0, np.float32(-1.0))
    array([ 1., -1.], dtype=float32)
    """
    (cond,) = lift(cond, context=(a, b))
    a, b = lift(a, b, context=(cond,))
    return call("where", cond, a, b)


def cast(x, dtype):
    """`x` converted to `dtype` (NumPy's `astype`).

    >>> import kiln as kn, numpy as np
    >>> kn.cast(np.array([1.7, -1.7]), kn.int32)
    array([ 1, -1], dtype=int32)
    """
    (x,) = lift(x)
    return call("cast", x, dtype=dt.as_dtype(dtype))


relu = _make_unary("relu", None)
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
    return where(greater(x, 0), x, mul(x, negative_slope))


def softplus(x, beta: float = 1.0):
    """`log(1 + exp(beta x)) / beta`, computed without overflow.

    >>> import kiln as kn, numpy as np
    >>> kn.softplus(np.array([0.0, 100.0], np.float32))
    array([  0.6931472, 100.       ], dtype=float32)
    """
    (x,) = lift(x)
    return call("softplus", x, beta=float(beta))


def gelu(x, approximate: str = "none"):
    """GELU: `x * Φ(x)`, exactly through erf, or PyTorch's tanh approximation.

    >>> import kiln as kn, numpy as np
    >>> kn.gelu(np.array([0.0, 1.0], np.float32))
    array([0.       , 0.8413447], dtype=float32)
    """
    (x,) = lift(x)
    if approximate == "none":
        return mul(mul(x, 0.5), add(erf(mul(x, 1 / math.sqrt(2))), 1.0))
    if approximate == "tanh":
        inner = mul(add(x, mul(pow(x, 3), 0.044715)), math.sqrt(2 / math.pi))
        return mul(mul(x, 0.5), add(tanh(inner), 1.0))
    raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")


def clip(x, min=None, max=None):  # noqa: A002 — NumPy's and PyTorch's argument names
    """`x` limited to `[min, max]` (either may be None), as NumPy's `clip` (NaN stays NaN).

    Gradients as PyTorch's `clamp`: x's is 1 where min <= x <= max (bounds included), a
    tensor bound's is 1 where it is the value (x below min, x above max).

    >>> import kiln as kn, numpy as np
    >>> kn.clip(np.array([-2.0, 0.5, 2.0], np.float32), -1, 1)
    array([-1. ,  0.5,  1. ], dtype=float32)
    """
    (x,) = lift(x)
    if min is None and max is None:
        return x
    # NOTE: a missing bound is x's dtype's own extreme (an array, not a weak scalar), which
    # changes neither the values, NumPy's result dtype, nor where x takes the gradient.
    lo = _extreme(x.dtype, "min") if min is None else min
    hi = _extreme(x.dtype, "max") if max is None else max
    return call("clip", *lift(x, lo, hi, op=REGISTRY["clip"]))


def _extreme(dtype, side: str) -> np.ndarray:
    """The least (`side` "min") or greatest value of `dtype`: -inf or inf for floats."""
    if dtype.kind == "f":
        value = -np.inf if side == "min" else np.inf
    elif dtype.kind == "b":
        value = side == "max"
    else:
        value = getattr(np.iinfo(dtype), side)
    return np.asarray(value, dtype)


# -- reductions --------------------------------------------------------------------------------


def _reduce(op_name, x, axis, keepdims):
    (x,) = lift(x)
    return call(op_name, x, axes=sh.normalize_axes(axis, x.ndim), keepdims=bool(keepdims))


def sum(x, axis=None, keepdims=False):  # noqa: A001 — NumPy's name
    """Sum over `axis` (None: all; an int or a tuple), as NumPy's `sum`.

    >>> import kiln as kn, numpy as np
    >>> kn.sum(np.ones((2, 3), np.float32), axis=-1)
    array([3., 3.], dtype=float32)
    """
    return _reduce("reduce_sum", x, axis, keepdims)


def mean(x, axis=None, keepdims=False):
    """Mean over `axis`, as NumPy's `mean` (integers give float64).

    >>> import kiln as kn, numpy as np
    >>> kn.mean(np.arange(6.0).reshape(2, 3), axis=0)
    array([1.5, 2.5, 3.5])
    """
    return _reduce("reduce_mean", x, axis, keepdims)


def max(x, axis=None, keepdims=False):  # noqa: A001
    """Maximum over `axis`, as NumPy's `max`.

    >>> import kiln as kn, numpy as np
    >>> kn.max(np.array([[1, 5], [7, 2]]), axis=1)
    array([5, 7])
    """
    return _reduce("reduce_max", x, axis, keepdims)


def min(x, axis=None, keepdims=False):  # noqa: A001
    """Minimum over `axis`, as NumPy's `min`.

    >>> import kiln as kn, numpy as np
    >>> kn.min(np.array([[1, 5], [7, 2]]), axis=1)
    array([1, 2])
    """
    return _reduce("reduce_min", x, axis, keepdims)


def prod(x, axis=None, keepdims=False):
    """Product over `axis`, as NumPy's `prod`.

    >>> import kiln as kn, numpy as np
    >>> kn.prod(np.array([[1, 5], [7, 2]]), axis=0)
    array([ 7, 10])
    """
    return _reduce("reduce_prod", x, axis, keepdims)


def _arg(op_name, x, axis, keepdims):
    (x,) = lift(x)
    axis = None if axis is None else sh.normalize_axis(axis, x.ndim)
    return call(op_name, x, axis=axis, keepdims=bool(keepdims))


def argmax(x, axis=None, keepdims=False):
    """Index of the maximum along `axis` (None: of the flattened array), as int64.

    >>> import kiln as kn, numpy as np
    >>> kn.argmax(np.array([[1, 5], [7, 2]]), axis=1)
    array([1, 0])
    """
    return _arg("argmax", x, axis, keepdims)


def argmin(x, axis=None, keepdims=False):
    """Index of the minimum along `axis` (None: of the flattened array), as int64.

    >>> import kiln as kn, numpy as np
    >>> kn.argmin(np.array([[1, 5], [7, 2]]), axis=1)
    array([0, 1])
    """
    return _arg("argmin", x, axis, keepdims)


def _count(x, axis):
    axes = sh.normalize_axes(axis, x.ndim)
    return sh.dim_product(x.shape[a] for a in axes)


def var(x, axis=None, keepdims=False, ddof=0):
    """Variance over `axis` with NumPy's default `ddof=0` (two passes, for accuracy).

    >>> import kiln as kn, numpy as np
    >>> kn.var(np.array([1.0, 2.0, 3.0, 4.0], np.float32))
    array(1.25, dtype=float32)
    """
    (x,) = lift(x)
    centered = sub(x, mean(x, axis, keepdims=True))
    v = mean(square(centered), axis, keepdims)
    if ddof:
        n = _count(x, axis)
        if not isinstance(n, int):
            raise ShapeError(f"var with ddof={ddof} needs static sizes on the reduced axes")
        v = mul(v, n / (n - ddof) if n > ddof else np.inf)
    return v


def std(x, axis=None, keepdims=False, ddof=0):
    """Standard deviation over `axis`: `sqrt(var(x))`, NumPy's `ddof=0` default.

    >>> import kiln as kn, numpy as np
    >>> kn.std(np.array([1.0, 3.0], np.float32))
    array(1., dtype=float32)
    """
    return sqrt(var(x, axis, keepdims, ddof))


def logsumexp(x, axis=None, keepdims=False):
    """`log(sum(exp(x)))` over `axis`, shifted by the maximum so it cannot overflow.

    >>> import kiln as kn, numpy as np
    >>> kn.logsumexp(np.array([1000.0, 1000.0], np.float32))
    array(1000.6932, dtype=float32)
    """
    (x,) = lift(x)
    m = max(x, axis, keepdims=True)
    m = call("stop_gradient", where(isfinite(m), m, 0))
    r = add(log(sum(exp(sub(x, m)), axis, keepdims=True)), m)
    if keepdims:
        return r
    axes = sh.normalize_axes(axis, x.ndim)
    return call("reshape", r, shape=tuple(d for i, d in enumerate(r.shape) if i not in axes))


# -- linear algebra ----------------------------------------------------------------------------


def matmul(a, b):
    """Matrix product with NumPy's batching and broadcasting (`a @ b`).

    >>> import kiln as kn, numpy as np
    >>> kn.matmul(np.ones((2, 3), np.float32), np.ones((3,), np.float32))
    array([3., 3.], dtype=float32)
    """
    return call("matmul", *lift(a, b))


def dot(a, b):
    """NumPy's `dot` for operands where it agrees with `matmul` (`b` of 1 or 2 dims), and
    scalar products of 0-d operands.

    >>> import kiln as kn, numpy as np
    >>> kn.dot(np.array([1.0, 2.0]), np.array([3.0, 4.0]))
    array(11.)
    """
    a, b = lift(a, b)
    if a.ndim == 0 or b.ndim == 0:
        return mul(a, b)
    if b.ndim > 2:
        raise ShapeError(f"dot of a {b.ndim}-d right operand: use kn.matmul (batched)")
    return call("matmul", a, b)
