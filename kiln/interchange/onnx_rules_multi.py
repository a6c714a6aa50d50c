"""ONNX export rules for the multi-result ops (kiln/ops/multi.py): each gives one ONNX value
name per element of the op's tuple (the exporter keeps the list, and `get` picks from it), so
TopK, ArgMax and Split write both results at once. Rows of the one table in onnx_rules.py."""

from __future__ import annotations

import numpy as np

from .. import dtypes as dt


def _order(ex, node, x, k, largest):
    """The indices of the `k` first elements of x's stable sort along the node's axis
    (TopK: ties by the lower index, in either direction, as kiln's), int64."""
    dtype, axis = node.inputs[0].dtype, node.attrs["axis"]
    if dtype == np.bool_ or np.dtype(dtype).itemsize < 4 and not dt.is_float(dtype):
        x = ex.cast(x, dtype, np.int32)
    _, index = ex.emit("TopK", [x, ex.dim(k)], n_outputs=2, axis=axis, largest=int(largest),
                       sorted=1)  # fmt: skip
    return index


def _picked(ex, node, k, largest):
    """[values, indices] of a sort or top-k (values gathered at the indices: exact)."""
    x, axis = ex.names[id(node.inputs[0])], node.attrs["axis"]
    scalar = node.inputs[0].ndim == 0
    if scalar:
        x = ex.emit("Reshape", [x, ex.ints([1])])
    index = _order(ex, node, x, k, largest)
    values = ex.emit("GatherElements", [x, index], axis=axis)
    if scalar:
        return [ex.emit("Reshape", [v, ex.ints([])]) for v in (values, index)]
    return [values, index]


def sort(ex, node, xs, out):
    x = node.inputs[0]
    n = x.shape[node.attrs["axis"]] if x.ndim else 1
    return _picked(ex, node, n, node.attrs["descending"])


def topk(ex, node, xs, out):
    return _picked(ex, node, node.attrs["k"], node.attrs["largest"])


def extremum(op_type):
    """max_dim / min_dim: ArgMax (ArgMin) kept as an axis, the values gathered there."""

    def rule(ex, node, xs, out):
        axis, keepdims = node.attrs["axis"], node.attrs["keepdims"]
        index = ex.emit(op_type, [xs[0]], axis=axis, keepdims=1)
        values = ex.emit("GatherElements", [xs[0], index], axis=axis)
        if keepdims:
            return [values, index]
        return [ex.emit("Squeeze", [v, ex.ints([axis])]) for v in (values, index)]

    return rule


def split(ex, node, xs, out):
    sizes = node.attrs["sizes"]
    names = ex.emit("Split", [xs[0], ex.ints(list(sizes))], n_outputs=len(sizes),
                    axis=node.attrs["axis"])  # fmt: skip
    return names if isinstance(names, list) else [names]


def get(ex, node, xs, out):
    """The element's ONNX value, from its op's list (no ONNX node of its own)."""
    return xs[0][node.attrs["index"]]


RULES = {
    "sort": sort,
    "topk": topk,
    "max_dim": extremum("ArgMax"),
    "min_dim": extremum("ArgMin"),
    "split": split,
    "get": get,
}
