"""Differences from PyTorch that tests/test_torch_opinfo.py listed as KNOWN and kiln now
answers as PyTorch does: dtypes (integer `addmm`, bool `addr`), edge inputs that crashed
(0-d index ops, empty softmax, zero norms, traced `linspace` bounds...) and argument forms.

Each case runs in graph mode (placeholders and `kn.function`), eagerly and under
`kn.compile`, and is compared with PyTorch (skipped without it); a hand-computed case of each
fix runs without PyTorch (the expected values are worked out in the comments).
"""

from __future__ import annotations

import numpy as np
import pytest

import kiln as kn

MODES = ["graph", "eager", "compiled"]
F = kn.nn.functional


def run(mode, fn, *arrays):
    """fn(kn, *tensors) as a NumPy array (or a tuple of them), in `mode`."""
    if mode == "graph":
        with kn.Graph().as_default():
            xs = [kn.placeholder(a.dtype, a.shape, f"x{i}") for i, a in enumerate(arrays)]
            f = kn.function(xs, fn(kn, *xs))
        out = f(*arrays)
    else:
        call = (lambda *ts: fn(kn, *ts)) if mode == "eager" else kn.compile(lambda *ts: fn(kn, *ts))
        out = call(*(kn.tensor(a) for a in arrays))
    if isinstance(out, (tuple, list)):
        return tuple(np.asarray(o.numpy() if hasattr(o, "numpy") else o) for o in out)
    return np.asarray(out.numpy() if hasattr(out, "numpy") else out)


def torch_result(fn, *arrays):
    torch = pytest.importorskip("torch")
    out = fn(torch, *(torch.from_numpy(np.array(a)) for a in arrays))

    def host(o):
        if o.dtype == torch.bfloat16:  # NumPy has no bfloat16: through float32, exactly
            return o.float().numpy().astype(kn.bfloat16)
        return o.numpy()

    if isinstance(out, (tuple, list)):
        return tuple(host(o) for o in out)
    return host(out)


def assert_same(got, want, rtol=1e-6):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            assert_same(g, w, rtol)
        return
    assert (got.dtype, got.shape) == (want.dtype, want.shape), (got, want)
    if want.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-6)
    else:
        np.testing.assert_array_equal(got, want)


R = np.random.default_rng(0)
A23 = np.arange(6, dtype=np.int64).reshape(2, 3) - 2
B32 = np.arange(6, dtype=np.int64).reshape(3, 2) - 1
BOOLS = np.array([True, False, True])

