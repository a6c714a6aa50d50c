"""The IR as JSON: a versioned, deterministic format, and a strict reader for untrusted text
that rebuilds each node by its op's rules and raises only GraphFormatError."""

from __future__ import annotations

import base64
import functools
import inspect
import json
import math

import numpy as np

from .. import dtypes as dt
from .. import shapes as sh
from ..errors import ArgumentError, GraphFormatError
from .core import Graph, Variable
from .opdef import REGISTRY, ArrayValue
from .region import Region

FORMAT, VERSION = "kiln.graph", 1
MAX_DIM = 2**48  # larger dims (and Dim coefficients) are refused as hostile
MAX_RANK, MAX_DEPTH = 64, 32  # the most dims, and the deepest nesting of attr tuples
_INT_MIN, _INT_MAX = -(2**63), 2**64 - 1  # attr ints: int64 and uint64 (seeds)
_DTYPES = {d.name: d for d in dt.SUPPORTED + dt.COMPLEX + dt.STORAGE_ONLY}
_TOP_KEYS = {"format", "version", "nodes", "inputs", "outputs", "updates", "variables"}
_OPTIONAL_KEYS = {"optimized"}  # the passes that made a program graph (not differentiable)
_NODE_KEYS = {"name", "op", "inputs", "attrs", "site", "shape", "dtype"}

# Default limits of the reader (None lifts one). A file is untrusted: a few hundred bytes can
# declare a 2**24 x 2**24 value, which loads instantly and then never finishes running.
MAX_CHARS = 2**28  # the longest text parsed (256 Mi characters)
MAX_ELEMENTS = 2**28  # the most elements of one value (1 GiB of float32)
MAX_WORK = 2**32  # the most elements of all values together: a cheap estimate of the work
# Kernel parameters that the runtime passes, never a node's attrs.
_RUNTIME_PARAMS = {"out", "key"}
# The attrs of a source whose kernel takes **attrs (placeholder, variable): what its rules read.
_SOURCE_ATTRS = frozenset({"dtype", "shape"})


# -- writing ---------------------------------------------------------------------------------


def graph_program(graph: Graph):
    """`(nodes, inputs or placeholders, outputs or unused values, updates)` of a graph."""
    used = {id(i) for n in graph.nodes for i in n.inputs}
    outputs = graph.outputs or [n.out for n in graph.nodes if id(n.out) not in used]
    updates = dict(graph.updates)
    return graph.nodes, graph.inputs or graph.placeholders, outputs, updates


def to_json(program, inputs=(), outputs=(), updates=(), optimized=()) -> str:
    """JSON of a Graph, or of a program: `nodes` in order, fed `inputs`, returned `outputs`
    and `updates` (Variable -> Symbol). A fed value computed by a node becomes a placeholder.
    `optimized` names the passes that made a program graph (a Graph's own mark by default):
    a graph loaded from it refuses `kn.grad`.
    Deterministic: sorted keys, node order, anonymous dims numbered by first appearance.

    >>> to_json(Graph()).splitlines()[:3]  # nodes and variables come one a line
    ['{', ' "format": "kiln.graph",', ' "inputs": [],']
    """
    if isinstance(program, Graph):
        optimized = optimized or program.optimized
        program, inputs, outputs, updates = graph_program(program)
    updates = list(updates.items()) if isinstance(updates, dict) else list(updates)
    writer = _Writer(inputs)
    doc = {
        "format": FORMAT,
        "version": VERSION,
        "nodes": [writer.node(n) for n in program],
        "inputs": [s.name for s in inputs],
        "outputs": [s.name for s in outputs],
        "updates": [[v.name, s.name] for v, s in updates],
        "variables": {
            n.name: {"trainable": bool(n.ref.trainable), "value": encode_array(n.ref.value)}
            for n in program
            if n.op.name == "variable"
        },
    }
    if optimized:
        doc["optimized"] = list(optimized)
    missing = {*doc["inputs"], *doc["outputs"], *sum(doc["updates"], [])} - writer.names
    if missing:
        raise GraphFormatError(f"cannot write: {sorted(missing)} are not nodes of the program")
    return _layout(doc)


def _json(value) -> str | None:
    """Canonical one-line JSON (None for an untrusted value nested too deeply to write)."""
    try:
        return json.dumps(value, sort_keys=True, ensure_ascii=True, allow_nan=False)
    except RecursionError:
        return None


