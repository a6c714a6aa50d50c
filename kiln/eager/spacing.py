"""The values of PyTorch's CPU `linspace` and `logspace` kernels, which `kn.linspace` and
`kn.logspace` give bit for bit, and of its `arange` of a floating dtype. The first two
convert the ends to the result's dtype (an integer dtype truncates them) and make the value
at index i `start + step * i` in the first half, `end - step * (steps - 1 - i)` in the
second, `step = (end - start) / (steps - 1)`. `linspace` computes in the step's type, each
multiply-add rounded once (its kernel's fused multiply-adds): the result's own type for
float16 and bfloat16 (every operation rounded to it), float32 for float32, float64 for
float64 and integers. `logspace` raises `base` to float64 exponents (not fused) and converts
the powers to the result's dtype.
"""

from __future__ import annotations

import math

import numpy as np

from .. import dtypes as dt

# a float wider than float64 for the fused multiply-adds of float64 steps (x87's 64-bit
# significand where NumPy has it: a product of a step and an index below 2**11 is then exact)
_WIDE = np.longdouble


def _halves(steps: int, lo, hi) -> np.ndarray:
    i = np.arange(steps)
    return np.where(i < steps // 2, lo(i), hi(steps - 1 - i))


def _fma_float64(first: float, last: float, steps: int) -> np.ndarray:
    """The float64 values of a float64 step, each multiply-add rounded once."""
    step = _WIDE((last - first) / (steps - 1))
    return _halves(steps, lambda i: (_WIDE(first) + step * i.astype(_WIDE)).astype(np.float64),
                   lambda j: (_WIDE(last) - step * j.astype(_WIDE)).astype(np.float64))  # fmt: skip


def linspace_values(start, end, steps: int, dtype: np.dtype) -> np.ndarray | None:
    """PyTorch's `linspace` values of a real `dtype` (None for the others: the caller's
    float64 values then serve).

    >>> linspace_values(0.5, 5.5, 4, np.dtype("int64"))
    array([0, 1, 3, 5])
    >>> linspace_values(0, 1, 4, np.dtype("float16"))
    array([0.    , 0.3333, 0.667 , 1.    ], dtype=float16)
    """
    if dtype.kind in "iu":
        first, last = float(np.trunc(start)), float(np.trunc(end))
        if steps == 1:
            return np.array([first]).astype(dtype)
        return np.trunc(_fma_float64(first, last, steps)).astype(dtype)
    if dtype not in (dt.float16, dt.bfloat16, dt.float32, dt.float64):
        return None
    first, last = np.array([start, end], np.float64).astype(dtype)
    if dtype == dt.float64:
        return _fma_float64(float(first), float(last), steps) if steps > 1 else np.array([first])
    if steps == 1:
        return np.array([first], dtype)
    if dtype == dt.float32:  # a float32 step; each value one float64 multiply-add, rounded
        step = np.float64((last - first) / np.float32(steps - 1))
        return _halves(steps, lambda i: (np.float64(first) + step * i).astype(dtype),
                       lambda j: (np.float64(last) - step * j).astype(dtype))  # fmt: skip
    step = ((last - first).astype(dtype) / np.array(steps - 1, dtype)).astype(dtype)

    def times(k):  # step * k, rounded to dtype (as each of the kernel's operations is)
        return (step * k.astype(dtype)).astype(dtype)

    return _halves(steps, lambda i: (first + times(i)).astype(dtype),
                   lambda j: (last - times(j)).astype(dtype))  # fmt: skip


def logspace_values(start, end, steps: int, base: float, dtype: np.dtype) -> np.ndarray:
    """PyTorch's `logspace` values of a real `dtype`: `base` to float64 exponents between
    the ends converted to `dtype` (their difference taken in it; one step: `start` itself),
    the powers converted to `dtype` (float16 and bfloat16 through float32).

    >>> logspace_values(0.5, 2, 4, 10.0, np.dtype("int64"))
    array([  1,   4,  21, 100])
    """
    start, end = float(start), float(end)
    first, last = np.array([start, end], np.float64).astype(dtype)
    if steps == 1:
        exponents = np.array([start])
    else:
        # (C++ takes the difference of integers as int, of floats in their own type)
        if dtype.kind in "iu":
            span = float(int(last) - int(first))
        else:
            span = float(np.asarray(last - first).astype(dtype))
        step = span / (steps - 1)
        first, last = float(first), float(last)
        exponents = _halves(steps, lambda i: first + step * i, lambda j: last - step * j)
    values = np.power(float(base), exponents)
    if dtype.kind in "iu":
        return np.trunc(values).astype(dtype)
    if dtype in (dt.float16, dt.bfloat16):
        values = values.astype(np.float32)
    return values.astype(dtype)


def arange_values(start, end, step, dtype: np.dtype) -> np.ndarray | None:
    """PyTorch's `arange` of a floating `dtype` (None for the others): `ceil((end - start) /
    step)` values `start + step * i`, each computed in the dtype's accumulate type (float64
    for float32 and float64, float32 for float16 and bfloat16) and rounded once to the dtype
    (not accumulated in the dtype, as NumPy's `arange` does: bfloat16 values 29 times off).
    PyTorch's vectorized kernel rounds some of them differently, by an ulp.

    >>> arange_values(-17, -15, 0.3, np.dtype("float16"))
    array([-17. , -16.7, -16.4, -16.1, -15.8, -15.5, -15.2], dtype=float16)
    """
    acc = _ACCUMULATE.get(dtype)
    if acc is None:
        return None
    count = max(math.ceil((float(end) - float(start)) / float(step)), 0)
    values = np.arange(count, dtype=acc)  # (in float32, exact below 2**24)
    values *= acc.type(step)
    values += acc.type(start)
    return values if acc is dtype else values.astype(dtype)


# the accumulate type of PyTorch's CPU arange per floating dtype
_ACCUMULATE = {dt.float16: dt.float32, dt.bfloat16: dt.float32, dt.float32: dt.float64,
               dt.float64: dt.float64}  # fmt: skip
