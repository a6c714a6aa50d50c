"""`to_networkx`: a kiln program as a `networkx.MultiDiGraph`, for graph analyses kiln does not
ship (paths, centrality, subgraph matching). networkx is optional (`pip install
'kiln[networkx]'`): no code of kiln's core needs it.
"""

from __future__ import annotations

import numpy as np


def _networkx():
    try:
        import networkx
    except ImportError as e:
        raise ImportError("kn.to_networkx needs networkx: pip install 'kiln[networkx]'") from e
    return networkx


def _dim(d):
    """An int stays an int; a symbolic dim becomes its text (`'batch'`, `'n*2'`)."""
    return d if isinstance(d, int) else str(d)


def to_networkx(obj):
    """The program of `obj` as a `networkx.MultiDiGraph`, one networkx node per kiln node.

    `obj` is what `kn.dump` takes: a Graph (its inputs, or placeholders, and outputs, or unused
    values), a Symbol or a list of them, a Function (the optimized program it runs) or a traced
    function. Nodes are keyed by kiln node name and carry `op` (the op's name), `shape` (a
    tuple: ints, and symbolic dims as text), `dtype` (NumPy's name), `site`, `attrs` (the
    node's attrs as a dict) and `region` (the index of the `kn.checkpoint` region that made
    it, else None). An edge runs from each input's node to the node reading it, with `pos`,
    the operand position (`mul x x` gives two edges, pos 0 and 1). The graph's own dict holds
    `inputs`, `outputs` and `updates` (Variable name -> node name) by node name.

    >>> import kiln as kn
    >>> with kn.Graph().as_default():
    ...     x = kn.placeholder(kn.float32, ("n", 3), name="x")
    ...     y = kn.sum(x * x, axis=1)
    >>> g = kn.to_networkx(y)
    >>> [(n, d["op"], d["shape"], d["dtype"]) for n, d in g.nodes(data=True)]
    [('x', 'placeholder', ('n', 3), 'float32'), ('mul', 'mul', ('n', 3), 'float32'), \
('reduce_sum', 'reduce_sum', ('n',), 'float32')]
    >>> sorted(g.edges(data="pos"))
    [('mul', 'reduce_sum', 0), ('x', 'mul', 0), ('x', 'mul', 1)]
    >>> g.graph["outputs"]
    ['reduce_sum']
    """
    nx = _networkx()
    from ..frontend.dump import _program

    nodes, inputs, outputs, updates = _program(obj)
    graph = next((n.graph for n in nodes), None)
    regions = {}
    for k, ids in enumerate(getattr(graph, "checkpoints", ())):
        regions.update(dict.fromkeys(ids, k))
    result = nx.MultiDiGraph(
        inputs=[s.name for s in inputs],
        outputs=[s.name for s in outputs],
        updates={v.name: s.name for v, s in updates.items()},
    )
    for node in nodes:
        out = node.out
        result.add_node(
            node.name,
            op=node.op.name,
            shape=tuple(_dim(d) for d in out.shape),
            dtype=np.dtype(out.dtype).name,
            site=node.site,
            attrs=dict(node.attrs),
            region=regions.get(id(node)),
        )
    for node in nodes:
        for pos, value in enumerate(node.inputs):
            result.add_edge(value.name, node.name, pos=pos)
    return result
