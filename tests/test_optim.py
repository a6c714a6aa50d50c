"""Optimizers: the update math against NumPy re-implementations of PyTorch's algorithms, graph-mode
training with `minimize`, and all-or-nothing train steps."""

import numpy as np
import pytest

import kiln as kn

# -- NumPy references: torch.optim's single-tensor algorithms, written out step by step ------


def ref_sgd(p, grad_fn, steps, lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False):
    buf = None
    for _ in range(steps):
        d_p = grad_fn(p)
        if weight_decay != 0:
            d_p = d_p + weight_decay * p
        if momentum != 0:
            buf = d_p.copy() if buf is None else momentum * buf + (1 - dampening) * d_p
            d_p = d_p + momentum * buf if nesterov else buf
        p = p - lr * d_p
    return p, {"momentum": buf}


def ref_adam(
    p,
    grad_fn,
    steps,
    lr=1e-3,
    betas=(0.9, 0.999),
    eps=1e-8,
    weight_decay=0.0,
    amsgrad=False,
    decoupled=False,
):
    beta1, beta2 = betas
    m, v, v_max = np.zeros_like(p), np.zeros_like(p), np.zeros_like(p)
    for step in range(1, steps + 1):
        grad = grad_fn(p)
        if decoupled:
            p = p * (1 - lr * weight_decay)
        elif weight_decay != 0:
            grad = grad + weight_decay * p
        m = beta1 * m + (1 - beta1) * grad
        v = beta2 * v + (1 - beta2) * grad * grad
        bias_correction1 = 1 - beta1**step
        bias_correction2_sqrt = np.sqrt(1 - beta2**step)
        if amsgrad:
            v_max = np.maximum(v_max, v)
            denom = np.sqrt(v_max) / bias_correction2_sqrt + eps
        else:
            denom = np.sqrt(v) / bias_correction2_sqrt + eps
        p = p - (lr / bias_correction1) * m / denom
    return p, {"exp_avg": m, "exp_avg_sq": v, "max_exp_avg_sq": v_max}


A = np.array([[1.0, 2.0, 0.5], [3.0, 0.1, 1.5]])
C = np.array([[0.5, -1.0, 2.0], [1.0, 0.0, -0.5]])
P0 = np.array([[1.0, 1.0, -1.0], [-2.0, 0.5, 0.3]])


def quadratic_grad(p):
    return A * (p - C)


CASES = [
    ("sgd", kn.optim.SGD, dict(lr=0.1), ref_sgd),
    ("sgd-momentum", kn.optim.SGD, dict(lr=0.1, momentum=0.9), ref_sgd),
    ("sgd-dampening", kn.optim.SGD, dict(lr=0.1, momentum=0.9, dampening=0.5), ref_sgd),
    ("sgd-nesterov", kn.optim.SGD, dict(lr=0.05, momentum=0.8, nesterov=True), ref_sgd),
    ("sgd-weight-decay", kn.optim.SGD, dict(lr=0.1, momentum=0.5, weight_decay=0.1), ref_sgd),
    ("adam", kn.optim.Adam, dict(lr=0.1), ref_adam),
    ("adam-betas-eps", kn.optim.Adam, dict(lr=0.05, betas=(0.8, 0.9), eps=1e-3), ref_adam),
    ("adam-weight-decay", kn.optim.Adam, dict(lr=0.1, weight_decay=0.3), ref_adam),
    ("adam-amsgrad", kn.optim.Adam, dict(lr=0.1, amsgrad=True), ref_adam),
    ("adamw", kn.optim.AdamW, dict(lr=0.1), ref_adam),
    ("adamw-weight-decay", kn.optim.AdamW, dict(lr=0.1, weight_decay=0.3), ref_adam),
    ("adamw-amsgrad", kn.optim.AdamW, dict(lr=0.1, weight_decay=0.1, amsgrad=True), ref_adam),
]
STEPS = 6


def reference(opt_cls, hyper, ref):
    hyper = dict(hyper)
    if opt_cls is kn.optim.AdamW:
        hyper.setdefault("weight_decay", 1e-2)
        hyper["decoupled"] = True
    return ref(P0.copy(), quadratic_grad, STEPS, **hyper)


