"""Complex numbers against PyTorch (torch 2.13 as the reference, skipped without it): dtypes
and promotion, factories and printing, the parts of complex values, arithmetic and the other
ops that take them, and gradients (PyTorch's convention: the conjugate Wirtinger derivative of
a real loss) in eager mode, graph mode and under kn.compile."""

import numpy as np
import pytest

import kiln as kn
from kiln.passes.fuse import fusable

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(7)
Z = (RNG.standard_normal(6) + 1j * RNG.standard_normal(6)).astype(np.complex128)
R = RNG.standard_normal(6)


# -- dtypes and promotion -----------------------------------------------------------------------

REALS = ["bool", "uint8", "int32", "int64", "bfloat16", "float32", "float64"]
COMPLEX = ["complex64", "complex128"]


@pytest.mark.parametrize("a", REALS + COMPLEX)
@pytest.mark.parametrize("b", COMPLEX)
def test_promotion_is_pytorchs(a, b):
    ta, tb = getattr(torch, a), getattr(torch, b)
    ka, kb = kn.dtypes.as_dtype(a), kn.dtypes.as_dtype(b)
    dims = kn.result_type(np.zeros(2, ka), np.zeros(2, kb))
    assert dims.name == str(torch.promote_types(ta, tb)).split(".")[1]
    zero_dim = kn.result_type(np.zeros(2, ka), np.zeros((), kb))
    want = torch.result_type(torch.zeros(2, dtype=ta), torch.zeros((), dtype=tb))
    assert zero_dim.name == str(want).split(".")[1]
    if a not in COMPLEX:
        want = torch.result_type(torch.zeros(2, dtype=ta), 1j)
        assert kn.result_type(np.zeros(2, ka), 1j).name == str(want).split(".")[1]


def test_dtype_names_and_factories():
    assert kn.cfloat is kn.complex64 and kn.cdouble is kn.complex128
    assert kn.tensor([1 + 2j]).dtype == kn.complex64  # torch: the default complex dtype
    assert kn.tensor(1j).dtype == kn.complex64 and kn.tensor([1, 2j]).dtype == kn.complex64
    assert kn.zeros(2, dtype=kn.cdouble).dtype == kn.complex128
    assert kn.full((2,), 1 + 1j).dtype == torch_dtype_name(torch.full((2,), 1 + 1j).dtype)
    assert kn.tensor([1 + 2j]).is_complex() and not kn.ones(1).is_complex()
    kn.set_default_dtype(kn.float64)
    try:
        assert kn.tensor([1j]).dtype == kn.complex128
    finally:
        kn.set_default_dtype(kn.float32)
    assert kn.ones(2).cfloat().dtype == kn.complex64 and kn.ones(2).cdouble().dtype == kn.complex128
    assert complex(kn.tensor(1 + 2j)) == complex(torch.tensor(1 + 2j)) == 1 + 2j
    assert kn.tensor([1 + 2j, 3j]).tolist() == torch.tensor([1 + 2j, 3j]).tolist()


def torch_dtype_name(dtype):
    return kn.dtypes.as_dtype(str(dtype).split(".")[1])


@pytest.mark.parametrize(
    "values, dtype",
    [
        ([1 + 2j, 3 - 40j], "complex64"),
        ([-1.1312044 + 2.4717267j, -13.128783 + 15.200785j], "complex64"),
        ([1e-5 + 2j, 3 - 40j], "complex64"),
        ([[1.5 + 2j], [-3 - 4.25j]], "complex128"),
        (1j, "complex64"),
        ([], "complex64"),
        ([float("nan") + 1j], "complex128"),
    ],
)
def test_printing_is_pytorchs(values, dtype):
    want = repr(torch.tensor(values, dtype=getattr(torch, dtype))).replace("torch.", "kiln.")
    assert repr(kn.tensor(values, dtype=dtype)) == want


# -- the parts of complex values ----------------------------------------------------------------


