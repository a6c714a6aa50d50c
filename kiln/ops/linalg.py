"""Linear algebra: `matmul` with NumPy's batching and broadcasting semantics; `inv`, `det` and
`solve` over batches of square matrices."""

from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from .. import shapes as sh
from ..errors import DTypeError, LinAlgError, ShapeError, UnsupportedDTypeError
from .core import apply, defop, in_float32, lead, scalar, ufunc_dtype


def _matmul_shape(a, b):
    if not a or not b:
        raise ShapeError("matmul: input operand does not have enough dimensions (0-d)")
    a2 = (1, *a) if len(a) == 1 else a
    b2 = (*b, 1) if len(b) == 1 else b
    if a2[-1] != b2[-2]:
        why = f"matmul: contracting dims differ for {sh.format_shape(a)} @ {sh.format_shape(b)}"
        if isinstance(a2[-1], int) and isinstance(b2[-2], int):
            raise ShapeError(f"{why} ({a2[-1]} vs {b2[-2]})")
        sh.require_equal(a2[-1], b2[-2], why)
    batch = ()  # (matrices: the common case)
    if len(a2) > 2 or len(b2) > 2:
        batch = sh.broadcast_shapes(a2[:-2], b2[:-2], why="matmul: batch dims do not broadcast")
    out = (*batch, a2[-2], b2[-1])
    if len(a) == 1:
        out = out[:-2] + out[-1:]
    if len(b) == 1:
        out = out[:-1]
    return out


@in_float32  # bfloat16: accumulated in float32, rounded once
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


def _matmul_batch(args, batched):
    """A vector per example is made a matrix (a row for `a`, a column for `b`), batched
    operands get size-1 dims after the batch axis to the other's rank, and the added dims are
    dropped after. Two cases are one matrix product: a batch of vectors times a matrix, and
    a matrix times a batch of vectors (as the batch of rows times its transpose)."""
    (a, b), (ba, bb) = args, batched
    ra, rb = a.ndim - ba, b.ndim - bb
    if ra == 1 and rb == 1:
        if ba and bb:
            return apply("reduce_sum", apply("mul", a, b), axes=(1,), keepdims=False)
        return apply("matmul", a, b) if ba else apply("matmul", b, a)
    if ba and not bb and ra == 1 and rb == 2:
        return apply("matmul", a, b)
    if bb and not ba and rb == 1 and ra == 2:
        return apply("matmul", b, _swap_last(a))
    if ba and not bb and ra == 2 and rb == 2:  # [n, m, k] @ [k, p]: one [n*m, k] @ [k, p]
        n, m, k = a.shape
        rows = apply("matmul", apply("reshape", a, shape=(sh.dim_product((n, m)), k)), b)
        return apply("reshape", rows, shape=(n, m, b.shape[1]))
    if bb and not ba and ra == 2 and rb == 2:  # [m, k] @ [n, k, p]: the same, transposed
        n, k, p = b.shape
        cols = _swap_last(b) if p != 1 else b
        cols = apply("reshape", cols, shape=(sh.dim_product((n, p)), k))
        rows = apply("reshape", apply("matmul", cols, _swap_last(a)), shape=(n, p, a.shape[0]))
        return _swap_last(rows) if p != 1 else apply("reshape", rows, shape=(n, a.shape[0], 1))
    a2 = _unsqueeze(a, -2) if ra == 1 else a
    b2 = _unsqueeze(b, -1) if rb == 1 else b
    rank = max(ra, rb, 2)
    a2 = lead(a2, rank) if ba else a2
    b2 = lead(b2, rank) if bb else b2
    out = apply("matmul", a2, b2)
    out = _drop(out, -1) if rb == 1 else out
    return _drop(out, -2) if ra == 1 else out


def _matmul_dtype(a, b):
    """NumPy's, except that bfloat16 @ bfloat16 is bfloat16 (ml_dtypes' loop gives float32):
    PyTorch accumulates in float32 and rounds the result once."""
    if a == b == dt.bfloat16:
        return a
    return ufunc_dtype(np.matmul, a, b)


matmul = defop(
    "matmul", _matmul_shape, _matmul_dtype, _matmul,
    vjp=_matmul_vjp, tags=("complex", "vjp_needs", "autocast_lower"), batch=_matmul_batch,
)  # fmt: skip


# -- inverse, determinant, solve (batched over leading dims) -----------------------------------


