"""Eager mode: `Tensor`, its factories, and tape autograd with PyTorch's semantics.

Importing it installs the Tensor's operators and methods (the frontend's, as on Symbol) and
the eager hook of `bind`, so every frontend function and vjp rule also runs on Tensors.
"""

from ..frontend import core as _frontend_core
from ..frontend import methods as _methods
from ..ops import core as _ops_core
from . import autograd, devices, grad_mode, inplace
from .autograd import Node
from .dispatch import apply_binary, apply_unary, eager_dispatch
from .factories import *  # noqa: F403
from .factories import __all__ as _factories_all
from .grad_mode import *  # noqa: F403
from .grad_mode import __all__ as _grad_mode_all
from .tensor import Tensor

_methods.install(Tensor)
inplace.install(Tensor)
devices.install(Tensor)
_frontend_core.Tensor = _frontend_core.Plain = Tensor
_frontend_core.apply_unary, _frontend_core.apply_binary = apply_unary, apply_binary
_ops_core.eager_dispatch = eager_dispatch


def _close_short_path(inference: bool) -> None:
    """While a thread is in inference mode, plain tensors take the long path (which marks
    inference tensors): the frontend's short path makes plain ones."""
    _frontend_core.Plain = None if inference else Tensor


grad_mode.inference_watchers.append(_close_short_path)

__all__ = ["Tensor", "autograd", *_factories_all, *_grad_mode_all]
