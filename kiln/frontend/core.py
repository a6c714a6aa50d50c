"""Graph-mode sources (placeholder, constant, Variable) and lifting of Python values."""

from __future__ import annotations

import functools

import numpy as np

from .. import dtypes as dt
from .. import shapes as sh
from ..errors import DTypeError, GraphError
from ..graph.core import Symbol, Variable, get_default_graph
from ..graph.opdef import REGISTRY, ArrayValue, OpDef
from ..ops.core import bind

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


def _as_array(value, dtype=None) -> np.ndarray:
    if dtype is not None:
        return np.asarray(value, dtype=dt.as_dtype(dtype))
    if isinstance(value, (bool, int, float)) and not isinstance(value, np.generic):
        return np.asarray(value, dtype=dt.scalar_dtype(value))
    array = np.asarray(value)
    if array.dtype == np.float64 and not isinstance(value, (np.ndarray, np.generic)):
        array = array.astype(dt.DEFAULT_FLOAT)  # nested Python floats: kiln's default float
    if array.dtype.kind in "OUSV" and array.dtype != dt.bfloat16:
        raise DTypeError(f"cannot make a kiln value from {type(value).__name__} {value!r:.60}")
    dt.as_dtype(array.dtype)
    return array


def constant(value, dtype=None, name: str | None = None, graph=None) -> Symbol:
    """A constant of the graph; Python floats become float32 (kiln's default float).

    >>> import kiln as kn, numpy as np
    >>> with kn.Graph().as_default():
    ...     c = kn.constant(np.eye(3), name="eye")
    >>> c.type_str()
    'f64[3,3]'
    """
    array = _as_array(value, dtype)
    graph = graph or get_default_graph()
    node = graph.add_node(
        REGISTRY["constant"], (), {"value": ArrayValue(array)}, name or "constant",
        shape=array.shape, dtype=array.dtype,
    )  # fmt: skip
    return node.out


def _is_scalar(v) -> bool:
    return isinstance(v, (bool, int, float)) and not isinstance(v, np.generic)


def lift_and_bind(op: OpDef, *args):
    """`bind(op, *promote(op, *args))`: what the frontend's elementwise functions do.

    >>> import numpy as np
    >>> lift_and_bind(REGISTRY["add"], np.float32(1.5), 2)
    array(3.5, dtype=float32)
    """
    if op in _OPMATH and len(args) == 2:
        found = _opmath_operands(op, args)
        if found is not None:
            return _opmath(op, *found)
    return bind(op, *promote(op, *args))


# PyTorch computes `t * s`, `s * t` and `t / s` of a bfloat16 tensor t and a Python float s in
# float32 with s unrounded (its "opmath" value), and rounds the result once; `s / t` is
# `reciprocal(t) * s` (two roundings); elsewhere (`t + s`, `t - s`, other ops) s is rounded to
# bfloat16 first, as kiln does anyway.
_OPMATH = {REGISTRY["mul"]: True, REGISTRY["div"]: True}  # op -> whether s may come first


def _opmath_operands(op, args):
    """(tensor, scalar, scalar_first) when `op(*args)` is computed the opmath way, else None."""
    if op not in _OPMATH:
        return None
    a, b = args
    if type(b) is float and _is_bfloat16(a):
        return a, b, False
    if type(a) is float and _OPMATH[op] and _is_bfloat16(b):
        return b, a, True
    return None


def _is_bfloat16(x) -> bool:
    return (
        isinstance(x, (Symbol, Tensor) if Tensor is not None else Symbol) and x.dtype == dt.bfloat16
    )


def _opmath(op, t, s, scalar_first):
    if op is REGISTRY["div"] and scalar_first:  # s / t: reciprocal(t) * s
        one = lift(np.asarray(1, dt.bfloat16), context=(t,) if isinstance(t, Symbol) else ())[0]
        t, op, scalar_first = bind(op, one, t), REGISTRY["mul"], False
    wide = bind(REGISTRY["cast"], t, dtype=dt.float32)
    (s,) = lift(np.float32(s), context=(t,) if isinstance(t, Symbol) else ())
    wide = bind(op, s, wide) if scalar_first else bind(op, wide, s)
    return bind(REGISTRY["cast"], wide, dtype=dt.bfloat16)


# Set by kiln.eager (which builds on this module): its Tensor class, which `lift` keeps as it
# is; `Plain`: the Tensor class while no thread is in inference mode, else None (below); and
# `apply_unary(op, ufunc, x)` / `apply_binary(op, ufunc, a, b)`: the ufunc on tensors that are
# not plain (they require grad, live on a GPU…), or `lift_and_bind`.
Tensor = Plain = None


def apply_unary(op, ufunc, x):
    return lift_and_bind(op, x)