def test_parts_match_pytorch():
    z, zt = kn.tensor(Z), torch.tensor(Z)
    for got, want in [
        (z.real, zt.real), (z.imag, zt.imag), (kn.real(z), torch.real(zt)),
        (z.conj(), zt.conj()), (kn.conj_physical(z), torch.conj_physical(zt)),
        (z.angle(), zt.angle()), (z.abs(), zt.abs()), (kn.view_as_real(z), torch.view_as_real(zt)),
        (kn.view_as_complex(kn.tensor(R.reshape(3, 2))),
         torch.view_as_complex(torch.tensor(R.reshape(3, 2)))),
        (kn.complex(kn.tensor(R), kn.tensor(R[::-1].copy())),
         torch.complex(torch.tensor(R), torch.tensor(R[::-1].copy()))),
        (kn.polar(kn.tensor(np.abs(R)), kn.tensor(R)),
         torch.polar(torch.tensor(np.abs(R)), torch.tensor(R))),
        (kn.angle(kn.tensor([-2.0, 0.0, 3.0, float("nan")])),
         torch.angle(torch.tensor([-2.0, 0.0, 3.0, float("nan")]))),
        (z.isreal(), zt.isreal()), (z.reshape(2, 3).mH, zt.reshape(2, 3).mH),
    ]:  # fmt: skip
        assert got.dtype == torch_dtype_name(want.dtype)
        want = want.resolve_conj().numpy()
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-15)
    x = kn.tensor(Z)
    x.conj_physical_()
    np.testing.assert_array_equal(x.numpy(), np.conj(Z))
    assert kn.real(kn.ones(2)).tolist() == [1.0, 1.0]  # a real value is its own real part
    with pytest.raises(RuntimeError, match="imag is not implemented"):
        kn.ones(2).imag


def test_ops_that_pytorch_refuses_on_complex_values_raise():
    z, w = kn.tensor(Z), kn.tensor(Z, requires_grad=True)  # the short path and the tape's
    for fn in (kn.maximum, kn.greater, lambda a, b: kn.floor(a), lambda a, b: a < 1.0):
        for a, b in ((z, z), (w, z), (z, w)):
            with pytest.raises(kn.DTypeError, match="complex"):
                fn(a, b)
    with kn.Graph().as_default():
        p = kn.placeholder(kn.complex64, (3,))
        with pytest.raises(kn.DTypeError, match="complex"):
            kn.relu(p)
    with pytest.raises(kn.DTypeError):
        kn.complex(kn.ones(2), kn.ones(2, dtype=kn.float64))  # parts of one dtype, as torch
    with pytest.raises(RuntimeError, match="real scalar outputs"):
        kn.tensor(Z, requires_grad=True).sum().backward()


# -- arithmetic, functions and reductions, values and gradients in three modes ----------------

