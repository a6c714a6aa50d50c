"""nn modules in graph mode: shapes, parameter counts (PyTorch's formulas), Variables per graph,
state dicts, train/eval behaviour, BatchNorm's declared updates, initializers, seeding."""

import math

import numpy as np
import pytest

import kiln as kn
from kiln.graph.opdef import REGISTRY


def n_params(module):
    return sum(p.size for p in module.parameters())


def run(outputs, feed):
    with kn.Session() as sess:
        return sess.run(outputs, feed)


# -- shapes and parameter counts --------------------------------------------------------------


@pytest.mark.parametrize(
    "make, expected",
    [
        (lambda: kn.nn.Linear(784, 10), 784 * 10 + 10),
        (lambda: kn.nn.Linear(5, 3, bias=False), 15),
        (lambda: kn.nn.Conv2d(3, 8, 5), 8 * 3 * 5 * 5 + 8),
        (lambda: kn.nn.Conv2d(3, 8, (3, 2), bias=False), 8 * 3 * 3 * 2),
        (lambda: kn.nn.LayerNorm(32), 2 * 32),
        (lambda: kn.nn.LayerNorm((4, 8)), 2 * 4 * 8),
        (lambda: kn.nn.BatchNorm1d(16), 2 * 16),
        (lambda: kn.nn.Embedding(100, 7), 700),
        (lambda: kn.nn.MLP([10, 20, 30, 5]), 10 * 20 + 20 + 20 * 30 + 30 + 30 * 5 + 5),
        (lambda: kn.nn.Sequential(kn.nn.ReLU(), kn.nn.Dropout(), kn.nn.Flatten()), 0),
    ],
)
def test_parameter_counts_equal_pytorch_formulas(make, expected):
    assert n_params(make()) == expected


def test_linear_forward_is_x_times_weight_transposed_plus_bias():
    fc = kn.nn.Linear(4, 3)
    x = kn.placeholder(kn.float32, ("batch", 4), name="x")
    y = fc(x)
    assert y.type_str() == "f32[batch,3]" and fc.weight.shape == (3, 4)
    data = np.random.default_rng(0).normal(size=(5, 4)).astype(np.float32)
    want = data @ fc.weight.numpy().T + fc.bias.numpy()
    np.testing.assert_allclose(run(y, {x: data}), want, rtol=1e-6)
    np.testing.assert_allclose(fc(data), want, rtol=1e-6)  # NumPy inputs: computed at once


def test_conv_pool_flatten_linear_forward_shapes():
    model = kn.nn.Sequential(
        kn.nn.Conv2d(1, 4, kernel_size=3, padding=1),
        kn.nn.ReLU(),
        kn.nn.MaxPool2d(2),
        kn.nn.Conv2d(4, 6, kernel_size=3, stride=2),
        kn.nn.Flatten(),
        kn.nn.Linear(6 * 3 * 3, 10),
    )
    x = kn.placeholder(kn.float32, ("batch", 1, 16, 16), name="x")
    y = model(x)
    assert y.type_str() == "f32[batch,10]"
    out = run(y, {x: np.ones((2, 1, 16, 16), np.float32)})
    assert out.shape == (2, 10) and np.isfinite(out).all()
    assert [v.name for v in x.graph.variables] == [
        "0/weight",
        "0/bias",
        "3/weight",
        "3/bias",
        "5/weight",
        "5/bias",
    ]


def test_conv_layers_train_with_minimize():
    assert REGISTRY["conv2d"].vjp is not None and REGISTRY["max_pool2d"].vjp is not None
    conv = kn.nn.Conv2d(1, 2, 3)
    x = kn.placeholder(kn.float32, (2, 1, 6, 6), name="x")
    loss = kn.mean(kn.max_pool2d(conv(x), 2) ** 2)
    train_op = kn.optim.SGD(lr=0.1).minimize(loss)
    before = conv.weight.numpy()
    run([loss, train_op], {x: np.ones((2, 1, 6, 6), np.float32)})
    assert not np.array_equal(conv.weight.numpy(), before)


