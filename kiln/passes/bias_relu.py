"""`fuse_bias_relu`: `relu(y + b)` with a bias `b` along the last axis as one `bias_relu` node
(kiln/ops/epilogue.py), where the sum is read by the relu alone: one pass over the layer's
matrix product instead of two, with the unfused bits."""

from __future__ import annotations

from ..graph.core import Graph
from ..graph.opdef import REGISTRY
from .program import rebuild


def fuse_bias_relu(graph: Graph) -> Graph:
    """A copy of the program graph `graph` with each `relu(y + b)` (floats of one dtype, `b`
    of shape `y.shape[-1:]`, the sum read nowhere else) as `bias_relu(y, b)`; `graph` itself
    when it holds none.

    >>> import kiln as kn, numpy as np
    >>> from kiln.passes import extract
    >>> with kn.Graph().as_default():
    ...     x = kn.placeholder(kn.float32, (4, 3), name="x")
    ...     b = kn.Variable(np.zeros(3, np.float32), name="b")
    ...     y = kn.relu(x + b)
    >>> [n.op.name for n in fuse_bias_relu(extract([y], [x], {})).nodes]
    ['placeholder', 'variable', 'bias_relu']
    """
    readers: dict = {}
    for n in graph.nodes:
        for i in n.inputs:
            readers[id(i)] = readers.get(id(i), 0) + 1
    for s in (*graph.outputs, *graph.updates.values()):
        readers[id(s)] = readers.get(id(s), 0) + 1
    found = {}  # id(relu node) -> (y, b)
    for node in graph.nodes:
        if node.op.name != "relu":
            continue
        total = node.inputs[0]
        add = total.node
        if add.op.name != "add" or readers.get(id(total)) != 1:
            continue
        for y, b in (add.inputs, add.inputs[::-1]):
            if _is_bias(y, b, total):
                found[id(node)] = (y, b)
                break
    return _replace(graph, {k: ("bias_relu", v, {}) for k, v in found.items()})


def _replace(graph, found: dict) -> Graph:
    """`graph` with each node in `found` (by id: (op name, inputs, attrs)) made that op of
    those inputs, of the node's name, site, shape and dtype; what it no longer reads goes."""
    if not found:
        return graph
    new: dict = {}

    def rule(node, inputs, copy):
        if id(node) not in found:
            return None
        op, args, attrs = found[id(node)]
        return copy.add_node(REGISTRY[op], [new[id(a)] for a in args], attrs, node.name,
                             node.site, node.out.shape, node.out.dtype).out  # fmt: skip

    return rebuild(_live(rebuild(graph, rule, new)))


def _is_bias(y, b, total) -> bool:
    if y.dtype.kind != "f" or not (y.dtype == b.dtype == total.dtype) or y.ndim < 2:
        return False
    return tuple(y.shape) == tuple(total.shape) and tuple(b.shape) == tuple(y.shape[-1:])


def _live(graph):
    from types import SimpleNamespace

    from .program import live_nodes

    return SimpleNamespace(nodes=live_nodes(graph), inputs=graph.inputs, outputs=graph.outputs,
                           updates=graph.updates, source=graph.source)  # fmt: skip


def fuse_relu_grad_bias(graph: Graph) -> Graph:
    """A copy of the program graph `graph` where each `g = relu_grad(ct, y)` of static 2-D
    matrices whose sum over the rows is taken (`reduce_sum(g, axes=(0,))`: a bias's gradient)
    is one `relu_grad_bias(ct, y)` node, both read through row views of its [N + 1, M]
    result (`rows`): one pass over the cotangent instead of two; `graph` itself when it holds
    none.
    (The bias's gradient, reshaped to the bias's shape as autodiff does, is then a copy of
    the row in a buffer of its own: the packed buffer dies after the gradient's last GEMM,
    not at the bias's update, which a memory-minded order may put at the end.)

    >>> import kiln as kn, numpy as np
    >>> from kiln.passes import extract
    >>> with kn.Graph().as_default():
    ...     ct = kn.placeholder(kn.float32, (4, 3), name="ct")
    ...     y = kn.placeholder(kn.float32, (4, 3), name="y")
    ...     g = kn.ops.bind(kn.ops.REGISTRY["relu_grad"], ct, y)
    ...     gb = kn.sum(g, axis=0, keepdims=True).reshape(3)
    >>> [n.op.name for n in fuse_relu_grad_bias(extract([g, gb], [ct, y], {})).nodes]
    ['placeholder', 'placeholder', 'relu_grad_bias', 'rows', 'rows', 'reshape']
    """
    sums = {}  # id(relu_grad node) -> the reduce_sum node reading it
    for node in graph.nodes:
        if node.op.name != "reduce_sum" or node.attrs["axes"] != (0,):
            continue
        grad = node.inputs[0].node
        if grad.op.name == "relu_grad" and id(grad) not in sums and _packable(grad):
            sums[id(grad)] = node
    if not sums:
        return graph
    new: dict = {}
    packed: dict = {}  # id(reduce_sum node) -> the packed value in the copy

    def rule(node, inputs, copy):
        if id(node) in sums:
            n, m = node.out.shape
            p = copy.add_node(REGISTRY["relu_grad_bias"], inputs, {}, f"{node.name}_bias",
                              node.site, (n + 1, m), node.out.dtype).out  # fmt: skip
            packed[id(sums[id(node)])] = p
            return _rows(copy, p, 0, n, node, node.out.shape)
        p = packed.get(id(node))
        if p is None:
            return None
        n = p.shape[0] - 1
        total = _rows(copy, p, n, n + 1, node, (1, p.shape[1]))
        if node.attrs["keepdims"]:
            return total
        return copy.add_node(REGISTRY["reshape"], [total], {"shape": tuple(node.out.shape)},
                             node.name, node.site, node.out.shape, node.out.dtype).out  # fmt: skip

    return rebuild(graph, rule, new)


