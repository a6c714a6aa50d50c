"""A small Transformer encoder classifier, ported by renaming.

Embedding scaled by sqrt(d_model), a sinusoidal PositionalEncoding kept as a buffer
(`register_buffer`), nn.TransformerEncoder over nn.TransformerEncoderLayer(batch_first=True),
a `src_key_padding_mask` from the sequence lengths, masked mean pooling, AdamW, LambdaLR with
linear warmup then cosine decay, CrossEntropyLoss(label_smoothing=0.1), and
clip_grad_norm_. The task: is token 1 more frequent than token 2 in a padded sequence.
"""

import math

import numpy as np
import pytest
from port_common import LOSS_TOL, assert_losses_close, assert_state_close, copy_weights, identity

import kiln as kn

VOCAB, PAD, D_MODEL = 8, 0, 16


def make_data(n=64, max_len=12, seed=6):
    rng = np.random.default_rng(seed)
    tokens = np.full((n, max_len), PAD, np.int64)
    lengths = rng.integers(4, max_len + 1, n)
    for i, length in enumerate(lengths):
        tokens[i, :length] = rng.integers(1, VOCAB, length)
    labels = ((tokens == 1).sum(1) > (tokens == 2).sum(1)).astype(np.int64)
    return tokens, lengths, labels


def build(torch, dropout=0.1):
    nn = torch.nn

    class PositionalEncoding(nn.Module):
        def __init__(self, d_model, dropout=0.1, max_len=64):
            super().__init__()
            self.dropout = nn.Dropout(p=dropout)
            position = torch.arange(max_len).unsqueeze(1)
            div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
            pe = torch.zeros(1, max_len, d_model)
            pe[0, :, 0::2] = torch.sin(position * div_term)
            pe[0, :, 1::2] = torch.cos(position * div_term)
            self.register_buffer("pe", pe)

        def forward(self, x):
            x = x + self.pe[:, : x.size(1)]
            return self.dropout(x)

    class TransformerClassifier(nn.Module):
        def __init__(self, ntoken, d_model, nhead, d_hid, nlayers, nclass, dropout):
            super().__init__()
            self.d_model = d_model
            self.embedding = nn.Embedding(ntoken, d_model, padding_idx=PAD)
            self.pos_encoder = PositionalEncoding(d_model, dropout)
            encoder_layers = nn.TransformerEncoderLayer(
                d_model, nhead, d_hid, dropout, batch_first=True
            )
            self.transformer_encoder = nn.TransformerEncoder(
                encoder_layers, nlayers, enable_nested_tensor=False
            )
            self.classifier = nn.Linear(d_model, nclass)

        def forward(self, src, src_key_padding_mask):
            x = self.embedding(src) * math.sqrt(self.d_model)
            x = self.pos_encoder(x)
            x = self.transformer_encoder(x, src_key_padding_mask=src_key_padding_mask)
            keep = (~src_key_padding_mask).unsqueeze(-1).float()
            pooled = (x * keep).sum(dim=1) / keep.sum(dim=1)
            return self.classifier(pooled)

    return TransformerClassifier(VOCAB, D_MODEL, 2, 32, 2, 2, dropout)


def lr_lambda_for(warmup, total):
    def lr_lambda(step):
        if step < warmup:
            return float(step + 1) / float(warmup)
        progress = float(step - warmup) / float(max(1, total - warmup))
        return 0.5 * (1.0 + math.cos(math.pi * progress))

    return lr_lambda


def train(torch, model, data, epochs=3, wrap=identity):
    tokens, lengths, labels = data
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    total = epochs * (len(tokens) // 16)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda_for(2, total))
    criterion = torch.nn.CrossEntropyLoss(label_smoothing=0.1)

    @wrap
    def train_step(src, mask, target):
        optimizer.zero_grad()
        output = model(src, mask)
        loss = criterion(output, target)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        return loss

    losses, lrs = [], []
    model.train()
    for _epoch in range(epochs):
        for i in range(0, len(tokens), 16):
            src = torch.from_numpy(tokens[i : i + 16])
            mask = src == PAD
            losses.append(train_step(src, mask, torch.from_numpy(labels[i : i + 16])).item())
            scheduler.step()
            lrs.append(scheduler.get_last_lr()[0])
    model.eval()
    with torch.no_grad():
        src = torch.from_numpy(tokens)
        logits = model(src, src == PAD)
        accuracy = (logits.argmax(1) == torch.from_numpy(labels)).float().mean().item()
    return losses, lrs, logits.numpy(), accuracy


def test_transformer_learns():
    kn.manual_seed(0)
    model = build(kn)
    assert [name for name, _ in model.named_buffers()] == ["pos_encoder.pe"]
    losses, lrs, _, accuracy = train(kn, model, make_data(), epochs=8)
    assert lrs[0] == pytest.approx(3e-3) and lrs[-1] == pytest.approx(0.0, abs=1e-12)
    assert np.mean(losses[-4:]) < np.mean(losses[:4]) - 0.1
    assert accuracy > 0.7


@pytest.mark.parametrize("wrap", ["eager", "compiled"])
def test_transformer_matches_torch(torch, wrap):
    torch.manual_seed(0)
    t_model = build(torch, dropout=0.0)
    k_model = build(kn, dropout=0.0)
    copy_weights(t_model, k_model)
    data = make_data()
    t_losses, t_lrs, t_logits, t_acc = train(torch, t_model, data)
    k_losses, k_lrs, k_logits, k_acc = train(
        kn, k_model, data, wrap=kn.compile if wrap == "compiled" else identity
    )
    assert_losses_close(k_losses, t_losses)
    np.testing.assert_allclose(k_lrs, t_lrs, rtol=1e-12)
    np.testing.assert_allclose(k_logits, t_logits, rtol=1e-3, atol=LOSS_TOL["atol"] * 10)
    assert k_acc == t_acc
    # The key projection's bias adds q.b_k to every logit of a query alike, which softmax
    # cancels: its exact gradient is 0 and both frameworks' are rounding noise (1e-9), which
    # AdamW turns into steps of up to lr each. Those entries agree within the sum of the lrs.
    keys = slice(D_MODEL, 2 * D_MODEL)
    loose = [(f"transformer_encoder.layers.{i}.self_attn.in_proj_bias", keys, sum(t_lrs))
             for i in range(2)]  # fmt: skip
    assert_state_close(t_model, k_model, loose)
