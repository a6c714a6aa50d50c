"""PyTorch's top-level forms of nn functions (`torch.kl_div`, `torch.group_norm`,
`torch.convolution`, `torch.native_layer_norm`, ...; the recurrent ones are in
torch_rnn_forms.py), with
the arguments of PyTorch's native functions: `reduction` as an int (0 none, 1 mean, 2 sum;
kiln takes the names too), `train` for dropout, the `native_*` functions' tuple results.
As in PyTorch's Python bindings, `reduction` defaults to 0 (none): `torch.kl_div(x, y)` is
elementwise.
Each works on eager Tensors, on Symbols in graph mode and under `kn.compile`.

>>> import kiln as kn
>>> kn.kl_div(kn.tensor([-1.0, -2.0]), kn.tensor([0.5, 0.5]), 2).item() > 0
True
"""

from __future__ import annotations

import warnings

import numpy as np

from .. import dtypes as dt
from ..eager.tensor import Tensor
from ..errors import ArgumentError, ShapeMismatchError, call_error
from .core import lift

__all__ = [
    "alpha_dropout", "alpha_dropout_", "binary_cross_entropy_with_logits", "bilinear",
    "constant_pad_nd", "convolution", "cosine_embedding_loss", "ctc_loss", "dropout_",
    "embedding_bag", "feature_alpha_dropout", "feature_alpha_dropout_", "feature_dropout",
    "feature_dropout_", "group_norm", "hinge_embedding_loss",
    "instance_norm", "kl_div", "margin_ranking_loss", "native_batch_norm",
    "native_dropout", "native_group_norm", "native_layer_norm", "poisson_nll_loss",
    "triplet_margin_loss", "affine_grid_generator",
    "conv_tbc", "embedding_renorm_", "grid_sampler", "grid_sampler_2d",
    "max_pool1d_with_indices", "native_channel_shuffle", "norm_except_dim",
    "adaptive_max_pool1d",
]  # fmt: skip

_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}


class _Namespace:
    """`kn.<name>` looked up on use: these functions build on the whole namespace (eager
    factories such as `ones_like` included), which is complete once kiln is imported."""

    def __getattr__(self, name):
        import kiln

        return getattr(kiln, name)


K = _Namespace()


def _nnf():
    from ..nn import functional  # nn imports the frontend: imported on use

    return functional


def _reduction(name: str, reduction) -> str:
    """PyTorch's native reduction enum (0, 1, 2) as its name; names pass through."""
    if isinstance(reduction, str) and reduction in _REDUCTIONS.values():
        return reduction
    if isinstance(reduction, int) and not isinstance(reduction, bool) and reduction in _REDUCTIONS:
        return _REDUCTIONS[reduction]
    raise ArgumentError(f"{name}: reduction must be 0 (none), 1 (mean) or 2 (sum), got "
                        f"{reduction!r}")  # fmt: skip


# -- losses ----------------------------------------------------------------------------------


def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None, reduction=0):  # noqa: A002
    """`torch.binary_cross_entropy_with_logits(input, target, weight, pos_weight, reduction)`:
    `F.binary_cross_entropy_with_logits` with PyTorch's native argument order.

    >>> import kiln as kn
    >>> round(kn.binary_cross_entropy_with_logits(kn.zeros(2), kn.ones(2), reduction=1).item(), 4)
    0.6931
    """
    r = _reduction("binary_cross_entropy_with_logits", reduction)
    return _nnf().binary_cross_entropy_with_logits(input, target, weight, reduction=r,
                                                   pos_weight=pos_weight)  # fmt: skip


def kl_div(input, target, reduction=0, *, log_target: bool = False):  # noqa: A002
    """`torch.kl_div(input, target, reduction=0, *, log_target=False)`: the pointwise
    `target * (log(target) - input)`, averaged over every element by default.

    >>> import kiln as kn
    >>> kn.kl_div(kn.tensor([0.0, 0.0]), kn.tensor([1.0, 1.0]), 0).tolist()
    [0.0, 0.0]
    """
    r = _reduction("kl_div", reduction)
    with warnings.catch_warnings():  # F.kl_div's 'mean' warning is nn.functional's alone
        warnings.filterwarnings("ignore", message="reduction: 'mean' divides")
        return _nnf().kl_div(input, target, reduction=r, log_target=log_target)


