"""kiln's PyTorch functions against PyTorch itself (skipped without torch): values, dtypes and
gradients on random inputs, eagerly, and the same values in graph mode and under kn.compile.

Each row: a name, `fn(lib, *inputs)` written once for both libraries (`lib` is `kn` or
`torch`), and the inputs (NumPy arrays; float ones require grad). The row id reproduces it:
`pytest tests/test_torch_oracle.py -k sort`.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest

import kiln as kn

torch = pytest.importorskip("torch")


def rand(*shape, dtype="float64", kind="normal"):
    return ("rand", shape, dtype, kind)


def fixed(array):
    return ("fixed", np.asarray(array))


def make(spec, rng):
    if spec[0] == "fixed":
        return spec[1].copy()
    _, shape, dtype, kind = spec
    if kind == "distinct":  # no ties: sorting and extrema have one answer and a gradient
        n = int(np.prod(shape))
        return ((rng.permutation(n) - n // 2) / 2 + 0.1).reshape(shape).astype(dtype)
    if kind == "int":
        return rng.integers(-5, 6, shape).astype(dtype)
    if kind == "positive":
        return rng.uniform(0.2, 2.0, shape).astype(dtype)
    if kind == "unit":
        return rng.uniform(-0.9, 0.9, shape).astype(dtype)
    if kind == "above1":
        return rng.uniform(1.1, 3.0, shape).astype(dtype)
    if kind == "bool":
        return rng.random(shape) < 0.5
    return rng.standard_normal(shape).astype(dtype)


ROWS = [
    ("cat", lambda L, a, b: L.cat([a, b], dim=-1), rand(2, 3), rand(2, 4)),
    ("cat-mixed", lambda L, a, b: L.cat([a, b]), rand(2, 3, dtype="float32"), rand(1, 3)),
    ("concat", lambda L, a, b: L.concat([a, b], 0), rand(2, 3), rand(1, 3)),
    ("stack", lambda L, a, b: L.stack([a, b], dim=1), rand(2, 3), rand(2, 3)),
    ("mm", lambda L, a, b: L.mm(a, b), rand(2, 3), rand(3, 5)),
    ("bmm", lambda L, a, b: L.bmm(a, b), rand(4, 2, 3), rand(4, 3, 5)),
    ("einsum-matmul", lambda L, a, b: L.einsum("ij,jk->ik", a, b), rand(2, 3), rand(3, 4)),
    ("einsum-batch", lambda L, a, b: L.einsum("bij,bkj->bik", a, b), rand(2, 3, 4), rand(2, 5, 4)),
    ("einsum-trace", lambda L, a: L.einsum("ii", a), rand(3, 3)),
    ("einsum-diag", lambda L, a: L.einsum("ii->i", a), rand(3, 3)),
    ("einsum-implicit", lambda L, a, b: L.einsum("ij,jk", a, b), rand(2, 3), rand(3, 4)),
    ("einsum-outer", lambda L, a, b: L.einsum("i,j->ij", a, b), rand(3), rand(4)),
    ("einsum-sum", lambda L, a: L.einsum("ijk->j", a), rand(2, 3, 4)),
    (
        "einsum-ellipsis",
        lambda L, a, b: L.einsum("...ij,...jk->...ik", a, b),
        rand(2, 2, 3),
        rand(3, 4),
    ),
    (
        "einsum-three",
        lambda L, a, b, c: L.einsum("ij,jk,kl->il", a, b, c),
        rand(2, 3),
        rand(3, 4),
        rand(4, 2),
    ),
    ("einsum-broadcast-1", lambda L, a, b: L.einsum("ij,ij->i", a, b), rand(3, 1), rand(3, 4)),
    ("einsum-permute", lambda L, a: L.einsum("abc->cab", a), rand(2, 3, 4)),
    ("isclose", lambda L, a, b: L.isclose(a, b, rtol=0.1, atol=0.5), rand(3, 4), rand(3, 4)),
    (
        "isclose-int",
        lambda L, a, b: L.isclose(a, b),
        rand(5, kind="int", dtype="int64"),
        rand(5, kind="int", dtype="int64"),
    ),
    (
        "isclose-special",
        lambda L, a, b: L.isclose(a, b, equal_nan=True),
        fixed([np.nan, np.inf, -np.inf, 1.0, np.inf]),
        fixed([np.nan, np.inf, np.inf, 1.0, 1.0]),
    ),
    ("cumsum", lambda L, x: L.cumsum(x, dim=1), rand(3, 4)),
    ("cumsum-int", lambda L, x: L.cumsum(x, 0), rand(5, kind="int", dtype="int32")),
    ("cumsum-bool", lambda L, x: L.cumsum(x, -1), rand(2, 5, kind="bool", dtype="bool")),
    ("cumsum-dtype", lambda L, x: L.cumsum(x, 0, dtype=L.float64), rand(4, dtype="float32")),
    ("cumprod", lambda L, x: L.cumprod(x, dim=-1), rand(3, 4)),
    (
        "cumprod-zeros",
        lambda L, x: L.cumprod(x, 1),
        fixed([[1.5, 0.0, 2.0, 3.0, 0.0, 2.0], [0.0, 2.0, -1.0, 0.5, 1.0, 2.0]]),
    ),
    ("cumprod-int", lambda L, x: L.cumprod(x, 0), rand(4, kind="int", dtype="int8")),
    ("cummax", lambda L, x: L.cummax(x, dim=1), rand(3, 6, kind="distinct")),
    (
        "cummax-ties-nan",
        lambda L, x: L.cummax(x, 0),
        fixed([1.0, 3.0, 3.0, 2.0, np.nan, 5.0, np.nan, 1.0]),
    ),
    ("cummin", lambda L, x: L.cummin(x, 0), rand(5, 2, kind="distinct")),
    ("cummin-int-ties", lambda L, x: L.cummin(x, 1), rand(2, 6, kind="int", dtype="int64")),
    ("logcumsumexp", lambda L, x: L.logcumsumexp(x, 1), rand(3, 5)),
    ("logcumsumexp-wide", lambda L, x: L.logcumsumexp(x, 0), fixed([-1000.0, 0.0, 1000.0, 3.0])),
    ("sort", lambda L, x: L.sort(x, dim=1), rand(3, 5, kind="distinct")),
    ("sort-desc", lambda L, x: L.sort(x, 0, descending=True), rand(5, 3, kind="distinct")),
    (
        "sort-stable-ties",
        lambda L, x: L.sort(x, stable=True),
        rand(2, 7, kind="int", dtype="int64"),
    ),
    (
        "sort-stable-desc-ties",
        lambda L, x: L.sort(x, descending=True, stable=True),
        rand(2, 7, kind="int", dtype="int64"),
    ),
    (
        "sort-nan",
        lambda L, x: L.sort(x, descending=True, stable=True),
        fixed([3.0, np.nan, 1.0, 3.0, -np.inf]),
    ),
    ("sort-nan-asc", lambda L, x: L.sort(x, stable=True), fixed([3.0, np.nan, 1.0, 3.0, -np.inf])),
    ("argsort", lambda L, x: L.argsort(x, dim=0), rand(4, 3, kind="distinct")),
    ("topk", lambda L, x: L.topk(x, 2), rand(3, 5, kind="distinct")),
    ("topk-smallest", lambda L, x: L.topk(x, 3, dim=0, largest=False), rand(5, 2, kind="distinct")),
    ("flip", lambda L, x: L.flip(x, [0, 2]), rand(2, 3, 4)),
    ("roll", lambda L, x: L.roll(x, 2, 1), rand(3, 5)),
    ("roll-multi", lambda L, x: L.roll(x, (1, -2), (0, 1)), rand(3, 5)),
    ("roll-flat", lambda L, x: L.roll(x, 4), rand(3, 5)),
    ("tril", lambda L, x: L.tril(x), rand(4, 3)),
    ("tril-neg", lambda L, x: L.tril(x, -1), rand(2, 4, 5)),
    ("triu", lambda L, x: L.triu(x, 1), rand(3, 5)),
    ("diagonal", lambda L, x: L.diagonal(x), rand(3, 4)),
    ("diagonal-offset-dims", lambda L, x: L.diagonal(x, 1, 2, 0), rand(4, 2, 3)),
    ("diagonal-neg", lambda L, x: L.diagonal(x, -2), rand(5, 3)),
    ("diag-vector", lambda L, x: L.diag(x, -1), rand(3)),
    ("diag-matrix", lambda L, x: L.diag(x, 1), rand(3, 4)),
    ("repeat", lambda L, x: x.repeat(2, 1, 3), rand(2, 3)),
    ("repeat_interleave", lambda L, x: L.repeat_interleave(x, 2, dim=1), rand(2, 3)),
    ("repeat_interleave-flat", lambda L, x: L.repeat_interleave(x, 3), rand(2, 2)),
    ("expand", lambda L, x: x.expand(2, -1, 4), rand(3, 1)),
    ("unflatten", lambda L, x: x.unflatten(1, (2, -1)), rand(3, 6)),
    ("split", lambda L, x: L.split(x, 2, dim=1), rand(3, 5)),
    ("split-sizes", lambda L, x: L.split(x, [1, 4], 1), rand(3, 5)),
    ("chunk", lambda L, x: L.chunk(x, 3, 1), rand(2, 7)),
    ("unfold", lambda L, x: x.unfold(1, 2, 2), rand(3, 5, 2)),
    ("unfold-overlap", lambda L, x: x.unfold(-1, 3, 1), rand(2, 5)),
    ("lerp", lambda L, a, b: L.lerp(a, b, 0.3), rand(3, 4), rand(3, 4)),
    ("lerp-high", lambda L, a, b: L.lerp(a, b, 0.75), rand(3, 4), rand(3, 4)),
    ("lerp-tensor", lambda L, a, b, w: L.lerp(a, b, w), rand(3, 4), rand(3, 4), rand(3, 4)),
    ("copysign", lambda L, a, b: L.copysign(a, b), rand(3, 4), rand(3, 4)),
    ("copysign-int", lambda L, a: L.copysign(a, -1), rand(4, kind="int", dtype="int64")),
    ("fmod", lambda L, a, b: L.fmod(a, b), rand(3, 4), rand(3, 4, kind="positive")),
    ("fmod-int", lambda L, a: L.fmod(a, 3), rand(6, kind="int", dtype="int64")),
    ("remainder", lambda L, a: L.remainder(a, 1.5), rand(3, 4)),
    ("div-trunc", lambda L, a, b: L.div(a, b, rounding_mode="trunc"), rand(3, 4), rand(3, 4)),
    ("div-floor", lambda L, a, b: L.div(a, b, rounding_mode="floor"), rand(3, 4), rand(3, 4)),
    (
        "div-trunc-int",
        lambda L, a: L.div(
            a, fixed_int(L, [2, -2, 3, -3, 2, 5, -5, 4, 1, 3, 2]), rounding_mode="trunc"
        ),
        rand(11, kind="int", dtype="int64"),
    ),
    (
        "div-floor-int",
        lambda L, a: L.div(a, 3, rounding_mode="floor"),
        rand(11, kind="int", dtype="int64"),
    ),
    ("logaddexp", lambda L, a, b: L.logaddexp(a, b), rand(3, 4), rand(3, 4)),
    (
        "logaddexp-inf",
        lambda L, a, b: L.logaddexp(a, b),
        fixed([-np.inf, np.inf, 1000.0, -1000.0]),
        fixed([-np.inf, np.inf, 1000.0, -999.0]),
    ),
    ("exp2", lambda L, x: L.exp2(x), rand(3, 4)),
    ("exp2-int", lambda L, x: L.exp2(x), rand(4, kind="int", dtype="int64")),
    ("log2", lambda L, x: L.log2(x), rand(3, 4, kind="positive")),
    ("log10", lambda L, x: L.log10(x), rand(3, 4, kind="positive")),
    ("tan", lambda L, x: L.tan(x), rand(3, 4, kind="unit")),
    ("asin", lambda L, x: L.asin(x), rand(3, 4, kind="unit")),
    ("acos", lambda L, x: L.acos(x), rand(3, 4, kind="unit")),
    ("atan", lambda L, x: L.atan(x), rand(3, 4)),
    ("atan2", lambda L, a, b: L.atan2(a, b), rand(3, 4), rand(3, 4)),
    ("sinh", lambda L, x: L.sinh(x), rand(3, 4)),
    ("cosh", lambda L, x: L.cosh(x), rand(3, 4)),
    ("asinh", lambda L, x: L.asinh(x), rand(3, 4)),
    ("acosh", lambda L, x: L.acosh(x), rand(3, 4, kind="above1")),
    ("atanh", lambda L, x: L.atanh(x), rand(3, 4, kind="unit")),
    ("tan-int32", lambda L, x: L.tan(x), rand(4, kind="int", dtype="int32")),
    ("gather", lambda L, x: L.gather(x, 1, fixed_int(L, [[0, 2], [1, 1], [3, 0]])), rand(3, 4)),
    ("gather-small-index", lambda L, x: L.gather(x, 0, fixed_int(L, [[2, 0]])), rand(3, 4)),
    ("index_select", lambda L, x: L.index_select(x, 1, fixed_int(L, [3, 0, 3])), rand(2, 4)),
    (
        "scatter",
        lambda L, x, s: x.scatter(1, fixed_int(L, [[0, 2], [3, 1]]), s),
        rand(2, 4),
        rand(2, 2),
    ),
    # src larger than the index (PyTorch's own backward refuses it: values only)
    (
        "scatter-small-index",
        lambda L, x, s: x.scatter(1, fixed_int(L, [[0, 2], [3, 1]]), s),
        rand(2, 4, kind="int", dtype="int64"),
        rand(2, 3, kind="int", dtype="int64"),
    ),
    ("scatter-value", lambda L, x: x.scatter(0, fixed_int(L, [[1, 0, 1]]), 2.5), rand(2, 3)),
    (
        "scatter_add",
        lambda L, x, s: x.scatter_add(0, fixed_int(L, [[0, 1, 0], [0, 0, 1]]), s),
        rand(2, 3),
        rand(2, 3),
    ),
    (
        "scatter_add-small",
        lambda L, x, s: L.scatter_add(x, 1, fixed_int(L, [[0, 0]]), s),
        rand(3, 4),
        rand(1, 2),
    ),
    (
        "scatter_add-small-src",
        lambda L, x, s: L.scatter_add(x, 1, fixed_int(L, [[0, 0]]), s),
        rand(3, 4, kind="int", dtype="int32"),
        rand(2, 3, kind="int", dtype="int32"),
    ),
    *[
        (
            f"scatter_reduce-{r}-{inc}",
            lambda L, x, s, r=r, inc=inc: x.scatter_reduce(
                0, fixed_int(L, [[0, 1, 0], [0, 0, 1]]), s, r, include_self=inc
            ),
            rand(2, 3),
            rand(2, 3),
        )  # no ties between input and src: one maximum each
        for r in ("sum", "mean", "amax", "amin")
        for inc in (True, False)
    ],
    (
        "scatter_reduce-prod",
        lambda L, x, s: x.scatter_reduce(0, fixed_int(L, [[0, 1, 0]]), s, "prod"),
        rand(2, 3, kind="int", dtype="int64"),
        rand(1, 3, kind="int", dtype="int64"),
    ),
    (
        "scatter_reduce-mean-int",
        lambda L, x, s: x.scatter_reduce(
            0, fixed_int(L, [[0, 1, 0], [0, 0, 1]]), s, "mean", include_self=False
        ),
        rand(2, 3, kind="int", dtype="int64"),
        rand(2, 3, kind="int", dtype="int64"),
    ),
    ("masked_fill", lambda L, x, m: x.masked_fill(m, -1.0), rand(3, 4), rand(4, kind="bool")),
    (
        "masked_fill-int",
        lambda L, x, m: L.masked_fill(x, m, 7),
        rand(3, 4, kind="int", dtype="int32"),
        rand(3, 1, kind="bool"),
    ),
    (
        "where-method",
        lambda L, x, y, c: x.where(c, y),
        rand(3, 4),
        rand(3, 4),
        rand(3, 4, kind="bool"),
    ),
    ("linalg.det", lambda L, a: L.linalg.det(a), rand(3, 3, 3)),
    ("det", lambda L, a: L.det(a), rand(4, 4)),
    ("linalg.inv", lambda L, a: L.linalg.inv(a), rand(2, 3, 3)),
    ("inverse", lambda L, a: L.inverse(a), rand(3, 3)),
    ("linalg.solve", lambda L, a, b: L.linalg.solve(a, b), rand(2, 3, 3), rand(2, 3, 2)),
    ("linalg.solve-vector", lambda L, a, b: L.linalg.solve(a, b), rand(3, 3), rand(3)),
    (
        "linalg.solve-right",
        lambda L, a, b: L.linalg.solve(a, b, left=False),
        rand(3, 3),
        rand(2, 3),
    ),
    ("linalg.norm", lambda L, a: L.linalg.norm(a), rand(3, 4)),
    ("linalg.norm-dim", lambda L, a: L.linalg.norm(a, dim=1, keepdim=True), rand(3, 4)),
    ("linalg.norm-ord1", lambda L, a: L.linalg.norm(a, 1), rand(3, 4)),
    ("linalg.norm-inf", lambda L, a: L.linalg.norm(a, float("inf")), rand(3, 4, kind="distinct")),
    ("linalg.norm-vec3", lambda L, a: L.linalg.norm(a, 3), rand(5)),
    ("linalg.vector_norm-0", lambda L, a: L.linalg.vector_norm(a, 0), fixed([0.0, 1.0, -2.0])),
    (
        "linalg.matrix_norm-ninf",
        lambda L, a: L.linalg.matrix_norm(a, -float("inf")),
        rand(2, 3, 4, kind="distinct"),
    ),
]


def fixed_int(lib, values):
    return lib.tensor(values, dtype=lib.int64)


def _inputs(row):
    rng = np.random.default_rng(zlib.crc32(row[0].encode()))
    return [make(spec, rng) for spec in row[2:]]


def _flat(out):
    return list(out) if isinstance(out, (list, tuple)) else [out]


def _to_kiln(a):
    t = kn.tensor(a)
    return t.requires_grad_(True) if t.dtype.kind == "f" else t


def _to_torch(a):
    t = torch.from_numpy(np.array(a))
    return t.requires_grad_(True) if t.dtype.is_floating_point else t


def _np(t):
    return t.detach().numpy() if isinstance(t, torch.Tensor) else np.asarray(t.detach().numpy())


def _tol(dtype):
    return (1e-5, 1e-6) if dtype == np.float32 else (1e-10, 1e-12)


@pytest.mark.parametrize("row", ROWS, ids=[r[0] for r in ROWS])
def test_values_dtypes_and_gradients_match_torch(row):
    name, fn = row[:2]
    arrays = _inputs(row)
    ks, ts = [_to_kiln(a) for a in arrays], [_to_torch(a) for a in arrays]
    k_out, t_out = _flat(fn(kn, *ks)), _flat(fn(torch, *ts))
    assert len(k_out) == len(t_out)
    for i, (k, t) in enumerate(zip(k_out, t_out)):
        want = _np(t)
        got = _np(k)
        assert got.dtype == want.dtype, f"{name} output {i}: dtype {got.dtype}, torch {want.dtype}"
        assert got.shape == want.shape, f"{name} output {i}: shape {got.shape}, torch {want.shape}"
        if want.dtype.kind == "f":
            np.testing.assert_allclose(got, want, *_tol(want.dtype), equal_nan=True)
        else:
            np.testing.assert_array_equal(got, want)
    rng = np.random.default_rng(1)
    pairs = [(k, t) for k, t in zip(k_out, t_out) if t.requires_grad]
    if not pairs:
        return
    k_loss = t_loss = 0
    for k, t in pairs:
        r = rng.standard_normal(t.shape)
        finite = np.asarray(np.isfinite(_np(t)))
        r = np.asarray(np.where(finite, r, 0.0), _np(t).dtype)
        t_loss = (
            t_loss + (torch.where(torch.from_numpy(finite), t, 0.0) * torch.from_numpy(r)).sum()
        )
        if k.requires_grad:  # else PyTorch's gradient must be zero (a count of nonzeros...)
            k_loss = k_loss + (kn.where(kn.tensor(finite), k, 0.0) * kn.tensor(r)).sum()
    t_loss.backward()
    if isinstance(k_loss, kn.Tensor):
        k_loss.backward()
    for i, (k, t) in enumerate(zip(ks, ts)):
        if not t.requires_grad:
            continue
        want = np.zeros(t.shape, _np(t).dtype) if t.grad is None else t.grad.numpy()
        got = np.zeros(k.shape, k.dtype) if k.grad is None else k.grad.numpy()
        np.testing.assert_allclose(got, want, *_tol(want.dtype), err_msg=f"{name}: grad {i}")


@pytest.mark.parametrize("row", ROWS, ids=[r[0] for r in ROWS])
def test_graph_mode_and_compile_match_torch(row):
    name, fn = row[:2]
    arrays = _inputs(row)
    want = [_np(t) for t in _flat(fn(torch, *[_to_torch(a) for a in arrays]))]
    with kn.Graph().as_default():
        xs = [kn.placeholder(a.dtype, a.shape, f"x{i}") for i, a in enumerate(arrays)]
        outs = _flat(fn(kn, *xs))
        got = _flat(kn.function(xs, outs)(*arrays))
    compiled = _flat(kn.compile(lambda *ts: fn(kn, *ts))(*[kn.tensor(a) for a in arrays]))
    for values in (got, [_np(c) for c in compiled]):
        for g, w in zip(values, want):
            g = np.asarray(g)
            assert g.dtype == w.dtype and g.shape == w.shape, (name, g.dtype, w.dtype, g.shape)
            if w.dtype.kind == "f":
                np.testing.assert_allclose(g, w, *_tol(w.dtype), equal_nan=True)
            else:
                np.testing.assert_array_equal(g, w)


BOOL_ROWS = [
    ("allclose", lambda L, a, b: L.allclose(a, b), [1.0, 2.0], [1.0, 2.0 + 1e-7]),
    ("allclose-far", lambda L, a, b: L.allclose(a, b, atol=0.1), [1.0, 2.0], [1.0, 2.2]),
    ("allclose-nan", lambda L, a, b: L.allclose(a, b, equal_nan=True), [np.nan], [np.nan]),
    ("equal", lambda L, a, b: L.equal(a, b), [1, 2], [1, 2]),
    ("equal-values", lambda L, a, b: L.equal(a, b), [1, 2], [1, 3]),
    ("equal-shapes", lambda L, a, b: L.equal(a, b), [1, 2], [[1, 2]]),
    ("equal-nan", lambda L, a, b: L.equal(a, b), [np.nan], [np.nan]),
]


@pytest.mark.parametrize("row", BOOL_ROWS, ids=[r[0] for r in BOOL_ROWS])
def test_whole_tensor_tests_give_python_bools_as_torch(row):
    name, fn, a, b = row
    got = fn(kn, kn.tensor(a), kn.tensor(b))
    want = fn(torch, torch.tensor(a), torch.tensor(b))
    assert type(got) is bool and got == want, name


def test_nonzero_and_masked_select_match_torch():
    rng = np.random.default_rng(0)
    x = rng.integers(-1, 2, (3, 4))
    mask = rng.random((4,)) < 0.5
    for as_tuple in (False, True):
        got = _flat(kn.nonzero(kn.tensor(x), as_tuple=as_tuple))
        want = _flat(torch.nonzero(torch.tensor(x), as_tuple=as_tuple))
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g.numpy(), w.numpy())
            assert g.dtype == np.int64
    xf = rng.standard_normal((3, 4))
    k = kn.tensor(xf, requires_grad=True)
    t = torch.tensor(xf, requires_grad=True)
    kv, tv = kn.masked_select(k, kn.tensor(mask)), torch.masked_select(t, torch.tensor(mask))
    np.testing.assert_array_equal(kv.detach().numpy(), tv.detach().numpy())
    (kv * kv).sum().backward()
    (tv * tv).sum().backward()
    np.testing.assert_allclose(k.grad.numpy(), t.grad.numpy())


def test_randint_and_empty_match_torch_shapes_and_dtypes():
    for args in [(5, (2, 3)), (2, 9, (4,)), (0, 1, (3,))]:
        got, want = kn.randint(*args), torch.randint(*args)
        assert got.shape == tuple(want.shape) and got.dtype == np.int64
        lo, hi = (0, args[0]) if len(args) == 2 else args[:2]
        assert ((got.numpy() >= lo) & (got.numpy() < hi)).all()
    assert kn.empty(2, 3).shape == tuple(torch.empty(2, 3).shape)
    assert kn.empty(2, 3).dtype == np.float32
    assert kn.empty((4,), dtype=kn.int32).dtype == np.int32
