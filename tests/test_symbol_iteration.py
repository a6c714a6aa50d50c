"""Symbols iterate as PyTorch's tensors do (`q, k, v = qkv`, `for row in x`), when the graph
knows the length; asking a traced value for a Python value raises a GraphError that says why,
not NumPy's object arrays or a bare AttributeError. Expected values: torch 2.13 semantics
(iteration yields x[0], x[1], ...; a 0-d tensor refuses iteration and len() with TypeError),
checked by hand on small arrays."""

import numpy as np
import pytest

import kiln as kn
from kiln.errors import GraphError


def test_unpacking_and_loops_under_compile():
    @kn.compile
    def attention_split(qkv):
        q, k, v = qkv  # dim 0 has 3 rows
        rows = [r.sum() for r in q]
        return q * k + v, kn.stack(rows)

    x = np.arange(3 * 2 * 4, dtype=np.float32).reshape(3, 2, 4)
    out, rows = attention_split(kn.tensor(x))
    np.testing.assert_array_equal(out.numpy(), x[0] * x[1] + x[2])
    np.testing.assert_array_equal(rows.numpy(), x[0].sum(axis=1))


def test_iteration_in_graph_mode():
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (2, 3))
        a, b = x
        f = kn.function([x], [b - a])
    v = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(f(v)[0], v[1] - v[0])


def test_zero_d_refuses_iteration_and_len_with_type_error():
    with kn.Graph().as_default():
        s = kn.placeholder(kn.float32, ())
        with pytest.raises(TypeError, match="0-d"):
            iter(s)
        with pytest.raises(TypeError, match="0-d"):
            len(s)


@pytest.mark.parametrize(
    "ask",
    [float, int, complex, np.asarray, lambda s: [0, 1][s], lambda s: s.item(),
     lambda s: s.tolist(), lambda s: s.numpy()],
)  # fmt: skip
def test_python_values_of_symbols_are_refused_clearly(ask):
    with kn.Graph().as_default():
        s = kn.placeholder(kn.int64, ())
        with pytest.raises(GraphError, match="not known while building a graph"):
            ask(s)


def test_item_used_under_compile_names_the_value_and_the_line():
    # (printing or returning .item() works: tests/test_compile_item.py)
    @kn.compile
    def step(x):
        loss = (x * 2).sum()
        return x * loss.item()

    with pytest.raises(GraphError, match=r"\.item\(\) of Symbol .*test_symbol_iteration\.py"):
        step(kn.tensor([1.0, 2.0]))


def test_a_symbols_shape_is_a_size_as_a_tensors_is():
    # PyTorch: x.shape is a torch.Size (a tuple with numel()); kiln's eager and traced alike
    @kn.compile
    def f(x):
        assert isinstance(x.shape, kn.Size) and x.shape == (2, 3)
        return x.reshape(x.shape.numel()) * x.shape[1:].numel()

    np.testing.assert_array_equal(f(kn.ones(2, 3)).numpy(), np.full(6, 3.0, np.float32))
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, ("batch", 3))
        assert isinstance(x.shape, kn.Size) and repr(x.shape) == "kiln.Size([batch, 3])"
        assert (x + 1).shape == x.shape and x.shape[1:].numel() == 3
