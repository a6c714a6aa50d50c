"""PyTorch's functions beyond the op table: return types, the same function on Tensors,
Symbols and under kn.compile, eager-only functions refusing graph mode, index checks, the
random integer factories, and errors that name what is wrong. Expected values are PyTorch's
documented behaviour, worked out by hand in the comments."""

import numpy as np
import pytest

import kiln as kn


def test_sort_topk_cummax_return_named_tuples_of_values_and_indices():
    x = kn.tensor([[3.0, 1.0, 2.0]])
    values, indices = kn.sort(x, dim=1, descending=True)
    assert values.tolist() == [[3.0, 2.0, 1.0]] and indices.tolist() == [[0, 2, 1]]
    top = x.topk(2, largest=False)  # the two smallest, ascending: 1 (at 1), 2 (at 2)
    assert top.values.tolist() == [[1.0, 2.0]] and top.indices.tolist() == [[1, 2]]
    running = kn.cummax(kn.tensor([1, 3, 2, 3]), dim=0)  # ties: the latest index
    assert running.values.tolist() == [1, 3, 3, 3] and running.indices.tolist() == [0, 1, 1, 3]
    assert isinstance(running, kn.return_types.cummax) and running._fields == ("values", "indices")
    assert isinstance(top, kn.return_types.topk)
    assert isinstance(kn.sort(x), kn.return_types.sort)
    assert isinstance(kn.cummin(x, 1), kn.return_types.cummin)


def test_named_tuples_come_back_from_kn_compile():
    # Regression: kn.compile kept a named tuple of outputs as a static value (of Symbols).
    f = kn.compile(lambda t: t.sort(descending=True))
    out = f(kn.tensor([1.0, 3.0, 2.0]))
    assert out.values.tolist() == [3.0, 2.0, 1.0] and out.indices.tolist() == [1, 2, 0]


def test_the_same_function_runs_on_symbols_and_as_methods():
    x_value = np.arange(12.0).reshape(3, 4)
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float64, (3, 4), name="x")
        outs = [
            x.cumsum(1), x.flip(0), x.roll(1, 1), x.tril(), x.diagonal(), x.repeat(1, 2),
            x.expand(2, -1, -1), x.unflatten(1, (2, 2)), x.unfold(1, 2, 2), x.split(3, 1)[0],
            x.chunk(2, 1)[1], x.lerp(x * 2, 0.25), x.copysign(-1.0), x.fmod(5.0),
            x.div(5.0, rounding_mode="floor"), x.logaddexp(x), x.exp2(), x.tan(),
            x.masked_fill(x > 5, 0.0), x.where(x > 5, -x), kn.einsum("ij->j", x),
        ]  # fmt: skip
        values = kn.function([x], outs)(x_value)
    t = x_value
    expected = [
        np.cumsum(t, 1), t[::-1], np.roll(t, 1, 1), np.tril(t), np.diagonal(t),
        np.tile(t, (1, 2)), np.broadcast_to(t, (2, 3, 4)), t.reshape(3, 2, 2),
        t.reshape(3, 2, 2), t[:, :3], t[:, 2:], t + 0.25 * t, -t, np.fmod(t, 5.0),
        np.floor_divide(t, 5.0), np.logaddexp(t, t), np.exp2(t), np.tan(t),
        np.where(t > 5, 0.0, t), np.where(t > 5, t, -t), t.sum(0),
    ]  # fmt: skip
    for got, want in zip(values, expected):
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_data_dependent_functions_build_graphs():
    # their lengths are dims the run binds (tests/test_data_dependent.py has the rest)
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (3,), name="x")
        r = kn.placeholder(kn.int64, (3,), name="r")
        f = kn.function([x, r], [kn.nonzero(x), kn.masked_select(x, x > 0),
                                 kn.repeat_interleave(x, r)])  # fmt: skip
        got = f(np.array([0.0, 2.0, -1.0], np.float32), np.array([1, 0, 2]))
    # NumPy's argwhere, x[x > 0] and repeat
    assert [g.tolist() for g in got] == [[[1], [2]], [2.0], [0.0, -1.0, -1.0]]


def test_equal_and_allclose_give_bools_eagerly_and_symbols_in_graph_mode():
    assert kn.equal(kn.tensor([1, 2]), kn.tensor([1, 2])) is True
    assert kn.equal(kn.tensor([1, 2]), kn.tensor([1, 2, 3])) is False  # shapes differ
    assert kn.allclose(np.array([1.0]), np.array([1.0 + 1e-9])) is True
    with kn.Graph().as_default():
        a = kn.placeholder(kn.float32, (2,), name="a")
        same = kn.equal(a, a + 0.0)
        close = kn.allclose(a, a * 1.1)
        f = kn.function([a], [same, close])
    assert same.shape == () and same.dtype == np.bool_
    np.testing.assert_array_equal(f(np.array([1.0, 2.0], np.float32)), [True, False])


