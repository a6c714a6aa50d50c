"""The error of kiln's own float32 kernels (kiln/ops/vecmath.py), in float32 ulps, over every
float32 input (2**32 bit patterns, NaNs included) or every `--step`-th one.

Each kernel's result is compared with (1) the float64 reference rounded once to float32
(glibc's float64 function, itself within 1 float64 ulp: the rounded value is the correctly
rounded one but for inputs within 2**-29 ulp of a rounding boundary) and (2) NumPy's float32
kernel, the one exact mode (`KILN_EXACT=1`) runs (for sigmoid, kiln's NumPy kernel
exp(-logaddexp(0, -x))); and NumPy's kernel with the reference, for scale. Ulps count the
float32 values between two results (-0.0 and +0.0 are one apart; two NaNs agree).

    python bench/vecmath_ulps.py [--step 1] [--names exp,log,tanh,sigmoid]

Prints a Markdown table (docs/debugging.md holds the one from a full run).
"""

import argparse
import math
import time

import numba
import numpy as np

from kiln.ops import vecmath
from kiln.ops.elementwise import _sigmoid

CHUNK = 1 << 24


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
def _ulps(a, b, hist):
    """Adds each pair's distance in ulps to `hist` (0, 1, 2, 3 or more); the max."""
    worst = 0
    for i in range(a.size):
        if a[i] != a[i] and b[i] != b[i]:
            d = 0
        elif (a[i] != a[i]) != (b[i] != b[i]):
            d = 1 << 32  # NaN against a number
        else:
            ia = np.int64(a[i : i + 1].view(np.int32)[0])
            ib = np.int64(b[i : i + 1].view(np.int32)[0])
            ia = -(1 << 31) - ia if ia < 0 else ia  # ordered: -0.0 next to +0.0
            ib = -(1 << 31) - ib if ib < 0 else ib
            d = abs(ia - ib)
        hist[min(d, 3)] += 1
        worst = max(worst, d)
    return worst


KINDS = {"exp": 0, "log": 1, "tanh": 2, "sigmoid": 3}
NUMPY = {"exp": np.exp, "log": np.log, "tanh": np.tanh,
         "sigmoid": lambda x, out: _sigmoid(np, x, out=out)}  # fmt: skip


def measure(name: str, step: int) -> dict:
    bits = np.empty(CHUNK, np.uint32)
    x = bits.view(np.float32)
    ours, ref, theirs = (np.empty(CHUNK, np.float32) for _ in range(3))
    worst = {"ref": 0, "numpy": 0, "numpy_ref": 0}
    hist = {key: np.zeros(4, np.int64) for key in worst}
    total = (1 << 32) // step
    with np.errstate(all="ignore"):
        for start in range(0, total, CHUNK):
            n = min(CHUNK, total - start)
            _fill(bits[:n], start * step, step)
            vecmath.run(name, x[:n], ours[:n])
            _reference(KINDS[name], x[:n], ref[:n])
            NUMPY[name](x[:n], out=theirs[:n])
            for key, (a, b) in (("ref", (ours, ref)), ("numpy", (ours, theirs)),
                                ("numpy_ref", (theirs, ref))):  # fmt: skip
                worst[key] = max(worst[key], _ulps(a[:n], b[:n], hist[key]))
    return {"worst": worst, "hist": hist, "count": total}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--step", type=int, default=1, help="every step-th bit pattern")
    parser.add_argument("--names", default=",".join(KINDS))
    args = parser.parse_args()
    print(
        "| op (float32) | inputs | max ulp vs reference | max ulp vs NumPy | NumPy vs "
        "reference | kiln off reference (1 ulp) |"
    )
    print("|---|---|---|---|---|---|")
    for name in args.names.split(","):
        t = time.perf_counter()
        m = measure(name, args.step)
        w, h = m["worst"], m["hist"]["ref"]
        print(f"| {name} | {m['count']:,} | {w['ref']} | {w['numpy']} | {w['numpy_ref']} | "
              f"{h[1] / m['count']:.2e} |  <!-- {time.perf_counter() - t:.0f} s -->",
              flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
