"""`kn.compile` after a module's parts were replaced: a compiled call gives what the eager
call gives now (torch.compile guards the same: it recompiles), not what the module held when
it was traced. Expected values are the eager calls' on the same module."""

import numpy as np

import kiln as kn

X = np.arange(8.0, dtype=np.float32).reshape(2, 4) / 8


class Head(kn.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = kn.nn.Linear(4, 3)
        self.register_buffer("shift", kn.ones(3))

    def forward(self, x):
        return self.fc(x) + self.shift


def _same_as_eager(compiled, module):
    got = compiled(kn.tensor(X)).detach().numpy()
    want = module(kn.tensor(X)).detach().numpy()
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_compiled_module_sees_a_replaced_submodule():
    m = Head()
    cm = kn.compile(m)
    _same_as_eager(cm, m)
    m.fc = kn.nn.Linear(4, 3)
    _same_as_eager(cm, m)
    m.fc = kn.nn.Linear(4, 6)  # another shape
    m.shift = kn.zeros(6)
    _same_as_eager(cm, m)


def test_compiled_closure_sees_a_replaced_sequential_item():
    net = kn.nn.Sequential(kn.nn.Linear(4, 3), kn.nn.ReLU(), kn.nn.Linear(3, 2))
    cf = kn.compile(lambda x: net(x))
    _same_as_eager(cf, net)
    net[2] = kn.nn.Linear(3, 5)
    _same_as_eager(cf, net)


def test_compiled_module_sees_a_replaced_parameter_and_buffer():
    m = Head()
    cm = kn.compile(lambda x: m(x))
    _same_as_eager(cm, m)
    m.fc.weight = kn.nn.Parameter(kn.ones(3, 4))
    _same_as_eager(cm, m)
    m.shift = kn.full((3,), 5.0)
    _same_as_eager(cm, m)


def test_a_training_loop_with_batch_norm_traces_once():
    """Buffers updated in place (running statistics) are the same objects: no retrace."""
    net = kn.nn.Sequential(kn.nn.Linear(4, 3), kn.nn.BatchNorm1d(3))
    opt = kn.optim.SGD(net.parameters(), lr=0.1)

    @kn.compile
    def step(x):
        opt.zero_grad()
        loss = net(x).pow(2).mean()
        loss.backward()
        opt.step()
        return loss

    step(kn.tensor(X))
    first = step.last
    for _ in range(3):
        step(kn.tensor(X))
    assert step.last is first


# What a compiled function reads through a dict, or a list or tuple of modules (torch.compile
# guards their items): a changed number in a dict retraces, and modules in a list count as
# reached (their train/eval flag, what they hold). kiln read neither and kept the first
# trace's values. (A list of Python values only is not guarded: functions append to such.)
CONFIG = {"scale": 2.0}
LAYERS = [kn.nn.Linear(4, 4), kn.nn.Dropout(0.5)]


def _scaled(x):
    return x * CONFIG["scale"]


def _stacked(x):
    for layer in LAYERS:
        x = layer(x)
    return x


def test_compiled_function_sees_a_changed_dict_value():
    cf = kn.compile(_scaled)
    np.testing.assert_array_equal(cf(kn.tensor(X)).numpy(), X * 2)
    CONFIG["scale"] = 5.0
    try:
        np.testing.assert_array_equal(cf(kn.tensor(X)).numpy(), X * 5)
    finally:
        CONFIG["scale"] = 2.0


def test_compiled_function_sees_modules_in_a_list():
    cf = kn.compile(_stacked)
    for layer in LAYERS:
        layer.train()
    cf(kn.tensor(X))
    for layer in LAYERS:
        layer.eval()
    _same_as_eager(cf, lambda x: _stacked(x))
    LAYERS[0] = kn.nn.Linear(4, 4)
    _same_as_eager(cf, lambda x: _stacked(x))
    LAYERS.append(kn.nn.Linear(4, 2))
    try:
        _same_as_eager(cf, lambda x: _stacked(x))
    finally:
        LAYERS.pop()


def test_index_ops_on_a_tensor_made_inside_a_compiled_function():
    """`kn.zeros(..).scatter_add(0, idx, x)` and friends with x traced (kiln raised 'argument
    is not a Symbol'); expected: the eager call's values."""
    idx = kn.tensor([[0, 1, 0, 1]])

    def fn(x):
        a = kn.zeros(2, 4).scatter_add(0, idx, x[:1])
        b = kn.zeros(2, 4).scatter(0, idx, x[1:])
        c = kn.tensor([1.0, 2.0, 3.0]).take(idx.flatten()[:2] + (x[0, :2] > 9).long())
        d = kn.ones(2, 4).masked_fill(x > 0.3, 0.5)
        return a, b, c, d

    for got, want in zip(kn.compile(fn)(kn.tensor(X)), fn(kn.tensor(X))):
        np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_compiled_step_reads_parameters_after_an_optimizer_step():
    """A GAN-style step: the generator's loss reads the discriminator after `opt_d.step()`,
    so it sees the new weights, as PyTorch's in-place step does (kiln read the old ones).
    By hand: w1 = w0 - 0.1 * v0 * x; the generator's gradient is w1 * x."""
    x = np.array([1.0, -2.0, 0.5], np.float32)
    w0 = np.array([0.3, 0.2, -0.1], np.float32)
    v0 = np.array([1.0, 0.5, 2.0], np.float32)
    d = kn.nn.Linear(3, 1, bias=False)
    g = kn.nn.Linear(1, 3, bias=False)
    with kn.no_grad():
        d.weight.copy_(kn.tensor(w0[None]))
        g.weight.copy_(kn.tensor(v0[:, None]))
    opt_d = kn.optim.SGD(d.parameters(), lr=0.1)
    opt_g = kn.optim.SGD(g.parameters(), lr=0.1)

    @kn.compile
    def step(x, one):
        fake = g(one) * x
        opt_d.zero_grad()
        d(fake.detach()).sum().backward()
        opt_d.step()
        opt_g.zero_grad()
        loss_g = d(fake).sum()
        loss_g.backward()
        opt_g.step()
        return loss_g

    loss = step(kn.tensor(x), kn.ones(1, 1))
    w1 = w0 - 0.1 * v0 * x
    np.testing.assert_allclose(float(loss), (w1 * v0 * x).sum(), rtol=1e-6)
    np.testing.assert_allclose(d.weight.detach().numpy()[0], w1, rtol=1e-6)
    np.testing.assert_allclose(g.weight.detach().numpy()[:, 0], v0 - 0.1 * w1 * x, rtol=1e-6)
