"""Outputs of a compiled call share memory as the eager run's do, when autograd records them.

A compiled function returns an output that is a view of another output (`return y, y[0]`)
or of an argument (`return a[:, 1]`) as a view, as eager code does; but where the call was
recorded by autograd (an input requires grad), each output came back as a copy of its own:
an in-place change through one (`with no_grad(): y.add_(100)`) did not show in the other, or
in the argument. Now the view is taken again of the returned tensor (or the argument), so its
history is the view's (SelectBackward0 of the compiled node), as eagerly. Found by a random
eager-against-compiled comparison. Expected values: eager kiln's and torch 2.13's, the same
(the last test runs torch), computed by hand in the comments.
"""

import numpy as np
import pytest

import kiln as kn


def _view_of_output(lib, x):
    y = x * 2
    return y, y[0]


def _views_of_argument(lib, x):
    return x[:, 1], x.narrow(0, 0, 1), x


def _pieces(lib, x):
    y = x * 2
    return y.split(1)[0], y, x.chunk(2)[1]  # a piece of an output, of an argument


def _views_of_one_value(lib, x):
    y = x * 2  # not returned: its two views are
    return y[:, 1], y[0], y.detach()


def _run(lib, fn, compiled):
    f = kn.compile(lambda x: fn(kn, x)) if compiled else (lambda x: fn(lib, x))
    grad = fn is not _pieces  # torch refuses to differentiate a changed split piece
    results = []
    for _ in range(2):  # the cached program too
        x = lib.ones(2, 3, requires_grad=grad)
        outs = f(x)
        with lib.no_grad():
            outs[0].add_(100.0)
        values = [o.detach().numpy().copy() for o in outs]
        if grad:
            sum((o * (k + 1.0)).sum() for k, o in enumerate(outs)).backward()
        x_grad = x.grad.numpy().copy() if grad else None
        results.append((values, x_grad, x.detach().numpy().copy()))
    return results


