"""Values and gradients at 0, inf and NaN that differed from PyTorch's: prod and cumprod with a
zero beside an inf or NaN (PyTorch takes the products before and after the element, and
leaves out the terms past a zero), pow with a Python float exponent of 1/2 or -1/2 (sqrt and
rsqrt there: NaN at -inf) and its gradient, nanmean of a slice of NaNs (NaN gradient); and,
pinned beside them, gelu at +-inf, sqrt and clamp with infinite or crossed bounds, which
already agreed. Each case runs eagerly, as a graph (placeholder, kn.grad, kn.function) and
under kn.compile. Expected values are torch 2.13's, written out (`test_expected_are_torchs`
reruns them on torch)."""

import numpy as np
import pytest

import kiln as kn

NAN, INF = float("nan"), float("inf")


def _prod(m, t):
    return m.prod(t).reshape(1)


def _gelu(approximate):
    return lambda m, t: m.nn.functional.gelu(t, approximate=approximate)


# name -> (function of (module, x), x, dtype); the output's sum is differentiated
CASES = {
    "prod-zero-inf": (_prod, [0.0, INF, 2.0], "float32"),
    "prod-zero-nan": (_prod, [0.0, NAN, 2.0], "float32"),
    "prod-two-zeros-inf": (_prod, [0.0, 0.0, INF], "float32"),
    "prod-two-zeros-nan": (_prod, [0.0, NAN, 0.0], "float32"),
    "prod-inf-no-zero": (_prod, [INF, 2.0, 3.0], "float32"),
    "prod-2d-all": (lambda m, t: m.prod(t.reshape(2, 3)).reshape(1),
                    [0.0, INF, 2.0, INF, 2.0, 3.0], "float32"),
    "prod-dim-zero-inf": (lambda m, t: m.prod(t.reshape(2, 2), 1), [0.0, INF, NAN, 0.0],
                          "float32"),
    "prod-dim-other-row": (lambda m, t: m.prod(t.reshape(2, 3), 1),
                           [0.0, 0.0, INF, INF, 2.0, 3.0], "float32"),
    "prod-dim-no-zero": (lambda m, t: m.prod(t.reshape(2, 3), 1),
                         [1.0, 2.0, INF, INF, 2.0, 3.0], "float32"),
    "cumprod-zero-inf": (lambda m, t: m.cumprod(t, 0), [2.0, 0.0, INF, 3.0], "float32"),
    "cumprod-inf-zero": (lambda m, t: m.cumprod(t, 0), [2.0, INF, 0.0, 3.0], "float32"),
    "cumprod-zero-nan": (lambda m, t: m.cumprod(t, 0), [2.0, 0.0, NAN, 3.0], "float32"),
    "cumprod-two-zeros-inf": (lambda m, t: m.cumprod(t, 0), [0.0, 0.0, INF, 3.0], "float32"),
    "cumprod-zero-inf-zero": (lambda m, t: m.cumprod(t, 0), [3.0, 0.0, INF, 0.0, NAN],
                              "float32"),
    "cumprod-columns": (lambda m, t: m.cumprod(t.reshape(3, 2), 0),
                        [2.0, INF, 0.0, 2.0, INF, 3.0], "float32"),
    "cumprod-one-inf": (lambda m, t: m.cumprod(t, 0), [INF], "float32"),
    "pow-half": (lambda m, t: m.pow(t, 0.5), [-INF, -0.0, 0.0, INF, -1.0, 4.0], "float32"),
    "pow-minus-half": (lambda m, t: m.pow(t, -0.5), [-INF, -0.0, 0.0, INF, 4.0], "float32"),
    "pow-operator-half": (lambda m, t: t**0.5, [-INF, -0.0, INF, 4.0], "float64"),
    # float16: C's pow in PyTorch too (inf at -inf, 0.0 at -0.0)
    "pow-half-float16": (lambda m, t: m.pow(t, 0.5), [-INF, -0.0, INF, 4.0], "float16"),
    "pow-minus-half-float16": (lambda m, t: m.pow(t, -0.5), [-INF, -0.0, 4.0], "float16"),
    "pow-one-and-half": (lambda m, t: t**1.5, [-INF, 0.0, INF, 4.0], "float32"),
    "sqrt": (lambda m, t: m.sqrt(t), [-INF, -0.0, 0.0, INF, -1.0], "float32"),
    # float64: torch's float32 gelu gives NaN at +inf in its vectorized loop only (inf on
    # one element, or non-contiguous): kiln gives inf in both dtypes
    "gelu": (_gelu("none"), [-INF, INF, NAN, 0.0], "float64"),
    "gelu-tanh": (_gelu("tanh"), [-INF, INF, NAN, 0.0], "float32"),
    "nanmean-nan-row": (lambda m, t: m.nanmean(t.reshape(2, 2), 1), [NAN, NAN, 1.0, NAN],
                        "float32"),
    "nanmean-all-nan": (lambda m, t: m.nanmean(t).reshape(1), [NAN, NAN], "float32"),
    "clamp-min-inf": (lambda m, t: m.clamp(t, min=INF), [1.0, INF, -INF, NAN], "float32"),
    "clamp-max-minus-inf": (lambda m, t: m.clamp(t, max=-INF), [1.0, INF, -INF, NAN],
                            "float32"),
    "clamp-min-above-max": (lambda m, t: m.clamp(t, min=2.0, max=1.0), [0.0, 1.5, 3.0, NAN],
                            "float32"),
}  # fmt: skip

