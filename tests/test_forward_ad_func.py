"""kn.autograd.forward_ad on modules (dual parameters through kn.func.functional_call) and
kn.func.jvp / jacfwd / jacrev / hessian against PyTorch 2.13 (torch.autograd.forward_ad and
torch.func: the oracle of every expected value, except where torch refuses, said there)."""

import numpy as np
import pytest
from test_forward_ad import _array, _np

import kiln as kn

torch = pytest.importorskip("torch")
fwAD = kn.autograd.forward_ad
tfwAD = torch.autograd.forward_ad


def _module_jvp(lib, ad, make, x_shape):
    """The tangent of a module's output with dual parameters and input (functional_call)."""
    lib.manual_seed(0)
    module = make(lib.nn)
    with lib.no_grad():
        for i, p in enumerate(module.parameters()):
            p.copy_(_array(lib, *p.shape, seed=40 + i).float() * 0.5)
    module.eval()
    x, v = _array(lib, *x_shape).float(), _array(lib, *x_shape, seed=3).float()
    with ad.dual_level():
        params = {n: ad.make_dual(p, _array(lib, *p.shape, seed=60 + i).float())
                  for i, (n, p) in enumerate(module.named_parameters())}  # fmt: skip
        out = lib.func.functional_call(module, params, (ad.make_dual(x, v),))
        out = out[0] if isinstance(out, tuple) else out
        return _np(ad.unpack_dual(out).tangent)


MODULES = {
    "mlp": (lambda nn: nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.Linear(8, 3)), (2, 4)),
    "conv": (lambda nn: nn.Sequential(nn.Conv2d(2, 3, 3, padding=1), nn.BatchNorm2d(3),
                                      nn.ReLU(), nn.MaxPool2d(2)), (1, 2, 4, 4)),
    "gru": (lambda nn: nn.GRU(3, 4), (5, 2, 3)),
    "norm_softmax": (lambda nn: nn.Sequential(nn.LayerNorm(4), nn.Linear(4, 2), nn.Softmax(-1)),
                     (3, 4)),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(MODULES))
def test_module_jvps(name):
    make, shape = MODULES[name]
    got, want = _module_jvp(kn, fwAD, make, shape), _module_jvp(torch, tfwAD, make, shape)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("make", [
    lambda nn: nn.LSTM(3, 4, batch_first=True),
    lambda nn: nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True),
], ids=["lstm", "transformer_layer"])  # fmt: skip
def test_module_jvps_torch_refuses(make):
    """Modules whose forward AD torch 2.13 refuses (mkldnn_rnn_layer, the CPU flash
    attention): the oracle is kiln's kn.func.jvp (reverse mode twice, another mechanism)."""
    shape = (2, 5, 3) if "LSTM" in repr(make(kn.nn)) else (2, 3, 8)
    got = _module_jvp(kn, fwAD, make, shape)
    kn.manual_seed(0)
    module = make(kn.nn)
    with kn.no_grad():
        for i, p in enumerate(module.parameters()):
            p.copy_(_array(kn, *p.shape, seed=40 + i).float() * 0.5)
    module.eval()
    names = [n for n, _ in module.named_parameters()]
    primals = [p.detach() for _, p in module.named_parameters()]
    tangents = [_array(kn, *p.shape, seed=60 + i).float() for i, p in enumerate(primals)]
    x, v = _array(kn, *shape).float(), _array(kn, *shape, seed=3).float()

    def f(x, *ps):
        out = kn.func.functional_call(module, dict(zip(names, ps)), (x,))
        return out[0] if isinstance(out, tuple) else out

    _, want = kn.func.jvp(f, (x, *primals), (v, *tangents))
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-4, atol=1e-5)


# -- kn.func.jvp and jacfwd (and jacrev's pytree outputs) against torch.func

_A = np.random.default_rng(1).standard_normal((3, 4))
_B = np.random.default_rng(2).standard_normal(4)
_V = np.random.default_rng(3).standard_normal((3, 4))
_W = np.random.default_rng(4).standard_normal(4)


