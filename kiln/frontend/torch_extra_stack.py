"""PyTorch's stacking and broadcasting helpers (`hstack`, `vstack`, `dstack`, `column_stack`,
`atleast_1d/2d/3d`, `broadcast_tensors`, `broadcast_shapes`, `meshgrid`, `cartesian_prod`,
`block_diag`) over kiln's ops, for eager Tensors, Symbols and NumPy arrays alike."""

from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from .. import shapes as sh
from ..errors import ArgumentError, ArgumentTypeError, UsageError, call_error
from . import math as m
from . import shape as s
from . import torch_shape as ts
from .core import lift
from .nn_functional import pad
from .out import takes_out

__all__ = [
    "atleast_1d", "atleast_2d", "atleast_3d", "block_diag", "broadcast_shapes",
    "broadcast_tensors", "cartesian_prod", "column_stack", "dstack", "hstack", "meshgrid",
    "vstack",
]  # fmt: skip


def atleast_1d(*tensors):
    """Each tensor with at least 1 dim (one tensor in, one out; several: a tuple).

    >>> import kiln as kn
    >>> kn.atleast_1d(kn.tensor(3)).shape
    kiln.Size([1])
    """
    return _atleast(tensors, 1)


def atleast_2d(*tensors):
    """Each tensor with at least 2 dims (leading 1s added).

    >>> import kiln as kn
    >>> kn.atleast_2d(kn.tensor([1, 2])).shape
    kiln.Size([1, 2])
    """
    return _atleast(tensors, 2)


def atleast_3d(*tensors):
    """Each tensor with at least 3 dims (a 1-D (n) becomes (1, n, 1), a 2-D (m, n) (m, n, 1)).

    >>> import kiln as kn
    >>> kn.atleast_3d(kn.zeros(2, 3)).shape
    kiln.Size([2, 3, 1])
    """
    return _atleast(tensors, 3)


def _atleast(tensors, n: int):
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):  # a sequence: a tuple out
        return tuple(_each_atleast(tuple(tensors[0]), n))
    out = _each_atleast(tensors, n)
    return out[0] if len(out) == 1 else tuple(out)


def _each_atleast(tensors, n: int) -> list:
    numbers = [type(t).__name__ for t in tensors if isinstance(t, (bool, int, float, complex))]
    if numbers:  # PyTorch's argument parser takes tensors only
        raise ArgumentTypeError(f"atleast_{n}d() takes tensors, got {', '.join(numbers)}")
    out = []
    for t in lift(*tensors):
        if t.ndim == 0:
            t = s.reshape(t, (1,) * n)
        elif t.ndim < n:  # unsqueezed, as PyTorch's (the new dims' strides are unsqueeze's)
            t = s.unsqueeze(t, 0) if t.ndim == 1 else t
            t = s.unsqueeze(t, -1) if n == 3 else t
        out.append(t)
    return out


def _sequence(tensors, name: str) -> tuple:
    """The tensors of a stacking function's one argument, checked as PyTorch checks it."""
    if not isinstance(tensors, (list, tuple)):
        raise ArgumentTypeError(
            f"{name}(): argument 'tensors' (position 1) must be tuple of Tensors, not "
            f"{type(tensors).__name__}"
        )
    if not tensors:
        raise UsageError(f"{name} expects a non-empty TensorList")
    return tuple(tensors)


@takes_out
def hstack(tensors):
    """Joins along dim 1 (dim 0 for vectors).

    >>> import kiln as kn
    >>> kn.hstack([kn.tensor([1]), kn.tensor([2, 3])])
    tensor([1, 2, 3])
    """
    ts_ = _as_tuple(atleast_1d(*_sequence(tensors, "hstack")))
    return ts.cat(list(ts_), 0 if ts_[0].ndim == 1 else 1)


@takes_out
def vstack(tensors):
    """Joins along dim 0, vectors as rows.

    >>> import kiln as kn
    >>> kn.vstack([kn.tensor([1, 2]), kn.tensor([3, 4])]).shape
    kiln.Size([2, 2])
    """
    return ts.cat(list(_as_tuple(atleast_2d(*_sequence(tensors, "vstack")))), 0)


@takes_out
def dstack(tensors):
    """Joins along dim 2, after `atleast_3d`.

    >>> import kiln as kn
    >>> kn.dstack([kn.tensor([1, 2]), kn.tensor([3, 4])]).shape
    kiln.Size([1, 2, 2])
    """
    return ts.cat(list(_as_tuple(atleast_3d(*_sequence(tensors, "dstack")))), 2)


@takes_out
def column_stack(tensors):
    """Joins along dim 1, vectors (and scalars) as columns.

    >>> import kiln as kn
    >>> kn.column_stack([kn.tensor([1, 2]), kn.tensor([3, 4])])
    tensor([[1, 3],
            [2, 4]])
    """
    given = _sequence(tensors, "column_stack")
    cols = [s.reshape(t, (-1, 1)) if t.ndim <= 1 else t for t in lift(*given)]
    return ts.cat(cols, 1)


