"""Eager mode: `Tensor`, its factories, and tape autograd with PyTorch's semantics.

Importing it makes its dispatch `bind`'s eager path (`kiln.ops.core.use_eager`), so every op
and vjp rule also runs on Tensors. The Tensor's operators and PyTorch methods are the
frontend's functions: `kiln.frontend`, which builds on this package, installs them.
"""

from ..ops import core as _ops_core
from . import (  # (forward_ad: kn.autograd.forward_ad)
    autograd,
    devices,
    forward_ad,  # noqa: F401
    grad_mode,
    legacy_types,
    sampling,
    storage,
    storage_objects,
)
from .autograd import Node
from .dispatch import eager_dispatch
from .factories import *  # noqa: F403
from .factories import __all__ as _factories_all
from .grad_mode import *  # noqa: F403
from .grad_mode import __all__ as _grad_mode_all
from .sampling import *  # noqa: F403
from .sampling import __all__ as _sampling_all
from .storage import empty_strided
from .storage_objects import TypedStorage, UntypedStorage, is_storage
from .tensor import Tensor

devices.install(Tensor)
sampling.install(Tensor)
storage.install(Tensor)
storage_objects.install(Tensor)
_ops_core.use_eager(eager_dispatch, grad_mode.state)

__all__ = [
    "Tensor", "TypedStorage", "UntypedStorage", "autograd", "empty_strided", *_factories_all,
    *_grad_mode_all, *_sampling_all, "is_storage",
]  # fmt: skip
