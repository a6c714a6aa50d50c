"""The op table: rows that drive tests/test_ops.py, several per registered op.

A row (`OpCase`) names the IR op it exercises, calls kiln's frontend in `fn`, makes its NumPy
inputs in `make_args(rng, dtype)` and computes the expected value with NumPy in `reference`.
Shapes use distinct sizes (2, 3, 5) so swapped axes show; rows cover 0-d, size-0,
broadcasting, negative axes and non-contiguous inputs (transposed or strided views).
Composite frontend functions (gelu, leaky_relu, var, stack...) have rows labelled by their name,
under the primitive they mainly use. nn rows live in op_table_nn.py and are appended here.
"""

from __future__ import annotations

import importlib
import math
from dataclasses import dataclass, fields

import numpy as np
import scipy.special
from op_case import OpCase  # one row type for every table module (re-exported here)

import kiln as kn
from kiln.graph.opdef import REGISTRY
from kiln.ops.core import bind

FLOATS = ("float32", "float64")
FLOATS16 = ("float16", "float32", "float64")
INTS = ("int32", "int64")

# -- inputs ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Arg:
    """How to make one input: its shape, value kind, memory layout and optional own dtype.

    kinds: normal, positive (> 0), unit (|x| < 1), small (few distinct ints, so ties and
    equalities happen), count (0..3), nonzero, distinct (no ties), half (k/2 values, for
    rounding), special (with nan, inf, -inf), bool. layouts: "c" (contiguous), "T" (a
    transposed view), "S" (a strided view, every other element of the last axis).
    """

    shape: tuple
    kind: str = "normal"
    layout: str = "c"
    dtype: str | None = None


def _values(rng, shape, dtype, kind):
    dtype = np.dtype(dtype)
    size = math.prod(shape)
    if dtype == np.bool_ or kind == "bool":
        return np.asarray(rng.random(shape) < 0.5)
    if kind == "distinct":
        return (rng.permutation(size).reshape(shape) - size // 2).astype(dtype)
    unsigned = dtype.kind == "u"
    if dtype.kind in "iu":
        low, high = {
            "positive": (1, 6), "small": (-2, 3), "count": (0, 4), "nonzero": (1, 6),
        }.get(kind, (-5, 6))  # fmt: skip
        values = rng.integers(0 if unsigned else low, high, shape)
        if kind == "nonzero" and not unsigned:
            values *= rng.choice([-1, 1], shape)
        return np.asarray(values, dtype)
    table = {
        "normal": lambda: 2 * rng.standard_normal(shape),
        "positive": lambda: rng.uniform(0.1, 3.0, shape),
        "unit": lambda: rng.uniform(-0.9, 0.9, shape),
        "small": lambda: rng.integers(-2, 3, shape).astype(float),
        "count": lambda: rng.integers(0, 4, shape).astype(float),
        "nonzero": lambda: rng.uniform(0.5, 3.0, shape) * rng.choice([-1, 1], shape),
        "half": lambda: rng.integers(-7, 8, shape) / 2,
        "special": lambda: _with_specials(2 * rng.standard_normal(shape)),
    }
    return np.asarray(table[kind](), dtype)  # 0-d: an array, not a NumPy scalar


def _with_specials(values):
    flat = values.reshape(-1)
    flat[: min(3, flat.size)] = [np.nan, np.inf, -np.inf][: min(3, flat.size)]
    return values


def _array(rng, arg: Arg, dtype):
    dtype = arg.dtype or dtype
    shape = tuple(arg.shape)
    if arg.layout == "T":
        return _values(rng, shape[::-1], dtype, arg.kind).T
    if arg.layout == "S":
        wide = (*shape[:-1], 2 * shape[-1])
        return _values(rng, wide, dtype, arg.kind)[..., ::2]
    return _values(rng, shape, dtype, arg.kind)


def args(*specs):
    """`make_args` for inputs given as shapes (normal values) or `Arg`s."""
    specs = tuple(s if isinstance(s, Arg) else Arg(tuple(s)) for s in specs)

    def make_args(rng, dtype):
        return [_array(rng, s, dtype) for s in specs]

    return make_args


def fixed(*arrays):
    """`make_args` giving these arrays, cast to the case dtype."""

    def make_args(rng, dtype):
        return [np.asarray(a, dtype) for a in arrays]

    return make_args


def _float_ref(f):
    """A reference computed in float64 and returned in the input's (float) dtype."""
    return lambda x: np.asarray(f(x.astype(np.float64))).astype(x.dtype)


def _default_float(f):
    """NumPy's `f`, in float32 where every input is an integer or bool: PyTorch computes
    those in the default float dtype (NumPy: float64)."""

    def ref(*xs):
        if all(np.asarray(x).dtype.kind in "biu" for x in xs):
            return np.asarray(f(*(np.asarray(x, np.float64) for x in xs))).astype(np.float32)
        return np.asarray(f(*xs))

    return ref


class _Index:
    """`IX[1:, ::-1]` is the index tuple `(slice(1, None), slice(None, None, -1))`."""

    def __getitem__(self, key):
        return key


IX = _Index()


def _silu_with_grad(x):
    value = kn.mul(x, kn.sigmoid(x))
    return bind(REGISTRY["with_grad"], value, x, x, formula=("silu",))


def stop_gradient(x):
    """kn.stop_gradient when the frontend has it; else the primitive through `bind`."""
    frontend = getattr(kn, "stop_gradient", None)
    return frontend(x) if frontend else bind(REGISTRY["stop_gradient"], x)


CASES: list[OpCase] = []


def rows(*cases):
    CASES.extend(cases)


# -- elementwise: unary ------------------------------------------------------------------------


def unary_rows(op, fn, ref, kind="normal", dtypes=FLOATS, int_dtypes=()):
    """basic, 0-d, size-0, transposed and strided rows; an int row when `int_dtypes`."""
    rows(
        OpCase(op, "basic", fn, args(Arg((3, 5), kind)), ref, dtypes),
        OpCase(op, "0d", fn, args(Arg((), kind)), ref, dtypes),
        OpCase(op, "empty", fn, args(Arg((0, 3), kind)), ref, dtypes),
        OpCase(op, "transposed", fn, args(Arg((2, 3, 5), kind, "T")), ref, dtypes),
        OpCase(op, "strided", fn, args(Arg((3, 5), kind, "S")), ref, dtypes),
    )
    if int_dtypes:
        rows(OpCase(op, "int", fn, args(Arg((2, 5), kind)), ref, int_dtypes))


unary_rows("neg", kn.neg, np.negative, dtypes=FLOATS16, int_dtypes=("int8", "int32", "int64"))
unary_rows("abs", kn.abs, np.abs, dtypes=FLOATS16, int_dtypes=("int8", "int32", "int64"))
unary_rows("exp", kn.exp, _float_ref(np.exp), dtypes=FLOATS16)
unary_rows("log", kn.log, _float_ref(np.log), "positive", dtypes=FLOATS16)
unary_rows("log1p", kn.log1p, _float_ref(np.log1p), "positive")
unary_rows("expm1", kn.expm1, _float_ref(np.expm1), "unit")
unary_rows("sqrt", kn.sqrt, _float_ref(np.sqrt), "positive", dtypes=FLOATS16)
unary_rows("rsqrt", kn.rsqrt, _float_ref(lambda x: 1 / np.sqrt(x)), "positive", FLOATS16)
unary_rows("square", kn.square, np.square, int_dtypes=INTS)
unary_rows("sin", kn.sin, _float_ref(np.sin))
unary_rows("cos", kn.cos, _float_ref(np.cos))
unary_rows("tanh", kn.tanh, _float_ref(np.tanh))
unary_rows("sigmoid", kn.sigmoid, _float_ref(lambda x: 1 / (1 + np.exp(-x))), dtypes=FLOATS16)
unary_rows("relu", kn.relu, lambda x: np.maximum(x, 0), dtypes=FLOATS16, int_dtypes=(*INTS, "int8"))
unary_rows("erf", kn.erf, _float_ref(np.vectorize(math.erf, otypes=[np.float64])))
unary_rows("sign", kn.sign, np.sign, "small", int_dtypes=("int8", "int64"))
# special functions: references from SciPy in float64 (digamma etc.: PyTorch's definitions)
unary_rows("lgamma", kn.lgamma, _float_ref(scipy.special.gammaln), "positive")
unary_rows("digamma", kn.digamma, _float_ref(scipy.special.digamma), "positive")
unary_rows("erfinv", kn.erfinv, _float_ref(scipy.special.erfinv), "unit")
unary_rows("i0", kn.i0, _float_ref(scipy.special.i0))
unary_rows("i1", kn.special.i1, _float_ref(scipy.special.i1))
unary_rows(
    "polygamma",
    lambda x: kn.polygamma(2, x),
    _float_ref(lambda x: scipy.special.polygamma(2, x)),
    "positive",
)
unary_rows("floor", kn.floor, np.floor, "half", dtypes=FLOATS16)
unary_rows("ceil", kn.ceil, np.ceil, "half", dtypes=FLOATS16)
unary_rows("round", kn.round, np.round, "half", dtypes=FLOATS16, int_dtypes=INTS)
unary_rows("logical_not", kn.logical_not, np.logical_not, "small", ("bool", *FLOATS))
unary_rows("isnan", kn.isnan, np.isnan, "special", int_dtypes=INTS)
unary_rows("isfinite", kn.isfinite, np.isfinite, "special", int_dtypes=INTS)
rows(
    # PyTorch computes integers in the default float (float32) in float functions
    OpCase("exp", "int", kn.exp, args(Arg((2, 3), "small")), _default_float(np.exp),
           ("int32", "int64")),
    OpCase("exp", "overflow", kn.exp, fixed(np.array([-1e4, 0.0, 1e4])), np.exp, FLOATS16),
    OpCase("sqrt", "int", kn.sqrt, args(Arg((5,), "count")), _default_float(np.sqrt),
           ("int64", "uint8")),
    OpCase(
        "round", "half-even", kn.round, fixed(np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5])),
        lambda x: np.array([-2, -2, -0, 0, 2, 2], x.dtype), FLOATS16,
    ),
    OpCase(
        "sigmoid", "extremes", kn.sigmoid, fixed(np.array([-1e4, -50.0, 0.0, 50.0, 1e4])),
        _float_ref(lambda x: 1 / (1 + np.exp(-np.clip(x, -700, 700)))), FLOATS16,
    ),
    OpCase(
        "erf", "tails", kn.erf, fixed(np.array([-10.0, -1.0, 0.0, 1e-3, 1.0, 10.0])),
        _float_ref(np.vectorize(math.erf, otypes=[np.float64])),
    ),
    OpCase(
        "rsqrt", "inf", kn.rsqrt, fixed(np.array([0.0, np.inf, 4.0])),
        lambda x: np.array([np.inf, 0.0, 0.5], x.dtype),
    ),
    OpCase("isnan", "bool", kn.isnan, args(Arg((3,), "bool")), np.isnan, ("bool",)),
    OpCase(
        "relu", "special", kn.relu, args(Arg((3, 5), "special")), lambda x: np.maximum(x, 0),
        FLOATS16,
    ),
    OpCase(
        "relu", "uint-bool", kn.relu, args(Arg((2, 3), "count")), lambda x: np.maximum(x, 0),
        ("uint8", "bool"),
    ),
)  # fmt: skip

