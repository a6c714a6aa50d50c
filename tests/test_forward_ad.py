"""kn.autograd.forward_ad (eager forward-mode AD: dual tensors) against PyTorch 2.13's
torch.autograd.forward_ad, the oracle of every expected value here: a table of ops, small
programs (an MLP's jvp, a Hessian-vector product forward-over-reverse, in-place ops and
views, custom Functions), levels, errors. Modules and kn.func: test_forward_ad_func.py."""

import numpy as np
import pytest

import kiln as kn

torch = pytest.importorskip("torch")
fwAD = kn.autograd.forward_ad
tfwAD = torch.autograd.forward_ad
F, TF = kn.nn.functional, torch.nn.functional


def _both(fn, primals, tangents, lib):
    """(primal, tangent) of fn's output(s) on duals of `primals` moving along `tangents`."""
    ad = fwAD if lib is kn else tfwAD
    with ad.dual_level():
        duals = [ad.make_dual(lib.tensor(p), lib.tensor(t)) for p, t in zip(primals, tangents)]
        out = fn(*duals)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        found = []
        for o in outs:
            p, t = ad.unpack_dual(o)
            found.append((p.detach().numpy().copy(), None if t is None else t.detach().numpy()))
    return found


def _check(kfn, tfn, shapes, seed=0, positive=False, rtol=1e-5, atol=1e-6):
    rng = np.random.default_rng(seed)
    primals = [rng.standard_normal(s) for s in shapes]
    if positive:
        primals = [np.abs(p) + 0.5 for p in primals]
    tangents = [rng.standard_normal(s) for s in shapes]
    got = _both(kfn, primals, tangents, kn)
    want = _both(tfn, primals, tangents, torch)
    assert len(got) == len(want)
    for (gp, gt), (wp, wt) in zip(got, want):
        np.testing.assert_allclose(gp, wp, rtol=rtol, atol=atol)
        if wt is None:
            assert gt is None
        else:
            assert gt is not None
            np.testing.assert_allclose(gt, wt, rtol=rtol, atol=atol)


def _same(name):
    """An op that kiln and torch spell alike: kn.name / torch.name."""
    return getattr(kn, name), getattr(torch, name)


