"""`bind`, the one entry point to every op, and helpers the op families share."""

from __future__ import annotations

import functools

import numpy as np

from .. import dtypes as dt
from .. import shapes as sh
from ..errors import DTypeError, GraphError, ShapeError, UnsupportedDTypeError, node_error
from ..graph.core import Symbol, user_site
from ..graph.opdef import REGISTRY, ArrayValue, OpDef, register
from ..graph.region import capture_args


def bind(op: OpDef, *args, **attrs):
    """Applies `op`: adds a node when an argument is a Symbol, else runs the kernel now.

    >>> import numpy as np
    >>> bind(REGISTRY["add"], np.float32(1), np.float32(2))
    array(3., dtype=float32)
    """
    for a in args:  # NOTE: a loop, not any(...): this is every eager op's path
        if isinstance(a, Symbol):
            return bind_graph(op, args, attrs)
    return _eager(op, args, attrs)


def run_eager(op: OpDef, args, attrs):
    """Runs the kernel now on NumPy arrays: NumPy arrays in, a NumPy array out (a tuple of
    them from a kernel of several results: a fused node's)."""
    arrays = [np.asarray(a) for a in args]
    check_rules(op, arrays, attrs)
    result = op.impl(np, *arrays, **attrs)
    if type(result) is tuple:
        return tuple(np.asarray(r) for r in result)
    return np.asarray(result)


_eager = run_eager  # what `bind` runs ops on values that are not Symbols with (`use_eager`)


_grad_mode = None  # kiln.eager's grad-mode switches (`use_eager`): read by `_detached`


def use_eager(dispatch, grad_mode=None) -> None:
    """Makes `dispatch(op, args, attrs)` the one eager path of `bind`: kiln.eager, which builds
    on this layer, gives its own when it is imported (Tensors in, a Tensor out, tape entries;
    anything else to `run_eager`), and its grad-mode state `grad_mode` (whose `grad` is False
    under `no_grad`). Until then ops on NumPy values run by `run_eager`."""
    global _eager, _grad_mode
    _eager, _grad_mode = dispatch, grad_mode


def _detached(op: OpDef, node) -> bool:
    """Whether `node`, just traced by `kn.compile` under `no_grad` (or `set_grad_enabled(False)`,
    `inference_mode`), must end in a stop_gradient: its value then carries no gradient, as
    the eager op's result does not require grad (simplify removes the stop_gradient from the
    program, so the values are the same)."""
    if _grad_mode is None or _grad_mode.grad or not node.inputs or op.name == "stop_gradient":
        return False
    from .random import in_trace  # NOTE: here, not above: kiln.ops.random imports this module

    return in_trace() and node.out is not None and dt.is_differentiable(node.out.dtype)


def check_rules(op: OpDef, arrays, attrs):
    """The op's shape and dtype rules on concrete arrays: eager errors match graph ones."""
    try:
        op.shape_rule(*[a.shape for a in arrays], **attrs)
        op.dtype_rule(*[a.dtype for a in arrays], **attrs)
    except (ShapeError, DTypeError) as e:
        raise node_error(type(e), str(e), op=op.name, name=None, site=user_site()) from None


def bind_graph(op: OpDef, args, attrs, name: str | None = None, graph=None) -> Symbol:
    """Adds a node of `op` to the graph of `args` (or `graph`, for ops without inputs). While a
    region's body is traced, an op on its values or on those of the graphs around it goes into
    the body, its operands from outside captured (kiln/graph/region.py)."""
    if graph is None:
        args = capture_args(args)
    graph = graph or next(a.graph for a in args if isinstance(a, Symbol))
    site = user_site()
    for a in args:
        if not isinstance(a, Symbol):
            raise GraphError(f"{op.name}: argument {a!r} is not a Symbol (created at {site})")
        if a.graph is not graph:
            raise node_error(
                GraphError, "inputs come from different graphs", op=op.name, name=None,
                site=site, inputs=args,
            )  # fmt: skip
    shape, dtype, constraints = infer(op, args, attrs, site)
    node = graph.add_node(op, args, attrs, name or op.name, site=site, shape=shape, dtype=dtype)
    graph.constraints.extend((a, b, why, node) for a, b, why in constraints)
    if _detached(op, node):
        return bind_graph(REGISTRY["stop_gradient"], (node.out,), {})
    return node.out


def infer(op: OpDef, args, attrs, site):
    """Runs the shape and dtype rules; errors name the op, the site and the input types."""
    pending = sh.collect_constraints()
    try:
        shape = op.shape_rule(*(a.shape for a in args), **attrs)
        dtype = op.dtype_rule(*(a._dtype for a in args), **attrs)
        sh.mark_derived([a.shape for a in args], attrs, shape)
    except (ShapeError, DTypeError) as e:
        raise node_error(type(e), str(e), op=op.name, name=None, site=site, inputs=args) from None
    finally:
        sh._pending.items = None
    return tuple(shape), dt.as_dtype(dtype), pending


