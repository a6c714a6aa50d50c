"""`Lowering`: the scalar form of one elementwise op, declared on its `OpDef` (`lowering=`) and
read by the fusers alone (kiln/ops/fused.py, fused_codegen.py, fused_cuda.py); and the small
vocabulary of C and numba text that the ops' scalar forms are written in.

Scalar forms are plain functions returning text built only from their arguments (generated
names such as `a0`, `e1`, `c0`, already-built expressions) and fixed strings: attr values
reach a kernel as arguments, never as text.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..errors import ArgumentError


@dataclass(frozen=True)
class Lowering:
    """How the fused CPU and CUDA kernels emit one elementwise op.

    `ufunc`: the NumPy/CuPy ufunc's name when the op's kernel is exactly that one ufunc call
    (`unary` and `binary` fill it in when they make that kernel). The fused CPU code then calls
    the ufunc bare, the numba loop calls `np.<ufunc>` on arguments cast to the ufunc loop's
    dtypes, and the CUDA rule receives its arguments cast to that loop's dtype.

    `exact`: the op's scalar forms give NumPy's bits (IEEE-exact arithmetic, comparisons,
    selection). Only programs of exact ops run as numba loops, so a compiled function gives
    the same bits on every call as eager mode. Not exact: libm functions (another libm in
    numba and CUDA can differ by an ulp) and ops whose NumPy integer loop raises or warns
    (integer powers, division by zero), where a compiled loop would not.

    `transcendental`: the cost class for the numba-vs-NumPy choice: a libm call costs a
    scalar loop 4-17 ns an element where NumPy's SIMD loops take < 1 ns; cheap ops cost
    either about 0.5 ns.

    `numba(xs, dtypes, out, attrs) -> str | None`: the scalar Python expression of an exact
    op that is not one ufunc, for numba: `xs` are its argument expressions, `dtypes` theirs,
    `out` the result dtype (see `nb_type`); it rounds as NumPy's kernel does.

    `cuda`: the C expression. With a `ufunc`: `cuda(t, *xs) -> str | None`, with `xs` cast to
    the ufunc loop's dtype `t` (the fuser casts the result to the op's dtype). Without:
    `cuda(k, xs, dtypes, out, attrs) -> str | None` of dtype `out`, where `k.const(value)`
    names a float64 kernel argument holding an attr value and `k.logaddexp(t)` names NumPy's
    logaddexp for float `t`. None (from the rule or as the rule) means not lowered for these
    dtypes: the program then runs as whole-array calls.

    `vecmath`: the name of kiln's own float32 kernel of the op (kiln/ops/vecmath.py), which
    every CPU path (fused loops and blocks, the op's unfused kernel) runs outside exact mode
    (the default; `KILN_EXACT=1` is exact) in place of NumPy's, so that grouping never changes
    the bits.

    `not_lowered`: why the op has no scalar form at all (a deliberate declaration, so that a
    forgotten one is caught by tests/test_op_declarations.py); then every other field is empty.
    """

    ufunc: str | None = None
    exact: bool = False
    transcendental: bool = False
    numba: Callable | None = None
    cuda: Callable | None = None
    vecmath: str = ""
    not_lowered: str = ""

    def __post_init__(self):
        if self.not_lowered and (
            self.ufunc or self.exact or self.numba or self.cuda or self.vecmath
        ):
            raise ArgumentError("a Lowering that says why it is not lowered declares nothing else")


# -- C (CUDA) ----------------------------------------------------------------------------------

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


def c_cast(expr: str, src, dst) -> str:
    """`expr` of dtype `src` as dtype `dst`."""
    return expr if src == dst else f"(({CTYPES[dst]})({expr}))"


def c_fn(name: str, dtype) -> str:
    """A libm function of dtype's precision: `expf` for float32, `exp` for float64."""
    return name + "f" if dtype == _F32 else name


def c_rn(op: str, dtype) -> str:
    """The IEEE round-to-nearest intrinsic of `op` for float32 or float64 (never contracted
    into a fused multiply-add, which rounds once instead of twice)."""
    return f"__{'f' if dtype == _F32 else 'd'}{op}_rn"


def c_wrap(op: str, dtype, *xs) -> str:
    """Integer arithmetic that wraps around as NumPy's does (in unsigned, no overflow UB)."""
    u = "unsigned long long" if dtype.itemsize == 8 else "unsigned int"
    operands = [f"({u})({x})" for x in xs]
    body = f"({u})0 {op} {operands[0]}" if len(xs) == 1 else f" {op} ".join(operands)
    return f"(({CTYPES[dtype]})({body}))"


def c_libm(name: str):
    """The C rule of a one-ufunc op that is the libm function `name` on float loops (CUDA's
    libm: within a few ulps of the host's); other loops are not lowered."""
    return lambda t, *xs: f"{c_fn(name, t)}({', '.join(xs)})" if t.kind == "f" else None


def c_infix(op: str):
    """The C rule of a one-ufunc op that is the infix operator `op` on any loop dtype (the
    comparisons: bool results)."""
    return lambda t, x, y: f"({x} {op} {y})"


# -- numba -------------------------------------------------------------------------------------

NB_TYPES = {
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
NB_TYPES[np.dtype(bool)] = "np.bool_"


def nb_type(dtype) -> str:
    """The NumPy scalar type of `dtype` as numba code: `np.float32`; calling it rounds."""
    return NB_TYPES[dtype]
