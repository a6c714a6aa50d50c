"""Shape ops, as PyTorch's own shape-op tests check them, run on torch 2.13 (the oracle) and on
kiln: flips, rolls, rotations, diagonals, triangles, nonzero, clamp, movedim, take_along_dim,
the stacks and unfold. Each scenario is written once against `lib`; `assert_same` compares
values, dtypes, shapes, strides, contiguity and storage offsets. Scenarios that take tensors
run under `kn.compile` too, where values, dtypes and shapes are compared (a compiled result is
a fresh tensor, so its layout is not).
"""

import numpy as np
import pytest
from pt_views_oracle import arange, assert_same, assert_same_error, cases, values

import kiln as kn


def numbers(lib, *shape, dtype="float32", seed=0):
    """Small integers with a few repeats and zeros, as `dtype`."""
    a = np.random.default_rng(seed).integers(-3, 4, size=shape)
    return lib.tensor(a.astype(dtype))


# -- scenarios over one or two input tensors (eager and compiled) ------------------------------


def flips(lib, x):
    out = [x.flip(0), x.flip(1), x.flip(2), x.flip((0, 1)), x.flip((0, 1, 2)), x.flip(-1)]
    out += [x.flip((2, 0)), x.flip([-3, 1]), lib.flip(x, ()), lib.flip(x, dims=(1,))]
    out += [x.transpose(0, 1).flip((0, 1, 2)), x[:, :1].expand(2, 3, 4).flip(1)]
    out += [lib.fliplr(x), lib.flipud(x), lib.fliplr(x[0]), lib.flipud(x[0, 0])]
    return out


def rolls(lib, x):
    out = [x.roll(1), x.roll(-2), x.roll(1, 0), x.roll((1, 2), (0, 2)), x.roll(5, -1)]
    out += [x.roll([1, -1], [1, 2]), x.transpose(0, 2).roll(2, 0), lib.roll(x[0, 0], 7)]
    out += [lib.roll(x, shifts=-1, dims=1), x.roll(0), lib.roll(x[:, :0], 1, 1)]
    return out


def rotations(lib, x):
    m = x[0]
    out = [m.rot90(k, [0, 1]) for k in range(-5, 6)]
    out += [m.rot90(), m.rot90(1, [1, 0]), x.rot90(1, [1, 2]), x.rot90(1, [1, -1])]
    out += [lib.rot90(x, 2, (0, 2)), lib.rot90(x, k=3, dims=[2, 0])]
    return out


def diagonals(lib, x):
    m = x[0]
    v = x[0, 0]
    out = [lib.diag(m), lib.diag(m, 1), lib.diag(m, -1), lib.diag(m, 3), lib.diag(m, -5)]
    out += [lib.diag(v), lib.diag(v, 2), lib.diag(v, -1), lib.diagonal(m), lib.diagonal(m, 2)]
    out += [lib.diagonal(x, 1, 1, 2), lib.diagonal(x, -1, 2, 0), x.diagonal(0, -2, -1)]
    out += [x.permute(1, 2, 0).diagonal(0, -2, -1), x.diagonal(2, 0, -1)]
    out += [lib.diag_embed(v), lib.diag_embed(m, 1), lib.diag_embed(m, -2, 0, 2)]
    out += [lib.diag_embed(x, 0, -1, 0), lib.diagflat(m), lib.diagflat(v, -2), lib.diagflat(m, 1)]
    out += [m.trace(), x[0].to(lib.int32).trace(), x[0].to(lib.int8).trace()]
    return out


def triangles(lib, x):
    out = []
    for k in (-5, -2, -1, 0, 1, 2, 5):
        out += [lib.tril(x, k), lib.triu(x, k), x[0].tril(k), x[0].triu(diagonal=k)]
    out += [lib.tril(x.transpose(1, 2)), lib.triu(x[:, :0]), lib.tril(x.to(lib.int64), 1)]
    out += [lib.tril(x > 0), lib.triu(x.to(lib.float64), -1)]
    return out


