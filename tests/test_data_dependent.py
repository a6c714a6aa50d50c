"""Functions whose result's length depends on the data (`nonzero`, `masked_select`, `x[mask]`,
`argwhere`, `unique`, `unique_consecutive`, `bincount`, `repeat_interleave` by tensor counts)
in graph mode, eagerly and under kn.compile: the length is a dim the run binds
(kiln/ops/dynamic.py, kiln/runtime/dynamic.py).

Expected values come from PyTorch (run on the same inputs; skipped without torch) or are
computed by hand (said where)."""

from __future__ import annotations

import numpy as np
import pytest

import kiln as kn

torch = pytest.importorskip("torch")

X = np.array([[1.5, -2.0, 0.0], [3.0, 0.0, -1.0], [0.5, 2.0, 2.0]], np.float32)
INTS = np.array([3, 1, 2, 3, 1, 5, 5, 0], np.int64)


def _graph(fn, *arrays, plan=True):
    """`fn` on placeholders of the arrays' dtypes and static shapes, run on the arrays."""
    with kn.Graph().as_default():
        inputs = [kn.placeholder(a.dtype, a.shape, name=f"x{i}") for i, a in enumerate(arrays)]
        out = fn(*inputs)
        outs = list(out) if isinstance(out, tuple) else [out]
        return kn.function(inputs, outs, plan=plan)(*arrays)


def _eager(fn, *arrays):
    out = fn(*(kn.tensor(a) for a in arrays))
    return [o.numpy() for o in (out if isinstance(out, tuple) else (out,))]


def _compiled(fn, *arrays):
    out = kn.compile(fn)(*(kn.tensor(a) for a in arrays))
    return [o.numpy() for o in (out if isinstance(out, tuple) else (out,))]


def _torch(fn, *arrays):
    out = fn(*(torch.tensor(a) for a in arrays))
    return [o.numpy() for o in (out if isinstance(out, tuple) else (out,))]


def _zero_negatives(L, x):
    y = x.clone()
    y[y < 0] = 0.0  # item assignment with a mask: a write of a static shape
    return y


CASES = {
    "setitem-mask": (_zero_negatives, X),
    "nonzero": (lambda L, x: L.nonzero(x), X),
    "nonzero-as-tuple": (lambda L, x: L.nonzero(x, as_tuple=True), X),
    "nonzero-0d": (lambda L, x: L.nonzero(x), np.float32(2.0)),
    "nonzero-0d-as-tuple": (lambda L, x: L.nonzero(x, as_tuple=True), np.float32(0.0)),
    "argwhere": (lambda L, x: L.argwhere(x > 0), X),
    "masked_select": (lambda L, x: L.masked_select(x, x > 0), X),
    "masked_select-broadcast": (lambda L, x: L.masked_select(x, x[0] > 0), X),
    "bool-index": (lambda L, x: x[x > 0] * 2, X),
    "bool-index-rows": (lambda L, x: x[(x > 0).all(1) | (x[:, 0] > 2)], X),
    "bool-index-mixed": (lambda L, x: x[1:, x[0] != 0], X),
    "bool-index-and-ints": (lambda L, x: x[x[:, 0] > 1, 2], X),
    "bool-index-0d": (lambda L, x: x[x.sum() > 0], X),
    "index_put-mask": (lambda L, x: x.index_put((x < 0,), L.tensor(9.0)), X),
    "unique": (lambda L, x: L.unique(x, return_inverse=True, return_counts=True), INTS),
    "unique-float": (lambda L, x: L.unique(x, return_inverse=True), X),
    "unique-dim0": (
        lambda L, x: L.unique(x, dim=0, return_inverse=True, return_counts=True),
        np.array([[1, 2], [0, 1], [1, 2], [0, 0], [0, 1]], np.int64),
    ),
    "unique-dim1": (
        lambda L, x: L.unique(x, dim=1, return_counts=True),
        np.array([[1, 0, 1, 1], [2, 1, 2, 0]], np.int64),
    ),
    "unique_consecutive": (
        lambda L, x: L.unique_consecutive(x, return_inverse=True, return_counts=True),
        INTS,
    ),
    "unique_consecutive-dim": (
        lambda L, x: L.unique_consecutive(x, dim=0, return_inverse=True, return_counts=True),
        np.array([[1, 2], [1, 2], [0, 1], [1, 2]], np.int64),
    ),
    "bincount": (lambda L, x: L.bincount(x), INTS),
    "bincount-minlength": (lambda L, x: L.bincount(x, minlength=9), INTS),
    "bincount-weights": (
        lambda L, x: L.bincount(x, weights=L.ones(8, dtype=L.float32) * 0.5),
        INTS,
    ),
    "repeat_interleave": (
        lambda L, x: L.repeat_interleave(L.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]), x, 0),
        np.array([2, 0, 1], np.int64),
    ),
    "repeat_interleave-counts": (lambda L, x: L.repeat_interleave(x), np.array([1, 0, 3])),
}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("mode", ["graph", "unplanned", "eager", "compile"])
def test_matches_pytorch(name, mode):
    fn, x = CASES[name]
    want = _torch(lambda t: fn(torch, t), x)
    run = {
        "graph": lambda: _graph(lambda s: fn(kn, s), x),
        "unplanned": lambda: _graph(lambda s: fn(kn, s), x, plan=False),
        "eager": lambda: _eager(lambda t: fn(kn, t), x),
        "compile": lambda: _compiled(lambda t: fn(kn, t), x),
    }[mode]
    got = run()
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype, (g, w)
        np.testing.assert_array_equal(g, w)


