"""Tests of kiln.frontend.nn_functional and the nn primitives, against NumPy references."""

from __future__ import annotations

import numpy as np
import op_table  # noqa: F401 -- first, so op_table_nn takes OpCase from a complete op_table
import pytest
from op_table_nn import CASES, ref_avg_pool2d, ref_conv2d, ref_max_pool2d

import kiln as kn
from kiln.graph.opdef import REGISTRY

HERE = "test_nn_functional.py:"


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def _compile(fn, *arrays, shapes=None):
    """Runs `fn` in graph mode through `kn.function`, with one placeholder per array."""
    shapes = shapes or [a.shape for a in arrays]
    with kn.Graph().as_default():
        xs = [kn.placeholder(a.dtype, s) for a, s in zip(arrays, shapes)]
        y = fn(*xs)
        f = kn.function(xs, y)
    return y, f(*arrays)


def _check(fn, arrays, expected, shapes=None, **tol):
    """`fn` run eagerly and compiled (on placeholders of `shapes`) both give `expected`."""
    np.testing.assert_allclose(fn(*arrays), expected, **tol)
    y, out = _compile(fn, *arrays, shapes=shapes)
    np.testing.assert_allclose(out, expected, **tol)
    return y


def _np_softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _np_log_softmax(x, axis=-1):
    z = x.astype(np.float64)
    z = z - z.max(axis=axis, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=axis, keepdims=True))


# -- the op table rows: kernel, rules and compiled runs against the references ------------------


def _case_params():
    return [
        pytest.param(case, dtype, id=f"{case.op}-{case.label}-{dtype}")
        for case in CASES
        for dtype in case.dtypes
    ]


@pytest.mark.parametrize("case, dtype", _case_params())
def test_op_table_nn_eager_and_compiled(case, dtype):
    args = case.make_args(np.random.default_rng(1), np.dtype(dtype))
    expected = case.reference(*args)
    tol = {"rtol": case.rtol or 1e-6, "atol": case.atol or 1e-6}
    eager = case.fn(*args)
    assert eager.dtype == np.dtype(dtype)
    np.testing.assert_allclose(eager, expected, **tol)
    sym, compiled = _compile(case.fn, *args)
    assert sym.shape == compiled.shape == expected.shape
    assert sym.dtype == compiled.dtype == np.dtype(dtype)
    assert sym.node.op.name == case.op
    np.testing.assert_allclose(compiled, expected, **tol)


# -- softmax, log_softmax -----------------------------------------------------------------------


def test_softmax_rows_sum_to_one_and_match_numpy(rng):
    x = rng.standard_normal((3, 5)).astype(np.float32)
    np.testing.assert_allclose(kn.softmax(x, -1).sum(axis=-1), 1.0, rtol=1e-6)
    np.testing.assert_allclose(kn.softmax(x, axis=0), _np_softmax(x, axis=0), rtol=1e-6)
    y = _check(lambda s: kn.softmax(s, -1), [x], _np_softmax(x), shapes=[(None, 5)], rtol=1e-6)
    # The max shift is a stopped constant: it cancels, so no gradient should flow through it.
    stop = next(n for n in y.graph.nodes if n.op.name == "stop_gradient")
    assert stop.inputs[0].node.op.name == "reduce_max"
    big = np.array([[1000.0, 1000.0, -1000.0], [1e30, 0.0, 0.0]], np.float32)
    np.testing.assert_allclose(kn.softmax(big, 1), [[0.5, 0.5, 0.0], [1.0, 0.0, 0.0]])


def test_softmax_needs_dim_as_torch_softmax_does():
    # torch.softmax(x) raises TypeError (dim is required); F.softmax(x) picks a legacy dim
    with pytest.raises(TypeError, match="dim"):
        kn.softmax(np.ones(3, np.float32))
    with pytest.raises(TypeError, match="dim"):
        kn.log_softmax(kn.ones(3))
    x = kn.tensor([[0.0, np.log(3.0)]])
    assert kn.softmax(x, 1, dtype=kn.float64).dtype == kn.float64
    np.testing.assert_allclose(x.softmax(-1).numpy(), [[0.25, 0.75]], rtol=1e-6)
    np.testing.assert_allclose(x.log_softmax(dim=1).numpy(), np.log([[0.25, 0.75]]), rtol=1e-6)


