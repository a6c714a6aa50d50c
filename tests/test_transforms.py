"""Forward mode (`kn.jvp`), `kn.vmap` and the batched jacobians (`kn.jacrev`, `kn.jacfwd`,
`kn.jacobian`, `kn.hessian`): values against central finite differences (float64), against
Python loops, against the per-output jacobian (one `kn.grad` per element of y, as kn.jacobian
was built before), eager against graph mode."""

import numpy as np
import pytest

import kiln as kn
from kiln.passes.program import extract
from kiln.passes.simplify import simplify

RNG = np.random.default_rng(0)
W = RNG.standard_normal((4, 3))

# f: float64[3] -> some shape; each written with ops whose vjps differ in kind
FUNCTIONS = {
    "sin_mul": lambda x: kn.sin(x) * x,
    "tanh_matmul": lambda x: kn.tanh(kn.matmul(W, x)),
    "softmax": lambda x: kn.exp(x) / kn.sum(kn.exp(x)),
    "outer_reshape": lambda x: kn.reshape(x[:, None] * x[None, :], (9,)),
    "transpose_index": lambda x: kn.permute(kn.stack([x, x**2])[:, 1:], (1, 0)),
    "reductions": lambda x: kn.stack([kn.max(x), kn.mean(x * x), kn.prod(x)]),
    "concat_where": lambda x: kn.concat([kn.where(x > 0, x, 2 * x), kn.exp(x[:1])], 0),
}


def numeric_jacobian(f, x, eps=1e-6):
    """Central differences, one column per element of x."""
    cols = []
    for i in range(x.size):
        d = np.zeros_like(x)
        d.flat[i] = eps
        cols.append((f(x + d) - f(x - d)).reshape(-1) / (2 * eps))
    y = f(x)
    return np.stack(cols, axis=-1).reshape(*np.shape(y), *x.shape)


def run_graph(build, *arrays):
    """Builds `build(*placeholders)` in a fresh graph and runs it on the arrays."""
    with kn.Graph().as_default():
        xs = [kn.placeholder(kn.float64, a.shape, name=f"x{i}") for i, a in enumerate(arrays)]
        out = build(*xs)
        return kn.function(xs, out)(*arrays)


def value(f, x):
    return run_graph(f, x)


X = np.array([0.3, -0.7, 1.2])


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_jvp_graph_matches_finite_differences(name):
    f = FUNCTIONS[name]
    t = np.array([0.5, 1.0, -2.0])
    y, dy = run_graph(lambda x, v: kn.jvp(f, (x,), (v,)), X, t)
    jac = numeric_jacobian(lambda a: value(f, a), X)
    np.testing.assert_allclose(y, value(f, X))
    np.testing.assert_allclose(dy, jac @ t if jac.ndim == 2 else np.tensordot(jac, t, 1),
                               rtol=1e-6, atol=1e-8)  # fmt: skip


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_jvp_eager_equals_graph(name):
    f = FUNCTIONS[name]
    t = np.array([0.5, 1.0, -2.0])
    y, dy = run_graph(lambda x, v: kn.jvp(f, (x,), (v,)), X, t)
    ye, dye = kn.jvp(f, (kn.tensor(X),), (kn.tensor(t),))
    assert isinstance(dye, kn.Tensor) and not dye.requires_grad
    np.testing.assert_allclose(ye.numpy(), y, rtol=1e-12)
    np.testing.assert_allclose(dye.numpy(), dy, rtol=1e-10, atol=1e-12)


def test_jvp_several_primals_and_outputs():
    """f(a, b) = (a * b, sum(a)); tangents by hand: (ta*b + a*tb, sum(ta))."""
    a, b = np.array([1.0, 2.0]), np.array([3.0, -1.0])
    ta, tb = np.array([1.0, 0.5]), np.array([2.0, 1.0])
    f = lambda p, q: (p * q, kn.sum(p))  # noqa: E731
    y0, y1, t0, t1 = run_graph(
        lambda p, q, u, v: [x for pair in kn.jvp(f, (p, q), (u, v)) for x in pair], a, b, ta, tb
    )
    np.testing.assert_allclose(t0, ta * b + a * tb)
    np.testing.assert_allclose(t1, ta.sum())
    (e0, e1), (s0, s1) = kn.jvp(f, (kn.tensor(a), kn.tensor(b)), (kn.tensor(ta), kn.tensor(tb)))
    np.testing.assert_allclose(s0.numpy(), t0)
    np.testing.assert_allclose(s1.numpy(), t1)


