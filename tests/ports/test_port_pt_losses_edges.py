"""PyTorch's own loss tests (test_nn.py's TestNN and TestNNDeviceType loss tests) as an oracle,
their edges: argument checks (target ranks and dtypes, weights, lengths), mixed dtypes, the
half-precision forms the criterion tests run (`check_half`, `_test_bfloat16_ops`), CTC's length
and type checks, and the consistency checks (index targets against one-hot probabilities,
sigmoid + BCE against BCE with logits). test_port_pt_losses.py and test_port_pt_losses_more.py
have each loss's values and gradients.

Expected values: torch 2.13 (the oracle), compared by pt_oracle.py, eagerly and under
`kn.compile`.
"""

import math
import warnings

import numpy as np
import pytest
from pt_oracle import MODES, Leaf, Scenarios

nan, inf = float("nan"), float("inf")
f16, f32, f64 = np.float16, np.float32, np.float64
RNG = np.random.default_rng(2)

X = RNG.standard_normal((4, 5))
Y = RNG.standard_normal((4, 5))
T = np.array([1, 0, 4, 2], np.int64)
P = RNG.uniform(0.05, 0.95, (4, 5))
B = (RNG.uniform(size=(4, 5)) > 0.5).astype(f64)
SIGN = np.array([1.0, -1.0, -1.0, 1.0])
W5 = RNG.uniform(0.5, 2, 5)

SCENARIOS = Scenarios()
case = SCENARIOS.case


def grads(lib, out, *xs):
    """`out`'s values and the gradients of its sum (of each of a tuple's) by `xs`."""
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return out, lib.autograd.grad(sum(o.sum() for o in outs), xs)


def half_forms(lib, fn, *inputs):
    """`fn` of `inputs` as float16 and as bfloat16 (unreduced): values as float32, dtypes."""
    out = []
    for dtype in (lib.float16, lib.bfloat16):
        y = fn(*(v.to(dtype) if v.is_floating_point() else v for v in inputs))
        out += [y.float(), y.dtype]
    return out


# -- nll_loss / cross_entropy checks --------------------------------------------------------


@case("nll_2d_target_for_2d_input", X, np.zeros((4, 5), np.int64))
def _(lib, x, t):
    return lib.nn.functional.nll_loss(x, t)


@case("nll_1d_input_1d_target", X[0], T[:2])
def _(lib, x, t):
    return lib.nn.functional.nll_loss(x, t)


@case("nll_2d_weight", X, T, np.ones((5, 1)))
def _(lib, x, t, w):
    return lib.nn.functional.nll_loss(x, t, w)


@case("nll_total_weight_zero", Leaf.of(X), np.array([1, 0, -100, 2]), np.zeros(5))
def _(lib, x, t, w):
    # kept targets whose weights sum to 0: 0 / 0, its gradient NaN at the kept targets (and
    # through log_softmax, their rows), 0 at the ignored one, as torch's
    f = lib.nn.functional
    out = (f.nll_loss(x, t, w), f.nll_loss(x, t, w, reduction="sum"),
           f.nll_loss(x, t, w, reduction="none"), f.cross_entropy(x, t, w),
           f.cross_entropy(x, t, w, label_smoothing=0.1))  # fmt: skip
    return out, [lib.autograd.grad(v, x, retain_graph=True) for v in (out[0], out[3], out[4])]


@case("nll_ignore_index_out_of_class_range", Leaf.of(X), np.array([1, 255, 255, 2]))
def _(lib, x, t):
    nll = lib.nn.functional.nll_loss
    return grads(
        lib, (nll(x, t, ignore_index=255), nll(x, t, ignore_index=255, reduction="none")), x
    )


@case("nll_negative_ignore_index_target", X, np.array([1, -1, 0, 2]))
def _(lib, x, t):
    return lib.nn.functional.nll_loss(x, t, ignore_index=-1, reduction="none")


@case("nll_negative_target", X, np.array([1, -1, 0, 2]))
def _(lib, x, t):
    return lib.nn.functional.nll_loss(x, t)


@case("nll_kd_byte_target", X.reshape(1, 5, 4), np.zeros((1, 4), np.uint8))
def _(lib, x, t):
    return lib.nn.functional.nll_loss(x, t)


@case("ce_kd_out_of_bounds_class", X.reshape(1, 5, 2, 2), np.array([[[0, 5], [1, 2]]]))
def _(lib, x, t):
    return lib.nn.functional.cross_entropy(x, t)


@case("ce_zero_classes", np.zeros((5, 0)), np.zeros((5, 0)))
def _(lib, x, q):
    ce = lib.nn.functional.cross_entropy
    return ce(x, q), ce(x, q, reduction="none"), ce(x, q, reduction="sum")