def _layout(doc: dict) -> str:
    """JSON with one node (or variable, or top-level value) per line: readable and diffable."""
    lines = []
    for key in sorted(doc):
        value = doc[key]
        if isinstance(value, dict) and value:
            items = [f"  {_json(k)}: {_json(value[k])}" for k in sorted(value)]
            value = "{\n" + ",\n".join(items) + "\n }"
        elif isinstance(value, list) and value:
            value = "[\n" + ",\n".join(f"  {_json(v)}" for v in value) + "\n ]"
        else:
            value = _json(value)
        lines.append(f" {_json(key)}: {value}")
    return "{\n" + ",\n".join(lines) + "\n}\n"


def encode_array(array: np.ndarray) -> dict:
    """`{"data": base64 of the little-endian bytes, "dtype": name, "shape": [...]}`."""
    if array.dtype not in _DTYPES.values():
        raise GraphFormatError(f"cannot write an array of dtype {array.dtype}")
    little = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<"))
    data = base64.b64encode(little.tobytes()).decode("ascii")
    return {"data": data, "dtype": array.dtype.name, "shape": list(array.shape)}


class _Writer:
    def __init__(self, inputs):
        self.anon: dict[int, int] = {}  # anonymous atom -> its number in this document
        self.fed = {id(s) for s in inputs}
        self.names: set[str] = set()

    def node(self, node) -> dict:
        op, attrs, args = node.op.name, node.attrs, [i.name for i in node.inputs]
        if id(node.out) in self.fed and node.inputs:  # a fed intermediate is a parameter
            op, args = "placeholder", []
            attrs = {"dtype": node.out.dtype, "shape": node.out.shape}
        if node.name in self.names or not self.names.issuperset(args):
            raise GraphFormatError(f"cannot write {node.name!r}: a duplicate name or an input "
                                   "that is not in the program before it")  # fmt: skip
        self.names.add(node.name)
        return {
            "name": node.name,
            "op": op,
            "inputs": args,
            "attrs": {k: self.value(attrs[k]) for k in sorted(attrs)},
            "site": node.site,
            "shape": [self.value(d) for d in node.out.shape],
            "dtype": node.out.dtype.name,
        }

    def value(self, v):
        if v is None or isinstance(v, (bool, str)):
            return v
        if isinstance(v, (int, np.integer)):
            return int(v)
        if isinstance(v, (float, np.floating)):
            return {"float": repr(float(v))}  # repr round-trips exactly; covers nan and inf
        if isinstance(v, (np.dtype, dt.DType)):
            return {"dtype": dt.as_dtype(v).name}
        if isinstance(v, sh.Dim):
            anon = [self.anon.setdefault(a, len(self.anon)) for a in v.atoms if type(a) is int]
            named = [a for a in v.atoms if isinstance(a, str)]
            return {"dim": {"atoms": sorted(named) + sorted(anon), "coeff": v.coeff}}
        if isinstance(v, ArrayValue):
            return {"array": encode_array(v.array)}
        if isinstance(v, tuple):
            return [self.value(x) for x in v]
        if isinstance(v, Region):  # a body: its own names, the document's dim numbers
            body = _Writer(v.inputs)
            body.anon = self.anon
            nodes = [body.node(n) for n in v.graph.nodes]
            if any(n.op.name == "variable" for n in v.graph.nodes):
                raise GraphFormatError("cannot write a body that holds a Variable node")
            return {"region": {"nodes": nodes, "inputs": [s.name for s in v.inputs],
                               "outputs": [s.name for s in v.outputs]}}  # fmt: skip
        raise GraphFormatError(f"cannot write an attr value of type {type(v).__name__}: {v!r:.80}")


# -- reading ---------------------------------------------------------------------------------


def from_json(
    text,
    *,
    max_chars: int | None = MAX_CHARS,
    max_elements: int | None = MAX_ELEMENTS,
    max_work: int | None = MAX_WORK,
) -> Graph:
    """The Graph of `to_json` text, with `.inputs`, `.outputs` and `.updates` (Variable ->
    Symbol). Each node is rebuilt by its op's rules and must write back as it was read; anything
    else raises GraphFormatError. Nothing is evaluated: names and attrs are only data.

    Limits (None lifts one): `max_chars` of text; `max_elements` of any one value, and
    `max_work` of all values together, counting a symbolic dim as its coefficient.

    >>> import kiln as kn
    >>> with kn.Graph().as_default() as g:
    ...     y = kn.exp(kn.placeholder(kn.float32, ("n",), name="x"))
    >>> g2 = from_json(to_json(g))
    >>> [s.name for s in g2.inputs], g2.outputs[0].type_str()
    (['x'], 'f32[n]')
    """
    limits = {"max_chars": max_chars, "max_elements": max_elements, "max_work": max_work}
    for key, limit in limits.items():
        if limit is not None and (type(limit) is not int or limit < 0):
            raise ArgumentError(f"{key} is a non-negative int or None, got {limit!r}")
    return _Reader(max_elements, max_work).build(_parse(text, max_chars))


