"""Issue 11's `nn.functional` items as checks (run by tests/test_issue11_audit.py): pad and
interpolate modes, convolutions with groups, dilation and padding="same", pools, losses with
their arguments, attention, and the activations the issue lists. torch 2.13 is the oracle.
"""

# ruff: noqa: E731

import numpy as np
from issue11_cases import A23, A34, A234, B23, EAGER, F, arr, case

# -- nn.functional ---------------------------------------------------------------------------------
nf = "nn.functional"
X4 = arr(2, 2, 5, 6, seed=9)  # N, C, H, W
X3 = arr(2, 4, 7, seed=10)  # N, C, L
X5 = arr(1, 2, 4, 5, 5, seed=11)  # N, C, D, H, W
for mode in ("constant", "reflect", "replicate", "circular"):
    case(nf, f"pad-{mode}", lambda L, x, m=mode: F(L).pad(x, (1, 2, 2, 0), mode=m), X4)
case(nf, "pad-value", lambda L, x: F(L).pad(x, (1, 1), value=-3.0), A23)
case(nf, "pad-negative-crops", lambda L, x: F(L).pad(x, (-1, 1, 0, -1)), X4)
case(nf, "pad-3-dims-constant", lambda L, x: F(L).pad(x, (1, 0, 0, 1, 1, 1)), A234)
case(nf, "pad-reflect-1d", lambda L, x: F(L).pad(x, (2, 3), mode="reflect"), X3)
for mode, kw in {
    "nearest": {"scale_factor": 2},
    "nearest-size": {"size": (7, 9)},
    "nearest-exact": {"size": (7, 9)},
    "bilinear": {"scale_factor": 1.5},
    "bilinear-align": {"size": (3, 8), "align_corners": True},
    "bicubic": {"size": (4, 7)},
    "area": {"size": (2, 3)},
}.items():
    m = mode.split("-")[0] if mode != "nearest-exact" else mode
    case(nf, f"interpolate-{mode}", lambda L, x, m=m, kw=kw: F(L).interpolate(x, mode=m, **kw), X4)
case(
    nf, "interpolate-linear-1d", lambda L, x: F(L).interpolate(x, scale_factor=2, mode="linear"), X3
)
case(
    nf,
    "interpolate-trilinear",
    lambda L, x: F(L).interpolate(x, size=(3, 3, 3), mode="trilinear"),
    X5,
)
W1 = arr(6, 2, 3, seed=12)
W2 = arr(4, 1, 3, 3, seed=13)
W3 = arr(4, 1, 2, 2, 2, seed=14)
case(
    nf,
    "conv1d-groups-dilation",
    lambda L, x, w: F(L).conv1d(x, w, groups=2, dilation=2, padding=1),
    X3,
    W1,
)
case(nf, "conv1d-same", lambda L, x, w: F(L).conv1d(x, w, padding="same", groups=2), X3, W1)
case(
    nf,
    "conv1d-bias-stride",
    lambda L, x, w, b: F(L).conv1d(x, w, b, stride=2, groups=2),
    X3,
    W1,
    arr(6),
)
case(
    nf,
    "conv2d-groups-same-dilation",
    lambda L, x, w: F(L).conv2d(x, w, padding="same", dilation=2, groups=2),
    X4,
    W2,
)
case(
    nf,
    "conv2d-stride-padding-tuple",
    lambda L, x, w: F(L).conv2d(x, w, stride=(2, 1), padding=(1, 0), groups=2),
    X4,
    W2,
)
case(
    nf,
    "conv2d-valid",
    lambda L, x, w: F(L).conv2d(x, w[:, :1].repeat(1, 2, 1, 1), padding="valid"),
    X4,
    W2,
)
case(
    nf,
    "conv2d-same-even-kernel",
    lambda L, x, w: F(L).conv2d(x, w[:, :, :2, :2], padding="same", groups=2),
    X4,
    W2,
)
case(
    nf,
    "conv3d-groups",
    lambda L, x, w: F(L).conv3d(x, w, groups=2, padding=1, dilation=(1, 2, 1)),
    X5,
    W3,
)
case(nf, "conv3d-same", lambda L, x, w: F(L).conv3d(x, w, padding="same", groups=2), X5, W3)
case(
    nf,
    "conv2d-same-stride-raises",
    lambda L, x, w: F(L).conv2d(x, w, stride=2, padding="same", groups=2),
    X4,
    W2,
    modes=EAGER,
)
# the functional forms refuse these with RuntimeError (torch 2.13; nn.Conv2d(...) with ValueError)
CONV_REFUSED = {
    "conv1d-same-stride": lambda L, x, w: F(L).conv1d(
        x[:, :, 0], w[:, :, 0], stride=2, padding="same", groups=2
    ),
    "conv2d-padding-string": lambda L, x, w: F(L).conv2d(x, w, padding="full", groups=2),
    "conv2d-groups0": lambda L, x, w: F(L).conv2d(x, w, groups=0),
    "conv_transpose2d-output_padding": lambda L, x, w: F(L).conv_transpose2d(
        x, w[:2], output_padding=1
    ),
}
for n, f in CONV_REFUSED.items():
    case(nf, f"{n}-raises", f, X4, W2, modes=EAGER)
