"""A list index that holds a sequence, a tensor, a slice, None or Ellipsis means the tuple of
its items, as PyTorch (2.13 still) reads it: `x[[[0, 1], [2, 2]]]` is `x[[0, 1], [2, 2]]`
(kiln read it as one nested index array, as NumPy does, and gave another shape). The expected
values are torch 2.13's, written out by hand from X below."""

import warnings

import numpy as np
import pytest

import kiln as kn

X = np.arange(60.0, dtype=np.float32).reshape(3, 4, 5)

# (index builder, expected = X[the tuple of the items])
CASES = [
    ("lists", lambda m: [[0, 1], [2, 2]], X[[0, 1], [2, 2]]),
    ("tensors", lambda m: [m.tensor([0, 1]), m.tensor([2, 2])], X[[0, 1], [2, 2]]),
    ("column_lists", lambda m: [[0], [1]], X[[0], [1]]),
    ("int_and_list", lambda m: [0, [1, 2]], X[0, [1, 2]]),
    ("tensor_and_int", lambda m: [m.tensor(0), 1], X[0, 1]),
    ("slice", lambda m: [0, slice(None), 1], X[0, :, 1]),
    ("none", lambda m: [None, 0], X[None, 0]),
    ("ellipsis", lambda m: [Ellipsis, 1], X[..., 1]),
    ("mask_list", lambda m: [[True, False, True]], X[[True, False, True]]),
    # no sequence among the items: one index array, as before
    ("flat_ints", lambda m: [0, 2], X[[0, 2]]),
]  # fmt: skip


@pytest.mark.parametrize("index,want", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_list_index_of_sequences_is_a_tuple_eager_and_compiled(index, want):
    np.testing.assert_array_equal(kn.tensor(X)[index(kn)].numpy(), want)
    compiled = kn.compile(lambda x: x[index(kn)] * 1)(kn.tensor(X))
    np.testing.assert_array_equal(compiled.numpy(), want)


def test_list_index_assignment_is_a_tuple_eager_and_compiled():
    """`y[[[0, 1], [2, 2]]] = -1` sets y[0, 2] and y[1, 2] (torch 2.13)."""
    want = X.copy()
    want[[0, 1], [2, 2]] = -1

    def fn(x):
        y = x.clone()
        y[[[0, 1], [2, 2]]] = -1.0
        return y

    np.testing.assert_array_equal(fn(kn.tensor(X)).numpy(), want)
    np.testing.assert_array_equal(kn.compile(fn)(kn.tensor(X)).numpy(), want)


def test_the_cases_match_torch():
    torch = pytest.importorskip("torch")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # torch's deprecation notice
        for name, index, want in CASES:
            np.testing.assert_array_equal(torch.tensor(X)[index(torch)].numpy(), want, name)
        y = torch.tensor(X)
        y[[[0, 1], [2, 2]]] = -1.0
    want = X.copy()
    want[[0, 1], [2, 2]] = -1
    np.testing.assert_array_equal(y.numpy(), want)
