"""`simplify`: constant folding, common-subexpression elimination, algebraic and stability
rewrites (one table row each) and dead-code elimination, on a program graph, in two sweeps.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np

from .. import dtypes as dt
from .. import shapes as sh
from ..errors import KilnError
from ..graph.core import Graph, Symbol
from ..graph.opdef import REGISTRY, ArrayValue, Attrs, OpDef
from ..graph.region import regions_of
from ..ops.core import infer
from .program import live_nodes, rebuild
from .simplify_regions import (
    extended_scans,
    hoisted_body,
    invariant_values,
    region_attrs,
    used_results,
)

_NUMPY = SimpleNamespace(xp=np)  # the backend `OpDef.prepare` sees when folding

MAX_FOLD_SIZE = 1_000_000  # elements: a larger folded constant would bloat the graph
_NEVER_FOLD = frozenset({"random", "source", "update", "region", "collective"})
# nor sources, except constants (by value)
_NEVER_MERGE = frozenset({"random", "update", "collective"})


def simplify(graph: Graph) -> Graph:
    """A simplified copy of the program graph `graph` (which is left as it is).

    One sweep in graph order rewrites each node, its inputs already rewritten: a node that
    equals an earlier one (same op, inputs and attrs; never a random op) is that node
    (CSE); a node whose inputs are all constants becomes a constant computed by its NumPy
    kernel, up to MAX_FOLD_SIZE elements and without symbolic dims in its attrs (folding);
    otherwise the first row of RULES that applies replaces it. A second sweep keeps only
    the nodes the outputs and updates need (DCE). Every node a rewrite adds takes the site
    and name scope of the node it replaces.

    Choices: `stop_gradient(x) -> x` and `custom_grad(x, ...) -> x`, because simplify runs on
    program graphs, after differentiation (a program graph is never differentiated).
    A float x plus zeros is x only where the zeros are -0.0 (IEEE's and PyTorch's `-0.0 + 0.0`
    is +0.0, which eager code gives), x minus zeros only where they are +0.0; a complex x
    times or over 1 is left alone (a complex product by 1 + 0j turns the 0 beside an infinite
    part into NaN, as PyTorch's kernels do); `x - x` is left alone, since it is NaN, not 0,
    where x is inf or NaN.
    Softmax cross-entropy needs no rule here: `kn.cross_entropy` already computes `log_softmax` (see
    kiln/frontend/nn_functional.py), and `log(softmax(x))` written by hand becomes the same
    form through `log(exp(c) / b) -> c - log(b)`.

    >>> import kiln as kn
    >>> from kiln.passes.program import extract
    >>> with kn.Graph().as_default():
    ...     x = kn.placeholder(kn.float32, (3,), name="x")
    ...     y = kn.log(1.0 + x * 1.0)
    >>> print(simplify(extract([y], [x], {})), end="")  # doctest: +ELLIPSIS
    { lambda x:f32[3] .
        t0:f32[3] = log1p x  # <doctest ...>:3
      in (t0) }
    """
    live = _live(graph)
    rewritten = rebuild(live, _Rewriter(live))
    return rebuild(_live(rewritten))


def _live(graph) -> SimpleNamespace:
    """`graph` as `rebuild` reads it, with only the nodes its outputs and updates need."""
    return SimpleNamespace(
        nodes=live_nodes(graph), inputs=graph.inputs, outputs=graph.outputs,
        updates=graph.updates, source=graph.source,
    )  # fmt: skip


@dataclass(frozen=True)
class Rule:
    """One rewrite of an `op` node: `rewrite(r, *inputs, **attrs)` gives its replacement or
    None (`r` is the _Rewriter: pattern helpers and `emit`). A replacement is used only if it
    has the node's exact shape and dtype (checked once, in `_Rewriter.simplify`), so no rule
    can change broadcasting or promotion."""

    text: str
    op: str
    rewrite: Callable


def _transpose_of_transpose(r, y, perm):
    inner = r.inputs(y, "transpose")
    if inner is None:
        return None
    first = y.node.attrs["perm"]  # y = transpose(x, first); out[i] is x's axis first[perm[i]]
    return r.emit("transpose", inner[0], perm=tuple(first[p] for p in perm))


def _log_of_ratio(r, y):
    num, b = r.inputs(y, "div") or (None, None)
    c = r.inner(num, "exp")
    return None if c is None else r.emit("sub", c, r.emit("log", b))


def _diagonal(r, d):
    """v, where `d` is `I * v` (v of shape (m,), (1, m) or (m, 1): d is diag(v)), else None.
    Where v has an inf or a NaN, I * v has NaNs off the diagonal (0 * inf) that the rewrites
    below drop: they give the product the algebra means."""
    args = r.inputs(d, "mul")
    if args is None or d.ndim != 2:
        return None
    m = d.shape[0]
    for eye, v in (args, args[::-1]):
        if r.is_identity(eye) and tuple(v.shape) in ((m,), (1, m), (m, 1)):
            return v
    return None


def _diagonal_matmul(r, d, a):
    """diag(v) @ a -> v[:, None] * a (v * a for a vector): what a batched jacobian's identity
    seeds make of a matrix product, O(m^2) instead of O(m^3)."""
    v = _diagonal(r, d)
    if v is None:
        return None
    if a.ndim == 1:
        return r.emit("mul", r.emit("reshape", v, shape=(d.shape[0],)), a)
    return r.emit("mul", r.emit("reshape", v, shape=(d.shape[0], 1)), a)


def _matmul_diagonal(r, a, d):
    """a @ diag(v) -> a * v (v along a's last axis)."""
    v = _diagonal(r, d)
    return None if v is None else r.emit("mul", a, r.emit("reshape", v, shape=(d.shape[0],)))


def _transpose_of_scaled_constant(r, y, perm):
    """transpose(c * v) -> transpose(c) * v', for a constant c of the product's rank and a v
    with at most one dim other than 1 (so v' is a reshape of v, and transpose(c) folds): a
    forward-mode jacobian's columns turned into rows without a strided copy."""
    args = r.inputs(y, "mul")
    if args is None:
        return None
    for c, v in (args, args[::-1]):
        if c.node.op.name == "constant" and c.ndim == y.ndim and sum(d != 1 for d in v.shape) <= 1:
            full = (1,) * (y.ndim - v.ndim) + tuple(v.shape)
            moved = tuple(full[p] for p in perm)
            return r.emit("mul", r.emit("transpose", c, perm=perm),
                          r.emit("reshape", v, shape=moved))  # fmt: skip
    return None


def _times_one(r, x, c):
    """x * 1 (or x / 1) is x, but for complex x: a complex product by 1 + 0j turns an infinite
    part's 0 partner into NaN (inf * 0), as PyTorch's kernels compute it."""
    return x if x.dtype.kind != "c" and r.is_const(c, 1) else None


def _zero_of_sum(r, x, c, negative: bool):
    """x + c (negative) or x - c (not negative) is x where c is zeros that keep x's bits:
    -0.0 to add, +0.0 to subtract (-0.0 + 0.0 is +0.0 in IEEE arithmetic and in PyTorch); any
    zero for integers and bools."""
    if not r.is_const(c, 0):
        return None
    if dt.is_float(x.dtype) or x.dtype.kind == "c":
        zeros = np.asarray(c.node.attrs["value"].array)
        parts = (zeros.real, zeros.imag) if zeros.dtype.kind == "c" else (zeros,)
        if not all(bool(np.all(np.signbit(p.astype(np.float64)) == negative)) for p in parts):
            return None
    return x


# fmt: off
RULES = (
    Rule("x * 1 -> x", "mul", _times_one),
    Rule("1 * x -> x", "mul", lambda r, c, x: _times_one(r, x, c)),
    Rule("x / 1 -> x", "div", _times_one),
    Rule("x + -0.0 -> x", "add", lambda r, x, c: _zero_of_sum(r, x, c, True)),
    Rule("-0.0 + x -> x", "add", lambda r, c, x: _zero_of_sum(r, x, c, True)),
    Rule("x - 0 -> x", "sub", lambda r, x, c: _zero_of_sum(r, x, c, False)),
    Rule("neg(neg(x)) -> x", "neg", lambda r, y: r.inner(y, "neg")),
    Rule("x ** 1 -> x", "pow", lambda r, x, c: x if r.is_const(c, 1) else None),
    Rule("x ** 2 -> square(x)", "pow",
         lambda r, x, c: r.emit("square", x) if r.is_const(c, 2) else None),
    Rule("transpose(x, identity) -> x", "transpose",
         lambda r, x, perm: x if perm == tuple(range(len(perm))) else None),
    Rule("transpose(transpose(x, p), q) -> transpose(x, p[q])", "transpose",
         _transpose_of_transpose),
    Rule("transpose(c * v) -> transpose(c) * v'", "transpose", _transpose_of_scaled_constant),
    Rule("reshape(x, x.shape) -> x", "reshape",
         lambda r, x, shape: x if x.shape == tuple(shape) else None),
    Rule("reshape(reshape(x), s) -> reshape(x, s)", "reshape",
         lambda r, y, shape: r.emit("reshape", r.inner(y, "reshape"), shape=shape)),
    Rule("broadcast_to(x, x.shape) -> x", "broadcast_to",
         lambda r, x, shape: x if x.shape == tuple(shape) else None),
    Rule("broadcast_to(broadcast_to(x), s) -> broadcast_to(x, s)", "broadcast_to",
         lambda r, y, shape: r.emit("broadcast_to", r.inner(y, "broadcast_to"), shape=shape)),
    Rule("I @ x -> x", "matmul", lambda r, i, x: x if r.is_identity(i) else None),
    Rule("x @ I -> x", "matmul", lambda r, x, i: x if r.is_identity(i) else None),
    Rule("diag(v) @ x -> v[:, None] * x", "matmul", _diagonal_matmul),
    Rule("x @ diag(v) -> x * v", "matmul", _matmul_diagonal),
    Rule("cast(x, x.dtype) -> x", "cast", lambda r, x, dtype: x if x.dtype == dtype else None),
    Rule("stop_gradient(x) -> x", "stop_gradient", lambda r, x: x),
    Rule("custom_grad(x, ...) -> x", "custom_grad", lambda r, x, *inputs, function: x),
    # stability
    Rule("log(1 + x) -> log1p(x)", "log", lambda r, y: r.emit("log1p", r.operand(y, "add", 1))),
    Rule("exp(x) - 1 -> expm1(x)", "sub",
         lambda r, e, c: r.emit("expm1", r.inner(e, "exp")) if r.is_const(c, 1) else None),
    Rule("log(exp(c) / b) -> c - log(b)", "log", _log_of_ratio),
    Rule("log(sigmoid(x)) -> -softplus(-x)", "log", lambda r, y: r.emit(
        "neg", r.emit("softplus", r.emit("neg", r.inner(y, "sigmoid")), beta=1.0))),
)
# fmt: on
_RULES_BY_OP: dict[str, list[Rule]] = {}
for _rule in RULES:
    _RULES_BY_OP.setdefault(_rule.op, []).append(_rule)


def _key(op: OpDef, inputs, attrs: Attrs) -> tuple:
    """Nodes with equal keys compute equal values (commutative ops: in either input order)."""
    ids = tuple(id(i) for i in inputs)
    return (op, tuple(sorted(ids)) if "commutative" in op.tags else ids, attrs)


def _mergeable(op: OpDef) -> bool:
    return not op.tags & _NEVER_MERGE and ("source" not in op.tags or op.name == "constant")


def _has_dim(value) -> bool:
    if isinstance(value, tuple):
        return any(_has_dim(v) for v in value)
    return isinstance(value, sh.Dim)


def _foldable(op: OpDef, inputs, attrs, shape) -> bool:
    return (
        not op.tags & _NEVER_FOLD
        and all(i.node.op.name == "constant" for i in inputs)
        and sh.is_static(shape)
        and math.prod(shape) <= MAX_FOLD_SIZE
        and not any(_has_dim(v) for v in attrs.values())
    )


class _Rewriter:
    """One sweep: `rebuild`'s rule. It keeps the copy's CSE table (filled lazily, so nodes
    that `rebuild` copies itself are found too) and the site and scope of the node at hand."""

    def __init__(self, graph: Graph):
        self.copy: Graph | None = None
        self.table: dict = {}  # CSE key -> Symbol of the copy
        self.registered = 0  # how many of the copy's nodes are in the table
        self.taken = {n.name for n in graph.nodes}  # the copy may still receive any of these
        self.counts: dict[str, int] = {}
        self.consts: dict = {}  # (id(constant), value) -> every element equals value
        self.site: str | None = None
        self.scope = ""
        self.extended = extended_scans(graph.nodes)
        self.moved: dict = {}  # id(an extending scan) -> its copy, made where the other was
        self.used = used_results(graph.nodes, self.extended)
        self.renumbered: dict = {}  # id(region node) -> {old result index: new}

    def __call__(self, node, inputs, copy: Graph) -> Symbol | None:
        if id(node) in self.moved:
            return self.moved[id(node)]
        wider = self.extended.get(id(node))
        if wider is not None:  # the scan that also returns residuals runs here, once
            self.moved[id(wider)] = out = self(wider, inputs, copy)
            if id(wider) in self.renumbered:
                self.renumbered[id(node)] = self.renumbered[id(wider)]
            return out
        self.copy, self.site = copy, node.site
        self.scope = node.name.rpartition("/")[0]
        attrs = node.attrs
        bodies = regions_of(node)
        if bodies:  # a region op: its bodies simplified, the results nothing reads dropped
            attrs, index = region_attrs(node, self.used, simplify)
            if index is not None:
                self.renumbered[id(node)] = index
        elif node.op.name == "get" and id(node.inputs[0].node) in self.renumbered:
            index = self.renumbered[id(node.inputs[0].node)][attrs["index"]]
            attrs, bodies = Attrs({**attrs, "index": index}), True  # a node of new attrs
        if node.op.name == "scan":
            inputs, attrs = self._hoist(node, inputs, attrs)
        found = self.simplify(node.op, inputs, attrs, node.out.shape, node.out.dtype)
        if found is None and bodies:
            clone = copy.add_node(node.op, inputs, attrs, node.name, node.site, node.out.shape,
                                  node.out.dtype)  # fmt: skip
            self.taken.add(node.name)
            return clone.out
        return found

    def _hoist(self, node, inputs, attrs):
        """A scan's loop-invariant values computed here, once, and passed in as captures."""
        probe = SimpleNamespace(attrs=attrs)
        frontier, nodes = invariant_values(probe)
        if not frontier:  # NOTE: then every capture is read (a pass-through one is a result)
            return inputs, attrs
        body = attrs["body"].graph
        fixed = attrs["num_carry"] + attrs["num_xs"]
        outer = {id(p): s for p, s in zip(body.inputs[fixed:], inputs[fixed:])}
        for n in nodes:  # as nodes of the copy (those no frontier value needs: dead code)
            args = [outer[id(i)] for i in n.inputs]
            found = self.simplify(n.op, args, n.attrs, n.out.shape, n.out.dtype)
            if found is None:
                found = self.copy.add_node(n.op, args, n.attrs, self._fresh_name(n.op.name),
                                           n.site, n.out.shape, n.out.dtype).out  # fmt: skip
                found.node.site = n.site
            outer[id(n.out)] = found
        region, keep = hoisted_body(probe, frontier, simplify)
        inputs = [*(inputs[k] for k in keep), *(outer[id(v)] for v in frontier)]
        return inputs, Attrs({**attrs, "body": region})

    def simplify(self, op: OpDef, inputs, attrs: Attrs, shape, dtype) -> Symbol | None:
        """An existing or new Symbol equal to `op[attrs](*inputs)`, or None: keep the node."""
        self._register_new_nodes()
        if not _mergeable(op):
            return None
        found = self.table.get(_key(op, inputs, attrs))
        if found is not None and found.shape == tuple(shape):  # NOTE: a dim a shape rule made
            return found  # afresh (a slice of a symbolic length) may be read by other attrs
        if _foldable(op, inputs, attrs, shape):
            return self._fold(op, inputs, attrs, shape, dtype)
        for rule in _RULES_BY_OP.get(op.name, ()):
            try:
                result = rule.rewrite(self, *inputs, **attrs)
            except KilnError:  # a replacement the rules refuse (neg of a bool...): not this one
                continue
            if result is not None and result.shape == tuple(shape) and result.dtype == dtype:
                return result
        return None

    def _register_new_nodes(self):
        nodes = self.copy.nodes
        for node in nodes[self.registered :]:
            if _mergeable(node.op):
                self.table.setdefault(_key(node.op, node.inputs, node.attrs), node.out)
        self.registered = len(nodes)

    def _fold(self, op, inputs, attrs, shape, dtype) -> Symbol | None:
        arrays = [i.node.attrs["value"].array for i in inputs]
        try:
            # The kernel the program would run (`OpDef.prepare`: kiln's own float32 kernels
            # outside exact mode), so folding never changes the bits.
            kernel = op.prepare and op.prepare(
                _NUMPY, [a.shape for a in arrays], [a.dtype for a in arrays], shape, **attrs
            )
            with np.errstate(all="ignore"):
                array = np.asarray((kernel or op.impl)(np, *arrays, **attrs if not kernel else {}))
        except Exception:  # noqa: BLE001 — left to run, where the error names the node
            return None
        if array.shape != tuple(shape) or array.dtype != dtype:
            return None  # a kernel that disagrees with its rules: leave it to the runtime
        return self.emit("constant", value=ArrayValue(array))

    def emit(self, op_name: str, *inputs, **attrs) -> Symbol | None:
        """`op_name[attrs](*inputs)`, itself simplified, in the copy; None if an input is None
        (so a failed match anywhere in a rule row makes the whole row give None)."""
        if any(i is None for i in inputs):
            return None
        op = REGISTRY[op_name]
        # NOTE: program graphs do not carry build-time dim constraints (extract drops them).
        shape, dtype, _constraints = infer(op, inputs, attrs, self.site)
        found = self.simplify(op, inputs, Attrs(attrs), shape, dtype)
        if found is not None:
            return found
        node = self.copy.add_node(op, inputs, attrs, self._fresh_name(op_name), self.site,
                                  shape, dtype)  # fmt: skip
        node.site = self.site  # a None site stays None (add_node would look up a caller)
        return node.out

    def _fresh_name(self, base: str) -> str:
        """`scope/base_N`, unused by the copy and by every node `rebuild` has yet to copy."""
        name = f"{self.scope}/{base}" if self.scope else base
        n, candidate = self.counts.get(name, 0), name
        while candidate in self.taken:
            n += 1
            candidate = f"{name}_{n}"
        self.counts[name] = n
        self.taken.add(candidate)
        return candidate

    # -- patterns: each takes a Symbol (or None, and then gives None) ------------------------

    def is_const(self, s: Symbol | None, value) -> bool:
        """`s` is a constant and every element of it equals `value`."""
        if s is None or s.node.op.name != "constant":
            return False
        key = (id(s), value)
        if key not in self.consts:
            self.consts[key] = bool(np.all(s.node.attrs["value"].array == value))
        return self.consts[key]

    def is_identity(self, s: Symbol | None) -> bool:
        """`s` is a constant identity matrix (square, ones on the diagonal, zeros elsewhere)."""
        if s is None or s.node.op.name != "constant" or s.ndim != 2:
            return False
        key = (id(s), "identity")
        if key not in self.consts:
            a = s.node.attrs["value"].array
            self.consts[key] = a.shape[0] == a.shape[1] and bool(np.all(a == np.eye(len(a))))
        return self.consts[key]

    def inputs(self, s: Symbol | None, op_name: str) -> tuple | None:
        """The inputs of `s`'s node if its op is `op_name`."""
        return s.node.inputs if s is not None and s.node.op.name == op_name else None

    def inner(self, s: Symbol | None, op_name: str) -> Symbol | None:
        """x, where `s` is `op_name(x)`."""
        args = self.inputs(s, op_name)
        return args[0] if args else None

    def operand(self, s: Symbol | None, op_name: str, value) -> Symbol | None:
        """x, where `s` is `op_name(x, c)` or `op_name(c, x)` and every element of c is value."""
        args = self.inputs(s, op_name)
        if args is None:
            return None
        a, b = args
        if self.is_const(b, value):
            return a
        return b if self.is_const(a, value) else None
