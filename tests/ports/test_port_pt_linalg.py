"""PyTorch's linear-algebra tests (test_linalg.py), kn.linalg's part, as an oracle: the norms
(ord values, dim, keepdim, dtype=), det/slogdet/inv/solve/lstsq/cholesky/qr/eigh/eig/svd/pinv,
matrix_rank, matrix_power, matrix_exp, cross, multi_dot, tensorsolve, tensorinv, vander and
vecdot, on batches, empty matrices (0x0, a batch of 0) and the errors of singular and
non-square inputs (LinAlgError, a RuntimeError). Each scenario runs on torch and on kiln,
eagerly and under `kn.compile` (pt_oracle.py). test_port_pt_linalg_products.py has the
products'; test_port_pt_linalg_grads.py the gradients and the results' strides.

Expected values: torch 2.13 (the oracle). Decompositions whose factors are defined up to signs
or phases (qr's, eigh's and svd's vectors) are compared through what is unique: the product
they rebuild, absolute values, or the projector they span.
"""

import numpy as np
import pytest
from pt_oracle import MODES, Scenarios, outcome

import kiln as kn

nan, inf = float("nan"), float("inf")
f32, f64 = np.float32, np.float64
RNG = np.random.default_rng(1)


def rand(*shape, dtype=f32):
    return RNG.standard_normal(shape).astype(dtype)


def spd(*shape, dtype=f32):
    """Symmetric positive-definite matrices of `shape` (..., n, n), well conditioned."""
    a = RNG.standard_normal(shape)
    return (a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])).astype(dtype)


def well(*shape, dtype=f32):
    """Square matrices of `shape` far from singular: a random one plus n on the diagonal."""
    return (RNG.standard_normal(shape) + shape[-1] * np.eye(shape[-1])).astype(dtype)


A34 = rand(3, 4)
B234 = rand(2, 3, 4)
SINGULAR = np.array([[1, 2], [2, 4]], f32)
EMPTY00 = np.zeros((0, 0), f32)
EMPTY_BATCH = np.zeros((0, 3, 3), f32)

SCENARIOS = Scenarios()
case = SCENARIOS.case
LINALG_ERRORS = Scenarios()  # each raises torch.linalg.LinAlgError in torch
linalg_error = LINALG_ERRORS.case


# -- norms ----------------------------------------------------------------------------------


@case("vector_norm_ords", B234)
def _(lib, x):
    return [lib.linalg.vector_norm(x, o) for o in (2, 1, 0, inf, -inf, 3.5, -1, -2, 0.5)]


@case("vector_norm_dims_keepdim", B234)
def _(lib, x):
    vn = lib.linalg.vector_norm
    return (
        vn(x, dim=-1),
        vn(x, 1, dim=(0, 2)),
        vn(x, inf, dim=1, keepdim=True),
        vn(x, 0, dim=(0, 1), keepdim=True),
        vn(x, dim=()),
        vn(x, -inf, dim=[2, 0]),
    )


@case("vector_norm_dtype", B234, rand(3, 2).astype(np.complex64))
def _(lib, x, c):
    vn = lib.linalg.vector_norm
    return (
        vn(x, dtype=lib.float64),
        vn(x, 3, dim=1, dtype=lib.float64),
        vn(c),
        vn(c, dtype=lib.complex128),
        vn(c, inf, dim=0),
    )


@case("vector_norm_dtype_narrower_refused", rand(3, dtype=f64))
def _(lib, x):
    return lib.linalg.vector_norm(x, dtype=lib.float32)


@case("torch_norm_dtype_narrower_refused", rand(3, dtype=f64))
def _(lib, x):
    return lib.norm(x, 1, dtype=lib.float32)


@case("torch_norm_dtype_complex_of_real_refused", rand(3, dtype=f64))
def _(lib, x):
    return lib.norm(x, dtype=lib.complex128)


@case("torch_norm_dtype_wider", rand(3), (rand(3) + 1j * rand(3)).astype(np.complex64))
def _(lib, x, c):
    return lib.norm(x, dtype=lib.float64), lib.norm(c, 3, dtype=lib.complex128)


@case("vector_norm_integer_refused", np.arange(4))
def _(lib, x):
    return lib.linalg.vector_norm(x)


@case("vector_norm_empty", np.zeros((0, 3), f32))
def _(lib, x):
    vn = lib.linalg.vector_norm
    return vn(x), vn(x, 1), vn(x, 0), vn(x, dim=0), vn(x, inf, dim=1), vn(x, -1, dim=0)