FNS = {
    "mul-abs": lambda m, z, r: (z * z * r).abs().sum(),
    "exp-sin-parts": lambda m, z, r: (m.exp(z) * 2).real.sum() + m.sin(z).imag.sum(),
    "div": lambda m, z, r: (r / z + z / (r + 3)).abs().sum(),
    "tanh-sigmoid-sqrt-log": lambda m, z, r: (
        (m.tanh(z) + m.sigmoid(z) + m.sqrt(z) + m.log(z) + m.cos(z)).abs().pow(2).sum()
    ),
    "angle-conj": lambda m, z, r: (m.angle(z) + m.angle(r)).sum() + m.conj(z).imag.sum(),
    "complex-polar": lambda m, z, r: (
        (m.complex(r, r * 2) * z).abs().sum() + m.polar(r.abs(), r).real.sum()
    ),
    "view-as-real": lambda m, z, r: (
        m.view_as_real(z * z).sum() + m.view_as_complex(m.stack([r, r * r], -1)).abs().sum()
    ),
    "matmul": lambda m, z, r: (
        (z.reshape(2, 3) @ z.reshape(3, 2) @ r[:4].reshape(2, 2).to(z.dtype)).abs().sum()
    ),
    "bmm-mm": lambda m, z, r: (
        m.bmm(z.reshape(1, 2, 3), z.reshape(1, 3, 2)).abs().sum()
        + m.mm(z.reshape(2, 3), r.reshape(3, 2).to(z.dtype)).real.sum()
    ),
    "pow-prod-mean": lambda m, z, r: (
        (z**2 + z**z + z.prod() + z.mean() * z.sum() + 2**z).abs().sum()
    ),
    "cat-stack-index": lambda m, z, r: (
        (m.cat([z, z * 2])[1:5] * m.stack([z, z])[1][:4]).abs().sum()
    ),
    "einsum": lambda m, z, r: m.einsum("ij,jk->ik", z.reshape(2, 3), z.reshape(3, 2)).abs().sum(),
    "python-complex": lambda m, z, r: ((r * (2 - 1j) + 1j) * z).abs().sum(),
    "inverse-trig": lambda m, z, r: (
        (
            m.asin(z * 0.3)
            + m.acos(z * 0.3)
            + m.atan(z * 0.3)
            + m.asinh(z)
            + m.acosh(z + 3)
            + m.atanh(z * 0.3)
            + m.tan(z * 0.3)
            + m.sinh(z)
            + m.cosh(z)
        )
        .abs()
        .sum()
    ),
    "exp2-log2-log10-reciprocal": lambda m, z, r: (
        (m.exp2(z) + m.log2(z) + m.log10(z) + m.reciprocal(z) + m.rsqrt(z) + z.square()).abs().sum()
    ),
    "sgn-vdot-norms": lambda m, z, r: (
        m.sgn(z).real.sum()
        + m.vdot(z, z * r).imag
        + m.linalg.vector_norm(z)
        + z.norm()
        + z.var()
        + z.std(dim=0)
    ),
    "det-inv-solve": lambda m, z, r: (
        m.linalg.det(z[:4].reshape(2, 2)) * m.linalg.inv(z[:4].reshape(2, 2)).sum()
        + m.linalg.solve(z[:4].reshape(2, 2), z[4:] * r[4:]).sum()
    ).abs(),
    "cumsum-cumprod-where": lambda m, z, r: (
        (z.cumsum(0) + (z * 0.5).cumprod(0) + m.where(r > 0, z, 2 * z)).abs().sum()
    ),
}


def _grad(t):
    return None if t.grad is None else t.grad.numpy()


def _torch_reference(fn):
    zt, rt = torch.tensor(Z, requires_grad=True), torch.tensor(R, requires_grad=True)
    out = fn(torch, zt, rt)
    out.backward()
    return out.detach().numpy(), _grad(zt), _grad(rt)


def _check(got, want):
    for g, w in zip(got, want):
        if w is None:
            assert g is None or not np.any(g), g
        else:
            np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", sorted(FNS))
def test_values_and_gradients_match_pytorch_in_every_mode(name):
    fn = FNS[name]
    want = _torch_reference(fn)
    zk, rk = kn.tensor(Z, requires_grad=True), kn.tensor(R, requires_grad=True)
    out = fn(kn, zk, rk)
    out.backward()
    _check((out.detach().numpy(), _grad(zk), _grad(rk)), want)
    zc, rc = kn.tensor(Z, requires_grad=True), kn.tensor(R, requires_grad=True)
    out = kn.compile(lambda z, r: fn(kn, z, r))(zc, rc)
    out.backward()
    _check((out.detach().numpy(), _grad(zc), _grad(rc)), want)
    with kn.Graph().as_default():
        z, r = kn.placeholder(kn.complex128, (6,)), kn.placeholder(kn.float64, (6,))
        y = fn(kn, z, r)
        gz, gr = kn.grad(y, [z, r], disconnected="zero")
        got = kn.function([z, r], [y, gz, gr])(Z, R)
    assert got[1].dtype == np.complex128 and got[2].dtype == np.float64
    _check(got, want)


