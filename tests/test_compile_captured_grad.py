"""Captured leaf tensors that require grad under kn.compile (kiln/tracing/trace.py `_lifted`):
inputs of the compiled program, read on every call, so gradients reach them and changes made
between calls are seen, as in eager code; the expected values are the same code run eagerly
(PyTorch's "Tensors and autograd" polynomial fit is the first case)."""

import math

import numpy as np
import pytest

import kiln as kn
from kiln.errors import GraphError


def _polynomial_fit(compiled: bool, steps: int = 60):
    kn.manual_seed(0)
    x = kn.linspace(-math.pi, math.pi, 200)
    y = kn.sin(x)
    a, b, c, d = (kn.randn((), requires_grad=True) for _ in range(4))

    def loss_fn(x, y):
        y_pred = a + b * x + c * x**2 + d * x**3
        return (y_pred - y).pow(2).sum()

    f = kn.compile(loss_fn) if compiled else loss_fn
    for _ in range(steps):
        loss = f(x, y)
        loss.backward()
        with kn.no_grad():
            for p in (a, b, c, d):
                p -= 1e-6 * p.grad
                p.grad = None
    return loss.item(), [p.item() for p in (a, b, c, d)], f


def test_polynomial_fit_trains_captured_leaves_as_eagerly_with_one_trace():
    loss, params, _ = _polynomial_fit(False)
    loss_c, params_c, f = _polynomial_fit(True)
    assert loss_c == loss and params_c == params  # the same float32 arithmetic, bit for bit
    assert len(f.cache) == 1  # updated in place each step: read each call, not retraced


W = kn.tensor([1.0, 2.0], requires_grad=True)
XS = kn.tensor([3.0, 4.0])


def _inner_backward():
    loss = (W * XS).sum() ** 2
    loss.backward()
    return loss


def test_backward_inside_accumulates_into_the_captured_grad():
    global W
    compiled = kn.compile(_inner_backward)
    got = []
    for fn in (_inner_backward, compiled):
        W.grad = None
        got.append([(fn().item(), W.grad.tolist()) for _ in range(2)])
    assert got[1] == got[0] == [(121.0, [66.0, 88.0]), (121.0, [132.0, 176.0])]
    assert isinstance(W, kn.Tensor) and W.requires_grad  # the global is the tensor again
    W = kn.tensor([1.0, 2.0, 3.0], requires_grad=True)  # another tensor: traced again
    try:
        with pytest.raises(Exception, match="shape|broadcast"):
            compiled()  # (3,) * (2,): the error eager code gives too
    finally:
        W = kn.tensor([1.0, 2.0], requires_grad=True)


def test_captured_parameter_closure_cell_and_attribute():
    p = kn.nn.Parameter(kn.tensor([1.0, -1.0]))

    class Holder:
        pass

    holder = Holder()
    holder.q = kn.tensor([0.5, 2.0], requires_grad=True)

    def loss_fn(x):
        return (p * x + holder.q * x * x).sum()

    x = kn.tensor([2.0, 3.0])
    compiled = kn.compile(loss_fn)
    for _ in range(2):
        loss = compiled(x)
        loss.backward()
    np.testing.assert_array_equal(p.grad.numpy(), 2 * x.numpy())  # d/dp: x, twice
    np.testing.assert_array_equal(holder.q.grad.numpy(), 2 * (x * x).numpy())
    assert type(holder.__dict__["q"]) is kn.Tensor and type(p) is kn.nn.Parameter


def test_no_longer_requiring_grad_makes_it_a_constant_again():
    w = kn.tensor([2.0], requires_grad=True)
    f = kn.compile(lambda x: w * x)
    assert f(kn.tensor([3.0])).requires_grad
    w.requires_grad_(False)
    out = f(kn.tensor([3.0]))
    assert not out.requires_grad and out.tolist() == [6.0]


def test_in_place_change_inside_under_no_grad_keeps_the_leaf():
    # torch.compile runs it as eager PyTorch does: w changes, stays the leaf that gradients of
    # what reads its new value reach (expected values by hand)
    w = kn.tensor([1.0, 2.0], requires_grad=True)

    def step(x):
        with kn.no_grad():
            w.mul_(2)
        return w * x

    out = kn.compile(step)(kn.tensor([3.0, 5.0]))
    assert out.tolist() == [6.0, 20.0] and w.tolist() == [2.0, 4.0] and type(w) is kn.Tensor
    out.sum().backward()
    assert w.grad.tolist() == [3.0, 5.0]


def test_in_place_change_under_no_grad_inside_updates_the_leaf():
    """As in PyTorch: under no_grad the captured leaf's values change in place, it stays a
    leaf that requires grad, and the later read takes its gradient. Expected values: the
    eager run (w doubles each call; d(sum(w * x))/dw = x)."""
    runs = []
    for compiled in (False, True):
        w = kn.tensor([1.0, 2.0], requires_grad=True)

        def step(x):
            with kn.no_grad():
                w.mul_(2)
            return w * x

        run = kn.compile(step) if compiled else step
        outs = []
        for _ in range(2):
            out = run(kn.full((2,), 3.0))
            out.sum().backward()
            outs.append(out.tolist())
        assert type(w) is kn.Tensor and w.is_leaf and w.requires_grad
        runs.append((outs, w.tolist(), w.grad.tolist()))
    assert runs[0] == runs[1] == ([[6.0, 12.0], [12.0, 24.0]], [4.0, 8.0], [6.0, 6.0])


def test_in_place_change_inside_with_grad_on_is_refused_as_for_arguments():
    w = kn.tensor([1.0, 2.0], requires_grad=True)

    def step(x):
        w.mul_(2)
        return w * x

    with pytest.raises(GraphError, match="in-place change of 'w'"):
        kn.compile(step)(kn.ones(2))
    assert w.tolist() == [1.0, 2.0] and type(w) is kn.Tensor  # unchanged, and rebound back


def test_kn_trace_result_reads_the_captured_input_too():
    w = kn.tensor([2.0, 3.0], requires_grad=True)
    traced = kn.trace(lambda x: (w * x).sum(), kn.tensor([1.0, 1.0]))
    out = traced(kn.tensor([1.0, 2.0]))
    assert out.item() == 8.0
    out.backward()
    np.testing.assert_array_equal(w.grad.numpy(), [1.0, 2.0])


def test_captured_parameter_updated_in_place_inside_as_eagerly():
    # a Parameter is a Variable of the trace (kiln/nn/parameter.py), not a lifted input: an
    # in-place update inside the compiled step is the program's update on every call
    def run(compiled):
        p = kn.nn.Parameter(kn.tensor([1.0, -1.0]))

        def step(x):
            loss = (p * x).sum()
            loss.backward()
            with kn.no_grad():
                p.sub_(0.1 * p.grad)
                p.grad = None
            return loss

        f = kn.compile(step) if compiled else step
        return [f(kn.tensor([2.0, 3.0])).item() for _ in range(3)], p.tolist()

    assert run(True) == run(False)


def test_a_captured_tensor_passed_as_an_argument_too_is_one_input():
    w = kn.tensor([1.0, 2.0], requires_grad=True)

    def f(x):  # x is w: eager code sees one tensor, whose gradient sums both uses
        return kn.autograd.grad((w * x).sum(), [x])

    want = f(w)[0].tolist()
    assert kn.compile(f)(w)[0].tolist() == want == [2.0, 4.0]
