"""Views whose layout or aliasing differed from PyTorch's without an error: `stride()` after
`expand` and `unfold` as a view. Expected values are torch 2.13's (written out; the torch
tests rerun them where torch is installed)."""

import numpy as np
import pytest

import kiln as kn

# (make the base, expand it): torch 2.13's strides, in elements
EXPAND_CASES = {
    "expand": (lambda m: m.arange(3.0).reshape(3, 1), lambda t: t.expand(3, 4), (1, 0)),
    "expand-keeps-1": (lambda m: m.arange(3.0).reshape(3, 1), lambda t: t.expand(3, 1), (1, 1)),
    "expand-minus-1": (lambda m: m.arange(3.0).reshape(3, 1), lambda t: t.expand(-1, 4), (1, 0)),
    "broadcast_to": (lambda m: m.arange(3.0).reshape(3, 1),
                     lambda t: t.broadcast_to((2, 3, 4)), (0, 1, 0)),
    "expand_as": (lambda m: m.arange(3.0).reshape(3, 1), lambda t: t.expand_as(t.new_zeros(3, 4)),
                  (1, 0)),
    "row": (lambda m: m.ones(1, 3), lambda t: t.expand(2, 3), (0, 1)),
    "size-1-to-1": (lambda m: m.ones(1, 1), lambda t: t.expand(1, 5), (1, 0)),
    "new-leading-1": (lambda m: m.ones(3), lambda t: t.expand(1, 1, 3), (3, 3, 1)),
    "strided-base": (lambda m: m.ones(3)[::2], lambda t: t.expand(1, 1, 2), (4, 4, 2)),
    "column-slice": (lambda m: m.ones(2, 3)[:, :1], lambda t: t.expand(1, 2, 1), (6, 3, 1)),
    "0-d": (lambda m: m.tensor(2.0), lambda t: t.expand(3, 1), (0, 0)),
    "transposed": (lambda m: m.arange(3.0).reshape(3, 1), lambda t: t.expand(3, 4).t(), (0, 1)),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(EXPAND_CASES))
def test_expand_strides_are_torchs(name):
    make, expand, want = EXPAND_CASES[name]
    base = make(kn)
    y = expand(base)
    assert y.stride() == want
    # the same elements (size-1 dims address nothing), a view of the base
    np.testing.assert_array_equal(y.numpy(), expand(kn.tensor(base.numpy().copy())).numpy())
    assert np.shares_memory(y.numpy(), base.numpy())
    assert y.storage_offset() == base.storage_offset()


def test_the_expand_strides_are_torchs():
    torch = pytest.importorskip("torch")
    for name, (make, expand, want) in EXPAND_CASES.items():
        assert expand(make(torch)).stride() == want, name


def _unfold_story(m):
    """x.unfold as a view: a write through it reaches x, a later write to x shows through it;
    torch 2.13's values and strides below."""
    x = m.arange(8.0)
    u = x.unfold(0, 3, 2)
    u[1, 0] = 100.0
    x[1] = -1.0
    y = m.arange(12.0).reshape(3, 4)
    v = y.t().unfold(1, 2, 1)
    y[0, 0] = 50.0
    return x.tolist(), u.tolist(), u.stride(), v.tolist(), v.stride()


UNFOLD_WANT = (
    [0.0, -1.0, 100.0, 3.0, 4.0, 5.0, 6.0, 7.0],
    [[0.0, -1.0, 100.0], [100.0, 3.0, 4.0], [4.0, 5.0, 6.0]],
    (2, 1),
    [[[50.0, 4.0], [4.0, 8.0]], [[1.0, 5.0], [5.0, 9.0]], [[2.0, 6.0], [6.0, 10.0]],
     [[3.0, 7.0], [7.0, 11.0]]],
    (1, 4, 4),
)  # fmt: skip


def test_eager_unfold_is_a_view():
    assert _unfold_story(kn) == UNFOLD_WANT


def _unfold_grads(m):
    z = m.arange(6.0, requires_grad=True)
    (z.unfold(0, 2, 2) * m.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])).sum().backward()
    first = z.grad.tolist()
    z = m.arange(6.0, requires_grad=True)
    w = z * 1
    w.unfold(0, 2, 2).mul_(m.tensor([2.0, 3.0]))  # in place through the view: recorded
    (w * m.arange(6.0)).sum().backward()
    return first, w.tolist(), z.grad.tolist()


def test_eager_unfold_gradients_and_in_place_changes_through_it():
    assert _unfold_grads(kn) == (
        [1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
        [0.0, 3.0, 4.0, 9.0, 8.0, 15.0],
        [0.0, 3.0, 4.0, 9.0, 8.0, 15.0],
    )


def test_the_unfold_values_are_torchs():
    torch = pytest.importorskip("torch")
    assert _unfold_story(torch) == UNFOLD_WANT
    assert _unfold_grads(torch) == (
        [1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
        [0.0, 3.0, 4.0, 9.0, 8.0, 15.0],
        [0.0, 3.0, 4.0, 9.0, 8.0, 15.0],
    )


def _unfold_story_compiled(x):
    y = x * 1
    u = y.unfold(0, 3, 2)
    u[1, 0] = 100.0  # reaches y
    y[1] = -1.0  # shows through u
    w = y * 1
    w.unfold(0, 2, 2).mul_(2.0)  # every element of w, through the view
    return y, u * 1, w


def test_compiled_unfold_is_a_view():
    y, u, w = kn.compile(_unfold_story_compiled)(kn.arange(8.0))
    assert y.tolist() == UNFOLD_WANT[0] and u.tolist() == UNFOLD_WANT[1]
    assert w.tolist() == [0.0, -2.0, 200.0, 6.0, 8.0, 10.0, 12.0, 14.0]  # torch 2.13


def test_compiled_unfold_gradients_are_eagers():
    def f(z):
        w = z * 1
        w.unfold(0, 2, 2).mul_(kn.tensor([2.0, 3.0]))
        return (w * kn.arange(6.0)).sum() + (z.unfold(0, 3, 1) ** 2).sum()

    grads = []
    for fn in (f, kn.compile(f)):
        z = kn.arange(6.0, requires_grad=True)
        fn(z).backward()
        grads.append(z.grad.tolist())
    # (w * arange)'s [0, 3, 4, 9, 8, 15] plus 2 z times how many of the 4 windows hold z
    assert grads[0] == grads[1] == [0.0, 7.0, 16.0, 27.0, 24.0, 25.0]


def test_the_compiled_unfold_values_are_torchs():
    torch = pytest.importorskip("torch")
    y, u, w = _unfold_story_compiled(torch.arange(8.0))
    assert y.tolist() == UNFOLD_WANT[0] and u.tolist() == UNFOLD_WANT[1]
    assert w.tolist() == [0.0, -2.0, 200.0, 6.0, 8.0, 10.0, 12.0, 14.0]


def test_unfold_under_vmap():
    x = kn.arange(15.0).reshape(3, 5)
    y = kn.vmap(lambda r: r.unfold(0, 2, 2))(x)
    np.testing.assert_array_equal(y.numpy(), x.unfold(1, 2, 2).numpy())
