"""`kn.nn.functional`: PyTorch's functional API (activations, losses, layers) over kiln ops,
so each works on eager Tensors, on Symbols (graph mode, `kn.compile`) and on NumPy arrays.

The losses take PyTorch's arguments in PyTorch's order, with its `reduction` ("mean", "sum",
"none") and its legacy `size_average`/`reduce` flags. Classes are on dim 1 (dim 0 for an
unbatched input), as in PyTorch.
"""

from __future__ import annotations

import warnings

import numpy as np

from .. import dtypes as dt
from .. import frontend as F
from ..eager import Tensor, fused
from ..eager.autograd import name_history
from ..errors import (
    ArgumentError,
    DTypeMismatchError,
    ShapeMismatchError,
    UsageError,
    call_error,
)
from ..frontend import (
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    adaptive_avg_pool3d,
    adaptive_max_pool2d,
    adaptive_max_pool3d,
    avg_pool1d,
    avg_pool2d,
    avg_pool3d,
    batch_norm,
    conv1d,
    conv2d,
    conv3d,
    conv_transpose1d,
    conv_transpose2d,
    conv_transpose3d,
    gelu,
    layer_norm,
    max_pool1d,
    max_pool2d,
    max_pool3d,
    sigmoid,
    tanh,
)
from ..frontend.autocast import autocast_op
from ..frontend.core import call
from ..frontend.nn_conv import fold, unfold
from ..frontend.nn_functional import pad  # PyTorch's pad tuple; kn.pad is NumPy's
from ..frontend.nn_interpolate import interpolate
from ..frontend.nn_pool import adaptive_max_pool1d  # (kn.adaptive_max_pool1d: torch's form)
from ..frontend.result_layouts import c_ordered
from ..ops.state import GRAD_FORMULAS
from .functional_act import (
    _underscored,
    celu,
    celu_,
    elu_opmath,
    exp_branch,
    glu,
    hardshrink,
    hardsigmoid,
    hardswish,
    hardtanh,
    hardtanh_,
    in_place,
    leaky_relu,
    leaky_relu_,
    mish,
    opmath_grad,
    prelu,
    relu,
    relu6,
    relu_,
    rrelu,
    rrelu_,
    selu,
    selu_,
    softmin,
    softshrink,
    softsign,
    tanhshrink,
    threshold,
    threshold_,
    with_grad,
)
from .functional_attention import linear, one_hot, scaled_dot_product_attention
from .functional_bag import embedding_bag
from .functional_core import (
    channel_shuffle,
    dropout,
    dropout1d,
    dropout2d,
    dropout3d,
    embedding,
    log_softmax,
    pixel_shuffle,
    pixel_unshuffle,
    refuse_integers,
    softmax,
    softplus,
    upsample,
    upsample_bilinear,
    upsample_nearest,
)
from .functional_grid import affine_grid, grid_sample
from .functional_loss import (
    check_class_weight,
    check_index_dtype,
    cosine_embedding_loss,
    ctc_loss,
    float_kernel,
    float_pair,
    float_result,
    gaussian_nll_loss,
    half_nll_value,
    hinge_embedding_loss,
    huber_loss,
    margin_ranking_loss,
    multi_margin_loss,
    multilabel_soft_margin_loss,
    poisson_nll_loss,
    reduce_loss,
    reduction_of,
    smooth_l1_loss,
    soft_cross_entropy,
    soft_margin_loss,
    triplet_margin_loss,
    warn_target_size,
)
from .functional_misc import (
    alpha_dropout,
    bilinear,
    feature_alpha_dropout,
    lp_pool1d,
    lp_pool2d,
    lp_pool3d,
    multilabel_margin_loss,
)
from .functional_more import *  # noqa: F403
from .functional_more import __all__ as _more_all
from .functional_norm import (
    cosine_similarity,
    group_norm,
    instance_norm,
    local_response_norm,
    normalize,
    pairwise_distance,
    rms_norm,
)
from .functional_unpool import (
    max_unpool1d,
    max_unpool2d,
    max_unpool3d,
    triplet_margin_with_distance_loss,
)

