"""Factorizations and solvers of `kn.linalg` over batches of matrices (the last two dims):
`qr`, `eigh`, `svd` and `lu`, whose several results are one array (see "Packed results"),
`lu_pivots`, `solve_triangular`, `matrix_exp`, `pinv`, `lstsq_rank`, and the `_ex` forms of
`cholesky` and `inv` that report failure in an `info` result instead of raising.

Packed results: an op gives one array per node and per eager tensor, so a factorization's
results (Q and R; the eigenvalues and eigenvectors; U, S and Vh; P, L and U) are laid side
by side along the last axis of one array of shape (*batch, total), each flattened, in the
order of `parts(...)`; `unpack` gives them back as views. One node (or one eager kernel)
computes them together, and its vjp takes the cotangents of all of them at once (an unused
result's cotangent is zeros), so the standard matrix-calculus rules apply unchanged in
eager mode, graph mode and under `kn.compile`.

Gradients (real matrices; ᵀ the transpose, ∘ the elementwise product, A̅ the cotangent):
- qr (A = QR, m >= n): A̅ = (Q̅ + Q N) R⁻ᵀ with M = R̅ Rᵀ - Qᵀ Q̅ and
  N = triu(M) + triu(M, 1)ᵀ; for m < n the first m columns take that
  rule (with Q̅ + Y R̅₂ᵀ, Y the other columns) and the others Q R̅₂.
- eigh (A = V Λ Vᵀ): A̅ = V (diag(Λ̅) + F ∘ ½(W - Wᵀ)) Vᵀ with W = Vᵀ V̅, F_ij = 1/(λ_j - λ_i).
- svd (A = U S Vᵀ): A̅ = U (F ∘ (J - Jᵀ) S + S F ∘ (K - Kᵀ) + diag(S̅)) Vᵀ with J = Uᵀ U̅,
  K = Vᵀ V̅, F_ij = 1/(s_j² - s_i²), plus (I - U Uᵀ) U̅ S⁻¹ Vᵀ (m > n) or
  U S⁻¹ V̅ᵀ (I - V Vᵀ) (m < n).
- lu (A = P L U): A̅ = P L⁻ᵀ (tril(Lᵀ L̅, -1) + triu(U̅ Uᵀ)) U⁻ᵀ, with the rectangular cases
  reduced to it.
The eigenvector and singular-vector terms divide by differences of eigenvalues (squared
singular values): where two are equal the gradient is not finite (inf or NaN), as PyTorch's.
Losses that do not depend on the vectors' signs (the gauge) get the same gradient from
every sign choice.

Complex matrices (qr, eigh, svd, lu, pinv, solve_triangular, matrix_exp, cholesky_ex, inv_ex;
"complex_linear" ops, their vjps written for PyTorch's convention, the conjugate Wirtinger
derivative): the same rules with ᴴ for ᵀ (lu's; matrix_exp's Fréchet derivative at Aᴴ), and
- qr: LAPACK's R has a real diagonal, so N's diagonal keeps its real part alone:
  A̅ = (Q̅ + Q (T + Tᴴ)) R⁻ᴴ, T = triu(M, 1) + ½ I ∘ M.
- eigh and svd: each vector is fixed only up to a phase e^(iφ) (U's column and Vh's row
  together). A loss that does not depend on the phases has Im(diag(Vᴴ V̅)) = 0 (eigh) and
  Im(diag(Uᴴ U̅)) = -Im(diag(Vᴴ V̅)) (svd); `phase_check` verifies that when the backward
  runs (PyTorch's bounds, 1e-2) and raises AutogradError otherwise, as PyTorch raises. svd's
  gradient then has the phases' share i Im(diag(Uᴴ U̅)) / S on its diagonal.
The eigenvalues and singular values are real: the packed array of a complex matrix holds
them as complex numbers with a zero imaginary part, and the frontend takes their real part.

CUDA: qr, eigh, svd and pinv run CuPy's `linalg` there; the ops that need SciPy's LAPACK
wrappers (lu, lu_pivots, solve_triangular, matrix_exp, lstsq_rank, cholesky_ex, inv_ex and
their `info`s) copy their operands to the host and the result back (`_on_host`).
"""

from __future__ import annotations

import functools
import math
import warnings

import numpy as np

from .. import shapes as sh
from ..errors import AutogradError, DTypeError, ShapeError
from .core import apply, defop, scalar
from .linalg import _linalg_dtype as _matrices_dtype
from .linalg import _swap_last, _unsqueeze
from .linalg_decomp import _constant

