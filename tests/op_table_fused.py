"""Op-table rows for `fused` (appended to tests/op_table.py): each row builds one fused node
directly from a program and checks it against the same equations written in NumPy.

Rows cover 0-d, size-0, broadcasting, non-contiguous inputs, mixed dtypes, attrs, a value used
twice, and outputs over 1 MiB, for the cache-blocked path (blocks along the first axis, and
along an inner axis when one row is larger than a block).
"""

from __future__ import annotations

import numpy as np
import scipy.special
from op_case import OpCase

from kiln.ops.core import apply


def IN(k):
    """A program reference to external input k."""
    return ("in", k)


def EQ(j):
    """A program reference to equation j's value."""
    return ("eq", j)


def eq(op, *refs, **attrs):
    return (op, refs, tuple(sorted(attrs.items())))


def fused(*program):
    """`fn` of a row: one fused node running `program` (it returns its last equation)."""
    return lambda *xs: apply("fused", *xs, program=tuple(program), outputs=(len(program) - 1,))


def fused_results(outputs, *program):
    """`fn` of a row with several results: one fused node running `program` whose results
    are the equations `outputs`; in graph mode its tuple is read by one `get` node each."""
    from kiln.graph.core import Symbol
    from kiln.graph.opdef import REGISTRY
    from kiln.ops.core import bind
    from kiln.ops.fused import compiled, result_shapes

    attrs = {"program": tuple(program), "outputs": outputs}

    def fn(*xs):
        if not any(isinstance(x, Symbol) for x in xs):  # eager: the kernel's tuple, on the
            return _eager_results(xs, attrs)  # device of the Tensors (Tensors in, Tensors out)
        result = apply("fused", *xs, **attrs)
        prog = compiled(tuple(program), outputs)
        shapes = result_shapes(prog, [x.shape for x in xs])
        dtypes = prog.signature(tuple(x.dtype for x in xs)).out_dtypes
        return [bind(REGISTRY["get"], result, index=k, shape=s, dtype=d)
                for k, (s, d) in enumerate(zip(shapes, dtypes))]  # fmt: skip

    return fn


def _eager_results(xs, attrs) -> list:
    """The fused kernel run now on NumPy arrays or Tensors (on the first Tensor's device, the
    others moved there), as the planner runs it; Tensors give Tensors on that device."""
    from kiln.eager.tensor import Tensor, make
    from kiln.graph.opdef import REGISTRY
    from kiln.runtime.backend import get_backend

    tensors = [x for x in xs if isinstance(x, Tensor)]
    if not tensors:
        return list(REGISTRY["fused"].impl(np, *[np.asarray(x) for x in xs], **attrs))
    device = tensors[0].device
    xp = get_backend(device).activate()
    datas = [x.to(device)._data if isinstance(x, Tensor) else xp.asarray(x) for x in xs]
    return [make(r, device) for r in REGISTRY["fused"].impl(xp, *datas, **attrs)]


def inputs(*specs):
    """`make_args`: (shape, kind, dtype or None, transposed) per input; kinds: normal, pos, bool."""

    def make(rng, dtype):
        out = []
        for shape, kind, own, transposed in specs:
            dtype_ = np.dtype(own or dtype)
            base = shape[::-1] if transposed else shape
            if kind == "bool":
                value = rng.random(base) < 0.5
            elif kind == "int":
                value = rng.integers(-4, 5, base)
            else:
                value = rng.uniform(0.2, 2.0, base) if kind == "pos" else rng.standard_normal(base)
            value = np.asarray(value, dtype_)
            out.append(value.T if transposed else value)
        return out

    return make


def arg(shape, kind="normal", dtype=None, transposed=False):
    return (shape, kind, dtype, transposed)


def _softplus(x, beta):
    return (np.logaddexp(0, x * beta) / beta).astype(x.dtype)


CHAIN = (eq("mul", IN(0), IN(1)), eq("add", EQ(0), IN(0)), eq("tanh", EQ(1)))
WHERE = (eq("less", IN(0), IN(2)), eq("mul", IN(0), IN(1)), eq("neg", IN(1)),
         eq("where", EQ(0), EQ(1), EQ(2)))  # fmt: skip
MIXED = (eq("add", IN(0), IN(1)), eq("tanh", EQ(0)), eq("mul", EQ(1), IN(0)))
ATTRS = (eq("softplus", IN(0), beta=2.0), eq("sigmoid", EQ(0)), eq("erf", EQ(1)),
         eq("rsqrt", IN(1)), eq("mul", EQ(2), EQ(3)))  # fmt: skip
SHARED = (eq("mul", IN(0), IN(1)), eq("tanh", EQ(0)), eq("add", EQ(0), EQ(1)), eq("square", EQ(2)))
BOOL = (eq("greater", IN(0), IN(1)), eq("less", IN(1), IN(0)), eq("logical_and", EQ(0), EQ(1)),
        eq("logical_not", EQ(2)))  # fmt: skip


# Several results, each of the iteration shape. ADAM: (m, v, p) of one Adam step, as the
# fusion pass groups it (inputs m, g, v, p, then the scalars); TAPE: a relu layer's output
# kept for the backward pass, its mask and their product; BOOL_MIX: results of three dtypes.
ADAM = (eq("mul", IN(0), IN(4)), eq("mul", IN(1), IN(5)), eq("add", EQ(0), EQ(1)),
        eq("mul", IN(2), IN(6)), eq("mul", IN(1), IN(1)), eq("mul", EQ(4), IN(7)),
        eq("add", EQ(3), EQ(5)), eq("sqrt", EQ(6)), eq("add", EQ(7), IN(8)),
        eq("div", EQ(2), EQ(8)), eq("mul", EQ(9), IN(9)), eq("sub", IN(3), EQ(10)))  # fmt: skip
