"""kn.nn's Transformer modules against PyTorch 2.13's (skipped without torch): the same
state_dict gives the same outputs and gradients (dropout 0), eagerly, under kn.compile and in
graph mode, with masks, batch_first and norm_first."""

import numpy as np
import pytest

import kiln as kn

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(3)


def arr(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def _copy_state(tmod, kmod):
    kmod.load_state_dict({k: kn.tensor(v.detach().numpy()) for k, v in tmod.state_dict().items()})


CASES = {
    "encoder-layer": (lambda L: L.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0),
                      lambda L, s: [s], [arr(5, 3, 8)]),  # fmt: skip
    "encoder-layer-gelu-norm-first-batch-first": (
        lambda L: L.nn.TransformerEncoderLayer(8, 4, 12, dropout=0.0, activation="gelu",
                                               norm_first=True, batch_first=True),
        lambda L, s: [s], [arr(3, 5, 8)]),  # fmt: skip
    "encoder-causal-mask": (
        lambda L: L.nn.TransformerEncoder(L.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0),
                                          2, L.nn.LayerNorm(8)),
        lambda L, s: [s, L.nn.Transformer.generate_square_subsequent_mask(5)], [arr(5, 2, 8)]),
    "decoder": (
        lambda L: L.nn.TransformerDecoder(L.nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0),
                                          2),
        lambda L, t, m: [t, m], [arr(4, 2, 8), arr(6, 2, 8)]),
    "transformer": (
        lambda L: L.nn.Transformer(8, 2, 1, 1, 16, dropout=0.0, batch_first=True),
        lambda L, s, t: [s, t, None, L.nn.Transformer.generate_square_subsequent_mask(4)],
        [arr(2, 6, 8), arr(2, 4, 8)]),
}  # fmt: skip


@pytest.mark.parametrize("name", list(CASES))
def test_matches_torch(name):
    make, args, arrays = CASES[name]
    torch.manual_seed(0)
    tmod = make(torch)
    kmod = make(kn)
    assert [n for n, _ in kmod.named_parameters()] == [n for n, _ in tmod.named_parameters()]
    _copy_state(tmod, kmod)
    tx = [torch.tensor(a, requires_grad=True) for a in arrays]
    want = tmod(*args(torch, *tx))
    (want**2).sum().backward()
    kx = [kn.tensor(a, requires_grad=True) for a in arrays]
    got = kmod(*args(kn, *kx))
    (got**2).sum().backward()
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-4, atol=1e-5)
    for t, k in zip(tx, kx):
        np.testing.assert_allclose(k.grad.numpy(), t.grad.numpy(), rtol=1e-3, atol=1e-4)
    compiled = kn.compile(lambda *xs: kmod(*args(kn, *xs)))(*[kn.tensor(a) for a in arrays])
    np.testing.assert_allclose(compiled.detach().numpy(), want.detach().numpy(), rtol=1e-4,
                               atol=1e-5)  # fmt: skip


def test_square_subsequent_mask():
    got = kn.nn.Transformer.generate_square_subsequent_mask(3).numpy()
    want = torch.nn.Transformer.generate_square_subsequent_mask(3).numpy()
    np.testing.assert_array_equal(got, want)
