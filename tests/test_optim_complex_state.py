"""Optimizer state of a complex parameter in PyTorch's layout: `opt.state[p]` and
`opt.state_dict()` hold complex slots of the parameter's shape and dtype (scalar slots and
the step count real), while the update runs on the parameter's pairs of reals; and
`load_state_dict` takes that layout back, eagerly and for graph-mode (minimize) state.

Expected values: PyTorch 2.13's optimizers (the reference) run on the same parameter and
gradients for a few steps: parameter values, each state slot's values, dtype and shape."""

import numpy as np
import pytest

import kiln as kn

RNG = np.random.default_rng(5)
P0 = (RNG.standard_normal((2, 3)) + 1j * RNG.standard_normal((2, 3))).astype(np.complex64)
GRADS = [(RNG.standard_normal((2, 3)) + 1j * RNG.standard_normal((2, 3))).astype(np.complex64)
         for _ in range(4)]  # fmt: skip

CASES = {
    "Adam": dict(lr=0.1),
    "Adam-amsgrad": dict(lr=0.1, amsgrad=True),
    "AdamW": dict(lr=0.1, weight_decay=0.1),
    "SGD": dict(lr=0.1, momentum=0.9, nesterov=True),
    "RMSprop": dict(lr=0.01, momentum=0.5, centered=True),
    "Adagrad": dict(lr=0.1, initial_accumulator_value=0.1),
    "NAdam": dict(lr=0.1),  # and a scalar slot, mu_product
    "ASGD": dict(lr=0.1),  # scalar slots eta and mu
    "Adamax": dict(lr=0.1),
    "Adadelta": dict(lr=0.5),
    "RAdam": dict(lr=0.1),
    "Rprop": dict(lr=0.1),
}


def _run(lib, name, steps, dtype=np.complex64):
    p = lib.tensor(P0.astype(dtype), requires_grad=True)
    opt = getattr(lib.optim, name.split("-")[0])([p], **CASES[name])
    for g in GRADS[:steps]:
        p.grad = lib.tensor(g.astype(dtype))
        opt.step()
    return p, opt


def _same_state(got: dict, want: dict, tol, ordered=True):
    assert list(got) == list(want) if ordered else sorted(got) == sorted(want)
    for k, w in want.items():
        g = got[k]
        g = np.asarray(g.numpy() if hasattr(g, "numpy") else g)
        w = np.asarray(w.numpy() if hasattr(w, "numpy") else w)
        if k != "step":
            assert (g.shape, g.dtype) == (w.shape, w.dtype), k
        np.testing.assert_allclose(g, w, **tol, err_msg=k)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("name", CASES)
def test_state_and_values_match_pytorch(name, dtype):
    torch = pytest.importorskip("torch")
    tol = dict(rtol=2e-5, atol=2e-6) if dtype == np.complex64 else dict(rtol=1e-12, atol=1e-13)
    p, opt = _run(kn, name, 3, dtype)
    tp, topt = _run(torch, name, 3, dtype)
    np.testing.assert_allclose(p.detach().numpy(), tp.detach().numpy(), **tol)
    want = {k: v for k, v in topt.state[tp].items() if k != "step"}
    names = opt.torch_slot_names  # kiln's state names SGD's buffer "momentum"
    state = {names.get(k, k): v for k, v in opt.state[p].items() if k != "step"}
    _same_state(state, want, tol, ordered=False)  # state_dict's order is checked below
    _same_state(opt.state_dict()["state"][0], topt.state_dict()["state"][0], tol)


@pytest.mark.parametrize("name", ["Adam", "SGD", "RMSprop", "NAdam"])
def test_torch_state_dict_loads_and_the_steps_go_on_as_pytorch(name):
    """A state_dict saved by PyTorch (complex slots) loads into kiln; the next eager steps
    give PyTorch's values and state."""
    torch = pytest.importorskip("torch")
    tol = dict(rtol=2e-5, atol=2e-6)
    tp, topt = _run(torch, name, 2)
    saved = {
        "state": {0: {k: kn.tensor(v.numpy()) for k, v in topt.state_dict()["state"][0].items()}},
        "param_groups": topt.state_dict()["param_groups"],
    }
    p = kn.tensor(tp.detach().numpy(), requires_grad=True)
    opt = getattr(kn.optim, name)([p], **CASES[name])
    opt.load_state_dict(saved)
    for g in GRADS[2:]:
        p.grad, tp.grad = kn.tensor(g), torch.tensor(g)
        opt.step()
        topt.step()
    np.testing.assert_allclose(p.detach().numpy(), tp.detach().numpy(), **tol)
    _same_state(opt.state_dict()["state"][0], topt.state_dict()["state"][0], tol)