def test_log_softmax_matches_numpy_and_is_stable_for_large_inputs(rng):
    x = np.array([[1000.0, 0.0, -1000.0], [1000.0, 1000.0, 1000.0]], np.float32)
    y = kn.log_softmax(x, -1)
    assert np.isfinite(y).all()
    np.testing.assert_allclose(y, _np_log_softmax(x), rtol=1e-6)
    x = rng.standard_normal((2, 3, 5))
    fn = lambda s: kn.log_softmax(s, axis=1)
    _check(fn, [x], _np_log_softmax(x, axis=1), shapes=[(None, 3, 5)], rtol=1e-12)


# -- losses ----------------------------------------------------------------------------------------


def _np_cross_entropy(logits, labels):
    logp = _np_log_softmax(logits)
    return -np.take_along_axis(logp, labels[..., None], axis=-1)[..., 0]


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_cross_entropy_matches_numpy(rng, reduction):
    logits = rng.standard_normal((6, 5)).astype(np.float32) * 3
    labels = rng.integers(0, 5, size=6)
    per = _np_cross_entropy(logits, labels)
    expected = {"none": per, "mean": per.mean(), "sum": per.sum()}[reduction]
    fn = lambda a, b: kn.cross_entropy(a, b, reduction=reduction)
    _check(fn, [logits, labels], expected, shapes=[(None, 5), (None,)], rtol=1e-5)


def test_cross_entropy_leading_dims_and_large_logits(rng):
    logits = rng.standard_normal((2, 3, 4)) * 1000
    labels = rng.integers(0, 4, size=(2, 3))
    got = kn.cross_entropy(logits, labels, reduction="none")
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got, _np_cross_entropy(logits, labels), rtol=1e-12)


def test_cross_entropy_rejects_bad_labels():
    logits = np.zeros((4, 3), np.float32)
    with pytest.raises(kn.DTypeError, match="integer"):
        kn.cross_entropy(logits, np.zeros(4, np.float32))
    with pytest.raises(ValueError, match="reduction"):
        kn.cross_entropy(logits, np.zeros(4, np.int64), reduction="avg")


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_mse_loss_matches_numpy(rng, reduction):
    a, b = rng.standard_normal((2, 3, 4)).astype(np.float32)
    sq = (a - b) ** 2
    expected = {"none": sq, "mean": sq.mean(), "sum": sq.sum()}[reduction]
    _check(lambda x, y: kn.mse_loss(x, y, reduction), [a, b], expected, rtol=1e-6)


# -- dropout ---------------------------------------------------------------------------------------


def test_dropout_identity_when_not_training_or_p0_zeros_when_p1(rng):
    x = rng.standard_normal((3, 4)).astype(np.float32)
    assert kn.dropout(x, p=0.5, train=False) is x
    assert kn.dropout(x, p=0.0) is x
    with kn.Graph().as_default():
        s = kn.placeholder(kn.float32, (3, 4))
        assert kn.dropout(s, 0.3, train=False) is s
    np.testing.assert_array_equal(kn.dropout(x, p=1.0), np.zeros_like(x))
    for p in (-0.1, 1.5):
        with pytest.raises(ValueError, match="between 0 and 1"):
            kn.dropout(x, p=p)


def _check_dropout_values(x, y, p):
    kept = y != 0
    np.testing.assert_allclose(y[kept], x[kept] / (1 - p), rtol=1e-6)
    assert abs(kept.mean() - (1 - p)) < 0.02, kept.mean()


def _dropout_function(p):
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (None, 100))
        return kn.function([x], kn.dropout(x, p=p))


