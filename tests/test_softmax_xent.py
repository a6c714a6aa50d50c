"""`fuse_softmax_xent` (kiln/passes/softmax_xent.py): the rewrite fires on the cross-entropy a
user writes (kiln's and `kn.nn.functional`'s, graph mode and `kn.compile`), and the program
gives the bits of the same program without the pass (loss, gradients, updated Variables).
The kernels' own values are checked by their op-table rows (tests/op_table_losses.py, against
SciPy) and their vjp by tests/test_op_grads.py."""

import numpy as np
import pytest

import kiln as kn
import kiln.nn.functional as F
from kiln.passes import PIPELINE

WITHOUT = [p for p in PIPELINE if p[0] != "fuse_softmax_xent"]
FUSED = ("log_softmax_take", "log_softmax_take_grad")


def _ops(graph) -> list:
    return [n.op.name for n in graph.nodes]


def _step(loss_fn, n, c, passes, dtype=np.float32, fetch_logp=False, batch=None):
    """A graph-mode SGD step of a linear layer under `loss_fn(logits, labels)`: returns the
    function (fetching the loss, the logits' gradient and maybe the log-softmax)."""
    rng = np.random.default_rng(0)
    with kn.Graph().as_default():
        x = kn.placeholder(dtype, (batch or n, 6), name="x")
        labels = kn.placeholder(kn.int64, (batch or n,), name="labels")
        w = kn.Variable(rng.standard_normal((6, c)).astype(dtype), name="w")
        b = kn.Variable(np.zeros(c, dtype), name="b")
        logits = x @ w + b
        loss = loss_fn(logits, labels)
        gl, gw, gb = kn.grad(loss, [logits, w, b])
        fetches = [loss, gl] + ([kn.log_softmax(logits, dim=1)] if fetch_logp else [])
        updates = {w: w - 0.5 * gw, b: b - 0.5 * gb}
        return kn.function([x, labels], fetches, updates=updates, passes=passes), (w, b)


def _run_twice(f, variables, x, labels):
    outs = [f(x, labels) for _ in range(2)]
    return [np.asarray(a) for out in outs for a in out] + [v.numpy() for v in variables]


LOSSES = {
    "kn.cross_entropy": kn.cross_entropy,
    "F.cross_entropy": F.cross_entropy,
    "F.cross_entropy-sum": lambda y, t: F.cross_entropy(y, t, reduction="sum"),
    "log_softmax+nll_loss": lambda y, t: F.nll_loss(F.log_softmax(y, dim=1), t),
}


@pytest.mark.parametrize("name", sorted(LOSSES))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rewrite_fires_and_gives_the_unfused_bits(name, dtype):
    rng = np.random.default_rng(1)
    n, c = 32, 10
    for scale in (1.0, 50.0):  # large logits: terms of the softmax underflow to zero
        x = (rng.standard_normal((n, 6)) * scale).astype(dtype)
        labels = rng.integers(0, c, n)
        if name.startswith("F."):
            labels[::7] = -100  # ignore_index: these rows count nothing
        fused, fvars = _step(LOSSES[name], n, c, None, dtype)
        plain, pvars = _step(LOSSES[name], n, c, WITHOUT, dtype)
        ops = _ops(fused.graph)
        assert all(op in ops for op in FUSED), ops
        assert not any(op in _ops(plain.graph) for op in FUSED)
        assert "scatter_along_axis" not in ops and "take_along_axis" not in ops
        got, want = _run_twice(fused, fvars, x, labels), _run_twice(plain, pvars, x, labels)
        for g, w in zip(got, want):
            assert g.tobytes() == w.tobytes()


def test_bits_outside_exact_mode(monkeypatch):
    """KILN_EXACT=0: exp and log run kiln's own float32 kernels in every path (vecmath),
    the fused kernels' included (they take the ops' prepared kernels): still the same bits."""
    monkeypatch.setenv("KILN_EXACT", "0")
    rng = np.random.default_rng(6)
    x = (rng.standard_normal((64, 6)) * 10).astype(np.float32)
    labels = rng.integers(0, 10, 64)
    fused, fvars = _step(kn.cross_entropy, 64, 10, None)
    plain, pvars = _step(kn.cross_entropy, 64, 10, WITHOUT)
    assert "log_softmax_take_grad" in _ops(fused.graph)
    for g, w in zip(_run_twice(fused, fvars, x, labels), _run_twice(plain, pvars, x, labels)):
        assert g.tobytes() == w.tobytes()


