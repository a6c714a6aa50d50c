"""Elementwise primitives: unary and binary ufuncs, `where`, `cast`, and a few stable kernels.

Each declares its scalar form (`lowering=`, kiln/ops/lowering.py): the C expression of the
fused CUDA kernel, the numba expression of exact ops that are not one ufunc, the cost class.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import scipy.special

from .. import dtypes as dt
from .. import shapes as sh
from ..errors import ArgumentError, UnsupportedDTypeError
from . import vecmath
from .core import (
    apply,
    defop,
    half_opmath,
    in_float32,
    probe_dtype,
    same_shape,
    scalar,
    ufunc_dtype,
)
from .lazy_loops import LazyLoops
from .lowering import CTYPES, Lowering, c_cast, c_fn, c_infix, c_libm, c_rn, c_wrap, nb_type
from .select_kernels import BITS_SELECT_SIZE, ZERO_BLOCKS, mask_scratch, relu_blocks, select_bits


def special(xp):
    """scipy.special for NumPy, cupyx.scipy.special for CuPy."""
    if xp is np:
        return scipy.special
    import cupyx.scipy.special

    return cupyx.scipy.special


def _ufunc_kernel(ufunc_name, own_rule: bool = True):
    """The kernel calling xp's ufunc `ufunc_name`. `own_rule`: the op's dtype rule is that
    ufunc's type resolution, so eager mode may call the ufunc itself (`kernel.ufunc_name`)."""

    def kernel(xp, *arrays, out=None):
        return getattr(xp, ufunc_name)(*arrays, out=out)

    kernel.ufunc_name = ufunc_name if own_rule else None
    return kernel


def _ufunc_lowering(lowering: Lowering | None, ufunc) -> Lowering | None:
    """`lowering` of an op whose kernel is the one call of `ufunc`: it names the ufunc (None:
    not declared, which tests/test_op_declarations.py reports)."""
    if lowering is None:
        return None
    if lowering.not_lowered or lowering.ufunc not in (None, ufunc.__name__):
        raise ArgumentError(f"the kernel is one call of {ufunc.__name__}: lower it as that ufunc")
    return replace(lowering, ufunc=ufunc.__name__)


def unary(name, ufunc, *, lowering=None, impl=None, dtype_rule=None, vjp=None, tags=()):
    """A one-input elementwise op; by default NumPy's `ufunc` is both its kernel and dtype rule
    (and then `lowering.ufunc` names it). A kernel of its own computes bfloat16 in float32
    (`in_float32`). An op with kiln's own float32 kernel (`lowering.vecmath`) runs it outside
    exact mode in planned programs too (`vecmath.prepare_for`)."""
    rule = dtype_rule or (lambda x: ufunc_dtype(ufunc, x))
    if impl is None:
        impl = _ufunc_kernel(ufunc.__name__, own_rule=dtype_rule is None)
        lowering = _ufunc_lowering(lowering, ufunc)
    else:
        impl = in_float32(impl)
    prepare = vecmath.prepare_for(lowering.vecmath) if lowering and lowering.vecmath else None
    return defop(
        name, same_shape, rule, impl, vjp=vjp, tags={"elementwise", *tags}, lowering=lowering,
        prepare=prepare,
    )  # fmt: skip


def _broadcast2(a, b):
    return sh.broadcast_shapes(a, b)


def binary(
    name, ufunc, *, lowering=None, vjp=None, tags=(), may_fail=False, kernel=None, bools=True
):
    """A two-input broadcasting elementwise op computed by NumPy's (or CuPy's) `ufunc`, which
    `lowering.ufunc` names (`kernel`: a kernel of its own calling it, with a check).
    `bools=False`: two bool operands are refused (PyTorch has no bool kernel of the integer
    divisions and shifts, where NumPy computes them in int8).

    Its vjp returns cotangents of the output's shape: autodiff sums them back to each input.
    """

    def dtype_rule(a, b):
        if not bools and a == b == np.bool_:
            raise UnsupportedDTypeError(f"{name} does not support dtype(s) bool, bool")
        return ufunc_dtype(ufunc, a, b)

    return defop(
        name,
        _broadcast2,
        dtype_rule,
        kernel or _ufunc_kernel(ufunc.__name__),
        vjp=vjp,
        tags={"elementwise", *tags},
        may_fail=may_fail,
        lowering=_ufunc_lowering(lowering, ufunc),
    )


# -- scalar forms shared by several ops (C rules of one-ufunc ops take the loop dtype `t`) ----


