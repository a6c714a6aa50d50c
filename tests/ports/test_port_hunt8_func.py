"""Ports of PyTorch's torch.func tutorials: "Jacobians, Hessians, hvp, vhp, and more" and
"Neural Tangent Kernels" (the per-sample-gradients and model-ensembling tutorials are in
test_port_hunt2.py), each program written once against a module argument `torch` and run
with PyTorch and with kiln (`import kiln as kn`) on the same inputs.

Tolerances: float32 values of tanh-of-linear maps of 8 to 16 inputs, and of a small CNN
(a few hundred products per value), summed in another order in each framework: rtol 1e-4
with atol 1e-6 for values of order one (float32 rounding compounds to about 1e-6 relative
per op chain; a jacobian or NTK entry is such a chain of a few dozen ops).
"""

import numpy as np
import pytest
from port_common import copy_weights, to_numpy
from test_port_hunt8 import assert_tree_close

import kiln as kn

TOL = {"rtol": 1e-4, "atol": 1e-6}
D = 8
RNG = np.random.default_rng(8)
W, B, X = (RNG.normal(size=s).astype(np.float32) for s in ((D, D), (D,), (D,)))
XB = RNG.normal(size=(5, D)).astype(np.float32)


def jacobians_program(torch, which):
    func, F = torch.func, torch.nn.functional
    w, b, x, xb = (torch.from_numpy(a.copy()) for a in (W, B, X, XB))

    def predict(weight, bias, x):
        return F.linear(x, weight, bias).tanh()

    def hvp(f, primals, tangents):  # forward over reverse
        return func.jvp(func.grad(f), primals, tangents)[1]

    def hvp_revrev(f, primals, tangents):  # reverse over reverse
        _, vjp_fn = func.vjp(lambda x: func.vjp(f, x)[1](torch.ones(()))[0], *primals)
        return vjp_fn(*tangents)

    def f(x):
        return x.sin().sum()

    programs = {
        "jacrev": lambda: func.jacrev(predict, argnums=2)(w, b, x),
        "jacfwd": lambda: func.jacfwd(predict, argnums=2)(w, b, x),
        "jacrev_weight_bias": lambda: func.jacrev(predict, argnums=(0, 1))(w, b, x),
        "vjp": lambda: func.vjp(lambda x: predict(w, b, x), x)[1](torch.ones(D)),
        "jvp": lambda: func.jvp(lambda x: predict(w, b, x), (x,), (torch.ones(D),)),
        "batch_jacobian": lambda: func.vmap(func.jacrev(predict, argnums=2),
                                            in_dims=(None, None, 0))(w, b, xb),  # fmt: skip
        "summed_jacobian": lambda: func.jacrev(
            lambda w, b, x: predict(w, b, x).sum(0), argnums=2)(w, b, xb).movedim(1, 0),
        "hessian": lambda: func.hessian(predict, argnums=2)(w, b, x),
        "jacfwd_jacrev": lambda: func.jacfwd(func.jacrev(predict, argnums=2), argnums=2)(w, b, x),
        "jacrev_jacrev": lambda: func.jacrev(func.jacrev(predict, argnums=2), argnums=2)(w, b, x),
        "batch_hessian": lambda: func.vmap(func.hessian(predict, argnums=2),
                                           in_dims=(None, None, 0))(w, b, xb),  # fmt: skip
        "hvp": lambda: hvp(f, (x,), (torch.ones(D),)),
        "vmap_hvp": lambda: func.vmap(lambda v: hvp(f, (x,), (v,)))(xb),
        "hvp_revrev": lambda: hvp_revrev(f, (x,), (torch.ones(D),)),
        "functional_jacobian": lambda: torch.autograd.functional.jacobian(
            lambda x: predict(w, b, x), x),
        "functional_jacobian_forward": lambda: torch.autograd.functional.jacobian(
            lambda x: predict(w, b, x), x, vectorize=True, strategy="forward-mode"),
        "functional_jacobian_forward_tuples": lambda: torch.autograd.functional.jacobian(
            lambda a, c: (a * c, a.sin()), (x, xb[:3, :1]), vectorize=True,
            strategy="forward-mode"),
        "functional_hessian": lambda: torch.autograd.functional.hessian(f, x),
        "functional_hessian_forward_over_reverse": lambda: torch.autograd.functional.hessian(
            f, x, vectorize=True, outer_jacobian_strategy="forward-mode"),
        "functional_hvp_vhp": lambda: (torch.autograd.functional.hvp(f, x, torch.ones(D)),
                                       torch.autograd.functional.vhp(f, x, torch.ones(D))),
    }  # fmt: skip
    return programs[which]()


