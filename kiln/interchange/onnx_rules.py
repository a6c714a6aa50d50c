"""The one table of ONNX export rules, keyed by kiln op name.

A rule `rule(ex, node, xs, out)` writes the ONNX nodes computing `node`'s value from the ONNX
values `xs` (its inputs' names) through the `Exporter` `ex`, and returns the name of the result
(normally `out`). ONNX is an interchange format outside kiln, so its spelling of each op lives
here, in one place, rather than in the op records; an op with no row has no ONNX form.

Where NumPy and ONNX disagree the rule composes ONNX ops to NumPy's semantics: NaN propagates
through maximum/minimum/clip, integer floordiv and float mod round toward -inf, log1p and expm1
stay accurate near 0. Deviations left (docs/onnx.md): float floordiv is floor(a / b).
"""

from __future__ import annotations

import math

import numpy as np

from .. import dtypes as dt
from . import onnx_rules_bits as bits_rules
from . import onnx_rules_cast as cast_rules
from . import onnx_rules_control as control_rules
from . import onnx_rules_fused as fused_rules
from . import onnx_rules_index as index_rules
from . import onnx_rules_multi as multi_rules
from . import onnx_rules_nn_grad as grad_rules
from . import onnx_rules_scan as scan_rules
from . import onnx_rules_scatter as scatter_rules

INT64_MAX, INT64_MIN = np.iinfo(np.int64).max, np.iinfo(np.int64).min


def in_dtype(node, k=0):
    return node.inputs[k].dtype


def out_dtype(node):
    return node.out.dtype


def cast_all(ex, node, xs, dtype):
    return [ex.cast(x, i.dtype, dtype) for x, i in zip(xs, node.inputs)]


def scalar(ex, value, dtype):
    return ex.const(value, dtype)


# -- elementwise -------------------------------------------------------------------------------


def unary(op_type, float_only=False):
    """`op_type` on the input cast to the output dtype (NumPy's float functions of ints give
    floats); with `float_only`, integer and bool inputs pass through (floor of an int)."""

    def rule(ex, node, xs, out):
        if float_only and not dt.is_float(out_dtype(node)):
            return ex.cast(xs[0], in_dtype(node), out_dtype(node))
        return ex.emit(op_type, [ex.cast(xs[0], in_dtype(node), out_dtype(node))], out)

    return rule


# Narrow integers that ONNX's Pow and MatMul do not take: computed in a wide type and cast
# back, which wraps as the narrow arithmetic would (sums and products are exact modulo 2^n).
_WIDE = {
    np.dtype(k): np.dtype(v)
    for k, v in {"int8": "int32", "int16": "int32", "uint8": "uint32", "uint16": "uint32"}.items()
}


def binary(op_type, bool_op=None, narrow_ints=True):
    """`op_type` on the inputs cast to the output dtype; `bool_op` on bools (`+` is or);
    without `narrow_ints`, 8- and 16-bit integers are computed wide."""

    def rule(ex, node, xs, out):
        dtype = out_dtype(node)
        op = bool_op if dtype == np.bool_ and bool_op else op_type
        wide = dtype if narrow_ints else _WIDE.get(np.dtype(dtype), dtype)
        value = ex.emit(op, cast_all(ex, node, xs, wide), None if wide != dtype else out)
        return ex.cast(value, wide, dtype)

    return rule


def compare(op_type, negate=False):
    """A comparison in the inputs' promoted dtype; `negate`: its logical not."""

    def rule(ex, node, xs, out):
        a, b = cast_all(ex, node, xs, dt.promote(*(i.dtype for i in node.inputs)))
        if negate:
            return ex.emit("Not", [ex.emit(op_type, [a, b])], out)
        return ex.emit(op_type, [a, b], out)

    return rule


def logical(op_type):
    def rule(ex, node, xs, out):
        return ex.emit(op_type, cast_all(ex, node, xs, np.bool_), out)

    return rule