def test_layer_norm_and_embedding_forward():
    ln = kn.nn.LayerNorm(4)
    x = kn.placeholder(kn.float32, ("batch", 4), name="x")
    data = np.array([[1.0, 2.0, 3.0, 4.0], [0.0, 0.0, 5.0, 5.0]], np.float32)
    out = run(ln(x), {x: data})
    np.testing.assert_allclose(out.mean(-1), 0.0, atol=1e-6)
    np.testing.assert_allclose(out.var(-1), 1.0, rtol=1e-4)
    emb = kn.nn.Embedding(10, 3)
    ids = kn.placeholder(kn.int64, ("batch", 2), name="ids")
    got = run(emb(ids), {ids: np.array([[1, 9]])})
    np.testing.assert_array_equal(got[0], emb.weight.numpy()[[1, 9]])


# -- Variables per graph, names, state dicts ---------------------------------------------------


class Net(kn.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = kn.nn.Linear(4, 8)
        self.fc2 = kn.nn.Linear(8, 2)

    def forward(self, x):
        return self.fc2(kn.tanh(self.fc1(x)))


def test_module_called_twice_in_a_graph_shares_its_variables_named_by_path():
    net = Net()
    x = kn.placeholder(kn.float32, ("batch", 4), name="x")
    net(x)
    net(x * 2.0)
    names = [v.name for v in x.graph.variables]
    assert names == ["fc1/weight", "fc1/bias", "fc2/weight", "fc2/bias"]
    assert net.fc1.weight.variable_in(x.graph) is x.graph.variables[0]
    with kn.Graph().as_default():  # a new graph: new Variables, starting from current values
        z = kn.placeholder(kn.float32, (1, 4), name="z")
        net(z)
        var = net.fc1.weight.variable_in(z.graph)
        assert var is not x.graph.variables[0]
        np.testing.assert_array_equal(var.numpy(), x.graph.variables[0].numpy())


def test_state_dict_round_trip_sets_values_and_materialized_variables():
    kn.manual_seed(1)
    a = Net()
    kn.manual_seed(2)
    b = Net()
    x = kn.placeholder(kn.float32, ("batch", 4), name="x")
    ya, yb = a(x), b(x)
    data = np.random.default_rng(0).normal(size=(3, 4)).astype(np.float32)
    assert not np.allclose(*run([ya, yb], {x: data}))
    state = a.state_dict()
    assert list(state) == ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
    assert b.load_state_dict(state) == ([], [])
    out_a, out_b = run([ya, yb], {x: data})
    np.testing.assert_array_equal(out_a, out_b)
    # PyTorch's state_dict shares memory with the parameters: writing through it writes them
    state["fc1.weight"][...] = 0
    assert np.all(a.fc1.weight.numpy() == 0)


def test_load_state_dict_errors_name_every_problem_and_change_nothing():
    net = Net()
    before = {k: v.clone() for k, v in net.state_dict().items()}  # a snapshot, not a view
    state = net.state_dict()
    state["fc1.weight"] = np.zeros((8, 5), np.float32)
    del state["fc2.bias"]
    state["fc3.weight"] = np.zeros(1, np.float32)
    with pytest.raises(RuntimeError) as info:
        net.load_state_dict(state)
    message = str(info.value)
    assert "Missing key(s) in state_dict: fc2.bias" in message
    assert "Unexpected key(s) in state_dict: fc3.weight" in message
    assert "size mismatch for fc1.weight" in message and "(8, 5)" in message
    for k, v in net.state_dict().items():
        np.testing.assert_array_equal(v, before[k])
    del state["fc3.weight"]
    state["fc1.weight"] = before["fc1.weight"]
    assert net.load_state_dict(state, strict=False) == (["fc2.bias"], [])


def test_manual_seed_makes_modules_reproducible():
    kn.manual_seed(123)
    first = kn.nn.MLP([6, 5, 4]).state_dict()
    kn.manual_seed(123)
    again = kn.nn.MLP([6, 5, 4]).state_dict()
    kn.manual_seed(124)
    other = kn.nn.MLP([6, 5, 4]).state_dict()
    for k in first:
        np.testing.assert_array_equal(first[k], again[k])
    assert not np.array_equal(first["0.weight"], other["0.weight"])


def test_train_eval_set_training_recursively_and_to_checks_the_device():
    mlp = kn.nn.MLP([4, 4, 2], dropout=0.5)
    assert all(m.training for m in mlp.modules())
    assert mlp.eval() is mlp and not any(m.training for m in mlp.modules())
    assert mlp.train() is mlp and all(m.training for m in mlp.modules())
    assert mlp.to("cpu") is mlp
    if not kn.cuda.is_available():
        with pytest.raises(kn.DeviceError):
            mlp.to("cuda")
    assert "Linear(in_features=4, out_features=4, bias=True)" in repr(mlp)


# -- Dropout and BatchNorm: train vs eval -------------------------------------------------------


def test_dropout_masks_in_training_graph_and_is_identity_in_eval_graph():
    drop = kn.nn.Dropout(0.25)
    x = kn.placeholder(kn.float32, (4000,), name="x")
    y_train = drop(x)
    drop.eval()
    y_eval = drop(x)
    ones = np.ones(4000, np.float32)
    with kn.Session() as sess:
        first, second, evaluated = sess.run([y_train, y_train, y_eval], {x: ones})
        again = sess.run(y_train, {x: ones})
    assert set(np.unique(first)) == {0.0, np.float32(1 / 0.75)}
    assert abs((first == 0).mean() - 0.25) < 0.03
    np.testing.assert_array_equal(first, second)  # one node: one mask per run
    assert not np.array_equal(first, again)  # a fresh mask on the next run
    np.testing.assert_array_equal(evaluated, ones)


def batch(shape=(8, 3), seed=0):
    rng = np.random.default_rng(seed)
    return (
        rng.normal(size=shape) * np.array([1.0, 2.0, 3.0]).reshape(3, *([1] * (len(shape) - 2)))
        + 5.0
    ).astype(np.float32)


def test_batch_norm_training_uses_batch_statistics_and_updates_only_when_asked():
    bn = kn.nn.BatchNorm1d(3, momentum=0.1)
    x = kn.placeholder(kn.float32, ("batch", 3), name="x")
    y = bn(x)
    data = batch()
    out = run(y, {x: data})
    np.testing.assert_allclose(out.mean(0), 0.0, atol=1e-5)
    np.testing.assert_allclose(out.var(0), 1.0, rtol=1e-3)  # biased batch variance
    # Fetching the output alone leaves the running statistics alone.
    np.testing.assert_array_equal(bn.running_mean.numpy(), np.zeros(3, np.float32))
    np.testing.assert_array_equal(bn.running_var.numpy(), np.ones(3, np.float32))
    # Fetching the module updates applies them once per run (after the outputs).
    out2, none = run([y, kn.nn.updates_for(y)], {x: data})
    assert none is None
    np.testing.assert_array_equal(out2, out)
    want_mean = 0.9 * 0.0 + 0.1 * data.mean(0)
    want_var = 0.9 * 1.0 + 0.1 * data.var(0, ddof=1)  # unbiased, as PyTorch
    np.testing.assert_allclose(bn.running_mean.numpy(), want_mean, rtol=1e-5)
    np.testing.assert_allclose(bn.running_var.numpy(), want_var, rtol=1e-5)
    assert bn.num_batches_tracked.numpy() == 1


def test_batch_norm_statistics_update_with_the_train_op_and_eval_uses_them():
    bn = kn.nn.BatchNorm1d(3)
    fc = kn.nn.Linear(3, 1)
    x = kn.placeholder(kn.float32, ("batch", 3), name="x")
    loss = kn.mean(fc(bn(x)) ** 2)
    train_op = kn.optim.SGD(lr=0.01).minimize(loss)
    trainable = [v.name for v in x.graph.variables if v.trainable]
    assert trainable == ["weight", "bias", "weight_1", "bias_1"]  # buffers are not trained
    data = batch()
    with kn.Session() as sess:
        for _ in range(2):
            sess.run([loss, train_op], {x: data})
    mean, var = data.mean(0), data.var(0, ddof=1)
    np.testing.assert_allclose(bn.running_mean.numpy(), (1 - 0.9**2) * mean, rtol=1e-5)
    np.testing.assert_allclose(bn.running_var.numpy(), 0.81 + (1 - 0.81) * var, rtol=1e-5)
    assert bn.num_batches_tracked.numpy() == 2
    bn.eval()
    y_eval = bn(x)  # the eval graph, in the same kn.Graph: same Variables
    want = (data - bn.running_mean.numpy()) / np.sqrt(bn.running_var.numpy() + 1e-5)
    want = want * bn.weight.numpy() + bn.bias.numpy()
    np.testing.assert_allclose(run(y_eval, {x: data}), want, rtol=1e-4, atol=1e-5)
    assert bn.num_batches_tracked.numpy() == 2


def test_batch_norm_three_dim_input_and_cumulative_average():
    bn = kn.nn.BatchNorm1d(3, momentum=None)
    x = kn.placeholder(kn.float32, ("batch", 3, 5), name="x")
    y = bn(x)
    update = kn.nn.updates_for(y)
    first, second = batch((4, 3, 5), seed=1), batch((4, 3, 5), seed=2)
    with kn.Session() as sess:
        sess.run(update, {x: first})
        sess.run(update, {x: second})
    both = [d.mean((0, 2)) for d in (first, second)]
    np.testing.assert_allclose(bn.running_mean.numpy(), (both[0] + both[1]) / 2, rtol=1e-5)
    unbiased = [d.transpose(1, 0, 2).reshape(3, -1).var(1, ddof=1) for d in (first, second)]
    np.testing.assert_allclose(bn.running_var.numpy(), (unbiased[0] + unbiased[1]) / 2, rtol=1e-5)


def test_batch_norm_on_numpy_inputs_updates_at_once():
    bn = kn.nn.BatchNorm1d(3)
    data = batch()
    bn(data)
    np.testing.assert_allclose(bn.running_mean.numpy(), 0.1 * data.mean(0), rtol=1e-5)
    with pytest.raises(ValueError, match="Expected more than 1 value per channel"):
        bn(data[:1])


# -- initializers ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "initializer, shape, std",
    [
        (kn.init.kaiming_uniform(), (512, 1024), math.sqrt(2 / 1024)),
        (kn.init.he_normal(), (512, 1024), math.sqrt(2 / 1024)),
        (
            kn.init.kaiming_normal(mode="fan_out", nonlinearity="tanh"),
            (512, 256),
            (5 / 3) / math.sqrt(512),
        ),
        (kn.init.kaiming_uniform(a=math.sqrt(5)), (64, 32, 3, 3), 1 / math.sqrt(3 * 32 * 9)),
        (kn.init.xavier_uniform(), (400, 600), math.sqrt(2 / 1000)),
        (kn.init.glorot_normal(gain=2.0), (400, 600), 2 * math.sqrt(2 / 1000)),
        (kn.init.xavier_normal(), (32, 16, 5, 5), math.sqrt(2 / ((32 + 16) * 25))),
        (kn.init.normal(1.0, 0.02), (300, 300), 0.02),
    ],
)
def test_initializer_std_matches_formula(initializer, shape, std):
    values = initializer(shape, kn.float32)
    assert values.shape == shape and values.dtype == np.float32
    assert abs(values.std() - std) < 0.1 * std


def test_linear_init_is_pytorch_bounds_and_initializers_are_seeded():
    fc = kn.nn.Linear(400, 300)
    bound = 1 / math.sqrt(400)
    for p in (fc.weight.numpy(), fc.bias.numpy()):
        assert np.abs(p).max() <= bound
    assert abs(fc.weight.numpy().std() - bound / math.sqrt(3)) < 0.05 * bound
    assert kn.init.fan_in_and_fan_out((16, 3, 5, 5)) == (75, 400)
    kn.manual_seed(7)
    a = kn.init.uniform(-1, 1)((5,), kn.float64)
    kn.manual_seed(7)
    b = kn.init.uniform(-1, 1)((5,), kn.float64)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(kn.init.constant(3.0)((2,), kn.int32), [3, 3])
    w = kn.Variable(kn.init.normal(std=0.01), shape=(784, 10), name="w")
    assert w.type_str() == "f32[784,10]"
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        kn.init.xavier_uniform()((5,), kn.float32)
