"""`kn.nn.utils`: PyTorch's gradient clipping, of eager `.grad`s, and inside `kn.compile` or
graph mode of the gradients `loss.backward()` left there (kiln/optim/graph_step.py); the
parameters as one vector and back; `skip_init`; `parametrize` and `parametrizations`."""

from __future__ import annotations

import math
import warnings

from ... import dtypes as dt
from ... import frontend as F
from ...eager import Tensor, no_grad
from ...eager.factories import tensor as _tensor
from ...errors import ArgumentTypeError, NumericsError, ShapeError, UsageError, call_error
from . import parametrizations, parametrize, rnn, stateless
from .fusion import (
    fuse_conv_bn_eval,
    fuse_conv_bn_weights,
    fuse_linear_bn_eval,
    fuse_linear_bn_weights,
)
from .init import skip_init
from .spectral_norm_hook import remove_spectral_norm, spectral_norm
from .weight_norm_hook import remove_weight_norm, weight_norm

__all__ = [
    "clip_grad_norm_",
    "clip_grad_value_",
    "clip_grads_with_norm_",
    "fuse_conv_bn_eval",
    "fuse_conv_bn_weights",
    "fuse_linear_bn_eval",
    "fuse_linear_bn_weights",
    "get_total_norm",
    "parameters_to_vector",
    "remove_spectral_norm",
    "remove_weight_norm",
    "skip_init",
    "spectral_norm",
    "vector_to_parameters",
    "weight_norm",
]


def _listed(parameters) -> list:
    """The parameters as a list, read once: a generator (`model.parameters()`) is looked
    at twice, for graph gradients and for eager ones."""
    return [parameters] if isinstance(parameters, Tensor) else list(parameters)


def _grads(parameters) -> list:
    return [p.grad for p in parameters if p.grad is not None]


def _graph_entries(parameters) -> list:
    """The [Variable, gradient] entries `loss.backward()` left in the default graph for
    `parameters` (Parameters), which clipping there replaces."""
    from ...graph.core import get_default_graph
    from ...optim.graph_step import _PENDING, enter, variable_of

    graph = get_default_graph()
    variables = [variable_of(p, graph) if hasattr(p, "variable_in") else p for p in parameters]
    enter(variables)  # in a kn.compile trace: the `.grad`s the call starts with
    pending = _PENDING.get(graph)
    if not pending:
        return []
    return [pending[id(v)] for v in variables if v is not None and id(v) in pending]


def _tracing() -> bool:
    from ...graph.core import get_default_graph
    from ...optim.graph_step import traces_grads

    return traces_grads(get_default_graph())


def _total_norm(grads, norm_type: float):
    """As PyTorch's: the `norm_type`-norm of each gradient, then the same norm of those
    norms (inf: the largest |g|, -inf: the smallest, 0: the count of nonzero norms)."""
    norms = [_vector_norm(g, norm_type) for g in grads]
    return _vector_norm(F.stack(norms), norm_type)


def _vector_norm(x, norm_type: float):
    """`vector_norm` of a float16 or bfloat16 `x` summed in float32, rounded back once, as
    PyTorch's kernel accumulates (float16 gradients of norm above 256 overflow otherwise)."""
    if x.dtype in (dt.float16, dt.bfloat16):
        return F.cast(F.linalg.vector_norm(F.cast(x, dt.float32), norm_type), x.dtype)
    return F.linalg.vector_norm(x, norm_type)


def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False, foreach=None) -> Tensor:  # fmt: skip
    """Scales the `.grad` of `parameters` in place so that their joint `norm_type`-norm is
    at most `max_norm` (by `max_norm / (norm + 1e-6)`, never above 1); returns the norm
    before clipping, as PyTorch's.

    >>> import kiln as kn
    >>> w = kn.tensor([3.0, 4.0], requires_grad=True)
    >>> (w * w).sum().backward()                      # grad (6, 8): norm 10
    >>> kn.nn.utils.clip_grad_norm_([w], max_norm=5.0)
    tensor(10.)
    >>> w.grad
    tensor([3.0000, 4.0000])
    """
    norm_type = float(norm_type)
    parameters = _listed(parameters)
    entries = _graph_entries(parameters)
    if entries:  # inside kn.compile or graph mode: the graph's gradients, as nodes
        if error_if_nonfinite:
            raise call_error(UsageError, "error_if_nonfinite=True needs the norm's value, which "
                             "a graph has only when it runs: check the returned norm instead",
                             "clip_grad_norm_")  # fmt: skip
        total = _total_norm([e[1] for e in entries], norm_type)
        coef = F.clip(F.div(max_norm, F.add(total, 1e-6)), None, 1.0)
        for entry in entries:
            entry[1] = F.mul(entry[1], F.cast(coef, entry[1].dtype))
        return total
    grads = _grads(parameters)
    if not grads:
        return _tensor(0.0)
    with no_grad():
        total = _total_norm(grads, norm_type)
        if error_if_nonfinite and not math.isfinite(total.item()):
            raise call_error(
                NumericsError,
                f"The total norm of order {norm_type} for gradients from `parameters` is "
                "non-finite, so it cannot be clipped. To disable this error and scale the "
                "gradients by the non-finite norm anyway, set `error_if_nonfinite=False`",
                "clip_grad_norm_",
            )
        coef = F.clip(F.div(max_norm, F.add(total, 1e-6)), None, 1.0)
        for g in grads:
            g.mul_(F.cast(coef, g.dtype))
    return total