WT1 = arr(4, 3, 3, seed=15)
WT2 = arr(2, 3, 3, 3, seed=16)
case(
    nf,
    "conv_transpose1d-output_padding",
    lambda L, x, w: F(L).conv_transpose1d(x, w, stride=2, padding=1, output_padding=1),
    X3,
    WT1,
)
case(
    nf,
    "conv_transpose1d-groups-dilation",
    lambda L, x, w, b: F(L).conv_transpose1d(x, w[:, :1].repeat(1, 1, 1), b, groups=2, dilation=2),
    X3,
    WT1,
    arr(2),
)
case(
    nf,
    "conv_transpose2d",
    lambda L, x, w: F(L).conv_transpose2d(x, w, stride=2, padding=1, output_padding=1),
    X4,
    WT2,
)
case(
    nf,
    "conv_transpose2d-groups",
    lambda L, x, w: F(L).conv_transpose2d(x, w, stride=(1, 2), groups=2, dilation=(2, 1)),
    X4,
    WT2,
)
X4P = arr(1, 2, 7, 7, seed=17)
case(nf, "max_pool2d-ceil_mode", lambda L, x: F(L).max_pool2d(x, 2, ceil_mode=True), X4P)
case(
    nf,
    "max_pool2d-dilation-padding",
    lambda L, x: F(L).max_pool2d(x, 3, stride=2, padding=1, dilation=2),
    X4P,
)
case(
    nf, "max_pool2d-return_indices", lambda L, x: F(L).max_pool2d(x, 3, 2, return_indices=True), X4P
)
case(
    nf,
    "max_pool2d-return_indices-ceil",
    lambda L, x: F(L).max_pool2d(x, 2, return_indices=True, ceil_mode=True),
    X4P,
)
case(
    nf,
    "max_pool1d-return_indices",
    lambda L, x: F(L).max_pool1d(x, 2, return_indices=True, dilation=2),
    X3,
)
case(nf, "max_pool3d-ceil", lambda L, x: F(L).max_pool3d(x, 2, ceil_mode=True), X5)
case(
    nf,
    "avg_pool2d-count_include_pad-false",
    lambda L, x: F(L).avg_pool2d(x, 3, 2, padding=1, count_include_pad=False),
    X4P,
)
case(
    nf,
    "avg_pool2d-count_include_pad-true-ceil",
    lambda L, x: F(L).avg_pool2d(x, 3, 2, padding=1, ceil_mode=True),
    X4P,
)
case(nf, "avg_pool2d-divisor_override", lambda L, x: F(L).avg_pool2d(x, 2, divisor_override=3), X4P)
case(
    nf,
    "avg_pool1d-ceil-pad",
    lambda L, x: F(L).avg_pool1d(x, 2, padding=1, ceil_mode=True, count_include_pad=False),
    X3,
)
case(nf, "adaptive_avg_pool2d-uneven", lambda L, x: F(L).adaptive_avg_pool2d(x, (2, 4)), X4P)
case(nf, "adaptive_avg_pool2d-none", lambda L, x: F(L).adaptive_avg_pool2d(x, (None, 3)), X4P)
case(
    nf,
    "adaptive_max_pool2d-indices",
    lambda L, x: F(L).adaptive_max_pool2d(x, 3, return_indices=True),
    X4P,
)
LOGITS, LAB = arr(4, 5, seed=18), np.array([1, 0, 4, 1], np.int64)
CW = arr(5, lo=0.5, hi=2.0, seed=19)
PROB = np.abs(arr(4, 5, seed=20))
PROB = (PROB / PROB.sum(1, keepdims=True)).astype(np.float32)
LSM = lambda L, x: F(L).log_softmax(x, 1)
case(nf, "nll_loss", lambda L, x, y: F(L).nll_loss(LSM(L, x), y), LOGITS, LAB)
case(
    nf,
    "nll_loss-weight-ignore",
    lambda L, x, y, w: F(L).nll_loss(LSM(L, x), y, weight=w, ignore_index=1),
    LOGITS,
    LAB,
    CW,
)
case(
    nf,
    "nll_loss-none",
    lambda L, x, y: F(L).nll_loss(LSM(L, x), y, reduction="none", ignore_index=0),
    LOGITS,
    LAB,
)
case(
    nf,
    "nll_loss-2d",
    lambda L, x, y: F(L).nll_loss(x, y),
    arr(2, 3, 2, 2),
    np.array([[[0, 2], [1, 1]], [[2, 0], [0, 1]]], np.int64),
)
case(nf, "cross_entropy", lambda L, x, y: F(L).cross_entropy(x, y), LOGITS, LAB)
case(
    nf,
    "cross_entropy-ignore_index",
    lambda L, x, y: F(L).cross_entropy(x, y, ignore_index=1),
    LOGITS,
    LAB,
)
case(
    nf,
    "cross_entropy-label_smoothing",
    lambda L, x, y: F(L).cross_entropy(x, y, label_smoothing=0.2),
    LOGITS,
    LAB,
)
case(
    nf,
    "cross_entropy-weight",
    lambda L, x, y, w: F(L).cross_entropy(x, y, weight=w),
    LOGITS,
    LAB,
    CW,
)
case(
    nf,
    "cross_entropy-weight-smoothing-ignore",
    lambda L, x, y, w: F(L).cross_entropy(x, y, weight=w, label_smoothing=0.1, ignore_index=0),
    LOGITS,
    LAB,
    CW,
)
case(nf, "cross_entropy-prob-targets", lambda L, x, p: F(L).cross_entropy(x, p), LOGITS, PROB)
case(
    nf,
    "cross_entropy-prob-targets-smoothing-weight",
    lambda L, x, p, w: F(L).cross_entropy(x, p, weight=w, label_smoothing=0.3, reduction="sum"),
    LOGITS,
    PROB,
    CW,
)
case(
    nf,
    "cross_entropy-sum-none",
    lambda L, x, y: (
        F(L).cross_entropy(x, y, reduction="sum"),
        F(L).cross_entropy(x, y, reduction="none"),
    ),
    LOGITS,
    LAB,
)
SIG = arr(4, 5, lo=0.05, hi=0.95, seed=21)
case(nf, "binary_cross_entropy", lambda L, p, t: F(L).binary_cross_entropy(p, t), SIG, PROB)
case(
    nf,
    "binary_cross_entropy-weight-sum",
    lambda L, p, t, w: F(L).binary_cross_entropy(p, t, weight=w, reduction="sum"),
    SIG,
    PROB,
    CW,
)
case(
    nf,
    "binary_cross_entropy_with_logits",
    lambda L, x, t: F(L).binary_cross_entropy_with_logits(x, t),
    LOGITS,
    PROB,
)
case(
    nf,
    "binary_cross_entropy_with_logits-pos_weight",
    lambda L, x, t, w: F(L).binary_cross_entropy_with_logits(x, t, pos_weight=w, reduction="none"),
    LOGITS,
    PROB,
    CW,
)
case(nf, "l1_loss", lambda L, a, b: F(L).l1_loss(a, b), A23, B23)
case(nf, "l1_loss-none", lambda L, a, b: F(L).l1_loss(a, b, reduction="none"), A23, B23)
case(nf, "smooth_l1_loss-beta", lambda L, a, b: F(L).smooth_l1_loss(a, b, beta=0.5), A23, B23)
case(
    nf,
    "smooth_l1_loss-default",
    lambda L, a, b: F(L).smooth_l1_loss(a, b, reduction="sum"),
    A23,
    B23,
)
case(nf, "huber_loss-delta", lambda L, a, b: F(L).huber_loss(a, b, delta=0.7), A23, B23)
case(
    nf,
    "kl_div-batchmean",
    lambda L, x, p: F(L).kl_div(LSM(L, x), p, reduction="batchmean"),
    LOGITS,
    PROB,
)
case(
    nf,
    "kl_div-log_target",
    lambda L, x, p: F(L).kl_div(LSM(L, x), p.log(), reduction="sum", log_target=True),
    LOGITS,
    PROB,
)
case(nf, "kl_div-default-mean", lambda L, x, p: F(L).kl_div(LSM(L, x), p), LOGITS, PROB)
Q, K, VV = arr(2, 2, 4, 8, seed=22), arr(2, 2, 5, 8, seed=23), arr(2, 2, 5, 3, seed=24)
BMASK = arr(4, 5, dtype="bool", seed=25)
BMASK[:, 0] = True  # no row fully masked
SDPA = lambda L: F(L).scaled_dot_product_attention
case(nf, "sdpa", lambda L, q, k, v: SDPA(L)(q, k, v), Q, K, VV)
case(nf, "sdpa-is_causal", lambda L, q, k, v: SDPA(L)(q, k, v, is_causal=True), Q, K, VV)
case(nf, "sdpa-bool-mask", lambda L, q, k, v, m: SDPA(L)(q, k, v, attn_mask=m), Q, K, VV, BMASK)
case(
    nf,
    "sdpa-float-mask-scale",
    lambda L, q, k, v, m: SDPA(L)(q, k, v, attn_mask=m[0, 0, :, :5], scale=0.3),
    Q,
    K,
    VV,
    arr(1, 1, 4, 5),
)
case(
    nf,
    "sdpa-causal-and-mask-raises",
    lambda L, q, k, v, m: SDPA(L)(q, k, v, attn_mask=m, is_causal=True),
    Q,
    K,
    VV,
    BMASK,
    modes=EAGER,
)
case(nf, "normalize", lambda L, a: F(L).normalize(a), A23)
case(nf, "normalize-p1-dim0", lambda L, a: F(L).normalize(a, p=1, dim=0, eps=1e-3), A23)
case(nf, "one_hot", lambda L, y: F(L).one_hot(y), LAB, modes=EAGER)
case(nf, "one_hot-num_classes", lambda L, y: F(L).one_hot(y, num_classes=6), LAB)
case(nf, "one_hot-2d", lambda L, y: F(L).one_hot(y.view(2, 2), 5), LAB)
case(nf, "linear", lambda L, x, w, b: F(L).linear(x, w, b), A34, arr(5, 4), arr(5))
case(nf, "linear-no-bias-1d", lambda L, x, w: F(L).linear(x, w), arr(4), arr(5, 4))
ACTS = {
    "silu": {},
    "elu": {"alpha": 0.7},
    "selu": {},
    "celu": {"alpha": 1.3},
    "hardtanh": {"min_val": -0.5, "max_val": 0.8},
    "relu6": {},
    "hardswish": {},
    "hardsigmoid": {},
    "mish": {},
    "logsigmoid": {},
    "softsign": {},
    "softmin": {"dim": 1},
    "glu": {"dim": 0},
}
AX = (arr(4, 3, seed=26) * 4).astype(np.float32)
for n, kw in ACTS.items():
    case(nf, f"{n}", lambda L, x, n=n, kw=kw: getattr(F(L), n)(x, **kw), AX)
