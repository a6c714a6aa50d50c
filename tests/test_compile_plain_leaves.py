"""kn.compile of training steps over captured plain leaf tensors (`w = kn.randn(3,
requires_grad=True)`, no nn.Module): their `.grad` read and set inside the compiled function,
hand-written updates, and an optimizer's `step()` over them, as eager code runs them.

Expected values: the same function run eagerly by kiln (each step's math is checked against
PyTorch elsewhere), and PyTorch 2.13 eager where it is installed (the "Learning PyTorch with
Examples" polynomial fit, written with `torch` renamed).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import kiln as kn
from kiln.errors import UsageError


def identity(fn):
    return fn


def polynomial(lib, jit, optimizer=None, steps=6, in_list=False):
    """y = a + b x + c x^2 + d x^3 fitted to sin(x) (the tutorial's), one step per call."""
    x = lib.linspace(-math.pi, math.pi, 50, dtype=lib.float64)
    y = lib.sin(x)
    a, b, c, d = (lib.tensor(v, dtype=lib.float64, requires_grad=True)
                  for v in (0.1, -0.2, 0.3, 0.05))  # fmt: skip
    params = [a, b, c, d]
    lr = 1e-4
    opt = None if optimizer is None else optimizer(lib, params, lr)

    @jit
    def step(x, y):
        if in_list:
            y_pred = params[0] + params[1] * x + params[2] * x**2 + params[3] * x**3
        else:
            y_pred = a + b * x + c * x**2 + d * x**3
        loss = (y_pred - y).pow(2).sum()
        if opt is not None:
            opt.zero_grad()
        loss.backward()
        if opt is not None:
            opt.step()
        else:
            with lib.no_grad():
                for p in params:
                    p -= lr * p.grad
                    p.grad = None
        return loss

    losses = [step(x, y).item() for _ in range(steps)]
    return losses, [p.item() for p in params], [None if p.grad is None else p.grad.item()
                                                for p in params]  # fmt: skip


OPTIMIZERS = {
    "by_hand": None,
    "sgd": lambda lib, p, lr: lib.optim.SGD(p, lr=lr),
    "momentum": lambda lib, p, lr: lib.optim.SGD(p, lr=lr, momentum=0.9, nesterov=True),
    "adam": lambda lib, p, lr: lib.optim.Adam(p, lr=1e-2),
    "adamw": lambda lib, p, lr: lib.optim.AdamW(p, lr=1e-2, weight_decay=0.1),
}


def close(got, want):
    for g, w in zip(got, want, strict=True):
        if w is None or g is None:
            assert g is w
        else:
            np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


def same(got, want):
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(np.array(g, float), np.array(w, float), rtol=1e-12)


@pytest.mark.parametrize("in_list", [False, True])
@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_polynomial_fit_compiled_as_eager(name, in_list):
    eager = polynomial(kn, identity, OPTIMIZERS[name], in_list=in_list)
    compiled = polynomial(kn, kn.compile, OPTIMIZERS[name], in_list=in_list)
    for got, want in zip(compiled, eager, strict=True):
        close(got, want)


@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_polynomial_fit_compiled_as_torch(name):
    torch = pytest.importorskip("torch")
    want = polynomial(torch, identity, OPTIMIZERS[name])
    got = polynomial(kn, kn.compile, OPTIMIZERS[name])
    for g, w in zip(got, want, strict=True):
        close(g, w)


def grad_from_before(lib, jit):
    """A `.grad` left by an eager backward before the compiled step: the step reads it plus
    its own gradient (as eager code does), and zeroes it in place."""
    a = lib.tensor([0.5, -1.0], dtype=lib.float64, requires_grad=True)
    x = lib.tensor([1.0, 2.0], dtype=lib.float64)
    (a * a).sum().backward()  # a.grad = 2a

    @jit
    def step(x):
        loss = (a * x).sum() ** 2
        loss.backward()
        with lib.no_grad():
            a.sub_(0.1 * a.grad)
            a.grad.zero_()
        return loss

    out = [step(x).tolist() for _ in range(3)]
    return out, a.tolist(), a.grad.tolist()


def test_grad_left_before_the_call_is_where_the_step_starts():
    got, want = grad_from_before(kn, kn.compile), grad_from_before(kn, identity)
    same(got, want)
    assert want[1] != pytest.approx([0.5, -1.0])  # (the steps changed it)


def accumulating(lib, jit):
    """No zero_grad: each call's backward adds to the `.grad` the last call left, and the
    code reads it (a gradient norm to log)."""
    w = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64, requires_grad=True)

    @jit
    def step(x):
        (w * x).sum().backward()
        return w.grad.norm()

    norms = [step(lib.tensor([1.0, 0.5, 2.0], dtype=lib.float64)).item() for _ in range(3)]
    return norms, w.grad.tolist()


def test_grad_accumulates_across_calls():
    got, want = accumulating(kn, kn.compile), accumulating(kn, identity)
    same(got, want)
    assert want[0] == pytest.approx([math.sqrt(5.25) * k for k in (1, 2, 3)])


def test_compiled_then_eager_steps_continue_one_momentum():
    def run(jit):
        w = kn.tensor([1.0, -2.0], dtype=kn.float64, requires_grad=True)
        opt = kn.optim.SGD([w], lr=0.1, momentum=0.9)

        def step():
            opt.zero_grad()
            (w**2).sum().backward()
            opt.step()

        compiled = jit(step)
        for k in range(6):
            (compiled if k < 3 else step)()
        return w.tolist(), opt.state[w]["momentum_buffer"].tolist()

    got, want = run(kn.compile), run(identity)
    same(got, want)