__all__ = [
    "max_unpool1d",
    "max_unpool2d",
    "max_unpool3d",
    "triplet_margin_with_distance_loss",
    "affine_grid",
    "alpha_dropout",
    "bilinear",
    "feature_alpha_dropout",
    "lp_pool1d",
    "lp_pool2d",
    "lp_pool3d",
    "multilabel_margin_loss",
    "grid_sample",
    "triplet_margin_loss",
    "soft_margin_loss",
    "poisson_nll_loss",
    "multilabel_soft_margin_loss",
    "multi_margin_loss",
    "margin_ranking_loss",
    "hinge_embedding_loss",
    "gaussian_nll_loss",
    "embedding_bag",
    "ctc_loss",
    "cosine_embedding_loss",
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "adaptive_avg_pool3d",
    "adaptive_max_pool1d",
    "adaptive_max_pool2d",
    "adaptive_max_pool3d",
    "avg_pool1d",
    "avg_pool2d",
    "avg_pool3d",
    "batch_norm",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "celu",
    "celu_",
    "channel_shuffle",
    "conv1d",
    "conv2d",
    "conv3d",
    "conv_transpose1d",
    "conv_transpose2d",
    "conv_transpose3d",
    "cosine_similarity",
    "cross_entropy",
    "dropout",
    "dropout1d",
    "dropout2d",
    "dropout3d",
    "elu",
    "elu_",
    "embedding",
    "fold",
    "gelu",
    "glu",
    "group_norm",
    "hardshrink",
    "hardsigmoid",
    "hardswish",
    "hardtanh",
    "hardtanh_",
    "huber_loss",
    "instance_norm",
    "interpolate",
    "kl_div",
    "l1_loss",
    "layer_norm",
    "leaky_relu",
    "leaky_relu_",
    "linear",
    "local_response_norm",
    "log_softmax",
    "logsigmoid",
    "max_pool1d",
    "max_pool2d",
    "max_pool3d",
    "mish",
    "mse_loss",
    "nll_loss",
    "normalize",
    "one_hot",
    "pad",
    "pairwise_distance",
    "pixel_shuffle",
    "pixel_unshuffle",
    "prelu",
    "relu",
    "relu6",
    "relu_",
    "rms_norm",
    "rrelu",
    "rrelu_",
    "scaled_dot_product_attention",
    "selu",
    "selu_",
    "sigmoid",
    "silu",
    "smooth_l1_loss",
    "softmax",
    "softmin",
    "softplus",
    "softshrink",
    "softsign",
    "tanh",
    "tanhshrink",
    "threshold",
    "threshold_",
    "unfold",
    "upsample",
    "upsample_bilinear",
    "upsample_nearest",
    *_more_all,
]


# -- activations --------------------------------------------------------------------------------


def elu(input, alpha: float = 1.0, inplace: bool = False):  # noqa: A002 (PyTorch's name)
    """`x` where positive, else `alpha * (exp(x) - 1)`.

    >>> import kiln as kn
    >>> kn.nn.functional.elu(kn.tensor([-1.0, 2.0]))
    tensor([-0.6321,  2.0000])
    """
    refuse_integers("elu_cpu", F.core.lift(input)[0])
    out = in_place(
        "elu_",
        lambda x: exp_branch(x, lambda v: F.mul(F.expm1(v), alpha), 1.0, alpha),
        input,
        inplace,
        opmath=elu_opmath(alpha, 1.0, 1.0, input, inplace),
    )
    saved = {
        "_saved_self": input,
        "_saved_alpha": alpha,
        "_saved_scale": 1,
        "_saved_input_scale": 1,
    }
    return name_history(out, "EluBackward0", input, saved=saved)  # PyTorch's node


elu_ = _underscored(elu, "elu_")


