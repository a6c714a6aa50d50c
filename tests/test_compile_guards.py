"""`kn.compile` guards what a function captured: tensors it closes over or reads from globals
(identity, version counter, shape, dtype, device, requires_grad) and Python values it reads
(closure variables, globals, attributes of the objects and modules it uses). A change retraces,
with a log line saying what changed; unchanged captures keep the cached trace."""

import numpy as np
import pytest

import kiln as kn
from kiln.testing import assert_close

SCALE = kn.tensor([1.0, 2.0])
OFFSET = 1.0


def _logged(capsys) -> list:
    return [ln for ln in capsys.readouterr().err.splitlines() if "kn.compile" in ln]


def test_captured_global_tensor_changed_in_place_retraces(monkeypatch, capsys):
    # The bug: after scale.fill_(10.0) the compiled function kept the old value.
    monkeypatch.setenv("KILN_DEBUG", "1")

    @kn.compile
    def loss_fn(x):
        return x * SCALE

    x = kn.tensor([1.0, 1.0])
    assert_close(loss_fn(x), np.float32([1.0, 2.0]))
    try:
        SCALE.fill_(10.0)
        assert_close(loss_fn(x), loss_fn.__wrapped__(x))  # eager's answer: [10, 10]
        assert_close(loss_fn(x), np.float32([10.0, 10.0]))
    finally:
        SCALE.copy_(kn.tensor([1.0, 2.0]))
    lines = _logged(capsys)
    assert len(lines) == 2  # the second call retraced; the third hit the new trace
    assert "retrace: captured tensor 'SCALE' changed (version 0 -> 1)" in lines[1]


def test_captured_closure_tensor_changed_in_place_retraces():
    scale = kn.tensor([1.0, 2.0])
    f = kn.compile(lambda x: scale * x)
    x = kn.tensor([1.0, 1.0])
    assert_close(f(x), np.float32([1.0, 2.0]))
    scale.fill_(10.0)
    assert_close(f(x), np.float32([10.0, 10.0]))
    scale[0] = 3.0  # item assignment bumps the version too
    assert_close(f(x), np.float32([3.0, 10.0]))
    assert len(f.cache) == 1  # each retrace replaced the stale trace of the same signature


def test_value_computed_eagerly_from_a_captured_tensor_retraces():
    # scale.sum() runs eagerly while tracing: the trace holds its value, not scale.
    scale = kn.tensor([1.0, 2.0])
    f = kn.compile(lambda x: x * scale.sum())
    x = np.ones(2, np.float32)
    np.testing.assert_array_equal(f(x), np.float32([3.0, 3.0]))
    scale.add_(1.0)
    np.testing.assert_array_equal(f(x), np.float32([5.0, 5.0]))


def test_captured_tensor_rebound_to_another_tensor_retraces(capsys, monkeypatch):
    monkeypatch.setenv("KILN_DEBUG", "1")
    scale = kn.tensor([1.0, 2.0])

    def scaled(x):
        return x * scale

    f = kn.compile(scaled)
    x = np.ones(2, np.float32)
    np.testing.assert_array_equal(f(x), np.float32([1.0, 2.0]))
    scale = kn.tensor([5.0, 6.0])  # noqa: F841 (the closure reads it)
    np.testing.assert_array_equal(f(x), np.float32([5.0, 6.0]))
    assert "captured tensor 'scale' is another tensor" in _logged(capsys)[1]


def test_captured_tensor_new_shape_or_dtype_retraces():
    class Config:
        pass

    cfg = Config()
    cfg.scale = kn.tensor([1.0, 2.0])
    f = kn.compile(lambda x: x * cfg.scale)
    x = np.ones(2, np.float32)
    np.testing.assert_array_equal(f(x), np.float32([1.0, 2.0]))
    cfg.scale = kn.tensor([4.0])  # an attribute of a captured object
    np.testing.assert_array_equal(f(x), np.float32([4.0, 4.0]))
    cfg.scale = kn.tensor([2, 3], dtype=kn.int64)
    expected = (kn.tensor(x) * cfg.scale).numpy()  # eager's answer, dtype included
    out = f(x)
    assert out.dtype == expected.dtype
    np.testing.assert_array_equal(out, expected)


