"""PyTorch's own pooling tests (test/nn/test_pooling.py) as an oracle: each behaviour they
check, written as a scenario of its own (pt_oracle.py runs it on torch and on kiln, eagerly and
under `kn.compile`, and compares values, dtypes, shapes, indices and exception types): max and
average pools 1d/2d/3d (ceil_mode, count_include_pad, divisor_override, dilation,
return_indices, the padding limit, unbatched inputs), max_unpool, adaptive pools (sizes that do
not divide, None in output_size, return_indices), lp_pool, fractional max pools (with given
samples); the gradients, with ties (which element gets it) and NaN inputs; the errors of bad
sizes. test_port_pt_convpool_conv.py has the convolutions'.

Expected values: torch 2.13 (the oracle); floats within rtol 1e-5.
"""

import numpy as np
import pytest
from pt_convpool_common import arr, assert_torch_runs, f32, f64, grads
from pt_oracle import MODES, Leaf, Scenarios

SCENARIOS = Scenarios()
case = SCENARIOS.case
nan, inf = float("nan"), float("inf")

TIES = np.array([[[[1, 1, 2, 2], [1, 1, 2, 2], [3, 0, 3, 3], [0, 3, 3, 3]]]], f32)
NANS = np.array([[[[1, nan, 2, 0], [3, 4, nan, nan], [-inf, -inf, 5, inf], [0, 0, 1, 1]]]], f32)


def F(lib):
    return lib.nn.functional


# -- max pools ---------------------------------------------------------------------------------


@case("max_pool1d_options", arr(2, 3, 11))
def _(lib, x):
    f = F(lib)
    return (f.max_pool1d(x, 3), f.max_pool1d(x, 3, 2, 1), f.max_pool1d(x, 2, 3, 1, 2),
            f.max_pool1d(x, 4, 3, 2, 1, ceil_mode=True), f.max_pool1d(x[0], 2),
            f.max_pool1d(x, 3, 2, 1, 3, return_indices=True),
            f.max_pool1d(x, 3, 4, ceil_mode=True, return_indices=True))  # fmt: skip


@case("max_pool2d_options", arr(2, 3, 7, 8))
def _(lib, x):
    f = F(lib)
    return (f.max_pool2d(x, 2), f.max_pool2d(x, (3, 2), (2, 3), (1, 1), (1, 2)),
            f.max_pool2d(x, 3, 2, 1, ceil_mode=True, return_indices=True),
            f.max_pool2d(x[0], (2, 3), return_indices=True),
            f.max_pool2d(x, 2, stride=[1, 2], padding=(0, 1), dilation=(2, 1)))  # fmt: skip


@case("max_pool3d_options", arr(1, 2, 5, 6, 7))
def _(lib, x):
    f = F(lib)
    return (f.max_pool3d(x, 2), f.max_pool3d(x, (2, 3, 2), (1, 2, 3), (1, 1, 0), (2, 1, 1)),
            f.max_pool3d(x, 3, 2, 1, ceil_mode=True, return_indices=True),
            f.max_pool3d(x[0], 2, return_indices=True))  # fmt: skip


@case("max_pool_ceil_mode_drops_window_starting_in_padding", arr(1, 1, 6, 6))
def _(lib, x):
    # ceil_mode keeps a last window only if it starts inside the input or left padding
    f = F(lib)
    return (
        f.max_pool2d(x, 2, 2, 1, ceil_mode=True),
        f.max_pool1d(x[0], 3, 2, 1, ceil_mode=True),
        f.max_pool2d(x[..., :5, :5], 3, 3, 1, ceil_mode=True, return_indices=True),
    )


@case("max_pool_modules", arr(2, 3, 6, 7))
def _(lib, x):
    nn = lib.nn
    return (nn.MaxPool2d(3, 2, 1, ceil_mode=True)(x), nn.MaxPool1d(2, return_indices=True)(x[0]),
            nn.MaxPool3d((1, 2, 2), dilation=(1, 2, 1))(x[None]),
            nn.MaxPool2d((2, 3), stride=1, padding=1, return_indices=True)(x))  # fmt: skip


@case("max_pool_ties_and_indices", TIES)
def _(lib, x):
    # a tie: the first element of the window (row-major) is the maximum and its index
    f = F(lib)
    return (f.max_pool2d(x, 2, return_indices=True),
            f.max_pool2d(x, 3, 1, 1, return_indices=True),
            f.max_pool1d(x[0, 0], 2, 1, return_indices=True),
            f.adaptive_max_pool2d(x, 3, return_indices=True))  # fmt: skip


@case("max_pool_nans", NANS)
def _(lib, x):
    # a NaN in the window is its maximum, and its index the NaN's
    f = F(lib)
    return (f.max_pool2d(x, 2, return_indices=True), f.max_pool2d(x, 2, 1, 1),
            f.max_pool1d(x[0], 2, return_indices=True),
            f.adaptive_max_pool2d(x, (2, 3), return_indices=True),
            f.max_pool2d(x, 2, 1, dilation=2, return_indices=True))  # fmt: skip