def silu(input, inplace: bool = False):  # noqa: A002
    """`x * sigmoid(x)` (swish).

    >>> import kiln as kn
    >>> kn.nn.functional.silu(kn.tensor([0.0, 1.0]))
    tensor([0.0000, 0.7311])
    """
    refuse_integers("silu_cpu", F.core.lift(input)[0])
    fn = lambda x: F.mul(x, F.sigmoid(x))  # noqa: E731
    out = in_place("silu_", fn, input, inplace, opmath=opmath_grad(fn, "silu"))
    return name_history(out, "SiluBackward0", input, saved={"_saved_self": input})


def logsigmoid(input):  # noqa: A002
    """`log(sigmoid(x))`, computed as `-softplus(-x)` (no overflow). A half-precision input
    is computed in float32, its gradient from `exp(-|x|)` rounded to the input's dtype (the
    buffer PyTorch's kernel keeps, and its backward reads).

    >>> import kiln as kn
    >>> kn.nn.functional.logsigmoid(kn.tensor([-200.0, 0.0]))
    tensor([-200.0000,   -0.6931])
    """
    dtype = getattr(input, "dtype", None)

    def fn(x):
        return F.neg(_softplus(F.neg(x)))

    def wide(x):
        buffer = F.core.call("cast", F.exp(F.neg(F.abs(x))), dtype=np.dtype(dtype))
        buffer = F.core.call("cast", buffer, dtype=np.dtype(np.float32))
        return with_grad(fn(x), x, ("logsigmoid",), x, buffer)

    # (PyTorch's log_sigmoid allocates its result in C order)
    return c_ordered(in_place("logsigmoid", fn, input, False, opmath=wide))


def _softplus(x):
    """`log(1 + exp(x))` for any x: `max(x, 0) + log1p(exp(-|x|))`, its gradient sigmoid(x)
    (whose own derivative is smooth at 0, as PyTorch's, where |x|'s is 0)."""
    value = F.add(F.maximum(x, 0.0), F.log1p(F.exp(F.neg(F.abs(x)))))
    return with_grad(value, x, ("softplus_sigmoid",), x)


def _softplus_sigmoid_grad(ct, x):
    return F.mul(ct, F.sigmoid(x))


GRAD_FORMULAS["softplus_sigmoid"] = _softplus_sigmoid_grad


# -- reductions ---------------------------------------------------------------------------------


# (one mapping of the legacy flags and one reduction, kiln/nn/functional_loss.py's)
_reduction, _reduce = reduction_of, reduce_loss


def _same_size(name: str, input, target) -> None:  # noqa: A002
    # PyTorch raises ValueError (binary_cross_entropy) or RuntimeError (cross_entropy's
    # probabilities) here: ShapeMismatchError is both
    if tuple(input.shape) != tuple(target.shape):
        raise call_error(
            ShapeMismatchError,
            f"{name}: Target size ({tuple(target.shape)}) must be the same as input size "
            f"({tuple(input.shape)})",
            name, input, target,
        )  # fmt: skip


def _lift(*values):
    return F.core.lift(*values)


# -- elementwise losses -------------------------------------------------------------------------


_ENUM = {"none": 0, "mean": 1, "sum": 2}  # PyTorch's reduction codes (`_saved_reduction`)


@autocast_op("fp32")
def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):  # noqa: A002
    """Squared error `(input - target)**2` (broadcasting), reduced; with `weight` (input's
    shape) each error is weighted and "mean" is the weighted mean, sum(w e) / sum(w).

    >>> import kiln as kn
    >>> kn.nn.functional.mse_loss(kn.tensor([1.0, 2.0]), kn.tensor([1.0, 4.0]))
    tensor(2.)
    >>> kn.nn.functional.mse_loss(kn.tensor([1.0, 2.0]), kn.tensor([0.0, 4.0]),
    ...                           weight=kn.tensor([3.0, 1.0]))
    tensor(1.7500)
    """
    input, target = _lift(input, target)  # noqa: A001
    warn_target_size(input, target)
    float_pair("mse_cpu", "mse_loss", input, target)
    reduction = _reduction(size_average, reduce, reduction)
    loss = _weighted(F.square(F.sub(input, target)), input, weight, reduction)
    saved = {
        "_saved_self": input,
        "_saved_target": target,
        "_saved_reduction": _ENUM.get(reduction),
    }
    return name_history(loss, "MseLossBackward0", input, target, saved=saved)


