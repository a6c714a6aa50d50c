"""float16 and bfloat16 reductions as PyTorch 2.13's CPU kernels compute them: sums and means
accumulate in float32 and round once (kiln's float16 sums along other than the last axis
added in float16: of a (5, 60, 40) tensor's sums over dim 0, 991 of 2,400 differed, over dim
1 168 of 200; so did autodiff's sums of a broadcast operand's gradient); products multiply
step by step in the dtype (kiln's bfloat16 ones were float32: 993 of 2,400 differed);
logsumexp goes step by step in the dtype (kiln's bfloat16 one was float32: 11 of 64 rows
differed) with PyTorch's gradient ct * exp(x - result) (before, 2,981 of 4,032 float16
gradients differed). Expected values: torch 2.13 on the same inputs."""

import numpy as np
import pytest

import kiln as kn

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(3)
X = RNG.normal(size=(5, 60, 40)).astype(np.float32) * 4
CT = RNG.normal(size=(64, 1)).astype(np.float32)
L = RNG.normal(size=(64, 63)).astype(np.float32)


def _both(fn, half):
    got = fn(kn, kn.tensor(X).to(getattr(kn, half)))
    want = fn(torch, torch.tensor(X).to(getattr(torch, half)))
    return got.float().numpy(), want.float().numpy()


CASES = {
    "sum0": lambda lib, x: x.sum(0),
    "sum1": lambda lib, x: x.sum(1, keepdim=True),
    "sum02": lambda lib, x: x.sum((0, 2)),
    "mean0": lambda lib, x: x.mean(0),
    "prod0": lambda lib, x: (x * 0.05 + 1).prod(0),
    "prod2": lambda lib, x: (x * 0.05 + 1).prod(2),
}


@pytest.mark.parametrize("half", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", list(CASES))
def test_half_reduction_is_torchs(name, half):
    got, want = _both(CASES[name], half)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("mode", ["eager", "compile"])
@pytest.mark.parametrize("half", ["float16", "bfloat16"])
def test_broadcast_operand_gradient_sums_in_float32(half, mode):
    """A bias's gradient: autodiff sums the cotangent over the broadcast dims."""
    grads = []
    for lib in (torch, kn):
        x = lib.tensor(X).to(getattr(lib, half))
        b = lib.zeros(40, dtype=x.dtype, requires_grad=True)
        fn = (
            (lambda v, w: v + w)
            if lib is torch or mode == "eager"
            else kn.compile(lambda v, w: v + w)
        )
        fn(x, b).backward(lib.tensor(X).to(x.dtype))
        grads.append(b.grad.float().numpy())
    np.testing.assert_array_equal(grads[1], grads[0])


@pytest.mark.parametrize("half", ["float16", "bfloat16"])
def test_half_logsumexp_is_torchs(half):
    out = []
    for lib in (torch, kn):
        x = lib.tensor(L).to(getattr(lib, half)).requires_grad_()
        y = lib.logsumexp(x, -1, keepdim=True)
        y.backward(lib.tensor(CT).to(x.dtype))
        out.append((y.detach().float().numpy(), x.grad.float().numpy()))
    np.testing.assert_array_equal(out[1][0], out[0][0])
    np.testing.assert_array_equal(out[1][1], out[0][1])


V = RNG.normal(size=(6, 7, 63)).astype(np.float32)


@pytest.mark.parametrize("half", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", ["var", "std"])
@pytest.mark.parametrize(
    "dim, keepdim, correction", [(-1, False, 1), (1, True, 0), (None, False, 1)]
)
def test_half_var_std_is_torchs(name, dim, keepdim, correction, half):
    """In float32 rounded once; the gradient PyTorch's var_backward (std's through
    ct / (2 std)) step by step in the dtype. Before, float16 var(-1) differed at 1,512 of
    4,032 broadcast values, its gradient at 506; std's at 882 and 1,051."""
    out = []
    for lib in (torch, kn):
        x = lib.tensor(V).to(getattr(lib, half)).requires_grad_()
        y = getattr(x, name)(dim=dim, keepdim=keepdim, correction=correction)
        ct = np.random.default_rng(1).normal(size=tuple(y.shape)).astype(np.float32)
        y.backward(lib.tensor(ct).to(x.dtype))
        out.append((y.detach().float().numpy(), x.grad.float().numpy()))
    np.testing.assert_array_equal(out[1][0], out[0][0])
    np.testing.assert_array_equal(out[1][1], out[0][1])
