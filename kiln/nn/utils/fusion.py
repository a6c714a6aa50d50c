"""Folding an eval-mode BatchNorm into the convolution or linear layer before it, as PyTorch's
`fuse_conv_bn_eval` / `fuse_linear_bn_eval` and their weight-level forms: the fused layer
computes `bn(layer(x))` with the running statistics in one affine map.
"""

from __future__ import annotations

import copy

from ... import dtypes as dt
from ... import frontend as F
from ...eager import no_grad
from ...eager.factories import ones_like, zeros_like
from ...errors import ArgumentError, UsageError, call_error
from ..parameter import Parameter

__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval",
           "fuse_linear_bn_weights"]  # fmt: skip


def _eval_pair(layer, bn, op: str) -> None:
    if layer.training or bn.training:
        raise call_error(UsageError, "Fusion only for eval!", op)
    if bn.running_mean is None or bn.running_var is None:
        raise call_error(ArgumentError, "the BatchNorm has no running statistics "
                         "(track_running_stats=False): nothing to fuse", op)  # fmt: skip


def fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b,
                         transpose: bool = False):  # fmt: skip
    """(weight, bias) Parameters of a convolution that computes `conv` then `bn` (eval): the
    weight scaled per output channel by `bn_w / sqrt(bn_rv + bn_eps)` (dim 1 of a transposed
    convolution's weight), the bias moved and scaled to match; dtypes kept.

    >>> import kiln as kn
    >>> w, b = fuse_conv_bn_weights(kn.ones(2, 1, 1), None, kn.zeros(2), kn.full((2,), 4.0),
    ...                             0.0, None, kn.ones(2))
    >>> w.flatten().tolist(), b.tolist()
    ([0.5, 0.5], [1.0, 1.0])
    """
    w_dtype = conv_w.dtype
    b_dtype = conv_b.dtype if conv_b is not None else w_dtype
    with no_grad():
        b = zeros_like(bn_rm) if conv_b is None else conv_b.detach()
        scale_w = ones_like(bn_rm) if bn_w is None else bn_w.detach()
        shift = zeros_like(bn_rm) if bn_b is None else bn_b.detach()
        inv_std = F.rsqrt(F.add(bn_rv.detach(), bn_eps))
        shape = [1, -1] if transpose else [-1, 1]
        shape += [1] * (conv_w.ndim - 2)
        weight = F.mul(conv_w.detach(), F.reshape(F.mul(scale_w, inv_std), shape))
        bias = F.add(F.mul(F.mul(F.sub(b, bn_rm.detach()), inv_std), scale_w), shift)
    # as PyTorch's: a bias made here (the conv had none) does not require grad
    requires = conv_b.requires_grad if conv_b is not None else False
    return (Parameter(F.cast(weight, dt.as_dtype(w_dtype)), conv_w.requires_grad),
            Parameter(F.cast(bias, dt.as_dtype(b_dtype)), requires))  # fmt: skip


def fuse_conv_bn_eval(conv, bn, transpose: bool = False):
    """A copy of the eval-mode convolution `conv` with the eval-mode BatchNorm `bn` that
    follows it folded into its weight and bias.

    >>> import kiln as kn
    >>> conv, bn = kn.nn.Conv2d(2, 3, 3).eval(), kn.nn.BatchNorm2d(3).eval()
    >>> x = kn.randn(1, 2, 5, 5)
    >>> fused = fuse_conv_bn_eval(conv, bn)
    >>> bool((fused(x) - bn(conv(x))).abs().max() < 1e-5)
    True
    """
    _eval_pair(conv, bn, "fuse_conv_bn_eval")
    fused = copy.deepcopy(conv)
    fused.weight, fused.bias = fuse_conv_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias,
        transpose,
    )  # fmt: skip
    return fused


def fuse_linear_bn_weights(linear_w, linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b):
    """(weight, bias) Parameters of a linear layer that computes `linear` then `bn` (eval).

    >>> import kiln as kn
    >>> w, b = fuse_linear_bn_weights(kn.ones(2, 3), kn.ones(2), kn.ones(2),
    ...                               kn.full((2,), 4.0), 0.0, kn.ones(2), kn.zeros(2))
    >>> w.tolist(), b.tolist()
    ([[0.5, 0.5, 0.5], [0.5, 0.5, 0.5]], [0.0, 0.0])
    """
    with no_grad():
        b = zeros_like(bn_rm) if linear_b is None else linear_b.detach()
        scale = F.mul(bn_w.detach(), F.rsqrt(F.add(bn_rv.detach(), bn_eps)))
        weight = F.mul(linear_w.detach(), F.unsqueeze(scale, -1))
        bias = F.add(F.mul(F.sub(b, bn_rm.detach()), scale), bn_b.detach())
    requires = linear_b.requires_grad if linear_b is not None else False
    return Parameter(weight, linear_w.requires_grad), Parameter(bias, requires)


def fuse_linear_bn_eval(linear, bn):
    """A copy of the eval-mode `linear` with the eval-mode BatchNorm1d `bn` that follows it
    folded into its weight and bias.

    >>> import kiln as kn
    >>> lin, bn = kn.nn.Linear(4, 3).eval(), kn.nn.BatchNorm1d(3).eval()
    >>> x = kn.randn(2, 4)
    >>> bool((fuse_linear_bn_eval(lin, bn)(x) - bn(lin(x))).abs().max() < 1e-5)
    True
    """
    _eval_pair(linear, bn, "fuse_linear_bn_eval")
    if not (linear.out_features == bn.num_features or bn.num_features == 1):
        raise call_error(
            ArgumentError,
            "To fuse, linear.out_features must equal bn.num_features or bn.num_features must be 1",
            "fuse_linear_bn_eval",
        )
    fused = copy.deepcopy(linear)
    fused.weight, fused.bias = fuse_linear_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias
    )
    return fused
