"""kn.compile honours no_grad inside the compiled function: what it computes there carries no
gradient, as in eager code (and PyTorch). The expected gradients are computed by hand and
checked against torch where it is installed."""

import numpy as np
import pytest

import kiln as kn


def _no_grad_square(x):
    with kn.no_grad():
        y = x * 3
    return (x * y).sum()


def _grad_disabled_exp(x):
    with kn.set_grad_enabled(False):
        y = x.exp()
    return (y * x).sum()


@pytest.mark.parametrize(
    "fn, expected",
    [
        # d/dx sum(x * stop(3x)) = 3x: [3, 6] (not 6x, the gradient through y too)
        (_no_grad_square, lambda x: 3 * x),
        # d/dx sum(stop(exp x) * x) = exp(x)
        (_grad_disabled_exp, np.exp),
    ],
)
def test_compiled_no_grad_block_carries_no_gradient(fn, expected):
    # regression: the trace ignored grad mode, so the gradient flowed through y
    value = np.array([1.0, 2.0], np.float32)
    eager_x = kn.tensor(value, requires_grad=True)
    fn(eager_x).backward()
    compiled_x = kn.tensor(value, requires_grad=True)
    kn.compile(fn)(compiled_x).backward()
    np.testing.assert_allclose(eager_x.grad.numpy(), expected(value), rtol=1e-6)
    np.testing.assert_allclose(compiled_x.grad.numpy(), expected(value), rtol=1e-6)


def test_compiled_no_grad_block_matches_torch():
    torch = pytest.importorskip("torch")
    value = np.array([0.5, -1.0, 2.0], np.float32)

    def both(x, lib):
        with lib.no_grad():
            scale = (x * x).sum()
        return (x.sin() * scale).sum()

    tx = torch.tensor(value, requires_grad=True)
    both(tx, torch).backward()
    kx = kn.tensor(value, requires_grad=True)
    out = kn.compile(lambda x: both(x, kn))(kx)
    out.backward()
    np.testing.assert_allclose(out.item(), both(tx, torch).item(), rtol=1e-6)
    np.testing.assert_allclose(kx.grad.numpy(), tx.grad.numpy(), rtol=1e-6)


def test_compiled_no_grad_block_keeps_in_place_updates():
    # an optimizer-style update under no_grad inside a compiled step still changes the argument
    def step(w, g):
        with kn.no_grad():
            w.sub_(g * 0.5)
        return (w * w).sum()

    w, g = kn.tensor([1.0, 2.0]), kn.tensor([2.0, 2.0])
    out = kn.compile(step)(w, g)
    np.testing.assert_allclose(w.numpy(), [0.0, 1.0])  # 1 - 1, 2 - 1
    assert out.item() == 1.0


def test_enable_grad_inside_a_call_under_no_grad_records_gradients():
    # regression: the trace under no_grad planned no gradient, so the result did not require
    # grad (torch: it does, and backward gives d/dx sum(x * x) = 2x = [2, 4])
    def f(x):
        with kn.enable_grad():
            return (x * x).sum()

    x = kn.tensor([1.0, 2.0], requires_grad=True)
    with kn.no_grad():
        eager = f(x)
        out = kn.compile(f)(x)
    assert eager.requires_grad and out.requires_grad
    out.backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0])


def test_calls_under_no_grad_still_record_nothing():
    lin = kn.nn.Linear(2, 2)
    compiled = kn.compile(lambda x: lin(x).sum())
    x = kn.ones(1, 2, requires_grad=True)
    with kn.no_grad():
        out = compiled(x)
    assert not out.requires_grad and out.grad_fn is None
    assert compiled(x).requires_grad  # and with grad on, as before
