"""Rematerialization inside loops: a differentiated `scan` stacks, step by step, the values
its backward scan reads (its per-step residuals, kiln/passes/region_grad.py). Under a memory
budget `recompute_scans` rewrites such a pair so the forward scan stacks only the carry each
step starts from, and the backward scan computes that step's residuals again from it, the
step's xs and the captures (a copy of the forward body at the start of the backward body).
The residuals then live one step at a time; the stacked carries cost `length` carries.

The stacked values live outside the planned arena (a loop allocates them when it runs), so
`stacked_bytes` counts them beside the arena when a program is weighed against a budget
(kiln/runtime/program.py).
"""

from __future__ import annotations

import math

from ..graph.core import Graph
from ..graph.opdef import REGISTRY
from ..graph.region import Region
from .region_grad import _copy_nodes, _needed, _placeholder

SCAN_CHOICE = "scan residuals recomputed per step"


def _bytes(shape, dtype) -> int:
    if not all(isinstance(d, int) for d in shape):
        return 0  # a symbolic size: not counted
    return math.prod(shape) * dtype.itemsize


def stacked_bytes(graph) -> int:
    """Bytes of the stacked results (ys) of the scans of program graph `graph` that some
    node reads: memory a run holds outside the arena.

    >>> import kiln as kn, numpy as np
    >>> with kn.Graph().as_default():
    ...     xs = kn.placeholder(kn.float64, (100, 4), name="xs")
    ...     _, ys = kn.scan(lambda c, x: (c + x, c * x), kn.constant(np.zeros(4)), xs)
    ...     f = kn.function([xs], ys)
    >>> stacked_bytes(f.graph)  # 100 steps of 4 float64
    3200
    """
    total = 0
    for n in graph.nodes:
        if n.op.name == "get" and n.inputs[0].node.op.name == "scan":
            if n.attrs["index"] >= n.inputs[0].node.attrs["num_carry"]:
                total += _bytes(n.out.shape, n.out.dtype)
    return total


def _pairs(graph) -> dict:
    """{id(forward scan): (forward, backward, {backward xs position: forward result index})}
    for each backward scan that reads stacked results of a forward scan (the other way, the
    same length) which nothing else reads, when the forward's carry is smaller than those."""
    readers: dict = {}
    for n in graph.nodes:
        for i in n.inputs:
            readers.setdefault(id(i), set()).add(id(n))
    found: dict = {}
    taken: set = set()
    for b in graph.nodes:
        if b.op.name != "scan":
            continue
        nc, nx = b.attrs["num_carry"], b.attrs["num_xs"]
        by_forward: dict = {}
        for k, x in enumerate(b.inputs[nc : nc + nx]):
            g = x.node
            if g.op.name != "get" or g.inputs[0].node.op.name != "scan":
                continue
            f = g.inputs[0].node
            same = (
                f.attrs["length"] == b.attrs["length"] and f.attrs["reverse"] != b.attrs["reverse"]
            )
            if same and g.attrs["index"] >= f.attrs["num_carry"] and readers[id(x)] == {id(b)}:
                by_forward.setdefault(id(f), (f, {}))[1][k] = g.attrs["index"]
        for fid, (f, residuals) in by_forward.items():
            if fid in found or fid in taken:
                taken.add(fid)  # read by two backward scans: left alone
                found.pop(fid, None)
                continue
            saved = sum(_bytes(b.inputs[nc + k].shape, b.inputs[nc + k].dtype) for k in residuals)
            carry = f.inputs[: f.attrs["num_carry"]]
            stacked = sum(_bytes((f.attrs["length"], *c.shape), c.dtype) for c in carry)
            if stacked < saved:
                found[fid] = (f, b, residuals)
    return found


def recompute_scans(graph):
    """A copy of program graph `graph` where each differentiated scan's backward scan
    recomputes its per-step residuals (see the module's docstring), or None when no scan's
    residuals cost more than its carries.

    >>> import kiln as kn, numpy as np
    >>> with kn.Graph().as_default():
    ...     xs = kn.placeholder(kn.float64, (50, 3), name="xs")
    ...     step = lambda c, x: (kn.tanh(kn.sin(c) * x + c), None)
    ...     last, _ = kn.scan(step, kn.constant(np.ones(3)), xs)
    ...     f = kn.function([xs], kn.grad(kn.sum(last), [xs]))
    >>> g = recompute_scans(f.graph)
    >>> stacked_bytes(g) < stacked_bytes(f.graph)  # one carry per step, not three values
    True
    """
    pairs = _pairs(graph)
    if not pairs:
        return None
    backward = {id(b): (f, residuals) for f, b, residuals in pairs.values()}
    copy = Graph()
    copy.source = graph.source
    new: dict = {}
    remap: dict = {}  # id(forward scan) -> (its copy, {old result index: new})
    for node in graph.nodes:
        if id(node) in pairs:
            _, b, residuals = pairs[id(node)]
            remap[id(node)] = _forward(copy, node, set(residuals.values()), new)
            continue
        if node.op.name == "get" and id(node.inputs[0].node) in remap:
            fwd, index = remap[id(node.inputs[0].node)]
            j = index.get(node.attrs["index"])
            if j is not None:
                new[id(node.out)] = _get(copy, fwd, j, node.out.shape, node.out.dtype, node)
            continue  # a residual stack: only the backward scan read it
        if id(node) in backward:
            f, residuals = backward[id(node)]
            new[id(node.out)] = _backward(copy, node, f, residuals, remap[id(f)], new)
            continue
        clone = copy.add_node(node.op, [new[id(i)] for i in node.inputs], node.attrs, node.name,
                              node.site, node.out.shape, node.out.dtype)  # fmt: skip
        clone.ref = node.ref
        new[id(node.out)] = clone.out
    copy.inputs = [new[id(s)] for s in graph.inputs]
    copy.outputs = [new[id(s)] for s in graph.outputs]
    copy.updates = {var: new[id(s)] for var, s in graph.updates.items()}
    return copy


