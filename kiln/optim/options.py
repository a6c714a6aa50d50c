"""The options of the optimizers: PyTorch's checks of them (`_check`, `_check_betas`), its
implementation flags taken (`implementation_flags`), and how a step applies them (`like`,
`nonzero`, `tensor_option`: an option given as a tensor)."""

from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from .. import frontend as F
from ..eager import Tensor
from ..errors import ArgumentError, UsageError
from ..graph.core import Symbol

__all__ = ["implementation_flags", "like", "nonzero", "tensor_option"]


def implementation_flags(name: str, foreach=None, capturable: bool = False,
                         differentiable: bool = False, fused=None) -> None:  # fmt: skip
    """PyTorch's optimizer arguments that pick its kernels (`foreach`, `fused`) or make the step
    fit CUDA graphs (`capturable`), taken so that ported code runs: kiln has one step, the
    same math, and these change nothing. PyTorch's refusal stays: `fused` with `foreach`.
    `differentiable=True`: kiln/optim/differentiable.py.

    >>> import kiln as kn
    >>> w = kn.zeros(2, requires_grad=True)
    >>> kn.optim.AdamW([w], lr=1e-3, fused=True).defaults["lr"]
    0.001
    >>> kn.optim.Adam([w], foreach=True, fused=True)
    Traceback (most recent call last):
    kiln.errors.UsageError: `fused` and `foreach` cannot be `True` together. ...
    """
    if fused and foreach:
        raise UsageError("`fused` and `foreach` cannot be `True` together.")


def _check(value, what: str, low: float = 0.0, takes_nan: bool = False) -> None:
    """An option at least `low` (NaN refused, unless `takes_nan`: PyTorch's SGD checks
    `value < low` alone)."""
    if isinstance(value, Symbol):
        return
    if (value < low) if takes_nan else not value >= low:
        raise ArgumentError(f"Invalid {what}: {value}")


def _check_betas(betas) -> tuple:
    """PyTorch's check of `betas`: each of the first two in [0, 1) (a single one: its
    IndexError)."""
    for i in (0, 1):
        if not isinstance(betas[i], Symbol) and not 0.0 <= betas[i] < 1.0:
            raise ArgumentError(f"Invalid beta parameter at index {i}: {betas[i]}")
    return tuple(betas)


def tensor_option(value):
    """An option given as an eager Tensor (`lr=kn.tensor(0.01)`, float32) as a NumPy scalar
    of its dtype, else None (a number, or a graph value). PyTorch computes such an option's
    arithmetic with Python floats in its dtype (float32), and uses its value exactly where
    it meets a float64 tensor; the optimizers whose step does either spell it with this.

    >>> import kiln as kn
    >>> tensor_option(kn.tensor(0.1)), tensor_option(0.1)
    (np.float32(0.1), None)
    """
    if isinstance(value, Tensor) and value.numel() == 1:
        return value.detach().numpy().reshape(())[()]
    return None


def nonzero(value) -> bool:
    """Whether an option is on: a graph value (Symbol) counts as on."""
    return isinstance(value, Symbol) or value != 0


def like(value, x):
    """`value` (a scalar that may be a float64 Symbol or array) in `x`'s dtype, so that float32
    parameters stay float32 (PyTorch computes these scalars in double, then applies them).
    A NumPy float64 scalar is cast too: unlike a Python float it would make the result
    float64."""
    if type(value) in (int, float) or not dt.is_float(x.dtype):
        return value
    if isinstance(x, np.ndarray) and isinstance(value, (np.generic, np.ndarray)):
        if value.ndim == 0 and x.dtype.kind == "f":  # a NumPy scalar: a 0-d array's values
            return x.dtype.type(value)
        return np.asarray(value).astype(x.dtype)  # the CPU step's arrays stay NumPy's
    return F.cast(value, x.dtype)
