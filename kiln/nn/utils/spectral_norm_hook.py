"""Spectral normalization (Miyato et al., 2018) in PyTorch's hook form: `spectral_norm`
divides a module's parameter by its largest singular value, estimated by power iteration on
the buffers `<name>_u` and `<name>_v` (one or more steps before each training-mode forward,
none in eval mode). The parameter itself becomes `<name>_orig`; names, shapes and order are
PyTorch's, so a torch state_dict of a spectrally normed module loads as it is.
"""

from __future__ import annotations

from ... import frontend as F
from ...eager import no_grad
from ...eager.factories import randn
from ...errors import ArgumentError, UsageError, call_error
from ..parameter import Parameter
from .weight_norm_hook import remove_hook

__all__ = ["SpectralNorm", "remove_spectral_norm", "spectral_norm"]

_TRANSPOSED = ("ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d")


def _unit(x, eps: float):
    return F.div(x, F.clip(F.linalg.vector_norm(x), eps, None))


class SpectralNorm:
    """The forward pre-hook that sets `module.<name>` to `<name>_orig / sigma`."""

    def __init__(self, name: str = "weight", n_power_iterations: int = 1, dim: int = 0,
                 eps: float = 1e-12) -> None:  # fmt: skip
        if n_power_iterations <= 0:
            raise ArgumentError(
                "Expected n_power_iterations to be positive, but got "
                f"n_power_iterations={n_power_iterations}"
            )
        self.name, self.dim, self.eps = name, dim, eps
        self.n_power_iterations = n_power_iterations

    def reshape_weight_to_matrix(self, weight):
        """The weight as a (size of `dim`, rest) matrix."""
        if self.dim != 0:
            order = [self.dim, *(d for d in range(weight.ndim) if d != self.dim)]
            weight = F.permute(weight, order)
        return F.reshape(weight, (weight.shape[0], -1))

    def compute_weight(self, module, do_power_iteration: bool):
        weight = getattr(module, self.name + "_orig")
        u = getattr(module, self.name + "_u")
        v = getattr(module, self.name + "_v")
        matrix = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:  # on constants: no gradient flows through the iteration
            fixed = F.stop_gradient(matrix)
            for _ in range(self.n_power_iterations):
                v = _unit(F.mv(F.t(fixed), u), self.eps)
                u = _unit(F.mv(fixed, v), self.eps)
            u, v = F.stop_gradient(u), F.stop_gradient(v)
        sigma = F.dot(u, F.mv(matrix, v))
        out = F.div(weight, sigma)
        if do_power_iteration:  # the buffers keep the new vectors (graphs: tied to `out`)
            module._record_updates(out, {self.name + "_u": u, self.name + "_v": v})
        return out

    def remove(self, module) -> None:
        with no_grad():
            weight = self.compute_weight(module, do_power_iteration=False).detach()
        module.__dict__.pop(self.name, None)
        for suffix in ("_u", "_v"):
            del module._buffers[self.name + suffix]
        del module._parameters[self.name + "_orig"]
        setattr(module, self.name, Parameter(weight))

    def __call__(self, module, inputs) -> None:
        weight = self.compute_weight(module, do_power_iteration=module.training)
        object.__setattr__(module, self.name, weight)

    @staticmethod
    def apply(module, name: str, n_power_iterations: int, dim: int, eps: float):
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, SpectralNorm) and hook.name == name:
                raise call_error(UsageError, "Cannot register two spectral_norm hooks on the "
                                 f"same parameter {name}", "spectral_norm")  # fmt: skip
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters[name]
        with no_grad():
            matrix = fn.reshape_weight_to_matrix(weight.detach())
            h, w = matrix.shape
            u = _unit(randn(h, dtype=weight.dtype), eps)
            v = _unit(randn(w, dtype=weight.dtype), eps)
        del module._parameters[name]
        module.register_parameter(name + "_orig", weight)
        object.__setattr__(module, name, weight.detach().clone())
        module.register_buffer(name + "_u", u)
        module.register_buffer(name + "_v", v)
        module.register_forward_pre_hook(fn)
        return fn


def spectral_norm(module, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: int | None = None):  # fmt: skip
    """Divides `module.<name>` by its spectral norm before every forward call, as PyTorch's
    `torch.nn.utils.spectral_norm` (the hook form): the parameter is kept as `<name>_orig`,
    the power iteration's vectors as the buffers `<name>_u` and `<name>_v`; `dim` defaults
    to 1 for transposed convolutions, else 0. Returns the module.

    >>> import kiln as kn
    >>> m = kn.nn.utils.spectral_norm(kn.nn.Linear(4, 3))
    >>> [n for n, _ in m.named_parameters()], [n for n, _ in m.named_buffers()]
    (['bias', 'weight_orig'], ['weight_u', 'weight_v'])
    >>> for _ in range(30):
    ...     _ = m(kn.ones(1, 4))  # each training call takes one power-iteration step
    >>> round(float(kn.linalg.matrix_norm(m.weight.detach(), 2)), 3)
    1.0
    """
    if dim is None:
        dim = 1 if type(module).__name__ in _TRANSPOSED else 0
    SpectralNorm.apply(module, name, n_power_iterations, dim, eps)
    return module


def remove_spectral_norm(module, name: str = "weight"):
    """Undoes `spectral_norm`: `module.<name>` is one Parameter again (the normalized value).

    >>> import kiln as kn
    >>> m = kn.nn.utils.remove_spectral_norm(kn.nn.utils.spectral_norm(kn.nn.Linear(4, 3)))
    >>> [n for n, _ in m.named_parameters()], [n for n, _ in m.named_buffers()]
    (['bias', 'weight'], [])
    """
    return remove_hook(module, SpectralNorm, name, "spectral_norm")
