"""Dumps: golden text and DOT, byte-identical dumps across processes, and the JSON round trip
(isomorphic and computing the same, on random graphs too). Hostile input: test_dumps_hostile."""

import json
import os
import re
import subprocess
import sys

import networkx as nx
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kiln as kn
import kiln.passes
from kiln.shapes import Dim

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# -- programs ----------------------------------------------------------------------------------


def build_simple():
    with kn.Graph().as_default() as g:
        x = kn.placeholder(kn.float32, (2, 3), name="x")
        w = kn.constant(np.arange(6, dtype=np.float32).reshape(3, 2), name="w")
        kn.sum(kn.relu(x @ w) * 2.0, axis=1)
    return g


def build_symbolic():
    with kn.Graph().as_default() as g:
        x = kn.placeholder(kn.float32, ("batch", None, 4), name="x")
        h = kn.reshape(x, (-1, 4))
        m = kn.mean(h, axis=0, keepdims=True)
        g.outputs = [kn.tanh(x) - m, x[1:]]
    return g


def build_scoped():
    with kn.Graph().as_default() as g:
        x = kn.placeholder(kn.float32, (None, 3), name="x")
        with kn.name_scope("encoder"):
            w = kn.Variable(np.ones((3, 2), np.float32), name="w")
            with kn.name_scope("layer1"):
                h = kn.relu(x @ w) * 3.0
        kn.sum(h)
    return g


def build_update(passes=()):
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, ("n",), name="x")
        w = kn.Variable(np.float32(1.0), name="w")
        loss = kn.mean(kn.square(x * w - 1.0))
        f = kn.function([x], loss, updates={w: w - 0.5 * kn.mean(x)}, passes=passes)
    return f


def build_everything():
    """Every kind of attr value: dtypes, named/anonymous/fresh dims, arrays, floats, seeds."""
    kn.manual_seed(3)
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, ("batch", None, 3), name="x")
        w = kn.Variable(np.linspace(-1, 1, 6, dtype=np.float32).reshape(3, 2), name="w")
        flags = kn.constant(np.array([True, False]), name="flags")
        h = kn.reshape(x @ w, (-1, 2))
        noise = kn.random.normal((2,), std=0.5)
        y = kn.where(
            flags, kn.sum(h, axis=0) + noise, kn.cast(kn.constant(np.int8(-3)), kn.float32)
        )
        z = kn.exp(x[:, 1:, 0]) * float("inf")
        f = kn.function([x], [y, z], updates={w: w * 0.5}, passes=())  # every op, unfused
    return f


def strip_lines(text):
    """Golden text leaves out line numbers, so editing this file does not break it."""
    return re.sub(r"(# test_dumps\.py):\d+", r"\1", text)


# -- golden text -------------------------------------------------------------------------------

GOLDEN_SIMPLE = """\
{ lambda x:f32[2,3] .
    w:f32[3,2] = constant[value=[0.,1.,2.,3.,4.,5.]]  # test_dumps.py
    t0:f32[2,2] = matmul x w  # test_dumps.py
    t1:f32[2,2] = relu t0  # test_dumps.py
    t2:f32[2,2] = mul t1 2.0:f32[]  # test_dumps.py
    t3:f32[2] = reduce_sum[axes=(1,) keepdims=False] t2  # test_dumps.py
  in (t3) }
"""

GOLDEN_SYMBOLIC = """\
{ lambda x:f32[batch,_0,4] .
    t0:f32[batch*_0,4] = reshape[shape=(batch*_0,4)] x  # test_dumps.py
    t1:f32[1,4] = reduce_mean[axes=(0,) keepdims=True] t0  # test_dumps.py
    t2:f32[batch,_0,4] = tanh x  # test_dumps.py
    t3:f32[batch,_0,4] = sub t2 t1  # test_dumps.py
    t4:f32[_1,_0,4] = index[spec=(('slice',1,None,None),)] x  # test_dumps.py
  in (t3 t4) }
"""

GOLDEN_SCOPED = """\
{ lambda x:f32[_0,3] .
    encoder/w:f32[3,2] = variable  # test_dumps.py
    t0:f32[_0,2] = matmul x encoder/w  # test_dumps.py
    t1:f32[_0,2] = relu t0  # test_dumps.py
    t2:f32[_0,2] = mul t1 3.0:f32[]  # test_dumps.py
    t3:f32[] = reduce_sum[axes=(0,1) keepdims=False] t2  # test_dumps.py
  in (t3) }
"""

