"""PyTorch's own distribution tests (test/distributions/test_distributions.py) as an oracle:
the behaviours they check, each written here as a scenario of its own (pt_oracle.py runs it on
torch and on kiln, eagerly and under `kn.compile`, and compares values, dtypes, shapes and
exception types). This file: log_prob/cdf/icdf at the edges of each support, the moments
where torch gives NaN or inf, numerical stability at extreme logits and probabilities
(validation off, as PyTorch's tests turn it off there). test_port_pt_distributions_shapes.py
has dtypes, broadcasting, sample shapes, expand, enumerate_support, Independent and
MixtureSameFamily; test_port_pt_distributions_validation.py the argument validation;
test_port_pt_distributions_kl.py KL, transforms, constraints and reparameterized gradients.
tests/test_distributions_more.py compares interior values and gradients in float64; these are
float32 unless said.

Expected values: torch 2.13 (the oracle); float results agree within rtol 1e-5.
"""

import math

import numpy as np
import pytest
from pt_distributions_common import check, validating  # noqa: F401  (the fixture)
from pt_oracle import MODES, Leaf, Scenarios

nan, inf = float("nan"), float("inf")
f32, f64 = np.float32, np.float64

SCENARIOS = Scenarios()
case = SCENARIOS.case


def _d(lib):
    return lib.distributions


# -- log_prob / cdf / icdf at the edges of the support (validation off: values outside too) --


def _edges(dist, values, lib, icdf=True):
    out = [dist.log_prob(values)]
    for name in ("cdf", "icdf") if icdf else ("cdf",):
        try:
            arg = values if name == "cdf" else lib.tensor([0.0, 1.0], dtype=values.dtype)
            out.append(getattr(dist, name)(arg.reshape(arg.shape[:1] + (1,) * 0)))
        except NotImplementedError:
            out.append("NotImplementedError")
    return out


