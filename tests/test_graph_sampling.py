"""`kn.bernoulli` and `kn.multinomial` (and the Symbol methods) in graph mode and under
kn.compile: graph nodes drawing fresh values every run, seeded by kn.manual_seed.

Expected values: the distributions' definitions (a Bernoulli(p) mean within 4 standard errors
of p over 20,000 draws; categories of weight 0 never drawn; without replacement, distinct
indices), and the same seed giving the same draws.
"""

from __future__ import annotations

import numpy as np
import pytest

import kiln as kn


def _programs(seed):
    kn.manual_seed(seed)
    with kn.Graph().as_default():
        p = kn.placeholder(kn.float32, (20000,), name="p")
        w = kn.placeholder(kn.float32, (3, 5), name="w")
        return kn.function([p, w], [p.bernoulli(), kn.bernoulli(p, 0.9), kn.multinomial(w, 4),
                                    w.multinomial(50, replacement=True)])  # fmt: skip


W = np.array([[1, 2, 0, 3, 1], [0, 0, 1, 0, 0], [5, 5, 5, 5, 0]], np.float32)


def test_draws_follow_the_distributions():
    f = _programs(0)
    b, b9, without, with_ = f(np.full(20000, 0.25, np.float32), W)
    assert b.dtype == np.float32 and set(np.unique(b)) <= {0.0, 1.0}
    for draws, p in ((b, 0.25), (b9, 0.9)):
        assert abs(draws.mean() - p) < 4 * np.sqrt(p * (1 - p) / draws.size)
    assert without.shape == (3, 4) and with_.shape == (3, 50)
    assert without.dtype == with_.dtype == np.int64
    for row, weights in zip(without, W):
        positive = int((weights > 0).sum())
        assert len(set(row[: min(4, positive)])) == min(4, positive)  # distinct
        assert all(weights[i] > 0 for i in row[:positive])
    assert all(W[r, i] > 0 for r in range(3) for i in with_[r])
    assert set(with_[1]) == {2}  # one category with weight


def test_same_seed_same_draws_and_fresh_draws_each_run():
    args = (np.full(20000, 0.5, np.float32), W)
    first, again = _programs(3), _programs(3)
    a, b = first(*args), again(*args)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    assert not np.array_equal(first(*args)[0], a[0])


def test_under_compile_and_generator_refused_in_graphs():
    @kn.compile
    def masked(x):
        return kn.bernoulli(x) * x

    out = masked(kn.tensor([0.0, 1.0, 1.0]))
    assert out.tolist() == [0.0, 1.0, 1.0]
    with kn.Graph().as_default():
        p = kn.placeholder(kn.float32, (3,), name="p")
        with pytest.raises(TypeError, match="generator"):
            kn.bernoulli(p, generator=kn.Generator())
