"""`verify(graph)`: the IR's invariants, checked after every pass in tests."""

from __future__ import annotations

from .. import shapes as sh
from ..errors import GraphError, KilnError
from .opdef import REGISTRY, Attrs
from .region import regions_of


def verify(graph) -> None:
    """Raises GraphError, naming the node and its site, if `graph` breaks an invariant:
    inputs defined before use in the same graph, unique names, registered ops, canonical
    attrs, and output shape and dtype equal to what the op's rules give. A region op's bodies
    are verified too: parameters are placeholders of the body, results are its values (the
    op's rules check them against its operands).

    >>> import kiln as kn
    >>> g = kn.Graph()
    >>> with g.as_default():
    ...     y = kn.placeholder(kn.float32, (2,)) * 2.0
    >>> kn.verify(g)
    """
    defined, names = set(), set()
    for node in graph.nodes:
        where = f"node '{node.name}' ({node.op.name}, created at {node.site})"
        if node.graph is not graph:
            raise GraphError(f"{where} belongs to another graph")
        if REGISTRY.get(node.op.name) is not node.op:
            raise GraphError(f"{where} uses an unregistered op")
        if node.name in names:
            raise GraphError(f"{where}: the name is used twice")
        names.add(node.name)
        if not isinstance(node.attrs, Attrs):
            raise GraphError(f"{where}: attrs are not canonical")
        for i in node.inputs:
            if id(i) not in defined:
                raise GraphError(f"{where}: input '{i.name}' is used before it is defined")
        if node.out is None or node.out.node is not node:
            raise GraphError(f"{where}: its output does not point back at it")
        _check_types(node, where)
        defined.add(id(node.out))
        for key, region in regions_of(node):
            _check_region(region, f"{where}, {key}")


def _check_region(region, where):
    body = region.graph
    own = {id(n.out) for n in body.nodes}
    for s in body.inputs:
        if id(s) not in own or s.op.name != "placeholder":
            raise GraphError(f"{where}: parameter '{s.name}' is not a placeholder of the body")
    for s in body.outputs:
        if id(s) not in own:
            raise GraphError(f"{where}: result '{s.name}' is not a value of the body")
    try:
        verify(body)
    except GraphError as e:
        raise GraphError(f"{where}: {e}") from None


def _check_types(node, where):
    pending = sh.collect_constraints()
    try:
        shape = tuple(node.op.shape_rule(*(i.shape for i in node.inputs), **node.attrs))
        dtype = node.op.dtype_rule(*(i._dtype for i in node.inputs), **node.attrs)
    except KilnError as e:
        raise GraphError(f"{where}: its rules now fail: {e}") from None
    finally:
        sh._pending.items = None
    del pending
    if len(shape) != len(node.out.shape) or any(
        a != b and not (isinstance(a, sh.Dim) or isinstance(b, sh.Dim))
        for a, b in zip(shape, node.out.shape)
    ):
        raise GraphError(f"{where}: shape {node.out.shape} but its rule gives {shape}")
    if dtype != node.out.dtype:
        raise GraphError(f"{where}: dtype {node.out.dtype} but its rule gives {dtype}")
