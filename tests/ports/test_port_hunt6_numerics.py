"""More numerical programs ported by renaming `torch` to `kn` (see test_port_hunt6.py): Gaussian
process regression, k-means and k-NN, PCA and least squares, FFT convolution and spectral
derivatives, image warping and filtering, histograms and searching, numerical integration,
tensor-network contractions, a variational quantum gradient and an RK4 solve differentiated
through. They agree with torch 2.13 (the oracle), eagerly and under `kn.compile`; they stay as
ports, so that a change that breaks one shows.

Tolerances: float64 programs at 1e-9..1e-12 relative (a few hundred operations, each exact to
1e-16, in another order); float32 ones at 1e-5 (sums of a few hundred products).
"""

import numpy as np
import pytest
from port_common import identity, to_numpy

import kiln as kn


def assert_same(k, t, **tol):
    """Nested tuples of tensors agree in structure, shape, dtype and values."""
    if isinstance(t, (tuple, list)):
        assert isinstance(k, (tuple, list)) and len(k) == len(t)
        for a, b in zip(k, t):
            assert_same(a, b, **tol)
        return
    if not hasattr(t, "shape"):
        assert k == t
        return
    assert tuple(k.shape) == tuple(t.shape)
    assert str(k.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    np.testing.assert_allclose(to_numpy(k), to_numpy(t.resolve_conj()), **(tol or {"rtol": 1e-6}))


def compiled_for(lib, wrap):
    return kn.compile if wrap == "compiled" and lib is kn else identity


WRAPS = pytest.mark.parametrize("wrap", ["eager", "compiled"])

# -- Gaussian process regression: marginal likelihood and its gradient -------------------------

_rng = np.random.default_rng(0)
GP_X = _rng.standard_normal((8, 2))
GP_Y = np.sin(GP_X[:, 0]) + 0.1 * _rng.standard_normal(8)


def gp_marginal_likelihood(lib, wrap=identity):
    x, y = lib.tensor(GP_X), lib.tensor(GP_Y)
    hyper = [lib.tensor(v, dtype=lib.float64, requires_grad=True) for v in (0.7, 1.2, 0.1)]

    @wrap
    def nll(ls, sf, sn):
        K = sf**2 * lib.exp(-0.5 * lib.cdist(x, x) ** 2 / ls**2)
        K = K + sn**2 * lib.eye(8, dtype=lib.float64)
        L = lib.linalg.cholesky(K)
        alpha = lib.cholesky_solve(y.unsqueeze(-1), L)
        half = lib.linalg.solve_triangular(L, y.unsqueeze(-1), upper=False)
        logdet = 2 * lib.log(lib.diagonal(L)).sum()
        value = 0.5 * (y.unsqueeze(-1) * alpha).sum() + 0.5 * logdet + 4 * np.log(2 * np.pi)
        return value, lib.linalg.slogdet(K), lib.logdet(K), half

    out = nll(*hyper)
    grads = lib.autograd.grad(out[0] + out[1][1] + out[2] + out[3].sum(), hyper)
    return out[0], tuple(out[1]), out[2], out[3], grads


def gp_posterior(lib):
    x, y = lib.tensor(GP_X), lib.tensor(GP_Y)
    xs = lib.linspace(-2, 2, 5, dtype=lib.float64).unsqueeze(1).repeat(1, 2)
    K = lib.exp(-0.5 * lib.cdist(x, x) ** 2) + 0.01 * lib.eye(8, dtype=lib.float64)
    Ks = lib.exp(-0.5 * lib.cdist(xs, x) ** 2)
    L, info = lib.linalg.cholesky_ex(K)
    U = lib.linalg.cholesky(K, upper=True)
    mean = Ks @ lib.cholesky_solve(y[:, None], L)
    v = lib.linalg.solve_triangular(L, Ks.T, upper=False)
    return (mean, 1 - (v**2).sum(0), info, U, lib.cholesky_inverse(L),
            lib.cholesky_inverse(U, upper=True), lib.linalg.solve_triangular(L, Ks, upper=False,
            left=False), lib.linalg.eigvalsh(K))  # fmt: skip


@WRAPS
def test_gaussian_process(torch, wrap):
    k = gp_marginal_likelihood(kn, compiled_for(kn, wrap))
    assert_same(k, gp_marginal_likelihood(torch), rtol=1e-9)
    assert_same(gp_posterior(kn), gp_posterior(torch), rtol=1e-9, atol=1e-12)


# -- k-means and k-NN ----------------------------------------------------------------------------

POINTS = np.random.default_rng(0).standard_normal((50, 2)).astype(np.float32)


def kmeans(lib, steps=5):
    x = lib.tensor(POINTS)
    c = x[:3].clone()
    for _ in range(steps):
        assign = lib.cdist(x, c).argmin(1)
        count = lib.bincount(assign, minlength=3)
        sums = lib.zeros_like(c).index_add_(0, assign, x)
        c = sums / count[:, None].clamp(min=1)
    index = assign[:, None].expand(-1, 2)
    return (c, assign, count, lib.zeros(3, 2).scatter_add_(0, index, x),
            lib.zeros(3, 2).scatter_reduce(0, index, x, reduce="mean", include_self=False),
            lib.bincount(assign, weights=x[:, 0].double()))  # fmt: skip


def knn(lib):
    x, q = lib.tensor(POINTS), lib.tensor(POINTS[:5] + 0.3)
    d = lib.cdist(q, x, p=1)  # (Euclidean cdist of more than 25 rows: PyTorch's mm form)
    labels = lib.tensor((POINTS[:, 0] > 0).astype(np.int64))
    near = d.topk(4, largest=False)
    votes = labels[near.indices].mode(1)
    kth = lib.kthvalue(d, 2, dim=1)
    order = lib.sort(d, dim=1, stable=True)
    return (near.values, near.indices, votes.values, kth.values, kth.indices, order.values,
            order.indices, lib.topk(d, 3, dim=0).indices)  # fmt: skip


@WRAPS
def test_kmeans_and_knn(torch, wrap):
    assert_same(compiled_for(kn, wrap)(kmeans)(kn), kmeans(torch), rtol=1e-5, atol=1e-6)
    assert_same(knn(kn), knn(torch), rtol=1e-6)


# -- PCA, low-rank approximation, least squares, polynomial fit ----------------------------------

DATA = np.random.default_rng(0).standard_normal((30, 6))


def pca(lib):
    x = lib.tensor(DATA)
    xc = x - x.mean(0)
    U, S, Vh = lib.linalg.svd(xc, full_matrices=False)
    low = (U[:, :2] * S[:2]) @ Vh[:2]
    cov = lib.cov(xc.T)
    evals, evecs = lib.linalg.eigh(cov)
    weights = lib.linspace(0.5, 1.5, 30, dtype=lib.float64)
    return ((U * lib.sign(U[0])).abs(), S, lib.linalg.svdvals(xc), lib.svd(xc)[1], cov,
            lib.corrcoef(xc.T), lib.cov(xc.T, correction=0, fweights=lib.arange(1, 31),
                                        aweights=weights),
            evals, evecs.abs(), low, lib.linalg.matrix_norm(xc - low), lib.linalg.norm(xc, "nuc"),
            lib.linalg.norm(xc - low, ord=2), lib.linalg.cond(xc),
            lib.linalg.vector_norm(xc, ord=3, dim=0))  # fmt: skip


def least_squares(lib):
    rng = np.random.default_rng(1)
    A, b = lib.tensor(rng.standard_normal((10, 3))), lib.tensor(rng.standard_normal((10, 2)))
    fit = lib.linalg.lstsq(A, b)
    batched = lib.linalg.lstsq(lib.tensor(rng.standard_normal((4, 6, 3))),
                               lib.tensor(rng.standard_normal((4, 6, 1))))  # fmt: skip
    x = lib.linspace(0, 1, 20, dtype=lib.float64)
    y = 1 + 2 * x - 3 * x**2
    V = lib.vander(x, N=3)
    return (fit.solution, fit.residuals, lib.linalg.pinv(A), lib.linalg.pinv(A, rtol=0.3),
            lib.linalg.pinv(A @ A.T, hermitian=True), lib.linalg.matrix_rank(A),
            lib.linalg.matrix_rank(A @ A.T), lib.linalg.matrix_rank(A, tol=1.0),
            batched.solution, batched.residuals, V, lib.vander(x, N=4, increasing=True),
            lib.linalg.solve(V.T @ V, V.T @ y), lib.vander(lib.tensor([1, 2, 3])))  # fmt: skip


def test_pca_and_least_squares(torch):
    assert_same(pca(kn), pca(torch), rtol=1e-9, atol=1e-12)
    assert_same(least_squares(kn), least_squares(torch), rtol=1e-9, atol=1e-12)


# -- FFT convolution and a spectral heat-equation solver ---------------------------------------


def fft_programs(lib):
    rng = np.random.default_rng(2)
    s = lib.tensor(rng.standard_normal(64))
    k = s[:9]
    n = 64 + 9 - 1
    conv = lib.fft.irfft(lib.fft.rfft(s, n=n) * lib.fft.rfft(k, n=n), n=n)
    X = lib.tensor(rng.standard_normal((8, 6)))
    F = lib.fft.fftn(X)
    length = 2 * np.pi
    x = lib.arange(32, dtype=lib.float64) * length / 32
    u = lib.sin(3 * x) + lib.cos(x)
    wave = lib.fft.fftfreq(32, d=length / 32, dtype=lib.float64) * 2 * np.pi
    du = lib.fft.ifft(1j * wave * lib.fft.fft(u)).real
    uh = lib.fft.fft(u)
    for _ in range(3):
        uh = uh * lib.exp(-(wave**2) * 0.01)
    return (conv, F, lib.fft.fftshift(F), lib.fft.ifftshift(lib.fft.fftshift(F), dim=(0,)),
            lib.fft.irfft2(lib.fft.rfft2(X, norm="ortho"), s=X.shape, norm="ortho"),
            lib.fft.rfftfreq(9, 0.5, dtype=lib.float64), lib.fft.hfft(F[0], n=10),
            lib.fft.ihfft(X[0]), lib.fft.rfftn(X, s=(4, 4)), du, lib.fft.ifft(uh).real)  # fmt: skip


@WRAPS
def test_fft_programs(torch, wrap):
    k = compiled_for(kn, wrap)(fft_programs)(kn)
    assert_same(k, fft_programs(torch), rtol=1e-9, atol=1e-12)


# -- image warping and filtering ------------------------------------------------------------------

IMAGE = np.random.default_rng(0).random((2, 3, 9, 11))
THETA = np.array([[[0.9, -0.2, 0.1], [0.3, 1.1, -0.05]], [[1.2, 0.1, 0.0], [-0.1, 0.8, 0.2]]])


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_spatial_transformer_warp(torch, mode, align_corners):
    results = []
    for lib in (torch, kn):
        F = lib.nn.functional
        x, theta = lib.tensor(IMAGE, requires_grad=True), lib.tensor(THETA, requires_grad=True)
        grid = F.affine_grid(theta, (2, 3, 7, 8), align_corners=align_corners)
        outs = [F.grid_sample(x, grid, mode=mode, padding_mode=pad, align_corners=align_corners)
                for pad in ("zeros", "border", "reflection")]  # fmt: skip
        wrt = (x, theta) if mode != "nearest" else (x,)
        results.append((grid, outs, lib.autograd.grad(sum((o * o).sum() for o in outs), wrt)))
    assert_same(results[1], results[0], rtol=1e-9, atol=1e-12)


def image_filters(lib):
    F = lib.nn.functional
    x = lib.tensor(IMAGE).mean(1, keepdim=True)
    sobel = lib.tensor([[-1.0, 0.0, 1.0], [-2.0, 0.0, 2.0], [-1.0, 0.0, 1.0]], dtype=lib.float64)
    gxy = F.conv2d(F.pad(x, (1, 1, 1, 1), mode="replicate"), lib.stack([sobel, sobel.T])[:, None])
    t = lib.arange(-2, 3, dtype=lib.float64)
    g1 = lib.exp(-(t**2) / 2)
    g1 = g1 / g1.sum()
    g2 = lib.outer(g1, g1)[None, None]
    unfolded = F.unfold(x, 3, padding=1)
    return (gxy, gxy.pow(2).sum(1).sqrt(), lib.atan2(gxy[:, 1], gxy[:, 0]),
            F.conv2d(F.pad(x, (2, 2, 2, 2), mode="reflect"), g2),
            F.conv2d(F.conv2d(x, g1.view(1, 1, 1, 5), padding=(0, 2)), g1.view(1, 1, 5, 1),
                     padding=(2, 0)),
            F.conv2d(lib.tensor(IMAGE), g2.expand(3, 1, 5, 5), groups=3, padding="same"),
            F.pad(x, (1, 1, 1, 1), mode="circular"), unfolded.median(1).values.view(2, 9, 11),
            F.fold(unfolded, (9, 11), 3, padding=1), -F.max_pool2d(-x, 3, stride=1, padding=1),
            F.interpolate(x, size=(5, 17), mode="bicubic", align_corners=True),
            F.interpolate(x, scale_factor=0.5, mode="bilinear", antialias=True),
            F.interpolate(x, scale_factor=1.7, mode="area"))  # fmt: skip


@WRAPS
def test_image_filters(torch, wrap):
    k = compiled_for(kn, wrap)(image_filters)(kn)
    assert_same(k, image_filters(torch), rtol=1e-9, atol=1e-12)


# -- histograms, searching, unique ---------------------------------------------------------------


def histograms(lib):
    x = lib.tensor(POINTS[:, 0])
    edges = lib.linspace(-2, 2, 9)
    v = lib.tensor([3, 1, 2, 3, 3, 1, 7, 2, 2])
    m = lib.tensor([[1, 2], [1, 2], [0, 5], [1, 2]])
    hist = lib.histogram(x, bins=5, range=(-1.0, 1.0), density=True)
    dd = lib.histogramdd(lib.tensor(POINTS), bins=[3, 4])
    weighted = lib.histogram(x, bins=lib.tensor([-3.0, -1.0, 0.0, 0.5, 3.0]), weight=x.abs())
    return (lib.histc(x, bins=10, min=-2, max=2), lib.histc(x, bins=7), hist.hist,
            hist.bin_edges, weighted.hist, dd.hist, dd.bin_edges, lib.bucketize(x, edges),
            lib.bucketize(x, edges, right=True, out_int32=True), lib.searchsorted(edges, x),
            lib.searchsorted(edges, x, side="right"),
            lib.searchsorted(x, x[:5], sorter=lib.argsort(x)),
            lib.unique(v, return_inverse=True, return_counts=True),
            lib.unique_consecutive(v, return_inverse=True, return_counts=True),
            lib.unique(m, dim=0, return_inverse=True, return_counts=True),
            lib.unique_consecutive(m, dim=0, return_counts=True),
            lib.sort(v, stable=True), lib.argsort(v, stable=True, descending=True))  # fmt: skip


def test_histograms_and_searching(torch):
    assert_same(histograms(kn), histograms(torch), rtol=1e-6)


# -- numerical integration --------------------------------------------------------------------


def integrals(lib):
    x = lib.linspace(0, np.pi, 11, dtype=lib.float64)
    y = lib.sin(x)
    Y = lib.stack([y, y**2])
    return (lib.trapezoid(y, x), lib.trapezoid(y, dx=0.3), lib.trapezoid(Y, x, dim=1),
            lib.trapz(y, x), lib.cumulative_trapezoid(y, x), lib.cumulative_trapezoid(Y, dx=0.1),
            lib.diff(y, n=2, prepend=y[:1]), lib.gradient(y, spacing=0.5)[0],
            lib.gradient(Y, dim=1, edge_order=2)[0], lib.gradient(y, spacing=(x,))[0],
            lib.trapezoid(lib.tensor([1, 2, 3])), lib.logcumsumexp(y, 0))  # fmt: skip


@WRAPS
def test_integration(torch, wrap):
    assert_same(compiled_for(kn, wrap)(integrals)(kn), integrals(torch), rtol=1e-12)


# -- tensor-network contractions --------------------------------------------------------------


def contractions(lib):
    rng = np.random.default_rng(1)
    A = lib.tensor(rng.standard_normal((2, 3, 4)), requires_grad=True)
    B = lib.tensor(rng.standard_normal((4, 2, 5)), requires_grad=True)
    C = lib.tensor(rng.standard_normal((5, 3, 2)), requires_grad=True)
    ring = lib.einsum("abc,cde,efa->bdf", A, B, C)
    trace = lib.einsum("iij->j", lib.einsum("abc,abd->cdb", A, A)[:3, :3])
    outs = (
        ring,
        trace,
        lib.tensordot(A, B, dims=1),
        lib.tensordot(A, C, dims=([1, 0], [1, 2])),
        lib.einsum("...ij,...jk", A, B[:, :, :2].permute(1, 0, 2)),
        lib.einsum("i,j,k->ijk", A[0, 0], A[0, 1], A[1, 0, :2]),
        lib.einsum("ijk->", A),
    )
    grads = lib.autograd.grad(ring.pow(2).sum() + trace.sum(), (A, B, C))
    return outs, grads


def test_tensor_network_contractions(torch):
    assert_same(contractions(kn), contractions(torch), rtol=1e-10)


# -- a variational quantum circuit: gradients through complex matrix exponentials ---------------


def variational_energy(lib):
    theta = lib.tensor([0.3, -0.7], dtype=lib.float64, requires_grad=True)
    X = lib.tensor([[0, 1], [1, 0]], dtype=lib.complex128)
    Z = lib.tensor([[1, 0], [0, -1]], dtype=lib.complex128)
    U = lib.linalg.matrix_exp(-1j * theta[0] * X) @ lib.linalg.matrix_exp(-1j * theta[1] * Z)
    psi = U @ lib.tensor([1, 0], dtype=lib.complex128)
    energy = lib.vdot(psi, Z @ psi).real + (psi.abs() ** 2)[0] + psi.angle().sum()
    c = lib.tensor([1 + 2j, 3 - 1j], requires_grad=True)
    loss = ((c * c.conj()).real.sum() + c.abs().sum() + lib.view_as_real(c).sum()
            + (c @ c).abs())  # fmt: skip
    return energy, lib.autograd.grad(energy, theta), lib.autograd.grad(loss, c)


def test_variational_quantum_gradients(torch):
    k, t = variational_energy(kn), variational_energy(torch)
    assert_same(k[:2], t[:2], rtol=1e-10)
    assert_same(k[2], t[2], rtol=1e-6)  # complex64


# -- an RK4 solve of a linear ODE, differentiated through (discretize-then-optimize) -------------


def rk4_solve(lib, wrap=identity):
    A = lib.tensor([[0.0, 1.0], [-1.0, -0.1]], requires_grad=True)
    y0 = lib.tensor([1.0, 0.0], dtype=lib.float64, requires_grad=True)

    def f(t, y):
        return y @ A.T.double() + 0.1 * lib.sin(t) * y

    @wrap
    def solve(y0):
        y, t, h, ys = y0, lib.tensor(0.0, dtype=lib.float64), 0.1, [y0]
        for _ in range(20):
            k1 = f(t, y)
            k2 = f(t + h / 2, y + h / 2 * k1)
            k3 = f(t + h / 2, y + h / 2 * k2)
            k4 = f(t + h, y + h * k3)
            y, t = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4), t + h
            ys.append(y)
        return lib.stack(ys)

    ys = solve(y0)
    return ys, lib.autograd.grad((ys[-1] ** 2).sum(), (A, y0))


