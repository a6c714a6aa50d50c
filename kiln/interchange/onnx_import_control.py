"""ONNX import of If, Loop and Scan as kiln's region ops (`kn.cond`, `kn.while_loop`,
`kn.scan`): each subgraph is imported while its region's body is traced, and the values it
reads from the graphs around are captured, as any body's are."""

from __future__ import annotations

import json

import numpy as np

from .. import dtypes as dt
from ..graph import region as rg
from ..graph.core import Symbol
from .onnx_export import _onnx
from .onnx_import import Importer, Known, import_nodes
from .onnx_kiln_ops import KEY


class _Scope(dict):
    """A subgraph's values: its own, then those of the graphs around (ONNX's outer scope)."""

    def __init__(self, outer):
        super().__init__()
        self.outer = outer

    def __missing__(self, name):
        return self.outer[name]

    def __contains__(self, name):
        return dict.__contains__(self, name) or name in self.outer


class _BodyImporter(Importer):
    """Imports a subgraph into the region body being traced: Symbols of the graphs around
    are captured, initializers stay Variables of the model's graph."""

    def __init__(self, outer: Importer):
        super().__init__(rg.innermost(), outer.opset)
        self.outer, self.kiln_ops = outer, outer.kiln_ops
        self.values = _Scope(outer.values)

    def symbol(self, value) -> Symbol:
        if isinstance(value, Known) and value.initializer is not None:
            value = self.outer.symbol(value)
        if isinstance(value, Symbol):
            return value if value.graph is self.graph else rg.capture(value)
        return super().symbol(value)


def _body(imp, graph_proto, params, bound=None):
    """The results of subgraph `graph_proto` with its inputs bound to `params` (and the names
    in `bound` to their values), imported into the body being traced."""
    sub = _BodyImporter(imp)
    for init in graph_proto.initializer:  # a body's own constants (kiln writes them there)
        sub.values[init.name] = Known(_onnx().numpy_helper.to_array(init))
    for vi, p in zip(graph_proto.input, params, strict=True):
        sub.values[vi.name] = p
    sub.values.update(bound or {})
    import_nodes(sub, graph_proto)
    return [sub.symbol(sub.values[vi.name]) for vi in graph_proto.output]


def _part(graph_proto, start, stop, outputs):
    """The subgraph of nodes `start:stop` of `graph_proto`, giving the values `outputs`."""
    onnx = _onnx()
    part = onnx.GraphProto(name=graph_proto.name)
    part.node.extend(graph_proto.node[start:stop])
    part.initializer.extend(graph_proto.initializer)
    part.output.extend(onnx.ValueInfoProto(name=n) for n in outputs)
    return part


def _meta(node) -> dict:
    return json.loads(next(e.value for e in node.metadata_props if e.key == KEY))


def _restore_cond(imp, node, names, attrs):
    """kiln's cond as it was exported: the If's condition before its cast to bool, the
    operands as the branches' parameters (the branches read them by their outer names)."""
    from ..frontend.control import cond

    k = int(attrs["num_operands"])
    pred = imp.symbol(imp.values[names[0]])
    ops = [imp.symbol(imp.values[n]) for n in names[1 : 1 + k]]
    graphs = {a.name: a.g for a in node.attribute}

    def branch(graph_proto):
        return lambda *params: _body(imp, graph_proto, [], dict(zip(names[1 : 1 + k], params)))

    return cond(pred, branch(graphs["then_branch"]), branch(graphs["else_branch"]), *ops)


def _restore_while(imp, node, names, attrs):
    """kiln's while_loop as it was exported: the Loop body's first nodes are body_fun's, the
    next ones cond_fun's on the new carry; the Loop's counter and condition are dropped."""
    from ..frontend.control import while_loop

    meta, n = _meta(node), int(attrs["num_carry"])
    (body,) = [a.g for a in node.attribute if a.name == "body"]
    n_body, n_test = int(meta["body_nodes"]), int(meta["test_nodes"])
    carry_out, params = list(meta["carry_out"]), [vi.name for vi in body.input[2:]]
    steps = _part(body, 0, n_body, carry_out)
    test = _part(body, n_body, n_body + n_test, [meta["test_out"]])
    carry = [imp.symbol(imp.values[x]) for x in names[:n]]

    def cond_fun(c):
        (out,) = _body(imp, test, [], dict(zip(carry_out, c)))
        return out

    def body_fun(c):
        return _body(imp, steps, [], dict(zip(params, c)))

    return while_loop(cond_fun, body_fun, carry)


