"""Every optimizer's param groups, defaults, signature and state_dict layout are torch 2.13's
(torch, run here, is the oracle): the group's keys in torch's order with torch's values and
types (`momentum` 0, an int, where torch's default is 0; `foreach` None, `differentiable`
False...), the keyword arguments torch takes, positional where torch's are, and a state_dict
that torch's `load_state_dict` and kiln's take both ways."""

import inspect
import warnings

import numpy as np
import pytest

import kiln as kn

torch = pytest.importorskip("torch")

NAMES = ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam",
         "ASGD", "Rprop", "LBFGS", "SparseAdam", "Adafactor", "Muon"]  # fmt: skip
STEPPED = {  # optimizer -> options for the two-step runs (SparseAdam takes sparse gradients)
    "SGD": {"lr": 0.1, "momentum": 0.9},
    "Adam": {"amsgrad": True},
    "AdamW": {},
    "RMSprop": {"momentum": 0.5, "centered": True},
    "Adagrad": {},
    "Adadelta": {},
    "Adamax": {},
    "NAdam": {},
    "RAdam": {},
    "ASGD": {},
    "Rprop": {},
    "LBFGS": {},
    "Adafactor": {},
}


def _params(lib):
    return [
        lib.nn.Parameter(lib.tensor([[1.0, -2.0], [0.5, 3.0]])),
        lib.nn.Parameter(lib.tensor([0.25, -0.75])),
    ]


def _options(group):
    return [(k, v, type(v)) for k, v in group.items() if k != "params"]


@pytest.mark.parametrize("name", NAMES)
def test_param_groups_and_defaults_are_torchs(name):
    n = 1 if name == "Muon" else 2  # (Muon takes matrices only)
    want = getattr(torch.optim, name)(_params(torch)[:n])
    got = getattr(kn.optim, name)(_params(kn)[:n])
    assert _options(got.param_groups[0]) == _options(want.param_groups[0])
    assert list(got.defaults.items()) == list(want.defaults.items())


@pytest.mark.parametrize("name", NAMES)
def test_signature_is_torchs(name):
    def shape(cls):
        sig = inspect.signature(cls.__init__)
        return [(p.name, p.kind, p.default) for p in sig.parameters.values() if p.name != "params"]

    assert shape(getattr(kn.optim, name)) == shape(getattr(torch.optim, name))


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("RMSprop", (0.01, 0.99, 1e-8, 0, 0, False, False, None, True)),  # ..., maximize=True
        ("Adagrad", (0.01, 0, 0, 0, 1e-10, None)),
        ("Adadelta", (1.0, 0.9, 1e-6, 0, None)),
        ("Adamax", (2e-3, (0.9, 0.999), 1e-8, 0, None)),
        ("ASGD", (0.01, 1e-4, 0.75, 1e6, 0, None, True)),
    ],  # fmt: skip
)
def test_positional_implementation_flags_as_torch(name, args):
    # torch takes foreach (and RMSprop's and ASGD's maximize) positionally here
    want = getattr(torch.optim, name)(_params(torch), *args)
    got = getattr(kn.optim, name)(_params(kn), *args)
    assert _options(got.param_groups[0]) == _options(want.param_groups[0])


def _run(lib, name, opt_cls_kwargs, steps=2):
    ps = _params(lib)
    opt = getattr(lib.optim, name)(ps, **opt_cls_kwargs)

    def closure():
        opt.zero_grad()
        loss = (ps[0] ** 2).sum() + (ps[1] ** 3).sum() + (ps[0].sum() * ps[1]).sum()
        loss.backward()
        return loss

    for _ in range(steps):
        opt.step(closure)
    return ps, opt


def _state_layout(sd):
    state = {
        i: [(n, (str(v.dtype).split(".")[-1], tuple(v.shape)) if hasattr(v, "dtype") else type(v))
            for n, v in s.items()]
        for i, s in sd["state"].items()
    }  # fmt: skip
    return list(sd), state, [[(k, v, type(v)) for k, v in g.items()] for g in sd["param_groups"]]


@pytest.mark.parametrize("name", list(STEPPED))
def test_state_dict_layout_is_torchs(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, want = _run(torch, name, STEPPED[name])
        _, got = _run(kn, name, STEPPED[name])
    assert _state_layout(got.state_dict()) == _state_layout(want.state_dict())


def _to_kiln(value):
    if isinstance(value, torch.Tensor):
        return kn.tensor(value.numpy())
    if isinstance(value, dict):
        return {k: _to_kiln(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_to_kiln(v) for v in value]
    return value


@pytest.mark.parametrize("name", list(STEPPED))
def test_a_torch_state_dict_loads_and_the_steps_go_on_as_torchs(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tps, topt = _run(torch, name, STEPPED[name])
        kps, kopt = _run(kn, name, STEPPED[name], steps=0)
        with torch.no_grad():
            for k, t in zip(kps, tps):
                k.data = kn.tensor(t.detach().numpy())
        kopt.load_state_dict(_to_kiln(topt.state_dict()))
        assert _state_layout(kopt.state_dict()) == _state_layout(topt.state_dict())
        for lib, ps, opt in ((torch, tps, topt), (kn, kps, kopt)):

            def closure(ps=ps, opt=opt):
                opt.zero_grad()
                loss = (ps[0] ** 2).sum() + (ps[1] ** 3).sum() + (ps[0].sum() * ps[1]).sum()
                loss.backward()
                return loss

            opt.step(closure)
    for k, t in zip(kps, tps):
        np.testing.assert_allclose(k.detach().numpy(), t.detach().numpy(), rtol=1e-5, atol=1e-6)


SCHEDULERS = {
    "StepLR": {"step_size": 2},
    "MultiStepLR": {"milestones": [1, 2]},
    "ConstantLR": {},
    "LinearLR": {},
    "ExponentialLR": {"gamma": 0.9},
    "PolynomialLR": {},
    "CosineAnnealingLR": {"T_max": 5},
    "CosineAnnealingWarmRestarts": {"T_0": 2},
    "CyclicLR": {"base_lr": 0.01, "max_lr": 0.1},
    "OneCycleLR": {"max_lr": 0.1, "total_steps": 10},
    "ReduceLROnPlateau": {},
}


@pytest.mark.parametrize("name", list(SCHEDULERS))
def test_lr_scheduler_state_dict_is_torchs(name):
    def run(lib):
        opt = lib.optim.SGD(_params(lib), lr=0.1, momentum=0.9)
        sched = getattr(lib.optim.lr_scheduler, name)(opt, **SCHEDULERS[name])
        for _ in range(3):
            opt.step()
            sched.step(1.0) if name == "ReduceLROnPlateau" else sched.step()
        return sched.state_dict(), opt.param_groups[0]

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (want, want_group), (got, got_group) = run(torch), run(kn)
    assert list(got) == list(want)
    for key, value in want.items():
        if key != "optimizer":
            assert type(got[key]) is type(value) and str(got[key]) == str(value), key
    assert list(got_group) == list(want_group)
