"""Neural-network functions: PyTorch's functional signatures with NumPy's axis names.

Composites of kiln's primitives; convolution and pooling are in `nn_conv` and `nn_pool`.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from .. import shapes as sh
from ..eager.autograd import name_history
from ..eager.tensor import Tensor
from ..errors import (
    ArgumentError,
    ArgumentTypeError,
    DTypeError,
    DTypeMismatchError,
    ShapeError,
    ShapeMismatchError,
    UnknownModeError,
    UnsupportedDTypeError,
    UnsupportedShapeError,
    UsageError,
    call_error,
    node_error,
)
from ..graph.core import Symbol, user_site
from ..ops.random import in_trace, next_seed
from ..ops.state import GRAD_FORMULAS
from . import core, random
from .autocast import autocast_op
from .core import call, half_in_float32, lift
from .math import add, cast, div, exp, log, mean, mul, neg, rsqrt, square, sub
from .math import amax as reduce_max
from .math import sum as reduce_sum
from .out import takes_out
from .reductions import require_floating
from .result_layouts import c_ordered, suggested_layout
from .shape import gather, reshape, squeeze, take_along_axis, unsqueeze

__all__ = [
    "batch_norm",
    "cross_entropy",
    "dropout",
    "embedding",
    "layer_norm",
    "log_softmax",
    "mse_loss",
    "softmax",
]


def _shape_error(op: str, message: str, *values) -> ShapeError:
    """A ShapeError for a check made here (not in a shape rule), in kiln's one format: the
    Symbols among `values` (`x:f32[2,3]`) or eager tensors (`f32[2,3] on cpu`) named."""
    inputs = [
        v
        if isinstance(v, Symbol)
        else f"{dt.short_name(v.dtype)}{sh.format_shape(v.shape)} on {v.device}"
        for v in values
        if isinstance(v, (Symbol, Tensor))
    ]
    return node_error(ShapeError, message, op=op, name=None, site=user_site(), inputs=inputs)


def _reduce(loss, reduction: str):
    if reduction == "mean":
        return mean(loss)
    if reduction == "sum":
        return reduce_sum(loss)
    if reduction == "none":
        return loss
    raise ArgumentError(
        f"{reduction!r} is not a valid value for reduction: 'mean', 'sum' or 'none'"
    )


# -- activations and losses -------------------------------------------------------------------


def _softmax_dim(dim, axis, dtype, x, name):
    """`dim` (or its alias `axis`), required as in PyTorch's `torch.softmax(input, dim)`, and
    x cast to `dtype` first when given."""
    if dim is None and axis is None:
        raise ArgumentTypeError(f"{name}() missing 1 required positional argument: 'dim'")
    (x,) = lift(x)
    if dtype is not None:
        x = cast(x, dt.as_dtype(dtype))
    require_floating(name, x, f"\"{name}\" not implemented for '{{dtype}}'", UnsupportedDTypeError)
    return x, dim if axis is None else axis


@takes_out
@autocast_op(None, cuda="fp32")
def softmax(input, dim=None, dtype=None, *, axis=None):  # noqa: A002
    """`exp(x) / sum(exp(x))` along `dim` (`axis`: an alias), shifted by the maximum so it
    cannot overflow; `dim` is required, as in PyTorch's `torch.softmax`.

    >>> import kiln as kn, numpy as np
    >>> kn.softmax(np.array([1.0, 1.0, 1000.0, 1000.0], np.float32), -1)
    array([0. , 0. , 0.5, 0.5], dtype=float32)
    """
    input, axis = _softmax_dim(dim, axis, dtype, input, "softmax")  # noqa: A001
    # PyTorch's softmax kernels write a C-ordered result, whatever the input's layout
    out = c_ordered(_softmax(input, axis))
    saved = {"_saved_dim": axis if dim is None else dim}  # as given, as PyTorch keeps it
    return name_history(out, "SoftmaxBackward0", input, saved=saved)


def _shift(x, axis):
    """The maximum along `axis` (kept), which cancels exactly in softmax, so no gradient flows
    through it; 0 for an empty `x` (whose result is empty, and whose maximum is undefined)."""
    if any(d == 0 for d in x.shape):
        return 0.0
    return call("stop_gradient", reduce_max(x, axis, keepdims=True))


def _softmax(x, axis):
    if x.dtype in _HALF:  # in float32; the gradient PyTorch's, from the rounded result
        return half_in_float32(lambda x32: _softmax32(x32, axis, x.dtype))(x)
    return half_in_float32(_softmax_body)(x, axis)


def _softmax_body(x, axis):
    e = exp(sub(x, _shift(x, axis)))
    return div(e, reduce_sum(e, axis, keepdims=True))


_HALF = (np.dtype(np.float16), dt.bfloat16)


def _rounded(x, dtype):
    """float32 `x` rounded to `dtype`, back in float32 (a value PyTorch's kernel stores)."""
    return cast(cast(x, dtype), np.dtype(np.float32))


def _softmax32(x, axis, dtype):
    y = _softmax_body(x, axis)
    return core.with_grad(y, x, ("softmax", axis), _rounded(y, dtype))


def _softmax_grad(ct, y, axis):  # PyTorch's: y * (ct - sum(ct * y)), y the rounded result
    return mul(y, sub(ct, reduce_sum(mul(ct, y), axis, keepdims=True)))


@takes_out
@autocast_op(None, cuda="fp32")
def log_softmax(input, dim=None, dtype=None, *, axis=None):  # noqa: A002
    """`x - logsumexp(x)` along `dim` (`axis`: an alias): finite even where
    `log(softmax(x))` underflows; `dim` is required, as in PyTorch's `torch.log_softmax`.

    >>> import kiln as kn, numpy as np
    >>> kn.log_softmax(np.array([0.0, 1000.0], np.float32), dim=0)
    array([-1000.,     0.], dtype=float32)
    """
    input, axis = _softmax_dim(dim, axis, dtype, input, "log_softmax")  # noqa: A001
    out = c_ordered(_log_softmax(input, axis))
    saved = {"_saved_dim": axis if dim is None else dim}  # as given, as PyTorch keeps it
    return name_history(out, "LogSoftmaxBackward0", input, saved=saved)


def _log_softmax(x, axis):
    if x.dtype in _HALF:  # in float32, as PyTorch's kernel: its sum and log rounded to x's dtype
        return half_in_float32(lambda x32: _log_softmax32(x32, axis, x.dtype))(x)
    return half_in_float32(_log_softmax_body)(x, axis)


def _log_softmax_body(x, axis):
    # (x - m) - log(sum(exp(x - m))) rather than x - (m + log(...)): adding the log to a large
    # m first would round it away (float32 has ~1e-4 spacing at 1000).
    shifted = sub(x, _shift(x, axis))
    return sub(shifted, log(reduce_sum(exp(shifted), axis, keepdims=True)))


def _log_softmax32(x, axis, dtype):
    if sh.normalize_axis(axis, x.ndim) != x.ndim - 1:  # PyTorch's other kernel: all float32
        y = _log_softmax_body(x, axis)
    else:  # its last-dim kernel keeps the sum and its log in x's dtype
        shifted = sub(x, _shift(x, axis))
        total = _rounded(reduce_sum(exp(shifted), axis, keepdims=True), dtype)
        y = sub(shifted, _rounded(log(total), dtype))
    return core.with_grad(y, x, ("log_softmax", axis), _rounded(y, dtype))


def _log_softmax_grad(ct, y, axis):  # PyTorch's: ct - exp(y) * sum(ct), y the rounded result
    return sub(ct, mul(exp(y), reduce_sum(ct, axis, keepdims=True)))


GRAD_FORMULAS.update(softmax=_softmax_grad, log_softmax=_log_softmax_grad)


@autocast_op("fp32")
def cross_entropy(logits, labels, reduction: str = "mean"):
    """Softmax cross-entropy of `logits` (..., C) against integer class `labels` (...).

    The class axis is the last one, so (N, C) logits with (N,) labels are PyTorch's case.
    `reduction` is "mean" (over every label), "sum" or "none" (one loss per label).

    >>> import kiln as kn, numpy as np
    >>> logits = np.array([[0.0, 0.0], [0.0, 100.0]], np.float32)
    >>> kn.cross_entropy(logits, np.array([1, 0]), reduction="none")
    array([  0.6931472, 100.       ], dtype=float32)
    """
    (logits,) = lift(logits)
    (labels,) = lift(labels, context=(logits,))
    if not dt.is_int(labels.dtype):
        raise DTypeError(f"cross_entropy: labels must be integer class indices, got {labels.dtype}")
    want = tuple(logits.shape[:-1])
    if logits.ndim == 0 or labels.ndim != len(want) or any(
        isinstance(a, int) and isinstance(b, int) and a != b for a, b in zip(labels.shape, want)
    ):  # fmt: skip
        raise _shape_error(
            "cross_entropy", f"expected labels of size {sh.format_shape(want)} for logits of "
            f"size {sh.format_shape(logits.shape)}, got {sh.format_shape(labels.shape)}",
            logits, labels,
        )  # fmt: skip
    if type(logits) is Tensor and logits.dtype in (np.float32, np.float64):
        # NOTE: eagerly, one kernel (and one for its gradient) where log_softmax then
        # take_along_axis are a dozen: the same NumPy calls, the same bits (as graph mode's
        # fuse_softmax_xent; tests/test_cross_entropy_eager.py)
        picked = call("log_softmax_take", logits, unsqueeze(labels, -1), axis=logits.ndim - 1)
    else:
        logp = log_softmax(logits, axis=-1)
        picked = take_along_axis(logp, unsqueeze(labels, -1), axis=-1)
    return _reduce(neg(squeeze(picked, -1)), reduction)


@autocast_op("fp32")
def mse_loss(a, b, reduction: str = "mean"):
    """Squared error `(a - b)**2` (broadcasting), reduced by "mean", "sum" or "none".

    >>> import kiln as kn, numpy as np
    >>> kn.mse_loss(np.array([1.0, 2.0], np.float32), np.array([1.0, 4.0], np.float32))
    array(2., dtype=float32)
    """
    return _reduce(square(sub(a, b)), reduction)


def _keep_mask(x, keep: float, dtype):
    """Ones with probability `keep`, else zeros, of `x`'s shape: a random node in graph mode,
    drawn now (from the `kn.manual_seed` stream) in eager mode."""
    if isinstance(x, Symbol):
        with x.graph.as_default():
            return random.bernoulli(x.shape, p=keep, dtype=dtype)
    if in_trace():  # a constant in a kn.compile trace: still a fresh mask on every call
        return random.bernoulli(tuple(x.shape), p=keep, dtype=dtype)
    seed = next_seed()
    return call("random_bernoulli", shape=x.shape, dtype=dtype, seed=seed, p=keep, key=(seed, 0))


def refuse_integer_dropout(x, op: str) -> None:
    """PyTorch's refusal of a random dropout mask on an integer or bool tensor: its float
    scale cannot be written back (RuntimeError); eval, p=0 and p=1 keep the dtype."""
    if dt.as_dtype(x.dtype).kind in "iub":
        raise call_error(
            DTypeMismatchError, f"result type Float can't be cast to the desired output type "
            f"{dt.public(dt.as_dtype(x.dtype))}", op, x,
        )  # fmt: skip


def dropout(input, p: float = 0.5, train: bool = True):  # noqa: A002
    """Inverted dropout: zeroes each element with probability `p`, scales the rest by
    `1 / (1 - p)`; with `train=False` or `p=0` it returns `input` unchanged.

    In graph mode every run of a compiled function draws a fresh mask.

    >>> import kiln as kn, numpy as np
    >>> x = np.ones(4, np.float32)
    >>> kn.dropout(x, p=0.5, train=False) is x
    True
    >>> sorted(set(kn.dropout(x, p=0.5).tolist()) - {0.0, 2.0})
    []
    """
    if not 0.0 <= p <= 1.0:
        raise ArgumentError(f"dropout probability has to be between 0 and 1, but got {p}")
    (input,) = lift(input)  # noqa: A001
    if not train or p == 0.0:
        return input
    if p == 1.0:
        return mul(input, 0)  # PyTorch's choice: multiply, so the graph stays connected
    refuse_integer_dropout(input, "dropout")
    keep = 1.0 - p
    dtype = input.dtype if dt.is_float(input.dtype) else dt.DEFAULT_FLOAT
    return mul(input, div(_keep_mask(input, keep, dtype), keep))


# -- normalization ----------------------------------------------------------------------------


def _param_at_axes(param, x, axes: tuple, what: str):
    """`param` of the normalized shape, reshaped so its dims line up with `x`'s `axes`."""
    (param,) = lift(param, context=(x,))
    if param.ndim != len(axes):
        raise _shape_error(
            "layer_norm", f"{what} of size {sh.format_shape(param.shape)} must have the "
            f"normalized shape {sh.format_shape([x.shape[a] for a in axes])}", x, param,
        )  # fmt: skip
    dims = iter(param.shape)
    return reshape(param, tuple(next(dims) if i in axes else 1 for i in range(x.ndim)))


def _normalized_axes(x, normalized_shape, axis) -> tuple:
    """The axes `layer_norm` normalizes: the last `len(normalized_shape)` dims, which must
    have those sizes (PyTorch's), or the given `axis` (an int or a tuple)."""
    if normalized_shape is None:
        return sh.normalize_axes(-1 if axis is None else axis, x.ndim)
    if axis is not None:
        raise ArgumentTypeError("layer_norm: give normalized_shape or axis, not both")
    if isinstance(normalized_shape, (int, np.integer)):
        normalized_shape = (int(normalized_shape),)
    want = tuple(normalized_shape)
    got = tuple(x.shape[x.ndim - len(want) :]) if len(want) <= x.ndim else None
    if got is None or any(isinstance(g, int) and g != w for g, w in zip(got, want)):
        raise _shape_error(
            "layer_norm", f"Given normalized_shape={list(want)}, expected input with shape "
            f"[*, {', '.join(str(w) for w in want)}], but got input of size "
            f"{sh.format_shape(x.shape)}", x,
        )  # fmt: skip
    return tuple(range(x.ndim - len(want), x.ndim))


@autocast_op(None, cuda="fp32")
def layer_norm(
    input,  # noqa: A002
    normalized_shape=None,
    weight=None,
    bias=None,
    eps: float = 1e-5,
    *,
    axis=None,  # noqa: A002
):
    """Normalizes `input` to zero mean and unit variance over its last dims (those of
    `normalized_shape`), then applies `weight` and `bias` of that shape, as PyTorch's
    `layer_norm`. Without `normalized_shape` it normalizes over `axis` (an int or a tuple;
    the last dim by default).

    >>> import kiln as kn, numpy as np
    >>> kn.layer_norm(np.array([[1.0, 3.0]], np.float32), (2,), eps=0.0)
    array([[-1.,  1.]], dtype=float32)
    """
    (x,) = lift(input)
    axes = _normalized_axes(x, normalized_shape, axis)
    if x.dtype in _HALF:  # as PyTorch's: a half input (float32 or half parameters) in float32
        params = [lift(p)[0].dtype for p in (weight, bias) if p is not None]
        stats = np.dtype(np.float32) if any(d != x.dtype for d in params) else x.dtype
        wide = half_in_float32(lambda v: _layer_norm32(v, axes, weight, bias, eps, stats))
        return c_ordered(wide(x))
    # PyTorch's layer_norm kernel writes a C-ordered result, whatever the input's layout
    out = c_ordered(_affine(_normalized(x, axes, eps)[0], x, axes, weight, bias))
    saved = {"_saved_input": x, "_saved_weight": weight, "_saved_bias": bias,
             "_saved_normalized_shape": tuple(x.shape[a] for a in axes)}  # fmt: skip
    return name_history(out, "NativeLayerNormBackward0", x, weight, bias, saved=saved)


def _normalized(x, axes, eps):
    """(x - mean) * rstd over `axes`, and the mean and rstd (kept)."""
    m = mean(x, axes, keepdims=True)
    centered = sub(x, m)
    rstd = rsqrt(add(mean(square(centered), axes, keepdims=True), eps))
    return mul(centered, rstd), m, rstd


def _layer_norm32(x, axes, weight, bias, eps, stats):
    """layer_norm of float32 `x` (a half input's copy), its input's gradient PyTorch's
    kernel's: from the mean and rstd it keeps in `stats` (the half dtype, unless a parameter
    is float32), `rstd * ct + b * x + c` with b and c of the sums of ct and ct * x."""
    y, m, rstd = _normalized(x, axes, eps)
    if not all(isinstance(x.shape[a], int) for a in axes):  # a symbolic size: autodiff's
        return _affine(y, x, axes, weight, bias)
    if stats != np.float32:
        m, rstd = cast(cast(m, stats), np.float32), cast(cast(rstd, stats), np.float32)
    y = core.with_grad(y, x, ("layer_norm", axes), x, m, rstd)
    return _affine(y, x, axes, weight, bias)


def _layer_norm_grad(ct, x, m, rstd, axes):
    scale = 1.0 / float(np.prod([x.shape[a] for a in axes]))
    ds = reduce_sum(mul(ct, x), axes, keepdims=True)
    db = reduce_sum(ct, axes, keepdims=True)
    b = mul(mul(mul(mul(sub(mul(db, m), ds), rstd), rstd), rstd), scale)
    c = sub(mul(neg(b), m), mul(mul(db, rstd), scale))
    return add(add(mul(rstd, ct), mul(b, x)), c)


GRAD_FORMULAS["layer_norm"] = _layer_norm_grad


def _affine(y, x, axes, weight, bias):
    if weight is not None:
        y = mul(y, _param_at_axes(weight, x, axes, "weight"))
    if bias is not None:
        y = add(y, _param_at_axes(bias, x, axes, "bias"))
    return y


def _per_channel(param, x, what: str):
    """A (C,) statistic or parameter reshaped to (C, 1, ...) to broadcast over axis 1 of x."""
    (param,) = lift(param, context=(x,))
    c = x.shape[1]
    if param.ndim != 1 or (isinstance(c, int) and param.shape[0] not in (c,)):
        raise _shape_error(
            "batch_norm", f"{what} should contain {c} elements, not "
            f"{sh.format_shape(param.shape)}", x, param,
        )  # fmt: skip
    return reshape(param, (param.shape[0],) + (1,) * (x.ndim - 2))


@half_in_float32  # as PyTorch's: a half input, float32 statistics and parameters
def batch_norm(
    input,  # noqa: A002
    running_mean,
    running_var,
    weight=None,
    bias=None,
    training: bool = False,
    momentum: float = 0.1,
    eps: float = 1e-5,
):
    """Normalizes `input` (N, C, ...) per channel (dim 1), as PyTorch's `batch_norm`: with the
    given running statistics (C,), or with `training=True` with the batch's mean and biased
    variance; then it also updates eager running statistics in place (`(1 - momentum) * old +
    momentum * batch`, the variance unbiased). (`kn.nn.BatchNorm1d`/`2d` update them in graph
    mode.)

    >>> import kiln as kn, numpy as np
    >>> x = np.array([[1.0, 10.0], [3.0, 30.0]], np.float32)
    >>> kn.batch_norm(x, np.array([2.0, 20.0], np.float32), np.array([1.0, 100.0], np.float32),
    ...               eps=0.0)
    array([[-1., -1.],
           [ 1.,  1.]], dtype=float32)
    """
    (x,) = lift(input)
    stats = [s for s in (running_mean, running_var) if s is not None]
    if tuple(x.shape) == (0,) and all(0 in tuple(s.shape) for s in stats):
        return mul(x, 1.0)  # PyTorch's: an empty vector (no channels) normalizes to itself
    if x.ndim < 2:
        raise _shape_error(
            "batch_norm", f"expected an input of 2 or more dims (N, C, ...), got "
            f"{sh.format_shape(x.shape)}", x,
        )  # fmt: skip
    if training:
        axes = (0, *range(2, x.ndim))
        batch_mean = mean(x, axes)
        batch_var = mean(square(sub(x, mean(x, axes, keepdims=True))), axes)
        _update_running(x, axes, running_mean, running_var, batch_mean, batch_var, momentum)
        running_mean, running_var = batch_mean, batch_var
    elif running_mean is None or running_var is None:
        raise ArgumentError("batch_norm: running_mean and running_var are needed when not training")
    scale = rsqrt(add(_per_channel(running_var, x, "running_var"), eps))
    if weight is not None:
        scale = mul(scale, _per_channel(weight, x, "weight"))
    y = mul(sub(x, _per_channel(running_mean, x, "running_mean")), scale)
    if bias is not None:
        y = add(y, _per_channel(bias, x, "bias"))
    return suggested_layout(y, x)  # (PyTorch's: C order unless the input is channels-last)


def _update_running(x, axes, running_mean, running_var, batch_mean, batch_var, momentum):
    """PyTorch's in-place update of eager running statistics in training mode."""
    stats = [s for s in (running_mean, running_var) if s is not None]
    if not stats:
        return
    if isinstance(x, Symbol) and not all(isinstance(s, Symbol) for s in stats):
        raise _shape_error(
            "batch_norm", "training=True updates the running statistics in place: in a graph "
            "they must be graph values too (kn.compile's arguments; kn.nn.BatchNorm1d/2d "
            "declare the updates)", x,
        )  # fmt: skip
    n = int(np.prod([x.shape[a] for a in axes]))
    unbiased = mul(batch_var, n / max(n - 1, 1))
    for stat, batch in ((running_mean, batch_mean), (running_var, unbiased)):
        if stat is not None:
            new = add(mul(stat, 1.0 - momentum), mul(call("stop_gradient", batch), momentum))
            if isinstance(stat, Symbol):  # an argument kn.compile writes back
                stat.copy_(new)
            elif hasattr(stat, "copy_"):
                stat.detach().copy_(new.detach())
            else:
                np.copyto(stat, np.asarray(new))


# -- convolution, pooling, embedding ----------------------------------------------------------


def embedding(weight, indices, padding_idx: int = -1, scale_grad_by_freq: bool = False,
              sparse: bool = False):  # fmt: skip
    """Rows of `weight` (V, D) picked by integer `indices` (...), giving (..., D), as PyTorch's
    `torch.embedding` (weight first; `kn.nn.functional.embedding` takes indices first, and
    computes with `padding_idx` (-1: none here), `scale_grad_by_freq` and `sparse`).

    >>> import kiln as kn, numpy as np
    >>> kn.embedding(np.arange(6.0, dtype=np.float32).reshape(3, 2), np.array([2, 0]))
    array([[4., 5.],
           [0., 1.]], dtype=float32)
    """
    if padding_idx == -1 and not scale_grad_by_freq and not sparse:
        return gather(weight, indices, axis=0)
    from ..nn import functional as F  # NOTE: kiln.nn builds on the frontend

    return F.embedding(indices, weight, None if padding_idx == -1 else padding_idx,
                       scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)  # fmt: skip


def _slice_dim(x, dim: int, start, stop, step=None):
    """`x[..., start:stop:step, ...]` with the slice on `dim`."""
    spec = (("slice", None, None, None),) * dim + (("slice", start, stop, step),)
    return call("index", x, spec=spec)


# PyTorch's reflect, replicate and circular pads: the number of widths -> the input's ranks
# (unbatched or batched) that take them
_PADDED_RANKS = {2: (2, 3), 4: (3, 4), 6: (4, 5)}


def pad(input, pad, mode: str = "constant", value=None):  # noqa: A002 -- PyTorch's names
    """PyTorch's `nn.functional.pad`: `pad` holds (before, after) pairs for the LAST dims
    first, `(left, right)` of the last dim, then `(top, bottom)` of the one before, and so on;
    dims it does not reach stay as they are. `mode` is "constant" (filled with `value`, 0 by
    default; a negative width crops), "reflect" (mirrored without repeating the edge, each
    width less than its dim), "replicate" (the edge repeated) or "circular" (wrapped around,
    each width at most its dim); a negative width crops in every mode. As PyTorch's, the
    last three pad 1, 2 or 3 dims (2, 4 or 6 widths) of a 2-3, 3-4 or 4-5 dim input.
    (`kn.pad` is NumPy's `pad`, with NumPy's `pad_width`.)

    >>> import kiln as kn, numpy as np
    >>> from kiln.frontend.nn_functional import pad
    >>> pad(np.ones((2, 3)), (1, 1)).shape
    (2, 5)
    >>> pad(np.array([[1.0, 2.0, 3.0]]), (2, 1), mode="reflect")
    array([[3., 2., 1., 2., 3., 2.]])
    """
    (x,) = lift(input)
    widths = _pad_arguments(pad, mode, value)
    if len(widths) % 2:
        raise _shape_error("pad", "Padding length must be divisible by 2", x)
    if len(widths) // 2 > x.ndim:
        raise _shape_error(
            "pad",
            "Padding length should be less than or equal to two times the input dimension but "
            f"got padding length {len(widths)} and input of dimension {x.ndim}",
            x,
        )
    pairs = [(x.ndim - 1 - k, widths[2 * k], widths[2 * k + 1]) for k in range(len(widths) // 2)]
    if mode == "constant":
        _check_cropped_sizes(x, pairs, mode)
        fill = 0 if value is None else value
        crop = [(d, -b if b < 0 else None, a if a < 0 else None) for d, b, a in pairs]
        for d, start, stop in crop:
            if start is not None or stop is not None:
                x = _slice_dim(x, d, start, stop)
        width = [(0, 0)] * x.ndim
        for d, b, a in pairs:
            width[d] = (max(b, 0), max(a, 0))
        if not any(b or a for b, a in width):  # crops alone: a copy, as PyTorch's (its
            return call("cast", x, dtype=x.dtype)  # crop of a narrowed view `.clone()`s it)
        if dt.is_complex(x.dtype):  # a complex tensor's fill as it is (not truncated)
            fill = complex(fill)
        else:
            fill = float(fill) if dt.is_float(x.dtype) else int(fill)
        # (laid out as PyTorch's constant_pad_nd: channels-last where the input is)
        return suggested_layout(call("pad", x, pad_width=tuple(width), value=fill), x)
    if value is not None and value != 0:
        raise UsageError(f'Padding mode "{mode}" doesn\'t take in value argument')
    if x.ndim not in _PADDED_RANKS.get(len(widths), ()):
        raise call_error(
            UnsupportedShapeError,
            f"Padding size {len(widths)} is not supported for {x.ndim}D input tensor. "
            "Supported combinations for non-constant padding: 2D or 3D input: padding size = 2 "
            "(pads last dimension); 3D or 4D input: padding size = 4 (pads last 2 dimensions); "
            "4D or 5D input: padding size = 6 (pads last 3 dimensions)",
            "pad",
            x,
        )
    _check_cropped_sizes(x, pairs, mode)
    source = x
    for d, b, a in pairs:
        n = x.shape[d]
        if not isinstance(n, int) and (b or a):
            raise _shape_error("pad", f"{mode} pad along the symbolic dim {n} of dim {d}", x)
        if b < 0 or a < 0:
            x, b, a = _crop(x, d, b, a, mode)
            n = x.shape[d]
        if (b or a) and (
            mode == "reflect" and max(b, a) >= n or mode == "circular" and max(b, a) > n
        ):
            bound = "less than" if mode == "reflect" else "at most"
            raise _shape_error(
                "pad", f"{mode} pad widths {(b, a)} must be {bound} the size {n} of dim {d}", x
            )
        if mode == "replicate" and n == 0 and (b or a):
            raise _shape_error("pad", f"replicate pad of the empty dim {d}", x)
        parts = []
        if b:
            if mode == "reflect":
                parts.append(_slice_dim(x, d, b, 0, -1))
            elif mode == "replicate":
                parts.append(call("tile", _slice_dim(x, d, 0, 1), reps=_reps(x.ndim, d, b)))
            else:
                parts.append(_slice_dim(x, d, n - b, None))
        parts.append(x)
        if a:
            if mode == "reflect":
                parts.append(_slice_dim(x, d, n - 2, n - 2 - a if a < n - 1 else None, -1))
            elif mode == "replicate":
                parts.append(call("tile", _slice_dim(x, d, n - 1, n), reps=_reps(x.ndim, d, a)))
            else:
                parts.append(_slice_dim(x, d, 0, a))
        if len(parts) > 1:
            x = call("concat", *parts, axis=d)
    if not any(b > 0 or a > 0 for _, b, a in pairs):
        return x
    # (PyTorch's reflect and replicate kernels keep a channels-last layout, circular's not)
    return c_ordered(x) if mode == "circular" else suggested_layout(x, source)


def _check_cropped_sizes(x, pairs, mode: str) -> None:
    """PyTorch's refusals of negative widths: a constant pad whose crop leaves a negative size;
    a reflect or replicate pad whose every padded dim ends with no size."""
    sizes = [(d, x.shape[d], b, a) for d, b, a in pairs if isinstance(x.shape[d], int)]
    if mode == "constant":
        for d, n, b, a in sizes:
            if n + min(b, 0) + min(a, 0) < 0:
                message = f"narrow(): length must be non-negative (dim {d} of size {n} cropped"
                raise call_error(ShapeMismatchError, f"{message} by {(b, a)})", "pad", x)
    elif mode in ("reflect", "replicate") and sizes and len(sizes) == len(pairs):
        if any(b < 0 or a < 0 for _, _, b, a in sizes) and all(
            n + b + a < 1 for _, n, b, a in sizes
        ):
            d, n, b, a = sizes[0]
            raise call_error(ShapeMismatchError, f"input (W: {n}) is too small. Calculated "
                             f"output W: {n + b + a}", "pad", x)  # fmt: skip


def _pad_arguments(pad, mode, value) -> tuple:
    """`pad`'s widths as ints, after PyTorch's checks of the three arguments and in its
    order: each argument's type (TypeError, as its argument parser), then the mode's name
    (NotImplementedError: "Unrecognised padding mode")."""

    def where(name: str, position: int) -> str:
        return f"pad(): argument '{name}' (position {position}) must be"

    if not isinstance(pad, (tuple, list)):
        raise ArgumentTypeError(f"{where('pad', 2)} tuple of ints, not {type(pad).__name__}")
    widths = []
    for i, p in enumerate(pad):
        integer = isinstance(p, (int, np.integer)) and not isinstance(p, (bool, np.bool_))
        if not integer and not (getattr(p, "ndim", None) == 0 and dt.is_int(p.dtype)):
            raise ArgumentTypeError(f"{where('pad', 2)} tuple of ints, but found element of "
                                    f"type {type(p).__name__} at pos {i}")  # fmt: skip
        widths.append(int(p))
    if not isinstance(mode, str):
        raise ArgumentTypeError(f"{where('mode', 3)} str, not {type(mode).__name__}")
    number = isinstance(value, (int, float, complex, np.number, np.bool_))
    if value is not None and not number and getattr(value, "ndim", None) != 0:
        raise ArgumentTypeError(f"{where('value', 4)} float, not {type(value).__name__}")
    if isinstance(value, (complex, np.complexfloating)):  # PyTorch's F.pad takes a float
        raise ArgumentTypeError(f"{where('value', 4)} float, not complex")
    if mode not in ("constant", "reflect", "replicate", "circular"):
        raise UnknownModeError(f"Unrecognised padding mode {mode}")
    return tuple(widths)


def _crop(x, d: int, b: int, a: int, mode: str):
    """PyTorch's negative pad widths on dim `d`: (x, b, a) left to pad. "circular" crops
    first and wraps the rest; "replicate" takes each output position's input index clamped
    to the dim, "reflect" that index mirrored at the dim's ends (both read all of x, even
    where the crop would leave nothing; an empty result is allowed)."""
    n = x.shape[d]
    if mode in ("replicate", "reflect"):
        if n + b + a < 0:
            raise _shape_error("pad", f"{mode} pad {(b, a)} of dim {d} leaves a negative size", x)
        if mode == "reflect" and max(b, a) >= n:
            raise _shape_error(
                "pad", f"reflect pad widths {(b, a)} must be less than the size {n} of dim {d}", x
            )
        source = np.arange(n + b + a) - b  # each output position's index in x
        if mode == "replicate":
            source = np.clip(source, 0, n - 1)
        else:  # mirrored at both ends without repeating the edge
            source = np.where(
                source < 0, -source, np.where(source >= n, 2 * (n - 1) - source, source)
            )
        return gather(x, source, d), 0, 0
    x = _slice_dim(x, d, -b if b < 0 else None, n + a if a < 0 else None)
    return x, max(b, 0), max(a, 0)


def _reps(ndim: int, dim: int, n: int) -> tuple:
    return tuple(n if k == dim else 1 for k in range(ndim))
