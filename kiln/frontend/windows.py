"""`kn.signal.windows`: PyTorch's `torch.signal.windows` window functions (`bartlett`,
`blackman`, `cosine`, `exponential`, `gaussian`, `general_cosine`, `general_hamming`,
`hamming`, `hann`, `kaiser`, `nuttall`), each a float32 or float64 tensor of length M built as
PyTorch builds it (a `linspace` and elementwise ops on it, so `requires_grad=True` gives a
window with a gradient history, as PyTorch's). `sym=True` (the default) gives the symmetric
window of filter design; `sym=False` the periodic one of spectral analysis.
"""

from __future__ import annotations

import collections.abc
import math

from .. import dtypes as dt
from ..array_types import strided

__all__ = [
    "bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine",
    "general_hamming", "hamming", "hann", "kaiser", "nuttall",
]  # fmt: skip


def _kn():
    import kiln

    return kiln


def _check(name: str, M: int, dtype, layout):
    """dtype (the default dtype for None) after PyTorch's checks of a window's arguments."""
    kn = _kn()
    dtype = dt.public(dt.get_default_dtype()) if dtype is None else dtype
    if M < 0:
        raise ValueError(f"{name} requires non-negative window length, got M={M}")
    if layout is not None and layout is not strided:
        raise ValueError(f"{name} is implemented for strided tensors only, got: {layout}")
    if dtype not in (kn.float32, kn.float64):
        raise ValueError(f"{name} expects float32 or float64 dtypes, got: {dtype}")
    return dtype


def _trivial(M: int, dtype, device, requires_grad):
    """The window of length 0 or 1 (empty; [1.]), or None for a longer one."""
    kn = _kn()
    if M == 0:
        return kn.empty((0,), dtype=dtype, device=device, requires_grad=requires_grad)
    if M == 1:
        return kn.ones((1,), dtype=dtype, device=device, requires_grad=requires_grad)
    return None


def exponential(
    M, *, center=None, tau=1.0, sym=True, dtype=None, layout=strided, device=None,
    requires_grad=False,
):  # fmt: skip
    """The exponential (Poisson) window exp(-|n - center| / tau) of length M.

    >>> import kiln as kn
    >>> kn.signal.windows.exponential(5, tau=2.0)
    tensor([0.3679, 0.6065, 1.0000, 0.6065, 0.3679])
    """
    kn = _kn()
    dtype = _check("exponential", M, dtype, layout)
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")
    if M == 0:
        return kn.empty((0,), dtype=dtype, device=device, requires_grad=requires_grad)
    if center is None:
        center = (M if not sym and M > 1 else M - 1) / 2.0
    constant = 1 / tau
    k = kn.linspace(
        -center * constant, (-center + (M - 1)) * constant, M, dtype=dtype,
        device=device or "cpu", requires_grad=requires_grad,
    )  # fmt: skip
    return kn.exp(-kn.abs(k))


