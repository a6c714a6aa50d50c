"""NAdam, ASGD, Rprop, Adafactor, Muon and SparseAdam against PyTorch 2.13 (skipped without
torch): the same weights and state_dicts (keys in torch's order, dtypes, values) after the
same steps, eagerly, under kn.compile and in graph mode; state_dicts moved between the two
libraries and through kn.save/kn.load resume the same trajectory. Every expected value is
torch's, on the same data."""

import numpy as np
import pytest

import kiln as kn

torch = pytest.importorskip("torch")

rng = np.random.default_rng(0)
X = rng.standard_normal((6, 4))
Y = rng.standard_normal((6, 3))
W = rng.standard_normal((3, 4))
W2 = rng.standard_normal((3, 3))

CASES = [
    ("NAdam", dict(lr=0.01)),
    ("NAdam", dict(lr=0.01, betas=(0.8, 0.95), weight_decay=0.1, momentum_decay=0.01)),
    ("NAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("ASGD", dict(lr=0.05, lambd=0.01, t0=3, weight_decay=0.1)),  # averaging from step 4 on
    ("ASGD", dict(lr=0.002, alpha=0.5, maximize=True)),
    ("Rprop", dict(lr=0.01)),
    ("Rprop", dict(lr=0.01, etas=(0.3, 1.7), step_sizes=(1e-3, 0.02), maximize=True)),
    ("Adafactor", dict(lr=0.05, weight_decay=0.1)),
    ("Adafactor", dict(lr=0.2, beta2_decay=-0.5, eps=(1e-4, 1e-2), d=1.5, maximize=True)),
    ("Muon", dict(lr=0.02)),  # bfloat16 Newton-Schulz: the same roundings as torch's
    ("Muon", dict(lr=0.05, momentum=0.8, nesterov=False, adjust_lr_fn="match_rms_adamw")),
]
IDS = [f"{name}-{i}" for i, (name, _) in enumerate(CASES)]


def _model(lib, dtype=np.float64):
    """Two bias-free layers with fixed weights."""
    layers = []
    for w in (W, W2):
        m = lib.nn.Linear(w.shape[1], w.shape[0], bias=False)
        m = m.double() if dtype == np.float64 else m
        with torch.no_grad() if lib is torch else kn.no_grad():
            m.weight.copy_(lib.tensor(w.astype(dtype)))
        layers.append(m)
    return layers


def _optimizer(lib, name, hyper, a, b):
    """Two groups, the second at a third of the lr."""
    groups = [{"params": a.parameters()}, {"params": b.parameters(), "lr": hyper["lr"] / 3}]
    return getattr(lib.optim, name)(groups, **hyper)


def _train(lib, a, b, opt, steps, mode="eager", dtype=np.float64):
    def step(x, y):
        opt.zero_grad()
        loss = ((b(a(x)) - y) ** 2).mean()
        if mode == "minimize":
            opt.minimize(loss)
        else:
            loss.backward()
            opt.step()
        return loss

    step = step if mode == "eager" else kn.compile(step)
    x, y = lib.tensor(X.astype(dtype)), lib.tensor(Y.astype(dtype))
    for _ in range(steps):
        step(x, y)
    return [m.weight.detach().numpy().copy() for m in (a, b)]


SCALARS = {"mu_product", "eta", "mu"}


def _compare_state(got, want, rtol, loaded=None):
    """Entries, their keys in order, dtypes and values of two state_dicts' 'state'.
    `loaded`: the library (torch or kn) that loaded them: its load_state_dict casts every
    floating state value but 'step' to the parameter's dtype (torch's, and kiln's as
    torch's), so its float32 scalars became float64 while the other's stayed float32."""
    assert list(got) == list(want)
    for index, entry in want.items():
        assert list(got[index]) == list(entry), index
        for key, value in entry.items():
            if loaded is not None and key in SCALARS:
                dtypes = str(got[index][key].dtype), str(value.dtype)
                wide = ("kiln.float64", "torch.float32") if loaded is kn else (
                    "kiln.float32", "torch.float64")  # fmt: skip
                assert dtypes == wide, (key, dtypes)
                np.testing.assert_allclose(got[index][key].numpy(), value.numpy(), rtol=1e-6)
                continue
            assert str(got[index][key].dtype) == str(value.dtype).replace("torch.", "kiln."), key
            scale = float(value.abs().max())
            np.testing.assert_allclose(got[index][key].numpy(), value.numpy(), rtol=rtol,
                                       atol=rtol * scale, err_msg=key)  # fmt: skip


@pytest.mark.parametrize("mode", ["eager", "compile", "minimize"])
@pytest.mark.parametrize("name, hyper", CASES, ids=IDS)
def test_trajectory_and_state_dict_are_torchs(name, hyper, mode):
    """Ten float64 steps: weights and every state value to 1e-10 (ASGD's eta and mu, and
    NAdam's mu_product, are float32 scalars in both); the groups' options as torch's."""
    a, b = _model(torch)
    opt = _optimizer(torch, name, hyper, a, b)
    want = _train(torch, a, b, opt, 10)
    want_sd = opt.state_dict()
    a, b = _model(kn)
    opt = _optimizer(kn, name, hyper, a, b)
    got = _train(kn, a, b, opt, 10, mode)
    got_sd = opt.state_dict()
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)
    _compare_state(got_sd["state"], want_sd["state"], 1e-10)
    for got_group, want_group in zip(got_sd["param_groups"], want_sd["param_groups"]):
        assert list(got_group.items()) == list(want_group.items())


