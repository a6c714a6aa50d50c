"""Two optimizers older than Adam, with PyTorch's update math, each written once with kiln
ops in `_update` (graph nodes for Symbols, values for arrays), as those of
kiln/optim/algorithms.py: ASGD (SGD with a decaying step and a running average of the
iterates) and Rprop (steps by the gradient's sign, per-coordinate step sizes)."""

from __future__ import annotations

import numpy as np

from .. import frontend as F
from ..errors import ArgumentError
from .adaptive import _signed
from .optimizer import Optimizer
from .options import _check, implementation_flags, like, tensor_option

__all__ = ["ASGD", "Rprop"]


class ASGD(Optimizer):
    """Averaged SGD, as PyTorch's: steps of `eta` (which decays as `lr / (1 + lambd * lr *
    t) ** alpha`) after shrinking the weights by `1 - lambd * eta`; `ax` averages the
    iterates from step `t0` on (with weight `mu = 1 / max(1, t - t0)`). `eta` and `mu` are
    state, float32 scalars as PyTorch keeps them.

    >>> import kiln as kn
    >>> w = kn.tensor([1.0, -2.0], requires_grad=True)
    >>> opt = kn.optim.ASGD([w], lr=0.1, lambd=0.0)
    >>> (w * w).sum().backward(); opt.step(); w  # lambd 0: a plain SGD step
    tensor([ 0.8000, -1.6000], requires_grad=True)
    >>> sorted(opt.state_dict()["state"][0])
    ['ax', 'eta', 'mu', 'step']
    """

    slot_prefix = "asgd_"
    scalar_slots = ("eta", "mu")

    def __init__(self, params=None, lr=1e-2, lambd: float = 1e-4, alpha: float = 0.75,
                 t0: float = 1e6, weight_decay: float = 0, foreach=None, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False):  # fmt: skip
        implementation_flags(
            "ASGD", foreach=foreach, capturable=capturable, differentiable=differentiable
        )
        _check(lr, "learning rate")
        _check(weight_decay, "weight_decay value")
        defaults = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay,
                        foreach=foreach, maximize=maximize, differentiable=differentiable,
                        capturable=capturable)  # fmt: skip
        super().__init__(params, defaults)

    def _slot_names(self, group) -> tuple:
        return ("eta", "mu", "ax")  # PyTorch's state_dict order

    def _slot_init(self, group, slot: str) -> float:
        return {"eta": group["lr"], "mu": 1.0}.get(slot, 0.0)

    def _update(self, param, grad, slots, step, group=None):
        o = self.param_groups[0] if group is None else group
        g = _signed(grad, param, o)
        eta = F.cast(slots["eta"], np.float64)  # the float32 value, in double
        param = param * like(1 - o["lambd"] * eta, param)
        param = param - g * like(eta, param)
        mu, ax = slots["mu"], slots["ax"]
        ax = F.where(F.eq(mu, 1), param, ax + (param - ax) * like(mu, param))
        t, lr = F.cast(step, np.float64), o["lr"]
        lr_tensor = tensor_option(lr)
        if lr_tensor is not None:  # PyTorch's arithmetic of a float32 lr tensor: in float32
            kind, lr = type(lr_tensor), lr_tensor
            eta = lr / (kind(1) + kind(o["lambd"]) * lr * F.cast(step, kind)) ** kind(o["alpha"])
        else:
            eta = lr / (1 + o["lambd"] * lr * t) ** o["alpha"]
        mu = 1 / F.maximum(t - o["t0"], 1.0)
        # float32 values, kept in the slots' dtype (float64 once loaded for a float64 param)
        eta, mu = (like(F.cast(v, np.float32), slots[k]) for k, v in (("eta", eta), ("mu", mu)))
        return param, {"eta": eta, "mu": mu, "ax": ax}


class Rprop(Optimizer):
    """Rprop, as PyTorch's: each coordinate moves by its own step size against the sign of
    its gradient; the step size grows by `etas[1]` while the sign holds and shrinks by
    `etas[0]` when it flips (then that coordinate waits a step), kept within `step_sizes`.
    Step sizes start at `lr`.

    >>> import kiln as kn
    >>> w = kn.tensor([1.0, -2.0], requires_grad=True)
    >>> opt = kn.optim.Rprop([w], lr=0.1)
    >>> for _ in range(2):
    ...     opt.zero_grad(); (w * w).sum().backward(); opt.step()
    >>> w  # steps of 0.1, then 0.12
    tensor([ 0.7800, -1.7800], requires_grad=True)
    """

    slot_prefix = "rprop_"

    def __init__(self, params=None, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *,
                 capturable: bool = False, foreach=None, maximize: bool = False,
                 differentiable: bool = False):  # fmt: skip
        implementation_flags(
            "Rprop", foreach=foreach, capturable=capturable, differentiable=differentiable
        )
        _check(lr, "learning rate")
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ArgumentError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = dict(lr=lr, etas=tuple(etas), step_sizes=tuple(step_sizes), foreach=foreach,
                        maximize=maximize, differentiable=differentiable,
                        capturable=capturable)  # fmt: skip
        super().__init__(params, defaults)

    def _slot_names(self, group) -> tuple:
        return ("prev", "step_size")

    def _slot_init(self, group, slot: str) -> float:
        return group["lr"] if slot == "step_size" else 0.0

    def _update(self, param, grad, slots, step, group=None):
        o = self.param_groups[0] if group is None else group
        etaminus, etaplus = o["etas"]
        low, high = o["step_sizes"]
        g = -grad if o["maximize"] else grad
        sign = F.sign(g * slots["prev"])
        factor = F.where(
            F.gt(sign, 0),
            etaplus,
            F.where(F.lt(sign, 0), etaminus, F.where(F.eq(sign, 0), 1.0, sign)),
        )
        step_size = F.clamp(slots["step_size"] * factor, low, high)
        g = F.where(F.lt(sign, 0), 0.0, g)  # after a sign flip: no step, and no memory of it
        new_param = param - F.sign(g) * step_size
        return new_param, {"prev": g, "step_size": step_size}