def cosine_embedding_loss(input1, input2, target, margin: float = 0.0, reduction=0):
    """`torch.cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=0)`.

    >>> import kiln as kn
    >>> kn.cosine_embedding_loss(kn.ones(1, 2), kn.ones(1, 2), kn.tensor([1.0])).tolist()
    [0.0]
    """
    r = _reduction("cosine_embedding_loss", reduction)
    return _nnf().cosine_embedding_loss(input1, input2, target, margin, reduction=r)


def margin_ranking_loss(input1, input2, target, margin: float = 0.0, reduction=0):
    """`torch.margin_ranking_loss(input1, input2, target, margin=0.0, reduction=0)`:
    `max(0, -target * (input1 - input2) + margin)`.

    >>> import kiln as kn
    >>> kn.margin_ranking_loss(kn.tensor([1.0]), kn.tensor([2.0]), kn.tensor([1.0])).tolist()
    [1.0]
    """
    r = _reduction("margin_ranking_loss", reduction)
    return _nnf().margin_ranking_loss(input1, input2, target, margin, reduction=r)


def hinge_embedding_loss(input, target, margin: float = 1.0, reduction=0):  # noqa: A002
    """`torch.hinge_embedding_loss(input, target, margin=1.0, reduction=0)`.

    >>> import kiln as kn
    >>> kn.hinge_embedding_loss(kn.tensor([0.25, 2.0]), kn.tensor([-1.0, 1.0]), 1.0, 0)
    tensor([0.7500, 2.0000])
    """
    r = _reduction("hinge_embedding_loss", reduction)
    return _nnf().hinge_embedding_loss(input, target, margin, reduction=r)


def triplet_margin_loss(anchor, positive, negative, margin: float = 1.0, p: float = 2.0,
                        eps: float = 1e-6, swap: bool = False, reduction=0):  # fmt: skip
    """`torch.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
    reduction)`.

    >>> import kiln as kn
    >>> kn.triplet_margin_loss(kn.zeros(1, 2), kn.zeros(1, 2), kn.ones(1, 2) * 5).tolist()
    [0.0]
    """
    r = _reduction("triplet_margin_loss", reduction)
    return _nnf().triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                      reduction=r)  # fmt: skip


def poisson_nll_loss(input, target, log_input: bool, full: bool, eps: float, reduction):  # noqa: A002
    """`torch.poisson_nll_loss(input, target, log_input, full, eps, reduction)`: every
    argument required, as PyTorch's native function.

    >>> import kiln as kn
    >>> kn.poisson_nll_loss(kn.zeros(2), kn.ones(2), True, False, 1e-8, 1).item()
    1.0
    """
    r = _reduction("poisson_nll_loss", reduction)
    return _nnf().poisson_nll_loss(input, target, log_input, full, eps=eps, reduction=r)


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank: int = 0, reduction=0,
             zero_infinity: bool = False):  # fmt: skip
    """`torch.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0,
    reduction=0, zero_infinity=False)`: `F.ctc_loss` with the native reduction enum.

    >>> import kiln as kn
    >>> lp = kn.zeros(1, 1, 2).log_softmax(2)
    >>> round(kn.ctc_loss(lp, kn.tensor([[1]]), [1], [1], reduction=2).item(), 4)
    0.6931
    """
    r = _reduction("ctc_loss", reduction)
    return _nnf().ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, r,
                           zero_infinity)  # fmt: skip


# -- layers ----------------------------------------------------------------------------------


def group_norm(input, num_groups: int, weight=None, bias=None, eps: float = 1e-5,  # noqa: A002
               cudnn_enabled: bool = True):  # fmt: skip
    """`torch.group_norm(input, num_groups, weight=None, bias=None, eps=1e-5,
    cudnn_enabled=True)`: `F.group_norm` (cudnn_enabled is ignored, as on CPU).

    >>> import kiln as kn
    >>> kn.group_norm(kn.tensor([[1.0, 3.0]]), 1, eps=0.0).tolist()
    [[-1.0, 1.0]]
    """
    return _nnf().group_norm(input, num_groups, weight, bias, eps)


