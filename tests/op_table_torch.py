"""Op-table rows for the primitives behind PyTorch's functions (kiln/ops/scan.py, sort.py,
index.py, elementwise_torch.py, linalg.py's inv/det/solve) and for the composites built on
them or on older primitives (rows labelled by the function, under the primitive they use).

References: NumPy's functions in float64 where NumPy has the same function; Python loops that
spell out PyTorch's documented definition where it has none (scans' tie rules, sort order
with NaN, scatter); the expected values of a few rows are written by hand from the docs.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from op_case import OpCase

import kiln as kn
from kiln.ops.core import apply

FLOATS = ("float32", "float64")


def normal(*shapes, kind="normal", transpose=False):
    """`make_args`: one array per shape; kinds as op_table's (normal, unit, positive, above1,
    distinct, small ints, bool); `transpose`: the first array is a transposed view."""

    def make(rng, dtype):
        out = []
        for k, shape in enumerate(shapes):
            if transpose and k == 0:
                out.append(_values(rng, shape[::-1], dtype, kind).T)
            else:
                out.append(_values(rng, shape, dtype, kind))
        return out

    return make


def _values(rng, shape, dtype, kind):
    dtype = np.dtype(dtype)
    if kind == "distinct":
        n = math.prod(shape)
        return ((rng.permutation(n) - n // 2) / 4).reshape(shape).astype(dtype)
    if dtype.kind in "iu" or kind == "small":
        return rng.integers(-3, 4, shape).astype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    table = {
        "normal": lambda: rng.standard_normal(shape),
        "unit": lambda: rng.uniform(-0.9, 0.9, shape),
        "positive": lambda: rng.uniform(0.2, 3.0, shape),
        "above1": lambda: rng.uniform(1.1, 3.0, shape),
    }
    return np.asarray(table[kind](), dtype)


def given(*arrays, index_dtypes=()):
    """`make_args`: fixed arrays in the case dtype; those at `index_dtypes` positions keep int64."""

    def make(rng, dtype):
        return [np.array(a, np.int64 if k in index_dtypes else dtype) for k, a in enumerate(arrays)]

    return make


def then_index(make_x, *indices):
    """`make_args`: random arrays, then fixed int64 index arrays."""

    def make(rng, dtype):
        return [*make_x(rng, dtype), *(np.asarray(i, np.int64) for i in indices)]

    return make


def in64(f):
    """A reference computed in float64 and returned in the input's float dtype."""
    return lambda x: np.asarray(f(x.astype(np.float64))).astype(x.dtype)


CASES: list[OpCase] = []


def rows(*cases):
    CASES.extend(cases)


# -- scans -----------------------------------------------------------------------------------------


def _acc_dtype(x):
    # PyTorch's cumsum/cumprod: integers and bools accumulate in int64
    return x.dtype if x.dtype.kind == "f" else np.dtype(np.int64)


def ref_cumsum(axis, reverse=False):
    def ref(x):
        x1 = x.reshape(1) if x.ndim == 0 else x
        if reverse:
            out = np.flip(np.cumsum(np.flip(x1, axis), axis, dtype=_acc_dtype(x)), axis)
        else:
            out = np.cumsum(x1, axis, dtype=_acc_dtype(x))
        return out.reshape(x.shape)

    return ref


def ref_cumprod(axis):
    return lambda x: np.cumprod(x.reshape(x.shape or (1,)), axis, dtype=_acc_dtype(x)).reshape(
        x.shape
    )


def ref_running_index(better):
    """PyTorch's cummax/cummin indices, by a loop: the latest index among ties; a NaN wins and
    stays until the next NaN."""

    def ref(x, axis):
        moved = np.moveaxis(x.reshape(x.shape or (1,)), axis, -1)
        out = np.zeros(moved.shape, np.int64)
        for pos in itertools.product(*map(range, moved.shape[:-1])):
            best, where = None, 0
            for i, v in enumerate(moved[pos]):
                if best is None or np.isnan(v) or (not np.isnan(best) and better(v, best)):
                    best, where = v, i
                out[pos + (i,)] = where
        return np.moveaxis(out, -1, axis).reshape(x.shape)

    return ref


def cum_rows(op, fn, ref, dtypes=FLOATS):
    rows(
        OpCase(op, "basic", lambda x: fn(x, 1), normal((3, 5)), ref(1), dtypes),
        OpCase(op, "axis0", lambda x: fn(x, 0), normal((3, 5)), ref(0), dtypes),
        OpCase(op, "neg-dim", lambda x: fn(x, -1), normal((2, 3, 4)), ref(2), dtypes),
        OpCase(op, "0d", lambda x: fn(x, 0), normal(()), ref(0), dtypes),
        OpCase(op, "empty", lambda x: fn(x, 1), normal((2, 0)), ref(1), dtypes),
        OpCase(
            op, "transposed", lambda x: fn(x, 1), normal((3, 4), transpose=True), ref(1), dtypes
        ),  # fmt: skip
    )


