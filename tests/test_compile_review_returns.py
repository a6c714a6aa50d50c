"""A compiled function that returns an argument, or a view of one, returns it as eager code
does (the argument itself, or a view sharing its memory), as PyTorch's compiled functions
do: a later in-place change of the result is seen by the argument. kn.compile used to
return copies, so the change was silently lost. Expected values: eager kiln, and torch
where it is installed (checked by hand in the comments)."""

import numpy as np
import pytest

import kiln as kn


def _same(x):
    return x


def _bumped(x):
    x.add_(1)
    return x


def _column(x):
    return x.view(3, 1)


def _tail(x):
    return x[1:]


def _flipped_view(x):
    return x.view(3, 1).t()[:, 1:]


CASES = [
    # (function, the argument after result.mul_(10), worked out by hand from x = [1, 2, 3])
    (_same, [10.0, 20.0, 30.0]),
    (_bumped, [20.0, 30.0, 40.0]),
    (_column, [10.0, 20.0, 30.0]),
    (_tail, [1.0, 20.0, 30.0]),
    (_flipped_view, [1.0, 20.0, 30.0]),
]


@pytest.mark.parametrize("fn, expected", CASES, ids=[c[0].__name__ for c in CASES])
def test_returned_argument_views_share_the_argument(fn, expected):
    # regression: the result was a copy, so the argument stayed [1, 2, 3] (or [2, 3, 4])
    compiled = kn.compile(fn)
    for _ in range(2):  # the traced call and a cached one
        x = kn.tensor([1.0, 2.0, 3.0])
        result = compiled(x)
        result.mul_(10)
        assert x.tolist() == expected
    eager = kn.tensor([1.0, 2.0, 3.0])
    fn(eager).mul_(10)
    assert eager.tolist() == expected
    assert (compiled(x) is x) == (fn is _same or fn is _bumped)


def test_returned_argument_views_match_torch():
    torch = pytest.importorskip("torch")
    for fn, _ in CASES:
        t = torch.tensor([1.0, 2.0, 3.0])
        fn(t).mul_(10)  # torch.compile returns the same aliases (checked with aot_eager)
        x = kn.tensor([1.0, 2.0, 3.0])
        kn.compile(fn)(x).mul_(10)
        np.testing.assert_array_equal(x.numpy(), t.numpy(), err_msg=fn.__name__)


def test_computed_outputs_are_still_fresh():
    compiled = kn.compile(lambda x: (x * 2, x.clone(), x + 0))
    x = kn.tensor([1.0, 2.0])
    for out in compiled(x):
        out.add_(5)
    assert x.tolist() == [1.0, 2.0]


def test_numpy_arguments_still_give_arrays():
    x = np.array([1.0, 2.0], np.float32)
    out = kn.compile(_tail)(x)
    assert isinstance(out, np.ndarray) and out.tolist() == [2.0]