def _leaves_np(value):
    if isinstance(value, dict):
        return [x for k in sorted(value) for x in _leaves_np(value[k])]
    if isinstance(value, (tuple, list)):
        return [x for v in value for x in _leaves_np(v)]
    return [np.asarray(value.detach().numpy() if hasattr(value, "detach") else value)]


FUNC_CASES = {
    "jvp_two_args": lambda lib: lib.func.jvp(lambda x, b: lib.tanh(x @ b).sum() * x,
                                             (lib.tensor(_A), lib.tensor(_B)),
                                             (lib.tensor(_V), lib.tensor(_W))),
    "jvp_tuple_output": lambda lib: lib.func.jvp(lambda x: (lib.sin(x), {"s": x.sum()}),
                                                 (lib.tensor(_A),), (lib.tensor(_V),)),
    "jvp_has_aux": lambda lib: lib.func.jvp(lambda x: (lib.sin(x).sum(), {"aux": x * 2}),
                                            (lib.tensor(_A),), (lib.tensor(_V),), has_aux=True),
    "jvp_of_grad": lambda lib: lib.func.jvp(lib.func.grad(lambda x: (lib.tanh(x) ** 2).sum()),
                                            (lib.tensor(_B),), (lib.tensor(_W),)),
    "jvp_inplace": lambda lib: lib.func.jvp(lambda x: x.clone().mul_(2).sin_()[1:],
                                            (lib.tensor(_B),), (lib.tensor(_W),)),
    "jacfwd": lambda lib: lib.func.jacfwd(lambda x: x @ x.t())(lib.tensor(_A)),
    "jacfwd_argnums": lambda lib: lib.func.jacfwd(lambda x, b: lib.tanh(x @ b),
                                                  argnums=(0, 1))(lib.tensor(_A), lib.tensor(_B)),
    "jacfwd_tuple_output": lambda lib: lib.func.jacfwd(lambda x: (x.sin(), x.cos().sum()))(
        lib.tensor(_B)),
    "jacfwd_has_aux": lambda lib: lib.func.jacfwd(lambda x: (x.exp(), x.sum()),
                                                  has_aux=True)(lib.tensor(_B)),
    "jacrev_dict_output": lambda lib: lib.func.jacrev(lambda x: {"a": x.sin(), "b": x @ x},
                                                      argnums=(0,))(lib.tensor(_B)),
    "jacfwd_of_jacrev": lambda lib: lib.func.jacfwd(lib.func.jacrev(
        lambda x: lib.tanh(x).sum()))(lib.tensor(_B)),
    "hessian": lambda lib: lib.func.hessian(lambda x: (x**3).sum() * x[0])(lib.tensor(_B)),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(FUNC_CASES))
def test_func_transforms(case):
    got, want = _leaves_np(FUNC_CASES[case](kn)), _leaves_np(FUNC_CASES[case](torch))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-9)


NESTED = {
    # kiln's eager jvp detached its results: jvp of jvp gave 0, grad of jvp raised
    "jvp_of_jvp": lambda lib: lib.func.jvp(
        lambda x: lib.func.jvp(lambda y: lib.sin(y) * y**2, (x,), (lib.tensor(_W),))[1],
        (lib.tensor(_B),), (lib.tensor(_B),)),
    "grad_of_jvp": lambda lib: lib.func.grad(
        lambda x: lib.func.jvp(lambda y: (lib.tanh(y) * y).sum(), (x,), (lib.tensor(_W),))[1]
    )(lib.tensor(_B)),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(NESTED))
def test_func_jvp_nested(case):
    got, want = NESTED[case](kn), NESTED[case](torch)
    for g, w in zip(_leaves_np(got), _leaves_np(want)):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-9)


def test_func_jvp_backward_through_requires_grad_primal():
    results = []
    for lib in (kn, torch):
        p = lib.tensor(_B, requires_grad=True)
        _, t = lib.func.jvp(lambda y: lib.exp(y) * y, (p,), (lib.tensor(_W),))
        t.sum().backward()
        results.append(p.grad.numpy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-6)
