"""Optimizers whose state or step is shaped by the parameter's matrices, with PyTorch's math,
each written once with kiln ops in `_update` (graph nodes for Symbols, values for arrays), as
those of kiln/optim/algorithms.py: Adafactor (second moments kept factored, one row and one
column statistic per matrix) and Muon (momentum orthogonalized by Newton-Schulz steps)."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from .. import dtypes as dt
from .. import frontend as F
from ..errors import ArgumentError, UsageError
from ..graph.core import Symbol
from .optimizer import Optimizer
from .options import implementation_flags, like, nonzero, tensor_option

__all__ = ["Adafactor", "Muon"]

# Muon's Newton-Schulz coefficients (a, b, c), steps and epsilon: PyTorch's defaults
_NS_COEFFICIENTS = (3.4445, -4.7750, 2.0315)
_NS_STEPS = 5
_NS_EPS = 1e-7


class Adafactor(Optimizer):
    """Adafactor, as PyTorch's: for a parameter of two or more dims, the second moment of
    each trailing matrix is kept as its row means (`row_var`) and column means (`col_var`)
    of the squared gradient, their outer product estimating it; a vector keeps `variance`.
    The averages decay as `1 - step ** beta2_decay`; steps are the gradient over the root
    of that estimate, its RMS clipped to `d`, scaled by `min(lr, 1 / sqrt(step))` times the
    parameter's RMS (at least `eps[1]`). `weight_decay` is decoupled, as AdamW's.

    >>> import kiln as kn
    >>> w = kn.tensor([[1.0, -2.0], [3.0, 0.5]], requires_grad=True)
    >>> opt = kn.optim.Adafactor([w], lr=0.1)
    >>> (w * w).sum().backward(); opt.step(); w
    tensor([[ 0.9044, -1.7067],
            [ 2.7892,  0.4461]], requires_grad=True)
    >>> list(opt.state_dict()["state"][0])
    ['step', 'row_var', 'col_var']
    """

    slot_prefix = "adafactor_"

    def __init__(self, params=None, lr=1e-2, beta2_decay: float = -0.8, eps=(None, 1e-3),
                 d: float = 1.0, weight_decay: float = 0.0, *,
                 foreach=None, maximize: bool = False):  # fmt: skip
        implementation_flags("Adafactor", foreach=foreach)
        checks = [
            (lr >= 0.0, f"Learning rate should be >= 0 but is: {lr}"),
            (beta2_decay <= 0.0, f"beta2_decay should be <= 0 but is: {beta2_decay}"),
            (eps[0] is None or eps[0] >= 0.0, f"epsilon1 should be >= 0 but is: {eps[0]}"),
            (eps[1] >= 0.0, f"epsilon2 should be >= 0 but is: {eps[1]}"),
            (d >= 1.0, f"Clipping threshold d should be >= 1 but is: {d}"),
            (weight_decay >= 0.0, f"weight_decay should be >= 0 but is: {weight_decay}"),
        ]
        for ok, message in checks:
            if not ok:
                raise ArgumentError(message)
        defaults = dict(lr=lr, beta2_decay=beta2_decay, eps=tuple(eps), d=d,
                        weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize)  # fmt: skip
        super().__init__(params, defaults)

    def _slot_names(self, group) -> tuple:
        return ("row_var", "col_var", "variance")  # PyTorch's state_dict order

    def _slot_layout(self, slot: str, shape: tuple, dtype) -> tuple | None:
        if len(shape) > 1:
            if slot == "row_var":
                return (*shape[:-1], 1), dtype
            if slot == "col_var":
                return (*shape[:-2], 1, shape[-1]), dtype
            return None
        return (shape, dtype) if slot == "variance" else None

    def _new_values(self, i: int, t, group) -> tuple:
        if t.dtype.kind == "c":
            raise UsageError("Adafactor does not support complex parameters")
        return super()._new_values(i, t, group)

    def _update(self, param, grad, slots, step, group=None):
        o = self.param_groups[0] if group is None else group
        lr, (eps1, eps2) = o["lr"], o["eps"]
        if eps1 is None:
            eps1 = float(ml_dtypes.finfo(np.dtype(param.dtype)).eps)  # (bfloat16's too)
        g = -grad if o["maximize"] else grad
        t = F.cast(step, np.float64)
        decay = t ** o["beta2_decay"]  # 1 - beta2 at this step
        lr_tensor = tensor_option(lr)  # its value, when 1 / sqrt(t) is the smaller
        rho = F.minimum(lr if lr_tensor is None else float(lr_tensor), 1 / F.sqrt(t))
        size = float(np.prod(param.shape))
        rms = F.cast(F.sqrt(F.sum(F.square(param))), np.float64) / np.sqrt(size)
        alpha = F.maximum(eps2, rms) * rho
        if o["weight_decay"] != 0:
            param = param * like(1 - lr * o["weight_decay"], param)
        weight = like(decay, param)
        if "variance" in slots:
            variance = F.lerp(slots["variance"], g * g, weight)
            new_slots, estimate = {"variance": variance}, variance
        else:
            rows, cols = g.shape[-1], g.shape[-2]
            row_mean = F.square(F.sqrt(F.sum(F.square(g), -1, keepdims=True))) / rows
            col_mean = F.square(F.sqrt(F.sum(F.square(g), -2, keepdims=True))) / cols
            row_var = F.lerp(slots["row_var"], row_mean, weight)
            col_var = F.lerp(slots["col_var"], col_mean, weight)
            estimate = F.matmul(row_var, col_var)
            estimate = estimate / F.maximum(F.mean(row_var, -2, keepdims=True), eps1)
            new_slots = {"row_var": row_var, "col_var": col_var}
        update = g / F.sqrt(F.maximum(estimate, eps1 * eps1))
        norm = F.cast(F.sqrt(F.sum(F.square(update))), np.float64)
        denom = F.maximum(norm / (np.sqrt(size) * o["d"]), 1.0)
        if lr_tensor is not None and not 1 / np.sqrt(float(t)) < lr_tensor:
            # PyTorch's step size when the lr tensor (float32) is the smaller: its arithmetic
            # with the Python floats, in float32
            kind = type(lr_tensor)
            scale = kind(kind(F.maximum(eps2, rms)) * lr_tensor) / kind(denom)
            return param - update * like(scale, param), new_slots
        return param - update * like(alpha / denom, param), new_slots


def _bf16(x):
    """`x` (float32) rounded to bfloat16, kept in float32: PyTorch's Newton-Schulz runs in
    bfloat16, each op's float32-accumulated result rounded once, as here."""
    return F.cast(F.cast(x, dt.bfloat16), np.float32)


