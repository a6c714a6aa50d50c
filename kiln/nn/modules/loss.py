"""`torch.nn.modules.loss`'s bases (`_Loss`, `_WeightedLoss`) and every loss class."""

import sys as _sys

from ..loss import _Loss, _WeightedLoss

_nn = _sys.modules[__name__.rsplit(".", 2)[0]]  # kiln.nn (which imports this last)
__all__ = [n for n in _nn.__all__ if n.endswith("Loss")]
globals().update((n, getattr(_nn, n)) for n in __all__)
__all__ += ["_Loss", "_WeightedLoss"]
