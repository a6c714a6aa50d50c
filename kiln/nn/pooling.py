"""Pooling and resampling layers, as PyTorch's: each holds its arguments and calls its
`kn.nn.functional` form."""

from __future__ import annotations

from . import functional as F
from .module import Module

__all__ = [
    "AdaptiveAvgPool1d",
    "AdaptiveAvgPool2d",
    "AdaptiveAvgPool3d",
    "AdaptiveMaxPool1d",
    "AdaptiveMaxPool2d",
    "AdaptiveMaxPool3d",
    "AvgPool1d",
    "AvgPool2d",
    "AvgPool3d",
    "MaxPool1d",
    "MaxPool2d",
    "MaxPool3d",
    "Upsample",
]


class _MaxPool(Module):
    fn = staticmethod(F.max_pool2d)

    def __init__(
        self,
        kernel_size,
        stride=None,
        padding=0,
        dilation=1,
        return_indices: bool = False,
        ceil_mode: bool = False,
    ):
        super().__init__()
        self.kernel_size, self.stride = kernel_size, stride if stride is not None else kernel_size
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def forward(self, x):
        return type(self).fn(
            x,
            self.kernel_size,
            self.stride,
            self.padding,
            self.dilation,
            ceil_mode=self.ceil_mode,
            return_indices=self.return_indices,
        )

    def extra_repr(self) -> str:
        return (
            f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
            f"dilation={self.dilation}, ceil_mode={self.ceil_mode}"
        )


class MaxPool1d(_MaxPool):
    """Maximum over windows of (N, C, L) inputs; `stride` defaults to the kernel size.

    >>> import kiln as kn
    >>> kn.nn.MaxPool1d(2)(kn.tensor([[[1.0, 3.0, 2.0, 0.0]]]))
    tensor([[[3., 2.]]])
    """

    fn = staticmethod(F.max_pool1d)


class MaxPool2d(_MaxPool):
    """Maximum over windows of (N, C, H, W) inputs; `stride` defaults to the kernel size.

    >>> import kiln as kn
    >>> kn.nn.MaxPool2d(2, return_indices=True)(kn.arange(4.0).reshape(1, 1, 2, 2))
    (tensor([[[[3.]]]]), tensor([[[[3]]]]))
    """

    fn = staticmethod(F.max_pool2d)


class MaxPool3d(_MaxPool):
    """Maximum over windows of (N, C, D, H, W) inputs; `stride` defaults to the kernel size.

    >>> import kiln as kn
    >>> kn.nn.MaxPool3d(2)(kn.arange(8.0).reshape(1, 1, 2, 2, 2))
    tensor([[[[[7.]]]]])
    """

    fn = staticmethod(F.max_pool3d)


class AvgPool1d(Module):
    """Mean over windows of (N, C, L) inputs.

    >>> import kiln as kn
    >>> kn.nn.AvgPool1d(2)(kn.tensor([[[1.0, 3.0, 2.0, 0.0]]]))
    tensor([[[2., 1.]]])
    """

    def __init__(
        self,
        kernel_size,
        stride=None,
        padding=0,
        ceil_mode: bool = False,
        count_include_pad: bool = True,
    ):
        super().__init__()
        self.kernel_size, self.stride = kernel_size, stride if stride is not None else kernel_size
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad = count_include_pad

    def forward(self, x):
        return F.avg_pool1d(
            x, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad
        )

    def extra_repr(self) -> str:
        k, s, p = (v if isinstance(v, tuple) else (v,)
                   for v in (self.kernel_size, self.stride, self.padding))  # fmt: skip
        return f"kernel_size={k}, stride={s}, padding={p}"  # tuples, as PyTorch prints


class _AvgPoolNd(Module):
    """What AvgPool2d and AvgPool3d share, as PyTorch's `_AvgPoolNd` (AvgPool3d is not an
    AvgPool2d, as there)."""

    def __init__(
        self,
        kernel_size,
        stride=None,
        padding=0,
        ceil_mode: bool = False,
        count_include_pad: bool = True,
        divisor_override=None,
    ):
        super().__init__()
        self.kernel_size, self.stride = kernel_size, stride if stride is not None else kernel_size
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool2d(_AvgPoolNd):
    """Mean over windows of (N, C, H, W) inputs; `divisor_override` replaces the window size.

    >>> import kiln as kn
    >>> kn.nn.AvgPool2d(2, divisor_override=1)(kn.ones(1, 1, 2, 2))
    tensor([[[[4.]]]])
    """

    def forward(self, x):
        return F.avg_pool2d(
            x,
            self.kernel_size,
            self.stride,
            self.padding,
            self.ceil_mode,
            self.count_include_pad,
            self.divisor_override,
        )


