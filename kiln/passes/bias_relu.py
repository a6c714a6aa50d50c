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
    if not found:
        return graph
    new: dict = {}

    def rule(node, inputs, copy):
        if id(node) not in found:
            return None
        y, b = found[id(node)]
        return copy.add_node(REGISTRY["bias_relu"], [new[id(y)], new[id(b)]], {}, node.name,
                             node.site, node.out.shape, node.out.dtype).out  # fmt: skip

    result = rebuild(graph, rule, new)
    return rebuild(_live(result))


def _is_bias(y, b, total) -> bool:
    if y.dtype.kind != "f" or not (y.dtype == b.dtype == total.dtype) or y.ndim < 2:
        return False
    return tuple(y.shape) == tuple(total.shape) and tuple(b.shape) == tuple(y.shape[-1:])


def _live(graph):
    from types import SimpleNamespace

    from .program import live_nodes

    return SimpleNamespace(nodes=live_nodes(graph), inputs=graph.inputs, outputs=graph.outputs,
                           updates=graph.updates, source=graph.source)  # fmt: skip
