"""The nn toolkit against PyTorch itself: loss values and gradients on the same inputs,
activation modules, initializer fans and statistics, and module traversal order for the same
module structure. Skipped where torch is not installed."""

import numpy as np
import pytest

import kiln as kn

torch = pytest.importorskip("torch")
tnn = torch.nn

RNG = np.random.default_rng(0)
LOGITS = RNG.standard_normal((5, 4)).astype(np.float32)
LOGITS_3D = RNG.standard_normal((3, 4, 2)).astype(np.float32)
LABELS = np.array([0, 3, 1, 1, 2])
LABELS_IGNORED = np.array([0, -100, 1, 3, -100])
LABELS_3D = np.array([[0, 3], [1, -100], [2, 2]])
PROBS = RNG.dirichlet(np.ones(4), size=5).astype(np.float32)
X = RNG.standard_normal((3, 4)).astype(np.float32)
Y = RNG.standard_normal((3, 4)).astype(np.float32)
P = RNG.uniform(0.01, 0.99, (3, 4)).astype(np.float32)
T01 = RNG.integers(0, 2, (3, 4)).astype(np.float32)
WEIGHT = np.array([0.5, 1.0, 2.0, 0.25], np.float32)
POS_WEIGHT = np.array([1.0, 2.0, 0.5, 3.0], np.float32)

# (name, kiln module factory, torch module factory, input, target): each runs with every
# reduction; the torch module with the same arguments is the reference.
CASES = [
    ("mse", lambda r: kn.nn.MSELoss(reduction=r), lambda r: tnn.MSELoss(reduction=r), X, Y),
    ("l1", lambda r: kn.nn.L1Loss(reduction=r), lambda r: tnn.L1Loss(reduction=r), X, Y),
    ("smooth_l1", lambda r: kn.nn.SmoothL1Loss(reduction=r, beta=0.5),
     lambda r: tnn.SmoothL1Loss(reduction=r, beta=0.5), X, Y),
    ("smooth_l1_beta0", lambda r: kn.nn.SmoothL1Loss(reduction=r, beta=0.0),
     lambda r: tnn.SmoothL1Loss(reduction=r, beta=0.0), X, Y),
    ("huber", lambda r: kn.nn.HuberLoss(reduction=r, delta=0.7),
     lambda r: tnn.HuberLoss(reduction=r, delta=0.7), X, Y),
    ("bce", lambda r: kn.nn.BCELoss(reduction=r), lambda r: tnn.BCELoss(reduction=r), P, T01),
    ("bce_weight", lambda r: kn.nn.BCELoss(kn.tensor(WEIGHT), reduction=r),
     lambda r: tnn.BCELoss(torch.tensor(WEIGHT), reduction=r), P, T01),
    ("bce_logits", lambda r: kn.nn.BCEWithLogitsLoss(reduction=r),
     lambda r: tnn.BCEWithLogitsLoss(reduction=r), X * 30, T01),
    ("bce_logits_pos_weight",
     lambda r: kn.nn.BCEWithLogitsLoss(kn.tensor(WEIGHT), reduction=r,
                                       pos_weight=kn.tensor(POS_WEIGHT)),
     lambda r: tnn.BCEWithLogitsLoss(torch.tensor(WEIGHT), reduction=r,
                                     pos_weight=torch.tensor(POS_WEIGHT)), X, T01),
    ("nll", lambda r: kn.nn.NLLLoss(reduction=r), lambda r: tnn.NLLLoss(reduction=r),
     LOGITS, LABELS),
    ("nll_weight_ignore", lambda r: kn.nn.NLLLoss(kn.tensor(WEIGHT), reduction=r),
     lambda r: tnn.NLLLoss(torch.tensor(WEIGHT), reduction=r), LOGITS, LABELS_IGNORED),
    ("ce", lambda r: kn.nn.CrossEntropyLoss(reduction=r),
     lambda r: tnn.CrossEntropyLoss(reduction=r), LOGITS, LABELS),
    ("ce_1d", lambda r: kn.nn.CrossEntropyLoss(reduction=r),
     lambda r: tnn.CrossEntropyLoss(reduction=r), LOGITS[0], LABELS[1]),
    ("ce_3d", lambda r: kn.nn.CrossEntropyLoss(reduction=r),
     lambda r: tnn.CrossEntropyLoss(reduction=r), LOGITS_3D, LABELS_3D),
    ("ce_weight_ignore_smoothing",
     lambda r: kn.nn.CrossEntropyLoss(kn.tensor(WEIGHT), ignore_index=3, reduction=r,
                                      label_smoothing=0.2),
     lambda r: tnn.CrossEntropyLoss(torch.tensor(WEIGHT), ignore_index=3, reduction=r,
                                    label_smoothing=0.2), LOGITS, LABELS_IGNORED.clip(0)),
    ("ce_probs", lambda r: kn.nn.CrossEntropyLoss(reduction=r),
     lambda r: tnn.CrossEntropyLoss(reduction=r), LOGITS, PROBS),
    ("ce_probs_weight_smoothing",
     lambda r: kn.nn.CrossEntropyLoss(kn.tensor(WEIGHT), reduction=r, label_smoothing=0.1),
     lambda r: tnn.CrossEntropyLoss(torch.tensor(WEIGHT), reduction=r, label_smoothing=0.1),
     LOGITS, PROBS),
]  # fmt: skip


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_loss_values_and_gradients_match_torch(case, reduction):
    _, make_kn, make_torch, x, target = case
    xk = kn.tensor(x, requires_grad=True)
    xt = torch.tensor(x, requires_grad=True)
    got = make_kn(reduction)(xk, kn.tensor(target))
    want = make_torch(reduction)(xt, torch.tensor(target))
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-5, atol=1e-6)
    got.sum().backward()
    want.sum().backward()
    np.testing.assert_allclose(xk.grad.numpy(), xt.grad.numpy(), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_losses_in_graph_mode_match_torch(case):
    _, make_kn, make_torch, x, target = case
    with kn.Graph().as_default():
        xs = kn.placeholder(kn.float32, x.shape, name="x")
        loss = make_kn("mean")(xs, kn.constant(target))
        got = kn.function([xs], loss)(x)
    want = make_torch("mean")(torch.tensor(x), torch.tensor(target))
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-5, atol=1e-6)


