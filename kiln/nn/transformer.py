"""PyTorch's Transformer modules: `TransformerEncoderLayer`, `TransformerDecoderLayer`,
`TransformerEncoder`, `TransformerDecoder` and `Transformer`, with PyTorch's arguments,
defaults (post-norm, ReLU, dropout 0.1, sequence-first unless `batch_first`), submodule and
parameter names, so a torch `state_dict` loads as it is. Built on `MultiheadAttention`,
`Linear`, `LayerNorm` and `Dropout`, they run eagerly, in graph mode and under `kn.compile`.

>>> import kiln as kn
>>> layer = kn.nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16, dropout=0.0)
>>> layer(kn.ones(5, 3, 8)).shape
kiln.Size([5, 3, 8])
"""

from __future__ import annotations

import copy

from .. import dtypes as dt
from .. import frontend as Fr
from ..eager.grad_mode import is_grad_enabled
from ..errors import ArgumentError
from ..frontend.autocast import is_autocast_enabled
from . import functional as F
from .attention import MultiheadAttention
from .containers import ModuleList
from .init import xavier_uniform_
from .layers import GELU, Dropout, LayerNorm, Linear, ReLU
from .module import Module

__all__ = ["Transformer", "TransformerDecoder", "TransformerDecoderLayer", "TransformerEncoder",
           "TransformerEncoderLayer"]  # fmt: skip


def _activation(activation):
    if callable(activation):
        return activation
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return F.gelu
    raise ArgumentError(f"activation should be relu/gelu, not {activation}")


def _clones(module, n: int) -> ModuleList:
    return ModuleList([copy.deepcopy(module) for _ in range(n)])


def _packs_padding(layer) -> bool:
    """Whether PyTorch's `TransformerEncoder` sets `use_nested_tensor` for this layer: a
    post-norm `TransformerEncoderLayer`, batch first, with equal q/k/v sizes, projection
    biases, a ReLU or GELU, equal LayerNorm eps and an even number of heads."""
    if not isinstance(layer, TransformerEncoderLayer) or layer.norm_first:
        return False
    attn = layer.self_attn
    if not attn.batch_first or not attn._qkv_same_embed_dim or attn.in_proj_bias is None:
        return False
    act = layer.activation
    relu_or_gelu = act is F.relu or act is F.gelu or isinstance(act, (ReLU, GELU))
    return relu_or_gelu and layer.norm1.eps == layer.norm2.eps and attn.num_heads % 2 == 0


def _zero_padded(x, key_padding_mask):
    """`x` (N, S, E) with zeros where `key_padding_mask` (N, S; True or nonzero: padding)
    marks padding, when every row's padding comes after its tokens (PyTorch's encoder packs
    only such masks, and leaves the others' outputs as they are)."""
    pad = key_padding_mask
    if pad.dtype != dt.bool_:
        pad = pad != 0
    left_aligned = Fr.logical_not(Fr.any(pad[:, :-1] & Fr.logical_not(pad[:, 1:])))
    return Fr.where(Fr.unsqueeze(pad, -1) & left_aligned, 0.0, x)


def _build(
    layer,
    blocks: int,
    d_model,
    nhead,
    dim_feedforward,
    dropout,
    activation,
    eps,
    batch_first,
    norm_first,
    bias,
    dtype,
) -> None:
    """The submodules of an encoder (2 blocks) or decoder (3: with `multihead_attn` over the
    memory) layer, made in PyTorch's order, so `state_dict` keys come in torch's order."""

    def attention():
        return MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                  batch_first=batch_first, dtype=dtype)  # fmt: skip

    layer.self_attn = attention()
    if blocks == 3:
        layer.multihead_attn = attention()
    layer.linear1 = Linear(d_model, dim_feedforward, bias=bias, dtype=dtype)
    layer.dropout = Dropout(dropout)
    layer.linear2 = Linear(dim_feedforward, d_model, bias=bias, dtype=dtype)
    layer.norm_first = norm_first
    for k in range(1, blocks + 1):
        setattr(layer, f"norm{k}", LayerNorm(d_model, eps=eps, bias=bias))
    for k in range(1, blocks + 1):
        setattr(layer, f"dropout{k}", Dropout(dropout))
    layer.activation = _activation(activation)


