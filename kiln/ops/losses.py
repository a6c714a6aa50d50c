"""Softmax cross-entropy as two kernels: `log_softmax_take(x, idx, axis=a)`, the log-softmax
of `x` along `a` at the indices `idx` (`take_along_axis(log_softmax(x), idx)`: the negative
loss of each example), and `log_softmax_take_grad(ct, x, idx, axis=a)`, its cotangent for `x`.

The rewrite pass `fuse_softmax_xent` (kiln/passes/softmax_xent.py) puts them in place of the
dozen nodes that `cross_entropy` and its gradient are made of. Each kernel computes what those
nodes compute, step for step with the same NumPy calls (and the same `exp`/`log` kernels: a
planned program's, `OpDef.prepare`), so a planned program gives the bits of the unfused one;
what it saves is the nodes' dispatch, the one-hot array's scatter and a broadcast copy. The
gradient recomputes the softmax from `x` (a max, an exp and a sum more) rather than keeping
it from the forward pass: one result per kernel, planned as any other.

Float32 logits along their last axis with one index per row, outside exact mode (kiln's own
`exp`, kiln/ops/vecmath.py), run as one compiled loop over the rows (numba, built on the third
call, in kiln's kernel cache like the fused loops'): NumPy's row reductions over rows of a few
classes cost about 0.1 us a row, the loop a few ns. It computes what the NumPy calls compute,
in their order: the row's maximum (a NaN wins), `exp(x - max)` by the same scalar kernel, and
their sum in NumPy's pairwise order (`_pairwise`: blocks of 8 partial sums, halves above 128
elements), so the bits stay the unfused program's; `log` stays NumPy's, on one value a row.
"""

from __future__ import annotations

import math
import threading

import numpy as np

from .. import shapes as sh
from ..errors import DTypeError, ShapeError
from ..graph.opdef import REGISTRY
from .core import apply, defop
from .lazy_loops import LazyLoops
from .movement import _scatter_along, _take_along, check_indices


def _unary(name, shapes, dtypes, backend):
    """The kernel that op `name` (exp, log) runs for one signature, `k(xp, x, out=None)`: its
    prepared one (kiln's own outside exact mode), else its `impl`."""
    op = REGISTRY[name]
    if op.prepare is not None:
        kernel = op.prepare(backend, shapes, dtypes, shapes[0])
        if kernel is not None:
            return kernel
    return op.impl


_SCRATCH = threading.local()


def _scratch(xp, slot: int, shape, dtype):
    """An array of `shape` in this thread's scratch buffer `slot`, grown as needed and reused
    by every later call (a steady-state step allocates no temporaries), the same view for the
    same (slot, shape, dtype); a fresh array off NumPy."""
    if xp is not np:
        return xp.empty(shape, dtype)
    views = getattr(_SCRATCH, "views", None)
    if views is None:
        views = _SCRATCH.views = {}
    key = (slot, shape, dtype)
    view = views.get(key)
    if view is not None:  # NOTE: the view made last time (an eager step's kernels ask ~10)
        return view
    buffers = getattr(_SCRATCH, "buffers", None)
    if buffers is None:
        buffers = _SCRATCH.buffers = {}
    size = math.prod(shape) * dtype.itemsize
    buf = buffers.get(slot)
    if buf is None or buf.size < size:
        buf = buffers[slot] = np.empty(max(size, 1), np.uint8)
        views.clear()  # (views of the buffer let go)
    if len(views) >= 64:
        views.clear()
    view = views[key] = buf[:size].view(dtype).reshape(shape)
    return view


def _offsets(xp, shape, idx, axis):
    """The flat offset of each index in a C-ordered array of `shape`, in scratch, for one
    NumPy index per row along the last axis (indices checked in range); else None."""
    if xp is not np or axis != len(shape) - 1 or not shape[-1] or idx.shape[-1:] != (1,):
        return None
    if idx.shape[:-1] != tuple(shape[:-1]) or not np.can_cast(idx.dtype, np.intp):
        return None
    rows = idx.size
    count = getattr(_SCRATCH, "count", None)  # 0, 1, 2, ...: grown as needed
    if count is None or count.size < rows:
        count = _SCRATCH.count = np.arange(max(rows, 64), dtype=np.intp)
    flat = _scratch(xp, 5, (rows,), np.dtype(np.intp))
    np.multiply(count[:rows], shape[-1], out=flat)
    flat += idx.reshape(-1)
    return flat


