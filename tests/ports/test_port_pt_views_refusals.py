"""Refusals of view ops, as PyTorch's own view tests check them: each call PyTorch 2.13 (the
oracle) refuses is refused by kiln with an exception of the same built-in type (kiln's errors
subclass the built-in PyTorch raises). The views that work are in test_port_pt_views.py.
"""

import pytest
from pt_views_oracle import arange, assert_same_error, cases

import kiln as kn

# -- refusals of views ----------------------------------------------------------------------

ERRORS = {
    "reshape_empty_minus_one": lambda lib: arange(lib, 0, 6).reshape(0, -1),
    "reshape_two_minus_one": lambda lib: arange(lib, 3, 3).reshape(-1, -1),
    "reshape_scalar_to_2": lambda lib: lib.tensor(1.0).reshape(2),
    "reshape_empty_to_1": lambda lib: lib.tensor([]).reshape(1),
    "reshape_as_wrong": lambda lib: arange(lib, 3, 3).reshape_as(lib.zeros(10)),
    "view_empty_minus_one": lambda lib: lib.empty(0).view(-1, 0),
    "view_empty_minus_one_4d": lambda lib: lib.empty(0).view(3, 0, -1, 0),
    "view_15_0": lambda lib: lib.zeros(15).view(15, 0),
    "view_7_minus_one": lambda lib: lib.zeros(15).view(7, -1),
    "view_two_minus_one": lambda lib: lib.zeros(15).view(15, -1, -1),
    "view_non_contiguous": lambda lib: arange(lib, 3, 4).t().view(-1),
    "view_crossing_chunks": lambda lib: (
        arange(lib, 4, 2, 5, 1, 6, 2, 9, 3)
        .transpose(-1, 2)
        .transpose(-2, 3)
        .view(24, 9, 6, 2, 1, 5)
    ),
    "expand_minus_one_new_dim": lambda lib: lib.zeros(5).expand(-1, -1),
    "expand_wrong": lambda lib: lib.zeros(3).expand(4),
    "expand_fewer_dims": lambda lib: lib.zeros(2, 3).expand(3),
    "broadcast_to_wrong": lambda lib: lib.broadcast_to(lib.zeros(3, 2), (4, 3, 3)),
    "broadcast_shapes_wrong": lambda lib: lib.broadcast_shapes((3, 5), (2, 4, 1)),
    "broadcast_shapes_negative": lambda lib: lib.broadcast_shapes((1, -12)),
    "broadcast_shapes_float": lambda lib: lib.broadcast_shapes(1.1),
    "flatten_out_of_range": lambda lib: lib.zeros(2, 2, 2, 2).flatten(5, 10),
    "flatten_start_after_end": lambda lib: lib.zeros(2, 2, 2, 2).flatten(2, 0),
    "narrow_float_tensor_start": lambda lib: arange(lib, 3, 3).narrow(0, lib.tensor(0.0), 1),
    "narrow_1d_tensor_start": lambda lib: arange(lib, 3, 3).narrow(0, lib.tensor([0]), 1),
    "narrow_past_end": lambda lib: arange(lib, 3, 3).narrow(0, 2, 2),
    "t_of_3d": lambda lib: lib.zeros(2, 2, 2).t(),
    "H_of_1d": lambda lib: lib.zeros(2).H,
    "H_of_3d": lambda lib: lib.zeros(2, 3, 4).H,
    "mT_of_1d": lambda lib: lib.zeros(2).mT,
    "mH_of_1d": lambda lib: lib.zeros(2).mH,
    "adjoint_of_1d": lambda lib: lib.zeros(2).adjoint(),
    "transpose_out_of_range": lambda lib: lib.zeros(5, 6, 7, 8).transpose(5, 0),
    "swapdims_out_of_range": lambda lib: lib.swapdims(lib.zeros(5, 6, 7, 8), 0, 5),
    "swapaxes_out_of_range": lambda lib: lib.swapaxes(lib.zeros(5, 6, 7, 8), 0, -5),
    "chunk_zero": lambda lib: lib.zeros(4, 7).chunk(0),
    "chunk_negative": lambda lib: lib.zeros(4, 7).chunk(-2),
    "split_sizes_wrong_sum": lambda lib: lib.zeros(6).split([2, 2]),
    "tensor_split_dim": lambda lib: lib.tensor_split(lib.zeros(10), 10, 1),
    "tensor_split_0d": lambda lib: lib.tensor_split(lib.tensor(1.0), 10, 0),
    "tensor_split_0d_indices": lambda lib: lib.tensor_split(lib.tensor(1.0), (10,), 0),
    "tensor_split_zero_sections": lambda lib: lib.tensor_split(lib.zeros(10), 0, 0),
    "tensor_split_negative_sections": lambda lib: lib.tensor_split(lib.zeros(10), -1, 0),
    "tensor_split_float_tensor": lambda lib: lib.tensor_split(lib.zeros(10), lib.tensor(1.1), 0),
    "tensor_split_int32_tensor": lambda lib: lib.tensor_split(
        lib.zeros(10), lib.tensor([1], dtype=lib.int32), 0
    ),
    "narrow_bool_tensor_start": lambda lib: arange(lib, 3, 3).narrow(0, lib.tensor(True), 1),
    "tensor_split_2d_tensor": lambda lib: lib.tensor_split(lib.zeros(10), lib.tensor([[1]]), 0),
    "hsplit_uneven": lambda lib: lib.hsplit(lib.zeros(3, 5), 2),
    "vsplit_1d": lambda lib: lib.vsplit(lib.zeros(4), 2),
    "dsplit_2d": lambda lib: lib.dsplit(lib.zeros(4, 4), 2),
    "view_as_complex_last_not_2": lambda lib: lib.view_as_complex(
        lib.zeros(3, 2, 2).transpose(0, 2)
    ),
    "view_as_complex_last_stride": lambda lib: lib.view_as_complex(
        lib.zeros(3, 2, 2).transpose(1, 2)
    ),
    "view_as_complex_odd_stride": lambda lib: lib.view_as_complex(
        lib.as_strided(lib.zeros(3, 3), (2, 2), (1, 1))
    ),
    "view_as_complex_empty": lambda lib: lib.view_as_complex(lib.tensor([])),
    "view_as_complex_0d": lambda lib: lib.view_as_complex(lib.tensor(2.0)),
    "view_as_complex_int": lambda lib: lib.view_as_complex(lib.zeros(3, 2, dtype=lib.int64)),
    "view_as_real_of_real": lambda lib: lib.view_as_real(lib.zeros(3, 2)),
    "imag_of_real": lambda lib: lib.imag(lib.ones(5, 5)),
    "imag_attr_of_int": lambda lib: lib.ones(5, dtype=lib.int64).imag,
    "view_dtype_0d_resize": lambda lib: lib.tensor(1.0).view(lib.float64),
    "view_dtype_stride": lambda lib: arange(lib, 4, 4).t().view(lib.float16),
    "view_dtype_size_divisible": lambda lib: lib.zeros(4, 4, 3).view(lib.float64),
    "view_dtype_offset_divisible": lambda lib: lib.zeros(4, 4, 4)[:, :, 1:].view(lib.float64),
    "view_dtype_row_stride_divisible": lambda lib: lib.zeros(4, 5)[:, :2].view(lib.float64),
    "view_dtype_offset_divisible_2": lambda lib: lib.zeros(4, 4, 4)[:, :, 1:3].view(lib.float64),
    "view_dtype_empty_size_divisible": lambda lib: lib.zeros(0, 3).view(lib.float64),
    "view_dtype_stride_divisible": lambda lib: (
        lib.zeros(4, 4, 2).as_strided((4, 4, 2), (2, 1, 1)).view(lib.float64)
    ),
    "movedim_source_out_of_range": lambda lib: lib.movedim(lib.zeros(5, 6, 7, 8), 5, 0),
    "movedim_dest_out_of_range": lambda lib: lib.moveaxis(lib.zeros(5, 6, 7, 8), 0, 5),
    "movedim_length_mismatch": lambda lib: lib.movedim(lib.zeros(5, 6, 7, 8), (1, 0), (0,)),
    "movedim_repeated_source": lambda lib: lib.movedim(lib.zeros(5, 6, 7, 8), (0, 0), (0, 1)),
    "movedim_repeated_source3": lambda lib: lib.movedim(
        lib.zeros(5, 6, 7, 8), (0, 1, 0), (0, 1, 2)
    ),
    "movedim_repeated_dest": lambda lib: lib.moveaxis(lib.zeros(5, 6, 7, 8), (0, 1), (1, 1)),
    "squeeze_out_of_range": lambda lib: lib.zeros(2, 1).squeeze(2),
    "unsqueeze_out_of_range": lambda lib: lib.zeros(2, 1).unsqueeze(4),
    "select_out_of_range": lambda lib: lib.zeros(2, 3).select(1, 3),
    "select_of_0d": lambda lib: lib.tensor(1.0).select(0, 0),
    "unflatten_wrong": lambda lib: lib.zeros(2, 6).unflatten(1, (4, 2)),
    "unflatten_two_minus_one": lambda lib: lib.zeros(2, 6).unflatten(1, (-1, -1)),
    "permute_wrong_count": lambda lib: lib.zeros(2, 3).permute(0),
    "permute_repeated": lambda lib: lib.zeros(2, 3).permute(0, 0),
    "diagonal_same_dims": lambda lib: lib.zeros(3, 3).diagonal(0, 1, 1),
    "unbind_out_of_range": lambda lib: lib.zeros(3, 3).unbind(2),
    "as_strided_negative_stride": lambda lib: lib.zeros(9).as_strided((3,), (-1,)),
    "expand_add_": lambda lib: lib.ones(5, 1).expand(5, 5).add_(1),
    "expand_copy_": lambda lib: lib.ones(3).expand(2, 3).copy_(lib.zeros(2, 3)),
    "expand_fill_tensor": lambda lib: lib.ones(3).expand(2, 3).fill_(lib.tensor(5.0)),
    "expand_setitem": lambda lib: lib.ones(3).expand(2, 3).__setitem__((slice(None), 0), 5),
    "resize_negative": lambda lib: lib.zeros(9).resize_(-1),
    "as_strided_negative_offset": lambda lib: lib.zeros(9).as_strided((3,), (1,), -1),
    "as_strided_lengths_differ": lambda lib: lib.zeros(9).as_strided((3,), (1, 2)),
    "broadcast_shapes_negative_int": lambda lib: lib.broadcast_shapes(-1, (3,)),
    "resize_overflow": lambda lib: lib.empty((), dtype=lib.float64).resize_([8, 8, 2**29, 2**29]),
}


ERROR_GAPS = {}


@pytest.mark.parametrize("call", cases(ERRORS, ERROR_GAPS))
def test_view_refusals_as_torch(torch, call):
    assert_same_error(call, torch, kn)