@case("ce_index_vs_one_hot_label_smoothing", Leaf.of(X), T)
def _(lib, x, t):
    # PyTorch's test: label smoothing gives one loss for index targets and one-hot ones
    ce = lib.nn.functional.cross_entropy
    one_hot = lib.nn.functional.one_hot(t, 5).to(x.dtype)
    out = []
    for reduction in ("none", "mean", "sum"):
        out += [ce(x, t, label_smoothing=0.3, reduction=reduction),
                ce(x, one_hot, label_smoothing=0.3, reduction=reduction)]  # fmt: skip
    return grads(lib, out, x)


@case("ce_unit_weights", Leaf.of(X), T, Leaf.of(P))
def _(lib, x, t, q):
    ce = lib.nn.functional.cross_entropy
    w = lib.ones(5, dtype=x.dtype)
    return grads(lib, (ce(x, t, w), ce(x, t), ce(x, q, w, reduction="none"), ce(x, q)), x, q)


@case("ce_weight_wrong_size_probabilities", X, P, W5[:3])
def _(lib, x, q, w):
    return lib.nn.functional.cross_entropy(x, q, w)


@case("ce_mixed_dtypes", X.astype(f32), P, T)
def _(lib, x, q, t):
    ce = lib.nn.functional.cross_entropy
    return ce(x, q.float()), ce(x.double(), t), ce(x, t, lib.ones(5, dtype=lib.float32))


@case("ce_probabilities_mixed_dtype", X.astype(f32), P)
def _(lib, x, q):
    return lib.nn.functional.cross_entropy(x, q)


@case("ce_half_forms", X, T, P)
def _(lib, x, t, q):
    ce = lib.nn.functional.cross_entropy
    return (half_forms(lib, lambda a: ce(a, t, reduction="none"), x),
            half_forms(lib, lambda a, b: ce(a, b, reduction="none"), x, q))  # fmt: skip


@case("nll_half_forms", X, T, W5)
def _(lib, x, t, w):
    nll = lib.nn.functional.nll_loss
    return half_forms(lib, lambda a, b: nll(a, t, b, reduction="none"), x, w)


# -- binary cross entropy -------------------------------------------------------------------


@case("bce_broadcast_weights", Leaf.of(P), B, W5, W5[:4].reshape(4, 1))
def _(lib, p, y, w, w_col):
    bce = lib.nn.functional.binary_cross_entropy
    return grads(lib, (bce(p, y, w), bce(p, y, w_col, reduction="none")), p)


@case("bce_sigmoid_vs_logits", Leaf.of(X), B)
def _(lib, x, y):
    f = lib.nn.functional
    out = (f.binary_cross_entropy(lib.sigmoid(x), y), f.binary_cross_entropy_with_logits(x, y))
    return grads(lib, out, x)


@case(
    "bce_always_nonnegative",
    np.array([[0.0, 0.5, 1.0], [1.0, 1.0, 0.0]]),
    np.array([[0.0, 0.5, 1.0], [1.0, 1.0, 0.0]]),
)
def _(lib, p, y):
    return lib.nn.functional.binary_cross_entropy(p, y, reduction="none")


@case("bcel_grad_at_zero", Leaf.of(np.zeros((3, 1))), np.ones((3, 1)), np.full((1,), 3.0))
def _(lib, x, y, pw):
    bcel = lib.nn.functional.binary_cross_entropy_with_logits
    return grads(lib, (bcel(x, y, reduction="sum"), bcel(x, y, pos_weight=pw, reduction="sum")), x)


@case("bcel_stability", Leaf.of(np.array([[0.0, -120.0]], f32)), np.array([[0.0, 1.0]], f32))
def _(lib, x, y):
    bcel = lib.nn.functional.binary_cross_entropy_with_logits
    pw = lib.tensor([[1.0, 1.0]], dtype=x.dtype)
    return grads(lib, (bcel(x, y), bcel(x, y, pos_weight=pw, reduction="none")), x)


@case("bcel_ones_pos_weight_is_none", Leaf.of(X), P)
def _(lib, x, y):
    bcel = lib.nn.functional.binary_cross_entropy_with_logits
    out = (bcel(x, y, reduction="none"), bcel(x, y, pos_weight=lib.ones(5, dtype=x.dtype),
                                              reduction="none"))  # fmt: skip
    return grads(lib, out, x)


@case("bcel_broadcast_pos_weight_wrong", X, P, np.ones(3))
def _(lib, x, y, pw):
    return lib.nn.functional.binary_cross_entropy_with_logits(x, y, pos_weight=pw)


@case("bce_half_forms", P, B, W5)
def _(lib, p, y, w):
    f = lib.nn.functional
    return (half_forms(lib, lambda a, b: f.binary_cross_entropy(a, b, reduction="none"), p, y),
            half_forms(lib, lambda a, b, c: f.binary_cross_entropy_with_logits(
                a, b, c, pos_weight=c, reduction="none"), p, y, w))  # fmt: skip