def _nan_select(ex, op_type, a, b, dtype, out=None):
    """Max/Min with NumPy's NaN rule (a NaN in either input gives NaN) on floats."""
    value = ex.emit(op_type, [a, b], None if dt.is_float(dtype) else out)
    if not dt.is_float(dtype):
        return value
    value = ex.emit("Where", [ex.emit("IsNaN", [b]), b, value])
    return ex.emit("Where", [ex.emit("IsNaN", [a]), a, value], out)


def select(op_type):
    def rule(ex, node, xs, out):
        a, b = cast_all(ex, node, xs, out_dtype(node))
        return _nan_select(ex, op_type, a, b, out_dtype(node), out)

    return rule


def _clip(ex, node, xs, out):
    x, lo, hi = cast_all(ex, node, xs, out_dtype(node))
    low = _nan_select(ex, "Max", x, lo, out_dtype(node))
    return _nan_select(ex, "Min", low, hi, out_dtype(node), out)


def _where(ex, node, xs, out):
    cond = ex.cast(xs[0], in_dtype(node), np.bool_)
    a, b = (ex.cast(x, i.dtype, out_dtype(node)) for x, i in zip(xs[1:], node.inputs[1:]))
    return ex.emit("Where", [cond, a, b], out)


def _relu(ex, node, xs, out):
    x = ex.cast(xs[0], in_dtype(node), out_dtype(node))
    if dt.is_float(out_dtype(node)):
        return ex.emit("Relu", [x], out)
    return ex.emit("Max", [x, scalar(ex, 0, out_dtype(node))], out)


def _relu_grad(ex, node, xs, out):  # ct * !(y <= 0): the cotangent passes at NaN
    ct = ex.cast(xs[0], in_dtype(node), out_dtype(node))
    mask = ex.emit("Not", [ex.emit("LessOrEqual", [xs[1], scalar(ex, 0, in_dtype(node, 1))])])
    return ex.emit("Mul", [ct, ex.cast(mask, np.bool_, out_dtype(node))], out)


def _logit(ex, node, xs, out):
    """log(p / (1 - p)), p clamped to [eps, 1 - eps] where eps >= 0."""
    dtype, eps = out_dtype(node), node.attrs["eps"]
    x = ex.cast(xs[0], in_dtype(node), dtype)
    if eps >= 0:
        x = _nan_select(ex, "Max", x, scalar(ex, eps, dtype), dtype)
        x = _nan_select(ex, "Min", x, scalar(ex, 1 - eps, dtype), dtype)
    ratio = ex.emit("Div", [x, ex.emit("Sub", [scalar(ex, 1, dtype), x])])
    return ex.emit("Log", [ratio], out)


def _logaddexp(ex, node, xs, out):
    """max(a, b) + log1p(exp(-|a - b|)), no gap between equal infinities (NumPy's)."""
    dtype = out_dtype(node)
    a, b = cast_all(ex, node, xs, dtype)
    gap = ex.emit("Abs", [ex.emit("Sub", [a, b])])
    gap = ex.emit("Where", [ex.emit("IsNaN", [gap]), scalar(ex, 0, dtype), gap])
    tail = _log1p_of(ex, ex.emit("Exp", [ex.emit("Neg", [gap])]), dtype)
    return ex.emit("Add", [_nan_select(ex, "Max", a, b, dtype), tail], out)


def _softplus(ex, node, xs, out):
    """relu(z) + log1p(exp(-|z|)) / beta with z = beta x (ONNX's Softplus overflows)."""
    dtype, beta = out_dtype(node), node.attrs["beta"]
    x = ex.cast(xs[0], in_dtype(node), dtype)
    b = scalar(ex, beta, dtype)
    z = x if beta == 1 else ex.emit("Mul", [x, b])
    tail = _log1p_of(ex, ex.emit("Exp", [ex.emit("Neg", [ex.emit("Abs", [z])])]), dtype)
    value = ex.emit("Add", [ex.emit("Relu", [z]), tail], out if beta == 1 else None)
    return value if beta == 1 else ex.emit("Div", [value, b], out)


def _rsqrt(ex, node, xs, out):
    x = ex.cast(xs[0], in_dtype(node), out_dtype(node))
    return ex.emit("Reciprocal", [ex.emit("Sqrt", [x])], out)


