"""Indexing by a 0-d integer tensor the compiled function computes or takes (`a[i]`,
`a[:, i]`, `a[i, i]`) is, as in PyTorch, which reads such an index as an int, a view of `a`:
a change through it changes `a` and its other views, a change of `a` shows through it, and
it is returned as a view of the argument it indexes.

Each program runs eagerly (the reference: eager kiln follows torch 2.13, and where torch is
installed the eager results are checked against it too) and under kn.compile, on two index
values, a negative one among them; outputs, changed arguments and gradients must agree.
Before the fix the compiled `a[i]` was a copy: a change through it was lost (seed 5096 of
tests/test_compile_fuzz.py).
"""

import numpy as np
import pytest

import kiln as kn

try:
    import torch
except ImportError:  # the comparison with torch is skipped; eager vs compiled still runs
    torch = None


def _write_through_selects(m, a, i):
    v = a[i, i]
    v.add_(10)
    w = a[i]
    w.mul_(2)
    return a.clone(), v * 1, w * 1


def _base_change_seen(m, a, i):
    v = a[:, i]
    a.add_(1)
    return v * 1


def _setitem_through_select(m, a, i):
    row = a[i]
    row[1] = 5.0
    col = a[:, i]
    col[0] += 7.0
    return a.clone(), row * 1


def _select_of_select(m, a, i):
    a[i][i].sub_(100)
    return a * 1


def _computed_index(m, a, i):
    j = (a[0, 0] > -1).long()  # 1, computed by the program
    a[j].fill_(3.0)
    return a * 1


def _not_a_view_of_a_copy(m, a, i):
    c = a.clone()
    c[i].zero_()
    return a * 1, c


PROGRAMS = [
    _write_through_selects,
    _base_change_seen,
    _setitem_through_select,
    _select_of_select,
    _computed_index,
    _not_a_view_of_a_copy,
]


def _arrays(x):
    if isinstance(x, tuple):
        return [np.asarray(e.detach().numpy() if hasattr(e, "detach") else e) for e in x]
    return [np.asarray(x.detach().numpy())]


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.__name__.strip("_"))
def test_compiled_select_is_a_view(program):
    compiled = kn.compile(lambda a, i: program(kn, a, i))
    for index in (2, -1):
        start = np.arange(16.0).reshape(4, 4)
        a, i = kn.tensor(start), kn.tensor(index)
        want = _arrays(program(kn, a, i))
        ca, ci = kn.tensor(start), kn.tensor(index)
        got = _arrays(compiled(ca, ci))
        for w, g in zip(want, got):
            np.testing.assert_array_equal(g, w)
        np.testing.assert_array_equal(ca.numpy(), a.numpy())  # the argument changed alike
        if torch is not None:
            ta = torch.tensor(start)
            ref = _arrays(program(torch, ta, torch.tensor(index)))
            for w, r in zip(want, ref):
                np.testing.assert_array_equal(w, r)
            np.testing.assert_array_equal(a.numpy(), ta.numpy())


def _grad_program(x, i):
    y = x * 1.0
    y[i].mul_(3.0)
    return (y * y).sum()


def test_gradient_through_a_select_change():
    # d/dx sum((x * s)^2) = 2 x s^2, s = 3 on row i and 1 elsewhere (by hand)
    compiled = kn.compile(_grad_program)
    for index in (1, -2):
        start = np.arange(8.0).reshape(4, 2) / 4
        scale = np.ones((4, 2))
        scale[index] = 3.0
        for run in (_grad_program, compiled):
            x = kn.tensor(start, requires_grad=True)
            run(x, kn.tensor(index)).backward()
            np.testing.assert_allclose(x.grad.numpy(), 2 * start * scale**2, rtol=1e-12)


def test_returned_select_is_a_view_of_the_argument():
    def f(a, i):
        return a[i]

    compiled = kn.compile(f)
    for index in (0, 3, -2):
        a = kn.tensor(np.arange(12.0).reshape(4, 3))
        out = compiled(a, kn.tensor(index))
        out.add_(100)  # eager code's a[i] shares a's memory, so a changes too
        want = np.arange(12.0).reshape(4, 3)
        want[index] += 100
        np.testing.assert_array_equal(a.numpy(), want)
        assert out.stride() == (1,)
