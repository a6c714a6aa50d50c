"""Eager tape entries for two composites PyTorch records as one node: `F.linear` with a bias on
a matrix (`AddmmBackward0`) and `F.cross_entropy`'s common case (`NllLossBackward0`). On CPU
tensors of one float32/float64 dtype they run the NumPy calls the composite's ops run (a
matrix product and a sum; log_softmax_take, a negation, a sum and a division), in the same
order, so values and gradients keep the composite's bits (tests/test_eager_fused.py); what
they save is the composite's other tape entries (3 -> 1 and 5 -> 1) and their dispatch.

Each op is an `OpDef` outside the registry (as `kn.checkpoint`'s): eager only. Graphs, traces
(`kn.compile`), other devices, dtypes, layouts and every case the checks below do not take
keep the composite. Its vjp is written with kiln ops (create_graph records them); backward on
the CPU without create_graph runs its bare-array form (`autograd._ARRAY_VJP`).
"""

from __future__ import annotations

import functools

import numpy as np

from ..graph.opdef import REGISTRY, OpDef
from ..ops.core import bind
from . import autograd, dispatch, grad_mode, nodes
from .grad_mode import state
from .hooks import _hooks_of, apply_node_hooks
from .tensor import Tensor, check_view, make

__all__ = ["cross_entropy", "linear"]

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_CPU = "cpu"
_matmul = np.matmul
_add = np.add


def _plain_cpu(*tensors) -> bool:
    """Whether every one is a CPU tensor the short paths take (not a sparse or traced one),
    outside inference mode; views are checked as dispatch checks them."""
    if grad_mode.inference_threads:
        return False
    kinds = dispatch.tensor_types
    for t in tensors:
        if type(t) is not Tensor and type(t) not in kinds:
            return False
        meta = t._meta
        if meta is not None:
            if meta.device != _CPU:
                return False
            if meta.base is not None:
                check_view(t, meta)
    return True


def _grad_needed(tensors) -> bool:
    if not state.grad:
        return False
    for t in tensors:
        meta = t._meta
        if meta is not None and meta.requires_grad:
            return True
    return False


# -- linear: input @ weight.T + bias ------------------------------------------------------------


def _linear_vjp(ct, y, bias, x, weight, *, needs):
    """The composite's: the bias's cotangent is `ct` (autograd sums it to the bias's shape),
    the input's `ct @ weight` and the weight's `(x.T @ ct).T`, as matmul's and transpose's."""
    t = REGISTRY["transpose"]
    mm = REGISTRY["matmul"]
    return (
        ct if needs[0] else None,
        bind(mm, ct, weight) if needs[1] else None,
        bind(t, bind(mm, bind(t, x, perm=(1, 0)), ct), perm=(1, 0)) if needs[2] else None,
    )


def _linear_vjp_arrays(ct, y, bias, x, weight, *, needs):
    # the bias's: `sum_to_shape`'s sum over the rows (keepdims there: the same sums)
    return (
        _add.reduce(ct, (0,), None, None, False) if needs[0] else None,
        _matmul(ct, weight) if needs[1] else None,
        _matmul(x.T, ct).T if needs[2] else None,
    )


LINEAR = OpDef("linear", None, None, None, vjp=_linear_vjp)


def linear(x, weight, bias):
    """`F.linear(x, weight, bias)` of a matrix `x` as one tape entry, or None where the
    composite runs (anything but CPU tensors of one float dtype with matching shapes)."""
    if bias is None or not _plain_cpu(x, weight, bias):
        return None
    a, w, b = x._data, weight._data, bias._data
    dtype = a.dtype
    if (
        dtype not in _FLOATS
        or w.dtype is not dtype
        or b.dtype is not dtype
        or a.ndim != 2
        or w.ndim != 2
        or b.shape != (w.shape[0],)
        or a.shape[1] != w.shape[1]
    ):
        return None
    y = _matmul(a, w.T)  # NOTE: matmul's kernel, then add's, into the product: add's bits
    _add(y, b, out=y)
    out = make(y)
    args = (bias, x, weight)  # PyTorch's addmm(bias, input, weight.t()) order
    if _grad_needed(args):
        needs = tuple(t._meta is not None and t._meta.requires_grad for t in args)
        autograd.record(LINEAR, args, {"needs": needs}, out, skip=3)
        out._meta.grad_fn.label = "AddmmBackward0"
    return out


