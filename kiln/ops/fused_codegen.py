"""Code generated from a `fused` program: straight-line Python over whole arrays or one block
(one kernel call per equation, nothing else), and a numba loop for small outputs, where one
compiled loop beats a NumPy call per equation (numba is optional: `pip install kiln[fast]`).

The loop's text comes only from the ops' declared scalar forms (`OpDef.lowering`, see
kiln/ops/lowering.py), dtype names and generated names (`a0`, `e0`, `f0`…); kernels and attr
values are bound as values, never written into it, so a hostile program cannot run code.
"""

from __future__ import annotations

import numpy as np

from ..debug import log
from . import vecmath
from .lowering import NB_TYPES


def python_code(prog, fns, into):
    """(whole, block) for `prog` with kernels `fns` (one per equation), both taking one array
    per result first (`o0, o1…`, None: allocated by `whole`), then the inputs:
    `whole(*outs, *inputs)` runs each equation on whole arrays, dropping each value after its
    last use, and returns the result (a tuple of them where there are several);
    `block(*outs, *inputs, *scratch)` writes each equation that is not a result into its
    scratch buffer (in `prog.scratch` order), each result into its out. `into(fn, args, out)`
    runs a result's kernel that is not one ufunc."""
    n_in, n_eq = prog.n_in, len(fns)
    names = [f"a{k}" for k in range(n_in)] + [f"e{j}" for j in range(n_eq)]
    inputs = "".join(f", {n}" for n in names[:n_in])
    outs = ", ".join(f"o{k}" for k in range(len(prog.outputs)))
    scratch = "".join(f", e{j}" for j in prog.scratch)
    whole = [f"    def whole({outs}{inputs}):"]
    block = [f"    def block({outs}{inputs}{scratch}):"]
    results = {n_in + j for j in prog.outputs}
    for j in range(n_eq):
        args = ", ".join(names[s] for s in prog.slots[j])
        k = prog.out_of.get(j)
        if k is None:
            whole.append(f"        e{j} = f{j}({args})")
            block.append(f"        f{j}({args}, out=e{j})")
        else:
            call = f"f{j}({args}, out=o{k})" if prog.plain[j] else f"into(f{j}, ({args},), o{k})"
            whole.append(f"        e{j} = {call}")
            block.append(f"        e{j} = {call}")
        dying = [names[s] for s in prog.frees[j] if s >= n_in and s not in results]
        whole += [f"        del {', '.join(dying)}"] if dying else []
    tail = ", ".join(f"e{j}" for j in prog.outputs)
    tail = f"({tail},)" if prog.multi else tail
    params = "".join(f", f{j}" for j in range(n_eq))
    lines = [f"def make(into{params}):", *whole, f"        return {tail}"]
    lines += [*block, f"        return {tail}", "    return whole, block"]
    namespace: dict = {}
    exec(compile("\n".join(lines) + "\n", "<kiln fused>", "exec"), namespace)
    return namespace["make"](into, *fns)


# -- numba -------------------------------------------------------------------------------------

_F32, _F64 = np.dtype("float32"), np.dtype("float64")
# The libm functions a compiled loop may call where it need not give NumPy's bits, by ufunc
# and loop dtype, with the dtype it computes in: numba's libm and NumPy's SIMD loops differ
# by at most 2 ulp on these, measured over 2**20 inputs each across the function's domain
# (tests/test_fused_ulp.py measures them again). Some float32 functions are closer to
# NumPy's through float64 (rounded once to float32). Left out, measured 3 ulp apart: float32
# tan, arcsin, exp2, log10, arctan2 and float64 tanh; their programs stay on NumPy. Float32
# exp, log and tanh run kiln's own kernels instead (kiln/ops/vecmath.py), as every path does.
LIBM = {
    **{
        (name, _F32): _F32
        for name in ("sin", "cos", "arccos", "arctan", "cosh", "log2", "log1p", "power")
    },  # fmt: skip
    **{(name, _F32): _F64 for name in ("sinh", "arcsinh", "arccosh", "arctanh", "expm1")},
    **{
        (name, _F64): _F64
        for name in (
            "sin",
            "cos",
            "tan",
            "arcsin",
            "arccos",
            "arctan",
            "sinh",
            "cosh",
            "arcsinh",
            "arccosh",
            "arctanh",
            "exp",
            "exp2",
            "expm1",
            "log",
            "log2",
            "log10",
            "log1p",
            "arctan2",
            "power",
        )
    },  # fmt: skip
}
ULP_BOUND = 2  # what LIBM's entries are measured (and tested) to stay within

_LOOPS: dict = {}  # (source text, exact) -> numba dispatcher: equal programs share one
# What bounds a loop's compile time, which grows faster than its length (LLVM on one long
# loop body): programs of more equations run on NumPy (measured cold, kiln's float32 tanh
# every other op: 400 equations took 2.4 s to compile, 1,000 took 9.8 s, 2,000 ran out of
# memory).
MAX_LOOP_EQUATIONS = 400