def _c_arith(op, bool_op=None):
    """`+ - * /`: IEEE intrinsics on floats, wrapping on ints, `bool_op` on bools (if any)."""
    names = {"+": "add", "-": "sub", "*": "mul", "/": "div"}

    def rule(t, x, y):
        if t.kind == "f":
            return f"{c_rn(names[op], t)}({x}, {y})"
        if t.kind == "b":
            return f"({x} {bool_op} {y})" if bool_op else None
        return c_wrap(op, t, x, y) if op != "/" else None

    return rule


def _c_select(cmp):
    """maximum/minimum: the first argument wins ties; NaN propagates (NumPy's rule)."""

    def rule(t, x, y):
        if t.kind == "f":
            return f"((({x}) {cmp} ({y}) || isnan({x})) ? ({x}) : ({y}))"
        if t.kind == "b":
            return f"({x} {'||' if cmp == '>=' else '&&'} {y})"
        return f"(({x}) {cmp} ({y}) ? ({x}) : ({y}))"

    return rule


def _exact(cuda):
    """A one-ufunc op whose loop is IEEE-exact, with its C rule."""
    return Lowering(exact=True, cuda=cuda)


def _libm(name, own: bool = False):
    """A one-ufunc op computed by the libm function `name` (`own`: kiln has its own float32
    kernel of it, kiln/ops/vecmath.py)."""
    return Lowering(transcendental=True, cuda=c_libm(name), vecmath=name if own else "")


# -- unary -----------------------------------------------------------------------------------


def _c_neg(t, x):
    if t.kind == "b":
        return None
    return f"(-{x})" if t.kind == "f" else c_wrap("-", t, x)


def _c_abs(t, x):
    if t.kind == "f":
        return f"{c_fn('fabs', t)}({x})"
    if t.kind == "i":
        return f"(({x}) < 0 ? {c_wrap('-', t, x)} : ({x}))"
    return x


def _c_sign(t, x):
    c = CTYPES[t]
    if t.kind == "f":  # NumPy: sign(-0.0) is 0.0, sign(nan) is nan
        return f"({x} > 0 ? ({c})1 : ({x} < 0 ? ({c})-1 : ({x} == 0 ? ({c})0 : {x})))"
    if t.kind == "i":
        return f"(({c})(({x} > 0) - ({x} < 0)))"
    return f"(({c})({x} > 0))" if t.kind == "u" else None


def _c_sqrt(t, x):
    return f"{c_rn('sqrt', t)}({x})" if t.kind == "f" else None


def _c_rounding(name):
    return lambda t, x: f"{c_fn(name, t)}({x})" if t.kind == "f" else x


def _c_float_test(name, other):
    return lambda t, x: f"{name}({x})" if t.kind == "f" else other


neg = unary(
    "neg", np.negative, vjp=lambda ct, y, x: (-ct,), lowering=_exact(_c_neg),
    tags=("vjp_arrays", "complex_linear"),
)  # fmt: skip


def _sgn(x):
    """The derivative of |x|, PyTorch's sgn: sign(x) for real values with 0 at NaN; x / |x|
    (0 at 0) for complex ones, the gradient PyTorch gives for the magnitude."""
    if x.dtype.kind != "c":
        s = apply("sign", x)
        return apply("where", apply("isnan", x), scalar(0, s), s) if dt.is_float(x.dtype) else s
    r = apply("abs", x)
    zero = scalar(0, r)
    safe = apply("where", apply("equal", r, zero), scalar(1, r), r)
    return apply(
        "where", apply("equal", r, zero), scalar(0, x), x / apply("cast", safe, dtype=x.dtype)
    )


