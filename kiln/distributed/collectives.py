"""PyTorch's collectives: in place on eager Tensors (and NumPy arrays), graph ops on Symbols.

On a Tensor, `all_reduce(t)` changes `t` in place and bumps its version, as PyTorch's does;
`async_op=True` returns a `Work` to wait on. A Symbol cannot change, so on Symbols (graph
mode, `kn.compile`) each collective returns its result (`t = dist.all_reduce(t)`), and
`all_gather` fills `tensor_list` with Symbols.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from ..eager.tensor import Tensor, version_of
from ..errors import ArgumentError, ArgumentTypeError, DistError
from ..graph.core import Symbol
from ..graph.opdef import REGISTRY
from ..ops.core import bind
from ..runtime.backend import get_backend
from .group import ReduceOp, Work, current_group
from .ops import transport_buffer


def _op(op) -> ReduceOp:
    try:
        return op if isinstance(op, ReduceOp) else ReduceOp(str(op).lower())
    except ValueError:
        raise ArgumentError(f"unknown ReduceOp {op!r}: one of SUM AVG PRODUCT MIN MAX") from None


def _array(tensor, what: str):
    """(array, xp, Tensor or None) of a Tensor or a NumPy array."""
    if isinstance(tensor, Tensor):
        data = tensor._data
        xp = np if isinstance(data, np.ndarray) else get_backend(tensor.device).activate()
        return data, xp, tensor
    if isinstance(tensor, np.ndarray):
        return tensor, np, None
    raise ArgumentTypeError(
        f"{what} takes Tensors (or NumPy arrays, or Symbols), got {type(tensor)}"
    )


def _buffer(g, tensor, what: str):
    """(transport buffer, commit): the buffer a collective writes, and `commit()`, which puts
    its content into `tensor` (when it is a copy) and bumps the tensor's version."""
    data, xp, t = _array(tensor, what)
    if g.transport.name == "nccl" and xp is np:
        raise DistError(f"{what}: the nccl backend takes CUDA tensors, got a CPU one")
    g.transport.check_dtype(data.dtype, what)
    direct = data.flags.c_contiguous and (xp is np or g.transport.name == "nccl")
    if direct:
        buf = data
    elif g.transport.name == "mpi":
        buf = np.ascontiguousarray(data) if xp is np else xp.asnumpy(data)
    else:
        buf = xp.ascontiguousarray(data)

    def commit():
        if buf is not data:
            data[...] = buf if xp is np or g.transport.name == "nccl" else xp.asarray(buf)
        if t is not None:
            version_of(t).value += 1

    return buf, commit


def _result(g, request, what: str, finish, async_op: bool):
    work = Work(g, request, what, finish)
    if async_op:
        return work
    work.wait()
    return None


def _check_avg(op: ReduceOp, dtype, what: str) -> None:
    if op is ReduceOp.AVG and not dt.is_float(dtype):
        raise DistError(f"{what}: ReduceOp.AVG needs floating-point values, got {dtype}")


def _graph_tag(graph) -> int:
    """A number for the next all-reduce of `graph`, deterministic (not a global counter), so
    dumps of the same program are identical in every process."""
    start = REGISTRY["all_reduce_start"]
    return sum(1 for n in graph.nodes if n.op is start)


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """Reduces `tensor` over every rank with `op`, in place (on a Symbol: returns the result).

    >>> import kiln.distributed as dist
    >>> dist.all_reduce(np.ones(2))  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    kiln.errors.DistError: Default process group has not been initialized, ...
    """
    op = _op(op)
    if isinstance(tensor, Symbol):
        _check_avg(op, tensor.dtype, "all_reduce")
        attrs = dict(reduce=op.value, tag=_graph_tag(tensor.graph), world=current_group().size)
        started = bind(REGISTRY["all_reduce_start"], tensor, **attrs)
        return bind(REGISTRY["all_reduce_wait"], started, **attrs)
    g = current_group()
    buf, commit = _buffer(g, tensor, "all_reduce")
    _check_avg(op, buf.dtype, "all_reduce")
    request = g.transport.all_reduce(buf, op.value)
    g.stats["calls"] += 1
    g.stats["all_reduce_bytes"] += buf.nbytes

    def finish():
        if op is ReduceOp.AVG:
            buf[...] /= g.size
        commit()

    return _result(g, request, "all_reduce", finish, async_op)


