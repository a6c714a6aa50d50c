"""One program per symbolic signature: a new binding of a program's dims (a new batch size)
reuses a planned program of the same graph (the template) instead of planning and generating
again. The template's schedule is kept; buffer sizes, arena offsets and the lower bound are
recomputed from the new dims (the bound as a sum of the template's crossing rows weighted by
the new sizes); the generated code is shared when every storage decision comes out the same,
with the attrs that hold dims bound to their new values in the program's namespace.

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

__all__ = ["adopt", "crossing", "same_schedule", "shape_class"]


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


def adopt(spec, template) -> bool:
    """Gives `spec` the template's generated program when its storage decisions are the
    same; binds its own attrs. Returns False (nothing changed) otherwise."""
    if not (
        template.order is spec.order
        and template.storage == spec.storage
        and template.frees == spec.frees
        and template.checks == spec.checks
        and template.into == spec.into
        and template.backend is spec.backend
        and hasattr(template, "_code")
    ):
        return False
    ns = dict(template._ns)
    for t, n in enumerate(spec.order):
        for key, value in spec.attrs[id(n)].items():
            name = f"a{t}_{key}"
            if name in ns:
                ns[name] = value
    spec._ns = ns
    spec.source, spec._code, spec.lines = template.source, template._code, template.lines
    spec.slots, spec.written = template.slots, template.written
    spec.variables, spec.update_vars = template.variables, template.update_vars
    spec.random_nodes = template.random_nodes
    return True


def concrete(graph, feed_shapes, bindings, template) -> tuple[dict, dict]:
    """Every value's int shape and every node's concrete attrs (as `concrete_shapes`). With a
    template whose symbolic shapes gave its own concrete ones, they are evaluated at the new
    bindings instead of rerunning every shape rule; the feeds' shapes still come checked
    against their placeholders (`check_feed`) and the dims against `graph.constraints`."""
    from .codegen import concrete_attrs, concrete_shapes

    terms = getattr(template, "symbolic", None)
    if terms is None or template.graph is not graph:
        shapes, attrs = concrete_shapes(graph, feed_shapes, bindings)
        return shapes, attrs
    shape_terms, attr_nodes = terms
    shapes = dict(template.shapes)
    try:
        for key, shape in shape_terms:
            shapes[key] = tuple(d if type(d) is int else d.evaluate(bindings) for d in shape)
    except KeyError:
        return concrete_shapes(graph, feed_shapes, bindings)
    attrs = dict(template.attrs)
    for node in attr_nodes:
        attrs[id(node)] = concrete_attrs(node, bindings)
    return shapes, attrs


def symbolic_terms(spec, bindings):
    """(values whose shapes hold dims with those shapes, nodes whose attrs hold dims) when
    evaluating the graph's symbolic shapes at `bindings` gives `spec`'s concrete shapes
    (then another binding may evaluate them too); else None."""
    shape_terms, attr_nodes = [], []
    for node in spec.graph.nodes:
        shape = node.out.shape
        try:
            value = tuple(d if type(d) is int else d.evaluate(bindings) for d in shape)
        except (KeyError, AttributeError):
            return None
        if value != spec.shapes[id(node.out)]:
            return None
        if any(type(d) is not int for d in shape):
            shape_terms.append((id(node.out), shape))
        if any(_has_dim(v) for v in node.attrs.values()):
            attr_nodes.append(node)
    return shape_terms, attr_nodes


def _has_dim(value) -> bool:
    from .. import shapes as sh

    if isinstance(value, sh.Dim):
        return True
    return isinstance(value, tuple) and any(_has_dim(v) for v in value)
