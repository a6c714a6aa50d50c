"""kn.nn.utils against torch.nn.utils: get_total_norm, clip_grads_with_norm_, the deprecated
clip_grad_norm, and weight_norm / remove_weight_norm (all missing in kiln): parameter names,
shapes, state_dict keys, outputs, gradients and SGD steps on the same weights as torch."""

import numpy as np
import pytest

import kiln as kn

torch = pytest.importorskip("torch")


def _copy(t, k):
    k.load_state_dict({n: v.detach().numpy() for n, v in t.state_dict().items()})


@pytest.mark.parametrize("norm_type", [2.0, 1.0, float("inf"), 3.0])
def test_total_norm_and_clip_with_norm_like_torch(norm_type):
    torch.manual_seed(0)
    t = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
    k = kn.nn.Sequential(kn.nn.Linear(3, 4), kn.nn.Tanh(), kn.nn.Linear(4, 2))
    _copy(t, k)
    x = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    norms = []
    for lib, m in ((torch, t), (kn, k)):
        m(lib.tensor(x)).pow(2).sum().backward()
        total = lib.nn.utils.get_total_norm([p.grad for p in m.parameters()], norm_type)
        lib.nn.utils.clip_grads_with_norm_(m.parameters(), 0.1, total)
        norms.append(total.item())
    np.testing.assert_allclose(norms[1], norms[0], rtol=1e-5)
    for a, b in zip(t.parameters(), k.parameters()):
        np.testing.assert_allclose(b.grad.numpy(), a.grad.numpy(), rtol=1e-5, atol=1e-7)
    assert kn.nn.utils.get_total_norm([]).item() == torch.nn.utils.get_total_norm([]).item()


def test_clip_grad_norm_deprecated_name_warns_and_clips():
    for lib in (torch, kn):
        w = lib.tensor([3.0, 4.0], requires_grad=True)
        (w * w).sum().backward()
        with pytest.warns(FutureWarning, match="clip_grad_norm_"):
            total = lib.nn.utils.clip_grad_norm(w, 5.0)
        assert total.item() == 10.0
        np.testing.assert_allclose(w.grad.tolist(), [3.0, 4.0], rtol=1e-5)


CASES = [
    (lambda nn: nn.Linear(4, 3), 0, (5, 4)),
    (lambda nn: nn.Conv2d(2, 3, 3), 0, (2, 2, 5, 5)),
    (lambda nn: nn.Conv1d(2, 3, 3), 1, (2, 2, 5)),
    (lambda nn: nn.Linear(4, 3), None, (5, 4)),
    (lambda nn: nn.ConvTranspose2d(2, 3, 3), 1, (2, 2, 5, 5)),
]


@pytest.mark.filterwarnings("ignore::FutureWarning")  # torch's: weight_norm is deprecated
@pytest.mark.parametrize("build, dim, shape", CASES)
def test_weight_norm_like_torch(build, dim, shape):
    torch.manual_seed(0)
    t = torch.nn.utils.weight_norm(build(torch.nn), dim=dim)
    k = kn.nn.utils.weight_norm(build(kn.nn), dim=dim)
    assert [(n, tuple(p.shape)) for n, p in k.named_parameters()] == [
        (n, tuple(p.shape)) for n, p in t.named_parameters()
    ]
    assert list(k.state_dict()) == list(t.state_dict())
    _copy(t, k)
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    opts = (torch.optim.SGD(t.parameters(), lr=0.1), kn.optim.SGD(k.parameters(), lr=0.1))
    for _ in range(3):
        outs = []
        for lib, m, opt in ((torch, t, opts[0]), (kn, k, opts[1])):
            opt.zero_grad()
            y = m(lib.tensor(x))
            y.pow(2).sum().backward()
            opt.step()
            outs.append([y] + [p.grad for p in m.parameters()])
        for want, got in zip(*outs):
            np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(),
                                       rtol=1e-4, atol=1e-5)  # fmt: skip
    torch.nn.utils.remove_weight_norm(t)
    kn.nn.utils.remove_weight_norm(k)
    assert list(k.state_dict()) == list(t.state_dict())
    want = t(torch.tensor(x)).detach().numpy()
    np.testing.assert_allclose(k(kn.tensor(x)).detach().numpy(), want, rtol=1e-4, atol=1e-5)


def test_weight_norm_errors_and_compile():
    m = kn.nn.utils.weight_norm(kn.nn.Linear(4, 3))
    with pytest.raises(RuntimeError, match="two weight_norm hooks"):
        kn.nn.utils.weight_norm(m)
    with pytest.raises(ValueError, match="not found"):
        kn.nn.utils.remove_weight_norm(kn.nn.Linear(2, 2))
    kn.testing.check_eager_vs_compiled(lambda a: m(a).pow(2).sum(), kn.randn(5, 4))


SPECTRAL = [
    (lambda nn: nn.Linear(5, 4), {}, (3, 5)),
    (lambda nn: nn.Conv2d(2, 3, 3), {"n_power_iterations": 3}, (2, 2, 5, 5)),
    (lambda nn: nn.ConvTranspose1d(2, 3, 3), {}, (2, 2, 5)),  # dim 1 by default
    (lambda nn: nn.Linear(5, 4), {"dim": 1}, (3, 5)),
]