# name: (kiln fn, torch fn, input shapes, positive inputs)
OPS = {
    "add": (lambda a, b: a + b, lambda a, b: a + b, [(3, 4), (4,)], False),
    "sub_scalar": (lambda a: 2.0 - a, lambda a: 2.0 - a, [(3,)], False),
    "mul": (lambda a, b: a * b, lambda a, b: a * b, [(3, 4), (3, 1)], False),
    "div": (lambda a, b: a / b, lambda a, b: a / b, [(5,), (5,)], True),
    "pow": (lambda a, b: a**b, lambda a, b: a**b, [(4,), (4,)], True),
    "pow_scalar": (lambda a: a**3, lambda a: a**3, [(4,)], False),
    "exp": (*_same("exp"), [(2, 3)], False),
    "log": (*_same("log"), [(5,)], True),
    "sqrt": (*_same("sqrt"), [(5,)], True),
    "sin": (*_same("sin"), [(5,)], False),
    "cos": (*_same("cos"), [(5,)], False),
    "tanh": (*_same("tanh"), [(5,)], False),
    "sigmoid": (*_same("sigmoid"), [(5,)], False),
    "abs": (*_same("abs"), [(5,)], False),
    "neg": (lambda a: -a, lambda a: -a, [(5,)], False),
    "maximum": (*_same("maximum"), [(6,), (6,)], False),
    "where": (
        lambda a, b: kn.where(a > 0, a, b),
        lambda a, b: torch.where(a > 0, a, b),
        [(6,), (6,)],
        False,
    ),  # fmt: skip
    "clamp": (lambda a: a.clamp(-0.5, 0.5), lambda a: a.clamp(-0.5, 0.5), [(8,)], False),
    "sum": (lambda a: a.sum(), lambda a: a.sum(), [(3, 4)], False),
    "sum_dim": (
        lambda a: a.sum(1, keepdim=True),
        lambda a: a.sum(1, keepdim=True),
        [(3, 4)],
        False,
    ),  # fmt: skip
    "mean": (lambda a: a.mean(0), lambda a: a.mean(0), [(3, 4)], False),
    "prod": (lambda a: a.prod(), lambda a: a.prod(), [(4,)], True),
    "amax": (lambda a: a.amax(1), lambda a: a.amax(1), [(3, 4)], False),
    "max_dim": (lambda a: a.max(1).values, lambda a: a.max(1).values, [(3, 4)], False),
    "logsumexp": (lambda a: kn.logsumexp(a, 1), lambda a: torch.logsumexp(a, 1), [(3, 4)], False),
    "cumsum": (lambda a: a.cumsum(0), lambda a: a.cumsum(0), [(5,)], False),
    "var": (lambda a: a.var(1), lambda a: a.var(1), [(3, 4)], False),
    "norm": (lambda a: a.norm(), lambda a: a.norm(), [(3, 4)], False),
    "matmul": (lambda a, b: a @ b, lambda a, b: a @ b, [(3, 4), (4, 2)], False),
    "matmul_batched": (lambda a, b: a @ b, lambda a, b: a @ b, [(2, 3, 4), (2, 4, 5)], False),
    "matvec": (lambda a, b: a @ b, lambda a, b: a @ b, [(3, 4), (4,)], False),
    "einsum": (
        lambda a, b: kn.einsum("ij,jk->ik", a, b),
        lambda a, b: torch.einsum("ij,jk->ik", a, b),
        [(2, 3), (3, 2)],
        False,
    ),  # fmt: skip
    "transpose": (lambda a: a.t(), lambda a: a.t(), [(3, 4)], False),
    "permute": (lambda a: a.permute(2, 0, 1), lambda a: a.permute(2, 0, 1), [(2, 3, 4)], False),
    "reshape": (lambda a: a.reshape(4, 3), lambda a: a.reshape(4, 3), [(3, 4)], False),
    "view": (lambda a: a.view(-1), lambda a: a.view(-1), [(3, 4)], False),
    "slice": (lambda a: a[1:, ::2], lambda a: a[1:, ::2], [(3, 4)], False),
    "index_int": (lambda a: a[1], lambda a: a[1], [(3, 4)], False),
    "index_tensor": (
        lambda a: a[kn.tensor([2, 0, 2])],
        lambda a: a[torch.tensor([2, 0, 2])],
        [(3, 4)],
        False,
    ),  # fmt: skip
    "expand": (lambda a: a.expand(3, 4), lambda a: a.expand(3, 4), [(1, 4)], False),
    "unsqueeze": (
        lambda a: a.unsqueeze(0).squeeze(0),
        lambda a: a.unsqueeze(0).squeeze(0),
        [(3,)],
        False,
    ),  # fmt: skip
    "cat": (
        lambda a, b: kn.cat([a, b], 0),
        lambda a, b: torch.cat([a, b], 0),
        [(2, 3), (1, 3)],
        False,
    ),  # fmt: skip
    "stack": (
        lambda a, b: kn.stack([a, b], 1),
        lambda a, b: torch.stack([a, b], 1),
        [(2, 3), (2, 3)],
        False,
    ),  # fmt: skip
    "flip": (lambda a: a.flip(0), lambda a: a.flip(0), [(4,)], False),
    "gather": (
        lambda a: a.gather(1, kn.tensor([[0, 2], [1, 1]])),
        lambda a: a.gather(1, torch.tensor([[0, 2], [1, 1]])),
        [(2, 3)],
        False,
    ),
    "sort": (lambda a: kn.sort(a).values, lambda a: torch.sort(a).values, [(5,)], False),
    "topk": (lambda a: kn.topk(a, 2).values, lambda a: torch.topk(a, 2).values, [(5,)], False),
    "floor": (*_same("floor"), [(4,)], False),  # a zero tangent
    "argmax": (*_same("argmax"), [(4,)], False),  # an integer result: no tangent
    "gt": (lambda a: a > 0, lambda a: a > 0, [(4,)], False),
    "clone": (lambda a: a.clone(), lambda a: a.clone(), [(3,)], False),
    "contiguous": (lambda a: a.t().contiguous(), lambda a: a.t().contiguous(), [(2, 3)], False),
    "to_float32": (lambda a: a.float(), lambda a: a.float(), [(3,)], False),
    "linear": (F.linear, TF.linear, [(2, 3), (4, 3), (4,)], False),
    "linear_3d": (F.linear, TF.linear, [(2, 5, 3), (4, 3), (4,)], False),
    "conv2d": (
        lambda x, w, b: F.conv2d(x, w, b, padding=1),
        lambda x, w, b: TF.conv2d(x, w, b, padding=1),
        [(1, 2, 5, 5), (3, 2, 3, 3), (3,)],
        False,
    ),  # fmt: skip
    "softmax": (lambda a: F.softmax(a, -1), lambda a: TF.softmax(a, -1), [(3, 4)], False),
    "log_softmax": (
        lambda a: F.log_softmax(a, 1),
        lambda a: TF.log_softmax(a, 1),
        [(3, 4)],
        False,
    ),  # fmt: skip
    "relu": (F.relu, TF.relu, [(6,)], False),
    "gelu": (F.gelu, TF.gelu, [(6,)], False),
    "silu": (F.silu, TF.silu, [(6,)], False),
    "layer_norm": (
        lambda x, w, b: F.layer_norm(x, (4,), w, b),
        lambda x, w, b: TF.layer_norm(x, (4,), w, b),
        [(3, 4), (4,), (4,)],
        False,
    ),
    "mse_loss": (F.mse_loss, TF.mse_loss, [(3, 4), (3, 4)], False),
    "cross_entropy": (
        lambda x: F.cross_entropy(x, kn.tensor([0, 2, 1])),
        lambda x: TF.cross_entropy(x, torch.tensor([0, 2, 1])),
        [(3, 4)],
        False,
    ),
}


