"""`fused`: a group of elementwise ops run as one kernel (made by `fuse_elementwise`).

Its `program` attr lists the group's equations, its `outputs` attr the equations that are its
results: one (the last), or several (a tuple value whose elements `get` nodes read; every
result has the iteration shape, and one loop writes them all). On the CPU a large output runs
cache-blocked (every equation on one block of rows, in small scratch buffers, before the next
block), a small one through a numba loop generated from the program (when numba is installed
and the loop pays) or through straight-line calls of the member kernels. On a GPU it is one
generated CUDA kernel (kiln/ops/fused_cuda.py).
"""

from __future__ import annotations

import functools
import itertools
import math
import threading
from dataclasses import dataclass, field

import numpy as np

from .. import dtypes as dt
from ..debug import exact_mode
from ..errors import DTypeError, ShapeError
from ..graph.opdef import REGISTRY
from . import vecmath
from .core import defop
from .fused_codegen import loop_pattern, loop_source, numba_loop, python_code, specialize
from .fused_cuda import run_fused
from .fused_segments import segmented_block

# One scratch buffer per live value, of at most this many bytes: with a block of each input
# and of the output, a group's working set stays in L2 (measured in bench/bench_fusion.py).
BLOCK_BYTES = 128 * 1024
# Outputs up to this size run as one block (whole arrays) through per-thread scratch: while
# whole values stay in cache, more blocks only add kernel calls (measured: blocking wins from
# a few MiB on, by 2-3x at 16 MiB). Either way a steady-state call allocates nothing.
UNBLOCKED_BYTES = 1024 * 1024
# Blocks of a segmented program (kiln/ops/fused_segments.py), which keeps only the values
# between its runs in scratch: larger blocks, fewer calls (measured on the 8-op chain of two
# 4096x4096 float32 in bench/bench_fusion.py: 26.3 ms at 128 KiB, 21.9 at 512, 22.3 at 1 MiB).
SEGMENT_BLOCK_BYTES = 512 * 1024
# Outputs up to this size run as straight-line calls (temporaries allocated): the groups the
# CPU fuses for being small (kiln/runtime/backend.py, up to 16 KiB) without a numba loop, such
# as a softmax's on f32[128, 10], took 10 us blocked against 1.3-2.1 straight (issue 17).
SMALL_BYTES = 16 * 1024
NUMBA_AFTER_CALLS = 2  # a program gets its numba loop on this call: one-off runs never compile
# What one element of an equation costs a numba loop beyond what NumPy's kernel takes, in ns,
# by the op's cost class: a libm call (`Lowering.transcendental`), scalar in the loop where
# NumPy's kernel is SIMD; kiln's own kernels (kiln/ops/vecmath.py, outside exact mode) and
# the other ops, which LLVM vectorizes in the loop (its inputs read as `loop_pattern` says:
# one-element inputs hoisted, an input in place read through its result), nothing: such
# loops took 0.2-0.7x the time of NumPy's calls at every size from 256 elements to 1 MiB
# (float32 and float64 chains, Adam's update, casts, where, maximum; float32 sin with a mul
# took 1.25x at 256 elements, 4.3x at 16,384: 2-3 ns more per element).
TRANSCENDENTAL_NS, VECMATH_NS, CHEAP_NS = 3.0, 0.0, 0.0


class Signature:
    """What running a program needs for one tuple of input dtypes."""

    __slots__ = ("dtypes", "dtype", "out_dtypes", "itemsize", "eq_itemsize", "loop", "fast",
                 "plans", "codes", "limits")  # fmt: skip

    def __init__(self, dtypes, n_in, outputs):
        self.dtypes = dtypes  # every input's and equation's
        self.dtype = dtypes[-1]
        self.out_dtypes = [dtypes[n_in + j] for j in outputs]  # each result's
        self.itemsize = max(d.itemsize for d in dtypes)
        # the widest result (a float64 scalar, an input or a 0-d value in the group, takes
        # no room of the results' size)
        self.eq_itemsize = max((d.itemsize for d in self.out_dtypes), default=self.itemsize)
        # The numba loops: False until the first is built, then a dict from the pattern of
        # the arrays (`fused_codegen.loop_pattern`) to its loop (None: numba refused them),
        # or None where the program has no loop (an op or dtype not lowered). `loop` gives
        # NumPy's bits (KILN_EXACT=1); `fast` may call libm functions within 2 ulp of NumPy's
        # (the default; the same loops where the program has none).
        self.loop = False
        self.fast = False
        self.plans: dict = {}  # shapes -> BlockPlan
        self.codes: dict = {}  # exact -> Program.code's (whole, block) for NumPy
        self.limits: dict = {}  # exact -> Program.limit