EDGE_CASES = {
    "Normal": (lambda D, p: D.Normal(p[0], p[1]), [0.0, 2.0], [-inf, inf, 0.0, 1e30]),
    "Uniform": (lambda D, p: D.Uniform(p[0], p[1]), [-1.0, 2.0], [-1.0, 2.0, -1.5, 2.5]),
    "Exponential": (lambda D, p: D.Exponential(p[1]), [0.0, 2.0], [0.0, inf, -1.0, 0.5]),
    "Laplace": (lambda D, p: D.Laplace(p[0], p[1]), [1.0, 2.0], [1.0, inf, -inf, 0.0]),
    "Cauchy": (lambda D, p: D.Cauchy(p[0], p[1]), [1.0, 2.0], [1.0, inf, -inf, 0.0]),
    "LogNormal": (lambda D, p: D.LogNormal(p[0], p[1]), [0.0, 2.0], [0.0, inf, -1.0, 1.0]),
    "HalfNormal": (lambda D, p: D.HalfNormal(p[1]), [0.0, 2.0], [0.0, inf, -1.0, 1.0]),
    "HalfCauchy": (lambda D, p: D.HalfCauchy(p[1]), [0.0, 2.0], [0.0, inf, -1.0, 1.0]),
    "Gumbel": (lambda D, p: D.Gumbel(p[0], p[1]), [1.0, 2.0], [1.0, inf, -inf, -50.0]),
    "Weibull": (lambda D, p: D.Weibull(p[1], p[0]), [0.5, 2.0], [0.0, inf, -1.0, 1.0]),
    "WeibullK2": (lambda D, p: D.Weibull(p[1], p[0]), [2.0, 1.0], [0.0, inf, -1.0, 1.0]),
    "Pareto": (lambda D, p: D.Pareto(p[0], p[1]), [1.0, 2.0], [1.0, inf, 0.5, 2.0]),
    "Gamma": (lambda D, p: D.Gamma(p[0], p[1]), [0.5, 2.0], [0.0, inf, -1.0, 1.0]),
    "GammaShape1": (lambda D, p: D.Gamma(p[0], p[1]), [1.0, 2.0], [0.0, inf, -1.0, 1.0]),
    "Chi2": (lambda D, p: D.Chi2(p[1]), [0.0, 2.0], [0.0, inf, -1.0, 1.0]),
    "StudentT": (lambda D, p: D.StudentT(p[0], 0.0, p[1]), [0.5, 2.0], [0.0, inf, -inf, 1.0]),
    "Beta": (lambda D, p: D.Beta(p[0], p[1]), [0.5, 1.0], [0.0, 1.0, -0.5, 0.5]),
    "BetaOnes": (lambda D, p: D.Beta(p[0], p[0]), [1.0, 3.0], [0.0, 1.0, 1.5, 0.5]),
    "Kumaraswamy": (lambda D, p: D.Kumaraswamy(p[0], p[1]), [0.5, 2.0], [0.0, 1.0, 0.5, 2.0]),
    "FisherSnedecor": (lambda D, p: D.FisherSnedecor(p[0], p[1]), [1.0, 2.0],
                       [0.0, inf, -1.0, 1.0]),
    "InverseGamma": (lambda D, p: D.InverseGamma(p[0], p[1]), [0.5, 2.0], [0.0, inf, -1.0, 1.0]),
    "ContinuousBernoulli": (lambda D, p: D.ContinuousBernoulli(p[0] / 4), [1.0, 0.0],
                            [0.0, 1.0, 0.5, 2.0]),
    "ContinuousBernoulliHalf": (lambda D, p: D.ContinuousBernoulli(p[0] / 2), [1.0, 0.0],
                                [0.0, 1.0, 0.5, 0.25]),
    "VonMises": (lambda D, p: D.VonMises(p[0], p[1]), [1.0, 0.001],
                 [math.pi, -math.pi, 0.0, 10.0]),
    "GeneralizedPareto": (lambda D, p: D.GeneralizedPareto(p[0], p[1], -p[0] / 2), [1.0, 2.0],
                          [1.0, 5.0, 0.0, 5.5]),
    "Bernoulli": (lambda D, p: D.Bernoulli(p[0]), [0.0, 0.0], [0.0, 1.0, 0.5, 2.0]),
    "BernoulliOne": (lambda D, p: D.Bernoulli(p[0]), [1.0, 0.0], [0.0, 1.0, 1.0, 0.0]),
    "Geometric": (lambda D, p: D.Geometric(p[0]), [1.0, 0.0], [0.0, 1.0, -1.0, 2.5]),
    "Poisson": (lambda D, p: D.Poisson(p[0]), [0.0, 0.0], [0.0, 1.0, -1.0, 0.5]),
    "Binomial": (lambda D, p: D.Binomial(5, p[0]), [1.0, 0.0], [5.0, 0.0, 6.0, 2.5]),
    "BinomialZero": (lambda D, p: D.Binomial(5, p[1]), [1.0, 0.0], [0.0, 5.0, -1.0, 1.0]),
    "NegativeBinomial": (lambda D, p: D.NegativeBinomial(3.0, p[1]), [1.0, 0.0],
                         [0.0, 1.0, -1.0, 0.5]),
    "Categorical": (lambda D, p: D.Categorical(p), [1.0, 0.0], [0.0, 1.0, 1.0, 0.0]),
}  # fmt: skip


def _register_edges(name, build, params, values):
    @case(f"edges_{name}", np.array(params, f32), np.array(values, f32))
    def _(lib, p, v):
        d = build(_d(lib), p)
        return _edges(
            d,
            v.reshape(-1, *(1,) * len(d.batch_shape)).expand(-1, *d.batch_shape)
            if d.batch_shape
            else v,
            lib,
        )


for _name, (_build, _params, _values) in EDGE_CASES.items():
    _register_edges(_name, _build, _params, _values)


# -- the moments where torch gives NaN or inf ----------------------------------------------


def _moments(d):
    out = []
    for name in ("mean", "mode", "variance", "stddev", "entropy"):
        try:
            out.append(d.entropy() if name == "entropy" else getattr(d, name))
        except NotImplementedError:
            out.append("NotImplementedError")
    return out