def _square(ex, node, xs, out):
    x = ex.cast(xs[0], in_dtype(node), out_dtype(node))
    return ex.emit("Mul", [x, x], out)


def _scaled_log(scale):
    def rule(ex, node, xs, out):
        x = ex.cast(xs[0], in_dtype(node), out_dtype(node))
        return ex.emit("Mul", [ex.emit("Log", [x]), scalar(ex, scale, out_dtype(node))], out)

    return rule


def _exp2(ex, node, xs, out):
    x = ex.cast(xs[0], in_dtype(node), out_dtype(node))
    return ex.emit("Pow", [scalar(ex, 2, out_dtype(node)), x], out)


def _log1p(ex, node, xs, out):
    return _log1p_of(ex, ex.cast(xs[0], in_dtype(node), out_dtype(node)), out_dtype(node), out)


def _log1p_of(ex, x, dtype, out=None):
    """log(u) * x / (u - 1) with u = 1 + x (exact where u - 1 is), x where u rounds to 1."""
    u = ex.emit("Add", [x, scalar(ex, 1, dtype)])
    d = ex.emit("Sub", [u, scalar(ex, 1, dtype)])
    log_u = ex.emit("Log", [u])
    scaled = ex.emit("Mul", [log_u, ex.emit("Div", [x, d])])
    big = ex.emit("Where", [_is_inf(ex, u, dtype), log_u, scaled])
    return ex.emit("Where", [ex.emit("Equal", [d, scalar(ex, 0, dtype)]), x, big], out)


def _expm1(ex, node, xs, out):
    """(u - 1) * x / log(u) with u = exp(x); x where u rounds to 1, -1 where u - 1 does."""
    dtype = out_dtype(node)
    x = ex.cast(xs[0], in_dtype(node), dtype)
    u = ex.emit("Exp", [x])
    d = ex.emit("Sub", [u, scalar(ex, 1, dtype)])
    scaled = ex.emit("Div", [ex.emit("Mul", [d, x]), ex.emit("Log", [u])])
    value = ex.emit("Where", [_is_inf(ex, u, dtype), u, scaled])
    minus_one = scalar(ex, -1, dtype)
    value = ex.emit("Where", [ex.emit("Equal", [d, minus_one]), minus_one, value])
    return ex.emit("Where", [ex.emit("Equal", [u, scalar(ex, 1, dtype)]), x, value], out)


def _xlogy(log1p: bool):
    """x * log(y) (log1p(y)), 0 where x == 0 and y is not NaN (kiln's xlogy, xlog1py)."""

    def rule(ex, node, xs, out):
        dtype = out_dtype(node)
        x, y = cast_all(ex, node, xs, dtype)
        log = _log1p_of(ex, y, dtype) if log1p else ex.emit("Log", [y])
        zero = scalar(ex, 0, dtype)
        mask = ex.emit(
            "And", [ex.emit("Equal", [x, zero]), ex.emit("Not", [ex.emit("IsNaN", [y])])]
        )
        return ex.emit("Where", [mask, zero, ex.emit("Mul", [x, log])], out)

    return rule


def _erfc(ex, node, xs, out):
    """1 - erf(x): ONNX has no Erfc (absolute error of erf's, not relative, in the tail)."""
    x = ex.cast(xs[0], in_dtype(node), out_dtype(node))
    return ex.emit("Sub", [scalar(ex, 1, out_dtype(node)), ex.emit("Erf", [x])], out)


def _isnan(ex, node, xs, out):
    if dt.is_float(in_dtype(node)):
        return ex.emit("IsNaN", xs, out)
    return ex.emit("Not", [ex.emit("Equal", [xs[0], xs[0]])], out)


def _isfinite(ex, node, xs, out):  # x - x is NaN exactly where x is inf or NaN
    if not dt.is_float(in_dtype(node)):
        return ex.emit("Equal", [xs[0], xs[0]], out)
    return ex.emit("Not", [ex.emit("IsNaN", [ex.emit("Sub", [xs[0], xs[0]])])], out)


def _is_inf(ex, u, dtype):
    """u == +inf (IsInf takes no float16 before opset 20)."""
    return ex.emit("Equal", [u, scalar(ex, np.inf, dtype)])