def test_second_order_gradient_matches_pytorch():
    zt = torch.tensor(Z, requires_grad=True)
    (g,) = torch.autograd.grad((zt * zt * zt).abs().sum(), zt, create_graph=True)
    g.abs().sum().backward()
    z = kn.tensor(Z, requires_grad=True)
    (gk,) = kn.autograd.grad((z * z * z).abs().sum(), z, create_graph=True)
    gk.abs().sum().backward()
    np.testing.assert_allclose(gk.detach().numpy(), g.detach().numpy(), rtol=1e-10)
    np.testing.assert_allclose(z.grad.numpy(), zt.grad.numpy(), rtol=1e-10)


def test_complex_gradient_seed_in_graph_and_eager():
    # d/dz of y = z * w with gradient v: PyTorch's grad is v * conj(w)
    w = kn.tensor(Z[::-1].copy())
    z = kn.tensor(Z, requires_grad=True)
    v = (R + 1j * R[::-1]).astype(np.complex128)
    (z * w).backward(kn.tensor(v))
    np.testing.assert_allclose(z.grad.numpy(), v * np.conj(Z[::-1]), rtol=1e-12)
    with kn.Graph().as_default():
        p = kn.placeholder(kn.complex128, (6,))
        y = p * kn.constant(Z[::-1].copy())
        (g,) = kn.grad(y, [p], grad_ys=[kn.constant(v)])
        np.testing.assert_allclose(kn.function([p], [g])(Z)[0], v * np.conj(Z[::-1]))


# -- compilation: complex values stay out of the fused kernels ---------------------------------


def test_compiled_complex_chains_match_eager_and_are_not_fused():
    n = 50_000
    za = (RNG.standard_normal(n) + 1j * RNG.standard_normal(n)).astype(np.complex64)
    ra = RNG.standard_normal(n).astype(np.float32)

    def f(z, r):
        return ((z * r + kn.exp(z)).sin() * 2 - r / z).tanh().abs() + r

    want = f(kn.tensor(za), kn.tensor(ra)).numpy()
    np.testing.assert_allclose(
        want, np.abs(np.tanh(np.sin(za * ra + np.exp(za)) * 2 - ra / za)) + ra, rtol=1e-5
    )
    compiled = kn.compile(f)
    for _ in range(3):  # the planned program, then its steady state
        np.testing.assert_array_equal(compiled(kn.tensor(za), kn.tensor(ra)).numpy(), want)
    with kn.Graph().as_default():
        z, r = kn.placeholder(kn.complex64, (n,)), kn.placeholder(kn.float32, (n,))
        y = f(z, r)
        complex_nodes = [nd for nd in y.graph.nodes if nd.out.dtype.kind == "c"]
        assert complex_nodes and not any(fusable(nd) for nd in complex_nodes)
        fn = kn.function([z, r], [y])
        for _ in range(3):
            np.testing.assert_array_equal(fn(za, ra)[0], want)


def test_json_dump_round_trips_complex_constants():
    with kn.Graph().as_default():
        x = kn.placeholder(kn.complex64, (2,), name="x")
        y = (x * kn.constant(np.array([1 + 2j, 3 - 4j], np.complex64)) + (0.5 - 1j)).abs()
    g = kn.load_graph(kn.dump(y, "json"))
    assert kn.dump(g.outputs[0]) == kn.dump(y)
    feed = np.array([1j, 2], np.complex64)
    want = np.abs(feed * np.array([1 + 2j, 3 - 4j], np.complex64) + np.complex64(0.5 - 1j))
    np.testing.assert_allclose(kn.function(g.inputs, g.outputs)(feed)[0], want, rtol=1e-6)


