"""kn.compile: traced values stored in Python state (an attribute, a dict item from a forward
hook, a list item or an appended one) are stored by every call with that call's values, as
eager code does (and as PyTorch's compiled functions replay such side effects). Before, the
trace left Symbols there and later calls stored nothing. The expected values are the eager
run of the same code; each test also checks that one trace served every call."""

import numpy as np
import pytest

import kiln as kn
from kiln.errors import GraphError

ACTS: dict = {}
LOSSES: list = []
BUF: list = [None]


class Net(kn.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = kn.nn.Linear(3, 4)
        self.out = kn.nn.Linear(4, 1)

    def forward(self, x):
        h = self.fc(x).relu()
        self.aux = (h * h).mean()  # an auxiliary loss the caller adds
        y = self.out(h)
        LOSSES.append(y.sum().item())
        return y


def _pair():
    kn.manual_seed(0)
    eager, compiled = Net(), Net()
    compiled.load_state_dict(eager.state_dict())
    for m in (eager, compiled):
        m.fc.register_forward_hook(lambda mod, inputs, out: ACTS.__setitem__("fc", out.detach()))
    return eager, compiled


def _steps(model, call):
    seen = []
    for k in range(3):
        x = kn.arange(6.0).reshape(2, 3) * (k + 1) / 10 - 0.2
        y = call(x)
        (y.sum() + model.aux).backward()
        seen.append([y.detach(), model.aux.detach(), ACTS["fc"], model.fc.weight.grad.clone()])
    return seen


def test_hook_attribute_and_appended_item_each_call_as_eager():
    eager, compiled = _pair()
    LOSSES.clear()
    expected, expected_losses = _steps(eager, eager), list(LOSSES)
    LOSSES.clear()
    f = kn.compile(compiled)
    got = _steps(compiled, f)
    assert f.trace_count == 1
    assert LOSSES == pytest.approx(expected_losses, rel=1e-6) and len(LOSSES) == 3
    for want, have in zip(expected, got):
        for a, b in zip(want, have):
            assert type(b) is kn.Tensor
            np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-6, atol=1e-7)


class Keeps(kn.nn.Module):
    def forward(self, x):
        y = x * 2
        self.last = y
        BUF[0] = y + 1  # an item of a list that existed: replaced each call
        return y


def test_stored_value_is_the_returned_tensor_and_list_items_are_replaced():
    m = Keeps()
    f = kn.compile(m)
    for k in range(3):
        x = kn.full((2,), float(k))
        y = f(x)
        assert m.last is y  # as in eager code, the same object
        assert len(BUF) == 1 and BUF[0].tolist() == [2.0 * k + 1] * 2


def store_then_branch(x):
    ACTS["bad"] = x * 3
    LOSSES.append(x.sum())
    if x.sum() > 0:  # a Python branch on a traced value: the trace fails
        return x
    return -x


def test_a_failed_trace_stores_nothing():
    ACTS.clear()
    LOSSES.clear()
    with pytest.raises(GraphError):
        kn.compile(store_then_branch)(kn.ones(2))
    assert ACTS == {} and LOSSES == []


def scale_into(x):
    ACTS["scaled"] = x * 0.5
    return x + 1


def test_numpy_in_stores_arrays():
    f = kn.compile(scale_into)
    for k in range(2):
        f(np.full(3, k, np.float32))
        assert isinstance(ACTS["scaled"], np.ndarray)
        np.testing.assert_array_equal(ACTS["scaled"], np.full(3, 0.5 * k, np.float32))
    assert len(f.cache) == 1


class Stateful(kn.nn.Module):
    """Truncated BPTT's idiom: the hidden state lives on the module between calls."""

    def __init__(self):
        super().__init__()
        self.cell = kn.nn.RNNCell(2, 3)
        self.hidden = None

    def forward(self, x):
        if self.hidden is None:
            self.hidden = kn.zeros(x.shape[0], 3)
        self.hidden = self.cell(x, self.hidden).detach()
        return self.hidden.sum()


def test_state_read_and_stored_each_call_is_an_input():
    kn.manual_seed(0)
    eager, model = Stateful(), Stateful()
    model.load_state_dict(eager.state_dict())
    f = kn.compile(model)
    xs = [kn.ones(2, 2) * (k + 1) for k in range(4)] + [kn.ones(5, 2)]
    for k, x in enumerate(xs):
        if k >= 3:  # a new sequence: both start again from None
            eager.hidden = model.hidden = None
        want, got = eager(x), f(x)
        np.testing.assert_allclose(got.item(), want.item(), rtol=1e-6)
        np.testing.assert_allclose(model.hidden.numpy(), eager.hidden.numpy(), rtol=1e-6)
    # traces: None, then a tensor (an input from then on); the reset reuses the first; a
    # batch of 5 is a new signature
    assert f.trace_count == 3


class KeepsLoss(kn.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = kn.nn.Linear(2, 2)

    def forward(self, x):
        self.aux = self.fc(x).pow(2).mean()  # set before it is read: its old value unused
        return self.aux * 2


def test_a_stored_tensor_does_not_keep_the_calls_before_alive():
    import gc
    import weakref

    m = KeepsLoss()
    f = kn.compile(m)
    f(kn.ones(1, 2)).backward()
    f(kn.ones(1, 2)).backward()  # the second trace: `aux` is an input now (unread)
    first = weakref.ref(m.aux)
    for _ in range(3):
        f(kn.ones(1, 2)).backward()
    gc.collect()
    assert first() is None  # as eagerly: the old value went when `aux` was replaced