@autocast_op("fp32")
def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):  # noqa: A002
    """Absolute error `|input - target|` (broadcasting), reduced; `weight` as `mse_loss`'s.

    >>> import kiln as kn
    >>> kn.nn.functional.l1_loss(kn.tensor([1.0, 2.0]), kn.tensor([0.0, 5.0]), reduction="sum")
    tensor(4.)
    """
    input, target = _lift(input, target)  # noqa: A001
    warn_target_size(input, target)
    reduction = _reduction(size_average, reduce, reduction)
    return _weighted(F.abs(F.sub(input, target)), input, weight, reduction)


def _weighted(errors, input, weight, reduction: str):  # noqa: A002
    """`errors` reduced, each times its `weight` when given (PyTorch's weighted mse_loss and
    l1_loss: the mean is divided by the weights' sum)."""
    if weight is None:
        return _reduce(errors, reduction)
    if tuple(weight.shape) != tuple(input.shape):
        raise call_error(ShapeMismatchError, "Weights and input must have the same size.",
                         "loss", input, weight)  # fmt: skip
    errors = F.mul(errors, weight)
    if reduction == "mean":
        return F.div(F.sum(errors), F.sum(weight))
    return _reduce(errors, reduction)


@autocast_op("fp32")
def kl_div(
    input,  # noqa: A002
    target,
    size_average=None,
    reduce=None,
    reduction="mean",
    log_target: bool = False,
):
    """The KL divergence of `target` from log-probabilities `input`: `xlogy(t, t) - t * input`
    (0 where t = 0), or `exp(t) * (t - input)` with `log_target`; reductions as PyTorch's,
    with "batchmean" (the sum over the batch size) besides "mean", "sum" and "none".

    >>> import kiln as kn
    >>> logp = kn.tensor([[0.5, 0.5]]).log()
    >>> kn.nn.functional.kl_div(logp, kn.tensor([[0.0, 1.0]]), reduction="batchmean")
    tensor(0.6931)
    """
    if reduction == "batchmean" and size_average is None and reduce is None:
        mode = "batchmean"
    else:
        mode = _reduction(size_average, reduce, reduction)
    if mode == "mean":
        warnings.warn(
            "reduction: 'mean' divides the total loss by both the batch size and the support "
            "size.'batchmean' divides only by the batch size, and aligns with the KL div math "
            "definition.'mean' will be changed to behave the same as 'batchmean' in the next "
            "major release.",
            UserWarning,
            stacklevel=3,  # (the caller of the autocast wrapper)
        )
    input, target = _lift(input, target)  # noqa: A001
    if not (dt.is_differentiable(input.dtype) and dt.is_differentiable(target.dtype)):
        raise call_error(UsageError, "kl_div: Integral inputs not supported.", "kl_div",
                         input, target)  # fmt: skip
    if log_target:
        loss = F.mul(F.exp(target), F.sub(target, input))
    else:
        # PyTorch's formula, xlogy(t, t) - t * input: NaN for a negative target, and its
        # gradients (input's is -t everywhere; t's NaN at 0, from xlogy's)
        loss = F.sub(F.xlogy(target, target), F.mul(target, input))
    if mode == "batchmean":
        total = F.sum(loss)
        return F.div(total, input.shape[0]) if input.ndim else total
    return _reduce(loss, mode)


def _bce_target_grad(ct, p):
    return F.mul(ct, F.neg(F.log(F.div(p, F.sub(1.0, p)))))


GRAD_FORMULAS["bce_target"] = _bce_target_grad