GOLDEN_UPDATE = """\
{ lambda x:f32[n] .
    w:f32[] = variable  # test_dumps.py
    t0:f32[n] = mul x w  # test_dumps.py
    t1:f32[n] = sub t0 1.0:f32[]  # test_dumps.py
    t2:f32[n] = square t1  # test_dumps.py
    t3:f32[] = reduce_mean[axes=(0,) keepdims=False] t2  # test_dumps.py
    t4:f32[] = reduce_mean[axes=(0,) keepdims=False] x  # test_dumps.py
    t5:f32[] = mul t4 0.5:f32[]  # test_dumps.py
    t6:f32[] = sub w t5  # test_dumps.py
  in (t3) updates (w:=t6) }
"""


@pytest.mark.parametrize(
    "build, golden",
    [
        (build_simple, GOLDEN_SIMPLE),
        (build_symbolic, GOLDEN_SYMBOLIC),
        (build_scoped, GOLDEN_SCOPED),
        (build_update, GOLDEN_UPDATE),
    ],
    ids=["simple", "symbolic", "scoped", "update"],
)
def test_dump_text_golden(build, golden):
    assert strip_lines(kn.dump(build(), "text")) == golden


# A Function's dump is the program it runs, after its passes (fusion asked for here: on the
# CPU it is not in the default pipeline).
GOLDEN_UPDATE_OPTIMIZED = """\
{ lambda x:f32[n] .
    w:f32[] = variable  # test_dumps.py
    t0:f32[n] = fused[outputs=(2,) program=(('mul',(('in',0),('in',1)),()),('sub',(('eq',0),('in',2)),()),('square',(('eq',1),),()))] x w 1.0:f32[]  # test_dumps.py
    t1:f32[] = reduce_mean[axes=(0,) keepdims=False] t0  # test_dumps.py
    t2:f32[] = reduce_mean[axes=(0,) keepdims=False] x  # test_dumps.py
    t3:f32[] = fused[outputs=(1,) program=(('mul',(('in',0),('in',1)),()),('sub',(('in',2),('eq',0)),()))] t2 0.5:f32[] w  # test_dumps.py
  in (t1) updates (w:=t3) }
"""  # noqa: E501


def test_dump_text_of_a_function_is_its_optimized_program():
    passes = kiln.passes.PIPELINE  # simplify, then fuse_elementwise
    assert strip_lines(kn.dump(build_update(passes=passes), "text")) == GOLDEN_UPDATE_OPTIMIZED


def test_dump_text_of_graph_is_its_str_and_sites_name_this_file():
    g = build_scoped()
    assert kn.dump(g) == str(g)
    sites = re.findall(r"# (\S+)$", kn.dump(g), flags=re.M)
    assert sites and all(re.fullmatch(r"test_dumps\.py:\d+", s) for s in sites)


def test_dump_of_symbols_is_the_pruned_program():
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (2,), name="x")
        unused = kn.placeholder(kn.float32, (2,), name="unused")
        kn.exp(unused)
        y = kn.sin(x)
    text = kn.dump([y])
    assert text == kn.dump(y) and "unused" not in text and "exp" not in text
    assert "unused" not in kn.dump(y, "json") and "unused" not in kn.dump(y, "dot")


def test_dump_rejects_unknown_objects_and_formats():
    with pytest.raises(TypeError, match="dump\\(\\) takes"):
        kn.dump(3)
    with pytest.raises(ValueError, match="unknown dump format"):
        kn.dump(build_simple(), "yaml")


def test_dump_dot_golden():
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, ("n",), name="x")
        w = kn.Variable(np.float32(2.0), name="w")
        with kn.name_scope("outer"), kn.name_scope("inner"):
            y = x * w
        f = kn.function([x], y, updates={w: w + 1.0})
    assert kn.dump(f, "dot") == (
        "digraph kiln {\n"
        '  node [shape=box, fontname="monospace", fontsize=10];\n'
        '  n0 [label="x\\nplaceholder\\nf32[n]", shape=ellipse];\n'
        '  n1 [label="w\\nvariable\\nf32[]", shape=cylinder];\n'
        '  subgraph "cluster_outer" {\n'
        '    label="outer";\n'
        '    subgraph "cluster_outer/inner" {\n'
        '      label="inner";\n'
        '      n2 [label="outer/inner/mul\\nmul\\nf32[n]", peripheries=2];\n'
        "    }\n"
        "  }\n"
        '  n3 [label="constant\\nconstant\\nf32[]", shape=note];\n'
        '  n4 [label="add\\nadd\\nf32[]"];\n'
        "  n0 -> n2;\n"
        "  n1 -> n2;\n"
        "  n1 -> n4;\n"
        "  n3 -> n4;\n"
        '  n4 -> n1 [style=dashed, label=":="];\n'
        "}\n"
    )


# -- determinism ---------------------------------------------------------------------------------