_ALL = ("slice", None, None, None)


# -- shapes, packing -------------------------------------------------------------------------


def _matrix_dims(name, a):
    """(m, n) of the matrices in shape `a`: static ints (the factors' sizes depend on them)."""
    if len(a) < 2:
        raise ShapeError(f"{name}: the input must have at least 2 dims, got {sh.format_shape(a)}")
    m, n = a[-2], a[-1]
    if not (isinstance(m, int) and isinstance(n, int)):
        raise ShapeError(f"{name}: the matrix dims must be static, got {sh.format_shape(a)}")
    return m, n


def parts(op: str, m: int, n: int, **attrs) -> list:
    """The trailing shapes of the results op `op` packs, for m x n matrices.

    >>> parts("qr", 4, 3, mode="reduced"), parts("svd", 2, 3, full_matrices=True)
    ([(4, 3), (3, 3)], [(2, 2), (2,), (3, 3)])
    """
    k = min(m, n)
    if op == "qr":
        return [(m, m), (m, n)] if attrs["mode"] == "complete" else [(m, k), (k, n)]
    if op == "eigh":
        return [(n,), (n, n)]
    if op == "svd":
        if attrs["full_matrices"]:
            return [(m, m), (k,), (n, n)]
        return [(m, k), (k,), (k, n)]
    if op == "lu":
        return [(m, m), (m, k), (k, n)]
    raise KeyError(op)


def _packed_shape(op):
    def rule(a, **attrs):
        m, n = _matrix_dims(f"linalg.{op}", a)
        if op == "eigh" and m != n:
            raise ShapeError(f"linalg.eigh: a batch of square matrices is expected, got "
                             f"{sh.format_shape(a)}")  # fmt: skip
        total = sum(math.prod(s) for s in parts(op, m, n, **attrs))
        return (*a[:-2], total)

    return rule


def _pack(xp, results, lead, out):
    """The `results` (each of `lead` batch dims) flattened side by side along the last axis
    (into `out` when given)."""
    flat = [r.reshape(*r.shape[:lead], math.prod(r.shape[lead:])) for r in results]
    if out is None:
        return xp.concatenate(flat, axis=-1)
    offset = 0
    for f in flat:
        out[..., offset : offset + f.shape[-1]] = f
        offset += f.shape[-1]
    return out


def unpack(packed, op: str, m: int, n: int, **attrs) -> list:
    """The results of op `op` (on m x n matrices) in `packed`, as views.

    >>> import numpy as np
    >>> q, r = unpack(np.arange(8.0), "qr", 2, 2, mode="reduced")
    >>> q.tolist(), r.tolist()
    ([[0.0, 1.0], [2.0, 3.0]], [[4.0, 5.0], [6.0, 7.0]])
    """
    batch = tuple(packed.shape[:-1])
    head = (_ALL,) * len(batch)
    out, offset = [], 0
    for s in parts(op, m, n, **attrs):
        size = math.prod(s)
        piece = apply("index", packed, spec=(*head, ("slice", offset, offset + size, None)))
        out.append(apply("reshape", piece, shape=(*batch, *s)))
        offset += size
    return out


def _linalg_dtype(name, kinds=(np.float32, np.float64)):
    """Operands of `kinds` (float32 or float64 unless given; as `inv`'s rule), the op's attrs
    aside."""
    rule = _matrices_dtype(name, kinds)
    return lambda *dtypes, **_: rule(*dtypes)


_INEXACT = (np.float32, np.float64, np.complex64, np.complex128)


def _on_host(kernel):
    """`kernel` (NumPy and SciPy's LAPACK) for every device: on a GPU the operands are copied
    to the host and the result back (CuPy has no batched LU, triangular solve, expm, gelsy
    or potrf with info)."""

    @functools.wraps(kernel)
    def run(xp, *arrays, out=None, **attrs):
        if xp is np:
            return kernel(np, *arrays, out=out, **attrs)
        result = xp.asarray(kernel(np, *[a.get() for a in arrays], **attrs))
        if out is None:
            return result
        out[...] = result
        return out

    return run


def _batched(name):
    """The batching rule of an op batched over leading dims: the same op."""
    return lambda args, batched, **attrs: apply(name, *args, **attrs)


# -- small graph helpers for the vjps --------------------------------------------------------


def _mm(a, b):
    return apply("matmul", a, b)


