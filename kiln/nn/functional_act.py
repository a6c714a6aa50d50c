"""PyTorch's pointwise activations of `kn.nn.functional` (relu, leaky_relu, selu, celu,
hardtanh, relu6, hardswish, hardsigmoid, mish, softsign, threshold, the shrinks, prelu, rrelu,
and their in-place `x_` forms), softmin and glu, composed of kiln's ops.

Piecewise ones are `where`s whose branches give PyTorch's gradients at the kinks too (hardtanh
and hardsigmoid: 0 at their bounds; hardswish: 0 at -3 and 1 at 3). `inplace=True` on an
eager tensor overwrites it through the eager in-place mechanism (version counter, history);
on a Symbol (graph mode, `kn.compile`) the Symbol then stands for the new value
(kiln/frontend/functionalize.py), so code that reads the input afterwards sees it changed. A
feed (a placeholder, a compiled function's argument) or a Variable cannot change: there
`inplace=True` only gives the new value.
"""

from __future__ import annotations

import warnings

import numpy as np

from .. import dtypes as dt
from .. import frontend as F
from .. import shapes as sh
from ..eager import Tensor
from ..errors import ArgumentError, ShapeMismatchError, UsageError, call_error
from ..frontend.autocast import autocast_op
from ..frontend.core import with_grad
from ..frontend.functionalize import is_compiled_argument, symbol_inplace
from ..frontend.half_formulas import tanh_softplus32
from ..frontend.inplace import _inplace
from ..frontend.result_layouts import c_ordered
from ..graph.core import Symbol
from ..ops.random import in_trace, next_seed
from ..ops.state import GRAD_FORMULAS

__all__ = [
    "celu",
    "celu_",
    "glu",
    "hardshrink",
    "hardsigmoid",
    "hardswish",
    "hardtanh",
    "hardtanh_",
    "leaky_relu",
    "leaky_relu_",
    "mish",
    "prelu",
    "relu",
    "relu6",
    "relu_",
    "rrelu",
    "rrelu_",
    "selu",
    "selu_",
    "softmin",
    "softshrink",
    "softsign",
    "tanhshrink",
    "threshold",
    "threshold_",
]

SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


def in_place(name: str, fn, input, inplace: bool, opmath=False):  # noqa: A002
    """`fn(input)`, written into `input` when `inplace` (an eager Tensor, or a Symbol). With
    `opmath`, a float16 or bfloat16 input is computed in float32 and rounded once, as
    PyTorch's kernels of these activations compute it (and their gradients); `opmath` a
    function: that one is the float32 formula of half inputs (PyTorch's kernel's own, where
    `fn`'s gradient would round differently)."""
    if opmath:
        fn = _half_formula(fn, fn if opmath is True else opmath)
    if inplace and isinstance(input, Tensor):
        return _inplace(name, fn)(input)
    if (
        inplace
        and isinstance(input, Symbol)
        and (input.node.op.name not in _FEEDS or is_compiled_argument(input))
    ):  # a compiled function's argument changes in the caller's tensor, as eagerly
        return symbol_inplace(name, fn, input)
    return fn(input)  # NOTE: a graph-mode feed cannot change: the result


_FEEDS = ("placeholder", "variable")
_HALF = (np.dtype(np.float16), dt.bfloat16)


def _half_formula(fn, wide):
    """`fn`, but `wide` on float32 copies of a float16 or bfloat16 input, rounded once."""
    half = F.core.half_in_float32(wide)
    return lambda x: half(x) if getattr(x, "dtype", None) in _HALF else fn(x)


def opmath_grad(fn, *formula):
    """The float32 function of half inputs: `fn(x)`, its gradient PyTorch's backward kernel's
    float32 formula `formula` (a name in `GRAD_FORMULAS` and its parameters)."""
    return lambda x: with_grad(fn(x), x, formula, x)


