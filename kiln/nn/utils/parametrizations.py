"""Parametrizations built on `kn.nn.utils.parametrize`, as PyTorch's
`torch.nn.utils.parametrizations`: `orthogonal` (a matrix, or a batch of them, kept
orthogonal or unitary through the matrix exponential, the Cayley map or Householder
reflectors of an unconstrained `original`), `weight_norm` (a magnitude `original0` times the
direction of `original1`) and `spectral_norm` (divided by its largest singular value, found
by power iteration on the buffers `_u` and `_v`). The hook forms of the last two are
kiln/nn/utils/weight_norm_hook.py and spectral_norm_hook.py."""

from __future__ import annotations

import numpy as np

from ... import frontend as F
from ...eager import Tensor, no_grad
from ...eager.factories import eye, randn, zeros, zeros_like
from ...eager.tensor import make
from ...errors import ArgumentError, IndexOutOfRangeError
from ..module import Module
from . import parametrize
from .spectral_norm_hook import _unit
from .weight_norm_hook import norm_except_dim

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]

_MAPS = ("matrix_exp", "cayley", "householder")


def _is_orthogonal(q) -> bool:
    """Whether `q`'s columns are orthonormal, within 10 n eps (PyTorch's bound)."""
    n, k = q.shape[-2], q.shape[-1]
    eps = 10.0 * n * float(np.finfo(np.dtype(q.dtype)).eps)
    return bool(F.allclose(F.matmul(q.mH, q), eye(k, dtype=q.dtype), atol=eps))


def _make_orthogonal(a):
    """The Q of `a = QR` (a tall matrix, or a batch) whose R has a real non-negative
    diagonal: unique where `a` has full rank."""
    q, r = F.linalg.qr(a)
    return q * F.unsqueeze(F.sgn(F.diagonal(r, 0, -2, -1)), -2)


def _householder_original(q):
    """The `original` whose Householder map is `q` (a tall matrix, or a batch): LAPACK's
    `geqrf` of `q` (its Householder vectors below the diagonal, leading 1s implied) with
    the signs of R's diagonal on the diagonal, flipped where a reflector is the identity
    (tau 0), as PyTorch's."""
    h, tau = np.linalg.qr(q.numpy(), mode="raw")  # h: the factors, transposed
    a = np.array(np.swapaxes(h, -1, -2))
    k = np.arange(min(a.shape[-2:]))
    signs = np.sign(a[..., k, k])
    a[..., k, k] = np.where(tau == 0, -signs, signs)
    return make(a)


class _Orthogonal(Module):
    """The map from an unconstrained matrix to an orthogonal one; with
    `use_trivialization`, the result is `base @ map(X)`, `base` (a buffer) the orthogonal
    matrix last assigned (PyTorch's dynamic trivialization)."""

    def __init__(self, weight, orthogonal_map: str, *, use_trivialization: bool = True):
        super().__init__()
        if weight.dtype.kind == "c" and orthogonal_map == "householder":
            raise ArgumentError("The householder parametrization does not support complex tensors.")
        self.shape = tuple(weight.shape)
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, x):
        n, k = x.shape[-2], x.shape[-1]
        transposed = n < k
        if transposed:
            x, n, k = x.mT, k, n
        if self.orthogonal_map in ("matrix_exp", "cayley"):
            x = F.tril(x)
            if n != k:
                x = F.cat([x, zeros((*x.shape[:-2], n, n - k), dtype=x.dtype)], -1)
            a = x - x.mH
            if self.orthogonal_map == "matrix_exp":
                q = F.linalg.matrix_exp(a)
            else:
                identity = eye(n, dtype=a.dtype)
                q = F.linalg.solve(identity - a * 0.5, identity + a * 0.5)
            if n != k:
                q = q[..., :k]
        else:
            a = F.tril(x, -1)
            tau = 2.0 / (1.0 + F.sum(a * a, -2))
            q = F.linalg.householder_product(a, tau)
            q = q * F.unsqueeze(F.cast(F.diagonal(x, 0, -2, -1), np.int32), -2)
        if "base" in self._buffers:
            q = F.matmul(self.base, q)
        return q.mT if transposed else q

    def right_inverse(self, q):
        """The `original` whose value is `q` (orthogonal or not: it is orthogonalized first,
        by QR): with trivialization `base` becomes `q` and `original` the matrix the map
        sends to the identity's columns."""
        if tuple(q.shape) != self.shape:
            raise ArgumentError(f"Expected a matrix or batch of matrices of shape {self.shape}. "
                                f"Got a tensor of shape {tuple(q.shape)}.")  # fmt: skip
        with no_grad():
            start = q
            n, k = q.shape[-2], q.shape[-1]
            transposed = n < k
            if transposed:
                q, n, k = q.mT, k, n
            if "base" not in self._buffers:
                if self.orthogonal_map in ("matrix_exp", "cayley"):
                    raise NotImplementedError(
                        "It is not possible to assign to the matrix exponential or the Cayley "
                        "parametrizations when use_trivialization=False."
                    )
                a = _householder_original(q)
                return a.mT if transposed else a
            if n == k:
                q = q.clone() if _is_orthogonal(q) else _make_orthogonal(q)
            else:
                fill = randn(*q.shape[:-2], n, n - k, dtype=q.dtype)
                q = _make_orthogonal(F.cat([q, fill], -1))
            self.base = q
            neg_identity = zeros_like(start)
            neg_identity.diagonal(0, -2, -1).fill_(-1.0)
            return neg_identity