@case("bce_mixed_dtypes", P.astype(f32), B)
def _(lib, p, y):
    return lib.nn.functional.binary_cross_entropy(p, y)


@case("bcel_mixed_dtypes", X.astype(f32), B, W5)
def _(lib, x, y, w):
    f = lib.nn.functional
    return f.binary_cross_entropy_with_logits(x, y), f.binary_cross_entropy_with_logits(
        x, y.float(), w, pos_weight=w
    )


# -- pointwise losses -----------------------------------------------------------------------


@case("pointwise_target_grad_none_reduction", Leaf.of(X), Leaf.of(Y))
def _(lib, x, y):
    f = lib.nn.functional
    out = (f.mse_loss(x, y, reduction="none"), f.l1_loss(x, y, reduction="none"),
           f.smooth_l1_loss(x, y, reduction="none"), f.huber_loss(x, y, reduction="none"),
           f.kl_div(x, y.abs(), reduction="none"),
           f.poisson_nll_loss(x, y.abs(), reduction="none"))  # fmt: skip
    return grads(lib, out, x, y)


@case("soft_margin_target_requires_grad", X, Leaf.of(Y))
def _(lib, x, y):
    return lib.nn.functional.soft_margin_loss(x, y)


@case("pointwise_integral_target", Leaf.of(X.astype(f32)), T.reshape(4, 1).repeat(5, 1))
def _(lib, x, t):
    # (huber's value only: torch's backward refuses the int64 target, "Found dtype Long but
    # expected Float", where kiln's gives the float target's gradient)
    f = lib.nn.functional
    out = grads(lib, (f.smooth_l1_loss(x, t, beta=0.5), f.l1_loss(x, t), f.mse_loss(x, t)), x)
    return out, f.huber_loss(x.detach(), t, delta=2.0)


@case("smooth_l1_is_huber_over_beta", Leaf.of(X * 3), Y * 3)
def _(lib, x, y):
    f = lib.nn.functional
    out = (f.smooth_l1_loss(x, y, beta=1.5, reduction="none"),
           f.huber_loss(x, y, delta=1.5, reduction="none") / 1.5)  # fmt: skip
    return grads(lib, out, x)


@case("pointwise_half_forms", X, Y)
def _(lib, x, y):
    f = lib.nn.functional
    return [half_forms(lib, lambda a, b: fn(a, b, reduction="none"), x, y)
            for fn in (f.mse_loss, f.l1_loss, f.smooth_l1_loss, f.huber_loss,
                       f.soft_margin_loss, f.kl_div, f.poisson_nll_loss)]  # fmt: skip


@case("kl_div_mixed_dtypes", np.log(P).astype(f32), P)
def _(lib, x, q):
    kl = lib.nn.functional.kl_div
    return (kl(x, q, reduction="batchmean"), kl(x, q.log(), reduction="sum", log_target=True),
            kl(x.double(), q.float(), reduction="none"))  # fmt: skip


@case("kl_div_log_softmax_target", Leaf.of(X), Y)
def _(lib, x, y):
    f = lib.nn.functional
    lp, lq = f.log_softmax(x, 1), f.log_softmax(y, 1)
    out = (f.kl_div(lp, lq.exp(), reduction="batchmean"),
           f.kl_div(lp, lq, reduction="batchmean", log_target=True),
           f.kl_div(lp, lp.detach(), reduction="sum", log_target=True))  # fmt: skip
    return grads(lib, out, x)


@case("kl_div_bad_reduction", X, P)
def _(lib, x, q):
    return lib.nn.functional.kl_div(x, q, reduction="batch")


# -- margin and embedding losses: checks and dtypes -----------------------------------------


@case("cosine_embedding_mixed_dtypes", X.astype(f32), Y, np.array([1, -1, 1, -1]))
def _(lib, x1, x2, y):
    return lib.nn.functional.cosine_embedding_loss(x1, x2, y)


@case("cosine_embedding_nonexpandable", X, Y[:2], SIGN)
def _(lib, x1, x2, y):
    return lib.nn.functional.cosine_embedding_loss(x1, x2, y)


@case("multi_margin_3d_input", X.reshape(2, 2, 5), T.reshape(2, 2))
def _(lib, x, t):
    return lib.nn.functional.multi_margin_loss(x, t)


@case("multilabel_margin_3d_input", X.reshape(2, 2, 5), np.zeros((2, 2, 5), np.int64))
def _(lib, x, t):
    return lib.nn.functional.multilabel_margin_loss(x, t)


@case("multilabel_margin_target_out_of_range", X, np.full((4, 5), 7))
def _(lib, x, t):
    return lib.nn.functional.multilabel_margin_loss(x, t)


@case("multi_margin_half", X.astype(f16), T)
def _(lib, x, t):
    return lib.nn.functional.multi_margin_loss(x, t)