abs_ = unary(
    "abs",
    np.absolute,
    vjp=lambda ct, y, x: (ct * _sgn(x),),
    lowering=_exact(_c_abs),
    tags=("complex_linear",),
)  # fmt: skip  (the gradient at NaN is 0, as PyTorch's: its sgn(NaN) is 0)
exp = unary(
    "exp", np.exp, vjp=lambda ct, y, x: (ct * y,), lowering=_libm("exp", True),
    tags=("vjp_arrays", "complex"),
)  # fmt: skip
log = unary(
    "log", np.log, vjp=lambda ct, y, x: (ct / x,), lowering=_libm("log"),
    tags=("vjp_arrays", "complex"),
)  # fmt: skip
log1p = unary(
    "log1p", np.log1p, vjp=lambda ct, y, x: (ct / (x + 1),), lowering=_libm("log1p"),
    tags=("vjp_arrays", "complex"),
)  # fmt: skip
expm1 = unary(
    "expm1", np.expm1, vjp=lambda ct, y, x: (ct * (y + 1),), lowering=_libm("expm1"),
    tags=("vjp_arrays", "complex"),
)  # fmt: skip
sqrt = unary(
    "sqrt", np.sqrt, vjp=lambda ct, y, x: (ct / (y * 2),), lowering=_exact(_c_sqrt),
    tags=("vjp_arrays", "complex"),
)  # fmt: skip
square = unary(
    "square", np.square, vjp=lambda ct, y, x: (ct * x * 2,),
    lowering=_exact(lambda t, x: _c_arith("*", "&&")(t, x, x)), tags=("vjp_arrays", "complex"),
)  # fmt: skip
sin = unary(
    "sin", np.sin, vjp=lambda ct, y, x: (ct * apply("cos", x),), lowering=_libm("sin"),
    tags=("vjp_arrays", "complex"),
)  # fmt: skip
cos = unary(
    "cos", np.cos, vjp=lambda ct, y, x: (-ct * apply("sin", x),), lowering=_libm("cos"),
    tags=("vjp_arrays", "complex"),
)  # fmt: skip
tanh = unary(
    "tanh", np.tanh, vjp=lambda ct, y, x: (half_opmath(lambda c, y: c * (1 - y * y), ct, y),),
    lowering=_libm("tanh", True),
    tags=("vjp_arrays", "complex"),
)  # fmt: skip
sign = unary("sign", np.sign, tags={"nondiff"}, lowering=_exact(_c_sign))
floor = unary("floor", np.floor, tags={"nondiff"}, lowering=_exact(_c_rounding("floor")))
ceil = unary("ceil", np.ceil, tags={"nondiff"}, lowering=_exact(_c_rounding("ceil")))
logical_not = unary(
    "logical_not", np.logical_not, lowering=_exact(lambda t, x: f"(({x}) == 0)"),
    tags=("complex_linear",),
)  # fmt: skip
# Exact scalar forms too, not declared so: their programs stay on NumPy, off numba loops.
isnan = unary(
    "isnan", np.isnan, lowering=Lowering(cuda=_c_float_test("isnan", "false")),
    tags=("complex_linear",),
)  # fmt: skip
isfinite = unary(
    "isfinite", np.isfinite, lowering=Lowering(cuda=_c_float_test("isfinite", "true")),
    tags=("complex_linear",),
)  # fmt: skip


_HALF_DTYPES = (np.dtype(np.float16), dt.bfloat16)


def _copy_result(result, out):
    if out is None:
        return result
    out[...] = result
    return out


def _rsqrt(xp, x, out=None):
    if x.dtype == np.float16:  # in float32, rounded once (PyTorch's float16 kernel)
        return _copy_result(_rsqrt(xp, x.astype(np.float32)).astype(np.float16), out)
    out = xp.asarray(xp.sqrt(x, out=out))  # 0-d: ufuncs return scalars
    if out.dtype.kind == "c":  # 1 / 0j is inf + nan j (PyTorch's); NumPy's reciprocal: nan + nan j
        return xp.divide(out.dtype.type(1), out, out=out)
    return xp.reciprocal(out, out=out)


def _rsqrt_numba(xs, dtypes, out, attrs):
    r = nb_type(out)
    return f"{r}({r}(1) / {r}(np.sqrt({r}({xs[0]}))))"


def _rsqrt_c(k, xs, dtypes, out, attrs):  # NumPy: sqrt, then reciprocal (two roundings)
    if out.kind != "f":
        return None
    x, c = c_cast(xs[0], dtypes[0], out), CTYPES[out]
    return f"{c_rn('div', out)}(({c})1, {c_rn('sqrt', out)}({x}))"


def _rsqrt_vjp(ct, y, x):
    # PyTorch's: -0.5 * ct * y**3, its float16 cube in float32 rounded once, bfloat16's step
    # by step; kiln's own order for float32 and float64
    if y.dtype == np.float16:
        return (ct * -0.5 * half_opmath(lambda y: y * y * y, y),)
    if y.dtype == dt.bfloat16:
        return (ct * -0.5 * (y * y * y),)
    return (ct * y * y * y * -0.5,)


rsqrt = unary(
    "rsqrt", np.sqrt, impl=_rsqrt, vjp=_rsqrt_vjp,
    lowering=Lowering(exact=True, numba=_rsqrt_numba, cuda=_rsqrt_c),
    tags=("vjp_arrays", "complex"),
)  # fmt: skip


def _as_float(xp, x):
    return x if x.dtype.kind == "f" else x.astype(ufunc_dtype(np.sqrt, x.dtype))


