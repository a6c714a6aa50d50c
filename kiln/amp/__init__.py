"""`kn.amp`: automatic mixed precision, as `torch.amp`: `autocast` and `GradScaler`."""

from ..frontend.autocast import autocast, get_autocast_dtype, is_autocast_enabled
from . import cuda
from .grad_scaler import GradScaler

__all__ = ["GradScaler", "autocast", "cuda", "get_autocast_dtype", "is_autocast_enabled"]
