"""`torch.nn.modules.batchnorm`'s names (`_BatchNorm`: the base of every batch norm)."""

from ..layers import BatchNorm1d, BatchNorm2d, _BatchNorm
from ..layers_lazy import LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d
from ..layers_more import SyncBatchNorm
from ..layers_torch import BatchNorm3d

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "LazyBatchNorm1d", "LazyBatchNorm2d",
           "LazyBatchNorm3d", "SyncBatchNorm", "_BatchNorm"]  # fmt: skip
