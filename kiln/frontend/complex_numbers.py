"""Complex numbers: PyTorch's functions and methods for the parts of complex values (`real`,
`imag`, `angle`, `abs`), conjugation, and complex values from parts (`complex`, `polar`,
`view_as_complex`). Arithmetic, exp, log, matmul, sums and the rest take complex values
through their own functions (their ops' records say so)."""

from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from ..eager.autograd import name_history
from ..errors import (
    DTypeMismatchError,
    GraphError,
    ShapeError,
    ShapeMismatchError,
    UnsupportedDTypeError,
    call_error,
)
from ..graph.core import Symbol
from . import inplace
from . import math as m
from . import shape as s
from .core import call, lift
from .out import takes_out

__all__ = [
    "angle",
    "complex",
    "conj",
    "conj_physical",
    "conj_physical_",
    "polar",
    "real",
    "imag",
    "view_as_complex",
    "view_as_complex_copy",
    "view_as_real",
    "view_as_real_copy",
]


def _one(x):
    return lift(x)[0]


def real(input):  # noqa: A002
    """The real parts of `input` (a real `input` itself), as PyTorch's `torch.real`.

    >>> import kiln as kn
    >>> kn.real(kn.tensor([1 + 2j, 3 - 4j]))
    tensor([1., 3.])
    """
    x = _one(input)
    return call("real", x) if x.dtype.kind == "c" else input


def imag(input):  # noqa: A002
    """The imaginary parts of complex `input`, as PyTorch's `torch.imag` (real values raise).

    >>> import kiln as kn
    >>> kn.imag(kn.tensor([1 + 2j, 3 - 4j]))
    tensor([ 2., -4.])
    """
    x = _one(input)
    if x.dtype.kind != "c":
        raise call_error(
            UnsupportedDTypeError, "imag is not implemented for tensors with non-complex dtypes.",
            "imag", x,
        )  # fmt: skip
    return call("imag", x)


@takes_out
def conj(input):  # noqa: A002
    """The complex conjugate (a real `input` itself), as PyTorch's `torch.conj`.

    >>> import kiln as kn
    >>> kn.conj(kn.tensor([1 + 2j]))
    tensor([1.-2.j])
    """
    x = _one(input)
    return call("conj", x) if x.dtype.kind == "c" else input


conj_physical = conj  # kiln's conj is physical: a value of its own, never a lazy view


@takes_out
def angle(input):  # noqa: A002
    """The argument of each element in radians (real values: 0, or pi for negative ones), as
    PyTorch's `torch.angle`.

    >>> import kiln as kn
    >>> kn.angle(kn.tensor([1j, -1.0 + 0j]))
    tensor([1.5708, 3.1416])
    """
    return call("angle", _one(input))


@takes_out
def complex(real, imag):  # noqa: A001
    """The complex tensor `real + i imag` (parts of one dtype, float32 or float64), as
    PyTorch's `torch.complex`.

    >>> import kiln as kn
    >>> kn.complex(kn.tensor([1.0, 2.0]), kn.tensor([3.0, -4.0]))
    tensor([1.+3.j, 2.-4.j])
    """
    return call("complex", *lift(real, imag))


@takes_out
def polar(abs, angle):  # noqa: A002
    """The complex tensor `abs * (cos(angle) + i sin(angle))`, as PyTorch's `torch.polar`.

    >>> import kiln as kn, math
    >>> kn.polar(kn.tensor([2.0]), kn.tensor([math.pi / 2])).imag
    tensor([2.])
    """
    r, theta = lift(abs, angle)
    if r.dtype == theta.dtype == dt.float16:  # (complex32: PyTorch's kernel lacks it too)
        raise call_error(UnsupportedDTypeError, '"polar" not implemented for float16', "polar",
                         r, theta)  # fmt: skip
    if r.dtype != theta.dtype or r.dtype not in (dt.float32, dt.float64):  # as complex's
        message = ("polar expects abs and angle of one dtype, float32 or float64 (got "
                   f"{r.dtype} and {theta.dtype})")  # fmt: skip
        raise call_error(DTypeMismatchError, message, "polar", r, theta)
    return complex(m.mul(r, m.cos(theta)), m.mul(r, m.sin(theta)))


def view_as_real(input):  # noqa: A002
    """The complex `input` as real values with a last dim of 2 (real, imaginary), as
    PyTorch's `torch.view_as_real`: a view, so a write through either changes the other
    (its strides are input's doubled, with a last stride of 1).

    >>> import kiln as kn
    >>> z = kn.tensor([1 + 2j, 3 - 4j])
    >>> r = kn.view_as_real(z)
    >>> r[0, 1] = 5
    >>> z, r.stride()
    (tensor([1.+5.j, 3.-4.j]), (2, 1))
    """
    x = _one(input)
    if x.dtype.kind != "c":
        raise call_error(
            UnsupportedDTypeError, "view_as_real is only supported for complex tensors",
            "view_as_real", x,
        )  # fmt: skip
    return call("view_as_real", x)


