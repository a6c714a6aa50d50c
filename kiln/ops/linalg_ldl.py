"""The LDLᵀ (LDLᴴ with `hermitian`) factorization of symmetric matrices by LAPACK's
Bunch-Kaufman `sytrf`/`hetrf` and its solve `sytrs`/`hetrs` (kiln/ops/linalg_factor.py's
family), as PyTorch's `linalg.ldl_factor`, `ldl_factor_ex` and `ldl_solve`: the compact
factor LD (the lower triangle LAPACK leaves; its upper part zero), LAPACK's 1-based pivots
(negative for the 2 x 2 blocks) and its info code, each an op reading the lower triangle of
A. PyTorch has no derivative for them; neither has kiln (backward raises)."""

from __future__ import annotations

import numpy as np

from .. import shapes as sh
from ..errors import DTypeError, DTypeMismatchError, ShapeError
from .core import defop
from .linalg_factor import _INEXACT, _batched, _int_dtype, _linalg_dtype, _on_host, _square


def _trf_each(a, hermitian: bool):
    """(LD, pivots, info) of each matrix by LAPACK's sytrf (hetrf for a Hermitian one)."""
    from scipy.linalg import lapack

    n = a.shape[-1]
    ld = np.zeros(a.shape, a.dtype)
    pivots = np.zeros(a.shape[:-1], np.int32)
    info = np.zeros(a.shape[:-2], np.int32)
    if n == 0:
        return ld, pivots, info
    name = "hetrf" if hermitian and a.dtype.kind == "c" else "sytrf"
    trf = lapack.get_lapack_funcs(name, dtype=a.dtype)
    for idx in np.ndindex(*a.shape[:-2]):
        factor, ipiv, info[idx] = trf(a[idx], lower=1)
        ld[idx], pivots[idx] = np.tril(factor), ipiv
    return ld, pivots, np.maximum(info, 0)


def _part(k: int):
    @_on_host
    def kernel(xp, a, out=None, *, hermitian):
        r = _trf_each(a, hermitian)[k]
        if out is None:
            return r
        out[...] = r
        return out

    return kernel


def _pivots_shape(a, **_):
    return tuple(_square("linalg.ldl_factor")(a)[:-1])


def _info_shape(a, **_):
    return tuple(_square("linalg.ldl_factor_ex")(a)[:-2])


ldl_factor = defop(
    "ldl_factor", _square("linalg.ldl_factor"), _linalg_dtype("linalg.ldl_factor", _INEXACT),
    _part(0), batch=_batched("ldl_factor"), tags=("complex_linear",),
)  # fmt: skip
ldl_pivots = defop(
    "ldl_pivots", _pivots_shape, _int_dtype(np.int32, "linalg.ldl_factor", _INEXACT), _part(1),
    batch=_batched("ldl_pivots"), tags=("nondiff", "complex_linear"),
)  # fmt: skip
ldl_info = defop(
    "ldl_info", _info_shape, _int_dtype(np.int32, "linalg.ldl_factor_ex", _INEXACT), _part(2),
    batch=_batched("ldl_info"), tags=("nondiff", "complex_linear"),
)  # fmt: skip


def _solve_shape(ld, pivots, b, **_):
    _square("linalg.ldl_solve")(ld)
    if len(b) < 2:
        raise ShapeError(f"linalg.ldl_solve: B must have at least 2 dims, got "
                         f"{sh.format_shape(b)}")  # fmt: skip
    if tuple(pivots) != tuple(ld[:-1]):
        raise ShapeError(f"linalg.ldl_solve: pivots of shape {sh.format_shape(pivots)} do not "
                         f"match LD of shape {sh.format_shape(ld)}")  # fmt: skip
    sh.require_equal(b[-2], ld[-1], f"linalg.ldl_solve: LD {sh.format_shape(ld)} and B "
                     f"{sh.format_shape(b)} have different numbers of rows")  # fmt: skip
    return (*sh.broadcast_shapes(tuple(ld[:-2]), tuple(b[:-2])), b[-2], b[-1])


def _solve_dtype(ld, pivots, b, **_):
    if np.dtype(pivots).kind not in "iu":
        raise DTypeError(f"linalg.ldl_solve: pivots must be integers, got {pivots}")
    if ld != b:
        raise DTypeMismatchError(
            f"linalg.ldl_solve: Expected B and LD to have the same dtype, but found B of type "
            f"{b} and LD of type {ld} instead"
        )
    return _linalg_dtype("linalg.ldl_solve", _INEXACT)(ld, b)


@_on_host
def _ldl_solve(xp, ld, pivots, b, out=None, *, hermitian):
    from scipy.linalg import lapack

    batch = np.broadcast_shapes(ld.shape[:-2], b.shape[:-2])
    ld = np.broadcast_to(ld, (*batch, *ld.shape[-2:]))
    pivots = np.broadcast_to(pivots, (*batch, pivots.shape[-1]))
    b = np.broadcast_to(b, (*batch, *b.shape[-2:]))
    r = np.zeros(b.shape, np.result_type(ld, b))
    if r.size:
        name = "hetrs" if hermitian and r.dtype.kind == "c" else "sytrs"
        trs = lapack.get_lapack_funcs(name, dtype=r.dtype)
        for idx in np.ndindex(*batch):
            r[idx] = trs(ld[idx].astype(r.dtype), pivots[idx], b[idx].astype(r.dtype),
                         lower=1)[0]  # fmt: skip
    if out is None:
        return r
    out[...] = r
    return out


ldl_solve = defop(
    "ldl_solve", _solve_shape, _solve_dtype, _ldl_solve, batch=_batched("ldl_solve"),
    tags=("complex_linear",),
)  # fmt: skip
