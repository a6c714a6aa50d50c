"""A kn.compile'd call that records a tape entry writes its residuals straight into its own
backward arena, at the offsets the backward program's memory plan chose; a backward without
retain_graph then reuses their bytes once read, so residuals and backward buffers share one
arena (kiln/tracing/traced.py, `Traced.placement`; kiln/runtime/codegen.py, placed feeds)."""

import sys
import weakref

import numpy as np
import pytest

import kiln as kn
from kiln.errors import SavedTensorError

WIDTH, BATCH = 32, 16


@pytest.fixture(autouse=True)
def _place_small_residuals(monkeypatch):
    """These small programs' residuals are placed too (by default only from 1 MiB)."""
    from kiln.tracing import traced

    monkeypatch.setattr(traced, "PLACED_MIN_BYTES", 0)


def _model(depth=8, segment=None, budget=None, norm=False, width=WIDTH):
    kn.manual_seed(0)
    layers = [kn.nn.Linear(width, width) for _ in range(depth)]
    bn = kn.nn.BatchNorm1d(width) if norm else None

    def run(h, first, last):
        for layer in layers[first:last]:
            h = kn.relu(layer(h))
        return h

    def loss_of(x):
        h, step = x, segment or depth
        if bn is not None:
            h = bn(h)  # training mode: its running statistics are the program's updates
        for first in range(0, depth, step):
            if segment:
                h = kn.checkpoint(lambda v, a=first: run(v, a, a + step), h)
            else:
                h = run(h, first, first + step)
        return (h * h).sum()

    params = [p for layer in layers for p in layer.parameters()]
    return kn.compile(loss_of, memory_budget=budget), params, layers


def _x(seed=0, batch=BATCH, width=WIDTH):
    rng = np.random.default_rng(seed)
    return kn.tensor(rng.standard_normal((batch, width)).astype(np.float32))


def _kept_bytes(traced) -> int:
    extras = traced.function.outputs[len(traced.outputs) :]
    return sum(int(np.prod(s.shape)) * s.dtype.itemsize for s in extras)


def _grads(params):
    return [p.grad.numpy().copy() for p in params]


def test_residuals_are_views_of_one_arena_whose_bytes_the_backward_reuses():
    fn, _, _ = _model()
    loss = fn(_x())
    entry = loss.grad_fn
    assert entry.attrs["placed"]
    traced = fn.last
    program, offsets, nbytes = traced.placement()
    held = entry.attrs["residuals"]
    residuals, pieces = held[: traced.n_extras], held[traced.n_extras :]
    made = [p for p in pieces if p is not None]  # the pieces that hold residuals
    assert residuals and all(any(np.shares_memory(r, p) for p in made) for r in residuals)
    spec = program.last
    assert len(pieces) == len(spec.pieces) and sum(p.nbytes for p in made) < nbytes
    loss.backward(retain_graph=True)  # runs the program that keeps them apart, for its plan
    apart = _kept_bytes(traced) + traced.grad_function.plan.arena_bytes
    # one arena costs less than the residuals and the backward's own arena side by side
    assert nbytes < apart
    # and a buffer of the backward takes the bytes of a residual after its last read
    plan = program.last.plan
    placed = [k for k, note in enumerate(plan.notes) if note.startswith("placed feed")]
    assert len(placed) == len(offsets)

    def overlap(a, b):
        return plan.offsets[a] < plan.offsets[b] + plan.sizes[b] and (
            plan.offsets[b] < plan.offsets[a] + plan.sizes[a]
        )

    assert any(overlap(k, j) for k in placed for j in range(len(plan.sizes)) if j not in placed)


def test_gradients_equal_the_separate_arena_program_bit_for_bit_and_torch():
    torch = pytest.importorskip("torch")
    for segment in (None, 2):
        fn, params, layers = _model(segment=segment)
        x = _x()
        fn(x).backward()  # placed: donated into its arena
        placed = _grads(params)
        fn2, params2, _ = _model(segment=segment)
        fn2(x).backward(retain_graph=True)  # today's program: residuals apart, kept
        for a, b in zip(placed, _grads(params2)):
            np.testing.assert_array_equal(a, b)
        # the reference: PyTorch's autograd on the same weights
        h = torch.tensor(x.numpy())
        ws = [torch.tensor(p.detach().numpy(), requires_grad=True) for p in params]
        for w, b in zip(ws[::2], ws[1::2]):
            h = torch.relu(h @ w.T + b)
        (h * h).sum().backward()
        for a, w in zip(placed, ws):
            np.testing.assert_allclose(a, w.grad.numpy(), rtol=1e-4, atol=1e-4)


def test_retain_graph_leaves_the_placed_residuals_intact():
    fn, params, _ = _model(segment=4)
    loss = fn(_x())
    residuals = loss.grad_fn.attrs["residuals"][: fn.last.n_extras]
    before = [r.copy() for r in residuals]
    loss.backward(retain_graph=True)
    for r, b in zip(residuals, before):
        np.testing.assert_array_equal(r, b)
    first = _grads(params)
    loss.backward()  # now donated: reuses them
    for p, g in zip(params, first):  # accumulated: twice the first gradient
        np.testing.assert_array_equal(p.grad.numpy(), 2 * g)
    with pytest.raises(SavedTensorError, match="second time"):
        loss.backward()


