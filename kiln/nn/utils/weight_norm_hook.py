"""Weight normalization (Salimans and Kingma, 2016) in PyTorch's hook form: `weight_norm`
splits a module's parameter `w` into a magnitude `w_g` and a direction `w_v`, and
recomputes `w = w_v * (w_g / ||w_v||)` before every forward call; `remove_weight_norm` folds
them back into one Parameter. Parameter names, shapes and order are PyTorch's, so a torch
state_dict of a weight-normed module loads as it is.
"""

from __future__ import annotations

from ... import frontend as F
from ...errors import ArgumentError, UsageError, call_error
from ..parameter import Parameter

__all__ = ["WeightNorm", "remove_weight_norm", "weight_norm"]


def norm_except_dim(v, pow: float = 2, dim: int = 0):  # noqa: A002 -- PyTorch's name
    """The `pow`-norm of `v` over every dim but `dim`, kept as size-1 dims (dim=-1: the
    norm of the whole tensor, a scalar), as PyTorch's `norm_except_dim`.

    >>> import kiln as kn
    >>> norm_except_dim(kn.tensor([[3.0, 4.0], [0.0, 1.0]]), 2, 0).tolist()
    [[5.0], [1.0]]
    """
    if dim == -1:
        return F.linalg.vector_norm(v, pow)
    dim %= v.ndim
    others = tuple(d for d in range(v.ndim) if d != dim)
    return F.linalg.vector_norm(v, pow, others, keepdim=True)


class WeightNorm:
    """The forward pre-hook that recomputes `module.<name>` from `<name>_g` and `<name>_v`."""

    def __init__(self, name: str, dim: int | None) -> None:
        self.name, self.dim = name, -1 if dim is None else dim

    def compute_weight(self, module):
        g = getattr(module, self.name + "_g")
        v = getattr(module, self.name + "_v")
        return F.mul(v, F.div(g, norm_except_dim(v, 2, self.dim)))

    @staticmethod
    def apply(module, name: str, dim: int | None) -> WeightNorm:
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise call_error(UsageError, "Cannot register two weight_norm hooks on the "
                                 f"same parameter {name}", "weight_norm")  # fmt: skip
        fn = WeightNorm(name, dim)
        weight = getattr(module, name).detach()
        del module._parameters[name]
        module.register_parameter(name + "_g", Parameter(norm_except_dim(weight, 2, fn.dim)))
        module.register_parameter(name + "_v", Parameter(weight))
        object.__setattr__(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module) -> None:
        weight = self.compute_weight(module).detach()
        module.__dict__.pop(self.name, None)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight))

    def __call__(self, module, inputs) -> None:
        object.__setattr__(module, self.name, self.compute_weight(module))


def weight_norm(module, name: str = "weight", dim: int | None = 0):
    """Reparametrizes `module.<name>` as `<name>_g * <name>_v / ||<name>_v||` (the norm over
    every dim but `dim`; dim=None: over the whole tensor), as PyTorch's
    `torch.nn.utils.weight_norm`; returns the module.

    >>> import kiln as kn
    >>> m = kn.nn.utils.weight_norm(kn.nn.Linear(3, 2))
    >>> [name for name, _ in m.named_parameters()], tuple(m.weight_g.shape)
    (['bias', 'weight_g', 'weight_v'], (2, 1))
    """
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module, name: str = "weight"):
    """Undoes `weight_norm`: `module.<name>` is one Parameter again (its current value).

    >>> import kiln as kn
    >>> m = kn.nn.utils.remove_weight_norm(kn.nn.utils.weight_norm(kn.nn.Linear(3, 2)))
    >>> [name for name, _ in m.named_parameters()]
    ['bias', 'weight']
    """
    return remove_hook(module, WeightNorm, name, "weight_norm")


def remove_hook(module, kind: type, name: str, what: str):
    """Removes the forward pre-hook of class `kind` on parameter `name` (weight_norm's or
    spectral_norm's), undoing it; ArgumentError naming `what` where there is none."""
    for key, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, kind) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[key]
            return module
    raise call_error(ArgumentError, f"{what} of '{name}' not found in {module}",
                     f"remove_{what}")  # fmt: skip
