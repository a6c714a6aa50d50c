"""Convolutions, pools and interpolate of kn.nn.functional without PyTorch: small cases
computed by hand, gradients against finite differences (graph mode, float64), and eager
against `kn.compile` (forward and gradients). tests/test_nn_functional_torch.py compares the
same functions with PyTorch over a grid of options."""

import numpy as np
import pytest

import kiln as kn
from kiln.testing import check_eager_vs_compiled, gradcheck

F = kn.nn.functional
RNG = np.random.default_rng(0)


def _arr(*shape):
    return RNG.standard_normal(shape)


def test_depthwise_conv2d_by_hand():
    # groups=2: channel 0 sums its 2x2 windows, channel 1 takes each window's top-left
    x = np.arange(18.0).reshape(1, 2, 3, 3)
    w = np.array([[[[1.0, 1.0], [1.0, 1.0]]], [[[1.0, 0.0], [0.0, 0.0]]]])
    got = F.conv2d(kn.tensor(x), kn.tensor(w), groups=2).numpy()
    np.testing.assert_array_equal(got, [[[[8, 12], [20, 24]], [[9, 10], [12, 13]]]])


def test_conv_same_padding_puts_the_odd_pad_after():
    # kernel 2 with "same": total pad 1, all of it after (right), as PyTorch pads
    got = F.conv1d(kn.tensor([[[1.0, 2.0, 3.0]]]), kn.tensor([[[1.0, 10.0]]]), padding="same")
    np.testing.assert_array_equal(got.numpy(), [[[21.0, 32.0, 3.0]]])


def test_conv_transpose2d_stride_and_output_padding_by_hand():
    # each input pixel stamps the 2x2 kernel at stride 2; output_padding adds a zero row/col
    y = F.conv_transpose2d(kn.ones(1, 1, 1, 2), kn.tensor([[[[1.0, 2.0], [3.0, 4.0]]]]),
                           stride=2, output_padding=1)  # fmt: skip
    want = [[1, 2, 1, 2, 0], [3, 4, 3, 4, 0], [0, 0, 0, 0, 0]]
    np.testing.assert_array_equal(y.numpy()[0, 0], want)


def test_pools_by_hand():
    x = kn.tensor([[[1.0, 5.0, 2.0, 4.0, 3.0]]])
    # dilation 2: windows {1, 2}, {5, 4}, {2, 3}
    values, idx = F.max_pool1d(x, 2, stride=1, dilation=2, return_indices=True)
    np.testing.assert_array_equal(values.numpy(), [[[2.0, 5.0, 3.0]]])
    np.testing.assert_array_equal(idx.numpy(), [[[2, 1, 4]]])
    # ceil_mode keeps the last, partial window [3]; without padding counts it holds 1 element
    np.testing.assert_array_equal(F.avg_pool1d(x, 2, ceil_mode=True).numpy(), [[[3.0, 3.0, 3.0]]])
    # padding 1, count_include_pad=False: [pad, 1] -> 1, [5, 2] -> 3.5, [4, 3] -> 3.5
    got = F.avg_pool1d(x, 2, padding=1, count_include_pad=False).numpy()
    np.testing.assert_array_equal(got, [[[1.0, 3.5, 3.5]]])
    # adaptive windows of 5 into 3: [0, 2), [1, 4), [3, 5)
    np.testing.assert_allclose(F.adaptive_avg_pool1d(x, 3).numpy(), [[[3.0, 11 / 3, 3.5]]])
    np.testing.assert_array_equal(F.adaptive_max_pool1d(x, 3).numpy(), [[[5.0, 5.0, 4.0]]])


def test_interpolate_by_hand():
    x = kn.tensor([[[0.0, 4.0]]])
    # align_corners=False: sources (i + 0.5) / 2 - 0.5 = -0.25 (clamped to 0), 0.25, 0.75, 1.25
    got = F.interpolate(x, size=4, mode="linear").numpy()
    np.testing.assert_array_equal(got, [[[0.0, 1.0, 3.0, 4.0]]])
    got = F.interpolate(kn.tensor([[[[1.0, 2.0], [3.0, 4.0]]]]), scale_factor=1.5, mode="nearest")
    np.testing.assert_array_equal(got.numpy()[0, 0], [[1, 1, 2], [1, 1, 2], [3, 3, 4]])
    got = F.interpolate(kn.tensor([[[1.0, 2.0]]]), scale_factor=3)  # an integer factor: repeats
    np.testing.assert_array_equal(got.numpy(), [[[1, 1, 1, 2, 2, 2]]])


