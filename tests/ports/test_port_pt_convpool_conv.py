"""PyTorch's own convolution tests (test/nn/test_convolution.py) as an oracle: each behaviour
they check, written as a scenario of its own (pt_oracle.py runs it on torch and on kiln,
eagerly and under `kn.compile`, and compares values, dtypes, shapes and exception types):
conv1d/2d/3d and conv_transpose1d/2d/3d, functional and modules, with stride, padding (ints,
tuples, "same", "valid"), dilation, groups, padding_mode, output_padding, output_size=,
bias=False, unbatched inputs, float64, and the gradients of input, weight and bias; the errors
of bad shapes. test_port_pt_convpool_pool.py has the pools'.

Expected values: torch 2.13 (the oracle); floats within rtol 1e-5.
"""

import numpy as np
import pytest
from pt_convpool_common import arr, assert_torch_runs, f64, grads
from pt_oracle import MODES, Leaf, Scenarios

SCENARIOS = Scenarios()
case = SCENARIOS.case


def F(lib):
    return lib.nn.functional


# -- forward: stride, padding, dilation, groups ----------------------------------------------


@case("conv1d_options", arr(2, 4, 9), arr(6, 2, 3), arr(6))
def _(lib, x, w, b):
    f = F(lib)
    return (f.conv1d(x, w, b, groups=2), f.conv1d(x, w, None, 2, 1, 2, 2),
            f.conv1d(x, w, b, stride=(3,), padding=(2,), dilation=(1,), groups=2),
            f.conv1d(x, w, b, padding="same", dilation=3, groups=2),
            f.conv1d(x, w, b, padding="valid", groups=2))  # fmt: skip


@case("conv2d_options", arr(2, 4, 7, 8), arr(4, 1, 3, 2), arr(4))
def _(lib, x, w, b):
    f = F(lib)
    return (f.conv2d(x, w, b, groups=4), f.conv2d(x, w, b, (2, 1), (1, 2), (2, 1), 4),
            f.conv2d(x, w, None, stride=3, padding=1, groups=4),
            f.conv2d(x, w, b, padding="same", dilation=(2, 3), groups=4),
            f.conv2d(x, w, b, padding="valid", dilation=2, groups=4))  # fmt: skip


@case("conv2d_full_channels_asymmetric_pad", arr(1, 3, 6, 5), arr(2, 3, 2, 4), arr(2))
def _(lib, x, w, b):
    f = F(lib)
    return f.conv2d(x, w, b, padding=(0, 3)), f.conv2d(x, w, b, padding="same", stride=1)


@case("conv3d_options", arr(1, 4, 5, 6, 4), arr(6, 2, 2, 3, 2), arr(6))
def _(lib, x, w, b):
    f = F(lib)
    return (f.conv3d(x, w, b, groups=2), f.conv3d(x, w, b, (1, 2, 1), (1, 0, 2), (2, 1, 1), 2),
            f.conv3d(x, w, b, padding="same", groups=2),
            f.conv3d(x, w, None, padding="valid", groups=2))  # fmt: skip


@case("conv_same_even_kernel_pads_after", arr(1, 2, 6), arr(3, 2, 4), arr(1, 2, 5, 6),
      arr(2, 2, 2, 4))  # fmt: skip
def _(lib, x, w, x2, w2):
    # an even kernel: the odd unit of padding goes after (PyTorch's "same")
    f = F(lib)
    return (
        f.conv1d(x, w, padding="same"),
        f.conv1d(x, w, padding="same", dilation=3),
        f.conv2d(x2, w2, padding="same"),
        f.conv2d(x2, w2, padding="same", dilation=(2, 1)),
    )


@case("conv_same_with_stride_refused", arr(1, 2, 6), arr(3, 2, 3))
def _(lib, x, w):
    return F(lib).conv1d(x, w, padding="same", stride=2)


@case("conv_bad_padding_string", arr(1, 2, 6), arr(3, 2, 3))
def _(lib, x, w):
    return F(lib).conv1d(x, w, padding="full")


