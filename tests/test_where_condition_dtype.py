"""`where(condition, input, other)` takes a bool condition only, as PyTorch's: torch 2.13
raises "where expected condition to be a boolean tensor, but got a tensor with dtype Float"
(RuntimeError). kiln took NumPy's rule (any truth value), so `(x > 0.5).float().where(a, b)`,
or a mask of 0/1 floats, silently chose by truthiness where ported code fails in torch. The
op table's former "float-cond" row pinned NumPy's rule and is gone."""

import numpy as np
import pytest

import kiln as kn
from kiln.errors import DTypeMismatchError


@pytest.mark.parametrize("dtype", [kn.float32, kn.int64, kn.uint8])
def test_non_bool_condition_raises_eagerly_compiled_and_in_graph_mode(dtype):
    cond = kn.tensor([1, 0, 2]).to(dtype)
    a, b = kn.tensor([1.0, 2.0, 3.0]), kn.tensor([5.0, 6.0, 7.0])
    with pytest.raises(DTypeMismatchError, match="boolean tensor"):
        kn.where(cond, a, b)
    with pytest.raises(RuntimeError, match="boolean tensor"):  # the type torch raises
        a.where(cond, b)
    with pytest.raises(DTypeMismatchError, match="boolean tensor"):
        kn.compile(lambda c, x, y: kn.where(c, x, y))(cond, a, b)
    with kn.Graph().as_default():
        c = kn.placeholder(dtype, (3,))
        with pytest.raises(DTypeMismatchError, match="boolean tensor"):
            kn.where(c, a.numpy(), b.numpy())


def test_bool_condition_and_condition_alone_unchanged():
    a = kn.tensor([1.0, 0.0, 2.0])
    assert kn.where(a > 0, a, 5.0).tolist() == [1.0, 5.0, 2.0]
    assert [t.tolist() for t in kn.where(a)] == [[0, 2]]  # nonzero: any dtype, as torch
    np.testing.assert_array_equal(kn.where(np.array([True, False]), 1.0, 2.0), [1.0, 2.0])


def test_against_torch():
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError, match="boolean tensor"):
        torch.where(torch.tensor([1.0, 0.0]), torch.ones(2), torch.zeros(2))