@case("max_pool_infinities_with_padding", np.full((1, 1, 3, 3), -inf, f32))
def _(lib, x):
    # padding counts as -inf: an all -inf window holds -inf, its index one in the input
    return F(lib).max_pool2d(x, 2, 1, 1, return_indices=True)


@case("max_pool_integers", (np.arange(60).reshape(1, 3, 4, 5) % 7).astype(np.int64))
def _(lib, x):
    f = F(lib)
    return (f.max_pool2d(x, 2), f.max_pool2d(x.to(lib.int32), 3, 1, 1, return_indices=True),
            f.max_pool3d(x[None].to(lib.uint8), (1, 2, 2)))  # fmt: skip


@case("max_pool_float64", arr(1, 2, 5, 6, dtype=f64))
def _(lib, x):
    f = F(lib)
    return f.max_pool2d(x, 2, return_indices=True), f.max_pool1d(x[0], 3, 1, 1)


@case("max_pool_padding_over_half_kernel_refused", arr(1, 2, 6, 6))
def _(lib, x):
    return F(lib).max_pool2d(x, 2, padding=2)


@case("max_pool1d_padding_over_half_kernel_refused", arr(1, 2, 6))
def _(lib, x):
    return F(lib).max_pool1d(x, 3, padding=2)


@case("max_pool_padding_half_dilated_kernel_refused", arr(1, 2, 9))
def _(lib, x):
    # the limit is half the kernel, not of the dilated window
    return F(lib).max_pool1d(x, 2, padding=2, dilation=3)


@case("max_pool_output_empty_refused", arr(1, 2, 3, 3))
def _(lib, x):
    return F(lib).max_pool2d(x, 4)


@case("max_pool_dilated_window_too_big_refused", arr(1, 2, 5))
def _(lib, x):
    return F(lib).max_pool1d(x, 3, dilation=3)


@case("max_pool_zero_stride_refused", arr(1, 2, 5, 5))
def _(lib, x):
    return F(lib).max_pool2d(x, 2, stride=0)


@case("max_pool_zero_kernel_refused", arr(1, 2, 5, 5))
def _(lib, x):
    return F(lib).max_pool2d(x, 0)


@case("max_pool_negative_padding_refused", arr(1, 2, 5, 5))
def _(lib, x):
    return F(lib).max_pool2d(x, 2, padding=-1)


@case("max_pool_wrong_rank_refused", arr(2, 5))
def _(lib, x):
    return F(lib).max_pool2d(x, 2)


@case("max_pool_empty_batch", np.zeros((0, 2, 4, 4), f32), np.zeros((1, 0, 4, 4), f32))
def _(lib, x, c0):
    # an empty batch pools to an empty batch; no channels: adaptive_avg_pool2d's alone
    f = F(lib)
    return (f.max_pool2d(x, 2), f.avg_pool2d(x, 2), f.adaptive_avg_pool2d(x, 3),
            f.adaptive_max_pool2d(x, 3), f.adaptive_avg_pool2d(c0, 3))  # fmt: skip


@case("max_pool_no_channels_refused", np.zeros((1, 0, 4, 4), f32))
def _(lib, x):
    return F(lib).max_pool2d(x, 2)


@case("avg_pool_no_channels_refused", np.zeros((1, 0, 4), f32))
def _(lib, x):
    return F(lib).avg_pool1d(x, 2)


@case("max_pool3d_unbatched_no_channels_refused", np.zeros((0, 4, 4, 4), f32))
def _(lib, x):
    return F(lib).max_pool3d(x, 2)


@case("adaptive_max_pool_no_channels_refused", np.zeros((1, 0, 4, 4), f32))
def _(lib, x):
    return F(lib).adaptive_max_pool2d(x, 2)


@case("max_pool_empty_spatial_refused", np.zeros((1, 2, 0, 4), f32))
def _(lib, x):
    return F(lib).max_pool2d(x, 1)


# -- average pools -----------------------------------------------------------------------------


@case("avg_pool1d_options", arr(2, 3, 10))
def _(lib, x):
    f = F(lib)
    return (f.avg_pool1d(x, 3), f.avg_pool1d(x, 3, 2, 1), f.avg_pool1d(x, 3, 2, 1, True),
            f.avg_pool1d(x, 3, 2, 1, True, False), f.avg_pool1d(x, 4, 3, 2, False, False),
            f.avg_pool1d(x[0], 2), f.avg_pool1d(x, 1, 2, ceil_mode=True))  # fmt: skip


