"""Reverse-mode rules of the region ops, called by `differentiate` (kiln/passes/differentiate.py)
with one cotangent (or None) per element of the op's tuple result.

A body's vjp is built by differentiating a copy of the body (`_linearize`): its parameters,
then placeholders for the cotangents of its results, then the gradient nodes. `cond` runs
that whole graph as its backward branches. `scan` splits it: the nodes that do not read a
cotangent make the forward body, which also returns, stacked over the steps, the values the
gradient nodes read (its per-step residuals); the gradient nodes make the backward body, a
scan in the other direction whose carry is the carry's cotangent plus the sums of the
captures' cotangents. Values that depend only on captures and constants are recomputed in
the backward body rather than stacked. `while_loop` has no reverse rule (its trip count is
not known before it runs), as JAX's.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from ..errors import GraphError
from ..graph.core import Graph
from ..graph.opdef import REGISTRY, ArrayValue
from ..graph.region import Region
from ..ops.control import scan_types
from ..ops.core import apply, bind, scalar


def region_vjp(node, cts, relevant) -> list:
    """One cotangent (or None) per input of the region op `node`, given `cts` per result."""
    if node.op.name == "scan":
        return _scan_vjp(node, cts, relevant)
    if node.op.name == "cond":
        return _cond_vjp(node, cts, relevant)
    raise GraphError(
        f"reverse-mode differentiation does not work for while_loop ('{node.name}', created at "
        f"{node.site}): its trip count is known only when it runs. Use kn.fori_loop with static "
        "bounds or kn.scan, which have reverse-mode gradients"
    )


def _zeros(like, shape=None):
    shape = tuple(like.shape if shape is None else shape)
    return apply("broadcast_to", scalar(0, like), shape=shape)


def _placeholder(graph, shape, dtype, name, site=None):
    attrs = {"shape": tuple(shape), "dtype": dtype}
    node = graph.add_node(REGISTRY["placeholder"], (), attrs, name, site, tuple(shape), dtype)
    node.site = site
    return node.out


def _copy_nodes(nodes, mapping, graph) -> None:
    """Copies `nodes` (in order) into `graph`; `mapping` (id of a value -> its copy) is read
    for inputs and extended with each copy."""
    for n in nodes:
        if id(n.out) in mapping:
            continue
        inputs = [mapping[id(i)] for i in n.inputs]
        clone = graph.add_node(n.op, inputs, n.attrs, n.name, n.site, n.out.shape, n.out.dtype)
        clone.site = n.site
        clone.ref = n.ref
        mapping[id(n.out)] = clone.out


class _Linearized:
    """A copy of a body with cotangent placeholders and the gradient nodes (`graph`):
    `params` (the body's parameters), `outs` (its results), `ct_of` (result index -> its
    cotangent placeholder), `grads` (per parameter: its cotangent, or None)."""

    def __init__(self, body: Graph, with_ct, wrt):
        from .differentiate import differentiate  # NOTE: differentiate imports this module

        self.graph = g = Graph()
        mapping: dict = {}
        self.params = []
        for p in body.inputs:
            self.params.append(_placeholder(g, p.shape, p.dtype, p.name, p.site))
            mapping[id(p)] = self.params[-1]
        _copy_nodes([n for n in body.nodes if id(n.out) not in mapping], mapping, g)
        self.outs = [mapping[id(s)] for s in body.outputs]
        self.ct_of = {}
        for k in with_ct:
            out = self.outs[k]
            self.ct_of[k] = _placeholder(g, out.shape, out.dtype, f"ct_{k}")
        ys = [self.outs[k] for k in with_ct]
        xs = [self.params[k] for k in wrt]
        grads = differentiate(ys, xs, [self.ct_of[k] for k in with_ct], "none") if ys else []
        self.grads = dict(zip(wrt, grads)) if ys else {k: None for k in wrt}


def _float(symbols) -> list:
    return [k for k, s in enumerate(symbols) if dt.is_float(s.dtype)]


# -- cond ------------------------------------------------------------------------------------


def _cond_vjp(node, cts, relevant) -> list:
    attrs = node.attrs
    true, false, n_ops = attrs["branch_true"], attrs["branch_false"], attrs["num_operands"]
    with_ct = [k for k, c in enumerate(cts) if c is not None]
    operands = node.inputs[1 : 1 + n_ops]
    n_true = len(true.inputs) - n_ops
    true_caps = node.inputs[1 + n_ops : 1 + n_ops + n_true]
    false_caps = node.inputs[1 + n_ops + n_true :]
    wanted = [*operands, *true_caps, *false_caps]
    if not with_ct:
        return [None] * len(node.inputs)
    branches = []
    for region, own, other_first in ((true, true_caps, True), (false, false_caps, False)):
        params = region.inputs
        lin = _Linearized(region.graph, with_ct, _float(params))
        g = lin.graph
        with g.as_default():
            op_cts = [_grad_or_zeros(lin, k) for k in range(n_ops)]
            own_cts = [_grad_or_zeros(lin, n_ops + k) for k in range(len(own))]
            other = false_caps if other_first else true_caps
            other_cts = [_zeros_in(g, s) for s in other]
        g.inputs = [*lin.params[:n_ops], *(lin.ct_of[k] for k in with_ct), *lin.params[n_ops:]]
        g.outputs = [*op_cts, *(own_cts + other_cts if other_first else other_cts + own_cts)]
        branches.append(Region(g))
    bwd = bind(REGISTRY["cond"], node.inputs[0], *operands, *(cts[k] for k in with_ct),
               *true_caps, *false_caps, branch_true=branches[0], branch_false=branches[1],
               num_operands=n_ops + len(with_ct))  # fmt: skip
    results = _gets(bwd, branches[0].outputs)
    in_cts = [None]
    for s, r in zip(wanted, results):
        in_cts.append(r if r is not None and id(s) in relevant else None)
    return in_cts


def _grad_or_zeros(lin, k):
    """The cotangent of parameter k in the linearized graph (zeros where it has none, None
    for a parameter that is not a float)."""
    p = lin.params[k]
    if not dt.is_float(p.dtype):
        return _zeros_in(lin.graph, p)
    g = lin.grads.get(k)
    return g if g is not None else _zeros(p)


def _zeros_in(graph, like):
    """Zeros of `like`'s type built in `graph` (`like` may be a value of another graph)."""
    value = {"value": ArrayValue(np.zeros((), like.dtype))}
    zero = graph.add_node(REGISTRY["constant"], (), value, "constant", None, (), like.dtype)
    zero.site = None
    return apply("broadcast_to", zero.out, shape=tuple(like.shape))


