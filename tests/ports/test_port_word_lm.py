"""A word-level LSTM language model (the shape of the classic PyTorch word_language_model
example), ported by renaming.

Embedding, a 2-layer nn.LSTM with dropout, a decoder whose weight is the embedding's (tied),
`batchify` / `get_batch` over a (seq, batch) token tensor, the hidden state carried across
batches and cut from the history by `repackage_hidden` (detach), NLLLoss on log_softmax,
clip_grad_norm_, the hand-written SGD update `p.data.add_(p.grad, alpha=-lr)`, and the
`evaluate` loop under `no_grad`. The corpus: a NumPy Markov chain over 20 tokens.
"""

import numpy as np
import pytest
from port_common import assert_losses_close, assert_state_close, copy_weights, identity

import kiln as kn

NTOKENS = 20


def make_corpus(n=2000, seed=5):
    rng = np.random.default_rng(seed)
    nxt = rng.integers(0, NTOKENS, size=(NTOKENS, 2))  # each token has two likely successors
    ids = [0]
    for _ in range(n - 1):
        likely = rng.random() < 0.9
        ids.append(nxt[ids[-1], rng.integers(0, 2)] if likely else rng.integers(0, NTOKENS))
    return np.array(ids, np.int64)


def build(torch, dropout=0.2, nlayers=2):
    nn = torch.nn
    F = torch.nn.functional

    class RNNModel(nn.Module):
        def __init__(self, ntoken, ninp, nhid, nlayers, dropout=0.5, tie_weights=False):
            super().__init__()
            self.ntoken = ntoken
            self.drop = nn.Dropout(dropout)
            self.encoder = nn.Embedding(ntoken, ninp)
            self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=dropout if nlayers > 1 else 0.0)
            self.decoder = nn.Linear(nhid, ntoken)
            if tie_weights:
                if nhid != ninp:
                    raise ValueError("When using the tied flag, nhid must be equal to emsize")
                self.decoder.weight = self.encoder.weight
            self.init_weights()
            self.nhid = nhid
            self.nlayers = nlayers

        def init_weights(self):
            initrange = 0.1
            nn.init.uniform_(self.encoder.weight, -initrange, initrange)
            nn.init.zeros_(self.decoder.bias)

        def forward(self, input, hidden):
            emb = self.drop(self.encoder(input))
            output, hidden = self.rnn(emb, hidden)
            output = self.drop(output)
            decoded = self.decoder(output)
            decoded = decoded.view(-1, self.ntoken)
            return F.log_softmax(decoded, dim=1), hidden

        def init_hidden(self, bsz):
            weight = next(self.parameters())
            return (
                weight.new_zeros(self.nlayers, bsz, self.nhid),
                weight.new_zeros(self.nlayers, bsz, self.nhid),
            )

    return RNNModel(NTOKENS, 32, 32, nlayers, dropout=dropout, tie_weights=True)


def batchify(data, bsz):
    nbatch = data.size(0) // bsz
    data = data.narrow(0, 0, nbatch * bsz)
    return data.view(bsz, -1).t().contiguous()


def get_batch(source, i, bptt=10):
    seq_len = min(bptt, len(source) - 1 - i)
    data = source[i : i + seq_len]
    target = source[i + 1 : i + 1 + seq_len].view(-1)
    return data, target


def repackage_hidden(h):
    """Wraps hidden states in new Tensors, to detach them from their history."""
    if hasattr(h, "detach"):
        return h.detach()
    return tuple(repackage_hidden(v) for v in h)


def run(torch, model, corpus, epochs=2, lr=20.0, clip=0.25, wrap=identity):
    criterion = torch.nn.NLLLoss()
    ids = torch.from_numpy(corpus)
    train_data = batchify(ids[:1600], 16)
    val_data = batchify(ids[1600:], 4)

    @wrap
    def train_step(data, targets, hidden):
        model.zero_grad()
        output, hidden = model(data, hidden)
        loss = criterion(output, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        for p in model.parameters():
            p.data.add_(p.grad, alpha=-lr)
        return loss, hidden

    def evaluate(data_source, bsz):
        model.eval()
        total_loss = 0.0
        hidden = model.init_hidden(bsz)
        with torch.no_grad():
            for i in range(0, data_source.size(0) - 1, 10):
                data, targets = get_batch(data_source, i)
                output, hidden = model(data, hidden)
                hidden = repackage_hidden(hidden)
                total_loss += len(data) * criterion(output, targets).item()
        return total_loss / (len(data_source) - 1)

    losses, val_losses = [], []
    for _epoch in range(epochs):
        model.train()
        hidden = model.init_hidden(16)
        for i in range(0, train_data.size(0) - 1, 10):
            data, targets = get_batch(train_data, i)
            hidden = repackage_hidden(hidden)
            loss, hidden = train_step(data, targets, hidden)
            losses.append(loss.item())
        val_losses.append(evaluate(val_data, 4))
    return losses, val_losses


def test_word_lm_learns():
    model = build(kn, nlayers=1)
    assert model.decoder.weight is model.encoder.weight
    assert len(list(model.parameters())) == 1 + 4 + 1  # the tied weight is listed once
    losses, val_losses = run(kn, model, make_corpus(), epochs=3)
    assert val_losses[-1] < np.log(NTOKENS) - 0.8  # well below the uniform model's loss
    assert np.mean(losses[-3:]) < np.mean(losses[:3]) - 0.5


@pytest.mark.parametrize("wrap", ["eager", "compiled"])
def test_word_lm_matches_torch(torch, wrap):
    torch.manual_seed(0)
    t_model = build(torch, dropout=0.0)
    k_model = build(kn, dropout=0.0)
    copy_weights(t_model, k_model)
    assert k_model.decoder.weight is k_model.encoder.weight
    corpus = make_corpus()
    t_losses, t_val = run(torch, t_model, corpus, epochs=1)
    k_losses, k_val = run(
        kn, k_model, corpus, epochs=1, wrap=kn.compile if wrap == "compiled" else identity
    )
    assert_losses_close(k_losses, t_losses)
    assert_losses_close(k_val, t_val)
    assert_state_close(t_model, k_model)