def _mh(x):
    """The conjugate transpose of each matrix (the transpose of a real one)."""
    t = _swap_last(x)
    return apply("conj", t) if x.dtype.kind == "c" else t


def _diagonal(x):
    """The diagonal of each (static, square) matrix in the last two dims: every (n + 1)-th
    element of its flattened form."""
    n = x.shape[-1]
    flat = apply("reshape", x, shape=(*x.shape[:-2], n * n))
    return apply("index", flat, spec=(*(_ALL,) * (x.ndim - 2), ("slice", None, None, n + 1)))


def _imag_diagonal(x):
    """i Im(diag(x)) as a diagonal matrix of x's (complex) dtype: (D - D^H) / 2, D = I ∘ x."""
    d = _diag_embed(_diagonal(x))
    return apply("mul", _sub(d, _mh(d)), scalar(0.5, x))


def _phase_checked(x, a, b, name, what):
    """`x`, once the run finds `a` close to `b` (each imaginary part of a diagonal: a loss
    that does not depend on the complex phases of the vectors has them equal)."""
    return apply("phase_check", x, apply("imag", a), apply("imag", b), name=name, what=what)


def _mask(x, upper: bool, k: int = 0):
    rows, cols = x.shape[-2], x.shape[-1]
    ones = np.ones((rows, cols))
    mask = np.triu(ones, k) if upper else np.tril(ones, k)
    return apply("mul", x, _constant(mask.astype(x.dtype), x))


def _eye(n, like):
    return _constant(np.eye(n, dtype=like.dtype), like)


def _diag_embed(v):
    return apply("mul", _unsqueeze(v, -1), _eye(v.shape[-1], v))


def _cols(x, lo, hi):
    return apply("index", x, spec=((_ALL,) * (x.ndim - 1)) + (("slice", lo, hi, None),))


def _rows(x, lo, hi):
    return apply("index", x, spec=((_ALL,) * (x.ndim - 2)) + (("slice", lo, hi, None),))


def _cat(xs, axis):
    return apply("concat", *xs, axis=axis % xs[0].ndim)


def _tri_solve(a, b, upper, unit=False):
    return apply("solve_triangular", a, b, upper=upper, unitriangular=unit)


def _right_inv_t(x, r, upper, unit=False):
    """x R⁻ᴴ for triangular R: (R⁻¹ xᴴ)ᴴ (x R⁻ᵀ for real ones)."""
    return _mh(_tri_solve(r, _mh(x), upper, unit))


def _quotient(num, den):
    """num / den, 0 where num is 0: a term the loss does not feed stays 0 at a zero gap (a
    fed one is inf or NaN there, as PyTorch's)."""
    zero = scalar(0, num)
    return apply("where", apply("equal", num, zero), zero, apply("div", num, den))


def _sub(a, b):
    return apply("sub", a, b)


def _add(a, b):
    return apply("add", a, b)


# -- qr ----------------------------------------------------------------------------------------


def _qr(xp, a, out=None, *, mode):
    q, r = xp.linalg.qr(a, mode=mode)
    return _pack(xp, [q, r], a.ndim - 2, out)


def _qr_square_vjp(q, r, gq, gr):
    """A = QR with R square: A̅ = (Q̅ + Q (T + Tᴴ)) R⁻ᴴ, T = triu(M, 1) + ½ I ∘ M,
    M = R̅Rᴴ - QᴴQ̅ (for a real A, T + Tᵀ = triu(M) + triu(M, 1)ᵀ; for a complex one the
    diagonal keeps M's real part: R's diagonal is real, Q's phases follow from it)."""
    mm = _sub(_mm(gr, _mh(r)), _mm(_mh(q), gq))
    n = mm.shape[-1]
    half = (np.triu(np.ones((n, n)), 1) + 0.5 * np.eye(n)).astype(mm.dtype)
    t = apply("mul", mm, _constant(half, mm))
    return _right_inv_t(_add(gq, _mm(q, _add(t, _mh(t)))), r, upper=True)


