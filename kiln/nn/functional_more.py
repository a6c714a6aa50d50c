"""More of PyTorch's `nn.functional`: `gumbel_softmax`, fractional max pooling (random
windows from kiln's generator), the `*_with_indices` pooling forms, `pdist` and
`multi_head_attention_forward` (nn.MultiheadAttention's computation on given weights).
Each works on eager Tensors, on Symbols in graph mode and under `kn.compile`.

>>> import kiln as kn
>>> y = kn.nn.functional.gumbel_softmax(kn.zeros(2, 3), hard=True)
>>> y.sum(-1).tolist()
[1.0, 1.0]
"""

from __future__ import annotations

import math

import numpy as np

from .. import dtypes as dt
from .. import frontend as F
from ..errors import (
    ArgumentAssertionError,
    ArgumentError,
    ShapeAssertionError,
    ShapeMismatchError,
    UsageError,
    call_error,
)
from ..frontend.nn_pool import adaptive_max_pool1d, empty_pool_result, window_argmax
from ..graph.core import Symbol
from .attention import attend, check_shapes
from .functional_attention import linear

__all__ = [
    "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices",
    "adaptive_max_pool3d_with_indices", "conv_tbc", "linear_cross_entropy",
    "native_channel_shuffle", "fractional_max_pool2d",
    "fractional_max_pool2d_with_indices", "fractional_max_pool3d",
    "fractional_max_pool3d_with_indices", "gumbel_softmax", "max_pool1d_with_indices",
    "max_pool2d_with_indices", "max_pool3d_with_indices", "multi_head_attention_forward",
    "pdist",
]  # fmt: skip


def _uniform(like, shape):
    """U[0, 1) draws in `like`'s dtype: a random node (fresh per run) beside a Symbol, else
    drawn now from kiln's generator (a random node too inside a `kn.compile` trace)."""
    if isinstance(like, Symbol):
        from ..frontend.random import uniform

        return uniform(tuple(shape), dtype=like.dtype)
    import kiln

    return kiln.rand(tuple(shape), dtype=like.dtype)


def gumbel_softmax(logits, tau: float = 1, hard: bool = False, eps: float = 1e-10,
                   dim: int = -1):  # fmt: skip
    """Samples of the Gumbel-softmax distribution: `softmax((logits + g) / tau, dim)` with g
    standard Gumbel noise; with `hard`, the one-hot of its argmax in the forward pass and the
    soft sample's gradient (straight-through). `eps` is unused, as in PyTorch.

    >>> import kiln as kn
    >>> y = kn.nn.functional.gumbel_softmax(kn.tensor([[0.0, 50.0]]), tau=0.5)
    >>> y.argmax(-1).tolist()
    [1]
    """
    (x,) = F.core.lift(logits)
    u = _uniform(x, x.shape)
    gumbels = F.neg(F.log(F.neg(F.log1p(F.neg(u)))))  # -log(Exp(1)), Exp(1) = -log(1 - u)
    y_soft = F.softmax(F.div(F.add(x, gumbels), tau), dim)
    if not hard:
        return y_soft
    d = dim % max(x.ndim, 1)
    index = F.argmax(y_soft, d, keepdim=True)
    y_hard = F.scatter(F.mul(y_soft, 0.0), d, index, 1.0)
    return F.add(F.sub(y_hard, F.stop_gradient(y_soft)), y_soft)


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,  # noqa: A002
                            ceil_mode: bool = False, return_indices: bool = False):  # fmt: skip
    """`max_pool1d` that always returns `(output, indices)`, each maximum's index into L.

    >>> import kiln as kn
    >>> out, idx = kn.nn.functional.max_pool1d_with_indices(kn.tensor([[1.0, 3.0, 2.0, 0.0]]), 2)
    >>> idx.tolist()
    [[1, 2]]
    """
    return F.max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,  # noqa: A002
                            ceil_mode: bool = False, return_indices: bool = False):  # fmt: skip
    """`max_pool2d` that always returns `(output, indices)`, each maximum's flat index into
    H * W.

    >>> import kiln as kn
    >>> out, idx = kn.nn.functional.max_pool2d_with_indices(kn.arange(16.0).reshape(1, 4, 4), 2)
    >>> idx.tolist()
    [[[5, 7], [13, 15]]]
    """
    return F.max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,  # noqa: A002
                            ceil_mode: bool = False, return_indices: bool = False):  # fmt: skip
    """`max_pool3d` that always returns `(output, indices)`, each maximum's flat index into
    D * H * W.

    >>> import kiln as kn
    >>> out, idx = kn.nn.functional.max_pool3d_with_indices(kn.arange(8.0).reshape(1, 2, 2, 2), 2)
    >>> idx.tolist()
    [[[[7]]]]
    """
    return F.max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices: bool = False):  # noqa: A002
    """`adaptive_max_pool1d` that always returns `(output, indices)`.

    >>> import kiln as kn
    >>> kn.nn.functional.adaptive_max_pool1d_with_indices(kn.tensor([[1.0, 3.0, 2.0]]), 1)[1]
    tensor([[1]])
    """
    return adaptive_max_pool1d(input, output_size, True)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices: bool = False):  # noqa: A002
    """`adaptive_max_pool2d` that always returns `(output, indices)` (flat into H * W).

    >>> import kiln as kn
    >>> x = kn.tensor([[[1.0, 3.0], [4.0, 2.0]]])
    >>> kn.nn.functional.adaptive_max_pool2d_with_indices(x, 1)[1].tolist()
    [[[2]]]
    """
    return F.adaptive_max_pool2d(input, output_size, True)