def test_jvp_of_output_that_does_not_depend_on_the_primal_is_zero():
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float64, (2,), name="x")
        y, dy = kn.jvp(lambda v: kn.constant(np.ones(2)) * 3.0, (x,), (x,))
        np.testing.assert_array_equal(kn.function([x], dy)(np.ones(2)), [0.0, 0.0])
    _, dye = kn.jvp(lambda v: kn.tensor([1.0, 2.0]), (kn.tensor([1.0, 1.0]),), (kn.ones(2),))
    np.testing.assert_array_equal(dye.numpy(), [0.0, 0.0])


def test_jvp_under_compile_equals_eager():
    f = FUNCTIONS["tanh_matmul"]
    step = kn.compile(lambda x, t: kn.jvp(f, (x,), (t,))[1])
    t = np.array([1.0, -1.0, 0.5])
    _, expected = kn.jvp(f, (kn.tensor(X),), (kn.tensor(t),))
    np.testing.assert_allclose(step(kn.tensor(X), kn.tensor(t)).numpy(), expected.numpy())


def per_output_jacobian(f, x):
    """The jacobian as kn.jacobian built it before: one kn.grad per element of y."""

    def build(xs):
        y = f(xs)
        flat = kn.reshape(y, (y.size,))
        rows = [kn.grad(flat[i], [xs], disconnected="zero")[0] for i in range(y.size)]
        return kn.reshape(kn.stack(rows), (*y.shape, *xs.shape))

    return run_graph(build, x)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
@pytest.mark.parametrize("mode", ["jacobian", "jacrev", "jacfwd"])
def test_jacobians_match_per_output_and_finite_differences(name, mode):
    f = FUNCTIONS[name]
    if mode == "jacobian":
        jac = run_graph(lambda x: kn.jacobian(f(x), x), X)
    else:
        jac = run_graph(getattr(kn, mode)(f), X)
    np.testing.assert_allclose(jac, per_output_jacobian(f, X), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(jac, numeric_jacobian(lambda a: value(f, a), X),
                               rtol=1e-6, atol=1e-8)  # fmt: skip


@pytest.mark.parametrize("mode", ["jacrev", "jacfwd"])
def test_jacobian_eager_equals_graph(mode):
    f = FUNCTIONS["softmax"]
    graph = run_graph(getattr(kn, mode)(f), X)
    eager = getattr(kn, mode)(f)(kn.tensor(X))
    assert isinstance(eager, kn.Tensor)
    np.testing.assert_allclose(eager.numpy(), graph, rtol=1e-12)
    np.testing.assert_allclose(getattr(kn, mode)(f)(X), graph, rtol=1e-12)  # NumPy in and out


def test_jacobian_with_respect_to_several_arguments():
    """d(a @ b)/da and d(a @ b)/db for a [2,3] @ b [3]: by hand, b along a's rows and a."""
    a, b = RNG.standard_normal((2, 3)), RNG.standard_normal(3)
    for mode in ("jacrev", "jacfwd"):
        ja, jb = getattr(kn, mode)(lambda p, q: p @ q, argnums=(0, 1))(a, b)
        expected_a = np.zeros((2, 2, 3))
        expected_a[0, 0], expected_a[1, 1] = b, b
        np.testing.assert_allclose(ja, expected_a, atol=1e-15)
        np.testing.assert_allclose(jb, a)


def test_hessian_forward_over_reverse():
    """f = sum(x^3) + x0 x1 x2: H = diag(6x) + the mixed terms, by hand."""
    f = lambda x: kn.sum(x**3) + x[0] * x[1] * x[2]  # noqa: E731
    x0, x1, x2 = X
    expected = np.diag(6 * X) + np.array([[0, x2, x1], [x2, 0, x0], [x1, x0, 0]])
    np.testing.assert_allclose(run_graph(lambda x: kn.hessian(f(x), x), X), expected)
    np.testing.assert_allclose(kn.hessian(f)(kn.tensor(X)).numpy(), expected)
    np.testing.assert_allclose(kn.hessian(f)(X), expected)


def test_jacobian_of_tanh_matmul_compiles_to_quadratic_work():
    """Batched reverse mode's seeds are the identity: simplify turns diag(v) @ W into
    v[:, None] * W, so the compiled program has no [n, n] @ [n, n] product."""
    w = RNG.standard_normal((64, 64))
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float64, (64,), name="x")
        jac = kn.jacobian(kn.tanh(kn.constant(w) @ x), x)
        program = simplify(extract([jac], [x], {}))
    products = [n for n in program.nodes if n.op.name == "matmul"]
    assert all(min(i.ndim for i in n.inputs) == 1 for n in products), str(program)
    xv = RNG.standard_normal(64)
    expected = (1 - np.tanh(w @ xv) ** 2)[:, None] * w
    np.testing.assert_allclose(run_graph(lambda v: kn.jacobian(kn.tanh(kn.constant(w) @ v), v),
                                         xv), expected, rtol=1e-12)  # fmt: skip