@WRAPS
def test_rk4_adjoint_by_autograd(torch, wrap):
    # A is float32: its gradient sums float32 products, 1e-6
    assert_same(rk4_solve(kn, compiled_for(kn, wrap)), rk4_solve(torch), rtol=1e-6)


# -- a neural ODE by the adjoint method: an autograd.Function whose backward integrates ----------


def neural_ode_adjoint(lib):
    class Dynamics(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.A = lib.nn.Parameter(lib.tensor([[0.0, 1.0], [-1.0, -0.1]], dtype=lib.float64))

        def forward(self, t, y):
            return lib.tanh(y @ self.A.T) + 0.1 * lib.sin(t) * y

    def rk4(f, y, t0, t1, n=10):
        h, t = (t1 - t0) / n, t0
        for _ in range(n):
            k1 = f(t, y)
            k2 = f(t + h / 2, y + h / 2 * k1)
            k3 = f(t + h / 2, y + h / 2 * k2)
            k4 = f(t + h, y + h * k3)
            y, t = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4), t + h
        return y

    func = Dynamics()

    class Adjoint(lib.autograd.Function):
        @staticmethod
        def forward(ctx, y0, t0, t1, *params):
            with lib.no_grad():
                y1 = rk4(func, y0, t0, t1)
            ctx.save_for_backward(y1, t0, t1)
            return y1

        @staticmethod
        def backward(ctx, gy):
            y1, t0, t1 = ctx.saved_tensors
            params = tuple(func.parameters())

            def augmented(t, s):  # the state, its adjoint a, and the parameters' adjoint
                with lib.enable_grad():
                    y = s[:2].detach().requires_grad_(True)
                    fy = func(t, y)
                    vjp = lib.autograd.grad(fy, (y, *params), -s[2:4], allow_unused=True)
                return lib.cat([fy.detach(), vjp[0], *(v.reshape(-1) for v in vjp[1:])])

            s = lib.cat([y1, gy, lib.zeros(4, dtype=lib.float64)])
            s = rk4(lambda t, z: -augmented(-t, z), s, -t1, -t0)
            return s[2:4], None, None, s[4:].reshape(2, 2)

    y0 = lib.tensor([1.0, 0.5], dtype=lib.float64, requires_grad=True)
    t0, t1 = lib.tensor(0.0, dtype=lib.float64), lib.tensor(1.0, dtype=lib.float64)
    y1 = Adjoint.apply(y0, t0, t1, *func.parameters())
    (y1**2).sum().backward()
    direct = rk4(func, y0, t0, t1)  # discretize-then-optimize, for comparison
    return y1, y0.grad, func.A.grad, lib.autograd.grad((direct**2).sum(), (y0, func.A))


