"""`generator=` on the eager random functions: a seeded kn.Generator makes runs reproducible,
advances only its own stream (never kn.manual_seed's), and restores with get/set_state."""

import numpy as np
import pytest

import kiln as kn

DRAWS = {
    "rand": lambda g: kn.rand(4, 3, generator=g),
    "randn": lambda g: kn.randn(4, 3, generator=g),
    "randint": lambda g: kn.randint(0, 1000, (12,), generator=g),
    "randperm": lambda g: kn.randperm(12, generator=g),
    "bernoulli": lambda g: kn.bernoulli(kn.full((12,), 0.5), generator=g),
    "multinomial": lambda g: kn.multinomial(kn.ones(2, 12), 5, generator=g),
    "normal_": lambda g: kn.zeros(12).normal_(2.0, 3.0, generator=g),
    "uniform_": lambda g: kn.zeros(12).uniform_(-1.0, 1.0, generator=g),
    "bernoulli_": lambda g: kn.zeros(12).bernoulli_(0.5, generator=g),
    "init.normal_": lambda g: kn.nn.init.normal_(kn.zeros(12), generator=g),
    "init.kaiming_uniform_": lambda g: kn.nn.init.kaiming_uniform_(kn.zeros(4, 3), generator=g),
    "init.orthogonal_": lambda g: kn.nn.init.orthogonal_(kn.zeros(3, 3), generator=g),
    "init.trunc_normal_": lambda g: kn.nn.init.trunc_normal_(kn.zeros(12), generator=g),
}


@pytest.mark.parametrize("name", list(DRAWS))
def test_generator_makes_draws_reproducible(name):
    draw = DRAWS[name]
    g = kn.Generator().manual_seed(7)
    first, second = draw(g).numpy(), draw(g).numpy()
    again = kn.Generator().manual_seed(7)
    np.testing.assert_array_equal(draw(again).numpy(), first)
    np.testing.assert_array_equal(draw(again).numpy(), second)
    assert not np.array_equal(first, second)  # the generator's state moved on
    assert not np.array_equal(draw(kn.Generator().manual_seed(8)).numpy(), first)


@pytest.mark.parametrize("name", list(DRAWS))
def test_generator_leaves_the_global_stream_alone(name):
    kn.manual_seed(0)
    want = kn.randn(5).numpy()
    kn.manual_seed(0)
    DRAWS[name](kn.Generator().manual_seed(1))
    np.testing.assert_array_equal(kn.randn(5).numpy(), want)


def test_generator_state_restores_the_draws():
    g = kn.Generator().manual_seed(3)
    kn.randn(4, generator=g)
    state = g.get_state()
    want = [kn.randn(4, generator=g).numpy(), kn.randperm(9, generator=g).numpy()]
    g.set_state(state)
    got = [kn.randn(4, generator=g).numpy(), kn.randperm(9, generator=g).numpy()]
    for a, b in zip(want, got):
        np.testing.assert_array_equal(a, b)


def test_sampling_functions_values_and_errors():
    g = kn.Generator().manual_seed(0)
    assert sorted(kn.randperm(50, generator=g).tolist()) == list(range(50))
    rows = kn.multinomial(kn.ones(3, 10), 10, generator=g)
    assert rows.dtype == kn.int64 and all(sorted(r) == list(range(10)) for r in rows.tolist())
    counts = np.bincount(kn.multinomial(kn.tensor([1.0, 3.0]), 4000, True, generator=g).numpy())
    assert abs(counts[1] / 4000 - 0.75) < 0.03  # 3:1 weights; 5 standard deviations ~ 0.034
    heads = kn.bernoulli(kn.full((4000,), 0.25), generator=g)
    assert heads.dtype == kn.float32 and abs(float(heads.mean()) - 0.25) < 0.035
    u = kn.zeros(4000).uniform_(2.0, 3.0, generator=g)
    assert 2.0 <= float(u.min()) and float(u.max()) < 3.0
    n = kn.zeros(4000).normal_(1.0, 2.0, generator=g)
    assert abs(float(n.mean()) - 1.0) < 0.15 and abs(float(n.std()) - 2.0) < 0.15
    # errors with PyTorch's messages
    with pytest.raises(RuntimeError, match="cannot sample n_sample > prob_dist.size"):
        kn.multinomial(kn.ones(3), 4)
    with pytest.raises(RuntimeError, match="p_in >= 0 && p_in <= 1"):
        kn.bernoulli(kn.tensor([1.5]))
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad|leaf"):
        kn.zeros(3, requires_grad=True).normal_()


def test_sampling_signatures_match_torch():
    torch = pytest.importorskip("torch")
    g, tg = kn.Generator().manual_seed(0), torch.Generator().manual_seed(0)
    for ns, gen in ((kn, g), (torch, tg)):
        assert ns.randperm(5, generator=gen).dtype == ns.int64
        assert ns.randint(0, 5, (3,), generator=gen).dtype == ns.int64
        assert ns.multinomial(ns.ones(4), 2, generator=gen).shape == (2,)
        assert ns.bernoulli(ns.full((3,), 0.5), generator=gen).dtype == ns.float32
        assert ns.zeros(3).uniform_(0, 1, generator=gen).shape == (3,)
        assert ns.rand(2, generator=gen).shape == ns.randn(2, generator=gen).shape == (2,)
