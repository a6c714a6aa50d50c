"""Fusion groups with several results, beside hand-written NumPy: kiln without fusion, with
one result per fused group (`fuse_elementwise(several_results=False)`, kiln's rule before), and
with several results (the default).

(a) Adam's update of one float32[1M] parameter: m, v and the parameter are three results of one
elementwise group, written in place into their Variables; with one result per group, m and v
each end a group. (b) The elementwise part of a GELU layer's forward and backward on
float32[512, 1024] (the layer's input x @ W given, as its matrix product is outside any group):
h = gelu(x @ W + b) is the next layer's input, and the backward pass reads the pre-activation
and erf's value to make the cotangent of x @ W from the one of h. (c) A whole training step of
a GELU MLP 256-1024-1024-10 at batch 512 with Adam, where matrix products dominate. Kernels
are the program's nodes after the default passes (the CPU's fusion options), less sources and
the `get` nodes that read a group's results (`fused` nodes in parentheses); times are the best
of several repeats, single-threaded, wall and CPU time (the CPU time is what a call costs where
other processes share the cores).

    python bench/bench_fusion_results.py [--quick]
"""

import os

# Before NumPy loads its BLAS: one thread, so ratios do not depend on the machine's core count.
for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ[_name] = "1"

import argparse  # noqa: E402
import functools  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import scipy.special  # noqa: E402

import kiln as kn  # noqa: E402
from kiln.debug import exact_mode  # noqa: E402
from kiln.passes import PIPELINE  # noqa: E402
from kiln.passes.fuse import fuse_elementwise  # noqa: E402
from kiln.runtime.backend import NumpyBackend  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_fusion import transient_bytes  # noqa: E402

MiB = 2**20


def per_call(fns, repeats: int, min_batch_s: float) -> list[tuple[float, float]]:
    """(wall, CPU) seconds of one call of each of `fns`: the best of `repeats` batches each,
    the functions taking turns. The CPU time (`time.process_time`, single-threaded here) is
    what the call itself costs where other processes share the cores and preempt it."""
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
    best = [[float("inf")] * 2 for _ in fns]
    for _ in range(repeats):
        for k, (fn, number) in enumerate(zip(fns, numbers)):
            wall, cpu = time.perf_counter(), time.process_time()
            for _ in range(number):
                fn()
            best[k][0] = min(best[k][0], (time.perf_counter() - wall) / number)
            best[k][1] = min(best[k][1], (time.process_time() - cpu) / number)
    return [tuple(b) for b in best]


MODES = ("unfused", "one result", "several results")


def passes(mode: str) -> list:
    """The CPU's default pipeline (with its fusion options), without fusion, or with fusion
    of one or several results per group."""
    if mode == "unfused":
        return [(name, fn) for name, fn in PIPELINE if name != "fuse_elementwise"]
    options = NumpyBackend.pass_options["fuse_elementwise"]
    fuse = functools.partial(fuse_elementwise, **options, several_results=mode != "one result")
    return [(name, fuse if name == "fuse_elementwise" else fn) for name, fn in PIPELINE]


def node_counts(f) -> str:
    """The kernels the program calls (its nodes but sources and the `get` nodes that read a
    group's results), and how many of them are fused groups."""
    ops = [n.op.name for n in f.graph.nodes
           if n.op.name not in ("placeholder", "variable", "constant", "get")]  # fmt: skip
    return f"{len(ops)} ({ops.count('fused')})"


# -- (a) Adam ------------------------------------------------------------------------------------

B1, B2, LR, EPS = 0.9, 0.999, 1e-3, 1e-8


def adam_update(p, m, v, g, lr, xp):
    """One Adam update, the step's bias corrections folded into `lr` (kiln or NumPy)."""
    m1 = m * B1 + g * (1 - B1)
    v1 = v * B2 + g * g * (1 - B2)
    return p - lr * m1 / (xp.sqrt(v1) + EPS), m1, v1


