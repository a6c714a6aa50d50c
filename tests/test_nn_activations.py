"""Activations, normalize, attention and group_norm of kn.nn.functional without PyTorch:
values from their formulas (computed here with NumPy or by hand), gradients against finite
differences (graph mode, float64), eager against `kn.compile`, and in-place semantics.
tests/test_nn_functional_torch.py compares them with PyTorch."""

import numpy as np
import pytest

import kiln as kn
from kiln.testing import check_eager_vs_compiled, gradcheck

F = kn.nn.functional
X = np.array([-7.0, -3.0, -1.5, -0.2, 0.0, 0.4, 2.0, 3.0, 5.0, 8.0], np.float32)
SCALE, ALPHA = 1.0507009873554805, 1.6732632423543772


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


FORMULAS = [
    ("selu", lambda x: SCALE * np.where(x > 0, x, ALPHA * np.expm1(x))),
    ("celu", lambda x: np.where(x > 0, x, np.expm1(x))),
    ("hardtanh", lambda x: np.clip(x, -1, 1)),
    ("relu6", lambda x: np.clip(x, 0, 6)),
    ("hardsigmoid", lambda x: np.clip(x / 6 + 0.5, 0, 1)),
    ("hardswish", lambda x: x * np.clip(x / 6 + 0.5, 0, 1)),
    ("mish", lambda x: x * np.tanh(np.log1p(np.exp(x)))),
    ("softsign", lambda x: x / (1 + np.abs(x))),
]


@pytest.mark.parametrize("name, formula", FORMULAS, ids=[f[0] for f in FORMULAS])
def test_activation_values_follow_their_formulas(name, formula):
    got = getattr(F, name)(kn.tensor(X)).numpy()
    np.testing.assert_allclose(got, formula(X.astype(np.float64)), rtol=1e-6, atol=1e-6)


def test_piecewise_gradients_at_the_kinks_are_pytorchs():
    # PyTorch's backward formulas: hardtanh/relu6/hardsigmoid 0 at their bounds, hardswish 0
    # at -3 and 1 at 3 (x / 3 + 1/2 strictly between)
    x = kn.tensor([-3.0, -1.0, 0.0, 1.0, 3.0, 6.0], requires_grad=True)
    want = {
        "hardtanh": [0, 0, 1, 0, 0, 0],
        "relu6": [0, 0, 0, 1, 1, 0],
        "hardsigmoid": [0, 1 / 6, 1 / 6, 1 / 6, 0, 0],
        "hardswish": [0, 1 / 6, 0.5, 5 / 6, 1, 1],
    }
    for name, grad in want.items():
        x.grad = None
        getattr(F, name)(x).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), grad, rtol=1e-6, err_msg=name)


def test_softmin_and_glu_by_hand():
    np.testing.assert_allclose(F.softmin(kn.tensor([0.0, np.log(3.0)]), dim=0).numpy(),
                               [0.75, 0.25], rtol=1e-6)  # fmt: skip
    x = kn.tensor([[1.0, 2.0, 0.0, 0.0]])
    np.testing.assert_allclose(F.glu(x).numpy(), [[0.5, 1.0]])
    with pytest.raises(RuntimeError, match="Halving dimension must be even"):
        F.glu(kn.ones(3))
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmin"):
        F.softmin(kn.ones(2, 2))


