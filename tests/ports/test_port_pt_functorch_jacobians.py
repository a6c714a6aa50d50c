"""PyTorch's own tests of torch.func's transforms (test/functorch/test_eager_transforms.py,
TestJvp, TestLinearize, TestJac, TestHessian, TestVmapJvpInplaceView) as an oracle: jvp (its
argument checks, pytree primals and outputs, has_aux, strict), linearize, jacrev and jacfwd
(argnums, has_aux, chunk_size, pytree inputs and outputs, unrelated inputs and outputs,
in-place ops, against torch.autograd.functional, a battery of functions) and hessian. Each
behaviour is a scenario of its own, run on torch and on kiln, eagerly and under `kn.compile`
(pt_oracle.py).

Expected values: torch 2.13 (the oracle).
"""

import numpy as np
import pytest
from pt_functorch_common import IX, JM, XB, M, S, X, Y
from pt_functorch_common import plain as _plain
from pt_functorch_common import sorted_items as _sorted
from pt_oracle import MODES, Scenarios

f32 = np.float32
SCENARIOS = Scenarios()
case = SCENARIOS.case


# -- jvp and linearize ----------------------------------------------------------------------


@case("jvp_basic", X, Y)
def _(lib, x, y):
    return lib.func.jvp(lambda a: a.sin() * a, (x,), (y,))


@case("jvp_multiple_primals_and_outputs", X, Y)
def _(lib, x, y):
    return lib.func.jvp(lambda a, b: (a * b, (a + b).sum()), (x, y), (y, x))


@case("jvp_has_aux", X, Y)
def _(lib, x, y):
    out, t, aux = lib.func.jvp(lambda a: (a.exp(), {"a": a.cos()}), (x,), (y,), has_aux=True)
    return out, t, aux["a"]


@case("jvp_dict_output", X, Y)
def _(lib, x, y):
    out, t = lib.func.jvp(lambda a: {"s": a.sin(), "c": a.cos()}, (x,), (y,))
    return _sorted(out), _sorted(t)


@case("jvp_pytree_primals", S)
def _(lib, s):
    def f(a, y, z):
        return a[0] + 2 * a[1] + 3 * y + 4 * z

    return lib.func.jvp(f, ((s, s), s, s), ((s, s), s, s))


@case("jvp_primal_not_tensor_raises", S)
def _(lib, s):
    return lib.func.jvp(lambda a, b: a, ((s, s), 1), ((s, s), s))


@case("jvp_tangent_not_tensor_raises", S)
def _(lib, s):
    return lib.func.jvp(lambda a, b: a, ((s, s), s), ((1, s), s))


@case("jvp_no_tensor_raises", S)
def _(lib, s):
    return lib.func.jvp(lambda a: s, ((),), ((),))


@case("jvp_nested_structure_mismatch_raises", S)
def _(lib, s):
    return lib.func.jvp(lambda a, b: b, ((s, s), s), (s, s))


@case("jvp_unrelated_input_and_output", M, XB)
def _(lib, m, xb):
    y = xb[:2, :3]
    return (lib.func.jvp(lambda a, b: a, (m, y), (y, m)),
            lib.func.jvp(lambda a: y, (m,), (m,)))  # fmt: skip


@case("jvp_strict_unrelated_output_raises", M, XB)
def _(lib, m, xb):
    y = xb[:2, :3]
    return lib.func.jvp(lambda a: (a, y), (m,), (m,), strict=True)


@case("jvp_strict_related_outputs", M)
def _(lib, m):
    return lib.func.jvp(lambda a: (a.sin(), a * 2), (m,), (m,), strict=True)


@case("jvp_primals_not_tuple_raises", X, Y)
def _(lib, x, y):
    return lib.func.jvp(lambda a: a, x, y)


@case("jvp_tangent_shape_mismatch_raises", X, M)
def _(lib, x, m):
    return lib.func.jvp(lambda a: a * 2, (x,), (m,))


@case("jvp_count_mismatch_raises", X, Y)
def _(lib, x, y):
    return lib.func.jvp(lambda a, b: a * b, (x, y), (y,))


@case("jvp_tangent_of_another_dtype", X, Y)
def _(lib, x, y):
    return lib.func.jvp(lambda a: a * 2, (x,), (y.double(),))


@case("jvp_non_tensor_output_raises", X, Y)
def _(lib, x, y):
    return lib.func.jvp(lambda a: 3.0, (x,), (y,))


