"""`Tensor.untyped_storage()`, `Tensor.storage()` and `Tensor.set_()` against PyTorch 2.13
(the oracle): sizes, bytes, items, sharing between views, writes through a storage, set_'s
forms and refusals; graph values refuse them (they have no memory)."""

import warnings

import numpy as np
import pytest

import kiln as kn

torch = pytest.importorskip("torch")


def _pair(values, dtype="float32"):
    return torch.tensor(values, dtype=getattr(torch, dtype)), kn.tensor(values).to(
        getattr(kn, dtype)
    )


@pytest.mark.parametrize("dtype", ["float32", "int64", "float16", "uint8", "bool"])
def test_untyped_storage_is_the_bytes_of_the_memory_views_share(dtype):
    t, k = _pair([[0, 1, 2], [3, 4, 5]], dtype)
    for view in (lambda x: x, lambda x: x[1], lambda x: x.t(), lambda x: x[:, 1:]):
        ts, ks = view(t).untyped_storage(), view(k).untyped_storage()
        assert (ks.nbytes(), ks.size(), len(ks), ks.element_size()) == (
            ts.nbytes(), ts.size(), len(ts), ts.element_size()
        )  # fmt: skip
        assert ks.tolist() == ts.tolist() and ks[3] == ts[3]
        assert ks[2:6].tolist() == ts[2:6].tolist()
        assert ks.data_ptr() == k.data_ptr()  # the views' storage is the tensor's
        assert str(ks.device) == str(ts.device)


def test_typed_storage_items_and_writes_reach_every_view():
    t, k = _pair([0.0, 1.0, 2.0, 3.0, 4.0, 5.0])
    with pytest.warns(UserWarning, match="TypedStorage is deprecated"):  # as PyTorch's
        ks = k[2:].storage()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ts = t[2:].storage()
    assert (ks.size(), len(ks), ks.nbytes(), ks.element_size(), ks[0]) == (
        ts.size(), len(ts), ts.nbytes(), ts.element_size(), ts[0]
    )  # fmt: skip
    assert str(ks.dtype).split(".")[-1] == str(ts.dtype).split(".")[-1]
    assert ks.tolist() == ts.tolist() and ks.data_ptr() == k.data_ptr()
    ts[1], ks[1] = 100.0, 100.0
    np.testing.assert_array_equal(k.numpy(), t.numpy())
    assert k.untyped_storage().tolist() == t.untyped_storage().tolist()
    us_t, us_k = t.untyped_storage(), k.untyped_storage()
    us_t[0], us_k[0] = 1, 1  # a byte of element 0
    np.testing.assert_array_equal(k.numpy(), t.numpy())


@pytest.mark.parametrize(
    "form",
    [
        lambda lib, x: lib.zeros(2).set_(x),
        lambda lib, x: lib.zeros(2).set_(x.untyped_storage(), 2, (2, 2), (2, 1)),
        lambda lib, x: lib.zeros(2).set_(x.untyped_storage(), 1, (2,)),
        lambda lib, x: lib.zeros(2).set_(x.untyped_storage(), 0, (3,), (2,)),
        lambda lib, x: lib.zeros(2).set_(),
    ],
)
def test_set_views_other_memory_as_pytorchs(form):
    t, k = _pair([0.0, 1.0, 2.0, 3.0, 4.0, 5.0])
    ty, ky = form(torch, t), form(kn, k)
    assert tuple(ky.shape) == tuple(ty.shape) and ky.stride() == ty.stride()
    np.testing.assert_array_equal(ky.numpy(), ty.numpy())
    if ty.numel():  # a write through the tensor reaches the memory it was set to
        ty.fill_(7.0), ky.fill_(7.0)
        np.testing.assert_array_equal(k.numpy(), t.numpy())


def test_set_refuses_as_pytorch():
    t, k = _pair([0.0, 1.0])
    for lib, x in ((torch, t), (kn, k)):
        with pytest.raises(RuntimeError):  # a leaf that requires grad
            lib.zeros(2, requires_grad=True).set_(x)
        with pytest.raises(RuntimeError):  # another dtype
            lib.zeros(2, dtype=lib.int64).set_(x)


def test_graph_values_have_no_storage():
    def f(x):
        return x.untyped_storage()

    with pytest.raises(kn.GraphError):
        kn.compile(f)(kn.zeros(2))