def test_inplace_overwrites_eager_input_and_returns_it():
    x = kn.tensor([-1.0, 2.0, 9.0])
    assert F.relu6(x, inplace=True) is x and x.tolist() == [0.0, 2.0, 6.0]
    leaf = kn.tensor([-1.0, 0.25], requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        F.selu(leaf, inplace=True)
    h = leaf * 2
    F.hardtanh(h, inplace=True).sum().backward()
    assert leaf.grad.tolist() == [0.0, 2.0]  # -2 is past hardtanh's bound, 0.5 inside
    with kn.Graph().as_default():
        s = kn.placeholder(kn.float32, (2,))
        assert F.relu(s, inplace=True) is not s  # a feed cannot change: the new value
        h = s * 1.0
        assert F.relu(h, inplace=True) is h  # a computed value: h stands for the new one
        f = kn.function([s], h)
    assert f(np.array([-1.0, 3.0], np.float32)).tolist() == [0.0, 3.0]


def test_normalize_attention_and_group_norm_by_hand():
    got = F.normalize(kn.tensor([[3.0, 4.0], [0.0, 0.0]]), p=1.0).numpy()
    np.testing.assert_allclose(got, [[3 / 7, 4 / 7], [0.0, 0.0]], rtol=1e-6)
    # two keys with scores 0 and log(3) / scale: weights 1/4 and 3/4; the mask hides key 1
    q, k = kn.tensor([[1.0]]), kn.tensor([[0.0], [float(np.log(3.0))]])
    v = kn.tensor([[4.0], [8.0]])
    np.testing.assert_allclose(F.scaled_dot_product_attention(q, k, v).numpy(), [[7.0]])
    masked = F.scaled_dot_product_attention(q, k, v, attn_mask=kn.tensor([[True, False]]))
    np.testing.assert_allclose(masked.numpy(), [[4.0]])
    none = F.scaled_dot_product_attention(q, k, v, attn_mask=kn.tensor([[False, False]]))
    assert none.tolist() == [[0.0]]  # a query that sees no key gets zeros, as PyTorch's
    x = kn.tensor([[[1.0, 3.0], [5.0, 7.0]], [[2.0, 2.0], [4.0, 4.0]]])  # N=2, C=2, L=2
    got = F.group_norm(x, 1, eps=0.0).numpy()
    np.testing.assert_allclose(got[0].ravel(), np.array([-3, -1, 1, 3]) / np.sqrt(5), rtol=1e-6)
    np.testing.assert_allclose(got[1].ravel(), [-1, -1, 1, 1], rtol=1e-6)


CASES = [
    ("selu", F.selu, [X + 0.1]),  # off its kink at 0
    ("celu", lambda x: F.celu(x, alpha=0.7), [X]),
    ("mish", F.mish, [X]),
    ("softsign", F.softsign, [X + 0.1]),
    ("softmin", lambda x: F.softmin(x, dim=1), [X.reshape(2, 5)]),
    ("glu", lambda x: F.glu(x, 0), [X.reshape(2, 5)]),
    ("normalize", lambda x: F.normalize(x, p=3.0, dim=0), [X.reshape(5, 2)]),
    ("sdpa", lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
     [np.sin(np.arange(24.0)).reshape(2, 3, 4), np.cos(np.arange(24.0)).reshape(2, 3, 4),
      np.arange(18.0).reshape(2, 3, 3) / 10]),
    ("group_norm", lambda x, w, b: F.group_norm(x, 2, w, b),
     [np.sin(np.arange(48.0)).reshape(2, 4, 6), np.arange(1.0, 5.0), np.arange(4.0)]),
]  # fmt: skip


@pytest.mark.parametrize("fn, inputs", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_gradients_match_finite_differences(fn, inputs):
    assert gradcheck(fn, [np.asarray(a, np.float64) for a in inputs])


@pytest.mark.parametrize("fn, inputs", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_eager_matches_compiled(fn, inputs):
    assert check_eager_vs_compiled(fn, *[np.asarray(a, np.float32) for a in inputs])


def test_unfold_and_fold_are_adjoint():
    # <unfold(x), y> == <x, fold(y)> for any x, y: fold is unfold's transpose (col2im)
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((2, 3, 5, 6)), rng.standard_normal((2, 18, 15))
    kw = dict(kernel_size=(2, 3), dilation=(2, 1), padding=1, stride=(1, 2))
    lhs = (F.unfold(kn.tensor(x), **kw).numpy() * y).sum()
    rhs = (x * F.fold(kn.tensor(y), (5, 6), **kw).numpy()).sum()
    np.testing.assert_allclose(lhs, rhs, rtol=1e-10)


def test_pixel_shuffle_inverts_pixel_unshuffle():
    x = kn.tensor(np.arange(2 * 3 * 4 * 6.0).reshape(2, 3, 4, 6))
    y = F.pixel_unshuffle(x, 2)
    assert list(y.shape) == [2, 12, 2, 3]
    np.testing.assert_array_equal(F.pixel_shuffle(y, 2).numpy(), x.numpy())


def test_more_functions_by_hand():
    x = kn.tensor([-2.0, -0.5, 0.25, 1.0])
    assert F.threshold(x, 0.0, 9.0).tolist() == [9.0, 9.0, 0.25, 1.0]
    assert F.hardshrink(x, 0.5).tolist() == [-2.0, 0.0, 0.0, 1.0]
    assert F.softshrink(x, 0.5).tolist() == [-1.5, 0.0, 0.0, 0.5]
    assert F.prelu(x, kn.tensor([0.5])).tolist() == [-1.0, -0.25, 0.25, 1.0]
    assert F.rrelu(x, 0.2, 0.4).tolist() == pytest.approx([-0.6, -0.15, 0.25, 1.0])
    # KL(t || p) with t = (1, 0), p = (1/2, 1/2): log 2
    logp = kn.tensor([[np.log(0.5), np.log(0.5)]])
    assert F.kl_div(logp, kn.tensor([[1.0, 0.0]]), reduction="sum").item() == pytest.approx(
        np.log(2)
    )
    np.testing.assert_allclose(F.cosine_similarity(kn.tensor([[1.0, 1.0]]),
                                                   kn.tensor([[2.0, 0.0]])).numpy(),
                               [np.sqrt(0.5)], rtol=1e-6)  # fmt: skip
    table = kn.tensor(np.arange(6.0).reshape(3, 2), requires_grad=True)
    F.embedding(kn.tensor([0, 1, 1]), table, padding_idx=1).sum().backward()
    assert table.grad.tolist() == [[1.0, 1.0], [0.0, 0.0], [0.0, 0.0]]  # no grad to the pad row


MORE_CASES = [
    ("softshrink", lambda x: F.softshrink(x, 0.3), [X + 0.05]),
    ("prelu", F.prelu, [X.reshape(2, 5) + 0.05, np.array([0.1, 0.2, 0.3, 0.4, 0.5])]),
    ("kl_div", lambda x, t: F.kl_div(x, t, reduction="batchmean"),
     [X.reshape(2, 5) / 3, np.abs(X.reshape(2, 5)) + 0.1]),
    ("cosine_similarity", F.cosine_similarity, [X.reshape(2, 5), X[::-1].reshape(2, 5) + 1]),
    ("instance_norm", F.instance_norm, [np.sin(np.arange(24.0)).reshape(2, 3, 4)]),
    ("unfold", lambda x: F.unfold(x, 2, padding=1, stride=2), [np.sin(np.arange(40.0)).reshape(
        1, 2, 4, 5)]),
]  # fmt: skip


@pytest.mark.parametrize("fn, inputs", [c[1:] for c in MORE_CASES],
                         ids=[c[0] for c in MORE_CASES])  # fmt: skip
def test_more_gradients_match_finite_differences(fn, inputs):
    assert gradcheck(fn, [np.asarray(a, np.float64) for a in inputs])
