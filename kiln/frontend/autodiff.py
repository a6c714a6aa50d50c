"""Symbolic differentiation: `grad`, `jacobian`, `hessian`, `stop_gradient`."""

from __future__ import annotations

from ..eager.tensor import Tensor
from ..errors import GraphError, ShapeError
from ..graph.core import Symbol
from ..passes.differentiate import differentiate
from .core import call, lift
from .shape import reshape, stack

__all__ = ["grad", "jacobian", "hessian", "stop_gradient"]  # kn.checkpoint: kiln/eager


_EAGER = {
    "grad": "kn.autograd.grad(outputs, inputs) (or loss.backward() and x.grad)",
    "jacobian": "kn.autograd.functional.jacobian(fn, x)",
    "hessian": "kn.autograd.functional.hessian(fn, x)",
}


def _refuse_eager(fn_name: str, *values) -> None:
    """kn.grad/jacobian/hessian differentiate graphs; eager Tensors are told where to go."""
    for value in values:
        items = value if isinstance(value, (list, tuple)) else [value]
        if any(isinstance(v, Tensor) for v in items):
            raise TypeError(
                f"kn.{fn_name} differentiates graph Symbols (graph mode and kn.compile), but got "
                f"an eager Tensor; for eager Tensors use {_EAGER[fn_name]}"
            )


def _symbols(values, what) -> list:
    single = isinstance(values, Symbol)
    values = [values] if single else list(values)
    for v in values:
        if not isinstance(v, Symbol):
            raise GraphError(f"{what} must be Symbols, got {type(v).__name__}")
    return values


def grad(ys, xs, grad_ys=None, disconnected: str = "raise") -> list:
    """Gradients of `ys` (summed, each weighted by its `grad_ys`) with respect to each x.

    The result is a list of Symbols in the same graph; gradients of gradients work.

    >>> import kiln as kn, numpy as np
    >>> with kn.Graph().as_default():
    ...     x = kn.placeholder(kn.float64, (), name="x")
    ...     dx, = kn.grad(x ** 3, [x])
    ...     f = kn.function([x], dx)
    >>> f(np.float64(3.0))
    array(27.)
    """
    _refuse_eager("grad", ys, xs)
    ys = _symbols(ys, "ys")
    xs = _symbols(xs, "xs")
    if grad_ys is not None and not isinstance(grad_ys, (list, tuple)):
        grad_ys = [grad_ys]
    return differentiate(ys, xs, grad_ys, disconnected)


def checkpoint_graph(fn, *args, **kwargs):
    """`fn(*args)` built into the graph as a kn.checkpoint region: `kn.grad` recomputes the
    values of its nodes in the backward pass instead of keeping them from the forward pass
    (kiln/passes/differentiate.py), so only the region's inputs cross between the passes.

    >>> import kiln as kn, numpy as np
    >>> with kn.Graph().as_default():
    ...     x = kn.placeholder(kn.float64, (2,), name="x")
    ...     y = kn.sum(checkpoint_graph(lambda v: kn.tanh(v) * 2.0, x))
    ...     dx, = kn.grad(y, [x])
    ...     f = kn.function([x], dx)
    >>> np.allclose(f(np.array([0.0, 1.0])), 2 * (1 - np.tanh([0.0, 1.0]) ** 2))
    True
    """
    graph = next(a.graph for a in args if isinstance(a, Symbol))
    start = len(graph.nodes)
    out = fn(*args, **kwargs)
    graph.checkpoints.append(frozenset(id(n) for n in graph.nodes[start:]))
    return out


def stop_gradient(x):
    """`x`, through which no gradient flows.

    >>> import kiln as kn, numpy as np
    >>> kn.stop_gradient(np.float32(2.0))
    array(2., dtype=float32)
    """
    (x,) = lift(x)
    return call("stop_gradient", x)


def jacobian(y, x):
    """d y / d x as a Symbol of shape `y.shape + x.shape` (one backward pass per element of y).

    >>> import kiln as kn, numpy as np
    >>> with kn.Graph().as_default():
    ...     x = kn.placeholder(kn.float64, (2,), name="x")
    ...     y = kn.stack([x[0] ** 2 + x[1], x[1] ** 3 * x[0]])
    ...     f = kn.function([x], kn.jacobian(y, x))
    >>> f(np.array([1.0, 2.0]))
    array([[ 2.,  1.],
           [ 8., 12.]])
    """
    _refuse_eager("jacobian", y, x)
    size = y.size
    if not isinstance(size, int):
        raise ShapeError(f"jacobian needs a static shape for '{y.name}', got {y.shape}")
    flat = reshape(y, (size,))
    rows = [grad(flat[i], [x], disconnected="zero")[0] for i in range(size)]
    if not rows:
        raise ShapeError(f"jacobian of '{y.name}' with no elements (shape {y.shape})")
    return reshape(stack(rows), (*y.shape, *x.shape))


def hessian(loss, x):
    """Second derivatives of a scalar `loss`: `jacobian(grad(loss, x), x)`.

    >>> import kiln as kn, numpy as np
    >>> with kn.Graph().as_default():
    ...     x = kn.placeholder(kn.float64, (2,), name="x")
    ...     f = kn.function([x], kn.hessian(x[0] ** 2 * x[1], x))
    >>> f(np.array([3.0, 5.0]))
    array([[10.,  6.],
           [ 6.,  0.]])
    """
    _refuse_eager("hessian", loss, x)
    (g,) = grad(loss, [x])
    return jacobian(g, x)
