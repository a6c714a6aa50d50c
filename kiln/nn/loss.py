"""Loss modules, as PyTorch's: each holds its options and calls its `kn.nn.functional` form.
A per-class `weight` (and `pos_weight`) is a buffer, as in PyTorch: in `state_dict`, not
trained."""

from __future__ import annotations

from . import functional as F
from .functional import _reduction
from .module import Module

__all__ = [
    "BCELoss",
    "BCEWithLogitsLoss",
    "CrossEntropyLoss",
    "HuberLoss",
    "KLDivLoss",
    "L1Loss",
    "MSELoss",
    "NLLLoss",
    "SmoothL1Loss",
]


class _Loss(Module):
    def __init__(self, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__()
        # (the legacy flags mapped now; a reduction is checked when the loss is called, as
        # PyTorch's modules check it)
        legacy = size_average is not None or reduce is not None
        self.reduction = _reduction(size_average, reduce, reduction) if legacy else reduction

    # NOTE: no extra_repr: PyTorch prints `MSELoss()` whatever the reduction


class _WeightedLoss(_Loss):
    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


class MSELoss(_Loss):
    """Mean squared error (`reduction` "mean", "sum" or "none").

    >>> import kiln as kn
    >>> kn.nn.MSELoss()(kn.tensor([1.0, 2.0]), kn.tensor([1.0, 4.0]))
    tensor(2.)
    """

    def forward(self, input, target):  # noqa: A002 (PyTorch's name)
        return F.mse_loss(input, target, reduction=self.reduction)


class L1Loss(_Loss):
    """Mean absolute error.

    >>> import kiln as kn
    >>> kn.nn.L1Loss(reduction="none")(kn.tensor([1.0, 2.0]), kn.tensor([0.0, 4.0]))
    tensor([1., 2.])
    """

    def forward(self, input, target):  # noqa: A002
        return F.l1_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    """Squared below `beta`, absolute above (see `kn.nn.functional.smooth_l1_loss`).

    >>> import kiln as kn
    >>> kn.nn.SmoothL1Loss(beta=1.0)(kn.tensor([0.5, 3.0]), kn.zeros(2))
    tensor(1.3125)
    """

    def __init__(self, size_average=None, reduce=None, reduction="mean", beta: float = 1.0):
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input, target):  # noqa: A002
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    """Squared below `delta`, linear above (see `kn.nn.functional.huber_loss`).

    >>> import kiln as kn
    >>> kn.nn.HuberLoss(delta=2.0)(kn.tensor([0.5, 3.0]), kn.zeros(2))
    tensor(2.0625)
    """

    def __init__(self, reduction: str = "mean", delta: float = 1.0):
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input, target):  # noqa: A002
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class BCELoss(_WeightedLoss):
    """Binary cross entropy of probabilities (see `kn.nn.functional.binary_cross_entropy`).

    >>> import kiln as kn
    >>> kn.nn.BCELoss()(kn.tensor([0.5, 0.5]), kn.tensor([1.0, 0.0]))
    tensor(0.6931)
    """

    def forward(self, input, target):  # noqa: A002
        return F.binary_cross_entropy(input, target, self.weight, reduction=self.reduction)


class BCEWithLogitsLoss(_WeightedLoss):
    """Binary cross entropy of `sigmoid(input)`, from the logits; `pos_weight` scales the
    positive term (a buffer, as `weight`).

    >>> import kiln as kn
    >>> kn.nn.BCEWithLogitsLoss()(kn.zeros(2), kn.tensor([1.0, 0.0]))
    tensor(0.6931)
    """

    def __init__(
        self, weight=None, size_average=None, reduce=None, reduction="mean", pos_weight=None
    ):
        super().__init__(weight, size_average, reduce, reduction)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input, target):  # noqa: A002
        return F.binary_cross_entropy_with_logits(
            input, target, self.weight, reduction=self.reduction, pos_weight=self.pos_weight
        )


class NLLLoss(_WeightedLoss):
    """Negative log-likelihood of log-probabilities at integer classes (classes on dim 1).

    >>> import kiln as kn
    >>> kn.nn.NLLLoss()(kn.tensor([[-1.0, -2.0], [-3.0, -4.0]]), kn.tensor([1, 0]))
    tensor(2.5000)
    """

    def __init__(
        self,
        weight=None,
        size_average=None,
        ignore_index: int = -100,
        reduce=None,
        reduction="mean",
    ):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input, target):  # noqa: A002
        return F.nll_loss(
            input, target, self.weight, ignore_index=self.ignore_index, reduction=self.reduction
        )


class CrossEntropyLoss(_WeightedLoss):
    """Cross entropy of logits (classes on dim 1) against integer classes or probabilities,
    with `weight`, `ignore_index` and `label_smoothing` as PyTorch's.

    >>> import kiln as kn
    >>> kn.nn.CrossEntropyLoss()(kn.zeros(3, 4), kn.tensor([0, 1, 2]))
    tensor(1.3863)
    """

    def __init__(
        self,
        weight=None,
        size_average=None,
        ignore_index: int = -100,
        reduce=None,
        reduction="mean",
        label_smoothing: float = 0.0,
    ):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index, self.label_smoothing = ignore_index, label_smoothing

    def forward(self, input, target):  # noqa: A002
        return F.cross_entropy(
            input,
            target,
            self.weight,
            ignore_index=self.ignore_index,
            reduction=self.reduction,
            label_smoothing=self.label_smoothing,
        )


class KLDivLoss(_Loss):
    """The KL divergence of targets from log-probabilities (see `kn.nn.functional.kl_div`);
    `reduction` also "batchmean", and `log_target` for log-probability targets.

    >>> import kiln as kn
    >>> kn.nn.KLDivLoss(reduction="batchmean")(kn.tensor([[0.5, 0.5]]).log(),
    ...                                        kn.tensor([[0.0, 1.0]]))
    tensor(0.6931)
    """

    def __init__(
        self, size_average=None, reduce=None, reduction: str = "mean", log_target: bool = False
    ):
        batchmean = reduction == "batchmean" and size_average is None and reduce is None
        super().__init__(size_average, reduce, "mean" if batchmean else reduction)
        if batchmean:
            self.reduction = "batchmean"
        self.log_target = log_target

    def forward(self, input, target):  # noqa: A002
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)
