"""PyTorch's `out=` argument: the result written into a given eager tensor, with PyTorch's
checks (no autograd through it; a result dtype that the out dtype cannot hold by a same-kind
cast refuses; an out of another shape is resized, with PyTorch's warning unless empty)."""

from __future__ import annotations

import warnings

import numpy as np

from .. import dtypes as dt
from ..errors import (
    ArgumentTypeError,
    AutogradError,
    DTypeMismatchError,
    UsageError,
    call_error,
    node_error,
)
from ..graph.core import Symbol, user_site
from .grad_mode import no_grad, state
from .tensor import Tensor, describe

__all__ = ["check_no_overlap", "write_out"]

# out= functions whose PyTorch kernels write an out that overlaps an input (the matrix
# products); the others refuse it, as their in-place forms do
_OUT_OVERLAP_ALLOWED = frozenset(
    {"mm", "bmm", "matmul", "mv", "addmm", "addmv", "baddbmm", "addbmm"}
)


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
    if name not in _OUT_OVERLAP_ALLOWED:
        check_no_overlap(out, inputs, name)
    result = compute()
    if not dt.can_cast(result.dtype, out.dtype):
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


def _dense(a: np.ndarray) -> bool:
    """Whether `a`'s elements fill a block of memory without gaps or repeats (PyTorch's
    non-overlapping and dense): its strides, by size, are each the previous extent."""
    step = a.itemsize
    for stride, size in sorted((abs(st), n) for st, n in zip(a.strides, a.shape) if n != 1):
        if stride != step:
            return False
        step *= size
    return True


def partial_overlap(a, b) -> bool:
    """PyTorch's partial overlap of two CPU arrays: both dense, their memory blocks meet, and
    they are not one block with one layout (the same elements in the same order: allowed).
    Arrays that are not dense are not checked (PyTorch's "too hard")."""
    if type(a) is not np.ndarray or type(b) is not np.ndarray or a.size == 0 or b.size == 0:
        return False
    if not _dense(a) or not _dense(b):
        return False
    (a0, a1), (b0, b1) = np.lib.array_utils.byte_bounds(a), np.lib.array_utils.byte_bounds(b)
    if (a0, a1) == (b0, b1):
        return a.strides != b.strides or a.shape != b.shape
    return a0 < b1 and b0 < a1


def check_no_overlap(t, values, op: str) -> None:
    """Refuses an in-place write into `t` that reads a tensor among `values` whose memory
    partly overlaps t's: PyTorch's RuntimeError (NumPy would compute a buffered result). The
    same tensor (`x.add_(x)`) and disjoint views are allowed.

    >>> import kiln as kn
    >>> y = kn.arange(4.0)
    >>> y[1:].add_(y[:-1])
    Traceback (most recent call last):
    kiln.errors.UsageError: unsupported operation: some elements of the input tensor and the ...
    """
    for v in values:
        if isinstance(v, Tensor) and v is not t and partial_overlap(t._data, v._data):
            raise overlap_error(op, t, v)


def overlap_error(op: str, t, v) -> UsageError:
    """PyTorch's refusal of a write into `t` that reads `v`, part of whose memory t shares."""
    return call_error(
        UsageError,
        "unsupported operation: some elements of the input tensor and the written-to tensor "
        "refer to a single memory location. Please clone() the tensor before performing the "
        "operation.",
        op, t, v,
    )  # fmt: skip