@case("conv_unbatched", arr(4, 7), arr(2, 4, 3), arr(2), arr(4, 5, 6), arr(3, 4, 2, 2),
      arr(2, 4, 3, 3), arr(3, 2, 2, 2, 2))  # fmt: skip
def _(lib, x1, w1, b1, x2, w2, x3, w3):
    f = F(lib)
    return (
        f.conv1d(x1, w1, b1, padding=1),
        f.conv2d(x2, w2, stride=2),
        f.conv3d(x3, w3, padding="same"),
        f.conv_transpose1d(x1, w1.transpose(0, 1)),
        f.conv_transpose2d(x2, w2.transpose(0, 1), stride=2, output_padding=1),
    )


@case("conv_float64", arr(2, 3, 6, 5, dtype=f64), arr(4, 3, 3, 2, dtype=f64), arr(4, dtype=f64))
def _(lib, x, w, b):
    f = F(lib)
    return (
        f.conv2d(x, w, b, padding=1),
        f.conv1d(x[:, :, 0], w[:, :, 0], b, stride=2),
        f.conv_transpose2d(x, w.transpose(0, 1), b, stride=2),
    )


@case("conv_one_by_one_and_kernel_equal_input", arr(2, 3, 4, 4), arr(5, 3, 1, 1),
      arr(5, 3, 4, 4))  # fmt: skip
def _(lib, x, w1, wall):
    f = F(lib)
    return f.conv2d(x, w1), f.conv2d(x, wall), f.conv2d(x, w1, stride=3)


@case("conv_zero_batch", np.zeros((0, 3, 5, 5), np.float32), arr(4, 3, 2, 2))
def _(lib, x0, w):
    f = F(lib)
    return f.conv2d(x0, w), f.conv_transpose2d(x0[:, :, :4], w.transpose(0, 1)[:3])


@case("conv_zero_out_channels_refused", arr(1, 3, 5, 5), np.zeros((0, 3, 2, 2), np.float32))
def _(lib, x, w0):
    return F(lib).conv2d(x, w0)


@case("conv_dilation_larger_than_input_refused", arr(1, 2, 5), arr(1, 2, 3))
def _(lib, x, w):
    return F(lib).conv1d(x, w, dilation=3)


# -- transposed -------------------------------------------------------------------------------


@case("conv_transpose1d_options", arr(2, 4, 5), arr(4, 3, 3), arr(6))
def _(lib, x, w, b):
    f = F(lib)
    return (f.conv_transpose1d(x, w, b, groups=2), f.conv_transpose1d(x, w, None, 2, 1, 1, 2),
            f.conv_transpose1d(x, w, b, stride=3, padding=2, output_padding=2, groups=2,
                               dilation=2),
            f.conv_transpose1d(x, w[:, :1], b[:1], stride=2, dilation=3))  # fmt: skip


@case("conv_transpose2d_options", arr(1, 4, 3, 4), arr(4, 2, 3, 2), arr(4))
def _(lib, x, w, b):
    f = F(lib)
    return (f.conv_transpose2d(x, w, b, (2, 3), (1, 0), (1, 2), 2, (2, 1)),
            f.conv_transpose2d(x, w, None, stride=2, padding=1, groups=1),
            f.conv_transpose2d(x, w[:, :1], b[:1], groups=1, dilation=2, output_padding=1,
                               stride=2))  # fmt: skip


@case("conv_transpose3d_options", arr(1, 2, 3, 2, 3), arr(2, 3, 2, 2, 3), arr(3))
def _(lib, x, w, b):
    f = F(lib)
    return (
        f.conv_transpose3d(x, w, b, (2, 1, 2), (0, 1, 1), (1, 0, 1)),
        f.conv_transpose3d(x, w, b, dilation=(1, 2, 1), padding=1),
    )


@case("conv_transpose_output_padding_too_big_refused", arr(1, 2, 4), arr(2, 1, 3))
def _(lib, x, w):
    # output_padding must be smaller than stride or dilation
    return F(lib).conv_transpose1d(x, w, stride=2, output_padding=2)


