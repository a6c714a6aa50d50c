"""Eager `a @ b` of batches as PyTorch records it: two of 3 or more dims expanded to the
batch shape and viewed as 3-d, a bmm, and a view of its result (`UnsafeViewBackward0` of
`BmmBackward0` of `ViewBackward0` of `ExpandBackward0` of each); a batch times a matrix or a
vector folded into one matrix (`UnsafeViewBackward0` of `MmBackward0` or `MvBackward0` of
its `ViewBackward0`). kiln's tape keeps one entry (matmul's kernel and vjp: its bits and
its cost); `next_functions` shows PyTorch's nodes between as virtual nodes, and their hooks
see PyTorch's gradients (`_hooked`). A matrix or vector times a batch keeps the op's node.

An `OpDef` outside the registry, as kiln/eager/fused.py's: eager only, on CPU tensors of one
float32/float64 dtype; graphs, traces and every other case keep the matmul op.
"""

from __future__ import annotations

import math
import weakref

import numpy as np

from ..graph.opdef import REGISTRY, OpDef
from . import autograd, nodes
from .fused import _FLOATS, _grad_needed, _plain_cpu, _virtual_step
from .hooks import _hooks_of, apply_node_hooks
from .tensor import make

__all__ = ["matmul"]

_MATMUL = REGISTRY["matmul"]
BATCHED = OpDef("batched_matmul", None, None, None, vjp=_MATMUL.vjp, tags=_MATMUL.tags)


def matmul(a, b):
    """`a @ b` of a tensor of 3 or more dims and one of 1 or more, recorded as one tape entry
    shown as PyTorch's chain, or None where the matmul op runs (no gradient to record, other
    devices, dtypes or shapes)."""
    if not _grad_needed((a, b)) or not _plain_cpu(a, b):
        return None
    x, y = a._data, b._data
    if x.dtype not in _FLOATS or y.dtype is not x.dtype or x.shape[-1] != y.shape[-min(y.ndim, 2)]:
        return None
    try:
        np.broadcast_shapes(x.shape[:-2], y.shape[:-2])
    except ValueError:
        return None  # (the matmul op raises its error)
    out = make(np.matmul(x, y, order="C"))  # NOTE: matmul's kernel (its bits), in C order
    autograd.record(BATCHED, (a, b), {}, out, skip=4)  # ("vjp_needs": backward gives needs)
    out._meta.grad_fn.label = "UnsafeViewBackward0"
    return out


def flat_shape(shape: tuple) -> tuple:
    """(batch, n, m) of a (..., n, m) shape."""
    return (math.prod(shape[:-2]), *shape[-2:])


def product_shape(node) -> tuple:
    """The shape of PyTorch's product in the chain (bmm's, or mm's or mv's of a folded
    operand: a matrix or a vector on the right), which the last node views as the result."""
    out, rank = node.shapes[2], len(node.shapes[1])
    if rank >= 3:
        return flat_shape(out)
    return (math.prod(out[:-1]), out[-1]) if rank == 2 else (math.prod(out),)


def _plans(node) -> tuple:
    """(full, flat) of each operand: the shape it is expanded to (None: not expanded) and
    the one it is viewed as; None for an operand PyTorch's product takes as it is."""
    a, b = node.shapes[0], node.shapes[1]
    if len(b) <= 2:  # folded: (..., n, k) viewed as (batch * n, k); b as it is
        return (None, (math.prod(a[:-1]), a[-1])), None
    batch = node.shapes[2][:-2]
    fulls = ((*batch, *a[-2:]), (*batch, *b[-2:]))
    return tuple((full, flat_shape(full)) for full in fulls)


