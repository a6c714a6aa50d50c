"""Adam's eager CPU step on arrays of one float dtype (`_adam_arrays`, in-place NumPy calls)
gives the bits of `Adam._update`'s expressions, which the other cases run: every option."""

import numpy as np
import pytest

import kiln as kn
from kiln.optim import algorithms

OPTIONS = [
    ("AdamW", {}),
    ("AdamW", {"amsgrad": True, "weight_decay": 0.1}),
    ("Adam", {"weight_decay": 0.05}),  # L2 added to the gradient
    ("Adam", {"maximize": True, "eps": 1e-3}),
]


def _steps(name, options, dtype, in_place, monkeypatch):
    if not in_place:  # every array "of another layout": the expressions
        monkeypatch.setattr(algorithms, "_same_layout", lambda *arrays: False)
    rng = np.random.default_rng(0)
    w = kn.tensor(rng.standard_normal((5, 3)).astype(dtype), requires_grad=True)
    b = kn.tensor(rng.standard_normal(3).astype(dtype), requires_grad=True)
    opt = getattr(kn.optim, name)([w, b], lr=0.05, **options)
    x = kn.tensor(rng.standard_normal((4, 5)).astype(dtype))
    for _ in range(3):
        opt.zero_grad()
        ((x @ w + b).tanh() ** 2).sum().backward()
        opt.step()
    monkeypatch.undo()
    state = [opt.state[p][k].numpy() for p in (w, b) for k in sorted(opt.state[p]) if k != "step"]
    return [w.detach().numpy(), b.detach().numpy(), *state]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("name", "options"), OPTIONS, ids=[f"{n}-{o}" for n, o in OPTIONS])
def test_adam_in_place_arrays_keep_the_expressions_bits(name, options, dtype, monkeypatch):
    fast = _steps(name, options, dtype, True, monkeypatch)
    slow = _steps(name, options, dtype, False, monkeypatch)
    assert len(fast) == len(slow) >= 6
    for a, b in zip(fast, slow):
        assert a.dtype == b.dtype == dtype
        np.testing.assert_array_equal(a, b)