case(nf, "glu-default-dim-last", lambda L, x: F(L).glu(x), arr(3, 4))
case(nf, "softmin-dtype", lambda L, x: F(L).softmin(x, 0, dtype=L.float64), AX)
case(nf, "elu-inplace-flag", lambda L, x: F(L).elu(x * 1, inplace=True), AX)

# -- edges of the items above ---------------------------------------------------------------------
ed = "nn-edges"
X55 = arr(1, 2, 5, 5, seed=27)
case(ed, "interpolate-nearest-scale-1.7", lambda L, x: F(L).interpolate(x, scale_factor=1.7), X4)
case(
    ed,
    "interpolate-bilinear-scale-1.7",
    lambda L, x: F(L).interpolate(x, scale_factor=1.7, mode="bilinear"),
    X4,
)
case(
    ed,
    "interpolate-bilinear-recompute",
    lambda L, x: F(L).interpolate(
        x, scale_factor=1.7, mode="bilinear", recompute_scale_factor=True
    ),
    X4,
)
case(
    ed,
    "interpolate-bilinear-antialias",
    lambda L, x: F(L).interpolate(x, size=(3, 4), mode="bilinear", antialias=True),
    X4,
)
case(
    ed,
    "interpolate-bicubic-align",
    lambda L, x: F(L).interpolate(x, scale_factor=2, mode="bicubic", align_corners=True),
    X4,
)
case(
    ed,
    "interpolate-nearest-exact-scale",
    lambda L, x: F(L).interpolate(x, scale_factor=0.6, mode="nearest-exact"),
    X4,
)
case(
    ed,
    "interpolate-both-raises",
    lambda L, x: F(L).interpolate(x, size=3, scale_factor=2),
    X4,
    modes=EAGER,
)
case(
    ed,
    "pad-reflect-too-large-raises",
    lambda L, x: F(L).pad(x, (7, 0), mode="reflect"),
    X3,
    modes=EAGER,
)
for mode in ("reflect", "replicate", "circular"):  # torch 2.13 pads 4-D input's last 2 or 3 dims
    case(
        ed,
        f"pad-{mode}-one-pair-on-4d-raises",
        lambda L, x, m=mode: F(L).pad(x, (1, 1), mode=m),
        X4,
    )
