"""PyTorch's top-level functions that kiln added in kiln/frontend/torch_namespace.py, against
PyTorch 2.13 (skipped without torch; the docstrings carry hand-checked values that run
without it), eagerly, in graph mode and under `kn.compile`."""

import numpy as np
import pytest

import kiln as kn

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)
A = RNG.standard_normal((4, 3)).astype(np.float32)
B = RNG.standard_normal((3, 5)).astype(np.float32)
T3 = RNG.standard_normal((2, 3, 4)).astype(np.float32)
V = RNG.standard_normal(6).astype(np.float32)
SQ8 = (RNG.standard_normal((8, 8)) + 4 * np.eye(8)).astype(np.float32)  # well conditioned
V8 = RNG.standard_normal(8).astype(np.float32)

# name -> (fn(L, *arrays), arrays); fn runs with L = torch or kn
CASES = {
    "tensordot-int": (lambda L, a, b: L.tensordot(a, b, 1), (A, B)),
    "tensordot-lists": (lambda L, t, a: L.tensordot(t, a.T, ([1], [0])), (T3, A)),
    "tensordot-0": (lambda L, a, b: L.tensordot(a, b, 0), (V[:2], V[:3])),
    "chain_matmul": (lambda L, a, b: L.chain_matmul(a, b, b.T), (A, B)),
    "cumulative_trapezoid": (lambda L, a: L.cumulative_trapezoid(a, dim=0), (A,)),
    "cumulative_trapezoid-dx": (lambda L, a: L.cumulative_trapezoid(a, dx=0.5), (A,)),
    "cumulative_trapezoid-x": (
        lambda L, a, v: L.cumulative_trapezoid(a, v[:3].cumsum(0)),
        (A, np.abs(V)),
    ),  # fmt: skip
    "trapz": (lambda L, a: L.trapz(a, dim=0), (A,)),
    "row_stack": (lambda L, a, v: L.row_stack([a, v[:3]]), (A, V)),
    "pdist": (lambda L, a: L.pdist(a), (A,)),
    "pdist-p1": (lambda L, a: L.pdist(a, 1.0), (A,)),
    "diagflat": (lambda L, a: L.diagflat(a, -1), (A,)),
    "bucketize": (lambda L, a: L.bucketize(a, L.tensor([-1.0, 0.0, 0.5])), (A,)),
    "bucketize-right": (
        lambda L, a: L.bucketize(a, L.tensor([-1.0, 0.0, 0.5]), right=True),
        (A,),
    ),  # fmt: skip
    "bucketize-int32": (
        lambda L, a: L.bucketize(a, L.tensor([-1.0, 0.0, 0.5]), out_int32=True),
        (A,),
    ),  # fmt: skip
    "cov-one-variable": (lambda L, a: L.cov(a[:1]), (A,)),
    "corrcoef-one-variable": (lambda L, a: L.corrcoef(a[1:2]), (A,)),
    "unravel_index": (lambda L: L.unravel_index(L.tensor([0, 5, 11, -1]), (3, 4)), ()),
    "select_scatter": (lambda L, a, v: L.select_scatter(a, v[:3], 0, 2), (A, V)),
    "select_scatter-dim1": (lambda L, a, v: L.select_scatter(a, v[:4], 1, -1), (A, V)),
    "slice_scatter": (lambda L, a, b: L.slice_scatter(a, b[:2, :3], 0, 1, 4, 2), (A, B)),
    "diagonal_scatter": (lambda L, a, v: L.diagonal_scatter(a, v[:3]), (A, V)),
    "diagonal_scatter-offset": (lambda L, a, v: L.diagonal_scatter(a, v[:2], 1), (A, V)),
    "diagonal_scatter-3d": (
        lambda L, t, a: L.diagonal_scatter(t, a[:2, :2], -1, 1, 2),
        (T3, A),
    ),  # fmt: skip
    "fill": (lambda L, a: L.fill(a, 2.5), (A,)),
    "rsub": (lambda L, a, b: L.rsub(a, b[:, :4].T + 0, alpha=2), (A, B)),
    "rsub-scalar": (lambda L, a: L.rsub(a, 3.0), (A,)),
    "celu": (lambda L, a: L.celu(a, 0.5), (A,)),
    "selu": (lambda L, a: L.selu(a), (A,)),
    "threshold": (lambda L, a: L.threshold(a, 0.1, -2.0), (A,)),
    "hardshrink": (lambda L, a: L.hardshrink(a, 0.3), (A,)),
    "cosine_similarity": (lambda L, a, b: L.cosine_similarity(a, b[:, :4].T), (A, B)),
    "pairwise_distance": (lambda L, a, b: L.pairwise_distance(a, b[:, :4].T), (A, B)),
    "pixel_shuffle": (lambda L, t: L.pixel_shuffle(t.reshape(1, 4, 3, 2), 2), (T3,)),
    "clone": (lambda L, a: L.clone(a), (A,)),
    "square_": (lambda L, a: L.square_(a.clone()), (A,)),
    "vdot": (lambda L, v: L.vdot(v, v), (V,)),
    "as_strided_copy": (lambda L, a: L.as_strided_copy(a, (2, 2), (1, 2), 1), (A,)),
    "fill_": (lambda L, a: L.fill_(a.clone(), 2.5), (A,)),
    "i0_": (lambda L, a: L.i0_(a.clone()), (A,)),
    "geqrf": (lambda L, a: L.geqrf(a), (A,)),
    "geqrf-wide-batch": (lambda L, t: L.geqrf(t.transpose(-1, -2)), (T3,)),
    "ormqr": (lambda L, a, b: L.ormqr(*L.geqrf(a), b[:, :4].T), (A, B)),
    "ormqr-right-transpose": (
        lambda L, a, b: L.ormqr(*L.geqrf(a), b[:, :4], left=False, transpose=True),
        (A, B),
    ),  # fmt: skip
    "ormqr-square-method": (
        lambda L, t: t[:, :3].geqrf()[0].ormqr(t[:, :3].geqrf()[1], t[:, :3]),
        (T3,),
    ),  # fmt: skip
    # torch.linalg's forms (kiln/frontend/linalg_more.py)
    "linalg.cross": (lambda L, a, b: L.linalg.cross(a, b[:, :3].T[:1]), (A, B)),
    "linalg.cross-dim": (lambda L, a, b: L.linalg.cross(a.T, b[:, :4], dim=0), (A, B)),
    "linalg.matmul": (lambda L, a, b: L.linalg.matmul(a, b), (A, B)),
    "linalg.diagonal": (lambda L, t: L.linalg.diagonal(t, offset=1), (T3,)),
    "linalg.diagonal-dims": (lambda L, t: L.linalg.diagonal(t, dim1=0, dim2=2), (T3,)),
    "linalg.vander": (lambda L, a: L.linalg.vander(a), (A,)),
    "linalg.vander-N": (lambda L, v: L.linalg.vander(v, N=4), (V,)),
    "linalg.vander-int": (lambda L: L.linalg.vander(L.tensor([1, -2, 3], dtype=L.int32)), ()),
    "linalg.tensorinv": (lambda L, t: L.linalg.tensorinv(t.reshape(8, 2, 4), 1), (SQ8,)),
    "linalg.tensorinv-2": (lambda L, t: L.linalg.tensorinv(t.reshape(2, 4, 2, 4)), (SQ8,)),
    "linalg.tensorsolve": (
        lambda L, t, v: L.linalg.tensorsolve(t.reshape(8, 2, 4), v[:8]),
        (SQ8, V8),
    ),
    "linalg.tensorsolve-dims": (
        lambda L, t, v: L.linalg.tensorsolve(t.reshape(2, 4, 2, 4), v.reshape(4, 2), dims=(0,)),
        (SQ8, V8),
    ),  # fmt: skip
    "linalg.solve_ex": (lambda L, t, v: L.linalg.solve_ex(t, v), (SQ8, V8)),
    "linalg.solve_ex-right": (lambda L, t: L.linalg.solve_ex(t, t[:2], left=False), (SQ8,)),
    "linalg.solve_ex-singular": (lambda L: L.linalg.solve_ex(L.ones(2, 2), L.ones(2))[1], ()),
    "linalg.lu_factor_ex": (lambda L, t: L.linalg.lu_factor_ex(t), (SQ8,)),
    "linalg.ldl_factor": (
        lambda L, t: L.linalg.ldl_factor(t + t.mT),
        (SQ8 - 4 * np.eye(8, dtype=np.float32),),
    ),
    "linalg.ldl_factor_ex-batch": (
        lambda L, t: L.linalg.ldl_factor_ex((t + t.mT).reshape(2, 4, 8)[:, :, :4]),
        (SQ8,),
    ),  # fmt: skip
    "linalg.ldl_solve": (
        lambda L, t, b: L.linalg.ldl_solve(*L.linalg.ldl_factor(t + t.mT), b.reshape(8, 1)),
        (SQ8 - 4 * np.eye(8, dtype=np.float32), V8),
    ),  # fmt: skip
    "linalg.ldl_solve-broadcast": (
        lambda L, t, b: L.linalg.ldl_solve(
            *L.linalg.ldl_factor(t[:4, :4] + t[:4, :4].mT), b.reshape(2, 4, 1)
        ),
        (SQ8 - 4 * np.eye(8, dtype=np.float32), V8),
    ),  # fmt: skip
    "linalg.lu_factor_ex-singular": (
        lambda L: L.linalg.lu_factor_ex(L.tensor([[1.0, 2.0], [2.0, 4.0]])),
        (),
    ),  # fmt: skip
}


