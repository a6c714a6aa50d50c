"""`schedule`: a topological order that keeps peak memory low.

It tries a few orders (creation order, a greedy one that frees memory early, a depth-first
one that finishes each branch before the next) and keeps the one whose live set peaks
lowest, never worse than creation order. `after` adds ordering edges (an in-place update
must run after every other reader of the variable it overwrites).
"""

from __future__ import annotations

import heapq

from ..errors import GraphError

# Hoisting walks each update's ancestors: past this many (updates x nodes) it is left out,
# so compiling stays about linear in the graph's size (a 16-layer MLP step: 32 x 300).
_HOIST_WORK = 4_000_000


def schedule(nodes, sizes, after=None) -> list:
    """The best of the heuristic orders of `nodes` (a topological list).

    `sizes[i]` are the bytes node i allocates (0 for views and sources); `after[i]` is a
    set of node indices that must precede node i besides its inputs. Ordering edges order
    nodes; only inputs keep values alive.
    """
    deps = _deps(nodes, after or {})
    data = _storage_deps(nodes)
    creation = list(range(len(nodes))) if not after else _in_index_order(deps)
    orders = [creation, _greedy(deps, data, sizes), _depth_first(deps, len(nodes)),
              _greedy(deps, data, sizes, by_need=True)]  # fmt: skip
    if len(creation) != len(nodes):  # NOTE: callers add only edges that keep it acyclic
        raise GraphError("schedule: the ordering edges form a cycle")
    if after and len(after) * len(nodes) <= _HOIST_WORK:
        users = _users(deps)
        orders += [_hoist(order, deps, users, sorted(after)) for order in orders]
    peaks = [peak_bytes(order, data, sizes) for order in orders]
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


def _storage_deps(nodes) -> list:
    """Each node's inputs for liveness: a view read stands for the value it views (a view
    allocates nothing and keeps its base alive), so a value lives until the last reader of
    it or of any view of it."""
    index = {id(n.out): i for i, n in enumerate(nodes)}
    root = []
    for i, n in enumerate(nodes):
        views = [index[id(n.inputs[k])] for k in n.op.views if id(n.inputs[k]) in index]
        root.append(root[views[0]] if views else i)
    return [sorted({root[index[id(x)]] for x in n.inputs if id(x) in index} - {root[i]})
            for i, n in enumerate(nodes)]  # fmt: skip


def _users(deps) -> list:
    users = [[] for _ in deps]
    for i, d in enumerate(deps):
        for j in d:
            users[j].append(i)
    return users


def peak_bytes(order, deps, sizes) -> int:
    """The largest sum of live bytes when running `order` (a value lives until its last user
    among `deps`, the nodes' inputs)."""
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


def _hoist(order, deps, users, roots) -> list:
    """`order` with each root (an in-place update) and the values only it needs (its weight
    gradient, the gradient's scaling) run together right after their last other input:
    the update then frees the gradient, and the cotangent and activation it read, at once,
    instead of keeping every layer's until the end of the backward pass."""
    order = list(order)
    for root in roots:
        pos = {n: k for k, n in enumerate(order)}
        cone = {root}
        for a in sorted(_ancestors(root, deps), key=pos.__getitem__, reverse=True):
            if users[a] and all(u in cone for u in users[a]):
                cone.add(a)
        outside = {d for c in cone for d in deps[c]} - cone
        start = max((pos[d] for d in outside), default=-1) + 1
        # NOTE: the root only moves up (it needs every input of the cone); the others may
        # move down to `start`, but only the cone uses them.
        moved = sorted(cone, key=pos.__getitem__)
        rest = [n for n in order if n not in cone]
        cut = sum(1 for n in order[:start] if n not in cone)
        order = rest[:cut] + moved + rest[cut:]
    return order


def _ancestors(root, deps) -> set:
    seen, stack = set(), list(deps[root])
    while stack:
        n = stack.pop()
        if n not in seen:
            seen.add(n)
            stack.extend(deps[n])
    return seen


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


def _greedy(deps, data, sizes, by_need: bool = False) -> list:
    """Among ready nodes (all of `deps` run), run the one that frees the most bytes net of
    what it allocates (a value is freed when its last user among `data` runs).

    `by_need`: a node that frees nothing waits until it is needed: among those, the one
    whose first user comes first in creation order runs first (a backward pass's mask of an
    activation is then made in the backward pass, not when the activation is).
    """
    users = _users(deps)
    remaining = [len(u) for u in _users(data)]
    waiting = [len(d) for d in deps]
    need = [min(u, default=len(deps)) for u in users]

    def score(i):
        freed = sum(sizes[j] for j in data[i] if remaining[j] == 1)
        net = sizes[i] - freed
        if by_need:
            return (net, 0) if net <= 0 else (1, need[i])
        return net

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
        for j in data[i]:
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
