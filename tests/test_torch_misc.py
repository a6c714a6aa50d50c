"""kiln/frontend/torch_misc.py, torch_misc_ops.py, kiln/nn/functional_misc.py and
layers_misc.py, integer powers, `square` of bools, print options and the factories' errors:
values, dtypes, gradients and exception classes against PyTorch's (the tests that need torch
skip without it), and values computed by hand. tests/torch_sweep_cases.py checks most of them
against torch in every mode too."""

import math

import numpy as np
import pytest

import kiln as kn


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


def _graph(fn, *arrays):
    with kn.Graph().as_default():
        xs = [kn.placeholder(a.dtype, a.shape) for a in arrays]
        out = fn(*xs)
        outs = list(out) if isinstance(out, tuple) else [out]
        return kn.function(xs, outs)(*arrays)


def _modes(fn, *arrays):
    """fn's results eagerly, in graph mode and under kn.compile, as lists of arrays."""
    eager = fn(*[kn.tensor(a) for a in arrays])
    eager = [t.numpy() for t in (eager if isinstance(eager, tuple) else (eager,))]
    graph = [np.asarray(v) for v in _graph(fn, *arrays)]
    compiled = kn.compile(fn)(*[kn.tensor(a) for a in arrays])
    compiled = [t.numpy() for t in (compiled if isinstance(compiled, tuple) else (compiled,))]
    return eager, graph, compiled


def _grads(lib, fn, arrays, seed=0):
    """The gradients of `sum(fn(*xs) * w)` (w random, fixed) with respect to each x."""
    xs = [lib.tensor(a.copy(), requires_grad=True) for a in arrays]
    out = fn(lib, *xs)
    w = np.random.default_rng(seed).standard_normal(tuple(out.shape)).astype(a_dtype(arrays))
    (out * lib.tensor(w)).sum().backward()
    return [x.grad.numpy() for x in xs]


def a_dtype(arrays):
    return arrays[0].dtype


# -- dtypes and tensor queries -------------------------------------------------------------------


def test_finfo_and_iinfo_are_pytorchs(torch):
    for name in ("float16", "bfloat16", "float32", "float64"):
        ours, theirs = kn.finfo(getattr(kn, name)), torch.finfo(getattr(torch, name))
        for attr in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution"):
            assert getattr(ours, attr) == getattr(theirs, attr), (name, attr)
            assert type(getattr(ours, attr)) is type(getattr(theirs, attr))
        assert ours.dtype == theirs.dtype and repr(ours) == repr(theirs)
    assert kn.finfo().dtype == "float32"
    for name in ("uint8", "int8", "int16", "int32", "int64"):
        ours, theirs = kn.iinfo(getattr(kn, name)), torch.iinfo(getattr(torch, name))
        assert (ours.bits, ours.min, ours.max, ours.dtype, repr(ours)) == (
            theirs.bits, theirs.min, theirs.max, theirs.dtype, repr(theirs)
        )  # fmt: skip
    for bad in (lambda: kn.finfo(kn.int32), lambda: kn.iinfo(kn.float32),
                lambda: kn.iinfo(kn.bool), lambda: kn.finfo("float32")):  # fmt: skip
        with pytest.raises(TypeError):
            bad()


def test_promote_types_and_can_cast_over_every_pair(torch):
    names = "bool uint8 int8 int16 int32 int64 float16 bfloat16 float32 float64".split()
    for a in names:
        for b in names:
            ta, tb = getattr(torch, a), getattr(torch, b)
            ka, kb = (
                getattr(kn, a if a != "bool" else "bool_"),
                getattr(kn, b if b != "bool" else "bool_"),
            )
            want = str(torch.promote_types(ta, tb)).split(".")[-1]
            assert kn.promote_types(ka, kb).name == want, (a, b)
            assert kn.can_cast(ka, kb) == torch.can_cast(ta, tb), (a, b)


def test_tensor_queries_take_tensors_and_symbols():
    # by hand: a (2, 3) int tensor has 6 elements and is not a float
    t = kn.zeros(2, 3, dtype=kn.int64)
    assert kn.is_tensor(t) and not kn.is_tensor([1]) and not kn.is_tensor(np.zeros(2))
    assert kn.numel(t) == 6 and not kn.is_floating_point(t)
    assert kn.is_floating_point(kn.zeros(1, dtype=kn.bfloat16))
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float16, (4, 5))
        assert kn.is_tensor(x) and kn.numel(x) == 20 and kn.is_floating_point(x)
    for fn in (kn.numel, kn.is_floating_point):
        with pytest.raises(TypeError, match="must be Tensor, not list"):
            fn([1.0])


