"""`as_strided` views written in place. Under kn.compile an as_strided result was a gathered
copy: a change through it never reached its base (`x.as_strided((2, 2), (1, 4), 1).add_(10)`
left x as it was) and it did not see its base's later changes. Eagerly, a write into a view
whose elements share memory (a stride of 0: `expand`, `as_strided`) went through where
PyTorch refuses it, and item assignment into one row of such a view, recorded by autograd,
was lost. Expected values are torch 2.13's, written out (the last test reruns them)."""

import numpy as np
import pytest

import kiln as kn

A = np.arange(12.0, dtype=np.float32).reshape(3, 4)


def _through(m, x):
    x.as_strided((2, 2), (1, 4), 1).add_(10)  # storage positions 1, 5, 2, 6
    return x


def _base_changes_after(m, x):
    y = x.clone()
    v = y.t().as_strided((2,), (5,), 2)  # positions 2 and 7
    y.mul_(-1)
    return v


def _view_of_the_view(m, x):
    y = x.clone()
    v = y[1:].as_strided((2, 3), (4, 1), 5)  # rows 1 and 2, columns 1 to 3
    v[:, 0].fill_(-1)
    v.T[2].zero_()
    return y, v


def _strided_of_strided(m, x):
    y = x.clone()
    v = y.as_strided((2, 2), (1, 4), 1)  # positions 1, 5, 2, 6
    w = v.as_strided((3,), (2,), 0)  # of the storage, not of v: positions 0, 2, 4
    w.add_(100)
    return y, v


def _past_the_view(m, x):
    y = x.clone()
    w = y[1].as_strided((2,), (1,), 0)  # row 1 is positions 4..7; w reads 0 and 1
    w.mul_(-1)
    return y, w


# (program, expected: torch 2.13 on A, worked out by hand in the comments above)
CASES = {
    "through": (_through, ([[0, 11, 12, 3], [4, 15, 16, 7], [8, 9, 10, 11]],)),
    "base_changes_after": (_base_changes_after, ([-2, -7],)),
    "view_of_the_view": (
        _view_of_the_view,
        ([[0, 1, 2, 3], [4, -1, 6, 0], [8, -1, 10, 0]], [[-1, 6, 0], [-1, 10, 0]]),
    ),
    # under kn.compile these gathered from the view's own elements as if they were the
    # storage (the first gave v [[1, 5], [102, 6]] where a wrong element changed, the second
    # raised a UsageError): found by a random eager-against-compiled comparison
    "strided_of_strided": (
        _strided_of_strided,
        ([[100, 1, 102, 3], [104, 5, 6, 7], [8, 9, 10, 11]], [[1, 5], [102, 6]]),
    ),
    "past_the_view": (_past_the_view, ([[0, -1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]], [0, -1])),
}


def _as_tuple(r):
    return r if isinstance(r, tuple) else (r,)


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("mode", ["eager", "compiled"])
def test_as_strided_views_share_their_base(name, mode):
    fn, want = CASES[name]
    f = (lambda x: fn(kn, x)) if mode == "eager" else kn.compile(lambda x: fn(kn, x))
    for _ in range(2):  # the compiled program's second call too
        x = kn.tensor(A)
        got = _as_tuple(f(x))
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g.numpy(), np.float32(w))
        if name == "through":
            np.testing.assert_array_equal(x.numpy(), np.float32(want[0]))


def _grads(m, x, w):
    y = x * 1
    v = y.as_strided((2, 2), (1, 4), 1)
    v.mul_(w)
    y.add_(1)
    return (y * m.arange(12.0).reshape(3, 4)).sum() + (v * v).sum()


# torch 2.13: loss, x.grad, w.grad
GRADS = (
    2086.0,
    [0, 14, 80, 3, 4, 111, 340, 7, 8, 9, 10, 11],
    [[7, 185], [40, 408]],
)


@pytest.mark.parametrize("mode", ["eager", "compiled"])
def test_gradients_through_a_changed_as_strided_view(mode):
    f = _grads if mode == "eager" else kn.compile(lambda m, x, w: _grads(kn, x, w))
    x = kn.tensor(A, requires_grad=True)
    w = kn.tensor([[2.0, 3.0], [4.0, 5.0]], requires_grad=True)
    loss = f(kn, x, w)
    loss.backward()
    assert loss.item() == GRADS[0]
    np.testing.assert_array_equal(x.grad.numpy().ravel(), np.float32(GRADS[1]))
    np.testing.assert_array_equal(w.grad.numpy(), np.float32(GRADS[2]))


SHARED_WRITES = {
    "as_strided.add_": lambda a: a.as_strided((2, 2), (0, 1)).add_(1),
    "expand.add_": lambda a: a[:3].expand(2, 3).add_(1),
    "as_strided column setitem": lambda a: a.as_strided((2, 2), (0, 1)).__setitem__(
        (slice(None), 0), 5.0
    ),
}


