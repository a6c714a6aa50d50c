"""kiln.utils.data: datasets, samplers, default_collate and the DataLoader, with PyTorch's
semantics (expected values by hand, and against torch.utils.data where installed)."""

import collections
import threading

import numpy as np
import pytest

import kiln as kn
from kiln.utils.data import (
    BatchSampler,
    DataLoader,
    Dataset,
    IterableDataset,
    RandomSampler,
    SequentialSampler,
    Subset,
    TensorDataset,
    default_collate,
    random_split,
)


def _dataset(n=10):
    return TensorDataset(kn.arange(2 * n, dtype=kn.float32).reshape(n, 2), kn.arange(n))


def test_sequential_loader_batches_in_order_with_a_short_last_batch():
    loader = DataLoader(_dataset(), batch_size=4)
    batches = list(loader)
    assert len(loader) == 3 and len(batches) == 3
    assert [y.tolist() for _, y in batches] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    x0, _ = batches[0]
    assert isinstance(x0, kn.Tensor) and tuple(x0.shape) == (4, 2) and x0.dtype == kn.float32
    assert [y.tolist() for _, y in DataLoader(_dataset(), batch_size=4, drop_last=True)] == [
        [0, 1, 2, 3], [4, 5, 6, 7]]  # fmt: skip
    assert len(DataLoader(_dataset(), batch_size=4, drop_last=True)) == 2


def test_shuffle_with_a_seeded_generator_is_reproducible_and_a_permutation():
    def epoch_orders(seed, epochs=2):
        loader = DataLoader(_dataset(), batch_size=3, shuffle=True,
                            generator=kn.Generator().manual_seed(seed))  # fmt: skip
        return [[i for _, y in loader for i in y.tolist()] for _ in range(epochs)]

    a, b = epoch_orders(0), epoch_orders(0)
    assert a == b
    assert a[0] != a[1]  # a new order each epoch
    assert sorted(a[0]) == list(range(10)) and a[0] != list(range(10))
    assert epoch_orders(1) != a


def test_shuffle_without_a_generator_follows_kn_manual_seed():
    def order():
        kn.manual_seed(3)
        return [
            i for _, y in DataLoader(_dataset(), batch_size=5, shuffle=True) for i in y.tolist()
        ]

    assert order() == order()


def test_generator_state_resumes_the_shuffle():
    g = kn.Generator().manual_seed(5)
    loader = DataLoader(_dataset(), batch_size=10, shuffle=True, generator=g)
    list(loader)
    state = g.get_state()
    want = [y.tolist() for _, y in loader]
    g2 = kn.Generator().set_state(state)
    again = DataLoader(_dataset(), batch_size=10, shuffle=True, generator=g2)
    assert [y.tolist() for _, y in again] == want


def test_sampler_and_batch_sampler_options():
    ds = _dataset()
    picked = DataLoader(ds, batch_size=2, sampler=[9, 0, 5])
    assert [y.tolist() for _, y in picked] == [[9, 0], [5]]
    batches = DataLoader(ds, batch_sampler=[[1, 2, 3], [7]])
    assert [y.tolist() for _, y in batches] == [[1, 2, 3], [7]]
    with pytest.raises(ValueError, match="mutually exclusive with shuffle"):
        DataLoader(ds, sampler=[1], shuffle=True)
    with pytest.raises(ValueError, match="mutually exclusive with batch_size"):
        DataLoader(ds, batch_sampler=[[1]], batch_size=2)
    with pytest.raises(ValueError, match="num_workers option should be non-negative"):
        DataLoader(ds, num_workers=-1)
    with pytest.raises(ValueError, match="batch_size should be a positive integer"):
        BatchSampler(SequentialSampler(ds), 0, False)


def test_batch_size_none_yields_samples_converted():
    items = list(DataLoader([np.zeros(2), np.ones(2)], batch_size=None))
    assert all(isinstance(t, kn.Tensor) for t in items) and items[1].tolist() == [1.0, 1.0]


