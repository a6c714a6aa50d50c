"""Complex values in kiln's tools, against PyTorch (torch 2.13 as the reference, skipped
without it): gradcheck perturbs real and imaginary parts (Wirtinger derivatives, PyTorch's
convention), the autograd transforms take or refuse complex values as torch's, and
checkpoints keep complex64/complex128 tensors exactly."""

import os

import numpy as np
import pytest

import kiln as kn
from kiln.testing import gradcheck, gradgradcheck

torch = pytest.importorskip("torch")

Z = np.array([1 + 2j, -0.5 + 0.25j, 2 - 1j])
R = np.array([0.5, -1.5, 2.0])


# -- gradcheck ----------------------------------------------------------------------------------

RIGHT = {  # functions whose gradients are right: both checkers pass them
    "abs-of-square": (lambda m, z, r: (z * z + 1j).abs()),
    "complex-output": (lambda m, z, r: m.exp(z) * r + z.conj()),
    "mixed-real-and-complex": (lambda m, z, r: (m.polar(r.abs() + 1, r) * z).real.sum()),
    "view-as-real": (lambda m, z, r: m.view_as_real(m.sin(z)) * 2),
}
WRONG = {  # the imaginary part's derivative is cut: only a check that perturbs it sees it
    "cut-imaginary": (lambda m, z, r: z.real + z.imag.detach() * r),
    "cut-in-complex-output": (lambda m, z, r: m.complex(z.real, z.imag.detach() * 2)),
}


def _torch_gradcheck(fn):
    z, r = torch.tensor(Z, requires_grad=True), torch.tensor(R, requires_grad=True)
    return torch.autograd.gradcheck(lambda a, b: fn(torch, a, b), (z, r), raise_exception=False)


@pytest.mark.parametrize("name", sorted(RIGHT))
def test_gradcheck_passes_right_complex_gradients_as_torchs(name):
    assert _torch_gradcheck(RIGHT[name])
    assert gradcheck(lambda z, r: RIGHT[name](kn, z, r), [Z, R])
    assert gradgradcheck(lambda z, r: RIGHT[name](kn, z, r), [Z, R])


@pytest.mark.parametrize("name", sorted(WRONG))
def test_gradcheck_catches_a_wrong_imaginary_derivative_as_torchs(name):
    assert not _torch_gradcheck(WRONG[name])

    def fn(z, r):  # detach through stop_gradient on Symbols
        real, imag = kn.real(z), kn.stop_gradient(kn.imag(z))
        return real + imag * r if name == "cut-imaginary" else kn.complex(real, imag * 2)

    with pytest.raises(AssertionError, match="gradcheck failed for input 0"):
        gradcheck(fn, [Z, R])
    # the numeric gradient of a complex input: d/dRe + i d/dIm, here 1 + i r (by hand)
    with pytest.raises(AssertionError, match=r"numeric 1\+0\.5j"):
        gradcheck(lambda z: kn.sum(kn.real(z) + kn.stop_gradient(kn.imag(z)) * 0.5), [Z])


# -- jacobians and the function transforms -----------------------------------------------------


def test_functional_jacobian_of_complex_values_is_torchs():
    def f(m):
        return lambda z, r: ((z * z).abs() + r, (z.conj() * r).real)

    want = torch.autograd.functional.jacobian(f(torch), (torch.tensor(Z), torch.tensor(R)))
    got = kn.autograd.functional.jacobian(f(kn), (kn.tensor(Z), kn.tensor(R)))
    for got_row, want_row in zip(got, want):
        for g, w in zip(got_row, want_row):
            assert g.dtype == kn.dtypes.as_dtype(str(w.dtype).split(".")[1])
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-12)
    for m in (torch, kn):  # a complex output: no implicit real seed, in both
        with pytest.raises(RuntimeError, match="only for real scalar outputs"):
            m.autograd.functional.jacobian(lambda z: z * z, m.tensor(Z))