RESTORE = {"cond": _restore_cond, "while_loop": _restore_while}


def drop_unread_gets(graph) -> None:
    """Removes the `get` nodes nothing reads from `graph` and the bodies in it: kiln's
    control functions project every result of a region op, an ONNX node's unused outputs
    need none (a get has no effect)."""
    read = {id(s) for s in graph.outputs}
    for node in graph.nodes:
        read.update(id(i) for i in node.inputs)
        for _, region in rg.regions_of(node):
            drop_unread_gets(region.graph)
    graph.nodes = [n for n in graph.nodes if n.op.name != "get" or id(n.out) in read]


def _scalar(imp, x):
    x = imp.symbol(x)
    return x if x.shape == () else imp.apply("reshape", x, shape=())


def _inline(imp, graph_proto):
    """A subgraph's results computed in `imp`'s own graph (the branch of an If whose condition
    is known when importing): known values stay known."""
    sub = Importer(imp.graph, imp.opset)
    sub.kiln_ops, sub.variables = imp.kiln_ops, imp.variables
    sub.values = _Scope(imp.values)
    for init in graph_proto.initializer:
        sub.values[init.name] = Known(_onnx().numpy_helper.to_array(init))
    import_nodes(sub, graph_proto)
    return [sub.values[vi.name] for vi in graph_proto.output]


def if_(imp, xs, attrs):
    """If as kiln's cond; with a condition known when importing, the branch it takes alone
    (its results may then have shapes the other branch's do not)."""
    from ..frontend.control import cond

    if isinstance(xs[0], Known):
        taken = "then_branch" if bool(np.asarray(xs[0].array).reshape(-1)[0]) else "else_branch"
        return _inline(imp, attrs[taken])
    pred = _scalar(imp, xs[0])
    then_, else_ = attrs["then_branch"], attrs["else_branch"]
    return cond(pred, lambda: _body(imp, then_, []), lambda: _body(imp, else_, []))


def loop(imp, xs, attrs):
    """Loop(M, cond, v...) as a while_loop over (i, keep going, v...): it runs while i < M
    (when M is given) and the condition (when given) holds. Scan outputs need a trip count
    known when importing and a condition that stays true, and become a scan."""
    from ..frontend.control import scan, while_loop

    body = attrs["body"]
    n_scan = len(body.output) - 1 - (len(xs) - 2)
    trip = xs[0] if len(xs) > 0 else None
    keep = xs[1] if len(xs) > 1 else None
    carry = [imp.symbol(v) for v in xs[2:]]
    i64 = np.dtype(np.int64)
    if n_scan:
        return _loop_as_scan(imp, body, trip, keep, carry, scan)
    i0 = imp.symbol(Known(np.asarray(0, i64)))
    go = _scalar(imp, keep) if keep is not None else imp.symbol(Known(np.asarray(True)))
    go = go if go.dtype == dt.bool_ else imp.apply("cast", go, dtype=dt.bool_)
    limit = None if trip is None else _scalar(imp, trip)
    limit = limit if limit is None or limit.dtype == i64 else imp.apply("cast", limit, dtype=i64)

    def test(c):
        if limit is None:
            return c[1]
        here = _BodyImporter(imp)
        return here.apply("logical_and", c[1], here.apply("less", c[0], limit))

    def step(c):
        outs = _body(imp, body, [c[0], c[1], *c[2:]])
        here = _BodyImporter(imp)
        again = _scalar(here, outs[0])
        again = again if again.dtype == dt.bool_ else here.apply("cast", again, dtype=dt.bool_)
        return [here.apply("add", c[0], Known(np.asarray(1, i64))), again, *outs[1:]]

    out = while_loop(test, step, [i0, go, *carry])
    return out[2:]


def _loop_as_scan(imp, body, trip, keep, carry, scan):
    """Scan outputs stack one value per iteration: their length, the trip count, and whether
    the loop runs at all, its initial condition, are shapes kiln must know when importing."""
    if trip is None:
        raise imp.error("has scan outputs and no trip count: kiln's scan needs its length")
    n = int(np.asarray(imp.known(trip, "trip count")).reshape(-1)[0])
    if keep is not None and not bool(np.asarray(imp.known(keep, "condition")).reshape(-1)[0]):
        n = 0  # the loop does not run: the carry stays, no scan outputs
    true = imp.symbol(Known(np.asarray(True)))
    indices = imp.symbol(Known(np.arange(n, dtype=np.int64)))
    n_carry = len(carry)

    def f(c, i):
        outs = _body(imp, body, [i, rg.capture(true), *c])
        if not _stays_true(outs[0]):
            raise imp.error("has scan outputs and a condition its body may turn false")
        return outs[1 : 1 + n_carry], outs[1 + n_carry :]

    final, ys = scan(f, carry, indices)
    return [*final, *ys]