def apply_binary(op, ufunc, a, b):
    return lift_and_bind(op, a, b)


# -- the frontend's unary and binary functions ---------------------------------------------------
# Most eager code is chains of small elementwise ops, where the time is all per-op overhead,
# so a unary or binary op whose kernel is one NumPy ufunc (and whose dtype rule is that ufunc's
# own type resolution: `kernel.ufunc_name`) runs it on plain eager tensors inside the function
# itself. A plain tensor (kiln.eager.tensor.Meta) has `_meta` None: on the CPU, no autograd, no
# version counter, not a view; the result of a ufunc on plain tensors is plain, so it is made
# with two stores. _NO_CASTING: the ufunc runs with casting="no", so it takes only a loop of the
# operands' own dtypes (Python scalars are weak): there NumPy's result dtype is PyTorch's, while
# operands NumPy would cast (int32 with float32, integers in exp or true division, an int tensor
# with a Python float) raise and take the long path, where `promote` casts them as PyTorch does
# (tests/test_promotion_table.py). The ufunc refuses what the op's rules refuse (dtypes it has no
# loop for, shapes that do not broadcast: tests/test_eager_fast.py holds them to it), and
# anything it raises sends the call down the long path, where the rules raise kiln's error with
# the op and the site. NumPy arrays in give NumPy arrays out; tensors that are not plain go to
# eager's `apply_unary` / `apply_binary`, everything else to `lift_and_bind`.

_ndarray = np.ndarray
_new = object.__new__
_BF16 = dt.bfloat16
_KILN_DTYPES = frozenset(dt.SUPPORTED)
_INT_KEEPING = frozenset({"floor", "ceil", "round", "trunc"})  # integers pass through as they are


def _ufunc(op: OpDef):
    name = getattr(op.impl, "ufunc_name", None)
    return None if name is None else getattr(np, name)


def unary_function(op: OpDef):
    """The frontend function `op(x)`: `lift_and_bind(op, x)`, by the short path where it can."""
    ufunc = _ufunc(op)
    if ufunc is None:

        def fn(x):
            return lift_and_bind(op, x)

        return fn
    ndarray, new = _ndarray, _new  # NOTE: closure cells (Plain stays global: see above)
    numpy_dtypes = _FLOATS if computes_float(op) else _KILN_DTYPES

    def fn(x):
        if type(x) is Plain:
            if x._meta is None:
                try:
                    data = ufunc(x._data, casting="no")  # see `_NO_CASTING`
                except Exception:
                    return lift_and_bind(op, x)
                if type(data) is not ndarray:
                    data = np.asarray(data)  # 0-d: NumPy's ufuncs give scalars
                out = new(Plain)
                out._data = data
                out._meta = None
                return out
            return apply_unary(op, ufunc, x)
        elif type(x) is ndarray and x.dtype in numpy_dtypes:
            try:
                data = ufunc(x, casting="no")
            except Exception:
                return lift_and_bind(op, x)
            return data if type(data) is ndarray else np.asarray(data)
        return lift_and_bind(op, x)

    return fn


def binary_function(op: OpDef):
    """The frontend function `op(a, b)`: `lift_and_bind(op, a, b)`, by the short path where it
    can (two plain tensors, or one and a Python scalar)."""
    ufunc = _ufunc(op)
    if ufunc is None:

        def fn(a, b):
            return lift_and_bind(op, a, b)

        return fn
    ndarray, new = _ndarray, _new
    opmath, opmath_first = op in _OPMATH, _OPMATH.get(op, False)

    def fn(a, b):
        if type(a) is Plain:
            x = a._data
            if type(b) is Plain:
                if a._meta is not None or b._meta is not None:
                    return apply_binary(op, ufunc, a, b)
                y = b._data
            elif type(b) in _SCALARS:
                if opmath and x.dtype is _BF16 and type(b) is float:
                    return lift_and_bind(op, a, b)
                if a._meta is not None:
                    return apply_binary(op, ufunc, a, b)
                y = b
            else:
                return lift_and_bind(op, a, b)
        elif type(b) is Plain and type(a) in _SCALARS:
            if opmath_first and b._data.dtype is _BF16 and type(a) is float:
                return lift_and_bind(op, a, b)
            if b._meta is not None:
                return apply_binary(op, ufunc, a, b)
            x, y = a, b._data
        else:
            return lift_and_bind(op, a, b)
        try:
            data = ufunc(x, y, casting="no")  # see `_NO_CASTING`
        except Exception:
            return lift_and_bind(op, a, b)
        if type(data) is not ndarray:
            data = np.asarray(data)
        out = new(Plain)
        out._data = data
        out._meta = None
        return out

    return fn


