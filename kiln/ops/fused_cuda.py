"""One CUDA kernel per `fused` program: a `cupy.ElementwiseKernel` generated from the program's
equations, cached by its text (CuPy compiles it once per device and caches the binary on disk).

Each equation becomes one C expression that rounds as NumPy's kernel does wherever CUDA
allows: arguments cast to the dtypes of NumPy's ufunc loop, IEEE arithmetic through the
`__f*_rn` intrinsics (never contracted into fused multiply-adds, which round once instead of
twice), NaN handling as NumPy's (maximum, relu, clip, sign, logical ops); transcendentals come
from CUDA's libm, within a few ulps of the host's. A program with an op or dtype not lowered
here (float16, integer powers, floordiv, mod...) runs as whole-array CuPy calls instead.

The text comes only from the ops' declared scalar forms (`OpDef.lowering`, see
kiln/ops/lowering.py), dtype names and generated names (`a0`, `e0`, `c0`); attr values are
scalar arguments of the kernel, never written into it.
"""

from __future__ import annotations

import hashlib
import threading
import weakref
from dataclasses import dataclass

import numpy as np

from ..debug import debug_level, log
from .lowering import CTYPES, c_cast

_F32 = np.dtype("float32")

# log(exp(x) + exp(y)) as NumPy's npy_logaddexp computes it (sigmoid and softplus use it).
_LOGADDEXP = """
__device__ {t} kiln_logaddexp{s}({t} x, {t} y) {{
    if (x == y) return x + ({t})0.693147180559945309417232121458176568;  // inf + inf, too
    {t} d = x - y;
    if (d > 0) return x + log1p{s}(exp{s}(-d));
    if (d <= 0) return y + log1p{s}(exp{s}(d));
    return d;  // NaN
}}
"""


@dataclass(frozen=True)
class KernelSource:
    """What `cupy.ElementwiseKernel` is made of, and the scalar arguments (attr values) that
    follow the inputs in every call."""

    in_params: str
    out_params: str
    operation: str
    preamble: str
    consts: tuple

    @property
    def text(self) -> str:
        return "\n".join((self.in_params, self.out_params, self.preamble, self.operation))

    @property
    def name(self) -> str:
        return "kiln_fused_" + hashlib.sha1(self.text.encode()).hexdigest()[:16]


class _Kernel:
    """Builds one program's kernel: equations as C (each op's `lowering.cuda`), helper
    functions, scalar arguments."""

    def __init__(self):
        self.consts: list[float] = []
        self.helpers: dict[str, str] = {}

    def const(self, value) -> str:
        self.consts.append(float(value))
        return f"c{len(self.consts) - 1}"

    def logaddexp(self, t) -> str:
        suffix = "f" if t == _F32 else ""
        self.helpers.setdefault(t.name, _LOGADDEXP.format(t=CTYPES[t], s=suffix))
        return f"kiln_logaddexp{suffix}"

    def equation(self, lowering, args, arg_dtypes, out, attrs) -> str | None:
        """One equation as a C expression of dtype `out`, or None where it is not lowered."""
        if lowering is None or lowering.cuda is None:
            return None
        if lowering.ufunc is None:
            return lowering.cuda(self, args, arg_dtypes, out, attrs) if out in CTYPES else None
        try:
            loop = getattr(np, lowering.ufunc).resolve_dtypes((*arg_dtypes, None))
        except TypeError:
            return None
        if any(d not in CTYPES for d in loop) or len(set(loop[:-1])) > 1:
            return None
        t = loop[0]
        expr = lowering.cuda(t, *(c_cast(a, d, t) for a, d in zip(args, arg_dtypes)))
        return None if expr is None else c_cast(expr, loop[-1], out)


