"""Vectorizing part of a graph (`kn.vmap`, the batched jacobians): the nodes between some
values and some outputs are built again, by each op's batching rule (`OpDef.batch`), on
values that carry one extra leading axis, the batch. Other nodes are shared as they are.
"""

from __future__ import annotations

import weakref

from .. import dtypes as dt
from ..errors import GraphError

_POSITIONS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def positions(graph) -> dict:
    """{id(node): its index in `graph.nodes`}, kept per graph and extended with the nodes
    added since the last call (a graph's node list only grows), so asking is linear in the
    new nodes, not in the graph."""
    cached = _POSITIONS.get(graph)
    nodes = graph.nodes
    if cached is None or (cached[1] and nodes[cached[1] - 1] is not cached[2]):
        cached = ({}, 0, None)
    table, count, _ = cached
    for k in range(count, len(nodes)):
        table[id(nodes[k])] = k
    _POSITIONS[graph] = (table, len(nodes), nodes[-1] if nodes else None)
    return table


def ancestors(outputs, stop=frozenset(), since: int = 0) -> list:
    """The nodes `outputs` depend on (theirs included), inputs before users, without walking
    past a value whose id is in `stop`, nor into nodes made before position `since` of the
    graph. Linear in the nodes found."""
    order, seen = [], set()
    where = positions(outputs[0].graph) if since and outputs else None
    for out in outputs:
        stack = [(out.node, False)]
        while stack:
            node, done = stack.pop()
            if done:
                order.append(node)
                continue
            if id(node) in seen or (where is not None and where[id(node)] < since):
                continue
            seen.add(id(node))
            stack.append((node, True))
            if id(node.out) not in stop:
                stack.extend((i.node, False) for i in reversed(node.inputs))
    return order


def vectorize(outputs, batched: dict) -> list:
    """`outputs` computed again with each value whose id is a key of `batched` replaced by
    that entry: the same values with a leading batch axis. The nodes in between are rebuilt
    by their ops' batching rules (in the batched values' graph, or eagerly on Tensors); an
    output that does not depend on them is None. A node without a rule raises GraphError,
    naming it.

    >>> import kiln as kn, numpy as np
    >>> with kn.Graph().as_default():
    ...     xs = kn.placeholder(kn.float32, (4, 3), name="xs")
    ...     x = xs[0]                         # one example, to build the function on
    ...     y = kn.sum(kn.exp(x) * 2.0)
    ...     (ys,) = vectorize([y], {id(x): xs})
    >>> ys.shape
    kiln.Size([4])
    """
    env = dict(batched)
    for node in ancestors(outputs, stop=env.keys()):
        if id(node.out) in env or not any(id(i) in env for i in node.inputs):
            continue
        flags = tuple(id(i) in env for i in node.inputs)
        args = [env.get(id(i), i) for i in node.inputs]
        if node.op.batch is None:
            raise GraphError(
                f"vmap: no batching rule for {node.op.name} ('{node.name}', created at "
                f"{node.site}) on {', '.join(a.type_str() for a in node.inputs)}; the ops "
                "with one declare `batch=` in their defop"
            )
        with node.graph.site(node.site):
            try:
                out = node.op.batch(args, flags, **node.attrs)
            except GraphError as e:  # a combination the rule does not batch
                raise GraphError(f"{e} ('{node.name}', created at {node.site})") from None
        n = next(_batch_size(a) for a, f in zip(args, flags) if f)
        elements = out.dtype == node.out.dtype == dt.TUPLE  # its gets check the elements
        if not elements and (tuple(out.shape) != (n, *node.out.shape)
                             or out.dtype != node.out.dtype):  # fmt: skip
            raise GraphError(
                f"vmap: the batching rule of {node.op.name} ('{node.name}', created at "
                f"{node.site}) gave {out.type_str()}, not {node.out.dtype}"
                f"{[n, *node.out.shape]}"
            )
        env[id(node.out)] = out
    return [env.get(id(o)) for o in outputs]


def _batch_size(value) -> int:
    """The batch axis's size: a batched tuple's is its op's first operand's (the rules of
    the multi-result ops keep it first in every element)."""
    return value.node.inputs[0].shape[0] if value.dtype == dt.TUPLE else value.shape[0]