@case("vector_norm_empty_inf_refused", np.zeros((0, 3), f32))
def _(lib, x):
    return lib.linalg.vector_norm(x, inf)


@case("vector_norm_0d_and_nan", np.array(-3.0, f32), np.array([1, nan, -inf], f32))
def _(lib, s, x):
    vn = lib.linalg.vector_norm
    return (
        vn(s),
        vn(s, 0),
        vn(s, inf, dim=0),
        vn(x),
        vn(x, inf),
        vn(x, 0),
        vn(x, -inf),
        vn(x[::2], 1),
    )


@case("matrix_norm_ords", B234)
def _(lib, x):
    return [lib.linalg.matrix_norm(x, o) for o in ("fro", "nuc", inf, -inf, 1, -1, 2, -2)]


@case("matrix_norm_dim_keepdim_dtype", B234)
def _(lib, x):
    mn = lib.linalg.matrix_norm
    return (
        mn(x, dim=(0, 2)),
        mn(x, 1, dim=(-1, 0), keepdim=True),
        mn(x, "nuc", keepdim=True),
        mn(x, -2, dim=(2, 1)),
        mn(x, dtype=lib.float64),
        mn(x, inf, dtype=lib.float64),
    )


@case("matrix_norm_refuses_1d", rand(4))
def _(lib, x):
    return lib.linalg.matrix_norm(x)


@case("matrix_norm_refuses_bad_ord", A34)
def _(lib, x):
    return lib.linalg.matrix_norm(x, 3)


@case("matrix_norm_refuses_same_dims", A34)
def _(lib, x):
    return lib.linalg.matrix_norm(x, dim=(1, 1))


@case("matrix_norm_empty", np.zeros((0, 3), f32), np.zeros((2, 0, 0), f32))
def _(lib, x, e):
    mn = lib.linalg.matrix_norm
    return mn(x), mn(x, 1), mn(e), mn(e, "nuc"), mn(e, 2)


@case("matrix_norm_empty_inf_refused", np.zeros((0, 3), f32))
def _(lib, x):
    return lib.linalg.matrix_norm(x, inf)


@case("linalg_norm_dispatch", B234, rand(5))
def _(lib, x, v):
    n = lib.linalg.norm
    return (
        n(x),
        n(x[0]),
        n(v, 3),
        n(x[0], "nuc"),
        n(x, dim=1),
        n(x, 2, dim=(1, 2)),
        n(x, inf, dim=(0, 2), keepdim=True),
        n(v, dtype=lib.float64),
        n(x, ord=None, dim=(0, 2)),
    )


@case("linalg_norm_ord_needs_1d_or_2d", B234)
def _(lib, x):
    return lib.linalg.norm(x, 2)


@case("linalg_norm_fro_of_vector_refused", rand(5))
def _(lib, v):
    return lib.linalg.norm(v, "fro")


@case("torch_norm_forms", B234)
def _(lib, x):
    return (
        lib.norm(x),
        lib.norm(x, 3),
        lib.norm(x, "fro", dim=(1, 2)),
        lib.norm(x, "nuc", dim=(0, 1)),
        lib.norm(x, inf, dim=2, keepdim=True),
        lib.norm(x, p=1, dim=(0, 2)),
        x.norm(0.5),
        lib.norm(x, dim=1, dtype=lib.float64),
    )


@case("complex_norms", (rand(3, 3) + 1j * rand(3, 3)).astype(np.complex64))
def _(lib, c):
    la = lib.linalg
    return (
        la.norm(c),
        la.matrix_norm(c, "nuc"),
        la.matrix_norm(c, 2),
        la.vector_norm(c, 1, dim=0),
        la.matrix_norm(c, -inf),
    )


# -- det, slogdet, logdet, inv, solve ------------------------------------------------------


@case("det_slogdet_logdet", well(2, 3, 3), SINGULAR, np.array([[0, 1], [1, 0]], f32))
def _(lib, a, s, p):
    la = lib.linalg
    return (
        la.det(a),
        la.slogdet(a),
        lib.logdet(a),
        la.det(s),
        la.slogdet(s),
        lib.logdet(p),
        lib.slogdet(p),
        lib.det(a[0]),
        a.det(),
        a.slogdet(),
        lib.logdet(s),
    )