@case("multi_margin_bfloat16", X.astype(f32), T)
def _(lib, x, t):
    return lib.nn.functional.multi_margin_loss(x.bfloat16(), t)


@case("multilabel_margin_half", X.astype(f16), np.zeros((4, 5), np.int64))
def _(lib, x, t):
    return lib.nn.functional.multilabel_margin_loss(x, t)


@case("margin_half_forms", X, Y, SIGN)
def _(lib, x, y, s):
    f = lib.nn.functional
    return (half_forms(lib, lambda a, b, c: f.margin_ranking_loss(a[:, 0], b[:, 0], c, 0.1,
                                                                   reduction="none"), x, y, s),
            half_forms(lib, lambda a, b, c: f.cosine_embedding_loss(a, b, c, reduction="none"),
                       x, y, s),
            half_forms(lib, lambda a, b: f.multilabel_soft_margin_loss(a, b.abs().round(),
                                                                      reduction="none"), x, y),
            half_forms(lib, lambda a, b: f.hinge_embedding_loss(a, b.sign(), reduction="none"),
                       x, y))  # fmt: skip


@case("triplet_half_forms", X, Y, X[::-1].copy())
def _(lib, a, p, n):
    f = lib.nn.functional
    return half_forms(
        lib, lambda u, v, w: f.triplet_margin_loss(u, v, w, reduction="none"), a, p, n
    )


@case("gaussian_poisson_half_forms", X, Y, P)
def _(lib, x, y, v):
    f = lib.nn.functional
    gnll = lambda a, b, c: f.gaussian_nll_loss(a, b, c, reduction="none")  # noqa: E731
    pnll = lambda a, b: f.poisson_nll_loss(a, b.abs(), log_input=False, full=True,  # noqa: E731
                                           reduction="none")  # fmt: skip
    return half_forms(lib, gnll, x, y, v), half_forms(lib, pnll, v, y)


# -- ctc_loss checks ------------------------------------------------------------------------


LP = RNG.standard_normal((5, 2, 4))
TG = np.array([[1, 2, 3], [2, 2, 0]], np.int64)


@case("ctc_float_target_lengths", LP, TG, np.array([5, 5]), np.array([3.0, 2.0]))
def _(lib, x, t, il, tl):
    return lib.nn.functional.ctc_loss(x.log_softmax(2), t, il, tl)


@case("ctc_float_input_lengths", LP, TG, np.array([5.0, 5.0]), np.array([3, 2]))
def _(lib, x, t, il, tl):
    return lib.nn.functional.ctc_loss(x.log_softmax(2), t, il, tl)


@case("ctc_lengths_batch_mismatch", LP, TG, np.array([5, 5, 5]), np.array([3, 2]))
def _(lib, x, t, il, tl):
    return lib.nn.functional.ctc_loss(x.log_softmax(2), t, il, tl)


@case("ctc_target_length_above_padded_width", LP, TG, np.array([5, 5]), np.array([4, 2]))
def _(lib, x, t, il, tl):
    return lib.nn.functional.ctc_loss(x.log_softmax(2), t, il, tl)


@case("ctc_critical_target_length", Leaf.of(LP), TG, np.array([3, 4]), np.array([3, 2]))
def _(lib, x, t, il, tl):
    # a target as long as its input (no repeats): one alignment; [2, 2] needs 3 steps
    ctc = lib.nn.functional.ctc_loss
    return grads(lib, ctc(x.log_softmax(2), t, il, tl, reduction="none"), x)


@case("ctc_zero_lengths", Leaf.of(LP), TG, np.array([0, 0]), np.array([0, 0]))
def _(lib, x, t, il, tl):
    ctc = lib.nn.functional.ctc_loss
    return grads(lib, (ctc(x.log_softmax(2), t, il, tl, reduction="none"),
                       ctc(x.log_softmax(2), t, il, tl)), x)  # fmt: skip


@case("ctc_zero_input_length_nonzero_target", Leaf.of(LP), TG, np.array([0, 5]), np.array([1, 2]))
def _(lib, x, t, il, tl):
    ctc = lib.nn.functional.ctc_loss
    out = (ctc(x.log_softmax(2), t, il, tl, reduction="none"),
           ctc(x.log_softmax(2), t, il, tl, reduction="none", zero_infinity=True))  # fmt: skip
    return out, lib.autograd.grad(out[1].sum(), x)


@case("ctc_half_log_probs", LP.astype(f16), TG, np.array([5, 5]), np.array([3, 2]))
def _(lib, x, t, il, tl):
    return lib.nn.functional.ctc_loss(x.log_softmax(2), t, il, tl)


@case("ctc_int_log_probs", LP.astype(np.int64), TG, np.array([5, 5]), np.array([3, 2]))
def _(lib, x, t, il, tl):
    return lib.nn.functional.ctc_loss(x, t, il, tl)


