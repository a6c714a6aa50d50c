"""PyTorch's margin, embedding and likelihood losses (`margin_ranking_loss`,
`hinge_embedding_loss`, `soft_margin_loss`, `multi_margin_loss`, `multilabel_soft_margin_loss`,
`cosine_embedding_loss`, `triplet_margin_loss`, `poisson_nll_loss`, `gaussian_nll_loss`,
`ctc_loss`) and `embedding_bag`, written with kiln's ops from PyTorch's documented formulas, so
each works eagerly (autograd), in graph mode and under `kn.compile`."""

from __future__ import annotations

import math
import warnings

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
from ..frontend.autocast import autocast_op
from ..frontend.custom_function import Function
from ..frontend.torch_index import int_index
from ..graph.core import Symbol
from .functional_core import embedding
from .functional_norm import pairwise_distance

__all__ = [
    "cosine_embedding_loss", "ctc_loss", "embedding_bag", "gaussian_nll_loss",
    "hinge_embedding_loss", "huber_loss", "margin_ranking_loss", "multi_margin_loss",
    "multilabel_soft_margin_loss", "poisson_nll_loss", "smooth_l1_loss", "soft_margin_loss",
    "triplet_margin_loss",
]  # fmt: skip


def reduction_of(size_average, reduce, reduction: str) -> str:
    """PyTorch's mapping of the legacy `size_average`/`reduce` flags (when given)."""
    if size_average is None and reduce is None:
        if reduction not in ("mean", "sum", "none"):
            raise ArgumentError(f"{reduction} is not a valid value for reduction")
        return reduction
    warnings.warn(
        "size_average and reduce args will be deprecated, please use reduction instead",
        UserWarning,
        stacklevel=3,
    )
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    return "none" if not reduce else "mean" if size_average else "sum"


def reduce_loss(loss, reduction: str):
    """The loss's mean, sum, or itself ("none")."""
    if reduction == "mean":
        return F.mean(loss)
    if reduction == "sum":
        return F.sum(loss)
    return loss


@autocast_op("fp32")
def smooth_l1_loss(
    input,  # noqa: A002
    target,
    size_average=None,
    reduce=None,
    reduction="mean",
    beta: float = 1.0,
):
    """`0.5 * d**2 / beta` where `|d| < beta`, else `|d| - 0.5 * beta` (d = input - target);
    `beta=0` is the L1 loss.

    >>> import kiln as kn
    >>> kn.nn.functional.smooth_l1_loss(kn.tensor([0.5, 3.0]), kn.zeros(2), reduction="none")
    tensor([0.1250, 2.5000])
    """
    reduction = reduction_of(size_average, reduce, reduction)
    if beta < 0:
        raise ArgumentError(f"smooth_l1_loss does not support negative values for beta ({beta})")
    # (float16: PyTorch's loss is computed step by step with beta rounded to float16, its
    # gradient in float32; kiln's takes beta unrounded: both equal PyTorch's at beta=1.0)
    d, wide, _ = _distance(input, target, dt.bfloat16, beta)
    if beta == 0:
        return reduce_loss(_rounded(d, wide), reduction)
    near = F.logical_not(F.greater_equal(d, beta))
    quadratic = F.div(F.mul(F.square(_near(near, d)), 0.5), beta)  # (PyTorch's order)
    loss = F.where(near, quadratic, F.sub(d, 0.5 * beta))
    return reduce_loss(_rounded(loss, wide), reduction)


def _near(near, d):
    """`d` where `near` holds, else 0: the square's input in the quadratic branch of a
    smooth loss, so that the branch not taken sends no 0 * inf = NaN into the gradient at an
    infinite `d` (PyTorch's gradient there is ±1). NaN takes the quadratic branch, whose
    gradient is NaN, as PyTorch's."""
    return F.where(near, d, 0.0)


@autocast_op("fp32")
def huber_loss(input, target, reduction="mean", delta: float = 1.0, weight=None):  # noqa: A002
    """`0.5 * d**2` where `|d| <= delta`, else `delta * (|d| - 0.5 * delta)`.

    >>> import kiln as kn
    >>> kn.nn.functional.huber_loss(kn.tensor([0.5, 3.0]), kn.zeros(2), delta=2.0)
    tensor(2.0625)
    """
    reduction = reduction_of(None, None, reduction)
    d, wide, delta = _distance(input, target, np.dtype(np.float16), delta)
    near = F.logical_not(F.greater(d, delta))
    loss = F.where(near, F.mul(F.square(_near(near, d)), 0.5), F.mul(F.sub(d, 0.5 * delta), delta))
    loss = _rounded(loss, wide)
    return reduce_loss(loss if weight is None else F.mul(loss, weight), reduction)


