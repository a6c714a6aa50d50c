"""The plan's lower bound holds for every order: on small random training graphs, every
topological order (forced through the scheduler) plans an arena at least the bound that the
chosen order reports, and each order's program computes the same values."""

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kiln as kn
import kiln.runtime.codegen as codegen

UNARY = {"tanh": kn.tanh, "exp": lambda a: kn.exp(a * 0.1), "square": lambda a: a * a}


@pytest.fixture(autouse=True)
def exact_kernels(monkeypatch):
    """Orders are compared bit for bit: compiled fused loops give NumPy's bits (KILN_EXACT)."""
    monkeypatch.setenv("KILN_EXACT", "1")


@st.composite
def training_graphs(draw):
    """A few layers of (x @ w, an elementwise op), a sum, its gradient and SGD updates."""
    layers = draw(st.integers(1, 2))
    ops = [draw(st.sampled_from(sorted(UNARY))) for _ in range(layers)]
    return ops, draw(st.integers(0, 1))  # whether the loss is also fetched


def _build(ops, fetch_loss, seed=0):
    rng = np.random.default_rng(seed)
    x = kn.placeholder(kn.float64, (4, 4), name="x")
    ws = [kn.Variable(rng.standard_normal((4, 4)) * 0.5, name=f"w{k}") for k in range(len(ops))]
    h = x
    for w, op in zip(ws, ops):
        h = UNARY[op](h @ w)
    loss = kn.sum(h)
    grads = kn.grad(loss, ws)
    f = kn.function(
        [x], [loss] if fetch_loss else [], updates={w: w - 0.1 * g for w, g in zip(ws, grads)}
    )
    return f, ws


def _topological_orders(nodes, limit=400):
    index = {id(n.out): i for i, n in enumerate(nodes)}
    deps = [{index[id(i)] for i in n.inputs if id(i) in index} for n in nodes]

    def extend(order, done):
        if len(order) == len(nodes):
            yield list(order)
            return
        for i in range(len(nodes)):
            if i not in done and deps[i] <= done:
                order.append(i)
                done.add(i)
                yield from extend(order, done)
                order.pop()
                done.discard(i)

    return list(itertools.islice(extend([], set()), limit))


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(graph=training_graphs())
def test_every_order_needs_at_least_the_reported_bound(graph):
    ops, fetch_loss = graph
    xv = np.random.default_rng(1).standard_normal((4, 4))
    with kn.Graph().as_default():
        f, ws = _build(ops, fetch_loss)
        expected = [np.array(o) for o in f(xv)]
        after = [w.numpy().copy() for w in ws]
        bound = f.program.last.floor_bytes  # as computed, before the plan caps it
        assert f.plan.lower_bound_bytes <= f.plan.peak_bytes <= f.plan.arena_bytes
        program = f.graph.nodes
    orders = _topological_orders(program)
    assert orders
    real = codegen.schedule
    peaks = []
    try:
        for order in orders[:: max(1, len(orders) // 40)]:
            # NOTE: an order may break an in-place update's ordering edges; the scheduler is
            # told the edges, so a forced order is used only where it respects them.
            def forced(nodes, sizes, after=None, order=order):
                pos = {i: k for k, i in enumerate(order)}
                for i, before in (after or {}).items():
                    if any(pos[b] > pos[i] for b in before):
                        return real(nodes, sizes, after)
                return [nodes[i] for i in order]

            codegen.schedule = forced
            with kn.Graph().as_default():
                g, gws = _build(ops, fetch_loss)
                got = g(xv)
                assert g.plan.peak_bytes >= bound, (order, g.plan.summary())
                peaks.append(g.plan.peak_bytes)
                for a, b in zip(got, expected):
                    np.testing.assert_array_equal(a, b)
                for w, want in zip(gws, after):
                    np.testing.assert_array_equal(w.numpy(), want)
    finally:
        codegen.schedule = real
    TIGHT.append(min(peaks) == bound)


TIGHT: list = []


def test_the_bound_is_reached_by_some_order_on_some_graphs():
    # Without this the test above would pass for a bound of 0: on these small graphs the
    # bound equals the best order's live-set peak on about a third of the examples.
    assert any(TIGHT), TIGHT