def _adafactor_run(lib, hyper, dtype):
    """A rank-3 weight (a row_var and col_var per matrix), a vector (variance) and a
    matrix in a second group, eight steps."""
    r = np.random.default_rng(2)
    values = [r.standard_normal((2, 3, 4)), r.standard_normal(4), r.standard_normal((3, 4))]
    w3, b, w2 = (lib.nn.Parameter(lib.tensor(v.astype(dtype))) for v in values)
    groups = [{"params": [w3, b]}, {"params": [w2], "lr": hyper["lr"] / 2}]
    opt = lib.optim.Adafactor(groups, **hyper)
    x = lib.tensor(X.astype(dtype))
    for _ in range(8):
        opt.zero_grad()
        loss = (((x * b) @ w2.T) ** 2).mean() + (w3**2 * (w3 - 0.3)).sum()
        loss.backward()
        opt.step()
    return [p.detach().numpy().copy() for p in (w3, b, w2)], opt.state_dict()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("hyper", [c[1] for c in CASES if c[0] == "Adafactor"])
def test_adafactor_factored_and_vector_state_is_torchs(hyper, dtype):
    """Parameters of rank 3 and 1 (the other test's are matrices): the state's keys by rank,
    their shapes (row_var (2, 3, 1), col_var (2, 1, 4)) and values; float64 to 1e-10,
    float32 to 1e-5."""
    want, want_sd = _adafactor_run(torch, hyper, dtype)
    got, got_sd = _adafactor_run(kn, hyper, dtype)
    rtol = 1e-10 if dtype == np.float64 else 1e-5
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol)
    _compare_state(got_sd["state"], want_sd["state"], rtol)
    assert tuple(got_sd["state"][0]["row_var"].shape) == (2, 3, 1)
    assert list(got_sd["state"][1]) == ["step", "variance"]


@pytest.mark.parametrize("name, hyper", CASES[::2], ids=IDS[::2])
def test_float32_trajectory_is_torchs(name, hyper):
    """float32 weights: float32 state (the scalars too), weights to 1e-6 of torch's."""
    a, b = _model(torch, np.float32)
    opt = _optimizer(torch, name, hyper, a, b)
    want = _train(torch, a, b, opt, 6, dtype=np.float32)
    want_sd = opt.state_dict()
    a, b = _model(kn, np.float32)
    opt = _optimizer(kn, name, hyper, a, b)
    got = _train(kn, a, b, opt, 6, dtype=np.float32)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)
    _compare_state(opt.state_dict()["state"], want_sd["state"], 1e-5)


