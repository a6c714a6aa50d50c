"""The eager tape beside PyTorch's, call by call: bench_eager's 200-op chain on float32[16]
with requires_grad=True, its forward pass and its backward() timed apart, kiln's and
PyTorch's calls alternating one by one (a single call is short enough that a loaded machine
rarely preempts it, so the minimum and the low percentiles are stable where batches are not).

    python bench/bench_tape.py [--quick] [--calls N] [--ops N]

Prints, per library, the minimum, 5th percentile and median in µs of the forward pass
(`chain(x, a).sum()`), of `backward()`, and of both together (as bench_eager's row (d)
measures them), and the ratios kiln / PyTorch of the minima and the 5th percentiles.
"""

import os

for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_name] = "1"

import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
from bench_eager import TAPE_STEPS, _torch  # noqa: E402

import kiln as kn  # noqa: E402


def tape_call(lib, x, a, n_ops: int):
    """One forward + backward: (forward seconds, backward seconds)."""
    x.grad = a.grad = None
    start = time.perf_counter()
    v = x
    for i in range(n_ops):
        v = TAPE_STEPS[i % len(TAPE_STEPS)](v, a, lib)
    y = v.sum()
    mid = time.perf_counter()
    y.backward()
    return mid - start, time.perf_counter() - mid


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=500, help="calls of each library")
    parser.add_argument("--ops", type=int, default=200, help="ops in the chain")
    parser.add_argument("--quick", action="store_true", help="20 calls: a smoke test")
    args = parser.parse_args()
    if args.quick:
        args.calls = 20
    rng = np.random.default_rng(0)
    x_v, a_v = (rng.uniform(-1, 1, 16).astype(np.float32) for _ in range(2))
    peers = {"kiln": (kn, *(kn.tensor(v, requires_grad=True) for v in (x_v, a_v)))}
    torch = _torch()
    if torch is not None:
        peers["PyTorch"] = (torch, *(torch.tensor(v, requires_grad=True) for v in (x_v, a_v)))
    times = {name: [] for name in peers}
    for _ in range(args.calls):
        for name, (lib, x, a) in peers.items():
            times[name].append(tape_call(lib, x, a, args.ops))
    if torch is not None:  # the same gradients
        for k, t in zip(peers["kiln"][1:], peers["PyTorch"][1:]):
            np.testing.assert_allclose(k.grad.numpy(), t.grad.numpy(), rtol=1e-4, atol=1e-6)
    stats = {}
    print(f"{args.ops}-op chain, f32[16]; {args.calls} alternating calls; µs: min / p5 / median")
    for name, ts in times.items():
        parts = {"forward": [f for f, _ in ts], "backward": [b for _, b in ts],
                 "both": [f + b for f, b in ts]}  # fmt: skip
        stats[name] = {}
        cells = []
        for part, values in parts.items():
            values.sort()
            low, p5, mid = values[0], values[len(values) // 20], values[len(values) // 2]
            stats[name][part] = (low, p5)
            cells.append(f"{part} {low * 1e6:7.0f} / {p5 * 1e6:7.0f} / {mid * 1e6:7.0f}")
        print(f"{name:8} " + "   ".join(cells))
    if "PyTorch" in stats:
        k, t = stats["kiln"], stats["PyTorch"]
        print("kiln / PyTorch: " + "   ".join(
            f"{part} {k[part][0] / t[part][0]:.2f}x (p5 {k[part][1] / t[part][1]:.2f}x)"
            for part in ("forward", "backward", "both")))  # fmt: skip


if __name__ == "__main__":
    main()
