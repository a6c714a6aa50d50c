"""Op-table rows for the complex-number primitives (kiln/ops/complex_values.py): the parts of
complex values, conjugation, and complex values from parts, against NumPy's `real`, `imag`,
`conjugate`, `angle` and complex arithmetic, in every mode tests/test_ops.py runs. Their
gradients are checked against PyTorch's in tests/test_complex.py."""

from __future__ import annotations

import numpy as np
from op_case import OpCase

import kiln as kn
from kiln.ops.core import apply

COMPLEX = ("complex64", "complex128")
FLOATS = ("float32", "float64")

CASES: list[OpCase] = []


def _complex(rng, shape, dtype):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


def complexes(*shapes, transposed=False):
    """`make_args`: random complex arrays of the row's dtype (a transposed view if asked)."""

    def make(rng, dtype):
        arrays = [_complex(rng, s, dtype) for s in shapes]
        return [a.T if transposed else a for a in arrays]

    return make


def reals(*shapes):
    def make(rng, dtype):
        return [rng.standard_normal(s).astype(dtype) for s in shapes]

    return make


def _angle_ref(x):  # NumPy's angle in the real dtype of x (float64 for NumPy's float32 real)
    real = np.real(x).dtype if x.dtype.kind == "c" else x.dtype
    return np.angle(x).astype(real)


CASES.extend([
    OpCase("real", "vector", kn.real, complexes((5,)), np.real, COMPLEX),
    OpCase("real", "0-d", kn.real, complexes(()), np.real, COMPLEX),
    OpCase("real", "transposed", kn.real, complexes((3, 5), transposed=True), np.real, COMPLEX),
    OpCase("imag", "matrix", kn.imag, complexes((2, 3)), np.imag, COMPLEX),
    OpCase("imag", "size-0", kn.imag, complexes((0, 3)), np.imag, COMPLEX),
    OpCase("conj", "matrix", kn.conj, complexes((2, 3)), np.conjugate, COMPLEX),
    OpCase("conj", "transposed", kn.conj, complexes((3, 5), transposed=True), np.conjugate,
           COMPLEX),
    OpCase("angle", "complex", kn.angle, complexes((2, 3)), _angle_ref, COMPLEX),
    OpCase("angle", "real", kn.angle, reals((5,)), _angle_ref, FLOATS),
    OpCase("complex", "broadcast", kn.complex, reals((2, 3), (3,)),
           lambda a, b: a + 1j * b.astype(a.dtype), FLOATS),
    OpCase("complex", "0-d", kn.complex, reals((), ()), lambda a, b: np.asarray(a + 1j * b),
           FLOATS),
    OpCase("view_as_real", "matrix", kn.view_as_real, complexes((2, 3)),
           lambda z: np.stack([z.real, z.imag], -1), COMPLEX),
    OpCase("view_as_complex", "matrix", kn.view_as_complex, reals((3, 2)),
           lambda x: x[..., 0] + 1j * x[..., 1], FLOATS),
    # LAPACK's geev through NumPy: the same order and normalization as kiln's kernel
    OpCase("eig_values", "real", kn.linalg.eigvals, reals((3, 3)),
           lambda a: np.linalg.eig(a)[0], FLOATS, 1e-5, 1e-5),
    OpCase("eig_values", "complex-batch", kn.linalg.eigvals, complexes((2, 3, 3)),
           lambda a: np.linalg.eig(a)[0], COMPLEX, 1e-5, 1e-5),
    OpCase("eig_vectors", "real", lambda a: kn.linalg.eig(a).eigenvectors, reals((3, 3)),
           lambda a: np.linalg.eig(a)[1], FLOATS, 1e-5, 1e-5),
    OpCase("eig_vectors", "complex", lambda a: kn.linalg.eig(a).eigenvectors,
           complexes((4, 4)), lambda a: np.linalg.eig(a)[1], COMPLEX, 1e-5, 1e-5),
])  # fmt: skip


def _phase_check(x, a, b):
    return apply("phase_check", x, a, b, name="linalg.svd", what="singular vectors")


def _close_parts(rng, dtype):
    """A complex matrix, and two real vectors within the phase check's bounds of each other."""
    a = rng.standard_normal(3).astype(np.dtype(dtype).type(0).real.dtype)
    return [_complex(rng, (3, 3), dtype), a, a + np.asarray(0.005, a.dtype)]


def _hermitian_pd(rng, dtype):
    b = _complex(rng, (2, 3, 3), dtype)
    return [(b @ np.swapaxes(b, -1, -2).conj() + 3 * np.eye(3)).astype(dtype)]


# kn.linalg's factorizations of complex matrices (their results free of LAPACK's phase
# choices: singular values, eigenvalues, Cholesky factors, QR's R, pseudo-inverses); their
# gradients are checked against PyTorch's in tests/test_complex_linalg.py. phase_check (the
# identity where a loss does not read the vectors' phases) is the backward's.
CASES.extend([
    OpCase("phase_check", "within-bounds", _phase_check, _close_parts, lambda x, a, b: x,
           COMPLEX),
    OpCase("svd", "complex-values", kn.linalg.svdvals, complexes((2, 4, 3)),
           lambda a: np.linalg.svd(a, compute_uv=False), COMPLEX, 1e-5, 1e-5),
    OpCase("eigh", "complex-values", lambda a: kn.linalg.eigvalsh(a, UPLO="U"),
           complexes((2, 3, 3)), lambda a: np.linalg.eigvalsh(a, UPLO="U"), COMPLEX, 1e-5, 1e-5),
    OpCase("cholesky", "complex", kn.linalg.cholesky, _hermitian_pd, np.linalg.cholesky,
           COMPLEX, 1e-5, 1e-5),
    OpCase("qr", "complex-r", lambda a: kn.linalg.qr(a).R, complexes((2, 4, 3)),
           lambda a: np.linalg.qr(a)[1], COMPLEX, 1e-5, 1e-5),
    OpCase("pinv", "complex", kn.linalg.pinv, complexes((3, 4)), np.linalg.pinv, COMPLEX,
           1e-4, 1e-5),
])  # fmt: skip


def _expm(a):
    from scipy import linalg as sla

    return np.stack([sla.expm(m) for m in a]).astype(a.dtype)


def _lu_u(a):
    from scipy import linalg as sla

    return np.stack([sla.lu(m)[2] for m in a])


def _lu_pivots(a):
    from scipy import linalg as sla

    return np.stack([sla.lu_factor(m)[1] + 1 for m in a]).astype(np.int32)


# LU (SciPy's getrf, unique with partial pivoting) and the matrix exponential (SciPy's expm)
# of complex matrices; their gradients are checked against PyTorch's in
# tests/test_complex_linalg_more.py.
CASES.extend([
    OpCase("lu", "complex-u", lambda a: kn.linalg.lu(a).U, complexes((2, 3, 3)), _lu_u,
           COMPLEX, 1e-5, 1e-5),
    OpCase("lu_pivots", "complex", lambda a: kn.linalg.lu_factor(a).pivots,
           complexes((2, 4, 4)), _lu_pivots, COMPLEX),
    OpCase("matrix_exp", "complex", kn.linalg.matrix_exp, complexes((2, 3, 3)), _expm,
           COMPLEX, 1e-5, 1e-5),
])  # fmt: skip
