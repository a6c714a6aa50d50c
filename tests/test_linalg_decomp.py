"""cholesky, slogdet and logdet (kiln/ops/linalg_decomp.py): refusals, and values and
gradients against torch where it is installed (the op table checks them against NumPy and
finite differences in every mode)."""

import numpy as np
import pytest

import kiln as kn

SPD = np.array([[4.0, 2.0, 0.5], [2.0, 5.0, 1.0], [0.5, 1.0, 3.0]])


def test_not_positive_definite_raises_linalg_error_in_every_mode():
    with pytest.raises(kn.linalg.LinAlgError, match="not positive-definite") as info:
        kn.linalg.cholesky(kn.tensor(-SPD))
    assert isinstance(info.value, RuntimeError) and isinstance(info.value, kn.KilnError)
    with kn.Graph().as_default():
        a = kn.placeholder(kn.float64, (3, 3), name="a")
        f = kn.function([a], kn.linalg.cholesky(a))
    np.testing.assert_allclose(f(SPD), np.linalg.cholesky(SPD))
    with pytest.raises(kn.linalg.LinAlgError):
        f(-SPD)


def test_logdet_of_negative_and_singular_determinants():
    # PyTorch's rule: NaN for a negative determinant, -inf for a zero one
    assert np.isnan(kn.logdet(kn.tensor(np.diag([1.0, -2.0]))).item())
    assert kn.logdet(kn.tensor(np.diag([1.0, 0.0]))).item() == -np.inf
    sign, log_abs = kn.linalg.slogdet(kn.tensor(np.diag([2.0, -3.0])))
    assert (sign.item(), round(log_abs.item(), 6)) == (-1.0, round(np.log(6.0), 6))


def test_compiled_slogdet_returns_tensors_by_name():
    # det(diag(2, -3)) = -6: sign -1, log|det| = log 6 (by hand)
    got = kn.compile(kn.linalg.slogdet)(kn.tensor(np.diag([2.0, -3.0])))
    assert isinstance(got.logabsdet, kn.Tensor) and isinstance(got[0], kn.Tensor)
    assert (got.sign.item(), round(got.logabsdet.item(), 6)) == (-1.0, round(np.log(6.0), 6))


def test_values_and_gradients_match_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    b = rng.standard_normal((2, 3, 3))
    weights = rng.standard_normal((2, 3, 3))

    def loss(m, x):
        eye = m.eye(3, dtype=x.dtype)
        lower = m.linalg.cholesky(x @ x.mT + 3 * eye)
        upper = m.linalg.cholesky(x @ x.mT + 3 * eye, upper=True)
        sign, log_abs = m.linalg.slogdet(x + 2 * eye)
        w = m.tensor(weights) if m is kn else torch.tensor(weights)
        return (
            (lower * w).sum()
            + (upper * w).sum()
            + (log_abs * sign).sum()
            + m.logdet(x @ x.mT + eye).sum()
        )

    ours = kn.tensor(b, requires_grad=True)
    theirs = torch.tensor(b, requires_grad=True)
    lk, lt = loss(kn, ours), loss(torch, theirs)
    lk.backward()
    lt.backward()
    np.testing.assert_allclose(lk.item(), lt.item(), rtol=1e-12)
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-10, atol=1e-12)
    compiled = kn.compile(lambda x: loss(kn, x))
    again = kn.tensor(b, requires_grad=True)
    compiled(again).backward()
    np.testing.assert_allclose(again.grad.numpy(), theirs.grad.numpy(), rtol=1e-10, atol=1e-12)
