"""Code generated from a `fused` program: straight-line Python over whole arrays or one block
(one kernel call per equation, nothing else), and a numba loop for small outputs, where one
compiled loop beats a NumPy call per equation (numba is optional: `pip install kiln[fast]`).

The text comes only from fixed tables and generated names (`a0`, `e0`, `f0`…); kernels and
attr values are bound as values, never written into it, so a hostile program cannot run code.
"""

from __future__ import annotations

import math

import numpy as np

UFUNCS = {
    "neg": "negative", "abs": "absolute", "exp": "exp", "log": "log", "log1p": "log1p",
    "expm1": "expm1", "sqrt": "sqrt", "square": "square", "sin": "sin", "cos": "cos",
    "tanh": "tanh", "sign": "sign", "floor": "floor", "ceil": "ceil",
    "logical_not": "logical_not", "isnan": "isnan", "isfinite": "isfinite", "add": "add",
    "sub": "subtract", "mul": "multiply", "div": "true_divide", "pow": "power",
    "floordiv": "floor_divide", "mod": "remainder", "maximum": "maximum", "minimum": "minimum",
    "equal": "equal", "not_equal": "not_equal", "less": "less", "less_equal": "less_equal",
    "greater": "greater", "greater_equal": "greater_equal", "logical_and": "logical_and",
    "logical_or": "logical_or",
}  # fmt: skip
"""Ops whose kernel is exactly one NumPy/CuPy ufunc call: called bare, and lowered to numba."""


def python_code(prog, fns, into):
    """(whole, block) for `prog` with kernels `fns` (one per equation):
    `whole(out, *inputs)` runs each equation on whole arrays, dropping each value after its
    last use; `block(out, *inputs, *scratch)` writes equation j into scratch j, the last
    equation into `out`. `into(fn, args, out)` runs a last kernel that is not one ufunc."""
    n_in, last = prog.n_in, len(fns) - 1
    names = [f"a{k}" for k in range(n_in)] + [f"e{j}" for j in range(last + 1)]
    inputs = "".join(f", {n}" for n in names[:n_in])
    scratch = "".join(f", e{j}" for j in range(last))
    whole = [f"    def whole(out{inputs}):"]
    block = [f"    def block(out{inputs}{scratch}):"]
    for j in range(last):
        args = ", ".join(names[s] for s in prog.slots[j])
        whole.append(f"        e{j} = f{j}({args})")
        dying = [names[s] for s in prog.frees[j] if s >= n_in]
        whole += [f"        del {', '.join(dying)}"] if dying else []
        block.append(f"        f{j}({args}, out=e{j})")
    args = ", ".join(names[s] for s in prog.slots[last])
    tail = f"f{last}({args}, out=out)" if prog.plain[last] else f"into(f{last}, ({args},), out)"
    params = "".join(f", f{j}" for j in range(last + 1))
    lines = [f"def make(into{params}):", *whole, f"        return {tail}"]
    lines += [*block, f"        return {tail}", "    return whole, block"]
    namespace: dict = {}
    exec(compile("\n".join(lines) + "\n", "<kiln fused>", "exec"), namespace)
    return namespace["make"](into, *fns)


# -- numba -------------------------------------------------------------------------------------

_TYPES = {
    np.dtype(name): f"np.{name}"
    for name in (
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "float32",
        "float64",
    )  # fmt: skip
}
_TYPES[np.dtype(bool)] = "np.bool_"
# Integer loops where NumPy raises or warns (negative powers, division by zero) and a compiled
# loop would not: those stay on NumPy.
_INT_UNSAFE = {"pow", "floordiv", "mod"}


def numba_loop(prog, dtypes, arrays):
    """A numba function `loop(out, *inputs) -> bool` compiled for the types of `arrays` only
    (other types raise TypeError, as a non-contiguous array's does); it returns False, doing
    nothing, where an input is partly broadcast (only one-element inputs broadcast). None
    without numba or where the program has an op or dtype that is not lowered."""
    try:
        import numba
    except ImportError:
        return None
    generated = loop_source(prog, dtypes)
    if generated is None:
        return None
    text, env = generated
    namespace = {"np": np, "math": math, **env}
    exec(compile(text, "<kiln fused loop>", "exec"), namespace)
    loop = numba.njit(error_model="numpy", nogil=True)(namespace["kernel"])
    try:
        loop.compile(tuple(numba.typeof(a) for a in arrays))
    except Exception:  # a typing gap in numba: NumPy runs this program instead
        return None
    loop.disable_compile()
    return loop


def specialize(loop, arrays) -> bool:
    """Compiles `loop` for the types of `arrays` too; False where numba refuses them."""
    import numba

    loop.disable_compile(False)
    try:
        loop.compile(tuple(numba.typeof(a) for a in arrays))
        return True
    except Exception:  # a typing gap in numba: NumPy runs these arrays instead
        return False
    finally:
        loop.disable_compile()