cum_rows("cumsum", kn.cumsum, ref_cumsum)
cum_rows("cumprod", kn.cumprod, ref_cumprod)
rows(
    OpCase("cumsum", "int", lambda x: kn.cumsum(x, 0), normal((4, 2)), ref_cumsum(0),
           ("int32", "int64", "bool", "uint8")),
    OpCase("cumsum", "reverse", lambda x: apply("cumsum", x, axis=1, reverse=True),
           normal((3, 4)), ref_cumsum(1, reverse=True)),
    OpCase("cumsum", "dtype-arg", lambda x: kn.cumsum(x, 0, dtype=kn.float64), normal((5,)),
           lambda x: np.cumsum(x, dtype=np.float64), ("float32", "int32")),
    OpCase("cumprod", "int", lambda x: kn.cumprod(x, 1), normal((2, 4)), ref_cumprod(1),
           ("int8", "int64")),
    # zeros: the gradient rows check PyTorch's rule at the first and later zeros
    OpCase("cumprod", "zeros", lambda x: kn.cumprod(x, 1),
           given([[1.5, 0.0, 2.0, 3.0, 0.0, 2.0], [0.0, 2.0, -1.0, 0.5, 1.0, 2.0]]),
           ref_cumprod(1)),
    OpCase("logcumsumexp", "basic", lambda x: kn.logcumsumexp(x, 1), normal((3, 5)),
           in64(lambda x: np.log(np.cumsum(np.exp(x), 1)))),
    OpCase("logcumsumexp", "neg-dim", lambda x: kn.logcumsumexp(x, -2), normal((2, 4, 3)),
           in64(lambda x: np.log(np.cumsum(np.exp(x), 1)))),
    OpCase("logcumsumexp", "reverse", lambda x: apply("logcumsumexp", x, axis=0, reverse=True),
           normal((4, 3)), in64(lambda x: np.log(np.cumsum(np.exp(x)[::-1], 0)[::-1]))),
    # exp(1000) overflows: the running log-sum, by hand: log(e^-1000 + 1) = 0 (to float
    # precision), then log(1 + e^1000) = 1000, log(e^1000 + e^3) = 1000
    OpCase("logcumsumexp", "wide", lambda x: kn.logcumsumexp(x, 0),
           given([-1000.0, 0.0, 1000.0, 3.0]), lambda x: np.array([-1000, 0, 1000, 1000], x.dtype)),
    OpCase("logcumsumexp", "0d", lambda x: kn.logcumsumexp(x, 0), normal(()), lambda x: x),
    OpCase("cummax_index", "cummax", lambda x: kn.cummax(x, 1), normal((3, 5), kind="small"),
           lambda x: (np.maximum.accumulate(x, 1), ref_running_index(np.greater_equal)(x, 1)),
           ("float32", "float64", "int32")),
    OpCase("cummax_index", "nan", lambda x: kn.cummax(x, 0).indices,
           given([1.0, 3.0, 3.0, 2.0, np.nan, 5.0, np.nan, 1.0]),
           lambda x: np.array([0, 1, 2, 2, 4, 4, 6, 6])),  # PyTorch's documented NaN rule
    OpCase("cummax_index", "0d", lambda x: kn.cummax(x, 0), normal(()), lambda x: (x, np.int64(0))),
    OpCase("cummax_index", "empty", lambda y: kn.cummax(y, 1), normal((2, 0)),
           lambda y: (y, np.zeros((2, 0), np.int64))),
    OpCase("cummin_index", "cummin", lambda x: kn.cummin(x, -1), normal((2, 3, 4), kind="small"),
           lambda x: (np.minimum.accumulate(x, 2), ref_running_index(np.less_equal)(x, 2)),
           ("float32", "float64", "int64", "bool")),
    OpCase("cummin_index", "distinct-axis0", lambda x: kn.cummin(x, 0),
           normal((5, 3), kind="distinct"),
           lambda x: (np.minimum.accumulate(x, 0), ref_running_index(np.less_equal)(x, 0))),
)  # fmt: skip

# -- sorting -------------------------------------------------------------------------------------


def ref_argsort(axis, descending=False):
    """PyTorch's stable order by a Python sort: NaN is the greatest value; equal values keep
    their order in either direction."""

    def key(v):
        return (1, 0.0) if np.isnan(v) else (0, float(v))

    def one(values):
        order = sorted(range(len(values)), key=lambda i: key(values[i]), reverse=descending)
        if descending:  # reverse=True reverses ties too: restore their original order
            order = sorted(order, key=lambda i: (tuple(-k for k in key(values[i])), i))
        return np.array(order, np.int64)

    def ref(x):
        x1 = x.reshape(x.shape or (1,)).astype(np.float64)
        out = np.apply_along_axis(one, axis, x1) if x1.size else np.zeros(x1.shape, np.int64)
        return out.reshape(x.shape)

    return ref