class TransformerEncoderLayer(Module):
    """Self-attention and a feed-forward block, each with dropout, a residual connection and
    a LayerNorm (after the block, or before it with `norm_first`)."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation=F.relu, layer_norm_eps: float = 1e-5,
                 batch_first: bool = False, norm_first: bool = False, bias: bool = True,
                 device=None, dtype=None):  # fmt: skip
        super().__init__()
        _build(self, 2, d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
               batch_first, norm_first, bias, dtype)  # fmt: skip
        if device is not None:
            self.to(device)

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal: bool = False):
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            return x + self._ff_block(self.norm2(x))
        x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
        return self.norm2(x + self._ff_block(x))

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           need_weights=False, is_causal=is_causal)[0]  # fmt: skip
        return self.dropout1(x)

    def _ff_block(self, x):
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerDecoderLayer(Module):
    """Self-attention, attention over the encoder's `memory`, and a feed-forward block, each
    with dropout, a residual connection and a LayerNorm."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation=F.relu, layer_norm_eps: float = 1e-5,
                 batch_first: bool = False, norm_first: bool = False, bias: bool = True,
                 device=None, dtype=None):  # fmt: skip
        super().__init__()
        _build(self, 3, d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
               batch_first, norm_first, bias, dtype)  # fmt: skip
        if device is not None:
            self.to(device)

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal: bool = False,
                memory_is_causal: bool = False):  # fmt: skip
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask,
                                    memory_key_padding_mask, memory_is_causal)  # fmt: skip
            return x + self._ff_block(self.norm3(x))
        x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
        x = self.norm2(x + self._mha_block(x, memory, memory_mask, memory_key_padding_mask,
                                           memory_is_causal))  # fmt: skip
        return self.norm3(x + self._ff_block(x))

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           is_causal=is_causal, need_weights=False)[0]  # fmt: skip
        return self.dropout1(x)

    def _mha_block(self, x, mem, attn_mask, key_padding_mask, is_causal):
        x = self.multihead_attn(x, mem, mem, attn_mask=attn_mask,
                                key_padding_mask=key_padding_mask, is_causal=is_causal,
                                need_weights=False)[0]  # fmt: skip
        return self.dropout2(x)

    def _ff_block(self, x):
        return self.dropout3(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerEncoder(Module):
    """`num_layers` copies of `encoder_layer` (`layers.0`, `layers.1`, ...), then `norm`."""

    def __init__(self, encoder_layer, num_layers: int, norm=None,
                 enable_nested_tensor: bool = True, mask_check: bool = True):  # fmt: skip
        super().__init__()
        self.layers = _clones(encoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor, self.mask_check = enable_nested_tensor, mask_check
        self.use_nested_tensor = enable_nested_tensor and _packs_padding(encoder_layer)

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        x = src
        for layer in self.layers:
            x = layer(x, src_mask=mask, src_key_padding_mask=src_key_padding_mask,
                      is_causal=bool(is_causal))  # fmt: skip
        if self._drops_padding(src, mask, src_key_padding_mask):
            x = _zero_padded(x, src_key_padding_mask)
        return self.norm(x) if self.norm is not None else x

    def _drops_padding(self, src, mask, key_padding_mask) -> bool:
        """Whether this call gives zeros at the padded positions, as PyTorch's encoder does
        when it packs the unpadded tokens (its inference path: `use_nested_tensor`, eval mode,
        a 3-D `src` with a key padding mask and no `mask`, and no gradient wanted of `src` or
        of the first layer's parameters)."""
        if not (getattr(self, "use_nested_tensor", False) and key_padding_mask is not None):
            return False
        first = self.layers[0]
        if first.training or src.ndim != 3 or mask is not None:
            return False
        if is_autocast_enabled("cuda"):
            return False
        if not is_grad_enabled():
            return True
        attn, tensors = first.self_attn, [src]
        tensors += [attn.in_proj_weight, attn.in_proj_bias, attn.out_proj.weight,
                    attn.out_proj.bias]  # fmt: skip
        for sub in (first.norm1, first.norm2, first.linear1, first.linear2):
            tensors += [sub.weight, sub.bias]
        return not any(getattr(t, "requires_grad", True) for t in tensors if t is not None)


class TransformerDecoder(Module):
    """`num_layers` copies of `decoder_layer`, then `norm`."""

    def __init__(self, decoder_layer, num_layers: int, norm=None):
        super().__init__()
        self.layers = _clones(decoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=None,
                memory_is_causal: bool = False):  # fmt: skip
        x = tgt
        for layer in self.layers:
            x = layer(
                x,
                memory,
                tgt_mask=tgt_mask,
                memory_mask=memory_mask,
                tgt_key_padding_mask=tgt_key_padding_mask,
                memory_key_padding_mask=memory_key_padding_mask,
                tgt_is_causal=bool(tgt_is_causal),
                memory_is_causal=memory_is_causal,
            )
        return self.norm(x) if self.norm is not None else x


class Transformer(Module):
    """PyTorch's `Transformer`: an encoder of `num_encoder_layers` and a decoder of
    `num_decoder_layers`, each ending in a LayerNorm; every parameter of 2 or more dims is
    drawn by `xavier_uniform_`, as PyTorch's."""

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6,
                 num_decoder_layers: int = 6, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation=F.relu, custom_encoder=None, custom_decoder=None,
                 layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device=None, dtype=None):  # fmt: skip
        super().__init__()
        options = dict(dim_feedforward=dim_feedforward, dropout=dropout, activation=activation,
                       layer_norm_eps=layer_norm_eps, batch_first=batch_first,
                       norm_first=norm_first, bias=bias, dtype=dtype)  # fmt: skip
        self.encoder = custom_encoder or TransformerEncoder(
            TransformerEncoderLayer(d_model, nhead, **options), num_encoder_layers,
            LayerNorm(d_model, eps=layer_norm_eps, bias=bias))  # fmt: skip
        self.decoder = custom_decoder or TransformerDecoder(
            TransformerDecoderLayer(d_model, nhead, **options), num_decoder_layers,
            LayerNorm(d_model, eps=layer_norm_eps, bias=bias))  # fmt: skip
        self.d_model, self.nhead, self.batch_first = d_model, nhead, batch_first
        for p in self.parameters():  # as PyTorch's: every matrix redrawn, custom parts too
            if p.dim() > 1:
                xavier_uniform_(p)
        if device is not None:
            self.to(device)

    def forward(self, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None,
                src_key_padding_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, src_is_causal=None, tgt_is_causal=None,
                memory_is_causal: bool = False):  # fmt: skip
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)  # fmt: skip
        return self.decoder(
            tgt,
            memory,
            tgt_mask=tgt_mask,
            memory_mask=memory_mask,
            tgt_key_padding_mask=tgt_key_padding_mask,
            memory_key_padding_mask=memory_key_padding_mask,
            tgt_is_causal=tgt_is_causal,
            memory_is_causal=memory_is_causal,
        )

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device=None, dtype=None):
        """The (sz, sz) float mask with -inf above the diagonal, 0 elsewhere.

        >>> import kiln as kn
        >>> kn.nn.Transformer.generate_square_subsequent_mask(2)
        tensor([[0., -inf],
                [0., 0.]])
        """
        from ..eager.factories import full

        return Fr.triu(full((sz, sz), float("-inf"), dtype=dtype), diagonal=1)
