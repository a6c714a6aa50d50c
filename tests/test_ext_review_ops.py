"""Ops whose values or errors differed from PyTorch 2.13's, found by running an external op
suite against eager mode: each case is checked eagerly, in graph mode and under kn.compile.

Expected values: PyTorch's where torch is installed (`torch = pytest.importorskip("torch")`),
else computed by hand as written next to each case.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import kiln as kn

KF = kn.nn.functional


def _three_ways(fn, *arrays):
    """fn's result eagerly, from a graph of placeholders, and under kn.compile, as arrays."""
    eager = fn(*[kn.tensor(a) for a in arrays])
    compiled = kn.compile(fn)(*[kn.tensor(a) for a in arrays])
    with kn.Graph().as_default():
        ph = [kn.placeholder(kn.float32, a.shape, name=f"x{i}") for i, a in enumerate(arrays)]
        graph = kn.function(ph, fn(*ph))(*arrays)
    return [np.asarray(eager.detach().numpy()), np.asarray(compiled.numpy()), np.asarray(graph)]


def test_max_unpool_fills_zeros_next_to_inf_and_nan():
    # by hand: the 2x2 window [[inf, -inf], [1, 2]] has its max inf at flat index 0, so the
    # unpooled 2x2 plane is [[inf, 0], [0, 0]] (PyTorch 2.13 agrees); zeros, not inf * 0
    data = np.array([[[[math.inf, -math.inf, math.nan], [1.0, 2.0, 3.0]]]], np.float32)

    def unpool(x):
        values, indices = KF.max_pool2d(x, 2, return_indices=True)
        return KF.max_unpool2d(values, indices, 2)

    want = np.array([[[[math.inf, 0.0], [0.0, 0.0]]]], np.float32)
    for got in _three_ways(unpool, data):
        np.testing.assert_array_equal(got, want)
    # 1-d: [nan, 1] pools to nan at index 0 (PyTorch's max propagates nan): [nan, 0]
    v, i = KF.max_pool1d(kn.tensor([[[math.nan, 1.0]]]), 2, return_indices=True)
    np.testing.assert_array_equal(KF.max_unpool1d(v, i, 2).numpy(), [[[math.nan, 0.0]]])


def test_max_unpool_matches_torch_with_infinities():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    data = rng.standard_normal((2, 3, 4, 6)).astype(np.float32)
    data[0, 0, 0, 0], data[1, 2, 3, 5], data[0, 1, 2, 2] = np.inf, -np.inf, np.inf
    tv, ti = torch.nn.functional.max_pool2d(torch.tensor(data), 2, return_indices=True)
    want = torch.nn.functional.max_unpool2d(tv, ti, 2).numpy()
    kv, ki = KF.max_pool2d(kn.tensor(data), 2, return_indices=True)
    np.testing.assert_array_equal(KF.max_unpool2d(kv, ki, 2).numpy(), want)


@pytest.mark.parametrize("name", ["std_mean", "var_mean"])
def test_std_mean_and_var_mean_take_the_axis_and_keepdims_aliases(name):
    torch = pytest.importorskip("torch")
    a = np.random.default_rng(1).standard_normal((3, 4, 5)).astype(np.float32)
    for kw in ({"axis": (1, 2)}, {"axis": 0, "keepdims": True}, {"axis": -1, "correction": 0}):
        want = getattr(torch, name)(torch.tensor(a), **kw)
        got = getattr(kn, name)(kn.tensor(a), **kw)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-5, atol=1e-6)
        got = kn.compile(lambda t, kw=kw: getattr(kn, name)(t, **kw)[0])(kn.tensor(a))
        np.testing.assert_allclose(got.numpy(), want[0].numpy(), rtol=1e-5, atol=1e-6)
        with kn.Graph().as_default():
            x = kn.placeholder(kn.float32, a.shape, name="x")
            f = kn.function([x], getattr(kn, name)(x, **kw)[0])
        np.testing.assert_allclose(f(a), want[0].numpy(), rtol=1e-5, atol=1e-6)
    with pytest.raises(TypeError, match="dim= and axis="):
        getattr(kn, name)(kn.tensor(a), 0, axis=1)


