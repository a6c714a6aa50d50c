"""A parameter's `.grad` across kn.compile calls, against PyTorch 2.13 (skipped without torch):
a compiled function that calls `loss.backward()` leaves the gradient in `.grad` (an eager
`opt.step()` after it steps), adds to the `.grad` an earlier call or eager backward left
(gradient accumulation), and `zero_grad(set_to_none=False)` keeps zero gradients, which the
next step applies (weight decay, momentum). Expected values are torch's eager run."""

import numpy as np
import pytest

import kiln as kn

torch = pytest.importorskip("torch")

rng = np.random.default_rng(0)
X = rng.standard_normal((4, 6, 4)).astype(np.float32)
Y = rng.standard_normal((4, 6, 3)).astype(np.float32)
W = rng.standard_normal((3, 4)).astype(np.float32)
B = rng.standard_normal(3).astype(np.float32)


def _model(lib):
    m = lib.nn.Linear(4, 3)
    with torch.no_grad() if lib is torch else kn.no_grad():
        m.weight.copy_(lib.tensor(W))
        m.bias.copy_(lib.tensor(B))
    return m


def _result(m):
    grads = [None if p.grad is None else p.grad.numpy().copy() for p in m.parameters()]
    return [p.detach().numpy().copy() for p in m.parameters()], grads


def _compare(got, want):
    for g, w in zip(got[0], want[0]):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    for g, w in zip(got[1], want[1]):
        assert (g is None) == (w is None)
        if w is not None:
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def _pattern(lib, name, compiled):
    m = _model(lib)
    opt = lib.optim.SGD(m.parameters(), lr=0.1, momentum=0.9, weight_decay=0.1)
    wrap = kn.compile if compiled else (lambda f: f)
    x = [lib.tensor(a) for a in X]
    y = [lib.tensor(a) for a in Y]

    @wrap
    def forward_backward(xb, yb):
        loss = ((m(xb) - yb) ** 2).mean()
        loss.backward()
        return loss

    traces = []

    @wrap
    def whole_step(xb, yb):
        traces.append(1)  # a Python side effect: each call, compiled or not
        opt.zero_grad()
        loss = ((m(xb) - yb) ** 2).mean()
        loss.backward()
        opt.step()
        return loss

    if name == "step outside":  # the compiled part leaves .grad, an eager step applies it
        for i in range(4):
            opt.zero_grad()
            forward_backward(x[i], y[i])
            opt.step()
    elif name == "accumulate":  # two compiled backward calls per step
        for i in range(4):
            forward_backward(x[i], y[i])
            if i % 2:
                opt.step()
                opt.zero_grad()
    elif name == "eager backward first":  # a compiled backward adds to an eager one
        for i in (0, 2):
            opt.zero_grad()
            ((m(x[i]) - y[i]) ** 2).mean().backward()
            forward_backward(x[i + 1], y[i + 1])
            opt.step()
    elif name == "step compiled":  # an eager backward, a compiled clip and step

        @wrap
        def clip_step():
            lib.nn.utils.clip_grad_value_(m.parameters(), 0.4)
            lib.nn.utils.clip_grad_norm_(m.parameters(), 0.5)
            opt.step()

        for i in range(3):
            opt.zero_grad()
            ((m(x[i]) - y[i]) ** 2).mean().backward()
            clip_step()
    elif name == "grad after a compiled step":
        for i in range(3):
            whole_step(x[i], y[i])
        assert len(traces) == 3
        assert not compiled or whole_step.trace_count == 1  # zero_grad() first: .grad unused
    elif name == "module zero_grad":  # model.zero_grad() in place of the optimizer's

        @wrap
        def step(xb, yb):
            traces.append(1)  # a Python side effect: each call, compiled or not
            m.zero_grad()
            ((m(xb) - yb) ** 2).mean().backward()
            opt.step()

        for i in range(4):
            step(x[i], y[i])
        assert len(traces) == 4 and (not compiled or step.trace_count == 1)
    elif name == "grads set to None by hand":  # torch's fast zero_grad idiom

        @wrap
        def step(xb, yb):
            traces.append(1)
            for p in m.parameters():
                p.grad = None
            ((m(xb) - yb) ** 2).mean().backward()
            opt.step()

        for i in range(4):
            step(x[i], y[i])
        assert len(traces) == 4  # and the first call had no .grad yet:
        assert not compiled or step.trace_count <= 2
    elif name == "zero_grad to zeros":  # the bias is unused every other step
        sgd = lib.optim.SGD(m.parameters(), lr=0.1, momentum=0.9, weight_decay=0.1)

        @wrap
        def step(xb, yb, use_bias):
            sgd.zero_grad(set_to_none=False)
            out = xb @ m.weight.T + (m.bias if use_bias else 0.0)
            ((out - yb) ** 2).mean().backward()
            sgd.step()

        for i in range(4):
            step(x[i], y[i], i % 2 == 0)
    return _result(m)


PATTERNS = [
    "step outside",
    "accumulate",
    "eager backward first",
    "step compiled",
    "grad after a compiled step",
    "module zero_grad",
    "grads set to None by hand",
    "zero_grad to zeros",
]


@pytest.mark.parametrize("name", PATTERNS)
def test_grad_across_compiled_calls_is_torchs(name):
    want = _pattern(torch, name, False)
    _compare(_pattern(kn, name, False), want)
    _compare(_pattern(kn, name, True), want)
