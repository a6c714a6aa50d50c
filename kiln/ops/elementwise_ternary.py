"""The ternary elementwise ops, `where` and `clip`: kernels, gradients and scalar forms
(numba and C) in their op records. Part of the elementwise family (kiln/ops/elementwise.py)."""

from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from .. import shapes as sh
from .core import apply, defop, probe_dtype, scalar
from .elementwise import _masked
from .lowering import Lowering, c_cast, nb_type


def _where(xp, cond, a, b, out=None):
    if out is None:
        return xp.where(cond, a, b)
    xp.copyto(out, b)
    xp.copyto(out, a, where=cond if cond.dtype == bool else cond.astype(bool))
    return out


def _where_vjp(ct, z, cond, a, b):
    zero = scalar(0, ct)
    return None, apply("where", cond, ct, zero), apply("where", cond, zero, ct)


def _where_numba(xs, dtypes, out, attrs):
    r = nb_type(out)
    cond = xs[0] if dtypes[0] == np.dtype(bool) else f"({xs[0]} != 0)"
    return f"{r}({xs[1]}) if {cond} else {r}({xs[2]})"


def _where_c(k, xs, dtypes, out, attrs):
    cond = xs[0] if dtypes[0] == np.bool_ else f"(({xs[0]}) != 0)"
    a, b = (c_cast(x, d, out) for x, d in zip(xs[1:], dtypes[1:]))
    return f"({cond} ? {a} : {b})"


where = defop(
    "where",
    lambda c, a, b: sh.broadcast_shapes(c, a, b),
    lambda c, a, b: dt.promote(a, b),
    _where,
    vjp=_where_vjp,
    tags={"elementwise", "no_inplace", "complex_linear"},  # its kernel writes `out` first
    lowering=Lowering(exact=True, numba=_where_numba, cuda=_where_c),
)


def _clip(xp, x, lo, hi, out=None):
    if x.dtype.kind == "V" and x.dtype == lo.dtype == hi.dtype:
        # NumPy clips ml_dtypes' bfloat16 (and float8) in float32: the result is one of the
        # operands, so rounding it back is exact (the dtype stays the input's, as PyTorch's)
        result = xp.clip(x, lo, hi).astype(x.dtype)
        if out is None:
            return result
        out[...] = result
        return out
    return xp.clip(x, lo, hi, out=out)


def _clip_dtype(x, lo, hi):
    """The operands' dtype when they share one (NumPy's probe would widen bfloat16 to
    float32), else NumPy's promotion."""
    return x if x == lo == hi else probe_dtype(np.clip, x, lo, hi)


def _clip_vjp(ct, y, x, lo, hi, *, needs):
    # As PyTorch's clamp: x takes the cotangent where lo <= x <= hi (bounds included, never at
    # NaN), lo where x < lo < hi, hi where x > hi or hi < lo (then y is hi throughout).
    x_mask = apply("logical_and", x >= lo, x <= hi) if needs[0] else None
    lo_mask = apply("logical_and", x < lo, lo < hi) if needs[1] else None
    hi_mask = apply("logical_or", x > hi, hi < lo) if needs[2] else None
    return tuple(None if m is None else _masked(ct, m) for m in (x_mask, lo_mask, hi_mask))


def _clip_numba(xs, dtypes, out, attrs):
    """NumPy's clip of scalars of one dtype: NaN anywhere gives NaN; a tie keeps x (NumPy's
    loops keep x or the bound: equal values, which may differ only in the sign of a zero)."""
    r = nb_type(out)
    x, lo, hi = (f"{r}({a})" for a in xs)
    if out.kind != "f":
        low = f"({lo} if {x} < {lo} else {x})"
        return f"({hi} if {low} > {hi} else {low})"
    low = f"({lo} if {lo} != {lo} or {x} < {lo} else {x})"
    return f"({hi} if {hi} != {hi} or {low} > {hi} else {low})"


def _clip_c(k, xs, dtypes, out, attrs):
    """As `_clip_numba`, in C."""
    x, lo, hi = (c_cast(a, d, out) for a, d in zip(xs, dtypes))
    if out.kind != "f":
        low = f"(({x} < {lo}) ? {lo} : {x})"
        return f"(({low} > {hi}) ? {hi} : {low})"
    low = f"((isnan({lo}) || {x} < {lo}) ? {lo} : {x})"
    return f"((isnan({hi}) || {low} > {hi}) ? {hi} : {low})"


clip = defop(
    "clip",
    lambda x, lo, hi: sh.broadcast_shapes(x, lo, hi),
    _clip_dtype,
    _clip,
    vjp=_clip_vjp,
    tags={"elementwise", "vjp_needs"},
    lowering=Lowering(exact=True, numba=_clip_numba, cuda=_clip_c),
)
