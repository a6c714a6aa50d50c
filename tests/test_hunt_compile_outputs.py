"""A compiled function whose outputs are views of one another (`return y, y[0]`, `y, y.t()`,
`{"a": y, "b": y.view(6)}`, `y, y.diagonal()`) returns them sharing memory, as eager code
and PyTorch do: a later in-place change of one is seen through the other. kn.compile
returned independent copies, so the change was silently lost. (Views of an argument were
already returned as views: tests/test_compile_review_returns.py.) Expected values are torch
2.13's, worked out by hand in the comments (the last test reruns them)."""

import numpy as np
import pytest

import kiln as kn

A = np.arange(6.0, dtype=np.float32).reshape(2, 3)


def _row(m, x):
    y = x * 2
    return y, y[0]


def _transposed(m, x):
    y = x * 2
    return y, y.t()


def _dict(m, x):
    y = x - 1
    return {"a": y, "b": y.view(6)}


def _diagonal(m, x):
    y = x * 1
    return y, y.diagonal()


def _chain(m, x):
    y = x + 1
    r = y.t()
    return r[1], y, r  # r[1] views r, which views y


# (program, change made to the result, every returned value afterwards)
CASES = {
    # 2A = [[0, 2, 4], [6, 8, 10]]; its row 0 plus 100
    "row": (_row, lambda r: r[1].add_(100), ([[100, 102, 104], [6, 8, 10]], [100, 102, 104])),
    # 2A negated, seen through its transpose
    "transposed": (
        _transposed,
        lambda r: r[0].mul_(-1),
        ([[0, -2, -4], [-6, -8, -10]], [[0, -6], [-2, -8], [-4, -10]]),
    ),
    # A - 1 plus 10, through the flat view
    "dict": (
        _dict,
        lambda r: r["b"].add_(10),
        ([[9, 10, 11], [12, 13, 14]], [9, 10, 11, 12, 13, 14]),
    ),
    # A's diagonal (0 and 4) plus 50
    "diagonal": (_diagonal, lambda r: r[1].add_(50), ([[50, 1, 2], [3, 54, 5]], [50, 54])),
    # A + 1 = [[1, 2, 3], [4, 5, 6]]; its column 1 (2 and 5) zeroed through (A + 1).t()[1]
    "chain": (
        _chain,
        lambda r: r[0].zero_(),
        ([0, 0], [[1, 0, 3], [4, 0, 6]], [[1, 4], [0, 0], [3, 6]]),
    ),
}


def _values(r):
    return list(r.values()) if isinstance(r, dict) else list(r)


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("mode", ["eager", "compiled"])
def test_outputs_that_view_each_other_share_memory(name, mode):
    fn, change, want = CASES[name]
    f = (lambda x: fn(kn, x)) if mode == "eager" else kn.compile(lambda x: fn(kn, x))
    for _ in range(2):  # the compiled program's second call too
        x = kn.tensor(A)
        r = f(x)
        change(r)
        for got, w in zip(_values(r), want):
            np.testing.assert_array_equal(got.numpy(), np.float32(w))
        np.testing.assert_array_equal(x.numpy(), A)


def test_the_expected_values_are_torchs():
    torch = pytest.importorskip("torch")
    for fn, change, want in CASES.values():
        r = fn(torch, torch.tensor(A))
        change(r)
        for got, w in zip(_values(r), want):
            np.testing.assert_array_equal(got.numpy(), np.float32(w))
