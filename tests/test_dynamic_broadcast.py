"""Broadcasting between lengths that only a run binds (the count of `x[mask]`, `nonzero`...):
as PyTorch's, sizes equal or one of them 1, the result the other (kiln/shapes.py
`unify_dims`, kiln/runtime/dynamic.py `infer`), in graph mode (planned and not), eagerly and
under kn.compile, gradients included (kiln/ops/reduce.py `sum_to`).

Expected values come from PyTorch, run on the same inputs (skipped without torch)."""

from __future__ import annotations

import numpy as np
import pytest

import kiln as kn

torch = pytest.importorskip("torch")

Y = np.array([0.5, -1.5, 2.0], np.float32)
# counts of (x > 2, x < 0) in each: (1, 3), (3, 1), (2, 2), (1, 1), (0, 1)
XS = {
    "1-3": np.array([3.0, -1.0, -2.0, -3.0, 0.5, 1.0], np.float32),
    "3-1": np.array([3.0, 4.0, 5.0, -1.0, 0.5, 1.0], np.float32),
    "2-2": np.array([3.0, 4.0, -5.0, -1.0, 0.5, 1.0], np.float32),
    "1-1": np.array([-3.0, 4.0, 0.0, 0.0, 0.0, 1.0], np.float32),
    "0-1": np.array([0.0, -1.0, 1.0, 1.0, 1.0, 1.0], np.float32),
}


def _pos(x):
    return x[x > 2]


def _neg(x):
    return x[x < 0]


def _matmul(L, x, y):
    a = _pos(x)[:, None, None] * L.ones(2, 3)  # (c1, 2, 3)
    b = _neg(x)[:, None, None] * y[:, None]  # (c2, 3, 1)
    return a @ b  # batch dims broadcast: (c, 2, 1)


# name -> (fn(L, x, y), the inputs it takes: their count pairs)
CASES = {
    "add": (lambda L, x, y: _pos(x) + _neg(x), ("1-3", "3-1", "2-2", "1-1", "0-1")),
    "mul-static": (lambda L, x, y: _pos(x) * y, ("1-3", "3-1")),
    "static-sub": (lambda L, x, y: y - _neg(x) ** 2, ("1-3", "3-1")),
    "where": (lambda L, x, y: L.where(_pos(x) > 3.5, _neg(x), _pos(x) * 2), ("1-3", "3-1", "2-2")),
    "where-static": (lambda L, x, y: L.where(y > 0, _pos(x), _neg(x)), ("1-3", "3-1", "1-1")),
    "compare": (lambda L, x, y: _pos(x) > -_neg(x), ("1-3", "3-1", "2-2", "0-1")),
    "keepdim": (
        lambda L, x, y: (_neg(x) - _neg(x).mean(0, keepdim=True)) * _pos(x),
        ("1-3", "3-1", "2-2", "1-1"),
    ),
    "expand_as": (lambda L, x, y: _pos(x).expand_as(_neg(x)) * _neg(x), ("1-3", "1-1")),
    "expand": (lambda L, x, y: _neg(x).expand(2, _pos(x).shape[0]) * 3, ("3-1", "1-1")),
    "matmul-batch": (_matmul, ("1-3", "3-1", "2-2")),
    "outer-then-add": (
        lambda L, x, y: _pos(x)[:, None] * _neg(x) + _neg(x)[:, None],
        ("1-3", "3-1", "2-2"),
    ),
    "chain": (lambda L, x, y: (_pos(x) + _neg(x)) * (_neg(x) + y), ("1-3",)),
}
PARAMS = [(name, key) for name, (_, keys) in sorted(CASES.items()) for key in keys]


def _torch(fn, x, y):
    tx, ty = (torch.tensor(a, requires_grad=True) for a in (x, y))
    out = fn(torch, tx, ty)
    if not out.dtype.is_floating_point:
        return [out.numpy()]
    (out**2).sum().backward()
    grads = [t.grad if t.grad is not None else torch.zeros_like(t) for t in (tx, ty)]
    return [out.detach().numpy(), *(g.numpy() for g in grads)]


def _graph(fn, x, y, plan):
    with kn.Graph().as_default():
        px = kn.placeholder(kn.float32, x.shape, name="x")
        py = kn.placeholder(kn.float32, y.shape, name="y")
        out = fn(kn, px, py)
        outs = [out]
        if kn.is_floating_point(out):
            outs += kn.grad((out**2).sum(), [px, py], disconnected="zero")
        return kn.function([px, py], outs, plan=plan)(x, y)