def test_graph_mode_state_dict_has_pytorch_layout_and_loads_back():
    """minimize() on a complex Variable: its slots are saved complex (as the eager ones), and
    loading them into another optimizer's graph state gives the same next step. Expected
    values: the eager Adam steps on the same gradients."""
    target = kn.tensor(GRADS[0])  # loss |p - target|²: gradient 2 (p - target) (conj. Wirtinger)
    eager_p, eager = _run(kn, "Adam", 0)
    with kn.Graph().as_default() as g:
        p = kn.Variable(P0, name="p")
        loss = (kn.abs(p - kn.constant(GRADS[0])) ** 2).sum()
        opt = kn.optim.Adam([p], lr=0.1)
        train = opt.minimize(loss)
    with kn.Session(graph=g) as sess:
        for _ in range(2):
            eager_p.grad = 2 * (eager_p.detach() - target)
            eager.step()
            sess.run(train)
        np.testing.assert_allclose(sess.run(p), eager_p.detach().numpy(), rtol=1e-5, atol=1e-6)
        sd = opt.state_dict()
    _same_state(sd["state"][0], eager.state_dict()["state"][0], dict(rtol=1e-5, atol=1e-6))
    assert sd["state"][0]["exp_avg"].dtype == kn.complex64
    with kn.Graph().as_default() as g2:
        q = kn.Variable(eager_p.detach().numpy(), name="q")
        loss = (kn.abs(q - kn.constant(GRADS[0])) ** 2).sum()
        opt2 = kn.optim.Adam([q], lr=0.1)
        train = opt2.minimize(loss)
        opt2.load_state_dict(eager.state_dict())
    with kn.Session(graph=g2) as sess:
        sess.run(train)
        eager_p.grad = 2 * (eager_p.detach() - target)
        eager.step()
        np.testing.assert_allclose(sess.run(q), eager_p.detach().numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["Adam", "RMSprop"])
def test_compiled_steps_match_pytorch_and_save_its_layout(name):
    """A kn.compile'd training step on a complex Parameter (graph state: pairs of reals)
    gives PyTorch's values, and state_dict() its complex slots; an eager step after loading
    that state_dict goes on as PyTorch's."""
    torch = pytest.importorskip("torch")
    tol = dict(rtol=2e-5, atol=2e-6)

    def make(lib):
        holder = lib.nn.Module()  # kn.compile reads a parameter through its module
        holder.p = lib.nn.Parameter(lib.tensor(P0))
        return holder, getattr(lib.optim, name)([holder.p], **CASES[name])

    def step(holder, opt, target):
        opt.zero_grad()
        loss = ((holder.p - target).abs() ** 2).sum()
        loss.backward()
        opt.step()
        return loss

    m, opt = make(kn)
    tm, topt = make(torch)
    compiled = kn.compile(lambda target: step(m, opt, target))
    for g in GRADS[:3]:
        compiled(kn.tensor(g))
        step(tm, topt, torch.tensor(g))
    np.testing.assert_allclose(m.p.detach().numpy(), tm.p.detach().numpy(), **tol)
    saved = opt.state_dict()
    _same_state(saved["state"][0], topt.state_dict()["state"][0], tol)
    q, eager = make(kn)
    with kn.no_grad():
        q.p.copy_(m.p.detach())
    eager.load_state_dict(saved)
    step(q, eager, kn.tensor(GRADS[3]))
    step(tm, topt, torch.tensor(GRADS[3]))
    np.testing.assert_allclose(q.p.detach().numpy(), tm.p.detach().numpy(), **tol)
    _same_state(eager.state_dict()["state"][0], topt.state_dict()["state"][0], tol)


def test_adagrad_state_before_any_step_is_pytorchs():
    """PyTorch's Adagrad makes its state at construction: a complex parameter's sum starts
    at the initial value in both parts."""
    torch = pytest.importorskip("torch")
    for dtype in (np.complex64, np.complex128):
        p = kn.tensor(P0.astype(dtype), requires_grad=True)
        tp = torch.tensor(P0.astype(dtype), requires_grad=True)
        got = kn.optim.Adagrad([p], initial_accumulator_value=0.25).state_dict()["state"][0]
        want = torch.optim.Adagrad([tp], initial_accumulator_value=0.25).state_dict()["state"][0]
        _same_state(got, want, dict(rtol=0, atol=0))


def test_slots_saved_as_pairs_of_reals_still_load():
    """kiln's earlier layout (a complex parameter's slot as pairs of reals, last dim 2) loads
    as the complex values it holds. Expected values: the pairs built here by hand."""
    p = kn.tensor(P0, requires_grad=True)
    opt = kn.optim.SGD([p], lr=0.1, momentum=0.9)
    pairs = np.stack([GRADS[0].real, GRADS[0].imag], -1)
    groups = opt.state_dict()["param_groups"]
    opt.load_state_dict(
        {"state": {0: {"momentum_buffer": kn.tensor(pairs)}}, "param_groups": groups}
    )
    buf = opt.state[p]["momentum_buffer"].numpy()
    assert buf.dtype == np.complex64 and buf.shape == (2, 3)
    np.testing.assert_array_equal(buf, GRADS[0])
