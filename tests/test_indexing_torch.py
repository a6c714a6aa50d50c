"""Indexing against PyTorch itself (skipped without torch): `x[index]` values and gradients in
eager mode, graph mode and under kn.compile; item assignment and `index_put_` with autograd
(values, gradients to x's earlier value and to the assigned value, version-counter errors).

Expected values come from torch; the index keys are written once with `A(...)` for an index
array and `M(...)` for a boolean mask, made into torch tensors, kiln tensors or NumPy arrays.
"""

import numpy as np
import pytest

import kiln as kn

torch = pytest.importorskip("torch")


class A:
    """An integer index array in a key (int64 unless `dtype`)."""

    def __init__(self, values, dtype=np.int64):
        self.array = np.array(values, dtype)


class M(A):
    """A boolean mask in a key."""

    def __init__(self, values):
        super().__init__(values, np.bool_)


def key_for(key, lib):
    """The key with its arrays as torch tensors ("torch"), kiln tensors ("kiln") or NumPy
    arrays ("numpy")."""
    make = {"torch": torch.from_numpy, "kiln": kn.tensor, "numpy": lambda a: a}[lib]
    items = key if isinstance(key, tuple) else (key,)
    out = tuple(make(i.array.copy()) if isinstance(i, A) else i for i in items)
    return out if isinstance(key, tuple) else out[0]


S = slice(None)
GETITEM = [
    ((5,), A([3, -1, 0])),
    ((5,), A([[0, 1], [4, -5]])),
    ((3, 4), (A([0, 2, -1]), A([1, 3, 0]))),
    ((3, 4), (S, A([3, 0]))),
    ((3, 4), (1, A([3, 0]))),
    ((2, 3, 4), (S, A([0, 2]), A([3, 1]))),
    ((2, 3, 4), (A([1, 0]), S, A([3, -1]))),
    ((2, 3, 4), (A([1, 0]), None, A([2, 1]))),
    ((2, 3, 4), (A([[1], [0]]), S, A([3, 2, 1]))),
    ((2, 3, 4, 5), (S, A([1, 2]), 1, A([4, 1]))),
    ((2, 3, 4, 5), (1, S, A([1, 2]), A([3, 3]))),
    ((2, 3, 4, 5), (0, S, S, A([1, 2]))),
    ((2, 3, 4, 5), (A([0, 1]), ..., A([4, 0]))),
    ((2, 3, 4, 5), (..., A([0, 1]), 2)),
    ((2, 3, 4, 5), (A([0, 1]), A([2, 1]), ...)),
    ((2, 3, 4, 5), (None, A([0, 1]), A([[1], [2]]))),
    ((2, 3, 4, 5), (A([[0, 1]]), S, slice(1, 3), A([1, 2]))),
    ((2, 3, 4, 5), (A(1), S, A([1, 2]))),  # a 0-d index tensor reads as an int
    ((3, 4), (A([0, 2], np.int32), A([1, 1], np.int32))),
    ((3, 4), M([True, False, True])),
    ((3, 4), (S, M([True, False, True, True]))),
    ((3, 4), M([[True, False, True, False], [False] * 4, [True] * 4])),
    ((3, 4, 2), (M([True, False, True]), S, A([1, 0]))),
    ((3, 4, 2), (M([True, False, True]), A([1, 3]))),
    ((2, 3, 4), (A([0, 1]), S, True)),
    ((2, 3, 4), (S, A([0, 1]), True)),
    ((3, 4), True),
    ((3, 4), (False, S)),
    ((3, 4), (A(np.zeros(0, np.int64)), S)),
    ((3, 0), (A([2, 0]),)),
    ((3, 4), (slice(None, None, 2), A([1, 1]))),
]
IDS = [str(k) for k in range(len(GETITEM))]