def elu_opmath(alpha, scale, input_scale, input=None, inplace=False):  # noqa: A002
    """PyTorch's float32 formula of elu, selu and celu for half inputs: `(exp(x * input_scale)
    - 1) * (alpha * scale)` where x <= 0, else `x * scale`, its constants float32 as there.
    Its gradient (`ct * (alpha * scale) * exp(..) * input_scale`) is theirs too, where kiln's
    `expm1`-based one (`ct * (expm1(x) + 1)`) loses the small exp(x) of large negative x to
    cancellation (an ulp of float16 at 5-9% of points). In place, PyTorch's gradient reads
    the result, rounded to `input`'s dtype: `ct * input_scale * (y + alpha * scale)`."""
    negcoef = float(np.float32(alpha) * np.float32(scale))
    inner, above = float(np.float32(input_scale)), float(np.float32(scale))

    def negative(v):
        v = v if inner == 1.0 else F.mul(v, inner)
        return F.mul(F.sub(F.exp(v), 1.0), negcoef)

    def fn(x):
        return exp_branch(x, negative, above, alpha, input_scale)

    dtype = getattr(input, "dtype", None)
    if not inplace or dtype not in _HALF:
        return fn

    def from_result(x):
        y = fn(x)
        rounded = F.core.call("cast", F.core.call("cast", y, dtype=dtype), dtype=np.float32)
        return with_grad(y, x, ("elu_result", negcoef, inner, above), rounded)

    return from_result


def _elu_result_grad(ct, y, negcoef, inner, above):
    negative = F.mul(F.mul(ct, inner), F.add(y, negcoef))
    return F.where(F.greater(y, 0.0), F.mul(ct, above), negative)


GRAD_FORMULAS["elu_result"] = _elu_result_grad


def relu(input, inplace: bool = False):  # noqa: A002
    """`max(x, 0)`.

    >>> import kiln as kn
    >>> x = kn.tensor([-1.0, 2.0])
    >>> _ = kn.nn.functional.relu(x, inplace=True); x
    tensor([0., 2.])
    """
    return in_place("relu_", F.relu, input, inplace)


def leaky_relu(input, negative_slope: float = 0.01, inplace: bool = False):  # noqa: A002
    """`x` where positive, else `negative_slope * x`.

    >>> import kiln as kn
    >>> kn.nn.functional.leaky_relu(kn.tensor([-1.0, 2.0]), 0.1)
    tensor([-0.1000,  2.0000])
    """
    return in_place("leaky_relu_", lambda x: F.leaky_relu(x, negative_slope), input, inplace)


def exp_branch(x, negative, scale: float = 1.0, alpha: float = 1.0, input_scale: float = 1.0):
    """`negative(x)` where x <= 0, else `x * scale` (elu, selu, celu: `negative(x)` is
    `alpha * scale * (exp(x * input_scale) - 1)`). `negative` reads only the non-positive x,
    so a large x neither overflows its exp nor makes the gradient 0 * inf = NaN; NaN takes the
    `x` branch, as PyTorch's. The gradient is PyTorch's elu_backward (`_elu_input_grad`)."""
    below = F.less_equal(x, 0)
    above = x if scale == 1.0 else F.mul(x, scale)
    value = F.where(below, negative(F.where(below, x, 0.0)), above)
    return with_grad(value, x, ("elu_input", alpha, scale, input_scale), x)


def _elu_input_grad(ct, x, alpha, scale, input_scale):
    """PyTorch's elu_backward of the input: `ct * input_scale * alpha * scale * exp(x *
    input_scale)` where x <= 0 (so at 0 too), else `ct * scale`, its constants in x's
    precision (float32 below float64) and multiplied in the kernel's order. Its own
    derivative is zero at x = 0, as PyTorch's double backward (masked by x < 0): the exp
    reads `min(x, 0)` only where x < 0."""
    wide = x.dtype == np.float64
    c = float if wide else (lambda v: float(np.float32(v)))
    negcoef = c(alpha) * c(scale) if wide else float(np.float32(alpha) * np.float32(scale))
    inner = c(input_scale)
    strict = F.where(F.less(x, 0), x, 0.0)
    exp = F.exp(strict if inner == 1.0 else F.mul(strict, inner))
    negative = F.mul(F.mul(ct if inner == 1.0 else F.mul(ct, inner), negcoef), exp)
    return F.where(F.less_equal(x, 0), negative, F.mul(ct, c(scale)))


GRAD_FORMULAS["elu_input"] = _elu_input_grad


def selu(input, inplace: bool = False):  # noqa: A002
    """`scale * (x if x > 0 else alpha * (exp(x) - 1))` with SELU's fixed alpha and scale.

    >>> import kiln as kn
    >>> kn.nn.functional.selu(kn.tensor([-1.0, 1.0]))
    tensor([-1.1113,  1.0507])
    """

    def fn(x):
        negative = lambda v: F.mul(F.expm1(v), SELU_ALPHA * SELU_SCALE)  # noqa: E731
        return exp_branch(x, negative, SELU_SCALE, SELU_ALPHA)

    half = elu_opmath(SELU_ALPHA, SELU_SCALE, 1.0, input, inplace)
    return in_place("selu_", fn, input, inplace, opmath=half)


