"""A new binding of a program's symbolic dims (a new batch size) reuses a planned program of
the same shape class (kiln/runtime/rebind.py): its schedule and generated code, with sizes,
offsets and the lower bound recomputed. Expected values: the same function compiled afresh
for each batch size (no template), bit for bit, and NumPy written by hand."""

import gc
import weakref

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kiln as kn
from kiln.passes import memory
from kiln.runtime import codegen


def _mlp_step(seed=0, **kwargs):
    rng = np.random.default_rng(seed)
    w0, w1 = (rng.standard_normal(s).astype(np.float32) for s in ((6, 5), (5, 3)))
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, ("b", 6), name="x")
        labels = kn.placeholder(kn.int64, ("b",), name="labels")
        params = [kn.Variable(w0.copy()), kn.Variable(np.zeros(5, np.float32)),
                  kn.Variable(w1.copy()), kn.Variable(np.zeros(3, np.float32))]  # fmt: skip
        h = kn.relu(x @ params[0] + params[1])
        loss = kn.cross_entropy(h @ params[2] + params[3], labels)
        grads = kn.grad(loss, params)
        updates = {p: p - 0.1 * g for p, g in zip(params, grads)}
        return kn.function([x, labels], [loss, h], updates=updates, **kwargs), params


def _feeds(b, seed):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((b, 6)).astype(np.float32), rng.integers(0, 3, b)


def _count(monkeypatch, module, name):
    calls = []
    original = getattr(module, name)

    def counted(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return calls


def test_new_batch_size_reuses_schedule_and_code_and_agrees_bit_for_bit(monkeypatch):
    f, params = _mlp_step()
    g, params_g = _mlp_step()
    f(*_feeds(8, 0))
    g(*_feeds(8, 0))
    first = f.program.last
    schedules = _count(monkeypatch, codegen, "schedule")
    for k, b in enumerate((5, 3, 12, 7)):
        feeds = _feeds(b, k + 1)
        spec_before = len(f.program._specialized)
        out = f(*feeds)
        assert schedules == []  # this batch size reused the first schedule
        spec = f.program.last
        assert len(f.program._specialized) == spec_before + 1
        assert spec._code is first._code and spec.order is first.order
        assert spec.plan.sizes != first.plan.sizes  # sized for b
        memory.validate_plan(spec.plan.sizes, spec.plan.starts, spec.plan.ends,
                             spec.plan.offsets, spec.plan.arena_bytes)  # fmt: skip
        # the reference: a function with one signature only, planned and generated afresh
        g.program._specialized.clear()
        ref = g(*feeds)
        schedules.clear()
        for a, r in zip(out, ref):
            np.testing.assert_array_equal(a, r)
        for p, q in zip(params, params_g):
            np.testing.assert_array_equal(p.numpy(), q.numpy())
        fresh = g.program.last
        assert spec.floor_bytes == fresh.floor_bytes  # the bound of any order, either way


def test_dims_of_one_or_zero_are_another_shape_class(monkeypatch):
    f, _ = _mlp_step()
    f(*_feeds(8, 0))
    first = f.program.last
    f(*_feeds(1, 1))  # broadcasting may decide otherwise at 1: planned afresh
    assert f.program.last._code is not first._code


def test_a_reshape_with_dims_and_a_sum_are_rebound():
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, ("b", 4), name="x")
        y = kn.reshape(x * 2.0, (-1, 2))
        out = kn.sum(kn.tanh(y), axis=1) + 1.0
        f = kn.function([x], [out, y.T])
    first = None
    for b in (3, 5, 2, 9):
        x0 = np.arange(b * 4, dtype=np.float32).reshape(b, 4) / 7
        got, yt = f(x0)
        y0 = (x0 * 2.0).reshape(-1, 2)
        np.testing.assert_allclose(got, np.tanh(y0).sum(axis=1) + 1.0, rtol=1e-6)
        np.testing.assert_array_equal(yt, y0.T)
        first = first or f.program.last
        assert f.program.last._code is first._code
    got, yt = f(np.zeros((0, 4), np.float32))  # empty values: another class, planned afresh
    assert got.shape == (0,) and yt.shape == (2, 0) and f.program.last._code is not first._code


def test_rebound_programs_do_not_keep_their_template_alive():
    f, _ = _mlp_step(cache_size=2)
    f(*_feeds(8, 0))
    first = weakref.ref(f.program.last)
    f(*_feeds(5, 1))
    f(*_feeds(6, 2))  # the first is evicted; the others share its code, not itself
    gc.collect()
    assert first() is None and len(f.program._specialized) == 2
    f(*_feeds(8, 3))
    assert f.program.last._code is f.program._specialized[((6, 6), (6,))]._code