@case("det_empty", EMPTY00, EMPTY_BATCH, np.zeros((2, 0, 0), f32))
def _(lib, e, eb, e2):
    return lib.linalg.det(e), lib.linalg.det(eb), lib.linalg.slogdet(e2), lib.logdet(e)


@case("det_refuses_non_square", A34)
def _(lib, a):
    return lib.linalg.det(a)


@case("det_refuses_integers", np.eye(3, dtype=np.int64))
def _(lib, a):
    return lib.linalg.det(a)


@case(
    "det_float64_complex",
    well(3, 3, dtype=f64),
    (well(3, 3) + 1j * rand(3, 3)).astype(np.complex64),
)
def _(lib, a, c):
    return lib.linalg.det(a), lib.linalg.det(c), lib.linalg.slogdet(c), lib.logdet(a)


@case("inv_and_inv_ex", well(2, 3, 3), SINGULAR)
def _(lib, a, s):
    la = lib.linalg
    r = la.inv_ex(a)
    rs = la.inv_ex(s)
    return (
        la.inv(a),
        lib.inverse(a),
        a.inverse(),
        r.inverse,
        r.info,
        rs.info,
        la.inv_ex(s[None]).info,
    )


@linalg_error("inv_singular_refused", SINGULAR)
def _(lib, s):
    return lib.linalg.inv(s)


@linalg_error("inv_singular_in_batch_refused", np.stack([np.eye(2, dtype=f32), SINGULAR]))
def _(lib, s):
    return lib.linalg.inv(s)


@linalg_error("inv_ex_check_errors_raises", SINGULAR)
def _(lib, s):
    return lib.linalg.inv_ex(s, check_errors=True)


@case("inv_non_square_refused", A34)
def _(lib, a):
    return lib.linalg.inv(a)


@case("inv_empty", EMPTY00, EMPTY_BATCH)
def _(lib, e, eb):
    return lib.linalg.inv(e), lib.linalg.inv(eb), lib.linalg.inv_ex(eb).info


@case("solve_forms", well(2, 3, 3), rand(2, 3, 2), rand(3), rand(2, 3))
def _(lib, a, b, v, bv):
    la = lib.linalg
    return (
        la.solve(a, b),
        la.solve(a[0], v),
        la.solve(a, bv),
        la.solve(a, b.transpose(1, 2), left=False),
        la.solve(a[0], b),
        la.solve_ex(a, b),
        la.solve_ex(a, b).info,
    )


@case("solve_broadcasts", well(2, 1, 3, 3), rand(4, 3, 2))
def _(lib, a, b):
    return lib.linalg.solve(a, b)


@linalg_error("solve_singular_refused", SINGULAR, rand(2, 1))
def _(lib, s, b):
    return lib.linalg.solve(s, b)


@case("solve_ex_singular_info", SINGULAR, rand(2, 1))
def _(lib, s, b):
    return lib.linalg.solve_ex(s, b).info


@case("solve_shape_mismatch_refused", well(3, 3), rand(4, 2))
def _(lib, a, b):
    return lib.linalg.solve(a, b)


@case("solve_dtype_mismatch_refused", well(3, 3), rand(3, 2, dtype=f64))
def _(lib, a, b):
    return lib.linalg.solve(a, b)


@case("solve_empty", EMPTY00, np.zeros((0, 2), f32), EMPTY_BATCH)
def _(lib, e, b, eb):
    return lib.linalg.solve(e, b), lib.linalg.solve(eb, lib.zeros(0, 3, 1))


# -- cholesky, qr, eigh, eig, svd, pinv, lstsq ----------------------------------------------


@case("cholesky_forms", spd(2, 3, 3), spd(3, 3, dtype=f64))
def _(lib, a, d):
    la = lib.linalg
    return (
        la.cholesky(a),
        la.cholesky(a, upper=True),
        lib.cholesky(a),
        lib.cholesky(d, upper=True),
        la.cholesky_ex(a),
        la.cholesky_ex(a, upper=True).L,
        a.cholesky(),
    )


@linalg_error("cholesky_not_pd_refused", np.array([[1, 2], [2, 1]], f32))
def _(lib, a):
    return lib.linalg.cholesky(a)


@case("cholesky_ex_info", np.array([[[4, 0, 0], [0, -1, 0], [0, 0, 1]], np.eye(3)], f32))
def _(lib, a):
    return lib.linalg.cholesky_ex(a).info


