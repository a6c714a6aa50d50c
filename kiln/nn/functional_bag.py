"""PyTorch's `embedding_bag`: sums, means or maxima of bags of embedding rows (offsets or a
2-D input of equal bags, per-sample weights, padding_idx), written with kiln's ops, so it works
eagerly (autograd), in graph mode and under `kn.compile`."""

from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from .. import frontend as F
from ..errors import (
    ArgumentError,
    DTypeMismatchError,
    UnsupportedDTypeError,
    UsageError,
    call_error,
)
from ..frontend.torch_index import int_index
from ..graph.core import Symbol
from .functional_core import embedding

__all__ = ["embedding_bag"]


# -- embedding_bag ------------------------------------------------------------------------------


def _bag_ids(n: int, offsets, include_last_offset: bool):
    """(bag of each of the n indices as a one-hot (n, bags) float matrix, number of bags):
    index i is in the last bag whose offset is at most i."""
    (off,) = F.core.lift(offsets)
    if include_last_offset:
        off = F.getitem(off, slice(0, -1))
    bags = off.shape[0]
    positions = np.arange(n).reshape(-1, 1)
    if isinstance(off, Symbol):
        positions = F.constant(positions, graph=off.graph)
    started = F.greater_equal(positions, F.reshape(off, (1, -1)))  # (n, bags)
    ids = F.sub(F.sum(F.cast(started, dt.int64), 1), 1)
    return F.eq(F.reshape(ids, (-1, 1)), np.arange(bags).reshape(1, -1)), bags


def _check_per_sample_weights(idx, w, per_sample_weights) -> None:
    """PyTorch's checks of `per_sample_weights`: the input's shape, the weight's dtype."""
    (psw,) = F.core.lift(per_sample_weights)
    if tuple(psw.shape) != tuple(idx.shape):
        raise ArgumentError(
            f"embedding_bag: If per_sample_weights ({tuple(psw.shape)}) is not None, then it "
            f"must have the same shape as the input ({tuple(idx.shape)})"
        )
    if psw.dtype != w.dtype:
        raise call_error(
            DTypeMismatchError, "Expected tensor for argument #1 'weight' to have the same type "
            "as tensor for argument #1 'per_sample_weights'", "embedding_bag", w, psw,
        )  # fmt: skip


