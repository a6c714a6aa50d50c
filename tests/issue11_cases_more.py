"""Issue 11's remaining items as checks (run by tests/test_issue11_audit.py): dtype and device
names, `kn.Size`, `kn.cuda` without CUDA, printing, Symbol methods, the `axis=`/`keepdims=`
aliases, the five silent differences, promotion and contiguity. torch 2.13 is the oracle.
"""

# ruff: noqa: E731

import numpy as np
from issue11_cases import A23, A34, A234, B23, EAGER, I23, J23, MASK, V3, arr, case

# -- dtypes and devices ----------------------------------------------------------------------------
dd = "dtypes-devices"
for n in ("long", "int", "float", "double", "half", "bool", "bfloat16", "short", "uint8", "cfloat"):
    case(dd, f"name-{n}", lambda L, n=n: getattr(L, n), modes=EAGER)
    case(
        dd,
        f"tensor-dtype-{n}",
        lambda L, n=n: L.tensor([1, 0]).to(getattr(L, n)).dtype,
        modes=EAGER,
    )
case(dd, "bfloat16-values", lambda L, a: a.to(L.bfloat16), A23)
case(dd, "bfloat16-arith-stays", lambda L, a: a.to(L.bfloat16) * 3 + 1, A23)
case(
    dd,
    "dtype-attributes",
    lambda L: (
        L.float16.is_floating_point,
        L.int32.itemsize,
        L.bfloat16.itemsize,
        L.complex64.is_complex,
        L.int8.is_signed,
    ),
    modes=EAGER,
)
case(dd, "get_default_dtype", lambda L: L.get_default_dtype(), modes=EAGER)


def _default_f64(L):
    old = L.get_default_dtype()
    L.set_default_dtype(L.float64)
    try:
        return (
            L.tensor([1.0]).dtype,
            L.ones(2).dtype,
            (L.tensor([1]) / 2).dtype,
            L.get_default_dtype(),
            L.tensor(1).dtype,
        )
    finally:
        L.set_default_dtype(old)


case(dd, "set_default_dtype", _default_f64, modes=EAGER)
case(dd, "set_default_dtype-int-raises", lambda L: L.set_default_dtype(L.int64), modes=EAGER)
case(
    dd,
    "device-cpu",
    lambda L: (str(L.device("cpu")), L.device("cpu").type, L.device("cpu").index),
    modes=EAGER,
)
case(
    dd,
    "device-cuda-index",
    lambda L: (str(L.device("cuda:1")), L.device("cuda", 0).index, repr(L.device("cuda:0"))),
    modes=EAGER,
)
case(
    dd,
    "device-equality",
    lambda L: (L.device("cpu") == L.device("cpu"), L.tensor([1.0]).device == L.device("cpu")),
    modes=EAGER,
)
case(dd, "device-bad-raises", lambda L: L.device("tpu:0"), modes=EAGER)
case(dd, "Size-shape", lambda L, a: (a.shape, a.size(), a.size(1), a.shape[1:]), A234, modes=EAGER)
case(
    dd,
    "Size-numel",
    lambda L, a: (a.shape.numel(), L.Size([2, 3]).numel(), L.Size([]).numel()),
    A234,
    modes=EAGER,
)
case(
    dd,
    "Size-is-tuple",
    lambda L, a: (isinstance(a.shape, tuple), a.shape == (2, 3, 4), repr(L.Size([2, 3]))),
    A234,
    modes=EAGER,
)
case(
    dd, "Size-concat", lambda L, a: (a.shape + (5,), type(a.shape[:2]).__name__), A234, modes=EAGER
)
for fn in (
    "memory_allocated",
    "max_memory_allocated",
    "memory_reserved",
    "max_memory_reserved",
    "memory_stats",
    "empty_cache",
    "is_available",
    "device_count",
):
    case(dd, f"cuda.{fn}", lambda L, fn=fn: getattr(L.cuda, fn)(), modes=EAGER)

