"""ONNX export rules for the running scans other than cumsum (which is CumSum): cumprod,
logcumsumexp, cummax_index and cummin_index, each an ONNX Scan along the axis whose body
carries the running value, in the same order as kiln's accumulate (so the same roundings).
Rows of the one table in onnx_rules.py."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np

from .. import dtypes as dt
from . import onnx_rules as base


def _running(ex, node, x, dtype, states, body, reverse=False, out=None):
    """Scan over `x` (of the node's input shape, as `dtype`) along the node's axis. `states`:
    (initial value as a Python number or an ONNX name, dtype, per-element or scalar); `body(sub,
    state names, slice name)` writes the body's nodes into `sub` and returns the new states'
    names and the slice's result (of the node's output dtype). A 0-d x is scanned as (1,)."""
    shape, axis = tuple(node.inputs[0].shape), node.attrs["axis"]
    axis = axis % len(shape) if shape else 0
    if 0 in shape:  # nothing to scan (onnxruntime's Scan fails on no elements): x's shape
        return ex.emit("Cast", [x], out, to=ex.elem_type(node.out.dtype))
    if not shape:
        x, shape, axis = ex.emit("Reshape", [x, ex.ints([1])]), (1,), 0
    element = shape[:axis] + shape[axis + 1 :]
    inits, infos = [], []
    sub = ex.child()
    names = []
    for k, (value, sdtype, per_element) in enumerate(states):
        if not isinstance(value, str):
            value = base.scalar(ex, value, sdtype)
            if per_element:
                value = ex.emit("Expand", [value, ex.shape(element)])
        inits.append(value)
        names.append(sub.unique(f"{node.name}/state{k}"))
        infos.append(ex.value_info(SimpleNamespace(shape=element if per_element else (),
                                                   dtype=sdtype), names[-1]))  # fmt: skip
    x_t = sub.unique(f"{node.name}/slice")
    infos.append(ex.value_info(SimpleNamespace(shape=element, dtype=dtype), x_t))
    sub.node = ex.node
    new, y = body(sub, names, x_t)
    outs = [sub.emit("Identity", [n], sub.unique(f"{node.name}/out{k}")) for k, n in
            enumerate([*new, y])]  # fmt: skip
    out_infos = [ex.value_info(SimpleNamespace(shape=element if s[2] else (), dtype=s[1]), n)
                 for s, n in zip(states, outs)]  # fmt: skip
    out_infos.append(ex.value_info(SimpleNamespace(shape=element, dtype=node.out.dtype), outs[-1]))
    graph = ex.onnx.helper.make_graph(sub.nodes, ex.unique(f"{node.name}/body"), infos,
                                      out_infos, sub.initializers)  # fmt: skip
    d = int(bool(reverse))
    scanned = ex.emit("Scan", [*inits, x], n_outputs=len(states) + 1, body=graph,
                      num_scan_inputs=1, scan_input_axes=[axis], scan_output_axes=[axis],
                      scan_input_directions=[d], scan_output_directions=[d])[-1]  # fmt: skip
    if not node.inputs[0].shape:
        return ex.emit("Reshape", [scanned, ex.ints([])], out)
    return ex.emit("Identity", [scanned], out)


def _wide(dtype):
    """kiln's accumulator: float16/bfloat16 in float32, ints and bools in int64."""
    dtype = np.dtype(dtype)
    if dtype in (dt.float16, dt.bfloat16):
        return np.dtype(np.float32)
    return dtype if dt.is_float(dtype) else np.dtype(np.int64)


def cumprod(ex, node, xs, out):
    acc, dtype = _wide(node.inputs[0].dtype), node.out.dtype
    x = ex.cast(xs[0], node.inputs[0].dtype, acc)

    def body(sub, states, x_t):
        y = sub.emit("Mul", [states[0], x_t])
        return [y], sub.cast(y, acc, dtype)

    return _running(ex, node, x, acc, [(1, acc, True)], body, out=out)


def _logaddexp(sub, a, b, dtype):
    """NumPy's logaddexp: a + log 2 where a == b (infinities included), else the larger
    plus log(1 + exp(-|a - b|)); NaN in either gives NaN."""
    larger = base._nan_select(sub, "Max", a, b, dtype)
    gap = sub.emit("Neg", [sub.emit("Abs", [sub.emit("Sub", [a, b])])])
    one = base.scalar(sub, 1, dtype)
    apart = sub.emit("Add", [larger, sub.emit("Log", [sub.emit("Add", [one,
                     sub.emit("Exp", [gap])])])])  # fmt: skip
    same = sub.emit("Add", [a, base.scalar(sub, math.log(2), dtype)])
    return sub.emit("Where", [sub.emit("Equal", [a, b]), same, apart])


def logcumsumexp(ex, node, xs, out):
    dtype = node.out.dtype

    def body(sub, states, x_t):
        y = _logaddexp(sub, states[0], x_t, dtype)
        return [y], y

    return _running(ex, node, xs[0], dtype, [(-np.inf, dtype, True)], body,
                    node.attrs["reverse"], out)  # fmt: skip


def running_arg(op_type):
    """cummax_index/cummin_index: carries the running best, its index and the step; the
    index moves where the slice equals the new best or is NaN (latest among ties, NaN wins:
    kiln's rule, PyTorch's)."""

    def rule(ex, node, xs, out):
        have = np.dtype(node.inputs[0].dtype)
        if dt.is_float(have):
            acc = np.dtype(np.float32) if have.itemsize < 4 else have
            worst = -np.inf if op_type == "Max" else np.inf
        else:
            acc = have if have == np.uint64 else np.dtype(np.int64)
            info = np.iinfo(acc)
            worst = info.min if op_type == "Max" else info.max
        x = ex.cast(xs[0], have, acc)
        i64 = np.dtype(np.int64)

        def body(sub, states, x_t):
            best, index, step = states
            best = base._nan_select(sub, op_type, best, x_t, acc)
            hit = sub.emit("Equal", [x_t, best])
            if dt.is_float(acc):
                hit = sub.emit("Or", [hit, sub.emit("IsNaN", [x_t])])
            index = sub.emit("Where", [hit, step, index])
            return [best, index, sub.emit("Add", [step, base.scalar(sub, 1, i64)])], index

        states = [(worst, acc, True), (0, i64, True), (0, i64, False)]
        return _running(ex, node, x, acc, states, body, out=out)

    return rule


RULES = {
    "cumprod": cumprod,
    "logcumsumexp": logcumsumexp,
    "cummax_index": running_arg("Max"),
    "cummin_index": running_arg("Min"),
}
