"""kn.distributions' samplers, which draw from kiln's generator (`kn.manual_seed`), so their
bits cannot equal torch's: each is checked against its distribution (a Kolmogorov-Smirnov test
with SciPy's CDF, p > 1e-3 at a fixed seed, or moments within 5 standard errors), and the
reparameterized gradients of `rsample` against (a) torch 2.13's `torch._standard_gamma_grad`
at kiln's own draws, (b) the implicit-function derivative -dF/dalpha / dF/dx of SciPy's
regularized incomplete gamma function (finite differences in alpha), and (c) the derivative
of the mean (E[d x / d alpha] = d E[x] / d alpha). `kn.compile` runs a log_prob training step
and an rsample step of Gamma and of a TransformedDistribution.
"""

import math

import numpy as np
import pytest
import scipy.special
import scipy.stats

import kiln as kn

D = kn.distributions
N = 20000


def _ks(draws, cdf):
    return scipy.stats.kstest(np.asarray(draws, np.float64).ravel(), cdf).pvalue


@pytest.mark.parametrize("dtype", [kn.float32, kn.float64])
@pytest.mark.parametrize("alpha, rate", [(0.3, 1.0), (1.0, 2.0), (2.5, 0.5), (30.0, 3.0)])
def test_gamma_samples_follow_the_gamma_law(dtype, alpha, rate):
    kn.manual_seed(1)
    m = D.Gamma(kn.tensor(alpha, dtype=dtype), kn.tensor(rate, dtype=dtype))
    x = m.sample((N,))
    assert x.dtype == dtype and tuple(x.shape) == (N,) and bool((x > 0).all())
    assert _ks(x.numpy(), scipy.stats.gamma(alpha, scale=1 / rate).cdf) > 1e-3


def test_beta_dirichlet_poisson_and_chi2_samples():
    kn.manual_seed(2)
    b = D.Beta(kn.tensor(0.7), kn.tensor(2.0)).sample((N,)).numpy()
    assert _ks(b, scipy.stats.beta(0.7, 2.0).cdf) > 1e-3
    c = np.array([0.5, 1.0, 3.0])
    x = D.Dirichlet(kn.tensor(c, dtype=kn.float64)).sample((N,)).numpy()
    assert np.allclose(x.sum(-1), 1.0) and (x > 0).all()
    mean, var = c / c.sum(), c * (c.sum() - c) / (c.sum() ** 2 * (c.sum() + 1))
    assert (np.abs(x.mean(0) - mean) < 5 * np.sqrt(var / N)).all()
    for k in range(3):  # each marginal is Beta(c_k, sum - c_k)
        assert _ks(x[:, k], scipy.stats.beta(c[k], c.sum() - c[k]).cdf) > 1e-3
    p = D.Poisson(kn.tensor([0.5, 7.0])).sample((N,)).numpy()
    assert (np.abs(p.mean(0) - [0.5, 7.0]) < 5 * np.sqrt(np.array([0.5, 7.0]) / N)).all()
    assert _ks(D.Chi2(kn.tensor(3.0)).sample((N,)).numpy(), scipy.stats.chi2(3.0).cdf) > 1e-3


def test_samples_are_reproducible_from_kn_manual_seed():
    kn.manual_seed(5)
    a = D.Gamma(kn.tensor([0.5, 3.0]), 1.0).sample((4,))
    kn.manual_seed(5)
    b = D.Gamma(kn.tensor([0.5, 3.0]), 1.0).sample((4,))
    assert a.tolist() == b.tolist()


