"""PyTorch's distribution tests of KL divergences, transforms and constraints
(test/distributions/test_distributions.py's TestKL, test_transforms.py and
test_constraints.py) against torch 2.13 (the oracle): `kl_divergence` of every pair of a pool
of distributions, with edge parameters (probabilities 0 and 1, disjoint supports), the value
or NotImplementedError where torch has no rule; each transform's value, inverse,
log_abs_det_jacobian, domain/codomain, sign, shapes, caching and equality; each constraint's
check at the edges and its biject_to/transform_to; TransformedDistribution's shapes, support,
cdf/icdf through decreasing transforms. A few scenarios run under `kn.compile` too.
"""

import math

import numpy as np
import pytest
from port_common import to_numpy
from pt_distributions_common import check, validating  # noqa: F401  (the fixture)
from pt_oracle import MODES, Leaf, Scenarios

import kiln as kn

nan, inf = float("nan"), float("inf")
f32 = np.float32


def _kl_pool(lib, leaves=None):
    """The pool, its parameters leaves that require grad (appended to `leaves`) if given."""
    D = lib.distributions

    def t(v):
        if leaves is None:
            return lib.tensor(v, dtype=lib.float64)
        leaves.append(lib.tensor(v, dtype=lib.float64, requires_grad=True))
        return leaves[-1]

    loc, scale = t([0.0, 1.0, -1.0]), t([1.0, 2.0, 0.5])
    pos, pos2 = t([2.0, 0.5, 1.0]), t([3.0, 0.7, 1.0])
    probs = t([[0.3, 0.7], [0.0, 1.0], [1.0, 0.0]])
    return {
        "Bernoulli": D.Bernoulli(t([0.3, 0.0, 1.0])),
        "Binomial": D.Binomial(t([4.0, 4.0, 4.0]), t([0.3, 0.0, 1.0])),
        "Binomial5": D.Binomial(t([5.0, 5.0, 5.0]), t([0.3, 0.2, 0.7])),
        "Categorical": D.Categorical(probs),
        "OneHotCategorical": D.OneHotCategorical(probs),
        "Geometric": D.Geometric(t([0.3, 0.5, 1.0])),
        "Poisson": D.Poisson(t([0.5, 0.0, 3.0])),
        "Normal": D.Normal(loc, scale),
        "Uniform": D.Uniform(t([0.1, 0.2, -1.0]), t([0.9, 3.0, 2.0])),
        "Exponential": D.Exponential(pos),
        "Gamma": D.Gamma(pos, t([3.0, 1.0, 2.0])),
        "Beta": D.Beta(pos, pos2),
        "Laplace": D.Laplace(loc, scale),
        "Gumbel": D.Gumbel(loc, scale),
        "Pareto": D.Pareto(t([1.0, 0.5, 2.0]), t([2.5, 3.0, 1.5])),
        "LogNormal": D.LogNormal(loc, scale),
        "HalfNormal": D.HalfNormal(scale),
        "HalfCauchy": D.HalfCauchy(scale),
        "Cauchy": D.Cauchy(loc, scale),
        "Chi2": D.Chi2(t([1.0, 2.0, 3.0])),
        "StudentT": D.StudentT(t([1.0, 2.0, 3.0])),
        "ContinuousBernoulli": D.ContinuousBernoulli(t([0.3, 0.5, 0.8])),
        "Dirichlet": D.Dirichlet(t([[0.3, 0.7], [1.0, 1.0], [2.0, 3.0]])),
        "MultivariateNormal": D.MultivariateNormal(t([[0.0, 1.0]] * 3), t([[2.0, 0.3], [0.3, 1]])),
        "LowRankMultivariateNormal": D.LowRankMultivariateNormal(
            t([[0.0, 1.0]] * 3), t([[1.0], [0.5]]), t([1.0, 2.0])
        ),
        "Independent1": D.Independent(D.Normal(t([[0.0, 1.0]] * 3), t([1.0, 2.0])), 1),
        "Independent0": D.Independent(D.Normal(t([[0.0, 1.0]] * 3), t([1.0, 2.0])), 0),
        "Weibull": D.Weibull(t([1.0, 2.0, 0.5]), pos),
        "Kumaraswamy": D.Kumaraswamy(pos, pos2),
        "InverseGamma": D.InverseGamma(pos, t([3.0, 1.0, 2.0])),
        "FisherSnedecor": D.FisherSnedecor(t([2.0, 5.0, 1.0]), t([3.0, 1.0, 2.0])),
        "VonMises": D.VonMises(loc, scale),
        "NegativeBinomial": D.NegativeBinomial(t([3.0, 3.0, 3.0]), t([0.3, 0.5, 0.7])),
        "Multinomial": D.Multinomial(3, probs),
        "LogitNormal": D.TransformedDistribution(
            D.Normal(loc, scale), [D.transforms.SigmoidTransform()]
        ),
        "MixtureSameFamily": D.MixtureSameFamily(
            D.Categorical(t([[0.3, 0.7]] * 3)), D.Normal(t([[0.0, 1.0]] * 3), t(1.0))
        ),
        "RelaxedBernoulli": D.RelaxedBernoulli(t(0.5), t([0.3, 0.5, 0.8])),
        "GeneralizedPareto": D.GeneralizedPareto(loc, scale, t([0.1, 0.2, 0.3])),
        "LogisticNormal": D.LogisticNormal(t([[0.0]] * 3), t([[1.0]] * 3)),
    }


