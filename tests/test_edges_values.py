"""Values and gradients at NaN, inf, 0 and 1 that differed from PyTorch's without an error:
normalize, cosine_similarity, cdist, kl_div, binary_cross_entropy, max along a dim. Expected
values are torch 2.13's, written out (the torch tests rerun them)."""

import numpy as np
import pytest

import kiln as kn

NAN, INF = np.nan, np.inf
# weights 1 on the output
GRAD_CASES = {
    "normalize-nan": (lambda m, x: m.nn.functional.normalize(x, dim=0).sum(),
                      [NAN, 1.0, 2.0], [NAN, NAN, NAN]),
    "cosine-zero-nan": (lambda m, x: m.nn.functional.cosine_similarity(
        x.reshape(1, -1) * 0, x.reshape(1, -1)).sum(), [NAN, 1.0, 2.0], [NAN, NAN, NAN]),
    "cdist-nan": (lambda m, x: m.cdist(x.reshape(-1, 1), x.reshape(-1, 1)).sum(),
                  [NAN, 1.0, INF], [NAN, NAN, NAN]),
}  # fmt: skip


def _grad(m, name, wrap=lambda f: f):
    fn, x, _ = GRAD_CASES[name]
    t = m.tensor(np.array(x, np.float32), requires_grad=True)
    wrap(lambda t: fn(m, t))(t).backward()
    return t.grad.numpy()


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_gradients_are_torchs(name, compiled):
    got = _grad(kn, name, kn.compile if compiled else (lambda f: f))
    np.testing.assert_allclose(got, GRAD_CASES[name][2], rtol=1e-6, atol=0)


def test_values_with_nan_are_nan():
    x = kn.tensor(np.array([[NAN, 1.0, 2.0]], np.float32))
    assert np.isnan(kn.nn.functional.normalize(x).numpy()).all()  # was 1e12, 2e12
    d = kn.cdist(x.reshape(-1, 1), x.reshape(-1, 1)).numpy()
    assert np.isnan(d[0]).all() and np.isnan(d[:, 0]).all() and d[1, 2] == 1.0


def test_the_expected_values_are_torchs():
    torch = pytest.importorskip("torch")
    for name, (_, _, want) in GRAD_CASES.items():
        np.testing.assert_allclose(_grad(torch, name), want, rtol=1e-6, atol=0, err_msg=name)


def _kl_div(m, wrap=lambda f: f):
    t = m.tensor([0.0, 0.5, -2.0, NAN, 2.0, INF], requires_grad=True)
    x = m.tensor([-1.0, -1.0, -2.0, 1.0, -INF, 7.0], requires_grad=True)
    loss = wrap(lambda x, t: m.nn.functional.kl_div(x, t, reduction="none"))(x, t)
    loss.sum().backward()
    return loss.detach().numpy(), x.grad.numpy(), t.grad.numpy()


KL_WANT = (
    [0.0, 0.1534264, NAN, NAN, INF, NAN],
    [-0.0, -0.5, 2.0, NAN, -2.0, -INF],
    [NAN, 1.3068528, NAN, NAN, INF, NAN],
)


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_kl_div_is_pytorchs_formula(compiled):
    """xlogy(t, t) - t * input: a negative target gives NaN, input's gradient is -t."""
    for got, want in zip(_kl_div(kn, kn.compile if compiled else (lambda f: f)), KL_WANT):
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_the_kl_div_values_are_torchs():
    torch = pytest.importorskip("torch")
    for got, want in zip(_kl_div(torch), KL_WANT):
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_max_along_the_only_dim_is_0d_in_graphs():
    """max(x, 0) of a vector is 0-d (kiln's kernel gave a 1-element vector in graphs: a wrong
    shape, then a failed kernel downstream under kn.compile)."""
    with kn.Graph().as_default():
        a = kn.placeholder(kn.float32, (3,), name="a")
        f = kn.function([a], [kn.max(a, 0)[0], kn.min(a, 0)[1] * 2])
    values, twice = f(np.array([1.0, 3.0, 2.0], np.float32))
    assert values.shape == () and values == 3.0 and twice.shape == () and twice == 0
    x = kn.tensor([1.0, 3.0, 2.0], requires_grad=True)
    y = kn.compile(lambda x: (kn.max(x, 0)[0] * 2).sum())(x)
    y.backward()
    assert y.shape == () and y.item() == 6.0 and x.grad.tolist() == [0.0, 2.0, 0.0]


def _bce(m, wrap=lambda f: f):
    p = m.tensor([0.0, 1.0, 1.0, 0.3, 0.999], requires_grad=True)
    t, w = m.tensor([1.0, 0.0, 1.0, 0.6, 0.2]), m.tensor([1.0, 2.0, 3.0, 4.0, 5.0])
    loss = wrap(lambda p: m.nn.functional.binary_cross_entropy(p, t, weight=w))(p)
    loss.backward()
    q = m.tensor([0.2, 0.7], requires_grad=True)
    total = m.nn.functional.binary_cross_entropy(q, m.tensor([1.0, 0.0]), reduction="sum")
    (g,) = m.autograd.grad(total, q, create_graph=True)
    g.sum().backward()
    return loss.item(), p.grad.tolist(), q.grad.tolist()


# torch 2.13: p's gradient (p - t) w / max(p (1 - p), 1e-12) / 5; second derivatives
# t/p² + (1-t)/(1-p)²
BCE_WANT = (66.21846, [-2e11, 4e11, 0.0, -1.1428572, 799.81012], [25.0, 11.111111])


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_binary_cross_entropy_gradient_at_0_and_1_is_finite(compiled):
    loss, grad, second = _bce(kn, kn.compile if compiled else (lambda f: f))
    np.testing.assert_allclose(loss, BCE_WANT[0], rtol=1e-6)
    np.testing.assert_allclose(grad, BCE_WANT[1], rtol=1e-6)
    np.testing.assert_allclose(second, BCE_WANT[2], rtol=1e-6)


def test_the_bce_values_are_torchs():
    torch = pytest.importorskip("torch")
    loss, grad, second = _bce(torch)
    np.testing.assert_allclose(loss, BCE_WANT[0], rtol=1e-6)
    np.testing.assert_allclose(grad, BCE_WANT[1], rtol=1e-6)
    np.testing.assert_allclose(second, BCE_WANT[2], rtol=1e-6)


def _bce_target_grads(m, wrap=lambda f: f):
    p = m.tensor([0.0, 1.0, 0.3, 0.5])
    t = m.tensor([0.2, 0.7, 0.5, 1.0], requires_grad=True)
    w = m.tensor([1.0, 2.0, 0.0, 3.0])
    f = wrap(lambda t: m.nn.functional.binary_cross_entropy(p, t, weight=w, reduction="sum"))
    f(t).backward()
    return t.grad.tolist()


# torch 2.13: the target's gradient is -logit(p) w, unclamped: +inf at p = 0, -inf at p = 1
# (the loss's logs are clamped at -100, the gradient is not); 0 w where w is 0
BCE_TARGET_WANT = [np.inf, -np.inf, 0.0, 0.0]


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_binary_cross_entropy_target_gradient_is_torchs(compiled):
    grads = _bce_target_grads(kn, kn.compile if compiled else (lambda f: f))
    np.testing.assert_allclose(grads, BCE_TARGET_WANT, rtol=1e-6)


def test_the_bce_target_gradients_are_torchs():
    torch = pytest.importorskip("torch")
    np.testing.assert_allclose(_bce_target_grads(torch), BCE_TARGET_WANT, rtol=1e-6)