@case("jvp_scalar", S)
def _(lib, s):
    return lib.func.jvp(lambda a: a**3, (s,), (lib.tensor(1.0),))


@case("jvp_new_tensor_and_list_dict_outputs", M, XB)
def _(lib, m, xb):
    t = xb[:2, :3]

    def composite(a):
        total = a.sum()
        return [(total, {"a": a, "out": [a, total]})]

    return _plain((lib.func.jvp(lambda a: a + a.new_tensor(0.5), (m,), (lib.zeros_like(m),)),
                   lib.func.jvp(lambda a: [a, a.sum()], (m,), (t,)),
                   lib.func.jvp(lambda a: {"x": a, "xsum": a.sum()}, (m,), (t,)),
                   lib.func.jvp(composite, (m,), (t,))))  # fmt: skip


@case("jvp_empty_primals_raises", M)
def _(lib, m):
    return lib.func.jvp(lib.sin, (), ())


@case("jvp_float_primal_raises", M)
def _(lib, m):
    return lib.func.jvp(lib.sin, (1.0,), (m,))


@case("jvp_float_tangent_raises", M)
def _(lib, m):
    return lib.func.jvp(lib.sin, (m,), (1.0,))


@case("jvp_tangent_list_raises", M)
def _(lib, m):
    return lib.func.jvp(lib.sin, (m,), [m])


@case("jvp_more_tangents_raises", M)
def _(lib, m):
    return lib.func.jvp(lib.sin, (m, m), (m, m, m))


@case("jvp_none_output_raises", M)
def _(lib, m):
    return lib.func.jvp(lambda a: None, (m,), (m,))


@case("jvp_aux_not_pair_raises", M)
def _(lib, m):
    return lib.func.jvp(lambda a: [a, a], (m,), (m,), has_aux=True)


@case("jvp_aux_non_tensor_raises", M)
def _(lib, m):
    return lib.func.jvp(lambda a: (a, [a, 1.0]), (m,), (m,), has_aux=True)


