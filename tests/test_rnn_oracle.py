"""kn.nn.RNN, LSTM and GRU against PyTorch's (the oracle): a torch layer's state_dict is loaded
into kiln's (same names and layouts); outputs, final states and parameter gradients match, with
and without initial states, batched, batch_first and unbatched, one or two layers and directions."""

from __future__ import annotations

import numpy as np
import pytest

import kiln as kn

torch = pytest.importorskip("torch")

CASES = [
    ("RNN", {}, "batched"),
    ("RNN", {"nonlinearity": "relu", "bias": False}, "unbatched"),
    ("RNN", {"num_layers": 2, "bidirectional": True}, "batch_first"),
    ("LSTM", {}, "batched"),
    ("LSTM", {"num_layers": 2, "bidirectional": True}, "batch_first"),
    ("LSTM", {"num_layers": 2}, "unbatched"),
    ("GRU", {}, "batched"),
    ("GRU", {"bidirectional": True, "bias": False}, "unbatched"),
    ("GRU", {"num_layers": 3}, "batch_first"),
]


def _pair(name, kwargs, layout):
    torch.manual_seed(0)
    kw = dict(kwargs, batch_first=layout == "batch_first")
    ours = getattr(kn.nn, name)(3, 4, dtype=kn.float64, **kw)
    theirs = getattr(torch.nn, name)(3, 4, dtype=torch.float64, **kw)
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    rng = np.random.default_rng(0)
    shape = {"batched": (5, 2, 3), "batch_first": (2, 5, 3), "unbatched": (5, 3)}[layout]
    x = rng.standard_normal(shape)
    states = 2 if name == "LSTM" else 1
    d = 2 if kwargs.get("bidirectional") else 1
    state_shape = (d * kwargs.get("num_layers", 1),) + ((4,) if layout == "unbatched" else (2, 4))
    hx = [rng.standard_normal(state_shape) for _ in range(states)]
    return ours, theirs, x, hx


def _flat(out):
    output, h = out
    return [output, *(h if isinstance(h, tuple) else (h,))]


def _np(t):
    return t.detach().numpy()


@pytest.mark.parametrize("name, kwargs, layout", CASES)
@pytest.mark.parametrize("initial", [False, True], ids=["zeros", "hx"])
def test_rnn_matches_torch(name, kwargs, layout, initial):
    ours, theirs, x, hx = _pair(name, kwargs, layout)
    t_hx = [torch.tensor(h, requires_grad=True) for h in hx]
    t_x = torch.tensor(x, requires_grad=True)
    arg = None if not initial else tuple(t_hx) if name == "LSTM" else t_hx[0]
    want = _flat(theirs(t_x, arg))
    weights = [
        torch.tensor(np.random.default_rng(k).standard_normal(w.shape)) for k, w in enumerate(want)
    ]
    sum((w * v).sum() for w, v in zip(weights, want)).backward()

    k_hx = [kn.tensor(h, requires_grad=True) for h in hx]
    k_x = kn.tensor(x, requires_grad=True)
    arg = None if not initial else tuple(k_hx) if name == "LSTM" else k_hx[0]
    got = _flat(ours(k_x, arg))
    for g, w in zip(got, want):
        np.testing.assert_allclose(_np(g), _np(w), rtol=1e-10, atol=1e-12)
    loss = sum(((g * kn.tensor(v.numpy())).sum() for g, v in zip(got, weights)), kn.tensor(0.0))
    loss.backward()
    for (n, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-9, atol=1e-11, err_msg=n)
    np.testing.assert_allclose(k_x.grad.numpy(), t_x.grad.numpy(), rtol=1e-9, atol=1e-11)
    if initial:
        for a, b in zip(k_hx, t_hx):
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("name, kwargs, layout", CASES[::2])
def test_rnn_graph_mode_and_compiled_match_torch(name, kwargs, layout):
    """The scan-built graph (and kn.compile's trace) give PyTorch's values and gradients."""
    ours, theirs, x, hx = _pair(name, kwargs, layout)
    t_x = torch.tensor(x)
    want = [_np(w) for w in _flat(theirs(t_x))]
    sum(w.sum() for w in _flat(theirs(t_x))).backward()
    with kn.Graph().as_default():
        xs = kn.placeholder(kn.float64, x.shape, name="x")
        outs = _flat(ours(xs))
        variables = [p.variable_in(xs.graph) for _, p in ours.named_parameters()]
        grads = kn.grad(sum((kn.sum(o) for o in outs[1:]), kn.sum(outs[0])), variables)
        values = kn.function([xs], [*outs, *grads])(x)
    for g, w in zip(values, want):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)
    for g, (n, q) in zip(values[len(want) :], theirs.named_parameters()):
        np.testing.assert_allclose(g, q.grad.numpy(), rtol=1e-9, atol=1e-11, err_msg=n)
    compiled = _flat(kn.compile(lambda t: ours(t))(kn.tensor(x)))
    for g, w in zip(compiled, want):
        np.testing.assert_allclose(_np(g), w, rtol=1e-10, atol=1e-12)
