"""A compiled function whose default argument is a tensor (or NumPy array) reads its value
on each call, as eager code does: kn.compile used to bake in the value it saw when tracing,
so after the default changed in place the compiled calls went on with the old one. Expected
values: the eager call of the same function, worked out by hand in the comments."""

import numpy as np

import kiln as kn

_SHIFT = kn.tensor([1.0, 1.0])
_TABLE = np.array([1.0, 2.0], np.float32)


def _shifted(x, b=_SHIFT):
    return x + b


def _scaled(x, *, k=_SHIFT):
    return x * k


def _looked_up(x, a=_TABLE):
    return x + a


def test_tensor_default_changed_in_place_is_read_each_call():
    # regression: the compiled call returned [1, 1] after the default became [2, 2]
    compiled = kn.compile(_shifted)
    assert compiled(kn.zeros(2)).tolist() == [1.0, 1.0]
    _SHIFT.add_(1)
    try:
        assert _shifted(kn.zeros(2)).tolist() == [2.0, 2.0]  # eager
        assert compiled(kn.zeros(2)).tolist() == [2.0, 2.0]
        keyword = kn.compile(_scaled)
        assert keyword(kn.ones(2)).tolist() == [2.0, 2.0]
        _SHIFT.mul_(10)
        assert keyword(kn.ones(2)).tolist() == [20.0, 20.0]  # eager: 1 * 20
        assert compiled(kn.zeros(2), kn.tensor([5.0, 6.0])).tolist() == [5.0, 6.0]  # given
    finally:
        _SHIFT.copy_(kn.tensor([1.0, 1.0]))


def test_numpy_default_changed_in_place_is_read_each_call():
    compiled = kn.compile(_looked_up)
    assert compiled(kn.zeros(2)).tolist() == [1.0, 2.0]
    _TABLE[0] = 50.0
    try:
        assert compiled(kn.zeros(2)).tolist() == [50.0, 2.0]  # eager: [0 + 50, 0 + 2]
    finally:
        _TABLE[0] = 1.0
