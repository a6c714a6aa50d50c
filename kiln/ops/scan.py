"""Scans along one axis: cumulative sums and products, logcumsumexp, and the running argmax
and argmin (PyTorch's cummax/cummin indices). Attrs: `axis` (a non-negative int; 0-d inputs
scan as one element) and, for sums, `reverse` (scan from the end)."""

from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from ..errors import ShapeError, UnsupportedDTypeError
from .core import apply, batch_along_axis, defop, scalar


def _axis_shape(x, *, axis, **_):
    if not 0 <= axis < max(len(x), 1):
        raise ShapeError(f"dim {axis} is out of bounds for a tensor of dimension {len(x)}")
    return tuple(x)


def _accumulated_dtype(x, **_):
    """PyTorch's cumsum/cumprod: integers and bools accumulate in int64, floats keep."""
    return x if dt.is_float(x) or x.kind == "c" else np.dtype(np.int64)


def _float_only(name):
    def rule(x, **_):
        if not dt.is_float(x):
            raise UnsupportedDTypeError(f"{name} needs a floating point tensor, got {x}")
        return x

    return rule


def _inexact_only(name):
    def rule(x, **_):
        if not dt.is_float(x) and x.kind != "c":
            raise UnsupportedDTypeError(f"{name} needs a floating point tensor, got {x}")
        return x

    return rule


def _scan(xp, fn, x, out, axis, reverse, dtype=None):
    """`fn(x, axis)` (an accumulate), from the end when `reverse`, into `out` if given."""
    x1 = x.reshape(1) if x.ndim == 0 else x
    if reverse:
        x1 = xp.flip(x1, axis)
    r = fn(x1, axis) if dtype is None else fn(x1, axis).astype(dtype, copy=False)
    if reverse:
        r = xp.flip(r, axis)
    r = r.reshape(x.shape)
    if out is None:
        return r if r.flags.c_contiguous else r.copy()  # (ascontiguousarray makes 0-d 1-d)
    out[...] = r
    return out


def _wide(dtype, xp=np):
    """(accumulator dtype, result dtype): PyTorch accumulates float16 and bfloat16 in float32,
    and on the CPU float32 and complex64 in float64 and complex128 (its CPU accumulator type),
    rounding each partial result once."""
    dtype = _accumulated_dtype(dtype)
    if dtype in (dt.float16, dt.bfloat16):
        return np.dtype(np.float32), dtype
    if xp is np and dtype in (dt.float32, dt.complex64):
        return np.dtype(np.float64 if dtype == dt.float32 else np.complex128), dtype
    return dtype, None


def _running(xp, ufunc: str, a, axis, dtype):
    """`a` accumulated by the ufunc along `axis`: on NumPy its `accumulate`, called from here
    so that its floating-point warnings are kiln's, which kiln's filter silences
    (kiln/runtime/backend.py; np.cumsum's come from NumPy's own module); elsewhere (CuPy)
    `cumsum` or `cumprod`."""
    if xp is np:
        return getattr(np, ufunc).accumulate(a, axis=axis, dtype=dtype)
    return (xp.cumsum if ufunc == "add" else xp.cumprod)(a, axis=axis, dtype=dtype)


def _cumsum(xp, x, out=None, *, axis, reverse):
    acc, dtype = _wide(x.dtype, xp)
    fn = lambda a, k: _running(xp, "add", a, k, acc)  # noqa: E731
    return _scan(xp, fn, x, out, axis, reverse, dtype)


cumsum = defop(
    "cumsum", _axis_shape, _accumulated_dtype, _cumsum,
    vjp=lambda ct, y, x, axis, reverse: (apply("cumsum", ct, axis=axis, reverse=not reverse),),
    batch=batch_along_axis("cumsum"),
    tags={"complex_linear"},
)  # fmt: skip


def _cumprod(xp, x, out=None, *, axis):
    acc, dtype = _wide(x.dtype, xp)
    fn = lambda a, k: _running(xp, "multiply", a, k, acc)  # noqa: E731
    return _scan(xp, fn, x, out, axis, False, dtype)


