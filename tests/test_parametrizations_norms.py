"""`kn.nn.utils.parametrizations.weight_norm` and `spectral_norm`, as torch 2.13's: the
parameters and buffers they make, values, gradients and training steps (eager, and under
kn.compile with the module called inside the compiled step), the power iteration's buffers
after each training-mode read (none in eval mode), and a hook-form weight_norm state_dict
loading into the parametrized form. Expected values: torch 2.13 running the same code, with
spectral_norm's random starting vectors copied from torch's module into kiln's."""

import numpy as np
import pytest
from training_step import mse_step

import kiln as kn

W = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], np.float32)
X = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)
TOL = dict(rtol=1e-5, atol=1e-6)


def _linear(lib, norm, **options):
    m = lib.nn.Linear(3, 2)
    with lib.no_grad():
        m.weight.copy_(lib.tensor(W))
        m.bias.fill_(0.1)
    return getattr(lib.nn.utils.parametrizations, norm)(m, **options)


def _same_start(m, tm):
    """kiln's spectral_norm vectors set to torch's (each draws its own random start)."""
    if "_u" in m.parametrizations.weight[0]._buffers:
        for name in ("_u", "_v"):
            getattr(m.parametrizations.weight[0], name).copy_(
                kn.tensor(getattr(tm.parametrizations.weight[0], name).numpy())
            )


def _train(lib, m, compiled: bool, steps: int = 3):
    opt = lib.optim.SGD(m.parameters(), lr=0.1)

    step = mse_step(m, opt)

    run = kn.compile(step) if compiled else step
    return [float(run(lib.tensor(X)).detach()) for _ in range(steps)]


CASES = [("weight_norm", {}), ("weight_norm", {"dim": None}), ("weight_norm", {"dim": 1}),
         ("spectral_norm", {}), ("spectral_norm", {"n_power_iterations": 3, "dim": 1})]  # fmt: skip


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("case", CASES, ids=[f"{n}-{o}" for n, o in CASES])
def test_norm_parametrizations_train_as_torch(case, compiled):
    torch = pytest.importorskip("torch")
    norm, options = case
    m, tm = _linear(kn, norm, **options), _linear(torch, norm, **options)
    _same_start(m, tm)
    named = lambda mod, what: [(n, tuple(v.shape)) for n, v in getattr(mod, what)()]  # noqa: E731
    for what in ("named_parameters", "named_buffers"):
        assert named(m, what) == named(tm, what)
    np.testing.assert_allclose(m.weight.detach().numpy(), tm.weight.detach().numpy(), **TOL)
    np.testing.assert_allclose(_train(kn, m, compiled), _train(torch, tm, False), **TOL)
    for (name, p), (_, tp) in zip(m.state_dict().items(), tm.state_dict().items()):
        np.testing.assert_allclose(p.numpy(), tp.numpy(), **TOL, err_msg=name)
    m.eval()
    tm.eval()
    np.testing.assert_allclose(m.weight.detach().numpy(), tm.weight.detach().numpy(), **TOL)
    for (name, p), (_, tp) in zip(m.state_dict().items(), tm.state_dict().items()):
        np.testing.assert_allclose(p.numpy(), tp.numpy(), **TOL, err_msg=name)


def test_weight_norm_loads_a_hook_form_state_dict_as_torch():
    torch = pytest.importorskip("torch")
    old = torch.nn.utils.weight_norm(torch.nn.Linear(3, 2))
    with torch.no_grad():
        old.weight_g.mul_(3)
    saved = old.state_dict()
    tm = torch.nn.utils.parametrizations.weight_norm(torch.nn.Linear(3, 2))
    tm.load_state_dict(saved)
    m = kn.nn.utils.parametrizations.weight_norm(kn.nn.Linear(3, 2))
    m.load_state_dict({k: kn.tensor(v.numpy()) for k, v in saved.items()})
    assert list(m.state_dict()) == list(tm.state_dict())
    np.testing.assert_allclose(m.weight.detach().numpy(), tm.weight.detach().numpy(), **TOL)


def test_spectral_norm_errors_and_vectors_as_torch():
    torch = pytest.importorskip("torch")
    for lib in (kn, torch):
        spectral_norm = lib.nn.utils.parametrizations.spectral_norm
        with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range"):
            spectral_norm(lib.nn.Linear(3, 2), dim=2)
        with pytest.raises(ValueError, match="Expected n_power_iterations to be positive"):
            spectral_norm(lib.nn.Linear(3, 2), n_power_iterations=0)
        vector = spectral_norm(lib.nn.Linear(3, 2), "bias")
        np.testing.assert_allclose(np.linalg.norm(vector.bias.detach().numpy()), 1.0, rtol=1e-6)
