"""The optimizers: SGD, Adam, AdamW, RMSprop and Adagrad with PyTorch's update math, each
written once with kiln ops in `_update` (graph nodes for Symbols, values for arrays)."""

from __future__ import annotations

import numpy as np

from .. import frontend as F
from ..eager import Tensor
from ..eager.tensor import make
from ..errors import ArgumentError
from ..graph.core import Symbol
from .optimizer import Optimizer
from .options import _check, _check_betas, implementation_flags, like, nonzero

__all__ = ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad"]


class SGD(Optimizer):
    """Stochastic gradient descent with momentum, dampening, Nesterov and weight decay
    (L2 added to the gradient), as PyTorch's `SGD`.

    >>> import kiln as kn, numpy as np
    >>> with kn.Graph().as_default():
    ...     w = kn.Variable(np.float32(3.0), name="w")
    ...     train_op = kn.optim.SGD(lr=0.25).minimize(w * w)
    ...     kn.Session().run(train_op), w.numpy()
    (None, array(1.5, dtype=float32))
    """

    sparse_grads = True  # as PyTorch's, without weight decay (Optimizer._grad)

    slot_prefix = "sgd_"
    torch_slot_names = {"momentum": "momentum_buffer"}
    saves_step = False  # PyTorch's SGD keeps only the momentum buffer

    def __init__(
        self,
        params=None,
        lr=1e-3,
        momentum: float = 0,
        dampening: float = 0,
        weight_decay: float = 0,
        nesterov: bool = False,
        *,
        maximize: bool = False,
        foreach=None,
        differentiable: bool = False,
        fused=None,
    ):
        implementation_flags("SGD", foreach=foreach, differentiable=differentiable, fused=fused)
        _check(lr, "learning rate", takes_nan=True)
        _check(momentum, "momentum value", takes_nan=True)
        _check(weight_decay, "weight_decay value", takes_nan=True)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ArgumentError("Nesterov momentum requires a momentum and zero dampening")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                        nesterov=nesterov, maximize=maximize, foreach=foreach,
                        differentiable=differentiable, fused=fused)  # fmt: skip
        super().__init__(params, defaults)

    def _slot_names(self, group) -> tuple:
        return ("momentum",) if nonzero(group["momentum"]) else ()

    def _update(self, param, grad, slots, step, group=None):
        o = self.param_groups[0] if group is None else group
        g = -grad if o["maximize"] else grad
        if o["weight_decay"] != 0:
            g = g + param * o["weight_decay"]
        new_slots = {}
        if nonzero(o["momentum"]):
            momentum = like(o["momentum"], param)
            buf = slots["momentum"] * momentum
            if o["dampening"] == 0:
                buf = buf + g
            else:  # PyTorch's first step takes the gradient undamped
                buf = F.where(F.eq(step, 1), g, buf + g * (1 - o["dampening"]))
            new_slots["momentum"] = buf
            g = g + buf * momentum if o["nesterov"] else buf
        return param - g * like(o["lr"], param), new_slots


