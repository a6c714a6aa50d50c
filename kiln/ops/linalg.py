"""Linear algebra: `matmul` with NumPy's batching and broadcasting semantics."""

from __future__ import annotations

import numpy as np

from .. import shapes as sh
from ..errors import ShapeError
from .core import apply, defop, ufunc_dtype


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


def _swap_last(x):
    perm = (*range(x.ndim - 2), x.ndim - 1, x.ndim - 2)
    return apply("transpose", x, perm=perm)


def _unsqueeze(x, axis):
    shape = list(x.shape)
    shape.insert(axis % (x.ndim + 1), 1)
    return apply("reshape", x, shape=tuple(shape))


def _drop(x, axis):
    return apply("reshape", x, shape=tuple(d for i, d in enumerate(x.shape) if i != axis % x.ndim))


def _matmul_vjp(ct, y, a, b, needs=(True, True)):
    """Cotangents of the batch-broadcast shapes; autodiff sums them back to a's and b's.
    Only the `needs`ed ones are computed (a weight's gradient does not need the input's)."""
    need_a, need_b = needs
    if a.ndim == 1 and b.ndim == 1:
        return ct * b if need_a else None, ct * a if need_b else None
    if a.ndim == 1:  # (k) @ (..., k, n) -> (..., n)
        ct2 = _unsqueeze(ct, -2)
        return (
            _drop(apply("matmul", ct2, _swap_last(b)), -2) if need_a else None,
            apply("matmul", _unsqueeze(a, -1), ct2) if need_b else None,
        )
    if b.ndim == 1:  # (..., m, k) @ (k) -> (..., m)
        ct2 = _unsqueeze(ct, -1)
        return (
            apply("matmul", ct2, _unsqueeze(b, 0)) if need_a else None,
            _drop(apply("matmul", _swap_last(a), ct2), -1) if need_b else None,
        )
    return (
        apply("matmul", ct, _swap_last(b)) if need_a else None,
        apply("matmul", _swap_last(a), ct) if need_b else None,
    )


matmul = defop(
    "matmul", _matmul_shape, lambda a, b: ufunc_dtype(np.matmul, a, b), _matmul,
    vjp=_matmul_vjp, tags=("vjp_needs",),
)  # fmt: skip
