"""Gradients that differed from PyTorch's without an error. Expected values are torch 2.13's
(written out; the torch test reruns them where torch is installed)."""

import numpy as np
import pytest

import kiln as kn

# atan2's gradient is ct * (b, -a) / (a² + b²), and 0 where a² + b² is 0: torch 2.13 gives
# 0 at (0, 0) and where the squares underflow to 0, NaN/inf elsewhere as the formula does
A2 = np.array([0.0, 1e-200, 3.0, 0.0, 1e-155], np.float64)
B2 = np.array([0.0, 1e-200, 7.0, np.inf, 0.0], np.float64)
WANT_A = np.array([0.0, 0.0, 7 / 58, np.nan, np.nan])
WANT_B = np.array([0.0, 0.0, -3 / 58, 0.0, -np.inf])


def _atan2_grads(m, wrap=lambda f: f):
    a = m.tensor(A2, requires_grad=True)
    b = m.tensor(B2, requires_grad=True)
    wrap(lambda a, b: m.atan2(a, b).sum())(a, b).backward()
    return a.grad.numpy(), b.grad.numpy()


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_atan2_gradient_at_the_origin_is_zero(compiled):
    ga, gb = _atan2_grads(kn, kn.compile if compiled else (lambda f: f))
    np.testing.assert_allclose(ga, WANT_A, rtol=1e-15)
    np.testing.assert_allclose(gb, WANT_B, rtol=1e-15)


def test_atan2_gradient_in_graph_mode():
    with kn.Graph().as_default():
        a = kn.placeholder(kn.float64, (5,), name="a")
        b = kn.placeholder(kn.float64, (5,), name="b")
        ga, gb = kn.grad(kn.atan2(a, b).sum(), [a, b])
        ga, gb = kn.function([a, b], [ga, gb])(A2, B2)
    np.testing.assert_allclose(ga, WANT_A, rtol=1e-15)
    np.testing.assert_allclose(gb, WANT_B, rtol=1e-15)


def test_the_expected_values_are_torchs():
    torch = pytest.importorskip("torch")
    ga, gb = _atan2_grads(torch)
    np.testing.assert_allclose(ga, WANT_A, rtol=1e-15)
    np.testing.assert_allclose(gb, WANT_B, rtol=1e-15)