def _square_shape(name):
    def rule(a):
        if len(a) < 2:
            raise ShapeError(
                f"{name}: the input must have at least 2 dims, got {sh.format_shape(a)}"
            )
        sh.require_equal(a[-1], a[-2], f"{name}: a batch of square matrices is expected")
        if isinstance(a[-1], int) and isinstance(a[-2], int) and a[-1] != a[-2]:
            raise ShapeError(
                f"{name}: a batch of square matrices is expected, got {sh.format_shape(a)}"
            )
        return tuple(a) if name != "det" else tuple(a[:-2])

    return rule


def _linalg_dtype(name, kinds=(np.float32, np.float64)):
    def rule(*dtypes):
        for d in dtypes:
            if d not in kinds:
                expected = "float32 or float64" + (
                    " (or complex64 or complex128)" if len(kinds) > 2 else ""
                )
                # (PyTorch's RuntimeError: "Expected a floating point or complex tensor")
                raise UnsupportedDTypeError(f"{name}: {expected} matrices are expected, got {d}")
        return np.result_type(*dtypes)

    return rule


def _singular(message):
    """PyTorch's error for a singular matrix: a RuntimeError (kiln's LinAlgError), where
    NumPy's LinAlgError is a ValueError."""
    return LinAlgError(f"{message} because the input matrix is singular.")


def _inv(xp, a, out=None):
    try:
        r = xp.linalg.inv(a)
    except np.linalg.LinAlgError:
        raise _singular("linalg.inv: The inversion could not be completed") from None
    if out is None:
        return r
    out[...] = r
    return out


# inv, det and solve take complex matrices too: analytic, their vjps conjugated (PyTorch's)
_INEXACT = (np.float32, np.float64, np.complex64, np.complex128)
inv = defop(
    "inv", _square_shape("inv"), _linalg_dtype("inv", _INEXACT), _inv,
    vjp=lambda ct, y, a: (-apply("matmul", _swap_last(y), apply("matmul", ct, _swap_last(y))),),
    batch=lambda args, batched: apply("inv", args[0]),  # inv and det take stacks of matrices
    tags=("autocast_fp32", "complex"),
)  # fmt: skip


def _det(xp, a, out=None):
    with np.errstate(all="ignore"):  # (NumPy's module would warn, not kiln's)
        r = xp.asarray(xp.linalg.det(a))
    if out is None:
        return r
    out[...] = r
    return out


def _det_vjp(ct, y, a):
    # d det(A) / dA = the cofactor matrix of A (det(A) A^-T where A is invertible)
    return (_unsqueeze(_unsqueeze(ct, -1), -1) * apply("cofactor", a),)


def _cofactor(xp, a, out=None):
    """The cofactor matrix of each matrix, `det(A) A^-T`, from the SVD A = U S Vh so that it
    holds at singular A too, where it is still the gradient of det (PyTorch's: [[1, 2], [2,
    4]] gives [[4, -2], [-2, 1]]): det(U) det(Vh) conj(U) diag(p) conj(Vh), p_i the product
    of the singular values other than s_i (exclusive prefix and suffix products, no
    division)."""
    n = a.shape[-1]
    if n == 0 or a.size == 0:
        r = xp.zeros(a.shape, a.dtype)
    else:
        with np.errstate(all="ignore"):
            u, s, vh = xp.linalg.svd(a)
            ones = xp.ones(s.shape[:-1] + (1,), s.dtype)
            left = xp.concatenate([ones, xp.cumprod(s[..., :-1], axis=-1)], axis=-1)
            right = xp.cumprod(s[..., ::-1][..., :-1], axis=-1)[..., ::-1]
            right = xp.concatenate([right, ones], axis=-1)
            sign = xp.linalg.det(u) * xp.linalg.det(vh)
            r = xp.conj(u) * (left * right)[..., None, :]
            r = (sign[..., None, None] * (r @ xp.conj(vh))).astype(a.dtype, copy=False)
    if out is None:
        return r
    out[...] = r
    return out


def _cofactor_vjp(ct, c, a):
    # c = det(A) A^-T, dc = det(A) (tr(A^-1 dA) A^-T - A^-T dA^T A^-T): A invertible (a second
    # derivative of det at a singular A raises, as inv does)
    inv_t = _swap_last(apply("inv", a))
    det_a = _unsqueeze(_unsqueeze(apply("det", a), -1), -1)
    last = (len(ct.shape) - 2, len(ct.shape) - 1)
    inner = apply("reduce_sum", ct * inv_t, axes=last, keepdims=True)
    return (
        det_a * (inner * inv_t - apply("matmul", apply("matmul", inv_t, _swap_last(ct)), inv_t)),
    )


