"""`torch.nn.modules.activation`'s names."""

from ..activation import *  # noqa: F403
from ..activation import __all__ as __all__
from ..attention import MultiheadAttention  # noqa: F401 (torch's path)
