"""Optimizer hooks as PyTorch 2.13's: the same code run on torch and on kiln records the same
calls and values (expected values from torch, run side by side)."""

import pytest

import kiln as kn

torch = pytest.importorskip("torch")


def _run(m):
    log = []
    w = m.tensor([1.0, 2.0], requires_grad=True)
    opt = m.optim.SGD([w], lr=0.5, momentum=0.9)

    def pre(o, args, kwargs):
        log.append(("pre", len(args), sorted(kwargs)))

    def post(o, args, kwargs):
        log.append(("post", [round(v, 5) for v in w.detach().tolist()]))

    h1 = opt.register_step_pre_hook(pre)
    opt.register_step_post_hook(post)
    opt.register_state_dict_pre_hook(lambda o: log.append("sd_pre"))
    opt.register_state_dict_post_hook(lambda o, sd: {**sd, "extra": 1})
    opt.register_load_state_dict_pre_hook(
        lambda o, sd: {k: v for k, v in sd.items() if k != "extra"}
    )
    opt.register_load_state_dict_post_hook(lambda o: log.append("load_post"))
    for _ in range(2):
        opt.zero_grad()
        (w * w).sum().backward()
        opt.step()
    h1.remove()
    opt.step()  # the post hook alone now
    state = opt.state_dict()
    log.append(sorted(state))
    opt.load_state_dict(state)
    return log


def test_optimizer_hooks_as_torch():
    assert _run(kn) == _run(torch)


def test_a_pre_hook_replaces_the_arguments_and_lbfgs_runs_its_hooks():
    def run(m):
        w = m.tensor([3.0], requires_grad=True)
        opt = m.optim.LBFGS([w], lr=1, max_iter=5)

        def closure():
            opt.zero_grad()
            loss = ((w - 1) ** 2).sum()
            loss.backward()
            return loss

        calls = []
        opt.register_step_pre_hook(
            lambda o, args, kwargs: calls.append("pre") or ((o, closure), {})
        )
        opt.register_step_post_hook(lambda o, args, kwargs: calls.append("post"))
        opt.step(lambda: None)  # replaced by the hook's closure
        return calls, round(w.item(), 4)

    assert run(kn) == run(torch)
    with pytest.raises(RuntimeError, match="must return None or a tuple"):
        w = kn.tensor([1.0], requires_grad=True)
        opt = kn.optim.SGD([w], lr=0.1)
        opt.register_step_pre_hook(lambda o, args, kwargs: 3)
        opt.step()
