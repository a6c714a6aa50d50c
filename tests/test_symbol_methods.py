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
        for name in ("grad", "retains_grad"):
            with pytest.raises(SymbolAttributeError, match="has no autograd tape"):
                getattr(y, name)
        # as torch.compile: known from x (which needs none), a leaf without a grad_fn
        assert y.requires_grad is False and y.is_leaf is True and y.grad_fn is None
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


def test_legacy_new_and_resize_as_torchs():
    import warnings

    got = {}
    for L in (torch, kn):
        x = L.arange(4, dtype=L.float64)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            r = x.resize(2, 2)
            ra = x.resize_as(L.ones(2, 2))
        got[L] = (
            tuple(x.new(2, 3).shape), str(x.new(2, 3).dtype).split(".")[-1], tuple(x.new().shape),
            x.new([1.5, 2]).tolist(), tuple(x.new((2, 3)).shape),
            tuple(x.new(L.Size([2, 3])).shape), L.tensor([1, 2, 3]).new([1.7]).tolist(),
            x.new(x).data_ptr() == x.data_ptr(), r.tolist(), r.data_ptr() == x.data_ptr(),
            tuple(ra.shape), sorted({str(w.message) for w in caught}),
        )  # fmt: skip
        with pytest.raises(TypeError):
            x.new(L.tensor([1, 2]))  # another dtype
        with pytest.raises(RuntimeError, match="preserving the number of elements"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # (deprecated, as the warning above says)
                x.resize(5)
    assert got[kn] == got[torch]
    with kn.Graph().as_default():  # graph values: the same methods
        p = kn.placeholder(kn.float32, (4,), name="p")
        with pytest.warns(UserWarning, match="non-inplace resize is deprecated"):
            r = p.resize(2, 2)
        f = kn.function([p], [r, p.new([1, 2]), p.new(3)])
        out = f(np.arange(4, dtype=np.float32))
    assert out[0].tolist() == [[0, 1], [2, 3]] and out[1].dtype == np.float32
    assert out[2].shape == (3,)
