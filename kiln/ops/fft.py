"""Discrete Fourier transforms: three primitives over a tuple of `axes`, from which `kn.fft`
builds PyTorch's functions (kiln/frontend/fft.py).

- `fft_c2c`: complex to complex, the forward (`forward=True`, e^{-2 pi i jk/n}) or inverse
  transform.
- `fft_r2c`: real to complex, forward, keeping the n // 2 + 1 non-negative frequencies of the
  last axis (the others are their conjugates).
- `fft_c2r`: the inverse of `fft_r2c`: complex half spectra to a real signal whose last axis
  has `n` points.

`scale` is what the result is divided by: "none", "n" (the product of the signal's sizes
along `axes`) or "sqrt" (its square root). Gradients are PyTorch's: a C-linear map's adjoint
(the transform of the other direction, same scale); for the real transforms, the half
spectrum padded with zeros or folded back by conjugate symmetry.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from ..errors import DTypeError, ShapeError
from .core import apply, constant_like, defop

_SCALES = ("none", "n", "sqrt")


def numpy_norm(forward: bool, scale: str) -> str:
    """The `norm` of NumPy's (and CuPy's) fft functions for a transform of this direction and
    scale: "backward" scales the inverse by 1/n, "forward" the forward one, "ortho" both."""
    if scale == "sqrt":
        return "ortho"
    return "backward" if (scale == "none") == forward else "forward"


def _check(axes, scale, shape, name):
    if scale not in _SCALES:
        raise ShapeError(f"{name}: scale must be one of {_SCALES}, got {scale!r}")
    if len(set(axes)) != len(axes) or any(not 0 <= a < len(shape) for a in axes):
        raise ShapeError(f"{name}: axes {axes} must be distinct dims of {shape}")
    if not axes:
        raise ShapeError(f"{name}: no axes to transform")


def _static_last(shape, axes, name):
    d = shape[axes[-1]]
    if not isinstance(d, int):
        raise ShapeError(f"{name}: the last transformed dim must be static, got {d}")
    return d


def _copy_into(out, result):
    if out is None:
        return result
    out[...] = result
    return out


def _empty_signal(x, axes) -> bool:
    return any(x.shape[a] == 0 for a in axes)


# -- complex to complex ------------------------------------------------------------------------


def _c2c_shape(x, *, axes, forward, scale):
    _check(axes, scale, x, "fft_c2c")
    return x


def _c2c_dtype(x, *, axes, forward, scale):
    if x.kind != "c":
        raise DTypeError(f"fft_c2c expects a complex input, got {x}")
    return x


def _c2c(xp, x, out=None, *, axes, forward, scale):
    if _empty_signal(x, axes):
        return _copy_into(out, xp.zeros(x.shape, x.dtype))
    fn = xp.fft.fftn if forward else xp.fft.ifftn
    result = fn(x, axes=axes, norm=numpy_norm(forward, scale))
    return _copy_into(out, result.astype(x.dtype, copy=False))


def _c2c_vjp(ct, y, x, *, axes, forward, scale):
    return (apply("fft_c2c", ct, axes=axes, forward=not forward, scale=scale),)


def _batched(name):
    def rule(args, batched, *, axes, **attrs):
        return apply(name, args[0], axes=tuple(a + 1 for a in axes), **attrs)

    return rule


fft_c2c = defop(
    "fft_c2c", _c2c_shape, _c2c_dtype, _c2c, vjp=_c2c_vjp, tags={"complex_linear"},
    batch=_batched("fft_c2c"),
)  # fmt: skip


# -- real to complex (the non-negative frequencies of the last axis) ---------------------------


def _r2c_shape(x, *, axes, scale):
    _check(axes, scale, x, "fft_r2c")
    n = _static_last(x, axes, "fft_r2c")
    out = list(x)
    out[axes[-1]] = n // 2 + 1
    return tuple(out)


def _real_input(name):
    def rule(x, **_):
        if x not in (dt.float32, dt.float64):
            raise DTypeError(f"{name} expects a float32 or float64 input, got {x}")
        return dt.to_complex(x)

    return rule


def _r2c(xp, x, out=None, *, axes, scale):
    dtype = dt.to_complex(x.dtype)
    if _empty_signal(x, axes):
        shape = list(x.shape)
        shape[axes[-1]] = x.shape[axes[-1]] // 2 + 1
        return _copy_into(out, xp.zeros(tuple(shape), dtype))
    result = xp.fft.rfftn(x, axes=axes, norm=numpy_norm(True, scale))
    return _copy_into(out, result.astype(dtype, copy=False))


def _r2c_vjp(ct, y, x, *, axes, scale):
    # the half spectrum's cotangent, padded with zeros to the full spectrum, through the
    # adjoint of the full transform; the real part (x is real)
    last = axes[-1]
    pad = [(0, 0)] * ct.ndim
    pad[last] = (0, x.shape[last] - ct.shape[last])
    full = apply("pad", ct, pad_width=tuple(pad), value=0.0) if pad[last][1] else ct
    return (apply("real", apply("fft_c2c", full, axes=axes, forward=False, scale=scale)),)


fft_r2c = defop(
    "fft_r2c", _r2c_shape, _real_input("fft_r2c"), _r2c, vjp=_r2c_vjp,
    batch=_batched("fft_r2c"),
)  # fmt: skip


# -- complex (half spectra) to real ------------------------------------------------------------


def _c2r_shape(x, *, axes, n, scale):
    _check(axes, scale, x, "fft_c2r")
    have = _static_last(x, axes, "fft_c2r")
    if n < 1 or have != n // 2 + 1:
        raise ShapeError(
            f"fft_c2r: a signal of {n} points has {n // 2 + 1} non-negative frequencies along "
            f"dim {axes[-1]}, got {have}"
        )
    out = list(x)
    out[axes[-1]] = n
    return tuple(out)


def _c2r_dtype(x, *, axes, n, scale):
    if x.kind != "c":
        raise DTypeError(f"fft_c2r expects a complex input, got {x}")
    return dt.to_real(x)


def _c2r(xp, x, out=None, *, axes, n, scale):
    dtype = dt.to_real(x.dtype)
    if _empty_signal(x, axes):
        shape = list(x.shape)
        shape[axes[-1]] = n
        return _copy_into(out, xp.zeros(tuple(shape), dtype))
    sizes = [x.shape[a] for a in axes[:-1]] + [n]
    result = xp.fft.irfftn(x, s=sizes, axes=axes, norm=numpy_norm(False, scale))
    return _copy_into(out, result.astype(dtype, copy=False))


def _c2r_vjp(ct, y, x, *, axes, n, scale):
    # the forward real transform of the cotangent (same scale), with the frequencies whose
    # conjugates the half spectrum stands for counted twice (PyTorch's rule)
    g = apply("fft_r2c", ct, axes=axes, scale=scale)
    m = n // 2 + 1
    twice = n - m
    if twice <= 0:
        return (g,)
    weights = np.ones(m, g.dtype)
    weights[1 : 1 + twice] = 2
    shape = [1] * g.ndim
    shape[axes[-1]] = m
    return (g * constant_like(weights.reshape(shape), g),)


fft_c2r = defop(
    "fft_c2r", _c2r_shape, _c2r_dtype, _c2r, vjp=_c2r_vjp, tags={"complex_linear"},
    batch=_batched("fft_c2r"),
)  # fmt: skip