def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats: bool,  # noqa: A002
                  momentum: float, eps: float, cudnn_enabled: bool):  # fmt: skip
    """`torch.instance_norm(input, weight, bias, running_mean, running_var, use_input_stats,
    momentum, eps, cudnn_enabled)`: PyTorch's native order (weight and bias before the
    running statistics, unlike `F.instance_norm`).

    >>> import kiln as kn
    >>> x = kn.tensor([[[1.0, 3.0]]])
    >>> kn.instance_norm(x, None, None, None, None, True, 0.1, 0.0, False).tolist()
    [[[-1.0, 1.0]]]
    """
    return _nnf().instance_norm(input, running_mean, running_var, weight, bias,
                                use_input_stats, momentum, eps)  # fmt: skip


def bilinear(input1, input2, weight, bias=None):
    """`torch.bilinear(input1, input2, weight, bias=None)`: `F.bilinear`.

    >>> import kiln as kn
    >>> kn.bilinear(kn.ones(1, 2), kn.ones(1, 3), kn.ones(1, 2, 3)).tolist()
    [[6.0]]
    """
    return _nnf().bilinear(input1, input2, weight, bias)


def constant_pad_nd(input, pad, value=0):  # noqa: A002
    """Pads with `value`: `pad` lists (before, after) pairs from the last dim back; negative
    amounts crop, as `F.pad(input, pad, value=value)`.

    >>> import kiln as kn
    >>> kn.constant_pad_nd(kn.tensor([1.0, 2.0]), (1, 2), 9.0).tolist()
    [9.0, 1.0, 2.0, 9.0, 9.0]
    """
    if isinstance(value, complex):  # F.pad takes real numbers (PyTorch's); this op complex
        value = np.asarray(value)
    return _nnf().pad(input, tuple(pad), value=value)


def convolution(input, weight, bias, stride, padding, dilation, transposed: bool,  # noqa: A002
                output_padding, groups: int):  # fmt: skip
    """`torch.convolution`: the convolution (or, `transposed`, its transpose) of as many
    spatial dims as `weight` has beyond two, every argument required.

    >>> import kiln as kn
    >>> y = kn.convolution(kn.ones(1, 1, 4), kn.ones(1, 1, 2), None, [1], [0], [1], False,
    ...                    [0], 1)
    >>> y.tolist()
    [[[2.0, 2.0, 2.0]]]
    """
    F = _nnf()
    spatial = weight.ndim - 2
    if spatial not in (1, 2, 3):
        raise call_error(ShapeMismatchError, f"convolution: expected a 3-d, 4-d or 5-d weight, "
                         f"got {weight.ndim}-d", "convolution", input, weight)  # fmt: skip
    if transposed:
        fn = getattr(F, f"conv_transpose{spatial}d")
        return fn(input, weight, bias, tuple(stride), tuple(padding), tuple(output_padding),
                  groups, tuple(dilation))  # fmt: skip
    fn = getattr(F, f"conv{spatial}d")
    return fn(input, weight, bias, tuple(stride), tuple(padding), tuple(dilation), groups)


def embedding_bag(weight, indices, offsets, scale_grad_by_freq: bool = False, mode: int = 0,
                  sparse: bool = False, per_sample_weights=None,
                  include_last_offset: bool = False, padding_idx=None):  # fmt: skip
    """`torch.embedding_bag(weight, indices, offsets, ...)`: PyTorch's native form, `mode`
    0 sum, 1 mean, 2 max, returning `(output, offset2bag, bag_size, max_indices)`: the bag
    of each index, each bag's size and (max) the row that gave each maximum.

    >>> import kiln as kn
    >>> w = kn.arange(6.0).reshape(3, 2)
    >>> out, offset2bag, bag_size, _ = kn.embedding_bag(w, kn.tensor([0, 2, 1]),
    ...                                                 kn.tensor([0, 2]), mode=1)
    >>> out.tolist(), offset2bag.tolist(), bag_size.tolist()
    ([[2.0, 3.0], [2.0, 3.0]], [0, 0, 1], [2, 1])
    """
    names = {0: "sum", 1: "mean", 2: "max"}
    if mode not in names:
        raise ArgumentError(f"embedding_bag: mode must be 0 (sum), 1 (mean) or 2 (max), got "
                            f"{mode!r}")  # fmt: skip
    F = _nnf()
    out = F.embedding_bag(indices, weight, offsets, None, 2, scale_grad_by_freq, names[mode],
                          sparse, per_sample_weights, include_last_offset, padding_idx)  # fmt: skip
    aux = _bag_bookkeeping(weight, indices, offsets, out, include_last_offset, padding_idx)
    offset2bag, bag_size, max_indices = aux
    if mode == 0:  # PyTorch's CPU kernel keeps no sizes for sum (nor bags, without padding)
        zero = K.zeros_like(bag_size)
        return out, offset2bag[:0] if padding_idx is None else offset2bag, zero, zero
    return out, offset2bag, bag_size, (max_indices if mode == 2 else bag_size)