def _check_offsets(idx, offsets, include_last_offset: bool) -> None:
    """PyTorch's checks of a 1-D input's `offsets`: 1-D, integers, and (where their values
    are known, eagerly) starting at 0 and ending within the input."""
    (off,) = F.core.lift(offsets)
    if off.ndim != 1:
        raise ArgumentError("offsets has to be a 1D Tensor")
    if not int_index(off.dtype):
        raise call_error(
            DTypeMismatchError, "Expected tensor for argument #1 'offsets' to have one of the "
            "following scalar types: Long, Int", "embedding_bag", off,
        )  # fmt: skip
    if isinstance(off, Symbol) or off.shape[0] == 0:
        return
    values = np.asarray(off.detach().cpu().numpy() if hasattr(off, "detach") else off)
    if values[0] != 0:
        raise call_error(
            UsageError, f"offsets[0] has to be 0, i.e., the first sequence in the mini-batch "
            f"has to start from position 0. However, got {int(values[0])}", "embedding_bag", off,
        )  # fmt: skip
    if int(values[-1]) > idx.shape[0]:
        raise call_error(
            UsageError, f"offsets[-1] can not be greater than input's length {idx.shape[0]} "
            f"but got offsets[-1] of {int(values[-1])}", "embedding_bag", off,
        )  # fmt: skip


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type: float = 2,  # noqa: A002
                  scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False,
                  per_sample_weights=None, include_last_offset: bool = False,
                  padding_idx=None):  # fmt: skip
    """The sums, means or maxima of `weight`'s rows in bags: rows of a 2-D `input`, or runs of
    a 1-D `input` starting at `offsets`. An empty bag gives zeros, `padding_idx` rows are left
    out, `per_sample_weights` scale rows ("sum" only). The rows are `embedding`'s: `max_norm`
    renorms the rows used in place, `scale_grad_by_freq` divides each row's gradient by how
    often its index occurs in `input`, `sparse` gives `weight` a sparse gradient (eagerly);
    "max" takes neither of the last two, as PyTorch's.

    >>> import kiln as kn
    >>> w = kn.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    >>> kn.nn.functional.embedding_bag(kn.tensor([0, 2, 1]), w, kn.tensor([0, 2]))
    tensor([[3., 4.],
            [3., 4.]])
    """
    if mode not in ("sum", "mean", "max"):
        raise ArgumentError(f"mode has to be one of sum, mean or max, got {mode!r}")
    if mode == "max" and scale_grad_by_freq:
        raise ArgumentError("max mode does not support scaling the gradient by the frequency")
    if mode == "max" and sparse:
        raise ArgumentError("max mode does not support sparse weights")
    if sparse and scale_grad_by_freq:
        raise UsageError("embedding_backward: scale_grad_by_freq not supported with sparse "
                         "gradients")  # fmt: skip
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(
            f"embedding_bag: per_sample_weights was not None. per_sample_weights is only "
            f"supported for mode='sum' (got mode='{mode}')."
        )
    idx, w = F.core.lift(input, weight)
    if w.ndim != 2:
        raise ArgumentError(f"weight has to be a 2D Tensor, but got Tensor of dimension {w.ndim}")
    if idx.dtype == dt.bool_:  # (other dtypes: embedding's RuntimeError)
        raise call_error(UnsupportedDTypeError, '"embedding_bag" not implemented for bool '
                         "indices (Long and Int only)", "embedding_bag", idx)  # fmt: skip
    if per_sample_weights is not None:
        _check_per_sample_weights(idx, w, per_sample_weights)
    if idx.ndim == 2:
        if offsets is not None:
            raise ArgumentError("if input is 2D, then offsets has to be None")
        b, k = idx.shape
        idx = F.reshape(idx, (-1,))
        offsets = np.arange(0, b * k, k, dtype=np.int64)
        if per_sample_weights is not None:
            per_sample_weights = F.reshape(per_sample_weights, (-1,))
    elif idx.ndim != 1:
        raise ArgumentError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension "
                            f"{idx.ndim}")  # fmt: skip
    elif offsets is None:
        raise ArgumentError("offsets has to be a 1D Tensor but got None")
    else:
        _check_offsets(idx, offsets, include_last_offset)
    if padding_idx is not None:
        rows_n = w.shape[0]
        if not -rows_n <= padding_idx < rows_n:
            raise call_error(
                UsageError, f"padding_idx must be within the number of embeddings, {-rows_n} "
                f"through {rows_n - 1}, but got {padding_idx}", "embedding_bag", w,
            )  # fmt: skip
        padding_idx %= rows_n  # a negative index counts from the end, as in `weight[i]`
    rows = embedding(idx, w, None, max_norm, norm_type, scale_grad_by_freq, sparse)  # (n, D)
    member, _ = _bag_ids(idx.shape[0], offsets, include_last_offset)  # (n, bags)
    if padding_idx is not None:
        member = F.logical_and(member, F.reshape(F.not_equal(idx, padding_idx), (-1, 1)))
    if per_sample_weights is not None:
        rows = F.mul(rows, F.reshape(per_sample_weights, (-1, 1)))
    weights = F.cast(member, w.dtype)
    count = F.reshape(F.sum(weights, 0), (-1, 1))
    if mode == "max":
        if idx.shape[0] == 0:  # no index at all: every bag is empty, zeros
            return F.mul(F.matmul(F.transpose(weights, 0, 1), rows), 0.0)
        spread = F.where(F.unsqueeze(member, 2), F.unsqueeze(rows, 1), float("-inf"))
        # the first row at the maximum (PyTorch's: a tie's gradient goes to it alone)
        first = F.argmax(F.stop_gradient(spread), 0)  # (bags, D)
        return F.where(F.eq(count, 0), 0.0, F.take_along_axis(rows, first, 0))
    total = F.matmul(F.transpose(weights, 0, 1), rows)  # (bags, D)
    if mode == "sum":
        return total
    return F.div(total, F.clip(count, 1, None))