def ref_sort(axis, descending=False):
    def ref(x):
        idx = ref_argsort(axis, descending)(x)
        if x.ndim == 0:
            return x, idx
        return np.take_along_axis(x, idx, axis), idx

    return ref


def ref_topk(k, axis, largest=True):
    def ref(x):
        idx = ref_argsort(axis, largest)(x)
        idx = np.take(idx, np.arange(k), axis)
        return np.take_along_axis(x, idx, axis), idx

    return ref


rows(
    OpCase("argsort", "basic", lambda x: kn.argsort(x, 1), normal((3, 5), kind="small"),
           ref_argsort(1), ("float32", "float64", "int32", "int64")),
    OpCase("argsort", "descending", lambda x: kn.argsort(x, 0, descending=True),
           normal((5, 3), kind="small"), ref_argsort(0, True), ("float32", "int64", "bool")),
    OpCase("argsort", "nan", lambda x: kn.argsort(x, descending=True),
           given([3.0, np.nan, 1.0, 3.0, -np.inf, np.nan]), ref_argsort(0, True)),
    OpCase("argsort", "0d", kn.argsort, normal(()), lambda x: np.int64(0)),
    OpCase("argsort", "empty", lambda y: kn.argsort(y, 0), normal((0, 2)),
           lambda y: np.zeros((0, 2), np.int64)),
    OpCase("sort", "sort", lambda x: kn.sort(x, -1), normal((2, 3, 5), kind="distinct"),
           ref_sort(2)),
    OpCase("sort", "sort-desc-transposed", lambda x: kn.sort(x, 0, descending=True),
           normal((4, 3), kind="distinct", transpose=True), ref_sort(0, True)),
    OpCase("sort", "sort-ties-int", lambda x: kn.sort(x, stable=True),
           normal((2, 6), kind="small"), ref_sort(1), ("int32", "int64")),
    OpCase("topk", "topk", lambda x: kn.topk(x, 2), normal((3, 5), kind="distinct"),
           ref_topk(2, 1)),
    OpCase("topk", "topk-smallest-neg-dim", lambda x: kn.topk(x, 3, -1, largest=False),
           normal((2, 5), kind="distinct"), ref_topk(3, 1, False)),
    # values and indices of max/min along a dim, NumPy's max/argmax (distinct values: no ties)
    OpCase("max_dim", "dim", lambda x: kn.max(x, 1), normal((3, 4), kind="distinct"),
           lambda x: (x.max(1), x.argmax(1))),
    OpCase("max_dim", "keepdim-neg", lambda x: kn.max(x, -1, keepdim=True),
           normal((2, 3, 4), kind="distinct"),
           lambda x: (x.max(-1, keepdims=True), x.argmax(-1)[..., None])),
    OpCase("min_dim", "dim0", lambda x: kn.min(x, 0), normal((3, 4), kind="distinct"),
           lambda x: (x.min(0), x.argmin(0))),
)  # fmt: skip

# -- scatter -------------------------------------------------------------------------------------

_REDUCERS = {
    "sum": lambda vals: sum(vals),
    "prod": lambda vals: math.prod(vals),
    "amax": max,
    "amin": min,
}


def ref_scatter(axis, reduce="none", include_self=True):
    """PyTorch's definition, element by element: out[..., idx[p], ...] (axis) gets src[p] for
    every position p of the index; reductions combine all values landing on one element."""

    def ref(x, idx, src):
        out = x.copy()
        landing: dict = {}
        for p in itertools.product(*map(range, idx.shape)):
            target = p[:axis] + (int(idx[p]),) + p[axis + 1 :]
            landing.setdefault(target, []).append(src[p])
        for target, vals in landing.items():
            if reduce == "none":
                out[target] = vals[-1]
                continue
            pool = ([x[target]] if include_self else []) + vals
            if reduce == "mean":
                total = sum(pool)
                out[target] = total / len(pool) if x.dtype.kind == "f" else total // len(pool)
            else:
                out[target] = _REDUCERS[reduce](pool)
        return out

    return ref


def x_idx_src(x_shape, idx, src_shape, kind="distinct"):
    """`make_args`: a random input, a fixed int64 index, a random src."""

    def make(rng, dtype):
        x, src = normal(x_shape, src_shape, kind=kind)(rng, dtype)
        return [x, np.asarray(idx, np.int64), src]

    return make


