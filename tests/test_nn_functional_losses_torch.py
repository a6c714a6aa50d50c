"""kn.nn.functional's margin and likelihood losses, embedding_bag, ctc_loss, grid_sample and
affine_grid against PyTorch itself (skipped without torch): values and gradients eagerly, and
the values in graph mode and under kn.compile."""

import warnings

import numpy as np
import pytest

import kiln as kn

torch = pytest.importorskip("torch")
TF = torch.nn.functional
KF = kn.nn.functional

rng = np.random.default_rng(0)
X = rng.standard_normal((4, 5))
Y = rng.standard_normal((4, 5))
SIGN = np.array([1.0, -1.0, 1.0, -1.0])
LABELS = np.array([0, 3, 1, 4])
LP = rng.standard_normal((6, 3, 5))

# (name, fn(F, *tensors), inputs that require grad, other inputs)
ROWS = [
    ("margin_ranking", lambda F, a, b, y: F.margin_ranking_loss(a[:, 0], b[:, 0], y, margin=0.3),
     [X, Y], [SIGN]),
    ("hinge_embedding", lambda F, a, y: F.hinge_embedding_loss(a, y[:, None].expand(4, 5)),
     [X], [SIGN]),
    ("soft_margin", lambda F, a, y: F.soft_margin_loss(a[:, 0], y), [X], [SIGN]),
    ("multi_margin", lambda F, a, t: F.multi_margin_loss(a, t), [X], [LABELS]),
    ("multi_margin-p2-weight", lambda F, a, t, w: F.multi_margin_loss(a, t, p=2, weight=w),
     [X], [LABELS, np.arange(1.0, 6.0)]),
    ("multilabel_soft_margin", lambda F, a, y: F.multilabel_soft_margin_loss(a, y), [X],
     [(Y > 0).astype(np.float64)]),
    ("cosine_embedding", lambda F, a, b, y: F.cosine_embedding_loss(a, b, y, margin=0.1),
     [X, Y], [SIGN]),
    ("triplet_margin", lambda F, a, p, n: F.triplet_margin_loss(a, p, n), [X, Y, X[::-1] + 1], []),
    ("triplet_margin-swap", lambda F, a, p, n: F.triplet_margin_loss(a, p, n, p=1, swap=True),
     [X, Y, X[::-1] + 1], []),
    ("poisson_nll", lambda F, a, y: F.poisson_nll_loss(a, y), [X], [np.abs(Y) * 3]),
    ("poisson_nll-full", lambda F, a, y: F.poisson_nll_loss(a.abs(), y, log_input=False,
                                                            full=True), [X], [np.abs(Y) * 3]),
    ("gaussian_nll", lambda F, a, y, v: F.gaussian_nll_loss(a, y, v), [X], [Y, np.abs(Y) + 0.1]),
    ("gaussian_nll-var-per-row", lambda F, a, v, y: F.gaussian_nll_loss(a, y, v, full=True),
     [X, np.abs(Y[:, 0]) + 0.1], [Y]),
    ("embedding_bag-mean", lambda F, w, i, o: F.embedding_bag(i, w, o), [X],
     [np.array([0, 2, 1, 3, 3]), np.array([0, 2, 2])]),
    ("embedding_bag-sum-psw", lambda F, w, s, i, o: F.embedding_bag(
        i, w, o, mode="sum", per_sample_weights=s), [X, np.arange(1.0, 6.0)],
     [np.array([0, 2, 1, 3, 3]), np.array([0, 2, 5])]),
    ("embedding_bag-max-2d", lambda F, w, i: F.embedding_bag(i, w, mode="max"), [X],
     [np.array([[0, 2], [1, 3]])]),
    ("embedding_bag-padding", lambda F, w, i, o: F.embedding_bag(i, w, o, padding_idx=2), [X],
     [np.array([0, 2, 1, 2]), np.array([0, 2])]),
    ("embedding_bag-padding-negative", lambda F, w, s, i, o: F.embedding_bag(
        i, w, o, mode="sum", per_sample_weights=s, padding_idx=-1), [X, np.arange(1.0, 6.0)],
     [np.array([3, 1, 1, 0, 3]), np.array([0, 3])]),
    ("ctc_loss", lambda F, x, t: F.ctc_loss(F.log_softmax(x, 2), t, [6, 5, 4], [3, 2, 0]),
     [LP], [np.array([[1, 2, 2], [3, 3, 0], [0, 0, 0]])]),
    ("ctc_loss-sum-zero_inf", lambda F, x, t: F.ctc_loss(
        F.log_softmax(x, 2), t, [2, 6, 6], [3, 2, 1], reduction="sum", zero_infinity=True),
     [LP], [np.array([[1, 1, 1], [3, 4, 0], [2, 0, 0]])]),
    ("grid_sample", lambda F, x, g: F.grid_sample(x[None, :, :, None].expand(2, 4, 5, 3), g,
                                                  align_corners=False), [X, rng.uniform(
                                                      -1.3, 1.3, (2, 2, 3, 2))], []),
    ("grid_sample-reflection", lambda F, x, g: F.grid_sample(
        x[None, None], g, padding_mode="reflection", align_corners=True), [X, rng.uniform(
            -2.5, 2.5, (1, 4, 3, 2))], []),
    ("affine_grid", lambda F, t: F.affine_grid(t, (2, 1, 3, 4), align_corners=False),
     [rng.standard_normal((2, 2, 3))], []),
]  # fmt: skip