def _softmax_parts(xp, x, axis, exp):
    """(x - max, exp(x - max), their sum) along `axis`, in scratch: the unfused nodes' values
    by the same kernels (reduce_max, sub, exp, reduce_sum)."""
    reduced = tuple(1 if a == axis else d for a, d in enumerate(x.shape))
    m = _scratch(xp, 0, reduced, x.dtype)
    if xp is np:
        np.maximum.reduce(x, (axis,), None, m, True)
    else:
        m[...] = x.max(axis, keepdims=True)
    shifted = xp.subtract(x, m, out=_scratch(xp, 1, x.shape, x.dtype))
    e = exp(xp, shifted, out=_scratch(xp, 2, x.shape, x.dtype))
    if xp is np:
        s = np.add.reduce(e, (axis,), None, m, True)  # NOTE: into max's buffer, read by now
    else:
        s = e.sum(axis, keepdims=True)
    return shifted, e, s


def _forward(xp, x, idx, out, axis, exp, log):
    shifted, _, s = _softmax_parts(xp, x, axis, exp)
    # (shifted - log(s)) at idx: the difference taken only where it is read (elementwise, so
    # the bits of the whole array's difference, then the take)
    flat = _offsets(xp, x.shape, idx, axis)
    if flat is not None:  # the indices' flat offsets in the C-ordered `shifted`
        picked = _scratch(xp, 3, idx.shape, x.dtype)
        np.take(shifted.reshape(-1), flat, out=picked.reshape(-1), mode="clip")  # in range
    else:
        picked = _take_along(xp, shifted, idx, axis=axis)
    return xp.subtract(picked, log(xp, s, out=s), out=out)


def _backward(xp, ct, x, idx, out, axis, exp, log):
    """`onehot + (sum(-onehot) / s) * e` along `axis`, onehot the cotangent scattered to `idx`
    (zeros elsewhere), as the unfused gradient computes it: the scattered cotangent less the
    softmax times what it sums to."""
    _, e, s = _softmax_parts(xp, x, axis, exp)
    one = idx.shape[axis] == 1 and idx.shape == ct.shape
    flat = _offsets(xp, x.shape, idx, axis) if one else None
    if flat is not None and (out is None or out.flags.c_contiguous):
        # one index per row, each row's own: what scatter_along_axis's add.at into zeros
        # gives (0 + ct: a -0.0 becomes 0.0), stored
        onehot = xp.zeros(x.shape, ct.dtype) if out is None else out
        onehot.fill(0)
        values = _scratch(xp, 4, (ct.size,), ct.dtype)
        onehot.reshape(-1)[flat] = xp.add(ct.reshape(-1), ct.dtype.type(0), out=values)
    else:
        onehot = _scatter_along(xp, ct, idx, out=out, axis=axis, shape=tuple(x.shape))
    if one:
        # The row of -onehot sums to -ct exactly (every other term is a zero); where ct is
        # zero, the sum may be -0.0 or 0.0, but the row of the result is 0.0 either way
        total = xp.negative(ct, out=_scratch(xp, 3, ct.shape, ct.dtype))
    else:
        total = xp.negative(onehot)
        total = np.add.reduce(total, (axis,), None, None, True) if xp is np else total.sum(
            axis, keepdims=True)  # fmt: skip
    xp.divide(total, s, out=total)
    xp.multiply(e, total, out=e)  # NOTE: the broadcast product, into e's buffer
    return xp.add(onehot, e, out=onehot)


# -- the compiled loops (float32, kiln's exp) ---------------------------------------------------

_BLOCK = 128  # NumPy's pairwise sum: blocks of up to this many elements, halves above


def _pairwise(lo: int, n: int, leaves: list, tree: list) -> None:
    """NumPy's pairwise sum of n elements from `lo` as leaves (start, length) of at most
    `_BLOCK` elements, summed by the loop, and `tree`, the postfix order combining them (a
    leaf's index, or -1: the sum of the two values on top)."""
    if n <= _BLOCK:
        tree.append(len(leaves))
        leaves.append((lo, n))
        return
    half = n // 2
    half -= half % 8
    _pairwise(lo, half, leaves, tree)
    _pairwise(lo + half, n - half, leaves, tree)
    tree.append(-1)