def _bag_bookkeeping(weight, indices, offsets, out, include_last_offset, padding_idx):
    """The bag of each index, each bag's size without padding, and (for max) the row of
    `weight` that gave each maximum (0 for an empty bag)."""
    idx, off = lift(indices, offsets)
    starts = off[:-1] if include_last_offset else off
    ones = K.ones_like(idx)
    marks = K.zeros_like(idx).index_add(0, starts, K.ones_like(starts))
    offset2bag = K.cumsum(marks, 0) - 1
    kept = ones if padding_idx is None else (idx != padding_idx).to(idx.dtype)
    bag_size = K.zeros_like(starts).index_add(0, offset2bag, kept)
    rows = K.index_select(weight, 0, idx)
    hit = (rows == K.index_select(out, 0, offset2bag)) & (kept.unsqueeze(1) != 0)
    candidate = K.where(hit, idx.unsqueeze(1).expand_as(rows), -1)
    target = offset2bag.unsqueeze(1).expand_as(rows)
    base = K.zeros_like(out, dtype=idx.dtype)
    max_indices = base.scatter_reduce(0, target, candidate, "amax", include_self=False)
    return offset2bag, bag_size, K.clamp(max_indices, min=0)


# -- dropout ---------------------------------------------------------------------------------


def _in_place(name, fn, input):  # noqa: A002
    from ..nn.functional_act import in_place

    return in_place(name, fn, input, True)


def alpha_dropout(input, p: float, train: bool):  # noqa: A002
    """`torch.alpha_dropout(input, p, train)`: `F.alpha_dropout(input, p, training=train)`.

    >>> import kiln as kn
    >>> x = kn.ones(3)
    >>> kn.alpha_dropout(x, 0.5, False) is x
    True
    """
    return _nnf().alpha_dropout(input, p, train)


def alpha_dropout_(input, p: float, train: bool):  # noqa: A002
    """`alpha_dropout`, written into `input`.

    >>> import kiln as kn
    >>> x = kn.ones(3)
    >>> kn.alpha_dropout_(x, 0.5, False) is x
    True
    """
    return _nnf().alpha_dropout(input, p, train, inplace=True)


def feature_alpha_dropout(input, p: float, train: bool):  # noqa: A002
    """`torch.feature_alpha_dropout(input, p, train)`: alpha dropout of whole channels.

    >>> import kiln as kn
    >>> kn.feature_alpha_dropout(kn.ones(2, 3), 0.5, False).tolist()
    [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]
    """
    return _nnf().feature_alpha_dropout(input, p, train)


def feature_alpha_dropout_(input, p: float, train: bool):  # noqa: A002
    """`feature_alpha_dropout`, written into `input`.

    >>> import kiln as kn
    >>> x = kn.ones(2, 3)
    >>> kn.feature_alpha_dropout_(x, 0.5, False) is x
    True
    """
    return _nnf().feature_alpha_dropout(input, p, train, inplace=True)


def _feature_dropout(input, p, train):  # noqa: A002
    if not 0.0 <= p <= 1.0:
        raise ArgumentError(f"dropout probability has to be between 0 and 1, but got {p}")
    (x,) = lift(input)
    if x.ndim < 2:
        raise call_error(ShapeMismatchError, "feature_dropout: expected an input of at least 2 "
                         f"dims (N, C, ...), got {x.ndim}-d", "feature_dropout", x)  # fmt: skip
    if not train or p == 0.0:
        return x
    mask_shape = (*x.shape[:2], *(1,) * (x.ndim - 2))
    ones = K.ones(mask_shape, dtype=x.dtype) if isinstance(x, Tensor) else K.broadcast_to(
        lift(1.0, context=(x,), dtype=x.dtype)[0], mask_shape)  # fmt: skip
    return x * K.dropout(ones, p, True)


