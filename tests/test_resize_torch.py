"""`Tensor.resize_` as PyTorch 2.13's (the oracle): the elements from the tensor's storage
offset on, contiguous, in the memory it views; its storage reallocated only where they do not
fit, so shrinking then growing back keeps the values, a view resized stays a view of its base,
and the storage keeps its bytes after a shrink."""

import numpy as np
import pytest

import kiln as kn

torch = pytest.importorskip("torch")

CASES = {
    "view of another shape": lambda L: L.arange(6.0).reshape(2, 3).resize_(3, 2),
    "shrink": lambda L: L.arange(6.0).resize_(2, 2),
    "shrink then grow back": lambda L: L.arange(6.0).resize_(2).resize_(6),
    "grow": lambda L: L.arange(4.0).resize_(8)[:4],
    "0-d": lambda L: L.tensor(3.0).resize_(1, 1, 1),
    "empty": lambda L: L.arange(3.0).resize_(0),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_resize_values_and_layout_as_pytorch(case):
    want, got = CASES[case](torch), CASES[case](kn)
    assert tuple(got.shape) == tuple(want.shape) and got.stride() == want.stride()
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_a_resized_view_still_views_its_base_and_the_storage_keeps_its_bytes():
    for L in (torch, kn):
        x = L.arange(6.0)
        v = x[1:4].resize_(5)
        v.fill_(0.0)  # the view's memory is its base's
        assert x.tolist() == [0.0] * 6 and v.tolist() == [0.0] * 5
        y = L.arange(6.0)
        assert y.resize_(2).untyped_storage().nbytes() == 24


def test_resize_refuses_a_tensor_that_requires_grad_as_pytorch():
    for L in (torch, kn):
        with pytest.raises(RuntimeError):
            L.ones(3, requires_grad=True).resize_(2)