def loop_source(prog, dtypes):
    """(source text, globals) of the loop for these input and equation dtypes, or None."""
    if any(d not in _TYPES for d in dtypes):
        return None
    n_in = prog.n_in
    names = [f"v{k}" for k in range(n_in)] + [f"e{j}" for j in range(len(prog.ops))]
    env: dict = {}
    body = []
    for j, (op, slots, attrs) in enumerate(zip(prog.ops, prog.slots, prog.attrs)):
        args = [names[s] for s in slots]
        expr = _expr(op.name, args, [dtypes[s] for s in slots], dtypes[n_in + j], attrs, env)
        if expr is None:
            return None
        body.append(f"        e{j} = {expr}")
    params = "".join(f", a{k}" for k in range(n_in))
    lines = [f"def kernel(out{params}):", "    o = out.reshape(-1)", "    n = o.size"]
    for k in range(n_in):
        lines += [f"    f{k} = a{k}.reshape(-1)", f"    s{k} = 1 if f{k}.size == n else 0"]
        lines += [f"    if f{k}.size != n and f{k}.size != 1:", "        return False"]
    lines.append("    for i in range(n):")
    lines += [f"        v{k} = f{k}[i * s{k}]" for k in range(n_in)]
    lines += [*body, f"        o[i] = e{len(prog.ops) - 1}", "    return True"]
    return "\n".join(lines) + "\n", env


# Ops whose numba loop gives bit-for-bit NumPy's results (IEEE-exact arithmetic, comparisons,
# selection). Transcendentals (exp, tanh, log...) come from another libm in numba and can
# differ by an ulp: a program with one runs on NumPy, so a compiled function gives the same
# bits on every call, and the same as eager mode, which shares NumPy's kernels.
EXACT = {
    "add", "sub", "mul", "div", "neg", "abs", "square", "sqrt", "rsqrt", "maximum", "minimum",
    "relu", "clip", "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
    "logical_and", "logical_or", "logical_not", "where", "floor", "ceil", "sign", "cast",
}  # fmt: skip


def _expr(name, args, arg_dtypes, dtype, attrs, env):
    """One equation as a scalar expression that rounds as NumPy's kernel does: arguments cast
    to the ufunc loop's dtypes, the result (and each step of a composite) to its dtype."""
    if name not in EXACT:
        return None
    r = _TYPES[dtype]
    if name in UFUNCS:
        ufunc = getattr(np, UFUNCS[name])
        try:
            loop = ufunc.resolve_dtypes((*arg_dtypes, None))
        except TypeError:
            return None
        if any(d not in _TYPES for d in loop) or (name in _INT_UNSAFE and loop[0].kind != "f"):
            return None
        cast = ", ".join(f"{_TYPES[d]}({a})" for d, a in zip(loop, args))
        return f"{r}(np.{ufunc.__name__}({cast}))"
    x = args[0]
    if name == "rsqrt":
        return f"{r}({r}(1) / {r}(np.sqrt({r}({x}))))"
    if name == "sigmoid":
        return f"{r}(np.exp({r}(-{r}(np.logaddexp({r}(0), {r}(-{r}({x})))))))"
    if name == "softplus":
        c = f"c{len(env)}"
        env[c] = float(attrs["beta"])
        scaled = f"{r}({r}({x}) * {r}({c}))"
        return f"{r}({r}(np.logaddexp({r}(0), {scaled})) / {r}({c}))"
    if name == "erf":
        return f"{r}(math.erf(np.float64({x})))"
    if name == "round":
        return f"{r}(np.round({x}))" if dtype.kind == "f" else f"{r}({x})"
    if name == "cast":
        return f"({x} != 0)" if dtype == np.dtype(bool) else f"{r}({x})"
    if name == "where":
        cond = args[0] if arg_dtypes[0] == np.dtype(bool) else f"({args[0]} != 0)"
        return f"{r}({args[1]}) if {cond} else {r}({args[2]})"
    if name == "relu":  # NumPy's maximum(x, 0): NaN stays, -0.0 becomes 0.0
        v = f"{r}({x})"
        keep = f"{v} > 0 or {v} != {v}" if dtype.kind == "f" else f"{v} > 0"
        return f"({v} if {keep} else {r}(0))"
    if name == "clip":
        return _clip(*(f"{r}({a})" for a in args), dtype.kind == "f")
    return None


def _clip(x, lo, hi, floating):
    """NumPy's clip of scalars of one dtype: NaN anywhere gives NaN; a tie keeps x (NumPy's
    loops keep x or the bound: equal values, which may differ only in the sign of a zero)."""
    if not floating:
        low = f"({lo} if {x} < {lo} else {x})"
        return f"({hi} if {low} > {hi} else {low})"
    low = f"({lo} if {lo} != {lo} or {x} < {lo} else {x})"
    return f"({hi} if {hi} != {hi} or {low} > {hi} else {low})"
