"""Small ported idioms: an FGSM adversarial example (input gradient, sign, clamp), a spatial
transformer's sampling (affine_grid + grid_sample, with gradients to theta), and
autograd.functional.jacobian/hessian; each run with torch 2.13 and with kiln on the same data.
Tolerances: one float32 rounding of a few-term sum (1e-6); float64 for jacobian/hessian."""

import numpy as np
import pytest

import kiln as kn

torch = pytest.importorskip("torch")


def fgsm(fw, img, w, eps=0.1):
    x = fw.tensor(img).requires_grad_(True)
    loss = fw.nn.functional.cross_entropy(x.view(x.shape[0], -1) @ fw.tensor(w), fw.tensor([0, 2]))
    loss.backward()
    return (x + eps * x.grad.sign()).clamp(0, 1).detach().numpy(), x.grad.numpy()


def test_fgsm_matches_torch():
    rng = np.random.default_rng(1)
    img = rng.random((2, 1, 4, 4)).astype(np.float32)
    w = rng.standard_normal((16, 3)).astype(np.float32)
    (ka, kg), (ta, tg) = fgsm(kn, img, w), fgsm(torch, img, w)
    np.testing.assert_allclose(kg, tg, rtol=1e-5, atol=1e-7)
    np.testing.assert_array_equal(ka, ta)


def stn(fw, img, theta):
    th = fw.tensor(theta).requires_grad_(True)
    x = fw.tensor(img)
    grid = fw.nn.functional.affine_grid(th, list(x.shape), align_corners=False)
    out = fw.nn.functional.grid_sample(x, grid, align_corners=False)
    (out * out).sum().backward()
    return out.detach().numpy(), th.grad.numpy()


def test_spatial_transformer_sampling_matches_torch():
    rng = np.random.default_rng(2)
    img = rng.random((2, 3, 5, 6)).astype(np.float32)
    theta = (np.eye(2, 3) + 0.2 * rng.standard_normal((2, 2, 3))).astype(np.float32)
    (ko, kg), (to, tg) = stn(kn, img, theta), stn(torch, img, theta)
    np.testing.assert_allclose(ko, to, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(kg, tg, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", ["jacobian", "hessian"])
def test_autograd_functional_matches_torch(name):
    x = np.random.default_rng(0).standard_normal(3)
    if name == "jacobian":
        f = lambda v: (v**3).sin()  # noqa: E731
    else:
        f = lambda v: (v**3).sin().sum()  # noqa: E731
    t = getattr(torch.autograd.functional, name)(f, torch.tensor(x))
    k = getattr(kn.autograd.functional, name)(f, kn.tensor(x))
    np.testing.assert_allclose(np.asarray(k.numpy()), t.numpy(), rtol=1e-12, atol=1e-12)
