"""Advanced indexing without PyTorch: `x[index]`, item assignment and `index_put` in graph
mode, eager mode and under kn.compile, against NumPy.

The reference (`reference_parts`) is PyTorch's rule written with NumPy: the ints of an index
drop their dims first, then NumPy indexes with the rest. Without ints beside index arrays the
two rules are NumPy's; with them NumPy counts the ints among the arrays, which moves the
arrays' dims (tests/test_indexing_torch.py checks this reference against PyTorch itself).
"""

import math

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given

import kiln as kn


def expand(key, ndim):
    """`key` as a tuple without Ellipsis (full slices in its place)."""
    key = key if isinstance(key, tuple) else (key,)
    where = [k for k, item in enumerate(key) if item is ...]
    if not where:
        return key
    used = sum(_dims(item) for item in key if item is not ...)
    k = where[0]
    return key[:k] + (slice(None),) * (ndim - used) + key[k + 1 :]


def _dims(item) -> int:
    """How many dims of x an index item takes."""
    if item is None or isinstance(item, bool):
        return 0
    return np.ndim(item) if _is_mask(item) else 1


def _is_mask(k) -> bool:
    return isinstance(k, np.ndarray) and k.dtype == np.bool_


def reference_parts(key, ndim):
    """(ints, rest): `x[key]` is `x[ints][rest]` under PyTorch's rule."""
    key = expand(key, ndim)
    ints, rest = [], []
    for k in key:
        if isinstance(k, int) and not isinstance(k, bool):
            ints.append(k)
        else:
            ints += [slice(None)] * _dims(k)
            rest.append(k)
    return tuple(ints), tuple(rest)


def reference(x, key):
    ints, rest = reference_parts(key, x.ndim)
    return x[ints][rest]


def run_graph(x, key):
    with kn.Graph().as_default():
        p = kn.placeholder(x.dtype, x.shape)
        return kn.function([p], kn.getitem(p, key))(x)


# -- hand-written cases -------------------------------------------------------------------------

S = slice(None)
I2 = np.array([1, -1])
CASES = [
    ((3, 4), (np.array([0, 2, -1]), np.array([1, 3, 0]))),
    ((2, 3, 4), (S, np.array([0, 2]), np.array([3, 1]))),
    ((2, 3, 4), (np.array([1, 0]), S, np.array([3, -1]))),  # separated: (2,) goes first
    ((2, 3, 4), (np.array([1, 0]), None, np.array([2, 1]))),
    ((2, 3, 4, 5), (S, I2, 1, np.array([4, 1]))),  # PyTorch: the int does not separate
    ((2, 3, 4, 5), (1, S, I2, np.array([3, 3]))),  # PyTorch: (3, 2); NumPy: (2, 3)
    ((2, 3, 4), (np.array([[0], [1]]), ..., np.array([3, 0, 1]))),
    ((3, 4), (np.array([True, False, True]),)),
    ((3, 4), (np.array([[True, False, True, False]] * 3),)),
    ((3, 4, 2), (np.array([True, False, True]), S, np.array([1, 0]))),
    ((3, 4), (True, np.array([0, 2]))),
    ((3, 4), (False, S)),
    ((3, 4), [0, 2]),  # a list is an index array
    ((3, 4), (np.zeros(0, np.int64), S)),
]


@pytest.mark.parametrize("shape, key", CASES, ids=[str(i) for i in range(len(CASES))])
def test_getitem_matches_the_reference_in_every_mode(shape, key):
    x = np.arange(math.prod(shape), dtype=np.float32).reshape(shape)
    want = reference(x, key)
    np.testing.assert_array_equal(kn.getitem(x, key), want)  # NumPy in, NumPy out
    np.testing.assert_array_equal(run_graph(x, key), want)
    np.testing.assert_array_equal(kn.tensor(x)[key].numpy(), want)
    compiled = kn.compile(lambda t: t[key])
    np.testing.assert_array_equal(compiled(kn.tensor(x)).numpy(), want)


def test_pytorch_and_numpy_differ_where_an_int_meets_arrays():
    # x[1, :, [0, 2]] for x of shape (2, 3, 4): PyTorch (3, 2), NumPy (2, 3)
    x = np.arange(24.0).reshape(2, 3, 4)
    assert x[1, :, [0, 2]].shape == (2, 3)
    assert kn.tensor(x)[1, :, [0, 2]].shape == (3, 2)
    np.testing.assert_array_equal(kn.getitem(x, (1, S, [0, 2])), x[1][:, [0, 2]])


def test_index_arrays_as_symbols_and_as_tensors_under_compile():
    x = np.arange(60.0).reshape(3, 4, 5)
    i, j = np.array([2, 0]), np.array([[4], [1]])
    want = reference(x, (i, S, j))
    with kn.Graph().as_default():
        p = kn.placeholder(kn.float64, (3, 4, 5))
        pi, pj = kn.placeholder(kn.int64, (2,)), kn.placeholder(kn.int64, (2, 1))
        f = kn.function([p, pi, pj], p[pi, :, pj])
    np.testing.assert_array_equal(f(x, i, j), want)
    compiled = kn.compile(lambda t, a, b: t[a, :, b])
    got = compiled(kn.tensor(x), kn.tensor(i), kn.tensor(j))
    np.testing.assert_array_equal(got.numpy(), want)