class Adam(Optimizer):
    """Adam with bias correction, as PyTorch's `Adam`: `weight_decay` adds L2 to the
    gradient (or, `decoupled_weight_decay`, shrinks the weights as AdamW's); `amsgrad` keeps
    the maximum second moment.

    >>> import kiln as kn, numpy as np
    >>> with kn.Graph().as_default():
    ...     w = kn.Variable(np.float32(3.0), name="w")
    ...     train_op = kn.optim.Adam(lr=0.1).minimize(w * w)
    ...     _ = kn.Session().run(train_op)
    >>> w.numpy(), [v.name for v in w.graph.variables]  # doctest: +NORMALIZE_WHITESPACE
    (array(2.9, dtype=float32),
     ['w', 'adam/lr', 'adam/betas', 'w/step', 'w/adam_exp_avg', 'w/adam_exp_avg_sq'])
    """

    slot_prefix = "adam_"

    def __init__(
        self,
        params=None,
        lr=1e-3,
        betas=(0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        amsgrad: bool = False,
        *,
        foreach=None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
        fused=None,
        decoupled_weight_decay: bool = False,
    ):
        implementation_flags(
            "Adam",
            foreach=foreach,
            capturable=capturable,
            differentiable=differentiable,
            fused=fused,
        )
        if isinstance(lr, Tensor) and foreach and not capturable:
            raise ArgumentError(
                "lr as a Tensor is not supported for capturable=False and foreach=True"
            )
        _check(lr, "learning rate")
        _check(eps, "epsilon value")
        betas = _check_betas(betas)
        _check(weight_decay, "weight_decay value")
        _check_tensor_betas(betas, foreach, capturable)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        amsgrad=amsgrad, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable, fused=fused,
                        decoupled_weight_decay=decoupled_weight_decay)  # fmt: skip
        super().__init__(params, defaults)

    def _slot_names(self, group) -> tuple:
        return ("exp_avg", "exp_avg_sq") + (("max_exp_avg_sq",) if group["amsgrad"] else ())

    def _update(self, param, grad, slots, step, group=None):
        o = self.param_groups[0] if group is None else group
        beta1, beta2 = o["betas"]
        lr = o["lr"]
        g = -grad if o["maximize"] else grad
        if o["weight_decay"] != 0:
            if o["decoupled_weight_decay"]:
                param = param * like(1 - lr * o["weight_decay"], param)
            else:
                g = g + param * o["weight_decay"]
        # NOTE: the eager CPU step passes arrays: NumPy's own functions, the kernels that kiln's
        # run on arrays (dispatching each, on a 0-d step count above all, cost 4x the math)
        numbers = type(param) is np.ndarray and type(beta1) in _NUMBERS and type(beta2) in _NUMBERS
        # (a 0-d parameter takes the general path: NumPy makes scalars of 0-d products)
        if (
            numbers
            and type(lr) in _NUMBERS
            and param.ndim
            and _same_layout(param, g, *slots.values())
        ):
            return _adam_arrays(param, g, slots, step, beta1, beta2, lr, o)
        xp = np if numbers else F
        m = slots["exp_avg"] * like(beta1, param) + g * like(1 - beta1, param)
        v = slots["exp_avg_sq"] * like(beta2, param) + xp.square(g) * like(1 - beta2, param)
        new_slots = {"exp_avg": m, "exp_avg_sq": v}
        if o["amsgrad"]:
            v = new_slots["max_exp_avg_sq"] = xp.maximum(slots["max_exp_avg_sq"], v)
        t = step.astype(np.float64) if xp is np else F.cast(step, np.float64)
        bias_correction1 = 1 - beta1**t
        bias_correction2_sqrt = xp.sqrt(1 - beta2**t)
        step_size = like(lr / bias_correction1, param)
        denom = xp.sqrt(v) / like(bias_correction2_sqrt, param) + o["eps"]
        return param - step_size * (m / denom), new_slots


def _check_tensor_betas(betas, foreach, capturable) -> None:
    """PyTorch's Adam: both betas floats or both Tensors (not with foreach=True alone)."""
    kinds = [isinstance(b, float) for b in betas[:2]], [isinstance(b, Tensor) for b in betas[:2]]
    if any(isinstance(b, Symbol) for b in betas) or all(kinds[0]):
        return
    if not all(kinds[1]):
        raise ArgumentError("betas must be either both floats or both Tensors")
    for i in (0, 1):
        if foreach and not capturable:
            raise ArgumentError(
                f"betas[{i}] as a Tensor is not supported for capturable=False and foreach=True"
            )
        if betas[i].numel() != 1:
            raise ArgumentError(f"Tensor betas[{i}] must be 1-element")


def _same_layout(param, *arrays) -> bool:
    """Whether the arrays are all float32 or all float64 ones of `param`'s shape."""
    dtype, shape = param.dtype, param.shape
    if dtype not in _FLOAT_ARRAYS:
        return False
    for a in arrays:
        if type(a) is not np.ndarray or a.dtype is not dtype or a.shape != shape:
            return False
    return True