# (values after outs[0].add_(100), x.grad of sum((k + 1) * outs[k]), x after)
EXPECTED = {
    # y = 2x; y[0] sees the change; grad: 1 * 2 everywhere plus 2 * 2 on row 0
    "view_of_output": (
        [[[102.0] * 3, [102.0] * 3], [102.0] * 3],
        [[6.0] * 3, [2.0] * 3],
        [[1.0] * 3, [1.0] * 3],
    ),
    # x[:, 1] and x itself change (they view x); grad: 3 all over, 2 more on row 0, 1 more on
    # column 1
    "views_of_argument": (
        [[101.0, 101.0], [[1.0, 101.0, 1.0]], [[1.0, 101.0, 1.0], [1.0, 101.0, 1.0]]],
        [[5.0, 6.0, 5.0], [3.0, 4.0, 3.0]],
        [[1.0, 101.0, 1.0], [1.0, 101.0, 1.0]],
    ),
    # y[:, 1] += 100 shows in y[0][1] and y.detach(); grad: 2 * (1 on column 1 + 2 on row 0)
    "views_of_one_value": (
        [[102.0, 102.0], [2.0, 102.0, 2.0], [[2.0, 102.0, 2.0], [2.0, 102.0, 2.0]]],
        [[4.0, 6.0, 4.0], [0.0, 2.0, 0.0]],
        [[1.0] * 3, [1.0] * 3],
    ),
    # pieces of split/chunk are views too: outs[0] is y's row 0, which changes with it
    # (no grad: torch refuses to differentiate a split piece changed in place)
    "pieces": (
        [[[102.0] * 3], [[102.0] * 3, [2.0] * 3], [[1.0] * 3]],
        None,
        [[1.0] * 3, [1.0] * 3],
    ),
}
PROGRAMS = {
    "view_of_output": _view_of_output,
    "views_of_argument": _views_of_argument,
    "pieces": _pieces,
    "views_of_one_value": _views_of_one_value,
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_recorded_outputs_share_memory_as_eagerly(name, compiled):
    values, grad, after = EXPECTED[name]
    for got_values, got_grad, got_after in _run(kn, PROGRAMS[name], compiled):
        for g, w in zip(got_values, values):
            np.testing.assert_array_equal(g, w)
        if grad is not None:
            np.testing.assert_array_equal(got_grad, grad)
        np.testing.assert_array_equal(got_after, after)


def test_a_recorded_view_of_an_output_has_the_views_history():
    x = kn.ones(2, 3, requires_grad=True)
    f = kn.compile(lambda x: _view_of_output(kn, x))
    f(x)
    y, row = f(x)
    assert type(row.grad_fn).__name__ != "NoneType" and row._base is y


def test_the_expected_values_are_torchs():
    torch = pytest.importorskip("torch")
    for name, fn in PROGRAMS.items():
        values, grad, after = EXPECTED[name]
        for got_values, got_grad, got_after in _run(torch, fn, False):
            for g, w in zip(got_values, values):
                np.testing.assert_array_equal(g, w)
            if grad is not None:
                np.testing.assert_array_equal(got_grad, grad)
            np.testing.assert_array_equal(got_after, after)


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_a_returned_as_strided_view_of_an_argument_is_a_view(compiled):
    # compiled, it was a gathered copy: the change through it missed x (torch 2.13 and eager
    # kiln: x [1, 1, 1, 1, 0, 0] after the add_, by hand: positions 0, 2, 1, 3)
    def f(x):
        return x.as_strided((2, 2), (1, 2), 0)

    g = kn.compile(f) if compiled else f
    for _ in range(2):
        x = kn.zeros(6)
        g(x).add_(1)
        assert x.tolist() == [1.0, 1.0, 1.0, 1.0, 0.0, 0.0]


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_views_after_a_copy_from_a_view_of_the_argument(compiled):
    # a.copy_(a[:, 1]) then an as_strided view of that column, returned: a view of a, as in
    # torch 2.13 (values by hand: column 1 of arange(16).reshape(4, 4) is 1, 5, 9, 13; after
    # the copy every row is that column, so a's storage starts 1, 5, 9, 13, 1, 5, ...)
    def f(a):
        v = a[:, 1]
        a.copy_(v)
        return v.unsqueeze(0).as_strided((2, 2), (1, 2), 0), v

    g = kn.compile(f) if compiled else f
    for _ in range(2):
        a = kn.arange(16.0).reshape(4, 4)
        strided, column = g(a)
        assert strided.tolist() == [[1.0, 9.0], [5.0, 13.0]] and column.tolist() == [5.0] * 4
        strided.add_(1000)
        assert a[0].tolist() == [1001.0, 1005.0, 1009.0, 1013.0]
        assert column.tolist() == [1005.0, 5.0, 5.0, 5.0]


def test_a_returned_expand_of_a_value_not_returned_keeps_its_strides():
    # eager kiln and torch 2.13: y.expand(...) shares y's elements (stride 0), so an in-place
    # change of it is refused; compiled, it was a fresh copy, which took the change
    def f(x):
        return (x * 2).expand(3, 2)

    for g in (f, kn.compile(f)):
        for _ in range(2):
            out = g(kn.ones(2))
            assert out.stride() == (0, 1)
            with pytest.raises(RuntimeError, match="single memory location"):
                out.add_(1)


_SHARED_BASE = {  # two returned views of one value (returned or not), or of the argument
    "as_strided_and_t": lambda x: ((y := x * 2).as_strided((2, 2), (1, 2), 0), y.t()),
    "unsqueeze_and_permute": lambda x: ((y := x + 1).unsqueeze(0), y.permute(1, 0)),
    "split_piece_and_slice": lambda x: ((y := x + 1).split(1)[0], y[1:]),
    "output_and_its_row": lambda x: ((y := x * 2), y[0]),
    "argument_views": lambda x: (x[0], x.t()),
}


@pytest.mark.parametrize("name", sorted(_SHARED_BASE))
def test_views_of_one_base_with_gradients_match_torch(name):
    """Values after a no_grad change through the first output, seen through the second and
    the argument, and the argument's gradient of 3 * a.sum() + b.sum(): torch 2.13 eagerly,
    kiln eagerly and kiln compiled (second call: the cached program) agree."""
    torch = pytest.importorskip("torch")
    f = _SHARED_BASE[name]

    def run(lib, fn):
        for _ in range(2):
            x = lib.ones(2, 3, requires_grad=True)
            x = x.clone() if name == "argument_views" else x
            a, b = fn(x)
        (a.sum() * 3 + b.sum()).backward(retain_graph=True)
        leaf = x if name != "argument_views" else None
        grad = leaf.grad.tolist() if leaf is not None else None
        with lib.no_grad():
            a.add_(100)
        return b.tolist(), x.tolist(), a.requires_grad, b.requires_grad, grad

    want = run(torch, f)
    assert run(kn, f) == want
    assert run(kn, kn.compile(f)) == want


def test_compiled_outputs_come_back_in_eagers_layout():
    # the program computes in C order; an output eager code lays out otherwise is laid out
    # again before it is returned: its strides are eager's and torch 2.13's (x.t().clone(),
    # x.t() * 2: (1, 4) for a (3, 4) x), and views taken of it after the call read its storage
    # as eager code's do
    def f(x):
        return x.t().clone(), x.t() * 2, x + 1

    x = kn.arange(12.0).reshape(3, 4)
    assert [o.stride() for o in kn.compile(f)(x)] == [(1, 4), (1, 4), (4, 1)]
    assert [o.stride() for o in f(x)] == [(1, 4), (1, 4), (4, 1)]


def test_as_strided_of_a_sum_with_a_changed_transposed_argument():
    # found by the random programs (seed 2937): a transposed view of an argument changed in
    # place, plus b, then as_strided. The compiled program's sum is C-ordered, and the
    # as_strided output, taken again of it eagerly after the call, read C order: other
    # elements than eager's. Expected values: the eager run's, which are torch 2.13's (the
    # sum's (1, 0), (1, 1), (2, 0) and (2, 1) elements: storage positions 1, 5, 2, 6 of a
    # column-major (4, 4))
    def f(a, b):
        v = a.t()
        v.index_add_(0, kn.tensor([0, 2]), v[[1, 3]])
        s = v + b
        return s, s.as_strided((2, 2), (1, 4), 1)

    a0 = np.arange(16.0).reshape(4, 4) / 7
    b0 = np.array([0.5, -1.0, 2.0, 0.25])
    eager = f(kn.tensor(a0), kn.tensor(b0))
    compiled = kn.compile(f)(kn.tensor(a0), kn.tensor(b0))
    s = eager[0].numpy()
    np.testing.assert_array_equal(eager[1].numpy(), [[s[1, 0], s[1, 1]], [s[2, 0], s[2, 1]]])
    for e, c in zip(eager, compiled):
        np.testing.assert_allclose(c.numpy(), e.numpy(), rtol=1e-12)


def test_t_of_a_square_as_strided_view_of_an_argument():
    # found by the random programs (seed 4945): v = a.as_strided((2, 2), (1, 2)); v.t_()
    # kept v registered as the as_strided view (its shape did not change), so the compiled
    # call handed back the untransposed view. Expected: the eager run's (torch 2.13's), a
    # view of a's storage at positions [[0, 1], [2, 3]] after the transpose
    def f(a):
        v = a.as_strided((2, 2), (1, 2), 0)
        v.t_()
        return v

    for fn in (f, kn.compile(f)):
        a = kn.arange(16.0).reshape(4, 4)
        v = fn(a)
        assert v.tolist() == [[0.0, 1.0], [2.0, 3.0]]
        v.add_(100)  # a view of a, eagerly and compiled
        assert a[0].tolist() == [100.0, 101.0, 102.0, 103.0]
