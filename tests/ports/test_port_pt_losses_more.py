"""PyTorch's own loss tests (test_nn.py, common_nn.py's criterion tests and reference
formulas) as an oracle, the losses besides the class losses (test_port_pt_losses.py has those):
smooth_l1/huber, poisson and gaussian NLL, the margin and embedding losses, triplet losses and
CTC. Each behaviour is a scenario that pt_oracle.py runs on torch and on kiln, eagerly and
under `kn.compile`, comparing values, gradients, dtypes, shapes and exception types.

Expected values: torch 2.13 (the oracle).
"""

import warnings

import numpy as np
import pytest
from pt_oracle import MODES, Leaf, Scenarios, assert_same

import kiln as kn

nan, inf = float("nan"), float("inf")
f32, f64 = np.float32, np.float64
RNG = np.random.default_rng(1)

A = RNG.standard_normal((4, 5))
B = RNG.standard_normal((4, 5))
C = RNG.standard_normal((4, 5))
SIGN = np.array([1.0, -1.0, -1.0, 1.0])
SIGN20 = np.where(RNG.uniform(size=(4, 5)) > 0.5, 1.0, -1.0)
T = np.array([1, 0, 4, 2], np.int64)
W5 = RNG.uniform(0.5, 2, 5)
LABELS = np.array([[3, 0, -1, 1, 2], [1, -1, 0, 0, 4], [0, 1, 2, 3, 4], [-1, 1, 2, 0, 0]], np.int64)
MULTI = (RNG.uniform(size=(4, 5)) > 0.5).astype(f64)

SCENARIOS = Scenarios()
case = SCENARIOS.case


def grads(lib, out, *xs, create_graph=False):
    """`out`'s values and the gradients of its sum (of each of a tuple's) by `xs`."""
    outs = out if isinstance(out, (tuple, list)) else (out,)
    total = sum(o.sum() for o in outs)
    return out, lib.autograd.grad(total, xs, create_graph=create_graph)


def grad2(lib, out, x):
    """First and second order: d(sum out)/dx, then d(sum (dx**2))/dx."""
    (g,) = lib.autograd.grad(out.sum(), x, create_graph=True)
    return out, g, lib.autograd.grad((g * g).sum(), x)


def quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


# -- smooth_l1 / huber ----------------------------------------------------------------------


D = np.array([0.0, 0.3, -0.3, 1.0, -1.0, 2.5, -4.0, 1e-3])


@case("smooth_l1_betas", Leaf.of(D), np.zeros(8))
def _(lib, x, y):
    sl1 = lib.nn.functional.smooth_l1_loss
    out = (sl1(x, y, reduction="none"), sl1(x, y, beta=0.0, reduction="none"),
           sl1(x, y, beta=0.5), sl1(x, y, beta=2.0, reduction="sum"))  # fmt: skip
    return grads(lib, out, x)


@case("huber_deltas_weight", Leaf.of(D), Leaf.of(D[::-1] * 0.5), np.arange(8.0))
def _(lib, x, y, w):
    hub = lib.nn.functional.huber_loss
    out = (
        hub(x, y, reduction="none"),
        hub(x, y, delta=0.5),
        hub(x, y, delta=2.0, weight=w),
        hub(x, y, reduction="sum", weight=w),
        hub(x, y, delta=1e-3, reduction="none"),
    )
    return grads(lib, out, x, y)


@case("smooth_l1_negative_beta", D, D)
def _(lib, x, y):
    return lib.nn.functional.smooth_l1_loss(x, y, beta=-1.0)


@case("huber_zero_delta", D, D)
def _(lib, x, y):
    return lib.nn.functional.huber_loss(x, y, delta=0.0)


@case("huber_weight_wrong_size", D, D, np.ones(3))
def _(lib, x, y, w):
    return lib.nn.functional.huber_loss(x, y, weight=w)


@case("smooth_huber_double_backward", Leaf.of(D), D[::-1].copy())
def _(lib, x, y):
    f = lib.nn.functional
    return grad2(lib, f.smooth_l1_loss(x, y, beta=0.5) * x.sum() + f.huber_loss(x, y, delta=2.0), x)


