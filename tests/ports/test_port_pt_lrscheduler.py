"""PyTorch's scheduler tests (test/optim/test_lrscheduler.py) as an oracle: each scheduler
kiln has, on an optimizer of two param groups, for 30 epochs of `opt.step(); sched.step()`:
the same learning rates (get_last_lr() and the groups' lr, exactly as Python floats within
1e-12), the same cycled momenta, the same state_dict() and the same lrs after a state_dict
round trip; the composite schedulers, ReduceLROnPlateau on a fixed loss curve, fractional
epochs, and the warnings and exception types torch gives.

Expected values: torch 2.13 (the oracle).
"""

import math
import types
import warnings

import pytest
from pt_optim_common import params

import kiln as kn

torch = pytest.importorskip("torch")


def _optimizer(lib, name="SGD", **options):
    ps = params(lib)
    options.setdefault("lr", 0.1)
    groups = [{"params": [ps[0]]}, {"params": [ps[1]], "lr": options["lr"] * 2}]
    return getattr(lib.optim, name)(groups, **options)


def _lrs(opt, sched):
    return list(sched.get_last_lr()) + [g["lr"] for g in opt.param_groups]


SCHEDULES = {
    "StepLR": [dict(step_size=3), dict(step_size=4, gamma=0.5)],
    "MultiStepLR": [dict(milestones=[2, 5, 5, 9], gamma=0.3)],
    "ExponentialLR": [dict(gamma=0.9)],
    "CosineAnnealingLR": [dict(T_max=10), dict(T_max=7, eta_min=0.01)],
    "CosineAnnealingWarmRestarts": [dict(T_0=5), dict(T_0=3, T_mult=2, eta_min=0.001)],
    "OneCycleLR": [dict(max_lr=1.0, total_steps=31),
                   dict(max_lr=[1.0, 0.5], total_steps=31, anneal_strategy="linear",
                        three_phase=True),
                   dict(max_lr=0.5, epochs=3, steps_per_epoch=11, pct_start=0.4, div_factor=10,
                        final_div_factor=100)],
    "CyclicLR": [dict(base_lr=0.01, max_lr=0.1, step_size_up=4),
                 dict(base_lr=0.01, max_lr=0.1, step_size_up=3, step_size_down=5,
                      mode="triangular2"),
                 dict(base_lr=0.01, max_lr=0.1, step_size_up=3, mode="exp_range", gamma=0.9)],
    "LambdaLR": [dict(lr_lambda=lambda e: 0.95**e),
                 dict(lr_lambda=[lambda e: 1 / (e + 1), lambda e: 0.5])],
    "MultiplicativeLR": [dict(lr_lambda=lambda e: 0.9)],
    "LinearLR": [dict(), dict(start_factor=0.5, end_factor=0.1, total_iters=10)],
    "ConstantLR": [dict(), dict(factor=0.5, total_iters=4)],
    "PolynomialLR": [dict(), dict(total_iters=10, power=2.0)],
}  # fmt: skip
CASES = [pytest.param(n, i, id=f"{n}-{i}") for n in SCHEDULES for i in range(len(SCHEDULES[n]))]
MOMENTUM = {"CyclicLR", "OneCycleLR"}  # they cycle the momentum: an SGD with momentum


def _assert_floats(got, want):
    assert len(got) == len(want)
    for epoch, (g, w) in enumerate(zip(got, want)):
        assert len(g) == len(w), epoch
        for a, b in zip(g, w):
            assert type(a) is type(b) and math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-15), (
                epoch, g, w)  # fmt: skip


def _quiet(run, lib):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return run(lib)


def _same(run):
    _assert_floats(_quiet(run, kn), _quiet(run, torch))


def _run(name, index, epochs=30):
    def run(lib):
        options = dict(momentum=0.9) if name in MOMENTUM else {}
        opt = _optimizer(lib, **options)
        sched = getattr(lib.optim.lr_scheduler, name)(opt, **SCHEDULES[name][index])
        out = [_lrs(opt, sched) + [g.get("momentum", 0.0) for g in opt.param_groups]]
        for _ in range(epochs):
            opt.step()
            sched.step()
            out.append(_lrs(opt, sched) + [g.get("momentum", 0.0) for g in opt.param_groups])
        return out, sched

    return run


