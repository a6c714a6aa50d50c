"""Graph-mode sources (placeholder, constant, Variable) and lifting of Python values."""

from __future__ import annotations

import functools

import numpy as np

from .. import dtypes as dt
from .. import shapes as sh
from ..eager import dispatch
from ..eager.grad_mode import is_grad_enabled, state
from ..eager.sparse import LAYOUTS
from ..eager.tensor import Tensor
from ..eager.trace_notes import READ_IN_TRACE
from ..errors import GraphError
from ..graph.core import Symbol, Variable, get_default_graph
from ..graph.opdef import REGISTRY, ArrayValue, OpDef
from ..ops.core import bind, computes_float
from .quantized import QuantizedTensor

__all__ = ["placeholder", "constant", "Variable"]


def placeholder(dtype=dt.float32, shape=(), name: str | None = None) -> Symbol:
    """A value fed at run time. Dims: ints, `None` (anonymous) or names (`"batch"`).

    >>> import kiln as kn
    >>> with kn.Graph().as_default():
    ...     x = kn.placeholder(kn.float32, shape=("batch", 784), name="x")
    >>> x.type_str()
    'f32[batch,784]'
    """
    dtype = dt.as_dtype(dtype)
    shape = sh.as_shape(shape)
    graph = get_default_graph()
    node = graph.add_node(
        REGISTRY["placeholder"], (), {"shape": shape, "dtype": dtype}, name or "placeholder",
        shape=shape, dtype=dtype,
    )  # fmt: skip
    return node.out


def constant(value, dtype=None, name: str | None = None, graph=None) -> Symbol:
    """A constant of the graph; Python floats become float32 (kiln's default float).

    >>> import kiln as kn, numpy as np
    >>> with kn.Graph().as_default():
    ...     c = kn.constant(np.eye(3), name="eye")
    >>> c.type_str()
    'f64[3,3]'
    """
    array = dt.as_array(value, dtype)
    graph = graph or get_default_graph()
    node = graph.add_node(
        REGISTRY["constant"], (), {"value": ArrayValue(array)}, name or "constant",
        shape=array.shape, dtype=array.dtype,
    )  # fmt: skip
    return node.out


def _is_scalar(v) -> bool:
    return isinstance(v, (bool, int, float, complex)) and not isinstance(v, np.generic)


def lift_and_bind(op: OpDef, *args):
    """`bind(op, *promote(op, *args))`: what the frontend's elementwise functions do.

    >>> import numpy as np
    >>> lift_and_bind(REGISTRY["add"], np.float32(1.5), 2)
    array(3.5, dtype=float32)
    """
    if op in _OPMATH and len(args) == 2:
        found = dispatch.opmath_operands(op, args)
        if found is not None:
            return _opmath(op, *found)
    return bind(op, *promote(op, *args))


# PyTorch computes `t * s`, `s * t`, `t / s` and `t // s` of a bfloat16 or float16 tensor t and
# a Python float s in float32 with s unrounded (its "opmath" value), and rounds the result
# once; `s / t` is `reciprocal(t) * s` (two roundings); elsewhere (`t + s`, `t - s`, `s // t`,
# other ops) s is rounded to t's dtype first, as kiln does anyway. Which calls are such is
# `dispatch.opmath_operands` (eager's short paths ask it too, and leave those calls to
# `lift_and_bind`).
_OPMATH = dispatch.OPMATH


def _opmath(op, t, s, scalar_first):
    if op is REGISTRY["div"] and scalar_first:  # s / t: reciprocal(t) * s
        one = lift(np.asarray(1, t.dtype), context=(t,) if isinstance(t, Symbol) else ())[0]
        t, op, scalar_first = bind(op, one, t), REGISTRY["mul"], False
    wide = bind(REGISTRY["cast"], t, dtype=dt.float32)
    (s,) = lift(np.float32(s), context=(t,) if isinstance(t, Symbol) else ())
    wide = bind(op, s, wide) if scalar_first else bind(op, wide, s)
    return bind(REGISTRY["cast"], wide, dtype=t.dtype)


# -- the frontend's unary and binary functions ---------------------------------------------------
# Their short paths (a NumPy ufunc on plain tensors and arrays, without binding) are eager
# mode's per-op path: they live with the rest of it in kiln/eager/dispatch.py; every call they
# cannot take goes to `lift_and_bind`.


def unary_function(op: OpDef):
    """The frontend function `op(input, out=None)`: `lift_and_bind(op, input)`, by eager's
    short path where it can (`kiln.eager.dispatch.unary_function`)."""
    return dispatch.unary_function(op, functools.partial(lift_and_bind, op))


