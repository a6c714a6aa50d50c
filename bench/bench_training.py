"""Training steps compiled by kiln beside the same step written by hand in NumPy.

(a) MLP 784-512-512-10, batch 128 and 16: forward, softmax cross-entropy, backward, SGD.
The floor: the step's matrix products alone (GemmFloor), measured in the same run.
(e) MLP of 16 layers of width 1024, batch 512: time, kiln's arena beside its live-set lower
    bound, and the peak memory a call allocates (tracemalloc), against NumPy with
    preallocated buffers.
Single-threaded; times are the best of several repeats, in ms per step.

    python bench/bench_training.py [--quick]
"""

import os

for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_name] = "1"

import argparse  # noqa: E402
import tracemalloc  # noqa: E402

import numpy as np  # noqa: E402
from bench_overhead import per_call_seconds  # noqa: E402

import kiln as kn  # noqa: E402

LR = 0.01
MIB = 2**20


def init_weights(sizes, seed=0):
    rng = np.random.default_rng(seed)
    return [
        ((rng.standard_normal((a, b)) / np.sqrt(a)).astype(np.float32), np.zeros(b, np.float32))
        for a, b in zip(sizes[:-1], sizes[1:])
    ]


def sgd(params, grads) -> dict:
    return {p: p - LR * g for p, g in zip(params, grads)}


def kiln_step(sizes, batch, weights, make_updates=sgd, segment=None, budget=None):
    """A kn.function doing one training step (`make_updates(params, grads)`: SGD by default;
    `segment`: each run of that many layers is one kn.checkpoint region, recomputed in the
    backward pass; `budget`: kn.function's memory_budget in bytes); returns it and its
    Variables."""
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (batch, sizes[0]), name="x")
        labels = kn.placeholder(kn.int64, (batch,), name="labels")
        layers = [(kn.Variable(w0.copy(), name=f"w{k}"), kn.Variable(b0.copy(), name=f"b{k}"))
                  for k, (w0, b0) in enumerate(weights)]  # fmt: skip
        params = [p for layer in layers for p in layer]

        def run(h, first, last):
            for k in range(first, last):
                w, b = layers[k]
                h = h @ w + b
                if k < len(layers) - 1:
                    h = kn.relu(h)
            return h

        h, step = x, segment or len(layers)
        for first in range(0, len(layers), step):
            last = min(first + step, len(layers))
            if segment:
                h = kn.checkpoint(lambda v, a=first, b=last: run(v, a, b), h)
            else:
                h = run(h, first, last)
        loss = kn.cross_entropy(h, labels)
        grads = kn.grad(loss, params)
        f = kn.function([x, labels], loss, updates=make_updates(params, grads),
                        memory_budget=budget)  # fmt: skip
        return f, params


class NumpyStep:
    """The same step by hand: preallocated activations and gradients, in-place updates."""

    def __init__(self, sizes, batch, weights):
        self.w = [w.copy() for w, _ in weights]
        self.b = [b.copy() for _, b in weights]
        self.h = [np.empty((batch, n), np.float32) for n in sizes]
        self.g = [np.empty((batch, n), np.float32) for n in sizes]
        self.gw = [np.empty_like(w) for w in self.w]

    def __call__(self, x, labels):
        h, g, n = self.h, self.g, len(self.w)
        h[0][...] = x
        for k in range(n):
            np.matmul(h[k], self.w[k], out=h[k + 1])
            h[k + 1] += self.b[k]
            if k < n - 1:
                np.maximum(h[k + 1], 0, out=h[k + 1])
        logits = h[n]
        shifted = logits - logits.max(axis=1, keepdims=True)
        exp = np.exp(shifted)
        total = exp.sum(axis=1, keepdims=True)
        rows = np.arange(len(labels))
        loss = float(np.mean(np.log(total[:, 0]) - shifted[rows, labels]))
        np.divide(exp, total, out=g[n])
        g[n][rows, labels] -= 1
        g[n] /= len(labels)
        for k in range(n - 1, -1, -1):
            np.matmul(h[k].T, g[k + 1], out=self.gw[k])
            gb = g[k + 1].sum(axis=0)
            if k > 0:
                np.matmul(g[k + 1], self.w[k].T, out=g[k])
                g[k] *= h[k] > 0
            self.w[k] -= LR * self.gw[k]
            self.b[k] -= LR * gb
        return loss