# -- printing --------------------------------------------------------------------------------------
pr = "printing"
PRINT_VALUES = {
    "float": np.array([[1.0, -2.5, 3.14159], [0.0, 1e-3, 2.0]], np.float32),
    "sci-large": np.array([1e10, 2.0, -3.5e-5], np.float32),
    "sci-small": np.array([1e-8, 2e-9], np.float32),
    "ints": np.array([[1, -20], [300, 4]], np.int64),
    "int32": np.array([1, 2], np.int32),
    "bools": np.array([True, False]),
    "float64": np.array([1.5, 2.0]),
    "float16": np.array([1.5, 2.0], np.float16),
    "0d": np.array(2.5, np.float32),
    "empty": np.zeros((0, 3), np.float32),
    "whole-floats": np.array([1.0, 2.0, 3.0], np.float32),
    "nan-inf": np.array([np.nan, np.inf, -np.inf, 1.5], np.float32),
    "long-row": np.arange(1200, dtype=np.float32),
    "3d": np.arange(12, dtype=np.float32).reshape(2, 2, 3) / 7,
    "empty-int64": np.zeros((0,), np.int64),
    "uint8": np.array([0, 255], np.uint8),
    "complex": np.array([1 + 2j, -0.5j], np.complex64),
    "big-ints-float": np.array([123456789.0, 1.0], np.float32),
    "negative-zero": np.array([-0.0, 0.25], np.float32),
    "long-2d": np.arange(2000, dtype=np.int64).reshape(40, 50),
}
for n, v in PRINT_VALUES.items():
    case(pr, f"repr-{n}", lambda L, x: repr(x), v, modes=EAGER)
case(pr, "repr-bfloat16", lambda L, x: repr(x.to(L.bfloat16)), PRINT_VALUES["float"], modes=EAGER)
case(pr, "repr-Parameter", lambda L, x: repr(L.nn.Parameter(x)), V3, modes=EAGER)
case(pr, "repr-0d-grad_fn", lambda L, x: repr(x.requires_grad_().sum()), V3, modes=EAGER)
case(
    pr,
    "repr-size",
    lambda L, x: (repr(x.shape), str(x.shape), repr(x[0, 0].shape)),
    PRINT_VALUES["float"],
    modes=EAGER,
)
case(
    pr,
    "repr-dtype-device",
    lambda L, x: (repr(x.dtype), str(x.dtype), repr(x.device)),
    V3,
    modes=EAGER,
)
case(pr, "str-float", lambda L, x: str(x), PRINT_VALUES["float"], modes=EAGER)
case(pr, "repr-requires_grad", lambda L, x: repr(x.requires_grad_()), V3, modes=EAGER)
GRAD_FNS = {
    "Add": lambda x: x + 1,
    "Mul": lambda x: x * x,
    "Sum": lambda x: x.sum(),
    "Mean": lambda x: x.mean(),
    "Mm": lambda x: x.view(1, 3) @ x.view(3, 1),
    "Relu": lambda x: x.relu(),
    "View": lambda x: x.view(3, 1),
    "Exp": lambda x: x.exp(),
    "Sigmoid": lambda x: x.sigmoid(),
    "Pow": lambda x: x**2,
    "Index": lambda x: x[[0, 2]],
    "Select": lambda x: x[1],
    "Slice": lambda x: x[1:],
    "T": lambda x: x.view(1, 3).t(),
    "Div": lambda x: x / 3,
    "Neg": lambda x: -x,
    "Max": lambda x: x.max(),
}
for n, f in GRAD_FNS.items():
    case(
        pr,
        f"grad_fn-{n}",
        lambda L, x, f=f: (repr(f(x.requires_grad_())), f(x).grad_fn.name()),
        V3,
        modes=EAGER,
    )
case(
    pr,
    "grad_fn-class-name",
    lambda L, x: type((x.requires_grad_() + 1).grad_fn).__name__,
    V3,
    modes=EAGER,
)
case(pr, "grad_fn-Cat", lambda L, x: repr(L.cat([x.requires_grad_(), x])), V3, modes=EAGER)
case(pr, "grad_fn-None-leaf", lambda L, x: x.requires_grad_().grad_fn, V3, modes=EAGER)
case(
    pr,
    "print-options-precision",
    lambda L, x: (L.set_printoptions(precision=2), repr(x), L.set_printoptions(profile="default"))[
        1
    ],
    PRINT_VALUES["float"],
    modes=EAGER,
)

