"""ONNX export rules for sorting and scattering: argsort (TopK), scatter (ScatterElements), and
the gradients of gather, take_along_axis and index. Rows of the one table in onnx_rules.py."""

from __future__ import annotations

import math

import numpy as np

from .. import dtypes as dt
from ..errors import GraphError, node_error
from ..ops.movement import index_tuple
from . import onnx_rules as base


def _zeros(ex, shape, dtype):
    return ex.emit("Expand", [base.scalar(ex, 0, dtype), ex.shape(shape)])


_REDUCTIONS = {"none": "none", "sum": "add", "mean": "add", "prod": "mul", "amax": "max",
               "amin": "min"}  # fmt: skip


def _start_value(reduce, dtype):
    """The value a reduction starts from (x itself is left out)."""
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    if dt.is_float(dtype):
        return -np.inf if reduce == "amax" else np.inf
    if np.dtype(dtype) == np.bool_:
        return reduce == "amin"
    info = np.iinfo(dtype)
    return info.min if reduce == "amax" else info.max


def scatter(ex, node, xs, out):
    """ScatterElements; include_self=False first writes the reduction's identity where values
    go; mean divides the sums by the counts (rounding down on integers, as PyTorch)."""
    (x, idx, src), dtype, a = xs, base.out_dtype(node), node.attrs
    reduce, axis = a["reduce"], a["axis"]
    if tuple(node.inputs[2].shape) != tuple(node.inputs[1].shape):  # src may be larger
        starts = ex.ints([0] * node.inputs[1].ndim)
        src = ex.emit("Slice", [src, starts, ex.shape(node.inputs[1].shape)])
    if reduce != "none" and not a["include_self"]:
        fill = base.scalar(ex, _start_value(reduce, dtype), dtype)
        fill = ex.emit("Expand", [fill, ex.emit("Shape", [idx])])
        x = ex.emit("ScatterElements", [x, idx, fill], axis=axis)
    if reduce != "mean":
        return ex.emit("ScatterElements", [x, idx, src], out, axis=axis,
                       reduction=_REDUCTIONS[reduce])  # fmt: skip
    total = ex.emit("ScatterElements", [x, idx, src], axis=axis, reduction="add")
    ones = ex.emit("Expand", [base.scalar(ex, 1, np.int64), ex.emit("Shape", [idx])])
    counts = ex.emit("ScatterElements", [_zeros(ex, node.out.shape, np.int64), idx, ones],
                     axis=axis, reduction="add")  # fmt: skip
    hit = ex.emit("Greater", [counts, base.scalar(ex, 0, np.int64)])
    counts = ex.emit("Add", [counts, base.scalar(ex, int(a["include_self"]), np.int64)])
    counts = ex.cast(ex.emit("Where", [hit, counts, base.scalar(ex, 1, np.int64)]), np.int64, dtype)
    return base.floor_divide(ex, total, counts, dtype, out) if not dt.is_float(dtype) else ex.emit(
        "Div", [total, counts], out
    )  # fmt: skip


def scatter_along_axis(ex, node, xs, out):
    ct, idx = xs
    shape = node.inputs[0].shape
    if tuple(node.inputs[1].shape) != tuple(shape):
        idx = ex.emit("Expand", [idx, ex.shape(shape)])
    zeros = _zeros(ex, node.out.shape, base.out_dtype(node))
    return ex.emit("ScatterElements", [zeros, idx, ct], out, axis=node.attrs["axis"],
                   reduction="add")  # fmt: skip


def scatter_add(ex, node, xs, out):
    """gather's transpose: ScatterND (add) into zeros with the axis moved to the front."""
    (ct, idx), axis, shape = xs, node.attrs["axis"], node.attrs["shape"]
    k, ndim = node.inputs[1].ndim, len(shape)
    itype = node.inputs[1].dtype
    size = ex.emit("Reshape", [ex.cast(ex.dim(shape[axis]), np.int64, itype), ex.ints([])])
    negative = ex.emit("Less", [idx, base.scalar(ex, 0, itype)])
    idx = ex.emit("Where", [negative, ex.emit("Add", [idx, size]), idx])
    idx = ex.emit("Unsqueeze", [ex.cast(idx, node.inputs[1].dtype, np.int64), ex.ints([-1])])
    front = (axis, *range(axis), *range(axis + 1, ndim))
    zeros = _zeros(ex, tuple(shape[a] for a in front), base.out_dtype(node))
    perm = (*range(axis, axis + k), *range(axis), *range(axis + k, ndim - 1 + k))
    if perm != tuple(range(len(perm))):
        ct = ex.emit("Transpose", [ct], perm=list(perm))
    moved = ex.emit("ScatterND", [zeros, idx, ct], reduction="add")
    back = tuple(sorted(range(ndim), key=lambda i: front[i]))
    if back == tuple(range(ndim)):
        return ex.emit("Identity", [moved], out)
    return ex.emit("Transpose", [moved], out, perm=list(back))


def index_scatter(ex, node, xs, out):
    """index's transpose on a static shape: the flat positions the index reads, as a constant,
    and one ScatterElements into flat zeros."""
    shape = node.attrs["shape"]
    if not all(isinstance(d, int) for d in shape):
        raise_no_form(node, "on a symbolic shape")
    flat = np.arange(math.prod(shape), dtype=np.int64).reshape(shape)
    positions = flat[(*index_tuple(node.attrs["spec"]), Ellipsis)].reshape(-1)
    zeros = _zeros(ex, (math.prod(shape),), base.out_dtype(node))
    values = ex.emit("Reshape", [xs[0], ex.ints([-1])])
    placed = ex.emit("ScatterElements", [zeros, ex.const(positions, np.int64), values], axis=0)
    return ex.emit("Reshape", [placed, ex.ints(shape)], out, allowzero=1)


def raise_no_form(node, why):
    raise node_error(GraphError, f"op {node.op.name} has no ONNX form {why}", op=node.op.name,
                     name=node.name, site=node.site, inputs=node.inputs)  # fmt: skip


def argsort(ex, node, xs, out):
    """TopK over the whole axis: ONNX breaks ties by the lower index, in either direction,
    as kiln's stable sort."""
    x, dtype, axis = xs[0], base.in_dtype(node), node.attrs["axis"]
    if dtype == np.bool_ or np.dtype(dtype).itemsize < 4 and not dt.is_float(dtype):
        x = ex.cast(x, dtype, np.int32)
    if node.inputs[0].ndim == 0:
        x = ex.emit("Reshape", [x, ex.ints([1])])
    n = node.inputs[0].shape[axis] if node.inputs[0].ndim else 1
    _, index = ex.emit("TopK", [x, ex.dim(n)], n_outputs=2, axis=axis,
                       largest=int(node.attrs["descending"]), sorted=1)  # fmt: skip
    if node.inputs[0].ndim == 0:
        index = ex.emit("Reshape", [index, ex.ints([])])
    return ex.emit("Identity", [index], out)
