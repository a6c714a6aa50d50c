"""Parametrizations built on `kn.nn.utils.parametrize`, as PyTorch's
`torch.nn.utils.parametrizations`: `orthogonal` (a matrix, or a batch of them, kept
orthogonal or unitary through the matrix exponential, the Cayley map or Householder
reflectors of an unconstrained `original`)."""

from __future__ import annotations

import numpy as np

from ... import frontend as F
from ...eager import Tensor, no_grad
from ...eager.factories import eye, randn, zeros, zeros_like
from ...eager.tensor import make
from ...errors import ArgumentError
from ..module import Module
from . import parametrize

__all__ = ["orthogonal"]

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
