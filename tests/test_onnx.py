"""ONNX export and import: every op-table row exported (graph mode and traced), run by
onnxruntime and imported back into kiln, against kiln's own values (identical through kiln's
op metadata, within tolerance through the ONNX nodes); the digits MLP and a small conv net;
symbolic dims, metadata, atomic writes and the error for an op with no ONNX form.

Needs the extra `kiln[onnx]` (onnx, onnxruntime); skipped without it.
"""

import os
import re

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from op_table import CASES  # noqa: E402
from test_networkx import same_program  # noqa: E402
from test_ops import (  # noqa: E402
    NO_SYMBOLIC,
    TOLERANCES,
    as_list,
    build,
    is_eager_capable,
    make_inputs,
    symbolic_shapes,
)

import kiln as kn  # noqa: E402
from kiln.interchange import export_onnx, import_onnx, to_onnx  # noqa: E402
from kiln.interchange.onnx_export import program_of  # noqa: E402
from kiln.interchange.onnx_rules import RULES  # noqa: E402

SOURCES = {"placeholder", "constant", "variable"}

# (ONNX op, dtype) pairs onnxruntime's CPU provider has no kernel for (it answers
# NOT_IMPLEMENTED): those rows are checked by the round trip through kiln only. A pair that
# starts working fails `test_ort_kernel_gaps_are_real`, so the list stays true.
ORT_MISSING = {
    ("Conv", "float64"), ("AveragePool", "float64"), ("Erf", "float64"), ("Det", "float64"),
    ("Tan", "float64"), ("Asin", "float64"), ("Acos", "float64"), ("Atan", "float64"),
    ("Sinh", "float64"), ("Cosh", "float64"), ("Asinh", "float64"), ("Acosh", "float64"),
    ("Atanh", "float64"), ("ConvTranspose", "float64"),
    ("ScatterElements", "float16"),  # with reduction="add"
}  # fmt: skip

_SESSION = ort.SessionOptions()
_SESSION.log_severity_level = 4  # expected NOT_IMPLEMENTED answers are not news


def session(model):
    return ort.InferenceSession(
        model.SerializeToString(), _SESSION, providers=["CPUExecutionProvider"]
    )


def run_ort(model, arrays) -> list:
    s = session(model)
    return s.run(None, {i.name: np.asarray(a) for i, a in zip(s.get_inputs(), arrays)})


def run_imported(model, arrays, kiln_ops=True) -> list:
    g = import_onnx(model, kiln_ops=kiln_ops)
    with np.errstate(all="ignore"):
        return as_list(kn.function(g.inputs, g.outputs)(*arrays))


def assert_identical(actual, expected, what):
    """Equal dtypes, shapes and values (NaNs where NaNs are)."""
    for k, (a, e) in enumerate(zip(actual, expected, strict=True)):
        a, e = np.asarray(a), np.asarray(e)
        assert (a.dtype, a.shape) == (e.dtype, e.shape), f"{what} output {k}: {a.dtype}{a.shape}"
        np.testing.assert_array_equal(a, e, err_msg=f"{what} output {k}")


def assert_same(actual, expected, case, what):
    """Equal dtypes and shapes; floats within the dtype's tolerance (the row's, if it has one)."""
    for k, (a, e) in enumerate(zip(actual, expected, strict=True)):
        a, e = np.asarray(a), np.asarray(e)
        assert (a.dtype, a.shape) == (e.dtype, e.shape), f"{what} output {k}: {a.dtype}{a.shape}"
        if e.dtype.kind != "f":
            np.testing.assert_array_equal(a, e, err_msg=f"{what} output {k}")
            continue
        rtol, atol = TOLERANCES[e.dtype.name]
        rtol = rtol if case is None or case.rtol is None else case.rtol
        atol = atol if case is None or case.atol is None else case.atol
        np.testing.assert_allclose(a, e, rtol, atol, equal_nan=True, err_msg=f"{what} output {k}")


def missing_kernel(error) -> tuple | None:
    """(ONNX op,) of onnxruntime's answer that it has no kernel for a node, else None."""
    text = str(error)
    found = re.search(r"NOT_IMPLEMENTED.*implementation for (\w+)\(\d+\) node", text)
    found = found or re.search(r"data type is not supported with (\w+) ", text)
    return (found.group(1),) if found else None


def opset_for(f):
    """The opset a program needs: BitCast came with opset 26; the default otherwise."""
    return 26 if any(n.op.name == "bitcast" for n in program_of(f).nodes) else None