def _cumprod_vjp(ct, y, x, *, axis):
    """d y_j / d x_i = prod_{k <= j, k != i} x_k, as PyTorch computes it. Before a slice's
    first zero that is y_j / x_i: the reverse cumsum over x of ct * y up to that zero (terms
    past it left out, so that an inf or NaN there does not reach it). At the first zero z: the
    products of the x between z and each j up to the next zero, weighted by ct_j (0 from the
    next zero on) and summed, times y_{z-1}. After it, every term holds x_z and is 0. A dim of
    size 1 (or none: 0-d) passes ct on."""
    if x.shape[axis : axis + 1] in ((), (1,)):
        return (ct,)
    zero = apply("equal", x, scalar(0, x))
    zeros_so_far = apply("cumsum", apply("cast", zero, dtype=np.int64), axis=axis, reverse=False)
    before = apply("equal", zeros_so_far, scalar(0, zeros_so_far))
    up_to_next = apply("equal", zeros_so_far, scalar(1, zeros_so_far))
    first = apply("logical_and", zero, up_to_next)
    one, zero_ct = scalar(1, x), scalar(0, ct)
    plain = apply("cumsum", apply("where", before, ct * y, zero_ct), axis=axis, reverse=True)
    plain = plain / apply("where", zero, one, x)
    between = apply("where", apply("logical_and", up_to_next, apply("logical_not", first)), x, one)
    weighted = apply("cumprod", between, axis=axis) * apply("where", up_to_next, ct, zero_ct)
    at_first = apply("cumsum", weighted, axis=axis, reverse=True) * apply(
        "cumprod", apply("where", before, x, one), axis=axis
    )
    return (apply("where", before, plain, apply("where", first, at_first, zero_ct)),)


cumprod = defop(
    "cumprod", _axis_shape, _accumulated_dtype, _cumprod, vjp=_cumprod_vjp,
    batch=batch_along_axis("cumprod"),
    tags={"complex"},
)  # fmt: skip


def _accumulate(xp, ufunc: str, a, axis):
    """`xp.<ufunc>.accumulate(a, axis)`; on the host where the device lacks that kernel."""
    try:
        return getattr(xp, ufunc).accumulate(a, axis=axis)
    except (AttributeError, NotImplementedError, TypeError):
        if xp is np:
            raise
        return xp.asarray(getattr(np, ufunc).accumulate(xp.asnumpy(a), axis=axis))


def _complex_logaddexp_accumulate(xp, a, axis):
    """Running log(exp(a_0) + ... + exp(a_k)) of complex values along `axis`, one step at a
    time from -inf + 0j, as PyTorch's: of the running value and the next, the one with the
    smaller real part (the running value on ties) `lo` and the other `hi`; NaN (in either
    part) where either has one; where both real parts are the same infinity, `lo` (-inf:
    so -inf + 4j starts a scan as -inf + 0j) or log(exp + exp) (+inf); else hi plus
    log1p(exp(lo - hi)), so nothing overflows (the imaginary part is not wrapped)."""
    a = xp.moveaxis(a, axis, 0)
    r = xp.empty_like(a)
    acc = xp.full(a.shape[1:], complex(-np.inf, 0.0), a.dtype)
    with np.errstate(all="ignore"):
        for k in range(a.shape[0]):
            new = a[k]
            new_lower = new.real < acc.real
            lo, hi = xp.where(new_lower, new, acc), xp.where(new_lower, acc, new)
            same_inf = ~xp.isfinite(lo.real) & (lo.real == hi.real)
            both = xp.where(lo.real < 0, lo, xp.log(xp.exp(lo) + xp.exp(hi)))
            step = xp.where(same_inf, both, hi + xp.log1p(xp.exp(lo - hi)))
            acc = r[k] = xp.where(xp.isnan(new) | xp.isnan(acc), complex(np.nan, np.nan), step)
    return xp.moveaxis(r, 0, axis)