def _convert(sd, lib):
    """A state_dict with its tensors made by `lib` (a checkpoint moved between them)."""
    move = lambda v: lib.tensor(v.numpy()) if hasattr(v, "numpy") else v  # noqa: E731
    state = {i: {k: move(v) for k, v in entry.items()} for i, entry in sd["state"].items()}
    return {"state": state, "param_groups": [dict(g) for g in sd["param_groups"]]}


@pytest.mark.parametrize("source", ["torch", "kiln"])
@pytest.mark.parametrize("name, hyper", CASES[1::2], ids=IDS[1::2])
def test_a_state_dict_moved_between_torch_and_kiln_resumes_the_same_trajectory(name, hyper, source):
    """Four steps in one library, its state_dict and weights loaded into the other, four
    more steps in both: the same weights and state (to 1e-10; torch's float32 scalars made
    float64 by its load, to 1e-6, a difference that moves the weights by ~1e-12)."""
    models = {lib: _model(lib) for lib in (torch, kn)}
    opts = {lib: _optimizer(lib, name, hyper, *models[lib]) for lib in (torch, kn)}
    first, second = (torch, kn) if source == "torch" else (kn, torch)
    _train(first, *models[first], opts[first], 4)
    opts[second].load_state_dict(_convert(opts[first].state_dict(), second))
    for m_from, m_to in zip(models[first], models[second]):
        with torch.no_grad() if second is torch else kn.no_grad():
            m_to.weight.copy_(second.tensor(m_from.weight.detach().numpy()))
    want = _train(torch, *models[torch], opts[torch], 4)
    got = _train(kn, *models[kn], opts[kn], 4)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)
    _compare_state(opts[kn].state_dict()["state"], opts[torch].state_dict()["state"], 1e-10,
                   loaded=second)  # fmt: skip


@pytest.mark.parametrize("name, hyper", CASES[::3], ids=IDS[::3])
def test_resume_through_kn_save_is_bit_identical(name, hyper, tmp_path):
    """Eight steps straight, or four, kn.save of weights and optimizer, kn.load into a new
    model and optimizer, four more: the same bits as the same resume from the state_dict in
    memory, and as the straight run where the load keeps every state dtype (NAdam's and
    ASGD's float32 scalars become float64 for float64 parameters, as torch's load makes
    them, and NAdam's product then goes on in float64)."""
    a, b = _model(kn)
    straight = _train(kn, a, b, _optimizer(kn, name, hyper, a, b), 8)
    a, b = _model(kn)
    opt = _optimizer(kn, name, hyper, a, b)
    _train(kn, a, b, opt, 4)
    path = tmp_path / "ckpt.safetensors"
    kn.save({"a": a.state_dict(), "b": b.state_dict(), "opt": opt.state_dict()}, path)
    saved = kn.load(path)
    a, b = _model(kn)
    a.load_state_dict(saved["a"])
    b.load_state_dict(saved["b"])
    opt = _optimizer(kn, name, hyper, a, b)
    opt.load_state_dict(saved["opt"])
    got = _train(kn, a, b, opt, 4)
    a, b = _model(kn)
    first = _optimizer(kn, name, hyper, a, b)
    _train(kn, a, b, first, 4)
    again = _optimizer(kn, name, hyper, a, b)
    again.load_state_dict(first.state_dict())
    in_memory = _train(kn, a, b, again, 4)
    widened = name == "NAdam"  # (ASGD's scalars keep their float32 values)
    for g, m, w in zip(got, in_memory, straight):
        np.testing.assert_array_equal(g, m)
        if not widened:
            np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("name", ["NAdam", "ASGD", "Rprop"])