# -- Symbol methods (the same code in all three modes) ---------------------------------------------
sm = "symbol-methods"
case(sm, "any", lambda L, a: (a > 1).any(), A23)
case(sm, "any-dim", lambda L, a: a.any(dim=1), I23)
case(sm, "all", lambda L, m: m.all(), MASK)
case(sm, "all-dim-keepdim", lambda L, a: (a > -1).all(0, keepdim=True), A23)
case(sm, "view", lambda L, a: a.view(6), A23)
case(sm, "view-varargs-minus1", lambda L, a: a.view(-1, 2), A23)
case(sm, "view-tuple", lambda L, a: a.view((3, 2)), A23)
case(sm, "view-Size", lambda L, a, b: a.view(b.shape), A23, arr(3, 2))
case(sm, "detach", lambda L, a: a.detach() * 2, A23)
case(sm, "float", lambda L, a: a.float(), I23)
case(sm, "int", lambda L, a: a.int(), A23 * 3)
case(sm, "bool", lambda L, a: a.bool(), I23)
case(sm, "half", lambda L, a: a.half(), A23)
case(sm, "long-double", lambda L, a: (a.long(), a.double()), A23 * 3)
case(
    sm,
    "device",
    lambda L, a: a * (1.0 if a.device.type == "cpu" else 2.0) + len(str(a.device)),
    A23,
)
case(sm, "device-equals", lambda L, a: a * float(a.device == L.device("cpu")), A23)
case(sm, "size-dim-numel-in-trace", lambda L, a: a.sum() * a.size(1) + a.dim() + a.numel(), A23)

# -- axis= and keepdims= aliases -------------------------------------------------------------------
al = "aliases"
case(al, "sum-axis-keepdims", lambda L, a: a.sum(axis=1, keepdims=True), A234)
case(al, "mean-fn-axis", lambda L, a: L.mean(a, axis=0), A23)
case(al, "max-axis-tuple", lambda L, a: a.max(axis=1), A23)
case(al, "std-axis-keepdims", lambda L, a: L.std(a, axis=1, keepdims=True), A23)
case(al, "argmax-axis", lambda L, a: a.argmax(axis=0), A23)
case(al, "amax-axis-tuple", lambda L, a: L.amax(a, axis=(0, 2)), A234)
case(al, "cat-axis", lambda L, a, b: L.cat([a, b], axis=1), A23, B23)
case(al, "softmax-axis", lambda L, a: a.softmax(axis=1), A23)
case(al, "cumsum-axis", lambda L, a: L.cumsum(a, axis=1), A23)

# -- the five silent differences -------------------------------------------------------------------
sd = "silent"
case(sd, "transpose-2d", lambda L, a: a.transpose(0, 1), A23)
case(sd, "transpose-fn-3d", lambda L, a: L.transpose(a, 2, 0), A234)
case(
    sd,
    "transpose-neg-dims-view",
    lambda L, a: (a.transpose(-1, -2), a.transpose(-1, -2).is_contiguous()),
    A23,
    modes=EAGER,
)
TUT = np.array([[5.1, 3.5, 1.4], [4.9, 3.0, 1.4], [6.2, 3.4, 5.4], [5.9, 3.0, 5.1]], np.float32)
case(sd, "std-tutorial-normalised", lambda L, x: (x - x.mean(0)) / x.std(0), TUT)
case(sd, "var-default", lambda L, x: (x.var(), L.var(x, 1)), TUT)


def _frozen_param(L, x, w):
    L.manual_seed(0)
    lin = L.nn.Linear(3, 2)
    with L.no_grad():
        lin.weight.copy_(w)
        lin.bias.fill_(0.5)
    lin.weight.requires_grad = False
    opt = L.optim.SGD(lin.parameters(), lr=0.1)
    lin(x).pow(2).sum().backward()
    opt.step()
    return lin.weight.grad is None, lin.weight.requires_grad, lin.weight.detach(), lin.bias.detach()