def test_roll_of_several_shifts_without_dims_raises_as_pytorch():
    # PyTorch 2.13: RuntimeError "shifts and dimensions must align. shifts: 2, dims:0"
    x = kn.arange(8.0).reshape(2, 4)
    with pytest.raises(RuntimeError, match="shifts and dimensions must align"):
        x.roll((1, 2))
    with kn.Graph().as_default(), pytest.raises(RuntimeError, match="must align"):
        kn.roll(kn.placeholder(kn.float32, (2, 4), name="x"), (1, 2))
    # one shift in a tuple is the flattened roll: by hand [0..7] rolled by 1 starts with 7
    assert x.roll((1,)).reshape(-1).tolist() == [7.0, 0, 1, 2, 3, 4, 5, 6]


def test_argument_errors_pytorch_raises_as_runtime_errors():
    # each raises RuntimeError in PyTorch 2.13
    x = kn.ones(4, 5)
    idx = kn.zeros(4, 5, dtype=kn.int64)
    with pytest.raises(RuntimeError, match="rounding_mode"):
        x.div(x, rounding_mode="typo")
    with pytest.raises(RuntimeError, match="reduce must be"):
        x.scatter_reduce(0, idx, x, reduce="INVALID")
    with pytest.raises(RuntimeError, match="expected the input's dtype"):
        x.half().scatter(0, idx, x)
    with pytest.raises(RuntimeError, match=r"scatter\(\): Expected dtype int32/int64 for index"):
        x.scatter(0, idx.float(), x)
    with kn.Graph().as_default(), pytest.raises(RuntimeError, match="expected the input's dtype"):
        p = kn.placeholder(kn.float16, (4, 5), name="x")
        kn.scatter(p, 0, kn.constant(np.zeros((4, 5), np.int64)), kn.constant(np.ones((4, 5))))


def test_ranges_refuse_bool_and_negative_steps_as_pytorch():
    # PyTorch 2.13: NotImplementedError "linspace_cpu"/"logspace_cpu"/"arange_cpu" not
    # implemented for 'Bool'; RuntimeError "number of steps must be non-negative"
    for call in (
        lambda: kn.linspace(5, 10, 3, dtype=kn.bool),
        lambda: kn.logspace(1, 2, 3, dtype=kn.bool),
        lambda: kn.arange(0, 2, dtype=kn.bool),
        lambda: kn.arange(5, dtype=kn.bool),
    ):
        with pytest.raises(NotImplementedError, match="not implemented for bool"):
            call()
    for call in (lambda: kn.linspace(1, 2, -1), lambda: kn.logspace(1, 2, -1)):
        with pytest.raises(RuntimeError, match="number of steps must be non-negative"):
            call()
    with pytest.raises(NotImplementedError, match="bool"):
        kn.compile(lambda t: kn.linspace(t, 1.0, 3, dtype=kn.bool))(kn.tensor(0.0))
    # by hand: 3 steps from 5 to 10 are 5, 7.5, 10 (int32 truncates to 5, 7, 10)
    assert kn.linspace(5, 10, 3).tolist() == [5.0, 7.5, 10.0]
    assert kn.linspace(5, 10, 3, dtype=kn.int32).tolist() == [5, 7, 10]
    assert kn.linspace(5, 10, 0).shape == (0,)