@case("jvp_inside_autograd_function", S)
def _(lib, s):
    class MySin(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            _, neg_sin = lib.func.jvp(lib.cos, (a,), (lib.ones_like(a),))
            ctx.save_for_backward(a)
            return -neg_sin

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            _, cos = lib.func.jvp(lib.sin, (a,), (lib.ones_like(a),))
            return g * cos

    leaf = s.clone().requires_grad_(True)
    y = MySin.apply(leaf)
    return y, lib.autograd.grad(y, leaf)


@case("vmap_of_vmap_of_jvp", XB, M)
def _(lib, xb, m):
    tangent = m[0, :2]

    def push(dummy, a):
        return lib.func.jvp(lambda t: (t * t).sum(0), (a,), (tangent,))

    return lib.func.vmap(lib.func.vmap(push, (0, None)))(lib.ones(4, 1), xb[:, :2].reshape(4, 2))


@case("vmap_of_jvp_of_inplace_copy", M, XB)
def _(lib, m, xb):
    def push(a, at, b, bt):
        def f(x, y):
            x = x.clone()
            x.copy_(y)
            return x

        return lib.func.jvp(f, (a, b), (at, bt))

    x, xt, y, yt = m.T, (m * 2).T, xb[:3, :2], xb[1:4, :2]
    return lib.func.vmap(push, in_dims=1)(x, xt, y, yt)


@case("linearize", X, Y)
def _(lib, x, y):
    out, fn = lib.func.linearize(lambda a: a.sin() * a.exp(), x)
    return out, fn(y), fn(y * 3)


@case("linearize_multiple_primals", X, Y)
def _(lib, x, y):
    out, fn = lib.func.linearize(lambda a, b: a * b, x, y)
    return out, fn(y, x)


@case("linearize_forms", M, XB)
def _(lib, m, xb):
    x = m[:, :1].T.contiguous()  # (1, 2)

    def fn(a):
        return a.cos(), a.sum()

    out, jvp_fn = lib.func.linearize(fn, x)
    batched = lib.func.vmap(jvp_fn)(xb[:3, :2].reshape(3, 1, 2))

    def nested(arg):
        a, (b, c) = arg["x"], arg["yz"]
        return {"a": a.sum(), "b": {"c": b + c, "d": (a * c, b.exp())}}

    p = {"x": m[0], "yz": (m[1], xb[0, :3])}
    tp = {"x": xb[1, :3], "yz": (xb[2, :3], xb[3, :3])}
    out2, fn2 = lib.func.linearize(nested, p)
    z = lib.ones(3)
    _, fn3 = lib.func.linearize(lambda a: lib.func.grad(lambda b: z @ (b * b))(a), m[0])
    return _plain((out, jvp_fn(x * 3), batched, out2, fn2(tp), fn3(xb[0, :3])))


@case("linearize_tangent_shape_raises", X)
def _(lib, x):
    return lib.func.linearize(lib.sin, x)[1](x.unsqueeze(0))


@case("linearize_tangent_dtype_raises", X)
def _(lib, x):
    return lib.func.linearize(lib.sin, x)[1](x.double())


@case("linearize_tangent_structure_raises", X)
def _(lib, x):
    return lib.func.linearize(lib.sin, x)[1]((x, x))


# -- jacrev, jacfwd and hessian -------------------------------------------------------------


@case("jacobians_basic", X)
def _(lib, x):
    f = lambda a: a.sin() * a.sum()  # noqa: E731
    return lib.func.jacrev(f)(x), lib.func.jacfwd(f)(x)


@case("jacobians_scalar_output", X)
def _(lib, x):
    f = lambda a: a.pow(2).sum()  # noqa: E731
    return lib.func.jacrev(f)(x), lib.func.jacfwd(f)(x)


@case("jacobians_scalar_input", S)
def _(lib, s):
    f = lambda a: lib.stack([a, a**2, a.sin()])  # noqa: E731
    return lib.func.jacrev(f)(s), lib.func.jacfwd(f)(s)


@case("jacobians_matrix", M)
def _(lib, m):
    f = lambda a: a.T @ a  # noqa: E731
    return lib.func.jacrev(f)(m), lib.func.jacfwd(f)(m)


@case("jacobians_argnums", X, Y)
def _(lib, x, y):
    f = lambda a, b: a * b.exp()  # noqa: E731
    out = []
    for jac in (lib.func.jacrev, lib.func.jacfwd):
        out += [jac(f, argnums=1)(x, y), jac(f, argnums=(0, 1))(x, y)]
    # (torch 2.13's jacfwd gives zeros for a negative argnums: kiln's is jacrev's)
    return (*out, lib.func.jacrev(f, argnums=-1)(x, y))


@case("jacobians_has_aux", X)
def _(lib, x):
    f = lambda a: (a.sin(), {"c": a.cos()})  # noqa: E731
    (jr, aux_r), (jf, aux_f) = (
        lib.func.jacrev(f, has_aux=True)(x),
        lib.func.jacfwd(f, has_aux=True)(x),
    )
    return jr, aux_r["c"], jf, aux_f["c"]


@case("jacobians_pytree_outputs", X)
def _(lib, x):
    f = lambda a: {"s": a.sin(), "p": (a.sum(), a * 2)}  # noqa: E731
    jr, jf = lib.func.jacrev(f)(x), lib.func.jacfwd(f)(x)
    return jr["s"], jr["p"][0], jr["p"][1], jf["s"], jf["p"][0], jf["p"][1]


@case("jacobians_pytree_input", X, Y)
def _(lib, x, y):
    f = lambda p: p["a"] * p["b"]  # noqa: E731
    jr, jf = lib.func.jacrev(f)({"a": x, "b": y}), lib.func.jacfwd(f)({"a": x, "b": y})
    return _sorted(jr), _sorted(jf)


@case("jacobians_multiple_outputs_and_argnums", X, Y)
def _(lib, x, y):
    f = lambda a, b: (a * b, a + b)  # noqa: E731
    return lib.func.jacrev(f, argnums=(0, 1))(x, y), lib.func.jacfwd(f, argnums=(0, 1))(x, y)


def _both(lib, build):
    """`build(jac)` for jacrev and for jacfwd."""
    return build(lib.func.jacrev), build(lib.func.jacfwd)


@case("jacobians_take_and_shape_changes", M)
def _(lib, m):
    return _both(lib, lambda jac: (
        jac(lambda a: lib.take(a, lib.ones(3, dtype=lib.long)))(m.flatten()),
        jac(lambda a: a[0, 1:].unsqueeze(-1))(m),
        jac(lambda a: a)(m[0, 0]), jac(lambda a: a)(m[0, :1])))  # fmt: skip


@case("jacobians_nested", X)
def _(lib, x):
    return _both(lib, lambda jac: jac(jac(lambda a: a.sin().sum()))(x))


@case("jacobians_argnums_tuple_of_one", X, Y)
def _(lib, x, y):
    f = lambda a, b: (2 * a + 3 * b, 4 * a + 5 * b)  # noqa: E731
    return _both(lib, lambda jac: (jac(f, argnums=0)(x, y), jac(f, argnums=(0,))(x, y),
                                   jac(lib.mul, argnums=(0,))(x, y)))  # fmt: skip


@case("jacobians_pytree_inputs_and_outputs", S)
def _(lib, s):
    def f(a, b, c):
        return a[0] + a[1] * 2, {"foo": b * 3 + c * 4}

    args = ((s, s), s, s)
    return _both(lib, lambda jac: (jac(f)(*args), jac(f, argnums=(0,))(*args),
                                   jac(f, argnums=(0, 1))(*args)))  # fmt: skip


@case("jacobians_dict_input_dict_output", X)
def _(lib, x):
    def f(d):
        return {"c": d["a"].sin(), "d": d["b"].cos()}

    def flat(j):
        return tuple((k, _sorted(j[k])) for k in sorted(j))

    return _both(lib, lambda jac: flat(jac(f)({"a": x, "b": x})))


@case("jacobians_unrelated_input_and_output", M, M)
def _(lib, m, n):
    return _both(lib, lambda jac: (jac(lambda a, b: a, argnums=(0, 1))(m, n),
                                   jac(lambda a: n)(m)))  # fmt: skip


@case("jacobians_list_and_composite_outputs", M)
def _(lib, m):
    def composite(a):
        total = a.sum()
        return [(total, {"a": a, "out": [a, total]})]

    return _plain(_both(lib, lambda jac: (jac(lambda a: [a, a.sum()])(m), jac(composite)(m))))


@case("jacobians_aux_pytree", X)
def _(lib, x):
    def f(a):
        y = a.clone()
        return y, {"a": y.cos(), "b": [y.tan()]}

    return _plain(_both(lib, lambda jac: jac(f, has_aux=True)(x)))


@case("jacrev_aux_non_tensor_raises", X)
def _(lib, x):
    return lib.func.jacrev(lambda a: (a, [a, 1.0]), has_aux=True)(x)


@case("jacfwd_aux_non_tensor_raises", X)
def _(lib, x):
    return lib.func.jacfwd(lambda a: (a, "abc"), has_aux=True)(x)


@case("jacrev_empty_output_raises", X)
def _(lib, x):
    return lib.func.jacrev(lambda a: ())(x)


@case("jacfwd_none_output_raises", X)
def _(lib, x):
    return lib.func.jacfwd(lambda a: None)(x)


@case("jacfwd_non_tensor_output_raises", X)
def _(lib, x):
    return lib.func.jacfwd(lambda a: True)(x)


@case("vmap_of_vjp_log_softmax", M, X)
def _(lib, m, v):
    def foo(a, w):
        _, fn = lib.func.vjp(lambda t: lib.log_softmax(t, dim=-1), a)
        return fn(w)[0]

    return lib.func.vmap(foo, (0, None))(m, v)


@case("jacobians_against_autograd_functional", M, XB)
def _(lib, m, xb):
    x, y = xb[:2, :].T.contiguous(), m  # (3, 2) and (2, 3)

    def f(a, b):
        return (a * a) @ b, a @ (a.sum(1) * b), b.sum()

    def g(a, b):
        return a, b, a, b

    def h(a, b, z=3.0):
        return b.sum(), a * b * z

    out = []
    for fn, args in ((f, (x, y)), (g, (x[:, 0], y[0])), (h, (m[0, 0], y[0, :1]))):
        want = lib.autograd.functional.jacobian(fn, args)
        out += [want, _both(lib, lambda jac, fn=fn, args=args: jac(lambda p: fn(*p))(args))]
    return out


@case("jacobians_inplace", X, M)
def _(lib, x, m):
    def f(a, b):
        b.copy_(a)
        return b

    def g(a, b, c):
        a[:2] = b
        return lib.vstack([(a**2).sum(), (c**3).sum()])

    a, b, c = x.clone(), m[0, :2], m[1, :2]
    return _both(lib, lambda jac: (jac(f, argnums=0)(x[:2], m[0, :2].clone()),
                                   jac(g, argnums=(1, 2))(a.clone(), b, c)))  # fmt: skip


@case("jacobians_non_tensor_argument", M)
def _(lib, m):
    return _both(lib, lambda jac: jac(lambda t, k: t + k)(m, 3))


@case("jacrev_chunk_sizes_nested_outputs", XB, M)
def _(lib, xb, m):
    def f(a, b):
        return (a.sin(), a + b), (a + 2, a.sum())

    y = m[:1, :]
    x = xb[:, :3]
    return [lib.func.jacrev(f, argnums=(0, 1), chunk_size=c)(x, y) for c in (None, 1, 2, 7, 1000)]


@case("jacrev_chunk_size_negative_raises", X)
def _(lib, x):
    return lib.func.jacrev(lambda a: a, argnums=(0,), chunk_size=-2)(x)


@case("vmap_of_chunked_jacrev_of_jacrev", XB)
def _(lib, xb):
    def f(a):
        return (a.sin(), a), (a + 2, a.sum())

    jr = lib.func.jacrev
    return lib.func.vmap(jr(jr(f, chunk_size=3), chunk_size=3))(xb[:, :2])


@case("jacrev_complex_input_raises", X)
def _(lib, x):
    return lib.func.jacrev(lambda a: a.conj())(x.to(lib.complex64))


@case("jacfwd_complex_output_raises", X)
def _(lib, x):
    return lib.func.jacfwd(lambda a: lib.conj(a * 0.5j))(x)


@case("hessian_against_autograd_functional", M, XB)
def _(lib, m, xb):
    def f(a, b, c):
        return ((a.relu() * a) @ b.sin() @ c).sum()

    def unrelated(a, b):
        return (a**2).sum()

    def constant(a, b):
        return lib.ones([])

    a, b, c = m, xb[:3, :], xb[:3, :3].T @ xb[:3, :3]
    out = []
    for fn, args in ((f, (a, b[:, :3], c)), (unrelated, (m[0], b[0])), (constant, (m[0], b[0]))):
        out += [lib.autograd.functional.hessian(fn, args), lib.func.hessian(lambda p: fn(*p))(args)]
    return out


@case("vmap_of_hessian_and_jacrev_of_jacrev", XB, M)
def _(lib, xb, m):
    A = xb[:2, :2].reshape(1, 2, 2).expand(4, 2, 2) * 0.1
    x1 = lib.stack([m.T, m.T * 2, m.T + 1, -m.T])  # (4, 3, 2)

    def loss(A, x1, x2):
        return ((x2 - (A @ x1.T).T) ** 2).sum()

    jr = lib.func.jacrev
    return (
        lib.func.vmap(jr(jr(loss)))(A, x1, x1),
        lib.func.vmap(lib.func.hessian(loss))(A, x1, x1),
    )


_JAC_FUNCTIONS = {
    "elementwise": lambda lib, a: (a.sin() * a.exp() + a.tanh() / (1 + a * a)).sigmoid(),
    "powers_and_abs": lambda lib, a: a.abs() ** 1.5 + a.pow(3) - lib.sqrt(a * a + 1),
    "reductions": lambda lib, a: lib.stack(
        [a.sum(), a.prod(), a.norm(), a.logsumexp((0, 1)), a.var(), a.amax(), a.mean()]
    ),  # fmt: skip
    "dim_reductions": lambda lib, a: (
        a.softmax(-1),
        a.log_softmax(0),
        a.cumsum(1),
        a.cumprod(0),
        a.std(1),
        a.max(0).values,
    ),  # fmt: skip
    "products": lambda lib, a: (
        a @ a.T,
        lib.einsum("ij,ik->jk", a, a),
        lib.linalg.det(a[:, :3]),
        lib.linalg.inv(a[:, :3] + 3 * lib.eye(3, dtype=a.dtype)),
    ),  # fmt: skip
    "shape_ops": lambda lib, a: (
        a.T.reshape(2, 6),
        a[1:, ::2],
        lib.cat([a, a * 2], 0),
        a.flip(1),
        lib.roll(a, 1, 0),
        a.repeat(2, 1),
        a.diagonal(),
    ),  # fmt: skip
    "indexing": lambda lib, a: (
        a[lib.tensor([2, 0, 2])],
        lib.gather(a, 1, lib.tensor([[0, 1], [2, 2], [3, 0]])),
        a.masked_fill(a > 0, 0.0),
        lib.where(a > 0, a, a * a),
    ),  # fmt: skip
    "nn": lambda lib, a: (
        lib.nn.functional.layer_norm(a, (4,)),
        lib.nn.functional.gelu(a),
        lib.nn.functional.softplus(a),
        lib.nn.functional.elu(a),
        lib.nn.functional.normalize(a, dim=1),
        lib.nn.functional.cross_entropy(a, lib.tensor([1, 0, 3])),
    ),  # fmt: skip
    "clamps_and_sorts": lambda lib, a: (
        a.clamp(-0.5, 0.5),
        lib.maximum(a, a.T[:3, :3].sum() * 0 + 0.1),
        a.sort(1).values,
        a.topk(2, 0).values,
        a.median(1).values,
    ),  # fmt: skip
}


def _jac_case(name, build):
    @case(f"jacobians_of_{name}", JM)
    def _(lib, a):
        f = lambda t: build(lib, t)  # noqa: E731
        return lib.func.jacrev(f)(a), lib.func.jacfwd(f)(a)


for _name, _build in _JAC_FUNCTIONS.items():
    _jac_case(_name, _build)


@case("hessians_of_functions", JM)
def _(lib, a):
    v = a[0]
    return (lib.func.hessian(lambda t: (t.sin() * t.sum()).exp().sum())(v),
            lib.func.hessian(lambda t: lib.logsumexp(t, 0) + t.norm())(v),
            lib.func.hessian(lambda t: (t.softmax(0) * t).sum())(v),
            lib.func.hessian(lambda t: lib.nn.functional.softplus(t).prod())(v))  # fmt: skip


@case("jacrev_chunk_size", M)
def _(lib, m):
    f = lambda a: a.sin() @ a.T  # noqa: E731
    return (lib.func.jacrev(f, chunk_size=1)(m), lib.func.jacrev(f, chunk_size=3)(m),
            lib.func.jacrev(f, chunk_size=100)(m))  # fmt: skip


@case("jacrev_chunk_size_zero_raises", X)
def _(lib, x):
    return lib.func.jacrev(lambda a: a, chunk_size=0)(x)


@case("jacfwd_randomness", X)
def _(lib, x):
    return lib.func.jacfwd(lambda a: a * 2, randomness="same")(x)


@case("jacrev_integer_output_raises", X)
def _(lib, x):
    return lib.func.jacrev(lambda a: (a > 0).long())(x)


@case("jacrev_integer_input_raises", IX)
def _(lib, i):
    return lib.func.jacrev(lambda a: a * 2.0)(i)


@case("jacfwd_integer_input_raises", IX)
def _(lib, i):
    return lib.func.jacfwd(lambda a: a * 2.0)(i)


@case("jacrev_argnums_out_of_range_raises", X)
def _(lib, x):
    return lib.func.jacrev(lambda a: a, argnums=2)(x)


@case("jacrev_non_tensor_output_raises", X)
def _(lib, x):
    return lib.func.jacrev(lambda a: 3.0)(x)


@case("jacobians_dtype_float64", X)
def _(lib, x):
    x = x.double()
    return lib.func.jacrev(lambda a: a.sin())(x), lib.func.jacfwd(lambda a: a.sin())(x)


@case("hessian", X)
def _(lib, x):
    return lib.func.hessian(lambda a: (a.sin() * a.sum()).sum())(x)


@case("hessian_argnums", X, Y)
def _(lib, x, y):
    f = lambda a, b: (a.pow(2) * b.exp()).sum()  # noqa: E731
    return lib.func.hessian(f, argnums=1)(x, y), lib.func.hessian(f, argnums=(0, 1))(x, y)


@case("hessian_has_aux", X)
def _(lib, x):
    h, aux = lib.func.hessian(lambda a: ((a**3).sum(), a * 2), has_aux=True)(x)
    return h, aux


SCENARIOS.eager_only.update(
    {
        "jvp_inside_autograd_function": (
            "requires_grad_ of a traced value has no meaning in a trace"
        ),
    }
)
SCENARIOS.xfail.update(
    {
        "jvp_tangent_of_another_dtype": (
            "torch's tangent of a float32 primal given in float64 stays float64 "
            "through the function (its output tangent float64); kiln casts it to the "
            "primal's dtype (float32)"
        ),
    }
)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", SCENARIOS.names())
def test_jacobians_match_torch(torch, name, mode):
    SCENARIOS.check(torch, name, mode)
