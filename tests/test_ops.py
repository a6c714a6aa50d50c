"""Every op-table row: graph mode and eager mode against NumPy, symbolic leading dims, and
every kernel's `out=`; plus the coverage check that each registered op has rows.

`pytest tests/test_ops.py -k exp` runs the exp rows; ids read `op-label-dtype`.
"""

import zlib

import numpy as np
import pytest
from op_table import CASES, OpCase

import kiln as kn
from kiln.dtypes import TUPLE
from kiln.graph.opdef import REGISTRY
from kiln.ops.core import bind

# (rtol, atol) when a row gives none: each float dtype against its own rounding error.
TOLERANCES = {"float16": (2e-3, 2e-3), "float32": (2e-6, 2e-6), "float64": (1e-12, 1e-12),
              "complex64": (2e-6, 2e-6), "complex128": (1e-12, 1e-12)}  # fmt: skip

# Rows whose op cannot take a symbolic leading dim, with the reason (test (c) skips them).
NO_SYMBOLIC = {
    "split-split": "split needs a static size along the split axis",
    "split-split-empty-part": "split needs a static size along the split axis",
    "reduce_mean-var-ddof": "var with ddof needs static sizes on the reduced axes",
    "bitcast-bytes": "a bitcast between element sizes needs a static last dim",
}
# kn.linalg's factorizations (tests/op_table_linalg.py) pack their results in one array whose
# size is a function of the matrix dims: those must be static (their 2-D rows' first dim)
NO_SYMBOLIC |= dict.fromkeys(
    ("eigh-hand", "lu-hand", "lu-square", "lu-wide", "lu_pivots-hand", "qr-hand", "qr-tall",
     "qr-wide-complete", "solve_triangular-lu_solve", "svd-hand", "svd-square", "svd-tall"),
    "a factorization's packed results need static matrix dims",
)  # fmt: skip

# Known kiln bugs: test -> {row id or op: reason}; strict xfails, so a fix makes them fail
# until the entry is removed. "*" applies to every test.
KNOWN_BUGS: dict[str, dict[str, str]] = {"*": {}}


def params(test: str) -> list:
    """(case, dtype) pairs with ids `op-label-dtype`; known bugs of `test` as strict xfails."""
    bugs = {**KNOWN_BUGS["*"], **KNOWN_BUGS.get(test, {})}
    out = []
    for case in CASES:
        reason = bugs.get(case.id) or bugs.get(case.op)
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        out.extend(
            pytest.param(case, dtype, id=f"{case.id}-{dtype}", marks=marks) for dtype in case.dtypes
        )
    return out


# Ops covered by dedicated tests in this module instead of op-table rows.
TESTED_ELSEWHERE = {
    # a user's kn.autograd.Function (its attr holds the class): tests/test_custom_function.py
    "custom_grad": ("test_custom_grad_calls_the_users_backward",),
    "variable": ("test_variable_value_feeds_the_graph",),
    "assign": ("test_assign_updates_the_variable_after_the_run", "test_assign_rules"),
    "group": ("test_group_runs_its_updates",),
    # kiln.distributed's collectives need a process group: run on 2 ranks by
    # test_distributed.py, which this test runs (it skips where MPI is unavailable)
    **{
        op: ("test_collective_ops",)
        for op in (
            "all_reduce_start",
            "all_reduce_wait",
            "broadcast",
            "all_gather",
            "reduce_scatter",
        )
    },
}


def make_inputs(case: OpCase, dtype: str) -> list:
    rng = np.random.default_rng(zlib.crc32(f"{case.id}-{dtype}".encode()))
    return case.make_args(rng, np.dtype(dtype))


def as_list(value) -> list:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def expected_values(case: OpCase, arrays) -> list:
    with np.errstate(all="ignore"):
        return [np.asarray(v) for v in as_list(case.reference(*arrays))]


def assert_matches(actual, expected, case: OpCase, what: str):
    actual = np.asarray(actual)
    assert actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype}, NumPy {expected.dtype}"
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape}, NumPy {expected.shape}"
    if expected.dtype.kind not in "fc":
        np.testing.assert_array_equal(actual, expected, err_msg=what)
        return
    rtol, atol = TOLERANCES[expected.dtype.name]
    rtol = rtol if case.rtol is None else case.rtol
    atol = atol if case.atol is None else case.atol
    np.testing.assert_allclose(actual, expected, rtol, atol, equal_nan=True, err_msg=what)


