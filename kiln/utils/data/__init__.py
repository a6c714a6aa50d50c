"""Datasets, samplers and the DataLoader, as PyTorch's `torch.utils.data`.

>>> import kiln as kn
>>> from kiln.utils.data import DataLoader, TensorDataset
>>> ds = TensorDataset(kn.arange(6.0), kn.arange(6))
>>> [y.tolist() for _, y in DataLoader(ds, batch_size=4)]
[[0, 1, 2, 3], [4, 5]]
"""

from .collate import default_collate, default_convert
from .dataloader import DataLoader, get_worker_info
from .dataset import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    StackDataset,
    Subset,
    TensorDataset,
    random_split,
)
from .sampler import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)

__all__ = [
    "BatchSampler",
    "ChainDataset",
    "ConcatDataset",
    "DistributedSampler",
    "DataLoader",
    "Dataset",
    "IterableDataset",
    "RandomSampler",
    "Sampler",
    "SequentialSampler",
    "StackDataset",
    "Subset",
    "SubsetRandomSampler",
    "TensorDataset",
    "WeightedRandomSampler",
    "default_collate",
    "default_convert",
    "get_worker_info",
    "random_split",
]


def __getattr__(name):
    # NOTE: DistributedSampler lives with the process group it reads (kiln.distributed, which
    # sits above the data utilities); it is imported on first use.
    if name == "DistributedSampler":
        from ...distributed.sampler import DistributedSampler

        return DistributedSampler
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
