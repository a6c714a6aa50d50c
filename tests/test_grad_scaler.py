"""kn.amp.GradScaler: PyTorch's dynamic loss scaling, against a NumPy re-implementation of
its documented algorithm and against torch.amp.GradScaler("cpu"); errors; state_dict; an
MLP trained under autocast with a GradScaler reaching the float32 accuracy on digits."""

import warnings

import numpy as np
import pytest

import kiln as kn
from kiln.demo import load_digits
from kiln.utils.data import DataLoader, TensorDataset, random_split


def _reference(flags, init_scale, growth, backoff, interval):
    """PyTorch's algorithm (torch.amp.GradScaler.update docs and `_amp_update_scale_`), in
    NumPy: float32 scale, backoff at once on inf/NaN, growth after `interval` clean steps."""
    scale, tracker, out = np.float32(init_scale), 0, []
    for bad in flags:
        if bad:
            scale, tracker = np.float32(np.float64(scale) * backoff), 0
        elif tracker + 1 == interval:
            with np.errstate(over="ignore"):
                grown = np.float32(np.float64(scale) * growth)
            scale = grown if np.isfinite(grown) else scale
            tracker = 0
        else:
            tracker += 1
        out.append((float(scale), tracker))
    return out


def _grads(step: int, bad: bool) -> np.ndarray:
    g = np.linspace(-1.0, 1.0, 6, dtype=np.float32) * (step + 1)
    if bad:
        g[step % 6] = np.inf if step % 2 else np.nan
    return g


def _run(ns, flags, **options):
    """Sets each step's gradient by hand (inf/NaN where flagged), steps SGD through the
    scaler; returns (scale, tracker) after each update and the parameter values."""
    w = ns.zeros(6, requires_grad=True)
    opt = ns.optim.SGD([w], lr=0.1, momentum=0.9)
    scaler = ns.amp.GradScaler("cpu", **options)
    history, params = [], []
    for i, bad in enumerate(flags):
        opt.zero_grad()
        scaler.scale((w * 0.0).sum()).backward()  # makes the scale; the gradient is set next
        w.grad = ns.tensor(_grads(i, bad)) * scaler.get_scale()
        scaler.step(opt)
        scaler.update()
        history.append((scaler.get_scale(), scaler._get_growth_tracker()))
        params.append(w.detach().numpy().copy())
    return history, params


FLAGS = [False, False, True, False, False, False, True, True, False, False, False, False, False]
OPTIONS = dict(init_scale=2.0**10, growth_factor=2.0, backoff_factor=0.25, growth_interval=3)


def test_grad_scaler_scale_sequence_equals_the_numpy_algorithm():
    history, params = _run(kn, FLAGS, **OPTIONS)
    assert history == _reference(FLAGS, 2.0**10, 2.0, 0.25, 3)
    for i, bad in enumerate(FLAGS):  # a step with inf/NaN is skipped: nothing changes
        if bad and i:
            np.testing.assert_array_equal(params[i], params[i - 1])
        elif bad:
            np.testing.assert_array_equal(params[i], np.zeros(6, np.float32))
    assert np.isfinite(np.stack(params)).all()


def test_grad_scaler_growth_stops_at_overflow():
    # grown * 2 overflows float32: the scale stays, the tracker restarts (PyTorch's rule)
    big = float(np.finfo(np.float32).max) / 1.5
    assert _reference([False, False], big, 2.0, 0.5, 1) == [(big, 0), (big, 0)]
    scaler = kn.amp.GradScaler("cpu", init_scale=big, growth_interval=1)
    w = kn.ones(2, requires_grad=True)
    opt = kn.optim.SGD([w], lr=0.0)
    scaler.scale((w * 1e-30).sum()).backward()
    scaler.step(opt)
    scaler.update()
    assert (scaler.get_scale(), scaler._get_growth_tracker()) == (float(np.float32(big)), 0)


def test_grad_scaler_matches_torch():
    torch = pytest.importorskip("torch")
    ours, our_params = _run(kn, FLAGS, **OPTIONS)
    theirs, their_params = _run(torch, FLAGS, **OPTIONS)
    assert ours == theirs
    np.testing.assert_allclose(np.stack(our_params), np.stack(their_params), rtol=1e-6)


def test_grad_scaler_unscale_then_clip_matches_torch():
    torch = pytest.importorskip("torch")
    results = []
    for ns in (kn, torch):
        w = ns.tensor(np.float32([3.0, -4.0, 12.0])).requires_grad_(True)
        opt = ns.optim.Adam([w], lr=0.1)
        scaler = ns.amp.GradScaler("cpu", init_scale=512.0)
        for _ in range(3):
            opt.zero_grad()
            scaler.scale((w * w).sum()).backward()
            scaler.unscale_(opt)
            ns.nn.utils.clip_grad_norm_([w], max_norm=1.0)
            scaler.step(opt)
            scaler.update()
        results.append(w.detach().numpy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-6)