def test_as_tensor_shares_what_it_can(torch):
    a = np.arange(3.0)
    t = kn.as_tensor(a)
    a[0] = 7.0
    assert t.dtype == kn.float64 and t.tolist() == [7.0, 1.0, 2.0]  # shared, as from_numpy
    copied = kn.as_tensor(a, dtype=kn.float32)
    a[1] = 9.0
    assert copied.tolist() == [7.0, 1.0, 2.0]
    x = kn.ones(2)
    assert kn.as_tensor(x) is x and kn.as_tensor(x, dtype=kn.float32) is x
    assert kn.as_tensor(x, dtype=kn.int64).dtype == kn.int64
    for data in ([1, 2], [1.5, 2.0], 3, [True]):
        assert kn.as_tensor(data).dtype.name == str(torch.as_tensor(data).dtype).split(".")[-1]


def test_logspace_is_pytorchs(torch):
    for args, kwargs in [
        ((0, 2, 3), {}),
        ((-1, 1, 5), {"base": 2.0}),
        ((0, 3, 4), {"base": 2}),
        ((1, 0, 4), {}),
        ((0, 1, 1), {}),
        ((0, 1, 0), {}),
        ((0, 2, 3), {"dtype": "int64"}),
        ((0, 2, 5), {"dtype": "float64"}),
    ]:
        tk = {k: getattr(torch, v) if k == "dtype" else v for k, v in kwargs.items()}
        kk = {k: getattr(kn, v) if k == "dtype" else v for k, v in kwargs.items()}
        want, got = torch.logspace(*args, **tk), kn.logspace(*args, **kk)
        assert got.dtype.name == str(want.dtype).split(".")[-1]
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    with pytest.raises(RuntimeError):
        kn.logspace(0, 1, -1)


def test_random_likes_in_every_mode():
    kn.manual_seed(0)
    x = kn.zeros(200, 3, dtype=kn.float64)
    u, n = kn.rand_like(x), kn.randn_like(x, dtype=kn.float32)
    i = kn.randint_like(kn.zeros(300, dtype=kn.int32), 2, 5)
    assert (u.shape, u.dtype, n.dtype, i.dtype) == (x.shape, kn.float64, kn.float32, kn.int32)
    assert 0 <= u.min().item() and u.max().item() < 1 and abs(n.mean().item()) < 0.2
    assert sorted(set(i.tolist())) == [2, 3, 4]
    assert set(kn.randint_like(kn.zeros(50), 3).tolist()) <= {0.0, 1.0, 2.0}
    assert kn.rand_like(kn.ones(2), requires_grad=True).requires_grad

    def fn(x):
        return kn.rand_like(x), kn.randint_like(x, 10, 12), kn.randn_like(x)

    for out in _modes(fn, np.zeros((100,), np.float32)):
        assert out[0].dtype == np.float32 and 0 <= out[0].min() and out[0].max() < 1
        assert set(out[1].tolist()) <= {10.0, 11.0} and out[2].std() > 0.5


def test_tril_and_triu_indices_are_pytorchs(torch):
    for row, col in ((3, 3), (4, 2), (2, 5), (0, 3), (1, 1)):
        for offset in (-5, -1, 0, 1, 2, 7):
            for name in ("tril_indices", "triu_indices"):
                want = getattr(torch, name)(row, col, offset)
                got = getattr(kn, name)(row, col, offset)
                assert got.dtype == kn.int64 and got.numpy().tolist() == want.tolist()
    assert kn.tril_indices(3, 3, dtype=kn.int32).dtype == kn.int32
    with pytest.raises(NotImplementedError, match="not implemented for 'Float'"):
        kn.tril_indices(3, 3, dtype=kn.float32)
    with pytest.raises(RuntimeError, match="row must be non-negative"):
        kn.triu_indices(-1, 3)


# -- printing ------------------------------------------------------------------------------------


@pytest.fixture
def printoptions(torch):
    yield
    kn.set_printoptions(profile="default")
    torch.set_printoptions(profile="default")