def _parse(text, max_chars) -> dict:
    if not isinstance(text, str):
        raise GraphFormatError(f"a kiln graph is JSON text (a str), got {type(text).__name__}")
    if max_chars is not None and len(text) > max_chars:
        raise GraphFormatError(
            f"the text has {len(text)} characters, over the limit of {max_chars} (max_chars)"
        )
    try:
        doc = json.loads(text, object_pairs_hook=_object, parse_float=_refuse,
                         parse_int=_int, parse_constant=_refuse)  # fmt: skip
    except GraphFormatError:
        raise
    except (RecursionError, ValueError) as e:
        why = "nested too deeply" if isinstance(e, RecursionError) else e
        raise GraphFormatError(f"not valid JSON: {why}") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise GraphFormatError(f"not a kiln graph (an object with format {FORMAT!r})")
    if _json(doc.get("version")) != str(VERSION):
        raise GraphFormatError(f"unsupported version {_show(doc.get('version'))}, not {VERSION}")
    _check_keys(doc, _TOP_KEYS, "the document", optional=_OPTIONAL_KEYS)
    return doc


def _object(pairs) -> dict:
    obj = dict(pairs)
    if len(obj) < len(pairs):
        raise GraphFormatError(f"duplicate keys in a JSON object: {sorted(obj)!r:.120}")
    return obj


def _refuse(text):
    raise GraphFormatError(f"bare JSON number {text!r:.40}: floats are written as strings")


def _int(text) -> int:
    if len(text) > 24:
        raise GraphFormatError(f"integer {text[:24]}... is too large")
    return int(text)


def _check_keys(obj, keys, where, optional=frozenset()):
    if not isinstance(obj, dict):
        raise GraphFormatError(f"{where}: expected an object, got {type(obj).__name__}")
    if set(obj) - optional != keys:
        missing, extra = sorted(keys - set(obj)), sorted(set(obj) - keys)
        raise GraphFormatError(f"{where}: missing keys {missing}, unknown keys {extra!r:.120}")


def _typed(value, kind, where, lo=None, hi=None):
    """`value` if it has exactly type `kind` (and for ints, lies in [lo, hi])."""
    if type(value) is not kind or lo is not None and not lo <= value <= hi:
        what = kind.__name__ if lo is None else f"an int in [{lo}, {hi}]"
        raise GraphFormatError(f"{where}: expected {what}, got {_show(value)}")
    return value


def _dtype(value, where) -> np.dtype:
    if not isinstance(value, str) or value not in _DTYPES:
        raise GraphFormatError(f"{where}: unknown dtype {_show(value)}")
    return _DTYPES[value]


def decode_array(body, where) -> np.ndarray:
    """The array of an `encode_array` object; the byte length must match dtype and shape."""
    _check_keys(body, {"data", "dtype", "shape"}, where)
    dtype = _dtype(body["dtype"], where)
    shape = _typed(body["shape"], list, f"{where} shape")
    if len(shape) > MAX_RANK:
        raise GraphFormatError(f"{where}: rank {len(shape)} is over {MAX_RANK}")
    shape = tuple(_typed(d, int, f"{where} shape", 0, MAX_DIM) for d in shape)
    nbytes = math.prod(shape) * dtype.itemsize
    try:
        raw = base64.b64decode(_typed(body["data"], str, f"{where} data"), validate=True)
    except ValueError as e:  # binascii.Error, or non-ASCII text
        raise GraphFormatError(f"{where}: bad base64 data: {e}") from None
    if len(raw) != nbytes:
        raise GraphFormatError(f"{where}: {len(raw)} bytes of data, expected {nbytes}")
    array = np.frombuffer(raw, dtype.newbyteorder("<")).reshape(shape).astype(dtype)
    if dtype == dt.bool_ and np.frombuffer(raw, np.uint8).max(initial=0) > 1:
        raise GraphFormatError(f"{where}: bool data must be bytes 0 or 1")
    return array


