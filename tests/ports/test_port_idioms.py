"""The lines around a training loop that ported scripts carry unchanged: backend switches,
`torch.utils.checkpoint`, and the optimizers' implementation flags (`fused=`, `foreach=`).
Each refused the rename before: `kn.backends` and `kn.utils.checkpoint` did not exist, and
`kn.optim.AdamW(..., fused=True)` was a TypeError."""

import inspect

import numpy as np
import pytest

import kiln as kn


def test_backend_switches_run():
    kn.backends.cudnn.benchmark = True
    kn.backends.cudnn.deterministic = True
    kn.backends.cuda.matmul.allow_tf32 = True
    assert kn.backends.cudnn.benchmark and kn.backends.cudnn.deterministic
    assert not kn.backends.mps.is_available() and not kn.backends.cudnn.is_available()
    kn.backends.cudnn.benchmark = kn.backends.cudnn.deterministic = False
    kn.backends.cuda.matmul.allow_tf32 = False


def test_optimizers_take_torchs_arguments(torch):
    for name in torch.optim.__all__:
        t = getattr(torch.optim, name)
        if not (inspect.isclass(t) and issubclass(t, torch.optim.Optimizer)):
            continue
        k = getattr(kn.optim, name)
        missing = set(inspect.signature(t.__init__).parameters) - set(
            inspect.signature(k.__init__).parameters
        )
        assert not missing, (name, missing)


@pytest.mark.parametrize("flags", [{"fused": True}, {"foreach": True}, {"capturable": True}])
def test_implementation_flags_change_nothing(flags):
    steps = []
    for kw in ({}, flags):
        w = kn.tensor([1.0, -2.0], requires_grad=True)
        opt = kn.optim.Adam([w], lr=0.1, **kw)
        for _ in range(3):
            opt.zero_grad()
            (w**2).sum().backward()
            opt.step()
        steps.append(w.detach().numpy())
    np.testing.assert_array_equal(steps[1], steps[0])


def test_implementation_flag_refusals(torch):
    for fw in (torch, kn):
        w = fw.zeros(2, requires_grad=True)
        with pytest.raises(RuntimeError, match="`fused` and `foreach` cannot be `True` together"):
            fw.optim.AdamW([w], foreach=True, fused=True)
        # differentiable=True is taken; its step of a leaf that requires grad is refused
        opt = fw.optim.SGD([w], lr=0.1, differentiable=True)
        w.grad = fw.ones(2)
        with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
            opt.step()


def test_utils_checkpoint_like_torch(torch):
    torch.manual_seed(0)
    t_net = torch.nn.Sequential(
        torch.nn.Linear(3, 5), torch.nn.Tanh(), torch.nn.Linear(5, 4), torch.nn.GELU(),
        torch.nn.Linear(4, 1),
    )  # fmt: skip
    k_net = kn.nn.Sequential(
        kn.nn.Linear(3, 5), kn.nn.Tanh(), kn.nn.Linear(5, 4), kn.nn.GELU(), kn.nn.Linear(4, 1)
    )
    k_net.load_state_dict({k: kn.tensor(v.numpy()) for k, v in t_net.state_dict().items()})
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)
    grads = []
    for fw, net in ((torch, t_net), (kn, k_net)):
        from_numpy = fw.from_numpy
        inp = from_numpy(x.copy()).requires_grad_()
        h = fw.utils.checkpoint.checkpoint(net[0], inp, use_reentrant=False)
        out = fw.utils.checkpoint.checkpoint_sequential(net[1:], 2, h, use_reentrant=False)
        out.sum().backward()
        grads.append([inp.grad.numpy()] + [p.grad.numpy() for p in net.parameters()])
    for k, t in zip(grads[1], grads[0]):
        np.testing.assert_allclose(k, t, rtol=1e-5, atol=1e-6)
