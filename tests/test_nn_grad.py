"""Gradients of conv2d and pooling: the gradient primitives against NumPy references (rows in
`GRAD_CASES`, for the op table), vjps against finite differences, the dot-product test,
second order, and a symbolic batch through `kn.function`.

References scatter with `np.add.at` over explicit index arrays: they share no code with the
kernels (`as_strided` windows, a loop over kernel offsets).
"""

import zlib

import numpy as np
import pytest
from op_table_nn_grad import GRAD_CASES, _attrs, _pair

import kiln as kn
from kiln.graph.opdef import REGISTRY
from kiln.ops.core import apply
from kiln.testing import gradcheck, gradgradcheck


def _inputs(case, dtype):
    rng = np.random.default_rng(zlib.crc32(f"{case.op}-{case.label}-{dtype}".encode()))
    return case.make_args(rng, np.dtype(dtype))


def _grad_params():
    return [
        pytest.param(case, dtype, id=f"{case.op}-{case.label}-{dtype}")
        for case in GRAD_CASES
        for dtype in case.dtypes
    ]


@pytest.mark.parametrize("case, dtype", _grad_params())
def test_grad_primitive_matches_reference(case, dtype):
    """Graph mode, eager mode and the kernel with `out=` against the NumPy reference."""
    arrays = _inputs(case, dtype)
    expected = case.reference(*arrays)
    with kn.Graph().as_default() as graph:
        xs = [kn.placeholder(a.dtype, a.shape, f"x{i}") for i, a in enumerate(arrays)]
        y = case.fn(*xs)
    assert y.node.op.name == case.op
    assert (y.shape, y.dtype) == (expected.shape, expected.dtype)
    kn.verify(graph)
    compiled = kn.function(xs, y)(*arrays)
    eager = case.fn(*arrays)
    out = np.full(expected.shape, np.nan, expected.dtype)
    assert y.node.op.impl(np, *arrays, out=out, **y.node.attrs) is out
    for got, what in ((compiled, "compiled"), (eager, "eager"), (out, "out=")):
        assert got.dtype == expected.dtype, what
        np.testing.assert_allclose(got, expected, case.rtol, case.atol, err_msg=what)


def test_every_grad_primitive_has_rows():
    names = {"conv2d_input_grad", "conv2d_weight_grad", "max_pool2d_grad", "avg_pool2d_grad"}
    names |= {"max_pool2d_gather"}
    assert names <= set(REGISTRY)
    assert {c.op for c in GRAD_CASES} == names


# -- vjps against finite differences (float64) --------------------------------------------------

CONV_GEOMETRIES = [
    pytest.param((2, 3, 5, 5), (4, 3, 3, 3), {}, id="basic"),
    pytest.param((1, 2, 7, 6), (3, 2, 3, 2), {"stride": (2, 3)}, id="stride_pair"),
    pytest.param((2, 2, 5, 3), (3, 2, 3, 3), {"padding": (2, 1)}, id="pad_pair"),
    pytest.param((1, 2, 7, 7), (2, 2, 3, 3), {"dilation": (2, 2)}, id="dilation2"),
    pytest.param(
        (2, 3, 9, 8), (5, 3, 3, 2), {"stride": (2, 1), "padding": (1, 2), "dilation": (2, 3)},
        id="all_attrs",
    ),
    pytest.param((1, 2, 6, 7), (3, 2, 2, 2), {"stride": (3, 3)}, id="uncovered"),
]  # fmt: skip

POOL_GEOMETRIES = [
    pytest.param((2, 3, 5, 5), 3, {"stride": 2, "padding": 1}, id="overlap_pad"),
    pytest.param((1, 2, 7, 5), (3, 2), {"stride": (2, 1)}, id="non_square_overlap"),
    pytest.param((2, 2, 5, 6), (2, 3), {"stride": (1, 2), "padding": (1, 1)}, id="pad_pair"),
    pytest.param((1, 3, 4, 6), 2, {}, id="disjoint"),
]


def _distinct(rng, shape):
    """Values 0.1 apart (shuffled): no two elements of a window tie, even after a step eps."""
    size = int(np.prod(shape))
    return (rng.permutation(size).reshape(shape) - size / 2) * 0.1


@pytest.mark.parametrize("x_shape, w_shape, attrs", CONV_GEOMETRIES)
def test_conv2d_grad_matches_finite_differences(x_shape, w_shape, attrs):
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal(x_shape), rng.standard_normal(w_shape)
    assert gradcheck(lambda x, w: kn.conv2d(x, w, **attrs), [x, w])


