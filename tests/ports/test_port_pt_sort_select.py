"""PyTorch's own sort and select tests (test_sort_and_select.py, and test_reductions.py's
searchsorted/bucketize/histogram ones) as an oracle, as test_port_pt_reductions.py does for the
reductions (pt_oracle.py runs each scenario on torch and on kiln, eagerly and under
`kn.compile`): stable sorts with NaNs and signed zeros, argsort and msort, topk's options, k=0
and nonfinite values, unique and unique_consecutive (dims, inverse, counts, scalar and empty
inputs), searchsorted's sides, sorters, batches and NaNs, bucketize, isin, histc, histogram and
histogramdd.

Expected values: torch 2.13 (the oracle). Which of equal values topk picks PyTorch leaves
unspecified (its CPU selection algorithm's): those scenarios return `input.gather(dim,
indices)` instead of the indices.
"""

import numpy as np
import pytest
from pt_oracle import MODES, Scenarios

nan, inf = float("nan"), float("inf")
f32 = np.float32

SCALAR = np.array(2.5, f32)
TIES = np.array([[3, 1, 3, 1], [2, 2, 2, 2], [0, 1, 0, 1]], f32)

SCENARIOS = Scenarios()
case = SCENARIOS.case


# -- sort, argsort, msort, topk --------------------------------------------------------------

WITH_NANS = np.array([nan, 1, nan, 0, 1, -0.0, 0.0, -inf, inf], f32)


@case("sort_stable_nans_last", WITH_NANS)
def _(lib, x):
    # stable: equal values (and NaNs, which go last ascending and first descending) keep
    # their order; -0.0 and 0.0 are equal
    return (lib.sort(x, stable=True), lib.sort(x, stable=True, descending=True),
            lib.argsort(x, stable=True), lib.argsort(x, dim=0, descending=True, stable=True),
            x.sort(stable=True, dim=-1).indices, lib.msort(x).isnan())  # fmt: skip


@case("sort_stable_binary", np.array([0, 1] * 100, np.int8), np.array([True, False] * 3))
def _(lib, x, b):
    return (lib.sort(x, stable=True).indices, lib.sort(x.float(), stable=True).indices,
            lib.sort(b, stable=True, descending=True),
            lib.sort(x.to(lib.uint8), stable=True))  # fmt: skip


@case("sort_dims", np.array([[3, nan, 1], [2, 2, -1]], f32), SCALAR)
def _(lib, x, scalar):
    return (lib.sort(x, dim=0, stable=True), lib.sort(x, dim=-1, descending=True, stable=True),
            lib.msort(x.T), lib.sort(scalar), lib.argsort(scalar), lib.msort(scalar),
            lib.sort(x[:, :0], stable=True), lib.sort(x.T, dim=0, stable=True).values)  # fmt: skip


@case("sort_dim_out_of_range", SCALAR)
def _(lib, x):
    return lib.sort(x, 1)


@case("topk_options", np.array([[5, 1, 4, 2, 3], [0, 9, 8, 7, 6]], f32))
def _(lib, x):
    return (lib.topk(x, 2), lib.topk(x, 3, largest=False), lib.topk(x, 1, 0),
            lib.topk(x, 2, sorted=True), lib.topk(x, 0), lib.topk(x, 0, largest=False),
            lib.topk(x, 5, dim=-1, largest=False), lib.topk(x.long(), 2))  # fmt: skip


@case("topk_nonfinite", np.array([nan, inf, 1e4, 0, -1e4, -inf], f32))
def _(lib, x):
    return lib.topk(x, 4), lib.topk(x, 4, largest=False), lib.topk(x, 6, largest=False)


@case("topk_ties_pick_equal_values", TIES)
def _(lib, x):
    # PyTorch leaves which of equal values topk/kthvalue pick unspecified: the values picked
    out = []
    for k, largest in ((1, True), (2, True), (2, False), (3, False)):
        values, indices = lib.topk(x, k, largest=largest)
        out += [values, x.gather(1, indices)]
    for k in (1, 2, 3):
        values, indices = lib.kthvalue(x, k, 0)
        out += [values, x.gather(0, indices[None])]
    return out


@case("topk_k_out_of_range", np.array([1, 3, 2], f32))
def _(lib, x):
    return lib.topk(x, 4)


