"""Reverse-mode differentiation of a graph into the same graph (gradients are ordinary nodes).

One place (`sum_to_shape`) sums a cotangent back to its input's shape after broadcasting,
and one place adds up the cotangents of a value used more than once; vjp rules stay short.
"""

from __future__ import annotations

from .. import dtypes as dt
from .. import shapes as sh
from ..errors import ArgumentError, GraphError
from ..graph.core import Symbol
from ..graph.region import Region
from ..ops.core import apply, scalar
from ..ops.multi import element_count
from .region_grad import region_vjp
from .vectorize import ancestors, positions


def differentiate(ys, xs, grad_ys=None, disconnected: str = "raise", since: int = 0) -> list:
    """Symbols for d(sum of ys · grad_ys)/dx for each x in `xs`, built into ys' graph.

    `disconnected="raise"` raises GraphError for an x the ys do not depend on (naming the
    op that blocks the path when there is one); `"zero"` gives zeros instead, `"none"` None;
    `"tape"` None where eager's tape would not reach x either (no path of floating values
    without a stop_gradient) and zeros where it would (a path through ops with no gradient,
    as floor's: PyTorch's zeros).
    `since`: the xs were made at or after this position of the graph, so no older node is
    visited (a local differentiation stays local).
    """
    if disconnected not in ("raise", "zero", "none", "tape"):
        raise ArgumentError(
            f"disconnected must be 'raise', 'zero', 'none' or 'tape', got {disconnected!r}"
        )
    graph = ys[0].graph
    if graph.optimized:
        passes = ", ".join(graph.optimized)
        raise GraphError(
            f"cannot differentiate a program graph made by optimizing passes ({passes}): "
            "they keep values but not gradients (stop_gradient is removed, fused ops have no "
            "vjp). Differentiate the graph it was compiled from, then compile the gradients"
        )
    seeds = _seeds(ys, grad_ys)
    with graph.name_scope("grad"):
        cts = _backward(graph, ys, xs, seeds, since)
    results = []
    for x in xs:
        ct = cts.get(id(x))
        if ct is None:
            if disconnected == "raise":
                raise GraphError(_disconnected_message(graph, x, ys))
            if disconnected == "none" or (disconnected == "tape" and not _on_tape(x, ys, since)):
                results.append(None)
                continue
            ct = apply("broadcast_to", scalar(0, x), shape=x.shape)
        results.append(ct)
    return results


def _seeds(ys, grad_ys):
    if grad_ys is None:
        grad_ys = [None] * len(ys)
    if len(grad_ys) != len(ys):
        raise GraphError(f"grad_ys has {len(grad_ys)} entries for {len(ys)} ys")
    seeds = []
    for y, g in zip(ys, grad_ys):
        if not dt.is_differentiable(y.dtype):
            raise GraphError(f"cannot differentiate '{y.name}' of dtype {y.dtype} ({y.site})")
        if g is None:
            if y.dtype.kind == "c":
                raise GraphError(
                    f"grad can be implicitly created only for real scalar outputs: '{y.name}' "
                    f"({y.op.name}, created at {y.site}) is {y.dtype}; pass grad_ys="
                )
            if y.shape != ():
                raise GraphError(
                    f"grad can be implicitly created only for scalar outputs: '{y.name}' "
                    f"({y.op.name}, created at {y.site}) has shape {y.shape}; pass grad_ys="
                )
            g = scalar(1, y)
        elif not isinstance(g, Symbol):
            from ..frontend.core import constant

            g = constant(g, dtype=y.dtype, graph=y.graph)
        seeds.append(g)
    return seeds


def _relevant(graph, ys, xs, since=0):
    """Float nodes that lie on a path from some x to some y, in graph order. Only the nodes
    the ys depend on made since the oldest x are visited (not the whole graph), so building
    gradients one after another stays linear in what each one reads."""
    where = positions(graph)
    since = max(since, min((where.get(id(x.node), 0) for x in xs), default=0))
    nodes = sorted(ancestors(ys, since=since), key=lambda n: where[id(n)])
    from_x = {id(x) for x in xs}
    for node in nodes:
        if any(id(i) in from_x for i in node.inputs) and _carries_ct(node.out.dtype):
            from_x.add(id(node.out))
    to_y, stack = set(), [y for y in ys if id(y) in from_x]
    while stack:
        s = stack.pop()
        if id(s) in to_y:
            continue
        to_y.add(id(s))
        stack.extend(i for i in s.node.inputs if id(i) in from_x)
    return [n for n in nodes if id(n.out) in to_y], to_y