def test_by_hand():
    # x[x > 0] of X row by row: 1.5, 3.0, 0.5, 2.0, 2.0; their sum 9.0
    sel, total, where = _graph(lambda x: (x[x > 0], x[x > 0].sum(), kn.nonzero(x < 0)), X)
    np.testing.assert_array_equal(sel, [1.5, 3.0, 0.5, 2.0, 2.0])
    assert total == 9.0
    np.testing.assert_array_equal(where, [[0, 1], [1, 2]])  # X's negatives: -2 and -1
    # bincount of INTS: 0 once, 1 twice, 2 once, 3 twice, 4 never, 5 twice
    (counts,) = _graph(kn.bincount, INTS)
    np.testing.assert_array_equal(counts, [1, 2, 1, 2, 0, 2])


def test_shape_inference_propagates_the_count():
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, ("b", 3), name="x")
        y = x[x > 0]
        (n,) = y.shape
        assert isinstance(n, kn.Dim) and n != x.shape[0]
        z = y * 2 + y  # the same count: no broadcast
        assert z.shape == (n,)
        assert kn.nonzero(x).shape[1] == 2 and y.sum().shape == ()
        f = kn.function([x], [z, y.sum(), y.shape[0] * 0 + kn.ones(()) if False else z.mean()])
        a = np.array([[1.0, -1.0, 2.0]], np.float32)
        z1, s1, m1 = f(a)
        np.testing.assert_array_equal(z1, [3.0, 6.0])  # (1, 2) * 3
        assert s1 == 3.0 and m1 == 4.5


def test_a_compiled_function_rebinds_the_count_on_each_call():
    def f(x):
        return (x[x > 0] * 3).sum(), x[x > 0]

    g = kn.compile(f)
    for value, want in [([1.0, -1.0, 2.0], [1.0, 2.0]), ([1.0, 5.0, 2.0], [1.0, 5.0, 2.0]),
                        ([-1.0, -5.0, -2.0], [])]:  # fmt: skip
        total, sel = g(kn.tensor(np.array(value, np.float32)))
        np.testing.assert_array_equal(sel.numpy(), np.array(want, np.float32))
        assert total.item() == 3 * sum(want)
    assert g.trace_count == 1  # traced once: the count is bound by each run, not a new signature


def test_the_graph_rebinds_the_count_and_feeds_dims():
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (None,), name="x")
        f = kn.function([x], [kn.unique(x), x[x > 0] + 1])
    for value in ([3.0, 1.0, 3.0], [2.0, -1.0], [5.0, 4.0, -3.0, 4.0, 5.0], []):
        a = np.array(value, np.float32)
        u, s = f(a)
        np.testing.assert_array_equal(u, np.unique(a))  # NumPy's unique: sorted
        np.testing.assert_array_equal(s, a[a > 0] + 1)


def test_counts_that_do_not_broadcast_are_a_shape_error():
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (4,), name="x")
        a, b = x[x > 0], x[x < 0]
        f = kn.function([x], [a + b])  # the counts broadcast as PyTorch's sizes do
        np.testing.assert_array_equal(f(np.array([1, -1, 2, -2], np.float32))[0], [0, 0])
        # one positive and three negatives: the 1 stretches (by hand: 1 + [-1, -2, -3])
        np.testing.assert_array_equal(f(np.array([1, -1, -2, -3], np.float32))[0], [0, -1, -2])
        # three positives, no negative: sizes 3 and 0 do not broadcast
        with pytest.raises(kn.ShapeError, match=r"shapes \[3\] and \[0\].*node 'add"):
            f(np.array([1, 2, 3, 0], np.float32))


