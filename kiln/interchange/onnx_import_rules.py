"""The one table of ONNX import rules, keyed by ONNX op type (its rows for convolution and
pooling are in onnx_import_nn.py and onnx_import_pool.py, for reductions and softmax in
onnx_import_reduce.py, for Pad in onnx_import_pad.py, for normalization and activation ops in
onnx_import_norm.py; the shape arithmetic computed while importing is in onnx_import_fold.py).

A rule `rule(imp, inputs, attrs)` builds kiln ops for one ONNX node through the `Importer`
`imp` and returns its output value (or a list of them). `inputs` are Symbols or `Known`s (None
for an omitted optional input); `attrs` the node's attributes as Python values. Rules follow
the ONNX operator specification; where kiln's primitive differs (integer Div truncates, Gather
wraps negative indices) the rule composes kiln ops to ONNX's meaning.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from .. import shapes as sh
from .onnx_import import Known, axes_of
from .onnx_import import norm_axis as _axis
from .onnx_import_control import RULES as CONTROL_RULES
from .onnx_import_nn import conv, conv_transpose, global_pool, max_pool, one_d, pool
from .onnx_import_norm import RULES as NORM_RULES
from .onnx_import_pad import pad
from .onnx_import_random import RULES as RANDOM_RULES
from .onnx_import_reduce import arg, log_sum_exp, reduce, same_dtype, softmax, square

# -- helpers -----------------------------------------------------------------------------------


def _shape(value):
    return tuple(value.shape) if hasattr(value, "shape") and not isinstance(value, Known) else (
        tuple(value.array.shape)
    )  # fmt: skip


def _dtype(value):
    return value.dtype if not isinstance(value, Known) else value.array.dtype


def _dims(imp, value, what="shape"):
    """A 1-d known value as a tuple of ints and Dims."""
    return tuple(d if isinstance(d, sh.Dim) else int(d) for d in imp.known(value, what).reshape(-1))


def op(name, **fixed):
    """The kiln op `name` on all inputs."""
    return lambda imp, xs, attrs: imp.apply(name, *xs, **fixed)


def _variadic(name):
    def rule(imp, xs, attrs):
        value = xs[0]
        for x in xs[1:]:
            value = imp.apply(name, value, x)
        return imp.symbol(value)

    return rule


# -- elementwise -------------------------------------------------------------------------------


def _div(imp, xs, attrs):
    a, b = (imp.symbol(x) for x in xs)
    if dt.is_float(a.dtype):
        return imp.apply("div", a, b)
    # ONNX's integer Div truncates toward 0: sign(a) sign(b) (|a| // |b|)
    q = imp.apply("floordiv", imp.apply("abs", a), imp.apply("abs", b))
    return imp.apply("mul", q, imp.apply("mul", imp.apply("sign", a), imp.apply("sign", b)))


def _pow(imp, xs, attrs):  # ONNX: the base's type, whatever the exponent's
    base = imp.symbol(xs[0])
    y = imp.apply("pow", base, xs[1])
    return y if y.dtype == base.dtype else imp.apply("cast", y, dtype=base.dtype)


def _mod(imp, xs, attrs):
    return imp.apply("fmod" if attrs.get("fmod", 0) else "mod", *xs)


def _mean(imp, xs, attrs):
    total = _variadic("add")(imp, xs, attrs)
    return imp.apply("div", total, imp.scalar(len(xs), total.dtype))


def _reciprocal(imp, xs, attrs):
    x = imp.symbol(xs[0])
    return imp.apply("div", imp.scalar(1, x.dtype), x)


def _cast(imp, xs, attrs):
    onnx = __import__("onnx")
    return _cast_to(imp, xs[0], onnx.helper.tensor_dtype_to_np_dtype(attrs["to"]), attrs)


def _bit_cast(imp, xs, attrs):  # ONNX: the same bit width, so the same shape
    x = imp.symbol(xs[0])
    to = __import__("onnx").helper.tensor_dtype_to_np_dtype(attrs["to"])
    return imp.apply("bitcast", x, dtype=to, source=x.dtype)


def _cast_like(imp, xs, attrs):
    return _cast_to(imp, xs[0], _dtype(xs[1]), attrs)


# float8_e4m3fn: the least magnitude whose round to nearest even passes 448 (halfway to 480,
# the next step), where ONNX's cast without saturation gives NaN and kiln's (PyTorch's) 448.
_E4M3FN_OVERFLOW = 464.0


def _cast_to(imp, x, to, attrs):
    """ONNX's Cast: to a float8 type from a float, `saturate` (default 1) clamps finite and
    infinite values to the largest finite; float8_e8m0fnu rounds by `round_mode` (default up)
    to a power of two. kiln's cast is PyTorch's (saturating only to float8_e4m3fn)."""
    x = imp.symbol(x)
    if dt.is_float(x.dtype) and to == dt.float8_e8m0fnu:
        return _to_e8m0(imp, x, attrs)
    if dt.is_float(x.dtype) and to in dt.STORAGE_ONLY and to.name.startswith("float"):
        if attrs.get("saturate", 1):
            big = float(__import__("ml_dtypes").finfo(to).max)
            x = imp.apply("clip", x, imp.scalar(-big, x.dtype), imp.scalar(big, x.dtype))
        elif to == dt.float8_e4m3fn:
            nan, edge = imp.scalar(np.nan, x.dtype), imp.scalar(_E4M3FN_OVERFLOW, x.dtype)
            x = imp.apply("where", imp.apply("greater", imp.apply("abs", x), edge), nan, x)
    return imp.apply("cast", x, dtype=to)


def _to_e8m0(imp, x, attrs):
    """ONNX's cast to float8_e8m0fnu (as `onnx.numpy_helper.to_float8e8m0`): the float32
    exponent field, one higher where `round_mode` rounds up (never past the largest with
    `saturate`); NaN and inf give NaN, and the sign is dropped."""
    i32 = dt.int32

    def k(v):
        return imp.scalar(v, i32)

    def has(bits, mask):
        return imp.apply("not_equal", imp.apply("bitwise_and", bits, k(mask)), k(0))

    if x.dtype != dt.float32:
        x = imp.apply("cast", x, dtype=dt.float32)
    bits = imp.apply("bitcast", x, dtype=i32, source=dt.float32)
    e = imp.apply("bitwise_and", imp.apply("bitwise_right_shift", bits, k(23)), k(0xFF))
    special = imp.apply("equal", e, k(0xFF))
    mode = _text(attrs.get("round_mode", "up"))
    if mode == "up":
        up = has(bits, 0x7FFFFF)
    elif mode == "nearest":  # guard bit, and round, sticky or the exponent's lowest bit
        rest = imp.apply("logical_or", has(bits, 0x1FFFFF), imp.apply("greater", e, k(0)))
        up = imp.apply("logical_and", has(bits, 0x400000), rest)
    else:
        up = None
    if up is not None:
        up = imp.apply("logical_and", up, imp.apply("logical_not", special))
        if attrs.get("saturate", 1):
            up = imp.apply("logical_and", up, imp.apply("not_equal", e, k(0xFE)))
        e = imp.apply("add", e, imp.apply("cast", up, dtype=i32))
    e = imp.apply("cast", imp.apply("where", special, k(0xFF), e), dtype=dt.uint8)
    return imp.apply("bitcast", e, dtype=dt.float8_e8m0fnu, source=dt.uint8)


def _clip(imp, xs, attrs):
    x = imp.symbol(xs[0])
    lo = xs[1] if len(xs) > 1 and xs[1] is not None else attrs.get("min")
    hi = xs[2] if len(xs) > 2 and xs[2] is not None else attrs.get("max")
    if lo is None and hi is None:
        return x
    info = np.finfo(x.dtype) if dt.is_float(x.dtype) else np.iinfo(x.dtype)
    lo = imp.scalar(-np.inf if dt.is_float(x.dtype) else info.min, x.dtype) if lo is None else lo
    hi = imp.scalar(np.inf if dt.is_float(x.dtype) else info.max, x.dtype) if hi is None else hi
    lo, hi = (v if not isinstance(v, float) else imp.scalar(v, x.dtype) for v in (lo, hi))
    return imp.apply("clip", x, lo, hi)


def _isinf(imp, xs, attrs):
    x = imp.symbol(xs[0])
    inf = imp.scalar(np.inf, x.dtype)
    pos = imp.apply("equal", x, inf) if attrs.get("detect_positive", 1) else None
    neg = imp.apply("equal", x, imp.apply("neg", inf)) if attrs.get("detect_negative", 1) else None
    if pos is not None and neg is not None:
        return imp.apply("logical_or", pos, neg)
    if pos is None and neg is None:  # detects nothing: all false
        return imp.apply("logical_and", imp.apply("equal", x, x), imp.apply("not_equal", x, x))
    return pos if pos is not None else neg


def _leaky_relu(imp, xs, attrs):
    x = imp.symbol(xs[0])
    scaled = imp.apply("mul", x, imp.scalar(attrs.get("alpha", 0.01), x.dtype))
    return imp.apply("where", imp.apply("less", x, imp.scalar(0, x.dtype)), scaled, x)


def _elu(imp, xs, attrs):
    x = imp.symbol(xs[0])
    alpha = imp.scalar(attrs.get("alpha", 1.0), x.dtype)
    negative = imp.apply("mul", alpha, imp.apply("expm1", x))
    return imp.apply("where", imp.apply("less", x, imp.scalar(0, x.dtype)), negative, x)


def _softplus(imp, xs, attrs):
    return imp.apply("softplus", xs[0], beta=1.0)


def _softsign(imp, xs, attrs):
    x = imp.symbol(xs[0])
    return imp.apply("div", x, imp.apply("add", imp.apply("abs", x), imp.scalar(1, x.dtype)))


def _hard_sigmoid(imp, xs, attrs):
    x = imp.symbol(xs[0])
    line = imp.apply("add", imp.apply("mul", x, imp.scalar(attrs.get("alpha", 0.2), x.dtype)),
                     imp.scalar(attrs.get("beta", 0.5), x.dtype))  # fmt: skip
    return imp.apply("clip", line, imp.scalar(0, x.dtype), imp.scalar(1, x.dtype))


def _xor(imp, xs, attrs):
    return imp.apply("not_equal", *xs)


def _gemm(imp, xs, attrs):
    a, b = imp.symbol(xs[0]), imp.symbol(xs[1])
    if attrs.get("transA", 0):
        a = imp.apply("transpose", a, perm=(1, 0))
    if attrs.get("transB", 0):
        b = imp.apply("transpose", b, perm=(1, 0))
    y = imp.apply("matmul", a, b)
    if attrs.get("alpha", 1.0) != 1.0:
        y = imp.apply("mul", y, imp.scalar(attrs["alpha"], y.dtype))
    if len(xs) > 2 and xs[2] is not None:
        c = imp.symbol(xs[2])
        if attrs.get("beta", 1.0) != 1.0:
            c = imp.apply("mul", c, imp.scalar(attrs["beta"], c.dtype))
        y = imp.apply("add", y, c)
    return y


def _cumsum(imp, xs, attrs):
    x = imp.symbol(xs[0])
    axis = _axis(int(imp.known(xs[1], "axis").reshape(-1)[0]), x.ndim)
    y = same_dtype(imp, imp.apply("cumsum", x, axis=axis, reverse=bool(attrs.get("reverse", 0))), x)
    return imp.apply("sub", y, x) if attrs.get("exclusive", 0) else y


# -- movement ----------------------------------------------------------------------------------


def _reshape_to(imp, x, shape):
    return imp.apply("reshape", x, shape=tuple(shape))


def _reshape(imp, xs, attrs):
    x = imp.symbol(xs[0])
    target = list(_dims(imp, xs[1]))
    if not attrs.get("allowzero", 0):
        target = [x.shape[a] if isinstance(d, int) and d == 0 else d for a, d in enumerate(target)]
    return _reshape_to(imp, x, target)


def _flatten(imp, xs, attrs):
    x = imp.symbol(xs[0])
    axis = _axis(attrs.get("axis", 1), x.ndim)
    return _reshape_to(imp, x, (sh.dim_product(x.shape[:axis]), sh.dim_product(x.shape[axis:])))


def _squeeze(imp, xs, attrs):
    x = imp.symbol(xs[0])
    axes = axes_of(imp, xs, attrs, ndim=x.ndim)
    if axes is None:
        axes = [a for a, d in enumerate(x.shape) if d == 1]
    return _reshape_to(imp, x, [d for a, d in enumerate(x.shape) if a not in axes])


def _unsqueeze(imp, xs, attrs):
    x = imp.symbol(xs[0])
    ndim = x.ndim + len(axes_of(imp, xs, attrs))
    axes = axes_of(imp, xs, attrs, ndim=ndim)
    dims = iter(x.shape)
    return _reshape_to(imp, x, [1 if a in axes else next(dims) for a in range(ndim)])


def _transpose(imp, xs, attrs):
    x = imp.symbol(xs[0])
    perm = attrs.get("perm") or list(range(x.ndim))[::-1]
    return imp.apply("transpose", x, perm=tuple(int(p) for p in perm))


def _expand(imp, xs, attrs):
    x = imp.symbol(xs[0])
    target = sh.broadcast_shapes(x.shape, _dims(imp, xs[1]), why="Expand")
    return imp.apply("broadcast_to", x, shape=target)


def _bound(imp, value, size):
    """A slice bound as an int, or None for a symbolic one equal to the dim's whole size."""
    if not isinstance(value, sh.Dim):
        return int(value)
    if value == size:
        return None
    raise imp.error(f"slices to the symbolic bound {value}, which kiln cannot")