class Program:
    """A checked `program` attr. Slots 0..n_in-1 hold the inputs, n_in + j equation j's value;
    per equation: its op, argument slots, attrs, and the slots whose last use it is."""

    def __init__(self, program, outputs):
        if not isinstance(program, tuple) or not program:
            raise ShapeError("fused: program must be a non-empty tuple of equations")
        self.program, self.outputs = program, outputs
        refs = [_equation(eq, j) for j, eq in enumerate(program)]
        used_inputs = sorted({k for _, args, _ in refs for kind, k in args if kind == "in"})
        self.n_in = len(used_inputs)
        if used_inputs != list(range(self.n_in)):
            raise ShapeError(f"fused: program must use inputs 0..n-1, it uses {used_inputs}")
        ok = (
            isinstance(outputs, tuple) and outputs and all(type(j) is int for j in outputs)
            and list(outputs) == sorted(set(outputs)) and outputs[0] >= 0
            and outputs[-1] == len(program) - 1
        )  # fmt: skip
        if not ok:
            raise ShapeError(f"fused: outputs must be increasing equation numbers ending with "
                             f"the last, {len(program) - 1}, got {outputs!r:.80}")  # fmt: skip
        self.multi = len(outputs) > 1  # a tuple of results
        self.out_of = {j: k for k, j in enumerate(outputs)}  # equation -> its result number
        self.ops, self.slots, self.attrs, self.frees = [], [], [], []
        last_use = {}
        for j, (op, args, attrs) in enumerate(refs):
            slots = tuple(k if kind == "in" else self.n_in + k for kind, k in args)
            last_use.update((s, j) for s in slots)
            self.ops.append(op)
            self.slots.append(slots)
            self.attrs.append(attrs)
        unused = [j for j in range(len(refs) - 1)
                  if self.n_in + j not in last_use and j not in self.out_of]  # fmt: skip
        if unused:
            raise ShapeError(f"fused: equations {unused} are not used")
        for j in range(len(refs)):
            self.frees.append(tuple(s for s, k in last_use.items() if k == j))
        # One-ufunc equations without attrs: the ufunc is called bare (`Lowering.ufunc`).
        self.ufuncs = [_ufunc(op) if not attrs else None for op, attrs in zip(self.ops, self.attrs)]
        self.plain = [u is not None for u in self.ufuncs]
        # The equations that are not results: each has a scratch buffer in a blocked run.
        self.scratch = [j for j in range(len(self.ops)) if j not in self.out_of]
        # Only exact ops: the exact loop and the fast one are the same (`Signature.loop`).
        self.all_exact = all(op.lowering is not None and op.lowering.exact for op in self.ops)
        self.calls = 0
        self._signatures: dict = {}
        self._code: dict = {}
        # The numba loop runs outputs up to this many elements: past it, a NumPy call per
        # equation (~250 ns each) costs less than the loop's extra per-element work.
        cost = sum(TRANSCENDENTAL_NS if _transcendental(op) else CHEAP_NS for op in self.ops)
        self.numba_limit = 250.0 * len(self.ops) / cost if cost else math.inf
        # Outside exact mode, where kiln's own kernels replace libm calls (float32).
        cost = sum(
            (VECMATH_NS if op.lowering.vecmath else TRANSCENDENTAL_NS) if _transcendental(op)
            else CHEAP_NS for op in self.ops
        )  # fmt: skip
        self.fast_limit = 250.0 * len(self.ops) / cost if cost else math.inf

    def limit(self, sig, exact: bool) -> float:
        """The largest output the numba loop runs, in this mode for this signature."""
        found = sig.limits.get(exact)
        if found is None:
            fast = not exact and any(
                vecmath.covers(op.lowering.vecmath, sig.dtypes[slots[0]])
                for op, slots in zip(self.ops, self.slots)
                if op.lowering is not None and op.lowering.vecmath
            )  # fmt: skip
            found = sig.limits[exact] = self.fast_limit if fast else self.numba_limit
        return found

    def run_rules(self, values: list, rule: str, error) -> list:
        """Each equation's shape (or dtype) from its member op's rule: input values first."""
        for op, slots, attrs in zip(self.ops, self.slots, self.attrs):
            try:
                values.append(getattr(op, rule)(*(values[s] for s in slots), **attrs))
            except (ShapeError, DTypeError, TypeError) as e:
                raise error(f"fused: equation {len(values) - self.n_in} ({op.name}): {e}") from None
        return values

    def signature(self, in_dtypes: tuple) -> Signature:
        found = self._signatures.get(in_dtypes)
        if found is None:
            dtypes = self.run_rules(list(in_dtypes), "dtype_rule", DTypeError)
            dtypes = [d.dtype if type(d) is dt.DType else d for d in dtypes]  # NumPy's, inside
            found = self._signatures[in_dtypes] = Signature(dtypes, self.n_in, self.outputs)
        return found

    def code(self, xp, sig=None, exact: bool = True):
        """(whole, block): the program as straight-line Python over `xp`'s kernels; outside
        exact mode, kiln's own kernels where the signature `sig` has them (as every path)."""
        if sig is not None and xp is np:
            found = sig.codes.get(exact)
            if found is None:
                found = sig.codes[exact] = self._numpy_code(sig, exact)
            return found
        found = self._code.get(xp)
        if found is None:
            found = self._code[xp] = python_code(self, self._kernels(xp), self._into(xp))
        return found

    def _kernels(self, xp) -> list:
        return [
            getattr(xp, ufunc) if ufunc else functools.partial(op.impl, xp, **attrs)
            for op, attrs, ufunc in zip(self.ops, self.attrs, self.ufuncs)
        ]

    def _into(self, xp):
        return functools.partial(_into, xp)

    def _numpy_code(self, sig, exact):
        """The code for NumPy with kiln's own kernels where they run (else the shared one)."""
        own = [
            op.lowering.vecmath if op.lowering is not None else "" for op in self.ops
        ]  # fmt: skip
        own = [
            name if name and vecmath.active(name, sig.dtypes[slots[0]], exact) else ""
            for name, slots in zip(own, self.slots)
        ]  # fmt: skip
        if not any(own):
            return self.code(np)
        fns = [vecmath.array_fn(name) if name else f for name, f in zip(own, self._kernels(np))]
        return python_code(self, fns, self._into(np))


