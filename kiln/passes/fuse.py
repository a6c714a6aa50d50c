"""`fuse_elementwise`: each group of connected elementwise nodes becomes one `fused` node,
which a backend runs as one kernel (cache-blocked on the CPU, one compiled kernel on a GPU)."""

from __future__ import annotations

import math

from .. import dtypes as dt
from ..graph.core import Graph, Node, Symbol
from ..graph.opdef import REGISTRY

_NOT_FUSABLE = frozenset({"random", "source", "update", "fused"})


def fusable(node) -> bool:
    """An elementwise node that a group may hold (not random, not a source, not fused, and
    nothing in bfloat16, which the fused kernels' scalar code has no type for; nor an op that
    may fail, which the planner orders before in-place updates and a fused node would hide)."""
    return (
        "elementwise" in node.op.tags
        and not node.op.tags & _NOT_FUSABLE
        and not node.op.may_fail
        and node.out.dtype != dt.bfloat16
        and all(i.dtype != dt.bfloat16 for i in node.inputs)
    )


def fuse_elementwise(
    graph: Graph, min_bytes: int = 0, min_ops: int = 2, small_bytes: int = 0
) -> Graph:
    """A copy of the program graph `graph` where each group of two or more fusable nodes is one
    `fused` node, at the place of the group's last node and with its site.

    A group is a maximal connected set of elementwise nodes with one result: every other value
    of the group is used only inside it (a fetched or updated value, or one used outside, ends
    a group) and has a shape that broadcasts to the result's. With `min_bytes`, only groups
    whose result has a static shape of at least that many bytes are fused (where fusing pays
    on the device), and only groups of at least `min_ops` nodes; groups whose result has a
    static shape of at most `small_bytes` bytes are fused whatever their size and count (where
    one compiled loop replaces a kernel call per op).

    >>> import kiln as kn
    >>> from kiln.passes.program import extract
    >>> with kn.Graph().as_default():
    ...     x = kn.placeholder(kn.float32, (3,), name="x")
    ...     y = kn.tanh(x * 2.0) + x
    >>> [n.op.name for n in fuse_elementwise(extract([y], [x], {})).nodes]
    ['placeholder', 'constant', 'fused']
    """
    groups = find_groups(graph)
    big = lambda sym: not min_bytes or _static_bytes(sym) >= min_bytes  # noqa: E731
    small = lambda sym: _is_static(sym) and _static_bytes(sym) <= small_bytes  # noqa: E731
    groups = {k: m for k, m in groups.items()
              if (len(m) >= min_ops and big(m[-1].out)) or small(m[-1].out)}  # fmt: skip
    member = {id(m) for members in groups.values() for m in members}
    names = {n.name for n in graph.nodes}
    copy = Graph()
    copy.source = graph.source
    new: dict[int, Symbol] = {}
    for node in graph.nodes:
        members = groups.get(id(node))
        if members is not None:
            new[id(node.out)] = _fused_node(copy, members, new, names)
        elif id(node) not in member:
            inputs = [new[id(i)] for i in node.inputs]
            clone = copy.add_node(node.op, inputs, node.attrs, node.name, node.site,
                                  node.out.shape, node.out.dtype)  # fmt: skip
            clone.ref = node.ref
            new[id(node.out)] = clone.out
    copy.inputs = [new[id(s)] for s in graph.inputs]
    copy.outputs = [new[id(s)] for s in graph.outputs]
    copy.updates = {var: new[id(s)] for var, s in graph.updates.items()}
    return copy


def _is_static(sym) -> bool:
    return all(isinstance(d, int) for d in sym.shape)


def _static_bytes(sym) -> int:
    if not _is_static(sym):
        return 0  # a symbolic size: not known to be large
    return math.prod(sym.shape) * sym.dtype.itemsize


def find_groups(graph: Graph) -> dict:
    """id(result node) -> the group's nodes in graph order, for groups of two or more.

    In reverse order, a fusable node joins the group of its users when they all are in one
    group, its value is not fetched or updated, and its shape broadcasts to the group's result.
    Every member then reaches the result only through the group, so the groups are convex:
    replacing each by one node keeps the graph acyclic.
    """
    users: dict[int, list] = {}
    for node in graph.nodes:
        for i in node.inputs:
            users.setdefault(id(i), []).append(node)
    pinned = {id(s) for s in (*graph.outputs, *graph.updates.values(), *graph.inputs)}
    result_of: dict[int, Node] = {}
    for node in reversed(graph.nodes):
        if not fusable(node):
            continue
        result = node
        node_users = users.get(id(node.out), ())
        if node_users and id(node.out) not in pinned:
            results = {id(result_of.get(id(u))) for u in node_users}
            candidate = result_of.get(id(node_users[0]))
            if (
                candidate is not None
                and len(results) == 1
                and _broadcasts_to(node.out.shape, candidate.out.shape)
            ):
                result = candidate
        result_of[id(node)] = result
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


def _fused_node(copy: Graph, members: list, new: dict, names: set) -> Symbol:
    """The `fused` node of one group: its inputs are the group's outside values in first use
    order (constants of equal value are one input); one equation per member."""
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
    result = members[-1]
    attrs = {"program": tuple(program), "outputs": (len(members) - 1,)}
    name = result.name  # the node it stands for: its name (and random stream) stays
    node = copy.add_node(REGISTRY["fused"], inputs, attrs, name, result.site,
                         result.out.shape, result.out.dtype)  # fmt: skip
    return node.out