def _sigmoid(xp, x, out=None):
    if x.dtype == np.float16:  # in float32, rounded once (PyTorch's float16 kernel)
        return _copy_result(_sigmoid(xp, x.astype(np.float32)).astype(np.float16), out)
    if x.dtype.kind == "c":  # 1 / (1 + exp(-x)): logaddexp has no complex loop
        out = xp.asarray(xp.negative(x, out=out))
        xp.exp(out, out=out)
        xp.add(out, 1, out=out)
        return xp.reciprocal(out, out=out)
    # exp(-log(1 + exp(-x))): no overflow for large |x| of either sign.
    out = xp.asarray(xp.negative(_as_float(xp, x), out=out))  # 0-d: ufuncs return scalars
    xp.logaddexp(0, out, out=out)
    xp.negative(out, out=out)
    return xp.exp(out, out=out)


def _sigmoid_c(k, xs, dtypes, out, attrs):  # exp(-logaddexp(0, -x)), as the kernel
    if out.kind != "f":
        return None
    x, c = c_cast(xs[0], dtypes[0], out), CTYPES[out]
    return f"{c_fn('exp', out)}(-{k.logaddexp(out)}(({c})0, -{x}))"


def _sigmoid_vjp(ct, y, x):
    # PyTorch's CPU kernels: float16 step by step as ct * (1 - y) * y, bfloat16 so in float32
    # rounded once; float32 and float64 as kiln always computed them.
    if y.dtype == np.float16:
        return (ct * (1 - y) * y,)
    if y.dtype == dt.bfloat16:
        return (half_opmath(lambda c, y: c * (1 - y) * y, ct, y),)
    return (ct * y * (1 - y),)


sigmoid = unary(
    "sigmoid", np.sqrt, impl=_sigmoid, vjp=_sigmoid_vjp,
    lowering=Lowering(transcendental=True, cuda=_sigmoid_c),
    tags=("vjp_arrays", "complex"),
)  # fmt: skip


def _relu_dtype(x):
    return ufunc_dtype(np.maximum, x, int)  # 0 as NumPy 2's weak scalar: bools become int64


def _relu(xp, x, out=None):
    # NumPy's maximum(x, 0), NaN included, whatever xp's rules for scalars (CuPy 13: NumPy 1's)
    dtype = _relu_dtype(x.dtype)
    if xp is np and x.dtype in ZERO_BLOCKS and x.size >= 256 and x.flags.c_contiguous:
        if out is None:
            out = np.empty(x.shape, dtype)
        if out.flags.c_contiguous and out.shape == x.shape:
            return relu_blocks(x, out)
    return xp.maximum(x if x.dtype == dtype else x.astype(dtype), dtype.type(0), out=out)


_SELECT_BITS_FROM = 4096  # (elements: below, `where`'s one op costs less than two)


def _masked(ct, mask):
    """`ct` where `mask` holds, else 0: a select, as PyTorch's masked_fill (a product by the
    mask gave NaN for an inf or NaN cotangent outside it). Small: `where`. Large: `relu_grad`
    of the mask as 0/1, whose kernel selects by bits (NumPy's `where` on a mask without long
    runs, a ReLU's, takes ~6x the time of a product at f32[128,512])."""
    if int(np.prod(ct.shape)) < _SELECT_BITS_FROM:
        return apply("where", mask, ct, scalar(0, ct))
    return apply("relu_grad", ct, apply("cast", mask, dtype=ct.dtype))


def _relu_vjp(ct, y, x):
    # The cotangent passes where x > 0 or x is NaN (not at 0), which is where y is: reading y,
    # not x, lets x die in the forward pass, and `relu_grad` keeps no mask between the passes.
    return (apply("relu_grad", ct, y),)


# backward's array path (kiln/eager/autograd.py `_ARRAY_VJP`): the kernel on the bare arrays
_relu_vjp.arrays = lambda ct, y, x: (_relu_grad(np, ct, y),)


def _relu_grad(xp, ct, y, out=None):
    # ct, with 0 where y <= 0: a select, not a product by the mask (PyTorch's
    # threshold_backward: a NaN or inf cotangent gives 0 there too, not NaN)
    dtype = np.result_type(ct.dtype, np.bool_)
    if xp is not np:
        got = xp.where(xp.less_equal(y, 0), xp.zeros((), dtype), ct.astype(dtype, copy=False))
        if out is None:
            return got
        out[...] = got
        return out
    if ct.size >= _RELU_GRAD_LOOP_SIZE and ct.dtype in _RELU_GRAD_LOOPS:
        done = _relu_grad_compiled(ct, y, out)
        if done is not None:
            return done
    mask = xp.less_equal(y, 0, out=mask_scratch(y.shape))
    if out is None:
        out = xp.empty(np.broadcast_shapes(ct.shape, y.shape), dtype)
    if ct.size >= BITS_SELECT_SIZE and ct.shape == y.shape == out.shape and (
            ct.dtype == dtype == out.dtype and dtype.kind in "fV"):  # fmt: skip
        return select_bits(ct, mask, out, keep=False)
    if out is not ct:
        xp.copyto(out, ct)
    xp.copyto(out, 0, where=mask)
    return out