def binary_function(op: OpDef):
    """The frontend function `op(input, other, out=None)`: `lift_and_bind(op, input, other)`,
    by eager's short path where it can (two plain tensors, or one and a Python scalar)."""
    return dispatch.binary_function(op, functools.partial(lift_and_bind, op))


_NO_CAST = frozenset({"logical_and", "logical_or", "logical_not", "isnan", "isfinite"})


def promote(op: OpDef, *args, context=()) -> list:
    """`lift(*args)` with PyTorch's promotion (`dt.result_type`): Python scalars take the
    result dtype, and operands of another dtype are cast to it (integers to the default float
    for ops that compute floats), so the kernel computes in PyTorch's dtype.

    >>> import numpy as np
    >>> [a.dtype for a in promote(REGISTRY["div"], np.array([1, 2], np.int32), 2)]
    [dtype('float32'), dtype('float32')]
    """
    for a in args:  # NOTE: tensors of one dtype (the common case) need nothing
        if (type(a) is not Tensor and type(a) not in dispatch.tensor_types) or (
            a.dtype is not args[0].dtype
        ):
            break
    else:
        if not context and (args[0].dtype.kind == "f" or not computes_float(op)):
            return list(args)
    for a in args:
        if type(a) is QuantizedTensor:  # its dtype does not promote: kiln has no such kernels
            LAYOUTS[QuantizedTensor](op, args, {})
    typed = [a if _is_scalar(a) or isinstance(a, _KEPT) or _is_value(a) else dt.as_array(a)
             for a in args]  # fmt: skip
    target = dt.result_type(*typed)
    if computes_float(op):
        target = dt.to_float(target)
    if op.name in _NO_CAST:  # any dtypes in; a Python scalar as its own (bool, int64, float)
        typed = [np.asarray(a, dt.scalar_dtype(a)) if _is_scalar(a) else a for a in typed]
        return lift(*typed, context=context, op=op)
    # NumPy values take the dtype now (a constant of it, not a cast node); tensors are cast
    typed = [a.astype(target) if isinstance(a, (np.ndarray, np.generic)) and a.dtype != target
             else a for a in typed]  # fmt: skip
    lifted = lift(*typed, context=context, op=op, dtype=target)
    # NOTE: a Python int that target cannot hold keeps the dtype `lift` gave it (comparisons
    # compare it exactly); every other operand computes in target. An op without a gradient
    # (a comparison) casts without a record, as PyTorch's kernel converts inside: its casts
    # do not read a piece of split/unbind whose base changed as a recorded op would.
    recorded = op.vjp is not None or "nondiff" in op.tags
    saved, state.grad = state.grad, state.grad and recorded
    try:
        return [a if a.dtype == target or _is_scalar(v) else bind(REGISTRY["cast"], a, dtype=target)
                for a, v in zip(lifted, typed)]  # fmt: skip
    finally:
        state.grad = saved


def _is_value(a) -> bool:
    return isinstance(a, (np.ndarray, np.generic, Tensor))


_KEPT = (Symbol,)
_KEPT_EAGER = (Symbol, Tensor)


def lift(*args, context=(), op=None, dtype=None):
    """Makes operands of one op: Symbols stay, arrays become constants of the Symbols' graph,
    and Python scalars take `dtype` when given, else PyTorch's promotion against the others
    (`dt.result_type`: weak); `op`, when given, settles an int that dtype cannot hold (a
    comparison compares it exactly).

    With no Symbol among the arguments or `context` (eager), eager Tensors stay and the rest
    become NumPy arrays.
    """
    for a in args:  # NOTE: the fast path of every eager op on Tensors
        if type(a) is not Tensor and type(a) not in dispatch.tensor_types:
            break
    else:
        if not context:
            return args
    if dispatch.traced_value is not None:  # a module's values in a kn.compile trace
        args = tuple(_traced(a) for a in args)
    kept = _KEPT_EAGER
    graph = next((a.graph for a in (*args, *context) if isinstance(a, Symbol)), None)
    out = []
    for a in args:
        if isinstance(a, Symbol) or (graph is None and isinstance(a, kept)):
            out.append(a)
            continue
        if isinstance(a, kept):  # a Tensor in graph mode: a constant of its value
            array = _tensor_value(a)
        elif _is_scalar(a):
            if dtype is None:
                strong = [b for b in args if not _is_scalar(b)]
                scalar_type = dt.result_type(*[b if isinstance(b, kept) or _is_value(b)
                                               else dt.as_array(b) for b in strong], a)  # fmt: skip
            else:
                scalar_type = dtype
            array = _scalar_array(a, scalar_type, op)
        else:
            array = dt.as_array(a)
        out.append(array if graph is None else constant(array, graph=graph))
    return out


