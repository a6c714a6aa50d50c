"""lr_scheduler: each schedule against its documented formula (PyTorch's docs, written out
with NumPy/math), state_dict round trips, and schedules driving graph-mode train steps."""

import math

import numpy as np
import pytest

import kiln as kn
from kiln.optim import lr_scheduler as S

BASE = [0.1, 0.02]  # two param groups


def _opt(cls=kn.optim.SGD, **kw):
    params = [kn.zeros(2, requires_grad=True), kn.zeros(3, requires_grad=True)]
    return cls([{"params": [params[0]]}, {"params": [params[1]], "lr": BASE[1]}], lr=BASE[0], **kw)


def _lrs(sched, opt, n, metrics=None):
    """get_last_lr() before each of n steps (PyTorch's loop: opt.step(), then sched.step())."""
    out = []
    for i in range(n):
        out.append(sched.get_last_lr())
        assert sched.get_last_lr() == [g["lr"] for g in opt.param_groups]
        opt.step()
        sched.step() if metrics is None else sched.step(metrics[i])
    return np.array(out)


def _formula(fn, n):
    return np.array([[fn(base, t) for base in BASE] for t in range(n)])


def _cosine(base, t, t_max=7, eta_min=0.001):
    return eta_min + (base - eta_min) * (1 + math.cos(math.pi * t / t_max)) / 2


