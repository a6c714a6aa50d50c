"""RMSprop, Adagrad, param groups and state_dict: the math against NumPy re-implementations
of PyTorch's documented algorithms (torch.optim's docs, written out step by step), eagerly and
in graph mode; state_dict's structure and a round trip that resumes exactly."""

import copy

import numpy as np
import pytest

import kiln as kn

A = np.array([[1.0, 2.0, 0.5], [3.0, 0.1, 1.5]])
C = np.array([[0.5, -1.0, 2.0], [1.0, 0.0, -0.5]])
P0 = np.array([[1.0, 1.0, -1.0], [-2.0, 0.5, 0.3]])
STEPS = 6


def quadratic_grad(p):
    return A * (p - C)


def ref_rmsprop(p, steps, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0,
                centered=False):  # fmt: skip
    """torch.optim.RMSprop's documented algorithm."""
    v, g_ave, b = np.zeros_like(p), np.zeros_like(p), np.zeros_like(p)
    for _ in range(steps):
        g = quadratic_grad(p)
        if weight_decay != 0:
            g = g + weight_decay * p
        v = alpha * v + (1 - alpha) * g * g
        v_hat = v
        if centered:
            g_ave = g_ave * alpha + (1 - alpha) * g
            v_hat = v_hat - g_ave * g_ave
        if momentum > 0:
            b = momentum * b + g / (np.sqrt(v_hat) + eps)
            p = p - lr * b
        else:
            p = p - lr * g / (np.sqrt(v_hat) + eps)
    return p, {"square_avg": v, "grad_avg": g_ave, "momentum_buffer": b}


def ref_adagrad(p, steps, lr=1e-2, lr_decay=0.0, weight_decay=0.0, initial_accumulator_value=0.0,
                eps=1e-10):  # fmt: skip
    """torch.optim.Adagrad's documented algorithm."""
    state_sum = np.full_like(p, initial_accumulator_value)
    for t in range(1, steps + 1):
        g = quadratic_grad(p)
        lr_t = lr / (1 + (t - 1) * lr_decay)
        if weight_decay != 0:
            g = g + weight_decay * p
        state_sum = state_sum + g * g
        p = p - lr_t * g / (np.sqrt(state_sum) + eps)
    return p, {"sum": state_sum}


CASES = [
    ("rmsprop", kn.optim.RMSprop, dict(lr=0.01), ref_rmsprop),
    ("rmsprop-centered", kn.optim.RMSprop, dict(lr=0.01, centered=True, alpha=0.9), ref_rmsprop),
    ("rmsprop-momentum", kn.optim.RMSprop, dict(lr=0.01, momentum=0.9, eps=1e-3), ref_rmsprop),
    ("rmsprop-all", kn.optim.RMSprop,
     dict(lr=0.02, momentum=0.5, centered=True, weight_decay=0.1), ref_rmsprop),
    ("adagrad", kn.optim.Adagrad, dict(lr=0.1), ref_adagrad),
    ("adagrad-decay", kn.optim.Adagrad,
     dict(lr=0.1, lr_decay=0.3, weight_decay=0.2, initial_accumulator_value=0.5), ref_adagrad),
]  # fmt: skip


@pytest.mark.parametrize("name, opt_cls, hyper, ref", CASES, ids=[c[0] for c in CASES])
def test_new_optimizers_match_the_documented_algorithm_eagerly(name, opt_cls, hyper, ref):
    w = kn.tensor(P0.copy(), requires_grad=True)
    opt = opt_cls([w], **hyper)
    a, c = kn.tensor(A), kn.tensor(C)
    for _ in range(STEPS):
        opt.zero_grad()
        ((a * (w - c) ** 2).sum() * 0.5).backward()
        opt.step()
    want_p, want_slots = ref(P0.copy(), STEPS, **hyper)
    np.testing.assert_allclose(w.detach().numpy(), want_p, rtol=1e-12, atol=1e-14)
    for slot in opt.slot_names:
        np.testing.assert_allclose(opt._state[w][slot].numpy(), want_slots[slot], rtol=1e-12,
                                   atol=1e-14)  # fmt: skip


