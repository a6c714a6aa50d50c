"""Differences found by porting more PyTorch example programs by renaming `torch` to `kn`
(MNIST with Adadelta, the VAE, DCGAN, the word and translation transformers, REINFORCE,
a siamese network, seq2seq with attention, a ResNet, text classification with EmbeddingBag,
super-resolution and fast neural style). Each test is the smallest form of one difference,
with torch 2.13 as the oracle.
"""

import numpy as np
import pytest

import kiln as kn

LEGACY_TYPES = [
    "FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "ByteTensor", "CharTensor",
    "ShortTensor", "IntTensor", "LongTensor", "BoolTensor",
]  # fmt: skip


def legacy_noise(torch, std):
    """The older VAE example's reparameterisation: `torch.FloatTensor(std.size()).normal_()`."""
    eps = torch.FloatTensor(std.size()).normal_()
    return eps.mul(std).add_(1.0)


def test_legacy_constructor_of_a_size_makes_that_shape(torch):
    # `torch.Tensor(x.size())` is a tensor of that shape, not one holding the sizes
    for lib in (torch, kn):
        std = lib.ones(3, 4)
        assert tuple(legacy_noise(lib, std).shape) == (3, 4)
        assert tuple(lib.Tensor(std.size()).shape) == (3, 4)
        assert tuple(lib.Tensor(std.size()[:0]).shape) == ()
        assert lib.Tensor((2, 3)).tolist() == [2.0, 3.0]  # a plain tuple is data


def test_legacy_constructor_of_a_tensor_is_an_alias(torch):
    for lib in (torch, kn):
        t = lib.zeros(3)
        alias = lib.Tensor(t)
        alias.add_(1.0)
        assert t.tolist() == [1.0, 1.0, 1.0]
        w = lib.ones(2, requires_grad=True)
        assert lib.Tensor(w).requires_grad
        with pytest.raises(TypeError):
            lib.FloatTensor(lib.zeros(2, dtype=lib.int64))


@pytest.mark.parametrize("name", LEGACY_TYPES)
def test_legacy_typed_constructors(torch, name):
    t_type, k_type = getattr(torch, name), getattr(kn, name)
    for data in ([1.7, 2.5, 0.0], np.array([1.5, 2.0]), (1, 0)):
        t, k = t_type(data), k_type(data)
        assert str(k.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
        np.testing.assert_array_equal(
            k.float().numpy() if k.dtype == kn.bfloat16 else k.numpy(),
            t.float().numpy() if t.dtype == torch.bfloat16 else t.numpy(),
        )
    assert tuple(k_type(2, 3).shape) == (2, 3) and k_type(2, 3).dtype == k_type.dtype
    assert tuple(k_type().shape) == (0,)
    assert isinstance(k_type([1]), k_type) and isinstance(k_type([1]), kn.Tensor)
    assert not isinstance(kn.zeros(1, dtype=kn.complex64), k_type)
    assert k_type.__name__ == name and repr(k_type) == f"<class 'kiln.{name}'>"
    assert not k_type.is_cuda and kn.cuda.FloatTensor.is_cuda
    assert k_type.dtype == kn.zeros(1).type(k_type).dtype  # `x.type(torch.LongTensor)`
    with pytest.raises(TypeError):
        k_type(2.5)


def test_isinstance_of_legacy_types(torch):
    for lib in (torch, kn):
        assert isinstance(lib.zeros(2), lib.FloatTensor)
        assert not isinstance(lib.zeros(2), lib.LongTensor)
        assert isinstance(lib.zeros(2, dtype=lib.int64), lib.LongTensor)
        assert not isinstance(lib.zeros(2), lib.cuda.FloatTensor)
        assert not isinstance([1.0], lib.FloatTensor)