def orthogonal(module, name: str = "weight", orthogonal_map: str | None = None, *,
               use_trivialization: bool = True):  # fmt: skip
    """Makes `module.<name>` (a matrix or a batch of them, `(..., m, n)`) orthogonal, or
    unitary if complex: orthonormal columns where m >= n, rows otherwise, as PyTorch's
    `torch.nn.utils.parametrizations.orthogonal`. `orthogonal_map`: "matrix_exp" or
    "cayley" of a skew-symmetric matrix, or "householder" reflectors (default: matrix_exp
    for square or complex matrices, householder otherwise). With `use_trivialization`
    (default) the value starts as the current one (orthogonalized by QR if it is not
    orthogonal) and `module.parametrizations.<name>[0].base` holds the last assigned one.
    Returns the module.

    >>> import kiln as kn
    >>> m = kn.nn.utils.parametrizations.orthogonal(kn.nn.Linear(3, 5))
    >>> type(m).__name__, [n for n, _ in m.named_parameters()]
    ('ParametrizedLinear', ['bias', 'parametrizations.weight.original'])
    >>> q = m.weight
    >>> bool(kn.allclose(q.T @ q, kn.eye(3), atol=1e-5))
    True
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ArgumentError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ArgumentError(
            f"Expected a matrix or batch of matrices. Got a tensor of {weight.ndim} dimensions."
        )
    if orthogonal_map is None:
        square = weight.shape[-2] == weight.shape[-1]
        orthogonal_map = "matrix_exp" if square or weight.dtype.kind == "c" else "householder"
    if orthogonal_map not in _MAPS:
        raise ArgumentError('orthogonal_map has to be one of "matrix_exp", "cayley", '
                            f'"householder". Got: {orthogonal_map}')  # fmt: skip
    orth = _Orthogonal(weight, orthogonal_map, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module


class _WeightNorm(Module):
    """`original1 * (original0 / ||original1||)`, the norm over every dim but `dim`."""

    def __init__(self, dim: int | None = 0):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        return F.mul(weight_v, F.div(weight_g, norm_except_dim(weight_v, 2, self.dim)))

    def right_inverse(self, weight):
        return norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module, name: str = "weight", dim: int | None = 0):
    """Reparametrizes `module.<name>` as a magnitude `parametrizations.<name>.original0`
    (PyTorch's `g`, the norm over every dim but `dim`; dim=None: of the whole tensor) times
    the direction of `original1` (`v`), as PyTorch's
    `torch.nn.utils.parametrizations.weight_norm`; a state_dict of the hook form
    (`<name>_g`, `<name>_v`) loads into it. Returns the module.

    >>> import kiln as kn
    >>> m = kn.nn.utils.parametrizations.weight_norm(kn.nn.Linear(3, 2))
    >>> [(n, tuple(p.shape)) for n, p in m.named_parameters()]  # doctest: +NORMALIZE_WHITESPACE
    [('bias', (2,)), ('parametrizations.weight.original0', (2, 1)),
     ('parametrizations.weight.original1', (2, 3))]
    """
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)

    def old_names(module, state_dict, prefix, *rest) -> None:
        g, v = f"{prefix}{name}_g", f"{prefix}{name}_v"
        if g in state_dict and v in state_dict:
            state_dict[f"{prefix}parametrizations.{name}.original0"] = state_dict.pop(g)
            state_dict[f"{prefix}parametrizations.{name}.original1"] = state_dict.pop(v)

    module.register_load_state_dict_pre_hook(old_names)
    return module


class _SpectralNorm(Module):
    """The weight over its largest singular value `u . (W v)`; each training-mode forward
    first takes `n_power_iterations` power-iteration steps on the buffers `_u` and `_v` (no
    gradient flows through them). A vector is normalized instead."""

    def __init__(self, weight, n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12):
        super().__init__()
        ndim = weight.ndim
        if not -ndim <= dim < ndim:
            raise IndexOutOfRangeError(f"Dimension out of range (expected to be in range of "
                                       f"[-{ndim}, {ndim - 1}] but got {dim})")  # fmt: skip
        if n_power_iterations <= 0:
            raise ArgumentError("Expected n_power_iterations to be positive, but got "
                                f"n_power_iterations={n_power_iterations}")  # fmt: skip
        self.dim = dim % ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            with no_grad():
                matrix = self._matrix(weight.detach())
                h, w = matrix.shape
                self.register_buffer("_u", _unit(randn(h, dtype=weight.dtype), eps))
                self.register_buffer("_v", _unit(randn(w, dtype=weight.dtype), eps))
                u, v = self._power_method(matrix, self._u, self._v, 15)
                self._u.copy_(u)
                self._v.copy_(v)

    def _matrix(self, weight):
        if self.dim != 0:
            weight = F.permute(
                weight, [self.dim, *(d for d in range(weight.ndim) if d != self.dim)]
            )
        return F.reshape(weight, (weight.shape[0], -1))

    def _power_method(self, matrix, u, v, steps: int) -> tuple:
        fixed = F.stop_gradient(matrix)
        for _ in range(steps):
            u = _unit(F.mv(fixed, v), self.eps)
            v = _unit(F.mv(F.t(fixed), u), self.eps)
        return F.stop_gradient(u), F.stop_gradient(v)

    def forward(self, weight):
        if weight.ndim == 1:
            return _unit(weight, self.eps)
        matrix = self._matrix(weight)
        u, v = self._u, self._v
        if self.training:
            u, v = self._power_method(matrix, u, v, self.n_power_iterations)
        out = F.div(weight, F.dot(u, F.mv(matrix, v)))
        if self.training:  # the buffers keep the new vectors (graphs: tied to `out`)
            self._record_updates(out, {"_u": u, "_v": v})
        return out

    def right_inverse(self, value):
        return value


def spectral_norm(module, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: int | None = None):  # fmt: skip
    """Divides `module.<name>` by its spectral norm, estimated by `n_power_iterations`
    power-iteration steps on each training-mode read, as PyTorch's
    `torch.nn.utils.parametrizations.spectral_norm` (the vectors: the buffers
    `parametrizations.<name>[0]._u` and `_v`; `dim` defaults to 1 for transposed
    convolutions, else 0). Returns the module.

    >>> import kiln as kn
    >>> m = kn.nn.utils.parametrizations.spectral_norm(kn.nn.Linear(4, 3))
    >>> [n for n, _ in m.named_buffers()]
    ['parametrizations.weight.0._u', 'parametrizations.weight.0._v']
    >>> round(float(kn.linalg.matrix_norm(m.weight.detach(), 2)), 3)
    1.0
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ArgumentError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        transposed = type(module).__name__ in ("ConvTranspose1d", "ConvTranspose2d",
                                               "ConvTranspose3d")  # fmt: skip
        dim = 1 if transposed else 0
    norm = _SpectralNorm(weight, n_power_iterations, dim, eps)
    parametrize.register_parametrization(module, name, norm)
    return module
