"""Distributions over matrices from PyTorch's `torch.distributions`: `Wishart` (of positive
definite matrices, Bartlett's sampler) and `LKJCholesky` (Cholesky factors of correlation
matrices, the onion sampler), with PyTorch's parameters, constraints and formulas.

>>> import kiln as kn
>>> d = kn.distributions
>>> d.Wishart(kn.tensor(4.0), kn.eye(2)).log_prob(kn.eye(2))
tensor(-4.2242)
>>> d.LKJCholesky(3, kn.tensor(2.0)).log_prob(kn.eye(3))
tensor(-0.6155)
"""

from __future__ import annotations

import math
import warnings

from . import distributions_constraints as constraints
from .distributions import Distribution, ExponentialFamily, _kn, _tensor
from .distributions_extra import Chi2
from .distributions_more import Beta
from .eager.grad_mode import no_grad
from .errors import ArgumentError

__all__ = ["LKJCholesky", "Wishart"]

_LOG_2 = math.log(2)


def _mvdigamma(x, p):
    kn = _kn()
    steps = kn.arange(p, dtype=x.dtype, device=x.device) / 2
    return kn.digamma(x.unsqueeze(-1) - steps).sum(-1)


def _precision_to_scale_tril(matrix):
    kn = _kn()
    flipped = kn.linalg.cholesky(kn.flip(matrix, (-2, -1)))
    inverse = kn.flip(flipped, (-2, -1)).transpose(-2, -1)
    eye = kn.eye(matrix.shape[-1], dtype=matrix.dtype, device=matrix.device)
    return kn.linalg.solve_triangular(inverse, eye, upper=False)


class Wishart(ExponentialFamily):
    """The Wishart distribution of `df` degrees of freedom and scale given by exactly one of
    `covariance_matrix`, `precision_matrix` or `scale_tril`.

    >>> import kiln as kn
    >>> kn.distributions.Wishart(kn.tensor(5.0), kn.eye(2)).mean
    tensor([[5., 0.],
            [0., 5.]])
    """

    support = constraints.positive_definite
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def arg_constraints(self):
        return {
            "covariance_matrix": constraints.positive_definite,
            "precision_matrix": constraints.positive_definite,
            "scale_tril": constraints.lower_cholesky,
            "df": constraints.greater_than(self.event_shape[-1] - 1),
        }

    def __init__(self, df, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args=None):  # fmt: skip
        kn = _kn()
        given = [(n, m) for n, m in (("covariance_matrix", covariance_matrix),
                                     ("precision_matrix", precision_matrix),
                                     ("scale_tril", scale_tril)) if m is not None]  # fmt: skip
        if len(given) != 1:
            raise ArgumentError("Exactly one of covariance_matrix or precision_matrix or "
                                "scale_tril may be specified.")  # fmt: skip
        name, param = given[0][0], _tensor(given[0][1])
        if param.dim() < 2:
            raise ArgumentError("scale_tril must be at least two-dimensional, with optional "
                                "leading batch dimensions")  # fmt: skip
        if isinstance(df, (kn.Tensor, kn.Symbol)):
            batch_shape = kn.broadcast_shapes(param.shape[:-2], df.shape)
            self.df = df.expand(batch_shape)
        else:
            batch_shape = param.shape[:-2]
            self.df = kn.tensor(float(df), dtype=param.dtype, device=param.device)
        p = param.shape[-1]
        if isinstance(self.df, kn.Tensor) and bool((self.df <= p - 1).any()):
            raise ArgumentError(f"Value of df={df} expected to be greater than ndim - 1 = {p - 1}.")
        if isinstance(self.df, kn.Tensor) and bool((self.df < p).any()):
            warnings.warn("Low df values detected. Singular samples are highly likely to occur "
                          "for ndim - 1 < df < ndim.", stacklevel=2)  # fmt: skip
        self._event_shape = param.shape[-2:]
        if validate_args is not False and (validate_args or self._validate_args):
            self._check_param(name, param, self.arg_constraints[name])
        super().__init__(batch_shape, param.shape[-2:], validate_args=validate_args)
        self._batch_dims = [-(x + 1) for x in range(len(self._batch_shape))]
        if name == "scale_tril":
            self._unbroadcasted_scale_tril = param
        elif name == "covariance_matrix":
            self._unbroadcasted_scale_tril = kn.linalg.cholesky(param)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(param)
        self._dist_chi2 = Chi2(self._chi2_df(self.df, batch_shape), validate_args=False)

    def _checked_params(self):
        return []

    def _chi2_df(self, df, batch_shape):
        tril = self._unbroadcasted_scale_tril if hasattr(self, "_unbroadcasted_scale_tril") else df
        steps = _kn().arange(self._event_shape[-1], dtype=tril.dtype, device=tril.device)
        return df.unsqueeze(-1) - steps.expand((*batch_shape, -1))

    def expand(self, batch_shape, _instance=None):
        new = super().expand(batch_shape)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril.expand(
            new._batch_shape + self._event_shape
        )
        new.df = self.df.expand(new._batch_shape)
        new._batch_dims = [-(x + 1) for x in range(len(new._batch_shape))]
        new._dist_chi2 = Chi2(self._chi2_df(new.df, new._batch_shape), validate_args=False)
        return new

    @property
    def scale_tril(self):
        return self._unbroadcasted_scale_tril.expand(self._batch_shape + self._event_shape)

    @property
    def covariance_matrix(self):
        tril = self._unbroadcasted_scale_tril
        return (tril @ tril.mT).expand(self._batch_shape + self._event_shape)

    @property
    def precision_matrix(self):
        kn, tril = _kn(), self._unbroadcasted_scale_tril
        eye = kn.eye(self._event_shape[-1], dtype=tril.dtype, device=tril.device)
        return kn.cholesky_solve(eye, tril).expand(self._batch_shape + self._event_shape)

    @property
    def mean(self):
        return self.df.view(*self._batch_shape, 1, 1) * self.covariance_matrix

    @property
    def mode(self):
        factor = self.df - self.covariance_matrix.shape[-1] - 1
        factor = _kn().where(factor <= 0, math.nan, factor)
        return factor.view(*self._batch_shape, 1, 1) * self.covariance_matrix

    @property
    def variance(self):
        v = self.covariance_matrix
        diag = v.diagonal(dim1=-2, dim2=-1)
        return self.df.view(*self._batch_shape, 1, 1) * (
            v.pow(2) + diag.unsqueeze(-1) * diag.unsqueeze(-2)
        )

    def _bartlett(self, sample_shape):
        kn = _kn()
        chi = self._dist_chi2.rsample(sample_shape).sqrt()
        noise = kn.diag_embed(chi.clamp(min=kn.finfo(chi.dtype).eps))
        shape = noise.shape
        lower = kn.randn(shape, dtype=noise.dtype, device=noise.device).tril(-1)
        chol = self._unbroadcasted_scale_tril @ (noise + lower)
        return chol @ chol.mT

    def rsample(self, sample_shape=(), max_try_correction=None):
        kn = _kn()
        sample = self._bartlett(sample_shape)
        if not isinstance(sample, kn.Tensor):
            return sample
        for _ in range(10 if max_try_correction is None else max_try_correction):
            with no_grad():
                singular = ~self.support.check(sample)
            if not bool(singular.any()):
                break
            warnings.warn("Singular sample detected.", stacklevel=2)
            mask = singular.reshape(*singular.shape, 1, 1)
            sample = kn.where(mask, self._bartlett(sample_shape), sample)
        return sample

    def log_prob(self, value):
        kn = _kn()
        value = _tensor(value, self.df)
        nu, p = self.df, self._event_shape[-1]
        tril = self._unbroadcasted_scale_tril
        log_det = tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        trace = kn.cholesky_solve(value, tril).diagonal(dim1=-2, dim2=-1).sum(-1)
        return (-nu * (p * _LOG_2 / 2 + log_det) - kn.mvlgamma(nu / 2, p=p)
                + (nu - p - 1) / 2 * kn.linalg.slogdet(value).logabsdet - trace / 2)  # fmt: skip

    def entropy(self):
        kn = _kn()
        nu, p = self.df, self._event_shape[-1]
        log_det = self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        return ((p + 1) * (p * _LOG_2 / 2 + log_det) + kn.mvlgamma(nu / 2, p=p)
                - (nu - p - 1) / 2 * _mvdigamma(nu / 2, p) + nu * p / 2)  # fmt: skip

    @property
    def _natural_params(self):
        return -self.precision_matrix / 2, (self.df - self._event_shape[-1] - 1) / 2

    def _log_normalizer(self, x, y):
        kn, p = _kn(), self._event_shape[-1]
        log_det = -kn.linalg.slogdet(-2 * x).logabsdet + _LOG_2 * p
        return (y + (p + 1) / 2) * log_det + kn.mvlgamma(y + (p + 1) / 2, p=p)