@pytest.mark.parametrize("pool", ["max_pool2d", "avg_pool2d"])
@pytest.mark.parametrize("x_shape, kernel, attrs", POOL_GEOMETRIES)
def test_pool_grad_matches_finite_differences(pool, x_shape, kernel, attrs):
    x = _distinct(np.random.default_rng(1), x_shape)
    fn = getattr(kn, pool)
    assert gradcheck(lambda x: fn(x, kernel, **attrs), [x])


def _canonical_conv(attrs):
    return _attrs(attrs.get("stride", 1), attrs.get("padding", 0), attrs.get("dilation", 1))


def _canonical_pool(kernel, attrs):
    stride = attrs.get("stride", kernel)
    return {**_attrs(stride, attrs.get("padding", 0)), "kernel_size": _pair(kernel)}


def _grad_primitive_fns(x_shape, w_shape, attrs):
    """(name, fn, inputs) for each conv gradient primitive at this geometry (float64)."""
    rng = np.random.default_rng(2)
    attrs = _canonical_conv(attrs)
    y_shape = kn.conv2d(np.zeros(x_shape), np.zeros(w_shape), **attrs).shape
    x, w, gy = (rng.standard_normal(s) for s in (x_shape, w_shape, y_shape))
    return [
        ("conv2d_input_grad",
         lambda gy, w: apply("conv2d_input_grad", gy, w, x_shape=x_shape, **attrs), [gy, w]),
        ("conv2d_weight_grad",
         lambda x, gy: apply("conv2d_weight_grad", x, gy, w_shape=w_shape, **attrs), [x, gy]),
    ]  # fmt: skip


def _pool_primitive_fns(x_shape, kernel, attrs):
    rng = np.random.default_rng(3)
    attrs = _canonical_pool(kernel, attrs)
    y_shape = kn.avg_pool2d(np.zeros(x_shape), **attrs).shape
    x, g, gy = _distinct(rng, x_shape), rng.standard_normal(x_shape), rng.standard_normal(y_shape)
    return [
        ("max_pool2d_grad", lambda x, gy: apply("max_pool2d_grad", x, gy, **attrs), [x, gy]),
        ("max_pool2d_gather", lambda x, g: apply("max_pool2d_gather", x, g, **attrs), [x, g]),
        ("avg_pool2d_grad",
         lambda gy: apply("avg_pool2d_grad", gy, x_shape=x_shape, **attrs), [gy]),
    ]  # fmt: skip


@pytest.mark.parametrize("x_shape, w_shape, attrs", CONV_GEOMETRIES)
def test_conv2d_grad_primitives_vjps_match_finite_differences(x_shape, w_shape, attrs):
    for name, fn, inputs in _grad_primitive_fns(x_shape, w_shape, attrs):
        assert gradcheck(fn, inputs), name


@pytest.mark.parametrize("x_shape, kernel, attrs", POOL_GEOMETRIES)
def test_pool_grad_primitives_vjps_match_finite_differences(x_shape, kernel, attrs):
    for name, fn, inputs in _pool_primitive_fns(x_shape, kernel, attrs):
        assert gradcheck(fn, inputs), name


# -- the dot-product test: <J v, u> == <v, J^T u> ----------------------------------------------


def _dot_product_check(fn, inputs, seed):
    """For each input i and random v, u: the central difference of fn along v (exact up to
    rounding: these maps are linear, bilinear or piecewise linear) against kn.grad."""
    rng = np.random.default_rng(seed)
    with kn.Graph().as_default():
        xs = [kn.placeholder(kn.float64, a.shape, f"x{i}") for i, a in enumerate(inputs)]
        y = fn(*xs)
        u = kn.placeholder(kn.float64, y.shape, "u")
        value = kn.function(xs, y)
        vjp = kn.function([*xs, u], kn.grad(y, xs, grad_ys=[u], disconnected="zero"))
    u_value = rng.standard_normal(tuple(y.shape))
    cts = vjp(*inputs, u_value)
    eps = 1e-3
    for i, (a, ct) in enumerate(zip(inputs, cts)):
        v = rng.standard_normal(a.shape)
        plus = [b + eps * v if j == i else b for j, b in enumerate(inputs)]
        minus = [b - eps * v if j == i else b for j, b in enumerate(inputs)]
        jv = (value(*plus) - value(*minus)) / (2 * eps)
        lhs, rhs = np.vdot(jv, u_value), np.vdot(v, ct)
        np.testing.assert_allclose(lhs, rhs, rtol=1e-9, atol=1e-9, err_msg=f"input {i}")


