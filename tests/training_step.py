"""The training step several tests run eagerly, under `kn.compile` and in PyTorch alike."""


def mse_step(m, opt):
    """`step(x)`: one optimizer step on the mean of `m(x) ** 2`, returning that loss (the
    same code for kiln and torch modules and optimizers)."""

    def step(x):
        opt.zero_grad()
        loss = (m(x) ** 2).mean()
        loss.backward()
        opt.step()
        return loss

    return step