# -- elementwise: softplus, cast, where --------------------------------------------------------


def _softplus_ref(beta):
    return _float_ref(lambda x: np.logaddexp(0.0, beta * x) / beta)


rows(
    OpCase("softplus", "basic", kn.softplus, args((3, 5)), _softplus_ref(1.0), FLOATS16),
    OpCase("softplus", "0d", kn.softplus, args(()), _softplus_ref(1.0)),
    OpCase("softplus", "empty", kn.softplus, args((2, 0)), _softplus_ref(1.0)),
    OpCase(
        "softplus", "beta-transposed", lambda x: kn.softplus(x, beta=2.0),
        args(Arg((3, 5), layout="T")), _softplus_ref(2.0),
    ),
    OpCase(
        "softplus", "extremes", kn.softplus, fixed(np.array([-1e4, -40.0, 0.0, 40.0, 1e4])),
        _softplus_ref(1.0),
    ),
)  # fmt: skip


def cast_row(label, target, make_args, dtypes):
    return OpCase(
        "cast", label, lambda x: kn.cast(x, target), make_args, lambda x: x.astype(target), dtypes
    )


rows(
    cast_row("to-int32", "int32", args(Arg((3, 5), "unit")), FLOATS16),
    cast_row("to-float16", "float16", args((2, 3)), ("float32", "float64", "int32")),
    cast_row("to-float64", "float64", args((2, 3)), ("float32", "int8", "uint8", "bool")),
    cast_row("to-bool", "bool", args(Arg((3, 5), "small")), ("float32", "int64")),
    cast_row("to-uint8", "uint8", args(Arg((5,), "count")), ("float32", "int64")),
    cast_row("same", "float32", args((2, 3)), ("float32",)),
    cast_row("0d", "int64", args(()), FLOATS),
    cast_row("empty", "float32", args((0, 5)), ("float64", "int32")),
    cast_row("transposed", "float32", args(Arg((2, 3, 5), layout="T")), ("float64", "int32")),
)

_where = lambda c, a, b: kn.where(c, a, b)
rows(
    OpCase("where", "basic", _where, args(Arg((3, 5), "bool"), (3, 5), (3, 5)), np.where),
    OpCase(
        "where", "broadcast", _where, args(Arg((2, 1, 5), "bool"), (3, 1), (5,)), np.where,
        FLOATS16,
    ),
    OpCase("where", "0d", _where, args(Arg((), "bool"), (), ()), np.where),
    OpCase(
        "where", "scalar", lambda c, a: kn.where(c, a, 0.0), args(Arg((2, 3), "bool"), (2, 3)),
        lambda c, a: np.where(c, a, 0.0).astype(a.dtype), FLOATS16,
    ),
    OpCase(
        "where", "mixed-dtypes", _where,
        args(Arg((3,), "bool"), Arg((3,), dtype="int32"), (2, 3)),
        lambda c, a, b: np.where(c, a, b).astype(b.dtype),  # PyTorch: the float's dtype
    ),
    OpCase("where", "int", _where, args(Arg((3, 5), "bool"), (3, 5), (1, 5)), np.where, INTS),
    OpCase("where", "empty", _where, args(Arg((0, 5), "bool"), (1, 5), ()), np.where),
    OpCase(
        "where", "strided", _where,
        args(Arg((3, 5), "bool", "S"), Arg((3, 5), layout="T"), (3, 5)), np.where,
    ),
)  # fmt: skip

