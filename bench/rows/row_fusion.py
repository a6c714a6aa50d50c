"""Rows of `bench/table.py` for fused elementwise programs (bench/bench_fusion.py's cases):
the 100-op chain on f32[16] (in the default mode, kiln's own float32 tanh and exp in the
compiled loop, and in exact mode, `KILN_EXACT=1`, in the note) and the 8-op chain on two
f32[4096,4096] (both modes too), whose floor is memory bandwidth: one pass reading two such
arrays and writing a third (`np.add(a, b, out=c)`), the least traffic the chain needs,
measured in the same run."""

import os

import numpy as np
from bench_fusion import big_case, chain_case, per_call_seconds


class _mode:
    """KILN_EXACT set to `exact` while programs are planned (and run) inside."""

    def __init__(self, exact: bool):
        self.exact = exact

    def __enter__(self):
        self.saved = os.environ.get("KILN_EXACT")
        os.environ["KILN_EXACT"] = "1" if self.exact else "0"

    def __exit__(self, *exc):
        if self.saved is None:
            os.environ.pop("KILN_EXACT", None)
        else:
            os.environ["KILN_EXACT"] = self.saved


def _chain(exact: bool, quick: bool):
    with _mode(exact):
        _, fused, numpy_fn = chain_case(100)
        fused()  # compiles with this mode
        fused()
        repeats, min_s = (1, 0.002) if quick else (9, 0.05)
        return per_call_seconds((numpy_fn, fused), repeats, min_s)


def chain_100_ops(quick: bool) -> dict:
    numpy_s, fast_s = _chain(False, quick)
    _, exact_s = _chain(True, quick)
    return {"workload": "100-op chain, f32[16] (fused)", "unit": "µs",
            "kiln": fast_s * 1e6, "numpy": numpy_s * 1e6, "floor": None,
            "note": f"KILN_EXACT=1 (NumPy's bits, NumPy's tanh and exp): {exact_s * 1e6:.3g} "
                    "µs; target 8 µs"}  # fmt: skip


def chain_8_ops_4096(quick: bool) -> dict:
    n = 1024 if quick else 4096
    with _mode(False):
        _, fused, numpy_fn = big_case(n)
        fused()  # compiles with this mode
    with _mode(True):
        _, exact, _ = big_case(n)
        exact()
    rng = np.random.default_rng(1)
    a, b = (rng.standard_normal((n, n), np.float32) for _ in range(2))
    c = np.empty_like(a)
    repeats = 2 if quick else 7
    numpy_s, kiln_s, exact_s, floor_s = per_call_seconds(
        (numpy_fn, fused, exact, lambda: np.add(a, b, out=c)), repeats, 0.0
    )
    return {"workload": f"8-op chain, 2 x f32[{n},{n}] (fused)", "unit": "ms",
            "kiln": kiln_s * 1e3, "numpy": numpy_s * 1e3, "floor": floor_s * 1e3,
            "note": f"kiln / naive NumPy {kiln_s / numpy_s:.2f}x (target 0.2x), with "
                    f"KILN_EXACT=1 {exact_s / numpy_s:.2f}x; floor: one pass reading 2 "
                    "arrays, writing 1"}  # fmt: skip


def adam_update_64k(quick: bool) -> dict:
    """Adam's update of a 256x64 float32 parameter and its moments, in place, from a given
    gradient (the step count and bias corrections as graph values), as `kn.function` plans
    it: one fused loop with numba (the moments and the parameter written where they are).
    NumPy by hand: the same update as ufuncs into preallocated arrays (`out=`)."""
    import kiln as kn

    f32 = np.float32
    rng = np.random.default_rng(2)
    shape = (256, 64)
    p0, g0 = (rng.standard_normal(shape).astype(f32) for _ in range(2))
    lr, b1, b2, eps = f32(1e-3), f32(0.9), f32(0.999), f32(1e-8)
    with kn.Graph().as_default():
        p = kn.Variable(p0.copy(), name="p")
        m = kn.Variable(np.zeros(shape, f32), name="m")
        v = kn.Variable(np.zeros(shape, f32), name="v")
        t = kn.Variable(np.zeros((), f32), name="t")
        g = kn.placeholder(kn.float32, shape, name="g")
        t1 = t + 1.0
        m1, v1 = b1 * m + (1 - b1) * g, b2 * v + (1 - b2) * g * g
        step = lr * kn.sqrt(1.0 - b2**t1) / (1.0 - b1**t1)
        update = kn.function([g], [], updates={t: t1, m: m1, v: v1,
                                               p: p - step * m1 / (kn.sqrt(v1) + eps)})  # fmt: skip
    pn, mn, vn = p0.copy(), np.zeros(shape, f32), np.zeros(shape, f32)
    tmp, tmp2 = np.empty(shape, f32), np.empty(shape, f32)
    state = {"t": 0}

    def by_hand():
        state["t"] += 1
        t = state["t"]
        np.multiply(mn, b1, out=mn)
        np.multiply(g0, 1 - b1, out=tmp)
        np.add(mn, tmp, out=mn)
        np.multiply(vn, b2, out=vn)
        np.multiply(g0, 1 - b2, out=tmp)
        np.multiply(tmp, g0, out=tmp)
        np.add(vn, tmp, out=vn)
        s = lr * np.sqrt(f32(1) - b2**t) / (f32(1) - b1**t)
        np.sqrt(vn, out=tmp)
        np.add(tmp, eps, out=tmp)
        np.divide(mn, tmp, out=tmp2)
        np.multiply(tmp2, s, out=tmp2)
        np.subtract(pn, tmp2, out=pn)

    repeats, min_s = (1, 0.002) if quick else (9, 0.05)
    numpy_s, kiln_s = per_call_seconds((by_hand, lambda: update(g0)), repeats, min_s)
    return {
        "workload": "Adam update of f32[256,64] in place",
        "unit": "µs",
        "kiln": kiln_s * 1e6,
        "numpy": numpy_s * 1e6,
        "floor": None,
        "note": "kiln: one fused loop (numba), moments and parameter written in place",
    }


ROWS = [chain_100_ops, chain_8_ops_4096, adam_update_64k]
