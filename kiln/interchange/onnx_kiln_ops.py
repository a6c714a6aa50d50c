"""kiln's own ops in the ONNX files it writes: each kiln node's last ONNX node carries the
node's op, operands and attrs as metadata (`metadata_props` key `kiln`), so that `import_onnx`
gives a model kiln exported back as the program it came from: the same ops (a `log1p` stays
`log1p`, not ONNX's composition of it; a `stop_gradient` stays one), the same attrs, and so
identical values and gradients. A named dim in an attr (a random draw's shape) is written as
its coefficient and names, an anonymous one (the length a `nonzero` binds when it runs) with
its number in this model, which the import maps to one fresh dim. The ONNX nodes stay a
complete model for every other tool; a node without the metadata, or whose metadata does not
fit the model (edited since, or an attr kiln cannot write as JSON), imports through the
rules.
"""

from __future__ import annotations

import json

import numpy as np

from .. import shapes as sh
from ..dtypes import DType

KEY = "kiln"


class _NotPlain(Exception):
    pass


def _encode(value, anon: dict):
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (np.dtype, DType)):
        return {"dtype": value.name}
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (tuple, list)):
        return [_encode(v, anon) for v in value]
    if isinstance(value, sh.Dim):
        named = [a for a in value.atoms if isinstance(a, str)]
        numbers = [anon.setdefault(a, len(anon)) for a in value.atoms if type(a) is int]
        return {"dim": [value.coeff, named, *([numbers] if numbers else [])]}
    raise _NotPlain(type(value).__name__)


def _decode(value, anon: dict):
    if isinstance(value, list):
        return tuple(_decode(v, anon) for v in value)
    if isinstance(value, dict) and "dim" in value:
        coeff, atoms, *numbers = value["dim"]
        fresh = [anon.setdefault(int(k), sh.Dim().atoms[0]) for k in (numbers or [[]])[0]]
        return sh.Dim(coeff=int(coeff), atoms=(*(str(a) for a in atoms), *fresh))
    if isinstance(value, dict):
        return np.dtype(value["dtype"])
    return value


def tag(exporter, node, inputs, out, first: int) -> None:
    """Writes `node`'s op, operand names and attrs on the last ONNX node emitted for it (those
    from index `first` on; it computes `out`), when its attrs are plain data. For a
    multi-result op (kiln/ops/multi.py) `out` lists its elements' values ("" for one no
    `get` reads), which the group may compute in any of its nodes."""
    emitted = exporter.nodes[first:]
    multi = isinstance(out, list)
    if not emitted or not multi and list(emitted[-1].output) != [out]:
        return
    try:
        anon = exporter.__dict__.setdefault("anon_dims", {})  # atom -> its number here
        attrs = {k: _encode(v, anon) for k, v in sorted(node.attrs.items())}
    except _NotPlain:
        return
    data = {"op": node.op.name, "inputs": list(inputs), "attrs": attrs}
    if multi:
        data["outputs"] = out
    entry = emitted[-1].metadata_props.add()
    entry.key = KEY
    entry.value = json.dumps(data, sort_keys=True, separators=(",", ":"))


def groups(graph) -> dict[int, tuple]:
    """Index of the first node of a tagged group -> (index of its tagged last node, op,
    inputs, attrs, element values of a multi-result op or None).
    A group is the run of nodes before it with the same doc string (kiln writes one per kiln
    node); it is restored only if its other nodes' outputs are read inside it alone (a
    multi-result op's elements excepted)."""
    nodes = list(graph.node)
    readers: dict[str, set] = {}
    for k, n in enumerate(nodes):
        for name in n.input:
            readers.setdefault(name, set()).add(k)
    outputs = {o.name for o in graph.output}
    found, anon = {}, {}  # anon: a dim's number in the model -> this import's fresh atom
    for j, n in enumerate(nodes):
        meta = next((e.value for e in n.metadata_props if e.key == KEY), None)
        if meta is None or not n.doc_string:
            continue
        i = j
        while i > 0 and nodes[i - 1].doc_string == n.doc_string:
            i -= 1
        inner = set(range(i, j + 1))
        try:
            data = json.loads(meta)
            attrs = {k: _decode(v, anon) for k, v in data["attrs"].items()}
            elements = data.get("outputs")
            elements = None if elements is None else [str(e) for e in elements]
            entry = (j, data["op"], [str(x) for x in data["inputs"]], attrs, elements)
        except (ValueError, KeyError, TypeError, AttributeError):
            continue
        free = set(elements or ())
        leaks = any(out not in free and (out in outputs or not readers.get(out, set()) <= inner)
                    for k in range(i, j + (elements is not None))
                    for out in nodes[k].output)  # fmt: skip
        if not leaks:
            found[i] = entry
    return found
