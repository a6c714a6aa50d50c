"""ONNX export of kiln's region ops: `cond` as If, `while_loop` as Loop, `scan` as Scan.

A region's body becomes an ONNX subgraph. Its parameters become the subgraph's inputs where
ONNX has them (Loop's carried values, Scan's states and slices) and its captures, the values
it reads from around, are read by name from the enclosing graph, as ONNX's subgraphs do. The
op's results are the ONNX node's outputs, which kiln's `get` nodes read (`Exporter.export_nodes`).
"""

from __future__ import annotations

import json

import numpy as np

from .onnx_kiln_ops import KEY


def _bind(ex, symbols, names) -> None:
    for sym, name in zip(symbols, names, strict=True):
        ex.bind(sym, name)


def _inline(ex, region, names) -> list:
    """The region's nodes written into `ex`'s graph with its parameters bound to `names`;
    the names of its results."""
    _bind(ex, region.inputs, names)
    node = ex.node
    ex.export_nodes(region.graph.nodes)
    ex.node = node  # the region op's own nodes (a Cast, the Loop) name it
    return [ex.names[id(s)] for s in region.outputs]


def _graph(ex, sub, base, inputs, outputs, out_symbols):
    """The subgraph `sub` wrote: `inputs` (value infos), results `outputs` (names, each
    copied into a value of its own: an ONNX graph output is made in its graph)."""
    helper = ex.onnx.helper
    names = [sub.emit("Identity", [n], sub.unique(f"{base}/out{k}")) for k, n in enumerate(outputs)]
    infos = [info(sub, n) for info, n in zip(out_symbols, names, strict=True)]
    return helper.make_graph(sub.nodes, base, inputs, infos, sub.initializers)


def _info_of(sym):
    return lambda ex, name: ex.value_info(sym, name)


def _scalar_info(elem_type):
    return lambda ex, name: ex.onnx.helper.make_tensor_value_info(name, elem_type, [])


def _as_bool(ex, name, dtype) -> str:
    return ex.cast(name, dtype, np.bool_)


def cond(ex, node, xs, out):
    a = node.attrs
    n_ops, t, f = a["num_operands"], a["branch_true"], a["branch_false"]
    n_true = len(t.inputs) - n_ops
    ops, t_caps, f_caps = (
        xs[1 : 1 + n_ops],
        xs[1 + n_ops : 1 + n_ops + n_true],
        xs[1 + n_ops + n_true :],
    )
    branches = {}
    for key, region, caps in (("then_branch", t, t_caps), ("else_branch", f, f_caps)):
        sub = ex.child()
        outs = _inline(sub, region, [*ops, *caps])
        base = ex.unique(f"{node.name}/{key}")
        branches[key] = _graph(ex, sub, base, [], outs, [_info_of(s) for s in region.outputs])
    pred = _as_bool(ex, xs[0], node.inputs[0].dtype)
    k = len(t.outputs)
    result = _outputs(ex.emit("If", [pred], n_outputs=k, **branches), k)
    _tag(ex, {"op": "cond", "inputs": xs, "attrs": {"num_operands": n_ops}})
    return result


def _tag(ex, data) -> None:
    """kiln's form of a region op on its last ONNX node (`metadata_props` key `kiln`, as
    `onnx_kiln_ops.tag` writes for other ops): the import rebuilds the op from it and the
    subgraphs, as the program it came from."""
    entry = ex.nodes[-1].metadata_props.add()
    entry.key = KEY
    entry.value = json.dumps(data, sort_keys=True, separators=(",", ":"))


