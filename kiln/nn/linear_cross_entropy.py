"""PyTorch's `LinearCrossEntropyLoss` (a `Linear` head and the cross entropy of its logits,
one module) and `LinearCrossEntropyOptions` (the chunking strategy of the fused loss, which
kiln's `linear_cross_entropy` takes and computes the same way whatever it says)."""

from __future__ import annotations

import dataclasses
import math

from .. import dtypes as dt
from ..errors import ArgumentError, UsageError
from . import functional as F
from .layers import Linear
from .loss import _WeightedLoss

__all__ = ["LinearCrossEntropyLoss", "LinearCrossEntropyOptions"]

_POLICIES = ("auto", "accurate", "balanced", "compact")


@dataclasses.dataclass(slots=True, frozen=True)
class LinearCrossEntropyOptions:
    """The chunking strategy of `linear_cross_entropy` (PyTorch's fields, checked as PyTorch
    checks them); kiln's loss is computed the same way whatever it says.

    >>> import kiln as kn
    >>> kn.nn.LinearCrossEntropyOptions(batch_chunk_size=64).acc_policy
    'auto'
    """

    allow_retain_graph: bool = False
    batch_chunk_size: int | None = None
    chunking_method: str | None = "auto"
    acc_policy: str = "auto"
    acc_dtype: object = None

    def __post_init__(self):
        if self.acc_policy not in _POLICIES:
            raise ArgumentError(f"invalid acc_policy: {self.acc_policy!r}")
        if self.chunking_method is not None and self.chunking_method != "auto":
            name, sep, factor = self.chunking_method.partition(":")
            factor = factor if sep else "1"
            if not (name == "aspect_ratio" and factor.isdigit() and int(factor) > 0):
                raise ArgumentError(f"invalid chunking_method: {self.chunking_method!r}")
        size = self.batch_chunk_size
        if not (size is None or (isinstance(size, int) and size > 0)):
            raise ArgumentError(f"batch_chunk_size must be positive int or None, got {size!r}")
        floats = (dt.float16, dt.bfloat16, dt.float32, dt.float64)
        if self.acc_dtype is not None and not any(self.acc_dtype == d for d in floats):
            raise ArgumentError(
                "acc_dtype must be one of {None, float16, bfloat16, float32, float64}, got "
                f"{self.acc_dtype!r}"
            )


class LinearCrossEntropyLoss(_WeightedLoss):
    """The cross entropy of `linear(input)`'s logits against `target`: a `Linear(in_features,
    num_classes * prod(out_features))` child (`self.linear`, its weight kept 2-D and reshaped
    to (C, *out_features, in_features) in `forward`) and `F.linear_cross_entropy`.

    >>> import kiln as kn
    >>> loss = kn.nn.LinearCrossEntropyLoss(3, 4)
    >>> tuple(loss.linear.weight.shape), loss(kn.zeros(2, 3), kn.tensor([0, 3])).item()
    ((4, 3), 1.3862943649291992)
    """

    def __init__(self, in_features: int, num_classes: int, *, out_features: tuple = (),
                 bias: bool = False, device=None, dtype=None, reduction: str = "mean",
                 weight=None, ignore_index=None, label_smoothing: float = 0.0,
                 options=None):  # fmt: skip
        if weight is not None and tuple(weight.shape) != (num_classes,):
            raise UsageError(
                f"expected weight shape to be {(num_classes,)}, got {tuple(weight.shape)}"
            )
        if label_smoothing < 0 or label_smoothing > 1.0:
            raise UsageError(
                f"expected label_smoothing to be in range [0, 1], got {label_smoothing}"
            )
        super().__init__(weight=weight, reduction=reduction)
        self.num_classes, self.out_features = num_classes, out_features
        self.ignore_index, self.label_smoothing = ignore_index, label_smoothing
        classes = math.prod(out_features, start=num_classes)
        self.linear = Linear(in_features, classes, bias=bias, device=device, dtype=dtype)
        self.options = options

    def forward(self, input, target):  # noqa: A002
        head = (self.num_classes, *self.out_features)
        weight = self.linear.weight.reshape((*head, self.linear.in_features))
        bias = None if self.linear.bias is None else self.linear.bias.reshape(head)
        return F.linear_cross_entropy(
            input, weight, target, linear_bias=bias, weight=self.weight,
            reduction=self.reduction, ignore_index=self.ignore_index,
            label_smoothing=self.label_smoothing, options=self.options,
        )  # fmt: skip

    def extra_repr(self) -> str:
        return (
            f"in_features={self.linear.in_features}, num_classes={self.num_classes}, "
            f"out_features={self.out_features}, bias={self.linear.bias is not None}, "
            f"reduction={self.reduction}, ignore_index={self.ignore_index}, "
            f"label_smoothing={self.label_smoothing}, options={self.options}"
        )
