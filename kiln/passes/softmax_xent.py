"""`fuse_softmax_xent`: softmax cross-entropy and its gradient as one kernel each.

`cross_entropy(logits, labels)` (kiln's and `kn.nn.functional`'s) is a log-softmax read at the
labels, and its gradient a scatter of the cotangent, a row sum, a division by the softmax's
denominator, a broadcast product and a sum: a dozen nodes over [batch, classes] values, each
a kernel call (in a small MLP step, more time than the elementwise work itself). This pass
finds that pattern in a program graph,

    m = reduce_max(x, a); sh = x - m; e = exp(sh); s = reduce_sum(e, a); lp = sh - log(s)
    picked = take_along_axis(lp, idx, a)                                 (the forward pass)
    oh = scatter_along_axis(ct, idx, a); q = reduce_sum(-oh, a) / s
    dx = oh + broadcast_to(q) * e                                        (each gradient)

and puts `log_softmax_take(x, idx)` in place of `picked` and `log_softmax_take_grad(ct, x,
idx)` in place of each `dx` (kiln/ops/losses.py): kernels computing the same values by the
same NumPy calls, so the bits do not change. It rewrites only where every value in between is
read by the pattern alone (not fetched, not read elsewhere): then nothing of it stays.
"""

from __future__ import annotations

from types import SimpleNamespace

from ..graph.core import Graph
from ..graph.opdef import REGISTRY
from .program import live_nodes, rebuild


def fuse_softmax_xent(graph: Graph) -> Graph:
    """A copy of the program graph `graph` with each softmax cross-entropy and its gradients
    as `log_softmax_take` and `log_softmax_take_grad` nodes (`graph` itself when it holds
    none).

    >>> import kiln as kn, numpy as np
    >>> from kiln.passes import extract, simplify
    >>> with kn.Graph().as_default():
    ...     x = kn.placeholder(kn.float32, (4, 3), name="x")
    ...     labels = kn.placeholder(kn.int64, (4,), name="labels")
    ...     loss = kn.cross_entropy(x, labels)
    ...     (dx,) = kn.grad(loss, [x])
    >>> program = simplify(extract([loss, dx], [x, labels], {}))
    >>> ops = [n.op.name for n in fuse_softmax_xent(program).nodes]
    >>> [op for op in ops if op.startswith("log_softmax")]
    ['log_softmax_take', 'log_softmax_take_grad']
    """
    readers = _readers(graph)
    found = {}  # id(node replaced) -> (op name, inputs in the original graph, axis)
    for node in graph.nodes:
        if node.op.name != "take_along_axis":
            continue
        forward = _forward(node, readers)
        if forward is None:
            continue
        x, idx, axis, inner, e, s = forward
        grads = [g for g in (_backward(r, idx, axis, e, s, readers) for r in readers[id(e)]) if g]
        pattern = {id(n) for n in inner}.union(*({id(n) for n in g[1]} for g in grads))
        if any(id(r) not in pattern for v in (e, s) for r in readers[id(v)]):
            continue  # the softmax is read elsewhere: keep the nodes making it
        found[id(node)] = ("log_softmax_take", (x, idx), axis)
        for dx, _, ct in grads:
            found[id(dx)] = ("log_softmax_take_grad", (ct, x, idx), axis)
    if not found:
        return graph
    new: dict = {}

    def rule(node, inputs, copy):
        hit = found.get(id(node))
        if hit is None:
            return None
        name, ins, axis = hit
        return copy.add_node(REGISTRY[name], [new[id(i)] for i in ins], {"axis": axis},
                             node.name, node.site, node.out.shape, node.out.dtype).out  # fmt: skip

    result = rebuild(graph, rule, new)
    return rebuild(SimpleNamespace(nodes=live_nodes(result), inputs=result.inputs,
                                   outputs=result.outputs, updates=result.updates,
                                   source=result.source))  # fmt: skip


def _readers(graph) -> dict:
    """id(value) -> the nodes reading it; a fetched or updated value has a reader None."""
    readers: dict = {}
    for n in graph.nodes:
        for i in n.inputs:
            readers.setdefault(id(i), []).append(n)
    for s in (*graph.outputs, *graph.updates.values()):
        readers.setdefault(id(s), []).append(None)
    return readers


