"""PyTorch's numeric functions kiln lacked: `poisson` and `binomial` (random counts, fresh
on every run of a graph or compiled function), `gradient`, `histogramdd`, `segment_reduce`,
the randomized `svd_lowrank`/`pca_lowrank`, and the deprecated norms `nuclear_norm`,
`frobenius_norm` (and `matrix_rank`, which PyTorch only refuses now).

>>> import kiln as kn
>>> kn.gradient(kn.tensor([1.0, 4.0, 9.0, 16.0]))[0].tolist()
[3.0, 4.0, 6.0, 7.0]
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from ..array_types import return_types
from ..eager.tensor import Tensor
from ..errors import (
    ArgumentError,
    ArgumentTypeError,
    ShapeMismatchError,
    UnsupportedDTypeError,
    UsageError,
    call_error,
)
from ..graph.core import Symbol
from ..graph.opdef import REGISTRY
from ..ops.core import bind
from ..ops.random import in_trace, next_seed, seeds_from
from . import math as m
from . import shape as s
from .core import constant, lift
from .out import takes_out
from .torch_data import _bounds, _const, _count, _data_range, _same_dtype
from .torch_index import _like

__all__ = [
    "binomial", "eig", "frobenius_norm", "gradient", "histogramdd", "lstsq", "matrix_rank",
    "nuclear_norm", "pca_lowrank", "poisson",
    "_standard_gamma", "_standard_gamma_grad", "segment_reduce", "solve", "svd_lowrank", "symeig",
]  # fmt: skip


class _Namespace:
    def __getattr__(self, name):  # `kn.<name>` on use: the namespace is complete by then
        import kiln

        return getattr(kiln, name)


K = _Namespace()


# -- random counts ---------------------------------------------------------------------------


def _random_counts(op: str, inputs, generator):
    """A random op on `inputs`: drawn now for eager tensors (from `generator` when given),
    or a graph node that draws fresh values on every run."""
    with seeds_from(generator):
        seed = next_seed()
    if in_trace() and not any(isinstance(v, Symbol) for v in inputs):
        # a tensor the traced function made (no module value): a constant of its graph, so
        # that the draw is a node, fresh on every call
        inputs = tuple(constant(v.detach()._host()) if type(v) is Tensor and not v.requires_grad
                       else v for v in inputs)  # fmt: skip
    if any(isinstance(v, Symbol) for v in inputs) or in_trace():
        return bind(REGISTRY[op], *inputs, seed=seed)
    return bind(REGISTRY[op], *inputs, seed=seed, key=(seed, 0))


def poisson(input, generator=None):  # noqa: A002
    """Samples of the Poisson distribution with the rates `input` (float, non-negative), in
    its dtype; gradients are zero, as PyTorch's.

    >>> import kiln as kn
    >>> kn.poisson(kn.zeros(3)).tolist()
    [0.0, 0.0, 0.0]
    """
    (x,) = lift(input)
    if not dt.is_float(x.dtype):
        raise call_error(UnsupportedDTypeError, f'"poisson_cpu" not implemented for '
                         f"{dt.type_name(x.dtype)}", "poisson", x)  # fmt: skip
    if (
        isinstance(x, Tensor)
        and bool((x < 0).any())
        or isinstance(x, Tensor)
        and bool(K.isnan(x).any())
    ):
        raise call_error(UsageError, "poisson: invalid Poisson rate, expected rate to be "
                         "non-negative", "poisson", x)  # fmt: skip
    return _random_counts("random_poisson", (x,), generator)


def _standard_gamma(input, generator=None):  # noqa: A002
    """Samples of Gamma(`input`, 1) (float concentrations), in its dtype, as PyTorch's
    `_standard_gamma`; their gradient with respect to `input` is the implicit
    reparameterization one, `_standard_gamma_grad(input, sample)`.

    >>> import kiln as kn
    >>> bool((kn._standard_gamma(kn.ones(4)) > 0).all())
    True
    """
    (x,) = lift(input)
    if not dt.is_float(x.dtype):
        raise call_error(UnsupportedDTypeError, f'"gamma_cpu" not implemented for '
                         f"{dt.type_name(x.dtype)}", "_standard_gamma", x)  # fmt: skip
    return _random_counts("random_gamma", (x,), generator)


def _standard_gamma_grad(input, output):  # noqa: A002
    """d output / d input for `output ~ Gamma(input, 1)` at fixed quantile, as PyTorch's
    `_standard_gamma_grad` (its approximation, to float64 accuracy or better than 1e-6).

    >>> import kiln as kn
    >>> round(kn._standard_gamma_grad(kn.tensor(1.0), kn.tensor(1.0)).item(), 4)
    1.1736
    """
    a, x = lift(input, output)
    return bind(REGISTRY["standard_gamma_grad"], a, x)


def binomial(count, prob, generator=None):
    """Samples of the binomial distribution: successes in `count` trials of probability
    `prob` (float tensors of one dtype, broadcast), in their dtype. Not differentiable, as
    PyTorch's.

    >>> import kiln as kn
    >>> kn.binomial(kn.tensor([5.0, 5.0]), kn.tensor([0.0, 1.0])).tolist()
    [0.0, 5.0]
    """
    c, p = lift(count, prob)
    if not dt.is_float(c.dtype):
        raise call_error(ArgumentTypeError, f"binomial only supports floating-point dtypes "
                         f"for count, got: {dt.type_name(c.dtype)}", "binomial", c, p)  # fmt: skip
    return _random_counts("random_binomial", (c, p), generator)


# -- calculus and statistics -----------------------------------------------------------------


def _along(v, dim: int, ndim: int):
    """A 1-D `v` shaped to broadcast along `dim` of an ndim-d tensor."""
    return s.reshape(v, (1,) * dim + (-1,) + (1,) * (ndim - dim - 1))


def _take(x, dim: int, start, stop=None):
    key = (slice(None),) * dim + (slice(start, stop),)
    return s.getitem(x, key)


def _gradient_dim(f, dim: int, h, edge_order: int):
    """The derivative of `f` along `dim`, `h` a float (uniform) or the 1-D coordinates."""
    nd = f.ndim
    if not isinstance(h, (Tensor, Symbol)):
        interior = m.div(m.sub(_take(f, dim, 2), _take(f, dim, 0, -2)), 2.0 * h)
        if edge_order == 1:
            first = m.div(m.sub(_take(f, dim, 1, 2), _take(f, dim, 0, 1)), h)
            last = m.div(m.sub(_take(f, dim, -1), _take(f, dim, -2, -1)), h)
        else:
            first = m.div(m.add(m.add(m.mul(_take(f, dim, 0, 1), -1.5), m.mul(
                _take(f, dim, 1, 2), 2.0)), m.mul(_take(f, dim, 2, 3), -0.5)), h)  # fmt: skip
            last = m.div(m.add(m.add(m.mul(_take(f, dim, -1), 1.5), m.mul(
                _take(f, dim, -2, -1), -2.0)), m.mul(_take(f, dim, -3, -2), 0.5)), h)  # fmt: skip
        return K.cat([first, interior, last], dim)
    d = m.sub(h[1:], h[:-1])  # the steps
    hl, hr = d[:-1], d[1:]
    a = m.div(m.neg(hr), m.mul(hl, m.add(hl, hr)))
    b = m.div(m.sub(hr, hl), m.mul(hl, hr))
    c = m.div(hl, m.mul(hr, m.add(hl, hr)))
    interior = m.add(m.add(m.mul(_along(a, dim, nd), _take(f, dim, 0, -2)),
                           m.mul(_along(b, dim, nd), _take(f, dim, 1, -1))),
                     m.mul(_along(c, dim, nd), _take(f, dim, 2)))  # fmt: skip
    if edge_order == 1:
        first = m.div(m.sub(_take(f, dim, 1, 2), _take(f, dim, 0, 1)), d[0])
        last = m.div(m.sub(_take(f, dim, -1), _take(f, dim, -2, -1)), d[-1])
    else:
        d1, d2 = d[0], d[1]
        w = [
            m.div(m.neg(m.add(m.mul(d1, 2.0), d2)), m.mul(d1, m.add(d1, d2))),
            m.div(m.add(d1, d2), m.mul(d1, d2)),
            m.div(m.neg(d1), m.mul(d2, m.add(d1, d2))),
        ]
        first = sum_terms(f, dim, w, (0, 1, 2))
        d1, d2 = d[-2], d[-1]
        w = [m.div(d2, m.mul(d1, m.add(d1, d2))), m.div(m.neg(m.add(d1, d2)), m.mul(d1, d2)),
             m.div(m.add(m.mul(d2, 2.0), d1), m.mul(d2, m.add(d1, d2)))]  # fmt: skip
        last = sum_terms(f, dim, w, (-3, -2, -1))
    return K.cat([first, interior, last], dim)


def sum_terms(f, dim, weights, positions):
    """`sum(w * f[..., p, ...])` over the weights and positions along `dim` (kept as size 1)."""
    total = None
    for w, p in zip(weights, positions):
        term = m.mul(w, _take(f, dim, p, p + 1 if p != -1 else None))
        total = term if total is None else m.add(total, term)
    return total


def gradient(input, *, spacing=1, dim=None, edge_order: int = 1):  # noqa: A002
    """The derivative of `input` along each of `dim` (every dim by default) by central
    differences inside and one-sided differences of order `edge_order` (1 or 2) at the ends,
    as PyTorch's and NumPy's `gradient`. `spacing` is one step for every dim, a step per dim,
    or the coordinates (1-D tensors) of each dim. Returns a tuple, one tensor per dim.

    >>> import kiln as kn
    >>> gx, gy = kn.gradient(kn.tensor([[1.0, 2.0, 4.0], [2.0, 5.0, 9.0]]), spacing=[1.0, 2.0])
    >>> gx.tolist(), gy.tolist()
    ([[1.0, 3.0, 5.0], [1.0, 3.0, 5.0]], [[0.5, 0.75, 1.0], [1.5, 1.75, 2.0]])
    """
    (f,) = lift(input)
    if edge_order not in (1, 2):
        raise call_error(ArgumentError, "torch.gradient only supports edge_order=1 and "
                         "edge_order=2.", "gradient", f)  # fmt: skip
    dims = list(range(f.ndim)) if dim is None else [dim] if isinstance(dim, int) else list(dim)
    dims = [d % max(f.ndim, 1) for d in dims]
    if spacing is None:
        spacing = 1
    if isinstance(spacing, (list, tuple)):
        steps = list(spacing)
        if len(steps) != len(dims):
            raise call_error(ArgumentError, f"torch.gradient expected spacing to be unspecified, "
                             f"a scalar or it's spacing and dim arguments to have the same "
                             f"length, but got a spacing argument of length {len(steps)} and a "
                             f"dim argument of length {len(dims)}.", "gradient", f)  # fmt: skip
    else:
        steps = [spacing] * len(dims)
    if not (dt.is_float(f.dtype) or dt.is_complex(f.dtype)):
        f = m.cast(f, dt.DEFAULT_FLOAT)
    out = []
    for d, h in zip(dims, steps):
        if f.shape[d] < edge_order + 1:
            raise call_error(ShapeMismatchError, "torch.gradient expected each dimension size "
                             "to be at least edge_order+1", "gradient", f)  # fmt: skip
        if isinstance(h, (Tensor, Symbol)):
            (h,) = lift(h, context=(f,))
            h = m.cast(h, f.dtype) if h.dtype != f.dtype else h
        else:
            h = float(h)
        out.append(_gradient_dim(f, d, h, edge_order))
    return tuple(out)


@takes_out
def histogramdd(input, bins, *, range=None, weight=None, density: bool = False):  # noqa: A002
    """The D-dimensional histogram of the points `input` (..., D): `bins` an int (each dim),
    D ints, or D 1-D edge tensors; `range` the flat (min, max) pairs (default: the data's);
    `weight` the weight of each point; `density` normalizes to integrate to 1. Returns
    `(hist, bin_edges)`. Static shapes: it traces and compiles.

    >>> import kiln as kn
    >>> h = kn.histogramdd(kn.tensor([[0.0, 0.0], [1.0, 1.0], [1.0, 0.0]]), [2, 2])
    >>> h.hist.tolist(), [e.tolist() for e in h.bin_edges]
    ([[1.0, 0.0], [1.0, 1.0]], [[0.0, 0.5, 1.0], [0.0, 0.5, 1.0]])
    """
    (x,) = lift(input)
    if not dt.is_float(x.dtype):
        why = f"\"histogramdd\" not implemented for '{dt.scalar_name(x.dtype)}'"
        raise call_error(UnsupportedDTypeError, why, "histogramdd", x)
    n_dims = x.shape[-1]
    if n_dims == 0:  # points of no coordinates: PyTorch's 0 (NaN as a density), no edges
        empty = m.sum(s.reshape(x, (-1,)))
        return return_types.histogramdd(m.add(empty, np.nan) if density else empty, ())
    points = s.reshape(x, (-1, n_dims))
    if isinstance(bins, (int, np.integer)):
        bins = [int(bins)] * n_dims
    bins = list(bins)
    if len(bins) != n_dims:
        raise call_error(ShapeMismatchError, f"histogramdd: expected {n_dims} sequences of bin "
                         f"edges for each of the {n_dims} input dims, got {len(bins)}",
                         "histogramdd", x)  # fmt: skip
    if range is not None and len(range) != 2 * n_dims:
        raise call_error(ShapeMismatchError, f"histogramdd: expected {2 * n_dims} range "
                         f"values, got {len(range)}", "histogramdd", x)  # fmt: skip
    edges, positions, sizes, inside = [], [], [], None
    for k, b in enumerate(bins):
        col = s.getitem(points, (slice(None), k))
        if isinstance(b, (Tensor, Symbol)):
            (e,) = lift(b, context=(x,))
            _same_dtype(x, e, "bins tensors")
            n = e.shape[0] - 1
        else:
            n = int(b)
            lo, hi = (0.0, 0.0) if range is None else _bounds(range, k, x)
            lo, hi = _data_range(col, lo, hi, 0.5, f"torch.histogramdd: dimension {k}'s range",
                                 given=range is not None)  # fmt: skip
            e = _linspace(lo, hi, n, x)
            if isinstance(e, np.ndarray):  # a given range: computed from constants alone
                e = _like(x, e)
        ok = m.logical_and(
            m.greater_equal(col, s.getitem(e, 0)), m.less_equal(col, s.getitem(e, -1))
        )
        inside = ok if inside is None else m.logical_and(inside, ok)
        inner = s.getitem(e, slice(1, n))
        pos = m.sum(m.cast(m.less_equal(s.unsqueeze(inner, 0), s.unsqueeze(col, 1)), dt.int64), 1)
        edges.append(e)
        positions.append(pos)
        sizes.append(n)
    total = int(np.prod(sizes))
    flat = positions[0]
    for pos, n in zip(positions[1:], sizes[1:]):
        flat = m.add(m.mul(flat, n), pos)
    flat = m.where(inside, flat, total)
    w = None if weight is None else lift(weight, context=(x,))[0]
    if w is not None:
        _same_dtype(x, w, "weight tensor")
        if tuple(w.shape) != tuple(x.shape[:-1]):
            raise call_error(ShapeMismatchError, "torch.histogramdd: if weight tensor is "
                             "provided it should have the same shape as the input tensor "
                             "excluding its innermost dimension", "histogramdd", x, w)  # fmt: skip
        w = s.reshape(w, (-1,))
    hist = s.reshape(_count(flat, w, total, x if w is None else w), tuple(sizes))
    if density:
        volume = None
        for k, e in enumerate(edges):
            width = _along(m.sub(s.getitem(e, slice(1, None)), s.getitem(e, slice(0, -1))), k,
                           n_dims)  # fmt: skip
            volume = width if volume is None else m.mul(volume, width)
        hist = m.div(hist, m.mul(m.sum(hist), volume))
    return return_types.histogramdd(hist, tuple(edges))


def _linspace(lo, hi, n: int, like):
    """n + 1 edges from lo to hi as PyTorch's linspace makes them: the first half stepped
    up from lo, the rest down from hi, so both ends are exact."""
    k = np.arange(n + 1)
    up = k < (n + 1) // 2
    step = m.div(m.sub(hi, lo), np.asarray(n, like.dtype))
    from_lo = m.add(lo, m.mul(step, _const(k.astype(like.dtype), like)))
    from_hi = m.sub(hi, m.mul(step, _const((n - k).astype(like.dtype), like)))
    return m.cast(m.where(_const(up, like), from_lo, from_hi), like.dtype)


_SEGMENT_EMPTY = {"sum": 0.0, "prod": 1.0, "max": -np.inf, "min": np.inf, "mean": np.nan}
_SCATTER = {"sum": "sum", "prod": "prod", "max": "amax", "min": "amin", "mean": "mean"}


def segment_reduce(data, reduce: str, *, lengths=None, indices=None, offsets=None,
                   axis: int = 0, unsafe: bool = False, initial=None):  # fmt: skip
    """Reduces consecutive segments of `data` along `axis` ("sum", "mean", "max", "min",
    "prod"): segment k has `lengths[k]` elements (or runs from `offsets[k]` to
    `offsets[k+1]`); an empty segment gives `initial`, else the reduction's identity (NaN
    for mean).

    >>> import kiln as kn
    >>> kn.segment_reduce(kn.tensor([1.0, 2.0, 3.0, 4.0]), "sum", lengths=kn.tensor([1, 0, 3]))
    tensor([1., 0., 9.])
    """
    (x,) = lift(data)
    if reduce not in _SEGMENT_EMPTY:
        why = f"segment_reduce: reduce must be one of {sorted(_SEGMENT_EMPTY)}, got {reduce!r}"
        raise call_error(ArgumentError, why, "segment_reduce", x)
    if indices is not None:
        raise call_error(ArgumentError, "segment_reduce: indices= is not supported (as in "
                         "PyTorch): pass lengths= or offsets=", "segment_reduce", x)  # fmt: skip
    if (lengths is None) == (offsets is None):
        raise call_error(ArgumentError, "segment_reduce: pass exactly one of lengths= and "
                         "offsets=", "segment_reduce", x)  # fmt: skip
    if lengths is not None:
        (lens,) = lift(lengths, context=(x,))
        ends = K.cumsum(lens, 0)
    else:
        (off,) = lift(offsets, context=(x,))
        lens, ends = m.sub(off[1:], off[:-1]), off[1:]
    if lens.ndim != 1:
        raise call_error(ShapeMismatchError, "segment_reduce: kiln takes 1-D lengths or offsets",
                         "segment_reduce", x, lens)  # fmt: skip
    axis %= x.ndim
    moved = K.movedim(x, axis, 0)
    n = moved.shape[0]
    ids = K.bucketize(_const(np.arange(n, dtype=np.int64), x), ends, right=True)
    if offsets is not None:  # elements before the first offset belong to no segment
        first = s.getitem(off, 0)
        ids = m.where(m.less(_const(np.arange(n, dtype=np.int64), x), first), lens.shape[0], ids)
    count = lens.shape[0]
    rest = tuple(moved.shape[1:])
    fill = _SEGMENT_EMPTY[reduce] if initial is None else float(initial)
    base = K.full((count + 1, *rest), fill, dtype=x.dtype)
    if isinstance(x, Symbol):
        base = _const(base.numpy(), x)
    index = K.broadcast_to(_along(m.minimum(ids, count), 0, moved.ndim), tuple(moved.shape))
    out = base.scatter_reduce(0, index, moved, _SCATTER[reduce], include_self=initial is not None)
    empty = m.equal(lens, 0)
    out = m.where(_along(empty, 0, moved.ndim), fill, s.getitem(out, slice(0, count)))
    return K.movedim(out, 0, axis)


# -- low-rank factorizations -----------------------------------------------------------------


def _gaussian(like, shape):
    """Standard normal draws beside `like`: fresh per run in a graph or compiled function."""
    if isinstance(like, Symbol):
        from .random import normal

        return normal(shape, dtype=like.dtype)
    return K.randn(tuple(shape), dtype=like.dtype)


def _basis(A, q: int, niter: int, M):
    """An orthonormal basis Q (m, q) of the range of A - M by subspace iteration from a
    random start (Halko, Martinsson and Tropp's randomized range finder)."""
    At = K.transpose(A, -2, -1)
    Mt = None if M is None else K.transpose(M, -2, -1)

    def times(B, X, C):
        Y = K.matmul(B, X)
        return Y if C is None else m.sub(Y, K.matmul(C, X))

    R = _gaussian(A, (*A.shape[:-2], A.shape[-1], q))
    Q = K.linalg.qr(times(A, R, M)).Q
    for _ in range(niter):
        Q = K.linalg.qr(times(At, Q, Mt)).Q
        Q = K.linalg.qr(times(A, Q, M)).Q
    return Q


def svd_lowrank(A, q: int | None = 6, niter: int | None = 2, M=None):
    """A rank-`q` SVD of `A - M` (M, broadcast, defaults to zero) by randomized subspace
    iteration: `(U, S, V)` with `A ≈ U diag(S) Vᵀ`, exact for a matrix of rank at most q.
    Its random start draws from kiln's generator (fresh per run of a compiled function).

    >>> import kiln as kn
    >>> A = kn.outer(kn.tensor([1.0, 2.0, 2.0]), kn.tensor([3.0, 0.0, 4.0, 0.0]))
    >>> U, S, V = kn.svd_lowrank(A, q=2)
    >>> round(S[0].item(), 4), bool(((U * S) @ V.T - A).abs().max() < 1e-4)
    (15.0, True)
    """
    (A,) = lift(A)
    q = 6 if q is None else int(q)
    niter = 2 if niter is None else int(niter)
    if M is not None:
        (M,) = lift(M, context=(A,))
        M = K.broadcast_to(M, tuple(A.shape))
    m_rows, n_cols = A.shape[-2], A.shape[-1]
    if m_rows < n_cols:  # factor the transpose: the basis lives in the smaller space
        Mt = None if M is None else K.transpose(M, -2, -1)
        V, S, U = svd_lowrank(K.transpose(A, -2, -1), q, niter, Mt)
        return U, S, V
    Q = _basis(A, q, niter, M)
    B = K.matmul(K.transpose(Q, -2, -1), A)
    if M is not None:
        B = m.sub(B, K.matmul(K.transpose(Q, -2, -1), M))
    U, S, Vh = K.linalg.svd(B, full_matrices=False)
    return K.matmul(Q, U), S, K.transpose(Vh, -2, -1)


def pca_lowrank(A, q: int | None = None, center: bool = True, niter: int = 2):
    """The principal components of the rows of `A` by `svd_lowrank` of the centered data
    (the column means removed when `center`): `(U, S, V)`, q = min(6, m, n) by default.

    >>> import kiln as kn
    >>> A = kn.tensor([[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]])
    >>> U, S, V = kn.pca_lowrank(A, q=1)
    >>> round(S[0].item(), 4), [round(abs(v), 4) for v in V[:, 0].tolist()]
    (2.0, [0.7071, 0.7071])
    """
    (A,) = lift(A)
    m_rows, n_cols = A.shape[-2], A.shape[-1]
    q = min(6, m_rows, n_cols) if q is None else int(q)
    if not 0 <= q <= min(m_rows, n_cols):
        raise call_error(ArgumentError, f"pca_lowrank: q(={q}) must be non-negative integer "
                         f"and not greater than min(m, n)={min(m_rows, n_cols)}",
                         "pca_lowrank", A)  # fmt: skip
    if not center:
        return svd_lowrank(A, q, niter)
    C = K.mean(A, -2, keepdim=True)
    return svd_lowrank(m.sub(A, C), q, niter)


# -- deprecated norms ------------------------------------------------------------------------


@takes_out
def nuclear_norm(input, dim=None, keepdim: bool = False):  # noqa: A002
    """The sum of the singular values of the matrices of `input` (its last two dims, or the
    two `dim`); `nuclear_norm(input, keepdim)` is PyTorch's other overload. Deprecated in
    PyTorch for `linalg.matrix_norm(input, "nuc")`.

    >>> import kiln as kn
    >>> kn.nuclear_norm(kn.tensor([[3.0, 0.0], [0.0, -4.0]])).item()
    7.0
    """
    if isinstance(dim, bool):
        dim, keepdim = None, dim
    dims = (-2, -1) if dim is None else tuple(dim)
    result = K.linalg.matrix_norm(input, "nuc", dims, keepdim)
    return result


@takes_out
def frobenius_norm(input, dim, keepdim: bool = False):  # noqa: A002
    """The square root of the sum of squares over `dim` (required, as PyTorch's). Deprecated
    in PyTorch for `linalg.vector_norm(input, 2, dim)`.

    >>> import kiln as kn
    >>> kn.frobenius_norm(kn.tensor([[3.0, 4.0]]), [0, 1]).item()
    5.0
    """
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    result = K.linalg.vector_norm(input, 2, dims, keepdim)
    return result


def matrix_rank(input, tol=None, symmetric: bool = False, *, out=None):  # noqa: A002
    """Removed from PyTorch (it raises there): kiln raises the same error, naming
    `kn.linalg.matrix_rank`.

    >>> import kiln as kn
    >>> kn.matrix_rank(kn.eye(2))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    kiln.errors.UsageError: This function was deprecated since version 1.9 and is now removed. ...
    """
    raise UsageError(
        "This function was deprecated since version 1.9 and is now removed. Please use the "
        "`kn.linalg.matrix_rank` function instead. The parameter 'symmetric' was renamed in "
        "`kn.linalg.matrix_rank()` to 'hermitian'."
    )


def _removed(name: str, instead: str):
    def fn(*args, **kwargs):
        raise UsageError(f"This function was deprecated since version 1.9 and is now removed. "
                         f"`kn.{name}` is replaced by {instead}.")  # fmt: skip

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (
        f"Removed from PyTorch (it raises there): kiln raises too, naming {instead}."
        f"\n\n    >>> import kiln as kn\n    >>> kn.{name}(kn.eye(2))  # doctest: "
        "+ELLIPSIS\n    Traceback (most recent call last):\n    ...\n    "
        "kiln.errors.UsageError: This function was deprecated since version 1.9 ...\n"
    )
    return fn


eig = _removed("eig", "`kn.linalg.eig`")
symeig = _removed("symeig", "`kn.linalg.eigh(A, UPLO='U' if upper else 'L')`")
solve = _removed("solve", "`kn.linalg.solve(A, B)` (arguments reversed)")
lstsq = _removed("lstsq", "`kn.linalg.lstsq(A, B)` (arguments reversed)")