def _show(value) -> str:
    """A short description of an untrusted value, for messages."""
    text = repr(value) if isinstance(value, str) else _json(value)
    return (text or type(value).__name__)[:80]


@functools.cache
def _attr_names(op) -> tuple[frozenset, frozenset] | None:
    """`(required, accepted)` attr names of `op`: its kernel's keyword-only parameters (less
    those the runtime passes), required where they have no default. None: not known (a kernel
    that takes **attrs and is not a source)."""
    try:
        params = inspect.signature(op.impl).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return (_SOURCE_ATTRS, _SOURCE_ATTRS) if "source" in op.tags else None
    named = [p for p in params if p.kind is p.KEYWORD_ONLY and p.name not in _RUNTIME_PARAMS]
    required = frozenset(p.name for p in named if p.default is p.empty)
    return required, frozenset(p.name for p in named)


def _check_attr_names(op, attrs, where):
    """Refuses attrs that the op's kernel does not take, or lacks (it would fail at run time)."""
    names = _attr_names(op)
    if names is None:
        return
    required, accepted = names
    unknown, missing = sorted(set(attrs) - accepted), sorted(required - set(attrs))
    if unknown or missing:
        takes = ", ".join(sorted(accepted)) or "none"
        what = f"unknown attrs {unknown!r:.120}" if unknown else f"missing attrs {missing}"
        raise GraphFormatError(f"{where}: op {op.name} has {what} (it takes: {takes})")


def _elements(shape) -> int:
    """The static number of elements of `shape`; a symbolic dim counts as its coefficient."""
    return math.prod(d if type(d) is int else d.coeff for d in shape)


def _rules(op, inputs, attrs, where):
    """The op's output shape and dtype, and the run-time constraints its rules record."""
    pending = sh.collect_constraints()
    try:
        shape = tuple(op.shape_rule(*(s.shape for s in inputs), **attrs))
        dtype = dt.as_dtype(op.dtype_rule(*(s._dtype for s in inputs), **attrs))
        sh.mark_derived([s.shape for s in inputs], attrs, shape)
    except Exception as e:  # NOTE: the rules run on untrusted attrs: any failure is the file's
        why = f"{where}: op {op.name} rejects its inputs or attrs: {type(e).__name__}"
        raise GraphFormatError(f"{why}: {str(e)[:200]}") from None
    finally:
        sh._pending.items = None
    dims_ok = (type(d) is int and 0 <= d <= MAX_DIM or isinstance(d, sh.Dim) and d.coeff <= MAX_DIM
               for d in shape)  # fmt: skip
    if len(shape) > MAX_RANK or not all(dims_ok):
        raise GraphFormatError(f"{where}: op {op.name} gives an invalid shape {shape!r:.120}")
    return shape, dtype, pending