CONTINUOUS = [
    ("StudentT", lambda: D.StudentT(kn.tensor(3.0), 1.0, 2.0), scipy.stats.t(3.0, 1.0, 2.0)),
    ("Gumbel", lambda: D.Gumbel(kn.tensor(1.0), 2.0), scipy.stats.gumbel_r(1.0, 2.0)),
    ("Weibull", lambda: D.Weibull(kn.tensor(2.0), 1.5), scipy.stats.weibull_min(1.5, 0, 2.0)),
    ("Pareto", lambda: D.Pareto(kn.tensor(1.5), 3.0), scipy.stats.pareto(3.0, 0, 1.5)),
    ("LogNormal", lambda: D.LogNormal(kn.tensor(0.3), 0.5), scipy.stats.lognorm(0.5, 0, 1.35)),
    ("HalfNormal", lambda: D.HalfNormal(kn.tensor(2.0)), scipy.stats.halfnorm(0, 2.0)),
    ("HalfCauchy", lambda: D.HalfCauchy(kn.tensor(2.0)), scipy.stats.halfcauchy(0, 2.0)),
    ("InverseGamma", lambda: D.InverseGamma(kn.tensor(3.0), 2.0),
     scipy.stats.invgamma(3.0, 0, 2.0)),
    ("FisherSnedecor", lambda: D.FisherSnedecor(kn.tensor(3.0), 7.0), scipy.stats.f(3.0, 7.0)),
    ("Kumaraswamy", lambda: D.Kumaraswamy(kn.tensor(2.0), 3.0),
     None),  # its CDF below: 1 - (1 - x^a)^b
    ("ContinuousBernoulli", lambda: D.ContinuousBernoulli(kn.tensor(0.3)), None),
    ("GeneralizedPareto", lambda: D.GeneralizedPareto(kn.tensor(1.0), 2.0, 0.3),
     scipy.stats.genpareto(0.3, 1.0, 2.0)),
    # (centred: SciPy's vonmises CDF with a loc spans [loc - pi, loc + pi])
    ("VonMises", lambda: D.VonMises(kn.tensor(1.0), 2.0), scipy.stats.vonmises(2.0)),
    ("Logistic", lambda: D.TransformedDistribution(D.Uniform(0.0, 1.0), [
        D.transforms.SigmoidTransform().inv, D.transforms.AffineTransform(1.0, 2.0)]),
        scipy.stats.logistic(1.0, 2.0)),
]  # fmt: skip


@pytest.mark.parametrize("name, make, law", CONTINUOUS, ids=[c[0] for c in CONTINUOUS])
def test_continuous_samples_follow_their_laws(name, make, law):
    kn.manual_seed(3)
    m = make()
    if name == "LogNormal":
        law = scipy.stats.lognorm(0.5, scale=math.exp(0.3))
    x = (m.rsample((N,)) if m.has_rsample else m.sample((N,))).numpy()
    cdf = law.cdf if law is not None else None
    if name == "VonMises":
        x = (x - 1.0 + math.pi) % (2 * math.pi) - math.pi
    if name == "Kumaraswamy":
        cdf = lambda v: 1 - (1 - np.clip(v, 0, 1) ** 2.0) ** 3.0  # noqa: E731
    if name == "ContinuousBernoulli":  # its CDF in closed form (lambda = 0.3)
        cdf = lambda v: (0.3**v * 0.7 ** (1 - v) + 0.3 - 1) / (2 * 0.3 - 1)  # noqa: E731
    assert _ks(x, cdf) > 1e-3


