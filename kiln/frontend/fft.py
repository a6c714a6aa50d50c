"""`kn.fft`: PyTorch's `torch.fft` functions (their arguments `n`/`s`, `dim` and `norm`, their
dtypes and gradients), built on three primitives (kiln/ops/fft.py). A signal is cut or padded
with zeros to `n` points along a transformed dim before the transform, as PyTorch's."""

from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from .. import shapes as sh
from ..errors import (
    ArgumentTypeError,
    DTypeMismatchError,
    IndexOutOfRangeError,
    ShapeError,
    UnknownModeError,
    UnsupportedDTypeError,
    UsageError,
    call_error,
)
from . import math as m
from . import torch_shape as ts
from .complex_numbers import conj
from .core import call, lift
from .fft_layouts import laid_out_as_torch
from .out import factory_out, takes_out
from .result_layouts import c_ordered

__all__ = [
    "fft", "ifft", "rfft", "irfft", "fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn", "rfftn",
    "irfftn", "hfft", "ihfft", "hfft2", "ihfft2", "hfftn", "ihfftn", "fftfreq", "rfftfreq",
    "fftshift", "ifftshift",
]  # fmt: skip

_SCALE = {  # norm -> (the forward transform's scale, the inverse's)
    None: ("none", "n"), "backward": ("none", "n"), "forward": ("n", "none"),
    "ortho": ("sqrt", "sqrt"),
}  # fmt: skip
_DUAL = {None: "forward", "backward": "forward", "forward": "backward", "ortho": "ortho"}


def _scale(norm, forward: bool, fn: str) -> str:
    if norm not in _SCALE:  # (PyTorch's RuntimeError)
        raise UnknownModeError(f'{fn}: Invalid normalization mode: "{norm}"')
    return _SCALE[norm][0 if forward else 1]


def _input(input, fn: str, real: bool = False):  # noqa: A002
    """`input` lifted, in the dtype the transform computes in: complex (or, for `real`, float)
    of its precision; integers and bools in the default float's."""
    return _cast(lift(input)[0], fn, real)


def _cast(x, fn: str, real: bool = False):
    """x (lifted) in the dtype its transform computes in (`_input`)."""
    d = x.dtype
    if d in (dt.float16, dt.bfloat16) or dt.is_storage_only(d):
        raise call_error(UnsupportedDTypeError, f"{fn}: Unsupported dtype {d}", fn, x)
    if real:
        if d.kind == "c":
            raise call_error(  # (PyTorch's RuntimeError)
                DTypeMismatchError, f"{fn} expects a real input tensor, but got {d}", fn, x
            )  # fmt: skip
        return x if d in (dt.float32, dt.float64) else m.cast(x, dt.DEFAULT_FLOAT)
    return x if d.kind == "c" else m.cast(x, dt.to_complex(dt.to_float(d)))


def _axes(x, dim, s, fn: str) -> tuple:
    """The transformed dims (PyTorch's defaults: all, or the last len(s)); `s` already a
    tuple (`_shape_arg`)."""
    if dim is None:
        if s is None:
            return tuple(range(x.ndim))
        return tuple(range(x.ndim - len(s), x.ndim))
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    if dims and x.ndim == 0:  # (PyTorch's IndexError)
        raise IndexOutOfRangeError(
            f"{fn}: Dimension specified as {dims[0]} but tensor has no dimensions"
        )
    axes = tuple(sh.normalize_axis(int(d), x.ndim) for d in dims)
    if len(set(axes)) != len(axes):
        raise call_error(ShapeError, f"{fn}: dims must be unique, got {dims}", fn, x)
    if s is not None and len(s) != len(axes):
        raise call_error(
            ShapeError, f"{fn}: When given, dim and shape arguments must have the same length",
            fn, x,
        )  # fmt: skip
    return axes


def _shape_arg(s):
    """`s` as a tuple (an int, as PyTorch's, is one size)."""
    return (s,) if isinstance(s, (int, np.integer)) else s