# Bounds are placeholders here (so their gradients are checked) unless a row says otherwise.
_clip = lambda x, lo, hi: kn.clip(x, lo, hi)
rows(
    OpCase("clip", "basic", _clip, args((3, 5), (3, 5), (3, 5)), np.clip, FLOATS16),
    OpCase("clip", "broadcast", _clip, args((2, 1, 5), (3, 1), (5,)), np.clip),
    OpCase("clip", "0d", _clip, args((), (), ()), np.clip),
    OpCase("clip", "empty", _clip, args((0, 5), (1, 5), ()), np.clip),
    OpCase(
        "clip", "strided", _clip, args(Arg((3, 5), layout="T"), Arg((3, 5), layout="S"), ()),
        np.clip,
    ),
    OpCase(
        "clip", "scalars", lambda x: kn.clip(x, -0.5, 1.0), args((3, 5)),
        lambda x: np.clip(x, -0.5, 1.0), FLOATS16,
    ),
    OpCase(
        "clip", "max-only", lambda x: kn.clip(x, None, 2), args(Arg((3, 5), "small")),
        lambda x: np.clip(x, None, 2), ("float32", "int32", "uint8"),
    ),
    OpCase(
        "clip", "min-only-float-bound", lambda x: kn.clip(x, 0.5, None), args(Arg((3, 5), "small")),
        _default_float(lambda x: np.clip(x, 0.5, None)), ("int8", "int64", "float32"),
    ),
    OpCase(
        "clip", "int", _clip, args(Arg((3, 5), "small"), (5,), Arg((3, 1), "positive")), np.clip,
        ("int8", "int32", "int64"),
    ),
    OpCase(
        "clip", "mixed-dtypes", _clip, args((2, 3), Arg((3,), dtype="float64"), ()), np.clip,
        ("float16", "float32", "int32"),
    ),
    OpCase(
        "clip", "special", lambda x: kn.clip(x, -1.0, 1.0), args(Arg((3, 5), "special")),
        lambda x: np.clip(x, -1.0, 1.0), FLOATS16,
    ),
    OpCase(
        "clip", "nan-bounds", _clip,
        fixed([-2.0, 0.5, 2.0, np.nan], [np.nan, -1.0, -1.0, -1.0], [1.0, np.nan, 1.0, 1.0]),
        np.clip, FLOATS16,
    ),
    OpCase(
        "clip", "min-above-max", lambda x: kn.clip(x, 1.0, -1.0), args((3, 5)),
        lambda x: np.clip(x, 1.0, -1.0),
    ),
)  # fmt: skip

# -- elementwise: binary -----------------------------------------------------------------------


def binary_rows(
    op, fn, ref, lhs="normal", rhs="normal", dtypes=FLOATS, int_dtypes=INTS, scalar=2.0
):
    """basic, broadcasting, 0-d, size-0, non-contiguous, Python-scalar (both sides), int."""
    a = lambda shape, layout="c": Arg(shape, lhs, layout)
    b = lambda shape, layout="c": Arg(shape, rhs, layout)
    rows(
        OpCase(op, "basic", fn, args(a((3, 5)), b((3, 5))), ref, dtypes),
        OpCase(op, "broadcast", fn, args(a((2, 1, 5)), b((3, 1))), ref, dtypes),
        OpCase(op, "0d", fn, args(a(()), b(())), ref, dtypes),
        OpCase(op, "0d-broadcast", fn, args(a(()), b((2, 3))), ref, dtypes),
        OpCase(op, "empty", fn, args(a((0, 3)), b((1, 3))), ref, dtypes),
        OpCase(op, "strided", fn, args(a((3, 5), "T"), b((3, 5), "S")), ref, dtypes),
        OpCase(
            op, "scalar-rhs", lambda x: fn(x, scalar), args(a((2, 3))), lambda x: ref(x, scalar),
            dtypes,
        ),
        OpCase(
            op, "scalar-lhs", lambda y: fn(scalar, y), args(b((2, 3))), lambda y: ref(scalar, y),
            dtypes,
        ),
    )  # fmt: skip
    if int_dtypes:
        rows(OpCase(op, "int", fn, args(a((2, 1, 5)), b((3, 5))), ref, int_dtypes))


binary_rows("add", kn.add, np.add, dtypes=FLOATS16, int_dtypes=("int8", "int32", "uint8"))
binary_rows("sub", kn.sub, np.subtract, int_dtypes=("int32", "int64", "int8"))
binary_rows("mul", kn.mul, np.multiply, dtypes=FLOATS16)
binary_rows(
    "div", kn.div, _default_float(np.true_divide), rhs="nonzero", int_dtypes=("int32", "uint8")
)
binary_rows("pow", kn.pow, np.power, lhs="positive", rhs="unit", int_dtypes=(), scalar=0.5)
binary_rows("floordiv", kn.floordiv, np.floor_divide, rhs="nonzero", scalar=3)
binary_rows("mod", kn.mod, np.remainder, rhs="nonzero", scalar=3)
binary_rows("maximum", kn.maximum, np.maximum, "small", "small", scalar=0)
binary_rows("minimum", kn.minimum, np.minimum, "small", "small", scalar=1.5)
binary_rows("equal", kn.eq, np.equal, "small", "small", scalar=1)
binary_rows("not_equal", kn.not_equal, np.not_equal, "small", "small", scalar=1.0)
binary_rows("less", kn.less, np.less, "small", "small", scalar=0)
binary_rows("less_equal", kn.less_equal, np.less_equal, "small", "small", scalar=0)
binary_rows("greater", kn.greater, np.greater, "small", "small", scalar=0.5)
binary_rows("greater_equal", kn.greater_equal, np.greater_equal, "small", "small", scalar=0)
binary_rows("logical_and", kn.logical_and, np.logical_and, dtypes=("bool",), scalar=True)
binary_rows("logical_or", kn.logical_or, np.logical_or, dtypes=("bool",), scalar=False)
rows(
    OpCase(
        "pow", "int", kn.pow, args(Arg((2, 3), "small"), Arg((3,), "count")), np.power,
        ("int32", "int64"),
    ),
    OpCase("pow", "int-scalar", lambda x: kn.pow(x, 3), args(Arg((2, 3), "small")),
           lambda x: x**3, ("int8", "int64", "float32")),
    OpCase(
        "add", "mixed-dtypes", kn.add, args((2, 3), Arg((3,), dtype="float64")), np.add,
        ("float16", "float32", "int32"),
    ),
    OpCase(
        "mul", "int-times-float", lambda x: kn.mul(x, 1.5), args((2, 3)),
        _default_float(lambda x: x * 1.5),
        ("int8", "int64", "uint8", "bool"),
    ),
    OpCase(
        "div", "int-by-int", kn.div, args((2, 3), Arg((2, 3), "nonzero")),
        _default_float(np.true_divide),
        ("int8", "int64"),
    ),
    OpCase(
        "logical_and", "floats", kn.logical_and, args(Arg((3, 5), "small"), Arg((5,), "small")),
        np.logical_and,
    ),
    OpCase(
        "logical_or", "floats", kn.logical_or, args(Arg((3, 5), "small"), Arg((5,), "small")),
        np.logical_or,
    ),
    OpCase(
        "equal", "bool", kn.eq, args(Arg((3, 5), "bool"), Arg((5,), "bool")), np.equal,
        ("bool",),
    ),
)  # fmt: skip

# -- composite elementwise functions ---------------------------------------------------------

_SQRT_2_OVER_PI = math.sqrt(2 / math.pi)
_gelu_ref = _float_ref(
    lambda x: 0.5 * x * (1 + np.vectorize(math.erf, otypes=[np.float64])(x / math.sqrt(2)))
)
_gelu_tanh_ref = _float_ref(
    lambda x: 0.5 * x * (1 + np.tanh(_SQRT_2_OVER_PI * (x + 0.044715 * x**3)))
)
rows(
    OpCase("erf", "gelu", kn.gelu, args((3, 5)), _gelu_ref),
    OpCase("erf", "gelu-0d", kn.gelu, args(()), _gelu_ref),
    OpCase(
        "tanh", "gelu-tanh", lambda x: kn.gelu(x, approximate="tanh"),
        args(Arg((3, 5), layout="T")), _gelu_tanh_ref,
    ),
    OpCase(
        "where", "leaky_relu", kn.leaky_relu, args((3, 5)),
        lambda x: np.where(x > 0, x, 0.01 * x), FLOATS16,
    ),
    OpCase(
        "where", "leaky_relu-slope", lambda x: kn.leaky_relu(x, 0.2), args((2, 0, 3)),
        lambda x: np.where(x > 0, x, 0.2 * x),
    ),
    OpCase(
        "softplus", "softplus-beta", lambda x: kn.softplus(x, beta=0.5), args((2, 3)),
        _softplus_ref(0.5),
    ),
)  # fmt: skip