@case("avg_pool2d_options", arr(2, 3, 7, 6))
def _(lib, x):
    f = F(lib)
    return (f.avg_pool2d(x, 2), f.avg_pool2d(x, (3, 2), (2, 1), (1, 1)),
            f.avg_pool2d(x, 3, 2, 1, ceil_mode=True),
            f.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
            f.avg_pool2d(x, 3, 2, 1, divisor_override=2),
            f.avg_pool2d(x, 2, 3, 1, True, False, divisor_override=5),
            f.avg_pool2d(x[0], (2, 3)), f.avg_pool2d(x, (1, 2), 2, (0, 1), True, True))  # fmt: skip


@case("avg_pool3d_options", arr(1, 2, 5, 6, 4))
def _(lib, x):
    f = F(lib)
    return (f.avg_pool3d(x, 2), f.avg_pool3d(x, (3, 2, 2), (2, 1, 2), (1, 1, 0)),
            f.avg_pool3d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
            f.avg_pool3d(x, 2, 2, 1, divisor_override=3), f.avg_pool3d(x[0], (1, 2, 3)),
            f.avg_pool3d(x, (1, 2, 3), 2, ceil_mode=True))  # fmt: skip


@case("avg_pool_ceil_mode_last_window_counts", arr(1, 1, 5, 5))
def _(lib, x):
    # the last window of ceil_mode runs past the padding: only the padded part is counted
    f = F(lib)
    return (f.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=True),
            f.avg_pool2d(x, 2, 2, 1, ceil_mode=True),
            f.avg_pool1d(x[0], 2, 2, 1, ceil_mode=True))  # fmt: skip


@case("avg_pool_modules", arr(2, 3, 6, 7))
def _(lib, x):
    nn = lib.nn
    return (nn.AvgPool2d(3, 2, 1, ceil_mode=True, count_include_pad=False)(x),
            nn.AvgPool1d(2, padding=1)(x[0]), nn.AvgPool3d((1, 2, 2), divisor_override=3)(x[None]),
            nn.AvgPool2d(2, divisor_override=1)(x))  # fmt: skip


@case("avg_pool_nans_and_infinities", NANS)
def _(lib, x):
    f = F(lib)
    return f.avg_pool2d(x, 2), f.avg_pool2d(x, 2, 1, 1, count_include_pad=False)


@case("avg_pool_float64", arr(1, 2, 5, 6, dtype=f64))
def _(lib, x):
    f = F(lib)
    return f.avg_pool2d(x, 2, divisor_override=3), f.avg_pool1d(x[0], 3, 1, 1)


@case("avg_pool3d_input_smaller_than_kernel_refused", arr(1, 1, 1, 4, 4))
def _(lib, x):
    # avg_pool3d alone (not 1d/2d, nor max_pool3d) wants the kernel inside the unpadded input
    return F(lib).avg_pool3d(x, 2, 1, 1)


@case("pools_of_inputs_smaller_than_kernel_padded", arr(1, 1, 1, 4, 4), Leaf.of(arr(1, 1, 1, 4)))
def _(lib, x3, x2):
    f = F(lib)
    y = f.avg_pool2d(x2, 2, 1, 1), f.max_pool2d(x2, 2, 1, 1), f.avg_pool1d(x2[0], 3, 1, 1)
    return f.max_pool3d(x3, 2, 1, 1, return_indices=True), grads(lib, y, x2)


@case("lp_pool3d_input_smaller_than_kernel_refused", np.abs(arr(1, 1, 1, 4, 4)))
def _(lib, x):
    return F(lib).lp_pool3d(x, 2, (2, 1, 1))


@case("avg_pool_divisor_zero_refused", arr(1, 2, 4, 4))
def _(lib, x):
    return F(lib).avg_pool2d(x, 2, divisor_override=0)


@case("avg_pool_padding_over_half_kernel_refused", arr(1, 2, 6, 6))
def _(lib, x):
    return F(lib).avg_pool2d(x, 3, padding=2)


@case("avg_pool1d_padding_over_half_kernel_refused", arr(1, 2, 6))
def _(lib, x):
    return F(lib).avg_pool1d(x, 2, padding=2)


@case("avg_pool_output_empty_refused", arr(1, 2, 3, 3))
def _(lib, x):
    return F(lib).avg_pool2d(x, (2, 4))


@case("avg_pool_integers", (np.arange(32).reshape(1, 2, 4, 4) * 7 % 5).astype(np.int64))
def _(lib, x):
    # int64 averages divide with truncation
    f = F(lib)
    return f.avg_pool2d(x, 2), f.avg_pool2d(x, 3, 1, 1), f.avg_pool1d(x[0], 3, 2, 1, True, False)


@case("avg_pool_int32_refused", np.ones((1, 2, 4, 4), np.int32))
def _(lib, x):
    return F(lib).avg_pool2d(x, 2)


# -- adaptive pools ----------------------------------------------------------------------------