MOMENT_CASES = {
    "StudentT": (lambda D, p: D.StudentT(p), [0.5, 1.0, 1.5, 2.0, 3.0]),
    "Pareto": (lambda D, p: D.Pareto(1.0, p), [0.5, 1.0, 1.5, 2.0, 3.0]),
    "FisherSnedecor": (lambda D, p: D.FisherSnedecor(p, p + 1.0), [0.5, 1.0, 1.5, 3.0, 5.0]),
    "FisherSnedecorSmallDf1": (lambda D, p: D.FisherSnedecor(p, 3.5 - p), [0.5, 1.5, 2.0]),
    "Cauchy": (lambda D, p: D.Cauchy(p, 1.0), [0.0, 2.0]),
    "HalfCauchy": (lambda D, p: D.HalfCauchy(p), [1.0, 2.0]),
    "Beta": (lambda D, p: D.Beta(p, p.flip(0)), [0.5, 1.0, 2.0, 3.0]),
    "Gamma": (lambda D, p: D.Gamma(p, 2.0), [0.5, 1.0, 2.0]),
    "InverseGamma": (lambda D, p: D.InverseGamma(p, 2.0), [0.5, 1.0, 1.5, 2.0, 3.0]),
    "Chi2": (lambda D, p: D.Chi2(p), [0.5, 2.0, 3.0]),
    "Dirichlet": (lambda D, p: D.Dirichlet(p.reshape(-1, 2)), [0.5, 2.0, 2.0, 3.0, 1.0, 1.0]),
    "Uniform": (lambda D, p: D.Uniform(p, p + 1.0), [0.0, -2.0]),
    "Kumaraswamy": (lambda D, p: D.Kumaraswamy(p, p.flip(0)), [0.5, 1.0, 2.0, 3.0]),
    "Weibull": (lambda D, p: D.Weibull(2.0, p), [0.5, 1.0, 3.0]),
    "Binomial": (lambda D, p: D.Binomial(4, p), [0.0, 0.5, 1.0, 0.3]),
    "Geometric": (lambda D, p: D.Geometric(p), [1.0, 0.5, 0.01]),
    "NegativeBinomial": (lambda D, p: D.NegativeBinomial(p * 4, 0.5), [0.1, 0.25, 0.5]),
    "Poisson": (lambda D, p: D.Poisson(p), [0.0, 0.5, 3.0]),
    "Bernoulli": (lambda D, p: D.Bernoulli(p), [0.0, 0.5, 1.0, 0.7]),
    "Categorical": (lambda D, p: D.Categorical(p.reshape(2, 3)), [0.0, 0.5, 0.5, 1.0, 0.0, 0.0]),
    "OneHotCategorical": (lambda D, p: D.OneHotCategorical(p.reshape(2, 3)),
                          [0.0, 0.5, 0.5, 1.0, 0.0, 0.0]),
    "Multinomial": (lambda D, p: D.Multinomial(5, p.reshape(2, 3)),
                    [0.0, 0.5, 0.5, 0.2, 0.3, 0.5]),
    "LogNormal": (lambda D, p: D.LogNormal(p, 1.0), [0.0, 2.0]),
    "Gumbel": (lambda D, p: D.Gumbel(p, 2.0), [0.0, 1.0]),
    "Laplace": (lambda D, p: D.Laplace(p, 2.0), [0.0, 1.0]),
    "HalfNormal": (lambda D, p: D.HalfNormal(p), [0.5, 2.0]),
    "Exponential": (lambda D, p: D.Exponential(p), [0.5, 2.0]),
    "VonMises": (lambda D, p: D.VonMises(1.0, p), [0.001, 1.0, 100.0]),
    "ContinuousBernoulli": (lambda D, p: D.ContinuousBernoulli(p), [0.2, 0.5, 0.4999, 0.9]),
    "GeneralizedPareto": (lambda D, p: D.GeneralizedPareto(0.0, 1.0, p), [-0.5, 0.0, 0.4, 0.6,
                                                                          1.5]),
    "LowRankMultivariateNormal": (lambda D, p: D.LowRankMultivariateNormal(
        p[:2], p[2:].reshape(2, 2), p[:2].exp()), [0.5, 1.0, 0.3, 0.2, -1.0, 0.4]),
    "MultivariateNormal": (lambda D, p: D.MultivariateNormal(p[:2], scale_tril=p[2:].reshape(
        2, 2).tril()), [0.5, 1.0, 1.3, 0.0, -1.0, 0.4]),
    "Wishart": (lambda D, p: D.Wishart(p[0] + 1, scale_tril=p[2:].reshape(2, 2).tril()),
                [2.5, 1.0, 1.3, 0.0, -1.0, 0.4]),
    "LKJCholesky": (lambda D, p: D.LKJCholesky(3, p), [0.5, 1.0, 3.0]),
}  # fmt: skip


