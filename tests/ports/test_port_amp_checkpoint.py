"""Mixed precision and checkpoints, ported by renaming.

An MLP regressor trained under `torch.autocast(device_type="cpu", dtype=torch.bfloat16)` with
`torch.amp.GradScaler` (scale, step, update; unscale_ before clip_grad_norm_), and the
checkpoint round trip of a training script: `torch.save({"epoch", "model_state_dict",
"optimizer_state_dict", "scheduler_state_dict", "loss"}, PATH)`, then a fresh model,
optimizer and scheduler restored with `torch.load(PATH)` and `load_state_dict`, training on
exactly as if it had never stopped.
"""

import numpy as np
import pytest
from port_common import assert_losses_close, assert_state_close, copy_weights, identity

import kiln as kn


def make_data(n=64, seed=11):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 8)).astype(np.float32)
    w = rng.normal(size=(8, 1)).astype(np.float32)
    return x, (np.tanh(x @ w) + 0.1 * rng.normal(size=(n, 1))).astype(np.float32)


def build(torch):
    nn = torch.nn
    return nn.Sequential(nn.Linear(8, 32), nn.GELU(), nn.LayerNorm(32), nn.Linear(32, 1))


def train_amp(torch, model, data, steps=8, wrap=identity):
    x, y = data
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**10, growth_interval=3)

    @wrap
    def train_step(inputs, target):
        optimizer.zero_grad()
        with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
            output = model(inputs)
            loss = torch.nn.functional.mse_loss(output.float(), target)
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()
        return loss, output

    losses, dtypes = [], set()
    for i in range(steps):
        batch = slice((16 * i) % len(x), (16 * i) % len(x) + 16)
        loss, output = train_step(torch.from_numpy(x[batch]), torch.from_numpy(y[batch]))
        losses.append(loss.item())
        dtypes.add(str(output.dtype).rpartition(".")[2])
    return losses, scaler.get_scale(), dtypes


def test_amp_learns():
    model = build(kn)
    losses, scale, dtypes = train_amp(kn, model, make_data(), steps=16)
    assert dtypes == {"bfloat16"}  # Linear runs in bfloat16 under autocast
    assert np.mean(losses[-4:]) < 0.7 * np.mean(losses[:4])
    assert scale == 2.0**10 * 2**5  # no inf gradient: the scale doubled every 3 steps
    assert model[0].weight.dtype == kn.float32  # the parameters stay float32


@pytest.mark.parametrize("wrap", ["eager", "compiled"])
def test_amp_matches_torch(torch, wrap):
    torch.manual_seed(0)
    t_model, k_model = build(torch), build(kn)
    copy_weights(t_model, k_model)
    data = make_data()
    t_losses, t_scale, t_dtypes = train_amp(torch, t_model, data)
    k_losses, k_scale, k_dtypes = train_amp(
        kn, k_model, data, wrap=kn.compile if wrap == "compiled" else identity
    )
    assert k_dtypes == t_dtypes and k_scale == t_scale
    # bfloat16 keeps 8 bits of mantissa (a relative rounding of 2**-9, 2e-3); one different
    # rounding of a product sum moves a loss by about that much
    assert_losses_close(k_losses, t_losses, rtol=2e-2, atol=1e-3)
    assert_state_close(t_model, k_model, rtol=2e-2, atol=2e-3)


def train_epochs(torch, model, optimizer, scheduler, data, epochs):
    x, y = data
    losses = []
    for _ in range(epochs):
        for i in range(0, len(x), 16):
            optimizer.zero_grad()
            loss = torch.nn.functional.mse_loss(
                model(torch.from_numpy(x[i : i + 16])), torch.from_numpy(y[i : i + 16])
            )
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        scheduler.step()
    return losses


def resume_run(torch, path, data, seed_model=None):
    """Two epochs, a checkpoint, a fresh model restored from it, two more epochs; and the
    same four epochs without stopping from the same start."""

    def fresh():
        model = build(torch)
        if seed_model is not None:
            model.load_state_dict(seed_model.state_dict())
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
        scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.8)
        return model, optimizer, scheduler

    model, optimizer, scheduler = fresh()
    first = train_epochs(torch, model, optimizer, scheduler, data, 2)
    torch.save(
        {
            "epoch": 2,
            "model_state_dict": model.state_dict(),
            "optimizer_state_dict": optimizer.state_dict(),
            "scheduler_state_dict": scheduler.state_dict(),
            "loss": first[-1],
        },
        path,
    )
    model, optimizer, scheduler = fresh()  # other initial weights where no seed model
    checkpoint = torch.load(path)
    model.load_state_dict(checkpoint["model_state_dict"])
    optimizer.load_state_dict(checkpoint["optimizer_state_dict"])
    scheduler.load_state_dict(checkpoint["scheduler_state_dict"])
    assert checkpoint["epoch"] == 2 and checkpoint["loss"] == pytest.approx(first[-1])
    model.train()
    resumed = first + train_epochs(torch, model, optimizer, scheduler, data, 2)
    return resumed, model, optimizer


def test_checkpoint_resume_is_seamless(tmp_path):
    data = make_data()
    kn.manual_seed(0)
    start = build(kn)
    resumed, model, optimizer = resume_run(kn, tmp_path / "ckpt.pt", data, seed_model=start)
    straight_model = build(kn)
    copy_weights(start, straight_model)
    straight_opt = kn.optim.Adam(straight_model.parameters(), lr=1e-2)
    straight_sched = kn.optim.lr_scheduler.ExponentialLR(straight_opt, gamma=0.8)
    straight = train_epochs(kn, straight_model, straight_opt, straight_sched, data, 4)
    np.testing.assert_array_equal(resumed, straight)  # the same operations on the same bits
    assert_state_close(straight_model, model, rtol=0, atol=0)
    assert optimizer.param_groups[0]["lr"] == pytest.approx(1e-2 * 0.8**4)
    assert resumed[-1] < resumed[0]


def test_checkpoint_resume_matches_torch(torch, tmp_path):
    torch.manual_seed(0)
    data = make_data()
    seed_model = build(torch)
    k_seed = build(kn)
    copy_weights(seed_model, k_seed)
    t_losses, t_model, t_opt = resume_run(torch, tmp_path / "t.pt", data, seed_model)
    k_losses, k_model, k_opt = resume_run(kn, tmp_path / "k.pt", data, k_seed)
    assert_losses_close(k_losses, t_losses)
    assert_state_close(t_model, k_model)
    t_state, k_state = t_opt.state_dict(), k_opt.state_dict()
    assert k_state["param_groups"][0]["lr"] == pytest.approx(t_state["param_groups"][0]["lr"])
    for i, slots in t_state["state"].items():
        for name, value in slots.items():
            np.testing.assert_allclose(
                np.asarray(k_state["state"][i][name]), value.numpy(), rtol=1e-3, atol=1e-6
            )
