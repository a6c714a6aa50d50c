"""Issue 11's items as checks (tests/test_issue11_audit.py runs them): functions and methods,
their arguments, 0-d tensors, named-tuple returns and indexing. Each case is `fn(L, *inputs)`, with
`L` torch or kiln and the inputs NumPy arrays made tensors (or placeholders) by the runner; torch
2.13's answer to the same call is the oracle for every value.
"""

# ruff: noqa: E731

import numpy as np

EAGER, ALL = ("eager",), ("eager", "graph", "compile")
CASES = {}  # "bullet/name" -> (fn, arrays, modes)


def case(bullet, name, fn, *arrays, modes=ALL):
    key = f"{bullet}/{name}"
    assert key not in CASES, key
    CASES[key] = (fn, arrays, modes)


def arr(*shape, dtype="float32", seed=0, lo=None, hi=None):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind in "iu":
        return rng.integers(-4 if lo is None else lo, 5 if hi is None else hi, shape).astype(dtype)
    if np.dtype(dtype).kind == "b":
        return np.asarray(rng.random(shape) < 0.5)
    if lo is not None:
        return rng.uniform(lo, hi, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


A23, B23, A34 = arr(2, 3), arr(2, 3, seed=1), arr(3, 4, seed=2)
A234, V3, S0 = arr(2, 3, 4, seed=3), arr(3, seed=4), np.array(1.5, np.float32)
I23, J23 = arr(2, 3, dtype="int64"), arr(2, 3, dtype="int64", seed=1, lo=1)
SQ = (arr(3, 3, seed=5) + 3 * np.eye(3)).astype(np.float32)  # well conditioned
IDX = np.array([2, 0, 2], np.int64)
F = lambda L: L.nn.functional

# -- functions and methods -------------------------------------------------------------------------
fm = "functions"
case(fm, "cat-dim1", lambda L, a, b: L.cat([a, b], dim=1), A23, B23)
case(fm, "cat-neg-dim", lambda L, a, b: L.cat((a, b), -2), A23, B23)
case(fm, "mm", lambda L, a, b: L.mm(a, b), A23, A34)
case(fm, "mm-method", lambda L, a, b: a.mm(b), A23, A34)
case(fm, "bmm", lambda L, a, b: L.bmm(a, b), A234, arr(2, 4, 5, seed=6))
case(fm, "einsum-matmul", lambda L, a, b: L.einsum("ij,jk->ik", a, b), A23, A34)
case(fm, "einsum-batched-trace", lambda L, a: L.einsum("bii->b", a), arr(2, 3, 3))
case(fm, "einsum-list-operands", lambda L, a, b: L.einsum("i,j->ij", [a, b]), V3, V3)
case(fm, "empty-shape-dtype", lambda L: (L.empty(2, 3).shape, L.empty(2, 3).dtype), modes=EAGER)
case(fm, "empty-tuple-dtype", lambda L: L.empty((2,), dtype=L.int64).dtype, modes=EAGER)
_ri = lambda x: (x.shape, x.dtype, bool(((x >= 2) & (x < 5)).all()))
case(fm, "randint-low-high", lambda L: _ri(L.randint(2, 5, (3, 4))), modes=EAGER)
case(fm, "randint-high", lambda L: L.randint(5, (3,)).dtype, modes=EAGER)
case(fm, "allclose", lambda L, a: L.allclose(a, a + 1e-9), A23, modes=EAGER)
case(fm, "allclose-false", lambda L, a: a.allclose(a + 1), A23, modes=EAGER)
case(fm, "isclose", lambda L, a, b: L.isclose(a, a + 1e-6 * b), A23, B23)
case(fm, "isclose-rtol-atol", lambda L, a, b: L.isclose(a, b, rtol=0.5, atol=0.5), A23, B23)
case(fm, "equal-one-bool", lambda L, a: L.equal(a, a * 1), A23, modes=EAGER)
case(fm, "equal-false-shape", lambda L, a, b: L.equal(a, b[:1]), A23, B23, modes=EAGER)
case(fm, "cumsum", lambda L, a: L.cumsum(a, dim=1), A23)
case(fm, "cumsum-int-dtype", lambda L, a: a.cumsum(0), I23)
case(fm, "cumprod", lambda L, a: a.cumprod(-1), A23)
case(fm, "cummax", lambda L, a: L.cummax(a, dim=1), A23)
case(fm, "cummin", lambda L, a: a.cummin(0), A23)
case(fm, "logcumsumexp", lambda L, a: L.logcumsumexp(a, 1), A23)
case(fm, "sort", lambda L, a: L.sort(a, dim=1, descending=True), A23)
case(fm, "sort-default-dim", lambda L, a: a.sort(), A23)
case(fm, "argsort", lambda L, a: L.argsort(a, dim=0), A23)
case(fm, "argsort-descending", lambda L, a: a.argsort(descending=True), A23)
case(fm, "topk", lambda L, a: L.topk(a, 2), A23)
case(fm, "topk-smallest-dim0", lambda L, a: a.topk(1, dim=0, largest=False), A23)
case(fm, "flip", lambda L, a: L.flip(a, dims=(0, 2)), A234)
case(fm, "flip-method-int", lambda L, a: a.flip(1), A23)
case(fm, "roll-dims", lambda L, a: L.roll(a, shifts=(1, -1), dims=(0, 1)), A23)
case(fm, "roll-flat", lambda L, a: a.roll(2), A23)
case(fm, "tril", lambda L, a: L.tril(a, diagonal=-1), A34)
case(fm, "triu", lambda L, a: a.triu(1), A34)
case(fm, "diagonal", lambda L, a: L.diagonal(a, offset=1, dim1=1, dim2=2), A234)
case(fm, "diagonal-method", lambda L, a: a.diagonal(), A34)
case(fm, "diag-vector", lambda L, v: L.diag(v, 1), V3)
case(fm, "diag-matrix", lambda L, a: a.diag(-1), A34)
case(fm, "repeat", lambda L, a: a.repeat(2, 1, 2), A23)
case(fm, "repeat_interleave", lambda L, a: L.repeat_interleave(a, 2, dim=0), A23)
case(fm, "repeat_interleave-flat", lambda L, a: a.repeat_interleave(2), A23)
case(fm, "repeat_interleave-tensor", lambda L, a: a.repeat_interleave(L.tensor([1, 2]), dim=0), A23)
case(fm, "expand", lambda L, v: v.expand(2, -1), V3)
case(fm, "expand-tuple-new-dims", lambda L, v: v.expand((2, 2, 3)), V3)
case(fm, "expand_as", lambda L, v, a: v.expand_as(a), V3, A23)
case(fm, "unflatten", lambda L, a: L.unflatten(a, 1, (2, 2)), A34)
case(fm, "unflatten-method-minus1", lambda L, a: a.unflatten(-1, (-1, 2)), A34)
case(fm, "split-size", lambda L, a: L.split(a, 2, dim=1), A34)
case(fm, "split-sections", lambda L, a: a.split([1, 3], 1), A34)
case(fm, "chunk", lambda L, a: L.chunk(a, 3, dim=1), A34)
case(fm, "chunk-uneven", lambda L, a: a.chunk(2), arr(5, 2))
case(fm, "unfold", lambda L, a: a.unfold(1, 2, 1), A34)
case(fm, "unfold-step", lambda L, a: a.unfold(0, 2, 2), arr(5, 2))
case(fm, "lerp-scalar", lambda L, a, b: L.lerp(a, b, 0.3), A23, B23)
case(fm, "lerp-tensor-weight", lambda L, a, b: a.lerp(b, L.full((3,), 0.25)), A23, B23)
case(fm, "copysign", lambda L, a, b: L.copysign(a, b), A23, B23)
case(fm, "copysign-int", lambda L, a, b: a.copysign(b), I23, B23)
case(fm, "fmod-float", lambda L, a: L.fmod(a * 3, 1.5), A23)
case(fm, "fmod-int", lambda L, a, b: a.fmod(b), I23, J23)
case(fm, "remainder-float", lambda L, a: L.remainder(a * 3, -1.5), A23)
case(fm, "remainder-int", lambda L, a, b: a.remainder(b), I23, J23)
case(fm, "remainder-scalar-first", lambda L, a: L.remainder(5, a), J23)
case(fm, "div-trunc", lambda L, a, b: L.div(a, b, rounding_mode="trunc"), I23, J23)
case(fm, "div-floor", lambda L, a, b: a.div(b, rounding_mode="floor"), I23, J23)
case(fm, "div-floor-float", lambda L, a, b: a.div(b, rounding_mode="floor"), A23, B23)
case(fm, "div-none-int", lambda L, a, b: L.div(a, b, rounding_mode=None), I23, J23)
case(fm, "logaddexp", lambda L, a, b: L.logaddexp(a, b), A23, B23)
case(fm, "exp2", lambda L, a: L.exp2(a), A23)
case(fm, "exp2-int", lambda L, a: a.exp2(), I23)
case(fm, "log2", lambda L, a: a.log2(), arr(2, 3, lo=0.1, hi=3))
case(fm, "log10", lambda L, a: L.log10(a), arr(2, 3, lo=0.1, hi=3))
UNIT = arr(2, 3, lo=-0.9, hi=0.9)
for n in "sin cos tan asin acos atan sinh cosh tanh asinh atanh arcsin arccos arctan".split():
    case(fm, f"method-{n}", lambda L, a, n=n: getattr(a, n)(), UNIT)
case(fm, "method-acosh", lambda L, a: a.acosh(), arr(2, 3, lo=1.1, hi=3))
case(fm, "method-atan2", lambda L, a, b: a.atan2(b), A23, B23)
case(fm, "method-sin-int", lambda L, a: a.sin(), I23)
case(fm, "nonzero", lambda L, a: L.nonzero(a), I23, modes=EAGER)
case(fm, "nonzero-as_tuple", lambda L, a: a.nonzero(as_tuple=True), I23, modes=EAGER)
MASK = arr(2, 3, dtype="bool", seed=7)
case(fm, "masked_fill", lambda L, a, m: a.masked_fill(m, 0.5), A23, MASK)
case(fm, "masked_fill-fn-broadcast", lambda L, a, m: L.masked_fill(a, m[0], -1.0), A23, MASK)
case(fm, "masked_fill-int-float-value", lambda L, a, m: a.masked_fill(m, 2.7), I23, MASK)
case(fm, "masked_select", lambda L, a, m: L.masked_select(a, m), A23, MASK, modes=EAGER)
SIDX = np.array([[0, 1, 0], [1, 0, 1]], np.int64)
case(fm, "scatter-src", lambda L, a, i, s: a.scatter(0, i, s), A23, SIDX, B23)
case(fm, "scatter-value", lambda L, a, i: L.scatter(a, 1, i, 9.0), A23, SIDX)
case(
    fm, "scatter-reduce-kwarg", lambda L, a, i, s: a.scatter(0, i, s, reduce="add"), A23, SIDX, B23
)
case(fm, "scatter_add", lambda L, a, i, s: L.scatter_add(a, 0, i, s), A23, SIDX, B23)
case(
    fm, "scatter_reduce-amax", lambda L, a, i, s: a.scatter_reduce(0, i, s, "amax"), A23, SIDX, B23
)
case(
    fm,
    "scatter_reduce-mean-no-self",
    lambda L, a, i, s: L.scatter_reduce(a, 0, i, s, reduce="mean", include_self=False),
    A23,
    SIDX,
    B23,
)
case(
    fm, "scatter_reduce-prod", lambda L, a, i, s: a.scatter_reduce(0, i, s, "prod"), A23, SIDX, B23
)
case(fm, "index_select", lambda L, a, i: L.index_select(a, 1, i), A23, IDX)
case(fm, "index_select-method", lambda L, a, i: a.index_select(0, i[:2] % 2), A23, IDX)
case(fm, "gather", lambda L, a, i: L.gather(a, 1, i), A23, SIDX)
case(fm, "gather-dim0-smaller-index", lambda L, a, i: a.gather(0, i[:1, :2]), A23, SIDX)
case(fm, "where-method", lambda L, a, m, b: a.where(m, b), A23, MASK, B23)
case(fm, "where-method-scalar", lambda L, a, m: a.where(m, 0.0), A23, MASK)
case(fm, "where-condition-only", lambda L, m: L.where(m), MASK, modes=EAGER)
case(fm, "linalg.norm-vector", lambda L, a: L.linalg.norm(a), A23)
case(fm, "linalg.norm-ord-dim", lambda L, a: L.linalg.norm(a, ord=1, dim=1, keepdim=True), A23)
case(fm, "linalg.norm-fro", lambda L, a: L.linalg.norm(a, "fro"), A23)
case(fm, "linalg.norm-ord2-matrix", lambda L, a: L.linalg.norm(a, 2, dim=(0, 1)), SQ)
case(fm, "norm-method", lambda L, a: a.norm(dim=1), A23)
case(fm, "det", lambda L, a: L.det(a), SQ)
case(fm, "det-method", lambda L, a: a.det(), SQ)
case(fm, "linalg.det", lambda L, a: L.linalg.det(a), SQ)
case(fm, "inverse", lambda L, a: L.inverse(a), SQ)
case(fm, "inverse-method", lambda L, a: a.inverse(), SQ)
case(fm, "linalg.solve", lambda L, a, b: L.linalg.solve(a, b), SQ, A34)
case(fm, "linalg.solve-vector", lambda L, a, v: L.linalg.solve(a, v), SQ, V3)
# singular matrices: torch.linalg.LinAlgError, a RuntimeError (NumPy's is a ValueError)
case(fm, "linalg.solve-singular-raises", lambda L, a: L.linalg.solve(a * 0, a), SQ)
case(fm, "linalg.solve-singular-vector-raises", lambda L, a: L.linalg.solve(a * 0, a[0]), SQ)
case(fm, "inverse-singular-raises", lambda L, a: L.inverse(a * 0), SQ)
case(fm, "linalg.inv-singular-batch-raises", lambda L, a: L.linalg.inv(L.stack([a, a * 0])), SQ)
case(fm, "t", lambda L, a: a.t(), A23)
case(fm, "t-1d", lambda L, v: L.t(v), V3)
case(fm, "t-3d-raises", lambda L, a: a.t(), A234, modes=EAGER)
case(fm, "mT", lambda L, a: a.mT, A234)
case(fm, "numel", lambda L, a: a.numel(), A234, modes=EAGER)
case(fm, "numel-fn", lambda L, a: L.numel(a), A234, modes=EAGER)
case(fm, "stride", lambda L, a: (a.stride(), a.stride(1), a.t().stride()), A23, modes=EAGER)
case(
    fm,
    "storage_offset",
    lambda L, a: (a[1:, 1:].storage_offset(), a.storage_offset()),
    A23,
    modes=EAGER,
)
case(fm, "type-name", lambda L, a, i: (a.type(), i.type()), A23, I23, modes=EAGER)
case(fm, "type-convert", lambda L, a: a.type(L.float64), A23)
case(
    fm,
    "type-string-convert",
    lambda L, a: a.type("torch.IntTensor".replace("torch", L.__name__)),
    A23,
    modes=EAGER,
)
case(fm, "view-dtype", lambda L, a: a.view(L.int32), A23)
case(fm, "view-dtype-narrower", lambda L, a: a.view(L.int16), A23)
case(fm, "format-0d", lambda L, a: (format(a, ".2f"), f"{a:.3e}", f"{a}"), S0, modes=EAGER)
case(fm, "format-nd-raises", lambda L, a: format(a, ".2f"), A23, modes=EAGER)
case(fm, "format-1-element-spec-raises", lambda L, a: f"{a[:1]:.2f}", V3, modes=EAGER)
case(fm, "format-nd-no-spec", lambda L, a: (f"{a}", format(a[:1])), A23, modes=EAGER)

# -- arguments -------------------------------------------------------------------------------------
ag = "arguments"
case(ag, "sum-dim-keepdim", lambda L, a: a.sum(dim=1, keepdim=True), A234)
case(ag, "sum-dim-tuple", lambda L, a: L.sum(a, dim=(0, 2)), A234)
case(ag, "mean-dim-keepdim", lambda L, a: L.mean(a, dim=-1, keepdim=True), A234)
case(ag, "prod-dim", lambda L, a: a.prod(dim=1), A23)
case(ag, "amax-dims", lambda L, a: L.amax(a, dim=(0, 1), keepdim=True), A234)
case(ag, "logsumexp-dim", lambda L, a: a.logsumexp(dim=1), A23)
case(ag, "argmax-keepdim", lambda L, a: a.argmax(dim=1, keepdim=True), A23)
case(ag, "all-dim", lambda L, m: m.all(dim=0), MASK)
case(ag, "std-default-correction1", lambda L, a: L.std(a), A23)
case(ag, "var-dim-default", lambda L, a: a.var(1), A23)
case(ag, "std-correction0", lambda L, a: a.std(dim=1, correction=0), A23)
case(ag, "var-correction2-keepdim", lambda L, a: L.var(a, 0, correction=2, keepdim=True), arr(4, 3))
case(ag, "std-unbiased-false", lambda L, a: a.std(unbiased=False), A23)
case(ag, "var-unbiased-positional", lambda L, a: L.var(a, 1, False), A23)
case(ag, "std_mean-correction", lambda L, a: L.std_mean(a, dim=1, correction=0), A23)
case(ag, "var_mean", lambda L, a: L.var_mean(a, 0), A23)
case(ag, "sum-dtype", lambda L, a: a.sum(dtype=L.float64), I23)
case(ag, "sum-int32-default-int64", lambda L, a: a.sum(), I23.astype(np.int32))
case(ag, "sum-bool-int64", lambda L, m: m.sum(1), MASK)
case(ag, "mean-dtype", lambda L, a: L.mean(a, 0, dtype=L.float64), A23)
case(ag, "prod-dtype", lambda L, a: a.prod(1, dtype=L.float32), I23)
case(ag, "cumsum-dtype", lambda L, a: a.cumsum(1, dtype=L.float64), I23)
case(ag, "softmax-dtype", lambda L, a: a.softmax(1, dtype=L.float64), A23)
case(ag, "mean-int-raises", lambda L, a: a.mean(), I23, modes=EAGER)


def _out(L, a, b):
    o = L.empty(2, 3)
    r = L.add(a, b, out=o)
    return r is o, o


def _out_reduce(L, a):
    o = L.zeros(3)
    return L.sum(a, 0, out=o) is o, o


def _out_tuple(L, a):
    v, i = L.empty(2), L.empty(2, dtype=L.int64)
    r = L.max(a, 1, out=(v, i))
    return r[0] is v, type(r).__name__, v, i


def _out_resize(L, a, b):
    o = L.empty(0)
    L.mul(a, b, out=o)
    return o


case(ag, "out-add", _out, A23, B23, modes=EAGER)
case(ag, "out-sum", _out_reduce, A23, modes=EAGER)
case(ag, "out-max-tuple", _out_tuple, A23, modes=EAGER)
case(ag, "out-resizes-empty", _out_resize, A23, B23, modes=EAGER)
case(ag, "out-matmul", lambda L, a, b: L.matmul(a, b, out=L.empty(2, 4)), A23, A34, modes=EAGER)
case(ag, "out-cat", lambda L, a, b: L.cat([a, b], out=L.empty(4, 3)), A23, B23, modes=EAGER)
Z23 = np.zeros((2, 3), np.float32)  # out= an argument: eagerly and under kn.compile
EC = ("eager", "compile")
case(ag, "out-argument-add", lambda L, a, b, o: (L.add(a, b, out=o), o), A23, B23, Z23, modes=EC)
case(ag, "out-argument-cumsum", lambda L, a, o: (L.cumsum(a, 1, out=o), o), A23, Z23, modes=EC)
case(
    ag,
    "out-argument-where",
    lambda L, a, b, o: (L.where(a > 0, a, b, out=o), o),
    A23,
    B23,
    Z23,
    modes=EC,
)
case(ag, "out-argument-view", lambda L, a, o: (L.sum(a, 0, out=o[0]), o), A23, Z23, modes=EC)
A213 = arr(2, 1, 3)
case(ag, "squeeze-size>1-noop", lambda L, a: a.squeeze(0), A213)
case(ag, "squeeze-size>1-fn", lambda L, a: L.squeeze(a, 2), A213)
case(ag, "squeeze-size1", lambda L, a: a.squeeze(1), A213)
case(ag, "squeeze-tuple-mixed", lambda L, a: a.squeeze((0, 1)), A213)
case(ag, "squeeze-all", lambda L, a: a.squeeze(), arr(1, 2, 1))
case(ag, "squeeze-out-of-range-raises", lambda L, a: a.squeeze(3), A213, modes=EAGER)
z0 = "0-d"
for name, fn in {
    "sum-dim0": lambda L, s: s.sum(0),
    "sum-dim-1": lambda L, s: L.sum(s, dim=-1),
    "sum-dim0-keepdim": lambda L, s: s.sum(0, keepdim=True),
    "mean-dim-1": lambda L, s: s.mean(-1),
    "prod-dim0": lambda L, s: s.prod(0),
    "amax-dim0": lambda L, s: s.amax(0),
    "max-dim0-tuple": lambda L, s: s.max(0),
    "min-dim-1-tuple": lambda L, s: L.min(s, -1),
    "argmax-dim0": lambda L, s: s.argmax(0),
    "logsumexp-dim0": lambda L, s: s.logsumexp(0),
    "cumsum-dim0": lambda L, s: s.cumsum(0),
    "softmax-dim-1": lambda L, s: s.softmax(-1),
    "std-dim0-correction0": lambda L, s: s.std(0, correction=0),
    "squeeze-dim0": lambda L, s: s.squeeze(0),
    "squeeze-dim-1": lambda L, s: L.squeeze(s, -1),
    "unsqueeze-dim0": lambda L, s: s.unsqueeze(0),
    "sort-dim0": lambda L, s: s.sort(0),
    "topk-1": lambda L, s: s.topk(1),
    "flip-dim0": lambda L, s: s.flip(0),
    "sum-dim1-raises": lambda L, s: s.sum(1),
    "squeeze-dim1-raises": lambda L, s: s.squeeze(1),
}.items():
    case(z0, name, fn, S0, modes=EAGER if name.endswith("raises") else ALL)
nt = "named-tuples"
case(nt, "max-dim", lambda L, a: a.max(1), A23)
case(nt, "max-dim-keepdim-fn", lambda L, a: L.max(a, dim=0, keepdim=True), A23)
case(nt, "min-dim", lambda L, a: L.min(a, 1), A23)
case(nt, "max-binary-not-tuple", lambda L, a, b: L.max(a, b), A23, B23)
case(nt, "max-all-not-tuple", lambda L, a: a.max(), A23)
case(nt, "sort", lambda L, a: L.sort(a, 0), A23)
case(nt, "topk", lambda L, a: a.topk(2, 1), A23)
case(nt, "cummax", lambda L, a: a.cummax(1), A23)
case(nt, "cummin", lambda L, a: L.cummin(a, 0), A23)
case(nt, "kthvalue", lambda L, a: a.kthvalue(2, 1), A23)
case(nt, "median-dim", lambda L, a: a.median(1), A23)
case(nt, "mode-dim", lambda L, a: L.mode(a, 1), I23)
case(nt, "aminmax", lambda L, a: L.aminmax(a, dim=1), A23)
case(
    nt,
    "fields-and-unpacking",
    lambda L, a: (lambda r: (r.values, r.indices, r[0], r[1]))(a.max(1)),
    A23,
)

# -- indexing --------------------------------------------------------------------------------------
ix = "indexing"
I0, I1 = np.array([1, 0, 1], np.int64), np.array([2, 2, 0], np.int64)
I2D = np.array([[0, 1], [1, 1]], np.int64)
for name, fn in {
    "two-arrays": lambda L, a, i, j: a[i, j],
    "two-arrays-then-slice": lambda L, a, i, j: a[i, j, 1:],
    "slice-between-arrays": lambda L, a, i, j: a[i, :, j],
    "int-slice-array": lambda L, a, i, j: a[0, :, j],
    "array-int-adjacent": lambda L, a, i, j: a[:, j, 1],
    "none-and-arrays": lambda L, a, i, j: a[None, i, j],
    "arrays-then-none": lambda L, a, i, j: a[i, None, j],
    "ellipsis-array": lambda L, a, i, j: a[..., j],
    "2d-index-array": lambda L, a, i, j: a[:, i.view(3, 1), j],
    "broadcast-arrays": lambda L, a, i, j: a[i[:, None], j[None, :]],
    "single-array": lambda L, a, i, j: a[j % 2],
    "negative-indices": lambda L, a, i, j: a[-i, :, -j - 1],
    "list-index": lambda L, a, i, j: a[[1, 0], :, [0, 3]],
    "tuple-of-list-and-int": lambda L, a, i, j: a[[0, 1, 1], 2],
    "int-tensor-0d": lambda L, a, i, j: a[i[0]],
    "out-of-range-raises": lambda L, a, i, j: a[i * 5],
}.items():
    eager_only = name.endswith("raises")
    case(ix, name, fn, A234, I0, I1, modes=EAGER if eager_only else ALL)
case(ix, "tensor-index-2d-array", lambda L, a, i: a[i], A34, I2D)
case(ix, "bool-mask-full", lambda L, a: a[a > 0], A23, modes=EAGER)
case(ix, "bool-mask-rows", lambda L, a, m: a[m[:, 0]], A23, MASK, modes=EAGER)
case(ix, "bool-mask-dim1", lambda L, a, m: a[:, m[0]], A234, MASK, modes=EAGER)
case(ix, "bool-mask-2d-prefix", lambda L, a, m: a[m], A234, MASK, modes=EAGER)
case(ix, "bool-list", lambda L, a: a[[True, False]], A23, modes=EAGER)
case(ix, "bool-mask-wrong-shape-raises", lambda L, a, m: a[m[:, :2]], A23, MASK, modes=EAGER)


def _setitem_grad(L, a, v, i):
    x, w = a.clone().requires_grad_(), v.clone().requires_grad_()
    y = x * 1
    y[i] = w * 2  # rows 2 and 0 of a (3, 4) input: the last write to row 2 wins
    y[0, 1:3] = 7.0
    (y * y).sum().backward()
    return y, x.grad, w.grad


def _index_put_grad(L, a, v, i):
    x, w = a.clone().requires_grad_(), v.clone().requires_grad_()
    y = x.clone().index_put_((i,), w, accumulate=True)
    (y * y).sum().backward()
    return y, x.grad, w.grad


def _index_put_mask(L, a, m):
    x = a.clone().requires_grad_()
    y = x.index_put((m,), L.tensor(0.5))
    y.sum().backward()
    return y, x.grad


def _setitem_mask_grad(L, a, m):
    x = a.clone().requires_grad_()
    y = x.exp()
    y[m] = 0.0
    y.sum().backward()
    return y, x.grad


V34 = arr(4, seed=8)
case(ix, "setitem-autograd", _setitem_grad, A34, V34, np.array([2, 0], np.int64), modes=EAGER)
case(ix, "index_put_-accumulate-autograd", _index_put_grad, A34, V34, IDX, modes=EAGER)
case(ix, "index_put-bool-mask-autograd", _index_put_mask, A23, MASK, modes=EAGER)
case(ix, "setitem-bool-mask-autograd", _setitem_mask_grad, A23, MASK, modes=EAGER)

# -- edges of the items above: ties, NaNs, index dtypes, more reduce modes -------------------------
eg = "edges"
TIES = np.array([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, -1.0, 2.0], [0.0, 0.0, 0.0, 0.0]], np.float32)
NANS = np.array(
    [[1.0, np.nan, 0.5, -1.0], [np.nan, 2.0, 2.0, np.nan], [0.0, 1.0, 2.0, 3.0]], np.float32
)
for name, fn in {
    "max-dim": lambda L, a: a.max(1),
    "min-dim": lambda L, a: a.min(1),
    "argmax": lambda L, a: a.argmax(1),
    "argmin-dim0": lambda L, a: a.argmin(0),
    "sort-stable": lambda L, a: a.sort(dim=1, stable=True),
    "sort-descending-stable": lambda L, a: a.sort(dim=1, descending=True, stable=True),
    "argsort-stable": lambda L, a: a.argsort(dim=1, stable=True),
    "cummax": lambda L, a: a.cummax(1),
    "cummin": lambda L, a: a.cummin(1),
    "median-dim-values": lambda L, a: a.median(1).values,  # which tie: unspecified
    "median-all": lambda L, a: a.median(),
    "mode-values": lambda L, a: a.mode(1).values,
    "kthvalue-values": lambda L, a: a.kthvalue(2, 1).values,
    "topk-values": lambda L, a: a.topk(2, 1).values,
}.items():
    case(eg, f"ties-{name}", fn, TIES)
    case(eg, f"nan-{name}", fn, NANS)
