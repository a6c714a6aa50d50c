"""The cases of the PyTorch oracle sweep (tests/test_torch_sweep.py): every name of issue 11's
lists and the rest of PyTorch's common tensor API, called the same way on torch and kiln, over
several dtypes (int and bool too), 0-d inputs, negative dims, keepdim and named-tuple returns.

`CASES` holds (family, name, fn(lib, *inputs), inputs, modes); `lib` is `torch` or `kn`.
"""
# ruff: noqa: E501, E731

import numpy as np

DT = {
    "f32": "float32",
    "f64": "float64",
    "f16": "float16",
    "i64": "int64",
    "i32": "int32",
    "u8": "uint8",
    "b": "bool",
}


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
            kind = (
                "positive"
                if n in ("log", "sqrt", "rsqrt", "log2", "log10")
                else ("unit" if n in ("asin", "acos", "atanh") else "normal")
            )
            case(
                "unary",
                f"{n}-{dt}-{len(shp)}d",
                lambda L, x, n=n: getattr(L, n)(x),
                arr(shp, dt, kind),
            )
            case(
                "unary-method",
                f"{n}-{dt}-{len(shp)}d",
                lambda L, x, n=n: getattr(x, n)(),
                arr(shp, dt, kind),
                modes=_FEW if dt != "f32" else _ALL,
            )

BINARY = "add sub mul div true_divide floor_divide remainder fmod pow maximum minimum fmax fmin atan2 eq ne lt le gt ge logical_and logical_or logical_xor bitwise_and bitwise_or bitwise_xor hypot copysign logaddexp nextafter xlogy float_power".split()
for n in BINARY:
    for da, db in (
        ("f32", "f32"),
        ("i64", "i64"),
        ("i32", "f32"),
        ("b", "b"),
        ("f16", "i64"),
        ("u8", "i64"),
        ("i64", "f64"),
    ):
        case(
            "binary",
            f"{n}-{da}-{db}",
            lambda L, a, b, n=n: getattr(L, n)(a, b),
            arr((2, 3), da, seed=1),
            arr((3,), db, "positive", seed=2),
        )
        case(
            "binary-method",
            f"{n}-{da}-{db}",
            lambda L, a, b, n=n: getattr(a, n)(b),
            arr((2, 3), da, seed=1),
            arr((3,), db, "positive", seed=2),
            modes=_FEW if da != "f32" else _ALL,
        )
    for s in (2, 1.5, True):
        case(
            "binary-scalar",
            f"{n}-i64-{s!r}",
            lambda L, a, n=n, s=s: getattr(L, n)(a, s),
            arr((2, 3), "i64"),
        )
        case(
            "binary-scalar",
            f"{n}-f16-{s!r}",
            lambda L, a, n=n, s=s: getattr(L, n)(a, s),
            arr((2, 3), "f16"),
        )

OPS = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/": lambda a, b: a / b,
    "//": lambda a, b: a // b,
    "%": lambda a, b: a % b,
    "**": lambda a, b: a**b,
    "&": lambda a, b: a & b,
    "|": lambda a, b: a | b,
    "^": lambda a, b: a ^ b,
    "<<": lambda a, b: a << b,
    ">>": lambda a, b: a >> b,
    "<": lambda a, b: a < b,
    "==": lambda a, b: a == b,
}
for o, f in OPS.items():
    for da, db in (("f32", "f32"), ("i64", "i64"), ("b", "b"), ("i32", "i64"), ("u8", "b")):
        case(
            "operator",
            f"{o}-{da}-{db}",
            lambda L, a, b, f=f: f(a, b),
            arr((2, 3), da, seed=3),
            arr((2, 3), db, "positive", seed=4),
        )
    for s in (2, 1.5, True):
        case("operator", f"{o}-i64-{s!r}", lambda L, a, f=f, s=s: f(a, s), arr((2, 3), "i64"))
        case(
            "operator",
            f"r{o}-i64-{s!r}",
            lambda L, a, f=f, s=s: f(s, a),
            arr((2, 3), "i64", "positive"),
        )
    case(
        "operator",
        f"{o}-f32-0d-i64",
        lambda L, a, b, f=f: f(a, b),
        arr((2, 3), "f32"),
        arr((), "i64"),
    )