def nonzeros(lib, x):
    b = x > 0
    out = [
        lib.nonzero(x),
        x.nonzero(),
        values(lib.nonzero(x, as_tuple=True)),
        values(x.nonzero(as_tuple=True)),
    ]
    out += [
        values(lib.nonzero(b[0, 0], as_tuple=True)),
        lib.nonzero(b),
        x.transpose(0, 2).nonzero(),
    ]
    out += [
        lib.nonzero(x[0, 0, 0]),
        values(lib.nonzero(x[0, 0, 0], as_tuple=True)),
        lib.argwhere(x),
    ]
    out += [lib.nonzero(x[:0]), values(lib.nonzero(x[:0], as_tuple=True)), lib.count_nonzero(x, 1)]
    return out


def clamps(lib, x):
    lo, hi = x[0] - 1, x[1] + 1
    out = [x.clamp(-1, 1), x.clamp(min=-1), x.clamp(max=0.5), lib.clamp(x, lo, hi)]
    out += [
        lib.clamp(x, min=lo),
        lib.clamp(x, max=hi[0, 0]),
        x.clip(lo[0], hi[0]),
        lib.clip(x, hi, lo),
    ]
    out += [x.clamp(2, -2), x.clamp_min(0), x.clamp_max(lo), x.to(lib.int64).clamp(-1, 1)]
    out += [x.to(lib.int64).clamp(-1.5, 1.5), x.to(lib.int32).clamp(lo, hi)]
    out += [x.to(lib.int64).clamp(lib.tensor(-1.5)), lib.clamp(x, lib.tensor(0, dtype=lib.int64))]
    out += [lib.clamp(x.to(lib.float64), lo, hi), lib.clamp(x, float("nan"))]
    out += [lib.clamp(x.to(lib.int64), max=lib.tensor(1, dtype=lib.int32))]
    out += [x.to(lib.uint8).clamp(1, 2), x.to(lib.int64).clamp(max=lib.tensor(0.5))]
    out += [(x > 0).clamp(0, 1), (x > 0).clamp(min=0.5)]
    return out


def clamp_nan(lib, x):
    y = x / (x - x[0, 0, 0])  # a nan where x equals x[0, 0, 0], infinities elsewhere
    bounds = lib.full_like(y, 0.5)
    bounds[0, 0, 1] = float("nan")
    return [y.clamp(-1, 1), y.clamp(min=bounds), y.clamp(max=bounds), y.clamp(bounds, bounds)]


def moves(lib, x):
    out = [lib.movedim(x, 0, 2), lib.movedim(x, -1, 0), lib.moveaxis(x, (0, 1), (2, 0))]
    out += [lib.movedim(x, [0, -1], [-1, 0]), x.movedim((), ()), x.moveaxis(1, 1)]
    out += [x.movedim((0, 1, 2), (2, 1, 0)), lib.movedim(x, source=(2,), destination=(0,))]
    out += [lib.movedim(x[0, 0, 0], 0, 0), lib.movedim(x[0, 0, 0], -1, -1)]
    return out


def take_along(lib, x):
    idx = lib.argsort(x, dim=1)
    out = [lib.take_along_dim(x, idx, dim=1), lib.take_along_dim(x, idx[:, :1], 1)]
    out += [lib.take_along_dim(x, lib.argmax(x).reshape(1)), x.take_along_dim(idx[:1], dim=1)]
    out += [lib.take_along_dim(x, idx[:, :, :1], dim=-1), lib.take_along_dim(x, idx[:1, :, :2], -1)]
    out += [lib.take_along_dim(x, lib.tensor([[[-1]]]), 2)]
    return out


def stacks(lib, x):
    a, b, v, s = x[0], x[1], x[0, 0], x[0, 0, 0]
    out = [lib.hstack((a, b)), lib.hstack([v, v]), lib.hstack((s, s)), lib.vstack((a, b))]
    out += [lib.vstack([v, v]), lib.vstack((s, s)), lib.dstack((a, b)), lib.dstack([v, v])]
    out += [
        lib.dstack((s, s)),
        lib.column_stack((v, v)),
        lib.column_stack((a, x[0, :, 0])),
        lib.row_stack((v, v)),
    ]
    out += [lib.column_stack((s, s)), lib.hstack((x, x)), lib.vstack((a.to(lib.int64), b))]
    out += [lib.dstack((a, b.to(lib.float64))), lib.column_stack([a.T, v])]
    return out