# id -> (fn(lib, *tensors), arrays); lib is torch or kiln
CASES = {
    # integer products with float beta/alpha: the coefficients truncate, the dtype stays
    "addmm-int64": (
        lambda t, c, a, b: t.addmm(c, a, b, beta=1.7, alpha=2.9),
        (np.full((2, 2), 5, np.int64), A23, B32),
    ),
    "addmm-int64-small": (
        lambda t, c, a, b: t.addmm(c, a, b, beta=0.2, alpha=0.6),
        (np.full((2, 2), 5, np.int64), A23, B32),
    ),
    "addmv-int64": (
        lambda t, c, a, v: t.addmv(c, a, v, beta=2, alpha=3.5),
        (np.ones(2, np.int64), A23, np.array([1, 2, 3], np.int64)),
    ),
    "baddbmm-int64": (
        lambda t, c, a, b: t.baddbmm(c, a, b, beta=1.5, alpha=2.5),
        (np.ones((1, 2, 2), np.int64), A23[None], B32[None]),
    ),
    "addr-bool": (
        lambda t, c, a, b: t.addr(c, a, b, beta=3, alpha=2),
        (np.eye(2, 3, dtype=bool), BOOLS[:2], BOOLS),
    ),
    "addr-bool-beta0": (
        lambda t, c, a, b: t.addr(c, a, b, beta=0),
        (np.eye(2, 3, dtype=bool), BOOLS[:2], BOOLS),
    ),
    "sum_to_size-bool-0d": (lambda t, x: x.sum_to_size(()), (np.array(True),)),
    "sum_to_size-bool": (lambda t, x: x.sum_to_size(1, 3), (np.eye(2, 3, dtype=bool),)),
    # 0-d inputs of the index ops: a vector of one element
    "index_add-0d": (
        lambda t, x, i, s: t.index_add(x, 0, i, s, alpha=2),
        (np.array(1.5, np.float32), np.array([0]), np.array(2.0, np.float32)),
    ),
    "index_copy-0d": (
        lambda t, x, i, s: t.index_copy(x, 0, i, s),
        (np.array(1.5, np.float32), np.array([0]), np.array(2.0, np.float32)),
    ),
    "index_fill-0d": (
        lambda t, x, i: t.index_fill(x, 0, i, -1),
        (np.array(4, np.int64), np.array([0])),
    ),
    # p-norms of p = 0 (the count of nonzeros) and p = -inf (the least magnitude)
    "normalize-p0": (
        lambda t, x: t.nn.functional.normalize(x, p=0.0, dim=-1),
        (np.array([[1.0, 0.0, -2.0], [0.0, 0.0, 0.0]], np.float32),),
    ),
    "normalize-p-inf": (
        lambda t, x: t.nn.functional.normalize(x, p=-np.inf, dim=-1),
        (np.array([[1.0, 3.0, -2.0], [0.0, 0.5, 0.0]], np.float32),),
    ),
    # empty inputs of the softmaxes: an empty result
    "softmax-empty": (lambda t, x: t.softmax(x, -1), (np.zeros((5, 0, 0), np.float32),)),
    "log_softmax-empty": (lambda t, x: t.log_softmax(x, 1), (np.zeros((2, 0), np.float32),)),
    "softmin-empty": (
        lambda t, x: t.nn.functional.softmin(x, 0, dtype=t.float64),
        (np.zeros((0, 3), np.float32),),
    ),
    # 0-d (one sample of one class) inputs of the margin losses
    "multi_margin_loss-0d": (
        lambda t, x, y: t.nn.functional.multi_margin_loss(x, y),
        (np.array(-3.5, np.float32), np.array(0)),
    ),
    "multilabel_margin_loss-0d": (
        lambda t, x, y: t.nn.functional.multilabel_margin_loss(x, y),
        (np.array(5.0, np.float32), np.array(0)),
    ),
    # traced bounds of linspace and logspace (graph ops under kn.compile)
    "linspace-tensor": (
        lambda t, a, b: t.linspace(a, b, 7),
        (np.array(-2.0, np.float32), np.array(3.0, np.float32)),
    ),
    "linspace-tensor-int": (
        lambda t, a, b: t.linspace(a, b, 5, dtype=t.int64),
        (np.array(-2.0, np.float32), np.array(3.0, np.float32)),
    ),
    "linspace-tensor-one": (
        lambda t, a, b: t.linspace(a, b, 1),
        (np.array(-2.0, np.float32), np.array(3.0, np.float32)),
    ),
    "logspace-tensor": (
        lambda t, a, b: t.logspace(a, b, 4, base=2.0),
        (np.array(-1.0, np.float32), np.array(2.0, np.float32)),
    ),
    # a 1-D empty tensor is left out of cat, whatever the others' shapes (its dtype counts)
    "cat-empty-1d": (
        lambda t, a, b: t.cat([a, b], dim=1),
        (np.zeros(0, np.float64), np.ones((2, 2), np.float32)),
    ),
    "cat-all-empty": (
        lambda t, a, b: t.cat([a, b]),
        (np.zeros(0, np.float32), np.zeros(0, np.float32)),
    ),
    # torch.lu's infos of non-square matrices: the first zero pivot of U
    "lu-infos-wide": (
        lambda t, a: t.lu(a, get_infos=True),
        (np.array([[0.0, 1.0, 2.0], [0.0, 0.0, 3.0]], np.float32),),
    ),
    "lu-infos-tall": (
        lambda t, a: t.lu(a, get_infos=True),
        (np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 7.0]], np.float32),),
    ),
    # the mask and the input broadcast together (out of place)
    "masked_fill-wider-mask": (
        lambda t, x, k: t.masked_fill(x, k, -1.5),
        (np.arange(3, dtype=np.float32), np.array([[True, False, True], [False, True, False]])),
    ),
    "masked_scatter-wider-mask": (
        lambda t, x, k, s: t.masked_scatter(x, k, s),
        (
            np.arange(3, dtype=np.int64),
            np.array([[True, False, True], [False, True, False]]),
            np.array([10, 20, 30, 40], np.int64),
        ),
    ),
    # negative widths crop (circular: crop, then wrap; replicate: clamped positions)
    "pad-circular-negative": (
        lambda t, x: t.nn.functional.pad(x, (-1, 2, 1, -1), "circular"),
        (np.arange(12, dtype=np.float32).reshape(1, 1, 3, 4),),
    ),
    "pad-replicate-negative": (
        lambda t, x: t.nn.functional.pad(x, (-4, 5, 2, -3), "replicate"),
        (np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4),),
    ),
    "take_along_dim-negative": (
        lambda t, x, i: t.take_along_dim(x, i, 1),
        (np.arange(6, dtype=np.float32).reshape(2, 3), np.array([[-1, 0], [-3, -2]])),
    ),
    # std_mean(x, unbiased) and var_mean(x, unbiased), the bool positional
    "std_mean-unbiased": (
        lambda t, x: t.std_mean(x, False),
        (np.arange(6, dtype=np.float32).reshape(2, 3),),
    ),
    "var_mean-unbiased": (
        lambda t, x: t.var_mean(x, True),
        (np.arange(6, dtype=np.float32).reshape(2, 3),),
    ),
    # tensor tolerances of pinv (broadcast over the batch)
    "pinv-rtol-tensor": (
        lambda t, a, r: t.linalg.pinv(a, rtol=r),
        (np.array([[2.0, 0.0, 0.0], [0.0, 1e-3, 0.0]], np.float32), np.array(0.01, np.float32)),
    ),
    "pinv-atol-tensor-batch": (
        lambda t, a, r: t.linalg.pinv(a, atol=r),
        (
            np.array([[2.0, 0.0, 0.0], [0.0, 1e-3, 0.0]], np.float32),
            np.array([0.5, 0.0], np.float32),
        ),
    ),
    "pinv-hermitian-rtol-tensor": (
        lambda t, a, r: t.linalg.pinv(a, rtol=r, hermitian=True),
        (np.array([[2.0, 0.0], [0.0, -0.5]], np.float32), np.array(0.1, np.float32)),
    ),
    "pinv-empty-rtol-tensor": (
        lambda t, a, r: t.linalg.pinv(a, rtol=r),
        (np.zeros((0, 0), np.float32), np.array(1.0, np.float32)),
    ),
    # pooling argument forms: stride=() is the kernel size, a negative divisor divides
    "avg_pool2d-empty-stride": (
        lambda t, x: t.nn.functional.avg_pool2d(x, (2, 2), (), (0,), False, True, -2),
        (np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4),),
    ),
    "avg_pool3d-negative-divisor": (
        lambda t, x: t.nn.functional.avg_pool3d(x, 2, divisor_override=-3),
        (np.arange(16, dtype=np.float32).reshape(1, 1, 2, 2, 4),),
    ),
    # batch_norm: an empty vector, and training with running statistics under kn.compile
    "batch_norm-empty-vector": (
        lambda t, x, m, v: t.nn.functional.batch_norm(x, m, v, training=True),
        (np.zeros(0, np.float32), np.zeros(0, np.float32), np.ones(0, np.float32)),
    ),
    # weighted covariances
    "cov-fweights": (
        lambda t, x, f: t.cov(x, fweights=f),
        (np.array([[1.0, 2.0, 4.0], [3.0, 1.0, 0.5]], np.float32), np.array([1, 3, 2], np.int32)),
    ),
    "cov-aweights": (
        lambda t, x, a: t.cov(x, correction=1, aweights=a),
        (np.array([1.0, 2.0, 4.0], np.float32), np.array([0.5, 0.25, 1.0], np.float32)),
    ),
    "cov-both": (
        lambda t, x, f, a: t.cov(x, correction=2, fweights=f, aweights=a),
        (
            np.array([[1.0, 2.0, 4.0], [3.0, 1.0, 0.5]], np.float32),
            np.array([1, 3, 2], np.int64),
            np.array([0.5, 0.25, 1.0], np.float32),
        ),
    ),
    "cov-int-aweights0": (
        lambda t, x, a: t.cov(x, correction=0, aweights=a),
        (np.array([[1, 2, 4], [3, 1, 0]], np.int64), np.array([0.5, 0.25, 1.0], np.float32)),
    ),
    # embedding's max_norm (rows renormed) and scale_grad_by_freq (values unchanged)
    "embedding-max_norm": (
        lambda t, i, w: t.nn.functional.embedding(i, w, max_norm=1.0),
        (np.array([[0, 1], [0, 0]]), np.array([[3.0, 4.0], [0.3, 0.4], [6, 8]], np.float32)),
    ),
    "embedding-max_norm-l1": (
        lambda t, i, w: t.nn.functional.embedding(i, w, max_norm=2.0, norm_type=1.0),
        (np.array([2, 1]), np.array([[3.0, 4.0], [0.3, 0.4], [6, -8]], np.float32)),
    ),
    "embedding-freq": (
        lambda t, i, w: t.nn.functional.embedding(i, w, scale_grad_by_freq=True),
        (np.array([[0, 1], [0, 0]]), np.array([[3.0, 4.0], [0.3, 0.4], [6, 8]], np.float32)),
    ),
    # 0-d and empty edge cases of gather, unfold and prelu
    "gather-empty-index": (
        lambda t, x, i: t.gather(x, 0, i),
        (np.arange(5, dtype=np.float32), np.zeros((2, 0), np.int64)),
    ),
    "gather-0d-input": (
        lambda t, x, i: t.gather(x, 0, i),
        (np.array(2.5, np.float32), np.array([0, 0])),
    ),
    "unfold-0d": (lambda t, x: x.unfold(0, 1, 1), (np.array(3.0, np.float32),)),
    "prelu-0d-weight": (
        lambda t, x, w: t.nn.functional.prelu(x, w),
        (np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4), np.array(0.25, np.float32)),
    ),
    "prelu-0d-input": (
        lambda t, x, w: t.nn.functional.prelu(x, w),
        (np.array(-3.0, np.float32), np.array([0.5], np.float32)),
    ),
    "prelu-channels": (
        lambda t, x, w: t.nn.functional.prelu(x, w),
        (
            np.linspace(-2, 2, 24, dtype=np.float32).reshape(2, 3, 4),
            np.array([0.1, 0.2, 0.3], np.float32),
        ),
    ),
    # keyword forms PyTorch accepts
    "split-split_size": (lambda t, x: x.split(split_size=2), (np.arange(5, dtype=np.float32),)),
    "split-split_size_or_sections": (
        lambda t, x: t.split(x, split_size_or_sections=[1, 4], dim=0),
        (np.arange(5, dtype=np.float32),),
    ),
    "max-other": (
        lambda t, x, y: t.max(x, other=y),
        (np.array([1.0, 5.0, -2.0], np.float32), np.array([3.0, 2.0, -1.0], np.float32)),
    ),
    "min-other": (
        lambda t, x, y: t.min(x, other=y),
        (np.array([1.0, 5.0, -2.0], np.float32), np.array([3.0, 2.0, -1.0], np.float32)),
    ),
    "max-other-method": (
        lambda t, x, y: x.max(other=y),
        (np.array([1, 5, -2]), np.array([3, 2, -1])),
    ),
    "tensor_split-sections": (
        lambda t, x: x.tensor_split(sections=3),
        (np.arange(7, dtype=np.float32),),
    ),
    "tensor_split-indices": (
        lambda t, x: t.tensor_split(x, indices=[1, 4], dim=0),
        (np.arange(7, dtype=np.float32),),
    ),
    "zeros-size": (lambda t, x: t.add(x, t.zeros(size=(2, 3))), (np.ones(3, np.float32),)),
    "ones-size": (lambda t, x: t.add(x, t.ones(size=[2, 3])), (np.ones(3, np.float32),)),
    # integer pools and convolutions (PyTorch's CPU kernels take int64)
    "avg_pool2d-int64": (
        lambda t, x: t.nn.functional.avg_pool2d(x, 2, padding=1, count_include_pad=False),
        (np.arange(-8, 17, dtype=np.int64).reshape(1, 1, 5, 5),),
    ),
    "avg_pool1d-int64-divisor": (
        lambda t, x: t.nn.functional.avg_pool1d(x, 3, 2),
        (np.array([[[-7, 2, 3, 10, -1]]], np.int64),),
    ),
    "avg_pool3d-int64-divisor": (
        lambda t, x: t.nn.functional.avg_pool3d(x, 2, divisor_override=3),
        (np.arange(-20, 12, dtype=np.int64).reshape(1, 1, 2, 4, 4),),
    ),
    "max_pool2d-int64-padded": (
        lambda t, x: t.nn.functional.max_pool2d(x, 3, 2, padding=1),
        (-np.arange(25, dtype=np.int64).reshape(1, 1, 5, 5),),
    ),
    "local_response_norm-int64": (
        lambda t, x: t.nn.functional.local_response_norm(x, 2),
        (np.arange(16, dtype=np.int64).reshape(1, 4, 2, 2),),
    ),
    "conv2d-int64": (
        lambda t, x, w, b: t.nn.functional.conv2d(x, w, b, padding=1, groups=2),
        (
            np.arange(-16, 16, dtype=np.int64).reshape(1, 2, 4, 4),
            np.arange(-9, 9, dtype=np.int64).reshape(2, 1, 3, 3),
            np.array([5, -5], np.int64),
        ),
    ),
    "conv_transpose1d-int64": (
        lambda t, x, w: t.nn.functional.conv_transpose1d(x, w, stride=2),
        (np.array([[[1, -2, 3]]], np.int64), np.array([[[2, 1, -1]]], np.int64)),
    ),
    # more argument forms: searchsorted's sorter, tensordot's size-1 dims, norm "nuc"
    "searchsorted-sorter": (
        lambda t, s, v, o: t.searchsorted(s, v, sorter=o),
        (
            np.array([5.0, 1.0, 3.0], np.float32),
            np.array([0.0, 3.0, 4.0, 9.0], np.float32),
            np.array([1, 2, 0]),
        ),
    ),  # fmt: skip
    "tensordot-size1": (
        lambda t, a, b: t.tensordot(a, b, dims=([0, 1], [2, 0])),
        (
            np.arange(3, dtype=np.float32).reshape(1, 1, 3),
            np.arange(8, dtype=np.float32).reshape(2, 2, 2),
        ),
    ),
    "norm-nuc": (
        lambda t, x: t.norm(x, "nuc", dim=[1, 2]),
        (np.arange(18, dtype=np.float32).reshape(2, 3, 3) % 5,),
    ),
    # lstsq's other drivers: residuals of tall problems, SVD ranks and singular values
    "lstsq-gels-tall": (
        lambda t, a, b: t.linalg.lstsq(a, b, driver="gels"),
        (
            np.array([[2.0, 1.0], [1.0, 3.0], [0.0, 1.0]], np.float32),
            np.array([[1.0, 0.0], [2.0, 1.0], [1.0, 4.0]], np.float32),
        ),
    ),  # fmt: skip
    "lstsq-gelsd-tall": (
        lambda t, a, b: t.linalg.lstsq(a, b, driver="gelsd"),
        (
            np.array([[2.0, 1.0], [1.0, 3.0], [0.0, 1.0]], np.float32),
            np.array([1.0, 2.0, 1.0], np.float32),
        ),
    ),  # fmt: skip
    "lstsq-gelss-wide": (
        lambda t, a, b: t.linalg.lstsq(a, b, driver="gelss"),
        (
            np.array([[2.0, 1.0, 0.0], [1.0, 3.0, 1.0]], np.float32),
            np.array([[1.0], [2.0]], np.float32),
        ),
    ),  # fmt: skip
    # nonzero_static of a 0-d input: `size` rows of no coordinates
    "nonzero_static-0d": (lambda t, x: t.nonzero_static(x, size=3), (np.array(2.5, np.float32),)),
    "nonzero_static-0d-zero": (
        lambda t, x: t.nonzero_static(x, size=2, fill_value=7),
        (np.array(0, np.int64),),
    ),
    "nonzero_static-pad": (
        lambda t, x: t.nonzero_static(x, size=4, fill_value=-9),
        (np.array([[0, 1], [2, 0]], np.int64),),
    ),
    # tensor_split at split points in a tensor (traced: lengths the run binds), Python's
    # slices between them (negative points count from the end, past the end clips)
    "tensor_split-tensor-points": (
        lambda t, x, i: t.tensor_split(x, i, 1),
        (np.arange(15, dtype=np.float32).reshape(3, 5), np.array([-2, 4, 1, 7])),
    ),
    "tensor_split-tensor-points-bool": (
        lambda t, x, i: t.tensor_split(x, i),
        (BOOLS, np.array([1, -1])),
    ),
    "tensor_split-negative-list": (
        lambda t, x: t.tensor_split(x, [2, -1], 0),
        (np.arange(5, dtype=np.int64),),
    ),
    # one_hot's num_classes=-1: the largest index + 1 (traced: a length the run binds)
    "one_hot-inferred": (lambda t, i: t.nn.functional.one_hot(i), (np.array([[3, 0], [1, 1]]),)),
    "one_hot-inferred-then-used": (
        lambda t, i: t.nn.functional.one_hot(i).sum(0) * 2,
        (np.array([2, 0, 2]),),
    ),
    # unbound Tensor methods on a traced value (as PyTorch's OpInfo lambdas call them)
    "Tensor.normal_-unbound": (
        lambda t, x: t.Tensor.normal_(x * 1, 2.5, 0.0),
        (np.zeros((2, 3), np.float32),),
    ),
    "Tensor.add_-unbound": (
        lambda t, x: t.Tensor.add_(x * 1, 2, alpha=3),
        (np.ones(3, np.float32),),
    ),
    # bfloat16 results (compared through float32, exactly): round to nearest, ties to even
    "bfloat16-cast": (
        lambda t, x: x.bfloat16(),
        (np.array([1 / 3, 1.00390625, 1.01171875, -2.5e-3, 3.0e5, np.inf], np.float32),),
    ),
    "bfloat16-of-int64": (lambda t, x: x.bfloat16(), (np.array([257, -3, 65535], np.int64),)),
}


