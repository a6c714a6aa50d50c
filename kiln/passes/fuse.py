"""`fuse_elementwise`: each group of connected elementwise nodes becomes one `fused` node,
which a backend runs as one kernel (cache-blocked on the CPU, one compiled kernel on a GPU)."""

from __future__ import annotations

import heapq
import math

from .. import dtypes as dt
from ..graph.core import Graph, Node, Symbol
from ..graph.opdef import REGISTRY
from ..ops.dynamic import data_atoms, holds

_NOT_FUSABLE = frozenset({"random", "source", "update", "fused"})


def fusable(node) -> bool:
    """An elementwise node that a group may hold (not random, not a source, not fused, and
    nothing in bfloat16 or complex, which the fused kernels' scalar code has no type for; nor an
    op that may fail, which the planner orders before in-place updates and a fused node would
    hide)."""
    return (
        "elementwise" in node.op.tags
        and not node.op.tags & _NOT_FUSABLE
        and not node.op.may_fail
        and _scalar_typed(node.out.dtype)
        and all(_scalar_typed(i.dtype) for i in node.inputs)
    )


def _scalar_typed(dtype) -> bool:
    return dtype != dt.bfloat16 and dtype.kind != "c"


def fuse_elementwise(
    graph: Graph,
    min_bytes: int = 0,
    min_ops: int = 2,
    small_bytes: int = 0,
    several_results: bool = True,
    small_min_ops: int = 2,
) -> Graph:
    """A copy of the program graph `graph` where each group of two or more fusable nodes is one
    `fused` node, with the site of the group's last node.

    A group is a convex set of connected elementwise nodes (`find_groups`). Its last node is its
    result; a member whose value is also used outside the group (or fetched, or written by an
    update) is one more result, of the group's shape: the `fused` node then has a tuple of
    results (one per result member, in program order) that `get` nodes read, named as the
    members they stand for. With `min_bytes`, only groups whose last node has a static shape
    of at least that many bytes are fused (where fusing pays on the device), and only groups
    of at least `min_ops` nodes; groups whose last node has a static shape of at most
    `small_bytes` bytes are fused whatever their size and count (where one compiled loop
    replaces a kernel call per op). With `several_results` False, every group has one result:
    a value used outside ends its group (how kiln fused before groups had several results).

    >>> import kiln as kn
    >>> from kiln.passes.program import extract
    >>> with kn.Graph().as_default():
    ...     x = kn.placeholder(kn.float32, (3,), name="x")
    ...     h = kn.tanh(x * 2.0)
    ...     y = h + x
    >>> [n.op.name for n in fuse_elementwise(extract([y], [x], {})).nodes]
    ['placeholder', 'constant', 'fused']
    >>> [n.op.name for n in fuse_elementwise(extract([y, h], [x], {})).nodes]
    ['placeholder', 'constant', 'fused', 'get', 'get']
    """
    groups = find_groups(graph, several_results)
    big = lambda sym: not min_bytes or _static_bytes(sym) >= min_bytes  # noqa: E731
    small = lambda sym: _is_static(sym) and _static_bytes(sym) <= small_bytes  # noqa: E731
    groups = {k: m for k, m in groups.items()
              if (len(m) >= min_ops and big(m[-1].out))
              or (len(m) >= small_min_ops and small(m[-1].out))}  # fmt: skip
    copy = Graph()
    copy.source = graph.source
    new: dict[int, Symbol] = {}
    pinned = {id(s) for s in (*graph.outputs, *graph.updates.values())}
    names = {n.name for n in graph.nodes}
    counts: dict[int, int] = {}  # id(value) -> how many node inputs read it
    for n in graph.nodes:
        for i in n.inputs:
            counts[id(i)] = counts.get(id(i), 0) + 1
    for unit in _order(graph, groups):
        if isinstance(unit, list):
            _fused_node(copy, unit, new, pinned, counts, names)
            continue
        inputs = [new[id(i)] for i in unit.inputs]
        clone = copy.add_node(unit.op, inputs, unit.attrs, unit.name, unit.site,
                              unit.out.shape, unit.out.dtype)  # fmt: skip
        clone.ref = unit.ref
        new[id(unit.out)] = clone.out
    copy.inputs = [new[id(s)] for s in graph.inputs]
    copy.outputs = [new[id(s)] for s in graph.outputs]
    copy.updates = {var: new[id(s)] for var, s in graph.updates.items()}
    return copy


