"""The cases of the PyTorch oracle sweep (tests/test_torch_sweep.py): every name of issue 11's
lists and the rest of PyTorch's common tensor API, called the same way on torch and kiln, over
several dtypes (int and bool too), 0-d inputs, negative dims, keepdim and named-tuple returns.

`CASES` holds (family, name, fn(lib, *inputs), inputs, modes); `lib` is `torch` or `kn`.
"""
# ruff: noqa: E501, E731

import numpy as np

DT = {"f32": "float32", "f64": "float64", "f16": "float16", "i64": "int64", "i32": "int32", "u8": "uint8", "b": "bool"}


def arr(shape, dt, kind="normal", seed=0):
    rng = np.random.default_rng(seed)
    d = DT[dt]
    if d == "bool":
        return np.asarray(rng.random(shape) < 0.5)
    if d in ("int64", "int32"):
        return rng.integers(-4, 5, shape).astype(d)
    if d == "uint8":
        return rng.integers(0, 6, shape).astype(d)
    if kind == "positive":
        return rng.uniform(0.2, 2.0, shape).astype(d)
    if kind == "unit":
        return rng.uniform(-0.9, 0.9, shape).astype(d)
    return rng.standard_normal(shape).astype(d)


CASES = []
_ALL, _FEW = ("eager", "graph", "compile"), ("eager",)
def case(fam, name, fn, *arrays, modes=("eager", "graph", "compile")):
    CASES.append((fam, name, fn, arrays, modes))

UNARY = "abs neg exp log log1p expm1 sqrt rsqrt square sin cos tan tanh sigmoid relu sign floor ceil round trunc frac exp2 log2 log10 asin acos atan sinh cosh asinh acosh atanh erf erfc reciprocal logical_not bitwise_not isnan isinf isfinite signbit positive sgn angle deg2rad rad2deg nan_to_num".split()
for n in UNARY:
    for dt in ("f32", "i64", "b", "f16", "u8"):
        for shp in ((2, 3), ()):
            kind = "positive" if n in ("log", "sqrt", "rsqrt", "log2", "log10") else ("unit" if n in ("asin", "acos", "atanh") else "normal")
            case("unary", f"{n}-{dt}-{len(shp)}d", lambda L, x, n=n: getattr(L, n)(x), arr(shp, dt, kind))
            case("unary-method", f"{n}-{dt}-{len(shp)}d", lambda L, x, n=n: getattr(x, n)(), arr(shp, dt, kind), modes=_FEW if dt != "f32" else _ALL)

BINARY = "add sub mul div true_divide floor_divide remainder fmod pow maximum minimum fmax fmin atan2 eq ne lt le gt ge logical_and logical_or logical_xor bitwise_and bitwise_or bitwise_xor hypot copysign logaddexp nextafter xlogy float_power".split()
for n in BINARY:
    for da, db in (("f32", "f32"), ("i64", "i64"), ("i32", "f32"), ("b", "b"), ("f16", "i64"), ("u8", "i64"), ("i64", "f64")):
        case("binary", f"{n}-{da}-{db}", lambda L, a, b, n=n: getattr(L, n)(a, b), arr((2, 3), da, seed=1), arr((3,), db, "positive", seed=2))
        case("binary-method", f"{n}-{da}-{db}", lambda L, a, b, n=n: getattr(a, n)(b), arr((2, 3), da, seed=1), arr((3,), db, "positive", seed=2), modes=_FEW if da != "f32" else _ALL)
    for s in (2, 1.5, True):
        case("binary-scalar", f"{n}-i64-{s!r}", lambda L, a, n=n, s=s: getattr(L, n)(a, s), arr((2, 3), "i64"))
        case("binary-scalar", f"{n}-f16-{s!r}", lambda L, a, n=n, s=s: getattr(L, n)(a, s), arr((2, 3), "f16"))

OPS = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b, "/": lambda a, b: a / b, "//": lambda a, b: a // b, "%": lambda a, b: a % b, "**": lambda a, b: a ** b, "&": lambda a, b: a & b, "|": lambda a, b: a | b, "^": lambda a, b: a ^ b, "<<": lambda a, b: a << b, ">>": lambda a, b: a >> b, "<": lambda a, b: a < b, "==": lambda a, b: a == b}
for o, f in OPS.items():
    for da, db in (("f32", "f32"), ("i64", "i64"), ("b", "b"), ("i32", "i64"), ("u8", "b")):
        case("operator", f"{o}-{da}-{db}", lambda L, a, b, f=f: f(a, b), arr((2, 3), da, seed=3), arr((2, 3), db, "positive", seed=4))
    for s in (2, 1.5, True):
        case("operator", f"{o}-i64-{s!r}", lambda L, a, f=f, s=s: f(a, s), arr((2, 3), "i64"))
        case("operator", f"r{o}-i64-{s!r}", lambda L, a, f=f, s=s: f(s, a), arr((2, 3), "i64", "positive"))
    case("operator", f"{o}-f32-0d-i64", lambda L, a, b, f=f: f(a, b), arr((2, 3), "f32"), arr((), "i64"))
case("operator", "~-i64", lambda L, a: ~a, arr((3,), "i64"))
case("operator", "~-b", lambda L, a: ~a, arr((3,), "b"))
case("operator", "neg-b", lambda L, a: -a, arr((3,), "b"))

