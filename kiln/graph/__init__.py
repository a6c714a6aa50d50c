"""The IR: Graph, Node, Symbol, Variable, the op record, printing and verification."""

from .core import (
    Graph,
    Node,
    Symbol,
    Variable,
    get_default_graph,
    name_scope,
    reset_default_graph,
    user_site,
)
from .opdef import REGISTRY, ArrayValue, Attrs, OpDef

__all__ = [
    "Graph", "Node", "Symbol", "Variable", "get_default_graph", "name_scope",
    "reset_default_graph", "user_site", "REGISTRY", "ArrayValue", "Attrs", "OpDef",
]  # fmt: skip
