"""Samplers (PyTorch's): which indices a DataLoader loads, in what order and batches."""

from __future__ import annotations

import numpy as np

from ...errors import ArgumentError, ArgumentTypeError, UsageError
from ...generator import Generator, seeded_generator

__all__ = [
    "BatchSampler",
    "RandomSampler",
    "Sampler",
    "SequentialSampler",
    "SubsetRandomSampler",
    "WeightedRandomSampler",
]


class Sampler:
    """Base class: `__iter__` yields indices (or, for a batch sampler, lists of them)."""

    def __init__(self, data_source=None):
        pass

    def __iter__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    """0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler):
    """A random permutation of the indices each pass (or `num_samples` draws with
    `replacement`). Without a `generator`, each pass seeds one from kiln's global stream
    (`kn.manual_seed`), as PyTorch's does from its global generator.

    >>> import kiln as kn
    >>> s = kn.utils.data.RandomSampler(range(5), generator=kn.Generator().manual_seed(1))
    >>> sorted(s), len(s)
    ([0, 1, 2, 3, 4], 5)
    """

    def __init__(self, data_source, replacement: bool = False, num_samples: int | None = None,
                 generator: Generator | None = None):  # fmt: skip
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(replacement, bool):
            raise ArgumentTypeError(
                f"replacement should be a boolean value, but got replacement={replacement}"
            )
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ArgumentError(
                f"num_samples should be a positive integer value, but got "
                f"num_samples={self.num_samples}"
            )

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n = len(self.data_source)
        generator = seeded_generator() if self.generator is None else self.generator
        if self.replacement:
            for _ in range(self.num_samples // 32):
                yield from generator.randint(n, 32).tolist()
            yield from generator.randint(n, self.num_samples % 32).tolist()
        else:
            for _ in range(self.num_samples // n):
                yield from generator.randperm(n).tolist()
            yield from generator.randperm(n).tolist()[: self.num_samples % n]

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given `indices` in a random order each pass."""

    def __init__(self, indices, generator: Generator | None = None):
        self.indices = indices
        self.generator = generator

    def __iter__(self):
        generator = seeded_generator() if self.generator is None else self.generator
        for i in generator.randperm(len(self.indices)).tolist():
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """`num_samples` indices drawn with probabilities proportional to `weights` (with
    replacement unless `replacement=False`: then each index at most once), as PyTorch's.

    >>> import kiln as kn
    >>> s = kn.utils.data.WeightedRandomSampler([0.0, 1.0, 3.0], 100,
    ...                                        generator=kn.Generator().manual_seed(0))
    >>> draws = list(s)
    >>> len(s), 0 in draws, 40 < draws.count(2) < 95
    (100, False, True)
    """

    def __init__(self, weights, num_samples: int, replacement: bool = True,
                 generator: Generator | None = None):  # fmt: skip
        if isinstance(num_samples, bool) or not isinstance(num_samples, int) or num_samples <= 0:
            raise ArgumentError(
                f"num_samples should be a positive integer value, but got num_samples={num_samples}"
            )
        if not isinstance(replacement, bool):
            raise ArgumentError(
                f"replacement should be a boolean value, but got replacement={replacement}"
            )
        values = np.asarray(weights.tolist() if hasattr(weights, "tolist") else weights,
                            np.float64)  # fmt: skip
        if values.ndim != 1:
            raise ArgumentError(
                f"weights should be a 1d sequence but given weights have shape "
                f"{tuple(values.shape)}"
            )
        self.weights, self.num_samples = values, num_samples
        self.replacement, self.generator = replacement, generator

    def __iter__(self):
        values = self.weights  # checked when drawn, as PyTorch's multinomial does
        if (values < 0).any() or not np.isfinite(values).all() or values.sum() <= 0:
            raise UsageError(
                "WeightedRandomSampler: invalid multinomial distribution (weights must be "
                "finite, non-negative, and not all zero)"
            )
        if not self.replacement and self.num_samples > len(values):
            raise UsageError(
                "WeightedRandomSampler: cannot sample n_sample > prob_dist.size(-1) samples "
                "without replacement"
            )
        generator = seeded_generator() if self.generator is None else self.generator
        rng = np.random.default_rng(generator.next_seed())
        if self.replacement:
            draws = rng.choice(len(values), self.num_samples, p=values / values.sum())
            return iter(draws.tolist())
        # without replacement, as PyTorch's: the weighted draws in order (exponential keys
        # over the weights), then the zero-weight indices, in a random order
        with np.errstate(divide="ignore"):
            keys = rng.exponential(size=len(values)) / values
        order = np.lexsort((rng.random(len(values)), keys))
        return iter(order[: self.num_samples].tolist())

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler):
    """Groups the indices of `sampler` into lists of `batch_size` (the last one shorter,
    or dropped with `drop_last`).

    >>> import kiln as kn
    >>> from kiln.utils.data import BatchSampler, SequentialSampler
    >>> list(BatchSampler(SequentialSampler(range(5)), batch_size=2, drop_last=False))
    [[0, 1], [2, 3], [4]]
    """

    def __init__(self, sampler, batch_size: int, drop_last: bool):
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
            raise ArgumentError(
                f"batch_size should be a positive integer value, but got batch_size={batch_size}"
            )
        if not isinstance(drop_last, bool):
            raise ArgumentError(
                f"drop_last should be a boolean value, but got drop_last={drop_last}"
            )
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        batch = []
        for index in self.sampler:
            batch.append(index)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self) -> int:
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size