def random_nodes(f) -> dict:
    """The program's outputs that are random draws themselves: output index -> node."""
    program = program_of(f)
    found = {k: s.node for k, s in enumerate(program.outputs) if s.node.op.tags & {"random"}}
    if not found and any("random" in n.op.tags for n in program.nodes):
        found[-1] = None  # random values inside: values can only be compared in kind
    return found


def assert_drawn_alike(actual, expected, randoms, what):
    """Random draws from another generator (onnxruntime's, or kiln's for another seed): the
    same dtypes and shapes, finite values, and where an output is a draw of at least 1000
    values, its distribution: moments within 5 standard errors (normal, uniform, Bernoulli),
    a uniform draw within [low, high], a Bernoulli draw of zeros and ones."""
    for k, (a, e) in enumerate(zip(actual, expected, strict=True)):
        a, e = np.asarray(a), np.asarray(e)
        assert (a.dtype, a.shape) == (e.dtype, e.shape), f"{what} output {k}: {a.dtype}{a.shape}"
        assert np.isfinite(a.astype(np.float64)).all(), f"{what} output {k}: not finite"
        node = randoms.get(k)
        if node is None:
            continue
        v, n, attrs = a.astype(np.float64).reshape(-1), a.size, node.attrs
        if node.op.name == "random_bernoulli":
            assert set(np.unique(v)) <= {0.0, 1.0}, f"{what} output {k}: not zeros and ones"
        if n < 1000:
            continue
        if node.op.name == "random_normal":
            mean, sd = attrs["mean"], attrs["std"]
            assert abs(v.mean() - mean) < 5 * sd / np.sqrt(n), f"{what}: mean {v.mean()}"
            assert abs(v.std() / sd - 1) < 5 / np.sqrt(2 * n), f"{what}: std {v.std()}"
        elif node.op.name == "random_uniform":
            low, high = attrs["low"], attrs["high"]
            assert low <= v.min() and v.max() <= high, f"{what}: outside [{low}, {high}]"
            sd = (high - low) / np.sqrt(12 * n)
            assert abs(v.mean() - (low + high) / 2) < 5 * sd, f"{what}: mean {v.mean()}"
        else:
            p = attrs["p"]
            assert abs(v.mean() - p) < 5 * np.sqrt(p * (1 - p) / n), f"{what}: mean {v.mean()}"


def check_export(case, f, arrays, want, what):
    """`f` exported: onnxruntime (where it has the kernels) and the import back give `want`;
    a program that draws random values gives draws alike (`assert_drawn_alike`), fresh on
    every run, except through kiln's op metadata, which keeps kiln's stream: identical."""
    model = to_onnx(f, opset=opset_for(f))
    randoms = random_nodes(f)
    try:
        got = run_ort(model, arrays)
    except Exception as e:  # noqa: BLE001 - onnxruntime raises its own error types
        op = missing_kernel(e)
        dtypes = {np.dtype(a.dtype).name for a in arrays} | {np.asarray(w).dtype.name for w in want}
        assert op and any((op[0], d) in ORT_MISSING for d in dtypes), f"{what}: {e}"
    else:
        if randoms:
            assert_drawn_alike(got, want, randoms, f"{what} onnxruntime")
            s = session(model)  # two runs of one session: fresh values each run, as kiln's
            feeds = {i.name: np.asarray(a) for i, a in zip(s.get_inputs(), arrays)}
            first, again = s.run(None, feeds), s.run(None, feeds)
            assert all(np.asarray(a).size <= 1 for a in first) or any(
                np.asarray(a).size > 1 and not np.array_equal(a, b) for a, b in zip(first, again)
            ), f"{what}: one onnxruntime session drew the same values twice"
        else:
            assert_same(got, want, case, f"{what} onnxruntime")
    # kiln's ops come back from the model's metadata: the program itself (isomorphic under
    # networkx's matcher: op, shape, dtype, operand positions; constants and Variables alike,
    # both initializers), and identical values
    back = import_onnx(model)
    assert same_program(kn.to_networkx(program_of(f)), kn.to_networkx(back),
                        sources_alike=True), f"{what}: another program came back"  # fmt: skip
    with np.errstate(all="ignore"):
        got = as_list(kn.function(back.inputs, back.outputs)(*arrays))
    assert_identical(got, want, f"{what} round trip")
    # the ONNX nodes themselves, through the import rules: within the dtype's tolerance
    got = run_imported(model, arrays, kiln_ops=False)
    if randoms:  # kiln's stream, for other seeds
        assert_drawn_alike(got, want, randoms, f"{what} ONNX nodes")
    else:
        assert_same(got, want, case, f"{what} ONNX nodes")