def _wrong_sign(ex, r, b, dtype):
    """Where a remainder `r` of a division by `b` is nonzero and its sign differs from b's."""
    zero = scalar(ex, 0, dtype)
    nonzero = ex.emit("Not", [ex.emit("Equal", [r, zero])])
    differ = ex.emit("Xor", [ex.emit("Less", [r, zero]), ex.emit("Less", [b, zero])])
    return ex.emit("And", [nonzero, differ])


def _floordiv(ex, node, xs, out):
    return floor_divide(ex, *cast_all(ex, node, xs, out_dtype(node)), out_dtype(node), out)


def floor_divide(ex, a, b, dtype, out=None):
    if dt.is_float(dtype):  # NOTE: floor(a / b); NumPy corrects the rounding of a / b
        return ex.emit("Floor", [ex.emit("Div", [a, b])], out)
    q = ex.emit("Div", [a, b])  # truncates toward 0
    r = ex.emit("Sub", [a, ex.emit("Mul", [q, b])])
    step = ex.cast(_wrong_sign(ex, r, b, dtype), np.bool_, dtype)
    return ex.emit("Sub", [q, step], out)


def _negative(ex, x, dtype):
    """Where x's sign is negative, -0.0 included (1 / -0.0 is -inf)."""
    zero = scalar(ex, 0, dtype)
    if not dt.is_float(dtype):
        return ex.emit("Less", [x, zero])
    below = ex.emit("Less", [ex.emit("Div", [scalar(ex, 1, dtype), x]), zero])
    return ex.emit("Or", [ex.emit("Less", [x, zero]),
                          ex.emit("And", [ex.emit("Equal", [x, zero]), below])])  # fmt: skip


def _copysign(ex, node, xs, out):
    dtype = out_dtype(node)
    a, b = cast_all(ex, node, xs, dtype)
    size = ex.emit("Abs", [a])
    return ex.emit("Where", [_negative(ex, b, dtype), ex.emit("Neg", [size]), size], out)


def _hypot(ex, node, xs, out):
    """m * sqrt((a / m)² + (b / m)²) with m = max(|a|, |b|) (0 where m is 0): no overflow."""
    dtype = out_dtype(node)
    a, b = (ex.emit("Abs", [x]) for x in cast_all(ex, node, xs, dtype))
    big, small = ex.emit("Max", [a, b]), ex.emit("Min", [a, b])
    zero = ex.emit("Equal", [big, scalar(ex, 0, dtype)])
    ratio = ex.emit("Div", [small, ex.emit("Where", [zero, scalar(ex, 1, dtype), big])])
    root = ex.emit("Sqrt", [ex.emit("Add", [scalar(ex, 1, dtype), ex.emit("Mul", [ratio, ratio])])])
    return ex.emit("Mul", [big, root], out)


def _atan2(ex, node, xs, out):
    """atan(a / b), moved by pi into b's half plane; signed zeros pick the side as NumPy."""
    dtype = out_dtype(node)
    a, b = cast_all(ex, node, xs, dtype)
    pi = scalar(ex, math.pi, dtype)
    a_neg, b_neg = _negative(ex, a, dtype), _negative(ex, b, dtype)
    turn = ex.emit("Where", [a_neg, ex.emit("Neg", [pi]), pi])
    both_zero = ex.emit("And", [ex.emit("Equal", [a, scalar(ex, 0, dtype)]),
                                ex.emit("Equal", [b, scalar(ex, 0, dtype)])])  # fmt: skip
    base = ex.emit("Where", [both_zero, a, ex.emit("Atan", [ex.emit("Div", [a, b])])])
    return ex.emit("Where", [b_neg, ex.emit("Add", [base, turn]), base], out)


_UNSIGNED = {np.dtype(f"i{n}"): np.dtype(f"u{n}") for n in (1, 2, 4, 8)}


