"""Small differences from PyTorch 2.13 (issue 11), each fixed: the messages and error classes
pinned here are torch 2.13's for the same calls (the calls run on torch too where it is
installed). The value checks over eager, graph mode and kn.compile are cases in
tests/issue11_cases_more.py ("index-dtypes", "duplicate-dims")."""

import numpy as np
import pytest

import kiln as kn

X = np.arange(6.0, dtype=np.float32).reshape(2, 3)
I32 = np.array([2, 0], np.int32)
SRC = np.array([7.0, 8.0], np.float32)
LONG = "Expected a long tensor for index, but got Int"
TAKE_PUT = {  # the call -> torch 2.13's message
    "take": (lambda L, x, i, s: L.take(x, i), f"take(): {LONG}"),
    "Tensor.take": (lambda L, x, i, s: x.take(i), f"take(): {LONG}"),
    "put": (lambda L, x, i, s: L.put(x, i, s), f"put_(): {LONG}"),
    "Tensor.put": (lambda L, x, i, s: x.put(i, s), f"put_(): {LONG}"),
    "Tensor.put_": (lambda L, x, i, s: x.put_(i, s), f"put_(): {LONG}"),
}


def _tensors(L, *arrays):
    return [L.tensor(a.copy()) for a in arrays]


@pytest.mark.parametrize("name", list(TAKE_PUT))
def test_take_and_put_refuse_an_int32_index_as_torch(name):
    fn, message = TAKE_PUT[name]
    with pytest.raises(RuntimeError, match=message.replace("(", r"\(").replace(")", r"\)")):
        fn(kn, *_tensors(kn, X, I32, SRC))
    for dtype in (np.int16, np.uint8):  # torch: "... but got Short", "... but got Byte"
        with pytest.raises(RuntimeError, match="Expected a long tensor for index"):
            fn(kn, *_tensors(kn, X, I32.astype(dtype), SRC))
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError) as info:
        fn(torch, *[torch.from_numpy(a.copy()) for a in (X, I32, SRC)])
    assert str(info.value).startswith(message)


def test_take_and_put_refuse_an_int32_index_in_graph_mode_and_compiled():
    with kn.Graph().as_default():
        x, i = kn.placeholder(kn.float32, (2, 3)), kn.placeholder(kn.int32, (2,))
        with pytest.raises(RuntimeError, match="take\\(\\): Expected a long tensor for index"):
            kn.take(x, i)
    f = kn.compile(lambda x, i: x.take(i) * 2)
    assert f(*_tensors(kn, X, I32.astype(np.int64))).tolist() == [4.0, 0.0]
    with pytest.raises(RuntimeError, match="Expected a long tensor for index, but got Int"):
        f(*_tensors(kn, X, I32))


def test_numpy_take_still_takes_int32_indices():
    # kn.take of NumPy arrays (or along an axis) is NumPy's take, which takes any int index
    got = kn.take(np.arange(6).reshape(2, 3), np.array([2, 0], np.int32), axis=1)
    assert np.asarray(got).tolist() == [[2, 0], [5, 3]]
    assert kn.take(np.arange(6), np.array([1, -1], np.int32)).tolist() == [1, 5]


DUPLICATES = [  # (input, dims, torch 2.13's message)
    (np.float32(1.5), (0, -1), "dim 0 appears multiple times in the list of dims"),
    (np.float32(1.5), [0, 0], "dim 0 appears multiple times in the list of dims"),
    (X, (0, 0), "dim 0 appears multiple times in the list of dims"),
    (X, (1, -1), "dim 1 appears multiple times in the list of dims"),
]
REDUCTIONS = {
    "sum": lambda L, x, d: x.sum(d),
    "mean": lambda L, x, d: L.mean(x, d),
    "amax": lambda L, x, d: x.amax(d),
    "logsumexp": lambda L, x, d: x.logsumexp(d),
    "vector_norm": lambda L, x, d: L.linalg.vector_norm(x, dim=d),
    "var_mean": lambda L, x, d: L.var_mean(x, d),
    "count_nonzero": lambda L, x, d: L.count_nonzero(x, d),
    "flip": lambda L, x, d: x.flip(d),
    "squeeze": lambda L, x, d: x.squeeze(d),
}


@pytest.mark.parametrize("name", list(REDUCTIONS))
@pytest.mark.parametrize(("array", "dims", "message"), DUPLICATES)
def test_a_dim_named_twice_raises_as_torch(name, array, dims, message):
    fn = REDUCTIONS[name]
    with pytest.raises(RuntimeError, match=message):
        fn(kn, kn.tensor(np.array(array)), dims)
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError, match=message):
        fn(torch, torch.tensor(np.array(array)), dims)


def test_a_0d_reduction_over_its_one_dim_still_works():
    x = kn.tensor(1.5)
    assert x.sum((0,)).item() == 1.5 and x.mean([-1]).item() == 1.5
    assert x.amax(0).item() == 1.5 and x.flip((0,)).item() == 1.5