def unfolds(lib, x):
    out = [x.unfold(2, 2, 1), x.unfold(0, 2, 1), x.unfold(1, 2, 2), x.unfold(-1, 3, 3)]
    out += [x.unfold(2, 4, 1), x.unfold(2, 0, 1), x[0, 0, 0].unfold(0, 1, 1), x.unfold(1, 1, 5)]
    out += [x.transpose(0, 2).unfold(1, 2, 1), x[0, 0, 0].unfold(0, 0, 2)]
    return out


TENSOR_SCENARIOS = [
    flips, rolls, rotations, diagonals, triangles, nonzeros, clamps, clamp_nan, moves,
    take_along, stacks, unfolds,
]  # fmt: skip


def input_of(lib, dtype="float32"):
    return numbers(lib, 2, 3, 4, dtype=dtype)


GAPS = {}


@pytest.mark.parametrize("scenario", cases(TENSOR_SCENARIOS, GAPS))
def test_shape_ops_as_torch(torch, scenario):
    expected = scenario(torch, input_of(torch))
    assert_same(scenario(kn, input_of(kn)), expected)


@pytest.mark.parametrize("dtype", ["int64", "float64", "complex128", "bool"])
@pytest.mark.parametrize("scenario", [flips, rolls, rotations, moves, unfolds, stacks])
def test_shape_ops_dtypes_as_torch(torch, scenario, dtype):
    expected = scenario(torch, input_of(torch, dtype))
    assert_same(scenario(kn, input_of(kn, dtype)), expected)


COMPILABLE = [s for s in TENSOR_SCENARIOS if s not in (nonzeros, clamp_nan)]


@pytest.mark.parametrize("scenario", cases(COMPILABLE, {}))
def test_shape_ops_compiled_as_torch(torch, scenario):
    expected = scenario(torch, input_of(torch))
    compiled = kn.compile(lambda x: scenario(kn, x))
    assert_same(compiled(input_of(kn)), expected, layout=False)


# -- scenarios without inputs ------------------------------------------------------------------


def flip_edge_cases(lib):
    data = lib.tensor([1, 2, 3, 4, 5, 6, 7, 8]).view(2, 2, 2)
    expanded = lib.tensor([1, 2, 3]).view(3, 1).expand(3, 2)
    out = [expanded.flip(0), expanded.flip(1), lib.tensor([]).flip(0), lib.tensor([]).flip(())]
    out += [lib.zeros(3, 0, 2).flip(1), lib.tensor(3.0).flip(0), lib.ones(1).flip(0)]
    out += [data.flip(0).is_contiguous(), data.flip(0).data_ptr() == data.data_ptr()]
    f = data.flip(0)
    f[0, 0, 0] = 100
    out += [data, f, data[:, :, ::2].flip(2)]
    return out


def nonzero_out_and_grad(lib):
    x = numbers(lib, 4, 4)
    out = lib.empty(0, dtype=lib.int64)
    r = lib.nonzero(x, out=out)
    nc = lib.zeros(4, 8)[:, ::2]
    nc.copy_(x)
    g = lib.ones(5, requires_grad=True)
    return [r is out, values(out), lib.nonzero(nc), g.nonzero().requires_grad, g.nonzero().dtype]


def clamp_inplace_and_out(lib):
    out = []
    for name in ("clamp_", "clip_"):
        x = numbers(lib, 10)
        y = getattr(x, name)(-1, 1)
        out += [x, y is x]
    x = numbers(lib, 10)
    o = lib.empty(10)
    r = lib.clamp(x, min=-1, max=1, out=o)
    x2 = numbers(lib, 10)
    x2.clamp_(min=lib.zeros(10))
    x3 = numbers(lib, 10, dtype="int64")
    x3.clamp_(max=lib.tensor(1))
    return out + [o, r is o, x2, x3]


