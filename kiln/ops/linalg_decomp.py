"""Factorizations over batches of square matrices: `cholesky` (the lower factor of a
symmetric positive-definite matrix), and `logabsdet` and `slogdet_sign`, the two results of
PyTorch's `slogdet` (a determinant's log magnitude, stable where `det` under- or overflows,
and its sign)."""

from __future__ import annotations

import numpy as np

from ..errors import LinAlgError, ShapeError
from ..graph.core import Symbol
from ..graph.opdef import REGISTRY, ArrayValue
from .core import apply, defop, scalar
from .linalg import _INEXACT, _linalg_dtype, _square_shape, _swap_last, _unsqueeze


def _cholesky(xp, a, out=None):
    try:
        r = xp.linalg.cholesky(a)
    except np.linalg.LinAlgError:
        raise LinAlgError(
            "linalg.cholesky: The factorization could not be completed because the input is "
            "not positive-definite"
        ) from None
    if xp is not np and not bool(xp.isfinite(r).all()):  # CuPy gives NaNs instead of raising
        raise LinAlgError("linalg.cholesky: the input is not positive-definite")
    if out is None:
        return r
    out[...] = r
    return out


def _mh(x):
    """The conjugate transpose of each matrix (the transpose of a real one)."""
    t = _swap_last(x)
    return apply("conj", t) if x.dtype.kind == "c" else t


def _cholesky_vjp(ct, lower, a):
    """A = L Lᴴ: Ā = L⁻ᴴ ½ (tril(X) + tril(X, -1)ᴴ) L⁻¹ with X = Lᴴ L̄ (PyTorch's: the
    factorization reads one triangle; for a real A the gradient is symmetric, for a complex
    one Hermitian but for the imaginary parts of X's diagonal, which PyTorch keeps)."""
    n = a.shape[-1]
    if not isinstance(n, int):
        raise ShapeError("cholesky's gradient needs a static matrix size, got a symbolic one")
    x = apply("matmul", _mh(lower), ct)
    tril = apply("mul", x, _constant(np.tril(np.ones((n, n))).astype(a.dtype), a))
    strict = apply("mul", x, _constant(np.tril(np.ones((n, n)), -1).astype(a.dtype), a))
    inner = apply("mul", apply("add", tril, _mh(strict)), scalar(0.5, a))
    inv = apply("inv", lower)
    return (apply("matmul", _mh(inv), apply("matmul", inner, inv)),)


def _constant(array, like):
    """`array` as a constant beside `like` (in its graph, or an array for eager mode)."""
    if isinstance(like, Symbol):
        node = like.graph.add_node(REGISTRY["constant"], (), {"value": ArrayValue(array)},
                                   "constant", shape=array.shape, dtype=array.dtype)  # fmt: skip
        return node.out
    return array


cholesky = defop(
    "cholesky", _square_shape("cholesky"),
    _linalg_dtype("cholesky", (np.float32, np.float64, np.complex64, np.complex128)), _cholesky,
    vjp=_cholesky_vjp, may_fail=True,
    batch=lambda args, batched: apply("cholesky", args[0]),
    tags=("autocast_fp32", "complex_linear"),
)  # fmt: skip


def _det_shape(a):
    return _square_shape("det")(a)


def _slogdet_part(k: int):
    """The kernel of slogdet's result `k` (0: the sign, 1: log |det|)."""

    def kernel(xp, a, out=None):
        with np.errstate(all="ignore"):  # (a warning from NumPy's module: kiln's det)
            r = xp.asarray(xp.linalg.slogdet(a)[k])
        if out is None:
            return r
        out[...] = r
        return out

    return kernel


def _inverse_h(a):
    """A⁻ᴴ (A⁻ᵀ for a real A)."""
    return _mh(apply("inv", a))


def _logabsdet_vjp(ct, y, a):
    # d log|det A| = Re tr(A⁻¹ dA): Ā = ct A⁻ᴴ (A⁻ᵀ for a real A)
    ct = _unsqueeze(_unsqueeze(ct, -1), -1)
    if a.dtype.kind == "c":
        ct = apply("cast", ct, dtype=a.dtype)
    return (apply("mul", ct, _inverse_h(a)),)


def _slogdet_sign_vjp(ct, sign, a):
    # A complex A's sign s = det/|det| moves with its phase: d s = i s Im tr(A⁻¹ dA), so
    # Ā = i Im(conj(s) ct) A⁻ᴴ (PyTorch's). A real A's sign is piecewise constant: no gradient.
    if a.dtype.kind != "c":
        return (None,)
    turn = apply("imag", apply("mul", apply("conj", sign), ct))
    turn = apply("complex", apply("mul", turn, scalar(0, turn)), turn)  # i Im(...)
    return (apply("mul", _unsqueeze(_unsqueeze(turn, -1), -1), _inverse_h(a)),)


def _real_result(name):
    """slogdet's log |det|: real, of a complex matrix too (float32 for complex64)."""
    rule = _linalg_dtype(name, _INEXACT)

    def real(*dtypes):
        d = np.dtype(rule(*dtypes))
        return np.dtype(np.float32 if d == np.complex64 else np.float64) if d.kind == "c" else d

    return real


# slogdet's parts take complex matrices too: a complex sign, a real log |det| (PyTorch's);
# their vjps are written for complex values ("complex_linear": used as they are)
logabsdet = defop(
    "logabsdet", _det_shape, _real_result("logabsdet"), _slogdet_part(1), vjp=_logabsdet_vjp,
    batch=lambda args, batched: apply("logabsdet", args[0]), tags=("complex_linear",),
)  # fmt: skip


slogdet_sign = defop(
    "slogdet_sign", _det_shape, _linalg_dtype("slogdet", _INEXACT), _slogdet_part(0),
    vjp=_slogdet_sign_vjp, batch=lambda args, batched: apply("slogdet_sign", args[0]),
    tags=("complex_linear",),
)  # fmt: skip
