"""`schedule`: a topological order that keeps peak memory low.

It tries a few orders (creation order, a greedy one that frees memory early, a depth-first
one that finishes each branch before the next) and keeps the one whose live set peaks
lowest, never worse than creation order. `after` adds ordering edges (an in-place update
must run after every other reader of the variable it overwrites).
"""

from __future__ import annotations

import heapq

from ..errors import GraphError


def schedule(nodes, sizes, after=None) -> list:
    """The best of the heuristic orders of `nodes` (a topological list).

    `sizes[i]` are the bytes node i allocates (0 for views and sources); `after[i]` is a
    set of node indices that must precede node i besides its inputs.
    """
    deps = _deps(nodes, after or {})
    creation = list(range(len(nodes))) if not after else _in_index_order(deps)
    orders = [creation, _greedy(deps, sizes), _depth_first(deps, len(nodes))]
    if len(creation) != len(nodes):  # NOTE: callers add only edges that keep it acyclic
        raise GraphError("schedule: the ordering edges form a cycle")
    peaks = [peak_bytes(order, deps, sizes) for order in orders]
    best = min(range(len(orders)), key=lambda k: (peaks[k], k))
    return [nodes[i] for i in orders[best]]


def _deps(nodes, after) -> list:
    index = {id(n.out): i for i, n in enumerate(nodes)}
    deps = []
    for i, n in enumerate(nodes):
        d = {index[id(x)] for x in n.inputs if id(x) in index}
        d |= set(after.get(i, ()))
        deps.append(sorted(d))
    return deps


def _users(deps) -> list:
    users = [[] for _ in deps]
    for i, d in enumerate(deps):
        for j in d:
            users[j].append(i)
    return users


def peak_bytes(order, deps, sizes) -> int:
    """The largest sum of live bytes when running `order` (a value lives until its last user)."""
    users = _users(deps)
    remaining = [len(u) for u in users]
    live = peak = 0
    for i in order:
        live += sizes[i]
        peak = max(peak, live)
        for j in deps[i]:
            remaining[j] -= 1
            if remaining[j] == 0:
                live -= sizes[j]
        if not users[i]:
            live -= sizes[i]
    return peak


def _in_index_order(deps) -> list:
    """Creation order where `after` edges allow it: among ready nodes, the lowest index."""
    users = _users(deps)
    waiting = [len(d) for d in deps]
    ready = [i for i, w in enumerate(waiting) if w == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        i = heapq.heappop(ready)
        order.append(i)
        for u in users[i]:
            waiting[u] -= 1
            if waiting[u] == 0:
                heapq.heappush(ready, u)
    return order


def _greedy(deps, sizes) -> list:
    """Among ready nodes, run the one that frees the most bytes net of what it allocates."""
    users = _users(deps)
    remaining = [len(u) for u in users]
    waiting = [len(d) for d in deps]

    def score(i):
        freed = sum(sizes[j] for j in deps[i] if remaining[j] == 1)
        return sizes[i] - freed

    ready = [(score(i), i) for i, w in enumerate(waiting) if w == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        s, i = heapq.heappop(ready)
        current = score(i)
        if current != s:  # another node ran since it was scored
            heapq.heappush(ready, (current, i))
            continue
        order.append(i)
        for j in deps[i]:
            remaining[j] -= 1
        for u in users[i]:
            waiting[u] -= 1
            if waiting[u] == 0:
                heapq.heappush(ready, (score(u), u))
    return order


def _depth_first(deps, n) -> list:
    """Post-order from the sinks: each value's inputs just before it, deepest branch first."""
    users = _users(deps)
    sinks = [i for i in range(n) if not users[i]]
    order, done = [], [False] * n
    for sink in sinks:
        stack = [(sink, False)]
        while stack:
            i, expanded = stack.pop()
            if done[i]:
                continue
            if expanded:
                done[i] = True
                order.append(i)
                continue
            stack.append((i, True))
            stack.extend((j, False) for j in reversed(deps[i]) if not done[j])
    return order
