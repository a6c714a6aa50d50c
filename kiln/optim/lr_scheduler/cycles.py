"""Schedulers that cycle or chain: CosineAnnealingWarmRestarts, CyclicLR and ChainedScheduler
(PyTorch's)."""

from __future__ import annotations

import math
import types

from ...errors import ArgumentError, ArgumentTypeError
from .basic import (
    LRScheduler,
    _check_optimizer,
    _cycles_beta1,
    _per_group,
    set_group_value,
    within_step,
)
from .policies import Composite, ReduceLROnPlateau

__all__ = ["ChainedScheduler", "CosineAnnealingWarmRestarts", "CyclicLR"]


class CosineAnnealingWarmRestarts(LRScheduler):
    """Cosine annealing from the initial lr to `eta_min` over `T_0` epochs, then again from
    the initial lr over `T_0 * T_mult`, and so on (SGDR). `step(epoch)` takes a fractional
    epoch (`epoch + i / iters` per batch).

    >>> import kiln as kn
    >>> opt = kn.optim.SGD([kn.zeros(1, requires_grad=True)], lr=1.0)
    >>> sched = kn.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=2)
    >>> lrs = []
    >>> for _ in range(5):
    ...     lrs.append(round(sched.get_last_lr()[0], 6)); opt.step(); sched.step()
    >>> lrs
    [1.0, 0.5, 1.0, 0.5, 1.0]
    """

    def __init__(self, optimizer, T_0: int, T_mult: int = 1, eta_min: float = 0.0,  # noqa: N803
                 last_epoch: int = -1):  # fmt: skip
        if not isinstance(T_0, int) or T_0 <= 0:
            raise ArgumentError(f"Expected positive integer T_0, but got {T_0}")
        if not isinstance(T_mult, int) or T_mult < 1:
            raise ArgumentError(f"Expected integer T_mult >= 1, but got {T_mult}")
        if not isinstance(eta_min, (float, int)):
            raise ArgumentTypeError(f"Expected float or int eta_min, but got {eta_min!r}")
        self.T_0, self.T_i, self.T_mult = T_0, T_0, T_mult
        self.eta_min = eta_min
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        cos = 1 + math.cos(math.pi * self.T_cur / self.T_i)
        return [self.eta_min + (base - self.eta_min) * cos / 2 for base in self.base_lrs]

    def step(self, epoch=None) -> None:
        """The next epoch (or `epoch`, fractional or not): where in which cycle it lies."""
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur += 1
            if self.T_cur >= self.T_i:
                self.T_cur %= self.T_i
                self.T_i *= self.T_mult
        elif epoch < 0:
            raise ArgumentError(f"Expected non-negative epoch, but got {epoch}")
        elif epoch < self.T_0:
            self.T_i, self.T_cur = self.T_0, epoch
        elif self.T_mult == 1:
            self.T_cur = epoch % self.T_0
        else:  # cycles T_0, T_0 * T_mult, ...: the n before `epoch` sum to T_0 (m^n - 1)/(m - 1)
            n = int(math.log(epoch / self.T_0 * (self.T_mult - 1) + 1, self.T_mult))
            self.T_cur = epoch - self.T_0 * (self.T_mult**n - 1) / (self.T_mult - 1)
            self.T_i = self.T_0 * self.T_mult**n
        self.last_epoch = math.floor(epoch)
        with within_step(self):
            values = self.get_lr()
        for group, lr in zip(self.optimizer.param_groups, values, strict=True):
            set_group_value(group, "lr", lr)
        self._last_lr = self._group_lrs()


