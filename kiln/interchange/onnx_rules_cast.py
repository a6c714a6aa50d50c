"""ONNX export of kiln's cast: PyTorch's saturation (only to float8_e4m3fn) and NumPy's
truncate-and-wrap to small ints in ONNX's terms, and the opset each newer type needs."""

from __future__ import annotations

from .. import dtypes as dt
from .onnx_rules_scatter import raise_no_form


def cast(ex, node, xs, out):
    have, want, attrs = node.inputs[0].dtype, node.out.dtype, {}
    small = dt.is_storage_only(want)
    if want == dt.float8_e8m0fnu and dt.is_float(have):
        raise_no_form(node, "(ONNX rounds to float8_e8m0fnu from the exponent field, kiln by "
                      "ml_dtypes' rounding)")  # fmt: skip
    if small and want.name.startswith("float8") and want != dt.float8_e4m3fn:
        attrs["saturate"] = 0  # kiln's casts (PyTorch's) saturate only to float8_e4m3fn
    if small and want.name.startswith(("int", "uint")) and dt.is_float(have):
        # kiln truncates to an integer, then wraps (NumPy's rule); ONNX wraps from int32
        xs = [ex.cast(xs[0], have, dt.int32)]
    _check_cast_opset(ex, node, want)
    return ex.emit("Cast", xs, out, to=ex.elem_type(want), **attrs)


def _check_cast_opset(ex, node, dtype):
    """Newer ONNX types (float8: opset 19, int4: 21, int2: 25...) need an opset whose Cast has
    them: the error names the first that does."""
    onnx = ex.onnx
    name = f"tensor({onnx.TensorProto.DataType.Name(ex.elem_type(dtype)).lower()})"

    def allows(opset):
        schema = onnx.defs.get_schema("Cast", opset)
        return any(name in c.allowed_type_strs for c in schema.type_constraints)

    if not allows(ex.opset):
        newer = [v for v in range(ex.opset + 1, onnx.defs.onnx_opset_version() + 1) if allows(v)]
        raise_no_form(
            node,
            f"to {dtype} at opset {ex.opset} (ONNX has it from "
            f"opset {newer[0] if newer else '?'}: export_onnx(..., opset=))",
        )
