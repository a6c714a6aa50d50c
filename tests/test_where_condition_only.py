"""`kn.where(condition)` is `kn.nonzero(condition, as_tuple=True)`, as PyTorch's
`torch.where(condition)` is (its documentation says so), in all three modes; one of input and
other alone is refused with a TypeError, as PyTorch's. Expected values: by hand."""

import numpy as np
import pytest

import kiln as kn

X = np.array([[0.0, 3.0], [5.0, 0.0]], np.float32)


def test_eager():
    rows, cols = kn.where(kn.tensor(X))
    assert rows.tolist() == [0, 1] and cols.tolist() == [1, 0]


def test_compiled_and_graph():
    f = kn.compile(lambda t: kn.where(t > 1.0))
    rows, cols = f(kn.tensor(X))
    assert rows.tolist() == [0, 1] and cols.tolist() == [1, 0]
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (2, 2))
        fn = kn.function([x], list(kn.where(x)))
    rows, cols = fn(X)
    assert rows.tolist() == [0, 1] and cols.tolist() == [1, 0]


def test_input_without_other_is_a_type_error():
    with pytest.raises(TypeError):
        kn.where(kn.tensor([True]), 1.0)