def _frozen_param_(L, x, w):
    lin = L.nn.Linear(3, 2)
    with L.no_grad():
        lin.weight.copy_(w)
    lin.weight.requires_grad_(False)
    lin(x).sum().backward()
    return lin.weight.grad is None, lin.bias.grad


case(sd, "param-requires_grad-False", _frozen_param, TUT, arr(2, 3), modes=EAGER)
case(sd, "param-requires_grad_-False", _frozen_param_, TUT, arr(2, 3), modes=EAGER)
case(sd, "max-dim-unpacks-values-indices", lambda L, a: (lambda v, i: (v, i))(*a.max(1)), A23)
for n, f in {
    "and": lambda a, b: a & b,
    "or": lambda a, b: a | b,
    "xor": lambda a, b: a ^ b,
    "not": lambda a, b: ~a,
    "and-scalar": lambda a, b: a & 6,
    "or-bool-int": lambda a, b: (a > 0) | b,
}.items():
    case(sd, f"bitwise-{n}-int", lambda L, a, b, f=f: f(a, b), I23, J23)
case(sd, "bitwise-not-uint8", lambda L, a: ~a, np.array([0, 1, 200], np.uint8))
case(sd, "bitwise-not-bool", lambda L, m: ~m, MASK)
case(sd, "bitwise-and-float-raises", lambda L, a: a & a, A23, modes=EAGER)

# -- promotion -------------------------------------------------------------------------------------
pm = "promotion"
I32 = I23.astype(np.int32)
J32 = J23.astype(np.int32)
for n, f in {
    "int32/int32": lambda L, a, b: a / b,
    "int32-div-fn": lambda L, a, b: L.div(a, b),
    "int32+0.5": lambda L, a, b: a + 0.5,
    "int32*2.5-rhs": lambda L, a, b: 2.5 * a,
    "int32+int-stays": lambda L, a, b: a + 3,
    "int32//int32": lambda L, a, b: a // b,
    "int32+int64-0d": lambda L, a, b: a + L.tensor(2),
    "int32+bool": lambda L, a, b: a + (b > 2),
    "int32+float16": lambda L, a, b: a + b.half(),
    "int32*float64-0d": lambda L, a, b: a * L.tensor(0.5, dtype=L.float64),
    "int32-true_divide-scalar": lambda L, a, b: a / 2,
    "int32**2": lambda L, a, b: a**2,
    "int32**0.5": lambda L, a, b: b**0.5,
    "int32-sqrt": lambda L, a, b: b.sqrt(),
}.items():
    case(pm, n, f, I32, J32)
case(pm, "int64/int64", lambda L, a, b: a / b, I23, J23)
case(pm, "int64+0.5", lambda L, a: a + 0.5, I23)
case(pm, "float32*2.0-stays", lambda L, a: a * 2.0, A23)
case(pm, "float16*2.0-stays", lambda L, a: a.half() * 2.0, A23)
case(pm, "float32+float64-0d", lambda L, a, s: a + s, A23, np.array(0.25))
case(pm, "float32+float64-1d", lambda L, a, s: a + s, A23, np.array([0.25]))
case(pm, "uint8+int-stays", lambda L, a: a + 300, np.array([1, 2, 250], np.uint8))
case(
    pm, "uint8+int8", lambda L, a, b: a + b, np.array([1, 2], np.uint8), np.array([-1, 3], np.int8)
)
case(pm, "bool+1", lambda L, m: m + 1, MASK)
case(pm, "bool*1.5", lambda L, m: m * 1.5, MASK)
case(pm, "bool+bool", lambda L, m: m + m, MASK)
case(pm, "int+complex-scalar", lambda L, a: a * 1j, I23)
case(
    pm,
    "result_type",
    lambda L: (
        L.result_type(L.tensor([1], dtype=L.int32), 0.5),
        L.promote_types(L.uint8, L.int8),
        L.result_type(L.tensor(1.0), L.tensor([1], dtype=L.int32)),
    ),
    modes=EAGER,
)