@case("smooth_huber_dtypes", D.astype(f32), D.astype(np.float16))
def _(lib, x, h):
    f = lib.nn.functional
    b = f.huber_loss(x.bfloat16(), x.flip(0).bfloat16(), reduction="none")
    return (f.smooth_l1_loss(h, h.flip(0), reduction="none"), f.huber_loss(h, h.flip(0)),
            b.float(), b.dtype, f.smooth_l1_loss(x, x.double()))  # fmt: skip


@case("smooth_huber_modules", D, D[::-1].copy())
def _(lib, x, y):
    nn = lib.nn
    return (nn.SmoothL1Loss(beta=0.5)(x, y), nn.HuberLoss(delta=0.5, reduction="sum")(x, y),
            quiet(nn.SmoothL1Loss, size_average=False)(x, y))  # fmt: skip


# -- poisson / gaussian NLL -----------------------------------------------------------------


RATES = RNG.uniform(0.1, 3, (3, 4))
COUNTS = np.array([[0, 1, 2, 5], [3, 0, 0, 1], [7, 2, 1, 0]], f64)


@case("poisson_nll_forms", Leaf.of(np.log(RATES)), Leaf.of(RATES), Leaf.of(COUNTS))
def _(lib, logx, x, y):
    pnll = lib.nn.functional.poisson_nll_loss
    out = (pnll(logx, y), pnll(logx, y, full=True, reduction="none"),
           pnll(x, y, log_input=False, reduction="sum"),
           pnll(x, y, log_input=False, full=True, eps=0.5, reduction="none"),
           pnll(x * 0, y, log_input=False, reduction="none"))  # fmt: skip
    return grads(lib, out, logx, x, y)


@case("poisson_nll_full_small_targets", Leaf.of(np.zeros(4)), np.array([0.0, 0.5, 1.0, 1.5]))
def _(lib, x, y):
    # Stirling's term only where the target is above 1
    return grads(lib, lib.nn.functional.poisson_nll_loss(x, y, full=True, reduction="none"), x)


@case("poisson_nll_module_and_legacy", np.log(RATES), COUNTS)
def _(lib, x, y):
    nn = lib.nn
    return (nn.PoissonNLLLoss(log_input=True, full=True)(x, y),
            quiet(nn.PoissonNLLLoss, reduce=False)(x, y),
            quiet(lib.nn.functional.poisson_nll_loss, x, y, size_average=False))  # fmt: skip


@case("poisson_nll_bad_reduction", RATES, COUNTS)
def _(lib, x, y):
    return lib.nn.functional.poisson_nll_loss(x, y, reduction="avg")


@case("gaussian_nll_var_shapes", Leaf.of(A), Leaf.of(B), Leaf.of(np.abs(C) + 0.1))
def _(lib, x, y, v):
    g = lib.nn.functional.gaussian_nll_loss
    out = (g(x, y, v), g(x, y, v[:, :1], reduction="none"), g(x, y, v[:, 0], reduction="sum"),
           g(x, y, v, full=True, reduction="none"), g(x[0], y[0], v[0, :1]))  # fmt: skip
    return grads(lib, out, x, y, v)


@case("gaussian_nll_eps_clamp", Leaf.of(A[0]), B[0], Leaf.of(np.array([0, 1e-8, 1e-3, 1, 2.0])))
def _(lib, x, y, v):
    g = lib.nn.functional.gaussian_nll_loss
    return grads(lib, (g(x, y, v, reduction="none"), g(x, y, v, eps=1e-2, reduction="none")), x, v)


@case("gaussian_nll_float_var", Leaf.of(A), B)
def _(lib, x, y):
    g = lib.nn.functional.gaussian_nll_loss
    return grads(lib, (g(x, y, 0.5), g(x, y, 2.0, full=True, reduction="none")), x)


@case("gaussian_nll_negative_var", A, B, -np.abs(C))
def _(lib, x, y, v):
    return lib.nn.functional.gaussian_nll_loss(x, y, v)


@case("gaussian_nll_negative_float_var", A, B)
def _(lib, x, y):
    return lib.nn.functional.gaussian_nll_loss(x, y, -1.0)


@case("gaussian_nll_var_wrong_size", A, B, np.abs(C[:, :3]))
def _(lib, x, y, v):
    return lib.nn.functional.gaussian_nll_loss(x, y, v)