def test_func_vjp_and_grad_of_complex_values_are_torchs():
    ct = (R - 1j * R[::-1]).copy()
    for f in (lambda m, z: z * z * 2, lambda m, z: (z * z).abs(), lambda m, z: m.exp(z).real):
        want_out, want_fn = torch.func.vjp(lambda z: f(torch, z), torch.tensor(Z))
        out, fn = kn.func.vjp(lambda z: f(kn, z), kn.tensor(Z))
        cot = ct if want_out.is_complex() else ct.real.copy()
        np.testing.assert_allclose(fn(kn.tensor(cot))[0].numpy(),
                                   want_fn(torch.tensor(cot))[0].numpy(), rtol=1e-12)  # fmt: skip
    want = torch.func.grad(lambda z: (z * z).abs().sum())(torch.tensor(Z))
    got = kn.func.grad(lambda z: (z * z).abs().sum())(kn.tensor(Z))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)


@pytest.mark.parametrize("transform", ["jacrev", "jacfwd", "hessian"])
def test_function_transforms_refuse_complex_values_as_torch_func(transform):
    for m in (torch, kn):
        make = getattr(m.func, transform)
        with pytest.raises(RuntimeError, match="Expected all inputs to be real"):
            make(lambda z: (z * z).abs().sum())(m.tensor(Z))
        if transform != "hessian":
            with pytest.raises(RuntimeError, match="Expected all outputs to be real"):
                make(lambda r: r * (1 + 2j))(m.tensor(R))


# -- checkpoints --------------------------------------------------------------------------------


def _values():
    z = np.array([1 + 2j, np.nan - np.inf * 1j, 1e-300 + 5e300j, -0.0 + 0.0j])
    return {
        "c128": kn.tensor(z), "c64": kn.tensor(z[[0, 1, 3]].astype(np.complex64)),
        "zero_d": kn.tensor(3 - 4j, dtype=kn.complex128),
        "transposed": kn.tensor(np.arange(6) * (1 + 1j)).reshape(2, 3).T,
        "param": kn.nn.Parameter(kn.tensor(z[:2])), "empty": kn.zeros(0, 2, dtype=kn.complex128),
    }  # fmt: skip


def test_save_and_load_keep_complex_tensors_bit_for_bit(tmp_path):
    saved = _values()
    path = os.fspath(tmp_path / "c.safetensors")
    kn.save(saved, path, metadata={"note": "x"})
    loaded = kn.load(path)
    for name, t in saved.items():
        got = loaded[name]
        assert got.dtype == t.dtype and got.shape == t.shape, name
        assert got.numpy().tobytes() == np.ascontiguousarray(t.detach().numpy()).tobytes(), name
    assert isinstance(loaded["param"], kn.nn.Parameter)
    assert kn.checkpoint.load_metadata(path) == {"note": "x"}
    # another safetensors reader sees complex128 as float64 pairs (safetensors has no C128)
    import safetensors.numpy

    raw = safetensors.numpy.load_file(path)
    assert raw["c128"].dtype == np.float64 and raw["c128"].shape == (4, 2)
    c128 = saved["c128"].numpy()
    np.testing.assert_array_equal(raw["c128"], np.stack([c128.real, c128.imag], -1))
    assert raw["c64"].dtype == np.complex64  # safetensors' own C64
    with pytest.raises(kn.checkpoint.CheckpointError, match="kiln's own"):
        kn.save(saved, path, metadata={"kiln.complex128": "[]"})


def test_module_state_dict_with_complex_parameters_round_trips_as_torchs(tmp_path):
    def model(m):
        m.manual_seed(0)
        return m.nn.Linear(3, 2, dtype=m.complex128)

    path = os.fspath(tmp_path / "m.safetensors")
    source = model(kn)
    kn.save(source.state_dict(), path)
    target = kn.nn.Linear(3, 2, dtype=kn.complex128)
    target.load_state_dict(kn.load(path))
    x = kn.tensor(Z * 2)
    np.testing.assert_array_equal(target(x).detach().numpy(), source(x).detach().numpy())
    with kn.Graph().as_default():  # graph mode: a Session's Variables
        v = kn.Variable(Z.copy(), name="v")
        w = kn.Variable(Z.astype(np.complex64), name="w")
        session = kn.Session()
        session.save(os.fspath(tmp_path / "s.safetensors"))
        v.assign(Z * 2)
        w.assign(np.zeros(3, np.complex64))
        session.restore(os.fspath(tmp_path / "s.safetensors"))
        assert session.run(v).dtype == np.complex128
        np.testing.assert_array_equal(session.run(v), Z)
        np.testing.assert_array_equal(session.run(w), Z.astype(np.complex64))


