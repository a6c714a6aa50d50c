"""More of `torch.nn`'s modules, each holding its options and calling its functional form (or
the recurrent cells of kiln/nn/rnn.py): the padding layers, `Unflatten`, `Softmax2d`,
`ChannelShuffle`, `CosineSimilarity`, `PairwiseDistance`, `BatchNorm3d`, `InstanceNorm3d`,
`LocalResponseNorm`, `Fold`/`Unfold`, the upsampling layers, `EmbeddingBag`, the loss modules
kiln had only as functions, `ParameterList`/`ParameterDict` and the cells `RNNCell`,
`LSTMCell`, `GRUCell`. Parameters, their names and initialization are PyTorch's, so a torch
`state_dict` loads as it is.

>>> import kiln as kn
>>> kn.nn.ZeroPad2d(1)(kn.ones(1, 1, 1, 1)).shape
kiln.Size([1, 1, 3, 3])
"""

from __future__ import annotations

import math

from .. import dtypes as dt
from .. import frontend as Fr
from .. import init
from ..errors import ArgumentAssertionError, ArgumentError, ShapeError, UsageError
from ..ops.core import scalar
from . import functional as F
from .layers import _BatchNorm, _given_table, _InstanceNorm, _pretrained_table
from .loss import _Loss, _WeightedLoss
from .module import Module, Parameter
from .pooling import Upsample
from .rnn import _CELLS

__all__ = [
    "BatchNorm3d", "ChannelShuffle", "CircularPad1d", "CircularPad2d", "CircularPad3d",
    "ConstantPad1d", "ConstantPad2d", "ConstantPad3d", "CosineEmbeddingLoss",
    "CosineSimilarity", "CTCLoss", "EmbeddingBag", "Fold", "GaussianNLLLoss", "GRUCell",
    "HingeEmbeddingLoss", "InstanceNorm3d", "LocalResponseNorm", "LSTMCell",
    "MarginRankingLoss", "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d",
    "MultiLabelSoftMarginLoss", "MultiMarginLoss", "NLLLoss2d",
    "PairwiseDistance", "PoissonNLLLoss", "ReflectionPad1d",
    "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d",
    "ReplicationPad3d", "RNNCell", "RNNCellBase", "Softmax2d", "SoftMarginLoss",
    "TripletMarginLoss", "TripletMarginWithDistanceLoss", "Unflatten", "Unfold",
    "UpsamplingBilinear2d", "UpsamplingNearest2d", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d",
]  # fmt: skip


# -- padding ------------------------------------------------------------------------------


class _Pad(Module):
    mode = "constant"
    dims = 2

    def __init__(self, padding, value: float | None = None):
        super().__init__()
        if isinstance(padding, int):
            padding = (padding,) * (2 * self.dims)
        padding = tuple(int(p) for p in padding)
        if len(padding) != 2 * self.dims:
            raise ArgumentError(f"{type(self).__name__}: padding must be an int or a "
                                f"{2 * self.dims}-tuple, got {padding}")  # fmt: skip
        self.padding, self.value = padding, value

    def forward(self, input):  # noqa: A002
        if self.mode == "constant":
            return F.pad(input, self.padding, "constant", self.value or 0.0)
        return F.pad(input, self.padding, self.mode)

    def extra_repr(self) -> str:
        if self.mode == "constant" and type(self).__name__.startswith("Constant"):
            return f"padding={self.padding}, value={self.value}"
        return f"{self.padding}"


def _pad_class(name, mode, dims, constant=False, base=_Pad):
    def __init__(self, padding, value: float) -> None:
        _Pad.__init__(self, padding, value)

    def __init_zero__(self, padding) -> None:
        _Pad.__init__(self, padding, 0.0)

    namespace = {"mode": mode, "dims": dims, "__doc__": f"PyTorch's `{name}`: `F.pad` with "
                 f"mode {mode!r} over the last {dims} dim(s).",
                 "__init__": __init__ if constant else __init_zero__}  # fmt: skip
    return type(name, (base,), namespace)


