"""The eager tape's entry points, PyTorch's `torch.autograd.backward` and `grad`: the roots
and their seeds checked, then one propagation (kiln/eager/autograd.py `_run`). `grad` of graph
values (under kn.compile, in graph mode) is symbolic differentiation (`SYMBOLIC_GRAD`)."""

from __future__ import annotations

import warnings

import numpy as np

from ..errors import ArgumentError, ArgumentTypeError, AutogradError, node_error
from ..graph.core import user_site
from ..graph.opdef import REGISTRY
from ..ops.core import bind
from ..runtime.backend import get_backend
from .autograd import _run
from .sparse_compressed import SparseCompressedTensor
from .sparse_compressed import grad_of as compressed_grad
from .tensor import Tensor, check_view, describe, make

__all__ = ["backward", "grad"]


def _roots(tensors, grad_tensors) -> tuple[list, list]:
    tensors = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    if grad_tensors is None:
        grad_tensors = [None] * len(tensors)
    elif isinstance(grad_tensors, Tensor):
        grad_tensors = [grad_tensors]
    if len(grad_tensors) != len(tensors):
        raise node_error(AutogradError,
                         f"got {len(grad_tensors)} gradients for {len(tensors)} tensors",
                         op="backward", site=user_site(), called=True)  # fmt: skip
    seeds = []
    for i, (t, g) in enumerate(zip(tensors, grad_tensors)):
        if not isinstance(t, Tensor):
            raise ArgumentTypeError(f"element {i} of tensors is a {type(t).__name__}, not a Tensor")
        if t._meta is not None:
            check_view(t, t._meta)
        if not t._requires_grad:
            made = ", made in inference_mode" if t._inference else ""
            raise node_error(
                AutogradError,
                f"element {i} of tensors does not require grad and does not have a grad_fn{made}:"
                " was it computed under no_grad, or only from tensors without requires_grad=True?",
                op="backward", site=user_site(), called=True, inputs=[describe(t)],
            )  # fmt: skip
        seeds.append(_seed(i, t, g))
    return tensors, seeds


def _seed(i: int, t: Tensor, g) -> Tensor:
    if g is None:
        if t.dtype.kind == "c":
            raise node_error(
                AutogradError, "grad can be implicitly created only for real scalar outputs",
                op="backward", site=user_site(), called=True, inputs=[describe(t)],
            )  # fmt: skip
        if t._data.size != 1:
            made = (
                f"the output of {t.grad_fn.op.name} at {t.grad_fn.site}" if t.grad_fn else "a leaf"
            )
            raise node_error(
                AutogradError,
                f"grad can be implicitly created only for scalar outputs (element {i} is {made}); "
                "pass gradient= (a tensor of its shape)",
                op="backward", site=user_site(), called=True, inputs=[describe(t)],
            )  # fmt: skip
        if t._device == "cpu":  # NOTE: every backward() of a loss: NumPy's ones, directly
            data = t._data
            return make(np.ones(data.shape, data.dtype))
        return make(get_backend(t._device).activate().ones(t.shape, t.dtype), t._device)
    if not isinstance(g, Tensor):
        g = make(get_backend(t._device).to_device(np.asarray(g, dtype=t.dtype)), t._device)
    if g.shape != t.shape:
        raise node_error(
            AutogradError,
            f"Mismatch in shape: grad_output[{i}] has a shape of {list(g.shape)} and "
            f"output[{i}] has a shape of {list(t.shape)}",
            op="backward", site=user_site(), called=True, inputs=[describe(t), describe(g)],
        )  # fmt: skip
    return g if g.dtype == t.dtype else bind(REGISTRY["cast"], g, dtype=t.dtype)


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph: bool = False,
             inputs=None) -> None:  # fmt: skip
    """Accumulates the gradients of `tensors` (weighted by `grad_tensors`) into the leaves'
    `.grad` (with `inputs`, into theirs alone, leaves or not); the saved values are freed
    unless `retain_graph` (default: `create_graph`).

    >>> import kiln as kn
    >>> x = kn.tensor(2.0, requires_grad=True)
    >>> y = kn.tensor(3.0, requires_grad=True)
    >>> kn.autograd.backward([x * x * y], inputs=[x])
    >>> x.grad, y.grad
    (tensor(12.), None)
    """
    roots, seeds = _roots(tensors, grad_tensors)
    retain_graph = create_graph if retain_graph is None else retain_graph
    if inputs is None:
        _run(roots, seeds, retain_graph, create_graph)
        return
    from .autograd import _accumulate, _finish_leaf

    inputs = [inputs] if isinstance(inputs, Tensor) else list(inputs)
    if not inputs:
        raise node_error(AutogradError, "`inputs` argument to `backward()` cannot be empty.",
                         op="backward", site=user_site(), called=True)  # fmt: skip
    _check_differentiable(inputs, "backward")
    found = _run(roots, seeds, retain_graph, create_graph, targets=inputs)
    for x in inputs:
        g = found[id(x)]
        if g is None:  # not reached: its .grad stays, as PyTorch's
            continue
        if x.grad_fn is None:  # a leaf: its hooks, then .grad, then its post-accumulate hooks
            _finish_leaf(x, g, create_graph)
        else:  # an intermediate value (its hooks ran in the propagation)
            _accumulate(x, g, create_graph)


# `grad` of graph values (Symbols: in a kn.compile trace or graph mode), by symbolic
# differentiation: installed by kiln/optim/graph_step.py, which does `backward()` of Symbols
SYMBOLIC_GRAD = None