def run_case(mode, case):
    fn, arrays = CASES[case]
    return run(mode, fn, *arrays)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", sorted(CASES))
def test_known_fix_matches_pytorch(case, mode):
    fn, arrays = CASES[case]
    want = torch_result(fn, *arrays)
    assert_same(run(mode, fn, *arrays), want, rtol=1e-5)


# -- hand-computed cases (no PyTorch needed) --------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_addmm_of_int64_truncates_beta_and_alpha(mode):
    # beta 1.7 -> 1, alpha 2.9 -> 2 (PyTorch's integer coefficients); by hand:
    # A23 = [[-2,-1,0],[1,2,3]], B32 = [[-1,0],[1,2],[3,4]]
    # A23 @ B32 = [[2-1+0, 0-2+0], [-1+2+9, 0+4+12]] = [[1,-2],[10,16]]
    got = run_case(mode, "addmm-int64")
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, 5 + 2 * np.array([[1, -2], [10, 16]]))


@pytest.mark.parametrize("mode", MODES)
def test_addr_of_bools_stays_bool(mode):
    # beta and alpha are True: input OR outer(a, b)
    got = run_case(mode, "addr-bool")
    want = np.eye(2, 3, dtype=bool) | np.outer(BOOLS[:2], BOOLS)
    assert got.dtype == np.bool_
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("mode", MODES)
def test_zero_d_index_add_is_one_element_vector(mode):
    got = run_case(mode, "index_add-0d")
    assert got.shape == () and got == np.float32(1.5 + 2 * 2.0)


