"""kn.load_graph's limits on untrusted files: text length, elements per value, total elements
(work), and attrs that an op's kernel does not take; each refusal is a GraphFormatError."""

import json

import numpy as np
import pytest
from test_dumps import build_everything

import kiln as kn
from kiln.graph.serialize import MAX_CHARS, MAX_ELEMENTS, MAX_WORK

# Bug: this file loaded, then ran forever (a sum over 2**48 broadcast elements).
HOSTILE = """{"format": "kiln.graph", "version": 1, "inputs": ["x"], "outputs": ["s"],
"updates": [], "variables": {}, "nodes": [
{"name": "x", "op": "placeholder", "inputs": [], "site": null, "shape": [], "dtype": "float32",
 "attrs": {"dtype": {"dtype": "float32"}, "shape": []}},
{"name": "b", "op": "broadcast_to", "inputs": ["x"], "site": null, "dtype": "float32",
 "attrs": {"shape": [16777216, 16777216]}, "shape": [16777216, 16777216]},
{"name": "s", "op": "reduce_sum", "inputs": ["b"], "site": null, "shape": [], "dtype": "float32",
 "attrs": {"axes": [0, 1], "keepdims": false}}]}"""


def test_load_graph_refuses_a_small_file_of_huge_work():
    assert len(HOSTILE) < 700
    match = (
        r"node 1 \('b'\): op broadcast_to gives "
        r"f32\[16777216,16777216\], 281474976710656 elements.*max_elements"
    )
    with pytest.raises(kn.GraphFormatError, match=match):
        kn.load_graph(HOSTILE)
    # Lifting the per-value limit alone leaves the total: 2**48 elements is over 2**32.
    with pytest.raises(kn.GraphFormatError, match=r"node 1 \('b'\).*max_work"):
        kn.load_graph(HOSTILE, max_elements=None)
    g = kn.load_graph(HOSTILE, trusted=True)  # a file one trusts loads (and is not run here)
    assert [s.type_str() for s in g.outputs] == ["f32[]"]


def _dump(build):
    with kn.Graph().as_default():
        return kn.dump(build(), "json")


def test_load_graph_refuses_a_value_over_max_elements_by_default():
    # Bug: a 40000 x 40000 exp (1.6e9 elements, 6.4 GB of float32) loaded without a word.
    x = lambda: kn.exp(kn.broadcast_to(kn.placeholder(kn.float32, (), name="x"), (40000, 40000)))  # noqa: E731
    text = _dump(x)
    with pytest.raises(kn.GraphFormatError, match=r"node 1 .*1600000000 elements.*268435456"):
        kn.load_graph(text)
    assert (MAX_CHARS, MAX_ELEMENTS, MAX_WORK) == (2**28, 2**28, 2**32)


def test_load_graph_max_elements_is_inclusive_and_counts_symbolic_dims_as_coefficients():
    text = _dump(lambda: kn.exp(kn.placeholder(kn.float32, ("n", 10, 7), name="x")))
    assert len(kn.load_graph(text, max_elements=70).nodes) == 2  # n counts as 1: 70 elements
    match = (
        r"node 0 \('x'\): op placeholder gives " r"f32\[n,10,7\], 70 elements, over the limit of 69"
    )
    with pytest.raises(kn.GraphFormatError, match=match):
        kn.load_graph(text, max_elements=69)


def test_load_graph_max_work_sums_the_elements_of_all_values():
    def chain():
        x = kn.placeholder(kn.float32, (10, 10), name="x")
        return kn.exp(kn.exp(x))

    text = _dump(chain)  # three values of 100 elements
    assert len(kn.load_graph(text, max_elements=100, max_work=300).nodes) == 3
    match = r"node 2 .*elements of all values to 300, " r"over the limit of 299 \(max_work"
    with pytest.raises(kn.GraphFormatError, match=match):
        kn.load_graph(text, max_work=299)
    assert len(kn.load_graph(text, max_work=None).nodes) == 3


def test_load_graph_counts_variables():
    text = _dump(lambda: kn.Variable(np.zeros((4, 5), np.float32), name="w") * 2.0)
    with pytest.raises(kn.GraphFormatError, match=r"node 0 \('w'\): op variable gives f32\[4,5\]"):
        kn.load_graph(text, max_elements=19)
    assert kn.load_graph(text, max_elements=20).variables[0].shape == (4, 5)