def kernel_source(prog, in_dtypes: tuple) -> KernelSource | None:
    """The kernel of a checked fused `Program` for these input dtypes, or None when an
    equation or dtype is not lowered (the program then runs as whole-array calls)."""
    dtypes = prog.signature(tuple(in_dtypes)).dtypes
    if any(d not in CTYPES for d in dtypes):
        return None
    n_in = prog.n_in
    names = [f"a{k}" for k in range(n_in)] + [f"e{j}" for j in range(len(prog.ops))]
    kernel = _Kernel()
    lines = []
    for j, (op, slots, attrs) in enumerate(zip(prog.ops, prog.slots, prog.attrs)):
        args = [names[s] for s in slots]
        out = dtypes[n_in + j]
        expr = kernel.equation(op.lowering, args, [dtypes[s] for s in slots], out, attrs)
        if expr is None:
            return None
        lines.append(f"const {CTYPES[out]} e{j} = {expr};")
    if prog.multi:  # one kernel writes every result: out0, out1...
        lines += [f"out{k} = e{j};" for k, j in enumerate(prog.outputs)]
        outs = ", ".join(f"{dtypes[n_in + j].name} out{k}" for k, j in enumerate(prog.outputs))
    else:
        lines.append(f"out = e{len(prog.ops) - 1};")
        outs = f"{dtypes[-1].name} out"
    params = [f"{dtypes[k].name} a{k}" for k in range(n_in)]
    params += [f"float64 c{k}" for k in range(len(kernel.consts))]
    return KernelSource(
        ", ".join(params), outs, "\n".join(lines),
        "".join(kernel.helpers[k] for k in sorted(kernel.helpers)), tuple(kernel.consts),
    )  # fmt: skip


_BY_TEXT: dict = {}  # kernel text -> ElementwiseKernel: equal programs share one
_BY_PROGRAM: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # Program -> {dtypes: }
_LOCK = threading.Lock()


def _kernel(prog, xp, dtypes):
    """(kernel, scalar arguments) for the program and input dtypes, or None: made once."""
    with _LOCK:
        per_program = _BY_PROGRAM.setdefault(prog, {})
        if dtypes in per_program:
            return per_program[dtypes]
        source = kernel_source(prog, dtypes)
        if source is None:
            ops = ", ".join(op.name for op in prog.ops)
            log(1, f"fused program ({ops}) on {[d.name for d in dtypes]}: not lowered to one "
                   "CUDA kernel, runs as whole-array CuPy calls")  # fmt: skip
            per_program[dtypes] = None
            return None
        kernel = _BY_TEXT.get(source.text)
        if kernel is None:
            kernel = xp.ElementwiseKernel(
                source.in_params, source.out_params, source.operation, name=source.name,
                preamble=source.preamble,
            )  # fmt: skip
            _BY_TEXT[source.text] = kernel
            log(1, f"fused kernel {source.name}: {len(prog.ops)} equations")
            if debug_level() >= 2:
                log(2, f"fused kernel {source.name}:\n{source.text}")
        per_program[dtypes] = (kernel, source.consts)
        return per_program[dtypes]


def run_fused(prog, xp, inputs, out):
    """Runs a fused program on CuPy arrays: one generated kernel launch (broadcasting and
    strided inputs included), or whole-array calls where the program is not lowered. A
    program with several results takes and gives a tuple of arrays (one launch writes all)."""
    dtypes = tuple(a.dtype for a in inputs)
    found = _BY_PROGRAM.get(prog)
    entry = found.get(dtypes, False) if found is not None else False
    if entry is False:
        entry = _kernel(prog, xp, dtypes)
    if prog.multi:
        return _run_multi(prog, xp, inputs, out, entry)
    if entry is None:
        return prog.code(xp)[0](out, *inputs)
    kernel, consts = entry
    if out is None:
        return kernel(*inputs, *consts)
    kernel(*inputs, *consts, out)
    return out


def _run_multi(prog, xp, inputs, out, entry) -> tuple:
    outs = [None] * len(prog.outputs) if out is None else list(out)
    if entry is None:
        return prog.code(xp)[0](*outs, *inputs)
    kernel, consts = entry
    if any(o is None for o in outs):  # the kernel takes all its outputs or none
        shape = np.broadcast_shapes(*(a.shape for a in inputs))
        dtypes = prog.signature(tuple(a.dtype for a in inputs)).out_dtypes
        outs = [xp.empty(shape, d) if o is None else o for o, d in zip(outs, dtypes)]
    kernel(*inputs, *consts, *outs)
    return tuple(outs)