def test_onnx_export_refuses_complex_values():
    pytest.importorskip("onnx")
    with kn.Graph().as_default():
        x = kn.placeholder(kn.complex64, (2,), name="x")
        f = kn.function([x], [(x * x).abs()])
    with pytest.raises(kn.GraphError, match="op mul on a complex value has no ONNX form"):
        kn.export_onnx(f, "unused.onnx")


def test_compiled_call_with_complex_and_real_outputs_routes_both_cotangents():
    w = (R[:3] - 1j * R[3:]).astype(np.complex128)

    def f(m, z):
        y = m.exp(z) * z
        return y, (y * y.conj()).real.sum()

    zt = torch.tensor(Z[:3], requires_grad=True)
    y, s = f(torch, zt)
    ((y * torch.tensor(w)).real.sum() + s).backward()
    z = kn.tensor(Z[:3], requires_grad=True)
    y, s = kn.compile(lambda v: f(kn, v))(z)
    ((y * kn.tensor(w)).real.sum() + s).backward()
    np.testing.assert_allclose(z.grad.numpy(), zt.grad.numpy(), rtol=1e-12)


# -- kn.linalg.eig ----------------------------------------------------------------------------


def _phase(vectors):
    """The phase of each eigenvector's (column's) first element."""
    first = vectors[..., :1, :]
    return first / np.abs(first)


@pytest.mark.parametrize("kind", ["real", "complex"])
def test_eig_values_vectors_and_gradient_match_pytorch_in_every_mode(kind):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((2, 3, 3))
    if kind == "complex":
        a = a + 1j * rng.standard_normal((2, 3, 3))
    w = rng.standard_normal((2, 3)) + 1j * rng.standard_normal((2, 3))
    u = np.abs(rng.standard_normal((2, 1, 3)))

    def loss(values, vectors, lib):  # independent of each eigenvector's phase, as it must be
        return (values * lib(w)).real.sum() + ((vectors * vectors.conj()).real * lib(u)).sum()

    at = torch.tensor(a, requires_grad=True)
    lt, vt = torch.linalg.eig(at)
    loss(lt, vt, torch.tensor).backward()
    want = (lt.detach().numpy(), vt.detach().numpy(), at.grad.numpy())

    def f(x):
        values, vectors = kn.linalg.eig(x)
        lib = kn.constant if isinstance(x, kn.Symbol) else kn.tensor
        return values, vectors, loss(values, vectors, lib)

    def check(values, vectors, grad):  # eigenvectors up to each one's phase (LAPACK's choice)
        vectors = vectors * _phase(want[1]) / _phase(vectors)
        for got, expected in zip((values, vectors, grad), want):
            assert got.dtype == expected.dtype
            np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12)

    for run in (f, kn.compile(f)):
        x = kn.tensor(a, requires_grad=True)
        values, vectors, total = run(x)
        total.backward()
        check(values.detach().numpy(), vectors.detach().numpy(), x.grad.numpy())
    with kn.Graph().as_default():
        p = kn.placeholder(a.dtype, a.shape)
        values, vectors, total = f(p)
        check(*kn.function([p], [values, vectors, kn.grad(total, [p])[0]])(a))


def test_randn_and_rand_of_a_complex_dtype_draw_each_part_as_pytorchs():
    # PyTorch's complex randn: real and imaginary parts independent N(0, 1/2), E|z|^2 = 1
    kn.manual_seed(0)
    z = kn.randn(400, 300, dtype=kn.complex64)
    assert z.dtype == kn.complex64 and z.shape == (400, 300)
    for part in (z.real, z.imag):  # the variance of 120000 draws: within 10 sigma (0.002)
        assert abs(float(part.var()) - 0.5) < 0.02 and abs(float(part.mean())) < 0.02
    assert abs(float((z.real * z.imag).mean())) < 0.02  # uncorrelated
    u = kn.rand(400, 300, dtype=kn.complex64)  # each part U[0, 1): variance 1/12
    for part in (u.real, u.imag):
        assert 0 <= float(part.min()) and float(part.max()) < 1
        assert abs(float(part.mean()) - 0.5) < 0.01 and abs(float(part.var()) - 1 / 12) < 0.005
    traced = kn.compile(lambda a: a + kn.randn(3, dtype=kn.complex128))
    assert traced(kn.zeros(3, dtype=kn.complex128)).dtype == kn.complex128