@pytest.mark.parametrize("mode", MODES)
def test_softmax_of_empty_is_empty(mode):
    got = run(mode, lambda t, x: t.softmax(x, 0), np.zeros((0, 2), np.float32))
    assert got.shape == (0, 2) and got.dtype == np.float32


@pytest.mark.parametrize("mode", MODES)
def test_normalize_p0_divides_by_the_nonzero_count(mode):
    # row [1, 0, -2] has 2 nonzeros; the zero row stays zero (norm 0 clipped to eps)
    got = run_case(mode, "normalize-p0")
    np.testing.assert_allclose(got, [[0.5, 0.0, -1.0], [0.0, 0.0, 0.0]])


@pytest.mark.parametrize("mode", MODES)
def test_linspace_of_traced_bounds(mode):
    got = run_case(mode, "linspace-tensor")
    np.testing.assert_allclose(got, np.linspace(-2.0, 3.0, 7), rtol=1e-6)
    got = run_case(mode, "logspace-tensor")
    np.testing.assert_allclose(got, [0.5, 1.0, 2.0, 4.0], rtol=1e-6)


@pytest.mark.parametrize("mode", MODES)
def test_cat_leaves_out_empty_vectors(mode):
    got = run_case(mode, "cat-empty-1d")
    assert got.dtype == np.float64  # float64 from the empty vector, float32 ones kept
    np.testing.assert_array_equal(got, np.ones((2, 2)))