# -- cross_entropy: mean of -log_softmax(x)[target], no weights, nothing ignored --------------


def _nll_vjp(ct, y, x, target, *, n):
    """The composite's chain backwards: div, sum, neg, reshape, then log_softmax_take's."""
    g = ct / n
    g = -bind(REGISTRY["broadcast_to"], g, shape=tuple(target.shape))
    reshape = REGISTRY["reshape"]
    column = (*target.shape, 1)
    g = bind(reshape, g, shape=column)
    idx = bind(reshape, target, shape=column)
    return bind(REGISTRY["log_softmax_take_grad"], g, x, idx, axis=1), None


def _nll_vjp_arrays(ct, y, x, target, *, n):
    # -(ct / n) in every row: the negation of the broadcast quotient (exact), without
    # broadcast_to's Python layers
    g = np.empty((*target.shape, 1), ct.dtype)
    g.fill(-(ct / n))
    return _TAKE_GRAD.impl(np, g, x, target.reshape(g.shape), axis=1), None


NLL = OpDef("cross_entropy", None, None, None, vjp=_nll_vjp, tags=frozenset({"vjp_arrays_index"}))
_TAKE = REGISTRY["log_softmax_take"]
_TAKE_GRAD = REGISTRY["log_softmax_take_grad"]


_INDEX_TYPES = (np.int64, np.uint8)  # PyTorch's class indices (others: the composite raises)


def cross_entropy(x, target, ignore_index: int):
    """The mean cross-entropy of logits `x` (N, C) at classes `target` (N,), none of them
    `ignore_index`, as one tape entry; None where the composite runs (other shapes, devices,
    dtypes, an index out of range: the composite raises its error)."""
    if not _plain_cpu(x, target):
        return None
    a, t = x._data, target._data
    if a.dtype not in _FLOATS or t.dtype.type not in _INDEX_TYPES or a.ndim != 2 or t.ndim != 1:
        return None
    rows = t.shape[0]
    if not 0 < rows == a.shape[0]:
        return None
    if 0 <= ignore_index < a.shape[1] and (t == ignore_index).any():
        return None  # (an ignore_index off [0, C) is no index the kernel takes)
    try:
        picked = _TAKE.impl(np, a, t.reshape(rows, 1), axis=1)
    except IndexError:
        return None  # an index out of range (or an ignored one): the composite says which
    n = float(rows)
    # reduce_sum's kernel on a float32/float64 array: add.reduce, called directly
    total = _add.reduce(np.negative(picked.reshape(rows)), (0,), None, None, False)
    out = make(np.asarray(np.true_divide(total, n)))
    if _grad_needed((x,)):
        autograd.record(NLL, (x, target), {"n": n}, out, skip=3)
        out._meta.grad_fn.label = "NllLossBackward0"
    return out


# -- the graph as PyTorch's: addmm(bias, input, weight.t()) and nll_loss(log_softmax(x)) ------


def _linear_face(node) -> tuple:
    """(bias, input, TBackward0 of the weight): the weight's transpose is a virtual node."""
    e_b, e_x, e_w = node.edges
    if e_w is None:
        return e_b, e_x, None
    shape, dtype = node.shapes[2], node.dtypes[2]
    metas = ((shape, dtype), (shape[::-1], dtype))
    return e_b, e_x, nodes.virtual_node("TBackward0", node, (e_w,), metas)


def _virtual_step(node, g, vjp):
    """The gradient `vjp(g)` that virtual `node` passes on, after its prehooks (on `g`, its
    output's) and its hooks (on what it passes on)."""
    for prehook in _hooks_of(node, 1):
        result = prehook(g)
        g = g if result is None else result
    out = vjp(g)
    hooks = _hooks_of(node, 3)
    return apply_node_hooks(node, hooks, (out,), (g,))[0] if hooks else out