def _strides(x):
    """(x's strides in elements, its storage offset) as PyTorch's tensor of the same history
    has them; None where kiln does not know them (a graph value of symbolic shape)."""
    if isinstance(x, Symbol):
        from . import functionalize

        try:
            return functionalize.stride(x), functionalize.storage_offset(x)
        except GraphError:
            return None
    if isinstance(x, np.ndarray):  # a NumPy argument: its own strides (its offset: 0)
        return tuple(k // x.itemsize for k in x.strides), 0
    return x.stride(), x.storage_offset()


def _check_pairs(x) -> None:
    """PyTorch's refusals of view_as_complex's input: its pairs must be neighbours in memory,
    and each complex element must start at an even position."""
    if x.dtype not in (dt.float32, dt.float64):
        raise call_error(
            UnsupportedDTypeError, "view_as_complex is only supported for float and double "
            f"tensors, but got a tensor of dtype {x.dtype} (kiln has no complex32, the complex "
            "dtype of half)", "view_as_complex", x,
        )  # fmt: skip
    if x.ndim == 0:
        raise call_error(
            ShapeError, "Input tensor must have one or more dimensions", "view_as_complex", x
        )
    if x.shape[-1] != 2:
        raise call_error(
            ShapeError, "Tensor must have a last dimension of size 2", "view_as_complex", x
        )
    layout = _strides(x)
    if layout is None:
        return
    steps, offset = layout
    why = None
    if steps[-1] != 1:
        why = "Tensor must have a last dimension with stride 1"
    elif any(k % 2 for k in steps[:-1]):
        why = "Tensor must have a stride divisible by 2 for all but last dimension"
    elif offset % 2:
        why = "Tensor must have a storage_offset divisible by 2"
    if why is not None:
        raise call_error(ShapeError, f"{why} (strides {steps}, storage offset {offset}); "
                         "clone() it first", "view_as_complex", x)  # fmt: skip


def view_as_complex(input):  # noqa: A002
    """Real `input` whose last dim has size 2 as complex values, as PyTorch's
    `torch.view_as_complex`: a view, so `input`'s last dim must have stride 1 (and its other
    strides and storage offset be even), as PyTorch requires.

    >>> import kiln as kn
    >>> x = kn.tensor([[1.0, 2.0]])
    >>> z = kn.view_as_complex(x)
    >>> z.mul_(1j)
    tensor([-2.+1.j])
    >>> x
    tensor([[-2.,  1.]])
    """
    x = _one(input)
    _check_pairs(x)
    return call("view_as_complex", x)


@takes_out
def view_as_real_copy(input):  # noqa: A002
    """PyTorch's `torch.view_as_real_copy`: `view_as_real` in memory of its own.

    >>> import kiln as kn
    >>> kn.view_as_real_copy(kn.tensor([1 + 2j])).tolist()
    [[1.0, 2.0]]
    """
    return m.cast(view_as_real(input), dt.to_real(_one(input).dtype))


@takes_out
def view_as_complex_copy(input):  # noqa: A002
    """PyTorch's `torch.view_as_complex_copy`: `view_as_complex` in memory of its own.

    >>> import kiln as kn
    >>> kn.view_as_complex_copy(kn.tensor([[1.0, 2.0]]))
    tensor([1.+2.j])
    """
    z = view_as_complex(input)
    return m.cast(z, z.dtype)


def _isreal(self):
    if self.dtype.kind != "c":
        return m.logical_or(m.isnan(self), m.logical_not(m.isnan(self)))
    return m.equal(imag(self), 0)


def _mH(self):  # noqa: N802
    return conj(s.matrix_transpose(self))


def _H(self):  # noqa: N802
    if self.ndim not in (0, 2):  # PyTorch's H: a matrix (a 0-d tensor: itself, conjugated)
        raise ShapeError(
            f"tensor.H is only supported on matrices (2-D tensors). Got {self.ndim}-D tensor."
        )
    return conj(s.t(self))


def vdot(self, other):
    """The dot product of two vectors, the first conjugated (PyTorch refuses other shapes).

    >>> import kiln as kn
    >>> kn.tensor([1j, 2.0]).vdot(kn.tensor([1j, 1.0]))
    tensor(3.+0.j)
    """
    if self.ndim != 1 or other.ndim != 1:
        raise call_error(ShapeMismatchError, f"1D tensors expected, but got {self.ndim}D and "
                         f"{other.ndim}D tensors", "vdot", self, other)  # fmt: skip
    return name_history(m.dot(conj(self), other), "VdotBackward0", self, other)


def _cast_to(dtype):
    return lambda self, memory_format=None: m.cast(self, dtype) if self.dtype != dtype else self


METHODS = {
    "conj": conj, "conj_physical": conj, "resolve_conj": lambda self: self,
    "angle": angle, "isreal": _isreal, "adjoint": _mH,
    "cfloat": _cast_to(dt.complex64), "cdouble": _cast_to(dt.complex128),
    "vdot": vdot,
}  # fmt: skip
PROPERTIES = {"real": real, "imag": imag, "mH": _mH, "H": _H}
# `z.real = value`, `z.imag = value`: written through the view, as PyTorch's setters
SETTERS = {
    "real": lambda self, value: real(self).copy_(value),
    "imag": lambda self, value: imag(self).copy_(value),
}


def conj_physical_(input):  # noqa: A002
    """PyTorch's `torch.conj_physical_`: `input` conjugated in place (a real `input` stays).

    >>> import kiln as kn
    >>> z = kn.tensor([1 + 2j])
    >>> kn.conj_physical_(z) is z, z
    (True, tensor([1.-2.j]))
    """
    return input.conj_physical_()


# installed with the other in-place methods
inplace.INPLACE["conj_physical_"] = conj


def install(cls=None) -> None:
    """Puts the complex methods and properties on `cls` (Symbol, eager Tensor)."""
    from . import spectral

    cls = Symbol if cls is None else cls
    cls.stft, cls.istft = spectral.stft, spectral.istft
    for name, fn in METHODS.items():
        setattr(cls, name, getattr(fn, "without_out", fn))  # methods take no out=
    for name, fn in PROPERTIES.items():
        setattr(cls, name, property(fn, SETTERS.get(name)))