@pytest.mark.parametrize("mode", MODES)
def test_pad_negative_widths_crop(mode):
    x = np.arange(4, dtype=np.float32).reshape(1, 1, 4)
    # circular (-1, 1): crop 0 -> [1, 2, 3], then wrap its first element to the right
    got = run(mode, lambda t, v: t.nn.functional.pad(v, (-1, 1), "circular"), x)
    np.testing.assert_array_equal(got, [[[1, 2, 3, 1]]])
    # replicate (-4, 5): output j reads input clamp(j + 4, 0, 3) = the last element
    got = run(mode, lambda t, v: t.nn.functional.pad(v, (-4, 5), "replicate"), x)
    np.testing.assert_array_equal(got, [[[3, 3, 3, 3, 3]]])


@pytest.mark.parametrize("mode", MODES)
def test_take_along_dim_counts_negative_indices_from_the_end(mode):
    got = run_case(mode, "take_along_dim-negative")
    np.testing.assert_array_equal(got, [[2, 0], [3, 4]])


@pytest.mark.parametrize("mode", MODES)
def test_masked_fill_broadcasts_input_and_mask(mode):
    got = run_case(mode, "masked_fill-wider-mask")
    np.testing.assert_array_equal(got, [[-1.5, 1, -1.5], [0, -1.5, 2]])


