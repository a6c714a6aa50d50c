"""More per-coordinate adaptive optimizers: Adadelta, Adamax, RAdam and NAdam with PyTorch's
update math, each written once with kiln ops in `_update` (graph nodes for Symbols, values for
arrays), as those of kiln/optim/algorithms.py."""

from __future__ import annotations

import math

import numpy as np

from .. import frontend as F
from ..eager import enable_grad, no_grad
from ..eager.tensor import make
from ..errors import ArgumentError, UsageError
from ..graph.core import Symbol
from . import graph_step
from .optimizer import Optimizer
from .options import _check, _check_betas, implementation_flags, like, tensor_option

__all__ = ["Adadelta", "Adamax", "NAdam", "RAdam", "SparseAdam"]


def _signed(grad, param, o):
    """The gradient to descend: negated to `maximize`, plus L2 `weight_decay`."""
    g = -grad if o["maximize"] else grad
    if o["weight_decay"] != 0 and not o.get("decoupled_weight_decay"):
        g = g + param * o["weight_decay"]
    return g


class Adadelta(Optimizer):
    """Adadelta, as PyTorch's: steps of `lr * sqrt(acc_delta + eps) / sqrt(square_avg + eps)
    * g`, both averages decaying by `rho`; `weight_decay` adds L2 to the gradient.

    >>> import kiln as kn
    >>> w = kn.tensor([1.0, -2.0], requires_grad=True)
    >>> opt = kn.optim.Adadelta([w], lr=1.0, rho=0.0, eps=1e-6)
    >>> (w * w).sum().backward(); opt.step(); w  # rho 0: a step of sqrt(eps) * sign(g)
    tensor([ 0.9990, -1.9990], requires_grad=True)
    """

    slot_prefix = "adadelta_"

    def __init__(self, params=None, lr=1.0, rho: float = 0.9, eps: float = 1e-6,
                 weight_decay: float = 0, foreach=None, *, capturable: bool = False,
                 maximize: bool = False, differentiable: bool = False):  # fmt: skip
        implementation_flags(
            "Adadelta", foreach=foreach, capturable=capturable, differentiable=differentiable
        )
        _check(lr, "learning rate")
        if not 0.0 <= rho <= 1.0:
            raise ArgumentError(f"Invalid rho value: {rho}")
        _check(eps, "epsilon value")
        _check(weight_decay, "weight_decay value")
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        capturable=capturable, foreach=foreach,
                        differentiable=differentiable)  # fmt: skip
        super().__init__(params, defaults)

    def _slot_names(self, group) -> tuple:
        return ("square_avg", "acc_delta")

    def _update(self, param, grad, slots, step, group=None):
        o = self.param_groups[0] if group is None else group
        rho, eps = o["rho"], o["eps"]
        g = _signed(grad, param, o)
        square_avg = slots["square_avg"] * rho + F.square(g) * (1 - rho)
        delta = F.sqrt(slots["acc_delta"] + eps) / F.sqrt(square_avg + eps) * g
        acc_delta = slots["acc_delta"] * rho + F.square(delta) * (1 - rho)
        new_param = param - delta * like(o["lr"], param)
        return new_param, {"square_avg": square_avg, "acc_delta": acc_delta}


