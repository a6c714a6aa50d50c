"""More of PyTorch's modules: `FractionalMaxPool2d`/`3d`, `AdaptiveLogSoftmaxWithLoss`,
`SyncBatchNorm` (BatchNorm whose batch statistics span every process of kiln.distributed's
group) and the legacy `CrossMapLRN2d`, each with PyTorch's parameters, state_dict keys and
outputs.

>>> import kiln as kn
>>> kn.nn.FractionalMaxPool2d(2, output_size=3)(kn.ones(1, 1, 6, 6)).shape
kiln.Size([1, 1, 3, 3])
"""

from __future__ import annotations

import collections

import numpy as np

from .. import frontend as F
from ..errors import ArgumentError, ShapeMismatchError, UsageError, call_error
from ..frontend.custom_function import Function
from ..graph.core import Symbol
from .containers import ModuleList, Sequential
from .functional import log_softmax
from .functional_more import fractional_max_pool2d, fractional_max_pool3d
from .layers import Linear, _BatchNorm
from .module import Module

__all__ = ["AdaptiveLogSoftmaxWithLoss", "CrossMapLRN2d", "FractionalMaxPool2d",
           "FractionalMaxPool3d", "SyncBatchNorm"]  # fmt: skip


class _FractionalMaxPool(Module):
    dims = 2

    def __init__(self, kernel_size, output_size=None, output_ratio=None,
                 return_indices: bool = False, _random_samples=None):  # fmt: skip
        super().__init__()
        self.kernel_size, self.output_size = kernel_size, output_size
        self.output_ratio, self.return_indices = output_ratio, return_indices
        self._random_samples = _random_samples
        if output_size is None and output_ratio is None:
            raise ArgumentError(f"{type(self).__name__} requires specifying either an output "
                                "size, or a pooling ratio")  # fmt: skip
        if output_size is not None and output_ratio is not None:
            raise ArgumentError("only one of output_size and output_ratio may be specified")
        if output_ratio is not None:
            ratios = output_ratio if isinstance(output_ratio, (tuple, list)) else (output_ratio,)
            if not all(0 < r < 1 for r in ratios):
                raise ArgumentError(f"output_ratio must be between 0 and 1 (got {output_ratio})")

    def forward(self, input):  # noqa: A002
        pool = fractional_max_pool2d if self.dims == 2 else fractional_max_pool3d
        return pool(input, self.kernel_size, self.output_size, self.output_ratio,
                    self.return_indices, _random_samples=self._random_samples)  # fmt: skip


class FractionalMaxPool2d(_FractionalMaxPool):
    """Fractional max pooling of (N, C, H, W) or (C, H, W) inputs at pseudo-random window
    positions, as PyTorch's (`F.fractional_max_pool2d`; draws from kiln's generator).

    >>> import kiln as kn
    >>> kn.nn.FractionalMaxPool2d(3, output_ratio=0.5)
    FractionalMaxPool2d()
    """

    dims = 2


class FractionalMaxPool3d(_FractionalMaxPool):
    """Fractional max pooling of (N, C, T, H, W) or (C, T, H, W) inputs.

    >>> import kiln as kn
    >>> kn.nn.FractionalMaxPool3d(2, output_size=2)(kn.ones(1, 1, 4, 4, 4)).shape
    kiln.Size([1, 1, 2, 2, 2])
    """

    dims = 3