def _order(graph: Graph, groups: dict) -> list:
    """The nodes outside groups and the groups (lists of members), in a topological order of
    the graph with each group contracted to one node: graph order with each group at its last
    member's place (`find_groups` makes groups for which that is one), else the earliest
    ready unit first."""
    unit_of: dict[int, int] = {}  # id(node) -> the index (graph order) of its unit's key node
    for members in groups.values():
        last = members[-1]
        for m in members:
            unit_of[id(m)] = id(last)
    index = {id(n): t for t, n in enumerate(graph.nodes)}
    units: dict[int, object] = {}
    for n in graph.nodes:
        k = unit_of.get(id(n), id(n))
        if k == id(n):
            units[k] = groups.get(id(n), n)
    pending = {k: 0 for k in units}
    users: dict[int, list] = {k: [] for k in units}
    for k, unit in units.items():
        members = unit if isinstance(unit, list) else [unit]
        for m in members:
            for i in m.inputs:
                src = unit_of.get(id(i.node), id(i.node))
                if src != k:
                    pending[k] += 1
                    users[src].append(k)
    ready = [(index[k], k) for k, c in pending.items() if c == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        _, k = heapq.heappop(ready)
        order.append(units[k])
        for u in users[k]:
            pending[u] -= 1
            if pending[u] == 0:
                heapq.heappush(ready, (index[u], u))
    if len(order) != len(units):  # groups that feed each other: find_groups makes none
        raise AssertionError("fuse_elementwise: the groups are not convex")
    return order


def _is_static(sym) -> bool:
    return all(isinstance(d, int) for d in sym.shape)


def _static_bytes(sym) -> int:
    if not _is_static(sym):
        return 0  # a symbolic size: not known to be large
    return math.prod(sym.shape) * sym.dtype.itemsize


def find_groups(graph: Graph, several_results: bool = True) -> dict:
    """id(last node) -> the group's nodes in graph order, for groups of two or more.

    In reverse order, a fusable node joins the group of one of its users when its shape
    broadcasts to that group's last node's (the group's iteration shape). A node whose value
    is also used outside the group, fetched or updated is one of the group's results: it joins
    only with the iteration shape itself (one loop writes every result), and only where each
    of its users outside the group comes after the group's last node (or is in a group whose
    last node does) and the group reads nothing made after the node (its users would wait).
    Then every edge between groups and other nodes runs forward in graph order, from a
    group's last node's place: the groups are convex (no path leaves one and comes back), and
    replacing each by one node keeps the graph acyclic (checking each group's convexity alone
    would not: two groups could each feed the other). With `several_results` False, a value
    used outside ends its group instead.
    """

    users: dict[int, list] = {}
    for node in graph.nodes:
        for i in node.inputs:
            users.setdefault(id(i), []).append(node)
    pinned = {id(s) for s in (*graph.outputs, *graph.updates.values(), *graph.inputs)}
    position = {id(n): t for t, n in enumerate(graph.nodes)}
    result_of: dict[int, Node] = {}
    inputs: dict[int, dict] = {}  # id(last node) -> {id(value read from outside): its place}
    data = data_atoms(graph)  # a value of a length the run gives has no fused kernel
    for node in reversed(graph.nodes):
        if not fusable(node) or data and holds(tuple(node.out.shape), data):
            continue
        node_users = users.get(id(node.out), ())
        result = node
        candidates = {}
        for u in node_users:
            found = result_of.get(id(u))
            if found is not None:
                candidates.setdefault(id(found), found)
        for candidate in candidates.values():
            shape, target = node.out.shape, candidate.out.shape
            if not _broadcasts_to(shape, target):
                continue
            outside = [u for u in node_users if result_of.get(id(u)) is not candidate]
            if outside or id(node.out) in pinned:  # a result of the group
                if not several_results or tuple(shape) != tuple(target):
                    continue
                last = position[id(candidate)]
                if any(position[id(result_of.get(id(u), u))] < last for u in outside):
                    continue  # a user the group's value would reach before it is made
                later = (t for v, t in inputs[id(candidate)].items() if v != id(node.out))
                if outside and max(later, default=-1) > position[id(node)]:
                    continue  # its users would wait for values made after it
            result = candidate
            break
        result_of[id(node)] = result
        read = inputs.setdefault(id(result), {})
        read.pop(id(node.out), None)
        read.update(
            (id(i), -1 if "source" in i.node.op.tags else position[id(i.node)]) for i in node.inputs
        )  # fmt: skip (a constant or a feed: ready at any time)
    groups: dict[int, list] = {}
    for node in graph.nodes:
        if id(node) in result_of:
            groups.setdefault(id(result_of[id(node)]), []).append(node)
    return {k: members for k, members in groups.items() if len(members) >= 2}


def _broadcasts_to(shape: tuple, target: tuple) -> bool:
    """Whether `shape` broadcasts to `target` without growing it (dims equal, or 1)."""
    if len(shape) > len(target):
        return False
    return all(a == b or a == 1 for a, b in zip(reversed(shape), reversed(target)))


def _fused_node(copy: Graph, members: list, new: dict, pinned: set, counts: dict,
                names: set) -> None:  # fmt: skip
    """The `fused` node of one group: its inputs are the group's outside values in first use
    order (constants of equal value are one input); one equation per member. Its results are
    the members used outside the group (or fetched, or updated) and the last member: one
    result is the node's value; several are a tuple, each read by a `get` node."""
    index = {id(m.out): j for j, m in enumerate(members)}
    inputs: list[Symbol] = []
    position: dict = {}
    program = []
    for m in members:
        refs = []
        for i in m.inputs:
            if id(i) in index:
                refs.append(("eq", index[id(i)]))
                continue
            key = ("constant", i.node.attrs) if i.node.op.name == "constant" else id(i)
            if key not in position:
                position[key] = len(inputs)
                inputs.append(new[id(i)])
            refs.append(("in", position[key]))
        program.append((m.op.name, tuple(refs), tuple(m.attrs.items())))
    uses: dict[int, int] = {}
    for m in members:
        for i in m.inputs:
            uses[id(i)] = uses.get(id(i), 0) + 1
    outputs = tuple(j for j, m in enumerate(members)
                    if j == len(members) - 1 or id(m.out) in pinned
                    or counts.get(id(m.out), 0) > uses.get(id(m.out), 0))  # fmt: skip
    result = members[-1]
    attrs = {"program": tuple(program), "outputs": outputs}
    if len(outputs) == 1:
        name = result.name  # the node it stands for: its name (and random stream) stays
        node = copy.add_node(REGISTRY["fused"], inputs, attrs, name, result.site,
                             result.out.shape, result.out.dtype)  # fmt: skip
        new[id(result.out)] = node.out
        return
    # the tuple: `fused` in the result's scope, a name no node of the source graph has
    scope = result.name.rpartition("/")[0]
    name = base = f"{scope}/fused" if scope else "fused"
    suffix = 0
    while name in names:
        suffix += 1
        name = f"{base}_{suffix}"
    names.add(name)
    node = copy.add_node(REGISTRY["fused"], inputs, attrs, name, result.site, (), dt.TUPLE)
    for k, j in enumerate(outputs):
        m = members[j]
        get_attrs = {"index": k, "shape": tuple(m.out.shape), "dtype": m.out.dtype}
        got = copy.add_node(REGISTRY["get"], [node.out], get_attrs, m.name, m.site,
                            m.out.shape, m.out.dtype)  # fmt: skip
        new[id(m.out)] = got.out