def _linear_hooked(node, hooks, grad_inputs, ct) -> tuple:
    """The hooks of addmm see d(weight.t()), as PyTorch's; those of its TBackward0 then."""
    t = nodes.face_edges(node)[2]
    gb, gx, gw = grad_inputs
    gb, gx, gwt = apply_node_hooks(node, hooks, (gb, gx, None if gw is None else gw.t()), (ct,))
    if gwt is None:
        return gb, gx, None
    return gb, gx, gwt.t() if t is None else _virtual_step(t, gwt, lambda g: g.t())


def _nll_face(node) -> tuple:
    """(LogSoftmaxBackward0 of the logits,): a virtual node."""
    meta = (node.shapes[0], node.dtypes[0])
    return (nodes.virtual_node("LogSoftmaxBackward0", node, node.edges[:1], (meta, meta)),)


def _nll_hooked(node, hooks, grad_inputs, ct) -> tuple:
    """nll_loss's hooks see d(log_softmax(x)), those of its LogSoftmaxBackward0 that and the
    logits' gradient; where none changes them, the fused vjp's gradient stays (its bits)."""
    from ..nn import functional as F

    log_softmax = nodes.face_edges(node)[0]
    x, target = node.saved
    x = x.detach()
    dlogp = F.one_hot(target, x.shape[1]).to(x.dtype) * -(ct / node.attrs["n"])
    (g,) = apply_node_hooks(node, hooks, (dlogp,), (ct,))
    if g is None:
        return None, None

    def vjp(g):
        if g is dlogp and grad_inputs[0] is not None:
            return grad_inputs[0]
        return g - F.softmax(x, 1) * g.sum(1, keepdim=True)

    return _virtual_step(log_softmax, g, vjp), None


def nll_of_logits(loss, name: str, x, dim: int, saved: dict, nll):
    """`loss`, the nll_loss of `log_softmax(x, dim)` computed from the logits `x` by the
    composite's one kernel, its history named `name` as PyTorch's, listing a virtual
    LogSoftmaxBackward0 of `x` (PyTorch's node of the log-probabilities) whose hooks, and the
    loss node's, see PyTorch's gradients; `nll(logp)`: the loss of log-probabilities."""
    saved["_face"] = functools.partial(_nll_of_logits_face, dim, (tuple(x.shape), x.dtype))
    saved["_hooked"] = functools.partial(_nll_of_logits_hooked, x, dim, nll)
    return nodes.name_history(loss, name, x, saved=saved)


def _nll_of_logits_face(dim, meta, node) -> tuple:
    """(LogSoftmaxBackward0 of the logits,): a virtual node (None: the logits need none)."""
    (edge,) = node.face
    if edge is None:
        return (None,)
    log_softmax = nodes.virtual_node("LogSoftmaxBackward0", node, (edge,), (meta, meta))
    log_softmax.composite = {"_saved_dim": dim}
    return (log_softmax,)


def _nll_of_logits_hooked(x, dim, nll, node, hooks, grad_inputs, ct) -> tuple:
    """The loss node's hooks see d(log_softmax(x)), its LogSoftmaxBackward0's that and the
    logits' gradient; where none changes them, the composite's gradient stays (its bits)."""
    from ..nn import functional as F

    (gx,) = grad_inputs
    x = x.detach()
    logp = F.log_softmax(x, dim).requires_grad_()
    with grad_mode.set_grad_enabled(True):
        (dlogp,) = autograd.grad(nll(logp), logp, ct)
    (g,) = apply_node_hooks(node, hooks, (dlogp,), (ct,))
    if g is None:
        return (None,)

    def vjp(g):
        if g is dlogp and gx is not None:
            return gx
        return g - F.softmax(x, dim) * g.sum(dim, keepdim=True)

    return (_virtual_step(nodes.face_edges(node)[0], g, vjp),)


autograd._ARRAY_VJP[LINEAR] = _linear_vjp_arrays
autograd._ARRAY_VJP[NLL] = _nll_vjp_arrays
nodes.FACES.update({LINEAR: _linear_face, NLL: _nll_face})
nodes.FACE_HOOKS.update({LINEAR: _linear_hooked, NLL: _nll_hooked})
