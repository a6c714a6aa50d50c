"""The modules of kiln/nn/functional_misc.py's functions, as PyTorch's: `Bilinear`,
`AlphaDropout`, `FeatureAlphaDropout`, `LPPool1d/2d/3d` and `MultiLabelMarginLoss`."""

from __future__ import annotations

import math

from .. import dtypes as dt
from .. import init
from . import functional_misc as fm
from .layers import _FnDropout, _param
from .loss import _Loss
from .module import Module

__all__ = [
    "AlphaDropout", "Bilinear", "FeatureAlphaDropout", "LPPool1d", "LPPool2d", "LPPool3d",
    "MultiLabelMarginLoss",
]  # fmt: skip


class Bilinear(Module):
    """`y = x1 @ weight @ x2 + bias`, weight (out_features, in1_features, in2_features), as
    PyTorch's `Bilinear` (weight and bias uniform in ±1/sqrt(in1_features)).

    >>> import kiln as kn
    >>> m = kn.nn.Bilinear(3, 4, 2)
    >>> m(kn.ones(5, 3), kn.ones(5, 4)).shape, tuple(m.weight.shape)
    (kiln.Size([5, 2]), (2, 3, 4))
    """

    def __init__(self, in1_features: int, in2_features: int, out_features: int,
                 bias: bool = True, dtype=None):  # fmt: skip
        super().__init__()
        self.in1_features, self.in2_features = in1_features, in2_features
        self.out_features = out_features
        dtype = dtype or dt.DEFAULT_FLOAT
        bound = 1 / math.sqrt(in1_features) if in1_features > 0 else 0.0
        shape = (out_features, in1_features, in2_features)
        self.weight = _param(init.uniform(-bound, bound), shape, dtype)
        self.bias = _param(init.uniform(-bound, bound), (out_features,), dtype) if bias else None

    def forward(self, input1, input2):
        return fm.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (
            f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
            f"out_features={self.out_features}, bias={self.bias is not None}"
        )


class AlphaDropout(_FnDropout):
    """`alpha_dropout` with probability `p` while `training`; the identity in eval mode.

    >>> import kiln as kn
    >>> x = kn.ones(3)
    >>> kn.nn.AlphaDropout(0.2).eval()(x) is x
    True
    """

    fn = staticmethod(fm.alpha_dropout)


class FeatureAlphaDropout(_FnDropout):
    """`feature_alpha_dropout` (whole channels) with probability `p` while `training`.

    >>> import kiln as kn
    >>> kn.nn.FeatureAlphaDropout(0.5)(kn.ones(2, 3, 4)).shape
    kiln.Size([2, 3, 4])
    """

    fn = staticmethod(fm.feature_alpha_dropout)


class _LPPool(Module):
    fn = staticmethod(fm.lp_pool1d)

    def __init__(self, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False):
        super().__init__()
        self.norm_type, self.kernel_size = norm_type, kernel_size
        self.stride, self.ceil_mode = stride, ceil_mode

    def forward(self, input):  # noqa: A002
        return type(self).fn(input, self.norm_type, self.kernel_size, self.stride, self.ceil_mode)

    def extra_repr(self) -> str:
        return (
            f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, stride={self.stride}, "
            f"ceil_mode={self.ceil_mode}"
        )


class LPPool1d(_LPPool):
    """Power-average pooling of (N, C, L) or (C, L) inputs (`lp_pool1d`).

    >>> import kiln as kn
    >>> kn.nn.LPPool1d(2, 2)(kn.tensor([[3.0, 4.0]]))
    tensor([[5.]])
    """


class LPPool2d(_LPPool):
    """Power-average pooling of (N, C, H, W) or (C, H, W) inputs (`lp_pool2d`).

    >>> import kiln as kn
    >>> kn.nn.LPPool2d(1, 2)(kn.ones(1, 2, 2))
    tensor([[[4.]]])
    """

    fn = staticmethod(fm.lp_pool2d)


class LPPool3d(_LPPool):
    """Power-average pooling of (N, C, D, H, W) or (C, D, H, W) inputs (`lp_pool3d`).

    >>> import kiln as kn
    >>> kn.nn.LPPool3d(1, 2)(kn.ones(1, 2, 2, 2))
    tensor([[[[8.]]]])
    """

    fn = staticmethod(fm.lp_pool3d)


class MultiLabelMarginLoss(_Loss):
    """The multi-label hinge loss (`multilabel_margin_loss`).

    >>> import kiln as kn
    >>> loss = kn.nn.MultiLabelMarginLoss()
    >>> loss(kn.tensor([[0.1, 0.2, 0.4, 0.8]]), kn.tensor([[3, 0, -1, 1]]))
    tensor(0.8500)
    """

    def forward(self, input, target):  # noqa: A002
        return fm.multilabel_margin_loss(input, target, reduction=self.reduction)
