"""Eager refusals are kiln errors that also subclass the built-in PyTorch raises, and their
messages follow the one format: the op, the line of this file that called it, the tensors.

The built-in each case expects is the one PyTorch 2.x raises for the same call (checked
against torch itself in the last test when it is installed)."""

import copy
import math

import pytest

import kiln as kn
from kiln.checkpoint import StateDictError
from kiln.errors import DTypeMismatchError, ShapeMismatchError


def _leaf():
    return kn.tensor([1.0, 2.0], requires_grad=True)


# (name, call, kiln class, built-in, op named in the message, a tensor description or None)
CASES = [
    ("numpy_requires_grad", lambda: _leaf().numpy(), kn.AutogradError, RuntimeError,
     "numpy", "f32[2] on cpu"),
    ("requires_grad_non_leaf", lambda: (_leaf() * 2).requires_grad_(False), kn.AutogradError,
     RuntimeError, "requires_grad_", "f32[2] on cpu"),
    ("requires_grad_int", lambda: kn.tensor([1, 2]).requires_grad_(), kn.AutogradError,
     RuntimeError, "requires_grad_", "i64[2] on cpu"),
    ("item_of_several", lambda: kn.ones(3).item(), ShapeMismatchError, RuntimeError, "item",
     "f32[3] on cpu"),
    ("bool_of_several", lambda: bool(kn.ones(3)), ShapeMismatchError, RuntimeError, "bool",
     "f32[3] on cpu"),
    ("view_incompatible", lambda: kn.ones(2, 3).t().view(6), ShapeMismatchError, RuntimeError,
     "view", "f32[3,2] on cpu"),
    ("hook_no_grad", lambda: kn.ones(2).register_hook(lambda g: g), kn.AutogradError,
     RuntimeError, "register_hook", "f32[2] on cpu"),
    ("deepcopy_non_leaf", lambda: copy.deepcopy(_leaf() * 2), kn.AutogradError, RuntimeError,
     "deepcopy", "f32[2] on cpu"),
    ("inplace_shape", lambda: kn.ones(3).add_(kn.ones(2, 3)), ShapeMismatchError,
     RuntimeError, "add_", "f32[3] on cpu"),
    ("inplace_dtype", lambda: kn.tensor([1, 2]).add_(0.5), DTypeMismatchError, RuntimeError,
     "add_", "i64[2] on cpu"),
    ("out_requires_grad", lambda: kn.add(_leaf(), 1.0, out=kn.zeros(2)), kn.AutogradError,
     RuntimeError, "add", "f32[2] on cpu"),
    ("glu_odd", lambda: kn.nn.functional.glu(kn.ones(3)), ShapeMismatchError, RuntimeError,
     "glu", "f32[3] on cpu"),
    ("group_norm_groups", lambda: kn.nn.functional.group_norm(kn.ones(2, 3), 2),
     ShapeMismatchError, RuntimeError, "group_norm", "f32[2,3] on cpu"),
    ("one_hot_float", lambda: kn.nn.functional.one_hot(kn.ones(2), 3), DTypeMismatchError,
     RuntimeError, "one_hot", "f32[2] on cpu"),
    ("device_string", lambda: kn.device("tpu"), kn.DeviceError, RuntimeError, "device", None),
    ("load_state_dict", lambda: kn.nn.Linear(2, 3).load_state_dict({}), StateDictError,
     RuntimeError, "load_state_dict", None),
    ("jacobian_strict", lambda: kn.autograd.functional.jacobian(
        lambda x: kn.ones(2), kn.ones(2), strict=True), kn.AutogradError, RuntimeError,
     "jacobian", "f32[2] on cpu"),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_refusal_is_a_kiln_error_and_the_builtin_in_the_one_format(case):
    _, call, cls, builtin, op, described = case
    with pytest.raises(builtin) as info:
        call()
    e = info.value
    assert isinstance(e, cls) and isinstance(e, kn.KilnError), type(e)
    assert f"(op {op}, called at test_error_classes.py:" in str(e) or (
        f"(op {op}, created at test_error_classes.py:" in str(e)
    ), str(e)
    if described:
        assert f"inputs: {described}" in str(e), str(e)


def test_clip_grad_norm_non_finite_is_a_numerics_error_and_a_runtime_error():
    p = kn.nn.Parameter(kn.ones(2))
    p.grad = kn.tensor([math.inf, 1.0])
    with pytest.raises(RuntimeError, match="non-finite") as info:
        kn.nn.utils.clip_grad_norm_([p], 1.0, error_if_nonfinite=True)
    assert isinstance(info.value, kn.NumericsError) and isinstance(info.value, FloatingPointError)
    assert "(op clip_grad_norm_, called at test_error_classes.py:" in str(info.value)


def test_the_builtins_are_the_ones_pytorch_raises():
    torch = pytest.importorskip("torch")
    calls = {
        "numpy_requires_grad": lambda: torch.ones(2, requires_grad=True).numpy(),
        "requires_grad_non_leaf": lambda: (torch.ones(2, requires_grad=True) * 2).requires_grad_(
            False
        ),
        "requires_grad_int": lambda: torch.tensor([1, 2]).requires_grad_(),
        "item_of_several": lambda: torch.ones(3).item(),
        "bool_of_several": lambda: bool(torch.ones(3)),
        "view_incompatible": lambda: torch.ones(2, 3).t().view(6),
        "hook_no_grad": lambda: torch.ones(2).register_hook(lambda g: g),
        "deepcopy_non_leaf": lambda: copy.deepcopy(torch.ones(2, requires_grad=True) * 2),
        "inplace_shape": lambda: torch.ones(3).add_(torch.ones(2, 3)),
        "inplace_dtype": lambda: torch.tensor([1, 2]).add_(0.5),
        "out_requires_grad": lambda: torch.add(
            torch.ones(2, requires_grad=True), 1.0, out=torch.zeros(2)
        ),
        "glu_odd": lambda: torch.nn.functional.glu(torch.ones(3)),
        "group_norm_groups": lambda: torch.nn.functional.group_norm(torch.ones(2, 3), 2),
        "one_hot_float": lambda: torch.nn.functional.one_hot(torch.ones(2), 3),
        "device_string": lambda: torch.device("tpu"),
        "load_state_dict": lambda: torch.nn.Linear(2, 3).load_state_dict({}),
        "jacobian_strict": lambda: torch.autograd.functional.jacobian(
            lambda x: torch.ones(2), torch.ones(2), strict=True
        ),
    }
    for name, _, cls, builtin, _, _ in CASES:
        with pytest.raises(Exception) as info:
            calls[name]()
        assert isinstance(info.value, builtin), (name, type(info.value))
        # kiln's class is also each built-in that PyTorch's exception is
        for base in type(info.value).__mro__:
            if base.__module__ == "builtins" and base not in (Exception, BaseException, object):
                assert issubclass(cls, base), (name, base)


def _params(m):
    return [m.nn.Parameter(m.ones(2))]


# Argument refusals: (name, kiln call, kiln class, built-in, the same call on torch). The
# built-in is the one PyTorch 2.x raises (checked against torch when it is installed).
ARGUMENT_CASES = [
    ("adamw_lr", lambda m: m.optim.AdamW(_params(m), lr=-1), "ArgumentError", ValueError),
    ("sgd_momentum", lambda m: m.optim.SGD(_params(m), lr=0.1, momentum=-1), "ArgumentError",
     ValueError),
    ("dropout_p", lambda m: m.nn.functional.dropout(m.ones(2), p=2), "ArgumentError", ValueError),
    ("dropout_module", lambda m: m.nn.Dropout(p=-0.5), "ArgumentError", ValueError),
    ("loader_conflict", lambda m: m.utils.data.DataLoader(
        [1, 2, 3], batch_size=2, shuffle=True, sampler=[0, 1]), "ArgumentError", ValueError),
    ("loss_reduction", lambda m: m.nn.functional.mse_loss(m.ones(2), m.ones(2), reduction="avg"),
     "ArgumentError", ValueError),
    ("kaiming_nonlinearity", lambda m: m.nn.init.kaiming_uniform_(m.ones(2, 2), nonlinearity="x"),
     "ArgumentError", ValueError),
    ("random_split_lengths", lambda m: m.utils.data.random_split([1, 2, 3], [2, 2]),
     "ArgumentError", ValueError),
    ("softshrink_lambda", lambda m: m.nn.functional.softshrink(m.ones(2), -1.0), "UsageError",
     RuntimeError),
    ("multinomial_negative", lambda m: m.multinomial(m.tensor([-1.0, 2.0]), 1), "UsageError",
     RuntimeError),
    ("bernoulli_p", lambda m: m.ones(2).bernoulli_(2.0), "UsageError", RuntimeError),
    ("randperm_negative", lambda m: m.randperm(-1), "UsageError", RuntimeError),
]  # fmt: skip


@pytest.mark.parametrize("case", ARGUMENT_CASES, ids=[c[0] for c in ARGUMENT_CASES])
def test_argument_refusal_is_a_kiln_error_and_the_builtin_at_the_calling_line(case):
    import kiln.errors

    _, call, cls_name, builtin = case
    with pytest.raises(builtin) as info:
        call(kn)
    e = info.value
    assert isinstance(e, getattr(kiln.errors, cls_name)) and isinstance(e, kn.KilnError), type(e)
    assert str(e).endswith(f"(called at {e.site})") and "test_error_classes.py:" in e.site, str(e)


def test_argument_refusals_raise_the_builtins_pytorch_raises():
    torch = pytest.importorskip("torch")
    for name, call, _, builtin in ARGUMENT_CASES:
        with pytest.raises(Exception) as info:
            call(torch)
        assert type(info.value) is builtin or isinstance(info.value, builtin), (name, info.value)
