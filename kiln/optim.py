"""Optimizers: SGD, Adam and AdamW with PyTorch's update math, written once with kiln ops.

`_update(param, grad, slots, step)` is the one definition of each optimizer's math: given
Symbols it builds graph nodes (graph mode: `minimize` turns them into declared updates), given
arrays or eager Tensors it computes values at once (eager mode: `zero_grad()` and `step()`).
"""

from __future__ import annotations

import numpy as np

from . import dtypes as dt
from . import frontend as F
from .eager import Tensor, no_grad, zeros_like
from .eager.tensor import describe, make
from .errors import DTypeError, GraphError, ShapeError
from .graph.core import Symbol, Variable
from .graph.opdef import REGISTRY
from .nn.module import Parameter, pending_updates
from .ops.core import apply, bind_graph

__all__ = ["SGD", "Adam", "AdamW", "Optimizer"]


def _check(value, what: str, low: float = 0.0) -> None:
    if not isinstance(value, Symbol) and not value >= low:
        raise ValueError(f"Invalid {what}: {value}")


def _trainable_ancestors(loss) -> tuple[list, set]:
    """Trainable Variables that `loss` depends on, in graph order, and the ids of every node
    `loss` depends on."""
    seen, stack, found = set(), [loss.node], set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node.out, Variable) and node.out.trainable:
            found.add(id(node.out))
        stack.extend(i.node for i in node.inputs)
    return [v for v in loss.graph.variables if id(v) in found], seen