def numba_loop(prog, dtypes, arrays, exact=True, pattern=None):
    """A numba function `loop(*outs, *inputs) -> bool` (one array per result) compiled for
    the types of `arrays` only (other types raise TypeError, as a non-contiguous array's
    does), reading its inputs as `pattern` says (`loop_pattern`; None: all of the results'
    size); it returns False, doing nothing, where the arrays do not fit the pattern. None
    without numba or where the program has an op or dtype that is not lowered. With `exact`
    False, libm functions (`LIBM`) are lowered too: within `ULP_BOUND` of NumPy's.

    The loop's text is written to kiln's cache directory (kiln/disk_cache.py) and
    compiled by numba with `cache=True`: another process loads the machine code from there
    instead of compiling again."""
    try:
        import numba
    except ImportError:
        return None
    text = loop_source(prog, dtypes, exact, pattern)
    if text is None:
        return None
    loop = _LOOPS.get(text)
    if loop is None:
        loop = _jit(numba, text)
        if len(_LOOPS) > 1024:  # bounded: each holds machine code
            _LOOPS.clear()
        _LOOPS[text] = loop
    if not specialize(loop, arrays):
        return None
    return loop


def _jit(numba, text, kind="loop"):
    """The numba dispatcher of a loop's text: from a module in the disk cache's folder `kind`
    (numba then caches its machine code beside it), or from the text in memory where there is
    none."""
    from ..disk_cache import load_module

    module = load_module(kind, text, {"np": np, **vecmath.namespace()})
    if module is not None:
        fn, cache = module["kernel"], True
    else:
        namespace = {"np": np, **vecmath.namespace()}
        exec(compile(text, "<kiln fused loop>", "exec"), namespace)
        fn, cache = namespace["kernel"], False
    return numba.njit(error_model="numpy", nogil=True, cache=cache)(fn)


def specialize(loop, arrays, limit=None) -> bool:
    """Compiles `loop` for the types of `arrays` too (nothing when it has them); False where
    numba refuses them, or where it has `limit` compiled signatures already."""
    import numba

    types = tuple(numba.typeof(a) for a in arrays)
    if types in loop.overloads:
        return True
    if limit is not None and len(loop.signatures) >= limit:
        return False
    loop.disable_compile(False)
    try:
        loop.compile(types)
        return True
    except Exception as e:  # a typing gap in numba: NumPy runs these arrays instead
        log(1, f"fused loop: numba refused {types}: {type(e).__name__}: {e}")
        return False
    finally:
        if loop.signatures:
            loop.disable_compile()


# How a loop reads each input (`loop_pattern`): every element (FULL), one element read once
# before the loop (ONE: a scalar, with the equations that need only such values hoisted out
# of the loop), or j >= 0: the memory of result j, read from that result's array, so that
# LLVM sees one pointer where a result takes an input's buffer (an update in place) and
# vectorizes without a runtime overlap check that such a pair always fails.
FULL, ONE = -1, -2


def loop_pattern(sig, outs, inputs) -> tuple:
    """The pattern (FULL, ONE or a result's number per input) of a loop for these arrays:
    a one-element input of a larger result is ONE; an input that is one of `outs` (the same
    array object) of that result's dtype is that result; any other is FULL. The loop checks
    its pattern on every call (sizes, and an aliased input's data pointer) and returns False
    where the arrays do not fit it."""
    n = outs[0].size
    pattern = []
    for k, a in enumerate(inputs):
        kind = FULL
        if a.size == 1 and n != 1:
            kind = ONE
        else:
            for j, o in enumerate(outs):
                if a is o and sig.dtypes[k] == sig.out_dtypes[j]:
                    kind = j
                    break
        pattern.append(kind)
    return tuple(pattern)