def test_jacobian_builds_few_nodes():
    """One batched pass: the node count does not grow with the output size."""
    sizes = []
    for n in (8, 64):
        with kn.Graph().as_default() as g:
            x = kn.placeholder(kn.float32, (n,), name="x")
            y = kn.tanh(kn.constant(np.ones((n, n), np.float32)) @ x)
            before = len(g.nodes)
            kn.jacobian(y, x)
            sizes.append(len(g.nodes) - before)
    assert sizes[0] == sizes[1] < 40


# -- vmap ------------------------------------------------------------------------------------


def loop(f, *arrays, axes=None):
    axes = axes or (0,) * len(arrays)
    n = next(a.shape[ax] for a, ax in zip(arrays, axes) if ax is not None)
    outs = []
    for i in range(n):
        args = [a if ax is None else np.take(a, i, axis=ax) for a, ax in zip(arrays, axes)]
        outs.append(run_graph(f, *args))
    return np.stack(outs)


MATMUL_SHAPES = [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)),
                 ((5, 2, 3), (3, 4)), ((2, 3), (5, 3, 4))]  # fmt: skip


@pytest.mark.parametrize("shapes", MATMUL_SHAPES, ids=str)
@pytest.mark.parametrize("mapped", [(0, 0), (0, None), (None, 0)], ids=str)
def test_vmap_matmul_matches_loop(shapes, mapped):
    a = RNG.standard_normal(((4,) if mapped[0] == 0 else ()) + shapes[0])
    b = RNG.standard_normal(((4,) if mapped[1] == 0 else ()) + shapes[1])
    got = run_graph(kn.vmap(lambda p, q: p @ q, in_axes=mapped), a, b)
    np.testing.assert_allclose(got, loop(lambda p, q: p @ q, a, b, axes=mapped), rtol=1e-12)


VMAPPED = {
    "elementwise_broadcast": lambda x: kn.exp(x) * kn.constant(np.arange(3.0)) + 1.0,
    "reduce": lambda x: kn.stack([kn.sum(x), kn.max(x), kn.mean(x)]),
    "reduce_axis_keepdims": lambda x: kn.sum(kn.reshape(x, (3, 1)) * x, axis=0, keepdims=True),
    "reshape_transpose": lambda x: kn.permute(kn.reshape(x[None, :] * x[:, None], (3, 3)), (1, 0)),
    "index_concat": lambda x: kn.concat([x[1:], kn.constant(np.ones(2)), x[:1]], 0),
    "argmax": lambda x: kn.argmax(x * x),
    "broadcast": lambda x: kn.broadcast_to(x, (2, 3)) + kn.sum(x),
    "pad": lambda x: kn.nn.functional.pad(x, (1, 2)),
    "softmax_cumsum": lambda x: kn.cumsum(kn.softmax(x, 0), 0),
    "argsort_take": lambda x: kn.take_along_axis(x, kn.argsort(x, 0), 0),
    "take_fixed_indices": lambda x: kn.take_along_axis(x, kn.constant(np.array([2, 0])), 0),
    "gather": lambda x: x[kn.constant(np.array([[2, 0], [1, 1]]))],
    "logcumsumexp_scalar": lambda x: kn.logcumsumexp(kn.sum(x), 0),
    "inv_det": lambda x: kn.det(kn.inverse(kn.reshape(x[:1], (1, 1)) + kn.eye(1))),
}


