"""Differences from PyTorch 2.13 that running its OpInfo database over every CPU dtype found
(tests/test_torch_opinfo.py), each fixed: integer wraparound and result dtypes, complex
values kept, half-precision kernels computed as PyTorch's. Expected values are torch's, on
the same inputs (skipped without torch)."""

from __future__ import annotations

import numpy as np
import pytest

import kiln as kn

torch = pytest.importorskip("torch")


def _same(got, want):
    """kiln's result is PyTorch's: dtype, shape and bits (bfloat16 through float32)."""
    k = np.asarray(got.numpy())
    if want.dtype == torch.bfloat16:
        t = want.float().numpy().astype(kn.bfloat16)
    else:
        t = want.numpy()
    assert (k.dtype, k.shape) == (t.dtype, t.shape)
    if k.dtype == kn.bfloat16:
        k, t = k.astype(np.float32), t.astype(np.float32)
    np.testing.assert_array_equal(k, t)


def _close(got, want):
    k, t = np.asarray(got.numpy()), want.numpy()
    assert (k.dtype, k.shape) == (t.dtype, t.shape)
    np.testing.assert_allclose(k, t, rtol=1e-5, atol=1e-5)


def _kn(dtype):
    """kiln's dtype of a torch dtype's name."""
    return getattr(kn, str(dtype).split(".")[-1])


def _ints(dtype, shape, seed=0):
    info = np.iinfo(dtype)
    rng = np.random.default_rng(seed)
    return rng.integers(max(info.min, -100), min(info.max, 200), shape).astype(dtype)


def _complex(shape, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.int32])
def test_addbmm_of_integers_wraps_in_their_dtype(dtype):  # kiln's was int64, unwrapped
    x, a, b = _ints(dtype, (3, 4), 1), _ints(dtype, (5, 3, 6), 2), _ints(dtype, (5, 6, 4), 3)
    want = torch.addbmm(*map(torch.from_numpy, (x, a, b)))
    _same(kn.addbmm(kn.tensor(x), kn.tensor(a), kn.tensor(b)), want)


@pytest.mark.parametrize("dtype", [kn.float16, kn.bfloat16])
def test_half_addbmm_is_one_addmm_a_batch(dtype):
    rng = np.random.default_rng(4)
    x, a, b = (rng.standard_normal(s).astype(np.float32) for s in ((3, 4), (6, 3, 5), (6, 5, 4)))
    t = [torch.from_numpy(v).to(getattr(torch, dtype.name)) for v in (x, a, b)]
    k = [kn.tensor(v).to(dtype) for v in (x, a, b)]
    _same(kn.addbmm(*k, beta=0.5, alpha=0.75), torch.addbmm(*t, beta=0.5, alpha=0.75))
    _same(kn.addr(k[0], k[1][0, :, 0], k[2][0, 0], beta=0.6, alpha=0.2),
          torch.addr(t[0], t[1][0, :, 0], t[2][0, 0], beta=0.6, alpha=0.2))  # fmt: skip


@pytest.mark.parametrize("fn", ["addmm", "baddbmm", "addbmm"])
def test_complex_coefficients_of_matrix_products(fn):  # raised TypeError (float())
    x = _complex((3, 3, 3))
    args = (x[0], x[1], x[2]) if fn == "addmm" else (x[0], x, x) if fn == "addbmm" else (x, x, x)
    want = getattr(torch, fn)(*map(torch.from_numpy, args), beta=0.5 - 1j, alpha=2 + 1j)
    _close(getattr(kn, fn)(*map(kn.tensor, args), beta=0.5 - 1j, alpha=2 + 1j), want)


def test_angle_of_integers_is_float32_pi():  # was a float16 pi widened (3.140625)
    x = np.array([-3, 0, 5, -128], np.int8)
    _same(kn.angle(kn.tensor(x)), torch.angle(torch.from_numpy(x)))