def test_getitem_gradient_adds_repeated_indices():
    # d/dx sum(w * x[i, j]) puts w at (i, j), summing repeats (np.add.at)
    x = kn.tensor(np.zeros((3, 4)), requires_grad=True)
    i, j = np.array([0, 2, 0]), np.array([1, 3, 1])
    w = np.array([1.0, 2.0, 4.0])
    (x[i, j] * kn.tensor(w)).sum().backward()
    want = np.zeros((3, 4))
    np.add.at(want, (i, j), w)
    np.testing.assert_array_equal(x.grad.numpy(), want)


def test_a_boolean_symbol_selects_as_many_elements_as_it_holds():
    # the count is a dim the run binds (tests/test_data_dependent.py has the rest)
    value = np.array([1.0, -2.0, 3.0], np.float32)
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (3,))
        (got,) = kn.function([x], [x[x > 0]])(value)
    np.testing.assert_array_equal(got, [1.0, 3.0])  # NumPy's value[value > 0]
    np.testing.assert_array_equal(kn.compile(lambda t: t[t > 0])(kn.tensor(value)).numpy(),
                                  [1.0, 3.0])  # fmt: skip


def test_index_errors_are_index_errors():
    t = kn.zeros(3, 4)
    with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 0 with size 3"):
        t[[0, 3], [0, 0]]
    with pytest.raises(IndexError, match="must be long, int, byte or bool"):
        t[kn.tensor([0.0, 1.0])]
    with pytest.raises(IndexError, match=r"The shape of the mask \[4\] at index 0"):
        t[np.ones(4, bool)]
    with pytest.raises(IndexError, match="too many indices"):
        t[[0], [0], [0]]


# -- item assignment and index_put --------------------------------------------------------------


def put_reference(x, key, v, accumulate=False):
    out = x.copy()
    ints, rest = reference_parts(key, x.ndim)
    view = out[ints]
    if accumulate:
        np.add.at(view, rest, v)
    else:
        view[rest] = v
    return out


PUTS = [
    ((3, 4), (np.array([0, 2]), np.array([1, 3])), (2,)),
    ((2, 3, 4), (np.array([1, 0]), S, np.array([3, 2])), (2, 3)),
    ((2, 3, 4), (1, S, np.array([0, 3])), (3, 2)),
    ((3, 4), (slice(1, None), 2), ()),
    ((3, 4), (np.array([True, False, True]),), (4,)),
    ((3, 4), ([2],), (1, 1, 4)),
]


@pytest.mark.parametrize("shape, key, vshape", PUTS, ids=[str(i) for i in range(len(PUTS))])
def test_setitem_writes_as_the_reference_and_records_gradients(shape, key, vshape):
    rng = np.random.default_rng(0)
    x0, v0 = rng.standard_normal(shape), rng.standard_normal(vshape)
    t = kn.tensor(x0.copy())
    t[key] = kn.tensor(v0)  # not recorded: written into the data
    np.testing.assert_array_equal(t.numpy(), put_reference(x0, key, v0))
    # recorded: d sum(w * y) / dx is w where x survived, d / dv sums w over where v went
    x, v = kn.tensor(x0, requires_grad=True), kn.tensor(v0, requires_grad=True)
    w = rng.standard_normal(shape)
    y = x * 1.0
    y[key] = v
    np.testing.assert_array_equal(y.detach().numpy(), put_reference(x0, key, v0))
    (y * kn.tensor(w)).sum().backward()
    written = put_reference(np.zeros(shape), key, np.ones(vshape)) != 0
    np.testing.assert_allclose(x.grad.numpy(), np.where(written, 0.0, w))
    ints, rest = reference_parts(key, len(shape))
    want_v = np.broadcast_to(w[ints][rest], np.broadcast_shapes(w[ints][rest].shape, vshape))
    want_v = want_v.reshape(-1, *vshape).sum(0) if vshape else want_v.sum()
    np.testing.assert_allclose(v.grad.numpy(), want_v.reshape(vshape))


def test_index_put_accumulates_in_every_mode():
    x0, i, v0 = np.zeros((4, 2)), np.array([3, 0, 3]), np.arange(6.0).reshape(3, 2)
    want = put_reference(x0, (i,), v0, accumulate=True)
    t = kn.tensor(x0.copy())
    assert t.index_put_((kn.tensor(i),), kn.tensor(v0), accumulate=True) is t
    np.testing.assert_array_equal(t.numpy(), want)
    np.testing.assert_array_equal(kn.index_put(x0, (i,), v0, accumulate=True), want)
    with kn.Graph().as_default():
        p, q = kn.placeholder(kn.float64, (4, 2)), kn.placeholder(kn.float64, (3, 2))
        y = p.index_put((i,), q, accumulate=True)
        gp, gq = kn.grad(kn.sum(y * y), [p, q])
        f = kn.function([p, q], [y, gp, gq])
    got, got_p, got_q = f(x0, v0)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got_p, 2 * want)  # accumulate keeps x: d/dx = dL/dy
    np.testing.assert_array_equal(got_q, 2 * want[i])  # d/dv = dL/dy read where v went
    compiled = kn.compile(lambda a, b: kn.index_put(a, (kn.tensor(i),), b, accumulate=True))
    np.testing.assert_array_equal(compiled(kn.tensor(x0), kn.tensor(v0)).numpy(), want)