def test_a_tuple_inside_the_index_is_a_sequence_of_indices():
    torch = pytest.importorskip("torch")
    a = np.arange(2 * 5 * 6 * 3, dtype=np.float32).reshape(2, 5, 6, 3)
    b = np.array([[0], [1]])
    cases = [
        lambda x, T: x[((0,),)],
        lambda x, T: x[(((1,),),)],
        lambda x, T: x[(1, 0, -1), :, 2],
        lambda x, T: x[T(b), (4, 1, 0), :, (-2, 1, 0)],
        lambda x, T: x[(T(b), (1, 1))],
        lambda x, T: x[:, (True, False, True, False, False)],
    ]
    for case in cases:
        want_t = torch.tensor(a, requires_grad=True)
        want = case(want_t, torch.tensor)
        (want_grad,) = torch.autograd.grad((want * want).sum(), want_t)
        got_t = kn.tensor(a, requires_grad=True)
        got = case(got_t, kn.tensor)
        np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())
        (got_grad,) = kn.autograd.grad((got * got).sum(), [got_t])
        np.testing.assert_array_equal(got_grad.numpy(), want_grad.numpy())
        compiled = kn.compile(lambda x, case=case: case(x, kn.tensor))(kn.tensor(a))
        np.testing.assert_array_equal(compiled.numpy(), want.detach().numpy())
        with kn.Graph().as_default():
            x = kn.placeholder(kn.float32, a.shape, name="x")
            f = kn.function([x], case(x, kn.constant))
        np.testing.assert_array_equal(f(a), want.detach().numpy())
    # item assignment takes them too; by hand: rows 0 and 2 of a 3x2 zeros set to 1
    z = kn.zeros(3, 2)
    z[(0, 2),] = 1.0
    assert z.tolist() == [[1.0, 1.0], [0.0, 0.0], [1.0, 1.0]]


def test_reflect_pad_takes_negative_widths_as_pytorch():
    torch = pytest.importorskip("torch")
    a = np.random.default_rng(2).standard_normal((1, 2, 5, 5)).astype(np.float32)
    cases = [
        ((-1, 2, 2, -1), "reflect"),
        ((3, -3, 0, -3), "reflect"),
        ((3, -5, 1, -5), "reflect"),
        ((-1, -1, -2, -1), "reflect"),
        ((0, 0, 0, -5), "reflect"),  # an empty result
        ((0, 0, 0, -5), "replicate"),
    ]
    for widths, mode in cases:
        want_t = torch.tensor(a, requires_grad=True)
        want = torch.nn.functional.pad(want_t, widths, mode=mode)
        (want_grad,) = torch.autograd.grad((want * want).sum(), want_t)
        got_t = kn.tensor(a, requires_grad=True)
        got = KF.pad(got_t, widths, mode=mode)
        assert tuple(got.shape) == tuple(want.shape)
        np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())
        (got_grad,) = kn.autograd.grad((got * got).sum(), [got_t])
        np.testing.assert_allclose(got_grad.numpy(), want_grad.numpy(), rtol=1e-6)
        for mine in _three_ways(lambda x, w=widths, m=mode: KF.pad(x, w, mode=m), a)[1:]:
            np.testing.assert_array_equal(mine, want.detach().numpy())
    # by hand: [0, 1, 2, 3, 4] reflected by 2 on the right is [0..4, 3, 2]; cropping 1 on the
    # left leaves [1, 2, 3, 4, 3, 2]
    row = kn.arange(5.0).reshape(1, 5)
    assert KF.pad(row, (-1, 2), mode="reflect").tolist() == [[1.0, 2.0, 3.0, 4.0, 3.0, 2.0]]
    # still refused as PyTorch refuses (RuntimeError): a width not less than the dim
    with pytest.raises(RuntimeError, match="less than the size 5"):
        KF.pad(row, (5, -3), mode="reflect")
    with pytest.raises(RuntimeError, match=r"input \(W: 5\) is too small"):  # torch 2.13's
        KF.pad(row, (-6, 0), mode="reflect")


@pytest.mark.parametrize("mode", ["nearest", "nearest-exact"])
def test_nearest_interpolate_takes_uint8_as_pytorch(mode):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    for shape, kw in (
        ((2, 3, 16, 16), {"size": (5, 7)}),
        ((1, 2, 9), {"size": 4}),
        ((1, 2, 3, 4, 5), {"scale_factor": 1.7}),
    ):
        a = rng.integers(0, 256, shape).astype(np.uint8)
        want = torch.nn.functional.interpolate(torch.tensor(a), mode=mode, **kw).numpy()
        got = KF.interpolate(kn.tensor(a), mode=mode, **kw)
        assert got.dtype == kn.uint8
        np.testing.assert_array_equal(got.numpy(), want)
        fn = kn.compile(lambda x, kw=kw: KF.interpolate(x, mode=mode, **kw))
        np.testing.assert_array_equal(fn(kn.tensor(a)).numpy(), want)
        with kn.Graph().as_default():
            x = kn.placeholder(kn.uint8, shape, name="x")
            f = kn.function([x], KF.interpolate(x, mode=mode, **kw))
        np.testing.assert_array_equal(f(a), want)
    # linear and trilinear take floats only, as in torch 2.13 (bilinear and bicubic take
    # uint8 with torch's rounding: tests/test_interpolate_uint8.py)
    with pytest.raises(TypeError, match="floating-point"):
        KF.interpolate(kn.zeros(1, 1, 4, dtype=kn.uint8), size=2, mode="linear")