def exportable(case, graph) -> set:
    """The ops of the row's graph that have no ONNX form."""
    return {n.op.name for n in graph.nodes} - SOURCES - set(RULES)


def _row_params():
    return [pytest.param(case, id=case.id) for case in CASES]


@pytest.mark.parametrize("case", _row_params())
def test_op_table_row_exports(case):
    """Every dtype in graph mode, the first dtype traced; a row whose ops have no ONNX form
    raises GraphError naming the op and its site."""
    for k, dtype in enumerate(case.dtypes):
        arrays = [np.asarray(a) for a in make_inputs(case, dtype)]
        graph, inputs, outputs = build(case, arrays)
        with np.errstate(all="ignore"):
            f = kn.function(inputs, outputs)
            want = as_list(f(*arrays))
        missing = exportable(case, graph)
        if missing:
            with pytest.raises(kn.GraphError, match="has no ONNX form") as info:
                to_onnx(f)
            node = next(n for n in graph.nodes if n.op.name in missing)
            assert f"op {node.op.name}" in str(info.value) and f"at {node.site}" in str(info.value)
            return
        check_export(case, f, arrays, want, f"{case.id}-{dtype}")
        if k == 0 and is_eager_capable(case):
            with np.errstate(all="ignore"):
                traced = kn.trace(case.fn, *arrays)
                want = as_list(traced(*arrays))
            check_export(case, traced, arrays, want, f"{case.id}-{dtype} traced")


@pytest.mark.parametrize("case", _row_params())
def test_op_table_row_exports_with_a_symbolic_leading_dim(case):
    """The row on placeholders whose leading dim is the named dim "b" (test_ops' rule): a
    `dim_param` in the model, sizes read with Shape where ops need them, same values."""
    arrays = [np.asarray(a) for a in make_inputs(case, case.dtypes[0])]
    shapes = symbolic_shapes(arrays)
    if case.id in NO_SYMBOLIC or shapes is None:
        pytest.skip("no symbolic leading dim for this row (test_ops' rule)")
    graph, inputs, outputs = build(case, arrays, shapes)
    if exportable(case, graph):
        pytest.skip("no ONNX form (test_op_table_row_exports checks the error)")
    with np.errstate(all="ignore"):
        f = kn.function(inputs, outputs)
        want = as_list(f(*arrays))
    dims = to_onnx(f, opset=opset_for(f)).graph.input[0].type.tensor_type.shape.dim
    assert dims[0].dim_param == "b"
    check_export(case, f, arrays, want, f"{case.id} symbolic")


def test_op_table_export_coverage():
    """The share of op-table rows that export; it may only grow (measured: see docs/onnx.md)."""
    exported = 0
    for case in CASES:
        arrays = make_inputs(case, case.dtypes[0])
        graph, _, _ = build(case, arrays)
        exported += not exportable(case, graph)
    print(f"\nONNX export: {exported} of {len(CASES)} op-table rows")
    assert exported >= 889, f"{exported} of {len(CASES)} rows export"  # 889 of 1040 when written


def test_ort_kernel_gaps_are_real():
    """Each ORT_MISSING pair is still missing in the installed onnxruntime."""
    h = onnx.helper
    for op_type, dtype in sorted(ORT_MISSING):
        elem = h.np_dtype_to_tensor_dtype(np.dtype(dtype))
        x = h.make_tensor_value_info("x", elem, [2, 1, 1, 1])
        inputs, attrs, inits = ["x"], {}, []
        if op_type in ("Conv", "ConvTranspose"):
            inputs = ["x", "x"]
        elif op_type == "AveragePool":
            attrs = {"kernel_shape": [1, 1]}
        elif op_type == "ScatterElements":
            inputs, attrs = ["x", "i", "x"], {"reduction": "add"}
            inits = [onnx.numpy_helper.from_array(np.zeros((2, 1, 1, 1), np.int64), "i")]
        node = h.make_node(op_type, inputs, ["y"], **attrs)
        y = h.make_tensor_value_info("y", elem, None)
        graph = h.make_graph([node], "gap", [x], [y], inits)
        model = h.make_model(graph, opset_imports=[h.make_opsetid("", 18)])
        with pytest.raises(Exception) as info:  # noqa: PT011 - onnxruntime's own error types
            run_ort(model, [np.ones((2, 1, 1, 1), dtype)])
        assert missing_kernel(info.value) == (op_type,), str(info.value)


# -- models ------------------------------------------------------------------------------------


