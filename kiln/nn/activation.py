"""Activation modules, as PyTorch's: each calls its `kn.nn.functional` form."""

from __future__ import annotations

import warnings

from . import functional as F
from .module import Module

__all__ = [
    "ELU",
    "GELU",
    "LeakyReLU",
    "LogSoftmax",
    "ReLU",
    "SiLU",
    "Sigmoid",
    "Softmax",
    "Softplus",
    "Tanh",
]


class ReLU(Module):
    """`max(x, 0)`. (`inplace` is accepted; kiln computes a new value.)

    >>> import kiln as kn
    >>> kn.nn.ReLU()(kn.tensor([-1.0, 2.0]))
    tensor([0., 2.])
    """

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def forward(self, x):
        return F.relu(x)


class GELU(Module):
    """GELU, exact (through erf) or with `approximate="tanh"`.

    >>> import kiln as kn
    >>> kn.nn.GELU()(kn.tensor([0.0, 1.0]))
    tensor([0.0000, 0.8413])
    """

    def __init__(self, approximate: str = "none"):
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise ValueError(f"GELU: approximate must be 'none' or 'tanh', got {approximate!r}")
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
        return F.silu(x)


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
        return F.leaky_relu(x, self.negative_slope)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}"


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
        return F.elu(x, self.alpha)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}"


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