def test_in_place_rules_follow_pytorch():
    x = kn.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        x[0] = 2.0
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        x.index_put_((kn.tensor([0]),), kn.tensor([2.0]))
    with kn.no_grad():
        x[0] = 2.0  # as optimizers do
    assert x.tolist() == [2.0, 1.0, 1.0] and x._version == 1
    y = x * 1.0
    z = y.sin()  # saves y
    y[1] = 0.0
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()
    with pytest.raises(RuntimeError, match="dtypes match"):
        kn.zeros(3).index_put_((kn.tensor([0]),), kn.tensor([1], dtype=kn.int64))
    with pytest.raises(kn.ShapeError, match="cannot be broadcast to indexing result"):
        t = kn.zeros(3)
        t[[0, 1]] = kn.ones(3)


def test_setitem_casts_the_value_and_writes_views():
    t = kn.zeros(2, 3, dtype=kn.int64)
    t[0, [0, 2]] = 2.7  # PyTorch casts to the tensor's dtype
    row = t[1]
    row[1:] = kn.tensor([5, 6])  # a view writes its base
    assert t.tolist() == [[2, 0, 2], [0, 5, 6]]


def test_item_assignment_on_symbols_is_functionalized_and_refused_on_feeds():
    # an intermediate value: x then stands for the new value (kiln/frontend/functionalize.py)
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (3,), name="x")
        h = x * 1.0
        h[0] = 7.0
        f = kn.function([x], h)
        # a feed cannot change: a GraphError (a RuntimeError) naming it and the line
        with pytest.raises(kn.GraphError, match=r"in-place change of 'x', an input"):
            x[0] = 1.0
    np.testing.assert_array_equal(f(np.ones(3, np.float32)), [7.0, 1.0, 1.0])


# -- property: getitem against the reference ---------------------------------------------------


@st.composite
def index_cases(draw):
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=4)))
    key, dim, arrays = [], 0, 0
    n = draw(st.integers(1, len(shape) + 1))
    ellipsis = draw(st.booleans())
    for _ in range(n):
        kind = draw(st.sampled_from(["int", "slice", "none", "array", "array", "mask"]))
        if kind == "none" or dim >= len(shape):
            key.append(None)
            continue
        size = shape[dim]
        if kind == "int":
            key.append(draw(st.integers(-size, size - 1)))
        elif kind == "slice":
            a, b = draw(st.integers(-5, 5) | st.none()), draw(st.integers(-5, 5) | st.none())
            key.append(slice(a, b, draw(st.sampled_from([None, 1, 2, -1]))))
        elif kind == "array":  # shapes (2,) or (2, 1): they broadcast together
            idx = draw(st.lists(st.integers(-size, size - 1), min_size=2, max_size=2))
            key.append(np.array(idx).reshape((2,) if arrays % 2 == 0 else (2, 1)))
            arrays += 1
        else:
            mask = np.array(draw(st.lists(st.booleans(), min_size=size, max_size=size)))
            if mask.sum() not in (0, 2) and arrays:
                mask[:] = False  # keep it broadcastable with the arrays: 0 or 2 picks
                mask[: min(2, size)] = size >= 2
            key.append(mask)
            arrays += 1
        dim += 1
    if ellipsis:
        key.insert(draw(st.integers(0, len(key))), ...)
    return shape, tuple(key)


@given(index_cases())
def test_getitem_property_matches_the_reference(case):
    shape, key = case
    x = np.arange(math.prod(shape), dtype=np.float32).reshape(shape)
    if any(isinstance(k, slice) and (k.step or 1) < 0 for k in key):
        # PyTorch's indexing has no negative steps (ValueError "step must be greater than
        # zero", torch 2.13): eager, graph and getitem refuse them
        for index in (lambda: kn.getitem(x, key), lambda: run_graph(x, key),
                      lambda: kn.tensor(x)[key]):  # fmt: skip
            with pytest.raises(ValueError, match="step must be greater than zero"):
                index()
        return
    try:
        want = reference(x, key)
    except IndexError:  # masks and arrays that do not broadcast together: both refuse
        with pytest.raises((IndexError, kn.ShapeError)):
            kn.getitem(x, key)
        return
    np.testing.assert_array_equal(kn.getitem(x, key), want)
    np.testing.assert_array_equal(run_graph(x, key), want)
    np.testing.assert_array_equal(kn.tensor(x)[key].numpy(), want)