case(eg, "nan-sort-values", lambda L, a: a.sort(1).values, NANS)
case(eg, "nan-amax", lambda L, a: a.amax(1), NANS)
case(eg, "nan-cumsum", lambda L, a: a.cumsum(1), NANS)
case(eg, "nan-logcumsumexp", lambda L, a: a.logcumsumexp(1), NANS)
case(eg, "cumsum-bool-int64", lambda L, m: m.cumsum(1), MASK)
case(eg, "cumprod-int32-int64", lambda L, a: a.cumprod(1), I23.astype(np.int32))
case(eg, "var-0d-nan", lambda L, s: (s.var(), s.std(0)), S0)
for mode in ("sum", "prod", "mean", "amax", "amin"):
    for inc in (True, False):
        case(
            eg,
            f"scatter_reduce-{mode}-include_self-{inc}",
            lambda L, a, i, s, m=mode, inc=inc: a.scatter_reduce(1, i, s, m, include_self=inc),
            A23,
            SIDX,
            B23,
        )
case(
    eg,
    "scatter_reduce-mean-int",
    lambda L, a, i, b: a.scatter_reduce(0, i, b, "mean"),
    I23,
    SIDX,
    J23,
)
case(eg, "index_select-int32-index", lambda L, a, i: a.index_select(1, i.int()), A23, IDX)
case(eg, "gather-int32-index-raises", lambda L, a, i: a.gather(1, i.int()), A23, SIDX, modes=EAGER)
case(eg, "gather-out-of-range-raises", lambda L, a, i: a.gather(1, i + 3), A23, SIDX, modes=EAGER)
case(eg, "masked_fill-0d-tensor-value", lambda L, a, m: a.masked_fill(m, L.tensor(2.5)), A23, MASK)
case(
    eg,
    "masked_fill-1d-value-raises",
    lambda L, a, m: a.masked_fill(m, L.ones(3)),
    A23,
    MASK,
    modes=EAGER,
)
case(eg, "where-python-scalars", lambda L, m: L.where(m, 1.0, 0), MASK)
case(eg, "where-int-tensor-float-scalar", lambda L, m, a: L.where(m, a, 0.5), MASK, I23)
case(eg, "div-floor-scalar-int", lambda L, a: a.div(-3, rounding_mode="floor"), I23)
case(eg, "div-trunc-scalar-float", lambda L, a: L.div(a, 0.7, rounding_mode="trunc"), A23)
case(eg, "fmod-int-float-scalar", lambda L, a: a.fmod(2.5), I23)
case(eg, "remainder-int-by-zero-raises", lambda L, a: a.remainder(0), I23, modes=EAGER)
case(
    eg,
    "div-floor-int-by-zero-raises",
    lambda L, a: a.div(0, rounding_mode="floor"),
    I23,
    modes=EAGER,
)
case(eg, "nonzero-bool-3d", lambda L, a: (a > 0).nonzero(), A234, modes=EAGER)
case(
    eg,
    "linalg.norm-inf",
    lambda L, a: (L.linalg.norm(a, float("inf")), L.linalg.norm(a, -float("inf"), dim=0)),
    A23,
)
case(eg, "linalg.norm-nuc", lambda L, a: L.linalg.norm(a, "nuc"), SQ)
case(eg, "linalg.norm-dtype", lambda L, a: L.linalg.norm(a, dtype=L.float64), A23)
case(eg, "det-batched", lambda L, a: L.det(L.stack([a, a.T, a * 2])), SQ)
case(eg, "inverse-batched", lambda L, a: L.stack([a, a.T]).inverse(), SQ)
case(eg, "t-0d", lambda L, s: s.t(), S0)
case(eg, "mT-1d-raises", lambda L, v: v.mT, V3, modes=EAGER)
case(eg, "view-dtype-wider", lambda L, a: a.view(L.float64), A34)
case(eg, "view-dtype-uint8", lambda L, a: a.view(L.uint8), A23)
case(eg, "view-dtype-wider-odd-raises", lambda L, a: a.view(L.float64), A23, modes=EAGER)
case(
    eg,
    "stride-expand-permute",
    lambda L, v, a: (v.expand(2, 3).stride(), a.permute(2, 0, 1).stride()),
    V3,
    A234,
    modes=EAGER,
)
case(
    eg,
    "repeat_interleave-output_size",
    lambda L, a: a.repeat_interleave(L.tensor([1, 2]), dim=0, output_size=3),
    A23,
)
case(eg, "roll-negative-dims", lambda L, a: a.roll((-1, 2), (-1, 0)), A234)
case(eg, "chunk-more-than-size", lambda L, a: a.chunk(5, 0), A23)
case(eg, "split-size-larger", lambda L, a: a.split(5, 1), A23)
case(eg, "unflatten-bad-raises", lambda L, a: a.unflatten(1, (3, 2)), A34, modes=EAGER)
case(eg, "expand-bad-raises", lambda L, v: v.expand(2, 4), V3, modes=EAGER)
case(eg, "diag-2d-offset-out-of-range", lambda L, a: a.diag(5), A34)
case(eg, "diagonal-neg-dims", lambda L, a: a.diagonal(-1, -1, -3), A234)
case(eg, "einsum-ellipsis", lambda L, a, b: L.einsum("...ij,jk->...ik", a, b), A234, arr(4, 2))
case(eg, "einsum-repeated-output-raises", lambda L, a: L.einsum("ij->ii", a), A23, modes=EAGER)
case(eg, "cat-empty-1d-legacy", lambda L, a: L.cat([a, L.tensor([])]), A23)
case(eg, "cat-dtype-promotes", lambda L, a, i: L.cat([a, i]), A23, I23)
case(eg, "isclose-nan-equal", lambda L, a: L.isclose(a, a, equal_nan=True), NANS)
case(
    eg,
    "allclose-nan",
    lambda L, a: (L.allclose(a, a), L.allclose(a, a, equal_nan=True)),
    NANS,
    modes=EAGER,
)
case(eg, "equal-dtypes-differ", lambda L, a: L.equal(a, a.double()), A23, modes=EAGER)
case(eg, "lerp-int-raises", lambda L, a: a.lerp(a, 0.5), I23, modes=EAGER)


