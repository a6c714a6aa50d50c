"""kn.autograd.grad inside kn.compile differentiates the traced values (it raised "element 0
of tensors is a Symbol, not a Tensor"). Expected values: the same code run eagerly by kiln,
which tests/test_autograd.py holds to PyTorch, and torch 2.13 where it is installed."""

import numpy as np
import pytest

import kiln as kn
from kiln.errors import AutogradError


def _step(lib, mod, x):
    y = (mod(x) ** 2).sum()
    (gx,) = lib.autograd.grad(y, x, create_graph=True)
    gw, gb = lib.autograd.grad(y, [mod.weight, mod.bias], retain_graph=True)
    return gx * 2, gw, gb


def _model():
    kn.manual_seed(0)
    return kn.nn.Linear(3, 1)


X = np.arange(6, dtype=np.float32).reshape(2, 3) / 4


def test_autograd_grad_under_compile_matches_eager():
    m = _model()
    compiled = kn.compile(lambda x: _step(kn, m, x))(kn.tensor(X, requires_grad=True))
    eager = _step(kn, m, kn.tensor(X, requires_grad=True))
    for c, e in zip(compiled, eager):
        np.testing.assert_allclose(c.detach().numpy(), e.detach().numpy(), rtol=1e-6)
        assert c.requires_grad == e.requires_grad  # create_graph=True: only the first
    assert [t.requires_grad for t in compiled] == [True, False, False]


def test_autograd_grad_under_compile_matches_torch():
    torch = pytest.importorskip("torch")
    m = _model()
    tm = torch.nn.Linear(3, 1)
    with torch.no_grad():
        tm.weight.copy_(torch.tensor(m.weight.detach().numpy()))
        tm.bias.copy_(torch.tensor(m.bias.detach().numpy()))
    compiled = kn.compile(lambda x: _step(kn, m, x))(kn.tensor(X, requires_grad=True))
    expected = _step(torch, tm, torch.tensor(X, requires_grad=True))
    for c, e in zip(compiled, expected):
        np.testing.assert_allclose(c.detach().numpy(), e.detach().numpy(), rtol=1e-5)


def test_unused_input_under_compile():
    @kn.compile
    def f(x, z, allow):
        (g,) = kn.autograd.grad((x * x).sum(), z, allow_unused=allow)
        return g

    x, z = kn.ones(2, requires_grad=True), kn.ones(2, requires_grad=True)
    assert f(x, z, True) is None  # PyTorch: None for an unused input with allow_unused
    with pytest.raises(AutogradError, match="not have been used in the graph"):
        f(x, z, False)