def celu(input, alpha: float = 1.0, inplace: bool = False):  # noqa: A002
    """`x if x > 0 else alpha * (exp(x / alpha) - 1)`.

    >>> import kiln as kn
    >>> kn.nn.functional.celu(kn.tensor([-1.0, 1.0]), alpha=2.0)
    tensor([-0.7869,  1.0000])
    """
    if alpha == 0:
        raise ZeroDivisionError("ZeroDivisionError: alpha cannot be 0 for CELU")

    def fn(x):
        return exp_branch(
            x, lambda v: F.mul(F.expm1(F.div(v, alpha)), alpha), 1.0, alpha, 1 / alpha
        )

    half = elu_opmath(alpha, 1.0, 1.0 / alpha, input, inplace)
    return in_place("celu_", fn, input, inplace, opmath=half)


def _hardtanh(x, lo, hi):
    # NOTE: `where`, not `clip`: PyTorch's hardtanh has a zero gradient at its bounds, clamp 1.
    (x,) = F.core.lift(x)
    if x.dtype.kind in "iu":  # integers stay integers: the bounds are cast, as PyTorch's
        lo, hi = int(lo), int(hi)
    return F.where(F.less_equal(x, lo), lo, F.where(F.greater_equal(x, hi), hi, x))


def hardtanh(input, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False):  # noqa: A002
    """`x` limited to [min_val, max_val]; its gradient is 0 at and beyond the bounds.

    >>> import kiln as kn
    >>> kn.nn.functional.hardtanh(kn.tensor([-2.0, 0.5, 2.0]))
    tensor([-1.0000,  0.5000,  1.0000])
    """
    if max_val < min_val:
        raise ArgumentError("min_val cannot be greater than max_val")
    return in_place("hardtanh_", lambda x: _hardtanh(x, min_val, max_val), input, inplace)


def relu6(input, inplace: bool = False):  # noqa: A002
    """`min(max(x, 0), 6)` (PyTorch's `hardtanh(x, 0, 6)`).

    >>> import kiln as kn
    >>> kn.nn.functional.relu6(kn.tensor([-1.0, 3.0, 9.0]))
    tensor([0., 3., 6.])
    """
    return in_place("relu6_", lambda x: _hardtanh(x, 0.0, 6.0), input, inplace)


def hardsigmoid(input, inplace: bool = False):  # noqa: A002
    """`0` below -3, `1` above 3, else `(x + 3) / 6` (so without cancellation near -3, as
    PyTorch's kernel).

    >>> import kiln as kn
    >>> kn.nn.functional.hardsigmoid(kn.tensor([-4.0, 0.0, 1.5, 4.0]))
    tensor([0.0000, 0.5000, 0.7500, 1.0000])
    """

    def fn(x):
        # NaN reaches the innermost branch: NaN, with PyTorch's zero gradient
        mid = F.where(F.greater(x, -3.0), F.div(F.add(x, 3.0), 6.0), F.mul(x, 0.0))
        return F.where(F.less_equal(x, -3.0), 0.0, F.where(F.greater_equal(x, 3.0), 1.0, mid))

    return in_place("hardsigmoid_", fn, input, inplace, opmath=True)


def hardswish(input, inplace: bool = False):  # noqa: A002
    """`x * hardsigmoid(x)`: 0 below -3, `x` above 3, else `x * (x + 3) / 6`.

    >>> import kiln as kn
    >>> kn.nn.functional.hardswish(kn.tensor([-4.0, 0.0, 1.5, 4.0]))
    tensor([-0.0000, 0.0000, 1.1250, 4.0000])
    """

    def fn(x):
        # the middle piece reads only x inside (-3, 3): at ±inf its gradient would be 0 * inf
        inside = F.logical_and(F.greater(x, -3.0), F.less(x, 3.0))
        safe = F.where(inside, x, 0.0)
        mid = F.div(F.mul(safe, F.add(safe, 3.0)), 6.0)
        return F.where(F.less_equal(x, -3.0), F.mul(x, 0.0), F.where(inside, mid, x))

    return in_place("hardswish_", fn, input, inplace, opmath=opmath_grad(fn, "hardswish"))