def _ufunc(op):
    return None if op.lowering is None else op.lowering.ufunc


def _transcendental(op) -> bool:
    return op.lowering is not None and op.lowering.transcendental


def _equation(eq, j):
    """(op, refs, attrs) of one equation, checked: refs name inputs or earlier equations."""
    if not (isinstance(eq, tuple) and len(eq) == 3 and isinstance(eq[0], str)):
        raise ShapeError(f"fused: equation {j} is not (op name, refs, attrs): {eq!r:.80}")
    name, refs, attrs = eq
    op = REGISTRY.get(name)
    if op is None or "elementwise" not in op.tags or op.tags & {"fused", "random", "source"}:
        raise ShapeError(f"fused: equation {j}: {name!r} is not a fusable elementwise op")
    ok = isinstance(refs, tuple) and all(
        isinstance(r, tuple) and len(r) == 2 and type(r[1]) is int and r[1] >= 0
        and (r[0] == "in" or (r[0] == "eq" and r[1] < j))
        for r in refs
    )  # fmt: skip
    if not ok:
        raise ShapeError(f"fused: equation {j} ({name}): bad refs {refs!r:.80}")
    if not (isinstance(attrs, tuple) and all(isinstance(a, tuple) and len(a) == 2 for a in attrs)):
        raise ShapeError(f"fused: equation {j} ({name}): attrs must be (name, value) pairs")
    return op, refs, dict(attrs)


def _into(xp, fn, args, out):
    """`fn(*args, out=out)` for a kernel that is not one ufunc: into a temporary first when
    `out` may be an input's buffer (in-place reuse), as `where` writes out before it reads."""
    if out is None or not any(xp.may_share_memory(out, a) for a in args):
        return fn(*args, out=out)
    out[...] = fn(*args)
    return out


_PROGRAMS: dict = {}  # id(program attr) -> (attr, Program): the attr object is kept alive
_BY_VALUE: dict = {}  # (program, outputs) -> Program: equal programs share compiled loops
_LOCK = threading.Lock()


