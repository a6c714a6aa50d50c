"""Multi-result ops (kiln/ops/multi.py): sort, topk, max(dim)/min(dim) and split are one node
of type tuple whose elements `get` nodes read. Values against NumPy are the op-table rows
(tests/op_table*.py); here: one node computes both results, gradients and tangents against
central finite differences, vmap and the jacobians, dumps round trip, eager = compiled, and
the ONNX form (one TopK gives values and indices; the import gives the same program)."""

from __future__ import annotations

import numpy as np
import pytest

import kiln as kn
from kiln.graph.serialize import from_json, to_json

X = np.random.default_rng(0).permutation(np.arange(20.0)).reshape(4, 5) / 7.0  # distinct

FUNCTIONS = {
    "sort": lambda x: kn.sort(x, 1, descending=True),
    "topk": lambda x: kn.topk(x, 3, 0, largest=False),
    "max": lambda x: kn.max(x, 1),
    "min-keepdim": lambda x: kn.min(x, 0, keepdim=True),
    "split": lambda x: kn.split(x, [2, 0, 3], dim=1),
    "chunk": lambda x: kn.chunk(x, 2, 0),
}
OPS = {"sort": "sort", "topk": "topk", "max": "max_dim", "min-keepdim": "min_dim",
       "split": "split", "chunk": "split"}  # fmt: skip


def _graph(fn, shape=X.shape):
    with kn.Graph().as_default() as g:
        x = kn.placeholder(kn.float64, shape, name="x")
        out = list(fn(x))
    g.inputs, g.outputs = [x], out
    return g


def _loss(fn, x):
    """A scalar of every float result, each weighted differently."""
    total = 0.0
    for k, v in enumerate(fn(x)):
        if v.dtype == kn.float64:
            total = total + kn.sum(v * v * (k + 1.0))
    return total


@pytest.mark.parametrize("name", FUNCTIONS)
def test_one_node_computes_every_result(name):
    g = _graph(FUNCTIONS[name])
    ops = [n.op.name for n in g.nodes if n.op.name not in ("placeholder", "get")]
    assert ops == [OPS[name]]
    f = kn.function(g.inputs, g.outputs)
    program_ops = [n.op.name for n in f.graph.nodes]  # after the optimizing passes
    assert program_ops.count(OPS[name]) == 1
    assert not {"argsort", "argmax", "argmin", "take_along_axis", "index"} & set(program_ops)


@pytest.mark.parametrize("name", FUNCTIONS)
def test_gradient_matches_finite_differences(name):
    fn = FUNCTIONS[name]
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float64, X.shape, name="x")
        (gx,) = kn.grad(_loss(fn, x), [x])
        f, loss = kn.function([x], gx), kn.function([x], _loss(fn, x))
    got, eps, want = f(X), 1e-6, np.zeros_like(X)
    for i in np.ndindex(X.shape):  # central differences, the loss's own program
        d = np.zeros_like(X)
        d[i] = eps
        want[i] = (loss(X + d) - loss(X - d)) / (2 * eps)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name", FUNCTIONS)
def test_jvp_matches_finite_differences_and_eager(name):
    fn = FUNCTIONS[name]
    t = np.random.default_rng(1).standard_normal(X.shape)
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float64, X.shape, name="x")
        v = kn.placeholder(kn.float64, X.shape, name="v")
        ys, ts = kn.jvp(lambda a: list(fn(a)), (x,), (v,))
        f = kn.function([x, v], [*ys, *ts])
    out = f(X, t)
    values, tangents = out[: len(out) // 2], out[len(out) // 2 :]
    eps = 1e-6
    plus = kn.function(*_io(fn))(X + eps * t)
    minus = kn.function(*_io(fn))(X - eps * t)
    for got, p, m, y in zip(tangents, plus, minus, values):
        if y.dtype == np.float64:
            np.testing.assert_allclose(got, (p - m) / (2 * eps), rtol=1e-6, atol=1e-8)
        else:  # indices: a zero tangent
            assert not np.any(got)
    ye, te = kn.jvp(lambda a: list(fn(a)), (kn.tensor(X),), (kn.tensor(t),))
    for a, b in zip([*ye, *te], out):
        np.testing.assert_array_equal(a.numpy(), b)


def _io(fn):
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float64, X.shape, name="x")
        return [x], list(fn(x))