class Adamax(Optimizer):
    """Adamax, as PyTorch's: Adam with the infinity norm, `exp_inf = max(beta2 * exp_inf,
    |g| + eps)`, and steps of `lr / (1 - beta1**t) * exp_avg / exp_inf`.

    >>> import kiln as kn
    >>> w = kn.tensor([1.0, -2.0], requires_grad=True)
    >>> opt = kn.optim.Adamax([w], lr=0.1)
    >>> (w * w).sum().backward(); opt.step(); w  # the first step: lr * sign(g)
    tensor([ 0.9000, -1.9000], requires_grad=True)
    """

    slot_prefix = "adamax_"

    def __init__(self, params=None, lr=2e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, foreach=None, *, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False):  # fmt: skip
        implementation_flags(
            "Adamax", foreach=foreach, capturable=capturable, differentiable=differentiable
        )
        _check(lr, "learning rate")
        _check(eps, "epsilon value")
        _check(weight_decay, "weight_decay value")
        defaults = dict(lr=lr, betas=_check_betas(betas), eps=eps, weight_decay=weight_decay,
                        foreach=foreach, maximize=maximize, differentiable=differentiable,
                        capturable=capturable)  # fmt: skip
        super().__init__(params, defaults)

    def _slot_names(self, group) -> tuple:
        return ("exp_avg", "exp_inf")

    def _update(self, param, grad, slots, step, group=None):
        o = self.param_groups[0] if group is None else group
        beta1, beta2 = o["betas"]
        g = _signed(grad, param, o)
        exp_avg = slots["exp_avg"] * like(beta1, param) + g * like(1 - beta1, param)
        exp_inf = F.maximum(slots["exp_inf"] * like(beta2, param), F.abs(g) + o["eps"])
        clr = o["lr"] / (1 - beta1 ** F.cast(step, np.float64))
        new_param = param - like(clr, param) * (exp_avg / exp_inf)
        return new_param, {"exp_avg": exp_avg, "exp_inf": exp_inf}


class RAdam(Optimizer):
    """RAdam, as PyTorch's: Adam whose adaptive step is rectified by the variance of its
    second moment, and taken only once that is tractable (`rho_t > 5`; before, steps of
    `lr` times the bias-corrected first moment); `decoupled_weight_decay` as AdamW's.

    >>> import kiln as kn
    >>> w = kn.tensor([1.0, -2.0], requires_grad=True)
    >>> opt = kn.optim.RAdam([w], lr=0.1)
    >>> (w * w).sum().backward(); opt.step(); w  # the first step: lr * g
    tensor([ 0.8000, -1.6000], requires_grad=True)
    """

    slot_prefix = "radam_"

    def __init__(self, params=None, lr=1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, decoupled_weight_decay: bool = False, *,
                 foreach=None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False):  # fmt: skip
        implementation_flags(
            "RAdam", foreach=foreach, capturable=capturable, differentiable=differentiable
        )
        _check(lr, "learning rate")
        _check(eps, "epsilon value")
        _check(weight_decay, "weight_decay value")
        defaults = dict(lr=lr, betas=_check_betas(betas), eps=eps, weight_decay=weight_decay,
                        maximize=maximize, foreach=foreach, capturable=capturable,
                        decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=differentiable)  # fmt: skip
        super().__init__(params, defaults)

    def _slot_names(self, group) -> tuple:
        return ("exp_avg", "exp_avg_sq")

    def _update(self, param, grad, slots, step, group=None):
        o = self.param_groups[0] if group is None else group
        beta1, beta2 = o["betas"]
        lr = o["lr"]
        if o["weight_decay"] != 0 and o["decoupled_weight_decay"]:
            param = param * like(1 - lr * o["weight_decay"], param)
        g = _signed(grad, param, o)
        exp_avg = slots["exp_avg"] * like(beta1, param) + g * like(1 - beta1, param)
        exp_avg_sq = slots["exp_avg_sq"] * like(beta2, param) + F.square(g) * like(1 - beta2, param)
        t = F.cast(step, np.float64)
        bias_correction1, bias_correction2 = 1 - beta1**t, 1 - beta2**t
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = rho_inf - 2 * t * beta2**t / bias_correction2
        # the rectification, where the variance is tractable (else not used: clipped at 0)
        rect = F.sqrt(F.maximum((rho_t - 4) * (rho_t - 2) * rho_inf, 0.0)
                      / ((rho_inf - 4) * (rho_inf - 2) * rho_t))  # fmt: skip
        adaptive = like(F.sqrt(bias_correction2), param) / (F.sqrt(exp_avg_sq) + o["eps"])
        value = tensor_option(lr)  # a tensor lr meets float64 moments: its value, exactly
        scale = like((lr if value is None else float(value)) / bias_correction1, param)
        update = F.where(F.gt(rho_t, 5.0), like(rect, param) * adaptive, 1.0)
        new_param = param - exp_avg * scale * update
        return new_param, {"exp_avg": exp_avg, "exp_avg_sq": exp_avg_sq}


