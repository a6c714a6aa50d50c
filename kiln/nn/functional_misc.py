"""PyTorch's `alpha_dropout`, `feature_alpha_dropout`, `bilinear`, `lp_pool1d/2d/3d` and
`multilabel_margin_loss`, composites of kiln's ops: they trace, compile and differentiate."""

from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from .. import frontend as F
from ..errors import ArgumentError, ShapeMismatchError, call_error
from ..frontend.nn_functional import _keep_mask, refuse_integer_dropout
from .functional_act import in_place
from .functional_loss import float_kernel, long_targets, reduce_loss, reduction_of

__all__ = [
    "alpha_dropout", "bilinear", "feature_alpha_dropout", "lp_pool1d", "lp_pool2d",
    "lp_pool3d", "multilabel_margin_loss",
]  # fmt: skip

_SELU_SATURATION = 1.7580993408473766  # -SELU's limit at -inf: scale * alpha


def _alpha_dropout(name: str, x, p: float, training: bool, feature: bool):
    """The dropped elements set to SELU's saturation value, then all scaled and shifted so
    zero mean and unit variance are kept: `x * a * keep + a * alpha * (p - 1 + keep)`."""
    if not 0.0 <= p <= 1.0:
        raise ArgumentError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0 or 0 in tuple(x.shape):
        return x  # PyTorch checks nothing more then
    if feature and x.ndim < 2:
        raise call_error(ShapeMismatchError, "Feature dropout requires at least 2 dimensions "
                         "in the input", name, x)  # fmt: skip
    if p == 1.0:
        return F.mul(x, 0)  # PyTorch's: multiply, so the graph stays connected
    refuse_integer_dropout(x, name)
    dtype = x.dtype if dt.is_float(x.dtype) else dt.DEFAULT_FLOAT
    like = x
    if feature:  # one draw per (sample, channel)
        shape = tuple(x.shape[:2]) + (1,) * (x.ndim - 2)
        like = F.broadcast_to(F.core.lift(1.0, context=(x,), dtype=dtype)[0], shape)
    keep = _keep_mask(like, 1.0 - p, dtype)
    a = 1.0 / np.sqrt((_SELU_SATURATION**2 * p + 1) * (1 - p))
    shift = F.add(F.mul(F.sub(keep, 1.0), _SELU_SATURATION * a), _SELU_SATURATION * a * p)
    return F.add(F.mul(x, F.mul(keep, a)), shift)


def _untouched(x, p: float, training: bool) -> bool:
    """Whether an alpha dropout returns its input as it is (PyTorch's: p checked first)."""
    if not 0.0 <= p <= 1.0:
        raise ArgumentError(f"dropout probability has to be between 0 and 1, but got {p}")
    return not training or p == 0.0 or 0 in tuple(x.shape)


def alpha_dropout(input, p: float = 0.5, training: bool = False, inplace: bool = False):  # noqa: A002
    """Dropout for SELU networks: each element, with probability `p`, becomes SELU's negative
    saturation value, then the tensor is scaled and shifted to keep zero mean and unit
    variance; the identity unless `training` (False by default, as PyTorch's).

    >>> import kiln as kn
    >>> x = kn.ones(3)
    >>> kn.nn.functional.alpha_dropout(x) is x
    True
    """
    (x,) = F.core.lift(input)
    if inplace and _untouched(x, p, training):
        return x  # PyTorch's: nothing is written (a leaf that requires grad too)
    return in_place(
        "alpha_dropout_",
        lambda v: _alpha_dropout("alpha_dropout", v, p, training, False),
        x,
        inplace,
    )


def feature_alpha_dropout(input, p: float = 0.5, training: bool = False, inplace: bool = False):  # noqa: A002
    """`alpha_dropout` of whole channels: one draw per (sample, channel) of an (N, C, ...)
    input.

    >>> import kiln as kn
    >>> y = kn.nn.functional.feature_alpha_dropout(kn.ones(2, 3, 4), 0.5, training=True)
    >>> bool((y.std(dim=2) == 0).all())
    True
    """
    (x,) = F.core.lift(input)
    if inplace and _untouched(x, p, training):
        return x  # PyTorch's: nothing is written (a leaf that requires grad too)
    return in_place(
        "feature_alpha_dropout_",
        lambda v: _alpha_dropout("feature_alpha_dropout", v, p, training, True),
        x,
        inplace,
    )


def bilinear(input1, input2, weight, bias=None):
    """`y[..., o] = x1[..., i] * weight[o, i, j] * x2[..., j] + bias[o]`: weight
    (out, in1, in2), inputs with the same leading dims.

    >>> import kiln as kn
    >>> w = kn.ones(1, 2, 3)
    >>> kn.nn.functional.bilinear(kn.tensor([[1.0, 2.0]]), kn.ones(1, 3), w, kn.tensor([0.5]))
    tensor([[9.5000]])
    """
    x1, x2, w = F.core.lift(input1, input2, weight)
    name = "bilinear"
    if x1.ndim != x2.ndim:
        raise call_error(ShapeMismatchError, f"bilinear(): input dimensions do not match: got "
                         f"{x1.ndim} and {x2.ndim}", name, x1, x2)  # fmt: skip
    for i in range(x1.ndim - 1):
        if x1.shape[i] != x2.shape[i]:
            message = f"input batch dimensions do not match: got {x1.shape[i]} and {x2.shape[i]}"
            raise call_error(ShapeMismatchError, f"bilinear(): {message}", name, x1, x2)
    if w.ndim != 3:
        raise call_error(ShapeMismatchError, f"bilinear(): weight must be 3-D (out, in1, in2), "
                         f"got {w.ndim}-D", name, w)  # fmt: skip
    for k, x in ((1, x1), (2, x2)):
        if x.shape[-1] != w.shape[k]:
            raise call_error(ShapeMismatchError, f"bilinear(): input{k} size does not match "
                             f"weight size: got {x.shape[-1]} but expected {w.shape[k]}",
                             name, x, w)  # fmt: skip
    y = F.einsum("...i,oij,...j->...o", x1, w, x2)
    if bias is None:
        return y
    (b,) = F.core.lift(bias, context=(y,))
    if b.shape[0] != w.shape[0]:
        message = (
            f"bias size does not match weight size: got {b.shape[0]} but expected {w.shape[0]}"
        )
        raise call_error(ShapeMismatchError, f"bilinear(): {message}", name, b, w)
    return F.add(y, b)


