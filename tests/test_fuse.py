"""`fuse_elementwise` and the `fused` kernel: golden before/after text, group structure and
boundaries, malformed programs, the blocked, whole-array and numba paths, out= (also in place),
transient memory, and hypothesis graphs that give the same values with and without fusion.
"""

import tracemalloc
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kiln as kn
from kiln.graph.opdef import REGISTRY
from kiln.graph.printer import format_graph
from kiln.ops import fused as fused_ops
from kiln.ops.fused_codegen import FULL, ONE, loop_source, numba_loop
from kiln.passes.fuse import find_groups, fuse_elementwise
from kiln.passes.program import extract

FUSED = REGISTRY["fused"]


def program_graph(fetches, feeds, updates=None):
    return extract(fetches, feeds, updates or {})


def fused_nodes(graph):
    return [n for n in graph.nodes if n.op.name == "fused"]


def run(graph, *arrays):
    """Runs a program graph as it is: no passes (the default pipeline would fuse it too)."""
    return kn.function(graph.inputs, graph.outputs, passes=[])(*arrays)


# -- golden text and structure -------------------------------------------------------------


def small_chain():
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (3,), name="x")
        y = kn.placeholder(kn.float32, (3,), name="y")
        z = kn.exp(kn.tanh(x * y + x))
    return program_graph([z], [x, y])


def test_fuse_elementwise_golden_text():
    graph = small_chain()
    assert format_graph(graph, sites=False) == (
        "{ lambda x:f32[3] y:f32[3] .\n"
        "    t0:f32[3] = mul x y\n"
        "    t1:f32[3] = add t0 x\n"
        "    t2:f32[3] = tanh t1\n"
        "    t3:f32[3] = exp t2\n"
        "  in (t3) }\n"
    )
    assert format_graph(fuse_elementwise(graph), sites=False) == (
        "{ lambda x:f32[3] y:f32[3] .\n"
        "    t0:f32[3] = fused[outputs=(3,) program=(('mul',(('in',0),('in',1)),()),"
        "('add',(('eq',0),('in',0)),()),('tanh',(('eq',1),),()),('exp',(('eq',2),),()))] x y\n"
        "  in (t0) }\n"
    )


def test_fuse_elementwise_makes_one_node_with_the_group_inputs_and_site():
    graph = small_chain()
    fused = fuse_elementwise(graph)
    kn.verify(fused)
    (node,) = fused_nodes(fused)
    assert [i.name for i in node.inputs] == ["x", "y"]
    assert fused.outputs == [node.out] and fused.inputs == list(node.inputs)
    assert node.site == graph.nodes[-1].site and node.site.startswith("test_fuse.py:")
    assert node.out.shape == (3,) and node.out.dtype == np.float32
    assert graph is not fused and len(graph.nodes) == 6, "the pass is pure"


def test_fetched_and_outside_used_values_are_results_of_one_group():
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (4, 3), name="x")
        a = kn.tanh(x * 2.0)  # fetched: a result of the group
        b = kn.exp(a) + 1.0
        c = kn.sin(b) * b  # b used by sum below too: a result of the group
        d = kn.sum(b, axis=0)
    graph = program_graph([a, c, d], [x])
    fused = fuse_elementwise(graph)
    kn.verify(fused)
    (node,) = fused_nodes(fused)
    assert [eq[0] for eq in node.attrs["program"]] == ["mul", "tanh", "exp", "add", "sin", "mul"]
    assert node.attrs["outputs"] == (1, 3, 5) and node.out.dtype == kn.dtypes.TUPLE
    gets = [n for n in fused.nodes if n.op.name == "get"]
    assert [(g.attrs["index"], g.inputs[0] is node.out) for g in gets] == [(0, True), (1, True),
                                                                          (2, True)]  # fmt: skip
    assert [o.node.op.name for o in fused.outputs] == ["get", "get", "reduce_sum"]
    assert fused.outputs[2].node.inputs[0] is gets[1].out, "the sum reads b's result"
    x_value = np.linspace(-2, 2, 12, dtype=np.float32).reshape(4, 3)
    for got, want in zip(run(fused, x_value), run(graph, x_value)):
        kn.testing.assert_close(got, want)  # a hot program's loop: libm within 2 ulp


def test_update_values_are_group_results():
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (3,), name="x")
        w = kn.Variable(np.ones(3, np.float32), name="w")
        loss = kn.sum(w * x)
        graph = program_graph([loss], [x], {w: w * 0.9 - x * 0.1})
    fused = fuse_elementwise(graph)
    kn.verify(fused)
    (node,) = fused_nodes(fused)
    assert fused.updates[w] is node.out
    assert [eq[0] for eq in node.attrs["program"]] == ["mul", "mul", "sub"]


