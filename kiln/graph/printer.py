"""The IR as text, jaxpr-like: one equation per line, deterministic, golden-tested."""

from __future__ import annotations

import re

import numpy as np

from .. import dtypes as dt
from .. import shapes as sh
from .opdef import REGISTRY, ArrayValue
from .region import Region


class _Names:
    """Printed names: user names kept, others `t0, t1…` in definition order; dims likewise."""

    def __init__(self):
        self.values: dict[int, str] = {}
        self.used: set[str] = set()
        self.anon: dict = {}
        self.count = 0

    def define(self, node) -> str:
        base = node.name.rsplit("/", 1)[-1]
        # An op's default name (`exp`, `exp_3`), also when a pass gave it to another op.
        auto = re.sub(r"_\d+$", "", base) in REGISTRY or base.startswith(node.op.name)
        name = node.name if not auto and node.name not in self.used else None
        while name is None or name in self.used:
            name, self.count = f"t{self.count}", self.count + 1
        self.used.add(name)
        self.values[id(node.out)] = name
        return name

    def dim(self, d) -> str:
        if isinstance(d, int):
            return str(d)
        parts = []
        for atom in d.atoms:
            if isinstance(atom, str):
                parts.append(atom)
            else:
                parts.append(self.anon.setdefault(atom, f"_{len(self.anon)}"))
        return "*".join(parts + ([str(d.coeff)] if d.coeff != 1 else []))

    def type(self, s) -> str:
        if s.dtype == dt.TUPLE:
            return "tuple"
        return f"{dt.short_name(s.dtype)}[{','.join(self.dim(d) for d in s.shape)}]"


def _literal(array: np.ndarray) -> str:
    value = array.item()
    text = repr(float(value)) if dt.is_float(array.dtype) else repr(value)
    return f"{text}:{dt.short_name(array.dtype)}[]"


def format_value(value, names: _Names) -> str:
    if isinstance(value, (np.dtype, dt.DType)):
        return dt.short_name(value)
    if isinstance(value, sh.Dim):
        return names.dim(value)
    if isinstance(value, ArrayValue):
        a = value.array
        if a.size <= 8:
            return np.array2string(a.reshape(-1), separator=",", precision=8).replace("\n", "")
        return f"<{value._key[2][:12]}>"
    if isinstance(value, tuple):
        inner = ",".join(format_value(v, names) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, float):
        return repr(value)
    return repr(value)


def _is_inline(node) -> bool:
    base = node.name.rsplit("/", 1)[-1]  # an auto-named scalar constant, in any scope
    return node.op.name == "constant" and node.out.shape == () and base.startswith("constant")


def format_program(
    nodes, inputs, outputs, updates=(), sites=True, header=None, indent="", names=None
) -> str:  # fmt: skip
    """Text of a program: `inputs` are its parameters, `outputs` what it returns. A region
    op's bodies follow its line as nested blocks (`body={ lambda ... }`), each with its own
    value names."""
    names = _Names() if names is None else names
    params = []
    for s in inputs:
        params.append(f"{names.define(s.node)}:{names.type(s)}")
    input_ids = {id(s) for s in inputs}
    lines = [f"# {header}"] if header else []
    lines.append("{ lambda " + " ".join(params) + " .")
    for node in nodes:
        if id(node.out) in input_ids or _is_inline(node):
            continue
        name = names.define(node)
        args = [_arg(i, names) for i in node.inputs]
        attrs = {k: v for k, v in node.attrs.items()}
        if node.op.name in ("placeholder", "variable"):
            attrs = {}
        elif node.op.name == "get":  # its type is on the line already
            attrs = {"index": attrs["index"]}
        bodies = {k: attrs.pop(k) for k, v in list(attrs.items()) if isinstance(v, Region)}
        attr_text = " ".join(f"{k}={format_value(v, names)}" for k, v in sorted(attrs.items()))
        op = node.op.name + (f"[{attr_text}]" if attr_text else "")
        line = f"    {name}:{names.type(node.out)} = {' '.join([op, *args])}"
        if sites and node.site:
            line += f"  # {node.site}"
        lines.append(line)
        for key, region in sorted(bodies.items()):
            inner = _Names()
            inner.anon = names.anon  # anonymous dims keep their numbers across blocks
            g = region.graph
            text = format_program(g.nodes, g.inputs, g.outputs, sites=sites, names=inner)
            first, *rest = text.rstrip("\n").split("\n")
            lines += [f"      {key}={first}", *(f"      {line}" for line in rest)]
    result = " ".join(_arg(s, names) for s in outputs)
    tail = f"  in ({result})"
    if updates:
        tail += " updates (" + " ".join(f"{names.values.get(id(v), v.name)}:={_arg(s, names)}"
                                        for v, s in updates) + ")"  # fmt: skip
    lines.append(tail + " }")
    return "".join(f"{indent}{line}\n" for line in lines)


def _arg(sym, names: _Names) -> str:
    if _is_inline(sym.node):
        return _literal(sym.node.attrs["value"].array)
    return names.values[id(sym)]


def format_graph(graph, sites=True) -> str:
    """A whole graph: placeholders are parameters; it returns its outputs (if it names them)
    or every value nothing else uses."""
    inputs = graph.inputs or graph.placeholders
    outputs = graph.outputs or _sinks(graph.nodes)
    return format_program(graph.nodes, inputs, outputs, sites=sites)


def _sinks(nodes):
    used = {id(i) for n in nodes for i in n.inputs}
    return [n.out for n in nodes if id(n.out) not in used and not _is_inline(n)]
