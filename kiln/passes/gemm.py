"""`fuse_gemm`: `x ± c * (a @ b)` as one `addmm` node (one BLAS GEMM that accumulates into
its output), when the product and its scaling are read nowhere else.

A gradient-descent update `w - lr * (h.T @ g)` then writes the weight gradient straight into
the weight's storage (an in-place update): no buffer holds the gradient, and its scaling and
subtraction are no separate passes over memory.
"""

from __future__ import annotations

import numpy as np

from ..graph.core import Graph
from ..graph.opdef import REGISTRY
from .program import live_nodes, rebuild


def fuse_gemm(graph: Graph) -> Graph:
    """A copy of the program graph `graph` with each `x + c * (a @ b)`, `x - c * (a @ b)`,
    `x + a @ b` and `x - a @ b` (2-D float matrices of one dtype, `c` a scalar constant,
    the product and its scaling read only there, `x` of the result's shape) replaced by
    `addmm(x, a, b, beta=1, alpha=±c)`.

    >>> import kiln as kn, numpy as np
    >>> from kiln.passes.program import extract
    >>> with kn.Graph().as_default():
    ...     w = kn.Variable(np.ones((2, 2), np.float32), name="w")
    ...     h = kn.placeholder(kn.float32, (3, 2), name="h")
    ...     g = kn.placeholder(kn.float32, (3, 2), name="g")
    ...     step = w - 0.5 * (h.T @ g)
    >>> [n.op.name for n in fuse_gemm(extract([step], [h, g], {})).nodes]
    ['variable', 'placeholder', 'placeholder', 'transpose', 'addmm']
    """
    graph = _transposed_products(graph)
    sole = _sole_reader(graph)
    fused = [False]
    new: dict = {}  # id(original value) -> its value in the copy, filled by rebuild

    def rule(node, inputs, copy):
        if node.op.name not in ("add", "sub") or node.out.ndim != 2:
            return None
        pairs = [(0, 1)] if node.op.name == "sub" else [(0, 1), (1, 0)]
        for xi, pi in pairs:
            x, scaled = node.inputs[xi], node.inputs[pi]
            found = _scaled_product(scaled, sole)
            if found is None or tuple(x.shape) != tuple(node.out.shape):
                continue
            alpha, product = found
            if not (x.dtype == product.dtype == node.out.dtype) or x.dtype.kind != "f":
                continue
            a, b = product.node.inputs
            if a.ndim != 2 or b.ndim != 2 or a.dtype != x.dtype or b.dtype != x.dtype:
                continue
            if isinstance(alpha, float):
                ma, mb = new[id(a)], new[id(b)]  # the product's inputs came before
            elif alpha.dtype != x.dtype:
                continue
            else:  # a 0-d value known only at run time (a learning rate Variable)
                ma, mb = _scale_smaller(copy, new[id(a)], new[id(b)], new[id(alpha)], node)
                alpha = 1.0
            mapped = dict(zip((id(i) for i in node.inputs), inputs))
            alpha = -alpha if node.op.name == "sub" else alpha
            attrs = {"beta": 1.0, "alpha": float(alpha)}
            fused[0] = True
            ins = [mapped[id(x)], ma, mb]
            return copy.add_node(REGISTRY["addmm"], ins, attrs, node.name,
                                 node.site, node.out.shape, node.out.dtype).out  # fmt: skip
        return None

    result = rebuild(graph, rule, new)
    if not fused[0]:
        return result
    return rebuild(_only_live(result))


def _sole_reader(graph):
    readers: dict[int, int] = {}
    for n in graph.nodes:
        for i in n.inputs:
            readers[id(i)] = readers.get(id(i), 0) + 1
    for s in (*graph.outputs, *graph.updates.values()):
        readers[id(s)] = readers.get(id(s), 0) + 1
    return lambda s: readers.get(id(s), 0) == 1


