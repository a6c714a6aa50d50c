"""kn.compile and the memory layout of its arguments: a compiled function's argument holds
only its own elements, contiguous, so where the traced code reads an argument's layout
(`as_strided`, `stride()`, `is_contiguous()`, `storage_offset()`), a call that passes a view
of another layout is refused with a clear error, never answered for the wrong layout (it gave
[3, 4] where PyTorch and eager kiln give [1, 2]). Expected values: eager kiln's, which the
torch oracle test checks against PyTorch."""

from __future__ import annotations

import numpy as np
import pytest

import kiln as kn


def test_as_strided_with_an_offset_refuses_a_view_argument():
    f = kn.compile(lambda a: a.as_strided((2,), (1,), 1))
    view = kn.arange(6.0)[2:5]
    assert view.as_strided((2,), (1,), 1).tolist() == [1.0, 2.0]  # eager: the storage's
    with pytest.raises(
        kn.errors.UsageError, match=r"memory layout of its argument .*from its storage"
    ):
        f(view)
    np.testing.assert_array_equal(f(view.clone()).numpy(), [3.0, 4.0])  # a tensor of its own


def test_as_strided_at_its_own_offset_takes_a_contiguous_view():
    f = kn.compile(lambda a: a.as_strided((2, 2), (1, 2)))
    view = kn.arange(10.0)[3:8]
    np.testing.assert_array_equal(f(view).numpy(), view.as_strided((2, 2), (1, 2)).numpy())


def test_a_non_contiguous_argument_is_refused_where_its_strides_are_read():
    f = kn.compile(lambda a: a.as_strided((3,), (1,)) * 2)
    t = kn.arange(6.0).reshape(2, 3).T  # strides (1, 3): as_strided reads 0, 1, 2
    assert (t.as_strided((3,), (1,)) * 2).tolist() == [0.0, 2.0, 4.0]
    with pytest.raises(kn.errors.UsageError, match="not contiguous"):
        f(t)
    np.testing.assert_array_equal(f(t.contiguous()).numpy(), [0.0, 6.0, 2.0])


def test_is_contiguous_in_a_trace_refuses_a_call_it_would_answer_wrongly():
    @kn.compile
    def f(a):
        return a * 2 if a.is_contiguous() else a * 3

    assert f(kn.ones(2, 2)).tolist() == [[2.0, 2.0], [2.0, 2.0]]
    with pytest.raises(kn.errors.UsageError, match="not contiguous"):
        f(kn.ones(2, 2).T)


def test_arguments_whose_layout_is_not_read_take_any_view():
    f = kn.compile(lambda a, b: a * 2 + b.as_strided((2,), (1,)))
    a = kn.arange(12.0).reshape(3, 4).T  # a view, never asked for its layout
    b = kn.arange(4.0)
    np.testing.assert_array_equal(f(a[:2, :2], b).numpy(), (a[:2, :2] * 2 + b[:2]).numpy())


def test_matches_pytorch():
    torch = pytest.importorskip("torch")
    for lib in (torch, kn):
        view = lib.arange(6.0)[2:5]
        assert view.as_strided((2,), (1,), 1).tolist() == [1.0, 2.0]