def _resize(x, axis: int, n: int, fn: str):
    """`x` cut or padded with zeros to `n` points along `axis`."""
    have = ts.static_dim(x, axis, fn)
    if n < 1:
        raise call_error(ShapeError, f"{fn}: Invalid number of data points ({n}) specified", fn, x)
    if n == have:
        return x
    if n < have:
        spec = tuple(("slice", 0, n, 1) if k == axis else ("slice", None, None, None)
                     for k in range(x.ndim))  # fmt: skip
        return call("index", x, spec=spec)
    width = tuple((0, n - have) if k == axis else (0, 0) for k in range(x.ndim))
    return c_ordered(call("pad", x, pad_width=width, value=0.0))  # (PyTorch's pad's layout)


def _sizes(x, axes, s, fn: str):
    """`x` resized to `s` along `axes` (an entry of -1 keeps the size, which must not be 0)."""
    if s is None and getattr(getattr(x, "_data", None), "size", 0):
        return x  # (an eager tensor with elements: no dim of size 0)
    for k, a in enumerate(axes):
        n = -1 if s is None else int(s[k])
        if n == -1:
            n = ts.static_dim(x, a, fn)
            if n < 1:
                raise call_error(
                    ShapeError, f"{fn}: Invalid number of data points ({n}) specified", fn, x
                )  # fmt: skip
        else:
            x = _resize(x, a, n, fn)
    return x


def _c2c(input, s, dim, norm, forward: bool, fn: str):  # noqa: A002
    (source,) = lift(input)
    x = _cast(source, fn)
    scale = _scale(norm, forward, fn)
    s = _shape_arg(s)
    axes = _axes(x, dim, s, fn)
    resized = _sizes(x, axes, s, fn)
    if not axes:
        return resized
    out = call("fft_c2c", resized, axes=axes, forward=forward, scale=scale)
    # (laid out from the input's strides, not its cast's: PyTorch transforms a real one)
    return laid_out_as_torch(out, source if resized is x else resized, "c2c", axes)


def _r2c(input, s, dim, norm, fn: str, forward: bool = True, kind: str = "r2c"):  # noqa: A002
    (source,) = lift(input)
    x = _cast(source, fn, real=True)
    scale = _scale(norm, forward, fn)
    s = _shape_arg(s)
    axes = _axes(x, dim, s, fn)
    resized = _sizes(x, axes, s, fn)
    if not axes:
        raise call_error(ShapeError, f"{fn} must transform at least one axis", fn, x)
    out = call("fft_r2c", resized, axes=axes, scale=scale)
    return laid_out_as_torch(out, source if resized is x else resized, kind, axes)


