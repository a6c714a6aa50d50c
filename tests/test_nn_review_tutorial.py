"""Tutorial-style programs run twice, with torch and with kiln (`torch` renamed `kn`), from
the same initial weights and data: a small CNN trained with a DataLoader, and an LSTM text
classifier over packed, padded sequences with a padding embedding. After several optimizer
steps the losses, parameters and buffers agree with torch's (expected values: torch's)."""

import numpy as np
import pytest

import kiln as kn

torch = pytest.importorskip("torch")


def _cnn(lib):
    nn = lib.nn
    return nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1, padding_mode="reflect"), nn.BatchNorm2d(4), nn.ReLU(),
        nn.MaxPool2d(2), nn.Conv2d(4, 6, 3, padding="same", bias=False), nn.GroupNorm(2, 6),
        nn.GELU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Dropout(0.0), nn.Linear(6, 3),
    )  # fmt: skip


def _copy(t, k):
    k.load_state_dict({n: v.detach().numpy() for n, v in t.state_dict().items()})


def _check_state(t, k, rtol=1e-4, atol=1e-5):
    assert list(k.state_dict()) == list(t.state_dict())
    for (name, a), b in zip(t.state_dict().items(), k.state_dict().values()):
        assert str(b.dtype).split(".")[-1] == str(a.dtype).split(".")[-1], name
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=rtol, atol=atol, err_msg=name)


def test_cnn_training_loop_like_torch():
    rng = np.random.default_rng(0)
    images = rng.standard_normal((24, 1, 8, 8)).astype(np.float32)
    labels = rng.integers(0, 3, 24)
    torch.manual_seed(0)
    t, k = _cnn(torch), _cnn(kn)
    _copy(t, k)
    losses = []
    for lib, model in ((torch, t), (kn, k)):
        data = lib.utils.data.TensorDataset(lib.tensor(images), lib.tensor(labels))
        loader = lib.utils.data.DataLoader(data, batch_size=8)
        opt = lib.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
        crit = lib.nn.CrossEntropyLoss(label_smoothing=0.1)
        run = []
        model.train()
        for _ in range(2):
            for x, y in loader:
                opt.zero_grad()
                loss = crit(model(x), y)
                loss.backward()
                lib.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                opt.step()
                run.append(loss.item())
        model.eval()
        with lib.no_grad():
            run.append((model(lib.tensor(images)).argmax(1) == lib.tensor(labels)).float().mean())
        losses.append(np.array([float(v) for v in run]))
    np.testing.assert_allclose(losses[1], losses[0], rtol=1e-4)
    _check_state(t, k)


def _text_model(lib):
    nn = lib.nn

    class Classifier(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(12, 5, padding_idx=0)
            self.rnn = nn.LSTM(5, 4, num_layers=2, batch_first=True, bidirectional=True)
            self.head = nn.Linear(8, 2)

        def forward(self, ids, lengths):
            pack = nn.utils.rnn.pack_padded_sequence
            packed = pack(self.embed(ids), lengths, batch_first=True, enforce_sorted=False)
            _, (h, _) = self.rnn(packed)
            return self.head(lib.cat([h[-2], h[-1]], 1))

    return Classifier()


def test_packed_lstm_classifier_like_torch():
    rng = np.random.default_rng(1)
    lengths = [5, 2, 4, 3]
    ids = np.zeros((4, 5), np.int64)
    for i, n in enumerate(lengths):
        ids[i, :n] = rng.integers(1, 12, n)
    labels = np.array([0, 1, 1, 0])
    torch.manual_seed(0)
    t, k = _text_model(torch), _text_model(kn)
    _copy(t, k)
    losses = []
    for lib, model in ((torch, t), (kn, k)):
        opt = lib.optim.Adam(model.parameters(), lr=0.01)
        run = []
        for _ in range(4):
            opt.zero_grad()
            loss = lib.nn.functional.cross_entropy(model(lib.tensor(ids), lengths),
                                                   lib.tensor(labels))  # fmt: skip
            loss.backward()
            opt.step()
            run.append(loss.item())
        losses.append(run)
        assert float(model.embed.weight.grad[0].abs().sum()) == 0.0  # the padding row
    np.testing.assert_allclose(losses[1], losses[0], rtol=1e-4)
    _check_state(t, k)
