"""PyTorch's training step inside kn.compile and in graph mode (kiln/optim/graph_step.py):
`opt.zero_grad(); loss.backward(); opt.step()` on Symbols gives the eager steps' parameters
(the eager optimizers are checked against torch and NumPy elsewhere)."""

import numpy as np
import pytest

import kiln as kn
import kiln.nn.functional as F


def _model():
    kn.manual_seed(0)
    return kn.nn.Sequential(kn.nn.Linear(4, 8), kn.nn.ReLU(), kn.nn.Linear(8, 3))


def _data():
    rng = np.random.default_rng(0)
    x = kn.tensor(rng.standard_normal((16, 4)).astype(np.float32))
    y = kn.tensor(rng.integers(0, 3, 16))
    return x, y


def _params(model):
    return [p.detach().numpy() for p in model.parameters()]


@pytest.mark.parametrize(
    "make",
    [
        lambda ps: kn.optim.SGD(ps, lr=0.1, momentum=0.9),
        lambda ps: kn.optim.Adam(ps, lr=0.01),
        lambda ps: kn.optim.AdamW(ps, lr=0.01, weight_decay=0.1),
        lambda ps: kn.optim.RMSprop(ps, lr=0.01),
    ],
    ids=["sgd-momentum", "adam", "adamw", "rmsprop"],
)
def test_compiled_step_gives_the_eager_steps(make):
    compiled_model, eager_model = _model(), _model()
    opt, eager_opt = make(compiled_model.parameters()), make(eager_model.parameters())

    def body(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(compiled_model(x), y)
        loss.backward()
        opt.step()
        return loss

    step = kn.compile(body)
    x, y = _data()
    for _ in range(5):
        got = step(x, y).item()
        eager_opt.zero_grad()
        loss = F.cross_entropy(eager_model(x), y)
        loss.backward()
        eager_opt.step()
        np.testing.assert_allclose(got, loss.item(), rtol=1e-6)
    for a, b in zip(_params(compiled_model), _params(eager_model)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert step.trace_count == 1  # `opt.step()` names no global: the function named step is not


def test_two_backwards_add_up_and_zero_grad_clears():
    compiled_model, eager_model = _model(), _model()
    opt = kn.optim.SGD(compiled_model.parameters(), lr=0.1)
    eager_opt = kn.optim.SGD(eager_model.parameters(), lr=0.1)
    x, y = _data()

    @kn.compile
    def step(x, y):
        opt.zero_grad()
        F.cross_entropy(compiled_model(x), y).backward()
        opt.zero_grad()  # the first loss's gradients are gone
        (F.cross_entropy(compiled_model(x), y) * 0.5).backward()
        (compiled_model(x).square().mean()).backward()  # added to the second's
        opt.step()

    step(x, y)
    eager_opt.zero_grad()
    (F.cross_entropy(eager_model(x), y) * 0.5).backward()
    (eager_model(x).square().mean()).backward()
    eager_opt.step()
    for a, b in zip(_params(compiled_model), _params(eager_model)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_graph_mode_step_is_the_train_op():
    model = _model()
    opt = kn.optim.SGD(model.parameters(), lr=0.1)
    eager_model = _model()
    eager_opt = kn.optim.SGD(eager_model.parameters(), lr=0.1)
    x, y = _data()
    with kn.Graph().as_default():
        xs = kn.placeholder(kn.float32, (16, 4), name="x")
        ys = kn.placeholder(kn.int64, (16,), name="y")
        loss = F.cross_entropy(model(xs), ys)
        loss.backward()
        train = opt.step()
        run = kn.Session()
    for _ in range(3):
        run.run([loss, train], {xs: x.numpy(), ys: y.numpy()})
        eager_opt.zero_grad()
        F.cross_entropy(eager_model(x), y).backward()
        eager_opt.step()
    want = _params(eager_model)
    with kn.Graph().as_default():
        got = [p.numpy() for p in model.parameters()]
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_refusals():
    model = _model()
    opt = kn.optim.SGD(model.parameters(), lr=0.1)
    x, y = _data()

    @kn.compile
    def with_closure(x, y):
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step(lambda: loss)

    with pytest.raises(kn.KilnError, match=r"step\(closure\)") as info:
        with_closure(x, y)
    assert isinstance(info.value, RuntimeError)

    @kn.compile
    def not_scalar(x):
        model(x).backward()

    with pytest.raises(kn.AutogradError, match="implicitly created only for scalar"):
        not_scalar(x)


@pytest.mark.parametrize("form", ["backward", "minimize"])
def test_optimizer_state_goes_on_across_traces(form):
    """A new batch size traces again; Adam's moments and step count must go on from the other
    trace's (before, each trace started them again: a silent difference from eager)."""
    compiled_model, eager_model = _model(), _model()
    opt = kn.optim.Adam(compiled_model.parameters(), lr=0.01)
    eager_opt = kn.optim.Adam(eager_model.parameters(), lr=0.01)

    @kn.compile
    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(compiled_model(x), y)
        if form == "backward":
            loss.backward()
            opt.step()
        else:
            opt.minimize(loss)
        return loss

    rng = np.random.default_rng(1)
    for batch in (16, 8, 16, 8, 5, 16):
        x = kn.tensor(rng.standard_normal((batch, 4)).astype(np.float32))
        y = kn.tensor(rng.integers(0, 3, batch))
        step(x, y)
        eager_opt.zero_grad()
        F.cross_entropy(eager_model(x), y).backward()
        eager_opt.step()
    assert step.trace_count == 3
    for a, b in zip(_params(compiled_model), _params(eager_model)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    got, want = opt.state_dict()["state"], eager_opt.state_dict()["state"]
    for k in want:
        assert int(got[k]["step"]) == int(want[k]["step"]) == 6
        np.testing.assert_allclose(got[k]["exp_avg_sq"].numpy(), want[k]["exp_avg_sq"].numpy(),
                                   rtol=1e-5, atol=1e-9)  # fmt: skip


def test_gradient_clipping_in_a_compiled_step():
    """clip_grad_norm_ / clip_grad_value_ between backward and step clip the graph's gradients
    (before, they found no eager .grad and silently clipped nothing)."""
    compiled_model, eager_model = _model(), _model()
    opt = kn.optim.SGD(compiled_model.parameters(), lr=0.5)
    eager_opt = kn.optim.SGD(eager_model.parameters(), lr=0.5)
    x, y = _data()
    norms = []

    @kn.compile
    def step(x, y):
        opt.zero_grad()
        (F.cross_entropy(compiled_model(x), y) * 10).backward()
        norm = kn.nn.utils.clip_grad_norm_(compiled_model.parameters(), 0.5)
        kn.nn.utils.clip_grad_value_(compiled_model.parameters(), 0.05)
        opt.step()
        return norm

    for _ in range(3):
        norms.append(step(x, y).item())
        eager_opt.zero_grad()
        (F.cross_entropy(eager_model(x), y) * 10).backward()
        want = kn.nn.utils.clip_grad_norm_(eager_model.parameters(), 0.5).item()
        kn.nn.utils.clip_grad_value_(eager_model.parameters(), 0.05)
        eager_opt.step()
        np.testing.assert_allclose(norms[-1], want, rtol=1e-5)
    assert norms[0] > 0.5  # the clipping did something
    for a, b in zip(_params(compiled_model), _params(eager_model)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