def _get(graph, tuple_value, index, shape, dtype, like):
    attrs = {"index": index, "shape": tuple(shape), "dtype": dtype}
    node = graph.add_node(REGISTRY["get"], [tuple_value], attrs, like.name, like.site,
                          tuple(shape), dtype)  # fmt: skip
    return node.out


def _forward(copy, f, dropped, new):
    """The forward scan stacking its step's starting carry in place of the `dropped` results:
    (its tuple value, {old result index: new index}), the starting carries last."""
    a, body = f.attrs, f.attrs["body"].graph
    nc = a["num_carry"]
    g = Graph()
    mapping: dict = {}
    params = [_placeholder(g, p.shape, p.dtype, p.name, p.site) for p in body.inputs]
    mapping.update({id(p): q for p, q in zip(body.inputs, params)})
    kept = [k for k in range(len(body.outputs)) if k not in dropped]
    _copy_nodes(_needed(body.nodes, [body.outputs[k] for k in kept], set(mapping)), mapping, g)
    g.inputs = params
    g.outputs = [mapping[id(body.outputs[k])] for k in kept] + params[:nc]
    region = Region(g)
    node = copy.add_node(f.op, [new[id(i)] for i in f.inputs], {**a, "body": region}, f.name,
                         f.site, f.out.shape, f.out.dtype)  # fmt: skip
    return node.out, {old: j for j, old in enumerate(kept)}


def _backward(copy, b, f, residuals, forward, new):
    """The backward scan computing, at each step, the forward body's `residuals` again from
    the step's starting carry (stacked by the forward scan), its xs and the captures."""
    fwd_value, index = forward
    fa, fbody = f.attrs, f.attrs["body"].graph
    ba, bbody = b.attrs, b.attrs["body"].graph
    fnc, fnx = fa["num_carry"], fa["num_xs"]
    bnc, bnx = ba["num_carry"], ba["num_xs"]
    n, length = len(index), fa["length"]
    g = Graph()
    bmap: dict = {}
    bparams = [_placeholder(g, p.shape, p.dtype, p.name, p.site) for p in bbody.inputs]
    keep_xs = [k for k in range(bnx) if k not in residuals]
    fparams = [_placeholder(g, p.shape, p.dtype, f"fwd_{p.name}", p.site) for p in fbody.inputs]
    fmap = {id(p): q for p, q in zip(fbody.inputs, fparams)}
    wanted = [fbody.outputs[j] for j in residuals.values()]
    _copy_nodes(_needed(fbody.nodes, wanted, set(fmap)), fmap, g)
    bmap.update({id(p): q for p, q in zip(bbody.inputs, bparams)})
    for k, j in residuals.items():  # the residual's param reads the recomputed value
        bmap[id(bbody.inputs[bnc + k])] = fmap[id(fbody.outputs[j])]
    _copy_nodes([m for m in bbody.nodes if id(m.out) not in bmap], bmap, g)
    g.inputs = [*bparams[:bnc], *(bparams[bnc + k] for k in keep_xs), *fparams[: fnc + fnx],
                *bparams[bnc + bnx :], *fparams[fnc + fnx :]]  # fmt: skip
    g.outputs = [bmap[id(s)] for s in bbody.outputs]
    starts = [_get(copy, fwd_value, n + k, (length, *c.shape), c.dtype, c.node)
              for k, c in enumerate(f.inputs[:fnc])]  # fmt: skip
    ops = b.inputs
    operands = [*(new[id(i)] for i in ops[:bnc]), *(new[id(ops[bnc + k])] for k in keep_xs),
                *starts, *(new[id(i)] for i in f.inputs[fnc : fnc + fnx]),
                *(new[id(i)] for i in ops[bnc + bnx :]),
                *(new[id(i)] for i in f.inputs[fnc + fnx :])]  # fmt: skip
    attrs = {**ba, "body": Region(g), "num_xs": len(keep_xs) + fnc + fnx}
    node = copy.add_node(b.op, operands, attrs, b.name, b.site, b.out.shape, b.out.dtype)
    return node.out