RED = "sum mean prod max min amax amin argmax argmin all any std var logsumexp nansum nanmean median nanmedian norm count_nonzero aminmax mode".split()
for n in RED:
    for dt in ("f32", "i64", "b", "f16"):
        m = _ALL if dt in ("f32", "i64") else _FEW  # graph and compile: two dtypes suffice
        for shp in ((3, 4), ()):
            case("reduce", f"{n}-{dt}-{len(shp)}d-all", lambda L, x, n=n: getattr(L, n)(x), arr(shp, dt), modes=m)
            for d in (0, -1):
                case("reduce", f"{n}-{dt}-{len(shp)}d-dim{d}", lambda L, x, n=n, d=d: getattr(L, n)(x, d), arr(shp, dt), modes=m)
                case("reduce", f"{n}-{dt}-{len(shp)}d-dim{d}-keep", lambda L, x, n=n, d=d: getattr(x, n)(dim=d, keepdim=True), arr(shp, dt), modes=_FEW)
        case("reduce", f"{n}-{dt}-tuple", lambda L, x, n=n: getattr(L, n)(x, dim=(0, 1)), arr((2, 3, 2), dt))

SCAN = "cumsum cumprod cummax cummin logcumsumexp".split()
for n in SCAN:
    for dt in ("f32", "i64", "b", "f16", "i32"):
        for shp in ((3, 4), ()):
            case("scan", f"{n}-{dt}-{len(shp)}d", lambda L, x, n=n: getattr(L, n)(x, -1), arr(shp, dt))
for n in ("sort", "argsort", "msort"):
    for dt in ("f32", "i64", "b"):
        case("sort", f"{n}-{dt}", lambda L, x, n=n: getattr(L, n)(x), arr((3, 4), dt))
case("sort", "topk-f32", lambda L, x: L.topk(x, 2, dim=0), arr((3, 4), "f32"))
case("sort", "topk-i64", lambda L, x: L.topk(x, 1), arr((3, 4), "f32"))
case("sort", "kthvalue", lambda L, x: L.kthvalue(x, 2, 1), arr((3, 4), "f32"))
case("sort", "unique", lambda L, x: L.unique(x), arr((6,), "i64"), modes=("eager",))