def feature_dropout(input, p: float, train: bool):  # noqa: A002
    """`torch.feature_dropout(input, p, train)`: zeroes whole channels of an (N, C, ...)
    input with probability `p` (one draw per sample and channel), scaling the rest by
    `1 / (1 - p)` while `train`.

    >>> import kiln as kn
    >>> y = kn.feature_dropout(kn.ones(2, 3, 4), 0.5, True)
    >>> bool((y.std(dim=2) == 0).all())
    True
    """
    return _feature_dropout(input, p, train)


def feature_dropout_(input, p: float, train: bool):  # noqa: A002
    """`feature_dropout`, written into `input`.

    >>> import kiln as kn
    >>> x = kn.ones(2, 3)
    >>> kn.feature_dropout_(x, 0.5, False) is x
    True
    """
    if not train or p == 0.0:
        return input
    return _in_place("feature_dropout_", lambda v: _feature_dropout(v, p, train), input)


def dropout_(input, p: float, train: bool):  # noqa: A002
    """`torch.dropout_(input, p, train)`: dropout written into `input`.

    >>> import kiln as kn
    >>> x = kn.ones(3)
    >>> kn.dropout_(x, 1.0, True) is x, x.tolist()
    (True, [0.0, 0.0, 0.0])
    """
    return _nnf().dropout(input, p, train, inplace=True)


def native_dropout(input, p: float, train):  # noqa: A002
    """`torch.native_dropout(input, p, train)`: `(output, mask)`, the mask bool (True where
    kept); with `train` False the output is a copy and the mask all True.

    >>> import kiln as kn
    >>> out, mask = kn.native_dropout(kn.ones(3), 0.5, False)
    >>> out.tolist(), mask.tolist()
    ([1.0, 1.0, 1.0], [True, True, True])
    """
    (x,) = lift(input)
    if train is False:
        return K.clone(x), K.ones_like(x, dtype=dt.bool_)
    if not 0.0 <= p <= 1.0:
        raise ArgumentError(f"dropout probability has to be between 0 and 1, but got {p}")
    mask = K.dropout(K.ones_like(x), p, True) != 0
    scale = 0.0 if p == 1.0 else 1.0 / (1.0 - p)
    return x * mask.to(x.dtype) * scale, mask


# -- native normalizations (with their saved statistics) -------------------------------------


def native_layer_norm(input, normalized_shape, weight, bias, eps: float):  # noqa: A002
    """`torch.native_layer_norm(input, normalized_shape, weight, bias, eps)`: `(output,
    mean, rstd)`, the statistics over the last `len(normalized_shape)` dims, kept as ones.

    >>> import kiln as kn
    >>> out, mean, rstd = kn.native_layer_norm(kn.tensor([[1.0, 3.0]]), [2], None, None, 0.0)
    >>> out.tolist(), mean.tolist(), rstd.tolist()
    ([[-1.0, 1.0]], [[2.0]], [[1.0]])
    """
    (x,) = lift(input)
    k = len(tuple(normalized_shape))
    dims = tuple(range(x.ndim - k, x.ndim))
    xf = x.float() if x.dtype in (dt.float16, dt.bfloat16) else x
    mean = K.mean(xf, dims, keepdim=True)
    rstd = K.rsqrt(K.var(xf, dims, correction=0, keepdim=True) + eps)
    out = _nnf().layer_norm(x, tuple(normalized_shape), weight, bias, eps)
    stats = _stats_dtype(x, weight)
    return out, mean.to(stats), rstd.to(stats)


def _stats_dtype(x, weight):
    """The dtype of PyTorch's saved layer/group norm statistics: a half input's own, or
    float32 with float32 parameters (computed in float32 and rounded once)."""
    if x.dtype in (dt.float16, dt.bfloat16) and weight is not None:
        (w,) = lift(weight)
        return w.dtype if w.dtype == dt.float32 else x.dtype
    return x.dtype