def compiled(program, outputs) -> Program:
    """The checked Program of a `program` attr (cached by identity, then by value)."""
    entry = _PROGRAMS.get(id(program))
    if entry is not None and entry[0] is program and entry[1].outputs == outputs:
        return entry[1]
    with _LOCK:
        found = _BY_VALUE.get((program, outputs))
        if found is None:
            found = Program(program, outputs)
            _BY_VALUE[(program, outputs)] = found
        if len(_PROGRAMS) > 4096:  # bounded: a long-lived process sees many attr objects
            _PROGRAMS.clear()
            _BY_VALUE.clear()
        _PROGRAMS[id(program)] = (program, found)
    return found


# -- rules -----------------------------------------------------------------------------------


def result_shapes(prog, shapes) -> list:
    """Each result's shape for these input shapes: all the iteration shape (the last
    equation's), which one loop writes (ShapeError where one differs)."""
    if len(shapes) != prog.n_in:
        raise ShapeError(f"fused: the program takes {prog.n_in} inputs, got {len(shapes)}")
    values = prog.run_rules(list(shapes), "shape_rule", ShapeError)
    results = [tuple(values[prog.n_in + j]) for j in prog.outputs]
    for j, shape in zip(prog.outputs, results):
        if shape != results[-1]:
            raise ShapeError(f"fused: result equation {j} has shape {shape}, not the iteration "
                             f"shape {results[-1]} (the last equation's)")  # fmt: skip
    return results


def _shape_rule(*shapes, program, outputs):
    prog = compiled(program, outputs)
    results = result_shapes(prog, shapes)
    return () if prog.multi else results[0]


def _dtype_rule(*dtypes, program, outputs):
    prog = compiled(program, outputs)
    if len(dtypes) != prog.n_in:
        raise DTypeError(f"fused: the program takes {prog.n_in} inputs, got {len(dtypes)}")
    sig = prog.signature(tuple(dtypes))
    return dt.TUPLE if prog.multi else sig.dtype


# -- kernel ----------------------------------------------------------------------------------


def _fused(xp, *inputs, out=None, program, outputs):
    prog = compiled(program, outputs)
    if xp is not np:  # CuPy: one generated kernel (kiln/ops/fused_cuda.py)
        return run_fused(prog, xp, inputs, out)
    sig = prog.signature(tuple([a.dtype for a in inputs]))
    if prog.multi:
        return tuple(_run_cpu(prog, sig, inputs, result_list(prog, out), exact_mode()))
    return _run_cpu(prog, sig, inputs, [out], exact_mode())[0]


def result_list(prog, out) -> list:
    """The `out=` of a program with several results as a list (None: each allocated)."""
    if out is None:
        return [None] * len(prog.outputs)
    if not isinstance(out, (tuple, list)) or len(out) != len(prog.outputs):
        raise ShapeError(f"fused: out= must be a tuple of {len(prog.outputs)} arrays (or None)")
    return list(out)


def _run_cpu(prog, sig, inputs, outs, exact) -> list:
    """Runs the program into `outs` (one array per result, None: allocated); returns them."""
    if any(o is None for o in outs):
        shape = _broadcast_shape(inputs)
        outs = [np.empty(shape, d) if o is None else o for o, d in zip(outs, sig.out_dtypes)]
    out = outs[0]
    nbytes = out.size * sig.eq_itemsize
    if nbytes > UNBLOCKED_BYTES:
        _run_blocked(prog, inputs, outs, sig, BLOCK_BYTES, exact)
        return outs
    loops = sig.loop if exact or prog.all_exact else sig.fast
    if _HAVE_NUMBA and loops is not None and out.size <= prog.limit(sig, exact):
        loop = _numba_loop(prog, sig, inputs, outs, exact)
        if loop is not None and loop(*outs, *inputs):
            return outs
    if nbytes <= SMALL_BYTES:  # a few KiB: allocating is cheaper than managing scratch
        prog.code(np, sig, exact)[0](*outs, *inputs)
        return outs
    _run_blocked(prog, inputs, outs, sig, max(nbytes, 1), exact)
    return outs