# relu_grad of large float32/float64 arrays as one compiled pass (numba, its source in
# kiln's kernel cache like the fused loops'): NumPy's comparison, then its product of a float
# and a bool array (a casting loop), take 2.3x as long (f32[128, 512]: 19 us against 8).
# Built on the third large call (one-off runs never compile); the same
# expression as the fused loops' (`_relu_grad_numba`), exact: NumPy's bits.
_RELU_GRAD_LOOP_SIZE = 1 << 12  # elements: below, NumPy (a loop's dispatch costs as much)


def _relu_grad_compiled(ct, y, out):
    """`y <= 0 ? 0 : ct` by the compiled loop, or None (not built yet, no numba, or arrays it
    does not take: NumPy's kernel then)."""
    dtype = ct.dtype
    loop = _RELU_GRAD_LOOPS.get(dtype)
    if loop is None or y.dtype != dtype or y.shape != ct.shape:
        return None
    if out is ct:  # in place (a planned program's usual call): the checks below, fewer
        if not (ct.flags.c_contiguous and y.flags.c_contiguous) or np.may_share_memory(y, ct):
            return None
        loop[1](ct.reshape(-1), y.reshape(-1))
        return ct
    if out is None:
        out = np.empty(ct.shape, dtype)
    elif out.dtype != dtype or out.shape != ct.shape or not out.flags.c_contiguous:
        return None
    if not (ct.flags.c_contiguous and y.flags.c_contiguous) or np.may_share_memory(y, out):
        return None
    ptr = lambda a: a.__array_interface__["data"][0]  # noqa: E731
    if np.may_share_memory(ct, out):
        if ptr(ct) != ptr(out):
            return None  # a partial overlap
        # NOTE: in place, a loop of its own: with `out` aliasing `ct` the three-array loop
        # runs unvectorized (its overlap check fails), slower than NumPy
        loop[1](out.reshape(-1), y.reshape(-1))
    else:
        loop[0](ct.reshape(-1), y.reshape(-1), out.reshape(-1))
    return out


def _build_relu_grad_loop(dtype):
    """(loop(ct, y, out), loop(ct, y) writing into ct), or None."""
    try:
        import numba
    except ImportError:
        return None
    from .fused_codegen import _jit

    expr = _relu_grad_numba(["ct[i]", "y[i]"], (dtype, dtype), dtype, {})
    body = f"\n    for i in range(ct.shape[0]):\n        {{}}[i] = {expr}\n"
    texts = (
        "def kernel(ct, y, out):" + body.format("out"),
        "def kernel(ct, y):" + body.format("ct"),
    )
    loops = tuple(_jit(numba, text) for text in texts)
    array = numba.typeof(np.empty(1, dtype))
    try:
        loops[0].compile((array,) * 3)
        loops[1].compile((array,) * 2)
    except Exception:  # noqa: BLE001 - numba refused: NumPy's kernel runs instead
        return None
    return loops


_RELU_GRAD_LOOPS = LazyLoops(_build_relu_grad_loop)  # per dtype


def _relu_grad_numba(xs, dtypes, out, attrs):  # y <= 0 ? 0 : ct, in ct's dtype: exact
    r = nb_type(out)
    return f"({r}(0) if {xs[1]} <= 0 else {r}({xs[0]}))"


def _relu_grad_c(k, xs, dtypes, out, attrs):  # a select: exact, 0 even for a NaN cotangent
    ct = c_cast(xs[0], dtypes[0], out)
    return f"(({xs[1]} <= 0) ? (({CTYPES[out]})0) : {ct})"


# `relu_grad(ct, y)`: relu's backward from its output y, `y <= 0 ? 0 : ct`: 0 where relu was
# not active (even for a NaN or inf cotangent), and the cotangent at NaN (PyTorch's
# threshold_backward: NaN <= 0 is false).
relu_grad = defop(
    "relu_grad", _broadcast2, lambda ct, y: ufunc_dtype(np.multiply, ct, np.dtype(bool)),
    _relu_grad, vjp=lambda ct2, z, ct, y: (apply("relu_grad", ct2, y), None),
    tags={"elementwise"},
    lowering=Lowering(exact=True, numba=_relu_grad_numba, cuda=_relu_grad_c),
)  # fmt: skip


