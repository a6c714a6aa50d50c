"""Optimizers and schedulers against PyTorch itself, where it is installed: the same
parameters after the same steps, and state_dicts with the same structure."""

import numpy as np
import pytest

import kiln as kn

torch = pytest.importorskip("torch")

A = np.array([[1.0, 2.0, 0.5], [3.0, 0.1, 1.5]])
C = np.array([[0.5, -1.0, 2.0], [1.0, 0.0, -0.5]])
P0 = np.array([[1.0, 1.0, -1.0], [-2.0, 0.5, 0.3]])

OPTIMIZERS = {
    "sgd": ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.1, weight_decay=0.01)),
    "sgd-nesterov": ("SGD", dict(lr=0.05, momentum=0.8, nesterov=True)),
    "adam": ("Adam", dict(lr=0.05, weight_decay=0.1, amsgrad=True)),
    "adamw": ("AdamW", dict(lr=0.05, betas=(0.8, 0.95))),
    "rmsprop": ("RMSprop", dict(lr=0.01, momentum=0.5, centered=True, weight_decay=0.1)),
    "adagrad": ("Adagrad", dict(lr=0.1, lr_decay=0.05, initial_accumulator_value=0.1)),
}


def _run(lib, name, hyper, steps=5):
    """Two params in two groups (the second with half the lr); returns params, state_dict."""
    make = (lambda a: torch.tensor(a, requires_grad=True)) if lib is torch else (
        lambda a: kn.tensor(a, requires_grad=True))  # fmt: skip
    ps = [make(P0.copy()), make(-P0.copy())]
    opt = getattr(lib.optim, name)(
        [{"params": [ps[0]]}, {"params": [ps[1]], "lr": hyper["lr"] / 2}], **hyper
    )
    a, c = lib.tensor(A), lib.tensor(C)
    for _ in range(steps):
        opt.zero_grad()
        loss = sum(((a * (p - c) ** 2).sum() * 0.5 for p in ps), lib.tensor(0.0, dtype=ps[0].dtype))
        loss.backward()
        opt.step()
    return [p.detach().numpy().copy() for p in ps], opt.state_dict()


@pytest.mark.parametrize("case", sorted(OPTIMIZERS))
def test_optimizer_steps_and_state_dict_match_torch(case):
    name, hyper = OPTIMIZERS[case]
    want, want_sd = _run(torch, name, hyper)
    got, got_sd = _run(kn, name, hyper)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)
    assert sorted(got_sd["state"]) == sorted(want_sd["state"])
    for i, entry in want_sd["state"].items():
        have = {k for k, v in entry.items() if v is not None}
        assert have <= set(got_sd["state"][i]), (have, set(got_sd["state"][i]))
        for k in have - {"step"}:
            np.testing.assert_allclose(got_sd["state"][i][k].numpy(), entry[k].numpy(),
                                       rtol=1e-10, atol=1e-12)  # fmt: skip
        if "step" in entry:
            assert got_sd["state"][i]["step"].item() == entry["step"].item()
    for gg, wg in zip(got_sd["param_groups"], want_sd["param_groups"]):
        assert gg["params"] == wg["params"]
        for k, v in gg.items():
            assert wg[k] == v, k
