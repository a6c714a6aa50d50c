"""Segmented blocks: a large fused program whose equations are not all lowered (a libm
function in exact mode: `tanh`, `exp`…) runs each block as compiled numba loops over the runs
of lowered equations, with NumPy's own kernel for each equation between them.

Before, one unlowered equation sent the whole program to one NumPy call per equation and
block. A run's loop reads its inputs once and writes only the values later equations (or the
result) read, so values inside a run never touch memory; the NumPy equations keep NumPy's
bits in exact mode (`KILN_EXACT`); outside it, ops with kiln's own vectorized kernels
(kiln/ops/vecmath.py) run inside the runs, and a program of such ops and cheap ones is one run.

A run's loop takes the block's arrays flat: it serves blocks whose inputs are all of the
block's shape (or spread from one element); another block (an input broadcast along some
axes) runs as before.
"""

from __future__ import annotations

import functools

import numpy as np

from ..debug import log
from . import vecmath
from .fused_codegen import _expr, _jit

__all__ = ["segmented_block"]

_CACHE: dict = {}  # (program, dtypes, exact) -> the block runner, or None


def segmented_block(prog, sig, exact: bool):
    """`run(out, values, scratch) -> bool` running one block of `prog` by runs of compiled
    equations (False: this block's arrays do not fit, nothing written), or None where it
    would not pay (no run of two or more lowered equations beside an unlowered one) or
    numba is missing."""
    key = (prog.program, prog.outputs, tuple(sig.dtypes), exact)
    if key in _CACHE:
        return _CACHE[key]
    runner = None
    try:
        import numba
    except ImportError:
        numba = None
    if numba is not None:
        try:
            runner = _build(numba, prog, sig.dtypes, exact)
        except Exception as e:  # noqa: BLE001 - a typing gap in numba: NumPy runs it
            log(1, f"fused segments: not built ({type(e).__name__}: {e})")
    if len(_CACHE) > 1024:
        _CACHE.clear()
    _CACHE[key] = runner
    return runner


def _build(numba, prog, dtypes, exact):
    n_in, n_eq = prog.n_in, len(prog.ops)
    names = [f"v{k}" for k in range(n_in)] + [f"e{j}" for j in range(n_eq)]
    exprs = []
    for j, (op, slots, attrs) in enumerate(zip(prog.ops, prog.slots, prog.attrs)):
        args = [names[s] for s in slots]
        own = op.lowering.vecmath if op.lowering is not None else ""
        if own and vecmath.active(own, dtypes[slots[0]], exact):
            exprs.append(vecmath.expr(own, args[0]))  # kiln's kernel, as every path runs it
            continue
        # NumPy's SIMD libm beats a scalar one on blocks: libm calls stay out of the runs
        exprs.append(_expr(op.lowering, args, [dtypes[s] for s in slots], dtypes[n_in + j],
                           attrs, True))  # fmt: skip
    runs, j = [], 0
    while j < n_eq:
        k = j
        while k < n_eq and exprs[k] is not None:
            k += 1
        if k - j >= 2:
            runs.append((j, k))
        j = max(k, j + 1)
    if not runs:
        return None  # nothing to split
    if sum(b - a for a, b in runs) == n_eq and not any(
        vecmath.active(op.lowering.vecmath, dtypes[s[0]], exact)
        for op, s in zip(prog.ops, prog.slots)
        if op.lowering is not None and op.lowering.vecmath
    ):  # fmt: skip
        return None  # the whole program is one loop of cheap ops: NumPy's calls do as well
    last_use = {}
    for j, slots in enumerate(prog.slots):
        for s in slots:
            last_use[s] = j
    steps, start = [], 0
    for a, b in runs:
        steps += [("numpy", j) for j in range(start, a)]
        inside = {n_in + j for j in range(a, b)}
        reads = sorted({s for j in range(a, b) for s in prog.slots[j] if s not in inside})
        writes = [n_in + j for j in range(a, b)
                  if j == n_eq - 1 or last_use.get(n_in + j, -1) >= b]  # fmt: skip
        steps.append(("loop", _Loop(numba, prog, exprs, a, b, reads, writes), reads, writes))
        start = b
    steps += [("numpy", j) for j in range(start, n_eq)]
    kernels = [getattr(np, u) if u else None for u in prog.ufuncs]
    for j, (op, slots) in enumerate(zip(prog.ops, prog.slots)):
        own = op.lowering.vecmath if op.lowering is not None else ""
        if own and vecmath.active(own, dtypes[slots[0]], exact):  # as every path runs it
            kernels[j] = vecmath.array_fn(own)
    return _runner(prog, steps, kernels, n_in, n_eq)


def _source(prog, exprs, a, b, reads, writes, scalars) -> str:
    """A run's loop; the reads marked in `scalars` are one element, read once before it (an
    index that is the same for every i would keep the loop from vectorizing)."""
    n_in = prog.n_in
    name = lambda s: f"v{s}" if s < n_in else f"e{s - n_in}"  # noqa: E731
    params = [f"o{k}" for k in range(len(writes))] + [f"a{k}" for k in range(len(reads))]
    lines = [f"def kernel({', '.join(params)}):", "    n = o0.size"]
    lines += [f"    p{k} = o{k}.reshape(-1)" for k in range(len(writes))]
    for k, s in enumerate(reads):
        lines.append(f"    {name(s)} = a{k}.reshape(-1)[0]" if scalars[k] else
                     f"    f{k} = a{k}.reshape(-1)")  # fmt: skip
    lines.append("    for i in range(n):")
    lines += [f"        {name(s)} = f{k}[i]" for k, s in enumerate(reads) if not scalars[k]]
    lines += [f"        e{j} = {exprs[j]}" for j in range(a, b)]
    lines += [f"        p{k}[i] = {name(s)}" for k, s in enumerate(writes)]
    lines.append("    return True")
    return "\n".join(lines) + "\n"


class _Loop:
    """A run's compiled loops, one per pattern of one-element reads (built on first use)."""

    def __init__(self, numba, prog, exprs, a, b, reads, writes):
        self.numba, self.args = numba, (prog, exprs, a, b, reads, writes)
        self.reads, self.writes = reads, writes
        self.loops: dict = {}

    def __call__(self, dst, src) -> None:
        pattern = tuple(v.size == 1 for v in src)
        loop = self.loops.get(pattern)
        if loop is None:
            loop = self.loops[pattern] = _jit(self.numba, _source(*self.args, pattern))
        loop(*dst, *src)


def _runner(prog, steps, kernels, n_in, n_eq):
    from .fused import _into

    partial = [None] * n_eq
    for j, (op, attrs) in enumerate(zip(prog.ops, prog.attrs)):
        if kernels[j] is None:
            partial[j] = functools.partial(op.impl, np, **attrs)

    def run(out, values, scratch) -> bool:
        """One block: `values` the block's inputs, `scratch` each equation's buffer but the
        last (whose value goes to `out`)."""
        slot = list(values) + list(scratch) + [out]
        for a in (out, *values):
            if type(a) is not np.ndarray or not a.flags.c_contiguous:
                return False
        size = out.size
        if any(v.size not in (1, size) for v in values):
            return False
        for step in steps:
            if step[0] == "loop":
                _, loop, reads, writes = step
                loop([slot[s] for s in writes], [slot[s] for s in reads])
                continue
            j = step[1]
            args = [slot[s] for s in prog.slots[j]]
            dest = slot[n_in + j]
            if kernels[j] is not None:
                kernels[j](*args, out=dest)
            else:
                _into(np, partial[j], args, dest)
        return True

    return run
