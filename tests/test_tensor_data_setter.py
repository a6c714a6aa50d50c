"""`t.data = other` (PyTorch's Tensor.data setter): t shares other's memory, shape and dtype
and keeps its history, requires_grad and .grad, with no version change. Before, kiln's
`data` had no setter (AttributeError), so `m.weight.data = ...`, common in PyTorch code that
initialises or edits weights, did not run. Expected values: by hand, and torch 2.13 where
installed (the same program)."""

import pytest

import kiln as kn


def _program(m):
    out = []
    m.manual_seed(0)
    lin = m.nn.Linear(2, 1)
    with m.no_grad():
        lin.weight.copy_(m.tensor([[1.0, 2.0]]))
        lin.bias.zero_()
    f = m.compile(lin) if m is kn else lin
    x = m.ones(1, 2)
    out.append(f(x).tolist())
    lin.weight.data = m.tensor([[3.0, 4.0]])  # a compiled module reads the new memory
    out.append(f(x).tolist())
    lin.weight.data = lin.weight.data * 2
    out.append(f(x).tolist())
    opt = m.optim.SGD(lin.parameters(), lr=0.5)
    f(x).sum().backward()
    opt.step()
    out.append(lin.weight.tolist())
    c = m.ones(2, requires_grad=True)
    y = (c * c).sum()
    c.data = m.full((2,), 3.0)  # the value saved for the gradient is c itself
    y.backward()
    out.append(c.grad.tolist())
    return out


def test_data_assignment_as_pytorch():
    want = [[[3.0]], [[7.0]], [[14.0]], [[5.5, 7.5]], [6.0, 6.0]]  # by hand
    assert _program(kn) == want
    torch = pytest.importorskip("torch")
    assert _program(torch) == want


def test_data_assignment_shares_memory_and_keeps_old_views():
    a = kn.ones(2, requires_grad=True)
    old_view = a.detach()[:1]
    b = kn.zeros(3, dtype=kn.float64)
    version = a._version
    a.data = b
    assert a.shape == (3,) and a.dtype == kn.float64 and a.requires_grad and a.is_leaf
    assert a._version == version
    b[0] = 5.0
    assert a[0].item() == 5.0  # the same memory
    assert old_view.tolist() == [1.0]  # views of the old memory keep it


def test_data_assignment_errors_as_pytorch():
    a = kn.ones(2, requires_grad=True)
    with pytest.raises(TypeError, match="Variable data has to be a tensor, but got list"):
        a.data = [1.0]
    with pytest.raises(RuntimeError, match="must be floating point or complex dtype"):
        a.data = kn.ones(2, dtype=kn.int64)
    assert a.tolist() == [1.0, 1.0]  # unchanged
    i = kn.ones(2, dtype=kn.int64)
    i.data = kn.zeros(2, dtype=kn.int32)  # no grad: any dtype
    assert i.dtype == kn.int32