class NAdam(Optimizer):
    """NAdam, as PyTorch's: Adam with Nesterov momentum whose coefficient `mu_t = beta1 *
    (1 - 0.5 * 0.96 ** (t * momentum_decay))` warms up; its running product `mu_product` is
    state (a float32 scalar, as PyTorch keeps it). `decoupled_weight_decay` as AdamW's.

    >>> import kiln as kn
    >>> w = kn.tensor([1.0, -2.0], requires_grad=True)
    >>> opt = kn.optim.NAdam([w], lr=0.1)
    >>> (w * w).sum().backward(); opt.step(); w
    tensor([ 0.8944, -1.8944], requires_grad=True)
    >>> opt.state_dict()["state"][0]["mu_product"]
    tensor(0.4501)
    """

    slot_prefix = "nadam_"
    scalar_slots = ("mu_product",)

    def __init__(self, params=None, lr=2e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, momentum_decay: float = 4e-3,
                 decoupled_weight_decay: bool = False, *, foreach=None, maximize: bool = False,
                 capturable: bool = False, differentiable: bool = False):  # fmt: skip
        implementation_flags(
            "NAdam", foreach=foreach, capturable=capturable, differentiable=differentiable
        )
        _check(lr, "learning rate")
        _check(eps, "epsilon value")
        betas = _check_betas(betas)
        _check(weight_decay, "weight_decay value")
        _check(momentum_decay, "momentum_decay value")
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize,
                        foreach=foreach, capturable=capturable,
                        differentiable=differentiable)  # fmt: skip
        super().__init__(params, defaults)

    def _slot_names(self, group) -> tuple:
        return ("mu_product", "exp_avg", "exp_avg_sq")  # PyTorch's state_dict order

    def _slot_init(self, group, slot: str) -> float:
        return 1.0 if slot == "mu_product" else 0.0

    def _update(self, param, grad, slots, step, group=None):
        o = self.param_groups[0] if group is None else group
        beta1, beta2 = o["betas"]
        lr, decay = o["lr"], o["momentum_decay"]
        if o["weight_decay"] != 0 and o["decoupled_weight_decay"]:
            param = param * like(1 - lr * o["weight_decay"], param)
        g = _signed(grad, param, o)
        t = F.cast(step, np.float64)
        mu = beta1 * (1.0 - 0.5 * 0.96 ** (t * decay))
        mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((t + 1) * decay))
        # float32, as PyTorch keeps it (float64 once loaded for a float64 parameter)
        mu_product = slots["mu_product"] * like(mu, slots["mu_product"])
        exp_avg = slots["exp_avg"] * like(beta1, param) + g * like(1 - beta1, param)
        exp_avg_sq = slots["exp_avg_sq"] * like(beta2, param) + F.square(g) * like(1 - beta2, param)
        denom = F.sqrt(exp_avg_sq / like(1 - beta2**t, param)) + o["eps"]
        product = F.cast(mu_product, np.float64)
        grad_scale = -lr * (1.0 - mu) / (1.0 - product)
        avg_scale = -lr * mu_next / (1.0 - product * mu_next)
        new_param = param + like(grad_scale, param) * g / denom
        new_param = new_param + like(avg_scale, param) * exp_avg / denom
        slots = {"mu_product": mu_product, "exp_avg": exp_avg, "exp_avg_sq": exp_avg_sq}
        return new_param, slots


