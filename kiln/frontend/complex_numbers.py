"""Complex numbers: PyTorch's functions and methods for the parts of complex values (`real`,
`imag`, `angle`, `abs`), conjugation, and complex values from parts (`complex`, `polar`,
`view_as_complex`). Arithmetic, exp, log, matmul, sums and the rest take complex values
through their own functions (their ops' records say so)."""

from __future__ import annotations

from .. import dtypes as dt
from ..errors import UnsupportedDTypeError, call_error
from ..graph.core import Symbol
from . import inplace
from . import math as m
from . import shape as s
from .core import call, lift

__all__ = [
    "angle",
    "complex",
    "conj",
    "conj_physical",
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


def conj(input):  # noqa: A002
    """The complex conjugate (a real `input` itself), as PyTorch's `torch.conj`.

    >>> import kiln as kn
    >>> kn.conj(kn.tensor([1 + 2j]))
    tensor([1.-2.j])
    """
    x = _one(input)
    return call("conj", x) if x.dtype.kind == "c" else input


conj_physical = conj  # kiln's conj is physical: a value of its own, never a lazy view


def angle(input):  # noqa: A002
    """The argument of each element in radians (real values: 0, or pi for negative ones), as
    PyTorch's `torch.angle`.

    >>> import kiln as kn
    >>> kn.angle(kn.tensor([1j, -1.0 + 0j]))
    tensor([1.5708, 3.1416])
    """
    return call("angle", _one(input))


def complex(real, imag):  # noqa: A001
    """The complex tensor `real + i imag` (parts of one dtype, float32 or float64), as
    PyTorch's `torch.complex`.

    >>> import kiln as kn
    >>> kn.complex(kn.tensor([1.0, 2.0]), kn.tensor([3.0, -4.0]))
    tensor([1.+3.j, 2.-4.j])
    """
    return call("complex", *lift(real, imag))


def polar(abs, angle):  # noqa: A002
    """The complex tensor `abs * (cos(angle) + i sin(angle))`, as PyTorch's `torch.polar`.

    >>> import kiln as kn, math
    >>> kn.polar(kn.tensor([2.0]), kn.tensor([math.pi / 2])).imag
    tensor([2.])
    """
    r, theta = lift(abs, angle)
    return complex(m.mul(r, m.cos(theta)), m.mul(r, m.sin(theta)))


def view_as_real(input):  # noqa: A002
    """The complex `input` as real values with a last dim of 2 (real, imaginary), as
    PyTorch's `torch.view_as_real` (kiln's is a copy, not a view).

    >>> import kiln as kn
    >>> kn.view_as_real(kn.tensor([1 + 2j])).tolist()
    [[1.0, 2.0]]
    """
    return call("view_as_real", _one(input))


def view_as_complex(input):  # noqa: A002
    """Real `input` whose last dim has size 2 as complex values, as PyTorch's
    `torch.view_as_complex` (kiln's is a copy, not a view).

    >>> import kiln as kn
    >>> kn.view_as_complex(kn.tensor([[1.0, 2.0]]))
    tensor([1.+2.j])
    """
    return call("view_as_complex", _one(input))


# PyTorch's copying forms: kiln's view_as_real and view_as_complex are copies already
view_as_real_copy, view_as_complex_copy = view_as_real, view_as_complex


def _isreal(self):
    if self.dtype.kind != "c":
        return m.logical_or(m.isnan(self), m.logical_not(m.isnan(self)))
    return m.equal(imag(self), 0)


def _mH(self):  # noqa: N802
    return conj(s.matrix_transpose(self))


def _cast_to(dtype):
    return lambda self, memory_format=None: m.cast(self, dtype) if self.dtype != dtype else self


METHODS = {
    "conj": conj, "conj_physical": conj, "resolve_conj": lambda self: self,
    "angle": angle, "isreal": _isreal, "adjoint": _mH,
    "cfloat": _cast_to(dt.complex64), "cdouble": _cast_to(dt.complex128),
    "vdot": lambda self, other: m.dot(conj(self), other),
}  # fmt: skip
PROPERTIES = {"real": real, "imag": imag, "mH": _mH, "H": lambda self: conj(s.t(self))}


inplace.INPLACE["conj_physical_"] = conj  # installed with the other in-place methods


def install(cls=None) -> None:
    """Puts the complex methods and properties on `cls` (Symbol, eager Tensor)."""
    from . import spectral

    cls = Symbol if cls is None else cls
    cls.stft, cls.istft = spectral.stft, spectral.istft
    for name, fn in METHODS.items():
        setattr(cls, name, fn)
    for name, fn in PROPERTIES.items():
        setattr(cls, name, property(fn))
