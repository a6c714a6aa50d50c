"""PyTorch's own shape-op tests (test_shape_ops.py) as an oracle, each edge a scenario of its
own (pt_oracle.py runs it on torch and on kiln, eagerly and under `kn.compile`, and compares
values, dtypes, shapes and exception types): flip and fliplr/flipud (dims forms, repeats, empty
and 0-d inputs), roll, rot90, movedim/moveaxis, diagonal/diag/diag_embed/diagflat with offsets
and dims, nonzero and argwhere, unfold, squeeze of several dims, tril/triu on batches,
tril_indices/triu_indices; the gradients of each, and which of them are views (diagonal:
writes go through) or copies (flip). test_port_pt_shapescatter_clamp.py has clamp/clip's,
test_port_pt_shapescatter_scatter.py the scatter/gather family's.

Expected values: torch 2.13 (the oracle).
"""

import numpy as np
import pytest
from pt_oracle import MODES, Leaf, Scenarios
from pt_shapescatter_common import grad_of as _grad

nan, inf = float("nan"), float("inf")
f32 = np.float32

CUBE = np.arange(1, 9, dtype=np.int64).reshape(2, 2, 2)
RECT = np.arange(1, 7, dtype=f32).reshape(2, 3)
B34 = np.arange(24, dtype=f32).reshape(2, 3, 4) - 7
SCALAR = np.array(0.5, f32)
EMPTY = np.zeros((3, 0, 2), f32)
X4 = np.arange(2 * 3 * 4 * 5, dtype=f32).reshape(2, 3, 4, 5)

SCENARIOS = Scenarios()
case = SCENARIOS.case


# -- flip, fliplr, flipud --------------------------------------------------------------------


@case("flip_dims_forms", CUBE)
def _(lib, x):
    return (x.flip(0), x.flip(1), x.flip(2), x.flip((0, 1)), x.flip(0, 1, 2), x.flip([-1]),
            lib.flip(x, (-3, 2)), lib.flip(x, dims=(2, 0)), x.flip(()),
            x.transpose(0, 1).flip(0, 1, 2), x[:, ::-1].flip(1))  # fmt: skip


@case("flip_expanded_and_rect", np.array([1, 2, 3], np.int64), RECT)
def _(lib, v, r):
    e = v.view(3, 1).expand(3, 2)
    return e.flip(0), e.flip(1), r.flip(0), r.flip(1), r[:, ::2].flip(1)


@case("flip_dtypes", np.array([[1, 0], [0, 1]], bool), np.array([1 + 2j, 3 - 1j], np.complex64))
def _(lib, b, c):
    return b.flip(1), c.flip(0), b.half().flip(0), b.to(lib.bfloat16).flip(1).float()


@case("flip_empty_and_scalar", EMPTY, SCALAR, np.zeros(0, f32))
def _(lib, e, s, z):
    return e.flip(0), e.flip(1), e.flip((0, 2)), s.flip(0), s.flip(()), z.flip(0), s.flip(-1)


@case("flip_repeated_dim", CUBE)
def _(lib, x):
    return x.flip(0, 1, 1)


@case("flip_dim_out_of_range", CUBE)
def _(lib, x):
    return x.flip(3)


@case("flip_too_many_dims", CUBE)
def _(lib, x):
    return x.flip(0, 1, 2, 3)


@case("flip_is_a_copy", RECT)
def _(lib, x):
    y = x.clone()
    f = y.flip(1)
    f.add_(100)
    return y, f


@case("flip_gradient", Leaf.of(RECT))
def _(lib, x):
    y = (x.flip(0), x.flip((0, 1)), lib.fliplr(x), lib.flipud(x))
    return y, _grad(lib, y, x)


@case("fliplr_flipud", X4, np.arange(5, dtype=np.int64))
def _(lib, x, v):
    return lib.fliplr(x), lib.flipud(x), lib.flipud(v), x.fliplr(), x[0, 0].flipud()


@case("fliplr_of_1d", np.arange(5, dtype=f32))
def _(lib, x):
    return lib.fliplr(x)


