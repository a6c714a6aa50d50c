"""`kn.fft` against PyTorch's `torch.fft` (torch 2.13 as the reference, skipped without it):
values, dtypes and gradients of every transform with `n`/`s`, `dim` and `norm`, in eager
mode, graph mode and under kn.compile; the frequency helpers and shifts."""

import numpy as np
import pytest

import kiln as kn

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(11)
X = RNG.standard_normal((3, 4, 5))
Z = RNG.standard_normal((3, 4, 5)) + 1j * RNG.standard_normal((3, 4, 5))

# (function, input, kwargs): every transform, with sizes that cut and pad, dims and norms
CASES = [
    ("fft", "real", {}),
    ("fft", "complex", {"n": 7, "dim": 1, "norm": "ortho"}),
    ("fft", "complex", {"n": 3, "norm": "forward"}),
    ("ifft", "complex", {"dim": 0}),
    ("ifft", "real", {"n": 6, "norm": "ortho"}),
    ("fft2", "complex", {}),
    ("fft2", "complex", {"s": (3, 6), "dim": (0, 2), "norm": "forward"}),
    ("ifft2", "complex", {"s": (2, -1)}),
    ("fftn", "complex", {}),
    ("fftn", "real", {"s": (5, 4), "norm": "ortho"}),
    ("ifftn", "complex", {"dim": (0, 2), "norm": "forward"}),
    ("rfft", "real", {}),
    ("rfft", "real", {"n": 8, "dim": 1, "norm": "ortho"}),
    ("rfft", "real", {"n": 3, "dim": 0, "norm": "forward"}),
    ("irfft", "complex", {}),
    ("irfft", "complex", {"n": 7, "dim": 1, "norm": "ortho"}),
    ("irfft", "complex", {"n": 4, "norm": "forward"}),
    ("rfft2", "real", {}),
    ("rfft2", "real", {"s": (5, 6), "dim": (0, 1)}),
    ("irfft2", "complex", {"s": (4, 7)}),
    ("rfftn", "real", {"norm": "ortho"}),
    ("irfftn", "complex", {}),
    ("irfftn", "complex", {"s": (3, 2, 9), "norm": "forward"}),
    ("hfft", "complex", {}),
    ("hfft", "complex", {"n": 5, "dim": 0, "norm": "ortho"}),
    ("ihfft", "real", {}),
    ("ihfft", "real", {"n": 6, "dim": 1, "norm": "forward"}),
    ("hfft2", "complex", {}),
    ("hfftn", "complex", {"s": (3, 4, 6), "norm": "ortho"}),
    ("ihfft2", "real", {"s": (4, 6)}),
    ("ihfftn", "real", {"dim": (0, 2), "norm": "forward"}),
    ("fftshift", "complex", {}),
    ("ifftshift", "real", {"dim": (0, 2)}),
]


def _loss(m, y, w):
    """A real loss of y: its product with a fixed random w (taking the real part), plus |y|^2
    for complex y (so both parts and the magnitude are in play)."""
    if y.is_complex():
        return (y * w).real.sum() + (y * y.conj()).real.sum()
    return (y * w.real).sum()


def _torch(name, kind, kwargs):
    x = torch.tensor(X if kind == "real" else Z, requires_grad=True)
    y = getattr(torch.fft, name)(x, **kwargs)
    w = torch.tensor(RNG_W(y.shape))
    _loss(torch, y, w).backward()
    return y.detach().resolve_conj().numpy(), x.grad.resolve_conj().numpy(), w.numpy()


def RNG_W(shape):  # noqa: N802
    rng = np.random.default_rng(5)
    return rng.standard_normal(tuple(shape)) + 1j * rng.standard_normal(tuple(shape))