def _stays_true(sym) -> bool:
    """Whether a body's condition is its input condition passed on (or a constant true)."""
    while sym.node.op.name in ("reshape", "cast", "identity"):
        sym = sym.node.inputs[0]
    node = sym.node
    if node.op.name == "constant":
        return bool(np.all(node.attrs["value"].array))
    return node.op.name == "placeholder"  # the condition parameter, captured `true`


def scan_(imp, xs, attrs):
    """Scan (opset 9 on): states and scan inputs; each scan input or output along its axis
    and in its direction, which transposes and flips bring to kiln's (axis 0, one direction)."""
    from ..frontend.control import scan

    if imp.opset < 9:
        raise imp.error("is Scan of opset 8 (a batch axis and sequence_lens), which kiln's scan "
                        "does not have: Scan from opset 9 on imports")  # fmt: skip
    body = attrs["body"]
    m = int(attrs["num_scan_inputs"])
    n = len(xs) - m
    states = [imp.symbol(v) for v in xs[:n]]
    seqs = list(xs[n:])
    k = len(body.output) - n
    in_dirs = list(attrs.get("scan_input_directions", [0] * m))
    out_dirs = list(attrs.get("scan_output_directions", [0] * k))
    in_axes = list(attrs.get("scan_input_axes", [0] * m))
    out_axes = list(attrs.get("scan_output_axes", [0] * k))
    reverse = bool(in_dirs and all(in_dirs))  # all reversed: kiln's reverse scan
    length = _shape(seqs[0])[int(in_axes[0]) % len(_shape(seqs[0]))] if seqs else None
    # scan inputs the body never reads only give the length (kiln writes one for a scan over
    # no xs): kiln's scan takes the length alone
    read = _reads(body)
    kept = [k for k, vi in enumerate(body.input[n:]) if vi.name in read]
    seqs = [_to_front(imp, imp.symbol(seqs[k]), in_axes[k]) for k in kept]
    seqs = [_flip0(imp, s) if bool(in_dirs[k]) != reverse else s for s, k in zip(seqs, kept)]
    slots = [body.input[n + k].name for k in kept]

    def f(c, x):
        params = dict(zip(slots, x or ()))
        outs = _body(imp, body, [*c, *(params.get(vi.name) for vi in body.input[n:])])
        return outs[:n], outs[n:]

    final, ys = scan(f, states, seqs if seqs else None, length=None if seqs else length,
                     reverse=reverse)  # fmt: skip
    ys = [_flip0(imp, y) if bool(d) != reverse else y for y, d in zip(ys, out_dirs)]
    ys = [_from_front(imp, y, a) for y, a in zip(ys, out_axes)]
    return [*final, *ys]


def _shape(value) -> tuple:
    return tuple(value.array.shape) if isinstance(value, Known) else tuple(value.shape)


def _reads(graph_proto) -> set:
    """The value names a graph's nodes read, those of its nested subgraphs included."""
    names = {o.name for o in graph_proto.output}
    for node in graph_proto.node:
        names.update(node.input)
        for a in node.attribute:
            for g in [a.g] if a.HasField("g") else list(a.graphs):
                names |= _reads(g)
    return names


def _to_front(imp, x, axis):
    axis = int(axis) % len(x.shape)
    if axis == 0:
        return x
    perm = (axis, *(a for a in range(len(x.shape)) if a != axis))
    return imp.apply("transpose", x, perm=perm)


def _from_front(imp, y, axis):
    axis = int(axis) % len(y.shape)
    if axis == 0:
        return y
    rest = list(range(1, len(y.shape)))
    perm = tuple(rest[:axis] + [0] + rest[axis:])
    return imp.apply("transpose", y, perm=perm)


def _flip0(imp, x):
    spec = (("slice", None, None, -1), *(("slice", None, None, None),) * (len(x.shape) - 1))
    return imp.apply("index", x, spec=spec)


RULES = {"If": if_, "Loop": loop, "Scan": scan_}