def _register_moments(name, build, params):
    @case(f"moments_{name}", np.array(params, f32))
    def _(lib, p):
        return _moments(build(_d(lib), p))


for _name, (_build, _params) in MOMENT_CASES.items():
    _register_moments(_name, _build, _params)


@case("moments_float64", np.array([0.5, 1.5, 3.0], f64))
def _(lib, p):
    D = _d(lib)
    return [
        _moments(d)
        for d in (
            D.StudentT(p),
            D.Pareto(1.0, p),
            D.Beta(p, 2.0),
            D.Gamma(p, p),
            D.Kumaraswamy(p, 2.0),
            D.VonMises(0.0, p),
        )
    ]


# -- gradients where the moments are infinite or constant ------------------------------------


@case("moment_gradients_where_infinite", Leaf.of(np.array([0.5, 1.0, 1.5, 2.0, 3.0, 5.0], f64)))
def _(lib, a):
    # (kiln's were NaN where torch's are 0: clamp's and FisherSnedecor's masks multiplied an
    # infinite cotangent by 0)
    D = _d(lib)
    p, f = D.Pareto(1.0, a), D.FisherSnedecor(a + 1, a)
    out = [p.mean, p.variance, p.stddev, f.mean, f.variance]
    grads = [lib.autograd.grad(o.sum(), [a], retain_graph=True)[0] for o in out]
    return out, grads


@case("clamp_and_maximum_gradients_with_infinite_cotangents",
      Leaf.of(np.array([-1e-7, 0.0, 4.0, -1.0, 2.0], f32)))  # fmt: skip
def _(lib, x):
    # sqrt's cotangent is inf at 0: clamp and maximum give the masked-out inputs 0 (a select,
    # as torch's masked_fill), where a product by the mask gave NaN
    zero = lib.zeros(5)
    ys = [
        x.clamp(min=0).sqrt(),
        lib.maximum(x, zero).sqrt(),
        (-lib.minimum(x, zero)).sqrt(),
        x.clamp(0.0, 1.0).sqrt(),
        lib.clamp(x, min=zero).sqrt(),
        1 / x.clamp(max=0.0),
    ]
    return [lib.autograd.grad(y.sum(), [x], retain_graph=True)[0] for y in ys]  # fmt: skip


@case("half_normal_and_half_cauchy_gradients_at_infinity", Leaf.of(np.array([1.0, 2.0], f64)))
def _(lib, scale):
    # (kiln's base distributions took loc = scale * 0: its zero gradient times the infinite
    # value gave NaN)
    D = _d(lib)
    v = lib.tensor([[0.0, math.inf], [1.0, 3.0]], dtype=lib.float64)
    out = [D.HalfNormal(scale).log_prob(v), D.HalfCauchy(scale).log_prob(v)]
    return out, [lib.autograd.grad(o[0, 1], [scale], retain_graph=True)[0] for o in out]


@case("constant_moments_need_no_grad", np.array([0.5, 2.0], f32))
def _(lib, p):
    D = _d(lib)
    p = p.clone().requires_grad_()
    qs = [
        D.Cauchy(p, 1.0).mean,
        D.Cauchy(p, 1.0).variance,
        D.HalfCauchy(p).mean,
        D.HalfNormal(p).mode,
        D.Exponential(p).mode,
        D.HalfCauchy(p).mode,
    ]
    return [q.requires_grad for q in qs], qs  # fmt: skip


