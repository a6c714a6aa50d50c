"""Eager `cross_entropy` (`kn.nn.functional`'s and `kn.cross_entropy`) of float32/float64
logits and class indices runs `log_softmax_take` (one kernel, and one for its gradient) in
place of log_softmax then gather, and, when no target is ignored, the mean as the sum over the
count. The expected values are kiln's general form, `nll_loss(log_softmax(x, dim), target,
...)` (and `take_along_axis` of `log_softmax`): bit for bit, values and gradients."""

import numpy as np
import pytest

import kiln as kn

F = kn.nn.functional


def _run(loss_fn, x0, t0, ct, **kw):
    x = kn.tensor(x0, requires_grad=True)
    loss = loss_fn(x, kn.tensor(t0), **kw)
    if not loss.requires_grad:  # kiln's general form of an empty batch's NaN mean: no graph
        return loss.detach().numpy(), np.zeros_like(x0)
    (loss * kn.tensor(ct)).sum().backward()
    return loss.detach().numpy(), x.grad.numpy()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(16, 10), (7, 5), (3, 4, 6), (0, 3)])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("ignored", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
def test_same_bits_as_log_softmax_then_nll_loss(dtype, shape, reduction, ignored, weighted):
    rng = np.random.default_rng(sum(shape))
    x0 = (rng.standard_normal(shape) * 4).astype(dtype)
    t0 = rng.integers(0, shape[1], (shape[0], *shape[2:]))
    if ignored and t0.size:
        t0.flat[0] = -100
    kw = {"reduction": reduction}
    if weighted:
        kw["weight"] = kn.tensor(rng.uniform(0.5, 2, shape[1]).astype(dtype))
    out_shape = () if reduction != "none" else t0.shape
    ct = rng.standard_normal(out_shape).astype(dtype)
    got = _run(F.cross_entropy, x0, t0, ct, **kw)
    want = _run(lambda x, t, **k: F.nll_loss(F.log_softmax(x, 1), t, **k), x0, t0, ct, **kw)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("shape", [(16, 10), (3, 4, 6)])
def test_kiln_cross_entropy_same_bits_as_its_general_form(dtype, reduction, shape):
    rng = np.random.default_rng(len(shape))
    x0 = (rng.standard_normal(shape) * 4).astype(dtype)
    t0 = rng.integers(0, shape[-1], shape[:-1])
    ct = rng.standard_normal(() if reduction != "none" else shape[:-1]).astype(dtype)

    def general(x, t, reduction):
        picked = kn.take_along_axis(kn.log_softmax(x, axis=-1), kn.unsqueeze(t, -1), axis=-1)
        loss = -kn.squeeze(picked, -1)
        return {"mean": kn.mean, "sum": kn.sum, "none": lambda v: v}[reduction](loss)

    got = _run(kn.cross_entropy, x0, t0, ct, reduction=reduction)
    want = _run(general, x0, t0, ct, reduction=reduction)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_bad_targets_raise_as_before():
    x = kn.zeros(2, 3)
    with pytest.raises(kn.IndexOutOfRangeError):
        F.cross_entropy(x, kn.tensor([0, 3]))
    with pytest.raises(kn.IndexOutOfRangeError):
        F.cross_entropy(x, kn.tensor([0, -2]))
    with pytest.raises(ValueError, match="expected target of size"):
        F.cross_entropy(x, kn.tensor([0, 1, 2]))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("ignored", [False, True])
def test_matches_torch(reduction, weighted, ignored):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    x0 = rng.standard_normal((8, 5)).astype(np.float32)
    t0 = rng.integers(0, 5, 8)
    if ignored:
        t0[2] = -100
    w0 = rng.uniform(0.5, 2, 5).astype(np.float32)
    ct = rng.standard_normal(() if reduction != "none" else (8,)).astype(np.float32)
    kw = {"reduction": reduction, "weight": kn.tensor(w0) if weighted else None}
    got = _run(F.cross_entropy, x0, t0, ct, **kw)
    x = torch.tensor(x0, requires_grad=True)
    loss = torch.nn.functional.cross_entropy(
        x, torch.tensor(t0), weight=torch.tensor(w0) if weighted else None, reduction=reduction
    )
    (loss * torch.tensor(ct)).sum().backward()
    np.testing.assert_allclose(got[0], loss.detach().numpy(), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(got[1], x.grad.numpy(), rtol=1e-5, atol=1e-7)
