"""Forward-mode rules of the region ops (`scan`, `while_loop`, `cond`), called by `jvp`
(kiln/passes/forward.py) with one tangent (or None) per operand.

Each rule builds a new region op of the same kind whose bodies compute the primal results
and their tangents together: a copy of each body with a tangent placeholder beside each
parameter that can move, pushed through by `jvp` itself (so nested regions work, and so
does forward over forward). A loop carries the tangents of its float carry next to the
carry, so tangents go through a `while_loop` whose trip count is known only when it runs.
The tangent of the op's tuple result is a `TupleTangent`: the new node and where each
result's tangent sits in its tuple, which the `get` nodes' tangents read.
"""

from __future__ import annotations

from .. import dtypes as dt
from ..graph.core import Graph
from ..graph.opdef import REGISTRY
from ..graph.region import Region
from ..ops.core import apply, bind
from .region_grad import _copy_nodes, _placeholder, _zeros, _zeros_in


class TupleTangent:
    """The tangent of a region op's tuple result: `value`, the tuple of the node that computes
    the results and their tangents, `index`, {result index: index of its tangent there},
    and `shift`: past the first `shift[0]` results, a result's own index there is
    `shift[1]` further on (the carry's tangents sit between a scan's carry and its ys)."""

    __slots__ = ("value", "index", "shift")

    def __init__(self, value, index: dict, shift=(0, 0)):
        self.value, self.index, self.shift = value, index, shift

    def get(self, node):
        """The tangent of `get` node `node` (reading the primal tuple), or None (zero)."""
        j = self.index.get(node.attrs["index"])
        return None if j is None else self._element(j, node.out)

    def primal(self, node):
        """`get` node `node`'s value as the new node computes it (the same value)."""
        k = node.attrs["index"]
        return self._element(k + self.shift[1] if k >= self.shift[0] else k, node.out)

    def _element(self, j, like):
        return bind(REGISTRY["get"], self.value, index=j, shape=tuple(like.shape),
                    dtype=like.dtype)  # fmt: skip


def region_jvp(node, ins) -> TupleTangent | None:
    """The tangent of region op `node`'s result, given the tangent (or None) of each operand."""
    rule = {"scan": _scan_jvp, "while_loop": _while_jvp, "cond": _cond_jvp}[node.op.name]
    return rule(node, ins)


def _as_tangent(t, like):
    """`t` as a tangent of `like` (its dtype; zeros where `t` is None)."""
    if t is None:
        return _zeros(like)
    return t if t.dtype == like.dtype else apply("cast", t, dtype=like.dtype)


def _floats(symbols) -> list:
    return [k for k, s in enumerate(symbols) if dt.is_float(s.dtype)]


class _Pushed:
    """A copy of `region`'s body with tangent placeholders for the parameters in `moving`
    (indices) and the tangents of its results: `params`, `tangents` ({param index: its
    tangent placeholder}), `outs`, and `out_tangents` (one per result: its tangent, zeros for
    a float result no tangent reaches, None for a result that is not a float)."""

    def __init__(self, region: Region, moving):
        from .forward import jvp  # NOTE: forward imports this module

        self.graph = g = Graph()
        mapping: dict = {}
        body = region.graph
        self.params = [_placeholder(g, p.shape, p.dtype, p.name, p.site) for p in body.inputs]
        mapping.update({id(p): q for p, q in zip(body.inputs, self.params)})
        self.tangents = {
            k: _placeholder(g, self.params[k].shape, self.params[k].dtype,
                            f"t_{self.params[k].name}")
            for k in moving
        }  # fmt: skip
        _copy_nodes([n for n in body.nodes if id(n.out) not in mapping], mapping, g)
        self.outs = [mapping[id(s)] for s in body.outputs]
        floats = _floats(self.outs)
        with g.as_default():
            found = [None] * len(floats)
            if floats and moving:
                xs = [self.params[k] for k in moving]
                found = jvp([self.outs[k] for k in floats], xs, [self.tangents[k] for k in moving])
            self.out_tangents = [None] * len(self.outs)
            for k, t in zip(floats, found):
                out = self.outs[k]
                self.out_tangents[k] = _zeros_in(g, out) if t is None else t

    def region(self, inputs, outputs) -> Region:
        self.graph.inputs, self.graph.outputs = list(inputs), list(outputs)
        return Region(self.graph)


def _padded(region: Region, after: int, extra) -> Region:
    """A copy of `region` with placeholders of `extra`'s types inserted after its first
    `after` parameters (which it does not read): a while_loop's cond given the tangents."""
    g = Graph()
    body = region.graph
    mapping: dict = {}
    params = [_placeholder(g, p.shape, p.dtype, p.name, p.site) for p in body.inputs]
    mapping.update({id(p): q for p, q in zip(body.inputs, params)})
    pads = [_placeholder(g, s.shape, s.dtype, f"t_{s.name}") for s in extra]
    _copy_nodes([n for n in body.nodes if id(n.out) not in mapping], mapping, g)
    g.inputs = [*params[:after], *pads, *params[after:]]
    g.outputs = [mapping[id(s)] for s in body.outputs]
    return Region(g)


# -- scan ------------------------------------------------------------------------------------