@pytest.mark.parametrize("name, index", CASES)
def test_lrs_over_30_epochs_are_torchs(name, index):
    _same(lambda lib: _run(name, index)(lib)[0])


_CALLABLES = {"lr_lambdas", "_scale_fn_ref", "_scale_fn_custom", "scale_fn"}


@pytest.mark.parametrize("name, index", CASES)
def test_state_dict_is_torchs(name, index):
    want = _quiet(lambda lib: _run(name, index, 7)(lib)[1], torch).state_dict()
    got = _quiet(lambda lib: _run(name, index, 7)(lib)[1], kn).state_dict()
    assert sorted(got) == sorted(want)
    for key in set(want) - _CALLABLES:
        a, b = got[key], want[key]
        if isinstance(b, float):
            assert type(a) is float and math.isclose(a, b, rel_tol=1e-12), key
        else:
            assert a == b and type(a) is type(b), (key, a, b)


RESUMED = {
    "StepLR": dict(step_size=3),
    "CosineAnnealingLR": dict(T_max=5),
    "CosineAnnealingWarmRestarts": dict(T_0=3, T_mult=2),
    "OneCycleLR": dict(max_lr=1.0, total_steps=20),
    "CyclicLR": dict(base_lr=0.01, max_lr=0.1, step_size_up=3, mode="triangular2"),
    "LinearLR": dict(),
    "PolynomialLR": dict(total_iters=10),
}


@pytest.mark.parametrize("name", sorted(RESUMED))
def test_state_dict_round_trip_resumes_torchs_lrs(name):
    def run(lib):
        S = lib.optim.lr_scheduler
        opt = _optimizer(lib, momentum=0.9)
        sched = getattr(S, name)(opt, **RESUMED[name])
        for _ in range(7):
            opt.step()
            sched.step()
        opt2 = _optimizer(lib, momentum=0.9)
        sched2 = getattr(S, name)(opt2, **RESUMED[name])
        opt2.load_state_dict(opt.state_dict())
        sched2.load_state_dict(sched.state_dict())
        out = []
        for _ in range(8):
            opt2.step()
            sched2.step()
            out.append(_lrs(opt2, sched2))
        return out

    _same(run)


# -- composites, plateau, epochs given to step() --------------------------------------------


def test_sequential_lr():
    def run(lib):
        S, opt = lib.optim.lr_scheduler, _optimizer(lib)
        parts = [S.LinearLR(opt, start_factor=0.1, total_iters=4), S.ExponentialLR(opt, 0.9),
                 S.StepLR(opt, 3, 0.5)]  # fmt: skip
        sched = S.SequentialLR(opt, parts, milestones=[5, 12])
        out = []
        for _ in range(30):
            opt.step()
            sched.step()
            out.append(_lrs(opt, sched))
        return out

    _same(run)


def test_chained_scheduler():
    def run(lib):
        S, opt = lib.optim.lr_scheduler, _optimizer(lib)
        parts = [S.ConstantLR(opt, factor=0.3, total_iters=5), S.ExponentialLR(opt, gamma=0.9),
                 S.MultiStepLR(opt, [3, 8])]  # fmt: skip
        sched = S.ChainedScheduler(parts)
        out = []
        for _ in range(30):
            opt.step()
            sched.step()
            out.append(_lrs(opt, sched))
        return out

    _same(run)


LOSSES = [5, 4, 4, 4, 4, 3.99, 3.999, 4, 4, 4, 4, 4, 2, 2, 2, 2, 2, 2, 2, 2, 2.1, 2.2, 2.3, 2,
          2, 2, 1, 1, 1, 1]  # fmt: skip
PLATEAUS = [dict(), dict(patience=2), dict(mode="max", factor=0.5, patience=1),
            dict(threshold_mode="abs", threshold=0.1, patience=1, cooldown=2),
            dict(min_lr=[0.05, 0.01], patience=0, factor=0.5),
            dict(patience=1, eps=0.05, factor=0.1, min_lr=0.0009)]  # fmt: skip


@pytest.mark.parametrize("options", PLATEAUS, ids=str)
def test_reduce_lr_on_plateau(options):
    def run(lib):
        opt = _optimizer(lib)
        sched = lib.optim.lr_scheduler.ReduceLROnPlateau(opt, **options)
        out = []
        for loss in LOSSES:
            opt.step()
            sched.step(loss)
            out.append(_lrs(opt, sched) + [float(sched.num_bad_epochs)])
        return out

    _same(run)