CLOSED_FORMS = {
    "step": (lambda o: S.StepLR(o, step_size=3, gamma=0.5),
             lambda base, t: base * 0.5 ** (t // 3)),
    "multistep": (lambda o: S.MultiStepLR(o, milestones=[2, 5, 5], gamma=0.1),
                  lambda base, t: base * 0.1 ** sum(m <= t for m in [2, 5, 5])),
    "exponential": (lambda o: S.ExponentialLR(o, gamma=0.9), lambda base, t: base * 0.9**t),
    "cosine": (lambda o: S.CosineAnnealingLR(o, T_max=7, eta_min=0.001), _cosine),
    "lambda": (lambda o: S.LambdaLR(o, lambda epoch: 1 / (1 + epoch)),
               lambda base, t: base / (1 + t)),
    "linear": (lambda o: S.LinearLR(o, start_factor=0.2, end_factor=0.9, total_iters=4),
               lambda base, t: base * (0.2 + 0.7 * min(t, 4) / 4)),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(CLOSED_FORMS))
def test_schedule_follows_its_documented_formula(name):
    make, formula = CLOSED_FORMS[name]
    opt = _opt()
    sched = make(opt)
    assert sched.last_epoch == 0
    got = _lrs(sched, opt, 8)
    np.testing.assert_allclose(got, _formula(formula, 8), rtol=1e-12)
    assert sched.last_epoch == 8
    assert [g["initial_lr"] for g in opt.param_groups] == BASE


def _one_cycle_reference(total, max_lr, pct=0.3, div=25.0, final_div=1e4, base_m=0.85, max_m=0.95):
    """The 1cycle policy as documented: cosine from max_lr/div up to max_lr in pct*total - 1
    steps, then down to initial/final_div at total - 1; momentum the other way."""
    initial, end_up = max_lr / div, pct * total - 1
    lrs, moms = [], []

    def cos(start, end, frac):
        return end + (start - end) / 2 * (math.cos(math.pi * frac) + 1)

    for t in range(total):
        if t <= end_up:
            frac = t / end_up
            lrs.append(cos(initial, max_lr, frac))
            moms.append(cos(max_m, base_m, frac))
        else:
            frac = (t - end_up) / (total - 1 - end_up)
            lrs.append(cos(max_lr, initial / final_div, frac))
            moms.append(cos(base_m, max_m, frac))
    return lrs, moms


def test_one_cycle_follows_the_documented_policy_and_cycles_momentum():
    opt = _opt(momentum=0.9)
    sched = S.OneCycleLR(opt, max_lr=[1.0, 0.5], total_steps=12)
    got, moms = [], []
    for _ in range(12):
        got.append(sched.get_last_lr())
        moms.append(opt.param_groups[0]["momentum"])
        opt.step()
        sched.step() if len(got) < 12 else None
    want0, want_m = _one_cycle_reference(12, 1.0)
    want1, _ = _one_cycle_reference(12, 0.5)
    np.testing.assert_allclose(np.array(got), np.array([want0, want1]).T, rtol=1e-12)
    np.testing.assert_allclose(moms, want_m, rtol=1e-12)
    with pytest.raises(ValueError, match="Tried to step 13 times"):
        sched.step()
        sched.step()


def test_one_cycle_cycles_adams_beta1():
    opt = _opt(kn.optim.Adam, betas=(0.5, 0.99))
    S.OneCycleLR(opt, max_lr=1.0, epochs=2, steps_per_epoch=5)
    assert opt.param_groups[1]["betas"] == (0.95, 0.99)


def test_reduce_on_plateau_waits_patience_then_cools_down():
    opt = _opt()
    sched = S.ReduceLROnPlateau(opt, factor=0.5, patience=2, cooldown=1, min_lr=[0.03, 0.0])
    metrics = [5, 4, 4, 4, 4, 4, 4, 4, 4, 3.9999]
    got = _lrs(sched, opt, len(metrics), metrics)
    # Hand computation (row i: the lr before metric i): best 4 at metric 1; metrics 2, 3, 4
    # are bad, the third exceeds patience -> halved from row 5; metric 5 falls in the cooldown;
    # 6, 7, 8 bad -> halved again from row 9 (group 0 stops at its min_lr 0.03).
    want = [[0.1, 0.02]] * 5 + [[0.05, 0.01]] * 4 + [[0.03, 0.005]]
    np.testing.assert_allclose(got, want)
    assert sched.get_last_lr() == [0.03, 0.005]
    assert sched.best == 4  # 3.9999 is not better by the relative threshold 1e-4


def test_sequential_warmup_then_cosine():
    opt = _opt()
    warmup = S.LinearLR(opt, start_factor=0.1, total_iters=3)
    cosine = S.CosineAnnealingLR(opt, T_max=5)
    sched = S.SequentialLR(opt, [warmup, cosine], milestones=[3])
    got = _lrs(sched, opt, 9)
    want = [[b * (0.1 + 0.9 * t / 3) for b in BASE] for t in range(3)]
    want += [[_cosine(b, t, t_max=5, eta_min=0.0) for b in BASE] for t in range(6)]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("name", [*sorted(CLOSED_FORMS), "onecycle", "sequential", "plateau"])
def test_scheduler_state_dict_resumes_the_schedule(name):
    def make(opt):
        if name == "onecycle":
            return S.OneCycleLR(opt, max_lr=1.0, total_steps=20)
        if name == "sequential":
            parts = [S.LinearLR(opt, total_iters=2), S.StepLR(opt, step_size=2)]
            return S.SequentialLR(opt, parts, milestones=[3])
        if name == "plateau":
            return S.ReduceLROnPlateau(opt, patience=0)
        return CLOSED_FORMS[name][0](opt)

    metrics = [1.0, 2.0, 0.5, 0.6, 0.7, 0.2, 0.3, 0.3, 0.3, 0.3]
    step_with = metrics if name == "plateau" else None
    opt = _opt(momentum=0.9)
    sched = make(opt)
    _lrs(sched, opt, 4, step_with)
    opt_sd, sched_sd = opt.state_dict(), sched.state_dict()
    want = _lrs(sched, opt, 6, step_with and step_with[4:])
    opt2 = _opt(momentum=0.9)
    sched2 = make(opt2)
    opt2.load_state_dict(opt_sd)
    sched2.load_state_dict(sched_sd)
    np.testing.assert_array_equal(_lrs(sched2, opt2, 6, step_with and step_with[4:]), want)


def test_resuming_with_last_epoch_needs_initial_lr():
    with pytest.raises(KeyError, match="initial_lr"):
        S.StepLR(_opt(), step_size=2, last_epoch=3)
    with pytest.raises(TypeError, match="is not an Optimizer"):
        S.StepLR(object(), step_size=2)


def test_graph_mode_train_op_follows_the_schedule_without_recompiling():
    """A Session's train op reads the lr Variable the scheduler assigns: the same parameters
    as eager training under the same schedule."""
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((6, 3)), rng.standard_normal((6, 1))

    w0, b0 = rng.standard_normal((1, 3)), np.zeros(1)
    eager_params = [kn.tensor(w0, requires_grad=True), kn.tensor(b0, requires_grad=True)]
    opt = kn.optim.SGD(eager_params, lr=0.1, momentum=0.5)
    sched = S.StepLR(opt, step_size=2, gamma=0.3)
    xt, yt = kn.tensor(x), kn.tensor(y)
    for _ in range(5):
        opt.zero_grad()
        kn.mse_loss(xt @ eager_params[0].T + eager_params[1], yt).backward()
        opt.step()
        sched.step()

    with kn.Graph().as_default():
        w, b = kn.Variable(w0, name="w"), kn.Variable(b0, name="b")
        gopt = kn.optim.SGD([w, b], lr=0.1, momentum=0.5)
        gsched = S.StepLR(gopt, step_size=2, gamma=0.3)
        train = kn.function(
            [], gopt.minimize(kn.mse_loss(kn.constant(x) @ w.T + b, kn.constant(y)))
        )
        train()
        compiled = train.program.last
        for _ in range(4):
            gsched.step()
            train()
        assert train.program.last is compiled
    np.testing.assert_allclose(w.numpy(), eager_params[0].detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(b.numpy(), eager_params[1].detach().numpy(), rtol=1e-12)
    assert not np.allclose(w.numpy(), w0)


def test_compiled_step_follows_the_schedule():
    """Under kn.compile the traced train step reads the lr Variable: SGD on sum(w * x) moves w
    by -lr * x per call, with the scheduler's lr."""
    kn.manual_seed(0)
    lin = kn.nn.Linear(2, 1, bias=False)
    opt = kn.optim.SGD(lin.parameters(), lr=1.0)
    sched = S.ExponentialLR(opt, gamma=0.5)

    @kn.compile
    def step(x):
        loss = kn.sum(lin(x))
        opt.minimize(loss)
        return loss

    w0 = lin.weight.numpy()
    x = kn.ones(1, 2)
    for _ in range(3):
        step(x)
        sched.step()
    np.testing.assert_allclose(lin.weight.numpy(), w0 - (1.0 + 0.5 + 0.25), rtol=1e-6)