def _lp_pool(n: int, input, norm_type, kernel_size, stride, ceil_mode):  # noqa: A002
    (x,) = F.core.lift(input)
    max_pool = (F.max_pool1d, F.max_pool2d, F.max_pool3d)[n - 1]
    avg_pool = (F.avg_pool1d, F.avg_pool2d, F.avg_pool3d)[n - 1]
    p = float(norm_type)
    if p == float("inf"):
        return max_pool(F.abs(x), kernel_size, stride, 0, 1, ceil_mode)
    if p == -float("inf"):
        return F.neg(max_pool(F.neg(F.abs(x)), kernel_size, stride, 0, 1, ceil_mode))
    sizes = (kernel_size,) * n if isinstance(kernel_size, int) else tuple(kernel_size)
    window = int(np.prod(sizes))
    out = avg_pool(F.pow(x, norm_type), kernel_size, stride, 0, ceil_mode)
    # the window's sum of x ** p (0 where it is negative), to the power 1/p
    return F.pow(F.mul(F.mul(F.sign(out), F.relu(F.abs(out))), window), 1.0 / p)


def lp_pool1d(input, norm_type, kernel_size: int, stride=None, ceil_mode: bool = False):  # noqa: A002
    """Power-average pooling of (N, C, L) or (C, L) inputs: `(sum of x ** p over each window)
    ** (1 / p)` (p = `norm_type`; inf: the max of |x|).

    >>> import kiln as kn
    >>> kn.nn.functional.lp_pool1d(kn.tensor([[3.0, 4.0, 1.0, 1.0]]), 2, 2)
    tensor([[5.0000, 1.4142]])
    """
    return _lp_pool(1, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode: bool = False):  # noqa: A002
    """Power-average pooling of (N, C, H, W) or (C, H, W) inputs (see `lp_pool1d`).

    >>> import kiln as kn
    >>> kn.nn.functional.lp_pool2d(kn.ones(1, 1, 2, 2), 1, 2)
    tensor([[[[4.]]]])
    """
    return _lp_pool(2, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode: bool = False):  # noqa: A002
    """Power-average pooling of (N, C, D, H, W) or (C, D, H, W) inputs (see `lp_pool1d`).

    >>> import kiln as kn
    >>> kn.nn.functional.lp_pool3d(kn.ones(1, 1, 2, 2, 2), 2, 2).item()
    2.8284270763397217
    """
    return _lp_pool(3, input, norm_type, kernel_size, stride, ceil_mode)


def multilabel_margin_loss(input, target, size_average=None, reduce=None,  # noqa: A002
                           reduction: str = "mean"):  # fmt: skip
    """The multi-label hinge loss: per sample, `sum over targets j and non-targets i of
    max(0, 1 - (x[j] - x[i])) / C`, where the targets are the class indices at the start of
    `target`'s row, up to its first -1 (input (C) or (N, C), target of the same shape).

    >>> import kiln as kn
    >>> x = kn.tensor([[0.1, 0.2, 0.4, 0.8]])
    >>> kn.nn.functional.multilabel_margin_loss(x, kn.tensor([[3, 0, -1, 1]]))
    tensor(0.8500)
    """
    reduction = reduction_of(size_average, reduce, reduction)
    x, y = F.core.lift(input, target)
    if x.ndim > 2 or tuple(y.shape) != tuple(x.shape):
        message = f"inconsistent target size: {list(y.shape)} for input of size: {list(x.shape)}"
        raise call_error(ShapeMismatchError, message, "multilabel_margin_loss", x, y)
    float_kernel("multilabel_margin_loss_forward_out_frame", "multilabel_margin_loss", x)
    long_targets("multilabel_margin_loss", x, y)
    squeeze = x.ndim <= 1  # one sample (a 0-d input: one sample of one class)
    if squeeze:
        x, y = F.reshape(x, (1, -1)), F.reshape(y, (1, -1))
    n_classes = x.shape[1]
    # the targets: the entries before the first -1 of each row
    valid = F.cast(F.cumprod(F.cast(F.not_equal(y, -1), dt.int64), 1), dt.bool_)
    labels = F.where(valid, y, 0)
    classes = np.arange(n_classes, dtype=np.int64).reshape(1, 1, -1)
    hits = F.logical_and(F.eq(F.unsqueeze(labels, 2), classes), F.unsqueeze(valid, 2))
    is_target = F.any(hits, 1)  # (N, C)
    picked = F.gather(x, 1, labels)  # x[j] for each target slot (N, K)
    hinge = F.relu(F.add(F.sub(1.0, F.unsqueeze(picked, 2)), F.unsqueeze(x, 1)))  # (N, K, C)
    counted = F.logical_and(F.unsqueeze(valid, 2), F.unsqueeze(F.logical_not(is_target), 1))
    loss = F.div(F.sum(F.where(counted, hinge, 0.0), (1, 2)), n_classes)
    return reduce_loss(F.squeeze(loss, 0) if squeeze else loss, reduction)