# -- reductions ------------------------------------------------------------------------------


def reduce_rows(op, name, kind="normal", dtypes=FLOATS, int_dtypes=INTS, empty_axis=True):
    """axis None, negative axis, tuple of axes, keepdims, 0-d, size-0, transposed, int."""
    # kn.max/kn.min along a dim give (values, indices), as PyTorch's: amax/amin are the values
    f, ref = getattr(kn, {"max": "amax", "min": "amin"}.get(name, name)), getattr(np, name)

    def torch_ref(x, **kw):
        # PyTorch's dtypes: integer and bool sums and products in int64 (means of them need
        # a dtype: tests/test_torch_refusals.py)
        out = np.asarray(ref(x, **kw))
        if x.dtype.kind in "biu" and name in ("sum", "prod"):
            return out.astype(np.int64)
        return out

    def row(label, shape, dtypes=dtypes, layout="c", **kw):
        return OpCase(
            op, label, lambda x: f(x, **kw), args(Arg(shape, kind, layout)),
            lambda x: torch_ref(x, **kw), dtypes,
        )  # fmt: skip

    rows(
        row("all", (3, 5)),
        row("axis-neg", (2, 3, 5), axis=-1),
        row("axes", (2, 3, 5), axis=(0, 2)),
        row("axes-neg-keepdims", (2, 3, 5), axis=(-1, 0), keepdims=True),
        row("keepdims-all", (3, 5), keepdims=True),
        row("0d", ()),
        row("empty-kept-axis", (0, 3), axis=1),
        row("transposed", (3, 5), layout="T", axis=0),
        row("strided", (2, 3, 5), layout="S", axis=(1, 2)),
    )
    if empty_axis:
        rows(row("empty-reduced-axis", (0, 3), axis=0))
    if int_dtypes and name == "mean":  # PyTorch refuses integer means without a dtype
        rows(row("int", (3, 5), dtypes=int_dtypes, axis=-1, dtype=np.float32))
    elif int_dtypes:
        rows(row("int", (3, 5), dtypes=int_dtypes, axis=-1))


reduce_rows("reduce_sum", "sum", dtypes=FLOATS16, int_dtypes=("int8", "int32", "uint8", "bool"))
reduce_rows("reduce_mean", "mean", empty_axis=False, int_dtypes=("int32", "bool"))
reduce_rows("reduce_prod", "prod", "unit", int_dtypes=("int8", "int64"))
reduce_rows("reduce_max", "max", "small", empty_axis=False, int_dtypes=("int8", "uint8", "bool"))
reduce_rows("reduce_min", "min", "small", empty_axis=False)


def sum_to_row(label, shape, target, layout="c"):
    """autodiff's sum of a cotangent back to an operand's shape where a size is known only at
    run time (kiln/ops/reduce.py); on static shapes, NumPy's sums over the same axes"""
    lead = len(shape) - len(target)
    axes = (*range(lead), *(lead + i for i, t in enumerate(target) if t == 1 != shape[lead + i]))
    return OpCase(
        "sum_to", label, lambda x: bind(REGISTRY["sum_to"], x, shape=target),
        args(Arg(shape, layout=layout)),
        lambda x: np.sum(x, axis=axes, keepdims=True).reshape(target), FLOATS16,
    )  # fmt: skip


rows(
    sum_to_row("lead-and-stretched", (2, 5, 3), (5, 1)),
    sum_to_row("same", (3, 5), (3, 5), "T"),
    sum_to_row("to-0d", (2, 3), ()),
    sum_to_row("empty", (0, 3), (1, 3)),
)


def arg_rows(op, name):
    f, ref = getattr(kn, name), getattr(np, name)

    def row(label, shape, dtypes=FLOATS16, layout="c", **kw):
        return OpCase(
            op, label, lambda x: f(x, **kw), args(Arg(shape, "distinct", layout)),
            lambda x: np.asarray(ref(x, **kw)), dtypes,
        )  # fmt: skip

    rows(
        row("all", (3, 5)),
        row("axis-neg", (2, 3, 5), axis=-2),
        row("keepdims", (2, 3, 5), axis=2, keepdims=True),
        row("all-keepdims", (3, 5), keepdims=True),
        row("0d", ()),
        row("empty-kept-axis", (0, 3), axis=1),
        row("transposed", (3, 5), layout="T", axis=0),
        row("int", (3, 5), dtypes=("int8", "int64", "uint8"), axis=1),
        OpCase(op, "ties", lambda x: f(x, axis=0), fixed(np.array([[1, 2], [1, 2]])),
               lambda x: ref(x, axis=0), INTS),
    )  # fmt: skip


arg_rows("argmax", "argmax")
arg_rows("argmin", "argmin")


def _var_ref(name, **kw):
    return lambda x: np.asarray(getattr(np, name)(x, **kw))


def _logsumexp_ref(**kw):
    return _float_ref(lambda x: scipy.special.logsumexp(x, **kw))


rows(
    OpCase("reduce_mean", "var", kn.var, args((3, 5)), _var_ref("var", ddof=1)),  # correction=1
    OpCase(
        "reduce_mean", "var-axis-keepdims", lambda x: kn.var(x, axis=-1, keepdims=True),
        args(Arg((2, 3, 5), layout="T")), _var_ref("var", axis=-1, keepdims=True, ddof=1),
    ),
    OpCase(
        "reduce_mean", "var-ddof", lambda x: kn.var(x, axis=0, ddof=1), args((5, 3)),
        _var_ref("var", axis=0, ddof=1),
    ),
    OpCase("sqrt", "std", kn.std, args((3, 5)), _var_ref("std", ddof=1)),  # correction=1
    OpCase(
        "sqrt", "std-axes", lambda x: kn.std(x, axis=(0, -1)), args((2, 3, 5)),
        _var_ref("std", axis=(0, -1), ddof=1),
    ),
    OpCase("reduce_sum", "logsumexp", kn.logsumexp, args((3, 5)), _logsumexp_ref()),
    OpCase(
        "reduce_sum", "logsumexp-axis", lambda x: kn.logsumexp(x, axis=-1), args((2, 3, 5)),
        _logsumexp_ref(axis=-1),
    ),
    OpCase(
        "reduce_sum", "logsumexp-keepdims", lambda x: kn.logsumexp(x, axis=0, keepdims=True),
        args(Arg((3, 5), layout="S")), _logsumexp_ref(axis=0, keepdims=True),
    ),
    OpCase(
        "reduce_sum", "logsumexp-large", lambda x: kn.logsumexp(x, axis=1),
        fixed(np.array([[1000.0, 1000.0], [-1000.0, -1001.0]])), _logsumexp_ref(axis=1),
    ),
    OpCase(
        "reduce_sum", "logsumexp-inf", lambda x: kn.logsumexp(x, axis=1),
        fixed(np.array([[-np.inf, -np.inf], [np.inf, 0.0]])),
        lambda x: np.array([-np.inf, np.inf], x.dtype),
    ),
)  # fmt: skip

# -- movement --------------------------------------------------------------------------------


def move_row(op, label, fn, ref, make_args, dtypes=FLOATS):
    return OpCase(op, label, fn, make_args, ref, dtypes)


