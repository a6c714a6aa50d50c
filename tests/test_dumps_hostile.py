"""The JSON reader refuses malformed, truncated and hostile text, only ever with
GraphFormatError (fuzzed); hostile names and attrs stay data in text, JSON and DOT."""

import itertools
import json
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_dumps import build_everything, build_scoped, build_symbolic, build_update, run_both

import kiln as kn
from kiln.graph.dot import MAX_DEPTH, to_dot
from kiln.graph.opdef import ArrayValue, OpDef
from kiln.shapes import Dim

# -- the reader refuses anything else, and only with GraphFormatError ---------------------------


@pytest.fixture(scope="module")
def documents():
    return [kn.dump(build_everything(), "json"), kn.dump(build_symbolic(), "json")]


def load_or_reject(text):
    """Loads `text`, or returns None on GraphFormatError; any other exception fails the test.
    A graph that loads must be valid IR and dump back to text that loads."""
    try:
        g = kn.load_graph(text)
    except kn.GraphFormatError as e:
        assert str(e)
        return None
    kn.verify(g)
    kn.load_graph(kn.dump(g, "json"))
    return g


def _paths(obj, prefix=()):
    """Every path (a tuple of keys and indices) into a parsed JSON document."""
    items = obj.items() if isinstance(obj, dict) else enumerate(obj) if type(obj) is list else ()
    return [prefix, *(p for key, value in items for p in _paths(value, (*prefix, key)))]


def _at(obj, path):
    for key in path:
        obj = obj[key]
    return obj


SPECIAL = [-1, 0, 2**31, 2**48 + 1, 2**63, 2**64, 10**40, "float32", "x", "add", "mul"]
SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8)
JSON_VALUES = st.recursive(
    SCALARS | st.sampled_from(SPECIAL),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=6,
)


def mutate_structure(data, text):
    doc = json.loads(text)
    path = data.draw(st.sampled_from(_paths(doc)[1:]))
    parent, key = _at(doc, path[:-1]), path[-1]
    value = parent[key]
    op = data.draw(st.sampled_from(["delete", "replace", "retype", "duplicate", "swap"]))
    if op == "delete":
        del parent[key]
    elif op == "replace":
        parent[key] = data.draw(JSON_VALUES)
    elif op == "retype":
        parent[key] = data.draw(st.sampled_from([str(value)[:20], [value], {"x": value}, 7, True]))
    elif isinstance(parent, list) and op == "duplicate":
        parent.insert(key, json.loads(json.dumps(value)))
    elif isinstance(parent, list) and len(parent) > 1:
        other = data.draw(st.integers(0, len(parent) - 1))
        parent[key], parent[other] = parent[other], parent[key]
    return json.dumps(doc)


def mutate_text(data, text):
    op = data.draw(st.sampled_from(["truncate", "insert", "replace", "garbage", "bytes", "deep"]))
    pos = data.draw(st.integers(0, len(text)))
    if op == "truncate":
        return text[:pos]
    if op == "insert":
        return text[:pos] + data.draw(st.text(max_size=6)) + text[pos:]
    if op == "replace":
        return text[:pos] + data.draw(st.characters()) + text[pos + 1 :]
    if op == "garbage":
        return data.draw(st.text())
    if op == "bytes":
        return data.draw(st.binary()).decode("latin-1")
    opener = data.draw(st.sampled_from(["[", '{"a": ', '{"format": "kiln.graph", "nodes": [']))
    return opener * data.draw(st.integers(1, 100_000))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), which=st.integers(0, 1), times=st.integers(1, 3))
def test_fuzz_mutated_structure_loads_or_raises_graph_format_error(documents, data, which, times):
    text = documents[which]
    for _ in range(times):
        text = mutate_structure(data, text)
    load_or_reject(text)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), which=st.integers(0, 1))
def test_fuzz_mutated_text_loads_or_raises_graph_format_error(documents, data, which):
    load_or_reject(mutate_text(data, documents[which]))


def edit(*path, value=None, do=None):
    """A document edit: sets `value` at `path` (a key "op:NAME" picks the first node of that op),
    or calls `do(target)` on the value at `path`."""

    def apply(text):
        doc = json.loads(text)
        target = doc
        for key in path[: len(path) - (do is None)]:
            ops = [n for n in doc["nodes"] if n["op"] == str(key)[3:]]
            target = ops[0] if str(key).startswith("op:") else target[key]
        if do is None:
            target[path[-1]] = value
        else:
            do(target)
        return json.dumps(doc)

    return apply


ARRAY = ("op:constant", "attrs", "value", "array")
DIM = ("nodes", 0, "attrs", "shape", 0, "dim")

