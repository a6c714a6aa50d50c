"""One program per symbolic signature: a new binding of a program's dims (a new batch size)
reuses a planned program of the same graph (the template) instead of planning and generating
again. The template's schedule is kept; buffer sizes, arena offsets and the lower bound are
recomputed from the new dims (the bound as a sum of the template's crossing rows weighted by
the new sizes); the generated code is shared when every storage decision comes out the same,
with the attrs that hold dims bound to their new values in the program's namespace. Only the
nodes whose shapes or attrs hold dims rerun their shape rules, which still check the new dims
(an index past a dim's end is a ShapeError before any kernel runs).

Decisions that depend on shapes (an in-place update, a buffer reused in place, a size-0
buffer) are recomputed and compared: when one differs the program is generated afresh. A
template is only looked for among signatures of the same `shape_class`: dims of 0 and 1
(empty values, broadcasting) stay apart from the rest.

>>> shape_class(((128, 784), (128,))) == shape_class(((16, 784), (16,)))
True
>>> shape_class(((1, 784), (1,))) == shape_class(((16, 784), (16,)))
False
"""

from __future__ import annotations

import collections
import weakref

from .. import shapes as sh

__all__ = ["adopt", "bound_names", "crossing", "keep_storage", "kept_storage", "same_schedule",
           "shape_class", "update_structure"]  # fmt: skip


def shape_class(key) -> tuple:
    """The signature's class: each dim as 0, 1 or "n" (two or more)."""
    return tuple(tuple(d if d < 2 else "n" for d in shape) for shape in key)


def same_schedule(spec, template) -> bool:
    """Whether `spec` (laid out up to its schedule) may run in `template`'s order: the same
    graph with the same in-place updates (their ordering edges are the same then)."""
    return (
        template.graph is spec.graph
        and template.numerics == spec.numerics
        and template.inplace.keys() == spec.inplace.keys()
    )


def crossing(spec, owners):
    """The template's packed crossing rows (one per buffer, one bit per node of the order)
    when `spec` runs the template's order with the same buffers; else None."""
    template = getattr(spec, "template", None)
    rows = getattr(template, "crossing_rows", None)
    if rows is None or template.order is not spec.order or template.owned != spec.storage:
        return None
    return rows


def _empty_values(spec) -> frozenset:
    """The values of no elements (a dim of 0): the only sizes that change who owns a buffer."""
    return frozenset(k for k, shape in spec.shapes.items() if 0 in shape)


def keep_storage(spec, plan: bool, owners: dict, last: dict) -> None:
    """Keeps a copy of `spec`'s storage decisions before in-place reuse (which values own
    buffers, their first and last uses), for a later binding of its order (`kept_storage`)."""
    if spec.dynamic:
        return  # NOTE: a length the run binds owns no buffer: not kept
    owned = {k: tuple(v) for k, v in owners.items()}
    spec.kept = (plan, dict(spec.storage), owned, dict(last), frozenset(spec.placed_keys),
                 frozenset(spec.early_copies), _empty_values(spec))  # fmt: skip


def kept_storage(spec, plan: bool):
    """(storage, owners, last uses) of `spec`'s template, copied, when `spec` runs the
    template's order and the same values own buffers: the same in-place updates (the order
    is the template's only then), no length the run binds, and the same values of no
    elements; else None. What owns a buffer depends on the order and on those alone."""
    template = spec.template
    kept = getattr(template, "kept", None)
    if kept is None or template.order is not spec.order or spec.dynamic or kept[0] != plan:
        return None
    _, storage, owners, last, placed_keys, early_copies, empty = kept
    if spec.placed != template.placed or empty != _empty_values(spec):
        return None
    spec.placed_keys, spec.early_copies, spec.kept = set(placed_keys), set(early_copies), kept
    return dict(storage), {k: list(v) for k, v in owners.items()}, dict(last)


def update_structure(graph, nodes) -> tuple:
    """What `Specialized._inplace_updates` reads of the graph alone, found once per graph and
    node list: (id(node) -> position, id(Variable) -> its node, each node's users' positions,
    how many updates take each value, the positions of the ops that may fail)."""
    found = _STRUCTURE.get(graph)
    if found is not None and found[0] is nodes and found[1] == len(nodes):
        return found[2]
    index = {id(n): i for i, n in enumerate(nodes)}
    var_node = {id(n.ref): n for n in nodes if n.op.name == "variable"}
    users = [[] for _ in nodes]
    for i, n in enumerate(nodes):
        for x in n.inputs:
            users[index[id(x.node)]].append(i)
    shared = collections.Counter(id(v) for v in graph.updates.values())  # one value, 2 updates
    may_fail = [i for i, n in enumerate(nodes) if n.op.may_fail]
    made = (index, var_node, tuple(map(tuple, users)), shared, may_fail)
    _STRUCTURE[graph] = (nodes, len(nodes), made)
    return made


