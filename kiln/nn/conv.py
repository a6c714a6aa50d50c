"""Convolution layers (Conv1d/2d/3d, ConvTranspose1d/2d/3d) with PyTorch's constructors,
parameter shapes and initialization (kaiming-uniform weight with `a=sqrt(5)`, bias uniform in
±1/sqrt(fan_in), fans of the weight as PyTorch computes them), so PyTorch's state_dicts load."""

from __future__ import annotations

import math

from .. import dtypes as dt
from .. import init
from ..errors import ArgumentError
from . import functional as F
from .module import Module, Parameter

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"]

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


def _ntuple(value, n: int, what: str) -> tuple:
    if isinstance(value, int):
        return (value,) * n
    values = tuple(int(v) for v in value)
    if len(values) != n:
        raise ArgumentError(f"{what} must be an int or {n} ints, got {value!r}")
    return values


class _ConvNd(Module):
    """What Conv1d/2d/3d and ConvTranspose1d/2d share: arguments, parameters, init, repr."""

    n: int = 2
    transposed: bool = False

    def __init__(
        self,
        in_channels,
        out_channels,
        kernel_size,
        stride,
        padding,
        dilation,
        output_padding,
        groups,
        bias,
        padding_mode,
        device,
        dtype,
    ):
        super().__init__()
        n = self.n
        if groups <= 0:
            raise ArgumentError("groups must be a positive integer")
        if in_channels % groups or out_channels % groups:
            raise ArgumentError("in_channels and out_channels must be divisible by groups")
        if padding_mode not in _PADDING_MODES:
            raise ArgumentError(
                f"padding_mode must be one of {_PADDING_MODES}, got {padding_mode!r}"
            )
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size = _ntuple(kernel_size, n, "kernel_size")
        self.stride = _ntuple(stride, n, "stride")
        self.dilation = _ntuple(dilation, n, "dilation")
        self.output_padding = _ntuple(output_padding, n, "output_padding")
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ArgumentError(
                    f"Invalid padding string {padding!r}, should be one of ['valid', 'same']"
                )
            if padding == "same" and any(s != 1 for s in self.stride):
                raise ArgumentError("padding='same' is not supported for strided convolutions")
            self.padding = padding
        else:
            self.padding = _ntuple(padding, n, "padding")
        self.padding_mode = padding_mode
        self._reversed_padding_repeated_twice = self._reversed_pads()
        dtype = dt.as_dtype(dtype or dt.DEFAULT_FLOAT)
        if self.transposed:
            shape = (in_channels, out_channels // groups, *self.kernel_size)
        else:
            shape = (out_channels, in_channels // groups, *self.kernel_size)
        self.weight = Parameter(init.kaiming_uniform(a=math.sqrt(5))(shape, dtype))
        self.bias = None
        if bias:
            fan_in, _ = init.fan_in_and_fan_out(shape)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0.0
            self.bias = Parameter(init.uniform(-bound, bound)((out_channels,), dtype))
        if device is not None:
            self.to(device)

    def _reversed_pads(self):
        """PyTorch's `_reversed_padding_repeated_twice`: `F.pad`'s widths (last dim first) of
        the padding; "same" puts the odd unit after; a list for a string padding, as there."""
        if isinstance(self.padding, str):
            pads = [0, 0] * self.n
            if self.padding == "same":
                for i in range(self.n):
                    total = self.dilation[i] * (self.kernel_size[i] - 1)
                    j = 2 * (self.n - 1 - i)
                    pads[j], pads[j + 1] = total // 2, total - total // 2
            return pads
        return tuple(p for p in reversed(self.padding) for _ in range(2))

    def _mode_padded(self, x):
        """x padded by `padding_mode` (not zeros), as PyTorch pads before a padding-0 conv."""
        return F.pad(x, self._reversed_padding_repeated_twice, mode=self.padding_mode)

    def extra_repr(self) -> str:
        text = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}"
        text += f", stride={self.stride}"
        if self.padding != (0,) * self.n:
            text += f", padding={self.padding}"  # 'same' unquoted, as PyTorch prints
        if self.dilation != (1,) * self.n:
            text += f", dilation={self.dilation}"
        if self.output_padding != (0,) * self.n:
            text += f", output_padding={self.output_padding}"
        if self.groups != 1:
            text += f", groups={self.groups}"
        if self.bias is None:
            text += ", bias=False"
        if self.padding_mode != "zeros":
            text += f", padding_mode={self.padding_mode}"
        return text


class _Conv(_ConvNd):
    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size,
        stride=1,
        padding=0,
        dilation=1,
        groups: int = 1,
        bias: bool = True,
        padding_mode: str = "zeros",
        device=None,
        dtype=None,
    ):
        super().__init__(
            in_channels,
            out_channels,
            kernel_size,
            stride,
            padding,
            dilation,
            0,
            groups,
            bias,
            padding_mode,
            device,
            dtype,
        )

    def forward(self, x):
        fn = (F.conv1d, F.conv2d, F.conv3d)[self.n - 1]
        if self.padding_mode != "zeros":
            x, padding = self._mode_padded(x), 0
        else:
            padding = self.padding
        return fn(x, self.weight, self.bias, self.stride, padding, self.dilation, self.groups)