def data(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


@pytest.mark.parametrize("shape, key", GETITEM, ids=IDS)
def test_getitem_values_and_gradients_match_pytorch(shape, key):
    x0 = data(shape)
    tx = torch.tensor(x0, requires_grad=True)
    want = tx[key_for(key, "torch")]
    w = data(tuple(want.shape), 1)
    (want * torch.from_numpy(w)).sum().backward()
    x = kn.tensor(x0, requires_grad=True)
    got = x[key_for(key, "kiln")]
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())
    (got * kn.tensor(w)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12, atol=1e-12)
    # graph mode (NumPy index arrays are constants; masks are static) and kn.compile
    np.testing.assert_array_equal(kn.getitem(x0, key_for(key, "numpy")), want.detach().numpy())
    if not any(isinstance(i, M) for i in (key if isinstance(key, tuple) else (key,))):
        compiled = kn.compile(lambda t, *arrays: t[rebuild(key, arrays)])
        arrays = [i for i in key_for(key, "kiln") if isinstance(i, kn.Tensor)] if isinstance(
            key, tuple) else [key_for(key, "kiln")]  # fmt: skip
        got = compiled(kn.tensor(x0), *arrays)
        np.testing.assert_array_equal(got.numpy(), want.detach().numpy())


def rebuild(key, arrays):
    """`key` with its index arrays replaced, in order, by `arrays` (kn.compile's Symbols)."""
    items = list(key) if isinstance(key, tuple) else [key]
    it = iter(arrays)
    items = [next(it) if isinstance(i, A) else i for i in items]
    return tuple(items) if isinstance(key, tuple) else items[0]


# -- item assignment ---------------------------------------------------------------------------

SETITEM = [
    ((3, 4), (A([0, 2]), A([1, 3])), (2,)),
    ((3, 4), (A([0, 2]), A([1, 3])), ()),
    ((2, 3, 4), (A([1, 0]), S, A([3, 2])), (2, 3)),
    ((2, 3, 4), (1, S, A([0, 3])), (3, 2)),
    ((2, 3, 4), (S, A([0, 2]), A([3, 1])), (1, 2)),
    ((3, 4), (slice(1, None), 2), ()),
    ((3, 4), (slice(None, None, 2), slice(1, 3)), (2, 2)),
    ((3, 4), 1, (4,)),
    ((3, 4), M([True, False, True]), (4,)),
    ((3, 4), (S, M([True, False, True, True])), (3, 1)),
    ((3, 4), (A([2]),), (1, 1, 4)),
    ((2, 3, 4), (..., A([0, 3])), (3, 2)),
]


