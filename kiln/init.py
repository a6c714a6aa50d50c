"""Initializers: callables `(shape, dtype) -> np.ndarray`, with PyTorch's formulas.

Each call draws from a NumPy generator seeded from kiln's seed stream at call time, so
`kn.manual_seed(s)` makes every initial value reproducible.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from . import dtypes as dt
from .errors import ArgumentError
from .ops.random import host_seed

__all__ = [
    "calculate_gain",
    "constant",
    "fan_in_and_fan_out",
    "glorot_normal",
    "glorot_uniform",
    "he_normal",
    "he_uniform",
    "kaiming_normal",
    "kaiming_uniform",
    "normal",
    "ones",
    "orthogonal",
    "uniform",
    "xavier_normal",
    "xavier_uniform",
    "zeros",
]

Initializer = Callable[[tuple, object], np.ndarray]


def _rng() -> np.random.Generator:
    return np.random.default_rng(host_seed())


def _finish(values, shape, dtype) -> np.ndarray:
    dtype = dt.DEFAULT_FLOAT if dtype is None else dt.as_dtype(dtype)
    return np.asarray(values).astype(dtype, copy=False).reshape(tuple(shape))


def fan_in_and_fan_out(shape) -> tuple[int, int]:
    """PyTorch's `_calculate_fan_in_and_fan_out`: a weight is (out, in, *receptive field).

    >>> fan_in_and_fan_out((10, 784)), fan_in_and_fan_out((16, 3, 5, 5))
    ((784, 10), (75, 400))
    """
    shape = tuple(shape)
    if len(shape) < 2:
        raise ArgumentError(
            f"Fan in and fan out can not be computed for tensor with fewer than 2 dimensions "
            f"(shape {shape})"
        )
    receptive = math.prod(shape[2:])
    return shape[1] * receptive, shape[0] * receptive


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The recommended gain for a nonlinearity, as PyTorch's `calculate_gain` (the int 1 for
    the linear ones and sigmoid, as there).

    >>> round(calculate_gain("relu"), 4), round(calculate_gain("tanh"), 4), calculate_gain("linear")
    (1.4142, 1.6667, 1)
    """
    linear = (
        "linear",
        "conv1d",
        "conv2d",
        "conv3d",
        "conv_transpose1d",
        "conv_transpose2d",
        "conv_transpose3d",
        "sigmoid",
    )
    if nonlinearity in linear:
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else param
        if isinstance(slope, bool) or not isinstance(slope, (int, float)):
            raise ArgumentError(f"negative_slope {slope} not a valid number")
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ArgumentError(f"Unsupported nonlinearity {nonlinearity}")


def _fan(shape, mode: str) -> int:
    if mode not in ("fan_in", "fan_out"):
        raise ArgumentError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = fan_in_and_fan_out(shape)
    return fan_in if mode == "fan_in" else fan_out


# -- plain initializers ------------------------------------------------------------------------


def zeros() -> Initializer:
    """Zeros.

    >>> zeros()((2,), "float32")
    array([0., 0.], dtype=float32)
    """
    return constant(0.0)


def ones() -> Initializer:
    """Ones.

    >>> ones()((2,), "float32")
    array([1., 1.], dtype=float32)
    """
    return constant(1.0)


def constant(value: float) -> Initializer:
    """Every element `value`.

    >>> constant(0.5)((1, 2), "float32")
    array([[0.5, 0.5]], dtype=float32)
    """

    def init(shape, dtype=None):
        return _finish(np.full(tuple(shape), value), shape, dtype)

    return init


def normal(mean: float = 0.0, std: float = 1.0) -> Initializer:
    """Samples of N(mean, std²).

    >>> import kiln as kn
    >>> kn.manual_seed(0)
    >>> w = kn.init.normal(std=0.01)((784, 10), kn.float32)
    >>> w.shape, w.dtype, bool(abs(w.std() - 0.01) < 1e-3)
    ((784, 10), dtype('float32'), True)
    """
    if std < 0:
        raise ArgumentError(f"normal: std must be non-negative, got {std}")

    def init(shape, dtype=None):
        return _finish(_rng().normal(mean, std, tuple(shape)), shape, dtype)

    return init


