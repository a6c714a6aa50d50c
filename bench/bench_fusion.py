"""Elementwise fusion beside hand-written NumPy: kiln with and without `fuse_elementwise`.

(b) chains of 1, 10 and 100 elementwise ops (mul, add, tanh, exp...) on float32[16], where a
NumPy call's overhead is the cost: fused, they are one numba loop (numba installed) or one
kernel calling each ufunc; (c) an 8-op chain on two 4096x4096 float32 arrays, where memory
traffic is the cost: fused, it runs cache-blocked. Single-threaded; times are the best of
several repeats; memory is tracemalloc's peak during one call, less the result ("transient").

    python bench/bench_fusion.py [--quick]
"""

import os

# Before NumPy loads its BLAS: one thread, so ratios do not depend on the machine's core count.
for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ[_name] = "1"

import argparse  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402

import numpy as np  # noqa: E402

import kiln as kn  # noqa: E402
from kiln.debug import exact_mode  # noqa: E402
from kiln.ops import fused as fused_ops  # noqa: E402
from kiln.passes import PIPELINE  # noqa: E402
from kiln.passes.fuse import fuse_elementwise  # noqa: E402
from kiln.passes.program import extract  # noqa: E402

try:
    import numba
except ImportError:
    numba = None

MiB = 2**20


def per_call_seconds(fns, repeats: int, min_batch_s: float) -> list[float]:
    """Best-of-`repeats` time of one call of each of `fns`, each repeat timing a batch of calls
    lasting at least `min_batch_s`; the functions take turns, so load on the machine hits all
    of them alike."""
    numbers = []
    for fn in fns:
        for _ in range(3):  # warm up: compiles; a program's numba loop is built on its 2nd call
            fn()
        number = 1
        while True:
            start = time.perf_counter()
            for _ in range(number):
                fn()
            if time.perf_counter() - start >= min_batch_s:
                break
            number *= 2
        numbers.append(number)
    best = [float("inf")] * len(fns)
    for _ in range(repeats):
        for k, (fn, number) in enumerate(zip(fns, numbers)):
            start = time.perf_counter()
            for _ in range(number):
                fn()
            best[k] = min(best[k], (time.perf_counter() - start) / number)
    return best


def transient_bytes(fn) -> tuple[int, int]:
    """(peak bytes traced during one call, peak less the bytes of what it returns)."""
    fn()
    tracemalloc.start()
    try:
        result = fn()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    results = result if isinstance(result, (list, tuple)) else [result]
    return peak, peak - sum(np.asarray(r).nbytes for r in results)


def compiled(fetch, feeds, fuse: bool):
    """kn.function of `fetch` with the default passes (fused: every group, as the default
    pipeline does for small or large results), or without the fusion pass."""
    if fuse:
        graph = fuse_elementwise(extract([fetch], feeds, {}))
        return kn.function(graph.inputs, graph.outputs[0])
    passes = [(name, fn) for name, fn in PIPELINE if name != "fuse_elementwise"]
    return kn.function(feeds, fetch, passes=passes)


# (b): one step of the chain, written once for kiln and once for NumPy (same ops, same order).
CHAIN_STEPS = (
    lambda v, a, m: v * a,
    lambda v, a, m: v + 0.5,
    lambda v, a, m: m.tanh(v),
    lambda v, a, m: v * 1.5,
    lambda v, a, m: v - a,
    lambda v, a, m: m.exp(v),
)


def chain_case(n_ops: int):
    """(kiln unfused, kiln fused, NumPy) callables for `n_ops` chained ops on float32[16]."""
    rng = np.random.default_rng(0)
    x_v, a_v = (rng.uniform(-1, 1, 16).astype(np.float32) for _ in range(2))
    with kn.Graph().as_default():
        x, a = (kn.placeholder(kn.float32, (16,), name=n) for n in "xa")
        y = x
        for i in range(n_ops):
            y = CHAIN_STEPS[i % len(CHAIN_STEPS)](y, a, kn)
        plain, fused = compiled(y, [x, a], False), compiled(y, [x, a], True)

    def numpy_chain(v, a):
        for i in range(n_ops):
            v = CHAIN_STEPS[i % len(CHAIN_STEPS)](v, a, np)
        return v

    args = (x_v, a_v)
    return (lambda: plain(*args)), (lambda: fused(*args)), (lambda: numpy_chain(*args))


def big_case(n: int = 4096):
    """(kiln unfused, kiln fused, NumPy) for tanh((a*b + a) * 0.5) - b, relu'd, squared, + 1."""
    rng = np.random.default_rng(0)
    a_v, b_v = (rng.standard_normal((n, n), np.float32) for _ in range(2))

    def chain(a, b, m):
        t = m.tanh((a * b + a) * 0.5) - b
        t = m.maximum(t, 0.0)
        return t * t + 1.0

    with kn.Graph().as_default():
        a, b = (kn.placeholder(kn.float32, (n, n), name=name) for name in "ab")
        y = chain(a, b, kn)
        plain, fused = compiled(y, [a, b], False), compiled(y, [a, b], True)
    args = (a_v, b_v)
    return (lambda: plain(*args)), (lambda: fused(*args)), (lambda: chain(a_v, b_v, np))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few repeats: a smoke test")
    args = parser.parse_args()
    repeats, min_batch_s = (2, 0.002) if args.quick else (15, 0.02)
    print(
        f"kiln {kn.__version__}, NumPy {np.__version__}, Python {platform.python_version()}, "
        f"numba {numba.__version__ if numba else 'not installed'}; single-threaded; "
        f"best of {repeats} repeats; block {fused_ops.BLOCK_BYTES // 1024} KiB; "
        f"{'exact (NumPy bits)' if exact_mode() else 'KILN_EXACT=0 (kiln kernels)'}"
    )
    print(f"{'case':<34} {'NumPy µs':>10} {'unfused µs':>11} {'fused µs':>10} {'fused/NumPy':>12}")
    for n_ops in (1, 10, 100):
        plain, fused, numpy_fn = chain_case(n_ops)
        for f in (plain, fused):
            np.testing.assert_allclose(f(), numpy_fn(), rtol=1e-4, atol=1e-5)
        row = per_call_seconds((numpy_fn, plain, fused), repeats, min_batch_s)
        print(f"{f'(b) chain of {n_ops}, f32[16]':<34} {row[0] * 1e6:>10.1f} "
              f"{row[1] * 1e6:>11.1f} {row[2] * 1e6:>10.1f} {row[2] / row[0]:>11.2f}x")  # fmt: skip
    plain, fused, numpy_fn = big_case(1024 if args.quick else 4096)
    np.testing.assert_allclose(fused(), numpy_fn(), rtol=1e-5, atol=1e-6)
    big_repeats = 2 if args.quick else 9
    row = per_call_seconds((numpy_fn, plain, fused), big_repeats, 0.0)
    name = "(c) 8 ops, 2 x f32[4096,4096]" if not args.quick else "(c) 8 ops, 2 x f32[1024,1024]"
    print(f"{name:<34} {row[0] * 1e6:>10.0f} {row[1] * 1e6:>11.0f} {row[2] * 1e6:>10.0f} "
          f"{row[2] / row[0]:>11.2f}x")  # fmt: skip
    print(f"{'(c) memory, MiB':<34} {'peak':>10} {'transient':>11}")
    for label, f in (("NumPy", numpy_fn), ("kiln unfused", plain), ("kiln fused", fused)):
        peak, transient = transient_bytes(f)
        print(f"{'    ' + label:<34} {peak / MiB:>10.1f} {transient / MiB:>11.2f}")


if __name__ == "__main__":
    main()
