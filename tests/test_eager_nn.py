"""Modules and optimizers in eager mode: the five-step training loop, the same parameters as
graph mode after the same steps, parameters as leaf Tensors, BatchNorm and Dropout in train
and eval mode."""

import numpy as np
import pytest
from test_optim import CASES, P0, STEPS, A, C, reference

import kiln as kn


def _data(n=32, features=4, classes=3, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, features)).astype(np.float32)
    w = rng.standard_normal((features, classes)).astype(np.float32)
    return x, np.argmax(x @ w, axis=1).astype(np.int64)


def test_five_step_training_loop_lowers_the_loss():
    x, y = _data()
    kn.manual_seed(0)
    model = kn.nn.MLP([4, 16, 3])
    opt = kn.optim.Adam(model.parameters(), lr=0.05)
    xt, yt = kn.tensor(x), kn.tensor(y)
    losses = []
    for _ in range(5):
        opt.zero_grad()
        loss = kn.cross_entropy(model(xt), yt)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.8 * losses[0], losses
    assert all(b < a for a, b in zip(losses, losses[1:])), losses


def test_parameters_are_the_same_leaf_tensors_every_call():
    model = kn.nn.Linear(3, 2)
    x = kn.ones(4, 3)
    seen = []

    class Probe(kn.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = model

        def forward(self, t):
            seen.append(self.fc.weight)
            return self.fc(t)

    probe = Probe()
    probe(x)
    probe(x)
    w = seen[0]
    assert seen[1] is w and isinstance(w, kn.Tensor) and w.is_leaf and w.requires_grad
    assert model.weight.tensor() is w and np.shares_memory(w.detach().numpy(), model.weight.value)
    model(x).sum().backward()
    assert model.weight.grad is w.grad and w.grad.shape == (2, 3)
    np.testing.assert_allclose(model.bias.grad.numpy(), [4.0, 4.0])
    model.zero_grad()
    assert model.weight.grad is None


def test_gradients_accumulate_across_calls_until_zero_grad():
    kn.manual_seed(0)
    model = kn.nn.Linear(2, 1)
    opt = kn.optim.SGD(model.parameters(), lr=0.1)
    x = kn.ones(3, 2)
    model(x).sum().backward()
    model(x).sum().backward()
    assert model.bias.grad.tolist() == [6.0]
    opt.zero_grad()
    assert model.bias.grad is None
    opt.zero_grad(set_to_none=False)  # nothing to zero: stays None
    model(x).sum().backward()
    grad = model.bias.grad
    opt.zero_grad(set_to_none=False)
    assert model.bias.grad.tolist() == [0.0]
    assert model.bias.grad is grad  # zeroed in place, as PyTorch: references see the zeros


@pytest.mark.parametrize("name, opt_cls, hyper, ref", CASES, ids=[c[0] for c in CASES])
def test_eager_optimizer_steps_match_pytorch_reference(name, opt_cls, hyper, ref):
    w = kn.tensor(P0.copy(), requires_grad=True)
    opt = opt_cls([w], **hyper)
    a, c = kn.tensor(A), kn.tensor(C)
    for _ in range(STEPS):
        opt.zero_grad()
        loss = (a * (w - c) ** 2).sum() * 0.5
        loss.backward()
        opt.step()
    want_p, want_slots = reference(opt_cls, hyper, ref)
    np.testing.assert_allclose(w.detach().numpy(), want_p, rtol=1e-12, atol=1e-14)
    state = opt._state[w]
    assert state["step"] == STEPS
    for slot in opt.slot_names:
        np.testing.assert_allclose(state[slot].numpy(), want_slots[slot], rtol=1e-12, atol=1e-14)
    assert w.is_leaf and w._version == STEPS  # updated in place, as PyTorch's optimizers


def _make_model():
    return kn.nn.Sequential(
        kn.nn.Linear(4, 8), kn.nn.GELU(), kn.nn.LayerNorm(8), kn.nn.Linear(8, 3)
    )


def _train_graph(make_opt, x, y, steps):
    kn.manual_seed(0)
    model = _make_model()
    with kn.Graph().as_default():
        xp = kn.placeholder(kn.float32, x.shape, name="x")
        yp = kn.placeholder(kn.int64, y.shape, name="y")
        loss = kn.cross_entropy(model(xp), yp)
        train_op = make_opt(model.parameters()).minimize(loss)
        with kn.Session() as sess:
            losses = [sess.run([loss, train_op], {xp: x, yp: y})[0] for _ in range(steps)]
    return model.state_dict(), losses


def _train_eager(make_opt, x, y, steps):
    kn.manual_seed(0)
    model = _make_model()
    opt = make_opt(model.parameters())
    xt, yt = kn.tensor(x), kn.tensor(y)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = kn.cross_entropy(model(xt), yt)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return model.state_dict(), losses


@pytest.mark.parametrize(
    "make_opt",
    [
        lambda p: kn.optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True),
        lambda p: kn.optim.SGD(p, lr=0.1, momentum=0.5, dampening=0.3, weight_decay=0.01),
        lambda p: kn.optim.Adam(p, lr=0.01, amsgrad=True),
        lambda p: kn.optim.AdamW(p, lr=0.01, weight_decay=0.1),
    ],
    ids=["sgd-nesterov", "sgd-dampening", "adam-amsgrad", "adamw"],
)
def test_eager_training_matches_graph_mode(make_opt):
    x, y = _data()
    graph_state, graph_losses = _train_graph(make_opt, x, y, 3)
    eager_state, eager_losses = _train_eager(make_opt, x, y, 3)
    assert graph_state.keys() == eager_state.keys()
    for key in graph_state:
        np.testing.assert_allclose(eager_state[key], graph_state[key], rtol=1e-5, atol=1e-6,
                                   err_msg=key)  # fmt: skip
    np.testing.assert_allclose(eager_losses, graph_losses, rtol=1e-5)


