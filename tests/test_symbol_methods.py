"""Graph values (Symbols) have every attribute of the eager Tensor (kiln/frontend/
symbol_methods.py): `register_hook` works as PyTorch's hook on the value's gradient (compared
with torch 2.13), the rest raise kiln's error saying why; and the Tensor methods added beside
them (`map2_`, `is_set_to`, `const_data_ptr`, the removed `eig`/`solve`/... raising). That
no Tensor attribute is missing on Symbol is checked in tests/test_torch_api_gaps.py."""

import numpy as np
import pytest

import kiln as kn
from kiln.errors import GraphError, LayoutError, SymbolAttributeError, UsageError

torch = pytest.importorskip("torch")

X = np.array([1.0, -2.0, 0.5], np.float32)


def _torch_grad(hook_scale, remove=False):
    x = torch.tensor(X, requires_grad=True)
    y = x * 3
    h = y.register_hook(lambda g: g * hook_scale)
    seen = []
    y.register_hook(lambda g: seen.append(g.shape))  # returns None: the gradient stays
    if remove:
        h.remove()
    (y * y + y).sum().backward()  # y used twice: the hook gets the whole gradient once
    return x.grad.numpy(), seen


@pytest.mark.parametrize("remove", [False, True])
def test_register_hook_in_graph_mode_as_torchs(remove):
    want, seen = _torch_grad(10.0, remove)
    got_seen = []
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (3,), name="x")
        y = x * 3
        h = y.register_hook(lambda g: g * 10.0)
        y.register_hook(lambda g: got_seen.append(tuple(g.shape)))
        if remove:
            h.remove()
        (dx,) = kn.grad((y * y + y).sum(), [x])
        got = kn.function([x], dx)(X)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert got_seen == [tuple(s) for s in seen] == [(3,)]


def test_register_hook_under_compile_as_torchs():
    want, _ = _torch_grad(10.0)

    @kn.compile
    def f(x):
        y = x * 3
        y.register_hook(lambda g: g * 10.0)
        return (y * y + y).sum()

    for _ in range(2):  # the traced program and its reuse
        x = kn.tensor(X, requires_grad=True)
        f(x).backward()
        np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-6)


def test_register_hook_refuses_what_torch_refuses():
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (3,), name="x")
        with pytest.raises(GraphError, match="doesn't require gradient"):
            kn.cast(x, kn.int64).register_hook(lambda g: g)
        y = x * 2
        y.register_hook(lambda g: g.sum())  # a gradient of another shape
        with pytest.raises(GraphError, match=r"returned a gradient of shape \[\], expected \[3\]"):
            kn.grad(y.sum(), [x])


def test_symbol_attributes_without_a_value_say_why():
    @kn.compile
    def f(x):
        y = x * 2
        assert getattr(y, "grad", None) is None  # an AttributeError too
        for name in ("grad", "grad_fn", "is_leaf", "requires_grad", "retains_grad"):
            with pytest.raises(SymbolAttributeError, match="has no autograd tape"):
                getattr(y, name)
        with pytest.raises(GraphError, match="retain_grad: a graph value has no autograd tape"):
            y.retain_grad()
        with pytest.raises(GraphError, match="no leaf"):
            y.register_post_accumulate_grad_hook(lambda t: None)
        with pytest.raises(GraphError, match="no value or memory"):
            y.data_ptr()
        with pytest.raises(GraphError, match="Python function cannot run"):
            y.apply_(abs)
        with pytest.raises(LayoutError, match="needs a quantized tensor"):
            y.q_scale()
        with pytest.raises(UsageError, match="expected sparse coordinate tensor layout"):
            y.indices()
        with pytest.raises(GraphError, match="sparse tensors are eager"):
            y.to_sparse()
        assert y.pin_memory() is y and y.share_memory_() is y
        return y

    f(kn.tensor(X))


def test_tensor_methods_as_torchs():
    for L in (torch, kn):
        a = L.tensor([1, 2, 3])
        a.map2_(L.tensor([10, 20, 30]), L.tensor(2), lambda s, b, c: s + b * c)
        assert a.tolist() == [21, 42, 63]
        x = L.zeros(4)
        assert [x.is_set_to(x[:]), x.is_set_to(x.view(2, 2)), x.is_set_to(x.clone())] == [
            True, False, False]  # fmt: skip
        assert x.is_set_to(x) and not x[1:].is_set_to(x[:3])
        assert x.const_data_ptr() == x.data_ptr()
        for name in ("eig", "symeig"):
            with pytest.raises(RuntimeError, match="deprecated since version 1.9"):
                getattr(L.eye(2), name)()
        for name in ("solve", "lstsq"):
            with pytest.raises(RuntimeError, match="deprecated since version 1.9"):
                getattr(L.eye(2), name)(L.eye(2))