@case("fliplr_of_0d", SCALAR)
def _(lib, x):
    return lib.fliplr(x)


@case("flipud_of_0d", SCALAR)
def _(lib, x):
    return lib.flipud(x)


# -- roll ------------------------------------------------------------------------------------


@case("roll_forms", B34)
def _(lib, x):
    return (lib.roll(x, 1), lib.roll(x, -5), lib.roll(x, 2, 1), lib.roll(x, -1, -1),
            lib.roll(x, (1, -2), (0, 2)), lib.roll(x, (25,), (2,)), lib.roll(x, 0, 1),
            x.roll(shifts=[3, 3], dims=[1, 1]), lib.roll(x, 13), lib.roll(x, -100, 2),
            x.transpose(1, 2).roll(1, 1), lib.roll(x, (1, 1, 1), (0, 1, 2)))  # fmt: skip


@case("roll_empty_and_scalar", EMPTY, SCALAR, np.zeros(0, f32))
def _(lib, e, s, z):
    return lib.roll(e, 1, 0), lib.roll(e, 3, 1), lib.roll(s, 1), lib.roll(z, 2), lib.roll(e, 2)


@case("roll_shifts_dims_mismatch", B34)
def _(lib, x):
    return lib.roll(x, (1, 2), 0)


@case("roll_dim_out_of_range", B34)
def _(lib, x):
    return lib.roll(x, 1, 3)


@case("roll_several_shifts_no_dims", B34)
def _(lib, x):
    return lib.roll(x, (1, 2))


@case("roll_gradient", Leaf.of(RECT))
def _(lib, x):
    y = (lib.roll(x, 1), lib.roll(x, (-1, 2), (0, 1)), lib.roll(x, 4, 1))
    return y, _grad(lib, y, x)


# -- rot90 -----------------------------------------------------------------------------------


@case("rot90_k_and_dims", np.arange(1, 5, dtype=np.int64).reshape(2, 2), CUBE)
def _(lib, x, c):
    return (x.rot90(0, [0, 1]), x.rot90(1, [0, 1]), x.rot90(2, [0, 1]), x.rot90(3, [0, 1]),
            x.rot90(), x.rot90(1, [1, 0]), x.rot90(5, [0, 1]), x.rot90(-1, [0, 1]),
            x.rot90(-5, [0, 1]), c.rot90(1, [1, 2]), c.rot90(1, [1, -1]),
            lib.rot90(c, 2, (2, 0)), lib.rot90(c, -2, [-1, -3]))  # fmt: skip


@case("rot90_rect_and_complex", RECT, np.array([[1 + 1j, 2], [3j, 4 - 1j], [0, 1]], np.complex64))
def _(lib, r, c):
    return r.rot90(1), r.rot90(3), r.rot90(2), c.rot90(1), c.rot90(-1, [1, 0])


for _dims in ((0, 3), (1, 1), (0, 1, 2), (0,)):

    @case(f"rot90_refuses_dims_{'_'.join(map(str, _dims))}", CUBE)
    def _(lib, x, _dims=_dims):
        return x.rot90(1, list(_dims))


@case("rot90_refuses_dims_out_of_range_2d", np.arange(4, dtype=f32).reshape(2, 2))
def _(lib, x):
    return x.rot90(1, [0, -3])


@case("rot90_gradient", Leaf.of(RECT))
def _(lib, x):
    y = (x.rot90(1), x.rot90(2), x.rot90(-1, [1, 0]))
    return y, _grad(lib, y, x)


# -- movedim, moveaxis -----------------------------------------------------------------------


@case("movedim_forms", X4)
def _(lib, x):
    return (lib.movedim(x, 0, 3).shape, lib.movedim(x, -1, 0), lib.moveaxis(x, 1, -1),
            lib.movedim(x, (0, 1), (2, 3)), lib.movedim(x, (3, 0), (0, 3)),
            lib.moveaxis(x, (-1, 1), (1, -1)), x.movedim(1, 1), x.movedim((0, 1), (0, 1)),
            x.movedim((), ()), x.moveaxis([2], [0]), lib.movedim(x, (0, 2, 3), (3, 1, 0)),
            lib.movedim(x, source=1, destination=2))  # fmt: skip