def test_warm_restarts_at_fractional_epochs():
    def run(lib):
        opt = _optimizer(lib)
        sched = lib.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, 3, 2)
        out = []
        for epoch in [0.5, 1.7, 3.2, 9.9, 10.0, 21.5]:
            opt.step()
            sched.step(epoch)
            out.append(_lrs(opt, sched))
        return out

    _same(run)


@pytest.mark.parametrize("name", ["CyclicLR", "OneCycleLR"])
def test_adams_beta1_is_the_cycled_momentum(name):
    def run(lib):
        opt = _optimizer(lib, "Adam")
        S = lib.optim.lr_scheduler
        sched = (S.CyclicLR(opt, 0.01, 0.1, step_size_up=3) if name == "CyclicLR"
                 else S.OneCycleLR(opt, 0.5, total_steps=12))  # fmt: skip
        out = []
        for _ in range(11):
            opt.step()
            sched.step()
            out.append(_lrs(opt, sched) + [g["betas"][0] for g in opt.param_groups])
        return out

    _same(run)


def test_last_epoch_resumes_from_initial_lr():
    def run(lib):
        opt = _optimizer(lib)
        for group in opt.param_groups:
            group["initial_lr"] = group["lr"]
        sched = lib.optim.lr_scheduler.StepLR(opt, 2, last_epoch=3)
        out = [_lrs(opt, sched)]
        for _ in range(5):
            opt.step()
            sched.step()
            out.append(_lrs(opt, sched))
        return out

    _same(run)


# -- warnings and errors ------------------------------------------------------------------------


def _warnings(run, lib):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run(lib)
    return [(w.category, str(w.message)[:30]) for w in caught]


def _step_before_optimizer(lib):
    opt = _optimizer(lib)
    lib.optim.lr_scheduler.StepLR(opt, 2).step()


def _get_lr_outside_step(lib):
    opt = _optimizer(lib)
    sched = lib.optim.lr_scheduler.StepLR(opt, 2)
    opt.step()
    sched.step()
    sched.get_lr()


def _step_with_epoch(lib):
    opt = _optimizer(lib)
    sched = lib.optim.lr_scheduler.StepLR(opt, 2)
    opt.step()
    sched.step(5)


def _in_order(lib):
    opt = _optimizer(lib)
    sched = lib.optim.lr_scheduler.StepLR(opt, 2)
    for _ in range(3):
        opt.step()
        sched.step()


@pytest.mark.parametrize(
    "run", [_step_before_optimizer, _get_lr_outside_step, _step_with_epoch, _in_order]
)
def test_warnings_are_torchs(run):
    """Which calls warn (UserWarning), and which do not: the categories and the start of
    the message (torch's `lr_scheduler.step()` before `optimizer.step()` and the others)."""
    got, want = _warnings(run, kn), _warnings(run, torch)
    assert [c for c, _ in got] == [c for c, _ in want]
    assert [m[:20] for _, m in got] == [m[:20] for _, m in want]


BAD = [
    ("LinearLR", dict(start_factor=0)), ("LinearLR", dict(start_factor=2)),
    ("LinearLR", dict(end_factor=-1)), ("ConstantLR", dict(factor=2)),
    ("OneCycleLR", dict(max_lr=1.0)), ("OneCycleLR", dict(max_lr=1.0, total_steps=-1)),
    ("OneCycleLR", dict(max_lr=1.0, total_steps=10, pct_start=1.5)),
    ("OneCycleLR", dict(max_lr=1.0, total_steps=10, anneal_strategy="x")),
    ("OneCycleLR", dict(max_lr=[1.0], total_steps=10)),
    ("CosineAnnealingWarmRestarts", dict(T_0=0)),
    ("CosineAnnealingWarmRestarts", dict(T_0=2, T_mult=0)),
    ("CosineAnnealingWarmRestarts", dict(T_0=2.5)),
    ("CyclicLR", dict(base_lr=0.01, max_lr=0.1, mode="foo")),
    ("ReduceLROnPlateau", dict(factor=1.0)), ("ReduceLROnPlateau", dict(mode="foo")),
    ("ReduceLROnPlateau", dict(threshold_mode="foo")), ("ReduceLROnPlateau", dict(min_lr=[0.1])),
    ("LambdaLR", dict(lr_lambda=[lambda e: 1])),
    ("SequentialLR", dict(schedulers=[], milestones=[])),
]  # fmt: skip