def test_symbolic_batch():
    """One program for every batch size (a symbolic dim): rewritten, and the unfused bits at
    each size."""
    rng = np.random.default_rng(7)
    fused, fvars = _step(kn.cross_entropy, None, 10, None, batch="batch")
    plain, pvars = _step(kn.cross_entropy, None, 10, WITHOUT, batch="batch")
    assert "log_softmax_take_grad" in _ops(fused.graph)
    for n in (5, 64, 1):
        x = rng.standard_normal((n, 6)).astype(np.float32)
        labels = rng.integers(0, 10, n)
        for g, w in zip(_run_twice(fused, fvars, x, labels), _run_twice(plain, pvars, x, labels)):
            assert g.tobytes() == w.tobytes()


def test_values_match_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    x = rng.standard_normal((16, 6)).astype(np.float32)
    labels = rng.integers(0, 10, 16)
    labels[3] = -100
    f, (w, b) = _step(F.cross_entropy, 16, 10, None)
    w0, b0 = w.numpy().copy(), b.numpy().copy()
    loss, gl = f(x, labels)
    logits = torch.tensor(x @ w0 + b0, requires_grad=True)
    expected = torch.nn.functional.cross_entropy(logits, torch.tensor(labels))
    expected.backward()
    np.testing.assert_allclose(loss, expected.item(), rtol=1e-6)
    np.testing.assert_allclose(gl, logits.grad.numpy(), rtol=1e-5, atol=1e-7)


def test_no_rewrite_where_the_log_softmax_is_read_elsewhere():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((8, 6)).astype(np.float32)
    labels = rng.integers(0, 5, 8)
    fused, fvars = _step(kn.cross_entropy, 8, 5, None, fetch_logp=True)
    plain, pvars = _step(kn.cross_entropy, 8, 5, WITHOUT, fetch_logp=True)
    assert not any(op in _ops(fused.graph) for op in FUSED)
    for g, w in zip(_run_twice(fused, fvars, x, labels), _run_twice(plain, pvars, x, labels)):
        assert g.tobytes() == w.tobytes()