case("operator", "~-i64", lambda L, a: ~a, arr((3,), "i64"))
case("operator", "~-b", lambda L, a: ~a, arr((3,), "b"))
case("operator", "neg-b", lambda L, a: -a, arr((3,), "b"))

RED = "sum mean prod max min amax amin argmax argmin all any std var logsumexp nansum nanmean median nanmedian norm count_nonzero aminmax mode".split()
for n in RED:
    for dt in ("f32", "i64", "b", "f16"):
        m = _ALL if dt in ("f32", "i64") else _FEW  # graph and compile: two dtypes suffice
        for shp in ((3, 4), ()):
            case(
                "reduce",
                f"{n}-{dt}-{len(shp)}d-all",
                lambda L, x, n=n: getattr(L, n)(x),
                arr(shp, dt),
                modes=m,
            )
            for d in (0, -1):
                case(
                    "reduce",
                    f"{n}-{dt}-{len(shp)}d-dim{d}",
                    lambda L, x, n=n, d=d: getattr(L, n)(x, d),
                    arr(shp, dt),
                    modes=m,
                )
                case(
                    "reduce",
                    f"{n}-{dt}-{len(shp)}d-dim{d}-keep",
                    lambda L, x, n=n, d=d: getattr(x, n)(dim=d, keepdim=True),
                    arr(shp, dt),
                    modes=_FEW,
                )
        case(
            "reduce",
            f"{n}-{dt}-tuple",
            lambda L, x, n=n: getattr(L, n)(x, dim=(0, 1)),
            arr((2, 3, 2), dt),
        )

SCAN = "cumsum cumprod cummax cummin logcumsumexp".split()
for n in SCAN:
    for dt in ("f32", "i64", "b", "f16", "i32"):
        for shp in ((3, 4), ()):
            case(
                "scan",
                f"{n}-{dt}-{len(shp)}d",
                lambda L, x, n=n: getattr(L, n)(x, -1),
                arr(shp, dt),
            )
for n in ("sort", "argsort", "msort"):
    for dt in ("f32", "i64", "b"):
        case("sort", f"{n}-{dt}", lambda L, x, n=n: getattr(L, n)(x), arr((3, 4), dt))
case("sort", "topk-f32", lambda L, x: L.topk(x, 2, dim=0), arr((3, 4), "f32"))
case("sort", "topk-i64", lambda L, x: L.topk(x, 1), arr((3, 4), "f32"))
case("sort", "kthvalue", lambda L, x: L.kthvalue(x, 2, 1), arr((3, 4), "f32"))
case("sort", "unique", lambda L, x: L.unique(x), arr((6,), "i64"), modes=("eager",))

from torch_sweep_tables import SHAPE  # noqa: E402

for n, f in SHAPE:
    for dt in ("f32", "i64", "b"):
        case("tensor-ops", f"{n}-{dt}", f, arr((2, 3, 2), dt))

# 0-d
for n in (
    "sum",
    "mean",
    "max",
    "argmax",
    "squeeze",
    "unsqueeze",
    "flatten",
    "cumsum",
    "softmax",
    "std",
):
    for d in (0, -1):
        case(
            "zero-dim", f"{n}-0d-dim{d}", lambda L, x, n=n, d=d: getattr(L, n)(x, d), arr((), "f32")
        )
for d in (1, -2):
    case("zero-dim", f"sum-0d-bad-dim{d}", lambda L, x, d=d: L.sum(x, d), arr((), "f32"))

