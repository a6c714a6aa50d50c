"""PyTorch's training toolkit: Parameters as Tensors (and freezing them), module traversal,
registration and hooks, containers, loss and activation modules, `kn.nn.init`."""

import copy

import numpy as np
import pytest

import kiln as kn

# -- Parameters are Tensors; requires_grad=False freezes --------------------------------------


def test_parameter_is_a_tensor():
    model = kn.nn.Linear(3, 2)
    w = model.weight
    assert isinstance(w, kn.Tensor) and isinstance(w, kn.nn.Parameter)
    assert w.numel() == 6 and w.requires_grad and w.is_leaf and not w.is_cuda
    assert str(w.device) == "cpu"
    assert sum(p.numel() for p in model.parameters()) == 8  # 3*2 weights + 2 biases
    # Tensor ops on a Parameter (numpy's norm of its value is the reference)
    norm = (w * w).sum().sqrt()
    np.testing.assert_allclose(norm.item(), np.linalg.norm(w.value), rtol=1e-6)
    assert norm.requires_grad and (w * 2).grad_fn is not None
    assert repr(w).startswith("Parameter containing:\ntensor(")


def _frozen_weight_step(freeze):
    kn.manual_seed(0)
    model = kn.nn.Linear(2, 1)
    freeze(model.weight)
    w0, b0 = model.weight.numpy(), model.bias.numpy()
    opt = kn.optim.SGD(model.parameters(), lr=0.5)
    model(kn.ones(4, 2)).sum().backward()
    opt.step()
    return model, w0, b0


@pytest.mark.parametrize(
    "freeze",
    [
        lambda p: setattr(p, "requires_grad", False),
        lambda p: p.requires_grad_(False),
    ],
    ids=["attribute", "method"],
)
def test_frozen_parameter_gets_no_grad_and_is_not_trained_eagerly(freeze):
    # Regression: `requires_grad = False` on a parameter was silently ignored and it trained.
    model, w0, b0 = _frozen_weight_step(freeze)
    assert model.weight.grad is None and not model.weight.requires_grad
    np.testing.assert_array_equal(model.weight.numpy(), w0)
    np.testing.assert_allclose(model.bias.numpy(), b0 - 0.5 * 4)  # d(sum)/db = batch of 4


def test_frozen_parameter_is_not_trained_in_graph_mode():
    kn.manual_seed(0)
    with kn.Graph().as_default():
        model = kn.nn.Linear(2, 1)
        model.weight.requires_grad = False
        w0, b0 = model.weight.numpy(), model.bias.numpy()
        x = kn.placeholder(kn.float32, (4, 2), name="x")
        loss = model(x).sum()
        train = kn.optim.SGD(model.parameters(), lr=0.5).minimize(loss)
        trained = [v.name for v in loss.graph.variables if v.trainable]
        with kn.Session() as sess:
            sess.run(train, {x: np.ones((4, 2), np.float32)})
    assert trained == ["bias"]
    np.testing.assert_array_equal(model.weight.numpy(), w0)
    np.testing.assert_allclose(model.bias.numpy(), b0 - 0.5 * 4)


def test_freezing_after_the_graph_is_built_stops_training():
    kn.manual_seed(0)
    with kn.Graph().as_default():
        model = kn.nn.Linear(2, 1)
        x = kn.placeholder(kn.float32, (4, 2), name="x")
        loss = model(x).sum()
        model.requires_grad_(False)
        model.bias.requires_grad_(True)
        train = kn.optim.SGD(lr=0.5).minimize(loss)  # no params: the trainable Variables
        assert [v.name for v in loss.graph.variables if v.trainable] == ["bias"]
        (gw,) = kn.grad(loss, [model.weight.variable(loss.graph)])  # asked for: still works
        w0 = model.weight.numpy()
        with kn.Session() as sess:
            sess.run(train, {x: np.ones((4, 2), np.float32)})
            assert sess.run(gw, {x: np.ones((4, 2), np.float32)}).tolist() == [[4.0, 4.0]]
    np.testing.assert_array_equal(model.weight.numpy(), w0)


