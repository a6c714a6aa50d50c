"""A sine-wave predictor with two LSTMCells trained by LBFGS (the shape of the classic PyTorch
time_sequence_prediction example), ported by renaming.

`model.double()`, LSTMCell state initialized with `torch.zeros(..., dtype=torch.double)`,
`input.split(1, dim=1)`, predicting `future` steps ahead by feeding outputs back,
`torch.cat(outputs, dim=1)`, MSELoss, and `optim.LBFGS(lr=0.8)` stepped with a closure; then
the prediction under `no_grad`. In float64 both runs agree to about 1e-9 (the tolerance).
"""

import numpy as np
import pytest
from port_common import copy_weights, identity

import kiln as kn

TOL64 = {"rtol": 1e-9, "atol": 1e-10}


def make_data(seed=8):
    rng = np.random.default_rng(seed)
    x = np.arange(16)[None] + rng.integers(-8, 8, size=(6, 1))
    return np.sin(x / 4.0).astype(np.float64)


def build(torch, hidden=12):
    nn = torch.nn

    class Sequence(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm1 = nn.LSTMCell(1, hidden)
            self.lstm2 = nn.LSTMCell(hidden, hidden)
            self.linear = nn.Linear(hidden, 1)

        def forward(self, input, future=0):
            outputs = []
            h_t = torch.zeros(input.size(0), hidden, dtype=torch.double)
            c_t = torch.zeros(input.size(0), hidden, dtype=torch.double)
            h_t2 = torch.zeros(input.size(0), hidden, dtype=torch.double)
            c_t2 = torch.zeros(input.size(0), hidden, dtype=torch.double)
            for input_t in input.split(1, dim=1):
                h_t, c_t = self.lstm1(input_t, (h_t, c_t))
                h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
                output = self.linear(h_t2)
                outputs += [output]
            for _ in range(future):  # if we should predict the future
                h_t, c_t = self.lstm1(output, (h_t, c_t))
                h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
                output = self.linear(h_t2)
                outputs += [output]
            outputs = torch.cat(outputs, dim=1)
            return outputs

    seq = Sequence()
    seq.double()
    return seq


def train(torch, seq, data, steps=3, wrap=identity):
    input = torch.from_numpy(data[:4, :-1])
    target = torch.from_numpy(data[:4, 1:])
    test_input = torch.from_numpy(data[4:, :-1])
    test_target = torch.from_numpy(data[4:, 1:])
    criterion = torch.nn.MSELoss()
    optimizer = torch.optim.LBFGS(seq.parameters(), lr=0.8, max_iter=6)
    loss_of = wrap(lambda inp, tgt: criterion(seq(inp), tgt))
    losses = []
    for _i in range(steps):

        def closure():
            optimizer.zero_grad()
            loss = loss_of(input, target)
            losses.append(loss.item())
            loss.backward()
            return loss

        optimizer.step(closure)
        with torch.no_grad():
            future = 5
            pred = seq(test_input, future=future)
            test_loss = criterion(pred[:, :-future], test_target).item()
    return np.array(losses), test_loss, pred.detach().numpy()


def test_time_sequence_learns():
    seq = build(kn)
    assert seq.lstm1.weight_ih.dtype == kn.float64
    losses, test_loss, pred = train(kn, seq, make_data(), steps=4)
    assert losses[-1] < 0.1 * losses[0]
    assert test_loss < 0.2 * losses[0]
    assert pred.shape == (2, 20) and pred.dtype == np.float64


@pytest.mark.parametrize("wrap", ["eager", "compiled"])
def test_time_sequence_matches_torch(torch, wrap):
    torch.manual_seed(0)
    t_seq, k_seq = build(torch), build(kn)
    copy_weights(t_seq, k_seq)
    data = make_data()
    t_losses, t_test, t_pred = train(torch, t_seq, data, steps=2)
    k_losses, k_test, k_pred = train(
        kn, k_seq, data, steps=2, wrap=kn.compile if wrap == "compiled" else identity
    )
    assert len(k_losses) == len(t_losses)  # LBFGS evaluated the closure as often
    np.testing.assert_allclose(k_losses, t_losses, **TOL64)
    np.testing.assert_allclose(k_test, t_test, **TOL64)
    np.testing.assert_allclose(k_pred, t_pred, **TOL64)
    for name, p in t_seq.state_dict().items():
        np.testing.assert_allclose(
            k_seq.state_dict()[name].numpy(), p.numpy(), err_msg=name, **TOL64
        )
