"""The collectives as graph ops: one `defop` record each, with their effects declared.

Every collective carries the "collective" tag (never constant-folded, merged by CSE, fused,
or recomputed by `kn.checkpoint`: each rank must run each one exactly once) and `may_fail`
(it may time out), so a run's in-place updates wait for it and a failed step changes no
Variable. All ranks build the same graph, so they schedule and run the collectives in the
same order.

The all-reduce is two nodes, so that a compiled training step can start a bucket's
all-reduce as soon as its gradients exist and wait for it only where the update needs it:
`all_reduce_start` copies its input into its own buffer and starts the in-place reduction
there; `all_reduce_wait` (a view of that buffer, which it finishes in place) completes it.
Between the two, the buffer is live (the wait reads it), so the memory plan keeps it; the
start's input is free at once. The pair is matched by its `tag` attr; `reduce` is the
ReduceOp's value ("sum", "avg"…) and `world` the world size the graph was built for.
"""

from __future__ import annotations

import threading

import numpy as np

from .. import shapes as sh
from ..errors import ShapeError
from ..ops.core import defop, same_dtype, same_shape
from .group import current_group

_pending = threading.local()  # tag -> (request, device buffer, transport buffer)


def _group_of(world: int, what: str):
    g = current_group()
    if g.size != world:
        raise ShapeError(
            f"{what} was built for a world of {world} ranks, but this process group has "
            f"{g.size}: build the graph inside the process group that runs it"
        )
    return g


def transport_buffer(g, xp, array):
    """`array` as the transport takes it: itself, or a host copy for MPI of a device array."""
    if g.transport.name == "mpi" and xp is not np:
        return xp.asnumpy(array)
    return array


def _finish(g, xp, array, host, op: str):
    """Copies a host result back to the device array; AVG divides by the world size."""
    if host is not array:
        array[...] = xp.asarray(host)
    if op == "avg":
        array /= g.size
    return array


def _start(xp, x, out=None, *, reduce, tag, world):
    g = _group_of(world, "all_reduce")
    buf = xp.empty_like(x) if out is None else out
    buf[...] = x
    host = transport_buffer(g, xp, buf)
    request = g.transport.all_reduce(host, reduce)
    g.stats["calls"] += 1
    g.stats["all_reduce_bytes"] += host.nbytes
    pending = getattr(_pending, "requests", None)
    if pending is None:
        pending = _pending.requests = {}
    pending[tag] = (request, buf, host)
    return buf


def _wait(xp, x, out=None, *, reduce, tag, world):
    g = _group_of(world, "all_reduce")
    request, buf, host = _pending.requests.pop(tag)
    g.wait(request, f"all_reduce (graph op, tag {tag})")
    return _finish(g, xp, buf, host, reduce)


_COLLECTIVE = {"collective"}

all_reduce_start = defop(
    "all_reduce_start", same_shape, same_dtype, _start, tags=_COLLECTIVE, may_fail=True
)
all_reduce_wait = defop(
    "all_reduce_wait", same_shape, same_dtype, _wait, tags=_COLLECTIVE, views=(0,),
    overwrites=(0,), may_fail=True,
)  # fmt: skip


def _broadcast(xp, x, out=None, *, src, world):
    g = _group_of(world, "broadcast")
    buf = xp.empty_like(x) if out is None else out
    buf[...] = x
    host = transport_buffer(g, xp, buf)
    g.wait(g.transport.broadcast(host, src), f"broadcast from rank {src} (graph op)")
    return _finish(g, xp, buf, host, "sum")


broadcast = defop("broadcast", same_shape, same_dtype, _broadcast, tags=_COLLECTIVE,
                  may_fail=True)  # fmt: skip


def _gather_shape(x, *, world):
    return (world, *x)


def _all_gather(xp, x, out=None, *, world):
    g = _group_of(world, "all_gather")
    buf = xp.empty((world, *x.shape), x.dtype) if out is None else out
    send = transport_buffer(g, xp, xp.ascontiguousarray(x))
    recv = transport_buffer(g, xp, buf)
    g.wait(g.transport.all_gather(send, recv), "all_gather (graph op)")
    return _finish(g, xp, buf, recv, "sum")


all_gather = defop("all_gather", _gather_shape, same_dtype, _all_gather, tags=_COLLECTIVE,
                   may_fail=True)  # fmt: skip


def _scatter_shape(x, *, reduce, world):
    if not x or x[0] != world:
        raise ShapeError(
            f"reduce_scatter takes one slice per rank (a first dim of the world size {world}), "
            f"got shape {sh.format_shape(x)}"
        )
    return x[1:]


def _reduce_scatter(xp, x, out=None, *, reduce, world):
    g = _group_of(world, "reduce_scatter")
    buf = xp.empty(x.shape[1:], x.dtype) if out is None else out
    send = transport_buffer(g, xp, xp.ascontiguousarray(x))
    recv = transport_buffer(g, xp, buf)
    g.wait(g.transport.reduce_scatter(send, recv, reduce), "reduce_scatter (graph op)")
    return _finish(g, xp, buf, recv, reduce)


reduce_scatter = defop("reduce_scatter", _scatter_shape, same_dtype, _reduce_scatter,
                       tags=_COLLECTIVE, may_fail=True)  # fmt: skip