@pytest.mark.parametrize("name, opt_cls, hyper, ref", CASES, ids=[c[0] for c in CASES])
def test_new_optimizers_match_the_documented_algorithm_in_graph_mode(name, opt_cls, hyper, ref):
    w = kn.Variable(P0.copy(), name="w")
    loss = kn.sum(kn.constant(A) * (w - kn.constant(C)) ** 2) * 0.5
    train_op = opt_cls([w], **hyper).minimize(loss)
    with kn.Session() as sess:
        for _ in range(STEPS):
            sess.run(train_op)
    want_p, _ = ref(P0.copy(), STEPS, **hyper)
    np.testing.assert_allclose(w.numpy(), want_p, rtol=1e-12, atol=1e-14)


def _two_group_model():
    kn.manual_seed(0)
    return kn.nn.Sequential(kn.nn.Linear(3, 4), kn.nn.Tanh(), kn.nn.Linear(4, 2))


def _data():
    rng = np.random.default_rng(0)
    return rng.standard_normal((8, 3)).astype(np.float32), rng.standard_normal((8, 2)).astype(
        np.float32
    )


def _groups(model, lr0=0.05, lr1=0.01):
    return [
        {"params": model[0].parameters()},
        {"params": model[2].parameters(), "lr": lr1, "momentum": 0.5},
    ]


def test_param_groups_use_their_own_options():
    """Each group steps with its options: the same as two optimizers, one per group."""
    x, y = _data()
    model = _two_group_model()
    opt = kn.optim.SGD(_groups(model), lr=0.05)
    assert [g["lr"] for g in opt.param_groups] == [0.05, 0.01]
    assert [g["momentum"] for g in opt.param_groups] == [0.0, 0.5]
    ref = _two_group_model()
    ref_opts = [kn.optim.SGD(ref[0].parameters(), lr=0.05),
                kn.optim.SGD(ref[2].parameters(), lr=0.01, momentum=0.5)]  # fmt: skip
    for _ in range(3):
        for m, opts in ((model, [opt]), (ref, ref_opts)):
            for o in opts:
                o.zero_grad()
            kn.mse_loss(m(kn.tensor(x)), kn.tensor(y)).backward()
            for o in opts:
                o.step()
    for a, b in zip(model.parameters(), ref.parameters()):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_param_groups_in_graph_mode_match_eager():
    x, y = _data()
    eager = _two_group_model()
    opt = kn.optim.Adam(_groups(eager), lr=0.05)
    for _ in range(3):
        opt.zero_grad()
        kn.mse_loss(eager(kn.tensor(x)), kn.tensor(y)).backward()
        opt.step()
    graph = _two_group_model()
    with kn.Graph().as_default():
        xp, yp = kn.placeholder(kn.float32, x.shape), kn.placeholder(kn.float32, y.shape)
        train_op = kn.optim.Adam(_groups(graph), lr=0.05).minimize(kn.mse_loss(graph(xp), yp))
        with kn.Session() as sess:
            for _ in range(3):
                sess.run(train_op, {xp: x, yp: y})
    for (name, a), b in zip(eager.named_parameters(), graph.parameters()):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6, atol=1e-7, err_msg=name)


def test_add_param_group_fills_defaults_and_refuses_duplicates():
    a, b = kn.zeros(2, requires_grad=True), kn.zeros(3, requires_grad=True)
    opt = kn.optim.Adam([a], lr=0.1, betas=(0.8, 0.9))
    opt.add_param_group({"params": b, "eps": 1e-3})
    assert opt.param_groups[1]["betas"] == (0.8, 0.9) and opt.param_groups[1]["eps"] == 1e-3
    with pytest.raises(ValueError, match="more than one parameter group"):
        opt.add_param_group({"params": [a]})
    with pytest.raises(TypeError, match="ordered collections"):
        kn.optim.SGD([{"params": {a}}], lr=0.1)  # a group's set (a set of params: taken)