def _as_tuple(value):
    return value if isinstance(value, tuple) else (value,)


def broadcast_tensors(*tensors) -> tuple:
    """The tensors broadcast to their common shape.

    >>> import kiln as kn
    >>> [t.shape for t in kn.broadcast_tensors(kn.zeros(2, 1), kn.zeros(3))]
    [kiln.Size([2, 3]), kiln.Size([2, 3])]
    """
    values = lift(*tensors)
    shape = sh.broadcast_shapes(*(tuple(v.shape) for v in values))
    return tuple(s.broadcast_to(v, shape) for v in values)


def broadcast_shapes(*shapes):
    """The shape the given shapes broadcast to.

    >>> import kiln as kn
    >>> kn.broadcast_shapes((2, 1), (3,))
    kiln.Size([2, 3])
    """
    from ..array_types import Size

    given = [(d,) if isinstance(d, (int, np.integer)) else d for d in shapes]
    for shape in given:
        if not isinstance(shape, (list, tuple)):  # (PyTorch takes the numbers inside as ints)
            raise UsageError("Input shapes should be of type ints, a tuple of ints, or a list of "
                             f"ints, got {shape}")  # fmt: skip
        if any(d < 0 for d in shape):
            raise ArgumentError("Attempting to broadcast a dimension with negative length!")
    return Size(sh.broadcast_shapes(*(tuple(int(d) for d in shape) for shape in given)))


def meshgrid(*tensors, indexing: str = "ij") -> tuple:
    """Coordinate grids of 1-D tensors; `indexing` "ij" (matrix) or "xy" (Cartesian).

    >>> import kiln as kn
    >>> [g.tolist() for g in kn.meshgrid(kn.tensor([1, 2]), kn.tensor([3, 4, 5]))][0]
    [[1, 1, 1], [2, 2, 2]]
    >>> [g.tolist() for g in kn.meshgrid(kn.tensor([1, 2]), kn.tensor([3, 4, 5]), indexing="xy")][0]
    [[1, 2], [1, 2], [1, 2]]
    """
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if not tensors:
        raise UsageError("meshgrid expects a non-empty TensorList")
    values = list(lift(*tensors))
    if len({v.dtype for v in values}) > 1:
        raise call_error(UsageError, "meshgrid expects all tensors to have the same dtype",
                         "meshgrid", *values)  # fmt: skip
    if indexing not in ("ij", "xy"):
        # PyTorch refuses an unknown indexing with RuntimeError, not ValueError
        raise UsageError(f"torch.meshgrid: indexing must be one of 'xy' or 'ij', got {indexing}")
    # "xy" is "ij" with the first two inputs (and so the first two grids) exchanged: the
    # grids' shape is (len(y), len(x), ...) and grid 0 varies along dim 1
    swap = indexing == "xy" and len(values) >= 2
    if swap:
        values[0], values[1] = values[1], values[0]
    sizes = [v.shape[0] if v.ndim else 1 for v in values]
    grids = []
    for i, v in enumerate(values):
        view = [1] * len(values)
        view[i] = -1
        grids.append(s.broadcast_to(s.reshape(v, tuple(view)), tuple(sizes)))
    if swap:
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


def cartesian_prod(*tensors):
    """Every combination of the 1-D tensors' elements, as rows (one tensor: itself).

    >>> import kiln as kn
    >>> kn.cartesian_prod(kn.tensor([1, 2]), kn.tensor([3, 4])).tolist()
    [[1, 3], [1, 4], [2, 3], [2, 4]]
    """
    if len(tensors) == 1:
        return lift(*tensors)[0]
    grids = meshgrid(*tensors, indexing="ij")
    return ts.stack([s.reshape(g, (-1,)) for g in grids], 1)


def block_diag(*tensors):
    """A block-diagonal matrix of the given (0-, 1- or 2-D) blocks.

    >>> import kiln as kn
    >>> kn.block_diag(kn.tensor([[1]]), kn.tensor([[2, 3]]))
    tensor([[1, 0, 0],
            [0, 2, 3]])
    """
    if not tensors:  # PyTorch's: an empty (1, 0) matrix of the default dtype
        from ..eager.factories import empty

        return empty(1, 0)
    values = lift(*tensors)
    for i, b in enumerate(values):
        if b.ndim > 2:
            message = (f"torch.block_diag: Input tensors must have 2 or fewer dimensions. "
                       f"Input {i} has {b.ndim} dimensions")  # fmt: skip
            raise call_error(UsageError, message, "block_diag", b)
    blocks = [s.reshape(b, (1, -1)) if b.ndim < 2 else b for b in values]
    dtype = dt.result_type(*blocks)
    width = sum(b.shape[1] for b in blocks)
    rows, left = [], 0
    for b in blocks:
        b = b if b.dtype == dtype else m.cast(b, dtype)
        right = width - left - b.shape[1]
        rows.append(pad(b, (left, right)) if left or right else b)
        left += b.shape[1]
    return ts.cat(rows, 0)
