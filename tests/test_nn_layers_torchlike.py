"""Conv1d/3d, ConvTranspose, pooling modules, BatchNorm2d, GroupNorm and MultiheadAttention
without PyTorch: parameter names and shapes as PyTorch's (its documented layouts), values
computed by hand or with NumPy, graph mode and `kn.compile` against eager.
tests/test_nn_functional_torch.py loads PyTorch's own state_dicts into them."""

import numpy as np
import pytest

import kiln as kn
from kiln.testing import check_eager_vs_compiled

RNG = np.random.default_rng(0)


def _shapes(module):
    return {name: tuple(p.shape) for name, p in module.named_parameters()}


def test_parameter_names_and_shapes_are_pytorchs():
    assert _shapes(kn.nn.Conv1d(4, 6, 3, groups=2)) == {"weight": (6, 2, 3), "bias": (6,)}
    assert _shapes(kn.nn.ConvTranspose2d(4, 6, (3, 2), groups=2, bias=False)) == {
        "weight": (4, 3, 3, 2)
    }
    assert _shapes(kn.nn.GroupNorm(2, 4)) == {"weight": (4,), "bias": (4,)}
    assert _shapes(kn.nn.MultiheadAttention(8, 2, kdim=5, vdim=3, add_bias_kv=True)) == {
        "q_proj_weight": (8, 8),
        "k_proj_weight": (8, 5),
        "v_proj_weight": (8, 3),
        "in_proj_bias": (24,),
        "out_proj.weight": (8, 8),
        "out_proj.bias": (8,),
        "bias_k": (1, 1, 8),
        "bias_v": (1, 1, 8),
    }
    assert list(kn.nn.BatchNorm2d(3).state_dict()) == [
        "weight", "bias", "running_mean", "running_var", "num_batches_tracked",
    ]  # fmt: skip


def test_conv_padding_modes_by_hand():
    conv = kn.nn.Conv1d(1, 1, 3, padding=1, padding_mode="circular", bias=False)
    conv.load_state_dict({"weight": np.array([[[1.0, 0.0, 0.0]]], np.float32)})
    # circular padding: out[i] = x[i - 1] with wrap-around
    assert conv(kn.tensor([[[1.0, 2.0, 3.0]]])).tolist() == [[[3.0, 1.0, 2.0]]]
    conv.padding_mode = "replicate"
    assert conv(kn.tensor([[[1.0, 2.0, 3.0]]])).tolist() == [[[1.0, 1.0, 2.0]]]
    with pytest.raises(ValueError, match="strided"):
        kn.nn.Conv2d(1, 1, 3, stride=2, padding="same")


def test_conv_transpose_output_size_picks_the_output_padding():
    up = kn.nn.ConvTranspose2d(1, 1, 3, stride=2, padding=1)
    x = kn.zeros(1, 1, 4, 4)
    assert list(up(x).shape) == [1, 1, 7, 7]
    assert list(up(x, output_size=(8, 7)).shape) == [1, 1, 8, 7]
    with pytest.raises(ValueError, match="valid sizes range from 7 to 8"):
        up(x, output_size=(9, 9))


def test_batchnorm2d_normalizes_per_channel_and_tracks_stats():
    x = RNG.standard_normal((4, 3, 2, 5)).astype(np.float32) * 3 + 2
    bn = kn.nn.BatchNorm2d(3)
    y = bn(kn.tensor(x)).detach().numpy()
    np.testing.assert_allclose(y.mean(axis=(0, 2, 3)), 0, atol=1e-5)
    np.testing.assert_allclose(y.var(axis=(0, 2, 3)), 1, rtol=1e-3)
    want = 0.9 + 0.1 * x.var(axis=(0, 2, 3), ddof=1)  # the unbiased batch variance, momentum 0.1
    np.testing.assert_allclose(bn.running_var.numpy(), want, rtol=1e-5)
    with pytest.raises(ValueError, match="expected 4D input"):
        bn(kn.zeros(2, 3, 4))


def test_group_norm_matches_numpy():
    x = RNG.standard_normal((2, 6, 5)).astype(np.float32)
    g = x.reshape(2, 3, 10)
    want = (g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + 1e-5)
    got = kn.nn.GroupNorm(3, 6)(kn.tensor(x)).detach().numpy()
    np.testing.assert_allclose(got, want.reshape(x.shape), rtol=1e-5, atol=1e-5)