def _digits():
    from kiln.demo import build_graph, load_digits

    program = build_graph()
    x, labels = load_digits()
    return program, x[:37].astype(np.float32), labels[:37].astype(np.int64)


def test_digits_mlp_exports_and_imports(tmp_path):
    program, x, labels = _digits()
    f = kn.function([program.x, program.labels], [program.logits, program.accuracy])
    want = f(x, labels)
    path = tmp_path / "mlp.onnx"
    model = export_onnx(f, path)
    onnx.checker.check_model(str(path), full_check=True)
    assert [d.dim_param for d in model.graph.input[0].type.tensor_type.shape.dim] == ["batch", ""]
    assert {i.name for i in model.graph.initializer} >= {v.name for v in f.program.graph.variables}
    assert_same(run_ort(onnx.load(str(path)), [x, labels]), want, None, "mlp onnxruntime")
    # the symbolic batch: another batch size runs in both
    assert_same(run_ort(model, [x[:5], labels[:5]]), f(x[:5], labels[:5]), None, "mlp batch 5")
    g = import_onnx(path)
    assert_same(kn.function(g.inputs, g.outputs)(x, labels), want, None, "mlp round trip")
    assert g.inputs[0].shape[0] == kn.Dim("batch")


def _conv_net():
    kn.manual_seed(3)
    net = kn.nn.Sequential(
        kn.nn.Conv2d(2, 4, 3, padding=1), kn.nn.ReLU(), kn.nn.MaxPool2d(2),
        kn.nn.Conv2d(4, 3, 3, stride=2), kn.nn.Tanh(), kn.nn.Flatten(), kn.nn.Linear(3, 5),
    )  # fmt: skip
    graph = kn.Graph()
    with graph.as_default():
        x = kn.placeholder(kn.float32, ("n", 2, 8, 8), name="images")
        y = net(x)
        pooled = kn.avg_pool2d(x, 2)
        f = kn.function([x], [kn.softmax(y, axis=1), pooled])
    return f, x, y


def test_conv_net_exports_imports_and_differentiates(tmp_path):
    f, x, y = _conv_net()
    images = np.random.default_rng(0).standard_normal((3, 2, 8, 8)).astype(np.float32)
    want = f(images)
    model = export_onnx(f, tmp_path / "conv.onnx")
    ops = {n.op_type for n in model.graph.node}
    assert {"Conv", "MaxPool", "AveragePool", "Relu", "Tanh", "MatMul"} <= ops
    assert_same(run_ort(model, [images]), want, None, "conv onnxruntime")
    g = import_onnx(tmp_path / "conv.onnx")
    assert_same(kn.function(g.inputs, g.outputs)(images), want, None, "conv round trip")
    # the imported graph differentiates like the original (the same Variables' values)
    with g.as_default():
        loss = kn.sum(g.outputs[0] * g.outputs[0])
        grads = kn.grad(loss, g.variables)
    with x.graph.as_default():
        loss0 = kn.sum(f.outputs[0] * f.outputs[0])
        grads0 = kn.grad(loss0, [v for v in x.graph.variables])
    got = dict(zip([v.name for v in g.variables], kn.function(g.inputs, grads)(images)))
    ref = dict(zip([v.name for v in x.graph.variables], kn.function([x], grads0)(images)))
    assert sorted(got) == sorted(ref)
    for name, value in ref.items():
        np.testing.assert_allclose(got[name], value, rtol=1e-4, atol=1e-6, err_msg=name)
    assert "conv2d" in kn.dump(g.outputs, "text")
    # and dumps as JSON that loads back into the same program
    loaded = kn.load_graph(kn.dump(kn.function(g.inputs, g.outputs), "json"))
    assert_same(kn.function(loaded.inputs, loaded.outputs)(images), want, None, "conv json")


@pytest.mark.parametrize("opset", [18, 19, 20, 21])
def test_newer_opsets(opset):
    f, _, _ = _conv_net()
    images = np.random.default_rng(1).standard_normal((2, 2, 8, 8)).astype(np.float32)
    model = to_onnx(f, opset=opset)
    assert model.opset_import[0].version == opset
    assert_same(run_ort(model, [images]), f(images), None, f"opset {opset}")


def test_opsets_kiln_does_not_write():
    f, _, _ = _conv_net()
    for opset in (17, onnx.defs.onnx_opset_version() + 1):
        with pytest.raises(kn.GraphError, match=f"opset {opset} is not one kiln writes"):
            to_onnx(f, opset=opset)


