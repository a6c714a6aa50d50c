"""LAPACK's compact QR `geqrf` (kiln/ops/linalg_factor.py's family), as PyTorch's
`torch.geqrf`: R on and above the diagonal and the Householder vectors below it (`geqrf`),
and the reflectors' scales (`geqrf_tau`), each an op. PyTorch has no derivative for them;
neither has kiln (backward raises). `ormqr` multiplies by the Q they hold through
`householder_product` (kiln/frontend/linalg_more.py)."""

from __future__ import annotations

import numpy as np

from .. import shapes as sh
from ..errors import ShapeError
from .core import defop
from .linalg_factor import _INEXACT, _batched, _linalg_dtype, _on_host


def _geqrf_each(a):
    """(the compact QR, tau) of each matrix by LAPACK's geqrf."""
    from scipy.linalg import lapack

    m, n = a.shape[-2:]
    packed = np.zeros(a.shape, a.dtype)
    tau = np.zeros((*a.shape[:-2], min(m, n)), a.dtype)
    if min(m, n) == 0:
        return packed, tau
    geqrf = lapack.get_lapack_funcs("geqrf", dtype=a.dtype)
    for idx in np.ndindex(*a.shape[:-2]):
        packed[idx], tau[idx] = geqrf(a[idx])[:2]
    return packed, tau


def _part(k: int):
    @_on_host
    def kernel(xp, a, out=None):
        r = _geqrf_each(a)[k]
        if out is None:
            return r
        out[...] = r
        return out

    return kernel


def _matrices(a):
    if len(a) < 2:
        raise ShapeError(f"geqrf: input must have at least 2 dimensions, got "
                         f"{sh.format_shape(a)}")  # fmt: skip
    return tuple(a)


def _tau_shape(a):
    a = _matrices(a)
    m, n = a[-2], a[-1]
    if not (isinstance(m, int) and isinstance(n, int)):
        raise ShapeError(f"geqrf: the matrix dims must be static, got {sh.format_shape(a)}")
    return (*a[:-2], min(m, n))


geqrf = defop(
    "geqrf", _matrices, _linalg_dtype("geqrf", _INEXACT), _part(0), batch=_batched("geqrf"),
    tags=("complex_linear",),
)  # fmt: skip
geqrf_tau = defop(
    "geqrf_tau", _tau_shape, _linalg_dtype("geqrf", _INEXACT), _part(1),
    batch=_batched("geqrf_tau"), tags=("complex_linear",),
)  # fmt: skip