@case("cholesky_non_square_refused", A34)
def _(lib, a):
    return lib.linalg.cholesky(a)


@case("cholesky_empty", EMPTY00, EMPTY_BATCH)
def _(lib, e, eb):
    return lib.linalg.cholesky(e), lib.linalg.cholesky_ex(eb)


@case("cholesky_solve_inverse", spd(3, 3), rand(3, 2))
def _(lib, a, b):
    L = lib.linalg.cholesky(a)
    return lib.cholesky_solve(b, L), lib.cholesky_inverse(L), lib.cholesky_solve(b, L.T, upper=True)


@case("qr_modes", rand(4, 3), rand(2, 3, 5))
def _(lib, tall, wide):
    la = lib.linalg
    out = []
    for x in (tall, wide):
        for mode in ("reduced", "complete"):
            q, r = la.qr(x, mode=mode)
            out += [q.shape, r.shape, q @ r, r.abs()]
        out.append(la.qr(x, mode="r").R.abs())
        out.append(la.qr(x, mode="r").Q.shape)
    return out


@case("qr_bad_mode_refused", A34)
def _(lib, a):
    return lib.linalg.qr(a, mode="economic")


@case("qr_empty", np.zeros((0, 3), f32), np.zeros((3, 0), f32))
def _(lib, a, b):
    return lib.linalg.qr(a), lib.linalg.qr(b), lib.linalg.qr(b, mode="complete")


@case("torch_qr_some", rand(4, 3))
def _(lib, a):
    q, r = lib.qr(a, some=False)
    return q.shape, r.shape, (q @ r), lib.qr(a)[1].abs()


@case("eigh_eigvalsh_uplo", rand(2, 3, 3))
def _(lib, a):
    la = lib.linalg
    lo, up = la.eigvalsh(a), la.eigvalsh(a, UPLO="U")
    w, v = la.eigh(a + a.transpose(-1, -2))
    proj = v[..., :, :1] @ v[..., :, :1].transpose(-1, -2)
    return lo, up, w, proj, la.eigh(a, "U").eigenvalues


@case("eigh_bad_uplo_refused", spd(3, 3))
def _(lib, a):
    return lib.linalg.eigh(a, UPLO="X")


@case("eigh_empty", EMPTY00, EMPTY_BATCH)
def _(lib, e, eb):
    return lib.linalg.eigh(e), lib.linalg.eigvalsh(eb)


@case(
    "eig_eigvals",
    np.array([[2, 1, 0], [0, 3, 1], [0, 0, 5]], f32),
    np.array([[0, -1], [1, 0]], f64),
)
def _(lib, a, rot):
    la = lib.linalg
    w, v = la.eig(a)
    return la.eigvals(a), w, (v.abs() ** 2).sum(-2), la.eigvals(rot), la.eig(rot).eigenvalues


@case("svd_svdvals", rand(2, 4, 3), rand(3, 5))
def _(lib, a, w):
    la = lib.linalg
    out = []
    for x in (a, w):
        for full in (True, False):
            u, s, vh = la.svd(x, full_matrices=full)
            out += [
                u.shape,
                vh.shape,
                s,
                u[..., :, : s.shape[-1]] @ (s[..., :, None] * vh[..., : s.shape[-1], :]),
            ]
        out.append(la.svdvals(x))
    return out


@case("torch_svd_some", rand(4, 3))
def _(lib, a):
    u, s, v = lib.svd(a, some=False)
    u2, s2, v2 = lib.svd(a, compute_uv=False)
    return u.shape, v.shape, s, (u[:, :3] * s) @ v.T, s2, u2, v2


@case("svd_empty", np.zeros((0, 3), f32), np.zeros((2, 3, 0), f32))
def _(lib, a, b):
    la = lib.linalg
    return la.svd(a), la.svd(b, full_matrices=False), la.svdvals(a), la.svd(b)[0].shape


@case("pinv_forms", rand(4, 3), rand(2, 3, 5), spd(3, 3))
def _(lib, a, b, s):
    la = lib.linalg
    return (
        la.pinv(a),
        la.pinv(b),
        la.pinv(s, hermitian=True),
        la.pinv(a, rtol=0.5),
        la.pinv(a, atol=1.0),
        lib.pinverse(a),
        lib.pinverse(a, rcond=0.5),
    )