def test_gradients_through_a_mask():
    # d/dx sum(x[x > 0] ** 2) = 2x where x > 0, else 0 (by hand)
    want = np.where(X > 0, 2 * X, 0).astype(np.float32)
    (g,) = _graph(lambda x: kn.grad((x[x > 0] ** 2).sum(), [x])[0], X)
    np.testing.assert_array_equal(g, want)
    t = kn.tensor(X, requires_grad=True)
    kn.compile(lambda x: (x[x > 0] ** 2).sum())(t).backward()
    np.testing.assert_array_equal(t.grad.numpy(), want)
    # masked_select and index_put with a mask: the overwritten elements get no gradient
    (g2,) = _graph(lambda x: kn.grad((x.index_put((x < 0,), kn.tensor(0.0)) * 3).sum()
                                     + kn.masked_select(x, x > 1).sum(), [x])[0], X)  # fmt: skip
    np.testing.assert_array_equal(g2, np.where(X < 0, 0, 3) + (X > 1))


def test_a_training_step_through_a_mask():
    # the loss of the positive predictions only; the same step in PyTorch gives the weights
    rng = np.random.default_rng(0)
    xs, ys = rng.normal(size=(8, 3)).astype(np.float32), rng.normal(size=8).astype(np.float32)
    w0 = rng.normal(size=3).astype(np.float32)

    def loss_of(L, w, x, y):
        p = x @ w
        keep = p > 0
        return ((p[keep] - y[keep]) ** 2).mean()

    tw = torch.tensor(w0, requires_grad=True)
    topt = torch.optim.SGD([tw], lr=0.1)
    for _ in range(3):
        topt.zero_grad()
        loss_of(torch, tw, torch.tensor(xs), torch.tensor(ys)).backward()
        topt.step()
    # graph mode: an optimizer's minimize
    with kn.Graph().as_default():
        w = kn.Variable(w0.copy(), name="w")
        x = kn.placeholder(kn.float32, (8, 3), name="x")
        y = kn.placeholder(kn.float32, (8,), name="y")
        step = kn.optim.SGD(lr=0.1).minimize(loss_of(kn, w, x, y))
        train = kn.function([x, y], [step])
        for _ in range(3):
            train(xs, ys)
        np.testing.assert_allclose(w.numpy(), tw.detach().numpy(), rtol=1e-5)
    # kn.compile: an eager training step
    kw = kn.tensor(w0.copy(), requires_grad=True)
    kopt = kn.optim.SGD([kw], lr=0.1)
    step = kn.compile(lambda w, x, y: loss_of(kn, w, x, y))
    for _ in range(3):
        kopt.zero_grad()
        step(kw, kn.tensor(xs), kn.tensor(ys)).backward()
        kopt.step()
    np.testing.assert_allclose(kw.detach().numpy(), tw.detach().numpy(), rtol=1e-5)


def test_planned_equals_unplanned_and_values_stay_outside_the_arena():
    def build(x):
        h = kn.exp(x) * 2  # static: planned in the arena
        sel = h[x > 0]
        return (
            (sel * sel + 1).sum() + h.sum(),
            kn.unique(sel),
            kn.bincount(kn.cast(h, "int64").flatten()),
        )

    rng = np.random.default_rng(1)
    for _ in range(3):
        a = rng.normal(size=(5, 4)).astype(np.float32)
        planned, unplanned = _graph(build, a), _graph(build, a, plan=False)
        for p, u in zip(planned, unplanned):
            np.testing.assert_array_equal(p, u)
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (5, 4), name="x")
        f = kn.function([x], list(build(x)))
        f(a)
        spec = f.program.last
        # every value of the count's length is a fresh array, never in the arena
        assert spec.dynamic and all(spec.storage.get(k) is None for k in spec.dynamic)
        assert spec.plan.arena_bytes > 0  # the static values keep their plan
        assert not any(n.op.name == "fused" and id(n.out) in spec.dynamic for n in spec.order)