def _eager(fn, x, y, compiled=False):
    tx, ty = (kn.tensor(a, requires_grad=True) for a in (x, y))
    out = (kn.compile(lambda a, b: fn(kn, a, b)) if compiled else lambda a, b: fn(kn, a, b))(tx, ty)
    if not kn.is_floating_point(out):
        return [out.numpy()]
    (out**2).sum().backward()
    grads = [
        t.grad.numpy() if t.grad is not None else np.zeros_like(a) for t, a in ((tx, x), (ty, y))
    ]
    return [out.detach().numpy(), *grads]


@pytest.mark.parametrize("mode", ["graph", "unplanned", "eager", "compile"])
@pytest.mark.parametrize(("name", "key"), PARAMS)
def test_matches_pytorch(name, key, mode):
    fn, _ = CASES[name]
    x = XS[key]
    want = _torch(fn, x, Y)
    got = {
        "graph": lambda: _graph(fn, x, Y, plan=True),
        "unplanned": lambda: _graph(fn, x, Y, plan=False),
        "eager": lambda: _eager(fn, x, Y),
        "compile": lambda: _eager(fn, x, Y, compiled=True),
    }[mode]()
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype, (g, w)
        np.testing.assert_allclose(g, w, rtol=1e-6)


def test_shape_inference():
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (6,), name="x")
        a, b = _pos(x), _neg(x)
        assert (a + a).shape == a.shape  # the same symbol: proven equal, no new dim
        assert (a * 2 - a).shape == a.shape
        assert (a + kn.ones(3)).shape == (3,)  # a is 1 or 3 at run time: the result 3
        assert (a + kn.ones(1)).shape == a.shape
        (c,) = (a + b).shape  # a dim of its own, which the run binds
        assert isinstance(c, kn.Dim) and c not in (a.shape[0], b.shape[0])
        assert (a[:, None] * b).shape == (a.shape[0], b.shape[0])  # no dim is unified
        # dims that feeds bind keep unifying as before (taken as equal, checked by the feeds)
        p = kn.placeholder(kn.float32, (None,), name="p")
        q = kn.placeholder(kn.float32, (None,), name="q")
        assert (p + q).shape in ((p.shape[0],), (q.shape[0],))


ERROR_INPUT = np.array([3.0, 4.0, -1.0, -2.0, -3.0, 0.0], np.float32)  # counts 2 and 3


def _bad(L, x):
    return _pos(x) + _neg(x)  # this line is named by the error


BAD_LINE = _bad.__code__.co_firstlineno + 1


@pytest.mark.parametrize("mode", ["graph", "unplanned", "compile"])
def test_sizes_that_do_not_broadcast_name_the_node_its_line_and_the_shapes(mode):
    with pytest.raises(RuntimeError):  # PyTorch refuses them too
        _bad(torch, torch.tensor(ERROR_INPUT))
    site = f"test_dynamic_broadcast.py:{BAD_LINE}"
    where = rf"shapes \[2\] and \[3\].*node 'add', op add, created at {site}\)"
    with pytest.raises(kn.ShapeError, match=where):
        if mode == "compile":
            kn.compile(lambda t: _bad(kn, t))(kn.tensor(ERROR_INPUT))
        else:
            with kn.Graph().as_default():
                x = kn.placeholder(kn.float32, (6,), name="x")
                kn.function([x], [_bad(kn, x)], plan=mode == "graph")(ERROR_INPUT)
    with pytest.raises(kn.ShapeError, match=r"shapes \[2\] and \[3\]"):  # eager
        _bad(kn, kn.tensor(ERROR_INPUT))


# ops whose dims must be equal, not broadcast (PyTorch's too): concatenation off its axis,
# the contracted dims of a product
EQUAL_DIMS = {
    "cat-dim1": lambda L, x: L.cat([_pos(x)[:, None], _neg(x)[:, None] * 2], 1),
    "dot": lambda L, x: _pos(x) @ _neg(x),
    "matmul-inner": lambda L, x: _pos(x)[None, :] @ _neg(x)[:, None],
}