def _run(lib, F, fn, grads, others):
    tensors = [lib.tensor(a.copy(), requires_grad=True) for a in grads]
    return tensors, fn(F, *tensors, *[lib.tensor(a.copy()) for a in others])


@pytest.mark.parametrize("row", ROWS, ids=[r[0] for r in ROWS])
def test_values_and_gradients_match_torch(row):
    _, fn, grads, others = row
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t_in, t_out = _run(torch, TF, fn, grads, others)
        k_in, k_out = _run(kn, KF, fn, grads, others)
    np.testing.assert_allclose(k_out.detach().numpy(), t_out.detach().numpy(), 1e-6, 1e-9)
    r = np.random.default_rng(1).standard_normal(tuple(t_out.shape))
    (t_out * torch.tensor(r)).sum().backward()
    (k_out * kn.tensor(r)).sum().backward()
    for k, t in zip(k_in, t_in):
        np.testing.assert_allclose(k.grad.numpy(), t.grad.numpy(), 1e-6, 1e-9)


@pytest.mark.parametrize("row", ROWS[::3], ids=[r[0] for r in ROWS[::3]])
def test_graph_mode_and_compile_give_torchs_values(row):
    _, fn, grads, others = row
    arrays = [*grads, *others]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = _run(torch, TF, fn, grads, others)[1].detach().numpy()
        with kn.Graph().as_default():
            xs = [kn.placeholder(a.dtype, a.shape) for a in arrays]
            got = kn.function(xs, [fn(KF, *xs)])(*arrays)[0]
        compiled = kn.compile(lambda *ts: fn(KF, *ts))(*[kn.tensor(a) for a in arrays])
    np.testing.assert_allclose(got, want, 1e-6, 1e-9)
    np.testing.assert_allclose(compiled.numpy(), want, 1e-6, 1e-9)


def test_ctc_loss_takes_concatenated_targets_eagerly():
    targets, lengths = np.array([1, 2, 2, 3, 3]), [3, 2, 0]
    lp = torch.log_softmax(torch.tensor(LP), 2)
    want = TF.ctc_loss(lp, torch.tensor(targets), [6, 5, 4], lengths, reduction="none")
    got = KF.ctc_loss(kn.log_softmax(kn.tensor(LP), 2), kn.tensor(targets), kn.tensor([6, 5, 4]),
                      kn.tensor(lengths), reduction="none")  # fmt: skip
    np.testing.assert_allclose(got.numpy(), want.numpy(), 1e-9)