KL_NAMES = list(_kl_pool(kn))


def _outcome(fn):
    try:
        return fn()
    except Exception as error:  # noqa: BLE001 -- the exception is the result compared
        return error


@pytest.mark.usefixtures("validating")
@pytest.mark.parametrize("p", KL_NAMES)
def test_kl_of_every_pair_matches_torch(torch, p):
    """KL(p || q) for every q of the pool (PyTorch's TestKL.test_kl_monte_carlo's pairs,
    checked against its formulas instead): the value (inf for disjoint supports, 0 between
    equal point masses) or NotImplementedError where torch has no rule, and the gradients
    with respect to every parameter of both (float64)."""
    for lib in (torch, kn):
        lib.distributions.Distribution.set_default_validate_args(False)
    tl, kl = [], []
    tp, kp = _kl_pool(torch, tl), _kl_pool(kn, kl)
    for q in KL_NAMES:
        t = _outcome(lambda: torch.distributions.kl_divergence(tp[p], tp[q]))
        k = _outcome(lambda: kn.distributions.kl_divergence(kp[p], kp[q]))
        if isinstance(t, Exception):
            assert isinstance(k, type(t)), (q, t, k)
            continue
        assert not isinstance(k, Exception), (q, k)
        assert tuple(k.shape) == tuple(t.shape) and str(k.dtype)[5:] == str(t.dtype)[6:], q
        np.testing.assert_allclose(
            to_numpy(k), to_numpy(t), rtol=1e-6, atol=1e-9, equal_nan=True, err_msg=q
        )
        if not t.requires_grad:  # (a constant: disjoint supports)
            continue
        tg = torch.autograd.grad(t.sum(), tl, allow_unused=True, retain_graph=True)
        kg = kn.autograd.grad(k.sum(), kl, allow_unused=True, retain_graph=True)
        for leaf, a, b in zip(tl, kg, tg):
            a = np.zeros(leaf.shape) if a is None else to_numpy(a)
            b = np.zeros(leaf.shape) if b is None else b.numpy()
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-9, equal_nan=True, err_msg=q)


SCENARIOS = Scenarios()
case = SCENARIOS.case


def _d(lib):
    return lib.distributions


# -- KL edge cases, shapes and compiled --------------------------------------------------------


