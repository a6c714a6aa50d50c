"""`torch.nn.modules.module`'s names."""

from ..module import Module
from ..module_hooks import (
    register_module_forward_hook,
    register_module_forward_pre_hook,
    register_module_full_backward_hook,
    register_module_full_backward_pre_hook,
)
from ..module_registration import (
    register_module_buffer_registration_hook,
    register_module_module_registration_hook,
    register_module_parameter_registration_hook,
)

__all__ = [
    "Module",
    "register_module_buffer_registration_hook",
    "register_module_forward_hook",
    "register_module_forward_pre_hook",
    "register_module_full_backward_hook",
    "register_module_full_backward_pre_hook",
    "register_module_module_registration_hook",
    "register_module_parameter_registration_hook",
]