@pytest.mark.parametrize("name", sorted(OPS))
def test_op_table(name):
    kfn, tfn, shapes, positive = OPS[name]
    _check(kfn, tfn, shapes, positive=positive)


# A broader table: name -> (fn(lib, *inputs), input shapes). (torch refuses forward AD of
# cdist, which kiln computes: not compared.)
MORE_OPS = {
    "index_select": (lambda lib, a: a.index_select(0, lib.tensor([2, 0])), [(3, 4)]),
    "masked_fill": (lambda lib, a: a.masked_fill(a > 0, 1.0), [(3, 4)]),
    "scatter_add": (
        lambda lib, a, b: a.scatter_add(1, lib.tensor([[0, 1, 1, 2]] * 3), b),
        [(3, 4), (3, 4)],
    ),
    "cumprod": (lambda lib, a: a.cumprod(1), [(3, 4)]),
    "embedding": (lambda lib, w: lib.nn.functional.embedding(lib.tensor([1, 0, 2]), w), [(3, 4)]),
    "max_pool2d": (lambda lib, a: lib.nn.functional.max_pool2d(a, 2), [(1, 2, 4, 4)]),
    "avg_pool2d": (lambda lib, a: lib.nn.functional.avg_pool2d(a, 2), [(1, 2, 4, 4)]),
    "batch_norm_train": (
        lambda lib, a, w, b: lib.nn.functional.batch_norm(a, None, None, w, b, training=True),
        [(4, 3), (3,), (3,)],
    ),
    "interpolate": (
        lambda lib, a: lib.nn.functional.interpolate(a, scale_factor=2, mode="bilinear"),
        [(1, 1, 3, 3)],
    ),
    "lerp": (lambda lib, a, b: lib.lerp(a, b, 0.3), [(4,), (4,)]),
    "addmm": (lambda lib, c, a, b: lib.addmm(c, a, b), [(2, 2), (2, 3), (3, 2)]),
    "baddbmm": (lambda lib, c, a, b: lib.baddbmm(c, a, b), [(2, 2, 2), (2, 2, 3), (2, 3, 2)]),
    "outer": (lambda lib, a, b: lib.outer(a, b), [(3,), (2,)]),
    "trace": (lambda lib, a: lib.trace(a), [(3, 3)]),
    "diag": (lambda lib, a: lib.diag(a), [(3, 3)]),
    "diagonal": (lambda lib, a: a.diagonal(), [(3, 3)]),
    "tril": (lambda lib, a: lib.tril(a), [(3, 3)]),
    "roll": (lambda lib, a: lib.roll(a, 1, 0), [(4,)]),
    "repeat": (lambda lib, a: a.repeat(2, 1), [(2, 3)]),
    "chunk": (lambda lib, a: a.chunk(2, 0), [(4, 3)]),
    "split": (lambda lib, a: a.split([1, 3], 0), [(4, 3)]),
    "unbind": (lambda lib, a: a.unbind(1), [(2, 3)]),
    "narrow": (lambda lib, a: a.narrow(1, 1, 2), [(2, 3)]),
    "select": (lambda lib, a: a.select(1, 2), [(2, 3)]),
    "movedim": (lambda lib, a: a.movedim(0, 2), [(2, 3, 4)]),
    "atan2": (lambda lib, a, b: lib.atan2(a, b), [(4,), (4,)]),
    "erf": (lambda lib, a: lib.erf(a), [(4,)]),
    "lgamma": (lambda lib, a: lib.lgamma(a.abs() + 1), [(4,)]),
    "logaddexp": (lambda lib, a, b: lib.logaddexp(a, b), [(4,), (4,)]),
    "softplus": (lambda lib, a: lib.nn.functional.softplus(a), [(4,)]),
    "elu": (lambda lib, a: lib.nn.functional.elu(a), [(4,)]),
    "leaky_relu": (lambda lib, a: lib.nn.functional.leaky_relu(a, 0.1), [(4,)]),
    "hardtanh": (lambda lib, a: lib.nn.functional.hardtanh(a), [(4,)]),
    "log1p": (lambda lib, a: lib.log1p(a.abs()), [(4,)]),
    "rsqrt": (lambda lib, a: lib.rsqrt(a.abs() + 1), [(4,)]),
    "std": (lambda lib, a: a.std(0), [(3, 4)]),
    "linalg_norm": (lambda lib, a: lib.linalg.norm(a), [(3, 4)]),
    "solve": (
        lambda lib, a, b: lib.linalg.solve(a + 3 * lib.eye(3, dtype=a.dtype), b),
        [(3, 3), (3,)],
    ),
    "det": (lambda lib, a: lib.linalg.det(a), [(3, 3)]),
    "inv": (lambda lib, a: lib.linalg.inv(a + 3 * lib.eye(3, dtype=a.dtype)), [(3, 3)]),
    "cholesky": (
        lambda lib, a: lib.linalg.cholesky(a @ a.mT + lib.eye(3, dtype=a.dtype)),
        [(3, 3)],
    ),
    "eigh_vals": (lambda lib, a: lib.linalg.eigvalsh(a + a.mT), [(3, 3)]),
    "svdvals": (lambda lib, a: lib.linalg.svdvals(a), [(3, 3)]),
    "qr_r": (lambda lib, a: lib.linalg.qr(a)[1], [(3, 3)]),
    "fft": (lambda lib, a: lib.fft.rfft(a).abs(), [(8,)]),
    "dropout_eval": (lambda lib, a: lib.nn.functional.dropout(a, 0.5, training=False), [(4,)]),
    "group_norm": (lambda lib, a: lib.nn.functional.group_norm(a, 2), [(2, 4, 3)]),
    "conv1d": (lambda lib, a, w: lib.nn.functional.conv1d(a, w), [(1, 2, 6), (3, 2, 3)]),
    "conv_transpose2d": (
        lambda lib, a, w: lib.nn.functional.conv_transpose2d(a, w),
        [(1, 2, 3, 3), (2, 3, 2, 2)],
    ),
    "sdpa": (
        lambda lib, q, k, v: lib.nn.functional.scaled_dot_product_attention(q, k, v),
        [(1, 3, 4), (1, 3, 4), (1, 3, 4)],
    ),
    "nll_loss": (
        lambda lib, a: lib.nn.functional.nll_loss(lib.log_softmax(a, 1), lib.tensor([0, 2, 1])),
        [(3, 4)],
    ),
    "bce_logits": (
        lambda lib, a, b: lib.nn.functional.binary_cross_entropy_with_logits(a, b.sigmoid()),
        [(4,), (4,)],
    ),
    "complex_mul": (lambda lib, a: (lib.view_as_complex(a) * (1 + 2j)).abs(), [(3, 2)]),
    "where_scalar": (lambda lib, a: lib.where(a > 0, a, 0.0), [(4,)]),
    "clamp_min_t": (lambda lib, a, b: lib.clamp(a, min=b), [(4,), (4,)]),
    "pad": (lambda lib, a: lib.nn.functional.pad(a, (1, 2)), [(2, 3)]),
    "flatten": (lambda lib, a: a.flatten(), [(2, 3)]),
    "expand_as_sum": (lambda lib, a, b: (a.expand_as(b) * b).sum(), [(1, 3), (2, 3)]),
    "einsum_batch": (lambda lib, a, b: lib.einsum("bij,bjk->bik", a, b), [(2, 2, 3), (2, 3, 2)]),
    "kthvalue": (lambda lib, a: lib.kthvalue(a, 2).values, [(5,)]),
    "median": (lambda lib, a: a.median(), [(5,)]),
    "max_all": (lambda lib, a: a.max(), [(5,)]),
    "cummax": (lambda lib, a: lib.cummax(a, 0).values, [(5,)]),
}