def test_constants_of_equal_value_are_one_input():
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (3,), name="x")
        y = kn.tanh(x * 0.5) * 0.5 + 2.0
    fused = fuse_elementwise(program_graph([y], [x]))
    kn.verify(fused)
    (node,) = fused_nodes(fused)
    assert [i.name for i in node.inputs] == ["x", "constant", "constant_2"]  # 0.5 and 2.0
    assert [eq[1] for eq in node.attrs["program"]] == [
        (("in", 0), ("in", 1)), (("eq", 0),), (("eq", 1), ("in", 1)), (("eq", 2), ("in", 2)),
    ]  # fmt: skip


def test_random_reduction_and_lone_nodes_stay_as_they_are():
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (3, 4), name="x")
        noise = kn.random.normal((3, 4))
        y = kn.sum(kn.tanh(x), axis=0)  # a lone tanh: a group of one is no group
        z = kn.exp(noise * 2.0) + y
    graph = program_graph([z], [x])
    fused = fuse_elementwise(graph)
    kn.verify(fused)
    assert [n.op.name for n in fused.nodes] == [
        "placeholder", "random_normal", "tanh", "reduce_sum", "constant", "fused",
    ]  # fmt: skip
    assert [eq[0] for eq in fused.nodes[-1].attrs["program"]] == ["mul", "exp", "add"]
    assert [n.name for n in fused.nodes[:5]] == [n.name for n in graph.nodes[:5]]


def test_members_must_broadcast_to_the_result():
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (3, 1), name="x")
        y = kn.placeholder(kn.float32, (4,), name="y")
        n = kn.placeholder(kn.float32, (None,), name="n")
        z = kn.tanh(x * 2.0) + y  # tanh's (3,1) broadcasts to the result's (3,4): it joins
        w = kn.exp(kn.tanh(n) * y)  # tanh's (_,) is not provably (4,): it ends the group
    graph = program_graph([z, w], [x, y, n])
    groups = [[m.op.name for m in ms] for ms in find_groups(graph).values()]
    assert groups == [["mul", "tanh", "add"], ["mul", "exp"]]


def test_fused_node_takes_the_name_of_the_node_it_stands_for():
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (3,), name="fused")
        with kn.name_scope("layer"):
            a = kn.tanh(x * 2.0)
        b = kn.sum(a)
        c = kn.exp(b) * 3.0
    fused = fuse_elementwise(program_graph([c], [x]))
    kn.verify(fused)
    assert [n.name for n in fused_nodes(fused)] == ["layer/tanh", c.name]
    assert fused.inputs[0].name == "fused"


def test_fusing_twice_changes_nothing():
    once = fuse_elementwise(small_chain())
    assert format_graph(fuse_elementwise(once)) == format_graph(once)


def test_fused_graph_round_trips_through_json():
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (3,), name="x")
        y = kn.cast(kn.where(x > 0.0, kn.softplus(x, beta=2.0), -x), kn.float64) * 2.0
    fused = fuse_elementwise(program_graph([y], [x]))
    text = kn.dump(fused, "json")
    loaded = kn.load_graph(text)
    kn.verify(loaded)
    assert kn.dump(loaded, "json") == text and str(loaded) == str(fused)
    x_value = np.linspace(-1, 1, 3, dtype=np.float32)
    np.testing.assert_array_equal(run(loaded, x_value)[0], run(fused, x_value)[0])


# -- malformed programs --------------------------------------------------------------------


@pytest.mark.parametrize(
    "program, outputs, match",
    [
        ((), (0,), "non-empty"),
        ((("reduce_sum", (("in", 0),), ()),), (0,), "not a fusable"),
        ((("no_such_op", (("in", 0),), ()),), (0,), "not a fusable"),
        ((("exp", (("eq", 0),), ()),), (0,), "bad refs"),
        ((("exp", (("in", 1),), ()),), (0,), "inputs 0..n-1"),
        ((("exp", (("in", 0),), ()), ("tanh", (("in", 0),), ())), (1,), "not used"),
        ((("exp", (("in", 0),), ()),), (1,), "outputs"),
        ((("exp", (("in", 0), ("in", 0)), ()),), (0,), "equation 0"),
    ],
)
def test_malformed_programs_are_shape_errors(program, outputs, match):
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (3,), name="x")
        with pytest.raises(kn.ShapeError, match=match):
            kn.ops.core.apply("fused", x, program=program, outputs=outputs)


# -- the kernel ----------------------------------------------------------------------------

CHAIN = (
    ("mul", (("in", 0), ("in", 1)), ()),
    ("add", (("eq", 0), ("in", 0)), ()),
    ("tanh", (("eq", 1),), ()),
    ("mul", (("eq", 2), ("eq", 2)), ()),
)
WHERE = (
    ("less", (("in", 0), ("in", 1)), ()),
    ("mul", (("in", 0), ("in", 1)), ()),
    ("where", (("eq", 0), ("eq", 1), ("in", 1)), ()),
)


def chain_ref(a, b):
    t = np.tanh(a * b + a)
    return t * t


def where_ref(a, b):
    return np.where(a < b, a * b, b)


def kernel(program, *arrays, out=None):
    return FUSED.impl(np, *arrays, out=out, program=program, outputs=(len(program) - 1,))


