"""`autocast`: a graph's matrix products and convolutions computed in a low float dtype
(bfloat16 or float16), as `kn.autocast` does when a graph is built under it, for a graph
that was built in float32: `kn.function(..., autocast=kn.bfloat16)`.

Each listed node's float32 inputs are cast to the low dtype and its result cast back to the
dtype it had, so every other node, the gradients, the outputs and the Variable updates keep
their dtypes. Gradients built before the pass hold matmul and convolution nodes too: they are
computed in the low dtype as well, as PyTorch's backward of an autocast product is.
"""

from __future__ import annotations

import functools

import numpy as np

from .. import dtypes as dt
from ..errors import ArgumentError
from ..graph.core import Graph
from ..graph.opdef import REGISTRY
from .program import rebuild

__all__ = ["autocast", "autocast_pass"]

_ELIGIBLE = (np.dtype(np.float32), np.dtype(np.float16), dt.bfloat16)


def autocast(graph: Graph, dtype) -> Graph:
    """A copy of the program graph `graph` with each node whose op has the "autocast_lower"
    tag (PyTorch's lower_precision_fp list: products, convolutions and their gradients)
    computed in `dtype`, and each with "autocast_fp32" (its fp32 list: prod, inverse, solve)
    in float32, between casts (see the module docstring).

    >>> import kiln as kn, numpy as np
    >>> from kiln.passes.program import extract
    >>> with kn.Graph().as_default():
    ...     x = kn.placeholder(kn.float32, (2, 3), name="x")
    ...     w = kn.Variable(np.ones((3, 4), np.float32), name="w")
    ...     y = kn.relu(x @ w)
    >>> g = autocast(extract([y], [x], {}), kn.bfloat16)
    >>> [(n.op.name, n.out.dtype.name) for n in g.nodes][2:]  # doctest: +NORMALIZE_WHITESPACE
    [('cast', 'bfloat16'), ('cast', 'bfloat16'), ('matmul', 'bfloat16'),
     ('cast', 'float32'), ('relu', 'float32')]
    """
    low = dt.as_dtype(dtype)
    if low not in (dt.bfloat16, np.dtype(np.float16)):
        raise ArgumentError(f"autocast: expected kn.bfloat16 or kn.float16, got {dtype}")
    f32 = np.dtype(np.float32)

    def cast(copy, value, to, node):
        return copy.add_node(REGISTRY["cast"], [value], {"dtype": to}, f"{node.name}/cast",
                             node.site, value.shape, to).out  # fmt: skip

    def rule(node, inputs, copy):
        tags = node.op.tags
        target = low if "autocast_lower" in tags else f32 if "autocast_fp32" in tags else None
        if target is None:
            return None
        eligible = [i.dtype in _ELIGIBLE and i.dtype != target for i in inputs]
        if not any(eligible):
            return None
        ins = [cast(copy, i, target, node) if e else i for i, e in zip(inputs, eligible)]
        out_dtype = dt.as_dtype(node.op.dtype_rule(*(i._dtype for i in ins), **node.attrs))
        new = copy.add_node(node.op, ins, node.attrs, node.name, node.site, node.out.shape,
                            out_dtype).out  # fmt: skip
        return new if out_dtype == node.out.dtype else cast(copy, new, node.out.dtype, node)

    return rebuild(graph, rule)


def autocast_pass(dtype):
    """The pipeline entry ("autocast", Graph -> Graph) for `dtype`."""
    return ("autocast", functools.partial(autocast, dtype=dtype))