case(ed, "pad-circular-1d", lambda L, x: F(L).pad(x, (2, 1), mode="circular"), X3)
case(
    ed,
    "max_pool2d-ceil-last-window-rule",
    lambda L, x: F(L).max_pool2d(x, 2, 2, padding=1, ceil_mode=True),
    X55,
)
case(
    ed,
    "avg_pool2d-ceil-include-pad-edge",
    lambda L, x: F(L).avg_pool2d(x, 2, 2, padding=1, ceil_mode=True),
    X55,
)
case(
    ed,
    "avg_pool2d-ceil-exclude-pad-edge",
    lambda L, x: F(L).avg_pool2d(x, 3, 2, padding=1, ceil_mode=True, count_include_pad=False),
    X55,
)
case(
    ed,
    "max_pool2d-padding-too-large-raises",
    lambda L, x: F(L).max_pool2d(x, 2, padding=2),
    X55,
    modes=EAGER,
)
case(ed, "adaptive_avg_pool2d-larger-output", lambda L, x: F(L).adaptive_avg_pool2d(x, 7), X55)
case(
    ed,
    "cross_entropy-all-ignored-nan",
    lambda L, x, y: F(L).cross_entropy(x, y * 0 + 1, ignore_index=1),
    LOGITS,
    LAB,
)
case(
    ed,
    "cross_entropy-kdim",
    lambda L, x, y: F(L).cross_entropy(x, y),
    arr(2, 3, 4),
    np.array([[0, 2, 1, 1], [2, 2, 0, 1]], np.int64),
)
case(
    ed,
    "cross_entropy-kdim-prob-smoothing",
    lambda L, x: F(L).cross_entropy(x, x.softmax(1).detach(), label_smoothing=0.2),
    arr(2, 3, 4),
)
case(
    ed,
    "cross_entropy-target-out-of-range-raises",
    lambda L, x, y: F(L).cross_entropy(x, y + 5),
    LOGITS,
    LAB,
    modes=EAGER,
)
case(
    ed,
    "nll_loss-ignore_index-negative",
    lambda L, x, y: F(L).nll_loss(LSM(L, x), y - 1, ignore_index=-1),
    LOGITS,
    LAB,
)
case(
    ed,
    "binary_cross_entropy-clamps-log",
    lambda L, p, t: F(L).binary_cross_entropy(p, t, reduction="none"),
    np.array([0.0, 1.0, 0.5, 1.0], np.float32),
    np.array([1.0, 0.0, 1.0, 1.0], np.float32),
)
case(
    ed,
    "binary_cross_entropy-out-of-range-raises",
    lambda L, p, t: F(L).binary_cross_entropy(p * 3, t),
    SIG,
    PROB,
    modes=EAGER,
)
case(
    ed,
    "binary_cross_entropy-nan-input-raises",
    lambda L, p, t: F(L).binary_cross_entropy(p.log(), t),
    np.array([-1.0, 0.5], np.float32),
    np.array([1.0, 0.0], np.float32),
    modes=EAGER,
)
case(
    ed,
    "bce_with_logits-weight-pos_weight",
    lambda L, x, t, w: F(L).binary_cross_entropy_with_logits(x, t, weight=w[:1], pos_weight=w),
    LOGITS,
    PROB,
    CW,
)
case(ed, "smooth_l1_loss-beta0", lambda L, a, b: F(L).smooth_l1_loss(a, b, beta=0.0), A23, B23)
case(ed, "huber_loss-none", lambda L, a, b: F(L).huber_loss(a, b, reduction="none"), A23, B23)
case(ed, "l1_loss-broadcast-warns", lambda L, a, b: F(L).l1_loss(a, b[0]), A23, B23)
QH, KH = arr(1, 4, 3, 8, seed=28), arr(1, 2, 5, 8, seed=29)
case(
    ed,
    "sdpa-enable_gqa",
    lambda L, q, k, v: SDPA(L)(q, k, v, enable_gqa=True),
    QH,
    KH,
    arr(1, 2, 5, 3),
)
case(
    ed,
    "sdpa-fully-masked-row",
    lambda L, q, k, v, m: SDPA(L)(q, k, v, attn_mask=m & (L.arange(4) > 0)[:, None]),
    Q,
    K,
    VV,
    BMASK,
)
case(ed, "sdpa-causal-square", lambda L, q: SDPA(L)(q, q, q, is_causal=True), Q)
case(ed, "one_hot-negative-raises", lambda L, y: F(L).one_hot(y - 2, 5), LAB, modes=EAGER)
case(ed, "one_hot-float-raises", lambda L, y: F(L).one_hot(y.float(), 5), LAB, modes=EAGER)
case(ed, "linear-3d", lambda L, x, w: F(L).linear(x, w), A234, arr(5, 4))
case(ed, "glu-odd-raises", lambda L, x: F(L).glu(x, 1), A23, modes=EAGER)
case(ed, "gelu-tanh", lambda L, x: F(L).gelu(x, approximate="tanh"), AX)
case(ed, "softplus-beta-threshold", lambda L, x: F(L).softplus(x, beta=2.0, threshold=3.0), AX)
case(ed, "leaky_relu-slope", lambda L, x: F(L).leaky_relu(x, 0.2), AX)
case(ed, "hardtanh-default", lambda L, x: F(L).hardtanh(x), AX)
case(ed, "elu-float16", lambda L, x: F(L).elu(x.half()), AX)
case(ed, "silu-int-raises", lambda L, x: F(L).silu(x), np.array([1, 2], np.int64), modes=EAGER)
case(ed, "normalize-zero-row", lambda L, a: F(L).normalize(a * L.tensor([[0.0], [1.0]])), A23)
