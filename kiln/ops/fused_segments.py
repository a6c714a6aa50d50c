"""Segmented blocks: a large fused program whose equations are not all lowered (a libm
function in exact mode: `tanh`, `exp`…) runs each block as compiled numba loops over the runs
of lowered equations, with NumPy's own kernel for each equation between them.

Before, one unlowered equation sent the whole program to one NumPy call per equation and
block; a program lowered whole is one run, one loop per block. A run's loop reads its inputs
once and writes only the values later equations (or the results) read, so values inside a run
never touch memory; the NumPy equations keep NumPy's bits in exact mode (`KILN_EXACT`);
outside it, ops with kiln's own vectorized kernels (kiln/ops/vecmath.py) run inside the runs.

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
    """`run(outs, values, scratch) -> bool` running one block of `prog` by runs of compiled
    equations (False: this block's arrays do not fit, nothing written), or None where it
    would not pay (no run of two or more lowered equations) or numba is missing."""
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
        return None  # no run of two lowered equations: NumPy's kernels, one by one
    # A program lowered whole is one run: one loop reads each input once and writes only the
    # results (measured on Adam's 12-equation update of float32[1M], CPU time: 0.9 ms as one
    # loop over 512 KiB blocks, 3.3 ms as NumPy's kernels by 128 KiB blocks, 2.4 ms unfused).
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
                  if j in prog.out_of or last_use.get(n_in + j, -1) >= b]  # fmt: skip
        steps.append(("loop", _Loop(numba, prog, exprs, a, b, reads, writes), reads, writes))
        start = b
    steps += [("numpy", j) for j in range(start, n_eq)]
    kernels = [getattr(np, u) if u else None for u in prog.ufuncs]
    for j, (op, slots) in enumerate(zip(prog.ops, prog.slots)):
        own = op.lowering.vecmath if op.lowering is not None else ""
        if own and vecmath.active(own, dtypes[slots[0]], exact):  # as every path runs it
            kernels[j] = vecmath.array_fn(own)
    return _runner(prog, steps, kernels, n_in, n_eq)


def _source(prog, exprs, a, b, reads, writes, scalars, same=None) -> str:
    """A run's loop; the reads marked in `scalars` are one element, read once before it (an
    index that is the same for every i would keep the loop from vectorizing). `same[k]`: the
    read whose memory output k is (written in place of a dying input), or -1; that output is
    stored through the read's own array, so the compiler sees one array read and written at
    the same index (through two arrays of one memory it keeps the loop scalar: Adam's update
    of float32[1M] in place, 2.5 ms so, 0.9 ms through one)."""
    n_in = prog.n_in
    same = same or (-1,) * len(writes)
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
    lines += [f"        {f'p{k}' if same[k] < 0 else f'f{same[k]}'}[i] = {name(s)}"
              for k, s in enumerate(writes)]  # fmt: skip
    lines.append("    return True")
    return "\n".join(lines) + "\n"


def _same_memory(a, b) -> bool:
    """Whether arrays `a` and `b` are the same elements (pointer, shape and strides)."""
    return (a.shape == b.shape and a.strides == b.strides and np.may_share_memory(a, b)
            and a.__array_interface__["data"][0] == b.__array_interface__["data"][0])  # fmt: skip


class _Loop:
    """A run's compiled loops, one per pattern of one-element reads and of outputs that are
    an input's memory (built on first use)."""

    def __init__(self, numba, prog, exprs, a, b, reads, writes):
        self.numba, self.args = numba, (prog, exprs, a, b, reads, writes)
        self.reads, self.writes = reads, writes
        self.loops: dict = {}

    def __call__(self, dst, src) -> None:
        scalars = tuple(v.size == 1 for v in src)
        same = tuple(next((k for k, v in enumerate(src) if not scalars[k] and _same_memory(d, v)),
                          -1) for d in dst)  # fmt: skip
        loop = self.loops.get((scalars, same))
        if loop is None:
            source = _source(*self.args, scalars, same)
            loop = self.loops[(scalars, same)] = _jit(self.numba, source)
        loop(*dst, *src)


def _runner(prog, steps, kernels, n_in, n_eq):
    from .fused import _into

    partial = [None] * n_eq
    for j, (op, attrs) in enumerate(zip(prog.ops, prog.attrs)):
        if kernels[j] is None:
            partial[j] = functools.partial(op.impl, np, **attrs)

    def run(outs, values, scratch) -> bool:
        """One block: `values` the block's inputs, `scratch` the buffer of each equation
        that is not a result (`prog.scratch`), `outs` the results' blocks."""
        eqs = [None] * n_eq
        for j, buf in zip(prog.scratch, scratch):
            eqs[j] = buf
        for j, o in zip(prog.outputs, outs):
            eqs[j] = o
        slot = list(values) + eqs
        for a in (*outs, *values):
            if type(a) is not np.ndarray or not a.flags.c_contiguous:
                return False
        size = outs[0].size
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

    # One loop over every equation: it reads the inputs and writes the results only, so it
    # runs on whole arrays, with no scratch (`fused._run_blocked`).
    run.whole = len(steps) == 1 and steps[0][0] == "loop"
    return run
