"""The matrix products of the frontend (`matmul`, `dot`) and their one dtype rule: PyTorch's
products do not promote, so both operands must have one dtype, and not bool."""

from __future__ import annotations

import numpy as np

from ..eager import batched
from ..eager.tensor import Tensor
from ..errors import (
    DTypeMismatchError,
    ShapeMismatchError,
    UnsupportedDTypeError,
    call_error,
    node_error,
)
from ..graph.core import Symbol, user_site
from .autocast import autocast_op
from .core import call, lift
from .out import takes_out

_BOOL = np.dtype(bool)


def same_dtype_operands(op: str, a, b) -> tuple:
    """`lift(a, b)`, refusing two dtypes: PyTorch's matrix products (`matmul`, `mm`, `bmm`,
    `dot`) do not promote, so float32 @ float64 raises DTypeMismatchError (a RuntimeError, as
    PyTorch's) naming the op and both dtypes, where NumPy would compute in float64."""
    a, b = lift(a, b)
    dtype = a.dtype
    if dtype != b.dtype:
        raise node_error(
            DTypeMismatchError,
            f"{op}: expected both operands to have the same dtype, got {a.dtype} and "
            f"{b.dtype} (cast one with .to(dtype))",
            op=op,
            name=None,
            site=user_site(),
            inputs=[v for v in (a, b) if isinstance(v, Symbol)],
        )
    if dtype == _BOOL:  # (b has a's dtype)
        refuse_bool(op, a, b)
    return a, b


def refuse_bool(op: str, *operands) -> None:
    """PyTorch's matrix products have no bool kernel: UnsupportedDTypeError (a
    NotImplementedError, as PyTorch's) where an operand is bool."""
    if any(v.dtype == _BOOL for v in operands):
        raise call_error(UnsupportedDTypeError, f'"{op}" not implemented for \'Bool\'', op,
                         *operands)  # fmt: skip


@takes_out
@autocast_op("lower")
def matmul(input, other):
    """Matrix product with NumPy's batching and broadcasting (`a @ b`); both operands of one
    dtype, as PyTorch's (no promotion: float32 @ float64 raises DTypeMismatchError).

    >>> import kiln as kn, numpy as np
    >>> kn.matmul(np.ones((2, 3), np.float32), np.ones((3,), np.float32))
    array([3., 3.], dtype=float32)
    """
    a, b = same_dtype_operands("matmul", input, other)
    if type(a) is Tensor and type(b) is Tensor and a._data.ndim >= 3 and b._data.ndim:
        out = batched.matmul(a, b)  # with grad: PyTorch's graph (None: the op's)
        if out is not None:
            return out
    return call("matmul", a, b)


@takes_out
def dot(input, tensor):
    """The dot product of two 1-D tensors of one size and dtype (PyTorch refuses other
    shapes: `matmul` batches).

    >>> import kiln as kn
    >>> kn.dot(kn.tensor([1.0, 2.0]), kn.tensor([3.0, 4.0]))
    tensor(11.)
    """
    input, tensor = same_dtype_operands("dot", input, tensor)
    if input.ndim != 1 or tensor.ndim != 1:
        raise call_error(ShapeMismatchError, f"1D tensors expected, but got {input.ndim}D and "
                         f"{tensor.ndim}D tensors", "dot", input, tensor)  # fmt: skip
    return call("matmul", input, tensor)