def _qr_vjp(ct, y, a, *, mode):
    m, n = a.shape[-2], a.shape[-1]
    if mode == "complete" and m > n:
        raise AutogradError(
            "linalg.qr: the QR decomposition is not differentiable when mode='complete' and "
            f"nrows > ncols (got {m} x {n})"
        )
    q, r = unpack(y, "qr", m, n, mode=mode)
    gq, gr = unpack(ct, "qr", m, n, mode=mode)
    if m >= n:
        return (_qr_square_vjp(q, r, gq, gr),)
    r1 = _cols(r, 0, m)
    gr1, gr2 = _cols(gr, 0, m), _cols(gr, m, n)
    rest = _cols(a, m, n)  # Y = Q R₂: R₂'s cotangent reaches Q as Y R̅₂ᴴ, Y as Q R̅₂
    ga1 = _qr_square_vjp(q, r1, _add(gq, _mm(rest, _mh(gr2))), gr1)
    return (_cat([ga1, _mm(q, gr2)], -1),)


def _qr_shape(a, *, mode):
    if mode not in ("reduced", "complete"):
        raise ShapeError(f"linalg.qr: mode must be 'reduced' or 'complete', got {mode!r}")
    return _packed_shape("qr")(a, mode=mode)


qr = defop("qr", _qr_shape, _linalg_dtype("linalg.qr", _INEXACT), _qr, vjp=_qr_vjp,
           batch=_batched("qr"), tags=("autocast_fp32", "complex_linear"))  # fmt: skip


# -- eigh --------------------------------------------------------------------------------------


def _eigh(xp, a, out=None, *, upper):
    w, v = xp.linalg.eigh(a, UPLO="U" if upper else "L")
    return _pack(xp, [w, v], a.ndim - 2, out)


def _eigh_vjp(ct, y, a, *, upper):
    n = a.shape[-1]
    lam, v = unpack(y, "eigh", n, n, upper=upper)
    glam, gv = unpack(ct, "eigh", n, n, upper=upper)
    w = _mm(_mh(v), gv)
    if a.dtype.kind == "c":  # each column's phase is LAPACK's choice: the loss must not read it
        w = _phase_checked(w, _diagonal(w), _constant(np.zeros(n, a.dtype), a), "linalg.eigh",
                           "eigenvectors")  # fmt: skip
    skew = apply("mul", _sub(w, _mh(w)), scalar(0.5, a))
    # E_ij = λ_j - λ_i, with ones on the diagonal (where the skew part is 0, or i Im(W_ii),
    # which the phase check bounds)
    gaps = _add(_sub(_unsqueeze(lam, -2), _unsqueeze(lam, -1)), _eye(n, a))
    inner = _add(_quotient(skew, gaps), _diag_embed(glam))
    return (_mm(v, _mm(inner, _mh(v))),)


eigh = defop("eigh", _packed_shape("eigh"), _linalg_dtype("linalg.eigh", _INEXACT), _eigh,
             vjp=_eigh_vjp, batch=_batched("eigh"),
             tags=("autocast_fp32", "complex_linear"))  # fmt: skip


# -- svd ---------------------------------------------------------------------------------------


def _svd(xp, a, out=None, *, full_matrices):
    u, s, vh = xp.linalg.svd(a, full_matrices=full_matrices)
    return _pack(xp, [u, s, vh], a.ndim - 2, out)


def _svd_vjp(ct, y, a, *, full_matrices):
    m, n = a.shape[-2], a.shape[-1]
    k = min(m, n)
    u, s, vh = unpack(y, "svd", m, n, full_matrices=full_matrices)
    gu, gs, gvh = unpack(ct, "svd", m, n, full_matrices=full_matrices)
    if full_matrices and m != n:  # the extra columns of U (rows of Vh) are not A's function
        u, gu = _cols(u, 0, k), _cols(gu, 0, k)
        vh, gvh = _rows(vh, 0, k), _rows(gvh, 0, k)
    j = _mm(_mh(u), gu)
    kk = _mm(vh, _mh(gvh))
    complex_ = a.dtype.kind == "c"
    if complex_:  # U e^{iφ} and V e^{iφ} are as good: the loss must not read φ
        j = _phase_checked(j, _diagonal(j), apply("neg", _diagonal(kk)), "linalg.svd",
                           "singular vectors")  # fmt: skip
    s_row, s_col = _unsqueeze(s, -2), _unsqueeze(s, -1)
    sq = apply("mul", s, s)
    gaps = _add(_sub(_unsqueeze(sq, -2), _unsqueeze(sq, -1)), _eye(k, a))  # s_j² - s_i²
    inner = _add(apply("mul", _sub(j, _mh(j)), s_row),
                 apply("mul", s_col, _sub(kk, _mh(kk))))  # fmt: skip
    inner = _add(_quotient(inner, gaps), _diag_embed(gs))
    if complex_:  # the phases' share: i Im(diag(Uᴴ U̅)) / S (the gauge V's phases fixed)
        inner = _add(inner, _quotient(_imag_diagonal(j), s_row))
    ga = _mm(u, _mm(inner, vh))
    if m > n:
        proj = _sub(gu, _mm(u, _mm(_mh(u), gu)))
        ga = _add(ga, _mm(_quotient(proj, s_row), vh))
    elif m < n:
        proj = _sub(gvh, _mm(_mm(gvh, _mh(vh)), vh))
        ga = _add(ga, _mm(u, _quotient(proj, s_col)))
    return (ga,)