@case("gaussian_nll_bad_reduction", A, B, np.abs(C))
def _(lib, x, y, v):
    return lib.nn.functional.gaussian_nll_loss(x, y, v, reduction="avg")


@case("gaussian_nll_broadcast_target", Leaf.of(A), B[:1], np.abs(C) + 0.1)
def _(lib, x, y, v):
    # a target of fewer rows broadcasts (PyTorch's homoscedastic/broadcast cases)
    return grads(lib, lib.nn.functional.gaussian_nll_loss(x, y, v, reduction="none"), x)


@case(
    "gaussian_nll_var_one_inner_dim",
    Leaf.of(A.reshape(2, 2, 5)),
    B.reshape(2, 2, 5),
    Leaf.of(np.abs(C[:2, None, :]) + 0.1),
)
def _(lib, x, y, v):
    # var (2, 1, 5) of an input (2, 2, 5): one mismatched dim where var is 1
    g = lib.nn.functional.gaussian_nll_loss
    return grads(lib, g(x, y, v, reduction="none"), x, v)


@case(
    "gaussian_nll_var_two_mismatched_dims",
    A.reshape(2, 2, 5),
    B.reshape(2, 2, 5),
    np.abs(C[:2, :1, None]),
)
def _(lib, x, y, v):
    return lib.nn.functional.gaussian_nll_loss(x, y, v)


@case("gaussian_nll_module", A, B, np.abs(C) + 0.1)
def _(lib, x, y, v):
    return lib.nn.GaussianNLLLoss(full=True, eps=1e-3, reduction="sum")(x, y, v)


# -- margin losses --------------------------------------------------------------------------


@case("margin_ranking", Leaf.of(A[:, 0]), Leaf.of(B[:, 0]), SIGN)
def _(lib, x1, x2, y):
    mr = lib.nn.functional.margin_ranking_loss
    out = (mr(x1, x2, y), mr(x1, x2, y, margin=0.5, reduction="none"),
           mr(x1, x2, y, margin=-0.2, reduction="sum"))  # fmt: skip
    return grads(lib, out, x1, x2)


@case("margin_ranking_broadcast_and_2d", Leaf.of(A), B, SIGN20)
def _(lib, x1, x2, y):
    mr = lib.nn.functional.margin_ranking_loss
    return grads(lib, (mr(x1, x2, y, 0.1), mr(x1, x2[0], y, reduction="none")), x1)


@case("margin_ranking_module_legacy", A[:, 0], B[:, 0], SIGN)
def _(lib, x1, x2, y):
    nn = lib.nn
    return (nn.MarginRankingLoss(0.3)(x1, x2, y),
            quiet(nn.MarginRankingLoss, size_average=False)(x1, x2, y))  # fmt: skip


@case("hinge_embedding", Leaf.of(A), SIGN20, np.array([1.0, -1.0, 0.0, 2.0, -1.0]))
def _(lib, x, y, odd):
    he = lib.nn.functional.hinge_embedding_loss
    out = (he(x, y), he(x, y, margin=0.5, reduction="none"), he(x, y, 2.0, reduction="sum"),
           he(x[0], odd, reduction="none"))  # fmt: skip
    return grads(lib, out, x)


@case("hinge_embedding_0d_and_empty", np.array(0.3), np.array(-1.0), np.zeros((0, 2)))
def _(lib, x, y, e):
    he = lib.nn.functional.hinge_embedding_loss
    return he(x, y), he(x, y, reduction="none"), he(e, e), he(e, e, reduction="sum")


@case("soft_margin", Leaf.of(A * 20), SIGN20)
def _(lib, x, y):
    sm = lib.nn.functional.soft_margin_loss
    return grads(lib, (sm(x, y), sm(x, y, reduction="none"), sm(x, y, reduction="sum")), x)


@case(
    "soft_margin_overflow_float32",
    Leaf.of(np.array([100, -100, 50, -90], f32)),
    np.array([-1, 1, 1, 1], f32),
)
def _(lib, x, y):
    # PyTorch's terms, log1p(exp(-x y)): exp overflows past 88 in float32 (inf, NaN gradient)
    return grads(lib, lib.nn.functional.soft_margin_loss(x, y, reduction="none"), x)