def _prepare(backend, in_shapes, in_dtypes, out_shape, *, program, outputs):
    """The CPU kernel of one fused node for one signature (`OpDef.prepare`): where the
    results are small enough for a numba loop and inputs are of their size or of one
    element, a call runs the loop directly once it is built (on the NUMBA_AFTER_CALLS-th
    call), with nothing checked per call but the array types numba checks; otherwise the
    general path with the program and the mode (KILN_EXACT) looked up once."""
    if backend.xp is not np:
        return None
    prog = compiled(program, outputs)
    sig = prog.signature(tuple(in_dtypes))
    exact = exact_mode()
    if prog.multi:
        out_shape = result_shapes(prog, [tuple(s) for s in in_shapes])[-1]
    shape, dtype, size = tuple(out_shape), sig.dtype, math.prod(out_shape)
    loopable = (
        _HAVE_NUMBA and size <= prog.limit(sig, exact) and size * sig.itemsize <= UNBLOCKED_BYTES
        and all(math.prod(s) in (1, size) for s in in_shapes)
    )  # fmt: skip
    if prog.multi:
        return _prepare_multi(prog, sig, exact, shape, loopable)
    if not loopable:

        def kernel(xp, *inputs, out=None):
            return _run_cpu(prog, sig, inputs, [out], exact)[0]

        return kernel
    box = [None]

    def kernel(xp, *inputs, out=None):
        loop = box[0]
        if loop is not None:
            if out is None:
                out = np.empty(shape, dtype)
            try:
                if loop(out, *inputs):  # False: out no longer the input it took
                    return out
            except TypeError:  # array types it was not compiled for (a strided view...)
                pass
        result = _run_cpu(prog, sig, inputs, [out], exact)[0]
        box[0] = _built_loop(prog, sig, inputs, [result], exact)
        return result

    return kernel


def _prepare_multi(prog, sig, exact, shape, loopable):
    """`_prepare`'s kernel for a program with several results (a tuple of arrays)."""
    if not loopable:

        def kernel(xp, *inputs, out=None):
            return tuple(_run_cpu(prog, sig, inputs, result_list(prog, out), exact))

        return kernel
    box = [None]

    def kernel(xp, *inputs, out=None):
        outs = result_list(prog, out)
        loop = box[0]
        if loop is not None:
            outs = [np.empty(shape, d) if o is None else o for o, d in zip(outs, sig.out_dtypes)]
            try:
                if loop(*outs, *inputs):  # False: an out no longer the input it took
                    return tuple(outs)
            except TypeError:  # array types it was not compiled for (a strided view...)
                pass
        result = _run_cpu(prog, sig, inputs, outs, exact)
        box[0] = _built_loop(prog, sig, inputs, result, exact)
        return tuple(result)

    return kernel


def _has_numba() -> bool:
    import importlib.util

    return importlib.util.find_spec("numba") is not None


_HAVE_NUMBA = _has_numba()


def has_compiled_loops() -> bool:
    """Whether fused groups can run as compiled loops here (numba is installed).

    >>> has_compiled_loops() in (True, False)
    True
    """
    return _HAVE_NUMBA


def _broadcast_shape(inputs) -> tuple:
    shape = ()
    for a in inputs:
        if a.shape != shape and a.shape:
            if shape:
                return np.broadcast_shapes(*(a.shape for a in inputs))
            shape = a.shape
    return shape


