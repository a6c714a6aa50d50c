"""Memory layouts of kiln's convolutions, pools, interpolations and normalizations against
PyTorch 2.13 itself (skipped without torch): of a channels-last input (4-D `channels_last`,
5-D `channels_last_3d`, made by a permute of (N, H, W, C) memory), of a C-ordered one and of
one whose spatial dims are transposed, eager kiln's and kn.compile's `stride()` and values
are torch's; for the convolutions also with a channels-last weight, which makes torch's
result channels-last too. Every expected value is torch's, computed in the test.
"""

# ruff: noqa: E731

import numpy as np
import pytest

import kiln as kn

torch = pytest.importorskip("torch")
from torch_threads import two_torch_threads  # noqa: E402, F401 (autouse)

F = lambda L: L.nn.functional


def _memory(shape, start=0.0):
    n = int(np.prod(shape))
    return (start + np.random.default_rng(n).standard_normal(n)).reshape(shape).astype(np.float32)


def _laid_out(L, shape, layout):
    """An (N, C, ...) tensor of `shape` laid out as `layout`: "c", "channels_last" (C fastest,
    then the spatial dims from the last) or "spatial_t" (the last two dims transposed)."""
    nd = len(shape)
    if layout == "c":
        return L.tensor(_memory(shape))
    if layout == "spatial_t":
        swapped = (*shape[:-2], shape[-1], shape[-2])
        return L.tensor(_memory(swapped)).transpose(-1, -2)
    order = (0, *range(2, nd), 1)  # the memory's dims: N, spatial..., C
    inverse = (0, nd - 1, *range(1, nd - 1))
    return L.tensor(_memory([shape[d] for d in order])).permute(*inverse)


def _ops(nd):
    """op -> fn(L, x, w): the op of an (N, 3, 6...) input x and a (4, 3, 3...) weight w."""
    mode = {1: "linear", 2: "bilinear", 3: "trilinear"}[nd]
    ops = {
        "conv": lambda L, x, w: getattr(F(L), f"conv{nd}d")(x, w, padding=1),
        "conv_bias_stride": lambda L, x, w: getattr(F(L), f"conv{nd}d")(x, w, L.ones(4), stride=2),
        "conv_groups": lambda L, x, w: getattr(F(L), f"conv{nd}d")(x, w[:3, :1], groups=3),
        "conv_transpose": lambda L, x, w: getattr(F(L), f"conv_transpose{nd}d")(
            x, w.transpose(0, 1), stride=2, padding=1
        ),
        "max_pool": lambda L, x, w: getattr(F(L), f"max_pool{nd}d")(x, 2),
        "max_pool_indices": lambda L, x, w: getattr(F(L), f"max_pool{nd}d")(
            x, 3, 2, 1, return_indices=True
        )[1],
        "max_pool_values": lambda L, x, w: getattr(F(L), f"max_pool{nd}d")(
            x, 3, 2, 1, return_indices=True
        )[0],
        "avg_pool": lambda L, x, w: getattr(F(L), f"avg_pool{nd}d")(x, 2),
        "avg_pool_pad": lambda L, x, w: getattr(F(L), f"avg_pool{nd}d")(x, 3, 2, 1),
        "adaptive_avg": lambda L, x, w: getattr(F(L), f"adaptive_avg_pool{nd}d")(x, 4),
        "adaptive_avg_1": lambda L, x, w: getattr(F(L), f"adaptive_avg_pool{nd}d")(x, 1),
        "adaptive_max": lambda L, x, w: getattr(F(L), f"adaptive_max_pool{nd}d")(x, 4),
        "adaptive_max_indices": lambda L, x, w: getattr(F(L), f"adaptive_max_pool{nd}d")(
            x, 4, return_indices=True
        )[1],
        "nearest": lambda L, x, w: F(L).interpolate(x, scale_factor=2),
        "nearest_exact": lambda L, x, w: F(L).interpolate(x, size=5, mode="nearest-exact"),
        "linear": lambda L, x, w: F(L).interpolate(x, scale_factor=1.5, mode=mode),
        "linear_corners": lambda L, x, w: F(L).interpolate(
            x, size=4, mode=mode, align_corners=True
        ),
        "area": lambda L, x, w: F(L).interpolate(x, size=4, mode="area"),
        "area_1": lambda L, x, w: F(L).interpolate(x, size=1, mode="area"),
        "batch_norm": lambda L, x, w: F(L).batch_norm(x, None, None, training=True),
        "batch_norm_eval": lambda L, x, w: F(L).batch_norm(
            x, L.zeros(3), L.ones(3), L.ones(3), L.zeros(3)
        ),
        "group_norm": lambda L, x, w: F(L).group_norm(x, 3),
        "instance_norm": lambda L, x, w: F(L).instance_norm(x),
        "pad": lambda L, x, w: F(L).pad(x, (1, 2)),
        "pad_reflect": lambda L, x, w: F(L).pad(x, (1, 1) * nd, mode="reflect"),
        "pad_replicate": lambda L, x, w: F(L).pad(x, (2, 1) * nd, mode="replicate"),
        "pad_circular": lambda L, x, w: F(L).pad(x, (1, 1) * nd, mode="circular"),
        "local_response_norm": lambda L, x, w: F(L).local_response_norm(x, 2),
        "lp_pool": lambda L, x, w: getattr(F(L), f"lp_pool{nd}d")(x, 2, 2),
        "max_unpool": lambda L, x, w: getattr(F(L), f"max_unpool{nd}d")(
            *getattr(F(L), f"max_pool{nd}d")(x, 2, return_indices=True), 2
        ),
        "channel_shuffle": lambda L, x, w: F(L).channel_shuffle(x[:, :2], 2),
        "cat_channels": lambda L, x, w: L.cat([x, x * 2], 1),
        "cat_batch": lambda L, x, w: L.cat([x, x], 0),
    }
    if nd == 2:
        ops["bicubic"] = lambda L, x, w: F(L).interpolate(x, scale_factor=2, mode="bicubic")
        ops["pixel_shuffle"] = lambda L, x, w: F(L).pixel_shuffle(L.cat([x, x[:, :1]], 1), 2)
        ops["pixel_unshuffle"] = lambda L, x, w: F(L).pixel_unshuffle(x, 2)
    return ops


