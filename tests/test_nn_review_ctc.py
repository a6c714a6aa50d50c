"""kiln's `ctc_loss` gradient against PyTorch's. PyTorch's gradient over `log_probs` is not
the forward algorithm's own (minus the posteriors): it adds exp(log_probs) at every step
t < input_length (through a log_softmax both agree), gives NaN there for an infinite loss
without `zero_infinity`, and 0 with it. Expected values come from torch on the same inputs."""

import numpy as np
import pytest

import kiln as kn

torch = pytest.importorskip("torch")

rng = np.random.default_rng(0)
LP = np.log(rng.dirichlet(np.ones(5), size=(10, 2))).astype(np.float32)  # (T, N, C)
TARGETS = np.array([[1, 2, 2], [3, 4, 0]])
TARGET_LENGTHS = np.array([3, 2])


def _grads(lp, input_lengths, reduction, zero_infinity=False, through_log_softmax=False):
    out = []
    for lib, F in ((torch, torch.nn.functional), (kn, kn.nn.functional)):
        x = lib.tensor(lp, requires_grad=True)
        inp = x.log_softmax(2) if through_log_softmax else x
        loss = F.ctc_loss(inp, lib.tensor(TARGETS), lib.tensor(input_lengths),
                          lib.tensor(TARGET_LENGTHS), reduction=reduction,
                          zero_infinity=zero_infinity)  # fmt: skip
        loss.sum().backward()
        out.append((loss.detach().numpy(), x.grad.numpy()))
    return out


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("shift", [0.0, 0.3])  # 0.3: log-probs that do not sum to 1
def test_ctc_grad_over_log_probs_like_torch(reduction, shift):
    (lt, gt), (lk, gk) = _grads(LP + shift, np.array([10, 7]), reduction)
    np.testing.assert_allclose(lk, lt, rtol=1e-5)
    np.testing.assert_allclose(gk, gt, rtol=1e-4, atol=1e-5)
    assert (gt[7:, 1] == 0).all() and (gk[7:, 1] == 0).all()  # past the input length


@pytest.mark.parametrize("zero_infinity", [False, True])
@pytest.mark.parametrize("through_log_softmax", [False, True])
def test_ctc_infinite_loss_grad_like_torch(zero_infinity, through_log_softmax):
    # sample 0 has 2 steps for a target of 3 labels: no alignment, an infinite loss
    (lt, gt), (lk, gk) = _grads(LP, np.array([2, 8]), "none", zero_infinity,
                                through_log_softmax)  # fmt: skip
    np.testing.assert_array_equal(lk[0], lt[0])  # inf, or 0 with zero_infinity
    np.testing.assert_array_equal(np.isnan(gk), np.isnan(gt))  # torch: NaN at t < 2
    assert np.isnan(gt).any() != zero_infinity
    ok = ~np.isnan(gt)
    np.testing.assert_allclose(gk[ok], gt[ok], rtol=1e-4, atol=1e-5)


def test_ctc_grad_compiled_matches_eager():
    lengths = kn.tensor(np.array([10, 7]))

    def step(lp):
        loss = kn.nn.functional.ctc_loss(lp, kn.tensor(TARGETS), lengths,
                                          kn.tensor(TARGET_LENGTHS))  # fmt: skip
        return loss

    kn.testing.check_eager_vs_compiled(step, kn.tensor(LP + 0.3, requires_grad=True))
    x = kn.tensor(LP + 0.3, requires_grad=True)
    kn.compile(step)(x).backward()
    (_, want), _ = _grads(LP + 0.3, np.array([10, 7]), "mean")
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-4, atol=1e-5)
