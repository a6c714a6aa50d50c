"""PyTorch's own indexing tests (test/test_indexing.py), the index functions: index_add_,
index_copy_, index_fill_, index_select, index_put_, take, put_, take_along_dim, index_reduce and
unravel_index, each run with torch 2.13 (the oracle) and kiln, eagerly and, where it makes sense,
under `kn.compile` (pt_indexing_common.check). Sums (index_add, accumulate=True) agree within
1e-6; every other value must be equal.
"""

import numpy as np
import pytest
from pt_indexing_common import check, check_compiled, consec

pytestmark = pytest.mark.filterwarnings("ignore:indexing with dtype uint8")


# -- index_add_, index_copy_, index_fill_, index_select ------------------------------------------

SCALAR_SIZES = [(), (1,), (3,), (3, 2)]


@pytest.mark.parametrize("op", ["index_add", "index_copy"])
@pytest.mark.parametrize("x_shape", SCALAR_SIZES, ids=str)
@pytest.mark.parametrize("index_shape", [(), (1,), (2,), (1, 1)], ids=str)
@pytest.mark.parametrize("source_shape", [(), (1,), (2,), (1, 2), (2, 2)], ids=str)
def test_index_add_and_copy_shapes(torch, op, x_shape, index_shape, source_shape):
    """0-d index and source count as one element; a source or index that does not fit is
    refused (kiln crashed with 'list assignment index out of range' on 0-d ones, and
    broadcast an index of 1 element over a source of 2 without a word)."""

    def scenario(lib):
        x = lib.zeros(x_shape)
        index = lib.zeros(index_shape, dtype=lib.int64)
        source = lib.arange(1.0, 1 + int(np.prod(source_shape))).view(source_shape)
        return getattr(x, op)(0, index, source), getattr(x.clone(), op + "_")(0, index, source)

    check(torch, scenario)


@pytest.mark.parametrize("op", ["index_add", "index_copy"])
def test_index_add_and_copy_refuse_another_source_dtype(torch, op):
    """torch: RuntimeError (self Float and source Double); kiln cast the source."""
    for src_dtype in ("float64", "int64", "float16"):
        check(torch, lambda lib, d=src_dtype: getattr(lib.zeros(3), op)(
            0, lib.tensor([1]), lib.ones(1, dtype=getattr(lib, d))))  # fmt: skip


def test_index_add_of_integers_truncates_a_float_alpha(torch):
    """torch 2.13 takes alpha=1.5 as 1 for an integer input ([0, 13, ...]); kiln gave 18
    (each source element times 1.5, truncated)."""
    for alpha in (1.5, -1.5, 2.0, True, 3):
        check(torch, lambda lib, a=alpha: lib.arange(6).index_add(
            0, lib.tensor([1, 1]), lib.tensor([5, 7]), alpha=a))  # fmt: skip


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_index_add_duplicates_alpha_and_int32_index(torch, dim):
    rng = np.random.default_rng(dim + 5)
    shape = [3, 4, 5]
    source_shape = list(shape)
    source_shape[dim] = 7
    index = rng.integers(0, shape[dim], 7)
    source = rng.normal(size=source_shape)

    def scenario(lib):
        x = consec(lib, *shape, dtype=lib.float64)
        i, src = lib.tensor(index), lib.tensor(source)
        return (x.index_add(dim, i, src, alpha=2.5), lib.index_add(x, dim, i.int(), src),
                x.clone().index_add_(dim, i, src, alpha=-1))  # fmt: skip

    check(torch, scenario)
    check_compiled(torch, lambda lib: (consec(lib, *shape, dtype=lib.float64),
                                       lib.tensor(index), lib.tensor(source)),
                   lambda lib, x, i, src: x.index_add(dim, i, src, alpha=2.5))  # fmt: skip


# -- index_put_ ----------------------------------------------------------------------------------