def adam_case(n: int):
    """({mode: kiln step}, {mode: Function}, NumPy step, check) for one Adam update of a
    float32[n] parameter (the learning rate a feed)."""
    rng = np.random.default_rng(0)
    grad = rng.standard_normal(n).astype(np.float32)
    start = [rng.standard_normal(n).astype(np.float32), np.zeros(n, np.float32),
             np.zeros(n, np.float32)]  # fmt: skip
    lr_value = np.float32(LR)
    fns, variables = {}, {}
    for mode in MODES:
        with kn.Graph().as_default():
            g = kn.placeholder(kn.float32, (n,), name="g")
            lr = kn.placeholder(kn.float32, (), name="lr")
            state = [kn.Variable(a.copy(), name=name) for a, name in zip(start, "pmv")]
            new = adam_update(*state, g, lr, kn)
            updates = dict(zip(state, new))
            fns[mode] = kn.function([g, lr], [], updates=updates, passes=passes(mode))
            variables[mode] = state
    numpy_state = [a.copy() for a in start]
    f32 = np.float32

    def numpy_step():
        p, m, v = numpy_state
        m = m * f32(B1) + grad * f32(1 - B1)
        v = v * f32(B2) + grad * grad * f32(1 - B2)
        numpy_state[:] = [p - lr_value * m / (np.sqrt(v) + f32(EPS)), m, v]

    def check():
        """Three steps from the same start: every mode gives NumPy's bits."""
        for state in variables.values():
            for var, a in zip(state, start):
                var.assign(a)
        numpy_state[:] = [a.copy() for a in start]
        for _ in range(3):
            numpy_step()
            for f in fns.values():
                f(grad, lr_value)
        for state in variables.values():
            for var, want in zip(state, numpy_state):
                np.testing.assert_array_equal(var.numpy(), want)

    steps = {mode: functools.partial(fns[mode], grad, lr_value) for mode in MODES}
    return steps, fns, numpy_step, check


# -- (b) a GELU layer's elementwise forward and backward -----------------------------------------


def gelu_case(rows: int, cols: int):
    """({mode: kiln call}, {mode: Function}, NumPy call, check): h = gelu(z + b) and the
    cotangent of z from the cotangent `ct` of h."""
    rng = np.random.default_rng(1)
    z_v, ct_v = (rng.standard_normal((rows, cols)).astype(np.float32) for _ in range(2))
    b_v = rng.standard_normal(cols).astype(np.float32)
    fns = {}
    for mode in MODES:
        with kn.Graph().as_default():
            z = kn.placeholder(kn.float32, (rows, cols), name="z")
            b = kn.placeholder(kn.float32, (cols,), name="b")
            ct = kn.placeholder(kn.float32, (rows, cols), name="ct")
            h = kn.gelu(z + b)
            (dz,) = kn.grad(kn.sum(h * ct), [z])
            fns[mode] = kn.function([z, b, ct], [h, dz], passes=passes(mode))
    f32 = np.float32
    half, root_half = f32(0.5), f32(1 / math.sqrt(2))
    density = f32(1 / math.sqrt(2 * math.pi))

    def numpy_call(z, b, ct):
        a = z + b
        e = scipy.special.erf(a * root_half) + f32(1)
        h = a * half * e
        return h, ct * (half * e + a * density * np.exp(a * a * -half))

    def check():
        want = numpy_call(z_v, b_v, ct_v)
        for f in fns.values():
            for got, w in zip(f(z_v, b_v, ct_v), want):
                np.testing.assert_allclose(got, w, rtol=2e-5, atol=2e-6)

    calls = {mode: functools.partial(fns[mode], z_v, b_v, ct_v) for mode in MODES}
    return calls, fns, functools.partial(numpy_call, z_v, b_v, ct_v), check


# -- (c) a GELU MLP training step with Adam ------------------------------------------------------


