"""PyTorch's TestValidation (test_distributions.py) as scenarios run on torch and kiln
(pt_oracle.py): ValueError for parameters outside their constraints and for values outside
the support or of the wrong shape, on by default in both; `validate_args=False` lets them
pass. Validation reads eager values: these run eagerly only (a graph's symbols pass
unchecked).

Expected values: torch 2.13 (the oracle).
"""

import numpy as np
import pytest
from pt_distributions_common import check, validating  # noqa: F401  (the fixture)
from pt_oracle import MODES, Scenarios

nan, inf = float("nan"), float("inf")
f32, f64 = np.float32, np.float64

SCENARIOS = Scenarios()
case = SCENARIOS.case


def _d(lib):
    return lib.distributions


# -- argument validation (PyTorch's TestValidation), on by default in both -------------------


INVALID_PARAMS = {
    "normal_nan_loc": lambda D, t: D.Normal(t(nan), t(1.0)),
    "normal_zero_scale": lambda D, t: D.Normal(t(0.0), t(0.0)),
    "uniform_equal_bounds": lambda D, t: D.Uniform(t(1.0), t(1.0)),
    "bernoulli_both": lambda D, t: D.Bernoulli(t(0.5), t(0.0)),
    "bernoulli_neither": lambda D, t: D.Bernoulli(),
    "categorical_both": lambda D, t: D.Categorical(t([0.5, 0.5]), t([0.0, 0.0])),
    "categorical_scalar": lambda D, t: D.Categorical(t(0.5)),
    "categorical_nan_logits": lambda D, t: D.Categorical(logits=t([nan, 0.0])),
    "binomial_negative_count": lambda D, t: D.Binomial(t(-1.0), t(0.5)),
    "binomial_probs_above_one": lambda D, t: D.Binomial(t(3.0), t(1.5)),
    "negative_binomial_probs_one": lambda D, t: D.NegativeBinomial(t(3.0), t(1.0)),
    "negative_binomial_negative_count": lambda D, t: D.NegativeBinomial(t(-1.0), t(0.5)),
    "geometric_probs_above_one": lambda D, t: D.Geometric(t(1.5)),
    "multinomial_negative_probs": lambda D, t: D.Multinomial(3, t([-0.5, 1.5])),
    "multinomial_scalar": lambda D, t: D.Multinomial(3, t(0.5)),
    "one_hot_negative_probs": lambda D, t: D.OneHotCategorical(t([-0.5, 1.5])),
    "dirichlet_scalar": lambda D, t: D.Dirichlet(t(1.0)),
    "laplace_negative_scale": lambda D, t: D.Laplace(t(0.0), t(-1.0)),
    "cauchy_zero_scale": lambda D, t: D.Cauchy(t(0.0), t(0.0)),
    "gumbel_negative_scale": lambda D, t: D.Gumbel(t(0.0), t(-1.0)),
    "halfnormal_negative_scale": lambda D, t: D.HalfNormal(t(-1.0)),
    "halfcauchy_zero_scale": lambda D, t: D.HalfCauchy(t(0.0)),
    "lognormal_zero_scale": lambda D, t: D.LogNormal(t(0.0), t(0.0)),
    "weibull_zero_concentration": lambda D, t: D.Weibull(t(1.0), t(0.0)),
    "kumaraswamy_negative": lambda D, t: D.Kumaraswamy(t(-1.0), t(1.0)),
    "fisher_snedecor_zero": lambda D, t: D.FisherSnedecor(t(0.0), t(1.0)),
    "inverse_gamma_negative_rate": lambda D, t: D.InverseGamma(t(1.0), t(-1.0)),
    "von_mises_negative_concentration": lambda D, t: D.VonMises(t(0.0), t(-1.0)),
    "poisson_nan_rate": lambda D, t: D.Poisson(t(nan)),
    "exponential_inf_rate": lambda D, t: D.Exponential(t(-inf)),
    "student_t_zero_scale": lambda D, t: D.StudentT(t(2.0), t(0.0), t(0.0)),
    "generalized_pareto_zero_scale": lambda D, t: D.GeneralizedPareto(t(0.0), t(0.0), t(0.5)),
    "mvn_no_matrix": lambda D, t: D.MultivariateNormal(t([0.0, 0.0])),
    "mvn_two_matrices": lambda D, t: D.MultivariateNormal(t([0.0, 0.0]), t([[1.0, 0], [0, 1]]),
                                                          scale_tril=t([[1.0, 0], [0, 1]])),
    "mvn_scalar_loc": lambda D, t: D.MultivariateNormal(t(0.0), t([[1.0]])),
    "mvn_scale_tril_upper": lambda D, t: D.MultivariateNormal(t([0.0, 0.0]),
                                                              scale_tril=t([[1.0, 1], [0, 1]])),
    "wishart_df_too_small": lambda D, t: D.Wishart(t(0.5), t([[1.0, 0], [0, 1]])),
    "wishart_not_pd": lambda D, t: D.Wishart(t(3.0), t([[1.0, 2.0], [2.0, 1.0]])),
    "lkj_dim_one": lambda D, t: D.LKJCholesky(1, t(1.0)),
    "lkj_zero_concentration": lambda D, t: D.LKJCholesky(2, t(0.0)),
}  # fmt: skip