def _distance(input, target, wide, param: float):  # noqa: A002
    """`|input - target|`, the dtype to round the loss to (else None), and `param` as PyTorch's
    CPU kernels of the smooth losses take them: a loss of dtype `wide` in float32, rounded
    once; one of the other half-precision dtype step by step in it, `param` rounded to it."""
    dtype = F.result_type(input, target)
    if dtype == wide:
        return F.abs(F.sub(F.cast(input, np.float32), F.cast(target, np.float32))), dtype, param
    if dtype in (dt.bfloat16, np.float16):
        param = float(np.asarray(param, np.dtype(dtype)))
    return F.abs(F.sub(input, target)), None, param


def _rounded(loss, half):
    return loss if half is None else F.cast(loss, half)


def margin_ranking_loss(input1, input2, target, margin: float = 0.0, size_average=None,
                        reduce=None, reduction: str = "mean"):  # fmt: skip
    """`max(0, -y * (x1 - x2) + margin)`.

    >>> import kiln as kn
    >>> F = kn.nn.functional
    >>> F.margin_ranking_loss(kn.tensor([1.0, 2.0]), kn.tensor([2.0, 0.0]), kn.tensor([1.0, 1.0]))
    tensor(0.5000)
    """
    reduction = reduction_of(size_average, reduce, reduction)
    gap = F.add(F.mul(F.neg(target), F.sub(input1, input2)), margin)
    return reduce_loss(F.clip(gap, 0, None), reduction)


def hinge_embedding_loss(input, target, margin: float = 1.0, size_average=None,  # noqa: A002
                         reduce=None, reduction: str = "mean"):  # fmt: skip
    """x where y is 1, `max(0, margin - x)` where y is -1 (PyTorch's: both terms where y is
    neither).

    >>> import kiln as kn
    >>> F = kn.nn.functional
    >>> F.hinge_embedding_loss(kn.tensor([0.3, 2.0]), kn.tensor([-1.0, 1.0]), reduction="none")
    tensor([0.7000, 2.0000])
    """
    reduction = reduction_of(size_average, reduce, reduction)
    x, y = F.core.lift(input, target)
    margin_term = F.where(F.not_equal(y, 1), F.clip(F.sub(margin, x), 0, None), 0.0)
    self_term = F.where(F.not_equal(y, -1), x, 0.0)
    return reduce_loss(F.add(margin_term, self_term), reduction)


def soft_margin_loss(input, target, size_average=None, reduce=None,  # noqa: A002
                     reduction: str = "mean"):  # fmt: skip
    """`log(1 + exp(-y * x))`.

    >>> import kiln as kn
    >>> kn.nn.functional.soft_margin_loss(kn.tensor([0.0]), kn.tensor([1.0]))
    tensor(0.6931)
    """
    reduction = reduction_of(size_average, reduce, reduction)
    z = F.mul(F.neg(target), input)
    return reduce_loss(F.softplus(z), reduction)


def long_targets(name: str, input, target) -> None:  # noqa: A002
    """PyTorch's int64-only class indices of the margin losses (RuntimeError otherwise)."""
    if not (target.dtype.kind == "i" and target.dtype.itemsize == 8):
        message = f"expected scalar type Long but found {dt.scalar_name(target.dtype)}"
        raise call_error(DTypeMismatchError, message, name, input, target)