SHAPE = [
    ("reshape", lambda L, x: L.reshape(x, (4, -1))), ("view", lambda L, x: x.view(-1)), ("flatten", lambda L, x: L.flatten(x, 1)),
    ("transpose", lambda L, x: L.transpose(x, 0, -1)), ("permute", lambda L, x: L.permute(x, (2, 0, 1))), ("squeeze", lambda L, x: L.squeeze(x)),
    ("squeeze-d", lambda L, x: x.squeeze(0)), ("unsqueeze", lambda L, x: L.unsqueeze(x, -1)), ("movedim", lambda L, x: L.movedim(x, 0, -1)),
    ("swapaxes", lambda L, x: L.swapaxes(x, 0, 1)), ("t-2d", lambda L, x: x.reshape(4, 3).t()), ("mT", lambda L, x: x.mT), ("T", lambda L, x: x.reshape(4, 3).T),
    ("flip", lambda L, x: L.flip(x, (0,))), ("fliplr", lambda L, x: L.fliplr(x)), ("flipud", lambda L, x: L.flipud(x)), ("rot90", lambda L, x: L.rot90(x, 1, (1, 2))),
    ("roll", lambda L, x: L.roll(x, 1, -1)), ("narrow", lambda L, x: L.narrow(x, 1, 0, 2)), ("select", lambda L, x: L.select(x, 1, -1)),
    ("split", lambda L, x: L.split(x, 1, 0)), ("chunk", lambda L, x: L.chunk(x, 2, -1)), ("tensor_split", lambda L, x: L.tensor_split(x, 2, 1)),
    ("unbind", lambda L, x: L.unbind(x, 1)), ("expand", lambda L, x: x[:, :1].expand(2, 5, 2)), ("repeat", lambda L, x: x.repeat(1, 2, 1)),
    ("tile", lambda L, x: L.tile(x, (2,))), ("repeat_interleave", lambda L, x: L.repeat_interleave(x, 2, 0)), ("tril", lambda L, x: L.tril(x)),
    ("triu", lambda L, x: L.triu(x, 1)), ("diagonal", lambda L, x: L.diagonal(x, 0, 1, 2)), ("diag_embed", lambda L, x: L.diag_embed(x)),
    ("atleast_2d", lambda L, x: L.atleast_2d(x)), ("ravel", lambda L, x: L.ravel(x)), ("hstack", lambda L, x: L.hstack([x, x])), ("vstack", lambda L, x: L.vstack([x, x])),
    ("dstack", lambda L, x: L.dstack([x, x])), ("column_stack", lambda L, x: L.column_stack([x[0], x[0]])), ("cat", lambda L, x: L.cat([x, x], -2)),
    ("stack", lambda L, x: L.stack([x, x], -1)), ("contiguous", lambda L, x: x.transpose(0, 1).contiguous().view(-1)), ("clone", lambda L, x: x.clone()),
    ("unflatten", lambda L, x: x.unflatten(1, (3, 1))), ("moveaxis", lambda L, x: L.moveaxis(x, 1, 0)), ("flatten-all", lambda L, x: x.flatten()),
    ("index_select", lambda L, x: L.index_select(x, 1, L.tensor([0, 2]))), ("take", lambda L, x: L.take(x, L.tensor([0, 5]))),
    ("take_along_dim", lambda L, x: L.take_along_dim(x, L.tensor([[[0], [1], [2]]]), 1)), ("masked_fill", lambda L, x: x.masked_fill(x > 0, 0)),
    ("where", lambda L, x: L.where(x > 0, x, 0)), ("where-method", lambda L, x: x.where(x > 0, -1)), ("clamp", lambda L, x: L.clamp(x, -0.5, 0.5)),
    ("clamp-min", lambda L, x: x.clamp(min=0)), ("clip", lambda L, x: L.clip(x, max=1)), ("nonzero", lambda L, x: L.nonzero(x)),
    ("argwhere", lambda L, x: L.argwhere(x)), ("count_nonzero", lambda L, x: L.count_nonzero(x, 1)), ("diff", lambda L, x: L.diff(x, dim=-1)),
    ("bincount", lambda L, x: L.bincount(x.flatten().abs().long())), ("searchsorted", lambda L, x: L.searchsorted(L.tensor([0, 1, 2]), x)),
    ("outer", lambda L, x: L.outer(x.flatten(), x.flatten())), ("kron", lambda L, x: L.kron(x[0], x[1])), ("cross", lambda L, x: L.cross(x[0, :3, :].T.reshape(2, 3)*1, x[1, :3, :].T.reshape(2, 3)*1, dim=1)),
    ("trace", lambda L, x: L.trace(x[0])), ("dot", lambda L, x: L.dot(x.flatten(), x.flatten())), ("matmul", lambda L, x: L.matmul(x, x.transpose(1, 2))),
    ("clamp-tensor", lambda L, x: L.clamp(x, min=x[0])), ("lerp", lambda L, x: L.lerp(x.double(), x * 2.0, 0.5)),
    ("type_as", lambda L, x: x.type_as(L.ones(1, dtype=L.float64))), ("to", lambda L, x: x.to(L.int32)), ("float", lambda L, x: x.float()),
    ("long", lambda L, x: x.long()), ("bool", lambda L, x: x.bool()), ("half", lambda L, x: x.half()), ("double", lambda L, x: x.double()), ("int", lambda L, x: x.int()),
    ("new_zeros", lambda L, x: x.new_zeros(2, 3)), ("new_ones", lambda L, x: x.new_ones((2,))), ("new_full", lambda L, x: x.new_full((2,), 3)), ("new_tensor", lambda L, x: x.new_tensor([1, 2])),
    ("zeros_like", lambda L, x: L.zeros_like(x)), ("ones_like", lambda L, x: L.ones_like(x, dtype=L.float16)), ("full_like", lambda L, x: L.full_like(x, 2)),
    ("size", lambda L, x: x.size()), ("size-d", lambda L, x: x.size(-1)), ("shape", lambda L, x: x.shape), ("dim", lambda L, x: x.dim()), ("ndim", lambda L, x: x.ndim),
    ("numel", lambda L, x: x.numel()), ("nelement", lambda L, x: x.nelement()), ("element_size", lambda L, x: x.element_size()), ("is_floating_point", lambda L, x: x.is_floating_point()),
    ("is_complex", lambda L, x: x.is_complex()), ("dtype", lambda L, x: x.dtype), ("is_contiguous", lambda L, x: x.transpose(0, 1).is_contiguous()), ("stride", lambda L, x: x.stride()),
    ("allclose", lambda L, x: L.allclose(x, x)), ("equal", lambda L, x: L.equal(x, x)), ("tolist", lambda L, x: x.tolist()), ("item", lambda L, x: x.sum().item()),
    ("len", lambda L, x: len(x)), ("bool-0d", lambda L, x: bool(x.sum() != 0)), ("int()", lambda L, x: int(x[0, 0, 0])), ("float()", lambda L, x: float(x[0, 0, 0])),
    ("sum-dtype", lambda L, x: x.sum(dtype=L.float64)), ("mean-int", lambda L, x: x.mean()), ("std-unbiased", lambda L, x: x.std(1, unbiased=False)),
    ("var-correction", lambda L, x: L.var(x, dim=0, correction=0)), ("std_mean", lambda L, x: L.std_mean(x, 0)), ("var_mean", lambda L, x: L.var_mean(x, 1)),
    ("max-elementwise", lambda L, x: L.max(x, x * 2)), ("min-other", lambda L, x: x.min(x)), ("softmax", lambda L, x: L.softmax(x, -1)), ("log_softmax", lambda L, x: L.log_softmax(x, 0)),
    ("softmax-method", lambda L, x: x.softmax(1)), ("sigmoid-method", lambda L, x: x.sigmoid()), ("relu-method", lambda L, x: x.relu()),
    ("einsum", lambda L, x: L.einsum("abc,abc->a", x, x)), ("cumsum-method", lambda L, x: x.cumsum(0)), ("sort-method", lambda L, x: x.sort(dim=-1, descending=True)),
    ("topk-method", lambda L, x: x.topk(1, dim=1)), ("max-method-dim", lambda L, x: x.max(dim=-1)), ("min-method-dim-keep", lambda L, x: x.min(0, keepdim=True)),
    ("abs_", lambda L, x: x.clone().abs_()), ("add_", lambda L, x: x.clone().add_(1)), ("mul_", lambda L, x: x.clone().mul_(2)), ("clamp_", lambda L, x: x.clone().clamp_(0, 1)),
    ("zero_", lambda L, x: x.clone().zero_()), ("fill_", lambda L, x: x.clone().fill_(3)), ("masked_fill_", lambda L, x: x.clone().masked_fill_(x > 0, 1)),
    ("index_fill", lambda L, x: x.index_fill(1, L.tensor([0]), -1)), ("index_add", lambda L, x: x.index_add(0, L.tensor([0, 0]), x)),
    ("index_copy", lambda L, x: x.index_copy(0, L.tensor([1, 0]), x)), ("scatter", lambda L, x: L.scatter(x, 1, L.zeros(2, 1, 2, dtype=L.long), x[:, :1])),
    ("scatter-value", lambda L, x: x.scatter(2, L.ones(2, 3, 1, dtype=L.long), 5)), ("scatter_add", lambda L, x: x.scatter_add(0, L.ones(1, 3, 2, dtype=L.long), x[:1])),
    ("scatter_reduce", lambda L, x: x.scatter_reduce(0, L.ones(1, 3, 2, dtype=L.long), x[:1], "amax")), ("gather", lambda L, x: L.gather(x, 2, L.zeros(2, 3, 1, dtype=L.long))),
    ("masked_select", lambda L, x: L.masked_select(x, x > 0)), ("masked_scatter", lambda L, x: x.masked_scatter(x > 0, x * 10)),
    ("index_put", lambda L, x: x.index_put((L.tensor([0, 1]),), x[:1] * 0)), ("put", lambda L, x: x.put(L.tensor([0]), x.flatten()[:1] + 1)),
    ("addmm", lambda L, x: L.addmm(x[0, :2, :2], x[0, :2], x[1, :, :2])), ("addcmul", lambda L, x: L.addcmul(x, x, x, value=0.5)), ("addcdiv", lambda L, x: L.addcdiv(x, x, x.abs() + 1, value=2)),
    ("baddbmm", lambda L, x: L.baddbmm(x @ x.transpose(1, 2), x, x.transpose(1, 2))), ("histc", lambda L, x: L.histc(x.float(), 4)),
    ("cdist", lambda L, x: L.cdist(x, x)), ("isin", lambda L, x: L.isin(x, x[0])), ("heaviside", lambda L, x: L.heaviside(x, x)),
    ("logit", lambda L, x: L.logit(x.sigmoid() if x.is_floating_point() else x)), ("sinc", lambda L, x: L.sinc(x)), ("i0", lambda L, x: L.i0(x)),
    ("clamp-int-float", lambda L, x: L.clamp(x, 0.5)), ("round-decimals", lambda L, x: L.round(x, decimals=1)), ("pow-neg-int", lambda L, x: x ** 2),
    ("mean-dtype", lambda L, x: x.mean(dtype=L.float64)), ("prod-int", lambda L, x: x.prod(1)), ("cummax-method", lambda L, x: x.cummax(1)),
    ("cov", lambda L, x: L.cov(x[0])), ("corrcoef", lambda L, x: L.corrcoef(x[0])), ("vander", lambda L, x: L.vander(x.flatten()[:3])),
    ("trapezoid", lambda L, x: L.trapezoid(x)), ("renorm", lambda L, x: x.renorm(2, 0, 1.0)), ("frexp", lambda L, x: L.frexp(x)),
    ("ldexp", lambda L, x: L.ldexp(x, L.tensor([2]))), ("square_", lambda L, x: x.clone().square_()), ("sign-method", lambda L, x: x.sign()),
    ("new_empty-shape", lambda L, x: x.new_empty(2, 3).shape), ("broadcast_to", lambda L, x: L.broadcast_to(x[0], (2, 3, 2))),
    ("broadcast_tensors", lambda L, x: L.broadcast_tensors(x, x[0])), ("broadcast_shapes", lambda L, x: L.broadcast_shapes((2, 1), (3,))),
    ("meshgrid", lambda L, x: L.meshgrid(x[0, 0], x[0, 1], indexing="ij")), ("cartesian_prod", lambda L, x: L.cartesian_prod(x[0, 0], x[0, 1])),
    ("combinations", lambda L, x: L.combinations(x[0, 0])), ("block_diag", lambda L, x: L.block_diag(x[0], x[1])), ("atleast_1d", lambda L, x: L.atleast_1d(x[0, 0, 0])),
    ("flatten-method-neg", lambda L, x: x.flatten(-2, -1)), ("view_as", lambda L, x: x.view_as(x)), ("reshape_as", lambda L, x: x.reshape_as(x)), ("expand_as", lambda L, x: x[:1].expand_as(x)),
    ("squeeze-tuple", lambda L, x: x[:1, :1].squeeze((0, 1))), ("amax-tuple", lambda L, x: x.amax((0, 2))), ("logsumexp-keep", lambda L, x: L.logsumexp(x.float(), 1, keepdim=True)),
    ("norm-p1", lambda L, x: x.float().norm(p=1, dim=1)),
    ("H", lambda L, x: x[0].H), ("mH", lambda L, x: x.mH), ("adjoint", lambda L, x: x.adjoint()), ("msort-method", lambda L, x: x.msort()),
    ("sum_to_size", lambda L, x: x.sum_to_size(1, 3, 1)), ("split_with_sizes", lambda L, x: x.split_with_sizes([1, 2], 1)), ("isreal", lambda L, x: x.isreal()),
    ("median-dim", lambda L, x: x.median(1)), ("kthvalue-method", lambda L, x: x.kthvalue(2, 1, True)), ("nansum-method", lambda L, x: x.nansum(0)),
    ("index_add-alpha", lambda L, x: x.index_add(2, L.tensor([1, 1]), x, alpha=2)), ("diag_embed-offset", lambda L, x: L.diag_embed(x, 1, 0, 2)),
    ("rot90-k3", lambda L, x: L.rot90(x, 3, (0, 2))), ("tensor_split-idx", lambda L, x: L.tensor_split(x, [1, 5], 1)), ("movedim-multi", lambda L, x: L.movedim(x, (0, 1), (2, 0))), ("dist", lambda L, x: L.dist(x.float(), x.float() + 1)), ("matrix_power", lambda L, x: L.matrix_power(x[0, :2, :2], 3)),
]
for n, f in SHAPE:
    for dt in ("f32", "i64", "b"):
        case("tensor-ops", f"{n}-{dt}", f, arr((2, 3, 2), dt))