def test_node_doc_strings_name_kiln_op_node_and_site():
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (2,), name="x")
        with kn.name_scope("layer"):
            y = kn.rsqrt(x)  # the site recorded below
        line = y.site
        f = kn.function([x], y)
    model = to_onnx(f)
    docs = [n.doc_string for n in model.graph.node]
    assert docs and all(d == f"kiln op rsqrt, node 'layer/rsqrt', created at {line}" for d in docs)
    assert [n.op_type for n in model.graph.node] == ["Sqrt", "Reciprocal"]
    assert model.opset_import[0].version == 18
    # the import restores the site from the doc string: the kiln op's, or its ONNX nodes'
    g = import_onnx(model)
    assert [(n.name, n.op.name, n.site) for n in g.nodes if n.op.name != "placeholder"] == [
        ("layer/rsqrt", "rsqrt", line)
    ]  # fmt: skip
    g = import_onnx(model, kiln_ops=False)
    assert {n.site for n in g.nodes if n.op.name in ("sqrt", "div")} == {line}
    meta = {e.key: e.value for e in model.graph.node[-1].metadata_props}
    assert meta == {"kiln": '{"attrs":{},"inputs":["x"],"op":"rsqrt"}'}


def test_dynamic_dims_off_writes_unknown_dims():
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, ("batch", 3), name="x")
        f = kn.function([x], kn.reshape(x, (-1,)))
    dims = to_onnx(f, dynamic_dims=False).graph.input[0].type.tensor_type.shape.dim
    assert not dims[0].HasField("dim_param") and not dims[0].HasField("dim_value")
    model = to_onnx(f)
    assert model.graph.output[0].type.tensor_type.shape.dim[0].dim_param == "batch*3"
    a = np.arange(12, dtype=np.float32).reshape(4, 3)
    np.testing.assert_array_equal(run_ort(model, [a])[0], a.reshape(-1))


_RNG = np.random.default_rng(0)
_X = _RNG.standard_normal((4, 3, 5)).astype(np.float32)
_S = slice(None)
_SPECIAL = np.array([[-np.inf, -np.inf, 1, np.inf, np.inf, np.nan, 2]], np.float32)
_SMALL = {d: _RNG.integers(0, 4, (3, 6)).astype(d) for d in ("int8", "uint8", "uint64", "float16")}
_SMALL["bool"] = _RNG.integers(0, 4, (3, 6)) % 2 == 0
# Cases off the op table's rows for the indexing and scan rules: a basic index beside the
# arrays, symbolic leading dims, infinities and NaN, narrow and unsigned dtypes. Expected
# values: kiln's own (checked against NumPy and PyTorch in test_ops), as for the rows.
BEYOND_ROWS = {
    "put-slice-then-array": (lambda x, i, v: kn.index_put(x, (slice(1, None), _S, i), v),
                             [_X, np.array([0, 4]), _RNG.standard_normal((3, 3, 2), np.float32)]),
    "put-int-arrays-repeats": (lambda x, i, j, v: kn.index_put(x, (0, i, j), v, True),
                               [_X, np.array([0, 0, 2]), np.array([1, 1, -1]), np.ones(3, "f4")]),
    "put-step-symbolic": (lambda x, i, v: kn.index_put(x, (slice(None, None, 2), i), v, True),
                          [_X, np.array([1, 1]), np.ones((2, 2, 5), "f4")], ("b", 3, 5)),
    "get-separated-symbolic": (lambda x, i, j: kn.getitem(x, (i, _S, j)),
                               [_X, np.array([0, 2, -1, 2]), np.array([1, -5, 4, 1])], ("b", 3, 5)),
    "get-2d-arrays": (lambda x, i, j: kn.getitem(x, (_S, i, j)),
                      [_X, np.array([[0, 2], [1, -1]]), np.array([4, 0])]),
    "logcumsumexp-infinities-nan": (lambda x: kn.logcumsumexp(x, 1), [_SPECIAL]),
    "cummin-nan": (lambda x: kn.cummin(x, 1).indices, [_SPECIAL]),
    "cumprod-float16": (lambda x: kn.cumprod(x, 1),
                        [_RNG.uniform(0.5, 1.5, (3, 9)).astype(np.float16)]),
    "cumprod-int8": (lambda x: kn.cumprod(x, 0), [_RNG.integers(-3, 4, (6, 2)).astype(np.int8)]),
    "cumprod-symbolic": (lambda x: kn.cumprod(x, 0), [_X], ("b", 3, 5)),
    "cummax-symbolic": (lambda x: kn.cummax(x, 0).indices, [_X], ("b", 3, 5)),
    **{f"cummax-{d}": (lambda x: kn.cummax(x, 1).indices, [a]) for d, a in _SMALL.items()},
    **{f"cummin-{d}": (lambda x: kn.cummin(x, 1).indices, [a]) for d, a in _SMALL.items()},
}  # fmt: skip