def multi_margin_loss(input, target, p: int = 1, margin: float = 1.0, weight=None,  # noqa: A002
                      size_average=None, reduce=None, reduction: str = "mean"):  # fmt: skip
    """Per sample `sum_{i != y} max(0, margin - x[y] + x[i])**p / C`, times `weight[y]`.

    >>> import kiln as kn
    >>> F = kn.nn.functional
    >>> F.multi_margin_loss(kn.tensor([[0.1, 0.2, 0.4, 0.8]]), kn.tensor([3]))
    tensor(0.3250)
    """
    reduction = reduction_of(size_average, reduce, reduction)
    if p not in (1, 2):
        raise ArgumentError("only p == 1 and p == 2 supported")
    x, y = F.core.lift(input, target)
    long_targets("multi_margin_loss", x, y)
    squeeze = x.ndim <= 1  # one sample (a 0-d input: one sample of one class)
    if squeeze:
        x, y = F.reshape(x, (1, -1)), F.reshape(y, (1,))
    n_classes = x.shape[1]
    picked = F.gather(x, 1, F.unsqueeze(y, 1))
    terms = F.clip(F.add(F.sub(margin, picked), x), 0, None)
    if p == 2:
        terms = F.square(terms)
    if weight is not None:
        terms = F.mul(terms, F.unsqueeze(F.index_select(weight, 0, y), 1))
    own = F.eq(np.arange(n_classes).reshape(1, -1), F.unsqueeze(y, 1))
    loss = F.div(F.sum(F.where(own, 0.0, terms), 1), n_classes)
    return reduce_loss(F.squeeze(loss, 0) if squeeze else loss, reduction)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None,  # noqa: A002
                                reduce=None, reduction: str = "mean"):  # fmt: skip
    """The mean over classes of the binary cross-entropy of `sigmoid(x)` with each label.

    >>> import kiln as kn
    >>> F = kn.nn.functional
    >>> F.multilabel_soft_margin_loss(kn.tensor([[0.0, 0.0]]), kn.tensor([[1.0, 0.0]]))
    tensor(0.6931)
    """
    reduction = reduction_of(size_average, reduce, reduction)
    x, y = F.core.lift(input, target)
    logsig = lambda v: F.neg(F.softplus(F.neg(v)))  # noqa: E731
    loss = F.neg(F.add(F.mul(y, logsig(x)), F.mul(F.sub(1.0, y), logsig(F.neg(x)))))
    if weight is not None:
        loss = F.mul(loss, weight)
    loss = F.div(F.sum(loss, x.ndim - 1), x.shape[-1])
    return reduce_loss(loss, reduction)


def cosine_embedding_loss(input1, input2, target, margin: float = 0.0, size_average=None,
                          reduce=None, reduction: str = "mean"):  # fmt: skip
    """`1 - cos(x1, x2)` where y is 1, `max(0, cos(x1, x2) - margin)` where y is -1.

    >>> import kiln as kn
    >>> F = kn.nn.functional
    >>> F.cosine_embedding_loss(kn.tensor([[1.0, 0.0]]), kn.tensor([[0.0, 1.0]]), kn.tensor([1]))
    tensor(1.)
    """
    reduction = reduction_of(size_average, reduce, reduction)
    a, b, y = F.core.lift(input1, input2, target)
    d = a.ndim - 1
    eps = 1e-12  # PyTorch's EPSILON, added to each squared magnitude
    dot = F.sum(F.mul(a, b), d)
    mags = F.mul(F.add(F.sum(F.square(a), d), eps), F.add(F.sum(F.square(b), d), eps))
    cos = F.div(dot, F.sqrt(mags))
    pos = F.where(F.eq(y, 1), F.sub(1.0, cos), 0.0)
    neg = F.where(F.eq(y, -1), F.clip(F.sub(cos, margin), 0, None), 0.0)
    return reduce_loss(F.add(pos, neg), reduction)


def triplet_margin_loss(anchor, positive, negative, margin: float = 1.0, p: float = 2,
                        eps: float = 1e-6, swap: bool = False, size_average=None, reduce=None,
                        reduction: str = "mean"):  # fmt: skip
    """`max(d(a, p) - d(a, n) + margin, 0)` with d the pairwise p-distance (`swap`: d(a, n)
    is the smaller of it and d(p, n)).

    >>> import kiln as kn
    >>> F = kn.nn.functional
    >>> F.triplet_margin_loss(kn.tensor([[0.0]]), kn.tensor([[1.0]]), kn.tensor([[3.0]]), eps=0)
    tensor(0.)
    """
    reduction = reduction_of(size_average, reduce, reduction)
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = F.minimum(d_neg, pairwise_distance(positive, negative, p, eps))
    return reduce_loss(F.clip(F.add(F.sub(d_pos, d_neg), margin), 0, None), reduction)


def poisson_nll_loss(input, target, log_input: bool = True, full: bool = False,  # noqa: A002
                     size_average=None, eps: float = 1e-8, reduce=None,
                     reduction: str = "mean"):  # fmt: skip
    """`exp(x) - y * x` (log_input), else `x - y * log(x + eps)`; `full` adds Stirling's
    `y log y - y + log(2 pi y) / 2` where y > 1.

    >>> import kiln as kn
    >>> kn.nn.functional.poisson_nll_loss(kn.tensor([0.0]), kn.tensor([2.0]))
    tensor(1.)
    """
    reduction = reduction_of(size_average, reduce, reduction)
    x, y = F.core.lift(input, target)
    if log_input:
        loss = F.sub(F.exp(x), F.mul(y, x))
    else:
        loss = F.sub(x, F.mul(y, F.log(F.add(x, eps))))
    if full:
        safe = F.where(F.greater(y, 1), y, 1.0)
        stirling = F.add(
            F.sub(F.mul(safe, F.log(safe)), safe), F.mul(F.log(F.mul(safe, 2 * math.pi)), 0.5)
        )
        loss = F.add(loss, F.where(F.greater(y, 1), stirling, 0.0))
    return reduce_loss(loss, reduction)