# 0-d
for n in ("sum", "mean", "max", "argmax", "squeeze", "unsqueeze", "flatten", "cumsum", "softmax", "std"):
    for d in (0, -1):
        case("zero-dim", f"{n}-0d-dim{d}", lambda L, x, n=n, d=d: getattr(L, n)(x, d), arr((), "f32"))
for d in (1, -2):
    case("zero-dim", f"sum-0d-bad-dim{d}", lambda L, x, d=d: L.sum(x, d), arr((), "f32"))

# indexing
IDX = [
    ("int", lambda L, x: x[1]), ("neg", lambda L, x: x[-1, -2]), ("slice", lambda L, x: x[:, 1:3]), ("step", lambda L, x: x[::2, ::-1]),
    ("none", lambda L, x: x[None, :, None]), ("ellipsis", lambda L, x: x[..., 0]), ("list", lambda L, x: x[[0, 1, 0]]), ("tensor", lambda L, x: x[L.tensor([1, 0])]),
    ("two-arrays", lambda L, x: x[L.tensor([0, 1]), L.tensor([2, 0])]), ("arr-slice-arr", lambda L, x: x[L.tensor([0, 1]), :, L.tensor([1, 0])]),
    ("bool-mask", lambda L, x: x[x > 0]), ("bool-row", lambda L, x: x[L.tensor([True, False, True])]), ("uint8-mask", lambda L, x: x[L.tensor([1, 0, 1], dtype=L.uint8)]),
    ("oob", lambda L, x: x[5]), ("oob-tensor", lambda L, x: x[L.tensor([5])]), ("too-many", lambda L, x: x[0, 0, 0, 0]), ("float-index", lambda L, x: x[L.tensor([0.0])]),
    ("setitem", lambda L, x: _set(x.clone(), (0,), 1)), ("setitem-mask", lambda L, x: _set(x.clone(), x > 0, 0)), ("setitem-arr", lambda L, x: _set(x.clone(), (L.tensor([0, 2]),), -1)),
    ("bool-scalar", lambda L, x: x[True]), ("int-0d-tensor", lambda L, x: x[L.tensor(1)]),
]
def _set(x, k, v):
    x[k] = v
    return x
