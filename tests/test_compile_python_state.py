"""Python values a compiled function changes (`self.count += 1`, a global step, a flag)
change on every call, as in eager code: the trace is keyed and guarded by the values before
it and each call stores the values after it again, so a call that finds them changed traces
again, as torch.compile guards an int attribute of a module and recompiles. After
`RETRACE_LIMIT` (8, torch.compile's default recompile_limit) such traces, calls that need
another run eagerly, with one warning, as torch.compile falls back to eager code.

Expected values: the same code run eagerly, and torch.compile (backend="eager": dynamo's
guards and replays, no code generation) where torch is installed. Before, the compiled
function counted once per trace and then kept returning the first call's result.
"""

import warnings

import numpy as np
import pytest

import kiln as kn
from kiln.tracing.trace import RETRACE_LIMIT


def _counter(m):
    class Counter(m.nn.Module):
        def __init__(self):
            super().__init__()
            self.count = 0
            self.lin = m.nn.Linear(3, 2)

        def forward(self, x):
            self.count += 1
            return self.lin(x) * self.count

    return Counter


def _run(m, compile_, calls=5, **kw):
    m.manual_seed(0)
    model = _counter(m)()
    with m.no_grad():
        model.lin.weight.copy_(m.tensor(np.arange(6.0).reshape(2, 3) / 10, dtype=m.float32))
        model.lin.bias.zero_()
    f = compile_(model) if compile_ else model
    x = m.ones(1, 3)
    outs = []
    for _ in range(calls):
        outs.append(f(x).detach().numpy().copy())
    return model.count, outs


@pytest.mark.parametrize("calls", [5, RETRACE_LIMIT + 4])
def test_a_module_counter_counts_each_call(calls):
    want_count, want = _run(kn, None, calls)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        count, got = _run(kn, kn.compile, calls)
    assert count == want_count == calls
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6)
    limited = [w for w in caught if "run eagerly" in str(w.message)]
    assert len(limited) == (calls > RETRACE_LIMIT)  # once, naming the value
    if limited:
        assert "count" in str(limited[0].message)
    torch = pytest.importorskip("torch")
    torch_count, ref = _run(torch, lambda mod: torch.compile(mod, backend="eager"), calls)
    assert torch_count == count
    for g, r in zip(got, ref):
        np.testing.assert_allclose(g, r, rtol=1e-6)


