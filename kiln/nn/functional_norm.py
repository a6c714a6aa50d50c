"""PyTorch's normalizations and distances in `kn.nn.functional`: normalize, group_norm,
instance_norm, rms_norm, local_response_norm, cosine_similarity, pairwise_distance; composed
of kiln's ops (eager, graph mode and `kn.compile` alike)."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np

from .. import dtypes as dt
from .. import frontend as F
from .. import shapes as sh
from ..errors import ArgumentError, ArgumentTypeError, ShapeMismatchError, call_error
from ..frontend.autocast import autocast_op
from ..frontend.nn_functional import pad
from ..frontend.reductions import require_floating
from ..frontend.result_layouts import c_ordered, suggested_layout

__all__ = [
    "cosine_similarity",
    "group_norm",
    "instance_norm",
    "local_response_norm",
    "normalize",
    "pairwise_distance",
    "rms_norm",
]


def _norm(x, p: float, dim):
    """The p-norm along `dim` (kept), with PyTorch's gradient at a zero vector: 0, not NaN.
    A float16 or bfloat16 `x` is summed in float32 and the norm rounded back once, as
    PyTorch's norm kernels accumulate (in float16 the sum of squares overflows at 65504)."""
    if x.dtype in (np.float16, dt.bfloat16):
        return F.cast(_norm(F.cast(x, dt.float32), p, dim), x.dtype)
    if x.dtype.kind == "c":  # the norm of complex values is that of their magnitudes
        x = F.abs(x)
    a = F.abs(x)
    if p == math.inf:
        return F.amax(a, dim, keepdim=True)
    if p == -math.inf:
        return F.amin(a, dim, keepdim=True)
    if p == 0:  # the number of nonzero entries (as `vector_norm(ord=0)`)
        from ..frontend.torch_extra_linalg import nonzero_count

        return nonzero_count(a, dim, True)
    if p == 1:
        return F.sum(a, dim, keepdim=True)
    total = F.sum(F.mul(x, x) if p == 2 else F.pow(a, float(p)), dim, keepdim=True)
    nonzero = F.not_equal(total, 0)  # NaN too: the norm of a NaN is NaN, as PyTorch's
    # NOTE: the root of a stand-in 1 where the sum is 0, so no inf * 0 reaches the gradient.
    safe = F.where(nonzero, total, 1.0)
    root = F.sqrt(safe) if p == 2 else F.pow(safe, 1.0 / p)
    return F.where(nonzero, root, 0.0)


def normalize(input, p: float = 2.0, dim: int = 1, eps: float = 1e-12, out=None):  # noqa: A002
    """`x / max(||x||_p, eps)` along `dim`.

    >>> import kiln as kn
    >>> kn.nn.functional.normalize(kn.tensor([[3.0, 4.0], [0.0, 0.0]]))
    tensor([[0.6000, 0.8000],
            [0.0000, 0.0000]])
    """
    if out is not None:
        raise ArgumentTypeError("normalize: out= is not supported by kiln; use the returned tensor")
    (x,) = F.core.lift(input)
    require_floating("normalize", x, "linalg.vector_norm: Expected a floating point or complex "
                     "tensor as input. Got {dtype}")  # fmt: skip
    if x.ndim == 0:
        dim = None
    return F.div(x, F.clip(_norm(x, p, dim), eps, None))