def mish(input, inplace: bool = False):  # noqa: A002
    """`x * tanh(softplus(x))`.

    >>> import kiln as kn
    >>> kn.nn.functional.mish(kn.tensor([-1.0, 0.0, 1.0]))
    tensor([-0.3034,  0.0000,  0.8651])
    """
    fn = lambda x: F.mul(x, F.tanh(F.softplus(x)))  # noqa: E731
    half = opmath_grad(lambda x: F.mul(x, tanh_softplus32(x)), "mish")
    return in_place("mish_", fn, input, inplace, opmath=half)


def softsign(input):  # noqa: A002
    """`x / (1 + |x|)`.

    >>> import kiln as kn
    >>> kn.nn.functional.softsign(kn.tensor([-3.0, 1.0]))
    tensor([-0.7500,  0.5000])
    """
    return F.div(input, F.add(F.abs(input), 1.0))


def implicit_softmax_dim(ndim: int, name: str, stacklevel: int = 4) -> int:
    """PyTorch's legacy choice of dim when none is given (0 for 0-, 1- and 3-d inputs, else
    1), with its deprecation warning."""
    warnings.warn(
        f"Implicit dimension choice for {name} has been deprecated. Change the call to "
        "include dim=X as an argument.",
        stacklevel=stacklevel,
    )
    return 0 if ndim in (0, 1, 3) else 1


def softmin(input, dim=None, _stacklevel: int = 3, dtype=None):  # noqa: A002
    """`softmax(-x)` along `dim` (-x cast to `dtype` when given: as PyTorch's, an unsigned
    input's negation wraps in its dtype first).

    >>> import kiln as kn
    >>> kn.nn.functional.softmin(kn.tensor([1.0, 1.0, 2.0]), dim=0)
    tensor([0.4223, 0.4223, 0.1554])
    """
    (x,) = F.core.lift(input)
    x = F.neg(x)
    if dtype is not None:
        x = F.cast(x, dtype)
    if dim is None:
        dim = implicit_softmax_dim(x.ndim, "softmin")
    return F.softmax(x, dim)


