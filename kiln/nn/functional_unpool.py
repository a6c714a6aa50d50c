"""`max_unpool1d/2d/3d`, the partial inverse of max pooling with `return_indices=True`, and
`triplet_margin_with_distance_loss`, as PyTorch's `torch.nn.functional`."""

from __future__ import annotations

import math

from .. import frontend as F
from ..errors import ArgumentError, ShapeMismatchError, call_error
from ..frontend.core import lift
from ..frontend.result_layouts import suggested_layout

__all__ = ["max_unpool1d", "max_unpool2d", "max_unpool3d", "triplet_margin_with_distance_loss"]


def _tuple(v, n: int, what: str, name: str) -> tuple:
    values = tuple(v) if isinstance(v, (tuple, list)) else (v,) * n
    if len(values) != n:
        raise call_error(ShapeMismatchError, f"{name}: {what} must be an int or {n} ints, got "
                         f"{v!r}", name)  # fmt: skip
    return values


def _unpool(name: str, n: int, input, indices, kernel_size, stride, padding, output_size):  # noqa: A002
    x, idx = lift(input, indices)
    if x.ndim not in (n + 1, n + 2):
        raise call_error(ShapeMismatchError, f"{name}: Expected {n + 1}D or {n + 2}D input, got "
                         f"{x.ndim}D", name, x)  # fmt: skip
    if tuple(idx.shape) != tuple(x.shape):
        raise call_error(ShapeMismatchError, f"{name}: Expected shape of indices to be same as "
                         f"that of the input tensor ({list(x.shape)}) but got indices tensor "
                         f"with shape: {list(idx.shape)}", name, x, idx)  # fmt: skip
    kernel = _tuple(kernel_size, n, "kernel_size", name)
    stride = _tuple(kernel_size if stride is None else stride, n, "stride", name)
    padding = _tuple(padding, n, "padding", name)
    spatial = tuple(x.shape[-n:])
    default = tuple((spatial[d] - 1) * stride[d] - 2 * padding[d] + kernel[d] for d in range(n))
    if output_size is None:
        size = default
    else:
        size = tuple(output_size)[-n:]
        for d in range(n):
            low, high = default[d] - stride[d], default[d] + stride[d]
            if not low < size[d] < high:
                raise ArgumentError(f"{name}: invalid output_size {tuple(output_size)} (dim {d} "
                                    f"must be between {low} and {high})")  # fmt: skip
    lead = tuple(x.shape[:-n])
    flat_x = F.reshape(x, (*lead, math.prod(spatial)))  # (no -1: the batch may be empty)
    flat_i = F.reshape(F.cast(idx, "int64"), (*lead, math.prod(spatial)))
    # a fill, not a multiply by zero: inf or nan inputs must not leak into the zeros
    zeros = F.broadcast_to(F.fill(F.getitem(flat_x, (Ellipsis, slice(0, 1))), 0),
                           (*lead, math.prod(size)))  # fmt: skip
    out = F.scatter(zeros, -1, flat_i, flat_x)
    # (PyTorch's max_unpool2d: channels-last where the input is; 1d and 3d: C order)
    return suggested_layout(F.reshape(out, (*lead, *size)), *[x] * (n == 2))


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):  # noqa: A002
    """Puts each value of (N, C, L) `input` at its `indices` (from `max_pool1d(...,
    return_indices=True)`) in zeros of the pooled-from length.

    >>> import kiln as kn
    >>> kn.nn.functional.max_unpool1d(kn.tensor([[[5.0, 7.0]]]), kn.tensor([[[1, 2]]]), 2)
    tensor([[[0., 5., 7., 0.]]])
    """
    return _unpool("max_unpool1d", 1, input, indices, kernel_size, stride, padding, output_size)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):  # noqa: A002
    """`max_unpool1d` over (N, C, H, W) inputs; indices are flat positions in each H×W plane."""
    return _unpool("max_unpool2d", 2, input, indices, kernel_size, stride, padding, output_size)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):  # noqa: A002
    """`max_unpool1d` over (N, C, D, H, W) inputs."""
    return _unpool("max_unpool3d", 3, input, indices, kernel_size, stride, padding, output_size)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None,
                                      margin: float = 1.0, swap: bool = False,
                                      reduction: str = "mean"):  # fmt: skip
    """`max(d(a, p) - d(a, n) + margin, 0)`, reduced; `d` defaults to `pairwise_distance`.

    >>> import kiln as kn
    >>> a, p, n = kn.zeros(1, 2), kn.tensor([[3.0, 4.0]]), kn.tensor([[0.0, 1.0]])
    >>> round(kn.nn.functional.triplet_margin_with_distance_loss(a, p, n).item(), 4)
    5.0
    """
    from .functional_loss import same_ndim
    from .functional_norm import pairwise_distance

    if reduction not in ("mean", "sum", "none"):
        raise ArgumentError(f"{reduction} is not a valid value for reduction")
    if margin <= 0:
        raise ArgumentError(f"triplet_margin_with_distance_loss: expected margin to be greater "
                            f"than 0, got {margin} instead")  # fmt: skip
    anchor, positive, negative = F.core.lift(anchor, positive, negative)
    same_ndim("triplet_margin_with_distance_loss", anchor, positive, negative)
    d = distance_function or pairwise_distance
    d_pos, d_neg = d(anchor, positive), d(anchor, negative)
    if swap:
        d_neg = F.minimum(d_neg, d(positive, negative))
    loss = F.clamp(F.sub(F.add(d_pos, margin), d_neg), min=0.0)  # (PyTorch's order)
    if reduction == "none":
        return loss
    return loss.sum() if reduction == "sum" else loss.mean()