def reshape_row(label, shape, target, layout="c", dtypes=FLOATS):
    return move_row(
        "reshape", label, lambda x: kn.reshape(x, target), lambda x: np.reshape(x, target),
        args(Arg(shape, layout=layout)), dtypes,
    )  # fmt: skip


rows(
    reshape_row("basic", (3, 10), (5, 6), dtypes=("float32", "int64", "bool")),
    reshape_row("minus1", (2, 3, 5), (-1, 5)),
    reshape_row("minus1-last", (2, 3, 5), (3, -1)),
    reshape_row("0d-to-1x1", (), (1, 1)),
    reshape_row("to-0d", (1, 1), ()),
    reshape_row("empty", (0, 3), (3, 0)),
    reshape_row("empty-minus1", (2, 0, 3), (-1, 3)),
    reshape_row("transposed", (5, 6), (30,), "T"),
    reshape_row("strided", (2, 3, 5), (6, 5), "S"),
    move_row(
        "reshape", "flatten", lambda x: kn.flatten(x, 1), lambda x: x.reshape(2, 15),
        args((2, 3, 5)),
    ),
    move_row(
        "reshape", "flatten-range", lambda x: kn.flatten(x, 0, -2), lambda x: x.reshape(6, 5),
        args(Arg((2, 3, 5), layout="T")),
    ),
    move_row("reshape", "flatten-0d", kn.flatten, lambda x: x.reshape(1), args(())),
    move_row("reshape", "squeeze", kn.squeeze, np.squeeze, args((1, 3, 1, 5))),
    move_row(
        "reshape", "squeeze-axis", lambda x: kn.squeeze(x, -2), lambda x: np.squeeze(x, -2),
        args((1, 3, 1, 5)),
    ),
    move_row(
        "reshape", "unsqueeze", lambda x: kn.unsqueeze(x, -1), lambda x: np.expand_dims(x, -1),
        args((3, 5)),
    ),
    move_row(
        "reshape", "unsqueeze-0d", lambda x: kn.unsqueeze(x, 0), lambda x: np.expand_dims(x, 0),
        args(()), ("float32", "int32"),
    ),
)  # fmt: skip


def transpose_row(label, shape, axes, layout="c", dtypes=FLOATS):
    return move_row(
        "transpose", label, lambda x: x.T if axes is None else kn.permute(x, axes),
        lambda x: np.transpose(x, axes),
        args(Arg(shape, layout=layout)), dtypes,
    )  # fmt: skip


rows(
    transpose_row("default", (3, 5), None, dtypes=("float32", "int8", "bool")),
    transpose_row("perm", (2, 3, 5), (1, 2, 0)),
    transpose_row("perm-neg", (2, 3, 5), (-1, 0, -2)),
    transpose_row("0d", (), None),
    transpose_row("empty", (0, 3, 2), (2, 0, 1)),
    transpose_row("transposed", (3, 5), (1, 0), "T"),
    transpose_row("strided", (2, 3, 5), None, "S"),
    move_row("transpose", "permute", lambda x: kn.permute(x, 2, 0, 1),
             lambda x: np.transpose(x, (2, 0, 1)), args((2, 3, 5))),
    move_row("transpose", "permute-tuple", lambda x: kn.permute(x, (1, 0)), np.transpose,
             args(Arg((3, 5), layout="T"))),
)  # fmt: skip


def broadcast_row(label, shape, target, layout="c", dtypes=FLOATS):
    return move_row(
        "broadcast_to", label, lambda x: kn.broadcast_to(x, target),
        lambda x: np.broadcast_to(x, target), args(Arg(shape, layout=layout)), dtypes,
    )  # fmt: skip


rows(
    broadcast_row("basic", (5,), (3, 5), dtypes=("float32", "int32", "bool")),
    broadcast_row("inner", (3, 1), (2, 3, 5)),
    broadcast_row("0d", (), (2, 3)),
    broadcast_row("0d-to-0d", (), ()),
    broadcast_row("empty", (1, 3), (0, 3)),
    broadcast_row("same", (2, 3), (2, 3)),
    broadcast_row("transposed", (3, 1), (5, 3, 2), "T"),
)


def bitcast_row(label, shape, dtype, layout="c", dtypes=FLOATS):
    """`x.view(dtype)` (the bytes read as dtype): NumPy's `view` of a contiguous copy."""
    return move_row(
        "bitcast", label, lambda x: x.view(dtype),
        lambda x: np.ascontiguousarray(x).view(dtype), args(Arg(shape, layout=layout)), dtypes,
    )  # fmt: skip


rows(
    bitcast_row("same-size", (3, 4), np.int32, dtypes=("float32",)),
    bitcast_row("smaller", (2, 3), np.float16, dtypes=("float32", "int32")),
    bitcast_row("larger", (3, 4), np.int64, dtypes=("float32", "int32")),
    bitcast_row("bytes", (2,), np.uint8, dtypes=("float64", "int64")),
    bitcast_row("transposed-same-size", (3, 4), np.uint32, "T", dtypes=("float32",)),
)


def index_row(label, shape, key, layout="c", dtypes=FLOATS):
    return move_row(
        "index", label, lambda x: kn.getitem(x, key), lambda x: x[key],
        args(Arg(shape, layout=layout)), dtypes,
    )  # fmt: skip


def index_op_row(label, shape, key, layout="c", dtypes=FLOATS):
    """A row of the `index` primitive itself, for specs `x[...]` refuses (negative steps:
    PyTorch's indexing has none; kiln's reflect pad and flips use the primitive's)."""
    return move_row(
        "index", label, lambda x: bind(REGISTRY["index"], x, spec=spec_of(key)),
        lambda x: x[key], args(Arg(shape, layout=layout)), dtypes,
    )  # fmt: skip


rows(
    index_row("int", (3, 5), IX[1], dtypes=("float32", "int64", "bool")),
    index_row("int-neg", (3, 5), IX[-1, -2]),
    index_row("slice", (3, 5), IX[1:, :3]),
    index_op_row("slice-neg-step", (3, 5), IX[::-1, ::-2]),
    index_row("slice-neg-bounds", (2, 3, 5), IX[:, -2:, -4:-1:2]),
    index_row("slice-out-of-range", (3, 5), IX[1:100, -100:2]),
    index_row("slice-empty", (3, 5), IX[2:1]),
    index_row("newaxis", (3, 5), IX[None, :, None]),
    index_row("ellipsis", (2, 3, 5), IX[..., 1]),
    index_row("ellipsis-newaxis", (2, 3, 5), IX[0, ..., None, ::2]),
    index_row("0d-newaxis", (), IX[None]),
    index_row("0d-empty-tuple", (), IX[None, ...]),
    index_row("empty", (0, 3), IX[:, 1]),
    index_row("transposed", (3, 5), IX[::2, 1], "T"),
    index_op_row("strided", (2, 3, 5), IX[1, ::-1], "S"),
    move_row("split", "split", lambda x: kn.split(x, 2), lambda x: np.split(x, 2), args((4, 3))),
    move_row(
        "split", "split-indices", lambda x: kn.split(x, [1, 2, 2], axis=-1),  # sizes
        lambda x: np.split(x, [1, 3], axis=-1), args(Arg((2, 5), layout="T")),
    ),
    move_row(
        "split", "split-empty-part", lambda x: kn.split(x, [0, 2, 1]),  # PyTorch's sizes
        lambda x: np.split(x, [0, 2]), args((3, 2)),
    ),
)  # fmt: skip


def gather_row(label, shape, idx, axis, layout="c", dtypes=FLOATS, fn=None):
    idx = np.asarray(idx, dtype=np.int64)
    return move_row(
        "gather", label, fn or (lambda x, i: kn.take(x, i, axis=axis)),
        lambda x, i: np.take(x, i, axis=axis), fixed_idx(Arg(shape, layout=layout), idx),
        dtypes,
    )  # fmt: skip


