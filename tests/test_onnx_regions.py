"""Region ops through ONNX: `cond`, `while_loop`, `scan` and `fori_loop` export as If, Loop and
Scan, pass onnx.checker's full check, and run under onnxruntime to kiln's values; importing
the models gives kiln region ops back, with identical values. ONNX's own Loop and Scan forms
(trip counts, conditions, scan axes and directions) import to onnxruntime's values.
Expected values: kiln's own run of the graph (and onnxruntime's, which must agree)."""

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from test_networkx import same_program  # noqa: E402

import kiln as kn  # noqa: E402
from kiln.interchange import import_onnx, to_onnx  # noqa: E402
from kiln.interchange.onnx_export import program_of  # noqa: E402

RNG = np.random.default_rng(0)


def run_ort(model, arrays):
    session = ort.InferenceSession(model.SerializeToString())
    return session.run(None, {i.name: a for i, a in zip(session.get_inputs(), arrays)})


def region_ops(graph) -> set:
    return {n.op.name for n in graph.nodes} & {"cond", "while_loop", "scan"}


def round_trip(f, feeds_list, onnx_ops, rtol=1e-6):
    """Exports `f`, checks the model, and compares onnxruntime and the re-imported graph with
    kiln on each feed list; returns the model. The import is the exported program itself
    (isomorphic under networkx's matcher, region ops included); imported from the ONNX nodes
    alone (`kiln_ops=False`: If, Loop and Scan as such) it gives the same values too."""
    model = to_onnx(f)
    onnx.checker.check_model(model, full_check=True)
    assert onnx_ops <= {n.op_type for n in model.graph.node}
    g = import_onnx(model)
    assert same_program(kn.to_networkx(program_of(f)), kn.to_networkx(g), sources_alike=True)
    g_nodes = import_onnx(model, kiln_ops=False)
    assert region_ops(g_nodes) == region_ops(g) == region_ops(program_of(f))
    for feeds in feeds_list:
        want = f(*feeds)
        want = want if isinstance(want, list) else [want]
        for k, (a, e) in enumerate(zip(run_ort(model, feeds), want, strict=True)):
            np.testing.assert_allclose(a, e, rtol=rtol, atol=1e-6, err_msg=f"onnxruntime {k}")
        for graph, what in ((g, "kiln ops"), (g_nodes, "ONNX nodes")):
            got = kn.function(graph.inputs, graph.outputs)(*feeds)
            for k, (a, e) in enumerate(zip(got, want, strict=True)):
                assert a.dtype == e.dtype
                np.testing.assert_allclose(a, e, rtol=rtol, atol=1e-6, err_msg=f"{what} {k}")
                if what == "kiln ops":
                    np.testing.assert_array_equal(a, e, err_msg=f"kiln -> ONNX -> kiln {k}")
    return model


def test_cond_exports_as_if():
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, ("n",), name="x")
        w = kn.placeholder(kn.float32, (), name="w")
        y, z = kn.cond(x.sum() > 0, lambda v: (v * w, v.sum()), lambda v: (-v, w + 1.0), x)
        f = kn.function([x, w], [y, z])
    feeds = [[np.array([1, 2, 3], np.float32), np.float32(2)],
             [np.array([-1, -2], np.float32), np.float32(5)]]  # fmt: skip
    model = round_trip(f, [[np.asarray(a) for a in fs] for fs in feeds], {"If"})
    (node,) = [n for n in model.graph.node if n.op_type == "If"]
    # the captured `w` is read from the enclosing graph by name, as ONNX's subgraphs do
    then = onnx.helper.get_attribute_value(node.attribute[0])
    assert len(then.input) == 0 and "w" in {i for n in then.node for i in n.input}


def test_while_loop_exports_as_loop():
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (2,), name="x")
        limit = kn.placeholder(kn.float32, (), name="limit")
        v, k = kn.while_loop(lambda c: c[0].sum() < limit, lambda c: (c[0] * 2.0 + 1.0, c[1] + 1),
                             (x, kn.constant(np.int64(0))))  # fmt: skip
        f = kn.function([x, limit], [v, k])
    feeds = [[np.array([1, 2], np.float32), np.array(100, np.float32)],
             [np.array([50, 60], np.float32), np.array(10, np.float32)]]  # fmt: skip
    round_trip(f, feeds, {"Loop"})


