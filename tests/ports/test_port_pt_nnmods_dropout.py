"""PyTorch's own dropout tests (test/nn/test_dropout.py) as an oracle: the deterministic
behaviours (eval identity, p=0 and p=1, inplace, what is returned, shapes, dtypes, warnings
and errors) compared with torch 2.13 scenario by scenario (pt_oracle.py's comparison, eagerly
and under `kn.compile`); the random masks, whose draws differ from torch's, by their
properties: the share of zeros, the survivors' scale, whole channels dropped together, the
gradient being the mask, AlphaDropout keeping a standard normal input's mean and variance.
"""

import math
import warnings

import numpy as np
import pytest
from port_common import to_numpy
from pt_oracle import MODES, Leaf, Scenarios

import kiln as kn

f32 = np.float32
X = (np.arange(24, dtype=f32).reshape(2, 3, 4) - 11) / 5

SCENARIOS = Scenarios()
case = SCENARIOS.case
ALL = ("dropout", "alpha_dropout", "feature_alpha_dropout", "dropout1d", "dropout2d",
       "dropout3d")  # fmt: skip


def _warned(fn):
    """fn()'s result and the warnings it gave (their first 40 characters)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = fn()
    return out, [str(w.message)[:40] for w in caught]


for _name in ALL:

    @case(f"{_name}_eval_is_identity", Leaf.of(X))
    def _(lib, x, name=_name):
        f = getattr(lib.nn.functional, name)
        out = f(x, 0.7, training=False)
        return out, lib.autograd.grad(out.sum(), x)

    @case(f"{_name}_p0_is_identity", Leaf.of(X))
    def _(lib, x, name=_name):
        out = getattr(lib.nn.functional, name)(x, 0.0, training=True)
        return out, lib.autograd.grad((out * x).sum(), x)

    @case(f"{_name}_p_above_1_refused", X)
    def _(lib, x, name=_name):
        return getattr(lib.nn.functional, name)(x, 1.5, training=True)

    @case(f"{_name}_p_below_0_refused", X)
    def _(lib, x, name=_name):
        return getattr(lib.nn.functional, name)(x, -0.1, training=False)


@case("dropout_p1_zeros_and_zero_grad", Leaf.of(X))
def _(lib, x):
    out = lib.nn.functional.dropout(x, 1.0)
    return out, lib.autograd.grad(out.sum(), x)


@case("channel_dropouts_p1_zeros", X, X.reshape(2, 3, 2, 2), X.reshape(1, 2, 3, 2, 2))
def _(lib, x3, x4, x5):
    F = lib.nn.functional
    return F.dropout1d(x3, 1.0), F.dropout2d(x4, 1.0), F.dropout3d(x5, 1.0)


@case("alpha_dropouts_p1", X)
def _(lib, x):
    # every value becomes the same affine image of SELU's negative saturation
    F = lib.nn.functional
    return F.alpha_dropout(x, 1.0, True), F.feature_alpha_dropout(x, 1.0, True)


@case("eval_and_p0_return_the_input", X)
def _(lib, x):
    F = lib.nn.functional
    return ([getattr(F, n)(x, 0.5, training=False) is x for n in ("dropout", "alpha_dropout")],
            F.dropout(x, 0.0) is x, F.alpha_dropout(x, 0.0, True) is x)  # fmt: skip


@case("dropout_int_and_bool_refused_in_training", X.astype(np.int64))
def _(lib, x):
    return lib.nn.functional.dropout(x, 0.5)


@case("dropout_bool_refused_in_training", X > 0)
def _(lib, x):
    return lib.nn.functional.dropout(x, 0.5)


@case("alpha_dropout_int_refused", X.astype(np.int64))
def _(lib, x):
    return lib.nn.functional.alpha_dropout(x, 0.5, True)


@case("dropout_int_eval_kept", X.astype(np.int64))
def _(lib, x):
    return lib.nn.functional.dropout(x, 0.5, training=False)


@case("dropout_number_p_forms", X)
def _(lib, x):
    F = lib.nn.functional
    return F.dropout(x, 1), F.dropout(x, 0), F.dropout(x, True), F.dropout(x, False)


@case("dropout_keeps_dtype", X.astype(np.float16), X.astype(np.float64))
def _(lib, h, d):
    lib.manual_seed(0)
    F = lib.nn.functional
    return [f(t, 0.5, True).dtype for t in (h, d) for f in (F.dropout, F.alpha_dropout)]


@case("dropout1d_of_4d_refused", X.reshape(1, 2, 3, 4))
def _(lib, x):
    return lib.nn.functional.dropout1d(x, 0.5)


@case("dropout1d_of_1d_refused", X.reshape(-1))
def _(lib, x):
    return lib.nn.functional.dropout1d(x, 0.5, training=False)


@case("feature_alpha_dropout_of_1d_refused", X.reshape(-1))
def _(lib, x):
    return lib.nn.functional.feature_alpha_dropout(x, 0.5, True)


@case("dropout2d_dims_warn", X, X.reshape(4, 6), X.reshape(1, 2, 3, 2, 2))
def _(lib, x3, x2, x5):
    F = lib.nn.functional
    return [_warned(lambda t=t: F.dropout2d(t, 0.0).shape) for t in (x3, x2, x5)]


@case("dropout3d_dims_warn", X, X.reshape(1, 2, 3, 2, 2, 1))
def _(lib, x3, x6):
    F = lib.nn.functional
    return [_warned(lambda t=t: F.dropout3d(t, 0.0).shape) for t in (x3, x6)]


@case("dropout2d_3d_input_is_channelwise_1d", np.ones((3, 50, 8), f32))
def _(lib, x):
    # a 3-D input: (N, C, L) with whole (n, c) rows dropped, as dropout1d (torch warns)
    lib.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = lib.nn.functional.dropout2d(x, 0.5)
    rows = out.amax(-1) == out.amin(-1)  # each (n, c) row kept or dropped whole
    samples = out.amax((1, 2)) != out.amin((1, 2))  # not each sample whole, as (C, H, W)
    return rows.all(), samples.all(), out.shape


@case("inplace_returns_the_input", X)
def _(lib, x):
    F = lib.nn.functional
    y = x.clone()
    outs = [F.dropout(y, 0.0, inplace=True) is y, F.dropout(y, 0.5, False, True) is y]
    z = x.clone()
    F.dropout(z, 1.0, inplace=True)
    return outs, z


@case("inplace_changes_the_argument", X, X.reshape(2, 3, 2, 2), X)
def _(lib, x, x4, y):
    # the caller's tensor changes (under kn.compile too: the compiled call writes it back)
    F = lib.nn.functional
    outs = (F.dropout(x, 1.0, inplace=True), F.dropout2d(x4, 1.0, True, True),
            F.relu(y, inplace=True), F.alpha_dropout(y, 0.0, True, inplace=True))  # fmt: skip
    return x, x4, y, outs


@case("inplace_eval_or_p0_on_leaf_writes_nothing", Leaf.of(X))
def _(lib, x):
    # no element changes, so a leaf that requires grad is accepted (an adversarial input
    # through a model in eval mode with Dropout(inplace=True))
    F = lib.nn.functional
    return (
        F.dropout(x, 0.5, False, True) is x,
        F.dropout(x, 0.0, True, True) is x,
        F.alpha_dropout(x, 0.5, False, True) is x,
        F.dropout2d(x[None], 0.5, False, True),
        F.feature_alpha_dropout(x, 0.0, True, True) is x,
        F.feature_alpha_dropout(x[0, 0], 0.0, True),
        lib.nn.Dropout(inplace=True).eval()(x),
    )


@case("inplace_on_leaf_requiring_grad_refused", Leaf.of(X))
def _(lib, x):
    return lib.nn.functional.dropout(x, 0.5, inplace=True)


@case("inplace_grad_through_non_leaf", Leaf.of(X))
def _(lib, x):
    y = x * 2
    out = lib.nn.functional.dropout(y, 1.0, inplace=True)
    return out, lib.autograd.grad(out.sum(), x)


@case("modules_eval_and_repr", X)
def _(lib, x):
    nn = lib.nn
    mods = [nn.Dropout(0.3), nn.Dropout1d(0.2, inplace=True), nn.Dropout2d(), nn.Dropout3d(1.0),
            nn.AlphaDropout(0.4), nn.FeatureAlphaDropout(0.1)]  # fmt: skip
    shapes = [x, x, x.reshape(2, 3, 2, 2), x.reshape(1, 2, 3, 2, 2), x, x]
    outs = [m.eval()(t) for m, t in zip(mods, shapes)]
    return [repr(m) for m in mods], [m.p for m in mods], [m.inplace for m in mods], outs


@case("module_p_refused")
def _(lib):
    return lib.nn.Dropout(1.5)


@case("module_p1_training", X)
def _(lib, x):
    return lib.nn.Dropout(1.0)(x), lib.nn.Dropout2d(p=1.0)(x.reshape(2, 3, 2, 2))


@case("modules_p_refused_each")
def _(lib):
    nn, refused = lib.nn, []
    for cls in (nn.Dropout, nn.Dropout1d, nn.Dropout2d, nn.Dropout3d):
        for p in (-0.1, 1.1):
            try:
                cls(p)
            except ValueError:
                refused.append((cls.__name__, p))
    return refused


@case("memory_formats_kept")
def _(lib):
    x = lib.ones(2, 3, 4, 5).to(memory_format=lib.channels_last)
    d = lib.empty(2, 3, 3, 6, memory_format=lib.channels_last)[..., ::2]
    d.copy_(lib.ones(2, 3, 3, 3))
    outs = [lib.nn.Dropout(0.2)(x), lib.nn.Dropout2d(0.2)(x), lib.nn.Dropout(1e-10)(d),
            lib.nn.Dropout(0.0)(d)]  # fmt: skip
    return [o.stride() for o in outs], outs[2], outs[3]


@case("empty_input", np.zeros(0, f32))
def _(lib, x):
    F = lib.nn.functional
    return F.dropout(x), F.alpha_dropout(x, 0.5, True), F.dropout(x.reshape(0, 2, 3), 1.0)


@pytest.mark.parametrize("cls,shape", [("Dropout1d", (50, 2)), ("Dropout3d", (50, 2, 2, 2))])
@pytest.mark.parametrize("inplace", [False, True])
def test_unbatched_is_batched_of_one(cls, shape, inplace):
    """An unbatched input gets the mask its batch of one would (the same draws)."""
    m = getattr(kn.nn, cls)(0.5, inplace=inplace)
    x = kn.rand(*shape)
    state = kn.get_rng_state()
    a = m(x.clone())
    kn.set_rng_state(state)
    b = m(x.clone().unsqueeze(0)).squeeze(0)
    assert kn.equal(a, b)


@pytest.mark.parametrize("p", [0.2, 0.5, 0.8])
def test_feature_alpha_dropout_keeps_moments(p):
    """torch's test: the output's mean and std within 0.1 of the input's."""
    kn.manual_seed(0)
    x = kn.randn(1000, 2, 1, 3, 3)
    out = kn.nn.FeatureAlphaDropout(p)(x)
    assert abs((out.mean() - x.mean()).item()) < 0.1
    assert abs((out.std() - x.std()).item()) < 0.1


