"""What `simplify` does to region ops: one scan where a gradient's forward scan extends the
loss's own, results nothing reads dropped from the bodies (a scan's unused ys, a cond's unused
results), loop-invariant values of a scan computed once before it, and every body simplified
as a program of its own."""

from __future__ import annotations

from types import SimpleNamespace

from ..graph.core import Graph
from ..graph.opdef import REGISTRY, Attrs
from ..graph.region import Region, regions_of


def extended_scans(nodes) -> dict:
    """{id(scan): the scan that computes the same results and more}: a gradient's forward
    scan (its body `extends` the other's, kiln/passes/region_grad.py) of the same operands."""
    by_body: dict = {}
    for n in nodes:
        if n.op.name == "scan":
            by_body.setdefault(id(n.attrs["body"]), []).append(n)
    out = {}
    for n in nodes:
        base = n.attrs["body"].extends if n.op.name == "scan" else None
        for m in by_body.get(id(base), ()) if base is not None else ():
            same = all(n.attrs[k] == m.attrs[k] for k in ("length", "reverse", "num_carry"))
            if same and tuple(map(id, n.inputs)) == tuple(map(id, m.inputs)):
                out[id(m)] = n
    return out


def used_results(nodes, extended) -> dict:
    """{id(region node): the indices of its results that `get` nodes among `nodes` read};
    a scan that another runs in place of gives its reads to that one."""
    used: dict = {}
    for n in nodes:
        if n.op.name == "get":
            used.setdefault(id(n.inputs[0].node), set()).add(n.attrs["index"])
    for small, wide in extended.items():
        used.setdefault(id(wide), set()).update(used.get(small, ()))
    return used


def region_attrs(node, used, simplify) -> tuple[Attrs, dict | None]:
    """The node's attrs with its bodies simplified (and, for scan and cond, the results
    nothing reads dropped), and {old result index: new} when some were dropped."""
    keep = _kept(node, used)
    attrs = dict(node.attrs)
    for key, region in regions_of(node):
        body = region.graph
        if keep is not None:
            outputs = [body.outputs[k] for k in keep]
            body = SimpleNamespace(nodes=body.nodes, inputs=body.inputs, outputs=outputs,
                                   updates={}, source=None)  # fmt: skip
        attrs[key] = Region(simplify(body))
    index = None if keep is None else {old: new for new, old in enumerate(keep)}
    return Attrs(attrs), index


def _kept(node, used) -> list | None:
    """The result indices to keep, or None for all of them."""
    reads = used.get(id(node), set())
    if node.op.name == "scan":
        n, carry = len(node.attrs["body"].outputs), node.attrs["num_carry"]
        keep = [k for k in range(n) if k < carry or k in reads]
    elif node.op.name == "cond":
        n = len(node.attrs["branch_true"].outputs)
        keep = [k for k in range(n) if k in reads]
    else:
        return None
    return None if len(keep) == n else keep


def invariant_values(node) -> tuple[list, list]:
    """(frontier, nodes): the values of a scan's body that depend only on its captures (and
    constants), computed by pure ops, and read by the rest of the body or returned, and the
    body's nodes (in order) that compute them and the constants. Computed once, before the
    loop, the frontier values enter as captures. Random, source, region and may-fail ops stay
    in the loop."""
    body = node.attrs["body"].graph
    fixed = node.attrs["num_carry"] + node.attrs["num_xs"]
    invariant = {id(p) for p in body.inputs[fixed:]}
    hoistable = set()
    for n in body.nodes:
        if n.op.name == "constant":
            invariant.add(id(n.out))
        elif (n.inputs and all(id(i) in invariant for i in n.inputs) and not n.op.may_fail
                and not n.op.tags & {"random", "source", "region", "update"}):  # fmt: skip
            invariant.add(id(n.out))
            hoistable.add(id(n.out))
    used = {id(i) for n in body.nodes if id(n.out) not in invariant for i in n.inputs}
    used |= {id(s) for s in body.outputs}
    frontier = [n.out for n in body.nodes if id(n.out) in hoistable and id(n.out) in used]
    nodes = [n for n in body.nodes if id(n.out) in hoistable or n.op.name == "constant"]
    return frontier, nodes


def hoisted_body(node, frontier, simplify) -> tuple[Region, list]:
    """The scan's body with the `frontier` values as new captures (after the others), less
    the captures it no longer reads; and the indices of the node's operands it keeps."""
    body = node.attrs["body"].graph
    graph = Graph()
    mapping = {}
    for p in body.inputs:
        mapping[id(p)] = _placeholder(graph, p)
    extra = [_placeholder(graph, v) for v in frontier]
    mapping.update({id(v): q for v, q in zip(frontier, extra)})
    for n in body.nodes:
        if id(n.out) in mapping:
            continue
        clone = graph.add_node(n.op, [mapping[id(i)] for i in n.inputs], n.attrs, n.name,
                               n.site, n.out.shape, n.out.dtype)  # fmt: skip
        clone.site = n.site
        mapping[id(n.out)] = clone.out
    graph.outputs = [mapping[id(s)] for s in body.outputs]
    fixed = node.attrs["num_carry"] + node.attrs["num_xs"]
    live, stack = set(), list(graph.outputs)  # the values the results need
    while stack:
        v = stack.pop()
        if id(v) not in live:
            live.add(id(v))
            stack.extend(v.node.inputs)
    params = [mapping[id(p)] for p in body.inputs]
    keep = [k for k, p in enumerate(params) if k < fixed or id(p) in live]
    graph.inputs = [params[k] for k in keep] + extra
    return Region(simplify(graph)), keep


def _placeholder(graph, like):
    attrs = {"shape": like.shape, "dtype": like.dtype}
    base = like.name.rsplit("/", 1)[-1]
    node = graph.add_node(REGISTRY["placeholder"], (), attrs, base, like.site, like.shape,
                          like.dtype)  # fmt: skip
    node.site = like.site
    return node.out