@case("kl_point_masses", np.array([0.0, 1.0, 0.0, 1.0], f32), np.array([0.0, 1.0, 1.0, 0.0], f32))
def _(lib, p, q):
    D = _d(lib)
    pc, qc = lib.stack([p, 1 - p], -1), lib.stack([q, 1 - q], -1)
    return (D.kl_divergence(D.Bernoulli(p), D.Bernoulli(q)),
            D.kl_divergence(D.Categorical(pc), D.Categorical(qc)),
            D.kl_divergence(D.OneHotCategorical(pc), D.OneHotCategorical(qc)),
            D.kl_divergence(D.Geometric(p.clamp(0.1)), D.Geometric(q.clamp(0.1))))  # fmt: skip


@case("kl_binomial_point_masses", np.array([0.0, 1.0, 0.0, 1.0], f32),
      np.array([0.0, 1.0, 1.0, 0.0], f32))  # fmt: skip
def _(lib, p, q):
    D = _d(lib)
    return D.kl_divergence(D.Binomial(3, p), D.Binomial(3, q))


@case("kl_broadcasts_batch_shapes", np.array([[0.0], [1.0]], f32), np.array([1.0, 2.0, 3.0], f32))
def _(lib, loc, scale):
    D = _d(lib)
    return (D.kl_divergence(D.Normal(loc, 1.0), D.Normal(0.0, scale)),
            D.kl_divergence(D.Gamma(scale, 1.0), D.Gamma(loc + 1, 2.0)),
            D.kl_divergence(D.Uniform(loc, loc + 1), D.Normal(0.0, scale)))  # fmt: skip


@case("kl_of_expanded", np.array([0.5, 2.0], f32))
def _(lib, r):
    D = _d(lib)
    return D.kl_divergence(D.Exponential(r).expand((3, 2)), D.Exponential(r.flip(0)))


@case("kl_independent_mismatched_dims", np.zeros((2, 3), f32))
def _(lib, x):
    D = _d(lib)
    return D.kl_divergence(D.Independent(D.Normal(x, 1.0), 1), D.Independent(D.Normal(x, 1.0), 2))


@case("kl_transformed_mismatched_transforms", np.zeros(2, f32))
def _(lib, x):
    D = _d(lib)
    T = D.transforms
    p = D.TransformedDistribution(D.Normal(x, 1.0), [T.ExpTransform()])
    q = D.TransformedDistribution(D.Normal(x, 1.0), [T.SigmoidTransform()])
    return D.kl_divergence(p, q)


@case("kl_transformed_same_transforms", np.array([0.0, 1.0], f32))
def _(lib, x):
    D = _d(lib)
    T = D.transforms
    p = D.TransformedDistribution(D.Normal(x, 1.0), [T.AffineTransform(1.0, 2.0)])
    q = D.TransformedDistribution(D.Normal(x.flip(0), 2.0), [T.AffineTransform(1.0, 2.0)])
    return D.kl_divergence(p, q)


@case("kl_binomial_different_counts", np.array([0.3, 0.5], f32))
def _(lib, p):
    D = _d(lib)
    return D.kl_divergence(D.Binomial(3, p), D.Binomial(4, p))


@case("kl_lowrank_event_mismatch", np.zeros(2, f32))
def _(lib, x):
    D = _d(lib)
    p = D.LowRankMultivariateNormal(x, lib.ones(2, 1), lib.ones(2))
    q = D.LowRankMultivariateNormal(lib.zeros(3), lib.ones(3, 1), lib.ones(3))
    return D.kl_divergence(p, q)


@case("kl_gradients", Leaf.of(np.array([0.5, 2.0], f32)), np.array([1.5, 0.7], f32))
def _(lib, a, b):
    D = _d(lib)
    kls = [
        D.kl_divergence(D.Gamma(a, 1.0), D.Gamma(b, 2.0)),
        D.kl_divergence(D.Beta(a, b), D.Beta(b, a)),
        D.kl_divergence(D.Normal(a, b), D.Laplace(b, a)),
        D.kl_divergence(D.Dirichlet(lib.stack([a, b], -1)), D.Dirichlet(lib.stack([b, b], -1))),
    ]
    return kls, lib.autograd.grad(sum(k.sum() for k in kls), [a])  # fmt: skip


# -- TransformedDistribution -------------------------------------------------------------------