def apply(op_name: str, *args, **attrs):
    """Binds the registered op `op_name`: how vjp rules use ops that have no operator."""
    return bind(REGISTRY[op_name], *args, **attrs)


def scalar(value, like):
    """A 0-d constant `value` of `like`'s dtype, beside `like` (in its graph, or eager)."""
    return constant_like(np.asarray(value, dtype=like.dtype), like)


def constant_like(array: np.ndarray, like):
    """The constant `array` beside `like` (in its graph, or eager: the array itself)."""
    if isinstance(like, Symbol):
        node = like.graph.add_node(
            REGISTRY["constant"], (), {"value": ArrayValue(array)}, "constant",
            shape=array.shape, dtype=array.dtype,
        )  # fmt: skip
        return node.out
    return array


def defop(
    name, shape_rule, dtype_rule, impl, *, vjp=None, tags=(), views=(), overwrites=(),
    may_fail=False, lowering=None, batch=None, jvp=None, prepare=None, method=None,
) -> OpDef:  # fmt: skip
    """Creates and registers one primitive (its effects: see `OpDef`). An op that `views` an
    input carries the "view" tag; an elementwise op batches elementwise unless given a rule."""
    tags = frozenset(tags) | ({"view"} if views else frozenset())
    if "view" in tags and not views:
        views = (0,)
    if batch is None and "elementwise" in tags and "fused" not in tags:
        batch = batch_elementwise(name)
    if tags & _COMPLEX_TAGS:
        if "complex" in tags and vjp is not None:
            vjp = conjugate_vjp(vjp)
    else:
        dtype_rule = real_only(name, dtype_rule)
    return register(OpDef(name, shape_rule, dtype_rule, impl, vjp, tags, tuple(views),
                          tuple(overwrites), bool(may_fail), lowering, batch, jvp,
                          prepare, method))  # fmt: skip


# -- complex values --------------------------------------------------------------------------
# An op takes complex inputs only when its record says so, by one of two tags: "complex" (an
# analytic op whose vjp, written for real values, holds for complex ones as PyTorch's gradient
# when conjugated: `conjugate_vjp`) or "complex_linear" (its vjp is used as it is: real-linear
# ops such as movements, sums and additions, whose transposes have real coefficients, and ops
# with a vjp of their own for complex values, such as abs, real and conj).
_COMPLEX_TAGS = frozenset({"complex", "complex_linear"})


def real_only(name: str, rule):
    """`rule` refusing complex input dtypes (an op without a complex tag)."""

    @functools.wraps(rule)
    def checked(*dtypes, **attrs):
        for d in dtypes:
            if d.kind == "c":
                raise UnsupportedDTypeError(f"{name} does not support complex dtype {d}")
        return rule(*dtypes, **attrs)

    return checked


def conj(x):
    """The complex conjugate of `x`; `x` itself when it is real."""
    return apply("conj", x) if x.dtype.kind == "c" else x


def conjugate_vjp(vjp):
    """The vjp of an analytic op on complex values, from its vjp for real ones: PyTorch's
    gradient of a real loss is `ct * conj(f'(z))`, which is `conj(vjp(conj(ct)))` when the
    real vjp is `ct * f'(z)` with `f'` analytic of real coefficients. Real values pass
    straight through."""

    # NOTE: an analytic op has a complex result exactly when it has a complex input, so the
    # result's dtype decides (one check on every backward step of these ops)
    @functools.wraps(vjp)
    def complex_vjp(ct, out, *inputs, **attrs):
        if out.dtype.kind != "c":
            return vjp(ct, out, *inputs, **attrs)
        cts = vjp(conj(ct), out, *inputs, **attrs)
        return tuple(None if c is None else conj(c) for c in cts)

    complex_vjp.for_real = vjp  # what eager backward runs on bare float arrays
    return complex_vjp


_BF16 = dt.bfloat16


def in_float32(impl, half: bool = False):
    """The kernel `impl`, computing bfloat16 inputs on float32 copies and rounding a float32
    result to bfloat16 once: how PyTorch's CPU kernels compute bfloat16 (accumulating sums
    and products in float32). ml_dtypes' ufuncs do so per ufunc; a kernel of several ufuncs,
    a reduction or a matrix product takes this. With `half`, float16 inputs too (PyTorch's
    float16 sums, whose NumPy reductions along other than the last axis add in float16).
    Other dtypes run `impl` as it is. (`functools.wraps`: readers of the kernel's signature,
    such as the graph loader's attr check, see `impl`'s.)"""
    f16 = np.dtype(np.float16) if half else _BF16  # NOTE: dtypes by identity (a hot path)

    @functools.wraps(impl)
    def kernel(xp, *arrays, out=None, **attrs):
        for a in arrays:
            if a.dtype is _BF16 or a.dtype is f16:
                dtype = a.dtype
                break
        else:
            return impl(xp, *arrays, out=out, **attrs)
        wide = [a.astype(np.float32) if a.dtype is _BF16 or a.dtype is f16 else a for a in arrays]
        result = xp.asarray(impl(xp, *wide, **attrs))
        if result.dtype == np.float32:
            result = result.astype(dtype)
        if out is None:
            return result
        out[...] = result
        return out

    return kernel


