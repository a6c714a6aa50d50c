"""Mixed-precision training end to end, as a PyTorch script writes it: autocast, GradScaler,
AdamW, a cosine schedule and a shuffled DataLoader, checkpointed mid-run with kn.save; the
resumed run ends with exactly the parameters and scaler state of the uninterrupted one,
eagerly and with the forward pass under kn.compile."""

import numpy as np
import pytest

import kiln as kn
from kiln.utils.data import DataLoader, TensorDataset

STEPS, SAVE_AT = 12, 6  # the loader has 6 batches: saved at an epoch boundary


def _setup(compiled: bool):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((96, 8)).astype(np.float32)
    y = (x[:, :3].sum(1) > 0).astype(np.int64)
    kn.manual_seed(0)
    model = kn.nn.Sequential(kn.nn.Linear(8, 32), kn.nn.ReLU(), kn.nn.Linear(32, 2))
    opt = kn.optim.AdamW(model.parameters(), lr=1e-2)
    sched = kn.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=STEPS)
    # a large init_scale and a short interval: float16 overflows, steps are skipped, the
    # scale backs off and grows again within the run
    scaler = kn.amp.GradScaler("cpu", init_scale=2.0**20, growth_interval=2)
    gen = kn.Generator().manual_seed(1)
    loader = DataLoader(TensorDataset(kn.tensor(x), kn.tensor(y)), batch_size=16, shuffle=True,
                        generator=gen)  # fmt: skip

    def loss_of(xb, yb):
        with kn.autocast("cpu", dtype=kn.float16):
            return kn.nn.functional.cross_entropy(model(xb), yb)

    return model, opt, sched, scaler, gen, loader, kn.compile(loss_of) if compiled else loss_of


def _train(parts, steps):
    model, opt, sched, scaler, _, loader, loss_of = parts
    done, scales = 0, []
    while done < steps:
        for xb, yb in loader:
            if done == steps:
                break
            opt.zero_grad()
            scaler.scale(loss_of(xb, yb)).backward()
            scaler.step(opt)
            scaler.update()
            sched.step()
            scales.append(scaler.get_scale())
            done += 1
    return scales


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_mixed_precision_resume_is_bit_identical(compiled, tmp_path):
    straight = _setup(compiled)
    scales = _train(straight, STEPS)
    assert min(scales) < 2.0**20 and len(set(scales)) > 2  # backoff and growth both happened

    first = _setup(compiled)
    _train(first, SAVE_AT)
    model, opt, sched, scaler, gen, _, _ = first
    kn.save({"model": model.state_dict(), "optimizer": opt.state_dict(),
             "scheduler": sched.state_dict(), "scaler": scaler.state_dict(),
             "generator": gen.get_state()}, tmp_path / "ckpt.safetensors")  # fmt: skip

    resumed = _setup(compiled)
    ckpt = kn.load(tmp_path / "ckpt.safetensors")
    model, opt, sched, scaler, gen, _, _ = resumed
    model.load_state_dict(ckpt["model"])
    opt.load_state_dict(ckpt["optimizer"])
    sched.load_state_dict(ckpt["scheduler"])
    scaler.load_state_dict(ckpt["scaler"])
    gen.set_state(ckpt["generator"])
    _train(resumed, STEPS - SAVE_AT)

    for (name, a), (_, b) in zip(straight[0].state_dict().items(), model.state_dict().items()):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b), err_msg=name)
    assert scaler.state_dict() == straight[3].state_dict()
    assert opt.param_groups[0]["lr"] == straight[1].param_groups[0]["lr"]