def test_loss_target_shape_errors_are_pytorchs_kinds():
    # PyTorch 2.13: cross_entropy with a (32, 1) target raises RuntimeError ("multi-target
    # not supported"), a (31,) target ValueError (batch sizes), binary_cross_entropy with a
    # mismatched target ValueError; kiln's ShapeMismatchError is both kinds
    x = kn.rand(32, 10)
    for target in (kn.zeros(32, 1, dtype=kn.int64), kn.rand(32, 1), kn.zeros(31, dtype=kn.int64)):
        for kind in (RuntimeError, ValueError):
            with pytest.raises(kind, match="target|Target"):
                KF.cross_entropy(x, target)
    with pytest.raises(ValueError, match="must be the same as input size"):
        KF.binary_cross_entropy(kn.rand(4), kn.rand(4, 1))
    with kn.Graph().as_default(), pytest.raises(RuntimeError, match="expected target of size"):
        x = kn.placeholder(kn.float32, (32, 10), name="x")
        KF.cross_entropy(x, kn.placeholder(kn.int64, (32, 1), name="y"))


@pytest.mark.parametrize("approximate", ["tanh", "none"])
def test_float16_gelu_is_computed_in_float32_as_pytorch(approximate):
    torch = pytest.importorskip("torch")
    # x**3 of the tanh form overflows float16 past |x| ~ 40: PyTorch computes half gelu in
    # float32, so its gradient there is 1 (x > 0) or 0 (x < 0), not 0 * inf = NaN
    a = np.array([0.5, -2.1, 45.0, -45.0, 300.0, -400.0, 3.0], np.float16)
    t = torch.tensor(a, requires_grad=True)
    want = torch.nn.functional.gelu(t, approximate=approximate)
    (want_grad,) = torch.autograd.grad(want.sum(), t)
    x = kn.tensor(a, requires_grad=True)
    got = KF.gelu(x, approximate=approximate)
    (got_grad,) = kn.autograd.grad(got.sum(), [x])
    assert got.dtype == kn.float16 and got_grad.dtype == kn.float16
    np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())
    np.testing.assert_array_equal(got_grad.numpy(), want_grad.numpy())

    # a compiled call's backward runs the compiled gradient graph
    x = kn.tensor(a, requires_grad=True)
    out = kn.compile(lambda v: KF.gelu(v, approximate=approximate))(x)
    np.testing.assert_array_equal(out.detach().numpy(), want.detach().numpy())
    (compiled_grad,) = kn.autograd.grad(out.sum(), [x])
    np.testing.assert_array_equal(compiled_grad.numpy(), want_grad.numpy())
    with kn.Graph().as_default():
        p = kn.placeholder(kn.float16, a.shape, name="x")
        (g,) = kn.grad(KF.gelu(p, approximate=approximate).sum(), [p])
        f = kn.function([p], g)
    np.testing.assert_array_equal(f(a), want_grad.numpy())