ACTIVATIONS = [
    (kn.nn.ReLU(), tnn.ReLU()),
    (kn.nn.GELU(), tnn.GELU()),
    (kn.nn.GELU("tanh"), tnn.GELU("tanh")),
    (kn.nn.Tanh(), tnn.Tanh()),
    (kn.nn.Sigmoid(), tnn.Sigmoid()),
    (kn.nn.SiLU(), tnn.SiLU()),
    (kn.nn.LeakyReLU(0.2), tnn.LeakyReLU(0.2)),
    (kn.nn.ELU(0.5), tnn.ELU(0.5)),
    (kn.nn.Softplus(2.0, 5.0), tnn.Softplus(2.0, 5.0)),
    (kn.nn.Softmax(dim=1), tnn.Softmax(dim=1)),
    (kn.nn.LogSoftmax(dim=0), tnn.LogSoftmax(dim=0)),
    (kn.nn.Flatten(0), tnn.Flatten(0)),
    (kn.nn.Identity(), tnn.Identity()),
]


@pytest.mark.parametrize("pair", ACTIVATIONS, ids=[type(a).__name__ for a, _ in ACTIVATIONS])
def test_activation_modules_match_torch(pair):
    ours, theirs = pair
    x = X * 3
    xk, xt = kn.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    got, want = ours(xk), theirs(xt)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-5, atol=1e-6)
    (got * kn.tensor(Y.reshape(got.shape))).sum().backward()
    (want * torch.tensor(Y.reshape(want.shape))).sum().backward()
    np.testing.assert_allclose(xk.grad.numpy(), xt.grad.numpy(), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("shape", [(10, 784), (16, 3, 5, 5), (4, 6, 2, 3, 3), (3, 0)])
def test_fans_match_torch(shape):
    want = tnn.init._calculate_fan_in_and_fan_out(torch.empty(shape))
    assert kn.nn.init._calculate_fan_in_and_fan_out(kn.zeros(*shape)) == want


@pytest.mark.parametrize(
    "args",
    [("linear",), ("relu",), ("tanh",), ("sigmoid",), ("selu",), ("leaky_relu",),
     ("leaky_relu", 0.2), ("conv2d",)],
)  # fmt: skip
def test_calculate_gain_matches_torch(args):
    assert kn.nn.init.calculate_gain(*args) == pytest.approx(tnn.init.calculate_gain(*args))


INITS = [
    ("kaiming_uniform_", {}),
    ("kaiming_uniform_", {"a": 5**0.5}),
    ("kaiming_uniform_", {"mode": "fan_out", "nonlinearity": "relu"}),
    ("kaiming_normal_", {}),
    ("kaiming_normal_", {"mode": "fan_out", "nonlinearity": "relu"}),
    ("xavier_uniform_", {}),
    ("xavier_uniform_", {"gain": 2.0}),
    ("xavier_normal_", {"gain": 0.5}),
    ("normal_", {"mean": 1.0, "std": 0.2}),
    ("uniform_", {"a": -2.0, "b": 3.0}),
    ("trunc_normal_", {"std": 0.5, "a": -0.4, "b": 0.8}),
    ("orthogonal_", {"gain": 1.5}),
]


@pytest.mark.parametrize("name,kwargs", INITS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(INITS)])
def test_initializer_statistics_match_torch(name, kwargs):
    shape = (200, 30, 3, 3)  # fan_in 270, fan_out 1800: fans of a conv weight
    kn.manual_seed(0)
    torch.manual_seed(0)
    ours = getattr(kn.nn.init, name)(kn.zeros(*shape), **kwargs).numpy()
    theirs = getattr(tnn.init, name)(torch.empty(shape), **kwargs).numpy()
    # different random streams: the same law, so the same moments and range (n = 162000)
    bounded = "uniform" in name or "trunc" in name  # the extremes of a normal sample vary
    for stat in (np.mean, np.std, np.min, np.max) if bounded else (np.mean, np.std):
        np.testing.assert_allclose(stat(ours), stat(theirs), atol=0.02 * theirs.std() + 1e-4)


