"""The compiled training step of PyTorch's optimizer tests (test_optim.py's compiled variants):
`kn.compile` of one function doing the forward, backward, `opt.step()` and `zero_grad()`
must follow torch's eager trajectory on the problem of pt_optim_common.py, for every
optimizer kiln has with several options on (float64 within 1e-12, float32 within 1e-6); the
lr a scheduler sets between compiled calls, options changed in a param group, and an lr
tensor changed in place are followed, as torch's eager steps follow them.

Expected values: torch 2.13 (the oracle), eagerly.
"""

import warnings

import pytest
from pt_optim_common import assert_trajectories, loss_of, params, snapshot

import kiln as kn
from kiln.errors import GraphError

torch = pytest.importorskip("torch")

OPTIONS = {
    "SGD": dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.1, maximize=True),
    "Adam": dict(lr=0.05, weight_decay=0.1, amsgrad=True),
    "AdamW": dict(lr=0.05, weight_decay=0.3, maximize=True),
    "Adamax": dict(lr=0.05, weight_decay=0.1),
    "Adadelta": dict(lr=0.5, rho=0.95, weight_decay=0.3),
    "Adagrad": dict(lr=0.1, lr_decay=0.5, initial_accumulator_value=0.1),
    "RMSprop": dict(lr=0.01, centered=True, momentum=0.9, weight_decay=0.1),
    "Rprop": dict(lr=0.01, etas=(0.3, 1.5), step_sizes=(1e-3, 1.0)),
    "ASGD": dict(lr=0.02, t0=2, weight_decay=0.1),
    "NAdam": dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True),
    "RAdam": dict(lr=0.05, weight_decay=0.1),
    "Adafactor": dict(lr=0.05, weight_decay=0.1),
}


def _torch_run(name, options, dtype="float64", steps=5, between=None):
    ps = params(torch, dtype)
    opt = getattr(torch.optim, name)(ps, **options)
    sched = between(torch, opt) if between else None
    out = []
    for i in range(steps):
        opt.zero_grad()
        loss_of(torch, *ps).backward()
        opt.step()
        if sched:
            sched(i)
        out.append(snapshot(ps))
    return out


def _kiln_run(name, options, dtype="float64", steps=5, between=None):
    ps = [kn.nn.Parameter(p.detach()) for p in params(kn, dtype)]
    opt = getattr(kn.optim, name)(ps, **options)
    sched = between(kn, opt) if between else None

    @kn.compile
    def train_step():
        loss = loss_of(kn, *ps)
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss

    out = []
    for i in range(steps):
        train_step()
        if sched:
            sched(i)
        out.append(snapshot(ps))
    return out


def _same(name, options, dtype="float64", **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = _torch_run(name, options, dtype, **kw)
        got = _kiln_run(name, options, dtype, **kw)
    assert_trajectories(got, want, dtype)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", sorted(OPTIONS))
def test_compiled_step_follows_torchs_trajectory(name, dtype):
    _same(name, OPTIONS[name], dtype)


def test_compiled_muon_step_follows_torchs_trajectory():
    def run(lib, compiled):
        w = lib.nn.Parameter(params(lib)[0].detach()) if compiled else params(lib)[0]
        b = params(lib)[1].detach()
        opt = lib.optim.Muon([w], lr=0.05, weight_decay=0.1)

        def train_step():
            loss_of(lib, w, b).backward()
            opt.step()
            opt.zero_grad()

        step = kn.compile(train_step) if compiled else train_step
        out = []
        for _ in range(4):
            step()
            out.append(snapshot([w]))
        return out

    assert_trajectories(run(kn, True), run(torch, False), "float64")


def _exponential(lib, opt):
    sched = lib.optim.lr_scheduler.ExponentialLR(opt, 0.5)
    return lambda i: sched.step()


def _one_cycle(lib, opt):
    sched = lib.optim.lr_scheduler.OneCycleLR(opt, 0.1, total_steps=10)
    return lambda i: sched.step()


def _change_options(lib, opt):
    def change(i):
        if i == 1:
            opt.param_groups[0]["weight_decay"] = 0.5
            opt.param_groups[0]["momentum"] = 0.5

    return change


def _toggle_maximize(lib, opt):
    def toggle(i):
        if i == 2:
            opt.param_groups[0]["maximize"] = True

    return toggle


@pytest.mark.parametrize(
    "name, between",
    [
        ("SGD", _exponential),
        ("Adam", _one_cycle),
        ("SGD", _change_options),
        ("RMSprop", _toggle_maximize),
    ],  # fmt: skip
    ids=["sgd-exponential-lr", "adam-one-cycle", "sgd-options-changed", "rmsprop-maximize-on"],
)
def test_what_changes_between_compiled_steps_is_followed(name, between):
    options = dict(lr=0.1, momentum=0.9) if name == "SGD" else dict(lr=0.05)
    _same(name, options, between=between)


def _halve_lr_in_place(lib, opt):
    return lambda i: opt.param_groups[0]["lr"].mul_(0.5)


# A float32 lr tensor: torch's eager steps compute with it in float32 where it meets Python
# floats (Adam's lr / bias_correction1, ASGD's eta, ...); a compiled step holds the lr as a
# float64 graph value of the same value, so those steps differ in the float32 rounding.
LR_TENSOR_XFAIL = {
    n: "the compiled step computes the lr tensor's arithmetic in float64, torch's eager step "
    "in float32: ~1e-8 relative (Adam: -0.1369309457 kiln, -0.1369309465 torch)"
    for n in ("Adam", "AdamW", "Adamax", "Adagrad", "ASGD", "NAdam", "Adafactor")
}


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=LR_TENSOR_XFAIL[n]))
        if n in LR_TENSOR_XFAIL
        else n
        for n in sorted(OPTIONS)
    ],
)
def test_compiled_step_with_an_lr_tensor_changed_in_place(name):
    options = OPTIONS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = _torch_run(name, dict(options, lr=torch.tensor(options["lr"])), steps=4,
                          between=_halve_lr_in_place)  # fmt: skip
        got = _kiln_run(name, dict(options, lr=kn.tensor(options["lr"])), steps=4,
                        between=_halve_lr_in_place)  # fmt: skip
    assert_trajectories(got, want)


@pytest.mark.xfail(
    strict=True,
    raises=GraphError,
    reason="torch.compile takes a step of captured plain leaf tensors (not Parameters) and "
    "returns its loss; kn.compile refuses it (GraphError: the function changed a captured "
    "tensor's .grad while traced; pass the tensors as arguments or make them Parameters)",
)
def test_compiled_step_of_captured_plain_tensors():
    ps = params(kn)
    opt = kn.optim.SGD(ps, lr=0.1)

    @kn.compile
    def train_step():
        loss = loss_of(kn, *ps)
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss

    train_step()


def test_compiled_step_follows_a_scheduler_writing_an_lr_tensor():
    def step_lr(lib, opt):
        sched = lib.optim.lr_scheduler.StepLR(opt, 1, 0.5)
        return lambda i: sched.step()

    options = dict(lr=0.1, momentum=0.9)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = _torch_run("SGD", dict(options, lr=torch.tensor(0.1)), between=step_lr)
        got = _kiln_run("SGD", dict(options, lr=kn.tensor(0.1)), between=step_lr)
    assert_trajectories(got, want)