def test_a_failed_run_leaves_variables_as_they_were():
    with kn.Graph().as_default():
        w = kn.Variable(np.arange(4, dtype=np.float32), name="w")
        x = kn.placeholder(kn.float32, (4,), name="x")
        a, b = x[x > 0], x[x < 0]
        bump = kn.function([x], [a + b], updates={w: w.index_put((x > 0,), kn.tensor(7.0))})
        bump(np.array([1, -1, 2, -2], np.float32))
        np.testing.assert_array_equal(w.numpy(), [7, 1, 7, 3])
        with pytest.raises(kn.ShapeError):
            bump(np.array([1, 2, 3, 0], np.float32))  # three positives, no negative
        np.testing.assert_array_equal(w.numpy(), [7, 1, 7, 3])
        with pytest.raises(kn.ShapeError):  # the same with in-place updates off the table
            bump(np.array([0, -1, -2, -2], np.float32))
        np.testing.assert_array_equal(w.numpy(), [7, 1, 7, 3])


def test_dumps_round_trip():
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (None, 3), name="x")
        outs = [x[x > 0] * 2, kn.unique(x.flatten()), kn.bincount(kn.cast(x.abs(), "int64")[0])]
    text = kn.dump(outs, "json")
    g = kn.load_graph(text)
    kn.verify(g)
    assert kn.dump(g, "json") == text and "nonzero" in kn.dump(g, "text")
    a = np.array([[1.0, -2.0, 3.0], [0.5, 0.5, -4.0]], np.float32)
    with kn.Graph().as_default():
        x2 = kn.placeholder(kn.float32, (None, 3), name="x")
        again = kn.function([x2], [x2[x2 > 0] * 2, kn.unique(x2.flatten()),
                                   kn.bincount(kn.cast(x2.abs(), "int64")[0])])(a)  # fmt: skip
    for got, want in zip(kn.function(g.inputs, g.outputs)(a), again):
        np.testing.assert_array_equal(got, want)


def test_errors_name_the_op():
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (None, 3), name="x")
        with pytest.raises(kn.errors.KilnError, match="unique"):
            kn.unique(kn.placeholder(kn.float32, (2, None), name="y"), dim=0)
        f = kn.function([x], [kn.bincount(kn.cast(x, "int64")[0])])
        with pytest.raises(IndexError, match="scatter"):  # a negative value: out of range
            f(np.array([[1, -1, 0]], np.float32))


def test_lengths_derived_from_a_count():
    # slices, joins and factories of a count's length: their lengths are bound by the run too
    # (values from NumPy on y = v[v > 0])
    v = np.array([1.0, -1.0, 2.0, 3.0, -4.0, 5.0], np.float32)
    y_np = v[v > 0]
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (6,), name="x")
        y = x[x > 0]
        outs = [y[1:], y[::2], y.flip(0), kn.concat([y, x]), kn.zeros_like(y) + 1,
                y[1:].reshape(1, -1), kn.grad((y[1:] ** 2).sum(), [x])[0]]  # fmt: skip
        got = kn.function([x], outs)(v)
    want = [y_np[1:], y_np[::2], y_np[::-1], np.concatenate([y_np, v]), np.ones_like(y_np),
            y_np[1:].reshape(1, -1), np.where((v > 0) & (np.arange(6) > 0), 2 * v, 0)]  # fmt: skip
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("level", ["1", "2"])
def test_under_kiln_checks(monkeypatch, level):
    # KILN_CHECKS=1 checks kernels run in place, =2 numerics too: the same values
    monkeypatch.setenv("KILN_CHECKS", level)
    got = _graph(lambda x: ((x[x > 0] * 2).sum() + kn.exp(x).sum(), kn.unique(x[x != 0])), X)
    want = _graph(lambda x: ((x[x > 0] * 2).sum() + kn.exp(x).sum(), kn.unique(x[x != 0])), X,
                  plan=False)  # fmt: skip
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_onnx_export_runs_the_same(tmp_path):
    ort = pytest.importorskip("onnxruntime")
    v = np.array([[1.0, -1.0, 2.0], [0.0, 3.0, -2.0]], np.float32)
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (2, 3), name="x")
        counts = kn.cast(kn.abs(x[0]), "int64")
        outs = [x[x > 0] * 2, kn.nonzero(x), kn.bincount(counts), kn.nonzero(x.sum() > 0)]
        outs += [kn.unique(x, return_counts=True)[1], kn.repeat_interleave(x, counts, dim=1)]
        f = kn.function([x], outs)
        want = f(v)
        kn.export_onnx(f, str(tmp_path / "dyn.onnx"))
    got = ort.InferenceSession(str(tmp_path / "dyn.onnx")).run(None, {"x": v})
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_array_equal(g, w)