@pytest.mark.parametrize("build, kw, shape", SPECTRAL)
def test_spectral_norm_like_torch(build, kw, shape):
    # the power iteration's start vectors are random: kiln's are loaded from torch's
    torch.manual_seed(0)
    t = torch.nn.utils.spectral_norm(build(torch.nn), **kw)
    k = kn.nn.utils.spectral_norm(build(kn.nn), **kw)
    assert [(n, tuple(p.shape)) for n, p in k.named_parameters()] == [
        (n, tuple(p.shape)) for n, p in t.named_parameters()
    ]
    assert list(k.state_dict()) == list(t.state_dict())  # bias, weight_orig, weight_u, weight_v
    _copy(t, k)
    x = np.random.default_rng(2).standard_normal(shape).astype(np.float32)
    opts = (torch.optim.SGD(t.parameters(), lr=0.1), kn.optim.SGD(k.parameters(), lr=0.1))
    for train in (True, True, False):
        outs = []
        for lib, m, opt in ((torch, t, opts[0]), (kn, k, opts[1])):
            m.train(train)
            opt.zero_grad()
            y = m(lib.tensor(x))
            y.pow(2).sum().backward()
            opt.step()
            outs.append([y, m.weight_u, m.weight_v] + [p.grad for p in m.parameters()])
        for want, got in zip(*outs):
            np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(),
                                       rtol=1e-4, atol=1e-5)  # fmt: skip
    torch.nn.utils.remove_spectral_norm(t)
    kn.nn.utils.remove_spectral_norm(k)
    assert list(k.state_dict()) == list(t.state_dict())
    want = t(torch.tensor(x)).detach().numpy()
    np.testing.assert_allclose(k(kn.tensor(x)).detach().numpy(), want, rtol=1e-4, atol=1e-5)


def test_spectral_norm_compiled_matches_eager():
    import copy

    kn.manual_seed(0)
    eager = kn.nn.utils.spectral_norm(kn.nn.Linear(5, 4))
    traced = copy.deepcopy(eager)
    step = kn.compile(lambda a: traced(a).pow(2).sum())
    x = kn.randn(3, 5)
    for _ in range(3):
        want, got = eager(x).pow(2).sum(), step(x)
        want.backward()
        got.backward()
        np.testing.assert_allclose(got.item(), want.item(), rtol=1e-6)
        for name in ("weight_u", "weight_v"):  # the buffers advance in the compiled call too
            np.testing.assert_allclose(getattr(traced, name).numpy(),
                                       getattr(eager, name).numpy(), rtol=1e-6)  # fmt: skip
    np.testing.assert_allclose(traced.weight_orig.grad.numpy(), eager.weight_orig.grad.numpy(),
                               rtol=1e-5)  # fmt: skip
    with pytest.raises(RuntimeError, match="two spectral_norm hooks"):
        kn.nn.utils.spectral_norm(eager)


FUSE = [
    ("conv", lambda nn: (nn.Conv2d(2, 3, 3), nn.BatchNorm2d(3)), (2, 2, 5, 5), False),
    ("conv_nobias", lambda nn: (nn.Conv1d(2, 3, 3, bias=False), nn.BatchNorm1d(3)), (2, 2, 6),
     False),
    ("convT", lambda nn: (nn.ConvTranspose2d(2, 3, 3), nn.BatchNorm2d(3)), (2, 2, 4, 4), True),
    ("linear", lambda nn: (nn.Linear(4, 3), nn.BatchNorm1d(3)), (5, 4), None),
]  # fmt: skip


@pytest.mark.parametrize("kind, build, shape, transpose", FUSE)
def test_fuse_bn_eval_like_torch(kind, build, shape, transpose):
    torch.manual_seed(0)
    (tl, tb), (kl, kb) = build(torch.nn), build(kn.nn)
    rng = np.random.default_rng(3)
    with torch.no_grad():  # running statistics away from 0 and 1
        tb.running_mean.uniform_(-1, 1)
        tb.running_var.uniform_(0.5, 2)
        tb.weight.uniform_(0.5, 1.5)
        tb.bias.uniform_(-1, 1)
    _copy(tl, kl)
    _copy(tb, kb)
    x = rng.standard_normal(shape).astype(np.float32)
    fused = []
    for lib, layer, bn in ((torch, tl, tb), (kn, kl, kb)):
        layer.eval()
        bn.eval()
        if kind == "linear":
            f = lib.nn.utils.fuse_linear_bn_eval(layer, bn)
        else:
            f = lib.nn.utils.fuse_conv_bn_eval(layer, bn, transpose=transpose)
        assert f is not layer and type(f) is type(layer)
        fused.append(
            (f, f(lib.tensor(x)).detach().numpy(), bn(layer(lib.tensor(x))).detach().numpy())
        )
    (tf, ty, tref), (kf, ky, kref) = fused
    np.testing.assert_allclose(ky, ty, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(ky, kref, rtol=1e-4, atol=1e-5)
    assert [(n, p.requires_grad) for n, p in kf.named_parameters()] == [
        (n, p.requires_grad) for n, p in tf.named_parameters()
    ]
    with pytest.raises(RuntimeError, match="Fusion only for eval"):
        kn.nn.utils.fuse_conv_bn_eval(kn.nn.Conv2d(1, 1, 1), kn.nn.BatchNorm2d(1))
