"""Optimizers written PyTorch's way (a subclass of kn.optim.Optimizer with its own
`step(closure)` over `self.param_groups` and `self.state[p]`), their state_dict, and
`closure` on the built-in optimizers; PyTorch is the oracle where installed."""

import numpy as np
import pytest

import kiln as kn


def make_optimizers(ns):
    """Two optimizers as PyTorch's documentation writes them, for `ns` (kiln or torch)."""

    class MomentumSGD(ns.optim.Optimizer):
        def __init__(self, params, lr=0.01, momentum=0.9):
            if lr < 0.0:
                raise ValueError(f"Invalid learning rate: {lr}")
            super().__init__(params, dict(lr=lr, momentum=momentum))

        @ns.no_grad()
        def step(self, closure=None):
            loss = None
            if closure is not None:
                with ns.enable_grad():
                    loss = closure()
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    state = self.state[p]
                    if len(state) == 0:
                        state["step"] = 0
                        state["momentum_buffer"] = ns.zeros_like(
                            p, memory_format=ns.preserve_format
                        )
                    buf = state["momentum_buffer"]
                    buf.mul_(group["momentum"]).add_(p.grad)
                    p.add_(buf, alpha=-group["lr"])
                    state["step"] += 1
            return loss

    class PlainAdam(ns.optim.Optimizer):
        def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8):
            super().__init__(params, dict(lr=lr, betas=betas, eps=eps))

        @ns.no_grad()
        def step(self, closure=None):
            for group in self.param_groups:
                beta1, beta2 = group["betas"]
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    state = self.state[p]
                    if not state:
                        state["step"] = ns.tensor(0.0)
                        state["exp_avg"] = ns.zeros_like(p)
                        state["exp_avg_sq"] = ns.zeros_like(p)
                    state["step"] += 1
                    step = state["step"].item()
                    state["exp_avg"].lerp_(p.grad, 1 - beta1)
                    state["exp_avg_sq"].mul_(beta2).addcmul_(p.grad, p.grad, value=1 - beta2)
                    denom = (state["exp_avg_sq"].sqrt() / (1 - beta2**step) ** 0.5).add_(
                        group["eps"]
                    )
                    p.addcdiv_(state["exp_avg"], denom, value=-group["lr"] / (1 - beta1**step))

    return MomentumSGD, PlainAdam


def _train(ns, which, steps, opt=None, params=None, **options):
    """Fits w, b of a line to fixed data for `steps` steps; returns (params, optimizer)."""
    rng = np.random.default_rng(0)
    x = ns.tensor(rng.standard_normal((16, 3)).astype(np.float32))
    y = ns.tensor(rng.standard_normal(16).astype(np.float32))
    if params is None:
        params = [ns.tensor(np.float32([0.5, -0.25, 1.0])).requires_grad_(True),
                  ns.tensor(np.float32(0.1)).requires_grad_(True)]  # fmt: skip
    if opt is None:
        cls = dict(zip(("sgd", "adam"), make_optimizers(ns)))[which]
        opt = cls([{"params": params[:1]}, {"params": params[1:], "lr": 0.05}], **options)
    for _ in range(steps):
        opt.zero_grad()
        ((x @ params[0] + params[1] - y) ** 2).mean().backward()
        opt.step()
    return params, opt


@pytest.mark.parametrize("which", ["sgd", "adam"])
def test_custom_optimizer_matches_torch(which):
    torch = pytest.importorskip("torch")
    ours, opt = _train(kn, which, 6, lr=0.02)
    theirs, topt = _train(torch, which, 6, lr=0.02)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6, atol=1e-7)
    ours_sd, theirs_sd = opt.state_dict(), topt.state_dict()
    assert ours_sd["param_groups"] == theirs_sd["param_groups"]
    assert sorted(ours_sd["state"]) == sorted(theirs_sd["state"]) == [0, 1]
    for index, entry in theirs_sd["state"].items():
        assert sorted(ours_sd["state"][index]) == sorted(entry)


def test_custom_sgd_equals_its_formula():
    # PyTorch's documented momentum: buf = momentum * buf + g; p -= lr * buf (NumPy here)
    params, opt = _train(kn, "sgd", 3, lr=0.1, momentum=0.5)
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((16, 3)).astype(np.float32), rng.standard_normal(16)
    w, b = np.float32([0.5, -0.25, 1.0]), np.float32(0.1)
    bw, bb = np.zeros(3, np.float32), np.float32(0)
    for _ in range(3):
        r = (x @ w + b - y.astype(np.float32)).astype(np.float32)
        gw, gb = (2 * x.T @ r / 16).astype(np.float32), np.float32(2 * r.mean())
        bw, bb = bw * np.float32(0.5) + gw, bb * np.float32(0.5) + gb
        w, b = w - np.float32(0.1) * bw, b - np.float32(0.05) * bb
    np.testing.assert_allclose(params[0].detach().numpy(), w, rtol=1e-5)
    np.testing.assert_allclose(params[1].detach().numpy(), b, rtol=1e-5)
    assert opt.state[params[0]]["step"] == 3