TAPE = (eq("add", IN(0), IN(1)), eq("relu", EQ(0)), eq("greater", EQ(0), IN(2)),
        eq("cast", EQ(2), dtype=np.dtype("float32")), eq("mul", EQ(1), EQ(3)))  # fmt: skip
BOOL_MIX = (eq("less", IN(0), IN(1)), eq("where", EQ(0), IN(0), IN(1)),
            eq("cast", EQ(1), dtype=np.dtype("float64")), eq("tanh", EQ(2)))  # fmt: skip


def _adam_ref(m, g, v, p, b1, c1, b2, c2, eps, lr):
    """One Adam step in NumPy, in the program's order of operations."""
    m1 = m * b1 + g * c1
    v1 = v * b2 + g * g * c2
    return [m1, v1, p - m1 / (np.sqrt(v1) + eps) * lr]


def _adam_inputs(rng, dtype, shape=(4, 6)):
    arrays = [rng.standard_normal(shape).astype(dtype) for _ in range(2)]
    arrays += [rng.uniform(0.1, 1.0, shape).astype(dtype), rng.standard_normal(shape[-1:])]
    scalars = [0.9, 0.1, 0.999, 0.001, 1e-8, 0.01]
    return [np.asarray(a, dtype) for a in arrays + scalars]


def _adam_blocked(rng, dtype):
    """Over UNBLOCKED_BYTES in either dtype: the cache-blocked path."""
    return _adam_inputs(rng, dtype, (300, 1000))


def _tape_ref(a, b, c):
    s = a + b
    return [np.maximum(s, 0), s > c, np.maximum(s, 0) * (s > c).astype(np.float32)]


def _where_ref(a, b, c):
    return np.where(a < c, a * b, -b)


CASES = [
    OpCase("fused", "chain-broadcast", fused(*CHAIN), inputs(arg((2, 3)), arg((3,))),
           lambda a, b: np.tanh(a * b + a)),
    OpCase("fused", "0d", fused(*CHAIN), inputs(arg(()), arg(())),
           lambda a, b: np.tanh(a * b + a)),
    OpCase("fused", "size0", fused(*CHAIN), inputs(arg((0, 3)), arg((3,))),
           lambda a, b: np.tanh(a * b + a)),
    OpCase("fused", "noncontig", fused(*CHAIN), inputs(arg((5, 3), transposed=True), arg((5, 1))),
           lambda a, b: np.tanh(a * b + a)),
    OpCase("fused", "where-last", fused(*WHERE),
           inputs(arg((2, 3, 5)), arg((3, 1)), arg((5,))), _where_ref),
    OpCase("fused", "blocked-rows", fused(*WHERE),
           inputs(arg((600, 520)), arg((520,)), arg((600, 1))), _where_ref),
    OpCase("fused", "blocked-3d", fused(*CHAIN),
           inputs(arg((16, 50, 400)), arg((50, 1))), lambda a, b: np.tanh(a * b + a)),
    OpCase("fused", "blocked-inner-axis", fused(*WHERE),
           inputs(arg((3, 100000)), arg((3, 1)), arg((100000,))), _where_ref),
    OpCase("fused", "blocked-noncontig", fused(*CHAIN),
           inputs(arg((500, 600), transposed=True), arg((600,))),
           lambda a, b: np.tanh(a * b + a)),
    OpCase("fused", "mixed-int32", fused(*MIXED),
           inputs(arg((2, 5), "int", "int32"), arg((5,))),
           lambda a, b: np.tanh(a + b) * a),
    OpCase("fused", "attrs", fused(*ATTRS), inputs(arg((3, 5)), arg((5,), "pos")),
           lambda a, b: scipy.special.erf(scipy.special.expit(_softplus(a, 2.0)))
           / np.sqrt(b), rtol=1e-5, atol=1e-6),
    OpCase("fused", "shared-value", fused(*SHARED), inputs(arg((2, 3)), arg((2, 1))),
           lambda a, b: np.square(a * b + np.tanh(a * b))),
    OpCase("fused", "bool-out", fused(*BOOL), inputs(arg((2, 3)), arg((3,))),
           lambda a, b: np.logical_not((a > b) & (b < a))),
    OpCase("fused", "int-only", fused(*CHAIN[:2]),
           inputs(arg((3, 4), "int"), arg((4,), "int")),
           lambda a, b: a * b + a, ("int32", "int64")),
    OpCase("fused", "results-adam", fused_results((2, 6, 11), *ADAM), _adam_inputs, _adam_ref),
    OpCase("fused", "results-adam-blocked", fused_results((2, 6, 11), *ADAM), _adam_blocked,
           _adam_ref),
    OpCase("fused", "results-tape", fused_results((1, 2, 4), *TAPE),
           inputs(arg((3, 5), dtype="float32"), arg((5,), dtype="float32"),
                  arg((3, 1), dtype="float32")), _tape_ref, ("float32",)),
    OpCase("fused", "results-dtypes", fused_results((0, 1, 3), *BOOL_MIX),
           inputs(arg((2, 3), dtype="float32"), arg((3,), dtype="float32")),
           lambda a, b: [a < b, np.where(a < b, a, b),
                         np.tanh(np.where(a < b, a, b).astype(np.float64))], ("float32",)),
]  # fmt: skip
