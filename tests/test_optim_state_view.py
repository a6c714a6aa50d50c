"""`opt.state[p]` of the built-in optimizers shows PyTorch's keys, order and value types
(`momentum_buffer`, not kiln's `momentum`; `step` a 0-d float32 Tensor, absent for SGD and
Muon), and writes through it (`.zero_()`, assignment, `del`) reach the next step, eager or
kn.compile'd. Expected values: torch 2.13 running the same steps and the same writes."""

import numpy as np
import pytest
from training_step import mse_step

import kiln as kn

W = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], np.float32)
X = np.array([[1.0, 2.0, -1.0], [0.5, -0.5, 2.0], [1.0, 1.0, 1.0], [-2.0, 0.5, 0.0]], np.float32)

OPTIMIZERS = {
    "SGD": ("SGD", dict(lr=0.1)),
    "SGD-momentum": ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.5)),
    "Adam": ("Adam", dict(lr=0.05)),
    "Adam-amsgrad": ("Adam", dict(lr=0.05, amsgrad=True)),
    "AdamW": ("AdamW", dict(lr=0.05)),
    "RMSprop": ("RMSprop", dict(lr=0.01, momentum=0.9, centered=True)),
    "Adagrad": ("Adagrad", dict(lr=0.1, initial_accumulator_value=0.1)),
    "Adadelta": ("Adadelta", dict()),
    "Adamax": ("Adamax", dict()),
    "NAdam": ("NAdam", dict()),
    "RAdam": ("RAdam", dict()),
    "ASGD": ("ASGD", dict(t0=1.0)),
    "Rprop": ("Rprop", dict()),
    "Adafactor": ("Adafactor", dict()),
    "Muon": ("Muon", dict(lr=0.02)),
}
TOL = dict(rtol=2e-5, atol=1e-6)


def _setup(lib, name):
    cls, options = OPTIMIZERS[name]
    m = lib.nn.Linear(3, 2, bias=False)
    with lib.no_grad():
        m.weight.copy_(lib.tensor(W))
    opt = getattr(lib.optim, cls)(m.parameters(), **options)

    step = mse_step(m, opt)

    return m, opt, step


def _same_state(ours, theirs):
    assert list(ours) == list(theirs)
    for key, want in theirs.items():
        got = ours[key]
        assert isinstance(got, kn.Tensor), key
        assert (tuple(got.shape), str(got.dtype)) == (
            tuple(want.shape),
            str(want.dtype).replace("torch.", "kiln."),
        ), key
        np.testing.assert_allclose(got.numpy(), want.numpy(), **TOL, err_msg=key)


def _write(lib, state):
    """The same writes in either library: an in-place zero_ of the first tensor slot and an
    assignment to the second (where the optimizer keeps them), and a new step count."""
    slots = [k for k in state if k != "step" and state[k].ndim]
    if slots:
        state[slots[0]].zero_()
    if len(slots) > 1:
        state[slots[1]] = lib.full_like(state[slots[1]], 0.25)
    if "step" in state:
        state["step"] = lib.tensor(10.0)


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_state_keys_types_and_values_match_torch(name):
    torch = pytest.importorskip("torch")
    m, opt, step = _setup(kn, name)
    tm, topt, tstep = _setup(torch, name)
    for _ in range(3):
        step(kn.tensor(X))
        tstep(torch.tensor(X))
    _same_state(opt.state[m.weight], topt.state[tm.weight])
    assert len(opt.state) == len(topt.state) == 1


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_writes_through_state_reach_the_next_step(name, compiled):
    torch = pytest.importorskip("torch")
    m, opt, step = _setup(kn, name)
    run = kn.compile(step) if compiled else step
    tm, topt, tstep = _setup(torch, name)
    for _ in range(2):
        run(kn.tensor(X))
        tstep(torch.tensor(X))
    _write(kn, opt.state[m.weight])
    _write(torch, topt.state[tm.weight])
    for _ in range(2):
        run(kn.tensor(X))
        tstep(torch.tensor(X))
    np.testing.assert_allclose(m.weight.detach().numpy(), tm.weight.detach().numpy(), **TOL)
    _same_state(opt.state[m.weight], topt.state[tm.weight])


@pytest.mark.parametrize("name", ["Adam", "SGD-momentum", "Adagrad"])
def test_deleted_state_starts_afresh_as_in_torch(name):
    torch = pytest.importorskip("torch")
    m, opt, step = _setup(kn, name)
    run = kn.compile(step)
    tm, topt, tstep = _setup(torch, name)
    for _ in range(2):
        run(kn.tensor(X))
        tstep(torch.tensor(X))
    del opt.state[m.weight]
    del topt.state[tm.weight]
    assert len(opt.state) == len(topt.state) == 0
    for _ in range(2):
        run(kn.tensor(X))
        tstep(torch.tensor(X))
    np.testing.assert_allclose(m.weight.detach().numpy(), tm.weight.detach().numpy(), **TOL)
    _same_state(opt.state[m.weight], topt.state[tm.weight])


def test_held_state_tensor_follows_eager_steps():
    """PyTorch's steps update their state in place: a Tensor taken from `opt.state[p]`
    before a step holds the values after it."""
    torch = pytest.importorskip("torch")
    m, opt, step = _setup(kn, "Adam")
    tm, topt, tstep = _setup(torch, "Adam")
    step(kn.tensor(X))
    tstep(torch.tensor(X))
    held, theld = opt.state[m.weight]["exp_avg"], topt.state[tm.weight]["exp_avg"]
    step(kn.tensor(X))
    tstep(torch.tensor(X))
    np.testing.assert_allclose(held.numpy(), theld.numpy(), **TOL)
    assert held is opt.state[m.weight]["exp_avg"]


def test_reset_by_assigning_a_new_defaultdict_and_kiln_names_refused():
    torch = pytest.importorskip("torch")
    from collections import defaultdict

    m, opt, step = _setup(kn, "SGD-momentum")
    tm, topt, tstep = _setup(torch, "SGD-momentum")
    for _ in range(2):
        step(kn.tensor(X))
        tstep(torch.tensor(X))
    opt.state = defaultdict(dict)
    topt.state = defaultdict(dict)
    step(kn.tensor(X))
    tstep(torch.tensor(X))
    np.testing.assert_allclose(m.weight.detach().numpy(), tm.weight.detach().numpy(), **TOL)
    _same_state(opt.state[m.weight], topt.state[tm.weight])
    with pytest.raises(KeyError):
        opt.state[m.weight]["momentum"]  # kiln's own slot name: not PyTorch's
    with pytest.raises(KeyError):
        opt.state[m.weight]["step"]  # PyTorch's SGD keeps no step count
    with pytest.raises(kn.errors.ShapeError, match=r"shape \(3,\).*\(2, 3\)"):
        opt.state[m.weight]["momentum_buffer"] = kn.zeros(3)