for n, f in IDX:
    for dt in ("f32", "i64"):
        case("indexing", f"{n}-{dt}", f, arr((3, 4, 2), dt), modes=("eager", "compile") if "mask" in n else ("eager", "graph", "compile"))

# errors
ERR = [
    ("cat-shape", lambda L, x: L.cat([x, x[:, :1].T])), ("matmul-shape", lambda L, x: x @ x), ("view-bad", lambda L, x: x.view(5)), ("reshape-bad", lambda L, x: x.reshape(7)),
    ("transpose-bad", lambda L, x: x.transpose(0, 5)), ("sum-bad-dim", lambda L, x: x.sum(3)), ("squeeze-bad", lambda L, x: x.squeeze(4)), ("add-shape", lambda L, x: x + x[:, :2]),
    ("expand-bad", lambda L, x: x.expand(4, 4)), ("stack-shape", lambda L, x: L.stack([x, x.T])), ("permute-bad", lambda L, x: x.permute(0, 0)), ("gather-bad", lambda L, x: L.gather(x, 1, L.tensor([[5]]))),
    ("index_select-bad", lambda L, x: L.index_select(x, 0, L.tensor([9]))), ("split-bad", lambda L, x: L.split(x, 1, 4)), ("item-multi", lambda L, x: x.item()), ("bool-multi", lambda L, x: bool(x)),
    ("view-noncontig", lambda L, x: x.T.view(-1)), ("float-bitand", lambda L, x: x & x), ("neg-bool", lambda L, x: -(x > 0)), ("int-pow-neg", lambda L, x: x.long() ** -1),
    ("mm-1d", lambda L, x: L.mm(x[0], x[0])), ("bmm-2d", lambda L, x: L.bmm(x, x)), ("topk-big", lambda L, x: L.topk(x, 9)), ("chunk-0", lambda L, x: L.chunk(x, 0)),
    ("flatten-bad", lambda L, x: L.flatten(x, 3)), ("unsqueeze-bad", lambda L, x: x.unsqueeze(4)), ("diag-3d", lambda L, x: L.diag(x[None])), ("softmax-bad", lambda L, x: L.softmax(x, 4)),
    ("where-shape", lambda L, x: L.where(x > 0, x, x[:, :2])), ("masked_fill-shape", lambda L, x: x.masked_fill(x[:, :2] > 0, 1)), ("repeat-few", lambda L, x: x.repeat(2)),
    ("narrow-bad", lambda L, x: x.narrow(0, 2, 5)), ("select-bad", lambda L, x: x.select(0, 9)), ("to-bad", lambda L, x: x.to("xpu")), ("full-bad", lambda L, x: L.full((2,), "a")),
    ("tensor-ragged", lambda L, x: L.tensor([[1, 2], [3]])), ("arange-bad", lambda L, x: L.arange(0, 5, 0)), ("zeros-neg", lambda L, x: L.zeros(-1)),
    ("cumsum-bad", lambda L, x: L.cumsum(x, 2)), ("argmax-bad", lambda L, x: x.argmax(2)), ("std-int", lambda L, x: x.long().std()), ("mean-int", lambda L, x: x.long().mean()),
    ("one_hot-float", lambda L, x: L.nn.functional.one_hot(x)), ("cross_entropy-shape", lambda L, x: L.nn.functional.cross_entropy(x, L.tensor([0, 1, 2]))),
]
for n, f in ERR:
    case("errors", n, f, arr((2, 3), "f32"), modes=("eager",))

