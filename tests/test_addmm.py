"""`addmm` (one GEMM: beta * input + alpha * mat1 @ mat2) and `fuse_gemm`, which makes
gradient-descent updates of weight matrices one GEMM into the weight's storage.

Expected values: NumPy's `beta * x + alpha * (a @ b)`; PyTorch's `torch.addmm` where torch is
installed (values and gradients).
"""

from __future__ import annotations

import numpy as np
import pytest

import kiln as kn
from kiln.ops.linalg import _addmm
from kiln.passes import PIPELINE, fuse_gemm, simplify
from kiln.passes.program import extract

RNG = np.random.default_rng(0)


def _m(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


LAYOUTS = {
    "c": lambda m: m,
    "f": lambda m: np.asfortranarray(m),
    "t": lambda m: np.ascontiguousarray(m.T).T,  # a transpose view of a C array
    "strided": lambda m: np.repeat(m, 2, axis=1)[:, ::2],
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("la", list(LAYOUTS))
@pytest.mark.parametrize("lb", list(LAYOUTS))
def test_kernel_matches_numpy_for_every_layout(dtype, la, lb):
    a, b, x = (
        LAYOUTS[la](_m(4, 3, dtype=dtype)),
        LAYOUTS[lb](_m(3, 5, dtype=dtype)),
        _m(4, 5, dtype=dtype),
    )
    expected = 0.5 * x + (-2.0) * (a @ b)
    got = _addmm(np, x, a, b, beta=0.5, alpha=-2.0)
    np.testing.assert_allclose(got, expected, rtol=1e-5 if dtype == np.float32 else 1e-12)


def test_kernel_accumulates_into_its_input_in_place():
    x, a, b = _m(6, 4), _m(6, 3).T.copy().T, _m(3, 4)  # a: an F-ordered matrix
    x0, ref = x.copy(), x - 0.1 * (a @ b)
    got = _addmm(np, x, a, b, out=x, alpha=-0.1)
    assert got is x and not np.array_equal(x, x0)
    np.testing.assert_allclose(x, ref, rtol=1e-5)


def test_kernel_broadcasts_input_and_ignores_it_when_beta_is_zero():
    a, b = _m(2, 3), _m(3, 4)
    bias = _m(4)
    np.testing.assert_allclose(_addmm(np, bias, a, b), bias + a @ b, rtol=1e-5)
    nan = np.full((2, 4), np.nan, np.float32)
    np.testing.assert_allclose(_addmm(np, nan, a, b, beta=0.0), a @ b, rtol=1e-5)
    ints = np.arange(6).reshape(2, 3)
    np.testing.assert_array_equal(_addmm(np, ints[:, :2] * 0 + 1, ints, ints.T), 1 + ints @ ints.T)


def test_public_function_and_method_in_graph_and_eager_mode():
    x, a, b = _m(2, 4), _m(2, 3), _m(3, 4)
    expected = 3.0 * x + 0.5 * (a @ b)
    eager = kn.addmm(kn.tensor(x), kn.tensor(a), kn.tensor(b), beta=3, alpha=0.5)
    np.testing.assert_allclose(eager.numpy(), expected, rtol=1e-5)
    method = kn.tensor(x).addmm(kn.tensor(a), kn.tensor(b), beta=3, alpha=0.5)
    np.testing.assert_allclose(method.numpy(), expected, rtol=1e-5)
    with kn.Graph().as_default():
        sx = kn.placeholder(kn.float32, (2, 4), name="x")
        f = kn.function([sx], kn.addmm(sx, kn.constant(a), kn.constant(b), beta=3, alpha=0.5))
    np.testing.assert_allclose(f(x), expected, rtol=1e-5)
    with pytest.raises(kn.DTypeError, match="addmm"):
        kn.addmm(kn.tensor(x), kn.tensor(a.astype(np.float64)), kn.tensor(b))
    with pytest.raises(kn.ShapeError, match="addmm"):
        kn.addmm(kn.tensor(x), kn.tensor(a[0]), kn.tensor(b))


def test_gradients_match_torch():
    torch = pytest.importorskip("torch")
    x, a, b = _m(4), _m(2, 3), _m(3, 4)
    ts = [torch.tensor(v, requires_grad=True) for v in (x, a, b)]
    ks = [kn.tensor(v, requires_grad=True) for v in (x, a, b)]
    (torch.addmm(*ts, beta=0.25, alpha=-1.5) ** 2).sum().backward()
    (kn.addmm(*ks, beta=0.25, alpha=-1.5) ** 2).sum().backward()
    for t, k in zip(ts, ks):
        np.testing.assert_allclose(k.grad.numpy(), t.grad.numpy(), rtol=1e-5, atol=1e-6)


def _sgd_graph(w0, reads_gradient_twice=False):
    with kn.Graph().as_default():
        h = kn.placeholder(kn.float32, (8, 5), name="h")
        labels = kn.placeholder(kn.int64, (8,), name="labels")
        w = kn.Variable(w0.copy(), name="w")
        loss = kn.cross_entropy(h @ w, labels)
        (g,) = kn.grad(loss, [w])
        new = w - 0.1 * g
        if reads_gradient_twice:
            new = new - 0.01 * g * g
        return h, labels, w, loss, {w: new}


def test_sgd_update_of_a_weight_matrix_becomes_one_in_place_gemm():
    w0, hv, lv = _m(5, 3), _m(8, 5), RNG.integers(0, 3, 8)
    h, labels, w, loss, updates = _sgd_graph(w0)
    program = fuse_gemm(simplify(extract([loss], [h, labels], updates)))
    update = program.updates[w].node
    assert update.op.name == "addmm" and update.attrs["alpha"] == pytest.approx(-0.1)
    f = kn.function([h, labels], loss, updates=updates)
    f(hv, lv)
    assert any(n.op.name == "addmm" for n in f.graph.nodes)
    assert any("alpha=" in line and "out=V[" in line for line in f.source.splitlines())
    # no value holds the weight gradient: the GEMM accumulates into w's storage
    assert not any(n.op.name == "matmul" and tuple(n.out.shape) == w0.shape for n in f.graph.nodes)
    h2, l2, w2, loss2, updates2 = _sgd_graph(w0)
    unfused = [(n, fn) for n, fn in PIPELINE if n != "fuse_gemm"]
    kn.function([h2, l2], loss2, updates=updates2, passes=unfused)(hv, lv)
    np.testing.assert_allclose(w.numpy(), w2.numpy(), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(w.numpy(), w0 - 0.1 * _numpy_gradient(w0, hv, lv), rtol=1e-5)


def _numpy_gradient(w, h, labels):
    z = h @ w
    p = np.exp(z - z.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    p[np.arange(len(labels)), labels] -= 1
    return h.T @ p / len(labels)


def test_gradient_read_twice_is_not_fused():
    h, labels, w, loss, updates = _sgd_graph(_m(5, 3), reads_gradient_twice=True)
    program = fuse_gemm(simplify(extract([loss], [h, labels], updates)))
    assert "addmm" not in {n.op.name for n in program.nodes}


def test_transposed_product_is_made_in_the_order_it_is_read():
    # (a @ b).T == b.T @ a.T (the matrix identity); the rewrite makes the product in the
    # order it is fetched, so no strided view of an arena buffer is copied out
    a, b = _m(3, 5), _m(5, 4)
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (3, 5), name="x")
        y = (x @ kn.constant(b)).T
        program = fuse_gemm(simplify(extract([y], [x], {})))
        f = kn.function([x], y)
    ops = [n.op.name for n in program.nodes]
    assert ops.count("matmul") == 1 and program.outputs[0].node.op.name == "matmul"
    np.testing.assert_allclose(f(a), (a @ b).T, rtol=1e-6)
    assert f(a).flags.c_contiguous


def test_compiled_linear_layers_return_weight_gradients_without_arena_copies(monkeypatch):
    from kiln.tracing import traced as traced_module

    monkeypatch.setattr(traced_module, "PLACED_MIN_BYTES", 0)  # these residuals are placed too
    layers = [kn.nn.Linear(8, 8) for _ in range(3)]

    @kn.compile
    def loss(x):
        h = x
        for layer in layers:
            h = kn.tanh(layer(h))
        return h.sum()

    x = kn.tensor(_m(4, 8))
    loss(x).backward()
    grads = [layer.weight.grad.numpy().copy() for layer in layers]
    traced = loss.last
    # the weight gradients are the backward program's outputs, made in place of an arena
    # buffer: its arena holds activations' cotangents only (4 x 8 floats each), besides the
    # residuals the forward call placed in it (kiln/tracing/traced.py, `placement`)
    extras = traced.function.outputs[len(traced.outputs) :]
    kept = sum(int(np.prod(s.shape)) * s.dtype.itemsize for s in extras)
    assert traced.placement()[2] < kept + 3 * 8 * 8 * 4
    for layer in layers:
        layer.weight.grad = None
    y = x  # the same layers eagerly: the reference gradients
    for layer in layers:
        y = kn.tanh(layer(y))
    y.sum().backward()
    for g, layer in zip(grads, layers):
        np.testing.assert_allclose(g, layer.weight.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_update_scaled_by_a_learning_rate_variable_is_one_gemm_on_a_scaled_operand():
    # w - lr * (h.T @ g) with lr a 0-d Variable (a scheduler's learning rate): the scale is
    # known only at run time, so it multiplies the product's smaller operand (a [batch, n]
    # activation, not the [n, m] product) and the update is still one in-place GEMM.
    # Expected: NumPy's w - lr * (h.T @ g); (lr * h.T) @ g rounds differently, so allclose.
    w0, hv, gv = _m(3, 6), _m(8, 3), _m(8, 6)
    with kn.Graph().as_default():
        h = kn.placeholder(kn.float32, (8, 3), name="h")
        g = kn.placeholder(kn.float32, (8, 6), name="g")
        w = kn.Variable(w0, name="w")
        lr = kn.Variable(np.float32(0.25), name="lr")
        updates = {w: w - lr * (h.T @ g)}
        program = fuse_gemm(simplify(extract([], [h, g], updates)))
        f = kn.function([h, g], [], updates=updates)
    update = program.updates[w].node
    assert update.op.name == "addmm" and update.attrs["alpha"] == -1.0
    scaled = [n for n in program.nodes if n.op.name == "mul"]
    # h.T (24 elements) is smaller than g (48): h itself is scaled, then viewed transposed
    assert len(scaled) == 1 and scaled[0].inputs[0] is program.inputs[0]
    assert "matmul" not in {n.op.name for n in program.nodes}
    f(hv, gv)
    np.testing.assert_allclose(w.numpy(), w0 - 0.25 * (hv.T @ gv), rtol=1e-6, atol=1e-6)
    lr.assign(np.float32(0.5))  # the new rate is read at run time
    before = w.numpy().copy()
    f(hv, gv)
    np.testing.assert_allclose(w.numpy(), before - 0.5 * (hv.T @ gv), rtol=1e-6, atol=1e-6)


def test_compiled_sgd_step_updates_weights_with_one_gemm_each():
    # kn.optim.SGD's learning rate is a Variable in a traced step; nn.Linear's weight
    # gradient is (x.T @ ct).T: both rewrites must meet for the update to be a GEMM.
    layers = [kn.nn.Linear(8, 8) for _ in range(2)]
    params = [p for layer in layers for p in layer.parameters()]
    opt = kn.optim.SGD(params, lr=0.1)
    ref = [p.detach().numpy().copy() for p in params]

    @kn.compile
    def step(x):
        loss = layers[1](kn.relu(layers[0](x))).square().mean()
        opt.minimize(loss)
        return loss

    x = _m(4, 8)
    step(kn.tensor(x))
    ops = [n.op.name for n in step.last.function.graph.nodes]
    assert ops.count("addmm") == 2  # one per weight matrix
    # reference: the same step eagerly (PyTorch's SGD rule p - lr * grad)
    w0, b0, w1, b1 = (kn.tensor(a, requires_grad=True) for a in ref)
    loss = (kn.relu(kn.tensor(x) @ w0.T + b0) @ w1.T + b1).square().mean()
    loss.backward()
    for p, r in zip(params, (w0, b0, w1, b1)):
        np.testing.assert_allclose(p.detach().numpy(), (r - 0.1 * r.grad).detach().numpy(),
                                   rtol=1e-5, atol=1e-6)  # fmt: skip