def clamp_scalar_nan_bounds(lib):
    x = lib.ones(3)
    return [lib.clamp(x, None, float("nan")), lib.clamp(x, float("nan"), None)]


def unfold_scalars_and_empties(lib):
    s = lib.tensor(0.5)
    e = lib.empty((0, 1, 3, 0))
    return [s.unfold(0, 0, 1), s.unfold(0, 0, 2), s.unfold(0, 1, 1), e.unfold(2, 3, 2)]


def stacks_of_scalars_and_lists(lib):
    s = lib.tensor(1.0)
    return [lib.atleast_1d(s), lib.atleast_2d((s, s)), lib.atleast_3d(s, lib.ones(2))]


def diag_embed_non_finite(lib):
    x = lib.tensor([[1.0, float("inf"), float("nan")], [-2.0, 0.0, float("-inf")]])
    w = lib.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    y = lib.diag_embed(w * 2, 1, 0, 2)
    (y * lib.arange(32.0).reshape(4, 2, 4)).sum().backward()
    return [lib.diag_embed(x), lib.diag_embed(x, -1), lib.diag_embed(x, 2, 2, 0), y, w.grad]


SCENARIOS = [
    diag_embed_non_finite,
    flip_edge_cases,
    nonzero_out_and_grad,
    clamp_inplace_and_out,
    clamp_scalar_nan_bounds,
    unfold_scalars_and_empties,
    stacks_of_scalars_and_lists,
]


@pytest.mark.parametrize("scenario", cases(SCENARIOS, {}))
def test_shape_scenarios_as_torch(torch, scenario):
    expected = scenario(torch)
    assert_same(scenario(kn), expected)


# -- refusals ----------------------------------------------------------------------------------

