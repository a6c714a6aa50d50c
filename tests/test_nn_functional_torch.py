"""kn.nn.functional against PyTorch itself: convolutions, transposed convolutions, pools,
interpolate, activations, normalize and scaled_dot_product_attention, over a grid of options.
Values and input gradients (of `sum(out * r)` for a fixed random `r`) come from torch on the
same inputs; each case runs eagerly, and a subset also under `kn.compile` and in graph mode.
Skipped where torch is not installed."""

import numpy as np
import pytest

import kiln as kn

torch = pytest.importorskip("torch")
TF = torch.nn.functional
KF = kn.nn.functional

RNG = np.random.default_rng(0)
pytestmark = pytest.mark.filterwarnings("ignore:Using padding='same'")


def _arr(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def _first(out):
    return out[0] if isinstance(out, tuple) else out


def _torch_run(fn, arrays, r_seed=1):
    xs = [torch.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
    out = fn(*xs)
    y = _first(out)
    r = np.random.default_rng(r_seed).standard_normal(tuple(y.shape)).astype(np.float32)
    (y * torch.tensor(r)).sum().backward()
    grads = [x.grad.numpy() if x.requires_grad else None for x in xs]
    extra = out[1].detach().numpy() if isinstance(out, tuple) else None
    return y.detach().numpy(), grads, extra, r


def _eager(fn, arrays, r):
    xs = [kn.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
    out = fn(*xs)
    y = _first(out)
    (y * kn.tensor(r)).sum().backward()
    grads = [x.grad.numpy() if x.requires_grad else None for x in xs]
    extra = out[1].detach().numpy() if isinstance(out, tuple) else None
    return y.detach().numpy(), grads, extra


def _compiled(fn, arrays, r):
    return _eager(kn.compile(fn), arrays, r)


def _graph(fn, arrays, r):
    with kn.Graph().as_default():
        xs = [kn.placeholder(a.dtype, a.shape) for a in arrays]
        out = fn(*xs)
        y = _first(out)
        floats = [x for x, a in zip(xs, arrays) if a.dtype.kind == "f"]
        grads = kn.grad(kn.sum(y * kn.constant(r)), floats)
        fetch = [y, *grads] + ([out[1]] if isinstance(out, tuple) else [])
        values = kn.function(xs, fetch)(*arrays)
    it = iter(values[1 : 1 + len(floats)])
    grads = [next(it) if a.dtype.kind == "f" else None for a in arrays]
    return values[0], grads, values[-1] if isinstance(out, tuple) else None


MODES = {"eager": _eager, "compiled": _compiled, "graph": _graph}


def check(kfn, tfn, arrays, modes=("eager",), rtol=1e-4, atol=1e-5):
    want, want_grads, want_extra, r = _torch_run(tfn, arrays)
    for mode in modes:
        got, grads, extra = MODES[mode](kfn, arrays, r)
        assert got.shape == want.shape, (mode, got.shape, want.shape)
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=f"{mode} value")
        for i, (g, w) in enumerate(zip(grads, want_grads)):
            if w is not None:
                np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=f"{mode} grad {i}")
        if want_extra is not None:  # indices, exactly; or attention weights
            np.testing.assert_allclose(extra, want_extra, rtol=rtol, atol=atol, err_msg=mode)


def _one_d(kw):
    """The 1-d form of a 2-d case: the first of each pair."""
    return {k: v[0] if isinstance(v, tuple) else v for k, v in kw.items()}


def _grid(cases, full_modes=1):
    """pytest params: the first `full_modes` cases run in every mode, the rest eagerly."""
    return [
        pytest.param(kw, tuple(MODES) if i < full_modes else ("eager",), id=str(i))
        for i, kw in enumerate(cases)
    ]


# -- convolutions --------------------------------------------------------------------------------

CONV2D = [
    dict(groups=2, padding="same", dilation=2),
    dict(),
    dict(stride=2, padding=1),
    dict(padding="same"),
    dict(padding="valid", stride=(2, 1)),
    dict(groups=4, stride=(2, 1), padding=(1, 2), dilation=(2, 1)),
    dict(groups=2, bias=False),
]


@pytest.mark.parametrize("kw, modes", _grid(CONV2D, 2))
def test_conv2d_matches_torch(kw, modes):
    kw = dict(kw)
    g, bias = kw.get("groups", 1), kw.pop("bias", True)
    arrays = [_arr(2, 4, 7, 6), _arr(8, 4 // g, 3, 2)] + ([_arr(8)] if bias else [])
    check(lambda *a: KF.conv2d(*a, **kw), lambda *a: TF.conv2d(*a, **kw), arrays, modes)


CONV1D = [
    dict(groups=2, stride=2, padding=1),
    dict(),
    dict(padding="same", dilation=3),
    dict(padding="same"),
    dict(groups=4, dilation=2),
]


@pytest.mark.parametrize("kw, modes", _grid(CONV1D, 2))
def test_conv1d_matches_torch(kw, modes):
    g = kw.get("groups", 1)
    arrays = [_arr(2, 4, 9), _arr(4, 4 // g, 4), _arr(4)]
    check(lambda *a: KF.conv1d(*a, **kw), lambda *a: TF.conv1d(*a, **kw), arrays, modes)


CONV3D = [dict(stride=2, padding=1), dict(padding="same"), dict(groups=2, dilation=(2, 1, 1))]


@pytest.mark.parametrize("kw, modes", _grid(CONV3D, 1))
def test_conv3d_matches_torch(kw, modes):
    g = kw.get("groups", 1)
    arrays = [_arr(2, 2, 5, 4, 6), _arr(4, 2 // g, 2, 3, 2), _arr(4)]
    check(lambda *a: KF.conv3d(*a, **kw), lambda *a: TF.conv3d(*a, **kw), arrays, modes)


CONV_T = [
    dict(stride=2, padding=1, output_padding=1),
    dict(),
    dict(stride=2),
    dict(groups=2, dilation=2, padding=1),
    dict(stride=(2, 3), output_padding=(1, 2), padding=(0, 1)),
    dict(dilation=2, output_padding=1),  # output_padding < dilation, >= stride
]


@pytest.mark.parametrize("kw, modes", _grid(CONV_T, 1))
def test_conv_transpose2d_matches_torch(kw, modes):
    g = kw.get("groups", 1)
    arrays = [_arr(2, 4, 5, 6), _arr(4, 6 // g, 3, 2), _arr(6)]
    check(
        lambda *a: KF.conv_transpose2d(*a, **kw),
        lambda *a: TF.conv_transpose2d(*a, **kw),
        arrays,
        modes,
    )


@pytest.mark.parametrize("kw, modes", _grid([_one_d(kw) for kw in CONV_T], 1))
def test_conv_transpose1d_matches_torch(kw, modes):
    g = kw.get("groups", 1)
    arrays = [_arr(2, 4, 7), _arr(4, 6 // g, 3)]
    check(
        lambda *a: KF.conv_transpose1d(*a, **kw),
        lambda *a: TF.conv_transpose1d(*a, **kw),
        arrays,
        modes,
    )


CONV_T3 = [
    dict(groups=2, stride=2, padding=1, output_padding=1),
    dict(),
    dict(stride=(2, 1, 3), output_padding=(1, 0, 2), padding=(1, 0, 1), dilation=(1, 2, 1)),
]


@pytest.mark.parametrize("kw, modes", _grid(CONV_T3, 1))
def test_conv_transpose3d_matches_torch(kw, modes):
    g = kw.get("groups", 1)
    arrays = [_arr(2, 4, 3, 4, 3), _arr(4, 6 // g, 2, 3, 2), _arr(6)]
    check(
        lambda *a: KF.conv_transpose3d(*a, **kw),
        lambda *a: TF.conv_transpose3d(*a, **kw),
        arrays,
        modes,
    )


def test_unbatched_convolutions_match_torch():
    check(KF.conv2d, TF.conv2d, [_arr(4, 5, 5), _arr(3, 4, 2, 2)])
    check(
        lambda x, w: KF.conv1d(x, w, groups=2),
        lambda x, w: TF.conv1d(x, w, groups=2),
        [_arr(4, 6), _arr(4, 2, 2)],
    )
    check(KF.conv_transpose2d, TF.conv_transpose2d, [_arr(4, 3, 3), _arr(4, 2, 2, 2)])


def test_conv_argument_errors_follow_torch():
    # torch 2.13's functional convolutions raise RuntimeError for these (its kernels check them)
    x, w = kn.ones(1, 2, 5, 5), kn.ones(4, 2, 3, 3)
    with pytest.raises(RuntimeError, match="strided"):
        KF.conv2d(x, w, stride=2, padding="same")
    with pytest.raises(RuntimeError, match="same' or 'valid"):
        KF.conv2d(x, w, padding="full")
    with pytest.raises(kn.ShapeError, match="to have 4 channels"):
        KF.conv2d(x, kn.ones(4, 2, 3, 3), groups=2)
    with pytest.raises(RuntimeError, match="output padding must be smaller"):
        KF.conv_transpose2d(x, kn.ones(2, 1, 3, 3), output_padding=1)


# -- pools ---------------------------------------------------------------------------------------

MAX_POOL = [
    dict(kernel_size=3, padding=1, dilation=(2, 1), return_indices=True),
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=3, stride=2, ceil_mode=True),
    dict(kernel_size=(3, 2), stride=(2, 3), padding=(1, 1), ceil_mode=True),
    dict(kernel_size=2, dilation=2),
    dict(kernel_size=2, ceil_mode=True, return_indices=True),
]


@pytest.mark.parametrize("kw, modes", _grid(MAX_POOL, 2))
def test_max_pools_match_torch(kw, modes):
    check(
        lambda x: KF.max_pool2d(x, **kw),
        lambda x: TF.max_pool2d(x, **kw),
        [_arr(2, 3, 7, 8)],
        modes,
    )
    k1 = _one_d(kw)
    check(
        lambda x: KF.max_pool1d(x, **k1), lambda x: TF.max_pool1d(x, **k1), [_arr(2, 3, 9)], modes
    )


AVG_POOL = [
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=3, stride=2, ceil_mode=True),
    dict(kernel_size=3, stride=2, padding=1, count_include_pad=False),
    dict(kernel_size=(3, 2), stride=(2, 3), padding=(1, 1), ceil_mode=True),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
]


@pytest.mark.parametrize("kw, modes", _grid(AVG_POOL, 2))
def test_avg_pools_match_torch(kw, modes):
    check(
        lambda x: KF.avg_pool2d(x, **kw),
        lambda x: TF.avg_pool2d(x, **kw),
        [_arr(2, 3, 7, 8)],
        modes,
    )
    k1 = _one_d(kw)
    check(
        lambda x: KF.avg_pool1d(x, **k1), lambda x: TF.avg_pool1d(x, **k1), [_arr(2, 3, 9)], modes
    )


def test_avg_pool2d_divisor_override_and_unbatched_match_torch():
    kw = dict(kernel_size=3, padding=1, divisor_override=5)
    check(lambda x: KF.avg_pool2d(x, **kw), lambda x: TF.avg_pool2d(x, **kw), [_arr(2, 3, 5, 6)])
    check(
        lambda x: KF.max_pool2d(x, 2, return_indices=True),
        lambda x: TF.max_pool2d(x, 2, return_indices=True),
        [_arr(3, 4, 6)],
    )


@pytest.mark.parametrize("size, modes", _grid([(2, 5), 1, 3, (None, 3), (7, 8), (4, 6)], 1))
def test_adaptive_pools_2d_match_torch(size, modes):
    x = [_arr(2, 3, 7, 8)]
    check(
        lambda x: KF.adaptive_avg_pool2d(x, size),
        lambda x: TF.adaptive_avg_pool2d(x, size),
        x,
        modes,
    )
    check(
        lambda x: KF.adaptive_max_pool2d(x, size, return_indices=True),
        lambda x: TF.adaptive_max_pool2d(x, size, return_indices=True),
        x,
        modes,
    )


@pytest.mark.parametrize("size", [1, 4, 5, 9])
def test_adaptive_pools_1d_3d_match_torch(size):
    x = [_arr(2, 3, 9)]
    check(lambda x: KF.adaptive_avg_pool1d(x, size), lambda x: TF.adaptive_avg_pool1d(x, size), x)
    check(
        lambda x: KF.adaptive_max_pool1d(x, size, return_indices=True),
        lambda x: TF.adaptive_max_pool1d(x, size, return_indices=True),
        x,
    )
    out = (min(size, 4), None, 2)
    check(
        lambda x: KF.adaptive_avg_pool3d(x, out),
        lambda x: TF.adaptive_avg_pool3d(x, out),
        [_arr(1, 2, 5, 4, 3)],
    )


# -- interpolate ---------------------------------------------------------------------------------

RESIZE = [
    dict(size=(8, 9)),
    dict(size=(3, 4)),
    dict(scale_factor=2),
    dict(scale_factor=(1.7, 0.6)),
    dict(scale_factor=1.3, recompute_scale_factor=True),
    dict(size=(1, 1)),
]


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "nearest-exact", "bicubic", "area"])
@pytest.mark.parametrize("kw, modes", _grid(RESIZE, 1))
def test_interpolate_4d_matches_torch(mode, kw, modes):
    corners = (False, True) if mode in ("bilinear", "bicubic") else (None,)
    for ac in corners:
        check(
            lambda x: KF.interpolate(x, mode=mode, align_corners=ac, **kw),
            lambda x: TF.interpolate(x, mode=mode, align_corners=ac, **kw),
            [_arr(2, 3, 5, 7)],
            modes,
        )


@pytest.mark.parametrize("mode", ["linear", "nearest", "area"])
@pytest.mark.parametrize("kw", [dict(size=11), dict(size=4), dict(scale_factor=2.5)])
def test_interpolate_3d_and_5d_match_torch(mode, kw):
    check(
        lambda x: KF.interpolate(x, mode=mode, **kw),
        lambda x: TF.interpolate(x, mode=mode, **kw),
        [_arr(2, 3, 6)],
    )
    check(
        lambda x: KF.interpolate(x, size=(5, 3, 7), mode="trilinear", align_corners=True),
        lambda x: TF.interpolate(x, size=(5, 3, 7), mode="trilinear", align_corners=True),
        [_arr(1, 2, 3, 4, 5)],
    )


def test_interpolate_argument_errors_follow_torch():
    x = kn.ones(1, 1, 4)
    with pytest.raises(NotImplementedError, match="bilinear mode needs 4D"):
        KF.interpolate(x, size=3, mode="bilinear")
    with pytest.raises(ValueError, match="align_corners"):
        KF.interpolate(x, size=3, align_corners=True)
    with pytest.raises(ValueError, match="exactly one"):
        KF.interpolate(x)


# -- activations ---------------------------------------------------------------------------------

# Random values plus every kink of the piecewise activations (their gradients there too).
EDGES = np.array([-6.0, -3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 3.0, 6.0, 7.0, -30.0, 25.0], np.float32)
ACT_X = np.concatenate([EDGES, _arr(12) * 3]).reshape(4, 6)

ACTIVATIONS = [
    ("selu", {}),
    ("celu", {}),
    ("celu", {"alpha": 0.5}),
    ("hardtanh", {}),
    ("hardtanh", {"min_val": -0.5, "max_val": 3.0}),
    ("relu6", {}),
    ("hardswish", {}),
    ("hardsigmoid", {}),
    ("mish", {}),
    ("softsign", {}),
    ("elu", {"alpha": 0.7}),
    ("silu", {}),
    ("relu", {}),
    ("leaky_relu", {"negative_slope": 0.2}),
    ("softmin", {"dim": 1}),
    ("softmin", {"dim": 0}),
    ("glu", {}),
    ("glu", {"dim": 0}),
]


@pytest.mark.parametrize(
    "name, kw", ACTIVATIONS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(ACTIVATIONS)]
)
def test_activations_match_torch(name, kw):
    modes = tuple(MODES) if name in ("hardswish", "glu", "selu") else ("eager",)
    check(
        lambda x: getattr(KF, name)(x, **kw),
        lambda x: getattr(TF, name)(x, **kw),
        [ACT_X],
        modes,
        rtol=1e-5,
        atol=1e-6,
    )


@pytest.mark.parametrize(
    "name",
    [
        "selu",
        "celu",
        "hardtanh",
        "relu6",
        "hardswish",
        "hardsigmoid",
        "mish",
        "elu",
        "silu",
        "relu",
    ],
)
def test_activation_modules_match_torch(name):
    classes = {
        "selu": "SELU",
        "celu": "CELU",
        "hardtanh": "Hardtanh",
        "relu6": "ReLU6",
        "hardswish": "Hardswish",
        "hardsigmoid": "Hardsigmoid",
        "mish": "Mish",
        "elu": "ELU",
        "silu": "SiLU",
        "relu": "ReLU",
    }
    cls = classes[name]
    check(getattr(kn.nn, cls)(), getattr(torch.nn, cls)(), [ACT_X], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "name",
    [
        "selu",
        "celu",
        "hardtanh",
        "relu6",
        "hardswish",
        "hardsigmoid",
        "mish",
        "elu",
        "silu",
        "relu",
        "leaky_relu",
    ],
)
def test_inplace_activations_overwrite_and_keep_the_gradient(name):
    # as torch: the input of an in-place activation is the result, and backward goes through it
    def run(lib, fn):
        leaf = lib.tensor(ACT_X, requires_grad=True)
        x = leaf * 1
        y = fn(x, inplace=True)
        (y * lib.tensor(ACT_X)).sum().backward()
        return x.detach().numpy(), y is x, leaf.grad.numpy()

    got = run(kn, getattr(KF, name))
    want = run(torch, getattr(TF, name))
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-6)
    assert got[1] == want[1]
    np.testing.assert_allclose(got[2], want[2], rtol=1e-5, atol=1e-6)


# -- normalize, attention, group_norm ------------------------------------------------------------


@pytest.mark.parametrize(
    "kw", [{}, {"p": 1.0}, {"p": 3.0, "dim": 0}, {"p": float("inf")}, {"dim": -1, "eps": 0.5}]
)
def test_normalize_matches_torch_also_at_zero_rows(kw):
    x = _arr(4, 5)
    x[1] = 0.0  # PyTorch: the zero row stays 0, with the gradient 1 / eps
    check(
        lambda x: KF.normalize(x, **kw),
        lambda x: TF.normalize(x, **kw),
        [x],
        tuple(MODES) if not kw else ("eager",),
    )


BOOL_MASK = RNG.random((3, 5)) > 0.4
BOOL_MASK[1] = False  # a row that sees no key: PyTorch gives zeros
FLOAT_MASK = np.where(RNG.random((2, 1, 3, 5)) > 0.3, _arr(2, 1, 3, 5), -np.inf).astype(np.float32)

SDPA = [
    dict(attn_mask=BOOL_MASK),
    dict(),
    dict(is_causal=True),
    dict(scale=0.3),
    dict(attn_mask=FLOAT_MASK),
]


@pytest.mark.parametrize("kw, modes", _grid(SDPA, 2))
def test_scaled_dot_product_attention_matches_torch(kw, modes):
    kw = dict(kw)
    mask = kw.pop("attn_mask", None)

    def make(lib, f):
        m = None if mask is None else lib.tensor(mask)
        return lambda q, k, v: f.scaled_dot_product_attention(q, k, v, attn_mask=m, **kw)

    arrays = [_arr(2, 2, 3, 4), _arr(2, 2, 5, 4), _arr(2, 2, 5, 6)]
    if kw.get("is_causal"):
        arrays[1], arrays[2] = _arr(2, 2, 3, 4), _arr(2, 2, 3, 6)
    check(make(kn, KF), make(torch, TF), arrays, modes)


def test_scaled_dot_product_attention_gqa_matches_torch():
    arrays = [_arr(1, 4, 3, 4), _arr(1, 2, 5, 4), _arr(1, 2, 5, 4)]
    check(
        lambda q, k, v: KF.scaled_dot_product_attention(q, k, v, enable_gqa=True),
        lambda q, k, v: TF.scaled_dot_product_attention(q, k, v, enable_gqa=True),
        arrays,
    )


def test_scaled_dot_product_attention_dropout_keeps_or_drops_whole_weights():
    q = kn.ones(1, 8, 4)
    v = kn.tensor(np.eye(8, dtype=np.float32)[None])
    kn.manual_seed(0)
    out = KF.scaled_dot_product_attention(q, q, v, dropout_p=0.5).numpy()
    # uniform weights 1/8, kept ones scaled by 2: every entry is 0 or 1/4
    assert set(np.round(out.ravel(), 6)) <= {0.0, 0.25} and 0 < (out > 0).mean() < 1


@pytest.mark.parametrize("groups", [1, 2, 6])
def test_group_norm_matches_torch(groups):
    arrays = [_arr(2, 6, 3, 4), _arr(6), _arr(6)]
    check(
        lambda x, w, b: KF.group_norm(x, groups, w, b),
        lambda x, w, b: TF.group_norm(x, groups, w, b),
        arrays,
        ("eager", "graph") if groups == 2 else ("eager",),
    )


def test_linear_and_one_hot_match_torch():
    check(KF.linear, TF.linear, [_arr(3, 4), _arr(5, 4), _arr(5)], tuple(MODES))
    ids = np.array([[0, 3], [2, 1]])
    got = KF.one_hot(kn.tensor(ids))
    want = TF.one_hot(torch.tensor(ids))
    assert got.dtype == kn.int64 and np.array_equal(got.numpy(), want.numpy())
    assert np.array_equal(KF.one_hot(kn.tensor(ids), 6).numpy(), TF.one_hot(torch.tensor(ids), 6))


# -- modules: PyTorch's state_dicts load and give PyTorch's outputs and gradients ----------------


def _same_module(make_kn, make_torch, arrays, call=None, modes=("eager",), train=False):
    torch.manual_seed(0)
    tm = make_torch()
    km = make_kn()
    kstate, tstate = km.state_dict(), tm.state_dict()
    assert list(kstate) == list(tstate)
    assert all(kstate[k].shape == tuple(tstate[k].shape) for k in tstate)
    km.load_state_dict({k: v.detach().numpy() for k, v in tstate.items()})
    km.train(train)
    tm.train(train)
    call = call or (lambda m, *a: m(*a))
    check(lambda *a: call(km, *a), lambda *a: call(tm, *a), arrays, modes)


def _n(name):
    return lambda *a, **k: getattr(kn.nn, name)(*a, **k), lambda *a, **k: getattr(torch.nn, name)(
        *a, **k
    )


MODULES = [
    ("Conv1d", (4, 6, 3), dict(stride=2, padding=1, groups=2), (2, 4, 9)),
    ("Conv1d", (4, 6, 3), dict(padding="same", padding_mode="reflect"), (2, 4, 9)),
    ("Conv2d", (4, 6, (3, 2)), dict(groups=2, dilation=2, bias=False), (2, 4, 7, 6)),
    ("Conv2d", (4, 6, 3), dict(padding=1, padding_mode="circular"), (2, 4, 5, 6)),
    ("Conv3d", (2, 4, 2), dict(padding=(1, 0, 1)), (1, 2, 3, 4, 3)),
    ("ConvTranspose1d", (4, 6, 3), dict(stride=2, padding=1, output_padding=1), (2, 4, 5)),
    ("ConvTranspose2d", (4, 6, 3), dict(stride=2, groups=2, dilation=(1, 2)), (2, 4, 3, 4)),
    ("ConvTranspose3d", (4, 2, 2), dict(stride=2, padding=1), (1, 4, 2, 3, 2)),
    ("BatchNorm2d", (4,), {}, (3, 4, 2, 5)),
    ("GroupNorm", (2, 4), {}, (3, 4, 2, 5)),
    ("GroupNorm", (4, 4), dict(affine=False), (3, 4, 5)),
    ("AvgPool2d", (3,), dict(stride=2, padding=1, ceil_mode=True), (2, 3, 7, 6)),
    ("MaxPool1d", (3,), dict(dilation=2, return_indices=True), (2, 3, 9)),
    ("AdaptiveAvgPool2d", ((2, 3),), {}, (2, 3, 7, 6)),
    ("AdaptiveMaxPool2d", (3,), dict(return_indices=True), (2, 3, 7, 6)),
    ("Upsample", (), dict(scale_factor=2, mode="bilinear"), (2, 3, 3, 4)),
    ("Softmin", (1,), {}, (3, 4)),
    ("GLU", (0,), {}, (4, 3)),
    ("PReLU", (3,), dict(init=0.1), (2, 3, 4)),
    ("RReLU", (0.1, 0.3), {}, (3, 4)),
    ("Threshold", (0.1, -3.0), {}, (3, 4)),
    ("Softshrink", (0.3,), {}, (3, 4)),
    ("InstanceNorm1d", (3,), dict(affine=True), (2, 3, 5)),
    ("InstanceNorm2d", (3,), {}, (3, 4, 5)),
    ("RMSNorm", ((3, 4),), dict(eps=1e-3), (2, 3, 4)),
    ("PixelShuffle", (2,), {}, (1, 8, 2, 3)),
    ("MaxPool3d", (2,), dict(stride=1, return_indices=True), (1, 2, 3, 3, 4)),
    ("AvgPool3d", (2,), dict(padding=1, count_include_pad=False), (1, 2, 3, 3, 4)),
    ("Dropout2d", (), {}, (2, 3, 4, 4)),
]


@pytest.mark.parametrize(
    "name, args, kw, shape", MODULES, ids=[f"{m[0]}-{i}" for i, m in enumerate(MODULES)]
)
def test_modules_load_torch_state_and_match(name, args, kw, shape):
    make_kn, make_torch = _n(name)
    modes = ("eager", "compiled") if name in ("Conv2d", "GroupNorm", "PReLU") else ("eager",)
    _same_module(
        lambda: make_kn(*args, **kw), lambda: make_torch(*args, **kw), [_arr(*shape)], modes=modes
    )


def test_batchnorm2d_training_updates_running_stats_as_torch():
    torch.manual_seed(0)
    km, tm = kn.nn.BatchNorm2d(3, momentum=0.2), torch.nn.BatchNorm2d(3, momentum=0.2)
    x = _arr(4, 3, 2, 5) * 2 + 1
    check(km, tm, [x])
    for k, v in tm.state_dict().items():
        np.testing.assert_allclose(km.state_dict()[k], v.numpy(), rtol=1e-5, err_msg=k)
    km.eval()
    tm.eval()
    check(km, tm, [x])


def test_conv_init_follows_torch_fans():
    # kaiming-uniform(a=sqrt(5)) on PyTorch's fan_in: weight.size(1) * kernel elements
    for conv, fan_in in [
        (kn.nn.Conv2d(8, 16, 3, groups=4), 2 * 9),
        (kn.nn.ConvTranspose2d(8, 16, 3, groups=2), 8 * 9),
        (kn.nn.Conv1d(6, 4, 5), 30),
    ]:
        bound = 1 / np.sqrt(fan_in)
        w, b = conv.weight.numpy(), conv.bias.numpy()
        assert np.abs(w).max() <= bound and np.abs(w).max() > 0.8 * bound
        assert np.abs(b).max() <= bound


MHA = [
    dict(batch_first=True),
    dict(),
    dict(batch_first=True, kdim=5, vdim=3),
    dict(batch_first=True, bias=False),
    dict(batch_first=True, add_bias_kv=True, add_zero_attn=True),
]
MHA_CALLS = [
    dict(),
    dict(need_weights=False),
    dict(average_attn_weights=False),
    dict(attn_mask=np.triu(np.ones((3, 4), bool), 1)),
    dict(key_padding_mask=np.array([[False, False, True, False], [False, True, True, False]])),
    dict(
        attn_mask=np.where(np.triu(np.ones((3, 4)), 1) > 0, -np.inf, 0.0).astype(np.float32),
        key_padding_mask=np.array([[False] * 3 + [True], [False] * 4]),
    ),
]


@pytest.mark.parametrize("call_kw", MHA_CALLS, ids=[str(i) for i in range(len(MHA_CALLS))])
@pytest.mark.parametrize("kw", MHA, ids=[str(i) for i in range(len(MHA))])
def test_multihead_attention_matches_torch(kw, call_kw):
    e, kdim, vdim = 8, kw.get("kdim", 8), kw.get("vdim", 8)
    q, k, v = _arr(2, 3, e), _arr(2, 4, kdim), _arr(2, 4, vdim)
    if not kw.get("batch_first"):
        q, k, v = (a.transpose(1, 0, 2).copy() for a in (q, k, v))

    def call(m, q, k, v):
        lib = kn if isinstance(m, kn.nn.Module) else torch
        masks = {n: lib.tensor(a) for n, a in call_kw.items() if isinstance(a, np.ndarray)}
        out = m(q, k, v, **{**call_kw, **masks})
        return out if out[1] is not None else out[0]

    modes = ("eager", "compiled", "graph") if not kw and not call_kw else ("eager",)
    _same_module(
        lambda: kn.nn.MultiheadAttention(e, 2, **kw),
        lambda: torch.nn.MultiheadAttention(e, 2, **kw),
        [q, k, v],
        call,
        modes,
        train=True,  # dropout 0: the same values; torch's slow path, as kiln computes them
    )


def test_multihead_attention_unbatched_matches_torch():
    q = _arr(3, 8)
    _same_module(
        lambda: kn.nn.MultiheadAttention(8, 4),
        lambda: torch.nn.MultiheadAttention(8, 4),
        [q, q, q],
        lambda m, *a: m(*a),
    )


# -- layer_norm and batch_norm take PyTorch's arguments ------------------------------------------


def test_layer_norm_matches_torch():
    check(
        lambda x, w, b: KF.layer_norm(x, (3, 4), w, b, 1e-3),
        lambda x, w, b: TF.layer_norm(x, (3, 4), w, b, 1e-3),
        [_arr(2, 3, 4), _arr(3, 4), _arr(3, 4)],
        tuple(MODES),
    )
    with pytest.raises(kn.ShapeError, match="normalized_shape"):
        KF.layer_norm(kn.ones(2, 3), (4,))


@pytest.mark.parametrize("training", [False, True])
def test_batch_norm_matches_torch_and_updates_running_stats(training):
    x, w, b = _arr(4, 3, 5) * 2 + 1, _arr(3), _arr(3)
    stats = {
        lib: (lib.tensor(np.zeros(3, np.float32)), lib.tensor(np.ones(3, np.float32)))
        for lib in (kn, torch)
    }

    def run(lib, f):
        return lambda x, w, b: f.batch_norm(x, *stats[lib], w, b, training, 0.3, 1e-4)

    check(run(kn, KF), run(torch, TF), [x, w, b])
    for got, want in zip(stats[kn], stats[torch]):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)


# -- the rest of the functional API --------------------------------------------------------------

MORE = [
    ("threshold", lambda f: lambda x: f.threshold(x, 0.5, -2.0), [ACT_X]),
    ("hardshrink", lambda f: lambda x: f.hardshrink(x, 0.7), [ACT_X]),
    ("softshrink", lambda f: lambda x: f.softshrink(x, 0.7), [ACT_X]),
    ("tanhshrink", lambda f: f.tanhshrink, [ACT_X]),
    ("prelu", lambda f: f.prelu, [_arr(2, 3, 4), np.array([0.1, -0.2, 0.3], np.float32)]),
    ("prelu_one", lambda f: f.prelu, [_arr(2, 3), np.array([0.25], np.float32)]),
    ("rrelu_eval", lambda f: lambda x: f.rrelu(x, 0.1, 0.4), [ACT_X]),
    ("softplus", lambda f: lambda x: f.softplus(x, beta=2.0, threshold=5.0), [ACT_X]),
    (
        "softmax_dtype",
        lambda f: lambda x: f.softmax(x, 0, dtype=torch.float64 if f is TF else kn.float64),
        [_arr(3, 4)],
    ),
    ("log_softmax", lambda f: lambda x: f.log_softmax(x, dim=-1), [_arr(3, 4)]),
    (  # the target is a constant: torch's gradient for it is NaN where it is 0
        "kl_div_batchmean",
        lambda f: (
            lambda x: f.kl_div(
                x,
                (kn if f is KF else torch).tensor(np.array([[0.0, 0.5, 0.5, 0.0]] * 3, np.float32)),
                reduction="batchmean",
            )
        ),
        [np.log(RNG.dirichlet(np.ones(4), 3)).astype(np.float32)],
    ),
    (
        "kl_div_log_target",
        lambda f: lambda x, t: f.kl_div(x, t, reduction="sum", log_target=True),
        [_arr(3, 4), _arr(3, 4)],
    ),
    (
        "kl_div_none",
        lambda f: lambda x, t: f.kl_div(x, t, reduction="none"),
        [_arr(3, 4), np.abs(_arr(3, 4))],
    ),
    (
        "cosine_similarity",
        lambda f: lambda a, b: f.cosine_similarity(a, b, dim=-1),
        [np.concatenate([_arr(3, 4), np.full((1, 4), 1e-10, np.float32)]), _arr(1, 4)],
    ),
    (
        "pairwise_distance",
        lambda f: lambda a, b: f.pairwise_distance(a, b, p=3.0, keepdim=True),
        [_arr(3, 4), _arr(3, 4)],
    ),
    (
        "instance_norm",
        lambda f: lambda x, w, b: f.instance_norm(x, weight=w, bias=b),
        [_arr(2, 3, 5, 4), _arr(3), _arr(3)],
    ),
    ("rms_norm", lambda f: lambda x, w: f.rms_norm(x, (4,), w), [_arr(3, 4), _arr(4)]),
    (
        "local_response_norm",
        lambda f: lambda x: f.local_response_norm(x, 3, 0.5, 0.7, 2.0),
        [_arr(2, 5, 3, 2)],
    ),
    ("pixel_shuffle", lambda f: lambda x: f.pixel_shuffle(x, 2), [_arr(2, 8, 3, 2)]),
    ("pixel_unshuffle", lambda f: lambda x: f.pixel_unshuffle(x, 2), [_arr(2, 2, 4, 6)]),
    ("channel_shuffle", lambda f: lambda x: f.channel_shuffle(x, 3), [_arr(2, 6, 2)]),
    (
        "unfold",
        lambda f: lambda x: f.unfold(x, (2, 3), dilation=(2, 1), padding=1, stride=(1, 2)),
        [_arr(2, 3, 5, 6)],
    ),
    (
        "fold",
        lambda f: lambda x: f.fold(x, (5, 6), (2, 3), dilation=(2, 1), padding=1, stride=(1, 2)),
        [_arr(2, 18, 15)],
    ),
    (
        "max_pool3d",
        lambda f: lambda x: f.max_pool3d(x, 2, padding=1, ceil_mode=True, return_indices=True),
        [_arr(1, 2, 3, 4, 5)],
    ),
    (
        "avg_pool3d",
        lambda f: (
            lambda x: f.avg_pool3d(x, (2, 3, 2), stride=2, padding=1, count_include_pad=False)
        ),
        [_arr(1, 2, 3, 4, 5)],
    ),
    (
        "adaptive_max_pool3d",
        lambda f: lambda x: f.adaptive_max_pool3d(x, (2, 3, 2), True),
        [_arr(1, 2, 3, 4, 5)],
    ),
    (
        "embedding_padding_idx",
        lambda f: (
            lambda w: f.embedding(
                (kn if f is KF else torch).tensor([[0, 2], [2, 1]]), w, padding_idx=2
            )
        ),
        [_arr(4, 3)],
    ),
    (
        "upsample_bilinear",
        lambda f: lambda x: f.upsample_bilinear(x, scale_factor=2),
        [_arr(1, 2, 3, 3)],
    ),
]


@pytest.mark.parametrize("make, arrays", [m[1:] for m in MORE], ids=[m[0] for m in MORE])
def test_more_functions_match_torch(make, arrays):
    name = [m[0] for m in MORE if m[1] is make][0]
    modes = (
        tuple(MODES)
        if name in ("fold", "unfold", "kl_div_none", "embedding_padding_idx")
        else ("eager",)
    )
    check(make(KF), make(TF), arrays, modes)


@pytest.mark.parametrize("name", ["dropout1d", "dropout2d", "dropout3d"])
def test_channel_dropout_drops_whole_channels(name):
    spatial = int(name[-2])
    x = kn.ones(4, 16, *([3] * spatial))
    y = getattr(KF, name)(x, p=0.5).numpy().reshape(64, -1)
    assert set(np.unique(y)) <= {0.0, 2.0} and (y.min(1) == y.max(1)).all()
    assert 0 < (y[:, 0] == 0).mean() < 1


def test_kl_div_loss_module_matches_torch():
    logp = np.log(RNG.dirichlet(np.ones(4), 3)).astype(np.float32)
    t = RNG.dirichlet(np.ones(4), 3).astype(np.float32)
    for kw in (dict(reduction="batchmean"), dict(reduction="sum", log_target=True)):
        got = kn.nn.KLDivLoss(**kw)(kn.tensor(logp), kn.tensor(t))
        want = torch.nn.KLDivLoss(**kw)(torch.tensor(logp), torch.tensor(t))
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5)


def test_embedding_padding_idx_module_matches_torch():
    torch.manual_seed(0)
    tm, km = torch.nn.Embedding(5, 3, padding_idx=-3), kn.nn.Embedding(5, 3, padding_idx=-3)
    assert np.all(km.weight.numpy()[2] == 0)  # the padding row starts at zeros, as torch's
    km.load_state_dict({n: v.detach().numpy() for n, v in tm.state_dict().items()})
    ids = [[0, 2], [2, 4]]
    yt, yk = tm(torch.tensor(ids)), km(kn.tensor(ids))
    (yt * torch.tensor(ACT_X[:2, :6].reshape(2, 2, 3))).sum().backward()
    (yk * kn.tensor(ACT_X[:2, :6].reshape(2, 2, 3))).sum().backward()
    np.testing.assert_allclose(yk.detach().numpy(), yt.detach().numpy())
    np.testing.assert_allclose(km.weight.grad.numpy(), tm.weight.grad.numpy())