@case("pinv_empty", np.zeros((0, 3), f32))
def _(lib, a):
    return lib.linalg.pinv(a)


@case("lstsq_forms", rand(5, 3), rand(5, 2), rand(2, 4, 3), rand(2, 4, 1))
def _(lib, a, b, ba, bb):
    la = lib.linalg
    r = la.lstsq(a, b)
    rb = la.lstsq(ba, bb)
    return r.solution, r.residuals, r.rank, r.singular_values, rb.solution, rb.residuals


@case("lstsq_drivers", rand(5, 3, dtype=f64), rand(5, 2, dtype=f64))
def _(lib, a, b):
    la = lib.linalg
    return [la.lstsq(a, b, driver=d) for d in ("gelsy", "gelsd", "gelss")]


@case("lstsq_mismatch_refused", rand(5, 3), rand(4, 2))
def _(lib, a, b):
    return lib.linalg.lstsq(a, b)


# -- matrix_rank, matrix_power, matrix_exp --------------------------------------------------


@case("matrix_rank_forms", np.array([[1, 2, 3], [2, 4, 6], [1, 0, 1]], f32), rand(2, 4, 3))
def _(lib, r2, b):
    mr = lib.linalg.matrix_rank
    return (
        mr(r2),
        mr(b),
        mr(r2, hermitian=True),
        mr(r2, atol=1.0),
        mr(r2, rtol=0.5),
        mr(r2, 1.0),
        mr(r2, atol=0.1, rtol=0.9),
        mr(b[:, :3] + b[:, :3].transpose(1, 2), hermitian=True),
    )


@case("matrix_rank_empty", np.zeros((0, 3), f32), EMPTY_BATCH)
def _(lib, a, b):
    return lib.linalg.matrix_rank(a), lib.linalg.matrix_rank(b)


@case("matrix_power", well(2, 3, 3, dtype=f64), np.array([[2, 1], [1, 1]], np.int64))
def _(lib, a, i):
    mp = lib.linalg.matrix_power
    return (
        mp(a, 0),
        mp(a, 1),
        mp(a, 5),
        mp(a, -1),
        mp(a, -3),
        mp(i, 7),
        mp(i, 0),
        lib.matrix_power(a, 2),
        a.matrix_power(3),
    )


@case("matrix_power_negative_integer_refused", np.array([[2, 1], [1, 1]], np.int64))
def _(lib, i):
    return lib.linalg.matrix_power(i, -1)


@linalg_error("matrix_power_negative_singular_refused", SINGULAR)
def _(lib, s):
    return lib.linalg.matrix_power(s, -2)


@case("matrix_power_non_square_refused", A34)
def _(lib, a):
    return lib.linalg.matrix_power(a, 2)


@case("matrix_power_empty", EMPTY_BATCH)
def _(lib, e):
    return (
        lib.linalg.matrix_power(e, 3),
        lib.linalg.matrix_power(e, -2),
        lib.linalg.matrix_power(e, 0),
    )


@case("matrix_exp", rand(2, 3, 3) / 2, np.zeros((2, 2), f32), np.array([[0, 1], [-1, 0]], f64))
def _(lib, a, z, rot):
    return lib.linalg.matrix_exp(a), lib.matrix_exp(z), lib.linalg.matrix_exp(rot), a.matrix_exp()


@case("matrix_exp_empty_and_1x1", EMPTY_BATCH, np.array([[[2.0]]], f32))
def _(lib, e, one):
    return lib.linalg.matrix_exp(e), lib.linalg.matrix_exp(one)


@case("matrix_exp_integer_refused", np.eye(2, dtype=np.int64))
def _(lib, a):
    return lib.linalg.matrix_exp(a)


# -- cross, multi_dot, tensorsolve, tensorinv, vander, vecdot --------------------------------


@case("cross_forms", rand(2, 3), rand(2, 3), rand(3, 4), rand(1, 3))
def _(lib, a, b, c, one):
    la = lib.linalg
    return (
        la.cross(a, b),
        la.cross(c, c.flip(0), dim=0),
        la.cross(a, one),
        lib.cross(a, b),
        lib.cross(c, c * 2, dim=0),
        la.cross(a.double(), b.double(), dim=-1),
    )


@case("torch_cross_default_dim_is_first_of_size_3", rand(3, 3, 2), rand(3, 3, 2))
def _(lib, a, b):
    return lib.cross(a, b)