@pytest.mark.parametrize("label", sorted(BEYOND_ROWS))
def test_index_and_scan_rules_beyond_the_rows(label):
    fn, arrays, *lead = BEYOND_ROWS[label]
    with kn.Graph().as_default():
        shapes = [lead[0] if k == 0 and lead else a.shape for k, a in enumerate(arrays)]
        xs = [
            kn.placeholder(a.dtype, s, name=f"a{k}") for k, (a, s) in enumerate(zip(arrays, shapes))
        ]
        f = kn.function(xs, fn(*xs))
    with np.errstate(all="ignore"):
        want = as_list(f(*arrays))
    check_export(None, f, arrays, want, label)


def test_export_error_names_op_and_site_and_writes_nothing(tmp_path):
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (3, 3), name="x")
        y = kn.linalg.inv(x)
        f = kn.function([x], y)
    path = tmp_path / "bad.onnx"
    with pytest.raises(kn.GraphError, match=r"op inv has no ONNX form") as info:
        export_onnx(f, path)
    assert f"created at {y.site}" in str(info.value) and "test_onnx.py" in str(info.value)
    assert not os.listdir(tmp_path)


def test_bitcast_needs_opset_26():
    """ONNX has BitCast from opset 26: an older opset is refused, naming the one needed."""
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (2, 4), name="x")
        f = kn.function([x], x.view(kn.int16))
    with pytest.raises(kn.GraphError, match=r"op bitcast has no ONNX form at opset 18 .*opset=26"):
        to_onnx(f)
    a = np.array([[1.5, -2.0, np.inf, np.nan], [0.0, -0.0, 1e-40, 3.0]], np.float32)
    got = run_ort(to_onnx(f, opset=26), [a])[0]
    np.testing.assert_array_equal(got, a.view(np.int16))  # NumPy's view: little-endian halves


def test_random_draws_fresh_values_per_run_and_keeps_kilns_stream_through_metadata():
    kn.manual_seed(5)
    with kn.Graph().as_default():
        y = kn.random.uniform((2000,), -1.0, 3.0)
        f = kn.function([], y)
    model = to_onnx(f)
    assert [n.op_type for n in model.graph.node] == ["RandomUniform"]
    assert not any(a.name == "seed" for a in model.graph.node[0].attribute)
    s = session(model)
    first, second = s.run(None, {})[0], s.run(None, {})[0]
    assert not np.array_equal(first, second)  # fresh values on every run, as kiln's
    assert -1.0 <= first.min() and first.max() <= 3.0
    back = import_onnx(model)  # kiln's op and seed from the metadata: kiln's own values
    np.testing.assert_array_equal(kn.function(back.inputs, back.outputs)()[0], f())


def test_export_takes_graphs_and_traced_functions(tmp_path):
    g = kn.Graph()
    with g.as_default():
        x = kn.placeholder(kn.float32, ("n",), name="x")
        g.inputs, g.outputs = [x], [kn.exp(x) * 2.0]
    a = np.linspace(-1, 1, 5, dtype=np.float32)
    np.testing.assert_allclose(run_ort(to_onnx(g), [a])[0], np.exp(a) * 2, rtol=1e-6)
    traced = kn.trace(lambda t: kn.tanh(t).sum(), a)
    np.testing.assert_allclose(run_ort(to_onnx(traced), [a])[0], np.tanh(a).sum(), rtol=1e-6)
    compiled = kn.compile(lambda t: kn.sigmoid(t) * 3.0)
    with pytest.raises(kn.GraphError, match="has not run yet"):
        to_onnx(compiled)
    compiled(a)
    got = run_ort(to_onnx(compiled), [a])[0]
    np.testing.assert_allclose(got, 3 / (1 + np.exp(-a)), rtol=1e-6)
    with pytest.raises(TypeError, match="export_onnx"):
        to_onnx(42)


def test_export_takes_a_module_with_example_inputs(tmp_path):
    kn.manual_seed(5)
    net = kn.nn.Sequential(kn.nn.Conv2d(2, 3, 3, padding=1), kn.nn.ReLU(), kn.nn.Flatten(),
                           kn.nn.Linear(3 * 4 * 4, 2))  # fmt: skip
    images = np.random.default_rng(4).standard_normal((2, 2, 4, 4)).astype(np.float32)
    model = export_onnx(net, tmp_path / "net.onnx", args=(images,))
    want = net(kn.tensor(images)).detach().numpy()  # eager mode's values
    np.testing.assert_allclose(run_ort(model, [images])[0], want, rtol=1e-5, atol=1e-6)
    assert {v.name for v in model.graph.initializer} >= {"0/weight", "3/weight"}
    with pytest.raises(TypeError, match=r"needs example inputs to trace a Sequential"):
        to_onnx(net)