@pytest.mark.parametrize("name", sorted(SHARED_WRITES))
@pytest.mark.parametrize("requires_grad", [False, True])
def test_writes_into_shared_elements_are_refused_and_change_nothing(name, requires_grad):
    a = kn.ones(6, requires_grad=requires_grad).clone()
    with pytest.raises(kn.errors.ShapeMismatchError, match="single memory location"):
        SHARED_WRITES[name](a)
    np.testing.assert_array_equal(a.detach().numpy(), np.ones(6, np.float32))


def test_compiled_write_into_shared_elements_is_refused():
    x = kn.ones(6)
    f = kn.compile(lambda x: SHARED_WRITES["as_strided.add_"](x))
    with pytest.raises(kn.errors.ShapeMismatchError, match="single memory location"):
        f(x)
    np.testing.assert_array_equal(x.numpy(), np.ones(6, np.float32))


def _row_writes(m, x, w):
    a = x * 1
    v = a.as_strided((2, 2), (0, 1))
    v[0] = w  # one row: the other row is the same memory, so it shows w too
    v[1, 1:] = 3.0
    return a, v


# torch 2.13: a, v, and the gradients of (a * arange(6)).sum()
ROW_WRITES = ([5, 3, 2, 3, 4, 5], [[5, 3], [5, 3]], [0, 0, 2, 3, 4, 5], 0.0)


@pytest.mark.parametrize("requires_grad", [False, True])
def test_item_assignment_into_a_row_of_shared_elements(requires_grad):
    x = kn.arange(6.0, requires_grad=requires_grad)
    w = kn.tensor(5.0, requires_grad=requires_grad)
    a, v = _row_writes(kn, x, w)
    np.testing.assert_array_equal(a.detach().numpy(), np.float32(ROW_WRITES[0]))
    np.testing.assert_array_equal(v.detach().numpy(), np.float32(ROW_WRITES[1]))
    if requires_grad:
        (a * kn.arange(6.0)).sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), np.float32(ROW_WRITES[2]))
        assert float(w.grad) == ROW_WRITES[3]


def test_the_expected_values_are_torchs():
    torch = pytest.importorskip("torch")
    for fn, want in CASES.values():
        got = _as_tuple(fn(torch, torch.tensor(A)))
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g.numpy(), np.float32(w))
    x = torch.tensor(A, requires_grad=True)
    w = torch.tensor([[2.0, 3.0], [4.0, 5.0]], requires_grad=True)
    loss = _grads(torch, x, w)
    loss.backward()
    assert loss.item() == GRADS[0]
    np.testing.assert_array_equal(x.grad.numpy().ravel(), np.float32(GRADS[1]))
    np.testing.assert_array_equal(w.grad.numpy(), np.float32(GRADS[2]))
    for name, write in SHARED_WRITES.items():
        for requires_grad in (False, True):
            a = torch.ones(6, requires_grad=requires_grad).clone()
            with pytest.raises(RuntimeError, match="single memory location"):
                write(a)
    x = torch.arange(6.0, requires_grad=True)
    w = torch.tensor(5.0, requires_grad=True)
    a, v = _row_writes(torch, x, w)
    np.testing.assert_array_equal(a.detach().numpy(), np.float32(ROW_WRITES[0]))
    np.testing.assert_array_equal(v.detach().numpy(), np.float32(ROW_WRITES[1]))
    (a * torch.arange(6.0)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.float32(ROW_WRITES[2]))
    assert float(w.grad) == ROW_WRITES[3]


def test_an_as_strided_view_of_a_graph_value_has_its_strides():
    """stride() and storage_offset() of an as_strided view and of views of it are the ones
    it was made with (they read as a fresh contiguous tensor's); torch 2.13 gives these."""
    with kn.Graph().as_default():
        a = kn.placeholder(kn.float32, (3, 4), name="a")
        v = a.as_strided((2, 2), (1, 4), 1)
        assert v.stride() == (1, 4) and v.storage_offset() == 1
        assert v.t().stride() == (4, 1) and v[1].storage_offset() == 2


@pytest.mark.parametrize("mode", ["eager", "compiled"])
def test_as_strided_of_a_recorded_view_reaches_its_base(mode):
    """as_strided of a view that autograd records reads the storage past the view's own
    elements, eagerly (it raised a UsageError) and compiled alike. Values: torch 2.13's.
    The gradient is each read element's weight at its place in the storage ([1, 3, 2, 4],
    by hand: v holds a[0], a[2], a[1], a[3]); torch 2.13 gives [0, 3, 0, 0], keeping only
    the element inside the view's own geometry (its as_strided backward works in the
    input's geometry), which is not the derivative: a deliberate difference."""

    def fn(a):
        y = a * 1
        v = y[1].as_strided((2, 2), (1, 2), 0)
        return (v * kn.tensor([[1.0, 2.0], [3.0, 4.0]])).sum(), v

    f = fn if mode == "eager" else kn.compile(fn)
    for _ in range(2):
        a = kn.arange(4.0, requires_grad=True)
        loss, v = f(a)
        loss.backward()
        assert v.tolist() == [[0.0, 2.0], [1.0, 3.0]]
        assert a.grad.tolist() == [1.0, 3.0, 2.0, 4.0]