# indexing
IDX = [
    ("int", lambda L, x: x[1]),
    ("neg", lambda L, x: x[-1, -2]),
    ("slice", lambda L, x: x[:, 1:3]),
    ("step", lambda L, x: x[::2, ::-1]),
    ("none", lambda L, x: x[None, :, None]),
    ("ellipsis", lambda L, x: x[..., 0]),
    ("list", lambda L, x: x[[0, 1, 0]]),
    ("tensor", lambda L, x: x[L.tensor([1, 0])]),
    ("two-arrays", lambda L, x: x[L.tensor([0, 1]), L.tensor([2, 0])]),
    ("arr-slice-arr", lambda L, x: x[L.tensor([0, 1]), :, L.tensor([1, 0])]),
    ("bool-mask", lambda L, x: x[x > 0]),
    ("bool-row", lambda L, x: x[L.tensor([True, False, True])]),
    ("uint8-mask", lambda L, x: x[L.tensor([1, 0, 1], dtype=L.uint8)]),
    ("oob", lambda L, x: x[5]),
    ("oob-tensor", lambda L, x: x[L.tensor([5])]),
    ("too-many", lambda L, x: x[0, 0, 0, 0]),
    ("float-index", lambda L, x: x[L.tensor([0.0])]),
    ("setitem", lambda L, x: _set(x.clone(), (0,), 1)),
    ("setitem-mask", lambda L, x: _set(x.clone(), x > 0, 0)),
    ("setitem-arr", lambda L, x: _set(x.clone(), (L.tensor([0, 2]),), -1)),
    ("bool-scalar", lambda L, x: x[True]),
    ("int-0d-tensor", lambda L, x: x[L.tensor(1)]),
]


def _set(x, k, v):
    x[k] = v
    return x


for n, f in IDX:
    for dt in ("f32", "i64"):
        case(
            "indexing",
            f"{n}-{dt}",
            f,
            arr((3, 4, 2), dt),
            modes=("eager", "compile") if "mask" in n else ("eager", "graph", "compile"),
        )

# errors
ERR = [
    ("cat-shape", lambda L, x: L.cat([x, x[:, :1].T])),
    ("matmul-shape", lambda L, x: x @ x),
    ("view-bad", lambda L, x: x.view(5)),
    ("reshape-bad", lambda L, x: x.reshape(7)),
    ("transpose-bad", lambda L, x: x.transpose(0, 5)),
    ("sum-bad-dim", lambda L, x: x.sum(3)),
    ("squeeze-bad", lambda L, x: x.squeeze(4)),
    ("add-shape", lambda L, x: x + x[:, :2]),
    ("expand-bad", lambda L, x: x.expand(4, 4)),
    ("stack-shape", lambda L, x: L.stack([x, x.T])),
    ("permute-bad", lambda L, x: x.permute(0, 0)),
    ("gather-bad", lambda L, x: L.gather(x, 1, L.tensor([[5]]))),
    ("index_select-bad", lambda L, x: L.index_select(x, 0, L.tensor([9]))),
    ("split-bad", lambda L, x: L.split(x, 1, 4)),
    ("item-multi", lambda L, x: x.item()),
    ("bool-multi", lambda L, x: bool(x)),
    ("view-noncontig", lambda L, x: x.T.view(-1)),
    ("float-bitand", lambda L, x: x & x),
    ("neg-bool", lambda L, x: -(x > 0)),
    ("int-pow-neg", lambda L, x: x.long() ** -1),
    ("mm-1d", lambda L, x: L.mm(x[0], x[0])),
    ("bmm-2d", lambda L, x: L.bmm(x, x)),
    ("topk-big", lambda L, x: L.topk(x, 9)),
    ("chunk-0", lambda L, x: L.chunk(x, 0)),
    ("flatten-bad", lambda L, x: L.flatten(x, 3)),
    ("unsqueeze-bad", lambda L, x: x.unsqueeze(4)),
    ("diag-3d", lambda L, x: L.diag(x[None])),
    ("softmax-bad", lambda L, x: L.softmax(x, 4)),
    ("where-shape", lambda L, x: L.where(x > 0, x, x[:, :2])),
    ("masked_fill-shape", lambda L, x: x.masked_fill(x[:, :2] > 0, 1)),
    ("repeat-few", lambda L, x: x.repeat(2)),
    ("narrow-bad", lambda L, x: x.narrow(0, 2, 5)),
    ("select-bad", lambda L, x: x.select(0, 9)),
    ("to-bad", lambda L, x: x.to("xpu")),
    ("full-bad", lambda L, x: L.full((2,), "a")),
    ("tensor-ragged", lambda L, x: L.tensor([[1, 2], [3]])),
    ("arange-bad", lambda L, x: L.arange(0, 5, 0)),
    ("zeros-neg", lambda L, x: L.zeros(-1)),
    ("cumsum-bad", lambda L, x: L.cumsum(x, 2)),
    ("argmax-bad", lambda L, x: x.argmax(2)),
    ("std-int", lambda L, x: x.long().std()),
    ("mean-int", lambda L, x: x.long().mean()),
    ("one_hot-float", lambda L, x: L.nn.functional.one_hot(x)),
    ("cross_entropy-shape", lambda L, x: L.nn.functional.cross_entropy(x, L.tensor([0, 1, 2]))),
]
for n, f in ERR:
    case("errors", n, f, arr((2, 3), "f32"), modes=("eager",))