def build(case: OpCase, arrays, shapes=None):
    """The row's graph on placeholders of the arrays' dtypes and `shapes` (default: theirs)."""
    graph = kn.Graph()
    with graph.as_default():
        kn.manual_seed(0)  # random rows reproduce the stream of the first node after this
        shapes = shapes or [a.shape for a in arrays]
        inputs = [
            kn.placeholder(a.dtype, s, f"x{i}") for i, (a, s) in enumerate(zip(arrays, shapes))
        ]
        outputs = as_list(case.fn(*inputs))
    return graph, inputs, outputs


def shape_matches(rule, actual) -> bool:
    """A shape rule's result against a value's shape: ints equal; a symbolic dim stands for
    a length the run binds (feeds of static shapes leave only those: kiln/ops/dynamic.py)."""
    return len(rule) == len(actual) and all(
        isinstance(d, kn.Dim) or d == a for d, a in zip(rule, actual)
    )


def run_graph(inputs, outputs, arrays) -> list:
    copies = [a.copy() for a in arrays]
    with np.errstate(all="ignore"):  # rows with inf and overflow are on purpose
        values = as_list(kn.function(inputs, outputs)(*arrays))
    for a, c in zip(arrays, copies):
        np.testing.assert_array_equal(a, c, err_msg="a kernel wrote into its input")
    return values


def is_eager_capable(case: OpCase) -> bool:
    tags = REGISTRY[case.op].tags if case.op in REGISTRY else frozenset()
    return "random" not in tags and case.op not in ("constant", "variable")


# -- (a) graph mode --------------------------------------------------------------------------


@pytest.mark.parametrize("case, dtype", params("graph"))
def test_graph_mode(case: OpCase, dtype):
    arrays = make_inputs(case, dtype)
    expected = expected_values(case, arrays)
    graph, inputs, outputs = build(case, arrays)
    ops = {n.op.name for n in graph.nodes}
    assert case.op in ops, f"the graph of row {case.id} has no {case.op} node, only {sorted(ops)}"
    kn.verify(graph)
    assert len(outputs) == len(expected)
    for k, (out, exp) in enumerate(zip(outputs, expected)):
        assert shape_matches(out.shape, exp.shape), (
            f"output {k}: shape rule gives {out.shape}, NumPy {exp.shape}"
        )
        assert out.dtype == exp.dtype, (
            f"output {k}: dtype rule gives {out.dtype}, NumPy {exp.dtype}"
        )
    for k, (got, exp) in enumerate(zip(run_graph(inputs, outputs, arrays), expected)):
        assert_matches(got, exp, case, f"compiled output {k}")


# -- (b) eager mode --------------------------------------------------------------------------


@pytest.mark.parametrize("case, dtype", params("eager"))
def test_eager_mode(case: OpCase, dtype):
    if not is_eager_capable(case):
        pytest.skip(f"{case.op} only builds graph nodes")
    arrays = make_inputs(case, dtype)
    expected = expected_values(case, arrays)
    copies = [a.copy() for a in arrays]
    with np.errstate(all="ignore"):
        results = as_list(case.fn(*arrays))
    for a, c in zip(arrays, copies):
        np.testing.assert_array_equal(a, c, err_msg="an eager op wrote into its input")
    assert len(results) == len(expected)
    for k, (got, exp) in enumerate(zip(results, expected)):
        assert isinstance(got, np.ndarray), f"eager output {k} is {type(got).__name__}"
        assert_matches(got, exp, case, f"eager output {k}")


# -- (c) a symbolic leading dim --------------------------------------------------------------


def symbolic_shapes(arrays):
    """The arrays' shapes with the first dim named "b" where it equals the first array's
    (same ndim, size >= 2: symbolic dims never broadcast), or None when nothing is."""
    if not arrays or arrays[0].ndim == 0 or arrays[0].shape[0] < 2:
        return None
    lead, ndim = arrays[0].shape[0], arrays[0].ndim
    return [
        ("b", *a.shape[1:]) if a.ndim == ndim and a.shape[0] == lead else a.shape for a in arrays
    ]


@pytest.mark.parametrize("case, dtype", params("symbolic"))
def test_symbolic_leading_dim(case: OpCase, dtype):
    if case.id in NO_SYMBOLIC:
        pytest.skip(NO_SYMBOLIC[case.id])
    arrays = make_inputs(case, dtype)
    shapes = symbolic_shapes(arrays)
    if shapes is None:
        pytest.skip("no input with a leading dim of size >= 2")
    expected = expected_values(case, arrays)
    _, inputs, outputs = build(case, arrays, shapes)
    for k, (out, exp) in enumerate(zip(outputs, expected)):
        assert len(out.shape) == exp.ndim, f"output {k}: {out.type_str()} vs NumPy {exp.shape}"
        for d, e in zip(out.shape, exp.shape):
            assert isinstance(d, kn.Dim) or d == e, f"output {k}: {out.type_str()} vs {exp.shape}"
        assert out.dtype == exp.dtype
    for k, (got, exp) in enumerate(zip(run_graph(inputs, outputs, arrays), expected)):
        assert_matches(got, exp, case, f"compiled output {k} (symbolic leading dim)")