class AvgPool3d(_AvgPoolNd):
    """Mean over windows of (N, C, D, H, W) inputs.

    >>> import kiln as kn
    >>> kn.nn.AvgPool3d(2)(kn.arange(8.0).reshape(1, 1, 2, 2, 2))
    tensor([[[[[3.5000]]]]])
    """

    def forward(self, x):
        return F.avg_pool3d(
            x,
            self.kernel_size,
            self.stride,
            self.padding,
            self.ceil_mode,
            self.count_include_pad,
            self.divisor_override,
        )


class _Adaptive(Module):
    fn = staticmethod(F.adaptive_avg_pool2d)

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, x):
        return type(self).fn(x, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_Adaptive):
    """Mean over `output_size` windows that cover (N, C, L) inputs evenly.

    >>> import kiln as kn
    >>> kn.nn.AdaptiveAvgPool1d(1)(kn.tensor([[[1.0, 3.0]]]))
    tensor([[[2.]]])
    """

    fn = staticmethod(F.adaptive_avg_pool1d)


class AdaptiveAvgPool2d(_Adaptive):
    """Mean over an `output_size` grid of windows of (N, C, H, W) inputs (None keeps a dim).

    >>> import kiln as kn
    >>> list(kn.nn.AdaptiveAvgPool2d((1, None))(kn.ones(2, 3, 5, 7)).shape)
    [2, 3, 1, 7]
    """

    fn = staticmethod(F.adaptive_avg_pool2d)


class AdaptiveAvgPool3d(_Adaptive):
    """Mean over an `output_size` grid of windows of (N, C, D, H, W) inputs.

    >>> import kiln as kn
    >>> list(kn.nn.AdaptiveAvgPool3d(1)(kn.ones(1, 2, 3, 3, 3)).shape)
    [1, 2, 1, 1, 1]
    """

    fn = staticmethod(F.adaptive_avg_pool3d)


class _AdaptiveMax(Module):
    fn = staticmethod(F.adaptive_max_pool2d)

    def __init__(self, output_size, return_indices: bool = False):
        super().__init__()
        self.output_size, self.return_indices = output_size, return_indices

    def forward(self, x):
        return type(self).fn(x, self.output_size, self.return_indices)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveMaxPool1d(_AdaptiveMax):
    """Maximum over `output_size` adaptive windows of (N, C, L) inputs.

    >>> import kiln as kn
    >>> kn.nn.AdaptiveMaxPool1d(1)(kn.tensor([[[1.0, 3.0]]]))
    tensor([[[3.]]])
    """

    fn = staticmethod(F.adaptive_max_pool1d)


class AdaptiveMaxPool2d(_AdaptiveMax):
    """Maximum over an `output_size` grid of adaptive windows of (N, C, H, W) inputs.

    >>> import kiln as kn
    >>> list(kn.nn.AdaptiveMaxPool2d(2)(kn.ones(1, 1, 5, 5)).shape)
    [1, 1, 2, 2]
    """

    fn = staticmethod(F.adaptive_max_pool2d)


class AdaptiveMaxPool3d(_AdaptiveMax):
    """Maximum over an `output_size` grid of adaptive windows of (N, C, D, H, W) inputs.

    >>> import kiln as kn
    >>> list(kn.nn.AdaptiveMaxPool3d(1)(kn.ones(1, 1, 3, 3, 3)).shape)
    [1, 1, 1, 1, 1]
    """

    fn = staticmethod(F.adaptive_max_pool3d)


class Upsample(Module):
    """`kn.nn.functional.interpolate` with fixed arguments.

    >>> import kiln as kn
    >>> kn.nn.Upsample(scale_factor=2)(kn.tensor([[[1.0, 2.0]]]))
    tensor([[[1., 1., 2., 2.]]])
    """

    def __init__(
        self,
        size=None,
        scale_factor=None,
        mode: str = "nearest",
        align_corners=None,
        recompute_scale_factor=None,
    ):
        super().__init__()
        if isinstance(scale_factor, (tuple, list)):  # floats, as PyTorch keeps them
            scale_factor = tuple(float(f) for f in scale_factor)
        elif scale_factor:
            scale_factor = float(scale_factor)
        self.size, self.scale_factor, self.mode = size, scale_factor, mode
        self.align_corners, self.recompute_scale_factor = align_corners, recompute_scale_factor

    def forward(self, x):
        return F.interpolate(
            x,
            self.size,
            self.scale_factor,
            self.mode,
            self.align_corners,
            self.recompute_scale_factor,
        )

    def extra_repr(self) -> str:
        what = f"size={self.size}" if self.size is not None else f"scale_factor={self.scale_factor}"
        return f"{what}, mode={self.mode!r}"