def _side(node, i: int, plan, steps: list):
    """The virtual nodes of operand `i` (expanded and viewed as `plan` says): `steps` gets
    (node, vjp) from the product's side down; returns the first one (what it lists)."""
    edge = node.edges[i]
    if edge is None or plan is None:
        return edge
    full, flat = plan
    shape, dtype = node.shapes[i], node.dtypes[i]
    expand = None
    if full is not None:
        expand = nodes.virtual_node("ExpandBackward0", node, (edge,),
                                    ((shape, dtype), (full, dtype)))  # fmt: skip
        edge = expand
    full = full or shape
    kind = _view_kind(node, i, full, flat)
    if kind == "copy":  # PyTorch's reshape of what no view can: a clone, viewed
        clone = nodes.virtual_node("CloneBackward0", node, (edge,), ((full, dtype),) * 2)
        view = nodes.virtual_node("UnsafeViewBackward0", node, (clone,),
                                  ((full, dtype), (flat, dtype)))  # fmt: skip
        steps += [(view, lambda g: g.reshape(full)), (clone, lambda g: g)]
    else:
        name = "ViewBackward0" if kind == "view" else "ReshapeAliasBackward0"
        view = nodes.virtual_node(name, node, (edge,), ((full, dtype), (flat, dtype)))
        steps.append((view, lambda g: g.reshape(full)))
    if expand is not None:
        steps.append((expand, lambda g: g.sum_to_size(shape)))
    return view


def _view_kind(node, i: int, full: tuple, flat: tuple) -> str:
    """How PyTorch's reshape views the expanded operand: "view" (contiguous), "alias" (a view
    of other strides) or "copy" (none can); "view" once the saved values are gone."""
    if node.saved is None:
        return "view"
    expanded = np.broadcast_to(node.saved[i]._data, full)
    try:
        np.reshape(expanded, flat, copy=False)
    except ValueError:
        return "copy"
    return "view" if expanded.flags.c_contiguous else "alias"


_PRODUCTS = {1: "MvBackward0", 2: "MmBackward0"}


def _face(node) -> tuple:
    """(the product of the operands' views,): the virtual nodes of PyTorch's chain (each
    operand's steps kept in `_CHAINS` for `_hooked`)."""
    plans = _plans(node)
    chains: tuple = ([], [])
    sides = tuple(_side(node, i, plans[i], chains[i]) for i in (0, 1))
    dtype = node.dtypes[2]
    shapes = tuple(node.shapes[i] if p is None else p[1] for i, p in enumerate(plans))
    metas = ((shapes[0], dtype), (shapes[1], dtype), (product_shape(node), dtype))
    name = _PRODUCTS.get(len(node.shapes[1]), "BmmBackward0")
    product = nodes.virtual_node(name, node, sides, metas)
    _CHAINS[node] = (product, plans, chains)
    return (product,)


_CHAINS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _hooked(node, hooks, grad_inputs, ct) -> tuple:
    """The hooks of the UnsafeViewBackward0 see the product's gradient (bmm's, mm's or mv's
    output); those of the virtual nodes then theirs, step by step, in PyTorch's order. Where
    none has hooks or changes a gradient, the tape entry's own gradients stay (their bits)."""
    given = ct.reshape(product_shape(node))
    (g,) = apply_node_hooks(node, hooks, (given,), (ct,))
    nodes.face_edges(node)
    product, plans, chains = _CHAINS[node]
    virtual = [product, *(n for chain in chains for n, _ in chain)]
    if g is given and not any(_hooks_of(n, 1) or _hooks_of(n, 3) for n in virtual):
        return grad_inputs
    if g is None:
        return None, None
    # the product: its prehooks, the gradients of its two operands, its hooks
    for prehook in _hooks_of(product, 1):
        result = prehook(g)
        g = g if result is None else result
    a, b = (t.detach() for t in node.saved)
    a, b = (
        x if p is None else x.expand(p[0] or x.shape).reshape(p[1]) for x, p in zip((a, b), plans)
    )
    if b.ndim == 1:
        grads = (g[:, None] * b, a.transpose(0, 1) @ g)
    else:
        grads = (g @ b.transpose(-1, -2), a.transpose(-1, -2) @ g)
    grads = tuple(gr if e is not None else None for gr, e in zip(grads, node.edges))
    hooks = _hooks_of(product, 3)
    if hooks:
        grads = apply_node_hooks(product, hooks, grads, (g,))
    out = list(grads)
    for i in (1, 0):  # (PyTorch's engine: the later operand's steps first, made last)
        for step, vjp in chains[i]:
            if out[i] is None:
                break
            out[i] = _virtual_step(step, out[i], vjp)
    return tuple(out)


nodes.FACES[BATCHED] = _face
nodes.FACE_HOOKS[BATCHED] = _hooked