ConstantPad1d = _pad_class("ConstantPad1d", "constant", 1, True)
ConstantPad2d = _pad_class("ConstantPad2d", "constant", 2, True)
ConstantPad3d = _pad_class("ConstantPad3d", "constant", 3, True)
ZeroPad1d = _pad_class(
    "ZeroPad1d", "constant", 1, base=ConstantPad1d
)  # a ConstantPad, as PyTorch's
ZeroPad2d = _pad_class("ZeroPad2d", "constant", 2, base=ConstantPad2d)
ZeroPad3d = _pad_class("ZeroPad3d", "constant", 3, base=ConstantPad3d)
ReflectionPad1d = _pad_class("ReflectionPad1d", "reflect", 1)
ReflectionPad2d = _pad_class("ReflectionPad2d", "reflect", 2)
ReflectionPad3d = _pad_class("ReflectionPad3d", "reflect", 3)
ReplicationPad1d = _pad_class("ReplicationPad1d", "replicate", 1)
ReplicationPad2d = _pad_class("ReplicationPad2d", "replicate", 2)
ReplicationPad3d = _pad_class("ReplicationPad3d", "replicate", 3)
CircularPad1d = _pad_class("CircularPad1d", "circular", 1)
CircularPad2d = _pad_class("CircularPad2d", "circular", 2)
CircularPad3d = _pad_class("CircularPad3d", "circular", 3)


# -- shapes and similarities --------------------------------------------------------------


class Unflatten(Module):
    """Splits dim `dim` into `unflattened_size`.

    >>> import kiln as kn
    >>> kn.nn.Unflatten(1, (2, 3))(kn.ones(4, 6)).shape
    kiln.Size([4, 2, 3])
    """

    def __init__(self, dim: int, unflattened_size):
        super().__init__()
        self.dim, self.unflattened_size = dim, tuple(unflattened_size)

    def forward(self, input):  # noqa: A002
        return Fr.unflatten(input, self.dim, self.unflattened_size)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


class Softmax2d(Module):
    """Softmax over the channels of (N, C, H, W) or (C, H, W) inputs."""

    def forward(self, input):  # noqa: A002
        if input.ndim not in (3, 4):
            raise ArgumentError(f"Softmax2d: expected input to be 3D or 4D, got {input.ndim}D "
                                "instead")  # fmt: skip
        return F.softmax(input, -3)


class ChannelShuffle(Module):
    """Shuffles the channels of (N, C, ...) inputs in `groups` groups."""

    def __init__(self, groups: int):
        super().__init__()
        self.groups = groups

    def forward(self, input):  # noqa: A002
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self) -> str:
        return f"groups={self.groups}"


class CosineSimilarity(Module):
    """`F.cosine_similarity(x1, x2, dim, eps)`."""

    def __init__(self, dim: int = 1, eps: float = 1e-8):
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1, x2):
        return F.cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    """`F.pairwise_distance(x1, x2, p, eps, keepdim)`."""

    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False):
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1, x2):
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


# -- normalization ------------------------------------------------------------------------


class BatchNorm3d(_BatchNorm):
    """Batch normalization over (N, C, D, H, W) inputs, as PyTorch's `BatchNorm3d`."""

    ndims: tuple = (5,)


class InstanceNorm3d(_InstanceNorm):
    """Instance normalization over (N, C, D, H, W) or (C, D, H, W) inputs."""

    ndims = (4, 5)