def _np_mha(q, k, v, w_in, b_in, w_out, b_out, heads, mask=None):
    e = q.shape[-1]
    d = e // heads
    qp, kp, vp = (t @ w.T + b for t, w, b in zip((q, k, v), np.split(w_in, 3), np.split(b_in, 3)))
    split = lambda t: t.reshape(t.shape[0], t.shape[1], heads, d).transpose(0, 2, 1, 3)  # noqa: E731
    s = split(qp) @ split(kp).transpose(0, 1, 3, 2) / np.sqrt(d)
    if mask is not None:
        s = np.where(mask, -np.inf, s)
    w = np.exp(s - s.max(-1, keepdims=True))
    w /= w.sum(-1, keepdims=True)
    out = (w @ split(vp)).transpose(0, 2, 1, 3).reshape(q.shape)
    return out @ w_out.T + b_out, w.mean(1)


def test_multihead_attention_matches_numpy_and_masks_as_pytorch():
    mha = kn.nn.MultiheadAttention(8, 2, batch_first=True)
    state = {k: RNG.standard_normal(v.shape).astype(np.float32) for k, v in
             mha.state_dict().items()}  # fmt: skip
    mha.load_state_dict(state)
    q, k = RNG.standard_normal((2, 3, 8)), RNG.standard_normal((2, 4, 8))
    q, k = q.astype(np.float32), k.astype(np.float32)
    mask = np.triu(np.ones((3, 4), bool), 1)  # True: not allowed (PyTorch's MHA convention)
    out, w = mha(kn.tensor(q), kn.tensor(k), kn.tensor(k), attn_mask=kn.tensor(mask))
    want_out, want_w = _np_mha(
        q,
        k,
        k,
        state["in_proj_weight"],
        state["in_proj_bias"],
        state["out_proj.weight"],
        state["out_proj.bias"],
        2,
        mask,
    )
    np.testing.assert_allclose(out.detach().numpy(), want_out, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(w.detach().numpy(), want_w, rtol=1e-4, atol=1e-5)
    assert mha(kn.tensor(q), kn.tensor(k), kn.tensor(k), need_weights=False)[1] is None


@pytest.mark.parametrize(
    "make, shape",
    [
        (lambda: kn.nn.Conv1d(4, 6, 3, padding="same", groups=2), (2, 4, 7)),
        (lambda: kn.nn.Conv3d(2, 3, 2, stride=(1, 2, 1)), (1, 2, 3, 5, 3)),
        (lambda: kn.nn.ConvTranspose2d(4, 2, 3, stride=2, groups=2), (2, 4, 3, 3)),
        (lambda: kn.nn.GroupNorm(2, 4), (3, 4, 5)),
        (lambda: kn.nn.Sequential(kn.nn.Conv2d(2, 4, 3), kn.nn.BatchNorm2d(4), kn.nn.Hardswish(),
                                  kn.nn.AdaptiveAvgPool2d(1)), (2, 2, 5, 5)),
    ],
)  # fmt: skip
def test_modules_eager_match_compiled(make, shape):
    module = make()
    assert check_eager_vs_compiled(module, RNG.standard_normal(shape).astype(np.float32))


def test_modules_in_graph_mode():
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, ("batch", 5, 8), name="x")
        mha = kn.nn.MultiheadAttention(8, 4, batch_first=True)
        out, w = mha(x, x, x)
        conv = kn.nn.Conv1d(5, 3, 3, padding=1)
        y = kn.nn.MaxPool1d(2)(conv(x))
        f = kn.function([x], [out, w, y])
    out, w, y = f(np.ones((2, 5, 8), np.float32))
    assert out.shape == (2, 5, 8) and w.shape == (2, 5, 5) and y.shape == (2, 3, 4)
    np.testing.assert_allclose(w, 0.2, rtol=1e-6)  # equal keys: uniform weights


def test_composite_layers_export_to_onnx(tmp_path):
    # grouped "same" conv, ceil-mode pooling, bilinear upsampling and adaptive pooling are
    # composites of kiln's primitives; onnxruntime's result is the reference
    ort = pytest.importorskip("onnxruntime")
    net = kn.nn.Sequential(
        kn.nn.Conv2d(4, 8, 3, padding="same", groups=2), kn.nn.Hardswish(),
        kn.nn.MaxPool2d(3, 2, ceil_mode=True), kn.nn.Upsample(scale_factor=2, mode="bilinear"),
        kn.nn.AdaptiveAvgPool2d((2, 3)), kn.nn.Flatten(),
    )  # fmt: skip
    x = RNG.standard_normal((2, 4, 9, 9)).astype(np.float32)
    with kn.Graph().as_default():
        p = kn.placeholder(kn.float32, x.shape, name="x")
        f = kn.function([p], net(p))
    kn.export_onnx(f, tmp_path / "net.onnx")
    sess = ort.InferenceSession(str(tmp_path / "net.onnx"))
    got = sess.run(None, {sess.get_inputs()[0].name: x})[0]
    np.testing.assert_allclose(got, f(x), rtol=1e-5, atol=1e-6)
