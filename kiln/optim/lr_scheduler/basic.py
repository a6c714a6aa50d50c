"""The scheduler base (PyTorch's step semantics) and the schedules of a formula in the epoch.

A scheduler sets each param group's `lr` when made (`last_epoch` 0) and at every `step()`.
In graph mode the train ops read `lr` (and `momentum`/`betas`) from Variables that setting
the group's value assigns, so a compiled step follows the schedule without recompiling.
"""

from __future__ import annotations

import contextlib
import functools
import math
import types
import warnings
import weakref
from bisect import bisect_right
from collections import Counter

from ...eager import Tensor
from ...errors import ArgumentError, ArgumentTypeError
from ..optimizer import Optimizer

__all__ = [
    "ConstantLR",
    "CosineAnnealingLR",
    "ExponentialLR",
    "LRScheduler",
    "LambdaLR",
    "LinearLR",
    "MultiStepLR",
    "MultiplicativeLR",
    "PolynomialLR",
    "StepLR",
]

_EPOCH_DEPRECATED = (
    "The epoch parameter in `scheduler.step()` is deprecated (as in PyTorch): call "
    "`scheduler.step()` without it; a given epoch uses the closed form where there is one."
)


def _copy(value):
    """A group's value as a scheduler keeps it: a Tensor (an lr given as a tensor) copied,
    as PyTorch's schedulers copy it, so that writing the group's lr changes no list."""
    return value.clone() if isinstance(value, Tensor) else value


def set_group_value(group, key: str, value) -> None:
    """`group[key] = value`, but written into the Tensor the group holds there (an lr given
    as a tensor), as PyTorch's schedulers write it: a step that reads that tensor follows.

    >>> import kiln as kn
    >>> lr = kn.tensor(0.1)
    >>> opt = kn.optim.SGD([kn.zeros(2, requires_grad=True)], lr=lr)
    >>> set_group_value(opt.param_groups[0], "lr", 0.05)
    >>> opt.param_groups[0]["lr"] is lr, round(lr.item(), 4)
    (True, 0.05)
    """
    old = group[key]
    if isinstance(old, Tensor):
        old.fill_(value.item() if isinstance(value, Tensor) else value)
        value = old  # (set again: the graph values made of it follow)
    group[key] = value


def _cycles_beta1(optimizer) -> bool:
    """Whether a scheduler cycling the momentum (`cycle_momentum`) cycles Adam's beta1 rather
    than SGD's momentum; an optimizer with neither is refused, as PyTorch refuses it."""
    if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
        raise ArgumentError(
            "optimizer must support momentum or beta1 with `cycle_momentum` option enabled"
        )
    return "betas" in optimizer.defaults


def _per_group(name: str, optimizer, value) -> list:
    """`value` for each param group: a list or tuple of one per group, or one for all."""
    if isinstance(value, (list, tuple)):
        if len(value) != len(optimizer.param_groups):
            raise ArgumentError(
                f"{name} must have the same length as optimizer.param_groups. {name} has "
                f"{len(value)} values, param_groups has {len(optimizer.param_groups)}."
            )
        return list(value)
    return [value] * len(optimizer.param_groups)


_GET_LR_OUTSIDE_STEP = (
    "To get the last learning rate computed by the scheduler, please use `get_last_lr()`."
)
_STEP_OVERRIDDEN = (
    "Seems like `optimizer.step()` has been overridden after learning rate scheduler "
    "initialization. Please, make sure to call `optimizer.step()` before `lr_scheduler.step()` "
    "(as in PyTorch)."
)
# The optimizer's own `step` attribute (one a user set on it, else None) when each scheduler
# was made: a different one at its first step() was set after it (PyTorch warns). Kept here,
# not on the scheduler, whose state_dict() is its attributes (PyTorch's keys).
_STEP_AT_INIT = weakref.WeakKeyDictionary()
_STEP_BEFORE_OPTIMIZER = (
    "Detected call of `lr_scheduler.step()` before `optimizer.step()`. Call them in the "
    "opposite order, `optimizer.step()` before `lr_scheduler.step()` (as in PyTorch 1.1.0 and "
    "later): otherwise the first value of the learning rate schedule is skipped."
)