@pytest.mark.parametrize("name", sorted(MORE_OPS))
def test_more_ops(name):
    fn, shapes = MORE_OPS[name]
    _check(lambda *a: fn(kn, *a), lambda *a: fn(torch, *a), shapes)


@pytest.mark.parametrize("name", sorted(OPS) + sorted(MORE_OPS))
def test_ops_on_the_tape(name, monkeypatch):
    """The same tangents by the tape's rules (what runs where a tangent's ops are recorded)
    as by the compiled jvp (what runs otherwise)."""
    from kiln.eager import forward_ad

    monkeypatch.setattr(forward_ad, "_program", lambda *args: None)
    if name in OPS:
        kfn, tfn, shapes, positive = OPS[name]
        _check(kfn, tfn, shapes, positive=positive)
    else:
        fn, shapes = MORE_OPS[name]
        _check(lambda *a: fn(kn, *a), lambda *a: fn(torch, *a), shapes)


# -- programs: each runs on kiln and on torch (`lib`, `ad`: the library and its forward_ad)
# and returns named values (None: no tangent), compared one by one


def _np(t):
    return None if t is None else t.detach().numpy().copy()


def _programs_agree(prog, rtol=1e-6, atol=1e-7):
    got, want = prog(kn, fwAD), prog(torch, tfwAD)
    assert got.keys() == want.keys()
    for key in want:
        if want[key] is None:
            assert got[key] is None, key
        else:
            assert got[key] is not None, key
            np.testing.assert_allclose(got[key], want[key], rtol=rtol, atol=atol, err_msg=key)


