"""Schedulers that chain others, follow a metric, or cycle: SequentialLR, ReduceLROnPlateau,
OneCycleLR (PyTorch's)."""

from __future__ import annotations

import math
import warnings
from bisect import bisect_right

from ...errors import ArgumentError, UsageError
from .basic import (
    _EPOCH_DEPRECATED,
    LRScheduler,
    _check_optimizer,
    _cycles_beta1,
    _per_group,
    set_group_value,
)

__all__ = ["OneCycleLR", "ReduceLROnPlateau", "SequentialLR"]


class Composite:
    """The state of a scheduler made of schedulers (`_schedulers`): its own, and each one's,
    as PyTorch's SequentialLR and ChainedScheduler save them."""

    def state_dict(self) -> dict:
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "_schedulers")}
        state["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return state

    def load_state_dict(self, state_dict: dict) -> None:
        state = dict(state_dict)
        saved = state.pop("_schedulers")
        self.__dict__.update(state)
        for scheduler, s in zip(self._schedulers, saved):
            scheduler.load_state_dict(s)


class SequentialLR(Composite, LRScheduler):
    """Runs `schedulers` one after another, switching at the `milestones` epochs (each
    scheduler starts there from its epoch 0).

    >>> import kiln as kn
    >>> from kiln.optim import lr_scheduler as S
    >>> opt = kn.optim.SGD([kn.zeros(1, requires_grad=True)], lr=1.0)
    >>> warmup = S.LinearLR(opt, start_factor=0.5, total_iters=2)
    >>> decay = S.ExponentialLR(opt, gamma=0.5)
    >>> sched = S.SequentialLR(opt, [warmup, decay], milestones=[2])
    >>> lrs = []
    >>> for _ in range(5):
    ...     lrs.append(sched.get_last_lr()[0]); opt.step(); sched.step()
    >>> lrs
    [0.5, 0.75, 1.0, 0.5, 0.25]
    """

    def __init__(self, optimizer, schedulers, milestones, last_epoch: int = -1):
        _check_optimizer(optimizer)
        name = type(self).__name__
        if len(schedulers) < 1:
            raise ArgumentError(f"{name} expects at least one scheduler, but got no scheduler.")
        for i, scheduler in enumerate(schedulers):
            if isinstance(scheduler, ReduceLROnPlateau):
                raise ArgumentError(
                    f"{name} does not support `ReduceLROnPlateau` scheduler as it requires "
                    "additional kwargs to be specified when calling `step`, but got one at "
                    f"index {i} in the given schedulers sequence."
                )
            if getattr(scheduler, "optimizer", None) is not optimizer:
                raise ArgumentError(
                    f"{name} expects all schedulers to belong to the same optimizer, but got "
                    f"scheduler {type(scheduler).__name__} at index {i} with another one"
                )
        if len(milestones) != len(schedulers) - 1:
            raise ArgumentError(
                "Sequential Schedulers expects number of schedulers provided to be one more "
                f"than the number of milestone points, but got number of schedulers "
                f"{len(schedulers)} and the number of milestones to be equal to {len(milestones)}"
            )
        self._schedulers = list(schedulers)
        self._milestones = list(milestones)
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        # The schedulers each took their initial step when made: undo those, start the first.
        for group in optimizer.param_groups:
            set_group_value(group, "lr", group["initial_lr"])
        self._undo(self)
        first = self._schedulers[bisect_right(self._milestones, 0)]
        first._initial_step()
        self._last_lr = first.get_last_lr()

    def _undo(self, scheduler) -> None:
        for s in getattr(scheduler, "_schedulers", None) or ():
            if hasattr(s, "_schedulers"):
                self._undo(s)
            elif hasattr(s, "last_epoch"):
                s.last_epoch -= 1

    def step(self) -> None:  # type: ignore[override]
        self.last_epoch += 1
        index = bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[index]
        if index > 0 and self._milestones[index - 1] == self.last_epoch:
            scheduler._update_lr(0)
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()


class ReduceLROnPlateau(LRScheduler):
    """Multiplies the lr by `factor` when the metric given to `step(metric)` has not
    improved for `patience` epochs (by `threshold`, relative or absolute), then waits
    `cooldown` epochs; never below `min_lr`.

    >>> import kiln as kn
    >>> opt = kn.optim.SGD([kn.zeros(1, requires_grad=True)], lr=1.0)
    >>> sched = kn.optim.lr_scheduler.ReduceLROnPlateau(opt, patience=1, factor=0.5)
    >>> for loss in [3.0, 2.0, 2.0, 2.0, 2.0, 2.0]:
    ...     sched.step(loss)
    >>> sched.get_last_lr()
    [0.25]
    """

    def __init__(
        self,
        optimizer,
        mode: str = "min",
        factor: float = 0.1,
        patience: int = 10,
        threshold: float = 1e-4,
        threshold_mode: str = "rel",
        cooldown: int = 0,
        min_lr=0,
        eps: float = 1e-8,
    ):
        if factor >= 1.0:
            raise ArgumentError("Factor should be < 1.0.")
        _check_optimizer(optimizer)
        self.factor = factor
        self.optimizer = optimizer
        if isinstance(min_lr, (list, tuple)):
            if len(min_lr) != len(optimizer.param_groups):
                raise ArgumentError(
                    f"expected {len(optimizer.param_groups)} min_lrs, got {len(min_lr)}"
                )
            self.default_min_lr = None
            self.min_lrs = list(min_lr)
        else:
            self.default_min_lr = min_lr
            self.min_lrs = [min_lr] * len(optimizer.param_groups)
        self.patience = patience
        self.cooldown = cooldown
        self.eps = eps
        self.last_epoch = 0
        self._last_lr = self._group_lrs()
        self._init_is_better(mode, threshold, threshold_mode)
        self.best = self.mode_worse
        self.cooldown_counter = 0
        self.num_bad_epochs = 0

    def _init_is_better(self, mode: str, threshold: float, threshold_mode: str) -> None:
        if mode not in ("min", "max"):
            raise ArgumentError(f"mode {mode} is unknown!")
        if threshold_mode not in ("rel", "abs"):
            raise ArgumentError(f"threshold mode {threshold_mode} is unknown!")
        self.mode_worse = math.inf if mode == "min" else -math.inf
        self.mode, self.threshold, self.threshold_mode = mode, threshold, threshold_mode

    def _is_better(self, a: float, best: float) -> bool:
        if self.threshold_mode == "rel":
            scale = 1.0 - self.threshold if self.mode == "min" else 1.0 + self.threshold
            return a < best * scale if self.mode == "min" else a > best * scale
        return a < best - self.threshold if self.mode == "min" else a > best + self.threshold

    @property
    def in_cooldown(self) -> bool:
        return self.cooldown_counter > 0

    def step(self, metrics, epoch=None) -> None:  # type: ignore[override]
        """One epoch's `metrics` (a number or a one-element tensor): reduces the lr after
        `patience` epochs without improvement."""
        current = float(metrics)
        if epoch is None:
            epoch = self.last_epoch + 1
        else:
            warnings.warn(_EPOCH_DEPRECATED, UserWarning, stacklevel=2)
        self.last_epoch = epoch
        if self._is_better(current, self.best):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0  # bad epochs in the cooldown do not count
        if self.num_bad_epochs > self.patience:
            self._reduce_lr()
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = self._group_lrs()

    def _reduce_lr(self) -> None:
        groups = self.optimizer.param_groups
        if len(groups) != len(self.min_lrs):
            if self.default_min_lr is None:
                raise UsageError(
                    f"The number of param groups in the `optimizer` ({len(groups)}) differs "
                    f"from when `ReduceLROnPlateau` was initialized ({len(self.min_lrs)}): "
                    "set `min_lrs` to one per group"
                )
            self.min_lrs = [self.default_min_lr] * len(groups)
        for group, min_lr in zip(groups, self.min_lrs):
            old = float(group["lr"])
            new = max(old * self.factor, min_lr)
            if old - new > self.eps:
                set_group_value(group, "lr", new)

    def load_state_dict(self, state_dict: dict) -> None:
        super().load_state_dict(state_dict)
        self._init_is_better(self.mode, self.threshold, self.threshold_mode)


class OneCycleLR(LRScheduler):
    """The 1cycle policy: the lr rises from `max_lr / div_factor` to `max_lr` over
    `pct_start` of `total_steps`, then anneals to `initial_lr / final_div_factor` (cosine or
    linear); momentum (or Adam's beta1) cycles the other way. Step it once per batch.

    >>> import kiln as kn
    >>> opt = kn.optim.SGD([kn.zeros(1, requires_grad=True)], lr=0.1, momentum=0.9)
    >>> sched = kn.optim.lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=10)
    >>> lrs = []
    >>> for _ in range(10):
    ...     lrs.append(sched.get_last_lr()[0]); opt.step(); sched.step()
    >>> [round(lr, 4) for lr in lrs]
    [0.04, 0.52, 1.0, 0.9505, 0.8117, 0.6113, 0.3887, 0.1883, 0.0495, 0.0]
    """

    def __init__(
        self,
        optimizer,
        max_lr,
        total_steps: int | None = None,
        epochs: int | None = None,
        steps_per_epoch: int | None = None,
        pct_start: float = 0.3,
        anneal_strategy: str = "cos",
        cycle_momentum: bool = True,
        base_momentum=0.85,
        max_momentum=0.95,
        div_factor: float = 25.0,
        final_div_factor: float = 1e4,
        three_phase: bool = False,
        last_epoch: int = -1,
    ):
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        self.total_steps = self._total(total_steps, epochs, steps_per_epoch)
        if not isinstance(pct_start, float) or not 0 <= pct_start <= 1:
            raise ArgumentError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ArgumentError(
                f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}"
            )
        self._schedule_phases = self._phases(pct_start, three_phase)  # (torch's state_dict order)
        self._anneal_func_type = anneal_strategy
        max_lrs = _per_group("max_lr", optimizer, max_lr)
        if last_epoch == -1:
            for group, top in zip(optimizer.param_groups, max_lrs):
                group["initial_lr"] = top / div_factor
                group["max_lr"] = top
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self.use_beta1 = _cycles_beta1(optimizer)
            tops = _per_group("max_momentum", optimizer, max_momentum)
            bases = _per_group("base_momentum", optimizer, base_momentum)
            if last_epoch == -1:
                for top, base, group in zip(tops, bases, optimizer.param_groups):
                    self._set_momentum(group, top)
                    group["max_momentum"], group["base_momentum"] = top, base
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _total(total_steps, epochs, steps_per_epoch) -> int:
        if total_steps is not None:
            if not isinstance(total_steps, int) or total_steps <= 0:
                raise ArgumentError(f"Expected positive integer total_steps, but got {total_steps}")
            return total_steps
        if epochs is None or steps_per_epoch is None:
            raise ArgumentError(
                "You must define either total_steps OR (epochs AND steps_per_epoch)"
            )
        for name, value in (("epochs", epochs), ("steps_per_epoch", steps_per_epoch)):
            if not isinstance(value, int) or value <= 0:
                raise ArgumentError(f"Expected positive integer {name}, but got {value}")
        return epochs * steps_per_epoch

    def _phases(self, pct_start: float, three_phase: bool) -> list:
        def phase(end_step, start_lr, end_lr, start_momentum, end_momentum):
            return dict(end_step=end_step, start_lr=start_lr, end_lr=end_lr,
                        start_momentum=start_momentum, end_momentum=end_momentum)  # fmt: skip

        up = float(pct_start * self.total_steps) - 1
        last = self.total_steps - 1
        if three_phase:
            down = float(2 * pct_start * self.total_steps) - 2
            return [
                phase(up, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                phase(down, "max_lr", "initial_lr", "base_momentum", "max_momentum"),
                phase(last, "initial_lr", "min_lr", "max_momentum", "max_momentum"),
            ]
        return [
            phase(up, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
            phase(last, "max_lr", "min_lr", "base_momentum", "max_momentum"),
        ]

    def _set_momentum(self, group, value) -> None:
        if self.use_beta1:
            group["betas"] = (value, *group["betas"][1:])
        else:
            group["momentum"] = value

    def _anneal(self, start: float, end: float, pct: float) -> float:
        if self._anneal_func_type == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def get_lr(self) -> list:
        step = self.last_epoch
        if step > self.total_steps:
            raise ArgumentError(
                f"Tried to step {step} times. The specified number of total steps is "
                f"{self.total_steps}"
            )
        lrs = []
        for group in self.optimizer.param_groups:
            start = 0.0
            for i, phase in enumerate(self._schedule_phases):
                end = phase["end_step"]
                if step <= end or i == len(self._schedule_phases) - 1:
                    pct = (step - start) / (end - start)
                    lrs.append(self._anneal(group[phase["start_lr"]], group[phase["end_lr"]], pct))
                    if self.cycle_momentum:
                        momentum = self._anneal(group[phase["start_momentum"]],
                                                group[phase["end_momentum"]], pct)  # fmt: skip
                        self._set_momentum(group, momentum)
                    break
                start = end
        return lrs
