"""A stand-in for `cupy.cuda.nccl` on the fake CuPy (fake_cupy.py), for kiln's NCCL transport
without a GPU. Each rank is a process of an MPI job: the communicator reads and writes the
device memory at the pointers it is given (fake device arrays are host memory) and moves the
data with MPI, so the transport's pointers, counts, dtype and op codes and in-place use are
exercised for real; `CALLS` records them. Not NCCL: no streams, no GPU, synchronous.
"""

from __future__ import annotations

import ctypes
import sys
import types

import fake_cupy
import numpy as np
from mpi4py import MPI

# NCCL's enums (nccl.h): ncclDataType_t and ncclRedOp_t
DTYPES = {0: np.int8, 1: np.uint8, 2: np.int32, 4: np.int64, 6: np.float16, 7: np.float32,
          8: np.float64}  # fmt: skip
OPS = {0: MPI.SUM, 1: MPI.PROD, 2: MPI.MAX, 3: MPI.MIN}
CALLS: list = []


def _memory(ptr: int, count: int, code: int) -> np.ndarray:
    """The `count` elements of dtype `code` at address `ptr`, as a writable NumPy view."""
    dtype = np.dtype(DTYPES[code])
    raw = (ctypes.c_char * (count * dtype.itemsize)).from_address(ptr)
    return np.frombuffer(raw, dtype)


class NcclCommunicator:
    def __init__(self, ndev: int, comm_id, rank: int):
        self._comm = MPI.COMM_WORLD.Dup()
        assert ndev == self._comm.Get_size() and rank == self._comm.Get_rank()
        assert self._comm.allgather(comm_id) == [comm_id] * ndev, "ranks got different ids"
        self.aborted = False

    def allReduce(self, sendbuf, recvbuf, count, datatype, op, stream):  # noqa: N802
        CALLS.append(("allReduce", sendbuf, recvbuf, count, datatype, op))
        send = _memory(sendbuf, count, datatype).copy()
        self._comm.Allreduce(send, _memory(recvbuf, count, datatype), op=OPS[op])

    def bcast(self, buff, count, datatype, root, stream):
        CALLS.append(("bcast", buff, count, datatype, root))
        self._comm.Bcast(_memory(buff, count, datatype), root=root)

    def allGather(self, sendbuf, recvbuf, count, datatype, stream):  # noqa: N802
        CALLS.append(("allGather", sendbuf, recvbuf, count, datatype))
        size = self._comm.Get_size()
        self._comm.Allgather(_memory(sendbuf, count, datatype).copy(),
                             _memory(recvbuf, count * size, datatype))  # fmt: skip

    def reduceScatter(self, sendbuf, recvbuf, recvcount, datatype, op, stream):  # noqa: N802
        CALLS.append(("reduceScatter", sendbuf, recvbuf, recvcount, datatype, op))
        size = self._comm.Get_size()
        send = _memory(sendbuf, recvcount * size, datatype).copy()
        self._comm.Reduce_scatter_block(send, _memory(recvbuf, recvcount, datatype), op=OPS[op])

    def abort(self):
        self.aborted = True

    def destroy(self):
        self._comm.Free()


def get_unique_id():
    return tuple(int(b) for b in np.random.default_rng().integers(0, 256, 128))


class Event:
    def __init__(self, block=False, disable_timing=False, interprocess=False):
        self.done = False

    def record(self, stream=None):
        self.done = True  # the stand-in's collectives are synchronous


nccl = types.ModuleType("cupy.cuda.nccl")
nccl.NcclCommunicator, nccl.get_unique_id = NcclCommunicator, get_unique_id
for _name, _code in (("INT8", 0), ("UINT8", 1), ("INT32", 2), ("INT64", 4), ("FLOAT16", 6),
                     ("FLOAT32", 7), ("FLOAT64", 8)):  # fmt: skip
    setattr(nccl, f"NCCL_{_name}", _code)
for _name, _code in (("SUM", 0), ("PROD", 1), ("MAX", 2), ("MIN", 3)):
    setattr(nccl, f"NCCL_{_name}", _code)


class _Patch:
    """What `fake_cupy.install` needs of pytest's monkeypatch, for a worker process."""

    def setitem(self, mapping, key, value):
        mapping[key] = value


def install() -> None:
    """fake_cupy as `cupy`, with this module as `cupy.cuda.nccl` (for the rest of the
    process: a worker of an MPI job)."""
    fake_cupy.install(_Patch())
    fake_cupy.ndarray.data = property(
        lambda self: types.SimpleNamespace(ptr=self._a.ctypes.data)
    )  # fmt: skip
    fake_cupy._stream.ptr = 0
    fake_cupy.cuda.Event = Event
    fake_cupy.cuda.nccl = nccl
    sys.modules["cupy.cuda"] = fake_cupy.cuda
    sys.modules["cupy.cuda.nccl"] = nccl