@pytest.mark.parametrize("x_shape, w_shape, attrs", CONV_GEOMETRIES)
def test_conv2d_dot_product(x_shape, w_shape, attrs):
    rng = np.random.default_rng(4)
    x, w = rng.standard_normal(x_shape), rng.standard_normal(w_shape)
    _dot_product_check(lambda x, w: kn.conv2d(x, w, **attrs), [x, w], seed=5)
    for name, fn, inputs in _grad_primitive_fns(x_shape, w_shape, attrs):
        _dot_product_check(fn, inputs, seed=zlib.crc32(name.encode()))


@pytest.mark.parametrize("x_shape, kernel, attrs", POOL_GEOMETRIES)
def test_pool_dot_product(x_shape, kernel, attrs):
    # Steps of eps * v (|v| ~ 1, eps = 1e-3) never reorder values 0.1 apart.
    x = _distinct(np.random.default_rng(6), x_shape)
    for pool in (kn.max_pool2d, kn.avg_pool2d):
        _dot_product_check(lambda x: pool(x, kernel, **attrs), [x], seed=7)
    for name, fn, inputs in _pool_primitive_fns(x_shape, kernel, attrs):
        _dot_product_check(fn, inputs, seed=zlib.crc32(name.encode()))


# -- second order -------------------------------------------------------------------------------


def test_conv2d_second_order_matches_finite_differences():
    """d/d(x, w) of sum(grad_x**2) + sum(grad_w**2) for loss = sum(conv2d(x, w)**2)."""
    rng = np.random.default_rng(8)
    x, w = rng.standard_normal((2, 2, 6, 5)), rng.standard_normal((3, 2, 3, 2))
    attrs = {"stride": (2, 1), "padding": (1, 1), "dilation": (1, 2)}

    def grad_norms(x, w):
        gx, gw = kn.grad(kn.sum(kn.conv2d(x, w, **attrs) ** 2), [x, w])
        return kn.sum(gx**2) + kn.sum(gw**2)

    assert gradcheck(grad_norms, [x, w])
    assert gradgradcheck(lambda x, w: kn.conv2d(x, w, **attrs), [x, w])


@pytest.mark.parametrize("x_shape, kernel, attrs", POOL_GEOMETRIES)
def test_pool_second_order_matches_finite_differences(x_shape, kernel, attrs):
    x = _distinct(np.random.default_rng(9), x_shape)
    for pool in (kn.max_pool2d, kn.avg_pool2d):
        assert gradgradcheck(lambda x: pool(x, kernel, **attrs) ** 2, [x])


def test_conv2d_grad_primitives_second_order():
    for name, fn, inputs in _grad_primitive_fns((1, 2, 5, 6), (3, 2, 2, 3), {"padding": 1}):
        assert gradgradcheck(lambda *xs: fn(*xs) ** 2, inputs), name


# -- max pooling ties and NaN: like PyTorch -----------------------------------------------------


def _pool_grad(x, kernel, **attrs):
    with kn.Graph().as_default():
        xs = kn.placeholder(kn.float64, x.shape, "x")
        (gx,) = kn.grad(kn.sum(kn.max_pool2d(xs, kernel, **attrs)), [xs])
        return kn.function([xs], gx)(x)


def test_max_pool2d_grad_ties_go_to_the_first_maximum():
    np.testing.assert_array_equal(_pool_grad(np.zeros((1, 1, 2, 2)), 2), [[[[1, 0], [0, 0]]]])
    # overlapping windows of a constant input: each window's top-left element
    expected = np.zeros((1, 1, 3, 4))
    expected[0, 0, :2, :3] = 1
    np.testing.assert_array_equal(_pool_grad(np.ones((1, 1, 3, 4)), 2, stride=1), expected)
    # padding never wins: each window's first real element, even in a window of zeros
    got = _pool_grad(np.zeros((1, 1, 3, 3)), 3, stride=2, padding=1)
    np.testing.assert_array_equal(got, [[[[1, 1, 0], [1, 1, 0], [0, 0, 0]]]])