@pytest.mark.parametrize("name, opt_cls, hyper, ref", CASES, ids=[c[0] for c in CASES])
def test_optimizer_graph_steps_match_pytorch_reference(name, opt_cls, hyper, ref):
    w = kn.Variable(P0.copy(), name="w")
    loss = kn.sum(kn.constant(A) * (w - kn.constant(C)) ** 2) * 0.5
    opt = opt_cls([w], **hyper)
    train_op = opt.minimize(loss)
    with kn.Session() as sess:
        for _ in range(STEPS):
            assert sess.run(train_op) is None
    want_p, want_slots = reference(opt_cls, hyper, ref)
    np.testing.assert_allclose(w.numpy(), want_p, rtol=1e-12, atol=1e-14)
    state = opt._state[w]
    assert state["step"].numpy() == STEPS
    for slot in opt.slot_names:
        np.testing.assert_allclose(state[slot].numpy(), want_slots[slot], rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name, opt_cls, hyper, ref", CASES, ids=[c[0] for c in CASES])
def test_optimizer_update_runs_eagerly_on_arrays(name, opt_cls, hyper, ref):
    """The same `_update` computes values at once when given arrays instead of Symbols."""
    opt = opt_cls(**hyper)
    p = P0.copy()
    slots = {k: np.zeros_like(p) for k in opt.slot_names}
    for step in range(1, STEPS + 1):
        p, new_slots = opt._update(p, quadratic_grad(p), slots, np.int64(step))
        slots.update(new_slots)
    want_p, want_slots = reference(opt_cls, hyper, ref)
    np.testing.assert_allclose(p, want_p, rtol=1e-12, atol=1e-14)
    for slot in opt.slot_names:
        np.testing.assert_allclose(slots[slot], want_slots[slot], rtol=1e-12, atol=1e-14)


def test_adam_keeps_float32_parameters_and_slots_float32():
    w = kn.Variable(P0.astype(np.float32), name="w")
    loss = kn.sum(kn.constant(A.astype(np.float32)) * (w - kn.constant(C.astype(np.float32))) ** 2)
    opt = kn.optim.Adam(lr=0.1)
    train_op = opt.minimize(loss * 0.5)
    with kn.Session() as sess:
        for _ in range(STEPS):
            sess.run(train_op)
    assert w.numpy().dtype == np.float32
    assert all(opt._state[w][s].numpy().dtype == np.float32 for s in opt.slot_names)
    want, _ = ref_adam(P0.copy(), quadratic_grad, STEPS, lr=0.1)
    np.testing.assert_allclose(w.numpy(), want, rtol=1e-5, atol=1e-6)


def test_learning_rate_variable_schedules_the_step_size():
    w = kn.Variable(np.array([1.0, -2.0]), name="w")
    lr = kn.Variable(np.float64(0.1), name="lr", trainable=False)
    train_op = kn.optim.SGD([w], lr=lr).minimize(kn.sum(w * w) * 0.5)  # grad = w
    with kn.Session() as sess:
        sess.run(train_op)
        lr.assign(0.5)
        sess.run(train_op)
    np.testing.assert_allclose(w.numpy(), np.array([1.0, -2.0]) * 0.9 * 0.5)


def test_minimize_fetch_returns_none_and_outputs_see_the_old_values():
    w = kn.Variable(np.float64(3.0), name="w")
    loss = w * w
    train_op = kn.optim.SGD(lr=0.25).minimize(loss)
    with kn.Session() as sess:
        loss_v, none = sess.run([loss, train_op])
        assert none is None and loss_v == 9.0  # computed before the update
        assert sess.run(loss) == 1.5**2


def test_compute_and_apply_gradients_equal_minimize():
    def build():
        w = kn.Variable(P0.copy(), name="w")
        return w, kn.sum(kn.constant(A) * (w - kn.constant(C)) ** 2) * 0.5

    w1, loss1 = build()
    opt1 = kn.optim.Adam(lr=0.1)
    grads_and_vars = opt1.compute_gradients(loss1)
    assert [v for _, v in grads_and_vars] == [w1]
    op1 = opt1.apply_gradients(grads_and_vars)
    w2, loss2 = build()
    op2 = kn.optim.Adam(lr=0.1).minimize(loss2)
    with kn.Session() as sess:
        for _ in range(3):
            sess.run([op1, op2])
    np.testing.assert_array_equal(w1.numpy(), w2.numpy())


def test_minimize_picks_the_trainable_variables_the_loss_uses():
    used = kn.Variable(np.float32(1.0), name="used")
    frozen = kn.Variable(np.float32(2.0), name="frozen", trainable=False)
    kn.Variable(np.float32(3.0), name="unused")
    opt = kn.optim.SGD(lr=0.1)
    pairs = opt.compute_gradients(used * frozen)
    assert [v.name for _, v in pairs] == ["used"]


def test_minimize_without_trainable_variables_raises():
    frozen = kn.Variable(np.float32(2.0), name="frozen", trainable=False)
    with pytest.raises(kn.GraphError, match="depends on no trainable Variable"):
        kn.optim.SGD(lr=0.1).minimize(frozen * frozen)
    other = kn.nn.Linear(2, 2)  # never called in this graph: its Parameters have no Variables
    with pytest.raises(kn.GraphError, match="depends on none of the given parameters"):
        kn.optim.SGD(other.parameters(), lr=0.1).minimize(frozen * frozen)


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: kn.optim.SGD(lr=-1), "Invalid learning rate: -1"),
        (lambda: kn.optim.SGD(lr=0.1, momentum=-0.5), "Invalid momentum value: -0.5"),
        (lambda: kn.optim.SGD(lr=0.1, weight_decay=-1.0), "Invalid weight_decay value: -1.0"),
        (lambda: kn.optim.SGD(lr=0.1, nesterov=True), "Nesterov momentum requires a momentum"),
        (lambda: kn.optim.Adam(lr=-0.01), "Invalid learning rate: -0.01"),
        (lambda: kn.optim.Adam(eps=-1e-8), "Invalid epsilon value: -1e-08"),
        (lambda: kn.optim.Adam(betas=(1.0, 0.999)), "Invalid beta parameter at index 0: 1.0"),
        (lambda: kn.optim.AdamW(betas=(0.9, -0.1)), "Invalid beta parameter at index 1: -0.1"),
        (lambda: kn.optim.AdamW(weight_decay=-0.1), "Invalid weight_decay value: -0.1"),
        (lambda: kn.optim.Adam([]), "empty parameter list"),
    ],
)
def test_optimizer_hyperparameters_are_validated_like_pytorch(make, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        make()


# -- TF1-style training -----------------------------------------------------------------------


class TwoLayer(kn.nn.Module):
    def __init__(self, n_in, n_hidden, n_out):
        super().__init__()
        self.fc1 = kn.nn.Linear(n_in, n_hidden)
        self.fc2 = kn.nn.Linear(n_hidden, n_out)

    def forward(self, x):
        return self.fc2(kn.relu(self.fc1(x)))


def blobs(n=120, seed=0):
    rng = np.random.default_rng(seed)
    centers = np.array([[2.0, 0.0, 0.0, 1.0], [-2.0, 1.0, 0.0, -1.0], [0.0, -2.0, 2.0, 0.0]])
    labels = rng.integers(0, 3, n)
    return (centers[labels] + 0.5 * rng.normal(size=(n, 4))).astype(np.float32), labels


def build_training(opt=None):
    x = kn.placeholder(kn.float32, ("batch", 4), name="x")
    labels = kn.placeholder(kn.int64, ("batch",), name="labels")
    model = TwoLayer(4, 16, 3)
    loss = kn.cross_entropy(model(x), labels)
    train_op = (opt or kn.optim.AdamW(lr=0.05)).minimize(loss)
    return x, labels, model, loss, train_op


def test_tf1_style_training_with_adamw_reduces_the_loss():
    x, labels, model, loss, train_op = build_training()
    names = [v.name for v in loss.graph.variables if v.trainable]
    assert names == ["fc1/weight", "fc1/bias", "fc2/weight", "fc2/bias"]
    data, target = blobs()
    with kn.Session() as sess:
        losses = [sess.run([loss, train_op], {x: data, labels: target})[0] for _ in range(60)]
    assert losses[-1] < losses[0] / 5, losses
    # The module's state is the trained Variables' state.
    np.testing.assert_array_equal(model.state_dict()["fc1.weight"], model.fc1.weight.numpy())


def test_train_op_with_model_parameters_updates_exactly_those():
    x = kn.placeholder(kn.float32, ("batch", 4), name="x")
    labels = kn.placeholder(kn.int64, ("batch",), name="labels")
    model = TwoLayer(4, 8, 3)
    loss = kn.cross_entropy(model(x), labels)
    opt = kn.optim.SGD(model.fc2.parameters(), lr=0.5)
    train_op = opt.minimize(loss)
    before = {k: v.clone() for k, v in model.state_dict().items()}  # shared memory otherwise
    data, target = blobs(30)
    with kn.Session() as sess:
        sess.run(train_op, {x: data, labels: target})
    after = model.state_dict()
    np.testing.assert_array_equal(after["fc1.weight"], before["fc1.weight"])
    assert not np.array_equal(after["fc2.weight"], before["fc2.weight"])


@pytest.mark.parametrize("bad", ["shape", "dtype", "label-out-of-range", "label-negative"])
def test_a_failing_train_step_changes_no_variable(bad):
    x, labels, model, loss, train_op = build_training()
    data, target = blobs(40)
    with kn.Session() as sess:
        for _ in range(3):
            sess.run([loss, train_op], {x: data, labels: target})
        variables = loss.graph.variables
        assert any(v.name.endswith("/step") for v in variables)
        assert any(v.name.endswith("adamw_exp_avg") for v in variables)
        snapshot = {v.name: v.numpy() for v in variables}
        feed = {x: data, labels: target}
        if bad == "shape":
            feed[x] = data[:, :3]
        elif bad == "dtype":
            feed[labels] = target.astype(np.float64)
        elif bad == "label-out-of-range":
            feed[labels] = np.where(np.arange(len(target)) == 7, 99, target)
        else:  # regression: -1 wrapped to the last class and the step went through
            feed[labels] = np.where(np.arange(len(target)) == 7, -1, target)
        with pytest.raises(kn.KilnError):
            sess.run([loss, train_op], feed)
    for v in variables:
        np.testing.assert_array_equal(v.numpy(), snapshot[v.name], err_msg=v.name)
