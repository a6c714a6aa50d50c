"""The op registry: one `OpDef` per primitive, in one module of its family; `bind` applies one."""

from ..graph.opdef import REGISTRY, OpDef
from . import elementwise, fused, linalg, movement, nn, nn_grad, random, reduce, state
from .core import bind, defop

__all__ = ["REGISTRY", "OpDef", "bind", "defop"]
_FAMILIES = (elementwise, fused, linalg, movement, nn, nn_grad, random, reduce, state)
