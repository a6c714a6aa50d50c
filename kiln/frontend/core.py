"""Graph-mode sources (placeholder, constant, Variable) and lifting of Python values."""

from __future__ import annotations

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
    if array.dtype.kind in "OUSV":
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
    """`bind(op, *lift(*args))`: what the frontend's unary and binary functions do.

    >>> import numpy as np
    >>> lift_and_bind(REGISTRY["add"], np.float32(1.5), 2)
    array(3.5, dtype=float32)
    """
    return bind(op, *lift(*args, op=op))


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
# with two stores. The ufunc refuses what the op's rules refuse (dtypes it has no loop for,
# shapes that do not broadcast: tests/test_eager_fast.py holds them to it), and anything it
# raises sends the call down the long path, where the rules raise kiln's error with the op
# and the site. Python scalars mix in as NumPy's weak scalars, as `lift` makes them. NumPy
# arrays in give NumPy arrays out; tensors that are not plain go to eager's `apply_unary` /
# `apply_binary`, everything else to `lift_and_bind`.

_ndarray = np.ndarray
_new = object.__new__
_KILN_DTYPES = frozenset(dt.SUPPORTED)


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

    def fn(x):
        if type(x) is Plain:
            if x._meta is None:
                try:
                    data = ufunc(x._data)
                except Exception:
                    return lift_and_bind(op, x)
                if type(data) is not _ndarray:
                    data = np.asarray(data)  # 0-d: NumPy's ufuncs give scalars
                out = _new(Plain)
                out._data = data
                out._meta = None
                return out
            return apply_unary(op, ufunc, x)
        elif type(x) is _ndarray and x.dtype in _KILN_DTYPES:
            try:
                data = ufunc(x)
            except Exception:
                return lift_and_bind(op, x)
            return data if type(data) is _ndarray else np.asarray(data)
        return lift_and_bind(op, x)

    return fn


def binary_function(op: OpDef):
    """The frontend function `op(a, b)`: `lift_and_bind(op, a, b)`, by the short path where it
    can (two plain tensors, or one and a Python scalar that NumPy takes as `lift` does)."""
    ufunc = _ufunc(op)
    if ufunc is None:

        def fn(a, b):
            return lift_and_bind(op, a, b)

        return fn

    def fn(a, b):
        if type(a) is Plain:
            x = a._data
            if type(b) is Plain:
                if a._meta is not None or b._meta is not None:
                    return apply_binary(op, ufunc, a, b)
                y = b._data
            elif _weak(b, x):
                if a._meta is not None:
                    return apply_binary(op, ufunc, a, b)
                y = b
            else:
                return lift_and_bind(op, a, b)
        elif type(b) is Plain and _weak(a, b._data):
            if b._meta is not None:
                return apply_binary(op, ufunc, a, b)
            x, y = a, b._data
        else:
            return lift_and_bind(op, a, b)
        try:
            data = ufunc(x, y)
        except Exception:
            return lift_and_bind(op, a, b)
        if type(data) is not _ndarray:
            data = np.asarray(data)
        out = _new(Plain)
        out._data = data
        out._meta = None
        return out

    return fn


def _weak(value, beside: np.ndarray) -> bool:
    """Whether NumPy's ufuncs take `value` beside `beside` as `lift` would: a Python float or
    bool (an int only beside floats: NumPy compares int8 with 300, which `lift` refuses)."""
    cls = type(value)
    return cls is float or cls is bool or cls is int and beside.dtype.kind == "f"


def lift(*args, context=(), op=None):
    """Makes operands of one op: Symbols stay, arrays become constants of the Symbols' graph,
    and Python scalars take the dtype NumPy 2 promotion gives them against the others (weak;
    `op`, when given, settles an int the promoted dtype cannot hold, as NumPy's ufunc would).

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
    strong = [a.dtype if isinstance(a, kept) else _as_array(a).dtype
              for a in args if not _is_scalar(a)]  # fmt: skip
    graph = next((a.graph for a in (*args, *context) if isinstance(a, Symbol)), None)
    out = []
    for a in args:
        if isinstance(a, Symbol) or (graph is None and isinstance(a, kept)):
            out.append(a)
            continue
        if isinstance(a, kept):  # a Tensor in graph mode: a constant of its value
            array = _tensor_value(a)
        elif _is_scalar(a):
            dtype = dt.promote(*strong, a) if strong else dt.scalar_dtype(a)
            array = np.asarray(a, dtype=_scalar_dtype(a, dtype, op))
        else:
            array = _as_array(a)
        out.append(array if graph is None else constant(array, graph=graph))
    return out


_COMPARISONS = {"less", "less_equal", "greater", "greater_equal", "equal", "not_equal"}


def _scalar_dtype(value, dtype, op):
    """The dtype for a weak scalar. An int that `dtype` cannot hold gets what NumPy 2's ufunc
    gives it: comparisons compare it exactly (the smallest dtype holding both), true division
    takes it in its float loop; other ops keep `dtype`, and NumPy's OverflowError says why.

    >>> _scalar_dtype(-3, np.dtype(np.uint8), REGISTRY["less"])
    dtype('int16')
    """
    if type(value) is not int or dtype.kind not in "iu" or op is None:
        return dtype
    info = np.iinfo(dtype)
    name = getattr(op.impl, "ufunc_name", None)
    if info.min <= value <= info.max or name is None:
        return dtype
    if name in _COMPARISONS:
        return np.promote_types(dtype, np.min_scalar_type(value))
    loop = getattr(np, name).resolve_dtypes((dtype, int, None))[1]
    return loop if loop.kind == "f" else dtype


def _tensor_value(t) -> np.ndarray:
    if t.requires_grad:
        raise GraphError(
            f"a Tensor that requires grad ({t.dtype}{list(t.shape)}) is used in graph mode, "
            "where it would be a constant that no gradient reaches; pass it as a placeholder "
            "or kn.Variable, or detach() it"
        )
    return t.detach().cpu().numpy()


def call(op_name: str, *args, **attrs):
    """Binds the op named `op_name` (operands already lifted)."""
    return bind(REGISTRY[op_name], *args, **attrs)