def test_neural_ode_adjoint(torch):
    assert_same(neural_ode_adjoint(kn), neural_ode_adjoint(torch), rtol=1e-10)


# -- PINN derivatives by kn.func and batched gradients ------------------------------------------


def pinn_derivatives(lib):
    fn = lib.func
    W1 = lib.tensor(np.random.default_rng(0).standard_normal((2, 8)))
    W2 = lib.tensor(np.random.default_rng(1).standard_normal((8,)))

    def u(xt):
        return lib.tanh(xt @ W1) @ W2

    xt = lib.tensor(np.random.default_rng(2).random((6, 2)))
    x = lib.tensor(np.linspace(-1, 1, 5), requires_grad=True)
    y = lib.stack([x.sin() * x, x**3, x.exp()], 0)
    rows = lib.eye(3, dtype=lib.float64)[:, :, None].expand(3, 3, 5)
    jac = lib.autograd.grad(y, x, grad_outputs=rows, is_grads_batched=True)[0]
    return (fn.vmap(fn.grad(u))(xt), fn.vmap(fn.hessian(u))(xt),
            fn.vmap(fn.jacfwd(fn.grad(u)))(xt),
            fn.vmap(lambda p: lib.trace(fn.hessian(u)(p)))(xt), jac)  # fmt: skip


@WRAPS
def test_pinn_derivatives_by_func(torch, wrap):
    k = compiled_for(kn, wrap)(pinn_derivatives)(kn)
    assert_same(k, pinn_derivatives(torch), rtol=1e-10)