CONVS = {"conv", "conv_bias_stride", "conv_groups", "conv_transpose"}
LAYOUTS = ("c", "channels_last", "spatial_t")


def _cases():
    cases = []
    for nd in (1, 2, 3):
        for op in _ops(nd):
            for x_layout in LAYOUTS if nd > 1 else ("c", "spatial_t"):
                weights = LAYOUTS[:2] if op in CONVS and nd > 1 else ("c",)
                for w_layout in weights:
                    ident = f"{op}{nd}d-x_{x_layout}-w_{w_layout}"
                    cases.append(pytest.param(nd, op, x_layout, w_layout, id=ident))
    return cases


def _run(L, nd, op, x_layout, w_layout):
    x = _laid_out(L, (2, 3) + (6,) * nd, x_layout)
    w = _laid_out(L, (4, 3) + (3,) * nd, w_layout)
    return _ops(nd)[op](L, x, w)


def _want(nd, op, x_layout, w_layout):
    try:
        return _run(torch, nd, op, x_layout, w_layout)
    except RuntimeError:  # (local_response_norm's view of a 5-D input torch cannot view)
        pytest.skip("torch refuses this case")


@pytest.mark.parametrize(("nd", "op", "x_layout", "w_layout"), _cases())
def test_eager_nn_layout_matches_torch(nd, op, x_layout, w_layout):
    want = _want(nd, op, x_layout, w_layout)
    got = _run(kn, nd, op, x_layout, w_layout)
    assert tuple(got.shape) == tuple(want.shape)
    assert tuple(got.stride()) == tuple(want.stride())
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(("nd", "op", "x_layout", "w_layout"), _cases())
def test_compiled_nn_layout_matches_torch(nd, op, x_layout, w_layout):
    want = _want(nd, op, x_layout, w_layout)
    seen = {}
    x_shape, w_shape = (2, 3) + (6,) * nd, (4, 3) + (3,) * nd

    def memory(shape, layout):
        if layout == "c":
            return shape
        if layout == "spatial_t":
            return (*shape[:-2], shape[-1], shape[-2])
        return (shape[0], *shape[2:], shape[1])

    def program(xm, wm):
        def view(m, shape, layout):
            if layout == "c":
                return m
            if layout == "spatial_t":
                return m.transpose(-1, -2)
            return m.permute(0, len(shape) - 1, *range(1, len(shape) - 1))

        y = _ops(nd)[op](kn, view(xm, x_shape, x_layout), view(wm, w_shape, w_layout))
        seen["stride"] = tuple(y.stride())
        return y

    xm = kn.tensor(_memory(memory(x_shape, x_layout)))
    wm = kn.tensor(_memory(memory(w_shape, w_layout)))
    got = kn.compile(program)(xm, wm)
    assert seen["stride"] == tuple(want.stride())
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=1e-5)


# A leaf's .grad is laid out as the leaf where it is dense (PyTorch's AccumulateGrad copies the
# gradient to the leaf's strides: `clone_obey_contract`; kiln/eager/autograd.py's `_accumulate`
# too), whatever layout the op's gradient has.
_GRAD_OPS = ("conv", "conv_transpose", "max_pool", "avg_pool", "adaptive_avg", "linear",
             "batch_norm", "cat_channels")  # fmt: skip


def _grad_cases():
    cases = []
    for nd in (2, 3):
        for op in _GRAD_OPS:
            for layout in LAYOUTS:
                ident = f"{op}{nd}d-x_{layout}"
                cases.append(pytest.param(nd, op, layout, id=ident))
    return cases


@pytest.mark.parametrize(("nd", "op", "layout"), _grad_cases())
def test_leaf_grad_layout_matches_torch(nd, op, layout):
    grads = {}
    for L in (torch, kn):
        x = _laid_out(L, (2, 3) + (6,) * nd, layout).requires_grad_()
        y = _ops(nd)[op](L, x, _laid_out(L, (4, 3) + (3,) * nd, "c"))
        (y * y).sum().backward()
        grads[L] = x.grad
    assert tuple(grads[kn].stride()) == tuple(grads[torch].stride())
    np.testing.assert_allclose(grads[kn].numpy(), grads[torch].numpy(), rtol=1e-4, atol=1e-4)