def scatter_row(label, x_shape, idx, src_shape, axis, reduce="none", include_self=True,
                dtypes=FLOATS, kind="distinct"):  # fmt: skip
    def fn(x, i, s):
        if reduce == "none":
            return kn.scatter(x, axis, i, s)
        return kn.scatter_reduce(x, axis, i, s, reduce, include_self=include_self)

    return OpCase(
        "scatter", label, fn, x_idx_src(x_shape, idx, src_shape, kind),
        lambda x, i, s: ref_scatter(axis % x.ndim, reduce, include_self)(x, i, s), dtypes,
    )  # fmt: skip


IDX_2x3 = [[0, 1, 0], [2, 0, 1]]
rows(
    scatter_row("basic", (3, 4), IDX_2x3, (2, 3), 0, dtypes=("float32", "float64", "int64")),
    scatter_row("neg-dim-src-larger", (2, 5), [[4, 0], [1, 3]], (2, 3), -1),
    scatter_row("empty-index", (3, 4), np.zeros((0, 3), np.int64), (1, 3), 0),
    scatter_row("add", (3, 4), IDX_2x3, (2, 3), 0, "sum", dtypes=("float32", "float64", "int32")),
    scatter_row("add-repeats-axis1", (2, 3), [[0, 0, 2], [1, 1, 1]], (2, 3), 1, "sum"),
    scatter_row("sum-exclude", (3, 4), IDX_2x3, (2, 3), 0, "sum", False),
    scatter_row("prod", (3, 4), IDX_2x3, (2, 3), 0, "prod", dtypes=("float64", "int64")),
    scatter_row("prod-exclude", (3, 4), IDX_2x3, (2, 3), 0, "prod", False, ("float64",)),
    scatter_row("mean", (3, 4), [[0, 1, 0], [0, 0, 1]], (2, 3), 0, "mean"),
    scatter_row("mean-exclude", (3, 4), [[0, 1, 0], [0, 0, 1]], (2, 3), 0, "mean", False),
    # PyTorch's integer mean rounds down (-3 / 2 gives -2)
    scatter_row("mean-int", (3, 4), [[0, 1, 0], [0, 0, 1]], (2, 3), 0, "mean", False,
                ("int64",), "small"),
    scatter_row("amax", (3, 4), [[0, 1, 0], [0, 0, 1]], (2, 3), 0, "amax"),
    scatter_row("amax-exclude", (3, 4), [[0, 1, 0], [0, 0, 1]], (2, 3), 0, "amax", False),
    scatter_row("amin-int", (3, 4), IDX_2x3, (2, 3), 0, "amin", dtypes=("int32",)),
    scatter_row("amin-exclude-axis1", (2, 4), [[3, 3], [0, 3]], (2, 2), 1, "amin", False),
)  # fmt: skip
rows(
    OpCase("scatter", "scatter_add", lambda x, i, s: kn.scatter_add(x, 1, i, s),
           x_idx_src((2, 4), [[3, 3], [0, 1]], (2, 2), "normal"),
           ref_scatter(1, "sum")),
    OpCase("scatter", "value", lambda x, i: kn.scatter(x, 0, i, value=2.5),
           then_index(normal((3, 2)), [[2, 0]]),
           lambda x, i: ref_scatter(0)(x, i, np.full(i.shape, 2.5, x.dtype))),
)  # fmt: skip

# -- elementwise ---------------------------------------------------------------------------------

UNARY = [
    ("tan", "unit", np.tan), ("asin", "unit", np.arcsin), ("acos", "unit", np.arccos),
    ("atan", "normal", np.arctan), ("sinh", "normal", np.sinh), ("cosh", "normal", np.cosh),
    ("asinh", "normal", np.arcsinh), ("acosh", "above1", np.arccosh),
    ("atanh", "unit", np.arctanh), ("exp2", "normal", np.exp2),
    ("log2", "positive", np.log2), ("log10", "positive", np.log10),
]  # fmt: skip
for name, kind, ufunc in UNARY:
    fn = getattr(kn, name)
    rows(
        OpCase(name, "basic", fn, normal((3, 5), kind=kind), in64(ufunc)),
        OpCase(name, "0d", fn, normal((), kind=kind), in64(ufunc)),
        OpCase(name, "empty", fn, normal((0, 3), kind=kind), in64(ufunc)),
        OpCase(name, "transposed", fn, normal((2, 3, 4), kind=kind, transpose=True), in64(ufunc)),
    )