def test_in_place_masked_fill_still_refuses_a_wider_mask():
    x = kn.zeros(3)
    with pytest.raises(RuntimeError, match="broadcast shape"):
        x.masked_fill_(kn.ones((2, 3), dtype=kn.bool), 1.0)


@pytest.mark.parametrize("mode", MODES)
def test_lu_infos_of_a_wide_matrix(mode):
    # U's diagonal is [0, 0] (no row swap: column 0 is zero): the first zero pivot is 1
    got = run_case(mode, "lu-infos-wide")
    assert got[2].dtype == np.int32 and int(got[2]) == 1


@pytest.mark.parametrize("mode", MODES)
def test_std_mean_takes_unbiased_positionally(mode):
    # 0..5: mean 2.5, sum of squared deviations 17.5, / 6 (biased)
    std, mean = run_case(mode, "std_mean-unbiased")
    np.testing.assert_allclose([std, mean], [np.sqrt(17.5 / 6), 2.5], rtol=1e-6)


@pytest.mark.parametrize("mode", MODES)
def test_pinv_with_a_tensor_rtol_cuts_small_singular_values(mode):
    # singular values 2 and 1e-3; rtol 0.01 cuts 1e-3 (below 0.02): only 1/2 remains
    got = run_case(mode, "pinv-rtol-tensor")
    np.testing.assert_allclose(got, [[0.5, 0.0], [0.0, 0.0], [0.0, 0.0]], atol=1e-7)


@pytest.mark.parametrize("mode", ["eager", "compiled"])
def test_batch_norm_training_updates_running_statistics(mode):
    # x (2, 1): batch mean 2, biased var 1, unbiased var 2; momentum 0.5 from (0, 1):
    # running mean 0.5 * 0 + 0.5 * 2 = 1, running var 0.5 * 1 + 0.5 * 2 = 1.5
    fn = lambda x, m, v: F.batch_norm(x, m, v, training=True, momentum=0.5, eps=0.0)  # noqa: E731
    mean, var = kn.zeros(1), kn.ones(1)
    y = (fn if mode == "eager" else kn.compile(fn))(kn.tensor([[1.0], [3.0]]), mean, var)
    np.testing.assert_allclose(y.numpy(), [[-1.0], [1.0]])
    np.testing.assert_allclose([mean.item(), var.item()], [1.0, 1.5])


@pytest.mark.parametrize("mode", MODES)
def test_cov_with_frequency_weights_repeats_observations(mode):
    # fweights (1, 3, 2) weigh as the observations 1, 2, 2, 2, 4, 4 (NumPy's cov of those)
    x = np.array([[1.0, 2.0, 4.0]], np.float32)
    got = run(mode, lambda t, v, f: t.cov(v, fweights=f), x, np.array([1, 3, 2]))
    np.testing.assert_allclose(got, np.cov([1, 2, 2, 2, 4, 4]), rtol=1e-6)


@pytest.mark.parametrize("mode", MODES)
def test_embedding_max_norm_renorms_picked_rows(mode):
    # row 0 (3, 4) has norm 5 > 1: (0.6, 0.8); row 1 (0.3, 0.4) has norm 0.5: kept
    got = run_case(mode, "embedding-max_norm")
    np.testing.assert_allclose(got[0], [[0.6, 0.8], [0.3, 0.4]], rtol=1e-6)


def test_embedding_max_norm_changes_the_weight_in_place_eagerly():
    w = kn.tensor([[3.0, 4.0], [0.3, 0.4], [6.0, 8.0]])
    F.embedding(kn.tensor([0]), w, max_norm=1.0)
    np.testing.assert_allclose(w.numpy(), [[0.6, 0.8], [0.3, 0.4], [6.0, 8.0]], rtol=1e-6)


def test_embedding_scale_grad_by_freq_divides_by_the_count():
    # index 0 occurs 3 times: its row's gradient 3 * (1/3) = 1; index 1 once: 1; 2: none
    w = kn.tensor([[3.0, 4.0], [0.3, 0.4], [6.0, 8.0]], requires_grad=True)
    F.embedding(kn.tensor([[0, 1], [0, 0]]), w, scale_grad_by_freq=True).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), [[1, 1], [1, 1], [0, 0]])


