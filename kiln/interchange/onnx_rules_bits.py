"""ONNX export of kiln's `bitcast` (PyTorch's `view(dtype)`), of its random ops, and of
slogdet's two results through `Det`.

`bitcast` is ONNX's BitCast (opset 26) where the element sizes agree. Where they differ, the
last dim scales by their ratio: the bytes are read as unsigned integers, split into (or joined
from) narrower ones with shifts and masks in little-endian order (NumPy's and PyTorch's on the
machines kiln runs on), and read back as the new dtype.

The random ops become RandomNormal, RandomUniform (RandomNormalLike/RandomUniformLike through a
ConstantOfShape where the shape has symbolic dims), and Bernoulli as kiln computes it: a
uniform draw in float64 compared with `p`. No `seed` is written, so every run of the model
draws fresh values, as every run of kiln's program does; the values come from the runtime's
own generator and never equal kiln's (kiln's seed stays in the node's kiln metadata, so a
model kiln exported imports back with kiln's stream).
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from .. import shapes as sh
from .onnx_rules_scatter import raise_no_form

BITCAST_OPSET = 26  # the first opset with BitCast
_UNSIGNED = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def bitcast(ex, node, xs, out):
    src, dst = np.dtype(node.inputs[0].dtype), np.dtype(node.out.dtype)
    if ex.opset < BITCAST_OPSET:
        raise_no_form(node, f"at opset {ex.opset} (ONNX has BitCast from opset {BITCAST_OPSET}: "
                      f"export_onnx(..., opset={BITCAST_OPSET}))")  # fmt: skip
    if dt.is_storage_only(src) or dt.is_storage_only(dst) or "b" in (src.kind, dst.kind):
        raise_no_form(node, f"from {src} to {dst} (BitCast takes whole-byte numeric types)")
    if src.itemsize == dst.itemsize:
        return ex.emit("BitCast", [xs[0]], out, to=ex.elem_type(dst))
    wide, narrow = max(src.itemsize, dst.itemsize), min(src.itemsize, dst.itemsize)
    k, bits = wide // narrow, 8 * narrow
    u_wide, u_narrow = _UNSIGNED[wide], _UNSIGNED[narrow]
    shape, x = node.inputs[0].shape, xs[0]
    if src.itemsize > dst.itemsize:  # split each element into k narrower ones
        words = ex.emit("BitCast", [x], to=ex.elem_type(u_wide))
        mask = ex.const((1 << bits) - 1, u_wide)
        parts = []
        for i in range(k):
            part = ex.emit("BitShift", [words, ex.const(i * bits, u_wide)], direction="RIGHT")
            part = ex.emit("BitwiseAnd", [part, mask])
            part = ex.emit("Cast", [part], to=ex.elem_type(u_narrow))
            parts.append(ex.emit("Unsqueeze", [part, ex.ints([-1])]))
        joined = ex.emit("Concat", parts, axis=-1)
        flat = ex.emit("Reshape", [joined, ex.shape(node.out.shape)])
        return ex.emit("BitCast", [flat], out, to=ex.elem_type(dst))
    # join each run of k elements into one wider one
    grouped = ex.emit("Reshape", [x, ex.shape((*shape[:-1], shape[-1] // k, k))])
    narrow_words = ex.emit("BitCast", [grouped], to=ex.elem_type(u_narrow))
    wide_words = ex.emit("Cast", [narrow_words], to=ex.elem_type(u_wide))
    pieces = ex.emit("Split", [wide_words], n_outputs=k, axis=-1, num_outputs=k)
    total = None
    for i, piece in enumerate(pieces):
        shifted = ex.emit("BitShift", [piece, ex.const(i * bits, u_wide)], direction="LEFT")
        total = shifted if total is None else ex.emit("BitwiseOr", [total, shifted])
    squeezed = ex.emit("Squeeze", [total, ex.ints([-1])])
    return ex.emit("BitCast", [squeezed], out, to=ex.elem_type(dst))


def _draw(ex, node, op_type, dtype, out, **params):
    """`op_type` (RandomNormal or RandomUniform) of the node's shape, as `dtype`."""
    shape = node.attrs["shape"]
    if not shape:  # a 0-d draw: one value, reshaped (an attr cannot be an empty list)
        one = ex.emit(op_type, [], dtype=ex.elem_type(dtype), shape=[1], **params)
        return ex.emit("Reshape", [one, ex.ints([])], out)
    if sh.is_static(shape):
        return ex.emit(op_type, [], out, dtype=ex.elem_type(dtype), shape=list(shape), **params)
    like = ex.emit("ConstantOfShape", [ex.shape(shape)])
    return ex.emit(f"{op_type}Like", [like], out, dtype=ex.elem_type(dtype), **params)


def _float_draw(op_type, params):
    def rule(ex, node, xs, out):
        dtype = np.dtype(node.out.dtype)
        if dtype not in (dt.float16, dt.float32, dt.float64):
            raise_no_form(node, f"of {dtype} (ONNX's {op_type} draws float16/32/64)")
        if dtype == dt.float16:  # drawn in float32 and rounded, as kiln draws it
            drawn = _draw(ex, node, op_type, dt.float32, None, **params(node.attrs))
            return ex.emit("Cast", [drawn], out, to=ex.elem_type(dtype))
        return _draw(ex, node, op_type, dtype, out, **params(node.attrs))

    return rule


def bernoulli(ex, node, xs, out):
    u = _draw(ex, node, "RandomUniform", dt.float64, None, low=0.0, high=1.0)
    below = ex.emit("Less", [u, ex.const(node.attrs["p"], np.float64)])
    return ex.emit("Cast", [below], out, to=ex.elem_type(node.out.dtype))


def logabsdet(ex, node, xs, out):
    """log |det A| as Log(Abs(Det)): ONNX has no slogdet; it under- or overflows where det
    does (kiln's kernel does not), and equals it within float tolerance elsewhere."""
    return ex.emit("Log", [ex.emit("Abs", [ex.emit("Det", xs)])], out)


def slogdet_sign(ex, node, xs, out):
    return ex.emit("Sign", [ex.emit("Det", xs)], out)


RULES = {
    "bitcast": bitcast,
    "logabsdet": logabsdet,
    "slogdet_sign": slogdet_sign,
    "random_normal": _float_draw(
        "RandomNormal", lambda a: {"mean": float(a["mean"]), "scale": float(a["std"])}
    ),
    "random_uniform": _float_draw(
        "RandomUniform", lambda a: {"low": float(a["low"]), "high": float(a["high"])}
    ),
    "random_bernoulli": bernoulli,
}
