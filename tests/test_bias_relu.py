"""`fuse_bias_relu` and `fuse_relu_grad_bias` (kiln/passes/bias_relu.py) and their kernels
`bias_relu` and `relu_grad_bias` (kiln/ops/epilogue.py): the rewrites fire on the layers a user
writes (graph mode, `kn.nn` modules under `kn.compile`), and the program gives the bits of the
same program without the passes, by the compiled loops and by NumPy's kernels (the path
without numba). Values against NumPy: tests/op_table_epilogue.py."""

import numpy as np
import pytest

import kiln as kn
import kiln.ops.epilogue as epilogue
from kiln.graph.opdef import REGISTRY
from kiln.passes import PIPELINE, fuse_relu_grad_bias

MINE = ("fuse_bias_relu", "fuse_relu_grad_bias", "fuse_bias_update")
WITHOUT = [p for p in PIPELINE if p[0] not in MINE]
# fuse_relu_grad_bias is not in the default pipeline (its packed buffer lives as long as the
# bias gradient it holds: more memory under a budget): these programs add it before fusing
_AT = [name for name, _ in PIPELINE].index("fuse_elementwise")
# (without fuse_bias_update, which would take the bias gradients' sums first)
WITH = [*(p for p in PIPELINE[:_AT] if p[0] != "fuse_bias_update"),
        ("fuse_relu_grad_bias", fuse_relu_grad_bias), *PIPELINE[_AT:]]  # fmt: skip


def _ops(graph) -> list:
    return [n.op.name for n in graph.nodes]


def _mlp_step(passes, batch, dtype=np.float32):
    """A two-layer relu MLP's SGD step in graph mode: the function and its Variables."""
    rng = np.random.default_rng(0)
    sizes = [12, 96, 64, 5]
    with kn.Graph().as_default():
        x = kn.placeholder(dtype, (batch, sizes[0]), name="x")
        labels = kn.placeholder(kn.int64, (batch,), name="labels")
        params = []
        h = x
        for k, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
            w = kn.Variable((rng.standard_normal((a, b)) / np.sqrt(a)).astype(dtype), name=f"w{k}")
            bias = kn.Variable(rng.standard_normal(b).astype(dtype) * 0.1, name=f"b{k}")
            params += [w, bias]
            h = h @ w + bias
            if k < len(sizes) - 2:
                h = kn.relu(h)
        loss = kn.cross_entropy(h, labels)
        grads = kn.grad(loss, params)
        updates = {p: p - 0.1 * g for p, g in zip(params, grads)}
        return kn.function([x, labels], loss, updates=updates, passes=passes), params


@pytest.fixture(params=["loop", "numpy"])
def path(request, monkeypatch):
    """The compiled loop (built at once, for every size; skipped without numba) or NumPy's
    kernels (the loop refused, as without numba)."""
    if request.param == "loop":
        pytest.importorskip("numba")
        monkeypatch.setattr(epilogue, "LOOP_SIZE", 1)
        for table in (epilogue._LOOPS, epilogue._GRAD_LOOPS, epilogue._SUM_LOOPS):
            monkeypatch.setattr(table, "after", 1)
            monkeypatch.setattr(table, "state", dict.fromkeys(table.state, 0))
    else:
        for table in (epilogue._LOOPS, epilogue._GRAD_LOOPS, epilogue._SUM_LOOPS):
            monkeypatch.setattr(table, "state", dict.fromkeys(table.state))
    return request.param


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rewrite_fires_and_gives_the_unfused_bits(path, dtype):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((64, 12)).astype(dtype)
    labels = rng.integers(0, 5, 64)
    fused, fparams = _mlp_step(WITH, 64, dtype)
    plain, pparams = _mlp_step(WITHOUT, 64, dtype)
    ops = _ops(fused.graph)
    assert ops.count("bias_relu") == 2 and ops.count("relu_grad_bias") == 2
    assert "relu" not in ops and "relu_grad" not in ops
    assert not {"bias_relu", "relu_grad_bias"} & set(_ops(plain.graph))
    for _ in range(3):
        assert fused(x, labels).tobytes() == plain(x, labels).tobytes()
    for p, q in zip(fparams, pparams):
        assert p.numpy().tobytes() == q.numpy().tobytes()


def test_kernel_special_values(path):
    """NaN stays, infinities, and zeros (-0.0, sums cancelling to 0) as NumPy's maximum."""
    rng = np.random.default_rng(2)
    y = rng.standard_normal((16, 8)).astype(np.float32)
    b = rng.standard_normal(8).astype(np.float32)
    y[0, :6] = [np.nan, np.inf, -np.inf, -0.0, 0.0, -b[5]]
    b[6] = -0.0
    want = np.maximum(y + b, np.float32(0))
    for _ in range(2):
        got = REGISTRY["bias_relu"].impl(np, y, b)
        assert got.tobytes() == want.tobytes()
        inplace = y.copy()
        assert REGISTRY["bias_relu"].impl(np, inplace, b, out=inplace) is inplace
        assert inplace.tobytes() == want.tobytes()


