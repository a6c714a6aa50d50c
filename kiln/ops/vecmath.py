"""kiln's own float32 `exp`, `log`, `tanh` and `sigmoid`: branch-free kernels that numba
compiles and LLVM vectorizes (AVX2/AVX-512 where the machine has them), used outside exact
mode (`KILN_EXACT=0`) by every CPU path that evaluates these ops in a planned program:
compiled fused loops (kiln/ops/fused_codegen.py), fused blocks and segments, and the unfused
op's kernel (`prepare_for`), so that a program gives the same bits however its ops are
grouped. Eager mode keeps NumPy's kernels (within the tolerances of `kn.testing`).

`tanh` computes in float32 arithmetic (a polynomial below 0.625, else from exp(2|x|), one
division); `exp`, `log` and `sigmoid` in float64 (range reduction by powers of two, a
polynomial, one division at most), rounded once to float32. Measured over every float32
input (bench/vecmath_ulps.py; `ULPS`, docs/debugging.md), each is within 1 ulp of the
correctly rounded value; against NumPy's float32 kernel (exact mode's), the difference is
NumPy's own error plus at most that ulp. Exact mode (`KILN_EXACT=1`, the default) never calls
them: programs then give NumPy's bits.

The kernels are scalar functions, inlined by numba into the loops that call them. Without
numba there are none (`available()` is False) and every path runs NumPy's kernels.

>>> import numpy as np
>>> x = np.array([0.0, 1.0, -2.5], np.float32)
>>> y = run("exp", x) if available() else np.exp(x)
>>> bool(np.all(np.abs(y - np.exp(x)) <= 2 * np.spacing(np.exp(x))))
True
"""

from __future__ import annotations

import numpy as np

__all__ = ["ULPS", "active", "available", "covers", "prepare_for", "run"]

VERSION = 1  # in every loop text that calls these kernels: a change recompiles the cached ones

_F32 = np.dtype("float32")

# The measured max error of each kernel over float32 inputs (bench/vecmath_ulps.py: every
# third bit pattern, 1.43e9 inputs, all exponents), in float32 ulps: (against the float64
# reference rounded once, against NumPy's float32 kernel). NumPy's own kernels are up to
# 3 (exp), 4 (log), 1 (tanh) ulps from the reference, kiln's sigmoid kernel in NumPy up to 10.
ULPS = {
    "exp": (1, 3),
    "log": (1, 4),
    "tanh": (1, 2),
    "sigmoid": (1, 10),
}
ULP_BOUND = 1  # what kiln documents and tests/test_vecmath.py hold them to: against the reference

# float64 constants
_LOG2E = 1.4426950408889634
_LN2 = 0.6931471805599453
_SHIFT = 6755399441055744.0  # 1.5 * 2**52: x + _SHIFT - _SHIFT rounds x to an integer
_SHIFT_BITS = 0x4338000000000000  # its bits: the integer sits in the low mantissa bits
_SQRT2 = 1.4142135623730951
_MANT = 0x000FFFFFFFFFFFFF
_ONE_BITS = 0x3FF0000000000000
_INF = float("inf")
_NAN = float("nan")
# 1/k! and 1/(2k+1), for the polynomials
_E2, _E3, _E4, _E5, _E6 = 1 / 2, 1 / 6, 1 / 24, 1 / 120, 1 / 720
_E7, _E8, _E9, _E10 = 1 / 5040, 1 / 40320, 1 / 362880, 1 / 3628800
_L3, _L5, _L7, _L9, _L11, _L13 = 1 / 3, 1 / 5, 1 / 7, 1 / 9, 1 / 11, 1 / 13
# float32 constants (tanh). P: (tanh(x) - x) / x**3 as a polynomial in x**2 on [0, 0.625],
# fitted by least squares of tanh's relative error against mpmath (max 4e-10); Q: (exp(r) -
# 1 - r) / r**2 on [-ln2/2, ln2/2] (max 7e-9). Cody-Waite: ln2 = _LN2HI32 + _LN2LO32, the
# high part with 9 bits, so that k * _LN2HI32 is exact for the |k| <= 29 used here.
_f = np.float32
_T0, _T1, _T2 = _f(-0.3333333134651184), _f(0.13333196938037872), _f(-0.05394625663757324)
_T3, _T4, _T5 = _f(0.02169998362660408), _f(-0.008179331198334694), _f(0.0021473574452102184)
_Q0, _Q1, _Q2 = _f(0.49999991059303284), _f(0.16666541993618011), _f(0.04166920855641365)
_Q3, _Q4 = _f(0.00836615264415741), _f(0.001375291496515274)
_LOG2E32, _LN2HI32, _LN2LO32 = _f(_LOG2E), _f(0.693359375), _f(-2.12194440e-4)
_SHIFT32 = _f(12582912.0)  # 1.5 * 2**23
_SHIFT32_BITS = int(_SHIFT32.view(np.int32))
_ZERO32, _ONE32, _TWO32, _TEN32 = _f(0.0), _f(1.0), _f(2.0), _f(10.0)
_SMALL32, _TINY32 = _f(0.625), _f(2.0**-12)  # below 2**-12, tanh(x) rounds to x


