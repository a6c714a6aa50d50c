"""`DistributedSampler`: each rank's share of a data set's indices (PyTorch's semantics)."""

from __future__ import annotations

import math

import numpy as np

from ..errors import ArgumentError
from .group import current_group, is_initialized


class DistributedSampler:
    """Yields the indices of `dataset` that rank `rank` of `num_replicas` reads this epoch.

    As PyTorch's: the same permutation on every rank (seeded with `seed + epoch`; call
    `set_epoch` before each epoch), padded by repeating its start to a multiple of
    `num_replicas` (or, with `drop_last`, cut to one), then every `num_replicas`-th index
    from `rank`. The permutation is NumPy's (`default_rng(seed + epoch)`), not torch's.
    `num_replicas` and `rank` default to the process group's.

    >>> list(DistributedSampler(range(5), num_replicas=2, rank=1, shuffle=False))
    [1, 3, 0]
    >>> s = DistributedSampler(range(5), num_replicas=2, rank=0, drop_last=True)
    >>> len(s), len(list(s))
    (2, 2)
    """

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle: bool = True,
                 seed: int = 0, drop_last: bool = False):  # fmt: skip
        if num_replicas is None:
            num_replicas = current_group().size if is_initialized() else 1
        if rank is None:
            rank = current_group().rank if is_initialized() else 0
        if rank >= num_replicas or rank < 0:
            raise ArgumentError(
                f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]"
            )
        self.dataset, self.num_replicas, self.rank = dataset, num_replicas, rank
        self.shuffle, self.seed, self.drop_last, self.epoch = shuffle, seed, drop_last, 0
        n = len(dataset)
        if drop_last and n % num_replicas:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas

    def __iter__(self):
        n = len(self.dataset)
        if self.shuffle:
            indices = np.random.default_rng(self.seed + self.epoch).permutation(n).tolist()
        else:
            indices = list(range(n))
        if not self.drop_last:
            padding = self.total_size - len(indices)
            if padding <= len(indices):
                indices += indices[:padding]
            else:
                indices += (indices * math.ceil(padding / len(indices)))[:padding]
        else:
            indices = indices[: self.total_size]
        return iter(indices[self.rank : self.total_size : self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """The epoch whose permutation the next `__iter__` uses (the same on every rank)."""
        self.epoch = epoch
