"""kiln.utils.data against torch.utils.data: the collated type of string fields (torch keeps
the tuple zip gives; kiln made lists), WeightedRandomSampler, StackDataset and ChainDataset
(missing in kiln). Expected values are torch's on the same data."""

import numpy as np
import pytest

import kiln as kn
from kiln.utils import data as KD

torch = pytest.importorskip("torch")
TD = torch.utils.data


def _describe(value):
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [_describe(v) for v in value])
    if isinstance(value, dict):
        return ("dict", {k: _describe(v) for k, v in value.items()})
    if hasattr(value, "dtype") and hasattr(value, "tolist"):
        return ("Tensor", str(value.dtype).split(".")[-1], value.tolist())
    return value


@pytest.mark.parametrize(
    "samples",
    [
        [("a", 1), ("b", 2)],
        [{"name": "a", "pair": ("x", 1.5)}, {"name": "b", "pair": ("y", 2.5)}],
        [["a", np.float32(1)], ["b", np.float32(2)]],
        ["a", "b"],
    ],
)
def test_collate_string_fields_like_torch(samples):
    got = _describe(next(iter(KD.DataLoader(samples, batch_size=2))))
    want = _describe(next(iter(TD.DataLoader(samples, batch_size=2))))
    assert got == want


def test_weighted_random_sampler_like_torch():
    weights = [0.0, 1.0, 3.0, 6.0]
    for lib, D in ((torch, TD), (kn, KD)):
        s = D.WeightedRandomSampler(weights, 20000, generator=lib.Generator().manual_seed(0))
        draws = np.array(list(s))
        assert len(s) == 20000 and draws.shape == (20000,)
        freq = np.bincount(draws, minlength=4) / 20000
        np.testing.assert_allclose(freq, [0.0, 0.1, 0.3, 0.6], atol=0.015)
        once = list(D.WeightedRandomSampler(weights, 3, replacement=False))
        assert sorted(once) == [1, 2, 3]  # each nonzero index once
        # all four: the zero-weight index comes last
        assert list(D.WeightedRandomSampler(weights, 4, replacement=False))[-1] == 0
        with pytest.raises(RuntimeError, match="n_sample > prob_dist"):
            list(D.WeightedRandomSampler(weights, 5, replacement=False))
        firsts = [next(iter(D.WeightedRandomSampler(weights, 2, replacement=False)))
                  for _ in range(2000)]  # fmt: skip
        np.testing.assert_allclose(np.bincount(firsts, minlength=4) / 2000, [0, 0.1, 0.3, 0.6],
                                   atol=0.04)  # fmt: skip
        with pytest.raises(ValueError):
            D.WeightedRandomSampler(weights, 0)


def test_stack_and_chain_datasets_like_torch():
    class Count:
        def __init__(self, base, n):
            self.n = n
            self.base = base

        def __iter__(self):
            return iter(range(self.n))

        def __len__(self):
            return self.n

    out = []
    for D in (TD, KD):
        counts = [type("C", (Count, D.IterableDataset), {})(None, n) for n in (2, 3)]
        chain = D.ChainDataset(counts)
        by_pos = D.StackDataset([1, 2, 3], "abc")
        by_key = D.StackDataset(x=[1, 2, 3], y="abc")
        batch = next(iter(D.DataLoader(by_key, batch_size=3)))
        out.append([list(chain), len(chain), by_pos[2], len(by_pos), by_key[0],
                    _describe(batch)])  # fmt: skip
        with pytest.raises(ValueError):
            D.StackDataset([1, 2], [1])
        with pytest.raises(ValueError):
            D.StackDataset([1], x=[1])
    assert out[0] == out[1]
