"""PyTorch's float32 formulas of half-precision (float16, bfloat16) ops, where kiln's own
composites round differently: values, and backward formulas that `with_grad` nodes name
(registered in `GRAD_FORMULAS`, kiln/ops/state.py). Each follows one of PyTorch's CPU
kernels step by step: its float32 constants, its order of operations, the products that its
compiler fuses into the following sum (`fma32`), its vectorized exp/log1p/tanh (correctly
rounded but at rare ties: `exp32`, `log1p32`, `tanh32`) and erf (a polynomial: `_erf32`).
var's and std's backward formulas serve float32 and float64 inputs too.

>>> import kiln as kn
>>> kn.nn.functional.gelu(kn.tensor([-4.0, 1.0], dtype=kn.float16))
tensor([-1.2672e-04,  8.4131e-01], dtype=kiln.float16)
"""

from __future__ import annotations

import math

import numpy as np

from .. import shapes as sh
from ..ops.state import GRAD_FORMULAS
from .core import call, with_grad
from .math import (
    _reduce,
    add,
    div,
    equal,
    exp,
    greater,
    less,
    less_equal,
    log1p,
    mul,
    neg,
    sigmoid,
    sub,
    tanh,
    where,
)
from .math import abs as absolute

# -- float32 steps as PyTorch's kernels take them -------------------------------------------


def fma32(a, b, c):
    """`a * b + c` of float32 values rounded once (a fused multiply-add)."""
    wide = [call("cast", v, dtype=np.dtype(np.float64)) if not isinstance(v, float) else v
            for v in (a, b, c)]  # fmt: skip
    return call("cast", add(mul(wide[0], wide[1]), wide[2]), dtype=np.dtype(np.float32))


def rounded32(fn, v):
    """`fn(v)` of float32 `v` computed in float64 and rounded to float32: the correctly
    rounded value but at rare ties, as PyTorch's vectorized exp, log1p, tanh (SLEEF's, within
    an ulp and nearly always correctly rounded) give it, where NumPy's float32 loops miss by
    an ulp more often."""
    wide = fn(call("cast", v, dtype=np.dtype(np.float64)))
    return call("cast", wide, dtype=np.dtype(np.float32))


def exp32(v):
    """float32 exp, correctly rounded (`rounded32`)."""
    return rounded32(exp, v)


def log1p32(v):
    """float32 log1p, correctly rounded (`rounded32`)."""
    return rounded32(log1p, v)


def tanh32(v):
    """float32 tanh as PyTorch's vectorized one: correctly rounded (`rounded32`), and ±1
    from |v| > 8.664339742 (where the correctly rounded value is 1 - 2**-24 for a while)."""
    return where(
        greater(absolute(v), 8.664339742), where(less(v, 0.0), -1.0, 1.0), rounded32(tanh, v)
    )


_F32 = np.float32
_ERF_T = float(_F32(0.3275911))
_ERF_P = [float(_F32(c)) for c in (1.061405429, -1.453152027, 1.421413741, -0.284496736)]
_ERF_P1 = float(_F32(0.254829592))


def _erf32(v):
    """float32 erf as PyTorch's vectorized one: Abramowitz and Stegun's 7.1.26 polynomial."""
    t = div(1.0, fma32(_ERF_T, absolute(v), 1.0))
    r = fma32(_ERF_P[0], t, _ERF_P[1])
    for c in (*_ERF_P[2:], _ERF_P1):
        r = fma32(r, t, c)
    e = exp(neg(mul(v, v)))
    magnitude = fma32(mul(neg(e), t), r, 1.0)
    return where(less(v, 0.0), neg(magnitude), magnitude)


# -- gelu (its vectorized loops) ---------------------------------------------------------------
# PyTorch's float32 constants; erf is Abramowitz and Stegun's 7.1.26 (|error| < 1.5e-7) in
# fused multiply-adds, and its compiler fuses a product that feeds a sum (`1 - t * t`).
_SQRT1_2 = float(_F32(math.sqrt(0.5)))
_GELU_BETA = float(_F32(2 / math.sqrt(math.pi) * math.sqrt(0.5) * 0.5))  # 1/sqrt(2 pi)
_TANH_BETA, _TANH_KAPPA = float(_F32(math.sqrt(2) * 2 / math.sqrt(math.pi) * 0.5)), 0.044715
_TANH_KAPPA3 = float(_F32(3) * _F32(_TANH_KAPPA))


def gelu32(x, approximate: str):
    """gelu of float32 `x` (a half input's copy) by PyTorch's formula, its gradient too."""
    if approximate == "none":
        return with_grad(_gelu_erf32(x), x, ("gelu_none",), x)
    return with_grad(_gelu_tanh32(x), x, ("gelu_tanh",), x)


def _gelu_erf32(x):
    return mul(mul(x, 0.5), add(_erf32(mul(x, _SQRT1_2)), 1.0))