@case("adaptive_avg_pools", arr(2, 3, 7, 5))
def _(lib, x):
    f = F(lib)
    return (f.adaptive_avg_pool2d(x, 3), f.adaptive_avg_pool2d(x, (4, None)),
            f.adaptive_avg_pool2d(x, (None, 2)), f.adaptive_avg_pool2d(x, (10, 11)),
            f.adaptive_avg_pool1d(x[0], 4), f.adaptive_avg_pool1d(x[:, :, 0], 1),
            f.adaptive_avg_pool3d(x[None], (2, None, 3)), f.adaptive_avg_pool2d(x[0], 1),
            f.adaptive_avg_pool3d(x, 2))  # fmt: skip


@case("adaptive_max_pools", arr(2, 3, 7, 5))
def _(lib, x):
    f = F(lib)
    return (f.adaptive_max_pool2d(x, 3), f.adaptive_max_pool2d(x, (4, None), True),
            f.adaptive_max_pool2d(x, (10, 11), return_indices=True),
            f.adaptive_max_pool1d(x[0], 4, True), f.adaptive_max_pool1d(x[:, :, 0], 1),
            f.adaptive_max_pool3d(x[None], (2, None, 3), True),
            f.adaptive_max_pool2d(x[0], 2, return_indices=True),
            f.adaptive_max_pool3d(x, 2, return_indices=True))  # fmt: skip


@case("adaptive_avg_pool_nans_and_infinities_stay_in_their_windows", NANS, Leaf.of(NANS[0, 0]))
def _(lib, x, x2):
    # windows that do not hold the NaN or the infinity keep finite means (gradients: no NaN
    # leaks either), whether windows overlap, divide the size, or are the whole input
    f = F(lib)
    y = (f.adaptive_avg_pool2d(x2[None], (3, 2)), f.adaptive_avg_pool2d(x2[None], 2),
         f.adaptive_avg_pool1d(x2, 3), f.adaptive_avg_pool2d(x2[None], (1, 3)))  # fmt: skip
    return (f.adaptive_avg_pool2d(x, (3, 2)), f.adaptive_avg_pool3d(x[None], (1, 3, 3)),
            f.adaptive_avg_pool1d(x[0], 1), grads(lib, y, x2))  # fmt: skip


@case("adaptive_pool1d_none_size_type_error", arr(1, 2, 5))
def _(lib, x):
    return F(lib).adaptive_max_pool1d(x, [None])


@case("adaptive_avg_pool1d_none_size_type_error", arr(1, 2, 5))
def _(lib, x):
    return F(lib).adaptive_avg_pool1d(x, None)


@case("adaptive_pool_modules", arr(4, 4, 4, 4))
def _(lib, x):
    nn = lib.nn
    return (nn.AdaptiveMaxPool2d((2, None))(x), nn.AdaptiveAvgPool3d((2, 2, None))(x),
            nn.AdaptiveMaxPool3d((None, 3, 2), return_indices=True)(x),
            nn.AdaptiveAvgPool1d(3)(x[0, 0]), nn.AdaptiveMaxPool1d(5, True)(x[0]))  # fmt: skip


@case("adaptive_pool_float64", arr(1, 2, 5, 6, dtype=f64))
def _(lib, x):
    f = F(lib)
    return f.adaptive_avg_pool2d(x, 4), f.adaptive_max_pool2d(x, (2, 4), True)


@case("adaptive_max_pool_integers_refused", np.ones((1, 2, 5, 6), np.int64))
def _(lib, x):
    return F(lib).adaptive_max_pool2d(x, 3)


@case("adaptive_pool_zero_output_is_empty", arr(1, 2, 4, 4))
def _(lib, x):
    f = F(lib)
    return (f.adaptive_avg_pool2d(x, (0, 2)), f.adaptive_max_pool2d(x, 0, return_indices=True),
            f.adaptive_avg_pool1d(x[0], 0), f.adaptive_max_pool2d(x[0], (3, 0)))  # fmt: skip


@case("adaptive_pool_negative_output_refused", arr(1, 2, 4, 4))
def _(lib, x):
    return F(lib).adaptive_avg_pool2d(x, (2, -1))


@case("adaptive_pool_size_of_wrong_length_refused", arr(1, 2, 4, 4))
def _(lib, x):
    return F(lib).adaptive_avg_pool2d(x, (2, 2, 2))


@case("adaptive_pool_empty_spatial_refused", np.zeros((1, 2, 0, 4), f32))
def _(lib, x):
    return F(lib).adaptive_avg_pool2d(x, 2)


@case("adaptive_pool_wrong_rank_refused", arr(4, 4))
def _(lib, x):
    return F(lib).adaptive_max_pool2d(x, 2)


@case("adaptive_avg_pool_integer_refused", np.ones((1, 2, 4, 4), np.int64))
def _(lib, x):
    return F(lib).adaptive_avg_pool2d(x, 2)