def fixed_idx(x_arg, *indices):
    """`make_args`: a random array then fixed index arrays."""
    make_x = args(x_arg)

    def make_args(rng, dtype):
        return [*make_x(rng, dtype), *(i.copy() for i in indices)]

    return make_args


rows(
    gather_row("basic", (5, 3), [4, 0, 2, 2], 0, dtypes=("float32", "int32", "bool")),
    gather_row("axis-neg-2d-idx", (3, 5), [[0, 4], [1, 1], [3, 2]], -1),
    # x[idx] counts negative indices from the end (NumPy's and PyTorch's indexing);
    # kn.index_select refuses them, as PyTorch's does (tests/test_index_checks.py).
    gather_row("getitem-neg-idx", (5, 3), [-1, -5, 0], 0, fn=lambda x, i: kn.getitem(x, i)),
    gather_row("0d-idx", (3, 5), 2, 1),
    gather_row("empty-idx", (3, 5), np.zeros((0,), np.int64), 1),
    gather_row("empty-x", (0, 5), [1, 4], 1),
    gather_row("transposed", (3, 5), [2, 0], 0, "T"),
    gather_row("getitem-array", (3, 5), [4, 0], 1, fn=lambda x, i: kn.getitem(x, IX[:, i])),
    OpCase(
        "gather", "int32-idx", lambda x, i: kn.index_select(x, 0, i),
        fixed_idx(Arg((5, 2)), np.array([3, 1], np.int32)),
        lambda x, i: np.take(x, i, axis=0),
    ),
)  # fmt: skip


def take_along_row(label, shape, idx, axis, layout="c", dtypes=FLOATS):
    idx = np.asarray(idx, dtype=np.int64)
    return move_row(
        "take_along_axis", label, lambda x, i: kn.take_along_axis(x, i, axis),
        lambda x, i: np.take_along_axis(x, i, axis), fixed_idx(Arg(shape, layout=layout), idx),
        dtypes,
    )  # fmt: skip


rows(
    take_along_row("basic", (3, 5), [[4, 0], [1, 1], [0, 3]], 1, dtypes=("float32", "int64")),
    take_along_row("axis0", (3, 5), [[2, 0, 1, 1, 0]], 0),
    take_along_row("axis-neg-broadcast", (2, 3, 5), [[[4, 1]], [[0, 2]]], -1),
    take_along_row("empty", (3, 5), np.zeros((3, 0), np.int64), 1),
    take_along_row("transposed", (3, 5), [[1], [0], [2]], -1, "T"),
)


# -- scatters: the transposes of index, gather and take_along_axis (no frontend function) --------


def spec_of(key) -> tuple:
    """kiln's spec of a basic index tuple (ints, slices, None; no Ellipsis)."""
    items = []
    for k in key if isinstance(key, tuple) else (key,):
        if k is None:
            items.append(("newaxis",))
        elif isinstance(k, slice):
            items.append(("slice", k.start, k.stop, k.step))
        else:
            items.append(("int", k))
    return tuple(items)


def index_scatter_row(label, shape, key, ct_layout="c", dtypes=FLOATS):
    def reference(ct):
        z = np.zeros(shape, ct.dtype)
        z[key] = ct
        return z

    ct_shape = np.empty(shape)[key].shape
    return OpCase(
        "index_scatter", label,
        lambda ct: bind(REGISTRY["index_scatter"], ct, spec=spec_of(key), shape=shape),
        args(Arg(ct_shape, layout=ct_layout)), reference, dtypes,
    )  # fmt: skip


rows(
    index_scatter_row("basic", (3, 5), IX[1:, ::2], dtypes=("float32", "float64", "int32")),
    index_scatter_row("int-neg-step", (2, 3, 5), IX[-1, ::-1]),
    index_scatter_row("newaxis", (3, 5), IX[None, 2]),
    index_scatter_row("0d", (), IX[None]),
    index_scatter_row("empty", (3, 5), IX[2:1]),
    index_scatter_row("transposed", (5, 3), IX[1:4], "T"),
)


def _scatter_add_ref(axis, shape):
    def reference(ct, idx):
        z = np.zeros(shape, ct.dtype)
        zm = np.moveaxis(z, axis, 0)  # a view: writes land in z
        cm = np.moveaxis(ct, list(range(axis, axis + idx.ndim)), list(range(idx.ndim)))
        for j in np.ndindex(idx.shape):
            zm[idx[j]] += cm[j]
        return z

    return reference


def scatter_add_row(label, shape, idx, axis, ct_layout="c", dtypes=FLOATS, wrap=False):
    idx = np.asarray(idx, np.int64)
    ct_shape = (*shape[:axis], *idx.shape, *shape[axis + 1 :])
    return OpCase(
        "scatter_add", label,
        lambda ct, i: bind(
            REGISTRY["scatter_add"], ct, i, axis=axis, shape=shape, wrap_negative=wrap
        ),
        fixed_idx(Arg(ct_shape, layout=ct_layout), idx), _scatter_add_ref(axis, shape), dtypes,
    )  # fmt: skip


rows(
    scatter_add_row("basic", (5, 3), [4, 0, 2, 2], 0, dtypes=("float32", "float64", "int64")),
    scatter_add_row("axis1-2d-idx-repeats", (3, 5), [[0, 4], [1, 1], [4, 4]], 1),
    scatter_add_row("neg-idx", (5, 3), [-1, 4, 0], 0, wrap=True),  # the transpose of x[idx]
    scatter_add_row("0d-idx", (3, 5), 2, 1),
    scatter_add_row("empty-idx", (3, 5), np.zeros((0,), np.int64), 1),
    scatter_add_row("transposed", (2, 3, 5), [2, 0], 1, "T"),
)


def _scatter_along_ref(axis, shape):
    def reference(ct, idx):
        z = np.zeros(shape, ct.dtype)
        idx = np.broadcast_to(idx, ct.shape)
        for p in np.ndindex(ct.shape):
            q = [0 if shape[a] == 1 else p[a] for a in range(len(p))]
            q[axis] = idx[p]
            z[tuple(q)] += ct[p]
        return z

    return reference


def scatter_along_row(label, shape, idx, axis, ct_shape=None, dtypes=FLOATS):
    idx = np.asarray(idx, np.int64)
    ct_shape = ct_shape or np.broadcast_shapes(
        tuple(1 if a == axis else d for a, d in enumerate(shape)), idx.shape
    )[:axis] + idx.shape[axis : axis + 1] + tuple(shape[axis + 1 :])
    return OpCase(
        "scatter_along_axis", label,
        lambda ct, i: bind(REGISTRY["scatter_along_axis"], ct, i, axis=axis, shape=shape),
        fixed_idx(Arg(ct_shape), idx), _scatter_along_ref(axis, shape), dtypes,
    )  # fmt: skip


rows(
    scatter_along_row("basic", (3, 5), [[4, 0], [1, 1], [0, 3]], 1, dtypes=FLOATS16),
    scatter_along_row("axis0", (3, 5), [[2, 0, 1, 1, 0], [2, 2, 2, 2, 2]], 0),
    scatter_along_row("broadcast-idx", (2, 3, 5), [[[4, 1]], [[0, 4]]], -1 % 3, (2, 3, 2)),
    scatter_along_row("empty", (3, 5), np.zeros((3, 0), np.int64), 1),
)


def concat_row(label, shapes, axis, dtypes=FLOATS):
    return OpCase(
        "concat", label, lambda *xs: kn.concat(xs, axis), args(*shapes),
        lambda *xs: np.concatenate(xs, axis), dtypes,
    )  # fmt: skip


