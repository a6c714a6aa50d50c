"""A signature's concrete shapes and attrs: the shape rules rerun on the ints its feeds
bind, with the dims that only the run binds (kiln/runtime/dynamic.py) left symbolic."""

from __future__ import annotations

from .. import shapes as sh
from ..errors import ShapeError, node_error
from . import dynamic


def concrete_attrs(node, bindings, data=frozenset()) -> dict:
    """The node's attrs with symbolic dims replaced by the ints the feeds bound; the dims
    that the run binds (`data`: their atoms, kiln/runtime/dynamic.py) stay symbolic."""
    out = {}
    for k, v in node.attrs.items():
        try:
            out[k] = _evaluate(v, bindings)
        except KeyError:
            if data and {a for d in dims_in(v) for a in d.atoms if a not in bindings} <= data:
                out[k] = dynamic.partial(v, bindings)
                continue
            if node.op.name == "reshape" and k == "shape":
                out[k] = tuple(_evaluate(d, bindings, unbound=-1) for d in v)
                continue
            unbound = next(d for d in dims_in(v) if not set(d.atoms) <= set(bindings))
            raise node_error(ShapeError, f"dim {unbound} is not bound by any feed ({k}={v})",
                             op=node.op.name, name=node.name, site=node.site) from None  # fmt: skip
    return out


def dims_in(value):
    """The symbolic dims in an attr value (a Dim, or tuples holding some)."""
    if isinstance(value, sh.Dim):
        yield value
    elif isinstance(value, tuple):
        for v in value:
            yield from dims_in(v)


def _evaluate(value, bindings, unbound=None):
    if isinstance(value, sh.Dim):
        try:
            return value.evaluate(bindings)
        except KeyError:
            if unbound is None:
                raise
            return unbound
    if isinstance(value, tuple):
        return tuple(_evaluate(v, bindings, unbound) for v in value)
    return value


def concrete_shapes(
    graph, feed_shapes, bindings, nodes=None, known=None, dim_attrs=None
) -> tuple[dict, dict]:
    """Every value's int shape for this signature (the shape rules rerun on ints), and every
    node's concrete attrs; with `nodes` (a subset in order) only theirs, the others taken
    from `known` (a Specialized of another signature), which also gives the attrs of the
    nodes not in `dim_attrs` (ids of the nodes whose attrs hold dims) when that is given."""
    shapes = {} if known is None else dict(known.shapes)
    attrs = {} if known is None else dict(known.attrs)
    fed = {id(s): shape for s, shape in zip(graph.inputs, feed_shapes)}
    data = dynamic.data_atoms(graph)
    for node in graph.nodes if nodes is None else nodes:
        if dim_attrs is None or id(node) in dim_attrs:
            a = attrs[id(node)] = concrete_attrs(node, bindings, data)
        else:
            a = attrs[id(node)]
        if id(node.out) in fed:
            shapes[id(node.out)] = fed[id(node.out)]
            continue
        ins = [shapes[id(i)] for i in node.inputs]
        if data and dynamic.unplanned(node, ins, a):  # a length the run gives: bound by then
            shapes[id(node.out)] = dynamic.partial(tuple(node.out.shape), bindings)
            continue
        try:
            shape = node.op.shape_rule(*ins, **a)
        except ShapeError as e:
            raise node_error(type(e), f"at run time: {e}", op=node.op.name, name=node.name,
                             site=node.site, inputs=node.inputs) from None  # fmt: skip
        shapes[id(node.out)] = tuple(map(int, shape))
    return shapes, attrs