@case("soft_margin_double_backward", Leaf.of(A), SIGN20)
def _(lib, x, y):
    return grad2(lib, lib.nn.functional.soft_margin_loss(x, y, reduction="none"), x)


@case("multilabel_soft_margin", Leaf.of(A), Leaf.of(MULTI), W5)
def _(lib, x, y, w):
    mlsm = lib.nn.functional.multilabel_soft_margin_loss
    out = (mlsm(x, y), mlsm(x, y, w, reduction="none"), mlsm(x, y, w, reduction="sum"),
           mlsm(x * 100, y, reduction="none"))  # fmt: skip
    return grads(lib, out, x, y)


@case("multilabel_soft_margin_1d_and_module", A[0], MULTI[0], W5)
def _(lib, x, y, w):
    f = lib.nn.functional
    return (f.multilabel_soft_margin_loss(x, y, reduction="none"),
            lib.nn.MultiLabelSoftMarginLoss(w)(x.unsqueeze(0), y.unsqueeze(0)))  # fmt: skip


@case("multilabel_soft_margin_shape_mismatch", A, MULTI[:, :3])
def _(lib, x, y):
    return lib.nn.functional.multilabel_soft_margin_loss(x, y)


@case("multi_margin_p_margin_weight", Leaf.of(A), T, W5)
def _(lib, x, t, w):
    mm = lib.nn.functional.multi_margin_loss
    out = (mm(x, t), mm(x, t, p=2, reduction="none"), mm(x, t, margin=0.5, weight=w),
           mm(x, t, p=2, margin=2.0, weight=w, reduction="sum"))  # fmt: skip
    return grads(lib, out, x)


@case("multi_margin_1d_and_0d", Leaf.of(A[0]), np.array(3), Leaf.of(np.array(0.5)), np.array(0))
def _(lib, x, t, x0, t0):
    mm = lib.nn.functional.multi_margin_loss
    out = (mm(x, t), mm(x, t, reduction="none"), mm(x0, t0), mm(x0, t0, reduction="none"))
    return grads(lib, out, x, x0)


@case("multi_margin_bad_p", A, T)
def _(lib, x, t):
    return lib.nn.functional.multi_margin_loss(x, t, p=3)


@case("multi_margin_int32_target", A, T.astype(np.int32))
def _(lib, x, t):
    return lib.nn.functional.multi_margin_loss(x, t)


@case("multi_margin_target_mismatch", A, T[:3])
def _(lib, x, t):
    return lib.nn.functional.multi_margin_loss(x, t)


@case("multi_margin_weight_wrong_size", A, T, W5[:3])
def _(lib, x, t, w):
    return lib.nn.functional.multi_margin_loss(x, t, weight=w)


@case("multi_margin_target_out_of_range", A, np.array([1, 5, 0, 0]))
def _(lib, x, t):
    return lib.nn.functional.multi_margin_loss(x, t)


@case("multi_margin_module_and_empty", A, T, W5, np.zeros((0, 5)), np.zeros(0, np.int64))
def _(lib, x, t, w, e, te):
    mm = lib.nn.functional.multi_margin_loss
    # (an empty batch's mean and sum: torch's are uninitialised memory, not compared)
    return lib.nn.MultiMarginLoss(p=2, margin=0.7, weight=w)(x, t), mm(e, te, reduction="none")


@case("multilabel_margin", Leaf.of(A), LABELS)
def _(lib, x, y):
    mlm = lib.nn.functional.multilabel_margin_loss
    out = (mlm(x, y), mlm(x, y, reduction="none"), mlm(x, y, reduction="sum"),
           mlm(x[0], y[0], reduction="none"), mlm(x[3], y[3]))  # fmt: skip
    return grads(lib, out, x)


@case(
    "multilabel_margin_all_targets_and_repeats",
    Leaf.of(A[:2]),
    np.array([[0, 1, 2, 3, 4], [2, 2, 2, -1, 0]]),
)
def _(lib, x, y):
    return grads(lib, lib.nn.functional.multilabel_margin_loss(x, y, reduction="none"), x)


@case("multilabel_margin_shape_mismatch", A, LABELS[:, :3])
def _(lib, x, y):
    return lib.nn.functional.multilabel_margin_loss(x, y)