rows(
    concat_row("basic", [(2, 3), (1, 3)], 0, dtypes=("float32", "int32", "bool")),
    concat_row("three-axis-neg", [(2, 3), (2, 1), (2, 5)], -1),
    concat_row("one", [(2, 3)], 1),
    concat_row("empty-part", [(0, 3), (2, 3)], 0),
    concat_row("all-empty", [(2, 0), (2, 0)], 1),
    OpCase(
        "concat", "mixed-dtypes", lambda a, b: kn.concat([a, b], 1),
        args((2, 3), Arg((2, 2), dtype="int32")),
        # PyTorch's promotion: a float tensor with an int32 one stays the float's dtype
        lambda a, b: np.concatenate([a, b.astype(kn.result_type(a, b))], 1),
    ),
    OpCase(
        "concat", "non-contiguous", lambda a, b: kn.concat([a, b], 0),
        args(Arg((3, 5), layout="T"), Arg((2, 5), layout="S")),
        lambda a, b: np.concatenate([a, b], 0),
    ),
    OpCase(
        "concat", "stack", lambda a, b: kn.stack([a, b]), args((3, 5), (3, 5)),
        lambda a, b: np.stack([a, b]),
    ),
    OpCase(
        "concat", "stack-axis-neg", lambda a, b, c: kn.stack([a, b, c], -1),
        args((2, 3), Arg((2, 3), layout="T"), (2, 3)), lambda *xs: np.stack(xs, -1),
    ),
    OpCase("concat", "stack-0d", lambda a, b: kn.stack([a, b]), args((), ()),
           lambda a, b: np.stack([a, b])),
)  # fmt: skip


def pad_row(label, shape, width, value=0, layout="c", dtypes=FLOATS):
    return move_row(
        "pad", label, lambda x: kn.pad(x, width, value),
        lambda x: np.pad(x, width, constant_values=value), args(Arg(shape, layout=layout)), dtypes,
    )  # fmt: skip


rows(
    pad_row("basic", (3, 5), ((1, 2), (0, 3)), dtypes=("float32", "int32")),
    pad_row("value", (2, 3), ((0, 1), (2, 0)), 1.5),
    pad_row("int-value", (2, 3), 1, 7, dtypes=("int8", "int64")),
    pad_row("scalar-width", (2, 3, 5), 1),
    pad_row("empty", (0, 3), ((1, 1), (0, 0)), -1.0),
    pad_row("transposed", (3, 5), ((2, 0), (1, 1)), layout="T"),
)


def tile_row(label, shape, reps, layout="c", dtypes=FLOATS):
    return move_row(
        "tile", label, lambda x: kn.tile(x, reps), lambda x: np.tile(x, reps),
        args(Arg(shape, layout=layout)), dtypes,
    )  # fmt: skip


rows(
    tile_row("basic", (2, 3), (2, 1), dtypes=("float32", "int64", "bool")),
    tile_row("int-reps", (2, 3), 3),
    tile_row("more-reps", (2, 3), (2, 1, 2)),
    tile_row("fewer-reps", (2, 3, 5), (2,)),
    tile_row("zero-rep", (2, 3), (0, 2)),
    tile_row("0d", (), (2, 3)),
    tile_row("strided", (3, 5), (1, 2), "S"),
)


def one_hot_row(label, ids, depth, out_dtype="float32", dtypes=INTS):
    return OpCase(
        "one_hot", label, lambda i: kn.one_hot(i, depth, out_dtype), fixed(np.asarray(ids)),
        lambda i: (i[..., None] == np.arange(depth)).astype(out_dtype), dtypes,
    )  # fmt: skip


rows(
    one_hot_row("basic", [0, 3, 1, 1, 2], 4, dtypes=("int8", "int32", "int64", "uint8")),
    one_hot_row("repeats", [3, 3, 0, 1, 3], 4),  # ids out of range raise: test_index_checks.py
    one_hot_row("2d-int32-out", [[0, 2, 1], [2, 2, 0]], 3, "int32"),
    one_hot_row("0d", 2, 5, "float64"),
    one_hot_row("empty", np.zeros((0, 2), np.int64), 3),
    one_hot_row("depth-0", np.zeros((0,), np.int64), 0),
)

# -- linear algebra ----------------------------------------------------------------------------


def matmul_row(label, a, b, dtypes=FLOATS, fn=kn.matmul, ref=np.matmul, op="matmul", **tol):
    a, b = (s if isinstance(s, Arg) else Arg(s) for s in (a, b))
    return OpCase(op, label, fn, args(a, b), ref, dtypes, **tol)


rows(
    matmul_row("basic", (3, 5), (5, 2), dtypes=FLOATS16, rtol=1e-2, atol=1e-2),
    matmul_row("batched", (2, 3, 5), (2, 5, 4)),
    matmul_row("broadcast-batch", (2, 1, 3, 5), (4, 5, 2)),
    matmul_row("broadcast-2d", (3, 5), (2, 5, 4)),
    matmul_row("vec-mat", (5,), (2, 5, 3)),
    matmul_row("mat-vec", (2, 3, 5), (5,)),
    matmul_row("vec-vec", (5,), (5,)),
    matmul_row("empty-contraction", (3, 0), (0, 5)),
    matmul_row("empty-batch", (0, 3, 5), (5, 2)),
    matmul_row("int", (3, 5), (5, 2), dtypes=("int32", "int64", "int8")),
    # kn.matmul refuses two dtypes, as PyTorch's does (tests/test_torch_fixes.py); the matmul
    # op itself promotes as NumPy does, for graphs that kiln builds (bound here directly)
    matmul_row(
        "mixed-dtypes",
        (3, 5),
        Arg((5, 2), dtype="float64"),
        dtypes=("float32", "int32"),
        fn=lambda a, b: kn.frontend.core.call("matmul", *kn.frontend.core.lift(a, b)),
    ),
    matmul_row("transposed", Arg((3, 5), layout="T"), Arg((2, 5, 4), layout="T")),
    matmul_row("strided", Arg((3, 5), layout="S"), Arg((5, 2), layout="S")),
    # kn.dot takes two 1-D tensors only, as torch.dot (NumPy's dot of a matrix and a vector,
    # or of a 0-d value, is refused: tests/ports/test_port_pt_linalg_products.py); those
    # shapes are matmul's
    matmul_row("dot", (5,), (5,), fn=kn.dot, ref=np.dot),
    matmul_row("mat-vec-2d", (3, 5), (5,)),
    matmul_row("3d-mat", (2, 3, 5), (5, 4)),
)


def addmm_row(label, x, a, b, beta=1.0, alpha=1.0, **tol):
    """torch.addmm's formula: beta * input + alpha * (mat1 @ mat2)."""
    x, a, b = (s if isinstance(s, Arg) else Arg(s) for s in (x, a, b))
    return OpCase(
        "addmm", label, lambda x, a, b: kn.addmm(x, a, b, beta=beta, alpha=alpha), args(x, a, b),
        lambda x, a, b: beta * x + alpha * (a @ b), FLOATS, **tol,
    )  # fmt: skip


rows(
    addmm_row("basic", (3, 4), (3, 5), (5, 4)),
    addmm_row("scaled", (3, 4), (3, 5), (5, 4), beta=0.5, alpha=-2.0),
    addmm_row("bias-row", (4,), (3, 5), (5, 4), alpha=0.25),
    addmm_row("transposed", (4, 3), Arg((4, 5), layout="T"), Arg((5, 3), layout="T")),
    addmm_row("strided", (3, 2), Arg((3, 5), layout="S"), Arg((5, 2), layout="S"), beta=2.0),
)

