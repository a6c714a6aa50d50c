"""The matrix products of the frontend (`matmul`, `dot`) and their one dtype rule: PyTorch's
products do not promote, so both operands must have one dtype."""

from __future__ import annotations

from ..eager import batched
from ..eager.tensor import Tensor
from ..errors import DTypeMismatchError, ShapeError, node_error
from ..graph.core import Symbol, user_site
from .autocast import autocast_op
from .core import call, lift
from .math import mul
from .out import takes_out


def same_dtype_operands(op: str, a, b) -> tuple:
    """`lift(a, b)`, refusing two dtypes: PyTorch's matrix products (`matmul`, `mm`, `bmm`,
    `dot`) do not promote, so float32 @ float64 raises DTypeMismatchError (a RuntimeError, as
    PyTorch's) naming the op and both dtypes, where NumPy would compute in float64."""
    a, b = lift(a, b)
    if a.dtype != b.dtype:
        raise node_error(
            DTypeMismatchError,
            f"{op}: expected both operands to have the same dtype, got {a.dtype} and "
            f"{b.dtype} (cast one with .to(dtype))",
            op=op,
            name=None,
            site=user_site(),
            inputs=[v for v in (a, b) if isinstance(v, Symbol)],
        )
    return a, b


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
    """NumPy's `dot` for operands where it agrees with `matmul` (`tensor` of 1 or 2 dims), and
    scalar products of 0-d operands.

    >>> import kiln as kn, numpy as np
    >>> kn.dot(np.array([1.0, 2.0]), np.array([3.0, 4.0]))
    array(11.)
    """
    input, tensor = same_dtype_operands("dot", input, tensor)
    if input.ndim == 0 or tensor.ndim == 0:
        return mul(input, tensor)
    if tensor.ndim > 2:
        raise ShapeError(f"dot of a {tensor.ndim}-d right operand: use kn.matmul (batched)")
    return call("matmul", input, tensor)