# graph -> (its node list, its length, `update_structure`'s tuple)
_STRUCTURE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def adopt(spec, template) -> bool:
    """Gives `spec` the template's generated program when its storage decisions are the
    same; binds its own attrs. Returns False (nothing changed) otherwise."""
    if not (
        template.order is spec.order
        and template.storage == spec.storage
        and template.frees == spec.frees
        and template.checks == spec.checks
        and template.into == spec.into
        and template.pooled.keys() == spec.pooled.keys()
        and template.backend is spec.backend
        and hasattr(template, "_code")
    ):
        return False
    ns = dict(template._ns)
    ns.update(spec.pool_makers())  # the outputs' arrays of this signature's shapes
    names = getattr(template, "bound_names", None)
    if names is None:  # NOTE: found once per generated program; its rebindings share it
        names = bound_names(spec.order, spec.attrs, ns)
    for name, kind, n, key in names:
        if kind == "a":
            ns[name] = spec.attrs[id(n)][key]
        elif kind == "s":  # the shape a result of a length the run gives is checked against
            ns[name] = spec.shapes[id(n.out)]
        else:  # the attrs its shape rules rerun on (kiln/runtime/dynamic.py)
            ns[name] = spec.attrs[id(n)]
    spec._ns, template.bound_names, spec.bound_names = ns, names, names
    spec.source, spec._code, spec.lines = template.source, template._code, template.lines
    spec.slots, spec.written = template.slots, template.written
    spec.variables, spec.update_vars = template.variables, template.update_vars
    spec.random_nodes = template.random_nodes
    return True


def bound_names(order, attrs, ns) -> list:
    """The names of the generated program's namespace that hold a node's attrs (`a{t}_key`),
    the shape its result is checked against (`s{t}`) or the attrs its shape rules rerun on
    (`r{t}`): (name, kind, node, attr key) for each that the program has."""
    names = []
    for t, n in enumerate(order):
        names += [(f"a{t}_{key}", "a", n, key) for key in attrs[id(n)] if f"a{t}_{key}" in ns]
        names += [(f"{kind}{t}", kind, n, None) for kind in "sr" if f"{kind}{t}" in ns]
    return names


def concrete(graph, feed_shapes, bindings, template) -> tuple[dict, dict]:
    """Every value's int shape and every node's concrete attrs (as `concrete_shapes`). With a
    template of this graph, only the nodes whose shapes or attrs hold dims (`dynamic_nodes`)
    run their shape rules again, which still check these dims (an index past a dim's end);
    the others keep the template's shapes and attrs, which depend on no dim."""
    from .concrete import concrete_shapes

    if template is None or template.graph is not graph:
        found = concrete_shapes(graph, feed_shapes, bindings)
        if bindings:  # dims a later binding may change: found with the graph's first plan,
            _dynamic(graph)  # so a first new batch size pays no more than a later one
        return found
    dynamic, dim_attrs = _dynamic(graph)
    return concrete_shapes(graph, feed_shapes, bindings, dynamic, template, dim_attrs)


def _dynamic(graph) -> tuple:
    """(`dynamic_nodes`, ids of those whose attrs hold dims), found once per graph."""
    found = _DYNAMIC.get(graph)
    if found is None:
        dynamic = dynamic_nodes(graph)
        dim_attrs = {id(n) for n in dynamic if any(_has_dim(v) for v in n.attrs.values())}
        found = _DYNAMIC[graph] = (dynamic, dim_attrs)
    return found


# graph -> (its dynamic nodes, ids of those whose attrs hold dims); weak, so a dropped program
# takes its entry with it
_DYNAMIC: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def dynamic_nodes(graph) -> list:
    """The nodes, in order, whose result shape, input shapes or attrs hold a symbolic dim:
    the only ones whose shape rules can give another result at other bindings."""
    return [
        n
        for n in graph.nodes
        if _has_dim(tuple(n.out.shape))
        or any(_has_dim(tuple(i.shape)) for i in n.inputs)
        or any(_has_dim(v) for v in n.attrs.values())
    ]


def _has_dim(value) -> bool:
    if isinstance(value, sh.Dim):
        return True
    return isinstance(value, tuple) and any(_has_dim(v) for v in value)
