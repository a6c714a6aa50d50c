"""Which graph a module call builds in when its arguments hold no Symbol: the one being traced
or built around it. A `kn.compile`d training step that reads its batch from a closure (no
tensor argument) ran its first step while tracing and then did nothing on later calls: the
module saw only eager tensors and used its Parameters eagerly, so nothing was recorded.
Expected values: the same steps run eagerly (and in torch 2.13 where it is installed).
"""

import numpy as np
import pytest

import kiln as kn

W0 = np.array([[0.5, -0.25, 0.75], [0.125, 1.0, -0.5]], np.float32)
B0 = np.array([0.1, -0.2], np.float32)
X = np.array([[1.0, 2.0, 3.0], [-1.0, 0.5, 2.0], [0.0, 1.0, -1.0], [2.0, -2.0, 1.0]], np.float32)


def _linear(mod):
    lin = mod.nn.Linear(3, 2)
    with mod.no_grad():
        lin.weight.copy_(mod.tensor(W0))
        lin.bias.copy_(mod.tensor(B0))
    return lin


def _run(mode, steps=3):
    """The weights after each of `steps` SGD steps with momentum on a closure's batch."""
    lin = _linear(kn)
    opt = kn.optim.SGD(lin.parameters(), lr=0.1, momentum=0.9)
    x = kn.tensor(X)

    def step(*unused):
        opt.zero_grad()
        loss = lin(x).pow(2).sum()
        loss.backward()
        opt.step()

    fn = step if mode == "eager" else kn.compile(step)
    args = (kn.zeros(1),) if mode == "unused argument" else ()
    seen = []
    for _ in range(steps):
        fn(*args)
        seen.append((lin.weight.detach().numpy().copy(), lin.bias.detach().numpy().copy()))
    return seen


@pytest.mark.parametrize("mode", ["no argument", "unused argument"])
def test_compiled_step_reading_its_batch_from_a_closure_steps_every_call(mode):
    want = _run("eager")
    got = _run(mode)
    assert not np.array_equal(want[1][0], want[2][0]), "the steps change the weights"
    for (w, b), (w_want, b_want) in zip(got, want):
        np.testing.assert_allclose(w, w_want, rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(b, b_want, rtol=1e-6, atol=1e-7)


def test_eager_steps_match_torch():
    torch = pytest.importorskip("torch")
    lin = _linear(torch)
    opt = torch.optim.SGD(lin.parameters(), lr=0.1, momentum=0.9)
    x = torch.tensor(X)
    for w_kiln, _ in _run("eager"):
        opt.zero_grad()
        lin(x).pow(2).sum().backward()
        opt.step()
        np.testing.assert_allclose(lin.weight.detach().numpy(), w_kiln, rtol=1e-6, atol=1e-7)


def test_graph_mode_module_call_with_a_tensor_before_the_symbol():
    """`m(tensor, symbol)` builds in the symbol's graph whatever the arguments' order (the
    first argument, an eager Tensor, made it an eager call: the Parameter then met a Symbol
    and the call was refused)."""

    class Scale(kn.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = kn.nn.Parameter(kn.ones(3))

        def forward(self, a, b):
            return a * self.w + b

    m = Scale()
    with kn.Graph().as_default() as g:
        x = kn.placeholder(kn.float32, (3,), name="x")
        loss = kn.sum(m(kn.tensor([1.0, 2.0, 3.0]), x))
        train = kn.optim.SGD(m.parameters(), lr=0.1).minimize(loss)
        with kn.Session(graph=g) as sess:
            losses = [sess.run([loss, train], {x: np.zeros(3, np.float32)})[0] for _ in range(2)]
    # by hand: loss = sum(a * w), dloss/dw = a = [1, 2, 3]; w = 1 - 0.1 * a, then again
    np.testing.assert_allclose(losses, [6.0, 1 * 0.9 + 2 * 0.8 + 3 * 0.7], rtol=1e-6)
    np.testing.assert_allclose(m.w.detach().numpy(), [0.8, 0.6, 0.4], rtol=1e-6)
