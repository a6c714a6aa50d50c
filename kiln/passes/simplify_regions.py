"""What `simplify` does to region ops: one scan where a gradient's forward scan extends the
loss's own, results nothing reads dropped from the bodies (a scan's unused ys, a cond's unused
results), and every body simplified as a program of its own."""

from __future__ import annotations

from types import SimpleNamespace

from ..graph.opdef import Attrs
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