@case("multilabel_margin_int32_target", A, LABELS.astype(np.int32))
def _(lib, x, y):
    return lib.nn.functional.multilabel_margin_loss(x, y)


@case("multilabel_margin_empty_and_module", np.zeros((0, 5)), np.zeros((0, 5), np.int64), A, LABELS)
def _(lib, e, te, x, y):
    mlm = lib.nn.functional.multilabel_margin_loss
    # (an empty batch's mean and sum: torch's are uninitialised memory, not compared)
    return mlm(e, te, reduction="none"), lib.nn.MultiLabelMarginLoss(reduction="sum")(x, y)


# -- embedding / triplet losses -------------------------------------------------------------


@case("cosine_embedding", Leaf.of(A), Leaf.of(B), SIGN)
def _(lib, x1, x2, y):
    ce = lib.nn.functional.cosine_embedding_loss
    out = (ce(x1, x2, y), ce(x1, x2, y, margin=0.2, reduction="none"),
           ce(x1, x2, y, -0.5, reduction="sum"))  # fmt: skip
    return grads(lib, out, x1, x2)


@case("cosine_embedding_1d_and_zero_vector", Leaf.of(A[0]), Leaf.of(np.zeros(5)), np.array(1.0))
def _(lib, x1, x2, y):
    ce = lib.nn.functional.cosine_embedding_loss
    return grads(lib, (ce(x1, x1 * 2, y), ce(x1, x2, y, reduction="none")), x1, x2)


@case("cosine_embedding_shape_mismatch", A, B[:, :3], SIGN)
def _(lib, x1, x2, y):
    return lib.nn.functional.cosine_embedding_loss(x1, x2, y)


@case("cosine_embedding_3d_input", A.reshape(2, 2, 5), B.reshape(2, 2, 5), SIGN[:2])
def _(lib, x1, x2, y):
    return lib.nn.functional.cosine_embedding_loss(x1, x2, y)


@case("cosine_embedding_2d_target", A, B, SIGN20)
def _(lib, x1, x2, y):
    return lib.nn.functional.cosine_embedding_loss(x1, x2, y)


@case("cosine_embedding_0d_target_2d_inputs", A, B, np.array(1.0))
def _(lib, x1, x2, y):
    return lib.nn.functional.cosine_embedding_loss(x1, x2, y)


@case("cosine_embedding_target_mismatch", A, B, SIGN[:3])
def _(lib, x1, x2, y):
    return lib.nn.functional.cosine_embedding_loss(x1, x2, y)


@case("cosine_embedding_module", A, B, SIGN)
def _(lib, x1, x2, y):
    return lib.nn.CosineEmbeddingLoss(margin=0.1, reduction="none")(x1, x2, y)


@case("triplet_margin", Leaf.of(A), Leaf.of(B), Leaf.of(C))
def _(lib, a, p, n):
    tm = lib.nn.functional.triplet_margin_loss
    out = (
        tm(a, p, n),
        tm(a, p, n, margin=2.0, p=1, reduction="none"),
        tm(a, p, n, swap=True, reduction="sum"),
        tm(a, p, n, p=3.0, eps=1e-3, swap=True),
    )
    return grads(lib, out, a, p, n)


@case("triplet_margin_1d_and_equal", Leaf.of(A[0]), Leaf.of(B[0]), Leaf.of(A[0].copy()))
def _(lib, a, p, n):
    tm = lib.nn.functional.triplet_margin_loss
    return grads(lib, (tm(a, p, n), tm(a, p, n, reduction="none"), tm(a, a, n)), a, p, n)


@case("triplet_margin_dim_mismatch", A, B[0], C)
def _(lib, a, p, n):
    return lib.nn.functional.triplet_margin_loss(a, p, n)


@case("triplet_margin_bad_margin", A, B, C)
def _(lib, a, p, n):
    return lib.nn.functional.triplet_margin_loss(a, p, n, margin=-0.5)


@case("triplet_with_distance_dim_mismatch", A, B[0], C)
def _(lib, a, p, n):
    return lib.nn.functional.triplet_margin_with_distance_loss(a, p, n)


@case("triplet_margin_module", A, B, C)
def _(lib, a, p, n):
    nn = lib.nn
    return (nn.TripletMarginLoss(margin=0.5, p=1.0, swap=True)(a, p, n),
            quiet(nn.TripletMarginLoss, reduce=False)(a, p, n))  # fmt: skip