def _array(lib, *shape, seed=0):
    rng = np.random.default_rng(seed + 7 * len(shape) + sum(shape))
    return lib.tensor(rng.standard_normal(shape))


def _mlp_weights(lib):
    return [_array(lib, 8, 4, seed=1), _array(lib, 8, seed=2), _array(lib, 3, 8, seed=3),
            _array(lib, 3, seed=4)]  # fmt: skip


def _mlp(lib, x, w1, b1, w2, b2):
    f = lib.nn.functional
    return f.linear(lib.tanh(f.linear(x, w1, b1)), w2, b2)


def prog_mlp_jvp(lib, ad):
    """The jvp of an MLP in its input and in its weights at once."""
    ws = _mlp_weights(lib)
    with ad.dual_level():
        x = ad.make_dual(_array(lib, 5, 4), _array(lib, 5, 4, seed=9))
        duals = [ad.make_dual(w, _array(lib, *w.shape, seed=11 + i)) for i, w in enumerate(ws)]
        y, t = ad.unpack_dual(lib.nn.functional.softmax(_mlp(lib, x, *duals), -1))
        return {"y": _np(y), "t": _np(t)}


def prog_module_jvp(lib, ad):
    """A module's forward on a dual input (its parameters not dual)."""
    lib.manual_seed(0)
    layers = lib.nn.Sequential(lib.nn.Linear(4, 6), lib.nn.ReLU(), lib.nn.LayerNorm(6),
                               lib.nn.Linear(6, 2))  # fmt: skip
    with lib.no_grad():
        for i, p in enumerate(layers.parameters()):
            p.copy_(_array(lib, *p.shape, seed=20 + i).float())
    with ad.dual_level():
        x = ad.make_dual(_array(lib, 3, 4).float(), _array(lib, 3, 4, seed=5).float())
        y, t = ad.unpack_dual(layers(x))
        return {"y": _np(y), "t": _np(t), "requires_grad": np.array(y.requires_grad)}