_ASMoutput = collections.namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    """The adaptive softmax of Grave et al. (PyTorch's): frequent classes (below
    `cutoffs[0]`) in a head that also scores each cluster of rarer classes, whose members a
    smaller tail projection scores. `forward(input, target)` returns `(output, loss)`, the
    target's log-probability per row and their negated mean; `log_prob(input)` gives every
    class's, `predict(input)` the likeliest class.

    Every cluster is scored for every row (masked where the target is elsewhere), so shapes
    stay static: it runs in graph mode and under `kn.compile` too.

    >>> import kiln as kn
    >>> asm = kn.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [4, 6])
    >>> out, loss = asm(kn.randn(3, 8), kn.tensor([0, 5, 9]))
    >>> tuple(out.shape), tuple(asm.log_prob(kn.randn(3, 8)).shape)
    ((3,), (3, 10))
    """

    def __init__(self, in_features: int, n_classes: int, cutoffs, div_value: float = 4.0,
                 head_bias: bool = False, device=None, dtype=None):  # fmt: skip
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ArgumentError("cutoffs should be a sequence of length larger than 0")
        ordered = cutoffs == sorted(set(cutoffs)) and all(int(c) == c for c in cutoffs)
        if not ordered or min(cutoffs) <= 0 or max(cutoffs) > n_classes - 1:
            raise ArgumentError("cutoffs should be a sequence of unique, positive integers "
                                "sorted in an increasing order, where each value is between 1 "
                                "and n_classes-1")  # fmt: skip
        self.in_features, self.n_classes = in_features, n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value, self.head_bias = div_value, head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        kw = {"device": device, "dtype": dtype}
        self.head = Linear(in_features, self.head_size, bias=head_bias, **kw)
        tails = []
        for i in range(self.n_clusters):
            hsz = int(in_features // (div_value ** (i + 1)))
            osz = self.cutoffs[i + 1] - self.cutoffs[i]
            tails.append(Sequential(Linear(in_features, hsz, bias=False, **kw),
                                    Linear(hsz, osz, bias=False, **kw)))  # fmt: skip
        self.tail = ModuleList(tails)

    def forward(self, input, target):  # noqa: A002
        x, t = F.core.lift(input, target)
        if x.ndim not in (1, 2) or t.ndim != x.ndim - 1:
            raise call_error(ShapeMismatchError, "AdaptiveLogSoftmaxWithLoss: expected input "
                             "(N, in_features) with target (N,), or (in_features,) with a 0-d "
                             "target", "AdaptiveLogSoftmaxWithLoss", x, t)  # fmt: skip
        unbatched = x.ndim == 1
        if unbatched:
            x, t = F.unsqueeze(x, 0), F.unsqueeze(t, 0)
        if x.shape[0] != t.shape[0]:
            why = "Input and target should have the same size in the batch dimension."
            raise call_error(ShapeMismatchError, why, "AdaptiveLogSoftmaxWithLoss", x, t)
        if not isinstance(t, Symbol):
            low, high = int(F.amin(t)), int(F.amax(t))
            if low < 0 or high >= self.n_classes:
                raise UsageError(f"Target values should be in [0, {self.n_classes - 1}], but "
                                 f"values in range [{low}, {high}] were found. ")  # fmt: skip
        head = log_softmax(self.head(x), 1)
        column = F.minimum(t, self.shortlist_size - 1)
        output = F.mul(F.cast(t, x.dtype), 0.0)
        for i in range(self.n_clusters):
            low, high = self.cutoffs[i], self.cutoffs[i + 1]
            inside = F.logical_and(F.greater_equal(t, low), F.less(t, high))
            local = F.clamp(F.sub(t, low), 0, high - low - 1)
            cluster = log_softmax(self.tail[i](x), 1)
            picked = F.squeeze(F.gather(cluster, 1, F.unsqueeze(local, 1)), 1)
            output = F.where(inside, picked, output)
            column = F.where(inside, self.shortlist_size + i, column)
        output = F.add(output, F.squeeze(F.gather(head, 1, F.unsqueeze(column, 1)), 1))
        loss = F.mean(F.neg(output))
        return _ASMoutput(F.squeeze(output, 0) if unbatched else output, loss)

    def _full_log_prob(self, x, head):
        parts = [head[:, : self.shortlist_size]]
        for i in range(self.n_clusters):
            cluster = log_softmax(self.tail[i](x), 1)
            parts.append(
                F.add(cluster, head[:, self.shortlist_size + i : self.shortlist_size + i + 1])
            )
        return F.cat(parts, 1)

    def log_prob(self, input):  # noqa: A002
        """The log-probabilities of every class: (N, n_classes), or (n_classes,)."""
        (x,) = F.core.lift(input)
        unbatched = x.ndim == 1
        x = F.unsqueeze(x, 0) if unbatched else x
        out = self._full_log_prob(x, log_softmax(self.head(x), 1))
        return F.squeeze(out, 0) if unbatched else out

    def predict(self, input):  # noqa: A002
        """The likeliest class of each row (the argmax of `log_prob`)."""
        return F.argmax(self.log_prob(input), -1)


def _sum_over_ranks(value, group):
    from .. import distributed

    if isinstance(value, Symbol):
        return distributed.all_reduce(value, group=group)
    total = value.detach().clone()
    distributed.all_reduce(total, group=group)
    return total


class _SumOverRanks(Function):
    """The sum of `value` over the group's ranks; its gradient is the cotangents' sum over
    the ranks (every rank's loss depends on every rank's statistics)."""

    @staticmethod
    def forward(ctx, value, group):
        ctx.group = group
        return _sum_over_ranks(value, group)

    @staticmethod
    def backward(ctx, grad):
        return _sum_over_ranks(grad, ctx.group), None


class SyncBatchNorm(_BatchNorm):
    """Batch normalization whose batch statistics are those of the whole batch across the
    processes of kiln.distributed's group (PyTorch's `SyncBatchNorm`): each process adds its
    per-channel count, sum and sum of squares with one all-reduce. In a single process (or
    eval mode) it is `BatchNorm`. Inputs are (N, C, ...) of at least 2 dims.

    >>> import kiln as kn
    >>> kn.nn.SyncBatchNorm(3)(kn.randn(4, 3, 2)).shape
    kiln.Size([4, 3, 2])
    """

    ndims = tuple(range(2, 9))

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, process_group=None,
                 device=None, dtype=None, *, bias: bool = True):  # fmt: skip
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device,
                         dtype, bias=bias)  # fmt: skip
        self.process_group = process_group

    def forward(self, x):
        from .. import distributed

        synced = (self.training and distributed.is_initialized()
                  and distributed.get_world_size(self.process_group) > 1)  # fmt: skip
        if not synced:
            return super().forward(x)
        if x.ndim < 2:
            raise ArgumentError(f"expected at least 2D input (got {x.ndim}D input)")
        axes = (0, *range(2, x.ndim))
        n_local = float(np.prod([x.shape[a] for a in axes]))
        count = F.core.lift(np.asarray([n_local], x.dtype), context=(x,))[0]
        local = F.cat([F.sum(x, axes), F.sum(F.mul(x, x), axes), count])
        totals = _SumOverRanks.apply(local, self.process_group)
        c = self.num_features
        n = totals[2 * c]
        mean = F.div(totals[:c], n)
        var = F.sub(F.div(totals[c : 2 * c], n), F.mul(mean, mean))
        y = F.batch_norm(x, mean, var, self.weight, self.bias, eps=self.eps)
        if self._tracks():
            self._record_updates(y, self._running_updates_n(mean, var, n))
        return y

    def _running_updates_n(self, mean, var, n) -> dict:
        unbiased = F.stop_gradient(F.mul(var, F.div(n, F.sub(n, 1.0))))
        count = self.num_batches_tracked + 1
        m = self.momentum
        if m is None:
            m = F.cast(1.0 / F.cast(count, np.float64), self.running_mean.dtype)
        return {"running_mean": self.running_mean * (1 - m) + F.stop_gradient(mean) * m,
                "running_var": self.running_var * (1 - m) + unbiased * m,
                "num_batches_tracked": count}  # fmt: skip

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """`module` with every BatchNorm*d in it (itself included) replaced by a
        SyncBatchNorm holding the same parameters and running statistics.

        >>> import kiln as kn
        >>> net = kn.nn.Sequential(kn.nn.Linear(2, 3), kn.nn.BatchNorm1d(3))
        >>> kn.nn.SyncBatchNorm.convert_sync_batchnorm(net)[1]
        SyncBatchNorm(3, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)
        """
        if isinstance(module, _BatchNorm) and not isinstance(module, SyncBatchNorm):
            out = cls(module.num_features, module.eps, module.momentum, module.affine,
                      module.track_running_stats, process_group,
                      bias=module.bias is not None or not module.affine)  # fmt: skip
            for name in ("weight", "bias"):
                if getattr(module, name, None) is not None:
                    setattr(out, name, module._parameters[name])
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                if name in module._buffers:
                    out._buffers[name] = module._buffers[name]
            out.train(module.training)
            return out
        for name, child in list(module._modules.items()):
            if child is not None:
                setattr(module, name, cls.convert_sync_batchnorm(child, process_group))
        return module


