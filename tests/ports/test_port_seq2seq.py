"""A GRU encoder-decoder with additive (Bahdanau) attention and teacher forcing (the shape of
the classic PyTorch seq2seq translation tutorial), ported by renaming.

EncoderRNN (Embedding, dropout, nn.GRU batch_first), BahdanauAttention (Wa, Ua, Va, softmax,
`torch.bmm`), AttnDecoderRNN looping over the target length with `topk(1)` and
`.squeeze(-1).detach()` feeding its own prediction back unless teacher forcing gives the
target, `torch.cat` of the outputs, log_softmax + NLLLoss, one Adam per module. The task:
reverse a sequence of tokens. Which batches use teacher forcing is drawn with NumPy.
"""

import numpy as np
import pytest
from port_common import assert_losses_close, assert_state_close, copy_weights, identity

import kiln as kn

SOS, VOCAB, LENGTH, HIDDEN = 0, 10, 6, 24


def make_data(n=48, seed=9):
    rng = np.random.default_rng(seed)
    src = rng.integers(1, VOCAB, size=(n, LENGTH))
    return src.astype(np.int64), src[:, ::-1].copy().astype(np.int64)


def build(torch, dropout_p=0.1):
    nn = torch.nn
    F = torch.nn.functional

    class EncoderRNN(nn.Module):
        def __init__(self, input_size, hidden_size, dropout_p=0.1):
            super().__init__()
            self.hidden_size = hidden_size
            self.embedding = nn.Embedding(input_size, hidden_size)
            self.gru = nn.GRU(hidden_size, hidden_size, batch_first=True)
            self.dropout = nn.Dropout(dropout_p)

        def forward(self, input):
            embedded = self.dropout(self.embedding(input))
            output, hidden = self.gru(embedded)
            return output, hidden

    class BahdanauAttention(nn.Module):
        def __init__(self, hidden_size):
            super().__init__()
            self.Wa = nn.Linear(hidden_size, hidden_size)
            self.Ua = nn.Linear(hidden_size, hidden_size)
            self.Va = nn.Linear(hidden_size, 1)

        def forward(self, query, keys):
            scores = self.Va(torch.tanh(self.Wa(query) + self.Ua(keys)))
            scores = scores.squeeze(2).unsqueeze(1)
            weights = F.softmax(scores, dim=-1)
            context = torch.bmm(weights, keys)
            return context, weights

    class AttnDecoderRNN(nn.Module):
        def __init__(self, hidden_size, output_size, dropout_p=0.1):
            super().__init__()
            self.embedding = nn.Embedding(output_size, hidden_size)
            self.attention = BahdanauAttention(hidden_size)
            self.gru = nn.GRU(2 * hidden_size, hidden_size, batch_first=True)
            self.out = nn.Linear(hidden_size, output_size)
            self.dropout = nn.Dropout(dropout_p)

        def forward(self, encoder_outputs, encoder_hidden, target_tensor=None):
            batch_size = encoder_outputs.size(0)
            decoder_input = torch.empty(batch_size, 1, dtype=torch.long).fill_(SOS)
            decoder_hidden = encoder_hidden
            decoder_outputs, attentions = [], []
            for i in range(LENGTH):
                decoder_output, decoder_hidden, attn_weights = self.forward_step(
                    decoder_input, decoder_hidden, encoder_outputs
                )
                decoder_outputs.append(decoder_output)
                attentions.append(attn_weights)
                if target_tensor is not None:
                    decoder_input = target_tensor[:, i].unsqueeze(1)  # Teacher forcing
                else:
                    _, topi = decoder_output.topk(1)
                    decoder_input = topi.squeeze(-1).detach()  # detach from history as input
            decoder_outputs = torch.cat(decoder_outputs, dim=1)
            decoder_outputs = F.log_softmax(decoder_outputs, dim=-1)
            attentions = torch.cat(attentions, dim=1)
            return decoder_outputs, decoder_hidden, attentions

        def forward_step(self, input, hidden, encoder_outputs):
            embedded = self.dropout(self.embedding(input))
            query = hidden.permute(1, 0, 2)
            context, attn_weights = self.attention(query, encoder_outputs)
            input_gru = torch.cat((embedded, context), dim=2)
            output, hidden = self.gru(input_gru, hidden)
            output = self.out(output)
            return output, hidden, attn_weights

    encoder = EncoderRNN(VOCAB, HIDDEN, dropout_p)
    decoder = AttnDecoderRNN(HIDDEN, VOCAB, dropout_p)
    return encoder, decoder


