"""kn.optim.swa_utils (AveragedModel, SWALR, update_bn and the averaging functions) and the
scheduler details of PyTorch's LRScheduler (its warnings, `_get_lr_called_within_step` in the
state_dict, `Optimizer.profile_hook_step`), against PyTorch 2.13 (skipped without torch):
every expected value is torch's, on the same weights and data."""

import warnings

import numpy as np
import pytest

import kiln as kn

torch = pytest.importorskip("torch")

rng = np.random.default_rng(1)
W = rng.standard_normal((3, 4)).astype(np.float32)
B = rng.standard_normal(3).astype(np.float32)
XS = [rng.standard_normal((5, 4)).astype(np.float32) for _ in range(4)]
YS = [rng.standard_normal((5, 3)).astype(np.float32) for _ in range(4)]


def _model(lib):
    """Linear(4, 3) with fixed weights, then BatchNorm1d(3) (running statistics)."""
    model = lib.nn.Sequential(lib.nn.Linear(4, 3), lib.nn.BatchNorm1d(3))
    with torch.no_grad() if lib is torch else kn.no_grad():
        model[0].weight.copy_(lib.tensor(W))
        model[0].bias.copy_(lib.tensor(B))
    return model


def _averaging(lib, make_avg):
    """Four SGD steps, the averaged model updated after each; its state_dict."""
    model = _model(lib)
    averaged = make_avg(lib, model)
    opt = lib.optim.SGD(model.parameters(), lr=0.1, momentum=0.5)
    for x, y in zip(XS, YS):
        opt.zero_grad()
        ((model(lib.tensor(x)) - lib.tensor(y)) ** 2).mean().backward()
        opt.step()
        averaged.update_parameters(model)
    return {k: v.detach().numpy().copy() for k, v in averaged.state_dict().items()}


AVERAGES = {
    "swa": lambda lib, m: lib.optim.swa_utils.AveragedModel(m),
    "ema": lambda lib, m: lib.optim.swa_utils.AveragedModel(
        m, avg_fn=lib.optim.swa_utils.get_ema_avg_fn(0.7)
    ),
    "ema-multi-buffers": lambda lib, m: lib.optim.swa_utils.AveragedModel(
        m, multi_avg_fn=lib.optim.swa_utils.get_ema_multi_avg_fn(0.6), use_buffers=True
    ),
    "swa-multi": lambda lib, m: lib.optim.swa_utils.AveragedModel(
        m, multi_avg_fn=lib.optim.swa_utils.get_swa_multi_avg_fn()
    ),
    "swa-buffers": lambda lib, m: lib.optim.swa_utils.AveragedModel(m, use_buffers=True),
}


@pytest.mark.parametrize("name", sorted(AVERAGES))
def test_averaged_model_state_dict_is_torchs(name):
    """The same keys in the same order (n_averaged first), dtypes and values (float32, to
    1e-6): parameters averaged, buffers copied or (use_buffers) averaged, the integer
    num_batches_tracked too (torch's: truncated back into int64)."""
    want = _averaging(torch, AVERAGES[name])
    got = _averaging(kn, AVERAGES[name])
    assert list(got) == list(want)
    for key, value in want.items():
        assert got[key].dtype == value.dtype, key
        np.testing.assert_allclose(got[key], value, rtol=1e-6, atol=1e-6, err_msg=key)


def test_swa_multi_avg_fn_refuses_integer_buffers_as_torch():
    """torch's in-place average of num_batches_tracked (int64) raises (integer addcdiv)."""
    make = lambda lib, m: lib.optim.swa_utils.AveragedModel(  # noqa: E731
        m, multi_avg_fn=lib.optim.swa_utils.get_swa_multi_avg_fn(), use_buffers=True
    )
    with pytest.raises(RuntimeError, match="Integer division with addcdiv"):
        _averaging(torch, make)
    with pytest.raises(kn.errors.DTypeError, match="cannot average int64 tensors in place"):
        _averaging(kn, make)


def test_averaged_model_forward_and_checks_are_torchs():
    models = {lib: _model(lib) for lib in (torch, kn)}
    out = {}
    for lib, model in models.items():
        averaged = lib.optim.swa_utils.AveragedModel(model)
        averaged.update_parameters(model)
        averaged.eval()
        out[lib] = averaged(lib.tensor(XS[0])).detach().numpy()
    np.testing.assert_allclose(out[kn], out[torch], rtol=1e-6, atol=1e-6)
    fn = torch.optim.swa_utils.get_swa_avg_fn()
    with pytest.raises(AssertionError, match="Only one of avg_fn and multi_avg_fn"):
        torch.optim.swa_utils.AveragedModel(models[torch], avg_fn=fn, multi_avg_fn=fn)
    fn = kn.optim.swa_utils.get_swa_avg_fn()
    with pytest.raises(kn.errors.UsageError, match="Only one of avg_fn and multi_avg_fn"):
        kn.optim.swa_utils.AveragedModel(models[kn], avg_fn=fn, multi_avg_fn=fn)
    for lib in (torch, kn):
        with pytest.raises(ValueError, match=r"Invalid decay value 1.5 provided"):
            lib.optim.swa_utils.get_ema_avg_fn(1.5)


