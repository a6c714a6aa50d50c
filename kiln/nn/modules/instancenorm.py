"""`torch.nn.modules.instancenorm`'s names."""

from ..layers import InstanceNorm1d, InstanceNorm2d, _InstanceNorm
from ..layers_torch import InstanceNorm3d

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "_InstanceNorm"]
