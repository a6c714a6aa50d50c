"""`kn.nn.init`: PyTorch's in-place initializers (`kaiming_uniform_(w)` …), on Parameters and
Tensors, drawing from kiln's seeded stream (`kn.manual_seed`) with the formulas of `kn.init`.

Each fills its tensor without recording a gradient (as PyTorch's, under `no_grad`) and
returns it. On a Parameter the new value also reaches every graph Variable made from it.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from .. import init as _init
from ..dtypes import as_dtype, python_float, python_int
from ..eager import Tensor, no_grad
from ..eager.tensor import make
from ..errors import ArgumentError, ArgumentTypeError, UsageError
from ..frontend.random import uniform_bounds
from ..frontend.torch_namespace import check_normal
from ..generator import default_generator
from ..init import _rng
from ..ops.random import seeds_from
from .parameter import ModuleValue

__all__ = [
    "calculate_gain",
    "constant_",
    "dirac_",
    "eye_",
    "kaiming_normal_",
    "kaiming_uniform_",
    "normal_",
    "ones_",
    "orthogonal_",
    "sparse_",
    "trunc_normal_",
    "uniform_",
    "xavier_normal_",
    "xavier_uniform_",
    "zeros_",
]

calculate_gain = _init.calculate_gain


def _calculate_fan_in_and_fan_out(tensor) -> tuple[int, int]:
    """(fan_in, fan_out) of a weight shaped (out, in, *receptive field), as PyTorch's.

    >>> import kiln as kn
    >>> kn.nn.init._calculate_fan_in_and_fan_out(kn.zeros(16, 3, 5, 5))
    (75, 400)
    """
    return _init.fan_in_and_fan_out(tuple(tensor.shape))


def _calculate_correct_fan(tensor, mode: str) -> int:
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ArgumentError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def _fill(tensor, initializer, generator=None):
    """Sets `tensor` to `initializer(shape, dtype)`, its draws seeded by `generator` (a
    `kn.Generator`), else by the global one."""
    if not isinstance(tensor, Tensor):
        raise ArgumentTypeError(
            f"expected a kn.Tensor or kn.nn.Parameter, got {type(tensor).__name__}"
        )
    # the global stream is `default_generator`, as PyTorch's: a generator seeded s draws what
    # `kn.manual_seed(s)` then draws, and a draw moves the global stream on
    with seeds_from(default_generator if generator is None else generator):
        array = initializer(tuple(tensor.shape), tensor.dtype)
    if isinstance(tensor, ModuleValue):
        tensor.assign(array)
        return tensor
    with no_grad():
        tensor.copy_(make(np.asarray(array)).to(tensor.device))
    return tensor


def _empty(tensor) -> bool:
    if 0 in tuple(tensor.shape):
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=3)
        return True
    return False


def _drawn_into(tensor) -> None:
    """PyTorch's refusal of a random fill of a tensor that is not floating or complex (its
    initializers draw with `uniform_` or `normal_`, which have no integer kernel)."""
    if isinstance(tensor, Tensor):
        check_normal(as_dtype(tensor.dtype), 1.0)


def uniform_(tensor, a: float = 0.0, b: float = 1.0, generator=None):
    """Fills with samples of U(a, b).

    >>> import kiln as kn
    >>> w = kn.nn.init.uniform_(kn.zeros(1000), -0.5, 0.5)
    >>> bool(w.min() >= -0.5 and w.max() < 0.5)
    True
    """
    if isinstance(tensor, Tensor):
        uniform_bounds(tensor.dtype, a, b)
    return _fill(tensor, _init.uniform(a, b), generator)


def normal_(tensor, mean: float = 0.0, std: float = 1.0, generator=None):
    """Fills with samples of N(mean, std²).

    >>> import kiln as kn
    >>> w = kn.nn.init.normal_(kn.zeros(10000), std=0.02)
    >>> round(float(w.std()), 2)
    0.02
    """
    if isinstance(tensor, Tensor):
        check_normal(as_dtype(tensor.dtype), std)
    return _fill(tensor, _init.normal(mean, std), generator)


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """Fills with samples of N(mean, std²) redrawn until they lie in [a, b].

    >>> import kiln as kn
    >>> w = kn.nn.init.trunc_normal_(kn.zeros(1000), std=1.0, a=-1.0, b=1.0)
    >>> bool(w.abs().max() <= 1.0)
    True
    """
    _drawn_into(tensor)
    if a > b:  # PyTorch's uniform_ draw of the bounds' probabilities refuses it
        raise UsageError(f"trunc_normal_: a ({a}) must not be above b ({b})")
    if a == b:  # every value is the bound, as PyTorch's clamp makes it
        return _fill(tensor, _init.constant(a))

    def draw(shape, dtype):
        values = _init.normal(mean, std)(shape, np.float64)
        bad = (values < a) | (values > b)
        while bad.any():  # the rejection keeps the truncated normal's law
            values[bad] = _init.normal(mean, std)((int(bad.sum()),), np.float64)
            bad = (values < a) | (values > b)
        return values.astype(dtype)

    return _fill(tensor, draw, generator)


def constant_(tensor, val: float):
    """Fills with `val`.

    >>> import kiln as kn
    >>> kn.nn.init.constant_(kn.zeros(2), 0.5)
    tensor([0.5000, 0.5000])
    """
    if isinstance(tensor, Tensor) and type(val) in (int, float, complex):
        dtype = as_dtype(tensor.dtype)  # PyTorch's fill_: a value the dtype cannot hold raises
        if type(val) is int and dtype.kind in "iub":
            python_int(val, dtype, "fill_", tensor)
        else:
            python_float(float(val) if type(val) is int else val, dtype, "fill_", tensor)
    return _fill(tensor, _init.constant(val))


def zeros_(tensor):
    """Fills with zeros.

    >>> import kiln as kn
    >>> kn.nn.init.zeros_(kn.ones(2))
    tensor([0., 0.])
    """
    return constant_(tensor, 0.0)


def ones_(tensor):
    """Fills with ones.

    >>> import kiln as kn
    >>> kn.nn.init.ones_(kn.zeros(2))
    tensor([1., 1.])
    """
    return constant_(tensor, 1.0)


def eye_(tensor):
    """Fills a 2-D tensor with the identity matrix.

    >>> import kiln as kn
    >>> kn.nn.init.eye_(kn.zeros(2, 3))
    tensor([[1., 0., 0.],
            [0., 1., 0.]])
    """
    if tensor.ndim != 2:
        raise ArgumentError("Only tensors with 2 dimensions are supported")
    return _fill(tensor, lambda shape, dtype: np.eye(*shape, dtype=dtype))


def xavier_uniform_(tensor, gain: float = 1.0, generator=None):
    """U(-a, a) with `a = gain * sqrt(6 / (fan_in + fan_out))` (Glorot and Bengio, 2010).

    >>> import kiln as kn
    >>> w = kn.nn.init.xavier_uniform_(kn.zeros(300, 500))
    >>> round(float(w.abs().max()), 2)  # sqrt(6 / 800)
    0.09
    """
    _calculate_fan_in_and_fan_out(tensor)  # (a 1-D tensor is refused first)
    _drawn_into(tensor)
    return _fill(tensor, _init.xavier_uniform(gain), generator)


def xavier_normal_(tensor, gain: float = 1.0, generator=None):
    """N(0, std²) with `std = gain * sqrt(2 / (fan_in + fan_out))`.

    >>> import kiln as kn
    >>> w = kn.nn.init.xavier_normal_(kn.zeros(300, 500))
    >>> round(float(w.std()), 2)  # sqrt(2 / 800)
    0.05
    """
    _calculate_fan_in_and_fan_out(tensor)  # (a 1-D tensor is refused first)
    _drawn_into(tensor)
    return _fill(tensor, _init.xavier_normal(gain), generator)


def kaiming_uniform_(tensor, a=0.0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """U(-b, b) with `b = gain * sqrt(3 / fan)` (He et al., 2015); `a` is a leaky ReLU's
    negative slope, `mode` picks fan_in (forward) or fan_out (backward).

    >>> import kiln as kn
    >>> w = kn.nn.init.kaiming_uniform_(kn.zeros(256, 1000), nonlinearity="relu")
    >>> round(float(w.abs().max()), 3)  # sqrt(2) * sqrt(3 / 1000)
    0.077
    """
    if _empty(tensor):
        return tensor
    _calculate_correct_fan(tensor, mode)
    _drawn_into(tensor)
    return _fill(tensor, _init.kaiming_uniform(a, nonlinearity, mode.lower()), generator)


def kaiming_normal_(tensor, a=0.0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """N(0, std²) with `std = gain / sqrt(fan)` (He et al., 2015).

    >>> import kiln as kn
    >>> w = kn.nn.init.kaiming_normal_(kn.zeros(200, 1000), mode="fan_out")
    >>> round(float(w.std()), 2)  # sqrt(2 / 200)
    0.1
    """
    if _empty(tensor):
        return tensor
    _calculate_correct_fan(tensor, mode)
    _drawn_into(tensor)
    return _fill(tensor, _init.kaiming_normal(a, nonlinearity, mode.lower()), generator)


def orthogonal_(tensor, gain: float = 1.0, generator=None):
    """A (semi-)orthogonal matrix (Saxe et al., 2013) times `gain`; dims past the first are
    flattened into columns.

    >>> import kiln as kn, numpy as np
    >>> w = kn.nn.init.orthogonal_(kn.zeros(3, 5)).numpy()
    >>> np.allclose(w @ w.T, np.eye(3), atol=1e-6)
    True
    """
    if tensor.ndim < 2:
        raise ArgumentError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    _drawn_into(tensor)
    return _fill(tensor, _init.orthogonal(gain), generator)


def dirac_(tensor, groups: int = 1):
    """Fills a 3-, 4- or 5-D convolution weight with the Dirac delta: each of the first
    min(out/groups, in) output channels of every group passes its input channel through
    unchanged (a 1 at the kernel's centre), everything else 0.

    >>> import kiln as kn
    >>> w = kn.nn.init.dirac_(kn.empty(2, 2, 3))
    >>> w[:, :, 1].tolist(), float(w.sum())
    ([[1.0, 0.0], [0.0, 1.0]], 2.0)
    """
    shape = tuple(tensor.shape)
    if len(shape) not in (3, 4, 5):
        raise ArgumentError("Only tensors with 3, 4, or 5 dimensions are supported")
    if shape[0] % groups != 0:
        raise ArgumentError("dim 0 must be divisible by groups")
    per_group = shape[0] // groups

    def draw(shape, dtype):
        values = np.zeros(shape, dtype)
        centre = tuple(k // 2 for k in shape[2:])
        for g in range(groups):
            for d in range(min(per_group, shape[1])):
                values[(g * per_group + d, d, *centre)] = 1
        return values

    return _fill(tensor, draw)


def sparse_(tensor, sparsity: float, std: float = 0.01, generator=None):
    """Fills a 2-D tensor with N(0, std²) samples, then zeros ceil(sparsity * rows) randomly
    chosen entries of every column (Martens, 2010).

    >>> import kiln as kn
    >>> w = kn.nn.init.sparse_(kn.empty(10, 4), sparsity=0.3)
    >>> (w == 0).sum(0).tolist()
    [3, 3, 3, 3]
    """
    if tensor.ndim != 2:
        raise ArgumentError("Only tensors with 2 dimensions are supported")
    rows, cols = tuple(tensor.shape)
    zeros = int(math.ceil(sparsity * rows))
    check_normal(as_dtype(tensor.dtype), std)

    def draw(shape, dtype):
        values = _init.normal(0.0, std)(shape, dtype)
        rng = _rng()
        for col in range(cols):
            values[rng.permutation(rows)[:zeros], col] = 0
        return values

    return _fill(tensor, draw, generator)


def _deprecated(name: str):
    """PyTorch's old name `name` of `name_`, which warns and calls it."""
    target = globals()[name + "_"]

    def old(*args, **kwargs):
        warnings.warn(
            f"`nn.init.{name}` is now deprecated in favor of `nn.init.{name}_`.",
            FutureWarning,
            stacklevel=2,
        )
        return target(*args, **kwargs)

    old.__name__ = old.__qualname__ = name
    old.__doc__ = f"Deprecated: warns, then calls `{name}_`."
    return old


for _name in ("uniform", "normal", "constant", "eye", "dirac", "xavier_uniform",
              "xavier_normal", "kaiming_uniform", "kaiming_normal", "orthogonal",
              "sparse"):  # fmt: skip
    globals()[_name] = _deprecated(_name)
del _name