PROGRAMS = ["jacrev", "jacfwd", "jacrev_weight_bias", "vjp", "jvp", "batch_jacobian",
            "summed_jacobian", "hessian", "jacfwd_jacrev", "jacrev_jacrev", "batch_hessian",
            "hvp", "vmap_hvp", "hvp_revrev", "functional_jacobian",
            "functional_jacobian_forward", "functional_jacobian_forward_tuples",
            "functional_hessian", "functional_hessian_forward_over_reverse",
            "functional_hvp_vhp"]  # fmt: skip


@pytest.mark.parametrize("which", PROGRAMS)
def test_jacobians_hessians_tutorial_matches_torch(torch, which):
    # kiln differed: jvp of a tangent that vmap maps (vmap_hvp), vjp of vjp (hvp_revrev),
    # hessian of a vector function, torch.autograd.functional's strategy="forward-mode"
    assert_tree_close(jacobians_program(kn, which), jacobians_program(torch, which), **TOL)


# -- "Neural Tangent Kernels": the jacobian contraction and the NTK-vector products -----------

X1 = RNG.normal(size=(4, 1, 6, 6)).astype(np.float32)
X2 = RNG.normal(size=(3, 1, 6, 6)).astype(np.float32)


def build_cnn(torch):
    nn = torch.nn

    class CNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 4, (3, 3))
            self.conv2 = nn.Conv2d(4, 4, (3, 3))
            self.fc = nn.Linear(4 * 2 * 2, 3)

        def forward(self, x):
            x = self.conv2(self.conv1(x).relu()).relu()
            return self.fc(x.flatten(1))

    return CNN()


def ntk_program(torch, net, method, compute):
    func = torch.func
    params = {k: v.detach() for k, v in net.named_parameters()}
    x1, x2 = torch.from_numpy(X1.copy()), torch.from_numpy(X2.copy())

    def fnet_single(params, x):
        return func.functional_call(net, params, (x.unsqueeze(0),)).squeeze(0)

    def empirical_ntk_jacobian_contraction(fnet_single, params, x1, x2, compute):
        jac1 = func.vmap(func.jacrev(fnet_single), (None, 0))(params, x1)
        jac1 = [j.flatten(2) for j in jac1.values()]
        jac2 = func.vmap(func.jacrev(fnet_single), (None, 0))(params, x2)
        jac2 = [j.flatten(2) for j in jac2.values()]
        einsum_expr = {"full": "Naf,Mbf->NMab", "trace": "Naf,Maf->NM",
                       "diagonal": "Naf,Maf->NMa"}[compute]  # fmt: skip
        result = torch.stack([torch.einsum(einsum_expr, j1, j2) for j1, j2 in zip(jac1, jac2)])
        return result.sum(0)

    def empirical_ntk_ntk_vps(func_, params, x1, x2, compute):
        def get_ntk(x1, x2):
            def func_x1(params):
                return func_(params, x1)

            def func_x2(params):
                return func_(params, x2)

            output, vjp_fn = func.vjp(func_x1, params)

            def get_ntk_slice(vec):
                vjps = vjp_fn(vec)  # (a tuple of one dict)
                _, jvps = func.jvp(func_x2, (params,), vjps)
                return jvps

            basis = torch.eye(output.numel(), dtype=output.dtype).view(output.numel(), -1)
            return func.vmap(get_ntk_slice)(basis)

        result = func.vmap(func.vmap(get_ntk, (None, 0)), (0, None))(x1, x2)
        if compute == "trace":
            return torch.einsum("NMKK->NM", result)
        if compute == "diagonal":
            return torch.einsum("NMKK->NMK", result)
        return result

    if method == "jacobian_contraction":
        return empirical_ntk_jacobian_contraction(fnet_single, params, x1, x2, compute)
    return empirical_ntk_ntk_vps(fnet_single, params, x1, x2, compute)


