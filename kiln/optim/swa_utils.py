"""Weight averaging, as PyTorch's `torch.optim.swa_utils`: `AveragedModel` keeps a running
average of a model's weights (stochastic weight averaging, equal weights; or an exponential
moving average with `get_ema_avg_fn`), `SWALR` anneals each group's lr to a constant
`swa_lr`, and `update_bn` recomputes BatchNorm's running statistics for the averaged weights.

>>> import kiln as kn
>>> model = kn.nn.Linear(1, 1, bias=False)
>>> swa = kn.optim.swa_utils.AveragedModel(model)
>>> for w in (1.0, 2.0, 6.0):
...     with kn.no_grad():
...         _ = model.weight.fill_(w)
...     swa.update_parameters(model)
>>> swa.module.weight.item(), swa.n_averaged.item()  # (1 + 2 + 6) / 3
(3.0, 3)
"""

from __future__ import annotations

import copy
import itertools
import math

import numpy as np

from ..eager import no_grad
from ..errors import ArgumentError, DTypeError, UsageError
from ..nn.layers import _BatchNorm
from ..nn.module import Module
from .lr_scheduler.basic import LRScheduler, _per_group

__all__ = [
    "SWALR",
    "AveragedModel",
    "get_ema_avg_fn",
    "get_ema_multi_avg_fn",
    "get_swa_avg_fn",
    "get_swa_multi_avg_fn",
    "update_bn",
]


def _check_decay(decay) -> None:
    if decay < 0.0 or decay > 1.0:
        raise ArgumentError(
            f"Invalid decay value {decay} provided. Please provide a value in [0,1] range."
        )


def get_ema_avg_fn(decay=0.999):
    """`avg_fn(averaged, current, n)` of an exponential moving average:
    `decay * averaged + (1 - decay) * current`.

    >>> import kiln as kn
    >>> kn.optim.swa_utils.get_ema_avg_fn(0.5)(kn.tensor(2.0), kn.tensor(4.0), 1)
    tensor(3.)
    """
    _check_decay(decay)

    def ema_update(ema_param, current_param, num_averaged):
        with no_grad():
            return decay * ema_param + (1 - decay) * current_param

    return ema_update


def get_swa_avg_fn():
    """`avg_fn(averaged, current, n)` of an equal-weight average of `n + 1` models:
    `averaged + (current - averaged) / (n + 1)`.

    >>> import kiln as kn
    >>> kn.optim.swa_utils.get_swa_avg_fn()(kn.tensor(2.0), kn.tensor(5.0), 2)
    tensor(3.)
    """

    def swa_update(averaged_param, current_param, num_averaged):
        with no_grad():
            return averaged_param + (current_param - averaged_param) / (num_averaged + 1)

    return swa_update


def _is_inexact(t) -> bool:
    return t.dtype.kind in "fc"


def get_ema_multi_avg_fn(decay=0.999):
    """`multi_avg_fn(averaged_list, current_list, n)`: the EMA of `get_ema_avg_fn`, in place
    on every averaged tensor (floating ones by `lerp_` towards the current, weight `1 - decay`).

    >>> import kiln as kn
    >>> avg = [kn.tensor([2.0, 0.0])]
    >>> kn.optim.swa_utils.get_ema_multi_avg_fn(0.75)(avg, [kn.tensor([6.0, 4.0])], 1)
    >>> avg[0]
    tensor([3., 1.])
    """
    _check_decay(decay)

    def ema_update(ema_param_list, current_param_list, _):
        with no_grad():
            if _is_inexact(ema_param_list[0]):
                for p_ema, p_model in zip(ema_param_list, current_param_list, strict=True):
                    p_ema.lerp_(p_model, 1 - decay)
            else:
                for p_ema, p_model in zip(ema_param_list, current_param_list, strict=True):
                    p_ema.copy_(p_ema * decay + p_model * (1 - decay))

    return ema_update


def get_swa_multi_avg_fn():
    """`multi_avg_fn(averaged_list, current_list, n)`: the equal-weight average of
    `get_swa_avg_fn`, in place (by `lerp_` with weight `1 / (n + 1)`; integer tensors are
    refused, as PyTorch's refuses them).

    >>> import kiln as kn
    >>> avg = [kn.tensor([2.0, 0.0])]
    >>> kn.optim.swa_utils.get_swa_multi_avg_fn()(avg, [kn.tensor([5.0, 3.0])], 2)
    >>> avg[0]
    tensor([3., 1.])
    """

    def swa_update(averaged_param_list, current_param_list, num_averaged):
        with no_grad():
            if _is_inexact(averaged_param_list[0]):
                for p_avg, p_model in zip(averaged_param_list, current_param_list, strict=True):
                    p_avg.lerp_(p_model, 1 / (num_averaged + 1))
            else:  # PyTorch's in-place division of integers raises, as here
                raise DTypeError(
                    f"get_swa_multi_avg_fn: cannot average {averaged_param_list[0].dtype} "
                    "tensors in place (a true division into integers; PyTorch's integer "
                    "addcdiv raises too): use avg_fn=get_swa_avg_fn(), which truncates"
                )

    return swa_update