@case("movedim_scalar", SCALAR)
def _(lib, x):
    return lib.movedim(x, 0, 0), lib.movedim(x, -1, 0), lib.moveaxis(x, (), ())


@case("movedim_is_a_view", np.arange(6, dtype=f32).reshape(2, 3))
def _(lib, x):
    y = x.clone()
    m = y.movedim(0, 1)
    m[0, 1] = 100
    return y, m


for _name, (_src, _dst) in {
    "source_out_of_range": (5, 0),
    "destination_out_of_range": (0, 5),
    "lengths_differ": ((1, 0), (0,)),
    "repeated_source": ((0, 0), (0, 1)),
    "repeated_source_3": ((0, 1, 0), (0, 1, 2)),
    "repeated_destination": ((0, 1), (1, 1)),
    "repeated_destination_3": ((0, 1, 2), (1, 0, 1)),
}.items():

    @case(f"movedim_refuses_{_name}", X4)
    def _(lib, x, _src=_src, _dst=_dst):
        return lib.movedim(x, _src, _dst)

    @case(f"moveaxis_refuses_{_name}", X4)
    def _(lib, x, _src=_src, _dst=_dst):
        return lib.moveaxis(x, _src, _dst)


# -- diagonal, diag, diag_embed, diagflat ------------------------------------------------------


@case("diagonal_offsets_and_dims", X4)
def _(lib, x):
    return (lib.diagonal(x, 2, 2, 3), lib.diagonal(x, 2), lib.diagonal(x, -2, 1, 2),
            lib.diagonal(x, 0, -2, -1), x.permute(1, 2, 3, 0).diagonal(0, -2, -1),
            x.diagonal(offset=1, dim1=3, dim2=1), x.diagonal(10), x.diagonal(-10, 2, 3),
            x[0, 0].diagonal(4), x[0, 0].diagonal(-4), x[0, 0].diagonal(5))  # fmt: skip


@case("diagonal_of_empty_batches", np.zeros((3, 0, 1), f32), np.zeros((0, 2, 3), f32))
def _(lib, x, y):
    # (an empty view whose diagonal starts past the end of the memory)
    return x.diagonal(-1, 0, 2), x.diagonal(1, 2, 0), y.diagonal(2, 1, 2), y.diagonal(-1, -1, -2)


@case("diagonal_same_dims", X4)
def _(lib, x):
    return lib.diagonal(x, 0, 1, 1)


@case("diagonal_dim_out_of_range", RECT)
def _(lib, x):
    return lib.diagonal(x, 0, 0, 2)


@case("diagonal_of_1d", np.arange(3, dtype=f32))
def _(lib, x):
    return lib.diagonal(x)


@case("diagonal_is_a_view", np.arange(12, dtype=f32).reshape(3, 4))
def _(lib, x):
    y = x.clone()
    d = y.diagonal(1)
    d.mul_(-1)
    z = x.clone()
    z.diagonal().fill_(7)
    w = x.clone()
    w.diagonal(-1).copy_(lib.tensor([10.0, 20.0]))
    return y, d, z, w


@case("diagonal_write_gradients", Leaf.of(np.arange(12, dtype=f32).reshape(3, 4)),
      Leaf.of(np.array([10.0, 20.0, 30.0], f32)))  # fmt: skip
def _(lib, x, v):
    # writes through diagonal views of a non-leaf: the written elements' gradient goes to v,
    # the rest to x
    y = x * 2
    y.diagonal().mul_(v)
    z = x + 1
    z.diagonal(1).copy_(v)
    w = x.clone()
    w.T.diagonal(-1)[:2] = v[:2]
    out = (y, z, w)
    return out, _grad(lib, out, x, v)


@case("diag_forms", np.arange(12, dtype=f32).reshape(3, 4), np.array([1, 2, 3], np.int64))
def _(lib, m, v):
    return (lib.diag(m), lib.diag(m, 1), lib.diag(m, -2), lib.diag(m, 3), lib.diag(m, 4),
            lib.diag(v), lib.diag(v, 1), lib.diag(v, -2), m.diag(-3), lib.diag(m > 4),
            lib.diag(v[:0]), lib.diag(v[:0], 2))  # fmt: skip