SHAPES = [
    ((16,), (16,)),  # tiny: numba (when installed and hot) or whole arrays
    ((3, 1), (4,)),  # tiny, partly broadcast: whole arrays
    ((1100, 300), (300,)),  # blocked by rows; b broadcasts along rows
    ((1100, 300), (1100, 1)),  # blocked by rows; b broadcasts along columns
    ((3, 100000), (3, 1)),  # one row is larger than a block: blocked along axis 1
    ((300000,), ()),  # 1-d, blocked; a 0-d input
    ((25, 40, 300), (40, 1)),  # 3-d
]


@pytest.mark.parametrize("program, ref", [(CHAIN, chain_ref), (WHERE, where_ref)])
@pytest.mark.parametrize("shapes", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_kernel_matches_numpy_and_honours_out(program, ref, shapes, dtype):
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal(s).astype(dtype) for s in shapes)
    want = ref(a, b)
    for _ in range(3):  # the second call may take the numba loop
        got = kernel(program, a, b)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=2e-6 if dtype == "float32" else 1e-12)
    out = np.full(want.shape, np.nan, dtype)
    assert kernel(program, a, b, out=out) is out
    np.testing.assert_allclose(out, want, rtol=2e-6 if dtype == "float32" else 1e-12)


@pytest.mark.parametrize("program, ref", [(CHAIN, chain_ref), (WHERE, where_ref)])
@pytest.mark.parametrize("shape", [(16,), (700, 300)], ids=str)  # float64: blocked
def test_kernel_writes_in_place_over_an_input(program, ref, shape):
    """The memory planner may give a fused node its dying input's buffer as out."""
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal(shape), rng.standard_normal(shape)
    want = ref(a, b)
    for _ in range(2):
        a_copy = a.copy()
        assert kernel(program, a_copy, b, out=a_copy) is a_copy
        np.testing.assert_allclose(a_copy, want, rtol=1e-12)


def test_blocked_kernel_transient_memory_is_a_few_blocks():
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((1024, 512)), rng.standard_normal((512,))
    kernel(CHAIN, a, b)
    tracemalloc.start()
    try:
        out = kernel(CHAIN, a, b)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak - out.nbytes <= 4 * fused_ops.BLOCK_BYTES, f"{peak - out.nbytes} bytes"


def test_scratch_buffers_are_reused_across_equations():
    program = fused_ops.compiled(CHAIN, (3,))
    shapes = program.run_rules([(8, 4), (4,)], "shape_rule", kn.ShapeError)
    dtypes = program.signature((np.dtype("float32"),) * 2).dtypes
    owner, buffers = fused_ops._allocate(program, shapes, dtypes)
    assert owner == [0, 0, 0] and buffers == [8 * 4 * 4], "mul, add, tanh: in one buffer"


EXACT_CHAIN = (
    ("mul", (("in", 0), ("in", 1)), ()),
    ("add", (("eq", 0), ("in", 0)), ()),
    ("maximum", (("eq", 1), ("in", 1)), ()),
    ("sqrt", (("eq", 2),), ()),
    ("mul", (("eq", 3), ("eq", 3)), ()),
)


def exact_chain_ref(a, b):
    t = np.sqrt(np.maximum(a * b + a, b))
    return t * t


def test_numba_loop_is_built_when_hot_and_gives_numpys_bits():
    pytest.importorskip("numba")
    program = EXACT_CHAIN
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal(16).astype(np.float32), np.array(0.5, np.float32)
    want = exact_chain_ref(a, b)
    signature = fused_ops.compiled(program, (4,)).signature((a.dtype, b.dtype))
    first = kernel(program, a, b)
    assert signature.loop is False, "a one-off run never compiles"
    second = kernel(program, a, b)
    assert signature.loop is not None and signature.loop is not False
    ((pattern, loop),) = signature.loop.items()
    assert pattern == (FULL, ONE), "b, one element, is read once before the loop"
    b.flags.writeable = False  # a constant's array: numba types it apart
    third = kernel(program, a, b)
    assert len(loop.signatures) == 2, "compiled again for the new array types"
    strided = kernel(program, np.repeat(a, 2)[::2], b)  # non-contiguous: NumPy runs it
    for got in (first, second, third, strided):
        np.testing.assert_array_equal(got, want)  # bit for bit, on every call


def test_transcendental_programs_stay_on_numpy_so_every_call_gives_the_same_bits():
    program = CHAIN + (("softplus", (("eq", 3),), (("beta", 1.5),)),)
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal(16).astype(np.float32), np.array(0.5, np.float32)
    results = [kernel(program, a, b) for _ in range(4)]
    signature = fused_ops.compiled(program, (4,)).signature((a.dtype, b.dtype))
    assert signature.loop in (None, False)
    for got in results[1:]:
        np.testing.assert_array_equal(got, results[0])
    want = np.logaddexp(0, chain_ref(a, b) * np.float32(1.5)) / np.float32(1.5)
    np.testing.assert_allclose(results[0], want.astype(np.float32), rtol=2e-6, atol=1e-7)
    prog = fused_ops.compiled(program, (4,))
    assert loop_source(prog, signature.dtypes) is None


