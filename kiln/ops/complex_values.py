"""Complex-number primitives: the parts of a complex value (`real`, `imag`, `angle`), its
conjugate, a complex value from its parts (`complex`), and the reinterpretations
`view_as_real` / `view_as_complex`.

Gradients follow PyTorch's convention: the cotangent of a complex value is the conjugate
Wirtinger derivative of a real loss, `dL/dRe + i dL/dIm`, so each vjp below is that of the
real map between the real and imaginary parts.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from .. import shapes as sh
from ..errors import DTypeError, DTypeMismatchError, ShapeError
from .core import apply, defop, same_shape, scalar
from .lowering import Lowering

_NO_SCALAR_FORM = Lowering(not_lowered="complex values: the fused kernels have no complex type")


def _complex_input(name):
    def rule(x, **_):
        if x.kind != "c":
            raise DTypeError(f"{name} expects a complex input, got {x}")
        return dt.to_real(x)

    return rule


def _copy_into(xp, result, out):
    if out is None:
        return result
    out[...] = result
    return out


def _real_vjp(ct, y, x):
    return (apply("cast", ct, dtype=x.dtype),)  # ct + 0i


def _imag_vjp(ct, y, x):
    return (apply("cast", ct, dtype=x.dtype) * scalar(1j, x),)  # i ct


def _part(name):
    """The kernel of `real` or `imag`: a view of the complex array's parts (PyTorch's are
    views: writing into one writes into the complex value), copied into `out` if given."""

    def kernel(xp, x, out=None):
        part = getattr(xp, name)(x)
        if out is None:
            return part
        out[...] = part
        return out

    return kernel


real = defop(
    "real", same_shape, _complex_input("real"), _part("real"), vjp=_real_vjp, views=(0,),
    tags={"elementwise", "complex_linear"}, lowering=_NO_SCALAR_FORM,
)  # fmt: skip
imag = defop(
    "imag", same_shape, _complex_input("imag"), _part("imag"), vjp=_imag_vjp, views=(0,),
    tags={"elementwise", "complex_linear"}, lowering=_NO_SCALAR_FORM,
)  # fmt: skip


def _conj_dtype(x):
    if x.kind != "c":
        raise DTypeError(f"conj of a real value is the value itself (got {x})")
    return x


conj = defop(
    "conj", same_shape, _conj_dtype, lambda xp, x, out=None: xp.conjugate(x, out=out),
    vjp=lambda ct, y, x: (apply("conj", ct),), tags={"elementwise", "complex_linear"},
    lowering=_NO_SCALAR_FORM,
)  # fmt: skip


def _angle_dtype(x):
    if x.kind == "c":
        return dt.to_real(x)
    if x.kind == "b" or x.kind in "iu":
        return dt.DEFAULT_FLOAT
    return x


def _angle(xp, x, out=None):
    if x.dtype.kind in "biu":  # in the default float (NumPy's angle of int8 is a float16 pi)
        x = x.astype(_angle_dtype(x.dtype))
    if dt.is_float(x.dtype):  # real values: pi where x < 0 (so 0 at -0.0), NaN stays NaN
        result = xp.where(x < 0, xp.asarray(np.pi, x.dtype), xp.zeros((), x.dtype))
        result = xp.where(xp.isnan(x), x, result)
    else:
        result = xp.asarray(xp.angle(x))
    return _copy_into(xp, result.astype(_angle_dtype(x.dtype), copy=False), out)


def _angle_vjp(ct, y, x):
    if x.dtype.kind != "c":
        return (ct * scalar(0, ct),)  # PyTorch: zeros for real values
    r2 = apply("real", x * apply("conj", x))  # |x|^2
    zero = scalar(0, r2)
    safe = apply("where", apply("equal", r2, zero), scalar(1, r2), r2)
    g = apply("cast", ct / safe, dtype=x.dtype) * x * scalar(1j, x)  # i x / |x|^2
    return (apply("where", apply("equal", r2, zero), scalar(0, g), g),)


angle = defop(
    "angle", same_shape, _angle_dtype, _angle, vjp=_angle_vjp,
    tags={"elementwise", "complex_linear"}, lowering=_NO_SCALAR_FORM,
)  # fmt: skip


def _complex_dtype(re, im):
    if re != im or re not in (dt.float32, dt.float64):  # PyTorch's RuntimeError
        raise DTypeMismatchError(
            f"complex expects the real and imaginary parts of one dtype, float32 or float64 "
            f"(got {re} and {im})"
        )
    return dt.to_complex(re)


def _complex(xp, re, im, out=None):
    # each part written as it is: `re + im * 1j` turns an infinite or NaN im into NaN re
    # (inf * 1j is nan + infj), where PyTorch keeps re
    shape = np.broadcast_shapes(re.shape, im.shape)
    result = out if out is not None else xp.empty(shape, dt.to_complex(re.dtype))
    result.real[...] = re
    result.imag[...] = im
    return result


def _broadcast2(a, b):
    return sh.broadcast_shapes(a, b)


complex_ = defop(
    "complex", _broadcast2, _complex_dtype, _complex,
    vjp=lambda ct, z, re, im: (apply("real", ct), apply("imag", ct)),
    tags={"elementwise", "no_inplace"}, lowering=_NO_SCALAR_FORM,
)  # fmt: skip


def _as_real_shape(x):
    return (*x, 2)


def _as_real_dtype(x):
    if x.kind != "c":
        raise DTypeError(f"view_as_real is only supported for complex tensors (got {x})")
    return dt.to_real(x)


def _as_complex_shape(x):
    if not x or x[-1] != 2:
        raise ShapeError(f"Tensor must have a last dimension of size 2 (got shape {x})")
    return tuple(x[:-1])


def _as_complex_dtype(x):
    if x not in (dt.float32, dt.float64):
        raise DTypeError(f"view_as_complex is only supported for float and double tensors ({x})")
    return dt.to_complex(x)


def _view_as_real(xp, x, out=None):
    """The complex array x read as pairs of reals: a view of x's memory (PyTorch's), each
    element's two parts a last dim of stride 1; a copy only where the array module cannot
    view it (CuPy on some strides)."""
    try:
        parts = x[..., None].view(x.real.dtype)
    except (ValueError, TypeError):
        parts = xp.stack([xp.real(x), xp.imag(x)], axis=-1)
    return _copy_into(xp, parts, out)


def _view_as_complex(xp, x, out=None):
    """The real pairs of x's last dim read as complex values: a view of x's memory when the
    pair's two elements are neighbours (as PyTorch requires of its input; the frontend checks
    the user's), else a copy (a cotangent, say, broadcast along that dim)."""
    if x.strides[-1] == x.itemsize:
        try:
            return _copy_into(xp, x.view(dt.to_complex(x.dtype))[..., 0], out)
        except (ValueError, TypeError):
            pass
    return _complex(xp, x[..., 0], x[..., 1], out=out)


view_as_real = defop(
    "view_as_real", _as_real_shape, _as_real_dtype, _view_as_real,
    vjp=lambda ct, y, x: (apply("view_as_complex", ct),), tags={"complex_linear"}, views=(0,),
    batch=lambda args, batched: apply("view_as_real", args[0]),  # (per element)
)  # fmt: skip
view_as_complex = defop(
    "view_as_complex", _as_complex_shape, _as_complex_dtype, _view_as_complex,
    vjp=lambda ct, y, x: (apply("view_as_real", ct),), views=(0,),
    batch=lambda args, batched: apply("view_as_complex", args[0]),  # (per last-dim pair)
)  # fmt: skip