@case("ctc_float32_and_tuple_lengths", LP.astype(f32), TG)
def _(lib, x, t):
    ctc = lib.nn.functional.ctc_loss
    return ctc(x.log_softmax(2), t, (5, 4), (3, 2), reduction="none"), ctc(
        x.log_softmax(2), t, [5, 4], [3, 2]
    )


@case("ctc_blank_out_of_range", LP, TG, np.array([5, 5]), np.array([3, 2]))
def _(lib, x, t, il, tl):
    return lib.nn.functional.ctc_loss(x.log_softmax(2), t, il, tl, blank=4)


@case("ctc_targets_3d", LP, TG.reshape(2, 3, 1), np.array([5, 5]), np.array([3, 2]))
def _(lib, x, t, il, tl):
    return lib.nn.functional.ctc_loss(x.log_softmax(2), t, il, tl)


@case("ctc_log_probs_4d", LP.reshape(5, 2, 2, 2), TG, np.array([5, 5]), np.array([3, 2]))
def _(lib, x, t, il, tl):
    return lib.nn.functional.ctc_loss(x, t, il, tl)


@case("ctc_negative_input_length", LP, TG, np.array([-1, 5]), np.array([3, 2]))
def _(lib, x, t, il, tl):
    return lib.nn.functional.ctc_loss(x.log_softmax(2), t, il, tl)


@case("nll_ce_weight_of_another_dtype", X, T, W5.astype(f32), P)
def _(lib, x, t, w, q):
    # class indices: the weight is read as input's dtype (RuntimeError); probabilities promote
    ce = lib.nn.functional.cross_entropy
    return ce(x, q, w), ce(x, q, w.long()), ce(x, t, w)


@case("nll_integer_weight", X, T, np.arange(5))
def _(lib, x, t, w):
    return lib.nn.functional.nll_loss(x, t, w)


@case("ce_0d_input_and_long_target", np.array(1.0), np.array(0))
def _(lib, x, t):
    # equal shapes: class probabilities, whose dtype is checked first (RuntimeError)
    return lib.nn.functional.cross_entropy(x, t)


@case("legacy_flags_warning", X, Y)
def _(lib, x, y):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        lib.nn.functional.mse_loss(x, y, size_average=False)
        lib.nn.L1Loss(reduce=False)
        lib.nn.functional.nll_loss(x, lib.tensor([0, 1, 2, 3]), size_average=True, reduce=True)
    return [(w.category.__name__, str(w.message)) for w in seen]


# -- legacy flags on every loss that takes them ---------------------------------------------


@case("legacy_flags_every_loss", X, Y, P, B, T, SIGN)
def _(lib, x, y, p, b, t, s):
    f = lib.nn.functional
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for size_average, reduce in ((False, True), (True, False), (None, False), (False, None)):
            kw = {"size_average": size_average, "reduce": reduce}
            out += [f.l1_loss(x, y, **kw), f.mse_loss(x, y, **kw), f.smooth_l1_loss(x, y, **kw),
                    f.binary_cross_entropy(p, b, **kw), f.kl_div(x, p, **kw),
                    f.binary_cross_entropy_with_logits(x, b, **kw), f.nll_loss(x, t, **kw),
                    f.cross_entropy(x, t, **kw), f.soft_margin_loss(x, b * 2 - 1, **kw),
                    f.hinge_embedding_loss(x, b * 2 - 1, **kw), f.multi_margin_loss(x, t, **kw),
                    f.multilabel_soft_margin_loss(x, b, **kw),
                    f.margin_ranking_loss(x[:, 0], y[:, 0], s, **kw),
                    f.cosine_embedding_loss(x, y, s, **kw),
                    f.triplet_margin_loss(x, y, p, **kw),
                    f.poisson_nll_loss(x, p, **kw)]  # fmt: skip
    return out


@case("weighted_modules_of_constant_weights", Leaf.of(X), T, P, B)
def _(lib, x, t, p, b):
    # modules made in the function from constants (so they run compiled too): weights as
    # buffers, each forward as its functional form's
    nn, w = lib.nn, lib.tensor(W5)
    ms = (nn.CrossEntropyLoss(w, label_smoothing=0.1), nn.NLLLoss(w, ignore_index=0),
          nn.BCELoss(w), nn.BCEWithLogitsLoss(w, pos_weight=w * 2),
          nn.MultiMarginLoss(p=2, weight=w), nn.MultiLabelSoftMarginLoss(w))  # fmt: skip
    args = ((x, t), (x, t), (p, b), (x, b), (x, t), (x, b))
    out = [m(*a) for m, a in zip(ms, args)]
    return grads(lib, out, x), [sorted(m.state_dict()) for m in ms]


NINE = RNG.standard_normal((2, 9))


