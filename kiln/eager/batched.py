"""Eager `a @ b` of two tensors of 3 or more dims as PyTorch records it: the operands expanded
to the batch shape and viewed as 3-d, a bmm, and a view of its result (`UnsafeViewBackward0`
of `BmmBackward0` of `ViewBackward0` of `ExpandBackward0` of each). kiln's tape keeps one
entry (matmul's kernel and vjp: its bits and its cost); `next_functions` shows PyTorch's nodes
between as virtual nodes, and their hooks see PyTorch's gradients (`_hooked`).

An `OpDef` outside the registry, as kiln/eager/fused.py's: eager only, on CPU tensors of one
float32/float64 dtype; graphs, traces and every other case keep the matmul op.
"""

from __future__ import annotations

import math
import weakref

import numpy as np

from ..graph.opdef import REGISTRY, OpDef
from . import autograd, nodes
from .fused import _FLOATS, _grad_needed, _plain_cpu
from .hooks import _hooks_of, apply_node_hooks
from .tensor import make

__all__ = ["matmul"]

_MATMUL = REGISTRY["matmul"]
BATCHED = OpDef("batched_matmul", None, None, None, vjp=_MATMUL.vjp, tags=_MATMUL.tags)


def matmul(a, b):
    """`a @ b` of tensors of 3 or more dims as one tape entry shown as PyTorch's chain, or None
    where the matmul op runs (no gradient to record, other devices, dtypes or shapes)."""
    if not _grad_needed((a, b)) or not _plain_cpu(a, b):
        return None
    x, y = a._data, b._data
    if x.dtype not in _FLOATS or y.dtype is not x.dtype or x.shape[-1] != y.shape[-2]:
        return None
    try:
        np.broadcast_shapes(x.shape[:-2], y.shape[:-2])
    except ValueError:
        return None  # (the matmul op raises its error)
    out = make(np.matmul(x, y))  # NOTE: matmul's kernel (its bits)
    autograd.record(BATCHED, (a, b), {}, out, skip=4)  # ("vjp_needs": backward gives needs)
    out._meta.grad_fn.label = "UnsafeViewBackward0"
    return out


def flat_shape(shape: tuple) -> tuple:
    """(batch, n, m) of a (..., n, m) shape."""
    return (math.prod(shape[:-2]), *shape[-2:])


def _side(node, i: int, full: tuple, steps: list):
    """The virtual nodes of operand `i` (expanded to `full`, then viewed as 3-d): `steps`
    gets (node, vjp) from the bmm's side down; returns the first one (what bmm lists)."""
    edge = node.edges[i]
    if edge is None:
        return None
    shape, dtype = node.shapes[i], node.dtypes[i]
    flat = flat_shape(full)
    expand = nodes.virtual_node("ExpandBackward0", node, (edge,), ((shape, dtype), (full, dtype)))
    kind = _view_kind(node, i, full, flat)
    if kind == "copy":  # PyTorch's reshape of what no view can: a clone, viewed
        clone = nodes.virtual_node("CloneBackward0", node, (expand,), ((full, dtype),) * 2)
        view = nodes.virtual_node("UnsafeViewBackward0", node, (clone,),
                                  ((full, dtype), (flat, dtype)))  # fmt: skip
        steps += [(view, lambda g: g.reshape(full)), (clone, lambda g: g)]
    else:
        name = "ViewBackward0" if kind == "view" else "ReshapeAliasBackward0"
        view = nodes.virtual_node(name, node, (expand,), ((full, dtype), (flat, dtype)))
        steps.append((view, lambda g: g.reshape(full)))
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


def _face(node) -> tuple:
    """(BmmBackward0 of the operands' views,): the virtual nodes of PyTorch's chain (each
    operand's steps kept in `_CHAINS` for `_hooked`)."""
    batch = node.shapes[2][:-2]
    fulls = ((*batch, *node.shapes[0][-2:]), (*batch, *node.shapes[1][-2:]))
    chains: tuple = ([], [])
    sides = tuple(_side(node, i, fulls[i], chains[i]) for i in (0, 1))
    dtype = node.dtypes[2]
    metas = ((flat_shape(fulls[0]), dtype), (flat_shape(fulls[1]), dtype),
             (flat_shape(node.shapes[2]), dtype))  # fmt: skip
    bmm = nodes.virtual_node("BmmBackward0", node, sides, metas)
    _CHAINS[node] = (bmm, fulls, chains)
    return (bmm,)


_CHAINS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _hooked(node, hooks, grad_inputs, ct) -> tuple:
    """The hooks of the UnsafeViewBackward0 see the bmm's output gradient (3-d); those of the
    virtual nodes then theirs, step by step. Where none has hooks or changes a gradient, the
    tape entry's own gradients stay (their bits)."""
    given = ct.reshape(flat_shape(node.shapes[2]))
    (g,) = apply_node_hooks(node, hooks, (given,), (ct,))
    nodes.face_edges(node)
    bmm, fulls, chains = _CHAINS[node]
    virtual = [bmm, *(n for chain in chains for n, _ in chain)]
    if g is given and not any(_hooks_of(n, 1) or _hooks_of(n, 3) for n in virtual):
        return grad_inputs
    if g is None:
        return None, None
    # the bmm: its prehooks, the gradients of its two 3-d operands, its hooks
    for prehook in _hooks_of(bmm, 1):
        result = prehook(g)
        g = g if result is None else result
    a, b = (t.detach() for t in node.saved)
    va = a.expand(fulls[0]).reshape(flat_shape(fulls[0]))
    vb = b.expand(fulls[1]).reshape(flat_shape(fulls[1]))
    grads = (
        g @ vb.transpose(1, 2) if node.edges[0] is not None else None,
        va.transpose(1, 2) @ g if node.edges[1] is not None else None,
    )
    hooks = _hooks_of(bmm, 3)
    if hooks:
        grads = apply_node_hooks(bmm, hooks, grads, (g,))
    out = list(grads)
    for i in (1, 0):  # (PyTorch's engine: the later operand's steps first, made last)
        for step, vjp in chains[i]:
            if out[i] is None:
                break
            out[i] = _step(step, out[i], vjp)
    return tuple(out)


def _step(node, g, vjp):
    """The gradient virtual `node` passes on: its prehooks, `vjp`, its hooks."""
    for prehook in _hooks_of(node, 1):
        result = prehook(g)
        g = g if result is None else result
    out = vjp(g)
    hooks = _hooks_of(node, 3)
    return apply_node_hooks(node, hooks, (out,), (g,))[0] if hooks else out


nodes.FACES[BATCHED] = _face
nodes.FACE_HOOKS[BATCHED] = _hooked
