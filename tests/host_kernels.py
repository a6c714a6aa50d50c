"""kiln's generated CUDA C, compiled for the host with g++: the CUDA rounding intrinsics as
plain IEEE operations (and no FMA contraction), the kernel body run once per element of
contiguous, already broadcast arrays. What the simulated GPU runs, and how tests check the
generated C against NumPy without a GPU.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile

import numpy as np

PRELUDE = r"""
#include <math.h>
#include <cmath>
using std::isnan; using std::isfinite;
#define __device__ static inline
__device__ float __fadd_rn(float a, float b) { return a + b; }
__device__ float __fsub_rn(float a, float b) { return a - b; }
__device__ float __fmul_rn(float a, float b) { return a * b; }
__device__ float __fdiv_rn(float a, float b) { return a / b; }
__device__ float __fsqrt_rn(float a) { return sqrtf(a); }
__device__ double __dadd_rn(double a, double b) { return a + b; }
__device__ double __dsub_rn(double a, double b) { return a - b; }
__device__ double __dmul_rn(double a, double b) { return a * b; }
__device__ double __ddiv_rn(double a, double b) { return a / b; }
__device__ double __dsqrt_rn(double a) { return sqrt(a); }
"""


def host_source(ins, out, operation, name="kernel") -> str:
    """C++ of one host function `name(n, ins, outs)` running `operation` for each element:
    `ins` and `out` are (dtype, parameter name) pairs, as in the kernel's parameter lists
    (`out` one pair, or a list of pairs for a kernel with several outputs)."""
    from kiln.ops.fused_cuda import CTYPES

    outs = out if isinstance(out, list) else [out]
    lines = [f'extern "C" void {name}(long n, void** ins, void** outs) {{',
             "  for (long i = 0; i < n; i++) {"]  # fmt: skip
    for j, (dtype, param) in enumerate(ins):
        c = CTYPES[np.dtype(dtype)]
        lines.append(f"    const {c} &{param} = (({c}*)ins[{j}])[i];")
    for j, (dtype, param) in enumerate(outs):
        c = CTYPES[np.dtype(dtype)]
        lines.append(f"    {c} &{param} = (({c}*)outs[{j}])[i];")
    lines += [f"    {line}" for line in operation.splitlines()] + ["  }", "}"]
    return "\n".join(lines) + "\n"


def have_compiler() -> bool:
    return shutil.which("g++") is not None


def load(functions, preambles) -> list:
    """Compiles host functions made by `host_source` (named `kernel`), in one library with
    the preambles' helpers once each (cached on disk by its hash); returns one
    `run(n, arrays, out)` per function."""
    helpers = {}
    for preamble in preambles:
        for chunk in preamble.split("\n__device__")[1:]:
            helpers.setdefault(chunk, "\n__device__" + chunk)
    names = [f"k{j}" for j in range(len(functions))]
    text = PRELUDE + "".join(helpers.values()) + "".join(
        f.replace('void kernel(', f"void {name}(", 1) for f, name in zip(functions, names)
    )  # fmt: skip
    key = hashlib.sha1(text.encode()).hexdigest()[:20]
    folder = os.path.join(tempfile.gettempdir(), f"kiln-host-kernels-{os.getuid()}")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"{key}.so")
    if not os.path.exists(path):
        src = os.path.join(folder, f"{key}.{os.getpid()}.cpp")
        with open(src, "w") as f:
            f.write(text)
        tmp = f"{path}.{os.getpid()}"
        subprocess.run(["g++", "-O1", "-ffp-contract=off", "-shared", "-fPIC", "-w", "-o", tmp,
                        src], check=True)  # fmt: skip
        os.replace(tmp, path)
    library = ctypes.CDLL(path)
    return [_runner(getattr(library, name)) for name in names]


def _runner(fn):
    def run(n, arrays, out):
        """`out`: one array, or a list of them (a kernel with several outputs)."""
        outs = out if isinstance(out, list) else [out]
        pointers = (ctypes.c_void_p * max(len(arrays), 1))(*[a.ctypes.data for a in arrays])
        targets = (ctypes.c_void_p * len(outs))(*[o.ctypes.data for o in outs])
        fn(ctypes.c_long(n), pointers, targets)

    return run