WANT = {
    "prod-zero-inf": ([NAN], [INF, 0.0, NAN]),
    "prod-zero-nan": ([NAN], [NAN, 0.0, NAN]),
    "prod-two-zeros-inf": ([NAN], [0.0, 0.0, 0.0]),
    "prod-two-zeros-nan": ([NAN], [0.0, 0.0, 0.0]),
    "prod-inf-no-zero": ([INF], [NAN, INF, INF]),
    "prod-2d-all": ([NAN], [INF, NAN, NAN, NAN, NAN, NAN]),
    "prod-dim-zero-inf": ([NAN, NAN], [INF, 0.0, 0.0, NAN]),
    "prod-dim-other-row": ([NAN, INF], [NAN, NAN, 0.0, 6.0, INF, INF]),
    "prod-dim-no-zero": ([INF, INF], [INF, INF, NAN, NAN, INF, INF]),
    "cumprod-zero-inf": ([2.0, 0.0, NAN, NAN], [1.0, INF, 0.0, 0.0]),
    "cumprod-inf-zero": ([2.0, INF, NAN, NAN], [INF, NAN, INF, 0.0]),
    "cumprod-zero-nan": ([2.0, 0.0, NAN, NAN], [1.0, NAN, 0.0, 0.0]),
    "cumprod-two-zeros-inf": ([0.0, 0.0, NAN, NAN], [1.0, 0.0, 0.0, 0.0]),
    "cumprod-zero-inf-zero": ([3.0, 0.0, NAN, NAN, NAN], [1.0, NAN, 0.0, 0.0, 0.0]),
    "cumprod-columns": ([2.0, INF, 0.0, INF, NAN, INF], [1.0, NAN, INF, INF, 0.0, INF]),
    "cumprod-one-inf": ([INF], [1.0]),
    "pow-half": ([NAN, -0.0, 0.0, INF, NAN, 2.0], [NAN, -INF, INF, 0.0, NAN, 0.25]),
    "pow-minus-half": ([NAN, -INF, INF, 0.0, 0.5], [-0.0, -INF, -INF, -0.0, -0.0625]),
    "pow-operator-half": ([NAN, -0.0, INF, 2.0], [NAN, -INF, 0.0, 0.25]),
    "pow-half-float16": ([INF, 0.0, INF, 2.0], [0.0, INF, 0.0, 0.25]),
    "pow-minus-half-float16": ([0.0, INF, 0.5], [-0.0, -INF, -0.0625]),
    "pow-one-and-half": ([INF, 0.0, INF, 8.0], [NAN, 0.0, INF, 3.0]),
    "sqrt": ([NAN, -0.0, 0.0, INF, NAN], [NAN, -INF, INF, 0.0, NAN]),
    "gelu": ([NAN, INF, NAN, 0.0], [NAN, NAN, NAN, 0.5]),
    "gelu-tanh": ([NAN, INF, NAN, 0.0], [NAN, NAN, NAN, 0.5]),
    "nanmean-nan-row": ([NAN, 1.0], [NAN, NAN, 1.0, 0.0]),
    "nanmean-all-nan": ([NAN], [NAN, NAN]),
    "clamp-min-inf": ([INF, INF, INF, NAN], [0.0, 1.0, 0.0, 0.0]),
    "clamp-max-minus-inf": ([-INF, -INF, -INF, NAN], [0.0, 0.0, 1.0, 0.0]),
    "clamp-min-above-max": ([1.0, 1.0, 1.0, NAN], [0.0, 0.0, 0.0, 0.0]),
}