def _shift(direction):
    """BitShift on unsigned integers; signed ones shift their bits as unsigned, and a right
    shift of a negative value is ~(~x >> s) (arithmetic, as NumPy's)."""

    def rule(ex, node, xs, out):
        dtype = np.dtype(out_dtype(node))
        x, s = cast_all(ex, node, xs, dtype)
        unsigned = _UNSIGNED.get(dtype, dtype)
        s = ex.cast(s, dtype, unsigned)
        if unsigned == dtype:
            return ex.emit("BitShift", [x, s], out, direction=direction)
        negative = ex.emit("Less", [x, scalar(ex, 0, dtype)])
        if direction == "RIGHT":
            x = ex.emit("Where", [negative, ex.emit("BitwiseNot", [x]), x])
        bits = ex.emit("BitShift", [ex.cast(x, dtype, unsigned), s], direction=direction)
        value = ex.cast(bits, unsigned, dtype)
        if direction == "LEFT":
            return ex.emit("Identity", [value], out)
        return ex.emit("Where", [negative, ex.emit("BitwiseNot", [value]), value], out)

    return rule


def _mod(ex, node, xs, out):
    dtype = out_dtype(node)
    a, b = cast_all(ex, node, xs, dtype)
    if not dt.is_float(dtype):
        return ex.emit("Mod", [a, b], out, fmod=0)  # the divisor's sign, as NumPy
    r = ex.emit("Mod", [a, b], fmod=1)
    return ex.emit("Where", [_wrong_sign(ex, r, b, dtype), ex.emit("Add", [r, b]), r], out)


def _fmod(ex, node, xs, out):
    return ex.emit("Mod", cast_all(ex, node, xs, out_dtype(node)), out, fmod=1)


def _bitwise(op_type, bool_op):
    def rule(ex, node, xs, out):
        op = bool_op if out_dtype(node) == np.bool_ else op_type
        return ex.emit(op, cast_all(ex, node, xs, out_dtype(node)), out)

    return rule


# -- reductions --------------------------------------------------------------------------------


def reduce(op_type):
    def rule(ex, node, xs, out):
        x = ex.cast(xs[0], in_dtype(node), out_dtype(node))
        axes, keepdims = node.attrs["axes"], int(node.attrs["keepdims"])
        if not axes:
            return ex.emit("Identity", [x], out)
        if out_dtype(node) == np.bool_:  # max/min of bools: ONNX's Reduce* take no bools
            value = ex.emit(op_type, [ex.cast(x, np.bool_, np.uint8), ex.ints(axes)],
                            keepdims=keepdims)  # fmt: skip
            return ex.cast(value, np.uint8, np.bool_)
        return ex.emit(op_type, [x, ex.ints(axes)], out, keepdims=keepdims)

    return rule


def _sum_to(ex, node, xs, out):
    """Sums the leading axes and those where the target is 1 and the value is not; where the
    target's size is a length the run binds, the sum is taken when it is 1 there (Where),
    the value then sliced to that size."""
    x, have, target = xs[0], node.inputs[0].shape, node.attrs["shape"]
    lead = len(have) - len(target)
    if lead:
        x = ex.emit("ReduceSum", [x, ex.ints(range(lead))], keepdims=0)
    axes = [i for i, t in enumerate(target) if t == 1 and have[lead + i] != 1]
    if axes:
        x = ex.emit("ReduceSum", [x, ex.ints(axes)], keepdims=1)
    for i, t in enumerate(target):
        if isinstance(t, int) or t == have[lead + i]:
            continue
        size = ex.dim(t)
        one = ex.emit("Equal", [size, ex.ints([1])])
        summed = ex.emit("ReduceSum", [x, ex.ints([i])], keepdims=1)
        x = ex.emit("Where", [one, summed, x])  # the sum, stretched back: its first row kept
        x = ex.emit("Slice", [x, ex.ints([0]), size, ex.ints([i])])
    return ex.emit("Reshape", [x, ex.shape(target)], out)


def arg_reduce(op_type):
    def rule(ex, node, xs, out):
        x, axis, keepdims = xs[0], node.attrs["axis"], node.attrs["keepdims"]
        if axis is None:
            x = ex.emit("Reshape", [x, ex.ints([-1])])
            index = ex.emit(op_type, [x], axis=0, keepdims=0)
            if keepdims:
                index = ex.emit("Reshape", [index, ex.ints([1] * node.inputs[0].ndim)])
        else:
            index = ex.emit(op_type, [x], axis=axis, keepdims=int(keepdims))
        return ex.cast(index, np.int64, out_dtype(node))

    return rule