def _numba_form_units():
    """(what, program, loop text, flat inputs, expected) of each op-table elementwise program
    of exact ops with a declared numba form (`Lowering.numba`: cast, clip, where, relu,
    rsqrt...), on the row's values and on special values."""
    from test_cuda import _programs, _special

    for (program, outputs, dtypes), (case_id, values) in _programs().items():
        if len(outputs) > 1:
            continue  # loops with several results: test_multi_result_loops_*
        lowerings = [REGISTRY[eq[0]].lowering for eq in program]
        if not all(getattr(low, "exact", False) for low in lowerings):
            continue  # not exact, or undeclared (tests/test_op_declarations.py reports those)
        if all(low.ufunc for low in lowerings):
            continue
        prog = fused_ops.compiled(program, (len(program) - 1,))
        text = loop_source(prog, prog.signature(tuple(dtypes)).dtypes)
        if text is None:
            continue  # a dtype numba's loops do not take (float16)
        casts = any(eq[0] == "cast" for eq in program)  # float -> int of nan/inf: undefined
        specials = [_special(d, k) for k, d in enumerate(dtypes)]
        for inputs in [values] if casts else [values, specials]:
            with np.errstate(all="ignore"):
                want = np.asarray(prog.code(np)[0](None, *inputs))
            flat = [np.ascontiguousarray(np.broadcast_to(v, want.shape)).ravel() for v in inputs]
            yield f"{case_id}: {[eq[0] for eq in program]}", prog, text, flat, want.ravel()


def test_numba_forms_of_exact_ops_compute_numpys_bits_as_python():
    """The loops' text run as plain Python on NumPy scalars (no numba needed): the forms'
    casts and NaN rules."""
    ops = set()
    for what, prog, text, flat, want in _numba_form_units():
        namespace = {"np": np}
        exec(compile(text, "<loop>", "exec"), namespace)
        got = np.empty_like(want)
        with np.errstate(all="ignore"):
            assert namespace["kernel"](got, *flat), what
        np.testing.assert_array_equal(got, want, err_msg=what)
        ops.update(op.name for op in prog.ops)
    assert {"cast", "clip", "where", "relu", "rsqrt"} <= ops


def test_numba_forms_of_exact_ops_give_numpys_bits():
    """The same loops compiled by numba: one program per op mix (each compile takes ~1 s)."""
    pytest.importorskip("numba")
    seen = set()
    for what, prog, _, flat, want in _numba_form_units():
        mix = tuple(op.name for op in prog.ops)
        if mix in seen:
            continue
        seen.add(mix)
        got = np.empty_like(want)
        loop = numba_loop(prog, prog.signature(tuple(a.dtype for a in flat)).dtypes, (got, *flat))
        assert loop is not None and loop(got, *flat), what
        np.testing.assert_array_equal(got, want, err_msg=what)


def test_kernel_is_thread_safe():
    rng = np.random.default_rng(5)
    cases = [(rng.standard_normal(16), rng.standard_normal(16))] * 2
    cases += [(rng.standard_normal((700, 300)), rng.standard_normal((300,)))] * 2

    def work(k):
        a, b = cases[k % len(cases)]
        return all(np.allclose(kernel(CHAIN, a, b), chain_ref(a, b)) for _ in range(5))

    with ThreadPoolExecutor(4) as pool:
        assert all(pool.map(work, range(16)))


# -- hypothesis: the same values with and without fusion ------------------------------------

UNARY = [kn.tanh, kn.sin, kn.neg, kn.abs, kn.square, kn.exp, kn.sigmoid, kn.relu]
BINARY = [kn.add, kn.sub, kn.mul, kn.maximum, kn.minimum, lambda a, b: kn.clip(a, -1.0, b)]
BASES = [(), (5,), (2, 3), (3, 1, 4), (2, 3, 5)]
BIG_BASES = [(600, 520), (3, 100000), (300000,)]  # float32: over UNBLOCKED_BYTES
DTYPES = ["float32", "float64", "int32"]