@pytest.mark.parametrize("batches", ["tensors", "tuples"])
def test_update_bn_recomputes_running_statistics_as_torch(batches):
    """After training moved the running statistics, update_bn resets them and averages the
    batches' statistics (cumulative, momentum None for the pass), momentum and mode kept."""
    got = {}
    for lib in (torch, kn):
        model = _model(lib)
        model[1].momentum = 0.3
        model.train()
        model(lib.tensor(XS[3] * 3))  # running statistics away from the batches below
        model.eval()
        loader = [lib.tensor(x) for x in XS]
        if batches == "tuples":
            loader = [(x, lib.tensor(y)) for x, y in zip(loader, YS)]
        lib.optim.swa_utils.update_bn(loader, model)
        bn = model[1]
        got[lib] = (bn.running_mean.numpy().copy(), bn.running_var.numpy().copy(),
                    int(bn.num_batches_tracked.item()), bn.momentum, model.training)  # fmt: skip
    (mean_k, var_k, *rest_k), (mean_t, var_t, *rest_t) = got[kn], got[torch]
    np.testing.assert_allclose(mean_k, mean_t, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(var_k, var_t, rtol=1e-6, atol=1e-6)
    assert rest_k == rest_t == [4, 0.3, False]


def _swalr(lib, **kwargs):
    p = lib.zeros(2, requires_grad=True)
    q = lib.zeros(2, requires_grad=True)
    opt = lib.optim.SGD([{"params": [p]}, {"params": [q], "lr": 0.05}], lr=0.2)
    sched = lib.optim.swa_utils.SWALR(opt, **kwargs)
    lrs = []
    for _ in range(7):
        opt.step()
        sched.step()
        lrs.append(sched.get_last_lr())
    return lrs, sched.state_dict()


@pytest.mark.parametrize(
    "kwargs",
    [dict(swa_lr=0.01), dict(swa_lr=[0.01, 0.02], anneal_epochs=3),
     dict(swa_lr=0.5, anneal_epochs=4, anneal_strategy="linear"),
     dict(swa_lr=0.03, anneal_epochs=0)],
)  # fmt: skip
def test_swalr_schedule_and_state_dict_are_torchs(kwargs):
    (lrs_k, sd_k), (lrs_t, sd_t) = _swalr(kn, **kwargs), _swalr(torch, **kwargs)
    np.testing.assert_allclose(lrs_k, lrs_t, rtol=1e-12)
    assert sorted(sd_k) == sorted(sd_t)
    assert {k: v for k, v in sd_k.items() if k != "_last_lr"} == {
        k: v for k, v in sd_t.items() if k != "_last_lr"
    }


def test_swalr_checks_are_torchs():
    for lib in (torch, kn):
        opt = lib.optim.SGD([lib.zeros(1, requires_grad=True)], lr=0.1)
        with pytest.raises(ValueError, match="anneal_strategy must be one of 'cos' or 'linear'"):
            lib.optim.swa_utils.SWALR(opt, 0.1, anneal_strategy="exp")
        with pytest.raises(ValueError, match="anneal_epochs must be equal or greater than 0"):
            lib.optim.swa_utils.SWALR(opt, 0.1, anneal_epochs=-1)
        with pytest.raises(ValueError, match="swa_lr must have the same length"):
            lib.optim.swa_utils.SWALR(opt, [0.1, 0.2])


def test_swalr_resumes_from_its_state_dict_as_torch():
    """Three steps, state_dict into a new scheduler (anneal_func rebuilt), four more."""
    got = {}
    for lib in (torch, kn):
        opt = lib.optim.SGD([lib.zeros(1, requires_grad=True)], lr=0.2)
        sched = lib.optim.swa_utils.SWALR(opt, 0.01, anneal_epochs=5, anneal_strategy="linear")
        for _ in range(3):
            opt.step()
            sched.step()
        again = lib.optim.swa_utils.SWALR(opt, 0.5)  # cos, 10 epochs, until loaded
        again.load_state_dict(sched.state_dict())
        lrs = []
        for _ in range(4):
            opt.step()
            again.step()
            lrs.append(again.get_last_lr()[0])
        got[lib] = lrs
    np.testing.assert_allclose(got[kn], got[torch], rtol=1e-12)


# -- PyTorch's scheduler details -----------------------------------------------------------


def _caught(fn) -> list:
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        fn()
    return [str(w.message) for w in seen if issubclass(w.category, UserWarning)]


@pytest.mark.parametrize("lib", ["torch", "kiln"])
def test_scheduler_warnings_are_torchs(lib):
    """get_lr() outside step() warns (use get_last_lr()); a first scheduler.step() before
    any optimizer.step() warns; the same calls in the right order do not."""
    lib = torch if lib == "torch" else kn
    opt = lib.optim.SGD([lib.zeros(1, requires_grad=True)], lr=0.1)
    sched = lib.optim.lr_scheduler.StepLR(opt, step_size=2)
    assert any("please use `get_last_lr()`" in m for m in _caught(sched.get_lr))
    assert any("before `optimizer.step()`" in m for m in _caught(sched.step))
    opt = lib.optim.SGD([lib.zeros(1, requires_grad=True)], lr=0.1)
    sched = lib.optim.lr_scheduler.ExponentialLR(opt, gamma=0.5)
    assert _caught(lambda: (opt.step(), sched.step(), sched.get_last_lr())) == []


def test_graph_mode_train_op_counts_as_an_optimizer_step():
    """Building the train op is the step a scheduler follows: no warning in graph mode."""
    with kn.Graph().as_default():
        w = kn.Variable(np.float32(3.0), name="w")
        opt = kn.optim.SGD([w], lr=0.1)
        sched = kn.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
        train_op = opt.minimize(w * w)
        sess = kn.Session()
        sess.run(train_op)
        assert _caught(sched.step) == []
        sess.run(train_op)
    assert w.numpy() == np.float32(3.0 * 0.8 * 0.9)  # lr 0.1 then 0.05: w *= 1 - 2 lr


@pytest.mark.parametrize(
    "make",
    [lambda S, opt: S.StepLR(opt, 2), lambda S, opt: S.LambdaLR(opt, lambda e: 0.5**e),
     lambda S, opt: S.CosineAnnealingWarmRestarts(opt, T_0=2),
     lambda S, opt: S.SequentialLR(opt, [S.ConstantLR(opt, 0.5, 2), S.ExponentialLR(opt, 0.9)],
                                   milestones=[2])],
)  # fmt: skip
def test_scheduler_state_dict_keys_are_torchs(make):
    """Including `_get_lr_called_within_step` (False between steps), nested ones too."""
    sds = {}
    for lib in (torch, kn):
        opt = lib.optim.SGD([lib.zeros(1, requires_grad=True)], lr=0.1)
        sched = make(lib.optim.lr_scheduler, opt)
        for _ in range(3):
            opt.step()
            sched.step()
        sds[lib] = sched.state_dict()
    assert sorted(sds[kn]) == sorted(sds[torch])
    assert sds[kn].get("_get_lr_called_within_step") is sds[torch].get("_get_lr_called_within_step")
    for inner_k, inner_t in zip(sds[kn].get("_schedulers", []), sds[torch].get("_schedulers", [])):
        assert sorted(inner_k) == sorted(inner_t)


@pytest.mark.parametrize("lib", ["torch", "kiln"])
def test_profile_hook_step_runs_the_hooks_once_around_a_custom_step(lib):
    """A custom optimizer's step decorated with Optimizer.profile_hook_step: as in torch,
    the hooks run twice around it (the decorator's, and the base class's own wrapping, which
    does not know the decorated step has them)."""
    lib = torch if lib == "torch" else kn
    seen = []

    class Plain(lib.optim.Optimizer):
        def __init__(self, params):
            super().__init__(params, {"lr": 0.1})

        @lib.optim.Optimizer.profile_hook_step
        def step(self, closure=None):
            seen.append("step")

    opt = Plain([lib.zeros(1, requires_grad=True)])
    opt.register_step_pre_hook(lambda *a: seen.append("pre"))
    opt.register_step_post_hook(lambda *a: seen.append("post"))
    opt.step()
    assert seen == ["pre", "pre", "step", "post", "post"]


class _Factor:
    """A callable object: LambdaLR's state_dict saves its __dict__ (a function: None)."""

    def __init__(self, k):
        self.k = k

    def __call__(self, epoch):
        return self.k**epoch


@pytest.mark.parametrize(
    "make",
    [lambda S, opt: S.LambdaLR(opt, [lambda e: 0.9**e, _Factor(0.8)]),
     lambda S, opt: S.MultiplicativeLR(opt, [_Factor(0.95), lambda e: 0.9]),
     lambda S, opt: S.PolynomialLR(opt, total_iters=4, power=2.0),
     lambda S, opt: S.ReduceLROnPlateau(opt, mode="max", factor=0.5, patience=1,
                                        threshold=0.1, threshold_mode="abs", cooldown=1,
                                        min_lr=[0.01, 0.02], eps=1e-3)],
    ids=["lambda", "multiplicative", "polynomial", "plateau"],
)  # fmt: skip
def test_scheduler_state_dicts_equal_torchs(make):
    """Two groups, nine steps: the whole state_dict as torch's (lambdas: None for a
    function, the __dict__ of a callable object), and the learning rates on the way."""
    got = {}
    for lib in (torch, kn):
        p, q = lib.zeros(1, requires_grad=True), lib.zeros(1, requires_grad=True)
        opt = lib.optim.SGD([{"params": [p]}, {"params": [q], "lr": 0.05}], lr=0.1)
        sched = make(lib.optim.lr_scheduler, opt)
        lrs = []
        for metric in [1, 2, 2, 2, 3, 3, 3, 3, 1]:
            opt.step()
            sched.step(metric) if "Plateau" in type(sched).__name__ else sched.step()
            lrs.append([g["lr"] for g in opt.param_groups])
        got[lib] = lrs, sched.state_dict()
    assert got[kn][0] == got[torch][0]
    assert got[kn][1] == got[torch][1]