def test_state_dict_has_pytorchs_structure():
    x, y = _data()
    model = _two_group_model()
    opt = kn.optim.Adam(_groups(model), lr=0.05)
    kn.mse_loss(model(kn.tensor(x)), kn.tensor(y)).backward()
    opt.step()
    sd = opt.state_dict()
    assert sorted(sd) == ["param_groups", "state"]
    assert sorted(sd["state"]) == [0, 1, 2, 3]
    assert sorted(sd["state"][2]) == ["exp_avg", "exp_avg_sq", "step"]
    assert sd["state"][2]["step"].item() == 1.0 and sd["state"][2]["step"].dtype == kn.float32
    assert [g["params"] for g in sd["param_groups"]] == [[0, 1], [2, 3]]
    assert sd["param_groups"][1]["lr"] == 0.01 and sd["param_groups"][0]["lr"] == 0.05
    # copies: stepping again does not change a state_dict taken before
    before = sd["state"][0]["exp_avg"].numpy().copy()
    opt.step()
    np.testing.assert_array_equal(sd["state"][0]["exp_avg"].numpy(), before)


@pytest.mark.parametrize(
    "make",
    [
        lambda p: kn.optim.SGD(p, lr=0.05, momentum=0.9, dampening=0.2),
        lambda p: kn.optim.Adam(p, lr=0.05, amsgrad=True),
        lambda p: kn.optim.AdamW(p, lr=0.05),
        lambda p: kn.optim.RMSprop(p, lr=0.01, momentum=0.5, centered=True),
        lambda p: kn.optim.Adagrad(p, lr=0.1, lr_decay=0.1),
    ],
    ids=["sgd", "adam", "adamw", "rmsprop", "adagrad"],
)
def test_load_state_dict_resumes_bit_identically(make):
    """3 steps, state_dict, 3 more (A); a fresh model and optimizer loaded from the state
    after 3 steps, 3 more (B): A == B bit for bit."""
    x, y = _data()

    def train(model, opt, n):
        for _ in range(n):
            opt.zero_grad()
            kn.mse_loss(model(kn.tensor(x)), kn.tensor(y)).backward()
            opt.step()

    model = _two_group_model()
    opt = make(_groups(model))
    train(model, opt, 3)
    # deepcopy: a model's state_dict shares memory with its parameters, as PyTorch's
    model_sd, opt_sd = copy.deepcopy(model.state_dict()), opt.state_dict()
    train(model, opt, 3)
    resumed = _two_group_model()
    resumed.load_state_dict(model_sd)
    opt2 = make(_groups(resumed, lr1=0.123))
    opt2.load_state_dict(opt_sd)
    assert opt2.param_groups[1]["lr"] == 0.01  # options come from the state dict
    train(resumed, opt2, 3)
    for a, b in zip(model.parameters(), resumed.parameters()):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_graph_mode_state_dict_round_trip_resumes_exactly():
    x, y = _data()

    def build(model, opt):
        xp, yp = kn.placeholder(kn.float32, x.shape), kn.placeholder(kn.float32, y.shape)
        return xp, yp, opt.minimize(kn.mse_loss(model(xp), yp))

    model = _two_group_model()
    with kn.Graph().as_default():
        opt = kn.optim.Adam(_groups(model), lr=0.05)
        xp, yp, train_op = build(model, opt)
        with kn.Session() as sess:
            for _ in range(3):
                sess.run(train_op, {xp: x, yp: y})
            model_sd, opt_sd = copy.deepcopy(model.state_dict()), opt.state_dict()
            for _ in range(2):
                sess.run(train_op, {xp: x, yp: y})
    assert opt_sd["state"][0]["step"].item() == 3.0
    resumed = _two_group_model()
    resumed.load_state_dict(model_sd)
    opt2 = kn.optim.Adam(_groups(resumed), lr=0.05)
    opt2.load_state_dict(opt_sd)  # before the graph exists: the slots start from it
    with kn.Graph().as_default():
        xp, yp, train_op = build(resumed, opt2)
        with kn.Session() as sess:
            for _ in range(2):
                sess.run(train_op, {xp: x, yp: y})
    for a, b in zip(model.parameters(), resumed.parameters()):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_load_state_dict_checks_before_changing_anything():
    w = kn.tensor([1.0, 2.0], requires_grad=True)
    opt = kn.optim.SGD([w], lr=0.1, momentum=0.9)
    (w * w).sum().backward()
    opt.step()
    sd = opt.state_dict()
    other = kn.optim.SGD([kn.zeros(3, requires_grad=True)], lr=0.5, momentum=0.9)
    with pytest.raises(ValueError, match="shape"):
        other.load_state_dict(sd)
    assert other.param_groups[0]["lr"] == 0.5 and not other._state
    two = kn.optim.SGD([w, kn.zeros(2, requires_grad=True)], lr=0.1)
    with pytest.raises(ValueError, match="doesn't match the size"):
        two.load_state_dict(sd)


