"""PyTorch's own tests of torch.func's transforms (test/functorch/test_eager_transforms.py)
as an oracle: compositions (vmap of grad, grad of vmap, jacrev of jacfwd, grad of jvp),
requires_grad_ and retain_grad inside transforms, functional_call (dicts of parameters and
buffers, strict, tie_weights, a tuple of dicts, detached parameters), stack_module_state and
the examples (MAML-style vmap of grad, batched jacobians differentiated to a model's
parameters). Each behaviour is a scenario of its own, run on torch and on kiln, eagerly and
under `kn.compile` (pt_oracle.py).

Expected values: torch 2.13 (the oracle).
"""

import numpy as np
import pytest
from pt_functorch_common import W6, W33, XB, M, X, Y
from pt_functorch_common import sorted_items as _sorted
from pt_oracle import MODES, Scenarios

f32 = np.float32
SCENARIOS = Scenarios()
case = SCENARIOS.case


# -- compositions ---------------------------------------------------------------------------


@case("vmap_of_grad", XB, X)
def _(lib, xb, w):
    return lib.func.vmap(lib.func.grad(lambda a, b: (a * b).sin().sum()), in_dims=(0, None))(xb, w)


@case("vmap_of_grad_argnums_tuple", XB, X)
def _(lib, xb, w):
    f = lambda a, b: (a * b.exp()).sum()  # noqa: E731
    return lib.func.vmap(lib.func.grad(f, argnums=(0, 1)), in_dims=(0, None))(xb, w)


@case("grad_of_vmap", XB)
def _(lib, xb):
    return lib.func.grad(lambda a: lib.func.vmap(lambda r: r.sin().sum())(a).sum())(xb)


@case("vmap_of_vjp", XB, X)
def _(lib, xb, y):
    def f(a):
        _, fn = lib.func.vjp(lambda t: t.sin() * y, a)
        return fn(lib.ones(3))[0]

    return lib.func.vmap(f)(xb)


@case("vmap_of_jvp", XB, X)
def _(lib, xb, x):
    return lib.func.vmap(lambda t: lib.func.jvp(lambda a: a.exp().sum(), (x,), (t,))[1])(xb)


@case("jacrev_of_jacfwd", X)
def _(lib, x):
    f = lambda a: (a.sin() * a.prod()).sum()  # noqa: E731
    return lib.func.jacrev(lib.func.jacfwd(f))(x), lib.func.jacfwd(lib.func.jacrev(f))(x)


@case("grad_of_grad_argnums", X, Y)
def _(lib, x, y):
    g = lib.func.grad
    inner = g(lambda a, b: (a**2 * b).sum(), argnums=1)
    return g(lambda a, b: inner(a, b).sum())(x, y)


@case("vmap_of_jacrev", XB)
def _(lib, xb):
    return lib.func.vmap(lib.func.jacrev(lambda a: a.sin() * a))(xb)


@case("grad_of_jvp", X, Y)
def _(lib, x, y):
    return lib.func.grad(lambda a: lib.func.jvp(lambda t: (t**3).sum(), (a,), (y,))[1])(x)


@case("grad_and_value_in_vmap_has_aux", XB)
def _(lib, xb):
    f = lambda a: ((a**2).sum(), a.mean())  # noqa: E731
    return lib.func.vmap(lib.func.grad_and_value(f, has_aux=True))(xb)


@case("requires_grad_inside_vmap_raises", X)
def _(lib, x):
    def f(a):
        a.requires_grad_()
        return a.sin().sum()

    return lib.func.vmap(f)(x.reshape(3, 1))


@case("requires_grad_inside_grad_raises", X)
def _(lib, x):
    def f(a):
        a.requires_grad_()
        return a.sin().sum()

    return lib.func.grad(f)(x)


@case("retain_grad_inside_grad_raises", X)
def _(lib, x):
    def f(a):
        y = a.sin()
        y.retain_grad()
        return y.sum()

    return lib.func.grad(f)(x)


# -- functional_call ------------------------------------------------------------------------


def _linear(lib):
    lin = lib.nn.Linear(3, 2)
    lin.weight = lib.nn.Parameter(lib.tensor(W6))
    lin.bias = lib.nn.Parameter(lib.tensor([0.5, -0.5]))
    return lin


