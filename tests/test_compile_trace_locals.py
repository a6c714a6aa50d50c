"""Buffers a kn.compile'd function makes from constants and writes traced values into
(kiln/frontend/trace_locals.py): `outs = kn.zeros(T, n); outs[t] = h`, `index_add_` into
`kn.zeros(shape)`, `kn.full`, `kn.tensor`, `kn.empty` + `copy_`. Before, kiln refused these
(the buffer was an eager constant the program could not change); the compiled values must be
the eager run's, call after call, and torch 2.13's where torch is installed."""

from __future__ import annotations

import collections

import numpy as np
import pytest

import kiln as kn


def program(lib, x, idx):
    """Every way the buffer is used after the first traced write: operators, functions of
    several tensors, methods, views taken after it (which see later changes), in-place
    methods and `+=`, a buffer of each factory."""
    outs = lib.zeros(3, 2)
    outs[1] = x[0]
    a = lib.stack([outs, x]).sum(0)
    b = lib.cat([outs, x]) * 2
    c = lib.nn.functional.relu(outs - 0.5)
    d = lib.where(outs > 0.5, outs, lib.zeros_like(outs))
    e = outs.sum() + lib.sum(outs, 0)[1]
    buf = lib.full((4,), 2.0)
    buf.index_add_(0, idx, x[:, 0])
    m = lib.zeros(2, 2)
    m[:, 0] = x[1, :2]
    m.mul_(3)
    m += 1
    t = lib.tensor([1.0, 2.0, 3.0])
    t[0] = x[2, 0]
    v = outs[1]  # a view of the buffer, taken after the first write
    outs.add_(1)  # seen through v
    empty = lib.empty(2)
    empty.copy_(x[0])
    return a, b, c, d, e, buf, m, t, v, outs, empty


X = np.arange(6.0, dtype=np.float32).reshape(3, 2)
IDX = np.array([0, 3, 0])


def _run(f, scale):
    out = f(kn.tensor(X * scale), kn.tensor(IDX))
    return [o.numpy() for o in out]


def test_compiled_buffers_match_eager_call_after_call():
    compiled = kn.compile(lambda x, idx: program(kn, x, idx))
    for scale in (1.0, -2.0, 0.5):  # one trace, then the program with other values
        want = _run(lambda x, idx: program(kn, x, idx), scale)
        got = _run(compiled, scale)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-6)
    # the hand-checked parts: outs = [[0, 0], x[0], [0, 0]] + 1 at the end (x[0] = (0, 0.5)
    # at scale 0.5), and the full((4,), 2) buffer with x[:, 0] = (0, 2, 4) added at rows 0,
    # 3, 0 (scale 1)
    assert got[9].tolist() == [[1.0, 1.0], [1.0, 1.5], [1.0, 1.0]]
    assert _run(compiled, 1.0)[5].tolist() == [6.0, 2.0, 2.0, 4.0]


def test_compiled_buffers_match_torch():
    torch = pytest.importorskip("torch")
    want = program(torch, torch.tensor(X), torch.tensor(IDX))
    got = _run(kn.compile(lambda x, idx: program(kn, x, idx)), 1.0)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w.numpy(), rtol=1e-6)


def test_gradients_through_a_filled_buffer():
    # an RNN writing each step into a preallocated buffer: the gradient reaches w through the
    # buffer's rows (compared with the eager run; the first row by hand, tanh(x0 . w))
    def rnn(x, w):
        outs, h = kn.zeros(x.shape[0], 2), kn.zeros(2)
        for t in range(x.shape[0]):
            h = kn.tanh(x[t] @ w + h)
            outs[t] = h
        return (outs * kn.arange(1.0, x.shape[0] + 1)[:, None]).sum(), outs

    results = []
    for f in (rnn, kn.compile(rnn)):
        w = kn.tensor([[0.1, -0.2], [0.3, 0.4]], requires_grad=True)
        loss, outs = f(kn.tensor(X), w)
        loss.backward()
        results.append((loss.item(), outs.detach().numpy(), w.grad.numpy()))
    (le, oe, ge), (lc, oc, gc) = results
    np.testing.assert_allclose(lc, le, rtol=1e-6)
    np.testing.assert_allclose(oc, oe, rtol=1e-6)
    np.testing.assert_allclose(gc, ge, rtol=1e-5)
    np.testing.assert_allclose(oe[0], np.tanh(X[0] @ np.array([[0.1, -0.2], [0.3, 0.4]])),
                               rtol=1e-6)  # fmt: skip