def _relu_numba(xs, dtypes, out, attrs):  # NumPy's maximum(x, 0): NaN stays, -0.0 becomes 0.0
    r = nb_type(out)
    v = f"{r}({xs[0]})"
    keep = f"{v} > 0 or {v} != {v}" if out.kind == "f" else f"{v} > 0"
    return f"({v} if {keep} else {r}(0))"


def _relu_c(k, xs, dtypes, out, attrs):  # NumPy's maximum(x, 0): NaN stays, -0.0 gives 0.0
    x = c_cast(xs[0], dtypes[0], out)
    keep = f"({x} > 0 || isnan({x}))" if out.kind == "f" else f"({x} > 0)"
    return f"({keep} ? {x} : (({CTYPES[out]})0))"


relu = unary(
    "relu", np.maximum, impl=_relu, dtype_rule=_relu_dtype, vjp=_relu_vjp,
    lowering=Lowering(exact=True, numba=_relu_numba, cuda=_relu_c), tags=("vjp_arrays",),
)  # fmt: skip


def _softplus(xp, x, out=None, *, beta):
    # log(1 + exp(beta x)) / beta through logaddexp: stable without a threshold.
    out = xp.asarray(xp.multiply(_as_float(xp, x), beta, out=out))  # 0-d: ufuncs return scalars
    xp.logaddexp(0, out, out=out)
    return xp.divide(out, beta, out=out)


def _softplus_c(k, xs, dtypes, out, attrs):  # logaddexp(0, x * beta) / beta, beta rounded
    if out.kind != "f":
        return None
    x, c = c_cast(xs[0], dtypes[0], out), CTYPES[out]
    beta = f"(({c}){k.const(attrs['beta'])})"
    scaled = f"{c_rn('mul', out)}({x}, {beta})"
    return f"{c_rn('div', out)}({k.logaddexp(out)}(({c})0, {scaled}), {beta})"


softplus = defop(
    "softplus", same_shape, lambda x, beta: ufunc_dtype(np.sqrt, x), in_float32(_softplus),
    vjp=lambda ct, y, x, beta: (ct * apply("sigmoid", x * beta),), tags={"elementwise"},
    lowering=Lowering(transcendental=True, cuda=_softplus_c),
)  # fmt: skip


def _erf(xp, x, out=None):
    if x.dtype == np.float16:  # SciPy has no float16 loop: float32, rounded once (PyTorch's)
        r = special(xp).erf(x.astype(np.float32)).astype(np.float16)
        if out is None:
            return r
        out[...] = r
        return out
    return special(xp).erf(x, out=out)


def _erf_dtype(x):
    """Floats keep their dtype (float16 too, as PyTorch's); the rest as SciPy's erf."""
    return x if dt.is_float(x) else ufunc_dtype(scipy.special.erf, x)


def _erf_vjp(ct, y, x):
    if x.dtype in _HALF_DTYPES:  # PyTorch's order, each step rounded
        return (apply("exp", -(x * x)) * float(2 / np.sqrt(np.pi)) * ct,)
    return (ct * apply("exp", -(x * x)) * (2 / np.sqrt(np.pi)),)


def _erf_c(k, xs, dtypes, out, attrs):
    return f"{c_fn('erf', out)}({c_cast(xs[0], dtypes[0], out)})" if out.kind == "f" else None


erf = unary(
    "erf", scipy.special.erf, impl=_erf, vjp=_erf_vjp, dtype_rule=_erf_dtype,
    lowering=Lowering(transcendental=True, cuda=_erf_c),
)  # fmt: skip


def _round(xp, x, out=None):
    return xp.round(x, out=out)


def _round_c(k, xs, dtypes, out, attrs):  # rint: halves to even, as NumPy's round
    x = c_cast(xs[0], dtypes[0], out)
    return f"{c_fn('rint', out)}({x})" if out.kind == "f" else x


def _round_dtype(x):
    if x == np.bool_:  # PyTorch has no bool kernel (NumPy's round gives float16)
        raise UnsupportedDTypeError("\"round_vml_cpu\" not implemented for 'Bool'")
    return probe_dtype(np.round, x)


round_ = unary(
    "round", np.round, impl=_round, dtype_rule=_round_dtype,
    tags={"nondiff"}, lowering=Lowering(cuda=_round_c),
)  # fmt: skip