def test_bce_with_logits_keeps_the_input_dtype_under_float32_weights():
    torch = pytest.importorskip("torch")
    # PyTorch 2.13: a float16 input and target with float32 weight/pos_weight give a float16
    # loss (the weights scale it in place); float32 with float64 weights stays float32
    rng = np.random.default_rng(4)
    x, y = rng.standard_normal((5, 4)), rng.random((5, 4))
    w = rng.random(4)
    for dtype, wdtype in ((np.float16, np.float32), (np.float32, np.float64)):
        for key in ("weight", "pos_weight"):
            xt = torch.tensor(x.astype(dtype), requires_grad=True)
            want = torch.nn.functional.binary_cross_entropy_with_logits(
                xt, torch.tensor(y.astype(dtype)), **{key: torch.tensor(w.astype(wdtype))}
            )
            (want_grad,) = torch.autograd.grad(want, xt)
            xk = kn.tensor(x.astype(dtype), requires_grad=True)
            got = KF.binary_cross_entropy_with_logits(
                xk, kn.tensor(y.astype(dtype)), **{key: kn.tensor(w.astype(wdtype))}
            )
            (got_grad,) = kn.autograd.grad(got, [xk])
            assert got.dtype == (kn.float16 if dtype == np.float16 else kn.float32)
            assert str(want.dtype) == f"torch.{np.dtype(dtype).name}"
            tol = 2e-3 if dtype == np.float16 else 1e-6
            np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=tol)
            np.testing.assert_allclose(got_grad.numpy(), want_grad.numpy(), rtol=tol, atol=tol)
            with kn.Graph().as_default():
                p = kn.placeholder(kn.float16 if dtype == np.float16 else kn.float32, (5, 4))
                loss = KF.binary_cross_entropy_with_logits(
                    p, kn.constant(y.astype(dtype)), **{key: kn.constant(w.astype(wdtype))}
                )
            assert loss.dtype == got.dtype


@pytest.mark.parametrize("name", ["float16", "bfloat16"])
def test_half_precision_interpolate_places_samples_in_float32_as_pytorch(name):
    torch = pytest.importorskip("torch")
    # source positions computed in the input's half precision picked wrong neighbours (errors
    # of the whole data range in nearest mode, several percent in linear); PyTorch computes
    # them and the weighted sums in float32, rounding once
    a = np.random.default_rng(5).uniform(-2, 2, (2, 3, 13, 17)).astype(np.float32)
    tdt, kdt = getattr(torch, name), getattr(kn, name)
    ulp = 2.0 ** (-10 if name == "float16" else -7)  # spacing of values in [1, 2)
    for mode, kw in (
        ("nearest", {"scale_factor": 1.37}),
        ("nearest-exact", {"size": (29, 6)}),
        ("bilinear", {"size": (29, 6)}),
        ("bilinear", {"scale_factor": 0.57, "align_corners": True}),
        ("bicubic", {"size": (7, 30)}),
    ):
        want = torch.nn.functional.interpolate(torch.tensor(a).to(tdt), mode=mode, **kw)
        want = want.float().numpy()

        def interp(x, mode=mode, kw=kw):
            return KF.interpolate(x.to(kdt), mode=mode, **kw).float()

        for got in _three_ways(interp, a):
            assert got.shape == want.shape
            if mode.startswith("nearest"):  # a gather: exactly torch's
                np.testing.assert_array_equal(got, want)
            else:  # rounded once from float32, as torch's: within an ulp or two
                np.testing.assert_allclose(got, want, rtol=0, atol=2 * ulp)


@pytest.mark.parametrize("name", ["float16", "bfloat16"])
def test_half_precision_logcumsumexp_accumulates_in_float32_as_pytorch(name):
    torch = pytest.importorskip("torch")
    # each step rounded to the half type drifted 8x further from the float64 value than
    # PyTorch, which runs the scan in float32 and rounds each result once (as kiln's cumsum)
    a = np.random.default_rng(6).uniform(-2, 2, (4, 300)).astype(np.float32)
    for dim in (1, 0):
        want = torch.logcumsumexp(torch.tensor(a).to(getattr(torch, name)), dim).float().numpy()
        got = _three_ways(lambda x, d=dim: kn.logcumsumexp(x.to(getattr(kn, name)), d).float(), a)
        for g in got:
            np.testing.assert_array_equal(g, want)