def test_step_hooks_run_around_step(name):
    """The base class's step pre/post hooks (kiln/optim/hooks.py) wrap these steps too."""
    w = kn.tensor([1.0, -2.0], requires_grad=True)
    opt = getattr(kn.optim, name)([w], lr=0.1)
    seen = []
    opt.register_step_pre_hook(lambda o, args, kwargs: seen.append(("pre", w.tolist())))
    opt.register_step_post_hook(lambda o, args, kwargs: seen.append(("post", w.tolist())))
    (w * w).sum().backward()
    opt.step()
    assert seen[0] == ("pre", [1.0, -2.0]) and seen[1][0] == "post"
    assert seen[1][1] != [1.0, -2.0]


@pytest.mark.parametrize(
    "name, hyper, message",
    [("NAdam", dict(momentum_decay=-1.0), "Invalid momentum_decay value: -1.0"),
     ("NAdam", dict(betas=(1.0, 0.9)), "Invalid beta parameter at index 0: 1.0"),
     ("ASGD", dict(weight_decay=-0.1), "Invalid weight_decay value: -0.1"),
     ("Rprop", dict(etas=(1.5, 1.2)), "Invalid eta values: 1.5, 1.2"),
     ("Rprop", dict(lr=-1.0), "Invalid learning rate: -1.0"),
     ("Adafactor", dict(d=0.5), "Clipping threshold d should be >= 1 but is: 0.5"),
     ("Adafactor", dict(beta2_decay=0.1), "beta2_decay should be <= 0 but is: 0.1"),
     ("Muon", dict(adjust_lr_fn="x"), "Adjust learning rate function x is not supported"),
     ("Muon", dict(), "Muon only supports 2D parameters whereas we found a parameter with size")],
)  # fmt: skip
def test_bad_options_raise_torchs_messages(name, hyper, message):
    """torch raises ValueError with these messages; kiln's ArgumentError is a ValueError."""
    with pytest.raises(ValueError, match=message):
        getattr(torch.optim, name)([torch.zeros(1, requires_grad=True)], **hyper)
    with pytest.raises(kn.errors.ArgumentError, match=message):
        getattr(kn.optim, name)([kn.zeros(1, requires_grad=True)], **hyper)


# -- SparseAdam: kiln's gradients are all dense, which torch's SparseAdam refuses ------------


