"""The gradient of det is the cofactor matrix, at singular matrices too (kiln/ops/linalg.py
`cofactor`: from the SVD, no inverse). Before, backward at a singular matrix raised NumPy's
LinAlgError. Expected values: cofactors by hand (2x2: [[d, -c], [-b, a]]) and by minors with
NumPy, det(A) A^-T where A is invertible, and central differences (det is a polynomial).
PyTorch 2.13 gives zeros at exactly singular matrices (pytorch/pytorch#104675: its
singular-case formula); kiln gives the cofactors, which are the derivative there."""

import numpy as np
import pytest

import kiln as kn


def _cofactors(a):
    n = a.shape[0]
    out = np.empty_like(a)
    for i in range(n):
        for j in range(n):
            minor = np.delete(np.delete(a, i, 0), j, 1)
            out[i, j] = (-1) ** (i + j) * (np.linalg.det(minor) if minor.size else 1.0)
    return out


SINGULAR = [
    np.array([[1.0, 2.0], [2.0, 4.0]]),
    np.zeros((2, 2)),
    np.arange(9.0).reshape(3, 3),
    np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.0, 1.0, 5.0]]),
    np.array([[0.0]]),
]


@pytest.mark.parametrize("a", SINGULAR, ids=lambda a: f"{a.shape}")
def test_gradient_at_singular_matrices_is_the_cofactor_matrix(a):
    t = kn.tensor(a, requires_grad=True)
    kn.linalg.det(t).backward()
    np.testing.assert_allclose(t.grad.numpy(), _cofactors(a), atol=1e-12)


def test_2x2_by_hand_and_by_central_differences():
    a = np.array([[1.0, 2.0], [2.0, 4.0]])
    t = kn.tensor(a, requires_grad=True)
    kn.det(t).backward()
    np.testing.assert_allclose(t.grad.numpy(), [[4.0, -2.0], [-2.0, 1.0]], atol=1e-12)
    h, fd = 1e-6, np.empty_like(a)
    for idx in np.ndindex(a.shape):
        e = np.zeros_like(a)
        e[idx] = h
        fd[idx] = (np.linalg.det(a + e) - np.linalg.det(a - e)) / (2 * h)
    np.testing.assert_allclose(t.grad.numpy(), fd, atol=1e-8)


def test_invertible_batched_float32_and_complex_as_det_times_inverse_transpose():
    rng = np.random.default_rng(0)
    for a, tol in [
        (rng.standard_normal((3, 4, 4)), 1e-12),
        (rng.standard_normal((2, 3, 3)).astype(np.float32), 2e-5),
        (rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3)), 1e-12),
    ]:
        t = kn.tensor(a, requires_grad=True)
        kn.linalg.det(t).real.sum().backward()
        want = np.linalg.det(a)[..., None, None] * np.swapaxes(np.linalg.inv(a), -1, -2)
        # d Re(det) / dA in PyTorch's convention (conjugate Wirtinger): conj(cofactors)
        np.testing.assert_allclose(t.grad.numpy(), np.conj(want), rtol=tol, atol=tol)


def test_compiled_graph_and_double_backward():
    a = np.array([[1.0, 2.0], [2.0, 4.0]])
    x = kn.tensor(a, requires_grad=True)
    kn.compile(lambda x: kn.linalg.det(x))(x).backward()
    np.testing.assert_allclose(x.grad.numpy(), [[4.0, -2.0], [-2.0, 1.0]], atol=1e-12)
    with kn.Graph().as_default():
        p = kn.placeholder(kn.float64, (2, 2))
        (g,) = kn.grad(kn.linalg.det(p), [p])
        got = kn.function([p], g)(a)
    np.testing.assert_allclose(got, [[4.0, -2.0], [-2.0, 1.0]], atol=1e-12)
    # second derivative at an invertible A: d/dA sum(cof(A)) by central differences
    b = np.array([[2.0, 1.0, 0.5], [0.3, 1.5, 0.2], [0.1, 0.4, 3.0]])
    t = kn.tensor(b, requires_grad=True)
    (g,) = kn.autograd.grad(kn.linalg.det(t), t, create_graph=True)
    g.sum().backward()
    h, fd = 1e-6, np.empty_like(b)
    for idx in np.ndindex(b.shape):
        e = np.zeros_like(b)
        e[idx] = h
        fd[idx] = (_cofactors(b + e).sum() - _cofactors(b - e).sum()) / (2 * h)
    np.testing.assert_allclose(t.grad.numpy(), fd, atol=1e-7)


def test_matches_torch_where_invertible():
    torch = pytest.importorskip("torch")
    a = np.random.default_rng(1).standard_normal((2, 3, 3))
    t = kn.tensor(a, requires_grad=True)
    kn.linalg.det(t).sum().backward()
    r = torch.tensor(a, requires_grad=True)
    torch.linalg.det(r).sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), r.grad.numpy(), rtol=1e-12, atol=1e-12)