def _op(s, name, **attrs):
    """`s`'s node when it is op `name` with `attrs`, else None."""
    node = s.node
    if node.op.name != name or any(node.attrs.get(k) != v for k, v in attrs.items()):
        return None
    return node


def _only(s, readers, *nodes) -> bool:
    """Whether `s` is read by `nodes` alone."""
    ids = {id(n) for n in nodes}
    return all(r is not None and id(r) in ids for r in readers.get(id(s), ()))


def _forward(take, readers):
    """(x, idx, axis, the pattern's nodes, e, s) when `take` reads a log-softmax along its
    axis, each value of it read only there; else None."""
    lp, idx = take.inputs
    axis = take.attrs["axis"]
    keep = {"axes": (axis,), "keepdims": True}
    lp_node = _op(lp, "sub")
    if lp_node is None or lp.shape != lp_node.inputs[0].shape:
        return None
    sh, ls = lp_node.inputs
    log, sh_node = _op(ls, "log"), _op(sh, "sub")
    if log is None or sh_node is None:
        return None
    s = log.inputs[0]
    s_node = _op(s, "reduce_sum", **keep)
    x, m = sh_node.inputs
    m_node = _op(m, "reduce_max", **keep)
    if s_node is None or m_node is None or m_node.inputs[0] is not x:
        return None
    e = s_node.inputs[0]
    e_node = _op(e, "exp")
    if e_node is None or e_node.inputs[0] is not sh or x.shape != sh.shape:
        return None
    if x.dtype.kind != "f" or not (x.dtype == sh.dtype == e.dtype == s.dtype == lp.dtype):
        return None
    if x.ndim != idx.ndim or any(
        a != axis and d != k for a, (d, k) in enumerate(zip(x.shape, idx.shape))
    ):  # fmt: skip
        return None  # broadcast indices: take_along_axis's, not this kernel's
    if not (_only(lp, readers, take) and _only(ls, readers, lp_node) and _only(m, readers, sh_node)
            and _only(sh, readers, e_node, lp_node)):  # fmt: skip
        return None
    return x, idx, axis, [take, lp_node, log, sh_node, m_node, s_node, e_node], e, s


def _backward(mul, idx, axis, e, s, readers):
    """(dx node, its pattern's nodes, ct) when `mul` (a reader of the softmax's `e`) is the
    product in `scatter(ct) + broadcast(sum(-scatter(ct)) / s) * e`; else None."""
    if mul is None or mul.op.name != "mul" or not any(i is e for i in mul.inputs):
        return None
    bq = mul.inputs[1] if mul.inputs[0] is e else mul.inputs[0]
    if bq is e:
        return None
    b_node = _op(bq, "broadcast_to", shape=tuple(e.shape))
    q = b_node.inputs[0] if b_node is not None else bq
    q_node = _op(q, "div")
    if q_node is None or q_node.inputs[1] is not s:
        return None
    r = q_node.inputs[0]
    r_node = _op(r, "reduce_sum", axes=(axis,), keepdims=True)
    neg = None if r_node is None else _op(r_node.inputs[0], "neg")
    if neg is None:
        return None
    oh = neg.inputs[0]
    oh_node = _op(oh, "scatter_along_axis", axis=axis, shape=tuple(e.shape))
    if oh_node is None or oh_node.inputs[1] is not idx or oh.dtype != e.dtype:
        return None
    ct = oh_node.inputs[0]
    adds = [r for r in readers.get(id(mul.out), ()) if r is not None and r.op.name == "add"]
    if len(adds) != 1 or set(map(id, adds[0].inputs)) != {id(oh), id(mul.out)}:
        return None
    dx = adds[0]
    if dx.out.shape != e.shape or dx.out.dtype != e.dtype or ct.shape != idx.shape:
        return None
    inner = [mul, q_node, r_node, neg, oh_node] + ([b_node] if b_node is not None else [])
    single = [(mul.out, [dx]), (oh, [neg, dx]), (neg.out, [r_node]), (r, [q_node]),
              (q, [b_node or mul]), (bq, [mul])]  # fmt: skip
    if not all(_only(v, readers, *users) for v, users in single):
        return None
    return dx, [dx, *inner], ct