def test_unchanged_captures_keep_the_cached_trace():
    scale = kn.tensor([1.0, 2.0])

    def f(x):
        return x * scale * OFFSET

    g = kn.compile(f)
    for _ in range(3):
        g(kn.tensor([1.0, 1.0]))
    assert g.trace_count == 1
    scale.detach()  # out-of-place ops and reads do not change the version
    _ = scale * 2.0
    g(kn.tensor([1.0, 1.0]))
    assert g.trace_count == 1


def test_captured_closure_scalar_change_retraces(monkeypatch, capsys):
    monkeypatch.setenv("KILN_DEBUG", "1")
    alpha = 2.0

    def scaled(x):
        return x * alpha

    f = kn.compile(scaled)
    x = np.ones(2, np.float32)
    np.testing.assert_array_equal(f(x), np.float32([2.0, 2.0]))
    alpha = 3.0
    np.testing.assert_array_equal(f(x), np.float32([3.0, 3.0]))
    alpha = 2.0  # noqa: F841 (back to the first value: its trace is still cached)
    np.testing.assert_array_equal(f(x), np.float32([2.0, 2.0]))
    lines = _logged(capsys)
    assert len(lines) == 2 and len(f.cache) == 2
    assert "captured 'alpha' is 3.0 (was 2.0)" in lines[1]


def test_captured_global_scalar_change_retraces():
    global OFFSET
    f = kn.compile(lambda x: x + OFFSET)
    x = np.zeros(2, np.float32)
    np.testing.assert_array_equal(f(x), np.float32([1.0, 1.0]))
    try:
        OFFSET = 5.0
        np.testing.assert_array_equal(f(x), np.float32([5.0, 5.0]))
    finally:
        OFFSET = 1.0


def test_captured_scalar_int_then_float_retraces():
    # 2 and 2.0 are equal and hash alike, but trace differently on integer inputs.
    k = 2
    f = kn.compile(lambda x: x * k)
    x = np.array([1, 2], np.int64)
    assert f(x).dtype == np.int64
    k = 2.0  # noqa: F841
    out = f(x)
    assert out.dtype.kind == "f" and out.dtype == (kn.tensor(x) * 2.0).dtype  # eager's dtype


def test_captured_bool_flag_in_control_flow_retraces():
    use_relu = True

    def f(x):
        return kn.relu(x) if use_relu else x

    g = kn.compile(f)
    x = np.float32([-1.0, 2.0])
    np.testing.assert_array_equal(g(x), np.float32([0.0, 2.0]))
    use_relu = False  # noqa: F841
    np.testing.assert_array_equal(g(x), x)