WALK = np.cumsum(np.random.default_rng(3).uniform(-1, 1, 300)).astype(np.int64)
WALK_BASE = np.random.default_rng(4).normal(size=int(np.abs(WALK).max()) + 1)
WALK_VALUES = np.random.default_rng(5).normal(size=300)


def test_index_put_accumulate_duplicates(torch):
    """Indices from a random walk (many repeats, negative ones counting from the end)."""

    def scenario(lib):
        x, i, v = lib.tensor(WALK_BASE), lib.tensor(WALK), lib.tensor(WALK_VALUES)
        y = x.clone()
        same = y.index_put_((i,), v, accumulate=True) is y
        return x.index_put((i,), v, accumulate=True), lib.index_put(x, (i,), v, True), y, same

    check(torch, scenario)
    check_compiled(torch, lambda lib: (lib.tensor(WALK_BASE), lib.tensor(WALK),
                                       lib.tensor(WALK_VALUES)),
                   lambda lib, x, i, v: x.index_put((i,), v, accumulate=True))  # fmt: skip


def test_index_put_accumulate_expanded_values(torch):
    def scenario(lib):
        t = lib.zeros(5, 2)
        rows = [lib.tensor([0, 1, 2, 3]), lib.tensor([1])]
        t.index_put_(rows, lib.tensor(1.0), accumulate=True)
        t.index_put_(rows, lib.tensor([1.0]), accumulate=True)
        u = lib.zeros(4, 3, 2)
        grid = [lib.tensor([0]), lib.arange(3)[:, None], lib.arange(2)[None, :]]
        u.index_put_(grid, lib.tensor([-1.0, -2.0]), accumulate=True)
        u.index_put_(grid, lib.tensor([[-1.0, -2.0]]), accumulate=True)
        return t, u

    check(torch, scenario)


@pytest.mark.parametrize("accumulate", [False, True])
def test_index_put_int32_and_int64_indices_agree(torch, accumulate):
    x_values = np.random.default_rng(6).normal(size=(4, 4)).astype(np.float32)

    def scenario(lib):
        x, i, src = lib.tensor(x_values), lib.arange(4), lib.tensor([1.0, 2.0, 3.0, 4.0])
        return (lib.index_put(x, (i, i), src, accumulate),
                lib.index_put(x, (i.int(), i.int()), src, accumulate),
                x.clone().index_put_((i.int(), i), src, accumulate=accumulate))  # fmt: skip

    check(torch, scenario)


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool", "complex64", "float64", "int32"])
def test_index_put_accumulate_and_index_of_each_dtype(torch, dtype):
    def scenario(lib):
        d = getattr(lib, dtype)
        src = lib.ones(3, 2, 4, dtype=d)
        vals = lib.ones(3, 2, 4, dtype=d)
        out = src.clone().index_put_((lib.tensor([0, 2, 1]),), vals, accumulate=True)
        res = src[[0, 2, 1], :, :]
        src[[0, 2, 1], :, :] = res
        return out, res, src

    check(torch, scenario)


def test_index_put_masks_and_errors(torch):
    check(torch, lambda lib: lib.ones(10, 10).index_put_(
        (lib.zeros(10, dtype=lib.bool),), lib.ones(0, 10), accumulate=True))  # fmt: skip
    check(torch, lambda lib: lib.zeros(2, 3).index_put((lib.tensor([True, False]),),
                                                       lib.tensor(4.0)))  # fmt: skip
    check(torch, lambda lib: lib.zeros(2, 3).index_put((lib.tensor(1),), lib.tensor(4.0)))
    check(
        torch,
        lambda lib: lib.zeros(5).index_put_(
            (lib.tensor([-1, -2, -1]),), lib.tensor([1.0, 2, 3]), accumulate=True
        ),
    )
    check(torch, lambda lib: lib.zeros(5).index_put_((lib.tensor([5]),), lib.tensor([1.0]),
                                                     accumulate=True))  # fmt: skip
    check(torch, lambda lib: lib.zeros(5).index_put_((lib.tensor([1, 2]),),
                                                     lib.tensor([1.0, 2.0, 3.0])))  # fmt: skip