def _gelu_erf_grad(ct, x):
    cdf = mul(add(_erf32(mul(x, _SQRT1_2)), 1.0), 0.5)
    pdf = mul(exp(mul(mul(x, x), -0.5)), _GELU_BETA)
    return mul(ct, fma32(x, pdf, cdf))


def _tanh_inner(x):
    return mul(fma32(mul(mul(x, x), x), _TANH_KAPPA, x), _TANH_BETA)


def _gelu_tanh32(x):
    return mul(mul(x, 0.5), add(tanh32(_tanh_inner(x)), 1.0))


def _gelu_tanh_grad(ct, x):
    t = tanh32(_tanh_inner(x))
    left, right = mul(x, 0.5), add(t, 1.0)
    inner_derivative = mul(fma32(mul(x, x), _TANH_KAPPA3, 1.0), _TANH_BETA)
    left_tanh = mul(left, fma32(neg(t), t, 1.0))
    return mul(ct, fma32(left_tanh, inner_derivative, mul(right, 0.5)))


GRAD_FORMULAS.update(gelu_none=_gelu_erf_grad, gelu_tanh=_gelu_tanh_grad)


# -- activations ---------------------------------------------------------------------------------


def _logsigmoid_grad(ct, x, buffer):
    # the kernel's: (max_deriv - sign * buffer / (1 + buffer)) * ct, buffer = exp(-|x|);
    # its own derivative is PyTorch's -sigmoid(x) (1 - sigmoid(x)), smooth at 0 (through
    # |x| the second derivative there came out 0, where PyTorch's is -0.25)
    negative = less(x, 0.0)
    fraction = div(buffer, add(buffer, 1.0))
    deriv = sub(where(negative, 1.0, 0.0), mul(where(negative, 1.0, -1.0), fraction))
    return mul(with_grad(deriv, x, ("logsigmoid_second",), x), ct)


def _logsigmoid_second_grad(ct, x):
    s = sigmoid(x)
    return mul(ct, neg(mul(s, sub(1.0, s))))


def _hardswish_grad(ct, x):  # 0 at -3 and ct at 3, as torch 2.13's kernel
    mid = mul(ct, add(div(x, 3.0), 0.5))
    return where(less_equal(x, -3.0), 0.0, where(less(x, 3.0), mid, ct))


# NOTE: PyTorch's compiler fuses a product feeding a sum (`1 + x * (1 - s)`) into one
# rounding: `fma32` does so here.
def _sigmoid32(x):
    return div(1.0, add(exp32(neg(x)), 1.0))


def tanh_softplus32(x):
    return tanh32(log1p32(exp32(x)))


def _silu_grad(ct, x):
    s = _sigmoid32(x)
    return mul(mul(ct, s), fma32(x, sub(1.0, s), 1.0))


def _mish_grad(ct, x):
    s, t = _sigmoid32(x), tanh_softplus32(x)
    return mul(ct, fma32(mul(x, s), fma32(neg(t), t, 1.0), t))


def _softplus_grad(ct, x, beta, threshold):
    bx = mul(x, beta)
    above = greater(bx, threshold)
    z = exp(where(above, 0.0, bx))  # NOTE: no inf above the threshold (second order)
    return where(above, ct, div(mul(ct, z), add(z, 1.0)))


# -- var and std: PyTorch's var_backward (half precision, and float32/float64 inputs) -------


def batched_axes(x, axes, ndim) -> tuple:
    """`axes` of a value of `ndim` dims, for x with leading batch dims (vmap's rules run a
    `with_grad` formula on batched values: kiln/ops/state.py)."""
    return tuple(a + x.ndim - ndim for a in axes)


def _var_grad(ct, x, axes, keepdim, correction, ndim):
    # PyTorch's var_backward in x's dtype, each step rounded: (2 / (n - correction)) * ct *
    # (x - mean(x))
    axes = batched_axes(x, axes, ndim)
    if not keepdim:
        ct = call("reshape", ct, shape=tuple(1 if a in axes else d for a, d in enumerate(x.shape)))
    n = sh.dim_product(x.shape[a] for a in axes)
    centered = sub(x, _reduce("reduce_mean", x, axes, True))
    return mul(mul(ct, 2.0 / (n - correction)), centered)


def _std_grad(ct, x, y, *params):
    # PyTorch's std_backward: var's of ct / (2 y), 0 where y is 0
    grad = div(ct, mul(y, 2.0))
    grad = where(equal(y, 0), 0.0, grad)
    return _var_grad(grad, x, *params)


# PyTorch's float32 backward formulas of half-precision activations, as its CPU kernels write
# them (each step's order too); bound by `with_grad` on the float32 copies of half inputs.
GRAD_FORMULAS.update(
    logsigmoid=_logsigmoid_grad,
    logsigmoid_second=_logsigmoid_second_grad,
    hardswish=_hardswish_grad,
    silu=_silu_grad,
    mish=_mish_grad,
    softplus=_softplus_grad,
    var=_var_grad,
    std=_std_grad,
)