def test_relu_grad_bias_kernel_against_numpy_sums(path):
    """The loop's row sums are NumPy's, bit for bit: a sum from 0 down the rows, in row
    order (NaN and -0.0 included); below 8 columns NumPy's kernels run."""
    rng = np.random.default_rng(4)
    shapes = [(128, 512, np.float32), (3, 8, np.float64), (300, 9, np.float32),
              (40, 1000, np.float64), (7, 3, np.float32), (100, 1, np.float32)]  # fmt: skip
    for n, m, dtype in shapes:
        ct = (rng.standard_normal((n, m)) * rng.choice([1e-4, 1, 1e4], (n, m))).astype(dtype)
        y = rng.standard_normal((n, m)).astype(dtype)
        ct.reshape(-1)[::5], y.reshape(-1)[::11], ct.reshape(-1)[3] = -0.0, 0.0, np.nan
        grad = np.where(y <= 0, dtype(0), ct)  # torch 2.13's threshold_backward: a select
        want = np.concatenate([grad, np.add.reduce(grad, (0,), None, None, True)])
        for _ in range(2):
            got = REGISTRY["relu_grad_bias"].impl(np, ct, y)
            assert got.tobytes() == want.tobytes(), (n, m, dtype)


def test_not_rewritten_where_the_sum_is_read_elsewhere():
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (4, 3), name="x")
        b = kn.Variable(np.ones(3, np.float32), name="b")
        total = x + b
        f = kn.function([x], [kn.relu(total), total])
    assert "bias_relu" not in _ops(f.graph)


def test_compiled_module_step_is_rewritten():
    kn.manual_seed(0)
    model = kn.nn.Sequential(kn.nn.Linear(8, 16), kn.nn.ReLU(), kn.nn.Linear(16, 3))
    opt = kn.optim.SGD(lr=0.1)

    @kn.compile
    def step(x, t):
        loss = kn.nn.functional.cross_entropy(model(x), t)
        opt.minimize(loss)
        return loss

    rng = np.random.default_rng(3)
    step(kn.tensor(rng.standard_normal((4, 8)).astype(np.float32)), kn.tensor([0, 1, 2, 0]))
    (traced,) = step.cache.values()
    assert "bias_relu" in _ops(traced.function.graph)


# -- fuse_bias_update / add_colsum -------------------------------------------------------------

NO_UPDATE = [p for p in PIPELINE if p[0] != "fuse_bias_update"]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_bias_update_fires_and_gives_the_unfused_bits(path, dtype):
    """Every bias's SGD step is one add_colsum (the last layer's sums the cross-entropy's
    gradient, the others relu_grad's), written into the bias; the bits of the program
    without the pass, step after step, and no larger arena."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((64, 12)).astype(dtype)
    labels = rng.integers(0, 5, 64)
    fused, fparams = _mlp_step(PIPELINE, 64, dtype)
    plain, pparams = _mlp_step(NO_UPDATE, 64, dtype)
    assert _ops(fused.graph).count("add_colsum") == 3
    assert "add_colsum" not in _ops(plain.graph)
    for _ in range(3):
        assert fused(x, labels).tobytes() == plain(x, labels).tobytes()
    for p, q in zip(fparams, pparams):
        assert p.numpy().tobytes() == q.numpy().tobytes()
    assert fused.plan.arena_bytes <= plain.plan.arena_bytes
    assert fused.source.count("alpha=") == 6 and fused.source.count("out=V[") == 6


def test_add_colsum_kernel_against_numpy(path):
    """x + alpha * (NumPy's column sums), bit for bit: the sums from 0 down the rows (NaN and
    -0.0 included), the scaled sum added (the reference: NumPy's reduce, multiply, add, as
    the unfused nodes); below 8 columns NumPy's kernels run; in place into x too."""
    rng = np.random.default_rng(6)
    shapes = [(128, 512, np.float32), (3, 8, np.float64), (300, 9, np.float32),
              (1, 10, np.float32), (7, 3, np.float32), (100, 1, np.float64)]  # fmt: skip
    for n, m, dtype in shapes:
        g = (rng.standard_normal((n, m)) * rng.choice([1e-4, 1, 1e4], (n, m))).astype(dtype)
        g.reshape(-1)[::5] = -0.0
        g.reshape(-1)[3] = np.nan if n * m > 3 else g.reshape(-1)[3]
        x = rng.standard_normal(m).astype(dtype)
        x[0] = -0.0
        for alpha in (-0.01, 1.0, 0.5):
            c = dtype(alpha)
            want = np.add(x, np.multiply(c, np.add.reduce(g, (0,))) if alpha != 1 else
                          np.add.reduce(g, (0,)))  # fmt: skip
            for _ in range(2):
                got = REGISTRY["add_colsum"].impl(np, x, g, alpha=float(c))
                assert got.tobytes() == want.tobytes(), (n, m, dtype, alpha)
                inplace = x.copy()
                assert (
                    REGISTRY["add_colsum"].impl(np, inplace, g, out=inplace, alpha=float(c))
                    is inplace
                )
                assert inplace.tobytes() == want.tobytes()


def test_bias_update_not_rewritten_where_the_gradient_is_read_elsewhere():
    with kn.Graph().as_default():
        g = kn.placeholder(kn.float32, (4, 3), name="g")
        b = kn.Variable(np.ones(3, np.float32), name="b")
        total = kn.sum(g, axis=0)
        f = kn.function([g], [total], updates={b: b - 0.5 * total})
        scaled = kn.function([g], [], updates={b: b - kn.sum(g, axis=0) * kn.sum(g)})
    assert "add_colsum" not in _ops(f.graph)
    assert "add_colsum" not in _ops(scaled.graph)  # a scale known only at run time
    value = np.arange(12, dtype=np.float32).reshape(4, 3)
    (got,) = f(value)
    np.testing.assert_array_equal(got, value.sum(axis=0))  # by hand: the column sums
    np.testing.assert_array_equal(b.numpy(), 1 - 0.5 * value.sum(axis=0))
