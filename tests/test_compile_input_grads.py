"""backward() inside a compiled function sets the `.grad` of its arguments that are leaf
Tensors requiring grad, and adds to it on later calls, as eager PyTorch code (and
torch.compile) does; kiln left it None. Expected values: the same code run eagerly."""

import numpy as np

import kiln as kn


def _step(lin):
    def step(x):
        y = (lin(x) ** 2).sum()
        y.backward()
        return y

    return step


def test_argument_grads_as_eager():
    kn.manual_seed(0)
    lin = kn.nn.Linear(3, 2)
    data = np.arange(12, dtype=np.float32).reshape(4, 3) / 10
    x_eager = kn.tensor(data, requires_grad=True)
    x_comp = kn.tensor(data, requires_grad=True)
    compiled = kn.compile(_step(lin))
    for _ in range(2):  # the second call adds to .grad
        _step(lin)(x_eager)
        compiled(x_comp)
    kn.testing.assert_close(x_comp.grad, x_eager.grad)
    assert len(compiled.cache) == 1


def test_non_leaf_arguments_and_explicit_inputs():
    lin = kn.nn.Linear(3, 1)
    base, eager_base = kn.ones(2, 3, requires_grad=True), kn.ones(2, 3, requires_grad=True)
    kn.compile(_step(lin))(base * 2)  # not a leaf: backward goes on to base
    _step(lin)(eager_base * 2)
    kn.testing.assert_close(base.grad, eager_base.grad)

    @kn.compile
    def only_weights(x):
        y = lin(x).sum()
        y.backward(inputs=[lin.weight])
        return y

    leaf = kn.ones(2, 3, requires_grad=True)
    only_weights(leaf)
    assert leaf.grad is None and lin.weight.grad is not None
