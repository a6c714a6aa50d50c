"""A differentiated scan under `memory_budget` (kiln/passes/remat_scan.py): the backward scan
recomputes each step's residuals from the step's starting carry instead of reading them
stacked by the forward scan. Gradients equal the stored-residual program's bit for bit
(the same ops on the same values), the memory held (arena and stacked loop values, and
tracemalloc's peak of a run) drops, and the values match a Python loop's."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

import kiln as kn
from kiln.passes.remat_scan import SCAN_CHOICE, stacked_bytes

T, H = 120, 32
RNG = np.random.default_rng(0)
H0, XS, W = (
    RNG.standard_normal(H) * 0.5,
    RNG.standard_normal((T, H)) * 0.5,
    RNG.standard_normal((H, H)) / 6,
)


def _step(c, v, m):
    a = kn.tanh(c @ m + v)
    b = kn.sigmoid(a * 2.0 + c)
    d = kn.exp(-a * a) * b
    return a * 0.5 + d * 0.5, kn.sum(d)


def _function(budget, reverse=False):
    with kn.Graph().as_default():
        h = kn.placeholder(kn.float64, (H,), "h")
        x = kn.placeholder(kn.float64, (T, H), "xs")
        m = kn.placeholder(kn.float64, (H, H), "w")
        last, ys = kn.scan(lambda c, v: _step(c, v, m), h, x, reverse=reverse)
        loss = kn.sum(last * last) + kn.sum(ys * ys)
        grads = kn.grad(loss, [h, x, m])
        return kn.function([h, x, m], [loss, *grads], memory_budget=budget)


def _peak(f) -> int:
    f(H0, XS, W)
    tracemalloc.start()
    try:
        f(H0, XS, W)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("reverse", [False, True])
def test_scan_residuals_recomputed_give_the_same_gradients_bit_for_bit(reverse):
    saved, budgeted = _function(None, reverse), _function(4096, reverse)
    want, got = saved(H0, XS, W), budgeted(H0, XS, W)
    assert budgeted.plan.recompute_choice == SCAN_CHOICE
    assert not saved.plan.recompute_choice
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    # the loss against a Python loop (NumPy), the gradient of h against central differences
    c, total = H0, 0.0
    order = range(T - 1, -1, -1) if reverse else range(T)
    for t in order:
        a = np.tanh(c @ W + XS[t])
        d = np.exp(-a * a) / (1 + np.exp(-(a * 2 + c)))
        c, total = a * 0.5 + d * 0.5, total + d.sum() ** 2
    np.testing.assert_allclose(want[0], (c * c).sum() + total, rtol=1e-12)
    e = np.zeros(H)
    e[3] = 1e-6
    fd = (saved(H0 + e, XS, W)[0] - saved(H0 - e, XS, W)[0]) / 2e-6
    np.testing.assert_allclose(got[1][3], fd, rtol=1e-6)


def test_recomputing_scan_residuals_lowers_the_memory_held():
    """The stacked residuals of the forward scan (several values per step) become one carry
    per step: fewer bytes beside the arena, and a lower measured peak."""
    saved, budgeted = _function(None), _function(4096)
    saved(H0, XS, W), budgeted(H0, XS, W)
    before = saved.plan.arena_bytes + stacked_bytes(saved.graph)
    chosen = budgeted.program.last.graph
    after = budgeted.plan.arena_bytes + stacked_bytes(chosen)
    assert stacked_bytes(chosen) == T * H * 8 + stacked_bytes(saved.graph) - _residual_bytes(
        saved.graph
    )
    assert after < before
    assert _peak(budgeted) < 0.7 * _peak(saved)


def _residual_bytes(graph) -> int:
    """Bytes of the forward scan's stacks that the backward scan reads."""
    scans = [n for n in graph.nodes if n.op.name == "scan"]
    backward = scans[-1]
    nc, nx = backward.attrs["num_carry"], backward.attrs["num_xs"]
    return sum(
        int(np.prod(x.shape)) * x.dtype.itemsize
        for x in backward.inputs[nc : nc + nx]
        if x.node.op.name == "get" and x.node.inputs[0].node is scans[0]
    )


def test_a_large_budget_keeps_the_stacked_residuals():
    f = _function(1 << 30)
    f(H0, XS, W)
    assert not f.plan.recompute_choice