@pytest.mark.parametrize("name", sorted(VMAPPED))
def test_vmap_matches_loop_graph_and_eager(name):
    f = VMAPPED[name]
    xs = RNG.standard_normal((5, 3))
    expected = loop(f, xs)
    np.testing.assert_allclose(run_graph(kn.vmap(f), xs), expected, rtol=1e-12)
    np.testing.assert_allclose(kn.vmap(f)(kn.tensor(xs)).numpy(), expected, rtol=1e-12)


def test_vmap_in_axes_and_out_axes():
    a, b = RNG.standard_normal((3, 4)), RNG.standard_normal(3)
    f = kn.vmap(lambda col, v: col * v, in_axes=(1, None), out_axes=1)
    np.testing.assert_allclose(f(a, b), a * b[:, None], rtol=1e-12)


def test_vmap_of_unbatched_output_broadcasts():
    got = kn.vmap(lambda x: kn.constant(np.array([1.0, 2.0])))(np.zeros((3, 5)))
    np.testing.assert_array_equal(got, np.tile([1.0, 2.0], (3, 1)))


def test_vmap_of_gradient():
    """Per-example gradients of sum(w * x)^2 with respect to x: 2 * (w . x) * w."""
    w = np.array([1.0, -2.0, 0.5])

    def per_example(x):
        return kn.grad(kn.sum(kn.constant(w) * x) ** 2, [x])[0]

    xs = RNG.standard_normal((4, 3))
    got = run_graph(kn.vmap(per_example), xs)
    np.testing.assert_allclose(got, 2 * (xs @ w)[:, None] * w, rtol=1e-12)


def test_vmap_error_names_the_op_without_a_rule():
    # (nonzero: its shape depends on the data, so it has no batching rule; solve, which this
    # used, has one now)
    with kn.Graph().as_default():
        xs = kn.placeholder(kn.float64, (4, 3), name="xs")
        with pytest.raises(kn.GraphError, match="no batching rule for nonzero"):
            kn.vmap(lambda x: kn.nonzero(x))(xs)


def test_vmap_of_indices_into_a_fixed_table():
    """Embedding rows by a batch of ids: gather with only the indices batched."""
    table = RNG.standard_normal((5, 2))
    ids = np.array([[0, 4], [3, 3], [1, 2]])
    got = kn.vmap(lambda i: kn.embedding(kn.constant(table), i))(ids)
    np.testing.assert_array_equal(got, table[ids])


def test_jacobian_of_cross_entropy():
    """take_along_axis and its transpose batched: d CE / d logits = softmax - onehot."""
    labels = np.array([1, 0])
    f = lambda z: kn.cross_entropy(kn.reshape(z, (2, 3)), kn.constant(labels))  # noqa: E731
    z = RNG.standard_normal(6)
    p = np.exp(z.reshape(2, 3)) / np.exp(z.reshape(2, 3)).sum(1, keepdims=True)
    p[np.arange(2), labels] -= 1
    for mode in ("jacrev", "jacfwd"):
        np.testing.assert_allclose(run_graph(getattr(kn, mode)(f), z), p.reshape(6) / 2,
                                   rtol=1e-12, atol=1e-15)  # fmt: skip


def test_vmap_refuses_mismatched_sizes():
    with pytest.raises(kn.ShapeError, match="same size in the mapped dimension"):
        kn.vmap(lambda a, b: a + b)(np.ones((2, 3)), np.ones((4, 3)))