cofactor = defop(
    "cofactor", _square_shape("cofactor"), _linalg_dtype("cofactor", _INEXACT), _cofactor,
    vjp=_cofactor_vjp, batch=lambda args, batched: apply("cofactor", args[0]), tags={"complex"},
)  # fmt: skip


det = defop(
    "det", _square_shape("det"), _linalg_dtype("det", _INEXACT), _det, vjp=_det_vjp,
    batch=lambda args, batched: apply("det", args[0]), tags={"complex"},
)  # fmt: skip


def vector_rhs(a_shape, b_shape) -> bool:
    """Whether `solve`'s B is a (batch of) vector(s), as PyTorch's: 1-D (one vector for every
    matrix of a batch), or A's shape less its last dim (B of (4, 3, 2) for A of (2, 1, 3, 3) is
    a batch of matrices, broadcast).

    >>> vector_rhs((2, 3, 3), (2, 3)), vector_rhs((2, 1, 3, 3), (4, 3, 2))
    (True, False)
    """
    a_shape, b_shape = tuple(a_shape), tuple(b_shape)
    if len(b_shape) == 1:
        return True
    if len(b_shape) != len(a_shape) - 1:
        return False
    # (a symbolic dim may equal any: taken as equal)
    return all(x == y or not (isinstance(x, int) and isinstance(y, int))
               for x, y in zip(b_shape, a_shape[:-1]))  # fmt: skip


def _solve_shape(a, b):
    _square_shape("solve")(a)
    vector = vector_rhs(a, b)
    b2 = (*b, 1) if vector else b
    if len(b2) < 2:
        raise ShapeError(f"solve: B {sh.format_shape(b)} has too few dims")
    why = f"solve: A {sh.format_shape(a)} and B {sh.format_shape(b)} do not match"
    if isinstance(a[-1], int) and isinstance(b2[-2], int) and a[-1] != b2[-2]:
        raise ShapeError(why)
    sh.require_equal(a[-1], b2[-2], why)
    batch = sh.broadcast_shapes(a[:-2], b2[:-2], why=why)
    return (*batch, b2[-2]) if vector else (*batch, *b2[-2:])


def _solve(xp, a, b, out=None):
    try:
        if b.ndim == 1 and a.ndim > 2:
            b = xp.broadcast_to(b, a.shape[:-1])
        if vector_rhs(a.shape, b.shape):
            r = xp.linalg.solve(a, b[..., None])[..., 0]
        else:
            batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
            r = xp.linalg.solve(xp.broadcast_to(a, (*batch, *a.shape[-2:])),
                                xp.broadcast_to(b, (*batch, *b.shape[-2:])))  # fmt: skip
    except np.linalg.LinAlgError:
        raise _singular("linalg.solve: The solver failed") from None
    if out is None:
        return r
    out[...] = r
    return out


def _solve_vjp(ct, x, a, b):
    """X = A^-1 B: dB = A^-T ct, dA = -dB X^T (autodiff sums batch broadcasting back)."""
    gb = apply("solve", _swap_last(a), ct)
    if vector_rhs(a.shape, b.shape):
        ga = -(_unsqueeze(gb, -1) * _unsqueeze(x, -2))
    else:
        ga = -apply("matmul", gb, _swap_last(x))
    return ga, gb


def _solve_batch(args, batched):
    """vmap of solve: A and B batched (broadcast to the batch where not); the example's B is a
    vector or matrices as it was (`vector_rhs` of the example's shapes), and a matrix B of
    another rank than A's takes size-1 dims after the batch axis (its batch dims then align)."""
    from ..errors import GraphError  # (errors is imported by every layer)
    from .core import batch_size, unbatched_to

    n = batch_size(args, batched)
    a, b = (x if f else unbatched_to(x, n) for x, f in zip(args, batched))
    if vector_rhs(a.shape[1:], b.shape[1:]):
        return apply("solve", a, b)
    if b.ndim < 3:  # (a vector B against a batch of matrices A: broadcast by the kernel)
        raise GraphError("vmap: no batching rule for solve of a vector B broadcast over A's "
                         "batch dims")  # fmt: skip
    rank = max(a.ndim, b.ndim) - 1
    return apply("solve", lead(a, rank), lead(b, rank))


solve = defop("solve", _solve_shape, _linalg_dtype("solve", _INEXACT), _solve,
              vjp=_solve_vjp, tags=("autocast_fp32", "complex"), batch=_solve_batch)  # fmt: skip


# -- addmm: beta * input + alpha * (mat1 @ mat2), one GEMM ------------------------------------