def prog_hvp_forward_over_reverse(lib, ad):
    """A Hessian-vector product: the tangent of a gradient (backward run under a level)."""
    ws = [w.requires_grad_() for w in _mlp_weights(lib)]
    x = _array(lib, 5, 4)
    v = [_array(lib, *w.shape, seed=30 + i) for i, w in enumerate(ws)]
    with ad.dual_level():
        duals = [ad.make_dual(w, t) for w, t in zip(ws, v)]
        loss = (_mlp(lib, x, *duals) ** 2).mean()
        grads = lib.autograd.grad(loss, ws)
        found = {f"g{i}": _np(ad.unpack_dual(g).primal) for i, g in enumerate(grads)}
        found.update({f"hv{i}": _np(ad.unpack_dual(g).tangent) for i, g in enumerate(grads)})
        return found


def prog_reverse_over_forward(lib, ad):
    """Backward through a tangent: the gradient of <jvp, 1> in the primal and the tangent."""
    p = _array(lib, 4).requires_grad_()
    v = _array(lib, 4, seed=3).requires_grad_()
    with ad.dual_level():
        x = ad.make_dual(p, v)
        y = lib.sin(x) * x.exp() + (x * x).sum()
        _, t = ad.unpack_dual(y)
        (t * lib.arange(4.0)).sum().backward()
        return {"t": _np(t), "p.grad": _np(p.grad), "v.grad": _np(v.grad)}


def prog_backward_through_dual(lib, ad):
    """A dual tensor in a graph that is backpropagated: gradients as without tangents."""
    p = _array(lib, 3, 3).requires_grad_()
    with ad.dual_level():
        x = ad.make_dual(p, _array(lib, 3, 3, seed=1))
        (lib.tanh(x @ x).sum()).backward()
        return {"p.grad": _np(p.grad)}


def prog_no_grad(lib, ad):
    with lib.no_grad(), ad.dual_level():
        x = ad.make_dual(_array(lib, 4), _array(lib, 4, seed=1))
        y, t = ad.unpack_dual(lib.exp(x) @ x)
        return {"y": _np(y), "t": _np(t), "grad": np.array(t.requires_grad)}


def prog_inplace_views(lib, ad):
    """In-place ops on duals and their views, and duals written into plain tensors."""
    found = {}
    with ad.dual_level():
        x = ad.make_dual(_array(lib, 4), _array(lib, 4, seed=1))
        y = x * 1.0
        y.mul_(x).add_(2.0)  # in place on a dual
        found["y"] = _np(ad.unpack_dual(y).tangent)
        z = ad.make_dual(_array(lib, 3, 4, seed=2), _array(lib, 3, 4, seed=3))
        row = z[1]  # a view: its tangent is a view of z's
        row.mul_(x)  # reaches z's tangent
        found["z"] = _np(ad.unpack_dual(z).tangent)
        z.t()[0].sin_()  # a view's view, in place
        found["z2"] = _np(ad.unpack_dual(z).tangent)
        found["row"] = _np(ad.unpack_dual(row).tangent)  # sees z's change
        plain = lib.zeros(6)
        part = plain[1:5]  # a view of a tensor that is not dual
        part.copy_(x)  # the base gets a tangent
        found["plain"] = _np(ad.unpack_dual(plain).tangent)
        found["part"] = _np(ad.unpack_dual(part).tangent)
        w = lib.zeros(3, 4)
        w[0] = x  # setitem of a dual
        w[2, 1:3] = 5.0  # and of a constant into a dual
        found["w"] = _np(ad.unpack_dual(w).tangent)
        u = ad.make_dual(_array(lib, 4, seed=4), _array(lib, 4, seed=5))
        u[1] = 0.0
        u.relu_()
        found["u"] = _np(ad.unpack_dual(u).tangent)
        v = ad.make_dual(_array(lib, 2, 3, seed=6), _array(lib, 2, 3, seed=7))
        v.transpose(0, 1).reshape(-1)  # views, unused
        flat = v.view(-1)
        flat[::2] *= 3.0
        found["v"] = _np(ad.unpack_dual(v).tangent)
        found["v.sum"] = _np(ad.unpack_dual(v.sum(0)).tangent)
    return found


