"""kn.linalg's factorizations and solvers (kiln/ops/linalg_factor.py,
kiln/frontend/linalg_factor.py): values and gradients against torch (float64, 1e-8) eagerly,
in graph mode and under kn.compile, and forward mode (kn.jvp); refusals; info codes;
degenerate eigenvalues; empty matrices; vmap; ONNX; the simulated GPU.

Each loss is written once for both libraries (`m` is kiln or torch) and does not depend on the
signs LAPACK picks for Q's columns, eigenvectors and singular vectors (Q*Q, R*R, products of
factors, projectors u uᵀ), so it compares the gauge-invariant content of the factorizations.
The op table (tests/op_table_linalg.py) checks the same ops against NumPy/SciPy and finite
differences in every mode.
"""

import numpy as np
import pytest

import kiln as kn
from kiln.errors import AutogradError, DTypeError, GraphError, ShapeError, UsageError

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(7)
W = RNG.standard_normal((6, 6))  # weights of the losses


def w(m, shape):
    """Fixed weights of `shape` in library `m`."""
    arr = W[: shape[-2], : shape[-1]] if len(shape) > 1 else W[0, : shape[0]]
    return torch.tensor(arr) if m is torch else np.asarray(arr)


def sym(x):
    return (x + x.mT) * 0.5


def qr_loss(mode):
    def loss(m, a):
        q, r = m.linalg.qr(a, mode=mode)
        k = min(q.shape[-1], r.shape[-2])
        diag_r = m.diagonal(r[..., :k, :k], 0, -2, -1)
        return (
            ((q @ r) * w(m, a.shape)).sum()
            + (q * q * w(m, q.shape)).sum()
            + (r * r * w(m, r.shape)).sum()
            + (q[..., :, :k] * m.unsqueeze(diag_r, -2)).sum()
        )

    return loss


def eigh_loss(uplo):
    def loss(m, a):
        lam, v = m.linalg.eigh(sym(a), UPLO=uplo)
        proj = v[..., :, :1] @ v[..., :, :1].mT  # the first eigenvector's projector
        return (
            (lam * lam).sum()
            + (proj * w(m, proj.shape)).sum()
            + ((v * v) * w(m, v.shape)).sum()
            + (m.linalg.eigvalsh(sym(a), UPLO=uplo) ** 3).sum()
        )

    return loss


def svd_loss(full):
    def loss(m, a):
        u, s, vh = m.linalg.svd(a, full_matrices=full)
        k = s.shape[-1]
        u, vh = u[..., :, :k], vh[..., :k, :]
        rank2 = u[..., :, :2] @ vh[..., :2, :]
        return (
            (s**3).sum()
            + (rank2 * w(m, rank2.shape)).sum()
            + (u * u * w(m, u.shape)).sum()
            + (vh * vh * w(m, vh.shape)).sum()
            + m.linalg.svdvals(a).sum()
        )

    return loss


def lu_loss(m, a):
    p, lower, upper = m.linalg.lu(a)
    lu_, piv = m.linalg.lu_factor(a)
    return (
        (lower * w(m, lower.shape)).sum()
        + (upper * upper).sum()
        + (p * 0).sum()
        + (lu_ * w(m, lu_.shape)).sum()
    )


def lu_solve_loss(left, adjoint):
    def loss(m, a, b):
        lu_, piv = m.linalg.lu_factor(a)
        x = m.linalg.lu_solve(lu_, piv, b if left else b.mT, left=left, adjoint=adjoint)
        return (x * x).sum()

    return loss


def solve_triangular_loss(upper, left, unit):
    def loss(m, a, b):
        x = m.linalg.solve_triangular(a, b if left else b.mT, upper=upper, left=left,
                                      unitriangular=unit)  # fmt: skip
        return (x * x).sum()

    return loss


def pinv_loss(hermitian):
    def loss(m, a):
        x = sym(a) if hermitian else a
        p = m.linalg.pinv(x, hermitian=hermitian)
        return (p * w(m, p.shape)).sum() + (p * p).sum()

    return loss


def lstsq_loss(m, a, b):
    x = m.linalg.lstsq(a, b).solution
    return (x * x).sum() + x.sum()


def misc_loss(m, a):
    sq = a[..., :3, :3]
    return (
        (m.linalg.matrix_exp(sq * 0.3) * w(m, (3, 3))).sum()
        + m.linalg.cond(a).sum()
        + m.linalg.cond(a, -2).sum()
        + m.linalg.matrix_norm(a, "nuc").sum()
        + m.linalg.matrix_norm(a, 2).sum()
        + m.linalg.matrix_norm(a, -2).sum()
        + m.linalg.vecdot(a, a).sum()
    )