def test_real_and_imag_are_views_as_pytorchs():
    def run(m):
        x = m.tensor([1 + 2j, 3 - 4j])
        x.real[0] = 5
        x.imag.mul_(2)
        r = x.real
        r += 1
        return x

    np.testing.assert_array_equal(run(kn).numpy(), run(torch).numpy())  # [6+4j, 4-8j]
    # autograd through in-place writes into such views: tests/test_complex_views.py


def test_forward_mode_matches_torch_jvp_in_every_mode():
    z, t = Z[:2], (R[:2] - 1j * R[2:4]).astype(np.complex128)
    r, tr = R[4:], R[:2]

    def f(m):
        return lambda a, b: (
            m.exp(a) * a + a.conj() * 2 + b * a + m.fft.fft(a)
            + m.view_as_complex(m.stack([b, b * b], -1)) + (a * b).abs()
        )  # fmt: skip

    primals, tangents = (torch.tensor(z), torch.tensor(r)), (torch.tensor(t), torch.tensor(tr))
    want = torch.autograd.functional.jvp(f(torch), primals, tangents)[1].numpy()
    got = kn.func.jvp(f(kn), (kn.tensor(z), kn.tensor(r)), (kn.tensor(t), kn.tensor(tr)))[1]
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
    traced = kn.compile(lambda a, b: kn.func.jvp(f(kn), (a, b), (kn.tensor(t), kn.tensor(tr)))[1])
    np.testing.assert_allclose(traced(kn.tensor(z), kn.tensor(r)).numpy(), want, rtol=1e-12)
    with kn.Graph().as_default():
        a, b = kn.placeholder(kn.complex128, (2,)), kn.placeholder(kn.float64, (2,))
        _, tangent = kn.func.jvp(f(kn), (a, b), (kn.constant(t), kn.constant(tr)))
        np.testing.assert_allclose(kn.function([a, b], [tangent])(z, r)[0], want, rtol=1e-12)


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad"])
def test_optimizers_update_complex_parameters_as_pytorchs(name):
    # PyTorch's optimizers treat a complex parameter as its pairs of reals (view_as_real)
    def run(m):
        p = m.tensor(Z[:3].copy(), requires_grad=True)
        opt = getattr(m.optim, name)([p], lr=0.1)
        for _ in range(3):
            opt.zero_grad()
            ((p * p).abs().sum() + p.real.sum()).backward()
            opt.step()
        return p.detach().numpy()

    want = run(torch)
    np.testing.assert_allclose(run(kn), want, rtol=1e-12, atol=1e-14)
    with kn.Graph().as_default():  # graph mode: the train op
        v = kn.Variable(Z[:3].copy(), name="v")
        train = getattr(kn.optim, name)([v], lr=0.1).minimize((v * v).abs().sum() + v.real.sum())
        session = kn.Session()
        for _ in range(3):
            session.run(train)
        np.testing.assert_allclose(session.run(v), want, rtol=1e-12, atol=1e-14)

    class Holder(kn.nn.Module):
        def __init__(self):
            super().__init__()
            self.p = kn.nn.Parameter(kn.tensor(Z[:3].copy()))

    m = Holder()
    opt = getattr(kn.optim, name)(m.parameters(), lr=0.1)

    @kn.compile
    def step(x):  # kn.compile: a whole training step
        opt.zero_grad()
        loss = (m.p * m.p * x).abs().sum() + m.p.real.sum()
        loss.backward()
        opt.step()
        return loss

    for _ in range(3):
        step(kn.ones(1, dtype=kn.float64))
    np.testing.assert_allclose(m.p.detach().numpy(), want, rtol=1e-12, atol=1e-14)