@F.core.half_in_float32  # as PyTorch's: a half input, float32 parameters -> its dtype
@autocast_op(None, cuda="fp32")
def group_norm(input, num_groups: int, weight=None, bias=None, eps: float = 1e-5):  # noqa: A002
    """Normalizes each of `num_groups` groups of channels of `input` (N, C, ...) over the
    group's channels and all other dims, then scales and shifts per channel.

    >>> import kiln as kn
    >>> kn.nn.functional.group_norm(kn.tensor([[1.0, 3.0, 10.0, 30.0]]), 2, eps=0.0)
    tensor([[-1.,  1., -1.,  1.]])
    """
    (x,) = F.core.lift(input)
    if x.ndim < 2:
        raise call_error(ShapeMismatchError, f"expected an input of 2 or more dims, got "
                         f"{x.ndim}", "group_norm", x)  # fmt: skip
    n, c = x.shape[0], x.shape[1]
    if isinstance(c, int) and c % num_groups:
        raise call_error(
            ShapeMismatchError,
            f"Expected number of channels in input to be divisible by num_groups, but got "
            f"input of shape {list(x.shape)} and num_groups={num_groups}", "group_norm", x,
        )  # fmt: skip
    grouped = F.reshape(x, (n, num_groups, -1))
    centered = F.sub(grouped, F.mean(grouped, -1, keepdim=True))
    var = F.mean(F.mul(centered, centered), -1, keepdim=True)
    y = F.reshape(F.mul(centered, F.rsqrt(F.add(var, eps))), x.shape)
    per_channel = (c,) + (1,) * (x.ndim - 2)
    if weight is not None:
        y = F.mul(y, F.reshape(weight, per_channel))
    if bias is not None:
        y = F.add(y, F.reshape(bias, per_channel))
    return suggested_layout(y, x)  # (PyTorch's: C order unless the input is channels-last)


@F.core.half_in_float32  # as PyTorch's: a half input normalized in float32, rounded once
def instance_norm(
    input,  # noqa: A002
    running_mean=None,
    running_var=None,
    weight=None,
    bias=None,
    use_input_stats: bool = True,
    momentum: float = 0.1,
    eps: float = 1e-5,
):
    """Normalizes each channel of each sample of `input` (N, C, ...) over its spatial dims,
    then scales and shifts per channel (PyTorch's `instance_norm`; the running statistics
    are used, not updated, with `use_input_stats=False`).

    >>> import kiln as kn
    >>> kn.nn.functional.instance_norm(kn.tensor([[[1.0, 3.0], [5.0, 5.0]]]))
    tensor([[[-1.0000,  1.0000],
             [ 0.0000,  0.0000]]])
    """
    (x,) = F.core.lift(input)
    if x.ndim < 3:
        raise ArgumentError(
            f"instance_norm: expected an (N, C, ...) input of 3 or more dims, got {x.ndim}"
        )
    per_channel = (x.shape[1],) + (1,) * (x.ndim - 2)
    if use_input_stats:
        spatial = math.prod(int(n) for n in x.shape[2:] if isinstance(n, int))
        if spatial == 1 and all(isinstance(n, int) for n in x.shape[2:]):
            raise ArgumentError(  # as PyTorch's: one element has no spread to normalize by
                f"Expected more than 1 spatial element when training, got input size "
                f"{list(x.shape)}"
            )
        axes = tuple(range(2, x.ndim))
        centered = F.sub(x, F.mean(x, axes, keepdim=True))
        var = F.mean(F.mul(centered, centered), axes, keepdim=True)
    else:
        centered = F.sub(x, F.reshape(running_mean, per_channel))
        var = F.reshape(running_var, per_channel)
    y = F.mul(centered, F.rsqrt(F.add(var, eps)))
    if weight is not None:
        y = F.mul(y, F.reshape(weight, per_channel))
    if bias is not None:
        y = F.add(y, F.reshape(bias, per_channel))
    return c_ordered(y)  # (PyTorch's batch_norm of a contiguous view of the input: C order)