svd = defop("svd", _packed_shape("svd"), _linalg_dtype("linalg.svd", _INEXACT), _svd,
            vjp=_svd_vjp, batch=_batched("svd"),
            tags=("autocast_fp32", "complex_linear"))  # fmt: skip


# -- the phase check of complex singular vectors and eigenvectors ------------------------------


def _phase_check(xp, x, a, b, out=None, *, name, what):
    """`x`, or AutogradError where `a` and `b` differ by more than 1e-2 + 1e-2 |b| (PyTorch's
    bounds): a loss that does not read the phase of each complex vector has them equal."""
    if not bool(xp.all(xp.abs(a - b) <= 1e-2 + 1e-2 * xp.abs(b))):
        raise AutogradError(
            f"{name}: the {what} of a complex matrix are each defined only up to a phase "
            "e^(i phi); this loss depends on those phases, so its gradient is ill-defined "
            "(use a loss of the vectors that is the same for every phase, such as |v|² or "
            "the reconstruction)"
        )
    if out is None:
        return x.copy()
    out[...] = x
    return out


phase_check = defop(
    "phase_check", lambda x, a, b, **_: tuple(x), lambda x, a, b, **_: x, _phase_check,
    vjp=lambda ct, y, x, a, b, **_: (ct, None, None), may_fail=True,
    batch=_batched("phase_check"), tags=("complex_linear",),
)  # fmt: skip


# -- lu ----------------------------------------------------------------------------------------


def _getrf(a):
    """SciPy's LU (LAPACK getrf with partial pivoting) of a batch: (lu, 0-based pivots)."""
    from scipy import linalg as sla

    m, n = a.shape[-2:]
    if a.size == 0:
        return a.copy(), np.zeros((*a.shape[:-2], min(m, n)), np.int32)
    with warnings.catch_warnings():  # a singular matrix factors (U has a zero diagonal)
        warnings.simplefilter("ignore")
        lu, piv = sla.lu_factor(a, check_finite=False)
    return lu, piv.astype(np.int32, copy=False)


def permutation(piv, m: int, dtype):
    """The permutation matrices P (A = P L U) of 0-based LAPACK pivots (`piv`: (*batch, k)).

    >>> permutation(np.array([1, 1]), 2, np.float64).tolist()  # rows 0 and 1 swapped
    [[0.0, 1.0], [1.0, 0.0]]
    """
    batch = piv.shape[:-1]
    flat = piv.reshape(math.prod(batch), piv.shape[-1])
    perm = np.tile(np.arange(m), (flat.shape[0], 1))
    rows = np.arange(flat.shape[0])
    for i in range(flat.shape[1]):
        j = flat[:, i]
        perm[rows, i], perm[rows, j] = perm[rows, j], perm[rows, i].copy()
    p = np.zeros((flat.shape[0], m, m), dtype)
    p[rows[:, None], perm, np.arange(m)[None, :]] = 1  # (Pᵀ A)[i] = A[perm[i]]
    return p.reshape(*batch, m, m)


@_on_host
def _lu(xp, a, out=None):
    m, n = a.shape[-2:]
    k = min(m, n)
    lu, piv = _getrf(a)
    lower = np.tril(lu[..., :, :k], -1) + np.eye(m, k, dtype=a.dtype)
    upper = np.triu(lu[..., :k, :])
    p = permutation(piv, m, a.dtype)
    return _pack(xp, [p, lower, upper], a.ndim - 2, out)


def _lu_square_vjp(lower, upper, gl, gu):
    """L⁻ᴴ (tril(Lᴴ L̅, -1) + triu(U̅ Uᴴ)) U⁻ᴴ (the caller applies P; ᴴ is ᵀ for real ones)."""
    inner = _add(_mask(_mm(_mh(lower), gl), False, -1),
                 _mask(_mm(gu, _mh(upper)), True))  # fmt: skip
    left = _tri_solve(_mh(lower), inner, upper=True, unit=True)
    return _right_inv_t(left, upper, upper=True)