def test_orthogonal_is_orthogonal_like_torch():
    ours = kn.nn.init.orthogonal_(kn.zeros(6, 2, 2), gain=2.0).numpy().reshape(6, 4)
    theirs = tnn.init.orthogonal_(torch.empty(6, 2, 2), gain=2.0).numpy().reshape(6, 4)
    np.testing.assert_allclose(ours.T @ ours, theirs.T @ theirs, atol=1e-5)  # 4 * I


def _tree(nn):
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm = nn.LayerNorm(3)
            self.heads = nn.ModuleDict({"q": nn.Linear(3, 3), "k": nn.Linear(3, 3, bias=False)})

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(5, 3)
            self.blocks = nn.ModuleList([Block(), Block()])
            self.scale = nn.Parameter(torch.ones(1) if nn is tnn else kn.ones(1))
            self.head = nn.Sequential(nn.Linear(3, 2), nn.ReLU(), nn.BatchNorm1d(2))
            self.tied = self.head[0]

    return Net()


def test_named_parameters_modules_and_state_dict_order_match_torch():
    ours, theirs = _tree(kn.nn), _tree(tnn)
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in theirs.named_modules()]
    assert [n for n, _ in ours.named_buffers()] == [n for n, _ in theirs.named_buffers()]
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [n for n, _ in ours.named_children()] == [n for n, _ in theirs.named_children()]
    assert sum(p.numel() for p in ours.parameters()) == sum(p.numel() for p in theirs.parameters())
    seen_ours, seen_theirs = [], []
    ours.apply(lambda m: seen_ours.append(type(m).__name__))
    theirs.apply(lambda m: seen_theirs.append(type(m).__name__))
    assert seen_ours == seen_theirs


def test_sequential_slice_names_match_torch():
    ours = kn.nn.Sequential(kn.nn.Linear(2, 2), kn.nn.ReLU(), kn.nn.Linear(2, 1))[1:]
    theirs = tnn.Sequential(tnn.Linear(2, 2), tnn.ReLU(), tnn.Linear(2, 1))[1:]
    assert type(ours).__name__ == type(theirs).__name__
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0, float("inf")])
@pytest.mark.parametrize("max_norm", [0.5, 100.0])
def test_clip_grad_norm_matches_torch(norm_type, max_norm):
    grads = [X, Y[:2], LOGITS]
    ours = [kn.tensor(np.zeros_like(g), requires_grad=True) for g in grads]
    theirs = [torch.zeros(g.shape, requires_grad=True) for g in grads]
    for p, q, g in zip(ours, theirs, grads):
        p.grad, q.grad = kn.tensor(g), torch.tensor(g)
    got = kn.nn.utils.clip_grad_norm_(ours, max_norm, norm_type)
    want = tnn.utils.clip_grad_norm_(theirs, max_norm, norm_type)
    np.testing.assert_allclose(got.item(), want.item(), rtol=1e-5)
    for p, q in zip(ours, theirs):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-5, atol=1e-7)
