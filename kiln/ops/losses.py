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
"""

from __future__ import annotations

import math
import threading

import numpy as np

from .. import shapes as sh
from ..errors import DTypeError, ShapeError
from ..graph.opdef import REGISTRY
from .core import apply, defop
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
    by every later call (a steady-state step allocates no temporaries); a fresh array off
    NumPy."""
    if xp is not np:
        return xp.empty(shape, dtype)
    buffers = getattr(_SCRATCH, "buffers", None)
    if buffers is None:
        buffers = _SCRATCH.buffers = {}
    size = math.prod(shape) * dtype.itemsize
    buf = buffers.get(slot)
    if buf is None or buf.size < size:
        buf = buffers[slot] = np.empty(max(size, 1), np.uint8)
    return buf[:size].view(dtype).reshape(shape)


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

# The log-softmax of `x` along `axis` at `idx` (one or more indices per row, as
# take_along_axis takes them): `-log_softmax_take(logits, labels[:, None], axis=1)` is each
# example's cross-entropy. Its gradient in `x` is `log_softmax_take_grad`.
log_softmax_take = defop(
    "log_softmax_take", _take_shape, _take_dtype, _take_impl,
    vjp=lambda ct, y, x, idx, axis: (apply("log_softmax_take_grad", ct, x, idx, axis=axis), None),
    may_fail=True,  # indices out of range
    prepare=_take_prepare,
)  # fmt: skip

log_softmax_take_grad = defop(
    "log_softmax_take_grad", _grad_shape, _grad_dtype, _grad_impl,
    may_fail=True,
    prepare=_grad_prepare,
)  # fmt: skip
