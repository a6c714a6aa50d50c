"""The error of float32 exp, log, tanh and sigmoid, in float32 ulps, over every float32 input
(2**32 bit patterns, NaNs included; or every `--step`-th one): NumPy's kernels (exact mode's)
and kiln's own (kiln/ops/vecmath.py, the default mode's, where kiln has one), each against the
correctly rounded value and against each other.

The reference is the float64 function (glibc's, within 1 float64 ulp) rounded once to float32:
the correctly rounded value but for inputs within 2**-28 ulp of a rounding boundary (the
inputs this script reports, checked with mpmath, are correctly rounded). NumPy's sigmoid is
kiln's NumPy kernel, exp(-logaddexp(0, -x)). Ulps count the float32 values between two results
(-0.0 and +0.0 are one apart; two NaNs agree; NaN against a number counts 2**40).

    python bench/vecmath_ulps.py [--step 1] [--names exp,log,tanh,sigmoid]

Prints a Markdown table (docs/debugging.md holds the one from a full run), then the inputs
where kiln's kernel and NumPy's are more than `NUMPY_ULP_BOUND` ulps apart.
"""

import argparse
import math
import time

import numba
import numpy as np

from kiln.ops import vecmath
from kiln.ops.elementwise import _sigmoid

CHUNK = 1 << 24
KEEP = 64  # inputs kept where kiln and NumPy are further apart than the bound


@numba.njit(error_model="numpy", nogil=True)
def _fill(bits, start, step):
    for i in range(bits.size):
        bits[i] = np.uint32((start + i * step) & 0xFFFFFFFF)


@numba.njit(error_model="numpy", nogil=True)
def _reference(kind, x, out):
    for i in range(x.size):
        d = np.float64(x[i])
        if kind == 0:
            r = math.exp(d)
        elif kind == 1:
            r = math.log(d) if d > 0 else (-math.inf if d == 0 else math.nan)
        elif kind == 2:
            r = math.tanh(d)
        else:
            r = 1.0 / (1.0 + math.exp(-d))
        out[i] = np.float32(r)


@numba.njit(error_model="numpy", nogil=True)
def _tally(x, a, b, hist, bound, kept):
    """Adds each pair's distance in ulps to `hist` (0..7, then 8 or more; the largest in its
    last slot); keeps in `kept` (count first) the bit patterns of x where it exceeds `bound`."""
    ia, ib, ix = a.view(np.int32), b.view(np.int32), x.view(np.uint32)
    for i in range(a.size):
        if a[i] != a[i] and b[i] != b[i]:
            d = 0
        elif (a[i] != a[i]) != (b[i] != b[i]):
            d = 1 << 40
        else:
            p, q = np.int64(ia[i]), np.int64(ib[i])
            p = -(1 << 31) - p if p < 0 else p  # ordered: -0.0 next to +0.0
            q = -(1 << 31) - q if q < 0 else q
            d = abs(p - q)
        hist[min(d, 8)] += 1
        hist[9] = max(hist[9], d)
        if d > bound and kept[0] < kept.size - 1:
            kept[0] += 1
            kept[kept[0]] = ix[i]


KINDS = {"exp": 0, "log": 1, "tanh": 2, "sigmoid": 3}
NUMPY = {"exp": np.exp, "log": np.log, "tanh": np.tanh,
         "sigmoid": lambda x, out: _sigmoid(np, x, out=out)}  # fmt: skip
PAIRS = ("numpy_ref", "kiln_ref", "kiln_numpy")


def measure(name: str, step: int) -> dict:
    """{pair: histogram of distances} and the inputs where kiln and NumPy differ by more than
    the bound."""
    own = vecmath.covers(name, "float32")
    bits = np.empty(CHUNK, np.uint32)
    x = bits.view(np.float32)
    ours, ref, theirs = (np.empty(CHUNK, np.float32) for _ in range(3))
    hist = {key: np.zeros(10, np.int64) for key in PAIRS}
    kept = {key: np.zeros(KEEP + 1, np.int64) for key in PAIRS}
    total = (1 << 32) // step
    with np.errstate(all="ignore"):
        for start in range(0, total, CHUNK):
            n = min(CHUNK, total - start)
            _fill(bits[:n], start * step, step)
            _reference(KINDS[name], x[:n], ref[:n])
            NUMPY[name](x[:n], out=theirs[:n])
            pairs = {"numpy_ref": (theirs, ref)}
            if own:
                vecmath.run(name, x[:n], ours[:n])
                pairs.update(kiln_ref=(ours, ref), kiln_numpy=(ours, theirs))
            for key, (a, b) in pairs.items():
                _tally(x[:n], a[:n], b[:n], hist[key], vecmath.NUMPY_ULP_BOUND, kept[key])
    far = kept["kiln_numpy"]
    return {"hist": hist, "count": total, "own": own,
            "far": np.array(far[1 : far[0] + 1], np.uint32).view(np.float32)}  # fmt: skip


def _max(h) -> str:
    return "-" if not h[:9].sum() else f"{h[9]}"


def _over(h, bound) -> str:
    return f"{int(h[bound + 1 : 9].sum()):,}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--step", type=int, default=1, help="every step-th bit pattern")
    parser.add_argument("--names", default=",".join(KINDS))
    args = parser.parse_args()
    bound = vecmath.NUMPY_ULP_BOUND
    print(f"| op (float32) | inputs | NumPy vs reference: max (inputs > 1, > {bound}) | kiln vs "
          f"reference: max (inputs > 0) | kiln vs NumPy: max (inputs > {bound}) |")  # fmt: skip
    print("|---|---|---|---|---|")
    notes = []
    for name in args.names.split(","):
        t = time.perf_counter()
        m = measure(name, args.step)
        h = m["hist"]
        nr, kr, kn_ = h["numpy_ref"], h["kiln_ref"], h["kiln_numpy"]
        kiln = (f"{_max(kr)} ({_over(kr, 0)})", f"{_max(kn_)} ({_over(kn_, bound)})") if m[
            "own"] else ("no kernel", "no kernel")  # fmt: skip
        print(f"| `{name}` | {m['count']:,} | {_max(nr)} ({_over(nr, 1)}, {_over(nr, bound)}) "
              f"| {kiln[0]} | {kiln[1]} |  <!-- {time.perf_counter() - t:.0f} s -->",
              flush=True)  # fmt: skip
        if len(m["far"]):
            notes.append(f"{name}: kiln and NumPy more than {bound} ulps apart at "
                         + ", ".join(f"{v!r}" for v in m["far"].tolist()))  # fmt: skip
    for note in notes:
        print(note)


if __name__ == "__main__":
    main()