@pytest.mark.parametrize("compute", ["full", "trace", "diagonal"])
@pytest.mark.parametrize("method", ["jacobian_contraction", "ntk_vps"])
def test_neural_tangent_kernel_matches_torch(torch, method, compute):
    # jacrev of a function of a dict of parameters (kiln's took Symbols alone), and
    # vjp / jvp of one inside vmap (kiln's vjp ran on eager Tensors alone; its jvp took
    # tensors, not dicts of them)
    torch.manual_seed(0)
    t_net, k_net = build_cnn(torch), build_cnn(kn)
    copy_weights(t_net, k_net)
    t = ntk_program(torch, t_net, method, compute)
    k = ntk_program(kn, k_net, method, compute)
    np.testing.assert_allclose(to_numpy(k), to_numpy(t), rtol=1e-4, atol=1e-5)


def test_jacobians_of_a_dict_of_parameters_match_torch(torch):
    torch.manual_seed(0)
    t_net, k_net = build_cnn(torch), build_cnn(kn)
    copy_weights(t_net, k_net)
    results = []
    for lib, net in ((torch, t_net), (kn, k_net)):
        func = lib.func
        params = {k: v.detach() for k, v in net.named_parameters()}
        x = lib.from_numpy(X1[0].copy())

        def f(params, x, net=net, func=func):
            return func.functional_call(net, params, (x.unsqueeze(0),)).squeeze(0)

        ones = {k: lib.ones_like(v) for k, v in params.items()}
        results.append((
            func.jacrev(f)(params, x), func.jacfwd(f)(params, x),
            func.jacrev(f, argnums=(0, 1))(params, x),
            func.jvp(lambda p, x=x, f=f: f(p, x), (params,), (ones,)),
            func.vjp(lambda p, x=x, f=f: f(p, x), params)[1](lib.ones(3)),
        ))  # fmt: skip
    assert_tree_close(results[1], results[0], **TOL)


def test_vjp_and_vmap_under_compile_match_torch(torch):
    # kn.func.vjp in a kn.compile trace (it refused Symbols), and a vmap called there on
    # eager tensors with a function reading the trace's values (it compiled a second graph,
    # which those values are not in)
    def program(torch, x, xb):
        func = torch.func
        y, vjp_fn = func.vjp(lambda a: (a.sin() * x).sum(), x)
        (g,) = vjp_fn(torch.ones(()))
        rows = func.vmap(lambda r: (r * g).sum())(torch.from_numpy(XB.copy()))
        return y, g, rows + xb.sum()

    t = program(torch, torch.from_numpy(X.copy()), torch.from_numpy(XB.copy()))
    args = (kn.from_numpy(X.copy()), kn.from_numpy(XB.copy()))
    assert_tree_close(program(kn, *args), t, **TOL)
    assert_tree_close(kn.compile(lambda x, xb: program(kn, x, xb))(*args), t, **TOL)


def test_transforms_under_compile_keep_the_closed_over_argument_apart(torch):
    # a function of `a` that also reads the tensor passed as `a` (x, from the closure): the
    # transform differentiates the argument alone, as torch.func's. Under kn.compile kiln
    # differentiated the traced value itself, so the closure's uses counted too (a wrong
    # value, no error): grad of (sin(a) * x).sum() at a = x gave cos(x) x + sin(x)
    def program(torch, x):
        func = torch.func
        return (
            func.grad(lambda a: (a.sin() * x).sum())(x),
            func.jacrev(lambda a: a.sin() * x)(x),
            func.jacfwd(lambda a: a.sin() * x)(x),
            func.jvp(lambda a: a.sin() * x, (x,), (torch.ones(D),))[1],
            func.hessian(lambda a: (a.sin() * x).sum())(x),
            func.vjp(lambda a: (a.sin() * x).sum(), x)[1](torch.ones(()))[0],
        )

    t = program(torch, torch.from_numpy(X.copy()))
    assert_tree_close(program(kn, kn.from_numpy(X.copy())), t, **TOL)
    assert_tree_close(kn.compile(lambda x: program(kn, x))(kn.from_numpy(X.copy())), t, **TOL)


# -- torch.func's documented call forms beyond the tutorials --------------------------------

A = RNG.normal(size=(4, 3)).astype(np.float32)
BV = RNG.normal(size=(3,)).astype(np.float32)