def test_jvp_uses_an_ops_jvp_rule_where_it_has_no_vjp():
    """An op with a forward rule and no vjp (as a loop whose reverse mode is refused): kn.jvp
    uses the rule, kn.grad refuses. cube: d(x^3) = 3 x^2 t, by hand."""
    from kiln.graph.opdef import OpDef
    from kiln.ops.core import bind_graph, same_dtype, same_shape

    cube = OpDef("cube_forward_only", same_shape, same_dtype, lambda xp, x, out=None: x**3,
                 jvp=lambda ts, y, x: ts[0] * x * x * 3.0)  # fmt: skip
    x, t = np.array([1.0, -2.0]), np.array([0.5, 1.0])
    with kn.Graph().as_default():
        xs, ts = kn.placeholder(kn.float64, (2,), name="x"), kn.placeholder(kn.float64, (2,))
        y, dy = kn.jvp(lambda v: kn.sin(bind_graph(cube, (v,), {})), (xs,), (ts,))
        got = kn.function([xs, ts], [y, dy])(x, t)
        with pytest.raises(kn.GraphError, match="no gradient rule for cube_forward_only"):
            kn.grad(kn.sum(y), [xs])
    np.testing.assert_allclose(got[0], np.sin(x**3))
    np.testing.assert_allclose(got[1], np.cos(x**3) * 3 * x**2 * t)


def test_jvp_builds_locally():
    """Forward mode builds for the nodes between the xs and the ys only (and visits only
    nodes made since the xs): a long prefix of the graph adds nothing to what it builds."""
    counts = []
    for prefix in (0, 300):
        with kn.Graph().as_default() as g:
            z = kn.placeholder(kn.float64, (3,), name="z")
            for _ in range(prefix):
                z = kn.sin(z)
            x = kn.placeholder(kn.float64, (3,), name="x")
            y = kn.exp(x * z)
            before = len(g.nodes)
            kn.jvp(lambda v: kn.tanh(v) * y, (x,), (x,))
            counts.append(len(g.nodes) - before)
    assert counts[0] == counts[1]


def test_transforms_compose():
    """vmap of vmap, per-example jacobians, jacfwd of jacrev, vmap of hessian; by hand:
    d(sin(v) sum(v))/dv = diag(cos(v) sum(v)) + sin(v) 1^T, and the hessian of
    sum(sin(v) v) is diag(2 cos(v) - v sin(v))."""
    xs = RNG.standard_normal((4, 3, 2))
    f = lambda v: kn.sum(kn.sin(v) * v)  # noqa: E731
    np.testing.assert_allclose(kn.vmap(kn.vmap(f))(xs), (np.sin(xs) * xs).sum(-1), rtol=1e-12)
    g = lambda v: kn.sin(v) * kn.sum(v)  # noqa: E731
    vs = xs[:, :, 0]
    jacs = kn.vmap(kn.jacrev(g))(vs)
    hess = kn.vmap(kn.hessian(f))(vs)
    for v, jac, h in zip(vs, jacs, hess):
        np.testing.assert_allclose(jac, np.diag(np.cos(v) * v.sum()) + np.sin(v)[:, None])
        np.testing.assert_allclose(h, np.diag(2 * np.cos(v) - v * np.sin(v)), atol=1e-15)
    np.testing.assert_allclose(kn.jacfwd(kn.jacrev(f))(vs[0]), hess[0], atol=1e-15)


def test_vmap_of_grad_matches_torch_func():
    # torch.vmap(torch.func.grad(lambda x: (x**3).sum()))(x) is 3 x**2 row by row (computed by
    # torch 2.13: [[3, 12], [27, 48]]); kiln's symbolic grad under vmap passed an unknown
    # `disconnected` option and raised ArgumentError
    f = lambda x: (x**3).sum()  # noqa: E731
    x = kn.tensor([[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_array_equal(
        kn.vmap(kn.func.grad(f))(x).numpy(), np.array([[3.0, 12.0], [27.0, 48.0]], np.float32)
    )
    # an input the function does not read gets zeros, as torch.func.grad gives
    g = kn.vmap(kn.func.grad(lambda a, b: (a * a).sum(), argnums=(0, 1)))(x, x)
    np.testing.assert_array_equal(g[1].numpy(), np.zeros((2, 2), np.float32))
