"""The IR as Graphviz DOT: deterministic, with nodes grouped by name scope into nested clusters.

Node ids are generated (`n0, n1…`); every name is data inside a quoted, escaped string.
"""

from __future__ import annotations

from .core import Graph
from .printer import _Names
from .region import regions_of
from .serialize import graph_program

_SHAPES = {"placeholder": "ellipse", "variable": "cylinder", "constant": "note"}
MAX_DEPTH = 32  # deeper scopes are drawn inside their 32nd enclosing scope


def to_dot(program, inputs=None, outputs=None, updates=None) -> str:
    """DOT text of a Graph, or of a program: `nodes` with `inputs`, `outputs` and `updates`.

    Each node is labelled with its name, op and type; edges run from an input to its user;
    an update is a dashed edge from the new value to its Variable; outputs have a double border.

    >>> import kiln as kn
    >>> with kn.Graph().as_default() as g:
    ...     x = kn.placeholder(kn.float32, ("n",), name="x")
    ...     with kn.name_scope("layer"):
    ...         y = kn.exp(x)
    >>> print(to_dot(g))
    digraph kiln {
      node [shape=box, fontname="monospace", fontsize=10];
      n0 [label="x\\nplaceholder\\nf32[n]", shape=ellipse];
      subgraph "cluster_layer" {
        label="layer";
        n1 [label="layer/exp\\nexp\\nf32[n]", peripheries=2];
      }
      n0 -> n1;
    }
    <BLANKLINE>
    """
    if isinstance(program, Graph):
        program, inputs, outputs, updates = graph_program(program)
    nodes = list(program)
    updates = list(updates.items()) if isinstance(updates, dict) else list(updates or ())
    ids = {id(n.out): f"n{k}" for k, n in enumerate(nodes)}
    fed, returned = {id(s) for s in inputs or ()}, {id(s) for s in outputs or ()}
    names = _Names()
    root = _Scope(None)
    for node in nodes:
        label = f"{node.name}\n{node.op.name}\n{names.type(node.out)}"
        style = _SHAPES.get("placeholder" if id(node.out) in fed else node.op.name)
        extra = (f", shape={style}" if style else "") + (
            ", peripheries=2" if id(node.out) in returned else ""
        )
        root.find(node.name.split("/")[:-1][:MAX_DEPTH]).items.append(
            f"{ids[id(node.out)]} [label={quote(label)}{extra}];"
        )
    lines = ["digraph kiln {", '  node [shape=box, fontname="monospace", fontsize=10];']
    lines += root.lines()
    for node in nodes:
        for key, region in regions_of(node):
            lines += _region(region, key, ids[id(node.out)], names, 1)
    for node in nodes:
        if id(node.out) not in fed:  # a fed value's inputs are not part of the program
            for i in node.inputs:
                if id(i) in ids:
                    lines.append(f"  {ids[id(i)]} -> {ids[id(node.out)]};")
    # In a program graph the updated Variable is the `ref` of its variable node.
    var_nodes = {id(n.ref): n.out for n in nodes if n.ref is not None}
    for var, value in updates:
        target = var_nodes.get(id(var), var)
        if id(target) in ids and id(value) in ids:
            lines.append(f'  {ids[id(value)]} -> {ids[id(target)]} [style=dashed, label=":="];')
    return "\n".join([*lines, "}"]) + "\n"


def _region(region, key, owner, names, depth) -> list:
    """A body as a cluster `cluster_<owner>_<attr>` of its own nodes and edges; each result
    has a dotted edge to the region op that holds it."""
    pad, prefix = "  " * depth, f"{owner}_{key}"
    body = region.graph
    ids = {id(n.out): f"{prefix}_{k}" for k, n in enumerate(body.nodes)}
    fed = {id(s) for s in body.inputs}
    lines = [f"{pad}subgraph {quote('cluster_' + prefix)} {{",
             f"{pad}  label={quote(key)};", f"{pad}  style=dashed;"]  # fmt: skip
    for n in body.nodes:
        style = _SHAPES.get("placeholder" if id(n.out) in fed else n.op.name)
        label = f"{n.name}\n{n.op.name}\n{names.type(n.out)}"
        extra = f", shape={style}" if style else ""
        lines.append(f"{pad}  {ids[id(n.out)]} [label={quote(label)}{extra}];")
    for n in body.nodes:
        lines += [f"{pad}  {ids[id(i)]} -> {ids[id(n.out)]};" for i in n.inputs]
        for inner_key, inner in regions_of(n):
            if depth < MAX_DEPTH:
                lines += _region(inner, inner_key, ids[id(n.out)], names, depth + 1)
    lines.append(f"{pad}}}")
    lines += [f"{pad}{ids[id(s)]} -> {owner} [style=dotted];" for s in body.outputs]
    return lines


class _Scope:
    """A name scope: its nodes' lines and its child scopes, in order of first appearance."""

    def __init__(self, path: str | None):  # None: the root, outside every scope
        self.path = path
        self.items: list = []  # str (a node's line) or _Scope
        self.children: dict[str, _Scope] = {}

    def find(self, parts) -> _Scope:
        scope = self
        for part in parts:
            child = scope.children.get(part)
            if child is None:
                path = part if scope.path is None else f"{scope.path}/{part}"
                child = scope.children[part] = _Scope(path)
                scope.items.append(child)
            scope = child
        return scope

    def lines(self) -> list[str]:
        """Nested `subgraph "cluster_<scope>"` blocks, innermost last."""
        out, stack = [], [iter(self.items)]
        while stack:
            item = next(stack[-1], None)
            pad = "  " * len(stack)
            if item is None:
                stack.pop()
                if stack:
                    out.append("  " * len(stack) + "}")
            elif isinstance(item, str):
                out.append(pad + item)
            else:
                label = item.path.rsplit("/", 1)[-1]
                out.append(f"{pad}subgraph {quote('cluster_' + item.path)} {{")
                out.append(f"{pad}  label={quote(label)};")
                stack.append(iter(item.items))
        return out


def quote(text: str) -> str:
    """A DOT quoted string that shows `text` as it is: backslashes and quotes are escaped,
    a newline becomes a line break, other unprintable characters are shown as `\\uXXXX`.

    >>> print(quote('say "hi"\\\\n'))
    "say \\"hi\\"\\\\n"
    """
    out = []
    for ch in text:
        if ch in '\\"':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif not ch.isprintable():
            out.append(f"\\\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'
