"""Rematerialization: recompute values instead of keeping them, to fit a memory budget.

A training graph keeps each forward value that the backward pass reads alive from the
forward pass to the backward pass. `long_lived(graph)` finds those values: in creation order
(forward first, then backward) their readers fall in two groups far apart, and the later
group are the *late readers*. `recompute(graph, dropped)` returns a graph in which the late
readers of each dropped value read a copy made again from values that are still alive (kept
long-lived values, Variables, feeds, random draws) just before the first of them runs.

The dropped values form segments: consecutive runs (in creation order) between two kept
values, as in checkpointing a chain of layers (Chen et al. 2016, "Training deep nets with
sublinear memory cost"). A segment is recomputed once, when the backward pass first reaches
it: its copies read `after(value, token)` of what they need, where `token` is the input of
the segment's first late reader that the backward pass made last, so no schedule can run the
copies before the backward pass gets there. Random draws are never recomputed (they would
change); their values are kept.

`choices(graph)` lists the candidate dropped sets, from keeping every long-lived value to
keeping a few; the caller plans each and keeps the cheapest that fits
(kiln/runtime/program.py).
"""

from __future__ import annotations

import numpy as np

from ..errors import GraphError
from ..graph.opdef import REGISTRY
from .program import rebuild

_NOT_RECOMPUTED = {"source", "random", "update"}


def check_budget(budget):
    """`budget` as an int number of bytes (None stays None); anything else is refused."""
    if budget is None:
        return None
    if isinstance(budget, bool) or not isinstance(budget, (int, np.integer)) or budget <= 0:
        raise GraphError(f"memory_budget must be a positive number of bytes, got {budget!r}")
    return int(budget)


def recomputable(node) -> bool:
    """Whether running `node` again gives the same value from the same inputs, and costs no
    new ordering: an op that may fail is not run again (every in-place update waits for
    each one, so that a failed step changes nothing)."""
    return bool(node.inputs) and not node.op.may_fail and not (_NOT_RECOMPUTED & set(node.op.tags))


def long_lived(graph) -> dict:
    """{id(node): (node, late reads)} for each recomputable forward value whose readers, in
    creation order, have a gap of at least `max(8, len(nodes) // 64)` nodes. The late reads
    are `(reader, through)` pairs for the readers after the widest gap, `through` being the
    value itself or the view of it that the reader reads (a transpose for a weight
    gradient: the view is recomputed with the value). Outputs and update values are kept
    (they live to the end anyway)."""
    return _analyse(graph)[0]