class GemmFloor:
    """The step's matrix products alone, into preallocated arrays: the forward products, and
    per layer the weight gradient h.T @ g and (below the first layer) g @ w.T. No training
    step that does these products in BLAS is faster: the floor the issue's ratios use."""

    def __init__(self, sizes, batch, weights):
        self.w = [w.copy() for w, _ in weights]
        self.h = [np.ones((batch, n), np.float32) for n in sizes]
        self.g = [np.ones((batch, n), np.float32) for n in sizes]
        self.gw = [np.empty_like(w) for w in self.w]

    def __call__(self, x=None, labels=None):
        h, g, n = self.h, self.g, len(self.w)
        for k in range(n):
            np.matmul(h[k], self.w[k], out=h[k + 1])
        for k in range(n - 1, -1, -1):
            np.matmul(h[k].T, g[k + 1], out=self.gw[k])
            if k > 0:
                np.matmul(g[k + 1], self.w[k].T, out=g[k])


def step_times(sizes, batch, repeats, min_s, seed=1):
    """(kiln, NumPy by hand, GEMM floor) seconds per step, measured interleaved in this run,
    after checking that kiln's first step agrees with NumPy's; then the kiln function, its
    Variables, the NumPy step and the feeds."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch, sizes[0])).astype(np.float32)
    labels = rng.integers(0, sizes[-1], batch)
    weights = init_weights(sizes)
    f, params = kiln_step(sizes, batch, weights)
    ref = NumpyStep(sizes, batch, weights)
    loss_k, loss_n = f(x, labels), ref(x, labels)
    assert abs(float(loss_k) - loss_n) < 1e-4 * max(1, abs(loss_n)), (loss_k, loss_n)
    np.testing.assert_allclose(params[0].numpy(), ref.w[0], rtol=1e-4, atol=1e-5)
    floor = GemmFloor(sizes, batch, weights)
    best = [float("inf")] * 3
    for _ in range(repeats):  # NOTE: interleaved, so a busy moment hits all three alike
        for j, fn in enumerate((lambda: f(x, labels), lambda: ref(x, labels), floor)):
            best[j] = min(best[j], per_call_seconds(fn, 1, min_s))
    return tuple(best), f, params, ref, (x, labels)


def peak_mib(fn) -> float:
    tracemalloc.start()
    tracemalloc.reset_peak()
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / MIB


def case(name, sizes, batch, repeats, min_s, memory=False):
    (t_k, t_n, t_f), f, params, ref, (x, labels) = step_times(sizes, batch, repeats, min_s)
    line = (f"{name:<34} {t_k * 1e3:9.3f} {t_n * 1e3:9.3f} {t_k / t_n:7.3f}x "
            f"{t_f * 1e3:9.3f} {t_k / t_f:7.3f}x")  # fmt: skip
    if memory:
        weights_mib = sum(p.numpy().nbytes for p in params) / MIB
        plan = f.plan
        line += (
            f"\n    weights {weights_mib:.1f} MiB; arena {plan.arena_bytes / MIB:.1f} MiB, "
            f"bound of any order {plan.lower_bound_bytes / MIB:.1f} MiB "
            f"({plan.arena_bytes / max(plan.lower_bound_bytes, 1):.3f}x), naive "
            f"{plan.naive_bytes / MIB:.1f} MiB; measured peak of a step: kiln "
            f"{peak_mib(lambda: f(x, labels)):.1f} MiB, NumPy "
            f"{peak_mib(lambda: ref(x, labels)):.1f} MiB (allocations during a call; kiln's arena "
            "is allocated once, at the first call)"
        )
    print(line, flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one short repeat per case")
    args = parser.parse_args()
    repeats, min_s = (1, 0.01) if args.quick else (5, 0.2)
    print(f"{'workload':<34} {'kiln ms':>9} {'NumPy ms':>9} {'ratio':>8} {'GEMMs ms':>9} "
          f"{'/floor':>8}")  # fmt: skip
    case("(a) MLP 784-512-512-10, batch 128", [784, 512, 512, 10], 128, repeats, min_s)
    case("(a) MLP 784-512-512-10, batch 16", [784, 512, 512, 10], 16, repeats, min_s)
    deep = [1024] * 17
    case("(e) MLP 16x1024, batch 512", deep, 512, max(repeats // 2, 1), min_s, memory=True)


if __name__ == "__main__":
    main()