def loop_source(prog, dtypes, exact=True, pattern=None):
    """The source text of the loop for these input and equation dtypes, reading its inputs
    as `pattern` says (`loop_pattern`; None: every input FULL), or None."""
    if any(d not in NB_TYPES for d in dtypes) or len(prog.ops) > MAX_LOOP_EQUATIONS:
        return None
    n_in = prog.n_in
    pattern = (FULL,) * n_in if pattern is None else tuple(pattern)
    names = [f"v{k}" for k in range(n_in)] + [f"e{j}" for j in range(len(prog.ops))]
    # a slot is invariant where it is a ONE input or an equation of invariant arguments only
    invariant = [kind == ONE for kind in pattern]
    hoisted, body = [], []
    for j, (op, slots, attrs) in enumerate(zip(prog.ops, prog.slots, prog.attrs)):
        args = [names[s] for s in slots]
        arg_dtypes = [dtypes[s] for s in slots]
        expr = _expr(op.lowering, args, arg_dtypes, dtypes[n_in + j], attrs, exact)
        if expr is None:
            return None
        invariant.append(all(invariant[s] for s in slots))
        (hoisted if invariant[-1] else body).append(f"e{j} = {expr}")
    params = "".join(f", a{k}" for k in range(n_in))
    if not prog.multi:  # one result: `out`, flat as `o`
        out_names, flat = ["out"], ["o"]
        lines = [f"def kernel(out{params}):", "    o = out.reshape(-1)", "    n = o.size"]
    else:  # results `out0, out1…`, flat as `o0, o1…`, all of one size
        out_names = [f"out{k}" for k in range(len(prog.outputs))]
        flat = [f"o{k}" for k in range(len(prog.outputs))]
        lines = [f"def kernel({', '.join(out_names)}{params}):"]
        lines += [f"    o{k} = out{k}.reshape(-1)" for k in range(len(prog.outputs))]
        lines.append("    n = o0.size")
        for k in range(1, len(prog.outputs)):
            lines += [f"    if o{k}.size != n:", "        return False"]
    # every equation of element i runs before any result of element i is stored: a result
    # may take an input's buffer (of its size, read at i only)
    stores = [f"        {flat[k]}[i] = e{j}" for k, j in enumerate(prog.outputs)]
    reads = []
    for k, kind in enumerate(pattern):
        if kind == ONE:
            lines += [f"    if a{k}.size != 1:", "        return False"]
            lines.append(f"    v{k} = a{k}.reshape(-1)[0]")
        elif kind == FULL:
            lines += [
                f"    f{k} = a{k}.reshape(-1)",
                f"    if f{k}.size != n:",
                "        return False",
            ]
            reads.append(f"        v{k} = f{k}[i]")
        else:
            same = f"a{k}.size != n or a{k}.ctypes.data != {out_names[kind]}.ctypes.data"
            lines += [f"    if {same}:", "        return False"]
            reads.append(f"        v{k} = {flat[kind]}[i]")
    lines += [f"    {line}" for line in hoisted]
    lines.append("    for i in range(n):")
    lines += [*reads, *(f"        {line}" for line in body), *stores, "    return True"]
    return "\n".join(lines) + "\n"


# Float maximum and minimum as NumPy's loops compute them here (x86): x where x wins or is NaN,
# else y, so y wins a tie (max(-0.0, 0.0) is 0.0) and the first NaN propagates. numba's
# np.maximum gives x on a tie (-0.0 there, where NumPy's unfused kernel gives 0.0) and costs
# three compares and three selects where this is one max and a NaN fix (8-op chain of
# bench/rows/row_fusion.py: 11.5 ms, was 12.1).
_SELECT = {"maximum": ">", "minimum": "<"}


def _expr(lowering, args, arg_dtypes, dtype, attrs, exact=True):
    """One equation as a scalar expression that rounds as NumPy's kernel does (arguments cast
    to the ufunc loop's dtypes, the result to its dtype), or None. Exact ops are always
    lowered (`Lowering.exact`); with `exact` False, the libm functions of `LIBM` too, which
    differ from NumPy's by at most `ULP_BOUND` ulp, and kiln's own kernels (`Lowering.vecmath`,
    kiln/ops/vecmath.py) in place of those, as every other path runs them in that mode; any
    other op keeps its program on NumPy."""
    if lowering is None:
        return None
    if lowering.vecmath and len(args) == 1 and vecmath.covers(lowering.vecmath, arg_dtypes[0]):
        return None if exact else vecmath.expr(lowering.vecmath, args[0])
    if lowering.ufunc is None:
        ok = lowering.exact and lowering.numba
        return lowering.numba(args, arg_dtypes, dtype, attrs) if ok else None
    ufunc = getattr(np, lowering.ufunc)
    try:
        loop = ufunc.resolve_dtypes((*arg_dtypes, None))
    except TypeError:
        return None
    if any(d not in NB_TYPES for d in loop):
        return None
    if lowering.exact and ufunc.__name__ in _SELECT and loop[0].kind == "f":
        x, y = (f"{NB_TYPES[d]}({a})" for d, a in zip(loop, args))
        test = f"({x} {_SELECT[ufunc.__name__]} {y}) | ({x} != {x})"
        return f"{NB_TYPES[dtype]}({x} if {test} else {y})"
    if lowering.exact:
        cast = ", ".join(f"{NB_TYPES[d]}({a})" for d, a in zip(loop, args))
    else:
        compute = None if exact or len(set(loop)) != 1 else LIBM.get((ufunc.__name__, loop[0]))
        if compute is None:
            return None
        cast = ", ".join(f"{NB_TYPES[compute]}({NB_TYPES[d]}({a}))" for d, a in zip(loop, args))
    return f"{NB_TYPES[dtype]}(np.{ufunc.__name__}({cast}))"
