"""Silent differences from PyTorch 2.13 that an oracle sweep of edge inputs found (ties, NaN,
negative indices, mixed dtypes, integer bounds), each compared with PyTorch (skipped without
it) in graph mode, eagerly and under `kn.compile` where the call takes tensors, and eagerly
where it makes a tensor from Python numbers.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_torch_known_fixes import MODES, assert_same, run, torch_result

import kiln as kn

X34 = np.arange(12, dtype=np.float32).reshape(3, 4)
_R = np.random.default_rng(0)

# id -> (fn(lib, *tensors), arrays); lib is torch or kiln
CASES = {
    # a negative index counts from the end (kiln ignored it)
    "index_fill-negative": (lambda t, x, i: t.index_fill(x, 1, i, -2.0), (X34, np.array([-1, 0]))),
    "index_fill-negative-0d-index": (lambda t, x, i: x.index_fill(0, i, 7.0), (X34, np.array(-3))),
    # the missing bound is the result dtype's extreme, not x's (True, 127 clamped before)
    "clamp-bool-int-min": (lambda t, x: t.clamp(x, min=3), (np.array([True, False]),)),
    "clamp-bool-float-min": (
        lambda t, x, b: t.clamp(x, min=b),
        (np.array([True, False]), np.array([2.5, 0.5], np.float32)),
    ),
    "clamp-int8-uint8-min": (
        lambda t, x, b: t.clamp(x, min=b),
        (np.array([1, -2], np.int8), np.array([255, 0], np.uint8)),
    ),
    "clamp-int8-uint8-max": (
        lambda t, x, b: x.clamp(max=b),
        (np.array([1, -2], np.int8), np.array([255, 0], np.uint8)),
    ),
    # copysign promotes both operands first (an integer with float16 signs gave float32)
    "copysign-uint8-float16": (
        lambda t, x, y: t.copysign(x, y),
        (np.array([0, 3, 200], np.uint8), np.array([1.0, -2.0, -0.0], np.float16)),
    ),
    "copysign-bool-0d-float64": (
        lambda t, x, y: t.copysign(x, y),
        (np.array([True, False]), np.array(-1.0)),
    ),
    "copysign-int-float": (
        lambda t, x: t.copysign(x, -1.5),
        (np.array([1, -2, 0], np.int64),),
    ),
    # float_power of complex values computes in complex128 (kiln dropped the imaginary part)
    "float_power-complex-base": (
        lambda t, x: t.float_power(x, 2),
        (np.array([1j, 2.0, 1 - 1j], np.complex64),),
    ),
    "float_power-complex-exponent": (
        lambda t, x, e: t.float_power(x, e),
        (np.array([2.0, 3.0], np.float32), np.array([1j, 0.5], np.complex64)),
    ),
    # cumsum's and cumprod's dtype= is the result's (integers came back int64)
    "cumsum-dtype-int32": (
        lambda t, x: t.cumsum(x, 0, dtype=t.int32),
        (np.array([2**31 - 1, 5, 7], np.int64),),
    ),
    "cumsum-bool-dtype-uint8": (lambda t, x: x.cumsum(0, dtype=t.uint8), (np.array([True, True]),)),
    "cumprod-dtype-int16": (
        lambda t, x: t.cumprod(x, 0, dtype=t.int16),
        (np.array([100, 100, 3], np.int8),),
    ),
    # all and any of uint8 give uint8 (kiln gave bools)
    "all-uint8": (lambda t, x: x.all(), (np.array([[2, 0], [1, 3]], np.uint8),)),
    "any-uint8-dim": (
        lambda t, x: t.any(x, 1, keepdim=True),
        (np.array([[2, 0], [0, 0]], np.uint8),),
    ),
    # a NaN value goes after every element of the sequence (kiln put it first)
    "searchsorted-nan-value": (
        lambda t, q, v: t.searchsorted(q, v),
        (
            np.array([[1.0, 3.0, 5.0], [0.0, 2.0, 4.0]], np.float32),
            np.array([[np.nan, 2.0]] * 2, np.float32),
        ),
    ),
    "searchsorted-nan-value-right": (
        lambda t, q, v: t.searchsorted(q, v, right=True),
        (np.array([1.0, 3.0, 5.0]), np.array([np.nan, 3.0, -np.inf])),
    ),
    "searchsorted-nan-ends-sequence": (
        lambda t, q, v: t.searchsorted(q, v),
        (np.array([1.0, 3.0, np.nan], np.float32), np.array([np.nan, 2.0, np.inf], np.float32)),
    ),
    "bucketize-nan": (
        lambda t, v, b: t.bucketize(v, b),
        (np.array([[np.nan, 2.0], [0.5, np.nan]], np.float32), np.array([1.0, 3.0], np.float32)),
    ),
    # div(rounding_mode="trunc") of uint8 by a negative 0-d int8: -2 is 254 in uint8
    "div-trunc-uint8-by-negative-0d": (
        lambda t, a, b: t.div(a, b, rounding_mode="trunc"),
        (np.array([0, 3, 7, 200, 255], np.uint8), np.array(-2, np.int8)),
    ),
    # float16/bfloat16 variances compute in float32 (kiln's sum of squares overflowed: inf)
    "var-float16": (lambda t, x: x.var(), (np.arange(100, dtype=np.float16),)),
    "std-float16-dim": (
        lambda t, x: t.std(x, 1, keepdim=True),
        (np.arange(200, dtype=np.float16).reshape(2, 100) * 3,),
    ),
    "var_mean-float16": (
        lambda t, x: t.var_mean(x, correction=0),
        (np.arange(100, dtype=np.float16),),
    ),
    # running sums and products of float32 accumulate in float64 on the CPU, as PyTorch's
    "cumsum-float32-long": (lambda t, x: x.cumsum(0)[-3:], (np.full(100_000, 0.1, np.float32),)),
    "cumprod-float32-long": (
        lambda t, x: t.cumprod(x, 1),
        (1 + np.random.default_rng(0).standard_normal((3, 3000)).astype(np.float32) / 100,),
    ),
    "logcumsumexp-float32-long": (
        lambda t, x: t.logcumsumexp(x, 0)[-1:],
        (np.zeros(100_000, np.float32),),
    ),
    # rms_norm of float16/bfloat16: in float32 with float32's eps, the weight applied before
    # rounding once (kiln used float16's eps, 0.26 for 0.46, and its squares overflowed: 0)
    "rms_norm-float16-small": (
        lambda t, x, w: t.nn.functional.rms_norm(x, (3,), w),
        (np.array([[0.01, 0.02, -0.03]], np.float16), np.array([1.5, 2.0, 0.3], np.float16)),
    ),
    "rms_norm-float16-large": (
        lambda t, x: t.nn.functional.rms_norm(x, (1000,)),
        (np.full((1, 1000), 300.0, np.float16),),
    ),
    "rms_norm-bfloat16": (
        lambda t, x, w: t.nn.functional.rms_norm(x.to(t.bfloat16), (4,), w),
        (
            np.arange(8, dtype=np.float32).reshape(2, 4) * 7.3 - 20,
            np.array([0.7, -1.3, 2.1, 0.2], np.float32),
        ),
    ),
    # avg_pool of float16 sums in float32 (kiln's float16 window sum overflowed: inf for 300)
    "avg_pool1d-float16-wide": (
        lambda t, x: t.nn.functional.avg_pool1d(x, 1000),
        (np.full((1, 1, 1000), 300.0, np.float16),),
    ),
    "avg_pool2d-float16-padded": (
        lambda t, x: t.nn.functional.avg_pool2d(x, 40, stride=20, padding=20),
        (np.full((1, 2, 60, 60), 200.0, np.float16),),
    ),
    # attention of float16/bfloat16 computes in float32 (kiln's float16 scores overflowed: NaN)
    "sdpa-float16-large": (
        lambda t, q, k, v: t.nn.functional.scaled_dot_product_attention(q, k, v),
        tuple(_R.standard_normal((3, 2, 3, 5, 16)).astype(np.float16) * np.float16(300)),
    ),
    "sdpa-float16-causal": (
        lambda t, q, k, v: t.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True),
        tuple(_R.standard_normal((3, 2, 3, 5, 16)).astype(np.float16) * np.float16(300)),
    ),
    "sdpa-bfloat16": (
        lambda t, q, k, v: t.nn.functional.scaled_dot_product_attention(
            *(a.to(t.bfloat16) for a in (q, k, v))
        ),
        tuple(_R.standard_normal((3, 2, 3, 5, 16)).astype(np.float32) * 300),
    ),
    # empty reductions: logsumexp over a size-0 dim is log(0) = -inf, diff past the size is
    # empty (kiln raised for both)
    "logsumexp-empty-dim": (lambda t, x: t.logsumexp(x, 1), (np.zeros((3, 0), np.float32),)),
    "logsumexp-empty-keepdim": (
        lambda t, x: x.logsumexp((0, 2), keepdim=True),
        (np.zeros((0, 2, 3)),),
    ),
    "diff-n-past-size": (lambda t, x: t.diff(x, n=5), (X34,)),
    "diff-empty": (lambda t, x: t.diff(x > 1, dim=1), (np.zeros((3, 0), np.float32),)),
    "unique_consecutive-empty": (
        lambda t, x: t.unique_consecutive(x, return_inverse=True, return_counts=True),
        (np.zeros((0, 4), np.float32),),
    ),
    "unique_consecutive-empty-dim": (
        lambda t, x: t.unique_consecutive(x, dim=1),
        (np.zeros((3, 0), np.int64),),
    ),
    # the median of no elements is NaN, or an integer dtype's least value (kiln raised)
    "median-empty": (lambda t, x: x.median(), (np.zeros((3, 0), np.float32),)),
    "median-empty-int": (lambda t, x: t.median(x), (np.zeros(0, np.int64),)),
    "nanmedian-empty": (lambda t, x: x.nanmedian(), (np.zeros((0, 2)),)),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", list(CASES))
def test_edges_as_torch(name, mode):
    fn, arrays = CASES[name]
    assert_same(run(mode, fn, *arrays), torch_result(fn, *arrays))


def test_index_fill_out_of_range_raises():
    """Beyond either end is an IndexError, as PyTorch's (kiln filled nothing)."""
    for bad in ([3], [-4]):
        with pytest.raises(IndexError):
            kn.zeros(3).index_fill(0, kn.tensor(bad), 1.0)


