"""Optimizers and sparse gradients (`nn.Embedding(sparse=True)`), as PyTorch 2.13: SGD and
Adagrad take them (the rows not looked up stay as they are), SparseAdam is the lazy Adam, and
the others refuse them with PyTorch's RuntimeError, changing nothing. Before, kiln's dense
optimizers read only the stored values and silently updated every row.

Expected values: PyTorch's, by running the same steps there."""

from __future__ import annotations

import numpy as np
import pytest

import kiln as kn

torch = pytest.importorskip("torch")

W = (np.arange(12.0, dtype=np.float32).reshape(6, 2) - 5) / 7
TARGET = np.arange(8.0, dtype=np.float32).reshape(2, 2, 2) / 3
BATCHES = ([[1, 3], [1, 0]], [[5, 5], [2, 3]], [[0, 1], [4, 4]])


def _train(lib, make_opt, steps=3):
    emb = lib.nn.Embedding(6, 2, sparse=True, _weight=lib.tensor(W.copy()))
    opt = make_opt(lib, emb.parameters())
    for ids in BATCHES[:steps]:
        opt.zero_grad()
        ((emb(lib.tensor(ids)) - lib.tensor(TARGET)) ** 2).sum().backward()
        assert emb.weight.grad.is_sparse
        opt.step()
    return emb.weight.detach().numpy(), opt


TAKE_SPARSE = {
    "sgd": lambda m, ps: m.optim.SGD(ps, lr=0.1),
    "sgd-momentum-nesterov": lambda m, ps: m.optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True),
    "sgd-dampening-maximize": lambda m, ps: m.optim.SGD(
        ps, lr=0.05, momentum=0.5, dampening=0.3, maximize=True
    ),
    "adagrad": lambda m, ps: m.optim.Adagrad(ps, lr=0.3, lr_decay=0.01),
    "sparse-adam": lambda m, ps: m.optim.SparseAdam(ps, lr=0.01),
    "sparse-adam-maximize": lambda m, ps: m.optim.SparseAdam(
        ps, lr=0.02, betas=(0.8, 0.9), eps=1e-6, maximize=True
    ),
}


@pytest.mark.filterwarnings("ignore:Sparse invariant checks")
@pytest.mark.parametrize("name", sorted(TAKE_SPARSE))
def test_optimizers_that_take_sparse_gradients_step_as_pytorch(name):
    got, opt = _train(kn, TAKE_SPARSE[name])
    want, topt = _train(torch, TAKE_SPARSE[name])
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    assert not np.array_equal(got[[1, 3, 5]], W[[1, 3, 5]])  # looked-up rows moved
    ours, theirs = opt.state_dict()["state"], topt.state_dict()["state"]
    assert sorted(ours) == sorted(theirs)
    for k in theirs:
        assert list(ours[k]) == list(theirs[k])
        for key, value in theirs[k].items():
            if isinstance(value, torch.Tensor):
                mine = ours[k][key]
                mine = mine.to_dense() if mine.is_sparse else mine
                value = value.to_dense() if value.is_sparse else value
                np.testing.assert_allclose(mine.numpy(), value.numpy(), rtol=1e-6, atol=1e-7)
            else:
                assert ours[k][key] == value


def test_a_row_never_looked_up_stays_as_it_was():
    got, _ = _train(kn, TAKE_SPARSE["sparse-adam"], steps=2)  # rows 4 never looked up
    np.testing.assert_array_equal(got[4], W[4])


REFUSE = {
    "Adam": "Adam does not support sparse gradients, please consider SparseAdam instead",
    "AdamW": "Adam does not support sparse gradients, please consider SparseAdam instead",
    "RMSprop": "RMSprop does not support sparse gradients",
    "Adadelta": "Adadelta does not support sparse gradients",
    "Adamax": "Adamax does not support sparse gradients",
    "NAdam": "NAdam does not support sparse gradients",
    "RAdam": "RAdam does not support sparse gradients",
    "ASGD": "ASGD does not support sparse gradients",
    "Rprop": "Rprop does not support sparse gradients",
}


@pytest.mark.parametrize("name", sorted(REFUSE))
def test_the_others_refuse_sparse_gradients_and_change_nothing(name):
    for lib in (torch, kn):
        emb = lib.nn.Embedding(6, 2, sparse=True, _weight=lib.tensor(W.copy()))
        opt = getattr(lib.optim, name)(emb.parameters(), lr=0.1)
        emb(lib.tensor([1, 2])).sum().backward()
        with pytest.raises(RuntimeError, match=REFUSE[name]):
            opt.step()
        np.testing.assert_array_equal(emb.weight.detach().numpy(), W)
        assert not opt.state_dict()["state"]


@pytest.mark.parametrize("name", ["SGD", "Adagrad"])
def test_weight_decay_with_sparse_gradients_is_refused(name):
    for lib in (torch, kn):  # PyTorch's SGD fails in add(sparse, dense); Adagrad says why
        emb = lib.nn.Embedding(6, 2, sparse=True, _weight=lib.tensor(W.copy()))
        opt = getattr(lib.optim, name)(emb.parameters(), lr=0.1, weight_decay=0.1)
        emb(lib.tensor([1])).sum().backward()
        with pytest.raises(RuntimeError):
            opt.step()
        np.testing.assert_array_equal(emb.weight.detach().numpy(), W)


def test_sparse_adam_still_refuses_a_dense_gradient_and_changes_nothing():
    emb = kn.nn.Embedding(6, 2, sparse=True, _weight=kn.tensor(W.copy()))
    dense = kn.tensor([1.0, 2.0], requires_grad=True)
    opt = kn.optim.SparseAdam([emb.weight, dense])
    (emb(kn.tensor([1])).sum() + (dense * dense).sum()).backward()
    with pytest.raises(RuntimeError, match="SparseAdam does not support dense gradients"):
        opt.step()
    np.testing.assert_array_equal(emb.weight.detach().numpy(), W)  # its update not written
    assert not opt.state_dict()["state"]


def test_lbfgs_takes_a_sparse_gradient_as_pytorch():
    def run(lib):
        emb = lib.nn.Embedding(6, 2, sparse=True, _weight=lib.tensor(W.copy()))
        opt = lib.optim.LBFGS(emb.parameters(), lr=0.5, max_iter=4)

        def closure():
            opt.zero_grad()
            loss = ((emb(lib.tensor([1, 3])) - 1.0) ** 2).sum()
            loss.backward()
            return loss

        opt.step(closure)
        return emb.weight.detach().numpy()

    np.testing.assert_allclose(run(kn), run(torch), rtol=1e-5, atol=1e-6)