@case("transformed_decreasing_affine", np.array([0.0, 1.0], f32), np.array([1.0, 3.0], f32))
def _(lib, lo, hi):
    D = _d(lib)
    T = D.transforms
    d = D.TransformedDistribution(D.Uniform(lo, hi), [T.AffineTransform(1.0, -2.0)])
    v = lib.tensor([-1.0, -2.5])
    return (d.cdf(v), d.icdf(lib.tensor([0.2, 0.7])), d.log_prob(v), d.batch_shape,
            d.event_shape, d.rsample((3,)).shape, d.has_rsample)  # fmt: skip


@case("transformed_composed_sign", np.array([0.5, 1.0], f32))
def _(lib, x):
    D = _d(lib)
    T = D.transforms
    ts = [T.AffineTransform(0.0, -1.0), T.ExpTransform(), T.AffineTransform(2.0, -3.0)]
    d = D.TransformedDistribution(D.Normal(x, 1.0), ts)
    v = lib.tensor([0.5, -1.0])
    return d.cdf(v), d.icdf(lib.tensor([0.1, 0.9])), d.log_prob(v)


@case("transformed_event_dims", np.zeros((3, 2), f32))
def _(lib, x):
    D = _d(lib)
    T = D.transforms
    out = []
    for ts in ([T.StickBreakingTransform()], [T.ReshapeTransform((2,), (1, 2))],
               [T.IndependentTransform(T.ExpTransform(), 1)], [T.SoftmaxTransform()],
               [T.ExpTransform(), T.AffineTransform(0.0, lib.ones(4, 1, 1))],
               [T.CorrCholeskyTransform()]):  # fmt: skip
        d = D.TransformedDistribution(D.Normal(x, 1.0), ts)
        v = d.sample((2,))
        out += [d.batch_shape, d.event_shape, v.shape, d.log_prob(v).shape, d.support.event_dim]
        out.append(d.expand((5, *d.batch_shape)).batch_shape)
    return out


@case("transformed_has_no_mean", np.zeros(2, f32))
def _(lib, x):
    D = _d(lib)
    return D.TransformedDistribution(D.Normal(x, 1.0), [D.transforms.ExpTransform()]).mean


@case("transformed_values", np.array([0.3, -0.8], f32))
def _(lib, x):
    D = _d(lib)
    T = D.transforms
    d = D.TransformedDistribution(D.Normal(x, lib.tensor([1.0, 2.0])), T.SigmoidTransform())
    v = lib.tensor([0.3, 0.999])
    return d.log_prob(v), d.cdf(v), d.icdf(v), repr(d.support), d.transforms[0].sign


@case("transformed_cdf_outside_support", np.array([0.3, -0.8], f32))
def _(lib, x):
    D = _d(lib)
    d = D.TransformedDistribution(D.Normal(x, 1.0), [D.transforms.ExpTransform()])
    return d.cdf(lib.tensor([0.0, 0.5])), d.log_prob(lib.tensor([0.0, 0.5]))


# -- transforms' own behaviours (test_transforms.py) -------------------------------------------


@case("transform_cache_sizes", np.array([0.3, -0.8], f32))
def _(lib, x):
    T = _d(lib).transforms
    out = []
    for size in (0, 1):
        t = T.ExpTransform(cache_size=size)
        y = t(x)
        out += [t(x) is y, t.inv(y) is x, t.with_cache(size) is t, t.inv.with_cache(size) is t.inv,
                t.with_cache(1 - size)._cache_size]  # fmt: skip
    return out


@case("transform_bad_cache_size")
def _(lib):
    return _d(lib).transforms.ExpTransform(cache_size=2)


