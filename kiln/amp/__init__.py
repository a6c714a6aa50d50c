"""`kn.amp`: automatic mixed precision, as `torch.amp`: `autocast` and `GradScaler`."""

from ..frontend.autocast import autocast, get_autocast_dtype, is_autocast_enabled
from . import cuda
from .custom import custom_bwd, custom_fwd, is_autocast_available
from .grad_scaler import GradScaler

__all__ = ["GradScaler", "autocast", "cuda", "custom_bwd", "custom_fwd", "get_autocast_dtype",
           "is_autocast_available", "is_autocast_enabled"]  # fmt: skip