def _graph_values(outputs) -> bool:
    values = outputs if isinstance(outputs, (list, tuple)) else (outputs,)
    return any(not isinstance(v, Tensor) and hasattr(v, "graph") for v in values)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph: bool = False,
         only_inputs: bool = True, allow_unused=None, is_grads_batched: bool = False,
         materialize_grads: bool = False) -> tuple:  # fmt: skip
    """The gradients of `outputs` with respect to each of `inputs`, without touching `.grad`
    (PyTorch's `torch.autograd.grad`). `create_graph=True` records them for higher orders;
    `materialize_grads=True` gives zeros for an unused input; `is_grads_batched=True` reads
    the first dim of each of `grad_outputs` as a batch of them (one product per row, stacked);
    `only_inputs` is PyTorch's deprecated flag (ignored, as there).

    >>> import kiln as kn
    >>> x = kn.tensor(3.0, requires_grad=True)
    >>> (dx,) = kn.autograd.grad(x ** 3, x, create_graph=True)
    >>> (d2x,) = kn.autograd.grad(dx, x)
    >>> dx.item(), d2x.item()
    (27.0, 18.0)
    """
    if not only_inputs:
        warnings.warn(
            "only_inputs argument is deprecated and is ignored now (defaults to True). To "
            "accumulate gradient for other parts of the graph, please use "
            "torch.autograd.backward.",
            FutureWarning,
            stacklevel=2,
        )
    if materialize_grads:
        if allow_unused is False:
            raise ArgumentError(
                "Expected allow_unused to be True or not passed when materialize_grads=True, "
                "but got: allow_unused=False."
            )
        single = isinstance(inputs, Tensor)
        found = grad(outputs, inputs, grad_outputs, retain_graph, create_graph,
                     allow_unused=True, is_grads_batched=is_grads_batched)  # fmt: skip
        inputs = [inputs] if single else list(inputs)
        return tuple(
            _zeros_for(x, g, grad_outputs, is_grads_batched) for x, g in zip(inputs, found)
        )
    if is_grads_batched:
        return _batched_grad(outputs, inputs, grad_outputs, retain_graph, create_graph,
                             bool(allow_unused))  # fmt: skip
    allow_unused = bool(allow_unused)
    if SYMBOLIC_GRAD is not None and _graph_values(outputs):  # under kn.compile, graph mode
        return SYMBOLIC_GRAD(outputs, inputs, grad_outputs, allow_unused, create_graph)
    roots, seeds = _roots(outputs, grad_outputs)
    inputs = [inputs] if isinstance(inputs, Tensor) else list(inputs)
    _check_differentiable(inputs, "autograd.grad")
    retain_graph = create_graph if retain_graph is None else retain_graph
    found = _run(roots, seeds, retain_graph, create_graph, targets=inputs)
    results = []
    for i, x in enumerate(inputs):
        g = found[id(x)]
        if g is None and not allow_unused:
            raise node_error(
                AutogradError,
                "One of the differentiated Tensors appears to not have been used in the graph. "
                f"Set allow_unused=True if this is the desired behavior (input {i})",
                op="autograd.grad", site=user_site(), called=True, inputs=[describe(x)],
            )  # fmt: skip
        if type(x) is SparseCompressedTensor:  # its values' gradient: on its pattern
            g = compressed_grad(x, g)
        results.append(g)
    return tuple(results)


def _zeros_for(x, g, grad_outputs, batched):
    """`g`, or zeros of `x`'s shape (with the batch dim in front when `batched`) where None."""
    if g is not None:
        return g
    from .factories import zeros  # NOTE: lazy, as the module's other factory uses

    batch = ()
    if batched:
        first = grad_outputs if isinstance(grad_outputs, Tensor) else grad_outputs[0]
        batch = (first.shape[0],)
    return zeros((*batch, *x.shape), dtype=x.dtype, device=x.device)


def _batched_grad(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused):
    """`grad` once per row of the first dim of `grad_outputs`, stacked: PyTorch's
    `is_grads_batched=True` (which vmaps over that dim)."""
    from ..frontend.torch_shape import stack  # NOTE: lazy: the frontend builds on eager

    if grad_outputs is None:
        raise ArgumentError("autograd.grad: is_grads_batched=True needs grad_outputs")
    single_out = isinstance(outputs, Tensor)
    seeds = [grad_outputs] if isinstance(grad_outputs, Tensor) else list(grad_outputs)
    rows = {s.shape[0] for s in seeds if s is not None}
    if len(rows) != 1:
        raise ArgumentError(f"autograd.grad: is_grads_batched=True needs grad_outputs of one "
                            f"batch size (a first dim), got sizes {sorted(rows)}")  # fmt: skip
    (n,) = rows
    per_row = []
    for i in range(n):
        seed = [None if s is None else s[i] for s in seeds]
        keep = retain_graph if i == n - 1 else True
        per_row.append(grad(outputs, inputs, seed[0] if single_out else seed, keep,
                            create_graph, allow_unused=allow_unused))  # fmt: skip
    return tuple(None if col[0] is None else stack(list(col)) for col in zip(*per_row, strict=True))


def _check_differentiable(inputs, op: str) -> None:
    for i, x in enumerate(inputs):
        if not isinstance(x, Tensor) or not x._requires_grad:
            raise node_error(
                AutogradError,
                f"One of the differentiated Tensors does not require grad (input {i})",
                op=op, site=user_site(), called=True,
                inputs=[describe(x) if isinstance(x, Tensor) else type(x).__name__],
            )  # fmt: skip