@case("transform_equality")
def _(lib):
    T = _d(lib).transforms
    t = lib.tensor
    return (T.ExpTransform() == T.ExpTransform(), T.ExpTransform() != T.SigmoidTransform(),
            T.AffineTransform(1.0, 2.0) == T.AffineTransform(1.0, 2.0),
            T.AffineTransform(t([1.0]), 2.0) == T.AffineTransform(t([1.0]), 2.0),
            T.PowerTransform(t(2.0)) == T.PowerTransform(t(2.0)),
            T.PowerTransform(t(2.0)) == T.PowerTransform(t(3.0)),
            T.ExpTransform().inv == T.ExpTransform().inv,
            T.ComposeTransform([T.ExpTransform()]) == T.ComposeTransform([T.ExpTransform()]),
            T.CorrCholeskyTransform() == T.CorrCholeskyTransform(),
            T.IndependentTransform(T.ExpTransform(), 1)
            == T.IndependentTransform(T.ExpTransform(), 1),
            T.ReshapeTransform((2,), (1, 2)) == T.ReshapeTransform((2,), (1, 2)),
            T.identity_transform == T.ComposeTransform([]))  # fmt: skip


@case("compose_transform_shapes", np.arange(6, dtype=f32).reshape(3, 2) / 6)
def _(lib, x):
    T = _d(lib).transforms
    t = T.ComposeTransform([T.AffineTransform(0.0, 2.0), T.StickBreakingTransform(),
                            T.IndependentTransform(T.SigmoidTransform(), 1)])  # fmt: skip
    y = t(x)
    return (y, t.log_abs_det_jacobian(x, y), t.domain.event_dim, t.codomain.event_dim,
            t.event_dim, t.forward_shape((4, 3, 2)), t.inverse_shape((4, 3, 3)), t.inv(y),
            t.inv.log_abs_det_jacobian(y, x), t.bijective)  # fmt: skip


@case("affine_transform_event_dim_jacobian", np.arange(6, dtype=f32).reshape(3, 2) / 6)
def _(lib, x):
    T = _d(lib).transforms
    out = []
    for scale, n in ((2.0, 0), (lib.tensor([2.0, -3.0]), 1), (lib.tensor([[2.0], [0.5], [1]]), 2)):
        t = T.AffineTransform(1.0, scale, event_dim=n)
        y = t(x)
        out += [y, t.log_abs_det_jacobian(x, y), t.sign if n == 0 else None, t.event_dim]
    return out


@case("cat_and_stack_transforms", np.arange(6, dtype=f32).reshape(3, 2) / 6)
def _(lib, x):
    T = _d(lib).transforms
    cat = T.CatTransform([T.ExpTransform(), T.AffineTransform(1.0, 2.0)], dim=0, lengths=[1, 2])
    stack = T.StackTransform([T.ExpTransform(), T.TanhTransform()], dim=1)
    out = []
    for t in (cat, stack):
        y = t(x)
        out += [y, t.inv(y), t.log_abs_det_jacobian(x, y), t.bijective, t.event_dim,
                t.domain.event_dim, t.codomain.event_dim]  # fmt: skip
    return out


@case("transforms_at_extremes", np.array([-100.0, -30.0, 0.0, 30.0, 100.0], f32))
def _(lib, x):
    T = _d(lib).transforms
    out = []
    for t in (T.SigmoidTransform(), T.TanhTransform(), T.SoftplusTransform(), T.ExpTransform()):
        y = t(x)
        out += [y, t.log_abs_det_jacobian(x, y), t.inv(y)]
    return out


@case("stick_breaking_round_trip", np.array([[0.3, -0.8, 2.0], [-50.0, 50.0, 0.0]], f32))
def _(lib, x):
    T = _d(lib).transforms
    t = T.StickBreakingTransform()
    y = t(x)
    return y, t.inv(y), t.log_abs_det_jacobian(x, y), t.forward_shape((2, 3)), y.sum(-1)


@case("corr_cholesky_round_trip", np.array([[0.3, -0.8, 1.5, 0.2, -0.1, 0.7]], f32))
def _(lib, x):
    T = _d(lib).transforms
    t = T.CorrCholeskyTransform()
    y = t(x)
    return (
        y,
        t.inv(y),
        t.log_abs_det_jacobian(x, y),
        t.forward_shape((2, 6)),
        t.inverse_shape((2, 4, 4)),
    )


