"""Random training steps: a model drawn from nn layers, a loss and an optimizer (with gradient
clipping and a scheduler sometimes), run for a few steps by torch 2.13, by kiln eagerly and by
kiln under `kn.compile` (the whole step: zero_grad, forward, backward, clip, step), all in
float64 from the same initial weights. The losses, the parameters and the buffers (batch
norm's running statistics) after each step must agree (skipped without torch: torch is the
oracle). float64 keeps rounding far below the tolerance, so a difference is a bug.

`KILN_TRAIN_PROGRAMS` sets how many programs run (default 16); `python tests/test_train_fuzz.py
LO HI` prints every program in [LO, HI) that differs.
"""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import kiln as kn

# (adaptive optimizers scale a gradient of rounding noise to a step of its sign: ATOL)
RTOL, ATOL = 1e-7, 1e-8
STEPS = 3


class Draw:
    """Choices from one seed's generator."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)

    def pick(self, options):
        return options[int(self.rng.integers(len(options)))]

    def coin(self, p=0.5):
        return bool(self.rng.random() < p)


# layer name -> spec(draw, features) giving (spec, features out) for flat (N, F) values
ACTIVATIONS = [
    ("ReLU", {}), ("GELU", {}), ("GELU", {"approximate": "tanh"}), ("SiLU", {}),
    ("Tanh", {}), ("Sigmoid", {}), ("LeakyReLU", {"negative_slope": 0.1}), ("ELU", {}),
    ("Softplus", {}), ("Hardswish", {}), ("Mish", {}), ("CELU", {"alpha": 0.5}),
    ("Hardtanh", {}), ("SELU", {}), ("LogSigmoid", {}), ("Softsign", {}),
]  # fmt: skip


def draw_flat(d: Draw, features: int, depth: int) -> tuple[list, int]:
    """Layer specs (name, args, kwargs) for (N, features) inputs, and the features out."""
    specs = []
    for _ in range(depth):
        kind = d.pick(["linear", "linear", "act", "act", "norm", "bn", "residual", "dropout0"])
        if kind == "linear":
            out = int(d.rng.integers(2, 7))
            specs.append(("Linear", (features, out), {"bias": d.coin(0.8)}))
            features = out
        elif kind == "act":
            name, kw = d.pick(ACTIVATIONS)
            specs.append((name, (), kw))
        elif kind == "norm":
            specs.append(("LayerNorm", (features,), {"elementwise_affine": d.coin(0.7)}))
        elif kind == "bn":
            specs.append(("BatchNorm1d", (features,), {"momentum": d.pick([0.1, 0.5, None])}))
        elif kind == "residual":
            specs.append(("residual", (features,), {}))
        else:
            specs.append(("Dropout", (0.0,), {}))
    return specs, features


def draw_conv(d: Draw) -> tuple[list, int]:
    """Layer specs for (N, 3, 8, 8) images, ending flat; and the features out."""
    specs, channels, size = [], 3, 8
    for _ in range(int(d.rng.integers(1, 4))):
        kind = d.pick(["conv", "conv", "bn", "pool", "act"])
        if kind == "conv":
            out = int(d.rng.integers(2, 5))
            k = d.pick([1, 2, 3])
            pad = int(d.rng.integers(0, k // 2 + 1))
            stride = d.pick([1, 1, 2])
            groups = d.pick([1, g]) if (g := np.gcd(channels, out)) > 1 and d.coin() else 1
            kw = {"padding": pad, "stride": stride, "groups": int(groups), "bias": d.coin(0.8)}
            specs.append(("Conv2d", (channels, out, k), kw))
            channels, size = out, (size + 2 * pad - k) // stride + 1
        elif kind == "bn":
            specs.append(("BatchNorm2d", (channels,), {}))
        elif kind == "pool" and size >= 2:
            specs.append((d.pick(["MaxPool2d", "AvgPool2d"]), (2,), {}))
            size //= 2
        else:
            name, kw = d.pick(ACTIVATIONS[:8])
            specs.append((name, (), kw))
    if d.coin():
        specs.append(("AdaptiveAvgPool2d", (1,), {}))
        size = 1
    specs.append(("Flatten", (), {}))
    return specs, channels * size * size


def draw_sequence(d: Draw) -> tuple[list, int]:
    """Layer specs for (N, 5) token ids: an embedding, a recurrent layer, its last step."""
    hidden = int(d.rng.integers(2, 5))
    cell = d.pick(["LSTM", "GRU", "RNN"])
    specs = [
        ("Embedding", (7, 3), {"padding_idx": d.pick([None, 0])}),
        (cell, (3, hidden), {"batch_first": True, "num_layers": d.pick([1, 2]),
                             "bidirectional": d.coin(0.3)}),
        ("last_step", (), {}),
    ]  # fmt: skip
    return specs, hidden * (2 if specs[1][2]["bidirectional"] else 1)


def draw_program(seed: int) -> dict:
    d = Draw(seed)
    front = d.pick(["flat", "flat", "conv", "sequence"])
    if front == "flat":
        specs, features = draw_flat(d, 6, int(d.rng.integers(1, 5)))
    elif front == "conv":
        specs, features = draw_conv(d)
    else:
        specs, features = draw_sequence(d)
    loss = d.pick(["cross_entropy", "mse", "l1", "smooth_l1", "huber", "bce_logits", "nll"])
    classes = 3
    tail, features = draw_flat(d, features, int(d.rng.integers(0, 2)))
    specs = _no_bias_before_batch_norm([*specs, *tail, ("Linear", (features, classes), {})])
    optimizer = d.pick([
        ("SGD", {"lr": 0.1}), ("SGD", {"lr": 0.05, "momentum": 0.9}),
        ("SGD", {"lr": 0.05, "momentum": 0.9, "nesterov": True, "weight_decay": 0.01}),
        ("SGD", {"lr": 0.05, "momentum": 0.5, "dampening": 0.1}),
        ("Adam", {"lr": 0.01}), ("Adam", {"lr": 0.01, "amsgrad": True, "weight_decay": 0.1}),
        ("AdamW", {"lr": 0.01, "weight_decay": 0.1}), ("RMSprop", {"lr": 0.01}),
        ("RMSprop", {"lr": 0.01, "momentum": 0.9, "centered": True}),
        ("Adagrad", {"lr": 0.1}), ("Adamax", {"lr": 0.01}), ("NAdam", {"lr": 0.01}),
        ("RAdam", {"lr": 0.01}), ("Adadelta", {"lr": 1.0}),
    ])  # fmt: skip
    clip = d.pick([None, None, ("norm", 0.5), ("value", 0.1), ("norm_inf", 0.3)])
    scheduler = d.pick([None, None, ("StepLR", {"step_size": 1, "gamma": 0.5})])
    return {"front": front, "specs": specs, "loss": loss, "classes": classes,
            "optimizer": optimizer, "clip": clip, "scheduler": scheduler,
            "data_seed": int(d.rng.integers(1 << 30))}  # fmt: skip


def _no_bias_before_batch_norm(specs):
    """specs without the biases that a batch norm takes away: those of the affine layers
    (Linear, Conv2d, residual blocks, through flattening and average pools) before it, back
    to the first that is not affine (a LayerNorm's or BatchNorm's own shift goes too). Their
    true gradient is 0, so each library's is rounding noise, which adaptive optimizers scale
    to a step of +-lr: the libraries' steps would differ by noise, not by a bug."""
    through = {"Flatten", "AvgPool2d", "AdaptiveAvgPool2d", "Dropout"}
    specs = [(name, args, dict(kw)) for name, args, kw in specs]
    for k, (name, _, _) in enumerate(specs):
        if not name.startswith("BatchNorm"):
            continue
        for before, _, kw in reversed(specs[:k]):
            if before in ("Linear", "Conv2d", "residual"):
                kw["bias"] = False  # (affine: a constant before it is one after it)
            elif before == "LayerNorm":
                kw["bias"] = False
                break
            elif before.startswith("BatchNorm"):
                kw["affine"] = False
                break
            elif before not in through:
                break
    return specs