# -- lp_pool, max_unpool, fractional max pools ---------------------------------------------------


@case("lp_pools", np.abs(arr(2, 3, 6, 7)) + 0.1)
def _(lib, x):
    f = F(lib)
    return (f.lp_pool2d(x, 2, 2), f.lp_pool2d(x, 3, (3, 2), stride=(1, 2)),
            f.lp_pool2d(x, 1.5, 2, ceil_mode=True), f.lp_pool1d(x[0], 2, 3),
            f.lp_pool1d(x[:, 0], 4, 2, 1, True), f.lp_pool3d(x[None], 2, (1, 2, 2)),
            lib.nn.LPPool2d(2, 3, stride=2)(x), f.lp_pool2d(x[0], 2, 2))  # fmt: skip


@case("lp_pool_negative_values", arr(1, 2, 4, 6))
def _(lib, x):
    # p = 2: sqrt(sum(x**2)) does not care about signs; p = 1 is sum(x) (signs kept)
    f = F(lib)
    return f.lp_pool2d(x, 2, 2), f.lp_pool1d(x[0], 1, 3)


@case("max_unpools", arr(2, 3, 6, 8))
def _(lib, x):
    f = F(lib)
    v2, i2 = f.max_pool2d(x, 2, return_indices=True)
    v1, i1 = f.max_pool1d(x[0], 3, 2, 1, return_indices=True)
    v3, i3 = f.max_pool3d(x[None], (1, 2, 2), return_indices=True)
    # (the 1-d maxima may sit at index 7: past the default output length 7, inside 8)
    return (f.max_unpool2d(v2, i2, 2), f.max_unpool2d(v2, i2, 2, output_size=(7, 9)),
            f.max_unpool1d(v1, i1, 3, 2, 1, output_size=[8]),
            f.max_unpool3d(v3, i3, (1, 2, 2)), f.max_unpool2d(v2[0], i2[0], 2),
            lib.nn.MaxUnpool2d(2)(v2, i2, output_size=(2, 3, 6, 9)))  # fmt: skip


@case("max_unpool_output_size_out_of_range_refused", arr(1, 1, 6, 6))
def _(lib, x):
    f = F(lib)
    v, i = f.max_pool2d(x, 3, 2, return_indices=True)
    return f.max_unpool2d(v, i, 3, 2, output_size=(7, 7))


@case("max_unpool_index_out_of_output_refused", arr(1, 1, 6, 6))
def _(lib, x):
    # the maxima of a 6x6 input by 3/2 windows at index >= 25: they do not fit a 5x5 output
    f = F(lib)
    v, i = f.max_pool2d(x, 3, 2, return_indices=True)
    return f.max_unpool2d(v, i.clamp(min=25), 3, 2)


@case("max_unpool_indices_shape_mismatch_refused", arr(1, 1, 4, 4))
def _(lib, x):
    f = F(lib)
    v, i = f.max_pool2d(x, 2, return_indices=True)
    return f.max_unpool2d(v, i[..., :1], 2)


@case("max_unpool_negative_index_refused", arr(1, 3, 2, 2))
def _(lib, v):
    # an index of -1 is no position (PyTorch: "Found an invalid max index"), not the last one
    i = lib.zeros(1, 3, 2, 2, dtype=lib.int64)
    i[0, 0, 0, 0] = -1
    return lib.nn.MaxUnpool2d(2)(v, i)


@case("max_unpool_last_index_fits", arr(1, 3, 4, 5))
def _(lib, v):
    i = lib.zeros(1, 3, 4, 5, dtype=lib.int64)
    i[0, 0, 0, 0] = 2 * 2 * 4 * 5 - 1
    return lib.nn.MaxUnpool2d(2)(v, i)


@case("max_unpool3d_kernel_of_two_refused", np.ones((1, 3, 1, 1, 1), f32))
def _(lib, x):
    return F(lib).max_unpool3d(x, lib.zeros(x.shape, dtype=lib.int64), [1, 1])


@case("max_unpool_output_size_full_shape_and_empty_batch", arr(1, 1, 5), arr(0, 2, 6, 6))
def _(lib, x, e):
    f = F(lib)
    v, i = f.max_pool1d(x, 2, stride=2, return_indices=True)
    ve, ie = f.max_pool2d(e, 2, return_indices=True)
    return (f.max_unpool1d(v, i, 2, stride=2, output_size=x.shape),
            f.max_unpool1d(v, i, 2), f.max_unpool2d(ve, ie, 2))  # fmt: skip


@case("fractional_max_pool_empty_batch_and_output", np.ones((0, 3, 8, 7), f32),
      np.zeros((0, 3, 2), f32), arr(2, 3, 8, 7))  # fmt: skip