def mlp_case(batch: int, widths: tuple):
    """({mode: kiln step}, {mode: Function}, check): one training step of a GELU MLP with
    softmax cross-entropy and Adam (bias corrections folded into the fed learning rate)."""
    rng = np.random.default_rng(2)
    x_v = rng.standard_normal((batch, widths[0])).astype(np.float32)
    y_v = rng.integers(0, widths[-1], batch)
    shapes = [s for a, b in zip(widths[:-1], widths[1:]) for s in ((a, b), (b,))]
    start = [(rng.standard_normal(s) / math.sqrt(s[0])).astype(np.float32) for s in shapes]
    fns, params = {}, {}
    for mode in MODES:
        with kn.Graph().as_default():
            x = kn.placeholder(kn.float32, (batch, widths[0]), name="x")
            y = kn.placeholder(kn.int64, (batch,), name="y")
            lr = kn.placeholder(kn.float32, (), name="lr")
            ws = [kn.Variable(a.copy(), name=f"w{k}") for k, a in enumerate(start)]
            h = x
            for k in range(0, len(ws), 2):
                h = h @ ws[k] + ws[k + 1]
                h = kn.gelu(h) if k + 2 < len(ws) else h
            loss = kn.cross_entropy(h, y)
            grads = kn.grad(loss, ws)
            updates = {}
            for w, g in zip(ws, grads):
                m = kn.Variable(np.zeros(w.shape, np.float32), name=f"m_{w.name}")
                v = kn.Variable(np.zeros(w.shape, np.float32), name=f"v_{w.name}")
                updates.update(zip((w, m, v), adam_update(w, m, v, g, lr, kn)))
            fns[mode] = kn.function([x, y, lr], loss, updates=updates, passes=passes(mode))
            params[mode] = ws

    def check():
        """Two steps from the same start: the losses and parameters of every mode agree."""
        losses = {}
        for mode, f in fns.items():
            for var, a in zip(params[mode], start):
                var.assign(a)
            losses[mode] = [float(f(x_v, y_v, np.float32(LR))) for _ in range(2)]
        for mode in MODES[1:]:
            np.testing.assert_allclose(losses[mode], losses[MODES[0]], rtol=1e-5)
            for a, b in zip(params[mode], params[MODES[0]]):
                np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-4, atol=1e-6)

    steps = {mode: functools.partial(fns[mode], x_v, y_v, np.float32(LR)) for mode in MODES}
    return steps, fns, check


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few repeats, small: a smoke test")
    args = parser.parse_args()
    repeats, min_batch_s = (2, 0.0) if args.quick else (9, 0.05)
    print(
        f"kiln {kn.__version__}, NumPy {np.__version__}, Python {platform.python_version()}; "
        f"single-threaded; best of {repeats} repeats; "
        f"{'exact (NumPy bits)' if exact_mode() else 'KILN_EXACT=0 (libm in loops)'}"
    )
    print(f"{'case':<40} {'kernels (fused)':>16} {'wall µs':>9} {'CPU µs':>9} {'CPU / NumPy':>12} "
          f"{'transient MiB':>14}")  # fmt: skip
    n = 1 << 16 if args.quick else 1 << 20
    steps, fns, numpy_step, check = adam_case(n)
    check()
    cases = [(f"(a) Adam, f32[{n}]", steps, fns, numpy_step)]
    rows, cols = (64, 256) if args.quick else (512, 1024)
    calls, fns, numpy_call, check = gelu_case(rows, cols)
    check()
    cases.append((f"(b) GELU fwd+bwd, f32[{rows},{cols}]", calls, fns, numpy_call))
    for name, kiln_fns, functions, numpy_fn in cases:
        times = per_call([numpy_fn, *kiln_fns.values()], repeats, min_batch_s)
        (wall, cpu) = times[0]
        print(f"{name:<40} {'NumPy':>16} {wall * 1e6:>9.0f} {cpu * 1e6:>9.0f} {1:>11.2f}x "
              f"{transient_bytes(numpy_fn)[1] / MiB:>14.2f}")  # fmt: skip
        for (mode, fn), (w, c) in zip(kiln_fns.items(), times[1:]):
            print(f"{'    kiln, ' + mode:<40} {node_counts(functions[mode]):>16} "
                  f"{w * 1e6:>9.0f} {c * 1e6:>9.0f} {c / cpu:>11.2f}x "
                  f"{transient_bytes(fn)[1] / MiB:>14.2f}")  # fmt: skip
    batch, widths = (64, (32, 64, 64, 10)) if args.quick else (512, (256, 1024, 1024, 10))
    steps, fns, check = mlp_case(batch, widths)
    check()
    times = per_call(list(steps.values()), max(repeats // 3, 2), 0.0)
    name = f"(c) GELU MLP {'-'.join(map(str, widths))}, b{batch}, Adam"
    print(f"{name:<40} {'kernels (fused)':>16} {'wall ms':>9} {'CPU ms':>9} {'CPU / unfused':>13}")
    for (mode, _), (w, c) in zip(steps.items(), times):
        print(f"{'    kiln, ' + mode:<40} {node_counts(fns[mode]):>16} {w * 1e3:>9.1f} "
              f"{c * 1e3:>9.1f} {c / times[0][1]:>12.2f}x")  # fmt: skip


if __name__ == "__main__":
    main()