def train(torch, encoder, decoder, data, epochs=3, teacher_forcing_ratio=0.5, seed=10,
          wrap=identity):  # fmt: skip
    src, tgt = data
    coin = np.random.default_rng(seed)
    encoder_optimizer = torch.optim.Adam(encoder.parameters(), lr=0.01)
    decoder_optimizer = torch.optim.Adam(decoder.parameters(), lr=0.01)
    criterion = torch.nn.NLLLoss()

    @wrap
    def train_step(input_tensor, target_tensor, use_teacher_forcing):
        encoder_optimizer.zero_grad()
        decoder_optimizer.zero_grad()
        encoder_outputs, encoder_hidden = encoder(input_tensor)
        decoder_outputs, _, _ = decoder(
            encoder_outputs, encoder_hidden, target_tensor if use_teacher_forcing else None
        )
        loss = criterion(decoder_outputs.view(-1, decoder_outputs.size(-1)), target_tensor.view(-1))
        loss.backward()
        encoder_optimizer.step()
        decoder_optimizer.step()
        return loss

    losses = []
    for _epoch in range(epochs):
        total_loss = 0.0
        for i in range(0, len(src), 16):
            input_tensor = torch.from_numpy(src[i : i + 16])
            target_tensor = torch.from_numpy(tgt[i : i + 16])
            use_teacher_forcing = bool(coin.random() < teacher_forcing_ratio)
            total_loss += train_step(input_tensor, target_tensor, use_teacher_forcing).item()
        losses.append(total_loss / (len(src) // 16))
    encoder.eval()
    decoder.eval()
    with torch.no_grad():
        encoder_outputs, encoder_hidden = encoder(torch.from_numpy(src))
        decoder_outputs, _, attentions = decoder(encoder_outputs, encoder_hidden)
        _, decoded_ids = decoder_outputs.topk(1)
    return losses, decoded_ids.squeeze(-1).numpy(), attentions.numpy()


def test_seq2seq_learns():
    encoder, decoder = build(kn)
    data = make_data()
    losses, decoded, attentions = train(kn, encoder, decoder, data, epochs=8)
    assert losses[-1] < 0.75 * losses[0]
    assert (decoded == data[1]).mean() > 0.3  # chance: 1/9
    np.testing.assert_allclose(attentions.sum(-1), 1.0, rtol=1e-5)


@pytest.mark.parametrize("wrap", ["eager", "compiled"])
def test_seq2seq_matches_torch(torch, wrap):
    torch.manual_seed(0)
    t_enc, t_dec = build(torch, dropout_p=0.0)
    k_enc, k_dec = build(kn, dropout_p=0.0)
    copy_weights(t_enc, k_enc)
    copy_weights(t_dec, k_dec)
    data = make_data()
    t_losses, t_decoded, t_attn = train(torch, t_enc, t_dec, data, epochs=1)
    k_losses, k_decoded, k_attn = train(
        kn, k_enc, k_dec, data, epochs=1, wrap=kn.compile if wrap == "compiled" else identity
    )
    assert_losses_close(k_losses, t_losses)
    np.testing.assert_array_equal(k_decoded, t_decoded)
    np.testing.assert_allclose(k_attn, t_attn, rtol=1e-3, atol=1e-5)
    assert_state_close(t_enc, k_enc)
    # Va's bias adds one constant to every score of a softmax, which cancels it: its exact
    # gradient is 0, both frameworks' are rounding noise, and Adam makes steps of up to lr
    # (0.01) from it. It agrees within the sum of those steps.
    assert_state_close(t_dec, k_dec, [("attention.Va.bias", slice(None), 0.01 * len(t_losses) * 3)])