@autocast_op("fp32")
def binary_cross_entropy(
    input,  # noqa: A002
    target,
    weight=None,
    size_average=None,
    reduce=None,
    reduction="mean",
):
    """`-(t * log(p) + (1 - t) * log(1 - p))` of probabilities `input`; each log is clamped
    at -100, as PyTorch's, so p = 0 or 1 gives a finite loss.

    >>> import kiln as kn
    >>> kn.nn.functional.binary_cross_entropy(kn.tensor([0.5, 1.0]), kn.tensor([1.0, 0.0]))
    tensor(50.3466)
    """
    reduction = _reduction(size_average, reduce, reduction)
    input, target = _lift(input, target)  # noqa: A001
    _same_size("binary_cross_entropy", input, target)
    if target.dtype != input.dtype:  # (PyTorch's kernel takes one dtype: RuntimeError)
        message = (f"Found dtype {dt.scalar_name(target.dtype)} but expected "
                   f"{dt.scalar_name(input.dtype)}")  # fmt: skip
        raise call_error(DTypeMismatchError, message, "binary_cross_entropy", input, target)
    if isinstance(input, Tensor):  # PyTorch's kernel checks it (NaN fails); a graph value
        data = input._data  # has no value to check: out of [0, 1] its loss is NaN there
        if not bool(((data >= 0) & (data <= 1)).all()):
            raise UsageError(
                "binary_cross_entropy: all elements of input should be between 0 and 1"
            )
    if isinstance(target, Tensor):
        data = target._data
        if not bool(((data >= 0) & (data <= 1)).all()):
            raise UsageError(
                "binary_cross_entropy: all elements of target should be between 0 and 1"
            )
    # the value (and target's gradient) from the clamped logs of p taken as a constant; p's
    # gradient PyTorch's, (p - t) / max(p (1 - p), 1e-12): finite at p = 0 and 1, where the
    # clamp's zero times log's infinite slope gave NaN (sigmoid(20) is 1.0 in float32)
    # PyTorch's kernel's terms and order, `(t - 1) * log1p(-p) - t * log(p)`, each step in
    # the input's dtype (log1p: log(1 - p) is 0 for a p below float32's epsilon)
    p = F.stop_gradient(input)
    log_p = F.clip(F.log(p), -100.0, None)
    log_q = F.clip(F.log1p(F.neg(p)), -100.0, None)
    t = F.stop_gradient(target)
    loss = F.sub(F.mul(F.sub(t, 1.0), log_q), F.mul(t, log_p))
    # target's gradient PyTorch's, -logit(p), of the logs unclamped: +-inf at p = 0 and 1
    loss = F.core.with_grad(loss, target, ("bce_target",), p)

    def slope(q):  # (PyTorch's p gradient)
        return F.div(F.sub(q, target), F.clip(F.mul(q, F.sub(1.0, q)), 1e-12, None))

    # + 0 with p's gradient `slope`; half its slope by p (whose second derivative is then
    # slope's by p) and all of it by target: the mixed derivative, once (target's formula
    # above reads p, a constant)
    half = F.mul(F.add(slope(input), slope(p)), 0.5)
    loss = F.add(loss, F.mul(F.sub(input, p), half))
    if weight is not None:  # the loss keeps its dtype, as PyTorch's (it scales it in place)
        weighted = F.mul(loss, weight)
        loss = weighted if weighted.dtype == loss.dtype else F.cast(weighted, loss.dtype)
    saved = {"_saved_self": input, "_saved_target": target, "_saved_weight": weight,
             "_saved_reduction": _ENUM.get(reduction)}  # fmt: skip
    loss = _reduce(loss, reduction)
    return name_history(loss, "BinaryCrossEntropyBackward0", input, target, saved=saved)