@case("conv_transpose_string_padding_is_a_type_error", arr(1, 2, 4), arr(2, 1, 3))
def _(lib, x, w):
    return F(lib).conv_transpose1d(x, w, padding="same")


@case("conv_transpose_negative_output_refused", arr(1, 2, 2), arr(2, 1, 2))
def _(lib, x, w):
    return F(lib).conv_transpose1d(x, w, padding=3)


# -- modules: padding_mode, bias=False, output_size= --------------------------------------


def _module(lib, cls, *args, weight, bias=None, **kw):
    # the scenario's tensors replace the parameters (compiled too: no in-place copy into them)
    m = getattr(lib.nn, cls)(*args, bias=bias is not None, **kw)
    del m.weight
    m.weight = weight
    if bias is not None:
        del m.bias
        m.bias = bias
    return m


@case("conv_padding_modes", arr(2, 2, 6, 5), arr(3, 2, 3, 2), arr(3), arr(2, 2, 7), arr(4, 2, 3),
      arr(1, 2, 3, 4, 5), arr(2, 2, 3, 2, 3))  # fmt: skip
def _(lib, x, w, b, x1, w1, x3, w3):
    out = []
    for mode in ("zeros", "reflect", "replicate", "circular"):
        m = _module(lib, "Conv2d", 2, 3, (3, 2), padding=(2, 1), padding_mode=mode, weight=w,
                    bias=b)  # fmt: skip
        m1 = _module(lib, "Conv1d", 2, 4, 3, stride=2, padding=2, padding_mode=mode, weight=w1)
        m3 = _module(lib, "Conv3d", 2, 2, (3, 2, 3), padding=1, padding_mode=mode, weight=w3)
        out += [m(x), m1(x1), m3(x3)]
    return out


@case("conv_padding_mode_same", arr(1, 2, 6, 5), arr(3, 2, 4, 3), arr(3))
def _(lib, x, w, b):
    out = []
    for mode in ("zeros", "reflect", "replicate", "circular"):
        m = _module(lib, "Conv2d", 2, 3, (4, 3), padding="same", padding_mode=mode, weight=w,
                    bias=b, dilation=(1, 2))  # fmt: skip
        out.append(m(x))
    return out


@case("conv_padding_mode_unbatched", arr(2, 6, 5), arr(3, 2, 3, 3))
def _(lib, x, w):
    return [_module(lib, "Conv2d", 2, 3, 3, padding=1, padding_mode=mode, weight=w)(x)
            for mode in ("reflect", "replicate", "circular")]  # fmt: skip


@case("conv_padding_mode_bad_name_refused")
def _(lib):
    return lib.nn.Conv2d(2, 3, 3, padding_mode="mirror")


@case("conv_transpose_padding_mode_refused")
def _(lib):
    return lib.nn.ConvTranspose2d(2, 3, 3, padding_mode="reflect")


@case("conv_module_same_with_stride_refused")
def _(lib):
    return lib.nn.Conv2d(2, 3, 3, stride=2, padding="same")


@case("conv_module_groups_not_dividing_refused")
def _(lib):
    return lib.nn.Conv2d(4, 6, 3, groups=4)


@case("conv_module_groups_zero_refused")
def _(lib):
    return lib.nn.Conv1d(4, 4, 3, groups=0)


@case("conv_module_attributes")
def _(lib):
    m = lib.nn.Conv2d(4, 6, (3, 2), stride=2, padding="same" if False else 1, groups=2,
                      bias=False)  # fmt: skip
    t = lib.nn.ConvTranspose3d(2, 4, 3, stride=(1, 2, 1), output_padding=(0, 1, 0))
    return (m.weight.shape, m.bias, m.kernel_size, m.stride, m.padding, m.dilation, m.groups,
            m.padding_mode, m.transposed, m.output_padding, t.weight.shape, t.bias.shape,
            t.kernel_size, t.output_padding, t.transposed, t.stride)  # fmt: skip


