"""In-place methods and item assignment on Symbols (kiln/frontend/functionalize.py): the same
eager-style code gives the same values and gradients eagerly, in graph mode and under
`kn.compile`. The expected values are the eager run's (PyTorch's semantics, which the eager
tests and the torch oracle check); where torch is installed, the last test runs the idioms on
torch too."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kiln as kn
import kiln.nn.functional as F

A = np.array([[-1.0, 2.0, -3.0], [4.0, -5.0, 6.0]], np.float32)


def relu_inplace(m, x):
    h = x * 2
    (m.nn.functional if m is not kn else F).relu(h, inplace=True)  # result not used
    return h


def method_statement(m, x):
    h = x * 2
    h.relu_()
    h.mul_(3).add_(1, alpha=2)
    return h


def setitem_row(m, x):
    h = x * 1
    h[0] = 5.0
    return h


def setitem_tensor_value(m, x):
    h = x * 1
    h[:, 1] = x[:, 0] * 10
    return h


def view_fill_writes_base(m, x):
    h = x * 1
    v = h[:, 1]
    v.fill_(0)
    return h


def overlapping_views(m, x):
    h = x * 1
    a = h[0:2, 0:2]
    b = h[:, 1:3]  # taken before the change: sees it (shared memory)
    a.zero_()
    return b * 1


def transpose_view(m, x):
    h = x * 1
    t = h.T
    t[0] = 9
    return h


def reshape_view_sees_base(m, x):
    h = x.reshape(6) * 1
    v = h.view(2, 3)
    h[1] = 100
    return v


def old_value_kept(m, x):
    h = x * 1
    y = h + 0  # read before the change: the old value
    h += 10
    return y * h


def view_of_view(m, x):
    h = x * 1
    row = h[1]
    part = row[1:]
    part.mul_(-1)
    return h + row.sum()


def clamp_and_copy(m, x):
    h = x * 1
    h.clamp_(-2, 3)
    g = x * 0
    g.copy_(h.T.T)
    g.add_(1)  # g has memory of its own: h is unchanged
    return h * 10 + g


IDIOMS = [relu_inplace, method_statement, setitem_row, setitem_tensor_value,
          view_fill_writes_base, transpose_view, old_value_kept, clamp_and_copy]  # fmt: skip


def _graph(fn, a):
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, a.shape, name="x")
        y = fn(kn, x)
        grad = kn.grad(y.sum(), [x])[0]
        f = kn.function([x], [y, grad])
    return f(a)


def _eager(fn, a, compiled=False):
    x = kn.tensor(a, requires_grad=True)
    run = kn.compile(lambda x: fn(kn, x)) if compiled else (lambda x: fn(kn, x))
    y = run(x)
    y.sum().backward()
    return y.detach().numpy(), x.grad.numpy()


@pytest.mark.parametrize("fn", IDIOMS, ids=[f.__name__ for f in IDIOMS])
def test_idiom_gives_eagers_values_and_gradients_in_graph_mode_and_compiled(fn):
    want_y, want_g = _eager(fn, A)
    for what, (y, g) in (("graph", _graph(fn, A)), ("compile", _eager(fn, A, compiled=True))):
        np.testing.assert_array_equal(y, want_y, err_msg=what)
        np.testing.assert_array_equal(g, want_g, err_msg=what)


# Idioms eager kiln refuses to differentiate (a view used after its base changed: its history
# is out of date); graph mode and kn.compile rebuild the view, as PyTorch does. Expected by
# hand: (values, gradient of their sum with respect to x).
BY_HAND = [
    # h[0:2, 0:2] zeroed leaves b = h[:, 1:3] = [[0, -3], [0, 6]]: x reaches it by column 2
    (overlapping_views, [[0.0, -3.0], [0.0, 6.0]], [[0.0, 0.0, 1.0], [0.0, 0.0, 1.0]]),
    # h[1] = 100 shows through the view v; x[0, 1] no longer reaches it
    (reshape_view_sees_base, [[-1.0, 100.0, -3.0], [4.0, -5.0, 6.0]],
     [[1.0, 0.0, 1.0], [1.0, 1.0, 1.0]]),
    # row = h[1] becomes [4, 5, -6] (sum 3), so y = h + 3; x[1] reaches y through h (±1) and
    # through the sum, added to all 6 elements (±6)
    (view_of_view, [[2.0, 5.0, 0.0], [7.0, 8.0, -3.0]], [[1.0, 1.0, 1.0], [7.0, -7.0, -7.0]]),
]  # fmt: skip


@pytest.mark.parametrize("case", BY_HAND, ids=[c[0].__name__ for c in BY_HAND])
def test_views_taken_before_a_change_see_it(case):
    fn, want_y, want_g = case
    for what, (y, g) in (("graph", _graph(fn, A)), ("compile", _eager(fn, A, compiled=True))):
        np.testing.assert_array_equal(y, np.array(want_y, np.float32), err_msg=what)
        np.testing.assert_array_equal(g, np.array(want_g, np.float32), err_msg=what)


def test_a_compiled_function_changes_its_arguments_in_place_as_pytorch():
    """torch.compile's rule: an argument changed in place is changed for the caller too (the
    compiled call writes the new value back, and bumps its version); one that requires grad
    is refused. Expected values: the eager run of the same function."""

    def f(x, counter, mask):
        counter.add_(1)
        x[0] = 9.0
        x[mask] = -1.0  # a mask of x's shape and one value: a select
        return x.sum() + counter

    compiled = kn.compile(f)
    runs = []
    for run in (f, compiled):
        x = kn.tensor([1.0, 2.0, 3.0, 4.0])
        counter = kn.tensor(0.0)
        mask = kn.tensor([False, False, True, False])
        out = [run(x, counter, mask).item() for _ in range(2)]
        runs.append((out, x.tolist(), counter.item()))
    # x becomes [9, 2, -1, 4] (sum 14); the counter is 1, then 2
    assert runs[0] == runs[1] == ([15.0, 16.0], [9.0, 2.0, -1.0, 4.0], 2.0)
    with pytest.raises(kn.GraphError, match="an argument of the compiled function that requires"):
        kn.compile(lambda v: v.mul_(2))(kn.tensor([1.0], requires_grad=True))


def test_refusals_name_the_op_and_the_line():
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (2, 3), name="x")
        with pytest.raises(kn.GraphError, match=r"in-place change of 'x', an input.*\(op add_"):
            x.add_(1)
        with pytest.raises(kn.GraphError, match=r"through the view"):
            x[0].zero_()
        w = kn.Variable(np.zeros(3, np.float32), name="w")
        with pytest.raises(kn.GraphError, match=r"a Variable changes only through updates="):
            w.mul_(2)
        i = kn.placeholder(kn.int64, (3,), name="i") * 1
        with pytest.raises(kn.DTypeError, match=r"result type float32 can't be cast.*int64"):
            i.add_(0.5)
        h = x * 1
        with pytest.raises(kn.ShapeError, match=r"doesn't match the broadcast shape"):
            h[0].add_(kn.ones((2, 3)))
        with pytest.raises(kn.ShapeError, match=r"more than one element"):
            (x * 1)[0].expand(4, 3).zero_()


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["row", "col", "T", "flat", "self"]),
                          st.sampled_from(["add", "mul", "set", "neg"]),
                          st.integers(0, 1)), min_size=1, max_size=5))  # fmt: skip
def test_random_views_and_changes_match_numpy_views(steps):
    """A random sequence of views of one value, each changed in place, then every view read:
    graph mode gives what NumPy's views (which share memory as PyTorch's do) give, and
    kn.compile the same values and gradients as graph mode."""

    def fn(m, x):
        h = x * 1
        views = []
        for kind, change, k in steps:
            v = {"row": lambda: h[k], "col": lambda: h[:, k], "T": lambda: h.T,
                 "flat": lambda: h.reshape(6), "self": lambda: h[...]}[kind]()  # fmt: skip
            views.append(v)
            if change == "add":
                v += k + 1
            elif change == "mul":
                v *= -2
            elif change == "set":
                v[...] = float(k)
            else:
                v[...] = -v
        flat = [h.reshape(-1)] + [v.reshape(-1) for v in views]
        return np.concatenate(flat) if m is np else kn.cat(flat)

    want = fn(np, A.copy())
    y, g = _graph(fn, A)
    np.testing.assert_array_equal(y, want)
    yc, gc = _eager(fn, A, compiled=True)
    np.testing.assert_array_equal(yc, want)
    np.testing.assert_array_equal(gc, g)


def test_idioms_match_torch():
    torch = pytest.importorskip("torch")
    for fn in [*IDIOMS, *(c[0] for c in BY_HAND)]:
        x = torch.tensor(A, requires_grad=True)
        y = fn(torch, x)
        if fn is method_statement:  # PyTorch refuses: relu's backward reads its changed output
            with pytest.raises(RuntimeError, match="modified by an inplace operation"):
                y.sum().backward()
            continue
        y.sum().backward()
        want_y, want_g = _graph(fn, A)
        np.testing.assert_allclose(y.detach().numpy(), want_y, err_msg=fn.__name__)
        np.testing.assert_allclose(x.grad.numpy(), want_g, err_msg=fn.__name__)


# A clone is a value of its own, and contiguous() copies only where PyTorch's does (a transpose
# or a strided column; not a row). Expected: PyTorch's own run of each function (checked below
# when torch is installed), and by hand: the caller's tensor never changes except through a
# contiguous view.
def clone_then_change(lib, x):
    y = x.clone()
    y[0] = 100.0
    return y * 2


def transpose_contiguous_then_change(lib, x):
    y = x.T.contiguous()
    y[0] = 0.0
    return y + x.T


def contiguous_self_then_change(lib, x):
    y = x.contiguous()
    y[0] = 5.0
    return y * 1


def row_contiguous_then_change(lib, x):
    y = x[1].contiguous()  # a row of a C-ordered matrix: contiguous, so x's memory
    y.mul_(10)
    return x * 1


def column_contiguous_then_change(lib, x):
    y = x[:, 1].contiguous()  # a column: a copy
    y.mul_(10)
    return x * 1


LAYOUT = [
    (clone_then_change, [[200, 200, 200], [6, 8, 10]], [[0, 1, 2], [3, 4, 5]]),
    (transpose_contiguous_then_change, [[0, 3], [2, 8], [4, 10]], [[0, 1, 2], [3, 4, 5]]),
    (contiguous_self_then_change, [[5, 5, 5], [3, 4, 5]], [[5, 5, 5], [3, 4, 5]]),
    (row_contiguous_then_change, [[0, 1, 2], [30, 40, 50]], [[0, 1, 2], [30, 40, 50]]),
    (column_contiguous_then_change, [[0, 1, 2], [3, 4, 5]], [[0, 1, 2], [3, 4, 5]]),
]


@pytest.mark.parametrize("case", LAYOUT, ids=[c[0].__name__ for c in LAYOUT])
def test_clone_and_contiguous_copy_where_pytorch_does(case):
    """The silent bug this pins: `y = x.clone(); y[0] = v` under kn.compile changed the
    caller's x (a Symbol's clone was x itself)."""
    fn, want_y, want_x = case
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    for run in (lambda t: fn(kn, t), kn.compile(lambda t: fn(kn, t))):  # eager, compiled
        x = kn.tensor(a.copy())
        y = run(x)
        np.testing.assert_array_equal(y.numpy(), np.array(want_y, np.float32))
        np.testing.assert_array_equal(x.numpy(), np.array(want_x, np.float32))
    with kn.Graph().as_default():  # a computed value (a feed cannot change)
        p = kn.placeholder(kn.float32, (2, 3), name="p")
        got = kn.function([p], [fn(kn, p * 1.0)])(a)[0]
    np.testing.assert_array_equal(got, np.array(want_y, np.float32))
    torch = pytest.importorskip("torch")
    t = torch.tensor(a.copy())
    np.testing.assert_array_equal(fn(torch, t).numpy(), np.array(want_y, np.float32))
    np.testing.assert_array_equal(t.numpy(), np.array(want_x, np.float32))


def test_is_contiguous_follows_pytorch_layouts():
    torch = pytest.importorskip("torch")
    views = [lambda v: v, lambda v: v.T, lambda v: v[1], lambda v: v[:, 1], lambda v: v[:, :2],
             lambda v: v[::2], lambda v: v.T.reshape(12), lambda v: v.permute(1, 0).T,
             lambda v: v.unsqueeze(0).transpose(0, 1), lambda v: v[:, 1:2]]  # fmt: skip
    a = np.arange(12, dtype=np.float32).reshape(4, 3)
    with kn.Graph().as_default():
        p = kn.placeholder(kn.float32, (4, 3), name="p")
        got = [view(p).is_contiguous() for view in views]
    assert got == [view(torch.tensor(a)).is_contiguous() for view in views]


def reshape_of_transpose_then_change(lib, x):
    y = x.T.reshape(6)  # PyTorch copies: the transpose cannot be viewed as 6 elements
    y[0] = 9.0
    return y * 1


def reshape_then_change(lib, x):
    y = x.reshape(6)  # a view: x changes too
    y[0] = 9.0
    return x * 1


@pytest.mark.parametrize(
    "fn, want_y, want_x",
    [(reshape_of_transpose_then_change, [9, 3, 1, 4, 2, 5], [[0, 1, 2], [3, 4, 5]]),
     (reshape_then_change, [[9, 1, 2], [3, 4, 5]], [[9, 1, 2], [3, 4, 5]])],
)  # fmt: skip
def test_reshape_writes_back_only_where_pytorch_views(fn, want_y, want_x):
    test_clone_and_contiguous_copy_where_pytorch_does((fn, want_y, want_x))