@pytest.mark.usefixtures("printoptions")
def test_print_options_print_as_pytorchs(torch):
    values = ([1.23456, 100.0], [1e-5, 1.0], [1e10, 1.0], [1.0, 2.0], [0.5], 3.14159)
    for options in ({"precision": 2}, {"sci_mode": True}, {"sci_mode": False},
                    {"profile": "short"}, {"precision": 6, "sci_mode": False},
                    {"threshold": 5, "edgeitems": 1}, {"profile": "full"}):  # fmt: skip
        kn.set_printoptions(**options)
        torch.set_printoptions(**options)
        for v in (*values, list(range(12))):
            want = repr(torch.tensor(v)).replace("torch.", "kiln.")
            assert repr(kn.tensor(v)) == want, (options, v)
    kn.set_printoptions(profile="default", precision=3)
    kn.set_printoptions(linewidth=120)  # the others stay; sci_mode is reset to None
    assert kn.get_printoptions() == {"precision": 3, "threshold": 1000, "edgeitems": 3,
                                     "linewidth": 120, "sci_mode": None}  # fmt: skip


# -- tensor ops -------------------------------------------------------------------------------


def test_combinations_in_every_mode(torch):
    x = np.array([4.0, -1.0, 2.5, 7.0], np.float32)
    for r in (0, 1, 2, 3, 5):
        for replace in (False, True):
            want = torch.combinations(torch.tensor(x), r, replace).numpy()
            for got in _modes(lambda v, r=r, w=replace: kn.combinations(v, r, w), x):
                assert got[0].shape == want.shape and np.array_equal(got[0], want), (r, replace)
    with pytest.raises(RuntimeError, match="1D vector"):
        kn.combinations(kn.ones(2, 2))
    with pytest.raises(RuntimeError, match="non-negative"):
        kn.combinations(kn.ones(2), -1)


def test_frexp_is_exact_and_has_pytorchs_gradient(torch):
    rng = np.random.default_rng(0)
    wide = rng.standard_normal(300) * np.exp(rng.uniform(-60, 60, 300))
    special = [0.0, -0.0, 1.0, 0.5, -1.0, 2.0**-1074, 2.0**-1022, 1e308, np.inf, -np.inf, np.nan]
    for name in ("float16", "bfloat16", "float32", "float64"):
        with np.errstate(over="ignore"):
            x = np.concatenate([wide, special]).astype(getattr(kn, name))
        tx = torch.tensor(x.astype(np.float64)).to(getattr(torch, name))
        mantissa, exponent = kn.frexp(kn.tensor(x))
        want = torch.frexp(tx)
        assert mantissa.dtype == x.dtype and exponent.dtype == kn.int32
        np.testing.assert_array_equal(mantissa.float().numpy(), want.mantissa.float().numpy())
        np.testing.assert_array_equal(exponent.numpy(), want.exponent.numpy())
    assert kn.frexp(kn.ones(1))._fields == ("mantissa", "exponent")
    x = np.array([3.0, -0.1, 40.0, 1e-3], np.float32)
    for got in _modes(lambda v: kn.frexp(v), x):
        want = torch.frexp(torch.tensor(x))
        assert np.array_equal(got[0], want[0].numpy()) and np.array_equal(got[1], want[1].numpy())
    ours = _grads(kn, lambda L, v: L.frexp(v).mantissa, [x])
    np.testing.assert_allclose(ours[0], _grads(torch, lambda L, v: L.frexp(v).mantissa, [x])[0])
    with pytest.raises(RuntimeError, match="floating-point"):
        kn.frexp(kn.tensor([1, 2]))


