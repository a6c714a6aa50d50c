"""Training-step memory: kiln's arena beside the chosen schedule's live-set peak, the bound that
holds for every order, and the floor of the problem (the activations that must cross from the
forward to the backward pass, plus one cotangent and one weight gradient in flight); and the
step's time against the same step by hand in NumPy.

Cases: 16 layers of width 1024, batch 512, ReLU, cross-entropy, with SGD and with Adam
updates through `kn.function(..., updates=...)`; 64 layers of width 1024, batch 256, SGD,
plain, with every 8 layers one kn.checkpoint region (recomputed in the backward pass), and
with `memory_budget=16 MiB` (kiln chooses what to recompute). The same 64x1024 step under
`kn.compile`, built from `kn.nn.Linear` layers and `kn.optim.SGD`: the whole step traced (its
one program's arena), and the forward compiled with `loss.backward()` through the tape (the
backward program's arena, into which the forward program writes the residuals it hands on;
the weight gradients it returns are `.grad` tensors, as in PyTorch, and not counted); step
times against the same form without checkpointing or budget, interleaved in one run.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import tracemalloc

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
    compiled_cases(64, 1024, 256, repeats, min_s)


def _compiled_step(depth, width, whole, segment=None, budget=None):
    """A kn.compile'd SGD step of `depth` kn.nn.Linear layers; returns (step, compiled fn)."""
    kn.manual_seed(0)
    layers = [kn.nn.Linear(width, width) for _ in range(depth)]
    opt = kn.optim.SGD([p for layer in layers for p in layer.parameters()], lr=1e-3)

    def run(h, first, last):
        for k in range(first, last):
            h = layers[k](h)
            h = kn.relu(h) if k < depth - 1 else h
        return h

    def loss_of(x, labels):
        h, step = x, segment or depth
        for first in range(0, depth, step):
            last = min(first + step, depth)
            if segment:
                h = kn.checkpoint(lambda v, a=first, b=last: run(v, a, b), h)
            else:
                h = run(h, first, last)
        return kn.nn.functional.cross_entropy(h, labels)

    if whole:

        def traced(x, labels):
            loss = loss_of(x, labels)
            opt.minimize(loss)
            return loss

        fn = kn.compile(traced, memory_budget=budget)
        return fn, fn
    fn = kn.compile(loss_of, memory_budget=budget)

    def tape_step(x, labels):
        opt.zero_grad()
        loss = fn(x, labels)
        loss.backward()
        opt.step()
        return loss

    return tape_step, fn


def _compiled_memory(fn, whole) -> tuple[float, str]:
    traced = fn.last
    if whole:
        plan = traced.function.plan
        return plan.arena_bytes, f"arena {plan.arena_bytes / MIB:5.1f} MiB"
    extras = traced.function.outputs[len(traced.outputs) :]
    kept = sum(int(np.prod(s.shape)) * s.dtype.itemsize for s in extras)
    # each call's backward arena: the forward program writes the residuals into it, and the
    # backward plan reuses their bytes once read (kiln/tracing/traced.py, `placement`)
    arena = traced.placement()[2]
    text = f"residuals {kept / MIB:5.1f} MiB placed in the backward arena: {arena / MIB:5.1f} MiB"
    return arena, text


def compiled_cases(depth, width, batch, repeats, min_s):
    rng = np.random.default_rng(1)
    x = kn.tensor(rng.standard_normal((batch, width)).astype(np.float32))
    labels = kn.tensor(rng.integers(0, width, batch))
    for whole in (True, False):
        form = "kn.compile whole step" if whole else "kn.compile fwd + tape"
        steps = {
            "plain": _compiled_step(depth, width, whole),
            "checkpoint/8": _compiled_step(depth, width, whole, segment=8),
            "budget 16 MiB": _compiled_step(depth, width, whole, budget=16 * MIB),
        }
        for step, _ in steps.values():
            step(x, labels)  # compiles
        times = {name: [] for name in steps}
        for _ in range(repeats):  # interleaved, so load changes hit every case alike
            for name, (step, _) in steps.items():
                times[name].append(per_call_seconds(lambda s=step: s(x, labels), 1, min_s))
        base = min(times["plain"])
        for name, (_, fn) in steps.items():
            _, memory = _compiled_memory(fn, whole)
            t = min(times[name])
            print(
                f"{form}, {depth}x{width} b{batch}, {name:<14} {memory} | step "
                f"{t * 1e3:.1f} ms ({t / base:.2f}x the plain compiled step)",
                flush=True,
            )
            if not whole:
                print(f"  {name}: {_backward_peaks(fn, x, labels)}", flush=True)


def _backward_peaks(fn, x, labels) -> str:
    """tracemalloc from before the forward call: what the call holds for its backward (the
    residuals, in the pieces of its backward arena that hold them), and the peak across
    `loss.backward()` (that arena, the weight gradients backward makes and what else it
    allocates): donated (retain_graph=False, the residuals' bytes reused in the arena)
    against kept (retain_graph=True: the residuals stay, and the backward program that
    reads them runs in an arena of its own, made by its first run, so added from its
    plan)."""
    loss = fn(x, labels)
    loss.backward(retain_graph=True)  # makes the retained form's arena
    del loss
    traced = fn.last
    held, peaks = [], []
    for retain in (False, True):
        gc.collect()
        tracemalloc.start()
        before, _ = tracemalloc.get_traced_memory()
        loss = fn(x, labels)
        gc.collect()
        held.append((tracemalloc.get_traced_memory()[0] - before) / MIB)
        tracemalloc.reset_peak()
        loss.backward(retain_graph=retain)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        del loss
        own = traced.grad_function.plan.arena_bytes if retain else 0
        peaks.append((peak - before + own) / MIB)
    return (f"held from forward to backward {held[0]:.1f} MiB; backward peak (tracemalloc, "
            f"from before the forward) donated {peaks[0]:.1f} MiB, retain_graph=True "
            f"{peaks[1]:.1f} MiB")  # fmt: skip


if __name__ == "__main__":
    main()