def ex_loss(m, a):
    spd = a @ a.mT + 4 * m.eye(a.shape[-1], dtype=a.dtype)
    return (
        (m.linalg.cholesky_ex(spd).L * w(m, spd.shape)).sum()
        + (m.linalg.cholesky_ex(spd, upper=True).L ** 2).sum()
        + (m.linalg.inv_ex(spd).inverse * w(m, spd.shape)).sum()
    )


def multi_dot_loss(m, a, b, c):
    return (m.linalg.multi_dot([a[0], b, c]) ** 2).sum() + m.linalg.multi_dot([a[0, 0], b, c[:, 0]])


def old_api_loss(m, a):
    u, s, v = m.svd(a)
    q, r = m.qr(a)
    return (
        (s**2).sum()
        + ((u[..., :, :1] @ v[..., :, :1].mT) * w(m, a.shape)).sum()
        + (q @ r).sum()
        + (r * r).sum()
        + (m.pinverse(a) ** 2).sum()
        + (m.matrix_exp(a[..., :2, :2]) ** 2).sum()
    )


def householder_loss(m, a, tau):
    q = m.linalg.householder_product(a, tau)
    return (q * q * w(m, q.shape)).sum() + (m.orgqr(a, tau) * w(m, q.shape)).sum()


def torch_lu_loss(m, a):
    lu_, piv = m.lu(a)
    return (lu_ * w(m, lu_.shape)).sum() + (m.lu_unpack(lu_, piv)[2] ** 2).sum()


def _normal(*shapes):
    return [RNG.standard_normal(s) for s in shapes]


def _square(*shapes, shift=3.0):
    return [RNG.standard_normal(s) * 0.5 + shift * np.eye(s[-1]) for s in shapes]


CASES = {
    "qr-tall-batch": (qr_loss("reduced"), _normal((2, 5, 3))),
    "qr-wide": (qr_loss("reduced"), _normal((3, 5))),
    "qr-square": (qr_loss("reduced"), _normal((4, 4))),
    "qr-complete-wide": (qr_loss("complete"), _normal((2, 3, 4))),
    "eigh-L": (eigh_loss("L"), _normal((2, 4, 4))),
    "eigh-U": (eigh_loss("U"), _normal((3, 3))),
    "svd-tall": (svd_loss(False), _normal((2, 5, 3))),
    "svd-wide-full": (svd_loss(True), _normal((3, 5))),
    "svd-tall-full": (svd_loss(True), _normal((5, 3))),
    "svd-square": (svd_loss(False), _normal((4, 4))),
    "lu-square": (lu_loss, _normal((2, 4, 4))),
    "lu-tall": (lu_loss, _normal((5, 3))),
    "lu-wide": (lu_loss, _normal((2, 3, 5))),
    **{f"lu_solve-{left}-{adj}": (lu_solve_loss(left, adj), [*_square((2, 3, 3)),
                                                             *_normal((2, 3, 2))])
       for left in (True, False) for adj in (True, False)},
    **{f"solve_triangular-{up}-{left}-{unit}": (solve_triangular_loss(up, left, unit),
                                               [*_square((2, 3, 3)), *_normal((3, 2))])
       for up in (True, False) for left in (True, False) for unit in (True, False)},
    "pinv-tall": (pinv_loss(False), _normal((2, 5, 3))),
    "pinv-wide": (pinv_loss(False), _normal((3, 4))),
    "pinv-hermitian": (pinv_loss(True), _normal((4, 4))),
    "lstsq-tall": (lstsq_loss, _normal((2, 5, 3), (2, 5, 2))),
    "lstsq-wide": (lstsq_loss, _normal((2, 3, 5), (2, 3, 2))),
    "misc": (misc_loss, _normal((2, 3, 4))),
    "ex": (ex_loss, _normal((2, 3, 3))),
    "multi_dot": (multi_dot_loss, _normal((2, 2, 4), (4, 5), (5, 3))),
    "old-api": (old_api_loss, _normal((4, 3))),
    "householder_product": (householder_loss, _normal((2, 5, 3), (2, 2))),
    "torch-lu": (torch_lu_loss, _normal((2, 4, 4))),
}  # fmt: skip


def _torch(loss, arrays):
    xs = [torch.tensor(a, requires_grad=True) for a in arrays]
    value = loss(torch, *xs)
    grads = torch.autograd.grad(value, xs)
    return value.item(), [g.numpy() for g in grads]