def _block_axis(shape, limit) -> tuple[int, int]:
    """(axis, step): blocks are `out[i_0, ..., i_{axis-1}, j:j+step]`, whole trailing axes,
    at most `limit` elements each."""
    inner = 1
    for axis in range(len(shape) - 1, -1, -1):
        if inner * shape[axis] > limit:
            return axis, max(1, limit // inner)
        inner *= shape[axis]
    return 0, shape[0]


def _indexer(in_shape, ndim, axis):
    """A function of (lead indices, slice) giving an input's block (None: the whole input)."""
    d = ndim - len(in_shape)
    if axis < d:  # the input lies within the trailing axes: every block uses all of it
        return None
    lead = [(q, in_shape[q - d] != 1) for q in range(d, axis)]
    cut = in_shape[axis - d] != 1
    whole = slice(None)
    return lambda idx, sl: (*(idx[q] if full else 0 for q, full in lead), sl if cut else whole)


_SCRATCH = threading.local()


def _scratch(key, shape, dtype):
    """A scratch buffer kept by this thread and reused by every later call (a steady-state
    call allocates nothing); block-sized, so at most a few hundred KiB per thread."""
    cache = getattr(_SCRATCH, "buffers", None)
    if cache is None:
        cache = _SCRATCH.buffers = {}
    buf = cache.get(key)
    if buf is None or buf.shape != tuple(shape) or buf.dtype != dtype:
        buf = cache[key] = np.empty(shape, dtype)
    return buf


def _run_blocked(prog, inputs, outs, sig, block_bytes, exact=True):
    """Row blocks of the results `outs` (all of one shape): every equation for one block into
    scratch (each result into its own block), then the next block; where some equations are
    not lowered, by runs of compiled ones between NumPy's kernels for those
    (kiln/ops/fused_segments.py; NumPy's bits in exact mode: NumPy's SIMD libm beats a scalar
    one on large arrays; outside it, kiln's vectorized kernels join the runs,
    kiln/ops/vecmath.py), in larger blocks (fewer values live in scratch)."""
    segmented = segmented_block(prog, sig, exact) if _HAVE_NUMBA else None
    if segmented is not None and segmented.whole and segmented(outs, list(inputs), []):
        return outs  # one loop, nothing in scratch: whole arrays (8-op chain: 2 ms less)
    if segmented is not None and block_bytes == BLOCK_BYTES:
        block_bytes = SEGMENT_BLOCK_BYTES
    out = outs[0]
    plan = _block_plan(prog, inputs, out, sig, block_bytes)
    arenas = [_scratch(("buffer", k, n), (n,), np.uint8) for k, n in enumerate(plan.buffers)]
    views = {
        width: [arenas[k][:nbytes].view(dtype).reshape(shape) for k, nbytes, dtype, shape in spec]
        for width, spec in plan.layout.items()
    }
    # One-element inputs spread over a block: NumPy's loops run several times slower with a
    # stride-0 operand for some ops (maximum: 3.4x), and a block-sized copy costs nothing.
    values = list(inputs)
    filled = []
    for j, k in enumerate(plan.spread):
        buf = _scratch(("spread", j), plan.block_shape, inputs[k].dtype)
        buf.fill(inputs[k].reshape(()))
        filled.append(buf)
    spread = {width: list(zip(plan.spread, (v[:width] for v in filled))) for width in views}
    one = {k: np.asarray(inputs[k]) for k in plan.spread}  # a fed NumPy scalar: a 0-d array
    axis, step, size = plan.axis, plan.step, out.shape[plan.axis]
    block = prog.code(np, sig, exact)[1]
    for idx in itertools.product(*map(range, out.shape[:axis])):
        for start in range(0, size, step):
            sl, width = slice(start, start + step), min(step, size - start)
            for k, ix in plan.sliced:
                values[k] = inputs[k][ix(idx, sl)]
            blocks = values[:]  # one-element inputs as they are: loops read them once
            for k, v in spread[width]:
                blocks[k], values[k] = one[k], v
            dests = [o[(*idx, sl)] for o in outs]
            if segmented is None or not segmented(dests, blocks, views[width]):
                block(*dests, *values, *views[width])
    return outs


@dataclass
class BlockPlan:
    """How `_run_blocked` cuts `out` for one set of shapes: the blocked axis and step; the
    inputs cut per block (with their indexers), and those spread over a block; the scratch
    buffers' sizes, and per block width each equation's view (buffer, bytes, dtype, shape)."""

    axis: int
    step: int
    block_shape: tuple
    sliced: list
    spread: list
    buffers: list = field(default_factory=list)
    layout: dict = field(default_factory=dict)


def _block_plan(prog, inputs, out, sig, block_bytes) -> BlockPlan:
    key = (block_bytes, out.shape, *[a.shape for a in inputs])
    plan = sig.plans.get(key)
    if plan is not None:
        return plan
    axis, step = _block_axis(out.shape, max(block_bytes // sig.itemsize, 1))
    spread = [k for k, a in enumerate(inputs) if a.size == 1]
    index = [_indexer(a.shape, out.ndim, axis) for a in inputs]
    sliced = [(k, ix) for k, ix in enumerate(index) if ix and k not in spread]
    plan = BlockPlan(axis, step, (step, *out.shape[axis + 1 :]), sliced, spread)
    owner, lead, rest = None, (0,) * axis, out.shape[axis] % step
    for width in (step, rest) if rest else (step,):  # full blocks, then the rest
        blocks = [a.shape for a in inputs]
        for k, ix in sliced:
            blocks[k] = inputs[k][ix(lead, slice(0, width))].shape
        for k in spread:
            blocks[k] = (width, *plan.block_shape[1:])
        shapes = prog.run_rules(blocks, "shape_rule", ShapeError)
        if owner is None:
            owner, plan.buffers = _allocate(prog, shapes, sig.dtypes)
        eqs = [(shapes[prog.n_in + j], sig.dtypes[prog.n_in + j]) for j in prog.scratch]
        plan.layout[width] = [(k, math.prod(s) * d.itemsize, d, s) for k, (s, d) in zip(owner, eqs)]
    if len(sig.plans) >= 16:
        sig.plans.clear()
    sig.plans[key] = plan
    return plan


def _allocate(prog, shapes, dtypes) -> tuple[list, list]:
    """(buffer of each equation that is not a result, bytes of each buffer): values that are
    never live at once share a buffer (a linear-scan register allocation over the
    equations). A value whose last use is a one-ufunc equation of its shape and dtype lends
    that equation its buffer (in place). Results are written into their own blocks."""
    n_in = prog.n_in
    owner: dict[int, int] = {}
    free: list[int] = []
    buffers: list[int] = []
    for j in range(len(prog.ops)):
        dying = [s for s in prog.frees[j] if s >= n_in and s - n_in not in prog.out_of]
        mine: set = set()
        if j not in prog.out_of:
            key = (tuple(shapes[n_in + j]), dtypes[n_in + j])
            same = [s for s in dying if (tuple(shapes[s]), dtypes[s]) == key]
            if prog.plain[j] and same:
                owner[n_in + j] = owner[same[0]]
            else:
                owner[n_in + j] = free.pop() if free else len(buffers)
                if owner[n_in + j] == len(buffers):
                    buffers.append(1)
            nbytes = math.prod(key[0]) * key[1].itemsize
            buffers[owner[n_in + j]] = max(buffers[owner[n_in + j]], nbytes)
            mine = {owner[n_in + j]}
        free.extend({owner[s] for s in dying} - mine)
    return [owner[n_in + j] for j in prog.scratch], buffers


# -- numba loops for small outputs ---------------------------------------------------------


def _numba_loop(prog, sig, inputs, outs, exact=True):
    """The signature's loop (`exact`: in `sig.loop`, else in `sig.fast`) for these arrays and
    their pattern (`loop_pattern`: which inputs are one element, which take a result's
    buffer), compiled for their types, or None. The first is built on the program's
    NUMBA_AFTER_CALLS-th call; a pattern's loop is compiled again for a new pattern of array
    types (ndim, read-only flags: at most 4 a pattern), for arrays it can take: C-contiguous,
    inputs of the results' size or of one element."""
    size = outs[0].size
    if not all(type(o) is np.ndarray and o.flags.c_contiguous for o in outs):
        return None
    for a in inputs:
        if type(a) is not np.ndarray or not a.flags.c_contiguous or a.size not in (1, size):
            return None
    attr = "loop" if exact or prog.all_exact else "fast"
    if getattr(sig, attr) is False:
        prog.calls += 1
        if prog.calls < NUMBA_AFTER_CALLS:
            return None
    pattern = loop_pattern(sig, outs, inputs)
    arrays = (*outs, *inputs)
    with _LOCK:
        loops = getattr(sig, attr)
        if loops is False:  # no loop at all where an op or dtype is not lowered
            loops = {} if loop_source(prog, sig.dtypes, exact) is not None else None
            setattr(sig, attr, loops)
        if loops is None:
            return None
        loop = loops.get(pattern, False)
        if loop is False:
            loop = loops[pattern] = numba_loop(prog, sig.dtypes, arrays, exact, pattern)
        elif loop is not None and not specialize(loop, arrays, limit=4):
            return None
    return loop


def _built_loop(prog, sig, inputs, outs, exact):
    """The loop `_numba_loop` built for these arrays' pattern, or None (nothing is built)."""
    loops = sig.loop if exact or prog.all_exact else sig.fast
    if not loops:
        return None
    return loops.get(loop_pattern(sig, outs, inputs)) or None


fused = defop(
    "fused",
    _shape_rule,
    _dtype_rule,
    _fused,
    vjp=None,
    tags={"elementwise", "fused", "nondiff"},
    prepare=_prepare,
)
