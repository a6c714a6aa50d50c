"""`torch.nn.modules.pooling`'s names."""

from ..pooling import *  # noqa: F403
from ..pooling import __all__ as __all__