@autocast_op("fp32")
def binary_cross_entropy_with_logits(
    input,  # noqa: A002
    target,
    weight=None,
    size_average=None,
    reduce=None,
    reduction="mean",
    pos_weight=None,
):
    """Binary cross entropy of `sigmoid(input)`, computed from the logits without overflow:
    `(1 - t) * x + (1 + (pos_weight - 1) * t) * softplus(-x)`.

    >>> import kiln as kn
    >>> kn.nn.functional.binary_cross_entropy_with_logits(kn.tensor([0.0, 200.0]),
    ...                                                   kn.tensor([1.0, 0.0]))
    tensor(100.3466)
    """
    reduction = _reduction(size_average, reduce, reduction)
    input, target = _lift(input, target)  # noqa: A001
    _same_size("binary_cross_entropy_with_logits", input, target)
    float_result("binary_cross_entropy_with_logits", target)
    # PyTorch's terms, `(1 - t) * x - log_sigmoid(x) * lw`: log_sigmoid of a half-precision
    # x rounded to its dtype before the product (softplus(-x) step by step differs there)
    soft = (
        F.neg(logsigmoid(input))
        if input.dtype in (np.float16, dt.bfloat16)
        else (_softplus(F.neg(input)))
    )  # (the same values and gradient in float32/64, faster)
    if pos_weight is not None:
        soft = F.mul(soft, F.add(F.mul(F.sub(pos_weight, 1.0), target), 1.0))
    base = F.mul(F.sub(1.0, target), input)
    loss = F.add(base, soft)
    loss = loss if weight is None else F.mul(loss, weight)
    # PyTorch's loss has input and target's dtype: the weights scale it in place
    if loss.dtype != base.dtype:
        loss = F.cast(loss, base.dtype)
    saved = {"_saved_self": input, "_saved_target": target, "_saved_weight": weight,
             "_saved_pos_weight": pos_weight, "_saved_reduction": _ENUM.get(reduction)}  # fmt: skip
    loss = _reduce(loss, reduction)
    return name_history(loss, "BinaryCrossEntropyWithLogitsBackward0", input, target, saved=saved)


# -- class losses -------------------------------------------------------------------------------


def _class_dim(input, name: str) -> int:  # noqa: A002
    if input.ndim < 1:
        raise ArgumentError(f"{name}: expected an input of 1 or more dimensions, got 0")
    return 0 if input.ndim == 1 else 1


def _check_target(name, input, target, dim) -> None:  # noqa: A002
    want = tuple(d for i, d in enumerate(input.shape) if i != dim)
    if tuple(target.shape) != want:  # PyTorch's ValueError or RuntimeError: this is both
        raise call_error(
            ShapeMismatchError,
            f"{name}: expected target of size {want} for input of size {tuple(input.shape)}, "
            f"got {tuple(target.shape)}",
            name, input, target,
        )  # fmt: skip


@autocast_op("fp32")
def nll_loss(
    input,  # noqa: A002
    target,
    weight=None,
    size_average=None,
    ignore_index: int = -100,
    reduce=None,
    reduction="mean",
):
    """`-weight[t] * input[t]` of log-probabilities `input` (N, C, ...) or (C,) at integer
    classes `target` (N, ...) or (); targets equal to `ignore_index` count nothing, and
    "mean" divides by the summed weights of the other targets (PyTorch's weighted mean).

    >>> import kiln as kn
    >>> logp = kn.tensor([[-1.0, -2.0], [-3.0, -4.0]])
    >>> kn.nn.functional.nll_loss(logp, kn.tensor([1, 0])), kn.nn.functional.nll_loss(
    ...     logp, kn.tensor([1, -100]))
    (tensor(2.5000), tensor(2.))
    """
    reduction = _reduction(size_average, reduce, reduction)
    input, target = _lift(input, target)  # noqa: A001
    dim = _class_dim(input, "nll_loss")
    float_kernel("nll_loss_out_frame", "nll_loss", input, half=True)
    _check_target("nll_loss", input, target, dim)
    check_index_dtype("nll_loss", input, target)
    check_class_weight("nll_loss", input, weight, dim)
    return _nll(input, target, weight, ignore_index, reduction, dim)


