"""PyTorch's `torch.nn.modules` paths to kiln's layers: every layer class of `kn.nn`, and the
submodules code names (`kn.nn.modules.batchnorm._BatchNorm` in an isinstance check,
`kn.nn.modules.utils._pair`, `kn.nn.modules.module.register_module_forward_hook`).

>>> import kiln as kn
>>> isinstance(kn.nn.BatchNorm2d(3), kn.nn.modules.batchnorm._BatchNorm)
True
>>> kn.nn.modules.utils._pair(3)
(3, 3)
"""

import sys as _sys

from . import (
    activation,
    batchnorm,
    container,
    conv,
    dropout,
    instancenorm,
    lazy,
    linear,
    loss,
    module,
    normalization,
    pooling,
    rnn,
    sparse,
    utils,
)

_nn = _sys.modules[__name__.rpartition(".")[0]]  # kiln.nn (which imports this last)
__all__ = [n for n in _nn.__all__ if isinstance(getattr(_nn, n, None), type)]
globals().update((n, getattr(_nn, n)) for n in __all__)
__all__ += ["activation", "batchnorm", "container", "conv", "dropout", "instancenorm",
            "lazy", "linear", "loss", "module", "normalization", "pooling", "rnn", "sparse",
            "utils"]  # fmt: skip