def test_trapezoid_of_uint8_wraps_as_pytorch():  # kiln summed pairs wider
    y = np.array([[5, 1, 6], [5, 6, 4], [250, 9, 200]], np.uint8)
    x = np.array([[2, 5, 5], [9, 3, 1], [1, 0, 7]], np.uint8)
    ty, tx = torch.from_numpy(y), torch.from_numpy(x)
    _close(kn.trapezoid(kn.tensor(y), kn.tensor(x)), torch.trapezoid(ty, tx))
    _close(kn.trapezoid(kn.tensor(y)), torch.trapezoid(ty))
    _close(kn.cumulative_trapezoid(kn.tensor(y), kn.tensor(x)), torch.cumulative_trapezoid(ty, tx))
    _close(kn.cumulative_trapezoid(kn.tensor(y), dx=3), torch.cumulative_trapezoid(ty, dx=3))


def test_einsum_sum_of_uint8_is_int64():  # was uint64
    a = np.array([[200, 100], [3, 4]], np.uint8)
    for eq in ("ij->", "ij->j", "ij,kl->ik"):
        ops = (a,) if eq.count(",") == 0 else (a, a)
        _same(kn.einsum(eq, *map(kn.tensor, ops)), torch.einsum(eq, *map(torch.from_numpy, ops)))


def test_softmin_negates_uint8_before_its_dtype_cast():  # -x wraps in uint8 first
    x = np.array([[5, 1, 6], [0, 8, 4]], np.uint8)
    want = torch.nn.functional.softmin(torch.from_numpy(x), 1, dtype=torch.float64)
    _close(kn.nn.functional.softmin(kn.tensor(x), 1, dtype=kn.float64), want)


def test_tensordot_size_one_dim_sums_in_the_dtype():  # raised DTypeMismatchError
    a, b = np.full((1, 2), 100, np.int8), np.full((3, 2), 100, np.int8)
    want = torch.tensordot(torch.from_numpy(a), torch.from_numpy(b), dims=([0, 1], [0, 1]))
    _same(kn.tensordot(kn.tensor(a), kn.tensor(b), dims=([0, 1], [0, 1])), want)


@pytest.mark.parametrize("fn", ["scatter_reduce", "index_reduce"])
def test_integer_mean_reductions_of_uint8(fn):  # raised UFuncTypeError
    x = np.array([[10, 250, 7], [3, 200, 9]], np.uint8)
    src = np.array([[100, 200, 50], [255, 1, 2]], np.uint8)
    idx = np.array([[0, 0, 1], [1, 1, 0]]) if fn == "scatter_reduce" else np.array([0, 0])
    args = (0, idx, src, "mean") if fn == "scatter_reduce" else (0, idx, src, "mean")
    targs = tuple(torch.from_numpy(a) if isinstance(a, np.ndarray) else a for a in args)
    kargs = tuple(kn.tensor(a) if isinstance(a, np.ndarray) else a for a in args)
    want = getattr(torch.from_numpy(x), fn)(*targs)
    _same(getattr(kn.tensor(x), fn)(*kargs), want)


def test_complex_values_are_kept():  # cast to float32 (imaginary parts dropped) before
    x, w = _complex((3, 5)), np.array([1, 2, 1, 3, 1])
    tx, kx = torch.from_numpy(x), kn.tensor(x)
    _close(kn.cov(kx), torch.cov(tx))
    _close(kn.cov(kx, fweights=kn.tensor(w)), torch.cov(tx, fweights=torch.from_numpy(w)))
    _close(kn.corrcoef(kx), torch.corrcoef(tx))
    for k, t in zip(kn.gradient(kx), torch.gradient(tx)):
        _close(k, t)
    e = np.array([1, -2, 3, 0, 2])
    _close(kn.ldexp(kx, kn.tensor(e)), torch.ldexp(tx, torch.from_numpy(e)))
    # a float value with complex tensors was truncated to an int
    _close(kn.addcmul(kx, kx, kx, value=3.14), torch.addcmul(tx, tx, tx, value=3.14))
    _close(kn.linalg.vecdot(kx, kx.flip(0)), torch.linalg.vecdot(tx, tx.flip(0)))  # conj(x) y
    y = _complex((3, 5), 1)
    _close(kn.nn.functional.pairwise_distance(kx, kn.tensor(y)),
           torch.nn.functional.pairwise_distance(tx, torch.from_numpy(y)))  # fmt: skip
    _close(kn.nn.functional.normalize(kx), torch.nn.functional.normalize(tx))


