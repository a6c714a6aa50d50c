"""`print` inside a compiled function prints on every call, with that call's values, as
PyTorch's compiled functions do (torch.compile graph-breaks at print and runs it each call);
the trace itself prints nothing. Expected text: what the same code prints eagerly."""

import builtins
import io

import pytest

import kiln as kn
import kiln.nn as nn
from kiln.errors import GraphError


def test_prints_every_call_with_that_calls_values(capsys):
    @kn.compile
    def f(x):
        y = x * 2
        print("y is", y)
        print("static", 3, sep="=", end="!\n")
        return y.sum()

    for data in ([1.0, 2.0], [3.0, 4.0]):
        out = f(kn.tensor(data))
        eager = capsys.readouterr().out
        assert out.item() == 2 * sum(data)
        y = kn.tensor(data) * 2
        assert eager == f"y is {y}\nstatic=3!\n"
    assert len(f.cache) == 1  # one trace: the second call replayed the prints


def test_prints_the_inputs_and_to_a_file():
    sink = io.StringIO()

    @kn.compile
    def f(x):
        print(x, file=sink)
        return x + 1

    f(kn.tensor([1.0]))
    f(kn.tensor([7.0]))
    assert sink.getvalue() == "tensor([1.])\ntensor([7.])\n"


def test_prints_in_a_module_and_a_training_step(capsys):
    kn.manual_seed(0)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 1)

        def forward(self, x):
            h = self.fc(x)
            print("h", h.detach())
            return h

    net = Net()
    opt = kn.optim.SGD(net.parameters(), lr=0.1)

    @kn.compile
    def step(x):
        loss = net(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        print("loss", loss.detach())
        return loss

    x = kn.ones(2, 3)
    for _ in range(3):
        with kn.no_grad():
            h = net(x)
        capsys.readouterr()
        loss = step(x)
        printed = capsys.readouterr().out
        assert printed == f"h {h}\nloss {loss.detach()!s}\n"  # f"{t}" of 0-d: its item


def test_print_is_restored_after_a_trace_that_fails():
    before = builtins.print

    @kn.compile
    def f(x):
        print("never")
        if x.sum() > 0:  # a traced value's truth: the trace fails
            return x
        return -x

    with pytest.raises(GraphError):
        f(kn.tensor([1.0]))
    assert builtins.print is before


def test_a_function_without_prints_returns_only_its_outputs():
    f = kn.compile(lambda x: x * 2)
    f(kn.tensor([1.0]))
    assert len(f.last.function.outputs) == 1


def test_formatted_values_print_every_call_as_eagerly(capsys):
    """f-strings and str.format of traced values, with and without a spec: the text printed
    is what the same function prints eagerly (PyTorch's compiled functions graph-break there
    and print the values)."""

    def step(x):
        loss = (x * x).mean()
        print(f"loss {loss:.4f} | x {x}", "{:>8.3f}".format(x.sum()), sep=" ; ")  # noqa: UP032
        return loss

    compiled = kn.compile(step)
    for data in ([1.0, 2.0], [0.5, -3.0], [10.0, 20.0]):
        step(kn.tensor(data))
        eager = capsys.readouterr().out
        compiled(kn.tensor(data))
        assert capsys.readouterr().out == eager
    assert eager.startswith("loss 250.0000 | x tensor([10., 20.]) ;   30.000")  # by hand
    assert len(compiled.cache) == 1


def test_a_formatted_value_prints_through_nested_compiled_calls(capsys):
    inner = kn.compile(lambda x: print(f"inner {x.max():.1f}") or x * 2)
    outer = kn.compile(lambda x: print(f"outer {inner(x).sum():g}") or x)
    outer(kn.tensor([1.0, 3.0]))
    assert capsys.readouterr().out == "inner 3.0\nouter 8\n"
    outer(kn.tensor([2.0, 5.0]))
    assert capsys.readouterr().out == "inner 5.0\nouter 14\n"


def test_a_formatted_value_that_is_not_printed_keeps_its_marker():
    kept = []

    @kn.compile
    def f(x):
        kept.append(f"{x.sum():.2f}")  # runs once, when traced: no value exists then
        return x

    f(kn.tensor([1.0]))
    assert kept == ["<kiln traced value 0>"]


def test_formatting_a_symbol_outside_a_trace_is_unchanged():
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (2,), name="x")
        assert f"{x}" == repr(x)
        with pytest.raises(TypeError):
            format(x, ".2f")