def test_module_float_attribute_change_retraces():
    class Scaled(kn.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = kn.nn.Linear(2, 2)
            self.gain = 1.0

        def forward(self, x):
            return self.linear(x) * self.gain

    model = Scaled()
    f = kn.compile(lambda x: model(x))
    x = np.ones((1, 2), np.float32)
    before = f(x)
    model.gain = 3.0
    assert_close(f(x), before * 3.0)
    with kn.no_grad():
        assert_close(f(kn.tensor(x)), model(kn.tensor(x)))


def test_compiled_method_reads_self_attributes():
    class Affine:
        def __init__(self):
            self.shift = 1.0
            self.weight = kn.tensor([2.0, 2.0])

        @kn.compile
        def __call__(self, x):
            return x * self.weight + self.shift

    a = Affine()
    x = np.ones(2, np.float32)
    np.testing.assert_array_equal(a(x), np.float32([3.0, 3.0]))
    a.shift = 0.0
    np.testing.assert_array_equal(a(x), np.float32([2.0, 2.0]))
    a.weight.mul_(2.0)
    np.testing.assert_array_equal(a(x), np.float32([4.0, 4.0]))


def test_helper_function_captures_are_guarded_too():
    scale = kn.tensor([2.0])

    def helper(x):
        return x * scale

    f = kn.compile(lambda x: helper(x) + 1.0)
    x = np.ones(1, np.float32)
    np.testing.assert_array_equal(f(x), np.float32([3.0]))
    scale.fill_(4.0)
    np.testing.assert_array_equal(f(x), np.float32([5.0]))


def test_optimizer_learning_rate_change_retraces_a_compiled_step():
    kn.manual_seed(0)
    lin = kn.nn.Linear(2, 1)
    opt = kn.optim.SGD(lr=0.1)

    @kn.compile
    def step(x):
        loss = kn.sum(lin(x))
        opt.minimize(loss)
        return loss

    x = kn.tensor(np.ones((1, 2), np.float32))
    w0 = lin.weight.numpy()
    step(x)
    np.testing.assert_allclose(lin.weight.numpy(), w0 - 0.1, rtol=1e-6)  # d(sum)/dw = x = 1
    opt.lr = 0.5
    step(x)
    np.testing.assert_allclose(lin.weight.numpy(), w0 - 0.6, rtol=1e-6)


def test_a_value_the_function_changes_counts_each_call_as_eagerly():
    # fn updates `count`: each call counts, as eager code and torch.compile (which guards on
    # the value before and recompiles) do; the trace is keyed by the value before it.
    count = 0

    def f(x):
        nonlocal count
        count += 1
        return x + count

    g = kn.compile(f)
    for k in range(1, 4):
        np.testing.assert_array_equal(g(np.ones(2, np.float32)), np.float32([1 + k] * 2))
    assert count == 3 and len(g.cache) == 3


@pytest.mark.parametrize("requires_grad", [False, True])
def test_captured_tensor_requires_grad_flip_retraces(requires_grad):
    scale = kn.tensor([2.0])
    f = kn.compile(lambda x: x * scale.detach() if requires_grad else x * scale)
    x = np.ones(1, np.float32)
    f(x)
    scale.requires_grad_(True)
    out = f(x)  # retraced: now an input of the program (tests/test_compile_captured_grad.py)
    np.testing.assert_array_equal(np.asarray(out.detach()), np.float32([2.0]))
    assert out.requires_grad is not requires_grad  # as eagerly: detach() inside cuts it
    if not requires_grad:
        out.sum().backward()
        np.testing.assert_array_equal(scale.grad.numpy(), x)


def test_captured_numpy_array_rebound_retraces():
    table = np.float32([1.0, 2.0])

    def f(x):
        return x * table

    g = kn.compile(f)
    x = np.ones(2, np.float32)
    np.testing.assert_array_equal(g(x), table)
    table = np.float32([7.0, 8.0])
    np.testing.assert_array_equal(g(x), table)


def test_a_captured_proxy_object_does_not_break_the_walk():
    class Proxy:  # the walk reads instance dicts only: no __getattr__ runs
        def __getattr__(self, name):
            raise RuntimeError(f"no {name}")

    proxy = Proxy()
    proxy.gain = 2.0

    def f(x):
        return x * proxy.gain

    g = kn.compile(f)
    np.testing.assert_array_equal(g(np.ones(1, np.float32)), np.float32([2.0]))
    proxy.gain = 3.0
    np.testing.assert_array_equal(g(np.ones(1, np.float32)), np.float32([3.0]))


def test_attributes_only_other_methods_read_are_not_guarded():
    # A counter that the loop bumps and only another method reads must not retrace each call.
    class Trainer:
        def __init__(self):
            self.step = 0
            self.scale = 2.0

        def log_line(self):
            return f"step {self.step}"

        @kn.compile
        def loss(self, x):
            return kn.sum(x * self.scale)

    trainer = Trainer()
    x = np.ones(3, np.float32)
    for _ in range(4):
        trainer.loss(x)
        trainer.step += 1
    assert Trainer.loss.trace_count == 1
    trainer.scale = 3.0  # what loss reads does retrace
    assert trainer.loss(x) == 9.0 and Trainer.loss.trace_count == 2