def _lu_vjp(ct, y, a):
    m, n = a.shape[-2], a.shape[-1]
    p, lower, upper = unpack(y, "lu", m, n)
    _, gl, gu = unpack(ct, "lu", m, n)
    if m == n:
        g = _lu_square_vjp(lower, upper, gl, gu)
    elif m > n:  # L = [L1; L2]: A2 = L2 U
        l1, l2 = _rows(lower, 0, n), _rows(lower, n, m)
        gl1, gl2 = _rows(gl, 0, n), _rows(gl, n, m)
        upper_part = _sub(_mm(gu, _mh(upper)), _mm(_mh(l2), gl2))
        inner = _add(_mask(_mm(_mh(l1), gl1), False, -1), _mask(upper_part, True))
        g1 = _right_inv_t(_tri_solve(_mh(l1), inner, upper=True, unit=True), upper, True)
        g = _cat([g1, _right_inv_t(gl2, upper, True)], -2)
    else:  # U = [U1 U2]: A2 = P L U2
        u1, u2 = _cols(upper, 0, m), _cols(upper, m, n)
        gu1, gu2 = _cols(gu, 0, m), _cols(gu, m, n)
        inner = _add(_mask(_sub(_mm(_mh(lower), gl), _mm(gu2, _mh(u2))), False, -1),
                     _mask(_mm(gu1, _mh(u1)), True))  # fmt: skip
        g1 = _right_inv_t(_tri_solve(_mh(lower), inner, upper=True, unit=True), u1, True)
        g2 = _tri_solve(_mh(lower), gu2, upper=True, unit=True)
        g = _cat([g1, g2], -1)
    return (_mm(p, g),)


lu = defop("lu", _packed_shape("lu"), _linalg_dtype("linalg.lu", _INEXACT), _lu, vjp=_lu_vjp,
           batch=_batched("lu"), tags=("autocast_fp32", "complex_linear"))  # fmt: skip


def _lu_pivots_shape(a):
    m, n = _matrix_dims("linalg.lu_factor", a)
    return (*a[:-2], min(m, n))


@_on_host
def _lu_pivots(xp, a, out=None):
    piv = _getrf(a)[1] + 1  # LAPACK's 1-based pivots, as PyTorch gives them
    if out is None:
        return piv
    out[...] = piv
    return out


def _int_dtype(kind, name, kinds=(np.float32, np.float64)):
    def rule(d, **_):
        if d not in kinds:
            expected = "float32 or float64" + (
                " (or complex64 or complex128)" if len(kinds) > 2 else ""
            )
            raise DTypeError(f"{name}: {expected} matrices are expected, got {d}")
        return np.dtype(kind)

    return rule


lu_pivots = defop("lu_pivots", _lu_pivots_shape,
                  _int_dtype(np.int32, "linalg.lu_factor", _INEXACT), _lu_pivots,
                  tags=("nondiff", "complex_linear"), batch=_batched("lu_pivots"))  # fmt: skip


def _pivots_matrix_shape(piv, *, m, dtype):
    if len(piv) < 1 or not isinstance(piv[-1], int) or piv[-1] > m:
        raise ShapeError(f"lu_unpack: pivots {sh.format_shape(piv)} do not fit {m} rows")
    return (*piv[:-1], m, m)


def _pivots_matrix_dtype(piv, *, m, dtype):
    if np.dtype(piv).kind not in "iu":
        raise DTypeError(f"lu_unpack: the pivots must be integers, got {piv}")
    return np.dtype(dtype)


@_on_host
def _pivots_matrix(xp, piv, out=None, *, m, dtype):
    if piv.size and (piv.min() < 1 or piv.max() > m):
        raise ShapeError(f"lu_unpack: pivots must be between 1 and {m}")
    p = permutation(np.asarray(piv, np.int64) - 1, m, np.dtype(dtype))
    if out is None:
        return p
    out[...] = p
    return out


pivots_matrix = defop(
    "pivots_matrix", _pivots_matrix_shape, _pivots_matrix_dtype, _pivots_matrix,
    tags=("nondiff",), batch=_batched("pivots_matrix"), may_fail=True,
)  # fmt: skip


# -- solve_triangular --------------------------------------------------------------------------


