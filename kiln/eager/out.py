"""PyTorch's `out=` argument: the result written into a given eager tensor, with PyTorch's
checks (no autograd through it; a result dtype that the out dtype cannot hold by a same-kind
cast refuses; an out of another shape is resized, with PyTorch's warning unless empty)."""

from __future__ import annotations

import warnings

import numpy as np

from ..errors import ArgumentTypeError, AutogradError, DTypeMismatchError, node_error
from ..graph.core import Symbol, user_site
from .grad_mode import no_grad, state
from .tensor import describe

__all__ = ["write_out"]


def write_out(name: str, out, compute, inputs):
    """`compute()` written into `out`, which is returned (PyTorch's `fn(..., out=out)`).

    >>> import kiln as kn
    >>> o = kn.zeros(2, dtype=kn.float64)
    >>> kn.add(kn.tensor([1, 2]), 1, out=o) is o, o
    (True, tensor([2., 3.], dtype=kiln.float64))
    """
    if isinstance(out, Symbol) or not hasattr(out, "copy_"):
        raise ArgumentTypeError(
            f"{name}(): out= takes an eager tensor, got {type(out).__name__} (graph values "
            f"never change: use the returned value) at {user_site()}"
        )
    if state.grad and any(getattr(v, "requires_grad", False) for v in (out, *inputs)):
        raise node_error(
            AutogradError,
            "functions with out=... arguments don't support automatic differentiation, but "
            "one of the arguments requires grad.",
            op=name,
            site=user_site(),
            called=True,
            inputs=[describe(v) for v in (out, *inputs) if hasattr(v, "requires_grad")],
        )
    result = compute()
    if not np.can_cast(result.dtype, out.dtype, "same_kind"):
        raise node_error(
            DTypeMismatchError,
            f"result type {result.dtype} can't be cast to the desired output type {out.dtype}",
            op=name,
            site=user_site(),
            called=True,
            inputs=[describe(out)],
        )
    if tuple(out.shape) != tuple(result.shape):
        if out.numel():
            warnings.warn(
                f"An output with one or more elements was resized since it had shape "
                f"{list(out.shape)}, which does not match the required output shape "
                f"{list(result.shape)}. ({name} at {user_site()})",
                UserWarning,
                stacklevel=3,
            )
        out.resize_(tuple(result.shape))
    with no_grad():
        out.copy_(result)
    return out