def _analyse(graph) -> tuple[dict, set]:
    """`long_lived`'s values, and the backward pass: the ids of what their late readers
    make (and everything made from that)."""
    nodes = graph.nodes
    pos = {id(n): k for k, n in enumerate(nodes)}
    readers: dict[int, list] = {}
    for n in nodes:
        for i in {id(i.node): i.node for i in n.inputs}.values():
            readers.setdefault(id(i), []).append(n)
    ends = {id(s.node) for s in [*graph.outputs, *graph.updates.values(), *graph.inputs]}
    threshold = max(8, len(nodes) // 64)
    # NOTE: made after every fetched value (the loss): the backward pass (gradients wait for
    # their updates), whatever the gaps in the readers of the forward values before it
    last_fetch = max((pos[id(s.node)] for s in graph.outputs if id(s.node) in pos), default=-1)
    found = {}
    for n in nodes:
        users = readers.get(id(n))
        if not users or id(n) in ends or not recomputable(n):
            continue
        if graph.outputs and pos[id(n)] > last_fetch and graph.updates:
            continue
        points = [pos[id(n)], *sorted({pos[id(u)] for u in users})]
        gap, k = max((points[k + 1] - points[k], k) for k in range(len(points) - 1))
        # NOTE: k > 0: read soon after it is made, and again much later. A value only read
        # much later (a gradient waiting for its update) is not one the forward pass made.
        if gap >= threshold and k > 0:
            late = [u for u in users if pos[id(u)] >= points[k + 1]]
            reads = _through_views(n, late, readers, ends)
            if reads is not None:
                found[id(n)] = (n, reads, late, users)
    # What the late readers make is the backward pass: a gradient waiting for its update is
    # not a forward value (recomputing it would need what it was made from).
    backward, stack = set(), [r for _, reads, _, _ in found.values() for r, _ in reads]
    while stack:
        n = stack.pop()
        if id(n) not in backward:
            backward.add(id(n))
            stack.extend(readers.get(id(n), ()))
    kept = {}
    for key, (n, reads, late, users) in found.items():
        if key in backward:
            continue
        # NOTE: every reader in the backward pass is a late one, not only those after the
        # widest gap: an update made at the end that reads the value itself (a weight
        # gradient's GEMM) would otherwise leave the backward pass's own reads on the kept
        # value.
        after = {id(u) for u in late}
        more = [u for u in users if id(u) in backward and id(u) not in after]
        if more:
            reads = _through_views(n, [*late, *more], readers, ends)
        if reads is not None:
            kept[key] = (n, reads)
    return kept, backward


def _through_views(node, late, readers, ends):
    """The late reads of `node`, a late reader that is a view of it replaced by its own
    readers (recursively); None when a view is fetched or updated (it must stay)."""
    reads, stack = [], [(u, node) for u in late]
    while stack:
        u, through = stack.pop()
        if u.op.views and recomputable(u):
            if id(u) in ends or not readers.get(id(u)):
                return None
            stack.extend((r, u) for r in readers[id(u)])
        else:
            reads.append((u, through))
    return reads


def choices(graph, limit: int = 12) -> list[tuple[str, set]]:
    """Candidate sets of long-lived values to drop, labelled, cheapest recomputation first:
    keep every k-th (k = 2, 3, 4, ...), then keep counts that grow towards the end of the
    forward pass (the backward pass frees the last kept values first, so the first segments,
    recomputed last, can be longer)."""
    found = long_lived(graph)
    order = sorted(found, key={id(n): k for k, n in enumerate(graph.nodes)}.__getitem__)
    n = len(order)
    if n < 2:
        return []
    out, seen = [], set()

    def add(label, kept):
        dropped = frozenset(order[i] for i in range(n) if i not in kept)
        if dropped and dropped not in seen:
            seen.add(dropped)
            out.append((label, set(dropped)))

    k = 2
    while k <= n and len(out) < limit // 2:
        last = 0 if 10 <= k % 100 <= 20 else k % 10
        nth = f"{k}{ {1: 'st', 2: 'nd', 3: 'rd'}.get(last, 'th') }"
        add(f"keep every {nth} of {n} long-lived values", set(range(k - 1, n, k)))
        k = k + 1 if k < 4 else int(k * 1.5)
    for m in range(2, n):
        # m kept values; segment j (from the end of the forward pass) is about j + c long,
        # so the kept values still alive plus the segment being recomputed stay about level.
        c = max(1.0, (n - m * (m + 1) / 2) / (m + 1))
        kept, at, j = set(), n, 1
        while at > 0 and len(kept) < m:
            at -= max(1, round(j + c - 1))
            if at > 0:
                kept.add(at - 1)
            j += 1
        add(f"keep {len(kept)} of {n} long-lived values, segments growing backwards", kept)
        if len(out) >= limit:
            break
    return out


def recompute(graph, dropped: set):
    """A copy of `graph` where the late readers of each dropped value (ids from
    `long_lived`) read a copy recomputed in the backward pass; see the module's text."""
    found, backward = _analyse(graph)
    nodes = graph.nodes
    pos = {id(n): k for k, n in enumerate(nodes)}
    kept = set(found) - set(dropped)
    segment, k = {}, 0
    for nid in sorted(found, key=pos.__getitem__):
        if nid in dropped:
            segment[nid] = k
        else:
            k += 1
    late: dict[int, list] = {}  # id(late reader) -> [(what it reads, its segment)]
    first: dict[int, object] = {}  # segment -> its first late reader in creation order
    for nid in dropped:
        for r, through in found[nid][1]:
            late.setdefault(id(r), []).append((through, segment[nid]))
            f = first.get(segment[nid])
            if f is None or pos[id(r)] < pos[id(f)]:
                first[segment[nid]] = r
    memos: dict[int, _Segment] = {}
    new: dict[int, object] = {}  # id(original value) -> its value in the copy

    def rule(node, inputs, copy):
        if id(node) not in late:
            return None
        swap = {}
        for through, s in late[id(node)]:
            if s not in memos:  # the backward pass reaches segment s: order its copies
                token = _token(first[s], nodes, pos, backward, found)
                memos[s] = _Segment(None if token is None else new[id(token.out)], copy, kept,
                                    new)  # fmt: skip
            swap[id(through)] = memos[s].value(through)
        ins = [swap.get(id(i.node), m) for i, m in zip(node.inputs, inputs)]
        clone = copy.add_node(node.op, ins, node.attrs, node.name, node.site,
                              node.out.shape, node.out.dtype)  # fmt: skip
        clone.ref = node.ref
        return clone.out

    return rebuild(graph, rule, new)


def _token(reader, nodes, pos, backward, found):
    """What a segment's copies wait for: the input of its first late reader that the
    backward pass made last (the cotangent arriving), else the backward node made just
    before that reader. None when there is none."""
    made = [i.node for i in reader.inputs if id(i.node) in backward and id(i.node) not in found]
    if made:
        return max(made, key=lambda n: pos[id(n)])
    for k in range(pos[id(reader)] - 1, -1, -1):
        n = nodes[k]
        if id(n) in backward and id(n) not in found:
            return n
    return None


class _Segment:
    """One segment's recomputation in the copy: each value made again at most once, from
    kept long-lived values and unrepeatable ones read through `after(value, token)`."""

    def __init__(self, token, copy, kept, new):
        self.token, self.copy, self.kept, self.new = token, copy, kept, new
        self.made: dict = {}  # id(original node) -> its recomputed value
        self.ordered: dict = {}  # id(value read) -> after(value, token)

    def _again(self, node) -> bool:
        return recomputable(node) and id(node) not in self.kept

    def value(self, node):
        """The recomputed copy of `node`'s value (made with whatever it needs first)."""
        stack = [(node, False)]
        while stack:
            n, ready = stack.pop()
            if id(n) in self.made:
                continue
            if not ready:
                stack.append((n, True))
                stack.extend((i.node, False) for i in n.inputs if self._again(i.node))
                continue
            ins = [self.made[id(i.node)] if self._again(i.node) else self._read(i)
                   for i in n.inputs]  # fmt: skip
            clone = self.copy.add_node(n.op, ins, n.attrs, f"{n.name}_recomputed", n.site,
                                       n.out.shape, n.out.dtype)  # fmt: skip
            clone.ref = n.ref
            self.made[id(n)] = clone.out
        return self.made[id(node)]

    def _read(self, original):
        value = self.new[id(original)]
        if self.token is None:
            return value
        if id(value) not in self.ordered:
            self.ordered[id(value)] = self.copy.add_node(
                REGISTRY["after"], [value, self.token], {}, f"{original.node.name}_after",
                original.node.site, value.shape, value.dtype,
            ).out  # fmt: skip
        return self.ordered[id(value)]
