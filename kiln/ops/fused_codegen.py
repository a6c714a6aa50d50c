"""Code generated from a `fused` program: straight-line Python over whole arrays or one block
(one kernel call per equation, nothing else), and a numba loop for small outputs, where one
compiled loop beats a NumPy call per equation (numba is optional: `pip install kiln[fast]`).

The loop's text comes only from the ops' declared scalar forms (`OpDef.lowering`, see
kiln/ops/lowering.py), dtype names and generated names (`a0`, `e0`, `f0`…); kernels and attr
values are bound as values, never written into it, so a hostile program cannot run code.
"""

from __future__ import annotations

import numpy as np

from .lowering import NB_TYPES


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


def numba_loop(prog, dtypes, arrays):
    """A numba function `loop(out, *inputs) -> bool` compiled for the types of `arrays` only
    (other types raise TypeError, as a non-contiguous array's does); it returns False, doing
    nothing, where an input is partly broadcast (only one-element inputs broadcast). None
    without numba or where the program has an op or dtype that is not lowered."""
    try:
        import numba
    except ImportError:
        return None
    text = loop_source(prog, dtypes)
    if text is None:
        return None
    namespace = {"np": np}
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
    """The source text of the loop for these input and equation dtypes, or None."""
    if any(d not in NB_TYPES for d in dtypes):
        return None
    n_in = prog.n_in
    names = [f"v{k}" for k in range(n_in)] + [f"e{j}" for j in range(len(prog.ops))]
    body = []
    for j, (op, slots, attrs) in enumerate(zip(prog.ops, prog.slots, prog.attrs)):
        args = [names[s] for s in slots]
        expr = _expr(op.lowering, args, [dtypes[s] for s in slots], dtypes[n_in + j], attrs)
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
    return "\n".join(lines) + "\n"


def _expr(lowering, args, arg_dtypes, dtype, attrs):
    """One equation as a scalar expression that rounds as NumPy's kernel does (arguments cast
    to the ufunc loop's dtypes, the result to its dtype), or None: only exact ops are lowered
    (`Lowering.exact`), so a program with a transcendental runs on NumPy and a compiled
    function gives the same bits on every call, and the same as eager mode."""
    if lowering is None or not lowering.exact:
        return None
    if lowering.ufunc is None:
        return lowering.numba(args, arg_dtypes, dtype, attrs) if lowering.numba else None
    ufunc = getattr(np, lowering.ufunc)
    try:
        loop = ufunc.resolve_dtypes((*arg_dtypes, None))
    except TypeError:
        return None
    if any(d not in NB_TYPES for d in loop):
        return None
    cast = ", ".join(f"{NB_TYPES[d]}({a})" for d, a in zip(loop, args))
    return f"{NB_TYPES[dtype]}(np.{ufunc.__name__}({cast}))"