@settings(max_examples=15, deadline=None)
@given(
    st.lists(st.integers(2, 9), min_size=2, max_size=4),
    st.sampled_from(["relu", "tanh", "exp"]),
    st.booleans(),
    st.integers(0, 2**16),
)
def test_any_sequence_of_batch_sizes_agrees_with_fresh_programs(batches, act, fetch_h, seed):
    fn = {"relu": kn.relu, "tanh": kn.tanh, "exp": kn.exp}[act]
    rng = np.random.default_rng(seed)
    w0 = rng.standard_normal((4, 3)).astype(np.float32)

    def build():
        with kn.Graph().as_default():
            x = kn.placeholder(kn.float32, ("b", 4), name="x")
            w = kn.Variable(w0.copy())
            h = fn(x @ w)
            loss = kn.mean(h * h)
            (gw,) = kn.grad(loss, [w])
            fetches = [loss, h] if fetch_h else [loss]
            return kn.function([x], fetches, updates={w: w - 0.01 * gw}), w

    f, w = build()
    g, w_ref = build()
    for b in batches:
        x0 = rng.standard_normal((b, 4)).astype(np.float32)
        out = f(x0)
        g.program._specialized.clear()
        ref = g(x0)
        for a, r in zip(out, ref):
            np.testing.assert_array_equal(a, r)
        np.testing.assert_array_equal(w.numpy(), w_ref.numpy())


@pytest.mark.parametrize("n", [1, 5, 40, 200])
def test_small_and_large_placements_give_the_same_offsets(n, monkeypatch):
    # plan_offsets' plain-Python placement (few buffers) against its NumPy one
    rng = np.random.default_rng(n)
    for _ in range(50):
        sizes = rng.integers(0, 300, n).tolist()
        starts = rng.integers(0, 20, n)
        ends = (starts + rng.integers(0, 10, n)).tolist()
        small = memory.plan_offsets(sizes, starts.tolist(), ends, 64)
        monkeypatch.setattr(memory, "_SMALL_PLAN", 0)
        large = memory.plan_offsets(sizes, starts.tolist(), ends, 64)
        monkeypatch.undo()
        assert small == large


def test_dynamic_nodes_are_found_with_the_first_plan_not_the_first_new_batch(monkeypatch):
    from kiln.runtime import rebind

    f, params = _mlp_step()
    g, params_g = _mlp_step()
    f(*_feeds(8, 0))
    g(*_feeds(8, 0))
    assert f.program.graph in rebind._DYNAMIC  # found while planning b=8
    found = _count(monkeypatch, rebind, "dynamic_nodes")
    for k, b in enumerate((5, 8, 3, 5)):  # alternating sizes, one already planned
        feeds = _feeds(b, k + 1)
        out = f(*feeds)
        g.program._specialized.clear()  # the reference: planned afresh at this size
        ref = g(*feeds)
        for a, r in zip(out, ref):
            np.testing.assert_array_equal(a, r)
        for p, q in zip(params, params_g):
            np.testing.assert_array_equal(p.numpy(), q.numpy())
    assert found == []  # no new binding looked for them again


def test_kept_storage_decisions_are_those_found_afresh(monkeypatch):
    """A new batch size of the template's order takes its buffer owners and lifetimes from
    the template (`rebind.kept_storage`): the same decisions, frees and offsets as working
    them out again for that order (the reference: the same signature with the copy refused)."""
    from kiln.runtime import rebind

    f, _ = _mlp_step()
    f(*_feeds(8, 0))
    owners = _count(monkeypatch, codegen.Specialized, "_owners")
    for k, b in enumerate((5, 12, 3)):
        feeds = _feeds(b, k + 1)
        f(*feeds)
        kept = f.program.last
        assert owners == []  # taken from the template
        f.program._specialized.pop(tuple(a.shape for a in feeds))
        with monkeypatch.context() as m:
            m.setattr(rebind, "kept_storage", lambda spec, plan: None)
            f(*feeds)
        again = f.program.last
        assert owners == [1] and again.order is kept.order
        owners.clear()
        assert again.storage == kept.storage and again.owned == kept.owned
        assert again.frees == kept.frees and again.plan.offsets == kept.plan.offsets
        assert again.placed_keys == kept.placed_keys
        assert again.early_copies == kept.early_copies
        assert again.floor_bytes == kept.floor_bytes
