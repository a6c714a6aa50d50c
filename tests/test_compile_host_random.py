"""kn.compile and Python's or NumPy's global random numbers drawn inside the function: the
trace runs the function's Python once, so its draws would be constants of the program, the
same every call, where eager code draws afresh (the DynamicNet of PyTorch's "Learning PyTorch
with Examples" picks 4, 5 or 6 terms with random.randint per forward; torch.compile replays
such draws each call). kiln undoes the trace, leaves the generators as they were, warns, and
runs the function eagerly on that call and every later one: the values are eager code's with
the same seed (which torch.compile's replays also give)."""

import random

import numpy as np
import pytest

import kiln as kn


class DynamicNet(kn.nn.Module):  # the tutorial's model, with fixed initial weights
    def __init__(self):
        super().__init__()
        self.a = kn.nn.Parameter(kn.tensor(0.1))
        self.e = kn.nn.Parameter(kn.tensor(0.01))

    def forward(self, x, terms=None):
        y = self.a * x
        for exp in range(4, random.randint(4, 6) if terms is None else terms):
            y = y + self.e * x**exp
        return y


def test_python_random_in_a_trace_runs_eagerly():
    model, x = DynamicNet(), kn.linspace(-1, 1, 5)
    step = kn.compile(lambda x: model(x).sum())
    random.seed(0)
    with pytest.warns(UserWarning, match=r"random.*runs eagerly"):
        got = [step(x).item() for _ in range(8)]
    after = random.getstate()
    random.seed(0)
    want = [model(x).sum().item() for _ in range(8)]
    assert got == want and len(set(want)) > 1  # (the calls drew different term counts)
    assert random.getstate() == after  # as many draws as eager code made
    assert step.trace_count == 0  # (the traced program was dropped)


def test_numpy_global_random_in_a_trace_runs_eagerly():
    f = kn.compile(lambda x: x * float(np.random.rand()))
    np.random.seed(3)
    with pytest.warns(UserWarning, match="NumPy's global random"):
        got = [f(kn.ones(3)).tolist() for _ in range(3)]
    np.random.seed(3)
    assert got == [(kn.ones(3) * float(np.random.rand())).tolist() for _ in range(3)]


def test_draws_passed_in_agree_with_eager():
    # what the error suggests: draw outside, pass the count in (a static argument)
    model, x = DynamicNet(), kn.linspace(-1, 1, 5)
    step = kn.compile(lambda x, terms: model(x, terms).sum())
    random.seed(0)
    draws = [random.randint(4, 6) for _ in range(6)]
    assert len(set(draws)) > 1  # the check needs calls that differ
    for terms in draws:
        eager = model(x, terms).sum()
        kn.testing.assert_close(step(x, terms), eager)
