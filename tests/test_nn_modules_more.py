"""kiln's nn.functional and nn modules added for issue 11 (kiln/nn/functional_more.py,
layers_lazy.py, layers_more.py) against PyTorch 2.13: modules load torch's state_dict and
give its outputs and gradients, eagerly, in graph mode and under `kn.compile`; random ones
are checked by their moments (within 6 standard errors) and draw afresh per compiled call.
Skipped without torch; each docstring carries a hand-checked example that runs without it."""

import numpy as np
import pytest

import kiln as kn

torch = pytest.importorskip("torch")
TF = torch.nn.functional
KF = kn.nn.functional

RNG = np.random.default_rng(1)
X2 = RNG.standard_normal((2, 3, 9, 11)).astype(np.float32)
X3 = RNG.standard_normal((2, 3, 7, 8, 9)).astype(np.float32)
X1 = RNG.standard_normal((2, 3, 10)).astype(np.float32)
U2 = RNG.random((2, 3, 2)).astype(np.float32)
U3 = RNG.random((2, 3, 3)).astype(np.float32)


def _np(out):
    if isinstance(out, (tuple, list)):
        return [_np(o) for o in out]
    return out.detach().numpy() if hasattr(out, "detach") else np.asarray(out)


def _check(got, want, what, tol=2e-5):
    if isinstance(want, list):
        assert len(got) == len(want), what
        for g, w in zip(got, want):
            _check(g, w, what, tol)
        return
    got = np.asarray(got)
    assert got.shape == want.shape and got.dtype == want.dtype, (
        what,
        got.shape,
        want.shape,
        got.dtype,
        want.dtype,
    )
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol, err_msg=what)


def run_every_mode(fn, arrays, tol=2e-5):
    """fn(torch) against fn(kn) eagerly, under kn.compile and in graph mode."""
    want = _np(fn(torch, *map(torch.tensor, arrays)))
    _check(_np(fn(kn, *map(kn.tensor, arrays))), want, "eager", tol)
    _check(_np(kn.compile(lambda *xs: fn(kn, *xs))(*map(kn.tensor, arrays))), want, "compile",
           tol)  # fmt: skip
    with kn.Graph().as_default():
        xs = [kn.placeholder(a.dtype, a.shape, name=f"x{k}") for k, a in enumerate(arrays)]
        out = fn(kn, *xs)
        many = isinstance(out, (tuple, list))
        got = kn.function(xs, list(out) if many else [out])(*arrays)
    _check(got if many else got[0], want, "graph", tol)


def _F(L):
    return TF if L is torch else KF


