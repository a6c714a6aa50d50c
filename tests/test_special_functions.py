"""lgamma, digamma, polygamma, erfinv, i0 (and kn.special's names): values by hand and, where
torch is installed, values, dtypes and gradients against torch, eagerly and compiled (the op
table checks them against SciPy and finite differences in every mode)."""

import math

import numpy as np
import pytest

import kiln as kn


def test_values_by_hand():
    # log 4! = log 24; digamma(1) = -gamma (Euler-Mascheroni); polygamma(1, 1) = pi^2 / 6
    assert math.isclose(kn.lgamma(kn.tensor(5.0)).item(), math.log(24.0), rel_tol=1e-6)
    assert math.isclose(kn.digamma(kn.tensor(1.0)).item(), -0.5772156649, rel_tol=1e-6)
    assert math.isclose(kn.polygamma(1, kn.tensor(1.0)).item(), math.pi**2 / 6, rel_tol=1e-6)
    assert kn.erfinv(kn.tensor([1.0, -1.0])).tolist() == [math.inf, -math.inf]
    assert kn.i0(kn.tensor(0.0)).item() == 1.0
    assert kn.special.gammaln is kn.lgamma and kn.special.psi is kn.digamma
    assert kn.lgamma(kn.tensor([3, 4])).dtype == kn.float32  # integers: the default float


@pytest.mark.parametrize("name", ["lgamma", "digamma", "erfinv", "i0", "polygamma"])
def test_match_torch(name):
    torch = pytest.importorskip("torch")
    x = np.array([0.3, 1.0, 2.5, 7.0]) / (8.0 if name == "erfinv" else 1.0)

    def call(m, v):
        return m.polygamma(2, v) if name == "polygamma" else getattr(m, name)(v)

    for dtype in (np.float32, np.float64):
        ours, theirs = (
            call(kn, kn.tensor(x.astype(dtype))),
            call(torch, torch.tensor(x.astype(dtype))),
        )
        assert str(ours.dtype) == str(theirs.dtype).replace("torch.", "kiln.")
        np.testing.assert_allclose(
            ours.numpy(), theirs.numpy(), rtol=2e-6 if dtype == np.float32 else 1e-12
        )
    a, b = kn.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    kn.compile(lambda v: call(kn, v).sum())(a).backward()
    call(torch, b).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-9)


def test_lgamma_of_minus_infinity_is_a_pole_as_pytorchs():
    # C's lgamma and PyTorch's give +inf at -inf; SciPy's gammaln gives -inf
    for dtype in (kn.float16, kn.float32, kn.float64):
        got = kn.lgamma(kn.tensor([-np.inf, np.inf, 0.0], dtype=dtype)).tolist()
        assert got == [np.inf, np.inf, np.inf]