def _eager(m, name, wrap=lambda f: f):
    fn, x, dtype = CASES[name]
    t = m.tensor(np.array(x, dtype), requires_grad=True)
    y = wrap(lambda t: fn(m, t))(t)
    y.sum().backward()
    return y.detach().numpy().ravel(), t.grad.numpy()


def _graph(name):
    fn, x, dtype = CASES[name]
    with kn.Graph().as_default():
        p = kn.placeholder(getattr(kn, dtype), (len(x),))
        y = fn(kn, p)
        f = kn.function([p], [y, kn.grad(y.sum(), [p])[0]])
    y, g = f(np.array(x, dtype))
    return y.ravel(), g


MODES = {
    "eager": lambda name: _eager(kn, name),
    "graph": _graph,
    "compiled": lambda name: _eager(kn, name, kn.compile),
}


def _check(got, want, name):
    for g, w, what in zip(got, want, ("value", "gradient"), strict=True):
        w = np.array(w, np.asarray(g).dtype)
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=0, err_msg=f"{name}: {what}")
        # the sign of a zero or an infinity too (sqrt(-0.0) is -0.0, its gradient -inf)
        assert (np.signbit(g) == np.signbit(w))[~np.isnan(w)].all(), (name, what, g, w)


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("name", sorted(CASES))
def test_values_and_gradients_are_torchs(name, mode):
    _check(MODES[mode](name), WANT[name], name)


def test_expected_are_torchs():
    torch = pytest.importorskip("torch")
    for name in CASES:
        _check(_eager(torch, name), WANT[name], name)


def test_pow_with_a_tensor_exponent_of_a_half_is_cs_pow_in_graphs():
    """Only a scalar exponent is sqrt: a broadcast exponent tensor keeps C's pow, inf at -inf
    (torch 2.13: `torch.tensor([-inf]) ** torch.tensor([0.5, 0.5])` is [inf, inf])."""
    x = kn.tensor([-INF, -INF])
    np.testing.assert_array_equal((x ** kn.tensor([0.5, 0.5])).numpy(), [INF, INF])


@pytest.mark.parametrize("mode", ["eager", "graph", "compiled"])
def test_bfloat16_takes_a_half_power_as_sqrt(mode):
    """torch 2.13: bfloat16 `x ** 0.5` and `x ** -0.5` are sqrt and rsqrt, as in float32
    (NaN at -inf), where float16's are C's pow."""
    x = np.array([-INF, -0.0, 4.0], np.float32)
    got = []
    for e in (0.5, -0.5):
        if mode == "graph":
            with kn.Graph().as_default():
                p = kn.placeholder(kn.bfloat16, (3,))
                f = kn.function([p], p**e)
            got.append(np.asarray(f(kn.tensor(x, dtype=kn.bfloat16).numpy()), np.float32))
            continue
        run = (lambda t: t**e) if mode == "eager" else kn.compile(lambda t: t**e)
        got.append(run(kn.tensor(x, dtype=kn.bfloat16)).float().numpy())
    np.testing.assert_array_equal(got[0], [NAN, -0.0, 2.0])
    np.testing.assert_array_equal(got[1], [NAN, -INF, 0.5])
    assert np.signbit(got[0][1]) and np.signbit(got[1][1])


def test_a_half_power_of_a_0d_tensor():
    """NumPy's sqrt of a 0-d array is a scalar, which cannot take rsqrt's `out=` (norm with
    p=0.5 raised TypeError)."""
    for e, want in ((0.5, 2.0), (-0.5, 0.5)):
        assert (kn.tensor(4.0) ** e).item() == want
        assert kn.compile(lambda t, e=e: t**e)(kn.tensor(4.0)).item() == want
    np.testing.assert_allclose(kn.linalg.norm(kn.tensor([1.0, 4.0]), 0.5).item(), 9.0)
