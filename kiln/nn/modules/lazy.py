"""`torch.nn.modules.lazy`'s names."""

from ..layers_lazy import LazyModuleMixin

__all__ = ["LazyModuleMixin"]