# -- PyTorch's other complex names --------------------------------------------------------------

INF, NAN = float("inf"), float("nan")
W = np.array([complex(INF, 1), complex(NAN, NAN), complex(-INF, INF), complex(1, NAN)])
SAME = {  # each compared with torch's result: dtype and values
    "nan_to_num": lambda m: m.nan_to_num(m.tensor(W)),
    "nan_to_num-given": lambda m: m.nan_to_num(m.tensor(W), nan=2.0, posinf=5.0, neginf=-5.0),
    "nan_to_num-complex64": lambda m: m.nan_to_num(m.tensor(W, dtype=m.complex64)),
    "dist": lambda m: m.dist(m.tensor(Z), m.tensor(Z[::-1].copy())),
    "dist-p1-mixed": lambda m: m.dist(m.tensor(Z), m.tensor(R), p=1),
    "norm-inf": lambda m: m.norm(m.tensor(Z), p=float("inf")),
    "linspace-complex-ends": lambda m: m.linspace(0, 1 + 2j, 5),
    "linspace-complex-dtype": lambda m: m.linspace(1j, 2, 3, dtype=m.complex128),
    "conj_physical_": lambda m: m.conj_physical_(m.tensor(Z)),
    "sgn": lambda m: m.sgn(m.tensor([0j, 3 - 4j])),
    "resolve_conj-of-conj": lambda m: m.tensor(Z).conj().resolve_conj(),
    "polar": lambda m: m.polar(m.tensor(np.abs(R)), m.tensor(R)),
}


@pytest.mark.parametrize("name", sorted(SAME))
def test_complex_functions_match_torch(name):
    want, got = SAME[name](torch), SAME[name](kn)
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


@pytest.mark.parametrize(
    "call, error",
    [
        (lambda m: m.tensor(Z).abs_(), "In-place abs is not supported for complex"),
        (lambda m: m.arange(3, dtype=m.complex64), "not implemented for"),
        (lambda m: m.randint(0, 3, (2,), dtype=m.complex64), "check_random_bounds"),
        (lambda m: m.linspace(0, 1j, 3, dtype=m.float32), "can't be safely cast"),
        (lambda m: m.sign(m.tensor(Z)), "sign .*support complex"),
    ],
)
def test_complex_calls_torch_refuses_raise(call, error):
    with pytest.raises((RuntimeError, NotImplementedError), match=error):
        call(torch)
    with pytest.raises((RuntimeError, NotImplementedError, TypeError), match=error):
        call(kn)


def test_conj_is_physical_and_says_so():
    # kiln's conj is a new value (NumPy has no lazy-conjugate view): is_conj() is False and
    # resolve_conj() is the value itself; torch's conj is a lazy view with is_conj() True
    z = kn.tensor(Z)
    c = z.conj()
    assert not c.is_conj() and c.resolve_conj() is c and not c.is_neg()
    z[0] = 5.0
    np.testing.assert_array_equal(c.numpy(), np.conj(Z))  # unchanged: memory of its own
    assert torch.tensor(Z).conj().is_conj()  # the difference, pinned


# -- printing -----------------------------------------------------------------------------------

