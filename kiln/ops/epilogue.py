"""`bias_relu(y, b)`: `relu(y + b)`, a layer's bias and activation in one pass over `y`.

The rewrite pass `fuse_bias_relu` (kiln/passes/bias_relu.py) puts it in place of `relu(y + b)`
where the sum is read by the relu alone: the matrix product's result is then read and written
once (in place, as any elementwise op) instead of twice. On NumPy arrays of float32/float64 it
runs as one compiled loop (numba, when installed, after a few calls; in kiln's kernel cache
like the fused loops'), else as NumPy's add and relu kernels: either way the unfused nodes'
bits (an IEEE sum, then NumPy's `maximum(v, 0)`: NaN stays, -0.0 becomes 0.0).
"""

from __future__ import annotations

import threading

import numpy as np

from .. import shapes as sh
from .core import apply, defop, scalar, ufunc_dtype
from .elementwise import _relu_c, _relu_numba
from .lazy_loops import LazyLoops
from .lowering import Lowering, c_cast, c_rn, nb_type

LOOP_SIZE = 1 << 12  # elements: below, NumPy's two calls (a loop's dispatch costs as much)


def _bias_relu(xp, y, b, out=None):
    if xp is np and y.size >= LOOP_SIZE and y.dtype in _LOOPS:
        done = _compiled(y, b, out)
        if done is not None:
            return done
    from ..graph.opdef import REGISTRY

    total = xp.add(y, b, out=out)
    return REGISTRY["relu"].impl(xp, total, out=total)


def _compiled(y, b, out):
    """`relu(y + b)` by the compiled loop, or None (not built yet, no numba, or arrays it does
    not take: NumPy's kernels then)."""
    dtype = y.dtype
    loops = _LOOPS.get(dtype)
    if loops is None or b.dtype != dtype or y.ndim < 1 or b.shape != y.shape[-1:]:
        return None
    if out is y:  # in place (a planned program's usual call): the checks below, fewer
        if not (y.flags.c_contiguous and b.flags.c_contiguous) or np.may_share_memory(b, y):
            return None
        loops[1](y.reshape(-1, y.shape[-1]), b)
        return y
    if out is None:
        out = np.empty(y.shape, dtype)
    elif out.dtype != dtype or out.shape != y.shape or not out.flags.c_contiguous:
        return None
    if not (y.flags.c_contiguous and b.flags.c_contiguous) or np.may_share_memory(b, out):
        return None
    rows = y.reshape(-1, y.shape[-1])
    if np.may_share_memory(y, out):
        ptr = lambda a: a.__array_interface__["data"][0]  # noqa: E731
        if ptr(y) != ptr(out):
            return None  # a partial overlap
        loops[1](rows, b)  # NOTE: in place, a loop of its own (aliased arrays stay scalar)
    else:
        loops[0](rows, b, out.reshape(rows.shape))
    return out


def _build(dtype):
    """(loop(y, b, out), loop(y, b) writing into y) over 2-D y, or None."""
    try:
        import numba
    except ImportError:
        return None
    from .fused_codegen import _jit

    r = nb_type(dtype)
    expr = _relu_numba([f"{r}(y[i, j] + b[j])"], (dtype,), dtype, {})
    body = (
        "\n    for i in range(y.shape[0]):\n        for j in range(y.shape[1]):\n"
        f"            {{}}[i, j] = {expr}\n"
    )
    texts = ("def kernel(y, b, out):" + body.format("out"), "def kernel(y, b):" + body.format("y"))
    loops = tuple(_jit(numba, text) for text in texts)
    matrix, vector = numba.typeof(np.empty((1, 1), dtype)), numba.typeof(np.empty(1, dtype))
    try:
        loops[0].compile((matrix, vector, matrix))
        loops[1].compile((matrix, vector))
    except Exception:  # noqa: BLE001 - numba refused: NumPy's kernels run instead
        return None
    return loops


_LOOPS = LazyLoops(_build)  # per dtype; built on the third large call


def _numba(xs, dtypes, out, attrs):  # relu(y + b): an IEEE sum, then NumPy's maximum(v, 0)
    r = nb_type(out)
    return _relu_numba([f"({r}({xs[0]}) + {r}({xs[1]}))"], (out,), out, attrs)


def _cuda(k, xs, dtypes, out, attrs):
    if out.kind != "f":
        return None
    total = f"{c_rn('add', out)}({c_cast(xs[0], dtypes[0], out)}, {c_cast(xs[1], dtypes[1], out)})"
    return _relu_c(k, [total], (out,), out, attrs)


def _shape(y, b):
    return sh.broadcast_shapes(y, b)


def _dtype(y, b):
    dtype = ufunc_dtype(np.add, y, b)
    if dtype.kind != "f":
        from ..errors import DTypeError

        raise DTypeError(f"bias_relu: takes floats, got {y} and {b}")
    return dtype


def _vjp(ct, z, y, b):
    g = apply("relu_grad", ct, z)  # relu's backward from its output; the sum passes it on
    return g, g  # autodiff sums b's back over the broadcast dims