@pytest.mark.parametrize("shape, key, vshape", SETITEM, ids=[str(k) for k in range(len(SETITEM))])
def test_setitem_values_and_gradients_match_pytorch(shape, key, vshape):
    x0, v0, w = data(shape), data(vshape, 1), data(shape, 2)
    tx, tv = torch.tensor(x0, requires_grad=True), torch.tensor(v0, requires_grad=True)
    ty = tx * 1.0
    ty[key_for(key, "torch")] = tv
    (ty * torch.from_numpy(w)).sum().backward()
    x, v = kn.tensor(x0, requires_grad=True), kn.tensor(v0, requires_grad=True)
    y = x * 1.0
    y[key_for(key, "kiln")] = v
    assert y._version == 1 and y.grad_fn is not None
    np.testing.assert_array_equal(y.detach().numpy(), ty.detach().numpy())
    (y * kn.tensor(w)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(v.grad.numpy(), tv.grad.numpy(), rtol=1e-12, atol=1e-12)
    # without autograd: written into the data
    t, tt = kn.tensor(x0), torch.tensor(x0)
    t[key_for(key, "kiln")] = kn.tensor(v0)
    tt[key_for(key, "torch")] = torch.tensor(v0)
    np.testing.assert_array_equal(t.numpy(), tt.numpy())


@pytest.mark.parametrize("accumulate", [False, True])
def test_index_put_matches_pytorch(accumulate):
    x0, w = data((4, 3)), data((4, 3), 2)
    i, j = np.array([3, 0, 3, 1]), np.array([2, 2, 2, 0])
    if not accumulate:  # repeated indices without accumulate: PyTorch leaves the winner open
        i, j = np.array([3, 0, 1]), np.array([2, 2, 0])
    v0 = data(i.shape, 1)
    tx, tv = torch.tensor(x0, requires_grad=True), torch.tensor(v0, requires_grad=True)
    ty = (tx * 1.0).index_put_((torch.from_numpy(i), torch.from_numpy(j)), tv, accumulate)
    (ty * torch.from_numpy(w)).sum().backward()
    x, v = kn.tensor(x0, requires_grad=True), kn.tensor(v0, requires_grad=True)
    y = (x * 1.0).index_put_((kn.tensor(i), kn.tensor(j)), v, accumulate)
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-12)
    (y * kn.tensor(w)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(v.grad.numpy(), tv.grad.numpy(), rtol=1e-12)
    # out of place, as a function and a method, in graph mode too
    half = torch.tensor(1.5, dtype=torch.float64)
    out = torch.index_put(torch.tensor(x0), (torch.from_numpy(i),), half, accumulate)
    half = kn.tensor(1.5, dtype=kn.float64)
    got = kn.index_put(kn.tensor(x0), (kn.tensor(i),), half, accumulate)
    np.testing.assert_array_equal(got.numpy(), out.numpy())
    got = kn.tensor(x0).index_put((kn.tensor(i),), half, accumulate)
    np.testing.assert_array_equal(got.numpy(), out.numpy())
    with kn.Graph().as_default():
        p = kn.placeholder(kn.float64, (4, 3))
        f = kn.function([p], kn.index_put(p, (i,), np.array(1.5), accumulate))
    np.testing.assert_array_equal(f(x0), out.numpy())


def outcome(fn):
    """(exception type or None, message) of `fn()`."""
    try:
        fn()
    except Exception as e:  # noqa: BLE001 — any error: its type is what is compared
        return type(e), str(e)
    return None, ""


def _t(lib, values):
    return torch.tensor(values) if lib == "torch" else kn.tensor(values)


def _z(lib):
    return torch.zeros(3, 4) if lib == "torch" else kn.zeros(3, 4)


def _leaf(lib):
    return torch.ones(3, requires_grad=True) if lib == "torch" else kn.ones(3, requires_grad=True)


def _version(lib):
    x = _leaf(lib)
    y = x * 1.0
    z = y.sin()  # saves y for its backward
    y[1] = 0.0
    z.sum().backward()


# name -> (the error in both libraries, words both messages contain)
ERRORS = {
    "leaf-setitem": (lambda lib: _leaf(lib).__setitem__(0, 2.0), "leaf Variable that requires"),
    "leaf-index_put_": (
        lambda lib: _leaf(lib).index_put_((_t(lib, [0]),), _t(lib, [2.0])),
        "leaf Variable that requires",
    ),
    "out-of-range": (
        lambda lib: _z(lib)[_t(lib, [0, 3]), _t(lib, [0, 0])],
        "index 3 is out of bounds for dimension 0 with size 3",
    ),
    "negative-out-of-range": (lambda lib: _z(lib)[_t(lib, [-4])], "index -4 is out of bounds"),
    "float-index": (lambda lib: _z(lib)[_t(lib, [0.0])], "tensors used as indices must be"),
    "mask-shape": (lambda lib: _z(lib)[_t(lib, [True] * 4)], "The shape of the mask [4]"),
    "too-many": (
        lambda lib: _z(lib)[_t(lib, [0]), _t(lib, [0]), _t(lib, [0])],
        "too many indices for tensor of dimension 2",
    ),
    "dtype-mismatch": (
        lambda lib: _z(lib).index_put_((_t(lib, [0]),), _t(lib, [1])),
        "Index put requires the source and destination dtypes match",
    ),
    "put-out-of-range": (
        lambda lib: _z(lib).index_put_((_t(lib, [5]),), _t(lib, [1.0])),
        "index 5 is out of bounds for dimension 0 with size 3",
    ),
    "version": (_version, "modified by an inplace operation"),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_have_pytorch_types(name):
    fn, words = ERRORS[name]
    want_type, want_text = outcome(lambda: fn("torch"))
    got_type, got_text = outcome(lambda: fn("kiln"))
    assert want_type is not None and got_type is not None, (name, want_text, got_text)
    assert issubclass(got_type, want_type), (name, got_type, want_type, got_text)
    assert words in want_text and words in got_text, (want_text, got_text)


def test_the_getitem_table_holds_every_kind_of_item():
    # the table holds each kind at least once: ints, slices, None, Ellipsis, arrays, masks, bools
    kinds = set()
    for _, key in GETITEM:
        for i in key if isinstance(key, tuple) else (key,):
            kinds.add(type(i).__name__)
    assert kinds >= {"int", "slice", "NoneType", "ellipsis", "A", "M", "bool"}