F = [
    ("relu", lambda F, x: F.relu(x)), ("gelu", lambda F, x: F.gelu(x)), ("gelu-tanh", lambda F, x: F.gelu(x, approximate="tanh")), ("silu", lambda F, x: F.silu(x)),
    ("elu", lambda F, x: F.elu(x)), ("selu", lambda F, x: F.selu(x)), ("celu", lambda F, x: F.celu(x, 0.5)), ("leaky_relu", lambda F, x: F.leaky_relu(x, 0.2)),
    ("hardtanh", lambda F, x: F.hardtanh(x)), ("relu6", lambda F, x: F.relu6(x * 4)), ("hardswish", lambda F, x: F.hardswish(x)), ("hardsigmoid", lambda F, x: F.hardsigmoid(x)),
    ("mish", lambda F, x: F.mish(x)), ("logsigmoid", lambda F, x: F.logsigmoid(x)), ("softsign", lambda F, x: F.softsign(x)), ("softmin", lambda F, x: F.softmin(x, 1)),
    ("glu", lambda F, x: F.glu(x, -1)), ("softplus", lambda F, x: F.softplus(x, beta=2)), ("softmax", lambda F, x: F.softmax(x, dim=0)), ("log_softmax", lambda F, x: F.log_softmax(x, -1)),
    ("tanhshrink", lambda F, x: F.tanhshrink(x)), ("softshrink", lambda F, x: F.softshrink(x)), ("hardshrink", lambda F, x: F.hardshrink(x)), ("threshold", lambda F, x: F.threshold(x, 0.1, 2.0)),
    ("prelu", lambda F, x: F.prelu(x, x.new_tensor([0.25]))), ("rrelu-eval", lambda F, x: F.rrelu(x, training=False)), ("normalize", lambda F, x: F.normalize(x, dim=1)),
    ("linear", lambda F, x: F.linear(x, x[:3])), ("bilinear", lambda F, x: F.bilinear(x, x, x[None, :4, :4].expand(2, 4, 4).contiguous())),
    ("dropout-eval", lambda F, x: F.dropout(x, 0.5, training=False)), ("pad", lambda F, x: F.pad(x, (1, 2))), ("pad-reflect", lambda F, x: F.pad(x[None], (1, 1), mode="reflect")),
    ("pad-replicate", lambda F, x: F.pad(x[None], (1, 2), mode="replicate")), ("pad-circular", lambda F, x: F.pad(x[None], (1, 1), mode="circular")),
    ("mse_loss", lambda F, x: F.mse_loss(x, x * 0.5)), ("l1_loss", lambda F, x: F.l1_loss(x, x * 0.5, reduction="sum")), ("smooth_l1_loss", lambda F, x: F.smooth_l1_loss(x, x * 0.1, beta=0.5)),
    ("huber_loss", lambda F, x: F.huber_loss(x, x * 0.1, delta=0.5)), ("kl_div", lambda F, x: F.kl_div(F.log_softmax(x, 1), F.softmax(x * 2, 1), reduction="batchmean")),
    ("cross_entropy", lambda F, x: F.cross_entropy(x, x.new_tensor([0, 3, 1, 2]).long())), ("cross_entropy-ls", lambda F, x: F.cross_entropy(x, x.new_tensor([0, 3, 1, 2]).long(), label_smoothing=0.1)),
    ("cross_entropy-prob", lambda F, x: F.cross_entropy(x, F.softmax(x * 3, 1))), ("cross_entropy-ignore", lambda F, x: F.cross_entropy(x, x.new_tensor([0, -100, 1, 2]).long())),
    ("nll_loss", lambda F, x: F.nll_loss(F.log_softmax(x, 1), x.new_tensor([0, 3, 1, 2]).long(), reduction="none")),
    ("bce", lambda F, x: F.binary_cross_entropy(x.sigmoid(), (x > 0).float())), ("bce_logits", lambda F, x: F.binary_cross_entropy_with_logits(x, (x > 0).float(), pos_weight=x[0].abs())),
    ("one_hot", lambda F, x: F.one_hot(x.argmax(1), 5)), ("one_hot-auto", lambda F, x: F.one_hot(x.argmax(1))), ("embedding", lambda F, x: F.embedding(x.argmax(1), x)),
    ("cosine_similarity", lambda F, x: F.cosine_similarity(x, x.flip(0))), ("pairwise_distance", lambda F, x: F.pairwise_distance(x, x.flip(0))),
    ("margin_ranking_loss", lambda F, x: F.margin_ranking_loss(x[0], x[1], x[2].sign())), ("hinge_embedding_loss", lambda F, x: F.hinge_embedding_loss(x, x.sign())),
    ("multi_margin_loss", lambda F, x: F.multi_margin_loss(x, x.new_tensor([0, 3, 1, 2]).long())), ("triplet_margin_loss", lambda F, x: F.triplet_margin_loss(x[:2], x[1:3], x[2:4])),
    ("cosine_embedding_loss", lambda F, x: F.cosine_embedding_loss(x[:2], x[2:], x.new_tensor([1, -1]))), ("soft_margin_loss", lambda F, x: F.soft_margin_loss(x, x.sign())),
    ("multilabel_margin_loss", lambda F, x: F.multilabel_margin_loss(x, x.new_tensor([[3, 0, -1, 1, 1]] * 4).long())),
    ("multilabel_soft_margin_loss", lambda F, x: F.multilabel_soft_margin_loss(x, (x > 0).float())), ("poisson_nll_loss", lambda F, x: F.poisson_nll_loss(x, x.abs())),
    ("gaussian_nll_loss", lambda F, x: F.gaussian_nll_loss(x, x * 0.5, x.abs() + 0.1)),
    ("pixel_shuffle", lambda F, x: F.pixel_shuffle(x.reshape(1, 4, 5, 1), 2)), ("pixel_unshuffle", lambda F, x: F.pixel_unshuffle(x.reshape(1, 1, 2, 10), 2)),
    ("unfold", lambda F, x: F.unfold(x.reshape(1, 1, 4, 5), 2)), ("unfold-args", lambda F, x: F.unfold(x.reshape(1, 2, 2, 5), (2, 3), dilation=1, padding=1, stride=2)),
    ("fold", lambda F, x: F.fold(x.reshape(1, 4, 5), (3, 6), 2)), ("fold-args", lambda F, x: F.fold(x.reshape(1, 4, 5), (4, 4), 2, padding=1, stride=2)),
    ("grid_sample", lambda F, x: F.grid_sample(x.reshape(1, 1, 4, 5), x[:, :2].tanh().reshape(1, 2, 2, 2), align_corners=False)),
    ("grid_sample-nearest", lambda F, x: F.grid_sample(x.reshape(1, 1, 4, 5), x[:, :2].tanh().reshape(1, 2, 2, 2), mode="nearest", align_corners=True)),
    ("grid_sample-zeros-out", lambda F, x: F.grid_sample(x.reshape(1, 1, 4, 5), (x[:, :2] * 1.5).reshape(1, 2, 2, 2), padding_mode="border", align_corners=False)),
    ("affine_grid", lambda F, x: F.affine_grid(x[:2, :3].reshape(1, 2, 3), (1, 1, 3, 4), align_corners=False)),
    ("embedding_bag", lambda F, x: F.embedding_bag(x.new_tensor([0, 2, 1, 3]).long(), x, x.new_tensor([0, 1]).long(), mode="mean")),
    ("embedding_bag-sum", lambda F, x: F.embedding_bag(x.new_tensor([[0, 2], [1, 3]]).long(), x, mode="sum")),
    ("embedding_bag-max", lambda F, x: F.embedding_bag(x.new_tensor([0, 2, 1, 3]).long(), x, x.new_tensor([0, 3]).long(), mode="max")),
    ("ctc_loss", lambda F, x: F.ctc_loss(F.log_softmax(x.reshape(4, 1, 5), 2), x.new_tensor([[1, 2]]).long(), [4], [2])),
    ("local_response_norm", lambda F, x: F.local_response_norm(x.reshape(1, 4, 5), 2)), ("layer_norm", lambda F, x: F.layer_norm(x, (5,))),
    ("group_norm", lambda F, x: F.group_norm(x.reshape(1, 4, 5), 2)), ("instance_norm", lambda F, x: F.instance_norm(x.reshape(1, 4, 5))),
    ("batch_norm", lambda F, x: F.batch_norm(x, None, None, training=True)), ("rms_norm", lambda F, x: F.rms_norm(x, (5,))),
    ("conv1d", lambda F, x: F.conv1d(x.reshape(1, 4, 5), x[:2].reshape(2, 2, 5)[:, :, :3].repeat(1, 2, 1))), ("avg_pool1d", lambda F, x: F.avg_pool1d(x[None], 2)),
    ("max_pool1d", lambda F, x: F.max_pool1d(x[None], 2)), ("adaptive_avg_pool1d", lambda F, x: F.adaptive_avg_pool1d(x[None], 2)), ("lp_pool1d", lambda F, x: F.lp_pool1d(x[None].abs(), 2, 2)),
    ("interpolate", lambda F, x: F.interpolate(x[None], scale_factor=2)), ("sdpa", lambda F, x: F.scaled_dot_product_attention(x[None], x[None], x[None], is_causal=True)),
    ("alpha_dropout-eval", lambda F, x: F.alpha_dropout(x, training=False)), ("softmax-nodim", lambda F, x: F.softmax(x)),
]
for n, f in F:
    case("nn.functional", n, lambda L, x, f=f: f(L.nn.functional, x), arr((4, 5), "f32"))