@case("topk_negative_k", np.array([1, 3, 2], f32))
def _(lib, x):
    return lib.topk(x, -1)


@case("topk_bool_dim", np.array([[1, 3], [3, 1]], f32))
def _(lib, x):
    return lib.topk(x, 1, True)


# -- unique, unique_consecutive ------------------------------------------------------------

BLOCKS = np.array([[[1, 1], [0, 1], [2, 1], [0, 1]], [[1, 1], [0, 1], [2, 1], [0, 1]]], f32)
ROWS = np.array([[0, 1], [0, 1], [0, 1], [1, 2], [1, 2], [3, 4], [0, 1], [0, 1], [3, 4], [1, 2]])


@case("unique_flat", np.array([1, 2, 3, 2, 8, 5, 2, 3]))
def _(lib, x):
    return (lib.unique(x), lib.unique(x, return_inverse=True), lib.unique(x, return_counts=True),
            lib.unique(x.view(2, 2, 2), return_inverse=True, return_counts=True),
            x.unique(sorted=True, return_counts=True), lib.unique(x.to(lib.uint8)),
            lib.unique(x > 2, return_inverse=True, return_counts=True))  # fmt: skip


@case("unique_dims", BLOCKS, ROWS)
def _(lib, x, rows):
    out = []
    for t in (x, x.long(), x.bool(), rows, rows.to(lib.uint8)):
        for dim in range(t.ndim):
            out.append(lib.unique(t, dim=dim, return_inverse=True, return_counts=True))
        out.append(lib.unique_consecutive(t, dim=0, return_inverse=True, return_counts=True))
    return out


@case("unique_consecutive", np.array([1, 2, 2, 2, 5, 5, 2, 2, 3]))
def _(lib, x):
    return (lib.unique_consecutive(x), lib.unique_consecutive(x, return_counts=True),
            lib.unique_consecutive(x.view(3, 3), return_inverse=True, return_counts=True),
            x.unique_consecutive(return_inverse=True), lib.unique_consecutive(x > 2),
            lib.unique_consecutive(x.view(3, 3), dim=1))  # fmt: skip


@case("unique_scalar_and_empty", SCALAR, np.zeros((0, 0, 3), f32))
def _(lib, scalar, empty):
    out = []
    for t in (scalar, empty):
        out.append(lib.unique(t, return_inverse=True, return_counts=True))
        out.append(lib.unique(t, sorted=False, return_inverse=True, return_counts=True))
        out.append(lib.unique_consecutive(t, return_inverse=True, return_counts=True))
    out.append(lib.unique(empty[0], dim=0, return_inverse=True, return_counts=True))
    return out


@case("unique_nans_and_zeros", WITH_NANS)
def _(lib, x):
    return (lib.unique(x, return_inverse=True, return_counts=True),
            lib.unique_consecutive(x[[0, 0, 1, 1, 5, 6]], return_counts=True))  # fmt: skip


@case("unique_empty_dim_not_selected", np.zeros((5, 0), f32))
def _(lib, x):
    return lib.unique(x, dim=0)


@case("unique_two_empty_dims", np.zeros((5, 0, 0), f32))
def _(lib, x):
    return lib.unique(x, dim=1, return_inverse=True, return_counts=True)


@case("unique_consecutive_empty_dim_not_selected", np.zeros((5, 0, 5), f32))
def _(lib, x):
    return lib.unique_consecutive(x, dim=2)


@case("unique_dim_of_scalar", SCALAR)
def _(lib, x):
    return lib.unique(x, dim=0)


@case("unique_consecutive_dim_of_scalar", SCALAR)
def _(lib, x):
    return lib.unique_consecutive(x, dim=-1)


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


@case("searchsorted_side_conflict", SEQ, VALUES)
def _(lib, seq, v):
    return lib.searchsorted(seq, v, right=True, side="left")


@case("searchsorted_side_unknown", SEQ, VALUES)
def _(lib, seq, v):
    return lib.searchsorted(seq, v, side="middle")


@case("searchsorted_leading_dims_differ", np.array([[1, 3, 5], [2, 4, 6]], f32),
      np.array([[3, 4]], f32))  # fmt: skip