@case("log_prob_and_entropy_gradients", Leaf.of(np.array([0.3, 0.7, 1.5, 2.5], f32)))
def _(lib, a):
    # each family's log_prob, entropy and cdf differentiated by its parameters (compiled too)
    D = _d(lib)
    b = a.flip(0)
    v = lib.tensor([0.2, 0.5, 0.9, 0.4])
    ds = [
        D.Normal(a, b),
        D.Gamma(a, b),
        D.Beta(a, b),
        D.Kumaraswamy(a, b),
        D.Laplace(a, b),
        D.Gumbel(a, b),
        D.Weibull(a, b),
        D.StudentT(a, a, b),
        D.Uniform(-a, b),
        D.Chi2(a),
        D.Exponential(a),
        D.LogNormal(a, b),
        D.HalfNormal(a),
        D.HalfCauchy(a),
        D.Cauchy(a, b),
        D.FisherSnedecor(a, b),
        D.InverseGamma(a, b),
        D.VonMises(a, b),
        D.Bernoulli(a / 3),
        D.Geometric(a / 3),
        D.ContinuousBernoulli(a / 3),
        D.Binomial(5, a / 3),
        D.Poisson(a),
        D.NegativeBinomial(b, a / 3),
        D.Dirichlet(lib.stack([a, b], -1)),
        D.Categorical(lib.stack([a, b], -1)),
    ]
    out = []
    for d in ds:
        x = (v * 3).round() if d.support.is_discrete else v
        if isinstance(d, (D.Dirichlet,)):
            x = lib.stack([v, 1 - v], -1)
        if isinstance(d, D.Categorical):
            x = lib.tensor([0, 1, 1, 0])
        if isinstance(d, D.Bernoulli):
            x = lib.tensor([0.0, 1.0, 1.0, 0.0])
        qs = [d.log_prob(x)]
        if not isinstance(d, (D.Binomial, D.Poisson, D.NegativeBinomial)):
            qs.append(d.entropy())
        out.append((qs, lib.autograd.grad(sum(q.sum() for q in qs), [a])[0]))
    return out


# -- numerical stability at extreme parameters (PyTorch's TestNumericalStability) ------------


@case("bernoulli_logits_extremes", np.array([-100.0, -20.0, 0.0, 20.0, 100.0], f32))
def _(lib, lg):
    d = _d(lib).Bernoulli(logits=lg)
    return (d.log_prob(lib.zeros_like(lg)), d.log_prob(lib.ones_like(lg)), d.entropy(),
            d.probs, d.mean, d.variance)  # fmt: skip


@case("bernoulli_probs_extremes", np.array([0.0, 1e-30, 0.5, 1.0 - 1e-7, 1.0], f32))
def _(lib, p):
    d = _d(lib).Bernoulli(probs=p)
    return d.log_prob(lib.zeros_like(p)), d.log_prob(lib.ones_like(p)), d.entropy(), d.logits


@case("bernoulli_probs_extremes_float64", np.array([0.0, 1e-300, 1.0 - 1e-15, 1.0], f64))
def _(lib, p):
    d = _d(lib).Bernoulli(probs=p)
    return d.log_prob(lib.zeros_like(p)), d.log_prob(lib.ones_like(p)), d.entropy(), d.logits


@case("categorical_neg_inf_logits", np.array([[-inf, 0.0, 1.0], [-inf, -inf, 2.0]], f32))
def _(lib, lg):
    d = _d(lib).Categorical(logits=lg)
    v = lib.tensor([[0, 1], [2, 2]])
    return d.log_prob(v), d.entropy(), d.probs, d.logits, d.mode


@case("categorical_zero_probs", np.array([[0.0, 0.25, 0.75], [0.0, 0.0, 1.0]], f32))
def _(lib, p):
    d = _d(lib).Categorical(probs=p)
    return d.log_prob(lib.tensor([0, 2])), d.entropy(), d.logits, d.probs


@case("categorical_unnormalized", np.array([[1.0, 3.0], [2.0, 2.0]], f32))
def _(lib, p):
    d = _d(lib).Categorical(probs=p)
    e = _d(lib).Categorical(logits=p)
    return d.probs, d.logits, e.logits, e.probs, d.param_shape, d._num_events