def gaussian_nll_loss(input, target, var, full: bool = False, eps: float = 1e-6,  # noqa: A002
                      reduction: str = "mean"):  # fmt: skip
    """`(log(var) + (x - y)**2 / var) / 2` (+ `log(2 pi) / 2` when full), var clamped to eps
    (the gradient as if not clamped, as PyTorch's).

    >>> import kiln as kn
    >>> kn.nn.functional.gaussian_nll_loss(kn.tensor([1.0]), kn.tensor([3.0]), kn.tensor([1.0]))
    tensor(2.)
    """
    x, y, v = F.core.lift(input, target, var)
    if tuple(v.shape) != tuple(x.shape):
        if tuple(x.shape[:-1]) == tuple(v.shape):
            v = F.unsqueeze(v, -1)
        elif not (tuple(x.shape[:-1]) == tuple(v.shape[:-1]) and v.shape[-1] == 1):
            raise ArgumentError("var is of incorrect size")
    if reduction not in ("mean", "sum", "none"):
        raise ArgumentError(f"{reduction} is not valid")
    v = F.add(v, F.stop_gradient(F.sub(F.clip(v, eps, None), v)))
    loss = F.mul(F.add(F.log(v), F.div(F.square(F.sub(x, y)), v)), 0.5)
    if full:
        loss = F.add(loss, 0.5 * math.log(2 * math.pi))
    return reduce_loss(loss, reduction)


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


# -- ctc_loss -----------------------------------------------------------------------------------


def _logsumexp(parts):
    """log(sum(exp(parts))) over a list of same-shape values, -inf where all are -inf, with
    finite gradients there (the maximum and the log are taken of safe values)."""
    top = parts[0]
    for p in parts[1:]:
        top = F.maximum(top, p)
    finite = F.logical_not(F.isinf(top))
    shift = F.stop_gradient(F.where(finite, top, 0.0))
    total = None
    for p in parts:
        e = F.exp(F.sub(p, shift))
        total = e if total is None else F.add(total, e)
    alive = F.greater(total, 0)
    return F.where(alive, F.add(F.log(F.where(alive, total, 1.0)), shift), float("-inf"))


def _shift(x, k: int):
    """x (N, L) moved right by k along dim 1, -inf coming in."""
    n, length = x.shape
    pad = np.full((n, k), -np.inf, dt.as_dtype(x.dtype))
    return F.cat([pad, F.getitem(x, (slice(None), slice(0, length - k)))], 1)


def _lengths(values, n: int):
    if isinstance(values, (list, tuple)):
        return np.asarray(values, np.int64).reshape(n)
    (v,) = F.core.lift(values)
    return F.cast(F.reshape(v, (n,)), dt.int64)


def _padded_targets(targets, target_lengths, n: int):
    """(N, S) targets from PyTorch's two layouts: padded (N, S), or concatenated 1-D (eager
    only: where each target starts depends on the lengths' values)."""
    (t,) = F.core.lift(targets)
    if t.ndim == 2:
        return t
    if isinstance(t, Symbol):
        raise NotImplementedError(
            "ctc_loss: concatenated 1-D targets need the lengths' values; in graph mode and "
            "under kn.compile give targets padded to (N, S)"
        )
    flat = t.numpy() if hasattr(t, "numpy") else np.asarray(t)
    lens = np.asarray(target_lengths.tolist() if hasattr(target_lengths, "tolist")
                      else target_lengths, np.int64).reshape(n)  # fmt: skip
    width = max(int(lens.max(initial=0)), 1)
    out = np.zeros((n, width), np.int64)
    starts = np.concatenate([[0], np.cumsum(lens)[:-1]])
    for i, (a, k) in enumerate(zip(starts, lens)):
        out[i, :k] = flat[a : a + k]
    return out