def _packable(grad) -> bool:
    ct, y = grad.inputs
    shape = tuple(grad.out.shape)
    if len(shape) != 2 or not all(isinstance(d, int) for d in shape):
        return False  # static N: the rows' views are slices of known bounds
    return (
        tuple(ct.shape) == tuple(y.shape) == shape
        and ct.dtype == y.dtype == grad.out.dtype
        and ct.dtype.kind == "f"
    )


def _rows(copy, packed, start, stop, node, shape):
    """A view of rows of the packed [N + 1, M] value, standing for `node`."""
    return copy.add_node(REGISTRY["rows"], [packed], {"start": start, "stop": stop}, node.name,
                         node.site, shape, packed.dtype).out  # fmt: skip


def fuse_bias_update(graph: Graph) -> Graph:
    """A copy of the program graph `graph` where each `x - c * sum(g, axis=0)` (also `+`,
    without `c`, with the sum's kept dim reshaped away: a bias's gradient step; `g` a float
    matrix [N, M], `x` of shape [M] and g's dtype, `c` a constant scalar, every value in
    between read there alone) is one `add_colsum(x, g, alpha=∓c)` node: one pass over `g`
    and one kernel call instead of three or four, written into the bias's storage when it is
    the bias's update; `graph` itself when it holds none.

    >>> import kiln as kn, numpy as np
    >>> from kiln.passes import extract
    >>> with kn.Graph().as_default():
    ...     g = kn.placeholder(kn.float32, (4, 3), name="g")
    ...     b = kn.Variable(np.zeros(3, np.float32), name="b")
    ...     step = b - 0.5 * kn.sum(g, axis=0)
    >>> [n.op.name for n in fuse_bias_update(extract([step], [g], {})).nodes]
    ['placeholder', 'variable', 'add_colsum']
    """
    from .gemm import _scalar_constant, _sole_reader

    sole = _sole_reader(graph)
    found = {}  # id(add/sub node) -> (x, g, alpha)
    for node in graph.nodes:
        if node.op.name not in ("add", "sub") or node.out.ndim != 1:
            continue
        pairs = [(0, 1)] if node.op.name == "sub" else [(0, 1), (1, 0)]
        for xi, si in pairs:
            x, scaled = node.inputs[xi], node.inputs[si]
            hit = _scaled_colsum(scaled, sole, _scalar_constant)
            if hit is None or not (x.dtype == node.out.dtype == hit[1].dtype):
                continue
            if tuple(x.shape) != tuple(node.out.shape) or x.dtype.kind != "f":
                continue
            c, g = hit
            found[id(node)] = ("add_colsum", (x, g), {"alpha": -c if node.op.name == "sub" else c})
            break
    return _replace(graph, found)


def _scaled_colsum(s, sole, constant):
    """(c, g) where `s` is `sum(g, axis=0)` (maybe kept and reshaped), or that times a
    constant scalar `c` of its dtype, each value read only here; else None."""
    if not sole(s):
        return None
    c = 1.0
    if s.node.op.name == "mul":
        for k, v in (s.node.inputs, s.node.inputs[::-1]):
            value = constant(k)
            if value is not None and k.dtype == s.dtype and tuple(v.shape) == tuple(s.shape):
                c, s = value, v
                break
        else:
            return None
        if not sole(s):
            return None
    if s.node.op.name == "reshape":
        kept = s.node.inputs[0]
        if not sole(kept) or tuple(kept.shape) != (1, *s.shape):
            return None
        s = kept
    node = s.node
    if node.op.name != "reduce_sum" or node.attrs["axes"] != (0,):
        return None
    g = node.inputs[0]
    if g.ndim != 2 or g.dtype != s.dtype or g.dtype.kind != "f":
        return None
    if tuple(g.shape[1:]) != tuple(s.shape[-1:]):
        return None
    return c, g