INVALID_VALUES = {
    "normal_value_shape": lambda D, t: D.Normal(t([0.0, 1.0]), t(1.0)).log_prob(t([[0.0]] * 3)),
    "mvn_value_event_shape": lambda D, t: D.MultivariateNormal(t([0.0, 0.0]), t([[1.0, 0],
                                                               [0, 1]])).log_prob(t([0.0] * 3)),
    "categorical_float_value": lambda D, t: D.Categorical(t([0.5, 0.5])).log_prob(t(0.5)),
    "categorical_negative_value": lambda D, t: D.Categorical(t([0.5, 0.5])).log_prob(t(-1)),
    "binomial_above_count": lambda D, t: D.Binomial(3, t(0.5)).log_prob(t(4.0)),
    "binomial_fraction": lambda D, t: D.Binomial(3, t(0.5)).log_prob(t(1.5)),
    "geometric_negative": lambda D, t: D.Geometric(t(0.5)).log_prob(t(-1.0)),
    "negative_binomial_fraction": lambda D, t: D.NegativeBinomial(2.0, t(0.5)).log_prob(t(0.5)),
    "multinomial_wrong_total": lambda D, t: D.Multinomial(3, t([0.5, 0.5])).log_prob(t([1.0, 1])),
    "one_hot_not_one_hot": lambda D, t: D.OneHotCategorical(t([0.5, 0.5])).log_prob(t([1.0, 1])),
    "gamma_zero": lambda D, t: D.Gamma(t(2.0), t(1.0)).log_prob(t(0.0)),
    "gamma_negative": lambda D, t: D.Gamma(t(2.0), t(1.0)).log_prob(t(-1.0)),
    "chi2_negative": lambda D, t: D.Chi2(t(2.0)).log_prob(t(-1.0)),
    "beta_zero": lambda D, t: D.Beta(t(2.0), t(1.0)).log_prob(t(0.0)),
    "weibull_zero": lambda D, t: D.Weibull(t(1.0), t(2.0)).log_prob(t(0.0)),
    "weibull_negative": lambda D, t: D.Weibull(t(1.0), t(2.0)).log_prob(t(-1.0)),
    "kumaraswamy_one": lambda D, t: D.Kumaraswamy(t(2.0), t(1.0)).log_prob(t(1.0)),
    "fisher_snedecor_zero_value": lambda D, t: D.FisherSnedecor(t(2.0), t(1.0)).log_prob(t(0.0)),
    "inverse_gamma_zero_value": lambda D, t: D.InverseGamma(t(2.0), t(1.0)).log_prob(t(0.0)),
    "uniform_upper_bound": lambda D, t: D.Uniform(t(0.0), t(1.0)).log_prob(t(1.0)),
    "uniform_lower_bound": lambda D, t: D.Uniform(t(0.0), t(1.0)).log_prob(t(0.0)),
    "pareto_below_scale": lambda D, t: D.Pareto(t(2.0), t(1.0)).log_prob(t(1.9)),
    "halfcauchy_negative": lambda D, t: D.HalfCauchy(t(1.0)).log_prob(t(-1.0)),
    "continuous_bernoulli_above_one": lambda D, t: D.ContinuousBernoulli(t(0.3)).log_prob(t(1.5)),
    "relaxed_bernoulli_one": lambda D, t: D.RelaxedBernoulli(t(0.5), t(0.3)).log_prob(t(1.0)),
    "dirichlet_boundary": lambda D, t: D.Dirichlet(t([1.0, 1.0])).log_prob(t([0.0, 1.0])),
    "lkj_not_cholesky": lambda D, t: D.LKJCholesky(2, t(1.0)).log_prob(t([[1.0, 0], [1, 1]])),
    "wishart_not_pd_value": lambda D, t: D.Wishart(t(3.0), t([[1.0, 0], [0, 1]])).log_prob(
        t([[1.0, 2.0], [2.0, 1.0]])),
    "von_mises_nan": lambda D, t: D.VonMises(t(0.0), t(1.0)).log_prob(t(nan)),
    "student_t_inf": lambda D, t: D.StudentT(t(2.0)).log_prob(t(inf)),
    "laplace_cdf_nan": lambda D, t: D.Laplace(t(0.0), t(1.0)).cdf(t(nan)),
    "exponential_cdf_negative": lambda D, t: D.Exponential(t(1.0)).cdf(t(-1.0)),
    "independent_event_shape": lambda D, t: D.Independent(D.Normal(t([0.0, 0.0]), t(1.0)), 1
                                                          ).log_prob(t([0.0] * 3)),
    "mixture_value_shape": lambda D, t: D.MixtureSameFamily(D.Categorical(t([0.5, 0.5])),
        D.Normal(t([0.0, 1.0]), t(1.0))).log_prob(t([[0.0, 1.0, 2.0]] * 2)),
}  # fmt: skip