def test_renorm_values_and_gradients(torch):
    x = np.random.default_rng(1).standard_normal((3, 4, 2)).astype(np.float32)
    x[1] = 0.0  # an all-zero slice: norm 0, unchanged, no NaN in the gradient
    for p in (1, 2, 3.5, math.inf):
        for dim in (0, -1, 1):
            for maxnorm in (0.5, 100.0):

                def fn(L, v, p=p, dim=dim, maxnorm=maxnorm):
                    return v.renorm(p, dim, maxnorm)

                want = fn(torch, torch.tensor(x)).numpy()
                np.testing.assert_allclose(fn(kn, kn.tensor(x)).numpy(), want, rtol=1e-5)
                got, ref = _grads(kn, fn, [x]), _grads(torch, fn, [x])
                np.testing.assert_allclose(got[0], ref[0], rtol=1e-4, atol=1e-5)
    for got in _modes(lambda v: kn.renorm(v, 2, 0, 1.0), x):
        np.testing.assert_allclose(got[0], torch.renorm(torch.tensor(x), 2, 0, 1.0), rtol=1e-5)
    t = kn.tensor(x.copy())
    assert t.renorm_(2, 0, 1.0) is t and abs(kn.linalg.vector_norm(t[0]).item() - 1) < 1e-5
    for bad, error in (
        (lambda: kn.renorm(kn.ones(3), 2, 0, 1.0), RuntimeError),
        (lambda: kn.renorm(kn.ones(2, 2), 0, 0, 1.0), RuntimeError),
        (lambda: kn.renorm(kn.ones(2, 2), 2, 0, -1.0), RuntimeError),
        (lambda: kn.renorm(kn.ones(2, 2), 2, 2, 1.0), IndexError),
        (lambda: kn.renorm(kn.ones(2, 2, dtype=kn.int64), 2, 0, 1), RuntimeError),
    ):
        with pytest.raises(error):
            bad()


def test_vander_values_dtypes_and_gradient(torch):
    cases = [(np.array([1, 2, -3]), {}), (np.array([True, False]), {}),
             (np.array([1.5, -2.0, 0.0], np.float32), {"N": 4, "increasing": True}),
             (np.array([2.0, 3.0], np.float64), {"N": 0}),
             (np.array([2, 5], np.uint8), {"N": 3})]  # fmt: skip
    for x, kwargs in cases:
        want = torch.vander(torch.tensor(x), **kwargs)
        for got in _modes(lambda v, kw=kwargs: kn.vander(v, **kw), x):
            assert got[0].dtype.name == str(want.dtype).split(".")[-1]
            np.testing.assert_array_equal(got[0], want.numpy())
    # the gradient by hand (torch 2.13's vander refuses backward): d/dx of sum_k w_k x ** k
    # is sum_k k w_k x ** (k - 1), the columns being x ** 3, x ** 2, x, 1
    x = np.array([1.5, -2.0, 0.5], np.float32)
    got = _grads(kn, lambda L, v: L.vander(v, N=4), [x])[0]
    w = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    want = sum(k * w[:, 3 - k] * x ** (k - 1) for k in (1, 2, 3))
    np.testing.assert_allclose(got, want, rtol=1e-5)
    with pytest.raises(RuntimeError, match="one-dimensional"):
        kn.vander(kn.ones(2, 2))
    with pytest.raises(RuntimeError, match="non-negative"):
        kn.vander(kn.ones(2), N=-1)


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")  # NaN compared in bfloat16
def test_nextafter_is_pytorchs(torch):
    rng = np.random.default_rng(2)
    a = np.concatenate([rng.standard_normal(50), [0.0, -0.0, 1.0, np.inf, -np.inf, np.nan, 2.0]])
    b = np.concatenate([rng.standard_normal(50), [-1.0, 1.0, 1.0, 0.0, np.inf, 1.0, np.nan]])
    for name in ("float16", "bfloat16", "float32", "float64"):
        ka, kb = kn.tensor(a, dtype=getattr(kn, name)), kn.tensor(b, dtype=getattr(kn, name))
        ta = torch.tensor(a).to(getattr(torch, name))
        want = torch.nextafter(ta, torch.tensor(b).to(getattr(torch, name)))
        got = kn.nextafter(ka, kb)
        assert got.dtype == ka.dtype
        np.testing.assert_array_equal(got.numpy().astype(np.float64), want.double().numpy())
    assert kn.tensor([1.0]).nextafter(kn.tensor([2.0], dtype=kn.float64)).dtype == kn.float64
    t = kn.tensor([1.0])
    assert t.nextafter_(kn.tensor([0.0])) is t and t.item() == np.nextafter(np.float32(1), 0)
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        kn.nextafter(kn.tensor([1]), kn.tensor([2]))
    with pytest.raises(TypeError, match="must be Tensor"):
        kn.nextafter(kn.tensor([1.0]), 2.0)