class CyclicLR(LRScheduler):
    """The lr cycles between `base_lr` and `max_lr`: up over `step_size_up` steps, down over
    `step_size_down` (default the same); `mode` scales each cycle's amplitude ("triangular":
    constant, "triangular2": halved each cycle, "exp_range": `gamma ** step`) unless
    `scale_fn` does. Momentum (or Adam's beta1) cycles the other way. Step it per batch.

    >>> import kiln as kn
    >>> opt = kn.optim.SGD([kn.zeros(1, requires_grad=True)], lr=1.0, momentum=0.9)
    >>> sched = kn.optim.lr_scheduler.CyclicLR(opt, base_lr=0.1, max_lr=0.5, step_size_up=2)
    >>> lrs = []
    >>> for _ in range(5):
    ...     lrs.append(round(sched.get_last_lr()[0], 6)); opt.step(); sched.step()
    >>> lrs
    [0.1, 0.3, 0.5, 0.3, 0.1]
    """

    def __init__(self, optimizer, base_lr, max_lr, step_size_up: int = 2000,
                 step_size_down: int | None = None, mode: str = "triangular",
                 gamma: float = 1.0, scale_fn=None, scale_mode: str = "cycle",
                 cycle_momentum: bool = True, base_momentum=0.8, max_momentum=0.9,
                 last_epoch: int = -1):  # fmt: skip
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        base_lrs = _per_group("base_lr", optimizer, base_lr)
        if last_epoch == -1:
            for lr, group in zip(base_lrs, optimizer.param_groups):
                set_group_value(group, "lr", lr)
        self.max_lrs = _per_group("max_lr", optimizer, max_lr)
        up = float(step_size_up)
        down = float(step_size_down) if step_size_down is not None else up
        self.total_size = up + down
        self.step_ratio = up / self.total_size
        if mode not in ("triangular", "triangular2", "exp_range") and scale_fn is None:
            raise ArgumentError("mode is invalid and scale_fn is None")
        self.mode, self.gamma = mode, gamma
        self._scale_fn_custom = scale_fn
        self.scale_mode = scale_mode if scale_fn is not None else (
            "iterations" if mode == "exp_range" else "cycle")  # fmt: skip
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self.use_beta1 = _cycles_beta1(optimizer)
            self.base_momentums = _per_group("base_momentum", optimizer, base_momentum)
            self.max_momentums = _per_group("max_momentum", optimizer, max_momentum)
            if last_epoch == -1:
                for top, base, group in zip(self.max_momentums, self.base_momentums,
                                            optimizer.param_groups):  # fmt: skip
                    self._set_momentum(group, top)
                    group["max_momentum"], group["base_momentum"] = top, base
        super().__init__(optimizer, last_epoch)
        self.base_lrs = base_lrs

    def scale_fn(self, x) -> float:
        """The amplitude's scale at cycle (or step) `x`."""
        if self._scale_fn_custom is not None:
            return self._scale_fn_custom(x)
        if self.mode == "triangular":
            return 1.0
        if self.mode == "triangular2":
            return 1 / (2.0 ** (x - 1))
        return self.gamma**x

    def _set_momentum(self, group, value) -> None:
        if self.use_beta1:
            group["betas"] = (value, *group["betas"][1:])
        else:
            group["momentum"] = value

    def get_lr(self) -> list:
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle
        if x <= self.step_ratio:
            rise = x / self.step_ratio
        else:
            rise = (x - 1) / (self.step_ratio - 1)
        scale = self.scale_fn(cycle if self.scale_mode == "cycle" else self.last_epoch)
        lrs = [base + (top - base) * rise * scale for base, top in zip(self.base_lrs, self.max_lrs)]
        if self.cycle_momentum:
            for group, base, top in zip(self.optimizer.param_groups, self.base_momentums,
                                        self.max_momentums):  # fmt: skip
                self._set_momentum(group, top - (top - base) * rise * scale)
        return lrs

    def state_dict(self) -> dict:
        """As PyTorch: a `scale_fn` function is not saved; a callable object saves its
        `__dict__`."""
        state = super().state_dict()
        fn = state.pop("_scale_fn_custom")
        state["_scale_fn_custom"] = None
        if fn is not None and not isinstance(fn, types.FunctionType):
            state["_scale_fn_custom"] = dict(fn.__dict__)
        return state

    def load_state_dict(self, state_dict: dict) -> None:
        state = dict(state_dict)
        fn = state.pop("_scale_fn_custom", None)
        self.__dict__.update(state)
        if fn is not None and self._scale_fn_custom is not None:
            self._scale_fn_custom.__dict__.update(fn)


class ChainedScheduler(Composite, LRScheduler):
    """Steps every scheduler in `schedulers` at each `step()`, in order: their changes to
    the lr compose (a warm-up factor on top of a decay).

    >>> import kiln as kn
    >>> from kiln.optim import lr_scheduler as S
    >>> opt = kn.optim.SGD([kn.zeros(1, requires_grad=True)], lr=1.0)
    >>> sched = S.ChainedScheduler([S.ConstantLR(opt, factor=0.5, total_iters=2),
    ...                             S.ExponentialLR(opt, gamma=0.5)])
    >>> lrs = []
    >>> for _ in range(4):
    ...     lrs.append(sched.get_last_lr()[0]); opt.step(); sched.step()
    >>> lrs
    [0.5, 0.25, 0.25, 0.125]
    """

    def __init__(self, schedulers, optimizer=None):
        name = type(self).__name__
        if len(schedulers) < 1:
            raise ArgumentError(
                f"{name} expects at least one scheduler to be chained, but got no scheduler."
            )
        optimizer = optimizer or schedulers[0].optimizer
        for i, scheduler in enumerate(schedulers):
            if not hasattr(scheduler, "optimizer"):
                raise ArgumentTypeError(
                    f"{name} at index {i} should have `optimizer` as its attribute."
                )
            if isinstance(scheduler, ReduceLROnPlateau):
                raise ArgumentError(
                    f"{name} does not support `ReduceLROnPlateau` scheduler as it requires "
                    "additional kwargs to be specified when calling `step`, but got one at "
                    f"index {i} in the given schedulers sequence."
                )
            if scheduler.optimizer is not optimizer:
                raise ArgumentError(
                    f"{name} expects all schedulers to belong to the same optimizer, but got "
                    f"scheduler {type(scheduler).__name__} at index {i} with another one"
                )
        self._schedulers = list(schedulers)
        self.optimizer = optimizer
        self._last_lr = self._group_lrs()

    def step(self) -> None:  # type: ignore[override]
        for scheduler in self._schedulers:
            scheduler.step()
        self._last_lr = self._group_lrs()