# dtypes/devices/printing
case("dtypes", "get_default_dtype", lambda L, x: L.get_default_dtype(), arr((1,), "f32"), modes=("eager",))
for n in "long int float double half bool bfloat16 float16 float32 float64 int8 int16 int32 int64 uint8 cfloat complex64".split():
    case("dtypes", n, lambda L, x, n=n: getattr(L, n), arr((1,), "f32"), modes=("eager",))
    case("dtypes", f"zeros-{n}", lambda L, x, n=n: L.zeros(2, dtype=getattr(L, n)), arr((1,), "f32"), modes=("eager",))
case("dtypes", "is_floating_point-dtype", lambda L, x: L.float16.is_floating_point, arr((1,), "f32"), modes=("eager",))
case("dtypes", "itemsize", lambda L, x: L.float16.itemsize, arr((1,), "f32"), modes=("eager",))
case("dtypes", "finfo", lambda L, x: L.finfo(L.float16).eps, arr((1,), "f32"), modes=("eager",))
case("dtypes", "iinfo", lambda L, x: L.iinfo(L.int32).max, arr((1,), "f32"), modes=("eager",))
case("dtypes", "promote_types", lambda L, x: L.promote_types(L.int32, L.float16), arr((1,), "f32"), modes=("eager",))
case("dtypes", "result_type", lambda L, x: L.result_type(x, 2.5), arr((1,), "i64"), modes=("eager",))
case("dtypes", "can_cast", lambda L, x: L.can_cast(L.float32, L.int32), arr((1,), "i64"), modes=("eager",))
case("dtypes", "is_tensor", lambda L, x: L.is_tensor(x), arr((1,), "i64"), modes=("eager",))
case("dtypes", "is_floating_point", lambda L, x: L.is_floating_point(x), arr((1,), "i64"), modes=("eager",))
case("dtypes", "numel", lambda L, x: L.numel(x), arr((2, 3), "i64"), modes=("eager",))
case("dtypes", "device", lambda L, x: str(L.device("cpu")), arr((1,), "f32"), modes=("eager",))
case("dtypes", "device-type", lambda L, x: L.device("cpu").type, arr((1,), "f32"), modes=("eager",))
case("dtypes", "x.device", lambda L, x: str(x.device), arr((1,), "f32"), modes=("eager",))
case("dtypes", "Size", lambda L, x: L.Size([2, 3]).numel(), arr((1,), "f32"), modes=("eager",))
case("dtypes", "is_cuda", lambda L, x: x.is_cuda, arr((1,), "f32"), modes=("eager",))
case("dtypes", "cuda-mem", lambda L, x: L.cuda.memory_allocated(), arr((1,), "f32"), modes=("eager",))
case("dtypes", "cuda-avail", lambda L, x: L.cuda.is_available(), arr((1,), "f32"), modes=("eager",))
case("dtypes", "tensor-float-default", lambda L, x: L.tensor([1.0, 2]).dtype, arr((1,), "f32"), modes=("eager",))
case("dtypes", "tensor-bool", lambda L, x: L.tensor([True]).dtype, arr((1,), "f32"), modes=("eager",))
case("dtypes", "tensor-f16-scalar", lambda L, x: (L.tensor([1.0], dtype=L.float16) * 1.0001).tolist(), arr((1,), "f32"), modes=("eager",))
case("dtypes", "f16-add-scalar", lambda L, x: (L.tensor([2048.0], dtype=L.float16) + 1.5).tolist(), arr((1,), "f32"), modes=("eager",))
case("dtypes", "f16-mul-scalar", lambda L, x: (L.tensor([3.0, 7.0], dtype=L.float16) * 0.1).tolist(), arr((1,), "f32"), modes=("eager",))
case("dtypes", "arange-dtype", lambda L, x: L.arange(5).dtype, arr((1,), "f32"), modes=("eager",))
case("dtypes", "arange-float", lambda L, x: L.arange(0, 1, 0.25).dtype, arr((1,), "f32"), modes=("eager",))
case("dtypes", "linspace", lambda L, x: L.linspace(0, 1, 5), arr((1,), "f32"), modes=("eager",))
case("dtypes", "full-int", lambda L, x: L.full((2,), 3).dtype, arr((1,), "f32"), modes=("eager",))
case("dtypes", "full-bool", lambda L, x: L.full((2,), True).dtype, arr((1,), "f32"), modes=("eager",))
case("dtypes", "randn-dtype", lambda L, x: L.randn(2, 3).dtype, arr((1,), "f32"), modes=("eager",))
case("dtypes", "rand_like", lambda L, x: L.rand_like(x).shape, arr((2,), "f32"), modes=("eager",))
case("dtypes", "randint_like", lambda L, x: L.randint_like(x, 5).dtype, arr((2,), "i64"), modes=("eager",))
case("dtypes", "eye", lambda L, x: L.eye(2, 3), arr((1,), "f32"), modes=("eager",))
case("dtypes", "empty_like", lambda L, x: L.empty_like(x).dtype, arr((1,), "f32"), modes=("eager",))
case("dtypes", "as_tensor", lambda L, x: L.as_tensor([1, 2], dtype=L.float32), arr((1,), "f32"), modes=("eager",))
case("dtypes", "from_numpy", lambda L, x: L.from_numpy(np.arange(3)), arr((1,), "f32"), modes=("eager",))
case("dtypes", "logspace", lambda L, x: L.logspace(0, 2, 3), arr((1,), "f32"), modes=("eager",))
case("dtypes", "tril_indices", lambda L, x: L.tril_indices(3, 3), arr((1,), "f32"), modes=("eager",))

