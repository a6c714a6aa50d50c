"""Activation modules, as PyTorch's: each calls its `kn.nn.functional` form."""

from __future__ import annotations

import warnings

import numpy as np

from .. import dtypes as dt
from ..errors import ArgumentError
from . import functional as F
from .module import Module, Parameter

__all__ = [
    "PReLU",
    "RReLU",
    "Hardshrink",
    "Softshrink",
    "Tanhshrink",
    "Threshold",
    "CELU",
    "ELU",
    "GELU",
    "GLU",
    "SELU",
    "Hardsigmoid",
    "Hardswish",
    "Hardtanh",
    "LeakyReLU",
    "LogSigmoid",
    "LogSoftmax",
    "Mish",
    "ReLU",
    "ReLU6",
    "SiLU",
    "Sigmoid",
    "Softmax",
    "Softmin",
    "Softplus",
    "Softsign",
    "Tanh",
]


def _inplace(module) -> str:
    """The end of an activation's repr: ", inplace=True" when it is, as PyTorch prints."""
    return ", inplace=True" if module.inplace else ""


class ReLU(Module):
    """`max(x, 0)`; `inplace=True` overwrites an eager input, as PyTorch's.

    >>> import kiln as kn
    >>> kn.nn.ReLU()(kn.tensor([-1.0, 2.0]))
    tensor([0., 2.])
    """

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def forward(self, x):
        return F.relu(x, self.inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class GELU(Module):
    """GELU, exact (through erf) or with `approximate="tanh"`.

    >>> import kiln as kn
    >>> kn.nn.GELU()(kn.tensor([0.0, 1.0]))
    tensor([0.0000, 0.8413])
    """

    def __init__(self, approximate: str = "none"):
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise ArgumentError(f"GELU: approximate must be 'none' or 'tanh', got {approximate!r}")
        self.approximate = approximate

    def forward(self, x):
        return F.gelu(x, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class Tanh(Module):
    """`tanh(x)`.

    >>> import kiln as kn
    >>> kn.nn.Tanh()(kn.zeros(1))
    tensor([0.])
    """

    def forward(self, x):
        return F.tanh(x)


class Sigmoid(Module):
    """`1 / (1 + exp(-x))`.

    >>> import kiln as kn
    >>> kn.nn.Sigmoid()(kn.zeros(1))
    tensor([0.5000])
    """

    def forward(self, x):
        return F.sigmoid(x)


class SiLU(Module):
    """`x * sigmoid(x)`.

    >>> import kiln as kn
    >>> kn.nn.SiLU()(kn.tensor([1.0]))
    tensor([0.7311])
    """

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def forward(self, x):
        return F.silu(x, self.inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class LeakyReLU(Module):
    """`x` where positive, else `negative_slope * x`.

    >>> import kiln as kn
    >>> kn.nn.LeakyReLU(0.1)(kn.tensor([-1.0, 2.0]))
    tensor([-0.1000,  2.0000])
    """

    def __init__(self, negative_slope: float = 0.01, inplace: bool = False):
        super().__init__()
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, x):
        return F.leaky_relu(x, self.negative_slope, self.inplace)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}" + _inplace(self)


class ELU(Module):
    """`x` where positive, else `alpha * (exp(x) - 1)`.

    >>> import kiln as kn
    >>> kn.nn.ELU()(kn.tensor([-1.0]))
    tensor([-0.6321])
    """

    def __init__(self, alpha: float = 1.0, inplace: bool = False):
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, x):
        return F.elu(x, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}" + _inplace(self)


class Softplus(Module):
    """`log(1 + exp(beta * x)) / beta`, and `x` itself where `beta * x > threshold`.

    >>> import kiln as kn
    >>> kn.nn.Softplus()(kn.tensor([0.0, 30.0]))
    tensor([ 0.6931, 30.0000])
    """

    def __init__(self, beta: float = 1.0, threshold: float = 20.0):
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, x):
        big = F.F.greater(F.F.mul(x, self.beta), self.threshold)
        return F.F.where(big, x, F.softplus(x, self.beta))

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


def _softmax_dim(ndim: int, name: str) -> int:
    warnings.warn(
        f"Implicit dimension choice for {name} has been deprecated. Change the call to "
        "include dim=X as an argument.",
        stacklevel=3,
    )
    return 0 if ndim in (0, 1, 3) else 1


