"""PyTorch's own reduction and sort/select tests (test_reductions.py, test_sort_and_select.py)
as an oracle: their hand-written edge cases, each written here as a scenario of its own, a
function of the module (`torch` or `kiln`), run on both and compared: values, dtypes, shapes,
index choices and exception types. Most run under `kn.compile` too. tests/test_torch_opinfo.py
already runs the OpInfo samples of these ops; these are the edges those samples miss: dim=None,
(), negative and repeated dims, keepdim, 0-d and zero-size inputs, identity values and the
errors of empty max/argmax, dtype= and the accumulation dtypes, NaN and inf, ties, the
variance's correction, and the sort/search family's options.

Expected values: torch 2.13 (the oracle). An index among equal values that PyTorch leaves
unspecified (topk, kthvalue: their CPU selection algorithm's) is compared by the value it
picks: those scenarios return `input.gather(dim, indices)` instead of the indices. Float
results agree within rtol 1e-5 (a few dozen values summed in another order).
"""

import numpy as np
import pytest
from port_common import to_numpy

import kiln as kn

nan, inf = float("nan"), float("inf")
f32 = np.float32

A = np.arange(12, dtype=f32).reshape(3, 4) - 5
I8 = np.array([[100, 100, -3], [7, 8, 9]], np.int8)
U8 = np.array([[200, 100, 3], [0, 8, 9]], np.uint8)
BOOL = np.array([[True, False, True], [True, True, True]])
EMPTY = np.zeros((0, 3), f32)
SCALAR = np.array(2.5, f32)
NANS = np.array([[1, nan, 3, nan], [4, 5, 6, 0], [nan, nan, nan, nan]], f32)
TIES = np.array([[3, 1, 3, 1], [2, 2, 2, 2], [0, 1, 0, 1]], f32)
INFS = np.array([[-inf, -inf], [inf, 1], [inf, inf], [-inf, 2], [inf, -inf]], f32)

CASES = {}


def case(name, *inputs, compiled=True):
    """Registers the scenario below it under `name`, run on `inputs` (NumPy arrays, passed
    as tensors of the module); `compiled`: also run under kn.compile."""

    def register(fn):
        assert name not in CASES, name
        CASES[name] = (fn, inputs, compiled)
        return fn

    return register


# -- comparing -----------------------------------------------------------------------------


def _dtype_name(dtype):
    return str(dtype).rsplit(".", 1)[-1]


def assert_same(k, t, where="result"):
    """kiln's result `k` is torch's `t`: structure, shapes, dtypes and values (NaN where
    torch has NaN), Python numbers of the same type."""
    if isinstance(t, (tuple, list)):
        assert isinstance(k, (tuple, list)) and len(k) == len(t), (where, k, t)
        for i, (a, b) in enumerate(zip(k, t)):
            assert_same(a, b, f"{where}[{i}]")
        return
    if hasattr(t, "shape"):
        assert isinstance(k, kn.Tensor), (where, type(k))
        assert tuple(k.shape) == tuple(t.shape), (where, tuple(k.shape), tuple(t.shape))
        assert _dtype_name(k.dtype) == _dtype_name(t.dtype), (where, k.dtype, t.dtype)
        kv, tv = to_numpy(k), to_numpy(t)
        if tv.dtype.kind in "fc":
            np.testing.assert_allclose(kv, tv, rtol=1e-5, atol=1e-6, err_msg=where)
        else:
            np.testing.assert_array_equal(kv, tv, err_msg=where)
        return
    if hasattr(t, "is_floating_point") or type(t).__name__ == "dtype":
        assert _dtype_name(k) == _dtype_name(t), (where, k, t)
        return
    assert type(k) is type(t), (where, k, t)
    assert k == t or (k != k and t != t), (where, k, t)


def outcome(lib, fn, inputs, wrap=None):
    """(result, None) or (None, the exception) of `fn` on `lib`'s tensors of `inputs`."""
    try:
        args = [lib.tensor(x) for x in inputs]
        return (wrap(lambda *a: fn(lib, *a)) if wrap else lambda *a: fn(lib, *a))(*args), None
    except Exception as error:  # noqa: BLE001 -- the exception is the result compared
        return None, error


# -- dims: None, int, negative, tuple, (), keepdim ------------------------------------------


@case("all_any_empty_dims_reduce_nothing", A)
def _(lib, x):
    # an empty dim list reduces no dim in all/any: each element's truth (sum reduces all)
    return (lib.all(x, ()), lib.any(x, (), keepdim=True), x.all(dim=[]), lib.sum(x, ()))


@case("all_any_empty_dims_uint8", U8)
def _(lib, x):
    return lib.all(x, ()), lib.any(x, dim=()), lib.all(x, (0,)), lib.any(x, (0, 1))


@case("all_any_empty_dims_0d", SCALAR)
def _(lib, x):
    return lib.all(x, ()), lib.any(x, (), keepdim=True)


# -- searchsorted, bucketize, isin, histc ---------------------------------------------------

SEQ = np.array([1, 3, 3, 5, 7], f32)
VALUES = np.array([[3, 6, 9], [0, 7, 3]], f32)
ODD = np.array([0, 3, nan, 10, -inf, inf], f32)


@case("searchsorted_sides", SEQ, VALUES)
def _(lib, seq, v):
    return (lib.searchsorted(seq, v), lib.searchsorted(seq, v, right=True),
            lib.searchsorted(seq, v, side="right"), lib.searchsorted(seq, v, side="left"),
            lib.searchsorted(seq, v, out_int32=True), lib.searchsorted(seq, 3),
            lib.searchsorted(seq, 3.0, right=True, out_int32=True))  # fmt: skip