def _np(out):
    if isinstance(out, tuple):
        return [_np(o) for o in out]
    return out.detach().numpy() if hasattr(out, "detach") else np.asarray(out)


def _check(got, want, what):
    if isinstance(want, list):
        assert len(got) == len(want), what
        for g, w in zip(got, want):
            _check(g, w, what)
        return
    got = np.asarray(got)
    assert got.shape == want.shape and got.dtype == want.dtype, (what, got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6, err_msg=what)


@pytest.mark.parametrize("name", list(CASES))
def test_matches_torch_in_every_mode(name):
    fn, arrays = CASES[name]
    want = _np(fn(torch, *map(torch.tensor, arrays)))
    _check(_np(fn(kn, *map(kn.tensor, arrays))), want, "eager")
    _check(_np(kn.compile(lambda *xs: fn(kn, *xs))(*map(kn.tensor, arrays))), want, "compile")
    if not arrays:
        return  # no inputs: a graph of constants
    with kn.Graph().as_default():
        xs = [kn.placeholder(a.dtype, a.shape, name=f"x{k}") for k, a in enumerate(arrays)]
        out = fn(kn, *xs)
        outs = list(out) if isinstance(out, tuple) else [out]
        got = kn.function(xs, outs)(*arrays)
    _check(got if isinstance(out, tuple) else got[0], want, "graph")