_FLOATS = frozenset(d for d in dt.SUPPORTED if dt.is_float(d))
_SCALARS = frozenset({float, int, bool})


@functools.cache
def computes_float(op: OpDef) -> bool:
    """Whether `op` computes integers and bools as floats (exp, sqrt, true division…): then
    PyTorch computes them in the default float dtype (NumPy: float64).

    >>> computes_float(REGISTRY["div"]), computes_float(REGISTRY["add"])
    (True, False)
    """
    if op.name in _INT_KEEPING or "elementwise" not in op.tags:
        return False
    for n in (1, 2, 3):  # the op's arity: its dtype rule takes one dtype per input
        try:
            return dt.as_dtype(op.dtype_rule(*([dt.int64] * n))).kind == "f"
        except DTypeError:
            return False
        except TypeError:
            continue
    return False


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
        if type(a) is not Tensor or a.dtype is not args[0].dtype:
            break
    else:
        if not context and (args[0].dtype.kind == "f" or not computes_float(op)):
            return list(args)
    typed = [a if _is_scalar(a) or isinstance(a, _KEPT) or _is_value(a) else _as_array(a)
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
    # compare it exactly); every other operand computes in target
    return [a if a.dtype == target or _is_scalar(v) else bind(REGISTRY["cast"], a, dtype=target)
            for a, v in zip(lifted, typed)]  # fmt: skip


def _is_value(a) -> bool:
    return isinstance(a, (np.ndarray, np.generic)) or (Tensor is not None and isinstance(a, Tensor))


_KEPT = (Symbol,)


def lift(*args, context=(), op=None, dtype=None):
    """Makes operands of one op: Symbols stay, arrays become constants of the Symbols' graph,
    and Python scalars take `dtype` when given, else PyTorch's promotion against the others
    (`dt.result_type`: weak); `op`, when given, settles an int that dtype cannot hold (a
    comparison compares it exactly).

    With no Symbol among the arguments or `context` (eager), eager Tensors stay and the rest
    become NumPy arrays.
    """
    for a in args:  # NOTE: the fast path of every eager op on Tensors
        if type(a) is not Tensor:
            break
    else:
        if not context:
            return args
    kept = (Symbol,) if Tensor is None else (Symbol, Tensor)
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
                                               else _as_array(b) for b in strong], a)  # fmt: skip
            else:
                scalar_type = dtype
            array = np.asarray(a, dtype=_scalar_dtype(a, scalar_type, op))
        else:
            array = _as_array(a)
        out.append(array if graph is None else constant(array, graph=graph))
    return out


_COMPARISONS = {"less", "less_equal", "greater", "greater_equal", "equal", "not_equal"}


def _scalar_dtype(value, dtype, op):
    """The dtype for a weak scalar. An int that `dtype` cannot hold: comparisons compare it
    exactly (the smallest dtype holding both); other ops keep `dtype`, and NumPy's
    OverflowError says why.

    >>> _scalar_dtype(-3, np.dtype(np.uint8), REGISTRY["less"])
    dtype('int16')
    """
    if type(value) is not int or dtype.kind not in "iu" or op is None:
        return dtype
    info = np.iinfo(dtype)
    if info.min <= value <= info.max or op.name not in _COMPARISONS:
        return dtype
    return np.promote_types(dtype, np.min_scalar_type(value))


def _tensor_value(t) -> np.ndarray:
    if t.requires_grad:
        raise GraphError(
            f"a Tensor that requires grad ({t.dtype}{list(t.shape)}) is used in graph mode, "
            "where it would be a constant that no gradient reaches; pass it as a placeholder "
            "or kn.Variable, or detach() it"
        )
    return t.detach().cpu().numpy()


def in_float32(fn):
    """`fn(x, ...)` for a bfloat16 `x` computed in float32 and rounded to bfloat16 once: how
    PyTorch's softmax, layer_norm, gelu… (single ops there, composites here) compute it.

    >>> import kiln as kn
    >>> kn.softmax(kn.tensor([0.0, 1.0], dtype=kn.bfloat16))
    tensor([0.2695, 0.7305], dtype=kiln.bfloat16)
    """

    @functools.wraps(fn)
    def wrapper(x, *args, **kwargs):
        if getattr(x, "dtype", None) != dt.bfloat16:
            return fn(x, *args, **kwargs)
        wide = fn(bind(REGISTRY["cast"], x, dtype=dt.float32), *args, **kwargs)
        return bind(REGISTRY["cast"], wide, dtype=dt.bfloat16)

    return wrapper


def call(op_name: str, *args, **attrs):
    """Binds the op named `op_name` (operands already lifted)."""
    return bind(REGISTRY[op_name], *args, **attrs)