def _addmm(ex, node, xs, out):
    """kiln's addmm(input, mat1, mat2) is ONNX's Gemm(mat1, mat2, input): alpha A B + beta C,
    C broadcasting to the product's shape."""
    x, a, b = xs
    alpha, beta = float(node.attrs["alpha"]), float(node.attrs["beta"])
    return ex.emit("Gemm", [a, b, x], out, alpha=alpha, beta=beta)


def _cumsum(ex, node, xs, out):
    x = ex.cast(xs[0], in_dtype(node), out_dtype(node))
    if node.inputs[0].ndim == 0:
        return ex.emit("Identity", [x], out)
    axis = ex.const(node.attrs["axis"], np.int64)
    return ex.emit("CumSum", [x, axis], out, reverse=int(node.attrs["reverse"]))


# -- movement ----------------------------------------------------------------------------------


def _reshape(ex, node, xs, out):
    return ex.emit("Reshape", [xs[0], ex.shape(node.out.shape)], out, allowzero=1)


def _broadcast_to(ex, node, xs, out):
    return ex.emit("Expand", [xs[0], ex.shape(node.out.shape)], out)


def _index(ex, node, xs, out):
    """Basic indexing: one Slice (ints as one-element slices), Squeeze, Unsqueeze."""
    starts, ends, axes, steps, squeeze, newaxes = [], [], [], [], [], []
    axis = position = 0
    for item in node.attrs["spec"]:
        if item[0] == "newaxis":
            newaxes.append(position)
            position += 1
            continue
        if item[0] == "int":
            i = item[1]
            start, stop, step = i, (INT64_MAX if i == -1 else i + 1), 1
            squeeze.append(axis)
        else:
            start, stop, step = item[1:]
            step = 1 if step is None else step
            if start is None:
                start = 0 if step > 0 else INT64_MAX
            if stop is None:
                stop = INT64_MAX if step > 0 else INT64_MIN
            position += 1
        if (start, stop, step) != (0, INT64_MAX, 1):
            starts.append(start), ends.append(stop), axes.append(axis), steps.append(step)
        axis += 1
    x = xs[0]
    if axes:
        x = ex.emit("Slice", [x, ex.ints(starts), ex.ints(ends), ex.ints(axes), ex.ints(steps)])
    if squeeze:
        x = ex.emit("Squeeze", [x, ex.ints(squeeze)])
    if newaxes:
        x = ex.emit("Unsqueeze", [x, ex.ints(newaxes)])
    return x


def _gather(ex, node, xs, out):
    return ex.emit("Gather", xs, out, axis=node.attrs["axis"])


def _unfold(ex, node, xs, out):
    """Gather of the windows' positions (count, size) along dim, the window dim moved last."""
    from ..ops.movement import window_positions

    dim, size, step = (node.attrs[k] for k in ("dim", "size", "step"))
    n = node.inputs[0].ndim
    positions = window_positions(node.inputs[0].shape[dim], size, step).astype(np.int64)
    windows = ex.emit("Gather", [xs[0], ex.const(positions, np.int64)], axis=dim)
    return ex.emit("Transpose", [windows], out,
                   perm=[*range(dim + 1), *range(dim + 2, n + 1), dim + 1])  # fmt: skip


def _take_along_axis(ex, node, xs, out):
    """GatherElements, after broadcasting the dims off the axis (NumPy's rule)."""
    axis, (x, idx) = node.attrs["axis"], node.inputs
    shape = node.out.shape
    xs = list(xs)
    for k, v in enumerate((x, idx)):
        want = tuple(v.shape[a] if a == axis else d for a, d in enumerate(shape))
        if tuple(v.shape) != want:
            xs[k] = ex.emit("Expand", [xs[k], ex.shape(want)])
    return ex.emit("GatherElements", xs, out, axis=axis)


def _transpose(ex, node, xs, out):
    if not node.attrs["perm"]:
        return ex.emit("Identity", xs, out)
    return ex.emit("Transpose", xs, out, perm=list(node.attrs["perm"]))


