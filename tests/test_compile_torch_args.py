"""kn.compile takes torch.compile's arguments (torch 2.13's signature), so that ported code
runs: disable=True gives the function back, backend="eager" runs it eagerly, mode is checked
against torch's list (RuntimeError, as torch's), mode with options is refused (torch's
message); the rest leave kiln's compiled function as it is."""

import inspect

import numpy as np
import pytest

import kiln as kn
from kiln.tracing.trace import CompiledFunction


def step(x):
    return (x * 2).sum()


def test_torch_compile_arguments_are_accepted():
    x = kn.tensor([1.0, 2.0])
    for kwargs in ({"fullgraph": True}, {"dynamic": True}, {"dynamic": False},
                   {"backend": "inductor"}, {"mode": "max-autotune"}, {"mode": "reduce-overhead"},
                   {"options": {"triton.cudagraphs": False}}, {"name": "step"},
                   {"recompile_limit": 8}, {"isolate_recompiles": True}):  # fmt: skip
        f = kn.compile(step, **kwargs)
        assert isinstance(f, CompiledFunction), kwargs
        assert f(x).item() == 6.0


def test_disable_and_eager_backends_do_not_compile():
    assert kn.compile(step, disable=True) is step
    model = kn.nn.Linear(2, 1)
    assert kn.compile(model, disable=True) is model
    for backend in ("eager", "aot_eager"):
        f = kn.compile(step, backend=backend)
        assert not isinstance(f, CompiledFunction)
        assert f(kn.tensor([1.0, 2.0])).item() == 6.0 and f.__name__ == "step"

    @kn.compile(backend="eager")
    def traced_value(x):
        return x.sum().item()  # eager: a Python value is fine

    assert traced_value(kn.tensor([1.0, 2.0])) == 3.0


def test_bad_mode_and_backend_are_refused():
    with pytest.raises(RuntimeError, match="Unrecognized mode=bogus"):
        kn.compile(step, mode="bogus")
    with pytest.raises(RuntimeError, match="Either mode or options"):
        kn.compile(step, mode="default", options={})
    with pytest.raises(ValueError, match="backend="):
        kn.compile(step, backend=lambda gm, inputs: gm)


def test_the_signature_has_every_argument_of_torch_compile():
    torch = pytest.importorskip("torch")
    theirs = set(inspect.signature(torch.compile).parameters) - {"model"}
    ours = set(inspect.signature(kn.compile).parameters)
    assert theirs <= ours, sorted(theirs - ours)


def test_numpy_inputs_still_give_numpy():
    f = kn.compile(step, mode="default")
    assert f(np.array([1.0, 2.0], np.float32)) == np.float32(6.0)