# arange's arguments (start, end, step) and dtype -> PyTorch's integer counting: from the
# truncated start by the truncated step; int64's length from the truncated bounds
ARANGES = [
    ((0, 5, 1.5), "int64"),
    ((-1.5, 5, 1.5), "int64"),
    ((5, 0, -1.5), "int64"),
    ((5, 0, -1.5), "int32"),
    ((5, 0, -1.5), "uint8"),
    ((0, 10, 2.9), "int64"),
    ((0, 5, 1.9), "int32"),
    ((-2.5, 2.5, 1), "int16"),
    ((0, 2.5, 0.5), "int8"),
    ((250, 260), "uint8"),
    ((0.5, 3, 0.5), "float16"),
]


def test_float_power_complex_scalar_exponent():
    torch = pytest.importorskip("torch")
    want = torch.float_power(torch.tensor([2, 3]), 1j).numpy()
    assert_same(kn.float_power(kn.tensor([2, 3]), 1j).numpy(), want)


@pytest.mark.parametrize("args, dtype", ARANGES, ids=[f"{a}-{d}" for a, d in ARANGES])
def test_arange_integer_dtypes_as_torch(args, dtype):
    torch = pytest.importorskip("torch")
    want = torch.arange(*args, dtype=getattr(torch, dtype)).numpy()
    assert_same(kn.arange(*args, dtype=dtype).numpy(), want)