def _concat(ex, node, xs, out):
    return ex.emit("Concat", cast_all(ex, node, xs, out_dtype(node)), out, axis=node.attrs["axis"])


def _pad(ex, node, xs, out):
    widths = node.attrs["pad_width"]
    pads = ex.ints([b for b, _ in widths] + [a for _, a in widths])
    value = scalar(ex, node.attrs["value"], out_dtype(node))
    return ex.emit("Pad", [xs[0], pads, value], out, mode="constant")


def _tile(ex, node, xs, out):
    reps, ndim = node.attrs["reps"], node.inputs[0].ndim
    x = xs[0]
    if len(reps) > ndim:  # NumPy prepends dims of 1 to the array
        x = ex.emit("Unsqueeze", [x, ex.ints(range(len(reps) - ndim))])
    reps = (1,) * (ndim - len(reps)) + tuple(reps)
    return ex.emit("Tile", [x, ex.ints(reps)], out)


def _one_hot(ex, node, xs, out):
    if node.attrs["depth"] == 0:  # ONNX's OneHot needs depth > 0: zeros of the empty shape
        empty = ex.const(np.zeros(0), out_dtype(node))
        return ex.emit("Expand", [empty, ex.shape(node.out.shape)], out)
    # int64 indices and values, then a Cast: the one typing every runtime has a kernel for
    index = ex.cast(xs[0], in_dtype(node), np.int64)
    depth = node.attrs["depth"]  # a dim the run binds where num_classes was inferred
    depth = ex.const(depth, np.int64) if isinstance(depth, int) else ex.dim(depth)
    values = ex.const([0, 1], np.int64)
    if node.inputs[0].ndim == 0:  # OneHot needs indices of rank >= 1
        index = ex.emit("Unsqueeze", [index, ex.ints([0])])
    hot = ex.emit("OneHot", [index, depth, values], axis=-1)
    if node.inputs[0].ndim == 0:
        hot = ex.emit("Squeeze", [hot, ex.ints([0])])
    return ex.cast(hot, np.int64, out_dtype(node))


# -- nn ----------------------------------------------------------------------------------------


def _conv2d(ex, node, xs, out):
    (ph, pw), a = node.attrs["padding"], node.attrs
    x, w = cast_all(ex, node, xs, out_dtype(node))
    return ex.emit("Conv", [x, w], out, strides=list(a["stride"]), pads=[ph, pw, ph, pw],
                   dilations=list(a["dilation"]))  # fmt: skip


def pool(op_type, **extra):
    def rule(ex, node, xs, out):
        (ph, pw), a = node.attrs["padding"], node.attrs
        return ex.emit(op_type, xs, out, kernel_shape=list(a["kernel_size"]),
                       strides=list(a["stride"]), pads=[ph, pw, ph, pw], **extra)  # fmt: skip

    return rule


def _identity(ex, node, xs, out):
    return ex.emit("Identity", xs, out)


UNARY = {
    "exp": "Exp", "log": "Log", "sqrt": "Sqrt", "sin": "Sin", "cos": "Cos", "tan": "Tan",
    "asin": "Asin", "acos": "Acos", "atan": "Atan", "sinh": "Sinh", "cosh": "Cosh",
    "asinh": "Asinh", "acosh": "Acosh", "atanh": "Atanh", "tanh": "Tanh", "erf": "Erf",
    "sigmoid": "Sigmoid", "abs": "Abs", "neg": "Neg", "sign": "Sign", "det": "Det",
}  # fmt: skip
ROUNDING = {"floor": "Floor", "ceil": "Ceil", "round": "Round"}

