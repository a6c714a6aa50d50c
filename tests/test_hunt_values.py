"""Values that differed from PyTorch's without an error. Expected values are torch 2.13's
(written out; the torch test reruns them where torch is installed)."""

import numpy as np
import pytest

import kiln as kn

# hypot without overflow or underflow (kiln's sqrt(a² + b²) gave inf for 1e20 and 0 for
# 3e-30 in float32); gradients a / hypot, b / hypot. From torch 2.13 (float32).
HY_A = np.array([3.0, 1e20, 3e-30, 0.0, -5.0, np.inf, 1e-45], np.float32)
HY_B = np.array([4.0, 1e20, 4e-30, 2.0, 0.0, np.nan, 0.0], np.float32)
HY_Y = [5.0, 1.414213581995256e20, 5.000000015855384e-30, 2.0, 5.0, np.inf, 1.401298464324817e-45]
HY_GA = [0.6000000238418579, 0.7071067690849304, 0.6000000238418579, 0.0, -1.0, np.nan, 1.0]
HY_GB = [0.800000011920929, 0.7071067690849304, 0.800000011920929, 1.0, 0.0, np.nan, 0.0]


def _hypot(m, wrap=lambda f: f):
    a = m.tensor(HY_A, requires_grad=True)
    b = m.tensor(HY_B, requires_grad=True)
    y = wrap(m.hypot)(a, b)
    y.sum().backward()
    return y.detach().numpy(), a.grad.numpy(), b.grad.numpy()


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_hypot_neither_overflows_nor_underflows(compiled):
    y, ga, gb = _hypot(kn, kn.compile if compiled else (lambda f: f))
    assert y.dtype == np.float32
    np.testing.assert_allclose(y, HY_Y, rtol=1e-7)
    np.testing.assert_allclose(ga, HY_GA, rtol=1e-6)
    np.testing.assert_allclose(gb, HY_GB, rtol=1e-6)


def test_hypot_in_a_fused_graph():
    with kn.Graph().as_default():
        a = kn.placeholder(kn.float32, (7,), name="a")
        b = kn.placeholder(kn.float32, (7,), name="b")
        f = kn.function([a, b], kn.hypot(a * 1.0, b * 1.0) * 1.0)
        np.testing.assert_allclose(f(HY_A, HY_B), HY_Y, rtol=1e-7)


def test_the_hypot_values_are_torchs():
    torch = pytest.importorskip("torch")
    y, ga, gb = _hypot(torch)
    np.testing.assert_allclose(y, HY_Y, rtol=1e-7)
    np.testing.assert_allclose(ga, HY_GA, rtol=1e-6)
    np.testing.assert_allclose(gb, HY_GB, rtol=1e-6)