class LocalResponseNorm(Module):
    """`F.local_response_norm(input, size, alpha, beta, k)` across channels."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):  # noqa: A002
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


# -- sliding blocks and resampling --------------------------------------------------------


class Fold(Module):
    """`F.fold`: sums sliding local blocks (N, C·∏kernel, L) into (N, C, *output_size)."""

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, input):  # noqa: A002
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding,
                      self.stride)  # fmt: skip

    def extra_repr(self) -> str:
        return (
            f"output_size={self.output_size}, kernel_size={self.kernel_size}, "
            f"dilation={self.dilation}, padding={self.padding}, stride={self.stride}"
        )


class Unfold(Module):
    """`F.unfold`: the sliding local blocks of (N, C, H, W) as (N, C·∏kernel, L)."""

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size, self.dilation, self.padding, self.stride = (
            kernel_size, dilation, padding, stride)  # fmt: skip

    def forward(self, input):  # noqa: A002
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return (
            f"kernel_size={self.kernel_size}, dilation={self.dilation}, "
            f"padding={self.padding}, stride={self.stride}"
        )


class UpsamplingNearest2d(Upsample):
    """Nearest-neighbour upsampling by `size` or `scale_factor` (PyTorch's deprecated form
    of `Upsample(mode="nearest")`, an Upsample as there)."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """Bilinear upsampling with `align_corners=True` (PyTorch's deprecated form)."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)


class EmbeddingBag(Module):
    """Sums, means or maxima of bags of embeddings (`F.embedding_bag`), rows drawn from
    N(0, 1) as PyTorch's."""

    def __init__(self, num_embeddings: int, embedding_dim: int, max_norm=None,
                 norm_type: float = 2.0, scale_grad_by_freq: bool = False, mode: str = "mean",
                 sparse: bool = False, _weight=None, include_last_offset: bool = False,
                 padding_idx=None, device=None, dtype=None):  # fmt: skip
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.max_norm, self.norm_type, self.mode = max_norm, norm_type, mode
        self.scale_grad_by_freq, self.sparse = scale_grad_by_freq, sparse
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:  # PyTorch asserts it
                raise ArgumentAssertionError(
                    f"EmbeddingBag: padding_idx must be within num_embeddings "
                    f"({num_embeddings}), got {padding_idx}"
                )
            padding_idx %= num_embeddings  # PyTorch keeps the index counted from the front
        self.include_last_offset, self.padding_idx = include_last_offset, padding_idx
        if _weight is None:
            weight = init.normal(0.0, 1.0)((num_embeddings, embedding_dim),
                                           dt.as_dtype(dtype or dt.DEFAULT_FLOAT))  # fmt: skip
            if padding_idx is not None:
                weight[padding_idx] = 0
        else:
            weight = _given_table(_weight, num_embeddings, embedding_dim, dtype)
        self.weight = Parameter(weight)

    @classmethod
    def from_pretrained(cls, embeddings, freeze: bool = True, max_norm=None,
                        norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                        mode: str = "mean", sparse: bool = False,
                        include_last_offset: bool = False, padding_idx=None):  # fmt: skip
        """An EmbeddingBag whose table is a copy of the 2-D `embeddings`, frozen unless
        `freeze=False`.

        >>> import kiln as kn
        >>> bag = kn.nn.EmbeddingBag.from_pretrained(kn.tensor([[1.0, 2.0], [3.0, 4.0]]))
        >>> bag(kn.tensor([[0, 1]])).tolist(), bag.weight.requires_grad
        ([[2.0, 3.0]], False)
        """
        table = _pretrained_table(embeddings, "EmbeddingBag.from_pretrained")
        bag = cls(table.shape[0], table.shape[1], max_norm, norm_type, scale_grad_by_freq,
                  mode, sparse, table, include_last_offset, padding_idx)  # fmt: skip
        bag.weight.requires_grad = not freeze
        return bag

    def reset_parameters(self) -> None:
        """Redraws the table from N(0, 1), the `padding_idx` row zeros, as PyTorch's.

        >>> import kiln as kn
        >>> bag = kn.nn.EmbeddingBag(3, 2, padding_idx=0)
        >>> bag.reset_parameters()
        >>> bag.weight[0].tolist()
        [0.0, 0.0]
        """
        from .layers import Embedding

        Embedding.reset_parameters(self)

    def _fill_padding_idx_with_zero(self) -> None:
        from .layers import Embedding

        Embedding._fill_padding_idx_with_zero(self)

    def forward(self, input, offsets=None, per_sample_weights=None):  # noqa: A002
        return F.embedding_bag(input, self.weight, offsets, self.max_norm, self.norm_type,
                               self.scale_grad_by_freq, self.mode, self.sparse,
                               per_sample_weights, self.include_last_offset,
                               self.padding_idx)  # fmt: skip

    def extra_repr(self) -> str:  # PyTorch's
        text = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.max_norm is not None:
            text += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            text += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq:
            text += f", scale_grad_by_freq={self.scale_grad_by_freq}"
        text += f", mode={self.mode!r}"
        return text + (f", padding_idx={self.padding_idx}" if self.padding_idx is not None
                       else "")  # fmt: skip


# -- losses -------------------------------------------------------------------------------


class MarginRankingLoss(_Loss):
    """`F.margin_ranking_loss(input1, input2, target, margin)`."""

    def __init__(self, margin: float = 0.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1, input2, target):
        return F.margin_ranking_loss(input1, input2, target, self.margin,
                                     reduction=self.reduction)  # fmt: skip


class CosineEmbeddingLoss(_Loss):
    """`F.cosine_embedding_loss(input1, input2, target, margin)`."""

    def __init__(self, margin: float = 0.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1, input2, target):
        return F.cosine_embedding_loss(input1, input2, target, self.margin,
                                       reduction=self.reduction)  # fmt: skip


class HingeEmbeddingLoss(_Loss):
    """`F.hinge_embedding_loss(input, target, margin)`."""

    def __init__(self, margin: float = 1.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input, target):  # noqa: A002
        return F.hinge_embedding_loss(input, target, self.margin, reduction=self.reduction)


class SoftMarginLoss(_Loss):
    """`F.soft_margin_loss(input, target)`: mean of log(1 + exp(-y x))."""

    def forward(self, input, target):  # noqa: A002
        return F.soft_margin_loss(input, target, reduction=self.reduction)


class MultiLabelSoftMarginLoss(_WeightedLoss):
    """`F.multilabel_soft_margin_loss(input, target, weight)`."""

    def forward(self, input, target):  # noqa: A002
        return F.multilabel_soft_margin_loss(input, target, self.weight,
                                             reduction=self.reduction)  # fmt: skip


class MultiMarginLoss(_WeightedLoss):
    """`F.multi_margin_loss(input, target, p, margin, weight)`."""

    def __init__(self, p: int = 1, margin: float = 1.0, weight=None, size_average=None,
                 reduce=None, reduction: str = "mean"):  # fmt: skip
        super().__init__(weight, size_average, reduce, reduction)
        if p not in (1, 2):
            raise ArgumentError("only p == 1 and p == 2 supported")
        self.p, self.margin = p, margin

    def forward(self, input, target):  # noqa: A002
        return F.multi_margin_loss(input, target, self.p, self.margin, self.weight,
                                   reduction=self.reduction)  # fmt: skip


class PoissonNLLLoss(_Loss):
    """`F.poisson_nll_loss(input, target, log_input, full, eps)`."""

    def __init__(self, log_input: bool = True, full: bool = False, size_average=None,
                 eps: float = 1e-8, reduce=None, reduction: str = "mean"):  # fmt: skip
        super().__init__(size_average, reduce, reduction)
        self.log_input, self.full, self.eps = log_input, full, eps

    def forward(self, log_input, target):
        return F.poisson_nll_loss(log_input, target, self.log_input, self.full,
                                  eps=self.eps, reduction=self.reduction)  # fmt: skip


class GaussianNLLLoss(_Loss):
    """`F.gaussian_nll_loss(input, target, var, full, eps)`."""

    def __init__(self, *, full: bool = False, eps: float = 1e-6, reduction: str = "mean"):
        super().__init__(None, None, reduction)
        self.full, self.eps = full, eps

    def forward(self, input, target, var):  # noqa: A002
        return F.gaussian_nll_loss(input, target, var, self.full, self.eps, self.reduction)


class TripletMarginLoss(_Loss):
    """`F.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap)`."""

    def __init__(self, margin: float = 1.0, p: float = 2.0, eps: float = 1e-6,
                 swap: bool = False, size_average=None, reduce=None, reduction="mean"):  # fmt: skip
        super().__init__(size_average, reduce, reduction)
        if margin <= 0:
            raise ArgumentError(f"TripletMarginLoss: expected margin to be greater than 0, "
                                f"got {margin} instead")  # fmt: skip
        self.margin, self.p, self.eps, self.swap = margin, p, eps, swap

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_loss(anchor, positive, negative, self.margin, self.p,
                                     self.eps, self.swap, reduction=self.reduction)  # fmt: skip


class TripletMarginWithDistanceLoss(_Loss):
    """The triplet loss `max(d(a, p) - d(a, n) + margin, 0)` with a distance function
    (default: `PairwiseDistance()`); `swap` takes the smaller of d(a, n) and d(p, n)."""

    def __init__(self, *, distance_function=None, margin: float = 1.0, swap: bool = False,
                 reduction: str = "mean"):  # fmt: skip
        super().__init__(None, None, reduction)
        if margin <= 0:
            raise ArgumentError(f"TripletMarginWithDistanceLoss: expected margin to be "
                                f"greater than 0, got {margin} instead")  # fmt: skip
        # a child module by default, as PyTorch's (its repr shows it)
        self.distance_function = distance_function or PairwiseDistance()
        self.margin, self.swap = margin, swap

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_with_distance_loss(
            anchor, positive, negative, distance_function=self.distance_function,
            margin=self.margin, swap=self.swap, reduction=self.reduction)  # fmt: skip


class _MaxUnpool(Module):
    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        n = int(type(self).__name__[-2])  # MaxUnpool2d: 2; tuples of n, as PyTorch keeps them
        stride = kernel_size if stride is None else stride
        self.kernel_size, self.stride, self.padding = (
            tuple(v) if isinstance(v, (tuple, list)) else (v,) * n
            for v in (kernel_size, stride, padding)
        )

    def forward(self, input, indices, output_size=None):  # noqa: A002
        return type(self).fn(input, indices, self.kernel_size, self.stride, self.padding,
                             output_size)  # fmt: skip

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpool):
    """`F.max_unpool1d`: the values of a `MaxPool1d(return_indices=True)` put back."""

    fn = staticmethod(F.max_unpool1d)