def _c2r(input, s, dim, norm, fn: str, forward: bool = False):  # noqa: A002
    x = _input(input, fn)
    scale = _scale(norm, forward, fn)
    s = _shape_arg(s)
    axes = _axes(x, dim, s, fn)
    if not axes:
        raise call_error(ShapeError, f"{fn} must transform at least one axis", fn, x)
    last = axes[-1]
    if s is not None and s[-1] != -1:
        n = int(s[-1])
    else:
        n = 2 * (ts.static_dim(x, last, fn) - 1)
    if n < 1:
        raise call_error(ShapeError, f"{fn}: Invalid number of data points ({n}) specified", fn, x)
    x = _sizes(x, axes[:-1], None if s is None else s[:-1], fn)
    x = _resize(x, last, n // 2 + 1, fn)
    return laid_out_as_torch(call("fft_c2r", x, axes=axes, n=n, scale=scale), x, "c2r", axes)


def _one(n, dim, fn: str):
    """A 1-D transform's `n` as `s` (where -1 is refused, as PyTorch's); `n` and `dim` must
    be ints (PyTorch's TypeError)."""
    for name, v in (("n", n), ("dim", dim)):
        if not isinstance(v, (int, np.integer)) and (v is not None or name == "dim"):
            raise ArgumentTypeError(
                f"{fn}(): argument '{name}' must be int, not {type(v).__name__}"
            )
    if n is not None and int(n) < 1:
        raise ShapeError(f"{fn}: Invalid number of data points ({n}) specified")
    return None if n is None else (n,)


@takes_out
def fft(input, n=None, dim=-1, norm=None):  # noqa: A002
    """The discrete Fourier transform along `dim` (of `n` points: the signal cut or padded
    with zeros), as PyTorch's `torch.fft.fft`; real inputs give complex results.

    >>> import kiln as kn
    >>> kn.fft.fft(kn.tensor([1.0, 2.0, 3.0, 4.0]))
    tensor([10.+0.j, -2.+2.j, -2.+0.j, -2.-2.j])
    """
    return _c2c(input, _one(n, dim, "fft_fft"), dim, norm, True, "fft_fft")


@takes_out
def ifft(input, n=None, dim=-1, norm=None):  # noqa: A002
    """The inverse discrete Fourier transform along `dim`, as PyTorch's `torch.fft.ifft`.

    >>> import kiln as kn
    >>> kn.fft.ifft(kn.fft.fft(kn.tensor([1.0, 2.0, 3.0]))).real
    tensor([1., 2., 3.])
    """
    return _c2c(input, _one(n, dim, "fft_ifft"), dim, norm, False, "fft_ifft")


@takes_out
def fft2(input, s=None, dim=(-2, -1), norm=None):  # noqa: A002
    """The 2-D discrete Fourier transform over `dim`, as PyTorch's `torch.fft.fft2`.

    >>> import kiln as kn
    >>> kn.fft.fft2(kn.ones(2, 2))
    tensor([[4.+0.j, 0.+0.j],
            [0.+0.j, 0.+0.j]])
    """
    return _c2c(input, s, dim, norm, True, "fft_fft2")


@takes_out
def ifft2(input, s=None, dim=(-2, -1), norm=None):  # noqa: A002
    """The 2-D inverse discrete Fourier transform, as PyTorch's `torch.fft.ifft2`.

    >>> import kiln as kn
    >>> kn.fft.ifft2(kn.fft.fft2(kn.eye(2))).real
    tensor([[1., 0.],
            [0., 1.]])
    """
    return _c2c(input, s, dim, norm, False, "fft_ifft2")


@takes_out
def fftn(input, s=None, dim=None, norm=None):  # noqa: A002
    """The N-D discrete Fourier transform over `dim` (all dims, or the last len(s)), as
    PyTorch's `torch.fft.fftn`.

    >>> import kiln as kn
    >>> kn.fft.fftn(kn.ones(2, 2, 2))[0, 0, 0]
    tensor(8.+0.j)
    """
    return _c2c(input, s, dim, norm, True, "fft_fftn")


@takes_out
def ifftn(input, s=None, dim=None, norm=None):  # noqa: A002
    """The N-D inverse discrete Fourier transform, as PyTorch's `torch.fft.ifftn`.

    >>> import kiln as kn
    >>> kn.fft.ifftn(kn.ones(2, 2))[0, 0]
    tensor(1.+0.j)
    """
    return _c2c(input, s, dim, norm, False, "fft_ifftn")


@takes_out
def rfft(input, n=None, dim=-1, norm=None):  # noqa: A002
    """The Fourier transform of a real signal: its n // 2 + 1 non-negative frequencies, as
    PyTorch's `torch.fft.rfft`.

    >>> import kiln as kn
    >>> kn.fft.rfft(kn.tensor([1.0, 2.0, 3.0, 4.0]))
    tensor([10.+0.j, -2.+2.j, -2.+0.j])
    """
    return _r2c(input, _one(n, dim, "fft_rfft"), dim, norm, "fft_rfft")


@takes_out
def irfft(input, n=None, dim=-1, norm=None):  # noqa: A002
    """The real signal of `n` points (default 2 * (m - 1)) whose non-negative frequencies are
    `input`, as PyTorch's `torch.fft.irfft`.

    >>> import kiln as kn
    >>> kn.fft.irfft(kn.fft.rfft(kn.tensor([1.0, 2.0, 3.0, 4.0])))
    tensor([1., 2., 3., 4.])
    """
    return _c2r(input, _one(n, dim, "fft_irfft"), dim, norm, "fft_irfft")


@takes_out
def rfft2(input, s=None, dim=(-2, -1), norm=None):  # noqa: A002
    """The 2-D transform of a real signal, halved along the last dim, as `torch.fft.rfft2`.

    >>> import kiln as kn
    >>> kn.fft.rfft2(kn.ones(2, 4)).shape
    kiln.Size([2, 3])
    """
    return _r2c(input, s, dim, norm, "fft_rfft2")


@takes_out
def irfft2(input, s=None, dim=(-2, -1), norm=None):  # noqa: A002
    """The inverse of `rfft2`, as PyTorch's `torch.fft.irfft2`.

    >>> import kiln as kn
    >>> kn.fft.irfft2(kn.fft.rfft2(kn.eye(2)))
    tensor([[1., 0.],
            [0., 1.]])
    """
    return _c2r(input, s, dim, norm, "fft_irfft2")


@takes_out
def rfftn(input, s=None, dim=None, norm=None):  # noqa: A002
    """The N-D transform of a real signal, halved along the last transformed dim, as
    PyTorch's `torch.fft.rfftn`.

    >>> import kiln as kn
    >>> kn.fft.rfftn(kn.ones(2, 3, 4)).shape
    kiln.Size([2, 3, 3])
    """
    return _r2c(input, s, dim, norm, "fft_rfftn")


@takes_out
def irfftn(input, s=None, dim=None, norm=None):  # noqa: A002
    """The inverse of `rfftn`, as PyTorch's `torch.fft.irfftn`.

    >>> import kiln as kn
    >>> kn.fft.irfftn(kn.fft.rfftn(kn.ones(2, 4))).shape
    kiln.Size([2, 4])
    """
    return _c2r(input, s, dim, norm, "fft_irfftn")


@takes_out
def hfft(input, n=None, dim=-1, norm=None):  # noqa: A002
    """The Fourier transform of a Hermitian-symmetric signal given by its first half (a real
    spectrum of `n` points), as PyTorch's `torch.fft.hfft`.

    >>> import kiln as kn
    >>> kn.fft.hfft(kn.tensor([1.0, 2.0, 3.0]))
    tensor([ 8., -2.,  0., -2.])
    """
    n = _one(n, dim, "fft_hfft")
    return _c2r(conj(_input(input, "fft_hfft")), n, dim, _DUAL.get(norm, norm), "fft_hfft")


@takes_out
def ihfft(input, n=None, dim=-1, norm=None):  # noqa: A002
    """The inverse of `hfft`: the first half of the Hermitian spectrum of a real signal, as
    PyTorch's `torch.fft.ihfft`.

    >>> import kiln as kn
    >>> kn.fft.ihfft(kn.tensor([8.0, -2.0, 0.0, -2.0]))
    tensor([1.-0.j, 2.-0.j, 3.-0.j])
    """
    if norm not in _DUAL:
        raise UnknownModeError(f'fft_ihfft: Invalid normalization mode: "{norm}"')
    return conj(_r2c(input, _one(n, dim, "fft_ihfft"), dim, _DUAL.get(norm, norm), "fft_ihfft"))


@takes_out
def hfft2(input, s=None, dim=(-2, -1), norm=None):  # noqa: A002
    """The 2-D transform of a Hermitian-symmetric signal given by its half (see `hfftn`), as
    PyTorch's `torch.fft.hfft2`.

    >>> import kiln as kn
    >>> kn.fft.hfft2(kn.ones(2, 2)).shape
    kiln.Size([2, 2])
    """
    return hfftn(input, s, dim, norm)


@takes_out
def ihfft2(input, s=None, dim=(-2, -1), norm=None):  # noqa: A002
    """The inverse of `hfft2`, as PyTorch's `torch.fft.ihfft2`.

    >>> import kiln as kn
    >>> kn.fft.ihfft2(kn.ones(2, 4)).shape
    kiln.Size([2, 3])
    """
    return ihfftn(input, s, dim, norm)


@takes_out
def hfftn(input, s=None, dim=None, norm=None):  # noqa: A002
    """The N-D transform of a Hermitian-symmetric signal given by its half along the last of
    `dim` (a real result, of 2 * (m - 1) points there unless `s` says), as PyTorch's
    `torch.fft.hfftn`: the inverse real transform of its conjugate, scaled the other way.

    >>> import kiln as kn
    >>> kn.fft.hfftn(kn.ones(2, 3)).shape
    kiln.Size([2, 4])
    """
    if norm not in _DUAL:
        raise UnknownModeError(f'fft_hfftn: Invalid normalization mode: "{norm}"')
    return _c2r(conj(_input(input, "fft_hfftn")), s, dim, _DUAL.get(norm, norm), "fft_hfftn")


@takes_out
def ihfftn(input, s=None, dim=None, norm=None):  # noqa: A002
    """The inverse of `hfftn`: the half spectrum of a real signal, conjugated and scaled as an
    inverse transform, as PyTorch's `torch.fft.ihfftn`.

    >>> import kiln as kn
    >>> kn.fft.ihfftn(kn.ones(2, 4))[0, 0]
    tensor(1.-0.j)
    """
    if norm not in _DUAL:
        raise UnknownModeError(f'fft_ihfftn: Invalid normalization mode: "{norm}"')
    return conj(_r2c(input, s, dim, _DUAL.get(norm, norm), "fft_ihfftn", kind="ihfft"))


def _freq_dtype(dtype, length: int = 0):
    if length < 0:  # (PyTorch's RuntimeError)
        raise ShapeError(
            f"fftfreq: Trying to create tensor with negative dimension {length}: [{length}]"
        )
    dtype = dt.DEFAULT_FLOAT if dtype is None else dt.as_dtype(dtype)
    if (
        dtype.kind != "f" and dtype != dt.bfloat16
    ):  # PyTorch's refusal (an int64 out= too; complex: its arange's)
        raise UnsupportedDTypeError(f"fftfreq requires a floating point dtype, got {dtype}")
    return dtype


@factory_out
def fftfreq(n, d=1.0, *, dtype=None, device="cpu", requires_grad=False):
    """The frequencies of an `n`-point transform for sample spacing `d`, as PyTorch's
    `torch.fft.fftfreq`.

    >>> import kiln as kn
    >>> kn.fft.fftfreq(4)
    tensor([ 0.0000,  0.2500, -0.5000, -0.2500])
    """
    from ..eager import factories

    k = np.concatenate([np.arange((n + 1) // 2), np.arange(-(n // 2), 0)])
    values = (k / (n * d)).astype(_freq_dtype(dtype, n))
    return factories.tensor(values, device=device, requires_grad=requires_grad)


@factory_out
def rfftfreq(n, d=1.0, *, dtype=None, device="cpu", requires_grad=False):
    """The non-negative frequencies of an `n`-point real transform, as PyTorch's
    `torch.fft.rfftfreq`.

    >>> import kiln as kn
    >>> kn.fft.rfftfreq(4)
    tensor([0.0000, 0.2500, 0.5000])
    """
    from ..eager import factories

    values = (np.arange(n // 2 + 1) / (n * d)).astype(_freq_dtype(dtype))
    return factories.tensor(values, device=device, requires_grad=requires_grad)


def _shift(input, dim, sign: int):  # noqa: A002
    (x,) = lift(input)
    dims = tuple(range(x.ndim)) if dim is None else (dim,) if isinstance(dim, int) else tuple(dim)
    if not dims:  # (PyTorch's RuntimeError)
        raise call_error(UsageError, "fftshift: `shifts` required (an empty dim)", "fftshift", x)
    shifts = [sign * (ts.static_dim(x, sh.normalize_axis(d, x.ndim), "fftshift") // 2)
              for d in dims]  # fmt: skip
    return ts.roll(x, shifts, dims)


def fftshift(input, dim=None):  # noqa: A002
    """The zero frequency moved to the middle of `dim` (all dims), as `torch.fft.fftshift`.

    >>> import kiln as kn
    >>> kn.fft.fftshift(kn.fft.fftfreq(5))
    tensor([-0.4000, -0.2000,  0.0000,  0.2000,  0.4000])
    """
    return _shift(input, dim, 1)


def ifftshift(input, dim=None):  # noqa: A002
    """The inverse of `fftshift`, as PyTorch's `torch.fft.ifftshift`.

    >>> import kiln as kn
    >>> kn.fft.ifftshift(kn.fft.fftshift(kn.arange(5)))
    tensor([0, 1, 2, 3, 4])
    """
    return _shift(input, dim, -1)
