"""(d) Compile time: from `kn.function(...)` to the first result, for graphs of about 2,000 and
20,000 ops (a residual stack of small matmuls and elementwise ops, so running is negligible).

    python bench/bench_compile.py [--quick]
"""

import os

for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_name] = "1"

import argparse  # noqa: E402
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


def case(n_blocks):
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
        f"{ops:>8} ops: build {built:7.3f} s; kn.function + first call {first:7.3f} s "
        f"({first / ops * 1e6:.1f} us/op); next call {again * 1e3:.2f} ms",
        flush=True,
    )
    return ops, first


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the small graph only")
    args = parser.parse_args()
    results = [case(200)]
    if not args.quick:
        results.append(case(2000))
        (n1, t1), (n2, t2) = results
        print(f"growth: {n2 / n1:.1f}x the ops took {t2 / t1:.1f}x the time")


if __name__ == "__main__":
    main()
