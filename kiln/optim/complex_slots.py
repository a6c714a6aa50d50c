"""An optimizer's slots of complex parameters: PyTorch keeps them complex, the updates read
them as pairs of reals (kiln/optim/optimizer.py)."""

from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from .. import frontend as F
from ..eager.tensor import make

__all__ = ["as_real", "complex_of", "real_pairs"]


def as_real(array):
    """A complex array as its (real, imaginary) pairs, a last dim of 2 (a view)."""
    return np.ascontiguousarray(array)[..., None].view(dt.to_real(array.dtype))


def real_pairs(value):
    """A slot value as the update reads it: a complex one (PyTorch's layout of a complex
    parameter's slot) as its pairs of reals (a view); any other as it is."""
    if value.dtype.kind != "c":
        return value
    return as_real(value) if isinstance(value, np.ndarray) else F.view_as_real(value)


def complex_of(value):
    """A slot of pairs of reals (a Tensor, last dim 2) as the complex Tensor that holds them,
    the layout PyTorch keeps (a view on the CPU)."""
    if value.device == "cpu":
        return make(np.ascontiguousarray(value._data).view(dt.to_complex(value.dtype))[..., 0])
    return F.view_as_complex(value.contiguous())