@st.composite
def elementwise_graphs(draw):
    """(graph, arrays): a random elementwise program graph on broadcasting inputs."""
    big = draw(st.booleans()) and draw(st.booleans())
    base = draw(st.sampled_from(BIG_BASES if big else BASES))
    n_inputs = draw(st.integers(1, 3))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    arrays, inputs = [], []
    with kn.Graph().as_default():
        for k in range(n_inputs):
            drop = draw(st.integers(0, len(base)))
            shape = tuple(1 if draw(st.booleans()) and not big else d for d in base[drop:])
            dtype = draw(st.sampled_from(DTYPES))
            value = rng.integers(-3, 4, shape) if dtype == "int32" else rng.uniform(-2, 2, shape)
            value = np.asarray(value, dtype)
            if value.ndim >= 2 and draw(st.booleans()):  # a transposed (non-contiguous) view
                value = np.ascontiguousarray(value.T).T
            arrays.append(value)
            inputs.append(kn.placeholder(dtype, shape, name=f"x{k}"))
        values = list(inputs)

        def pick(options):
            return draw(st.sampled_from(options))

        for _ in range(draw(st.integers(1, 8))):
            kind = pick(["unary", "binary", "scalar", "where"])
            a = values[-1] if draw(st.booleans()) else pick(values)
            if kind == "unary":
                values.append(pick(UNARY)(kn.tanh(a) if a.dtype.kind == "i" else a))
            elif kind in ("binary", "scalar"):
                values.append(pick(BINARY)(a, pick(values if kind == "binary" else [0.5, 2, -1.5])))
            else:  # comparisons only of inputs: a one-ulp difference never flips a branch
                values.append(kn.where(kn.less(pick(inputs), pick(inputs)), a, pick(values)))
        fetches = [values[-1]]
        if len(values) > n_inputs + 2 and draw(st.booleans()):
            fetches.append(values[draw(st.integers(n_inputs, len(values) - 2))])
    return program_graph(fetches, inputs), arrays


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(elementwise_graphs())
def test_fusion_keeps_values_of_random_graphs(case):
    graph, arrays = case
    fused = fuse_elementwise(graph)
    kn.verify(fused)
    assert len(fused.nodes) <= len(graph.nodes)
    with np.errstate(all="ignore"):
        want = run(graph, *arrays)
        f = kn.function(fused.inputs, fused.outputs)
        for _ in range(2):  # the second call may run numba loops
            for got, exp in zip(f(*arrays), want):
                assert got.dtype == exp.dtype and got.shape == exp.shape
                if exp.dtype.kind == "f":
                    np.testing.assert_allclose(got, exp, rtol=1e-4, atol=1e-5, equal_nan=True)
                else:
                    np.testing.assert_array_equal(got, exp)


# -- groups with several results -----------------------------------------------------------


def _get_nodes(graph):
    return [n for n in graph.nodes if n.op.name == "get"]


GOLDEN_RESULTS = """\
{ lambda x:f32[2,3] .
    t0:tuple = fused[outputs=(1,3) program=(('add',(('in',0),('in',1)),()),('relu',(('eq',0),),()),('mul',(('eq',1),('in',2)),()),('sub',(('eq',2),('in',0)),()))] x 1.0:f32[] 2.0:f32[]  # test_fuse.py
    t1:f32[2,3] = get[index=0] t0  # test_fuse.py
    t2:f32[2,3] = get[index=1] t0  # test_fuse.py
    t3:f32[3] = reduce_sum[axes=(0,) keepdims=False] t1  # test_fuse.py
  in (t2 t3) }
"""  # noqa: E501


def _tape_graph():
    """h = relu(x + 1) is both kept (a reduction reads it) and the next op's input."""
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (2, 3), name="x")
        h = kn.relu(x + 1.0)
        y = h * 2.0 - x
        s = kn.sum(h, axis=0)
    return program_graph([y, s], [x])


def test_a_value_used_outside_is_a_result_golden_text_json_and_dot():
    import re

    graph = _tape_graph()
    fused = fuse_elementwise(graph)
    kn.verify(fused)
    text = re.sub(r"(# test_fuse\.py):\d+", r"\1", format_graph(fused))
    assert text == GOLDEN_RESULTS
    (node,) = fused_nodes(fused)
    assert node.name == "fused" and [g.name for g in _get_nodes(fused)] == ["relu", "sub"]
    loaded = kn.load_graph(kn.dump(fused, "json"))  # round trip: the same program and values
    kn.verify(loaded)
    assert kn.dump(loaded, "json") == kn.dump(fused, "json") and str(loaded) == str(fused)
    x_value = np.linspace(-2, 2, 6, dtype=np.float32).reshape(2, 3)
    want = run(graph, x_value)
    for got in (run(fused, x_value), run(loaded, x_value)):
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)  # exact ops: NumPy's bits
    dot = kn.dump(fused, "dot")
    assert dot.count("\\nget\\n") == 2 and "\\nfused\\ntuple" in dot


def test_fusion_counts_and_text_of_a_tape_group():
    groups = find_groups(_tape_graph())
    assert [[m.op.name for m in ms] for ms in groups.values()] == [["add", "relu", "mul", "sub"]]


def test_a_path_that_leaves_the_group_and_comes_back_keeps_the_value_out():
    """a feeds both the group and a reduction whose value the group reads: were a a result of
    the group, the reduction would run both after and before it."""
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (4, 3), name="x")
        a = kn.exp(x * 0.5)
        s = kn.sum(a, axis=0)  # not elementwise: leaves the group
        y = kn.tanh(a + s) * 2.0
    graph = program_graph([y], [x])
    groups = [[m.op.name for m in ms] for ms in find_groups(graph).values()]
    assert groups == [["mul", "exp"], ["add", "tanh", "mul"]]
    fused = fuse_elementwise(graph)
    kn.verify(fused)
    x_value = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)
    np.testing.assert_array_equal(run(fused, x_value)[0], run(graph, x_value)[0])


