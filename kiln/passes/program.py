"""Program graphs: what passes transform. `extract` copies the part of a user graph that some
fetches and updates need into a new Graph with `.inputs`, `.outputs` and `.updates`;
`rebuild` is the one way a pass copies a graph while replacing nodes.

In a program graph, a variable node's `ref` is the Variable that owns its value, fed values
are placeholders, and updates are `graph.updates` (Variable -> Symbol) instead of `assign`
nodes. Node names and sites are kept, so random streams and messages still refer to the
user's nodes.
"""

from __future__ import annotations

from ..errors import GraphError, node_error
from ..graph.core import Graph, Symbol, Variable
from ..graph.opdef import REGISTRY
from ..ops.dynamic import with_binders


def prune(fetches, feeds, updates) -> list:
    """The nodes (in graph order) that the fetches and updates need; fed values cut the graph."""
    fed = {id(s) for s in feeds}
    seen, stack = set(), [s.node for s in fetches] + [v.node for v in updates.values()]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if id(node.out) not in fed:
            stack.extend(i.node for i in node.inputs)
    graphs = {id(s.graph): s.graph for s in [*fetches, *updates, *updates.values()]}
    if len(graphs) > 1:
        raise GraphError("fetches and updates come from different graphs")
    nodes = next(iter(graphs.values())).nodes if graphs else []
    binders = with_binders(nodes, seen, fed)
    if binders:  # a length the run binds, read by attrs only: what binds it runs too
        return prune([*fetches, *binders], feeds, updates)
    return [n for n in nodes if id(n) in seen]


def extract(fetches, feeds, updates) -> Graph:
    """The program graph computing `fetches` from `feeds` and the `updates`, plus the updates
    of every `assign` node the fetches reach (two updates of one Variable are an error)."""
    updates = dict(updates)
    nodes = prune(fetches, feeds, updates)
    for node in nodes:
        if "update" in node.op.tags:
            var, value = node.inputs
            if not isinstance(var, Variable):
                raise node_error(GraphError, "assign target is not a Variable", op="assign",
                                 name=node.name, site=node.site)  # fmt: skip
            if var in updates and updates[var] is not value and updates[var] is not node.out:
                raise node_error(
                    GraphError, f"Variable '{var.name}' has two updates in one run (this "
                    f"assign and '{updates[var].name}', created at {updates[var].site}); "
                    "combine them into one value", op="assign", name=node.name, site=node.site,
                )  # fmt: skip
            updates[var] = node.out
    program = Graph()
    program.source = nodes[0].graph if nodes else None
    fed = {id(s) for s in feeds}
    new: dict[int, Symbol] = {}
    for node in nodes:
        out = node.out
        if id(out) in fed:
            attrs = {"shape": out.shape, "dtype": out.dtype}
            clone = program.add_node(REGISTRY["placeholder"], (), attrs, node.name, node.site,
                                     out.shape, out.dtype)  # fmt: skip
        elif "update" in node.op.tags:  # the value it assigns; the update is in .updates
            new[id(out)] = new[id(node.inputs[1])]
            continue
        elif node.op.name == "placeholder":
            raise node_error(GraphError, f"placeholder '{node.name}' must be fed",
                             op="placeholder", name=node.name, site=node.site)  # fmt: skip
        else:
            inputs = [new[id(i)] for i in node.inputs]
            clone = program.add_node(node.op, inputs, node.attrs, node.name, node.site,
                                     out.shape, out.dtype)  # fmt: skip
            clone.ref = node.ref
        new[id(out)] = clone.out
    for s in feeds:  # a feed nothing needs is still an input of the program
        if id(s) not in new:
            attrs = {"shape": s.shape, "dtype": s.dtype}
            new[id(s)] = program.add_node(REGISTRY["placeholder"], (), attrs, s.name, s.site,
                                          s.shape, s.dtype).out  # fmt: skip
    program.variables = [n.ref for n in program.nodes if n.op.name == "variable"]
    # The run-time dim checks of the nodes taken, by node identity: passes carry them even
    # where they merge or remove those nodes (the unoptimized program would have checked).
    taken = {id(n) for n in nodes}
    source = program.source
    program.constraints = [c for c in (source.constraints if source else ()) if id(c[3]) in taken]
    program.inputs = [new[id(s)] for s in feeds]
    program.outputs = [new[id(s)] for s in fetches]
    program.updates = {var: new[id(s)] for var, s in updates.items()}
    return program


def rebuild(graph: Graph, rule=None, new: dict | None = None) -> Graph:
    """A copy of a program graph. For each node in order, `rule(node, inputs, new_graph)`
    (inputs already mapped into the copy) may return a replacement Symbol of the same shape
    and dtype; otherwise the node is copied. Sites and names are kept. `new` (if given) is
    filled as it goes: id(original value) -> its value in the copy."""
    copy = Graph()
    copy.source = graph.source
    new = {} if new is None else new
    for node in graph.nodes:
        inputs = [new[id(i)] for i in node.inputs]
        replacement = rule(node, inputs, copy) if rule is not None else None
        if replacement is None:
            clone = copy.add_node(node.op, inputs, node.attrs, node.name, node.site,
                                  node.out.shape, node.out.dtype)  # fmt: skip
            clone.ref = node.ref
            replacement = clone.out
        new[id(node.out)] = replacement
    copy.variables = [n.ref for n in copy.nodes if n.op.name == "variable"]
    copy.inputs = [new[id(s)] for s in graph.inputs]
    copy.outputs = [new[id(s)] for s in graph.outputs]
    copy.updates = {var: new[id(s)] for var, s in graph.updates.items()}
    return copy


def live_nodes(graph: Graph) -> list:
    """The nodes the outputs and updates need (dead-code elimination's keep set), in order."""
    keep, stack = set(), [*graph.outputs, *graph.updates.values(), *graph.inputs]
    while stack:
        s = stack.pop()
        if id(s.node) not in keep:
            keep.add(id(s.node))
            stack.extend(s.node.inputs)
        if not stack:  # a length the run binds, read by attrs only: what binds it stays
            stack = with_binders(graph.nodes, keep, ())
    return [n for n in graph.nodes if id(n) in keep]