# PyTorch's casts to float8_e4m3fn saturate (inf and values past the largest finite go to
# +-448, NaN stays); ml_dtypes' give NaN there, as for the other float8 types (PyTorch's too).
# To float8_e8m0fnu PyTorch rounds the magnitude as ml_dtypes does, and 0 to 2**-127.
_SATURATED = {dt.float8_e4m3fn: 448.0}


def _cast(xp, x, out=None, *, dtype):
    if dtype in _SATURATED and (x.dtype.kind == "f" or x.dtype == dt.bfloat16):
        x = xp.clip(x, -_SATURATED[dtype], _SATURATED[dtype])
    elif dtype == dt.float8_e8m0fnu and (x.dtype.kind == "f" or x.dtype == dt.bfloat16):
        # PyTorch's: the magnitude (e8m0 has no sign), and 0 as the least value, 2**-127
        x = xp.abs(x.astype(xp.float64 if x.dtype == xp.float64 else xp.float32))
        x = xp.where(x == 0, x.dtype.type(2.0**-127), x)
    elif dtype == np.float16 and x.dtype == np.float64:  # through float32 (rounded twice), as
        x = x.astype(np.float32)  # PyTorch's Half, which is made from a float
    if out is None:
        return x.astype(dtype)
    xp.copyto(out, x, casting="unsafe")
    return out


def _cast_vjp(ct, y, x, *, dtype):
    # Only float and complex casts carry a gradient; autodiff skips integer and bool values.
    # A real value cast to complex gets the real part of the cotangent (PyTorch's).
    if not (dt.is_float(x.dtype) or dt.is_complex(x.dtype)):
        return (None,)
    if ct.dtype.kind == "c" and x.dtype.kind != "c":
        ct = apply("real", ct)
    return (ct if ct.dtype == x.dtype else apply("cast", ct, dtype=x.dtype),)


def _cast_numba(xs, dtypes, out, attrs):
    return f"({xs[0]} != 0)" if out == np.dtype(bool) else f"{nb_type(out)}({xs[0]})"


def _cast_c(k, xs, dtypes, out, attrs):
    return c_cast(xs[0], dtypes[0], out)


cast = defop(
    "cast", same_shape, lambda x, dtype: dt.as_dtype(dtype), _cast, vjp=_cast_vjp,
    tags={"elementwise", "complex_linear"},
    lowering=Lowering(exact=True, numba=_cast_numba, cuda=_cast_c),
)  # fmt: skip

# -- binary ----------------------------------------------------------------------------------


def _pow_vjp(ct, z, a, b):
    # As PyTorch: d/da is 0 where b == 0 (not 0 * inf), d/db is 0 where a == 0 and b >= 0.
    zero = scalar(0, z)
    da = apply("where", apply("equal", b, zero), zero, b * apply("pow", a, b - 1))  # (`_power`)
    b_real = apply("real", b) if b.dtype.kind == "c" else b  # complex: Re(b) >= 0
    db_mask = apply(
        "logical_and", apply("equal", a, zero), apply("greater_equal", b_real, scalar(0, b_real))
    )
    db = apply("where", db_mask, zero, z * apply("log", a))
    return ct * da, ct * db


def _select_vjp(wins):
    """maximum/minimum: the winner takes the cotangent; ties share it equally; where either is
    NaN both take it whole (as PyTorch: each loses it only where the other wins)."""
    loses = {"greater": "less", "less": "greater"}[wins]

    def vjp(ct, z, a, b):
        # (a select, as PyTorch's masked_fill: an inf cotangent gives the loser 0, not NaN)
        share = ct * (1 - apply("cast", apply("equal", a, b), dtype=ct.dtype) * 0.5)
        a_keeps, b_keeps = (apply("logical_not", apply(op, a, b)) for op in (loses, wins))
        return _masked(share, a_keeps), _masked(share, b_keeps)

    return vjp


def _c_logical(op):
    return lambda t, x, y: f"(({x}) != 0 {op} ({y}) != 0)"


add = binary(
    "add", np.add, vjp=lambda ct, z, a, b: (ct, ct),
    tags={"commutative", "vjp_arrays", "complex_linear"},
    lowering=_exact(_c_arith("+", "||")),
)  # fmt: skip
sub = binary(
    "sub", np.subtract, vjp=lambda ct, z, a, b: (ct, -ct), lowering=_exact(_c_arith("-")),
    tags=("vjp_arrays", "complex_linear"),
)  # fmt: skip
mul = binary(
    "mul", np.multiply, vjp=lambda ct, z, a, b: (ct * b, ct * a),
    tags={"commutative", "vjp_arrays", "complex"},
    lowering=_exact(_c_arith("*", "&&")),
)  # fmt: skip