@pytest.mark.parametrize("param", ["float16", "float32"])
def test_float16_layer_norm_is_computed_in_float32_as_pytorch(param):
    torch = pytest.importorskip("torch")
    # PyTorch normalizes a float16 input in float32 and returns float16, with float16 or
    # float32 weight and bias; kiln computed it in float16 (an ulp off at a third of the
    # points) and returned float32 with float32 parameters
    rng = np.random.default_rng(7)
    x, w, b = rng.standard_normal((8, 200)), rng.standard_normal(200), rng.standard_normal(200)
    tx = torch.tensor(x, dtype=torch.float16, requires_grad=True)
    tw = torch.tensor(w, dtype=getattr(torch, param))
    want = torch.nn.functional.layer_norm(tx, (200,), tw, torch.tensor(b).to(tw.dtype))
    (want_grad,) = torch.autograd.grad((want.float() ** 2).sum(), tx)
    kx = kn.tensor(x.astype(np.float16), requires_grad=True)
    kw = kn.tensor(w.astype(param))
    got = KF.layer_norm(kx, (200,), kw, kn.tensor(b.astype(param)))
    (got_grad,) = kn.autograd.grad((got.float() ** 2).sum(), [kx])
    assert got.dtype == kn.float16
    ulp = 2.0**-10
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=ulp, atol=ulp)
    # the gradient: as near torch's as torch's is to float64's (both ~6e-4 of the largest)
    scale = np.abs(want_grad.numpy()).max()
    np.testing.assert_allclose(got_grad.numpy(), want_grad.numpy(), rtol=0, atol=2e-3 * scale)
    with kn.Graph().as_default():
        p = kn.placeholder(kn.float16, (8, 200), name="x")
        f = kn.function([p], KF.layer_norm(p, (200,), kn.constant(w.astype(param))))
    want = torch.nn.functional.layer_norm(tx.detach(), (200,), tw).numpy()
    np.testing.assert_allclose(f(x.astype(np.float16)), want, rtol=ulp, atol=ulp)
    assert f(x.astype(np.float16)).dtype == np.float16


def test_float16_softmax_is_computed_in_float32_as_pytorch():
    torch = pytest.importorskip("torch")
    # PyTorch's half softmax runs in float32 and rounds once: kiln's float16 composite was
    # an ulp off at more than half of the points
    a = np.random.default_rng(8).uniform(-4, 4, (45, 65)).astype(np.float16)
    want = torch.nn.functional.softmax(torch.tensor(a), -1).numpy()
    for got in _three_ways(lambda x: KF.softmax(x.half(), -1), a):
        assert got.dtype == np.float16
        np.testing.assert_allclose(got, want, rtol=2.0**-10)  # an ulp at most
        assert np.mean(got == want) > 0.99  # and bit-equal nearly everywhere (was < 0.5)
    # log_softmax: within an ulp of torch's, and never further than torch's from float64's
    exact = torch.nn.functional.log_softmax(torch.tensor(a, dtype=torch.float64), -1).numpy()
    theirs = torch.nn.functional.log_softmax(torch.tensor(a), -1).numpy().astype(np.float64)
    mine = KF.log_softmax(kn.tensor(a), -1).numpy()
    assert mine.dtype == np.float16
    mine = mine.astype(np.float64)
    assert np.all(np.abs(mine - exact) <= np.abs(theirs - exact))
    np.testing.assert_allclose(mine, theirs, rtol=2.0**-10)


@pytest.mark.parametrize("reduction", ["none", "mean"])
def test_binary_cross_entropy_keeps_a_half_input_dtype_under_a_float32_weight(reduction):
    # torch 2.13 (CPU): F.binary_cross_entropy(float16 p, float16 t, weight=float32 w) is float16
    torch = pytest.importorskip("torch")
    p = np.array([0.25, 0.5, 0.9], np.float16)
    t = np.array([0.0, 1.0, 1.0], np.float16)
    w = np.array([0.5, 2.0, 1.5], np.float32)
    expected = torch.nn.functional.binary_cross_entropy(
        torch.tensor(p), torch.tensor(t), weight=torch.tensor(w), reduction=reduction
    )
    got = kn.nn.functional.binary_cross_entropy(
        kn.tensor(p), kn.tensor(t), weight=kn.tensor(w), reduction=reduction
    )
    assert got.dtype == kn.float16 == getattr(kn, str(expected.dtype).split(".")[1])
    np.testing.assert_allclose(got.numpy().astype(np.float32), expected.numpy(), rtol=2e-3)
