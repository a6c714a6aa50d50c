"""Jacobians: building and running the jacobian of f(x) = tanh(W @ x), f32[256] -> f32[256],
beside one vector-Jacobian product of the same function (`kn.grad` with a cotangent).

    python bench/bench_jacobian.py [--quick] [--n 256]

Prints, for `kn.jacobian` (and `kn.jacrev` / `kn.jacfwd` where they exist): the nodes added to
the graph, the build time (graph construction only, best of 3), the run time of the compiled
jacobian and its ratio to the run time of one compiled vjp (forward and backward). Then the
time to build one `kn.grad` per output element on one graph (the old kn.jacobian's way) for
n/4, n/2 and n outputs: linear in n when each gradient visits only what it reads.
"""

import os

for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_name] = "1"

import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

import kiln as kn  # noqa: E402


def per_call(f, args, quick):
    """Best of 5 repeats of a batch of calls, in seconds per call."""
    f(*args)
    number, repeats = (3, 1) if quick else (50, 5)
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(number):
            f(*args)
        best = min(best, (time.perf_counter() - start) / number)
    return best


def build(kind, w):
    """A fresh graph with x and the requested derivative of tanh(W @ x); returns the graph,
    its inputs and outputs, and the build time (what `kind` adds to the graph)."""
    g = kn.Graph()
    with g.as_default():
        x = kn.placeholder(kn.float32, (w.shape[1],), name="x")
        wc = kn.constant(w)
        f = lambda v: kn.tanh(wc @ v)  # noqa: E731
        if kind == "vjp":
            ct = kn.placeholder(kn.float32, (w.shape[0],), name="ct")
            start, before = time.perf_counter(), len(g.nodes)
            (out,) = kn.grad(f(x), [x], grad_ys=[ct])
            return g, [x, ct], out, time.perf_counter() - start, len(g.nodes) - before
        start, before = time.perf_counter(), len(g.nodes)
        if kind == "jacobian":
            out = kn.jacobian(f(x), x)
        else:
            out = getattr(kn, kind)(f)(x)
        return g, [x], out, time.perf_counter() - start, len(g.nodes) - before


def per_output_build(w, n) -> float:
    """Seconds to build n gradients, one per element of tanh(W[:n, :n] @ x), on one graph."""
    g = kn.Graph()
    with g.as_default():
        x = kn.placeholder(kn.float32, (n,), name="x")
        flat = kn.reshape(kn.tanh(kn.constant(w[:n, :n]) @ x), (n,))
        start = time.perf_counter()
        for i in range(n):
            kn.grad(flat[i], [x], disconnected="zero")
        return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--n", type=int, default=256)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    n = args.n
    w = (rng.standard_normal((n, n)) / np.sqrt(n)).astype(np.float32)
    x = rng.standard_normal(n).astype(np.float32)
    ct = rng.standard_normal(n).astype(np.float32)
    expected = (1 - np.tanh(w @ x) ** 2)[:, None] * w  # d tanh(Wx) / dx, by the chain rule

    _, inputs, out, _, _ = build("vjp", w)
    vjp = kn.function(inputs, out)
    np.testing.assert_allclose(vjp(x, ct), expected.T @ ct, rtol=1e-4, atol=1e-5)
    t_vjp = per_call(vjp, (x, ct), args.quick)
    print(f"one vjp (forward + backward), f32[{n}]: {t_vjp * 1e6:.1f} us per call")
    print(f"{'transform':<10} {'nodes':>7} {'build ms':>9} {'run us':>9} {'run / vjp':>10}")
    kinds = [k for k in ("jacobian", "jacrev", "jacfwd") if hasattr(kn, k)]
    for kind in kinds:
        builds = [build(kind, w) for _ in range(1 if args.quick else 3)]
        _, inputs, out, _, nodes = builds[0]
        t_build = min(b[3] for b in builds)
        jac = kn.function(inputs, out)
        np.testing.assert_allclose(jac(x), expected, rtol=1e-4, atol=1e-5)
        t_run = per_call(jac, (x,), args.quick)
        print(f"{kind:<10} {nodes:>7} {t_build * 1e3:>9.1f} {t_run * 1e6:>9.1f} "
              f"{t_run / t_vjp:>9.1f}x")  # fmt: skip
    sizes = (n // 4, n // 2, n) if not args.quick else (n // 4,)
    times = [min(per_output_build(w, m) for _ in range(1 if args.quick else 3)) for m in sizes]
    print("one kn.grad per output, build: "
          + ", ".join(f"n={m}: {t * 1e3:.0f} ms" for m, t in zip(sizes, times)))  # fmt: skip


if __name__ == "__main__":
    main()