class Optimizer:
    """Base class: `minimize`, `compute_gradients`, `apply_gradients` for graph mode.

    Subclasses define `slot_names` and `_update`. State (slot Variables such as Adam's
    moments, named `<var>/<optimizer>_<slot>`, and a step count `<var>/step`) is made per
    Variable on first use and shared by every train op of this optimizer.
    """

    slot_names: tuple = ()
    slot_prefix = ""

    def __init__(self, params, defaults: dict):
        self.params = None if params is None else list(params)
        if self.params is not None and not self.params:
            raise ValueError("optimizer got an empty parameter list")
        for p in self.params or ():
            if not isinstance(p, (Parameter, Variable, Tensor)):
                raise TypeError(
                    f"optimizer params must be Parameters, Variables or Tensors, got {p!r}"
                )
            if isinstance(p, Tensor) and not p.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        self.defaults = dict(defaults)
        for name, value in defaults.items():
            setattr(self, name, value)
        self._state: dict = {}  # Variable -> {"step": Variable, slot name: Variable}

    def _update(self, param, grad, slots: dict, step):
        """(new_param, new_slots) from the current values; `step` counts this update (1…)."""
        raise NotImplementedError

    # -- eager mode --------------------------------------------------------------------------

    def _tensors(self) -> list:
        if self.params is None:
            raise ValueError(
                "eager zero_grad()/step() need the params: Optimizer(model.parameters())"
            )
        return [p.tensor() if isinstance(p, Parameter) else p for p in self.params
                if not isinstance(p, Variable)]  # fmt: skip

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clears every parameter's `.grad` (PyTorch's default: to None), before a backward."""
        for t in self._tensors():
            grad = t.grad
            if grad is None:
                continue
            if set_to_none or grad.requires_grad:
                t.grad = None if set_to_none else zeros_like(grad)
            else:
                with no_grad():
                    grad.zero_()  # in place, as PyTorch: references to it see the zeros

    def step(self) -> None:
        """One update of every parameter that has a `.grad`, in place, with `_update`: the
        same math as the graph-mode train op.

        All or nothing: every new value, slot and step count is computed and checked first,
        then written, so a step that raises leaves parameters and state as they were.
        Floating-point errors are ignored whatever `np.seterr` says (PyTorch's inf and nan).

        >>> import kiln as kn
        >>> w = kn.tensor(3.0, requires_grad=True)
        >>> opt = kn.optim.SGD([w], lr=0.25)
        >>> (w * w).backward(); opt.step(); w
        tensor(1.5000, requires_grad=True)
        """
        symbolic = [k for k in self.defaults if isinstance(getattr(self, k), Symbol)]
        if symbolic:
            raise ValueError(f"eager step() needs numbers, but {symbolic} are graph values")
        with no_grad(), np.errstate(all="ignore"):
            params = [(i, t) for i, t in enumerate(self._tensors()) if t.grad is not None]
            updates = [self._new_values(i, t) for i, t in params]
            # NOTE: from here on nothing can fail: same shapes, same dtypes, plain writes.
            for t, count, new_param, new_slots in updates:
                t.copy_(new_param)
                self._state.setdefault(t, {}).update({"step": count, **new_slots})

    def _new_values(self, i: int, t) -> tuple:
        """(t, step count, new value, new slots) of parameter `i`, computed and checked
        without writing anything."""
        state = self._state.get(t)
        count = 1 if state is None else state["step"] + 1
        step = np.array(count, np.int64)
        if t.device == "cpu":  # the same ops on the arrays: NumPy's operators, no Tensors
            slots = {s: np.zeros_like(t._data) if state is None else state[s].numpy()
                     for s in self.slot_names}  # fmt: skip
            new_param, new_slots = self._update(t._data, t.grad._data, slots, step)
            new_param = make(np.asarray(new_param))
            new_slots = {k: make(np.asarray(v)) for k, v in new_slots.items()}
        else:
            slots = {s: zeros_like(t) if state is None else state[s] for s in self.slot_names}
            new_param, new_slots = self._update(t.detach(), t.grad.detach(), slots, step)
        for what, value in (("value", new_param), *new_slots.items()):
            self._check_fits(i, t, what, value)
        return t, count, F.cast(new_param, t.dtype), new_slots

    def _check_fits(self, i: int, t, what: str, value) -> None:
        """A new value or slot must have the parameter's shape, and a dtype that casts to
        the parameter's within its kind (PyTorch refuses float updates of an int tensor)."""
        where = (
            f"{type(self).__name__}.step: parameter {i} ({describe(t)}, its grad "
            f"{describe(t.grad)}): the new {what} is {describe(value)}; nothing was updated"
        )
        if tuple(value.shape) != tuple(t.shape):
            raise ShapeError(where)
        if not np.can_cast(value.dtype, t.dtype, "same_kind"):
            raise DTypeError(where)

    # -- graph mode --------------------------------------------------------------------------

    def _var_list(self, loss, var_list) -> list:
        reachable, seen = _trainable_ancestors(loss)
        candidates = var_list if var_list is not None else self.params
        if candidates is None:
            chosen = reachable
        else:
            chosen, ids = [], set()
            for p in candidates:
                if isinstance(p, Tensor) and not isinstance(p, Parameter):
                    raise GraphError("minimize takes Parameters or Variables, not eager Tensors")
                var = p.variable_in(loss.graph) if isinstance(p, Parameter) else p
                frozen = var is not None and not var.trainable  # requires_grad=False
                if var is not None and not frozen and id(var.node) in seen and id(var) not in ids:
                    ids.add(id(var))
                    chosen.append(var)
        if not chosen:
            which = (
                "none of the given parameters"
                if candidates is not None
                else "no trainable Variable"
            )
            raise GraphError(
                f"loss '{loss.name}' ({loss.op.name}, created at {loss.site}) depends on "
                f"{which}: nothing to optimize (were the model's modules called in this graph?)"
            )
        return chosen

    def compute_gradients(self, loss, var_list=None) -> list:
        """[(gradient, Variable)] of a scalar `loss`; `var_list` (Parameters or Variables)
        defaults to the optimizer's params, else every trainable Variable `loss` uses.
        Parameters that `loss` does not use are left out (PyTorch: no gradient, no update)."""
        if not isinstance(loss, Symbol):
            raise GraphError(f"minimize needs a loss Symbol, got {type(loss).__name__}")
        variables = self._var_list(loss, var_list)
        return list(zip(F.grad(loss, variables), variables))

    def _slots_of(self, var) -> dict:
        state = self._state.get(var)
        if state is None:
            graph = var.graph
            state = {
                "step": Variable(
                    np.array(0, np.int64), name=f"{var.name}/step", trainable=False, graph=graph
                )
            }
            for slot in self.slot_names:
                state[slot] = Variable(
                    np.zeros(var.shape, var.dtype),
                    trainable=False,
                    name=f"{var.name}/{self.slot_prefix}{slot}",
                    graph=graph,
                )
            self._state[var] = state
        return state

    def apply_gradients(self, grads_and_vars, extra_updates=()) -> Symbol:
        """A train op: fetching it applies every update (parameters, slots, step counts and
        `extra_updates`) after the run's outputs, all or nothing; the fetch returns None."""
        assigns = []
        for g, var in grads_and_vars:
            if g is None:
                continue
            state = self._slots_of(var)
            step = state["step"] + 1
            slots = {name: state[name] for name in self.slot_names}
            new_param, new_slots = self._update(var, g, slots, step)
            assigns.append(apply("assign", var, new_param))
            assigns.extend(apply("assign", state[k], v) for k, v in new_slots.items())
            assigns.append(apply("assign", state["step"], step))
        if not assigns:
            raise GraphError("apply_gradients: no gradients provided for any variable")
        assigns.extend(extra_updates)
        return bind_graph(REGISTRY["group"], tuple(assigns), {}, name="train_op")

    def minimize(self, loss, var_list=None) -> Symbol:
        """The train op that takes one step on `loss`: `sess.run([loss, train_op], feed)`.

        Inside a `kiln.distributed` process group, the gradients are averaged over the ranks
        first (bucketed all-reduce nodes, see `kiln.distributed.graph`). It also applies the
        buffer updates (BatchNorm running statistics) of the module calls that `loss` depends
        on."""
        grads_and_vars = _average_over_ranks(self.compute_gradients(loss, var_list))
        return self.apply_gradients(grads_and_vars, pending_updates(loss))

    def __repr__(self):
        args = ", ".join(f"{k}={getattr(self, k)!r}" for k in self.defaults)
        return f"{type(self).__name__}({args})"


def _average_over_ranks(grads_and_vars) -> list:
    """The one distributed hook of graph-mode training: `kiln.distributed.graph`."""
    from .distributed.graph import average_gradients

    return average_gradients(grads_and_vars)


def _like(value, x):
    """`value` (a scalar that may be a float64 Symbol) in `x`'s dtype, so that float32
    parameters stay float32 (PyTorch computes these scalars in double, then applies them)."""
    if isinstance(value, (int, float)) or not dt.is_float(x.dtype):
        return value
    return F.cast(value, x.dtype)


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

    slot_prefix = "sgd_"

    def __init__(
        self,
        params=None,
        lr=1e-3,
        momentum: float = 0.0,
        dampening: float = 0.0,
        weight_decay: float = 0.0,
        nesterov: bool = False,
    ):
        _check(lr, "learning rate")
        _check(momentum, "momentum value")
        _check(weight_decay, "weight_decay value")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(
            params,
            dict(
                lr=lr,
                momentum=momentum,
                dampening=dampening,
                weight_decay=weight_decay,
                nesterov=nesterov,
            ),
        )
        self.slot_names = ("momentum",) if momentum != 0 else ()

    def _update(self, param, grad, slots, step):
        g = grad
        if self.weight_decay != 0:
            g = g + param * self.weight_decay
        new_slots = {}
        if self.momentum != 0:
            buf = slots["momentum"] * self.momentum
            if self.dampening == 0:
                buf = buf + g
            else:  # PyTorch's first step takes the gradient undamped
                buf = F.where(F.eq(step, 1), g, buf + g * (1 - self.dampening))
            new_slots["momentum"] = buf
            g = g + buf * self.momentum if self.nesterov else buf
        return param - g * _like(self.lr, param), new_slots


class Adam(Optimizer):
    """Adam with bias correction, as PyTorch's `Adam`: `weight_decay` adds L2 to the
    gradient; `amsgrad` keeps the maximum second moment.

    >>> import kiln as kn, numpy as np
    >>> with kn.Graph().as_default():
    ...     w = kn.Variable(np.float32(3.0), name="w")
    ...     train_op = kn.optim.Adam(lr=0.1).minimize(w * w)
    ...     _ = kn.Session().run(train_op)
    >>> w.numpy(), [v.name for v in w.graph.variables]
    (array(2.9, dtype=float32), ['w', 'w/step', 'w/adam_exp_avg', 'w/adam_exp_avg_sq'])
    """

    slot_prefix = "adam_"
    decoupled = False

    def __init__(
        self,
        params=None,
        lr=1e-3,
        betas=(0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        amsgrad: bool = False,
    ):
        _check(lr, "learning rate")
        _check(eps, "epsilon value")
        for i, beta in enumerate(betas):
            if not 0.0 <= beta < 1.0:
                raise ValueError(f"Invalid beta parameter at index {i}: {beta}")
        _check(weight_decay, "weight_decay value")
        super().__init__(
            params,
            dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, amsgrad=amsgrad),
        )
        self.slot_names = ("exp_avg", "exp_avg_sq") + (("max_exp_avg_sq",) if amsgrad else ())

    def _update(self, param, grad, slots, step):
        beta1, beta2 = self.betas
        lr = _like(self.lr, param)
        g = grad
        if self.weight_decay != 0:
            if self.decoupled:
                param = param * (1 - lr * self.weight_decay)
            else:
                g = g + param * self.weight_decay
        m = slots["exp_avg"] * beta1 + g * (1 - beta1)
        v = slots["exp_avg_sq"] * beta2 + F.square(g) * (1 - beta2)
        new_slots = {"exp_avg": m, "exp_avg_sq": v}
        if self.amsgrad:
            v = new_slots["max_exp_avg_sq"] = F.maximum(slots["max_exp_avg_sq"], v)
        t = F.cast(step, np.float64)
        bias_correction1 = 1 - beta1**t
        bias_correction2_sqrt = F.sqrt(1 - beta2**t)
        step_size = _like(self.lr / bias_correction1, param)
        denom = F.sqrt(v) / _like(bias_correction2_sqrt, param) + self.eps
        return param - step_size * (m / denom), new_slots


class AdamW(Adam):
    """Adam with decoupled weight decay (`param *= 1 - lr * weight_decay` before the Adam
    step), as PyTorch's `AdamW`.

    >>> import kiln as kn
    >>> kn.optim.AdamW(lr=-1)
    Traceback (most recent call last):
    ...
    ValueError: Invalid learning rate: -1
    """

    slot_prefix = "adamw_"
    decoupled = True

    def __init__(
        self,
        params=None,
        lr=1e-3,
        betas=(0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
        amsgrad: bool = False,
    ):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad)