WARNS = ("kn.compile records a traced function's warnings and gives them at each call, "
         "outside the function: a catch_warnings inside it sees none")  # fmt: skip
SCENARIOS.eager_only.update({
    "dropout2d_dims_warn": WARNS, "dropout3d_dims_warn": WARNS,
    "memory_formats_kept": "kn.compile returns contiguous results (x * 2 of a channels_last "
    "x too): layouts are eager's",
})  # fmt: skip


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", SCENARIOS.names())
def test_matches_torch(torch, name, mode):
    SCENARIOS.check(torch, name, mode)


# -- statistics of the masks ------------------------------------------------------------


@pytest.mark.parametrize("p", [0.2, 0.5, 0.8])
@pytest.mark.parametrize("mode", MODES)
def test_dropout_mask_statistics_and_grad(p, mode):
    """A share p of zeros (within 5 standard errors), survivors scaled by 1 / (1 - p), the
    gradient the output's mask (PyTorch's formula: x * mask / (1 - p))."""
    n = 40000
    kn.manual_seed(0)
    x = kn.ones(n, requires_grad=True)

    def run(x):
        out = kn.nn.functional.dropout(x, p)
        return out, kn.autograd.grad(out.sum(), x)[0]

    out, grad = (kn.compile(run) if mode == "compiled" else run)(x)
    a, g = to_numpy(out), to_numpy(grad)
    zeros = (a == 0).mean()
    assert abs(zeros - p) < 5 * math.sqrt(p * (1 - p) / n)
    np.testing.assert_allclose(a[a != 0], 1 / (1 - p), rtol=1e-6)
    np.testing.assert_array_equal(g, a)