def _logcumsumexp(xp, x, out=None, *, axis, reverse):
    acc, dtype = _wide(x.dtype, xp)  # (as cumsum's)
    if x.dtype.kind == "c":
        fn = lambda a, k: _complex_logaddexp_accumulate(xp, a.astype(acc), k)  # noqa: E731
    else:
        fn = lambda a, k: _accumulate(xp, "logaddexp", a.astype(acc, copy=False), k)  # noqa: E731
    return _scan(xp, fn, x, out, axis, reverse, dtype)


def _lowest(dtype) -> float:
    try:
        return float(np.finfo(dtype).min)
    except (TypeError, ValueError):  # a dtype NumPy has no finfo for: -inf as before
        return -np.inf


def _logcumsumexp_vjp(ct, y, x, *, axis, reverse):
    """d y_j / d x_i = exp(x_i - y_j) for i before j: the cotangent is a scan of
    ct_j exp(x_i - y_j) the other way, summed in log space for ct's positive and negative
    parts separately so that nothing overflows. For complex x (PyTorch's gradient, the
    conjugate of the analytic one): conj(exp(x + logcumsumexp(log(conj(ct)) - y))) with the
    scan reversed, the complex log carrying ct's phase."""
    if x.dtype.kind == "c":
        s = apply("logcumsumexp", apply("log", apply("conj", ct)) - y, axis=axis,
                  reverse=not reverse)  # fmt: skip
        return (apply("conj", apply("exp", s + x)),)
    zero = scalar(0, ct)
    # where a part has no element: the lowest finite value (PyTorch's), not -inf, whose scan
    # is -inf with a NaN derivative (a second derivative through it would be NaN, or lost)
    lowest = scalar(_lowest(ct.dtype), ct)
    parts = []
    for positive in (True, False):
        mag = ct if positive else -ct
        has = apply("greater", mag, zero)
        log_mag = apply("log", apply("where", has, mag, scalar(1, ct)))
        log_mag = apply("where", has, log_mag, lowest)
        s = apply("logcumsumexp", log_mag - y, axis=axis, reverse=not reverse)
        parts.append(apply("exp", s + x))
    return (parts[0] - parts[1],)


logcumsumexp = defop(
    "logcumsumexp", _axis_shape, _inexact_only("logcumsumexp"), _logcumsumexp,
    vjp=_logcumsumexp_vjp, batch=batch_along_axis("logcumsumexp"),
    tags=("complex_linear",),  # complex values: the vjp has its own branch
)  # fmt: skip


def _running_arg(better):
    """The index of the running maximum (or minimum) along `axis`: the latest among ties, and
    NaN wins (then the latest NaN), as PyTorch's cummax/cummin."""

    def impl(xp, x, out=None, *, axis):
        x1 = x.reshape(1) if x.ndim == 0 else x
        best = _accumulate(xp, better, x1, axis) if x1.size else x1
        hit = x1 == best
        if dt.is_float(x1.dtype):
            hit |= xp.isnan(x1)
        shape = [1] * x1.ndim
        shape[axis] = x1.shape[axis]
        positions = xp.arange(x1.shape[axis], dtype=np.int64).reshape(shape)
        marked = xp.where(hit, positions, 0)
        r = (_accumulate(xp, "maximum", marked, axis) if marked.size else marked).reshape(x.shape)
        if out is None:
            return r.astype(np.int64, copy=False)
        out[...] = r
        return out

    return impl


def _index_dtype(x, **_):
    return np.dtype(np.int64)


cummax_index = defop("cummax_index", _axis_shape, _index_dtype, _running_arg("maximum"),
                     batch=batch_along_axis("cummax_index"))  # fmt: skip
cummin_index = defop("cummin_index", _axis_shape, _index_dtype, _running_arg("minimum"),
                     batch=batch_along_axis("cummin_index"))  # fmt: skip