def _eager(loss, arrays):
    xs = [kn.tensor(a, requires_grad=True) for a in arrays]
    value = loss(kn, *xs)
    value.backward()
    return value.item(), [x.grad.numpy() for x in xs]


def _graph(loss, arrays):
    with kn.Graph().as_default():
        ps = [kn.placeholder(kn.float64, a.shape, name=f"x{i}") for i, a in enumerate(arrays)]
        value = loss(kn, *ps)
        grads = kn.grad(value, ps)
        out = kn.function(ps, [value, *grads])(*arrays)
    return float(out[0]), list(out[1:])


def _compiled(loss, arrays):
    xs = [kn.tensor(a, requires_grad=True) for a in arrays]
    value = kn.compile(lambda *t: loss(kn, *t))(*xs)
    value.backward()
    return value.item(), [x.grad.numpy() for x in xs]


@pytest.mark.parametrize("mode", ["eager", "graph", "compile"])
@pytest.mark.parametrize("name", list(CASES))
def test_values_and_gradients_match_torch(name, mode):
    loss, arrays = CASES[name]
    want, want_grads = _torch(loss, arrays)
    got, got_grads = {"eager": _eager, "graph": _graph, "compile": _compiled}[mode](loss, arrays)
    np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-8)
    for g, t in zip(got_grads, want_grads):
        np.testing.assert_allclose(g, t, rtol=1e-8, atol=1e-8)


def test_named_tuples_shapes_and_dtypes_match_torch():
    a = RNG.standard_normal((2, 5, 3))
    ka, ta = kn.tensor(a), torch.tensor(a)
    pairs = [
        (kn.linalg.qr(ka, "complete"), torch.linalg.qr(ta, "complete"), ("Q", "R")),
        (kn.linalg.qr(ka, "r"), torch.linalg.qr(ta, "r"), ("Q", "R")),
        (kn.linalg.svd(ka), torch.linalg.svd(ta), ("U", "S", "Vh")),
        (kn.svd(ka, some=False), torch.svd(ta, some=False), ("U", "S", "V")),
        (kn.svd(ka, compute_uv=False), torch.svd(ta, compute_uv=False), ("U", "S", "V")),
        (kn.linalg.lu(ka), torch.linalg.lu(ta), ("P", "L", "U")),
        (kn.linalg.lu_factor(ka), torch.linalg.lu_factor(ta), ("LU", "pivots")),
        (kn.linalg.lstsq(ka, ka[..., :2]), torch.linalg.lstsq(ta, ta[..., :2]),
         ("solution", "residuals", "rank", "singular_values")),
        (kn.linalg.eigh(ka[..., :3, :]), torch.linalg.eigh(ta[..., :3, :]),
         ("eigenvalues", "eigenvectors")),
        (kn.linalg.inv_ex(ka[..., :3, :]), torch.linalg.inv_ex(ta[..., :3, :]),
         ("inverse", "info")),
        (kn.linalg.cholesky_ex(ka[..., :3, :]), torch.linalg.cholesky_ex(ta[..., :3, :]),
         ("L", "info")),
        (kn.triangular_solve(ka[..., :3, :2], ka[..., :3, :]),
         torch.triangular_solve(ta[..., :3, :2], ta[..., :3, :]),
         ("solution", "cloned_coefficient")),
    ]  # fmt: skip
    for ours, theirs, fields in pairs:
        assert ours._fields == fields and len(theirs) == len(fields)
        for name in fields:
            assert getattr(theirs, name) is not None  # PyTorch's field names
        for o, t in zip(ours, theirs):
            assert isinstance(o, kn.Tensor), fields
            assert tuple(o.shape) == tuple(t.shape), (fields, o.shape, t.shape)
            assert str(o.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], fields
    lu_, piv = torch.linalg.lu_factor(ta)
    np.testing.assert_array_equal(kn.linalg.lu_factor(ka).pivots.numpy(), piv.numpy())
    np.testing.assert_array_equal(kn.linalg.lstsq(ka, ka).rank.numpy(),
                                  torch.linalg.lstsq(ta, ta).rank.numpy())  # fmt: skip
    q, r = kn.linalg.qr(ka)  # unpacks as PyTorch's
    np.testing.assert_allclose((q @ r).numpy(), a, atol=1e-12)
    s = np.linalg.svd(a, compute_uv=False)
    np.testing.assert_allclose(kn.linalg.svd(ka).S.numpy(), s, rtol=1e-12)


