"""Op-table rows for control flow (kiln/ops/control.py): scan, while_loop, cond and get, through
kn.scan / kn.fori_loop / kn.while_loop / kn.cond. Each reference is a plain Python loop (or
if) over NumPy, sharing no code with kiln."""

from __future__ import annotations

import numpy as np
from op_case import OpCase

import kiln as kn


def _normal(*shapes, scale=1.0):
    def make_args(rng, dtype):
        return [np.asarray(scale * rng.standard_normal(s), dtype) for s in shapes]

    return make_args


def _with(make, *extra):
    """`make`'s arrays, then the fixed arrays `extra` (their own dtypes)."""

    def make_args(rng, dtype):
        return [*make(rng, dtype), *(np.asarray(e) for e in extra)]

    return make_args


# -- scan -------------------------------------------------------------------------------------


def rnn(h0, xs, w):
    return kn.scan(lambda h, x: (kn.tanh(h @ w + x), h * 2.0), h0, xs)


def ref_rnn(h0, xs, w):
    h, ys = h0, []
    for x in xs:
        ys.append(h * 2)
        h = np.tanh(h @ w + x)
    return h, np.stack(ys)


def reverse_pairs(c0, xs):
    return kn.scan(lambda c, x: (c + x, c * x), c0, xs, reverse=True)


def ref_reverse_pairs(c0, xs):
    c, ys = c0, [None] * len(xs)
    for t in range(len(xs) - 1, -1, -1):
        ys[t] = c * xs[t]
        c = c + xs[t]
    return c, np.stack(ys)


def pytree(a, b, xs, ws):
    def f(carry, x):
        u, v = x
        new = {
            "a": carry["a"] * u + carry["b"][0],
            "b": [kn.tanh(carry["b"][0] - kn.sum(v) + kn.sum(carry["a"]))],
        }
        return new, (kn.sum(new["a"]), None)

    (carry, (sums, none)) = kn.scan(f, {"a": a, "b": [b]}, (xs, ws))
    assert none is None
    return carry["a"], carry["b"][0], sums


def ref_pytree(a, b, xs, ws):
    sums = []
    for u, v in zip(xs, ws):
        a, b = a * u + b, np.tanh(b - v.sum() + a.sum())
        sums.append(a.sum())
    return a, b, np.stack(sums).astype(a.dtype)


def no_xs(c0, w):
    return kn.scan(lambda c, _: (c * w, kn.sum(c)), c0, None, length=4)


def ref_no_xs(c0, w):
    c, ys = c0, []
    for _ in range(4):
        ys.append(c.sum())
        c = c * w
    return c, np.stack(ys).astype(c0.dtype)


def fori(x, w):
    return kn.fori_loop(1, 4, lambda i, v: v * w + i, x)


def ref_fori(x, w):
    for i in range(1, 4):
        x = x * w + i
    return x


def nested(c0, xs, w):
    def outer(c, x):
        return kn.fori_loop(0, 2, lambda i, v: kn.sin(v) * w + x, c), c * x

    return kn.scan(outer, c0, xs)


def ref_nested(c0, xs, w):
    c, ys = c0, []
    for x in xs:
        ys.append(c * x)
        for _ in range(2):
            c = np.sin(c) * w + x
    return c, np.stack(ys)


# -- while_loop -----------------------------------------------------------------------------


def halving(x):
    n, v = kn.while_loop(lambda c: kn.sum(c[1]) > 1.0, lambda c: (kn.add(c[0], 1), c[1] * 0.5),
                         (np.int64(0), kn.abs(x) + 1.0))  # fmt: skip
    return kn.add(v, n)  # PyTorch's promotion: the float's dtype


def ref_halving(x):
    n, v = np.int64(0), np.abs(x) + 1
    while v.sum() > 1:
        n, v = n + 1, v * 0.5
    return (v + n).astype(x.dtype)


def fori_dynamic(x, n):
    return kn.fori_loop(0, n, lambda i, v: v * 0.5 + i, x)


def ref_fori_dynamic(x, n):
    for i in range(int(n)):
        x = x * 0.5 + i
    return x


# -- cond -----------------------------------------------------------------------------------


def branches(x, y):
    return kn.cond(
        kn.sum(x) > 0, lambda a, b: (a * b, kn.exp(a)), lambda a, b: (a - b, kn.abs(a) * b), x, y
    )


def ref_branches(x, y):
    return (x * y, np.exp(x)) if x.sum() > 0 else (x - y, np.abs(x) * y)


def captures(x, w):
    return kn.cond(kn.sum(w) < 0, lambda a: a @ w, lambda a: kn.tanh(a) @ w.T, x)


def ref_captures(x, w):
    return x @ w if w.sum() < 0 else np.tanh(x) @ w.T


CASES = [
    OpCase("scan", "rnn", rnn, _normal(3, (5, 3), (3, 3), scale=0.5), ref_rnn),
    OpCase("scan", "reverse", reverse_pairs, _normal((2,), (4, 2)), ref_reverse_pairs),
    OpCase("scan", "pytree", pytree, _normal((3,), (), (4, 3), (4, 2), scale=0.7), ref_pytree),
    OpCase("scan", "no-xs", no_xs, _normal((2, 3), (3,)), ref_no_xs),
    OpCase("scan", "fori_loop", fori, _normal((3,), (3,)), ref_fori),
    OpCase("scan", "nested", nested, _normal((3,), (4, 3), (3,)), ref_nested),
    OpCase("get", "scan-results", rnn, _normal(2, (3, 2), (2, 2), scale=0.5), ref_rnn),
    OpCase("while_loop", "halving", halving, _normal((3,)), ref_halving),
    OpCase(
        "while_loop",
        "fori_loop-dynamic",
        fori_dynamic,
        _with(_normal((2,)), np.int64(3)),
        ref_fori_dynamic,
    ),  # fmt: skip
    OpCase(
        "cond",
        "true",
        branches,
        lambda rng, d: [np.abs(_normal((3,))(rng, d)[0]) + 0.1, *_normal((3,))(rng, d)],
        ref_branches,
    ),  # fmt: skip
    OpCase(
        "cond",
        "false",
        branches,
        lambda rng, d: [-np.abs(_normal((3,))(rng, d)[0]) - 0.1, *_normal((3,))(rng, d)],
        ref_branches,
    ),  # fmt: skip
    OpCase("cond", "captures", captures, _normal((2, 3), (3, 3)), ref_captures),
]