def test_import_rejects_unknown_ops_and_bad_files(tmp_path):
    h = onnx.helper
    x = h.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2])
    node = h.make_node("Hardmax", ["x"], ["y"], name="hm")
    model = h.make_model(h.make_graph([node], "g", [x], [x]))
    with pytest.raises(kn.GraphError, match=r"ONNX node 'hm' \(Hardmax\) has no kiln form"):
        import_onnx(model)
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x08\x07garbage" * 3)
    with pytest.raises(kn.GraphError, match="cannot read an ONNX model"):
        import_onnx(bad)


def test_import_needs_static_shapes():
    h = onnx.helper
    x = h.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 3])
    s = h.make_tensor_value_info("s", onnx.TensorProto.INT64, [2])
    y = h.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)
    node = h.make_node("Reshape", ["x", "s"], ["y"], name="r")
    model = h.make_model(h.make_graph([node], "g", [x, s], [y]))
    with pytest.raises(
        kn.GraphError, match=r"'r' \(Reshape\) needs its shape \('s'\) as a constant"
    ):
        import_onnx(model)


def test_exported_rows_are_deterministic():
    case = next(c for c in CASES if c.op == "index")
    arrays = make_inputs(case, case.dtypes[0])
    texts = set()
    for _ in range(2):
        _, inputs, outputs = build(case, arrays)
        texts.add(to_onnx(kn.function(inputs, outputs)).SerializeToString())
    assert len(texts) == 1


def test_import_constants_fix_shape_inputs():
    h = onnx.helper
    x = h.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 3])
    s = h.make_tensor_value_info("s", onnx.TensorProto.INT64, [2])
    y = h.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)
    node = h.make_node("Reshape", ["x", "s"], ["y"], name="r")
    model = h.make_model(h.make_graph([node], "g", [x, s], [y]))
    g = import_onnx(model, constants={"s": np.array([3, -1], np.int64)})
    assert [i.name for i in g.inputs] == ["x"]
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(kn.function(g.inputs, g.outputs)(a)[0], a.reshape(3, 2))


def test_gradient_program_exports():
    """A program of the conv net's gradients (conv, pooling and relu backward kernels) runs
    under onnxruntime with kiln's values."""
    f, x, _ = _conv_net()
    with x.graph.as_default():
        loss = kn.sum(f.outputs[0] * f.outputs[0]) + kn.sum(f.outputs[1])
        grads = kn.grad(loss, [x, *x.graph.variables])
        g = kn.function([x], grads)
    images = np.random.default_rng(2).standard_normal((2, 2, 8, 8)).astype(np.float32)
    model = to_onnx(g)
    assert {"ConvTranspose", "ScatterElements"} <= {n.op_type for n in model.graph.node}
    got, want = run_ort(model, [images]), g(images)
    for k, (a, b) in enumerate(zip(got, want, strict=True)):  # float32 sums in other orders
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5, err_msg=f"gradient {k}")


def test_kiln_ops_come_back_only_from_untouched_metadata():
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (4,), name="x")
        f = kn.function([x], kn.log1p(x))
    model = to_onnx(f)
    assert len(model.graph.node) > 1  # ONNX has no log1p: a composition
    ops = lambda g: sorted({n.op.name for n in g.nodes} - SOURCES)  # noqa: E731
    assert ops(import_onnx(model)) == ["log1p"]
    assert "log1p" not in ops(import_onnx(model, kiln_ops=False))
    # metadata that no longer fits the model (an op kiln does not have) -> the ONNX nodes
    edited = onnx.ModelProto()
    edited.CopyFrom(model)
    entry = edited.graph.node[-1].metadata_props[0]
    entry.value = entry.value.replace('"log1p"', '"no_such_op"')
    assert "log1p" not in ops(import_onnx(edited))
    entry.value = entry.value.replace('"no_such_op"', '"placeholder"')  # an op kiln never writes
    g = import_onnx(edited)
    assert [n.op.name for n in g.nodes].count("placeholder") == 1 and "log1p" not in ops(g)
    a = np.array([0.0, 1e-8, 0.5, 3.0], np.float32)
    np.testing.assert_allclose(run_imported(edited, [a])[0], np.log1p(a), rtol=1e-6)