bias_relu = defop(
    "bias_relu", _shape, _dtype, _bias_relu, vjp=_vjp, tags={"elementwise"},
    lowering=Lowering(exact=True, numba=_numba, cuda=_cuda),
)  # fmt: skip


# -- relu's backward and the bias gradient in one pass -------------------------------------------

GRAD_MIN_COLUMNS = 8  # below, NumPy may sum a column pairwise (as a contiguous row): its kernels


def _relu_grad_bias(xp, ct, y, out=None):
    """[N + 1, M]: rows :N `relu_grad(ct, y)`, row N its sum over the rows (the bias's
    gradient, `reduce_sum(axes=(0,))`), of a 2-D `ct` and `y`."""
    n, m = ct.shape
    if out is None:
        out = xp.empty((n + 1, m), ct.dtype)
    if xp is np and m >= GRAD_MIN_COLUMNS and ct.dtype in _GRAD_LOOPS and ct.size >= LOOP_SIZE:
        loop = _GRAD_LOOPS.get(ct.dtype)
        if loop is not None and _takes(loop, ct, y, out):
            loop(ct, y, out[:n], out[n])
            return out
    from ..graph.opdef import REGISTRY

    grad = REGISTRY["relu_grad"].impl(xp, ct, y, out=out[:n])
    REGISTRY["reduce_sum"].impl(xp, grad, out=out[n:], axes=(0,), keepdims=True)
    return out


def _takes(loop, ct, y, out) -> bool:
    arrays = (ct, y, out)
    if any(a.dtype != ct.dtype or not a.flags.c_contiguous for a in arrays) or ct.shape != y.shape:
        return False
    return not (np.may_share_memory(out, ct) or np.may_share_memory(out, y))


def _build_grad(dtype):
    """The loop over rows of `ct * (y > 0)` and their running sum from 0, row after row, as
    NumPy sums along the rows of a C-ordered array of 8 or more columns (an IEEE sum per row,
    in row order), or None."""
    try:
        import numba
    except ImportError:
        return None
    from .elementwise import _relu_grad_numba
    from .fused_codegen import _jit

    r = nb_type(dtype)
    expr = _relu_grad_numba(["ct[i, j]", "y[i, j]"], (dtype, dtype), dtype, {})
    text = (
        "def kernel(ct, y, rows, total):\n"
        f"    for j in range(ct.shape[1]):\n        total[j] = {r}(0)\n"
        "    for i in range(ct.shape[0]):\n        for j in range(ct.shape[1]):\n"
        f"            v = {expr}\n            rows[i, j] = v\n            total[j] += v\n"
    )
    loop = _jit(numba, text)
    matrix, vector = numba.typeof(np.empty((1, 1), dtype)), numba.typeof(np.empty(1, dtype))
    try:
        loop.compile((matrix, matrix, matrix, vector))
    except Exception:  # noqa: BLE001 - numba refused: NumPy's kernels run instead
        return None
    return loop


_GRAD_LOOPS = LazyLoops(_build_grad)  # per dtype; built on the third large call


def _grad_shape(ct, y):
    if len(ct) != 2 or tuple(ct) != tuple(y):
        from ..errors import ShapeError

        raise ShapeError(f"relu_grad_bias: takes two matrices of one shape, got "
                         f"{sh.format_shape(ct)} and {sh.format_shape(y)}")  # fmt: skip
    n = ct[0]
    return (n + 1 if isinstance(n, int) else sh.Dim(), ct[1])


def _grad_dtype(ct, y):
    if ct.kind != "f" or y != ct:
        from ..errors import DTypeError

        raise DTypeError(f"relu_grad_bias: takes floats of one dtype, got {ct} and {y}")
    return ct


def _grad_vjp(ct_packed, z, ct, y):
    n = ct.shape[0]
    rows = apply("index", ct_packed, spec=(("slice", 0, n, None),))
    total = apply("index", ct_packed, spec=(("slice", n, n + 1, None),))
    return apply("relu_grad", rows + total, y), None


# `relu_grad_bias(ct, y)`: relu's backward and the bias's gradient packed in one [N + 1, M]
# array (kiln/passes/bias_relu.py reads them through row views: static N only).
relu_grad_bias = defop(
    "relu_grad_bias", _grad_shape, _grad_dtype, _relu_grad_bias, vjp=_grad_vjp,
)  # fmt: skip


# -- rows of a matrix: the packed results' views -------------------------------------------------


def _rows_shape(x, *, start, stop):
    if not x or not 0 <= start <= stop or (isinstance(x[0], int) and stop > x[0]):
        from ..errors import ShapeError

        raise ShapeError(f"rows: rows [{start}, {stop}) of {sh.format_shape(x)}")
    return (stop - start, *x[1:])


def _rows(xp, x, out=None, *, start, stop):
    view = x[start:stop]
    if out is None:
        return view
    out[...] = view
    return out