def test_grad_scaler_misuse_raises_as_torch():
    w = kn.ones(2, requires_grad=True)
    opt = kn.optim.SGD([w], lr=0.1)
    scaler = kn.amp.GradScaler("cpu")
    with pytest.raises(AssertionError, match="_scale is None"):
        scaler.step(opt)
    scaler.scale(w.sum()).backward()
    scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match="already been called on this optimizer"):
        scaler.unscale_(opt)
    scaler.step(opt)
    with pytest.raises(RuntimeError, match="after step"):
        scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match="step\\(\\) has already been called"):
        scaler.step(opt)
    with pytest.raises(RuntimeError, match="Closure use is not currently supported"):
        scaler.step(opt, closure=lambda: None)
    scaler.update()
    with pytest.raises(AssertionError, match="No inf checks were recorded prior to update"):
        scaler.update()
    half = kn.ones(2, dtype=kn.float16, requires_grad=True)
    opt16 = kn.optim.SGD([half], lr=0.1)
    scaler.scale(half.float().sum()).backward()
    with pytest.raises(ValueError, match="Attempting to unscale FP16 gradients"):
        scaler.step(opt16)
    with pytest.raises(AssertionError, match="growth factor must be > 1.0"):
        kn.amp.GradScaler("cpu", growth_factor=1.0)


def test_grad_scaler_state_dict_round_trip(tmp_path):
    scaler = kn.amp.GradScaler("cpu", **OPTIONS)
    w = kn.ones(1, requires_grad=True)
    opt = kn.optim.SGD([w], lr=0.1)
    for _ in range(2):
        scaler.scale(w.sum()).backward()
        scaler.step(opt)
        scaler.update()
    kn.save({"scaler": scaler.state_dict()}, tmp_path / "ckpt.safetensors")
    fresh = kn.amp.GradScaler("cpu")
    fresh.load_state_dict(kn.load(tmp_path / "ckpt.safetensors")["scaler"])
    assert fresh.state_dict() == scaler.state_dict() == {
        "scale": 1024.0, "growth_factor": 2.0, "backoff_factor": 0.25, "growth_interval": 3,
        "_growth_tracker": 2,
    }  # fmt: skip
    disabled = kn.amp.GradScaler("cpu", enabled=False)
    assert disabled.state_dict() == {} and disabled.get_scale() == 1.0
    with pytest.raises(RuntimeError, match="source state dict is empty"):
        fresh.load_state_dict({})


@pytest.mark.skipif(kn.cuda.is_available(), reason="checks the behaviour without CUDA")
def test_grad_scaler_on_cuda_without_gpu_disables_itself():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        scaler = kn.cuda.amp.GradScaler()
    assert not scaler.is_enabled() and "CUDA is not available" in str(caught[0].message)
    loss = kn.tensor(2.0)
    assert scaler.scale(loss) is loss


def _train_digits(dtype, epochs=5):
    x, y = load_digits()
    train, test = random_split(TensorDataset(kn.tensor(x), kn.tensor(y)), [0.8, 0.2],
                               generator=kn.Generator().manual_seed(0))  # fmt: skip
    kn.manual_seed(0)
    model = kn.nn.Sequential(kn.nn.Linear(64, 128), kn.nn.ReLU(), kn.nn.Linear(128, 10))
    opt = kn.optim.Adam(model.parameters(), lr=1e-2)
    on = dtype is not None
    scaler = kn.amp.GradScaler("cpu", enabled=on)
    loader = DataLoader(train, batch_size=64, shuffle=True, generator=kn.Generator().manual_seed(1))
    for _ in range(epochs):
        for xb, yb in loader:
            opt.zero_grad()
            with kn.autocast("cpu", dtype=dtype or kn.bfloat16, enabled=on):
                loss = kn.nn.functional.cross_entropy(model(xb), yb)
            assert loss.dtype == kn.float32
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
    xt, yt = (kn.stack(list(v)) for v in zip(*(test[i] for i in range(len(test)))))
    with kn.no_grad(), kn.autocast("cpu", dtype=dtype or kn.bfloat16, enabled=on):
        return (model(xt).argmax(1) == yt).float().mean().item()


def test_mlp_under_autocast_and_grad_scaler_reaches_float32_accuracy():
    full = _train_digits(None)
    assert full > 0.95
    for dtype in (kn.float16, kn.bfloat16):
        # within 1% of the float32 run (3 of the 359 held-out digits)
        assert _train_digits(dtype) >= full - 0.01
