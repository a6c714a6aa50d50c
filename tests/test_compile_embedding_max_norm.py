"""kn.compile of an Embedding with `max_norm` on a module parameter: the renorm is an update
of the program (PyTorch renorms the rows in place, under no_grad, before the lookup), and the
weight's gradient flows on as eagerly. Before, a parameter with any update in the program
got no gradient, so `backward()` raised "does not require grad". Expected values: the eager
run (and torch 2.13 where installed)."""

import numpy as np
import pytest

import kiln as kn

IDS = [[0, 2], [4, 2]]


def _train(step_fn, module):
    opt = kn.optim.SGD(module.parameters(), lr=0.5)
    seen = []
    for _ in range(3):
        opt.zero_grad()
        loss = step_fn(kn.tensor(IDS))
        loss.backward()
        seen.append((loss.item(), module.weight.grad.clone(), module.weight.detach().clone()))
        opt.step()
    return seen


def _embedding():
    kn.manual_seed(0)
    return kn.nn.Embedding(5, 3, max_norm=1.0)


def test_compiled_max_norm_embedding_trains_as_eager():
    eager = _embedding()
    compiled = _embedding()
    want = _train(lambda i: eager(i).pow(2).sum(), eager)
    got = _train(kn.compile(lambda i: compiled(i).pow(2).sum()), compiled)
    for (l0, g0, w0), (l1, g1, w1) in zip(want, got):
        assert l1 == pytest.approx(l0, rel=1e-6)
        np.testing.assert_allclose(g1.numpy(), g0.numpy(), rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(w1.numpy(), w0.numpy(), rtol=1e-6, atol=1e-7)


def test_against_torch():
    torch = pytest.importorskip("torch")
    k = _embedding()
    t = torch.nn.Embedding(5, 3, max_norm=1.0)
    with torch.no_grad():
        t.weight.copy_(torch.tensor(k.weight.detach().numpy()))
    kn.compile(lambda i: k(i).pow(2).sum())(kn.tensor(IDS)).backward()
    t(torch.tensor(IDS)).pow(2).sum().backward()
    np.testing.assert_allclose(k.weight.detach().numpy(), t.weight.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(k.weight.grad.numpy(), t.weight.grad.numpy(), rtol=1e-5)