def _solve_triangular_shape(a, b, *, upper, unitriangular):
    if len(a) < 2 or len(b) < 2:
        raise ShapeError(f"linalg.solve_triangular: A {sh.format_shape(a)} and B "
                         f"{sh.format_shape(b)} must have at least 2 dims")  # fmt: skip
    why = (f"linalg.solve_triangular: A {sh.format_shape(a)} (square) and B "
           f"{sh.format_shape(b)} do not match")  # fmt: skip
    for x, z in ((a[-1], a[-2]), (a[-1], b[-2])):
        if isinstance(x, int) and isinstance(z, int) and x != z:
            raise ShapeError(why)
        sh.require_equal(x, z, why)
    batch = sh.broadcast_shapes(a[:-2], b[:-2], why=why)
    return (*batch, *b[-2:])


@_on_host
def _solve_triangular(xp, a, b, out=None, *, upper, unitriangular):
    from scipy import linalg as sla

    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a2 = np.broadcast_to(a, (*batch, *a.shape[-2:]))
    b2 = np.broadcast_to(b, (*batch, *b.shape[-2:]))
    if a2.size == 0 or b2.size == 0:
        r = np.zeros(b2.shape, np.result_type(a, b))
    else:
        with warnings.catch_warnings():  # a zero on the diagonal gives inf/NaN, as PyTorch's
            warnings.simplefilter("ignore")
            with np.errstate(all="ignore"):
                r = sla.solve_triangular(a2, b2, lower=not upper, unit_diagonal=unitriangular,
                                         check_finite=False)  # fmt: skip
    if out is None:
        return np.ascontiguousarray(r)
    out[...] = r
    return out


def _solve_triangular_vjp(ct, x, a, b, *, upper, unitriangular):
    """X = A⁻¹ B: B̅ = A⁻ᴴ X̅, A̅ = -B̅ Xᴴ on A's triangle (the only entries read)."""
    gb = _tri_solve(_mh(a), ct, not upper, unitriangular)
    ga = apply("neg", _mm(gb, _mh(x)))
    k = (1 if upper else -1) if unitriangular else 0
    return _mask(ga, upper, k), gb


solve_triangular = defop(
    "solve_triangular", _solve_triangular_shape,
    _linalg_dtype("linalg.solve_triangular", _INEXACT), _solve_triangular,
    vjp=_solve_triangular_vjp, tags=("autocast_fp32", "complex_linear"),
    batch=_batched("solve_triangular"),  # leading batch dims broadcast
)  # fmt: skip


# -- matrix_exp --------------------------------------------------------------------------------


def _square(name):
    """A batch of square matrices (symbolic dims allowed): the shape itself."""

    def rule(a, **_):
        if len(a) < 2:
            raise ShapeError(f"{name}: the input must have at least 2 dims, got "
                             f"{sh.format_shape(a)}")  # fmt: skip
        why = f"{name}: a batch of square matrices is expected, got {sh.format_shape(a)}"
        if isinstance(a[-1], int) and isinstance(a[-2], int) and a[-1] != a[-2]:
            raise ShapeError(why)
        sh.require_equal(a[-1], a[-2], why)
        return tuple(a)

    return rule


def _matrix_exp(xp, a, out=None):
    from scipy import linalg as sla

    r = sla.expm(a) if a.size else a.copy()
    if out is None:
        return np.asarray(r, a.dtype)
    out[...] = r
    return out


def _matrix_exp_vjp(ct, y, a):
    """The Fréchet derivative of exp at Aᴴ (Aᵀ for a real A) in the direction A̅: the upper
    right block of exp([[Aᴴ, A̅], [0, Aᴴ]])."""
    n = a.shape[-1]
    at = _mh(a)
    zero = apply("broadcast_to", scalar(0, a), shape=tuple(a.shape))
    block = _cat([_cat([at, ct], -1), _cat([zero, at], -1)], -2)
    return (_rows(_cols(apply("matrix_exp", block), n, 2 * n), 0, n),)


matrix_exp = defop("matrix_exp", _square("linalg.matrix_exp"),
                   _linalg_dtype("linalg.matrix_exp", _INEXACT), _matrix_exp,
                   vjp=_matrix_exp_vjp, batch=_batched("matrix_exp"),
                   tags=("autocast_fp32", "complex_linear"))  # fmt: skip


# -- pinv --------------------------------------------------------------------------------------