@pytest.mark.parametrize("plan", [True, False])
@pytest.mark.parametrize("name", sorted(EQUAL_DIMS))
def test_dims_that_must_be_equal(name, plan):
    fn = EQUAL_DIMS[name]
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (6,), name="x")
        out = fn(kn, x)
        f = kn.function([x], [out, kn.grad(out.sum(), [x])[0]], plan=plan)
    tx = torch.tensor(XS["2-2"], requires_grad=True)
    want = fn(torch, tx)
    want.sum().backward()
    got, grad = f(XS["2-2"])
    np.testing.assert_allclose(got, want.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(grad, tx.grad.numpy(), rtol=1e-6)
    for key in ("1-3", "3-1"):  # a size 1 does not stretch here
        with pytest.raises(RuntimeError):
            fn(torch, torch.tensor(XS[key]))
        with pytest.raises(kn.ShapeError, match=rf"node '{out.node.name}'"):
            f(XS[key])


def test_a_compiled_function_broadcasts_each_calls_counts_with_one_trace():
    def f(x, y):
        return (_pos(x) + _neg(x)) * y[:1] + _pos(x).sum()

    g = kn.compile(f)
    for key in ("1-3", "3-1", "2-2", "1-1", "0-1", "1-3"):
        tx, ty = kn.tensor(XS[key], requires_grad=True), kn.tensor(Y, requires_grad=True)
        out = g(tx, ty)
        (out**2).sum().backward()
        rx, ry = torch.tensor(XS[key], requires_grad=True), torch.tensor(Y, requires_grad=True)
        want = f(rx, ry)
        (want**2).sum().backward()
        np.testing.assert_allclose(out.detach().numpy(), want.detach().numpy(), rtol=1e-6)
        np.testing.assert_allclose(tx.grad.numpy(), rx.grad.numpy(), rtol=1e-6)
        np.testing.assert_allclose(ty.grad.numpy(), ry.grad.numpy(), rtol=1e-6)
    assert g.trace_count == 1  # one trace: each run binds its counts


def test_feeds_of_new_lengths_reuse_the_program():
    # a feed dim and the counts: a new length is a new signature, planned from the first's
    # (kiln/runtime/rebind.py), whose attrs the shape rules rerun on must be its own
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (None,), name="x")
        a, b = _pos(x), _neg(x)
        out = (a + b).expand(2, -1) + kn.ones((2, 1))
        f = kn.function([x], [out, kn.grad((out**2).sum(), [x])[0]])
    for v in ([3.0, -1.0, -2.0], [3.0, 4.0, 5.0, -1.0, 0.0], [5.0, -1.0], [3.0, 3.0, -2.0, 1.0]):
        t = torch.tensor(v, requires_grad=True)
        want = (_pos(t) + _neg(t)).expand(2, -1) + torch.ones((2, 1))
        (want**2).sum().backward()
        got, grad = f(np.array(v, np.float32))
        np.testing.assert_allclose(got, want.detach().numpy(), rtol=1e-6)
        np.testing.assert_allclose(grad, t.grad.numpy(), rtol=1e-6)


def test_a_failed_broadcast_leaves_variables_as_they_were():
    with kn.Graph().as_default():
        w = kn.Variable(np.zeros(3, np.float32), name="w")
        x = kn.placeholder(kn.float32, (6,), name="x")
        y = kn.constant(Y)
        f = kn.function([x], [_pos(x) * y], updates={w: w + 1})  # the product: 1 or 3 long
        np.testing.assert_allclose(f(XS["1-3"])[0], XS["1-3"][0] * Y)
        with pytest.raises(kn.ShapeError, match=r"shapes \[2\] and \[3\]"):
            f(XS["2-2"])
        np.testing.assert_array_equal(w.numpy(), [1, 1, 1])  # the first run's update only


def test_static_graphs_keep_their_programs():
    # no dim a run binds: no shape rules at run time, and the same plan as ever
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (None, 3), name="x")
        out = (x - x.mean(0, keepdim=True)) * kn.ones(3)
        f = kn.function([x], [out, kn.grad((out**2).sum(), [x])[0]])
        f(np.ones((4, 3), np.float32))
        assert "infer_dims" not in f.program.last.source and "D = {}" not in f.program.last.source
        assert not any(n.op.name == "sum_to" for n in f.program.graph.nodes)


def test_onnx_export_runs_the_same(tmp_path):
    ort = pytest.importorskip("onnxruntime")
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (6,), name="x")
        y = kn.placeholder(kn.float32, (3,), name="y")
        out = (_pos(x) + _neg(x)) * (_neg(x) - y[:1]) + _pos(x).sum(0, keepdim=True)
        f = kn.function([x, y], [out, *kn.grad((out**2).sum(), [x, y])])
        kn.export_onnx(f, str(tmp_path / "bcast.onnx"))
    session = ort.InferenceSession(str(tmp_path / "bcast.onnx"))
    for key in ("1-3", "3-1", "2-2", "1-1"):
        want = f(XS[key], Y)
        got = session.run(None, {"x": XS[key], "y": Y})
        for g, w in zip(got, want):
            assert g.shape == w.shape
            np.testing.assert_allclose(g, w, rtol=1e-6)