@case("diag_out", np.arange(12, dtype=f32).reshape(3, 4))
def _(lib, m):
    out = lib.empty(0)
    r = lib.diag(m, 1, out=out)
    return r, out


@case("diag_of_3d", X4)
def _(lib, x):
    return lib.diag(x[0])


@case("diag_of_0d", SCALAR)
def _(lib, x):
    return lib.diag(x)


@case("diag_embed_forms", np.arange(6, dtype=f32).reshape(2, 3))
def _(lib, x):
    return (lib.diag_embed(x), lib.diag_embed(x, 1), lib.diag_embed(x, -2),
            lib.diag_embed(x, 0, 0, 2), lib.diag_embed(x, 1, -1, 0),
            lib.diag_embed(x, dim1=1, dim2=0), lib.diag_embed(x[0]),
            x.diag_embed(offset=-1, dim1=2, dim2=1))  # fmt: skip


@case("diag_embed_same_dims", np.arange(6, dtype=f32).reshape(2, 3))
def _(lib, x):
    return lib.diag_embed(x, 0, 1, 1)


@case("diagflat_forms", np.arange(6, dtype=f32).reshape(2, 3), SCALAR)
def _(lib, x, s):
    return (lib.diagflat(x), lib.diagflat(x, 1), lib.diagflat(x, -2), lib.diagflat(s),
            lib.diagflat(s, 2), x.diagflat(-1), lib.diagflat(x[:, :0]))  # fmt: skip


@case("diagonal_family_gradients", Leaf.of(np.arange(12, dtype=f32).reshape(3, 4)))
def _(lib, x):
    y = (x.diagonal(1), lib.diag(x, -1), lib.diag_embed(x, 1), lib.diagflat(x[0], -1),
         x.diagonal(0, 1, 0), lib.diag(x[1]))  # fmt: skip
    return y, _grad(lib, y, x)


@case("trace_dtypes", np.arange(12, dtype=np.int8).reshape(3, 4), RECT, np.eye(3, dtype=bool))
def _(lib, i, f, b):
    return lib.trace(i), lib.trace(f), lib.trace(b), lib.trace(i.T), lib.trace(f.to(lib.uint8))


@case("trace_of_3d", X4)
def _(lib, x):
    return lib.trace(x[0])


# -- nonzero, argwhere -------------------------------------------------------------------------

NZ = np.array([[0, 1, 0, 2], [0, 0, 0, 0], [3, 0, nan, -0.0]], f32)


@case("nonzero_forms", NZ, np.array([[True, False], [True, True]]), np.arange(-2, 4))
def _(lib, x, b, i):
    return (lib.nonzero(x), x.nonzero(as_tuple=True), lib.nonzero(b, as_tuple=False),
            lib.nonzero(i), i.nonzero(as_tuple=True), lib.argwhere(x), x.argwhere(),
            lib.nonzero(x.T), lib.nonzero(x.half()), lib.nonzero(x.to(lib.complex64)),
            lib.nonzero(x[:, ::2]), lib.nonzero(x.reshape(3, 2, 2), as_tuple=True))  # fmt: skip


@case("nonzero_scalar_and_empty", SCALAR, np.array(0, np.int64), EMPTY)
def _(lib, s, z, e):
    return (lib.nonzero(s), lib.nonzero(z), lib.nonzero(s, as_tuple=True),
            lib.nonzero(z, as_tuple=True), lib.argwhere(s), lib.argwhere(z), lib.nonzero(e),
            lib.nonzero(e, as_tuple=True), lib.argwhere(e))  # fmt: skip


@case("nonzero_out", NZ)
def _(lib, x):
    out = lib.empty((), dtype=lib.long)
    r = lib.nonzero(x, out=out)
    return r, out


@case("nonzero_out_used_after", NZ)
def _(lib, x):
    # an out= of a data-dependent length, made in the (compiled) function and used after
    out, picked = lib.empty(0, dtype=lib.long), lib.empty(0)
    lib.nonzero(x, out=out)
    lib.masked_select(x, x > 0, out=picked)
    return out * 2, out.shape[1], picked.sum()


