"""kn.grad and the differentiate pass: seeds, broadcasting, errors, higher order."""

import dataclasses

import numpy as np
import pytest

import kiln as kn
from kiln.graph.opdef import REGISTRY
from kiln.ops.core import bind_graph


def _run(outputs, inputs=(), feeds=()):
    return kn.function(list(inputs), outputs)(*feeds)


def test_grad_seed_jacobian_example():
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float64, (2,), name="x")
        y = kn.stack([x[0] ** 2 + x[1], x[1] ** 3 * x[0]])
        jac = _run(kn.jacobian(y, x), [x], [np.array([1.0, 2.0])])
    np.testing.assert_array_equal(jac, [[2.0, 1.0], [8.0, 12.0]])


def test_grad_of_grad_of_cube_is_exact():
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float64, (), name="x")
        (d1,) = kn.grad(x**3, [x])
        (d2,) = kn.grad(d1, [x])
        (d3,) = kn.grad(d2, [x])
        values = _run([d1, d2, d3], [x], [np.float64(3.0)])
    assert [float(v) for v in values] == [27.0, 18.0, 6.0]


def test_grad_sums_broadcast_cotangents_back_to_the_input_shape():
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, ("batch", 3), name="x")
        b = kn.Variable(np.zeros((1, 3), np.float32), name="b")
        c = kn.Variable(np.float32(2.0), name="c")
        loss = kn.sum((x + b) * c)
        gb, gc = kn.grad(loss, [b, c])
        out_b, out_c = _run([gb, gc], [x], [np.ones((4, 3), np.float32)])
    assert out_b.shape == (1, 3) and np.all(out_b == 8.0)
    assert out_c.shape == () and out_c == 12.0


def test_grad_adds_up_a_value_used_more_than_once():
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float64, (3,), name="x")
        y = kn.sum(x * x + kn.exp(x) + x)
        (g,) = kn.grad(y, [x])
        xv = np.array([0.5, -1.0, 2.0])
        np.testing.assert_allclose(_run(g, [x], [xv]), 2 * xv + np.exp(xv) + 1)


def test_grad_non_scalar_without_grad_ys_raises_like_pytorch():
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (3,), name="x")
        with pytest.raises(kn.GraphError, match="implicitly created only for scalar outputs"):
            kn.grad(x * 2.0, [x])
        (g,) = kn.grad(x * 2.0, [x], grad_ys=[np.array([1.0, 2.0, 3.0], np.float32)])
        np.testing.assert_array_equal(_run(g, [x], [np.ones(3, np.float32)]), [2, 4, 6])


def test_disconnected_raise_names_the_blocking_op_and_zero_gives_zeros():
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (2, 3), name="x")
        z = kn.placeholder(kn.float32, (3,), name="z")
        loss = kn.sum(kn.cast(kn.argmax(x, axis=1), kn.float32))
        with pytest.raises(
            kn.GraphError, match=r"'x' reaches .* only through argmax.*test_autodiff"
        ):
            kn.grad(loss, [x])
        with pytest.raises(kn.GraphError, match="does not depend on 'z'"):
            kn.grad(loss, [z])
        gx, gz = kn.grad(loss, [x, z], disconnected="zero")
        out = _run([gx, gz], [x, z], [np.ones((2, 3), np.float32), np.ones(3, np.float32)])
    assert out[0].shape == (2, 3) and not out[0].any() and not out[1].any()


def test_stop_gradient_blocks_and_integer_inputs_get_none():
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float64, (3,), name="x")
        ids = kn.placeholder(kn.int64, (2,), name="ids")
        y = kn.sum(kn.index_select(x, 0, ids) * kn.stop_gradient(x[:2]))
        (g,) = kn.grad(y, [x])
        out = _run(g, [x, ids], [np.array([1.0, 2.0, 3.0]), np.array([2, 2])])
    np.testing.assert_array_equal(out, [0.0, 0.0, 3.0])  # gather scatters with add


def test_missing_gradient_rule_is_an_error_not_a_silent_zero():
    exp_without_rule = dataclasses.replace(REGISTRY["exp"], name="exp_without_rule", vjp=None)
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (3,), name="x")
        y = bind_graph(exp_without_rule, (x,), {})
        with pytest.raises(kn.GraphError, match="no gradient rule for exp_without_rule"):
            kn.grad(kn.sum(y) + kn.sum(x), [x])


def test_gradient_nodes_carry_the_forward_site_and_a_scope():
    with kn.Graph().as_default() as g:
        x = kn.placeholder(kn.float32, (3,), name="x")
        y = kn.sum(kn.tanh(x))
        kn.grad(y, [x])
    grads = [n for n in g.nodes if n.name.startswith("grad/")]
    assert grads and all(n.site.startswith("test_autodiff.py:") for n in grads)
    kn.verify(g)


def test_hessian_of_a_quadratic_form():
    a = np.array([[2.0, 1.0], [1.0, 3.0]])
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float64, (2,), name="x")
        h = _run(kn.hessian(kn.sum(x * (kn.constant(a) @ x)), x), [x], [np.ones(2)])
    np.testing.assert_allclose(h, a + a.T)


RANKS = [((3,), (3,)), ((3,), (3, 4)), ((2, 3), (3,)), ((5, 2, 3), (3, 4)), ((2, 3), (4, 3, 2))]


@pytest.mark.parametrize("shape_a, shape_b", RANKS)
def test_matmul_gradients_for_every_rank_combination(shape_a, shape_b):
    rng = np.random.default_rng(0)
    a0, b0 = rng.normal(size=shape_a), rng.normal(size=shape_b)
    assert kn.testing.gradcheck(lambda a, b: kn.matmul(a, b), [a0, b0])