# The ops whose Python int operand PyTorch wraps into the tensor's integer dtype (it is a 0-d
# int64 tensor there, cast to the result dtype): `int8 - 128`, `uint8 + 300`, `uint8 == 300`
# (300 is 44 in uint8). Others (clamp, where, fill, pow's exponent, alpha) refuse a value the
# dtype cannot hold with RuntimeError, bar an unsigned dtype's negatives (`dt.python_int`).
_WRAPPING = frozenset({
    "add", "sub", "mul", "floordiv", "mod", "fmod", "bitwise_and", "bitwise_or", "bitwise_xor",
    "bitwise_left_shift", "bitwise_right_shift", "gcd", "lcm",
    "less", "less_equal", "greater", "greater_equal", "equal", "not_equal",
})  # fmt: skip


def _scalar_array(value, dtype, op):
    """A weak scalar as a 0-d array of `dtype`. An int that an integer `dtype` cannot hold
    wraps around into it for `_WRAPPING` ops (as a 64-bit integer first, as PyTorch's); other
    ops refuse it (RuntimeError), and every op one beyond 64 bits (OverflowError), as
    PyTorch's: `dt.python_int`.

    >>> _scalar_array(300, np.dtype(np.uint8), REGISTRY["add"])
    array(44, dtype=uint8)
    >>> _scalar_array(-129, np.dtype(np.int8), REGISTRY["less"])
    array(127, dtype=int8)
    """
    if type(value) is int:
        name = "scalar" if op is None else op.name
        value = dt.python_int(value, dtype, name, wraps=name in _WRAPPING)
    return np.asarray(value, dtype=dtype)


def _traced(a):
    """`a`, or the graph value it stands for in a kn.compile trace (`dispatch.traced_value`)."""
    if isinstance(a, Tensor) and type(a) is not Tensor:
        value = dispatch.traced_value(a)
        if value is not None:
            return value
    return a


def _tensor_value(t) -> np.ndarray:
    if type(t) in LAYOUTS:  # sparse (COO, CSR, CSC) or quantized
        from .sparse_coo import graph_error

        raise graph_error("a sparse or quantized tensor as a graph constant", t)
    if t.requires_grad:
        error = GraphError(
            f"a Tensor that requires grad ({t.dtype}{list(t.shape)}) is used in graph mode, "
            "where it would be a constant that no gradient reaches; pass it as a placeholder "
            "or kn.Variable, or detach() it"
        )
        error.written = t  # (a kn.compile trace takes such a captured tensor as an input)
        raise error
    if READ_IN_TRACE:
        READ_IN_TRACE[-1].add(id(t))
    return t.detach().cpu().numpy()


def in_float32(fn, dtypes=(dt.bfloat16,)):
    """`fn(input, ...)` for a bfloat16 `input` computed in float32 and rounded to bfloat16 once: how
    PyTorch's softmax, layer_norm, gelu… (single ops there, composites here) compute it.

    >>> import kiln as kn
    >>> kn.softmax(kn.tensor([0.0, 1.0], dtype=kn.bfloat16), -1)
    tensor([0.2695, 0.7305], dtype=kiln.bfloat16)
    """

    @functools.wraps(fn)
    def wrapper(input, *args, **kwargs):  # noqa: A002
        dtype = getattr(input, "dtype", None)
        if dtype not in dtypes:
            return fn(input, *args, **kwargs)
        wide = fn(bind(REGISTRY["cast"], input, dtype=dt.float32), *args, **kwargs)
        return bind(REGISTRY["cast"], wide, dtype=dtype)

    return wrapper


def half_in_float32(fn):
    """`in_float32` for float16 inputs too: the normalizations, whose PyTorch kernels take a
    half-precision input with float32 parameters and return the input's dtype.

    >>> import kiln as kn
    >>> kn.batch_norm(kn.ones(2, 1, dtype=kn.float16), kn.zeros(1), kn.ones(1)).dtype
    kiln.float16
    """
    return in_float32(fn, (dt.bfloat16, np.dtype(np.float16)))


def with_grad(value, x, formula: tuple, *saved):
    """`value`, whose gradient reaches `x` by the backward formula `formula` (`(name,
    *params)`, a name in `kiln.ops.state.GRAD_FORMULAS`, reading `saved`): the `with_grad`
    op; `value` itself where no gradient can flow (an eager `x` that does not require grad,
    or under no_grad).

    >>> import kiln as kn
    >>> x = kn.tensor([1.0])
    >>> with_grad(x * 2, x, ("silu",), x) is not None
    True
    """
    if isinstance(x, Tensor) and not (x.requires_grad and is_grad_enabled()):
        return value
    return call("with_grad", value, x, *saved, formula=formula)


def call(op_name: str, *args, **attrs):
    """Binds the op named `op_name` (operands already lifted)."""
    return bind(REGISTRY[op_name], *args, **attrs)