class Residual:
    """x + Linear(x) (features to features)."""

    def __init__(self, lib, features, bias=True):
        self.inner = lib.nn.Linear(features, features, bias=bias)

    def __call__(self, x):
        return x + self.inner(x)


def build(lib, specs):
    """The model: a Sequential of the specs' layers, in float64."""
    layers = []
    for name, args, kw in specs:
        if name == "residual":
            layers.append(_module(lib, Residual(lib, *args, **kw)))
        elif name == "last_step":
            layers.append(_module(lib, _LastStep()))
        else:
            layers.append(getattr(lib.nn, name)(*args, **kw))
    return lib.nn.Sequential(*layers).double()


class _LastStep:
    def __call__(self, out):
        return out[0][:, -1]


def _module(lib, obj):
    """obj (a callable, with sub-modules as attributes) as a Module of lib."""

    class Wrapped(lib.nn.Module):
        def __init__(self):
            super().__init__()
            for k, v in vars(obj).items():
                setattr(self, k, v)

        def forward(self, x):
            return type(obj).__call__(self, x)

    return Wrapped()


def copy_weights(src, dst):
    """torch module `src`'s parameters and buffers into kiln module `dst`."""
    state = {k: kn.tensor(v.detach().numpy().copy()) for k, v in src.state_dict().items()}
    dst.load_state_dict(state)


