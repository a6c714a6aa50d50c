"""(d) Compile time: from `kn.function(...)` to the first result, for graphs of about 2,000 ops
(cold: the process's first graph; warm: a second one) and 20,000 ops (a residual stack of
small matmuls and elementwise ops, so running is negligible); and the compiled loops of fused
groups (built on a program's second call, numba), cold: the first three calls of elementwise
chains on f32[16] of 100, 400 and 2,000 ops (tanh, exp and arithmetic, bench_fusion.py's
chain) with an empty kernel cache directory.

    python bench/bench_compile.py [--quick]
"""

import os

for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_name] = "1"

import argparse  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

import kiln as kn  # noqa: E402


def build(n_blocks):
    """About 10 ops per block: matmul, add, tanh, mul, sub, exp, maximum, reduce, reshape..."""
    rng = np.random.default_rng(0)
    g = kn.Graph()
    with g.as_default():
        x = kn.placeholder(kn.float32, ("batch", 8), name="x")
        h = x
        for _ in range(n_blocks):
            w = kn.constant(rng.standard_normal((8, 8)).astype(np.float32) * 0.3)
            z = kn.tanh(h @ w + 0.1)
            z = z * 0.5 - kn.exp(-kn.abs(z))
            h = kn.maximum(h, z) + kn.mean(z, axis=1, keepdims=True)
        y = kn.sum(h)
    return g, x, y


def case(n_blocks, label=""):
    start = time.perf_counter()
    g, x, y = build(n_blocks)
    built = time.perf_counter() - start
    ops = len(g.nodes)
    xv = np.ones((4, 8), np.float32)
    start = time.perf_counter()
    f = kn.function([x], y)
    f(xv)
    first = time.perf_counter() - start
    start = time.perf_counter()
    f(xv)
    again = time.perf_counter() - start
    print(
        f"{ops:>8} ops{label}: build {built:7.3f} s; kn.function + first call {first:7.3f} s "
        f"({first / ops * 1e6:.1f} us/op); next call {again * 1e3:.2f} ms",
        flush=True,
    )
    return ops, first


def loop_case(n_ops):
    steps = (lambda v, a: v * a, lambda v, a: v + 0.5, kn.tanh, lambda v, a: v * 1.5,
             lambda v, a: v - a, kn.exp)  # fmt: skip
    with kn.Graph().as_default():
        x, a = (kn.placeholder(kn.float32, (16,), name=n) for n in "xa")
        y = x
        for i in range(n_ops):
            step = steps[i % len(steps)]
            y = step(y) if step in (kn.tanh, kn.exp) else step(y, a)
        f = kn.function([x, a], y)
    v = np.full(16, 0.1, np.float32)
    times = []
    for _ in range(3):
        start = time.perf_counter()
        f(v, v)
        times.append(time.perf_counter() - start)
    calls = ", ".join(f"{t * 1e3:.1f}" for t in times)
    print(f"fused chain of {n_ops:>5} ops on f32[16], cold: calls 1-3 {calls} ms", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the small graph only")
    args = parser.parse_args()
    case(200, " (cold: the process's first graph, numba's import included)")
    results = [case(200, " (warm: a second graph of the same size)")]
    if not args.quick:
        results.append(case(2000))
        (n1, t1), (n2, t2) = results
        print(f"growth: {n2 / n1:.1f}x the ops took {t2 / t1:.1f}x the time")
    with tempfile.TemporaryDirectory() as cache:
        os.environ["KILN_CACHE_DIR"] = cache  # cold: nothing compiled before
        for n_ops in (100,) if args.quick else (100, 400, 2000):
            loop_case(n_ops)


if __name__ == "__main__":
    main()