@case("conv_module_reversed_padding")
def _(lib):
    # PyTorch's `_reversed_padding_repeated_twice` (F.pad's widths, which subclasses use)
    ms = (lib.nn.Conv1d(2, 3, 3, padding=2), lib.nn.Conv2d(2, 3, (4, 3), padding="same",
          dilation=(1, 2)), lib.nn.Conv3d(2, 2, 3, padding=(1, 2, 0)),
          lib.nn.Conv2d(2, 2, 3, padding="valid", padding_mode="reflect"))  # fmt: skip
    return [m._reversed_padding_repeated_twice for m in ms]


@case("conv_transpose_module_output_size", arr(1, 2, 3, 4), arr(2, 3, 3, 3), arr(3))
def _(lib, x, w, b):
    m = _module(lib, "ConvTranspose2d", 2, 3, 3, stride=2, padding=1, weight=w, bias=b)
    # stride 2 leaves output sizes 5..6 by 7..8 reachable; output_size picks output_padding
    return (m(x), m(x, output_size=(6, 8)), m(x, output_size=[5, 8]),
            m(x, output_size=(1, 3, 6, 7)), m(x[0], output_size=(6, 7)))  # fmt: skip


@case("conv_transpose_module_output_size_out_of_range", arr(1, 2, 3, 4), arr(2, 3, 3, 3))
def _(lib, x, w):
    m = _module(lib, "ConvTranspose2d", 2, 3, 3, stride=2, padding=1, weight=w)
    return m(x, output_size=(7, 8))


@case("conv_transpose1d_3d_module_output_size", arr(1, 2, 4), arr(2, 1, 2),
      arr(1, 2, 2, 2, 3), arr(2, 1, 2, 2, 2))  # fmt: skip
def _(lib, x1, w1, x3, w3):
    m1 = _module(lib, "ConvTranspose1d", 2, 1, 2, stride=3, weight=w1)
    m3 = _module(lib, "ConvTranspose3d", 2, 1, 2, stride=2, weight=w3, dilation=2)
    return m1(x1, output_size=[13]), m1(x1, output_size=(12,)), m3(x3, output_size=(5, 6, 7))


# -- errors: shapes of weights and inputs ---------------------------------------------------


@case("conv_weight_in_channels_mismatch", arr(1, 3, 5, 5), arr(2, 4, 3, 3))
def _(lib, x, w):
    return F(lib).conv2d(x, w)


@case("conv_groups_not_dividing_in_channels", arr(1, 3, 5, 5), arr(4, 1, 3, 3))
def _(lib, x, w):
    return F(lib).conv2d(x, w, groups=2)


@case("conv_groups_not_dividing_out_channels", arr(1, 4, 5, 5), arr(3, 2, 3, 3))
def _(lib, x, w):
    return F(lib).conv2d(x, w, groups=2)


@case("conv_weight_rank_mismatch", arr(1, 3, 5, 5), arr(2, 3, 3))
def _(lib, x, w):
    return F(lib).conv2d(x, w)


@case("conv_input_rank_wrong", arr(1, 1, 3, 5, 5), arr(2, 1, 3, 3))
def _(lib, x, w):
    return F(lib).conv2d(x, w)


@case("conv_kernel_bigger_than_padded_input", arr(1, 2, 4, 4), arr(2, 2, 3, 6))
def _(lib, x, w):
    return F(lib).conv2d(x, w, padding=(0, 1))


@case("conv_bias_wrong_size", arr(1, 2, 5, 5), arr(3, 2, 3, 3), arr(4))
def _(lib, x, w, b):
    return F(lib).conv2d(x, w, b)


@case("conv_negative_padding_refused", arr(1, 2, 5, 5), arr(3, 2, 3, 3))
def _(lib, x, w):
    return F(lib).conv2d(x, w, padding=-1)


@case("conv_zero_stride_refused", arr(1, 2, 5, 5), arr(3, 2, 3, 3))
def _(lib, x, w):
    return F(lib).conv2d(x, w, stride=0)


@case("conv_zero_dilation_refused", arr(1, 2, 5, 5), arr(3, 2, 3, 3))
def _(lib, x, w):
    return F(lib).conv2d(x, w, dilation=0)