def test_arange_zero_integer_step_and_tensor_bounds():
    """A step that truncates to 0 in int64 is PyTorch's ValueError (kiln gave zeros); 0-d
    integer tensor bounds give int64, as Python ints do (kiln gave float32)."""
    with pytest.raises(ValueError, match="step must be nonzero"):
        kn.arange(0, 2.5, 0.5, dtype=kn.int64)
    got = kn.arange(kn.tensor(3))
    assert got.dtype == kn.int64 and got.tolist() == [0, 1, 2]
    assert kn.arange(kn.tensor(1), 4.0).dtype == kn.float32


def test_histogram_edges_of_a_given_range_are_a_tensor():
    """The bin edges of `range=` were a NumPy array beside a Tensor of counts."""
    torch = pytest.importorskip("torch")
    data = [1.0, 2.0, 1.0, 4.0, 2.5]
    got = kn.histogram(kn.tensor(data), bins=4, range=(0.0, 4.0), density=True)
    want = torch.histogram(torch.tensor(data), bins=4, range=(0.0, 4.0), density=True)
    assert isinstance(got.bin_edges, kn.Tensor) and isinstance(got.hist, kn.Tensor)
    assert_same(got.bin_edges.numpy(), want.bin_edges.numpy())
    assert_same(got.hist.numpy(), want.hist.numpy())


