"""One CUDA kernel per `fused` program: a `cupy.ElementwiseKernel` generated from the program's
equations, cached by its text (CuPy compiles it once per device and caches the binary on disk).

Each equation becomes one C expression that rounds as NumPy's kernel does wherever CUDA
allows: arguments cast to the dtypes of NumPy's ufunc loop, IEEE arithmetic through the
`__f*_rn` intrinsics (never contracted into fused multiply-adds, which round once instead of
twice), NaN handling as NumPy's (maximum, relu, clip, sign, logical ops); transcendentals come
from CUDA's libm, within a few ulps of the host's. A program with an op or dtype not lowered
here (float16, integer powers, floordiv, mod...) runs as whole-array CuPy calls instead.

The text comes only from fixed tables, dtype names and generated names (`a0`, `e0`, `c0`);
attr values are scalar arguments of the kernel, never written into it.
"""

from __future__ import annotations

import hashlib
import threading
import weakref
from dataclasses import dataclass

import numpy as np

from ..debug import debug_level, log
from .fused_codegen import UFUNCS

CTYPES = {
    np.dtype(name): ctype
    for name, ctype in (
        ("bool", "bool"),
        ("int8", "signed char"),
        ("uint8", "unsigned char"),
        ("int16", "short"),
        ("uint16", "unsigned short"),
        ("int32", "int"),
        ("uint32", "unsigned int"),
        ("int64", "long long"),
        ("uint64", "unsigned long long"),
        ("float32", "float"),
        ("float64", "double"),
    )  # fmt: skip
}
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


def _cast(expr: str, src, dst) -> str:
    return expr if src == dst else f"(({CTYPES[dst]})({expr}))"


def _fn(name: str, dtype) -> str:
    """A libm function of dtype's precision: `expf` for float32, `exp` for float64."""
    return name + "f" if dtype == _F32 else name


def _rn(op: str, dtype) -> str:
    """The IEEE round-to-nearest intrinsic of `op` for float32 or float64."""
    return f"__{'f' if dtype == _F32 else 'd'}{op}_rn"


def _wrap(op: str, dtype, *xs) -> str:
    """Integer arithmetic that wraps around as NumPy's does (in unsigned, no overflow UB)."""
    u = "unsigned long long" if dtype.itemsize == 8 else "unsigned int"
    operands = [f"({u})({x})" for x in xs]
    body = f"({u})0 {op} {operands[0]}" if len(xs) == 1 else f" {op} ".join(operands)
    return f"(({CTYPES[dtype]})({body}))"


def _float_unary(name):
    return lambda t, x: f"{_fn(name, t)}({x})" if t.kind == "f" else None


def _select(cmp):
    """maximum/minimum: the first argument wins ties; NaN propagates (NumPy's rule)."""

    def rule(t, x, y):
        if t.kind == "f":
            return f"((({x}) {cmp} ({y}) || isnan({x})) ? ({x}) : ({y}))"
        if t.kind == "b":
            return f"({x} {'||' if cmp == '>=' else '&&'} {y})"
        return f"(({x}) {cmp} ({y}) ? ({x}) : ({y}))"

    return rule


def _arith(op, bool_op=None):
    names = {"+": "add", "-": "sub", "*": "mul", "/": "div"}

    def rule(t, x, y):
        if t.kind == "f":
            return f"{_rn(names[op], t)}({x}, {y})"
        if t.kind == "b":
            return f"({x} {bool_op} {y})" if bool_op else None
        return _wrap(op, t, x, y) if op != "/" else None

    return rule


def _sign(t, x):
    c = CTYPES[t]
    if t.kind == "f":  # NumPy: sign(-0.0) is 0.0, sign(nan) is nan
        return f"({x} > 0 ? ({c})1 : ({x} < 0 ? ({c})-1 : ({x} == 0 ? ({c})0 : {x})))"
    if t.kind == "i":
        return f"(({c})(({x} > 0) - ({x} < 0)))"
    return f"(({c})({x} > 0))" if t.kind == "u" else None


