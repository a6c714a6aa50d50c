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


# elu, selu and celu: the exp of the negative branch overflowed for large positive inputs
# (celu(100, alpha=0.5) in float32), and 0 * inf made the gradient NaN where it is 1; NaN
# inputs take the positive branch. Values and gradients from torch 2.13.
ELU_X = np.array([100.0, 50.0, 0.0, -0.0, -3.0, np.nan], np.float32)
ELU_CASES = {
    "elu": (lambda F, x: F.elu(x), [100.0, 50.0, 0.0, -0.0, -0.9502129554748535, np.nan],
            [1.0, 1.0, 1.0, 1.0, 0.049787066876888275, 1.0]),
    "selu": (lambda F, x: F.selu(x),
             [105.07009887695312, 52.53504943847656, 0.0, -0.0, -1.6705687046051025, np.nan],
             [1.0507010221481323, 1.0507010221481323, 1.7580993175506592, 1.7580993175506592,
              0.08753060549497604, 1.0507010221481323]),
    "celu": (lambda F, x: F.celu(x, 0.5), [100.0, 50.0, 0.0, -0.0, -0.4987606108188629, np.nan],
             [1.0, 1.0, 1.0, 1.0, 0.0024787522852420807, 1.0]),
    "elu2": (lambda F, x: F.elu(x, 2.0), [100.0, 50.0, 0.0, -0.0, -1.900425910949707, np.nan],
             [1.0, 1.0, 2.0, 2.0, 0.09957413375377655, 1.0]),
}  # fmt: skip


def _values_and_grads(m, fn, x, wrap=lambda f: f):
    x = m.tensor(x, requires_grad=True)
    y = wrap(lambda x: fn(m.nn.functional, x))(x)
    y.sum().backward()
    return y.detach().numpy(), x.grad.numpy()


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("name", sorted(ELU_CASES))
def test_elu_family_gradients_stay_finite_for_large_inputs(name, compiled):
    fn, want_y, want_g = ELU_CASES[name]
    y, g = _values_and_grads(kn, fn, ELU_X, kn.compile if compiled else (lambda f: f))
    np.testing.assert_allclose(y, want_y, rtol=1e-6)
    np.testing.assert_array_equal(np.signbit(y[2:4]), [False, True])
    # NOTE: the negative branch's gradient is expm1's, ct * (y + 1), as PyTorch's expm1 (its
    # elu kernel takes exp(x)): they differ by an ulp of 1 at most
    np.testing.assert_allclose(g, want_g, rtol=1e-6, atol=1e-7)


def test_the_elu_values_are_torchs():
    torch = pytest.importorskip("torch")
    for name, (fn, want_y, want_g) in ELU_CASES.items():
        y, g = _values_and_grads(torch, fn, ELU_X)
        np.testing.assert_allclose(y, want_y, rtol=1e-6, err_msg=name)
        np.testing.assert_allclose(g, want_g, rtol=1e-6, err_msg=name)


# p-norms at a zero vector: PyTorch's gradient is 0 there (and, for 0 < p < 1, 0 at the zero
# elements of a nonzero vector); kiln's was NaN (the root's derivative at 0 times 0). Weights
# 1, 2 on the two rows; values from torch 2.13.
NORM_X = np.array([[0.0, 0.0, 0.0], [0.0, 3.0, -4.0]], np.float32)
NORM_CASES = {
    "vector_norm": (lambda m, x: m.linalg.vector_norm(x, dim=1), [0.0, 1.2, -1.6]),
    "vector_norm3": (lambda m, x: m.linalg.vector_norm(x, 3, dim=1), [0.0, 0.8897, -1.58169]),
    "vector_norm05": (lambda m, x: m.linalg.vector_norm(x, 0.5, dim=1), [0.0, 4.3094, -3.73205]),
    "norm_p3": (lambda m, x: x.norm(p=3, dim=1), [0.0, 0.8897, -1.58169]),
    "norm": (lambda m, x: m.norm(x, dim=1), [0.0, 1.2, -1.6]),
    "dist": (lambda m, x: m.stack([m.dist(x[0], x[0] * 2), m.dist(x[1], x[1] * 0)]),
             [0.0, 1.2, -1.6]),
    "matrix_norm": (lambda m, x: m.linalg.matrix_norm(x.reshape(2, 3, 1)), [0.0, 1.2, -1.6]),
}  # fmt: skip


def _norm_grad(m, fn, wrap=lambda f: f):
    x = m.tensor(NORM_X, requires_grad=True)
    y = wrap(lambda x: fn(m, x))(x)
    (y * m.tensor([1.0, 2.0])).sum().backward()
    return y.detach().numpy(), x.grad.numpy()


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("name", sorted(NORM_CASES))
def test_norm_gradient_at_a_zero_vector_is_zero(name, compiled):
    fn, want_row = NORM_CASES[name]
    y, g = _norm_grad(kn, fn, kn.compile if compiled else (lambda f: f))
    assert y[0] == 0.0
    np.testing.assert_allclose(g, [[0.0, 0.0, 0.0], want_row], rtol=1e-4, atol=0)


def test_norm_of_nan_is_nan():
    """A NaN element gives a NaN norm (kiln's norm() gave 0 for p=2)."""
    x = kn.tensor([[np.nan, 1.0], [0.0, 0.0]])
    for p in (2, 3, 0.5):
        np.testing.assert_array_equal(kn.norm(x, p=p, dim=1).numpy(), [np.nan, 0.0])
        np.testing.assert_array_equal(kn.linalg.vector_norm(x, p, dim=1).numpy(), [np.nan, 0.0])