# -- random ------------------------------------------------------------------------------------
# kiln's documented stream: the k-th random node made after `kn.manual_seed(s)` gets the seed
# `SeedSequence((s, k)).generate_state(1, uint64)[0] >> 1`, and its n-th run draws from
# `default_rng((seed, n))` (float16 values are drawn as float32). The tests seed with 0 and
# build one graph per check, so a row's node is the first one: k = 0, n = 0. Statistics are
# checked separately (test_ops.py::test_random_statistics).


def first_stream():
    seed = int(np.random.SeedSequence((0, 0)).generate_state(1, np.uint64)[0] >> 1)
    return np.random.default_rng((seed, 0))


def _draw(kind, shape, dtype):
    native = dtype if dtype in ("float32", "float64") else "float32"
    rng = first_stream()
    values = rng.standard_normal(shape, native) if kind == "normal" else rng.random(shape, native)
    return values.astype(dtype)


def random_rows(dtype, shape, label):
    d = np.dtype(dtype)
    rows(
        OpCase(
            "random_normal", label, lambda: kn.random.normal(shape, 1.0, 2.0, dtype),
            fixed(), lambda: _draw("normal", shape, dtype) * d.type(2.0) + d.type(1.0), (dtype,),
        ),
        OpCase(
            "random_uniform", label, lambda: kn.random.uniform(shape, -1.0, 3.0, dtype),
            fixed(), lambda: _draw("uniform", shape, dtype) * d.type(4.0) - d.type(1.0), (dtype,),
        ),
        OpCase(
            "random_bernoulli", label, lambda: kn.random.bernoulli(shape, 0.3, dtype),
            fixed(), lambda: (first_stream().random(shape) < 0.3).astype(dtype), (dtype,),
        ),
    )  # fmt: skip


for _dtype in FLOATS16:
    random_rows(_dtype, (40, 50), "basic")
random_rows("float32", (), "0d")
random_rows("float64", (0, 3), "empty")
rows(
    OpCase(
        "random_bernoulli", "int", lambda: kn.random.bernoulli((3, 5), 0.5, "int32"), fixed(),
        lambda: (first_stream().random((3, 5)) < 0.5).astype("int32"), ("int32",),
    ),
    OpCase(
        "random_normal", "added", lambda x: x + kn.random.normal(x.shape, dtype=x.dtype),
        args((3, 5)), lambda x: x + _draw("normal", (3, 5), x.dtype.name),
    ),
)  # fmt: skip

_COUNTS = [[0.0, 1.0, 5.0, 10.0], [3.0, 7.0, 2.0, 40.0]]
_PROBS = [[0.1, 0.5, 0.9, 1.0], [0.0, 0.3, 0.7, 0.25]]
rows(
    OpCase(
        "random_poisson", "basic", lambda x: kn.poisson(x), args(Arg((4, 5), kind="positive")),
        lambda x: first_stream().poisson(x.astype(np.float64)).astype(x.dtype),
        ("float32", "float64"),
    ),
    OpCase(
        "random_poisson", "0d", lambda x: kn.poisson(x), args(Arg((), kind="positive")),
        lambda x: np.asarray(first_stream().poisson(x.astype(np.float64))).astype(x.dtype),
    ),
    OpCase(
        "random_binomial", "basic", lambda c, p: kn.binomial(c, p), fixed(_COUNTS, _PROBS),
        lambda c, p: first_stream().binomial(c.astype(np.int64), p.astype(np.float64)).astype(
            c.dtype), ("float32", "float64"),
    ),
    OpCase(
        "random_binomial", "broadcast", lambda c, p: kn.binomial(c, p),
        fixed(_COUNTS, [0.5, 0.2, 0.9, 0.6]),
        lambda c, p: first_stream().binomial(
            c.astype(np.int64), np.broadcast_to(p.astype(np.float64), c.shape)).astype(c.dtype),
    ),
)  # fmt: skip

_ALPHAS = [[0.5, 2.0, 3.0, 20.0, 20.0], [1.0, 9.0, 0.7, 5.0, 40.0]]
_GAMMA_XS = [[0.3, 1.5, 4.0, 21.0, 10.0], [0.9, 3.0, 2.0, 0.5, 45.0]]
# torch 2.13's `torch._standard_gamma_grad(_ALPHAS, _GAMMA_XS)` in float64 (each of its regimes:
# x < 0.8, alpha > 8 near and far from x, the rational approximation)
_GAMMA_GRADS = [
    [1.0098019827369256, 0.9366198345654156, 1.2164728454122222, 1.033152750373495,
     0.6988779184588811],
    [1.1118473396701254, 0.5593420120424198, 2.0273430212914065, 0.2630299671397703,
     1.0644764560634652],
]  # fmt: skip
rows(
    OpCase(
        "random_gamma", "basic", lambda x: kn._standard_gamma(x),
        args(Arg((4, 5), kind="positive")),
        lambda x: first_stream().standard_gamma(x.astype(np.float64)).astype(x.dtype),
        ("float32", "float64"),
    ),
    OpCase(
        "standard_gamma_grad", "regimes", lambda a, x: kn._standard_gamma_grad(a, x),
        fixed(_ALPHAS, _GAMMA_XS), lambda a, x: np.asarray(_GAMMA_GRADS, a.dtype),
        ("float32", "float64"),
    ),
)  # fmt: skip

# -- state -------------------------------------------------------------------------------------
# variable, assign and group have dedicated tests (test_ops.py: TESTED_ELSEWHERE).

rows(
    OpCase("stop_gradient", "basic", stop_gradient, args((3, 5)), lambda x: x, FLOATS16),
    OpCase("stop_gradient", "0d", stop_gradient, args(()), lambda x: x, ("float32", "int64")),
    OpCase("stop_gradient", "transposed", stop_gradient, args(Arg((3, 5), layout="T")),
           lambda x: x),
    # with_grad: silu's value, its gradient by the silu formula (kiln/nn/functional_act.py)
    OpCase("with_grad", "silu", _silu_with_grad, args((3, 5)), lambda x: x / (1 + np.exp(-x))),
    OpCase("placeholder", "identity", lambda x: x, args((3, 5)), lambda x: x,
           ("float32", "int8", "bool")),
    OpCase(
        "constant", "added", lambda x: kn.add(x, kn.constant(np.arange(5), dtype=x.dtype)),
        args((3, 5)), lambda x: x + np.arange(5, dtype=x.dtype), ("float32", "int64"),
    ),
    OpCase("constant", "alone", lambda: kn.constant(np.arange(6.0).reshape(2, 3)), fixed(),
           lambda: np.arange(6.0).reshape(2, 3), ("float64",)),
    OpCase("constant", "python-float", lambda: kn.constant(1.5), fixed(),
           lambda: np.array(1.5, np.float32), ("float32",)),
)  # fmt: skip

# -- nn: rows in op_table_nn.py (conv2d, pooling) and op_table_nn_grad.py (their gradients) -----

NN_TABLES = (
    "op_table_nn",
    "op_table_nn_grad",
    "op_table_fused",
    "op_table_torch",
    "op_table_bitwise",
    "op_table_index",
    "op_table_control",
    "op_table_linalg",
    "op_table_special",
    "op_table_epilogue",
    "op_table_complex",
    "op_table_fft",
)


def nn_rows(module_name: str) -> list:
    """The CASES of `module_name`, or none while it does not exist: the coverage test then
    names every op without rows."""
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        if e.name != module_name:
            raise
        return []
    return list(module.CASES)


def _as_opcase(row) -> OpCase:
    """A row as this module's OpCase: op_table_nn defines a copy of the class for when it is
    imported first (it then reaches this module mid-import), so match by fields."""
    if isinstance(row, OpCase):
        return row
    return OpCase(**{f.name: getattr(row, f.name) for f in fields(OpCase)})


NN_CASES = [_as_opcase(row) for name in NN_TABLES for row in nn_rows(name)]
CASES.extend(NN_CASES)