def rms_norm(input, normalized_shape, weight=None, eps=None):  # noqa: A002
    """`x / sqrt(mean(x**2) + eps)` over the last dims (those of `normalized_shape`), times
    `weight`; `eps` defaults to the dtype's machine epsilon, as PyTorch's.

    >>> import kiln as kn
    >>> kn.nn.functional.rms_norm(kn.tensor([[3.0, 4.0]]), (2,), eps=0.0)
    tensor([[0.8485, 1.1314]])
    """
    (x,) = F.core.lift(input)
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if tuple(x.shape[x.ndim - len(shape) :]) != shape:
        raise call_error(
            ShapeMismatchError,
            f"given normalized_shape={list(shape)}, expected input with shape "
            f"[*, {', '.join(map(str, shape))}], but got input of size {list(x.shape)}",
            "rms_norm", x,
        )  # fmt: skip
    # NOTE: as PyTorch's, float16 and bfloat16 compute in float32 (their squares overflow),
    # the default eps is that of the dtype computed in, and the result, weight applied, is
    # rounded once to x's dtype
    wide = F.cast(x, dt.float32) if x.dtype in (dt.float16, dt.bfloat16) else x
    if eps is None:
        eps = float(ml_dtypes.finfo(wide.dtype).eps)  # NumPy's finfo knows no bfloat16
    axes = tuple(range(x.ndim - len(shape), x.ndim))
    y = F.mul(wide, F.rsqrt(F.add(F.mean(F.mul(wide, wide), axes, keepdim=True), eps)))
    y = y if weight is None else F.mul(y, weight)
    return y if y.dtype == x.dtype else F.cast(y, x.dtype)


def local_response_norm(input, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0):  # noqa: A002
    """Divides each channel by `(k + alpha * mean of squares over `size` neighbouring
    channels) ** beta` (PyTorch's `local_response_norm`, over dim 1).

    >>> import kiln as kn
    >>> kn.nn.functional.local_response_norm(kn.ones(1, 3, 1), 1, alpha=1.0, beta=1.0)
    tensor([[[0.5000],
             [0.5000],
             [0.5000]]])
    """
    (x,) = F.core.lift(input)
    if x.ndim < 3:
        raise ArgumentError(f"local_response_norm: expected 3 or more dims, got {x.ndim}")
    sq = F.mul(x, x)
    # mean over a window of `size` channels, zero-padded as PyTorch pads (size // 2 before)
    flat = F.reshape(sq, (x.shape[0], 1, x.shape[1], -1))
    padded = pad(flat, (0, 0, size // 2, (size - 1) // 2))
    div = F.avg_pool2d(padded, (size, 1), stride=1)
    div = F.reshape(div, x.shape)
    return F.div(x, F.pow(F.add(F.mul(div, alpha), k), beta))


@autocast_op(None, cuda="fp32")
def cosine_similarity(x1, x2, dim: int = 1, eps: float = 1e-8):
    """The cosine of the angle between `x1` and `x2` (broadcast) along `dim`: each divided by
    its norm (at least `eps`; the gradient as if not floored, as PyTorch's), then their dot
    product.

    >>> import kiln as kn
    >>> kn.nn.functional.cosine_similarity(kn.tensor([[1.0, 0.0]]), kn.tensor([[1.0, 1.0]]))
    tensor([0.7071])
    """
    a, b = F.core.lift(x1, x2)
    shape = sh.broadcast_shapes(a.shape, b.shape)
    a, b = F.broadcast_to(a, shape), F.broadcast_to(b, shape)
    return F.sum(F.mul(F.div(a, _floored_norm(a, dim, eps)), F.div(b, _floored_norm(b, dim, eps))),
                 dim)  # fmt: skip


def _floored_norm(x, dim, eps):
    """`max(||x||, eps)` whose gradient is the norm's own, as PyTorch clamps the norm in
    place outside autograd."""
    n = _norm(x, 2, dim)
    return F.add(n, F.stop_gradient(F.sub(F.clip(n, eps, None), n)))


def pairwise_distance(x1, x2, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False):
    """The p-norm of `x1 - x2 + eps` along the last dim.

    >>> import kiln as kn
    >>> kn.nn.functional.pairwise_distance(kn.tensor([[0.0, 0.0]]), kn.tensor([[3.0, 4.0]]),
    ...                                    eps=0.0)
    tensor([5.])
    """
    d = F.add(F.sub(x1, x2), eps)
    n = _norm(d, p, -1)
    return n if keepdim else F.squeeze(n, -1)