_FLOAT_ARRAYS = (np.dtype(np.float32), np.dtype(np.float64))
_NUMBERS = (int, float)


def _adam_arrays(param, g, slots, step, beta1, beta2, lr, o):
    """`Adam._update` on arrays of one float dtype, from the weight decay on (`param` and `g`
    as it leaves them): its NumPy calls in its order, each into a buffer of the step's own
    where the expression made a new array (the same bits, 3 arrays made rather than 11)."""
    m = np.multiply(slots["exp_avg"], beta1)
    scratch = np.multiply(g, 1 - beta1)
    m += scratch
    v = np.multiply(slots["exp_avg_sq"], beta2)
    np.square(g, out=scratch)
    scratch *= 1 - beta2
    v += scratch
    new_slots = {"exp_avg": m, "exp_avg_sq": v}
    if o["amsgrad"]:
        v = new_slots["max_exp_avg_sq"] = np.maximum(slots["max_exp_avg_sq"], v)
    t = step.astype(np.float64)
    bias_correction1 = 1 - beta1**t
    bias_correction2_sqrt = np.sqrt(1 - beta2**t)
    step_size = like(lr / bias_correction1, param)
    denom = np.sqrt(v, out=scratch)
    denom /= like(bias_correction2_sqrt, param)
    denom += o["eps"]
    update = np.divide(m, denom, out=denom)
    update *= step_size  # (step_size * (m / denom): one product, either order)
    return np.subtract(param, update, out=update), new_slots


class AdamW(Adam):
    """Adam with decoupled weight decay (`param *= 1 - lr * weight_decay` before the Adam
    step), as PyTorch's `AdamW`.

    >>> import kiln as kn
    >>> kn.optim.AdamW(lr=-1)
    Traceback (most recent call last):
    ...
    kiln.errors.ArgumentError: Invalid learning rate: -1 (called at ...)
    """

    slot_prefix = "adamw_"

    def __init__(
        self,
        params=None,
        lr=1e-3,
        betas=(0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
        amsgrad: bool = False,
        *,
        maximize: bool = False,
        foreach=None,
        capturable: bool = False,
        differentiable: bool = False,
        fused=None,
    ):
        implementation_flags(
            "AdamW",
            foreach=foreach,
            capturable=capturable,
            differentiable=differentiable,
            fused=fused,
        )
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize,
                         foreach=foreach, capturable=capturable, fused=fused,
                         differentiable=differentiable, decoupled_weight_decay=True)  # fmt: skip


class RMSprop(Optimizer):
    """RMSprop, as PyTorch's: a running average of squared gradients (`alpha`), optionally
    `centered` (minus the squared average gradient), with `momentum` and L2 `weight_decay`.

    >>> import kiln as kn
    >>> w = kn.tensor([1.0, -2.0], requires_grad=True)
    >>> opt = kn.optim.RMSprop([w], lr=0.01)
    >>> (w * w).sum().backward(); opt.step(); w  # sqrt(0.01 g^2) = 0.1 |g|: a step of 0.1
    tensor([ 0.9000, -1.9000], requires_grad=True)
    """

    slot_prefix = "rmsprop_"

    def __init__(
        self,
        params=None,
        lr=1e-2,
        alpha: float = 0.99,
        eps: float = 1e-8,
        weight_decay: float = 0,
        momentum: float = 0,
        centered: bool = False,
        capturable: bool = False,
        foreach=None,
        maximize: bool = False,
        differentiable: bool = False,
    ):
        implementation_flags(
            "RMSprop", foreach=foreach, capturable=capturable, differentiable=differentiable
        )
        _check(lr, "learning rate")
        _check(eps, "epsilon value")
        _check(momentum, "momentum value")
        _check(weight_decay, "weight_decay value")
        _check(alpha, "alpha value")
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, capturable=capturable, foreach=foreach,
                        maximize=maximize, differentiable=differentiable)  # fmt: skip
        super().__init__(params, defaults)

    def _slot_names(self, group) -> tuple:
        names = ("square_avg",)  # in PyTorch's state_dict order
        names += ("momentum_buffer",) if nonzero(group["momentum"]) else ()
        return names + (("grad_avg",) if group["centered"] else ())

    def _update(self, param, grad, slots, step, group=None):
        o = self.param_groups[0] if group is None else group
        alpha = o["alpha"]
        g = -grad if o["maximize"] else grad
        if o["weight_decay"] != 0:
            g = g + param * o["weight_decay"]
        square_avg = slots["square_avg"] * alpha + F.square(g) * (1 - alpha)
        new_slots = {"square_avg": square_avg}
        if o["centered"]:
            grad_avg = new_slots["grad_avg"] = slots["grad_avg"] * alpha + g * (1 - alpha)
            avg = F.sqrt(square_avg - F.square(grad_avg))
        else:
            avg = F.sqrt(square_avg)
        avg = avg + o["eps"]
        if nonzero(o["momentum"]):
            buf = slots["momentum_buffer"] * like(o["momentum"], param) + g / avg
            new_slots["momentum_buffer"] = buf
            return param - buf * like(o["lr"], param), new_slots
        return param - (g / avg) * like(o["lr"], param), new_slots