@pytest.mark.parametrize("mode", MODES)
def test_avg_pool_negative_divisor(mode):
    # windows of 2x2 over 0..15 (4x4): sums 10, 18, 42, 50 divided by -2
    got = run_case(mode, "avg_pool2d-empty-stride")
    np.testing.assert_allclose(got, [[[[-5.0, -9.0], [-21.0, -25.0]]]])


@pytest.mark.parametrize("mode", MODES)
def test_gather_result_has_the_index_shape(mode):
    got = run_case(mode, "gather-0d-input")
    np.testing.assert_array_equal(got, [2.5, 2.5])
    got = run_case(mode, "gather-empty-index")
    assert got.shape == (2, 0) and got.dtype == np.float32


@pytest.mark.parametrize("mode", MODES)
def test_prelu_of_a_0d_input_and_one_weight(mode):
    # -3 * 0.5, the shape the input's
    got = run_case(mode, "prelu-0d-input")
    assert got.shape == () and got == -1.5


def test_prelu_refuses_a_weight_per_channel_of_a_vector():
    with pytest.raises(RuntimeError, match="channel size"):
        F.prelu(kn.ones(3), kn.ones(3))


@pytest.mark.parametrize("mode", MODES)
def test_split_and_max_keyword_forms(mode):
    pieces = run_case(mode, "split-split_size")
    assert [p.tolist() for p in pieces] == [[0, 1], [2, 3], [4]]
    np.testing.assert_array_equal(run_case(mode, "max-other"), [3.0, 5.0, -1.0])
    np.testing.assert_array_equal(run_case(mode, "min-other"), [1.0, 2.0, -2.0])


@pytest.mark.parametrize("name", ["zeros", "ones", "empty", "rand", "randn"])
def test_factories_take_size_as_a_keyword(name):
    made = getattr(kn, name)(size=(2, 3), dtype=kn.float64)
    assert tuple(made.shape) == (2, 3) and made.dtype == kn.float64
    assert tuple(getattr(kn, name)(size=4).shape) == (4,)
    with pytest.raises(TypeError):
        getattr(kn, name)(2, size=(2, 3))  # the size twice (PyTorch's TypeError)


def test_randint_takes_low_and_high_as_keywords():
    drawn = kn.randint(low=3, high=5, size=(100,))
    assert drawn.dtype == kn.int64 and set(drawn.tolist()) <= {3, 4}
    assert set(kn.randint(high=2, size=(50,)).tolist()) <= {0, 1}


@pytest.mark.parametrize("mode", MODES)
def test_integer_avg_pool_rounds_toward_zero(mode):
    # windows of 3 with stride 2 over [-7, 2, 3, 10, -1]: sums -2 and 12, / 3 -> 0 and 4
    got = run_case(mode, "avg_pool1d-int64-divisor")
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, [[[0, 4]]])


@pytest.mark.parametrize("mode", MODES)
def test_integer_conv_transpose_is_exact(mode):
    # each input spreads x * [2, 1, -1] from position 2i: 1 -> [2, 1, -1] at 0, -2 -> [-4, -2,
    # 2] at 2, 3 -> [6, 3, -3] at 4; summed: [2, 1, -5, -2, 8, 3, -3]
    got = run_case(mode, "conv_transpose1d-int64")
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, [[[2, 1, -5, -2, 8, 3, -3]]])


def test_tensor_split_at_the_values_of_an_eager_tensor():
    pieces = kn.tensor_split(kn.arange(5), kn.tensor([1, 3]))
    assert [p.tolist() for p in pieces] == [[0], [1, 2], [3, 4]]
    assert [p.tolist() for p in kn.arange(5).tensor_split(kn.tensor(2))] == [[0, 1, 2], [3, 4]]


def test_tensor_split_refuses_traced_sections_by_name():
    # a 0-d tensor is a number of sections: its value is how many results there are
    f = kn.compile(lambda x, i: kn.tensor_split(x, i))
    with pytest.raises(kn.GraphError, match="tensor_split"):
        f(kn.arange(5), kn.tensor(2))


@pytest.mark.parametrize("mode", MODES)
def test_tensor_split_at_tensor_points_is_slicing(mode):
    # points [-2, 4, 1, 7] of 5 columns: [0:-2] = cols 0..2, [-2:4] = col 3, [4:1] none,
    # [1:7] = cols 1..4, [7:5] none
    got = run_case(mode, "tensor_split-tensor-points")
    x = np.arange(15, dtype=np.float32).reshape(3, 5)
    want = (x[:, 0:3], x[:, 3:4], x[:, 4:4], x[:, 1:5], x[:, 5:5])
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == np.float32
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("mode", MODES)
def test_nonzero_static_of_a_0d_input(mode):
    # a 0-d input has no coordinates: `size` rows of width 0, whatever its value
    got = run_case(mode, "nonzero_static-0d")
    assert (got.dtype, got.shape) == (np.int64, (3, 0))
    # [[0, 1], [2, 0]]: nonzeros at (0, 1) and (1, 0), then fill_value rows up to size 4
    got = run_case(mode, "nonzero_static-pad")
    np.testing.assert_array_equal(got, [[0, 1], [1, 0], [-9, -9], [-9, -9]])