class SparseAdam(Optimizer):
    """PyTorch's `SparseAdam`, the lazy Adam of sparse gradients (`nn.Embedding(sparse=True)`):
    only the elements a gradient stores move, with their moments; the rest, moments included,
    stay as they are. A dense gradient is refused, as PyTorch refuses it. The options, their
    checks, the parameter checks and `state_dict` (`step` an int) are PyTorch's.

    >>> import kiln as kn
    >>> emb = kn.nn.Embedding(3, 2, sparse=True, _weight=kn.ones(3, 2))
    >>> opt = kn.optim.SparseAdam(emb.parameters(), lr=0.1)
    >>> emb(kn.tensor([1])).sum().backward(); opt.step()
    >>> emb.weight
    Parameter containing:
    tensor([[1.0000, 1.0000],
            [0.9000, 0.9000],
            [1.0000, 1.0000]], requires_grad=True)
    >>> w = kn.tensor([1.0, -2.0], requires_grad=True)
    >>> (w * w).sum().backward(); kn.optim.SparseAdam([w]).step()
    Traceback (most recent call last):
    ...
    kiln.errors.UsageError: SparseAdam does not support dense gradients, please consider Adam ...
    """

    def __init__(self, params=None, lr=1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 maximize: bool = False):  # fmt: skip
        if not isinstance(lr, Symbol) and not lr > 0.0:
            raise ArgumentError(f"Invalid learning rate: {lr}")
        if not eps > 0.0:
            raise ArgumentError(f"Invalid epsilon value: {eps}")
        defaults = dict(lr=lr, betas=_check_betas(betas), eps=eps, maximize=maximize)
        super().__init__(params, defaults)
        complex_params = [
            [i, j]
            for i, group in enumerate(self.param_groups)
            for j, p in enumerate(group["params"])
            if p.dtype.kind == "c"
        ]
        if complex_params:
            raise ArgumentError(
                f"Complex params at indices {complex_params}: SparseAdam does not support "
                "complex parameters"
            )

    def step(self, closure=None):
        """One update of every parameter that has a (sparse) `.grad`, as PyTorch's: all
        computed and checked first, then written, so a step that raises (a dense gradient)
        changes nothing. Returns `closure()`'s loss where given."""
        if graph_step.take_grads(self._graph_variables()) is not None:
            raise _dense_gradients()
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        with no_grad(), np.errstate(all="ignore"):
            updates = [self._sparse_update(t, group)
                       for _, t, group in self._tensors() if t.grad is not None]  # fmt: skip
            for t, new_param, state in updates:
                t.copy_(make(new_param))
                self._state[t] = state
        return loss

    def _sparse_update(self, t, group) -> tuple:
        """(t, its new value, its new state): PyTorch's lazy Adam on the coalesced gradient's
        elements, in the parameter's dtype."""
        grad = t.grad
        if not getattr(grad, "is_sparse", False):
            raise _dense_gradients()
        grad = grad.coalesce()
        where = tuple(grad._indices().numpy())
        values = grad._values().numpy()
        if group["maximize"]:
            values = -values
        state = self._state.get(t) or {}
        step = int(state.get("step", 0)) + 1
        data = t.numpy()
        avg, sq = (np.array(np.asarray(state[k]) if k in state else np.zeros_like(data))
                   for k in ("exp_avg", "exp_avg_sq"))  # fmt: skip
        (beta1, beta2), lr, eps = group["betas"], group["lr"], group["eps"]
        old_avg, old_sq = avg[where], sq[where]
        avg_update = (values - old_avg) * (1 - beta1)
        sq_update = (values * values - old_sq) * (1 - beta2)
        avg[where] += avg_update
        sq[where] += sq_update
        denom = np.sqrt(sq_update + old_sq) + np.asarray(eps, data.dtype)
        step_size = lr * math.sqrt(1 - beta2**step) / (1 - beta1**step)
        new_param = np.array(data)
        new_param[where] += -step_size * ((avg_update + old_avg) / denom)
        return t, new_param, {"step": step, "exp_avg": make(avg), "exp_avg_sq": make(sq)}

    def apply_gradients(self, grads_and_vars, extra_updates=(), skip=None):
        """Graph mode: the gradients `minimize` computes are dense, which SparseAdam refuses."""
        raise _dense_gradients()


def _dense_gradients() -> UsageError:
    return UsageError("SparseAdam does not support dense gradients, please consider Adam instead")