def test_dropout_graph_fresh_mask_each_run_and_seeded():
    x = np.ones((200, 100), np.float32)
    kn.manual_seed(123)
    f = _dropout_function(0.25)
    first, second = f(x), f(x)
    _check_dropout_values(x, first, 0.25)
    _check_dropout_values(x, second, 0.25)
    assert (first != second).any()
    kn.manual_seed(123)
    g = _dropout_function(0.25)
    np.testing.assert_array_equal(g(x), first)
    np.testing.assert_array_equal(g(x), second)


def test_dropout_eager_scales_kept_values_reproducibly_with_manual_seed():
    x = np.full((200, 100), 3.0, np.float32)
    kn.manual_seed(7)
    a, b = kn.dropout(x, 0.3), kn.dropout(x, 0.5)
    assert a.dtype == np.float32
    _check_dropout_values(x, a, 0.3)
    _check_dropout_values(x, b, 0.5)
    kn.manual_seed(7)
    np.testing.assert_array_equal(kn.dropout(x, 0.3), a)
    np.testing.assert_array_equal(kn.dropout(x, 0.5), b)


# -- normalization ---------------------------------------------------------------------------------


def _np_layer_norm(x, axes, eps, weight=None, bias=None):
    y = (x - x.mean(axis=axes, keepdims=True)) / np.sqrt(x.var(axis=axes, keepdims=True) + eps)
    shape = [d if i in axes else 1 for i, d in enumerate(x.shape)]
    if weight is not None:
        y = y * weight.reshape(shape)
    if bias is not None:
        y = y + bias.reshape(shape)
    return y


def test_layer_norm_last_axis_with_weight_and_bias(rng):
    x = rng.standard_normal((4, 6)).astype(np.float32) * 5 + 2
    w, b = rng.standard_normal((2, 6)).astype(np.float32)
    expected = _np_layer_norm(x, (1,), 1e-5, w, b)
    fn = lambda s, ws, bs: kn.layer_norm(s, weight=ws, bias=bs)
    _check(fn, [x, w, b], expected, shapes=[(None, 6), (6,), (6,)], rtol=1e-5, atol=1e-5)


def test_layer_norm_axis_tuple_and_leading_axis(rng):
    x = rng.standard_normal((2, 3, 5))
    w, b = rng.standard_normal((2, 3, 5))
    got = kn.layer_norm(x, axis=(1, 2), eps=1e-3, weight=w, bias=b)
    np.testing.assert_allclose(got, _np_layer_norm(x, (1, 2), 1e-3, w, b), rtol=1e-12)
    wa = rng.standard_normal(2)
    got = kn.layer_norm(x, axis=0, weight=wa)
    np.testing.assert_allclose(got, _np_layer_norm(x, (0,), 1e-5, wa), rtol=1e-12)


def _np_batch_norm(x, mean, var, weight, bias, eps):
    shape = (1, -1) + (1,) * (x.ndim - 2)
    y = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps)
    return y * weight.reshape(shape) + bias.reshape(shape)


@pytest.mark.parametrize("shape", [(4, 3), (2, 3, 5, 4)])
def test_batch_norm_matches_numpy(rng, shape):
    x = rng.standard_normal(shape).astype(np.float32)
    mean, w, b = rng.standard_normal((3, 3)).astype(np.float32)
    var = rng.uniform(0.5, 2.0, 3).astype(np.float32)
    expected = _np_batch_norm(x, mean, var, w, b, 1e-5)
    fn = lambda s: kn.batch_norm(s, mean, var, w, b)
    _check(fn, [x], expected, shapes=[(None, *shape[1:])], rtol=1e-5, atol=1e-6)
    plain = kn.batch_norm(x, mean, var)
    ones, zeros = np.ones(3, np.float32), np.zeros(3, np.float32)
    np.testing.assert_allclose(plain, _np_batch_norm(x, mean, var, ones, zeros, 1e-5), rtol=1e-5)


# -- conv2d, pools, embedding ----------------------------------------------------------------------


