"""kiln's own float32 `exp` and `tanh`: branch-free kernels that numba compiles and LLVM
vectorizes (AVX2/AVX-512 where the machine has them), used in the default mode (`KILN_EXACT`
unset or 0) by every CPU path that evaluates these ops in a planned program: compiled fused
loops (kiln/ops/fused_codegen.py), fused blocks and segments, and the unfused op's kernel
(`prepare_for`), so that a program gives the same bits however its ops are grouped. Eager
mode keeps NumPy's kernels (within the tolerances of `kn.testing`).

`tanh` computes in float32 arithmetic with fused multiply-adds (a polynomial below 0.55, else
from exp(2|x|), one division): 0.37 ns an element on AVX-512, NumPy's own takes 0.39. `exp`
computes in float64 (range reduction by powers of two, a polynomial) and rounds once to
float32. Measured over every float32 input (bench/vecmath_ulps.py; `ULPS`,
docs/debugging.md), each is within 1 ulp of the correctly rounded value, and within 2 ulp of
NumPy's float32 kernel (exact mode's) but at three inputs of exp, where NumPy's own is 3 ulp
off (so kiln's is 3 from it). Exact mode (`KILN_EXACT=1`) never calls them: programs then
give NumPy's bits. Float32 `log` and `sigmoid` have no kernel here: NumPy's log is up to 4 ulp
from the correctly rounded value (at 4,626 inputs), kiln's NumPy sigmoid up to 10, so no
accurate kernel stays within 2 ulp of them; both run NumPy's kernels in every mode.

Each kernel is written once, as LLVM IR (llvmlite, numba's own dependency), and reaches numba
as an intrinsic of one float32: a loop that calls it gets its instructions in place, so LLVM
vectorizes the loop across them and numba's compiler sees one call. Without numba there are
none (`available()` is False) and every path runs NumPy's kernels.

>>> import numpy as np
>>> x = np.array([0.0, 1.0, -2.5], np.float32)
>>> y = run("exp", x) if available() else np.exp(x)
>>> bool(np.all(np.abs(y - np.exp(x)) <= 2 * np.spacing(np.exp(x))))
True
"""

from __future__ import annotations

import numpy as np

__all__ = ["ULPS", "active", "available", "covers", "prepare_for", "run"]

VERSION = 5  # in every loop text that calls these kernels: a change recompiles the cached ones

_F32 = np.dtype("float32")

# The measured max distance of each kernel's result over every float32 input
# (bench/vecmath_ulps.py), in float32 ulps: (to the correctly rounded value, to NumPy's float32
# kernel on this machine's AVX-512, which exact mode runs). See docs/debugging.md.
ULPS = {
    "exp": (1, 3),
    "tanh": (1, 2),
}
ULP_BOUND = 1  # what kiln documents and tests/test_vecmath.py hold them to: the reference
NUMPY_ULP_BOUND = 2  # the bound to NumPy's kernel (exp: 3 at three inputs, documented)

# float64 constants (exp)
_LOG2E = 1.4426950408889634
_LN2 = 0.6931471805599453
_SHIFT = 6755399441055744.0  # 1.5 * 2**52: x + _SHIFT - _SHIFT rounds x to an integer
_SHIFT_BITS = 0x4338000000000000  # its bits: the integer sits in the low mantissa bits
_E2, _E3, _E4, _E5, _E6, _E7, _E8 = 1 / 2, 1 / 6, 1 / 24, 1 / 120, 1 / 720, 1 / 5040, 1 / 40320
# float32 constants (tanh), kiln's fits (weighted least squares on Chebyshev nodes, iterated
# toward minimax, against mpmath). P: (tanh(x) - x) / x**3 as a polynomial in x**2 on
# [0, 0.55] (tanh's relative error 1.0e-9); Q: (exp(r) - 1 - r) / r**2 on [-ln2/2, ln2/2]
# (exp's relative error 3.1e-9).
_f = np.float32
_P0, _P1, _P2 = _f(-0.33333316445350647), _f(0.13332585990428925), _f(-0.053852278739213943)
_P3, _P4 = _f(0.0210715401917696), _f(-0.006274030078202486)
_Q0, _Q1, _Q2 = _f(0.4999999403953552), _f(0.1666652113199234), _f(0.04166838899254799)
_Q3, _Q4 = _f(0.0083687175065279), _f(0.0013814596459269524)
_LOG2E32, _LN2_32, _SHIFT32 = _f(_LOG2E), _f(_LN2), _f(12582912.0)  # 1.5 * 2**23
_ONE32_BITS = 127 << 23  # float32 1.0
_ONE32, _TWO32 = _f(1.0), _f(2.0)
_SMALL32, _CLAMP32 = _f(0.55), _f(9.1)