def _close(got, want):
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize(
    "name, kind, kwargs", CASES, ids=[f"{n}-{k}-{i}" for i, (n, k, _) in enumerate(CASES)]
)
def test_transforms_and_gradients_match_pytorch_in_every_mode(name, kind, kwargs):
    want_y, want_g, w = _torch(name, kind, kwargs)
    data = X if kind == "real" else Z
    fn = getattr(kn.fft, name)

    def f(x):
        y = fn(x, **kwargs)
        return y, _loss(kn, y, kn.tensor(w) if not isinstance(x, kn.Symbol) else kn.constant(w))

    x = kn.tensor(data, requires_grad=True)
    y, loss = f(x)
    loss.backward()
    _close(y.detach().numpy(), want_y)
    _close(x.grad.numpy(), want_g)
    xc = kn.tensor(data, requires_grad=True)
    y, loss = kn.compile(f)(xc)
    loss.backward()
    _close(y.detach().numpy(), want_y)
    _close(xc.grad.numpy(), want_g)
    with kn.Graph().as_default():
        p = kn.placeholder(data.dtype, data.shape)
        y, loss = f(p)
        (g,) = kn.grad(loss, [p])
        got_y, got_g = kn.function([p], [y, g])(data)
    _close(got_y, want_y)
    _close(got_g, want_g)


@pytest.mark.parametrize("dtype", ["float32", "complex64", "int64"])
def test_dtypes_are_pytorchs(dtype):
    data = (Z if dtype == "complex64" else X * 3).astype(dtype)
    for name in ("fft", "ifft", "fftn", "hfft"):
        want = getattr(torch.fft, name)(torch.tensor(data))
        got = getattr(kn.fft, name)(kn.tensor(data))
        assert str(got.dtype) == str(want.dtype).replace("torch.", "kiln.")
        np.testing.assert_allclose(got.numpy(), want.resolve_conj().numpy(), rtol=2e-5, atol=2e-5)
    if dtype != "complex64":
        want = torch.fft.rfft(torch.tensor(data))
        got = kn.fft.rfft(kn.tensor(data))
        assert str(got.dtype) == str(want.dtype).replace("torch.", "kiln.")
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=2e-5, atol=2e-5)


def test_frequencies_and_shifts_match_pytorch():
    for n, d in ((5, 1.0), (8, 0.25), (1, 2.0)):
        for name in ("fftfreq", "rfftfreq"):
            want = getattr(torch.fft, name)(n, d)
            got = getattr(kn.fft, name)(n, d)
            assert got.dtype == kn.float32
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    assert kn.fft.fftfreq(4, dtype=kn.float64).dtype == kn.float64
    x = np.arange(12).reshape(3, 4)
    for dim in (None, 0, (1,), (0, 1)):
        for name in ("fftshift", "ifftshift"):
            want = getattr(torch.fft, name)(torch.tensor(x), dim=dim)
            assert getattr(kn.fft, name)(kn.tensor(x), dim=dim).tolist() == want.tolist()


def test_bad_arguments_raise_as_pytorch():
    with pytest.raises(TypeError, match="real input"):
        kn.fft.rfft(kn.tensor(Z))
    with pytest.raises(RuntimeError, match="Invalid number of data points"):
        kn.fft.fft(kn.tensor(X), n=0)
    with pytest.raises(ValueError, match="Invalid normalization mode"):
        kn.fft.fft(kn.tensor(X), norm="sideways")
    with pytest.raises(TypeError, match="Unsupported dtype"):
        kn.fft.fft(kn.ones(4, dtype=kn.float16))


def test_a_symbolic_batch_dim_transforms():
    with kn.Graph().as_default():
        p = kn.placeholder(kn.float64, ("b", 6))
        f = kn.function([p], [kn.fft.irfft(kn.fft.rfft(p), n=6)])
    data = X.reshape(6, 10)[:, :6]
    np.testing.assert_allclose(f(data)[0], data, rtol=1e-12, atol=1e-12)


# -- stft / istft ---------------------------------------------------------------------------------

STFT_CASES = [
    {"n_fft": 16},
    {"n_fft": 16, "hop_length": 5, "win_length": 12, "normalized": True},
    {"n_fft": 10, "onesided": False},
    {"n_fft": 16, "pad_mode": "constant"},
]