def test_integer_powers_and_square_of_bools_are_pytorchs(torch):
    base = np.array([-3, -2, -1, 0, 1, 2, 3]).repeat(7)
    exponent = np.tile(np.array([-3, -2, -1, 0, 1, 2, 3]), 7)
    want = (torch.tensor(base) ** torch.tensor(exponent)).numpy()
    for got in _modes(lambda a, b: a**b, base, exponent):
        np.testing.assert_array_equal(got[0], want)
    # by hand: 1 ** -k is 1, (-1) ** -k is -1 for odd k, 2 ** -1 truncates to 0
    assert (kn.tensor([1, -1, -1, 2]) ** kn.tensor([-4, -3, -2, -1])).tolist() == [1, -1, 1, 0]
    assert (2 ** kn.tensor([-1, 0, 3])).tolist() == [0, 1, 8]
    u = np.array([0, 1, 2, 5], np.uint8)
    got = kn.tensor(u) ** kn.tensor([-1, -2, 2, 1])
    assert got.tolist() == (torch.tensor(u) ** torch.tensor([-1, -2, 2, 1])).tolist()
    for bad in (lambda: kn.tensor([2]) ** -1, lambda: kn.pow(kn.tensor([True]), -2),
                lambda: kn.tensor([2], dtype=kn.uint8).pow(-1)):  # fmt: skip
        with pytest.raises(RuntimeError, match="negative integer powers"):
            bad()
    assert (kn.tensor([2]) ** -1.0).tolist() == [0.5]
    for got in _modes(lambda v: kn.square(v), np.array([True, False])):
        assert got[0].dtype == np.int64 and got[0].tolist() == [1, 0]


# -- nn.functional ------------------------------------------------------------------------------


def test_alpha_dropout_keeps_mean_and_variance():
    F = kn.nn.functional
    x = kn.tensor(np.random.default_rng(3).standard_normal(200_000).astype(np.float32))
    assert F.alpha_dropout(x, 0.3) is x and F.alpha_dropout(x, 0.0, True) is x
    kn.manual_seed(0)
    y = F.alpha_dropout(x, 0.3, training=True)
    assert abs(y.mean().item()) < 0.02 and abs(y.std().item() - 1) < 0.02
    # the dropped elements all take one value: a * (-alpha) + a * alpha * p (hand-computed)
    alpha, p = 1.7580993408473766, 0.3
    a = 1 / math.sqrt((alpha * alpha * p + 1) * (1 - p))
    dropped = np.isclose(y.numpy(), -alpha * a + alpha * a * p)
    assert abs(dropped.mean() - p) < 0.01
    assert F.alpha_dropout(x, 1.0, True).abs().sum().item() == 0
    z = F.feature_alpha_dropout(kn.ones(8, 6, 5), 0.5, True)
    assert (z.std(dim=2) == 0).all().item() and len(set(z[:, :, 0].flatten().tolist())) == 2
    with pytest.raises(ValueError, match="between 0 and 1"):
        F.alpha_dropout(x, 1.5)
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        F.feature_alpha_dropout(kn.ones(3), 0.5, True)
    drop = kn.nn.AlphaDropout(0.5)
    out = kn.compile(lambda v: drop(v))(kn.ones(1000))  # a random node: fresh values per run
    assert len(set(out.tolist())) == 2


def test_bilinear_values_gradients_and_errors(torch):
    rng = np.random.default_rng(4)
    x1 = rng.standard_normal((2, 3, 5)).astype(np.float32)
    x2 = rng.standard_normal((2, 3, 4)).astype(np.float32)
    w = rng.standard_normal((6, 5, 4)).astype(np.float32)
    b = rng.standard_normal(6).astype(np.float32)

    def fn(L, *v):
        return (torch if L is torch else kn).nn.functional.bilinear(*v)

    want = fn(torch, *map(torch.tensor, (x1, x2, w, b))).numpy()
    for got in _modes(lambda *v: kn.nn.functional.bilinear(*v), x1, x2, w, b):
        np.testing.assert_allclose(got[0], want, rtol=1e-5, atol=1e-5)
    for ours, theirs in zip(_grads(kn, fn, [x1, x2, w, b]), _grads(torch, fn, [x1, x2, w, b])):
        np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-4)
    with pytest.raises(RuntimeError, match="input1 size does not match weight size: got 5"):
        kn.nn.functional.bilinear(kn.tensor(x1), kn.tensor(x2), kn.ones(6, 4, 4))
    m = kn.nn.Bilinear(5, 4, 6)
    assert m(kn.tensor(x1), kn.tensor(x2)).shape == (2, 3, 6)
    assert np.abs(m.weight.numpy()).max() <= 1 / math.sqrt(5)


