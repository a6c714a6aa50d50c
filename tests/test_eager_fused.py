"""The eager tape entries of F.linear (a matrix with a bias) and F.cross_entropy's common case
(kiln/eager/fused.py): the composites' bits in value and gradient, PyTorch 2.13's grad_fn
names, and the tape's semantics (saved values checked, hooks, create_graph, no_grad)."""

import numpy as np
import pytest

import kiln as kn
import kiln.frontend as KF
from kiln.frontend.core import call

F = kn.nn.functional


def _data(seed, dtype):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((6, 5)).astype(dtype)
    w = rng.standard_normal((4, 5)).astype(dtype)
    b = rng.standard_normal(4).astype(dtype)
    return x, w, b


def _linear_composite(x, w, b):
    """What F.linear recorded before: matmul, transpose and add (three tape entries)."""
    return KF.add(KF.matmul(x, KF.t(w)), b)


def _xent_composite(x, t):
    """What F.cross_entropy recorded before: log_softmax_take, reshape, neg, sum and div."""
    picked = KF.squeeze(call("log_softmax_take", x, KF.unsqueeze(t, 1), axis=1), 1)
    return KF.div(KF.sum(KF.neg(picked)), float(t.shape[0]))


def _bits(a):
    a = a.detach().numpy() if isinstance(a, kn.Tensor) else a
    return a.view(np.uint32 if a.dtype == np.float32 else np.uint64)


def _leaves(arrays, grads):
    return [kn.tensor(a, requires_grad=g) for a, g in zip(arrays, grads)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("x_grad", [True, False])
def test_fused_linear_and_xent_bits_of_the_composites(dtype, x_grad):
    arrays = (*_data(0, dtype), *_data(1, dtype)[1:])  # x, w, b, then w2 (4, 5), b2 (4,)
    labels = kn.tensor([0, 3, 1, 1, 2, 3])
    results = []
    for fused in (True, False):
        x, w, b, w2, b2 = _leaves(arrays, (x_grad, True, True, True, True))
        linear = F.linear if fused else _linear_composite
        xent = F.cross_entropy if fused else _xent_composite
        h = linear(x, w, b)
        z = linear(kn.relu(h), w2[:, :4], b2)  # a weight that is a view
        loss, loss2 = xent(z, labels), xent(h, labels)
        (loss + loss2).backward(retain_graph=True)
        (loss2 * 3).backward()  # accumulated into the .grads
        results.append((h, z, loss, loss2, *(t.grad for t in (x, w, b, w2, b2))))
    for got, want in zip(*results):
        if want is None:
            assert got is None
            continue
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(_bits(got), _bits(want))


def test_fused_grad_fn_names_are_torchs():
    # names from torch 2.13: F.linear(x, w, b) on matrices is addmm, F.cross_entropy's
    # loss an nll_loss (of log_softmax)
    x, w, b = _leaves(_data(1, np.float32), (True, True, False))
    h = F.linear(x, w, b)
    loss = F.cross_entropy(h, kn.tensor([0, 1, 2, 3, 0, 1]))
    assert h.grad_fn.name() == "AddmmBackward0"
    assert loss.grad_fn.name() == "NllLossBackward0"
    assert "grad_fn=<NllLossBackward0>" in repr(loss)
    # torch's graph: nll_loss of log_softmax, addmm(bias, input, weight.t())
    log_softmax = loss.grad_fn.next_functions[0][0]
    assert type(log_softmax).__name__ == "LogSoftmaxBackward0"
    assert log_softmax.next_functions[0][0] is h.grad_fn
    kinds = [type(f).__name__ if f is not None else None for f, _ in h.grad_fn.next_functions]
    assert kinds == [None, "AccumulateGrad", "TBackward0"]  # (bias, input, weight.t())
    assert h.grad_fn.next_functions[2][0].next_functions[0][0].variable is w


def test_fused_linear_refuses_an_input_changed_in_place():
    # as torch 2.13: x is saved for the weight's gradient, so x.add_(1) makes backward refuse
    x, w, b = _leaves(_data(2, np.float32), (False, True, True))
    h = F.linear(x, w, b)
    x.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        h.sum().backward()


def test_fused_xent_refuses_a_target_changed_in_place():
    # as torch 2.13: the target is saved by nll_loss
    x = kn.tensor(_data(3, np.float32)[0], requires_grad=True)
    t = kn.tensor([0, 1, 2, 3, 4, 0])
    loss = F.cross_entropy(x, t)
    t.zero_()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


def test_fused_hooks_retain_grad_and_no_grad():
    x, w, b = _leaves(_data(4, np.float64), (True, True, True))
    h = F.linear(x, w, b)
    h.retain_grad()
    seen = []
    h.register_hook(lambda g: seen.append(g.numpy().copy()))
    loss = F.cross_entropy(h, kn.tensor([3, 2, 1, 0, 1, 2]))
    loss.backward()
    np.testing.assert_array_equal(seen[0], h.grad.numpy())
    # d loss / d h = (softmax(h) - onehot) / N, the formula of the softmax cross-entropy
    p = np.exp(h.detach().numpy())
    p /= p.sum(1, keepdims=True)
    p[np.arange(6), [3, 2, 1, 0, 1, 2]] -= 1
    np.testing.assert_allclose(h.grad.numpy(), p / 6, rtol=1e-12, atol=1e-15)
    with kn.no_grad():
        assert F.linear(x, w, b).grad_fn is None
        assert F.cross_entropy(h, kn.tensor([0] * 6)).grad_fn is None


def test_fused_linear_create_graph_matches_the_composite():
    grads = []
    for fused in (True, False):
        x, w, b = _leaves(_data(5, np.float64), (True, True, True))
        h = F.linear(x, w, b) if fused else _linear_composite(x, w, b)
        (gx,) = kn.autograd.grad((h * h).sum(), [x], create_graph=True)
        (gw,) = kn.autograd.grad((gx * gx).sum(), [w])
        grads.append((gx.detach().numpy(), gw.numpy()))
    for got, want in zip(*grads):
        np.testing.assert_array_equal(got, want)


def test_fused_xent_leaves_other_cases_to_the_composite():
    x = kn.tensor(_data(6, np.float32)[0], requires_grad=True)
    ignored = F.cross_entropy(x, kn.tensor([0, -100, 2, 3, 4, 0]))
    assert ignored.grad_fn.op.name != "cross_entropy"  # the weighted-mean composite (whose
    # result is named as torch names it too, NllLossBackward0)
    with pytest.raises(IndexError, match="log_softmax_take"):
        F.cross_entropy(x, kn.tensor([0, 1, 2, 3, 4, 7]))  # its error names the kernel


def test_fused_xent_ignore_index_in_and_out_of_the_classes():
    logits = _data(7, np.float64)[0]  # (6, 5)
    t = kn.tensor([0, 2, 2, 3, 4, 1])
    x = kn.tensor(logits, requires_grad=True)
    loss = F.cross_entropy(x, t, ignore_index=2)  # two targets ignored: the composite's mean
    assert loss.grad_fn.op.name != "cross_entropy"
    logp = logits - np.log(np.exp(logits).sum(1, keepdims=True))  # log_softmax, by hand
    keep = np.array([0, 3, 4, 5])
    np.testing.assert_allclose(loss.item(), -logp[keep, t.numpy()[keep]].mean(), rtol=1e-12)
    # an ignore_index no class has (5 of 5 classes): nothing ignored, the fused entry
    fused = F.cross_entropy(x, t, ignore_index=5)
    assert fused.grad_fn.op.name == "cross_entropy"
    np.testing.assert_array_equal(_bits(fused), _bits(_xent_composite(x, t)))