def _warns_outside_step(get_lr):
    """A subclass's `get_lr`, warning as PyTorch's when called other than by `step()` (it
    computes the next rates from the current ones: `get_last_lr()` gives the current)."""

    @functools.wraps(get_lr)
    def wrapper(self):
        if not self.__dict__.get("_get_lr_called_within_step", False):
            warnings.warn(_GET_LR_OUTSIDE_STEP, UserWarning, stacklevel=2)
        return get_lr(self)

    return wrapper


@contextlib.contextmanager
def within_step(scheduler):
    """`get_lr()` called by the scheduler's own step (PyTorch's `_get_lr_called_within_step`,
    which its state_dict holds)."""
    scheduler._get_lr_called_within_step = True
    try:
        yield
    finally:
        scheduler._get_lr_called_within_step = False


def _check_optimizer(optimizer) -> None:
    if not isinstance(optimizer, Optimizer):
        raise ArgumentTypeError(f"{type(optimizer).__name__} is not an Optimizer")


class LRScheduler:
    """Base class: `step()`, `get_last_lr()`, `state_dict()`, `load_state_dict()`.

    Subclasses give `get_lr()`: the next learning rates from the current ones (`last_epoch`
    already advanced), and may give `_get_closed_form_lr()`: those of `last_epoch` from
    `base_lrs` alone.
    """

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "get_lr" in cls.__dict__:
            cls.get_lr = _warns_outside_step(cls.__dict__["get_lr"])

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1):
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", _copy(group["lr"]))
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(
                        f"param 'initial_lr' is not specified in param_groups[{i}] when "
                        "resuming a scheduler with last_epoch >= 0: load the optimizer's "
                        "state_dict first"
                    )
        self.base_lrs = [_copy(group["initial_lr"]) for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        _STEP_AT_INIT[self] = vars(optimizer).get("step")
        self._initial_step()

    def _initial_step(self) -> None:
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def get_lr(self) -> list:
        raise NotImplementedError

    def get_last_lr(self) -> list:
        """The learning rates the last `step()` (or the constructor) set, one per group."""
        return self._last_lr

    def _group_lrs(self) -> list:
        return [_copy(group["lr"]) for group in self.optimizer.param_groups]

    def step(self, epoch: int | None = None) -> None:
        """Advances `last_epoch` by one and sets every group's `lr` for it. Call it after
        `optimizer.step()` (per epoch or per batch, as the schedule is defined): the first
        call warns, as PyTorch's, if the optimizer took no step (nor built a graph-mode train
        op) before it."""
        if self._step_count == 1:
            overridden = vars(self.optimizer).get("step") is not _STEP_AT_INIT.get(self)
            if overridden:
                warnings.warn(_STEP_OVERRIDDEN, UserWarning, stacklevel=2)
            elif not getattr(self.optimizer, "_opt_called", False):
                warnings.warn(_STEP_BEFORE_OPTIMIZER, UserWarning, stacklevel=2)
        self._step_count += 1
        if epoch is not None:
            warnings.warn(_EPOCH_DEPRECATED, UserWarning, stacklevel=2)
        self._update_lr(epoch)

    def _update_lr(self, epoch: int | None = None) -> None:
        with within_step(self):
            if epoch is None:
                self.last_epoch += 1
                values = self.get_lr()
            else:
                self.last_epoch = epoch
                closed = getattr(self, "_get_closed_form_lr", None)
                values = closed() if closed is not None else self.get_lr()
        for group, lr in zip(self.optimizer.param_groups, values, strict=True):
            set_group_value(group, "lr", lr)
        self._last_lr = self._group_lrs()

    def state_dict(self) -> dict:
        """Every attribute but the optimizer (PyTorch's content), for `kn.save`."""
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restores the attributes from `state_dict()` (the groups' lrs come with the
        optimizer's state_dict)."""
        self.__dict__.update(state_dict)


class LambdaLR(LRScheduler):
    """`lr = initial_lr * lr_lambda(last_epoch)`, one function or one per group.

    >>> import kiln as kn
    >>> opt = kn.optim.SGD([kn.zeros(1, requires_grad=True)], lr=1.0)
    >>> sched = kn.optim.lr_scheduler.LambdaLR(opt, lambda epoch: 0.5**epoch)
    >>> for _ in range(2):
    ...     opt.step(); sched.step()
    >>> sched.get_last_lr()
    [0.25]
    """

    def __init__(self, optimizer, lr_lambda, last_epoch: int = -1):
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        if isinstance(lr_lambda, (list, tuple)):
            if len(lr_lambda) != len(optimizer.param_groups):
                raise ArgumentError(
                    f"Expected {len(optimizer.param_groups)} lr_lambdas, but got {len(lr_lambda)}"
                )
            self.lr_lambdas = list(lr_lambda)
        else:
            self.lr_lambdas = [lr_lambda] * len(optimizer.param_groups)
        super().__init__(optimizer, last_epoch)

    def state_dict(self) -> dict:
        """As PyTorch: functions are not saved (None); callable objects save their `__dict__`."""
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}
        state["lr_lambdas"] = [
            None if isinstance(fn, types.FunctionType) else dict(fn.__dict__)
            for fn in self.lr_lambdas
        ]
        return state

    def load_state_dict(self, state_dict: dict) -> None:
        state = dict(state_dict)
        lambdas = state.pop("lr_lambdas", [])
        self.__dict__.update(state)
        for fn, saved in zip(self.lr_lambdas, lambdas):
            if saved is not None:
                fn.__dict__.update(saved)

    def get_lr(self) -> list:
        return [base * fn(self.last_epoch) for fn, base in zip(self.lr_lambdas, self.base_lrs)]


class StepLR(LRScheduler):
    """Multiplies the lr by `gamma` every `step_size` epochs.

    >>> import kiln as kn
    >>> opt = kn.optim.SGD([kn.zeros(1, requires_grad=True)], lr=1.0)
    >>> sched = kn.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    >>> lrs = []
    >>> for _ in range(5):
    ...     lrs.append(sched.get_last_lr()[0]); opt.step(); sched.step()
    >>> lrs
    [1.0, 1.0, 0.5, 0.5, 0.25]
    """

    def __init__(self, optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1):
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return self._group_lrs()
        return [lr * self.gamma for lr in self._group_lrs()]

    def _get_closed_form_lr(self) -> list:
        return [base * self.gamma ** (self.last_epoch // self.step_size) for base in self.base_lrs]


class MultiStepLR(LRScheduler):
    """Multiplies the lr by `gamma` at each milestone epoch (twice at one listed twice).

    >>> import kiln as kn
    >>> opt = kn.optim.SGD([kn.zeros(1, requires_grad=True)], lr=1.0)
    >>> sched = kn.optim.lr_scheduler.MultiStepLR(opt, milestones=[1, 3], gamma=0.5)
    >>> for _ in range(3):
    ...     opt.step(); sched.step()
    >>> sched.get_last_lr()
    [0.25]
    """

    def __init__(self, optimizer, milestones, gamma: float = 0.1, last_epoch: int = -1):
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        if self.last_epoch not in self.milestones:
            return self._group_lrs()
        factor = self.gamma ** self.milestones[self.last_epoch]
        return [lr * factor for lr in self._group_lrs()]

    def _get_closed_form_lr(self) -> list:
        passed = bisect_right(sorted(Counter(self.milestones).elements()), self.last_epoch)
        return [base * self.gamma**passed for base in self.base_lrs]

    def load_state_dict(self, state_dict: dict) -> None:
        super().load_state_dict(state_dict)
        self.milestones = Counter({int(k): v for k, v in dict(self.milestones).items()})


class LinearLR(LRScheduler):
    """Scales the lr by a factor going linearly from `start_factor` to `end_factor` over
    `total_iters` steps (a warm-up), then keeps it.

    >>> import kiln as kn
    >>> opt = kn.optim.SGD([kn.zeros(1, requires_grad=True)], lr=1.0)
    >>> sched = kn.optim.lr_scheduler.LinearLR(opt, start_factor=0.25, total_iters=3)
    >>> lrs = []
    >>> for _ in range(5):
    ...     lrs.append(sched.get_last_lr()[0]); opt.step(); sched.step()
    >>> lrs
    [0.25, 0.5, 0.75, 1.0, 1.0]
    """

    def __init__(
        self,
        optimizer,
        start_factor: float = 1.0 / 3,
        end_factor: float = 1.0,
        total_iters: int = 5,
        last_epoch: int = -1,
    ):
        if start_factor > 1.0 or start_factor <= 0:
            raise ArgumentError(
                "Starting multiplicative factor expected to be greater than 0 and less or "
                "equal to 1."
            )
        if end_factor > 1.0 or end_factor < 0:
            raise ArgumentError("Ending multiplicative factor expected to be between 0 and 1.")
        self.start_factor = start_factor
        self.end_factor = end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        if self.last_epoch == 0:
            return [lr * self.start_factor for lr in self._group_lrs()]
        if self._is_initial or self.last_epoch > self.total_iters:
            return self._group_lrs()
        change = self.end_factor - self.start_factor
        ratio = 1.0 + change / (
            self.total_iters * self.start_factor + (self.last_epoch - 1) * change
        )
        return [lr * ratio for lr in self._group_lrs()]

    def _get_closed_form_lr(self) -> list:
        done = min(self.total_iters, self.last_epoch) / self.total_iters
        factor = self.start_factor + (self.end_factor - self.start_factor) * done
        return [base * factor for base in self.base_lrs]


class ExponentialLR(LRScheduler):
    """Multiplies the lr by `gamma` every epoch.

    >>> import kiln as kn
    >>> opt = kn.optim.SGD([kn.zeros(1, requires_grad=True)], lr=1.0)
    >>> sched = kn.optim.lr_scheduler.ExponentialLR(opt, gamma=0.5)
    >>> opt.step(); sched.step(); sched.get_last_lr()
    [0.5]
    """

    def __init__(self, optimizer, gamma: float, last_epoch: int = -1):
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        if self._is_initial:
            return self._group_lrs()
        return [lr * self.gamma for lr in self._group_lrs()]

    def _get_closed_form_lr(self) -> list:
        return [base * self.gamma**self.last_epoch for base in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """Cosine annealing from the initial lr to `eta_min` over `T_max` epochs (then back up,
    as PyTorch's recursive form does past `T_max`).

    >>> import kiln as kn
    >>> opt = kn.optim.SGD([kn.zeros(1, requires_grad=True)], lr=1.0)
    >>> sched = kn.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=2)
    >>> lrs = []
    >>> for _ in range(3):
    ...     lrs.append(round(sched.get_last_lr()[0], 6)); opt.step(); sched.step()
    >>> lrs
    [1.0, 0.5, 0.0]
    """

    def __init__(self, optimizer, T_max: int, eta_min: float = 0.0, last_epoch: int = -1):  # noqa: N803
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        t, t_max, eta_min = self.last_epoch, self.T_max, self.eta_min
        if self._is_initial:
            return self._group_lrs()
        if self._step_count == 1 and t > 0:  # made with last_epoch >= 0: the closed form
            return self._get_closed_form_lr()
        if (t - 1 - t_max) % (2 * t_max) == 0:  # the bottom of a cycle: the recursion divides by 0
            return [lr + (base - eta_min) * (1 - math.cos(math.pi / t_max)) / 2
                    for base, lr in zip(self.base_lrs, self._group_lrs())]  # fmt: skip
        ratio = (1 + math.cos(math.pi * t / t_max)) / (1 + math.cos(math.pi * (t - 1) / t_max))
        return [ratio * (lr - eta_min) + eta_min for lr in self._group_lrs()]

    def _get_closed_form_lr(self) -> list:
        cos = 1 + math.cos(math.pi * self.last_epoch / self.T_max)
        return [self.eta_min + (base - self.eta_min) * cos / 2 for base in self.base_lrs]


class MultiplicativeLR(LambdaLR):
    """Multiplies the lr by `lr_lambda(last_epoch)` at every step after the first (one
    function, or one per group).

    >>> import kiln as kn
    >>> opt = kn.optim.SGD([kn.zeros(1, requires_grad=True)], lr=1.0)
    >>> sched = kn.optim.lr_scheduler.MultiplicativeLR(opt, lambda epoch: 0.5)
    >>> for _ in range(3):
    ...     opt.step(); sched.step()
    >>> sched.get_last_lr()
    [0.125]
    """

    def get_lr(self) -> list:
        if self.last_epoch <= 0:
            return self._group_lrs()
        return [lr * fn(self.last_epoch) for fn, lr in zip(self.lr_lambdas, self._group_lrs())]


class ConstantLR(LRScheduler):
    """Scales the lr by `factor` for the first `total_iters` steps, then restores it.

    >>> import kiln as kn
    >>> opt = kn.optim.SGD([kn.zeros(1, requires_grad=True)], lr=1.0)
    >>> sched = kn.optim.lr_scheduler.ConstantLR(opt, factor=0.5, total_iters=2)
    >>> lrs = []
    >>> for _ in range(4):
    ...     lrs.append(sched.get_last_lr()[0]); opt.step(); sched.step()
    >>> lrs
    [0.5, 0.5, 1.0, 1.0]
    """

    def __init__(self, optimizer, factor: float = 1.0 / 3, total_iters: int = 5,
                 last_epoch: int = -1):  # fmt: skip
        if factor > 1.0 or factor < 0:
            raise ArgumentError("Constant multiplicative factor expected to be between 0 and 1.")
        self.factor = factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        if self.last_epoch == 0:
            return [lr * self.factor for lr in self._group_lrs()]
        if self.last_epoch != self.total_iters:
            return self._group_lrs()
        return [lr * (1.0 / self.factor) for lr in self._group_lrs()]

    def _get_closed_form_lr(self) -> list:
        factor = self.factor + (self.last_epoch >= self.total_iters) * (1 - self.factor)
        return [base * factor for base in self.base_lrs]


class PolynomialLR(LRScheduler):
    """Decays the lr as `initial_lr * (1 - epoch / total_iters) ** power` up to
    `total_iters` (0 there), then keeps it.

    >>> import kiln as kn
    >>> opt = kn.optim.SGD([kn.zeros(1, requires_grad=True)], lr=1.0)
    >>> sched = kn.optim.lr_scheduler.PolynomialLR(opt, total_iters=4, power=2.0)
    >>> lrs = []
    >>> for _ in range(5):
    ...     lrs.append(sched.get_last_lr()[0]); opt.step(); sched.step()
    >>> lrs
    [1.0, 0.5625, 0.25, 0.0625, 0.0]
    """

    def __init__(self, optimizer, total_iters: int = 5, power: float = 1.0,
                 last_epoch: int = -1):  # fmt: skip
        self.total_iters = total_iters
        self.power = power
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        if self._is_initial or self.last_epoch > self.total_iters:
            return self._group_lrs()
        now = 1.0 - self.last_epoch / self.total_iters
        before = 1.0 - (self.last_epoch - 1) / self.total_iters
        return [lr * (now / before) ** self.power for lr in self._group_lrs()]

    def _get_closed_form_lr(self) -> list:
        done = min(self.total_iters, self.last_epoch) / self.total_iters
        return [base * (1.0 - done) ** self.power for base in self.base_lrs]