def test_a_result_must_have_the_iteration_shape():
    """A fetched (3,) value does not join a (4, 3) group as a result (one loop writes every
    result); used only inside, it still joins (it broadcasts)."""
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (4, 3), name="x")
        b = kn.placeholder(kn.float32, (3,), name="b")
        r = kn.exp(b * 2.0)
        y = x * r + 1.0
    kept = find_groups(program_graph([y, r], [x, b]))
    assert [[m.op.name for m in ms] for ms in kept.values()] == [["mul", "exp"], ["mul", "add"]]
    inner = find_groups(program_graph([y], [x, b]))
    assert [[m.op.name for m in ms] for ms in inner.values()] == [["mul", "exp", "mul", "add"]]


def test_a_value_read_before_the_group_ends_is_no_result():
    """h's other user (a matmul) comes before the group's last node in graph order: h does not
    join that group (its results are made at the last node's place), so its own group ends."""
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (3, 3), name="x")
        h = kn.relu(x * 2.0)
        z = h @ x
        y = kn.tanh(h) + 1.0  # after the matmul
    graph = program_graph([y, z], [x])
    groups = [[m.op.name for m in ms] for ms in find_groups(graph).values()]
    assert groups == [["mul", "relu"], ["tanh", "add"]]
    fused = fuse_elementwise(graph)
    kn.verify(fused)
    x_value = np.linspace(-1, 1, 9, dtype=np.float32).reshape(3, 3)
    for got, want in zip(run(fused, x_value), run(graph, x_value)):
        np.testing.assert_array_equal(got, want)


def test_two_groups_never_feed_each_other():
    """a1 feeds b1 and a2, b2 feeds r and a2: were a1 and a2 one group and b1, b2, r another,
    each would be convex, yet each would feed the other (no order runs them)."""
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (3,), name="x")
        y = kn.placeholder(kn.float32, (3,), name="y")
        a1, b2 = kn.exp(x), kn.exp(y)
        r = a1 * 2.0 + b2
        a2 = a1 + b2
    graph = program_graph([r, a2], [x, y])
    groups = [[m.op.name for m in ms] for ms in find_groups(graph).values()]
    assert groups == [["exp", "exp", "mul", "add"]]  # a2 stays alone, after the group
    fused = fuse_elementwise(graph)
    kn.verify(fused)
    assert [n.op.name for n in fused.nodes][-2:] == ["get", "add"]
    values = np.linspace(-1, 1, 3, dtype=np.float32), np.linspace(1, 2, 3, dtype=np.float32)
    for got, want in zip(run(fused, *values), run(graph, *values)):
        np.testing.assert_array_equal(got, want)


def test_results_have_their_own_buffers_and_take_a_dying_input_in_place():
    """t = x @ x is read by equations 0 and 3: result 0 (equation 1) may not overwrite it, result
    1 (equation 3, t's last read) does; result 2 (fetched) is a fresh array."""
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float64, (64, 64), name="x")
        t = x @ x
        a = kn.tanh(t * 2.0)
        b = kn.exp(a) + t
        c = kn.sin(b) * b
        d = kn.sum(b @ a, axis=0)
        f = kn.function([x], [c, d], passes=[("fuse_elementwise", fuse_elementwise)])
    x_value = np.random.default_rng(0).standard_normal((64, 64)) / 8
    for _ in range(3):
        got = f(x_value)
    t_ = x_value @ x_value
    a_ = np.tanh(t_ * 2.0)
    b_ = np.exp(a_) + t_
    np.testing.assert_array_equal(got[0], np.sin(b_) * b_)
    np.testing.assert_array_equal(got[1], np.sum(b_ @ a_, axis=0))
    plan = f.plan
    notes = dict(zip(plan.names, plan.notes))
    assert notes["add"] == "buffer, then add in place", notes  # result 1 over t's buffer
    assert notes["tanh"] == "buffer (a result of a tuple)"
    assert "out=(b1, b0, None, )" in f.source


def test_adam_step_is_one_kernel_updating_three_variables_in_place():
    n = 1000
    rng = np.random.default_rng(0)
    grads = [rng.standard_normal(n).astype(np.float32) for _ in range(3)]

    def step(fuse):
        with kn.Graph().as_default():
            g = kn.placeholder(kn.float32, (n,), name="g")
            p = kn.Variable(np.ones(n, np.float32), name="p")
            m = kn.Variable(np.zeros(n, np.float32), name="m")
            v = kn.Variable(np.zeros(n, np.float32), name="v")
            m1 = m * 0.9 + g * 0.1
            v1 = v * 0.999 + g * g * 0.001
            p1 = p - 0.01 * m1 / (kn.sqrt(v1) + 1e-8)
            passes = [("fuse_elementwise", fuse_elementwise)] if fuse else []
            f = kn.function([g], [], updates={p: p1, m: m1, v: v1}, passes=passes)
            for gv in grads:
                f(gv)
            return f, [p.numpy(), m.numpy(), v.numpy()]

    fused, got = step(True)
    plain, want = step(False)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    assert [n.op.name for n in fused.graph.nodes].count("fused") == 1
    assert "out=(V[" in fused.source and fused.plan.arena_bytes == 0
    assert "], [])" in fused.source.replace("return [], []", "], [])"), "nothing committed"


