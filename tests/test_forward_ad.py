"""kn.autograd.forward_ad (eager forward-mode AD: dual tensors) against PyTorch 2.13's
torch.autograd.forward_ad, the oracle of every expected value here: a table of ops, small
programs (an MLP's jvp, a Hessian-vector product forward-over-reverse, in-place ops and
views), levels, errors; and kn.func.jvp / jacfwd against torch.func."""

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