def test_logical_ops_of_complex_values():  # raised UnsupportedDTypeError
    x = np.array([0j, 1j, 2 + 0j, 0j], np.complex64)
    y = np.array([1j, 0j, 3 + 0j, 0j], np.complex64)
    tx, ty, kx, ky = torch.from_numpy(x), torch.from_numpy(y), kn.tensor(x), kn.tensor(y)
    _same(kn.logical_and(kx, ky), torch.logical_and(tx, ty))
    _same(kn.logical_or(kx, ky), torch.logical_or(tx, ty))
    _same(kn.logical_not(kx), torch.logical_not(tx))
    _same(kn.all(kx), torch.all(tx))
    _same(kn.argwhere(kx), torch.argwhere(tx))


def test_lstsq_residuals_of_complex_matrices_are_real():  # were complex
    a, b = _complex((4, 3)), _complex((4, 2), 1)
    got = kn.linalg.lstsq(kn.tensor(a), kn.tensor(b))
    want = torch.linalg.lstsq(torch.from_numpy(a), torch.from_numpy(b))
    assert got.residuals.dtype == kn.float32 and want.residuals.dtype == torch.float32


def test_bfloat16_views_and_nan_to_num():  # raised ValueError (no buffer export, finfo)
    x = np.array([1.5, -np.inf, np.nan, np.inf, 3.0, 7.0], np.float32)
    t, k = torch.from_numpy(x).bfloat16(), kn.tensor(x).to(kn.bfloat16)
    _same(k.as_strided((2, 2), (1, 2), 1), t.as_strided((2, 2), (1, 2), 1))
    _same(kn.nan_to_num(k), torch.nan_to_num(t))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_native_norm_statistics_dtype(dtype):  # were float32 whatever the parameters
    x = torch.randn(2, 4, 3, generator=torch.Generator().manual_seed(0)).to(dtype)
    kx = kn.tensor(x.float().numpy()).to(_kn(dtype))
    for w in (None, torch.ones(3), torch.ones(3, dtype=dtype)):
        kw = None if w is None else kn.tensor(w.float().numpy()).to(_kn(w.dtype))
        want = torch.native_layer_norm(x, [3], w, w, 1e-5)
        got = kn.native_layer_norm(kx, [3], kw, kw, 1e-5)
        assert [str(g.dtype).split(".")[-1] for g in got[1:]] == [
            str(t.dtype).split(".")[-1] for t in want[1:]
        ]


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_lerp_addcmul_addcdiv_are_pytorchs_bits(dtype):
    # PyTorch's kernels compute in float32 (lerp: one fused multiply-add) and round once;
    # kiln's rounded each step in the dtype (a fifth of the lerps differed by an ulp)
    g = torch.Generator().manual_seed(1)
    a, b, w = (torch.randn(20000, generator=g) * 10 for _ in range(3))
    a, b, c, w = a.to(dtype), b.to(dtype), (b.abs() + 1).to(dtype), (w / 10).to(dtype)
    ka, kb, kc, kw = (kn.tensor(v.float().numpy()).to(_kn(dtype)) for v in (a, b, c, w))
    for weight, kweight in ((w, kw), (0.3, 0.3), (0.7, 0.7)):
        _same(kn.lerp(ka, kb, kweight), torch.lerp(a, b, weight))
    _same(kn.addcmul(ka, kb, kc, value=0.3), torch.addcmul(a, b, c, value=0.3))
    _same(kn.addcdiv(ka, kb, kc, value=0.3), torch.addcdiv(a, b, c, value=0.3))


def test_compiled_bincount_of_uint8():  # raised OverflowError (a -1 of uint8) when traced
    x = np.array([1, 3, 3, 0, 7], np.uint8)
    want = torch.bincount(torch.from_numpy(x))
    _same(kn.compile(lambda v: kn.bincount(v))(kn.tensor(x)), want)