MULTI = (
    ("mul", (("in", 0), ("in", 1)), ()),
    ("add", (("eq", 0), ("in", 0)), ()),  # result 0
    ("tanh", (("eq", 1),), ()),
    ("mul", (("eq", 2), ("eq", 1)), ()),  # result 1
    ("greater", (("eq", 3), ("in", 1)), ()),  # result 2: bool
)


def multi_ref(a, b):
    r0 = a * b + a
    r1 = np.tanh(r0) * r0
    return [r0, r1, r1 > b]


@pytest.mark.parametrize("shapes", SHAPES, ids=str)
def test_kernel_with_several_results_on_every_path(shapes, monkeypatch):
    """Whole arrays, the numba loop (hot), blocks (large), segments (tanh in exact mode):
    every result as NumPy gives it, into out= arrays, and over a dying input in place."""
    monkeypatch.setenv("KILN_EXACT", "1")  # NumPy's bits (tanh)
    rng = np.random.default_rng(1)
    a = rng.standard_normal(shapes[0]).astype(np.float32)
    b = rng.standard_normal(shapes[1]).astype(np.float32)
    want = multi_ref(a, b)
    for _ in range(3):  # the third call runs the numba loop where there is one
        got = FUSED.impl(np, a, b, program=MULTI, outputs=(1, 3, 4))
        for g, w in zip(got, want):
            assert g.dtype == w.dtype and g.shape == w.shape
            np.testing.assert_array_equal(g, w)
    outs = tuple(np.full(w.shape, 7, w.dtype) for w in want)
    assert FUSED.impl(np, a, b, out=outs, program=MULTI, outputs=(1, 3, 4)) == outs
    for g, w in zip(outs, want):
        np.testing.assert_array_equal(g, w)
    if a.shape == want[0].shape:  # result 0 over a: a's last read is result 0's equation
        program = MULTI[:2] + (("tanh", (("eq", 1),), ()), ("mul", (("eq", 2), ("eq", 1)), ()))
        prog = fused_ops.compiled(program, (1, 3))
        assert max(j for j, slots in enumerate(prog.slots) if 0 in slots) == 1
        for _ in range(3):
            a_copy = a.copy()
            r1 = np.empty_like(a)
            FUSED.impl(np, a_copy, b, out=(a_copy, r1), program=program, outputs=(1, 3))
            np.testing.assert_array_equal(a_copy, want[0])
            np.testing.assert_array_equal(r1, want[1])


MULTI_EXACT = (
    ("mul", (("in", 0), ("in", 1)), ()),
    ("add", (("eq", 0), ("in", 0)), ()),  # result 0
    ("relu", (("eq", 1),), ()),
    ("mul", (("eq", 2), ("eq", 1)), ()),  # result 1
    ("greater", (("eq", 3), ("in", 1)), ()),  # result 2: bool
)


def test_multi_result_loops_give_numpys_bits():
    """The numba loop's text with several results (exact ops), run as plain Python: every
    result as NumPy computes it, bit for bit."""
    prog = fused_ops.compiled(MULTI_EXACT, (1, 3, 4))
    a = np.linspace(-2, 2, 16, dtype=np.float32)
    b = np.full(16, 0.5, np.float32)
    text = loop_source(prog, prog.signature((a.dtype, b.dtype)).dtypes)
    r0 = a * b + a
    r1 = np.maximum(r0, 0) * r0
    want = [r0, r1, r1 > b]
    namespace = {"np": np}
    exec(compile(text, "<loop>", "exec"), namespace)
    outs = [np.empty_like(w) for w in want]
    assert namespace["kernel"](*outs, a, b)
    for g, w in zip(outs, want):
        np.testing.assert_array_equal(g, w)


def test_results_of_other_shapes_are_shape_errors():
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (3, 4), name="x")
        b = kn.placeholder(kn.float32, (4,), name="b")
        program = (("exp", (("in", 1),), ()), ("add", (("in", 0), ("eq", 0)), ()))
        with pytest.raises(kn.ShapeError, match="not the iteration shape"):
            kn.ops.core.apply("fused", x, b, program=program, outputs=(0, 1))
        with pytest.raises(kn.ShapeError, match="increasing equation numbers"):
            kn.ops.core.apply("fused", x, b, program=program, outputs=(1, 0))