def _(lib, e, s0, x):
    f = F(lib)
    return (f.fractional_max_pool2d(e, 3, output_size=(1, 1), _random_samples=s0),
            lib.nn.FractionalMaxPool2d(2, output_size=(0, 1))(x))  # fmt: skip


@case("fractional_max_pool_no_channels_refused", np.ones((1, 0, 8, 7), f32))
def _(lib, x):
    return lib.nn.FractionalMaxPool2d(3, output_ratio=(0.5, 0.5))(x)


@case("fractional_max_pool_samples_of_other_batch_refused", arr(1, 3, 8, 8),
      np.zeros((0, 3, 2), f32))  # fmt: skip
def _(lib, x, s0):
    return F(lib).fractional_max_pool2d(x, 2, output_size=1, _random_samples=s0)


@case("fractional_max_pools", arr(2, 3, 9, 8), np.array([[[0.2, 0.7]] * 3, [[0.9, 0.1]] * 3], f32),
      arr(1, 2, 7, 6, 5), np.array([[[0.3, 0.6, 0.5]] * 2], f32))  # fmt: skip
def _(lib, x, s2, x3, s3):
    f = F(lib)
    return (f.fractional_max_pool2d(x, 2, output_size=(4, 5), _random_samples=s2),
            f.fractional_max_pool2d(x, (3, 2), output_ratio=(0.5, 0.5), return_indices=True,
                                    _random_samples=s2),
            f.fractional_max_pool3d(x3, 2, output_size=(3, 4, 2), _random_samples=s3,
                                    return_indices=True),
            f.fractional_max_pool2d(x[0], 2, output_size=3, _random_samples=s2[:1]))  # fmt: skip


@case("fractional_max_pool_nans_and_ties", Leaf.of(NANS), Leaf.of(TIES),
      np.array([[[0.5, 0.5]]], f32))  # fmt: skip
def _(lib, x, t, s):
    # the same pick as max_pool2d's: the first maximum, the last NaN
    f = F(lib)
    y = (
        f.fractional_max_pool2d(x, 2, output_size=2, _random_samples=s, return_indices=True),
        f.fractional_max_pool2d(t, 2, output_size=3, _random_samples=s, return_indices=True),
    )
    return grads(lib, y, x, t)


@case("fractional_max_pool_output_too_big_refused", arr(1, 2, 5, 5),
      np.array([[[0.5, 0.5]] * 2], f32))  # fmt: skip
def _(lib, x, s):
    return F(lib).fractional_max_pool2d(x, 2, output_size=(5, 5), _random_samples=s)


@case("fractional_max_pool_no_size_refused", arr(1, 2, 5, 5))
def _(lib, x):
    return F(lib).fractional_max_pool2d(x, 2)


@case("pool_module_attributes")
def _(lib):
    nn = lib.nn
    a, m = nn.AvgPool2d(3), nn.MaxPool2d(3, padding=1)
    return (a.kernel_size, a.stride, a.padding, a.ceil_mode, a.count_include_pad,
            a.divisor_override, m.kernel_size, m.stride, m.padding, m.dilation, m.return_indices,
            nn.AdaptiveMaxPool2d((2, None)).output_size, nn.AdaptiveAvgPool1d(3).output_size,
            nn.LPPool2d(2, 3).kernel_size, nn.MaxUnpool2d(2).stride, nn.MaxUnpool1d(3).kernel_size,
            nn.MaxUnpool3d(2, 1, [0, 1, 0]).padding, nn.MaxUnpool2d([2, 3]).stride)  # fmt: skip


@case("top_level_pool_forms", arr(1, 2, 6, 6))
def _(lib, x):
    # torch.adaptive_max_pool1d returns (output, indices); the others as F's
    return (lib.adaptive_max_pool1d(x[0], 3), lib.adaptive_max_pool1d(input=x[0], output_size=2),
            lib.max_pool1d_with_indices(x[0], 2), lib.max_pool2d(x, 2), lib.avg_pool1d(x[0], 2),
            lib.adaptive_avg_pool1d(x[0], 3), lib.max_pool3d(x[None], 2))  # fmt: skip


@case("top_level_adaptive_max_pool1d_has_no_return_indices_type_error", arr(1, 2, 6))
def _(lib, x):
    return lib.adaptive_max_pool1d(x, 3, True)


# -- gradients -----------------------------------------------------------------------------------


@case("max_pool_grads", Leaf.of(arr(2, 2, 7, 6)))
def _(lib, x):
    f = F(lib)
    y = (
        f.max_pool2d(x, 3, 2, 1, ceil_mode=True),
        f.max_pool2d(x, 2, 1, dilation=2),
        f.max_pool1d(x[:, 0], 3, 2, 1),
        f.max_pool3d(x[None], (1, 2, 3), (1, 2, 1), (0, 1, 1)),
    )
    return grads(lib, y, x)