def _transposed_products(graph):
    """`(a @ b).T` -> `b.T @ a.T` for 2-D matrices whose product is read only there: the
    product is made in the order it is read (a weight gradient of `x @ w.T`, fetched or
    updated, is then no strided view of an arena buffer that must be copied out), and BLAS
    takes the transposed operands by its flags, without copies."""
    sole = _sole_reader(graph)
    changed = [False]
    new: dict = {}

    def rule(node, inputs, copy):
        if node.op.name != "transpose" or node.out.ndim != 2 or node.attrs["perm"] != (1, 0):
            return None
        product = node.inputs[0]
        if product.node.op.name != "matmul" or not sole(product):
            return None
        a, b = product.node.inputs
        if a.ndim != 2 or b.ndim != 2:
            return None
        changed[0] = True
        bt, at = _flipped(copy, b, new, node.site), _flipped(copy, a, new, node.site)
        return copy.add_node(product.node.op, [bt, at], {}, node.name, node.site,
                             node.out.shape, node.out.dtype).out  # fmt: skip

    result = rebuild(graph, rule, new)
    return rebuild(_only_live(result)) if changed[0] else graph


def _flipped(copy, m, new, site):
    """The transpose of the 2-D `m` in the copy: `x` itself when `m` is `x.T`."""
    if _is_flip(m):
        return new[id(m.node.inputs[0])]
    shape = (m.shape[1], m.shape[0])
    flip = REGISTRY["transpose"]
    return copy.add_node(flip, [new[id(m)]], {"perm": (1, 0)}, f"{m.node.name}_t", site, shape,
                         m.dtype).out  # fmt: skip


def _is_flip(m) -> bool:
    return m.node.op.name == "transpose" and m.ndim == 2 and m.node.attrs["perm"] == (1, 0)


def _scaled_product(s, sole):
    """(c, a @ b) where `s` is `a @ b`, `c * (a @ b)` or `(a @ b) * c` read only once: `c`
    is a float for a constant scalar, or the 0-d value itself when it is known only at run
    time."""
    if not sole(s):
        return None
    node = s.node
    if node.op.name == "matmul":
        return 1.0, s
    if node.op.name != "mul":
        return None
    for c, p in (node.inputs, node.inputs[::-1]):
        if p.node.op.name != "matmul" or not sole(p):
            continue
        value = _scalar_constant(c)
        if value is not None:
            return value, p
        if c.shape == () and c.node.op.name != "constant":
            return c, p
    return None


def _scale_smaller(copy, a, b, c, node):
    """`c * (a @ b)` as `(c * a) @ b` or `a @ (c * b)`, scaling the operand with fewer
    elements: a pass over a [batch, n] activation instead of over the [n, m] product."""

    def scaled(m):
        """`c * m`; for `m = x.T`, `(c * x).T`, so the product may overwrite `x` when this
        is its last reader (an elementwise op runs in place over a whole buffer, not over a
        transposed view)."""
        flip = _is_flip(m)
        x = m.node.inputs[0] if flip else m
        y = copy.add_node(REGISTRY["mul"], [x, c], {}, f"{node.name}_scaled", node.site,
                          x.shape, x.dtype).out  # fmt: skip
        if not flip:
            return y
        return copy.add_node(REGISTRY["transpose"], [y], {"perm": (1, 0)}, f"{node.name}_scaled_t",
                             node.site, m.shape, m.dtype).out  # fmt: skip

    return (scaled(a), b) if _size(a) <= _size(b) else (a, scaled(b))


def _size(s) -> float:
    n = 1
    for d in s.shape:
        if not isinstance(d, int):
            return float("inf")
        n *= d
    return n


def _scalar_constant(s):
    if s.node.op.name != "constant" or s.shape != ():
        return None
    value = s.node.attrs["value"].array
    if value.dtype.kind == "c":  # a complex scale is not folded into the GEMM
        return None
    return float(value) if np.isfinite(value) else None


def _only_live(graph):
    from types import SimpleNamespace

    return SimpleNamespace(
        nodes=live_nodes(graph), inputs=graph.inputs, outputs=graph.outputs,
        updates=graph.updates, source=graph.source,
    )  # fmt: skip
