"""The `_ex` forms of `cholesky` and `inv` (kiln/ops/linalg_factor.py's family): the factor
or inverse and an `info` code of each matrix, without raising: LAPACK's potrf order of the
first leading minor that is not positive-definite, getrf's first zero pivot (1-based), or 0.
A singular matrix's inverse is NaN (in each part of a complex one), as PyTorch's."""

from __future__ import annotations

import numpy as np

from .core import apply, defop
from .linalg_decomp import _cholesky_vjp
from .linalg_factor import (
    _INEXACT,
    _batched,
    _getrf,
    _int_dtype,
    _linalg_dtype,
    _mh,
    _mm,
    _on_host,
    _square,
)


def _potrf_each(a):
    """(L, info) of each matrix by LAPACK's potrf: info 0, or the order of the first leading
    minor that is not positive-definite (L then holds what potrf left)."""
    from scipy.linalg import lapack

    n = a.shape[-1]
    lower = np.zeros(a.shape, a.dtype)
    info = np.zeros(a.shape[:-2], np.int32)
    if n == 0:
        return lower, info
    potrf = lapack.get_lapack_funcs("potrf", dtype=a.dtype)
    for idx in np.ndindex(*a.shape[:-2]):
        c, info[idx] = potrf(a[idx], lower=1, clean=1)
        lower[idx] = np.tril(c)
    return lower, np.maximum(info, 0)


@_on_host
def _cholesky_ex(xp, a, out=None):
    r = _potrf_each(a)[0]
    if out is None:
        return r
    out[...] = r
    return out


cholesky_ex = defop(
    "cholesky_ex", _square("linalg.cholesky_ex"), _linalg_dtype("linalg.cholesky_ex", _INEXACT),
    _cholesky_ex, vjp=_cholesky_vjp, batch=_batched("cholesky_ex"),
    tags=("autocast_fp32", "complex_linear"),
)  # fmt: skip


def _info_shape(name):
    def rule(a):
        _square(name)(a)
        return tuple(a[:-2])

    return rule


@_on_host
def _cholesky_info(xp, a, out=None):
    r = _potrf_each(a)[1]
    if out is None:
        return r
    out[...] = r
    return out


cholesky_info = defop(
    "cholesky_info", _info_shape("linalg.cholesky_ex"),
    _int_dtype(np.int32, "linalg.cholesky_ex", _INEXACT), _cholesky_info,
    tags=("nondiff", "complex_linear"), batch=_batched("cholesky_info"),
)  # fmt: skip


def _getrf_info(a):
    """LAPACK getrf's info of each matrix: 0, or the 1-based index of U's first zero pivot."""
    lu_, _ = _getrf(a)
    n = a.shape[-1]
    zero = np.diagonal(lu_, axis1=-2, axis2=-1) == 0
    first = np.argmax(zero, axis=-1) + 1 if n else np.zeros(a.shape[:-2], np.int64)
    return np.where(zero.any(axis=-1), first, 0).astype(np.int32) if n else first.astype(np.int32)


@_on_host
def _inv_ex(xp, a, out=None):
    """The inverses; a singular matrix's is NaN (no error: `inv_info` reports it)."""
    try:
        r = np.linalg.inv(a)
    except np.linalg.LinAlgError:
        r = np.empty_like(a)
        for idx in np.ndindex(*a.shape[:-2]):
            try:
                r[idx] = np.linalg.inv(a[idx])
            except np.linalg.LinAlgError:  # NaN in each part of a complex one, as PyTorch's
                r[idx] = complex(np.nan, np.nan) if r.dtype.kind == "c" else np.nan
    if out is None:
        return r
    out[...] = r
    return out


inv_ex = defop(
    "inv_ex", _square("linalg.inv_ex"), _linalg_dtype("linalg.inv_ex", _INEXACT), _inv_ex,
    vjp=lambda ct, y, a: (apply("neg", _mm(_mh(y), _mm(ct, _mh(y)))),),  # -Yᴴ Y̅ Yᴴ
    batch=_batched("inv_ex"), tags=("autocast_fp32", "complex_linear"),
)  # fmt: skip


@_on_host
def _inv_info(xp, a, out=None):
    r = _getrf_info(a)
    if out is None:
        return r
    out[...] = r
    return out


inv_info = defop(
    "inv_info", _info_shape("linalg.inv_ex"), _int_dtype(np.int32, "linalg.inv_ex", _INEXACT),
    _inv_info, tags=("nondiff", "complex_linear"), batch=_batched("inv_info"),
)  # fmt: skip