GRADS = {
    "tensordot": (lambda L, a, b: L.tensordot(a, b, 1), (A, B)),
    "pdist": (lambda L, a: L.pdist(a), (A,)),
    "diagonal_scatter": (lambda L, a, v: L.diagonal_scatter(a, v[:3], 0), (A, V)),
    "slice_scatter": (lambda L, a, b: L.slice_scatter(a, b[:2, :3], 0, 1, 4, 2), (A, B)),
    "cumulative_trapezoid": (lambda L, a: L.cumulative_trapezoid(a, dim=0), (A,)),
    "fill": (lambda L, a, v: L.fill(a, v[0]), (A, V)),
    "as_strided_copy": (lambda L, a: L.as_strided_copy(a, (2, 3), (1, 2), 1), (A,)),
    "ormqr": (lambda L, a, t, c: L.ormqr(a, t[0, 0, :3], c, transpose=True), (A, T3, B[:, :4].T)),
    "linalg.cross": (lambda L, a, b: L.linalg.cross(a, b[:, :3].T[:1]), (A, B)),
    "linalg.vander": (lambda L, v: L.linalg.vander(v, N=4), (V,)),
    "linalg.tensorinv": (lambda L, t: L.linalg.tensorinv(t.reshape(2, 4, 2, 4)), (SQ8,)),
    "linalg.tensorsolve": (lambda L, t, v: L.linalg.tensorsolve(t.reshape(8, 2, 4), v), (SQ8, V8)),
    "linalg.solve_ex": (lambda L, t, v: L.linalg.solve_ex(t, v).result, (SQ8, V8)),
}