def _build():
    """The numba-compiled kernels by name, or None without numba."""
    try:
        import numba
    except ImportError:
        return None
    inline = numba.njit(inline="always", error_model="numpy", nogil=True)
    i64, f64, f32, i32 = np.int64, np.float64, np.float32, np.int32

    @inline
    def _pow2(t):
        # 2**k for the k that `t = y + _SHIFT` carries in its low bits, |k| < 1022
        return i64((f64(t).view(i64) - _SHIFT_BITS + 1023) << 52).view(f64)

    @inline
    def _exp(x):
        # exp(x) for float64 x within [-110, 110] (or NaN): 2**k * exp(r), |r| <= ln2 / 2;
        # Taylor to degree 8 (relative error below 3e-10, far under half a float32 ulp)
        t = x * _LOG2E + _SHIFT
        k = t - _SHIFT
        r = x - k * _LN2
        p = _E7 + r * _E8
        p = _E6 + r * p
        p = _E5 + r * p
        p = _E4 + r * p
        p = _E3 + r * p
        p = _E2 + r * p
        p = 1.0 + r * p
        p = 1.0 + r * p
        return p * _pow2(t)

    @inline
    def _expm1(x):
        # exp(x) - 1 for float64 x within [-40, 40]: 2**k * q(r) + (2**k - 1), q(r) = exp(r) - 1
        # to degree 10 (relative error below 1e-12 where k = 0, no cancellation)
        t = x * _LOG2E + _SHIFT
        k = t - _SHIFT
        r = x - k * _LN2
        q = _E9 + r * _E10
        q = _E8 + r * q
        q = _E7 + r * q
        q = _E6 + r * q
        q = _E5 + r * q
        q = _E4 + r * q
        q = _E3 + r * q
        q = _E2 + r * q
        q = 1.0 + r * q
        q = r * q
        s = _pow2(t)
        return s * q + (s - 1.0)

    @inline
    def exp_f32(x):
        d = f64(x)
        d = 110.0 if d > 110.0 else d  # NaN passes both
        d = -110.0 if d < -110.0 else d
        return f32(_exp(d))  # overflows to inf, underflows to 0 or a subnormal, rounding once

    @inline
    def sigmoid_f32(x):
        d = -f64(x)
        d = 110.0 if d > 110.0 else d
        d = -110.0 if d < -110.0 else d
        return f32(1.0 / (1.0 + _exp(d)))

    @inline
    def tanh_f32(x):
        # In float32 arithmetic (twice the lanes of float64): x + x**3 * P(x**2) below 0.625,
        # else 1 - 2 / (exp(2|x|) + 1) with the sign of x (no cancellation there: tanh > 0.55)
        a = abs(x)
        z = x * x
        p = _T4 + z * _T5
        p = _T3 + z * p
        p = _T2 + z * p
        p = _T1 + z * p
        p = _T0 + z * p
        small = x + x * (z * p)
        small = x if a < _TINY32 else small  # x itself: -0.0 stays -0.0
        y = _TEN32 if a > _TEN32 else a  # tanh(10) rounds to 1; NaN passes
        y = y + y
        t = y * _LOG2E32 + _SHIFT32
        k = t - _SHIFT32
        r = (y - k * _LN2HI32) - k * _LN2LO32
        q = _Q3 + r * _Q4
        q = _Q2 + r * q
        q = _Q1 + r * q
        q = _Q0 + r * q
        e = _ONE32 + (r + (r * r) * q)
        e = e * i32((f32(t).view(i32) - _SHIFT32_BITS + 127) << 23).view(f32)  # k <= 29
        big = _ONE32 - _TWO32 / (e + _ONE32)
        big = -big if x < _ZERO32 else big
        return small if a < _SMALL32 else big

    @inline
    def log_f32(x):
        d = f64(x)  # float32's subnormals are normal float64
        bits = f64(d).view(i64)
        e = f64((bits >> 52) - 1023)
        m = i64((bits & _MANT) | _ONE_BITS).view(f64)  # in [1, 2)
        big = m > _SQRT2
        m = m * 0.5 if big else m
        e = e + 1.0 if big else e
        f = m - 1.0  # within [sqrt(1/2) - 1, sqrt(2) - 1]
        s = f / (2.0 + f)
        z = s * s
        p = _L11 + z * _L13
        p = _L9 + z * p
        p = _L7 + z * p
        p = _L5 + z * p
        p = _L3 + z * p
        r = e * _LN2 + (2.0 * s + 2.0 * s * (z * p))
        r = -_INF if d == 0.0 else r
        r = _NAN if d < 0.0 else r
        r = d if d == _INF or d != d else r
        return f32(r)

    scalar = {"exp": exp_f32, "log": log_f32, "tanh": tanh_f32, "sigmoid": sigmoid_f32}
    loops = {name: _array_loop(numba, fn) for name, fn in scalar.items()}
    return scalar, loops


def _array_loop(numba, fn):
    @numba.njit(error_model="numpy", nogil=True)
    def loop(x, out):
        for i in range(x.size):
            out[i] = fn(x[i])

    return loop


_BUILT = None


def _kernels():
    global _BUILT
    if _BUILT is None:
        _BUILT = _build() or ({}, {})
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
