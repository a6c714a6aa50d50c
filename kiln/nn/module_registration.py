"""PyTorch's global registration hooks (`torch.nn.modules.module.register_module_*_registration
_hook`): `hook(module, name, value)` runs when a module registers a buffer, a parameter or a
child (through `register_buffer`, `register_parameter`, `add_module` or an assignment), before
it is stored; a result other than None is stored instead.

>>> import kiln as kn
>>> seen = []
>>> h = kn.nn.modules.module.register_module_parameter_registration_hook(
...     lambda m, name, p: seen.append(name))
>>> _ = kn.nn.Linear(2, 1); h.remove()
>>> seen
['weight', 'bias']
"""

from __future__ import annotations

from .module_hooks import RemovableHandle, _add_hook, _HookDict

BUFFER_HOOKS = _HookDict()
PARAMETER_HOOKS = _HookDict()
MODULE_HOOKS = _HookDict()


def registered(hooks: dict, module, name: str, value):
    """`value` after the registration hooks `hooks` saw it (the last replacement)."""
    for hook in list(hooks.values()):
        result = hook(module, name, value)
        if result is not None:
            value = result
    return value


def register_module_buffer_registration_hook(hook) -> RemovableHandle:
    """`hook(module, name, buffer)` runs when any module registers a buffer; a result other
    than None is registered instead. As PyTorch's.

    >>> import kiln as kn
    >>> h = kn.nn.modules.module.register_module_buffer_registration_hook(
    ...     lambda m, name, b: b * 2)
    >>> m = kn.nn.Module(); m.register_buffer("b", kn.ones(1)); h.remove()
    >>> m.b.tolist()
    [2.0]
    """
    return _add_hook(BUFFER_HOOKS, hook, False)


def register_module_parameter_registration_hook(hook) -> RemovableHandle:
    """`hook(module, name, param)` runs when any module registers a parameter (None
    included); a result other than None is registered instead. As PyTorch's (see the
    module's docstring for an example)."""
    return _add_hook(PARAMETER_HOOKS, hook, False)


def register_module_module_registration_hook(hook) -> RemovableHandle:
    """`hook(module, name, child)` runs when any module registers a child module; a result
    other than None is registered instead. As PyTorch's.

    >>> import kiln as kn
    >>> seen = []
    >>> h = kn.nn.modules.module.register_module_module_registration_hook(
    ...     lambda m, name, c: seen.append(name))
    >>> _ = kn.nn.Sequential(kn.nn.ReLU()); h.remove()
    >>> seen
    ['0']
    """
    return _add_hook(MODULE_HOOKS, hook, False)
