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