PRINTED = [  # each printed by torch and kiln under each print option below
    lambda m: m.arange(120, dtype=m.float64).reshape(3, 40).to(m.complex128) * (1 + 1j),
    lambda m: m.arange(1200, dtype=m.float64).reshape(30, 40).to(m.complex128) * (1 - 1j),
    lambda m: m.tensor([[1.5 + 100j, 2 - 3j] * 6]),
    lambda m: m.tensor([1e-5 + 1j, 1e5 - 1j] * 7),
    lambda m: m.tensor([complex(NAN, 1), complex(1, INF), -0.0 - 0.0j]),
    lambda m: m.arange(1001) * 1j,
    lambda m: m.zeros(0, dtype=m.complex64),
    lambda m: m.tensor(1.5 - 2j),
    lambda m: m.ones(20, requires_grad=True, dtype=m.complex128) * 2,
    # the layout is every dtype's: real values print by the same rules
    lambda m: m.arange(30, dtype=m.float64).reshape(3, 10) * 1.5,
    lambda m: m.arange(8, dtype=m.float64) * 1.5,
    lambda m: m.arange(2000).reshape(2, 10, 100),
    lambda m: m.tensor([True, False] * 30),
    lambda m: m.tensor([[NAN, 1.0], [INF, -INF]]),
    lambda m: m.tensor(-0.0),
    lambda m: m.arange(40, dtype=m.int16).reshape(2, 20) * 1000,
    lambda m: m.zeros(2, 0),
]
OPTIONS = [{}, {"linewidth": 50}, {"precision": 2}, {"threshold": 5, "edgeitems": 1},
           {"edgeitems": 0, "threshold": 3}, {"sci_mode": True}, {"profile": "short"}]  # fmt: skip


@pytest.mark.parametrize("options", OPTIONS, ids=[str(o) for o in OPTIONS])
def test_tensors_print_as_pytorchs(options):
    # PyTorch's layout: elements per line from the widest element (a complex one counted as
    # its two parts' widths and a `j`), suffixes such as dtype= on a line of their own where
    # the last line is full, `size=` where edgeitems is 0; the text read with kiln for torch
    try:
        for m in (torch, kn):
            m.set_printoptions(profile="default")
            m.set_printoptions(**options)
        for k, make in enumerate(PRINTED):
            want = repr(make(torch)).replace("torch.", "kiln.")
            assert repr(make(kn)) == want, k
    finally:
        for m in (torch, kn):
            m.set_printoptions(profile="default")


def test_complex32_is_refused_with_the_reason():
    # kiln leaves PyTorch's complex32 (chalf) out: NumPy and CuPy have no complex32 type
    assert torch.zeros(1, dtype=torch.chalf).dtype == torch.complex32  # torch has it
    for name in ("complex32", "chalf"):
        assert not hasattr(kn, name)
        with pytest.raises(AttributeError, match="no complex32 type"):
            getattr(kn, name)
    with pytest.raises(TypeError, match="complex32"):
        kn.float16.to_complex()
    with pytest.raises(TypeError, match="no complex32"):
        kn.view_as_complex(kn.zeros(2, 2, dtype=kn.float16))


# -- kn.autograd.gradcheck: torch.autograd.gradcheck's eager form --------------------------------


def _square_with_cut_second_derivative(m):
    class Square(m.autograd.Function):  # first derivative right, its own derivative cut
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 2 * x.detach()

    return Square.apply


EAGER_CHECKS = {  # name: (fn of (m, z, r), whether its gradients are right, second order too)
    "complex-in-real-out": (lambda m, z, r: (z * z + 1j).abs(), True, True),
    "complex-out-two-outputs": (lambda m, z, r: (m.exp(z) * r, (z * r).abs().sum()), True, True),
    "views": (lambda m, z, r: m.view_as_real(z * z).sum(-1) + z.real * r, True, True),
    "cut-imaginary": (lambda m, z, r: z.real + z.imag.detach() * r, False, False),
    "cut-second-order": (lambda m, z, r: _square_with_cut_second_derivative(m)(r), True, False),
}


@pytest.mark.parametrize("name", sorted(EAGER_CHECKS))
def test_autograd_gradcheck_and_gradgradcheck_agree_with_torchs(name):
    fn, first, second = EAGER_CHECKS[name]
    for m in (torch, kn):
        z = m.tensor(Z, requires_grad=True)
        r = m.tensor(R, requires_grad=True)
        f = lambda a, b, m=m: fn(m, a, b)  # noqa: E731
        assert m.autograd.gradcheck(f, (z, r), raise_exception=False) is first, m.__name__
        if first:
            assert m.autograd.gradgradcheck(f, (z, r), raise_exception=False) is second
    if not first:
        with pytest.raises(RuntimeError, match="Jacobian mismatch for output 0"):
            inputs = (kn.tensor(Z, requires_grad=True), kn.tensor(R, requires_grad=True))
            kn.autograd.gradcheck(lambda a, b: fn(kn, a, b), inputs)