def adaptive_max_pool3d_with_indices(input, output_size, return_indices: bool = False):  # noqa: A002
    """`adaptive_max_pool3d` that always returns `(output, indices)` (flat into D * H * W).

    >>> import kiln as kn
    >>> x = kn.arange(8.0).reshape(1, 2, 2, 2)
    >>> kn.nn.functional.adaptive_max_pool3d_with_indices(x, 1)[1].tolist()
    [[[[7]]]]
    """
    return F.adaptive_max_pool3d(input, output_size, True)


def pdist(input, p: float = 2):  # noqa: A002
    """The p-norm distances between the rows of an (N, M) input, the upper triangle of
    `cdist(input, input)` row by row: N (N - 1) / 2 values (`kn.pdist`).

    >>> import kiln as kn
    >>> kn.nn.functional.pdist(kn.tensor([[0.0, 0.0], [3.0, 4.0], [0.0, 1.0]])).tolist()
    [5.0, 1.0, 4.242640495300293]
    """
    import kiln

    return kiln.pdist(input, p)


def conv_tbc(input, weight, bias, pad: int = 0):  # noqa: A002
    """A 1-d convolution of a (time, batch, channels) input (`kn.conv_tbc`).

    >>> import kiln as kn
    >>> kn.nn.functional.conv_tbc(kn.ones(3, 1, 1), kn.ones(1, 1, 2), kn.zeros(2)).shape
    kiln.Size([3, 1, 2])
    """
    import kiln

    return kiln.conv_tbc(input, weight, bias, pad)


def native_channel_shuffle(input, groups: int):  # noqa: A002
    """`channel_shuffle` (`kn.native_channel_shuffle`).

    >>> import kiln as kn
    >>> kn.nn.functional.native_channel_shuffle(kn.arange(4.0).reshape(1, 4), 2).tolist()
    [[0.0, 2.0, 1.0, 3.0]]
    """
    import kiln

    return kiln.native_channel_shuffle(input, groups)