def test_conv2d_bias_and_symbolic_batch(rng):
    x = rng.standard_normal((3, 2, 7, 6)).astype(np.float32)
    w = rng.standard_normal((4, 2, 3, 3)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    expected = ref_conv2d(x, w, stride=2, padding=1) + b.reshape(1, 4, 1, 1)
    got = kn.conv2d(x, w, b, stride=2, padding=1)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    with kn.Graph().as_default():
        xs = kn.placeholder(kn.float32, (None, 2, 7, 6))
        y = kn.conv2d(xs, kn.constant(w), kn.constant(b), stride=(2, 2), padding=1)
        f = kn.function([xs], y)
    assert isinstance(y.shape[0], kn.Dim) and y.shape[1:] == (4, 4, 3)
    np.testing.assert_allclose(f(x), expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(f(x[:1]), expected[:1], rtol=1e-5, atol=1e-5)


def test_conv2d_symbolic_spatial_dims_give_anonymous_dims(rng):
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, ("batch", 3, None, None))
        y = kn.conv2d(x, np.ones((2, 3, 3, 3), np.float32), padding=1)
        p = kn.max_pool2d(y, 2)
        f = kn.function([x], p)
    assert y.shape[:2] == (kn.Dim("batch"), 2)
    assert all(isinstance(d, kn.Dim) for d in y.shape[2:]) and y.shape[2] != y.shape[3]
    xv = rng.standard_normal((2, 3, 6, 4)).astype(np.float32)
    w = np.ones((2, 3, 3, 3), np.float32)
    expected = ref_max_pool2d(ref_conv2d(xv, w, padding=1), 2)
    np.testing.assert_allclose(f(xv), expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "pool, ref", [(kn.max_pool2d, ref_max_pool2d), (kn.avg_pool2d, ref_avg_pool2d)]
)
def test_pools_symbolic_batch_default_stride_and_out(rng, pool, ref):
    x = rng.standard_normal((3, 2, 6, 7))
    expected = ref(x, (3, 2))
    y = _check(lambda s: pool(s, (3, 2)), [x], expected, shapes=[(None, 2, 6, 7)], rtol=1e-12)
    assert isinstance(y.shape[0], kn.Dim) and y.shape[1:] == (2, 2, 3)
    attrs = {"kernel_size": (3, 3), "stride": (2, 2), "padding": (1, 1)}
    buf = np.full((3, 2, 3, 4), np.nan)
    assert REGISTRY[pool.__name__].impl(np, x, out=buf, **attrs) is buf
    np.testing.assert_allclose(buf, ref(x, 3, 2, 1), rtol=1e-12)


def test_pool_padding_semantics():
    x = np.arange(1.0, 10.0).reshape(1, 1, 3, 3) - 20.0  # all negative: padding must not win
    np.testing.assert_array_equal(
        kn.max_pool2d(x, 2, stride=2, padding=1)[0, 0], [[-19, -17], [-13, -11]]
    )
    # count_include_pad=True: the corner window holds one real value and three padded zeros.
    assert kn.avg_pool2d(x, 2, stride=2, padding=1)[0, 0, 0, 0] == pytest.approx(-19 / 4)


def test_embedding_eager_and_graph(rng):
    table = rng.standard_normal((5, 3)).astype(np.float32)
    ids = np.array([[4, 0], [2, 2]])
    y = _check(kn.embedding, [table, ids], table[ids], shapes=[(5, 3), (None, 2)], rtol=0)
    assert y.shape[1:] == (2, 3)


def test_conv2d_kernel_honours_out(rng):
    x = rng.standard_normal((2, 3, 6, 5))
    w = rng.standard_normal((4, 3, 3, 2))
    attrs = {"stride": (2, 1), "padding": (1, 0), "dilation": (1, 2)}
    expected = ref_conv2d(x, w, **attrs)
    buf = np.full(expected.shape, np.nan)
    assert REGISTRY["conv2d"].impl(np, x, w, out=buf, **attrs) is buf
    np.testing.assert_allclose(buf, expected, rtol=1e-12)
    # A non-contiguous `out` (a transposed view) is written through too.
    view = np.full(expected.shape[::-1], np.nan).transpose(3, 2, 1, 0)
    assert REGISTRY["conv2d"].impl(np, x, w, out=view, **attrs) is view
    np.testing.assert_allclose(view, expected, rtol=1e-12)


# -- shape and dtype errors name the op and the caller's line --------------------------------------


def _conv(w_shape, bias=None, **attrs):
    return lambda x: kn.conv2d(x, np.ones(w_shape, np.float32), bias, **attrs)


def _cross_entropy(labels):
    return lambda x: kn.cross_entropy(x, labels)


def _batch_norm(mean, var):
    return lambda x: kn.batch_norm(x, mean, var)


ERRORS = [
    ("conv2d", (1, 2, 5, 5), _conv((4, 3, 3, 3)), "expected input[1,2,5,5] to have 3 channels"),
    # a 3-d input is PyTorch's unbatched (C, H, W); fewer dims are refused
    ("conv2d", (None, 8), _conv((4, 3, 3, 3)), "4-d"),
    ("conv2d", (None, 3, 8, 8), _conv((4, 3, 3)), "weight"),
    ("conv2d", (2, 3, 4, 8), _conv((4, 3, 5, 5)), "Kernel size"),
    ("conv2d", (2, 3, 4, 8), _conv((4, 3, 3, 3), dilation=2), "Kernel size"),
    ("conv2d", (2, 3, 4, 4), _conv((4, 3, 1, 1), stride=0), "stride"),
    ("conv2d", (2, 3, 4, 4), _conv((4, 3, 1, 1), padding=-1), "padding"),
    ("conv2d", (2, 3, 4, 4), _conv((4, 3, 1, 1), np.ones(3)), "bias"),
    ("conv2d", (2, 3, 4, 4), _conv((4, 3, 1, 1), stride=(1, 2, 3)), "2 ints"),
    ("max_pool2d", (None, 8), lambda x: kn.max_pool2d(x, 2), "4-d"),
    ("max_pool2d", (None, 3, 8, 8), lambda x: kn.max_pool2d(x, 3, padding=2), "at most half"),
    ("max_pool2d", (None, 3, 4, 8), lambda x: kn.max_pool2d(x, 5), "too small"),
    ("avg_pool2d", (None, 3, 4, 8), lambda x: kn.avg_pool2d(x, (2, 0)), "kernel_size"),
    ("avg_pool2d", (None, 3, 4, 8), lambda x: kn.avg_pool2d(x, 2, stride=(1, 2, 3)), "2 ints"),
    ("cross_entropy", (4, 3), _cross_entropy(np.zeros(5, np.int64)), "labels of size [4]"),
    ("cross_entropy", (4, 3), _cross_entropy(np.zeros((4, 1), np.int64)), "labels of size"),
    ("layer_norm", (None, 6), lambda x: kn.layer_norm(x, weight=np.ones((2, 6))), "weight"),
    ("layer_norm", (None, 6), lambda x: kn.layer_norm(x, bias=np.ones(())), "bias"),
    ("batch_norm", (None, 3, 4, 4), _batch_norm(np.zeros(4), np.ones(3)), "running_mean"),
    ("batch_norm", (None, 3), _batch_norm(np.zeros(3), np.ones((3, 1))), "running_var"),
    ("batch_norm", (5,), _batch_norm(np.zeros(5), np.ones(5)), "2 or more dims"),
]


@pytest.mark.parametrize("op, shape, fn, text", ERRORS, ids=[f"{e[0]}-{e[3]}" for e in ERRORS])
def test_shape_errors_name_op_and_site(op, shape, fn, text):
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, shape, name="x")
        with pytest.raises(kn.ShapeError) as info:
            fn(x)
    message = str(info.value)
    assert op in message and HERE in message and text in message, message