def broadcast(tensor, src: int, group=None, async_op: bool = False):
    """Copies rank `src`'s `tensor` into every rank's, in place (on a Symbol: returns it)."""
    g = current_group()
    if not 0 <= src < g.size:
        raise ArgumentError(f"broadcast: src {src} is not a rank of a world of {g.size}")
    if isinstance(tensor, Symbol):
        return bind(REGISTRY["broadcast"], tensor, src=src, world=g.size)
    buf, commit = _buffer(g, tensor, "broadcast")
    request = g.transport.broadcast(buf, src)
    return _result(g, request, f"broadcast from rank {src}", commit, async_op)


def all_gather(tensor_list: list, tensor, group=None, async_op: bool = False):
    """Fills `tensor_list` (one tensor per rank) with every rank's `tensor`, in rank order.

    On a Symbol, `tensor_list` (a list, usually empty) is filled with the ranks' Symbols."""
    g = current_group()
    if isinstance(tensor, Symbol):
        gathered = bind(REGISTRY["all_gather"], tensor, world=g.size)
        tensor_list[:] = [gathered[i] for i in range(g.size)]
        return None
    data, xp, _ = _array(tensor, "all_gather")
    if len(tensor_list) != g.size:
        raise ArgumentError(
            f"all_gather: tensor_list has {len(tensor_list)} tensors for a world of {g.size}"
        )
    for i, out in enumerate(tensor_list):
        out_data = _array(out, "all_gather")[0]
        if out_data.shape != data.shape or out_data.dtype != data.dtype:
            raise ArgumentError(
                f"all_gather: tensor_list[{i}] is {out_data.dtype}{list(out_data.shape)}, the "
                f"input {data.dtype}{list(data.shape)}"
            )
    g.transport.check_dtype(data.dtype, "all_gather")
    recv = transport_buffer(g, xp, xp.empty((g.size, *data.shape), data.dtype))
    send = transport_buffer(g, xp, xp.ascontiguousarray(data))
    request = g.transport.all_gather(send, recv)

    def finish():
        for i, out in enumerate(tensor_list):
            buf, commit = _buffer(g, out, "all_gather")
            buf[...] = recv[i] if xp is np or g.transport.name == "nccl" else xp.asarray(recv[i])
            commit()

    return _result(g, request, "all_gather", finish, async_op)


def reduce_scatter(output, input_list: list, op=ReduceOp.SUM, group=None, async_op=False):
    """`output` on rank r becomes the reduction over every rank of `input_list[r]`.

    On Symbols, returns the result (`output` is not used)."""
    op = _op(op)
    g = current_group()
    if len(input_list) != g.size:
        raise ArgumentError(
            f"reduce_scatter: input_list has {len(input_list)} tensors for a world of {g.size}"
        )
    if any(isinstance(x, Symbol) for x in input_list):
        from .. import frontend as F

        _check_avg(op, input_list[0].dtype, "reduce_scatter")
        return bind(REGISTRY["reduce_scatter"], F.stack(list(input_list)), reduce=op.value,
                    world=g.size)  # fmt: skip
    arrays = [_array(x, "reduce_scatter")[0] for x in input_list]
    data, xp, _ = _array(output, "reduce_scatter")
    if any(a.shape != data.shape or a.dtype != data.dtype for a in arrays):
        raise ArgumentError(
            f"reduce_scatter: every input must be of the output's {data.dtype}"
            f"{list(data.shape)}, got {[f'{a.dtype}{list(a.shape)}' for a in arrays]}"
        )
    _check_avg(op, data.dtype, "reduce_scatter")
    send = transport_buffer(g, xp, xp.stack(arrays))
    recv, commit = _buffer(g, output, "reduce_scatter")
    request = g.transport.reduce_scatter(send, recv, op.value)

    def finish():
        if op is ReduceOp.AVG:
            recv[...] /= g.size
        commit()

    return _result(g, request, "reduce_scatter", finish, async_op)
