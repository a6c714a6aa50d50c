"""PyTorch's distribution tests of reparameterized sampling and of the draws themselves
(test/distributions/test_distributions.py: test_rsample_requires_grad, the *_sample_grad tests
of Gamma/Chi2/Beta/Dirichlet and the statistical sample tests), against torch 2.13 (the
oracle). The draws differ between the libraries, so:

- a sampler that is a monotone function of one uniform per element (inverse-CDF, location-
  scale) has the implicit reparameterization gradient dx/dθ = -(∂F/∂θ)(x) / f(x): kiln's
  rsample gradient at its own draws must equal that, computed from torch's cdf and log_prob
  at the same values (float64, rtol 1e-6). Gamma's is torch's `_standard_gamma_grad` at the
  standardized draws.
- the other reparameterized samplers (Beta, Dirichlet, StudentT, ...) are checked for
  unbiasedness: the mean of the per-draw gradients of the draws equals the gradient of
  torch's analytic mean within 5 standard errors (N draws; a correct sampler misses that
  bound with probability under 1e-6; kiln's generator is seeded, so the test is
  deterministic).
- sample means lie within 5 standard errors of torch's mean (sd from torch's variance) and
  sample variances within 10% of torch's (N = 20000 draws: for these parameters the
  variance estimate's relative standard error is under 2%).
"""

import numpy as np
import pytest
from port_common import to_numpy

import kiln as kn

torch = pytest.importorskip("torch")


@pytest.fixture(autouse=True)
def _no_validation():
    for lib in (torch, kn):
        lib.distributions.Distribution.set_default_validate_args(False)
    yield
    for lib in (torch, kn):
        lib.distributions.Distribution.set_default_validate_args(True)


IMPLICIT = {
    "Normal": (lambda D, a, b: D.Normal(a, b), [0.5, -1.0], [1.0, 2.0]),
    "Uniform": (lambda D, a, b: D.Uniform(a, a + b), [0.5, -1.0], [1.0, 2.0]),
    "Exponential": (lambda D, a: D.Exponential(a), [0.5, 2.0]),
    "Laplace": (lambda D, a, b: D.Laplace(a, b), [0.5, -1.0], [1.0, 2.0]),
    "Cauchy": (lambda D, a, b: D.Cauchy(a, b), [0.5, -1.0], [1.0, 2.0]),
    "HalfNormal": (lambda D, b: D.HalfNormal(b), [1.0, 2.0]),
    "HalfCauchy": (lambda D, b: D.HalfCauchy(b), [1.0, 2.0]),
    "LogNormal": (lambda D, a, b: D.LogNormal(a, b), [0.5, -1.0], [1.0, 0.5]),
    "Gumbel": (lambda D, a, b: D.Gumbel(a, b), [0.5, -1.0], [1.0, 2.0]),
    "Weibull": (lambda D, a, b: D.Weibull(a, b), [0.5, 1.5], [1.0, 2.0]),
    "Pareto": (lambda D, a, b: D.Pareto(a, b), [0.5, 1.5], [1.0, 2.0]),
    "Kumaraswamy": (lambda D, a, b: D.Kumaraswamy(a, b), [0.5, 1.5], [1.0, 2.0]),
    "ContinuousBernoulli": (lambda D, a: D.ContinuousBernoulli(a), [0.3, 0.8]),
    "AffineSigmoid": (lambda D, a, b: D.TransformedDistribution(D.Normal(a, b), [
        D.transforms.AffineTransform(1.0, -2.0), D.transforms.SigmoidTransform()]),
        [0.5, -1.0], [1.0, 2.0]),
}  # fmt: skip


