"""Learning-rate schedulers with PyTorch's step semantics (`torch.optim.lr_scheduler`).

A scheduler sets each param group's `lr` when made (`last_epoch` 0) and at every `step()`.
In graph mode the train ops read `lr` (and `momentum`/`betas`) from Variables that setting
the group's value assigns, so a compiled step follows the schedule without recompiling.
"""

from .basic import (
    ConstantLR,
    CosineAnnealingLR,
    ExponentialLR,
    LambdaLR,
    LinearLR,
    LRScheduler,
    MultiplicativeLR,
    MultiStepLR,
    PolynomialLR,
    StepLR,
)
from .cycles import ChainedScheduler, CosineAnnealingWarmRestarts, CyclicLR
from .policies import OneCycleLR, ReduceLROnPlateau, SequentialLR

__all__ = [
    "ChainedScheduler",
    "ConstantLR",
    "CosineAnnealingLR",
    "CosineAnnealingWarmRestarts",
    "CyclicLR",
    "ExponentialLR",
    "LRScheduler",
    "LambdaLR",
    "LinearLR",
    "MultiStepLR",
    "MultiplicativeLR",
    "OneCycleLR",
    "PolynomialLR",
    "ReduceLROnPlateau",
    "SequentialLR",
    "StepLR",
]
