"""A compiled function that changes an argument in place, where the argument is a view of a
tensor the function also reads (a captured tensor, a module parameter), is refused before
anything changes: the program reads that tensor as it was at the call, so it returned the
old value (10 where eager kiln and PyTorch give 30: [1, 2, 3, 4] with its first two
elements bumped by 10 sums to 30)."""

import pytest

import kiln as kn
from kiln.errors import UsageError

_TABLE = kn.tensor([1.0, 2.0, 3.0, 4.0])


def _bump_then_total(x):
    x.add_(10)
    return _TABLE.sum()


def test_argument_viewing_a_captured_tensor_is_refused():
    assert _bump_then_total(_TABLE[:2]).item() == 30.0  # eager: by hand 11 + 12 + 3 + 4
    _TABLE.copy_(kn.tensor([1.0, 2.0, 3.0, 4.0]))
    with pytest.raises(UsageError, match="shares memory with '_TABLE', which the function"):
        kn.compile(_bump_then_total)(_TABLE[:2])
    assert _TABLE.tolist() == [1.0, 2.0, 3.0, 4.0]


def test_argument_viewing_a_parameter_is_refused():
    # regression: the compiled call returned the old sum of the weight, eager gives 0
    lin = kn.nn.Linear(2, 1, bias=False)

    def zero_then_total(x):
        x.mul_(0)
        return lin.weight.sum()

    before = lin.weight.detach().clone()
    with kn.no_grad():
        with pytest.raises(UsageError, match="shares memory with"):
            kn.compile(zero_then_total)(lin.weight.view(-1))
    assert lin.weight.detach().tolist() == before.tolist()
    with kn.no_grad():  # a clone is fine: the weight is only read
        assert kn.compile(zero_then_total)(lin.weight.view(-1).clone()).item() == pytest.approx(
            before.sum().item()
        )