def get_total_norm(tensors, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                   foreach=None) -> Tensor:  # fmt: skip
    """The `norm_type`-norm of the norms of `tensors` (gradients, say), as PyTorch's: what
    `clip_grad_norm_` clips by; 0 for no tensors.

    >>> import kiln as kn
    >>> kn.nn.utils.get_total_norm([kn.tensor([3.0]), kn.tensor([4.0])])
    tensor(5.)
    """
    tensors = [t for t in _listed(tensors) if t is not None]
    if not tensors:
        return _tensor(0.0)
    with no_grad():
        total = _total_norm(tensors, float(norm_type))
    if error_if_nonfinite and isinstance(total, Tensor) and not math.isfinite(total.item()):
        raise call_error(
            NumericsError,
            f"The total norm of order {float(norm_type)} for gradients from `parameters` is "
            "non-finite, so it cannot be clipped. To disable this error and scale the "
            "gradients by the non-finite norm anyway, set `error_if_nonfinite=False`",
            "get_total_norm",
        )
    return total


def clip_grads_with_norm_(parameters, max_norm: float, total_norm, foreach=None) -> None:
    """Scales the `.grad` of `parameters` in place by `max_norm / (total_norm + 1e-6)`,
    never above 1: the second half of `clip_grad_norm_`, with the norm given (PyTorch's).

    >>> import kiln as kn
    >>> w = kn.tensor([3.0, 4.0], requires_grad=True)
    >>> (w * w).sum().backward()
    >>> norm = kn.nn.utils.get_total_norm([w.grad])
    >>> kn.nn.utils.clip_grads_with_norm_([w], 5.0, norm); w.grad
    tensor([3.0000, 4.0000])
    """
    parameters = _listed(parameters)
    coef = F.clip(F.div(max_norm, F.add(total_norm, 1e-6)), None, 1.0)
    entries = _graph_entries(parameters)
    if entries:  # inside kn.compile or graph mode: the graph's gradients, as nodes
        for entry in entries:
            entry[1] = F.mul(entry[1], F.cast(coef, entry[1].dtype))
        return
    with no_grad():
        for g in _grads(parameters):
            g.mul_(F.cast(coef, g.dtype))


def clip_grad_norm(parameters, max_norm: float, norm_type: float = 2.0,
                   error_if_nonfinite: bool = False, foreach=None) -> Tensor:  # fmt: skip
    """PyTorch's deprecated name of `clip_grad_norm_`: warns, then clips."""
    warnings.warn(
        "`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
        "`torch.nn.utils.clip_grad_norm_`.",
        FutureWarning,
        stacklevel=2,
    )
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters, clip_value: float, foreach=None) -> None:
    """Clamps every `.grad` of `parameters` into [-clip_value, clip_value], in place.

    >>> import kiln as kn
    >>> w = kn.tensor([3.0, -4.0], requires_grad=True)
    >>> (w * w).sum().backward(); kn.nn.utils.clip_grad_value_([w], 1.5); w.grad
    tensor([ 1.5000, -1.5000])
    """
    clip_value = float(clip_value)
    parameters = _listed(parameters)
    for entry in _graph_entries(parameters):  # inside kn.compile or graph mode
        entry[1] = F.clip(entry[1], -clip_value, clip_value)
    if _tracing():
        return  # kn.compile: the program clips the `.grad`s on each call
    with no_grad():
        for g in _grads(parameters):
            g.clamp_(-clip_value, clip_value)


def parameters_to_vector(parameters) -> Tensor:
    """The parameters flattened and joined, in order, into one vector (differentiable), as
    PyTorch's.

    >>> import kiln as kn
    >>> a, b = kn.tensor([[1.0, 2.0]]), kn.tensor([3.0])
    >>> kn.nn.utils.parameters_to_vector([a, b])
    tensor([1., 2., 3.])
    """
    return F.cat([p.reshape(-1) for p in _listed(parameters)])


def vector_to_parameters(vec, parameters) -> None:
    """Sets the parameters, in order, to consecutive slices of `vec` (each its `numel()`
    elements; the rest of `vec` is left unused), as PyTorch's. The values are copied: the
    parameters do not share `vec`'s memory, as PyTorch's do after `param.data = ...`.

    >>> import kiln as kn
    >>> a, b = kn.zeros(1, 2), kn.zeros(1)
    >>> kn.nn.utils.vector_to_parameters(kn.tensor([1.0, 2.0, 3.0]), [a, b]); a, b
    (tensor([[1., 2.]]), tensor([3.]))
    """
    if not isinstance(vec, Tensor):
        raise call_error(
            ArgumentTypeError, f"expected a kn.Tensor, but got: {type(vec).__name__}",
            "vector_to_parameters",
        )  # fmt: skip
    parameters = _listed(parameters)
    sizes = [p.numel() for p in parameters]
    if vec.ndim != 1 or sum(sizes) > vec.shape[0]:
        raise call_error(
            ShapeError,
            f"the vector is {list(vec.shape)}; the parameters need a 1-D vector of at least "
            f"{sum(sizes)} elements ({len(parameters)} parameters)",
            "vector_to_parameters",
        )
    offset = 0
    with no_grad():
        for p, n in zip(parameters, sizes):
            p.copy_(vec.detach()[offset : offset + n].reshape(p.shape))
            offset += n