@case("max_pool_grads_ties_overlapping", Leaf.of(TIES))
def _(lib, x):
    # overlapping windows that pick one element each add their gradients there
    f = F(lib)
    y = (f.max_pool2d(x, 2, 1), f.max_pool2d(x, 3, 1, 1), f.max_pool1d(x[0, 0], 2, 1),
         f.adaptive_max_pool2d(x, 3), f.max_pool2d(x, 2, 2))  # fmt: skip
    return grads(lib, y, x)


@case("max_pool_grads_nans", Leaf.of(NANS))
def _(lib, x):
    f = F(lib)
    y = f.max_pool2d(x, 2), f.max_pool2d(x, 2, 1, 1), f.adaptive_max_pool2d(x, (3, 2))
    return grads(lib, y, x)


@case("max_pool_grads_constant_input", Leaf.of(np.ones((1, 1, 4, 4), f32)))
def _(lib, x):
    # all equal: each window gives its gradient to its first element only
    f = F(lib)
    return grads(lib, (f.max_pool2d(x, 2, 1), f.max_pool2d(x, 3, 1, 1, ceil_mode=True)), x)


@case("avg_pool_grads", Leaf.of(arr(2, 2, 7, 6)))
def _(lib, x):
    f = F(lib)
    y = (
        f.avg_pool2d(x, 3, 2, 1, ceil_mode=True),
        f.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
        f.avg_pool2d(x, 2, 1, 1, divisor_override=3),
        f.avg_pool1d(x[:, 0], 3, 2, 1, True),
        f.avg_pool3d(x[None], (1, 2, 3), (1, 2, 1), (0, 1, 1), count_include_pad=False),
    )
    return grads(lib, y, x)


@case("adaptive_pool_grads", Leaf.of(arr(2, 2, 7, 5)))
def _(lib, x):
    f = F(lib)
    y = (
        f.adaptive_avg_pool2d(x, 3),
        f.adaptive_avg_pool2d(x, (10, None)),
        f.adaptive_max_pool2d(x, (4, 3)),
        f.adaptive_avg_pool1d(x[:, 0], 3),
        f.adaptive_max_pool3d(x[None], (1, 2, 4)),
        f.adaptive_avg_pool3d(x[None], 2),
    )
    return grads(lib, y, x)


@case("lp_pool_grads", Leaf.of(np.abs(arr(1, 2, 6, 6)) + 0.1))
def _(lib, x):
    f = F(lib)
    y = f.lp_pool2d(x, 2, 2), f.lp_pool2d(x, 3, 3, 1), f.lp_pool1d(x[:, 0], 1.5, 2)
    return grads(lib, y, x)


@case("max_unpool_grads", Leaf.of(arr(1, 2, 6, 6)))
def _(lib, x):
    f = F(lib)
    v, i = f.max_pool2d(x, 2, return_indices=True)
    return grads(lib, f.max_unpool2d(v * 2, i, 2, output_size=(7, 7)), x)


@case("fractional_max_pool_grads", Leaf.of(arr(1, 2, 8, 8)), np.array([[[0.3, 0.8]] * 2], f32))
def _(lib, x, s):
    f = F(lib)
    return grads(lib, f.fractional_max_pool2d(x, 2, output_size=5, _random_samples=s), x)


@case("pool_float64_grads", Leaf.of(arr(1, 2, 5, 6, dtype=f64)))
def _(lib, x):
    f = F(lib)
    y = f.max_pool2d(x, 2, 1), f.avg_pool2d(x, 3, 1, 1), f.adaptive_avg_pool2d(x, 4)
    return grads(lib, y, x)


# -- second derivatives, forward mode, half precision, big and strided windows ----------------


def _grad_of_grad(lib, y, x):
    (g,) = lib.autograd.grad((y * y).sum(), x, create_graph=True)
    return lib.autograd.grad((g * g).sum(), x)


@case("pool_double_backward", Leaf.of(arr(1, 2, 5, 5, dtype=f64)))
def _(lib, x):
    f = F(lib)
    return (_grad_of_grad(lib, f.max_pool2d(x, 2, 1), x),
            _grad_of_grad(lib, f.avg_pool2d(x, 3, 2, 1), x),
            _grad_of_grad(lib, f.adaptive_avg_pool2d(x, 3), x),
            _grad_of_grad(lib, f.max_pool2d(x, 2, 1, dilation=2), x),
            _grad_of_grad(lib, f.adaptive_max_pool2d(x, 3), x),
            _grad_of_grad(lib, f.max_pool3d(x[None], 2), x))  # fmt: skip