def test_two_calls_before_their_backwards_have_an_arena_each():
    fn, params, _ = _model()
    alone = []
    for seed in (1, 2):
        for p in params:
            p.grad = None
        fn(_x(seed)).backward()
        alone.append(_grads(params))
    for p in params:
        p.grad = None
    first, second = fn(_x(1)), fn(_x(2))
    n = fn.last.n_extras
    assert not np.shares_memory(
        first.grad_fn.attrs["residuals"][0], second.grad_fn.attrs["residuals"][0]
    )
    # the arena pieces the forward call made (those holding residuals; which ones depends on
    # the backward's plan): each call's own
    made = [
        k for k, piece in enumerate(first.grad_fn.attrs["residuals"][n:], n) if piece is not None
    ]
    assert made
    for k in made:
        assert first.grad_fn.attrs["residuals"][k] is not second.grad_fn.attrs["residuals"][k]
    second.backward()
    for got, want in zip(_grads(params), alone[1]):
        np.testing.assert_array_equal(got, want)
    for p in params:
        p.grad = None
    first.backward()
    for got, want in zip(_grads(params), alone[0]):
        np.testing.assert_array_equal(got, want)


def test_a_call_with_updates_keeps_its_residuals_as_arrays_of_their_own():
    # BatchNorm's running statistics are updates of the forward program: its outputs are
    # not written into the caller's arrays there, so nothing is placed
    fn, params, _ = _model(depth=3, norm=True)
    loss = fn(_x())
    assert not loss.grad_fn.attrs["placed"] and fn.last.placement() is None
    loss.backward()
    fn2, params2, _ = _model(depth=3, norm=True)
    fn2(_x()).backward(retain_graph=True)
    for a, b in zip(_grads(params), _grads(params2)):
        np.testing.assert_array_equal(a, b)


def test_memory_budget_counts_the_backward_arena_not_only_the_residuals():
    fn, params, _ = _model()
    fn(_x()).backward()
    plain = fn.last
    kept, arena = _kept_bytes(plain), plain.placement()[2]
    assert kept < arena
    budget = arena - 1  # the residuals alone fit; with the backward's buffers they do not
    fn2, params2, _ = _model(budget=budget)
    fn2(_x()).backward()
    tight = fn2.last
    assert tight.checkpointing is not None and "backward arena" in tight.checkpointing
    assert tight.placement()[2] <= budget
    for a, b in zip(_grads(params), _grads(params2)):  # recomputed: the same bits
        np.testing.assert_array_equal(a, b)


def test_an_arena_without_the_pieces_of_the_placed_feeds_is_refused():
    fn, _, _ = _model(depth=2)
    fn(_x())
    program, _, _ = fn.last.placement()
    feeds = [np.zeros(s.shape, s.dtype) for s in program.feeds]
    pieces = program.last.pieces
    with pytest.raises(kn.GraphError, match="placed feeds"):
        program.run(list(feeds), arena=[None] * len(pieces))
    with pytest.raises(kn.GraphError, match="pieces"):
        program.run(list(feeds), arena=[None] * (len(pieces) + 1))


def test_the_backward_lets_go_of_each_piece_after_its_last_read():
    # the run's arena is in pieces; the program takes over those the caller made (holding
    # the placed feeds) and drops each after its last read: traced line by line, the pieces
    # die one after another while it runs
    fn, _, _ = _model(depth=6)
    fn(_x())
    program, _, _ = fn.last.placement()
    spec = program.last
    assert "free(" in spec.source and "make(" in spec.source and len(spec.pieces) > 2
    pieces = [np.empty(p.hi - p.lo, np.uint8) if p.placed else None for p in spec.pieces]
    refs = [weakref.ref(p) for p in pieces if p is not None]
    values = []
    for k, s in enumerate(program.feeds):
        offset = spec.placement(k) if k in program.placed else None
        if offset is None:
            values.append(np.ones(s.shape, s.dtype))
            continue
        p = spec.piece_of(offset)
        start = offset - spec.pieces[p].lo
        view = pieces[p][start : start + s.dtype.itemsize * int(np.prod(s.shape))]
        values.append(view.view(s.dtype).reshape(s.shape))
        values[-1][...] = 1
        del view  # the feeds' one reference is the list the program empties
    alive = []  # at each line of the generated program: how many of the caller's pieces live

    def tracer(frame, event, arg):
        if frame.f_code.co_filename != spec._code.co_filename:
            return None

        def line(frame, event, arg):
            alive.append(sum(r() is not None for r in refs))
            return line

        return line

    sys.settrace(tracer)
    try:
        program.run(values, host=False, donate=True, arena=pieces)
    finally:
        sys.settrace(None)
    assert pieces == [] and values == []  # taken over
    # a fetched view of a buffer (a bias gradient, the reshape of a sum) is copied where it
    # is made, so no piece is kept to the return
    assert all(p.last < len(spec.order) for p in spec.pieces)
    assert alive[0] == len(refs) > 1 and alive[-1] == 0
    assert len(set(alive)) > 2  # freed at several points, not all at the end