def test_cond_in_the_other_norms_matches_numpy():
    a = RNG.standard_normal((2, 3, 3)) + 2 * np.eye(3)
    for p in ("fro", "nuc", np.inf, -np.inf, 1, -1, 2, -2, None):
        np.testing.assert_allclose(kn.linalg.cond(kn.tensor(a), p).numpy(),
                                   np.linalg.cond(a, p), rtol=1e-10)  # fmt: skip


def test_float32_values():
    a = RNG.standard_normal((2, 4, 4)).astype(np.float32)
    k, t = kn.tensor(a), torch.tensor(a)
    assert kn.linalg.qr(k).R.dtype == kn.float32 and kn.linalg.pinv(k).dtype == kn.float32
    np.testing.assert_allclose(kn.linalg.svdvals(k).numpy(), torch.linalg.svdvals(t).numpy(),
                               rtol=1e-5)  # fmt: skip
    np.testing.assert_allclose(kn.linalg.eigvalsh(k).numpy(), torch.linalg.eigvalsh(t).numpy(),
                               rtol=1e-5, atol=1e-5)  # fmt: skip
    np.testing.assert_allclose(kn.linalg.matrix_exp(k).numpy(),
                               torch.linalg.matrix_exp(t).numpy(), rtol=1e-4)  # fmt: skip


def test_info_codes_and_check_errors_match_torch():
    not_pd = np.array([[[4.0, 0.0, 0.0], [0.0, 1.0, 3.0], [0.0, 3.0, 1.0]], np.eye(3)])
    singular = np.array([[[1.0, 2.0], [2.0, 4.0]], [[0.0, 0.0], [0.0, 1.0]], np.eye(2)])
    for ours, theirs, x in [
        (kn.linalg.cholesky_ex, torch.linalg.cholesky_ex, not_pd),
        (kn.linalg.inv_ex, torch.linalg.inv_ex, singular),
    ]:
        np.testing.assert_array_equal(ours(kn.tensor(x)).info.numpy(),
                                      theirs(torch.tensor(x)).info.numpy())  # fmt: skip
    assert kn.linalg.cholesky_ex(kn.tensor(not_pd)).info.dtype == kn.int32
    with pytest.raises(kn.linalg.LinAlgError, match="minor of order 3"):
        kn.linalg.cholesky_ex(kn.tensor(not_pd), check_errors=True)
    with pytest.raises(kn.linalg.LinAlgError, match="singular"):
        kn.linalg.inv_ex(kn.tensor(singular), check_errors=True)
    with kn.Graph().as_default():  # graph mode: the info is a value; check_errors at run time
        p = kn.placeholder(kn.float64, (2, 3, 3), name="a")
        f = kn.function([p], kn.linalg.cholesky_ex(p).info)
        g = kn.function([p], kn.linalg.cholesky_ex(p, check_errors=True).L)
    np.testing.assert_array_equal(f(not_pd), [3, 0])
    with pytest.raises(kn.linalg.LinAlgError):
        g(not_pd)


def test_refusals_name_the_function():
    # (PyTorch raises RuntimeError for these arguments: kiln's UsageError is one)
    a = kn.tensor(RNG.standard_normal((4, 3)))
    with pytest.raises(UsageError, match="unrecognized mode"):
        kn.linalg.qr(a, mode="full")
    with pytest.raises(UsageError, match="UPLO"):
        kn.linalg.eigh(a[:3], UPLO="X")
    with pytest.raises(ShapeError, match="linalg.eigh"):
        kn.linalg.eigh(a)
    with pytest.raises(ShapeError, match="at least 2 dims"):
        kn.linalg.svd(a[0])
    with pytest.raises(DTypeError, match="float32 or float64"):
        kn.linalg.qr(kn.ones(3, 3, dtype=kn.int64))
    with pytest.raises(UsageError, match="gelsy"):
        kn.linalg.lstsq(a, a, driver="gelsx")  # gelsd, gels and gelss are PyTorch's too
    with pytest.raises(ShapeError, match="solve_triangular"):
        kn.linalg.solve_triangular(a[:3], a, upper=True)
    with pytest.raises(UsageError, match="at least 2 tensors"):
        kn.linalg.multi_dot([a])
    # as PyTorch's: QR with mode="complete" of a tall matrix has no gradient
    x = kn.tensor(RNG.standard_normal((4, 3)), requires_grad=True)
    q, r = kn.linalg.qr(x, mode="complete")
    with pytest.raises(AutogradError, match="not differentiable"):
        q.sum().backward()