def test_index_put_without_accumulate_takes_one_of_the_repeated_values(torch):
    """Repeated indices without accumulate: torch's CPU kernel writes in order (the last
    value wins)."""
    picks = np.random.default_rng(7).integers(0, 12, 500)
    check(torch, lambda lib: lib.arange(12.0).index_put((lib.tensor(picks),),
                                                        lib.arange(500.0)))  # fmt: skip


def test_index_put_gradients(torch):
    def scenario(lib, accumulate, value_shape):
        x = lib.zeros(4, 3, requires_grad=True)
        v = lib.ones(value_shape, requires_grad=True)
        y = x.index_put((lib.tensor([1, 1] if accumulate else [1, 2]),), v * 2, accumulate)
        (y * lib.arange(12.0).view(4, 3)).sum().backward()
        return y, x.grad, v.grad

    for accumulate, value_shape in [(True, (2, 3)), (False, (2, 3)), (False, (3,)), (True, ())]:
        check(torch, lambda lib, a=accumulate, s=value_shape: scenario(lib, a, s))


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool", "complex64", "float16", "uint8"])
def test_index_fill_of_each_dtype(torch, dtype):
    def scenario(lib):
        x = lib.tensor([[1, 2], [4, 5]], dtype=getattr(lib, dtype))
        x.index_fill_(1, lib.tensor([0]), 0)
        scalar = lib.tensor(1, dtype=getattr(lib, dtype))
        dims = scalar.index_fill(0, lib.tensor([0]), -1).dim()
        return x, dims, scalar.index_fill_(0, lib.tensor([0]), -1).dim(), scalar

    check(torch, scenario)
    if dtype != "complex64":  # a complex value for a real tensor: torch's RuntimeError
        check(torch, lambda lib: lib.tensor([[1, 2], [4, 5]], dtype=getattr(lib, dtype))
              .index_fill_(1, lib.tensor([0]), 1 + 1j))  # fmt: skip


def test_index_fill_values_indices_and_errors(torch):
    base = np.arange(6.0).reshape(2, 3)
    for fn in [
        lambda lib: lib.tensor(base).index_fill(1, lib.tensor([0, 2]), lib.tensor(4.0)),
        lambda lib: lib.tensor(base).index_fill(1, lib.tensor([0, 2]), lib.tensor([4.0])),
        lambda lib: lib.tensor(base).index_fill(1, lib.tensor([-1]), 2.5),
        lambda lib: lib.tensor(base).index_fill(1, lib.tensor([3]), 2.5),
        lambda lib: lib.tensor(base).long().index_fill(1, lib.tensor([1]), 2.5),
        lambda lib: lib.tensor(base).index_fill(1, lib.tensor([1], dtype=lib.int32), 2.5),
        lambda lib: lib.tensor(base).index_fill(1, lib.tensor([[1]]), 2.5),
        lambda lib: lib.tensor(1.0).index_fill(0, lib.tensor([0]), lib.tensor(5.0)),
        lambda lib: lib.tensor(1.0).index_fill(0, lib.tensor(0), lib.tensor([5.0])),
    ]:
        check(torch, fn)

    def grads(lib):
        x = lib.ones(3, 2, requires_grad=True)
        v = lib.tensor(2.0, requires_grad=True)
        y = x.index_fill(0, lib.tensor([2, 0]), v)
        (y * lib.arange(6.0).view(3, 2)).sum().backward()
        return y, x.grad, v.grad

    check(torch, grads)


@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.parametrize("index_dtype", ["int64", "int32"])
def test_index_select(torch, dim, index_dtype):
    def scenario(lib):
        src = lib.tensor(np.arange(12.0).reshape(3, 4)).t()  # not contiguous
        idx = lib.tensor([2, 0, 2, 1, 0][: 3 + dim], dtype=getattr(lib, index_dtype))
        return lib.index_select(src, dim, idx), src.index_select(dim, idx)

    check(torch, scenario)
    check_compiled(torch, lambda lib: (lib.tensor(np.arange(12.0).reshape(4, 3)),
                                       lib.tensor([2, 0, 2], dtype=getattr(lib, index_dtype))),
                   lambda lib, x, i: x.index_select(dim, i) * 2)  # fmt: skip