def uniform(low: float = 0.0, high: float = 1.0) -> Initializer:
    """Samples of U(low, high).

    >>> w = uniform(-1.0, 1.0)((1000,), "float64")
    >>> bool(w.min() >= -1.0 and w.max() < 1.0)
    True
    """
    if high < low:
        raise ArgumentError(f"uniform: high ({high}) must not be below low ({low})")

    def init(shape, dtype=None):
        return _finish(_rng().uniform(low, high, tuple(shape)), shape, dtype)

    return init


# -- scaled by fan -----------------------------------------------------------------------------


def xavier_uniform(gain: float = 1.0) -> Initializer:
    """U(-a, a) with `a = gain * sqrt(6 / (fan_in + fan_out))` (Glorot and Bengio, 2010).

    >>> w = xavier_uniform()((300, 500), "float64")
    >>> bool(abs(w.std() - (2 / 800) ** 0.5) < 1e-3)
    True
    """

    def init(shape, dtype=None):
        fan_in, fan_out = fan_in_and_fan_out(shape)
        bound = math.sqrt(3.0) * gain * math.sqrt(2.0 / float(fan_in + fan_out))
        return _finish(_rng().uniform(-bound, bound, tuple(shape)), shape, dtype)

    return init


def xavier_normal(gain: float = 1.0) -> Initializer:
    """N(0, std²) with `std = gain * sqrt(2 / (fan_in + fan_out))`.

    >>> w = xavier_normal()((300, 500), "float64")
    >>> bool(abs(w.std() - (2 / 800) ** 0.5) < 1e-3)
    True
    """

    def init(shape, dtype=None):
        fan_in, fan_out = fan_in_and_fan_out(shape)
        std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
        return _finish(_rng().normal(0.0, std, tuple(shape)), shape, dtype)

    return init


def kaiming_uniform(
    a: float = 0.0, nonlinearity: str = "leaky_relu", mode: str = "fan_in"
) -> Initializer:
    """U(-b, b) with `b = gain * sqrt(3 / fan)` (He et al., 2015), as PyTorch's
    `kaiming_uniform_`: `a` is the negative slope of a leaky ReLU (0 gives ReLU's gain).

    >>> w = kaiming_uniform()((256, 1000), "float64")
    >>> bool(abs(w.std() - (2 / 1000) ** 0.5) < 1e-3)
    True
    """

    def init(shape, dtype=None):
        gain = calculate_gain(nonlinearity, a)
        fan = _fan(shape, mode)  # 0 only for a zero-element shape: nothing to draw
        bound = math.sqrt(3.0) * gain / math.sqrt(fan) if fan else 0.0
        return _finish(_rng().uniform(-bound, bound, tuple(shape)), shape, dtype)

    return init


def kaiming_normal(
    a: float = 0.0, nonlinearity: str = "leaky_relu", mode: str = "fan_in"
) -> Initializer:
    """N(0, std²) with `std = gain / sqrt(fan)`, as PyTorch's `kaiming_normal_`.

    >>> w = kaiming_normal(nonlinearity="relu")((256, 1000), "float64")
    >>> bool(abs(w.std() - (2 / 1000) ** 0.5) < 1e-3)
    True
    """

    def init(shape, dtype=None):
        std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(shape, mode))
        return _finish(_rng().normal(0.0, std, tuple(shape)), shape, dtype)

    return init


def orthogonal(gain: float = 1.0) -> Initializer:
    """`gain` times a (semi-)orthogonal matrix, from the QR factors of a normal sample with
    the signs of R's diagonal taken into Q (so it is uniform over such matrices), as PyTorch's
    `orthogonal_`; dims past the first are flattened into columns.

    >>> w = orthogonal()((4, 2, 3), "float64").reshape(4, 6)
    >>> bool(np.allclose(w @ w.T, np.eye(4)))
    True
    """

    def init(shape, dtype=None):
        shape = tuple(shape)
        if len(shape) < 2:
            raise ArgumentError("Only tensors with 2 or more dimensions are supported")
        rows = shape[0]
        cols = math.prod(shape) // rows if rows else 0
        flat = _rng().normal(0.0, 1.0, (rows, cols))
        if rows < cols:
            flat = flat.T
        q, r = np.linalg.qr(flat)
        q = q * np.sign(np.diag(r))
        if rows < cols:
            q = q.T
        return _finish(gain * q, shape, dtype)

    return init


glorot_uniform = xavier_uniform
glorot_normal = xavier_normal
he_uniform = kaiming_uniform
he_normal = kaiming_normal
