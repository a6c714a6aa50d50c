"""Looking modules' members up by dotted path (`get_submodule`, `get_parameter`,
`get_buffer`, `set_submodule`): what `Module` inherits from `ModulePaths`, as PyTorch's."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .module import Module
    from .parameter import Buffer, Parameter


class ModulePaths:
    """The dotted-path lookups of `Module` (a mixin: it reads `_modules`, `_parameters` and
    `_buffers`).

    >>> import kiln as kn
    >>> kn.nn.Sequential(kn.nn.Sequential(kn.nn.ReLU())).get_submodule("0.0")
    ReLU()
    """

    def get_submodule(self, target: str) -> Module:
        """The descendant at the dotted path `target` ("" is this module)."""
        module = self
        for part in target.split(".") if target else ():
            if part not in module._modules or module._modules[part] is None:
                raise AttributeError(f"{type(module).__name__} has no attribute `{part}`")
            module = module._modules[part]
        return module

    def _member(self, target: str, table: str, what: str):
        path, _, name = target.rpartition(".")
        module = self.get_submodule(path)
        if name in getattr(module, table):
            value = getattr(module, table)[name]
            if value is not None:
                return value
        if name in module.__dict__ or name in module._parameters or name in module._buffers:
            raise AttributeError(f"`{name}` is not {what}")
        raise AttributeError(f"{type(module).__name__} has no attribute `{name}`")

    def get_parameter(self, target: str) -> Parameter:
        """The Parameter at the dotted path `target`, as PyTorch's.

        >>> import kiln as kn
        >>> kn.nn.Sequential(kn.nn.Linear(2, 1)).get_parameter("0.bias").shape
        kiln.Size([1])
        """
        return self._member(target, "_parameters", "an nn.Parameter")

    def get_buffer(self, target: str) -> Buffer:
        """The buffer at the dotted path `target`, as PyTorch's."""
        return self._member(target, "_buffers", "a buffer")

    def set_submodule(self, target: str, module: Module, strict: bool = False) -> None:
        """Puts `module` at the dotted path `target` (its parent must exist; with `strict`,
        the attribute too), as PyTorch's."""
        if not target:
            raise ValueError("Cannot set the submodule without a target name!")
        from .module import Module  # NOTE: lazy: module imports this one

        if not isinstance(module, Module):
            raise ValueError(f"`module` is not an nn.Module, found {type(module)}")
        path, _, name = target.rpartition(".")
        parent = self.get_submodule(path)
        if strict and not hasattr(parent, name):
            raise AttributeError(f"{type(parent).__name__} has no attribute `{name}`")
        if hasattr(parent, name) and not isinstance(getattr(parent, name), Module):
            raise AttributeError(f"`{name}` is not an nn.Module")  # (PyTorch's)
        setattr(parent, name, module)