def test_a_buffer_stored_in_module_state_is_each_calls():
    class Net(kn.nn.Module):
        def forward(self, x):
            buf = kn.zeros(2)
            buf[0] = x.sum()
            self.last = buf
            self.history = [buf * 2]
            return buf + 1

    eager, compiled = Net(), kn.compile(Net())
    for v in (1.0, 2.0):
        for net in (eager, compiled):
            out = net(kn.ones(3) * v)
            assert out.tolist() == [3 * v + 1, 1.0]
            assert net.last.tolist() == [3 * v, 0.0]
            assert net.history[0].tolist() == [6 * v, 0.0]
            assert type(net.last) is kn.Tensor


def test_a_view_taken_before_the_first_write_is_refused():
    # the view is a plain tensor of the old values: it could not follow the buffer
    def f(x):
        t = kn.zeros(3)
        v = t[1:]
        t[0] = x[0]
        return v

    assert f(kn.ones(3)).tolist() == [0.0, 0.0]  # eagerly: the view's elements were not written
    with pytest.raises(kn.GraphError, match="a view was taken before"):
        kn.compile(f)(kn.ones(3))


def test_a_leaf_that_requires_grad_keeps_the_leaf_error():
    def f(x):
        t = kn.zeros(3, requires_grad=True)
        t[0] = x[0]
        return t

    for g in (f, kn.compile(f)):
        with pytest.raises(kn.AutogradError, match="leaf Variable that requires grad"):
            g(kn.ones(3))


def test_a_failed_trace_leaves_plain_tensors():
    # the buffer stands for its graph value only while the trace runs; a trace that raises
    # after the first write leaves the object a plain tensor with its own values
    seen = collections.deque()  # (a deque: state kn.compile's stores do not watch)

    def f(x):
        t = kn.zeros(2)
        t[0] = x[0]
        seen.append(t)
        raise ValueError("stop")

    with pytest.raises(ValueError, match="stop"):
        kn.compile(f)(kn.ones(2))
    assert type(seen[0]) is kn.Tensor and seen[0].tolist() == [0.0, 0.0]


# A buffer that is a copy of a factory's result, or the result of ops on such constants only:
# made afresh by every eager call too, so a traced value may be written into it (compared
# with the eager run for three calls; torch 2.13 computes the same where installed).
COPIES = {
    "to-dtype": lambda L: L.zeros(3).to(L.float64),
    "to-dtype-keyword": lambda L: L.zeros(3).to(dtype=L.float64),
    "to-device": lambda L: L.zeros(3).to("cpu"),
    "cpu": lambda L: L.zeros(3).cpu(),
    "float-of-int": lambda L: L.zeros(3, dtype=L.int64).float(),
    "double": lambda L: L.zeros(3).double(),
    "type": lambda L: L.zeros(3, dtype=L.int32).type(L.float32),
    "clone": lambda L: L.zeros(3).clone(),
    "contiguous": lambda L: L.zeros(3).contiguous(),
    "tril-row": lambda L: L.ones(3, 3).tril().sum(0),
    "tril": lambda L: L.ones(3, 3).tril(),
    "arange-float": lambda L: L.arange(3).float(),
    "scaled": lambda L: L.zeros(3) * 2 + 1,
    "neg": lambda L: -L.ones(3),
    "cat": lambda L: L.cat([L.zeros(1), L.ones(2)]),
    "chain": lambda L: (L.ones(3, 3).tril() @ L.ones(3)).float().clone(),
}


def _fill(lib, make, x):
    b = make(lib)
    b[0] = x[0]
    b[1] += x[1]
    b.mul_(2)
    return b * 1


@pytest.mark.parametrize("name", list(COPIES))
def test_a_copy_of_a_factory_result_is_a_buffer_too(name):
    make = COPIES[name]
    compiled = kn.compile(lambda x: _fill(kn, make, x))
    for scale in (1.0, -2.0, 0.5):  # one trace, then two calls with other values
        x = kn.tensor(np.array([1.0, 2.0, 3.0], np.float32) * scale)
        want = _fill(kn, make, x)
        got = compiled(x)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    torch = pytest.importorskip("torch")
    t = _fill(torch, make, torch.tensor(np.array([1.0, 2.0, 3.0], np.float32) * 0.5))
    np.testing.assert_allclose(got.numpy(), t.numpy(), rtol=1e-6)


def test_a_copy_of_a_captured_tensor_is_still_refused():
    # only results of the function's own constants count: a tensor made from one made
    # outside (a captured global) stays refused, as a tensor from outside is
    outside = kn.zeros(3)

    def f(x):
        b = outside * 2
        b[0] = x[0]
        return b

    with pytest.raises(kn.GraphError, match="made outside the compiled function"):
        kn.compile(f)(kn.ones(3))