@case("conv_mixed_dtypes_refused", arr(1, 2, 5, 5), arr(3, 2, 3, 3, dtype=f64))
def _(lib, x, w):
    return F(lib).conv2d(x, w)


@case("conv_transpose_weight_channels_mismatch", arr(1, 3, 4, 4), arr(2, 2, 3, 3))
def _(lib, x, w):
    return F(lib).conv_transpose2d(x, w)


@case("conv_transpose_groups_not_dividing", arr(1, 3, 4, 4), arr(3, 2, 3, 3))
def _(lib, x, w):
    return F(lib).conv_transpose2d(x, w, groups=2)


@case("conv_bias_dtype_mismatch_refused", arr(1, 2, 5, 5), arr(3, 2, 3, 3), arr(3, dtype=f64))
def _(lib, x, w, b):
    return F(lib).conv2d(x, w, b)


@case("conv_transpose_mixed_dtypes_refused", arr(1, 2, 5), arr(2, 3, 3, dtype=f64))
def _(lib, x, w):
    return F(lib).conv_transpose1d(x, w)


@case("conv_half_weight_refused", arr(1, 2, 5, 5), arr(3, 2, 3, 3, dtype=np.float16))
def _(lib, x, w):
    return F(lib).conv2d(x, w)


@case("conv_int_input_float_weight_refused", np.ones((1, 2, 5), np.int32), arr(3, 2, 3))
def _(lib, x, w):
    return F(lib).conv1d(x, w)


@case("conv_integers", np.arange(30, dtype=np.int32).reshape(1, 2, 15) % 7,
      np.arange(12, dtype=np.int32).reshape(2, 2, 3) - 5)  # fmt: skip
def _(lib, x, w):
    # every integer dtype in conv1d/2d/3d, int64 only in the transposed ones
    f = F(lib)
    return (f.conv1d(x, w, stride=2), f.conv1d(x.to(lib.int8), w.to(lib.int8)),
            f.conv_transpose1d(x.long(), w.long(), stride=2))  # fmt: skip


@case("conv_transpose_int32_refused", np.ones((1, 2, 5), np.int32), np.ones((2, 2, 3), np.int32))
def _(lib, x, w):
    return F(lib).conv_transpose1d(x, w)


@case("conv_bool_refused", np.ones((1, 2, 5), bool), np.ones((2, 2, 3), bool))
def _(lib, x, w):
    return F(lib).conv1d(x, w)


@case("conv_float_stride_refused", arr(1, 2, 5, 5), arr(3, 2, 3, 3))
def _(lib, x, w):
    return F(lib).conv2d(x, w, stride=2.0)


@case("conv_float_padding_in_list_refused", arr(1, 2, 5, 5), arr(3, 2, 3, 3))
def _(lib, x, w):
    return F(lib).conv_transpose2d(x, w.transpose(0, 1), padding=[1.0, 1])


@case("conv_padding_of_three_for_2d_refused", arr(1, 2, 5, 5), arr(3, 2, 3, 3))
def _(lib, x, w):
    return F(lib).conv2d(x, w, padding=(1, 2, 3))


# -- gradients ----------------------------------------------------------------------------------


@case("conv1d_grads", Leaf.of(arr(2, 4, 9)), Leaf.of(arr(6, 2, 3)), Leaf.of(arr(6)))
def _(lib, x, w, b):
    f = F(lib)
    y = (f.conv1d(x, w, b, 2, 1, 2, 2), f.conv1d(x, w, b, padding="same", groups=2),
         f.conv1d(x[:1], w[:, :1].repeat(1, 4, 1), None, padding=3))  # fmt: skip
    return grads(lib, y, x, w, b)


@case("conv2d_grads", Leaf.of(arr(2, 4, 7, 6)), Leaf.of(arr(4, 2, 3, 2)), Leaf.of(arr(4)))
def _(lib, x, w, b):
    f = F(lib)
    y = (f.conv2d(x, w, b, (2, 1), (1, 0), (1, 2), 2), f.conv2d(x, w, b, padding="same", groups=2),
         f.conv2d(x[:, :2], w, b, stride=3))  # fmt: skip
    return grads(lib, y, x, w, b)


