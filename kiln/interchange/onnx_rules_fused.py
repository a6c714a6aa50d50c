"""ONNX export rules for ops that stand for others: `fused` (a group of elementwise ops the
fusion pass made: its equations written one by one through their own rows of the table) and
`after` (an ordering barrier: its value is its first input). Rows of the one table in
onnx_rules.py."""

from __future__ import annotations

from types import SimpleNamespace

from ..ops.fused import compiled


class Member:
    """One equation of a fused node, shaped as the node its own rule expects: op, attrs,
    typed inputs and output; name and site are the fused node's."""

    def __init__(self, fused, op, attrs, inputs, out):
        self.op, self.attrs, self.inputs, self.out = op, attrs, inputs, out
        self.name, self.site = fused.name, fused.site


def _value(shape, dtype):
    return SimpleNamespace(shape=tuple(shape), dtype=dtype, ndim=len(shape))


def fused(ex, node, xs, out):
    """Each equation through its op's rule, in program order; the value names of the inputs
    and of the equations so far are the operands (kiln's `Program` slots). A node with
    several results gives the list of their names (its `get` nodes read them)."""
    from .onnx_rules import RULES

    a = node.attrs
    prog = compiled(a["program"], a["outputs"])
    shapes = prog.run_rules([i.shape for i in node.inputs], "shape_rule", ValueError)
    dtypes = prog.signature(tuple(i.dtype for i in node.inputs)).dtypes
    values = [_value(s, d) for s, d in zip(shapes, dtypes)]
    names = list(xs)
    last = len(prog.ops) - 1 if not prog.multi else None
    for j, (op, slots, attrs) in enumerate(zip(prog.ops, prog.slots, prog.attrs)):
        member = Member(node, op, attrs, [values[s] for s in slots], values[prog.n_in + j])
        rule = RULES[op.name]  # every fusable elementwise op has a row (test_onnx checks)
        names.append(rule(ex, member, [names[s] for s in slots], out if j == last else None))
    if prog.multi:
        return [names[prog.n_in + j] for j in prog.outputs]
    return names[-1]


def after(ex, node, xs, out):
    """`after(x, token)` is x: ONNX runs a node once its inputs exist, so the order it
    enforces inside kiln has no ONNX node (the token is left unread)."""
    return xs[0]


RULES = {"fused": fused, "after": after}