ERRORS = {
    "flip_repeated_dim": lambda lib: lib.zeros(2, 2, 2).flip(0, 1, 1),
    "flip_no_dims": lambda lib: lib.zeros(2, 2, 2).flip(),
    "flip_too_many_dims": lambda lib: lib.zeros(2, 2, 2).flip(0, 1, 2, 3),
    "flip_dim_out_of_range": lambda lib: lib.zeros(2, 2, 2).flip(3),
    "flip_no_dims_keyword": lambda lib: lib.flip(lib.zeros(2, 2)),
    "roll_empty_shifts_list": lambda lib: lib.roll(lib.zeros(2, 2), [], []),
    "fliplr_1d": lambda lib: lib.fliplr(lib.zeros(42)),
    "fliplr_0d": lambda lib: lib.fliplr(lib.tensor(42.0)),
    "flipud_0d": lambda lib: lib.flipud(lib.tensor(42)),
    "rot90_dim_out_of_range": lambda lib: arange(lib, 2, 2).rot90(1, [0, -3]),
    "rot90_dim_2_of_2d": lambda lib: arange(lib, 2, 2).rot90(1, [0, 2]),
    "rot90_dim_3_of_3d": lambda lib: arange(lib, 2, 2, 2).rot90(1, [0, 3]),
    "rot90_same_dims": lambda lib: arange(lib, 2, 2, 2).rot90(1, [1, 1]),
    "rot90_three_dims": lambda lib: arange(lib, 2, 2, 2).rot90(1, [0, 1, 2]),
    "rot90_one_dim": lambda lib: arange(lib, 2, 2, 2).rot90(1, [0]),
    "rot90_1d": lambda lib: arange(lib, 4).rot90(),
    "roll_shifts_dims_mismatch": lambda lib: arange(lib, 2, 2).roll((1, 2), (0,)),
    "roll_dim_out_of_range": lambda lib: arange(lib, 2, 2).roll(1, 2),
    "roll_no_shifts": lambda lib: arange(lib, 2, 2).roll((), ()),
    "clamp_no_bounds": lambda lib: lib.zeros(3).clamp(),
    "clamp__no_bounds": lambda lib: lib.zeros(3).clamp_(),
    "torch_clamp_no_bounds": lambda lib: lib.clamp(lib.zeros(3)),
    "clamp_complex": lambda lib: lib.zeros(3, dtype=lib.complex64).clamp(0, 1),
    "clamp_tensor_bounds_wrong_shape": lambda lib: lib.zeros(3).clamp(lib.zeros(4)),
    "clamp__int_with_float_tensor": lambda lib: lib.zeros(3, dtype=lib.int64).clamp_(lib.zeros(3)),
    "nonzero_out_float": lambda lib: lib.nonzero(lib.ones(3), out=lib.empty(0)),
    "nonzero_as_tuple_out": lambda lib: lib.nonzero(
        lib.ones(3), as_tuple=True, out=lib.empty(0, dtype=lib.int64)
    ),
    "unfold_negative_size": lambda lib: arange(lib, 7).unfold(0, -1, 1),
    "unfold_negative_step": lambda lib: arange(lib, 7).unfold(0, 1, -1),
    "unfold_zero_step": lambda lib: arange(lib, 7).unfold(0, 1, 0),
    "unfold_too_big": lambda lib: arange(lib, 7).unfold(0, 8, 1),
    "unfold_dim_out_of_range": lambda lib: arange(lib, 7).unfold(1, 1, 1),
    "diag_3d": lambda lib: lib.diag(lib.zeros(2, 2, 2)),
    "diag_embed_same_dims": lambda lib: lib.diag_embed(lib.zeros(2, 2), 0, 1, 1),
    "diagonal_1d": lambda lib: lib.diagonal(lib.zeros(3)),
    "diagonal_0d": lambda lib: lib.diagonal(lib.tensor(1.0)),
    "diagonal_1d_dims_0_0": lambda lib: lib.diagonal(lib.zeros(3), 0, 0, -1),
    "take_along_dim_rank_3_2": lambda lib: lib.take_along_dim(
        lib.zeros(2, 3, 4), lib.zeros(2, 3, dtype=lib.int64), 1
    ),
    "trace_3d": lambda lib: lib.zeros(2, 2, 2).trace(),
    "tril_1d": lambda lib: lib.tril(lib.zeros(3)),
    "triu_0d": lambda lib: lib.triu(lib.tensor(1.0)),
    "take_along_dim_rank": lambda lib: lib.take_along_dim(lib.zeros(2, 3), lib.tensor([0]), 1),
    "take_along_dim_float_index": lambda lib: lib.take_along_dim(
        lib.zeros(2, 3), lib.zeros(2, 1), 1
    ),
    "take_along_dim_dim_out_of_range": lambda lib: lib.take_along_dim(
        lib.zeros(2, 3), lib.tensor([[0]]), 2
    ),
    "hstack_empty": lambda lib: lib.hstack(()),
    "vstack_mismatch": lambda lib: lib.vstack((lib.zeros(2), lib.zeros(3))),
    "dstack_mismatch": lambda lib: lib.dstack((lib.zeros(2, 2), lib.zeros(3, 2))),
    "column_stack_empty": lambda lib: lib.column_stack([]),
    "vstack_empty": lambda lib: lib.vstack([]),
    "dstack_empty": lambda lib: lib.dstack(()),
    "row_stack_empty": lambda lib: lib.row_stack(()),
    "vstack_tensor_not_sequence": lambda lib: lib.vstack(lib.zeros(2, 2)),
    "dstack_tensor_not_sequence": lambda lib: lib.dstack(lib.zeros(2, 2)),
    "column_stack_tensor_not_sequence": lambda lib: lib.column_stack(lib.zeros(2, 2)),
    "atleast_2d_numbers": lambda lib: lib.atleast_2d(1, 2),
    "atleast_3d_number_in_list": lambda lib: lib.atleast_3d([lib.zeros(2), 3.0]),
    "hstack_tensor_not_sequence": lambda lib: lib.hstack(lib.zeros(2, 2)),
    "atleast_1d_number": lambda lib: lib.atleast_1d(1.0),
    "movedim_float_dim": lambda lib: lib.movedim(lib.zeros(2, 3), 0.0, 1),
}


ERROR_GAPS = {}


@pytest.mark.parametrize("call", cases(ERRORS, ERROR_GAPS))
def test_shape_refusals_as_torch(torch, call):
    assert_same_error(call, torch, kn)