from torch_sweep_tables import F  # noqa: E402

for n, f in F:
    case("nn.functional", n, lambda L, x, f=f: f(L.nn.functional, x), arr((4, 5), "f32"))

# dtypes/devices/printing
case(
    "dtypes",
    "get_default_dtype",
    lambda L, x: L.get_default_dtype(),
    arr((1,), "f32"),
    modes=("eager",),
)
for n in "long int float double half bool bfloat16 float16 float32 float64 int8 int16 int32 int64 uint8 cfloat complex64".split():
    case("dtypes", n, lambda L, x, n=n: getattr(L, n), arr((1,), "f32"), modes=("eager",))
    case(
        "dtypes",
        f"zeros-{n}",
        lambda L, x, n=n: L.zeros(2, dtype=getattr(L, n)),
        arr((1,), "f32"),
        modes=("eager",),
    )
case(
    "dtypes",
    "is_floating_point-dtype",
    lambda L, x: L.float16.is_floating_point,
    arr((1,), "f32"),
    modes=("eager",),
)
case("dtypes", "itemsize", lambda L, x: L.float16.itemsize, arr((1,), "f32"), modes=("eager",))
case("dtypes", "finfo", lambda L, x: L.finfo(L.float16).eps, arr((1,), "f32"), modes=("eager",))
case("dtypes", "iinfo", lambda L, x: L.iinfo(L.int32).max, arr((1,), "f32"), modes=("eager",))
case(
    "dtypes",
    "promote_types",
    lambda L, x: L.promote_types(L.int32, L.float16),
    arr((1,), "f32"),
    modes=("eager",),
)
case(
    "dtypes", "result_type", lambda L, x: L.result_type(x, 2.5), arr((1,), "i64"), modes=("eager",)
)
case(
    "dtypes",
    "can_cast",
    lambda L, x: L.can_cast(L.float32, L.int32),
    arr((1,), "i64"),
    modes=("eager",),
)
case("dtypes", "is_tensor", lambda L, x: L.is_tensor(x), arr((1,), "i64"), modes=("eager",))
case(
    "dtypes",
    "is_floating_point",
    lambda L, x: L.is_floating_point(x),
    arr((1,), "i64"),
    modes=("eager",),
)
case("dtypes", "numel", lambda L, x: L.numel(x), arr((2, 3), "i64"), modes=("eager",))
case("dtypes", "device", lambda L, x: str(L.device("cpu")), arr((1,), "f32"), modes=("eager",))
case("dtypes", "device-type", lambda L, x: L.device("cpu").type, arr((1,), "f32"), modes=("eager",))
case("dtypes", "x.device", lambda L, x: str(x.device), arr((1,), "f32"), modes=("eager",))
case("dtypes", "Size", lambda L, x: L.Size([2, 3]).numel(), arr((1,), "f32"), modes=("eager",))
case("dtypes", "is_cuda", lambda L, x: x.is_cuda, arr((1,), "f32"), modes=("eager",))
case(
    "dtypes", "cuda-mem", lambda L, x: L.cuda.memory_allocated(), arr((1,), "f32"), modes=("eager",)
)
case("dtypes", "cuda-avail", lambda L, x: L.cuda.is_available(), arr((1,), "f32"), modes=("eager",))
case(
    "dtypes",
    "tensor-float-default",
    lambda L, x: L.tensor([1.0, 2]).dtype,
    arr((1,), "f32"),
    modes=("eager",),
)
case(
    "dtypes", "tensor-bool", lambda L, x: L.tensor([True]).dtype, arr((1,), "f32"), modes=("eager",)
)
case(
    "dtypes",
    "tensor-f16-scalar",
    lambda L, x: (L.tensor([1.0], dtype=L.float16) * 1.0001).tolist(),
    arr((1,), "f32"),
    modes=("eager",),
)
case(
    "dtypes",
    "f16-add-scalar",
    lambda L, x: (L.tensor([2048.0], dtype=L.float16) + 1.5).tolist(),
    arr((1,), "f32"),
    modes=("eager",),
)
case(
    "dtypes",
    "f16-mul-scalar",
    lambda L, x: (L.tensor([3.0, 7.0], dtype=L.float16) * 0.1).tolist(),
    arr((1,), "f32"),
    modes=("eager",),
)
case("dtypes", "arange-dtype", lambda L, x: L.arange(5).dtype, arr((1,), "f32"), modes=("eager",))
case(
    "dtypes",
    "arange-float",
    lambda L, x: L.arange(0, 1, 0.25).dtype,
    arr((1,), "f32"),
    modes=("eager",),
)
case("dtypes", "linspace", lambda L, x: L.linspace(0, 1, 5), arr((1,), "f32"), modes=("eager",))
case("dtypes", "full-int", lambda L, x: L.full((2,), 3).dtype, arr((1,), "f32"), modes=("eager",))
case(
    "dtypes", "full-bool", lambda L, x: L.full((2,), True).dtype, arr((1,), "f32"), modes=("eager",)
)
case("dtypes", "randn-dtype", lambda L, x: L.randn(2, 3).dtype, arr((1,), "f32"), modes=("eager",))
case("dtypes", "rand_like", lambda L, x: L.rand_like(x).shape, arr((2,), "f32"), modes=("eager",))
case(
    "dtypes",
    "randint_like",
    lambda L, x: L.randint_like(x, 5).dtype,
    arr((2,), "i64"),
    modes=("eager",),
)
case("dtypes", "eye", lambda L, x: L.eye(2, 3), arr((1,), "f32"), modes=("eager",))
case("dtypes", "empty_like", lambda L, x: L.empty_like(x).dtype, arr((1,), "f32"), modes=("eager",))
case(
    "dtypes",
    "as_tensor",
    lambda L, x: L.as_tensor([1, 2], dtype=L.float32),
    arr((1,), "f32"),
    modes=("eager",),
)
case(
    "dtypes",
    "from_numpy",
    lambda L, x: L.from_numpy(np.arange(3)),
    arr((1,), "f32"),
    modes=("eager",),
)
case("dtypes", "logspace", lambda L, x: L.logspace(0, 2, 3), arr((1,), "f32"), modes=("eager",))
case(
    "dtypes", "tril_indices", lambda L, x: L.tril_indices(3, 3), arr((1,), "f32"), modes=("eager",)
)