@pytest.mark.parametrize("rank", [1, 2, 3])
def test_imported_conv_transpose_matches_onnxruntime(rank):
    """ConvTranspose with groups, strides, dilations, asymmetric pads and output_padding, 1-d
    to 3-d (3-d through kiln's sum over kernel offsets): onnxruntime's values."""
    h = onnx.helper
    rng = np.random.default_rng(rank)
    x = rng.standard_normal((2, 4, *[3, 4, 2][:rank])).astype(np.float32)
    w = rng.standard_normal((4, 3, *[2, 3, 2][:rank])).astype(np.float32)
    b = rng.standard_normal(6).astype(np.float32)
    pads = [1, 0, 0][:rank] + [0, 1, 1][:rank]
    attrs = dict(group=2, strides=[2, 1, 3][:rank], dilations=[1, 2, 1][:rank], pads=pads,
                 output_padding=[1, 0, 2][:rank])  # fmt: skip
    node = h.make_node("ConvTranspose", ["x", "w", "b"], ["y"], **attrs)
    graph = h.make_graph(
        [node], "ct", [h.make_tensor_value_info("x", onnx.TensorProto.FLOAT, x.shape)],
        [h.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)],
        [onnx.numpy_helper.from_array(w, "w"), onnx.numpy_helper.from_array(b, "b")],
    )  # fmt: skip
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 18)])
    want = run_ort(model, [x])[0]
    np.testing.assert_allclose(run_imported(model, [x])[0], want, rtol=1e-5, atol=1e-5)


STORAGE = [kn.float8_e4m3fn, kn.float8_e5m2, kn.float8_e4m3fnuz, kn.float8_e5m2fnuz, kn.int4,
           kn.uint4, kn.int2, kn.uint2]  # fmt: skip


@pytest.mark.parametrize("dtype", STORAGE, ids=str)
def test_storage_dtype_casts_export_and_round_trip(dtype):
    """kiln's casts (PyTorch's saturation: only to float8_e4m3fn; NumPy's truncate-and-wrap to
    small ints) written as ONNX Casts give onnxruntime's values, and import back."""
    x = kn.placeholder(kn.float32, (10,), name="x")
    f = kn.function([x], [kn.cast(kn.cast(x, dtype), kn.float32)])
    xv = np.array([np.inf, -1e6, 470.0, 3.3, -7.6, 2.5, -0.4, 100.7, 0.0, np.nan], np.float32)
    if dtype.name.startswith(("int", "uint")):
        xv = xv[2:-1]  # float to int of inf or NaN is undefined in ONNX
        f = kn.function([x := kn.placeholder(kn.float32, (7,), name="x")],
                        [kn.cast(kn.cast(x, dtype), kn.float32)])  # fmt: skip
    if dtype in (kn.int2, kn.uint2):
        with pytest.raises(kn.GraphError, match="opset 25"):
            to_onnx(f, opset=21)
    model = to_onnx(f, opset=25 if dtype in (kn.int2, kn.uint2) else 21)
    want = f(xv)
    assert_identical(run_ort(model, [xv]), want, "onnxruntime")
    assert_identical(run_imported(model, [xv]), want, "imported")


@pytest.mark.parametrize("mode", ["up", "down", "nearest"])
@pytest.mark.parametrize("saturate", [0, 1])
def test_import_cast_to_e8m0_is_onnxs(mode, saturate):
    """ONNX's cast to float8_e8m0fnu, compared with onnx.numpy_helper.to_float8e8m0."""
    h, tp = onnx.helper, onnx.TensorProto
    node = h.make_node("Cast", ["x"], ["y"], to=tp.FLOAT8E8M0, round_mode=mode, saturate=saturate)
    graph = h.make_graph([node], "g", [h.make_tensor_value_info("x", tp.FLOAT, [12])],
                         [h.make_tensor_value_info("y", tp.FLOAT8E8M0, [12])])  # fmt: skip
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 24)])
    big = np.float32(2.0**127) * np.float32(1.5)
    xv = np.array([0.0, 1e-40, 0.3, 0.75, 1.0, 1.5, 3.0, -5.0, big, np.inf, np.nan, 6.0],
                  np.float32)  # fmt: skip
    want = onnx.numpy_helper.to_float8e8m0(xv, saturate=bool(saturate), round_mode=mode)
    got = run_imported(model, [xv], kiln_ops=False)[0]
    assert got.dtype == kn.float8_e8m0fnu
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))