NOT_TENSORS = {
    # (kiln's validation let numbers and lists through)
    "normal_log_prob_of_a_number": lambda D, t: D.Normal(t(0.0), t(1.0)).log_prob(0.5),
    "normal_cdf_of_a_number": lambda D, t: D.Normal(t(0.0), t(1.0)).cdf(0.5),
    "normal_log_prob_of_a_list": lambda D, t: D.Normal(t(0.0), t(1.0)).log_prob([0.5]),
    "categorical_log_prob_of_an_int": lambda D, t: D.Categorical(t([0.5, 0.5])).log_prob(1),
    "bernoulli_log_prob_of_a_number": lambda D, t: D.Bernoulli(t(0.3)).log_prob(1.0),
}  # fmt: skip

VALID = {
    # (torch clamps the probabilities before it validates them)
    "continuous_bernoulli_probs_above_one": lambda D, t: D.ContinuousBernoulli(t(1.5)).probs,
    "relaxed_bernoulli_zero_temperature": lambda D, t: D.RelaxedBernoulli(t(0.0), t(0.5))
    .temperature,
    "independent_negative_ndims": lambda D, t: D.Independent(D.Normal(t([0.0]), t(1.0)), -1)
    .event_shape,
    "normal_inf_value": lambda D, t: D.Normal(t(0.0), t(1.0)).log_prob(t(inf)),
    "exponential_zero": lambda D, t: D.Exponential(t(1.0)).log_prob(t(0.0)),
    "gamma_inf": lambda D, t: D.Gamma(t(1.0), t(1.0)).log_prob(t(inf)),
    "beta_inside": lambda D, t: D.Beta(t(1.0), t(1.0)).log_prob(t(0.5)),
    "bernoulli_probs_edges": lambda D, t: D.Bernoulli(t([0.0, 1.0])).log_prob(t([0.0, 1.0])),
    "categorical_zero_logits_row": lambda D, t: D.Categorical(logits=t([-inf, 0.0])).log_prob(
        t(1)),
    "halfnormal_zero": lambda D, t: D.HalfNormal(t(1.0)).log_prob(t(0.0)),
    "pareto_at_scale": lambda D, t: D.Pareto(t(2.0), t(1.0)).log_prob(t(2.0)),
    "geometric_probs_one": lambda D, t: D.Geometric(t(1.0)).log_prob(t(0.0)),
    "poisson_rate_zero": lambda D, t: D.Poisson(t(0.0)).log_prob(t(0.0)),
    "binomial_broadcast_value": lambda D, t: D.Binomial(3, t([0.5, 0.2])).log_prob(t([[1.0]])),
    "von_mises_outside_pi": lambda D, t: D.VonMises(t(0.0), t(1.0)).log_prob(t(10.0)),
    "lowrank_zero_factor": lambda D, t: D.LowRankMultivariateNormal(t([0.0]), t([[0.0]]),
                                                                    t([1.0])).log_prob(t([1.0])),
}  # fmt: skip