# The row's sum of `row[:c]` (non-negative float32: no signed zeros) into `s`, as NumPy's
# add.reduce along a C-ordered row: each leaf below 8 elements a sum from 0 in order, else 8
# running sums (stride 8), combined ((0+1)+(2+3))+((4+5)+(6+7)), then the rest in order.
_ROW_SUM = """
        for p in range(leaves.shape[0]):
            lo = leaves[p, 0]
            n = leaves[p, 1]
            if n < 8:
                r = np.float32(0)
                for t in range(n):
                    r += row[lo + t]
            else:
                r0, r1, r2, r3 = row[lo], row[lo + 1], row[lo + 2], row[lo + 3]
                r4, r5, r6, r7 = row[lo + 4], row[lo + 5], row[lo + 6], row[lo + 7]
                t = 8
                while t < n - n % 8:
                    r0 += row[lo + t]
                    r1 += row[lo + t + 1]
                    r2 += row[lo + t + 2]
                    r3 += row[lo + t + 3]
                    r4 += row[lo + t + 4]
                    r5 += row[lo + t + 5]
                    r6 += row[lo + t + 6]
                    r7 += row[lo + t + 7]
                    t += 8
                r = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
                while t < n:
                    r += row[lo + t]
                    t += 1
            partial[p] = r
        top = 0
        for op in tree:
            if op >= 0:
                stack[top] = partial[op]
                top += 1
            else:
                top -= 1
                stack[top - 1] = stack[top - 1] + stack[top]
        s = stack[0]
"""

# Per row: the index checked (the loop returns the first row out of range, else -1), the
# maximum (NumPy's maximum.reduce: a NaN wins), exp(x - max) into `row`, their sum.
_ROWS = (
    """
    c = x.shape[1]
    for i in range(x.shape[0]):
        k = idx[i]
        if k < 0 or k >= c:
            return i
        m = x[i, 0]
        for j in range(1, c):
            v = x[i, j]
            if v > m or v != v:
                m = v
        {row}
        for j in range(c):
            row[j] = {exp}
"""
    + _ROW_SUM
)

_FORWARD = (
    "def kernel(x, idx, picked, sums, row, leaves, tree, partial, stack):"
    + _ROWS
    + """
        sums[i] = s
        picked[i] = np.float32(x[i, k] - m)
    return -1
"""
)

# The gradient, as `_backward`'s NumPy calls: 0 + e * q off the index, (ct + 0) + e * q at
# it, q = -ct / s (a -0.0 product becomes 0.0, as NumPy's sum with the zeros gives).
_BACKWARD = (
    "def kernel(ct, x, idx, out, leaves, tree, partial, stack):"
    + _ROWS
    + """
        q = np.float32(-ct[i]) / s
        ek = row[k]
        for j in range(c):
            row[j] = np.float32(0) + row[j] * q
        row[k] = (ct[i] + np.float32(0)) + ek * q
    return -1
"""
)


def _build_rows(dtype):
    """(forward loop, backward loop) of float32 rows, or None (no numba, or it refused)."""
    try:
        import numba
    except ImportError:
        return None
    from . import vecmath
    from .fused_codegen import _jit

    exp = vecmath.expr("exp", "x[i, j] - m")
    forward = _FORWARD.format(row="", exp=exp)
    backward = _BACKWARD.format(row="row = out[i]", exp=exp)
    loops = (_jit(numba, forward), _jit(numba, backward))
    try:
        f32, i64 = numba.typeof(np.empty(1, np.float32)), numba.typeof(np.empty(1, np.int64))
        m32, m64 = (
            numba.typeof(np.empty((1, 1), np.float32)),
            numba.typeof(np.empty((1, 1), np.int64)),
        )
        loops[0].compile((m32, i64, f32, f32, f32, m64, i64, f32, f32))
        loops[1].compile((f32, m32, i64, m32, m64, i64, f32, f32))
    except Exception:  # noqa: BLE001 - numba refused: NumPy's calls run instead
        return None
    return loops


_ROW_LOOPS = LazyLoops(_build_rows, dtypes=(np.float32,))  # built on the third call