rows(
    # PyTorch: integers give the default float dtype (float32)
    OpCase("exp2", "int", kn.exp2, given([0, 3, -1]), lambda x: np.exp2(x).astype(np.float32),
           ("int32", "int64")),
    OpCase("log10", "int", kn.log10, given([1, 10, 100]),
           lambda x: np.array([0, 1, 2], np.float32), ("int64", "uint8")),
    OpCase("tan", "bool", kn.tan, given([True, False]),
           lambda x: np.tan(x.astype(np.float32)), ("bool",)),
    OpCase("atan2", "basic", kn.atan2, normal((3, 5), (3, 5)),
           lambda a, b: np.arctan2(a.astype(np.float64), b).astype(a.dtype)),
    OpCase("atan2", "broadcast", kn.atan2, normal((2, 1, 4), (3, 1)),
           lambda a, b: np.arctan2(a.astype(np.float64), b).astype(a.dtype)),
    OpCase("atan2", "int", kn.atan2, given([1, -1, 0], [0, -2, 3]),
           lambda a, b: np.arctan2(a, b).astype(np.float32), ("int64",)),
    OpCase("hypot", "basic", kn.hypot, normal((3, 5), (3, 5)), np.hypot),
    OpCase("hypot", "broadcast", kn.hypot, normal((2, 1, 4), (3, 1)), np.hypot),
    # values only (float32): where the squares overflow or underflow
    OpCase("hypot", "extremes", kn.hypot, given([3e30, 3e-30, 0.0], [4e30, 4e-30, -2.0]),
           lambda a, b: np.array([5e30, 5e-30, 2.0], a.dtype), ("float32",)),
    OpCase("fmod", "basic", kn.fmod, normal((3, 5), (3, 5)), np.fmod),
    OpCase("fmod", "int-scalar", lambda a: kn.fmod(a, 3), given([-7, -3, 0, 5, 7]),
           lambda a: np.array([-1, 0, 0, 2, 1], a.dtype), ("int32", "int64")),  # C's %
    OpCase("fmod", "broadcast", kn.fmod, normal((2, 3), (3,), kind="positive"), np.fmod),
    OpCase("copysign", "basic", kn.copysign, normal((3, 5), (3, 5)), np.copysign),
    # values only (float32): at b = 0 the sign flips, there is no derivative to check
    OpCase("copysign", "signed-zero", kn.copysign, given([1.0, 2.0, -3.0], [-0.0, 0.0, 1.0]),
           lambda a, b: np.array([-1.0, 2.0, 3.0], a.dtype), ("float32",)),
    OpCase("copysign", "int", lambda a: kn.copysign(a, -1), given([1, -2, 0]),
           lambda a: np.array([-1.0, -2.0, -0.0], np.float32), ("int64",)),
)  # fmt: skip

# -- linear algebra ------------------------------------------------------------------------------


def well_conditioned(*shapes):
    """Square matrices near the identity (invertible, not ill-conditioned), then others."""

    def make(rng, dtype):
        first = rng.standard_normal(shapes[0]) * 0.3 + np.eye(shapes[0][-1]) * 2
        rest = [rng.standard_normal(s) for s in shapes[1:]]
        return [np.asarray(a, dtype) for a in (first, *rest)]

    return make