@case("conv3d_grads", Leaf.of(arr(1, 2, 4, 5, 4)), Leaf.of(arr(4, 1, 2, 3, 2)),
      Leaf.of(arr(4)))  # fmt: skip
def _(lib, x, w, b):
    f = F(lib)
    y = (
        f.conv3d(x, w, b, (1, 2, 1), 1, (2, 1, 1), 2),
        f.conv3d(x, w[:, :1].repeat(1, 2, 1, 1, 1), b),
    )
    return grads(lib, y, x, w, b)


@case("conv_transpose_grads", Leaf.of(arr(2, 4, 3, 4)), Leaf.of(arr(4, 1, 3, 2)),
      Leaf.of(arr(2)))  # fmt: skip
def _(lib, x, w, b):
    f = F(lib)
    y = (
        f.conv_transpose2d(x, w, b, (2, 3), 1, (1, 2), 2, (1, 2)),
        f.conv_transpose1d(x[:, :, 0], w[:, :, 0], b, stride=2, groups=2),
        f.conv_transpose3d(x[..., None], w[..., None], b, stride=(1, 2, 1), groups=2),
    )
    return grads(lib, y, x, w, b)


@case("conv_float64_grads", Leaf.of(arr(1, 2, 5, 4, dtype=f64)),
      Leaf.of(arr(3, 2, 2, 2, dtype=f64)), Leaf.of(arr(3, dtype=f64)))  # fmt: skip
def _(lib, x, w, b):
    f = F(lib)
    y = f.conv2d(x, w, b, padding=1, dilation=2), f.conv_transpose2d(x, w.transpose(0, 1), b)
    return grads(lib, y, x, w, b)


@case("conv_padding_mode_grads", Leaf.of(arr(1, 2, 5, 6)), Leaf.of(arr(3, 2, 3, 3)))
def _(lib, x, w):
    out = []
    for mode in ("reflect", "replicate", "circular"):
        m = _module(lib, "Conv2d", 2, 3, 3, padding=(2, 1), padding_mode=mode, weight=w)
        out.append(m(x))
    return grads(lib, tuple(out), x, w)


@case("conv_unbatched_grads", Leaf.of(arr(3, 5, 6)), Leaf.of(arr(2, 3, 2, 2)))
def _(lib, x, w):
    f = F(lib)
    return grads(lib, (f.conv2d(x, w, padding=1), f.conv_transpose2d(x, w.transpose(0, 1))), x, w)


# -- second derivatives, forward mode, other forms ----------------------------------------------


@case(
    "conv_double_backward", Leaf.of(arr(1, 2, 5, 5, dtype=f64)), Leaf.of(arr(3, 2, 3, 3, dtype=f64))
)
def _(lib, x, w):
    f = F(lib)

    def grad_of_grad(y, v):
        (g,) = lib.autograd.grad((y * y).sum(), v, create_graph=True)
        return lib.autograd.grad((g * g).sum(), (x, w), allow_unused=True)

    return (grad_of_grad(f.conv2d(x, w, padding=1, stride=2), x),
            grad_of_grad(f.conv2d(x, w, padding=1), w),
            grad_of_grad(f.conv_transpose2d(x, w.transpose(0, 1)[:2], stride=2), x))  # fmt: skip


@case("conv_forward_mode", arr(1, 1, 5, 5), arr(1, 1, 5, 5, seed=2), arr(3, 1, 2, 2))
def _(lib, x, t, w):
    f, fa = F(lib), lib.autograd.forward_ad
    with fa.dual_level():
        d = fa.make_dual(x, t)
        outs = (
            f.conv2d(d, w, padding=1, stride=2),
            f.conv_transpose2d(d, w.transpose(0, 1)[:1], stride=2, output_padding=1),
        )
        return [fa.unpack_dual(o).tangent for o in outs]