def _abs(t, x):
    if t.kind == "f":
        return f"{_fn('fabs', t)}({x})"
    if t.kind == "i":
        return f"(({x}) < 0 ? {_wrap('-', t, x)} : ({x}))"
    return x


def _clip(x, lo, hi, floating):
    """NumPy's clip of values of one dtype: NaN in any argument gives NaN; a tie keeps x (NumPy's
    loops keep x or the bound: equal values, which may differ only in the sign of a zero)."""
    if not floating:
        low = f"(({x} < {lo}) ? {lo} : {x})"
        return f"(({low} > {hi}) ? {hi} : {low})"
    low = f"((isnan({lo}) || {x} < {lo}) ? {lo} : {x})"
    return f"((isnan({hi}) || {low} > {hi}) ? {hi} : {low})"


# Ops whose kernel is one NumPy ufunc: (loop dtype, *arguments cast to it) -> C, or None.
UFUNC_RULES = {
    "add": _arith("+", "||"), "sub": _arith("-"), "mul": _arith("*", "&&"), "div": _arith("/"),
    "maximum": _select(">="), "minimum": _select("<="),
    "equal": lambda t, x, y: f"({x} == {y})", "not_equal": lambda t, x, y: f"({x} != {y})",
    "less": lambda t, x, y: f"({x} < {y})", "less_equal": lambda t, x, y: f"({x} <= {y})",
    "greater": lambda t, x, y: f"({x} > {y})",
    "greater_equal": lambda t, x, y: f"({x} >= {y})",
    "logical_and": lambda t, x, y: f"(({x}) != 0 && ({y}) != 0)",
    "logical_or": lambda t, x, y: f"(({x}) != 0 || ({y}) != 0)",
    "logical_not": lambda t, x: f"(({x}) == 0)",
    "neg": lambda t, x: f"(-{x})" if t.kind == "f" else None if t.kind == "b" else _wrap("-", t, x),
    "abs": _abs, "sign": _sign,
    "square": lambda t, x: _arith("*", "&&")(t, x, x),
    "sqrt": lambda t, x: f"{_rn('sqrt', t)}({x})" if t.kind == "f" else None,
    "exp": _float_unary("exp"), "log": _float_unary("log"), "log1p": _float_unary("log1p"),
    "expm1": _float_unary("expm1"), "sin": _float_unary("sin"), "cos": _float_unary("cos"),
    "tanh": _float_unary("tanh"),
    "floor": lambda t, x: f"{_fn('floor', t)}({x})" if t.kind == "f" else x,
    "ceil": lambda t, x: f"{_fn('ceil', t)}({x})" if t.kind == "f" else x,
    "isnan": lambda t, x: f"isnan({x})" if t.kind == "f" else "false",
    "isfinite": lambda t, x: f"isfinite({x})" if t.kind == "f" else "true",
    "pow": lambda t, x, y: f"{_fn('pow', t)}({x}, {y})" if t.kind == "f" else None,
}  # fmt: skip