def _nll(input, target, weight, ignore_index, reduction, dim, logits=False):  # noqa: A002
    """`_nll_loss`, its history named as PyTorch's: NllLossBackward0, NllLoss2DBackward0 for
    inputs of 3 or more dims (PyTorch's view of 3-d and 5-d losses, unreduced, is not)."""
    loss = _nll_loss(input, target, weight, ignore_index, reduction, dim, logits)
    saved = {"_saved_target": target, "_saved_weight": weight, "_saved_reduction":
             _ENUM.get(reduction), "_saved_ignore_index": ignore_index}  # fmt: skip
    name = "NllLossBackward0" if input.ndim <= 2 else "NllLoss2DBackward0"
    if input.ndim > 2 and input.ndim != 4 and reduction == "none":
        return loss
    if logits:  # (its node lists log_softmax's, a virtual node: kiln/eager/fused.py)
        args = (target, weight, ignore_index, reduction, dim)
        return fused.nll_of_logits(loss, name, input, dim, saved, lambda p: _nll_loss(p, *args))
    return name_history(loss, name, input, saved={"_saved_self": input, **saved})


def _nll_loss(input, target, weight, ignore_index, reduction, dim, logits=False):  # noqa: A002
    """nll_loss of checked arguments; with `logits`, of `log_softmax(input, dim)`, picked by
    one `log_softmax_take` kernel (whose gradient is one kernel too): the same NumPy calls
    as log_softmax then gather, the same bits (tests/test_cross_entropy_eager.py)."""
    if (
        logits and weight is None and reduction == "mean" and input._device == "cpu"
        and 0 < target._data.size and not (target._data == ignore_index).any()
    ):  # fmt: skip
        # NOTE: eagerly, no target ignored (each weighs 1): the weighted mean is the sum over
        # the count, the same bits in value and gradient as the general form below
        picked = F.squeeze(call("log_softmax_take", input, F.unsqueeze(target, dim), axis=dim), dim)
        return F.div(F.sum(F.neg(picked)), float(target._data.size))
    if target.dtype.kind == "u":  # (PyTorch's Byte class indices: as int64)
        target = F.cast(target, dt.int64)
    keep = F.not_equal(target, ignore_index)
    safe = F.where(keep, target, 0)
    if logits:
        picked = F.squeeze(call("log_softmax_take", input, F.unsqueeze(safe, dim), axis=dim), dim)
    else:
        picked = F.squeeze(F.gather(input, dim, F.unsqueeze(safe, dim)), dim)
    w = F.cast(keep, input.dtype)
    if weight is not None:
        w = F.mul(w, F.take(weight, safe, 0))  # (axis 0: any int target)
    loss = F.where(keep, F.neg(F.mul(picked, w)), 0.0)  # (no gradient reaches an ignored one)
    loss = _weighted_mean(F.sum(loss), w, keep) if reduction == "mean" else _reduce(loss, reduction)
    half = input.dtype in (np.float16, dt.bfloat16) and isinstance(input, Tensor)
    if half and reduction != "none" and input.ndim <= 2 and 0 not in tuple(input.shape):
        # eagerly, PyTorch's value (its sum in half precision) with kiln's gradient (the same)
        value = half_nll_value(input, target, weight, ignore_index, reduction)
        wide = F.cast(loss, np.float32)
        return F.cast(F.add(wide, F.stop_gradient(F.sub(np.float32(value), wide))), input.dtype)
    return loss


def _weighted_mean(total, weights, keep):
    """`total / sum(weights)`, PyTorch's mean of a class loss: NaN where every target is
    ignored (`keep` none), as PyTorch's, with a zero gradient there (not the NaN of 0 / 0,
    which an optimizer step would write into every parameter); targets kept whose weights
    sum to 0 give 0 / 0 and its NaN gradient, as PyTorch's."""
    empty = F.logical_not(F.any(keep))
    return F.where(empty, float("nan"), F.div(total, F.where(empty, 1.0, F.sum(weights))))