# PyTorch 2.13's CPU kernels refuse int32 for these (NotImplementedError "not implemented
# for 'Int'"), while they take it for conv1d/2d/3d and max_pool2d/3d (the test below).
@pytest.mark.parametrize("op", ["conv_transpose2d", "max_pool1d", "avg_pool2d"])
def test_nn_ops_reject_integer_inputs(op):
    if op == "conv_transpose2d":
        w = np.ones((1, 1, 2, 2), np.int32)
        call = lambda x: kn.nn.functional.conv_transpose2d(x, w)  # noqa: E731
    else:
        call = lambda x: getattr(kn.nn.functional, op)(x, 2)  # noqa: E731
    with kn.Graph().as_default():
        x = kn.placeholder(kn.int32, (1, 1, 4) if op == "max_pool1d" else (1, 1, 4, 4))
        with pytest.raises(kn.DTypeError) as info:
            call(x)
    assert op in str(info.value) and HERE in str(info.value)


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.uint8])
def test_integer_convolutions_and_max_pools_as_pytorch(dtype):
    """PyTorch's CPU conv1d/2d/3d and max_pool2d/3d take every integer dtype; the sums
    wrap around in the dtype. Expected: float64 by hand, wrapped through int64."""
    rng = np.random.default_rng(0)
    x = rng.integers(0, 100, (1, 2, 5, 5)).astype(dtype)
    w = rng.integers(0, 100, (3, 2, 2, 2)).astype(dtype)
    y = kn.nn.functional.conv2d(kn.tensor(x), kn.tensor(w))
    expected = ref_conv2d(x.astype(np.float64), w.astype(np.float64)).astype(np.int64)
    assert y.dtype == dtype
    np.testing.assert_array_equal(np.asarray(y), expected.astype(dtype))
    pooled = kn.nn.functional.max_pool2d(kn.tensor(x), 2)
    assert pooled.dtype == dtype
    np.testing.assert_array_equal(np.asarray(pooled), x[:, :, :4, :4].reshape(1, 2, 2, 2, 2, 2)
                                  .max(axis=(3, 5)))  # fmt: skip
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    x3 = np.ascontiguousarray(np.stack([x, x[..., ::-1]], axis=2))  # (1, 2, 2, 5, 5)
    for theirs, ours, args in [
        (F.conv1d, kn.nn.functional.conv1d, (x[:, :, 0], w[:, :, 0])),
        (F.conv3d, kn.nn.functional.conv3d, (x3, w[:, :, None])),
        (lambda a: F.max_pool3d(a, 2), lambda a: kn.nn.functional.max_pool3d(a, 2), (x3,)),
    ]:
        want = theirs(*[torch.tensor(a) for a in args]).numpy()
        got = ours(*[kn.tensor(a) for a in args])
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(np.asarray(got), want)


def test_conv2d_symbolic_channels_are_checked_at_run_time():
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (1, "c", 5, 5))
        f = kn.function([x], kn.conv2d(x, np.ones((4, 3, 3, 3), np.float32)))
    assert f(np.ones((1, 3, 5, 5), np.float32)).shape == (1, 4, 3, 3)
    with pytest.raises(kn.ShapeError, match="channels"):
        f(np.ones((1, 2, 5, 5), np.float32))


def test_conv2d_refuses_mixed_float_dtypes_as_pytorch(rng):
    # PyTorch's convolutions do not promote: float32 input, float64 weight is a RuntimeError
    # there ("expected scalar type Float but found Double"), in graph mode too
    x = rng.standard_normal((1, 2, 4, 4)).astype(np.float32)
    w = rng.standard_normal((3, 2, 2, 2))
    with pytest.raises(kn.errors.DTypeMismatchError, match=r"conv2d.*float32.*float64"):
        _compile(kn.conv2d, x, w)
    y, out = _compile(kn.conv2d, x.astype(np.float64), w)
    assert y.dtype == out.dtype == np.float64
    np.testing.assert_allclose(out, ref_conv2d(x.astype(np.float64), w), rtol=1e-12)