@case("corr_cholesky_bad_size")
def _(lib):
    return _d(lib).transforms.CorrCholeskyTransform().forward_shape((2, 5))


@case("reshape_transform_mismatch")
def _(lib):
    return _d(lib).transforms.ReshapeTransform((2, 3), (5,))


CAT_STACK_ERRORS = {
    # (kiln's CatTransform cut a longer input to its lengths silently, and took any list)
    "cat_not_transforms": lambda T, lib: T.CatTransform([1]),
    "stack_not_transforms": lambda T, lib: T.StackTransform([1]),
    "cat_lengths_mismatch": lambda T, lib: T.CatTransform([T.ExpTransform()], 0, [1, 2]),
    "cat_input_too_long": lambda T, lib: T.CatTransform([T.ExpTransform()] * 2, 0)(lib.zeros(3)),
    "cat_dim_out_of_range": lambda T, lib: T.CatTransform([T.ExpTransform()], 2)(lib.zeros(1)),
    "cat_inverse_too_long": lambda T, lib: T.CatTransform([T.ExpTransform()] * 2).inv(lib.ones(3)),
    "stack_input_too_long": lambda T, lib: T.StackTransform([T.ExpTransform()] * 2)(lib.zeros(3)),
    "stack_dim_out_of_range": lambda T, lib: T.StackTransform([T.ExpTransform()], 2)(lib.zeros(1)),
    "stack_jacobian_too_long": lambda T, lib: T.StackTransform(
        [T.ExpTransform()] * 2
    ).log_abs_det_jacobian(lib.zeros(3), lib.zeros(3)),
}


def _register_cat_stack(name, make):
    @case(name)
    def _(lib):
        return make(_d(lib).transforms, lib)


for _name, _make in CAT_STACK_ERRORS.items():
    _register_cat_stack(_name, _make)


@case("transform_to_and_biject_to_with_tensor_bounds", np.array([0.3, -0.8, 20.0], f32))
def _(lib, x):
    D = _d(lib)
    C = D.constraints
    lo, hi = lib.tensor([0.0, -1.0, 1.0]), lib.tensor([1.0, 2.0, 1.5])
    out = []
    for c in (C.interval(lo, hi), C.greater_than(lo), C.less_than(hi), C.greater_than_eq(hi),
              C.half_open_interval(lo, hi), C.positive, C.unit_interval):  # fmt: skip
        for reg in (D.biject_to, D.transform_to):
            t = reg(c)
            y = t(x)
            out += [y, t.log_abs_det_jacobian(x, y), c.check(y)]
    return out


@case("biject_to_discrete_raises")
def _(lib):
    return _d(lib).biject_to(_d(lib).constraints.nonnegative_integer)


@case("transform_to_simplex_is_softmax", np.array([[0.3, -0.8, 2.0]], f32))
def _(lib, x):
    D = _d(lib)
    t, b = D.transform_to(D.constraints.simplex), D.biject_to(D.constraints.simplex)
    return type(t).__name__, type(b).__name__, t(x), b(x), b.inv(b(x))


@case("constraint_checks_at_edges", np.array([[0.0, 1.0, 2.0], [-1.0, nan, inf]], f32))
def _(lib, v):
    C = _d(lib).constraints
    cs = (C.real, C.positive, C.nonnegative, C.greater_than(1.0), C.greater_than_eq(1.0),
          C.less_than(1.0), C.unit_interval, C.interval(0.0, 1.0), C.half_open_interval(0.0, 1.0),
          C.open_interval(0.0, 2.0), C.integer_interval(0, 1), C.nonnegative_integer,
          C.positive_integer, C.boolean, C.simplex, C.real_vector, C.one_hot, C.multinomial(3),
          C.independent(C.positive, 1), C.cat([C.positive, C.real], 1, [1, 2]),
          C.stack([C.positive, C.real, C.positive], 1))  # fmt: skip
    return [c.check(v) for c in cs] + [(c.event_dim, c.is_discrete) for c in cs]


MATRICES = np.array(
    [[[1, 0], [0.5, 1]], [[2, 1], [1, 2]], [[1, 0], [0.6, 0.8]], [[1, 2], [2, 1]]], f32
)


