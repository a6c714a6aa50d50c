"""Bitwise primitives on integers and bools: and, or, xor, not (`&`, `|`, `^`, `~`), the
shifts, and `gcd`/`lcm` of integers, each NumPy's ufunc (kernel and dtype rule); not
differentiable (no float loops)."""

from __future__ import annotations

import numpy as np

from .elementwise import binary, unary
from .lowering import Lowering


def _c_bitwise(op):
    """`& | ^` in C: on the loop's integer or bool dtype (the fuser casts the result back)."""
    return lambda t, x, y: f"({x} {op} {y})" if t.kind != "f" else None


def _c_invert(t, x):
    if t.kind == "b":
        return f"(!({x}))"
    return f"(~({x}))" if t.kind != "f" else None


bitwise_and = binary(
    "bitwise_and", np.bitwise_and, tags={"commutative"},
    lowering=Lowering(exact=True, cuda=_c_bitwise("&")),
)  # fmt: skip
bitwise_or = binary(
    "bitwise_or", np.bitwise_or, tags={"commutative"},
    lowering=Lowering(exact=True, cuda=_c_bitwise("|")),
)  # fmt: skip
bitwise_xor = binary(
    "bitwise_xor", np.bitwise_xor, tags={"commutative"},
    lowering=Lowering(exact=True, cuda=_c_bitwise("^")),
)  # fmt: skip
bitwise_not = unary("bitwise_not", np.invert, lowering=Lowering(exact=True, cuda=_c_invert))

# NOTE: a shift by the width or more is undefined in C and LLVM (NumPy gives 0 or -1): the
# shifts have no scalar form that gives NumPy's bits, so fused groups holding one run as
# whole-array calls. Two bools are refused (PyTorch has no bool shift; NumPy's is int8's).
bitwise_left_shift = binary("bitwise_left_shift", np.left_shift, lowering=Lowering(), bools=False)
bitwise_right_shift = binary(
    "bitwise_right_shift", np.right_shift, lowering=Lowering(), bools=False
)

# PyTorch's `gcd` and `lcm` of integers (non-negative results; `gcd(0, 0) = 0`, `lcm(0, x) = 0`)
gcd = binary("gcd", np.gcd, tags={"commutative"}, lowering=Lowering())
lcm = binary("lcm", np.lcm, tags={"commutative"}, lowering=Lowering())
