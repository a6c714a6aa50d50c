"""PyTorch's own tests of torch.func's transforms (test/functorch/test_eager_transforms.py)
as an oracle: grad and grad_and_value (argnums, has_aux, pytree inputs and aux, the refusals
of a non-scalar output, integer inputs and bad argnums, in-place ops and views inside, no_grad
and inference_mode around and inside) and vjp (has_aux, several and pytree outputs, the
refusals of its cotangents). Each behaviour is a scenario of its own, run on torch and on
kiln, eagerly and under `kn.compile` (pt_oracle.py). test_port_pt_functorch_jacobians.py has
jvp, linearize, jacrev, jacfwd and hessian; test_port_pt_functorch_modules.py the
compositions and functional_call; test_port_pt_functorch_vmap*.py vmap's;
test_port_hunt8_func.py the tutorials' programs.

Expected values: torch 2.13 (the oracle).
"""

import numpy as np
import pytest
from pt_functorch_common import IX, XB, M, S, X, Y
from pt_functorch_common import sorted_items as _sorted
from pt_oracle import MODES, Scenarios

f32 = np.float32
SCENARIOS = Scenarios()
case = SCENARIOS.case


# -- grad and grad_and_value ----------------------------------------------------------------


@case("grad_primitive_and_composite", X)
def _(lib, x):
    g = lib.func.grad
    return g(lambda a: a.sin().sum())(x), g(lambda a: (a.exp() * a.cos()).mean())(x)


@case("grad_scalar_input", S)
def _(lib, s):
    g = lib.func.grad
    return g(lib.sin)(s), g(g(lib.sin))(s), g(g(g(lambda a: a**4)))(s)


@case("grad_argnums", X, Y)
def _(lib, x, y):
    def f(a, b):
        return (a * b.sin()).sum()

    g = lib.func.grad
    return (g(f)(x, y), g(f, argnums=1)(x, y), g(f, argnums=(0, 1))(x, y),
            g(f, argnums=(1, 0))(x, y), g(f, argnums=-1)(x, y),
            g(f, argnums=(1,))(x, y))  # fmt: skip


@case("grad_kwargs_not_differentiated", X, Y)
def _(lib, x, y):
    def f(a, *, scale):
        return (a * scale).pow(2).sum()

    return lib.func.grad(f)(x, scale=y)


@case("grad_unrelated_input_zero", X, Y)
def _(lib, x, y):
    return lib.func.grad(lambda a, b: (b * 2).sum(), argnums=(0, 1))(x, y)


@case("grad_has_aux", X)
def _(lib, x):
    def f(a):
        return a.sin().sum(), {"c": a.cos(), "n": [a * 2]}

    g, aux = lib.func.grad(f, has_aux=True)(x)
    return g, aux["c"], aux["n"][0], aux["c"].requires_grad


@case("grad_and_value", X)
def _(lib, x):
    g, v = lib.func.grad_and_value(lambda a: (a**3).sum())(x)
    return g, v, v.requires_grad, g.requires_grad


@case("grad_and_value_has_aux", X, Y)
def _(lib, x, y):
    (g1, g2), (v, aux) = lib.func.grad_and_value(
        lambda a, b: ((a * b).sum(), a + b), argnums=(0, 1), has_aux=True
    )(x, y)
    return g1, g2, v, aux


@case("grad_pytree_input", X, Y)
def _(lib, x, y):
    def f(p):
        return (p["w"] * p["b"][0]).sum() + p["b"][1].sum()

    out = lib.func.grad(f)({"w": x, "b": (y, x)})
    return out["w"], out["b"][0], out["b"][1], type(out["b"]).__name__


@case("grad_non_scalar_output_raises", X)
def _(lib, x):
    return lib.func.grad(lambda a: a * 2)(x)


@case("grad_one_element_output_raises", X)
def _(lib, x):
    return lib.func.grad(lambda a: a.sum().reshape(1))(x)


@case("grad_integer_input_raises", IX)
def _(lib, i):
    return lib.func.grad(lambda a: (a * 2).sum())(i)