@case("pool_forward_mode_nans_and_ties", NANS, arr(1, 1, 4, 4))
def _(lib, x, t):
    # the tangent of a max is the picked element's: the same pick as the gradient's
    f, fa = F(lib), lib.autograd.forward_ad
    with fa.dual_level():
        d = fa.make_dual(x, t)
        outs = (f.max_pool2d(d, 2), f.max_pool2d(d, 2, 1, 1, return_indices=True)[0],
                f.avg_pool2d(d, 3, 1, 1, count_include_pad=False), f.adaptive_max_pool2d(d, 3),
                f.adaptive_avg_pool2d(d, 3), f.max_pool2d(d, 2, 1, dilation=2))  # fmt: skip
        return [fa.unpack_dual(o).tangent for o in outs]


@case("pool_half_precision", arr(1, 2, 6, 6, dtype=np.float16))
def _(lib, x):
    f = F(lib)
    return (f.max_pool2d(x, 2), f.avg_pool2d(x, 3, 1, 1), f.adaptive_avg_pool2d(x, 3),
            f.adaptive_max_pool2d(x, 3, True), f.lp_pool2d(x, 2, 2),
            f.avg_pool2d(x, 2, count_include_pad=False, padding=1),
            f.max_pool2d(x, 2, 1, 1, 2, return_indices=True))  # fmt: skip


@case("pool_global_windows_grads", Leaf.of(arr(1, 2, 9, 10)))
def _(lib, x):
    # windows of more than 64 taps (another kernel path)
    f = F(lib)
    y = f.max_pool2d(x, (9, 10)), f.avg_pool2d(x, (9, 10)), f.max_pool2d(x, 9, 1, 4)
    return grads(lib, y, x)


@case("pool_strided_inputs", arr(2, 3, 6, 8))
def _(lib, x):
    f = F(lib)
    return (f.max_pool2d(x.transpose(2, 3), 2, return_indices=True), f.avg_pool2d(x[..., ::2], 2),
            f.adaptive_max_pool2d(x.permute(0, 1, 3, 2), 3, True))  # fmt: skip


@case("pool_ties_dilation_ceil_grads", Leaf.of(np.array([[[1, 1, 1, 2, 2, 0, 0]]], f32)))
def _(lib, x):
    f = F(lib)
    y = f.max_pool1d(x, 2, 1, 1, 2, ceil_mode=True), f.max_pool1d(x, 3, 2, 1, ceil_mode=True)
    return grads(lib, y, x)


@case("pool_all_minus_infinity_grads", Leaf.of(np.full((1, 1, 3, 3), -inf, f32)))
def _(lib, x):
    # every window -inf: the gradient goes to its first element inside the input
    f = F(lib)
    y = (f.max_pool2d(x, 2, 1, 1), f.max_pool2d(x, 2, 1, 1, dilation=2),
         f.max_pool3d(x[None], 2, 1, 1), f.max_pool1d(x[0], 2, 1, 1))  # fmt: skip
    return grads(lib, y, x)


@case("pool_nans_3d_and_lp", NANS)
def _(lib, x):
    f = F(lib)
    return (f.max_pool3d(x[None], (1, 2, 2), return_indices=True),
            f.max_pool1d(x[0], 4, return_indices=True), f.lp_pool2d(x, 2, 2),
            f.lp_pool1d(x[0], 1, 2))  # fmt: skip


@case("avg_pool_divisor_with_count_exclude_pad", arr(1, 2, 5, 5))
def _(lib, x):
    f = F(lib)
    return (f.avg_pool2d(x, 3, 2, 1, True, False, 4),
            f.avg_pool3d(x[None], 2, 1, 1, False, False, 3),
            f.avg_pool2d(x, 2, divisor_override=-2), f.lp_pool2d(x.abs(), inf, 2))  # fmt: skip


@case("max_unpool_grads_by_values", arr(1, 2, 4, 4), Leaf.of(arr(1, 2, 2, 2)))
def _(lib, x, v):
    f = F(lib)
    return grads(lib, f.max_unpool2d(v, f.max_pool2d(x, 2, return_indices=True)[1], 2), v)


@case("adaptive_max_pool_global_ties_grads", Leaf.of(np.round(arr(1, 2, 3, 3))))
def _(lib, x):
    return grads(lib, F(lib).adaptive_max_pool2d(x, 1, True), x)


@case("pool_kernel_of_three_for_2d_refused", arr(1, 2, 6, 6))
def _(lib, x):
    return F(lib).max_pool2d(x, (2, 2, 2))


SCENARIOS.eager_only.update(
    {"pool_forward_mode_nans_and_ties": "forward-mode AD (dual tensors) is eager only in kiln"}
)


# -- the test ----------------------------------------------------------------------------------


SCENARIOS.eager_only.update({"pool_module_attributes": "modules' constructors alone"})


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", SCENARIOS.names())
def test_matches_torch(torch, name, mode):
    SCENARIOS.check(torch, name, mode)


@pytest.mark.parametrize("name", sorted(SCENARIOS.cases))
def test_torch_runs_the_scenario(torch, name):
    assert_torch_runs(torch, SCENARIOS, name)
