"""Op-table rows for the bitwise ops (`kn.bitwise_and` … behind `&`, `|`, `^`, `~`, `<<`,
`>>`) on integers and bools; the references are NumPy's ufuncs, which compute what PyTorch's
bitwise functions do (the operators: tests/test_torch_semantics.py)."""

from __future__ import annotations

import numpy as np
from op_case import OpCase
from op_table import Arg, args

import kiln as kn

INTS = ("int8", "int32", "int64", "uint8", "bool")
SHIFTABLE = ("int8", "int32", "int64", "uint8")

CASES = []


def _binary_rows(op, fn, ref, dtypes=INTS, rhs="small"):
    CASES.extend([
        OpCase(op, "basic", fn, args(Arg((3, 5), "small"), Arg((3, 5), rhs)), ref, dtypes),
        OpCase(op, "broadcast", fn, args(Arg((2, 1, 5), "small"), Arg((3, 1), rhs)), ref, dtypes),
        OpCase(op, "0d", fn, args(Arg((), "small"), Arg((), rhs)), ref, dtypes),
        OpCase(op, "empty", fn, args(Arg((0, 3), "small"), Arg((1, 3), rhs)), ref, dtypes),
        OpCase(op, "strided", fn, args(Arg((3, 5), "small", "T"), Arg((3, 5), rhs, "S")), ref,
               dtypes),
        OpCase(op, "scalar-rhs", lambda x: fn(x, 3), args(Arg((2, 3), "small")),
               lambda x: ref(x, np.asarray(3, x.dtype)), SHIFTABLE),
        OpCase(op, "scalar-lhs", lambda y: fn(3, y), args(Arg((2, 3), rhs)),
               lambda y: ref(np.asarray(3, y.dtype), y), SHIFTABLE),
    ])  # fmt: skip


_binary_rows("bitwise_and", kn.bitwise_and, np.bitwise_and)
_binary_rows("bitwise_or", kn.bitwise_or, np.bitwise_or)
_binary_rows("bitwise_xor", kn.bitwise_xor, np.bitwise_xor)
_binary_rows("bitwise_left_shift", kn.bitwise_left_shift, np.left_shift, SHIFTABLE, "count")
_binary_rows("bitwise_right_shift", kn.bitwise_right_shift, np.right_shift, SHIFTABLE, "count")
CASES.extend([
    OpCase("bitwise_not", "basic", kn.bitwise_not, args(Arg((3, 5), "small")), np.invert, INTS),
    OpCase("bitwise_not", "0d", kn.bitwise_not, args(Arg((), "small")), np.invert, INTS),
    OpCase("bitwise_not", "strided", kn.bitwise_not, args(Arg((3, 5), "small", "S")), np.invert,
           INTS),
    OpCase("bitwise_and", "mixed-dtypes", kn.bitwise_and,
           args(Arg((3,), "small", dtype="int8"), Arg((2, 3), "small")), np.bitwise_and,
           ("int32", "int64")),
])  # fmt: skip
# gcd and lcm of integers: NumPy's ufuncs compute PyTorch's (non-negative, gcd(0, 0) = 0)
_GCD = ("int8", "int32", "int64", "uint8")
for _op, _fn, _ref in (("gcd", kn.gcd, np.gcd), ("lcm", kn.lcm, np.lcm)):
    CASES.extend([
        OpCase(_op, "basic", _fn, args(Arg((3, 5), "small"), Arg((3, 5), "small")), _ref, _GCD),
        OpCase(_op, "broadcast", _fn, args(Arg((2, 1, 5), "small"), Arg((3, 1), "small")), _ref,
               _GCD),
        OpCase(_op, "0d", _fn, args(Arg((), "small"), Arg((), "small")), _ref, _GCD),
        OpCase(_op, "strided", _fn, args(Arg((3, 5), "small", "T"), Arg((3, 5), "small", "S")),
               _ref, _GCD),
    ])  # fmt: skip