@pytest.mark.parametrize("kwargs", STFT_CASES, ids=range(len(STFT_CASES)))
def test_stft_and_istft_match_pytorch_in_every_mode(kwargs):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 50))
    kwargs = dict(kwargs)
    window = torch.hann_window(kwargs.get("win_length", kwargs["n_fft"]), dtype=torch.float64)
    inverse = {k: v for k, v in kwargs.items() if k != "pad_mode"}
    xt = torch.tensor(x, requires_grad=True)
    spec = torch.stft(xt, window=window, return_complex=True, **kwargs)
    w_spec = rng.standard_normal(spec.shape)
    zt = spec.detach().requires_grad_()
    signal = torch.istft(zt, window=window, length=50, **inverse)
    w_signal = rng.standard_normal(signal.shape)
    (spec.abs() * torch.tensor(w_spec)).sum().backward()
    (signal * torch.tensor(w_signal)).sum().backward()
    want = [spec.detach().numpy(), xt.grad.numpy(), signal.detach().numpy(), zt.grad.numpy()]
    win = window.numpy()

    def forward(x, const):
        s = kn.stft(x, window=const(win), return_complex=True, **kwargs)
        return s, (s.abs() * const(w_spec)).sum()

    def backward(z, const):
        y = kn.istft(z, window=win, length=50, **inverse)
        return y, (y * const(w_signal)).sum()

    def check(got):
        for g, w in zip(got, want):
            assert g.dtype == w.dtype and g.shape == w.shape
            np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-12)

    for run_f, run_b in ((forward, backward), (kn.compile(forward), kn.compile(backward))):
        xk = kn.tensor(x, requires_grad=True)
        zk = kn.tensor(want[0], requires_grad=True)
        s, loss_s = run_f(xk, kn.tensor)
        y, loss_y = run_b(zk, kn.tensor)
        loss_s.backward()
        loss_y.backward()
        check([s.detach().numpy(), xk.grad.numpy(), y.detach().numpy(), zk.grad.numpy()])
    with kn.Graph().as_default():
        p, q = kn.placeholder(kn.float64, x.shape), kn.placeholder(kn.complex128, want[0].shape)
        s, loss_s = forward(p, kn.constant)
        y, loss_y = backward(q, kn.constant)
        outs = [s, kn.grad(loss_s, [p])[0], y, kn.grad(loss_y, [q])[0]]
        check(kn.function([p, q], outs)(x, want[0]))


def test_stft_refusals_are_pytorchs():
    with pytest.raises(RuntimeError, match="return_complex parameter be given"):
        kn.stft(kn.ones(20), 8)
    with pytest.raises(RuntimeError, match="NOLA"):  # hann with center=False: 0 at the ends
        spec = kn.stft(kn.ones(20), 8, window=kn.hann_window(8), center=False,
                       return_complex=True)  # fmt: skip
        kn.istft(spec, 8, window=kn.hann_window(8), center=False)
    rect = torch.ones(8, dtype=torch.float64)  # torch warns without a window
    want = torch.ones(20, dtype=torch.float64).stft(8, window=rect, return_complex=True)
    got = kn.ones(20, dtype=kn.float64).stft(8, return_complex=True)  # the method form
    np.testing.assert_allclose(got.numpy(), want.numpy(), atol=1e-12)


@pytest.mark.parametrize("align", [None, False, True])
def test_stft_align_to_window_as_pytorchs(align):
    # center=False with a window shorter than n_fft: PyTorch's frames start where the window
    # does with align_to_window=True, else the window sits mid-frame
    x = np.random.default_rng(3).standard_normal((2, 40))
    window = np.hanning(5)
    kw = dict(n_fft=8, hop_length=3, win_length=5, center=False, return_complex=True,
              align_to_window=align)  # fmt: skip
    xt = torch.tensor(x, requires_grad=True)
    spec = torch.stft(xt, window=torch.tensor(window), **kw)
    spec.abs().sum().backward()
    for fn in (kn.stft, kn.compile(kn.stft)):
        xk = kn.tensor(x, requires_grad=True)
        got = fn(xk, window=kn.tensor(window), **kw)
        got.abs().sum().backward()
        assert got.shape == spec.shape
        np.testing.assert_allclose(got.detach().numpy(), spec.detach().numpy(), atol=1e-12)
        np.testing.assert_allclose(xk.grad.numpy(), xt.grad.numpy(), atol=1e-12)
    if align is not None:
        with pytest.raises(RuntimeError, match="align_to_window should only be set"):
            torch.stft(xt, 8, return_complex=True, align_to_window=align)
        with pytest.raises(RuntimeError, match="align_to_window should only be set"):
            kn.stft(kn.tensor(x), 8, return_complex=True, align_to_window=align)
