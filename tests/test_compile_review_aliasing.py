"""kn.compile and arguments that share memory: a compiled function that changes an argument
in place while another argument is the same tensor (or a view of it) is refused with a clear
error (it used to return what the program computed from the old values: a silent
difference from eager code). Expected values: eager kiln and PyTorch, worked out by hand."""

import numpy as np
import pytest

import kiln as kn
from kiln.errors import UsageError


def _scale_then_add(x, y):
    x.mul_(2)
    return x + y  # eager, with y the same tensor as x: 2x + 2x


def _bump_second(x, y):
    y.add_(10)
    return x * 1  # eager, with y = x[1:3]: x seen after the write


def test_same_tensor_twice_with_an_in_place_change_is_refused():
    # regression: kn.compile gave [3, 6] (2x + the old x) where eager gives 2x + 2x = [4, 8]
    x = kn.tensor([1.0, 2.0])
    assert _scale_then_add(x, x).tolist() == [4.0, 8.0]  # eager kiln, as torch
    x = kn.tensor([1.0, 2.0])
    with pytest.raises(UsageError, match="'x' in place, and argument 'y' shares memory"):
        kn.compile(_scale_then_add)(x, x)
    assert x.tolist() == [1.0, 2.0]  # a refused call changes nothing


def test_view_of_another_argument_changed_in_place_is_refused():
    # regression: kn.compile returned [1, 2, 3, 4]; eager gives [1, 12, 13, 4]
    base = kn.tensor([1.0, 2.0, 3.0, 4.0])
    assert _bump_second(base, base[1:3]).tolist() == [1.0, 12.0, 13.0, 4.0]
    base = kn.tensor([1.0, 2.0, 3.0, 4.0])
    with pytest.raises(UsageError, match="'y' in place, and argument 'x'"):
        kn.compile(_bump_second)(base, base[1:3])
    assert base.tolist() == [1.0, 2.0, 3.0, 4.0]


def test_disjoint_views_and_unchanged_aliases_still_run():
    compiled = kn.compile(_bump_second)
    base = kn.tensor([1.0, 2.0, 3.0, 4.0])
    out = compiled(base[:2], base[2:])  # disjoint: eager gives x unchanged, y + 10
    assert out.tolist() == [1.0, 2.0] and base.tolist() == [1.0, 2.0, 13.0, 14.0]
    interleaved = kn.tensor([1.0, 2.0, 3.0, 4.0])
    compiled(interleaved[::2], interleaved[1::2])  # strided, no element in common
    assert interleaved.tolist() == [1.0, 12.0, 3.0, 14.0]
    pure = kn.compile(lambda a, b: a * b)  # no in-place change: aliases are fine
    x = kn.tensor([1.0, 2.0])
    assert pure(x, x).tolist() == [1.0, 4.0]


def test_same_tensor_twice_matches_torch_when_cloned():
    torch = pytest.importorskip("torch")
    t = torch.tensor([1.0, 2.0])
    expected = _scale_then_add(t, t.clone())
    x = kn.tensor([1.0, 2.0])
    np.testing.assert_allclose(kn.compile(_scale_then_add)(x, x.clone()).numpy(), expected)
    np.testing.assert_allclose(x.numpy(), t.numpy())


def test_expanded_argument_changed_in_place_is_refused_before_any_change():
    # regression: the write-back failed with NumPy's ValueError after the program ran, once
    # the other arguments were already written (torch: RuntimeError before any change)
    def bump_both(x, y):
        x.add_(1)
        y.add_(1)
        return x

    x = kn.tensor([1.0, 2.0, 3.0])
    with pytest.raises(UsageError, match="more than one element of the written-to tensor"):
        kn.compile(bump_both)(x, kn.ones(1).expand(3))
    assert x.tolist() == [1.0, 2.0, 3.0]