class _CrossMapLRN(Function):
    """PyTorch's legacy cross-map LRN: its forward's channel windows (the first channel
    always in after the first `size // 2 + 1`) and its backward's (a sliding window of
    `size`), each as a (C, C) 0/1 matrix."""

    @staticmethod
    def forward(ctx, x, forward_window, backward_window, size, alpha, beta, k):
        squares = F.mul(x, x)
        scale = F.add(F.mul(F.einsum("cj,njhw->nchw", forward_window, squares), alpha / size), k)
        out = F.mul(x, F.pow(scale, -beta))
        ctx.save_for_backward(x, scale, out)
        ctx.constants = (backward_window, size, alpha, beta)
        return out

    @staticmethod
    def backward(ctx, grad):
        x, scale, out = ctx.saved_tensors
        window, size, alpha, beta = ctx.constants
        ratio = F.div(F.mul(grad, out), scale)
        accum = F.einsum("cj,njhw->nchw", window, ratio)
        g = F.sub(F.mul(F.pow(scale, -beta), grad), F.mul(F.mul(x, accum), 2 * alpha * beta / size))
        return g, None, None, None, None, None, None


def _lrn_windows(channels: int, size: int):
    forward = np.zeros((channels, channels), np.float64)
    pre_pad = int((size - 1) / 2 + 1)
    for c in range(channels):
        top = min(c + pre_pad - 1, channels - 1)
        forward[c, : top + 1] = 1.0
        if c > pre_pad:
            forward[c, 1 : c - pre_pad + 1] = 0.0
    backward = np.zeros((channels, channels), np.float64)
    inverse_pre_pad = int(size - (size - 1) / 2)
    for c in range(channels):
        lo, hi = c - inverse_pre_pad, c + size - 1 - inverse_pre_pad
        backward[c, max(lo, 0) : max(min(hi, channels - 1) + 1, 0)] = 1.0
    return forward, backward


class CrossMapLRN2d(Module):
    """PyTorch's legacy `CrossMapLRN2d`: `x / (k + alpha / size * s)^beta` over (N, C, H, W)
    inputs, s a sum of squares over neighbouring channels, with PyTorch's windows and
    gradients (which are not the derivative of its forward near the first channel).

    >>> import kiln as kn
    >>> lrn = kn.nn.CrossMapLRN2d(1, alpha=1.0, beta=1.0, k=0.0)
    >>> lrn(kn.full((1, 2, 1, 1), 2.0)).tolist()  # channel 1's window holds channel 0 too
    [[[[0.5]], [[0.25]]]]
    """

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):  # noqa: A002
        (x,) = F.core.lift(input)
        if x.ndim != 4:
            raise call_error(ShapeMismatchError, f"CrossMapLRN2d: Expected input to be 4D, got "
                             f"{x.ndim}D instead.", "CrossMapLRN2d", x)  # fmt: skip
        fw, bw = _lrn_windows(int(x.shape[1]), self.size)
        fw, bw = (F.core.lift(w.astype(x.dtype), context=(x,))[0] for w in (fw, bw))
        return _CrossMapLRN.apply(x, fw, bw, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
