"""kiln's Embedding / EmbeddingBag against PyTorch's: `from_pretrained` (frozen by default, the
padding row kept as given) and a negative `padding_idx` of EmbeddingBag (PyTorch counts it
from the front). Expected values come from torch run on the same tables."""

import numpy as np
import pytest

import kiln as kn

torch = pytest.importorskip("torch")

TABLE = np.arange(12, dtype=np.float32).reshape(4, 3) / 7


@pytest.mark.parametrize("freeze", [True, False])
@pytest.mark.parametrize("padding_idx", [None, 1, -1])
def test_embedding_from_pretrained_like_torch(freeze, padding_idx):
    t = torch.nn.Embedding.from_pretrained(torch.tensor(TABLE), freeze=freeze,
                                           padding_idx=padding_idx)  # fmt: skip
    k = kn.nn.Embedding.from_pretrained(kn.tensor(TABLE), freeze=freeze,
                                        padding_idx=padding_idx)  # fmt: skip
    assert repr(k) == repr(t)
    assert k.weight.requires_grad == t.weight.requires_grad == (not freeze)
    ids = np.array([[0, 1, 3], [1, 1, 2]])
    np.testing.assert_array_equal(k(kn.tensor(ids)).detach().numpy(),
                                  t(torch.tensor(ids)).detach().numpy())  # fmt: skip
    if not freeze:
        t(torch.tensor(ids)).pow(2).sum().backward()
        k(kn.tensor(ids)).pow(2).sum().backward()
        np.testing.assert_allclose(k.weight.grad.numpy(), t.weight.grad.numpy(), rtol=1e-6)
    # a NumPy table works too, and the module holds a copy
    table = TABLE.copy()
    e = kn.nn.Embedding.from_pretrained(table)
    table[0] = 100
    assert e.weight[0].tolist() == TABLE[0].tolist()


def test_embedding_from_pretrained_rejects_non_matrix():
    with pytest.raises(AssertionError, match="2-dimensional"):  # torch asserts it
        kn.nn.Embedding.from_pretrained(kn.ones(3))


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_from_pretrained_like_torch(mode):
    t = torch.nn.EmbeddingBag.from_pretrained(torch.tensor(TABLE), mode=mode, freeze=False)
    k = kn.nn.EmbeddingBag.from_pretrained(kn.tensor(TABLE), mode=mode, freeze=False)
    assert k.weight.requires_grad and repr(k) == repr(t)
    ids, offsets = np.array([0, 2, 3, 1, 1]), np.array([0, 2])
    np.testing.assert_allclose(k(kn.tensor(ids), kn.tensor(offsets)).detach().numpy(),
                               t(torch.tensor(ids), torch.tensor(offsets)).detach().numpy(),
                               rtol=1e-6)  # fmt: skip
    frozen = kn.nn.EmbeddingBag.from_pretrained(kn.tensor(TABLE))
    assert not frozen.weight.requires_grad


def test_embedding_bag_negative_padding_idx_counts_from_front():
    t = torch.nn.EmbeddingBag(5, 2, padding_idx=-2)
    k = kn.nn.EmbeddingBag(5, 2, padding_idx=-2)
    assert k.padding_idx == t.padding_idx == 3
    assert repr(k) == repr(t)
    assert k.weight[3].tolist() == [0.0, 0.0]
    k.load_state_dict({"weight": t.weight.detach().numpy()})
    ids = np.array([[3, 1, 3], [0, 3, 4]])
    np.testing.assert_allclose(k(kn.tensor(ids)).detach().numpy(),
                               t(torch.tensor(ids)).detach().numpy(), rtol=1e-6)  # fmt: skip
    with pytest.raises(AssertionError, match="padding_idx"):  # torch asserts it
        kn.nn.EmbeddingBag(5, 2, padding_idx=5)