def orthogonalize(update, coefficients, steps: int, eps: float):
    """Muon's quintic Newton-Schulz iteration towards the nearest semi-orthogonal matrix
    (`U V^T` of the SVD, approximately), in bfloat16 as PyTorch's; a float32 result."""
    a, b, c = coefficients
    x = _bf16(F.cast(update, np.float32))
    tall = update.shape[0] > update.shape[1]
    if tall:
        x = F.transpose(x, 0, 1)
    norm = _bf16(F.sqrt(F.sum(F.square(x))))
    x = _bf16(x / F.maximum(norm, _bf16(np.float32(eps))))
    for _ in range(steps):
        gram = _bf16(F.matmul(x, F.transpose(x, 0, 1)))
        poly = _bf16(gram * b + F.matmul(gram, gram) * c)
        x = _bf16(x * a + F.matmul(poly, x))
    return F.transpose(x, 0, 1) if tall else x


class Muon(Optimizer):
    """Muon, as PyTorch's, for 2-D parameters (hidden layers' weights): the momentum
    buffer (`lerp` towards the gradient by `1 - momentum`; Nesterov's look-ahead by
    default) orthogonalized by `ns_steps` Newton-Schulz steps in bfloat16, applied with
    the lr scaled for the matrix's shape (`adjust_lr_fn`: "original", `sqrt(max(1, A/B))`,
    or "match_rms_adamw", `0.2 sqrt(max(A, B))`), after decoupled weight decay. Its
    state is `momentum_buffer` alone (no step count), as PyTorch's.

    >>> import kiln as kn
    >>> w = kn.tensor([[1.0, -2.0], [3.0, 0.5]], requires_grad=True)
    >>> opt = kn.optim.Muon([w], lr=0.1, weight_decay=0.0)
    >>> (w * w).sum().backward(); opt.step(); w
    tensor([[ 0.9635, -1.9324],
            [ 2.8937,  0.4844]], requires_grad=True)
    """

    slot_prefix = "muon_"
    torch_slot_names = {"momentum": "momentum_buffer"}
    saves_step = False

    def __init__(self, params=None, lr=1e-3, weight_decay: float = 0.1, momentum: float = 0.95,
                 nesterov: bool = True, ns_coefficients=_NS_COEFFICIENTS, eps: float = _NS_EPS,
                 ns_steps: int = _NS_STEPS, adjust_lr_fn: str | None = None):  # fmt: skip
        checks = [
            (isinstance(lr, Symbol) or lr >= 0.0, f"Learning rate should be >= 0 but is: {lr}"),
            (momentum >= 0.0, f"momentum should be >= 0 but is: {momentum}"),
            (weight_decay >= 0.0, f"weight decay should be >= 0 but is: {weight_decay}"),
            (adjust_lr_fn in (None, "original", "match_rms_adamw"),
             f"Adjust learning rate function {adjust_lr_fn} is not supported"),
        ]  # fmt: skip
        for ok, message in checks:
            if not ok:
                raise ArgumentError(message)
        defaults = dict(lr=lr, weight_decay=weight_decay, momentum=momentum, nesterov=nesterov,
                        ns_coefficients=tuple(ns_coefficients), eps=eps, ns_steps=ns_steps,
                        adjust_lr_fn=adjust_lr_fn)  # fmt: skip
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if len(p.shape) != 2:
                    raise ArgumentError(
                        "Muon only supports 2D parameters whereas we found a parameter with "
                        f"size: {p.shape}"
                    )

    def _slot_names(self, group) -> tuple:
        return ("momentum",)

    def _new_values(self, i: int, t, group) -> tuple:
        if t.dtype.kind == "c":
            raise UsageError("Muon does not support complex parameters")
        return super()._new_values(i, t, group)

    def _update(self, param, grad, slots, step, group=None):
        o = self.param_groups[0] if group is None else group
        if o["ns_steps"] >= 100:
            raise ArgumentError(
                "Number of steps must be less than 100 for computational efficiency"
            )
        momentum = o["momentum"] if nonzero(o["momentum"]) else 0.0
        buf = F.lerp(slots["momentum"], grad, like(1 - momentum, param))
        update = F.lerp(grad, buf, like(momentum, param)) if o["nesterov"] else buf
        update = orthogonalize(update, o["ns_coefficients"], o["ns_steps"], o["eps"])
        rows, cols = param.shape
        if o["adjust_lr_fn"] in (None, "original"):
            ratio = float(np.sqrt(max(1.0, rows / cols)))
        else:
            ratio = 0.2 * float(np.sqrt(max(rows, cols)))
        lr = o["lr"]
        param = param * like(1 - lr * o["weight_decay"], param)
        new_param = param - F.cast(update, param.dtype) * like(lr * ratio, param)
        return new_param, {"momentum": buf}