class MaxUnpool2d(_MaxUnpool):
    """`F.max_unpool2d`: the values of a `MaxPool2d(return_indices=True)` put back."""

    fn = staticmethod(F.max_unpool2d)


class MaxUnpool3d(_MaxUnpool):
    """`F.max_unpool3d`: the values of a `MaxPool3d(return_indices=True)` put back."""

    fn = staticmethod(F.max_unpool3d)


class CTCLoss(_Loss):
    """`F.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, zero_infinity)`."""

    def __init__(self, blank: int = 0, reduction: str = "mean", zero_infinity: bool = False):
        super().__init__(None, None, reduction)
        self.blank, self.zero_infinity = blank, zero_infinity

    def forward(self, log_probs, targets, input_lengths, target_lengths):
        return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, self.blank,
                          self.reduction, self.zero_infinity)  # fmt: skip


def NLLLoss2d(*args, **kwargs):  # noqa: N802 (PyTorch's deprecated class name)
    """PyTorch's deprecated `NLLLoss2d`: an `NLLLoss`."""
    from .loss import NLLLoss

    return NLLLoss(*args, **kwargs)


# -- recurrent cells ------------------------------------------------------------------------


class RNNCellBase(Module):
    """One step of a recurrent layer: PyTorch's `weight_ih` (gates * hidden, input),
    `weight_hh`, `bias_ih`, `bias_hh`, drawn from U(-1/sqrt(hidden), 1/sqrt(hidden))."""

    mode = "RNN_TANH"

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int,
                 device=None, dtype=None):  # fmt: skip
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        dtype = dt.as_dtype(dtype or dt.DEFAULT_FLOAT)
        bound = 1.0 / math.sqrt(hidden_size) if hidden_size > 0 else 0.0  # (0: no weights)
        draw = init.uniform(-bound, bound)
        gates = num_chunks * hidden_size
        self.weight_ih = Parameter(draw((gates, input_size), dtype))
        self.weight_hh = Parameter(draw((gates, hidden_size), dtype))
        self.bias_ih = Parameter(draw((gates,), dtype)) if bias else None
        self.bias_hh = Parameter(draw((gates,), dtype)) if bias else None

    def reset_parameters(self) -> None:
        """Redraws the weights and biases from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))
        in place, as PyTorch's.

        >>> import kiln as kn
        >>> cell = kn.nn.LSTMCell(2, 4)
        >>> cell.reset_parameters()
        >>> bool(cell.weight_ih.abs().max() <= 0.5)
        True
        """
        from . import init as nn_init  # NOTE: lazy: kiln.nn.init imports this package's parts

        bound = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0.0
        for p in self.parameters():
            nn_init.uniform_(p, -bound, bound)

    def extra_repr(self) -> str:
        text = f"{self.input_size}, {self.hidden_size}"
        if not self.bias:
            text += ", bias=False"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            text += f", nonlinearity={self.nonlinearity}"  # unquoted, as PyTorch prints
        return text

    def _check_sizes(self, x, states) -> None:
        """PyTorch's checks of the input's feature size and of each state's (N, hidden_size):
        kiln would otherwise broadcast a wrong one."""
        if isinstance(x.shape[1], int) and x.shape[1] != self.input_size:
            raise ShapeError(f"{type(self).__name__}: input has inconsistent input_size: got "
                             f"{x.shape[1]} expected {self.input_size}")  # fmt: skip
        want = (x.shape[0], self.hidden_size)
        for k, s in enumerate(states):
            got = tuple(s.shape)
            if all(isinstance(d, int) for d in (*want, *got)) and got != want:
                raise ShapeError(f"{type(self).__name__}: hidden{k} has shape {list(got)}, "
                                 f"expected {list(want)} (batch, hidden_size)")  # fmt: skip

    def _step(self, input, states):  # noqa: A002
        if self.mode not in _CELLS:
            raise UsageError(f"Unknown nonlinearity: {self.nonlinearity}")
        if input.ndim not in (1, 2):
            raise ArgumentError(f"{type(self).__name__}: Expected input to be 1D or 2D, got "
                                f"{input.ndim}D instead")  # fmt: skip
        batched = input.ndim == 2
        x = input if batched else Fr.unsqueeze(input, 0)
        n = x.shape[0]
        if states is None:
            zero = Fr.broadcast_to(scalar(0, x), (n, self.hidden_size))
            states = (zero,) * (2 if self.mode == "LSTM" else 1)
        else:
            for s in states:
                if s.ndim not in (1, 2):
                    raise ArgumentError(f"{type(self).__name__}: Expected hidden to be 1D or "
                                        f"2D, got {s.ndim}D instead")  # fmt: skip
            if not batched:
                states = tuple(Fr.unsqueeze(s, 0) for s in states)
        self._check_sizes(x, states)
        xw = Fr.matmul(x, Fr.t(self.weight_ih))
        if self.bias_ih is not None:
            xw = xw + self.bias_ih
        new = _CELLS[self.mode](xw, states, Fr.t(self.weight_hh), self.bias_hh)
        if not batched:
            new = tuple(Fr.squeeze(s, 0) for s in new)
        return new


