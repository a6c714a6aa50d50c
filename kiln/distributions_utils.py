"""`kn.distributions.utils` (PyTorch's `torch.distributions.utils`: `broadcast_all`,
`probs_to_logits`, `logits_to_probs`, `clamp_probs`, `lazy_property`, `tril_matrix_to_vec`,
`vec_to_tril_matrix`, for writing one's own distributions), and the submodule names of
`torch.distributions` (`kn.distributions.normal`, `.kl`, `.utils`...), so that
`from kiln.distributions.normal import Normal` ports as its torch form does.

>>> import kiln as kn
>>> from kiln.distributions.utils import broadcast_all, probs_to_logits
>>> broadcast_all(kn.tensor([1.0, 2.0]), 0.5)[1], probs_to_logits(kn.tensor(0.5), True)
(tensor([0.5000, 0.5000]), tensor(0.))
"""

from __future__ import annotations

import numbers
import sys
import types

__all__ = [
    "broadcast_all", "clamp_probs", "lazy_property", "logits_to_probs", "probs_to_logits",
    "tril_matrix_to_vec", "vec_to_tril_matrix",
]  # fmt: skip


def _kn():
    import kiln

    return kiln


def broadcast_all(*values):
    """`values` (tensors and numbers) as tensors broadcast together; numbers take the dtype
    of the first tensor among them (the default float where there is none)."""
    kn = _kn()
    if not all(isinstance(v, (kn.Tensor, kn.Symbol, numbers.Number)) for v in values):
        raise ValueError("Input arguments must all be instances of numbers.Number, "
                         "kiln.Tensor or objects implementing __torch_function__.")  # fmt: skip
    like = next((v for v in values if isinstance(v, (kn.Tensor, kn.Symbol))), None)
    if like is None:
        return tuple(kn.tensor(float(v)) for v in values)
    tensors = [v if isinstance(v, (kn.Tensor, kn.Symbol))
               else kn.tensor(v, dtype=like.dtype, device=like.device) for v in values]  # fmt: skip
    return tuple(kn.broadcast_tensors(*tensors))


def clamp_probs(probs):
    """`probs` clamped into [eps, 1 - eps] of its dtype."""
    eps = _kn().finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def logits_to_probs(logits, is_binary=False):
    """sigmoid(logits) when `is_binary`, else their softmax over the last dim."""
    kn = _kn()
    return kn.sigmoid(logits) if is_binary else kn.softmax(logits, dim=-1)


def probs_to_logits(probs, is_binary=False):
    """The logits of `probs` (clamped first): log-odds when `is_binary`, else log-probs."""
    kn = _kn()
    clamped = clamp_probs(probs)
    return kn.log(clamped) - kn.log1p(-clamped) if is_binary else kn.log(clamped)


class lazy_property:  # noqa: N801  (PyTorch's name)
    """A property computed on first access (with grad enabled, as PyTorch's) and then
    stored on the instance."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        self.__doc__ = wrapped.__doc__

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return self
        from .eager.grad_mode import enable_grad

        with enable_grad():  # (PyTorch's: with grad even when first read under no_grad)
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


def tril_matrix_to_vec(mat, diag=0):
    """The lower triangle (below diagonal `diag`) of the last two dims, row by row."""
    from .distributions_bijections import _tril_to_vec

    n = mat.shape[-1]
    if diag < -n or diag >= n:
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    return _tril_to_vec(mat, diag)


def vec_to_tril_matrix(vec, diag=0):
    """The lower-triangular matrix (below diagonal `diag`) holding `vec` row by row."""
    from .distributions_bijections import _vec_to_tril

    return _vec_to_tril(vec, diag)


# torch.distributions' submodules and the names each defines
SUBMODULES = {
    "bernoulli": ["Bernoulli"], "beta": ["Beta"], "binomial": ["Binomial"],
    "categorical": ["Categorical"], "cauchy": ["Cauchy"], "chi2": ["Chi2"],
    "continuous_bernoulli": ["ContinuousBernoulli"], "dirichlet": ["Dirichlet"],
    "distribution": ["Distribution"], "exp_family": ["ExponentialFamily"],
    "exponential": ["Exponential"], "fishersnedecor": ["FisherSnedecor"], "gamma": ["Gamma"],
    "generalized_pareto": ["GeneralizedPareto"], "geometric": ["Geometric"],
    "gumbel": ["Gumbel"], "half_cauchy": ["HalfCauchy"], "half_normal": ["HalfNormal"],
    "independent": ["Independent"], "inverse_gamma": ["InverseGamma"],
    "kl": ["register_kl", "kl_divergence"], "kumaraswamy": ["Kumaraswamy"],
    "laplace": ["Laplace"], "lkj_cholesky": ["LKJCholesky"], "log_normal": ["LogNormal"],
    "logistic_normal": ["LogisticNormal"],
    "lowrank_multivariate_normal": ["LowRankMultivariateNormal"],
    "mixture_same_family": ["MixtureSameFamily"], "multinomial": ["Multinomial"],
    "multivariate_normal": ["MultivariateNormal"], "negative_binomial": ["NegativeBinomial"],
    "normal": ["Normal"],
    "one_hot_categorical": ["OneHotCategorical", "OneHotCategoricalStraightThrough"],
    "pareto": ["Pareto"], "poisson": ["Poisson"],
    "relaxed_bernoulli": ["LogitRelaxedBernoulli", "RelaxedBernoulli"],
    "relaxed_categorical": ["ExpRelaxedCategorical", "RelaxedOneHotCategorical"],
    "studentT": ["StudentT"], "transformed_distribution": ["TransformedDistribution"],
    "uniform": ["Uniform"], "von_mises": ["VonMises"], "weibull": ["Weibull"],
    "wishart": ["Wishart"],
}  # fmt: skip


def install_submodules(package):
    """`package.<name>` and `import <package>.<name>` for each of torch.distributions'
    submodule names (a module holding kiln's objects of its names), and `package.utils`."""
    utils = sys.modules[__name__]
    sys.modules[f"{package.__name__}.utils"] = utils
    package.utils = utils
    for name, members in SUBMODULES.items():
        module = types.ModuleType(f"{package.__name__}.{name}",
                                  f"torch.distributions.{name}'s names in kiln")  # fmt: skip
        for member in members:
            setattr(module, member, getattr(package, member))
        module.__all__ = list(members)
        sys.modules[module.__name__] = module
        setattr(package, name, module)
