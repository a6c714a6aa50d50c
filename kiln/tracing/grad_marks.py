"""Which values of a traced graph require grad (eager's rule) and which of those the outputs
reach: what `Traced` plans a gradient program for (kiln/tracing/traced.py)."""

from __future__ import annotations

from .. import dtypes as dt

__all__ = ["reached", "requiring_grad"]


def requiring_grad(nodes, sources) -> set:
    """ids of the values that require grad when `sources` do, by eager's rule: float outputs
    of ops (other than stop_gradient) with an input that requires grad."""
    marked = {id(s) for s in sources}
    for node in nodes:
        out = node.out
        differentiable = (
            dt.is_differentiable(out.dtype) or out.dtype == dt.TUPLE
        )  # a region op's result
        if node.op.name == "stop_gradient" or not differentiable or id(out) in marked:
            continue
        if any(id(i) in marked for i in node.inputs):
            marked.add(id(out))
    return marked


def reached(outputs, marked) -> set:
    """ids of the marked values that `outputs` depend on through marked values."""
    seen, stack = set(), [o for o in outputs if id(o) in marked]
    while stack:
        s = stack.pop()
        if id(s) not in seen:
            seen.add(id(s))
            stack.extend(i for i in s.node.inputs if id(i) in marked)
    return seen