def _on_tape(x, ys, since=0) -> bool:
    """Whether some y depends on x through floating values with no stop_gradient between
    them: eager's tape records that path (every float output of an op with an input that
    requires grad requires grad), so its gradient is zeros, not None, where no op on it has a
    gradient."""
    where = positions(x.graph)
    since = max(since, where.get(id(x.node), 0))
    reach = {id(x)}
    for node in sorted(ancestors(ys, since=since), key=lambda n: where[id(n)]):
        if (
            node.op.name != "stop_gradient"
            and _carries_ct(node.out.dtype)
            and any(id(i) in reach for i in node.inputs)
        ):
            reach.add(id(node.out))
    return any(id(y) in reach for y in ys)


def _carries_ct(dtype) -> bool:
    """Floats have cotangents; so does a tuple (a region op's result), element by element."""
    return dt.is_differentiable(dtype) or dtype == dt.TUPLE


def _backward(graph, ys, xs, seeds, since=0) -> dict:
    nodes, relevant = _relevant(graph, ys, xs, since)
    targets = {id(x) for x in xs}
    cts: dict = {}
    for y, seed in zip(ys, seeds):
        _accumulate(cts, y, seed)
    results = {}
    recompute = _Recompute(graph)
    for node in reversed(nodes):
        ct = cts.pop(id(node.out), None)
        if ct is None:
            continue
        if id(node.out) in graph.grad_hooks and not isinstance(ct, dict):
            ct = _run_hooks(node.out, ct, graph.grad_hooks[id(node.out)])
        if id(node.out) in targets:
            results[id(node.out)] = ct
        if node.op.name == "get":  # one element of a tuple: collected for its region op or
            # its multi-result op (kiln/ops/multi.py)
            tuple_ct = cts.setdefault(id(node.inputs[0]), {})
            k = node.attrs["index"]
            tuple_ct[k] = ct if k not in tuple_ct else apply("add", tuple_ct[k], ct)
            continue
        if "region" in node.op.tags:
            with graph.site(node.site):
                outs = _region_outputs(node)
                in_cts = region_vjp(node, [ct.get(k) for k in range(outs)], relevant)
            for inp, c in zip(node.inputs, in_cts):
                if c is not None and id(inp) in relevant:
                    _accumulate(cts, inp, c)
            continue
        if node.op.vjp is None:
            if "nondiff" not in node.op.tags and node.inputs:
                raise GraphError(
                    f"no gradient rule for {node.op.name} ('{node.name}', created at "
                    f"{node.site}), which lies between the ys and the xs"
                )
            continue
        with graph.site(node.site):
            token = ct
            if "multi" in node.op.tags:  # a tuple: one cotangent (or None) per element
                token = next(iter(ct.values()))
                ct = [ct.get(k) for k in range(element_count(node))]
            out, inputs = recompute.primals(node, token)
            if "vjp_needs" in node.op.tags:
                needs = tuple(id(inp) in relevant for inp in node.inputs)
                in_cts = node.op.vjp(ct, out, *inputs, needs=needs, **node.attrs)
            else:
                in_cts = node.op.vjp(ct, out, *inputs, **node.attrs)
            for inp, c in zip(node.inputs, in_cts):
                if c is not None and id(inp) in relevant:
                    _accumulate(cts, inp, c)
    return results


def _run_hooks(value, ct, hooks):
    """`value`'s gradient `ct` after its `register_hook` hooks, in order: a value a hook
    returns (of the same shape) replaces it."""
    for hook in list(hooks.values()):
        result = hook(ct)
        if result is None:
            continue
        if not isinstance(result, Symbol):
            from ..frontend.core import constant

            result = constant(result, dtype=ct.dtype, graph=ct.graph)
        if tuple(result.shape) != tuple(ct.shape):
            raise GraphError(
                f"hook of '{value.name}' ({value.op.name}, created at {value.site}) returned a "
                f"gradient of shape {list(result.shape)}, expected {list(ct.shape)}"
            )
        ct = result
    return ct


def _region_outputs(node) -> int:
    """How many elements a region op's tuple has: its (first) body's results."""
    return len(next(v for v in node.attrs.values() if isinstance(v, Region)).outputs)