def test_setting_a_group_lr_in_graph_mode_needs_no_recompile():
    w = kn.Variable(np.array([1.0, -2.0]), name="w")
    opt = kn.optim.SGD([w], lr=0.1)
    train = kn.function([], opt.minimize(kn.sum(w * w) * 0.5))  # grad = w
    train()
    compiled = train.program.last
    opt.param_groups[0]["lr"] = 0.5
    train()
    assert train.program.last is compiled
    np.testing.assert_allclose(w.numpy(), np.array([1.0, -2.0]) * 0.9 * 0.5)


def test_momentum_switched_on_after_a_train_op_was_built_warns():
    w = kn.Variable(np.array([1.0]), name="w")
    opt = kn.optim.SGD([w], lr=0.1)  # momentum 0: the train op has no momentum slot
    opt.minimize(kn.sum(w * w))
    with pytest.warns(UserWarning, match="momentum was 0"):
        kn.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=5)


def test_compiled_training_resumes_exactly_from_state_dicts():
    """Under kn.compile the optimizer state lives in the trace's Variables: state_dict reads
    it, and a fresh model, optimizer and scheduler loaded from it continue bit-identically."""
    x, y = (kn.tensor(a) for a in _data())

    def setup():
        model = _two_group_model()
        opt = kn.optim.Adam(_groups(model), lr=0.05)
        sched = kn.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)

        @kn.compile
        def step(xb, yb):
            loss = kn.mse_loss(model(xb), yb)
            opt.minimize(loss)
            return loss

        return model, opt, sched, step

    model, opt, sched, step = setup()
    for _ in range(3):
        step(x, y)
        sched.step()
    saved = copy.deepcopy(model.state_dict()), opt.state_dict(), sched.state_dict()
    assert saved[1]["state"][0]["step"].item() == 3.0
    for _ in range(3):
        step(x, y)
        sched.step()
    model2, opt2, sched2, step2 = setup()
    for obj, state in zip((model2, opt2, sched2), saved):
        obj.load_state_dict(state)
    for _ in range(3):
        step2(x, y)
        sched2.step()
    for a, b in zip(model.parameters(), model2.parameters()):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_load_state_dict_clears_the_state_of_params_it_has_none_for():
    a, b = kn.tensor([1.0], requires_grad=True), kn.tensor([2.0], requires_grad=True)
    opt = kn.optim.Adam([a, b], lr=0.1)
    (a * a).sum().backward()
    opt.step()  # only a has state
    sd = opt.state_dict()
    assert list(sd["state"]) == [0]
    (b * b).sum().backward()
    opt.step()  # now b has state too
    opt.load_state_dict(sd)
    assert b not in opt._state and opt._state[a]["step"] == 1