HOSTILE_DOCUMENTS = [
    ("not-json", lambda t: t[: len(t) // 2], "not valid JSON"),
    ("top-level-list", lambda t: "[" + t + "]", "not a kiln graph"),
    ("top-level-string", json.dumps, "not a kiln graph"),
    ("version", edit("version", value=2), "unsupported version 2"),
    ("version-bool", edit("version", value=True), "unsupported version true"),
    ("unknown-key", edit("extra", value=1), "unknown keys \\['extra'\\]"),
    ("missing-key", edit(do=lambda d: d.pop("updates")), "missing keys \\['updates'\\]"),
    ("unknown-op", edit("op:matmul", "op", value="system"), "unknown op 'system'"),
    ("dangling", edit("op:matmul", "inputs", value=["x", "nope"]), "'nope' is not a node defined"),
    ("cyclic", edit("nodes", 0, "inputs", value=["mul"]), "dangling or cyclic"),
    ("duplicate-name", edit("nodes", do=lambda ns: ns.append(ns[0])), "used twice"),
    ("duplicate-key", lambda t: t.replace('"version": 1', '"version": 1, "version": 1'), "duplic"),
    ("bare-float", lambda t: t.replace('"version": 1', '"version": 1.0'), "bare JSON number"),
    ("nan", lambda t: t.replace('"version": 1', '"version": NaN'), "bare JSON number"),
    ("huge-int", lambda t: t.replace('"version": 1', '"version": ' + "9" * 5000), "too large"),
    ("deep", lambda t: "[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ("huge-dim", edit("nodes", 0, "attrs", "shape", value=[2**60, 3]), "invalid shape"),
    ("negative-dim", edit("nodes", 0, "attrs", "shape", value=[-1, 3]), "invalid shape"),
    ("bool-as-dim", edit("nodes", 0, "attrs", "shape", value=[True, 3]), "invalid shape"),
    ("recorded-dim", edit("nodes", 0, "shape", value=[-1, 2**60, 3]), "shape is recorded as"),
    ("dim-atom", edit(*DIM, "atoms", value=["os.system"]), "a dim atom is a name or a number"),
    ("dim-coeff", edit(*DIM, "coeff", value=0), "coeff: expected an int in \\[1, "),
    ("array-bytes", edit(*ARRAY, "data", value="AAAA"), "3 bytes of data, expected 2"),
    ("array-base64", edit(*ARRAY, "data", value="!!!!"), "bad base64"),
    ("array-shape", edit(*ARRAY, "shape", value=[2**40, 2**40]), "bytes of data, expected"),
    ("bool-bytes", edit(*ARRAY, "data", value="AgE="), "bool data must be bytes 0 or 1"),
    ("array-dtype", edit(*ARRAY, "dtype", value="object"), "unknown dtype 'object'"),
    ("variable-shape", edit("variables", "w", "value", "shape", value=[6]), "attrs.shape is rec"),
    ("variable-missing", edit("variables", do=dict.clear), "needs an entry in `variables`"),
    ("variable-extra", edit("variables", "v", value={}), "names no variable node"),
    ("trainable", edit("variables", "w", "trainable", value=1), "expected bool"),
    ("shape-mismatch", edit("op:matmul", "shape", value=[4, 4]), "shape is recorded as"),
    ("dtype-mismatch", edit("op:matmul", "dtype", value="float64"), "dtype is recorded as"),
    ("attr-canonical", edit("op:random_normal", "attrs", "std", value={"float": "5e-1"}), "std"),
    ("attr-type", edit("op:reshape", "attrs", "shape", value={"x": 1}), "not an attr value"),
    ("attr-depth", edit("op:exp", "attrs", "k", value=json.loads("[" * 40 + "]" * 40)), "nest"),
    ("attr-rule", edit("op:reshape", "attrs", "shape", value=[5]), "reshape rejects"),
    ("input-dup", edit("inputs", do=lambda xs: xs.append("x")), "fed twice"),
    ("update-target", edit("updates", 0, 0, value="x"), "not a Variable updated once"),
    ("update-shape", edit("updates", 0, 1, value="matmul"), "assign rejects"),
    ("update-pair", edit("updates", 0, value="w"), "a \\[variable, value\\] pair"),
    ("name-type", edit("nodes", 0, "name", value=7), "a name is a non-empty string"),
    ("site-type", edit("nodes", 0, "site", value=["x"]), "a site is a string or null"),
    ("nodes-type", edit("nodes", value={}), "nodes: expected list"),
]


@pytest.mark.parametrize("edit, match", [c[1:] for c in HOSTILE_DOCUMENTS],
                         ids=[c[0] for c in HOSTILE_DOCUMENTS])  # fmt: skip
def test_hostile_document_raises_graph_format_error(documents, edit, match):
    with pytest.raises(kn.GraphFormatError, match=match):
        kn.load_graph(edit(documents[0]))


def test_anonymous_atom_zero_is_an_atom(monkeypatch):
    """Regression: the first anonymous atom of a process is 0, which is falsy."""
    text = kn.dump(build_symbolic(), "json")  # `reshape` has an attr with the anonymous dim
    monkeypatch.setattr(kn.shapes, "_anon_ids", itertools.count())
    assert kn.dump(kn.load_graph(text), "json") == text


@pytest.mark.parametrize("value", [b"{}", None, 3, {"format": "kiln.graph"}, ["x"]])
def test_load_graph_takes_only_text(value):
    with pytest.raises(kn.GraphFormatError, match="JSON text"):
        kn.load_graph(value)


# -- hostile names and attrs stay data; DOT stays valid -----------------------------------------

_DOT_TOKEN = re.compile(
    r'\s+|(?P<tok>"(?:[^"\\]|\\.)*"|[A-Za-z_][A-Za-z_0-9]*|-?\d+(?:\.\d+)?|->|[{}\[\];,=])', re.S
)
_PUNCT = {"{", "}", "[", "]", ";", ",", "=", "->"}


def _unquote(token):
    if not token.startswith('"'):
        return token
    return re.sub(r"\\(.)", lambda m: "\n" if m[1] == "n" else m[1], token[1:-1], flags=re.S)


class _DotParser:
    """The subset of DOT that `to_dot` writes, parsed strictly: statements, quoted IDs,
    attribute lists, nested subgraphs; edges must join declared nodes."""

    def __init__(self, text):
        self.tokens, pos = [], 0
        while pos < len(text):
            m = _DOT_TOKEN.match(text, pos)
            assert m is not None, f"not DOT at {text[pos : pos + 40]!r}"
            if m["tok"]:
                self.tokens.append(m["tok"])
            pos = m.end()
        self.i = 0
        self.labels, self.edges, self.clusters = {}, [], []

    def take(self, expected=None):
        token = self.tokens[self.i]
        self.i += 1
        assert expected in (None, token), f"expected {expected!r}, got {token!r}"
        return token

    def ident(self):
        token = self.take()
        assert token not in _PUNCT, f"expected an ID, got {token!r}"
        return token

    def attrs(self):
        out = {}
        self.take("[")
        while self.tokens[self.i] != "]":
            key = self.ident()
            self.take("=")
            out[key] = _unquote(self.ident())
            if self.tokens[self.i] == ",":
                self.take()
        self.take("]")
        return out

    def statements(self):
        while self.tokens[self.i] != "}":
            first = self.ident()
            if first == "subgraph":
                self.clusters.append(_unquote(self.ident()))
                self.take("{")
                self.statements()
                self.take("}")
                continue
            if first in ("node", "graph", "edge"):
                self.attrs()
            elif self.tokens[self.i] == "=":
                self.take()
                self.ident()
            elif self.tokens[self.i] == "->":
                self.take()
                self.edges.append((first, self.ident()))
                if self.tokens[self.i] == "[":
                    self.attrs()
            else:
                attrs = self.attrs() if self.tokens[self.i] == "[" else {}
                self.labels[first] = attrs.get("label", first)
            self.take(";")

    def parse(self):
        self.take("digraph")
        self.ident()
        self.take("{")
        self.statements()
        self.take("}")
        assert self.i == len(self.tokens), "text after the graph"
        assert all(a in self.labels and b in self.labels for a, b in self.edges)
        return {"labels": self.labels, "edges": self.edges, "clusters": self.clusters}


def parse_dot(text):
    return _DotParser(text).parse()


HOSTILE_NAMES = [
    'quote"d',
    "new\nline",
    "__import__('os').system('touch kiln_pwned')",
    "}",
    "{ lambda x .",
    "back\\slash\\N\\G\\n",
    'x"]; n0 -> n0; subgraph cluster_x { "',
    "tab\tand\x00nul\x7f",
    "é中\u202e",
    "trailing/",
    "<b>html</b>",
]


def _visible(text):
    """What a DOT label shows for `text`: unprintable characters are written as \\uXXXX."""
    return "".join(c if c.isprintable() or c == "\n" else f"\\u{ord(c):04x}" for c in text)


def build_hostile():
    with kn.Graph().as_default() as g:
        xs = [kn.placeholder(kn.float32, (2,), name=n) for n in HOSTILE_NAMES]
        total = kn.constant(np.float32(1.0), name=HOSTILE_NAMES[2])
        for scope in ['"}', "a\nb", "__import__('os')", "x]; y -> z"]:
            with kn.name_scope(scope), kn.name_scope("}{"):
                total = total + xs[len(scope) % len(xs)]
        g.outputs = [total]
    g.inputs = xs
    return g


def test_hostile_names_round_trip_as_data(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    g = build_hostile()
    g2 = kn.load_graph(kn.dump(g, "json"))
    assert [n.name for n in g2.nodes] == [n.name for n in g.nodes]
    assert kn.dump(g2) == kn.dump(g) and kn.dump(g2, "dot") == kn.dump(g, "dot")
    feeds = [np.full(2, k, np.float32) for k in range(len(HOSTILE_NAMES))]
    run_both(kn.function(g.inputs, g.outputs), kn.function(g2.inputs, g2.outputs), feeds)
    assert not (tmp_path / "kiln_pwned").exists()


def test_hostile_names_keep_dot_valid():
    g = build_hostile()
    dot = parse_dot(kn.dump(g, "dot"))
    for k, node in enumerate(g.nodes):
        expected = f"{node.name}\n{node.op.name}\n{node.out.type_str().replace('_', '_0')}"
        assert dot["labels"][f"n{k}"] == _visible(expected)
    assert {_visible('cluster_"}/}{'), "cluster_a\nb/}{"} <= set(dot["clusters"])
    assert len(dot["edges"]) == sum(len(n.inputs) for n in g.nodes)


@pytest.mark.parametrize("build", [build_everything, build_scoped, build_update])
def test_dot_of_programs_parses(build):
    obj = build()
    dot = parse_dot(kn.dump(obj, "dot"))
    nodes = obj.graph.nodes if isinstance(obj, kn.Function) else obj.nodes
    assert len(dot["labels"]) == len(nodes) and all(n.name in dot["labels"][f"n{k}"]
                                                     for k, n in enumerate(nodes))  # fmt: skip


def test_dot_draws_deep_scopes_in_bounded_space():
    name = "a/" * 5000 + "x"
    with kn.Graph().as_default() as g:
        kn.exp(kn.placeholder(kn.float32, (2,), name=name))
    text = to_dot(g)
    assert text.count("subgraph") == MAX_DEPTH and len(text) < 50 * len(name)
    dot = parse_dot(text)
    assert dot["labels"]["n0"].startswith(name) and dot["clusters"][-1] == "cluster_a" + "/a" * 31


def test_hostile_attr_strings_stay_data(documents, tmp_path):
    sentinel = tmp_path / "pwned"
    payload = f"__import__('pathlib').Path({str(sentinel)!r}).touch()"
    doc = json.loads(documents[0])
    paths = [p for p in _paths(doc) if p[:1] == ("nodes",) and isinstance(_at(doc, p), str)]
    loaded = 0
    for path in paths:
        edited = json.loads(documents[0])
        _at(edited, path[:-1])[path[-1]] = payload
        g = load_or_reject(json.dumps(edited))
        if g is None:
            continue
        loaded += 1
        for fmt in ["text", "json", "dot"]:
            parse_dot(kn.dump(g, fmt)) if fmt == "dot" else kn.dump(g, fmt)
        try:
            kn.function(g.inputs, g.outputs)(np.ones((2, 3, 3), np.float32))
        except kn.KilnError:
            pass  # e.g. a renamed input is no longer fed; never code execution
    assert loaded and not sentinel.exists()


def _probe_kernel(xp, out=None, *, i, u, f, b, s, n, d, dim, arr, nested):
    return xp.zeros(2, np.float32)


def test_attr_values_of_every_type_round_trip(monkeypatch):
    values = {
        "i": -(2**63), "u": 2**64 - 1, "f": 1e-300, "b": False, "s": "é\n\"}", "n": None,
        "d": np.dtype("uint8"), "dim": Dim("batch") * 7, "arr": ArrayValue(np.arange(3.0)),
        "nested": ((1, (2.5, None)), ("a",), ()),
    }  # fmt: skip
    # An op that takes exactly these attrs (the reader refuses attrs an op's kernel lacks).
    probe = OpDef("attr_probe", lambda **_: (2,), lambda **_: np.dtype("float32"), _probe_kernel)
    monkeypatch.setitem(kn.graph.REGISTRY, "attr_probe", probe)
    g = kn.Graph()
    g.add_node(probe, (), values, "p", shape=(2,), dtype=np.dtype("float32"))
    (node,) = kn.load_graph(kn.dump(g, "json")).nodes
    assert dict(node.attrs) == values
    assert type(node.attrs["b"]) is bool and type(node.attrs["i"]) is int
