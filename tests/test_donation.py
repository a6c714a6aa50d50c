"""A backward through a kn.compile'd call without retain_graph hands the call's residuals to
the backward program, which frees each after its last read (kiln/tracing/traced.py)."""

import gc
import weakref

import numpy as np
import pytest

import kiln as kn
from kiln.errors import SavedTensorError


def _model(depth=4, width=8):
    kn.manual_seed(0)
    layers = [kn.nn.Linear(width, width) for _ in range(depth)]

    def loss_of(x):
        h = x
        for layer in layers:
            h = kn.relu(layer(h))
        return (h * h).sum()

    params = [p for layer in layers for p in layer.parameters()]
    return kn.compile(loss_of), params


def _x(width=8):
    return kn.tensor(np.random.default_rng(0).standard_normal((5, width)).astype(np.float32))


def _grads(retain):
    fn, params = _model()
    fn(_x()).backward(retain_graph=retain)
    return [p.grad.numpy().copy() for p in params]


def test_donated_grads_equal_retained_bit_for_bit():
    # the same program runs both ways; only who holds the residuals differs
    for a, b in zip(_grads(False), _grads(True)):
        np.testing.assert_array_equal(a, b)


def test_residuals_freed_after_donating_backward():
    fn, _ = _model()
    loss = fn(_x())
    node = loss.grad_fn
    held = node.attrs["residuals"]
    assert held, "the call keeps residuals for its backward"
    refs = [weakref.ref(r) for r in held if isinstance(r, np.ndarray) and r.base is None]
    loss.backward()
    assert held == []  # handed over
    gc.collect()
    assert refs and all(r() is None for r in refs)  # and freed


def test_second_backward_after_donation_raises_pytorch_error():
    # PyTorch raises RuntimeError "Trying to backward through the graph a second time"
    fn, _ = _model()
    loss = fn(_x())
    loss.backward()
    with pytest.raises(SavedTensorError, match="second time") as e:
        loss.backward()
    assert isinstance(e.value, RuntimeError)


def test_retain_graph_keeps_residuals_and_backward_runs_twice():
    fn, params = _model()
    loss = fn(_x())
    held = loss.grad_fn.attrs["residuals"]
    n = len(held)
    loss.backward(retain_graph=True)
    assert len(held) == n
    first = [p.grad.numpy().copy() for p in params]
    loss.backward()
    for p, g in zip(params, first):  # accumulated: twice the first gradient (a formula)
        np.testing.assert_array_equal(p.grad.numpy(), 2 * g)


def test_failed_backward_changes_no_parameter():
    # a NaN cotangent under anomaly mode raises after the donated backward program ran:
    # parameters and .grad stay as they were, and the freed residuals give the "second time"
    # error rather than wrong gradients
    fn, params = _model()
    before = [p.detach().numpy().copy() for p in params]
    loss = fn(_x())
    kn.set_detect_anomaly(True)
    try:
        with pytest.raises(RuntimeError, match="nan"):
            loss.backward(kn.tensor(np.float32("nan")))
    finally:
        kn.set_detect_anomaly(False)
    for p, b in zip(params, before):
        np.testing.assert_array_equal(p.detach().numpy(), b)
        assert p.grad is None
    with pytest.raises(SavedTensorError, match="second time"):
        loss.backward()