_HALF = (np.dtype(np.float16), _BF16)


def half_opmath(fn, *args):
    """`fn(*args)` (kiln ops on values of one dtype) computed on float32 copies of float16 or
    bfloat16 `args` and rounded to their dtype once: how PyTorch's CPU kernels compute a
    half-precision result of several steps (their "opmath"), such as a backward formula. Other
    dtypes run `fn` as it is.

    >>> import numpy as np
    >>> half_opmath(lambda a: a * 3 / 3, np.array(0.1, np.float16)).dtype
    dtype('float16')
    """
    dtype = args[0].dtype
    if dtype not in _HALF:
        return fn(*args)
    wide = fn(*(apply("cast", a, dtype=np.dtype(np.float32)) for a in args))
    return apply("cast", wide, dtype=np.dtype(dtype))


# -- batching rules (kn.vmap): batched inputs carry one extra leading axis ---------------------


def batch_size(args, batched):
    """The batch size: the leading dim of the first batched input."""
    return next(a.shape[0] for a, b in zip(args, batched) if b)


def lead(x, ndim: int):
    """Batched `x` with size-1 dims inserted after its batch axis, up to `ndim` per-example
    dims (so that it broadcasts against per-example values of rank `ndim`)."""
    missing = ndim - (x.ndim - 1)
    if missing <= 0:
        return x
    return apply("reshape", x, shape=(x.shape[0], *(1,) * missing, *x.shape[1:]))


def unbatched_to(x, n):
    """An unbatched `x` made batched: broadcast along a new leading axis of size `n`."""
    return apply("broadcast_to", apply("reshape", x, shape=(1, *x.shape)), shape=(n, *x.shape))


def batch_along_axis(name: str):
    """The batching rule of a one-input op along its `axis` attr (a scan, a sort): the axis
    moves past the batch axis; a 0-d example (which such ops take as one element) becomes one
    of shape (1,) and back."""

    def rule(args, batched, *, axis, **attrs):
        (x,) = args
        if x.ndim > 1:
            return apply(name, x, axis=axis + 1, **attrs)
        column = apply(name, apply("reshape", x, shape=(x.shape[0], 1)), axis=1, **attrs)
        return apply("reshape", column, shape=(x.shape[0],))

    return rule


def batch_elementwise(name: str):
    """The batching rule of a broadcasting elementwise op: batched inputs get size-1 dims after
    their batch axis up to the output's per-example rank; unbatched ones broadcast as they are."""

    def rule(args, batched, **attrs):
        ndim = max(a.ndim - b for a, b in zip(args, batched))
        args = [lead(a, ndim) if b else a for a, b in zip(args, batched)]
        return apply(name, *args, **attrs)

    return rule


# -- shared rules ----------------------------------------------------------------------------

_INT_KEEPING = frozenset({"floor", "ceil", "round", "trunc"})  # integers pass through as they are


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


@functools.cache
def ufunc_dtype(ufunc, *dtypes):
    """The output dtype NumPy's ufunc gives for these input dtypes (NumPy 2 promotion)."""
    dtypes = tuple(d.dtype if type(d) is dt.DType else d for d in dtypes)  # kn.dtype objects
    try:
        return ufunc.resolve_dtypes((*dtypes, None))[-1]
    except TypeError as e:  # NumPy: no loop for these dtypes
        names = ", ".join(f"{d}" for d in dtypes)
        raise UnsupportedDTypeError(f"{ufunc.__name__} does not support dtype(s) {names}") from e


@functools.cache
def probe_dtype(fn, *dtypes, **kwargs):
    """The dtype NumPy's `fn` returns for inputs of these dtypes (probed on 1-element arrays)."""
    try:
        return np.asarray(fn(*(np.ones((1,), d) for d in dtypes), **kwargs)).dtype
    except TypeError as e:
        names = ", ".join(f"{d}" for d in dtypes)
        raise UnsupportedDTypeError(f"{fn.__name__} does not support dtype(s) {names}") from e


def same_shape(x, **_):
    return x


def same_dtype(x, *_, **__):
    return x


def float_dtype(x, *_, **__):
    """Floats keep their dtype; ints and bools become float64, as NumPy's float functions do."""
    return ufunc_dtype(np.sqrt, x)


def static_ints(values, what: str) -> tuple:
    """A tuple of plain ints (attrs such as strides and permutations must be static)."""
    if isinstance(values, (int, np.integer)):
        values = (values,)
    try:
        out = tuple(int(v) for v in values)
    except TypeError as e:
        raise ShapeError(f"{what} must be ints, got {values!r}") from e
    return out