rows(
    OpCase("inv", "basic", kn.linalg.inv, well_conditioned((3, 3)),
           in64(np.linalg.inv), rtol=1e-5, atol=1e-5),
    OpCase("inv", "batch", kn.inverse, well_conditioned((2, 4, 4)),
           in64(np.linalg.inv), rtol=1e-5, atol=1e-5),
    OpCase("inv", "empty-batch", kn.linalg.inv, well_conditioned((0, 2, 2)), in64(np.linalg.inv)),
    OpCase("det", "basic", kn.linalg.det, well_conditioned((3, 3)),
           in64(np.linalg.det), rtol=1e-5, atol=1e-5),
    OpCase("det", "batch", kn.det, well_conditioned((2, 3, 4, 4)),
           in64(np.linalg.det), rtol=1e-5, atol=1e-5),
    OpCase("det", "hand", kn.linalg.det, given([[2.0, 1.0], [1.0, 3.0]]),
           lambda a: np.array(5.0, a.dtype)),  # 2 * 3 - 1 * 1
    # det's gradient: det(A) A^-T where A is invertible, [[d, -c], [-b, a]] for a 2x2 by hand
    # (singular matrices: tests/test_det_cofactor_grad.py, as cofactor's own gradient needs inv)
    OpCase("cofactor", "basic", lambda a: apply("cofactor", a), well_conditioned((2, 3, 3)),
           in64(lambda a: np.linalg.det(a)[..., None, None] * np.linalg.inv(a).swapaxes(-1, -2)),
           rtol=1e-5, atol=1e-5),
    OpCase("cofactor", "hand", lambda a: apply("cofactor", a), given([[2.0, 1.0], [1.0, 3.0]]),
           lambda a: np.array([[3.0, -1.0], [-1.0, 2.0]], a.dtype), rtol=1e-5, atol=1e-5),
    # cholesky reads one triangle: the rows factor a symmetrized input (S = (A + Aᵀ) / 2, near
    # 2I), so finite differences see the symmetric gradient PyTorch's rule gives
    OpCase("cholesky", "sym", lambda a: kn.linalg.cholesky((a + a.mT) * 0.5),
           well_conditioned((3, 3)),
           lambda a: np.linalg.cholesky((a.astype(np.float64) + a.T) / 2).astype(a.dtype),
           rtol=1e-5, atol=1e-5),
    OpCase("cholesky", "batch-upper", lambda a: kn.linalg.cholesky((a + a.mT) * 0.5, upper=True),
           well_conditioned((2, 4, 4)),
           lambda a: np.swapaxes(np.linalg.cholesky(
               (a.astype(np.float64) + np.swapaxes(a, -1, -2)) / 2), -1, -2).astype(a.dtype),
           rtol=1e-5, atol=1e-5),
    OpCase("cholesky", "hand", lambda a: kn.linalg.cholesky((a + a.mT) * 0.5),
           given([[4.0, 2.0], [2.0, 5.0]]),
           lambda a: np.array([[2.0, 0.0], [1.0, 2.0]], a.dtype)),  # 2*2 = 4, 1*2 = 2, 1+4 = 5
    OpCase("logabsdet", "basic", lambda a: kn.linalg.slogdet(a).logabsdet,
           well_conditioned((3, 3)),
           lambda a: np.linalg.slogdet(a.astype(np.float64))[1].astype(a.dtype),
           rtol=1e-5, atol=1e-5),
    OpCase("logabsdet", "batch", lambda a: kn.linalg.slogdet(a)[1], well_conditioned((2, 3, 4, 4)),
           lambda a: np.linalg.slogdet(a.astype(np.float64))[1].astype(a.dtype),
           rtol=1e-5, atol=1e-5),
    OpCase("slogdet_sign", "hand", lambda a: kn.linalg.slogdet(a).sign,
           given([[2.0, 1.0], [1.0, -3.0]]), lambda a: np.array(-1.0, a.dtype)),  # det -7
    OpCase("solve", "matrix", kn.linalg.solve, well_conditioned((3, 3), (3, 2)),
           lambda a, b: np.linalg.solve(a.astype(np.float64), b).astype(a.dtype),
           rtol=1e-5, atol=1e-5),
    OpCase("solve", "vector-batch", kn.linalg.solve, well_conditioned((2, 3, 3), (2, 3)),
           lambda a, b: np.linalg.solve(a.astype(np.float64), b[..., None])[..., 0].astype(a.dtype),
           rtol=1e-5, atol=1e-5),
    OpCase("solve", "broadcast-batch", kn.linalg.solve, well_conditioned((3, 3), (2, 3, 4)),
           lambda a, b: np.linalg.solve(a.astype(np.float64), b).astype(a.dtype),
           rtol=1e-5, atol=1e-5),
    OpCase("solve", "right", lambda a, b: kn.linalg.solve(a, b, left=False),
           well_conditioned((3, 3), (2, 3)),
           lambda a, b: (b.astype(np.float64) @ np.linalg.inv(a)).astype(a.dtype),
           rtol=1e-5, atol=1e-5),
)  # fmt: skip

# -- composites: rows under the primitive each mainly uses ---------------------------------------


def _ref_diag(v, k):
    out = np.zeros((len(v) + abs(k),) * 2, v.dtype)
    for i, value in enumerate(v):  # PyTorch's diag: v on the k-th diagonal
        out[i + max(-k, 0), i + max(k, 0)] = value
    return out


def _ref_unfold(x, dim, size, step):
    """PyTorch's unfold by its definition: windows x[.., i*step : i*step+size, ..] along `dim`,
    stacked at `dim`, each window's elements as a new last dim."""
    n = x.shape[dim]
    windows = [np.take(x, range(s, s + size), dim) for s in range(0, n - size + 1, step)]
    return np.moveaxis(np.stack(windows, dim), dim + 1, -1)


def _ref_div_trunc(a, b):
    q = np.trunc(a / b)  # C's division: toward zero
    return q.astype(a.dtype) if a.dtype.kind == "f" else q.astype(np.result_type(a, b))


def _ref_isclose(a, b, rtol=1e-5, atol=1e-8):
    # PyTorch's documented rule: |a - b| <= atol + rtol * |b|; equal infinities are close
    with np.errstate(invalid="ignore"):
        return (a == b) | (np.isfinite(a - b) & (np.abs(a - b) <= atol + rtol * np.abs(b)))


def _ref_gather(x, idx, dim):
    """torch.gather's definition: out[i][j][k] = x[i][idx[i][j][k]][k] for dim=1."""
    out = np.empty(idx.shape, x.dtype)
    for p in itertools.product(*map(range, idx.shape)):
        out[p] = x[p[:dim] + (idx[p],) + p[dim + 1 :]]
    return out


