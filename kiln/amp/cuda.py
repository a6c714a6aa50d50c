"""`kn.cuda.amp`: PyTorch's older spellings, `torch.cuda.amp.autocast` and `GradScaler`,
fixed to device_type "cuda"."""

from __future__ import annotations

from .. import dtypes as dt
from ..frontend.autocast import autocast as _autocast
from .grad_scaler import GradScaler as _GradScaler

__all__ = ["GradScaler", "autocast"]


def autocast(enabled: bool = True, dtype=dt.float16, cache_enabled: bool = True):
    """`kn.autocast("cuda", dtype, enabled, cache_enabled)` (`torch.cuda.amp.autocast`).

    >>> import kiln as kn
    >>> kn.cuda.amp.autocast(enabled=False).device
    'cuda'
    """
    return _autocast("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class GradScaler(_GradScaler):
    """`kn.amp.GradScaler("cuda", ...)` (`torch.cuda.amp.GradScaler`)."""

    def __init__(self, init_scale: float = 2.0**16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000,
                 enabled: bool = True):  # fmt: skip
        super().__init__("cuda", init_scale, growth_factor, backoff_factor, growth_interval,
                         enabled)  # fmt: skip
