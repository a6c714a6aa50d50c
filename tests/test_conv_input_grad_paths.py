"""conv2d's input gradient at stride 1 is computed as one product per kernel offset over
shifted windows of the padded cotangent (`_full_correlation` in kiln/ops/nn_grad.py), where
other strides and dilations use im2col and a scatter back (col2im). The two paths compute
the same sums in another order: they must agree to float rounding, for every padding and
kernel shape the fast path takes, and both must be PyTorch's (torch 2.13, where installed)."""

import numpy as np
import pytest

import kiln as kn
from kiln.ops import nn_grad

CASES = [
    # (N, C, H, W, O, KH, KW, PH, PW)
    (2, 3, 7, 6, 8, 3, 3, 1, 1),
    (3, 4, 5, 9, 16, 3, 3, 0, 0),
    (1, 2, 6, 6, 8, 5, 5, 2, 2),
    (2, 5, 8, 7, 9, 3, 2, 2, 1),
    (2, 3, 4, 4, 8, 1, 3, 0, 2),
    (1, 1, 9, 3, 12, 4, 1, 3, 0),
]


def _grads(case, dtype, fast, monkeypatch):
    n, c, h, w, o, kh, kw, ph, pw = case
    rng = np.random.default_rng(sum(case))
    x = rng.standard_normal((n, c, h, w)).astype(dtype)
    weight = rng.standard_normal((o, c, kh, kw)).astype(dtype)
    with monkeypatch.context() as m:
        if not fast:
            m.setattr(nn_grad, "_shifted_products_fit", lambda *a: False)
        xt = kn.tensor(x, requires_grad=True)
        y = kn.nn.functional.conv2d(xt, kn.tensor(weight), padding=(ph, pw))
        gy = rng.standard_normal(tuple(y.shape)).astype(dtype)
        y.backward(kn.tensor(gy))
    return x, weight, gy, xt.grad.numpy()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", CASES, ids=str)
def test_shifted_products_give_the_im2col_gradient(case, dtype, monkeypatch):
    assert nn_grad._shifted_products_fit(
        np, np.zeros(1, dtype), np.zeros(case[4:5] + case[1:2] + case[5:7]), (1, 1), (1, 1),
        case[7:9],
    )  # fmt: skip
    x, weight, gy, fast = _grads(case, dtype, True, monkeypatch)
    _, _, _, slow = _grads(case, dtype, False, monkeypatch)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(fast, slow, rtol=tol, atol=tol * np.abs(slow).max())
    torch = pytest.importorskip("torch")
    xt = torch.tensor(x, requires_grad=True)
    y = torch.nn.functional.conv2d(xt, torch.tensor(weight), padding=case[7:9])
    y.backward(torch.tensor(gy))
    np.testing.assert_allclose(fast, xt.grad.numpy(), rtol=tol, atol=tol * np.abs(slow).max())


def test_other_strides_and_few_channels_keep_im2col():
    w = np.zeros((8, 2, 3, 3), np.float32)
    gy = np.zeros(1, np.float32)
    fit = nn_grad._shifted_products_fit
    assert not fit(np, gy, w, (2, 2), (1, 1), (1, 1))  # stride 2
    assert not fit(np, gy, w, (1, 1), (2, 2), (1, 1))  # dilation 2
    assert not fit(np, gy, w, (1, 1), (1, 1), (3, 1))  # padding past the kernel
    assert not fit(np, gy, np.zeros((4, 2, 3, 3)), (1, 1), (1, 1), (1, 1))  # 4 channels out
    assert not fit(np, gy, np.zeros((8, 2, 1, 1)), (1, 1), (1, 1), (0, 0))  # 1x1
