"""`.item()` and `.tolist()` inside a function that kn.compile traces (kiln/tracing/scalars.py):
returned and printed as each call's Python value, as the same function gives eagerly (the
expected values are the eager run's); any other use while tracing raises a GraphError."""

import numpy as np
import pytest

import kiln as kn
from kiln.errors import GraphError, ShapeMismatchError


def _training(compiled: bool):
    kn.manual_seed(0)
    model = kn.nn.Linear(3, 1)
    opt = kn.optim.SGD(model.parameters(), lr=0.1)

    def step(x, y):
        opt.zero_grad()
        loss = kn.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        print(f"loss {loss.item():.5f}", loss.item())
        return loss.item(), {"w": model.weight.tolist(), "n": (y > 0).sum().item()}

    return kn.compile(step) if compiled else step


def test_a_training_step_returns_and_prints_the_loss_as_eagerly(capsys):
    x = kn.tensor(np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3))
    y = kn.tensor([[1.0], [-1.0], [0.5], [2.0]])
    results, printed = {}, {}
    for compiled in (False, True):
        step = _training(compiled)
        results[compiled] = [step(x, y * (i + 1)) for i in range(3)]
        printed[compiled] = capsys.readouterr().out
    assert results[True] == results[False]  # the same Python floats, lists and ints
    loss, rest = results[True][2]
    assert type(loss) is float and type(rest["n"]) is int and rest["n"] == 3
    assert isinstance(rest["w"], list) and len(rest["w"][0]) == 3
    assert printed[True] == printed[False] and printed[True].count("loss") == 3


def test_returned_item_follows_the_dtype_and_each_call():
    f = kn.compile(lambda x: (x.sum().item(), x.max().item()))
    assert f(kn.tensor([1, 2, 3])) == (6, 3)
    assert f(kn.tensor([4, 5, 9])) == (18, 9)
    assert type(f(kn.tensor([4, 5, 9]))[0]) is int
    g = kn.compile(lambda x: (x > 0).all().item())
    assert g(kn.tensor([1.0, 2.0])) is True and g(kn.tensor([1.0, -2.0])) is False
    # NumPy arrays in: the same Python values out
    assert kn.compile(lambda x: x.sum().item())(np.array([0.5, 0.25], np.float32)) == 0.75


def test_returned_item_carries_no_gradient():
    w = kn.tensor([1.0, 2.0], requires_grad=True)
    f = kn.compile(lambda w: ((w * w).sum(), (w * w).sum().item()))
    loss, value = f(w)
    assert value == 5.0
    loss.backward()
    np.testing.assert_array_equal(w.grad.numpy(), [2.0, 4.0])


@pytest.mark.parametrize(
    "use",
    [
        lambda v, x: x * v,
        lambda v, x: x if v > 0 else -x,
        lambda v, x: x + float(v),
        lambda v, x: x + int(v),
        lambda v, x: x + (v + 1),
        lambda v, x: x + np.float32(v),
    ],
)
def test_using_the_value_while_tracing_raises_naming_the_line(use):
    f = kn.compile(lambda x: use(x.sum().item(), x))
    with pytest.raises(GraphError, match=r"\.item\(\) of Symbol .* is used at .*test_compile"):
        f(kn.tensor([1.0, 2.0]))


def test_item_of_several_elements_raises_as_eagerly():
    with pytest.raises(ShapeMismatchError, match="2 elements cannot be converted to Scalar"):
        kn.compile(lambda x: x.item())(kn.tensor([1.0, 2.0]))
    with pytest.raises(ShapeMismatchError, match="2 elements cannot be converted to Scalar"):
        kn.tensor([1.0, 2.0]).item()


def test_graph_mode_still_refuses_item():
    with kn.Graph().as_default():
        s = kn.placeholder(kn.float32, ())
        with pytest.raises(GraphError, match="not known while building a graph"):
            s.item()
