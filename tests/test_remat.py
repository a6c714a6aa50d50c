"""kn.function(..., memory_budget=): recomputation chosen to fit a budget.

The reference for every value is the same step without a budget: recomputation runs the same
kernels on the same inputs, so results and updated Variables must be equal bit for bit.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kiln as kn
from kiln.passes.remat import choices, long_lived

WIDTH, BATCH = 32, 16


def _weights(depth, seed=0):
    rng = np.random.default_rng(seed)
    scale = np.float32(1 / np.sqrt(WIDTH))
    f32 = np.float32
    return [(rng.standard_normal((WIDTH, WIDTH)).astype(f32) * scale,
             rng.standard_normal(WIDTH).astype(f32) * f32(0.1)) for _ in range(depth)]  # fmt: skip


def _step(weights, budget=None, activations=None, dropout=0.0, embed=False):
    """A training step of an MLP (SGD through updates) and its Variables."""
    activations = activations or ["relu"] * len(weights)
    kn.manual_seed(0)  # the same dropout draws in every graph built here
    with kn.Graph().as_default():
        if embed:
            ids = kn.placeholder(kn.int64, (BATCH,), name="ids")
            table = kn.Variable(np.linspace(-1, 1, 10 * WIDTH, dtype=np.float32)
                                .reshape(10, WIDTH), name="table")  # fmt: skip
            x, params = kn.embedding(table, ids), [table]
        else:
            ids = kn.placeholder(kn.float32, (BATCH, WIDTH), name="x")
            x, params = ids, []
        labels = kn.placeholder(kn.int64, (BATCH,), name="labels")
        h = x
        for k, ((w0, b0), act) in enumerate(zip(weights, activations)):
            w, b = kn.Variable(w0, name=f"w{k}"), kn.Variable(b0, name=f"b{k}")
            params += [w, b]
            h = getattr(kn, act)(h @ w + b)
            if dropout:
                h = kn.dropout(h, dropout)
        loss = kn.cross_entropy(h, labels)
        grads = kn.grad(loss, params)
        updates = {p: p - 0.1 * g for p, g in zip(params, grads)}
        f = kn.function([ids, labels], loss, updates=updates, memory_budget=budget)
    return f, params


def _data(embed=False, seed=1):
    rng = np.random.default_rng(seed)
    x = (rng.integers(0, 10, BATCH) if embed
         else rng.standard_normal((BATCH, WIDTH)).astype(np.float32))  # fmt: skip
    return x, rng.integers(0, WIDTH, BATCH)


def _run_both(depth, budget, steps=2, **kw):
    weights = _weights(depth)
    x, labels = _data(kw.get("embed", False))
    plain, p_plain = _step(weights, None, **kw)
    tight, p_tight = _step(weights, budget, **kw)
    for _ in range(steps):
        a, b = plain(x, labels), tight(x, labels)
        np.testing.assert_array_equal(a, b)
    for p, q in zip(p_plain, p_tight):
        np.testing.assert_array_equal(p.numpy(), q.numpy(), err_msg=p.name)
    return plain.plan, tight.plan


def test_budget_lowers_the_arena_of_a_deep_mlp_and_changes_no_bit():
    plain, tight = _run_both(16, budget=1)  # unreachable: the smallest arena tried
    assert tight.recomputed, "a 16-layer MLP's activations are recomputable"
    assert tight.arena_bytes < plain.arena_bytes * 0.6
    assert tight.lower_bound_bytes <= tight.peak_bytes <= tight.arena_bytes
    assert "recomputed in the backward pass" in tight.summary()


def test_reachable_budget_is_met_with_the_fewest_recomputed_values():
    plain, smallest = _run_both(16, budget=1, steps=1)
    budget = (plain.arena_bytes + smallest.arena_bytes) // 2
    _, tight = _run_both(16, budget=budget, steps=1)
    assert tight.arena_bytes <= budget
    assert len(tight.recomputed) <= len(smallest.recomputed)


def test_budget_already_met_recomputes_nothing():
    plain, tight = _run_both(4, budget=2**30, steps=1)
    assert tight.recomputed is None and tight.arena_bytes == plain.arena_bytes


def test_random_draws_are_kept_not_recomputed():
    # Dropout's mask must be the one the forward pass drew: values equal the plain step's.
    _, tight = _run_both(8, budget=1, dropout=0.25)
    assert tight.recomputed


def test_failed_step_with_recomputation_changes_no_variable():
    weights = _weights(8)
    f, params = _step(weights, budget=1, embed=True)
    x, labels = _data(embed=True)
    f(x, labels)
    before = [p.numpy().copy() for p in params]
    with pytest.raises(kn.IndexOutOfRangeError):
        f(np.full(BATCH, 99), labels)  # an id past the table: embedding's check fails
    for p, old in zip(params, before):
        np.testing.assert_array_equal(p.numpy(), old)


def test_gradients_waiting_for_updates_are_not_recomputed():
    f, _ = _step(_weights(8))
    f(*_data())
    graph = f.graph
    names = {n.name for n, _ in long_lived(graph).values()}
    assert names and all(not name.startswith("grad/") for name in names)
    assert all(dropped <= set(long_lived(graph)) for _, dropped in choices(graph))


@pytest.mark.parametrize("budget", [0, -5, 1.5, True, "16MiB"])
def test_bad_budget_is_refused(budget):
    with pytest.raises(kn.GraphError, match="memory_budget"):
        _step(_weights(2), budget=budget)


@settings(max_examples=12, deadline=None)
@given(
    depth=st.integers(3, 12),
    acts=st.lists(st.sampled_from(["relu", "tanh", "sigmoid", "exp"]), min_size=12, max_size=12),
    fraction=st.floats(0.0, 1.0),
)
def test_random_training_graphs_recompute_bit_for_bit(depth, acts, fraction):
    # The arena is validated (no overlap) when planned; here: never below the bound of any
    # order, and recomputed values give exactly the unbudgeted step's results.
    weights = _weights(depth, seed=depth)
    plain, _ = _step(weights, None, activations=acts[:depth])
    x, labels = _data()
    plain(x, labels)
    budget = max(1, int(plain.plan.arena_bytes * fraction))
    _, tight = _run_both(depth, budget, steps=1, activations=acts[:depth])
    assert tight.lower_bound_bytes <= tight.arena_bytes
    assert tight.arena_bytes <= plain.plan.arena_bytes


# -- kn.compile(..., memory_budget=): kn.checkpoint regions chosen automatically -------------


def _compiled_mlp_grads(budget, depth=12):
    kn.manual_seed(0)
    layers = [kn.nn.Linear(WIDTH, WIDTH) for _ in range(depth)]

    @kn.compile(memory_budget=budget)
    def loss(x):
        h = x
        for layer in layers:
            h = kn.tanh(layer(h))
        return (h * h).sum()

    x = kn.tensor(_data()[0])
    loss(x).backward()
    return [p.grad.numpy() for layer in layers for p in layer.parameters()], loss.last


def test_compile_budget_recomputes_regions_and_keeps_gradients_bit_for_bit():
    plain, t_plain = _compiled_mlp_grads(None)
    tight, t_tight = _compiled_mlp_grads(4 * BATCH * WIDTH * 4)  # four activations
    assert t_plain.checkpointing is None and t_tight.checkpointing is not None
    kept = lambda t: sum(  # noqa: E731
        int(np.prod(s.shape)) * s.dtype.itemsize
        for s in t.feeds
        if s.node.op.name not in ("variable", "placeholder")
    )
    assert kept(t_tight) < kept(t_plain) / 2
    for a, b in zip(plain, tight):
        np.testing.assert_array_equal(a, b)


def test_compile_budget_already_met_changes_nothing():
    _, traced = _compiled_mlp_grads(2**30, depth=3)
    assert traced.checkpointing is None


def test_compile_refuses_a_bad_budget():
    with pytest.raises(kn.GraphError, match="memory_budget"):
        kn.compile(lambda x: x, memory_budget=-1)


def _compiled_whole_step(budget, depth=12):
    """kn.compile of a whole SGD step (the gradient and kn.optim.SGD's updates traced in)."""
    kn.manual_seed(0)
    layers = [kn.nn.Linear(WIDTH, WIDTH) for _ in range(depth)]
    params = [p for layer in layers for p in layer.parameters()]
    opt = kn.optim.SGD(params, lr=0.1)

    @kn.compile(memory_budget=budget)
    def step(x, labels):
        h = x
        for layer in layers:
            h = kn.relu(layer(h))
        loss = kn.nn.functional.cross_entropy(h, labels)
        opt.minimize(loss)
        return loss

    x, labels = _data()
    losses = [step(kn.tensor(x), kn.tensor(labels)).numpy() for _ in range(2)]
    return losses, [p.detach().numpy() for p in params], step.last.function.plan


def test_compiled_whole_step_recomputes_under_its_budget_bit_for_bit():
    # The reference is the same step without a budget: recomputation reruns the same kernels.
    # kn.optim.SGD's rate is a Variable, so each weight update is a GEMM reading the
    # activation itself (no transposed view in between); its read is a backward one too.
    l_plain, p_plain, plan = _compiled_whole_step(None)
    budget = plan.arena_bytes // 2
    l_tight, p_tight, tight = _compiled_whole_step(budget)
    assert tight.recomputed and tight.arena_bytes <= budget
    np.testing.assert_array_equal(l_plain, l_tight)
    for a, b in zip(p_plain, p_tight):
        np.testing.assert_array_equal(a, b)


def test_compile_regions_hold_activations_only():
    # A weight's transpose (made from a Variable alone) is no activation: a region ending on
    # it would be recomputed only once that weight's gradient exists.
    _, traced = _compiled_mlp_grads(4 * BATCH * WIDTH * 4)
    nodes = {id(n): n for n in traced.graph.nodes}
    for region in traced.graph.checkpoints:
        for nid in region:
            n = nodes[nid]
            assert not (n.op.name == "transpose" and n.inputs[0].node.op.name == "variable")
