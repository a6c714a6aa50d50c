"""LSTM with `proj_size` (kiln raised NotImplementedError) against PyTorch's: parameter names,
shapes and order, repr, outputs, final states and gradients, with initial states, unbatched,
packed, and torch's errors. Expected values are torch's on the same weights."""

import numpy as np
import pytest

import kiln as kn
from kiln.nn.utils.rnn import pack_padded_sequence as kpack

torch = pytest.importorskip("torch")


@pytest.mark.filterwarnings("ignore::UserWarning")  # torch: no oneDNN kernel for projections
@pytest.mark.parametrize(
    "kw",
    [
        {"proj_size": 3},
        {"proj_size": 2, "bidirectional": True, "num_layers": 2, "batch_first": True},
        {"proj_size": 1, "num_layers": 3, "bias": False},
    ],
)
def test_lstm_proj_size_like_torch(kw):
    torch.manual_seed(0)
    t, k = torch.nn.LSTM(5, 4, **kw), kn.nn.LSTM(5, 4, **kw)
    assert repr(k) == repr(t)
    assert [(n, tuple(p.shape)) for n, p in k.named_parameters()] == [
        (n, tuple(p.shape)) for n, p in t.named_parameters()
    ]
    k.load_state_dict({n: v.detach().numpy() for n, v in t.state_dict().items()})
    rng = np.random.default_rng(0)
    x = rng.standard_normal((7, 3, 5)).astype(np.float32)
    d, layers = 1 + kw.get("bidirectional", False), kw.get("num_layers", 1)
    n = 7 if kw.get("batch_first") else 3
    h0 = rng.standard_normal((d * layers, n, kw["proj_size"])).astype(np.float32)
    c0 = rng.standard_normal((d * layers, n, 4)).astype(np.float32)
    results = []
    for lib, m in ((torch, t), (kn, k)):
        xin = lib.tensor(x, requires_grad=True)
        out, (h, c) = m(xin, (lib.tensor(h0), lib.tensor(c0)))
        (out.sum() + h.pow(2).sum() + c.sum()).backward()
        plain, (h1, _) = m(lib.tensor(x[0]))  # unbatched, zero states
        results.append([out, h, c, xin.grad, m.weight_hr_l0.grad, m.weight_hh_l0.grad, plain, h1])
    lengths = [3] * 7 if kw.get("batch_first") else [7, 5, 2]
    packed_t = torch.nn.utils.rnn.pack_padded_sequence(torch.tensor(x), lengths,
                                                       kw.get("batch_first", False))  # fmt: skip
    results[0].append(t(packed_t)[1][0])
    results[1].append(k(kpack(kn.tensor(x), lengths, kw.get("batch_first", False)))[1][0])
    for want, got in zip(*results):
        assert tuple(got.shape) == tuple(want.shape)
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-4,
                                   atol=1e-5)  # fmt: skip


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda nn: nn.LSTM(5, 4, proj_size=4), "smaller than hidden_size"),
        (lambda nn: nn.LSTM(5, 4, proj_size=-1), "positive integer or zero"),
        (lambda nn: nn.GRU(5, 4, proj_size=2), "only supported for LSTM"),
    ],
)
def test_lstm_proj_size_errors_like_torch(build, message):
    for lib in (torch, kn):
        with pytest.raises(ValueError, match=message):
            build(lib.nn)