@case("grad_argnums_out_of_range_raises", X)
def _(lib, x):
    return lib.func.grad(lambda a: a.sum(), argnums=1)(x)


@case("grad_argnums_empty_raises", X)
def _(lib, x):
    return lib.func.grad(lambda a: a.sum(), argnums=())(x)


@case("grad_argnums_float_raises", X)
def _(lib, x):
    return lib.func.grad(lambda a: a.sum(), argnums=0.0)(x)


@case("grad_argnums_repeated_raises", X, Y)
def _(lib, x, y):
    return lib.func.grad(lambda a, b: (a * b).sum(), argnums=(0, 0))(x, y)


@case("grad_has_aux_not_tuple_raises", X)
def _(lib, x):
    return lib.func.grad(lambda a: a.sum(), has_aux=True)(x)


@case("grad_has_aux_three_raises", X)
def _(lib, x):
    return lib.func.grad(lambda a: (a.sum(), a, a), has_aux=True)(x)


@case("grad_non_tensor_argument_raises", X)
def _(lib, x):
    return lib.func.grad(lambda a, k: (a * k).sum(), argnums=1)(x, 2.0)


@case("grad_output_not_tensor_raises", X)
def _(lib, x):
    return lib.func.grad(lambda a: 3.0)(x)


@case("grad_of_leaf_requiring_grad", X)
def _(lib, x):
    x = x.clone().requires_grad_(True)
    g = lib.func.grad(lambda a: (a**2).sum())(x)
    return g, g.requires_grad


@case("grad_dtype_float64", X)
def _(lib, x):
    return lib.func.grad(lambda a: (a.double() ** 2).sum())(x), lib.func.grad(
        lambda a: (a**2).sum()
    )(x.double())


@case("grad_argnums_list_raises", X, Y)
def _(lib, x, y):
    return lib.func.grad(lib.mul, argnums=[0])(x.sum(), y.sum())


@case("grad_argnums_str_raises", X, Y)
def _(lib, x, y):
    return lib.func.grad(lib.mul, argnums=("0",))(x.sum(), y.sum())


@case("grad_argnums_repeated_negative_raises", X, Y)
def _(lib, x, y):
    return lib.func.grad(lib.mul, argnums=(0, -2))(x.sum(), y.sum())


@case("grad_argnums_too_negative_raises", X, Y)
def _(lib, x, y):
    return lib.func.grad(lib.mul, argnums=-3)(x.sum(), y.sum())


@case("grad_pytree_inputs_argnums", S)
def _(lib, s):
    def f(a, b):
        return 1 * a[0] + 2 * a[1] + 3 * b["foo"]

    args = ((s, s), {"foo": s})
    g = lib.func.grad
    return g(f)(*args), g(f, argnums=(0,))(*args), g(f, argnums=(0, 1))(*args)[1]["foo"]


@case("grad_aux_non_tensor_raises", X)
def _(lib, x):
    return lib.func.grad(lambda a: (a.sum(), 1.0), has_aux=True)(x)


@case("grad_aux_non_tensor_in_list_raises", X)
def _(lib, x):
    return lib.func.grad(lambda a: (a.sum(), [a, "abc"]), has_aux=True)(x)


@case("grad_inplace_and_views", X)
def _(lib, x):
    g = lib.func.grad

    def on_view(a):
        y = a.clone()
        y[0].sin_()
        return y.sum()

    def on_base(a):
        y = a.clone()
        y0 = y[0]
        y.sin_()
        return y0

    def through_view(a):
        y = a.clone()
        y.view(3).mul_(2.0)
        return (y * y).sum()

    return (g(lambda a: a.clone().sin_().sum())(x), g(on_view)(x), g(on_base)(x),
            g(through_view)(x))  # fmt: skip


@case("grad_inplace_on_capture_raises", X, Y)
def _(lib, x, y):
    captured = y.clone()

    def f(a):
        captured.copy_(a)
        return (a * captured).sum()

    return lib.func.grad(f)(x)


