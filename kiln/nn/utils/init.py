"""`skip_init`: a module built without initializing its parameters, as PyTorch's
`torch.nn.utils.skip_init`."""

from __future__ import annotations

import inspect

from ...errors import UsageError
from ...frontend.torch_namespace import get_rng_state, set_rng_state
from ..module import Module

__all__ = ["skip_init"]


def skip_init(module_cls, *args, **kwargs):
    """`module_cls(*args, **kwargs)` whose parameters and buffers hold uninitialized memory
    (to be set after: `load_state_dict`, an initializer), on `device=` (default "cpu"); as
    PyTorch's, the class must take a `device` argument, and the random stream is left as
    it was (no initializer's draws). kiln has no meta device: the module is built as usual,
    its draws undone, then its memory replaced (`to_empty`).

    >>> import kiln as kn
    >>> m = kn.nn.utils.skip_init(kn.nn.Linear, 6, 1)
    >>> type(m).__name__, tuple(m.weight.shape), m.weight.requires_grad
    ('Linear', (1, 6), True)
    >>> kn.nn.utils.skip_init(kn.nn.ReLU)
    Traceback (most recent call last):
    ...
    kiln.errors.UsageError: Module must support a 'device' arg to skip initialization ...
    """
    if not (isinstance(module_cls, type) and issubclass(module_cls, Module)):
        raise UsageError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise UsageError("Module must support a 'device' arg to skip initialization")
    device = kwargs.pop("device", "cpu")
    state = get_rng_state()
    try:
        module = module_cls(*args, **kwargs)
    finally:
        set_rng_state(state)
    return module.to_empty(device=device)