# printing
PR = [
    (n, v)
    for n, v in [
        ("f32", "[[1.0, 2.5], [3.0, 4.0]]"),
        ("big", "[1e10, 1.0]"),
        ("small", "[1e-5, 1.0]"),
        ("int", "[1, 2, 3]"),
        ("bool", "[True, False]"),
        ("0d", "3.5"),
        ("0d-int", "7"),
        ("neg", "[-1.5, 2.25]"),
        ("nan", "[float('nan'), 1.0, float('inf')]"),
        ("empty", "[]"),
        ("long", "list(range(2000))"),
        ("prec", "[0.123456789, 1.0]"),
        ("ints-as-float", "[1.0, 2.0]"),
        ("f64", "DT64"),
        ("f16", "DT16"),
        ("grad", "GRAD"),
        ("grad_fn", "GRADFN"),
        ("nested", "[[[1, 2]], [[3, 4]]]"),
    ]
]


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
    case(
        "printing",
        f"repr-{n}",
        lambda L, x, v=v: repr(_mk(L, v)),
        arr((1,), "f32"),
        modes=("eager",),
    )
    case(
        "printing", f"str-{n}", lambda L, x, v=v: str(_mk(L, v)), arr((1,), "f32"), modes=("eager",)
    )
case(
    "printing",
    "format-0d",
    lambda L, x: f"{L.tensor(3.14159):.2f}",
    arr((1,), "f32"),
    modes=("eager",),
)
case("printing", "format-int", lambda L, x: f"{L.tensor(3)}", arr((1,), "f32"), modes=("eager",))
case("printing", "dtype-repr", lambda L, x: repr(L.float32), arr((1,), "f32"), modes=("eager",))
case(
    "printing",
    "size-repr",
    lambda L, x: repr(L.zeros(2, 3).shape),
    arr((1,), "f32"),
    modes=("eager",),
)
case(
    "printing",
    "device-repr",
    lambda L, x: repr(L.zeros(2).device),
    arr((1,), "f32"),
    modes=("eager",),
)
case(
    "printing",
    "max-grad_fn",
    lambda L, x: L.tensor([[1.0, 2.0]], requires_grad=True).max(1).values.grad_fn.name(),
    arr((1,), "f32"),
    modes=("eager",),
)
case(
    "printing",
    "min-grad_fn",
    lambda L, x: L.tensor([[1.0, 2.0]], requires_grad=True).min(0)[0].grad_fn.name(),
    arr((1,), "f32"),
    modes=("eager",),
)
case(
    "printing",
    "set_printoptions",
    lambda L, x: (
        L.set_printoptions(precision=2),
        repr(L.tensor([1.23456])),
        L.set_printoptions(precision=4),
    )[1],
    arr((1,), "f32"),
    modes=("eager",),
)