def glu(input, dim: int = -1):  # noqa: A002
    """The gated linear unit: `a * sigmoid(b)` for the halves `a`, `b` of `input` along `dim`.

    >>> import kiln as kn
    >>> kn.nn.functional.glu(kn.tensor([2.0, 4.0, 0.0, 100.0]))
    tensor([1., 4.])
    """
    (x,) = F.core.lift(input)
    if x.ndim == 0:
        raise call_error(ShapeMismatchError, "glu does not support scalars because halving "
                         "size must be even", "glu", x)  # fmt: skip
    d = sh.normalize_axis(dim, x.ndim)
    n = x.shape[d]
    if not isinstance(n, int) or n % 2:
        raise call_error(ShapeMismatchError, f"Halving dimension must be even, but dimension "
                         f"{d} is size {n}", "glu", x)  # fmt: skip
    a, b = F.split(x, n // 2, d)
    return F.mul(a, F.sigmoid(b))


def threshold(input, threshold: float, value: float, inplace: bool = False):  # noqa: A002
    """`x` where `x > threshold`, else `value`.

    >>> import kiln as kn
    >>> kn.nn.functional.threshold(kn.tensor([0.5, 2.0]), 1.0, -1.0)
    tensor([-1.,  2.])
    """
    fn = lambda x: F.where(F.less_equal(x, threshold), value, x)  # noqa: E731 (NaN: x)
    return in_place("threshold_", fn, input, inplace)


def hardshrink(input, lambd: float = 0.5):  # noqa: A002
    """`x` where `|x| > lambd`, else 0.

    >>> import kiln as kn
    >>> kn.nn.functional.hardshrink(kn.tensor([-1.0, 0.2, 0.7]))
    tensor([-1.0000,  0.0000,  0.7000])
    """
    band = F.logical_and(F.greater_equal(input, -lambd), F.less_equal(input, lambd))
    return F.where(band, 0.0, input)  # NaN is outside the band: NaN, as PyTorch's


def softshrink(input, lambd: float = 0.5):  # noqa: A002
    """`x - lambd` above `lambd`, `x + lambd` below `-lambd`, else 0.

    >>> import kiln as kn
    >>> kn.nn.functional.softshrink(kn.tensor([-1.0, 0.2, 0.75]))
    tensor([-0.5000,  0.0000,  0.2500])
    """
    if lambd < 0:
        raise UsageError(f"lambda must be greater or equal to 0, but found to be {lambd}.")
    # PyTorch's: 0 times x in the band (a zero of x's sign), and NaN passes through
    band = F.logical_and(F.greater_equal(input, -lambd), F.less_equal(input, lambd))
    below = F.where(F.less(input, -lambd), F.add(input, lambd), input)
    outside = F.where(F.greater(input, lambd), F.sub(input, lambd), below)
    return F.where(band, F.mul(input, 0.0), outside)


def tanhshrink(input):  # noqa: A002
    """`x - tanh(x)`.

    >>> import kiln as kn
    >>> kn.nn.functional.tanhshrink(kn.tensor([0.0]))
    tensor([0.])
    """
    return F.sub(input, F.tanh(input))


@autocast_op("lower")
def prelu(input, weight):  # noqa: A002
    """`x` where `x > 0`, else `weight * x`, with one weight, or one per channel (dim 1).

    >>> import kiln as kn
    >>> kn.nn.functional.prelu(kn.tensor([[-2.0, 1.0]]), kn.tensor([0.25]))
    tensor([[-0.5000,  1.0000]])
    """
    x, w = F.core.lift(input, weight)
    if w.ndim > 1:
        raise call_error(ShapeMismatchError, f"prelu: expected `weight` to be a scalar or 1D "
                         f"tensor, but got: ndim = {w.ndim}", "prelu", x, w)  # fmt: skip
    channels = x.shape[1] if x.ndim >= 2 else 1
    if w.ndim == 0 or w.shape[0] == 1:  # one weight: the shape stays x's (even 0-d)
        w = F.reshape(w, ())
    elif w.shape[0] != channels:
        raise call_error(ShapeMismatchError, f"Mismatch of parameter numbers and input channel "
                         f"size. Found parameter numbers = {w.shape[0]} and channel size = "
                         f"{channels}.", "prelu", x, w)  # fmt: skip
    else:
        w = F.reshape(w, (w.shape[0],) + (1,) * (x.ndim - 2))
    return F.where(F.greater(x, 0), x, F.mul(w, x))


def rrelu(input, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,  # noqa: A002
          inplace: bool = False):  # fmt: skip
    """Leaky ReLU with a slope drawn from U(lower, upper) per element when training, else the
    slope `(lower + upper) / 2`.

    >>> import kiln as kn
    >>> kn.nn.functional.rrelu(kn.tensor([-3.0, 1.0]), 0.1, 0.3)
    tensor([-0.6000,  1.0000])
    """

    def fn(x):
        if not training:
            return F.where(F.greater(x, 0), x, F.mul(x, (lower + upper) / 2))
        noise = _uniform_like(x, lower, upper)
        return F.where(F.greater(x, 0), x, F.mul(x, noise))

    out = in_place("rrelu_", fn, input, inplace)
    return out if inplace else c_ordered(out)  # (PyTorch's rrelu: C order)


def _uniform_like(x, low: float, high: float):
    """U(low, high) samples of x's shape and dtype: a random node in graph mode (fresh each
    run), drawn now from the `kn.manual_seed` stream in eager mode."""
    if isinstance(x, Symbol):
        with x.graph.as_default():
            return F.random.uniform(x.shape, low, high, dtype=x.dtype)
    if in_trace():  # a constant in a kn.compile trace: still fresh noise on every call
        return F.random.uniform(tuple(x.shape), low, high, dtype=x.dtype)
    seed = next_seed()
    return F.core.call("random_uniform", shape=tuple(x.shape), dtype=x.dtype, seed=seed,
                       low=float(low), high=float(high), key=(seed, 0))  # fmt: skip


def _underscored(fn, name):
    """PyTorch's `F.name_`: `fn(x, ..., inplace=True)`."""

    def inplace_fn(input, *args, **kwargs):  # noqa: A002
        return fn(input, *args, **kwargs, inplace=True)

    inplace_fn.__name__ = inplace_fn.__qualname__ = name
    inplace_fn.__module__ = fn.__module__  # where `name` is defined beside fn (the API docs)
    inplace_fn.__doc__ = f"`{fn.__name__}` in place: overwrites an eager input and returns it."
    return inplace_fn


relu_ = _underscored(relu, "relu_")
selu_ = _underscored(selu, "selu_")
celu_ = _underscored(celu, "celu_")
leaky_relu_ = _underscored(leaky_relu, "leaky_relu_")
hardtanh_ = _underscored(hardtanh, "hardtanh_")
rrelu_ = _underscored(rrelu, "rrelu_")
threshold_ = _underscored(threshold, "threshold_")