@autocast_op("fp32")
def cross_entropy(
    input,  # noqa: A002
    target,
    weight=None,
    size_average=None,
    ignore_index: int = -100,
    reduce=None,
    reduction="mean",
    label_smoothing: float = 0.0,
):
    """Cross entropy of logits `input` (N, C, ...) or (C,) against integer classes `target`
    (N, ...) (with `ignore_index`), or class probabilities of `input`'s shape; `weight` per
    class, `label_smoothing` mixes the target with the uniform distribution.

    >>> import kiln as kn
    >>> logits = kn.tensor([[0.0, 0.0], [0.0, 100.0]])
    >>> kn.nn.functional.cross_entropy(logits, kn.tensor([1, 0]), reduction="none")
    tensor([  0.6931, 100.0000])
    >>> kn.nn.functional.cross_entropy(logits, kn.tensor([[0.5, 0.5], [0.0, 1.0]]))
    tensor(0.3466)
    """
    if (
        weight is None and size_average is None and reduce is None and reduction == "mean"
        and label_smoothing == 0 and isinstance(input, Tensor) and isinstance(target, Tensor)
    ):  # fmt: skip
        # NOTE: eagerly on the CPU, (N, C) logits, no target ignored: one tape entry, as
        # PyTorch's NllLossBackward0 (the composite's bits: kiln/eager/fused.py), else None
        loss = fused.cross_entropy(input, target, ignore_index)
        if loss is not None:
            return loss
    reduction = _reduction(size_average, reduce, reduction)
    input, target = _lift(input, target)  # noqa: A001
    if label_smoothing > 1.0:  # (PyTorch's RuntimeError, from its kernel)
        raise UsageError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    label_smoothing = max(label_smoothing, 0.0)  # (PyTorch's: a negative one smooths nothing)
    probabilities = tuple(target.shape) == tuple(input.shape)  # (PyTorch's test)
    if probabilities and not dt.is_float(target.dtype):
        raise call_error(
            DTypeMismatchError,
            "Expected floating point type for target with class probabilities, got "
            f"{dt.scalar_name(target.dtype)}",
            "cross_entropy", input, target,
        )  # fmt: skip
    if probabilities and ignore_index >= 0:  # (PyTorch's: no class index to ignore there)
        message = "ignore_index is not supported for floating point target"
        raise call_error(UsageError, message, "cross_entropy", input, target)
    dim = _class_dim(input, "cross_entropy")  # (after the checks above, as PyTorch's)
    if not probabilities:
        _check_target("nll_loss", input, target, dim)  # (PyTorch's order: shapes, then dtypes)
        check_index_dtype("cross_entropy", input, target)
    check_class_weight("cross_entropy", input, weight, dim, same_dtype=not probabilities)
    if (
        label_smoothing == 0
        and type(input) is Tensor
        and input.dtype in (np.float32, np.float64)
        and not probabilities
    ):  # NOTE: eagerly, the common case: two kernels where log_softmax and gather are a dozen
        return _nll(input, target, weight, ignore_index, reduction, dim, logits=True)
    logp = log_softmax(input, dim)
    n_classes = input.shape[dim]
    if probabilities:
        return soft_cross_entropy(logp, target, weight, reduction, label_smoothing, dim)
    nll = nll_loss(logp, target, weight, None, ignore_index, None, reduction)
    if label_smoothing == 0:
        return nll
    kept = F.not_equal(target, ignore_index)
    keep = F.cast(kept, input.dtype)
    terms = logp if weight is None else F.mul(logp, _along(weight, input.ndim, dim))
    smooth = F.where(kept, F.neg(F.sum(terms, dim)), 0.0)  # (PyTorch's masked_fill)
    if reduction == "mean":
        safe = F.where(kept, target, 0)
        weights = keep if weight is None else F.mul(keep, F.take(weight, safe, 0))
        smooth = _weighted_mean(F.sum(smooth), weights, kept)
    else:
        smooth = _reduce(smooth, reduction)
    return F.add(F.mul(nll, 1.0 - label_smoothing), F.mul(smooth, label_smoothing / n_classes))


def _along(weight, ndim: int, dim: int):
    """A per-class (C,) weight shaped to broadcast along `dim` of an `ndim`-d input."""
    return F.reshape(weight, tuple(-1 if i == dim else 1 for i in range(ndim)))