SCRIPT = """
import sys
sys.path.insert(0, {tests!r})
import kiln as kn
from kiln.shapes import Dim
if sys.argv[1] == "shifted":  # other anonymous dims and graphs first: ids and counters differ
    junk = [Dim() for _ in range(7)]
    with kn.Graph().as_default():
        kn.exp(kn.placeholder(kn.float32, (None,)))
import test_dumps as t
for build in [t.build_simple, t.build_symbolic, t.build_scoped, t.build_update, t.build_everything]:
    for fmt in ["text", "json", "dot"]:
        sys.stdout.write(kn.dump(build(), fmt))
"""


def test_dumps_are_byte_identical_across_processes(tmp_path):
    script = tmp_path / "dump_all.py"
    script.write_text(SCRIPT.format(tests=os.path.join(ROOT, "tests")))
    outputs = []
    for seed, mode in [("1", "plain"), ("2", "shifted"), ("3", "plain")]:
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": ROOT}
        run = subprocess.run([sys.executable, str(script), mode], capture_output=True, env=env)
        assert run.returncode == 0, run.stderr.decode()
        outputs.append(run.stdout)
    assert outputs[0] == outputs[1] == outputs[2]
    assert outputs[0].count(b'"format": "kiln.graph"') == 5


def test_json_dump_is_deterministic_and_versioned():
    text = kn.dump(build_everything(), "json")
    doc = json.loads(text)
    assert (doc["format"], doc["version"]) == ("kiln.graph", 1)
    assert list(doc) == sorted(doc)  # sorted keys
    assert "0x" not in text and "NaN" not in text  # no addresses, no bare non-finite numbers
    atoms = re.findall(r'"atoms": \[([^\]]*)\]', text)
    assert {n for a in atoms for n in re.findall(r"\b\d+\b", a)} == {"0", "1"}  # renumbered


# -- the JSON round trip ------------------------------------------------------------------------


def run_both(f1, f2, feeds):
    for a, b in zip(f1(*feeds), f2(*feeds)):
        np.testing.assert_array_equal(a, b)


def test_json_round_trip_runs_with_identical_outputs_and_updates():
    f = build_everything()
    text = kn.dump(f, "json")
    g2 = kn.load_graph(text)
    kn.verify(g2)
    assert [s.name for s in g2.inputs + g2.outputs] == [s.name for s in f.inputs + f.outputs]
    assert kn.dump(g2, "json") == text and kn.dump(g2, "text") == kn.dump(f, "text")
    f2 = kn.function(g2.inputs, g2.outputs, updates=g2.updates)
    feeds = [np.random.default_rng(0).normal(size=(2, 4, 3)).astype(np.float32)]
    for _ in range(2):  # the second run sees the updated Variables and the next random draw
        run_both(f, f2, feeds)
    (v1,), (v2,) = f.graph.variables, g2.variables
    np.testing.assert_array_equal(v1.numpy(), v2.numpy())


def test_json_round_trip_of_a_graph_keeps_values_sites_and_trainable():
    g = build_scoped()
    var = g.variables[0]
    var.assign(np.full((3, 2), 0.25, np.float32))
    var.trainable = False
    g2 = kn.load_graph(kn.dump(g, "json"))
    (var2,) = g2.variables
    assert var2.name == "encoder/w" and not var2.trainable
    np.testing.assert_array_equal(var2.numpy(), var.numpy())
    assert [(n.name, n.site) for n in g2.nodes] == [(n.name, n.site) for n in g.nodes]
    f1, f2 = kn.function(g.placeholders, [g.nodes[-1].out]), kn.function(g2.inputs, g2.outputs)
    run_both(f1, f2, [np.ones((5, 3), np.float32)])


def test_json_round_trip_of_a_function_fed_an_intermediate():
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (3,), name="x")
        h = kn.exp(x)
        f = kn.function([h], h * 2.0)
    g2 = kn.load_graph(kn.dump(f, "json"))
    assert [n.op.name for n in g2.nodes][:1] == ["placeholder"] and g2.inputs[0].name == "exp"
    run_both(kn.function(f.inputs, [f.outputs[0]]), kn.function(g2.inputs, g2.outputs),
             [np.arange(3, dtype=np.float32)])  # fmt: skip


def test_json_round_trip_of_a_train_op_trains_the_same():
    """Regression: a program's assign nodes are its updates; listing them again made two."""
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, ("n",), name="x")
        v = kn.Variable(np.float32(3.0), name="v")
        loss = kn.mean(kn.square(x - v))
        f = kn.function([x], [loss, kn.optim.SGD(lr=0.1).minimize(loss)])
    g2 = kn.load_graph(kn.dump(f, "json"))
    f2 = kn.function(g2.inputs, g2.outputs, updates=g2.updates)
    for _ in range(3):
        run_both(f, f2, [np.arange(4, dtype=np.float32)])
    assert g2.variables[0].numpy() == v.numpy() != 3.0