@pytest.mark.parametrize("name,shape", [("dropout1d", (8, 64, 5)), ("dropout1d", (64, 5)),
                                        ("dropout2d", (8, 64, 3, 2)),
                                        ("dropout3d", (8, 64, 2, 2, 2)),
                                        ("dropout3d", (64, 2, 3, 2)),
                                        ("feature_alpha_dropout", (8, 64, 6))])  # fmt: skip
def test_channel_dropout_drops_whole_channels(name, shape):
    """Each (sample, channel) slice is all kept or all dropped, about half of them (p=0.5);
    with a batch dim missing (dropout1d's 2-D, dropout3d's 4-D input) channels are dim 0."""
    kn.manual_seed(1)
    x = kn.ones(*shape)
    f = getattr(kn.nn.functional, name)
    out = to_numpy(f(x, 0.5, True) if "alpha" in name else f(x, 0.5))
    batched = len(shape) > {"dropout1d": 2, "dropout3d": 4, "dropout2d": 3}.get(name, 2)
    per_channel = out.reshape(*shape[: 2 if batched else 1], -1)
    assert (per_channel.max(-1) == per_channel.min(-1)).all()
    values, counts = np.unique(per_channel[..., 0], return_counts=True)
    assert len(values) == 2 and 0.3 < counts[0] / counts.sum() < 0.7, (values, counts)


def test_alpha_dropout_keeps_mean_and_variance(torch):
    """AlphaDropout of a standard normal input keeps mean 0 and variance 1 (its purpose); the
    same statistics as torch's within sampling error."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal(200000).astype(f32)
    for p in (0.2, 0.5):
        stats = []
        for lib in (torch, kn):
            lib.manual_seed(0)
            out = to_numpy(lib.nn.functional.alpha_dropout(lib.tensor(x), p, True))
            assert abs(out.mean()) < 0.02 and abs(out.std() - 1) < 0.02, (lib.__name__, p)
            stats.append((out.mean(), out.std(), len(np.unique(out.round(5)))))
        np.testing.assert_allclose(stats[0][:2], stats[1][:2], atol=0.02)


def test_dropout_draws_differ_per_call_under_compile():
    """A compiled training dropout draws a new mask each call, as eager code does."""
    f = kn.compile(lambda x: kn.nn.functional.dropout(x, 0.5))
    x = kn.ones(1000)
    assert not np.array_equal(to_numpy(f(x)), to_numpy(f(x)))