def native_batch_norm(input, weight, bias, running_mean, running_var, training: bool,  # noqa: A002
                      momentum: float, eps: float):  # fmt: skip
    """`torch.native_batch_norm(...)`: `(output, save_mean, save_invstd)`; the batch's mean
    and `1/sqrt(var + eps)` per channel when `training` (running statistics updated in place,
    as `F.batch_norm`), empty tensors otherwise.

    >>> import kiln as kn
    >>> x = kn.tensor([[1.0], [3.0]])
    >>> out, mean, invstd = kn.native_batch_norm(x, None, None, None, None, True, 0.1, 0.0)
    >>> out.tolist(), mean.tolist(), invstd.tolist()
    ([[-1.0], [1.0]], [2.0], [1.0])
    """
    (x,) = lift(input)
    out = _nnf().batch_norm(x, running_mean, running_var, weight, bias, training, momentum, eps)
    if not training:
        empty = K.zeros_like(x.reshape(-1)[:0])
        return out, empty, empty
    dims = (0, *range(2, x.ndim))
    xf = x.float() if x.dtype in (dt.float16, dt.bfloat16) else x
    mean = K.mean(xf, dims)
    invstd = K.rsqrt(K.var(xf, dims, correction=0) + eps)
    return out, mean, invstd


def native_group_norm(input, weight, bias, N: int, C: int, HxW: int, group: int, eps: float):  # noqa: A002, N803
    """`torch.native_group_norm(input, weight, bias, N, C, HxW, group, eps)`: `(output,
    mean, rstd)`, the statistics of shape (N, group).

    >>> import kiln as kn
    >>> out, mean, rstd = kn.native_group_norm(kn.tensor([[1.0, 3.0]]), None, None, 1, 2, 1,
    ...                                        1, 0.0)
    >>> out.tolist(), mean.tolist(), rstd.tolist()
    ([[-1.0, 1.0]], [[2.0]], [[1.0]])
    """
    (x,) = lift(input)
    if tuple(x.shape[:2]) != (N, C):
        raise call_error(ShapeMismatchError, f"native_group_norm: input of shape "
                         f"{tuple(x.shape)} does not start with (N, C) = ({N}, {C})",
                         "native_group_norm", x)  # fmt: skip
    grouped = x.reshape(N, group, -1)
    xf = grouped.float() if x.dtype in (dt.float16, dt.bfloat16) else grouped
    mean = K.mean(xf, 2)
    rstd = K.rsqrt(K.var(xf, 2, correction=0) + eps)
    stats = _stats_dtype(x, weight)
    return _nnf().group_norm(x, group, weight, bias, eps), mean.to(stats), rstd.to(stats)


# -- the remaining native nn helpers ---------------------------------------------------------


def max_pool1d_with_indices(input, kernel_size, stride=(), padding=0, dilation=1,  # noqa: A002
                            ceil_mode: bool = False):  # fmt: skip
    """`torch.max_pool1d_with_indices`: `(output, indices)` of `F.max_pool1d` (an empty
    `stride`, PyTorch's default, is the kernel size).

    >>> import kiln as kn
    >>> kn.max_pool1d_with_indices(kn.tensor([[1.0, 3.0, 2.0, 0.0]]), 2)[1].tolist()
    [[1, 2]]
    """
    stride = (
        None if stride is None or (isinstance(stride, (tuple, list)) and not stride) else stride
    )
    return _nnf().max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def adaptive_max_pool1d(input, output_size):  # noqa: A002
    """`torch.adaptive_max_pool1d`: `(output, indices)` of `F.adaptive_max_pool1d` (the
    top-level form has no `return_indices`: it returns both).

    >>> import kiln as kn
    >>> kn.adaptive_max_pool1d(kn.tensor([[1.0, 3.0, 2.0, 0.0]]), 2)[1].tolist()
    [[1, 2]]
    """
    return _nnf().adaptive_max_pool1d(input, output_size, True)


def native_channel_shuffle(input, groups: int):  # noqa: A002
    """`torch.native_channel_shuffle(input, groups)`: `channel_shuffle`.

    >>> import kiln as kn
    >>> kn.native_channel_shuffle(kn.arange(6.0).reshape(1, 6, 1), 2).reshape(-1).tolist()
    [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]
    """
    return _nnf().channel_shuffle(input, groups)


def norm_except_dim(v, pow: float = 2, dim: int = 0):  # noqa: A002
    """The `pow`-norm of `v` over every dim but `dim`, kept as size 1 (weight norm's helper);
    `dim=-1` gives the norm of all of `v`.

    >>> import kiln as kn
    >>> kn.norm_except_dim(kn.tensor([[3.0, 0.0], [4.0, 1.0]]), 2, 1).tolist()
    [[5.0, 1.0]]
    """
    (x,) = lift(v)
    if dim == -1:
        return K.linalg.vector_norm(x, pow)
    d = dim % x.ndim
    others = tuple(i for i in range(x.ndim) if i != d)
    return K.linalg.vector_norm(x, pow, others, keepdim=True)


