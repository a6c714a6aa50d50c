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
    extra = out[1].numpy() if isinstance(out, tuple) else None
    return y.detach().numpy(), grads, extra, r


def _eager(fn, arrays, r):
    xs = [kn.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
    out = fn(*xs)
    y = _first(out)
    (y * kn.tensor(r)).sum().backward()
    grads = [x.grad.numpy() if x.requires_grad else None for x in xs]
    extra = out[1].numpy() if isinstance(out, tuple) else None
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
        if want_extra is not None:
            np.testing.assert_array_equal(extra, want_extra, err_msg=f"{mode} indices")


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
    check(lambda *a: KF.conv_transpose2d(*a, **kw), lambda *a: TF.conv_transpose2d(*a, **kw),
          arrays, modes)  # fmt: skip


@pytest.mark.parametrize("kw, modes", _grid([_one_d(kw) for kw in CONV_T], 1))
def test_conv_transpose1d_matches_torch(kw, modes):
    g = kw.get("groups", 1)
    arrays = [_arr(2, 4, 7), _arr(4, 6 // g, 3)]
    check(lambda *a: KF.conv_transpose1d(*a, **kw), lambda *a: TF.conv_transpose1d(*a, **kw),
          arrays, modes)  # fmt: skip


def test_unbatched_convolutions_match_torch():
    check(KF.conv2d, TF.conv2d, [_arr(4, 5, 5), _arr(3, 4, 2, 2)])
    check(lambda x, w: KF.conv1d(x, w, groups=2), lambda x, w: TF.conv1d(x, w, groups=2),
          [_arr(4, 6), _arr(4, 2, 2)])  # fmt: skip
    check(KF.conv_transpose2d, TF.conv_transpose2d, [_arr(4, 3, 3), _arr(4, 2, 2, 2)])


def test_conv_argument_errors_follow_torch():
    x, w = kn.ones(1, 2, 5, 5), kn.ones(4, 2, 3, 3)
    with pytest.raises(ValueError, match="strided"):
        KF.conv2d(x, w, stride=2, padding="same")
    with pytest.raises(ValueError, match="same' or 'valid"):
        KF.conv2d(x, w, padding="full")
    with pytest.raises(kn.ShapeError, match="to have 4 channels"):
        KF.conv2d(x, kn.ones(4, 2, 3, 3), groups=2)
    with pytest.raises(ValueError, match="output padding must be smaller"):
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
    check(lambda x: KF.max_pool2d(x, **kw), lambda x: TF.max_pool2d(x, **kw), [_arr(2, 3, 7, 8)],
          modes)  # fmt: skip
    k1 = _one_d(kw)
    check(lambda x: KF.max_pool1d(x, **k1), lambda x: TF.max_pool1d(x, **k1), [_arr(2, 3, 9)],
          modes)  # fmt: skip


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
    check(lambda x: KF.avg_pool2d(x, **kw), lambda x: TF.avg_pool2d(x, **kw), [_arr(2, 3, 7, 8)],
          modes)  # fmt: skip
    k1 = _one_d(kw)
    check(lambda x: KF.avg_pool1d(x, **k1), lambda x: TF.avg_pool1d(x, **k1), [_arr(2, 3, 9)],
          modes)  # fmt: skip


def test_avg_pool2d_divisor_override_and_unbatched_match_torch():
    kw = dict(kernel_size=3, padding=1, divisor_override=5)
    check(lambda x: KF.avg_pool2d(x, **kw), lambda x: TF.avg_pool2d(x, **kw), [_arr(2, 3, 5, 6)])
    check(lambda x: KF.max_pool2d(x, 2, return_indices=True),
          lambda x: TF.max_pool2d(x, 2, return_indices=True), [_arr(3, 4, 6)])  # fmt: skip


@pytest.mark.parametrize("size, modes", _grid([(2, 5), 1, 3, (None, 3), (7, 8), (4, 6)], 1))
def test_adaptive_pools_2d_match_torch(size, modes):
    x = [_arr(2, 3, 7, 8)]
    check(lambda x: KF.adaptive_avg_pool2d(x, size), lambda x: TF.adaptive_avg_pool2d(x, size), x,
          modes)  # fmt: skip
    check(lambda x: KF.adaptive_max_pool2d(x, size, return_indices=True),
          lambda x: TF.adaptive_max_pool2d(x, size, return_indices=True), x, modes)  # fmt: skip


@pytest.mark.parametrize("size", [1, 4, 5, 9])
def test_adaptive_pools_1d_3d_match_torch(size):
    x = [_arr(2, 3, 9)]
    check(lambda x: KF.adaptive_avg_pool1d(x, size), lambda x: TF.adaptive_avg_pool1d(x, size), x)
    check(lambda x: KF.adaptive_max_pool1d(x, size, return_indices=True),
          lambda x: TF.adaptive_max_pool1d(x, size, return_indices=True), x)  # fmt: skip
    out = (min(size, 4), None, 2)
    check(lambda x: KF.adaptive_avg_pool3d(x, out), lambda x: TF.adaptive_avg_pool3d(x, out),
          [_arr(1, 2, 5, 4, 3)])  # fmt: skip


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
        check(lambda x: KF.interpolate(x, mode=mode, align_corners=ac, **kw),
              lambda x: TF.interpolate(x, mode=mode, align_corners=ac, **kw), [_arr(2, 3, 5, 7)],
              modes)  # fmt: skip


@pytest.mark.parametrize("mode", ["linear", "nearest", "area"])
@pytest.mark.parametrize("kw", [dict(size=11), dict(size=4), dict(scale_factor=2.5)])
def test_interpolate_3d_and_5d_match_torch(mode, kw):
    check(lambda x: KF.interpolate(x, mode=mode, **kw),
          lambda x: TF.interpolate(x, mode=mode, **kw), [_arr(2, 3, 6)])  # fmt: skip
    check(lambda x: KF.interpolate(x, size=(5, 3, 7), mode="trilinear", align_corners=True),
          lambda x: TF.interpolate(x, size=(5, 3, 7), mode="trilinear", align_corners=True),
          [_arr(1, 2, 3, 4, 5)])  # fmt: skip


def test_interpolate_argument_errors_follow_torch():
    x = kn.ones(1, 1, 4)
    with pytest.raises(NotImplementedError, match="bilinear mode needs 4D"):
        KF.interpolate(x, size=3, mode="bilinear")
    with pytest.raises(ValueError, match="align_corners"):
        KF.interpolate(x, size=3, align_corners=True)
    with pytest.raises(ValueError, match="exactly one"):
        KF.interpolate(x)
