"""Optimizer state carries over between compiled and eager steps of the same parameters: a
Parameter stepped under kn.compile keeps its slots in the traces' Variables, and eager steps
used to start from their own (empty) state: SGD's momentum after three compiled steps, then
three eager ones, gave [[0.365, -1.135, 1.865]] where six eager steps (and torch 2.13) give
[[0.196, -1.304, 1.696]]. Expected values: six eager kiln steps, which tests/test_optim_torch.py
holds to PyTorch, and torch 2.13 itself where installed."""

import numpy as np
import pytest
from training_step import mse_step

import kiln as kn

W = np.array([[0.5, -1.0, 2.0]], np.float32)
X = np.ones((4, 3), np.float32)


def _setup(lib, make_opt):
    m = lib.nn.Linear(3, 1, bias=False)
    with lib.no_grad():
        m.weight.copy_(lib.tensor(W))
    opt = make_opt(lib, m.parameters())

    step = mse_step(m, opt)

    return m, opt, step


OPTIMIZERS = {
    "sgd-momentum": lambda lib, ps: lib.optim.SGD(ps, lr=0.1, momentum=0.9),
    "adam": lambda lib, ps: lib.optim.Adam(ps, lr=0.05),
    "adagrad": lambda lib, ps: lib.optim.Adagrad(ps, lr=0.1, initial_accumulator_value=0.1),
}


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
@pytest.mark.parametrize("order", ["ccceee", "eeeccc", "cceecc", "ececec"])
def test_compiled_and_eager_steps_continue_one_state(name, order):
    m_ref, _, eager_ref = _setup(kn, OPTIMIZERS[name])
    for _ in order:
        eager_ref(kn.tensor(X))
    m, opt, step = _setup(kn, OPTIMIZERS[name])
    compiled = kn.compile(step)
    for mode in order:
        (compiled if mode == "c" else step)(kn.tensor(X))
    np.testing.assert_allclose(m.weight.detach().numpy(), m_ref.weight.detach().numpy(),
                               rtol=1e-5, atol=1e-6)  # fmt: skip
    state = opt.state[m.weight]  # what the last step left, whichever mode took it
    if name == "sgd-momentum":  # PyTorch's SGD keeps no step count
        assert "step" not in state
    else:
        assert int(state["step"]) == len(order)


def test_compiled_then_eager_matches_torch():
    torch = pytest.importorskip("torch")
    m, _, step = _setup(kn, OPTIMIZERS["sgd-momentum"])
    compiled = kn.compile(step)
    for _ in range(3):
        compiled(kn.tensor(X))
    for _ in range(3):
        step(kn.tensor(X))
    tm, _, tstep = _setup(torch, OPTIMIZERS["sgd-momentum"])
    for _ in range(6):
        tstep(torch.tensor(X))
    np.testing.assert_allclose(m.weight.detach().numpy(), tm.weight.detach().numpy(), rtol=1e-5)


def test_state_dict_loaded_after_compiled_steps_is_where_compiled_steps_continue():
    m, opt, step = _setup(kn, OPTIMIZERS["adam"])
    compiled = kn.compile(step)
    for _ in range(2):
        compiled(kn.tensor(X))
    saved = opt.state_dict()
    weight = m.weight.detach().numpy().copy()
    for _ in range(3):  # moves on, then back to the saved point
        compiled(kn.tensor(X))
    opt.load_state_dict(saved)
    with kn.no_grad():
        m.weight.copy_(kn.tensor(weight))
    compiled(kn.tensor(X))
    m2, _, step2 = _setup(kn, OPTIMIZERS["adam"])
    for _ in range(3):
        step2(kn.tensor(X))
    np.testing.assert_allclose(m.weight.detach().numpy(), m2.weight.detach().numpy(), rtol=1e-5)
