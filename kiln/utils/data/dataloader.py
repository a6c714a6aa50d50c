"""`DataLoader`: batches of a dataset, as PyTorch's. `num_workers > 0` loads batches ahead
in worker threads (not processes: kiln's kernels release the GIL in NumPy), in order."""

from __future__ import annotations

import itertools
import threading
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from ...errors import ArgumentError
from ...generator import Generator
from .collate import default_collate, default_convert
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, SequentialSampler

__all__ = ["DataLoader", "get_worker_info"]

_local = threading.local()


@dataclass(frozen=True)
class WorkerInfo:
    id: int
    num_workers: int
    seed: int
    dataset: object


def get_worker_info() -> WorkerInfo | None:
    """In a DataLoader worker thread: its id, the worker count, a seed and the dataset;
    elsewhere None."""
    return getattr(_local, "info", None)


class DataLoader:
    """Iterates over `dataset` in batches, as PyTorch's DataLoader.

    `shuffle=True` draws a new order each pass from `generator` (a `kn.Generator`; without
    one, from kiln's global seed, `kn.manual_seed`). `sampler` or `batch_sampler` choose the
    indices instead; `collate_fn` (default: `default_collate`) makes a batch of a list of
    samples. `num_workers > 0` loads up to `prefetch_factor * num_workers` batches ahead in
    threads; batches still come in order. `pin_memory` is accepted and does nothing (CPU).

    >>> import kiln as kn
    >>> from kiln.utils.data import DataLoader, TensorDataset
    >>> ds = TensorDataset(kn.arange(10).reshape(5, 2), kn.arange(5))
    >>> loader = DataLoader(ds, batch_size=2, shuffle=True, generator=kn.Generator().manual_seed(0))
    >>> len(loader), [y.shape[0] for _, y in loader]
    (3, [2, 2, 1])
    """

    def __init__(
        self,
        dataset,
        batch_size: int | None = 1,
        shuffle: bool | None = None,
        sampler=None,
        batch_sampler=None,
        num_workers: int = 0,
        collate_fn=None,
        pin_memory: bool = False,
        drop_last: bool = False,
        timeout: float = 0,
        worker_init_fn=None,
        multiprocessing_context=None,
        generator: Generator | None = None,
        *,
        prefetch_factor: int | None = None,
        persistent_workers: bool = False,
        pin_memory_device: str = "",
        in_order: bool = True,
    ):
        if num_workers < 0:
            raise ArgumentError(
                "num_workers option should be non-negative; use num_workers=0 to disable "
                "multiprocessing."
            )
        if timeout < 0:
            raise ArgumentError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ArgumentError(
                "prefetch_factor option could only be specified in multiprocessing. Let "
                "num_workers > 0 to enable multiprocessing, otherwise set prefetch_factor to None."
            )
        if persistent_workers and num_workers == 0:
            raise ArgumentError("persistent_workers option needs num_workers > 0")
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = 2 if num_workers and prefetch_factor is None else prefetch_factor
        self.pin_memory = pin_memory
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.generator = generator
        self.drop_last = drop_last
        iterable = isinstance(dataset, IterableDataset)
        if iterable and (shuffle not in (None, False) or sampler is not None
                         or batch_sampler is not None):  # fmt: skip
            raise ArgumentError(
                "DataLoader with IterableDataset: expected unspecified shuffle, sampler and "
                f"batch_sampler options, got shuffle={shuffle}, sampler={sampler}, "
                f"batch_sampler={batch_sampler}"
            )
        if sampler is not None and shuffle:
            raise ArgumentError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ArgumentError(
                    "batch_sampler option is mutually exclusive with batch_size, shuffle, "
                    "sampler, and drop_last"
                )
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ArgumentError(
                "batch_size=None option disables auto-batching and is mutually exclusive with "
                "drop_last"
            )
        if sampler is None and not iterable:
            sampler = (RandomSampler(dataset, generator=generator) if shuffle
                       else SequentialSampler(dataset))  # fmt: skip
        if batch_size is not None and batch_sampler is None and not iterable:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_size = batch_size
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self._auto_collation = batch_size is not None or batch_sampler is not None
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn

    def __len__(self) -> int:
        if isinstance(self.dataset, IterableDataset):
            n = len(self.dataset)  # TypeError where the stream has no length, as PyTorch
            if self.batch_size is None:
                return n
            return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
        return len(self.batch_sampler if self._auto_collation else self.sampler)

    def _fetch(self, indices):
        """One batch (or, without auto-batching, one sample) from its indices."""
        if not self._auto_collation:
            return self.collate_fn(self.dataset[indices])
        getitems = getattr(self.dataset, "__getitems__", None)
        samples = getitems(indices) if callable(getitems) else [self.dataset[i] for i in indices]
        return self.collate_fn(samples)

    def _iterable_batches(self):
        stream = iter(self.dataset)
        if self.batch_size is None:
            for sample in stream:
                yield self.collate_fn(sample)
            return
        while batch := list(itertools.islice(stream, self.batch_size)):
            if len(batch) < self.batch_size and self.drop_last:
                return
            yield self.collate_fn(batch)

    def __iter__(self):
        if isinstance(self.dataset, IterableDataset):
            return self._iterable_batches()
        keys = self.batch_sampler if self._auto_collation else self.sampler
        if self.num_workers == 0:
            return (self._fetch(indices) for indices in keys)
        return self._threaded(iter(keys))

    def _threaded(self, keys):
        """Batches loaded ahead by `num_workers` threads, yielded in the sampler's order."""
        counter = itertools.count()
        base_seed = (
            int(Generator().seed()) if self.generator is None else self.generator.initial_seed()
        )

        def start_worker():
            worker = next(counter)
            _local.info = WorkerInfo(worker, self.num_workers, base_seed + worker, self.dataset)
            if self.worker_init_fn is not None:
                self.worker_init_fn(worker)

        ahead = self.num_workers * self.prefetch_factor
        with ThreadPoolExecutor(self.num_workers, "kiln-dataloader", start_worker) as pool:
            pending = deque(pool.submit(self._fetch, k) for k in itertools.islice(keys, ahead))
            while pending:
                batch = pending.popleft().result(timeout=self.timeout or None)
                for k in itertools.islice(keys, 1):
                    pending.append(pool.submit(self._fetch, k))
                yield batch