def _register_validation(name, make):
    @case(f"validate_{name}")
    def _(lib):
        return make(_d(lib), lib.tensor)


for _table in (INVALID_PARAMS, INVALID_VALUES, NOT_TENSORS, VALID):
    for _name, _make in _table.items():
        _register_validation(_name, _make)


@case("validate_lowrank_negative_diag")
def _(lib):
    # torch factors the capacitance matrix before it validates: linalg's error (a RuntimeError)
    try:
        _d(lib).LowRankMultivariateNormal(lib.zeros(1), lib.ones(1, 1), -lib.ones(1))
    except RuntimeError as error:
        return "linalg" in type(error).__name__.lower()


@case("numbers_pass_without_validation")
def _(lib):
    D = _d(lib)
    t = lib.tensor
    d = D.Normal(t(0.0), t(1.0), validate_args=False)
    return d.log_prob(0.5), d.cdf(0.5)


@case("validate_args_true_when_the_default_is_off")
def _(lib):
    # each instance keeps its own setting: through expand, Independent, TransformedDistribution
    # and MixtureSameFamily (validation of the value at log_prob)
    D = _d(lib)
    t = lib.tensor
    D.Distribution.set_default_validate_args(False)
    out = []
    makers = (
        lambda: D.Normal(t(0.0), t(-1.0), validate_args=True),
        lambda: D.Normal(t(0.0), t(1.0), validate_args=True).expand((2,)).log_prob(t([nan, 0])),
        lambda: D.Independent(D.Normal(t([0.0, 0]), t([1.0, 1]), validate_args=True), 1).log_prob(
            t([nan, 0.0])
        ),
        lambda: D.TransformedDistribution(
            D.Normal(t([0.0, 0]), t([1.0, 1])), [D.transforms.ExpTransform()], validate_args=True
        ).log_prob(t([-1.0, 1.0])),
        lambda: D.MixtureSameFamily(
            D.Categorical(t([1.0, 1.0])), D.Normal(t([0.0, 0]), t([1.0, 1])), validate_args=True
        ).log_prob(t(nan)),
        lambda: D.Normal(t(0.0), t(-1.0)).scale,
    )
    for make in makers:
        try:
            out.append(make())
        except ValueError:
            out.append("ValueError")
    return out


@case("validation_is_on_by_default")
def _(lib):
    D = _d(lib)
    return (D.Distribution._validate_args, D.Normal(0.0, 1.0)._validate_args,
            D.Normal(0.0, 1.0, validate_args=False)._validate_args)  # fmt: skip


@case("validate_args_false_lets_anything_pass")
def _(lib):
    D = _d(lib)
    t = lib.tensor
    return (D.Gamma(t(-1.0), t(1.0), validate_args=False).concentration,
            D.Beta(t(2.0), t(1.0), validate_args=False).log_prob(t(1.5)),
            D.Categorical(t([0.5, 0.5]), validate_args=False).probs,
            D.Poisson(t(2.0), validate_args=False).log_prob(t(-1.0)),
            D.Uniform(t(0.0), t(1.0), validate_args=False).log_prob(t(2.0)))  # fmt: skip


@case("set_default_validate_args_needs_a_bool")
def _(lib):
    return _d(lib).Distribution.set_default_validate_args(1)


VALIDATION_EAGER_ONLY = "validation reads eager values (a graph's symbols pass unchecked)"
SCENARIOS.eager_only.update(
    {
        f"validate_{n}": VALIDATION_EAGER_ONLY
        for n in {**INVALID_PARAMS, **INVALID_VALUES, **NOT_TENSORS}
    }
)
SCENARIOS.eager_only.update(
    {
        "validation_is_on_by_default": "reads flags, nothing to compile",
        "validate_lowrank_negative_diag": VALIDATION_EAGER_ONLY,
        "set_default_validate_args_needs_a_bool": "nothing to compile",
    }
)


# -- the test ----------------------------------------------------------------------------------

VALIDATING = lambda name: name.startswith(("validat", "set_default"))


@pytest.mark.usefixtures("validating")
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", SCENARIOS.names())
def test_matches_torch(torch, name, mode):
    check(torch, SCENARIOS, name, mode, validates=VALIDATING(name))