def test_parameters_move_between_eager_and_graph_mode():
    model = kn.nn.Linear(2, 1, bias=False)
    model.weight.assign(np.array([[1.0, 2.0]], np.float32))
    opt = kn.optim.SGD(model.parameters(), lr=0.5)
    x = kn.ones(1, 2)
    model(x).sum().backward()
    opt.step()  # eager: w -= 0.5 * [1, 1]
    with kn.Graph().as_default():
        xp = kn.placeholder(kn.float32, (1, 2), name="x")
        train_op = kn.optim.SGD(model.parameters(), lr=0.5).minimize(kn.sum(model(xp)))
        assert model.weight.numpy().tolist() == [[0.5, 1.5]]  # the graph starts from eager's
        kn.Session().run(train_op, {xp: np.ones((1, 2), np.float32)})
    assert model.weight.numpy().tolist() == [[0.0, 1.0]]
    w = model(x)  # eager again: starts from the graph's value, in the same leaf tensor
    assert w.item() == 1.0 and model.weight.tensor().detach().tolist() == [[0.0, 1.0]]


def test_load_state_dict_writes_into_the_leaf_tensors():
    model = kn.nn.Linear(2, 2)
    w = model.weight.tensor()
    model.load_state_dict({"weight": np.eye(2, dtype=np.float32), "bias": np.zeros(2, np.float32)})
    assert model.weight.tensor() is w and w.detach().tolist() == [[1.0, 0.0], [0.0, 1.0]]
    assert w._version == 1


def test_optimizer_takes_leaf_tensors_only():
    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        kn.optim.SGD([kn.ones(2, requires_grad=True) * 2], lr=0.1)
    with pytest.raises(ValueError, match="need the params"):
        kn.optim.SGD(lr=0.1).step()


# -- train and eval mode -------------------------------------------------------------------------


def test_batchnorm_train_and_eval_eagerly_as_in_graph_mode():
    x = np.array([[0.0, 2.0], [2.0, 6.0], [4.0, 1.0]], np.float32)
    bn = kn.nn.BatchNorm1d(2)
    out = bn(kn.tensor(x, requires_grad=True))
    mean, var = x.mean(0), x.var(0)
    np.testing.assert_allclose(out.detach().numpy(), (x - mean) / np.sqrt(var + 1e-5), rtol=1e-5)
    np.testing.assert_allclose(bn.running_mean.numpy(), 0.1 * mean, rtol=1e-6)
    np.testing.assert_allclose(bn.running_var.numpy(), 0.9 + 0.1 * x.var(0, ddof=1), rtol=1e-6)
    assert bn.num_batches_tracked.numpy() == 1
    out.sum().backward()
    assert bn.weight.grad is not None and bn.bias.grad.tolist() == [3.0, 3.0]

    bn.eval()
    stats = bn.running_mean.numpy(), bn.running_var.numpy()
    y = bn(kn.tensor(x))
    np.testing.assert_allclose(y.detach().numpy(), (x - stats[0]) / np.sqrt(stats[1] + 1e-5),
                               rtol=1e-5)  # fmt: skip
    assert bn.num_batches_tracked.numpy() == 1  # eval changes no statistics
    with kn.Graph().as_default():
        xp = kn.placeholder(kn.float32, x.shape, name="x")
        graph_y = kn.function([xp], bn(xp))(x)
    np.testing.assert_allclose(y.detach().numpy(), graph_y, rtol=1e-6)


def test_dropout_train_and_eval_eagerly():
    drop = kn.nn.Dropout(0.5)
    x = kn.ones(1000, requires_grad=True)
    y = drop(x)
    kept = y.detach().numpy()
    assert set(np.unique(kept)) <= {0.0, 2.0} and 400 < (kept > 0).sum() < 600
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), kept)
    kn.manual_seed(5)
    a = drop(kn.ones(50)).numpy()
    kn.manual_seed(5)
    assert np.array_equal(drop(kn.ones(50)).numpy(), a)  # kn.manual_seed reproduces masks
    drop.eval()
    t = kn.ones(4)
    assert drop(t) is t


def test_modules_with_every_layer_kind_run_eagerly_with_graph_mode_gradients():
    kn.manual_seed(0)
    model = kn.nn.Sequential(
        kn.nn.Conv2d(1, 2, 3, padding=1), kn.nn.ReLU(), kn.nn.MaxPool2d(2), kn.nn.Flatten(),
        kn.nn.Linear(8, 3), kn.nn.Tanh(),
    )  # fmt: skip
    x = np.random.default_rng(0).standard_normal((2, 1, 4, 4)).astype(np.float32)
    loss = model(kn.tensor(x)).sum()
    loss.backward()
    names = [name for name, _ in model.named_parameters()]
    with kn.Graph().as_default():
        xp = kn.placeholder(kn.float32, x.shape, name="x")
        graph_loss = kn.sum(model(xp))
        params = [p.variable_in(graph_loss.graph) for p in model.parameters()]
        values = kn.function([xp], [graph_loss, *kn.grad(graph_loss, params)])(x)
    np.testing.assert_allclose(loss.item(), values[0], rtol=1e-5)
    for name, p, g in zip(names, model.parameters(), values[1:]):
        np.testing.assert_allclose(p.grad.numpy(), g, rtol=1e-4, atol=1e-5, err_msg=name)


def test_embedding_eagerly_accumulates_rows():
    emb = kn.nn.Embedding(5, 2)
    ids = kn.tensor([1, 3, 1])
    emb(ids).sum().backward()
    np.testing.assert_array_equal(emb.weight.grad.numpy()[:, 0], [0, 2, 0, 1, 0])