class _Reader:
    """Builds the graph node by node, then writes each node again: it must read the same."""

    def __init__(self, max_elements=None, max_work=None):
        self.max_elements, self.max_work = max_elements, max_work
        self.work = 0  # elements of the values read so far
        self.graph = Graph()
        self.symbols: dict = {}  # name -> Symbol
        self.atoms: dict[int, int] = {}  # anonymous dim number -> this process's atom
        self.writer = _Writer(())
        self.depth = 0  # of the body this reader builds
        self.body_work: dict = {}  # id(Region read) -> the elements of its values

    def build(self, doc) -> Graph:
        variables = _typed(doc["variables"], dict, "variables")
        for k, entry in enumerate(_typed(doc["nodes"], list, "nodes")):
            self.node(entry, k, variables)
        if set(variables) - {v.name for v in self.graph.variables}:
            raise GraphFormatError("variables: an entry names no variable node")
        graph = self.graph
        graph.inputs = self.refs(doc["inputs"], "inputs")
        if len({s.name for s in graph.inputs}) != len(graph.inputs):
            raise GraphFormatError("inputs: a value is fed twice")
        graph.outputs = self.refs(doc["outputs"], "outputs")
        graph.updates = self.updates(doc["updates"])
        passes = _typed(doc.get("optimized", []), list, "optimized")
        if not all(isinstance(p, str) for p in passes):
            raise GraphFormatError("optimized: must be a list of pass names")
        graph.optimized = tuple(passes)
        return graph

    def refs(self, names, where) -> list:
        return [self.ref(n, where) for n in _typed(names, list, where)]

    def ref(self, name, where):
        if not isinstance(name, str) or name not in self.symbols:
            why = "is not a node defined before it (a dangling or cyclic reference)"
            raise GraphFormatError(f"{where}: {_show(name)} {why}")
        return self.symbols[name]

    def node(self, entry, k, variables):
        _check_keys(entry, _NODE_KEYS, f"node {k}")
        name, op, site = entry["name"], entry["op"], entry["site"]
        if not isinstance(name, str) or not name:
            raise GraphFormatError(f"node {k}: a name is a non-empty string, got {_show(name)}")
        where = f"node {k} ({name!r:.80})"
        if name in self.symbols:
            raise GraphFormatError(f"{where}: the name is used twice")
        if not isinstance(op, str) or op not in REGISTRY:
            raise GraphFormatError(f"{where}: unknown op {_show(op)}")
        if site is not None and not isinstance(site, str):
            raise GraphFormatError(f"{where}: a site is a string or null, got {_show(site)}")
        inputs = self.refs(entry["inputs"], f"{where} inputs")
        attrs = _typed(entry["attrs"], dict, f"{where} attrs")
        attrs = {key: self.value(v, f"{where} attr {key!r:.40}", self.depth)
                 for key, v in attrs.items()}  # fmt: skip
        _check_attr_names(REGISTRY[op], attrs, where)
        if op == "variable":
            value, trainable = self.variable(variables.get(name), f"variables {name!r:.80}")
            self.count(value.shape, value.dtype, op, where)
            sym = Variable(value, name=name, trainable=trainable, graph=self.graph)
        else:
            shape, dtype, pending = _rules(REGISTRY[op], inputs, attrs, where)
            self.count(shape, dtype, op, where)
            if op == "scan":
                self.repeat(attrs, where)
            node = self.graph.add_node(REGISTRY[op], inputs, attrs, name, site, shape, dtype)
            self.graph.constraints.extend((a, b, why, node) for a, b, why in pending)
            sym = node.out
        sym.node.site = site
        self.symbols[name] = sym
        self.check(entry, sym, where)

    def count(self, shape, dtype, op, where):
        """Refuses a value over `max_elements`, or one that takes the total over `max_work`."""
        n = _elements(shape)
        self.work += n
        typed = f"op {op} gives {dt.short_name(dtype)}{sh.format_shape(shape)}"
        if self.max_elements is not None and n > self.max_elements:
            raise GraphFormatError(
                f"{where}: {typed}, {n} elements, over the limit of {self.max_elements} per "
                "value (max_elements; lift it only for a file you trust)"
            )
        if self.max_work is not None and self.work > self.max_work:
            raise GraphFormatError(
                f"{where}: {typed}, which brings the elements of all values to {self.work}, "
                f"over the limit of {self.max_work} (max_work; lift it only for a file you trust)"
            )

    def check(self, entry, sym, where):
        """The node as this kiln writes it must be the entry: names, attrs, shape and dtype."""
        mine = self.writer.node(sym.node)
        self.atoms.update((n, atom) for atom, n in self.writer.anon.items())
        path, theirs, ours = [], entry, mine
        while isinstance(ours, dict) and isinstance(theirs, dict) and theirs.keys() == ours.keys():
            diff = [k for k in sorted(ours) if _json(theirs[k]) != _json(ours[k])]
            if not diff:
                return
            path.append(diff[0])  # narrow the message down to the first difference
            theirs, ours = theirs[diff[0]], ours[diff[0]]
        raise GraphFormatError(
            f"{where}: {'.'.join(path)} is recorded as {_show(theirs)}, but the rebuilt node "
            f"(typed {sym.type_str()} by its op's rules) has {_show(ours)}"
        )

    def value(self, v, where, depth):
        if v is None or isinstance(v, (bool, str)):
            return v
        if type(v) is int:
            return _typed(v, int, where, _INT_MIN, _INT_MAX)
        if isinstance(v, list):
            if depth >= MAX_DEPTH:
                raise GraphFormatError(f"{where}: attr tuples nest over {MAX_DEPTH} deep")
            return tuple(self.value(x, where, depth + 1) for x in v)
        tag, body = next(iter(v.items())) if isinstance(v, dict) and len(v) == 1 else ("", None)
        if tag == "float" and isinstance(body, str) and len(body) <= 40:
            try:
                return float(body)  # repr's text, nan and inf included
            except ValueError:
                pass
        if tag == "dtype":
            return _dtype(body, where)
        if tag == "dim":
            return self.dim(body, where)
        if tag == "array":
            return ArrayValue(decode_array(body, where))
        if tag == "region" and isinstance(body, dict):
            return self.region(body, where, depth)
        raise GraphFormatError(f"{where}: not an attr value: {_show(v)}")

    def region(self, body, where, depth) -> Region:
        """A body: its nodes read as a graph of their own (same limits, same dim numbers)."""
        if depth >= MAX_DEPTH:
            raise GraphFormatError(f"{where}: bodies nest over {MAX_DEPTH} deep")
        _check_keys(body, {"nodes", "inputs", "outputs"}, f"{where} region")
        sub = _Reader(self.max_elements, self.max_work)
        sub.atoms, sub.writer.anon, sub.work, sub.depth = self.atoms, self.writer.anon, \
            self.work, depth + 1  # fmt: skip
        sub.body_work = self.body_work
        for k, entry in enumerate(_typed(body["nodes"], list, f"{where} nodes")):
            sub.node(entry, k, {})
        work, self.work = sub.work - self.work, sub.work
        graph = sub.graph
        graph.inputs = sub.refs(body["inputs"], f"{where} inputs")
        if any(s.op.name != "placeholder" for s in graph.inputs):
            raise GraphFormatError(f"{where}: a body's inputs are placeholders")
        graph.outputs = sub.refs(body["outputs"], f"{where} outputs")
        region = Region(graph)
        self.body_work[id(region)] = work
        return region

    def repeat(self, attrs, where):
        """A scan runs its body `length` times: the body's work counts that many times."""
        body, length = attrs.get("body"), attrs.get("length")
        steps = length.coeff if isinstance(length, sh.Dim) else length
        if not isinstance(body, Region) or type(steps) is not int or steps <= 1:
            return
        self.work += (steps - 1) * self.body_work.get(id(body), 0)
        if self.max_work is not None and self.work > self.max_work:
            raise GraphFormatError(
                f"{where}: a scan of {steps} steps brings the elements of all values to "
                f"{self.work}, over the limit of {self.max_work} (max_work; lift it only for a "
                "file you trust)"
            )

    def dim(self, body, where) -> sh.Dim:
        _check_keys(body, {"atoms", "coeff"}, f"{where} dim")
        coeff = _typed(body["coeff"], int, f"{where} dim coeff", 1, MAX_DIM)
        atoms = _typed(body["atoms"], list, f"{where} dim atoms")
        if not 1 <= len(atoms) <= MAX_RANK:
            raise GraphFormatError(f"{where}: a dim has 1 to {MAX_RANK} atoms, got {len(atoms)}")
        for a in atoms:
            if type(a) is int and 0 <= a < 2**31:
                if a not in self.atoms:  # a fresh atom for a new number (NOTE: atom 0 exists)
                    self.atoms[a] = sh.Dim().atoms[0]
            elif not (isinstance(a, str) and a.isidentifier()):
                raise GraphFormatError(f"{where}: a dim atom is a name or a number: {_show(a)}")
        anon = [self.atoms[a] for a in atoms if type(a) is int]
        return sh.Dim(coeff=coeff, atoms=(*(a for a in atoms if isinstance(a, str)), *anon))

    def variable(self, entry, where):
        if entry is None:
            raise GraphFormatError(f"{where}: a variable node needs an entry in `variables`")
        _check_keys(entry, {"trainable", "value"}, where)
        return decode_array(entry["value"], where), _typed(entry["trainable"], bool, where)

    def updates(self, pairs) -> dict:
        out, names = {}, set()
        for k, pair in enumerate(_typed(pairs, list, "updates")):
            where = f"update {k}"
            if not isinstance(pair, list) or len(pair) != 2:
                raise GraphFormatError(f"{where}: an update is a [variable, value] pair")
            var, value = self.ref(pair[0], where), self.ref(pair[1], where)
            if not isinstance(var, Variable) or var.name in names:
                raise GraphFormatError(f"{where}: {var.name!r:.80} is not a Variable updated once")
            _rules(REGISTRY["assign"], (var, value), {}, where)
            names.add(var.name)
            out[var] = value
        return out
