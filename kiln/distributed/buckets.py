"""Gradient buckets: which parameters' gradients are all-reduced together.

Shared by `DistributedDataParallel` (eager and `kn.compile`) and by the all-reduce that
`Optimizer.minimize` inserts in graph mode. As PyTorch's DDP: parameters in reverse order
(backward produces the last layer's gradients first), a bucket per dtype (and device) closed
when the next gradient would pass `bucket_cap_mb`, so each bucket's all-reduce can start while
backward is still computing the earlier layers' gradients.
"""

from __future__ import annotations

import math

from ..errors import ArgumentError

DEFAULT_BUCKET_CAP_MB = 25  # PyTorch's default


def assign_buckets(params, cap_mb: float | None = None, key=None) -> list[list[int]]:
    """Indices of `params` (objects with .shape and .dtype) grouped into buckets of at most
    `cap_mb` megabytes (a parameter larger than that gets a bucket of its own), in reverse
    order; `key(p)` (default: the dtype) keeps unlike parameters apart.

    >>> import numpy as np
    >>> big, small = np.zeros(300_000, np.float32), np.zeros(10, np.float32)
    >>> ps = [big, small, big]
    >>> assign_buckets(ps, cap_mb=1.5), assign_buckets(ps, cap_mb=1)
    ([[2, 1], [0]], [[2], [1], [0]])
    """
    cap = (DEFAULT_BUCKET_CAP_MB if cap_mb is None else cap_mb) * 1024 * 1024
    if not cap > 0:
        raise ArgumentError(f"bucket_cap_mb must be positive, got {cap_mb}")
    key = key or (lambda p: str(p.dtype))
    open_buckets: dict = {}  # key -> (indices, bytes)
    done = []
    for i in reversed(range(len(params))):
        p = params[i]
        k = key(p)
        nbytes = math.prod(p.shape) * p.dtype.itemsize
        indices, size = open_buckets.get(k, ([], 0))
        if indices and size + nbytes > cap:
            done.append(indices)
            indices, size = [], 0
        indices.append(i)
        open_buckets[k] = (indices, size + nbytes)
    done.extend(indices for indices, _ in open_buckets.values() if indices)
    return sorted(done, key=lambda b: -b[0])