@case("searchsorted_batched", np.array([[1, 3, 5, 7, 9], [2, 2, 4, 6, 8]], f32), VALUES)
def _(lib, seq, v):
    return lib.searchsorted(seq, v), lib.searchsorted(seq, v, right=True)


@case("searchsorted_sorter", np.array([5, 1, 3, 3, 7], f32), np.array([1, 2, 3, 0, 4]), VALUES)
def _(lib, seq, order, v):
    return lib.searchsorted(seq, v, sorter=order), lib.searchsorted(seq, v, side="right",
                                                                      sorter=order)  # fmt: skip


@case("searchsorted_nan_values", SEQ, ODD)
def _(lib, seq, v):
    return lib.searchsorted(seq, v), lib.searchsorted(seq, v, right=True)


@case("searchsorted_nan_sequence", np.array([1, 3, nan, nan], f32), ODD)
def _(lib, seq, v):
    # NaNs end a sorted sequence; PyTorch's binary search probes them first here (not at or
    # above any value: it moves right past them), so every value lands at the end
    return lib.searchsorted(seq, v), lib.searchsorted(seq, v, side="right")


@case("searchsorted_nan_sequence_long", np.array([-2, 1, 2, 4, 5, 8, nan], f32), ODD)
def _(lib, seq, v):
    return lib.searchsorted(seq, v), lib.searchsorted(seq, v, right=True)


@case("searchsorted_unsorted_sequence", np.array([5, 1, 4, 2, 3, 0, 6], f32), VALUES)
def _(lib, seq, v):
    # not sorted: PyTorch's answer is its binary search's, which kiln follows
    return lib.searchsorted(seq, v), lib.searchsorted(seq, v, right=True)


@case("searchsorted_mixed_dtypes", np.array([1, 3, 5], np.int32), np.array([2.5, 3.0], f32))
def _(lib, seq, v):
    return lib.searchsorted(seq, v), lib.searchsorted(seq.float(), v.int())


@case("searchsorted_empty", np.zeros(0, f32), VALUES)
def _(lib, seq, v):
    return lib.searchsorted(seq, v), lib.searchsorted(v[0], seq)


@case("searchsorted_side_conflict", SEQ, VALUES, compiled=False)
def _(lib, seq, v):
    return lib.searchsorted(seq, v, right=True, side="left")


@case("searchsorted_side_unknown", SEQ, VALUES, compiled=False)
def _(lib, seq, v):
    return lib.searchsorted(seq, v, side="middle")


@case("searchsorted_leading_dims_differ", np.array([[1, 3, 5], [2, 4, 6]], f32),
      np.array([[3, 4]], f32), compiled=False)  # fmt: skip
def _(lib, seq, v):
    return lib.searchsorted(seq, v)


@case("searchsorted_scalar_in_batched", np.array([[1, 3, 5], [2, 4, 6]], f32), compiled=False)
def _(lib, seq):
    return lib.searchsorted(seq, 3.0)


@case("searchsorted_0d_sequence", np.array(3, f32), VALUES, compiled=False)
def _(lib, seq, v):
    return lib.searchsorted(seq, v)


@case("searchsorted_sorter_int32", SEQ, np.arange(5, dtype=np.int32), VALUES, compiled=False)
def _(lib, seq, order, v):
    return lib.searchsorted(seq, v, sorter=order)


@case("bucketize", VALUES, SEQ)
def _(lib, v, b):
    return (lib.bucketize(v, b), lib.bucketize(v, b, right=True),
            lib.bucketize(v, b, out_int32=True), lib.bucketize(3, b),
            lib.bucketize(v[0, 0], b))  # fmt: skip


@case("bucketize_nan", ODD, np.array([1, 3, nan], f32))
def _(lib, v, b):
    return lib.bucketize(v, b), lib.bucketize(v, b, right=True)


@case("isin", VALUES, SEQ)
def _(lib, a, b):
    return (lib.isin(a, b), lib.isin(a, b, invert=True), lib.isin(a, 3.0), lib.isin(3.0, b),
            lib.isin(a, b[:0]), lib.isin(a[:, :0], b), lib.isin(a.long(), b))  # fmt: skip


@case("isin_nan", ODD, ODD)
def _(lib, a, b):
    return lib.isin(a, b), lib.isin(a, b, assume_unique=True)


@case("histc", np.array([1, 2, 1, 4, 2.5, 3, 0, -1], f32))
def _(lib, x):
    return (lib.histc(x, 4), lib.histc(x, 5, min=0, max=3), lib.histc(x[:0], 3),
            lib.histc(x[:1].expand(3), 3), lib.histc(x.double(), 3, 0, 3))  # fmt: skip


@case("histc_nonfinite_outside_range", ODD)
def _(lib, x):
    return lib.histc(x, 3, min=0, max=5)


@case("histc_inverted_range", SEQ, compiled=False)
def _(lib, x):
    return lib.histc(x, 3, min=2, max=1)


# -- the test ----------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["eager", "compiled"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_torch(torch, name, mode):
    fn, inputs, compiled = CASES[name]
    if mode == "compiled" and not compiled:
        pytest.skip("an eager-only scenario (data-dependent shapes or a refusal)")
    want, torch_error = outcome(torch, fn, inputs)
    if mode == "compiled" and torch_error is not None:
        pytest.skip("torch refuses it: the eager run compares the exception")
    got, kiln_error = outcome(kn, fn, inputs, kn.compile if mode == "compiled" else None)
    if torch_error is not None:
        assert isinstance(kiln_error, type(torch_error)), (
            f"torch raised {type(torch_error).__name__}: {torch_error}; kiln: "
            f"{type(kiln_error).__name__ if kiln_error else got}"
        )
        return
    if kiln_error is not None:
        raise kiln_error
    assert_same(got, want)