@case("categorical_extreme_logits", np.array([[-1e4, 1e4, 0.0], [1e30, 1e30, -1e30]], f32))
def _(lib, lg):
    d = _d(lib).Categorical(logits=lg)
    return d.log_prob(lib.tensor([0, 1])), d.entropy(), d.probs


@case("binomial_logits_extremes", np.array([-100.0, -5.0, 5.0, 100.0], f32))
def _(lib, lg):
    d = _d(lib).Binomial(10, logits=lg)
    v = lib.tensor([0.0, 3.0, 7.0, 10.0])
    return d.log_prob(v), d.log_prob(lib.zeros(4)), d.log_prob(lib.full((4,), 10.0)), d.mean


@case("binomial_total_count_zero", np.array([0.3, 0.0, 1.0], f32))
def _(lib, p):
    d = _d(lib).Binomial(lib.tensor([0.0, 0.0, 0.0]), p)
    return d.log_prob(lib.zeros(3)), d.mean, d.variance, d.mode, d.entropy()


@case("binomial_vectorized_count", np.array([0.1, 0.6], f32))
def _(lib, p):
    d = _d(lib).Binomial(lib.tensor([[10.0], [7.0]]), p)
    v = lib.tensor([[3.0, 6.0], [0.0, 7.0]])
    return d.log_prob(v), d.batch_shape, d.mean, d.mode, d.variance


@case("geometric_extremes", np.array([1.0, 1e-7, 0.5], f32))
def _(lib, p):
    d = _d(lib).Geometric(p)
    v = lib.tensor([0.0, 3.0, 100.0])
    return d.log_prob(v), d.entropy(), d.mean, d.variance, d.logits


@case("geometric_logits_extremes", np.array([-80.0, 0.0, 100.0], f32))
def _(lib, lg):
    d = _d(lib).Geometric(logits=lg)
    return d.log_prob(lib.tensor([0.0, 1.0, 0.0])), d.probs, d.entropy()


@case("negative_binomial_logits_extremes", np.array([-50.0, 0.0, 30.0], f32))
def _(lib, lg):
    d = _d(lib).NegativeBinomial(2.5, logits=lg)
    return d.log_prob(lib.tensor([0.0, 3.0, 1e4])), d.mean, d.mode, d.variance


@case("poisson_rate_zero_and_large", np.array([0.0, 1e-8, 1e5], f32))
def _(lib, r):
    d = _d(lib).Poisson(r)
    return d.log_prob(lib.tensor([0.0, 0.0, 1e5])), d.log_prob(lib.tensor([1.0, 2.0, 0.0]))


@case("multinomial_zero_probs", np.array([[0.0, 0.5, 0.5], [1.0, 0.0, 0.0]], f32))
def _(lib, p):
    d = _d(lib).Multinomial(4, p)
    v = lib.tensor([[0.0, 2.0, 2.0], [4.0, 0.0, 0.0]])
    w = lib.tensor([[1.0, 1.0, 2.0], [3.0, 1.0, 0.0]])
    return d.log_prob(v), d.log_prob(w), d.mean, d.variance


@case("continuous_bernoulli_near_half", np.array([0.4999, 0.5, 0.5001, 1e-6, 1 - 1e-6], f32))
def _(lib, p):
    d = _d(lib).ContinuousBernoulli(p)
    v = lib.tensor([0.3, 0.3, 0.7, 0.5, 0.5])
    return (d.log_prob(v), d.mean, d.variance, d.entropy(), d.cdf(v),
            d.icdf(lib.tensor([0.2, 0.4, 0.6, 0.5, 0.5])))  # fmt: skip


@case("beta_tiny_concentrations", np.array([1e-4, 1e-2, 1e3], f32))
def _(lib, c):
    d = _d(lib).Beta(c, c.flip(0))
    return d.log_prob(lib.tensor([0.5, 0.2, 0.9])), d.mean, d.variance, d.entropy()