def test_a_flag_that_alternates_alternates():
    class Toggle:
        def __init__(self):
            self.flip = False

        @kn.compile
        def step(self, x):
            self.flip = not self.flip
            return x * (2.0 if self.flip else -1.0)

    t = Toggle()
    x = kn.ones(2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # past the retrace limit: eagerly
        got = [float(t.step(x)[0]) for _ in range(2 * RETRACE_LIMIT)]
    assert got == [2.0, -1.0] * RETRACE_LIMIT and t.flip is False


def test_a_value_set_to_a_constant_traces_once_more():
    state = {"mode": "warmup"}
    traces = []

    def f(x):
        traces.append(state["mode"])
        state["mode"] = "steady"
        return x + 1.0

    g = kn.compile(f)
    for _ in range(4):
        g(np.ones(2, np.float32))
    assert traces == ["warmup", "steady"] and state["mode"] == "steady"


STEP = 0


def _global_step(x):
    global STEP
    STEP += 1
    return x * STEP


def test_a_global_counter_counts_each_call():
    global STEP
    STEP = 0
    g = kn.compile(_global_step)
    outs = [float(g(kn.ones(1))[0]) for _ in range(4)]
    assert outs == [1.0, 2.0, 3.0, 4.0] and STEP == 4


def test_a_forward_hook_counting_calls_counts_each_call():
    calls = {"n": 0}
    lin = kn.nn.Linear(2, 2)

    def hook(module, inputs, output):
        calls["n"] += 1

    lin.register_forward_hook(hook)
    f = kn.compile(lin)
    for _ in range(3):
        f(kn.ones(1, 2))
    assert calls["n"] == 3


def test_recompile_limit_is_torch_compiles():
    class Holder:
        def __init__(self):
            self.n = 0

    h = Holder()

    def f(x):
        h.n += 1
        return x + h.n

    g = kn.compile(f, recompile_limit=2)
    with pytest.warns(UserWarning, match="run eagerly"):
        outs = [float(g(kn.zeros(1))[0]) for _ in range(4)]
    assert outs == [1.0, 2.0, 3.0, 4.0] and h.n == 4 and len(g.cache) == 2


def _list_program(m, compile_):
    """A function that reads the length of a captured list of numbers, which the caller
    appends to between calls."""
    outside = [1]

    def f(x):
        return x * len(outside) + outside[-1]

    g = compile_(f) if compile_ else f
    outs = []
    for i in range(4):
        outs.append(g(m.ones(2) * (i + 1)).tolist())
        outside.append(i + 2)
    return outs, outside


def test_a_captured_list_of_numbers_is_read_as_it_is_at_each_call():
    # Before: the list was not guarded, and every call read len(outside) == 1.
    want = _list_program(kn, None)
    assert want[0] == [[2.0, 2.0], [6.0, 6.0], [12.0, 12.0], [20.0, 20.0]]  # (i+1)^2 + (i+1)
    assert _list_program(kn, kn.compile) == want
    torch = pytest.importorskip("torch")
    assert _list_program(torch, lambda f: torch.compile(f, backend="eager")) == want


def test_a_captured_list_changed_in_place_between_calls_retraces():
    scale = [1.0, 2.0]

    @kn.compile
    def f(x):
        return x * scale[1]

    assert f(kn.ones(1)).tolist() == [2.0]
    scale[1] = 5.0
    assert f(kn.ones(1)).tolist() == [5.0]
    scale[1] = 2.0  # the first trace again
    assert f(kn.ones(1)).tolist() == [2.0]
    assert len(f.cache) == 2


def test_a_list_the_function_appends_numbers_to_grows_each_call():
    # As eager code and torch.compile: before, the append ran once per trace ([7, 7] here).
    made = []

    @kn.compile
    def f(x):
        made.append(7)
        made.extend([x.shape[0]])
        return x + 1

    for _ in range(3):
        f(kn.ones(2))
    f(kn.ones(3))  # another signature: traced again, appended once
    assert made == [7, 2, 7, 2, 7, 2, 7, 3]
    assert len(f.cache) == 2  # and not keyed by the list: one trace per signature


def test_a_list_the_function_appends_to_and_reads_is_as_eager_past_the_limit():
    def run(compile_):
        seen = []

        def f(x):
            seen.append(len(seen))
            return x + sum(seen)

        g = compile_(f) if compile_ else f
        return [g(kn.zeros(1)).item() for _ in range(RETRACE_LIMIT + 3)], seen

    want = run(None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = run(kn.compile)
    assert got == want
    assert any("run eagerly" in str(w.message) for w in caught)  # a trace per call until then


def _class_level_program(m, compile_):
    """Class attributes (a config class, a module's class body) and mutable defaults that
    the caller changes between calls. Before: all unguarded, and every call read the first
    call's values."""

    class Cfg:
        mult = 1.0

    class Net(m.nn.Module):
        scale = 1.0

        def forward(self, x):
            return x * self.scale

    net = Net()

    def f(x, k=[1.0], *, opts={"add": 0.0}):  # noqa: B006 (the mutable defaults are the test)
        return x * k[0] * Cfg.mult + opts["add"]

    g, h = (compile_(f), compile_(net)) if compile_ else (f, net)
    outs = []
    for i in range(3):
        outs.append((g(m.ones(1)).tolist(), h(m.ones(1)).tolist()))
        f.__defaults__[0][0] = 2.0 * (i + 2)
        f.__kwdefaults__["opts"]["add"] = float(i + 1)
        Cfg.mult = 10.0 * (i + 2)
        Net.scale = 5.0 * (i + 2)
    net.scale = -1.0  # an instance attribute now shadows the class's
    outs.append(h(m.ones(1)).tolist())
    return outs


def test_class_attributes_and_mutable_defaults_are_read_at_each_call():
    want = _class_level_program(kn, None)
    assert want == [([1.0], [1.0]), ([81.0], [10.0]), ([182.0], [15.0]), [-1.0]]  # by hand
    assert _class_level_program(kn, kn.compile) == want
    torch = pytest.importorskip("torch")
    assert _class_level_program(torch, lambda f: torch.compile(f, backend="eager")) == want


def test_a_class_attribute_the_function_counts_in_counts_each_call():
    class Stats:
        calls = 0

    class Net(kn.nn.Module):
        seen = 0

        def forward(self, x):
            Stats.calls += 1
            self.seen += 1  # (an instance attribute from the first call on, as in Python)
            return x * Stats.calls + self.seen

    net = Net()
    f = kn.compile(net)
    got = [f(kn.ones(1)).item() for _ in range(3)]
    assert got == [2.0, 4.0, 6.0] and Stats.calls == 3 and net.seen == 3
    assert Net.seen == 0


def _module_and_partial_program(m, compile_):
    """A configuration module's attribute and a dict that a functools.partial binds, both
    changed between calls. Before: neither was captured, and calls kept the first values."""
    import functools
    import types

    cfg = types.ModuleType("kiln_test_cfg")
    cfg.scale = 1.0
    d = {"w": 1.0}

    def base(x, w):
        return x * w["w"]

    p = functools.partial(base, w=d)

    def f(x):
        return x * cfg.scale + p(x)

    g = compile_(f) if compile_ else f
    outs = []
    for i in range(3):
        outs.append(g(m.ones(1)).tolist())
        cfg.scale = 2.0 * (i + 2)
        d["w"] = 10.0 * (i + 2)
    return outs


def test_module_attributes_and_partial_arguments_are_read_at_each_call():
    want = _module_and_partial_program(kn, None)
    assert want == [[2.0], [24.0], [36.0]]  # by hand: 2(i+1) + 10(i+1) after the first
    assert _module_and_partial_program(kn, kn.compile) == want
    torch = pytest.importorskip("torch")
    assert _module_and_partial_program(torch, lambda f: torch.compile(f, backend="eager")) == want


def test_a_trace_that_fails_changes_nothing_it_captured():
    # The second call traces again (the first made new entries in `state`), and that trace
    # raises: before, the Python value it had counted up (2) and the buffer it had scaled in
    # place (x 0.9) stayed changed. (Writing a traced value into `state["buf"]`, which this
    # test did to make the trace fail, now compiles as eager code runs: the stored tensor is
    # an input of the next trace, test_port_pt_compile_state.py; a Python number of a
    # traced value makes it fail instead.)
    state = {}
    w = kn.ones(2)

    @kn.compile
    def f(x):
        if "buf" not in state:
            state["n"] = 0
            state["buf"] = kn.zeros(2) + 1.0
        state["n"] += 1
        state["buf"].mul_(0.9)
        state["buf"].add_(x)
        if state["n"] > 1:
            float(x.sum())  # a traced value's Python number: refused
        return x * w

    f(kn.ones(2))
    n, buf = state["n"], state["buf"].clone()
    with pytest.raises(kn.errors.GraphError, match="is not known while building a graph"):
        f(kn.ones(2))
    assert state["n"] == n and state["buf"].tolist() == buf.tolist()


def _hand_written_sgd_steps(wrap, calls=5):
    """A hand-written momentum SGD (`self.state[p]` made in its first step, a buffer updated
    in place) trained by the step `wrap` makes: the losses, the weight, the state."""
    kn.manual_seed(3)
    model = kn.nn.Linear(3, 1)

    class MySGD(kn.optim.Optimizer):
        def __init__(self, params):
            super().__init__(params, {"lr": 0.1})

        @kn.no_grad()
        def step(self, closure=None):
            for group in self.param_groups:
                for p in group["params"]:
                    state = self.state[p]
                    if len(state) == 0:
                        state["step"] = 0
                        state["buf"] = kn.zeros_like(p)
                    state["step"] += 1
                    state["buf"].mul_(0.9).add_(p.grad, alpha=0.1)
                    p.add_(state["buf"], alpha=-group["lr"])

    opt = MySGD(model.parameters())

    def step(x, y):
        opt.zero_grad()
        loss = kn.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        return loss

    x, y = kn.randn(4, 3), kn.randn(4, 1)
    stepped = wrap(step)
    losses = [stepped(x, y).item() for _ in range(calls)]
    state = opt.state[model.weight]
    return losses, model.weight.tolist(), state["step"], state["buf"].tolist(), stepped


def test_a_hand_written_optimizer_making_its_state_while_traced_matches_eager():
    # Before: its step ran once, while tracing; the state kept step == 1 and a zero buffer
    # (the buffer's traced values were never stored there) and later calls reused the trace.
    # Then: refused with a GraphError. Now the call whose trace makes the state runs
    # eagerly, and the later traces take the buffer as an input they write back, as
    # torch.compile runs this optimizer (expected values: the same code run eagerly).
    eager = _hand_written_sgd_steps(lambda f: f)
    compiled = _hand_written_sgd_steps(kn.compile)
    assert compiled[2] == eager[2] == 5
    np.testing.assert_allclose(compiled[0], eager[0], rtol=1e-6)
    np.testing.assert_allclose(compiled[1], eager[1], rtol=1e-6)
    np.testing.assert_allclose(compiled[3], eager[3], rtol=1e-6)
    assert compiled[4].trace_count >= 1  # (the first call ran eagerly; `step` is keyed)


def test_a_captured_tensor_changed_in_place_is_written_back_each_call():
    # eager code counts on every call (by hand: 1, 2, 3); the trace takes the counter as an
    # input and each compiled call writes its new value back
    counter = kn.zeros(1)

    def bump(x):
        counter.add_(1)
        return x + counter

    f = kn.compile(bump)
    assert [f(kn.zeros(1)).item() for _ in range(3)] == [1.0, 2.0, 3.0]
    assert counter.item() == 3.0 and f.trace_count == 1


def test_a_captured_tensor_changed_with_a_value_that_requires_grad_is_refused():
    # eager code gives `acc` the history of x * w (grad_fn AddBackward0); a compiled call
    # writes values only, so it refuses rather than leave acc without that history
    w = kn.ones(3, requires_grad=True)
    acc = kn.zeros(3)

    def f(x):
        acc.add_(x * w)
        return acc.sum()

    with pytest.raises(kn.errors.GraphError, match="in place at .* requires grad"):
        kn.compile(f)(kn.ones(3))
    assert acc.tolist() == [0.0, 0.0, 0.0] and w.grad is None  # the call changed nothing

    def g(acc, x):  # an argument changed so: the same refusal
        acc.add_(x * w)
        return acc.sum()

    with pytest.raises(kn.errors.GraphError, match="changes 'acc'"):
        kn.compile(g)(acc, kn.ones(3))
    assert acc.tolist() == [0.0, 0.0, 0.0]