def test_forward_alone_is_rewritten():
    """An evaluation program (no gradient): the loss alone becomes log_softmax_take."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((8, 5)).astype(np.float32)
    labels = rng.integers(0, 5, 8)
    with kn.Graph().as_default():
        logits = kn.placeholder(kn.float32, (8, 5), name="logits")
        t = kn.placeholder(kn.int64, (8,), name="t")
        loss = kn.cross_entropy(logits, t, reduction="none")
        fused, plain = (
            kn.function([logits, t], loss),
            kn.function([logits, t], loss, passes=WITHOUT),
        )
    assert "log_softmax_take" in _ops(fused.graph)
    assert fused(x, labels).tobytes() == plain(x, labels).tobytes()


def test_compiled_step_is_rewritten_and_matches_eager():
    """kn.compile of a whole step (minimize inside) and eager mode: the same losses and
    parameters, step after step (eager runs the unfused ops)."""
    rng = np.random.default_rng(5)
    xs = [kn.tensor(rng.standard_normal((16, 8)).astype(np.float32)) for _ in range(3)]
    ts = [kn.tensor(rng.integers(0, 4, 16)) for _ in range(3)]

    def model():
        kn.manual_seed(0)
        return kn.nn.Sequential(kn.nn.Linear(8, 12), kn.nn.ReLU(), kn.nn.Linear(12, 4))

    compiled_model, eager_model = model(), model()
    opt = kn.optim.SGD(lr=0.1)

    @kn.compile
    def step(x, t):
        loss = F.cross_entropy(compiled_model(x), t)
        opt.minimize(loss)
        return loss

    eager_opt = kn.optim.SGD(eager_model.parameters(), lr=0.1)
    for x, t in zip(xs, ts):
        got = step(x, t)
        eager_opt.zero_grad()
        want = F.cross_entropy(eager_model(x), t)
        want.backward()
        eager_opt.step()
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-6)
    (traced,) = step.cache.values()
    assert all(op in _ops(traced.function.graph) for op in FUSED)
    for p, q in zip(compiled_model.parameters(), eager_model.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-5, atol=1e-7)


def test_label_out_of_range_raises_as_unfused():
    f, _ = _step(kn.cross_entropy, 4, 3, None)
    x = np.zeros((4, 6), np.float32)
    with pytest.raises(kn.IndexOutOfRangeError, match="index 3 is out of bounds"):
        f(x, np.array([0, 1, 2, 3]))


@pytest.fixture
def row_loops(monkeypatch):
    """The compiled row loops built on the first call (skipped without numba), outside exact
    mode (kiln's exp: the loops' condition)."""
    pytest.importorskip("numba")
    from kiln.ops import losses

    monkeypatch.setenv("KILN_EXACT", "0")
    monkeypatch.setattr(losses._ROW_LOOPS, "after", 1)
    monkeypatch.setattr(losses._ROW_LOOPS, "state", dict.fromkeys(losses._ROW_LOOPS.state, 0))
    return losses


# rows x classes: classes below 8 (a plain sum), of 8 running sums with a rest, one block of
# 128, and above 128 (NumPy's halves: 129 splits 64 + 65, 300 into 144 + 156, 1000 deeper)
SHAPES = [(64, 10), (7, 1), (5, 3), (33, 8), (9, 128), (9, 129), (4, 300), (3, 1000)]


@pytest.mark.parametrize("shape", SHAPES)
def test_compiled_rows_give_the_numpy_calls_bits(row_loops, shape):
    """The loops against the kernels' NumPy calls (which give the unfused bits, above), on
    wide logits (terms underflowing to 0), a NaN row, an infinite logit, signed zeros and a
    zero or negative-zero cotangent."""
    from kiln.ops.vecmath import array_fn

    losses = row_loops
    rng = np.random.default_rng(8)
    n, c = shape
    from kiln.ops import REGISTRY

    exp, log = (lambda xp, x, out=None: array_fn("exp")(x, out)), REGISTRY["log"].impl
    for scale in (1.0, 30.0, 300.0):
        x = (rng.standard_normal(shape) * scale).astype(np.float32)
        x[-1, :] = 0.0
        x[-1, ::2] = -0.0  # a row of signed zeros: its maximum is a zero
        if c > 2:
            x[0, 1] = np.nan
            x[1, 2] = np.inf
        idx = rng.integers(0, c, (n, 1))
        ct = rng.standard_normal((n, 1)).astype(np.float32)
        ct[0], ct[-1] = 0.0, -0.0
        rows = losses._rows_for(x.dtype, 1, 2, exp)
        assert rows is not None and rows._loops(x, idx) is not None
        with np.errstate(all="ignore"):
            want = losses._forward(np, x, idx, None, 1, exp, log)
            want_grad = losses._backward(np, ct, x, idx, None, 1, exp, log)
            got = rows.forward(np, x, idx, np.empty((n, 1), np.float32), log)
            got_grad = rows.backward(np, ct, x, idx, None)
        assert got.tobytes() == want.tobytes()
        assert got_grad.tobytes() == want_grad.tobytes()


def test_compiled_rows_in_a_step_give_the_unfused_bits(row_loops):
    """The prepared kernels of a planned program run the loops: the bits of the program
    without the pass, step after step (the gradient feeds the updates)."""
    losses = row_loops
    rng = np.random.default_rng(9)
    x = (rng.standard_normal((48, 6)) * 10).astype(np.float32)
    labels = rng.integers(0, 10, 48)
    fused, fvars = _step(kn.cross_entropy, 48, 10, None)
    plain, pvars = _step(kn.cross_entropy, 48, 10, WITHOUT)
    outs = [_run_twice(f, v, x, labels) for f, v in ((fused, fvars), (plain, pvars))]
    for g, w in zip(*outs):
        assert g.tobytes() == w.tobytes()
    assert type(losses._ROW_LOOPS.state[np.dtype(np.float32)]) is tuple  # the loops ran


def test_compiled_rows_check_their_indices(row_loops):
    f, _ = _step(kn.cross_entropy, 4, 3, None)
    x = np.zeros((4, 6), np.float32)
    f(x, np.array([0, 1, 2, 0]))
    for bad in ([0, 1, 2, 3], [0, -1, 2, 0]):
        with pytest.raises(kn.IndexOutOfRangeError, match=f"index {bad[1] if bad[1] < 0 else 3}"):
            f(x, np.array(bad))