@pytest.mark.parametrize("name", list(GRADS))
def test_gradients_match_torch(name):
    fn, arrays = GRADS[name]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    (fn(torch, *ts) ** 2).sum().backward()
    ks = [kn.tensor(a, requires_grad=True) for a in arrays]
    (fn(kn, *ks) ** 2).sum().backward()
    for t, k in zip(ts, ks):
        np.testing.assert_allclose(k.grad.numpy(), t.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_windows_match_torch():
    for name in ("hann_window", "hamming_window", "blackman_window", "bartlett_window",
                 "kaiser_window"):  # fmt: skip
        for n in (0, 1, 2, 7, 16):
            for periodic in (True, False):
                want = getattr(torch, name)(n, periodic).numpy()
                got = getattr(kn, name)(n, periodic).numpy()
                assert got.dtype == want.dtype
                np.testing.assert_allclose(got, want, atol=1e-6, err_msg=f"{name}({n})")
    want = torch.kaiser_window(9, False, 3.5, dtype=torch.float64).numpy()
    np.testing.assert_allclose(kn.kaiser_window(9, False, 3.5, dtype=kn.float64).numpy(), want)


def test_normal_forms_and_gradients():
    kn.manual_seed(0)
    x = kn.normal(2.0, 3.0, (20000,))
    assert x.dtype == np.float32 and abs(x.mean().item() - 2) < 0.15
    assert abs(x.std().item() - 3) < 0.15
    mean = kn.zeros(3, requires_grad=True)
    std = kn.full((3,), 2.0, requires_grad=True)
    y = kn.normal(mean, std)
    y.sum().backward()
    # PyTorch's normal is not reparameterized: zero gradients (torch 2.13), as
    # tests/ports/test_port_pt_creation_random.py checks against it
    assert mean.grad.tolist() == [0.0, 0.0, 0.0] and std.grad.tolist() == [0.0, 0.0, 0.0]
    f = kn.compile(lambda m: kn.normal(m, 1.0))
    assert (f(kn.zeros(100)) != f(kn.zeros(100))).all()


def test_rng_state_round_trip_and_seeds():
    kn.manual_seed(11)
    assert kn.initial_seed() == 11
    state = kn.get_rng_state()
    a, b = kn.randn(4), kn.rand(2)
    kn.set_rng_state(state)
    assert (kn.randn(4) == a).all() and (kn.rand(2) == b).all()
    s = kn.seed()
    assert kn.initial_seed() == s


def test_function_forms_of_methods_need_a_tensor():
    x = kn.tensor([-1.0, 4.0])
    assert kn.sqrt_(kn.abs_(x)) is x and x.tolist() == [1.0, 2.0]
    with pytest.raises(TypeError, match="must be Tensor, not list"):
        kn.abs_([1.0])
    with pytest.raises(RuntimeError, match="0-dimension value tensor"):
        kn.fill(kn.zeros(2), kn.ones(2))


def test_linalg_forms_refuse_as_torch():
    """torch 2.13 raises RuntimeError for each of these (checked alongside)."""
    cases = [
        lambda L: L.linalg.cross(L.ones(2, 3), L.ones(3)),  # different numbers of dims
        lambda L: L.linalg.vander(L.tensor([True, False])),  # bool
        lambda L: L.linalg.vander(L.ones(3), N=1),  # N must be greater than 1
        lambda L: L.linalg.tensorinv(L.ones(2, 3)),  # 3 != 2 elements
        lambda L: L.linalg.solve_ex(L.ones(2, 2), L.ones(2), check_errors=True),  # singular
        lambda L: L.linalg.lu_factor_ex(L.ones(2, 2), check_errors=True),
    ]
    for case in cases:
        with pytest.raises(RuntimeError):
            case(torch)
        with pytest.raises((RuntimeError, TypeError, ValueError)):
            case(kn)


def test_lu_factor_refuses_a_zero_pivot_as_torch():
    """torch 2.13: linalg.lu_factor raises where U has a zero on its diagonal; torch.lu and
    lu_factor_ex give the info code instead."""
    singular = [[[1.0, 2.0], [3.0, 4.0]], [[1.0, 2.0], [2.0, 4.0]]]  # batch element 1
    for L in (torch, kn):
        with pytest.raises(RuntimeError, match=r"atch element 1\): U\[2,2\] is zero"):
            L.linalg.lu_factor(L.tensor(singular))
        assert L.linalg.lu_factor_ex(L.tensor(singular)).info.tolist() == [0, 2]
        assert L.lu(L.tensor(singular), get_infos=True)[2].tolist() == [0, 2]


@pytest.mark.parametrize("hermitian", [False, True])
def test_ldl_of_complex_matrices_as_torch(hermitian):
    rng = np.random.default_rng(5)
    a = rng.standard_normal((2, 4, 4)) + 1j * rng.standard_normal((2, 4, 4))
    a = a + (np.conj(np.swapaxes(a, -1, -2)) if hermitian else np.swapaxes(a, -1, -2))
    b = rng.standard_normal((2, 4, 3)) + 1j * rng.standard_normal((2, 4, 3))
    want = torch.linalg.ldl_factor_ex(torch.tensor(a), hermitian=hermitian)
    got = kn.linalg.ldl_factor_ex(kn.tensor(a), hermitian=hermitian)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-12, atol=1e-12)
        assert g.numpy().dtype == w.numpy().dtype
    x = torch.linalg.ldl_solve(want.LD, want.pivots, torch.tensor(b), hermitian=hermitian)
    got_x = kn.linalg.ldl_solve(got.LD, got.pivots, kn.tensor(b), hermitian=hermitian)
    np.testing.assert_allclose(got_x.numpy(), x.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(a @ got_x.numpy(), b, rtol=1e-10, atol=1e-10)  # it solves


def test_ldl_and_geqrf_have_no_gradient_as_torch():
    for L in (torch, kn):
        a = L.tensor([[4.0, 2.0], [2.0, 3.0]], requires_grad=True)
        with pytest.raises(RuntimeError):
            L.linalg.ldl_factor(a).LD.sum().backward()
        with pytest.raises(RuntimeError):
            L.geqrf(a).a.sum().backward()


def test_autograd_has_the_grad_mode_names():
    # torch.autograd.no_grad is torch.no_grad (and enable_grad, inference_mode): ported code
    # writes `@torch.autograd.no_grad()`; kiln's raised AttributeError
    assert kn.autograd.no_grad is kn.no_grad and kn.autograd.enable_grad is kn.enable_grad
    assert kn.autograd.inference_mode is kn.inference_mode

    @kn.autograd.no_grad()
    def doubled(x):
        return x * 2

    assert not doubled(kn.ones(2, requires_grad=True)).requires_grad