class _Rows:
    """The compiled row loops for logits along their last axis with one index per row (`idx`
    of shape [..., 1]): the pairwise plan of each row length met and the loops' scratch. A
    prepared kernel serves other dims too (a program planned again at another batch size
    reuses its kernels), so nothing here is fixed to one shape."""

    def __init__(self):
        self._plans: dict = {}  # row length -> (leaves, tree)
        self._local = threading.local()  # each thread's scratch

    def _plan(self, c: int) -> tuple:
        plan = self._plans.get(c)
        if plan is None:
            leaves, tree = [], []
            _pairwise(0, c, leaves, tree)
            plan = self._plans[c] = (np.array(leaves, np.int64).reshape(-1, 2),
                                     np.array(tree, np.int64))  # fmt: skip
        return plan

    def _scratch(self, rows: int, c: int, leaves: int) -> tuple:
        """This thread's (picked, sums, row, partial sums, their stack), grown as needed."""
        arrays = getattr(self._local, "arrays", None)
        if arrays is None or arrays[0].size < rows or arrays[2].size < c or arrays[3].size < leaves:
            sizes = (rows, rows, c, leaves, leaves + 1)
            if arrays is not None:
                sizes = tuple(max(k, a.size) for k, a in zip(sizes, arrays))
            arrays = self._local.arrays = tuple(np.empty(k, np.float32) for k in sizes)
        return arrays

    def _loops(self, x, idx):
        """The loops, or None (not built yet, no numba, or arrays they were not built for)."""
        if idx.dtype != np.int64 or x.dtype != np.float32 or not x.ndim or not x.shape[-1]:
            return None
        if idx.shape != (*x.shape[:-1], 1):
            return None
        return _ROW_LOOPS.get(x.dtype)

    def forward(self, xp, x, idx, out, log):
        loops = self._loops(x, idx)
        if loops is None:
            return None
        c = x.shape[-1]
        x2 = np.ascontiguousarray(x).reshape(-1, c)
        rows = x2.shape[0]
        leaves, tree = self._plan(c)
        picked, sums, row, partial, stack = self._scratch(rows, c, len(leaves))
        picked, sums = picked[:rows], sums[:rows]
        bad = loops[0](x2, idx.reshape(-1), picked, sums, row, leaves, tree, partial, stack)
        if bad >= 0:
            check_indices(idx, c, op="log_softmax_take", dim=x.ndim - 1)
        s = log(xp, sums, out=sums)
        return xp.subtract(picked.reshape(idx.shape), s.reshape(idx.shape), out=out)

    def backward(self, xp, ct, x, idx, out):
        loops = self._loops(x, idx)
        if loops is None or ct.dtype != x.dtype or ct.shape != idx.shape:
            return None
        if out is None:
            out = np.empty(x.shape, x.dtype)
        elif not out.flags.c_contiguous:
            return None
        c = x.shape[-1]
        x2 = np.ascontiguousarray(x).reshape(-1, c)
        leaves, tree = self._plan(c)
        *_, partial, stack = self._scratch(0, 0, len(leaves))
        bad = loops[1](np.ascontiguousarray(ct).reshape(-1), x2, idx.reshape(-1),
                       out.reshape(x2.shape), leaves, tree, partial, stack)  # fmt: skip
        if bad >= 0:
            check_indices(idx, c, op="log_softmax_take_grad", dim=x.ndim - 1)
        return out


def _rows_for(x_dtype, axis, ndim, exp):
    """A `_Rows` where the compiled loops compute the op's bits (float32 logits, kiln's own
    exp, the last axis), else None."""
    if x_dtype != np.float32 or exp is REGISTRY["exp"].impl or axis != ndim - 1:
        return None
    return _Rows()


def _kernel(fn, name):
    """(impl, prepare) of an op whose kernel is `fn(xp, *arrays, out, axis, exp, log)`, its
    indices checked first."""

    def run(xp, arrays, out, axis, exp, log):
        x, idx = arrays[-2], arrays[-1]
        if x.shape[axis] or idx.size:
            check_indices(idx, x.shape[axis], op=name, dim=axis)
        return fn(xp, *arrays, out, axis, exp, log)

    def impl(xp, *arrays, out=None, axis):
        return run(xp, arrays, out, axis, REGISTRY["exp"].impl, REGISTRY["log"].impl)

    def prepare(backend, in_shapes, in_dtypes, out_shape, *, axis):
        x_shape, x_dtype = in_shapes[-2], in_dtypes[-2]
        reduced = tuple(1 if a == axis else d for a, d in enumerate(x_shape))
        exp = _unary("exp", [x_shape], [x_dtype], backend)
        log = _unary("log", [reduced], [x_dtype], backend)
        if exp is REGISTRY["exp"].impl and log is REGISTRY["log"].impl:
            return None  # `impl`: the ops' own kernels
        rows = None
        if backend.xp is np:
            rows = _rows_for(x_dtype, axis, len(x_shape), exp)
        if rows is not None:
            loop = rows.forward if name == "log_softmax_take" else rows.backward
            more = (log,) if name == "log_softmax_take" else ()

            def compiled(xp, *arrays, out=None):
                done = loop(xp, *arrays, out, *more)  # checks its indices
                return run(xp, arrays, out, axis, exp, log) if done is None else done

            return compiled

        def kernel(xp, *arrays, out=None):
            return run(xp, arrays, out, axis, exp, log)

        return kernel

    impl.__name__ = f"_{name}"
    return impl, prepare


