"""Random draws under `kn.compile` are fresh on every call, as torch.compile's are.

The silent bug this pins: the eager factories (`kn.randn`, `rand`, `randint`, `randperm`),
and dropout, bernoulli, multinomial and rrelu of a tensor made inside the function, drew once,
while tracing, so every call of the compiled function returned the same "random" values.
Expected values: the distributions' moments (mean and standard deviation within 6 standard
errors), ranges and permutations, and unequal draws between calls.
"""

import numpy as np
import pytest

import kiln as kn

F = kn.nn.functional
N = 20000

FACTORIES = {
    "randn": (lambda x: x + kn.randn(N), 0.0, 1.0),
    "randn-shape": (lambda x: x + kn.randn(x.shape), 0.0, 1.0),
    "rand": (lambda x: x + kn.rand(N), 0.5, (1 / 12) ** 0.5),
    "randint": (lambda x: x + kn.randint(0, 10, (N,)), 4.5, (99 / 12) ** 0.5),
    "randn-generator": (
        lambda x: x + kn.randn(N, generator=kn.Generator().manual_seed(1)),
        0.0,
        1.0,
    ),  # fmt: skip
    "dropout-of-a-constant": (lambda x: x + F.dropout(kn.ones(N), 0.5), 1.0, 1.0),
    "bernoulli-of-a-constant": (
        lambda x: x + kn.bernoulli(kn.full((N,), 0.25)),
        0.25,
        0.1875**0.5,
    ),  # fmt: skip
    "normal_": (lambda x: x.clone().normal_(2.0, 0.5), 2.0, 0.5),
    "uniform_": (lambda x: x.clone().uniform_(-1.0, 1.0), 0.0, (4 / 12) ** 0.5),
    "bernoulli_": (lambda x: x.clone().bernoulli_(0.5), 0.5, 0.5),
}


@pytest.mark.parametrize("name", list(FACTORIES))
def test_each_call_draws_fresh_values(name):
    fn, mean, std = FACTORIES[name]
    f = kn.compile(fn)
    first, second = (f(kn.zeros(N)).numpy() for _ in range(2))
    assert first.dtype == np.float32
    assert (first != second).mean() > 0.2, "the same values on two calls"
    for draw in (first, second):
        assert abs(draw.mean() - mean) < 6 * std / N**0.5
        assert abs(draw.std() - std) < 6 * std / N**0.5 * 2


def test_randperm_and_multinomial_are_fresh_permutations():
    f = kn.compile(lambda x: x + kn.randperm(50))
    perms = [f(kn.zeros(50, dtype=kn.int64)).tolist() for _ in range(3)]
    assert all(sorted(p) == list(range(50)) for p in perms)
    assert len({tuple(p) for p in perms}) == 3
    g = kn.compile(lambda x: x + kn.multinomial(kn.ones(50), 50))
    draws = [g(kn.zeros(50, dtype=kn.int64)).tolist() for _ in range(3)]
    assert all(sorted(d) == list(range(50)) for d in draws) and len(set(map(tuple, draws))) == 3


def test_rrelu_noise_is_fresh():
    f = kn.compile(lambda x: x + F.rrelu(-kn.ones(1000), 0.1, 0.3, training=True))
    a, b = f(kn.zeros(1000)).numpy(), f(kn.zeros(1000)).numpy()
    assert (a != b).any() and (-0.3 <= a).all() and (a <= -0.1).all()


def test_random_fill_of_a_graph_value_is_fresh_on_every_run():
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float64, (1000,), name="x")
        f = kn.function([x], [(x * 1.0).normal_()])
    a, b = (f(np.zeros(1000))[0] for _ in range(2))
    assert a.dtype == np.float64 and (a != b).all()