def test_a_captured_tensor_replaced_between_calls_is_the_one_trained():
    state = {}

    @kn.compile
    def step():
        w = state["w"]
        (w**2).sum().backward()
        with kn.no_grad():
            w -= 0.25 * w.grad
            w.grad = None

    state["w"] = first = kn.tensor([2.0], requires_grad=True)
    step()
    state["w"] = second = kn.tensor([4.0], requires_grad=True)
    step()
    assert first.tolist() == [1.0] and second.tolist() == [2.0]
    assert first.grad is None and second.grad is None


def test_grad_of_a_captured_tensor_with_hooks_is_refused():
    w = kn.tensor([1.0, 2.0], requires_grad=True)
    w.register_hook(lambda g: g * 2)
    before = w.tolist()

    @kn.compile
    def step():
        (w * w).sum().backward()
        with kn.no_grad():
            w.sub_(0.1 * w.grad)

    with pytest.raises(UsageError, match="gradient hooks"):
        step()
    assert w.tolist() == before and w.grad is None  # a failed call changes nothing


def argument_steps(lib, jit):
    """The weights passed as an argument, a different tensor on some calls: each call reads
    and clears the `.grad` of the tensor it is given (one had a `.grad` before)."""
    w = lib.tensor([1.0, -2.0, 0.5], dtype=lib.float64, requires_grad=True)
    v = lib.tensor([0.3, 0.3, 0.3], dtype=lib.float64, requires_grad=True)
    (v * v).sum().backward()  # v.grad = 2v before its first step

    @jit
    def step(w, x):
        loss = ((w * x).sum() - 1.0) ** 2
        loss.backward()
        with lib.no_grad():
            w -= 0.01 * w.grad
            w.grad = None
        return loss

    x = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64)
    out = [step(t, x).item() for t in (w, w, v, w, v)]
    return out, w.tolist(), v.tolist(), w.grad, v.grad


def test_grad_of_an_argument_is_the_callers_tensors():
    got, want = argument_steps(kn, kn.compile), argument_steps(kn, identity)
    same(got[:3], want[:3])
    assert got[3:] == want[3:] == (None, None)
    torch = pytest.importorskip("torch")
    same(got[:3], argument_steps(torch, identity)[:3])


def test_grad_of_an_argument_given_as_a_non_leaf_is_refused():
    @kn.compile
    def step(w):
        (w * w).sum().backward()
        return w.grad

    w = kn.tensor([1.0, 2.0], requires_grad=True)
    assert step(w).tolist() == [2.0, 4.0]
    with pytest.raises(kn.errors.GraphError, match="not a leaf"):
        step(w * 1.0)


def separate_calls(lib, jit):
    """backward() eagerly, then a compiled `opt.step()` (and a compiled `zero_grad()`, and a
    compiled gradient norm) over plain tensors the functions reach only through the optimizer:
    each call steps with the `.grad` the tensors have then. (The step ran once, when traced,
    and later calls changed nothing.)"""
    w = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
    opt = lib.optim.Adam([w], lr=0.1)
    step, zero = jit(lambda: opt.step()), jit(lambda: opt.zero_grad())
    norm = jit(lambda: opt.param_groups[0]["params"][0].grad.norm())
    out = []
    for _ in range(3):
        zero()
        ((w * lib.tensor([1.0, -3.0], dtype=lib.float64)).sum() ** 2).backward()
        out.append(norm().item())
        step()
    return out, w.tolist(), w.grad.tolist()


def test_optimizer_step_compiled_apart_from_backward():
    got, want = separate_calls(kn, kn.compile), separate_calls(kn, identity)
    same(got, want)
    torch = pytest.importorskip("torch")
    same(got, separate_calls(torch, identity))


def test_step_over_a_tensor_the_trace_does_not_take_is_refused():
    ws = [kn.tensor([float(k)], requires_grad=True) for k in range(80)]  # (not walked: > 64)
    opt = kn.optim.SGD(ws, lr=0.5)
    for w in ws:
        (w * w).sum().backward()
    with pytest.raises(kn.errors.GraphError, match="does not take as an input"):
        kn.compile(lambda: opt.step())()
    assert [w.item() for w in ws] == [float(k) for k in range(80)]  # unchanged


def test_step_of_a_captured_optimizer_over_an_argument_is_refused():
    w = kn.tensor([1.0, 2.0], requires_grad=True)
    opt = kn.optim.SGD([w], lr=0.1)

    @kn.compile
    def step(w):
        opt.zero_grad()
        (w**2).sum().backward()
        opt.step()

    with pytest.raises(kn.errors.GraphError, match="an argument"):
        step(w)
    assert w.tolist() == [1.0, 2.0]


def test_a_captured_list_item_is_an_input_only_once_the_trace_reads_it():
    # (the OpInfo gradient test's pattern: the leaves held in a captured structure are
    # replaced by the arguments; the captured ones stay Tensors while traced, as eagerly)
    tree = [kn.tensor([1.0, 2.0], requires_grad=True), "other"]

    def f(t):
        args = [t if isinstance(x, kn.Tensor) else x for x in tree]
        return kn.autograd.grad((args[0] ** 2).sum(), [t])

    t = kn.tensor([3.0, -1.0], requires_grad=True)
    assert kn.compile(f)(t)[0].tolist() == f(t)[0].tolist() == [6.0, -2.0]


def test_grad_read_through_a_list_is_each_calls():
    params = [kn.tensor([3.0, 4.0], requires_grad=True)]
    norm = kn.compile(lambda: params[0].grad.norm())
    got = []
    for k in (1.0, 2.0, 3.0):
        params[0].grad = None
        (params[0] * k).sum().backward()
        got.append(norm().item())
    assert got == pytest.approx([math.sqrt(2.0) * k for k in (1.0, 2.0, 3.0)])