class RNNCell(RNNCellBase):
    """An Elman cell: `h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)` (or relu).

    >>> import kiln as kn
    >>> kn.nn.RNNCell(3, 4)(kn.ones(2, 3)).shape
    kiln.Size([2, 4])
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 nonlinearity: str = "tanh", device=None, dtype=None):  # fmt: skip
        # (PyTorch builds a cell of any other nonlinearity and refuses it when run)
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        self.nonlinearity = nonlinearity
        self.mode = {"tanh": "RNN_TANH", "relu": "RNN_RELU"}.get(nonlinearity, nonlinearity)

    def forward(self, input, hx=None):  # noqa: A002
        return self._step(input, None if hx is None else (hx,))[0]


class LSTMCell(RNNCellBase):
    """An LSTM cell (gates input, forget, cell, output): `(h', c') = cell(x, (h, c))`."""

    mode = "LSTM"

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None,
                 dtype=None):  # fmt: skip
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input, hx=None):  # noqa: A002
        if hx is not None and len(hx) != 2:
            raise UsageError(f"LSTMCell: lstm_cell expects two hidden states (h, c), got {len(hx)}")
        return self._step(input, None if hx is None else tuple(hx))


class GRUCell(RNNCellBase):
    """A GRU cell (gates reset, update, new): `h' = cell(x, h)`."""

    mode = "GRU"

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None,
                 dtype=None):  # fmt: skip
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input, hx=None):  # noqa: A002
        return self._step(input, None if hx is None else (hx,))[0]
