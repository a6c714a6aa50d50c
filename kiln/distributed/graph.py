"""Graph mode: the bucketed gradient all-reduce that `Optimizer.minimize` inserts.

Inside a process group of more than one rank, each bucket of gradients (see `buckets`) is
flattened into one vector, averaged over the ranks by an `all_reduce_start`/`all_reduce_wait`
pair of nodes, and cut back into the gradients that the update reads; each wait comes after
the next bucket's start, so backward overlaps the all-reduce. The nodes are ordinary
graph nodes, so the schedule orders them and the memory plan gives the bucket its buffer.
"""

from __future__ import annotations

import math

from .. import frontend as F
from ..graph.opdef import REGISTRY
from ..ops.core import apply, bind
from .buckets import assign_buckets
from .collectives import _graph_tag
from .group import current_group, is_initialized

# The bucket size (MB) of the all-reduce that `minimize` inserts; None: PyTorch's DDP default.
bucket_cap_mb: float | None = None


def average_gradients(grads_and_vars, cap_mb: float | None = None) -> list:
    """[(gradient averaged over the ranks, Variable)]; unchanged outside a process group or
    in a group of one rank. Gradients that are None stay None. Buckets hold `cap_mb`
    megabytes (default: this module's `bucket_cap_mb`).

    >>> import kiln as kn, numpy as np
    >>> with kn.Graph().as_default():
    ...     w = kn.Variable(np.ones(2, np.float32), name="w")
    ...     (g, v), = average_gradients([(w * 2.0, w)])
    >>> g.op.name  # no process group here: the gradient as it was
    'mul'
    """
    if not is_initialized() or current_group().size == 1:
        return list(grads_and_vars)
    pairs = list(grads_and_vars)
    present = [i for i, (g, _) in enumerate(pairs) if g is not None]
    variables = [pairs[i][1] for i in present]
    buckets = assign_buckets(variables, bucket_cap_mb if cap_mb is None else cap_mb)
    starts, attrs = [], []
    for bucket in buckets:
        grads = [F.reshape(pairs[present[k]][0], (-1,)) for k in bucket]
        flat = F.concat(grads) if len(grads) > 1 else grads[0]
        attrs.append(dict(reduce="avg", tag=_graph_tag(flat.graph), world=current_group().size))
        starts.append(bind(REGISTRY["all_reduce_start"], flat, **attrs[-1]))
    averaged = dict(enumerate(pairs))
    for k, bucket in enumerate(buckets):
        # NOTE: bucket k is waited for only after bucket k + 1 has started (an ordering
        # edge through `after`): the backward ops that bucket k + 1 needs run while bucket
        # k's all-reduce is in flight, as in PyTorch's DDP.
        started = starts[k] if k + 1 == len(starts) else apply("after", starts[k], starts[k + 1])
        reduced = bind(REGISTRY["all_reduce_wait"], started, **attrs[k])
        offset = 0
        for j in bucket:
            var = pairs[present[j]][1]
            size = math.prod(var.shape)
            averaged[present[j]] = (F.reshape(reduced[offset : offset + size], var.shape), var)
            offset += size
    return [averaged[i] for i in range(len(pairs))]