class _Recompute:
    """The values a vjp reads: the node's own, or for a node of a kn.checkpoint region,
    copies of the region's nodes made in the backward pass (from `after(input, ct)` of its
    inputs, with the cotangent that first reaches the region), so the forward pass keeps
    only the region's inputs alive. Random nodes are not recomputed (their draws must not
    change): their values are kept."""

    def __init__(self, graph):
        self.graph = graph
        self.region = {nid: k for k, ids in enumerate(graph.checkpoints) for nid in ids}
        self.copies: dict[int, dict] = {}  # region -> {id(original value): its copy}

    def primals(self, node, ct):
        k = self.region.get(id(node))
        if k is None:
            return node.out, node.inputs
        copies = self.copies.get(k)
        if copies is None:
            copies = self.copies[k] = self._copy(k, ct)
        get = lambda s: copies.get(id(s), s)  # noqa: E731
        return get(node.out), [get(i) for i in node.inputs]

    def _copy(self, k, ct) -> dict:
        ids, graph, copies = self.graph.checkpoints[k], self.graph, {}
        for n in graph.nodes:
            if id(n) not in ids or n.op.tags & {"random", "source", "collective"}:
                continue
            inputs = []
            for i in n.inputs:
                if id(i) not in copies:  # from outside the region (or a random draw)
                    copies[id(i)] = apply("after", i, ct)
                inputs.append(copies[id(i)])
            clone = graph.add_node(n.op, inputs, n.attrs, f"{n.name}_recomputed", n.site,
                                   n.out.shape, n.out.dtype)  # fmt: skip
            clone.ref = n.ref
            copies[id(n.out)] = clone.out
        return copies


def _accumulate(cts, x, ct):
    ct = real_part_for(sum_to_shape(ct, x.shape), x.dtype)
    if ct.dtype != x.dtype:
        ct = apply("cast", ct, dtype=x.dtype)
    prev = cts.get(id(x))
    cts[id(x)] = ct if prev is None else apply("add", prev, ct)


def real_part_for(ct, dtype):
    """`ct`, or its real part when it is complex and its value of real `dtype`: the
    cotangent of a real value that became complex (PyTorch's)."""
    if ct.dtype.kind == "c" and dtype.kind != "c":
        return apply("real", ct)
    return ct


def sum_to_shape(ct, shape):
    """Sums `ct` over the axes that broadcasting added or stretched, to get `shape`. Where
    a dim of either is a length the run binds (kiln/shapes.py `run_bound`) and they may
    differ, the run decides: the op `sum_to` sums where the operand's size was 1."""
    if tuple(ct.shape) == tuple(shape):
        return ct
    lead = ct.ndim - len(shape)
    if lead < 0:
        raise GraphError(f"cotangent of shape {ct.shape} is smaller than its value's {shape}")
    if any(d != c and not isinstance(d, int) and sh.run_bound((d, c))
           for d, c in zip(shape, ct.shape[lead:])):  # fmt: skip
        return apply("sum_to", ct, shape=tuple(shape))
    axes = tuple(range(lead)) + tuple(
        lead + i for i, d in enumerate(shape) if d == 1 and ct.shape[lead + i] != 1
    )
    if axes:
        ct = apply("reduce_sum", ct, axes=axes, keepdims=True)
    return apply("reshape", ct, shape=tuple(shape)) if tuple(ct.shape) != tuple(shape) else ct


def _disconnected_message(graph, x, ys) -> str:
    names = ", ".join(f"'{y.name}'" for y in ys)
    blocker = _blocking_node(graph, x, ys)
    if blocker is not None:
        return (
            f"'{x.name}' reaches {names} only through {blocker.op.name} "
            f"('{blocker.name}', created at {blocker.site}), which has no gradient; "
            "pass disconnected='zero' for zeros"
        )
    return (
        f"{names} does not depend on '{x.name}' ({x.op.name}, created at {x.site}); "
        "pass disconnected='zero' for zeros"
    )


def _blocking_node(graph, x, ys):
    """The first node on a path from x to the ys that stops the gradient, if any."""
    last = max(graph.nodes.index(y.node) for y in ys)
    reach = {id(x)}
    for node in graph.nodes[: last + 1]:
        if any(id(i) in reach for i in node.inputs):
            reach.add(id(node.out))
    to_y, stack = set(), [y for y in ys if id(y) in reach]
    while stack:
        s = stack.pop()
        if id(s) not in to_y:
            to_y.add(id(s))
            stack.extend(i for i in s.node.inputs if id(i) in reach)
    for node in graph.nodes[: last + 1]:
        if id(node.out) in to_y and any(id(i) in to_y for i in node.inputs):
            if node.op.vjp is None or not dt.is_differentiable(node.out.dtype):
                return node
    return None