def test_frozen_parameter_is_not_differentiated_under_compile():
    kn.manual_seed(0)
    model = kn.nn.Linear(2, 1)
    step = kn.compile(lambda x: model(x).sum())
    step(kn.ones(4, 2)).backward()
    assert model.weight.grad is not None
    model.zero_grad()
    model.weight.requires_grad_(False)
    step(kn.ones(4, 2)).backward()
    assert model.weight.grad is None and model.bias.grad.tolist() == [4.0]


def test_module_requires_grad_freezes_every_parameter():
    model = kn.nn.Sequential(kn.nn.Linear(2, 2), kn.nn.Linear(2, 1))
    model[0].requires_grad_(False)
    assert [p.requires_grad for p in model.parameters()] == [False, False, True, True]
    assert len(list(model.parameters())) == 4  # frozen parameters are still parameters


def test_parameter_tracks_graph_training_and_eager_reads():
    kn.manual_seed(0)
    with kn.Graph().as_default():
        model = kn.nn.Linear(2, 1)
        x = kn.placeholder(kn.float32, (1, 2), name="x")
        train = kn.optim.SGD(model.parameters(), lr=1.0).minimize(model(x).sum())
        sess = kn.Session()
    b0 = model.bias.numpy()
    sess.run(train, {x: np.ones((1, 2), np.float32)})
    assert model.bias.sum().item() == pytest.approx(b0[0] - 1.0)  # an eager read sees it
    sess.run(train, {x: np.ones((1, 2), np.float32)})
    np.testing.assert_allclose(model.bias.numpy(), b0 - 2.0)  # still tracks the graph


def test_deepcopy_of_a_module_copies_parameters():
    model = kn.nn.Linear(2, 2)
    model.weight.requires_grad_(False)
    twin = copy.deepcopy(model)
    assert isinstance(twin.weight, kn.nn.Parameter) and twin.weight is not model.weight
    assert not twin.weight.requires_grad and twin.bias.requires_grad
    np.testing.assert_array_equal(twin.weight.numpy(), model.weight.numpy())
    twin.weight.assign(np.zeros((2, 2), np.float32))
    assert model.weight.numpy().any()


# -- traversal, registration, hooks, modes ---------------------------------------------------