def linear_cross_entropy(input, linear_weight, target, *, linear_bias=None, weight=None,  # noqa: A002
                         reduction: str = "mean", ignore_index=None, label_smoothing: float = 0.0,
                         options=None):  # fmt: skip
    """`cross_entropy(linear(input, linear_weight, linear_bias), target, ...)`, PyTorch's
    reference computation of this fused loss, with its checks: input (in) or (N, in), a
    weight (C, d_1, ..., d_K, in) gives the K-dimensional loss of a batched input (`options`,
    its chunking strategy, changes nothing here); `ignore_index=None` is -100 for class
    indices, and refused with probabilities.

    >>> import kiln as kn
    >>> x, w = kn.tensor([[1.0, 0.0]]), kn.tensor([[0.0, 0.0], [0.0, 0.0]])
    >>> round(kn.nn.functional.linear_cross_entropy(x, w, kn.tensor([1])).item(), 4)
    0.6931
    """
    from .functional import cross_entropy

    x, w, t = F.core.lift(input, linear_weight, target)
    if not 1 <= x.ndim <= 2:
        _lce_error(f"expected input with dimensionality 1 or 2, got {x.ndim}", x, w)
    if w.ndim < 2:
        _lce_error(f"expected linear_weight with dimensionality at least 2, got {w.ndim}", x, w)
    if x.shape[-1] != w.shape[-1]:
        _lce_error("expected equal input and linear_weight last dimensions (in_features), got "
                   f"{x.shape[-1]} and {w.shape[-1]}, respectively", x, w)  # fmt: skip
    head = tuple(w.shape[:-1])  # (C, d_1, ..., d_K)
    if linear_bias is not None and tuple(linear_bias.shape) != head:
        _lce_error(f"expected linear_bias shape {head}, got {tuple(linear_bias.shape)}", x, w)
    if len(head) > 1 and x.ndim == 1:
        _lce_error(f"K-dimensional loss defined by linear_weight shape {tuple(w.shape)} "
                   f"requires batched input, (N, {x.shape[-1]}), got unbatched input with "
                   f"shape {tuple(x.shape)}", x, w)  # fmt: skip
    if tuple(t.shape) == (*x.shape[:-1], *head) and ignore_index is not None:
        message = "ignore_index cannot be specified when target contains probabilities"
        _lce_error(message, x, w, UsageError)
    if w.ndim == 2:
        logits = linear(x, w, linear_bias)
    else:  # weight (C, d_1, ..., d_K, in): logits (N, C, d_1, ..., d_K)
        logits = F.tensordot(x, w, ([x.ndim - 1], [w.ndim - 1]))
        if linear_bias is not None:
            logits = F.add(logits, linear_bias)
    ignore = -100 if ignore_index is None else ignore_index
    return cross_entropy(logits, t, weight, ignore_index=ignore, reduction=reduction,
                         label_smoothing=label_smoothing)  # fmt: skip


def _lce_error(message: str, x, w, cls=ShapeMismatchError):
    raise call_error(cls, message, "linear_cross_entropy", x, w)


# -- fractional max pooling ------------------------------------------------------------------


def _tuple(v, n: int) -> tuple:
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * n


def _starts(u, size: int, out: int, pool: int, dtype):
    """PyTorch's pseudo-random window starts for one spatial dim: `u` (N, C) samples give
    (N, C, out) starts `int((i + u) * alpha) - int(u * alpha)`, the last window flush with
    the end (alpha = (size - pool) / (out - 1), in the input's dtype)."""
    last = F.add(F.mul(F.unsqueeze(u, -1), 0.0), float(size - pool))
    if out == 1:
        return F.cast(last, dt.int64)
    alpha = np.asarray((size - pool) / (out - 1), dtype)
    steps = F.core.lift(np.arange(out - 1, dtype=dtype), context=(u,))[0]
    shifted = F.trunc(F.mul(F.add(steps, F.unsqueeze(u, -1)), alpha))
    starts = F.sub(shifted, F.trunc(F.mul(F.unsqueeze(u, -1), alpha)))
    return F.cast(F.cat([starts, last], -1), dt.int64)