@case("nonzero_out_float", NZ)
def _(lib, x):
    return lib.nonzero(x, out=lib.empty((), dtype=lib.float32))


@case("nonzero_as_tuple_with_out", NZ)
def _(lib, x):
    return lib.nonzero(x, as_tuple=True, out=lib.empty(0, dtype=lib.long))


@case("nonzero_of_a_leaf_needs_no_grad", Leaf.of(NZ))
def _(lib, x):
    return x.nonzero().requires_grad, lib.argwhere(x).requires_grad, x.nonzero().dtype


# -- unfold ------------------------------------------------------------------------------------


@case("unfold_forms", np.arange(1, 8, dtype=f32), X4)
def _(lib, v, x):
    return (v.unfold(0, 2, 1), v.unfold(0, 3, 2), v.unfold(0, 7, 1), v.unfold(0, 2, 10),
            v.unfold(0, 0, 1), x.unfold(3, 2, 2), x.unfold(-1, 5, 1), x.unfold(1, 2, 1),
            x.transpose(1, 3).unfold(1, 3, 2), v.unfold(-1, 1, 3))  # fmt: skip


@case("unfold_empty_and_scalar", np.zeros((0, 1, 3, 0), f32), SCALAR)
def _(lib, e, s):
    return (e.unfold(2, 3, 2), e.to(lib.bool).unfold(2, 3, 2), s.unfold(0, 0, 1),
            s.unfold(0, 0, 2), s.unfold(0, 1, 1))  # fmt: skip


@case("unfold_negative_size", np.arange(1, 8, dtype=f32))
def _(lib, v):
    return v.unfold(0, -1, 1)


@case("unfold_negative_step", np.arange(1, 8, dtype=f32))
def _(lib, v):
    return v.unfold(0, 1, -1)


@case("unfold_zero_step", np.arange(1, 8, dtype=f32))
def _(lib, v):
    return v.unfold(0, 1, 0)


@case("unfold_size_too_big", np.arange(1, 8, dtype=f32))
def _(lib, v):
    return v.unfold(0, 8, 1)


@case("unfold_scalar_size_2", SCALAR)
def _(lib, s):
    return s.unfold(0, 2, 1)


@case("unfold_is_a_view", np.arange(1, 8, dtype=f32))
def _(lib, v):
    y = v.clone()
    u = y.unfold(0, 3, 2)
    u[1, 0] = -100
    return y, u


@case("unfold_gradient", Leaf.of(np.arange(1, 8, dtype=f32)), Leaf.of(RECT))
def _(lib, v, r):
    # overlapping windows add up in the gradient; a tail left out gets 0
    y = (v.unfold(0, 3, 1), v.unfold(0, 2, 3), r.unfold(1, 2, 1), r.unfold(0, 1, 1))
    return y, _grad(lib, y, v, r)


# -- squeeze, unsqueeze ------------------------------------------------------------------------

S = np.arange(6, dtype=f32).reshape(1, 2, 1, 3, 1)


@case("squeeze_several_dims", S, SCALAR)
def _(lib, x, s):
    return (x.squeeze(), x.squeeze(0), x.squeeze(1), x.squeeze((0, 2)), x.squeeze((0, 1, -1)),
            lib.squeeze(x, (-1, -3)), x.squeeze(()), lib.squeeze(x, [4, 0, 2]), s.squeeze(0),
            s.squeeze(()), s.squeeze((0,)), s.squeeze(-1), x.squeeze((0, 0)))  # fmt: skip


@case("squeeze_dim_out_of_range", S)
def _(lib, x):
    return x.squeeze((0, 5))


@case("squeeze_scalar_dim_1", SCALAR)
def _(lib, s):
    return s.squeeze(1)


@case("squeeze_inplace_several_dims", S)
def _(lib, x):
    y = x.clone()
    y.squeeze_((0, 2))
    z = x.clone()
    z.unsqueeze_(-1)
    return y, z