def _scan_jvp(node, ins):
    a = node.attrs
    body, nc, nx = a["body"], a["num_carry"], a["num_xs"]
    ops = node.inputs
    n_caps = len(ops) - nc - nx
    t_carry = _floats(body.inputs[:nc])  # every float carry carries a tangent
    t_xs = [k for k in range(nx) if ins[nc + k] is not None]
    t_caps = [k for k in range(n_caps) if ins[nc + nx + k] is not None]
    moving = [*t_carry, *(nc + k for k in t_xs), *(nc + nx + k for k in t_caps)]
    p = _Pushed(body, moving)
    params, tan = p.params, p.tangents
    ys = range(nc, len(p.outs))
    t_ys = [k for k in ys if p.out_tangents[k] is not None]
    region = p.region(
        [*params[:nc], *(tan[k] for k in t_carry), *params[nc : nc + nx],
         *(tan[nc + k] for k in t_xs), *params[nc + nx :], *(tan[nc + nx + k] for k in t_caps)],
        [*p.outs[:nc], *(p.out_tangents[k] for k in t_carry), *p.outs[nc:],
         *(p.out_tangents[k] for k in t_ys)],
    )  # fmt: skip
    operands = [
        *ops[:nc], *(_as_tangent(ins[k], ops[k]) for k in t_carry), *ops[nc : nc + nx],
        *(_as_tangent(ins[nc + k], ops[nc + k]) for k in t_xs), *ops[nc + nx :],
        *(_as_tangent(ins[nc + nx + k], ops[nc + nx + k]) for k in t_caps),
    ]  # fmt: skip
    carry = nc + len(t_carry)
    new = bind(REGISTRY["scan"], *operands, body=region, length=a["length"],
               reverse=a["reverse"], num_carry=carry, num_xs=nx + len(t_xs))  # fmt: skip
    index = {k: nc + j for j, k in enumerate(t_carry)}
    index.update({k: carry + (len(p.outs) - nc) + j for j, k in enumerate(t_ys)})
    return TupleTangent(new, index, (nc, len(t_carry)))


# -- while_loop ------------------------------------------------------------------------------


def _while_jvp(node, ins):
    a = node.attrs
    cond, body, nc = a["cond"], a["body"], a["num_carry"]
    ops = node.inputs
    n_cond = len(cond.inputs) - nc
    body_caps = ops[nc + n_cond :]
    t_carry = _floats(body.inputs[:nc])
    t_caps = [k for k in range(len(body_caps)) if ins[nc + n_cond + k] is not None]
    p = _Pushed(body, [*t_carry, *(nc + k for k in t_caps)])
    params, tan = p.params, p.tangents
    region = p.region(
        [*params[:nc], *(tan[k] for k in t_carry), *params[nc:], *(tan[nc + k] for k in t_caps)],
        [*p.outs, *(p.out_tangents[k] for k in t_carry)],
    )
    test = _padded(cond, nc, [params[k] for k in t_carry])
    operands = [
        *ops[:nc], *(_as_tangent(ins[k], ops[k]) for k in t_carry), *ops[nc:],
        *(_as_tangent(ins[nc + n_cond + k], body_caps[k]) for k in t_caps),
    ]  # fmt: skip
    new = bind(REGISTRY["while_loop"], *operands, cond=test, body=region,
               num_carry=nc + len(t_carry))  # fmt: skip
    return TupleTangent(new, {k: nc + j for j, k in enumerate(t_carry)})


# -- cond ------------------------------------------------------------------------------------


def _cond_jvp(node, ins):
    a = node.attrs
    true, false, n_ops = a["branch_true"], a["branch_false"], a["num_operands"]
    ops = node.inputs
    n_true = len(true.inputs) - n_ops
    t_ops = [k for k in range(n_ops) if ins[1 + k] is not None]
    t_true = [k for k in range(n_true) if ins[1 + n_ops + k] is not None]
    first_false = 1 + n_ops + n_true
    t_false = [k for k in range(len(ops) - first_false) if ins[first_false + k] is not None]
    branches = []
    for region, t_own in ((true, t_true), (false, t_false)):
        p = _Pushed(region, [*t_ops, *(n_ops + k for k in t_own)])
        params, tan = p.params, p.tangents
        t_outs = [k for k, t in enumerate(p.out_tangents) if t is not None]
        branches.append(p.region(
            [*params[:n_ops], *(tan[k] for k in t_ops), *params[n_ops:],
             *(tan[n_ops + k] for k in t_own)],
            [*p.outs, *(p.out_tangents[k] for k in t_outs)],
        ))  # fmt: skip
    operands = [
        *ops[1 : 1 + n_ops], *(_as_tangent(ins[1 + k], ops[1 + k]) for k in t_ops),
        *ops[1 + n_ops : first_false],
        *(_as_tangent(ins[1 + n_ops + k], ops[1 + n_ops + k]) for k in t_true),
        *ops[first_false:], *(_as_tangent(ins[first_false + k], ops[first_false + k])
                              for k in t_false),
    ]  # fmt: skip
    new = bind(REGISTRY["cond"], ops[0], *operands, branch_true=branches[0],
               branch_false=branches[1], num_operands=n_ops + len(t_ops))  # fmt: skip
    n_out = len(true.outputs)
    t_outs = _floats(true.outputs)
    return TupleTangent(new, {k: n_out + j for j, k in enumerate(t_outs)})