def test_lp_pool_values_and_gradients(torch):
    rng = np.random.default_rng(5)
    x1 = rng.uniform(0.1, 2.0, (2, 3, 7)).astype(np.float32)
    x2 = rng.uniform(0.1, 2.0, (2, 3, 5, 6)).astype(np.float32)
    x3 = rng.uniform(0.1, 2.0, (1, 2, 4, 4, 5)).astype(np.float32)
    cases = [("lp_pool1d", x1, (2, 3), {}), ("lp_pool1d", x1, (1.5, 2, 1), {"ceil_mode": True}),
             ("lp_pool1d", x1, (math.inf, 3), {}), ("lp_pool2d", x2, (2, (2, 3)), {}),
             ("lp_pool2d", x2, (3, 2, 1), {}), ("lp_pool3d", x3, (2, 2), {})]  # fmt: skip
    for name, x, args, kwargs in cases:

        def fn(L, v, name=name, args=args, kwargs=kwargs):
            return getattr(L.nn.functional, name)(v, *args, **kwargs)

        want = fn(torch, torch.tensor(x)).numpy()
        for got in _modes(lambda v, f=fn: f(kn, v), x):
            np.testing.assert_allclose(got[0], want, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(_grads(kn, fn, [x])[0], _grads(torch, fn, [x])[0], rtol=1e-4,
                                   atol=1e-5)  # fmt: skip
    assert kn.nn.LPPool2d(2, 2)(kn.tensor(x2)).shape == (2, 3, 2, 3)


def test_multilabel_margin_loss_values_and_gradients(torch):
    rng = np.random.default_rng(6)
    x = rng.standard_normal((4, 5)).astype(np.float32)
    target = np.array([[3, 0, -1, 1, 1], [4, 4, 2, -1, 0], [0, 1, 2, 3, 4], [-1, 0, 1, 2, 3]])
    for reduction in ("mean", "sum", "none"):

        def fn(L, v, reduction=reduction, t=target):
            return L.nn.functional.multilabel_margin_loss(v, L.tensor(t), reduction=reduction)

        want = fn(torch, torch.tensor(x)).numpy()
        for got in _modes(lambda v, f=fn: f(kn, v), x):
            np.testing.assert_allclose(got[0], want, rtol=1e-5)
        np.testing.assert_allclose(_grads(kn, fn, [x])[0], _grads(torch, fn, [x])[0], rtol=1e-5,
                                   atol=1e-6)  # fmt: skip
    one = kn.nn.functional.multilabel_margin_loss(kn.tensor(x[0]), kn.tensor(target[1]))
    want = torch.nn.functional.multilabel_margin_loss(torch.tensor(x[0]), torch.tensor(target[1]))
    assert abs(one.item() - want.item()) < 1e-6
    assert abs(kn.nn.MultiLabelMarginLoss(reduction="sum")(kn.tensor(x), kn.tensor(target)).item()
               - fn(torch, torch.tensor(x), "sum").item()) < 1e-5  # fmt: skip
    with pytest.raises(RuntimeError, match="inconsistent target size"):
        kn.nn.functional.multilabel_margin_loss(kn.tensor(x), kn.tensor(target[:, :3]))


# -- errors -------------------------------------------------------------------------------------


def test_factory_and_device_errors_are_pytorchs_classes():
    for bad in (
        lambda: kn.arange(0, 5, 0),
        lambda: kn.arange(5, 0, 1),
        lambda: kn.zeros(-1),
        lambda: kn.ones(2, -3),
        lambda: kn.randn((-1, 2)),
        lambda: kn.full((-2,), 1.0),
    ):
        with pytest.raises(RuntimeError):
            bad()
    assert kn.arange(5, 0, -2).tolist() == [5, 3, 1] and kn.zeros(0, 2).shape == (0, 2)
    with pytest.raises(AssertionError, match="no xpu backend"):
        kn.ones(2).to("xpu")
    with pytest.raises(kn.DeviceError):
        kn.ones(2).to("xpu:1")
    with pytest.raises(RuntimeError, match="unknown device"):
        kn.ones(2).to("npu")
