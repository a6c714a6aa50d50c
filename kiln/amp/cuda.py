"""`kn.cuda.amp`: PyTorch's older spellings, `torch.cuda.amp.autocast` and `GradScaler`,
fixed to device_type "cuda"."""

from __future__ import annotations

from .. import dtypes as dt
from ..frontend.autocast import autocast as _autocast
from . import custom as _custom
from .grad_scaler import GradScaler as _GradScaler

__all__ = ["GradScaler", "autocast", "custom_bwd", "custom_fwd"]


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


def custom_fwd(fwd=None, *, cast_inputs=None):
    """`kn.amp.custom_fwd(device_type="cuda")` (`torch.cuda.amp.custom_fwd`)."""
    return _custom.custom_fwd(fwd, device_type="cuda", cast_inputs=cast_inputs)


def custom_bwd(bwd=None):
    """`kn.amp.custom_bwd(device_type="cuda")` (`torch.cuda.amp.custom_bwd`)."""
    return _custom.custom_bwd(bwd, device_type="cuda")