def while_loop(ex, node, xs, out):
    """Loop with no trip count: the condition is cond_fun on the initial carry, then on each
    new carry inside the body."""
    a = node.attrs
    n, test, body = a["num_carry"], a["cond"], a["body"]
    n_cond = len(test.inputs) - n
    carry, cond_caps, body_caps = xs[:n], xs[n : n + n_cond], xs[n + n_cond :]
    first = len(ex.nodes)
    (keep,) = _inline(ex, test, [*carry, *cond_caps])
    keep = _as_bool(ex, keep, test.outputs[0].dtype)
    sub = ex.child()
    tp = ex.onnx.TensorProto
    i_name, c_name = sub.unique(f"{node.name}/i"), sub.unique(f"{node.name}/keep_going")
    params = [sub.unique(f"{node.name}/{s.name}") for s in body.inputs[:n]]
    inputs = [_scalar_info(tp.INT64)(sub, i_name), _scalar_info(tp.BOOL)(sub, c_name)]
    inputs += [sub.value_info(s, p) for s, p in zip(body.inputs[:n], params)]
    new = _inline(sub, body, [*params, *body_caps])
    n_body = len(sub.nodes)
    (test_out,) = _inline(sub, test, [*new, *cond_caps])
    n_test = len(sub.nodes) - n_body
    again = _as_bool(sub, test_out, test.outputs[0].dtype)
    infos = [_scalar_info(tp.BOOL)] + [_info_of(s) for s in body.outputs]
    graph = _graph(ex, sub, ex.unique(f"{node.name}/body"), inputs, [again, *new], infos)
    result = _outputs(ex.emit("Loop", ["", keep, *carry], n_outputs=n, body=graph), n)
    # the first test belongs to the while_loop: one group of nodes with its doc string
    for proto in ex.nodes[first:-1]:
        proto.doc_string = ex.nodes[-1].doc_string
        del proto.metadata_props[:]
    _tag(ex, {"op": "while_loop", "inputs": xs, "attrs": {"num_carry": n}, "body_nodes": n_body,
              "test_nodes": n_test, "carry_out": new, "test_out": test_out})  # fmt: skip
    return result


def _outputs(result, n) -> list:
    """An ONNX node's outputs as a list (`emit` gives one name alone)."""
    return result if isinstance(result, list) else [result]


def scan(ex, node, xs, out):
    """Scan with the carry as its states and the xs as its scan inputs, both in the scan's
    direction; a scan over no xs scans the indices 0..length-1, which its body does not read."""
    a = node.attrs
    n, m, body, length = a["num_carry"], a["num_xs"], a["body"], a["length"]
    carry, seqs, caps = xs[:n], xs[n : n + m], xs[n + m :]
    sub = ex.child()
    params = [sub.unique(f"{node.name}/{s.name}") for s in body.inputs[: n + m]]
    inputs = [sub.value_info(s, p) for s, p in zip(body.inputs[: n + m], params)]
    if m == 0:
        seqs = [ex.const(np.arange(int(length), dtype=np.int64), np.int64)]
        step = sub.unique(f"{node.name}/step")
        inputs.append(_scalar_info(ex.onnx.TensorProto.INT64)(sub, step))
    outs = _inline(sub, body, [*params, *caps])
    graph = _graph(ex, sub, ex.unique(f"{node.name}/body"), inputs, outs,
                   [_info_of(s) for s in body.outputs])  # fmt: skip
    k = len(body.outputs) - n
    direction = int(bool(a["reverse"]))
    attrs = {"num_scan_inputs": len(seqs), "scan_input_directions": [direction] * len(seqs)}
    if k:
        attrs["scan_output_directions"] = [direction] * k
    return _outputs(ex.emit("Scan", [*carry, *seqs], n_outputs=n + k, body=graph, **attrs), n + k)


def get(ex, node, xs, out):
    """One output of a node of several: `Exporter.export_nodes` binds it to the ONNX output
    its producer's rule gave (a list); a producer written as one value has no ONNX form."""
    if not isinstance(xs[0], list):
        from .onnx_rules_scatter import raise_no_form

        raise_no_form(node, f"(its operand, a {node.inputs[0].node.op.name} node, was written "
                      "as one ONNX value, not one per output)")  # fmt: skip
    return xs[0][node.attrs["index"]]


RULES = {"cond": cond, "while_loop": while_loop, "scan": scan, "get": get}
