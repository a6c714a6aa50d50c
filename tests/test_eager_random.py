"""The eager random factories (`kn.randn`, `kn.rand`, `kn.randint`) draw from one persistent
stream per seed (a `kn.Generator`: the default one that `kn.manual_seed` seeds, or the one
passed as `generator=`), never reseeded per call: the same seed gives the same sequence."""

import numpy as np
import pytest
import scipy.stats

import kiln as kn
from kiln import generator as gen
from kiln.errors import DTypeError


def test_randn_is_box_muller_on_the_seeds_pcg64_stream():
    # The expected values by the formula, from the bit generator's raw words directly.
    kn.manual_seed(11)
    got = kn.randn(5).numpy()
    words = np.random.PCG64(11).random_raw(gen._BLOCK // 2).view(np.uint32)
    u = (words >> 8).astype(np.float64) * 2.0**-24
    radius = np.sqrt(-2 * np.log(1 - u[: gen._BLOCK // 2]))
    expected = radius[:5] * np.cos(2 * np.pi * u[gen._BLOCK // 2 :][:5])
    np.testing.assert_allclose(got, expected, rtol=2e-6, atol=2e-6)


def test_same_seed_same_sequence_whatever_the_sizes_of_the_draws():
    kn.manual_seed(5)
    whole = kn.randn(3 * gen._BLOCK + 7).numpy()  # crosses blocks
    kn.manual_seed(5)
    parts = [kn.randn(3).numpy(), kn.randn(2, 2).numpy().ravel(), kn.randn(gen._BLOCK).numpy(),
             kn.randn(2 * gen._BLOCK).numpy()]  # fmt: skip
    np.testing.assert_array_equal(np.concatenate(parts), whole[: sum(p.size for p in parts)])
    kn.manual_seed(5)
    a = [kn.rand(4).numpy(), kn.randint(0, 10, (6,)).numpy(), kn.randn(4).numpy()]
    kn.manual_seed(5)
    b = [kn.rand(4).numpy(), kn.randint(0, 10, (6,)).numpy(), kn.randn(4).numpy()]
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    assert not np.array_equal(kn.randn(4).numpy(), b[2])  # fresh values after


def test_the_stream_is_one_persistent_bit_generator():
    kn.manual_seed(0)
    bits = gen.default_generator._bits
    for _ in range(3):
        kn.randn(10), kn.rand(10), kn.randint(5, (10,))
    assert gen.default_generator._bits is bits


def test_generator_argument_and_its_state():
    g = kn.Generator().manual_seed(7)
    kn.manual_seed(7)  # the default stream is a Generator seeded alike (PyTorch's semantics)
    np.testing.assert_array_equal(kn.randn(6, generator=g).numpy(), kn.randn(6).numpy())
    state = g.get_state()  # mid-block: the normals drawn ahead are part of the state
    after = [kn.randn(5, generator=g), kn.rand(3, generator=g), kn.randint(9, (4,), generator=g)]
    g2 = kn.Generator().set_state(state)
    again = [kn.randn(5, generator=g2), kn.rand(3, generator=g2), kn.randint(9, (4,), generator=g2)]
    for x, y in zip(after, again):
        np.testing.assert_array_equal(x.numpy(), y.numpy())
    with pytest.raises(TypeError, match="kn.Generator"):
        kn.randn(2, generator=np.random.default_rng(0))
    with pytest.raises(RuntimeError, match="expected a uint8 tensor"):
        g.set_state(np.zeros(46, np.uint8))


@pytest.mark.parametrize("dtype", [kn.float32, kn.float64, kn.float16, kn.bfloat16])
def test_normal_and_uniform_samples_have_their_distributions(dtype):
    kn.manual_seed(1)
    z = kn.randn(20000, dtype=dtype)
    u = kn.rand(20000, dtype=dtype)
    assert z.dtype == dtype and u.dtype == dtype
    z, u = z.numpy().astype(np.float64), u.numpy().astype(np.float64)
    # Kolmogorov-Smirnov at 20000 samples: 0.015 is p ~ 2e-4 for a true N(0, 1) / U[0, 1)
    # (the 16-bit dtypes round, which moves the statistic by far less than that)
    assert scipy.stats.kstest(z, "norm").statistic < 0.015
    assert scipy.stats.kstest(u, "uniform").statistic < 0.015
    assert u.min() >= 0 and u.max() <= 1


def test_randint_bounds_dtypes_and_errors():
    kn.manual_seed(2)
    v = kn.randint(-3, 4, (5000,)).numpy()
    assert v.dtype == np.int64 and v.min() == -3 and v.max() == 3
    counts = np.bincount(v + 3)
    assert scipy.stats.chisquare(counts).pvalue > 1e-4
    assert kn.randint(10, (3,), dtype=kn.int32).dtype == np.int32
    big = kn.randint(0, 1 << 62, (1000,)).numpy()
    assert big.min() >= 0 and big.max() < 1 << 62
    with pytest.raises(RuntimeError, match="from=3 >= to=3"):
        kn.randint(3, 3, (2,))
    with pytest.raises(DTypeError, match="float dtype"):
        kn.randn(2, dtype=kn.int64)
