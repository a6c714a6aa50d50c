"""Packed sequences (`kn.nn.utils.rnn`, missing in kiln) against PyTorch's: packing and
unpacking, and RNN / LSTM / GRU over a PackedSequence (outputs, each sequence's own final
state, gradients), sorted or not, batch first or not, bidirectional, with initial states.
Expected values are torch's on the same weights and inputs."""

import numpy as np
import pytest

import kiln as kn
from kiln.nn.utils import rnn as krnn

torch = pytest.importorskip("torch")
trnn = torch.nn.utils.rnn

LENGTHS = [6, 2, 4]  # unsorted: enforce_sorted=False


def _copy(t, k):
    k.load_state_dict({n: v.detach().numpy() for n, v in t.state_dict().items()})


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("enforce_sorted", [False, True])
def test_pack_and_pad_like_torch(batch_first, enforce_sorted):
    lengths = sorted(LENGTHS, reverse=True) if enforce_sorted else LENGTHS
    shape = (3, 6, 2) if batch_first else (6, 3, 2)
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    pt = trnn.pack_padded_sequence(torch.tensor(x), lengths, batch_first, enforce_sorted)
    pk = krnn.pack_padded_sequence(kn.tensor(x), lengths, batch_first, enforce_sorted)
    np.testing.assert_array_equal(pk.data.numpy(), pt.data.numpy())
    assert pk.batch_sizes.tolist() == pt.batch_sizes.tolist()
    for a, b in ((pk.sorted_indices, pt.sorted_indices),
                 (pk.unsorted_indices, pt.unsorted_indices)):  # fmt: skip
        assert (a is None and b is None) or a.tolist() == b.tolist()
    for kw in ({}, {"padding_value": -1.0, "total_length": 8}):
        ut, lt = trnn.pad_packed_sequence(pt, batch_first, **kw)
        uk, lk = krnn.pad_packed_sequence(pk, batch_first, **kw)
        np.testing.assert_array_equal(uk.numpy(), ut.numpy())
        assert lk.tolist() == lt.tolist() and lk.dtype == kn.int64


@pytest.mark.parametrize("cls", ["RNN", "LSTM", "GRU"])
@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
def test_rnn_over_packed_like_torch(cls, bidirectional, batch_first):
    kw = dict(num_layers=2, bidirectional=bidirectional, batch_first=batch_first)
    torch.manual_seed(0)
    t, k = getattr(torch.nn, cls)(5, 4, **kw), getattr(kn.nn, cls)(5, 4, **kw)
    _copy(t, k)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 6, 5) if batch_first else (6, 3, 5)).astype(np.float32)
    h0 = rng.standard_normal((2 * (1 + bidirectional), 3, 4)).astype(np.float32)
    results = []
    for lib, mod, U in ((torch, t, trnn), (kn, k, krnn)):
        xin = lib.tensor(x, requires_grad=True)
        hx = lib.tensor(h0, requires_grad=True)
        state = (hx, lib.tensor(h0 * 0.5)) if cls == "LSTM" else hx
        packed = U.pack_padded_sequence(xin, LENGTHS, batch_first, enforce_sorted=False)
        out, h_n = mod(packed, state)
        h_n = h_n[0] if cls == "LSTM" else h_n
        assert isinstance(out, U.PackedSequence)
        padded, lens = U.pad_packed_sequence(out, batch_first)
        (padded.pow(2).sum() + (h_n * 3).sum()).backward()
        results.append([out.data, padded, h_n, xin.grad, hx.grad, mod.weight_hh_l0.grad])
    for want, got in zip(*results):
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-4,
                                   atol=1e-5)  # fmt: skip


def test_rnn_packed_final_state_is_each_sequences_last_step():
    # by hand: a sequence's h_n is its output at its own last step, not at the padding
    k = kn.nn.GRU(2, 3)
    x = kn.randn(5, 2, 2)
    out, h_n = k(krnn.pack_padded_sequence(x, [5, 2]))
    padded, _ = krnn.pad_packed_sequence(out)
    np.testing.assert_allclose(h_n[0, 1].detach().numpy(), padded[1, 1].detach().numpy())
    assert (padded[2:, 1].detach().numpy() == 0).all()
    alone, h_alone = k(x[:2, 1:2])  # the short sequence by itself
    np.testing.assert_allclose(h_n[0, 1].detach().numpy(), h_alone[0, 0].detach().numpy(),
                               rtol=1e-6, atol=1e-7)  # fmt: skip


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("side", ["right", "left"])
def test_pad_pack_unpack_sequence_like_torch(batch_first, side):
    rng = np.random.default_rng(2)
    seqs = [rng.standard_normal((n, 2)).astype(np.float32) for n in (3, 1, 4)]
    got = krnn.pad_sequence([kn.tensor(s) for s in seqs], batch_first, 2.0, side)
    want = trnn.pad_sequence([torch.tensor(s) for s in seqs], batch_first, 2.0, side)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    packed = krnn.pack_sequence([kn.tensor(s) for s in seqs], enforce_sorted=False)
    tpacked = trnn.pack_sequence([torch.tensor(s) for s in seqs], enforce_sorted=False)
    np.testing.assert_array_equal(packed.data.numpy(), tpacked.data.numpy())
    for a, b in zip(krnn.unpack_sequence(packed), seqs):
        np.testing.assert_array_equal(a.numpy(), b)
    right = krnn.pad_sequence([kn.tensor(s) for s in seqs], batch_first)
    for a, b in zip(krnn.unpad_sequence(right, [3, 1, 4], batch_first), seqs):
        np.testing.assert_array_equal(a.numpy(), b)


def test_pack_errors_like_torch():
    x = kn.zeros(4, 2, 1)
    with pytest.raises(RuntimeError, match="sorted in decreasing order"):
        krnn.pack_padded_sequence(x, [2, 3])
    with pytest.raises(RuntimeError, match="greater than 0"):
        krnn.pack_padded_sequence(x, [2, 0])
    with pytest.raises(ValueError, match="total_length"):
        krnn.pad_packed_sequence(krnn.pack_padded_sequence(x, [4, 3]), total_length=2)


def test_packed_lstm_compiled_matches_eager():
    torch.manual_seed(0)
    k = kn.nn.LSTM(3, 4, bidirectional=True)

    def run(x):
        out, (h, _) = k(krnn.pack_padded_sequence(x, [5, 3, 2], enforce_sorted=False))
        padded, _ = krnn.pad_packed_sequence(out)
        return padded.sum() + h.sum()

    x = kn.randn(5, 3, 3)
    kn.testing.check_eager_vs_compiled(run, x)
