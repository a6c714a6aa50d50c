"""A tiny GPT-style language model, ported by renaming.

Token and learned position embeddings, two pre-LayerNorm Transformer blocks written by hand
(one block masks its attention logits with torch.triu + masked_fill, the other calls
F.scaled_dot_product_attention(is_causal=True)), weight tying (lm_head.weight =
tok_emb.weight), dropout 0, AdamW with CosineAnnealingLR, gradient accumulation over two
micro-batches, then greedy generation (argmax, cat) under torch.no_grad. The corpus: a
noisy cyclic sequence of tokens, so that the next token is mostly predictable.
"""

import math

import numpy as np
import pytest
from port_common import assert_losses_close, assert_state_close, copy_weights, identity

import kiln as kn

VOCAB, D, HEADS, BLOCK = 12, 16, 2, 8


def make_corpus(n=400, seed=3):
    rng = np.random.default_rng(seed)
    tokens = np.arange(n) % VOCAB
    noise = rng.random(n) < 0.1
    tokens[noise] = rng.integers(0, VOCAB, noise.sum())
    return tokens.astype(np.int64)


def batches(corpus, n_steps, micro=2, bsz=4, seed=4):
    rng = np.random.default_rng(seed)
    for _ in range(n_steps):
        starts = rng.integers(0, len(corpus) - BLOCK - 1, (micro, bsz))
        yield [
            (np.stack([corpus[s : s + BLOCK] for s in row]),
             np.stack([corpus[s + 1 : s + BLOCK + 1] for s in row]))
            for row in starts
        ]  # fmt: skip


def build(torch):
    nn, F = torch.nn, torch.nn.functional

    class CausalSelfAttention(nn.Module):
        def __init__(self, use_sdpa):
            super().__init__()
            self.qkv = nn.Linear(D, 3 * D)
            self.proj = nn.Linear(D, D)
            self.use_sdpa = use_sdpa

        def forward(self, x):
            b, t, c = x.shape
            q, k, v = self.qkv(x).split(D, dim=2)
            q, k, v = (z.view(b, t, HEADS, c // HEADS).transpose(1, 2) for z in (q, k, v))
            if self.use_sdpa:
                y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            else:
                att = (q @ k.transpose(-2, -1)) / math.sqrt(k.size(-1))
                mask = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
                att = att.masked_fill(mask, float("-inf"))
                y = F.softmax(att, dim=-1) @ v
            y = y.transpose(1, 2).contiguous().view(b, t, c)
            return self.proj(y)

    class Block(nn.Module):
        def __init__(self, use_sdpa):
            super().__init__()
            self.ln1 = nn.LayerNorm(D)
            self.attn = CausalSelfAttention(use_sdpa)
            self.ln2 = nn.LayerNorm(D)
            self.mlp = nn.Sequential(nn.Linear(D, 4 * D), nn.GELU(), nn.Linear(4 * D, D))
            self.drop = nn.Dropout(0.0)

        def forward(self, x):
            x = x + self.drop(self.attn(self.ln1(x)))
            return x + self.drop(self.mlp(self.ln2(x)))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok_emb = nn.Embedding(VOCAB, D)
            self.pos_emb = nn.Embedding(BLOCK, D)
            self.blocks = nn.ModuleList([Block(False), Block(True)])
            self.ln_f = nn.LayerNorm(D)
            self.lm_head = nn.Linear(D, VOCAB, bias=False)
            self.lm_head.weight = self.tok_emb.weight

        def forward(self, idx, targets=None):
            t = idx.size(1)
            pos = torch.arange(t, dtype=torch.long)
            x = self.tok_emb(idx) + self.pos_emb(pos)
            for block in self.blocks:
                x = block(x)
            logits = self.lm_head(self.ln_f(x))
            if targets is None:
                return logits, None
            loss = F.cross_entropy(logits.view(-1, VOCAB), targets.view(-1))
            return logits, loss

        @torch.no_grad()
        def generate(self, idx, n_new):
            for _ in range(n_new):
                logits, _ = self(idx[:, -BLOCK:])
                nxt = logits[:, -1, :].argmax(dim=-1, keepdim=True)
                idx = torch.cat((idx, nxt), dim=1)
            return idx

    return GPT()


def train(torch, model, corpus, n_steps=6, wrap=identity):
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=n_steps)

    @wrap
    def train_step(x0, y0, x1, y1):
        total = 0.0
        for x, y in ((x0, y0), (x1, y1)):
            _, loss = model(x, y)
            (loss / 2).backward()
            total = total + loss.detach() / 2
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return total

    losses, lrs = [], []
    model.train()
    for micro in batches(corpus, n_steps):
        args = [torch.from_numpy(a) for pair in micro for a in pair]
        losses.append(train_step(*args).item())
        scheduler.step()
        lrs.append(scheduler.get_last_lr()[0])
    model.eval()
    prompt = torch.from_numpy(corpus[None, :4].copy())
    tokens = model.generate(prompt, 10)
    return losses, lrs, tokens.numpy()


def test_tiny_gpt_learns():
    kn.manual_seed(0)
    model = build(kn)
    assert model.lm_head.weight is model.tok_emb.weight
    corpus = make_corpus()
    losses, lrs, tokens = train(kn, model, corpus, n_steps=20)
    assert np.mean(losses[-3:]) < np.mean(losses[:3]) - 0.3
    assert lrs[-1] == pytest.approx(0.0, abs=1e-12)
    assert tokens.shape == (1, 14) and (tokens[0, :4] == corpus[:4]).all()


@pytest.mark.parametrize("wrap", ["eager", "compiled"])
def test_tiny_gpt_matches_torch(torch, wrap):
    torch.manual_seed(0)
    t_model, k_model = build(torch), build(kn)
    copy_weights(t_model, k_model)
    assert k_model.lm_head.weight is k_model.tok_emb.weight
    corpus = make_corpus()
    t_losses, t_lrs, t_tokens = train(torch, t_model, corpus)
    k_losses, k_lrs, k_tokens = train(
        kn, k_model, corpus, wrap=kn.compile if wrap == "compiled" else identity
    )
    assert_losses_close(k_losses, t_losses)
    np.testing.assert_allclose(k_lrs, t_lrs, rtol=1e-12)
    np.testing.assert_array_equal(k_tokens, t_tokens)
    assert k_model.lm_head.weight is k_model.tok_emb.weight
    # The key projection's bias adds q.b_k to every logit of a query alike, which softmax
    # cancels: its exact gradient is 0 and both frameworks' are rounding noise, which AdamW
    # turns into steps of up to lr each. Those entries agree within the sum of the lrs.
    keys = slice(D, 2 * D)
    loose = [(f"blocks.{i}.attn.qkv.bias", keys, 1e-2 + sum(t_lrs)) for i in range(2)]
    assert_state_close(t_model, k_model, loose)
