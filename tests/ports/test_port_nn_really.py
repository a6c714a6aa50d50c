"""Port of the manual logistic-regression step of "what is nn really" (torch -> kn).

The expected values come from torch 2.13 run on the same weights and data.
"""

import numpy as np
import pytest

import kiln as kn

torch = pytest.importorskip("torch")


def _run(lib, w0, x, y):
    F = lib.nn.functional
    w = lib.tensor(w0.copy(), requires_grad=True)
    b = lib.zeros(10, requires_grad=True)
    xb, yb = lib.tensor(x), lib.tensor(y)
    losses = []
    for _ in range(3):
        loss = F.cross_entropy(xb @ w + b, yb)
        loss.backward()
        with lib.no_grad():
            w -= w.grad * 0.1
            b -= b.grad * 0.1
            w.grad.zero_()
            b.grad.zero_()
        losses.append(loss.item())
    pooled = F.avg_pool2d(F.relu(xb.view(-1, 1, 28, 28)), 4)
    return losses, w.detach().numpy(), pooled.view(pooled.size(0), -1).numpy()


def test_manual_logistic_regression_matches_torch():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 784)).astype(np.float32)
    y = rng.integers(0, 10, 8)
    w0 = (rng.standard_normal((784, 10)) / 28).astype(np.float32)
    tl, tw, tp = _run(torch, w0, x, y)
    kl, kw, kp = _run(kn, w0, x, y)
    # the loss falls to ~5e-4 by step 3, where one float32 ulp of the logits is ~1e-8
    np.testing.assert_allclose(kl, tl, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(kw, tw, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(kp, tp, rtol=1e-5, atol=1e-6)
