"""F.embedding_bag / nn.EmbeddingBag's `max_norm`, `scale_grad_by_freq` and `sparse` (issue
11; they raised NotImplementedError), against torch 2.13: values, gradients, the in-place
renorm of the weight, the sparse gradient's layout, and torch's refusals.

`scale_grad_by_freq`: torch 2.13's CPU embedding_bag divides a once-occurring index that
sorts after a repeated one by the repeated one's count (pytorch/pytorch#190063; its CUDA
kernel, F.embedding and the documentation divide each row by its own index's frequency).
kiln follows the documented rule, so the reference there is torch's F.embedding rows bagged
by hand, and a hand-computed case."""

import numpy as np
import pytest

import kiln as kn

torch = pytest.importorskip("torch")
F = torch.nn.functional
KF = kn.nn.functional

W = np.random.default_rng(0).standard_normal((6, 3)) * 2
IDX = [0, 2, 2, 4, 2, 1, 5]
OFF = [0, 3, 3]  # the middle bag is empty
CT = np.arange(9.0).reshape(3, 3)


def _run(L, FF, mode, **kw):
    w = L.tensor(W.copy(), requires_grad=True)
    out = FF.embedding_bag(L.tensor(IDX), w, L.tensor(OFF), mode=mode, **kw)
    (out * L.tensor(CT)).sum().backward()
    grad = w.grad.to_dense() if w.grad.is_sparse else w.grad
    return out.detach().numpy(), grad.numpy(), w.detach().numpy(), w.grad.is_sparse


OPTIONS = [
    ("sum", dict(max_norm=1.0)),
    ("mean", dict(max_norm=1.5, norm_type=1.0)),
    ("max", dict(max_norm=1.0)),
    ("sum", dict(sparse=True)),
    ("mean", dict(sparse=True, padding_idx=4)),
    ("sum", dict(sparse=True, max_norm=1.0)),
    ("sum", dict(sparse=True, padding_idx=2, max_norm=2.0)),
]


@pytest.mark.parametrize("mode,kw", OPTIONS, ids=[f"{m}-{sorted(k)}" for m, k in OPTIONS])
def test_options_as_torchs(mode, kw):
    want, got = _run(torch, F, mode, **kw), _run(kn, KF, mode, **kw)
    for g, w, what in zip(got[:3], want[:3], ("value", "gradient", "renormed weight")):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12, err_msg=what)
    assert got[3] == want[3]  # a sparse gradient where torch gives one


def _bagged_by_hand(L, FF, rows, mode):
    bags = [rows[0:3], rows[3:3], rows[3:7]]
    agg = [b.sum(0) if mode == "sum" else b.mean(0) if len(b) else b.sum(0) for b in bags]
    return L.stack(agg)


@pytest.mark.parametrize("mode", ["sum", "mean"])
def test_scale_grad_by_freq_divides_by_each_index_count(mode):
    w = torch.tensor(W.copy(), requires_grad=True)
    rows = F.embedding(torch.tensor(IDX), w, scale_grad_by_freq=True)
    (_bagged_by_hand(torch, F, rows, mode) * torch.tensor(CT)).sum().backward()
    got = _run(kn, KF, mode, scale_grad_by_freq=True)
    want_out = F.embedding_bag(torch.tensor(IDX), torch.tensor(W), torch.tensor(OFF), mode=mode)
    np.testing.assert_allclose(got[0], want_out.numpy(), rtol=1e-12)
    np.testing.assert_allclose(got[1], w.grad.numpy(), rtol=1e-12)
    # by hand: [1, 1, 3] summed into one bag, ones as the output's gradient: each row's
    # gradient is its count divided by its count
    w = kn.ones(4, 1, requires_grad=True)
    KF.embedding_bag(kn.tensor([1, 1, 3]), w, kn.tensor([0]), mode="sum",
                     scale_grad_by_freq=True).sum().backward()  # fmt: skip
    assert w.grad[:, 0].tolist() == [0.0, 1.0, 0.0, 1.0]


def test_graph_mode_and_compile_take_scale_grad_by_freq_and_max_norm():
    w = torch.tensor(W.copy(), requires_grad=True)
    rows = F.embedding(torch.tensor(IDX), w, scale_grad_by_freq=True)
    (_bagged_by_hand(torch, F, rows, "mean") * torch.tensor(CT)).sum().backward()
    bag = kn.nn.EmbeddingBag(6, 3, scale_grad_by_freq=True, _weight=W.copy())
    step = kn.compile(lambda i, o: (bag(i, o) * kn.tensor(CT)).sum())
    step(kn.tensor(IDX), kn.tensor(OFF)).backward()
    np.testing.assert_allclose(bag.weight.grad.numpy(), w.grad.numpy(), rtol=1e-12)
    with kn.Graph().as_default():
        table = kn.placeholder(kn.float64, (6, 3), name="w")
        out = KF.embedding_bag(kn.tensor(IDX), table, kn.tensor(OFF), mode="mean",
                               scale_grad_by_freq=True)  # fmt: skip
        (grad,) = kn.grad((out * CT).sum(), [table])
        got = kn.function([table], grad)(W)
    np.testing.assert_allclose(got, w.grad.numpy(), rtol=1e-12)
    # max_norm under kn.compile: the values, and the module's weight renormed in place
    want = F.embedding_bag(torch.tensor(IDX), wt := torch.tensor(W.copy()), torch.tensor(OFF),
                           max_norm=1.0)  # fmt: skip
    bag = kn.nn.EmbeddingBag(6, 3, max_norm=1.0, _weight=W.copy())
    got = kn.compile(lambda i, o: bag(i, o))(kn.tensor(IDX), kn.tensor(OFF))
    np.testing.assert_allclose(got.detach().numpy(), want.numpy(), rtol=1e-12)
    np.testing.assert_allclose(bag.weight.detach().numpy(), wt.numpy(), rtol=1e-12)


def test_refusals_as_torchs():
    cases = [
        ("max", dict(scale_grad_by_freq=True), ValueError),
        ("max", dict(sparse=True), ValueError),
        ("sum", dict(sparse=True, scale_grad_by_freq=True), RuntimeError),
    ]
    for mode, kw, error in cases:
        with pytest.raises(error):
            _run(torch, F, mode, **kw)
        with pytest.raises(error):
            _run(kn, KF, mode, **kw)
    with pytest.raises(RuntimeError, match="sparse=True"):  # kiln's graph gradients are dense
        kn.compile(lambda w: KF.embedding_bag(kn.tensor(IDX), w, kn.tensor(OFF), sparse=True))(
            kn.tensor(W)
        )