class _CtcGradient(Function):
    """Zeros (N,) whose gradient gives `ctc_loss` PyTorch's gradient over its log-probs.

    The forward algorithm's own gradient of sample n's loss is minus the posterior of each
    (t, c); PyTorch's adds exp(log_probs) at every t < input_length (its formula is the
    gradient over logits under a log_softmax, so through a log_softmax both agree, as the
    posteriors of each step sum to 1), and gives NaN there for an infinite loss (0 with
    `zero_infinity`)."""

    @staticmethod
    def forward(ctx, lp, valid, infinite, zero_infinity):
        ctx.save_for_backward(lp)
        ctx.valid, ctx.infinite, ctx.zero_infinity = valid, infinite, zero_infinity
        return F.cast(F.logical_and(infinite, F.logical_not(infinite)), lp.dtype)

    @staticmethod
    def backward(ctx, grad):
        (lp,) = ctx.saved_tensors
        valid, infinite = ctx.valid, ctx.infinite
        n = infinite.shape[0]
        grad = F.mul(F.reshape(grad, (1, n, 1)), F.exp(lp))
        broken = F.reshape(infinite, (1, n, 1))
        grad = F.where(broken, 0.0 if ctx.zero_infinity else float("nan"), grad)
        return F.where(valid, grad, 0.0)


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank: int = 0,
             reduction: str = "mean", zero_infinity: bool = False):  # fmt: skip
    """The connectionist temporal classification loss: minus the log of the probability,
    summed over every alignment, of each target sequence given (T, N, C) log-probabilities
    (the forward algorithm over the extended labels `blank t1 blank t2 ... blank`). "mean"
    divides each loss by its target length, then averages.

    >>> import kiln as kn, math
    >>> lp = kn.log(kn.tensor([[[0.5, 0.5]], [[0.5, 0.5]]]))
    >>> round(kn.nn.functional.ctc_loss(lp, kn.tensor([[1]]), [2], [1]).item(), 4)
    0.2877
    """
    lp = F.core.lift(log_probs)[0]
    if lp.ndim == 2:
        lp = F.unsqueeze(lp, 1)
    steps, n, _ = lp.shape
    tgt = F.core.lift(_padded_targets(targets, target_lengths, n))[0]
    s_max = tgt.shape[1]
    in_len, tgt_len = _lengths(input_lengths, n), _lengths(target_lengths, n)
    blanks = np.full((n, s_max), blank, np.int64)
    ext = F.reshape(F.stack(list(F.core.lift(blanks, F.cast(tgt, dt.int64))), 2), (n, 2 * s_max))
    ext = F.cat([ext, np.full((n, 1), blank, np.int64)], 1)  # (N, L), L = 2S + 1
    width = 2 * s_max + 1
    before = F.cat([np.full((n, 2), blank, np.int64), F.getitem(ext, (slice(None), slice(0, -2)))],
                   1)  # fmt: skip
    skip = F.logical_and(F.not_equal(ext, blank), F.not_equal(ext, before))
    emit = F.gather(lp, 2, F.broadcast_to(F.unsqueeze(ext, 0), (steps, n, width)))  # (T, N, L)
    start = np.full((n, width), -np.inf, dt.as_dtype(lp.dtype))
    first = F.getitem(emit, 0)
    keep = np.zeros((1, width), bool)
    keep[0, :2] = True
    alpha = F.where(keep, first, start)
    for t in range(1, steps):
        hop = F.where(skip, _shift(alpha, 2), float("-inf"))
        new = F.add(_logsumexp([alpha, _shift(alpha, 1), hop]), F.getitem(emit, t))
        alpha = F.where(F.reshape(F.less(t, in_len), (n, 1)), new, alpha)
    last = F.reshape(F.mul(tgt_len, 2), (n, 1))
    end = F.take_along_dim(alpha, last, 1)
    prev = F.take_along_dim(alpha, F.clip(F.sub(last, 1), 0, None), 1)
    prev = F.where(F.greater(last, 0), prev, float("-inf"))
    loss = F.neg(F.reshape(_logsumexp([end, prev]), (n,)))
    infinite = F.isinf(loss)
    if zero_infinity:
        loss = F.where(infinite, 0.0, loss)
    valid = F.unsqueeze(F.less(np.arange(steps).reshape(steps, 1), in_len), 2)  # (T, N, 1)
    loss = F.add(loss, _CtcGradient.apply(lp, valid=valid, infinite=infinite,
                                          zero_infinity=zero_infinity))  # fmt: skip
    if reduction == "mean":
        return F.mean(F.div(loss, F.clip(F.cast(tgt_len, lp.dtype), 1, None)))
    if reduction == "sum":
        return F.sum(loss)
    return loss