def test_load_graph_refuses_text_over_max_chars():
    text = _dump(lambda: kn.exp(kn.placeholder(kn.float32, (3,), name="x")))
    assert len(kn.load_graph(text, max_chars=len(text)).nodes) == 2
    with pytest.raises(kn.GraphFormatError, match=f"has {len(text)} characters, over the limit"):
        kn.load_graph(text, max_chars=len(text) - 1)
    with pytest.raises(kn.GraphFormatError, match="over the limit"):
        kn.load_graph(" " * (MAX_CHARS + 1))  # refused before parsing
    assert len(kn.load_graph(text, max_chars=None).nodes) == 2


@pytest.mark.parametrize("limits", [{"max_work": -1}, {"max_chars": 1.5}, {"max_elements": "9"}])
def test_load_graph_limits_are_ints_or_none(limits):
    with pytest.raises(ValueError, match="non-negative int or None"):
        kn.load_graph(HOSTILE, **limits)


# -- attrs that an op does not take ----------------------------------------------------------


def _stop_gradient_doc():
    doc = json.loads(_dump(lambda: kn.stop_gradient(kn.placeholder(kn.float32, (), name="x"))))
    assert doc["nodes"][1]["op"] == "stop_gradient"
    return doc


def test_load_graph_refuses_an_unknown_attr():
    # Bug: an extra attr on stop_gradient loaded, then compiling raised a raw TypeError.
    doc = _stop_gradient_doc()
    doc["nodes"][1]["attrs"]["bogus"] = 1
    match = (
        r"node 1 \('stop_gradient'\): op "
        r"stop_gradient has unknown attrs \['bogus'\] \(it takes: none\)"
    )
    with pytest.raises(kn.GraphFormatError, match=match):
        kn.load_graph(json.dumps(doc))


def test_load_graph_refuses_extra_attrs_on_sources():
    doc = _stop_gradient_doc()
    doc["nodes"][0]["attrs"]["device"] = "cuda"
    match = r"placeholder has unknown attrs \['device'\] " r"\(it takes: dtype, shape\)"
    with pytest.raises(kn.GraphFormatError, match=match):
        kn.load_graph(json.dumps(doc))


@pytest.fixture(scope="module")
def everything():
    return json.loads(kn.dump(build_everything(), "json"))


def test_load_graph_refuses_an_extra_attr_on_every_op(everything):
    refused = set()
    for k, node in enumerate(everything["nodes"]):
        doc = json.loads(json.dumps(everything))
        doc["nodes"][k]["attrs"]["extra"] = 0
        with pytest.raises(kn.GraphFormatError, match=rf"node {k} .*has unknown attrs \['extra'\]"):
            kn.load_graph(json.dumps(doc))
        refused.add(node["op"])
    assert len(refused) >= 10, refused  # the document covers many ops


def test_load_graph_refuses_a_missing_attr_and_the_runtime_key(everything):
    k, node = next((k, n) for k, n in enumerate(everything["nodes"]) if n["op"] == "reduce_sum")
    doc = json.loads(json.dumps(everything))
    del doc["nodes"][k]["attrs"]["keepdims"]
    with pytest.raises(kn.GraphFormatError, match=r"reduce_sum has missing attrs \['keepdims'\]"):
        kn.load_graph(json.dumps(doc))
    # `key` is a kernel parameter the runtime passes (random ops), never an attr of a file.
    k = next(k for k, n in enumerate(everything["nodes"]) if n["op"].startswith("random_"))
    doc = json.loads(json.dumps(everything))
    doc["nodes"][k]["attrs"]["key"] = 3
    with pytest.raises(kn.GraphFormatError, match=r"unknown attrs \['key'\]"):
        kn.load_graph(json.dumps(doc))


def test_every_op_table_graph_loads():
    """The attrs the reader takes (each kernel's keyword-only parameters) are all that real
    graphs of every op-table row carry (and a loaded node must write back as it was read)."""
    from op_table import CASES
    from test_ops import build, make_inputs

    loaded_ops, tested = set(), set()
    for case in CASES:
        arrays = make_inputs(case, case.dtypes[0])
        _, _, outputs = build(case, arrays)
        if not all(isinstance(s, kn.graph.Symbol) for s in outputs):
            continue  # a row whose result is a Python value: no graph to dump
        tested.add(case.op)
        g = kn.load_graph(kn.dump(outputs, "json"))
        loaded_ops |= {n.op.name for n in g.nodes}
    assert tested <= loaded_ops and len(tested) > 60  # most registered ops have graph rows
