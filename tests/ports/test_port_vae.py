"""A VAE (the shape of the classic PyTorch VAE example), ported by renaming.

Linear encoder to `mu` and `logvar`, the reparameterization `mu + eps * exp(0.5 * logvar)`
with `randn_like`, a sigmoid decoder, `binary_cross_entropy(..., reduction='sum')` plus the KL
term, Adam. The comparison with torch passes the same NumPy `eps` to both runs (each
framework's `randn_like` draws its own numbers); the run without torch draws them.
"""

import numpy as np
import pytest
from port_common import assert_losses_close, assert_state_close, copy_weights, identity

import kiln as kn


def make_data(n=64, seed=1):
    rng = np.random.default_rng(seed)
    centers = rng.random((4, 64)) > 0.5
    labels = rng.integers(0, 4, n)
    flips = rng.random((n, 64)) < 0.1
    return (centers[labels] ^ flips).astype(np.float32).reshape(n, 1, 8, 8)


def build(torch):
    nn = torch.nn
    F = torch.nn.functional

    class VAE(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(64, 32)
            self.fc21 = nn.Linear(32, 4)
            self.fc22 = nn.Linear(32, 4)
            self.fc3 = nn.Linear(4, 32)
            self.fc4 = nn.Linear(32, 64)

        def encode(self, x):
            h1 = F.relu(self.fc1(x))
            return self.fc21(h1), self.fc22(h1)

        def reparameterize(self, mu, logvar, eps=None):
            std = torch.exp(0.5 * logvar)
            if eps is None:
                eps = torch.randn_like(std)
            return mu + eps * std

        def decode(self, z):
            h3 = F.relu(self.fc3(z))
            return torch.sigmoid(self.fc4(h3))

        def forward(self, x, eps=None):
            mu, logvar = self.encode(x.view(-1, 64))
            z = self.reparameterize(mu, logvar, eps)
            return self.decode(z), mu, logvar

    def loss_function(recon_x, x, mu, logvar):
        BCE = F.binary_cross_entropy(recon_x, x.view(-1, 64), reduction="sum")
        KLD = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
        return BCE + KLD

    return VAE(), loss_function


def train(torch, model, loss_function, data, epochs=4, noise=None, wrap=identity):
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)

    @wrap
    def train_step(x, eps):
        optimizer.zero_grad()
        recon_batch, mu, logvar = model(x, eps)
        loss = loss_function(recon_batch, x, mu, logvar)
        loss.backward()
        optimizer.step()
        return loss

    losses = []
    model.train()
    for epoch in range(epochs):
        train_loss = 0.0
        for i in range(0, len(data), 16):
            x = torch.from_numpy(data[i : i + 16])
            eps = None if noise is None else torch.from_numpy(noise[epoch, i // 16])
            loss = train_step(x, eps)
            train_loss += loss.item()
        losses.append(train_loss / len(data))
    model.eval()
    with torch.no_grad():
        sample = model.decode(torch.from_numpy(np.zeros((2, 4), np.float32)))
    return losses, sample.numpy()


def test_vae_learns():
    model, loss_function = build(kn)
    losses, sample = train(kn, model, loss_function, make_data(), epochs=6)
    assert losses[-1] < 0.85 * losses[0]
    assert sample.shape == (2, 64) and ((sample > 0) & (sample < 1)).all()


@pytest.mark.parametrize("wrap", ["eager", "compiled"])
def test_vae_matches_torch(torch, wrap):
    torch.manual_seed(0)
    data = make_data()
    noise = np.random.default_rng(2).normal(size=(4, 4, 16, 4)).astype(np.float32)
    t_model, t_loss_fn = build(torch)
    k_model, k_loss_fn = build(kn)
    copy_weights(t_model, k_model)
    t_losses, t_sample = train(torch, t_model, t_loss_fn, data, noise=noise)
    k_losses, k_sample = train(
        kn,
        k_model,
        k_loss_fn,
        data,
        noise=noise,
        wrap=kn.compile if wrap == "compiled" else identity,
    )
    assert_losses_close(k_losses, t_losses)
    np.testing.assert_allclose(k_sample, t_sample, rtol=1e-3, atol=1e-5)
    assert_state_close(t_model, k_model)