@pytest.mark.parametrize("mode", MODES)
def test_one_hot_infers_the_number_of_classes(mode):
    # largest index 3: 4 classes; rows [3, 0], [1, 1]
    got = run_case(mode, "one_hot-inferred")
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, np.eye(4, dtype=np.int64)[[[3, 0], [1, 1]]])
    # [2, 0, 2]: 3 classes, counts per class [1, 0, 2], doubled
    np.testing.assert_array_equal(run_case(mode, "one_hot-inferred-then-used"), [2, 0, 4])


@pytest.mark.parametrize("mode", ["eager", "compiled"])
def test_one_hot_inferred_refuses_negative_and_empty_indices(mode):
    f = kn.nn.functional.one_hot
    f = f if mode == "eager" else kn.compile(f)
    for ids in ([-1, 2], [-3]):  # PyTorch: "Class values must be non-negative."
        with pytest.raises(kn.IndexOutOfRangeError, match="non-negative"):
            f(kn.tensor(ids))
    with pytest.raises(kn.errors.UsageError, match="empty"):  # a RuntimeError, as PyTorch's
        f(kn.tensor(np.zeros(0, np.int64)))


@pytest.mark.parametrize("mode", MODES)
def test_unbound_tensor_methods_on_traced_values(mode):
    # N(2.5, 0²) draws are all 2.5; 1 + 3 * 2 = 7
    np.testing.assert_array_equal(run_case(mode, "Tensor.normal_-unbound"), np.full((2, 3), 2.5))
    np.testing.assert_array_equal(run_case(mode, "Tensor.add_-unbound"), [7.0, 7.0, 7.0])


@pytest.mark.parametrize("mode", MODES)
def test_bfloat16_rounds_to_nearest_even(mode):
    # bfloat16 keeps 8 significant bits: 1.00390625 = 1 + 2^-8 is a tie -> 1 (even),
    # 1.01171875 = 1 + 3 * 2^-8 is a tie -> 1 + 2^-6 (even); 1/3 -> 0.333984375
    got = run_case(mode, "bfloat16-cast")
    assert got.dtype == kn.bfloat16
    np.testing.assert_array_equal(got.astype(np.float32)[:3], [0.333984375, 1.0, 1.015625])


@pytest.mark.parametrize("mode", MODES)
def test_searchsorted_with_a_sorter(mode):
    # sorted: [1, 3, 5]; 0 -> 0, 3 -> 1 (left), 4 -> 2, 9 -> 3
    np.testing.assert_array_equal(run_case(mode, "searchsorted-sorter"), [0, 1, 2, 3])


def test_normal_takes_layout():
    drawn = kn.normal(1.6, 0.3, [2, 2], dtype=kn.float32, layout=None)
    assert tuple(drawn.shape) == (2, 2)


def test_lstsq_gelsd_of_a_rank_deficient_tall_matrix_has_no_residuals():
    # the columns of A are equal: rank 1, singular values sqrt(2 * 14) and 0
    a = kn.tensor([[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]])
    out = kn.linalg.lstsq(a, kn.tensor([[1.0], [2.0], [2.0]]), driver="gelsd")
    assert int(out.rank) == 1 and tuple(out.residuals.shape) == (0,)
    np.testing.assert_allclose(out.singular_values.numpy(), [np.sqrt(28.0), 0.0], atol=1e-5)


def test_narrow_with_a_traced_start_under_compile():
    # start 3 of [0..4], length 2: [3, 4]; start -2 counts from the end: the same
    f = kn.compile(lambda x, s: kn.narrow(x, 0, s, 2))
    assert f(kn.arange(5), kn.tensor(3)).tolist() == [3, 4]
    assert f(kn.arange(5), kn.tensor(-2)).tolist() == [3, 4]
    with pytest.raises(RuntimeError):  # past the end, as PyTorch's
        f(kn.arange(5), kn.tensor(4))


def test_narrow_with_a_traced_start_matches_pytorch():
    torch = pytest.importorskip("torch")
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    want = torch.narrow(torch.from_numpy(x), -1, torch.tensor(1), 2).numpy()
    got = kn.compile(lambda v, s: kn.narrow(v, -1, s, 2))(kn.tensor(x), kn.tensor(1))
    assert_same(got.numpy(), want)


def test_one_hot_inferred_exports_to_onnx(tmp_path):
    ort = pytest.importorskip("onnxruntime")
    with kn.Graph().as_default():
        ids = kn.placeholder(kn.int64, (3,), "ids")
        f = kn.function([ids], kn.nn.functional.one_hot(ids))
    kn.export_onnx(f, tmp_path / "one_hot.onnx")
    session = ort.InferenceSession(str(tmp_path / "one_hot.onnx"))
    # [0, 3, 1]: 4 classes (the largest index + 1), read at run time
    (got,) = session.run(None, {"ids": np.array([0, 3, 1], np.int64)})
    np.testing.assert_array_equal(got, np.eye(4, dtype=np.int64)[[0, 3, 1]])