def test_index_select_scalars_and_errors(torch):
    for src_shape in [(), (1,)]:
        for index_shape in [(), (1,)]:
            check(torch, lambda lib, s=src_shape, i=index_shape: lib.full(s, 3.0).index_select(
                0, lib.zeros(i, dtype=lib.int64)))  # fmt: skip
    for index in ([-1], [5], [[1]]):
        check(torch, lambda lib, i=index: lib.arange(5.0).index_select(0, lib.tensor(i)))
    check(torch, lambda lib: lib.arange(5.0).index_select(0, lib.tensor([1], dtype=lib.int16)))
    check(torch, lambda lib: lib.arange(5.0).index_select(0, lib.tensor([1.0])))


# -- take, put_, take_along_dim, index_reduce -----------------------------------------------------


def test_take_and_put(torch):
    def f32(lib, values):
        return lib.tensor(values, dtype=lib.float32)

    def put_both(lib):
        x = lib.zeros(3, 4)
        x.put_(lib.tensor([0, 5, -1, 5]), f32(lib, [1, 2, 3, 4]), accumulate=True)
        y = lib.zeros(3, 4)
        y.put_(lib.tensor([[1, 6]]), f32(lib, [[7, 8]]))
        z = lib.zeros(4, 3).t()
        z.put_(lib.tensor([1, 4]), f32(lib, [1, 2]))
        return x, y, z, z.is_contiguous(), lib.zeros(2, 2).put(lib.tensor([3]), f32(lib, [1]))

    for fn in [
        lambda lib: lib.arange(12.0).view(3, 4).t().take(lib.tensor([[0, 5], [-1, 11]])),
        lambda lib: lib.arange(12.0).take(lib.tensor([12])),
        lambda lib: lib.arange(12.0).take(lib.tensor([1], dtype=lib.int32)),
        lambda lib: lib.tensor(3.0).take(lib.tensor(0)),
        put_both,
        lambda lib: lib.zeros(3).put_(lib.tensor([3]), f32(lib, [1])),
        lambda lib: lib.zeros(3).put_(lib.tensor([1, 2]), f32(lib, [1])),
        lambda lib: lib.zeros(3).put_(lib.tensor([1]), lib.tensor([1])),
    ]:
        check(torch, fn)

    def grads(lib):
        x = lib.arange(6.0).view(2, 3).requires_grad_()
        v = f32(lib, [5, 6]).requires_grad_()
        y = x.put(lib.tensor([0, 4]), v * 2, accumulate=True)
        t = x.take(lib.tensor([0, 0, 5]))
        ((y * lib.arange(6.0).view(2, 3)).sum() + (t * f32(lib, [1, 2, 3])).sum()).backward()
        return y, x.grad, v.grad

    check(torch, grads)


TAD = np.random.default_rng(8).normal(size=(2, 3, 5)).astype(np.float32)


@pytest.mark.parametrize("dim", [0, 1, 2, -1, None])
def test_take_along_dim(torch, dim):
    def scenario(lib):
        x = lib.tensor(TAD)
        i = lib.argsort(x.view(-1)) if dim is None else lib.argsort(x, dim=dim)
        return lib.take_along_dim(x, i, dim=dim), x.take_along_dim(i, dim)

    check(torch, scenario)


