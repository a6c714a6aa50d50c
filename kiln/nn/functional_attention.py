"""PyTorch's `scaled_dot_product_attention`, `linear` and `one_hot` in `kn.nn.functional`,
composed of kiln's ops (eager, graph mode and `kn.compile` alike)."""

from __future__ import annotations

import math

import numpy as np

from .. import dtypes as dt
from .. import frontend as F
from .. import shapes as sh
from ..eager import Tensor, fused
from ..eager.autograd import name_history
from ..errors import DTypeMismatchError, UsageError, call_error
from ..frontend.autocast import autocast_op
from ..graph.core import Symbol

__all__ = ["linear", "one_hot", "scaled_dot_product_attention"]


def _causal_mask(q_len, k_len):
    return np.tril(np.ones((q_len, k_len), bool))


def _safe_softmax(scores):
    """Softmax over the last dim, 0 in rows where every score is -inf (PyTorch's
    `_safe_softmax`): such rows take neither a NaN value nor a NaN gradient."""
    dead = F.all(F.eq(scores, -math.inf), -1, keepdim=True)
    weights = F.softmax(F.where(dead, 0.0, scores), -1)
    return F.where(dead, 0.0, weights)


@autocast_op("lower")
def scaled_dot_product_attention(
    query,
    key,
    value,
    attn_mask=None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale=None,
    enable_gqa: bool = False,
):
    """`softmax(q @ k^T * scale + mask) @ v` over (..., L, E) queries, (..., S, E) keys and
    (..., S, Ev) values: `attn_mask` boolean (True takes part) or float (added),
    `is_causal` masks keys after each query, `scale` defaults to `1 / sqrt(E)`, and
    `dropout_p` drops attention weights (always, as PyTorch's function does). With
    `enable_gqa`, each key/value head serves a group of query heads (dim -3).

    >>> import kiln as kn
    >>> q = kn.tensor([[[1.0, 0.0], [0.0, 1.0]]])
    >>> v = kn.tensor([[[1.0, 2.0], [3.0, 4.0]]])
    >>> kn.nn.functional.scaled_dot_product_attention(q, q, v, is_causal=True)[0, 0]
    tensor([1., 2.])
    """
    q, k, v = F.core.lift(query, key, value)
    low = q.dtype if q.dtype in _HALF else None
    if low is not None:  # in float32, rounded once, as PyTorch's CPU kernels (no overflow)
        q, k, v = (F.cast(t, dt.float32) for t in (q, k, v))
    if enable_gqa and q.shape[-3] != k.shape[-3]:
        groups = q.shape[-3] // k.shape[-3]
        k = F.repeat_interleave(k, groups, -3)
        v = F.repeat_interleave(v, groups, -3)
    e = q.shape[-1]
    scale = 1.0 / math.sqrt(e) if scale is None else float(scale)
    scores = F.mul(F.matmul(q, F.transpose(k, -2, -1)), scale)
    if is_causal:
        if attn_mask is not None:
            raise UsageError(
                "_scaled_dot_product_attention: Explicit attn_mask should not be set when "
                "is_causal=True"
            )
        attn_mask = _causal_mask(q.shape[-2], k.shape[-2])
    if attn_mask is not None:
        (mask,) = F.core.lift(attn_mask, context=(scores,))
        if mask.dtype == dt.bool_:
            scores = F.where(mask, scores, -math.inf)
        else:
            scores = F.add(scores, mask)
    weights = _safe_softmax(scores)
    if dropout_p > 0.0:
        weights = F.dropout(weights, dropout_p)
    out = F.matmul(weights, v)
    return out if low is None else F.cast(out, low)


@autocast_op("lower")
def linear(input, weight, bias=None):  # noqa: A002
    """`input @ weight.T + bias`, weight (out_features, in_features).

    >>> import kiln as kn
    >>> kn.nn.functional.linear(kn.ones(1, 2), kn.tensor([[1.0, 2.0]]), kn.tensor([0.5]))
    tensor([[3.5000]])
    """
    if isinstance(input, Tensor) and (y := fused.linear(input, weight, bias)) is not None:
        return y  # eagerly, a matrix with a bias: one tape entry, as PyTorch's addmm
    if isinstance(input, Tensor) and input.ndim > 2 and bias is not None and input.is_contiguous():
        # a batch: PyTorch's view of the addmm of a view of it (its graph, and addmm's sums)
        y = fused.linear(input.view(-1, input.shape[-1]), weight, bias)
        if y is not None:
            return y.view(*input.shape[:-1], y.shape[-1])
    if bias is not None and getattr(input, "dtype", None) in _HALF:
        # as PyTorch's (addmm): the bias is added to the float32 product, rounded once
        low = input.dtype
        x, w, b = (F.cast(v, dt.float32) for v in (input, weight, bias))
        return F.cast(F.add(F.matmul(x, F.t(w)), b), low)
    wt = F.t(weight)
    y = F.matmul(input, wt)
    y = y if bias is None else F.add(y, bias)
    ndim = getattr(input, "ndim", 1)
    if ndim < 2:  # PyTorch's name of a vector's depends on what requires grad: kiln's stays
        return y
    if ndim == 2:  # PyTorch's (torch 2.13): addmm(bias, input, weight.t()) or mm
        inputs = (input, wt) if bias is None else (bias, input, wt)
        return name_history(y, "MmBackward0" if bias is None else "AddmmBackward0", *inputs)
    # a view of that product for a batch (of a view of the input: not kiln's steps)
    return name_history(y, "UnsafeViewBackward0" if bias is None else "ViewBackward0", input)


_HALF = (dt.bfloat16, dt.float16)


def one_hot(tensor, num_classes: int = -1):
    """int64 one-hot rows of integer class indices; `num_classes=-1` takes the largest index
    plus one (in a graph and under kn.compile, a length the run binds: `arange_of`).

    >>> import kiln as kn
    >>> kn.nn.functional.one_hot(kn.tensor([0, 2]))
    tensor([[1, 0, 0],
            [0, 0, 1]])
    """
    (ids,) = F.core.lift(tensor)
    if not (ids.dtype.kind == "i" and ids.dtype.itemsize == 8):
        raise call_error(DTypeMismatchError, "one_hot is only applicable to index tensor of "
                         "type LongTensor.", "one_hot", ids)  # fmt: skip
    if num_classes == -1:
        if any(isinstance(d, int) and d == 0 for d in ids.shape):  # empty (at run time: amax)
            raise call_error(UsageError, "Can not infer total number of classes from empty "
                             "tensor.", "one_hot", ids)  # fmt: skip
        if isinstance(ids, Symbol):  # max + 1 (0 where all are negative: the op refuses them)
            top = F.cast(F.amax(ids), dt.int64)
            length = F.maximum(F.add(top, 1), np.int64(0))
            num_classes = F.core.call("arange_of", length, count=sh.Dim()).shape[0]
        else:
            host = ids.numpy() if isinstance(ids, Tensor) else np.asarray(ids)
            num_classes = max(int(host.max()) + 1, 0)  # the op refuses negative ones
    return F.one_hot(ids, num_classes, dtype=dt.int64)
