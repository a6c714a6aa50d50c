"""`torch.nn.modules.normalization`'s names."""

from ..layers import GroupNorm, LayerNorm, RMSNorm
from ..layers_torch import LocalResponseNorm

__all__ = ["GroupNorm", "LayerNorm", "LocalResponseNorm", "RMSNorm"]