def call_forms(torch, which):
    func = torch.func
    a, b = torch.from_numpy(A.copy()), torch.from_numpy(BV.copy())
    forms = {
        # in_dims as a pytree matching a dict argument; keyword arguments pass unmapped
        "vmap_dict_in_dims": lambda: func.vmap(lambda d: d["x"] * d["y"],
                                               in_dims=({"x": 0, "y": None},))({"x": a, "y": b}),
        "vmap_keywords": lambda: func.vmap(lambda r, scale=1.0: r * scale)(a, scale=3.0),
        "jacrev_chunk_size": lambda: func.jacrev(lambda x: a @ x, chunk_size=1)(b),
        "hessian_argnums_tuple": lambda: func.hessian(lambda x, y: (x * y.sin()).sum(),
                                                      argnums=(0, 1))(b, b),
        "linearize": lambda: func.linearize(lambda x: x.sin(), b)[1](torch.ones(3)),
    }  # fmt: skip
    return forms[which]()


@pytest.mark.parametrize(
    "which",
    ["vmap_dict_in_dims", "vmap_keywords", "jacrev_chunk_size",
     "hessian_argnums_tuple", "linearize"],
)  # fmt: skip
def test_torch_func_call_forms_match_torch(torch, which):
    assert_tree_close(call_forms(kn, which), call_forms(torch, which), **TOL)


def test_vmap_refusals_match_torch(torch):
    a = np.ones((4, 3), np.float32)
    for lib in (torch, kn):
        x = lib.from_numpy(a.copy())
        with pytest.raises(RuntimeError, match=r"\.item\(\)"):
            lib.func.vmap(lambda r: r.sum().item())(x)
        with pytest.raises(ValueError, match="in_dims"):
            lib.func.vmap(lambda r: r, in_dims=None)(x)


def test_per_sample_gradients_under_compile_match_torch(torch):
    # the per-sample-gradients tutorial inside kn.compile: grad_and_value of the eager
    # parameters (detached, captured) made leaves that require grad, refused in graph mode
    from test_port_hunt2 import build_small_cnn, per_sample_grads

    torch.manual_seed(0)
    rng = np.random.default_rng(25)
    data, targets = rng.normal(size=(5, 1, 6, 6)).astype(np.float32), rng.integers(0, 3, 5)
    t_model, k_model = build_small_cnn(torch), build_small_cnn(kn)
    copy_weights(t_model, k_model)
    t = per_sample_grads(torch, t_model, torch.from_numpy(data), torch.from_numpy(targets))
    step = kn.compile(lambda d, y: per_sample_grads(kn, k_model, d, y))
    k = step(kn.from_numpy(data), kn.from_numpy(targets))
    assert_tree_close(k, t, rtol=1e-4, atol=1e-6)


def test_gradient_of_a_parameter_under_compile_follows_its_value(torch):
    # grad with respect to a module's parameter in a kn.compile trace differentiates the
    # parameter's value in the trace, so the compiled function sees each new value
    results = []
    for lib, compile_ in ((torch, lambda f: f), (kn, kn.compile)):
        lin = lib.nn.Linear(3, 1)
        with lib.no_grad():
            lin.weight.copy_(lib.tensor([[0.5, -1.0, 2.0]]))
        x = lib.from_numpy(BV.copy())

        def step(x, lin=lin, lib=lib):
            def f(w):
                return (w * x).sin().sum()

            return lib.func.grad(f)(lin.weight), lib.func.vjp(f, lin.weight)[1](lib.ones(()))

        step = compile_(step)
        first = step(x)
        with lib.no_grad():
            lin.weight.mul_(3)
        results.append((first, step(x)))
    assert_tree_close(results[1], results[0], **TOL)


def test_replace_all_batch_norm_modules_matches_torch(torch):
    # torch.func's patch for vmap over a model with BatchNorm (no running statistics):
    # kiln had no replace_all_batch_norm_modules_
    rng = np.random.default_rng(9)
    data = rng.normal(size=(3, 4, 2, 5, 5)).astype(np.float32)  # 3 minibatches of 4
    nets = [lib.nn.Sequential(lib.nn.Conv2d(2, 3, 3), lib.nn.BatchNorm2d(3), lib.nn.ReLU())
            for lib in (torch, kn)]  # fmt: skip
    copy_weights(*nets)
    results = []
    for lib, net in zip((torch, kn), nets):
        patched = lib.func.replace_all_batch_norm_modules_(net)
        bn = net[1]
        params = dict(net.named_parameters())
        out = lib.func.vmap(lambda x, net=net, lib=lib, params=params: lib.func.functional_call(
            net, params, (x,)))(lib.from_numpy(data))  # fmt: skip
        results.append((patched is net, bn.track_running_stats, bn.running_mean,
                        sorted(net.state_dict()), out))  # fmt: skip
    assert_tree_close(results[1], results[0], **TOL)