def test_results_on_the_simulated_gpu_are_one_kernel(monkeypatch):
    """The CUDA path (tests/fake_cupy.py runs the generated C on the host): one launch
    writes every result."""
    import host_kernels

    if not host_kernels.have_compiler():
        pytest.skip("no g++ to compile the kernels")
    import fake_cupy

    from kiln.ops import fused_cuda

    cp = fake_cupy.install(monkeypatch)
    fake_cupy.reset_kiln()
    a = np.linspace(-2, 2, 12, dtype=np.float64).reshape(3, 4)
    b = np.linspace(1, -1, 4, dtype=np.float64)
    prog = fused_ops.compiled(MULTI, (1, 3, 4))
    source = fused_cuda.kernel_source(prog, (a.dtype, b.dtype))
    assert "out2 = e4;" in source.text and source.out_params.count("out") == 3
    calls = fake_cupy.STATS["kernel_calls"]
    got = FUSED.impl(cp, cp.asarray(a), cp.asarray(b), program=MULTI, outputs=(1, 3, 4))
    assert fake_cupy.STATS["kernel_calls"] == calls + 1
    for g, w in zip(got, multi_ref(a, b)):
        kn.testing.assert_close(g.get(), w)  # CUDA's libm tanh: within a few ulp
    fake_cupy.reset_kiln()


# Exact ops only, so fused and unfused give the same bits whichever path runs.
EXACT_UNARY = [kn.relu, kn.neg, kn.abs, lambda a: a * 0.5 + 1.0]
EXACT_BINARY = [kn.add, kn.sub, kn.mul, kn.maximum, kn.minimum]


@st.composite
def dags_with_outside_uses(draw):
    """(graph, arrays): a random elementwise DAG whose values are also fetched, reduced, or
    fed to a matmul whose result re-enters (convexity), on f64[6, 6] and broadcast inputs."""
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    shapes = [(6, 6), (6,), (6, 1)]
    with kn.Graph().as_default():
        inputs = [kn.placeholder(kn.float64, shapes[k], name=f"x{k}") for k in range(3)]
        arrays = [rng.standard_normal(s) for s in shapes]
        values = list(inputs)
        fetches = []
        for _ in range(draw(st.integers(4, 16))):
            kind = draw(st.sampled_from(["unary", "binary", "binary", "outside", "outside",
                                         "fetch"]))  # fmt: skip
            a = values[-1] if draw(st.booleans()) else draw(st.sampled_from(values))
            if kind == "unary":
                values.append(draw(st.sampled_from(EXACT_UNARY))(a))
            elif kind == "binary":
                values.append(draw(st.sampled_from(EXACT_BINARY))(a, draw(st.sampled_from(values))))
            elif kind == "outside":  # a non-elementwise user whose value may come back
                big = a if a.shape == (6, 6) else a + inputs[0]
                values.append(kn.sum(big, axis=1, keepdims=True) if draw(st.booleans())
                              else big @ inputs[0])  # fmt: skip
            else:
                fetches.append(a)
        fetches.append(values[-1])
    return program_graph(fetches, inputs), arrays, draw(st.integers(0, 7)) == 0


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck),
          database=None)  # fmt: skip
@given(dags_with_outside_uses())
def test_random_dags_with_outside_uses_give_the_unfused_bits_and_valid_plans(case):
    from kiln.passes.memory import validate_plan

    graph, arrays, hot = case
    fused = fuse_elementwise(graph)
    kn.verify(fused)  # convex groups: the fused graph is in topological order
    for n in fused_nodes(fused):
        if n.out.dtype == kn.dtypes.TUPLE:
            assert len(n.attrs["outputs"]) >= 2
    want = run(graph, *arrays)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KILN_CHECKS", "1")  # each in-place kernel checked against out of place
        f = kn.function(fused.inputs, fused.outputs, passes=[])
        for _ in range(3 if hot else 1):  # one in 8 runs hot: numba loops (each compiles)
            for got, exp in zip(f(*arrays), want):
                np.testing.assert_array_equal(got, exp)
    p = f.plan
    validate_plan(p.sizes, p.starts, p.ends, p.offsets, p.arena_bytes, p.alignment)


def test_several_results_off_ends_a_group_at_values_used_outside():
    graph = _tape_graph()
    one = fuse_elementwise(graph, several_results=False)
    kn.verify(one)
    programs = [[eq[0] for eq in n.attrs["program"]] for n in fused_nodes(one)]
    assert programs == [["add", "relu"], ["mul", "sub"]] and "get" not in [
        n.op.name for n in one.nodes
    ]


def test_a_value_does_not_join_a_group_that_reads_later_values():
    """h + m reads the matmul m, made after h: were h a result of that group, h's other user
    (a reduction) would wait for the matmul (a bucket's all-reduce for backward's end)."""
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (3, 3), name="x")
        w = kn.placeholder(kn.float32, (3, 3), name="w")
        h = kn.relu(x * 2.0)
        m = x @ w
        r = h + m
        u = kn.sum(h)
    graph = program_graph([r, u], [x, w])
    groups = [[m.op.name for m in ms] for ms in find_groups(graph).values()]
    assert groups == [["mul", "relu"]]