@case("linalg_cross_default_dim_is_last", rand(3, 3), rand(3, 3))
def _(lib, a, b):
    return lib.linalg.cross(a, b), lib.linalg.cross(a.T, b.T)


@case("cross_bad_size_refused", rand(2, 4), rand(2, 4))
def _(lib, a, b):
    return lib.linalg.cross(a, b)


@case("cross_integers", np.array([[1, 2, 3]], np.int64), np.array([[4, 5, 6]], np.int64))
def _(lib, a, b):
    return lib.linalg.cross(a, b)


@case("multi_dot_forms", rand(3), rand(3, 4), rand(4, 5), rand(5))
def _(lib, v, a, b, w):
    md = lib.linalg.multi_dot
    return md([a, b]), md([v, a, b]), md([a, b, w]), md([v, a, b, w]), md((a, b, b.T, a.T))


@case("multi_dot_one_refused", rand(3, 3))
def _(lib, a):
    return lib.linalg.multi_dot([a])


@case("multi_dot_3d_refused", rand(3, 3), rand(2, 3, 3))
def _(lib, a, b):
    return lib.linalg.multi_dot([a, b])


@case("multi_dot_empty_dims", np.zeros((0, 3), f32), rand(3, 4), np.zeros((4, 0), f32))
def _(lib, a, b, c):
    return (
        lib.linalg.multi_dot([a, b]),
        lib.linalg.multi_dot([b, c]),
        lib.linalg.multi_dot([b.T, b, c]),
    )


@case("tensorsolve_tensorinv", well(6, 6).reshape(2, 3, 6), rand(2, 3), well(6, 6).reshape(6, 2, 3))
def _(lib, a, b, c):
    la = lib.linalg
    return (
        la.tensorsolve(a, b),
        la.tensorinv(c, ind=1),
        la.tensorinv(a.reshape(2, 3, 2, 3)),
        la.tensorsolve(a.reshape(6, 2, 3), b.reshape(6), dims=None),
    )


@case("tensorinv_non_square_refused", rand(2, 3, 4))
def _(lib, a):
    return lib.linalg.tensorinv(a, ind=1)


@case("vander", np.array([1, 2, 3, 5], f32), np.array([1, 2, 3], np.int64), rand(2, 3))
def _(lib, x, i, b):
    la = lib.linalg
    return (
        la.vander(x),
        la.vander(x, N=2),
        la.vander(i, N=5),
        la.vander(b),
        lib.vander(x),
        lib.vander(x, 3, increasing=True),
    )


@case("vecdot", rand(2, 3), rand(3), (rand(2, 3) + 1j * rand(2, 3)).astype(np.complex64))
def _(lib, a, v, c):
    la = lib.linalg
    return (
        la.vecdot(a, v),
        la.vecdot(a, a, dim=0),
        la.vecdot(c, c),
        la.vecdot(c, c * 1j),
        lib.vdot(c[0], c[1]),
    )


# -- the test ----------------------------------------------------------------------------

SCENARIOS.eager_only.update({})
SCENARIOS.xfail.update({})


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", SCENARIOS.names())
def test_matches_torch(torch, name, mode):
    SCENARIOS.check(torch, name, mode)


@linalg_error("cholesky_ex_check_errors", np.array([[1, 2], [2, 1]], f32))
def _(lib, a):
    return lib.linalg.cholesky_ex(a, check_errors=True)


@linalg_error("solve_ex_check_errors", SINGULAR, rand(2))
def _(lib, s, b):
    return lib.linalg.solve_ex(s, b, check_errors=True)


@linalg_error("torch_inverse_and_cholesky_singular", np.zeros((2, 2), f32))
def _(lib, z):
    return lib.inverse(z), lib.cholesky(z)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", LINALG_ERRORS.names())
def test_linalg_error_as_torch(torch, name, mode):
    # torch's is torch.linalg.LinAlgError, kiln's kn.linalg.LinAlgError: both RuntimeErrors
    fn, inputs = LINALG_ERRORS.cases[name]
    _, torch_error = outcome(torch, fn, inputs)
    assert isinstance(torch_error, torch.linalg.LinAlgError), torch_error
    got, error = outcome(kn, fn, inputs, kn.compile if mode == "compiled" else None)
    assert isinstance(error, kn.linalg.LinAlgError), (error, got)
    assert isinstance(error, RuntimeError) and type(error).__name__ == "LinAlgError"