class _Lowering:
    """Builds one program's kernel: equations as C, helper functions, scalar arguments."""

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

    def equation(self, name, args, arg_dtypes, out, attrs) -> str | None:
        """One equation as a C expression of dtype `out`, or None where it is not lowered."""
        if name in UFUNC_RULES:
            try:
                loop = getattr(np, UFUNCS[name]).resolve_dtypes((*arg_dtypes, None))
            except TypeError:
                return None
            if any(d not in CTYPES for d in loop) or len(set(loop[:-1])) > 1:
                return None
            t = loop[0]
            expr = UFUNC_RULES[name](t, *(_cast(a, d, t) for a, d in zip(args, arg_dtypes)))
            return None if expr is None else _cast(expr, loop[-1], out)
        if out not in CTYPES:
            return None
        if name == "cast":
            return _cast(args[0], arg_dtypes[0], out)
        if name == "where":
            cond = args[0] if arg_dtypes[0] == np.bool_ else f"(({args[0]}) != 0)"
            a, b = (_cast(x, d, out) for x, d in zip(args[1:], arg_dtypes[1:]))
            return f"({cond} ? {a} : {b})"
        if name == "round":
            x = _cast(args[0], arg_dtypes[0], out)
            return f"{_fn('rint', out)}({x})" if out.kind == "f" else x
        if name == "relu":  # NumPy's maximum(x, 0): NaN propagates, -0.0 gives 0.0
            x = _cast(args[0], arg_dtypes[0], out)
            keep = f"({x} > 0 || isnan({x}))" if out.kind == "f" else f"({x} > 0)"
            return f"({keep} ? {x} : (({CTYPES[out]})0))"
        if name == "clip":
            return _clip(*(_cast(a, d, out) for a, d in zip(args, arg_dtypes)), out.kind == "f")
        if out.kind != "f":
            return None
        x = _cast(args[0], arg_dtypes[0], out)
        c = CTYPES[out]
        if name == "rsqrt":  # NumPy: sqrt, then reciprocal (two roundings)
            return f"{_rn('div', out)}(({c})1, {_rn('sqrt', out)}({x}))"
        if name == "erf":
            return f"{_fn('erf', out)}({x})"
        if name == "sigmoid":  # exp(-logaddexp(0, -x)), as elementwise.py's kernel
            return f"{_fn('exp', out)}(-{self.logaddexp(out)}(({c})0, -{x}))"
        if name == "softplus":  # logaddexp(0, x * beta) / beta, beta rounded to the dtype
            beta = f"(({c}){self.const(attrs['beta'])})"
            scaled = f"{_rn('mul', out)}({x}, {beta})"
            return f"{_rn('div', out)}({self.logaddexp(out)}(({c})0, {scaled}), {beta})"
        return None


def kernel_source(prog, in_dtypes: tuple) -> KernelSource | None:
    """The kernel of a checked fused `Program` for these input dtypes, or None when an
    equation or dtype is not lowered (the program then runs as whole-array calls)."""
    dtypes = prog.signature(tuple(in_dtypes)).dtypes
    if any(d not in CTYPES for d in dtypes):
        return None
    n_in = prog.n_in
    names = [f"a{k}" for k in range(n_in)] + [f"e{j}" for j in range(len(prog.ops))]
    lowering = _Lowering()
    lines = []
    for j, (op, slots, attrs) in enumerate(zip(prog.ops, prog.slots, prog.attrs)):
        args = [names[s] for s in slots]
        out = dtypes[n_in + j]
        expr = lowering.equation(op.name, args, [dtypes[s] for s in slots], out, attrs)
        if expr is None:
            return None
        lines.append(f"const {CTYPES[out]} e{j} = {expr};")
    lines.append(f"out = e{len(prog.ops) - 1};")
    params = [f"{dtypes[k].name} a{k}" for k in range(n_in)]
    params += [f"float64 c{k}" for k in range(len(lowering.consts))]
    return KernelSource(
        ", ".join(params), f"{dtypes[-1].name} out", "\n".join(lines),
        "".join(lowering.helpers[k] for k in sorted(lowering.helpers)), tuple(lowering.consts),
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
    strided inputs included), or whole-array calls where the program is not lowered."""
    dtypes = tuple(a.dtype for a in inputs)
    found = _BY_PROGRAM.get(prog)
    entry = found.get(dtypes, False) if found is not None else False
    if entry is False:
        entry = _kernel(prog, xp, dtypes)
    if entry is None:
        return prog.code(xp)[0](out, *inputs)
    kernel, consts = entry
    if out is None:
        return kernel(*inputs, *consts)
    kernel(*inputs, *consts, out)
    return out
