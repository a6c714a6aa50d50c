"""`interpolate(..., antialias=True)` (kiln raised NotImplementedError) against PyTorch's:
bilinear and bicubic, down- and upsampling, sizes and scale factors, align_corners, values
and gradients. Expected values are torch's on the same input."""

import numpy as np
import pytest

import kiln as kn

torch = pytest.importorskip("torch")

X = np.random.default_rng(0).standard_normal((2, 3, 17, 13)).astype(np.float32)


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize(
    "kw",
    [
        {"scale_factor": 0.5},
        {"size": (5, 4)},
        {"size": (9, 13)},
        {"scale_factor": 0.3},
        {"size": (30, 7)},
        {"size": (6, 6), "align_corners": True},
        {"scale_factor": (0.37, 1.6)},
        {"scale_factor": 0.45, "recompute_scale_factor": True},
        {"size": (1, 1)},
    ],
)
def test_antialias_like_torch(mode, kw):
    out, weights = [], None
    for lib in (torch, kn):
        x = lib.tensor(X, requires_grad=True)
        y = lib.nn.functional.interpolate(x, mode=mode, antialias=True, **kw)
        if weights is None:
            weights = np.random.default_rng(1).standard_normal(tuple(y.shape)).astype(np.float32)
        (y * lib.tensor(weights)).sum().backward()
        out.append((y.detach().numpy(), x.grad.numpy()))
    np.testing.assert_allclose(out[1][0], out[0][0], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out[1][1], out[0][1], rtol=1e-5, atol=1e-5)


def test_antialias_compiled_and_errors():
    def run(x):
        return kn.nn.functional.interpolate(x, scale_factor=0.4, mode="bicubic", antialias=True)

    kn.testing.check_eager_vs_compiled(run, kn.tensor(X))
    for lib in (torch, kn):
        with pytest.raises(ValueError, match="Anti-alias option is restricted"):
            lib.nn.functional.interpolate(lib.ones(1, 1, 4), scale_factor=0.5, mode="linear",
                                          antialias=True)  # fmt: skip


@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_bicubic_like_torch(padding_mode, align_corners):
    # kiln raised NotImplementedError for mode="bicubic"; points reach past the borders
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, 6, 5)).astype(np.float32)
    grid = rng.uniform(-1.3, 1.3, (2, 4, 7, 2)).astype(np.float32)
    out, weights = [], None
    for lib in (torch, kn):
        xi, gi = lib.tensor(x, requires_grad=True), lib.tensor(grid, requires_grad=True)
        y = lib.nn.functional.grid_sample(xi, gi, mode="bicubic", padding_mode=padding_mode,
                                          align_corners=align_corners)  # fmt: skip
        if weights is None:
            weights = rng.standard_normal(tuple(y.shape)).astype(np.float32)
        (y * lib.tensor(weights)).sum().backward()
        out.append([y.detach().numpy(), xi.grad.numpy(), gi.grad.numpy()])
    for want, got in zip(*out):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_and_affine_grid_5d_like_torch(mode, padding_mode, align_corners):
    # kiln built only 4-D; and a nearest sample's grid got no gradient (torch: zeros)
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 3, 4, 5, 6)).astype(np.float32)
    grid = rng.uniform(-1.3, 1.3, (2, 3, 2, 4, 3)).astype(np.float32)
    theta = rng.standard_normal((2, 3, 4)).astype(np.float32)
    out, weights = [], None
    for lib in (torch, kn):
        F = lib.nn.functional
        xi, gi = lib.tensor(x, requires_grad=True), lib.tensor(grid, requires_grad=True)
        y = F.grid_sample(xi, gi, mode=mode, padding_mode=padding_mode,
                          align_corners=align_corners)  # fmt: skip
        if weights is None:
            weights = rng.standard_normal(tuple(y.shape)).astype(np.float32)
        (y * lib.tensor(weights)).sum().backward()
        g = F.affine_grid(lib.tensor(theta), (2, 3, 4, 5, 6), align_corners=align_corners)
        out.append([y.detach().numpy(), xi.grad.numpy(), gi.grad.numpy(), g.numpy()])
    for want, got in zip(*out):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_grid_sample_nearest_grid_gets_zero_gradient_like_torch():
    x = np.random.default_rng(5).standard_normal((1, 1, 3, 3)).astype(np.float32)
    for lib in (torch, kn):
        g = lib.zeros(1, 2, 2, 2, requires_grad=True)
        lib.nn.functional.grid_sample(lib.tensor(x), g, mode="nearest",
                                      align_corners=False).sum().backward()  # fmt: skip
        assert g.grad is not None and float(g.grad.abs().sum()) == 0.0
