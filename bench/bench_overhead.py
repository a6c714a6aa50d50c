"""Per-call overhead of a compiled `kn.function` beside the same hand-written NumPy code.

(a) chains of 1, 10 and 100 elementwise ops on float32[16], where the time is all overhead;
(b) an MLP forward pass 784-512-512-10 on a batch of 128, where the matrix products dominate.
Single-threaded; each time is the best of several repeats, in microseconds per call.

    python bench/bench_overhead.py [--quick]
"""

import os

# Before NumPy loads its BLAS: one thread, so ratios do not depend on the machine's core count.
for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_name] = "1"

import argparse  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

import kiln as kn  # noqa: E402
from kiln.sysinfo import loaded_blas_libraries, openblas_settings, probe  # noqa: E402

CHAIN_OPS = ((kn.sin, np.sin), (kn.cos, np.cos), (kn.tanh, np.tanh))


def per_call_seconds(fn, repeats: int, min_batch_s: float) -> float:
    """Best-of-`repeats` time of one call; each repeat times a batch of calls lasting at least
    `min_batch_s`, so timer resolution does not matter."""
    fn()  # warm up: the first call compiles and allocates
    number, elapsed = 1, 0.0
    while True:
        start = time.perf_counter()
        for _ in range(number):
            fn()
        elapsed = time.perf_counter() - start
        if elapsed >= min_batch_s:
            break
        number *= 2
    best = elapsed / number
    for _ in range(repeats - 1):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - start) / number)
    return best


def chain_case(n_ops: int):
    """kiln and NumPy versions of n_ops chained unary ops (sin, cos, tanh, sin, ...)."""
    x_value = np.linspace(-1, 1, 16, dtype=np.float32)
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (16,), name="x")
        y = x
        for i in range(n_ops):
            y = CHAIN_OPS[i % len(CHAIN_OPS)][0](y)
        f = kn.function([x], y)

    def numpy_chain(v):
        for i in range(n_ops):
            v = CHAIN_OPS[i % len(CHAIN_OPS)][1](v)
        return v

    return (lambda: f(x_value)), (lambda: numpy_chain(x_value))


def mlp_case(batch: int = 128, sizes=(784, 512, 512, 10)):
    """kiln and NumPy versions of relu(relu(x @ w0 + b0) @ w1 + b1) @ w2 + b2."""
    rng = np.random.default_rng(0)
    weights = [
        # NOTE: np.float32(...): a float64 NumPy scalar would make the weights float64
        (rng.standard_normal((m, n), np.float32) / np.float32(np.sqrt(m)), np.zeros(n, np.float32))
        for m, n in zip(sizes[:-1], sizes[1:])
    ]
    x_value = rng.standard_normal((batch, sizes[0]), np.float32)
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, ("batch", sizes[0]), name="x")
        h = x
        for i, (w, b) in enumerate(weights):
            h = kn.matmul(h, kn.Variable(w, name=f"w{i}")) + kn.Variable(b, name=f"b{i}")
            if i < len(weights) - 1:
                h = kn.relu(h)
        f = kn.function([x], h)

    def numpy_mlp(v):
        for i, (w, b) in enumerate(weights):
            v = v @ w + b
            if i < len(weights) - 1:
                v = np.maximum(v, 0)
        return v

    return (lambda: f(x_value)), (lambda: numpy_mlp(x_value))


def blas_summary() -> str:
    """NumPy's BLAS and the CPU kernels it chose: matrix-product times depend on both."""
    for path in loaded_blas_libraries():
        settings = openblas_settings(path)
        if settings is not None and "numpy" in path:
            forced = os.environ.get("OPENBLAS_CORETYPE")
            note = f" (forced by OPENBLAS_CORETYPE={forced})" if forced else ""
            return f"{settings['config']}; core {settings['core']}{note}"
    return ", ".join(os.path.basename(p) for p in loaded_blas_libraries()) or "not found"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few repeats: a smoke test")
    args = parser.parse_args()
    repeats, min_batch_s = (2, 0.002) if args.quick else (7, 0.05)

    cases = [(f"chain of {n} elementwise ops, f32[16]", chain_case(n)) for n in (1, 10, 100)]
    cases.append(("MLP 784-512-512-10 forward, batch 128", mlp_case()))
    print(
        f"kiln {kn.__version__}, NumPy {np.__version__}, Python {platform.python_version()}; "
        f"single-threaded; best of {repeats} repeats"
    )
    print(f"BLAS: {probe(blas_summary)}")
    print(f"{'case':<40} {'kiln µs':>10} {'NumPy µs':>10} {'kiln/NumPy':>11}")
    for name, (kiln_fn, numpy_fn) in cases:
        np.testing.assert_allclose(kiln_fn(), numpy_fn(), rtol=1e-4, atol=1e-5)
        kiln_s = per_call_seconds(kiln_fn, repeats, min_batch_s)
        numpy_s = per_call_seconds(numpy_fn, repeats, min_batch_s)
        print(f"{name:<40} {kiln_s * 1e6:>10.1f} {numpy_s * 1e6:>10.1f} {kiln_s / numpy_s:>10.2f}x")


if __name__ == "__main__":
    main()
