"""`torch.nn.modules.module`'s names."""

from ..module import Module
from ..module_hooks import register_module_forward_hook, register_module_forward_pre_hook

__all__ = ["Module", "register_module_forward_hook", "register_module_forward_pre_hook"]
