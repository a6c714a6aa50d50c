"""`MultiheadAttention`, as PyTorch's: the same parameters (`in_proj_weight` (3E, E) or
separate q/k/v projections when kdim/vdim differ, `in_proj_bias`, `out_proj`, `bias_k`/`bias_v`),
the same initialization, masks and returned weights, so a PyTorch state_dict loads and gives
the same outputs."""

from __future__ import annotations

import math
import warnings

import numpy as np

from .. import dtypes as dt
from .. import frontend as F
from .. import init
from ..errors import ArgumentError, ShapeAssertionError, UsageError, call_error
from ..frontend.nn_functional import pad
from .functional import dropout
from .functional_attention import linear, scaled_dot_product_attention
from .layers import Linear
from .module import Module, Parameter

__all__ = ["MultiheadAttention"]


def _float_mask(mask, name: str, like):
    """PyTorch's canonical mask: a boolean one (True: not allowed) as 0 / -inf, a float one
    as it is."""
    if mask is None:
        return None
    (mask,) = F.core.lift(mask, context=(like,))
    if mask.dtype == dt.bool_:
        return F.cast(F.where(mask, -math.inf, 0.0), like.dtype)
    if not dt.is_float(mask.dtype):
        raise AssertionError(f"only bool and floating types of {name} are supported")
    return mask


def check_shapes(q, k, v, key_padding_mask, attn_mask, num_heads: int, embed_dim: int,
                 same_kv_shape: bool = True):  # fmt: skip
    """PyTorch's asserts on multi-head attention's inputs (AssertionError, as there): a
    batched (3-D) or unbatched (2-D) query with key and value alike, a key_padding_mask of
    one dim fewer, a 2-D or 3-D attn_mask, the query's embedding dim, key and value of one
    shape (of one (S, N) with separate projections)."""

    def fail(message):
        raise call_error(ShapeAssertionError, message, "multi_head_attention_forward", q, k, v)

    mask_dims, attn_dims = (None if t is None else len(t.shape) for t in (key_padding_mask,
                                                                          attn_mask))  # fmt: skip
    if q.ndim == 3:
        if k.ndim != 3 or v.ndim != 3:
            fail(f"For batched (3-D) `query`, expected `key` and `value` to be 3-D but found "
                 f"{k.ndim}-D and {v.ndim}-D tensors respectively")  # fmt: skip
        if mask_dims not in (None, 2):
            fail(f"For batched (3-D) `query`, expected `key_padding_mask` to be `None` or 2-D "
                 f"but found {mask_dims}-D tensor instead")  # fmt: skip
    elif q.ndim == 2:
        if k.ndim != 2 or v.ndim != 2:
            fail(f"For unbatched (2-D) `query`, expected `key` and `value` to be 2-D but found "
                 f"{k.ndim}-D and {v.ndim}-D tensors respectively")  # fmt: skip
        if mask_dims not in (None, 1):
            fail(f"For unbatched (2-D) `query`, expected `key_padding_mask` to be `None` or "
                 f"1-D but found {mask_dims}-D tensor instead")  # fmt: skip
        if attn_dims == 3 and tuple(attn_mask.shape) != (num_heads, q.shape[0], k.shape[0]):
            fail(f"Expected `attn_mask` shape to be {(num_heads, q.shape[0], k.shape[0])} but "
                 f"got {tuple(attn_mask.shape)}")  # fmt: skip
    else:
        fail(f"query should be unbatched 2D or batched 3D tensor but received {q.ndim}-D "
             f"query tensor")  # fmt: skip
    if attn_dims not in (None, 2, 3):
        fail(
            f"For {'un' if q.ndim == 2 else ''}batched ({q.ndim}-D) `query`, expected "
            f"`attn_mask` to be `None`, 2-D or 3-D but found {attn_dims}-D tensor instead"
        )
    if q.shape[-1] != embed_dim:
        fail(f"was expecting embedding dimension of {embed_dim}, but got {q.shape[-1]}")
    if same_kv_shape and tuple(k.shape) != tuple(v.shape):
        fail(f"key shape {tuple(k.shape)} does not match value shape {tuple(v.shape)}")
    if not same_kv_shape and tuple(k.shape[:-1]) != tuple(v.shape[:-1]):
        fail(f"key's sequence and batch dims {tuple(k.shape[:-1])} do not match value's "
             f"{tuple(v.shape[:-1])}")  # fmt: skip


