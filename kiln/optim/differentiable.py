"""PyTorch's `differentiable=True` of an optimizer: its step runs with grad enabled, so autograd
records it. kiln's steps write the parameters outside autograd; what that flag changes where
kiln can honour it:

- the optimizer takes non-leaf tensors (PyTorch's check "can't optimize a non-leaf Tensor" is
  off with the flag);
- a step of a parameter that needs no gradient is the usual one, the same numbers;
- a step of a leaf that requires grad raises PyTorch's RuntimeError (an in-place change of a
  leaf that requires grad, recorded: PyTorch refuses it as well);
- a step of a tensor with a history (a non-leaf that requires grad), which PyTorch records so
  that a gradient flows back through the update, raises NotImplementedError rather than give
  gradients that silently miss the step.
"""

from __future__ import annotations

from ..errors import AutogradError, UnrecordedStepError
from ..graph.core import get_default_graph
from ..nn.module import Parameter
from . import graph_step

__all__ = ["check_step", "check_traced_step"]


def check_step(name: str, t) -> None:
    """Refuses the step of parameter `t` by an optimizer `name` made with
    `differentiable=True` where PyTorch would record it (see the module's docstring).

    >>> import kiln as kn
    >>> w = kn.tensor([1.0, 2.0])
    >>> opt = kn.optim.SGD([w], lr=0.5, differentiable=True)
    >>> w.grad = kn.tensor([1.0, 1.0]); opt.step(); w
    tensor([0.5000, 1.5000])
    """
    if not t.requires_grad:
        return
    if t.is_leaf:
        raise AutogradError(
            f"{name}.step(differentiable=True): a leaf Variable that requires grad is being "
            "used in an in-place operation."
        )
    raise UnrecordedStepError(
        f"{name}.step(differentiable=True) of a tensor with a history: kiln's optimizer steps "
        "are not recorded by autograd, so no gradient can flow back through them; compute the "
        "update with tensor ops (or kn.func) to differentiate it"
    )


def check_traced_step(opt, grads) -> None:
    """`check_step` of the Parameters a kn.compile trace steps (`grads`: [(gradient,
    Variable)]) in `opt`'s groups made with `differentiable=True`: each is a leaf that
    requires grad, which PyTorch's step refuses, compiled or not."""
    groups = [g for g in opt.param_groups if g.get("differentiable")]
    if not groups:
        return
    stepped, graph = {id(v) for _, v in grads}, get_default_graph()
    for group in groups:
        for p in group["params"]:
            if isinstance(p, Parameter) and id(graph_step.variable_of(p, graph)) in stepped:
                check_step(type(opt).__name__, p)