def _div_vjp(ct, z, a, b):
    # NOTE: the quotient again, not the output z: as PyTorch's, the gradient reads the inputs,
    # so a change of the output in place (`y = x / n; y.clamp_(0, 1)`) leaves it computable
    q = a / b
    if z.dtype in _HALF_DTYPES:  # PyTorch's order, each step rounded: -ct * ((a / b) / b)
        return ct / b, -ct * (q / b)
    return ct / b, -ct * q / b


div = binary(
    "div", np.true_divide, vjp=_div_vjp,
    lowering=_exact(_c_arith("/")), tags=("vjp_arrays", "complex"),
)  # fmt: skip


_ROOTS = (dt.float32, dt.float64, dt.bfloat16)


def _power(xp, a, b, out=None):
    """NumPy's `power`, with PyTorch's integer powers where NumPy raises: a negative exponent
    gives 1 for a base of 1, -1 or 1 for -1 (by the exponent's parity), else 0."""
    a, b = xp.asarray(a), xp.asarray(b)
    if b.ndim == 0 and b.dtype == a.dtype and a.dtype in _ROOTS and abs(float(b)) == 0.5:
        # a scalar exponent of 1/2 or -1/2 is PyTorch's sqrt or rsqrt: NaN at -inf (C's pow
        # gives inf and 0) and -0.0 and -inf at -0.0 (C's: 0.0 and inf); not in float16
        root = xp.sqrt(a, out=out)
        return root if b > 0 else xp.divide(1, root, out=out)  # (root: a scalar if 0-d)
    negative = b < 0 if b.dtype.kind == "i" and a.dtype.kind in "biu" else None
    if negative is None or not negative.any():
        return xp.power(a, b, out=out)
    powers = xp.power(a, xp.where(negative, 0, b).astype(b.dtype))
    odd = xp.not_equal(xp.remainder(b, 2), 0)
    special = xp.where(a == 1, 1, xp.where(a == -1, xp.where(odd, -1, 1), 0))
    result = xp.where(negative, special.astype(powers.dtype), powers)
    if out is None:
        return result
    out[...] = result
    return out


# the eager short path calls the ufunc, and comes here where it raises (the frontend's `pow`
# sends a Python float exponent of 1/2 or -1/2 here itself)
_power.ufunc_name = "power"
# `may_fail`: never fused, so the loops that would run NumPy's or C's integer power (which
# raise or differ for negative exponents) are never made.
pow_ = defop(
    "pow", _broadcast2, lambda a, b: ufunc_dtype(np.power, a, b), _power, vjp=_pow_vjp,
    tags={"elementwise", "complex"}, may_fail=True,
    lowering=_ufunc_lowering(_libm("pow"), np.power),
)  # fmt: skip
# Integer loops raise or warn in NumPy (division by zero), a C or numba loop would not: the
# fused kernels call the ufunc; not lowered to CUDA.
maximum = binary(
    "maximum", np.maximum, vjp=_select_vjp("greater"), tags={"commutative"},
    lowering=_exact(_c_select(">=")),
)  # fmt: skip
minimum = binary(
    "minimum", np.minimum, vjp=_select_vjp("less"), tags={"commutative"},
    lowering=_exact(_c_select("<=")),
)  # fmt: skip
equal = binary(
    "equal", np.equal, tags={"commutative", "complex_linear"}, lowering=_exact(c_infix("=="))
)
not_equal = binary(
    "not_equal", np.not_equal, tags={"commutative", "complex_linear"},
    lowering=_exact(c_infix("!=")),
)  # fmt: skip
less = binary("less", np.less, lowering=_exact(c_infix("<")))
less_equal = binary("less_equal", np.less_equal, lowering=_exact(c_infix("<=")))
greater = binary("greater", np.greater, lowering=_exact(c_infix(">")))
greater_equal = binary("greater_equal", np.greater_equal, lowering=_exact(c_infix(">=")))
# complex values are true where nonzero, as PyTorch's (no gradient: "complex_linear")
logical_and = binary(
    "logical_and", np.logical_and, tags={"commutative", "complex_linear"},
    lowering=_exact(_c_logical("&&")),
)  # fmt: skip
logical_or = binary(
    "logical_or", np.logical_or, tags={"commutative", "complex_linear"},
    lowering=_exact(_c_logical("||")),
)  # fmt: skip


# where and clip (kiln/ops/elementwise_ternary.py), registered here in this order as before
from .elementwise_ternary import clip, where  # noqa: E402, F401