@case("functional_call_params", X, M)
def _(lib, x, m):
    lin = _linear(lib)
    out = lib.func.functional_call(lin, {"weight": m, "bias": m[0, :2]}, (x,))
    return out, lin(x), lib.func.functional_call(lin, {"weight": m}, x)


@case("functional_call_buffers_and_tuple_of_dicts", M)
def _(lib, m):
    bn = lib.nn.BatchNorm1d(3).eval()
    bufs = {"running_mean": m[0], "running_var": m[1].abs() + 1}
    params = {"weight": lib.ones(3) * 2, "bias": lib.zeros(3)}
    out = lib.func.functional_call(bn, (params, bufs), (m,))
    return out, bn.running_mean, lib.func.functional_call(bn, bufs, m)


@case("functional_call_kwargs", X)
def _(lib, x):
    class Scale(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = lib.nn.Parameter(lib.ones(3))

        def forward(self, a, *, shift):
            return a * self.w + shift

    return lib.func.functional_call(Scale(), {"w": x}, (x,), {"shift": 1.0})


@case("functional_call_grad", X, M)
def _(lib, x, m):
    lin = _linear(lib)
    params = {k: v.detach() for k, v in lin.named_parameters()}
    g = lib.func.grad(lambda p: lib.func.functional_call(lin, p, (x,)).pow(2).sum())(params)
    return _sorted(g)


@case("functional_call_detached_or_not", M)
def _(lib, m):
    lin = _linear(lib)
    x = m[:, :3]
    detached = {k: v.detach() for k, v in lin.named_parameters()}
    out1 = lib.func.functional_call(lin, detached, x)
    out2 = lib.func.functional_call(lin, dict(lin.named_parameters()), x)
    return out1, out1.requires_grad, out2, out2.requires_grad


@case("functional_call_strict_missing_raises", M)
def _(lib, m):
    return lib.func.functional_call(_linear(lib), {"weight": m}, (m[0],), strict=True)


@case("functional_call_strict_unexpected_raises", M)
def _(lib, m):
    lin = _linear(lib)
    return lib.func.functional_call(lin, {"weight": m, "bias": m[0, :2], "extra": m}, (m[0],),
                                    strict=True)  # fmt: skip


@case("functional_call_strict_ok", M)
def _(lib, m):
    lin = _linear(lib)
    return lib.func.functional_call(lin, {"weight": m, "bias": m[0, :2]}, (m[0],), strict=True)


@case("functional_call_unknown_name", M)
def _(lib, m):
    lin = _linear(lib)
    return lib.func.functional_call(lin, {"weight": m, "extra": m}, (m[0],))


@case("functional_call_duplicate_key_raises", M)
def _(lib, m):
    lin = _linear(lib)
    return lib.func.functional_call(lin, ({"weight": m}, {"weight": m}), (m[0],))


def _tied(lib):
    net = lib.nn.Sequential(lib.nn.Linear(3, 3, bias=False), lib.nn.Linear(3, 3, bias=False))
    net[0].weight = net[1].weight = lib.nn.Parameter(lib.tensor(W33))
    return net


@case("functional_call_tie_weights", X, M)
def _(lib, x, m):
    net = _tied(lib)
    w = lib.eye(3) * 2
    tied = lib.func.functional_call(net, {"0.weight": w}, (x,))
    untied = lib.func.functional_call(net, {"0.weight": w}, (x,), tie_weights=False)
    return tied, untied - net(x) * 0


@case("functional_call_tied_both_given_differ_raises", X)
def _(lib, x):
    net = _tied(lib)
    return lib.func.functional_call(net, {"0.weight": lib.eye(3), "1.weight": lib.eye(3) * 2}, (x,))


@case("functional_call_restores_module", X, M)
def _(lib, x, m):
    lin = _linear(lib)
    w = lin.weight
    lib.func.functional_call(lin, {"weight": m}, (x,))
    return lin.weight is w, type(lin.weight).__name__, lin(x)


@case("functional_call_vmap_over_params", X)
def _(lib, x):
    lin = _linear(lib)
    ws = lib.stack([lib.eye(3)[:2] * k for k in (1.0, 2.0, 3.0)])
    return lib.func.vmap(lambda w: lib.func.functional_call(lin, {"weight": w}, (x,)))(ws)


def _linears(lib, n=3):
    out = []
    for k in range(n):
        lin = lib.nn.Linear(3, 2)
        lin.weight = lib.nn.Parameter(lib.tensor(W6 * (k + 1)))
        lin.bias = lib.nn.Parameter(lib.tensor([0.5, -0.5]) * k)
        out.append(lin)
    return out


@case("stack_module_state", M)
def _(lib, m):
    params, buffers = lib.func.stack_module_state(_linears(lib))
    leaves = [(k, v.shape, v.requires_grad, v.is_leaf) for k, v in sorted(params.items())]
    base = _linears(lib, 1)[0]
    out = lib.func.vmap(lambda p, b, x: lib.func.functional_call(base, (p, b), x),
                        in_dims=(0, 0, None))(params, buffers, m[:, :3])  # fmt: skip
    return leaves, buffers == {}, out


@case("stack_module_state_empty_raises", M)
def _(lib, m):
    return lib.func.stack_module_state([])


@case("stack_module_state_modes_raise", M)
def _(lib, m):
    models = _linears(lib)
    models[1].eval()
    return lib.func.stack_module_state(models)


@case("stack_module_state_classes_raise", M)
def _(lib, m):
    models = _linears(lib)
    models[1] = lib.nn.Conv2d(3, 3, (3, 3))
    return lib.func.stack_module_state(models)


@case("stack_module_state_requires_grad_mismatch_raises", M)
def _(lib, m):
    models = _linears(lib)
    models[0].weight.requires_grad_(False)
    return lib.func.stack_module_state(models)


@case("maml_vmap_of_grad_then_autograd", XB, M)
def _(lib, xb, m):
    lin = _linears(lib, 1)[0]
    params = dict(lin.named_parameters())

    def loss_for_task(x1, y1, x2, y2):
        def inner(p, a, b):
            return ((lib.func.functional_call(lin, p, a) - b) ** 2).mean()

        grads = lib.func.grad(inner)(params, x1, y1)
        new = {k: params[k] - 0.1 * grads[k] for k in params}
        return inner(new, x2, y2)

    x = xb[:, :3].reshape(2, 2, 3)
    y = xb[:, :2].reshape(2, 2, 2)
    losses = lib.func.vmap(loss_for_task)(x, y, x.flip(1), y.flip(1))
    return losses, lib.autograd.grad(losses.sum(), list(params.values()))


@case("batched_jacobian_then_autograd", X)
def _(lib, x):
    lin = _linears(lib, 1)[0]
    model = lib.nn.Sequential(lib.nn.Linear(1, 3), lib.nn.Tanh())
    model[0].weight = lib.nn.Parameter(lib.tensor([[0.5], [1.0], [-1.5]]))
    model[0].bias = lib.nn.Parameter(lib.tensor([0.1, -0.2, 0.3]))
    r = x.abs().reshape(-1, 1) + 0.5
    out = []
    for jac in (lib.func.jacrev, lib.func.jacfwd):
        forces = -lib.func.vmap(jac(lambda a: model(a).sum()))(r)
        out.append(lib.autograd.grad(forces.pow(2).sum(), list(model.parameters())))
    return out, lin.weight.shape


SCENARIOS.eager_only.update(
    {
        "stack_module_state": (
            "stack_module_state makes leaves that require grad (requires_grad_), "
            "which a trace's values cannot be"
        ),
        "requires_grad_inside_grad_raises": (
            "requires_grad_ of a traced value has no meaning in a trace"
        ),
        "retain_grad_inside_grad_raises": (
            "retain_grad of a traced value has no meaning in a trace"
        ),
    }
)
SCENARIOS.xfail.update(
    {
        "requires_grad_inside_grad_raises": (
            "torch refuses Tensor.requires_grad_() inside a function grad transforms "
            "(RuntimeError); kiln's eager grad has no transform levels and runs it"
        ),
        "retain_grad_inside_grad_raises": (
            "torch refuses Tensor.retain_grad() inside a function grad transforms "
            "(RuntimeError); kiln's eager grad has no transform levels and runs it"
        ),
    }
)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", SCENARIOS.names())
def test_compositions_and_modules_match_torch(torch, name, mode):
    SCENARIOS.check(torch, name, mode)
