"""`Tensor.share_memory_`, `is_shared` and `Module.share_memory`: the memory moves into a
shared mapping that a process forked afterwards reads and writes, so in-place changes on
either side are seen on the other (checked in a real forked child); what kiln cannot share
is refused. Expected values are computed by hand; torch (where installed) gives the same
is_shared facts and Hogwild step."""

import multiprocessing
import sys

import pytest

import kiln as kn

fork = pytest.mark.skipif(
    sys.platform == "win32" or "fork" not in multiprocessing.get_all_start_methods(),
    reason="needs the fork start method",
)


def _in_child(fn) -> None:
    """Runs `fn` in a forked child process; fails if it fails."""
    child = multiprocessing.get_context("fork").Process(target=fn)
    child.start()
    child.join(60)
    assert child.exitcode == 0


@fork
def test_a_forked_child_and_the_parent_see_each_others_writes():
    shared = kn.arange(4.0).share_memory_()
    private = kn.arange(4.0)
    assert shared.is_shared() and not private.is_shared()

    def child():
        shared.add_(10.0)  # in place, in the shared memory
        private.add_(10.0)  # the child's own copy
        assert shared.tolist() == [10.0, 11.0, 12.0, 13.0]

    _in_child(child)
    assert shared.tolist() == [10.0, 11.0, 12.0, 13.0]
    assert private.tolist() == [0.0, 1.0, 2.0, 3.0]
    shared.mul_(2.0)  # the parent writes: a child forked now reads it

    def reader():
        assert shared.tolist() == [20.0, 22.0, 24.0, 26.0]

    _in_child(reader)


@fork
def test_hogwild_step_in_a_child_changes_the_parents_module():
    """Module.share_memory(), then an eager SGD step in a forked child: the parent's
    weights are the stepped ones (w - lr * grad, by hand: grad of sum(w * x) is x)."""
    model = kn.nn.Linear(3, 1, bias=False)
    with kn.no_grad():
        model.weight.copy_(kn.tensor([[1.0, 2.0, 3.0]]))
    assert model.share_memory() is model
    assert all(p.is_shared() for p in model.parameters())

    def child():
        opt = kn.optim.SGD(model.parameters(), lr=0.5)
        model(kn.tensor([[1.0, -1.0, 2.0]])).sum().backward()
        opt.step()

    _in_child(child)
    assert model.weight.tolist() == [[0.5, 2.5, 2.0]]


def test_share_memory_keeps_values_dtype_and_autograd():
    t = kn.tensor([[1.5, -2.0], [3.0, 4.0]], dtype=kn.float64)
    assert t.share_memory_() is t and t.is_shared()
    assert t.dtype == kn.float64 and t.tolist() == [[1.5, -2.0], [3.0, 4.0]]
    assert t.share_memory_().is_shared()  # already shared: as it is
    w = kn.tensor([1.0, 2.0], requires_grad=True).share_memory_()
    (w * w).sum().backward()
    assert w.grad.tolist() == [2.0, 4.0] and w.is_shared()
    y = w * 3  # a result of an op: its tape entry keeps the output, and it still moves
    assert y.share_memory_().is_shared()
    assert kn.zeros(0).share_memory_().is_shared()


def test_what_kiln_cannot_share_is_refused():
    base = kn.arange(6.0)
    view = base[2:]
    with pytest.raises(kn.errors.UsageError, match="share_memory_ of a view"):
        view.share_memory_()
    with pytest.raises(kn.errors.UsageError, match="other arrays use"):
        base.share_memory_()  # `view` would keep the old memory
    assert not base.is_shared() and not view.is_shared()
    assert base.clone().share_memory_().is_shared()


def test_module_share_memory_covers_buffers_and_grads():
    model = kn.nn.Sequential(kn.nn.Linear(2, 2), kn.nn.BatchNorm1d(2))
    model(kn.ones(3, 2)).sum().backward()
    model.share_memory()
    assert all(b.is_shared() for b in model.buffers())
    assert all(p.grad.is_shared() for p in model.parameters())


def test_is_shared_facts_match_torch():
    torch = pytest.importorskip("torch")
    for lib in (torch, kn):
        t = lib.ones(3)
        assert t.is_shared() is False
        assert t.share_memory_() is t and t.is_shared() is True
        m = lib.nn.Linear(2, 2)
        assert m.share_memory() is m
        assert all(p.is_shared() for p in m.parameters())