@pytest.mark.parametrize("name, options", BAD, ids=[f"{n}-{o}" for n, o in BAD])
def test_bad_arguments_raise_torchs_type(name, options):
    errors = []
    for lib in (torch, kn):
        opt = _optimizer(lib, momentum=0.9)
        try:
            getattr(lib.optim.lr_scheduler, name)(opt, **options)
            errors.append(None)
        except Exception as error:  # noqa: BLE001 -- the exception is the result compared
            errors.append(error)
    want, got = errors
    assert want is not None
    assert isinstance(got, type(want)), (want, got)


def test_cyclic_lr_needs_momentum_to_cycle_it():
    for lib in (torch, kn):
        opt = _optimizer(lib, "Adagrad")  # neither momentum nor betas
        with pytest.raises(ValueError, match="momentum"):
            lib.optim.lr_scheduler.CyclicLR(opt, 0.01, 0.1)


def test_one_cycle_stepped_past_its_total_raises_as_torch():
    for lib in (torch, kn):
        opt = _optimizer(lib, momentum=0.9)
        sched = lib.optim.lr_scheduler.OneCycleLR(opt, 1.0, total_steps=3)
        with pytest.raises(ValueError, match="total"):
            for _ in range(5):
                opt.step()
                sched.step()


def test_a_non_optimizer_is_refused_with_torchs_type():
    with pytest.raises(TypeError):
        torch.optim.lr_scheduler.StepLR(object(), 2)
    with pytest.raises(TypeError):
        kn.optim.lr_scheduler.StepLR(object(), 2)


# -- an lr given as a tensor ------------------------------------------------------------------


@pytest.mark.parametrize(
    "make",
    [
        lambda S, opt: S.StepLR(opt, 2, 0.5),
        lambda S, opt: S.OneCycleLR(opt, 0.5, total_steps=8),
        lambda S, opt: S.CyclicLR(opt, 0.01, 0.1, step_size_up=2),
    ],
    ids=["step", "one-cycle", "cyclic"],
)
def test_a_tensor_lr_is_written_in_place(make):
    """torch's schedulers fill the group's lr tensor (a step that holds it follows), and
    keep copies in get_last_lr() and the base lrs (kiln's replaced the tensor)."""

    def run(lib):
        ps = params(lib)
        lr = lib.tensor(0.1)
        opt = lib.optim.SGD(ps, lr=lr, momentum=0.9)
        sched = make(lib.optim.lr_scheduler, opt)
        out = []
        for _ in range(5):
            opt.step()
            last = sched.get_last_lr()[0]
            sched.step()
            group = opt.param_groups[0]
            out.append([float(lr), float(last), float(sched.base_lrs[0]),
                        float(group["initial_lr"]), float(group["lr"] is lr),
                        float(last is lr)])  # fmt: skip
        return out

    _same(run)


def _step_overridden_after(lib):
    opt = _optimizer(lib)
    sched = lib.optim.lr_scheduler.StepLR(opt, 2)
    own = opt.step
    opt.step = lambda *args, **kwargs: own(*args, **kwargs)
    opt.step()
    sched.step()


def _step_overridden_before(lib):
    opt = _optimizer(lib)
    own = opt.step  # (a bound method: torch wraps its __func__)
    opt.step = types.MethodType(lambda self, *args, **kwargs: own(*args, **kwargs), opt)
    sched = lib.optim.lr_scheduler.StepLR(opt, 2)
    opt.step()
    sched.step()


@pytest.mark.parametrize("run", [_step_overridden_after, _step_overridden_before])
def test_optimizer_step_overridden_warns_as_torch(run):
    """torch warns when `optimizer.step` was replaced after the scheduler was made (kiln
    did not), and not when it was replaced before."""
    got, want = _warnings(run, kn), _warnings(run, torch)
    assert [c for c, _ in got] == [c for c, _ in want]
    assert [m[:20] for _, m in got] == [m[:20] for _, m in want]