class _Emitter:
    """Writes float arithmetic at an llvmlite IR builder: the kernels below are spelled with
    it, instruction for instruction (constants as IR constants of the value's type)."""

    def __init__(self, builder):
        self.b = builder

    def const(self, ty, value):
        from llvmlite import ir

        return value if isinstance(value, ir.Value) else ir.Constant(ty, value)

    def intrinsic(self, name, *args):
        from llvmlite import ir

        ty = args[0].type
        args = [self.const(ty, a) for a in args]
        fn = self.b.module.declare_intrinsic(name, [ty], ir.FunctionType(ty, [ty] * len(args)))
        return self.b.call(fn, args)

    def fma(self, a, b, c):
        """a * b + c rounded once (one instruction where the CPU has FMA, the same bits
        everywhere)."""
        return self.intrinsic("llvm.fma", a, b, c)

    def select_if(self, cmp, a, bound, then):
        """`then` where `a cmp bound` (an ordered compare: false on NaN), else a."""
        bound, then = self.const(a.type, bound), self.const(a.type, then)
        return self.b.select(self.b.fcmp_ordered(cmp, a, bound), then, a)


def _emit_exp_f32(builder, x):
    """float32 exp of x, computed in float64 and rounded once: exp(d) = 2**k * exp(r),
    |r| <= ln2 / 2, exp(r) by Taylor to degree 8 (relative error below 3e-10, far under half a
    float32 ulp); d clamped to [-110, 110], beyond which float32's result is 0 or inf anyway
    (NaN passes both clamps)."""
    from llvmlite import ir

    e, b, f64, i64 = _Emitter(builder), builder, ir.DoubleType(), ir.IntType(64)
    d = b.fpext(x, f64)
    d = e.select_if(">", d, 110.0, 110.0)
    d = e.select_if("<", d, -110.0, -110.0)
    t = e.fma(d, _LOG2E, _SHIFT)  # k in the low bits of t's mantissa
    k = b.fsub(t, e.const(f64, _SHIFT))
    r = e.fma(k, -_LN2, d)
    p = e.fma(r, _E8, _E7)
    for c in (_E6, _E5, _E4, _E3, _E2, 1.0, 1.0):
        p = e.fma(r, p, c)
    bits = b.sub(b.bitcast(t, i64), e.const(i64, _SHIFT_BITS - 1023))
    scale = b.bitcast(b.shl(bits, e.const(i64, 52)), f64)  # 2**k
    # overflows to inf, underflows to 0 or a subnormal, rounding once
    return b.fptrunc(b.fmul(p, scale), ir.FloatType())


def _emit_tanh_f32(builder, x):
    """float32 tanh of x in float32 arithmetic (twice float64's lanes): both branches
    computed, one selected, on a = |x| with x's sign. Below 0.55, a + a**3 * P(a**2); above,
    1 - 2 / (exp(2a) + 1) (tanh > 1/2 there: the subtraction loses nothing), with
    exp(y) = 2**k * (1 + m), m = expm1(r) = r + r**2 * Q(r), r = y - k * ln2 in
    [-ln2/2, ln2/2]; the one-word ln2's error (2e-9 * k) shrinks slower than tanh's
    sensitivity to it, 4 * exp(-y)."""
    from llvmlite import ir

    e, b, f32, i32 = _Emitter(builder), builder, ir.FloatType(), ir.IntType(32)
    one = e.const(f32, float(_ONE32))
    a = e.intrinsic("llvm.fabs", x)
    z = b.fmul(a, a)
    p = e.fma(z, float(_P4), float(_P3))
    for c in (_P2, _P1, _P0):
        p = e.fma(z, p, float(c))
    small = e.fma(b.fmul(a, z), p, a)  # a itself below 2**-12
    y = e.select_if(">", a, float(_CLAMP32), float(_CLAMP32))  # tanh(9.1) rounds to 1
    y = b.fadd(y, y)
    t = e.fma(y, float(_LOG2E32), float(_SHIFT32))  # k in the low bits of t's mantissa
    k = b.fsub(t, e.const(f32, float(_SHIFT32)))
    r = e.fma(k, -float(_LN2_32), y)
    q = e.fma(r, float(_Q4), float(_Q3))
    for c in (_Q2, _Q1, _Q0):
        q = e.fma(r, q, float(c))
    m = e.fma(b.fmul(r, r), q, r)
    bits = b.add(b.shl(b.bitcast(t, i32), e.const(i32, 23)), e.const(i32, _ONE32_BITS))
    s = b.bitcast(bits, f32)  # 2**k, 0 <= k <= 27
    big = b.fsub(one, b.fdiv(e.const(f32, float(_TWO32)), e.fma(s, m, b.fadd(s, one))))
    picked = b.select(b.fcmp_ordered("<", a, e.const(f32, float(_SMALL32))), small, big)
    return e.intrinsic("llvm.copysign", picked, x)  # -0.0 stays -0.0