def test_json_floats_round_trip_exactly():
    values = [0.1, -0.0, 1e-310, float("nan"), float("inf"), -float("inf"), 1 / 3]
    with kn.Graph().as_default() as g:
        x = kn.placeholder(kn.float64, (len(values),), name="x")
        for v in values:
            x = kn.random.normal((1,), mean=v, dtype=kn.float64) + x
    g2 = kn.load_graph(kn.dump(g, "json"))
    means = [n.attrs["mean"] for n in g2.nodes if n.op.name == "random_normal"]
    assert [repr(m) for m in means] == [repr(v) for v in values]


# -- random graphs: the round trip is isomorphic and computes the same ---------------------------

UNARY = [kn.neg, kn.abs, kn.tanh, kn.sigmoid, kn.square, kn.relu, kn.sin]
BINARY = [kn.add, kn.sub, kn.mul, kn.maximum]
REDUCE = [kn.sum, kn.mean, kn.amax]


def _broadcasts_safely(a, b):
    """Broadcasting that needs nothing at run time beyond equal batch sizes in the feeds."""
    for d1, d2 in zip(reversed(a), reversed(b)):
        atoms = isinstance(d1, Dim) and isinstance(d2, Dim) and d1.is_atom and d2.is_atom
        if not (d1 == d2 or 1 in (d1, d2) or atoms):
            return False
    return True


def _random_step(data, pool, rng):
    s = data.draw(st.sampled_from(pool))
    kind = data.draw(st.sampled_from(["unary", "binary", "scalar", "reduce", "reshape",
                                      "transpose", "matmul"]))  # fmt: skip
    if kind == "binary":
        other = data.draw(st.sampled_from(pool))
        if _broadcasts_safely(s.shape, other.shape):
            return data.draw(st.sampled_from(BINARY))(s, other)
    if kind == "scalar":
        return s * data.draw(st.sampled_from([2.5, -1.0, 0.5]))
    if kind == "reduce" and s.ndim:
        axis = data.draw(st.integers(-s.ndim, s.ndim - 1))
        return data.draw(st.sampled_from(REDUCE))(s, axis=axis, keepdims=data.draw(st.booleans()))
    if kind == "reshape" and s.ndim >= 2 and isinstance(s.shape[-1], int):
        return kn.reshape(s, data.draw(st.sampled_from([(-1,), (-1, s.shape[-1])])))
    if kind == "transpose" and s.ndim >= 2:
        return s.T
    if kind == "matmul" and s.ndim and isinstance(s.shape[-1], int):
        value = rng.normal(size=(s.shape[-1], data.draw(st.integers(1, 3)))).astype(np.float32)
        w = kn.Variable(value) if data.draw(st.booleans()) else kn.constant(value)
        return s @ w
    return data.draw(st.sampled_from(UNARY))(s)


def random_graph(data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    with kn.Graph().as_default() as g:
        shapes = {"a": (None, 3), "b": ("n", 3), "c": (3,)}  # fed (2, 3), (2, 3), (3,)
        pool = [kn.placeholder(kn.float32, shape, name=name) for name, shape in shapes.items()]
        for _ in range(data.draw(st.integers(1, 8))):
            pool.append(_random_step(data, pool, rng))
    g.inputs = pool[:3]
    g.outputs = [pool[-1], data.draw(st.sampled_from(pool[3:]))]
    return g


def _canon(value):
    """Attrs compared across graphs: anonymous atoms differ by identity, so count them."""
    if isinstance(value, Dim):
        named = tuple(a for a in value.atoms if isinstance(a, str))
        return ("dim", value.coeff, named, len(value.atoms) - len(named))
    return tuple(_canon(v) for v in value) if isinstance(value, tuple) else value


def _label(data):
    """A node of kn.to_networkx compared by op, shape, dtype and attrs."""
    attrs = tuple((k, _canon(v)) for k, v in data["attrs"].items())
    return (data["op"], data["shape"], data["dtype"], attrs)


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_graph_json_round_trip_is_isomorphic_and_runs_the_same(data):
    g = random_graph(data)
    text = kn.dump(g, "json")
    g2 = kn.load_graph(text)
    kn.verify(g2)
    match = nx.algorithms.isomorphism
    assert nx.is_isomorphic(kn.to_networkx(g), kn.to_networkx(g2),
                            node_match=lambda a, b: _label(a) == _label(b),
                            edge_match=match.categorical_multiedge_match("pos", None))  # fmt: skip
    assert kn.dump(g2, "json") == text and kn.dump(g2) == kn.dump(g)
    assert kn.dump(g2, "dot") == kn.dump(g, "dot")
    rng = np.random.default_rng(0)
    feeds = [rng.normal(size=s).astype(np.float32) for s in [(2, 3), (2, 3), (3,)]]
    run_both(kn.function(g.inputs, g.outputs), kn.function(g2.inputs, g2.outputs), feeds)