@case("modules_no_batch_dim", Leaf.of(NINE[0]), NINE[1], np.array([-1, 1, 1] * 3))
def _(lib, x, y, t):
    # common_nn's "no_batch_dim" criterion tests: each module of unbatched inputs (a long
    # +-1 target where PyTorch's test gives one), every reduction
    nn, out = lib.nn, []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (KLDivLoss's "mean")
        for r in ("none", "mean", "sum"):
            out += [nn.L1Loss(reduction=r)(x, y), nn.MSELoss(reduction=r)(x, y),
                    nn.PoissonNLLLoss(reduction=r)(x, y.abs()), nn.HuberLoss(reduction=r)(x, y),
                    nn.SmoothL1Loss(reduction=r)(x, y), nn.KLDivLoss(reduction=r)(x, y.abs()),
                    nn.BCELoss(reduction=r)(x.sigmoid(), (y > 0).double()),
                    nn.BCEWithLogitsLoss(reduction=r)(x, y),
                    nn.HingeEmbeddingLoss(reduction=r)(x, t),
                    nn.MultiLabelMarginLoss(reduction=r)(x[:4], lib.tensor([3, 0, -1, 1])),
                    nn.SoftMarginLoss(reduction=r)(x, t),
                    nn.NLLLoss(reduction=r)(x[:3].log_softmax(0), lib.tensor(1)),
                    nn.CosineEmbeddingLoss(reduction=r)(x, y, lib.tensor(1.0, dtype=x.dtype)),
                    nn.MarginRankingLoss(reduction=r)(x[0], y[0], y[1].sign()),
                    nn.TripletMarginLoss(reduction=r)(x, y, x * 0.5),
                    nn.MultiLabelSoftMarginLoss(reduction=r)(x, y.float())]  # fmt: skip
    return grads(lib, out, x)


# -- modules: reduction checks, LinearCrossEntropyLoss --------------------------------------


@case("modules_check_reduction_when_called", X, Y)
def _(lib, x, y):
    nn = lib.nn
    made = [cls(reduction="avg") for cls in (nn.MSELoss, nn.L1Loss, nn.KLDivLoss, nn.CTCLoss,
                                              nn.CrossEntropyLoss, nn.SoftMarginLoss)]  # fmt: skip
    return [m.reduction for m in made], made[0](x, y)


LW = RNG.standard_normal((4 * 3, 5))  # (C * prod(out_features), in)
LB = RNG.standard_normal(4 * 3)


def linear_ce(lib, w, b, out_features=(), **kw):
    m = lib.nn.LinearCrossEntropyLoss(5, 4, out_features=out_features, bias=True,
                                      dtype=lib.float64, **kw)  # fmt: skip
    rows = 4 * math.prod(out_features)
    with lib.no_grad():
        m.linear.weight.copy_(w[:rows])
        m.linear.bias.copy_(b[:rows])
    return m


@case("linear_cross_entropy_module", X, T, LW, LB, W5[:4])
def _(lib, x, t, w, b, cw):
    m = linear_ce(lib, w, b, weight=cw, label_smoothing=0.1, ignore_index=2)
    loss = m(x, t)
    grads = lib.autograd.grad(loss, (m.linear.weight, m.linear.bias))
    return loss, grads, repr(m), sorted(m.state_dict()), m.reduction


@case(
    "linear_cross_entropy_module_kd",
    X,
    np.array([[0, 3, 1], [2, 2, 0], [1, 0, 3], [3, 3, 3]]),
    LW,
    LB,
)
def _(lib, x, t, w, b):
    m = linear_ce(lib, w, b, out_features=(3,), reduction="none")
    return m(x, t), tuple(m.linear.weight.shape)


@case("linear_cross_entropy_default_ignore_index", X, LW[:4], np.array([1, -100, 3, 0]))
def _(lib, x, w, t):
    # ignore_index=None: -100 for class-index targets
    lce = lib.nn.functional.linear_cross_entropy
    return lce(x, w, t), lce(x, w, t, reduction="none")


@case("linear_cross_entropy_checks", X, LW[:4], T, P[:, :4])
def _(lib, x, w, t, q):
    lce = lib.nn.functional.linear_cross_entropy
    calls = (lambda: lce(x.reshape(2, 2, 5), w, t[:2]), lambda: lce(x, w[0], t),
             lambda: lce(x[:, :4], w, t), lambda: lce(x, w, t, linear_bias=w[0]),
             lambda: lce(x[0], w.reshape(2, 2, 5), t[0]),
             lambda: lce(x, w, q, ignore_index=-100))  # fmt: skip
    out = []
    for call in calls:
        try:
            call()
            out.append("no error")
        except Exception as e:  # noqa: BLE001 -- the exception type is the result compared
            out.append("RuntimeError" if isinstance(e, RuntimeError) else type(e).__name__)
    kd = lce(x, w.reshape(2, 2, 5), (t.reshape(4, 1) % 2).expand(4, 2), reduction="none")
    return out, lce(x, w, q), lce(x[0], w, t[0]), kd


@case("linear_cross_entropy_module_bad_weight", X)
def _(lib, x):
    return lib.nn.LinearCrossEntropyLoss(5, 4, weight=lib.ones(3))


@case("linear_cross_entropy_module_bad_label_smoothing", X)
def _(lib, x):
    return lib.nn.LinearCrossEntropyLoss(5, 4, label_smoothing=1.5)


@case("linear_cross_entropy_options", X, T, LW[:4])
def _(lib, x, t, w):
    o = lib.nn.LinearCrossEntropyOptions(batch_chunk_size=2, chunking_method="aspect_ratio:2")
    lce = lib.nn.functional.linear_cross_entropy
    return repr(o).replace("torch.", "").replace("kiln.", ""), lce(x, w, t, options=o)


@case("linear_cross_entropy_options_bad", X)
def _(lib, x):
    return lib.nn.LinearCrossEntropyOptions(chunking_method="rows")


SCENARIOS.eager_only["legacy_flags_warning"] = (
    "kn.compile gives a traced call's warnings at each call, outside the function"
)
SCENARIOS.eager_only["ctc_negative_input_length"] = (
    "torch's check reads the lengths' values; traced lengths have none when they are traced"
)
SCENARIOS.eager_only.update(
    dict.fromkeys(
        ("linear_cross_entropy_module", "linear_cross_entropy_module_kd"),
        "the module's parameters are set from traced values when it is made",
    )
)


# -- integer and complex inputs: torch's refusals (one scenario each) ------------------------


INTS = np.array([[1, 2, 3], [4, 5, 6]])
INTS2 = np.array([[1, 0, 3], [2, 5, 1]])
CPLX = (INTS + 1j * INTS2).astype(np.complex64)
_REFUSED = {
    "mse_int": lambda f, i, j, z: f.mse_loss(i, j, reduction="none"),
    "mse_complex": lambda f, i, j, z: f.mse_loss(z, z),
    "smooth_l1_int": lambda f, i, j, z: f.smooth_l1_loss(i, j),
    "huber_int": lambda f, i, j, z: f.huber_loss(i, j),
    "l1_int_mean": lambda f, i, j, z: f.l1_loss(i, j),
    "kl_div_int_input": lambda f, i, j, z: f.kl_div(i, j, reduction="sum"),
    "kl_div_int_target": lambda f, i, j, z: f.kl_div(i.float(), j, reduction="none"),
    "nll_int_input": lambda f, i, j, z: f.nll_loss(i, j[:, 0]),
    "ce_int_input": lambda f, i, j, z: f.cross_entropy(i, j[:, 0]),
    "bcel_int_target": lambda f, i, j, z: f.binary_cross_entropy_with_logits(i.float(), j),
    "bce_int_target": lambda f, i, j, z: f.binary_cross_entropy(i.float() / 10, j),
    "soft_margin_int": lambda f, i, j, z: f.soft_margin_loss(i, j),
    "gaussian_nll_int": lambda f, i, j, z: f.gaussian_nll_loss(i, j, j + 1),
    "multilabel_soft_margin_int": lambda f, i, j, z: f.multilabel_soft_margin_loss(i, j),
}
for _name, _fn in _REFUSED.items():
    case(f"refused_{_name}", INTS, INTS2, CPLX)(
        lambda lib, i, j, z, fn=_fn: fn(lib.nn.functional, i, j, z)
    )


@case("float_input_int_target", INTS.astype(f32), INTS2)
def _(lib, x, t):
    # a float input takes an integer target where the loss's result is float
    f = lib.nn.functional
    return (f.mse_loss(x, t, reduction="none"), f.l1_loss(x, t, reduction="none"),
            f.soft_margin_loss(x, t, reduction="none"), f.poisson_nll_loss(x, t, reduction="none"),
            f.hinge_embedding_loss(x, t, reduction="none"), f.multilabel_soft_margin_loss(x, t),
            f.margin_ranking_loss(x[0], x[1], t[0]), f.l1_loss(x.double(), t))  # fmt: skip


# -- second order (PyTorch's gradgrad checks of the criterion tests) ------------------------


def gradgrad(lib, out, *xs):
    """`out`, its gradients by `xs` (create_graph), and the gradients of their squares' sum."""
    gs = lib.autograd.grad(out.sum(), xs, create_graph=True)
    return out, gs, lib.autograd.grad(sum((g * g).sum() for g in gs), xs, allow_unused=True)


@case("gradgrad_bce_input_and_target", Leaf.of(P), Leaf.of(P[::-1].copy()))
def _(lib, p, y):
    # the mixed derivative (input, target) once, as PyTorch's formulas give it
    return gradgrad(lib, lib.nn.functional.binary_cross_entropy(p, y, reduction="none"), p, y)


@case("gradgrad_bcel_input_and_target", Leaf.of(X), Leaf.of(P), W5)
def _(lib, x, y, w):
    bcel = lib.nn.functional.binary_cross_entropy_with_logits
    return gradgrad(lib, bcel(x, y, w, pos_weight=w, reduction="none"), x, y)


@case("gradgrad_likelihoods", Leaf.of(X), Leaf.of(P), Leaf.of(Y))
def _(lib, x, p, y):
    f = lib.nn.functional
    out = (
        f.kl_div(x, p, reduction="none")
        + f.kl_div(x, y, reduction="none", log_target=True)
        + f.poisson_nll_loss(x, p, reduction="none")
        + f.poisson_nll_loss(p, y.abs() * 3, log_input=False, full=True, reduction="none")
        + f.gaussian_nll_loss(x, y, p, reduction="none")
        + f.cross_entropy(x, p, reduction="none", label_smoothing=0.2).unsqueeze(1)
    )
    return gradgrad(lib, out, x, p)


@case("gradgrad_margins", Leaf.of(X), Leaf.of(Y), Leaf.of(P), SIGN, B)
def _(lib, x, y, p, s, b):
    f = lib.nn.functional
    out = (f.margin_ranking_loss(x[:, 0], y[:, 0], s, reduction="none") * x[:, 1]
           + f.cosine_embedding_loss(x, y, s, reduction="none")
           + f.triplet_margin_loss(x, y, p, reduction="none")
           + f.triplet_margin_loss(x, y, p, p=1, swap=True, reduction="none") * x.sum(1)
           + f.multilabel_soft_margin_loss(x, b, reduction="none")
           + f.soft_margin_loss(x, b * 2 - 1, reduction="none").sum(1)
           + (f.hinge_embedding_loss(x, b * 2 - 1, reduction="none") * x).sum(1)
           + (f.l1_loss(x, y, reduction="none") * x).sum(1)
           + (f.smooth_l1_loss(x, y, beta=0.0, reduction="none") * y).sum(1))  # fmt: skip
    return gradgrad(lib, out, x, y)


@case("half_precision_means", X, Y, P, B, T, SIGN)
def _(lib, x, y, p, b, t, s):
    # each loss's "mean" of float16 and bfloat16 inputs (nll_loss's: test_port_pt_losses.py)
    f = lib.nn.functional
    out = []
    for d in (lib.float16, lib.bfloat16):
        x, y, p, b, s = (v.to(d) for v in (x, y, p, b, s))
        out += [(v.float(), v.dtype) for v in (
            f.mse_loss(x, y), f.l1_loss(x, y), f.smooth_l1_loss(x, y), f.huber_loss(x, y),
            f.binary_cross_entropy(p, b), f.binary_cross_entropy_with_logits(x, b),
            f.kl_div(x, p, reduction="batchmean"), f.soft_margin_loss(x, y),
            f.cross_entropy(x, t, label_smoothing=0.1), f.poisson_nll_loss(x, p),
            f.gaussian_nll_loss(x, y, p), f.margin_ranking_loss(x[:, 0], y[:, 0], s),
            f.hinge_embedding_loss(x, b), f.multilabel_soft_margin_loss(x, b),
            f.cosine_embedding_loss(x, y, s), f.triplet_margin_loss(x, y, p),
            f.cross_entropy(x, p))]  # fmt: skip
    return out


@case("empty_batch_every_loss", np.zeros((0, 5)), np.zeros(0, np.int64))
def _(lib, e, te):
    f = lib.nn.functional
    out = [f.kl_div(e, e, reduction="batchmean")]
    for red in ("mean", "sum", "none"):
        out += [f.mse_loss(e, e, reduction=red), f.l1_loss(e, e, reduction=red),
                f.smooth_l1_loss(e, e, reduction=red), f.huber_loss(e, e, reduction=red),
                f.binary_cross_entropy(e, e, reduction=red),
                f.binary_cross_entropy_with_logits(e, e, reduction=red),
                f.kl_div(e, e, reduction=red), f.soft_margin_loss(e, e, reduction=red),
                f.cross_entropy(e, te, reduction=red), f.cross_entropy(e, e, reduction=red),
                f.cross_entropy(e, te, label_smoothing=0.1, reduction=red),
                f.nll_loss(e, te, reduction=red), f.poisson_nll_loss(e, e, reduction=red),
                f.gaussian_nll_loss(e, e, e + 1, reduction=red),
                f.margin_ranking_loss(e[:, 0], e[:, 0], e[:, 0], reduction=red),
                f.hinge_embedding_loss(e, e, reduction=red),
                f.multilabel_soft_margin_loss(e, e, reduction=red),
                f.cosine_embedding_loss(e, e, e[:, 0], reduction=red),
                f.triplet_margin_loss(e, e, e, reduction=red)]  # fmt: skip
    return out


# -- the test -------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", SCENARIOS.names())
def test_matches_torch(torch, name, mode):
    SCENARIOS.check(torch, name, mode)