# printing
PR = [(n, v) for n, v in [
    ("f32", "[[1.0, 2.5], [3.0, 4.0]]"), ("big", "[1e10, 1.0]"), ("small", "[1e-5, 1.0]"), ("int", "[1, 2, 3]"), ("bool", "[True, False]"),
    ("0d", "3.5"), ("0d-int", "7"), ("neg", "[-1.5, 2.25]"), ("nan", "[float('nan'), 1.0, float('inf')]"), ("empty", "[]"), ("long", "list(range(2000))"),
    ("prec", "[0.123456789, 1.0]"), ("ints-as-float", "[1.0, 2.0]"), ("f64", "DT64"), ("f16", "DT16"), ("grad", "GRAD"), ("grad_fn", "GRADFN"), ("nested", "[[[1, 2]], [[3, 4]]]"),
]]
def _mk(L, v):
    if v == "DT64":
        return L.tensor([1.5, 2.0], dtype=L.float64)
    if v == "DT16":
        return L.tensor([1.5, 2.0], dtype=L.float16)
    if v == "GRAD":
        return L.tensor([1.5, 2.0], requires_grad=True)
    if v == "GRADFN":
        return L.tensor([1.5, 2.0], requires_grad=True) * 2
    return L.tensor(eval(v))
for n, v in PR:
    case("printing", f"repr-{n}", lambda L, x, v=v: repr(_mk(L, v)), arr((1,), "f32"), modes=("eager",))
    case("printing", f"str-{n}", lambda L, x, v=v: str(_mk(L, v)), arr((1,), "f32"), modes=("eager",))
case("printing", "format-0d", lambda L, x: f"{L.tensor(3.14159):.2f}", arr((1,), "f32"), modes=("eager",))
case("printing", "format-int", lambda L, x: f"{L.tensor(3)}", arr((1,), "f32"), modes=("eager",))
case("printing", "dtype-repr", lambda L, x: repr(L.float32), arr((1,), "f32"), modes=("eager",))
case("printing", "size-repr", lambda L, x: repr(L.zeros(2, 3).shape), arr((1,), "f32"), modes=("eager",))
case("printing", "device-repr", lambda L, x: repr(L.zeros(2).device), arr((1,), "f32"), modes=("eager",))
case("printing", "max-grad_fn", lambda L, x: L.tensor([[1.0, 2.0]], requires_grad=True).max(1).values.grad_fn.name(), arr((1,), "f32"), modes=("eager",))
case("printing", "min-grad_fn", lambda L, x: L.tensor([[1.0, 2.0]], requires_grad=True).min(0)[0].grad_fn.name(), arr((1,), "f32"), modes=("eager",))
case("printing", "set_printoptions", lambda L, x: (L.set_printoptions(precision=2), repr(L.tensor([1.23456])), L.set_printoptions(precision=4))[1], arr((1,), "f32"), modes=("eager",))