class LKJCholesky(Distribution):
    """The LKJ distribution over Cholesky factors of `dim` x `dim` correlation matrices, of
    `concentration`; `sample` is the onion method (Beta draws and uniform directions).

    >>> import kiln as kn
    >>> m = kn.distributions.LKJCholesky(2, kn.tensor(1.0))
    >>> m.event_shape, bool(kn.distributions.constraints.corr_cholesky.check(m.sample()))
    (kiln.Size([2, 2]), True)
    """

    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim, concentration=1.0, validate_args=None):
        kn = _kn()
        if dim < 2:
            raise ArgumentError(
                f"Expected dim to be an integer greater than or equal to 2. Found dim={dim}."
            )
        self.dim = dim
        self.concentration = _tensor(
            float(concentration) if isinstance(concentration, (int, float)) else concentration
        )
        c = self.concentration
        marginal = c + 0.5 * (dim - 2)
        offset = kn.arange(dim - 1, dtype=c.dtype, device=c.device)
        offset = kn.cat([kn.zeros(1, dtype=c.dtype, device=c.device), offset])
        self._beta = Beta(offset + 0.5, marginal.unsqueeze(-1) - 0.5 * offset)
        super().__init__(c.shape, (dim, dim), validate_args=validate_args)

    def sample(self, sample_shape=()):
        kn = _kn()
        with no_grad():
            y = self._beta.sample(sample_shape).unsqueeze(-1)
            shape = self._extended_shape(sample_shape)
            u = kn.randn(shape, dtype=y.dtype, device=y.device).tril(-1)
            norm = u.norm(dim=-1, keepdim=True)
            first = (kn.arange(self.dim, device=u.device) == 0).reshape(-1, 1)
            sphere = kn.where(first, 0.0, u / kn.where(first, 1.0, norm))
            w = y.sqrt() * sphere
            diag = (1 - (w**2).sum(-1)).clamp(min=kn.finfo(w.dtype).tiny).sqrt()
            return w + kn.diag_embed(diag)

    def log_prob(self, value):
        kn = _kn()
        value = _tensor(value, self.concentration)
        diag = value.diagonal(dim1=-1, dim2=-2)[..., 1:]
        order = kn.arange(2, self.dim + 1, device=value.device).to(value.dtype)
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalized = (order * diag.log()).sum(-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        normalize = (
            0.5 * dm1 * math.log(math.pi) + kn.mvlgamma(alpha - 0.5, dm1) - (kn.lgamma(alpha) * dm1)
        )
        return unnormalized - normalize
