"""`kn.to_networkx`: a program as a networkx MultiDiGraph; round trips through JSON and ONNX
checked as graph isomorphism (networkx's matcher on op, shape and dtype; edges by operand
position), and the two analyses docs/onnx.md shows."""

import math

import numpy as np
import pytest

nx = pytest.importorskip("networkx")

import kiln as kn  # noqa: E402
from kiln.demo import build_graph  # noqa: E402

iso = nx.algorithms.isomorphism


def same_program(a, b, sources_alike=False) -> bool:
    """Whether two networkx views are isomorphic with equal op, shape and dtype per node and
    equal operand positions per edge. `sources_alike`: a constant and a Variable match (ONNX
    has initializers for both)."""

    def key(d):
        op = d["op"]
        if sources_alike and op in ("constant", "variable"):
            op = "source"
        return (op, d["shape"], d["dtype"])

    return nx.is_isomorphic(
        a, b, node_match=lambda x, y: key(x) == key(y),
        edge_match=iso.categorical_multiedge_match("pos", None),
    )  # fmt: skip


def test_nodes_carry_op_shape_dtype_site_attrs_and_edges_positions():
    g = kn.Graph()
    with g.as_default():
        x = kn.placeholder(kn.float32, ("batch", 4), name="x")
        w = kn.Variable(np.ones((4, 2), np.float32), name="w")
        h = kn.matmul(x, w)  # the site checked below
        y = kn.reshape(h * h, (-1,))
        g.inputs, g.outputs = [x], [y]
    view = kn.to_networkx(g)
    assert isinstance(view, nx.MultiDiGraph)
    assert view.graph["inputs"] == ["x"] and view.graph["outputs"] == [y.name]
    node = view.nodes[h.name]
    assert (node["op"], node["shape"], node["dtype"]) == ("matmul", ("batch", 2), "float32")
    assert node["site"] == h.site and "test_networkx.py" in node["site"]
    assert node["region"] is None
    assert view.nodes["w"]["op"] == "variable"
    assert view.nodes[y.name]["attrs"] == dict(y.node.attrs)
    assert view.nodes[y.name]["shape"] == ("batch*2",)
    # mul h h: two edges from h, at operand positions 0 and 1
    mul = y.node.inputs[0].name
    assert sorted(p for _, _, p in view.edges(h.name, data="pos")) == [0, 1]
    assert view.number_of_edges(h.name, mul) == 2
    assert [(u, p) for u, _, p in view.in_edges(h.name, data="pos")] == [("x", 0), ("w", 1)]


def test_checkpoint_regions_are_an_attribute():
    g = kn.Graph()
    with g.as_default():
        x = kn.placeholder(kn.float32, (3,), name="x")
        y = kn.checkpoint(lambda t: kn.sin(kn.exp(t)), x)
        z = kn.cos(y)
    view = kn.to_networkx(z)
    inside = {n for n, r in view.nodes(data="region") if r is not None}
    assert {view.nodes[n]["op"] for n in inside} >= {"sin", "exp"}
    assert view.nodes[z.name]["region"] is None and view.nodes["x"]["region"] is None


def test_takes_what_dump_takes():
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (3,), name="x")
        y = kn.exp(x) + 1.0
        f = kn.function([x], y)
    for obj in (y, [y], f, kn.trace(lambda t: kn.exp(t) + 1.0, np.zeros(3, np.float32))):
        view = kn.to_networkx(obj)
        ops = {d["op"] for _, d in view.nodes(data=True)}
        assert "placeholder" in ops and ops & {"exp", "fused"}, obj  # compiled: a small group
    with pytest.raises(TypeError, match="dump"):
        kn.to_networkx(42)


def test_json_round_trip_is_isomorphic():
    """The demo's whole training graph (forward, backward, AdamW's updates)."""
    program = build_graph()
    text = kn.dump([program.loss, program.train_op], "json")
    loaded = kn.load_graph(text)
    original = kn.to_networkx([program.loss, program.train_op])
    assert len(original) > 100
    assert same_program(original, kn.to_networkx(loaded))
    # and the matcher can fail: one op changed is another program
    changed = original.copy()
    some = next(n for n, d in changed.nodes(data=True) if d["op"] == "relu")
    changed.nodes[some]["op"] = "tanh"
    assert not same_program(changed, kn.to_networkx(loaded))


def test_onnx_round_trip_is_isomorphic():
    """kiln -> ONNX -> kiln gives the digits MLP's program back (Variables as initializers)."""
    pytest.importorskip("onnx")
    from kiln.interchange.onnx_export import program_of

    program = build_graph()
    predict = kn.function([program.x], [program.logits])
    back = kn.import_onnx(kn.interchange.to_onnx(predict))
    assert same_program(kn.to_networkx(program_of(predict)), kn.to_networkx(back))


# -- the analyses of docs/onnx.md ------------------------------------------------------------


def nbytes(data) -> int:
    return math.prod(data["shape"]) * np.dtype(data["dtype"]).itemsize


def test_longest_path_and_heaviest_values():
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (8, 16), name="x")
        big = kn.matmul(kn.transpose(x, 0, 1), x)  # 16x16
        y = kn.sum(kn.tanh(kn.exp(big)))  # the longest chain runs through here
        z = kn.sum(x)
    view = kn.to_networkx([y, z])
    path = nx.dag_longest_path(view)
    assert [view.nodes[n]["op"] for n in path] == [
        "placeholder", "transpose", "matmul", "exp", "tanh", "reduce_sum"
    ]  # fmt: skip
    heaviest = sorted(view.nodes(data=True), key=lambda nd: -nbytes(nd[1]))[:4]
    # 16*16 float32 values: 1024 bytes each (matmul, exp, tanh), then x (8*16*4 = 512 bytes)
    assert [nbytes(d) for _, d in heaviest] == [1024, 1024, 1024, 512]


def test_docs_examples_run(tmp_path, monkeypatch, capsys):
    """docs/onnx.md's Python examples run as written (in a scratch folder: they write files)."""
    import pathlib
    import re

    pytest.importorskip("onnx")
    docs = pathlib.Path(__file__).resolve().parent.parent / "docs" / "onnx.md"
    blocks = re.findall(r"```python\n(.*?)```", docs.read_text(encoding="utf-8"), re.S)
    assert len(blocks) >= 2
    monkeypatch.chdir(tmp_path)
    for block in blocks:
        exec(compile(block, str(docs), "exec"), {})
    printed = capsys.readouterr().out
    assert "31 nodes: variable -> transpose -> matmul -> add -> relu ..." in printed
    assert "65536 bytes  relu       train/1/relu  ('batch', 256)" in printed