@case("conv_forms", arr(1, 2, 5, 5), arr(2, 2, 3, 2), arr(2), arr(5, 2, 3), arr(3, 3, 4),
      arr(4))  # fmt: skip
def _(lib, x, w, b, xt, wt, bt):
    # torch.convolution (transposed flag), torch.conv_tbc (time, batch, channels), keywords
    return (lib.convolution(x, w, b, [2, 1], [1, 0], [1, 1], False, [0, 0], 1),
            lib.convolution(x, w.transpose(0, 1), None, [2, 2], [0, 1], [1, 2], True, [1, 0], 1),
            lib.conv_tbc(xt, wt, bt, 1), lib.conv2d(x, w, padding="same"),
            F(lib).conv2d(input=x, weight=w, bias=None, stride=1, padding=0, dilation=1,
                          groups=1))  # fmt: skip


@case("conv_stride_past_input_and_depthwise_multiplier", arr(1, 2, 5), arr(2, 2, 1),
      arr(2, 2, 5, 5), arr(6, 1, 3, 3))  # fmt: skip
def _(lib, x, w, x2, w2):
    f = F(lib)
    return (f.conv1d(x, w, stride=10), f.conv_transpose1d(x, w.transpose(0, 1), stride=10),
            f.conv2d(x2, w2, groups=2, padding=1),
            f.conv_transpose2d(x2[:, :1, :3, :4], w2.transpose(0, 1)[:1], stride=2, dilation=3,
                               output_padding=2, padding=1))  # fmt: skip


@case("conv_transpose_module_output_size_groups_dilation", arr(1, 4, 3, 4), arr(15, 13))
def _(lib, x, x1):
    t = lib.nn.ConvTranspose2d(4, 6, 3, stride=2, groups=2, dilation=2, padding=1)
    big = lib.nn.ConvTranspose2d(1, 1, 16, 16, 7, bias=False)  # an unbatched input
    return t(x, output_size=(8, 10)).shape, big(x1[None], output_size=(1, 240, 200)).shape


@case("conv_transpose_module_output_size_wrong_length_refused", arr(1, 4, 3, 4))
def _(lib, x):
    return lib.nn.ConvTranspose2d(4, 6, 3, stride=2)(x, output_size=(8, 10, 1, 2, 3))


@case("conv_padding_mode_pad_wider_than_input_refused", arr(1, 1, 3, 3))
def _(lib, x):
    return lib.nn.Conv2d(1, 1, 3, padding=3, padding_mode="reflect")(x)


@case("conv_circular_pad_wider_than_input_refused", arr(1, 1, 3))
def _(lib, x):
    return lib.nn.Conv1d(1, 1, 3, padding=4, padding_mode="circular")(x)


@case("conv_lazy_modules", arr(1, 4, 6, 6))
def _(lib, x):
    c, t = lib.nn.LazyConv2d(5, 3), lib.nn.LazyConvTranspose1d(5, 3)
    return (c(x).shape, c.weight.shape, c.in_channels, t(x[0]).shape, t.weight.shape,
            lib.nn.Conv2d(2, 3, 3, dtype=lib.float64).weight.dtype)  # fmt: skip


@case("conv_complex", (arr(1, 2, 4, 4) + 1j * arr(1, 2, 4, 4, seed=3)).astype(np.complex64),
      (arr(2, 1, 2, 2) + 1j * arr(2, 1, 2, 2, seed=3)).astype(np.complex64),
      np.array([1 + 2j, 3 - 1j], np.complex64))  # fmt: skip
def _(lib, x, w, b):
    return F(lib).conv2d(x, w, b, padding=1, groups=2)


SCENARIOS.eager_only.update(
    {
        "conv_forward_mode": "forward-mode AD (dual tensors) is eager only in kiln",
        "conv_lazy_modules": "modules built and first run inside the function",
    }
)


@case("conv_same_kernel_bigger_than_input", Leaf.of(arr(1, 2, 2)), Leaf.of(arr(3, 2, 5)))
def _(lib, x, w):
    f = F(lib)
    y = (
        f.conv1d(x, w, padding="same"),
        f.conv2d(x[..., None], w[..., None], padding="same", dilation=2),
    )
    return grads(lib, y, x, w)


