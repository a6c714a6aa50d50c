"""float16 and bfloat16 scatter sums as PyTorch 2.13's CPU kernels compute them: scatter_add,
scatter_reduce's sum, prod and mean, index_add of a 2-D (or wider) input and gather's
backward accumulate in float32 and round once (a mean: the rounded sum over the count in the
input's dtype); index_add of a 1-D input, advanced indexing's and embedding's backward add
step by step in the dtype. Before, kiln added step by step everywhere: 600 bfloat16 ones
scatter-added to one element gave 256 (PyTorch: 600), and of 7 sums of 3,000 random values
6 or 7 differed. Expected values: torch 2.13 on the same inputs (the 256 and 600 by hand)."""

import numpy as np
import pytest

import kiln as kn

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(3)
IDX = RNG.integers(0, 7, 3000)
SRC = (RNG.normal(size=3000) * 0.3 + 1).astype(np.float32)
SELF = RNG.normal(size=7).astype(np.float32)
IDX2 = RNG.integers(0, 4, (5, 300))
SRC2 = RNG.normal(size=(5, 300)).astype(np.float32)
SELF2 = RNG.normal(size=(5, 4)).astype(np.float32)


def _t(lib, a, half):
    return lib.tensor(a).to(getattr(lib, half))


def _gather_backward(lib, half, x, dim, idx, ct):
    x = _t(lib, x, half).requires_grad_()
    x.gather(dim, lib.tensor(idx)).backward(_t(lib, ct, half))
    return x.grad


CASES = {
    "scatter_add": lambda lib, h: _t(lib, SELF, h).scatter_add(0, lib.tensor(IDX), _t(lib, SRC, h)),
    "scatter_add_2d": lambda lib, h: _t(lib, SELF2, h).scatter_add(
        1, lib.tensor(IDX2), _t(lib, SRC2, h)
    ),
    "scatter_reduce_sum": lambda lib, h: _t(lib, SELF, h).scatter_reduce(
        0, lib.tensor(IDX), _t(lib, SRC, h), "sum", include_self=False
    ),
    "scatter_reduce_mean": lambda lib, h: _t(lib, SELF, h).scatter_reduce(
        0, lib.tensor(IDX), _t(lib, SRC, h), "mean"
    ),
    "scatter_reduce_prod": lambda lib, h: _t(lib, SELF, h).scatter_reduce(
        0, lib.tensor(IDX), _t(lib, SRC, h), "prod"
    ),
    "index_add_1d": lambda lib, h: _t(lib, SELF, h).index_add(0, lib.tensor(IDX), _t(lib, SRC, h)),
    "index_add_2d": lambda lib, h: _t(lib, SELF2.T, h).index_add(
        1, lib.tensor(IDX2[0]), _t(lib, SRC2[:4], h)
    ),
    "gather_backward": lambda lib, h: _gather_backward(lib, h, SELF, 0, IDX, SRC),
    "gather_backward_2d": lambda lib, h: _gather_backward(lib, h, SELF2, 1, IDX2, SRC2),
}


@pytest.mark.parametrize("half", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", list(CASES))
def test_half_scatter_sums_are_torchs(name, half):
    got = CASES[name](kn, half)
    want = CASES[name](torch, half)
    assert got.dtype == getattr(kn, half)
    np.testing.assert_array_equal(got.float().numpy(), want.float().numpy())


def test_600_bfloat16_ones():
    """By hand: float32 accumulation reaches 600; bfloat16 steps stop at 256 (256 + 1 rounds
    to 256, an even bfloat16), as PyTorch's index_add of a 1-D input does."""
    ones, zeros = kn.ones(600, dtype=kn.bfloat16), kn.zeros(600, dtype=kn.int64)
    base = kn.zeros(1, dtype=kn.bfloat16)
    assert base.scatter_add(0, zeros, ones).item() == 600
    assert base.scatter_reduce(0, zeros, ones, "sum").item() == 600
    assert base.index_add(0, zeros, ones).item() == 256
    assert kn.zeros(1, 1, dtype=kn.bfloat16).index_add(0, zeros, ones[:, None]).item() == 600


@pytest.mark.parametrize("mode", ["graph", "compile"])
def test_gather_backward_in_graph_mode_and_compiled(mode):
    want = _gather_backward(torch, "bfloat16", SELF2, 1, IDX2, SRC2).float().numpy()
    x, ct = _t(kn, SELF2, "bfloat16"), _t(kn, SRC2, "bfloat16")
    if mode == "graph":
        xs, cs = kn.placeholder(kn.bfloat16, (5, 4)), kn.placeholder(kn.bfloat16, (5, 300))
        (g,) = kn.grad(xs.gather(1, kn.tensor(IDX2)), [xs], grad_ys=cs)
        got = kn.function([xs, cs], g)(x.numpy(), ct.numpy()).astype(np.float32)
    else:
        x.requires_grad_()
        kn.compile(lambda v: v.gather(1, kn.tensor(IDX2)))(x).backward(ct)
        got = x.grad.float().numpy()
    np.testing.assert_array_equal(got, want)