def test_default_collate_follows_pytorchs_rules():
    Point = collections.namedtuple("Point", "x y")
    batch = default_collate([
        {"img": np.zeros((2, 2), np.float32), "label": 1, "w": 0.5, "name": "a", "p": Point(1, 2)},
        {"img": np.ones((2, 2), np.float32), "label": 2, "w": 1.5, "name": "b", "p": Point(3, 4)},
    ])  # fmt: skip
    assert tuple(batch["img"].shape) == (2, 2, 2) and batch["img"].dtype == kn.float32
    assert batch["label"].dtype == kn.int64 and batch["label"].tolist() == [1, 2]
    assert batch["w"].dtype == kn.float64 and batch["name"] == ["a", "b"]
    assert isinstance(batch["p"], Point) and batch["p"].y.tolist() == [2, 4]
    assert isinstance(default_collate([(1, 2), (3, 4)]), list)  # tuples collate to a list
    assert default_collate([True, False]).dtype == kn.bool_
    with pytest.raises(RuntimeError, match="equal size"):
        default_collate([[1, 2], [3]])
    with pytest.raises(TypeError, match="found object"):
        default_collate([object(), object()])


def test_random_split_lengths_and_fractions():
    g = kn.Generator().manual_seed(0)
    parts = random_split(range(10), [3, 7], generator=g)
    assert [len(p) for p in parts] == [3, 7]
    assert sorted(i for p in parts for i in p) == list(range(10))
    # fractions: floors, then the remainder one each from the first (PyTorch's rule)
    assert [len(p) for p in random_split(range(10), [0.33, 0.33, 0.34])] == [4, 3, 3]
    with pytest.raises(ValueError, match="Sum of input lengths"):
        random_split(range(10), [3, 3])
    a = random_split(range(10), [5, 5], generator=kn.Generator().manual_seed(1))
    b = random_split(range(10), [5, 5], generator=kn.Generator().manual_seed(1))
    assert [list(p) for p in a] == [list(p) for p in b]


def test_subset_and_concat():
    ds = _dataset()
    sub = Subset(ds, [8, 2])
    assert len(sub) == 2 and sub[0][1].item() == 8
    both = ds + sub
    assert len(both) == 12 and both[11][1].item() == 2 and both[-1][1].item() == 2


def test_random_sampler_with_replacement():
    s = RandomSampler(range(3), replacement=True, num_samples=70,
                      generator=kn.Generator().manual_seed(0))  # fmt: skip
    draws = list(s)
    assert len(draws) == 70 and set(draws) == {0, 1, 2}
    with pytest.raises(ValueError, match="num_samples should be a positive integer"):
        RandomSampler(range(3), num_samples=0)


def test_worker_threads_give_the_same_batches_in_order():
    seen = set()

    class Slow(Dataset):
        def __len__(self):
            return 23

        def __getitem__(self, i):
            seen.add(threading.current_thread().name)
            return np.full(3, i, np.float32), i

    want = [y.tolist() for _, y in DataLoader(Slow(), batch_size=4)]
    loader = DataLoader(Slow(), batch_size=4, num_workers=3, worker_init_fn=lambda i: None)
    assert [y.tolist() for _, y in loader] == want
    assert any(name.startswith("kiln-dataloader") for name in seen)


def test_iterable_dataset_batches_its_stream():
    class Stream(IterableDataset):
        def __iter__(self):
            return iter(range(7))

    assert [b.tolist() for b in DataLoader(Stream(), batch_size=3)] == [[0, 1, 2], [3, 4, 5], [6]]
    with pytest.raises(ValueError, match="IterableDataset"):
        DataLoader(Stream(), shuffle=True)


def test_collate_and_batches_match_torch():
    torch = pytest.importorskip("torch")
    from torch.utils import data as td

    x = np.arange(20, dtype=np.float32).reshape(10, 2)
    y = np.arange(10)
    ours = DataLoader(TensorDataset(kn.tensor(x), kn.tensor(y)), batch_size=3, drop_last=False)
    theirs = td.DataLoader(td.TensorDataset(torch.tensor(x), torch.tensor(y)), batch_size=3)
    for (a, b), (c, d) in zip(ours, theirs, strict=True):
        np.testing.assert_array_equal(a.numpy(), c.numpy())
        assert a.dtype == kn.float32 and b.dtype == kn.int64 and d.dtype == torch.int64
    sample = [{"a": 1.5, "b": (1, np.float32(2))}, {"a": 2.5, "b": (3, np.float32(4))}]
    ours, theirs = default_collate(sample), td.default_collate(sample)
    assert str(ours["a"].dtype).split(".")[-1] == str(theirs["a"].dtype).split(".")[-1]
    assert type(ours["b"]) is type(theirs["b"])
    assert str(ours["b"][1].dtype).split(".")[-1] == str(theirs["b"][1].dtype).split(".")[-1]
    for fracs in ([0.33, 0.33, 0.34], [0.5, 0.5], [0.1, 0.2, 0.7]):
        want = [len(p) for p in td.random_split(range(11), fracs)]
        assert [len(p) for p in random_split(range(11), fracs)] == want