@case("grad_unrelated_output_zero", X, S)
def _(lib, x, s):
    return lib.func.grad(lambda a: s * 2)(x)


@case("grad_cross_entropy_integer_targets", M)
def _(lib, m):
    t = lib.tensor([2, 0])
    return lib.func.grad(lambda z, y: lib.nn.functional.cross_entropy(z, y))(m, t)


@case("grad_composed_with_autograd", S)
def _(lib, s):
    s = s.clone().requires_grad_(True)
    y = lib.func.grad(lib.sin)(s)
    (second,) = lib.autograd.grad(y, s)
    return y, second


@case("grad_view_in_function_composed_with_autograd", S, X)
def _(lib, s, x):
    s, t = s.clone().requires_grad_(True), x[0].clone().requires_grad_(True)
    out = lib.func.grad(lambda a: a.view([]).sin())(s) + t.cos()
    return lib.autograd.grad(out, [s, t])


@case("grad_vjp_compositions", S, X)
def _(lib, s, x):
    g, vjp = lib.func.grad, lib.func.vjp
    y = x[0]
    _, fn = vjp(lib.sin, s)
    first = g(lambda t: fn(t)[0])(y)
    _, fn2 = vjp(g(lib.sin), s)
    second = fn2(y)[0]
    _, fn3 = vjp(g(lambda a: -lib.cos(a)), s)
    third = g(lambda t: fn3(t)[0])(y)
    return first, second, third


@case("grad_mask_assignment_and_tensor_constructor", XB)
def _(lib, xb):
    def f(v):
        v = v.clone()
        v[v > 0] = 0
        return (v * lib.tensor(2.0)).sum()

    return lib.func.grad(f)(xb.flatten())


def _leaf(lib, value):
    return value.clone().requires_grad_(True)


@case("grad_under_no_grad_outside", S)
def _(lib, s):
    s = _leaf(lib, s)
    with lib.no_grad():
        y = lib.func.grad(lib.sin)(s)
    return y, y.requires_grad


@case("grad_no_grad_inside", S)
def _(lib, s):
    def f(a):
        with lib.no_grad():
            shift = a**2
        return a**2 - shift

    g = lib.func.grad
    leaf = _leaf(lib, s)
    y = g(f)(leaf)
    (z,) = lib.autograd.grad(y, leaf)
    with lib.no_grad():
        mixed = g(f)(leaf)
    return g(f)(s), g(g(f))(s), y, z, mixed, mixed.requires_grad


@case("grad_no_grad_nested", S)
def _(lib, s):
    g = lib.func.grad

    def h(a):
        with lib.no_grad():
            shift = g(lambda t: 0.25 * t**4)(a)
        return a**3 - shift

    def f(a):
        with lib.no_grad():
            shift = a**3
        return a**3 - shift

    def k(a):
        r1 = g(f)(a)
        with lib.no_grad():
            shift = g(f)(a)
        return r1 - shift

    def v(a):
        with lib.no_grad():
            _, value = lib.func.grad_and_value(lambda t: t**3)(a)
        return a**3 - value

    out = []
    for fn in (h, k, v):
        leaf = _leaf(lib, s)
        y = g(fn)(leaf)
        out += [y, lib.autograd.grad(y, leaf)[0]]
    return out


@case("vjp_and_no_grad", S)
def _(lib, s):
    def h(a):
        return a**2

    one = lib.tensor(1.0)
    leaf = _leaf(lib, s)
    with lib.no_grad():
        out1, fn1 = lib.func.vjp(h, leaf)
        (y1,) = fn1(one)
    out2, fn2 = lib.func.vjp(h, leaf)
    with lib.no_grad():
        (y2,) = fn2(one)
    (z2,) = lib.autograd.grad(out2, leaf)
    with lib.no_grad():
        out3, fn3 = lib.func.vjp(h, leaf)
    (y3,) = fn3(one)
    (z3,) = lib.autograd.grad(y3, leaf)
    return (y1, y1.requires_grad, out1.requires_grad, y2, y2.requires_grad, out2.requires_grad,
            z2, y3, out3.requires_grad, y3.requires_grad, z3)  # fmt: skip