CASES = [
    ("conv2d_groups", lambda x, w: F.conv2d(x, w, stride=(2, 1), padding=1, dilation=(1, 2),
                                            groups=2), [_arr(2, 4, 5, 6), _arr(4, 2, 2, 3)]),
    ("conv2d_same", lambda x, w: F.conv2d(x, w, padding="same"), [_arr(1, 2, 4, 4),
                                                                  _arr(3, 2, 2, 3)]),
    ("conv1d", lambda x, w: F.conv1d(x, w, stride=2, padding=1), [_arr(2, 3, 7), _arr(2, 3, 3)]),
    ("conv3d", lambda x, w: F.conv3d(x, w, padding=(1, 0, 1)), [_arr(1, 2, 3, 3, 4),
                                                                _arr(2, 2, 2, 2, 2)]),
    ("conv_transpose2d", lambda x, w: F.conv_transpose2d(x, w, stride=2, padding=1,
                                                          output_padding=1, groups=2),
     [_arr(1, 4, 3, 3), _arr(4, 1, 3, 2)]),
    ("conv_transpose3d", lambda x, w: F.conv_transpose3d(x, w, stride=(2, 1, 2), padding=1),
     [_arr(1, 2, 2, 3, 2), _arr(2, 3, 2, 2, 3)]),
    ("conv_transpose1d", lambda x, w: F.conv_transpose1d(x, w, stride=3, dilation=2),
     [_arr(2, 2, 4), _arr(2, 3, 2)]),
    ("max_pool2d", lambda x: F.max_pool2d(x, 3, stride=2, padding=1, dilation=(1, 2),
                                          ceil_mode=True), [_arr(2, 2, 6, 7)]),
    ("avg_pool2d", lambda x: F.avg_pool2d(x, 3, stride=2, padding=1, ceil_mode=True,
                                          count_include_pad=False), [_arr(2, 2, 6, 7)]),
    ("adaptive_avg_pool2d", lambda x: F.adaptive_avg_pool2d(x, (3, 4)), [_arr(2, 2, 5, 7)]),
    ("adaptive_max_pool2d", lambda x: F.adaptive_max_pool2d(x, (3, 4)), [_arr(2, 2, 5, 7)]),
    ("bilinear", lambda x: F.interpolate(x, size=(4, 7), mode="bilinear"), [_arr(1, 2, 3, 5)]),
    ("nearest_x2", lambda x: F.interpolate(x, scale_factor=(2, 3)), [_arr(1, 2, 3, 2)]),
    ("bicubic_corners", lambda x: F.interpolate(x, scale_factor=1.5, mode="bicubic",
                                                align_corners=True), [_arr(1, 1, 3, 4)]),
]  # fmt: skip


@pytest.mark.parametrize("fn, inputs", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_gradients_match_finite_differences(fn, inputs):
    assert gradcheck(fn, inputs)


@pytest.mark.parametrize("fn, inputs", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_eager_matches_compiled(fn, inputs):
    assert check_eager_vs_compiled(fn, *[a.astype(np.float32) for a in inputs])


def test_symbolic_batch_in_graph_mode():
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, ("batch", 4, 6, 6))
        y = F.conv2d(x, np.ones((4, 2, 3, 3), np.float32), groups=2, padding="same")
        z = F.max_pool2d(y, 2, ceil_mode=True, dilation=2)
        f = kn.function([x], [y, z])
    y, z = f(np.ones((3, 4, 6, 6), np.float32))
    assert y.shape == (3, 4, 6, 6) and z.shape == (3, 4, 3, 3)
    assert y[0, 0, 2, 2] == 18.0 and y[0, 0, 0, 0] == 8.0  # 9 taps x 2 channels; a corner: 4 x 2


def test_ceil_mode_with_a_symbolic_size_asks_for_static_sizes():
    # floor and ceil mode may differ on a size not known yet: refused, never silently floored
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (1, 2, "h", 5))
        assert F.max_pool2d(x, 2).shape[3] == 2
        with pytest.raises(kn.ShapeError, match="spatial sizes.*op max_pool2d"):
            F.max_pool2d(x, 2, ceil_mode=True)