def _fractional(name: str, n: int, input, kernel_size, output_size, output_ratio,  # noqa: A002
                samples):  # fmt: skip
    (x,) = F.core.lift(input)
    if x.ndim not in (n + 1, n + 2):
        raise call_error(ShapeMismatchError, f"{name}: expected {n + 1}D or {n + 2}D input, "
                         f"got {x.ndim}D", name, x)  # fmt: skip
    batched = x.ndim == n + 2
    if not batched:
        x = F.unsqueeze(x, 0)
    if any(s == 0 for s in x.shape[1:]):
        raise call_error(ShapeMismatchError, f"{name}: Expected input to have non-zero size "
                         f"for non-batch dimensions, got input of size {list(x.shape)}", name,
                         x)  # fmt: skip
    spatial = tuple(x.shape[2:])
    kernel = _tuple(kernel_size, n)
    if output_size is None and output_ratio is None:
        raise ArgumentError(f"{name} requires specifying either an output_size or an "
                            "output_ratio")  # fmt: skip
    if output_size is None:
        ratio = _tuple(output_ratio, n)
        out = tuple(int(s * r) for s, r in zip(spatial, ratio))
    else:
        out = _tuple(output_size, n)
    for s, k, o in zip(spatial, kernel, out):
        if o + k - 1 > s:
            why = f"{name}: pool size {k} too large for input size {s} and output size {o}"
            raise call_error(ShapeMismatchError, why, name, x)
    if 0 in out:  # no window: an empty result (indices too)
        output = empty_pool_result(x, out)
        indices = F.cast(output, "int64")
        return (output, indices) if batched else (F.squeeze(output, 0), F.squeeze(indices, 0))
    batch, channels = x.shape[0], x.shape[1]
    if samples is None:
        u = _uniform(x, (batch, channels, n))
    else:
        (u,) = F.core.lift(samples, context=(x,))
        u = F.cast(u, x.dtype) if u.dtype != x.dtype else u
    # PyTorch's sample order: the last spatial dim first (W, then H for 2-d; T, H, W for 3-d)
    order = (1, 0) if n == 2 else (0, 1, 2)
    flat_index = None
    for d in range(n):
        starts = _starts(u[:, :, order[d]], spatial[d], out[d], kernel[d], x.dtype)
        offsets = F.core.lift(np.arange(kernel[d], dtype=np.int64), context=(x,))[0]
        pos = F.add(F.unsqueeze(starts, -1), offsets)  # (N, C, out_d, k_d)
        shape = [batch, channels] + [1] * (2 * n)
        shape[2 + d], shape[2 + n + d] = out[d], kernel[d]
        pos = F.reshape(pos, tuple(shape))
        stride = int(np.prod(spatial[d + 1 :]))
        term = F.mul(pos, stride) if stride != 1 else pos
        flat_index = term if flat_index is None else F.add(flat_index, term)
    full = (batch, channels, *out, *kernel)
    windows = (batch, channels, math.prod(out) * math.prod(kernel))  # (no -1: batch may be 0)
    flat_index = F.reshape(F.broadcast_to(flat_index, full), windows)
    values = F.gather(F.reshape(x, (batch, channels, math.prod(spatial))), 2, flat_index)
    values = F.reshape(values, (batch, channels, *out, math.prod(kernel)))
    flat_index = F.reshape(flat_index, (batch, channels, *out, math.prod(kernel)))
    best = window_argmax(values, -1)  # PyTorch's pick: the first maximum, or the last NaN
    output = F.squeeze(F.gather(values, -1, best), -1)
    indices = F.squeeze(F.gather(flat_index, -1, best), -1)
    if not batched:
        output, indices = F.squeeze(output, 0), F.squeeze(indices, 0)
    return output, indices


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None,  # noqa: A002
                                       output_ratio=None, return_indices: bool = False,
                                       _random_samples=None):  # fmt: skip
    """Fractional max pooling over (N, C, H, W) or (C, H, W): maxima of `kernel_size`
    windows at pseudo-random positions giving `output_size` (or `output_ratio` of the input
    size), one draw per (sample, channel) from kiln's generator unless `_random_samples`
    (N, C, 2) in [0, 1) are given. Returns `(output, indices)` (flat into H * W).

    >>> import kiln as kn
    >>> x = kn.arange(16.0).reshape(1, 4, 4)
    >>> out, idx = kn.nn.functional.fractional_max_pool2d_with_indices(x, 2, output_size=2)
    >>> out.tolist()
    [[[5.0, 7.0], [13.0, 15.0]]]
    """
    return _fractional("fractional_max_pool2d", 2, input, kernel_size, output_size,
                       output_ratio, _random_samples)  # fmt: skip


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None,  # noqa: A002
                          return_indices: bool = False, _random_samples=None):  # fmt: skip
    """`fractional_max_pool2d_with_indices`'s output, with the indices when `return_indices`.

    >>> import kiln as kn
    >>> kn.nn.functional.fractional_max_pool2d(kn.ones(1, 5, 5), 2, output_ratio=0.5).shape
    kiln.Size([1, 2, 2])
    """
    out = fractional_max_pool2d_with_indices(input, kernel_size, output_size, output_ratio,
                                             False, _random_samples)  # fmt: skip
    return out if return_indices else out[0]