@case("triplet_margin_module_bad_margin", A, B, C)
def _(lib, a, p, n):
    return lib.nn.TripletMarginLoss(margin=0.0)(a, p, n)


@case("triplet_with_distance", Leaf.of(A), Leaf.of(B), Leaf.of(C))
def _(lib, a, p, n):
    f = lib.nn.functional
    tmd = f.triplet_margin_with_distance_loss
    cos = lambda u, v: 1.0 - f.cosine_similarity(u, v)  # noqa: E731
    out = (
        tmd(a, p, n),
        tmd(a, p, n, distance_function=cos, margin=0.5, reduction="none"),
        tmd(a, p, n, distance_function=lib.nn.PairwiseDistance(p=1), swap=True, reduction="sum"),
        lib.nn.TripletMarginWithDistanceLoss(distance_function=cos, swap=True)(a, p, n),
    )
    return grads(lib, out, a, p, n)


@case("triplet_with_distance_bad_margin", A, B, C)
def _(lib, a, p, n):
    return lib.nn.functional.triplet_margin_with_distance_loss(a, p, n, margin=-1.0)


@case("triplet_with_distance_bad_reduction", A, B, C)
def _(lib, a, p, n):
    return lib.nn.functional.triplet_margin_with_distance_loss(a, p, n, reduction="avg")


# -- ctc_loss -------------------------------------------------------------------------------


LOGITS = RNG.standard_normal((6, 3, 4))  # (T, N, C)
TARGETS = np.array([[1, 2, 2], [3, 1, 0], [2, 0, 0]], np.int64)  # padded (N, S)
IN_LENS = np.array([6, 5, 4], np.int64)
TGT_LENS = np.array([3, 2, 1], np.int64)


@case("ctc_reductions", Leaf.of(LOGITS), TARGETS, IN_LENS, TGT_LENS)
def _(lib, x, t, il, tl):
    lp = x.log_softmax(2)
    ctc = lib.nn.functional.ctc_loss
    out = (ctc(lp, t, il, tl), ctc(lp, t, il, tl, reduction="sum"),
           ctc(lp, t, il, tl, reduction="none"))  # fmt: skip
    return grads(lib, out, x)


@case("ctc_raw_log_probs_grad", Leaf.of(LOGITS), TARGETS, IN_LENS, TGT_LENS)
def _(lib, x, t, il, tl):
    # the gradient by the log-probabilities themselves (PyTorch's formula, not the chain rule's)
    return grads(lib, lib.nn.functional.ctc_loss(x, t, il, tl, reduction="sum"), x)


@case(
    "ctc_blank_not_zero",
    Leaf.of(LOGITS),
    np.array([[0, 1, 1], [2, 0, 3], [1, 1, 1]]),
    IN_LENS,
    TGT_LENS,
)
def _(lib, x, t, il, tl):
    lp = x.log_softmax(2)
    return grads(lib, lib.nn.functional.ctc_loss(lp, t, il, tl, blank=3, reduction="none"), x)


@case(
    "ctc_impossible_zero_infinity",
    Leaf.of(LOGITS[:3]),
    np.array([[1, 1, 1], [1, 2, 3], [2, 0, 0]]),
    np.array([3, 3, 2]),
    np.array([3, 3, 1]),
)
def _(lib, x, t, il, tl):
    # [1, 1, 1] needs 5 steps (blanks between repeats): infinite, or 0 with zero_infinity
    lp = x.log_softmax(2)
    ctc = lib.nn.functional.ctc_loss
    out = (ctc(lp, t, il, tl, reduction="none", zero_infinity=True),
           ctc(lp, t, il, tl, zero_infinity=True))  # fmt: skip
    return grads(lib, out, x), ctc(lp, t, il, tl, reduction="none")


@case(
    "ctc_impossible_nan_grad",
    Leaf.of(LOGITS[:3]),
    np.array([[1, 1, 1], [2, 0, 0]]),
    np.array([3, 2]),
    np.array([3, 1]),
)
def _(lib, x, t, il, tl):
    lp = x[:, :2].log_softmax(2)
    return grads(lib, lib.nn.functional.ctc_loss(lp, t, il, tl, reduction="sum"), x)