# -- (d) every kernel honours out= -----------------------------------------------------------


def _garbage(shape, dtype):
    fill = {"f": np.nan, "b": True}.get(np.dtype(dtype).kind, 7)
    return np.full(shape, fill, dtype)


def check_kernel_out(node, arrays, case):
    """Runs `node`'s kernel without and with a preallocated `out`; returns the value."""
    attrs = dict(node.attrs)
    if "random" in node.op.tags:
        attrs["key"] = (attrs["seed"], 0)
    plain = np.asarray(node.op.impl(np, *arrays, **attrs))
    where = f"node {node.name} ({node.op.name})"
    assert shape_matches(node.out.shape, plain.shape), (
        f"{where}: kernel {plain.shape}, rule {node.out.shape}"
    )
    assert plain.dtype == node.out.dtype, f"{where}: kernel {plain.dtype}, rule {node.out.dtype}"
    out = _garbage(plain.shape, plain.dtype)
    result = node.op.impl(np, *arrays, out=out, **attrs)
    assert result is out, f"{where}: the kernel did not return its `out` array"
    assert_matches(out, plain, case, f"{where}: out= changes the values")
    return plain


def check_results_out(node, arrays, case):
    """A fused node with several results: its kernel takes `out=` a tuple of arrays (the
    planner gives each result its own buffer) and writes every result there."""
    plain = node.op.impl(np, *arrays, **node.attrs)
    outs = tuple(_garbage(p.shape, p.dtype) for p in plain)
    result = node.op.impl(np, *arrays, out=outs, **node.attrs)
    where = f"node {node.name} ({node.op.name})"
    assert all(r is o for r, o in zip(result, outs)), f"{where}: not its `out` arrays"
    for k, (o, p) in enumerate(zip(outs, plain)):
        assert_matches(o, p, case, f"{where}: out= changes result {k}")
    return plain


@pytest.mark.parametrize("case, dtype", params("out"))
def test_kernels_honour_out(case: OpCase, dtype):
    arrays = make_inputs(case, dtype)
    graph, inputs, _ = build(case, arrays)
    values = {id(s): a for s, a in zip(inputs, arrays)}
    with np.errstate(all="ignore"):
        for node in graph.nodes:
            if node.op.name in ("placeholder", "variable"):
                continue  # no kernel: the runtime supplies the value
            ins = [values[id(i)] for i in node.inputs]
            if node.op.name == "fused" and node.out.dtype == TUPLE:
                values[id(node.out)] = check_results_out(node, ins, case)
                continue
            if node.out.dtype == TUPLE or node.op.name == "get":
                # a tuple (a region op's, a multi-result op's) and its views: the planner
                # never gives them storage, so no out=
                values[id(node.out)] = node.op.impl(np, *ins, **node.attrs)
                continue
            values[id(node.out)] = check_kernel_out(node, ins, case)


# -- (e) coverage ----------------------------------------------------------------------------


def test_custom_grad_calls_the_users_backward():
    class Twice(kn.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad * 5  # deliberately not 2: the gradient is the user's backward's

    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (2,), name="x")
        y = Twice.apply(x)
        (g,) = kn.grad(kn.sum(y), [x])
        got = kn.function([x], [y, g])(np.array([1.0, 3.0], np.float32))
    assert got[0].tolist() == [2.0, 6.0] and got[1].tolist() == [5.0, 5.0]


def test_every_registered_op_has_rows():
    for op, tests in TESTED_ELSEWHERE.items():
        for name in tests:
            assert callable(globals().get(name)), f"{op} is said to be tested by {name}: missing"
    covered = {c.op for c in CASES} | set(TESTED_ELSEWHERE)
    missing = sorted(set(REGISTRY) - covered)
    assert not missing, f"registered ops without op-table rows (tests/op_table*.py): {missing}"


def test_rows_name_registered_ops_and_ids_are_unique():
    unknown = sorted({c.op for c in CASES} - set(REGISTRY))
    assert not unknown, f"rows for ops that are not registered: {unknown}"
    ids = [p.id for p in params("graph")]
    assert len(ids) == len(set(ids)), sorted({i for i in ids if ids.count(i) > 1})


# -- random statistics ---------------------------------------------------------------------


