"""Linear algebra: `matmul` with NumPy's batching and broadcasting semantics."""

from __future__ import annotations

import numpy as np

from .. import shapes as sh
from ..errors import ShapeError
from .core import defop, ufunc_dtype


def _matmul_shape(a, b):
    if not a or not b:
        raise ShapeError("matmul: input operand does not have enough dimensions (0-d)")
    a2 = (1, *a) if len(a) == 1 else a
    b2 = (*b, 1) if len(b) == 1 else b
    why = f"matmul: contracting dims differ for {sh.format_shape(a)} @ {sh.format_shape(b)}"
    if a2[-1] != b2[-2]:
        if isinstance(a2[-1], int) and isinstance(b2[-2], int):
            raise ShapeError(f"{why} ({a2[-1]} vs {b2[-2]})")
        sh.require_equal(a2[-1], b2[-2], why)
    batch = sh.broadcast_shapes(a2[:-2], b2[:-2], why="matmul: batch dims do not broadcast")
    out = (*batch, a2[-2], b2[-1])
    if len(a) == 1:
        out = out[:-2] + out[-1:]
    if len(b) == 1:
        out = out[:-1]
    return out


def _matmul(xp, a, b, out=None):
    return xp.matmul(a, b, out=out)


matmul = defop("matmul", _matmul_shape, lambda a, b: ufunc_dtype(np.matmul, a, b), _matmul)