@pytest.mark.parametrize("name", FUNCTIONS)
def test_dumps_round_trip(name):
    g = _graph(FUNCTIONS[name])
    kn.verify(g)
    text = to_json(g)
    loaded = from_json(text)
    kn.verify(loaded)
    assert to_json(loaded) == text and str(loaded) == str(g)
    assert "get[index=" in str(g) and ":tuple = " in str(g)
    assert OPS[name] in kn.dump(g, format="dot")
    for a, b in zip(kn.function(loaded.inputs, loaded.outputs)(X),
                    kn.function(g.inputs, g.outputs)(X)):  # fmt: skip
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name", FUNCTIONS)
def test_eager_equals_compiled(name):
    """Eagerly the op runs as before (argsort, take_along_axis, slices); compiled it is one
    multi-result node: the same values, bit for bit, and the same gradients."""
    fn = FUNCTIONS[name]
    compiled = kn.compile(fn)
    got = compiled(kn.tensor(X))
    assert OPS[name] in {n.op.name for n in compiled.last.graph.nodes}
    for a, b in zip(got, fn(kn.tensor(X))):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    xe, xc = kn.tensor(X, requires_grad=True), kn.tensor(X, requires_grad=True)
    _loss(fn, xe).backward()
    kn.compile(lambda a: _loss(fn, a))(xc).backward()
    np.testing.assert_allclose(xc.grad.numpy(), xe.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_vmap_and_jacobians_through_multi_result_ops():
    """vmap batches the tuple (every element gets the batch axis first); jacrev equals
    jacfwd and the finite-difference jacobian of the row's values."""

    def f(x):
        top = kn.topk(x, 2).values
        return kn.sum(kn.sort(x).values * kn.arange(5, dtype=kn.float64)) + top * kn.max(x, 0)[0]

    batched = kn.vmap(f)(kn.tensor(np.stack([X[0], X[1]])))
    for k in range(2):
        np.testing.assert_array_equal(batched[k].numpy(), f(kn.tensor(X[k])).numpy())
    jr = kn.jacrev(f)(kn.tensor(X[0])).numpy()
    jf = kn.jacfwd(f)(kn.tensor(X[0])).numpy()
    eps, fd = 1e-6, np.zeros((2, 5))
    for i in range(5):
        d = np.zeros(5)
        d[i] = eps
        fd[:, i] = (f(kn.tensor(X[0] + d)).numpy() - f(kn.tensor(X[0] - d)).numpy()) / (2 * eps)
    np.testing.assert_allclose(jr, fd, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(jf, jr, rtol=1e-12, atol=1e-12)


def test_max_dim_gradient_goes_to_the_returned_index_on_ties():
    """PyTorch's rule: max(x, dim)'s gradient reaches the one element at the index returned
    (the first of the tied ones), not split between them."""
    x = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]])
    with kn.Graph().as_default():
        s = kn.placeholder(kn.float64, x.shape, name="x")
        values, indices = kn.max(s, 1)
        f = kn.function([s], [indices, *kn.grad(kn.sum(values), [s])])
    idx, g = f(x)
    np.testing.assert_array_equal(idx, [1, 0])
    np.testing.assert_array_equal(g, [[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]])


def test_split_pieces_are_views_and_in_place_writes_are_ordered():
    """The pieces alias the Variable they split (split `views` its input): an update of that
    Variable in the same step runs after the pieces are fetched (their old values)."""
    with kn.Graph().as_default():
        v = kn.Variable(np.arange(4.0), name="v")
        a, b = kn.split(v, 2)
        f = kn.function([], [a, b * 1.0], updates={v: v * 10.0})
    first, second = f(), f()
    np.testing.assert_array_equal(first[0], [0.0, 1.0])
    np.testing.assert_array_equal(first[1], [2.0, 3.0])
    np.testing.assert_array_equal(second[0], [0.0, 10.0])
    np.testing.assert_array_equal(second[1], [20.0, 30.0])


def test_onnx_export_writes_both_results_from_one_node_and_round_trips():
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from kiln.interchange import import_onnx, to_onnx

    with kn.Graph().as_default():
        x = kn.placeholder(kn.float64, X.shape, name="x")
        v, i = kn.topk(x, 2, 1)
        mv, mi = kn.max(x, 0)
        a, b = kn.split(x, [1, 4], 1)
        f = kn.function([x], [v, i, mv, mi, a * 2.0, b])
    model = to_onnx(f)
    types = [n.op_type for n in model.graph.node]
    assert types.count("TopK") == 1 and types.count("ArgMax") == 1 and types.count("Split") == 1
    want = f(X)
    session = ort.InferenceSession(model.SerializeToString())
    for got, w in zip(session.run(None, {"x": X}), want):
        np.testing.assert_array_equal(got, w)
    back = import_onnx(model)
    names = sorted(n.op.name for n in back.nodes)
    assert names.count("topk") == 1 and names.count("max_dim") == 1 and names.count("split") == 1
    for got, w in zip(kn.function(back.inputs, back.outputs)(X), want):
        np.testing.assert_array_equal(got, w)