def prog_int_and_nondiff(lib, ad):
    with ad.dual_level():
        x = ad.make_dual(_array(lib, 5), _array(lib, 5, seed=1))
        found = {
            "floor": _np(ad.unpack_dual(lib.floor(x)).tangent),
            "argmax": _np(ad.unpack_dual(x.argmax()).tangent),
            "long": _np(ad.unpack_dual(x.long()).tangent),
            "detach": _np(ad.unpack_dual(x.detach()).tangent),
            "data": _np(ad.unpack_dual(x.data).tangent),
            "item_sum": np.array((x * 2).sum().item()),
        }
    return found


@pytest.mark.parametrize("prog", [
    prog_mlp_jvp, prog_module_jvp, prog_hvp_forward_over_reverse, prog_reverse_over_forward,
    prog_backward_through_dual, prog_no_grad, prog_inplace_views, prog_int_and_nondiff,
], ids=lambda p: p.__name__[5:])  # fmt: skip
def test_programs(prog):
    _programs_agree(prog, rtol=1e-5, atol=1e-6)


# -- levels and errors, as torch's (its exception types: RuntimeError, ValueError)


def _raises_like(kfn, tfn):
    with pytest.raises(Exception) as want:
        tfn()
    with pytest.raises(want.type) as got:
        kfn()
    # the message starts as torch's
    assert str(got.value).startswith(str(want.value)[:40]), (got.value, want.value)


def test_make_dual_outside_a_level():
    _raises_like(lambda: fwAD.make_dual(kn.ones(2), kn.ones(2)),
                 lambda: tfwAD.make_dual(torch.ones(2), torch.ones(2)))  # fmt: skip


def test_unpack_dual_outside_a_level():
    t = kn.ones(2)
    primal, tangent = fwAD.unpack_dual(t)
    assert primal is t and tangent is None


@pytest.mark.parametrize("case", ["shape", "int_primal", "int_tangent", "dual_tangent",
                                  "dual_primal", "level", "nested"])  # fmt: skip
def test_refusals_inside_a_level(case):
    def run(lib, ad):
        x = ad.make_dual(lib.ones(2), lib.ones(2))
        ones = lib.ones(2)
        return {
            "shape": lambda: ad.make_dual(lib.ones(2), lib.ones(3)),
            "int_primal": lambda: ad.make_dual(lib.ones(2, dtype=lib.int64), ones),
            "int_tangent": lambda: ad.make_dual(ones, lib.ones(2, dtype=lib.int64)),
            "dual_tangent": lambda: ad.make_dual(ones, x),
            "dual_primal": lambda: ad.make_dual(x, ones),
            "level": lambda: ad.make_dual(ones, ones, level=5),
            "nested": ad.enter_dual_level,
        }[case]

    with fwAD.dual_level(), tfwAD.dual_level():
        _raises_like(run(kn, fwAD), run(torch, tfwAD))


def test_exit_refusals():
    _raises_like(fwAD.exit_dual_level, tfwAD.exit_dual_level)  # no level
    with fwAD.dual_level(), tfwAD.dual_level():
        _raises_like(lambda: fwAD.exit_dual_level(level=3),
                     lambda: tfwAD.exit_dual_level(level=3))  # fmt: skip


def test_levels_and_unpacking():
    p, t = kn.tensor([1.0, 2.0]), kn.tensor([3.0, 4.0])
    with fwAD.dual_level() as level:
        assert level == 0
        x = fwAD.make_dual(p, t)
        assert x._base is p and not x.requires_grad  # a view of the primal, as torch's
        unpacked = fwAD.unpack_dual(x)
        assert type(unpacked).__name__ == "UnpackedDualTensor"
        assert unpacked.tangent is t  # the tangent as given
        assert fwAD.unpack_dual(unpacked.primal).tangent is None  # the primal is not dual
        assert fwAD.unpack_dual(p).tangent is None
        assert repr(x) == "tensor([1., 2.], tangent=tensor([3., 4.]))"  # torch's form
        y = x * x
        transposed = fwAD.make_dual(kn.ones(2, 3), kn.ones(3, 2).t())
        # a tangent laid out otherwise than its primal is copied in the primal's layout
        assert fwAD.unpack_dual(transposed).tangent.stride() == (3, 1)
    assert fwAD.unpack_dual(y).tangent is None and fwAD.unpack_dual(x).tangent is None
    assert repr(y) == "tensor([1., 4.])"
    # the eager paths are back: a plain result is plain again
    assert (kn.ones(2) + 1)._meta is None

    @fwAD.dual_level()
    def decorated():
        return fwAD.unpack_dual(fwAD.make_dual(kn.ones(1), kn.ones(1)) * 3).tangent

    np.testing.assert_array_equal(decorated().numpy(), [3.0])


