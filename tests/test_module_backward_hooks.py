"""Module backward hooks (`register_full_backward_hook`, `register_full_backward_pre_hook`)
as PyTorch 2.13's: what the hooks see and what replacing the gradients does, compared with
torch on the same module and data; in graph mode and under kn.compile the hooks' returned
gradients are compiled (values by hand: d sum(10 * W x) / dx = 10 * W, halved by the hook)."""

import numpy as np
import pytest

import kiln as kn

torch = pytest.importorskip("torch")


def _linear(m):
    lin = m.nn.Linear(2, 1)
    with m.no_grad():
        lin.weight.copy_(m.tensor([[1.0, 2.0]]))
        lin.bias.zero_()
    return lin


def _as_lists(values):
    return [None if v is None else np.asarray(v.detach().numpy()).tolist() for v in values]


def _run(m, input_grad=True):
    lin = _linear(m)
    log = []

    def pre(mod, go):
        log.append(("pre", _as_lists(go)))
        return (go[0] * 10,)

    def full(mod, gi, go):
        log.append(("full", _as_lists(gi), _as_lists(go)))
        return None if gi[0] is None else (gi[0] * 0.5,)

    lin.register_full_backward_pre_hook(pre)
    handle = lin.register_full_backward_hook(full)
    x = m.ones(3, 2, requires_grad=input_grad)
    lin(x).sum().backward()
    grads = (_as_lists([x.grad]) if input_grad else None, _as_lists([lin.weight.grad]))
    handle.remove()
    lin(m.ones(1, 2, requires_grad=True)).sum().backward()  # the pre-hook alone now
    return log, grads


@pytest.mark.filterwarnings("ignore:Full backward hook")
@pytest.mark.parametrize("input_grad", [True, False])
def test_linear_hooks_as_torch(input_grad):
    assert _run(kn, input_grad) == _run(torch, input_grad)


def test_hooks_see_one_gradient_per_positional_argument():
    def run(m):
        class Two(m.nn.Module):
            def forward(self, a, k, b):
                return a * b * k, a + b

        log = []
        two = Two()
        two.register_full_backward_hook(lambda mod, gi, go: log.append(_as_lists(gi)))
        a = m.ones(2, requires_grad=True)
        b = m.full((2,), 3.0, requires_grad=True)
        o1, o2 = two(a, 5, b)
        (o1.sum() * 2 + o2.sum()).backward()
        return log, _as_lists([a.grad, b.grad])

    assert run(kn) == run(torch)


def test_hooks_compile_in_graph_mode():
    lin = _linear(kn)
    lin.register_full_backward_pre_hook(lambda mod, go: (go[0] * 10,))
    lin.register_full_backward_hook(lambda mod, gi, go: (gi[0] * 0.5,))
    want = [[5.0, 10.0]] * 3  # 10 * W, halved
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (3, 2))
        (g,) = kn.grad(lin(x).sum(), [x])
        f = kn.function([x], [g])
    assert f(np.ones((3, 2), np.float32))[0].tolist() == want


def test_hooks_under_compile():
    lin = _linear(kn)
    lin.register_full_backward_pre_hook(lambda mod, go: (go[0] * 10,))
    lin.register_full_backward_hook(lambda mod, gi, go: (gi[0] * 0.5,))

    @kn.compile
    def step(x):
        y = lin(x).sum()
        y.backward()
        return y

    x = kn.ones(3, 2, requires_grad=True)
    step(x)
    assert x.grad.tolist() == [[5.0, 10.0]] * 3  # 10 * W, halved
    assert lin.weight.grad.tolist() == [[30.0, 30.0]]  # 10 * the sum of x's rows