def _gets(node_out, like) -> list:
    return [
        bind(REGISTRY["get"], node_out, index=k, shape=tuple(s.shape), dtype=s.dtype)
        for k, s in enumerate(like)
    ]


# -- scan ------------------------------------------------------------------------------------


def _reach(nodes, start) -> set:
    """Ids of the values of `nodes` that depend on any value in `start` (ids), start included."""
    out = set(start)
    for n in nodes:
        if any(id(i) in out for i in n.inputs):
            out.add(id(n.out))
    return out


def _needed(nodes, targets, stop) -> list:
    """The nodes (in order) that `targets` need, not looking past values in `stop` (ids)."""
    keep, stack = set(), [t for t in targets if id(t) not in stop]
    while stack:
        s = stack.pop()
        if id(s.node) in keep:
            continue
        keep.add(id(s.node))
        stack.extend(i for i in s.node.inputs if id(i) not in stop)
    return [n for n in nodes if id(n) in keep]


def _scan_vjp(node, cts, relevant) -> list:
    a = node.attrs
    body, n, reverse = a["body"], a["length"], a["reverse"]
    nc, nx = a["num_carry"], a["num_xs"]
    outs = body.outputs
    float_carry = _float(outs[:nc])
    with_ct = [*float_carry, *(k for k in range(nc, len(outs))
                                if cts[k] is not None and dt.is_float(outs[k].dtype))]  # fmt: skip
    if not with_ct:
        return [None] * len(node.inputs)
    lin = _Linearized(body.graph, with_ct, _float(body.inputs))
    L, params = lin.graph, lin.params
    carry_p, x_p, cap_p = params[:nc], params[nc : nc + nx], params[nc + nx :]
    backward = _reach(L.nodes, {id(p) for p in lin.ct_of.values()})
    varying = _reach(L.nodes, {id(p) for p in (*carry_p, *x_p)}) - backward
    # Residuals: values of the forward part that the gradient nodes needed read.
    grad_outs = [lin.grads.get(k) for k in range(len(params))]
    targets = [g_ for g_ in grad_outs if g_ is not None]
    forward = {id(m.out) for m in L.nodes} - backward
    residuals, seen = [], set()
    for m in _needed(L.nodes, targets, forward):
        for i in m.inputs:
            if id(i) in varying and id(i) not in seen:
                seen.add(id(i))
                residuals.append(i)
    for g_ in targets:  # a gradient that is a forward value itself is one too
        if id(g_) in varying and id(g_) not in seen:
            seen.add(id(g_))
            residuals.append(g_)
    x_index = {id(p): k for k, p in enumerate(x_p)}
    stacked = [r for r in residuals if id(r) not in x_index]  # xs are stacked already

    # The forward scan: the body, returning the stacked residuals too.
    F = Graph()
    fmap: dict = {}
    F.inputs = [_placeholder(F, p.shape, p.dtype, p.name, p.site) for p in params]
    fmap.update({id(p): q for p, q in zip(params, F.inputs)})
    fwd_nodes = _needed(L.nodes, [*lin.outs, *stacked], {id(p) for p in params})
    _copy_nodes(fwd_nodes, fmap, F)
    F.outputs = [fmap[id(s)] for s in (*lin.outs, *stacked)]
    fwd_region = Region(F, extends=body)  # simplify runs it in place of the node's own scan
    fwd = bind(REGISTRY["scan"], *node.inputs, body=fwd_region, length=n, reverse=reverse,
               num_carry=nc, num_xs=nx)  # fmt: skip
    fwd_results = _gets(fwd, [*_typed(scan_types(fwd_region, n, nc))])
    stacks = dict(zip(map(id, stacked), fwd_results[len(outs) :]))

    # The backward scan: carry = carry cotangents and capture sums; xs = residuals and ys' cts.
    G = Graph()
    gmap: dict = {}
    ct_carry = [_placeholder(G, carry_p[k].shape, carry_p[k].dtype, f"ct_{carry_p[k].name}")
                for k in float_carry]  # fmt: skip
    float_caps = [k for k in range(len(cap_p)) if dt.is_float(cap_p[k].dtype)]
    acc = [_placeholder(G, cap_p[k].shape, cap_p[k].dtype, f"sum_ct_{cap_p[k].name}")
           for k in float_caps]  # fmt: skip
    for k, p in zip(float_carry, ct_carry):
        gmap[id(lin.ct_of[k])] = p
    res_p = [_placeholder(G, r.shape, r.dtype, f"res_{j}") for j, r in enumerate(residuals)]
    gmap.update({id(r): p for r, p in zip(residuals, res_p)})
    ys_ct = [k for k in with_ct if k >= nc]
    ys_p = [_placeholder(G, outs[k].shape, outs[k].dtype, f"ct_y{k - nc}") for k in ys_ct]
    gmap.update({id(lin.ct_of[k]): p for k, p in zip(ys_ct, ys_p)})
    caps_g = [_placeholder(G, p.shape, p.dtype, p.name, p.site) for p in cap_p]
    gmap.update({id(p): q for p, q in zip(cap_p, caps_g)})
    _copy_nodes(_needed(L.nodes, targets, set(gmap)), gmap, G)
    with G.as_default():
        new_ct = [_in_g(gmap, lin.grads.get(k), G, params[k]) for k in float_carry]
        new_acc = []
        for k, s in zip(float_caps, acc):
            g_ = lin.grads.get(nc + nx + k)
            new_acc.append(s if g_ is None else apply("add", s, gmap[id(g_)]))
        float_xs = _float(x_p)
        ct_xs = [_in_g(gmap, lin.grads.get(nc + k), G, x_p[k]) for k in float_xs]
    G.inputs = [*ct_carry, *acc, *res_p, *ys_p, *caps_g]
    G.outputs = [*new_ct, *new_acc, *ct_xs]
    x_ops = node.inputs[nc : nc + nx]
    cap_ops = node.inputs[nc + nx :]
    init = [cts[k] if cts[k] is not None else _zeros(node.inputs[k]) for k in float_carry]
    init += [_zeros(cap_ops[k]) for k in float_caps]
    res_ops = [x_ops[x_index[id(r)]] if id(r) in x_index else stacks[id(r)] for r in residuals]
    bwd_region = Region(G)
    bwd = bind(REGISTRY["scan"], *init, *res_ops, *(cts[k] for k in ys_ct), *cap_ops,
               body=bwd_region, length=n, reverse=not reverse, num_carry=len(init),
               num_xs=len(res_ops) + len(ys_ct))  # fmt: skip
    results = _gets(bwd, [*_typed(scan_types(bwd_region, n, len(init)))])
    in_cts = [None] * len(node.inputs)
    for j, k in enumerate(float_carry):
        in_cts[k] = results[j]
    for j, k in enumerate(float_caps):
        in_cts[nc + nx + k] = results[len(float_carry) + j]
    for j, k in enumerate(float_xs):
        in_cts[nc + k] = results[len(init) + j]
    return [c if c is not None and id(s) in relevant else None
            for s, c in zip(node.inputs, in_cts)]  # fmt: skip


class _Typed:
    __slots__ = ("shape", "dtype")

    def __init__(self, shape, dtype):
        self.shape, self.dtype = shape, dtype


def _typed(types) -> list:
    return [_Typed(s, d) for s, d in types]


def _in_g(gmap, grad, graph, like):
    """A gradient of the linearized graph as a value of the backward body (zeros if None)."""
    if grad is None:
        return _zeros_in(graph, like)
    return gmap[id(grad)]