def test_error_inside_a_level_leaves_it():
    with pytest.raises(ZeroDivisionError), fwAD.dual_level():
        1 / 0
    assert fwAD._level == -1
    with fwAD.dual_level():  # a new one can be entered
        pass


def test_import_path():
    import kiln.autograd.forward_ad as imported

    assert imported is fwAD


def prog_tangents_not_shared(lib, ad):
    """A result's tangent is its own: changing the result in place leaves the input's."""
    with ad.dual_level():
        x = ad.make_dual(_array(lib, 4), _array(lib, 4, seed=1))
        y = x + 1.0  # (its tangent equals x's)
        y.mul_(3.0)
        z = x.clone()
        z.pow_(2)
        w = lib.ones(4, requires_grad=True) * x
        found = {"x": x, "y": y, "z": z, "w": w}
        return {k: _np(ad.unpack_dual(v).tangent) for k, v in found.items()}


def prog_custom_function(lib, ad):
    """A custom Function's tangents are its jvp's (PyTorch's: zeros for a tensor argument
    that is not dual, None for a number)."""

    class Mul(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, y, k):
            ctx.save_for_forward(x, y)
            return x * y * k, x + y

        @staticmethod
        def jvp(ctx, tx, ty, tk):
            x, y = ctx.saved_tensors
            assert tk is None
            return tx * y + x * ty, tx + ty

        @staticmethod
        def backward(ctx, g, h):
            return None, None, None

    with ad.dual_level():
        x = ad.make_dual(_array(lib, 3), _array(lib, 3, seed=1))
        a, b = Mul.apply(x, _array(lib, 3, seed=2), 2.0)
        return {"a": _np(ad.unpack_dual(a).tangent), "b": _np(ad.unpack_dual(b).tangent)}


def prog_compiled(lib, ad):
    """A compiled function called on a dual tensor: kiln runs it eagerly under a level (the
    oracle: torch's eager function; torch.compile'd, torch 2.13 gives no tangent)."""
    fn = lib.compile(lambda a: lib.sin(a) * a) if lib is kn else (lambda a: lib.sin(a) * a)
    with ad.dual_level():
        x = ad.make_dual(_array(lib, 3), _array(lib, 3, seed=1))
        return {"t": _np(ad.unpack_dual(fn(x)).tangent)}


@pytest.mark.parametrize("prog", [prog_tangents_not_shared, prog_custom_function, prog_compiled],
                         ids=lambda p: p.__name__[5:])  # fmt: skip
def test_more_programs(prog):
    _programs_agree(prog)


def test_custom_function_without_jvp():
    class Square(kn.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * x

        @staticmethod
        def backward(ctx, g):
            return g

    class TorchSquare(torch.autograd.Function):
        forward, backward = Square.forward, Square.backward

    with fwAD.dual_level(), tfwAD.dual_level():
        x = fwAD.make_dual(kn.ones(2), kn.ones(2))
        tx = tfwAD.make_dual(torch.ones(2), torch.ones(2))
        _raises_like(lambda: Square.apply(x), lambda: TorchSquare.apply(tx))
        assert fwAD.unpack_dual(Square.apply(kn.ones(2))).tangent is None  # not dual: runs


def prog_inplace_view_methods(lib, ad):
    """In-place view methods take the tangent along (t_, unsqueeze_...); detach_ drops it."""
    with ad.dual_level():
        y = ad.make_dual(_array(lib, 2, 3), _array(lib, 2, 3, seed=1)) * 1.0
        y.t_()
        y.unsqueeze_(0)
        y.mul_(lib.arange(2.0))
        found = {
            "y": _np(ad.unpack_dual(y).tangent),
            "y.sum": _np(ad.unpack_dual(y.sum(1)).tangent),
        }
        z = y * 2.0
        z.detach_()
        found["z"] = _np(ad.unpack_dual(z).tangent)
        return found


def test_inplace_view_methods():
    _programs_agree(prog_inplace_view_methods)
