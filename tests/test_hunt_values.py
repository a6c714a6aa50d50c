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


# Piecewise activations at NaN, the infinities, their bounds and signed zeros: NaN passes
# through (kiln's threshold, hardshrink and softshrink gave a number), with the gradient of
# the x branch. Values, signs of zero and gradients from torch 2.13 (float32).
NAN, INF = float("nan"), float("inf")
PW_X = np.array([NAN, INF, -INF, -0.2, 0.2, -0.5, 0.5, -0.7, 0.7, -3.0, 3.0, 0.0, -0.0], np.float32)
PW_CASES = {
    "threshold": (lambda F, x: F.threshold(x, 0.5, -1.0),
                  [NAN, INF, -1, -1, -1, -1, -1, -1, 0.7, -1, 3, -1, -1],
                  [1, 1, 0, 0, 0, 0, 0, 0, 1, 0, 1, 0, 0]),
    "hardshrink": (lambda F, x: F.hardshrink(x, 0.5),
                   [NAN, INF, -INF, 0, 0, 0, 0, -0.7, 0.7, -3, 3, 0, 0],
                   [1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1, 0, 0]),
    "softshrink": (lambda F, x: F.softshrink(x, 0.5),
                   [NAN, INF, -INF, -0.0, 0, -0.0, 0, -0.19999998807907104,
                    0.19999998807907104, -2.5, 2.5, 0, -0.0],
                   [1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1, 0, 0]),
    "hardsigmoid": (lambda F, x: F.hardsigmoid(x),
                    [NAN, 1, 0, 0.46666666865348816, 0.5333333611488342, 0.4166666567325592,
                     0.5833333134651184, 0.38333332538604736, 0.6166666746139526, 0, 1, 0.5, 0.5],
                    [0, 0, 0] + [1 / 6] * 6 + [0, 0, 1 / 6, 1 / 6]),
    "hardswish": (lambda F, x: F.hardswish(x),
                  [NAN, INF, NAN, -0.09333333373069763, 0.1066666767001152, -0.2083333283662796,
                   0.2916666567325592, -0.2683333158493042, 0.43166664242744446, -0.0, 3, 0, -0.0],
                  [1, 1, 0, 0.4333333373069763, 0.5666666626930237, 0.3333333134651184,
                   0.6666666865348816, 0.2666666507720947, 0.7333333492279053, 0, 1, 0.5, 0.5]),
}  # fmt: skip


def _pw(m, fn, wrap=lambda f: f):
    x = m.tensor(PW_X, requires_grad=True)
    y = wrap(lambda x: fn(m.nn.functional, x))(x)
    y.sum().backward()
    return y.detach().numpy(), x.grad.numpy()


def _check_pw(name, y, g):
    _, want_y, want_g = PW_CASES[name]
    np.testing.assert_allclose(y, want_y, rtol=1e-6, err_msg=name)
    real = ~np.isnan(want_y)  # the sign of a NaN is not compared
    np.testing.assert_array_equal(np.signbit(y)[real], np.signbit(want_y)[real], err_msg=name)
    np.testing.assert_allclose(g, want_g, rtol=1e-6, err_msg=name)


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("name", sorted(PW_CASES))
def test_piecewise_activations_pass_nan_and_infinities_as_pytorch(name, compiled):
    y, g = _pw(kn, PW_CASES[name][0], kn.compile if compiled else (lambda f: f))
    _check_pw(name, y, g)


def test_the_piecewise_values_are_torchs():
    torch = pytest.importorskip("torch")
    for name, (fn, _, _) in PW_CASES.items():
        _check_pw(name, *_pw(torch, fn))
