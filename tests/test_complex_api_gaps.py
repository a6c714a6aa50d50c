"""Complex inputs where PyTorch takes them (issue 11): `linalg.slogdet` (a complex sign with
a gradient, a real log |det|), `logcumsumexp` (the principal log, stable for large real
parts) and the convolutions `conv1d/2d/3d`, `conv_transpose1d/2d/3d` (four real
convolutions of the parts). Values and gradients (for random complex cotangents) against
torch 2.13, eagerly, in graph mode and under kn.compile."""

import numpy as np
import pytest

import kiln as kn

torch = pytest.importorskip("torch")
F = torch.nn.functional
KF = kn.nn.functional

RNG = np.random.default_rng(7)


def _c(*shape, dtype=np.complex128):
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dtype)


# name -> (fn(L, F, *xs) -> one output or a tuple, inputs)
CASES = {
    "slogdet": (lambda L, F, a: tuple(L.linalg.slogdet(a)), [_c(3, 3)]),
    "slogdet-batch64": (
        lambda L, F, a: tuple(L.linalg.slogdet(a)),
        [_c(2, 4, 4, dtype=np.complex64)],
    ),
    "logcumsumexp": (lambda L, F, x: L.logcumsumexp(x, 1), [_c(2, 5)]),
    "logcumsumexp-dim0-64": (lambda L, F, x: L.logcumsumexp(x, 0), [_c(6, 2, dtype=np.complex64)]),
    "logcumsumexp-large": (
        lambda L, F, x: L.logcumsumexp(x + 700, 0),  # exp(x) overflows: shifted
        [np.array([1 + 3j, 3.4 + 3.1j, 2 - 2.9j, 0.1 + 0.2j])],
    ),  # fmt: skip
    "conv1d": (
        lambda L, F, x, w, b: F.conv1d(x, w, b, padding=1),
        [_c(2, 3, 8), _c(4, 3, 3), _c(4)],
    ),
    "conv1d-groups": (
        lambda L, F, x, w: F.conv1d(x, w, groups=2, stride=2),
        [_c(2, 4, 9), _c(4, 2, 3)],
    ),
    "conv2d": (
        lambda L, F, x, w: F.conv2d(x, w, stride=2, padding="valid"),
        [_c(2, 3, 6, 6), _c(4, 3, 3, 3)],
    ),
    "conv2d-unbatched64": (
        lambda L, F, x, w: F.conv2d(x, w, padding=1),
        [_c(3, 5, 5, dtype=np.complex64), _c(2, 3, 3, 3, dtype=np.complex64)],
    ),  # fmt: skip
    "conv3d": (lambda L, F, x, w: F.conv3d(x, w), [_c(1, 2, 4, 4, 4), _c(3, 2, 2, 2, 2)]),
    "conv_transpose1d": (
        lambda L, F, x, w, b: F.conv_transpose1d(x, w, b, stride=2, output_padding=1),
        [_c(2, 3, 5), _c(3, 4, 3), _c(4)],
    ),  # fmt: skip
    "conv_transpose2d": (
        lambda L, F, x, w: F.conv_transpose2d(x, w, padding=1),
        [_c(2, 3, 5, 5), _c(3, 4, 3, 3)],
    ),
    "conv_transpose3d": (
        lambda L, F, x, w: F.conv_transpose3d(x, w),
        [_c(1, 2, 3, 3, 3), _c(2, 2, 2, 2, 2)],
    ),
}


def _tuple(out):
    return out if isinstance(out, tuple) else (out,)


def _np(t):
    return t.detach().resolve_conj().numpy() if isinstance(t, torch.Tensor) else np.asarray(t)


def _check(got, want, dtype, what):
    tol = 1e-4 if dtype == np.complex64 else 1e-9
    for g, w in zip(got, want):
        g = np.asarray(g.detach().numpy() if hasattr(g, "detach") else g)
        assert g.dtype == w.dtype and g.shape == w.shape, (what, g.dtype, w.dtype, g.shape)
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol, err_msg=what)


@pytest.mark.parametrize("name", list(CASES))
def test_values_and_gradients_match_torch(name):
    fn, arrays = CASES[name]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    outs = _tuple(fn(torch, F, *ts))
    cts = [_c(*o.shape).astype(_np(o).dtype) if o.is_complex() else RNG.standard_normal(
        o.shape).astype(_np(o).dtype) for o in outs]  # fmt: skip
    want = [_np(o) for o in outs]
    want_grads = [_np(g) for g in torch.autograd.grad(outs, ts, [torch.tensor(c) for c in cts])]

    ks = [kn.tensor(a, requires_grad=True) for a in arrays]
    kouts = _tuple(fn(kn, KF, *ks))
    _check(kouts, want, arrays[0].dtype, "eager")
    grads = kn.autograd.grad(kouts, ks, [kn.tensor(c) for c in cts])
    _check(grads, want_grads, arrays[0].dtype, "eager gradients")

    compiled = kn.compile(lambda *xs: fn(kn, KF, *xs))
    _check(_tuple(compiled(*map(kn.tensor, arrays))), want, arrays[0].dtype, "compile")

    with kn.Graph().as_default():
        xs = [kn.placeholder(a.dtype, a.shape, name=f"x{k}") for k, a in enumerate(arrays)]
        ys = list(_tuple(fn(kn, KF, *xs)))
        gs = kn.grad(ys, xs, grad_ys=list(cts))
        got = kn.function(xs, ys + gs)(*arrays)
    _check(got[: len(ys)], want, arrays[0].dtype, "graph")
    _check(got[len(ys) :], want_grads, arrays[0].dtype, "graph gradients")


def test_edges_as_torchs():
    # log(exp(-inf) + ...) and large real parts, as torch 2.13 gives them
    for x in ([complex("-inf"), 1 + 1j], [1000 + 3j, 1000.5 + 3.1j], [0j, -1e10 + 0j]):
        a = np.array(x)
        want = torch.logcumsumexp(torch.tensor(a), 0).numpy()
        np.testing.assert_allclose(kn.logcumsumexp(kn.tensor(a), 0).numpy(), want, rtol=1e-12)
    singular = np.array([[1 + 1j, 2 + 2j], [1 + 1j, 2 + 2j]])
    want = [t.numpy() for t in torch.linalg.slogdet(torch.tensor(singular))]  # (0, -inf)
    got = [t.numpy() for t in kn.linalg.slogdet(kn.tensor(singular))]
    assert got[0] == want[0] and got[1] == want[1]


def test_mixed_dtypes_are_refused_as_torch():
    x, w = _c(1, 2, 5), _c(3, 2, 2)
    for args in ((x, w.real), (x.real, w), (x, w.astype(np.complex64))):
        with pytest.raises(RuntimeError):
            F.conv1d(*map(torch.tensor, args))
        with pytest.raises(RuntimeError, match="conv1d"):
            KF.conv1d(*map(kn.tensor, args))
    with pytest.raises(RuntimeError, match="bias"):
        F.conv1d(torch.tensor(x), torch.tensor(w), torch.ones(3, dtype=torch.float64))
    with pytest.raises(RuntimeError, match="conv1d"):
        KF.conv1d(kn.tensor(x), kn.tensor(w), kn.ones(3, dtype=kn.float64))