def conv_tbc(input, weight, bias, pad: int = 0):  # noqa: A002
    """A 1-d convolution of a (time, batch, channels) input with a (kernel, in, out) weight
    and an (out,) bias, padded by `pad` each side: (time', batch, out).

    >>> import kiln as kn
    >>> kn.conv_tbc(kn.ones(4, 1, 1), kn.ones(2, 1, 1), kn.zeros(1)).reshape(-1).tolist()
    [2.0, 2.0, 2.0]
    """
    x, w, b = lift(input, weight, bias)
    y = _nnf().conv1d(K.permute(x, (1, 2, 0)), K.permute(w, (2, 1, 0)), b, padding=pad)
    return K.permute(y, (2, 0, 1))


_INTERPOLATION = {0: "bilinear", 1: "nearest", 2: "bicubic"}
_PADDING = {0: "zeros", 1: "border", 2: "reflection"}


def grid_sampler(input, grid, interpolation_mode: int, padding_mode: int,  # noqa: A002
                 align_corners: bool):  # fmt: skip
    """`torch.grid_sampler`: `F.grid_sample` with PyTorch's native enums (interpolation 0
    bilinear, 1 nearest, 2 bicubic; padding 0 zeros, 1 border, 2 reflection).

    >>> import kiln as kn
    >>> x = kn.arange(4.0).reshape(1, 1, 2, 2)
    >>> kn.grid_sampler(x, kn.zeros(1, 1, 1, 2), 0, 0, False).item()
    1.5
    """
    if interpolation_mode not in _INTERPOLATION or padding_mode not in _PADDING:
        raise ArgumentError(f"grid_sampler: interpolation_mode must be 0, 1 or 2 and "
                            f"padding_mode 0, 1 or 2, got {interpolation_mode} and "
                            f"{padding_mode}")  # fmt: skip
    return _nnf().grid_sample(input, grid, _INTERPOLATION[interpolation_mode],
                              _PADDING[padding_mode], align_corners)  # fmt: skip


def grid_sampler_2d(input, grid, interpolation_mode: int, padding_mode: int,  # noqa: A002
                    align_corners: bool):  # fmt: skip
    """`grid_sampler` of a 4-d input.

    >>> import kiln as kn
    >>> kn.grid_sampler_2d(kn.ones(1, 1, 2, 2), kn.zeros(1, 1, 1, 2), 1, 0, True).item()
    1.0
    """
    return grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners)


def affine_grid_generator(theta, size, align_corners: bool):
    """`torch.affine_grid_generator(theta, size, align_corners)`: `F.affine_grid`.

    >>> import kiln as kn
    >>> theta = kn.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]])
    >>> kn.affine_grid_generator(theta, [1, 1, 1, 2], False).tolist()
    [[[[-0.5, 0.0], [0.5, 0.0]]]]
    """
    return _nnf().affine_grid(theta, list(size), align_corners)


def embedding_renorm_(input, indices, max_norm: float, norm_type: float):  # noqa: A002
    """In place: rescales each row of the embedding table `input` that `indices` names and
    whose `norm_type`-norm exceeds `max_norm` to norm `max_norm` (as `Embedding(max_norm=)`
    does before a lookup).

    >>> import kiln as kn
    >>> w = kn.tensor([[3.0, 4.0], [0.3, 0.4]])
    >>> _ = kn.embedding_renorm_(w, kn.tensor([0, 1]), 1.0, 2.0)
    >>> [round(v, 4) for v in w[0].tolist()], w[1].tolist()
    ([0.6, 0.8], [0.30000001192092896, 0.4000000059604645])
    """

    def renorm(w):
        (idx,) = lift(indices, context=(w,))
        named = K.zeros_like(w[:, 0]).index_fill(0, idx.reshape(-1), 1.0) != 0
        norms = K.linalg.vector_norm(w, norm_type, (1,), keepdim=True)
        scale = max_norm / (norms + 1e-7)
        shrink = (named.unsqueeze(1)) & (norms > max_norm)
        return K.where(shrink, w * scale, w)

    return _in_place("embedding_renorm_", renorm, input)