def _setitem(key):
    def fn(L, a, v, i):
        y = a.clone()
        y[key(i)] = v[: y[key(i)].shape[-1]]  # broadcast along the rows set
        return y

    return fn


SET_KEYS = {
    "int-array": lambda i: i,
    "two-arrays": lambda i: (i, i % 3),
    "slice-array": lambda i: (slice(None), i % 3),
    "int-slice": lambda i: (0, slice(1, 3)),
    "ellipsis-none": lambda i: (Ellipsis, None, 1),
}
for n, key in SET_KEYS.items():
    case(ix, f"setitem-{n}", _setitem(key), A34, V34, np.array([2, 0], np.int64))


def _setitem_mask(L, a, m):
    y = a.clone()
    y[m] = 7.0
    return y


case(ix, "setitem-bool-mask-scalar", _setitem_mask, A23, MASK)
case(
    ix,
    "index_put_-accumulate",
    lambda L, a, v, i: a.clone().index_put_((i,), v, accumulate=True),
    A34,
    V34,
    IDX,
)
case(
    ix,
    "index_put-two-indices",
    lambda L, a, i: a.index_put((i, i % 3), L.tensor(1.5)),
    A34,
    np.array([2, 0], np.int64),
)
for name, fn in {
    "numpy-array-index": lambda L, a: a[np.array([1, 0, 1])],
    "list-of-lists": lambda L, a: a[[[0, 1], [1, 0]]],
    "tuple-is-multi-dim": lambda L, a: a[(1, 2)],
    "int32-tensor-index": lambda L, a: a[L.tensor([2, 0], dtype=L.int32)],
    "step-slice-and-array": lambda L, a: a[::2, [0, 2]],
    "0d-bool-true": lambda L, a: a[L.tensor(True)],
    "none-ellipsis-int": lambda L, a: a[None, ..., 1],
    "negative-int-out-of-range-raises": lambda L, a: a[-4],
    "too-many-indices-raises": lambda L, a: a[0, 0, 0],
    "negative-step-raises": lambda L, a: a[::-1],
}.items():
    case(ix, name, fn, A34, modes=EAGER if name.endswith("raises") else ALL)