class NonDynamicallyQuantizableLinear(Linear):
    """`Linear` under the class name PyTorch gives MultiheadAttention's output projection, so
    that the two print alike.

    >>> import kiln as kn
    >>> kn.nn.MultiheadAttention(4, 2).out_proj
    NonDynamicallyQuantizableLinear(in_features=4, out_features=4, bias=True)
    """


class MultiheadAttention(Module):
    """Attention of `num_heads` heads over `embed_dim` features (PyTorch's
    `nn.MultiheadAttention`). Inputs are (L, N, E), (N, L, E) with `batch_first`, or
    unbatched (L, E); the call returns `(output, weights)`, the weights averaged over the heads
    unless `average_attn_weights=False`, and None with `need_weights=False`.

    >>> import kiln as kn
    >>> mha = kn.nn.MultiheadAttention(8, 2, batch_first=True)
    >>> [name for name, _ in mha.named_parameters()]
    ['in_proj_weight', 'in_proj_bias', 'out_proj.weight', 'out_proj.bias']
    >>> out, w = mha(kn.ones(3, 5, 8), kn.ones(3, 4, 8), kn.ones(3, 4, 8))
    >>> list(out.shape), list(w.shape)
    ([3, 5, 8], [3, 5, 4])
    """

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        dropout: float = 0.0,
        bias: bool = True,
        add_bias_kv: bool = False,
        add_zero_attn: bool = False,
        kdim=None,
        vdim=None,
        batch_first: bool = False,
        device=None,
        dtype=None,
    ):
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0:
            raise ArgumentError(
                f"embed_dim and num_heads must be greater than 0, got "
                f"embed_dim={embed_dim} and num_heads={num_heads} instead"
            )
        if embed_dim % num_heads:
            raise AssertionError("embed_dim must be divisible by num_heads")
        self.embed_dim, self.num_heads, self.dropout = embed_dim, num_heads, dropout
        self.kdim = embed_dim if kdim is None else kdim
        self.vdim = embed_dim if vdim is None else vdim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.head_dim = embed_dim // num_heads
        self.batch_first, self.add_zero_attn = batch_first, add_zero_attn
        dtype = dt.as_dtype(dtype or dt.DEFAULT_FLOAT)
        xavier = init.xavier_uniform()
        if self._qkv_same_embed_dim:
            self.in_proj_weight = Parameter(xavier((3 * embed_dim, embed_dim), dtype))
            self.q_proj_weight = self.k_proj_weight = self.v_proj_weight = None
        else:
            self.in_proj_weight = None
            self.q_proj_weight = Parameter(xavier((embed_dim, embed_dim), dtype))
            self.k_proj_weight = Parameter(xavier((embed_dim, self.kdim), dtype))
            self.v_proj_weight = Parameter(xavier((embed_dim, self.vdim), dtype))
        zeros = init.zeros()
        self.in_proj_bias = Parameter(zeros((3 * embed_dim,), dtype)) if bias else None
        self.out_proj = NonDynamicallyQuantizableLinear(
            embed_dim, embed_dim, bias=bias, dtype=dtype
        )
        if bias:
            self.out_proj.bias = Parameter(zeros((embed_dim,), dtype))
        if add_bias_kv:
            normal = init.xavier_normal()
            self.bias_k = Parameter(normal((1, 1, embed_dim), dtype))
            self.bias_v = Parameter(normal((1, 1, embed_dim), dtype))
        else:
            self.bias_k = self.bias_v = None
        if device is not None:
            self.to(device)

    def _reset_parameters(self) -> None:
        """PyTorch's initialization, drawn again: Xavier-uniform projections, zero biases,
        Xavier-normal `bias_k`/`bias_v`."""
        from . import init as nn_init  # NOTE: lazy: kiln.nn.init imports this package's parts

        if self._qkv_same_embed_dim:
            nn_init.xavier_uniform_(self.in_proj_weight)
        else:
            for w in (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight):
                nn_init.xavier_uniform_(w)
        if self.in_proj_bias is not None:
            nn_init.constant_(self.in_proj_bias, 0.0)
            nn_init.constant_(self.out_proj.bias, 0.0)
        for b in (self.bias_k, self.bias_v):
            if b is not None:
                nn_init.xavier_normal_(b)

    def merge_masks(self, attn_mask, key_padding_mask, query):
        """PyTorch's merge of an attn_mask (L, S) or (N * heads, L, S) and a key_padding_mask
        (N, S) of a batch-first self-attention query (N, L, E) into one mask (N, heads, L,
        S), and its type: 1 a key_padding_mask alone, 2 an attn_mask, None neither.

        >>> import kiln as kn
        >>> mha = kn.nn.MultiheadAttention(4, 2, batch_first=True)
        >>> mask, kind = mha.merge_masks(kn.zeros(3, 3), None, kn.ones(2, 3, 4))
        >>> tuple(mask.shape), kind
        ((2, 2, 3, 3), 2)
        """
        merged, mask_type = None, None
        if key_padding_mask is not None:
            merged, mask_type = key_padding_mask, 1
        if attn_mask is not None:
            n, length = query.shape[0], query.shape[1]
            mask_type = 2
            if attn_mask.dim() == 3:
                merged = attn_mask.view(n, -1, length, length)
            else:
                merged = attn_mask.view(1, 1, length, length).expand(n, self.num_heads, -1, -1)
            if key_padding_mask is not None:
                padding = key_padding_mask.view(n, 1, 1, length).expand(-1, self.num_heads, -1, -1)
                merged = merged + padding
        return merged, mask_type

    def _projections(self):
        e = self.embed_dim
        if self._qkv_same_embed_dim:
            w = self.in_proj_weight
            ws = (w[:e], w[e : 2 * e], w[2 * e :])
        else:
            ws = (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight)
        b = self.in_proj_bias
        bs = (None,) * 3 if b is None else (b[:e], b[e : 2 * e], b[2 * e :])
        return ws, bs

    def forward(
        self,
        query,
        key,
        value,
        key_padding_mask=None,
        need_weights: bool = True,
        attn_mask=None,
        average_attn_weights: bool = True,
        is_causal: bool = False,
    ):
        q, k, v = F.core.lift(query, key, value)
        check_shapes(q, k, v, key_padding_mask, attn_mask, self.num_heads, self.embed_dim,
                     self._qkv_same_embed_dim)  # fmt: skip
        unbatched = q.ndim == 2
        if unbatched:
            q, k, v = (F.unsqueeze(t, 0) for t in (q, k, v))
            if key_padding_mask is not None:
                key_padding_mask = F.unsqueeze(F.core.lift(key_padding_mask)[0], 0)
        elif not self.batch_first:
            q, k, v = (F.transpose(t, 0, 1) for t in (q, k, v))
        out, weights = attend(
            q, k, v, self.num_heads, self._projections(), self.bias_k, self.bias_v,
            self.add_zero_attn, self.dropout if self.training else 0.0, self.out_proj,
            key_padding_mask, need_weights, attn_mask, average_attn_weights, is_causal,
        )  # fmt: skip
        if unbatched:
            return F.squeeze(out, 0), None if weights is None else F.squeeze(weights, 0)
        if not self.batch_first:
            out = F.transpose(out, 0, 1)
        return out, weights

    # NOTE: no extra_repr: PyTorch prints only the output projection