@case("transforms_under_inference_mode", X, XB)
def _(lib, x, xb):
    f = lambda a: (a**2).sum()  # noqa: E731
    with lib.inference_mode():
        out = (lib.func.grad(f)(x), lib.func.vjp(f, x)[1](lib.tensor(1.0)),
               lib.func.jvp(f, (x,), (lib.ones(3),)), lib.func.jacrev(lambda a: a**2)(x),
               lib.func.vmap(lib.func.grad(f))(xb),
               lib.func.grad(lambda a: lib.func.vmap(lambda r: (r**2).sum())(a).sum())(x),
               lib.func.grad(lib.func.grad(lambda a: a**3))(x[0]),
               lib.func.jacrev(lib.func.grad(lambda a: (a**3).sum()))(x))  # fmt: skip
        inside = lib.is_inference_mode_enabled()
    return out, inside, lib.is_inference_mode_enabled()


# -- vjp ------------------------------------------------------------------------------------


@case("vjp_single_and_multiple_primals", X, Y)
def _(lib, x, y):
    out, fn = lib.func.vjp(lambda a, b: a * b.sin(), x, y)
    return out, fn(lib.ones(3)), out.requires_grad


@case("vjp_multiple_outputs", X, Y)
def _(lib, x, y):
    out, fn = lib.func.vjp(lambda a: (a.sin(), a.cos().sum()), x)
    return out, fn((y, lib.tensor(2.0)))


@case("vjp_pytree_output", X, Y)
def _(lib, x, y):
    out, fn = lib.func.vjp(lambda a: {"s": a.sin(), "l": [a * 3]}, x)
    return _sorted(out), fn({"s": y, "l": [y * 2]})


@case("vjp_has_aux", X, Y)
def _(lib, x, y):
    out, fn, aux = lib.func.vjp(lambda a: (a.exp(), {"x": a * 2}), x, has_aux=True)
    return out, fn(y), aux["x"], aux["x"].requires_grad


@case("vjp_pytree_primal", X, Y)
def _(lib, x, y):
    out, fn = lib.func.vjp(lambda p: p[0] * p[1], (x, y))
    (ct,) = fn(lib.ones(3))
    return out, ct, type(ct).__name__


@case("vjp_twice", X, Y)
def _(lib, x, y):
    _, fn = lib.func.vjp(lambda a: a**3, x)
    return fn(y), fn(y * 2)


@case("vjp_cotangent_wrong_shape_raises", X)
def _(lib, x):
    _, fn = lib.func.vjp(lambda a: a * 2, x)
    return fn(lib.ones(4))


@case("vjp_cotangent_structure_mismatch_raises", X)
def _(lib, x):
    _, fn = lib.func.vjp(lambda a: (a, a * 2), x)
    return fn(lib.ones(3))


@case("vjp_non_tensor_output_raises", X)
def _(lib, x):
    return lib.func.vjp(lambda a: 3.0, x)


@case("vjp_has_aux_not_tuple_raises", X)
def _(lib, x):
    return lib.func.vjp(lambda a: a * 2, x, has_aux=True)


@case("vjp_integer_output", X)
def _(lib, x):
    out, fn = lib.func.vjp(lambda a: (a * 2, (a > 0).long()), x)
    return out, fn((lib.ones(3), lib.zeros(3, dtype=lib.long)))


@case("vjp_unrelated_primal_zero", X, Y)
def _(lib, x, y):
    _, fn = lib.func.vjp(lambda a, b: a * 2, x, y)
    return fn(lib.ones(3))


@case("vjp_unrelated_outputs", S, X)
def _(lib, s, x):
    y = x[0]
    _, fn = lib.func.vjp(lambda w, a: (y, y, a), s, s * 2)
    return fn((s, s, s))