def _(lib, seq, v):
    return lib.searchsorted(seq, v)


@case("searchsorted_scalar_in_batched", np.array([[1, 3, 5], [2, 4, 6]], f32))
def _(lib, seq):
    return lib.searchsorted(seq, 3.0)


@case("searchsorted_0d_sequence", np.array(3, f32), VALUES)
def _(lib, seq, v):
    return lib.searchsorted(seq, v)


@case("searchsorted_sorter_int32", SEQ, np.arange(5, dtype=np.int32), VALUES)
def _(lib, seq, order, v):
    return lib.searchsorted(seq, v, sorter=order)


@case("searchsorted_sorter_out_of_range", SEQ, np.array([-1, 1, 2, 3, 4]))
def _(lib, seq, order):
    return lib.searchsorted(seq, 2.5, sorter=order)


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


@case("histc_of_equal_values_past_float_resolution", np.full(3, 3.0, f32))
def _(lib, x):
    # widening the range by 1 each way changes nothing at 1e8 or finfo.max in float32;
    # torch's own test pins only that every element is counted
    big = x * 0 + np.finfo(np.float32).max
    return (lib.histc(x, 4), lib.histc(x * 1e8 / 3, 4), lib.histc(big, 4).sum(),
            lib.histc(-big, 4).sum(), lib.histc(big.double(), 5).sum())  # fmt: skip


@case("histogramdd_edges", np.array([[0.5, 0.2], [1.5, -1], [0.1, 0.9]], f32))
def _(lib, x):
    # the edges a given range makes are tensors (in a tuple, as PyTorch's)
    out = lib.histogramdd(x, [2, 3], range=[0.0, 2.0, -1.0, 1.0])
    data = lib.histogramdd(x, 2, density=True)
    return out, data, type(out.bin_edges).__name__, lib.histogram(x[:, 0], 2, range=(0.0, 1.0))


@case("histogramdd_of_points_of_no_coordinates", np.zeros((5, 0), f32))
def _(lib, x):
    return lib.histogramdd(x, []), lib.histogramdd(x, 3, density=True)


@case("histogram_inverted_range", np.array([0.5, 0.2], f32))
def _(lib, x):
    return lib.histogram(x, 2, range=(1.0, 0.0))


@case("histogramdd_inverted_range", np.array([[0.5, 0.2]], f32))
def _(lib, x):
    return lib.histogramdd(x, 2, range=[0.0, 1.0, 1.0, 0.0])


@case("histogramdd_weight_of_another_dtype", np.array([[0.5, 0.2]], f32))
def _(lib, x):
    return lib.histogramdd(x, 2, weight=lib.ones(1, dtype=lib.float64))


@case("histogramdd_weight_of_another_shape", np.array([[0.5, 0.2], [0.1, 0.3]], f32))
def _(lib, x):
    return lib.histogramdd(x, 2, weight=lib.ones(3))


@case("histogramdd_edges_of_another_dtype", np.array([[0.5, 0.2]], f32))
def _(lib, x):
    return lib.histogramdd(x, [lib.tensor([0.0, 1.0], dtype=lib.float64)] * 2)


@case("histogram_bins_of_another_dtype", np.array(1.0, f32))
def _(lib, x):
    return lib.histogram(x, x.double())


@case("histogram_weight_of_another_dtype", np.array([1.0, 2.0], f32))
def _(lib, x):
    return lib.histogram(x, 2, weight=x.double())


@case("histogram_bins_of_two_dims", np.ones((2, 2), f32))
def _(lib, x):
    return lib.histogram(x, x)


@case("histogram_edges_and_range", np.array([0.0, 1.0], f32))
def _(lib, x):
    return lib.histogram(x, x, range=(0.0, 1.0))


@case("histc_of_ints", np.array([1, 2, 3]))
def _(lib, x):
    return lib.histc(x, 3)


@case("histc_of_complex", np.array([1 + 1j, 2]))
def _(lib, x):
    return lib.histc(x, 3)


@case("histc_inverted_range", SEQ)
def _(lib, x):
    return lib.histc(x, 3, min=2, max=1)


# -- the test ----------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", SCENARIOS.names())
def test_matches_torch(torch, name, mode):
    SCENARIOS.check(torch, name, mode)