@pytest.mark.parametrize("reverse", [False, True])
def test_scan_exports_as_scan(reverse):
    def step(c, x):
        h = kn.tanh(c[0] @ w + x["a"]) * x["b"]
        return (h, c[1] + h.sum()), h * 2.0

    with kn.Graph().as_default():
        xs_a = kn.placeholder(kn.float32, ("t", "n", 3), name="a")
        xs_b = kn.placeholder(kn.float32, ("t", 1, 1), name="b")
        h0 = kn.placeholder(kn.float32, ("n", 3), name="h0")
        w = kn.constant(RNG.standard_normal((3, 3)).astype(np.float32))
        (h, total), ys = kn.scan(step, (h0, kn.constant(np.float32(0))), {"a": xs_a, "b": xs_b},
                                 reverse=reverse)  # fmt: skip
        f = kn.function([xs_a, xs_b, h0], [h, total, ys])
    feeds = [[RNG.standard_normal(s).astype(np.float32) for s in ((t, 2, 3), (t, 1, 1), (2, 3))]
             for t in (4, 1)]  # fmt: skip
    model = round_trip(f, feeds, {"Scan"}, rtol=1e-5)
    (node,) = [n for n in model.graph.node if n.op_type == "Scan"]
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    assert attrs["scan_input_directions"] == [int(reverse)] * 2


def test_fori_loops_and_a_scan_without_xs():
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float64, (), name="x")
        n = kn.placeholder(kn.int64, (), name="n")
        static = kn.fori_loop(0, 3, lambda i, v: v * x + kn.cast(i, kn.float64),
                              kn.constant(1.0, kn.float64))  # fmt: skip
        dynamic = kn.fori_loop(0, n, lambda i, v: v + x, kn.constant(0.0, kn.float64))
        c, ys = kn.scan(lambda c, _: (c * 2.0, c), x, None, length=4)
        f = kn.function([x, n], [static, dynamic, c, ys])
    model = round_trip(f, [[np.array(2.0), np.array(5, np.int64)]], {"Scan", "Loop"})
    assert f(np.array(2.0), np.array(5, np.int64))[0] == 12.0  # ((1*2 + 0)*2 + 1)*2 + 2
    assert sum(n.op_type == "Scan" for n in model.graph.node) == 2


def test_nested_regions():
    def step(c, x):
        y = kn.cond(x > 0, lambda a: a * x, lambda a: a - 1.0, c)
        return y, y

    with kn.Graph().as_default():
        xs = kn.placeholder(kn.float32, (5,), name="xs")
        c, ys = kn.scan(step, kn.constant(np.float32(1)), xs)
        f = kn.function([xs], [c, ys])
    round_trip(f, [[np.array([2, -1, 3, 0.5, -2], np.float32)]], {"Scan"})


def test_lstm_exports_and_round_trips():
    kn.manual_seed(0)
    lstm = kn.nn.LSTM(3, 4, num_layers=2, batch_first=True)
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, ("n", 5, 3), name="x")
        out, (h, c) = lstm(x)
        f = kn.function([x], [out, h, c])
    feeds = [[RNG.standard_normal((b, 5, 3)).astype(np.float32)] for b in (2, 1)]
    model = round_trip(f, feeds, {"Scan"}, rtol=1e-5)
    # the imported graph differentiates through its scans as the original does (identical
    # gradients: the same program)
    g = import_onnx(model)
    with g.as_default():
        grads = kn.grad(kn.sum(g.outputs[0] * g.outputs[0]), g.variables)
    got = dict(zip([v.name for v in g.variables], kn.function(g.inputs, grads)(*feeds[0])))
    with x.graph.as_default():
        params = [v for v in x.graph.variables if v.name.startswith(("weight", "bias"))]
        want = kn.function([x], kn.grad(kn.sum(out * out), params))(*feeds[0])
    assert len(params) == 8
    for v, w in zip(params, want):
        np.testing.assert_array_equal(got[v.name], w, err_msg=v.name)


def _model(nodes, inputs, outputs, opset=17, initializer=()):
    h = onnx.helper
    model = h.make_model(h.make_graph(nodes, "g", inputs, outputs, list(initializer)),
                         opset_imports=[h.make_opsetid("", opset)])  # fmt: skip
    onnx.checker.check_model(model, full_check=True)
    return model


def _vi(name, elem, shape):
    return onnx.helper.make_tensor_value_info(name, elem, shape)


def _imported(model, feeds, want_ops):
    g = import_onnx(model)
    assert region_ops(g) == want_ops
    got = kn.function(g.inputs, g.outputs)(*feeds)
    for a, e in zip(got, run_ort(model, feeds), strict=True):
        np.testing.assert_allclose(a, e, rtol=1e-6)


def test_import_onnx_loop_with_trip_count_and_condition():
    """Loop(M, cond): runs while i < M and the body's condition holds."""
    h, tp = onnx.helper, onnx.TensorProto
    body = h.make_graph(
        [h.make_node("Add", ["v_in", "step"], ["v_out"]),
         h.make_node("ReduceSum", ["v_out"], ["s"], keepdims=0),
         h.make_node("Less", ["s", "cap"], ["keep"])],
        "body", [_vi("i", tp.INT64, []), _vi("c", tp.BOOL, []), _vi("v_in", tp.FLOAT, [2])],
        [_vi("keep", tp.BOOL, []), _vi("v_out", tp.FLOAT, [2])],
    )  # fmt: skip
    model = _model([h.make_node("Loop", ["M", "go", "v0"], ["v"], body=body)],
                   [_vi("M", tp.INT64, []), _vi("go", tp.BOOL, []), _vi("v0", tp.FLOAT, [2]),
                    _vi("step", tp.FLOAT, [2]), _vi("cap", tp.FLOAT, [])],
                   [_vi("v", tp.FLOAT, [2])])  # fmt: skip
    step, v0 = np.array([1, 2], np.float32), np.zeros(2, np.float32)
    for m, go, cap in [(10, True, 100.0), (10, True, 7.0), (2, True, 100.0), (10, False, 1.0)]:
        feeds = [np.array(m, np.int64), np.array(go), v0, step, np.array(cap, np.float32)]
        _imported(model, feeds, {"while_loop"})


