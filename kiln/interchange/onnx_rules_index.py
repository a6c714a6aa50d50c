"""ONNX export rules for advanced indexing: `advanced_index` (a Gather of the row-major
position the index arrays address, with Transpose/Reshape for NumPy's placement rule) and
`index_put` (a ScatterND, reduction "add" when accumulating, into x flattened, at the flat
positions `x[index]` reads), and the ops of a data-dependent length: `nonzero` (NonZero,
transposed) and `arange_of` (Range). Rows of the one table in onnx_rules.py."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from .. import shapes as sh
from ..ops.index import put_target
from . import onnx_rules as base


def _scalar_dim(ex, d):
    """Dim `d` as a 0-d int64 tensor."""
    return ex.emit("Reshape", [ex.dim(d), ex.ints([])])


def take(ex, x, shape, idxs, idx_syms, axes, out=None):
    """`x[...]` (x of `shape`) with the index arrays `idxs` at `axes`: the indexed axes moved
    first and flattened into one, the arrays' row-major position in them (negative indices
    counted from the end, broadcast by Mul and Add), one Gather; the broadcast dims go where
    the indexed dims were when those were adjacent, else first (kiln's `advanced_shape`)."""
    ndim, k = len(shape), len(axes)
    rest = [a for a in range(ndim) if a not in axes]
    perm = [*axes, *rest]
    if perm != list(range(ndim)):
        x = ex.emit("Transpose", [x], perm=perm)
    if k > 1:
        flat = (sh.dim_product([shape[a] for a in axes]), *(shape[a] for a in rest))
        x = ex.emit("Reshape", [x, ex.shape(flat)], allowzero=1)
    position = None
    for name, sym, a in zip(idxs, idx_syms, axes):
        i = ex.cast(name, sym.dtype, np.int64)
        if position is None:  # Gather counts a negative position from the end: i*R + j does
            position = i
            continue
        size = _scalar_dim(ex, shape[a])
        negative = ex.emit("Less", [i, base.scalar(ex, 0, np.int64)])
        i = ex.emit("Where", [negative, ex.emit("Add", [i, size]), i])
        position = ex.emit("Add", [ex.emit("Mul", [position, size]), i])
    adjacent = list(axes) == list(range(axes[0], axes[0] + k))
    if not adjacent or axes[0] == 0:
        return ex.emit("Gather", [x, position], out, axis=0)
    taken = ex.emit("Gather", [x, position], axis=0)
    n = max(len(s.shape) for s in idx_syms)
    before = axes[0]
    back = [*range(n, n + before), *range(n), *range(n + before, n + len(rest))]
    return ex.emit("Transpose", [taken], out, perm=back)


def advanced_index(ex, node, xs, out):
    x = node.inputs[0]
    return take(ex, xs[0], x.shape, xs[1:], node.inputs[1:], node.attrs["axes"], out)


def _positions(ex, shape):
    """x's row-major flat positions, shaped as x (an initializer on a static shape, else a
    CumSum of ones)."""
    n = sh.dim_product(shape)
    if isinstance(n, int):
        return ex.const(np.arange(n, dtype=np.int64).reshape(shape), np.int64)
    ones = ex.emit("Expand", [base.scalar(ex, 1, np.int64), ex.shape((n,))])
    flat = ex.emit("Sub", [ex.emit("CumSum", [ones, ex.ints([0])]), base.scalar(ex, 1, np.int64)])
    return ex.emit("Reshape", [flat, ex.shape(shape)], allowzero=1)


def _flat(ex, shape, tail=()):
    """The shape of a value of `shape` flattened (then `tail`): -1 where it is symbolic."""
    n = sh.dim_product(shape)
    return ex.ints([n if isinstance(n, int) else -1, *tail])


def index_put(ex, node, xs, out):
    """x flattened, with values (broadcast to `x[index]`'s shape) written or added by one
    ScatterND at the flat positions of x that `x[index]` reads: the basic part of the index
    (`spec`) applied to x's positions as `index` is, then the arrays as `advanced_index`."""
    (x, values, *idxs), a = node.inputs, node.attrs
    spec, axes = a["spec"], a["axes"]
    shape = x.shape
    target = put_target(shape, [i.shape for i in idxs], spec, axes)
    positions = _positions(ex, shape)
    if spec:
        positions = base.RULES["index"](ex, SimpleNamespace(attrs={"spec": spec}), [positions],
                                        None)  # fmt: skip
    if idxs:
        viewed = put_target(shape, [], spec, ())
        positions = take(ex, positions, viewed, xs[2:], idxs, axes)
    v = xs[1]
    extra = len(values.shape) - len(target)
    if extra > 0:  # leading 1s (the shape rule checked them)
        v = ex.emit("Reshape", [v, ex.shape(values.shape[extra:])], allowzero=1)
    if tuple(values.shape[max(extra, 0) :]) != tuple(target):
        v = ex.emit("Expand", [v, ex.emit("Shape", [positions])])  # x[index]'s, at run time
    positions = ex.emit("Reshape", [positions, _flat(ex, target, (1,))], allowzero=1)
    v = ex.emit("Reshape", [v, _flat(ex, target)], allowzero=1)
    flat = ex.emit("Reshape", [xs[0], _flat(ex, shape)], allowzero=1)
    reduction = {"reduction": "add"} if a["accumulate"] else {}
    flat = ex.emit("ScatterND", [flat, positions, v], **reduction)
    return ex.emit("Reshape", [flat, ex.shape(shape)], out, allowzero=1)


def nonzero(ex, node, xs, out):
    """kiln's (count, ndim) coordinates; ONNX's NonZero gives them (ndim, count)."""
    if node.inputs[0].ndim == 0:  # one element: (count, 1) cut to PyTorch's (count, 0)
        found = ex.emit("NonZero", [ex.emit("Reshape", [xs[0], ex.ints([1])])])
        rows = ex.emit("Transpose", [found], perm=[1, 0])
        return ex.emit("Slice", [rows, ex.ints([0]), ex.ints([0]), ex.ints([1])], out)
    return ex.emit("Transpose", [ex.emit("NonZero", [xs[0]])], out, perm=[1, 0])


def arange_of(ex, node, xs, out):
    """0, 1, … up to the 0-d length: ONNX's Range."""
    n = ex.cast(xs[0], node.inputs[0].dtype, np.dtype(np.int64))
    return ex.emit("Range", [ex.const(0, np.int64), n, ex.const(1, np.int64)], out)


RULES = {
    "advanced_index": advanced_index,
    "index_put": index_put,
    "nonzero": nonzero,
    "arange_of": arange_of,
}