def test_full_of_a_0d_value_takes_its_kind_and_tile_takes_varargs():
    """A 0-d tensor or NumPy scalar fills as a Python number would (int32 gave int32 for
    PyTorch's int64, np.float64 float64 for float32); `x.tile(2, 1)` as `x.tile((2, 1))`."""
    torch = pytest.importorskip("torch")
    for make in (lambda L: L.tensor(3, dtype=L.int32), lambda L: L.tensor(2.5, dtype=L.float64)):
        want = torch.full((2,), make(torch)).numpy()
        assert_same(kn.full((2,), make(kn)).numpy(), want)
    assert kn.full((2,), np.float64(2.5)).dtype == kn.float32
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert_same(kn.tensor(x).tile(2, 1, 2).numpy(), torch.tensor(x).tile(2, 1, 2).numpy())


def test_to_another_tensor_takes_its_dtype():
    """`t.to(other)` is `t.to(other.dtype, other.device)`, as PyTorch's (kiln raised)."""
    torch = pytest.importorskip("torch")
    want = torch.tensor([1.5, -2.7]).to(torch.tensor([1], dtype=torch.int16)).numpy()
    assert_same(kn.tensor([1.5, -2.7]).to(kn.tensor([1], dtype=kn.int16)).numpy(), want)


def test_casts_within_a_category_as_torch():
    """In-place ops and `out=` cast a signed result into unsigned (NumPy's "same_kind"
    refused int64 into uint8); can_cast knows complex (it raised KeyError)."""
    torch = pytest.importorskip("torch")
    for lib in (torch, kn):
        x = lib.tensor([1, 2], dtype=lib.uint8)
        x.mul_(lib.tensor([3, 0]))
        out = lib.empty(2, dtype=lib.uint8)
        lib.add(lib.tensor([1, 2]), 1, out=out)
        if lib is torch:
            want = (x.numpy(), out.numpy())
    assert_same(x.numpy(), want[0])
    assert_same(out.numpy(), want[1])
    names = ["bool", "uint8", "int64", "float16", "bfloat16", "float64", "complex64"]
    for a in names:
        for b in names:
            want = torch.can_cast(getattr(torch, a), getattr(torch, b))
            assert kn.can_cast(getattr(kn, a), getattr(kn, b)) == want, (a, b)