@case("gamma_tiny_and_huge_values", np.array([1e-3, 1.0, 1e3], f32))
def _(lib, c):
    d = _d(lib).Gamma(c, 1.0)
    v = lib.tensor([1e-30, 1e-3, 1e3])
    return d.log_prob(v), d.cdf(v), d.entropy()


@case("normal_tiny_scale", np.array([1e-5, 1e-30], f32))
def _(lib, s):
    d = _d(lib).Normal(1.0, s)
    v = lib.tensor([1.0, 1.0 + 1e-5])
    return d.log_prob(v), d.cdf(v), d.entropy(), d.icdf(lib.tensor([0.5, 0.975]))


@case("lognormal_laplace_tiny_scale", np.array([1e-5, 1e-5], f32))
def _(lib, s):
    D = _d(lib)
    v = lib.tensor([1.0, 2.0])
    return D.LogNormal(lib.tensor([0.0, 1.0]), s).log_prob(v), D.Laplace(1.0, s).log_prob(v)


@case("von_mises_large_concentration", np.array([10.0, 1e3, 1e5], f32))
def _(lib, c):
    d = _d(lib).VonMises(0.5, c)
    v = lib.tensor([0.5, 0.6, 0.5001])
    return d.log_prob(v), d.variance, d.entropy()


@case("von_mises_large_concentration_float64", np.array([10.0, 1e3, 1e5], f64))
def _(lib, c):
    d = _d(lib).VonMises(0.5, c)
    return d.log_prob(c * 0 + 0.5001), d.variance, d.entropy(), d.mean, d.mode


@case("dirichlet_edges", np.array([[0.5, 1.0, 2.0], [1.0, 1.0, 1.0]], f32))
def _(lib, c):
    d = _d(lib).Dirichlet(c)
    v = lib.tensor([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])
    return d.log_prob(v), d.entropy(), d.mode, d.variance


@case("relaxed_bernoulli_log_prob", np.array([0.3, 0.9], f32))
def _(lib, p):
    d = _d(lib).RelaxedBernoulli(lib.tensor(0.5), p)
    return d.log_prob(lib.tensor([0.2, 0.999])), d.temperature, d.probs, d.logits


@case("relaxed_one_hot_log_prob", np.array([[0.2, 0.3, 0.5]], f32))
def _(lib, p):
    d = _d(lib).RelaxedOneHotCategorical(lib.tensor(2.0), p)
    return d.log_prob(lib.tensor([[0.1, 0.6, 0.3], [0.3, 0.3, 0.4]])), d.probs, d.logits


@case("lkj_cholesky_log_prob", np.array([0.5, 1.0, 4.0], f32))
def _(lib, c):
    d = _d(lib).LKJCholesky(3, c)
    t = _d(lib).transforms.CorrCholeskyTransform()
    v = t(lib.tensor([[0.3, -0.8, 1.5], [0.0, 0.0, 0.0], [2.0, 1.0, -1.0]]))
    return d.log_prob(v), d.log_prob(lib.eye(3))


@case("wishart_log_prob_and_moments", np.array([[2.0, 0.3], [0.3, 1.0]], f32))
def _(lib, cov):
    d = _d(lib).Wishart(lib.tensor([2.5, 4.0]), covariance_matrix=cov)
    v = lib.tensor([[1.5, 0.2], [0.2, 0.8]])
    return d.log_prob(v), d.mean, d.variance, d.mode, d.entropy()


SCENARIOS.eager_only.update({"constant_moments_need_no_grad": "reads requires_grad"})
SCENARIOS.eager_only.update(
    dict.fromkeys(
        ("moments_Binomial", "moments_Multinomial", "binomial_total_count_zero"),
        "Binomial's and Multinomial's entropy enumerate the counts up to the largest one's "
        "value: data-dependent, as torch.compile's graph break",
    )
)
# -- the test ----------------------------------------------------------------------------------

VALIDATING = lambda name: False


@pytest.mark.usefixtures("validating")
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", SCENARIOS.names())
def test_matches_torch(torch, name, mode):
    check(torch, SCENARIOS, name, mode, validates=VALIDATING(name))
