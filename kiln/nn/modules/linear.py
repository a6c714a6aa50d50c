"""`torch.nn.modules.linear`'s names."""

from ..containers import Identity
from ..layers import Linear
from ..layers_lazy import LazyLinear
from ..layers_misc import Bilinear

__all__ = ["Bilinear", "Identity", "LazyLinear", "Linear"]