def test_repeated_eigenvalues_give_nonfinite_vector_gradients_as_torch():
    """At a repeated eigenvalue the eigenvectors' gradient divides by zero (PyTorch's too);
    the eigenvalues' gradient stays finite."""
    a = np.diag([1.0, 1.0, 2.0])
    x = kn.tensor(a, requires_grad=True)
    kn.linalg.eigh(x).eigenvectors[:, 0].sum().backward()
    t = torch.tensor(a, requires_grad=True)
    torch.linalg.eigh(t).eigenvectors[:, 0].sum().backward()
    assert not np.isfinite(x.grad.numpy()).all() and not np.isfinite(t.grad.numpy()).all()
    x.grad = None
    kn.linalg.eigvalsh(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.eye(3))  # d trace / dA = I


def test_vmap_batches_the_factorizations():
    a = RNG.standard_normal((3, 4, 4))
    got = kn.vmap(lambda x: kn.linalg.svdvals(x) + kn.linalg.pinv(x).sum())(kn.tensor(a))
    want = np.linalg.svd(a, compute_uv=False) + np.linalg.pinv(a).sum(axis=(-2, -1))[:, None]
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-10)
    b = RNG.standard_normal((4, 2))
    got = kn.vmap(lambda x: kn.linalg.solve_triangular(x, kn.tensor(b), upper=True))(kn.tensor(a))
    want = np.linalg.solve(np.triu(a), b)  # only the upper triangle is read
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-8)


def test_no_onnx_form_names_the_op():
    from kiln.interchange import to_onnx

    with kn.Graph().as_default():
        p = kn.placeholder(kn.float32, (3, 3), name="a")
        out = kn.linalg.qr(p).R
        f = kn.function([p], out)
    with pytest.raises(GraphError, match="op qr has no ONNX form"):
        to_onnx(f)


def test_simulated_gpu_runs_device_and_host_kernels(monkeypatch):
    fake_cupy = pytest.importorskip("fake_cupy")
    fake_cupy.install(monkeypatch)
    fake_cupy.reset_kiln()
    try:
        a = RNG.standard_normal((2, 4, 4)) + 3 * np.eye(4)
        x = kn.tensor(a, device="cuda")
        lu = kn.linalg.lu_factor(x)  # SciPy's getrf: on the host, the result back on the device
        assert lu.LU.device == "cuda:0"
        np.testing.assert_allclose(lu.LU.cpu().numpy(), torch.linalg.lu_factor(
            torch.tensor(a)).LU.numpy(), rtol=1e-12)  # fmt: skip
        np.testing.assert_allclose(kn.linalg.svdvals(x).cpu().numpy(),
                                   np.linalg.svd(a, compute_uv=False), rtol=1e-12)  # fmt: skip
    finally:
        fake_cupy.reset_kiln()


def test_empty_matrices_give_torch_shapes():
    for shape in [(0, 3), (3, 0), (0, 3, 3), (2, 0, 0)]:
        k, t = kn.zeros(*shape, dtype=kn.float64), torch.zeros(*shape, dtype=torch.float64)
        for name in ("qr", "svd", "lu", "lu_factor", "pinv", "svdvals", "matrix_rank"):
            ours, theirs = getattr(kn.linalg, name)(k), getattr(torch.linalg, name)(t)
            ours = ours if isinstance(ours, tuple) else (ours,)
            theirs = theirs if isinstance(theirs, tuple) else (theirs,)
            assert [tuple(o.shape) for o in ours] == [tuple(x.shape) for x in theirs], name


def test_forward_mode_matches_torch_func_jvp():
    a, v = RNG.standard_normal((2, 4, 3)), RNG.standard_normal((2, 4, 3))
    for ours, theirs in [
        (lambda x: kn.linalg.svdvals(x), lambda x: torch.linalg.svdvals(x)),
        (lambda x: kn.linalg.qr(x).R ** 2, lambda x: torch.linalg.qr(x).R ** 2),
        (lambda x: kn.linalg.pinv(x), lambda x: torch.linalg.pinv(x)),
        (lambda x: kn.linalg.eigvalsh(x.mT @ x), lambda x: torch.linalg.eigvalsh(x.mT @ x)),
    ]:
        _, got = kn.jvp(ours, (kn.tensor(a),), (kn.tensor(v),))
        _, want = torch.func.jvp(theirs, (torch.tensor(a),), (torch.tensor(v),))
        np.testing.assert_allclose(np.asarray(got), want.numpy(), rtol=1e-8, atol=1e-10)
