"""kn.nn.RNN, LSTM and GRU: the three modes agree (graph mode and kn.compile build one scan per
layer and direction; eager runs Python loops), a Linear called inside a scan body keeps its
Variables in the outer graph, and gradients flow. PyTorch's values: tests/test_rnn_oracle.py."""

from __future__ import annotations

import numpy as np
import pytest

import kiln as kn

LAYERS = [
    (kn.nn.RNN, {}),
    (kn.nn.RNN, {"nonlinearity": "relu", "num_layers": 2}),
    (kn.nn.LSTM, {"bidirectional": True, "batch_first": True}),
    (kn.nn.GRU, {"num_layers": 2, "bias": False}),
]


def _states(out):
    """output and the final states as a flat list of arrays."""
    output, h = out
    states = list(h) if isinstance(h, tuple) else [h]
    return [
        np.asarray(v.detach().numpy() if hasattr(v, "detach") else v) for v in [output, *states]
    ]


@pytest.mark.parametrize("cls, kwargs", LAYERS, ids=lambda v: getattr(v, "__name__", str(v)))
def test_rnn_modes_agree(cls, kwargs):
    kn.manual_seed(0)
    layer = cls(3, 4, dtype=kn.float64, **kwargs)
    x = np.random.default_rng(0).standard_normal((5, 2, 3))
    eager = _states(layer(kn.tensor(x)))
    compiled = _states(kn.compile(lambda t: layer(t))(kn.tensor(x)))
    with kn.Graph().as_default():
        xs = kn.placeholder(kn.float64, (5, "batch", 3), name="x")
        out = layer(xs)
        flat = [out[0], *(out[1] if isinstance(out[1], tuple) else [out[1]])]
        scans = [n for n in xs.graph.nodes if n.op.name == "scan"]
        graph = kn.function([xs], flat)(x)
    directions = 2 if kwargs.get("bidirectional") else 1
    assert len(scans) == kwargs.get("num_layers", 1) * directions
    for e, c, g in zip(eager, compiled, graph):
        np.testing.assert_allclose(c, e, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-12)


def test_rnn_gradients_graph_mode_equal_eager():
    kn.manual_seed(1)
    lstm = kn.nn.LSTM(3, 4, dtype=kn.float64)
    x = np.random.default_rng(1).standard_normal((6, 2, 3))
    out, (h, c) = lstm(kn.tensor(x))
    (out.sum() + (h * c).sum()).backward()
    eager = {n: p.grad.numpy() for n, p in lstm.named_parameters()}
    with kn.Graph().as_default():
        xs = kn.placeholder(kn.float64, (6, 2, 3), name="x")
        out, (h, c) = lstm(xs)
        loss = kn.sum(out) + kn.sum(h * c)
        names = [n for n, _ in lstm.named_parameters()]
        variables = [p.variable_in(xs.graph) for _, p in lstm.named_parameters()]
        grads = kn.function([xs], kn.grad(loss, variables))(x)
    for name, g in zip(names, grads):
        np.testing.assert_allclose(g, eager[name], rtol=1e-10, atol=1e-12)


def test_a_module_called_in_a_body_keeps_its_variables_outside():
    kn.manual_seed(2)
    cell = kn.nn.Linear(3, 3)
    with kn.Graph().as_default() as g:
        xs = kn.placeholder(kn.float32, (4, 3), name="xs")
        h, _ = kn.scan(
            lambda h, x: (kn.tanh(cell(h) + x), None), kn.constant(np.zeros(3, np.float32)), xs
        )
        scan = h.node.inputs[0].node
        assert {v.name for v in g.variables} >= {"weight", "bias"}
        assert sum(i.op.name == "variable" for i in scan.inputs) == 2
        assert not any(n.op.name == "variable" for n in scan.attrs["body"].graph.nodes)
        f = kn.function([xs], h)
    x = np.random.default_rng(2).standard_normal((4, 3)).astype(np.float32)
    want = np.zeros(3, np.float32)
    w, b = cell.weight.numpy(), cell.bias.numpy()
    for t in range(4):
        want = np.tanh(want @ w.T + b + x[t])
    np.testing.assert_allclose(f(x), want, rtol=1e-5, atol=1e-6)


def test_rnn_rejects_bad_arguments():
    with pytest.raises(ValueError, match="nonlinearity"):
        kn.nn.RNN(2, 3, nonlinearity="sigmoid")
    with pytest.raises(ValueError, match="expected a 2-d or 3-d input"):
        kn.nn.GRU(2, 3)(kn.randn(1, 2, 3, 2))