def slice_spec(imp, xs, attrs, ndim, shape=None):
    if len(xs) > 1:
        starts = imp.known(xs[1], "starts").reshape(-1)
        ends = imp.known(xs[2], "ends").reshape(-1)
        axes = axes_of(imp, xs, {}, k=3) or list(range(len(starts)))
        steps = imp.known(xs[4], "steps").reshape(-1) if len(xs) > 4 and xs[4] is not None else (
            [1] * len(starts))  # fmt: skip
    else:  # opset < 10: attrs
        starts, ends = attrs["starts"], attrs["ends"]
        axes, steps = attrs.get("axes", list(range(len(starts)))), [1] * len(starts)
    spec = [("slice", None, None, None)] * ndim
    for start, end, axis, step in zip(starts, ends, axes, steps):
        a = _axis(axis, ndim)
        size = shape[a] if shape is not None else None
        spec[a] = ("slice", _bound(imp, start, size), _bound(imp, end, size), int(step))
    return tuple(spec)


def _slice(imp, xs, attrs):
    x = imp.symbol(xs[0])
    return imp.apply("index", x, spec=slice_spec(imp, xs, attrs, x.ndim, x.shape))


def _split(imp, xs, attrs, count):
    x = imp.symbol(xs[0])
    axis = _axis(attrs.get("axis", 0), x.ndim)
    if len(xs) > 1 and xs[1] is not None:
        sizes = [int(s) for s in imp.known(xs[1], "split").reshape(-1)]
    elif "split" in attrs:
        sizes = [int(s) for s in attrs["split"]]
    else:
        n, parts = x.shape[axis], attrs.get("num_outputs", count)
        if not isinstance(n, int):
            raise imp.error("splits a symbolic dim, which kiln cannot")
        size = -(-n // parts)
        sizes = [min(size, n - k * size) for k in range(parts)]
    out, start = [], 0
    for s in sizes:
        spec = [("slice", None, None, None)] * axis + [("slice", start, start + s, None)]
        out.append(imp.apply("index", x, spec=tuple(spec)))
        start += s
    return out


def _gather(imp, xs, attrs):
    x = imp.symbol(xs[0])
    return imp.apply("gather", x, xs[1], axis=_axis(attrs.get("axis", 0), x.ndim),
                     wrap_negative=True)  # fmt: skip


def _gather_elements(imp, xs, attrs):
    x, idx = imp.symbol(xs[0]), imp.symbol(xs[1])
    axis = _axis(attrs.get("axis", 0), x.ndim)
    size = x.shape[axis]
    if isinstance(size, int):  # ONNX: negative indices count from the end
        zero = imp.scalar(0, idx.dtype)
        wrapped = imp.apply("add", idx, imp.scalar(size, idx.dtype))
        idx = imp.apply("where", imp.apply("less", idx, zero), wrapped, idx)
    return imp.apply("take_along_axis", x, idx, axis=axis)


def _wrapped(imp, idx, size):
    """ONNX's negative indices count from the end (kiln's scatter and take refuse them)."""
    if not isinstance(size, int):
        return idx
    zero = imp.scalar(0, idx.dtype)
    wrapped = imp.apply("add", idx, imp.scalar(size, idx.dtype))
    return imp.apply("where", imp.apply("less", idx, zero), wrapped, idx)


_SCATTER = {"none": "none", "add": "sum", "mul": "prod", "max": "amax", "min": "amin"}


def _scatter_elements(imp, xs, attrs):
    x, idx = imp.symbol(xs[0]), imp.symbol(xs[1])
    axis = _axis(attrs.get("axis", 0), x.ndim)
    reduce = _SCATTER[_text(attrs.get("reduction", "none"))]
    idx = _wrapped(imp, idx, x.shape[axis])
    return imp.apply("scatter", x, idx, xs[2], axis=axis, reduce=reduce, include_self=True)


def _scatter_nd(imp, xs, attrs):
    """ScatterND whose indices address the first axis (last index dim 1): a scatter along
    axis 0 of the flattened index positions."""
    x, idx, updates = (imp.symbol(v) for v in xs)
    k = idx.shape[-1]
    if not isinstance(k, int) or k != 1 and not all(isinstance(d, int) for d in x.shape[:k]):
        raise imp.error("with symbolic index tuples or indexed sizes has no kiln form")
    shape, rest, n = x.shape, tuple(x.shape[k:]), sh.dim_product(idx.shape[:-1])
    if k != 1:  # k-d tuples address the first k axes flattened into one: a row-major index
        sizes = np.asarray(shape[:k], idx.dtype)
        negative = imp.apply("less", idx, imp.scalar(0, idx.dtype))
        idx = imp.apply("where", negative, imp.apply("add", idx, Known(sizes)), idx)
        strides = np.cumprod([1, *shape[1:k][::-1]])[::-1].astype(idx.dtype)
        idx = imp.apply("reduce_sum", imp.apply("mul", idx, Known(strides)), axes=(idx.ndim - 1,),
                        keepdims=True)  # fmt: skip
        idx = same_dtype(imp, idx, imp.symbol(xs[1]))
        x = _reshape_to(imp, x, (int(np.prod(shape[:k])), *rest))
    idx = _reshape_to(imp, idx, (n,))
    updates = _reshape_to(imp, updates, (n, *rest))
    idx = _wrapped(imp, idx, x.shape[0])
    idx = imp.apply("broadcast_to", _reshape_to(imp, idx, (n, *(1 for _ in rest))),
                    shape=updates.shape)  # fmt: skip
    reduce = _SCATTER[_text(attrs.get("reduction", "none"))]
    y = imp.apply("scatter", x, idx, updates, axis=0, reduce=reduce, include_self=True)
    return y if k == 1 else _reshape_to(imp, y, shape)


def _text(value):
    return value.decode() if isinstance(value, bytes) else value


def _top_k(imp, xs, attrs):
    """argsort (stable: ties keep the lower index first, as ONNX's TopK) and the first k."""
    x = imp.symbol(xs[0])
    axis = _axis(attrs.get("axis", -1), x.ndim)
    k = _bound(imp, imp.known(xs[1], "k").reshape(-1)[0], x.shape[axis])
    order = imp.apply("argsort", x, axis=axis, descending=bool(attrs.get("largest", 1)))
    spec = (("slice", None, None, None),) * axis + (("slice", None if k is None else 0, k, None),)
    index = imp.apply("index", order, spec=spec)
    return [imp.apply("take_along_axis", x, index, axis=axis), index]


def _bit_shift(imp, xs, attrs):
    name = "bitwise_left_shift" if _text(attrs["direction"]) == "LEFT" else "bitwise_right_shift"
    return imp.apply(name, *xs)


def _concat(imp, xs, attrs):
    xs = [imp.symbol(x) for x in xs]
    return imp.apply("concat", *xs, axis=_axis(attrs["axis"], xs[0].ndim))


def _tile(imp, xs, attrs):
    reps = tuple(int(r) for r in imp.known(xs[1], "repeats").reshape(-1))
    return imp.apply("tile", xs[0], reps=reps)


def _one_hot(imp, xs, attrs):
    idx = imp.symbol(xs[0])
    depth = int(imp.known(xs[1], "depth").reshape(-1)[0])
    values = imp.symbol(xs[2])
    off = imp.apply("index", values, spec=(("int", 0),))
    on = imp.apply("index", values, spec=(("int", 1),))
    if dt.is_float(idx.dtype):
        idx = imp.apply("cast", idx, dtype=np.dtype(np.int64))
    zero = imp.scalar(0, idx.dtype)  # ONNX: negative indices count from the end
    idx = imp.apply("where", imp.apply("less", idx, zero),
                    imp.apply("add", idx, imp.scalar(depth, idx.dtype)), idx)  # fmt: skip
    # ONNX: an index out of range gives a row of `off` values (kiln's one_hot refuses it)
    valid = imp.apply("logical_and", imp.apply("greater_equal", idx, zero),
                      imp.apply("less", idx, imp.scalar(depth, idx.dtype)))  # fmt: skip
    idx = imp.apply("where", valid, idx, zero)
    hot = imp.apply("one_hot", idx, depth=depth, dtype=np.dtype(bool))
    hot = imp.apply("logical_and", hot, imp.apply("reshape", valid, shape=(*valid.shape, 1)))
    y = imp.apply("where", hot, on, off)
    axis = _axis(attrs.get("axis", -1), y.ndim)
    if axis != y.ndim - 1:
        perm = [*range(axis), y.ndim - 1, *range(axis, y.ndim - 1)]
        y = imp.apply("transpose", y, perm=tuple(perm))
    return y


def _shape_of(imp, xs, attrs):
    dims = list(_shape(xs[0]))
    start, end = attrs.get("start", 0), attrs.get("end", None)
    dims = dims[slice(start, end)]
    array = np.empty(len(dims), object) if any(isinstance(d, sh.Dim) for d in dims) else None
    if array is None:
        return Known(np.asarray(dims, np.int64).reshape(-1))
    array[:] = dims
    return Known(array)


def _size(imp, xs, attrs):
    n = sh.size(_shape(xs[0]))
    if isinstance(n, sh.Dim):
        raise imp.error("of a symbolic size has no kiln form")
    return Known(np.asarray(n, np.int64))


def _constant(imp, xs, attrs):
    onnx = __import__("onnx")
    if "value" in attrs:
        return Known(onnx.numpy_helper.to_array(attrs["value"]))
    for key, dtype in (("value_float", np.float32), ("value_floats", np.float32),
                       ("value_int", np.int64), ("value_ints", np.int64)):  # fmt: skip
        if key in attrs:
            return Known(np.asarray(attrs[key], dtype))
    raise imp.error(f"with attrs {sorted(attrs)} has no kiln form")


def _constant_of_shape(imp, xs, attrs):
    onnx = __import__("onnx")
    value = onnx.numpy_helper.to_array(attrs["value"]) if "value" in attrs else np.zeros(1, "f4")
    shape = _dims(imp, xs[0])
    if sh.is_static(shape):
        return Known(np.full(shape, value.reshape(-1)[0], value.dtype))
    return imp.apply("broadcast_to", Known(value.reshape(())), shape=shape)


def _range(imp, xs, attrs):
    if not all(isinstance(x, Known) for x in xs):  # bounds the graph computes
        return _range_of_values(imp, *(imp.symbol(x) for x in xs))
    start, limit, delta = (imp.known(x, "bounds").reshape(()) for x in xs)
    return Known(np.arange(start, limit, delta, dtype=start.dtype))


def _range_of_values(imp, start, limit, delta):
    """Range of computed bounds: `arange_of` the count, max(ceil((limit - start) / delta), 0),
    a length the run binds (kiln/ops/dynamic.py), scaled and shifted."""
    wide = np.dtype(np.float64)
    lo, hi, step = (imp.apply("cast", v, dtype=wide) for v in (start, limit, delta))
    steps = imp.apply("ceil", imp.apply("div", imp.apply("sub", hi, lo), step))
    count = imp.apply("cast", imp.apply("maximum", steps, imp.scalar(0, wide)),
                      dtype=np.dtype(np.int64))  # fmt: skip
    ks = imp.apply("cast", imp.apply("arange_of", count, count=sh.Dim()), dtype=start.dtype)
    steps_taken = imp.apply("mul", ks, imp.apply("cast", delta, dtype=start.dtype))
    return imp.apply("add", steps_taken, imp.apply("cast", start, dtype=start.dtype))


def _nonzero(imp, xs, attrs):
    """ONNX's (ndim, count) coordinates: kiln's `nonzero`, whose count the run binds,
    transposed."""
    found = imp.apply("nonzero", imp.symbol(xs[0]), count=sh.Dim())
    return imp.apply("transpose", found, perm=(1, 0))


def _identity(imp, xs, attrs):
    return xs[0]


UNARY = {
    "Exp": "exp", "Log": "log", "Sqrt": "sqrt", "Sin": "sin", "Cos": "cos", "Tan": "tan",
    "Asin": "asin", "Acos": "acos", "Atan": "atan", "Sinh": "sinh", "Cosh": "cosh",
    "Asinh": "asinh", "Acosh": "acosh", "Atanh": "atanh", "Tanh": "tanh", "Erf": "erf",
    "Sigmoid": "sigmoid", "Abs": "abs", "Neg": "neg", "Floor": "floor", "Ceil": "ceil",
    "Round": "round", "Sign": "sign", "Relu": "relu", "IsNaN": "isnan", "Not": "logical_not",
    "BitwiseNot": "bitwise_not", "Det": "det",
}  # fmt: skip
BINARY = {
    "Add": "add", "Sub": "sub", "Mul": "mul", "Equal": "equal", "Less": "less",
    "LessOrEqual": "less_equal", "Greater": "greater", "GreaterOrEqual": "greater_equal",
    "And": "logical_and", "Or": "logical_or", "BitwiseAnd": "bitwise_and",
    "BitwiseOr": "bitwise_or", "BitwiseXor": "bitwise_xor", "MatMul": "matmul", "Where": "where",
}  # fmt: skip

RULES = {
    **{k: op(v) for k, v in UNARY.items()},
    **{k: op(v) for k, v in BINARY.items()},
    "Div": _div,
    "Mod": _mod,
    "Pow": _pow,
    "Max": _variadic("maximum"),
    "Min": _variadic("minimum"),
    "Sum": _variadic("add"),
    "Mean": _mean,
    "Xor": _xor,
    "Reciprocal": _reciprocal,
    "Cast": _cast,
    "BitCast": _bit_cast,
    "CastLike": _cast_like,
    "Clip": _clip,
    "IsInf": _isinf,
    "LeakyRelu": _leaky_relu,
    "Elu": _elu,
    "Softplus": _softplus,
    "Softsign": _softsign,
    "HardSigmoid": _hard_sigmoid,
    "Identity": _identity,
    "ReduceSum": reduce("reduce_sum"),
    "ReduceMean": reduce("reduce_mean"),
    "ReduceMax": reduce("reduce_max"),
    "ReduceMin": reduce("reduce_min"),
    "ReduceProd": reduce("reduce_prod"),
    "ReduceSumSquare": reduce("reduce_sum", pre=square),
    "ReduceL1": reduce("reduce_sum", pre=lambda imp, x: imp.apply("abs", x)),
    "ReduceL2": reduce("reduce_sum", pre=square, post=lambda imp, y: imp.apply("sqrt", y)),
    "ReduceLogSum": reduce("reduce_sum", post=lambda imp, y: imp.apply("log", y)),
    "ReduceLogSumExp": log_sum_exp,
    "ArgMax": arg("argmax"),
    "ArgMin": arg("argmin"),
    "Softmax": softmax(log=False),
    "LogSoftmax": softmax(log=True),
    "Gemm": _gemm,
    "CumSum": _cumsum,
    "Reshape": _reshape,
    "Flatten": _flatten,
    "Squeeze": _squeeze,
    "Unsqueeze": _unsqueeze,
    "Transpose": _transpose,
    "Expand": _expand,
    "Slice": _slice,
    "Gather": _gather,
    "GatherElements": _gather_elements,
    "ScatterElements": _scatter_elements,
    "ScatterND": _scatter_nd,
    "TopK": _top_k,
    "BitShift": _bit_shift,
    "Concat": _concat,
    "Pad": pad,
    "Tile": _tile,
    "OneHot": _one_hot,
    "Shape": _shape_of,
    "Size": _size,
    "Constant": _constant,
    "ConstantOfShape": _constant_of_shape,
    "Range": _range,
    "NonZero": _nonzero,
    "Conv": one_d(conv),
    "ConvTranspose": one_d(conv_transpose),
    "MaxPool": max_pool,
    "AveragePool": pool("avg_pool2d"),
    "GlobalAveragePool": global_pool("reduce_mean"),
    "GlobalMaxPool": global_pool("reduce_max"),
}
RULES.update(NORM_RULES)
RULES.update(CONTROL_RULES)
RULES.update(RANDOM_RULES)
SUPPORTED = frozenset(RULES) | {"Split"}
RULES["Split"] = lambda imp, xs, attrs: _split(imp, xs, attrs, len(imp.node.output))