@case("squeeze_gradient", Leaf.of(S))
def _(lib, x):
    y = (x.squeeze((0, 2)), x.squeeze(), x.squeeze(1).unsqueeze(-2))
    return y, _grad(lib, y, x)


# -- tril, triu, tril_indices, triu_indices ----------------------------------------------------


@case("tril_triu_offsets_batches", B34, np.arange(12, dtype=np.int64).reshape(3, 4) % 3 == 0)
def _(lib, x, b):
    return (lib.tril(x), lib.triu(x), lib.tril(x, 1), lib.triu(x, -1), lib.tril(x, -5),
            lib.triu(x, 5), lib.tril(x, 10), lib.triu(x, -10), x.tril(-1), x.triu(diagonal=2),
            lib.tril(b), lib.triu(b, 1), lib.tril(x.transpose(1, 2), 1),
            lib.triu(x[:, :, :0]), lib.tril(x.long(), -2))  # fmt: skip


@case("tril_of_1d", np.arange(3, dtype=f32))
def _(lib, x):
    return lib.tril(x)


@case("tril_triu_inplace_and_out", B34)
def _(lib, x):
    a, b = x.clone(), x.clone()
    a.tril_(1)
    b.triu_(-1)
    out = lib.empty(0)
    return a, b, lib.triu(x, 1, out=out), out


@case("tril_triu_gradients", Leaf.of(B34))
def _(lib, x):
    y = (lib.tril(x, 1), lib.triu(x, -1), lib.tril(x, -3))
    return y, _grad(lib, y, x)


@case("tril_triu_indices", SCALAR)
def _(lib, _):
    return (lib.tril_indices(3, 3), lib.triu_indices(3, 3), lib.tril_indices(4, 3, 1),
            lib.triu_indices(4, 3, -1), lib.tril_indices(3, 5, -2), lib.triu_indices(3, 5, 2),
            lib.tril_indices(3, 3, 10), lib.triu_indices(3, 3, 10), lib.tril_indices(3, 3, -10),
            lib.tril_indices(0, 3), lib.triu_indices(3, 0), lib.tril_indices(1, 1),
            lib.tril_indices(3, 3, dtype=lib.int32), lib.triu_indices(3, 3, -10))  # fmt: skip


@case("triu_indices_int16", SCALAR)
def _(lib, _):
    return lib.triu_indices(2, 4, 1, dtype=lib.int16)


@case("tril_indices_float_dtype", SCALAR)
def _(lib, _):
    return lib.tril_indices(3, 3, dtype=lib.float32)


@case("tril_indices_negative_row", SCALAR)
def _(lib, _):
    return lib.tril_indices(-1, 3)


# -- more edges: negative duplicate dims, views of views, dtypes ---------------------------------


@case("flip_repeated_dim_negative", CUBE)
def _(lib, x):
    return x.flip(0, -3)


@case("flip_no_dims", CUBE)
def _(lib, x):
    return x.flip()


@case("roll_no_dims_flattens_views", B34)
def _(lib, x):
    # without dims, the elements in the logical row-major order roll, a view's too
    return lib.roll(x.transpose(0, 2), 5), lib.roll(x[:, ::2], -1), lib.roll(x[..., 1], 2)


@case("roll_dims_given_twice", B34)
def _(lib, x):
    return lib.roll(x, (1, 2), (0, 0)), lib.roll(x, (1, -1), (-1, 2))


@case("rot90_of_1d", np.arange(3, dtype=f32))
def _(lib, x):
    return x.rot90()


@case("rot90_big_k_and_ints", CUBE)
def _(lib, x):
    return x.rot90(1001, [2, 0]), x.rot90(-1002, [0, 2]), x.bool().rot90(3), x.rot90(4)


@case("diagonal_of_complex_writes", np.arange(9, dtype=np.complex64).reshape(3, 3))
def _(lib, x):
    y = x.clone()
    y.diagonal().imag.fill_(5)
    z = x.clone()
    z.diagonal(1).real.mul_(-1)
    return y, z


