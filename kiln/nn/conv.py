"""Convolution and pooling layers (NCHW inputs, OIHW weights), as PyTorch's."""

from __future__ import annotations

import math

import numpy as np

from .. import dtypes as dt
from .. import frontend as F
from .. import init
from .module import Module, Parameter

__all__ = ["Conv2d", "MaxPool2d"]


def _pair(value) -> tuple[int, int]:
    if isinstance(value, (int, np.integer)):
        return (int(value), int(value))
    pair = tuple(int(v) for v in value)
    if len(pair) != 2:
        raise ValueError(f"expected an int or a pair of ints, got {value!r}")
    return pair


class Conv2d(Module):
    """2-d cross-correlation with weight (out, in, kh, kw) and bias (out,), initialized as
    PyTorch's `Conv2d` (kaiming-uniform with `a=sqrt(5)`, bias uniform in ±1/sqrt(fan_in)).

    >>> import kiln as kn
    >>> with kn.Graph().as_default():
    ...     conv = kn.nn.Conv2d(3, 8, kernel_size=3, padding=1)
    ...     y = conv(kn.placeholder(kn.float32, ("batch", 3, 32, 32), name="x"))
    >>> y.type_str(), sum(p.size for p in conv.parameters())
    ('f32[batch,8,32,32]', 224)
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size,
        stride=1,
        padding=0,
        dilation=1,
        bias: bool = True,
        dtype=None,
    ):
        super().__init__()
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size, self.stride = _pair(kernel_size), _pair(stride)
        self.padding, self.dilation = _pair(padding), _pair(dilation)
        dtype = dt.as_dtype(dtype or dt.DEFAULT_FLOAT)
        shape = (out_channels, in_channels, *self.kernel_size)
        self.weight = Parameter(init.kaiming_uniform(a=math.sqrt(5))(shape, dtype))
        self.bias = None
        if bias:
            fan_in, _ = init.fan_in_and_fan_out(shape)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0.0
            self.bias = Parameter(init.uniform(-bound, bound)((out_channels,), dtype))

    def forward(self, x):
        return F.conv2d(x, self.weight, self.bias, self.stride, self.padding, self.dilation)

    def extra_repr(self) -> str:
        return (
            f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
            f"stride={self.stride}, padding={self.padding}, dilation={self.dilation}, "
            f"bias={self.bias is not None}"
        )


class MaxPool2d(Module):
    """Maximum over `kernel_size` windows; `stride` defaults to the kernel size."""

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding

    def forward(self, x):
        return F.max_pool2d(x, self.kernel_size, self.stride, self.padding)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"
