"""Datasets: the map-style base, TensorDataset, Subset, ConcatDataset, IterableDataset, and
random_split (PyTorch's)."""

from __future__ import annotations

import bisect
import math
import warnings
from itertools import accumulate

from ...errors import ArgumentError, ArgumentTypeError
from ...generator import Generator, seeded_generator

__all__ = [
    "ChainDataset",
    "ConcatDataset",
    "Dataset",
    "IterableDataset",
    "StackDataset",
    "Subset",
    "TensorDataset",
    "random_split",
]


class Dataset:
    """A map-style dataset: `__getitem__(index)` and `__len__`; `a + b` concatenates."""

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} must define __getitem__")

    def __add__(self, other: Dataset) -> ConcatDataset:
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A dataset that is a stream: `__iter__` yields the samples (no indices, no sampler)."""

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} must define __iter__")


def _length(t) -> int:
    shape = getattr(t, "shape", None)
    return int(shape[0]) if shape is not None and len(shape) else len(t)


class TensorDataset(Dataset):
    """Samples are the rows of `tensors` (Tensors or arrays of equal first dimension): item
    `i` is `(t[i] for t in tensors)` as a tuple.

    >>> import kiln as kn
    >>> ds = kn.utils.data.TensorDataset(kn.ones(3, 2), kn.tensor([7, 8, 9]))
    >>> len(ds), ds[1]
    (3, (tensor([1., 1.]), tensor(8)))
    """

    def __init__(self, *tensors):
        if not tensors:
            raise ArgumentError("TensorDataset needs at least one tensor")
        sizes = [_length(t) for t in tensors]
        if any(s != sizes[0] for s in sizes):
            raise ArgumentError(f"Size mismatch between tensors: first dimensions {sizes}")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return _length(self.tensors[0])


class Subset(Dataset):
    """The items of `dataset` at `indices`, in that order.

    >>> import kiln as kn
    >>> sub = kn.utils.data.Subset(list("abcde"), [4, 0])
    >>> len(sub), sub[0], sub[[0, 1]]
    (2, 'e', ['e', 'a'])
    """

    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.__getitems__(idx)
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices: list) -> list:
        picked = [self.indices[i] for i in indices]
        if callable(getattr(self.dataset, "__getitems__", None)):
            return self.dataset.__getitems__(picked)
        return [self.dataset[i] for i in picked]

    def __len__(self) -> int:
        return len(self.indices)


class ConcatDataset(Dataset):
    """The datasets one after another."""

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise ArgumentError("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise ArgumentTypeError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = list(accumulate(len(d) for d in self.datasets))

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx: int):
        if idx < 0:
            if -idx > len(self):
                raise ArgumentError("absolute value of index should not exceed dataset length")
            idx += len(self)
        which = bisect.bisect_right(self.cumulative_sizes, idx)
        start = self.cumulative_sizes[which - 1] if which else 0
        return self.datasets[which][idx - start]


class StackDataset(Dataset):
    """Datasets of one length side by side: sample i is the tuple of their i-th samples
    (datasets given by position) or the dict of them (given by keyword), as PyTorch's.

    >>> from kiln.utils.data import StackDataset
    >>> StackDataset([1, 2], ["a", "b"])[1], StackDataset(x=[1, 2], y="ab")[0]
    ((2, 'b'), {'x': 1, 'y': 'a'})
    """

    def __init__(self, *args, **kwargs):
        if args and kwargs:
            raise ArgumentError(
                "Supported either ``tuple``- (via ``args``) or``dict``- (via ``kwargs``) like "
                "input/output, but both types are given."
            )
        if not args and not kwargs:
            raise ArgumentError("At least one dataset should be passed")
        self.datasets = dict(kwargs) if kwargs else tuple(args)
        sizes = {len(d) for d in (kwargs.values() if kwargs else args)}
        if len(sizes) != 1:
            raise ArgumentError("Size mismatch between datasets")
        self._length = sizes.pop()

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {k: d[index] for k, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __len__(self) -> int:
        return self._length


class ChainDataset(IterableDataset):
    """Iterable datasets one after another (PyTorch's `ChainDataset`).

    >>> from kiln.utils.data import ChainDataset, IterableDataset
    >>> class Count(IterableDataset):
    ...     def __init__(self, n):
    ...         self.n = n
    ...     def __iter__(self):
    ...         return iter(range(self.n))
    >>> list(ChainDataset([Count(2), Count(3)]))
    [0, 1, 0, 1, 2]
    """

    def __init__(self, datasets):
        self.datasets = datasets

    def __iter__(self):
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise ArgumentTypeError("ChainDataset only supports IterableDataset")
            yield from d

    def __len__(self) -> int:
        total = 0
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise ArgumentTypeError("ChainDataset only supports IterableDataset")
            total += len(d)
        return total


def _split_lengths(n: int, lengths) -> list[int]:
    """Fractions summing to 1 become counts: floors, the remainder one each round-robin."""
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        counts = []
        for i, frac in enumerate(lengths):
            if frac < 0 or frac > 1:
                raise ArgumentError(f"Fraction at index {i} is not between 0 and 1")
            counts.append(int(math.floor(n * frac)))
        for i in range(n - sum(counts)):
            counts[i % len(counts)] += 1
        for i, count in enumerate(counts):
            if count == 0:
                warnings.warn(f"Length of split at index {i} is 0. This might result in an "
                              "empty dataset.", stacklevel=3)  # fmt: skip
        return counts
    return [int(x) for x in lengths]


def random_split(dataset, lengths, generator: Generator | None = None) -> list[Subset]:
    """Splits `dataset` into non-overlapping random Subsets of the given `lengths` (counts,
    or fractions that sum to 1), shuffled by `generator` (else from kiln's global seed).

    >>> import kiln as kn
    >>> train, val = kn.utils.data.random_split(range(10), [0.8, 0.2],
    ...                                          generator=kn.Generator().manual_seed(0))
    >>> len(train), len(val), sorted([*train, *val]) == list(range(10))
    (8, 2, True)
    """
    counts = _split_lengths(len(dataset), lengths)
    if sum(counts) != len(dataset):
        raise ArgumentError("Sum of input lengths does not equal the length of the input dataset!")
    generator = seeded_generator() if generator is None else generator
    order = generator.randperm(sum(counts)).tolist()
    ends = list(accumulate(counts))
    return [Subset(dataset, order[end - count : end]) for end, count in zip(ends, counts)]