def data(program, lib):
    rng = np.random.default_rng(program["data_seed"])
    batches = []
    for _ in range(STEPS):
        if program["front"] == "flat":
            x = lib.tensor(rng.standard_normal((4, 6)))
        elif program["front"] == "conv":
            x = lib.tensor(rng.standard_normal((4, 3, 8, 8)))
        else:
            x = lib.tensor(rng.integers(0, 7, (4, 5)))
        n = x.shape[0]
        labels = rng.integers(0, program["classes"], n)
        if program["loss"] in ("cross_entropy", "nll"):
            y = lib.tensor(labels)
        elif program["loss"] == "bce_logits":
            y = lib.tensor(rng.integers(0, 2, (n, program["classes"])).astype(np.float64))
        else:
            y = lib.tensor(rng.standard_normal((n, program["classes"])))
        batches.append((x, y))
    return batches


def loss_fn(lib, name, out, y):
    F = lib.nn.functional
    if name == "cross_entropy":
        return F.cross_entropy(out, y)
    if name == "nll":
        return F.nll_loss(F.log_softmax(out, dim=1), y)
    if name == "mse":
        return F.mse_loss(out, y)
    if name == "l1":
        return F.l1_loss(out, y)
    if name == "smooth_l1":
        return F.smooth_l1_loss(out, y, beta=0.5)
    if name == "huber":
        return F.huber_loss(out, y, delta=0.7)
    return F.binary_cross_entropy_with_logits(out, y)


def run(program, lib, model, compiled=False):
    """Losses and states (parameters and buffers, by name) after each step."""
    name, kw = program["optimizer"]
    opt = getattr(lib.optim, name)(model.parameters(), **kw)
    sched = None
    if program["scheduler"] is not None:
        sname, skw = program["scheduler"]
        sched = getattr(lib.optim.lr_scheduler, sname)(opt, **skw)
    clip = program["clip"]

    def step(x, y):
        opt.zero_grad()
        loss = loss_fn(lib, program["loss"], model(x), y)
        loss.backward()
        if clip is not None and clip[0] == "norm":
            lib.nn.utils.clip_grad_norm_(model.parameters(), clip[1])
        elif clip is not None and clip[0] == "norm_inf":
            lib.nn.utils.clip_grad_norm_(model.parameters(), clip[1], norm_type=float("inf"))
        elif clip is not None:
            lib.nn.utils.clip_grad_value_(model.parameters(), clip[1])
        opt.step()
        return loss

    if compiled:
        step = kn.compile(step)
    record = []
    for x, y in data(program, lib):
        loss = step(x, y)
        if sched is not None:
            sched.step()
        state = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
        record.append((float(loss.detach().numpy()), state))
    return record


def compare(seed: int) -> str | None:
    """None when torch, kiln eager and kiln compiled agree on program `seed`, else why not."""
    import torch

    program = draw_program(seed)
    torch.manual_seed(seed)
    reference = build(torch, program["specs"])
    results = {}
    for mode in ("eager", "compiled"):
        model = build(kn, program["specs"])
        copy_weights(reference, model)
        try:
            results[mode] = run(program, kn, model, compiled=mode == "compiled")
        except Exception as e:  # noqa: BLE001 (reported as the difference)
            results[mode] = f"raises {type(e).__name__}: {str(e)[:300]}"
    theirs = run(program, torch, reference)
    for mode, ours in results.items():
        why = _differ(theirs, ours)
        if why:
            return f"program {seed} ({mode}): {why}\n  {program}"
    return None


def _differ(theirs, ours) -> str | None:
    if isinstance(ours, str):
        return ours
    for k, ((lt, st), (lo, so)) in enumerate(zip(theirs, ours)):
        if not np.isclose(lt, lo, rtol=RTOL, atol=ATOL):
            return f"step {k}: loss {lo!r}, torch {lt!r}"
        if st.keys() != so.keys():
            return f"step {k}: state keys {sorted(so)} vs torch {sorted(st)}"
        for name in st:
            a, b = np.asarray(st[name]), np.asarray(so[name])
            if a.shape != b.shape or not np.allclose(a, b, rtol=RTOL, atol=ATOL):
                err = np.max(np.abs(a - b)) if a.shape == b.shape else "shape"
                return f"step {k}: {name} differs (max abs {err})"
    return None


COUNT = int(os.environ.get("KILN_TRAIN_PROGRAMS", "16"))


@pytest.mark.parametrize("seed", range(COUNT))
def test_random_training_steps_agree_with_torch(seed):
    pytest.importorskip("torch")
    why = compare(seed)
    assert why is None, why


if __name__ == "__main__":
    lo, hi = int(sys.argv[1]), int(sys.argv[2])
    bad = 0
    for s in range(lo, hi):
        try:
            why = compare(s)
        except Exception as e:  # noqa: BLE001
            why = f"program {s}: CRASH {type(e).__name__}: {e}"[:600]
        if why:
            bad += 1
            print(why, flush=True)
    print("done", bad, flush=True)
