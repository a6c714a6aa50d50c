"""A small CNN's training step (two conv3x3 + ReLU + 2x2 max-pool layers, two linears, SGD,
batch 64 of 1x28x28, float32) eagerly and under `kn.compile`, beside PyTorch eager (when
importable) and beside its kernels by hand in NumPy (the same im2col products, the pools as
strided maxima): the step's time and the time of each of its heavy kernels, in one run,
single-threaded. PyTorch's convolutions and pools run oneDNN's direct kernels, where kiln's
run OpenBLAS products on im2col buffers: the PyTorch ratio is the gap such kernels leave.

    python bench/bench_cnn.py [--quick]
"""

import os

for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_name] = "1"

import argparse  # noqa: E402

import numpy as np  # noqa: E402
from bench_overhead import per_call_seconds  # noqa: E402

import kiln as kn  # noqa: E402
from kiln.ops import elementwise, nn_grad  # noqa: E402
from kiln.ops import nn as nn_ops  # noqa: E402

BATCH = 64


def build(lib):
    nn = lib.nn
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10),
    )  # fmt: skip


def step(lib, model, opt, x, y):
    opt.zero_grad()
    loss = lib.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return loss


def steps():
    """{label: a callable running one step}, after checking kiln's first steps (eager and
    compiled) give PyTorch's losses where PyTorch imports."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((BATCH, 1, 28, 28)).astype(np.float32)
    y = rng.integers(0, 10, BATCH)
    eager, compiled = build(kn), build(kn)
    compiled.load_state_dict(eager.state_dict())
    e_opt = kn.optim.SGD(eager.parameters(), lr=0.01)
    c_opt = kn.optim.SGD(compiled.parameters(), lr=0.01)
    kx, ky = kn.tensor(x), kn.tensor(y)
    c_step = kn.compile(lambda a, b: step(kn, compiled, c_opt, a, b))
    cases = {
        "kiln eager": lambda: step(kn, eager, e_opt, kx, ky),
        "kiln compiled": lambda: c_step(kx, ky),
    }
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        torch.set_num_threads(1)
        model = build(torch)
        with torch.no_grad():
            for p, q in zip(model.parameters(), eager.parameters()):
                p.copy_(torch.from_numpy(q.detach().numpy()))
        t_opt = torch.optim.SGD(model.parameters(), lr=0.01)
        tx, ty = torch.from_numpy(x), torch.from_numpy(y)
        want = [step(torch, model, t_opt, tx, ty).item() for _ in range(2)]
        for label in ("kiln eager", "kiln compiled"):
            got = [cases[label]().item() for _ in range(2)]
            np.testing.assert_allclose(got, want, rtol=1e-4, err_msg=label)
        cases["PyTorch eager"] = lambda: step(torch, model, t_opt, tx, ty)
    return cases


def kernels():
    """(label, kiln's kernel, the same by hand in NumPy) for the step's heavy kernels."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((BATCH, 32, 14, 14)).astype(np.float32)
    w = rng.standard_normal((64, 32, 3, 3)).astype(np.float32)
    gy = rng.standard_normal((BATCH, 64, 14, 14)).astype(np.float32)
    h = rng.standard_normal((BATCH, 32, 28, 28)).astype(np.float32)
    conv = {"stride": (1, 1), "padding": (1, 1), "dilation": (1, 1)}
    pool = {"kernel_size": (2, 2), "stride": (2, 2), "padding": (0, 0)}

    def im2col(a):
        p = np.pad(a, ((0, 0), (0, 0), (1, 1), (1, 1)))
        n, c, hh, ww = p.shape
        s = p.strides
        cols = np.lib.stride_tricks.as_strided(
            p, (n, c, 3, 3, hh - 2, ww - 2), (s[0], s[1], s[2], s[3], s[2], s[3])
        )
        return cols.reshape(n, c * 9, (hh - 2) * (ww - 2))

    def conv_by_hand():
        return np.matmul(w.reshape(64, -1), im2col(x))

    def weight_grad_by_hand():
        return np.tensordot(gy.reshape(BATCH, 64, -1), im2col(x), axes=((0, 2), (0, 2)))

    def pool_by_hand():
        return np.maximum(
            np.maximum(h[:, :, ::2, ::2], h[:, :, 1::2, ::2]),
            np.maximum(h[:, :, ::2, 1::2], h[:, :, 1::2, 1::2]),
        )

    y = np.maximum(h, 0)  # a ReLU's output: the mask of its gradient
    gh = rng.standard_normal(h.shape).astype(np.float32)
    gp = rng.standard_normal((BATCH, 32, 14, 14)).astype(np.float32)

    def relu_grad_by_hand():
        return np.where(y <= 0, np.float32(0), gh)

    def pool_grad_by_hand():  # each window's cotangent to its first maximum
        taps = [h[:, :, a::2, b::2] for a in (0, 1) for b in (0, 1)]
        best, pick = taps[0].copy(), np.zeros(gp.shape, np.int8)
        for k, tap in enumerate(taps[1:], 1):
            pick = np.where(tap > best, np.int8(k), pick)
            best = np.maximum(best, tap)
        out = np.zeros_like(h)
        for k in range(4):
            out[:, :, k // 2 :: 2, k % 2 :: 2] = np.where(pick == k, gp, np.float32(0))
        return out

    np.testing.assert_allclose(
        nn_ops._conv2d(np, x, w, **conv).reshape(BATCH, 64, -1), conv_by_hand(), rtol=1e-4,
        atol=1e-3,
    )  # fmt: skip
    np.testing.assert_array_equal(nn_ops._max_pool2d(np, h, **pool), pool_by_hand())
    np.testing.assert_array_equal(elementwise._relu_grad(np, gh, y), relu_grad_by_hand())
    np.testing.assert_array_equal(nn_grad._max_pool2d_grad(np, h, gp, **pool), pool_grad_by_hand())
    return [
        ("conv2d 32->64 on 14x14", lambda: nn_ops._conv2d(np, x, w, **conv), conv_by_hand),
        ("conv2d weight gradient",
         lambda: nn_grad._conv2d_weight_grad(np, x, gy, w_shape=w.shape, **conv),
         weight_grad_by_hand),
        ("max_pool2d 2x2 of 32x28x28", lambda: nn_ops._max_pool2d(np, h, **pool), pool_by_hand),
        ("relu gradient, 32x28x28", lambda: elementwise._relu_grad(np, gh, y),
         relu_grad_by_hand),
        ("max_pool2d gradient", lambda: nn_grad._max_pool2d_grad(np, h, gp, **pool),
         pool_grad_by_hand),
    ]  # fmt: skip


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one short repeat per case")
    args = parser.parse_args()
    repeats, min_s = (1, 0.01) if args.quick else (5, 0.3)
    cases = steps()
    best = dict.fromkeys(cases, float("inf"))
    for _ in range(repeats):  # interleaved: a busy moment hits all alike
        for label, fn in cases.items():
            best[label] = min(best[label], per_call_seconds(fn, 1, min_s))
    print(f"CNN training step, batch {BATCH} (ms):")
    for label, seconds in best.items():
        ratio = ""
        if "PyTorch eager" in best and label != "PyTorch eager":
            ratio = f"  {seconds / best['PyTorch eager']:.2f}x PyTorch"
        print(f"  {label:<16} {seconds * 1e3:8.2f}{ratio}")
    print("kernels (ms): kiln, NumPy by hand, ratio")
    for label, ours, by_hand in kernels():
        t_k = min(per_call_seconds(ours, 1, min_s / 3) for _ in range(repeats))
        t_n = min(per_call_seconds(by_hand, 1, min_s / 3) for _ in range(repeats))
        print(f"  {label:<28} {t_k * 1e3:7.2f} {t_n * 1e3:7.2f}  {t_k / t_n:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