class _Tree(kn.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = kn.nn.Linear(2, 2)
        self.b = kn.nn.Sequential(kn.nn.Linear(2, 2), kn.nn.ReLU())
        self.c = kn.nn.Linear(2, 2, bias=False)
        self.scale = kn.nn.Parameter(kn.ones(1))


def test_named_parameters_in_registration_order_depth_first():
    # PyTorch's order: the module's own parameters, then each child's, depth first.
    names = [n for n, _ in _Tree().named_parameters()]
    assert names == ["scale", "a.weight", "a.bias", "b.0.weight", "b.0.bias", "c.weight"]


def test_named_modules_children_and_apply():
    tree = _Tree()
    assert [n for n, _ in tree.named_modules()] == ["", "a", "b", "b.0", "b.1", "c"]
    assert [n for n, _ in tree.named_children()] == ["a", "b", "c"]
    assert list(tree.children())[1] is tree.b and len(list(tree.modules())) == 6
    assert [n for n, _ in tree.named_parameters(recurse=False)] == ["scale"]

    def zero_linear(m):
        if isinstance(m, kn.nn.Linear):
            kn.nn.init.zeros_(m.weight)

    assert tree.apply(zero_linear) is tree
    assert all(not m.weight.numpy().any() for m in tree.modules() if type(m) is kn.nn.Linear)


def test_shared_module_and_parameter_listed_once():
    shared = kn.nn.Linear(2, 2)
    model = kn.nn.Sequential(shared, shared)
    assert [n for n, _ in model.named_parameters()] == ["0.weight", "0.bias"]
    assert len(list(model.modules())) == 2
    assert len(list(model.named_modules(remove_duplicate=False))) == 3


def test_register_parameter_and_buffers():
    m = kn.nn.Module()
    m.register_parameter("w", kn.nn.Parameter(kn.ones(2)))
    m.register_parameter("absent", None)
    m.register_buffer("count", kn.zeros(1))
    m.register_buffer("scratch", np.ones(3, np.float32), persistent=False)
    assert [n for n, _ in m.named_parameters()] == ["w"] and m.absent is None
    assert [n for n, _ in m.named_buffers()] == ["count", "scratch"]
    assert list(m.state_dict()) == ["w", "count"]  # non-persistent buffers are left out
    assert not m.count.requires_grad and isinstance(m.count, kn.nn.Buffer)
    with pytest.raises(KeyError, match='contain "."'):
        m.register_buffer("a.b", kn.zeros(1))
    with pytest.raises(TypeError, match="kn.nn.Parameter or None required"):
        m.register_parameter("x", kn.zeros(1))
    m.plain = 3
    with pytest.raises(KeyError, match="attribute 'plain' already exists"):
        m.register_buffer("plain", kn.zeros(1))


def test_assigning_a_tensor_to_a_buffer_replaces_it():
    m = kn.nn.Module()
    m.register_buffer("stat", kn.zeros(2), persistent=False)
    m.stat = kn.ones(3)
    assert isinstance(m.stat, kn.nn.Buffer) and m.stat.tolist() == [1.0, 1.0, 1.0]
    assert not m.stat.persistent and list(m.state_dict()) == []
    with pytest.raises(TypeError, match="cannot assign 'str' as buffer 'stat'"):
        m.stat = "x"


def test_state_dict_order_is_parameters_then_buffers_per_module():
    model = kn.nn.Sequential(kn.nn.Linear(2, 2), kn.nn.BatchNorm1d(2))
    assert list(model.state_dict()) == [
        "0.weight", "0.bias", "1.weight", "1.bias",
        "1.running_mean", "1.running_var", "1.num_batches_tracked",
    ]  # fmt: skip


def test_module_zero_grad():
    model = kn.nn.Linear(2, 1)
    model(kn.ones(1, 2)).sum().backward()
    grad = model.bias.grad
    model.zero_grad(set_to_none=False)
    assert model.bias.grad.tolist() == [0.0] and model.bias.grad is grad  # in place, as PyTorch
    model.zero_grad()
    assert model.bias.grad is None


def test_forward_hooks_see_and_replace_inputs_and_outputs():
    model = kn.nn.Sequential(kn.nn.Linear(2, 3), kn.nn.ReLU())
    seen = []
    h1 = model[0].register_forward_hook(lambda m, args, out: seen.append(tuple(out.shape)))
    h2 = model.register_forward_pre_hook(lambda m, args: (args[0] * 0,))
    h3 = model.register_forward_hook(lambda m, args, out: out + 1)
    out = model(kn.ones(4, 2))
    assert seen == [(4, 3)]
    expected = np.maximum(model[0].bias.numpy(), 0) + 1  # a zero input: relu(bias) + 1
    np.testing.assert_allclose(out.detach().numpy(), np.tile(expected, (4, 1)), rtol=1e-6)
    for h in (h1, h2, h3):
        h.remove()
    model(kn.ones(4, 2))
    assert seen == [(4, 3)]


def test_hook_handle_as_context_manager():
    m = kn.nn.Identity()
    with m.register_forward_hook(lambda mod, args, out: out * 3):
        assert m(kn.ones(1)).tolist() == [3.0]
    assert m(kn.ones(1)).tolist() == [1.0]


def test_train_and_eval_recurse_through_children_train():
    calls = []

    class Probe(kn.nn.Module):
        def train(self, mode=True):
            calls.append(mode)
            return super().train(mode)

    model = kn.nn.Sequential(kn.nn.Dropout(), kn.nn.Sequential(Probe()))
    model.eval()
    assert calls == [False] and not any(m.training for m in model.modules())
    model.train()
    assert calls == [False, True] and all(m.training for m in model.modules())
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        model.train("yes")


# -- containers ------------------------------------------------------------------------------


def test_sequential_slicing_gives_a_sequential_keeping_names():
    model = kn.nn.Sequential(kn.nn.Linear(2, 3), kn.nn.ReLU(), kn.nn.Linear(3, 1))
    head = model[1:]
    assert type(head) is kn.nn.Sequential and len(head) == 2 and head[0] is model[1]
    assert [n for n, _ in head.named_parameters()] == ["2.weight", "2.bias"]  # PyTorch's keys
    assert model[-1] is model[2] and [type(m).__name__ for m in model[::2]] == ["Linear"] * 2
    assert head(kn.ones(4, 3)).shape == (4, 1)
    with pytest.raises(IndexError):
        model[3]


def test_sequential_edits_and_mapping_constructor():
    model = kn.nn.Sequential({"fc": kn.nn.Linear(2, 2), "act": kn.nn.ReLU()})
    assert [n for n, _ in model.named_children()] == ["fc", "act"] and model.fc is model[0]
    seq = kn.nn.Sequential(kn.nn.ReLU(), kn.nn.Tanh())
    seq.append(kn.nn.Sigmoid()).insert(0, kn.nn.Identity())
    assert [type(m).__name__ for m in seq] == ["Identity", "ReLU", "Tanh", "Sigmoid"]
    del seq[1]
    assert [n for n, _ in seq.named_children()] == ["0", "1", "2"]  # renumbered, as PyTorch
    seq[0] = kn.nn.ReLU()
    assert type(seq[0]).__name__ == "ReLU"


def test_module_list_registers_its_modules():
    class Tower(kn.nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = kn.nn.ModuleList([kn.nn.Linear(2, 2) for _ in range(2)])
            self.layers.append(kn.nn.Linear(2, 1))

        def forward(self, x):
            for layer in self.layers:
                x = layer(x)
            return x

    tower = Tower()
    assert len(tower.layers) == 3 and len(list(tower.parameters())) == 6
    assert [n for n, _ in tower.named_parameters()][-2:] == ["layers.2.weight", "layers.2.bias"]
    assert type(tower.layers[:2]) is kn.nn.ModuleList and tower.layers[-1] is tower.layers[2]
    assert tower(kn.ones(5, 2)).shape == (5, 1)
    tower.layers.extend([kn.nn.ReLU()])
    tower.layers += [kn.nn.Identity()]
    del tower.layers[0]
    assert [n for n, _ in tower.layers.named_children()] == ["0", "1", "2", "3"]
    with pytest.raises(NotImplementedError):
        tower.layers(kn.ones(1))


def test_module_dict():
    heads = kn.nn.ModuleDict({"a": kn.nn.Linear(2, 1)})
    heads["b"] = kn.nn.Linear(2, 3)
    heads.update([("c", kn.nn.Identity())])
    assert list(heads) == ["a", "b", "c"] and len(heads) == 3 and "b" in heads
    assert [n for n, _ in heads.named_parameters()] == ["a.weight", "a.bias", "b.weight", "b.bias"]
    assert heads.pop("c").__class__ is kn.nn.Identity and list(heads.keys()) == ["a", "b"]
    assert [type(m).__name__ for m in heads.values()] == ["Linear", "Linear"]


def test_identity_in_graph_mode_and_eager():
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (2,), name="x")
        assert kn.nn.Identity(3)(x) is x
    t = kn.ones(2)
    assert kn.nn.Identity()(t) is t


# -- losses ------------------------------------------------------------------------------------


def test_loss_modules_hand_computed():
    x, t = kn.tensor([0.5, -1.0, 3.0]), kn.tensor([0.0, 1.0, 1.0])
    # differences 0.5, -2, 2: squares 0.25, 4, 4; absolutes 0.5, 2, 2
    assert kn.nn.MSELoss()(x, t).item() == pytest.approx(8.25 / 3)
    assert kn.nn.MSELoss(reduction="sum")(x, t).item() == pytest.approx(8.25)
    assert kn.nn.L1Loss(reduction="none")(x, t).tolist() == [0.5, 2.0, 2.0]
    # smooth L1 (beta 1): 0.5 * 0.5**2 = 0.125 below beta, |d| - 0.5 = 1.5 above
    assert kn.nn.SmoothL1Loss(reduction="none")(x, t).tolist() == [0.125, 1.5, 1.5]
    # log-probabilities [[-1, -2], [-3, -4]] at classes [1, 0]: (2 + 3) / 2
    logp = kn.tensor([[-1.0, -2.0], [-3.0, -4.0]])
    assert kn.nn.NLLLoss()(logp, kn.tensor([1, 0])).item() == 2.5
    # weights 1, 3 at classes 1, 0: (1 * 2 + 3 * 3) / (1 + 3)
    weighted = kn.nn.NLLLoss(weight=kn.tensor([3.0, 1.0]))(logp, kn.tensor([1, 0]))
    assert weighted.item() == pytest.approx(11 / 4)
    # equal logits over 4 classes: log(4) whatever the label
    assert kn.nn.CrossEntropyLoss()(kn.zeros(3, 4), kn.tensor([0, 1, 3])).item() == pytest.approx(
        np.log(4)
    )
    # p = 0.5 against 1 and 0: -log(0.5) each
    bce = kn.nn.BCELoss()(kn.tensor([0.5, 0.5]), kn.tensor([1.0, 0.0]))
    assert bce.item() == pytest.approx(np.log(2))
    logits = kn.nn.BCEWithLogitsLoss(reduction="none")(
        kn.tensor([0.0, 1000.0]), kn.tensor([1.0, 0.0])
    )
    assert logits.tolist() == pytest.approx([np.log(2), 1000.0])  # no overflow at 1000


def test_loss_weight_is_a_buffer():
    loss = kn.nn.CrossEntropyLoss(weight=kn.tensor([1.0, 2.0]))
    assert list(loss.state_dict()) == ["weight"] and list(loss.parameters()) == []
    assert "weight" not in kn.nn.MSELoss().state_dict()


def test_loss_errors_follow_torch():
    loss = kn.nn.MSELoss(reduction="avg")  # (PyTorch's modules check it when called)
    with pytest.raises(ValueError, match="not a valid value for reduction"):
        loss(kn.zeros(2), kn.zeros(2))
    with pytest.raises(ValueError, match="must be the same as input size"):
        kn.nn.BCEWithLogitsLoss()(kn.zeros(2, 3), kn.zeros(3))
    with pytest.raises(ValueError, match="expected target of size"):
        kn.nn.CrossEntropyLoss()(kn.zeros(2, 3), kn.tensor([0, 1, 2]))
    with pytest.warns(UserWarning, match="size_average and reduce"):
        assert kn.nn.L1Loss(size_average=False).reduction == "sum"  # PyTorch's mapping


def test_cross_entropy_ignore_index_and_classes_on_dim_1():
    logits = kn.tensor(np.arange(12, dtype=np.float32).reshape(1, 3, 4))  # (N, C, d)
    labels = kn.tensor([[0, 2, -100, 1]])
    per = kn.nn.CrossEntropyLoss(reduction="none")(logits, labels)
    assert per.shape == (1, 4) and per.tolist()[0][2] == 0.0  # ignored: no loss
    # classes on dim 1: at position j the logits are (j, 4 + j, 8 + j), so log-softmax is the
    # same for every j: -log(1 + e**-4 + e**-8) - (8 - 4 * class)
    base = np.log(1 + np.exp(-4) + np.exp(-8))
    assert per.tolist()[0][:2] == pytest.approx([base + 8, base], rel=1e-5)  # float32
    mean = kn.nn.CrossEntropyLoss()(logits, labels).item()
    assert mean == pytest.approx((2 * base + 8 + base + 4) / 3, rel=1e-5)  # over the 3 kept labels


def test_losses_train_in_graph_mode_and_under_compile():
    kn.manual_seed(0)
    model, criterion = kn.nn.Linear(3, 2), kn.nn.CrossEntropyLoss(label_smoothing=0.1)
    x = np.random.default_rng(0).standard_normal((8, 3)).astype(np.float32)
    y = np.array([0, 1] * 4)
    eager = criterion(model(kn.tensor(x)), kn.tensor(y)).item()
    compiled = kn.compile(lambda a, b: criterion(model(a), b))(kn.tensor(x), kn.tensor(y))
    assert compiled.item() == pytest.approx(eager, rel=1e-6)
    with kn.Graph().as_default():
        xs = kn.placeholder(kn.float32, (8, 3), name="x")
        loss = criterion(model(xs), kn.constant(y))
        train = kn.optim.SGD(model.parameters(), lr=0.5).minimize(loss)
        with kn.Session() as sess:
            first = sess.run(loss, {xs: x})
            for _ in range(5):
                sess.run(train, {xs: x})
            last = sess.run(loss, {xs: x})
    assert first == pytest.approx(eager, rel=1e-6) and last < first


# -- activations -------------------------------------------------------------------------------


def test_activation_modules_hand_computed():
    x = kn.tensor([-2.0, 0.0, 1.0])
    y = x.clone()
    assert kn.nn.ReLU(inplace=True)(y) is y and y.tolist() == [0.0, 0.0, 1.0]  # as PyTorch's
    assert kn.nn.LeakyReLU(0.5)(x).tolist() == [-1.0, 0.0, 1.0]
    assert kn.nn.ELU(2.0)(x).tolist() == pytest.approx([2 * (np.exp(-2) - 1), 0.0, 1.0])
    assert kn.nn.SiLU()(x).tolist() == pytest.approx(
        [-2 / (1 + np.exp(2)), 0.0, 1 / (1 + np.exp(-1))]
    )
    assert kn.nn.Softmax(dim=0)(x).sum().item() == pytest.approx(1.0)
    assert kn.nn.LogSoftmax(dim=0)(x).exp().sum().item() == pytest.approx(1.0)
    assert kn.nn.Softplus(beta=1.0, threshold=0.5)(x).tolist()[2] == 1.0  # linear past threshold
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax"):
        y = kn.nn.Softmax()(kn.zeros(2, 4))  # 2-D: PyTorch's implicit dim is 1
    assert y.tolist() == [[0.25] * 4] * 2
    assert kn.nn.Flatten()(kn.zeros(2, 3, 4)).shape == (2, 12)


def test_activation_modules_in_graph_mode():
    with kn.Graph().as_default():
        xs = kn.placeholder(kn.float32, (3,), name="x")
        outs = [m(xs) for m in (kn.nn.SiLU(), kn.nn.ELU(), kn.nn.LeakyReLU(0.1), kn.nn.Softmax(0))]
        got = kn.function([xs], outs)(np.array([-1.0, 0.0, 2.0], np.float32))
    assert got[2].tolist() == pytest.approx([-0.1, 0.0, 2.0])
    assert got[3].sum() == pytest.approx(1.0)


# -- kn.nn.init --------------------------------------------------------------------------------


def test_init_fans_and_gains():
    # PyTorch's rule: fan_in = in * receptive field, fan_out = out * receptive field
    assert kn.nn.init._calculate_fan_in_and_fan_out(kn.zeros(8, 4, 3, 3)) == (36, 72)
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        kn.nn.init.xavier_uniform_(kn.zeros(3))
    assert kn.nn.init.calculate_gain("leaky_relu", 0.0) == pytest.approx(np.sqrt(2))
    with pytest.raises(ValueError, match="Mode fan_avg not supported"):
        kn.nn.init.kaiming_normal_(kn.zeros(2, 2), mode="fan_avg")


def test_init_fills_parameters_in_place_and_is_seeded():
    layer = kn.nn.Linear(300, 200)
    w = layer.weight
    kn.manual_seed(1)
    assert kn.nn.init.kaiming_uniform_(w, nonlinearity="relu") is w
    bound = np.sqrt(2) * np.sqrt(3 / 300)  # gain sqrt(2), fan_in 300
    values = w.numpy()
    assert values.max() <= bound and values.max() > 0.95 * bound and values.min() >= -bound
    assert w.requires_grad and w.grad is None and w.is_leaf  # no history recorded
    kn.manual_seed(1)
    again = kn.nn.init.kaiming_uniform_(kn.zeros(200, 300), nonlinearity="relu")
    np.testing.assert_array_equal(again.numpy(), values)
    kn.nn.init.constant_(layer.bias, 0.25)
    assert set(layer.bias.numpy().tolist()) == {0.25}
    assert kn.nn.init.ones_(kn.zeros(2)).tolist() == [1.0, 1.0]


def test_init_reaches_graph_variables():
    with kn.Graph().as_default():
        layer = kn.nn.Linear(2, 2)
        xs = kn.placeholder(kn.float32, (1, 2), name="x")
        f = kn.function([xs], layer(xs))
        kn.nn.init.eye_(layer.weight)
        kn.nn.init.zeros_(layer.bias)
        assert f(np.array([[3.0, 4.0]], np.float32)).tolist() == [[3.0, 4.0]]


def test_orthogonal_init():
    w = kn.nn.init.orthogonal_(kn.zeros(5, 3), gain=3.0).numpy()
    np.testing.assert_allclose(w.T @ w, 9 * np.eye(3), atol=1e-5)  # columns orthogonal, norm 3


# -- kn.nn.utils -------------------------------------------------------------------------------


def test_clip_grad_norm_scales_all_grads_jointly():
    model = kn.nn.Linear(2, 1)
    model.weight.requires_grad_(False)  # no grad: left out
    model(kn.ones(9, 2)).sum().backward()  # bias grad 9
    total = kn.nn.utils.clip_grad_norm_(model.parameters(), max_norm=3.0)
    assert total.item() == 9.0 and model.bias.grad.item() == pytest.approx(3.0, rel=1e-6)
    a, b = kn.tensor([1.0], requires_grad=True), kn.tensor([1.0], requires_grad=True)
    (3 * a + 4 * b).backward()  # grads 3 and 4: joint 2-norm 5, max-norm 4
    assert kn.nn.utils.clip_grad_norm_([a, b], 10.0).item() == pytest.approx(5.0)
    assert a.grad.item() == 3.0  # under max_norm: unchanged
    assert kn.nn.utils.clip_grad_norm_([a, b], 2.0, norm_type="inf").item() == 4.0
    assert [a.grad.item(), b.grad.item()] == pytest.approx([1.5, 2.0], rel=1e-5)
    b.grad = kn.tensor([float("inf")])
    with pytest.raises(RuntimeError, match="non-finite"):
        kn.nn.utils.clip_grad_norm_([a, b], 1.0, error_if_nonfinite=True)


def test_clip_grad_value():
    w = kn.tensor([1.0, -2.0, 0.5], requires_grad=True)
    (w * kn.tensor([4.0, -4.0, 0.25])).sum().backward()
    kn.nn.utils.clip_grad_value_(w, 1.0)
    assert w.grad.tolist() == [1.0, -1.0, 0.25]
