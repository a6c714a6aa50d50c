"""`FOLD`: ONNX nodes computed while importing when their inputs are known (shape arithmetic:
`Shape`, `Gather`, `Concat`... on small integer arrays, with symbolic dims as `Dim` objects)."""

from __future__ import annotations

import numpy as np

from .onnx_import import Known
from .onnx_import_rules import axes_of, slice_spec


def _fold_slice(imp, arrays, attrs):
    spec = slice_spec(imp, [Known(a) if a is not None else None for a in arrays], attrs,
                       arrays[0].ndim)  # fmt: skip
    return arrays[0][tuple(slice(*item[1:]) for item in spec)]


def _fold_gather(imp, arrays, attrs):
    return np.take(arrays[0], arrays[1], axis=attrs.get("axis", 0))


def _fold_unsqueeze(imp, arrays, attrs):
    known = [Known(a) if a is not None else None for a in arrays]
    axes = axes_of(imp, known, attrs, ndim=arrays[0].ndim + len(axes_of(imp, known, attrs)))
    return np.expand_dims(arrays[0], tuple(axes))


def _fold_squeeze(imp, arrays, attrs):
    known = [Known(a) if a is not None else None for a in arrays]
    axes = axes_of(imp, known, attrs, ndim=arrays[0].ndim)
    return np.squeeze(arrays[0], tuple(axes) if axes is not None else None)


def _fold_cast(imp, arrays, attrs):
    onnx = __import__("onnx")
    dtype = onnx.helper.tensor_dtype_to_np_dtype(attrs["to"])
    if arrays[0].dtype == object:
        return arrays[0] if dtype.kind in "iu" else None
    return arrays[0].astype(dtype)


def _fold_div(imp, arrays, attrs):
    a, b = arrays
    if a.dtype == object or b.dtype == object:
        return None
    q = np.abs(a) // np.abs(b)  # ONNX's integer Div truncates toward 0
    return (q * np.sign(a) * np.sign(b)).astype(np.result_type(a, b))


def _fold_reshape(imp, arrays, attrs):
    x, target = arrays[0], [int(d) for d in arrays[1]]
    if not attrs.get("allowzero", 0):
        target = [x.shape[a] if d == 0 else d for a, d in enumerate(target)]
    return x.reshape(target)


def _fold_split(imp, a, attrs):
    """Split's outputs (several): sizes from the input, the attr, or equal parts as ONNX's."""
    x, axis, n = a[0], int(attrs.get("axis", 0)), len(imp.node.output)
    if len(a) > 1 and a[1] is not None:
        sizes = [int(v) for v in a[1]]
    elif "split" in attrs:
        sizes = [int(v) for v in attrs["split"]]
    else:
        per = -(-x.shape[axis] // n)
        sizes = [min(per, x.shape[axis] - per * k) for k in range(n)]
    return np.split(x, np.cumsum(sizes)[:-1], axis=axis)


def _dims_ok(fold):
    def wrapped(imp, arrays, attrs):
        return fold(imp, arrays, attrs)

    wrapped.dims_ok = True
    return wrapped


FOLD = {
    "Identity": lambda imp, a, attrs: a[0],
    "Cast": _fold_cast,
    "Concat": lambda imp, a, attrs: np.concatenate(a, axis=attrs["axis"]),
    "Gather": _fold_gather,
    "Slice": _fold_slice,
    "Squeeze": _fold_squeeze,
    "Unsqueeze": _fold_unsqueeze,
    "Reshape": _fold_reshape,
    "Mul": _dims_ok(lambda imp, a, attrs: a[0] * a[1]),
    "Div": _fold_div,
    "Mod": lambda imp, a, attrs: np.fmod(a[0], a[1]) if attrs.get("fmod") else np.mod(a[0], a[1]),
    "Equal": lambda imp, a, attrs: np.equal(a[0], a[1]),
    "Less": lambda imp, a, attrs: np.less(a[0], a[1]),
    "Greater": lambda imp, a, attrs: np.greater(a[0], a[1]),
    "Not": lambda imp, a, attrs: np.logical_not(a[0]),
    "And": lambda imp, a, attrs: np.logical_and(a[0], a[1]),
    "Or": lambda imp, a, attrs: np.logical_or(a[0], a[1]),
    "Where": lambda imp, a, attrs: np.where(a[0], a[1], a[2]),
    "Max": lambda imp, a, attrs: np.maximum.reduce(np.broadcast_arrays(*a)),
    "Min": lambda imp, a, attrs: np.minimum.reduce(np.broadcast_arrays(*a)),
    "Neg": lambda imp, a, attrs: -a[0],
    "Abs": lambda imp, a, attrs: np.abs(a[0]),
    "Add": lambda imp, a, attrs: a[0] + a[1],
    "Sub": lambda imp, a, attrs: a[0] - a[1],
    "Split": _fold_split,
}
# Folds that move or multiply dims without comparing them: safe on symbolic (Dim) entries.
for _op in (
    "Identity",
    "Cast",
    "Concat",
    "Gather",
    "Slice",
    "Squeeze",
    "Unsqueeze",
    "Reshape",
    "Split",
):
    FOLD[_op] = _dims_ok(FOLD[_op])