class Softmax(Module):
    """Softmax over `dim` (PyTorch's implicit choice, with its warning, when None).

    >>> import kiln as kn
    >>> kn.nn.Softmax(dim=1)(kn.zeros(1, 2))
    tensor([[0.5000, 0.5000]])
    """

    def __init__(self, dim: int | None = None):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        dim = _softmax_dim(x.ndim, "softmax") if self.dim is None else self.dim
        return F.softmax(x, dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class LogSoftmax(Module):
    """Log-softmax over `dim` (PyTorch's implicit choice, with its warning, when None).

    >>> import kiln as kn
    >>> kn.nn.LogSoftmax(dim=-1)(kn.zeros(2))
    tensor([-0.6931, -0.6931])
    """

    def __init__(self, dim: int | None = None):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        dim = _softmax_dim(x.ndim, "log_softmax") if self.dim is None else self.dim
        return F.log_softmax(x, dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class _Pointwise(Module):
    """An activation of `kn.nn.functional` with only an `inplace` flag."""

    fn = staticmethod(F.relu)

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def forward(self, x):
        return type(self).fn(x, inplace=self.inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class SELU(_Pointwise):
    """`scale * elu(x, alpha)` with SELU's fixed constants.

    >>> import kiln as kn
    >>> kn.nn.SELU()(kn.tensor([1.0]))
    tensor([1.0507])
    """

    fn = staticmethod(F.selu)


class Hardswish(_Pointwise):
    """`x * hardsigmoid(x)`.

    >>> import kiln as kn
    >>> kn.nn.Hardswish()(kn.tensor([1.5]))
    tensor([1.1250])
    """

    fn = staticmethod(F.hardswish)

    def extra_repr(self) -> str:
        return ""  # PyTorch's prints no inplace flag for this one


class Hardsigmoid(_Pointwise):
    """`clip(x / 6 + 1 / 2, 0, 1)`.

    >>> import kiln as kn
    >>> kn.nn.Hardsigmoid()(kn.tensor([1.5]))
    tensor([0.7500])
    """

    fn = staticmethod(F.hardsigmoid)

    def extra_repr(self) -> str:
        return ""  # PyTorch's prints no inplace flag for this one


class Mish(_Pointwise):
    """`x * tanh(softplus(x))`.

    >>> import kiln as kn
    >>> kn.nn.Mish()(kn.tensor([1.0]))
    tensor([0.8651])
    """

    fn = staticmethod(F.mish)


class CELU(Module):
    """`x` where positive, else `alpha * (exp(x / alpha) - 1)`.

    >>> import kiln as kn
    >>> kn.nn.CELU(2.0)(kn.tensor([-1.0]))
    tensor([-0.7869])
    """

    def __init__(self, alpha: float = 1.0, inplace: bool = False):
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, x):
        return F.celu(x, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}" + _inplace(self)


class Hardtanh(Module):
    """`x` limited to [min_val, max_val].

    >>> import kiln as kn
    >>> kn.nn.Hardtanh(-2.0, 2.0)(kn.tensor([-3.0, 1.0]))
    tensor([-2.,  1.])
    """

    def __init__(
        self,
        min_val: float = -1.0,
        max_val: float = 1.0,
        inplace: bool = False,
        min_value: float | None = None,
        max_value: float | None = None,
    ):
        super().__init__()
        if min_value is not None or max_value is not None:
            warnings.warn(
                "keyword arguments min_value and max_value are deprecated: use min_val and "
                "max_val instead",
                DeprecationWarning,
                stacklevel=2,
            )
            min_val = min_val if min_value is None else min_value
            max_val = max_val if max_value is None else max_value
        if max_val < min_val:
            raise ArgumentError("min_val cannot be greater than max_val")
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace

    def forward(self, x):
        return F.hardtanh(x, self.min_val, self.max_val, self.inplace)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}" + _inplace(self)


class ReLU6(Hardtanh):
    """`min(max(x, 0), 6)`: a Hardtanh(0, 6), as PyTorch's.

    >>> import kiln as kn
    >>> kn.nn.ReLU6()(kn.tensor([-1.0, 7.0]))
    tensor([0., 6.])
    """

    def __init__(self, inplace: bool = False):
        super().__init__(0.0, 6.0, inplace)

    def forward(self, x):
        return F.relu6(x, inplace=self.inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class Softsign(Module):
    """`x / (1 + |x|)`.

    >>> import kiln as kn
    >>> kn.nn.Softsign()(kn.tensor([3.0]))
    tensor([0.7500])
    """

    def forward(self, x):
        return F.softsign(x)


class LogSigmoid(Module):
    """`log(sigmoid(x))`.

    >>> import kiln as kn
    >>> kn.nn.LogSigmoid()(kn.tensor([0.0]))
    tensor([-0.6931])
    """

    def forward(self, x):
        return F.logsigmoid(x)


class Softmin(Module):
    """Softmin over `dim` (PyTorch's implicit choice, with its warning, when None).

    >>> import kiln as kn
    >>> kn.nn.Softmin(dim=0)(kn.tensor([0.0, 0.0]))
    tensor([0.5000, 0.5000])
    """

    def __init__(self, dim: int | None = None):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        dim = _softmax_dim(x.ndim, "softmin") if self.dim is None else self.dim
        return F.softmin(x, dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class GLU(Module):
    """The gated linear unit over `dim`: first half times the sigmoid of the second.

    >>> import kiln as kn
    >>> kn.nn.GLU()(kn.tensor([2.0, 0.0]))
    tensor([1.])
    """

    def __init__(self, dim: int = -1):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return F.glu(x, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Threshold(Module):
    """`x` where `x > threshold`, else `value`.

    >>> import kiln as kn
    >>> kn.nn.Threshold(0.5, -1.0)(kn.tensor([0.0, 1.0]))
    tensor([-1.,  1.])
    """

    def __init__(self, threshold: float, value: float, inplace: bool = False):
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, x):
        return F.threshold(x, self.threshold, self.value, self.inplace)

    def extra_repr(self) -> str:
        return f"threshold={self.threshold}, value={self.value}" + _inplace(self)


class _Shrink(Module):
    fn = staticmethod(F.hardshrink)

    def __init__(self, lambd: float = 0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, x):
        return type(self).fn(x, self.lambd)

    def extra_repr(self) -> str:
        return f"{self.lambd}"


class Hardshrink(_Shrink):
    """`x` where `|x| > lambd`, else 0.

    >>> import kiln as kn
    >>> kn.nn.Hardshrink()(kn.tensor([0.2, 1.0]))
    tensor([0., 1.])
    """

    fn = staticmethod(F.hardshrink)


class Softshrink(_Shrink):
    """`x` moved `lambd` towards 0, and 0 within `lambd` of it.

    >>> import kiln as kn
    >>> kn.nn.Softshrink()(kn.tensor([0.2, 1.0]))
    tensor([0.0000, 0.5000])
    """

    fn = staticmethod(F.softshrink)


class Tanhshrink(Module):
    """`x - tanh(x)`.

    >>> import kiln as kn
    >>> kn.nn.Tanhshrink()(kn.zeros(1))
    tensor([0.])
    """

    def forward(self, x):
        return F.tanhshrink(x)


class PReLU(Module):
    """`x` where positive, else `weight * x`, with `num_parameters` learned slopes (1, or
    one per channel) initialized to `init`, as PyTorch's `PReLU`.

    >>> import kiln as kn
    >>> kn.nn.PReLU()(kn.tensor([-2.0, 1.0]))
    tensor([-0.5000,  1.0000], grad_fn=<WhereBackward0>)
    """

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device=None, dtype=None):
        super().__init__()
        self.num_parameters = num_parameters
        dtype = dt.as_dtype(dtype or dt.DEFAULT_FLOAT)
        self.weight = Parameter(np.full((num_parameters,), init, dtype))
        if device is not None:
            self.to(device)

    def forward(self, x):
        return F.prelu(x, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


class RReLU(Module):
    """Leaky ReLU with a random slope in [lower, upper] per element while training, and
    their mean in eval mode.

    >>> import kiln as kn
    >>> kn.nn.RReLU(0.1, 0.3).eval()(kn.tensor([-1.0, 1.0]))
    tensor([-0.2000,  1.0000])
    """

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3, inplace: bool = False):
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, x):
        return F.rrelu(x, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"lower={self.lower}, upper={self.upper}" + _inplace(self)
