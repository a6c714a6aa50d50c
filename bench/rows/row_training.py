"""Rows of `bench/table.py`: the MLP 784-512-512-10 training step (SGD, float32) at batch
128 and 16, against the step by hand in NumPy and the step's GEMMs alone (the floor); and
the first call of the same step at a new batch size."""

import time

import numpy as np
from bench_training import init_weights, kiln_step, step_times

SIZES = [784, 512, 512, 10]


def _step(batch, quick):
    repeats, min_s = (1, 0.01) if quick else (7, 0.2)
    (t_k, t_n, t_f), *_ = step_times(SIZES, batch, repeats, min_s)
    return {"workload": f"MLP 784-512-512-10 training step, b{batch}", "unit": "ms",
            "kiln": t_k * 1e3, "numpy": t_n * 1e3, "floor": t_f * 1e3,
            "note": "floor: the step's GEMMs alone, into preallocated arrays"}  # fmt: skip


def mlp_step_b128(quick: bool) -> dict:
    return _step(128, quick)


def mlp_step_b16(quick: bool) -> dict:
    return _step(16, quick)


def new_batch_size(quick: bool) -> dict:
    """What a first call at a new batch size adds, for the MLP step with a symbolic batch
    dim: planning its signature and binding its program and arena (`specialize` and
    `function`), timed directly, median over the batch sizes tried; the note adds the first
    call's time less a steady call's (noisier: one preemption is as long as the step).
    Each size is planned anew in each of `sweeps` passes over the sizes (its program dropped
    after each, two steps run between sizes as in use) and its least time is kept: the other
    helpers of a shared machine preempt a pass for a scheduler tick (~4-5 ms) now and then,
    which is not the program's; no pass plans a size warmer than another."""
    rng = np.random.default_rng(0)
    f, _ = kiln_step(SIZES, "b", init_weights(SIZES))
    f.program.cache_size = 1000
    f(*_feeds(rng, 128))
    sizes = range(20, 44 if quick else 120, 3)
    sweeps = 1 if quick else 3
    added, extra = {b: [] for b in sizes}, {b: [] for b in sizes}
    for _ in range(sweeps):
        for b in sizes:
            feeds = _feeds(rng, b)
            start = time.perf_counter()
            arrays, bindings = f.program.bind_feeds(feeds)
            f.program.specialize(arrays, bindings).function()
            added[b].append(time.perf_counter() - start)
            f.program._specialized.pop(tuple(a.shape for a in arrays))  # the call plans it again
            start = time.perf_counter()
            f(*feeds)
            first = time.perf_counter() - start
            start = time.perf_counter()
            f(*feeds)
            extra[b].append(first - (time.perf_counter() - start))
            f.program._specialized.pop(tuple(a.shape for a in arrays))  # new in the next pass
    added = sorted(min(t) for t in added.values())
    extra = [min(t) for t in extra.values()]
    return {"workload": "first call at a new batch size (planning + binding)", "unit": "ms",
            "kiln": float(np.median(added)) * 1e3, "numpy": None, "floor": None,
            "note": f"b = {sizes[0]}..{sizes[-1]} after 128, least of {sweeps}: min "
                    f"{added[0] * 1e3:.2f}, max {added[-1] * 1e3:.2f} ms; "
                    f"first call less a steady one: median "
                    f"{np.median(extra) * 1e3:.2f} ms"}  # fmt: skip


def _feeds(rng, b):
    return rng.standard_normal((b, SIZES[0])).astype(np.float32), rng.integers(0, SIZES[-1], b)


ROWS = [mlp_step_b128, mlp_step_b16, new_batch_size]