def _pinv_shape(a, *, atol, rtol, hermitian):
    if hermitian:
        _square("linalg.pinv")(a)
    elif len(a) < 2:
        raise ShapeError(f"linalg.pinv: the input must have at least 2 dims, got "
                         f"{sh.format_shape(a)}")  # fmt: skip
    return (*a[:-2], a[-1], a[-2])


def _host_mh(xp, x):
    """The conjugate transpose of each matrix of array `x`."""
    t = xp.swapaxes(x, -1, -2)
    return xp.conj(t) if t.dtype.kind == "c" else t


def _pinv(xp, a, out=None, *, atol, rtol, hermitian):
    """Singular values (|eigenvalues| when hermitian) above max(atol, rtol * the largest)
    are inverted, the others dropped (rtol None: eps * max(m, n))."""
    m, n = a.shape[-2:]
    if rtol is None:
        rtol = float(np.finfo(a.dtype).eps) * max(m, n)
    if a.size == 0:
        r = xp.zeros((*a.shape[:-2], n, m), a.dtype)
    else:
        if hermitian:
            w, v = xp.linalg.eigh(a)
            s = xp.abs(w)
        else:
            u, s, vh = xp.linalg.svd(a, full_matrices=False)
        cutoff = xp.maximum(atol, rtol * s.max(axis=-1, keepdims=True))
        keep = s > cutoff
        with np.errstate(divide="ignore"):
            if hermitian:  # V diag(1/w) Vᴴ
                inv = xp.where(keep, 1 / xp.where(keep, w, 1), 0).astype(a.dtype)
                r = xp.matmul(v * inv[..., None, :], _host_mh(xp, v))
            else:  # V diag(1/s) Uᴴ
                inv = xp.where(keep, 1 / xp.where(keep, s, 1), 0).astype(a.dtype)
                r = xp.matmul(_host_mh(xp, vh) * inv[..., None, :], _host_mh(xp, u))
    if out is None:
        return r
    out[...] = r
    return out


def _pinv_vjp(ct, x, a, *, atol, rtol, hermitian):
    """X = A⁺ (rank constant near A): A̅ = -Xᴴ G Xᴴ + (I - A X) Gᴴ X Xᴴ + Xᴴ X Gᴴ (I - X A)."""
    xt, gt = _mh(x), _mh(ct)
    first = apply("neg", _mm(xt, _mm(ct, xt)))
    gxx = _mm(gt, _mm(x, xt))  # Gᵀ X Xᵀ
    second = _sub(gxx, _mm(a, _mm(x, gxx)))
    xxg = _mm(_mm(xt, x), gt)  # Xᵀ X Gᵀ
    third = _sub(xxg, _mm(_mm(xxg, x), a))
    return (_add(first, _add(second, third)),)


pinv = defop("pinv", _pinv_shape, _linalg_dtype("linalg.pinv", _INEXACT), _pinv, vjp=_pinv_vjp,
             batch=_batched("pinv"), tags=("autocast_fp32", "complex_linear"))  # fmt: skip


# -- lstsq's rank ------------------------------------------------------------------------------


def _lstsq_rank_shape(a, *, rcond):
    if len(a) < 2:
        raise ShapeError(f"linalg.lstsq: A must have at least 2 dims, got {sh.format_shape(a)}")
    return tuple(a[:-2])


@_on_host
def _lstsq_rank(xp, a, out=None, *, rcond):
    """The effective rank LAPACK's gelsy finds (QR with column pivoting, cut at `rcond`)."""
    from scipy import linalg as sla

    m, n = a.shape[-2:]
    if rcond is None:
        rcond = float(np.finfo(a.dtype).eps) * max(m, n)
    r = np.zeros(a.shape[:-2], np.int64)
    if m and n:
        zero = np.zeros((m, 1), a.dtype)
        for idx in np.ndindex(*a.shape[:-2]):
            r[idx] = sla.lstsq(a[idx], zero, cond=rcond, lapack_driver="gelsy",
                               check_finite=False)[2]  # fmt: skip
    if out is None:
        return r
    out[...] = r
    return out


lstsq_rank = defop("lstsq_rank", _lstsq_rank_shape, _int_dtype(np.int64, "linalg.lstsq", _INEXACT),
                   _lstsq_rank, tags=("nondiff", "complex_linear"),
                   batch=_batched("lstsq_rank"))  # fmt: skip


# -- cholesky_ex and inv_ex (kiln/ops/linalg_ex.py), registered here, in this order -----------

from .linalg_ex import cholesky_ex, cholesky_info, inv_ex, inv_info  # noqa: E402, F401
