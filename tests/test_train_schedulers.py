"""The schedulers kiln had not (ConstantLR, MultiplicativeLR, PolynomialLR,
CosineAnnealingWarmRestarts, CyclicLR, ChainedScheduler) against PyTorch 2.13 (skipped
without torch): the same learning rates and momenta, exactly, over 40 steps; a state_dict
that resumes as torch's; and a compiled training step following them."""

import numpy as np
import pytest

import kiln as kn

torch = pytest.importorskip("torch")


def _S(lib):
    return lib.optim.lr_scheduler


SCHEDULES = {
    "multiplicative": lambda lib, o: _S(lib).MultiplicativeLR(o, [lambda e: 0.95, lambda e: 0.9]),
    "constant": lambda lib, o: _S(lib).ConstantLR(o, factor=0.3, total_iters=4),
    "poly": lambda lib, o: _S(lib).PolynomialLR(o, total_iters=8, power=2.0),
    "warm-restarts": lambda lib, o: _S(lib).CosineAnnealingWarmRestarts(o, T_0=3, eta_min=0.001),
    "warm-restarts-mult": lambda lib, o: _S(lib).CosineAnnealingWarmRestarts(o, T_0=2, T_mult=2),
    "cyclic": lambda lib, o: _S(lib).CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=4),
    "cyclic-2": lambda lib, o: _S(lib).CyclicLR(o, base_lr=[0.01, 0.02], max_lr=0.1, step_size_up=3,
                                            step_size_down=5, mode="triangular2"),
    "cyclic-exp": lambda lib, o: _S(lib).CyclicLR(o, 0.01, 0.1, step_size_up=2, mode="exp_range",
                                              gamma=0.9, base_momentum=0.5, max_momentum=0.7),
    "cyclic-fn": lambda lib, o: _S(lib).CyclicLR(o, 0.01, 0.1, 3, scale_fn=lambda x: 1 / (1 + x),
                                             scale_mode="iterations", cycle_momentum=False),
    "chained": lambda lib, o: _S(lib).ChainedScheduler(
        [_S(lib).ConstantLR(o, 0.5, total_iters=4), _S(lib).ExponentialLR(o, 0.9)]
    ),
}  # fmt: skip


def _optimizer(lib, name):
    ps = [lib.zeros(2, requires_grad=True) for _ in range(2)]
    extra = {"momentum": 0.9} if name == "SGD" else {}
    groups = [{"params": [ps[0]]}, {"params": [ps[1]], "lr": 0.05}]
    return getattr(lib.optim, name)(groups, lr=0.1, **extra)


def _lrs(lib, case, name, steps=40):
    opt = _optimizer(lib, name)
    sched = SCHEDULES[case](lib, opt)
    seen = []
    for _ in range(steps):
        group = opt.param_groups[0]
        momentum = group["momentum"] if name == "SGD" else group["betas"][0]
        seen.append((*sched.get_last_lr(), *(g["lr"] for g in opt.param_groups), momentum))
        opt.step()
        sched.step()
    return seen, sched


@pytest.mark.parametrize("name", ["SGD", "Adam"])
@pytest.mark.parametrize("case", sorted(SCHEDULES))
def test_new_schedulers_give_torchs_learning_rates(case, name):
    assert _lrs(kn, case, name)[0] == _lrs(torch, case, name)[0]


@pytest.mark.parametrize("case", ["poly", "warm-restarts-mult", "cyclic-2", "chained"])
def test_new_schedulers_resume_from_a_state_dict_as_torchs(case):
    """Ten steps, the state_dict into a fresh scheduler (and the lrs into a fresh
    optimizer), ten more: the learning rates torch gives the same way."""

    def run(lib):
        _, sched = _lrs(lib, case, "SGD", steps=10)
        opt = _optimizer(lib, "SGD")
        resumed = SCHEDULES[case](lib, opt)
        resumed.load_state_dict(sched.state_dict())
        for group, lr in zip(opt.param_groups, sched.get_last_lr()):
            group["lr"] = lr
        lrs = []
        for _ in range(10):
            opt.step()
            resumed.step()
            lrs.append(resumed.get_last_lr())
        return lrs

    assert run(kn) == run(torch)


def test_warm_restarts_with_fractional_epochs_as_torch():
    """`step(epoch + i / iters)` per batch, as torch documents for SGDR."""

    def run(lib):
        opt = _optimizer(lib, "SGD")
        sched = _S(lib).CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=3, eta_min=0.01)
        lrs = []
        for epoch in range(9):
            for i in range(4):
                opt.step()
                sched.step(epoch + i / 4)
                lrs.append(sched.get_last_lr())
        return lrs

    assert run(kn) == run(torch)


def test_compiled_step_follows_cyclic_lr_and_momentum():
    """CyclicLR changes lr and momentum each step; a compiled SGD step reads both from
    Variables (one trace) and gives torch's weights."""
    rng = np.random.default_rng(0)
    x, y, w = (rng.standard_normal(s).astype(np.float32) for s in ((6, 4), (6, 3), (3, 4)))

    def run(lib, compiled):
        m = lib.nn.Linear(4, 3, bias=False)
        with torch.no_grad() if lib is torch else kn.no_grad():
            m.weight.copy_(lib.tensor(w))
        opt = lib.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
        sched = _S(lib).CyclicLR(opt, 0.01, 0.2, step_size_up=3)

        def step(xb, yb):
            opt.zero_grad()
            ((m(xb) - yb) ** 2).mean().backward()
            opt.step()

        step = kn.compile(step) if compiled else step
        for _ in range(8):
            step(lib.tensor(x), lib.tensor(y))
            sched.step()
        return m.weight.detach().numpy(), getattr(step, "cache", [None])

    want, _ = run(torch, False)
    got, cache = run(kn, True)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    assert len(cache) == 1