def test_eq_is_elementwise_equality():
    np.testing.assert_array_equal(kn.eq(np.array([1, 2]), 2), [False, True])


def test_scatter_and_gather_refuse_indices_out_of_range():
    x = np.zeros((2, 3))
    with pytest.raises(kn.IndexOutOfRangeError, match="index 3 is out of bounds for dim"):
        kn.scatter(x, 1, np.array([[3]]), np.ones((1, 1)))
    with pytest.raises(kn.IndexOutOfRangeError, match="index -1"):
        kn.scatter_add(kn.tensor(x), 0, kn.tensor([[-1, 0]]), kn.ones(1, 2, dtype=kn.float64))
    with pytest.raises(kn.IndexOutOfRangeError, match="index -1"):  # PyTorch's gather: no wrap
        kn.gather(x, 1, np.array([[-1]]))
    with pytest.raises(kn.IndexOutOfRangeError, match="index 2 is out of bounds"):
        kn.index_select(x, 0, np.array([2]))
    np.testing.assert_array_equal(kn.take(np.arange(4), np.array([-1])), [3])  # NumPy's take


def test_index_shape_errors_name_the_function():
    x = np.zeros((2, 3))
    with pytest.raises(kn.ShapeError, match="gather: index .* same number of dims"):
        kn.gather(x, 0, np.zeros((2,), np.int64))
    with pytest.raises(kn.ShapeError, match="scatter: index .*larger than src"):
        kn.scatter(x, 0, np.zeros((2, 2), np.int64), np.ones((1, 2)))
    with pytest.raises(kn.DTypeError, match="scatter: expected the input's dtype"):
        kn.scatter(x, 0, np.zeros((1, 1), np.int64), np.ones((1, 1), np.float32))


def test_shape_function_errors_follow_pytorch():
    x = kn.zeros(5, 2)
    with pytest.raises(kn.ShapeError, match="split_with_sizes expects split_sizes to sum"):
        x.split([1, 2])
    with pytest.raises(kn.ShapeError, match="Number of dimensions of repeat dims"):
        x.repeat(2)
    with pytest.raises(kn.ShapeError, match="selected index k"):
        x.topk(3)
    with pytest.raises(kn.ShapeError, match="mm: both arguments must be matrices"):
        kn.mm(x, kn.zeros(2))
    with pytest.raises(RuntimeError, match="rounding_mode"):  # PyTorch 2.13 raises RuntimeError
        kn.div(x, 2, rounding_mode="round")


def test_randint_draws_from_the_seeded_stream_in_both_modes():
    kn.manual_seed(3)
    a = kn.randint(2, 6, (1000,))
    kn.manual_seed(3)
    b = kn.randint(2, 6, size=(1000,))
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert a.dtype == np.int64 and set(np.unique(a.numpy())) == {2, 3, 4, 5}
    assert kn.randint(10, (3,), dtype=kn.int32).dtype == np.int32
    with kn.Graph().as_default():
        r = kn.random.randint(0, 3, (500,))
        f = kn.function([], r)
    first, second = f(), f()
    assert first.dtype == np.int64 and set(np.unique(first)) == {0, 1, 2}
    assert not np.array_equal(first, second)  # fresh values on every run


def test_empty_gives_the_shape_and_dtype():
    t = kn.empty(2, 3, dtype=kn.int64)
    assert t.shape == (2, 3) and t.dtype == np.int64
    assert kn.empty_like(t).dtype == np.int64 and kn.empty((0,)).shape == (0,)


def test_solve_left_false_and_singular_matrices():
    a = np.array([[2.0, 1.0], [0.0, 4.0]])
    b = np.array([[1.0, 2.0]])
    x = kn.linalg.solve(a, b, left=False)  # x @ a = b
    np.testing.assert_allclose(x @ a, b)
    # torch 2.13: torch.linalg.LinAlgError, a RuntimeError (NumPy's LinAlgError is a ValueError)
    with pytest.raises(kn.linalg.LinAlgError, match="singular"):
        kn.linalg.inv(np.zeros((2, 2)))
    assert issubclass(kn.linalg.LinAlgError, RuntimeError)


def test_cumprod_gradient_with_zeros_is_pytorchs():
    # y = (2, 0, 0): dy0/dx = (1, 0, 0); dy1/dx = (0, 2, 0); dy2/dx = (0, 2*3, 0)
    x = kn.tensor([2.0, 0.0, 3.0], requires_grad=True)
    x.cumprod(0).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [1.0, 8.0, 0.0])