# counting, order statistics (kiln/frontend/torch_data.py, torch_stats.py); "-dyn": a
# data-dependent shape (in graph mode and under kn.compile, a dim the run binds)
_TIES = np.array([[1.0, 2.0, 2.0, 3.0, 3.0, 1.0], [5.0, 5.0, 4.0, 4.0, 4.0, 5.0]], np.float32)
_NAN = np.array([[1.0, np.nan, 3.0, 2.0], [4.0, 0.5, np.nan, np.nan]], np.float32)
_COUNTS = np.array([0, 1, 1, 3, 5, 1], np.int64)
DATA = [
    (
        "unique-dyn",
        lambda L, x: L.unique(x, return_inverse=True, return_counts=True),
        arr((2, 5), "i64"),
    ),
    (
        "unique-dim-dyn",
        lambda L, x: L.unique(x > 0, dim=1, return_inverse=True),
        arr((2, 5), "i64"),
    ),
    ("unique-method-dyn", lambda L, x: x.unique(sorted=True), arr((7,), "f32")),
    (
        "unique_consecutive-dyn",
        lambda L, x: L.unique_consecutive(x, return_inverse=True, return_counts=True),
        _TIES,
    ),
    (
        "unique_consecutive-dim-dyn",
        lambda L, x: L.unique_consecutive(x, dim=1, return_counts=True),
        _TIES,
    ),
    (
        "bincount-weights-dyn",
        lambda L, x: L.bincount(x, weights=x.float() * 0.5, minlength=8),
        _COUNTS,
    ),
    ("bincount-neg", lambda L, x: L.bincount(x - 1), _COUNTS),
    ("argwhere-0d-dyn", lambda L, x: L.argwhere(x), np.asarray(3.0, np.float32)),
    (
        "nonzero_static-pad",
        lambda L, x: L.nonzero_static(x > 0, size=9, fill_value=-2),
        arr((2, 3), "f32"),
    ),
    ("nonzero_static-cut", lambda L, x: L.nonzero_static(x, size=2), arr((2, 3), "i64")),
    ("histc-range", lambda L, x: L.histc(x, bins=5, min=-1.0, max=1.0), arr((3, 4), "f32")),
    ("histc-default", lambda L, x: x.histc(7), arr((3, 4), "f32")),
    ("histc-bad", lambda L, x: L.histc(x, bins=3, min=2, max=1), arr((3,), "f32")),
    ("histogram-bins", lambda L, x: L.histogram(x, 4, range=(-2.0, 2.0)), arr((3, 4), "f32")),
    (
        "histogram-edges",
        lambda L, x: L.histogram(x, L.tensor([-1.0, 0.0, 0.5, 2.0]), weight=x.abs(), density=True),
        arr((3, 4), "f32"),
    ),
    (
        "masked_scatter-bcast",
        lambda L, x: x.masked_scatter(L.tensor([True, False, True]), x * 10),
        arr((2, 3), "f32"),
    ),
    ("masked_scatter_", lambda L, x: x.clone().masked_scatter_(x > 0, -x), arr((2, 3), "f32")),
    (
        "put-accumulate",
        lambda L, x: x.put(L.tensor([0, -1, 0]), L.tensor([1.0, 2.0, 3.0]), accumulate=True),
        arr((2, 3), "f32"),
    ),
    ("put_", lambda L, x: x.clone().put_(L.tensor([1, 2]), L.tensor([7, 8])), arr((2, 3), "i64")),
    ("put-oob", lambda L, x: x.put(L.tensor([6]), L.tensor([1.0])), arr((2, 3), "f32")),
    ("mode-ties", lambda L, x: L.mode(x, 1), _TIES),
    ("mode-keepdim", lambda L, x: x.mode(0, keepdim=True), _TIES),
    ("mode-int", lambda L, x: L.mode(x), arr((3, 8), "i64")),
    ("nanmedian-nan", lambda L, x: L.nanmedian(x, 1), _NAN),
    ("nanmedian-all", lambda L, x: L.nanmedian(x), _NAN),
    ("median-ties", lambda L, x: L.median(x, 1), _TIES),
    ("quantile-scalar", lambda L, x: L.quantile(x, 0.3), arr((3, 4), "f32")),
    (
        "quantile-tensor-dim",
        lambda L, x: L.quantile(x, L.tensor([0.1, 0.5, 1.0]), dim=1, keepdim=True),
        arr((3, 4), "f32"),
    ),
    ("quantile-nan", lambda L, x: L.quantile(x, 0.5, dim=1), _NAN),
    ("quantile-f64", lambda L, x: x.quantile(0.75, dim=0), arr((5, 2), "f64")),
    ("quantile-int", lambda L, x: L.quantile(x, 0.5), arr((3,), "i64")),
    ("quantile-bad-q", lambda L, x: L.quantile(x, 1.5), arr((3,), "f32")),
    ("nanquantile", lambda L, x: L.nanquantile(x, L.tensor([0.25, 0.6]), dim=-1), _NAN),
    ("nanquantile-all", lambda L, x: L.nanquantile(x, 0.5), _NAN),
]
for _mode in ("lower", "higher", "nearest", "midpoint"):
    DATA.append(
        (
            f"quantile-{_mode}",
            lambda L, x, i=_mode: L.quantile(
                x, L.tensor([0.125, 0.4, 0.5]), dim=0, interpolation=i
            ),
            arr((5, 3), "f32"),
        )
    )