def _run_twice(symbol):
    f = kn.function([], symbol)
    return f(), f()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_random_statistics(dtype):
    normal = kn.random.normal((200, 100), mean=1.0, std=2.0, dtype=dtype)
    uniform = kn.random.uniform((200, 100), low=-1.0, high=3.0, dtype=dtype)
    bern = kn.random.bernoulli((200, 100), p=0.3, dtype=dtype)
    n1, n2 = _run_twice(normal)
    assert n1.dtype == dtype and n1.shape == (200, 100)
    assert abs(n1.mean() - 1.0) < 0.06 and abs(n1.std() - 2.0) < 0.05
    assert not np.array_equal(n1, n2), "every run draws fresh values"
    u1, u2 = _run_twice(uniform)
    assert u1.min() >= -1.0 and u1.max() < 3.0 and abs(u1.mean() - 1.0) < 0.04
    assert abs(u1.std() - 4 / np.sqrt(12)) < 0.03
    assert not np.array_equal(u1, u2)
    b1, _ = _run_twice(bern)
    assert set(np.unique(b1)) <= {0.0, 1.0} and abs(b1.mean() - 0.3) < 0.015
    assert not np.array_equal(n1, kn.function([], kn.random.normal((200, 100)))())


def test_random_streams_are_reproducible_for_a_seed():
    def draws():
        with kn.Graph().as_default():
            kn.manual_seed(7)
            f = kn.function([], [kn.random.normal((3, 5)), kn.random.uniform((4,))])
            return f(), f()

    first, second = draws(), draws()
    for a, b in zip(first, second):
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)


# -- ops tested here rather than by rows: variable, assign, group ---------------------------


def test_variable_value_feeds_the_graph():
    w = kn.Variable(np.arange(3, dtype=np.float32), name="w")
    x = kn.placeholder(kn.float32, (3,), name="x")
    f = kn.function([x], x * w)
    assert "variable" in {n.op.name for n in f.graph.nodes}
    np.testing.assert_array_equal(f(np.ones(3, np.float32)), [0.0, 1.0, 2.0])
    w.assign(np.full(3, 2.0, np.float32))
    np.testing.assert_array_equal(f(np.ones(3, np.float32)), [2.0, 2.0, 2.0])


def test_assign_updates_the_variable_after_the_run():
    w = kn.Variable(np.float32(1.0), name="w")
    x = kn.placeholder(kn.float32, (), name="x")
    new = bind(REGISTRY["assign"], w, w + x)
    assert new.node.op.name == "assign" and new.shape == () and new.dtype == kn.float32
    f = kn.function([x], [w * 10.0, new])
    before, value = f(np.float32(2.0))
    assert before == 10.0 and value == 3.0 and w.numpy() == 3.0
    assert f(np.float32(2.0))[1] == 5.0
    out = np.empty((), np.float32)
    assert REGISTRY["assign"].impl(np, w.value, np.float32(4.0), out=out) is out and out == 4.0


def test_assign_rules():
    w = kn.Variable(np.zeros((2, 3), np.float32), name="w")
    i = kn.Variable(np.zeros((2,), np.int32), name="i")
    with pytest.raises(kn.ShapeError, match="shape"):
        bind(REGISTRY["assign"], w, kn.placeholder(kn.float32, (3, 2)))
    with pytest.raises(kn.DTypeError, match="int32"):
        bind(REGISTRY["assign"], i, kn.placeholder(kn.float32, (2,)))
    ok = bind(REGISTRY["assign"], w, kn.placeholder(kn.float32, ("n", 3)))
    assert ok.shape == (2, 3)


def test_group_runs_its_updates():
    a = kn.Variable(np.float32(1.0), name="a")
    b = kn.Variable(np.float32(3.0), name="b")
    train = bind(
        REGISTRY["group"],
        bind(REGISTRY["assign"], a, a + 1.0),
        bind(REGISTRY["assign"], b, b * 2.0),
    )
    assert train.node.op.name == "group" and train.shape == () and train.dtype == kn.bool_
    with kn.Session() as sess:
        assert sess.run(train) is None
    assert a.numpy() == 2.0 and b.numpy() == 6.0


def test_group_kernel_honours_out():
    out = np.zeros((), np.bool_)
    result = REGISTRY["group"].impl(np, np.ones(2), out=out)
    assert result is out and out


def test_collective_ops():
    """The collectives' kernels against hand-computed values, on 2 ranks (see
    tests/dist_worker.py:graph_collectives)."""
    import test_distributed

    reason = test_distributed._skip_reason()
    if reason:
        pytest.skip(reason)
    code, output, _ = test_distributed.run_ranks(2, "graph_collectives")
    test_distributed.assert_all_ok(2, code, output)