def attend(q, k, v, num_heads, projections, bias_k, bias_v, add_zero_attn, p, project_out,
           key_padding_mask, need_weights, attn_mask, average_attn_weights, is_causal,
           static_k=None, static_v=None):  # fmt: skip
    """Multi-head attention of batch-first (N, L, E) inputs: `projections` the q/k/v
    (weights, biases), `project_out` the output projection; `(output, weights)`."""
    if is_causal and attn_mask is None:
        raise UsageError("Need attn_mask if specifying the is_causal hint.")
    _check_kv_shapes(q, k, num_heads, key_padding_mask, attn_mask, static_k, static_v)
    (ws, bs) = projections
    q, k, v = (linear(t, w, b) for t, w, b in zip((q, k, v), ws, bs))
    embed_dim = q.shape[2]
    head_dim = embed_dim // num_heads
    mask = _float_mask(attn_mask, "attn_mask", q)
    padding = _float_mask(key_padding_mask, "key_padding_mask", q)
    n = q.shape[0]
    if bias_k is not None:
        k = F.cat([k, F.expand(bias_k, n, 1, embed_dim)], 1)
        v = F.cat([v, F.expand(bias_v, n, 1, embed_dim)], 1)
        mask, padding = (None if m is None else pad(m, (0, 1)) for m in (mask, padding))
    q, k, v = (
        F.transpose(F.reshape(t, (n, t.shape[1], num_heads, head_dim)), 1, 2) for t in (q, k, v)
    )
    if static_k is not None:  # (N * heads, S, head_dim), used as the projected keys
        k = F.reshape(F.core.lift(static_k, context=(q,))[0], (n, num_heads, -1, head_dim))
    if static_v is not None:
        v = F.reshape(F.core.lift(static_v, context=(q,))[0], (n, num_heads, -1, head_dim))
    if add_zero_attn:
        zeros = F.core.lift(np.zeros((1, 1, 1, head_dim), dt.as_dtype(k.dtype)), context=(k,))[0]
        k, v = (F.cat([t, F.expand(zeros, n, num_heads, 1, head_dim)], 2) for t in (k, v))
        mask, padding = (None if m is None else pad(m, (0, 1)) for m in (mask, padding))
    bias = _merged_mask(mask, padding, n, num_heads)
    if need_weights:
        scores = F.mul(F.matmul(q, F.transpose(k, -2, -1)), 1.0 / math.sqrt(head_dim))
        if bias is not None:
            scores = F.add(scores, bias)
        weights = F.softmax(scores, -1)
        if p > 0:  # as PyTorch's: the weights returned are the ones used, dropped out
            weights = dropout(weights, p)
        out = F.matmul(weights, v)
        if average_attn_weights:
            weights = F.mean(weights, 1)
    else:
        out, weights = scaled_dot_product_attention(q, k, v, bias, p), None
    out = project_out(F.reshape(F.transpose(out, 1, 2), (n, q.shape[2], embed_dim)))
    return out, weights