def test_take_along_dim_broadcast_empty_and_errors(torch):
    for fn in [
        lambda lib: lib.take_along_dim(lib.arange(12.0).view(3, 4, 1),
                                       lib.ones(1, 2, 5, dtype=lib.int64), dim=1),
        lambda lib: lib.take_along_dim(lib.ones(3, 4, 5), lib.ones(3, 0, 5, dtype=lib.int64), 1),
        lambda lib: lib.take_along_dim(lib.ones(3, 4), lib.ones(3, dtype=lib.int64), dim=0),
        lambda lib: lib.take_along_dim(lib.ones(3, 4), lib.ones(3, 4, dtype=lib.int32), dim=0),
        lambda lib: lib.take_along_dim(lib.ones(3, 4), lib.ones(3, 4, dtype=lib.bool), dim=0),
        lambda lib: lib.take_along_dim(lib.ones(3, 4), lib.ones(3, 4), dim=0),
        lambda lib: lib.take_along_dim(lib.ones(3, 4), lib.ones(3, 4, dtype=lib.int64), dim=-7),
        lambda lib: lib.take_along_dim(lib.ones(3, 4), lib.ones(3, 4, dtype=lib.int64), dim=7),
    ]:  # fmt: skip
        check(torch, fn)


@pytest.mark.parametrize("reduce", ["prod", "amin", "amax", "mean"])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_index_reduce(torch, reduce, include_self, dtype):
    def scenario(lib):
        d = getattr(lib, dtype)
        x = lib.tensor(np.arange(1, 16).reshape(3, 5) % 7, dtype=d)
        src = lib.tensor((np.arange(20).reshape(4, 5) * 3) % 11 - 3, dtype=d)
        return (
            x.index_reduce(0, lib.tensor([2, 0, 2, 2]), src, reduce, include_self=include_self),
            x.clone().index_reduce_(
                1,
                lib.tensor([4, 4, 0], dtype=lib.int32),
                src[:3, :3],
                reduce,
                include_self=include_self,
            ),
        )

    check(torch, scenario)


def test_unravel_index(torch):
    for fn in [
        lambda lib: lib.unravel_index(lib.tensor([5, 7, 23]), (2, 3, 4)),
        lambda lib: lib.unravel_index(lib.tensor(0.5), (2, 2)),
        lambda lib: lib.unravel_index(lib.tensor([]), (10, 3, 5)),
        lambda lib: lib.unravel_index(lib.tensor([1]), lib.tensor([1, 2, 3])),
        lambda lib: lib.unravel_index(lib.tensor([1]), (1, 2, 2.0)),
        lambda lib: lib.unravel_index(lib.tensor(0), (2, -3)),
    ]:
        check(torch, fn)


def test_index_reduce_refuses_an_index_that_is_not_a_vector(torch):
    """torch: IndexError('index_reduce_(): Index is supposed to be a vector'); kiln raised a
    ShapeError (a ValueError and RuntimeError)."""
    check(torch, lambda lib: lib.zeros(3, 5).index_reduce(0, lib.tensor([[0]]), lib.ones(1, 5),
                                                          "prod"))  # fmt: skip


def test_unravel_index_wraps_indices_past_the_end(torch):
    """torch 2.13 does not refuse indices outside [-numel, numel): tensor([100]) for shape
    (2, 3) is ([1], [1]), tensor([-100]) is ([0], [2]); kiln raised ValueError."""
    for values in ([100], [-100], [6, -7, 5, -6, 0]):
        check(torch, lambda lib, v=values: lib.unravel_index(lib.tensor(v), (2, 3)))


@pytest.mark.parametrize("dim", [0, 1, 2])
def test_index_copy_and_add_with_many_repeats(torch, dim):
    """Index copies with repeated indices keep the last source slice (torch's CPU order);
    index_add sums them (alpha scaling each)."""
    rng = np.random.default_rng(dim)
    shape = [5, 4, 3]
    shape[dim] = 200
    src_shape = list(shape)
    src_shape[dim] = 4000
    index = rng.integers(0, 200, 4000)
    source = rng.random(src_shape).astype(np.float32)

    def scenario(lib):
        x, i, src = lib.zeros(shape), lib.tensor(index), lib.tensor(source)
        return lib.index_copy(x, dim, i, src), lib.index_add(x, dim, i, src, alpha=1.5)

    check(torch, scenario)