def _take_shape(x, idx, *, axis, op="log_softmax_take"):
    if len(x) != len(idx) or not 0 <= axis < len(x):
        raise ShapeError(f"{op}: indices {sh.format_shape(idx)} do not index an array "
                         f"{sh.format_shape(x)} along dim {axis}")  # fmt: skip
    for a, (d, k) in enumerate(zip(x, idx)):
        if a != axis:
            sh.require_equal(d, k, f"{op}: indices and array differ off dim {axis}")
    return tuple(idx)


def _take_dtype(x, idx, **_):
    if x.kind != "f" or idx.kind not in "iu":
        raise DTypeError(f"log_softmax_take: takes float logits and integer indices, got {x} "
                         f"and {idx}")  # fmt: skip
    return x


def _grad_shape(ct, x, idx, *, axis):
    _take_shape(x, idx, axis=axis, op="log_softmax_take_grad")
    sh.require_equal(tuple(ct), tuple(idx), "log_softmax_take_grad: cotangent and indices differ")
    return tuple(x)


def _grad_dtype(ct, x, idx, **_):
    if ct != x:
        raise DTypeError(f"log_softmax_take_grad: cotangent {ct} and logits {x} differ")
    return _take_dtype(x, idx)


_take_impl, _take_prepare = _kernel(_forward, "log_softmax_take")
_grad_impl, _grad_prepare = _kernel(_backward, "log_softmax_take_grad")


def _take_jvp(ins, y, x, idx, *, axis):
    """The tangent of log_softmax_take: t at idx less the softmax-weighted sum of t (its
    vjp's kernel, log_softmax_take_grad, has no rule to transpose)."""
    t = ins[0]
    if t is None:
        return None
    axes = (axis,)
    top = apply("stop_gradient", apply("reduce_max", x, axes=axes, keepdims=True))
    e = apply("exp", apply("sub", x, top))
    p = apply("div", e, apply("reduce_sum", e, axes=axes, keepdims=True))
    mean = apply("reduce_sum", apply("mul", p, t), axes=axes, keepdims=True)
    return apply("sub", apply("take_along_axis", t, idx, axis=axis), mean)


# The log-softmax of `x` along `axis` at `idx` (one or more indices per row, as
# take_along_axis takes them): `-log_softmax_take(logits, labels[:, None], axis=1)` is each
# example's cross-entropy. Its gradient in `x` is `log_softmax_take_grad`.
log_softmax_take = defop(
    "log_softmax_take", _take_shape, _take_dtype, _take_impl,
    vjp=lambda ct, y, x, idx, axis: (apply("log_softmax_take_grad", ct, x, idx, axis=axis), None),
    jvp=_take_jvp,
    may_fail=True,  # indices out of range
    prepare=_take_prepare,
)  # fmt: skip


def _grad_vjp(u, g, ct, x, idx, *, axis):
    """The vjp of log_softmax_take_grad (g = onehot(idx) * ct - p * sum(ct), p the softmax
    of x along `axis`), written with ops so that higher orders follow: in ct, u at idx less
    the p-weighted sum of u; in x, the softmax's vjp of -u * sum(ct)."""
    axes = (axis,)
    top = apply("stop_gradient", apply("reduce_max", x, axes=axes, keepdims=True))
    e = apply("exp", apply("sub", x, top))
    p = apply("div", e, apply("reduce_sum", e, axes=axes, keepdims=True))
    weighted = apply("reduce_sum", apply("mul", p, u), axes=axes, keepdims=True)
    d_ct = apply("sub", apply("take_along_axis", u, idx, axis=axis), weighted)
    v = apply("neg", apply("mul", u, apply("reduce_sum", ct, axes=axes, keepdims=True)))
    pv = apply("reduce_sum", apply("mul", p, v), axes=axes, keepdims=True)
    return (d_ct, apply("mul", p, apply("sub", v, pv)), None)


log_softmax_take_grad = defop(
    "log_softmax_take_grad", _grad_shape, _grad_dtype, _grad_impl,
    vjp=_grad_vjp,
    may_fail=True,
    prepare=_grad_prepare,
)  # fmt: skip
