"""The training toolkit against PyTorch 2.13 (skipped without torch): optimizers whose group
options change between compiled steps, optimizer state_dict layouts, and gradient clipping
with every norm order. Every expected value is torch's, run on the same data."""

import numpy as np
import pytest

import kiln as kn

torch = pytest.importorskip("torch")

rng = np.random.default_rng(0)
X = rng.standard_normal((6, 4)).astype(np.float32)
Y = rng.standard_normal((6, 3)).astype(np.float32)
W = rng.standard_normal((3, 4)).astype(np.float32)
W2 = rng.standard_normal((3, 3)).astype(np.float32)


def _linear(lib, w):
    m = lib.nn.Linear(w.shape[1], w.shape[0], bias=False)
    with torch.no_grad() if lib is torch else kn.no_grad():
        m.weight.copy_(lib.tensor(w))
    return m


# -- group options changed between compiled steps ---------------------------------------------

CHANGES = [
    ("SGD", dict(lr=0.1, momentum=0.9), dict(weight_decay=0.5)),
    ("SGD", dict(lr=0.1, momentum=0.9), dict(nesterov=True)),
    ("SGD", dict(lr=0.1, momentum=0.9), dict(dampening=0.5)),
    ("SGD", dict(lr=0.1), dict(maximize=True)),
    ("SGD", dict(lr=0.1), dict(momentum=0.8)),
    ("Adam", dict(lr=0.1), dict(eps=1.0)),
    ("Adam", dict(lr=0.1), dict(weight_decay=0.5)),
    ("AdamW", dict(lr=0.1), dict(weight_decay=0.3)),
    ("RMSprop", dict(lr=0.1), dict(alpha=0.5, eps=0.1)),
    ("Adagrad", dict(lr=0.1), dict(lr_decay=0.5)),
]