def test_max_pool2d_grad_routes_to_nan():
    x = np.array([[[[1.0, np.nan], [3.0, 2.0]]]])
    np.testing.assert_array_equal(_pool_grad(x, 2), [[[[0, 1], [0, 0]]]])


# -- graph mode with a symbolic batch -----------------------------------------------------------


def _numeric_grad(f, arrays, i, eps=1e-6):
    args = [a.copy() for a in arrays]
    flat = args[i].reshape(-1)
    out = np.zeros(flat.size)
    for j in range(flat.size):
        saved = flat[j]
        flat[j] = saved + eps
        plus = float(f(*args))
        flat[j] = saved - eps
        minus = float(f(*args))
        flat[j] = saved
        out[j] = (plus - minus) / (2 * eps)
    return out.reshape(arrays[i].shape)


def test_symbolic_batch_grad_through_function():
    with kn.Graph().as_default() as graph:
        x = kn.placeholder(kn.float64, (None, 2, 7, 6), "x")
        w = kn.placeholder(kn.float64, (3, 2, 3, 2), "w")
        h = kn.tanh(kn.conv2d(x, w, stride=(1, 2), padding=(1, 1), dilation=(2, 1)))
        pooled = kn.max_pool2d(h, 2, stride=1, padding=1), kn.avg_pool2d(h, (3, 2), stride=1)
        loss = kn.sum(pooled[0] ** 2) + kn.sum(pooled[1] ** 2)
        gx, gw = kn.grad(loss, [x, w])
        value = kn.function([x, w], loss)
        grads = kn.function([x, w], [gx, gw])
    kn.verify(graph)
    assert gx.shape[0] == x.shape[0] and isinstance(gx.shape[0], kn.Dim)
    ops = {n.op.name for n in graph.nodes}
    assert {"conv2d_input_grad", "conv2d_weight_grad", "max_pool2d_grad", "avg_pool2d_grad"} <= ops
    rng = np.random.default_rng(10)
    w_value = rng.standard_normal((3, 2, 3, 2)) * 0.5
    per_sample = []
    for batch in (1, 4):
        x_value = _distinct(rng, (batch, 2, 7, 6))
        gx_value, gw_value = grads(x_value, w_value)
        assert gx_value.shape == x_value.shape and gw_value.shape == w_value.shape
        for i, got in enumerate((gx_value, gw_value)):
            numeric = _numeric_grad(value, [x_value, w_value], i)
            np.testing.assert_allclose(got, numeric, rtol=1e-5, atol=1e-6, err_msg=f"batch {batch}")
        per_sample.append((x_value, gx_value, gw_value))
    # samples are independent: batch 4's grad_x stacks, and its grad_w sums, per-sample grads
    x4, gx4, gw4 = per_sample[1]
    singles = [grads(x4[i : i + 1], w_value) for i in range(4)]
    stacked = np.concatenate([s[0] for s in singles])
    np.testing.assert_allclose(gx4, stacked, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gw4, sum(s[1] for s in singles), rtol=1e-10, atol=1e-12)


# -- shape rules --------------------------------------------------------------------------------


def test_grad_primitive_shape_rules_refuse_mismatched_cotangents():
    attrs = _attrs(dilation=1)
    with kn.Graph().as_default():
        gy = kn.placeholder(kn.float32, (2, 4, 3, 3), "gy")
        w = kn.placeholder(kn.float32, (4, 3, 3, 3), "w")
        x = kn.placeholder(kn.float32, (2, 3, 5, 6), "x")
        with pytest.raises(kn.ShapeError, match="conv2d_input_grad.*cotangent"):
            apply("conv2d_input_grad", gy, w, x_shape=(2, 3, 5, 6), **attrs)
        with pytest.raises(kn.ShapeError, match="conv2d_weight_grad.*cotangent"):
            apply("conv2d_weight_grad", x, gy, w_shape=(4, 3, 3, 3), **attrs)
        with pytest.raises(kn.ShapeError, match="max_pool2d_grad.*cotangent"):
            apply("max_pool2d_grad", x, gy, kernel_size=(2, 2), **_attrs(2))
        with pytest.raises(kn.ShapeError, match="avg_pool2d_grad.*cotangent"):
            apply("avg_pool2d_grad", gy, x_shape=(2, 4, 5, 6), kernel_size=(2, 2), **_attrs(2))
        with pytest.raises(kn.ShapeError, match="conv2d_input_grad"):
            apply("conv2d_input_grad", gy, w, x_shape=(2, 3, 5), **attrs)