@case("diagonal_of_a_view_writes", X4)
def _(lib, x):
    y = x.clone()
    v = y[1].transpose(0, 2)  # (5, 4, 3)
    v.diagonal(1, 0, 1).zero_()
    w = x.clone()
    w[:, :, ::2].diagonal(0, -1, -2)[..., -1] = -7
    return y, w


@case("diag_embed_gradient_and_dims", Leaf.of(np.arange(6, dtype=f32).reshape(2, 3)))
def _(lib, x):
    y = (
        lib.diag_embed(x, -1, 0, 2),
        lib.diag_embed(x, 2, -1, -2),
        x.diag_embed().diagonal(0, 1, 2),
    )
    return y, _grad(lib, y, x)


@case("diag_out_of_2d_float_and_bool", np.arange(12, dtype=f32).reshape(3, 4))
def _(lib, m):
    out, bout = lib.empty(0), lib.empty(0, dtype=lib.bool)
    return lib.diag(m, out=out), out, lib.diag(m > 5, -1, out=bout), bout


@case("nonzero_bool_and_uint8_static", np.array([[1, 0, 2], [0, 0, 3]], np.uint8))
def _(lib, x):
    return lib.nonzero(x), lib.nonzero(x.bool(), as_tuple=True), lib.count_nonzero(x, 0)


@case("argwhere_transposed_and_int", np.array([[1, 0, 2], [0, 0, 3]], np.int32))
def _(lib, x):
    return lib.argwhere(x.T), lib.argwhere(x[:, ::-1]), lib.argwhere(x[:, :0])


@case("unfold_dim_out_of_range", np.arange(1, 8, dtype=f32))
def _(lib, v):
    return v.unfold(1, 2, 1)


@case("unfold_of_unfold", Leaf.of(np.arange(12, dtype=f32).reshape(3, 4)))
def _(lib, x):
    y = x.unfold(1, 2, 1).unfold(0, 2, 1)
    return y, _grad(lib, y, x)


@case("squeeze_dims_of_a_size_0_dim", np.zeros((1, 0, 1), f32))
def _(lib, x):
    return x.squeeze(), x.squeeze((0, 1)), x.squeeze(1), x.squeeze(-1)


@case("squeeze_is_a_view", S)
def _(lib, x):
    y = x.clone()
    y.squeeze((0, 2))[1, 0] = -5
    return y


@case("tril_triu_of_0d", SCALAR)
def _(lib, s):
    return lib.triu(s)


@case("tril_triu_big_offsets_ints", np.arange(12, dtype=np.int64).reshape(3, 4))
def _(lib, x):
    return (lib.tril(x, 2**40), lib.triu(x, -(2**40)), lib.tril(x, -(2**40)), x.bool().triu(9),
            lib.tril(x.to(lib.uint8), 1), lib.triu(x.to(lib.complex64), -1))  # fmt: skip


@case("tril_triu_of_a_view_writes", B34)
def _(lib, x):
    y = x.clone()
    y[0].tril_(-1)
    z = x.clone()
    z.transpose(1, 2).triu_(1)
    return y, z


@case("roll_of_empty_leaves_dims_unchecked", EMPTY, np.zeros(0, f32))
def _(lib, e, z):
    # an empty tensor rolls to its copy before its dims are checked (the lengths are)
    return lib.roll(e, 1, 5), lib.roll(z, (1, 2), (0, 7)), lib.roll(e, (3,), (-9,))


@case("roll_of_empty_lengths_differ", EMPTY)
def _(lib, e):
    return lib.roll(e, (1, 2), 0)


@case("diag_embed_of_0d_dims", SCALAR)
def _(lib, s):
    return lib.diag_embed(s, 0, -1, 0)


@case("diag_embed_of_0d", SCALAR)
def _(lib, s):
    return lib.diag_embed(s)


@case("unfold_of_0d_dim_out_of_range", SCALAR)
def _(lib, s):
    return s.unfold(1, 1, 1)


@case("unfold_of_0d_dim_minus_2", SCALAR)
def _(lib, s):
    return s.unfold(-2, 0, 1)


# -- the test ----------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", SCENARIOS.names())
def test_matches_torch(torch, name, mode):
    SCENARIOS.check(torch, name, mode)