class AveragedModel(Module):
    """A copy of `model` whose weights `update_parameters(model)` averages with the model's
    current ones, as PyTorch's: the first call copies them; later calls apply `avg_fn` (one
    tensor at a time, returning the new average) or `multi_avg_fn` (lists, in place), by
    default an equal-weight average. `use_buffers`: buffers (BatchNorm's running
    statistics) are averaged too; otherwise they are copied from `model`. `n_averaged` (a
    buffer, so in `state_dict`) counts the models averaged. Calling it calls the copy.
    """

    def __init__(self, model: Module, device=None, avg_fn=None, multi_avg_fn=None,
                 use_buffers: bool = False):  # fmt: skip
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise UsageError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = copy.deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", np.array(0, np.int64))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def _pairs(self, model) -> list:
        """(averaged, current) tensors, detached: parameters (and buffers, `use_buffers`)."""
        if self.use_buffers:
            mine = itertools.chain(self.module.parameters(), self.module.buffers())
            theirs = itertools.chain(model.parameters(), model.buffers())
        else:
            mine, theirs = self.parameters(), model.parameters()
        return [(a.detach(), b.detach().to(a.device)) for a, b in zip(mine, theirs)]

    def update_parameters(self, model: Module) -> None:
        """Averages `model`'s current weights into this copy's (the first call copies)."""
        pairs = self._pairs(model)
        count = int(self.n_averaged.item())
        with no_grad():
            if count == 0:
                for averaged, current in pairs:
                    averaged.copy_(current)
            elif self.avg_fn is not None:
                n = self.n_averaged.detach().clone()
                for averaged, current in pairs:
                    averaged.copy_(self.avg_fn(averaged, current, n))
            else:
                self._multi_average(pairs)
            if not self.use_buffers:
                for mine, theirs in zip(self.module.buffers(), model.buffers(), strict=True):
                    mine.detach().copy_(theirs.detach().to(mine.device))
            self.n_averaged.add_(1)

    def _multi_average(self, pairs) -> None:
        """`multi_avg_fn`, or the equal-weight average, over groups of one device and
        dtype; without `multi_avg_fn`, one tensor at a time (PyTorch's way on the CPU)."""
        groups: dict = {}
        for averaged, current in pairs:
            groups.setdefault((str(averaged.device), averaged.dtype), []).append(
                (averaged, current)
            )
        n = self.n_averaged.detach().clone()
        for group in groups.values():
            mine, theirs = [a for a, _ in group], [c for _, c in group]
            if self.multi_avg_fn is not None:
                self.multi_avg_fn(mine, theirs, n)
            else:
                average = get_swa_avg_fn()
                for averaged, current in group:
                    averaged.copy_(average(averaged, current, n))


def update_bn(loader, model: Module, device=None) -> None:
    """One pass over `loader` in training mode to recompute every BatchNorm's running
    statistics (reset first, then a cumulative average: `momentum=None` for the pass), as
    PyTorch's. Each batch is a tensor, or a list or tuple whose first item is the input.

    >>> import kiln as kn
    >>> bn = kn.nn.BatchNorm1d(1)
    >>> kn.optim.swa_utils.update_bn([kn.tensor([[1.0], [3.0]]), kn.tensor([[5.0], [7.0]])], bn)
    >>> bn.running_mean, bn.momentum  # the mean of the batch means; momentum restored
    (Buffer containing:
    tensor([4.]), 0.1)
    """
    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    with no_grad():
        for batch in loader:
            if isinstance(batch, (list, tuple)):
                batch = batch[0]
            if device is not None:
                batch = batch.to(device)
            model(batch)
    for module, momentum in momenta.items():
        module.momentum = momentum
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneals each group's lr to `swa_lr` (one, or one per group) over `anneal_epochs`
    steps, cosine (`"cos"`) or linear, then keeps it there, as PyTorch's.

    >>> import kiln as kn
    >>> opt = kn.optim.SGD([kn.zeros(1, requires_grad=True)], lr=1.0)
    >>> sched = kn.optim.swa_utils.SWALR(opt, swa_lr=0.1, anneal_epochs=2,
    ...                                  anneal_strategy="linear")
    >>> lrs = []
    >>> for _ in range(3):
    ...     opt.step(); sched.step(); lrs.append(round(sched.get_last_lr()[0], 6))
    >>> lrs
    [0.55, 0.1, 0.1]
    """

    def __init__(self, optimizer, swa_lr, anneal_epochs=10, anneal_strategy="cos",
                 last_epoch: int = -1):  # fmt: skip
        swa_lrs = _per_group("swa_lr", optimizer, swa_lr)
        for value, group in zip(swa_lrs, optimizer.param_groups, strict=True):
            group["swa_lr"] = value
        if anneal_strategy not in ("cos", "linear"):
            raise ArgumentError(
                f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}"
            )
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ArgumentError(
                f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}"
            )
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t):
        return t

    @staticmethod
    def _cosine_anneal(t):
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr, swa_lr, alpha):
        """The lr the annealing started from, given the current one at fraction `alpha`."""
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def _set_anneal_func(self, anneal_strategy) -> None:
        self._anneal_strategy = anneal_strategy
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" else self._linear_anneal

    def get_lr(self) -> list:
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_t = max(0, min(1, (step - 1) / max(1, self.anneal_epochs)))
        prev_alpha = self.anneal_func(prev_t)
        groups = self.optimizer.param_groups
        prev_lrs = [self._get_initial_lr(g["lr"], g["swa_lr"], prev_alpha) for g in groups]
        t = max(0, min(1, step / max(1, self.anneal_epochs)))
        alpha = self.anneal_func(t)
        return [g["swa_lr"] * alpha + lr * (1 - alpha) for g, lr in zip(groups, prev_lrs)]

    def state_dict(self) -> dict:
        """Every attribute but the optimizer and the annealing function (PyTorch's)."""
        return {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict: dict) -> None:
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)
