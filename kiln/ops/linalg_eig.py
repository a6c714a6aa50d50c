"""The eigen-decomposition of general square matrices (`kn.linalg.eig`): `eig_values` and
`eig_vectors`, complex whatever the input (LAPACK's geev, each eigenvector of unit norm).

Two primitives, one per result: a loss of both gets the sum of their vjps, which is PyTorch's
gradient, linear in the two cotangents (with E_ij = conj(L_j - L_i), 1 on the diagonal):

    gA = V^-H (diag(gL) + (V^H gV - V^H V Re(diag(V^H gV))) / E) V^H

(the real part for a real A). As PyTorch's, it is defined only for losses that do not depend
on the phase of each eigenvector, and only for distinct eigenvalues: a loss that reads the
phases raises AutogradError in its backward (`phase_check`, kiln/ops/linalg_factor.py).
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from .. import shapes as sh
from ..errors import DTypeError, ShapeError
from .core import apply, defop, scalar
from .core import constant_like as _constant

_DTYPES = (dt.float32, dt.float64, dt.complex64, dt.complex128)


def _square(a, *, name):
    if len(a) < 2:
        raise ShapeError(f"{name}: A must have at least 2 dims, got {sh.format_shape(a)}")
    sh.require_equal(a[-1], a[-2], f"{name}: A must be batches of square matrices, got "
                     f"{sh.format_shape(a)}")  # fmt: skip
    return a


def _dtype(a):
    if a not in _DTYPES:
        raise DTypeError(f"linalg.eig: float or complex matrices are expected, got {a}")
    return dt.to_complex(a)


def _eig(xp, a):
    if a.size == 0:
        return xp.zeros(a.shape[:-1], _dtype(a.dtype)), xp.zeros(a.shape, _dtype(a.dtype))
    if xp is not np:  # CuPy has no general eigensolver: on the host, and the results back
        values, vectors = np.linalg.eig(a.get())
        return xp.asarray(values), xp.asarray(vectors)
    return np.linalg.eig(a)


def _into(out, result, dtype):
    result = result.astype(dtype, copy=False)
    if out is None:
        return result
    out[...] = result
    return out


def _values(xp, a, out=None):
    return _into(out, _eig(xp, a)[0], _dtype(a.dtype))


def _vectors(xp, a, out=None):
    return _into(out, _eig(xp, a)[1], _dtype(a.dtype))


def _mh(x):
    return apply("conj", apply("transpose", x, perm=(*range(x.ndim - 2), x.ndim - 1, x.ndim - 2)))


def _diagonal(x):
    """The diagonal of each matrix in the last two (static) dims: every (n + 1)-th element."""
    n = x.shape[-1]
    flat = apply("reshape", x, shape=(*x.shape[:-2], n * n))
    spec = (*[("slice", None, None, None)] * (x.ndim - 2), ("slice", None, None, n + 1))
    return apply("index", flat, spec=spec)


def _back(inner, a, vectors):
    """V^-H inner V^H, as `a`'s cotangent (autodiff takes the real part for a real a)."""
    vh = _mh(vectors)
    return apply("solve", vh, apply("matmul", inner, vh))


def _values_vjp(ct, values, a):
    n = ct.shape[-1]
    eye = _constant(np.eye(n, dtype=ct.dtype), ct)
    inner = apply("reshape", ct, shape=(*ct.shape, 1)) * eye  # diag(gL)
    return (_back(inner, a, apply("eig_vectors", a)),)


def _vectors_vjp(ct, vectors, a):
    n = ct.shape[-1]
    vh = _mh(vectors)
    vhgv = apply("matmul", vh, ct)
    # each eigenvector's phase is LAPACK's choice: a loss that reads it has Im(diag) != 0
    # (AutogradError when the backward runs, as PyTorch raises)
    vhgv = apply("phase_check", vhgv, apply("imag", _diagonal(vhgv)),
                 _constant(np.zeros(n, dt.to_real(ct.dtype)), ct), name="linalg.eig",
                 what="eigenvectors")  # fmt: skip
    re_diag = apply("cast", apply("real", _diagonal(vhgv)), dtype=ct.dtype)
    scaled = vectors * apply("reshape", re_diag, shape=(*re_diag.shape[:-1], 1, n))
    projected = vhgv - apply("matmul", vh, scaled)
    lconj = apply("conj", apply("eig_values", a))
    e = apply("reshape", lconj, shape=(*lconj.shape[:-1], 1, n)) - apply(
        "reshape", lconj, shape=(*lconj.shape[:-1], n, 1)
    )
    eye = _constant(np.eye(n, dtype=bool), e)
    e = apply("where", eye, scalar(1, e), e)
    return (_back(projected / e, a, vectors),)


eig_values = defop(
    "eig_values", lambda a: _square(a, name="linalg.eigvals")[:-1], _dtype, _values,
    vjp=_values_vjp, tags={"complex_linear", "autocast_fp32"},
    batch=lambda args, batched: apply("eig_values", args[0]),  # (leading dims: a batch)
)  # fmt: skip
eig_vectors = defop(
    "eig_vectors", lambda a: _square(a, name="linalg.eig"), _dtype, _vectors,
    vjp=_vectors_vjp, tags={"complex_linear", "autocast_fp32"},
    batch=lambda args, batched: apply("eig_vectors", args[0]),  # (leading dims: a batch)
)  # fmt: skip
