"""Training-step memory: kiln's arena beside the chosen schedule's live-set peak, the bound that
holds for every order, and the floor of the problem (the activations that must cross from the
forward to the backward pass, plus one cotangent and one weight gradient in flight); and the
step's time against the same step by hand in NumPy.

Cases: 16 layers of width 1024, batch 512, ReLU, cross-entropy, with SGD and with Adam
updates through `kn.function(..., updates=...)`; 64 layers of width 1024, batch 256, SGD,
plain, with every 8 layers one kn.checkpoint region (recomputed in the backward pass), and
with `memory_budget=16 MiB` (kiln chooses what to recompute).
"""

from __future__ import annotations

import argparse
import os
import sys

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_overhead import per_call_seconds  # noqa: E402
from bench_training import LR, NumpyStep, init_weights, kiln_step, sgd  # noqa: E402

import kiln as kn  # noqa: E402

MIB = 2**20


def adam(params, grads) -> dict:
    """Adam's update rule as Variables and updates (no bias correction: the memory is the
    same)."""
    updates = {}
    for p, g in zip(params, grads):
        m = kn.Variable(np.zeros(p.shape, np.float32), name=f"m_{p.name}")
        v = kn.Variable(np.zeros(p.shape, np.float32), name=f"v_{p.name}")
        updates[m], updates[v] = m * 0.9 + g * 0.1, v * 0.999 + g * g * 0.001
        updates[p] = p - LR * updates[m] / (kn.sqrt(updates[v]) + 1e-8)
    return updates


def floor_bytes(sizes, batch) -> int:
    """The activations the backward pass reads (each hidden layer's output), one cotangent
    and one weight gradient: what no schedule without recomputation can go below."""
    activations = sum(batch * n * 4 for n in sizes[1:-1])
    return activations + batch * max(sizes) * 4 + max(a * b for a, b in zip(sizes, sizes[1:])) * 4


def case(name, optimizer, sizes, batch, repeats, min_s, segment=None, budget=None):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((batch, sizes[0])).astype(np.float32)
    labels = rng.integers(0, sizes[-1], batch)
    weights = init_weights(sizes)
    f, _ = kiln_step(sizes, batch, weights, sgd if optimizer == "sgd" else adam, segment, budget)
    f(x, labels)
    plan = f.plan
    line = (
        f"{name:<26} arena {plan.arena_bytes / MIB:6.1f} MiB | this order's peak "
        f"{plan.peak_bytes / MIB:6.1f} | bound of any order {plan.lower_bound_bytes / MIB:6.1f} "
        f"| floor {floor_bytes(sizes, batch) / MIB:6.1f} | naive {plan.naive_bytes / MIB:6.1f}"
    )
    if plan.recomputed:
        line += f" | recomputes {len(plan.recomputed)} values ({plan.recompute_choice})"
    if optimizer == "sgd":
        ref = NumpyStep(sizes, batch, weights)
        t_k = per_call_seconds(lambda: f(x, labels), repeats, min_s)
        t_n = per_call_seconds(lambda: ref(x, labels), repeats, min_s)
        line += f" | step {t_k * 1e3:.1f} ms, NumPy by hand {t_n * 1e3:.1f} ms ({t_k / t_n:.3f}x)"
    print(line, flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one short repeat per case")
    args = parser.parse_args()
    repeats, min_s = (1, 0.01) if args.quick else (3, 0.5)
    deep = [1024] * 17
    case("16x1024 b512, SGD", "sgd", deep, 512, repeats, min_s)
    case("16x1024 b512, Adam", "adam", deep, 512, repeats, min_s)
    deeper = [1024] * 65
    case("64x1024 b256, SGD", "sgd", deeper, 256, repeats, min_s)
    case("64x1024 b256, checkpoint/8", "sgd", deeper, 256, repeats, min_s, segment=8)
    case("64x1024 b256, budget 16 MiB", "sgd", deeper, 256, repeats, min_s, budget=16 * MIB)


if __name__ == "__main__":
    main()
