"""kn.compile: gradient hooks registered on a parameter (`p.register_hook(fn)`) apply when
the compiled function calls backward() itself (a whole training step), as they do eagerly.
Before, the compiled step ignored them silently: a hook clamping the gradient to 1.5 left
it at 6. Expected values: the same step run eagerly (the hooks' eager semantics are PyTorch's,
tests/test_autograd.py), and by hand where stated."""

import numpy as np
import pytest

import kiln as kn
from kiln.errors import UsageError

NORMS: list = []


def _model(hook=None):
    kn.manual_seed(0)
    m = kn.nn.Linear(3, 1)
    if hook is not None:
        m.weight.register_hook(hook)
    return m


def clip_and_log(g):
    NORMS.append(g.norm().item())
    return g.clamp(-1.5, 1.5)


def step(m, x, opt):
    opt.zero_grad()
    loss = m(x).sum()
    loss.backward()
    opt.step()
    return loss


def _train(m, fn):
    opt = kn.optim.SGD(m.parameters(), lr=0.1)
    seen = []
    for k in range(3):
        fn(m, kn.ones(2, 3) * (k + 1), opt)
        seen.append((m.weight.detach().clone(), m.weight.grad.clone()))
    return seen


def test_parameter_hook_applies_inside_a_compiled_step():
    NORMS.clear()
    expected = _train(_model(clip_and_log), step)
    eager_norms = list(NORMS)
    NORMS.clear()
    compiled = kn.compile(step)
    got = _train(_model(clip_and_log), compiled)
    assert len(compiled.cache) == 1
    # by hand: the weight's gradient is 2 (k + 1) per entry, clamped to 1.5
    assert got[1][1].tolist() == [[1.5, 1.5, 1.5]]
    for (w0, g0), (w1, g1) in zip(expected, got):
        np.testing.assert_allclose(w1.numpy(), w0.numpy(), rtol=1e-6)
        np.testing.assert_allclose(g1.numpy(), g0.numpy(), rtol=1e-6)
    assert NORMS == pytest.approx(eager_norms, rel=1e-6) and len(NORMS) == 3


def test_a_hook_added_or_removed_later_retraces():
    m = _model()
    compiled = kn.compile(step)
    opt = kn.optim.SGD(m.parameters(), lr=0.0)
    compiled(m, kn.ones(2, 3), opt)
    assert m.weight.grad.tolist() == [[2.0, 2.0, 2.0]]
    handle = m.weight.register_hook(lambda g: g * 10)
    compiled(m, kn.ones(2, 3), opt)
    assert m.weight.grad.tolist() == [[20.0, 20.0, 20.0]]
    handle.remove()
    compiled(m, kn.ones(2, 3), opt)
    assert m.weight.grad.tolist() == [[2.0, 2.0, 2.0]]


def test_post_accumulate_hook_refused_and_nothing_changes():
    m = _model()
    m.weight.register_post_accumulate_grad_hook(lambda p: None)
    before = m.weight.detach().clone()
    opt = kn.optim.SGD(m.parameters(), lr=0.1)
    with pytest.raises(UsageError, match="post-accumulate-grad hook"):
        kn.compile(step)(m, kn.ones(2, 3), opt)
    assert kn.equal(m.weight.detach(), before) and m.weight.grad is None


def square_sum_backward(x):
    loss = (x * x).sum()
    loss.backward()
    return loss


W = kn.tensor([1.0, -2.0], requires_grad=True)
SEEN: list = []


def uses_captured():
    loss = (W * 3).sum()
    loss.backward()
    return loss


def test_argument_and_captured_leaf_hooks_apply_each_call():
    # by hand: d/dx sum(x^2) = 2x, times the hook's 100; each call a new tensor and hook
    compiled = kn.compile(square_sum_backward)
    for k in range(2):
        x = kn.tensor([1.0, 2.0 + k], requires_grad=True)
        x.register_hook(lambda g: g * 100)
        x.register_post_accumulate_grad_hook(lambda t: SEEN.append(t.grad.tolist()))
        compiled(x)
        assert x.grad.tolist() == [200.0, 400.0 + 200.0 * k]
    assert SEEN == [[200.0, 400.0], [200.0, 600.0]]
    handle = W.register_hook(lambda g: -g)
    kn.compile(uses_captured)()
    handle.remove()
    assert W.grad.tolist() == [-3.0, -3.0]


GRADS: list = []


def hooked_square(x, inside):
    y = x * 3
    y.register_hook(lambda g: GRADS.append(g))
    loss = (y * y).sum()
    if inside:
        loss.backward()
    return loss


def test_intermediate_hook_stores_each_call_when_backward_is_inside():
    # by hand: y = 3x, d(sum y^2)/dy = 2y = 6x
    GRADS.clear()
    f = kn.compile(hooked_square)
    for k in range(2):
        x = kn.tensor([1.0, 2.0 + k], requires_grad=True)
        f(x, True)
        assert x.grad.tolist() == [18.0, 36.0 + 18.0 * k]
    assert [g.tolist() for g in GRADS] == [[6.0, 12.0], [6.0, 18.0]]


def test_intermediate_hook_store_refused_when_backward_is_outside():
    GRADS.clear()
    x = kn.tensor([1.0, 2.0], requires_grad=True)
    loss = kn.compile(hooked_square)(x, False)
    assert GRADS == []  # built while tracing, undone
    with pytest.raises(kn.errors.AutogradError, match="gradient hook stored"):
        loss.backward()
    assert x.grad is None and GRADS == []


def test_backward_inside_through_ops_without_a_gradient_gives_zeros():
    # floor has no gradient: eagerly (and in torch 2.13) backward() leaves zeros in the .grad
    # of what it reached through floor alone, and None where it reached nothing; under
    # kn.compile the argument's .grad was None (found by the issue 11 audit)
    reached, unused = kn.nn.Linear(2, 1), kn.nn.Linear(2, 1)

    def step(x):
        y = kn.floor(reached(x)).sum() + kn.floor(x).sum()
        y.backward()
        return y

    for fn in (step, kn.compile(step)):
        for p in (*reached.parameters(), *unused.parameters()):
            p.grad = None
        x = kn.tensor([[1.5, 2.5]], requires_grad=True)
        fn(x)
        assert x.grad.tolist() == [[0.0, 0.0]]
        assert reached.weight.grad.tolist() == [[0.0, 0.0]] and unused.weight.grad is None