@case(
    "ctc_zero_target_length",
    Leaf.of(LOGITS),
    np.array([[1, 2], [0, 0], [3, 0]]),
    IN_LENS,
    np.array([2, 0, 1]),
)
def _(lib, x, t, il, tl):
    lp = x.log_softmax(2)
    ctc = lib.nn.functional.ctc_loss
    return grads(lib, (ctc(lp, t, il, tl), ctc(lp, t, il, tl, reduction="none")), x)


@case("ctc_unbatched", Leaf.of(LOGITS[:, 0]), TARGETS[0], np.array(6), np.array(3))
def _(lib, x, t, il, tl):
    lp = x.log_softmax(1)
    ctc = lib.nn.functional.ctc_loss
    return grads(lib, (ctc(lp, t, il, tl), ctc(lp, t, il, tl, reduction="none")), x)


@case("ctc_concatenated_targets_list_lengths", Leaf.of(LOGITS), np.array([1, 2, 2, 3, 1, 2]))
def _(lib, x, flat):
    # 1-D targets, one after another; lengths as Python lists (known when traced)
    ctc = lib.nn.functional.ctc_loss
    out = (ctc(x.log_softmax(2), flat, [6, 5, 4], [3, 2, 1], reduction="none"),
           ctc(x.log_softmax(2), flat[:3], [6, 5, 4], (3, 0, 0)))  # fmt: skip
    return grads(lib, out, x)


@case(
    "ctc_float32_int32_lengths",
    LOGITS.astype(f32),
    TARGETS.astype(np.int32),
    IN_LENS.astype(np.int32),
    TGT_LENS.astype(np.int32),
)
def _(lib, x, t, il, tl):
    return lib.nn.functional.ctc_loss(x.log_softmax(2), t, il, tl, reduction="none")


@case("ctc_module", LOGITS, TARGETS, IN_LENS, TGT_LENS)
def _(lib, x, t, il, tl):
    m = lib.nn.CTCLoss(blank=0, reduction="sum", zero_infinity=True)
    return m(x.log_softmax(2), t, il, tl)


@case("ctc_input_length_too_long", LOGITS, TARGETS, np.array([7, 5, 4]), TGT_LENS)
def _(lib, x, t, il, tl):
    return lib.nn.functional.ctc_loss(x.log_softmax(2), t, il, tl)


@case("ctc_empty_batch", np.zeros((3, 0, 4)), np.zeros((0, 2), np.int64), np.zeros(0, np.int64))
def _(lib, x, t, lengths):
    return lib.nn.functional.ctc_loss(x, t, lengths, lengths, reduction="none")


@case("ctc_bad_reduction", LOGITS, TARGETS, IN_LENS, TGT_LENS)
def _(lib, x, t, il, tl):
    return lib.nn.functional.ctc_loss(x.log_softmax(2), t, il, tl, reduction="avg")


SCENARIOS.eager_only.update(
    {
        "multilabel_soft_margin_1d_and_module": "a module built from a traced weight: its "
        "buffer is read when the module is made",
        "multi_margin_module_and_empty": "a module built from a traced weight: its buffer is "
        "read when the module is made",
        "gaussian_nll_negative_var": "torch's check reads var's values (torch.any(var < 0)); a "
        "traced var has none when it is traced",
        "ctc_input_length_too_long": "torch's check reads the lengths' values; traced lengths "
        "have none when they are traced",
    }
)


# -- the test -------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", SCENARIOS.names())
def test_matches_torch(torch, name, mode):
    SCENARIOS.check(torch, name, mode)


def test_ctc_concatenated_targets_and_list_lengths(torch):
    """Targets as one 1-D sequence and lengths as Python lists (eager: where each target
    starts depends on the lengths' values)."""
    flat = np.array([1, 2, 2, 3, 1, 2], np.int64)
    out = {}
    for lib in (torch, kn):
        x = lib.tensor(LOGITS, requires_grad=True)
        loss = lib.nn.functional.ctc_loss(x.log_softmax(2), lib.tensor(flat), [6, 5, 4], [3, 2, 1],
                                          reduction="none")  # fmt: skip
        out[lib] = (loss, lib.autograd.grad(loss.sum(), x))
    assert_same(out[kn], out[torch])