def _error(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the error itself is compared
        return e
    return None


def test_sparse_adam_refuses_dense_gradients_as_torch():
    """torch: RuntimeError at step() for a dense gradient, the weights unchanged; kiln's
    UsageError is a RuntimeError with the same message."""
    errors = {}
    for lib in (torch, kn):
        w = lib.tensor([1.0, -2.0], requires_grad=True)
        opt = lib.optim.SparseAdam([w], lr=0.1)
        (w * w).sum().backward()
        errors[lib] = _error(opt.step)
        assert w.tolist() == [1.0, -2.0]
        assert opt.state_dict()["state"] == {}
    assert isinstance(errors[torch], RuntimeError) and isinstance(errors[kn], RuntimeError)
    assert isinstance(errors[kn], kn.errors.UsageError)
    assert str(errors[kn]).startswith(str(errors[torch]))


def test_sparse_adam_without_gradients_returns_the_closure_loss_as_torch():
    got = {}
    for lib in (torch, kn):
        w = lib.tensor([1.0, -2.0], requires_grad=True)
        opt = lib.optim.SparseAdam([w, lib.zeros(2, requires_grad=True)], betas=(0.8, 0.9))
        got[lib] = (opt.step(lambda: lib.tensor(3.5)).item(), w.tolist(), opt.state_dict())
    assert got[kn][:2] == got[torch][:2]
    assert got[kn][2]["param_groups"] == got[torch][2]["param_groups"]


@pytest.mark.parametrize(
    "make, hyper",
    [(lambda lib: lib.zeros(2, dtype=lib.complex64, requires_grad=True), {}),
     (lambda lib: lib.zeros(2, requires_grad=True), dict(lr=0.0)),
     (lambda lib: lib.zeros(2, requires_grad=True), dict(eps=0.0)),
     (lambda lib: lib.zeros(2, requires_grad=True), dict(betas=(0.9, 1.0)))],
)  # fmt: skip
def test_sparse_adam_checks_as_torch(make, hyper):
    """The same ValueErrors with the same messages (complex params, lr and eps > 0)."""
    want = _error(lambda: torch.optim.SparseAdam([make(torch)], **hyper))
    got = _error(lambda: kn.optim.SparseAdam([make(kn)], **hyper))
    assert isinstance(want, ValueError) and isinstance(got, kn.errors.ArgumentError)
    assert str(got).startswith(str(want))


def test_sparse_adam_in_a_graph_refuses_the_dense_gradients():
    with kn.Graph().as_default():
        w = kn.Variable(np.float32([1.0, 2.0]), name="w")
        with pytest.raises(kn.errors.UsageError, match="does not support dense gradients"):
            kn.optim.SparseAdam([w]).minimize((w * w).sum())


# -- swap_in_optimizer_params_and_state --------------------------------------------------------


def _clone_sd(sd, lib):
    """A state_dict's deep copy made of `lib`'s tensors."""
    move = lambda v: lib.tensor(v.numpy().copy()) if hasattr(v, "numpy") else v  # noqa: E731
    state = {i: {k: move(v) for k, v in entry.items()} for i, entry in sd["state"].items()}
    groups = [
        {k: (list(v) if k == "params" else v) for k, v in g.items()} for g in sd["param_groups"]
    ]
    return {"state": state, "param_groups": groups}


@pytest.mark.parametrize("name, hyper", [CASES[1], CASES[3]], ids=[IDS[1], IDS[3]])
def test_swap_in_params_and_state_as_torch(name, hyper):
    """Three steps; then, inside the context, two steps on other tensors and a copy of the
    state_dict (other options too); after it, three more live steps. The swap-in tensors,
    the copy's state tensors (changed in place) and the live weights all as torch's."""
    out = {}
    for lib in (torch, kn):
        a, b = _model(lib)
        opt = _optimizer(lib, name, hyper, a, b)
        _train(lib, a, b, opt, 3)
        sd = _clone_sd(opt.state_dict(), lib)
        sd["param_groups"][0]["lr"] = hyper["lr"] * 2
        others = {"a": a.weight.detach() * 0.5 + 0.1, "b": b.weight.detach() * -0.5}
        for t in others.values():
            t.requires_grad_(True)
        with lib.optim.swap_in_optimizer_params_and_state(opt, others, sd):
            for _ in range(2):
                opt.zero_grad()
                x = lib.tensor(X)
                ((x @ others["a"].T @ others["b"].T - lib.tensor(Y)) ** 2).mean().backward()
                opt.step()
        live = _train(lib, a, b, opt, 3)
        swapped = [t.detach().numpy().copy() for t in others.values()]
        state = {i: {k: v.numpy().copy() for k, v in e.items()} for i, e in sd["state"].items()}
        out[lib] = live, swapped, state, opt.param_groups[0]["lr"]
    (live_k, swap_k, state_k, lr_k), (live_t, swap_t, state_t, lr_t) = out[kn], out[torch]
    assert lr_k == lr_t == hyper["lr"]
    for g, w in zip(live_k + swap_k, live_t + swap_t):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)
    assert list(state_k) == list(state_t)
    for i in state_t:
        assert list(state_k[i]) == list(state_t[i])
        for key in state_t[i]:
            np.testing.assert_allclose(state_k[i][key], state_t[i][key], rtol=1e-10, err_msg=key)


def test_swap_in_checks_as_torch():
    for lib, error in ((torch, RuntimeError), (kn, kn.errors.UsageError)):
        w = lib.tensor([1.0], requires_grad=True)
        opt = lib.optim.SGD([w], lr=0.1, momentum=0.9)
        with pytest.raises(error, match="requires initialized optimizer state"):
            with lib.optim.swap_in_optimizer_params_and_state(opt, {"w": w}, opt.state_dict()):
                pass