def _check_kv_shapes(q, k, num_heads, key_padding_mask, attn_mask, static_k, static_v):
    """PyTorch's asserts on the batch-first (N, L, E) inputs' key_padding_mask (N, S) and
    static keys and values (N * heads, S, E / heads), and its warning on masks of mismatched
    kinds (one bool, one float)."""
    n, head_dim = q.shape[0], q.shape[2] // num_heads

    def fail(message):
        raise call_error(ShapeAssertionError, message, "multi_head_attention_forward", q, k)

    src_len = k.shape[1]
    for name, static in (("static_k", static_k), ("static_v", static_v)):
        if static is not None:
            if static.shape[0] != n * num_heads:
                fail(f"expecting {name}.size(0) of {n * num_heads}, but got {static.shape[0]}")
            if static.shape[2] != head_dim:
                fail(f"expecting {name}.size(2) of {head_dim}, but got {static.shape[2]}")
    if static_k is not None:
        src_len = static_k.shape[1]
    if key_padding_mask is not None:
        if tuple(key_padding_mask.shape) != (n, src_len):
            fail(f"expecting key_padding_mask shape of {(n, src_len)}, but got "
                 f"{tuple(key_padding_mask.shape)}")  # fmt: skip
        if attn_mask is not None and (
            (dt.as_dtype(key_padding_mask.dtype) == dt.bool_)
            != (dt.as_dtype(attn_mask.dtype) == dt.bool_)
        ):
            warnings.warn("Support for mismatched key_padding_mask and attn_mask is deprecated. "
                          "Use same type for both instead.", stacklevel=4)  # fmt: skip


def _merged_mask(mask, padding, n, num_heads):
    """attn_mask (L, S) or (N * heads, L, S) plus key_padding_mask (N, S), as (N, H, L, S)."""
    if mask is not None and mask.ndim == 3:
        mask = F.reshape(mask, (n, num_heads, mask.shape[1], mask.shape[2]))
    if padding is not None:
        padding = F.reshape(padding, (n, 1, 1, padding.shape[1]))
        return padding if mask is None else F.add(mask, padding)
    return mask