def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None,  # noqa: A002
                                       output_ratio=None, return_indices: bool = False,
                                       _random_samples=None):  # fmt: skip
    """Fractional max pooling over (N, C, T, H, W) or (C, T, H, W) (`_random_samples`:
    (N, C, 3)). Returns `(output, indices)` (flat into T * H * W).

    >>> import kiln as kn
    >>> x = kn.arange(8.0).reshape(1, 2, 2, 2)
    >>> kn.nn.functional.fractional_max_pool3d_with_indices(x, 2, output_size=1)[1].tolist()
    [[[[7]]]]
    """
    return _fractional("fractional_max_pool3d", 3, input, kernel_size, output_size,
                       output_ratio, _random_samples)  # fmt: skip


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None,  # noqa: A002
                          return_indices: bool = False, _random_samples=None):  # fmt: skip
    """`fractional_max_pool3d_with_indices`'s output, with the indices when `return_indices`.

    >>> import kiln as kn
    >>> kn.nn.functional.fractional_max_pool3d(kn.ones(1, 4, 4, 4), 2, output_size=3).shape
    kiln.Size([1, 3, 3, 3])
    """
    out = fractional_max_pool3d_with_indices(input, kernel_size, output_size, output_ratio,
                                             False, _random_samples)  # fmt: skip
    return out if return_indices else out[0]


# -- attention -------------------------------------------------------------------------------


def multi_head_attention_forward(
    query, key, value, embed_dim_to_check: int, num_heads: int, in_proj_weight, in_proj_bias,
    bias_k, bias_v, add_zero_attn: bool, dropout_p: float, out_proj_weight, out_proj_bias,
    training: bool = True, key_padding_mask=None, need_weights: bool = True, attn_mask=None,
    use_separate_proj_weight: bool = False, q_proj_weight=None, k_proj_weight=None,
    v_proj_weight=None, static_k=None, static_v=None, average_attn_weights: bool = True,
    is_causal: bool = False,
):  # fmt: skip
    """`nn.MultiheadAttention`'s computation on given weights: inputs (L, N, E) or
    unbatched (L, E); returns `(output, weights)` (weights None unless `need_weights`).

    >>> import kiln as kn
    >>> x = kn.ones(3, 2, 4)
    >>> out, w = kn.nn.functional.multi_head_attention_forward(
    ...     x, x, x, 4, 2, kn.ones(12, 4), None, None, None, False, 0.0, kn.eye(4), None)
    >>> tuple(out.shape), tuple(w.shape)
    ((3, 2, 4), (2, 3, 3))
    """
    q, k, v = F.core.lift(query, key, value)
    check_shapes(q, k, v, key_padding_mask, attn_mask, num_heads, embed_dim_to_check,
                 not use_separate_proj_weight)  # fmt: skip
    e = embed_dim_to_check
    if e % num_heads:  # PyTorch asserts it
        raise call_error(ShapeAssertionError, f"embed_dim {e} not divisible by num_heads "
                         f"{num_heads}", "multi_head_attention_forward", q)  # fmt: skip
    if use_separate_proj_weight:
        ws = (q_proj_weight, k_proj_weight, v_proj_weight)
        for name, w in zip("qkv", ws):
            if w is None:  # PyTorch asserts it
                raise ArgumentAssertionError(
                    f"use_separate_proj_weight is True but {name}_proj_weight is None"
                )
    else:
        if in_proj_weight is None:  # PyTorch asserts it
            raise ArgumentAssertionError("use_separate_proj_weight is False but "
                                         "in_proj_weight is None")  # fmt: skip
        ws = (in_proj_weight[:e], in_proj_weight[e : 2 * e], in_proj_weight[2 * e :])
    b = in_proj_bias
    bs = (None,) * 3 if b is None else (b[:e], b[e : 2 * e], b[2 * e :])
    unbatched = q.ndim == 2
    if unbatched:
        q, k, v = (F.unsqueeze(t, 0) for t in (q, k, v))
        if key_padding_mask is not None:
            key_padding_mask = F.unsqueeze(F.core.lift(key_padding_mask)[0], 0)
    else:
        q, k, v = (F.transpose(t, 0, 1) for t in (q, k, v))
    out, weights = attend(
        q, k, v, num_heads, (ws, bs), bias_k, bias_v, add_zero_attn,
        dropout_p if training else 0.0, lambda t: linear(t, out_proj_weight, out_proj_bias),
        key_padding_mask, need_weights, attn_mask, average_attn_weights, is_causal,
        static_k, static_v,
    )  # fmt: skip
    if unbatched:
        return F.squeeze(out, 0), None if weights is None else F.squeeze(weights, 0)
    return F.transpose(out, 0, 1), weights