_EMIT = {"exp": _emit_exp_f32, "tanh": _emit_tanh_f32}


def _build():
    """The kernels as numba intrinsics of one float32 by name, or None without numba. Each
    call writes the kernel's instructions into the calling function itself (no call: LLVM
    vectorizes a loop across them), and costs numba's compiler one typed call, so a loop's
    compile time is LLVM's. Inlined by numba instead, the 100-op chain's 34 kernels took 3.7 s
    to compile; called, 1.2 s but the loop stayed scalar (10 us a call, 1.1 here)."""
    try:
        import numba.extending
        from numba.core import types
    except ImportError:
        return None

    def kernel(emit):
        @numba.extending.intrinsic
        def fn(typingctx, x):
            if x != types.float32:
                return None
            return types.float32(types.float32), lambda ctx, b, sig, args: emit(b, args[0])

        return fn

    return {name: kernel(emit) for name, emit in _EMIT.items()}


# An array loop of one kernel, by its name in `namespace()`: compiled from kiln's disk cache
# like a fused program's loop (kiln/ops/fused_codegen.py), so a new process loads its machine
# code instead of compiling it (0.9 s, paid on a program's first call).
_ARRAY_LOOP = """def kernel(x, out):
    for i in range(x.size):
        out[i] = {fn}(x[i])
"""

_BUILT = None


def _kernels():
    global _BUILT
    if _BUILT is None:
        scalar = _build()
        if scalar is None:
            _BUILT = ({}, {})
        else:
            import numba

            from .fused_codegen import _jit

            _BUILT = (scalar, {})  # namespace(), which the loops' texts run in, reads it
            for name in scalar:
                _BUILT[1][name] = _jit(
                    numba, _ARRAY_LOOP.format(fn=f"vm{VERSION}_{name}"), "vecmath"
                )
    return _BUILT


def _has_numba() -> bool:
    import importlib.util

    return importlib.util.find_spec("numba") is not None


_AVAILABLE = _has_numba()


def available() -> bool:
    """Whether kiln's kernels can run (numba is installed).

    >>> available() in (True, False)
    True
    """
    return _AVAILABLE


def covers(name: str, dtype) -> bool:
    """Whether kiln has its own kernel of op `name` for inputs of `dtype` (float32 only).

    >>> covers("tanh", "float64")
    False
    """
    return _AVAILABLE and name in ULPS and np.dtype(dtype) == _F32


def active(name: str, dtype, exact: bool) -> bool:
    """Whether op `name` on `dtype` runs kiln's kernel: outside exact mode, where covered.

    >>> active("exp", "float32", exact=True)
    False
    """
    return not exact and covers(name, dtype)


def namespace() -> dict:
    """The scalar kernels as generated loops name them (`vm1_tanh`: the version is in the
    name, so a loop text, and the machine code cached for it, changes with the kernels)."""
    return {f"vm{VERSION}_{name}": fn for name, fn in _kernels()[0].items()}


def expr(name: str, arg: str) -> str:
    """The numba expression of op `name` on the float32 expression `arg`."""
    return f"vm{VERSION}_{name}(np.float32({arg}))"


def run(name: str, x, out=None):
    """Op `name` on a float32 array `x` by kiln's kernel (into `out` when given, of x's shape
    and dtype); the shapes are the caller's to check (a kernel's contract).

    >>> import numpy as np
    >>> run("tanh", np.zeros(3, np.float32)) if available() else np.zeros(3, np.float32)
    array([0., 0., 0.], dtype=float32)
    """
    shape = np.shape(x)  # (a 0-d array stays 0-d: ascontiguousarray makes it 1-d)
    result = out if out is not None else np.empty(shape, _F32)
    flat = result if result.flags.c_contiguous else np.empty(shape, _F32)
    _kernels()[1][name](np.ascontiguousarray(x).reshape(-1), flat.reshape(-1))
    if flat is not result:
        result[...] = flat
    return result


def array_fn(name: str):
    """`fn(x, out=None)`: kiln's kernel of `name` on float32 arrays, called as a ufunc is."""

    def fn(x, out=None):
        return run(name, x, out)

    fn.__name__ = f"vecmath_{name}"
    return fn


def prepare_for(name: str):
    """The `OpDef.prepare` of op `name`: on NumPy, outside exact mode (read when a program is
    planned) and for float32 inputs, a kernel running kiln's kernel; otherwise None (the op's
    own kernel, NumPy's)."""

    def prepare(backend, in_shapes, in_dtypes, out_shape):
        from ..debug import exact_mode

        if backend.xp is not np or not active(name, in_dtypes[0], exact_mode()):
            return None
        fn = array_fn(name)

        def kernel(xp, x, out=None):
            return fn(x, out)

        return kernel

    return prepare