class Adagrad(Optimizer):
    """Adagrad, as PyTorch's: steps of `lr / (1 + (step - 1) * lr_decay)` scaled by the
    root of the summed squared gradients (which start at `initial_accumulator_value`).

    >>> import kiln as kn
    >>> w = kn.tensor([1.0, -2.0], requires_grad=True)
    >>> opt = kn.optim.Adagrad([w], lr=0.5)
    >>> (w * w).sum().backward(); opt.step(); w  # g / sqrt(g^2) = sign(g): a step of 0.5
    tensor([ 0.5000, -1.5000], requires_grad=True)
    """

    sparse_grads = True  # as PyTorch's, without weight decay (Optimizer._grad)

    slot_prefix = "adagrad_"

    def __init__(
        self,
        params=None,
        lr=1e-2,
        lr_decay: float = 0,
        weight_decay: float = 0,
        initial_accumulator_value: float = 0,
        eps: float = 1e-10,
        foreach=None,
        *,
        maximize: bool = False,
        differentiable: bool = False,
        fused=None,
    ):
        implementation_flags("Adagrad", foreach=foreach, differentiable=differentiable, fused=fused)
        _check(lr, "learning rate")
        _check(lr_decay, "lr_decay value")
        _check(weight_decay, "weight_decay value")
        _check(initial_accumulator_value, "initial_accumulator_value")
        _check(eps, "epsilon value")
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach,
                        maximize=maximize, differentiable=differentiable,
                        fused=fused)  # fmt: skip
        super().__init__(params, defaults)
        if not self._adopt:  # as PyTorch's: every parameter has state from the start
            for _, t, group in self._tensors():
                value = group["initial_accumulator_value"]
                init = np.full(tuple(t.shape), value, t.dtype)
                if t.dtype.kind == "c":  # PyTorch's: each part of a complex one starts there
                    init += np.asarray(1j * value, t.dtype)
                self._state[t] = {"step": 0, "sum": make(init).to(t.device)}

    def _slot_names(self, group) -> tuple:
        return ("sum",)

    def _slot_init(self, group, slot: str) -> float:
        return group["initial_accumulator_value"]

    def _update(self, param, grad, slots, step, group=None):
        o = self.param_groups[0] if group is None else group
        g = -grad if o["maximize"] else grad
        if o["weight_decay"] != 0:
            g = g + param * o["weight_decay"]
        clr = o["lr"] / (1 + (F.cast(step, np.float64) - 1) * o["lr_decay"])
        state_sum = slots["sum"] + F.square(g)
        std = F.sqrt(state_sum) + o["eps"]
        return param - like(clr, param) * (g / std), {"sum": state_sum}