# `rows(x, start=, stop=)`: x[start:stop], a view (contiguous where x is C-ordered) of static
# bounds that cannot fail, unlike `index` (an op that may fail runs before every in-place
# update, which would keep the packed buffer alive to the end of the step).
rows = defop(
    "rows", _rows_shape, lambda x, **_: x, _rows,
    vjp=lambda ct, y, x, start, stop: (
        apply("index_scatter", ct, spec=(("slice", start, stop, None),), shape=tuple(x.shape)),
    ),
    views=(0,),
)  # fmt: skip


# -- a bias's gradient step: x + alpha * (the column sums of g) in one pass ------------------------


def _add_colsum(xp, x, g, out=None, *, alpha):
    """`x + alpha * sum(g, axis=0)` of a vector `x` and a matrix `g` [N, M]: the bits of
    `reduce_sum` then `mul` then `add` (alpha = -c gives `x - c * sum`: the same bits, a
    product's sign being exact)."""
    dtype = g.dtype
    if xp is np and dtype in _SUM_LOOPS and g.shape[1] >= GRAD_MIN_COLUMNS and g.shape[0]:
        loop = _SUM_LOOPS.get(dtype)
        if (
            loop is not None
            and g.flags.c_contiguous
            and x.dtype == dtype
            and x.shape == g.shape[1:]
        ):
            if out is None:
                out = np.empty(x.shape, dtype)
            if (
                out.dtype == dtype
                and out.shape == x.shape
                and (out is x or not np.may_share_memory(out, g))
            ):
                loop(x, g, dtype.type(alpha), out, _colsum_scratch(g.shape[1], dtype))
                return out
    from ..graph.opdef import REGISTRY

    total = REGISTRY["reduce_sum"].impl(xp, g, axes=(0,), keepdims=False)
    if alpha != 1:
        total = xp.multiply(total, g.dtype.type(alpha), out=total)
    return xp.add(x, total, out=out)


_COLSUM = threading.local()


def _colsum_scratch(m: int, dtype):
    """This thread's vector of m sums (grown as needed)."""
    buffers = getattr(_COLSUM, "buffers", None)
    if buffers is None:
        buffers = _COLSUM.buffers = {}
    buf = buffers.get(dtype)
    if buf is None or buf.size < m:
        buf = buffers[dtype] = np.empty(max(m, 64), dtype)
    return buf[:m]


def _build_sum(dtype):
    """The loop of `x + alpha * (g's rows summed from 0 in row order)`, as NumPy sums along the
    rows of a C-ordered array of 8 or more columns, or None."""
    try:
        import numba
    except ImportError:
        return None
    from .fused_codegen import _jit

    r = nb_type(dtype)
    text = (
        "def kernel(x, g, alpha, out, total):\n"
        f"    for j in range(g.shape[1]):\n        total[j] = {r}(0)\n"
        "    for i in range(g.shape[0]):\n        for j in range(g.shape[1]):\n"
        "            total[j] += g[i, j]\n"
        "    for j in range(g.shape[1]):\n        out[j] = x[j] + alpha * total[j]\n"
    )
    loop = _jit(numba, text)
    vector, matrix = numba.typeof(np.empty(1, dtype)), numba.typeof(np.empty((1, 1), dtype))
    try:
        loop.compile((vector, matrix, numba.typeof(dtype.type(0)), vector, vector))
    except Exception:  # noqa: BLE001 - numba refused: NumPy's kernels run instead
        return None
    return loop


_SUM_LOOPS = LazyLoops(_build_sum)  # per dtype; built on the third call


def _colsum_shape(x, g, *, alpha):
    why = (f"add_colsum: takes a vector and a matrix of its length's columns, got "
           f"{sh.format_shape(x)} and {sh.format_shape(g)}")  # fmt: skip
    if len(g) != 2 or len(x) != 1:
        from ..errors import ShapeError

        raise ShapeError(why)
    sh.require_equal(x[0], g[1], why)
    return tuple(x)


def _colsum_dtype(x, g, *, alpha):
    if x.kind != "f" or g != x:
        from ..errors import DTypeError

        raise DTypeError(f"add_colsum: takes floats of one dtype, got {x} and {g}")
    return x


def _colsum_vjp(ct, z, x, g, *, alpha):
    row = apply("reshape", ct, shape=(1, *ct.shape))
    spread = apply("broadcast_to", row, shape=tuple(g.shape))
    return ct, spread if alpha == 1 else apply("mul", spread, scalar(alpha, spread))


# `add_colsum(x, g, alpha=)`: `x + alpha * sum(g, axis=0)`, a bias's gradient step
# `b - lr * sum(g, axis=0)` in one pass over g (kiln/passes/bias_relu.py `fuse_bias_update`),
# written into x's storage when x is an updated Variable, as addmm's weight step.
add_colsum = defop(
    "add_colsum", _colsum_shape, _colsum_dtype, _add_colsum, vjp=_colsum_vjp, overwrites=(0,),
)  # fmt: skip
