"""Forward-mode differentiation (`kn.jvp`): tangents pushed from some values to some outputs,
node by node in graph order, into the same graph.

An op's `jvp` rule (`OpDef.jvp`) gives the tangent of its output. An op without one uses its
vjp, transposed where it stands: the vjp is linear in the cotangent u, so differentiating it
with respect to u, seeded with the inputs' tangents, gives the Jacobian-vector product. That
second differentiation only visits the few nodes the vjp just made (`since`), so building is
linear in the nodes between the xs and the ys. u and the vjp's own nodes are dead afterwards
(a compiled function prunes them). So every op with a vjp has forward mode, and an op with no
vjp (a loop whose reverse mode is refused) can still have one through a `jvp` rule. The
region ops have their rules in kiln/passes/region_jvp.py: a region op's tangent is a
`TupleTangent`, which the tangents of its `get` nodes read.
"""

from __future__ import annotations

from .. import dtypes as dt
from ..errors import GraphError
from ..ops.core import apply, scalar
from .differentiate import _relevant, differentiate, real_part_for, sum_to_shape
from .region_jvp import TupleTangent, region_jvp


def jvp(ys, xs, tangents, primals: dict | None = None) -> list:
    """The tangent of each y (None where it is zero: no x reaches it) when each x moves along
    its tangent (a Symbol of x's shape and dtype, or None for zero). With `primals` (a
    dict), a y read from a region op's result gets {id(y): the same value read from the op
    that also computes its tangent}, so a caller returning both runs one loop, not two.

    >>> import kiln as kn, numpy as np
    >>> with kn.Graph().as_default():
    ...     x = kn.placeholder(kn.float64, (2,), name="x")
    ...     t = kn.placeholder(kn.float64, (2,), name="t")
    ...     (dy,) = jvp([kn.sin(x) * x], [x], [t])
    ...     f = kn.function([x, t], dy)
    >>> f(np.array([0.0, 1.0]), np.array([1.0, 1.0]))  # (cos(x) x + sin(x)) t
    array([0.        , 1.38177329])
    """
    graph = ys[0].graph
    if graph.optimized:
        differentiate(ys, xs)  # raises: a program graph made by optimizing passes
    nodes, _ = _relevant(graph, ys, xs)
    found = {id(x): t for x, t in zip(xs, tangents) if t is not None}
    with graph.name_scope("jvp"):
        for node in nodes:
            if id(node.out) in found:
                continue
            ins = [found.get(id(i)) for i in node.inputs]
            if all(t is None for t in ins):
                continue
            with graph.site(node.site):
                if node.op.name == "get":  # one element of a region op's tuple
                    tangent = ins[0].get(node)
                elif "region" in node.op.tags:
                    tangent = region_jvp(node, ins)
                else:
                    tangent = _tangent(node, ins)
                    if "multi" in node.op.tags:  # one tangent (or None) per element
                        tangent = _Elements(tangent)
            if tangent is not None:
                found[id(node.out)] = tangent
    if primals is not None:
        for y in ys:
            whole = found.get(id(y.node.inputs[0])) if y.node.op.name == "get" else None
            if isinstance(whole, TupleTangent):
                primals[id(y)] = whole.primal(y.node)
    return [found.get(id(y)) for y in ys]


def _tangent(node, ins):
    op = node.op
    if op.jvp is not None:
        return op.jvp(ins, node.out, *node.inputs, **node.attrs)
    if op.vjp is None:
        if "nondiff" in op.tags:
            return None
        raise GraphError(
            f"no forward-mode rule for {op.name} ('{node.name}', created at {node.site}), "
            "which lies between the xs and the ys: it has neither a jvp nor a vjp"
        )
    return _transposed_vjp(node, ins)


def _transposed_vjp(node, ins):
    """The output's tangent from the node's vjp, transposed (see the module's docstring)."""
    op, out, graph = node.op, node.out, node.graph
    start = len(graph.nodes)
    u = apply("broadcast_to", scalar(0, out), shape=out.shape)
    if "vjp_needs" in op.tags:
        needs = tuple(t is not None for t in ins)
        cts = op.vjp(u, out, *node.inputs, needs=needs, **node.attrs)
    else:
        cts = op.vjp(u, out, *node.inputs, **node.attrs)
    pieces, seeds = [], []
    for x, ct, t in zip(node.inputs, cts, ins):
        if t is None or ct is None:
            continue
        ct = real_part_for(sum_to_shape(ct, x.shape), x.dtype)
        pieces.append(ct if ct.dtype == x.dtype else apply("cast", ct, dtype=x.dtype))
        seeds.append(t if t.dtype == x.dtype else apply("cast", t, dtype=x.dtype))
    pieces = [(p, s) for p, s in zip(pieces, seeds) if dt.is_differentiable(p.dtype)]
    if not pieces:
        return None
    ps, ss = zip(*pieces)
    (tangent,) = differentiate(list(ps), [u], list(ss), disconnected="none", since=start)
    return tangent


class _Elements(list):
    """The tangents of a multi-result op's elements (kiln/ops/multi.py), which the tangents
    of its `get` nodes read."""

    def get(self, node):
        return self[node.attrs["index"]]