def test_the_norm_gradients_are_torchs():
    torch = pytest.importorskip("torch")
    for name, (fn, want_row) in NORM_CASES.items():
        _, g = _norm_grad(torch, fn)
        np.testing.assert_allclose(g, [[0.0, 0.0, 0.0], want_row], rtol=1e-4, atol=0, err_msg=name)
    x = torch.tensor([[np.nan, 1.0], [0.0, 0.0]])
    np.testing.assert_array_equal(torch.norm(x, p=2, dim=1).numpy(), [np.nan, 0.0])


# fmax/fmin: a tie goes to the first argument, wholly (value, sign of zero and gradient), as
# PyTorch's; kiln split the gradient 0.5/0.5 and took the second's zero. From torch 2.13.
FM_A = np.array([1.0, 2.0, np.nan, 3.0, np.nan, -0.0, 0.0], np.float32)
FM_B = np.array([1.0, 3.0, 1.0, np.nan, np.nan, 0.0, -0.0], np.float32)
FM_CASES = {
    "fmax": ([1.0, 3.0, 1.0, 3.0, np.nan, -0.0, 0.0], [1, 0, 0, 1, 1, 1, 1], [0, 1, 1, 0, 0, 0, 0]),
    "fmin": ([1.0, 2.0, 1.0, 3.0, np.nan, -0.0, 0.0], [1, 1, 0, 1, 1, 1, 1], [0, 0, 1, 0, 0, 0, 0]),
}  # fmt: skip


def _fm(m, name, wrap=lambda f: f):
    a = m.tensor(FM_A, requires_grad=True)
    b = m.tensor(FM_B, requires_grad=True)
    y = wrap(getattr(m, name))(a, b)
    y.sum().backward()
    return y.detach().numpy(), a.grad.numpy(), b.grad.numpy()


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("name", sorted(FM_CASES))
def test_fmax_fmin_ties_go_to_the_first_argument(name, compiled):
    y, ga, gb = _fm(kn, name, kn.compile if compiled else (lambda f: f))
    want_y, want_ga, want_gb = FM_CASES[name]
    np.testing.assert_array_equal(y, want_y)
    np.testing.assert_array_equal(np.signbit(y), np.signbit(want_y))
    np.testing.assert_array_equal(ga, want_ga)
    np.testing.assert_array_equal(gb, want_gb)


def test_the_fmax_fmin_values_are_torchs():
    torch = pytest.importorskip("torch")
    for name, (want_y, want_ga, want_gb) in FM_CASES.items():
        y, ga, gb = _fm(torch, name)
        np.testing.assert_array_equal(np.signbit(y), np.signbit(want_y))
        np.testing.assert_array_equal(y, want_y)
        np.testing.assert_array_equal(ga, want_ga)
        np.testing.assert_array_equal(gb, want_gb)


# cross_entropy / nll_loss with every target ignored (a batch of padding): the mean is NaN, as
# PyTorch's, but the gradient is 0 (torch 2.13): kiln's was NaN, which an optimizer step then
# wrote into every parameter.
CE_LOGITS = np.array([[0.5, -1.0, 2.0], [1.0, 0.0, -0.5]], np.float32)
CE_CASES = {
    "cross_entropy": lambda m, x: m.nn.functional.cross_entropy(
        x, m.tensor([1, 1]), ignore_index=1),
    "smoothed": lambda m, x: m.nn.functional.cross_entropy(
        x, m.tensor([-100, -100]), label_smoothing=0.1),
    "weighted": lambda m, x: m.nn.functional.cross_entropy(
        x, m.tensor([2, 2]), weight=m.tensor([1.0, 2.0, 3.0]), ignore_index=2),
    "nll_loss": lambda m, x: m.nn.functional.nll_loss(x.log_softmax(1), m.tensor([0, 0]),
                                                      ignore_index=0),
}  # fmt: skip


def _ce(m, fn, wrap=lambda f: f):
    x = m.tensor(CE_LOGITS, requires_grad=True)
    loss = wrap(lambda x: fn(m, x))(x)
    loss.backward()
    return float(loss), x.grad.numpy()


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("name", sorted(CE_CASES))
def test_class_loss_of_only_ignored_targets_has_zero_gradient(name, compiled):
    loss, grad = _ce(kn, CE_CASES[name], kn.compile if compiled else (lambda f: f))
    assert np.isnan(loss)
    np.testing.assert_array_equal(grad, np.zeros_like(CE_LOGITS))


def test_class_loss_of_some_ignored_targets_is_unchanged():
    """One target kept: the mean over it alone (log-softmax by hand)."""
    x = kn.tensor(CE_LOGITS, requires_grad=True)
    loss = kn.nn.functional.cross_entropy(x, kn.tensor([1, 0]), ignore_index=0)
    loss.backward()
    row = CE_LOGITS[0].astype(np.float64)
    p = np.exp(row - row.max()) / np.exp(row - row.max()).sum()
    np.testing.assert_allclose(float(loss), -np.log(p[1]), rtol=1e-6)
    np.testing.assert_allclose(x.grad.numpy()[0], p - [0, 1, 0], rtol=1e-5, atol=1e-7)


def test_the_ignored_target_gradients_are_torchs():
    torch = pytest.importorskip("torch")
    for name, fn in CE_CASES.items():
        loss, grad = _ce(torch, fn)
        assert np.isnan(loss), name
        np.testing.assert_array_equal(grad, np.zeros_like(CE_LOGITS), err_msg=name)