def _addmm_shape(x, a, b, *, beta=1.0, alpha=1.0):
    if len(a) != 2 or len(b) != 2:
        raise ShapeError(f"addmm: mat1 and mat2 must be matrices, got {sh.format_shape(a)} and "
                         f"{sh.format_shape(b)}")  # fmt: skip
    out = _matmul_shape(a, b)
    if x == out or x == out[1:]:  # (the common cases: nothing to check)
        return out
    why = f"addmm: input {sh.format_shape(x)} does not broadcast to {sh.format_shape(out)}"
    if sh.broadcast_shapes(x, out, why=why) != out:
        raise ShapeError(why)
    return out


def _addmm_dtype(x, a, b, **_):
    if not (x == a == b):
        raise DTypeError(f"addmm: expected one dtype, got {x}, {a} and {b}")
    return x


def _gemm_operand(m):
    """`m`'s transpose as BLAS takes it without a copy: (array, transpose flag)."""
    if m.flags.c_contiguous:
        return m.T, 0
    if m.flags.f_contiguous:
        return m, 1
    return np.ascontiguousarray(m).T, 0


class _Gemms(dict):
    """BLAS's gemm by NumPy dtype char ('f', 'd'), looked up once."""

    def __missing__(self, char):
        from scipy.linalg import blas as scipy_blas

        self[char] = scipy_blas.get_blas_funcs("gemm", dtype=np.dtype(char))
        return self[char]


_GEMM = _Gemms()


def _addmm(xp, x, a, b, out=None, *, beta=1.0, alpha=1.0):
    """One BLAS GEMM (C = alpha AB + beta C) writing into `out`, which may be `x` itself: an
    update `w - lr * (h.T @ g)` then needs no temporary for the product (the transposed
    problem, C^T = alpha B^T A^T + beta C^T, lets the C-ordered arrays pass as Fortran
    ones). Other dtypes, devices and layouts: the product, then one elementwise pass."""
    shape = (a.shape[0], b.shape[1])
    if out is None:
        out = xp.empty(shape, x.dtype)
    blas = (xp is np and x.dtype in (np.float32, np.float64) and out.flags.c_contiguous
            and out.size and a.shape[1])  # fmt: skip
    if not blas:
        product = xp.matmul(a, b)
        if alpha != 1:
            product *= alpha
        if beta == 0:  # input ignored, NaNs included (as BLAS and PyTorch do)
            out[...] = product
            return out
        return xp.add(x * beta if beta != 1 else x, product, out=out)
    if not (
        out is x
        or (
            out.shape == x.shape
            and out.strides == x.strides
            and out.__array_interface__["data"][0] == x.__array_interface__["data"][0]
        )
    ):
        out[...] = x  # fmt: skip
    gemm = _GEMM[out.dtype.char]
    (p, ta), (q, tb) = _gemm_operand(b), _gemm_operand(a)
    # NOTE: positional arguments: f2py parses keywords at about 2 us a call
    result = gemm(alpha, p, q, beta, out.T, ta, tb, 1)
    if not np.shares_memory(result, out):
        out[...] = result.T
    return out


def _addmm_vjp(ct, y, x, a, b, *, beta=1.0, alpha=1.0, needs=(True, True, True)):
    def scaled(v, k):
        return v if k == 1 else apply("mul", v, scalar(k, v))

    return (
        scaled(ct, beta) if needs[0] else None,
        scaled(apply("matmul", ct, _swap_last(b)), alpha) if needs[1] else None,
        scaled(apply("matmul", _swap_last(a), ct), alpha) if needs[2] else None,
    )


def _addmm_batch(args, batched, *, beta=1.0, alpha=1.0):
    """vmap of addmm: beta * input + alpha * (mat1 @ mat2) of the batch (a batched matmul; a
    batched input aligned after its batch axis; beta 0 ignores the input, as addmm does)."""
    from .core import batch_size, unbatched_to

    x, a, b = args
    n = batch_size(args, batched)
    prod = apply("matmul", a, b)
    if alpha != 1:
        prod = apply("mul", prod, scalar(alpha, prod))
    if not (batched[1] or batched[2]):
        prod = unbatched_to(prod, n)
    if beta == 0:
        return prod
    x = lead(x, 2) if batched[0] else x
    if beta != 1:
        x = apply("mul", x, scalar(beta, x))
    return apply("add", x, prod)


addmm = defop(
    "addmm", _addmm_shape, _addmm_dtype, _addmm, vjp=_addmm_vjp,
    tags=("vjp_needs", "autocast_lower"),
    overwrites=(0,), batch=_addmm_batch,
)  # fmt: skip