def test_discrete_and_vector_samples():
    kn.manual_seed(4)
    g = D.Geometric(kn.tensor(0.3)).sample((N,)).numpy()
    assert abs(g.mean() - 0.7 / 0.3) < 5 * math.sqrt(0.7 / 0.09 / N) and (g >= 0).all()
    nb = D.NegativeBinomial(3.0, probs=kn.tensor(0.4)).sample((N,)).numpy()
    nb_var = 3.0 * 0.4 / 0.6**2
    assert abs(nb.mean() - 2.0) < 5 * math.sqrt(nb_var / N) and (nb % 1 == 0).all()
    b = D.Binomial(10, kn.tensor([0.2, 0.9])).sample((N,)).numpy()
    assert (np.abs(b.mean(0) - [2.0, 9.0]) < 5 * np.sqrt(np.array([1.6, 0.9]) / N)).all()
    probs = np.array([0.2, 0.3, 0.5])
    oh = D.OneHotCategorical(kn.tensor(probs)).sample((N,)).numpy()
    assert (oh.sum(-1) == 1).all() and (np.abs(oh.mean(0) - probs) < 0.02).all()
    mn = D.Multinomial(7, kn.tensor(probs)).sample((N // 10,)).numpy()
    assert (mn.sum(-1) == 7).all() and (np.abs(mn.mean(0) - 7 * probs) < 0.15).all()
    rb = D.RelaxedBernoulli(kn.tensor(0.5), kn.tensor(0.3)).rsample((N,)).numpy()
    assert ((rb > 0) & (rb < 1)).all() and abs((rb > 0.5).mean() - 0.3) < 0.02
    relaxed = D.RelaxedOneHotCategorical(kn.tensor(0.3), kn.tensor(probs)).rsample((N,)).numpy()
    assert np.allclose(relaxed.sum(-1), 1.0) and (np.abs(
        np.bincount(relaxed.argmax(-1), minlength=3) / N - probs) < 0.02).all()  # fmt: skip
    ln = D.LogisticNormal(kn.zeros(2), kn.ones(2)).sample((N,)).numpy()
    assert ln.shape == (N, 3) and np.allclose(ln.sum(-1), 1.0) and (ln > 0).all()
    mix = D.MixtureSameFamily(D.Categorical(kn.tensor([0.3, 0.7])),
                              D.Normal(kn.tensor([-2.0, 2.0]), kn.tensor([0.5, 0.5])))  # fmt: skip
    x = mix.sample((N,)).numpy()
    assert abs(x.mean() - 0.8) < 0.05 and abs((x > 0).mean() - 0.7) < 0.02
    w = np.array([[1.0, 0.5], [0.2, 1.0], [0.0, -0.3]])
    lr = D.LowRankMultivariateNormal(kn.zeros(3, dtype=kn.float64), kn.tensor(w),
                                     kn.tensor([1.0, 2.0, 0.5], dtype=kn.float64))  # fmt: skip
    s = lr.rsample((N,)).numpy()
    np.testing.assert_allclose(np.cov(s.T), lr.covariance_matrix.numpy(), atol=0.1)


def test_matrix_samples():
    kn.manual_seed(11)
    cov = np.array([[2.0, 0.3], [0.3, 1.0]])
    w = D.Wishart(kn.tensor(5.0, dtype=kn.float64), kn.tensor(cov)).rsample((N // 4,)).numpy()
    assert np.allclose(w, w.transpose(0, 2, 1)) and (np.linalg.eigvalsh(w) > 0).all()
    var = 5.0 * (cov**2 + np.outer(np.diag(cov), np.diag(cov)))
    assert (np.abs(w.mean(0) - 5.0 * cov) < 5 * np.sqrt(var / (N // 4))).all()
    for eta, law in ((1.0, scipy.stats.uniform(-1, 2)), (2.0, scipy.stats.beta(2, 2, -1, 2))):
        lkj = D.LKJCholesky(2, kn.tensor(eta)).sample((N,))
        assert bool(D.constraints.corr_cholesky.check(lkj).all())
        assert _ks(lkj[:, 1, 0].numpy(), law.cdf) > 1e-3  # the correlation's marginal
    big = D.LKJCholesky(4, kn.tensor(1.5, dtype=kn.float64)).sample((100,))
    assert bool(D.constraints.corr_cholesky.check(big).all())


# -- reparameterized gradients -----------------------------------------------------------------


def _implicit_gamma_grad(alpha, x, h=1e-6):
    """d x / d alpha at fixed quantile, -dF/dalpha / dF/dx with F = P(alpha, x) (SciPy)."""
    d_alpha = (scipy.special.gammainc(alpha + h, x) - scipy.special.gammainc(alpha - h, x)) / (
        2 * h
    )
    density = np.exp((alpha - 1) * np.log(x) - x - scipy.special.gammaln(alpha))
    return -d_alpha / density


def test_gamma_rsample_gradient_is_the_implicit_reparameterization():
    torch = pytest.importorskip("torch")
    kn.manual_seed(6)
    alphas = np.array([0.2, 0.7, 1.0, 2.5, 5.0, 9.0, 20.0, 80.0] * 25)
    alpha = kn.tensor(alphas, dtype=kn.float64, requires_grad=True)
    rate = kn.tensor(2.0, dtype=kn.float64, requires_grad=True)
    x = D.Gamma(alpha, rate).rsample()
    g_alpha, g_rate = kn.autograd.grad(x.sum(), [alpha, rate])
    standard = x.detach().numpy() * 2.0  # the Gamma(alpha, 1) draws
    # (a) torch's formula at kiln's draws
    expected = torch._standard_gamma_grad(torch.tensor(alphas), torch.tensor(standard)) / 2.0
    np.testing.assert_allclose(g_alpha.numpy(), expected.numpy(), rtol=1e-10)
    # (b) the implicit-function derivative of SciPy's CDF (torch's approximation holds to 1e-3)
    keep = standard > 1e-3  # the finite difference of a CDF of tiny value is noise
    implicit = _implicit_gamma_grad(alphas, standard) / 2.0
    np.testing.assert_allclose(g_alpha.numpy()[keep], implicit[keep], rtol=2e-3)
    # and d x / d rate = -x / rate
    np.testing.assert_allclose(g_rate.item(), -x.detach().numpy().sum() / 2.0, rtol=1e-12)


@pytest.mark.parametrize("dtype", [kn.float32, kn.float64])
def test_rsample_gradients_are_unbiased_for_the_mean(dtype):
    """E[d x / d theta] = d E[x] / d theta: for Gamma(a, r) 1 / r; for Beta(a, b)
    b / (a + b)^2 and -a / (a + b)^2; for Dirichlet(c) d c_0 / sum(c)."""
    kn.manual_seed(7)
    a = kn.tensor(0.8, dtype=dtype, requires_grad=True)
    r = kn.tensor(2.0, dtype=dtype, requires_grad=True)
    x = D.Gamma(a, r).rsample((N,))
    per = x.detach().numpy()
    ga, gr = kn.autograd.grad(x.mean(), [a, r])
    # 5 standard errors: the per-draw d x / d a have a standard deviation under 0.6 here
    assert abs(ga.item() - 0.5) < 5 * 0.6 / math.sqrt(N)
    assert abs(gr.item() + 0.2) < 5 * per.std() / 2.0 / math.sqrt(N)
    b1 = kn.tensor(0.7, dtype=dtype, requires_grad=True)
    b0 = kn.tensor(2.0, dtype=dtype, requires_grad=True)
    g1, g0 = kn.autograd.grad(D.Beta(b1, b0).rsample((N,)).mean(), [b1, b0])
    assert abs(g1.item() - 2.0 / 2.7**2) < 0.02 and abs(g0.item() + 0.7 / 2.7**2) < 0.01
    c = kn.tensor([0.5, 1.0, 3.0], dtype=dtype, requires_grad=True)
    (gc,) = kn.autograd.grad(D.Dirichlet(c).rsample((N,))[:, 0].mean(), [c])
    expected = np.array([1 / 4.5 - 0.5 / 4.5**2, -0.5 / 4.5**2, -0.5 / 4.5**2])
    np.testing.assert_allclose(gc.numpy(), expected, atol=0.01)


def test_student_t_and_weibull_rsample_gradients_reach_the_parameters():
    kn.manual_seed(8)
    df = kn.tensor(4.0, requires_grad=True)
    scale = kn.tensor(2.0, requires_grad=True)
    gdf, gs = kn.autograd.grad(D.StudentT(df, 0.0, scale).rsample((100,)).abs().mean(),
                               [df, scale])  # fmt: skip
    assert math.isfinite(gdf.item()) and gs.item() > 0
    k = kn.tensor(1.5, requires_grad=True)
    (gk,) = kn.autograd.grad(D.Weibull(kn.tensor(1.0), k).rsample((100,)).mean(), [k])
    assert math.isfinite(gk.item())


# -- kn.compile -----------------------------------------------------------------------------


def _fit_step(compiled, make):
    kn.manual_seed(9)
    raw = kn.tensor([0.3, -0.2], requires_grad=True)
    data = kn.tensor([[0.5, 1.5], [0.8, 2.5], [0.2, 0.9]])

    def loss_fn(data):
        return -make(raw).log_prob(data).mean()

    f = kn.compile(loss_fn) if compiled else loss_fn
    losses = []
    for _ in range(3):
        loss = f(data)
        loss.backward()
        with kn.no_grad():
            raw -= 0.1 * raw.grad
        raw.grad = None
        losses.append(loss.item())
    return losses, raw.tolist()


MAKERS = {
    "Gamma": lambda raw: D.Gamma(kn.nn.functional.softplus(raw), kn.ones(2)),
    "Transformed": lambda raw: D.TransformedDistribution(
        D.Normal(raw, kn.ones(2)), [D.transforms.ExpTransform(),
                                    D.transforms.AffineTransform(0.0, 2.0)]),
}  # fmt: skip


@pytest.mark.parametrize("name", list(MAKERS))
def test_compiled_log_prob_training_step_matches_eager(name):
    eager = _fit_step(False, MAKERS[name])
    compiled = _fit_step(True, MAKERS[name])
    np.testing.assert_allclose(compiled[0], eager[0], rtol=1e-5)
    np.testing.assert_allclose(compiled[1], eager[1], rtol=1e-5)


@pytest.mark.parametrize("name", list(MAKERS))
def test_compiled_rsample_step_draws_fresh_values_with_gradients(name):
    raw = kn.tensor([0.3, -0.2], requires_grad=True)
    f = kn.compile(lambda n: MAKERS[name](raw).rsample((n,)).mean())
    kn.manual_seed(10)
    first = f(4000)
    first.backward()
    grad = raw.grad.tolist()
    second = f(4000)
    assert first.item() != second.item() and all(g > 0 for g in grad)
    # the gradient of the mean of the draws is that of the distribution's mean
    exact = kn.autograd.grad(_mean(name, raw).mean(), [raw])[0].tolist()
    np.testing.assert_allclose(grad, exact, rtol=0.15)


def _mean(name, raw):
    if name == "Gamma":
        return kn.nn.functional.softplus(raw)
    return 2.0 * (raw + 0.5).exp()


def test_compiled_beta_and_dirichlet_rsample_gradients():
    """Their Gamma draws are graph nodes under kn.compile: fresh per call, with the implicit
    reparameterization gradient (the mean's derivative, as eagerly)."""
    a = kn.tensor([0.7, 2.0], dtype=kn.float64, requires_grad=True)
    f = kn.compile(lambda n: D.Beta(a[0], a[1]).rsample((n,)).mean())
    kn.manual_seed(12)
    first = f(N)
    first.backward()
    assert first.item() != f(N).item()
    np.testing.assert_allclose(a.grad.numpy(), [2.0 / 2.7**2, -0.7 / 2.7**2], atol=0.01)
    c = kn.tensor([0.5, 1.0, 3.0], dtype=kn.float64, requires_grad=True)
    g = kn.compile(lambda n: D.Dirichlet(c).rsample((n,))[:, 0].mean())
    g(N).backward()
    expected = np.array([1 / 4.5 - 0.5 / 4.5**2, -0.5 / 4.5**2, -0.5 / 4.5**2])
    np.testing.assert_allclose(c.grad.numpy(), expected, atol=0.01)


def test_graph_mode_log_prob_and_rsample():
    """On placeholders (kn.function): log_prob equals the eager value, and the Gamma draws of
    a Beta rsample are graph nodes with gradients."""
    a_np, x_np = np.array([1.0, 2.0, 3.0], np.float32), np.array([0.5, 1.0, 2.0], np.float32)

    def log_prob(a, x):
        exp = D.transforms.ExpTransform()
        return D.Gamma(a, 2.0).log_prob(x) + D.TransformedDistribution(
            D.Normal(a, 1.0), [exp]).log_prob(x)  # fmt: skip

    with kn.Graph().as_default():
        a = kn.placeholder(kn.float32, (3,), name="a")
        x = kn.placeholder(kn.float32, (3,), name="x")
        draw = D.Beta(a, a).rsample()
        (g,) = kn.grad(kn.sum(draw), [a])
        f = kn.function([a, x], [log_prob(a, x), draw, g])
        lp, s, grad = f(a_np, x_np)
    np.testing.assert_allclose(lp, log_prob(kn.tensor(a_np), kn.tensor(x_np)).numpy(), rtol=1e-6)
    assert ((s > 0) & (s < 1)).all() and np.isfinite(grad).all()
