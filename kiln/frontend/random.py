"""Random values: `kn.random.normal`, `uniform`, `bernoulli`, `randint`, seeded by
`kn.manual_seed`.

Each call adds a random node to the default graph; every run of it draws fresh values, and
the sequence is the same for the same `kn.manual_seed`.
"""

from __future__ import annotations

from .. import dtypes as dt
from .. import shapes as sh
from ..graph.core import get_default_graph
from ..graph.opdef import REGISTRY
from ..ops.core import bind, bind_graph, scalar
from ..ops.random import manual_seed, next_seed

__all__ = ["normal", "uniform", "bernoulli", "randint", "manual_seed"]


def _random(op_name, shape, dtype, name, **params):
    attrs = {"shape": sh.as_shape(shape), "dtype": dt.as_dtype(dtype), "seed": next_seed()}
    return bind_graph(REGISTRY[op_name], (), {**attrs, **params}, name, get_default_graph())


def normal(shape, mean: float = 0.0, std: float = 1.0, dtype=dt.float32, name=None):
    """Normal samples of `shape` (dims may be symbolic), fresh on every run.

    >>> import kiln as kn
    >>> with kn.Graph().as_default():
    ...     z = kn.random.normal(("batch", 4), std=0.1)
    >>> z.type_str()
    'f32[batch,4]'
    """
    return _random("random_normal", shape, dtype, name, mean=float(mean), std=float(std))


def uniform(shape, low: float = 0.0, high: float = 1.0, dtype=dt.float32, name=None):
    """Uniform samples in `[low, high)` of `shape`, fresh on every run.

    >>> import kiln as kn
    >>> with kn.Graph().as_default():
    ...     u = kn.random.uniform((2, 3), -1.0, 1.0)
    >>> u.type_str()
    'f32[2,3]'
    """
    return _random("random_uniform", shape, dtype, name, low=float(low), high=float(high))


def bernoulli(shape, p: float = 0.5, dtype=dt.float32, name=None):
    """Ones with probability `p`, else zeros, of `shape`, fresh on every run.

    >>> import kiln as kn
    >>> with kn.Graph().as_default():
    ...     m = kn.random.bernoulli((8,), p=0.9)
    >>> m.type_str()
    'f32[8]'
    """
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"bernoulli: p must be in [0, 1], got {p}")
    return _random("random_bernoulli", shape, dtype, name, p=float(p))


def randint(low: int, high: int, shape, dtype=dt.int64, name=None):
    """Integers drawn uniformly from [low, high) of `shape`, fresh on every run (PyTorch's
    `randint(low, high, size)`, as a graph node).

    >>> import kiln as kn
    >>> with kn.Graph().as_default():
    ...     i = kn.random.randint(0, 10, ("batch", 3))
    >>> i.type_str()
    'i64[batch,3]'
    """
    low, high = int(low), int(high)
    if high <= low:
        raise ValueError(f"randint: low ({low}) must be less than high ({high})")
    u = _random("random_uniform", shape, dt.float64, name, low=0.0, high=1.0)
    # NOTE: floor(u * n) < n for u < 1, but rounding may reach n for huge n: hence the minimum
    scaled = bind(REGISTRY["floor"], u * float(high - low)) + float(low)
    values = bind(REGISTRY["minimum"], scaled, scalar(float(high - 1), scaled))
    return bind(REGISTRY["cast"], values, dtype=dt.as_dtype(dtype))