def test_import_onnx_loop_with_scan_outputs():
    """A Loop with a trip count known when importing and a condition passed on unchanged
    collects scan outputs: kiln's scan."""
    h, tp = onnx.helper, onnx.TensorProto
    body = h.make_graph(
        [h.make_node("Identity", ["c"], ["c_out"]),
         h.make_node("Cast", ["i"], ["fi"], to=tp.FLOAT),
         h.make_node("Mul", ["v_in", "fi"], ["v_out"]),
         h.make_node("Add", ["v_out", "v_in"], ["y"])],
        "body", [_vi("i", tp.INT64, []), _vi("c", tp.BOOL, []), _vi("v_in", tp.FLOAT, [2])],
        [_vi("c_out", tp.BOOL, []), _vi("v_out", tp.FLOAT, [2]), _vi("y", tp.FLOAT, [2])],
    )  # fmt: skip
    trip = h.make_tensor("M", tp.INT64, [], [4])
    model = _model([h.make_node("Loop", ["M", "", "v0"], ["v", "ys"], body=body)],
                   [_vi("v0", tp.FLOAT, [2])],
                   [_vi("v", tp.FLOAT, [2]), _vi("ys", tp.FLOAT, [4, 2])],
                   initializer=[trip])  # fmt: skip
    _imported(model, [np.array([1.0, -2.0], np.float32)], {"scan"})


@pytest.mark.parametrize(("in_dirs", "out_dirs", "in_axes", "out_axes"),
                         [([0, 1], [1], [0, 1], [1]), ([1, 1], [1], [0, 0], [0])])  # fmt: skip
def test_import_onnx_scan_axes_and_directions(in_dirs, out_dirs, in_axes, out_axes):
    h, tp = onnx.helper, onnx.TensorProto
    body = h.make_graph(
        [h.make_node("Add", ["s_in", "a"], ["t"]), h.make_node("Mul", ["t", "b"], ["s_out"]),
         h.make_node("Sub", ["s_out", "a"], ["y"])],
        "body", [_vi("s_in", tp.FLOAT, [2]), _vi("a", tp.FLOAT, [2]), _vi("b", tp.FLOAT, [2])],
        [_vi("s_out", tp.FLOAT, [2]), _vi("y", tp.FLOAT, [2])],
    )  # fmt: skip
    b_shape = [3, 2] if in_axes[1] == 0 else [2, 3]
    y_shape = [3, 2] if out_axes[0] == 0 else [2, 3]
    node = h.make_node("Scan", ["s0", "as", "bs"], ["s", "ys"], body=body, num_scan_inputs=2,
                       scan_input_directions=in_dirs, scan_output_directions=out_dirs,
                       scan_input_axes=in_axes, scan_output_axes=out_axes)  # fmt: skip
    model = _model([node], [_vi("s0", tp.FLOAT, [2]), _vi("as", tp.FLOAT, [3, 2]),
                            _vi("bs", tp.FLOAT, b_shape)],
                   [_vi("s", tp.FLOAT, [2]), _vi("ys", tp.FLOAT, y_shape)])  # fmt: skip
    feeds = [RNG.standard_normal(s).astype(np.float32) for s in ([2], [3, 2], b_shape)]
    _imported(model, feeds, {"scan"})


def test_a_while_loop_in_a_cond_in_a_scan():
    """Three levels of subgraphs, a float predicate (true where nonzero, cast to bool for
    ONNX's If), and captures from two levels up."""

    def step(c, x):
        def grow(a):
            return kn.while_loop(lambda v: v.sum() < 50.0 * x, lambda v: v * 2.0 + x, a)

        y = kn.cond(x, grow, lambda a: a - 1.0, c)
        return y, y.sum()

    with kn.Graph().as_default():
        xs = kn.placeholder(kn.float32, (5,), name="xs")
        c0 = kn.placeholder(kn.float32, (2,), name="c0")
        c, ys = kn.scan(step, c0, xs)
        f = kn.function([xs, c0], [c, ys])
    feeds = [np.array([2, 0, 3, 0.5, 0], np.float32), np.array([1, 2], np.float32)]
    round_trip(f, [feeds], {"Scan"})
