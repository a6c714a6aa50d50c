"""Max and average pooling's window rules, as PyTorch 2.13's CPU kernels have them: which
element of a window takes max_pool2d's gradient (the first maximum in row-major order, the
last NaN where the window holds NaNs, and for a window of -inf alone its first element inside
the input, never the padding), and avg_pool2d's rounding (the window summed in row-major order
and divided once). The pools run as a loop over the kernel offsets (`window_taps`); before,
the gradient went to the first NaN and, for an all -inf window at the border, into the
padding (lost), and average pools rounded as NumPy's pairwise mean."""

from __future__ import annotations

import numpy as np
import pytest

import kiln as kn

NAN, INF = float("nan"), float("inf")


def _pool_grad(x, **kwargs):
    t = kn.tensor(x, requires_grad=True)
    kn.nn.functional.max_pool2d(t, **kwargs).sum().backward()
    return t.grad.numpy()


def test_nan_windows_route_to_the_last_nan():
    # torch 2.13: max_pool2d of [[nan, 1], [nan, 2]] is nan, its gradient at [1, 0]
    grad = _pool_grad(np.array([[[[NAN, 1.0], [NAN, 2.0]]]], np.float32), kernel_size=2)
    assert grad.tolist() == [[[[0.0, 0.0], [1.0, 0.0]]]]


def test_ties_route_to_the_first_maximum():
    grad = _pool_grad(np.array([[[[3.0, 3.0], [1.0, 3.0]]]], np.float32), kernel_size=2)
    assert grad.tolist() == [[[[1.0, 0.0], [0.0, 0.0]]]]


def test_a_window_of_minus_inf_routes_to_its_first_element_inside_the_input():
    # padding 1, kernel 2, stride 2 on a 2x2 plane of -inf: the windows hold one real element
    # each (the others are padding); torch 2.13 gives every element its window's gradient
    x = np.full((1, 1, 2, 2), -INF, np.float32)
    grad = _pool_grad(x, kernel_size=2, stride=2, padding=1)
    assert grad.tolist() == [[[[1.0, 1.0], [1.0, 1.0]]]]


def test_max_pool_values_and_gradients_in_graph_mode_and_compiled():
    x = np.array([[[[NAN, 1.0, 5.0], [NAN, 2.0, 5.0], [0.0, -INF, 7.0]]]], np.float32)
    want = _pool_grad(x, kernel_size=2, stride=1)

    def f(t):
        return kn.nn.functional.max_pool2d(t, kernel_size=2, stride=1).sum()

    t = kn.tensor(x, requires_grad=True)
    kn.compile(f)(t).backward()
    np.testing.assert_array_equal(t.grad.numpy(), want)
    # by hand (and torch 2.13): the windows' picks are the last NaN (1, 0) twice, the first 5
    # at (0, 2), and 7 at (2, 2)
    assert want.tolist() == [[[[0.0, 0.0, 1.0], [2.0, 0.0, 0.0], [0.0, 0.0, 1.0]]]]


def test_pools_match_torch_exactly():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    for _ in range(60):
        kh, kw, sy, sx = (int(v) for v in rng.integers(1, 4, 4))
        ph, pw = int(rng.integers(0, kh // 2 + 1)), int(rng.integers(0, kw // 2 + 1))
        h, w = int(rng.integers(kh, 9)), int(rng.integers(kw, 9))
        x = rng.integers(-3, 4, (2, 3, h, w)).astype(np.float32)  # ties
        x[rng.random(x.shape) < 0.1] = NAN
        x[rng.random(x.shape) < 0.1] = -INF
        args = ((kh, kw), (sy, sx), (ph, pw))
        tx, kx = torch.tensor(x, requires_grad=True), kn.tensor(x, requires_grad=True)
        ty = torch.nn.functional.max_pool2d(tx, *args)
        ky = kn.nn.functional.max_pool2d(kx, *args)
        g = rng.standard_normal(tuple(ty.shape)).astype(np.float32)
        ty.backward(torch.tensor(g))
        ky.backward(kn.tensor(g))
        np.testing.assert_array_equal(ky.detach().numpy(), ty.detach().numpy())
        # overlapping windows add in another order than torch's: equal to rounding
        np.testing.assert_allclose(kx.grad.numpy(), tx.grad.numpy(), rtol=1e-6, atol=1e-6)
        y = rng.standard_normal((2, 3, h, w)).astype(np.float32)
        np.testing.assert_array_equal(
            kn.nn.functional.avg_pool2d(kn.tensor(y), *args).numpy(),
            torch.nn.functional.avg_pool2d(torch.tensor(y), *args).numpy(),
        )
