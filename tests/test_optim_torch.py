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
    "sgd-maximize": ("SGD", dict(lr=0.01, momentum=0.5, maximize=True)),
    "adamw-maximize": ("AdamW", dict(lr=0.01, maximize=True)),
    "rmsprop-maximize": ("RMSprop", dict(lr=0.01, maximize=True)),
    "adagrad-maximize": ("Adagrad", dict(lr=0.01, maximize=True)),
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


def _schedulers(lib, opt):
    S = lib.optim.lr_scheduler
    return {
        "step": lambda: S.StepLR(opt, step_size=3, gamma=0.5),
        "multistep": lambda: S.MultiStepLR(opt, milestones=[2, 5, 5], gamma=0.3),
        "exponential": lambda: S.ExponentialLR(opt, gamma=0.9),
        "cosine": lambda: S.CosineAnnealingLR(opt, T_max=4, eta_min=0.001),
        "lambda": lambda: S.LambdaLR(opt, [lambda e: 0.9**e, lambda e: 1 / (1 + e)]),
        "linear": lambda: S.LinearLR(opt, start_factor=0.2, total_iters=4),
        "onecycle": lambda: S.OneCycleLR(opt, max_lr=[1.0, 0.3], total_steps=13, pct_start=0.25),
        "onecycle-3-linear": lambda: S.OneCycleLR(
            opt, max_lr=1.0, total_steps=13, three_phase=True, anneal_strategy="linear"
        ),
        "sequential": lambda: S.SequentialLR(
            opt,
            [S.LinearLR(opt, start_factor=0.5, total_iters=3), S.CosineAnnealingLR(opt, T_max=5)],
            milestones=[4],
        ),  # fmt: skip
        "plateau": lambda: S.ReduceLROnPlateau(opt, factor=0.5, patience=1, cooldown=1),
    }


METRICS = [3.0, 2.0, 2.0, 2.5, 2.0, 1.0, 1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.5]


def _schedule(lib, name, optimizer="SGD"):
    make = (lambda: torch.zeros(2, requires_grad=True)) if lib is torch else (
        lambda: kn.zeros(2, requires_grad=True))  # fmt: skip
    opt = getattr(lib.optim, optimizer)(
        [{"params": [make()]}, {"params": [make()], "lr": 0.05}], lr=0.1,
        **({"momentum": 0.9} if optimizer == "SGD" else {}),
    )  # fmt: skip
    sched = _schedulers(lib, opt)[name]()
    lrs, momenta = [], []
    for metric in METRICS[:12]:
        lrs.append(list(sched.get_last_lr()))
        group = opt.param_groups[0]
        momenta.append(group["momentum"] if "momentum" in group else group["betas"][0])
        opt.step()
        sched.step(metric) if name == "plateau" else sched.step()
    return lrs, momenta


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("optimizer", ["SGD", "Adam"])
@pytest.mark.parametrize("name", sorted(_schedulers(kn, None)))
def test_schedule_equals_torch(name, optimizer):
    """The same learning rates (and cycled momenta) as PyTorch's, exactly."""
    assert _schedule(kn, name, optimizer) == _schedule(torch, name, optimizer)


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("name", ["step", "cosine", "exponential", "linear", "multistep"])
def test_a_scheduler_made_with_last_epoch_resumes_as_torchs(name):
    """`Scheduler(opt, ..., last_epoch=k)` after 'initial_lr' is in the groups (the resume
    idiom of older scripts): the same learning rates as PyTorch's from there on."""

    def run(lib):
        p = (torch.zeros(2, requires_grad=True) if lib is torch
             else kn.zeros(2, requires_grad=True))  # fmt: skip
        opt = lib.optim.SGD([p], lr=0.1)
        for group in opt.param_groups:
            group["initial_lr"] = 0.1
        S = lib.optim.lr_scheduler
        sched = {
            "step": lambda: S.StepLR(opt, step_size=3, gamma=0.5, last_epoch=4),
            "cosine": lambda: S.CosineAnnealingLR(opt, T_max=6, eta_min=0.01, last_epoch=2),
            "exponential": lambda: S.ExponentialLR(opt, gamma=0.9, last_epoch=3),
            "linear": lambda: S.LinearLR(opt, start_factor=0.2, total_iters=6, last_epoch=2),
            "multistep": lambda: S.MultiStepLR(opt, milestones=[5, 7], last_epoch=4),
        }[name]()
        lrs = []
        for _ in range(6):
            lrs.append(sched.get_last_lr()[0])
            opt.step()
            sched.step()
        return lrs, sched.last_epoch

    assert run(kn) == run(torch)