def _iadd_duplicates(L, a, i):
    y = a.clone()
    y[i] += 1.0  # rows 2, 0, 2: row 2 gets 1 once (a gather, an add, a scatter), as PyTorch
    return y


case(ix, "iadd-duplicate-indices", _iadd_duplicates, A34, IDX)
case(
    ix,
    "index_put-duplicate-accumulate-false-unique-values",
    lambda L, a, i: a.index_put((i,), L.tensor(2.0)),
    A34,
    IDX,
)
for name, fn in {  # dims 0 and -1 of a 0-d tensor, as PyTorch wraps them (and what it refuses)
    "transpose-0-neg1": lambda L, s: s.transpose(0, -1),
    "transpose-fn-neg1-0": lambda L, s: L.transpose(s, -1, 0),
    "swapaxes-0-neg1": lambda L, s: s.swapaxes(0, -1),
    "movedim-0-neg1": lambda L, s: s.movedim(0, -1),
    "narrow-raises": lambda L, s: s.narrow(0, 0, 1),
    "diff-raises": lambda L, s: s.diff(),
    "chunk-raises": lambda L, s: s.chunk(1, 0),
}.items():
    case(z0, name, fn, S0, modes=EAGER if name.endswith("raises") else ALL)
E20 = np.ones((2, 0), np.float32)
for name, fn in {  # reductions with no identity over an empty dim: IndexError (torch 2.13)
    "max-dim": lambda L, e: e.max(1),
    "min-dim": lambda L, e: L.min(e, 1),
    "argmax-dim": lambda L, e: e.argmax(1),
    "amax-dim": lambda L, e: e.amax(1),
    "argmin-all": lambda L, e: e.argmin(),
    "max-all": lambda L, e: e.max(),
    "amin-all": lambda L, e: e.amin(),
}.items():
    case(eg, f"empty-dim-{name}-raises", fn, E20, modes=EAGER)