def cosine(M, *, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    """The cosine (sine) window sin(π (n + 1/2) / M) of length M.

    >>> import kiln as kn
    >>> kn.signal.windows.cosine(4)
    tensor([0.3827, 0.9239, 0.9239, 0.3827])
    """
    kn = _kn()
    dtype = _check("cosine", M, dtype, layout)
    if M == 0:
        return kn.empty((0,), dtype=dtype, device=device, requires_grad=requires_grad)
    constant = math.pi / (M + 1 if not sym and M > 1 else M)
    k = kn.linspace(
        0.5 * constant, (0.5 + (M - 1)) * constant, M, dtype=dtype, device=device or "cpu",
        requires_grad=requires_grad,
    )  # fmt: skip
    return kn.sin(k)


def gaussian(M, *, std=1.0, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    """The Gaussian window exp(-(n - (M-1)/2)² / (2 std²)) of length M.

    >>> import kiln as kn
    >>> kn.signal.windows.gaussian(5, std=1.0)
    tensor([0.1353, 0.6065, 1.0000, 0.6065, 0.1353])
    """
    kn = _kn()
    dtype = _check("gaussian", M, dtype, layout)
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")
    if M == 0:
        return kn.empty((0,), dtype=dtype, device=device, requires_grad=requires_grad)
    start = -(M if not sym and M > 1 else M - 1) / 2.0
    constant = 1 / (std * math.sqrt(2))
    k = kn.linspace(
        start * constant, (start + (M - 1)) * constant, M, dtype=dtype,
        device=device or "cpu", requires_grad=requires_grad,
    )  # fmt: skip
    return kn.exp(-(k**2))


def kaiser(M, *, beta=12.0, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    """The Kaiser window I0(β sqrt(1 - (2n/(M-1) - 1)²)) / I0(β) of length M.

    >>> import kiln as kn
    >>> kn.signal.windows.kaiser(5, beta=2.0)
    tensor([0.4387, 0.8348, 1.0000, 0.8348, 0.4387])
    """
    kn = _kn()
    dtype = _check("kaiser", M, dtype, layout)
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")
    small = _trivial(M, dtype, device or "cpu", requires_grad)
    if small is not None:
        return small
    b = kn.tensor(beta, dtype=dtype, device=device or "cpu")
    start = -b
    constant = 2.0 * b / (M if not sym else M - 1)
    end = kn.minimum(b, start + (M - 1) * constant)
    k = kn.linspace(start, end, M, dtype=dtype, device=device or "cpu", requires_grad=requires_grad)
    return kn.i0(kn.sqrt(b * b - kn.pow(k, 2))) / kn.i0(b)


def general_cosine(M, *, a, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    """The generalized cosine window Σᵢ (-1)ⁱ aᵢ cos(2π i n / (M-1)) of length M (a: its
    coefficients).

    >>> import kiln as kn
    >>> kn.signal.windows.general_cosine(5, a=[0.5, 0.5])
    tensor([0.0000, 0.5000, 1.0000, 0.5000, 0.0000])
    """
    kn = _kn()
    dtype = _check("general_cosine", M, dtype, layout)
    small = _trivial(M, dtype, device or "cpu", requires_grad)
    if small is not None:
        return small
    if not isinstance(a, collections.abc.Iterable):
        raise TypeError("Coefficients must be a list/tuple")
    if not a:
        raise ValueError("Coefficients cannot be empty")
    device = device or "cpu"
    constant = 2 * math.pi / (M if not sym else M - 1)
    k = kn.linspace(
        0, (M - 1) * constant, M, dtype=dtype, device=device, requires_grad=requires_grad
    )
    a_i = kn.tensor(
        [(-1) ** i * w for i, w in enumerate(a)], dtype=dtype, device=device,
        requires_grad=requires_grad,
    )  # fmt: skip
    i = kn.arange(a_i.shape[0], dtype=dtype, device=device, requires_grad=requires_grad)
    return (a_i.unsqueeze(-1) * kn.cos(i.unsqueeze(-1) * k)).sum(0)


def general_hamming(
    M, *, alpha=0.54, sym=True, dtype=None, layout=strided, device=None, requires_grad=False
):
    """The generalized Hamming window α - (1 - α) cos(2π n / (M-1)) of length M.

    >>> import kiln as kn
    >>> kn.signal.windows.general_hamming(5, alpha=0.5)
    tensor([0.0000, 0.5000, 1.0000, 0.5000, 0.0000])
    """
    return general_cosine(
        M, a=[alpha, 1.0 - alpha], sym=sym, dtype=dtype, layout=layout, device=device,
        requires_grad=requires_grad,
    )  # fmt: skip


def hamming(M, *, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    """The Hamming window 0.54 - 0.46 cos(2π n / (M-1)) of length M.

    >>> import kiln as kn
    >>> kn.signal.windows.hamming(5)
    tensor([0.0800, 0.5400, 1.0000, 0.5400, 0.0800])
    """
    return general_hamming(
        M, sym=sym, dtype=dtype, layout=layout, device=device, requires_grad=requires_grad
    )


def hann(M, *, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    """The Hann window 0.5 - 0.5 cos(2π n / (M-1)) of length M.

    >>> import kiln as kn
    >>> kn.signal.windows.hann(5, sym=False)
    tensor([0.0000, 0.3455, 0.9045, 0.9045, 0.3455])
    """
    return general_hamming(
        M, alpha=0.5, sym=sym, dtype=dtype, layout=layout, device=device,
        requires_grad=requires_grad,
    )  # fmt: skip


def blackman(M, *, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    """The Blackman window 0.42 - 0.5 cos(2π n / (M-1)) + 0.08 cos(4π n / (M-1)) of length M.

    >>> import kiln as kn
    >>> kn.signal.windows.blackman(5)
    tensor([-1.4901e-08,  3.4000e-01,  1.0000e+00,  3.4000e-01, -1.4901e-08])
    """
    dtype = _check("blackman", M, dtype, layout)
    return general_cosine(
        M, a=[0.42, 0.5, 0.08], sym=sym, dtype=dtype, layout=layout, device=device,
        requires_grad=requires_grad,
    )  # fmt: skip


def bartlett(M, *, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    """The Bartlett (triangular) window 1 - |2n/(M-1) - 1| of length M.

    >>> import kiln as kn
    >>> kn.signal.windows.bartlett(5)
    tensor([0.0000, 0.5000, 1.0000, 0.5000, 0.0000])
    """
    kn = _kn()
    dtype = _check("bartlett", M, dtype, layout)
    small = _trivial(M, dtype, device or "cpu", requires_grad)
    if small is not None:
        return small
    constant = 2 / (M if not sym else M - 1)
    k = kn.linspace(
        -1, -1 + (M - 1) * constant, M, dtype=dtype, device=device or "cpu",
        requires_grad=requires_grad,
    )  # fmt: skip
    return 1 - kn.abs(k)


def nuttall(M, *, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    """The minimum 4-term Blackman-Harris window of Nuttall, of length M.

    >>> import kiln as kn
    >>> kn.signal.windows.nuttall(5)
    tensor([3.6280e-04, 2.2698e-01, 1.0000e+00, 2.2698e-01, 3.6280e-04])
    """
    return general_cosine(
        M, a=[0.3635819, 0.4891775, 0.1365995, 0.0106411], sym=sym, dtype=dtype,
        layout=layout, device=device, requires_grad=requires_grad,
    )  # fmt: skip