@pytest.mark.parametrize("which", ["sgd", "adam"])
def test_custom_optimizer_resume_is_bit_identical(which, tmp_path):
    straight, _ = _train(kn, which, 8, lr=0.02)
    first, opt = _train(kn, which, 4, lr=0.02)
    kn.save({"params": [p.detach() for p in first], "optimizer": opt.state_dict()},
            tmp_path / "ckpt.safetensors")  # fmt: skip
    saved = kn.load(tmp_path / "ckpt.safetensors")
    params = [p.clone().requires_grad_(True) for p in saved["params"]]
    cls = dict(zip(("sgd", "adam"), make_optimizers(kn)))[which]
    fresh = cls([{"params": params[:1]}, {"params": params[1:], "lr": 0.05}], lr=0.02)
    fresh.load_state_dict(saved["optimizer"])
    resumed, _ = _train(kn, which, 4, opt=fresh, params=params)
    for a, b in zip(straight, resumed):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


def test_custom_optimizer_in_graph_mode_says_it_runs_eagerly():
    sgd, _ = make_optimizers(kn)
    with kn.Graph().as_default():
        w = kn.Variable(np.float32(1.0), name="w")
        with pytest.raises(NotImplementedError, match="runs eagerly only"):
            sgd([w]).minimize(w * w)


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad"])
def test_builtin_step_with_closure_matches_torch(name):
    torch = pytest.importorskip("torch")
    results = []
    for ns in (kn, torch):
        w = ns.tensor(np.float32([1.0, -2.0, 3.0])).requires_grad_(True)
        opt = getattr(ns.optim, name)([w], lr=0.1)
        losses = []

        def closure():
            opt.zero_grad()
            loss = (w * w).sum()
            loss.backward()
            return loss

        for _ in range(3):
            losses.append(opt.step(closure).item())
        results.append((losses, w.detach().numpy()))
    assert results[0][0] == pytest.approx(results[1][0], rel=1e-6)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-6)


def _lbfgs_run(ns, line_search, steps, opt=None, w=None, **options):
    """L-BFGS on a convex problem: least squares plus a quartic term (NumPy-seeded data)."""
    rng = np.random.default_rng(0)
    a = ns.tensor(rng.standard_normal((20, 5)).astype(np.float32))
    b = ns.tensor(rng.standard_normal(20).astype(np.float32))
    w = ns.zeros(5, requires_grad=True) if w is None else w
    if opt is None:
        opt = ns.optim.LBFGS([w], lr=0.5 if line_search is None else 1, max_iter=6,
                             history_size=3, line_search_fn=line_search, **options)  # fmt: skip

    def closure():
        opt.zero_grad()
        loss = ((a @ w - b) ** 2).mean() + 0.1 * (w**4).sum()
        loss.backward()
        return loss

    losses = [opt.step(closure).item() for _ in range(steps)]
    return w, losses, opt


@pytest.mark.parametrize("line_search", [None, "strong_wolfe"])
def test_lbfgs_matches_torch(line_search):
    torch = pytest.importorskip("torch")
    # one step of up to 6 iterations: far from the tolerances, so the same iterations run
    ours, our_losses, opt = _lbfgs_run(kn, line_search, 1)
    theirs, their_losses, topt = _lbfgs_run(torch, line_search, 1)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-5)
    assert our_losses == pytest.approx(their_losses, rel=1e-6)
    for key in ("func_evals", "n_iter"):
        assert opt.state[ours][key] == topt.state[theirs][key]
    assert sorted(opt.state_dict()["state"][0]) == sorted(topt.state_dict()["state"][0])


def test_lbfgs_converges_to_the_minimum():
    # the minimizer has zero gradient: 2/20 A^T (A w - b) + 0.4 w^3 = 0 (NumPy check)
    w, losses, _ = _lbfgs_run(kn, "strong_wolfe", 4)
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((20, 5)), rng.standard_normal(20)
    x = w.detach().numpy().astype(np.float64)
    assert np.abs(2 / 20 * a.T @ (a @ x - b) + 0.4 * x**3).max() < 1e-4
    assert losses == sorted(losses, reverse=True)


def test_lbfgs_resume_is_bit_identical(tmp_path):
    straight, _, _ = _lbfgs_run(kn, None, 3, tolerance_change=0.0)
    w, _, opt = _lbfgs_run(kn, None, 1, tolerance_change=0.0)
    kn.save({"w": w.detach(), "opt": opt.state_dict()}, tmp_path / "lbfgs.safetensors")
    saved = kn.load(tmp_path / "lbfgs.safetensors")
    w = saved["w"].clone().requires_grad_(True)
    fresh = kn.optim.LBFGS([w], lr=0.5, max_iter=6, history_size=3, tolerance_change=0.0)
    fresh.load_state_dict(saved["opt"])
    resumed, _, _ = _lbfgs_run(kn, None, 2, opt=fresh, w=w)
    np.testing.assert_array_equal(straight.detach().numpy(), resumed.detach().numpy())


def test_lbfgs_refuses_what_torch_refuses():
    a, b = kn.zeros(2, requires_grad=True), kn.zeros(2, requires_grad=True)
    with pytest.raises(ValueError, match="per-parameter options"):
        kn.optim.LBFGS([{"params": [a]}, {"params": [b]}])
    opt = kn.optim.LBFGS([a], line_search_fn="armijo")  # taken, as PyTorch takes it...

    def closure():
        opt.zero_grad()
        loss = ((a - 1) ** 2).sum()
        loss.backward()
        return loss

    with pytest.raises(RuntimeError, match="only 'strong_wolfe' is supported"):
        opt.step(closure)  # ...and refused where its step would search
    with pytest.raises(RuntimeError, match="requires a closure"):
        kn.optim.LBFGS([a]).step(None)
