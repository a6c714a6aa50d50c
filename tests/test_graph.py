"""The IR: names, scopes, sites, freezing, Variables, verify, build-time errors."""

import numpy as np
import pytest

import kiln as kn
from kiln.graph.core import Node


def test_graph_names_are_unique_and_deterministic():
    g = kn.Graph()
    with g.as_default():
        a = kn.placeholder(kn.float32, (2,), name="x")
        b = kn.placeholder(kn.float32, (2,), name="x")
        c = a + b
        d = a + c
        with kn.name_scope("layer1"):
            e = kn.exp(d)
            with kn.name_scope("inner"):
                f = kn.exp(e)
    assert [a.name, b.name, c.name, d.name] == ["x", "x_1", "add", "add_1"]
    assert e.name == "layer1/exp" and f.name == "layer1/inner/exp"


def test_default_graph_stack_and_reset():
    g = kn.Graph()
    outer = kn.get_default_graph()
    with g.as_default():
        assert kn.get_default_graph() is g
        x = kn.placeholder(kn.float32, (), name="x")
    assert kn.get_default_graph() is outer and x.graph is g
    new = kn.reset_default_graph()
    assert kn.get_default_graph() is new is not outer


def test_site_is_the_callers_line():
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (3,), name="x")
        y = kn.relu(x)  # the composite's nodes still point here
    line = y.site.split(":")[1]
    assert y.site.startswith("test_graph.py:") and int(line) > 0
    assert x.site.startswith("test_graph.py:")
    assert all(n.site.startswith("test_graph.py:") for n in x.graph.nodes)


def test_frozen_graph_refuses_new_nodes_and_says_why():
    g = kn.Graph()
    with g.as_default():
        x = kn.placeholder(kn.float32, (3,), name="x")
    g.freeze("for the test")
    with pytest.raises(kn.GraphError, match="frozen for the test.*new kn.Graph"):
        kn.exp(x)
    assert g.frozen


def test_symbol_truth_value_raises_with_advice():
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (3,), name="x")
        with pytest.raises(kn.GraphError, match="kn.where"):
            if x > 0:
                pass


def test_symbols_hash_by_identity_and_eq_is_elementwise():
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (3,), name="x")
        y = x == 1.0
    assert y.dtype == np.bool_ and {x: 1}[x] == 1 and y is not x


def test_operators_and_methods_build_the_right_ops():
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (2, 3), name="x")
        exprs = {
            "add": 1 + x, "sub": 1 - x, "mul": x * 2, "div": x / 2, "pow": x**2,
            "neg": -x, "abs": abs(x), "less": x < 1, "greater_equal": x >= 1,
            "matmul": x @ x.T, "transpose": x.T, "reduce_sum": x.sum(axis=0),
            "reduce_mean": x.mean(), "reshape": x.reshape(3, 2), "cast": x.astype("int32"),
            "index": x[:, 1], "argmax": x.argmax(axis=1),
        }  # fmt: skip
        rdiv = 2 / x
    for op, sym in exprs.items():
        assert sym.op.name == op, op
    # a number over a tensor is PyTorch's reciprocal(x) * 2 (its values, two roundings)
    assert rdiv.op.name == "mul"
    assert x.ndim == 2 and x.size == 6 and exprs["reshape"].shape == (3, 2)


def test_numpy_array_on_the_left_defers_to_symbol():
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (3,), name="x")
        y = np.ones(3, np.float32) + x
    assert isinstance(y, kn.Symbol) and y.op.name == "add"


def test_weak_python_scalars_keep_the_dtype():
    with kn.Graph().as_default():
        x16 = kn.placeholder(kn.float16, (3,), name="x16")
        i8 = kn.placeholder(kn.int8, (3,), name="i8")
    assert (x16 * 2.0).dtype == kn.float16
    assert (i8 + 1).dtype == kn.int8
    assert (i8 + 1.5).dtype == kn.float32  # PyTorch: an int tensor with a float: default float


def test_shape_error_names_op_shapes_and_site():
    with kn.Graph().as_default():
        a = kn.placeholder(kn.float32, (2, 3), name="a")
        b = kn.placeholder(kn.float32, (4, 5), name="b")
        with pytest.raises(kn.ShapeError) as info:
            a @ b
    text = str(info.value)
    assert "matmul" in text and "test_graph.py:" in text
    assert "a:f32[2,3]" in text and "b:f32[4,5]" in text
    assert isinstance(info.value, ValueError)


def test_dtype_error_is_a_type_error_and_names_the_op():
    with kn.Graph().as_default():
        b = kn.placeholder(kn.bool_, (2,), name="flags")
        with pytest.raises(kn.DTypeError) as info:
            -b
    assert isinstance(info.value, TypeError) and "neg" in str(info.value)
    assert "flags:bool[2]" in str(info.value)


def test_symbolic_dims_unify_and_products_reshape():
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, ("batch", 28, 28), name="x")
        y = x.reshape(-1, 784)
        z = kn.placeholder(kn.float32, (None, 784), name="z")
    assert str(y.shape[0]) == "batch" and y.shape[1] == 784
    assert (y + y).shape == y.shape
    anon = z.shape[0]
    assert anon != kn.Dim() and anon == anon
    assert kn.Dim("batch") == x.shape[0]
    with pytest.raises(kn.ShapeError, match="cannot reshape"):
        x.reshape(-1, 10).reshape(5, 7)


def test_variable_owns_its_value_from_creation():
    with kn.Graph().as_default() as g:
        w = kn.Variable(lambda shape, dtype: np.full(shape, 0.5, dtype), shape=(2, 2), name="w")
        v = kn.Variable([1.0, 2.0], name="v")
    assert w.dtype == kn.float32 and np.all(w.numpy() == 0.5)
    assert v.dtype == kn.float32 and g.variables == [w, v]
    w.assign(np.ones((2, 2)))
    assert np.all(w.numpy() == 1.0)
    with pytest.raises(kn.GraphError, match="shape"):
        w.assign(np.ones(3))


def test_verify_accepts_built_graphs_and_rejects_broken_ones():
    g = kn.Graph()
    with g.as_default():
        x = kn.placeholder(kn.float32, (2,), name="x")
        y = kn.exp(x) + 1.0
    kn.verify(g)
    # Swap two nodes: an input now comes after its use.
    i = g.nodes.index(y.node)
    g.nodes[i - 1], g.nodes[i] = g.nodes[i], g.nodes[i - 1]
    with pytest.raises(kn.GraphError, match="before it is defined"):
        kn.verify(g)


def test_verify_catches_a_wrong_recorded_shape():
    g = kn.Graph()
    with g.as_default():
        x = kn.placeholder(kn.float32, (2,), name="x")
        y = kn.exp(x)
    y.shape = (3,)
    with pytest.raises(kn.GraphError, match="rule gives"):
        kn.verify(g)
    assert isinstance(y.node, Node)