@pytest.mark.parametrize("name", list(IMPLICIT))
def test_rsample_gradient_is_the_implicit_one(name):
    build, *params = IMPLICIT[name]
    kp = [kn.tensor(p, dtype=kn.float64, requires_grad=True) for p in params]
    kn.manual_seed(0)
    x = build(kn.distributions, *kp).rsample((64,))
    got = kn.autograd.grad(x.sum(), kp)
    tp = [torch.tensor(p, dtype=torch.float64, requires_grad=True) for p in params]
    d = build(torch.distributions, *tp)
    xt = torch.tensor(to_numpy(x))
    density = d.log_prob(xt).exp().detach()
    want = torch.autograd.grad((d.cdf(xt) / density).sum(), tp)
    for a, b in zip(got, want):
        np.testing.assert_allclose(to_numpy(a), -b.numpy(), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gamma_and_chi2_rsample_gradients_are_torchs(dtype):
    conc, rate = [0.3, 1.0, 2.5, 50.0], [1.0, 2.0, 0.5, 3.0]
    a = kn.tensor(conc, dtype=getattr(kn, dtype), requires_grad=True)
    r = kn.tensor(rate, dtype=getattr(kn, dtype), requires_grad=True)
    kn.manual_seed(0)
    x = kn.distributions.Gamma(a, r).rsample((16,))
    ga, gr = kn.autograd.grad(x.sum(), [a, r])
    xt = torch.tensor(to_numpy(x))
    at, rt = torch.tensor(conc, dtype=xt.dtype), torch.tensor(rate, dtype=xt.dtype)
    s = xt * rt
    rtol = 1e-6 if dtype == "float64" else 1e-4
    want_a = (torch._standard_gamma_grad(at.expand_as(s), s) / rt).sum(0)
    np.testing.assert_allclose(to_numpy(ga), want_a.numpy(), rtol=rtol)
    np.testing.assert_allclose(to_numpy(gr), (-xt / rt).sum(0).numpy(), rtol=rtol)
    df = kn.tensor(conc, dtype=kn.float64, requires_grad=True)
    y = kn.distributions.Chi2(df).rsample((16,))
    (g,) = kn.autograd.grad(y.sum(), [df])
    yt = torch.tensor(to_numpy(y))
    want = (torch._standard_gamma_grad(torch.tensor(conc, dtype=yt.dtype).expand_as(yt) / 2,
                                       yt / 2)).sum(0)  # fmt: skip
    np.testing.assert_allclose(to_numpy(g), want.numpy(), rtol=1e-6)


UNBIASED = {
    "Beta": (lambda D, a, b: D.Beta(a, b), [0.3, 2.5], [1.0, 2.0]),
    "Dirichlet": (lambda D, c: D.Dirichlet(c), [0.3, 2.5, 1.0]),
    "StudentT": (lambda D, df, s: D.StudentT(df, 0.5, s), [5.0, 10.0], [1.0, 2.0]),
    "FisherSnedecor": (lambda D, a, b: D.FisherSnedecor(a, b), [3.0, 10.0], [10.0, 12.0]),
    "InverseGamma": (lambda D, a, b: D.InverseGamma(a, b), [5.0, 6.0], [1.0, 2.0]),
    "Gamma": (lambda D, a, b: D.Gamma(a, b), [0.3, 2.5], [1.0, 2.0]),
    "MultivariateNormal": (lambda D, loc, tril: D.MultivariateNormal(loc, scale_tril=tril),
                           [0.5, -1.0], [[1.0, 0.0], [0.5, 2.0]]),
    "LowRankMultivariateNormal": (lambda D, loc, w, d: D.LowRankMultivariateNormal(loc, w, d),
                                  [0.5, -1.0], [[1.0], [0.5]], [1.0, 2.0]),
    "Wishart": (lambda D, df, tril: D.Wishart(df, scale_tril=tril), 5.0,
                [[1.0, 0.0], [0.5, 2.0]]),
    "LogNormal": (lambda D, a, b: D.LogNormal(a, b), [0.5, -1.0], [0.5, 0.3]),
}  # fmt: skip


@pytest.mark.parametrize("name", list(UNBIASED))
def test_rsample_gradients_are_unbiased(name):
    """Each of N draws made by its own copy of the parameters: the rows of their gradients
    are per-draw samples of d(sum x)/dθ, whose mean is d(sum E[x])/dθ."""
    build, *params = UNBIASED[name]
    n = 4000
    kp = [kn.tensor(np.broadcast_to(np.asarray(p, np.float64), (n, *np.shape(p))).copy(),
                    requires_grad=True) for p in params]  # fmt: skip
    kn.manual_seed(2)
    x = build(kn.distributions, *kp).rsample()
    grads = kn.autograd.grad(x.sum(), kp)
    tp = [torch.tensor(p, dtype=torch.float64, requires_grad=True) for p in params]
    mean = build(torch.distributions, *tp).mean.sum()
    if mean.requires_grad:
        want = torch.autograd.grad(mean, tp, allow_unused=True)
    else:
        want = [None] * len(tp)
    for g, p, w in zip(grads, tp, want):
        g, w = to_numpy(g), torch.zeros_like(p) if w is None else w  # (E[x] not depending on p)
        bound = 5 * g.std(0) / np.sqrt(n) + 1e-9
        assert (np.abs(g.mean(0) - w.numpy()) <= bound).all(), (g.mean(0), w.numpy(), bound)


STATISTICS = {
    "Normal": lambda D, t: D.Normal(t([0.5, -1.0]), t([1.0, 2.0])),
    "Uniform": lambda D, t: D.Uniform(t([0.5, -1.0]), t([1.0, 2.0])),
    "Exponential": lambda D, t: D.Exponential(t([0.5, 2.0])),
    "Laplace": lambda D, t: D.Laplace(t([0.5, -1.0]), t([1.0, 2.0])),
    "HalfNormal": lambda D, t: D.HalfNormal(t([1.0, 2.0])),
    "LogNormal": lambda D, t: D.LogNormal(t([0.5, -1.0]), t([0.5, 0.3])),
    "Gumbel": lambda D, t: D.Gumbel(t([0.5, -1.0]), t([1.0, 2.0])),
    "Weibull": lambda D, t: D.Weibull(t([0.5, 1.5]), t([1.0, 2.0])),
    "Pareto": lambda D, t: D.Pareto(t([0.5, 1.5]), t([5.0, 6.0])),
    "Kumaraswamy": lambda D, t: D.Kumaraswamy(t([0.5, 1.5]), t([1.0, 2.0])),
    "ContinuousBernoulli": lambda D, t: D.ContinuousBernoulli(t([0.3, 0.8])),
    "Gamma": lambda D, t: D.Gamma(t([0.3, 2.5]), t([1.0, 2.0])),
    "Chi2": lambda D, t: D.Chi2(t([1.0, 4.0])),
    "Beta": lambda D, t: D.Beta(t([0.3, 2.5]), t([1.0, 2.0])),
    "Dirichlet": lambda D, t: D.Dirichlet(t([[0.3, 2.5, 1.0]])),
    "StudentT": lambda D, t: D.StudentT(t([5.0, 10.0]), t([0.5, -1.0]), t([1.0, 2.0])),
    "FisherSnedecor": lambda D, t: D.FisherSnedecor(t([3.0, 10.0]), t([10.0, 12.0])),
    "InverseGamma": lambda D, t: D.InverseGamma(t([5.0, 6.0]), t([1.0, 2.0])),
    "Bernoulli": lambda D, t: D.Bernoulli(t([0.3, 0.8])),
    "Binomial": lambda D, t: D.Binomial(t([10.0, 3.0]), t([0.3, 0.8])),
    "BinomialLarge": lambda D, t: D.Binomial(t([1000.0, 300.0]), t([0.3, 0.8])),
    "Geometric": lambda D, t: D.Geometric(t([0.3, 0.8])),
    "Poisson": lambda D, t: D.Poisson(t([0.3, 40.0])),
    "NegativeBinomial": lambda D, t: D.NegativeBinomial(t([3.0, 0.5]), t([0.3, 0.6])),
    "OneHotCategorical": lambda D, t: D.OneHotCategorical(t([0.2, 0.3, 0.5])),
    "Multinomial": lambda D, t: D.Multinomial(7, t([0.2, 0.3, 0.5])),
    "MultivariateNormal": lambda D, t: D.MultivariateNormal(t([0.5, -1.0]),
                                                            t([[2.0, 0.5], [0.5, 1.0]])),
    "LowRankMultivariateNormal": lambda D, t: D.LowRankMultivariateNormal(
        t([0.5, -1.0]), t([[1.0], [0.5]]), t([1.0, 2.0])),
    "Wishart": lambda D, t: D.Wishart(t(5.0), t([[2.0, 0.5], [0.5, 1.0]])),
    "GeneralizedPareto": lambda D, t: D.GeneralizedPareto(t([0.5, -1.0]), t([1.0, 2.0]),
                                                          t([0.1, -0.3])),
    "MixtureSameFamily": lambda D, t: D.MixtureSameFamily(D.Categorical(t([0.3, 0.7])),
                                                          D.Normal(t([-1.0, 2.0]), t([0.5, 1]))),
}  # fmt: skip


@pytest.mark.parametrize("name", list(STATISTICS))
def test_sample_mean_and_variance_are_torchs(name):
    n = 20000
    want = STATISTICS[name](torch.distributions, lambda v: torch.tensor(v, dtype=torch.float64))
    kn.manual_seed(1)
    d = STATISTICS[name](kn.distributions, lambda v: kn.tensor(v, dtype=kn.float64))
    x = to_numpy(d.sample((n,))).astype(np.float64)
    mean, var = want.mean.numpy(), want.variance.numpy()
    assert (np.abs(x.mean(0) - mean) <= 5 * np.sqrt(var / n)).all(), (x.mean(0), mean)
    np.testing.assert_allclose(x.var(0), var, rtol=0.1)


def test_von_mises_samples_have_torchs_circular_mean_and_variance():
    loc, conc = [0.5, -1.0, 2.0], [0.5, 4.0, 1e-3]
    kn.manual_seed(1)
    x = to_numpy(kn.distributions.VonMises(kn.tensor(loc), kn.tensor(conc)).sample((20000,)))
    c, s = np.cos(x).mean(0), np.sin(x).mean(0)
    want = torch.distributions.VonMises(torch.tensor(loc), torch.tensor(conc)).variance
    np.testing.assert_allclose(np.arctan2(s, c)[:2], loc[:2], atol=0.03)
    np.testing.assert_allclose(1 - np.hypot(c, s), want.numpy(), atol=0.01)


def test_rsample_requires_grad_and_sample_does_not():
    """PyTorch's test_rsample_requires_grad: a reparameterized draw needs grad when a
    parameter does; `sample()` never does."""
    D = kn.distributions
    p = kn.tensor([0.3, 0.6], requires_grad=True)
    for d in (
        D.Normal(p, 1.0),
        D.Gamma(p, 1.0),
        D.Beta(p, p),
        D.Dirichlet(p),
        D.Uniform(p, 1.0),
        D.StudentT(p),
        D.RelaxedBernoulli(0.5, p),
        D.Kumaraswamy(p, p),
        D.LogNormal(p, p),
        D.MultivariateNormal(p, kn.eye(2)),
        D.Independent(D.Normal(p, 1.0), 1),
        D.TransformedDistribution(D.Normal(p, 1.0), D.transforms.ExpTransform()),
    ):
        # fmt: skip
        assert d.has_rsample and d.rsample().requires_grad, d
        assert not d.sample().requires_grad, d
    for d in (D.Bernoulli(p), D.Categorical(p), D.Poisson(p), D.VonMises(p, 1.0)):
        assert not d.has_rsample and not d.sample().requires_grad, d
        with pytest.raises(NotImplementedError):
            d.rsample()
    assert torch.distributions.VonMises(torch.tensor(0.0), torch.tensor(1.0)).has_rsample is False


def test_lkj_cholesky_samples_have_torchs_correlation_spread():
    """LKJCholesky's draws (as correlation matrices) against torch's own draws: the variance
    of each correlation (N = 20000 each: its standard error is under 0.005 here), and unit
    diagonals. (Both give the last pairs a wider spread than the LKJ marginal's
    1 / (2 eta + d - 1): the same onion-method sampler.)"""
    for dim, eta in ((2, 0.5), (3, 1.0), (4, 3.0)):
        kn.manual_seed(0)
        torch.manual_seed(0)
        lk = to_numpy(kn.distributions.LKJCholesky(dim, kn.tensor(eta)).sample((20000,)))
        lt = torch.distributions.LKJCholesky(dim, torch.tensor(eta)).sample((20000,)).numpy()
        ck, ct = (x.astype(np.float64) @ np.swapaxes(x, -1, -2) for x in (lk, lt))
        np.testing.assert_allclose(np.diagonal(ck, axis1=1, axis2=2), 1.0, atol=1e-5)
        np.testing.assert_allclose(ck.var(0), ct.var(0), atol=0.015)
        np.testing.assert_allclose(ck.mean(0), np.eye(dim), atol=0.02)