class Conv1d(_Conv):
    """1-d convolution over (N, C_in, L) inputs; weight (C_out, C_in/groups, K).

    >>> import kiln as kn
    >>> conv = kn.nn.Conv1d(4, 6, 3, padding="same", groups=2)
    >>> list(conv(kn.zeros(2, 4, 9)).shape), list(conv.weight.shape)
    ([2, 6, 9], [6, 2, 3])
    """

    n = 1


class Conv2d(_Conv):
    """2-d cross-correlation with weight (out, in/groups, kh, kw) and bias (out,), initialized
    as PyTorch's `Conv2d` (kaiming-uniform with `a=sqrt(5)`, bias uniform in ±1/sqrt(fan_in)).

    >>> import kiln as kn
    >>> with kn.Graph().as_default():
    ...     conv = kn.nn.Conv2d(3, 8, kernel_size=3, padding=1)
    ...     y = conv(kn.placeholder(kn.float32, ("batch", 3, 32, 32), name="x"))
    >>> y.type_str(), sum(p.size for p in conv.parameters())
    ('f32[batch,8,32,32]', 224)
    """

    n = 2


class Conv3d(_Conv):
    """3-d convolution over (N, C_in, D, H, W) inputs; weight (C_out, C_in/groups, KD, KH, KW).

    >>> import kiln as kn
    >>> list(kn.nn.Conv3d(1, 2, 2)(kn.zeros(1, 1, 3, 3, 3)).shape)
    [1, 2, 2, 2, 2]
    """

    n = 3


class _ConvTranspose(_ConvNd):
    transposed = True

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size,
        stride=1,
        padding=0,
        output_padding=0,
        groups: int = 1,
        bias: bool = True,
        dilation=1,
        padding_mode: str = "zeros",
        device=None,
        dtype=None,
    ):
        if padding_mode != "zeros":
            raise ArgumentError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        super().__init__(
            in_channels,
            out_channels,
            kernel_size,
            stride,
            padding,
            dilation,
            output_padding,
            groups,
            bias,
            padding_mode,
            device,
            dtype,
        )

    def _output_padding(self, x, output_size) -> tuple:
        """PyTorch's output_padding that makes the output `output_size` (spatial or full)."""
        if output_size is None:
            return self.output_padding
        size = tuple(output_size)[-self.n :]
        extra = []
        for i in range(self.n):
            d = x.ndim - self.n + i
            low = (
                (x.shape[d] - 1) * self.stride[i]
                - 2 * self.padding[i]
                + self.dilation[i] * (self.kernel_size[i] - 1)
                + 1
            )
            if not low <= size[i] < low + self.stride[i]:
                raise ArgumentError(
                    f"requested an output size of {size}, but valid sizes range from {low} to "
                    f"{low + self.stride[i] - 1} (for an input of {tuple(x.shape[2:])})"
                )
            extra.append(size[i] - low)
        return tuple(extra)

    def forward(self, x, output_size=None):
        fn = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[self.n - 1]
        extra = self._output_padding(x, output_size)
        return fn(
            x, self.weight, self.bias, self.stride, self.padding, extra, self.groups, self.dilation
        )


class ConvTranspose1d(_ConvTranspose):
    """The transpose of Conv1d over (N, C_in, L) inputs; weight (C_in, C_out/groups, K).

    >>> import kiln as kn
    >>> list(kn.nn.ConvTranspose1d(2, 3, 3, stride=2)(kn.zeros(1, 2, 4)).shape)
    [1, 3, 9]
    """

    n = 1


class ConvTranspose2d(_ConvTranspose):
    """The transpose of Conv2d over (N, C_in, H, W) inputs; weight (C_in, C_out/groups, KH, KW);
    `output_size` in the call picks among the sizes a stride allows.

    >>> import kiln as kn
    >>> up = kn.nn.ConvTranspose2d(4, 2, 3, stride=2, padding=1)
    >>> list(up(kn.zeros(1, 4, 5, 5), output_size=[10, 10]).shape)
    [1, 2, 10, 10]
    """

    n = 2


class ConvTranspose3d(_ConvTranspose):
    """The transpose of Conv3d over (N, C_in, D, H, W) inputs; weight
    (C_in, C_out/groups, KD, KH, KW).

    >>> import kiln as kn
    >>> list(kn.nn.ConvTranspose3d(2, 3, 2, stride=2)(kn.zeros(1, 2, 2, 2, 2)).shape)
    [1, 3, 4, 4, 4]
    """

    n = 3