@case("conv_transpose_output_padding_below_dilation", arr(1, 2, 4), arr(2, 2, 2))
def _(lib, x, w):
    # output_padding must be below the stride or the dilation (either)
    return F(lib).conv_transpose1d(x, w, stride=1, dilation=3, output_padding=2)


@case("conv_integer_bias_refused", arr(1, 2, 4), arr(2, 2, 2))
def _(lib, x, w):
    return F(lib).conv1d(x, w, lib.ones(2, dtype=lib.int64))


# -- differences left ----------------------------------------------------------------------------


_NAN_FIRST = arr(2, 2, 5)
_NAN_FIRST[0, 0, 0] = np.nan


@case("conv_transpose_nan_input_weight_grad_with_padding", Leaf.of(_NAN_FIRST),
      Leaf.of(arr(2, 2, 3)))  # fmt: skip
def _(lib, x, w):
    # x[0, 0, 0]'s first tap lands on the cropped padding: no term of the weight's gradient
    return grads(lib, F(lib).conv_transpose1d(x, w, stride=3, padding=1), x, w)


SCENARIOS.xfail.update(
    {
        "conv_transpose_nan_input_weight_grad_with_padding": "kiln's transposed convolution "
        "computes the full output, then crops `padding`: the weight's gradient sums x * 0 "
        "over the cropped positions, so a NaN input makes every tap's gradient NaN, where "
        "PyTorch's CPU kernel for these shapes has no such term (NaN in the taps that reach "
        "the output only; for a single channel its kernel gives NaN everywhere too)",
    }
)


# -- the test ----------------------------------------------------------------------------------

SCENARIOS.eager_only.update(
    {
        "conv_padding_mode_bad_name_refused": "a module's constructor, no tensor computation",
        "conv_transpose_padding_mode_refused": "a module's constructor, no tensor computation",
        "conv_module_same_with_stride_refused": "a module's constructor, no tensor computation",
        "conv_module_groups_not_dividing_refused": "a module's constructor",
        "conv_module_groups_zero_refused": "a module's constructor",
        "conv_module_attributes": "a module's constructor",
        "conv_module_reversed_padding": "a module's constructor",
    }
)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", SCENARIOS.names())
def test_matches_torch(torch, name, mode):
    SCENARIOS.check(torch, name, mode)


@pytest.mark.parametrize("name", sorted(SCENARIOS.cases))
def test_torch_runs_the_scenario(torch, name):
    assert_torch_runs(torch, SCENARIOS, name)


def test_errors_name_the_shapes():
    # kiln's refusals of bad sizes name the input's and weight's shapes, eagerly too
    import kiln as kn

    f, x = kn.nn.functional, kn.ones(1, 2, 3, 3)
    cases = [
        (lambda: f.max_pool2d(x, 4), "f32[1,2,3,3]"),
        (lambda: f.max_pool2d(x, 2, padding=2), "f32[1,2,3,3]"),
        (lambda: f.avg_pool2d(x, 2, stride=0), "f32[1,2,3,3]"),
        (lambda: f.adaptive_max_pool2d(x, (2, -1)), "f32[1,2,3,3]"),
        (lambda: f.conv2d(x, kn.ones(3, 1, 2, 2), groups=2), "[3,1,2,2]"),
        (lambda: f.conv2d(x, kn.ones(2, 3, 2, 2)), "[1,2,3,3]"),
        (lambda: f.conv2d(x, kn.ones(2, 2, 2, 2), stride=0), "f32[2,2,2,2]"),
        (lambda: f.conv2d(x, kn.ones(2, 2, 2, 2, dtype=kn.float64)), "[2,2,2,2] float64"),
        (lambda: f.conv_transpose2d(x, kn.ones(3, 2, 2, 2)), "[3,2,2,2]"),
    ]
    for call, shape in cases:
        with pytest.raises(RuntimeError) as info:
            call()
        assert shape in str(info.value), str(info.value)