CASES = {
    "fractional_max_pool2d-size": (
        lambda L, x, u: _F(L).fractional_max_pool2d(
            x, (3, 2), (4, 5), return_indices=True, _random_samples=u
        ),
        (X2, U2),
    ),
    "fractional_max_pool2d-ratio": (
        lambda L, x, u: _F(L).fractional_max_pool2d_with_indices(
            x, 2, output_ratio=(0.5, 0.7), _random_samples=u
        ),
        (X2, U2),
    ),
    "fractional_max_pool2d-unbatched": (
        lambda L, x, u: _F(L).fractional_max_pool2d(x[0], 3, 3, _random_samples=u[:1]),
        (X2, U2),
    ),
    "fractional_max_pool3d": (
        lambda L, x, u: _F(L).fractional_max_pool3d(
            x, (2, 3, 2), (4, 3, 5), return_indices=True, _random_samples=u
        ),
        (X3, U3),
    ),
    "max_pool1d_with_indices": (lambda L, x: _F(L).max_pool1d_with_indices(x, 3, 2, 1), (X1,)),
    "max_pool2d_with_indices": (
        lambda L, x: _F(L).max_pool2d_with_indices(x, (3, 2), ceil_mode=True),
        (X2,),
    ),
    "max_pool3d_with_indices": (lambda L, x: _F(L).max_pool3d_with_indices(x, 2), (X3,)),
    "adaptive_max_pool1d_with_indices": (
        lambda L, x: _F(L).adaptive_max_pool1d_with_indices(x, 4),
        (X1,),
    ),
    "adaptive_max_pool2d_with_indices": (
        lambda L, x: _F(L).adaptive_max_pool2d_with_indices(x, (4, 3)),
        (X2,),
    ),
    "adaptive_max_pool3d_with_indices": (
        lambda L, x: _F(L).adaptive_max_pool3d_with_indices(x, 2),
        (X3,),
    ),
    "pdist": (lambda L, x: _F(L).pdist(x[0, 0], 1.5), (X2,)),
    "gumbel_softmax-cold": (  # a huge logit gap: the sample is the argmax whatever the noise
        lambda L, x: _F(L).gumbel_softmax(x[0, :, 0] * 1000.0, tau=1.0, hard=True),
        (X2,),
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_functional_matches_torch_in_every_mode(name):
    run_every_mode(*CASES[name])


def _mha_arrays(e=8, s=5, length=4, n=3, seed=2):
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((length, n, e)).astype(np.float32)
    kv = rng.standard_normal((s, n, e)).astype(np.float32)
    w = (rng.standard_normal((3 * e, e)) * 0.3).astype(np.float32)
    b = (rng.standard_normal(3 * e) * 0.1).astype(np.float32)
    ow = (rng.standard_normal((e, e)) * 0.3).astype(np.float32)
    ob = (rng.standard_normal(e) * 0.1).astype(np.float32)
    bk = rng.standard_normal((1, 1, e)).astype(np.float32)
    mask = rng.random((length, s)) < 0.3
    mask[:, 0] = False
    pad = np.zeros((n, s), bool)
    pad[0, -1] = True
    return q, kv, w, b, ow, ob, bk, mask, pad


def _mha(L, q, kv, w, b, ow, ob, bk, mask, pad, **kw):
    return _F(L).multi_head_attention_forward(
        q, kv, kv, 8, 2, w, b, bk, bk * 0.5, kw.pop("zero", False), 0.0, ow, ob, training=False,
        key_padding_mask=pad, attn_mask=mask, **kw)  # fmt: skip


def test_multi_head_attention_forward_matches_torch():
    arrays = _mha_arrays()
    run_every_mode(lambda L, *a: _mha(L, *a), arrays, 1e-5)
    run_every_mode(lambda L, *a: _mha(L, *a, zero=True, average_attn_weights=False), arrays, 1e-5)
    run_every_mode(lambda L, *a: _mha(L, *a, need_weights=False)[0], arrays, 1e-5)
    q, kv, w, *_ = arrays
    sep = (lambda L, q, kv, w: _F(L).multi_head_attention_forward(
        q[:, 0], kv[:, 0], kv[:, 0], 8, 2, None, None, None, None, False, 0.0, w[:8], None,
        use_separate_proj_weight=True, q_proj_weight=w[:8], k_proj_weight=w[8:16],
        v_proj_weight=w[16:]))  # fmt: skip
    run_every_mode(sep, (q, kv, w), 1e-5)
    ts = [torch.tensor(a, requires_grad=a.dtype == np.float32) for a in arrays]
    ks = [kn.tensor(a, requires_grad=a.dtype == np.float32) for a in arrays]
    (_mha(torch, *ts)[0] ** 2).sum().backward()
    (_mha(kn, *ks)[0] ** 2).sum().backward()
    for t, k in zip(ts, ks):
        if t.grad is not None:
            np.testing.assert_allclose(k.grad.numpy(), t.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_fractional_max_pool_gradients_and_fresh_draws():
    xt = torch.tensor(X2, requires_grad=True)
    (
        TF.fractional_max_pool2d(xt, 2, (5, 6), _random_samples=torch.tensor(U2)) ** 2
    ).sum().backward()
    xk = kn.tensor(X2, requires_grad=True)
    (KF.fractional_max_pool2d(xk, 2, (5, 6), _random_samples=kn.tensor(U2)) ** 2).sum().backward()
    np.testing.assert_allclose(xk.grad.numpy(), xt.grad.numpy(), rtol=1e-6)
    x = kn.tensor(RNG.standard_normal((1, 64, 17, 17)).astype(np.float32))
    f = kn.compile(lambda v: KF.fractional_max_pool2d(v, 2, 8, return_indices=True)[1])
    assert (f(x) != f(x)).any()  # fresh window positions per call
    idx = KF.fractional_max_pool2d(x, 2, 8, return_indices=True)[1].numpy()
    # every output's window lies inside the input, and the first row's windows start at
    # row 0 or 1: int(u * alpha) - int(u * alpha) = 0 plus the window's own offset (< 2)
    assert idx.min() >= 0 and idx.max() < 17 * 17
    assert set(np.unique(idx[..., 0, 0] // 17)) <= {0, 1}
    with pytest.raises(ValueError, match="output_size or an output_ratio"):
        KF.fractional_max_pool2d(x, 2)


def test_gumbel_softmax_by_moments():
    kn.manual_seed(0)
    logits = np.log(np.array([0.2, 0.5, 0.3], np.float32))
    n = 20000
    y = KF.gumbel_softmax(kn.tensor(np.tile(logits, (n, 1))), tau=0.5, hard=True)
    assert set(np.unique(y.numpy())) <= {0.0, 1.0} and (y.sum(-1) == 1).all()
    freq = y.numpy().mean(0)  # the Gumbel-max trick: argmax frequencies are softmax(logits)
    p = np.array([0.2, 0.5, 0.3])
    assert (np.abs(freq - p) < 6 * np.sqrt(p * (1 - p) / n)).all(), freq
    x = kn.tensor(logits, requires_grad=True)
    soft = KF.gumbel_softmax(x, tau=2.0)
    np.testing.assert_allclose(float(soft.sum()), 1.0, rtol=1e-6)
    hard = KF.gumbel_softmax(x, hard=True)
    (hard * kn.tensor([1.0, 2.0, 3.0])).sum().backward()  # straight-through: soft's gradient
    assert x.grad is not None and np.abs(x.grad.numpy()).sum() > 0
    f = kn.compile(lambda v: KF.gumbel_softmax(v))
    z = kn.zeros(64, 5)
    assert (f(z) != f(z)).any()


# -- modules ---------------------------------------------------------------------------------


def _load(k, t):
    k.load_state_dict({name: kn.tensor(v.detach().numpy()) for name, v in t.state_dict().items()})


def _compare_module(k, t, arrays, tol=2e-5, grads=True, modes=("eager", "compile", "graph")):
    want = t(*map(torch.tensor, arrays))
    want_np = _np(want)
    if "eager" in modes:
        _check(_np(k(*map(kn.tensor, arrays))), want_np, "eager", tol)
    if "compile" in modes:
        _check(_np(kn.compile(lambda *xs: k(*xs))(*map(kn.tensor, arrays))), want_np, "compile",
               tol)  # fmt: skip
    if "graph" in modes:
        with kn.Graph().as_default():
            xs = [kn.placeholder(a.dtype, a.shape, name=f"x{j}") for j, a in enumerate(arrays)]
            out = k(*xs)
            many = isinstance(out, (tuple, list))
            got = kn.function(xs, list(out) if many else [out])(*arrays)
        _check(got if many else got[0], want_np, "graph", tol)
    if grads:
        ts = [torch.tensor(a, requires_grad=a.dtype == np.float32) for a in arrays]
        out = t(*ts)
        (out[0] if isinstance(out, tuple) else out).pow(2).sum().backward()
        ks = [kn.tensor(a, requires_grad=a.dtype == np.float32) for a in arrays]
        out = k(*ks)
        (out[0] if isinstance(out, tuple) else out).pow(2).sum().backward()
        for a, b in zip(ks, ts):
            if b.grad is not None:
                np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-4, atol=1e-5)
        for (name, p), (_, q) in zip(k.named_parameters(), t.named_parameters()):
            np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-4, atol=1e-5,
                                       err_msg=name)  # fmt: skip


LAZY = {
    "LazyLinear": ("LazyLinear(4)", "Linear", (3, 6)),
    "LazyConv1d": ("LazyConv1d(4, 3, padding=1)", "Conv1d", (2, 3, 7)),
    "LazyConv2d": ("LazyConv2d(6, 3, groups=3)", "Conv2d", (2, 3, 6, 5)),
    "LazyConv3d": ("LazyConv3d(2, 2)", "Conv3d", (1, 2, 4, 4, 3)),
    "LazyConvTranspose1d": ("LazyConvTranspose1d(2, 3, stride=2)", "ConvTranspose1d", (2, 3, 5)),
    "LazyConvTranspose2d": ("LazyConvTranspose2d(4, 2)", "ConvTranspose2d", (2, 3, 4, 4)),
    "LazyConvTranspose3d": ("LazyConvTranspose3d(2, 2)", "ConvTranspose3d", (1, 2, 3, 3, 3)),
    "LazyBatchNorm1d": ("LazyBatchNorm1d()", "BatchNorm1d", (6, 3)),
    "LazyBatchNorm2d": ("LazyBatchNorm2d(momentum=0.3)", "BatchNorm2d", (4, 3, 2, 2)),
    "LazyBatchNorm3d": ("LazyBatchNorm3d(affine=False)", "BatchNorm3d", (2, 3, 2, 2, 2)),
    "LazyInstanceNorm1d": ("LazyInstanceNorm1d()", "InstanceNorm1d", (2, 3, 6)),
    "LazyInstanceNorm2d": ("LazyInstanceNorm2d(affine=False)", "InstanceNorm2d", (2, 3, 4, 4)),
    "LazyInstanceNorm3d": ("LazyInstanceNorm3d()", "InstanceNorm3d", (2, 3, 3, 3, 3)),
}


@pytest.mark.parametrize("name", list(LAZY))
def test_lazy_modules_become_their_class_as_torchs(name):
    text, becomes, shape = LAZY[name]
    x = RNG.standard_normal(shape).astype(np.float32)
    k, t = eval(text, {**vars(kn.nn)}), eval(text, {**vars(torch.nn)})
    assert isinstance(k.weight if hasattr(k, "weight") and k.weight is not None else
                      kn.nn.UninitializedParameter(), kn.nn.UninitializedParameter)  # fmt: skip
    assert repr(k) == repr(t)
    k(kn.tensor(x))
    t(torch.tensor(x))
    assert type(k).__name__ == type(t).__name__ == becomes
    assert repr(k) == repr(t)
    assert {n: tuple(v.shape) for n, v in k.state_dict().items()} == {
        n: tuple(v.shape) for n, v in t.state_dict().items()}  # fmt: skip
    _load(k, t)
    k.eval(), t.eval()
    _compare_module(k, t, (x,), tol=1e-4, grads=False)
    k.train(), t.train()
    _compare_module(k, t, (x,), tol=1e-4, modes=("eager",))


def test_lazy_module_initializes_in_graph_mode_and_under_compile():
    x = RNG.standard_normal((3, 6)).astype(np.float32)
    fc = kn.nn.LazyLinear(2)
    with kn.Graph().as_default():
        xs = kn.placeholder(kn.float32, (3, 6), name="x")
        y = fc(xs)
        got = kn.function([xs], y)(x)
    assert type(fc) is kn.nn.Linear and fc.in_features == 6
    np.testing.assert_allclose(got, x @ fc.weight.numpy().T + fc.bias.numpy(), rtol=1e-5)
    conv = kn.nn.LazyConv1d(2, 3)
    out = kn.compile(lambda v: conv(v))(kn.ones(1, 4, 5))
    assert type(conv) is kn.nn.Conv1d and conv.in_channels == 4 and tuple(out.shape) == (1, 2, 3)
    bound = 1 / np.sqrt(6)  # Linear's initialization: U(-1/sqrt(in), 1/sqrt(in)) bias
    assert np.abs(fc.bias.numpy()).max() <= bound


def test_fractional_max_pool_modules():
    for dims, x, u in ((2, X2, U2), (3, X3, U3)):
        kw = dict(output_size=3, return_indices=True)
        k = getattr(kn.nn, f"FractionalMaxPool{dims}d")(2, _random_samples=kn.tensor(u), **kw)
        t = getattr(torch.nn, f"FractionalMaxPool{dims}d")(2, _random_samples=torch.tensor(u),
                                                             **kw)  # fmt: skip
        assert repr(k) == repr(t)
        _check(_np(k(kn.tensor(x))), _np(t(torch.tensor(x))), f"{dims}d")
    with pytest.raises(ValueError, match="between 0 and 1"):
        kn.nn.FractionalMaxPool2d(2, output_ratio=1.5)


def test_adaptive_log_softmax_matches_torch():
    torch.manual_seed(0)
    t = torch.nn.AdaptiveLogSoftmaxWithLoss(8, 12, [3, 6, 9], div_value=2.0, head_bias=True)
    k = kn.nn.AdaptiveLogSoftmaxWithLoss(8, 12, [3, 6, 9], div_value=2.0, head_bias=True)
    assert repr(k) == repr(t)
    _load(k, t)
    x = RNG.standard_normal((7, 8)).astype(np.float32)
    target = np.array([0, 2, 3, 5, 6, 11, 8])
    _compare_module(k, t, (x, target), tol=1e-5)
    _compare_module(k.log_prob, t.log_prob, (x,), tol=1e-5, grads=False)
    _compare_module(k.predict, t.predict, (x,), grads=False)
    _check(_np(k(kn.tensor(x[0]), kn.tensor(target[0]))),
           _np(t(torch.tensor(x[0]), torch.tensor(target[0]))), "unbatched", 1e-5)  # fmt: skip
    with pytest.raises(RuntimeError, match="Target values should be in"):
        k(kn.tensor(x), kn.tensor(np.array([0, 1, 2, 3, 4, 5, 12])))
    with pytest.raises(ValueError, match="cutoffs"):
        kn.nn.AdaptiveLogSoftmaxWithLoss(8, 12, [6, 3])


def test_sync_batch_norm_in_one_process_is_batch_norm():
    t = torch.nn.SyncBatchNorm(3, momentum=0.2)
    k = kn.nn.SyncBatchNorm(3, momentum=0.2)
    assert repr(k) == repr(t)
    x = RNG.standard_normal((4, 3, 5)).astype(np.float32)
    _compare_module(k, t, (x,), tol=1e-5, modes=("eager",))
    np.testing.assert_allclose(k.running_var.numpy(), t.running_var.detach().numpy(), rtol=1e-5)
    k.eval(), t.eval()
    _compare_module(k, t, (x,), tol=1e-5, grads=False)
    net = kn.nn.SyncBatchNorm.convert_sync_batchnorm(
        kn.nn.Sequential(kn.nn.Linear(3, 3), kn.nn.BatchNorm1d(3)))  # fmt: skip
    assert type(net[1]) is kn.nn.SyncBatchNorm and type(net[0]) is kn.nn.Linear


def test_cross_map_lrn2d_matches_torch():
    x = RNG.standard_normal((2, 7, 3, 4)).astype(np.float32)
    for size in (1, 2, 3, 4, 5, 9):
        t = torch.nn.CrossMapLRN2d(size, 1e-2, 0.75, 1.5)
        k = kn.nn.CrossMapLRN2d(size, 1e-2, 0.75, 1.5)
        assert repr(k) == repr(t)
        modes = ("eager", "compile", "graph") if size == 3 else ("eager",)
        # torch's backward fails for size 1 (it narrows past its padded buffer)
        _compare_module(k, t, (x,), tol=1e-5, modes=modes, grads=size > 1)


def test_sync_batch_norm_on_two_ranks_is_batch_norm_of_the_whole_batch():
    """tests/dist_sync_bn_worker.py on 2 ranks (mpiexec; skipped where MPI is unavailable)."""
    from pathlib import Path

    from test_distributed import _skip_reason, assert_all_ok, run_ranks

    if _skip_reason() is not None:
        pytest.skip(_skip_reason())
    worker = Path(__file__).with_name("dist_sync_bn_worker.py")
    code, output, _ = run_ranks(2, script=worker)
    assert_all_ok(2, code, output)


def test_lazy_modules_load_a_state_dict_before_their_first_call():
    cases = [("LazyLinear(4)", (3, 6)), ("LazyConv2d(6, 3, groups=3)", (2, 3, 5, 5)),
             ("LazyConvTranspose1d(4, 2, groups=2)", (2, 6, 5)), ("LazyBatchNorm1d()", (4, 3)),
             ("LazyInstanceNorm2d()", (2, 3, 4, 4))]  # fmt: skip
    for text, shape in cases:
        x = RNG.standard_normal(shape).astype(np.float32)
        t = eval(text, vars(torch.nn))
        t(torch.tensor(x))
        k = eval(text, vars(kn.nn))
        _load(k, t)
        assert repr(k) == repr(t) and type(k).__name__ == type(t).__name__
        k.eval(), t.eval()
        _check(_np(k(kn.tensor(x))), _np(t(torch.tensor(x))), text, 1e-5)