rows(
    OpCase("concat", "cat-neg-dim", lambda a, b: kn.cat([a, b], dim=-1), normal((2, 3), (2, 5)),
           lambda a, b: np.concatenate([a, b], -1)),
    OpCase("concat", "stack-dim", lambda a, b: kn.stack([a, b], dim=-1), normal((2, 3), (2, 3)),
           lambda a, b: np.stack([a, b], -1)),
    OpCase("concat", "roll", lambda x: kn.roll(x, (1, -2), (1, 2)), normal((2, 3, 5)),
           lambda x: np.roll(x, (1, -2), (1, 2))),
    OpCase("concat", "roll-flat", lambda x: kn.roll(x, 4), normal((1, 3, 5)),
           lambda x: np.roll(x, 4)),
    OpCase("index", "flip", lambda x: kn.flip(x, (0, -1)), normal((2, 3, 5)),
           lambda x: np.flip(x, (0, 2))),
    OpCase("index", "diagonal", lambda x: kn.diagonal(x, 1, 1, 2), normal((2, 3, 5)),
           lambda x: np.diagonal(x, 1, 1, 2)),
    # offset -1 of (dim -1, dim 1) is +1 of (1, 2); dims out of order: a strided view (gather)
    OpCase("gather", "diagonal-neg-offset", lambda x: kn.diagonal(x, -1, -1, 1), normal((2, 4, 3)),
           lambda x: np.diagonal(x, 1, 1, 2)),
    OpCase("index", "diag-of-matrix", lambda x: kn.diag(x[0], -2), normal((2, 4, 3)),
           lambda x: np.diag(x[0], -2)),
    OpCase("split", "split-size", lambda x: kn.split(x, 2, dim=-1), normal((2, 5)),
           lambda x: np.split(x, [2, 4], -1)),  # PyTorch: sizes 2, 2, 1
    OpCase("split", "chunk", lambda x: kn.chunk(x, 3, 1), normal((2, 7)),
           lambda x: np.split(x, [3, 6], 1)),  # ceil(7 / 3) = 3: sizes 3, 3, 1
    OpCase("topk", "k-1", lambda x: kn.topk(x, 1, -1).values, normal((2, 4)),
           lambda x: np.sort(x, -1)[:, -1:]),
    OpCase("index_scatter", "diag", lambda v: kn.diag(v[0], 1), normal((1, 3)),
           lambda v: _ref_diag(v[0], 1)),
    OpCase("index_scatter", "diag-neg", lambda v: kn.diag(v[0], -2), normal((1, 2)),
           lambda v: _ref_diag(v[0], -2)),
    OpCase("where", "tril", lambda x: kn.tril(x), normal((2, 3, 4)), lambda x: np.tril(x)),
    OpCase("where", "triu-offset", lambda x: kn.triu(x, -1), normal((2, 4, 3)),
           lambda x: np.triu(x, -1), ("float32", "float64", "int64")),
    OpCase("where", "masked_fill", lambda x, m: kn.masked_fill(x, m, -1.5),
           lambda rng, dtype: [_values(rng, (3, 4), dtype, "normal"), rng.random(4) < 0.5],
           lambda x, m: np.where(m, np.asarray(-1.5, x.dtype), x)),
    OpCase("where", "lerp-tensor-weight", kn.lerp, normal((3, 4), (3, 4), (3, 4)),
           lambda a, b, w: np.where(np.abs(w) < 0.5, a + w * (b - a), b - (b - a) * (1 - w))),
    OpCase("tile", "repeat", lambda x: kn.repeat(x, 2, 1, 3), normal((2, 3)),
           lambda x: np.tile(x, (2, 1, 3))),
    OpCase("broadcast_to", "expand", lambda x: kn.expand(x, 2, -1, 4), normal((3, 1)),
           lambda x: np.broadcast_to(x, (2, 3, 4))),
    OpCase("broadcast_to", "repeat_interleave", lambda x: kn.repeat_interleave(x, 2, dim=1),
           normal((2, 3)), lambda x: np.repeat(x, 2, 1)),
    OpCase("reshape", "unflatten", lambda x: kn.unflatten(x, -1, (2, -1)), normal((3, 6)),
           lambda x: x.reshape(3, 2, 3)),
    OpCase("unfold", "unfold", lambda x: kn.unfold(x, 1, 2, 2), normal((2, 5, 3)),
           lambda x: _ref_unfold(x, 1, 2, 2)),
    OpCase("unfold", "overlapping", lambda x: kn.unfold(x, 1, 3, 1), normal((2, 5)),
           lambda x: _ref_unfold(x, 1, 3, 1)),
    OpCase("gather", "index_select", lambda x, i: kn.index_select(x, -1, i),
           then_index(normal((3, 4)), [3, 0, 3]), lambda x, i: x[:, i]),
    OpCase("gather", "repeat_interleave-counts", lambda x: kn.repeat_interleave(
        x, np.array([2, 0, 1]), dim=1), normal((2, 3)), lambda x: np.repeat(x, [2, 0, 1], 1)),
    OpCase("take_along_axis", "gather", lambda x, i: kn.gather(x, 1, i),
           then_index(normal((3, 4)), [[0, 3], [1, 1], [2, 0]]), lambda x, i: _ref_gather(x, i, 1)),
    OpCase("take_along_axis", "gather-small-index", lambda x, i: kn.gather(x, 0, i),
           then_index(normal((3, 4)), [[2, 0]]), lambda x, i: _ref_gather(x, i, 0)),
    OpCase("matmul", "mm", kn.mm, normal((2, 3), (3, 5)), np.matmul),
    OpCase("matmul", "bmm", kn.bmm, normal((2, 3, 4), (2, 4, 5)), np.matmul),
    OpCase("matmul", "einsum-batch", lambda a, b: kn.einsum("bij,bkj->bik", a, b),
           normal((2, 3, 4), (2, 5, 4)), lambda a, b: np.einsum("bij,bkj->bik", a, b)),
    OpCase("matmul", "einsum-chain", lambda a, b, c: kn.einsum("ij,jk,kl", a, b, c),
           normal((2, 3), (3, 4), (4, 5)), lambda a, b, c: np.einsum("ij,jk,kl", a, b, c)),
    OpCase("reduce_sum", "einsum-trace", lambda a: kn.einsum("...ii->...", a), normal((2, 3, 3)),
           lambda a: np.einsum("...ii->...", a)),
    OpCase("reduce_sum", "linalg.norm", lambda a: kn.linalg.norm(a, dim=-1), normal((2, 3)),
           lambda a: np.linalg.norm(a, axis=-1)),
    OpCase("reduce_max", "linalg.matrix_norm-inf", lambda a: kn.linalg.matrix_norm(a, np.inf),
           normal((2, 3, 4), kind="distinct"), lambda a: np.linalg.norm(a, np.inf, (1, 2))),
    # median of all elements: value from a sort, its gradient shared among ties (torch 2.13)
    OpCase("share_ties", "median-all", lambda a: kn.median(a), normal((3, 4), kind="distinct"),
           lambda a: np.sort(a, axis=None)[(a.size - 1) // 2]),
    OpCase("share_ties", "nanmedian-all", lambda a: kn.nanmedian(a),
           normal((3, 4), kind="distinct"), lambda a: np.sort(a, axis=None)[(a.size - 1) // 2]),
    OpCase("floordiv", "div-floor", lambda a, b: kn.div(a, b, rounding_mode="floor"),
           normal((3, 4), (3, 4), kind="positive"), np.floor_divide),
    OpCase("floordiv", "div-trunc-int", lambda a, b: kn.div(a, b, rounding_mode="trunc"),
           given([-7, 7, -6, 5, 0, -1], [2, -2, 3, 5, 3, 4]), _ref_div_trunc, ("int32", "int64")),
    OpCase("floor", "div-trunc", lambda a, b: kn.div(a, b, rounding_mode="trunc"),
           normal((3, 4), (3, 4)), _ref_div_trunc),
    OpCase("logaddexp", "logaddexp", kn.logaddexp, normal((3, 4), (4,)),
           lambda a, b: np.logaddexp(a, b)),
    OpCase("logit", "basic", kn.logit, given([0.1, 0.25, 0.5, 0.8, 0.95]),
           lambda a: np.log(a / (1 - a))),
    OpCase("logit", "eps", lambda a: kn.logit(a, eps=0.2), given([0.1, 0.3, 0.5, 0.7, 0.95]),
           lambda a: np.log(np.clip(a, 0.2, 0.8) / (1 - np.clip(a, 0.2, 0.8)))),
    OpCase("logaddexp", "logaddexp-inf", kn.logaddexp, given([-np.inf, np.inf, 1000.0, 2.0],
                                                       [-np.inf, np.inf, 1000.0, -np.inf]),
           np.logaddexp),
    OpCase("less_equal", "isclose", lambda a, b: kn.isclose(a, b, 1e-1, 0.5),
           normal((3, 4), (3, 4)), lambda a, b: _ref_isclose(a, b, 1e-1, 0.5)),
    OpCase("less_equal", "isclose-special", kn.isclose,
           given([np.nan, np.inf, -np.inf, 1.0], [np.nan, np.inf, np.inf, 1.0 + 1e-9]),
           _ref_isclose),
)  # fmt: skip