# -- contiguity ------------------------------------------------------------------------------------
ct = "contiguity"
case(ct, "T-contiguous-view12", lambda L, a: a.T.contiguous().view(12), A34)
case(
    ct,
    "T-is_contiguous",
    lambda L, a: (a.T.is_contiguous(), a.T.contiguous().is_contiguous(), a.T.contiguous().stride()),
    A34,
    modes=EAGER,
)
case(ct, "T-view-raises", lambda L, a: a.T.view(12), A34, modes=EAGER)
case(ct, "T-reshape", lambda L, a: a.T.reshape(12), A34)
case(ct, "permute-contiguous-view", lambda L, a: a.permute(2, 0, 1).contiguous().view(4, 6), A234)
case(
    ct,
    "T-contiguous-view12-inplace-independent",
    lambda L, a: (lambda c: (c.view(12).mul_(0), a))(a.T.contiguous()),
    A34,
    modes=EAGER,
)

# -- index dtypes: take and put take int64 indices only --------------------------------------------
ix = "index-dtypes"
_I32 = np.array([2, 0], np.int32)
_SRC2 = np.array([7.0, 8.0], np.float32)
case(ix, "take-int32-raises", lambda L, a, i: L.take(a, i), A23, _I32)
case(ix, "take-method-int32-raises", lambda L, a, i: a.take(i), A23, _I32)
case(ix, "take-int64", lambda L, a, i: a.take(i.long()), A23, _I32)
case(ix, "put-int32-raises", lambda L, a, i, s: L.put(a, i, s), A23, _I32, _SRC2)
case(ix, "put-method-int32-raises", lambda L, a, i, s: a.put(i, s), A23, _I32, _SRC2)
case(ix, "put_-int32-raises", lambda L, a, i, s: a.clone().put_(i, s), A23, _I32, _SRC2)
case(ix, "put_-int64", lambda L, a, i, s: a.clone().put_(i.long(), s), A23, _I32, _SRC2)

# -- reductions refuse a dim named twice (0-d tensors included) ------------------------------------
dr = "duplicate-dims"
_S0 = np.array(1.5, np.float32)
_DUP = {
    "sum": lambda L, x, d: x.sum(d),
    "mean": lambda L, x, d: x.mean(d),
    "amax": lambda L, x, d: x.amax(d),
    "amin": lambda L, x, d: L.amin(x, d),
    "var": lambda L, x, d: x.var(d),
    "std": lambda L, x, d: L.std(x, d),
    "logsumexp": lambda L, x, d: x.logsumexp(d),
    "norm": lambda L, x, d: x.norm(dim=d),
    "vector_norm": lambda L, x, d: L.linalg.vector_norm(x, dim=d),
    "nansum": lambda L, x, d: x.nansum(d),
    "nanmean": lambda L, x, d: x.nanmean(d),
    "count_nonzero": lambda L, x, d: L.count_nonzero(x, d),
    "var_mean": lambda L, x, d: L.var_mean(x, d),
    "std_mean": lambda L, x, d: L.std_mean(x, d),
    "all": lambda L, x, d: x.all(d),
    "any": lambda L, x, d: L.any(x, d),
    "flip": lambda L, x, d: x.flip(d),
    "squeeze": lambda L, x, d: x.squeeze(d),
}
for _n, _f in _DUP.items():
    case(dr, f"{_n}-0d-0-neg1", lambda L, x, f=_f: f(L, x, (0, -1)), _S0)
    case(dr, f"{_n}-0d-list-0-0", lambda L, x, f=_f: f(L, x, [0, 0]), _S0)
    case(dr, f"{_n}-0d-one-dim", lambda L, x, f=_f: f(L, x, (0,)), _S0)
    case(dr, f"{_n}-2d-0-0", lambda L, x, f=_f: f(L, x, (0, 0)), A23)
    case(dr, f"{_n}-2d-1-neg1", lambda L, x, f=_f: f(L, x, (1, -1)), A23)