for n, f, x in DATA:
    case("data", n, f, x)

# issue 11's names built in kiln/frontend/torch_misc*.py and kiln/nn/functional_misc.py, beyond
# the rows above (values in every mode where the result is a tensor)
_ROWS = np.array([[3, 0, -1, 1, 1], [4, 4, 2, -1, 0], [0, 1, 2, 3, 4], [-1, 0, 1, 2, 3]])
MISC = [
    ("triu_indices", lambda L, x: L.triu_indices(3, 4, -1), arr((1,), "f32")),
    ("tril_indices-int32", lambda L, x: L.tril_indices(4, 2, 1, dtype=L.int32), arr((1,), "f32")),
    ("logspace-base", lambda L, x: L.logspace(-1, 2, 4, base=2.0), arr((1,), "f32")),
    ("finfo-default", lambda L, x: L.finfo().tiny, arr((1,), "f32")),
    ("finfo-bfloat16", lambda L, x: L.finfo(L.bfloat16).resolution, arr((1,), "f32")),
    ("iinfo-uint8", lambda L, x: L.iinfo(L.uint8).min, arr((1,), "f32")),
    ("iinfo-bool", lambda L, x: L.iinfo(L.bool), arr((1,), "f32")),
    ("can_cast-bool", lambda L, x: L.can_cast(L.int8, L.bool), arr((1,), "f32")),
    ("promote_types-u8-i8", lambda L, x: L.promote_types(L.uint8, L.int8), arr((1,), "f32")),
    ("is_tensor-list", lambda L, x: L.is_tensor([1]), arr((1,), "f32")),
    ("numel-list", lambda L, x: L.numel([1]), arr((1,), "f32")),
    ("randn_like", lambda L, x: L.randn_like(x).dtype, arr((2,), "f32")),
    ("as_tensor-int", lambda L, x: L.as_tensor([1, 2]), arr((1,), "f32")),
    ("combinations-r3-replace", lambda L, x: L.combinations(x, 3, True), arr((3,), "i64")),
    ("combinations-r0", lambda L, x: L.combinations(x, 0), arr((3,), "f32")),
    ("frexp-f64", lambda L, x: x.frexp(), arr((2, 3), "f64")),
    ("frexp-f16", lambda L, x: L.frexp(x), arr((2, 3), "f16")),
    ("renorm-inf", lambda L, x: L.renorm(x, float("inf"), 1, 0.5), arr((3, 4), "f32")),
    ("renorm-1d", lambda L, x: x.renorm(2, 0, 1.0), arr((3,), "f32")),
    ("vander-increasing", lambda L, x: L.vander(x, 4, True), arr((3,), "f32")),
    ("vander-2d", lambda L, x: L.vander(x), arr((2, 3), "f32")),
    ("nextafter-f64", lambda L, x: L.nextafter(x, -x), arr((2, 3), "f64")),
    ("int-pow-0d", lambda L, x: x ** L.tensor(-1), arr((2, 3), "i64")),
    ("int-pow-neg-method", lambda L, x: x.pow(-2), arr((2, 3), "i64")),
    ("arange-sign", lambda L, x: L.arange(5, 0, 1), arr((1,), "f32")),
    ("to-unknown", lambda L, x: x.to("npu"), arr((1,), "f32")),
    (
        "feature_alpha_dropout-eval",
        lambda L, x: L.nn.functional.feature_alpha_dropout(x),
        arr((2, 3, 4), "f32"),
    ),
    (
        "alpha_dropout-p1",
        lambda L, x: L.nn.functional.alpha_dropout(x, 1.0, True),
        arr((2, 3), "f32"),
    ),
    (
        "bilinear-bias",
        lambda L, x: L.nn.functional.bilinear(x, x[:, :2], L.ones(2, 3, 2), L.ones(2)),
        arr((4, 3), "f32"),
    ),
    ("lp_pool2d", lambda L, x: L.nn.functional.lp_pool2d(x.abs(), 2, 2), arr((1, 4, 5), "f32")),
    (
        "lp_pool3d-inf",
        lambda L, x: L.nn.functional.lp_pool3d(x, float("inf"), 2),
        arr((1, 2, 4, 4), "f32"),
    ),
    (
        "multilabel_margin_loss-none",
        lambda L, x: L.nn.functional.multilabel_margin_loss(x, L.tensor(_ROWS), reduction="none"),
        arr((4, 5), "f32"),
    ),
    (
        "multilabel_margin_loss-1d",
        lambda L, x: L.nn.functional.multilabel_margin_loss(x[0], L.tensor(_ROWS[1])),
        arr((4, 5), "f32"),
    ),
    (
        "set_printoptions-sci",
        lambda L, x: (
            L.set_printoptions(sci_mode=True),
            repr(L.tensor([1.5, 2.0])),
            L.set_printoptions(profile="default"),
        )[1],
        arr((1,), "f32"),
    ),
    (
        "set_printoptions-short",
        lambda L, x: (
            L.set_printoptions(profile="short"),
            repr(L.arange(2000.0)),
            L.set_printoptions(profile="default"),
        )[1],
        arr((1,), "f32"),
    ),
]
_FACTORIES = {"triu_indices", "tril_indices-int32", "logspace-base", "as_tensor-int"}
for n, f, x in MISC:  # a factory's result is no graph value: eager only, as "dtypes" above
    case("misc", n, f, x, modes=_FEW if n in _FACTORIES else _ALL)