@case("constraint_checks_of_matrices", MATRICES)
def _(lib, m):
    C = _d(lib).constraints
    cs = (C.lower_triangular, C.lower_cholesky, C.corr_cholesky, C.positive_definite,
          C.positive_semidefinite, C.square, C.symmetric, C.independent(C.real, 2))  # fmt: skip
    return [c.check(m) for c in cs] + [c.event_dim for c in cs]


@case("dependent_constraints")
def _(lib):
    D = _d(lib)
    C = D.constraints
    dep = C.dependent(is_discrete=True, event_dim=1)
    return (C.is_dependent(D.Binomial(3, 0.5).support), C.is_dependent(C.real),
            dep.is_discrete, dep.event_dim,
            C.is_dependent(D.Uniform(0.0, 1.0).arg_constraints["low"]),
            repr(D.Binomial(3, 0.5).support).replace("kiln", "torch"))  # fmt: skip


@case("uniform_arg_constraints_are_each_bound", np.array([0.0, 1.0], f32))
def _(lib, low):
    # (kiln's were `dependent`, and it refused low >= high by a check of its own)
    c = _d(lib).Uniform(low, low + 2).arg_constraints
    return sorted(c), c["low"].upper_bound, c["high"].lower_bound, c["low"].check(low + 1)


@case("dependent_constraint_check_raises")
def _(lib):
    return _d(lib).constraints.dependent.check(lib.zeros(2))


SCENARIOS.eager_only.update(
    {
        "transform_cache_sizes": "checks object identity of cached values",
        "transform_equality": "compares transforms, nothing to compile",
        "dependent_constraints": "reads constraint flags",
        "transform_to_simplex_is_softmax": "returns type names",
        **dict.fromkeys(
            ("kl_binomial_point_masses", "kl_binomial_different_counts"),
            "Binomial's KL compares the total counts (NotImplementedError where "
            "q's exceeds p's): data-dependent, as torch.compile's graph break",
        ),
    }
)


@pytest.mark.usefixtures("validating")
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", SCENARIOS.names())
def test_matches_torch(torch, name, mode):
    check(torch, SCENARIOS, name, mode, validates=False)


def test_kl_divergence_compiled_matches_eager(torch):
    D = kn.distributions
    a, b = kn.tensor([0.5, 2.0]), kn.tensor([1.5, 0.7])

    def kls(a, b):
        return (D.kl_divergence(D.Normal(a, b), D.Normal(b, a)),
                D.kl_divergence(D.Gamma(a, b), D.Exponential(b)),
                D.kl_divergence(D.Beta(a, b), D.Uniform(0.0, 1.0)))  # fmt: skip

    for got, want in zip(kn.compile(kls)(a, b), kls(a, b)):
        np.testing.assert_allclose(to_numpy(got), to_numpy(want), rtol=1e-6)
    assert math.isinf(float(D.kl_divergence(D.Uniform(0.0, 2.0), D.Beta(a, b))[0]))


def test_ambiguous_registered_kl_warns_as_torch(torch):
    """PyTorch's kl_divergence dispatch among registered base classes: the most specific p's rule,
    with RuntimeWarning where the most specific q's rule differs (kiln took it silently)."""
    import warnings

    results = []
    for lib in (torch, kn):
        D = lib.distributions

        class A(D.Normal):
            pass

        class B(D.Normal):
            pass

        class A2(A):
            pass

        D.register_kl(A, D.Normal)(lambda p, q: lib.tensor(1.0))
        D.register_kl(D.Normal, B)(lambda p, q: lib.tensor(2.0))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            ambiguous = D.kl_divergence(A2(0.0, 1.0), B(0.0, 1.0)).item()
            plain = D.kl_divergence(A2(0.0, 1.0), D.Normal(0.0, 1.0)).item()
        results.append((ambiguous, plain, [w.category for w in caught]))
    assert results[0] == results[1] == (1.0, 1.0, [RuntimeWarning])