@case("vjp_pytree_input_result", S, X)
def _(lib, s, x):
    out, fn = lib.func.vjp(lambda p: p[0] * p[1][0], (s, (s, s)))
    return out, fn(x[0])


@case("vjp_nested_pytree_output", S, X)
def _(lib, s, x):
    _, fn = lib.func.vjp(lambda a: (a, (a, a * 2)), s)
    return fn((x[0], (x[1], x[2])))


@case("vjp_list_and_composite_outputs", M, M)
def _(lib, m, t):
    out, fn = lib.func.vjp(lambda a: [a, a.sum()], m)
    (ct,) = fn([t, t.sum()])

    def composite(a):
        total = a.sum()
        return [(total, {"a": a, "out": [a, total]})]

    out2, fn2 = lib.func.vjp(composite, m)
    (ct2,) = fn2([(t.sum(), {"a": t, "out": [t, t.sum()]})])
    return type(out).__name__, out, ct, type(out2[0][1]).__name__, ct2


@case("vjp_none_output_raises", X)
def _(lib, x):
    return lib.func.vjp(lambda a: None, x)


@case("vjp_empty_output_raises", X)
def _(lib, x):
    return lib.func.vjp(lambda a: (), x)


@case("vjp_bool_output_raises", X)
def _(lib, x):
    return lib.func.vjp(lambda a: True, x)


@case("vjp_cotangent_extra_nesting_raises", S, X)
def _(lib, s, x):
    _, fn = lib.func.vjp(lambda a: (a, (a, a)), s)
    return fn(((x[0], (x[1], x[2])),))


@case("vjp_aux_non_tensor_raises", X)
def _(lib, x):
    return lib.func.vjp(lambda a: (a, [a, 1]), x, has_aux=True)


@case("jacrev_of_jacrev_unrelated_zero", X, M)
def _(lib, x, m):
    return lib.func.jacrev(lib.func.jacrev(lambda a: m @ a))(x)


SCENARIOS.eager_only.update(
    {
        "grad_of_leaf_requiring_grad": (
            "requires_grad_ of a traced value has no meaning in a trace"
        ),
        "grad_composed_with_autograd": (
            "requires_grad_ of a traced value has no meaning in a trace"
        ),
        "grad_under_no_grad_outside": (
            "requires_grad_ of a traced value has no meaning in a trace"
        ),
        "grad_no_grad_inside": ("requires_grad_ of a traced value has no meaning in a trace"),
        "grad_no_grad_nested": ("requires_grad_ of a traced value has no meaning in a trace"),
        "vjp_and_no_grad": ("requires_grad_ of a traced value has no meaning in a trace"),
        "grad_view_in_function_composed_with_autograd": (
            "requires_grad_ of a traced value has no meaning in a trace"
        ),
    }
)
SCENARIOS.xfail.update(
    {
        "grad_inplace_on_capture_raises": (
            "torch refuses an in-place change of a tensor captured from outside grad "
            "(RuntimeError); kiln's eager grad has no transform levels and runs it"
        ),
    }
)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", SCENARIOS.names())
def test_transforms_match_torch(torch, name, mode):
    SCENARIOS.check(torch, name, mode)


def _inference_inside(lib, x):
    def f(a):
        with lib.inference_mode():
            c = a**2
        return a - c

    with lib.inference_mode():
        return lib.func.grad(lambda a: f(a).sum())(x)


@pytest.mark.parametrize(
    "mode",
    [pytest.param("eager", marks=pytest.mark.xfail(strict=True, reason=(
        "torch subtracts a tensor made in inference_mode on the tape (sub saves neither "
        "input); kiln's tape refuses every inference-mode input (AutogradError)"))),
     "compiled"],
)  # fmt: skip
def test_grad_of_a_value_made_in_inference_mode_inside(torch, mode):
    SCENARIOS_INFERENCE.check(torch, "grad_inference_mode_inside", mode)


SCENARIOS_INFERENCE = Scenarios()
SCENARIOS_INFERENCE.case("grad_inference_mode_inside", X)(_inference_inside)
