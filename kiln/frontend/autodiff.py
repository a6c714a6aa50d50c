"""Symbolic differentiation: `grad`, `jacobian`, `hessian`, `stop_gradient`, and the graph
forms of forward mode (`jvp_graph`) and of the batched jacobians."""

from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from .. import shapes as sh
from ..eager.tensor import Tensor
from ..errors import ArgumentTypeError, GraphError, ShapeError
from ..graph.core import Symbol
from ..ops.core import scalar, unbatched_to
from ..passes.differentiate import differentiate
from ..passes.forward import jvp as forward_jvp
from ..passes.vectorize import vectorize
from .core import call, constant, lift
from .shape import reshape

__all__ = ["grad", "jacobian", "hessian", "stop_gradient"]  # kn.checkpoint: kiln/eager


_EAGER = {
    "grad": "kn.autograd.grad(outputs, inputs) (or loss.backward() and x.grad)",
    "jacobian": "kn.autograd.functional.jacobian(fn, x) or kn.jacrev(fn)(x)",
    "hessian": "kn.autograd.functional.hessian(fn, x) or kn.hessian(fn)(x)",
}


def _refuse_eager(fn_name: str, *values) -> None:
    """kn.grad/jacobian/hessian differentiate graphs; eager Tensors are told where to go."""
    for value in values:
        items = value if isinstance(value, (list, tuple)) else [value]
        if any(isinstance(v, Tensor) for v in items):
            raise ArgumentTypeError(
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


_NOT_RECOMPUTED = frozenset({"random", "source", "update"})


def auto_checkpoint(graph, marked, max_regions: int = 256) -> str | None:
    """Splits the forward nodes of `graph` whose values require grad (`marked`: ids of
    values) into contiguous kn.checkpoint regions: the split into k regions of about equal
    bytes whose estimate (the bytes each region reads from outside it, kept for the backward
    pass, plus the largest region, recomputed there) is lowest. Returns what it chose, or
    None (no split helps). Random draws are kept, as in every kn.checkpoint region."""
    # NOTE: only values made from a feed: what is made from Variables alone (a weight's
    # transpose) is no activation, and a region ending on it would wait for its cotangent (a
    # weight gradient) to recompute, keeping that gradient alive through the backward pass.
    fed: set = set()
    for n in graph.nodes:
        if n.op.name == "placeholder" or any(id(i) in fed for i in n.inputs):
            fed.add(id(n.out))
    nodes = [n for n in graph.nodes if id(n.out) in marked and id(n.out) in fed and n.inputs
             and not _NOT_RECOMPUTED & n.op.tags and dt.is_float(n.out.dtype)]  # fmt: skip
    sizes = _new_bytes(graph, nodes)
    if len(nodes) < 2:
        return None
    best = (sum(sizes), None)
    for k in range(2, min(len(nodes), max_regions) + 1):
        chunks = _equal_chunks(sizes, k)
        estimate = _estimate(nodes, sizes, chunks, marked & fed)
        if estimate < best[0]:
            best = (estimate, chunks)
    estimate, chunks = best
    if chunks is None:
        return None
    for a, b in chunks:
        graph.checkpoints.append(frozenset(id(n) for n in nodes[a:b]))
    return f"{len(chunks)} kn.checkpoint regions over {len(nodes)} forward nodes"


def _new_bytes(graph, nodes) -> list[int]:
    """The bytes each of `nodes` adds when recomputed: none for a view, nor for an
    elementwise op that can run in place over an input of its shape and dtype read by it
    alone (the bias add and activation after a matrix product share its buffer)."""
    readers: dict[int, int] = {}
    for n in graph.nodes:
        for i in n.inputs:
            readers[id(i)] = readers.get(id(i), 0) + 1
    sizes = []
    for n in nodes:
        tags = n.op.tags
        shared = "view" in tags or ("elementwise" in tags and any(
            readers.get(id(i)) == 1 and i.shape == n.out.shape and i.dtype == n.out.dtype
            for i in n.inputs))  # fmt: skip
        sizes.append(0 if shared else _static_bytes(n.out))
    return sizes


def _static_bytes(sym) -> int:
    n = 1
    for d in sym.shape:
        if not isinstance(d, int):
            return 0
        n *= d
    return n * sym.dtype.itemsize


def _equal_chunks(sizes, k) -> list:
    total, chunks, start, acc = sum(sizes), [], 0, 0
    for i, size in enumerate(sizes):
        acc += size
        if acc * k >= total * (len(chunks) + 1) and i + 1 < len(sizes):
            chunks.append((start, i + 1))
            start = i + 1
    chunks.append((start, len(sizes)))
    return [c for c in chunks if c[0] < c[1]]


def _estimate(nodes, sizes, chunks, kept) -> int:
    """The bytes the backward pass keeps (what each region reads from outside it that is in
    `kept`) plus the largest region, recomputed there."""
    saved, biggest = 0, 0
    for a, b in chunks:
        inside = {id(n) for n in nodes[a:b]}
        read = {id(i): i for n in nodes[a:b] for i in n.inputs
                if id(i.node) not in inside and id(i) in kept}  # fmt: skip
        saved += sum(_static_bytes(i) for i in read.values())
        biggest = max(biggest, sum(sizes[a:b]))
    return saved + biggest


def stop_gradient(x):
    """`x`, through which no gradient flows.

    >>> import kiln as kn, numpy as np
    >>> kn.stop_gradient(np.float32(2.0))
    array(2., dtype=float32)
    """
    (x,) = lift(x)
    return call("stop_gradient", x)


def _identity(x):
    """The rows of the identity shaped as a batch of `x`s (a constant [n, *x.shape]) and the
    first of them: a value of x's shape to build one pass on, which `vectorize` then runs on
    the whole batch."""
    size = x.size
    if not isinstance(size, int):
        raise ShapeError(f"a jacobian needs a static shape for '{x.name}', got {x.shape}")
    if size == 0:
        raise ShapeError(f"a jacobian of '{x.name}' with no elements (shape {x.shape})")
    eye = np.eye(size, dtype=x.dtype).reshape(size, *x.shape)
    seeds = constant(eye, dtype=x.dtype, name="identity", graph=x.graph)
    return seeds, call("index", seeds, spec=(("int", 0),))


def _batched(values, firsts, seeds):
    """`values` (built from `firsts`) for every seed: [n, *value.shape] each."""
    found = vectorize(values, {id(firsts): seeds})
    n = seeds.shape[0]
    return [unbatched_to(v, n) if b is None else b for v, b in zip(values, found)]


def jvp_graph(ys, xs, tangents, primals: dict | None = None) -> list:
    """The tangent of each y (None where no x reaches it) for the xs moving along `tangents`:
    forward mode, node by node (kiln/passes/forward.py: an op's jvp rule, else its vjp
    transposed in place). `primals`: see `kiln.passes.forward.jvp`."""
    return forward_jvp(ys, xs, tangents, primals)


def jacobian_rev(y, xs) -> list:
    """d y / d x for each x, as `y.shape + x.shape`: one backward pass with a batch of
    cotangents (the rows of the identity), vectorized."""
    seeds, first = _identity(y)
    grads = differentiate([y], xs, [first], disconnected="zero")
    rows = _batched(grads, first, seeds)
    return [reshape(r, (*y.shape, *x.shape)) for r, x in zip(rows, xs)]


def jacobian_fwd(y, xs) -> list:
    """d y / d x for each x, as `y.shape + x.shape`: one forward pass (`jvp_graph`) with a
    batch of tangents (the rows of the identity) per x, vectorized."""
    out = []
    for x in xs:
        seeds, first = _identity(x)
        (jv,) = jvp_graph([y], [x], [first])
        if jv is None:
            jv = call("broadcast_to", scalar(0, y), shape=y.shape)
        (cols,) = _batched([jv], first, seeds)
        cols = reshape(cols, (x.size, sh.size(y.shape)))
        out.append(reshape(call("transpose", cols, perm=(1, 0)), (*y.shape, *x.shape)))
    return out


def jacobian(y, x):
    """d y / d x as a Symbol of shape `y.shape + x.shape`, built batched: one backward pass
    with the rows of the identity as a batch of cotangents, or, when y has more elements
    than x, one forward pass with a batch of tangents (`jacobian_rev`, `jacobian_fwd`).

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
    (y, x) = _symbols(y, "y") + _symbols(x, "x")
    if not isinstance(y.size, int):
        raise ShapeError(f"jacobian needs a static shape for '{y.name}', got {y.shape}")
    if not dt.is_differentiable(y.dtype):
        raise GraphError(f"cannot differentiate '{y.name}' of dtype {y.dtype} ({y.site})")
    with y.graph.name_scope("jacobian"):
        if isinstance(x.size, int) and x.size < y.size:
            return jacobian_fwd(y, [x])[0]
        return jacobian_rev(y, [x])[0]


def hessian(loss, x=None):
    """Second derivatives of a scalar `loss` with respect to `x` (shape `x.shape * 2`),
    forward over reverse: the jacobian of `grad(loss, x)` by a batch of tangents
    (`jacobian_fwd`). Given a function instead, `hessian(f)` is the function of x that gives
    them (eagerly on Tensors too: see `kn.jacfwd`).

    >>> import kiln as kn, numpy as np
    >>> with kn.Graph().as_default():
    ...     x = kn.placeholder(kn.float64, (2,), name="x")
    ...     f = kn.function([x], kn.hessian(x[0] ** 2 * x[1], x))
    >>> f(np.array([3.0, 5.0]))
    array([[10.,  6.],
           [ 6.,  0.]])
    """
    if callable(loss) and not isinstance(loss, Symbol):
        from ..tracing.transforms import hessian_of  # NOTE: upward, at call time only

        return hessian_of(loss)
    _refuse_eager("hessian", loss, x)
    (g,) = grad(loss, [x])
    with g.graph.name_scope("hessian"):
        return jacobian_fwd(g, [x])[0]