def _changed_run(lib, name, hyper, change, compiled):
    """Six steps; before the fourth, `change` is set in the group (as a user's weight-decay
    schedule would); the weights after."""
    m = _linear(lib, W)
    opt = getattr(lib.optim, name)(m.parameters(), **hyper)

    def step(x, y):
        opt.zero_grad()
        loss = ((m(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        return loss

    step = kn.compile(step) if compiled else step
    x, y = lib.tensor(X), lib.tensor(Y)
    for i in range(6):
        if i == 3:
            opt.param_groups[0].update(change)
        step(x, y)
    return m.weight.detach().numpy().copy()


@pytest.mark.filterwarnings("ignore:momentum was 0")
@pytest.mark.parametrize("name, hyper, change", CHANGES, ids=lambda v: str(v))
def test_compiled_step_follows_group_options_changed_between_calls(name, hyper, change):
    """kn.compile retraces when an option its step baked in changes; it used to keep the
    old value silently (only lr, momentum and betas are read from Variables)."""
    want = _changed_run(torch, name, hyper, change, False)
    np.testing.assert_allclose(_changed_run(kn, name, hyper, change, False), want, rtol=1e-5)
    np.testing.assert_allclose(_changed_run(kn, name, hyper, change, True), want, rtol=1e-5)


def _added_group_run(lib, compiled):
    a, b = _linear(lib, W), _linear(lib, W2)
    opt = lib.optim.SGD(a.parameters(), lr=0.1, momentum=0.5)

    def step(x, y):
        opt.zero_grad()
        loss = ((b(a(x)) - y) ** 2).mean()
        loss.backward()
        opt.step()
        return loss

    step = kn.compile(step) if compiled else step
    x, y = lib.tensor(X), lib.tensor(Y)
    for i in range(5):
        if i == 2:
            opt.add_param_group({"params": b.parameters(), "lr": 0.05})
        step(x, y)
    return [m.weight.detach().numpy().copy() for m in (a, b)]


@pytest.mark.parametrize("compiled", [False, True])
def test_param_group_added_between_compiled_steps_is_stepped(compiled):
    """A group added by add_param_group after the first compiled call takes steps from then
    on, as in torch (the old trace did not know its parameters)."""
    for got, want in zip(_added_group_run(kn, compiled), _added_group_run(torch, False)):
        np.testing.assert_allclose(got, want, rtol=1e-5)


def test_scheduled_lr_and_momentum_do_not_retrace():
    """lr, momentum and betas are read from Variables: a schedule changing them every step
    keeps one trace."""
    m = _linear(kn, W)
    opt = kn.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    sched = kn.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.5, total_steps=10)

    @kn.compile
    def step(x, y):
        opt.zero_grad()
        loss = ((m(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        return loss

    for _ in range(5):
        step(kn.tensor(X), kn.tensor(Y))
        sched.step()
    assert len(step.cache) == 1


# -- state_dict layout ------------------------------------------------------------------------

LAYOUTS = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.5)),
    ("Adam", dict(lr=0.1, amsgrad=True)),
    ("AdamW", dict(lr=0.1)),
    ("RMSprop", dict(lr=0.1, momentum=0.5, centered=True)),
    ("RMSprop", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.1, initial_accumulator_value=0.25)),
]


def _layout_run(lib, name, hyper, steps):
    """Three parameters, the last never used by the loss (its grad stays None)."""
    a, b = _linear(lib, W), _linear(lib, W2)
    unused = lib.nn.Parameter(lib.ones(2))
    opt = getattr(lib.optim, name)([*a.parameters(), *b.parameters(), unused], **hyper)
    for _ in range(steps):
        opt.zero_grad()
        ((b(a(lib.tensor(X))) - lib.tensor(Y)) ** 2).mean().backward()
        opt.step()
    return opt.state_dict()["state"]


@pytest.mark.parametrize("steps", [0, 2])
@pytest.mark.parametrize("name, hyper", LAYOUTS, ids=lambda v: str(v))
def test_optimizer_state_dict_layout_is_torchs(name, hyper, steps):
    """The same entries, keys in the same order, dtypes and values: SGD keeps no step
    count (and no entry without momentum); Adagrad has an entry for every parameter from
    the start; RMSprop's momentum_buffer comes before grad_avg."""
    want = _layout_run(torch, name, hyper, steps)
    got = _layout_run(kn, name, hyper, steps)
    assert list(got) == list(want)
    for index, entry in want.items():
        assert list(got[index]) == list(entry), index
        for key, value in entry.items():
            assert str(got[index][key].dtype) == str(value.dtype).replace("torch.", "kiln.")
            scale = float(value.abs().max()) if value.numel() else 0.0
            np.testing.assert_allclose(got[index][key].numpy(), value.numpy(), rtol=1e-5,
                                       atol=1e-6 * scale)  # fmt: skip


def _steps(lib, m, opt, n):
    for _ in range(n):
        opt.zero_grad()
        ((m(lib.tensor(X)) - lib.tensor(Y)) ** 2).mean().backward()
        opt.step()


def _convert(sd, lib):
    """A state_dict with its tensors made by `lib` (a checkpoint moved between them)."""
    move = lambda v: lib.tensor(v.numpy()) if hasattr(v, "numpy") else v  # noqa: E731
    state = {i: {k: move(v) for k, v in entry.items()} for i, entry in sd["state"].items()}
    return {"state": state, "param_groups": [dict(g) for g in sd["param_groups"]]}


@pytest.mark.parametrize("source", ["torch", "kiln"])
@pytest.mark.parametrize(
    "name, hyper",
    [("SGD", dict(lr=0.1, momentum=0.9, dampening=0.5)), ("Adam", dict(lr=0.1, amsgrad=True)),
     ("RMSprop", dict(lr=0.1, momentum=0.5, centered=True)),
     ("Adagrad", dict(lr=0.1, lr_decay=0.1))],
    ids=lambda v: str(v),
)  # fmt: skip
def test_a_state_dict_moved_between_torch_and_kiln_resumes_the_same_trajectory(name, hyper, source):
    """Three steps in one library, its state_dict (and weights) loaded into the other, three
    more steps in both: the same weights."""
    mt, mk = _linear(torch, W), _linear(kn, W)
    ot, ok = (
        getattr(lib.optim, name)(m.parameters(), **hyper) for lib, m in ((torch, mt), (kn, mk))
    )
    if source == "torch":
        _steps(torch, mt, ot, 3)
        ok.load_state_dict(_convert(ot.state_dict(), kn))
        with kn.no_grad():
            mk.weight.copy_(kn.tensor(mt.weight.detach().numpy()))
    else:
        _steps(kn, mk, ok, 3)
        ot.load_state_dict(_convert(ok.state_dict(), torch))
        with torch.no_grad():
            mt.weight.copy_(torch.tensor(mk.weight.detach().numpy()))
    _steps(torch, mt, ot, 3)
    _steps(kn, mk, ok, 3)
    np.testing.assert_allclose(mk.weight.detach().numpy(), mt.weight.detach().numpy(), rtol=1e-5)


# -- Adadelta, Adamax, RAdam; Adam's decoupled_weight_decay -------------------------------------

NEW_OPTIMIZERS = [
    ("Adadelta", dict(lr=1.0)),
    ("Adadelta", dict(lr=0.5, rho=0.5, eps=1e-3, weight_decay=0.1, maximize=True)),
    ("Adamax", dict(lr=0.01)),
    ("Adamax", dict(lr=0.01, betas=(0.5, 0.9), weight_decay=0.1, maximize=True, eps=1e-3)),
    ("RAdam", dict(lr=0.01)),  # rho_t passes 5 at the 6th step: both branches
    ("RAdam", dict(lr=0.01, weight_decay=0.1)),
    ("RAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True, betas=(0.8, 0.9))),
    ("RAdam", dict(lr=0.01, maximize=True)),
    ("Adam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),  # torch 2.13's flag
    ("AdamW", dict(lr=0.01, weight_decay=0.1, amsgrad=True)),
]


def _trajectory(lib, name, hyper, mode):
    """Ten float64 steps of a two-layer model, two groups (the second at a third of the
    lr); mode: "eager", "compile" (backward and step inside) or "minimize"."""
    a, b = _linear(lib, W).double(), _linear(lib, W2).double()
    lr2 = hyper["lr"] / 3
    opt = getattr(lib.optim, name)(
        [{"params": a.parameters()}, {"params": b.parameters(), "lr": lr2}], **hyper
    )

    def step(x, y):
        opt.zero_grad()
        loss = ((b(a(x)) - y) ** 2).mean()
        if mode == "minimize":
            opt.minimize(loss)
        else:
            loss.backward()
            opt.step()
        return loss

    step = step if mode == "eager" else kn.compile(step)
    x, y = lib.tensor(X.astype(np.float64)), lib.tensor(Y.astype(np.float64))
    for _ in range(10):
        step(x, y)
    return [m.weight.detach().numpy().copy() for m in (a, b)], opt.state_dict()


@pytest.mark.parametrize("mode", ["eager", "compile", "minimize"])
@pytest.mark.parametrize("name, hyper", NEW_OPTIMIZERS, ids=lambda v: str(v))
def test_new_optimizers_follow_torchs_trajectory(name, hyper, mode):
    """The weights and every state slot after ten steps, as torch's (float64)."""
    want, want_sd = _trajectory(torch, name, hyper, "eager")
    got, got_sd = _trajectory(kn, name, hyper, mode)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-11, atol=1e-13)
    assert list(got_sd["state"]) == list(want_sd["state"])
    for index, entry in want_sd["state"].items():
        assert list(got_sd["state"][index]) == list(entry)
        for key, value in entry.items():
            np.testing.assert_allclose(got_sd["state"][index][key].numpy(), value.numpy(),
                                       rtol=1e-11, atol=1e-13)  # fmt: skip
    for got_group, want_group in zip(got_sd["param_groups"], want_sd["param_groups"]):
        assert {k: v for k, v in want_group.items() if k in got_group} == got_group