RULES = {
    # unary float math
    **{k: unary(v) for k, v in UNARY.items()},
    **{k: unary(v, float_only=True) for k, v in ROUNDING.items()},
    "logical_not": logical("Not"),
    "isnan": _isnan,
    "isfinite": _isfinite,
    "relu": _relu,
    "relu_grad": _relu_grad,
    "softplus": _softplus,
    "logaddexp": _logaddexp,
    "logit": _logit,
    "rsqrt": _rsqrt,
    "square": _square,
    "log2": _scaled_log(1 / math.log(2)),
    "log10": _scaled_log(1 / math.log(10)),
    "exp2": _exp2,
    "log1p": _log1p,
    "expm1": _expm1,
    "erfc": _erfc,
    "xlogy": _xlogy(False),
    "xlog1py": _xlogy(True),
    "cast": cast_rules.cast,
    "stop_gradient": _identity,
    # the value (its other inputs only steer gradients, which an exported model has none of)
    "custom_grad": lambda ex, node, xs, out: ex.emit("Identity", xs[:1], out),
    "share_ties": lambda ex, node, xs, out: ex.emit("Identity", xs[1:], out),
    # binary
    "add": binary("Add", bool_op="Or"),
    "sub": binary("Sub"),
    "mul": binary("Mul", bool_op="And"),
    "div": binary("Div"),
    "pow": binary("Pow", narrow_ints=False),
    "maximum": select("Max"),
    "minimum": select("Min"),
    "floordiv": _floordiv,
    "mod": _mod,
    "fmod": _fmod,
    "equal": compare("Equal"),
    "not_equal": compare("Equal", negate=True),
    "less": compare("Less"),
    "less_equal": compare("LessOrEqual"),
    "greater": compare("Greater"),
    "greater_equal": compare("GreaterOrEqual"),
    "logical_and": logical("And"),
    "logical_or": logical("Or"),
    "bitwise_and": _bitwise("BitwiseAnd", "And"),
    "bitwise_or": _bitwise("BitwiseOr", "Or"),
    "bitwise_xor": _bitwise("BitwiseXor", "Xor"),
    "bitwise_not": _bitwise("BitwiseNot", "Not"),
    "bitwise_left_shift": _shift("LEFT"),
    "bitwise_right_shift": _shift("RIGHT"),
    "copysign": _copysign,
    "atan2": _atan2,
    "hypot": _hypot,
    "where": _where,
    "clip": _clip,
    # reductions and linear algebra
    "reduce_sum": reduce("ReduceSum"),
    "reduce_mean": reduce("ReduceMean"),
    "reduce_max": reduce("ReduceMax"),
    "reduce_min": reduce("ReduceMin"),
    "reduce_prod": reduce("ReduceProd"),
    "sum_to": _sum_to,
    "argmax": arg_reduce("ArgMax"),
    "argmin": arg_reduce("ArgMin"),
    "matmul": binary("MatMul", narrow_ints=False),
    "addmm": _addmm,
    "cumsum": _cumsum,
    **scan_rules.RULES,
    # movement
    "reshape": _reshape,
    "transpose": _transpose,
    "broadcast_to": _broadcast_to,
    "index": _index,
    "gather": _gather,
    "unfold": _unfold,
    "take_along_axis": _take_along_axis,
    "concat": _concat,
    "pad": _pad,
    "tile": _tile,
    "one_hot": _one_hot,
    "scatter": scatter_rules.scatter,
    "scatter_add": scatter_rules.scatter_add,
    "scatter_along_axis": scatter_rules.scatter_along_axis,
    "index_scatter": scatter_rules.index_scatter,
    "argsort": scatter_rules.argsort,
    **index_rules.RULES,
    # nn
    "conv2d": _conv2d,
    "max_pool2d": pool("MaxPool"),
    "avg_pool2d": pool("AveragePool", count_include_pad=1),
    "conv2d_input_grad": grad_rules.conv2d_input_grad,
    "conv2d_weight_grad": grad_rules.conv2d_weight_grad,
    "avg_pool2d_grad": grad_rules.avg_pool2d_grad,
    "max_pool2d_grad": grad_rules.max_pool2d_grad,
    "max_pool2d_gather": grad_rules.max_pool2d_gather,
    # several results: sort, topk, max_dim, min_dim, split, and get of their elements
    **multi_rules.RULES,
    # bitcast and the random ops
    **bits_rules.RULES,
    # groups and barriers: fused, after
    **fused_rules.RULES,
    # regions; their `get` (which refuses a producer written as one value) wins
    **control_rules.RULES,
}
