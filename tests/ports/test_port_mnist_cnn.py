"""An MNIST-style CNN (the shape of the classic PyTorch MNIST example), ported by renaming.

Conv2d, BatchNorm2d, Dropout, max_pool2d, log_softmax + nll_loss, SGD with momentum and
StepLR, a DataLoader over a TensorDataset, and the eval loop with `no_grad`, argmax and
`eq(...).sum().item()`. The data: 14x14 images of ten noisy NumPy templates.
"""

import numpy as np
import pytest
from port_common import (
    LOSS_TOL,
    assert_losses_close,
    assert_state_close,
    copy_weights,
    identity,
)

import kiln as kn


def make_data(n=160, seed=0):
    rng = np.random.default_rng(seed)
    templates = rng.normal(size=(10, 1, 14, 14)).astype(np.float32)
    y = rng.integers(0, 10, size=n)
    x = templates[y] + 0.5 * rng.normal(size=(n, 1, 14, 14)).astype(np.float32)
    return x.astype(np.float32), y.astype(np.int64)


def build(torch, p1=0.25, p2=0.5):
    nn = torch.nn
    F = torch.nn.functional

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 8, 3, 1)
            self.bn1 = nn.BatchNorm2d(8)
            self.conv2 = nn.Conv2d(8, 16, 3, 1)
            self.dropout1 = nn.Dropout(p1)
            self.dropout2 = nn.Dropout(p2)
            self.fc1 = nn.Linear(400, 32)
            self.fc2 = nn.Linear(32, 10)

        def forward(self, x):
            x = self.conv1(x)
            x = F.relu(self.bn1(x))
            x = self.conv2(x)
            x = F.relu(x)
            x = F.max_pool2d(x, 2)
            x = self.dropout1(x)
            x = torch.flatten(x, 1)
            x = self.fc1(x)
            x = F.relu(x)
            x = self.dropout2(x)
            output = F.log_softmax(self.fc2(x), dim=1)
            return output

    return Net()


def train(torch, model, data, epochs=3, wrap=identity, shuffle=False):
    F = torch.nn.functional
    from_numpy = torch.from_numpy
    x, y = data
    loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(from_numpy(x[:128]), from_numpy(y[:128])),
        batch_size=16,
        shuffle=shuffle,
    )
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.7)

    @wrap
    def train_step(data, target):
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        return loss

    losses, lrs = [], []
    for _epoch in range(epochs):
        model.train()
        for data, target in loader:
            loss = train_step(data, target)
            losses.append(loss.item())
        scheduler.step()
        lrs.append(scheduler.get_last_lr()[0])

    model.eval()
    test_loss, correct = 0.0, 0
    test_x, test_y = from_numpy(x[128:]), from_numpy(y[128:])
    with torch.no_grad():
        for i in range(0, len(test_x), 16):
            output = model(test_x[i : i + 16])
            test_loss += F.nll_loss(output, test_y[i : i + 16], reduction="sum").item()
            pred = output.argmax(dim=1, keepdim=True)
            correct += pred.eq(test_y[i : i + 16].view_as(pred)).sum().item()
    return losses, lrs, test_loss / len(test_x), correct


def test_mnist_cnn_learns():
    kn.manual_seed(0)
    model = build(kn)
    losses, lrs, test_loss, correct = train(kn, model, make_data(), shuffle=True)
    assert np.mean(losses[-4:]) < 0.7 * np.mean(losses[:4])
    np.testing.assert_allclose(lrs, [0.07, 0.049, 0.0343], rtol=1e-6)  # 0.1 * 0.7**k
    assert correct >= 20  # of 32 held-out images (chance: about 3)


@pytest.mark.parametrize("wrap", ["eager", "compiled", "compiled model"])
def test_mnist_cnn_matches_torch(torch, wrap):
    torch.manual_seed(0)
    data = make_data()
    t_model = build(torch, p1=0.0, p2=0.0)
    k_model = build(kn, p1=0.0, p2=0.0)
    copy_weights(t_model, k_model)
    t_losses, t_lrs, t_test, t_correct = train(torch, t_model, data)
    if wrap == "compiled model":  # `model = torch.compile(model)`, then trained as it was
        compiled = kn.compile(k_model)
        assert list(compiled.state_dict()) == [f"_orig_mod.{k}" for k in t_model.state_dict()]
        k_losses, k_lrs, k_test, k_correct = train(kn, compiled, data)
        assert len(compiled._compiled_forward.cache) == 2  # a trace in train(), one in eval()
    else:
        k_losses, k_lrs, k_test, k_correct = train(
            kn, k_model, data, wrap=kn.compile if wrap == "compiled" else identity
        )
    assert_losses_close(k_losses, t_losses)
    np.testing.assert_allclose(k_lrs, t_lrs, rtol=1e-12)
    np.testing.assert_allclose(k_test, t_test, **LOSS_TOL)
    assert k_correct == t_correct
    assert_state_close(t_model, k_model)
