"""A DCGAN generator/discriminator pair (the shape of the classic PyTorch DCGAN example),
ported by renaming.

ConvTranspose2d / BatchNorm2d / ReLU / Tanh generator, Conv2d / LeakyReLU(inplace=True) /
Sigmoid discriminator, `weights_init` through `Module.apply` and `classname.find('Conv')`,
BCELoss with `torch.full` labels changed by `fill_`, two Adam optimizers with betas=(0.5,
0.999), and `fake.detach()` for the discriminator's step. The noise comes from NumPy.
"""

import numpy as np
import pytest
from port_common import assert_losses_close, assert_state_close, copy_weights, identity

import kiln as kn

NZ, NGF, NDF = 8, 8, 8


def make_data(n=32, seed=3):
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:16, 0:16]
    centers = rng.integers(4, 12, size=(n, 2))
    d2 = (yy[None] - centers[:, 0, None, None]) ** 2 + (xx[None] - centers[:, 1, None, None]) ** 2
    img = np.exp(-d2 / 8.0) * 2 - 1  # blobs in [-1, 1], as tanh gives
    return img[:, None].astype(np.float32)


def build(torch):
    nn = torch.nn

    class Generator(nn.Module):
        def __init__(self):
            super().__init__()
            self.main = nn.Sequential(
                nn.ConvTranspose2d(NZ, NGF * 2, 4, 1, 0, bias=False),
                nn.BatchNorm2d(NGF * 2),
                nn.ReLU(True),
                nn.ConvTranspose2d(NGF * 2, NGF, 4, 2, 1, bias=False),
                nn.BatchNorm2d(NGF),
                nn.ReLU(True),
                nn.ConvTranspose2d(NGF, 1, 4, 2, 1, bias=False),
                nn.Tanh(),
            )

        def forward(self, input):
            return self.main(input)

    class Discriminator(nn.Module):
        def __init__(self):
            super().__init__()
            self.main = nn.Sequential(
                nn.Conv2d(1, NDF, 4, 2, 1, bias=False),
                nn.LeakyReLU(0.2, inplace=True),
                nn.Conv2d(NDF, NDF * 2, 4, 2, 1, bias=False),
                nn.BatchNorm2d(NDF * 2),
                nn.LeakyReLU(0.2, inplace=True),
                nn.Conv2d(NDF * 2, 1, 4, 1, 0, bias=False),
                nn.Sigmoid(),
            )

        def forward(self, input):
            return self.main(input)

    def weights_init(m):
        classname = m.__class__.__name__
        if classname.find("Conv") != -1:
            nn.init.normal_(m.weight.data, 0.0, 0.02)
        elif classname.find("BatchNorm") != -1:
            nn.init.normal_(m.weight.data, 1.0, 0.02)
            nn.init.constant_(m.bias.data, 0)

    netG, netD = Generator(), Discriminator()
    netG.apply(weights_init)
    netD.apply(weights_init)
    return netG, netD


def train(torch, netG, netD, data, noise, wrap=identity):
    nn = torch.nn
    criterion = nn.BCELoss()
    real_label, fake_label = 1.0, 0.0
    optimizerD = torch.optim.Adam(netD.parameters(), lr=2e-3, betas=(0.5, 0.999))
    optimizerG = torch.optim.Adam(netG.parameters(), lr=2e-3, betas=(0.5, 0.999))

    @wrap
    def train_step(real_cpu, z):
        # (1) Update D: maximize log(D(x)) + log(1 - D(G(z)))
        netD.zero_grad()
        b_size = real_cpu.size(0)
        label = torch.full((b_size,), real_label, dtype=torch.float)
        output = netD(real_cpu).view(-1)
        errD_real = criterion(output, label)
        errD_real.backward()
        D_x = output.mean()
        fake = netG(z)
        label.fill_(fake_label)
        output = netD(fake.detach()).view(-1)
        errD_fake = criterion(output, label)
        errD_fake.backward()
        D_G_z1 = output.mean()
        errD = errD_real + errD_fake
        optimizerD.step()
        # (2) Update G: maximize log(D(G(z)))
        netG.zero_grad()
        label.fill_(real_label)
        output = netD(fake).view(-1)
        errG = criterion(output, label)
        errG.backward()
        D_G_z2 = output.mean()
        optimizerG.step()
        return errD, errG, D_x, D_G_z1, D_G_z2

    history = []
    for i in range(len(noise)):
        real_cpu = torch.from_numpy(data[(8 * i) % len(data) :][:8])
        values = train_step(real_cpu, torch.from_numpy(noise[i]))
        history.append([v.item() for v in values])
    return np.array(history)


def make_noise(steps, seed=4):
    return np.random.default_rng(seed).normal(size=(steps, 8, NZ, 1, 1)).astype(np.float32)


def test_dcgan_trains():
    netG, netD = build(kn)
    for name, p in netD.named_parameters():  # weights_init drew N(0, 0.02) into the convs
        if name.endswith("0.weight"):
            assert abs(float(p.std()) - 0.02) < 0.005
    history = train(kn, netG, netD, make_data(), make_noise(10))
    assert np.isfinite(history).all()
    assert history[-3:, 2].mean() > history[-3:, 3].mean()  # D tells real from fake
    assert netG(kn.from_numpy(make_noise(1)[0])).shape == (8, 1, 16, 16)


@pytest.mark.parametrize("wrap", ["eager", "compiled"])
def test_dcgan_matches_torch(torch, wrap):
    torch.manual_seed(0)
    t_G, t_D = build(torch)
    k_G, k_D = build(kn)
    copy_weights(t_G, k_G)
    copy_weights(t_D, k_D)
    data, noise = make_data(), make_noise(5)
    t_hist = train(torch, t_G, t_D, data, noise)
    k_hist = train(kn, k_G, k_D, data, noise, wrap=kn.compile if wrap == "compiled" else identity)
    assert_losses_close(k_hist.ravel(), t_hist.ravel())
    assert_state_close(t_G, k_G)
    assert_state_close(t_D, k_D)
