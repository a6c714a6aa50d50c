"""PyTorch's margin, embedding and likelihood losses (`margin_ranking_loss`,
`hinge_embedding_loss`, `soft_margin_loss`, `multi_margin_loss`, `multilabel_soft_margin_loss`,
`cosine_embedding_loss`, `triplet_margin_loss`, `poisson_nll_loss`, `gaussian_nll_loss`,
`ctc_loss`), written with kiln's ops from PyTorch's documented formulas, so
each works eagerly (autograd), in graph mode and under `kn.compile`."""

from __future__ import annotations

import math
import warnings

import numpy as np

from .. import dtypes as dt
from .. import frontend as F
from ..eager.grad_mode import is_grad_enabled
from ..errors import (
    ArgumentError,
    DTypeMismatchError,
    ShapeMismatchError,
    UnsupportedDTypeError,
    UsageError,
    call_error,
)
from ..frontend.autocast import autocast_op
from ..frontend.custom_function import Function
from ..graph.core import Symbol
from .functional_norm import pairwise_distance

__all__ = [
    "cosine_embedding_loss", "ctc_loss", "gaussian_nll_loss",
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
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    reduction = "none" if not reduce else "mean" if size_average else "sum"
    warnings.warn(
        "size_average and reduce args will be deprecated, please use "
        f"reduction='{reduction}' instead.",
        UserWarning,
        stacklevel=3,
    )
    return reduction


def warn_target_size(input, target) -> None:  # noqa: A002
    """PyTorch's warning of the elementwise losses (mse, l1, smooth_l1, huber) when target's
    shape is not input's: the loss broadcasts them, which is rarely what was meant."""
    if tuple(target.shape) != tuple(input.shape):
        warnings.warn(
            f"Using a target size ({target.shape}) that is different to the input size "
            f"({input.shape}). This will likely lead to incorrect results due to broadcasting. "
            "Please ensure they have the same size.",
            UserWarning,
            stacklevel=4,
        )


def reduce_loss(loss, reduction: str):
    """The loss's mean, sum, or itself ("none")."""
    if reduction == "mean":
        return F.mean(loss)
    if reduction == "sum":
        return F.sum(loss)
    return loss


def soft_cross_entropy(logp, target, weight, reduction: str, label_smoothing: float, dim: int):
    """cross_entropy of log-probabilities `logp` against class probabilities `target` of its
    shape, as PyTorch's: "mean" and "sum" reduce every `-logp * target * weight` term in one
    sum (so half-precision losses round as PyTorch's), "mean" over the rows, NaN for none."""
    n_classes = logp.shape[dim]
    if label_smoothing > 0:
        target = F.add(F.mul(target, 1.0 - label_smoothing), label_smoothing / n_classes)
    terms = F.mul(logp, target)
    if weight is not None:
        shape = tuple(-1 if i == dim else 1 for i in range(logp.ndim))
        terms = F.mul(terms, F.reshape(weight, shape))
    if reduction == "none":
        return F.neg(F.sum(terms, dim))
    total = F.neg(F.sum(terms))
    if reduction == "sum":
        return total
    rows = math.prod(logp.shape) // max(n_classes, 1)
    return F.mul(total, float("nan")) if 0 in tuple(logp.shape) else F.div(total, rows)


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
    input, target = F.core.lift(input, target)  # noqa: A001
    warn_target_size(input, target)
    float_pair("smooth_l1_cpu", "smooth_l1_loss", input, target)
    reduction = reduction_of(size_average, reduce, reduction)
    if beta < 0:
        raise UsageError(f"smooth_l1_loss does not support negative values for beta ({beta})")
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
    input, target = F.core.lift(input, target)  # noqa: A001
    warn_target_size(input, target)
    float_pair("huber_cpu", "huber_loss", input, target)
    reduction = reduction_of(None, None, reduction)
    if delta <= 0:  # (PyTorch's RuntimeError, from its kernel)
        raise UsageError("huber_loss does not support non-positive values for delta.")
    if weight is not None and tuple(weight.shape) != tuple(input.shape):
        raise ArgumentError("Weights and input must have the same size.")
    d, wide, delta = _distance(input, target, np.dtype(np.float16), delta)
    # |d| < delta, NaN too, as smooth_l1_loss: at |d| = delta both branches have one value and
    # slope, and the linear one PyTorch's second derivative there, 0
    near = F.logical_not(F.greater_equal(d, delta))
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
    input1, input2, target = F.core.lift(input1, input2, target)
    if not input1.ndim == input2.ndim == target.ndim:
        message = (f"margin_ranking_loss : All input tensors should have same dimension but got "
                   f"sizes: input1: {input1.shape}, input2: {input2.shape}, target: "
                   f"{target.shape}")  # fmt: skip
        raise call_error(ShapeMismatchError, message, "margin_ranking_loss", input1, input2, target)
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
    if getattr(target, "requires_grad", False) and is_grad_enabled():
        message = ("The function 'soft_margin_loss' is not differentiable with respect to "
                   "argument 'target'. This input cannot have requires_grad True.")  # fmt: skip
        raise call_error(UsageError, message, "soft_margin_loss", input, target)
    float_result("soft_margin_loss", F.core.lift(input)[0])
    # PyTorch's kernel's terms, log1p(exp(-y x)), each step in the input's dtype (so a
    # half-precision loss rounds as PyTorch's, and exp overflows where PyTorch's does)
    z = F.mul(F.neg(input), target)
    return reduce_loss(F.log1p(F.exp(z)), reduction)


def float_kernel(kernel: str, op: str, x, half: bool = False, dtype=None) -> None:
    """PyTorch's CPU loss kernels of float32 and float64 alone (multi_margin_loss,
    multilabel_margin_loss, ctc_loss), or of every float dtype (`half`: nll_loss, mse,
    smooth_l1, huber): NotImplementedError naming the kernel for another dtype (`dtype`: the
    one the kernel runs in, else x's)."""
    d = np.dtype(x.dtype if dtype is None else dtype)
    if not (dt.is_float(d) if half else d in (np.float32, np.float64)):
        message = f"\"{kernel}\" not implemented for '{dt.scalar_name(d)}'"
        raise call_error(UnsupportedDTypeError, message, op, x)


def float_pair(kernel: str, op: str, input, target) -> None:  # noqa: A002
    """`float_kernel` of an elementwise loss run in input and target's common dtype: refused
    where neither is a float, or either complex (the common dtype is then not a float)."""
    floats = (np.float32, np.float64, np.float16, dt.bfloat16)
    if input.dtype in floats and target.dtype in floats:  # (the common case, quickly)
        return
    a, b = np.dtype(input.dtype), np.dtype(target.dtype)
    if (dt.is_float(a) or dt.is_float(b)) and "c" not in (a.kind, b.kind):
        return
    float_kernel(kernel, op, input, True, F.result_type(input, target))


def float_result(op: str, x, result=np.float32) -> None:
    """PyTorch's refusal of an integer (or bool) tensor that its loss would write a float
    result into (RuntimeError)."""
    if not dt.is_float(np.dtype(x.dtype)):
        message = (f"result type {dt.scalar_name(np.dtype(result))} can't be cast to the "
                   f"desired output type {dt.scalar_name(x.dtype)}")  # fmt: skip
        raise call_error(DTypeMismatchError, message, op, x)


def check_class_weight(name, input, weight, dim, same_dtype: bool = True) -> None:  # noqa: A002
    """PyTorch's per-class weight: None, or one value for each of the C classes (1-D), of
    input's dtype where the classes are indices (its nll kernel reads it as input's)."""
    if weight is None:
        return
    if tuple(weight.shape) != (input.shape[dim],):
        raise call_error(
            ShapeMismatchError,
            f"weight tensor should be defined either for all {input.shape[dim]} classes or no "
            f"classes but got weight tensor of shape: {list(weight.shape)}",
            name, input, weight,
        )  # fmt: skip
    if same_dtype and np.dtype(weight.dtype) != np.dtype(input.dtype):
        message = (f"expected scalar type {dt.scalar_name(input.dtype)} but found "
                   f"{dt.scalar_name(weight.dtype)}")  # fmt: skip
        raise call_error(DTypeMismatchError, message, name, input, weight)


def half_nll_value(input, target, weight, ignore_index: int, reduction: str):  # noqa: A002
    """PyTorch's CPU nll_loss value of an eager float16/bfloat16 (C,) or (N, C) input, "mean"
    or "sum": its terms added in the input's dtype one at a time into its cascade of partial
    sums (levels of 16), the mean that sum over the summed weights in that dtype."""
    d = np.dtype(input.dtype)
    x = np.asarray(input._data).reshape(-1, input.shape[-1])
    t = np.asarray(target._data).reshape(-1).astype(np.int64)
    w = None if weight is None else np.asarray(weight._data)
    power = max(4, (len(t) - 1).bit_length() // 8)  # (PyTorch's CeilLog2(N) / 8 levels)
    mask = (1 << power) - 1

    def add(a, b):
        return d.type(np.float32(a) + np.float32(b))

    losses, weights, kept = [d.type(0)] * 8, [d.type(0)] * 8, 0
    for b, c in enumerate(t):
        if c == ignore_index:
            continue
        kept, v = kept + 1, x[b, c]
        if w is not None:
            v, weights[0] = d.type(np.float32(v) * np.float32(w[c])), add(weights[0], w[c])
        losses[0] = add(losses[0], -v)
        for j in range(7):  # (a full level moves up a level)
            if b & (mask << (j * power)):
                break
            losses[j + 1], losses[j] = add(losses[j + 1], losses[j]), d.type(0)
            weights[j + 1], weights[j] = add(weights[j + 1], weights[j]), d.type(0)
    total = total_weight = d.type(0)
    for loss_part, weight_part in zip(losses, weights):
        total, total_weight = add(total, loss_part), add(total_weight, weight_part)
    if reduction == "sum":
        return total
    return d.type(np.float32(total) / np.float32(d.type(kept) if w is None else total_weight))


def check_index_dtype(name, input, target) -> None:  # noqa: A002
    """PyTorch's class indices: int64 or uint8 (int64 alone for inputs of 3 or more dims)."""
    d = target.dtype
    byte = d.kind == "u" and d.itemsize == 1
    if (d.kind == "i" and d.itemsize == 8) or (byte and input.ndim <= 2):
        return
    message = (
        f"expected target dtype to be Long or Byte, but got {dt.scalar_name(target.dtype)}"
        if not byte
        else "expected scalar type Long but found Byte"
    )
    raise call_error(DTypeMismatchError, message, name, input, target)


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
    if x.ndim > 2:
        message = ("MultiMarginLoss: Expected non-empty vector or matrix with optional 0-dim "
                   f"batch size, but got: {list(x.shape)}")  # fmt: skip
        raise call_error(ShapeMismatchError, message, "multi_margin_loss", x, y)
    float_kernel("multi_margin_loss_cpu_kernel", "multi_margin_loss", x)
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
    float_kernel("log_sigmoid_cpu", "multilabel_soft_margin_loss", x, half=True)
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
    if y.ndim > 1:
        message = "0D or 1D target tensor expected, multi-target not supported"
        raise call_error(ShapeMismatchError, message, "cosine_embedding_loss", a, b, y)
    if not a.ndim == b.ndim == y.ndim + 1:
        message = (f"{y.ndim}D target tensor expects {y.ndim + 1}D input tensors, but found "
                   f"inputs with sizes {list(a.shape)} and {list(b.shape)}.")  # fmt: skip
        raise call_error(ShapeMismatchError, message, "cosine_embedding_loss", a, b, y)
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
    if margin <= 0:
        raise ArgumentError(f"margin must be greater than 0, got {margin}")
    anchor, positive, negative = F.core.lift(anchor, positive, negative)
    same_ndim("triplet_margin_loss", anchor, positive, negative)
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = F.minimum(d_neg, pairwise_distance(positive, negative, p, eps))
    # (PyTorch's order, margin + d(a, p) - d(a, n))
    return reduce_loss(F.clip(F.sub(F.add(d_pos, margin), d_neg), 0, None), reduction)


def same_ndim(name: str, anchor, positive, negative) -> None:
    """PyTorch's check of the triplet losses: the three inputs have one rank."""
    if not anchor.ndim == positive.ndim == negative.ndim:
        message = (f"The anchor, positive, and negative tensors are expected to have the same "
                   f"number of dimensions, but got: anchor {anchor.ndim}D, positive "
                   f"{positive.ndim}D, and negative {negative.ndim}D inputs")  # fmt: skip
        raise call_error(ShapeMismatchError, message, name, anchor, positive, negative)


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
        # PyTorch's terms, masked where y <= 1 after they are taken: target's gradient there
        # is NaN at y = 0 (0 times log(0)'s), as PyTorch's
        stirling = F.add(F.sub(F.mul(y, F.log(y)), y), F.mul(F.log(F.mul(y, 2 * math.pi)), 0.5))
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
    if isinstance(var, (int, float)):  # (PyTorch's float var: one variance for each element)
        if var < 0:
            raise ArgumentError("var has negative entry/entries")
        if reduction not in ("mean", "sum", "none"):
            raise ArgumentError(f"{reduction} is not valid")
        v = max(float(var), eps)
        loss = F.mul(F.add(math.log(v), F.div(F.square(F.sub(input, target)), v)), 0.5)
        return reduce_loss(F.add(loss, 0.5 * math.log(2 * math.pi)) if full else loss, reduction)
    x, y, v = F.core.lift(input, target, var)
    float_result("gaussian_nll_loss", x)
    if hasattr(v, "_data") and bool((v._data < 0).any()):  # (eagerly: the values are known)
        raise ArgumentError("var has negative entry/entries")
    if tuple(v.shape) != tuple(x.shape):
        if tuple(x.shape[:-1]) == tuple(v.shape):
            v = F.unsqueeze(v, -1)
        # one mismatched dim, where var is 1 (PyTorch's test: the mismatched sizes of var sum
        # to 1)
        elif not (
            x.ndim == v.ndim and sum(b for a, b in zip(x.shape, v.shape) if a != b) == 1
        ):  # fmt: skip
            raise ArgumentError("var is of incorrect size")
    if reduction not in ("mean", "sum", "none"):
        raise ArgumentError(f"{reduction} is not valid")
    v = F.add(v, F.stop_gradient(F.sub(F.clip(v, eps, None), v)))
    loss = F.mul(F.add(F.log(v), F.div(F.square(F.sub(x, y)), v)), 0.5)
    if full:
        loss = F.add(loss, 0.5 * math.log(2 * math.pi))
    return reduce_loss(loss, reduction)


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
    """(N, S) targets from PyTorch's two layouts: padded (N, S), or concatenated 1-D (where
    each target starts depends on the lengths' values: eager ones, or Python lengths in graph
    mode and under kn.compile)."""
    (t,) = F.core.lift(targets)
    if t.ndim == 2:
        return t
    if isinstance(t, Symbol):
        if not isinstance(target_lengths, (list, tuple, int)):
            raise NotImplementedError(
                "ctc_loss: concatenated 1-D targets need the lengths' values; in graph mode "
                "and under kn.compile give target_lengths as a list, or targets padded to "
                "(N, S)"
            )
        return _gathered_targets(t, np.asarray(target_lengths, np.int64).reshape(n))
    flat = t.numpy() if hasattr(t, "numpy") else np.asarray(t)
    lens = np.asarray(target_lengths.tolist() if hasattr(target_lengths, "tolist")
                      else target_lengths, np.int64).reshape(n)  # fmt: skip
    width = max(int(lens.max(initial=0)), 1)
    out = np.zeros((n, width), np.int64)
    starts = np.concatenate([[0], np.cumsum(lens)[:-1]])
    for i, (a, k) in enumerate(zip(starts, lens)):
        out[i, :k] = flat[a : a + k]
    return out


def _gathered_targets(flat, lens):
    """The (N, S) padded form of concatenated targets `flat` (a graph value) of known lengths:
    row i is `flat[start_i : start_i + lens[i]]`, then zeros."""
    width = max(int(lens.max(initial=0)), 1)
    starts = np.concatenate([[0], np.cumsum(lens)[:-1]]).astype(np.int64)
    offsets = np.arange(width, dtype=np.int64).reshape(1, -1)
    inside = offsets < lens.reshape(-1, 1)
    if not inside.any():  # (every target empty: nothing to read)
        return np.zeros((len(lens), width), np.int64)
    index = np.where(inside, starts.reshape(-1, 1) + offsets, 0)
    picked = F.take(flat, F.constant(index, graph=flat.graph), 0)
    return F.where(F.constant(inside, graph=flat.graph), picked, 0)


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
    reduction = reduction_of(None, None, reduction)
    lp = F.core.lift(log_probs)[0]
    (targets,) = F.core.lift(targets)
    if not 2 <= lp.ndim <= 3 or not 1 <= targets.ndim <= 2:
        message = (f"ctc_loss: expected (T, N, C) or (T, C) log_probs and (N, S) or (S,) "
                   f"targets, got {list(lp.shape)} and {list(targets.shape)}")  # fmt: skip
        raise call_error(ShapeMismatchError, message, "ctc_loss", lp, targets)
    float_kernel("ctc_loss_cpu", "ctc_loss", lp)
    if 0 in tuple(lp.shape):
        raise call_error(UsageError, "log_probs tensor must not be empty", "ctc_loss", lp)
    for name, lengths in (("input_lengths", input_lengths), ("target_lengths", target_lengths)):
        if hasattr(lengths, "dtype") and np.dtype(lengths.dtype).kind not in "iu":
            raise call_error(UsageError, f"{name} must be integral", "ctc_loss", lengths)
    unbatched = lp.ndim == 2  # (T, C), one sequence: its "none" loss is 0-d, as PyTorch's
    if unbatched:
        lp = F.unsqueeze(lp, 1)
    steps, n, _ = lp.shape
    _check_input_lengths(input_lengths, steps)
    if unbatched:  # (its target (S,) is the padded form of one sequence)
        targets = F.reshape(targets, (1, -1))
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
    # no step at all (input length 0): only the empty target is reached, with probability 1
    nothing = np.where(np.arange(width) == 0, 0.0, -np.inf).astype(dt.as_dtype(lp.dtype))
    alpha = F.where(F.reshape(F.greater(in_len, 0), (n, 1)), alpha, nothing.reshape(1, width))
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
    return F.squeeze(loss, 0) if unbatched else loss


def _check_input_lengths(lengths, steps: int) -> None:
    """PyTorch's check of the input lengths where their values are known (a list, or a tensor
    eagerly): none above the T steps of the log-probabilities (RuntimeError)."""
    values = lengths if isinstance(lengths, (list, tuple, int)) else getattr(lengths, "_data", None)
    if values is None:
        return
    values = np.asarray(values).reshape(-1)
    if values.size and int(values.min()) < 0:
        raise UsageError("ctc_loss: Expected input_lengths to have value at least 0, but got "
                         f"value {int(values.min())}")  # fmt: skip
    if values.size and int(values.max()) > steps:
        raise UsageError(f"ctc_loss: Expected input_lengths to have value at most {steps}, but "
                         f"got value {int(values.max())}")  # fmt: skip
